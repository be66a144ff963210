//! Fault injection on the sim backend (the robustness work): a failing command fails its task only;
//! a GPU lost to a sticky fault leaves the rotation and its tasks move where that is
//! safe; with no GPU left `synchronize` says so; a slow GPU gets fewer tasks. Every test
//! runs under a deadline that fails it, so a hang is a failure, not a stuck CI.

mod common;

use chariot::kernel::KernelHandle;
use chariot::report::Report;
use chariot::sim::{SimFaults, SimProfile};
use chariot::{Arg, Backend, DeviceBuffer, Error, HostBuffer, Scheduler, Stage, TaskId};
use common::*;
use std::collections::HashSet;
use std::time::Duration;

const DEADLINE_S: u64 = 60;
/// Elements per task.
const N: usize = 4096;

/// A scheduler of `gpus` simulated GPUs, `streams` streams, with `faults`; `timed`
/// gives commands modeled time (0.2 × an H100's) so that tasks overlap and run long
/// enough for timed faults.
fn sched(gpus: usize, streams: usize, faults: SimFaults, timed: bool) -> Scheduler {
    let base = if timed { SimProfile::h100().with_time_scale(0.2) } else { SimProfile::instant() };
    Scheduler::builder()
        .backend(Backend::SimWith(base.with_gpus(gpus).with_faults(faults)))
        .gpus(gpus)
        .streams(streams)
        .build()
        .unwrap()
}

struct Rig {
    input: HostBuffer<u32>,
    output: HostBuffer<u32>,
    din: DeviceBuffer<u32>,
    dout: DeviceBuffer<u32>,
    affine: KernelHandle,
    tasks: usize,
}

const A: u32 = 3;
const B: u32 = 11;

impl Rig {
    fn new(s: &Scheduler, tasks: usize) -> Rig {
        Self::with_kernel(s, tasks, affine_kernel())
    }

    fn with_kernel(s: &Scheduler, tasks: usize, kernel: chariot::Kernel) -> Rig {
        let mut input = s.alloc_host::<u32>(tasks * N).unwrap();
        input.write().iter_mut().enumerate().for_each(|(i, x)| *x = gen(i));
        Rig {
            input,
            output: s.alloc_host::<u32>(tasks * N).unwrap(),
            din: s.alloc::<u32>(N).unwrap(),
            dout: s.alloc::<u32>(N).unwrap(),
            affine: s.register_kernel(kernel).unwrap(),
            tasks,
        }
    }

    /// Task `i`: download its chunk, affine kernel, readback into the output buffer
    /// (out of place: movable at any point).
    fn submit(&self, s: &Scheduler, first_id: u64) {
        for i in 0..self.tasks {
            let r = i * N..(i + 1) * N;
            s.task(first_id + i as u64, N as u64)
                .download(&self.din, 0, &self.input, r.clone())
                .launch(
                    &self.affine,
                    grid(N),
                    BLOCK,
                    0,
                    &[Arg::buffer(&self.din), Arg::buffer(&self.dout), Arg::u32(N as u32), Arg::u32(A), Arg::u32(B)],
                )
                .readback(&self.output, r, &self.dout, 0)
                .submit()
                .unwrap();
        }
    }

    /// Tasks whose output chunk is right.
    fn correct(&self) -> HashSet<usize> {
        let (input, output) = (self.input.read(), self.output.read());
        (0..self.tasks).filter(|&i| (i * N..(i + 1) * N).all(|e| output[e] == affine_ref(input[e], A, B))).collect()
    }
}

