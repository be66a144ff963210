//! Dropping a scheduler with work in flight (the robustness work), on the sim backend: the drop
//! waits for every task, joins every runtime thread (dispatchers, executioners,
//! simulated engines) and frees every device buffer. One test in this binary, so that
//! the process's thread count is this test's alone.

mod common;

use chariot::callback::Resource;
use chariot::sim::SimProfile;
use chariot::{Arg, Backend, Scheduler};
use common::*;

#[test]
fn dropping_a_busy_scheduler_waits_joins_and_frees() {
    // No `with_timeout` thread here: it would be counted. The sim's engines and the
    // dispatchers are what must come back.
    let threads0 = threads_now();
    let n = 1 << 14;
    let tasks = 200;
    let mut input;
    let out;
    let allocated;
    {
        let sched = Scheduler::builder()
            .backend(Backend::SimWith(SimProfile::h100().with_time_scale(0.05).with_gpus(2)))
            .gpus(2)
            .streams(3)
            .build()
            .unwrap();
        input = sched.alloc_host::<u32>(tasks * n).unwrap();
        input.write().iter_mut().enumerate().for_each(|(i, x)| *x = gen(i));
        out = sched.alloc_host::<u32>(tasks * n).unwrap();
        let (din, dout) = (sched.alloc::<u32>(n).unwrap(), sched.alloc::<u32>(n).unwrap());
        let affine = sched.register_kernel(affine_kernel()).unwrap();
        for i in 0..tasks {
            let r = i * n..(i + 1) * n;
            sched
                .task(i as u64, n as u64)
                .callback(Resource::Cpu, |_| Ok(()))
                .download(&din, 0, &input, r.clone())
                .launch(
                    &affine,
                    grid(n),
                    BLOCK,
                    0,
                    &[Arg::buffer(&din), Arg::buffer(&dout), Arg::u32(n as u32), Arg::u32(5), Arg::u32(1)],
                )
                .readback(&out, r, &dout, 0)
                .submit()
                .unwrap();
        }
        assert!(threads_now() > threads0, "the scheduler runs threads");
        assert!(sched.device_memory_in_use(0).unwrap() > 0);
        allocated = (0..2).map(|g| sched.device_memory_in_use(g).unwrap()).sum::<u64>();
        // A second scheduler's worth of work: dropped buffers are freed once their tasks
        // end, by the next synchronize (or the drop's).
        drop((din, dout));
        sched.synchronize().unwrap();
        assert_eq!((0..2).map(|g| sched.device_memory_in_use(g).unwrap()).sum::<u64>(), 0, "device memory freed");
        let d = sched.alloc::<u32>(n).unwrap();
        for i in 0..tasks {
            let r = i * n..(i + 1) * n;
            sched
                .task(1000 + i as u64, n as u64)
                .download(&d, 0, &input, r.clone())
                .readback(&out, r, &d, 0)
                .submit()
                .unwrap();
        }
        // `d`, then the scheduler, dropped here with those tasks in flight.
    }
    assert_eq!(allocated, 2 * 2 * 3 * (n as u64) * 4, "two buffers per GPU and slot");
    let (input, out) = (input.read(), out.read());
    assert!((0..tasks * n).all(|e| out[e] == input[e]), "drop waited for every task");
    assert_eq!(threads_now(), threads0, "runtime threads left behind");
}