/// For every task that completed: its last attempt's commands, from its restart point
/// on, each once, in order, without a failure, on one GPU and stream.
fn check_attempts(report: &Report, done: impl IntoIterator<Item = u64>, commands: u32) {
    for id in done {
        let restart = report.moved.iter().filter(|m| m.task == TaskId(id)).map(|m| m.restart as u32).max();
        let mut recs: Vec<_> = report.records.iter().filter(|r| r.task == TaskId(id)).copied().collect();
        recs.sort_by_key(|r| (r.dispatched_ns, r.command));
        // The last attempt: the records after the task's last failed one, if any.
        let last_failed = recs.iter().rposition(|r| r.failed);
        let attempt = &recs[last_failed.map_or(0, |p| p + 1)..];
        let from = restart.unwrap_or(0);
        let got: Vec<u32> = attempt.iter().map(|r| r.command).collect();
        let want: Vec<u32> = (from..commands).collect();
        if restart.is_some() {
            // Commands of the first attempt that succeeded before the GPU was lost come
            // before the failed one; the second attempt is the tail of the list.
            assert!(got.ends_with(&want), "task {id}: commands {got:?}, want a tail {want:?}");
            let tail = &attempt[attempt.len() - want.len()..];
            assert!(tail.windows(2).all(|w| w[0].gpu == w[1].gpu && w[0].stream == w[1].stream), "task {id}");
        } else {
            assert_eq!(got, want, "task {id}");
            assert!(attempt.windows(2).all(|w| w[0].gpu == w[1].gpu && w[0].stream == w[1].stream), "task {id}");
        }
        assert!(attempt.windows(2).all(|w| w[0].end_ns <= w[1].start_ns), "task {id}: commands overlap");
    }
}

#[test]
fn a_failing_command_fails_its_task_only() {
    with_timeout(DEADLINE_S, || {
        let faults =
            SimFaults::default().fail_command(TaskId(7), 1).fail_command(TaskId(13), 2).fail_command(TaskId(20), 0);
        let s = sched(2, 2, faults, false);
        let rig = Rig::new(&s, 32);
        rig.submit(&s, 0);
        let (failed, report) = expect_failed(s.synchronize());
        let mut got: Vec<(u64, usize, Stage)> = failed.iter().map(|f| (f.task.0, f.command, f.stage)).collect();
        got.sort();
        assert_eq!(got, vec![(7, 1, Stage::Kernel), (13, 2, Stage::Readback), (20, 0, Stage::Download)]);
        for f in &failed {
            assert!(f.message.contains("injected"), "{f}");
            assert!(f.gpu < 2 && f.stream < 2, "{f}");
        }
        assert!(report.lost_gpus.is_empty() && report.moved.is_empty());
        assert_eq!(s.live_gpus(), vec![0, 1]);
        let correct = rig.correct();
        assert_eq!(correct, (0..32).filter(|i| ![7, 13, 20].contains(i)).collect::<HashSet<_>>());
        check_attempts(&report, (0..32).filter(|i| ![7, 13, 20].contains(i)), 3);
        // The scheduler goes on: a second batch (new ids, no faults) runs whole.
        rig.submit(&s, 100);
        let report = s.synchronize().unwrap();
        assert_eq!(report.tasks, 32);
        assert_eq!(rig.correct().len(), 32);
    });
}

#[test]
fn a_crashing_kernel_is_blamed_and_the_others_move() {
    with_timeout(DEADLINE_S, || {
        let s = sched(2, 3, SimFaults::default().crash_on_command(TaskId(9), 1), true);
        let rig = Rig::new(&s, 48);
        rig.submit(&s, 0);
        let (failed, report) = expect_failed(s.synchronize());
        assert_eq!(failed.len(), 1, "{failed:?}");
        let blamed = &failed[0];
        assert_eq!((blamed.task, blamed.command, blamed.stage), (TaskId(9), 1, Stage::Kernel));
        assert!(blamed.message.contains("illegal address"), "{blamed}");
        assert_eq!(report.lost_gpus.len(), 1);
        let lost = report.lost_gpus[0].gpu;
        assert_eq!(lost, blamed.gpu);
        assert_eq!(s.live_gpus(), vec![1 - lost]);
        // Every other task completed, correctly; those moved ended on the live GPU.
        assert_eq!(rig.correct(), (0..48).filter(|&i| i != 9).collect::<HashSet<_>>());
        for m in &report.moved {
            assert_eq!(m.from_gpu, lost);
            assert_ne!(m.task, TaskId(9));
            let last = report.records.iter().filter(|r| r.task == m.task).max_by_key(|r| r.end_ns).unwrap();
            assert_eq!(last.gpu as usize, 1 - lost, "moved task {} ended on the lost GPU", m.task);
        }
        check_attempts(&report, (0..48).filter(|&i| i != 9), 3);
        // The next batch runs on the GPU left.
        rig.submit(&s, 100);
        let report = s.synchronize().unwrap();
        assert_eq!(report.tasks_per_gpu[lost], 0);
        assert_eq!(rig.correct().len(), 48);
    });
}

#[test]
fn a_gpu_that_dies_mid_run_has_its_tasks_moved() {
    with_timeout(DEADLINE_S, || {
        // 64 chunks of 16 KiB take a few ms of modeled time on three GPUs; GPU 1 dies
        // 0.3 ms in (scaled), with tasks in flight.
        let s = sched(3, 2, SimFaults::default().gpu_dies_at(1, Duration::from_micros(300)), true);
        let rig = Rig::new(&s, 64);
        rig.submit(&s, 0);
        let report = s.synchronize().expect("every task is movable, so none fails");
        assert_eq!(report.lost_gpus.len(), 1);
        assert_eq!(report.lost_gpus[0].gpu, 1);
        assert!(report.lost_gpus[0].message.contains("lost"));
        assert_eq!(s.live_gpus(), vec![0, 2]);
        assert_eq!(rig.correct().len(), 64);
        assert!(!report.moved.is_empty(), "GPU 1 held tasks when it died");
        assert!(report.moved.iter().all(|m| m.from_gpu == 1));
        check_attempts(&report, 0..64, 3);
        let moved: HashSet<_> = report.moved.iter().map(|m| m.task).collect();
        assert_eq!(moved.len(), report.moved.len(), "a task moved twice off one GPU");
    });
}

/// In-place tasks (readback over the region they downloaded): one whose readback had
/// begun when its GPU was lost cannot run again and fails, saying why; one lost before
/// its readback moves.
#[test]
fn an_in_place_task_whose_readback_began_is_failed_not_moved() {
    with_timeout(DEADLINE_S, || {
        for (losing_command, movable) in [(2usize, false), (1, true)] {
            let s = sched(2, 1, SimFaults::default().lose_gpu_on_command(TaskId(5), losing_command), false);
            let mut data = s.alloc_host::<u32>(16 * N).unwrap();
            data.write().iter_mut().enumerate().for_each(|(i, x)| *x = gen(i));
            let (din, dout) = (s.alloc::<u32>(N).unwrap(), s.alloc::<u32>(N).unwrap());
            let affine = s.register_kernel(affine_kernel()).unwrap();
            for i in 0..16 {
                let r = i * N..(i + 1) * N;
                s.task(i as u64, N as u64)
                    .download(&din, 0, &data, r.clone())
                    .launch(
                        &affine,
                        grid(N),
                        BLOCK,
                        0,
                        &[Arg::buffer(&din), Arg::buffer(&dout), Arg::u32(N as u32), Arg::u32(A), Arg::u32(B)],
                    )
                    .readback(&data, r, &dout, 0)
                    .submit()
                    .unwrap();
            }
            let result = s.synchronize();
            let data = data.read();
            let ok = |i: usize| (i * N..(i + 1) * N).all(|e| data[e] == affine_ref(gen(e), A, B));
            if movable {
                let report = result.expect("task 5 lost before its readback moves");
                assert!(report.moved.iter().any(|m| m.task == TaskId(5) && m.restart == 0), "{:?}", report.moved);
                assert!((0..16).all(ok));
            } else {
                let (failed, report) = expect_failed(result);
                assert_eq!(failed.len(), 1, "{failed:?}");
                assert_eq!(failed[0].task, TaskId(5));
                assert!(failed[0].message.contains("cannot run again"), "{}", failed[0]);
                assert!(failed[0].message.contains("readback"), "{}", failed[0]);
                assert!(!report.moved.iter().any(|m| m.task == TaskId(5)));
                assert!((0..16).filter(|&i| i != 5).all(ok));
            }
            assert_eq!(s.live_gpus().len(), 1);
        }
    });
}

#[test]
fn with_no_gpu_left_synchronize_says_so() {
    with_timeout(DEADLINE_S, || {
        let faults = SimFaults::default().gpu_dies_at(0, Duration::ZERO).gpu_dies_at(1, Duration::ZERO);
        let s = sched(2, 2, faults, false);
        let rig = Rig::new(&s, 12);
        rig.submit(&s, 0);
        let (failed, report) = expect_failed(s.synchronize());
        assert_eq!(failed.len(), 12);
        assert_eq!(failed.iter().map(|f| f.task).collect::<HashSet<_>>().len(), 12);
        assert!(failed.iter().any(|f| f.message.contains("no GPU left")), "{failed:?}");
        assert_eq!(report.lost_gpus.iter().map(|l| l.gpu).collect::<HashSet<_>>(), HashSet::from([0, 1]));
        assert!(s.live_gpus().is_empty());
        // Later work fails the same way, without hanging.
        rig.submit(&s, 100);
        let (failed, _) = expect_failed(s.synchronize());
        assert_eq!(failed.len(), 12);
        assert!(failed.iter().all(|f| f.message.contains("no GPU left")), "{failed:?}");
    });
}

#[test]
fn a_slow_gpu_receives_fewer_tasks() {
    with_timeout(DEADLINE_S, || {
        // Kernels of 2 ms modeled time (real time: scale 1), 16 ms on the slow GPU: long
        // beside the few milliseconds a loaded 2-core machine may hold a thread back, so
        // that the split reflects the GPUs' speeds, not the host's scheduling.
        let profile = SimProfile::h100().with_gpus(2).with_faults(SimFaults::default().slow_gpu(1, 8.0));
        let s = Scheduler::builder().backend(Backend::SimWith(profile)).gpus(2).streams(2).build().unwrap();
        let kernel = affine_kernel().sim_cost(|_, _| Duration::from_millis(2));
        let rig = Rig::with_kernel(&s, 64, kernel);
        rig.submit(&s, 0);
        let report = s.synchronize().unwrap();
        assert_eq!(rig.correct().len(), 64);
        let [fast, slow] = [report.tasks_per_gpu[0], report.tasks_per_gpu[1]];
        assert_eq!(fast + slow, 64);
        assert!(slow < fast, "the slow GPU ran {slow} tasks, the fast one {fast}");
    });
}

#[test]
fn bad_fault_parameters_are_invalid_config() {
    let e = Scheduler::builder()
        .backend(Backend::SimWith(SimProfile::instant().with_faults(SimFaults::default().slow_gpu(0, 0.5))))
        .build()
        .unwrap_err();
    assert!(matches!(e, Error::InvalidConfig { name: "backend", .. }), "{e}");
    assert!(e.to_string().contains("slow_gpu(0, 0.5)"), "{e}");
}

#[test]
fn a_failed_free_reaches_the_next_report_once() {
    with_timeout(DEADLINE_S, || {
        let s = sched(2, 2, SimFaults::default().fail_frees(), false);
        let rig = Rig::new(&s, 8);
        rig.submit(&s, 0);
        // Buffers in use are not freed: nothing to report yet.
        assert_eq!(s.synchronize().unwrap().cleanup, vec![]);
        let Rig { din, dout, .. } = rig;
        drop(din);
        drop(dout);
        // The D·S copies of both buffers went back at this synchronize; the same error,
        // repeated, is listed once.
        let report = s.synchronize().unwrap();
        assert_eq!(report.cleanup.len(), 1, "{:?}", report.cleanup);
        let e = &report.cleanup[0];
        assert_eq!(
            (e.call.as_str(), e.code, e.name.as_str()),
            ("cuMemFree (simulated)", 1, "CUDA_ERROR_INVALID_VALUE")
        );
        assert!(
            report.to_string().lines().any(|l| {
                l
                == "cleanup: cuMemFree (simulated) failed: CUDA_ERROR_INVALID_VALUE (injected by SimFaults::fail_frees)"
            }),
            "{report}"
        );
        // Reported once: the next report has nothing, and the memory came back anyway.
        assert_eq!(s.synchronize().unwrap().cleanup, vec![]);
        assert_eq!(s.device_memory_in_use(0), Some(0));
        // A buffer still alive at shutdown is freed when it drops, after the last
        // report; one dropped before is in shutdown's report.
        let d = s.alloc::<u32>(N).unwrap();
        drop(d);
        assert_eq!(s.shutdown().unwrap().cleanup.len(), 1);
    });
}

#[test]
fn without_the_fault_no_cleanup_error_is_reported() {
    with_timeout(DEADLINE_S, || {
        let s = sched(1, 2, SimFaults::default(), false);
        let d = s.alloc::<u32>(N).unwrap();
        drop(d);
        let report = s.synchronize().unwrap();
        assert!(report.cleanup.is_empty() && !report.to_string().contains("cleanup:"), "{report}");
    });
}
