// Why this file is long: the GPU suite, one binary whose tests scripts run by name (--exact); modules rename them.
//! The invariant suite and result checks on a real GPU (`Backend::Cuda`, D = 1): the
//! same workloads as the sim suite, with kernels in CUDA C compiled by NVRTC, every
//! output element compared with the CPU reference. Every test is ignored by default;
//! run them on a machine with a CUDA GPU:
//!
//! ```text
//! cargo test --release --test gpu -- --include-ignored
//! ```
//!
//! (with the CUDA toolkit's lib64 on LD_LIBRARY_PATH, for libnvrtc). Spans are
//! host-observed by default, so the checker runs exactly as on sim; one test turns on
//! device timing events and checks with their resolution.

mod common;

use chariot::callback::Resource;
use chariot::tuning::Thresholds;
use chariot::{Arg, Backend, DeviceBuffer, Error, Kernel, Order, Param, Scheduler, Stage, TaskId};
use common::*;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

const DEADLINE_S: u64 = 120;

/// Tests of this binary take the GPU one at a time: the memory test reads the device's
/// memory in use, which another test's buffers would change under it.
static GPU: Mutex<()> = Mutex::new(());

/// Set in a child process to the one test it runs.
const CHILD: &str = "CHARIOT_GPU_TEST_CHILD";

/// Runs test `name`'s `body` in a child process of this test binary (which runs only
/// that test), holding the GPU meanwhile. A bug that aborts the process (a non-unwinding
/// panic, a driver crash) or hangs it (the child is killed at the deadline) then fails
/// this one test, with the child's output, instead of taking the whole suite down.
fn isolated(name: &str, body: impl FnOnce() + Send + 'static) {
    if std::env::var(CHILD).as_deref() == Ok(name) {
        return with_timeout(DEADLINE_S, body);
    }
    let _gpu = GPU.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let log_path = std::env::temp_dir().join(format!("chariot-gpu-test-{}-{name}.log", std::process::id()));
    let log = std::fs::File::create(&log_path).expect("creating the child's log");
    let mut child = std::process::Command::new(std::env::current_exe().expect("this test binary"))
        .args([name, "--exact", "--include-ignored", "--nocapture", "--test-threads=1"])
        .env(CHILD, name)
        .stdout(log.try_clone().expect("log handle"))
        .stderr(log)
        .spawn()
        .expect("starting the child test process");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(DEADLINE_S + 30);
    let status = loop {
        if let Some(status) = child.try_wait().expect("waiting for the child") {
            break Some(status);
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let output = std::fs::read_to_string(&log_path).unwrap_or_default();
    let _ = std::fs::remove_file(&log_path);
    // The filter matched this one test, and it passed.
    let ran = output.contains("test result: ok. 1 passed");
    match status {
        Some(s) if s.success() && ran => {}
        Some(s) => panic!("{name} failed in its child process ({s}):\n{output}"),
        None => panic!("{name} hung: its child process was killed after {} s:\n{output}", DEADLINE_S + 30),
    }
}

fn builder(streams: usize, order: Order) -> chariot::Builder {
    Scheduler::builder().backend(Backend::Cuda).gpus(1).streams(streams).order(order).cpu_cores(4)
}

fn cuda(streams: usize, order: Order) -> Scheduler {
    let s = builder(streams, order).build().expect("a CUDA GPU (these tests run only with --include-ignored on one)");
    assert_eq!((s.backend_name(), s.gpu_count(), s.streams()), ("cuda", 1, streams));
    s
}

/// S streams x order: 64 tasks of every CUDA recipe, chunks of up to 256 Ki elements.
fn pipeline(s: usize, order: Order) {
    let sched = cuda(s, order);
    let seed = 500 + s as u64 * 10 + order as u64;
    let report = run_workload(&sched, plan(seed, 1000, 64, 1 << 18, CUDA_RECIPES), Clocks::HOST);
    assert_eq!(report.backend, "cuda");
}

macro_rules! gpu_pipeline_tests {
    ($($name:ident: $s:expr, $order:expr;)*) => {
        $(
            #[test]
            #[ignore = "needs a CUDA GPU"]
            fn $name() {
                isolated(stringify!($name), || pipeline($s, $order));
            }
        )*
    };
}

gpu_pipeline_tests! {
    cuda_s1_fcfs: 1, Order::Fcfs;
    cuda_s1_lf: 1, Order::LargestFirst;
    cuda_s1_sf: 1, Order::SmallestFirst;
    cuda_s2_fcfs: 2, Order::Fcfs;
    cuda_s2_lf: 2, Order::LargestFirst;
    cuda_s2_sf: 2, Order::SmallestFirst;
    cuda_s4_fcfs: 4, Order::Fcfs;
    cuda_s4_lf: 4, Order::LargestFirst;
    cuda_s4_sf: 4, Order::SmallestFirst;
}

/// Task graphs on CUDA, S = 4: twenty tasks add 1 in place to one host
/// region (each runs after the one before, inferred from the region: RAW and WAW), then
/// a fan-out of eight tasks named with `after` reads the result and a join runs after
/// all of them; every dependency holds in the timeline, and the outputs are exact.
#[test]
#[ignore = "needs a CUDA GPU"]
fn cuda_task_graph_chain_and_fan_out() {
    isolated("cuda_task_graph_chain_and_fan_out", || {
        const N: usize = 1 << 16;
        let sched = cuda(4, Order::LargestFirst);
        let k = sched.register_kernel(affine_kernel()).unwrap();
        let mut host = sched.alloc_host::<u32>(9 * N).unwrap();
        host.write().iter_mut().enumerate().for_each(|(i, x)| *x = i as u32);
        let (d_in, d_out) = (sched.alloc::<u32>(N).unwrap(), sched.alloc::<u32>(N).unwrap());
        let args = [Arg::buffer(&d_in), Arg::buffer(&d_out), Arg::u32(N as u32), Arg::u32(1), Arg::u32(1)];
        let mut deps: Vec<(u64, Vec<u64>)> = Vec::new();
        for i in 0..20u64 {
            sched
                .task(i, i + 1)
                .download(&d_in, 0, &host, ..N)
                .launch(&k, grid(N), BLOCK, 0, &args)
                .readback(&host, ..N, &d_out, 0)
                .submit()
                .unwrap();
            if i > 0 {
                deps.push((i, vec![i - 1]));
            }
        }
        // Each of the fan-out writes its own region from the chain's result: it runs after
        // task 19 by the region it reads, and after task 0 as named.
        for f in 0..8u64 {
            let r = (f as usize + 1) * N..(f as usize + 2) * N;
            sched
                .task(100 + f, 1)
                .after(TaskId(0))
                .download(&d_in, 0, &host, ..N)
                .launch(&k, grid(N), BLOCK, 0, &args)
                .readback(&host, r, &d_out, 0)
                .submit()
                .unwrap();
            deps.push((100 + f, vec![0, 19]));
        }
        let fan: Vec<u64> = (100..108).collect();
        let done = Arc::new(Mutex::new(false));
        let d = done.clone();
        sched
            .task(200, 1)
            .after_all(fan.iter().copied().map(TaskId))
            .callback(Resource::Cpu, move |_| {
                *d.lock().unwrap() = true;
                Ok(())
            })
            .submit()
            .unwrap();
        deps.push((200, fan));
        let report = sched.synchronize().unwrap();
        assert_eq!(report.tasks, 29);
        let v = dependency_violations(&report, &deps);
        assert!(v.is_empty(), "{v:#?}");
        assert!(*done.lock().unwrap());
        let h = host.read();
        assert!(h[..N].iter().enumerate().all(|(i, &x)| x == i as u32 + 20), "the chain");
        for f in 0..8 {
            let part = &h[(f + 1) * N..(f + 2) * N];
            assert!(part.iter().enumerate().all(|(i, &x)| x == i as u32 + 21), "fan-out task {f}");
        }
    });
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn cuda_fcfs_pops_the_oldest_task() {
    isolated("cuda_fcfs_pops_the_oldest_task", || pop_order_scenario(&cuda(1, Order::Fcfs), Order::Fcfs, Clocks::HOST));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn cuda_largest_first_pops_the_largest_task() {
    isolated("cuda_largest_first_pops_the_largest_task", || {
        pop_order_scenario(&cuda(1, Order::LargestFirst), Order::LargestFirst, Clocks::HOST)
    });
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn cuda_smallest_first_pops_the_smallest_task() {
    isolated("cuda_smallest_first_pops_the_smallest_task", || {
        pop_order_scenario(&cuda(1, Order::SmallestFirst), Order::SmallestFirst, Clocks::HOST)
    });
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn cuda_two_d_column_blocks() {
    isolated("cuda_two_d_column_blocks", || two_d_scenario(&cuda(3, Order::Fcfs), Clocks::HOST));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn cuda_device_timing_events() {
    isolated("cuda_device_timing_events", || {
        let sched = builder(4, Order::LargestFirst).device_timing(true).build().unwrap();
        run_workload(&sched, plan(77, 1, 48, 1 << 18, CUDA_RECIPES), Clocks::CUDA_EVENTS);
    });
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn cuda_stage_depth_two() {
    isolated("cuda_stage_depth_two", || {
        let sched = builder(4, Order::Fcfs).paper_thresholds().stage_depth(2).build().unwrap();
        assert_eq!(sched.thresholds(), Thresholds::paper(4, 4, 1, 1).with_depth(2));
        run_workload(&sched, plan(78, 1, 64, 1 << 16, CUDA_RECIPES), Clocks::HOST);
    });
}

/// The defaults chosen from the real device: depth 2 and kernels admitted by
/// their fill where the GPU has two or more copy engines and concurrent kernels; the
/// fill from the driver's occupancy calculator; every invariant under them.
#[test]
#[ignore = "needs a CUDA GPU"]
fn cuda_defaults_follow_the_device() {
    isolated("cuda_defaults_follow_the_device", || {
        let sched = Scheduler::builder().backend(Backend::Cuda).gpus(1).cpu_cores(4).build().unwrap();
        let (info, t) = (sched.gpu_info()[0].clone(), sched.tuning().clone());
        assert!(info.sm_count > 0 && info.max_threads_per_sm >= 1024 && info.shared_bytes_per_sm > 0, "{info:?}");
        let depth = if info.copy_engines >= 2 { 2 } else { 1 };
        assert_eq!(t.stage_depth, depth, "{t:?}");
        assert_eq!(t.kernel_fills, info.concurrent_kernels.then_some(2.0 * depth as f64), "{t:?}");
        assert!(t.streams >= 8 || info.copy_engines < 2, "{t:?}");
        // The occupancy calculator: a block on each SM fills 1 / (blocks an SM holds),
        // which the driver says is 1 to 32...
        let w = Workload::new(&sched, plan(80, 1, 1, 16, &[Recipe::Plain])).unwrap();
        let one_each = sched.launch_fill(0, &w.affine, info.sm_count, BLOCK, 0).unwrap();
        assert!((1.0 / 32.0..=1.0).contains(&one_each), "{one_each}");
        // ...and one of many waves fills it.
        assert_eq!(sched.launch_fill(0, &w.affine, 1 << 20, BLOCK, 0), Some(1.0));
        drop(w);
        let report = run_workload(&sched, plan(81, 1, 96, 1 << 16, CUDA_RECIPES), Clocks::HOST);
        assert!(report.tuning.iter().any(|l| l.starts_with("kernel concurrency")), "{:?}", report.tuning);
    });
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn cuda_many_small_tasks_finish() {
    isolated("cuda_many_small_tasks_finish", || {
        let sched = cuda(4, Order::Fcfs);
        let report = run_workload(&sched, plan(79, 1, 5_000, 16, &[Recipe::Plain]), Clocks::HOST);
        assert_eq!(report.records.len(), 15_000);
    });
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn cuda_host_buffers_are_pinned_and_devices_described() {
    isolated("cuda_host_buffers_are_pinned_and_devices_described", || {
        let sched = cuda(2, Order::Fcfs);
        assert!(sched.alloc_host::<u32>(16).unwrap().is_pinned());
        let info = &sched.gpu_info()[0];
        assert!(info.arch.starts_with("sm_"), "{info:?}");
        assert!(info.copy_engines >= 1 && info.memory_bytes > 0, "{info:?}");
        let m = sched.overlap_matrix(0).unwrap();
        assert_eq!(m.allows(Stage::Download, Stage::Readback), info.copy_engines >= 2);
    });
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn cuda_panicking_callback_fails_only_its_task() {
    isolated("cuda_panicking_callback_fails_only_its_task", || panic_scenario(&cuda(2, Order::Fcfs), Clocks::HOST));
}

/// A kernel with a syntax error: KernelCompile with NVRTC's log naming the error.
#[test]
#[ignore = "needs a CUDA GPU"]
fn cuda_kernel_with_a_syntax_error_is_kernel_compile() {
    isolated("cuda_kernel_with_a_syntax_error_is_kernel_compile", || {
        let sched = cuda(1, Order::Fcfs);
        let broken = Kernel::new(
            "broken",
            r#"extern "C" __global__ void broken(unsigned* x) { x[threadIdx.x] = undefined_thing + 1; }"#,
        )
        .params([Param::Buffer])
        .cpu_twin(|_| Ok(()));
        let e = sched.register_kernel(broken).unwrap_err();
        let text = e.to_string();
        match e {
            Error::KernelCompile { kernel, arch, log } => {
                assert_eq!(kernel, "broken");
                assert!(arch.starts_with("sm_"), "{arch}");
                assert!(log.contains("undefined_thing"), "the log should name the undefined identifier: {log}");
                assert!(log.contains("error"), "{log}");
                assert!(text.contains("broken") && text.contains("undefined_thing"), "{text}");
            }
            other => panic!("expected KernelCompile, got {other:?}"),
        }
        // A well-formed source without the named entry point.
        let e = sched.register_kernel(Kernel::new("not_there", AFFINE_SRC).params([Param::Buffer])).unwrap_err();
        assert!(matches!(e, Error::KernelInvalid { ref kernel, .. } if kernel == "not_there"), "{e:?}");
        // The scheduler still works.
        let k = sched.register_kernel(affine_kernel()).unwrap();
        assert_eq!(k.name(), "affine");
    });
}

/// A GPU callback gets the task's CUDA stream and its slot's device pointers (and no
/// simulated buffer); each stream slot has its own stream and its own physical copy of
/// a virtual buffer; work it enqueues on the stream is ordered with the task's commands.
#[test]
#[ignore = "needs a CUDA GPU"]
fn cuda_gpu_callback_gets_stream_and_device_pointers() {
    isolated("cuda_gpu_callback_gets_stream_and_device_pointers", || {
        let s = 4;
        let sched = cuda(s, Order::Fcfs);
        let w = Workload::new(&sched, plan(81, 1, 32, 1 << 16, &[Recipe::GpuFill])).unwrap();
        let seen: Arc<Mutex<Vec<(usize, u64, usize)>>> = Default::default();
        for p in &w.plan {
            let (d, seen, len, k) = (w.d_in.clone(), seen.clone(), p.len, p.k);
            let r = p.offset..p.offset + p.len;
            let args =
                [Arg::buffer(&w.d_in), Arg::buffer(&w.d_out), Arg::u32(p.len as u32), Arg::u32(p.a), Arg::u32(p.b)];
            sched
                .task(p.id, p.len as u64)
                .download(&w.d_in, 0, &w.inp, r.clone())
                .gpu_callback(move |call| {
                    let stream = call.cuda_stream().ok_or("no CUDA stream on the CUDA backend")?;
                    let ptr = call.device_ptr(&d).ok_or("no device pointer on the CUDA backend")?;
                    if call.sim_buffer(&d).is_some() {
                        return Err("a simulated buffer on the CUDA backend".into());
                    }
                    if stream.is_null() || ptr == 0 {
                        return Err(format!("null stream {stream:?} or pointer {ptr:#x}").into());
                    }
                    seen.lock().unwrap().push((call.info().stream, ptr, stream.as_raw() as usize));
                    gpu_fill(call, &d, len, k)
                })
                .launch(&w.affine, grid(p.len), BLOCK, 0, &args)
                .readback(&w.out, r, &w.d_out, 0)
                .submit()
                .unwrap();
        }
        let report = sched.synchronize().unwrap();
        check(&report, &w.specs(), &Limits::of(&sched), Clocks::HOST);
        w.verify(&report);
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), w.plan.len(), "every GPU callback ran once");
        let mut ptrs: HashMap<usize, HashSet<u64>> = HashMap::new();
        let mut streams: HashMap<usize, HashSet<usize>> = HashMap::new();
        for &(slot, ptr, stream) in seen.iter() {
            assert!(slot < s);
            ptrs.entry(slot).or_default().insert(ptr);
            streams.entry(slot).or_default().insert(stream);
        }
        assert!(ptrs.values().all(|p| p.len() == 1), "one physical copy per slot: {ptrs:?}");
        assert!(streams.values().all(|p| p.len() == 1), "one stream per slot: {streams:?}");
        let distinct_ptrs: HashSet<u64> = ptrs.values().flatten().copied().collect();
        let distinct_streams: HashSet<usize> = streams.values().flatten().copied().collect();
        assert_eq!(distinct_ptrs.len(), ptrs.len(), "slots share a physical copy: {ptrs:?}");
        assert_eq!(distinct_streams.len(), streams.len(), "slots share a stream: {streams:?}");
    });
}

/// Device memory in use returns to its starting value once the buffers are dropped and
/// `synchronize` has run (even a buffer dropped while a task still used it).
#[test]
#[ignore = "needs a CUDA GPU"]
fn cuda_device_memory_returns_after_synchronize() {
    isolated("cuda_device_memory_returns_after_synchronize", || {
        let s = 4;
        let sched = cuda(s, Order::Fcfs);
        // Warm-up: one batch of every recipe, so that memory the driver sets up lazily
        // on first use (module data, per-stream resources) is in the baseline.
        run_workload(&sched, plan(90, 1, 16, 4096, CUDA_RECIPES), Clocks::HOST);
        // The warm-up's buffers were dropped with it; they return to the driver at the
        // next synchronize, which must come before the baseline.
        sched.synchronize().unwrap();
        let base = sched.device_memory_in_use(0).expect("CUDA reports memory in use");

        const MIB: u64 = 1 << 20;
        let n = 16usize << 20; // 64 MiB of u32 per physical copy, S copies per buffer
        let bufs: Vec<DeviceBuffer<u32>> = (0..3).map(|_| sched.alloc::<u32>(n).unwrap()).collect();
        let during = sched.device_memory_in_use(0).unwrap();
        assert!(
            during >= base + 3 * s as u64 * 64 * MIB,
            "3 buffers x {s} copies x 64 MiB allocated, but memory in use went from {base} to {during}"
        );
        // Use them: every buffer, every slot; each task reads its chunk back into its
        // own region of `out`.
        let chunk = 1usize << 12;
        let tasks = 3 * 2 * s;
        let mut host = sched.alloc_host::<u32>(chunk).unwrap();
        host.write().iter_mut().enumerate().for_each(|(i, x)| *x = i as u32);
        let out = sched.alloc_host::<u32>(chunk * tasks).unwrap();
        let with_host = sched.device_memory_in_use(0).unwrap();
        let mut id = 0;
        for b in &bufs {
            for _ in 0..2 * s {
                let r = id as usize * chunk..(id as usize + 1) * chunk;
                id += 1;
                sched.task(id, 1).download(b, n - chunk, &host, ..).readback(&out, r, b, n - chunk).submit().unwrap();
            }
        }
        // One buffer is dropped while its last task may still be in flight.
        let (open, wait) = gate();
        let last = sched.alloc::<u32>(n).unwrap();
        sched.task(id + 1, 1).callback(Resource::Cpu, wait).download(&last, 0, &host, ..).submit().unwrap();
        drop(last);
        open.send(()).unwrap();
        drop(bufs);
        sched.synchronize().unwrap();
        assert!(out.read().iter().enumerate().all(|(i, &x)| x == (i % chunk) as u32));
        let after = sched.device_memory_in_use(0).unwrap();
        eprintln!("device memory in use: {base} at start, {during} with the buffers, {with_host} with the host buffer too, {after} after freeing");
        assert_eq!(after, base, "memory in use was {base} before the buffers, {after} after they were freed");
    });
}

/// A kernel that writes far outside its buffer: a sticky CUDA_ERROR_ILLEGAL_ADDRESS.
fn wild_kernel() -> Kernel {
    Kernel::new(
        "wild",
        r#"extern "C" __global__ void wild(unsigned* p, unsigned poison) {
            if (poison) { p[(1ull << 40) + threadIdx.x] = 1u; } }"#,
    )
    .params([Param::Buffer, Param::U32])
}

/// Tasks of `n` u32 on `sched`: download, `wild` (poisoned for task `bad`), readback to
/// `out` out of place. Returns the ids.
fn wild_batch(sched: &Scheduler, input: &chariot::HostBuffer<u32>, out: &chariot::HostBuffer<u32>, bad: u64) {
    let n = 1 << 16;
    let d = sched.alloc::<u32>(n).unwrap();
    let wild = sched.register_kernel(wild_kernel()).unwrap();
    for i in 0..24u64 {
        let r = i as usize * n..(i as usize + 1) * n;
        sched
            .task(i, n as u64)
            .download(&d, 0, input, r.clone())
            .launch(&wild, 1u32, 32u32, 0, &[Arg::buffer(&d), Arg::u32(u32::from(i == bad))])
            .readback(out, r, &d, 0)
            .submit()
            .unwrap();
    }
}

/// A sticky error on the only GPU: the kernel's task is blamed, the others completed or
/// report that no GPU is left, nothing hangs; and the process goes on: a new scheduler
/// runs, or is refused with the driver's error.
#[test]
#[ignore = "needs a CUDA GPU"]
fn cuda_sticky_error_retires_the_gpu_not_the_process() {
    isolated("cuda_sticky_error_retires_the_gpu_not_the_process", || {
        let n = 1usize << 16;
        {
            // One kernel at a time: kernels running side by side all see the sticky
            // error, and each is blamed (the driver does not say whose it was).
            let sched = builder(2, Order::Fcfs).kernel_concurrency(1).build().unwrap();
            let mut input = sched.alloc_host::<u32>(24 * n).unwrap();
            input.write().iter_mut().enumerate().for_each(|(i, x)| *x = gen(i));
            let out = sched.alloc_host::<u32>(24 * n).unwrap();
            wild_batch(&sched, &input, &out, 5);
            let (failures, report) = expect_failed(sched.synchronize());
            eprintln!("{report}");
            let blamed = failures.iter().find(|f| f.task.0 == 5).expect("task 5 is reported");
            assert_eq!(blamed.stage, Stage::Kernel, "{blamed}");
            assert!(blamed.message.contains("ILLEGAL_ADDRESS"), "{blamed}");
            // The driver's code, to match on: CUDA_ERROR_ILLEGAL_ADDRESS is 700.
            let driver = blamed.driver.as_ref().expect("a driver error carries its code");
            assert!(driver.is(700) && driver.name == "CUDA_ERROR_ILLEGAL_ADDRESS", "{driver:?}");
            assert_eq!(report.lost_gpus.len(), 1, "{:?}", report.lost_gpus);
            assert!(sched.live_gpus().is_empty());
            for f in failures.iter().filter(|f| f.task.0 != 5) {
                assert!(f.message.contains("lost") || f.message.contains("no GPU left"), "{f}");
            }
            // Tasks that completed have the right output.
            let failed: HashSet<u64> = failures.iter().map(|f| f.task.0).collect();
            let (input, out) = (input.read(), out.read());
            for i in (0..24).filter(|i| !failed.contains(i)) {
                let r = i as usize * n..(i as usize + 1) * n;
                assert_eq!(&out[r.clone()], &input[r], "task {i}");
            }
            // Later work fails without hanging.
            sched.task(100, 1).callback(Resource::Cpu, |_| Ok(())).submit().unwrap();
            assert!(sched.synchronize().is_err());
        }
        // The process is not poisoned: a new scheduler either gets a fresh context and
        // runs a batch correctly, or (the driver keeping the device's primary context
        // lost for the process's life, as driver 580 does) is refused with the driver's
        // error at build. Either way, no panic and no hang.
        match Scheduler::builder().backend(Backend::Cuda).gpus(1).streams(2).build() {
            Ok(sched) => {
                let mut input = sched.alloc_host::<u32>(24 * n).unwrap();
                input.write().iter_mut().enumerate().for_each(|(i, x)| *x = gen(i));
                let out = sched.alloc_host::<u32>(24 * n).unwrap();
                wild_batch(&sched, &input, &out, u64::MAX);
                sched.synchronize().expect("a fresh context runs the batch");
                assert_eq!(&*out.read(), &*input.read());
                eprintln!("a new scheduler got a fresh context");
            }
            Err(Error::Driver { error, .. }) if error.is(700) => {
                let e = error;
                eprintln!("a new scheduler is refused: {e}");
            }
            Err(e) => panic!("unexpected error from a new scheduler: {e}"),
        }
    });
}

/// A sticky error inside a replayed window: the window's tasks fail (the driver does
/// not say which node faulted), the GPU leaves the rotation, `synchronize` returns and
/// nothing hangs.
#[test]
#[ignore = "needs a CUDA GPU"]
fn cuda_sticky_error_in_a_replayed_window_fails_it_cleanly() {
    isolated("cuda_sticky_error_in_a_replayed_window_fails_it_cleanly", || {
        let n = 1usize << 16;
        let sched = builder(2, Order::Fcfs).execution(chariot::Execution::Replay).build().unwrap();
        let mut input = sched.alloc_host::<u32>(24 * n).unwrap();
        input.write().iter_mut().enumerate().for_each(|(i, x)| *x = gen(i));
        let out = sched.alloc_host::<u32>(24 * n).unwrap();
        wild_batch(&sched, &input, &out, 5);
        let (failures, report) = expect_failed(sched.synchronize());
        eprintln!("{report}");
        assert_eq!(report.windows.len(), 1, "{report}");
        assert!(report.windows[0].failed);
        assert_eq!(failures.len(), 24, "every task of the window fails: {failures:?}");
        assert!(failures.iter().all(|f| f.message.contains("replayed window")), "{failures:?}");
        assert!(failures.iter().any(|f| f.message.contains("ILLEGAL_ADDRESS")), "{failures:?}");
        assert_eq!(report.lost_gpus.len(), 1, "{:?}", report.lost_gpus);
        // Later work fails without hanging.
        sched.task(100, 1).callback(Resource::Cpu, |_| Ok(())).submit().unwrap();
        assert!(sched.synchronize().is_err());
    });
}

/// `two` built, or `None` (saying the test skips) where there is one GPU.
fn on_two_gpus(two: chariot::Builder) -> Option<Scheduler> {
    match two.build() {
        Ok(s) => Some(s),
        Err(Error::NoSuchGpu { available: 1, .. }) => {
            eprintln!("SKIPPED: one GPU here; this test needs two");
            None
        }
        Err(e) => panic!("{e}"),
    }
}

/// A sticky error inside the per-iteration loop's window spread over two GPUs (a DAG
/// of full-wave launches, four a level): the window fails as a whole, every task of it
/// named with the driver's error; every GPU whose context the error poisoned leaves the
/// rotation (the driver poisons every context of the process: both), and a GPU left in
/// it runs work; `synchronize` returns and later work runs or fails with a reason:
/// nothing hangs. Needs two GPUs (skips, saying so, on one).
#[test]
#[ignore = "needs two CUDA GPUs"]
fn cuda_sticky_error_in_a_window_spread_over_two_gpus_fails_it_cleanly() {
    isolated("cuda_sticky_error_in_a_window_spread_over_two_gpus_fails_it_cleanly", || {
        let two = Scheduler::builder().backend(Backend::Cuda).gpus(2).streams(4).execution(chariot::Execution::Replay);
        let Some(sched) = on_two_gpus(two) else { return };
        let info = &sched.gpu_info()[0];
        let wave = info.sm_count * info.blocks_per_sm(32, 0);
        let d = sched.alloc::<u32>(1 << 16).unwrap();
        let wild = sched.register_kernel(wild_kernel()).unwrap();
        // Eight levels of four; task j of a level runs after tasks j and j + 1 (mod 4)
        // of the level before: one connected part, four launches wide.
        let submit = |poison: Option<u64>| {
            for i in 0..32u64 {
                let after = if i < 4 { vec![] } else { vec![TaskId(i - 4), TaskId(i - i % 4 + (i + 1) % 4 - 4)] };
                sched
                    .task(i, 1)
                    .after_all(after)
                    .launch(&wild, wave, 32u32, 0, &[Arg::buffer(&d), Arg::u32(u32::from(poison == Some(i)))])
                    .submit()
                    .unwrap();
            }
            sched.synchronize()
        };
        submit(None).expect("the first batch runs, on one GPU");
        let report = submit(None).expect("the second batch runs");
        let spans = report.windows.iter().map(|w| w.gpu_count).max();
        assert_eq!(spans, Some(2), "the second batch's window spans both GPUs: {:?}", report.windows);
        let (failures, report) = expect_failed(submit(Some(21)));
        eprintln!("{report}");
        let failed: Vec<_> = report.windows.iter().filter(|w| w.failed).collect();
        assert!(failed.iter().any(|w| w.gpu_count == 2), "the spread window failed: {:?}", report.windows);
        assert_eq!(failures.len(), failed.iter().map(|w| w.tasks).sum::<usize>(), "{failures:?}");
        assert!(failures.iter().any(|f| f.task == TaskId(21)), "{failures:?}");
        assert!(failures.iter().all(|f| f.message.contains("replayed window")), "{failures:?}");
        assert!(failures.iter().any(|f| f.message.contains("ILLEGAL_ADDRESS")), "{failures:?}");
        assert!(!report.lost_gpus.is_empty(), "{:?}", report.lost_gpus);
        // No GPU whose context the error poisoned stays in the rotation: each one left
        // runs a launch (driver 580 poisons both contexts, so none is left there).
        let live = sched.live_gpus();
        eprintln!("GPUs left in the rotation: {live:?}");
        for (i, &g) in live.iter().enumerate() {
            let args = [Arg::buffer(&d), Arg::u32(0)];
            sched.task(100 + i as u64, 1).prefer_gpu(g).launch(&wild, 1u32, 32u32, 0, &args).submit().unwrap();
        }
        if !live.is_empty() {
            sched.synchronize().expect("the GPUs left in the rotation run work");
        }
        // Later work runs or fails with a reason, without hanging.
        sched.task(200, 1).callback(Resource::Cpu, |_| Ok(())).submit().unwrap();
        match sched.synchronize() {
            Ok(r) => eprintln!("later work ran: {} task(s)", r.tasks),
            Err(e) => eprintln!("later work failed: {e}"),
        }
    });
}

/// With two GPUs, a sticky error on one: the culprit is blamed, its GPU's other tasks
/// move to the second, and every task completes correctly or fails with a reason
/// (where the driver poisons the whole process, the second GPU is lost too). Needs two
/// GPUs (skips, saying so, on one).
#[test]
#[ignore = "needs two CUDA GPUs"]
fn cuda_sticky_error_moves_tasks_to_the_other_gpu() {
    isolated("cuda_sticky_error_moves_tasks_to_the_other_gpu", || {
        let n = 1usize << 16;
        // One kernel at a time per GPU: kernels running side by side all see the sticky
        // error and each is blamed (the driver does not say whose it was); a run on two
        // H100s blamed two.
        let two = Scheduler::builder().backend(Backend::Cuda).gpus(2).streams(2).cpu_cores(4).kernel_concurrency(1);
        let Some(sched) = on_two_gpus(two) else { return };
        let mut input = sched.alloc_host::<u32>(24 * n).unwrap();
        input.write().iter_mut().enumerate().for_each(|(i, x)| *x = gen(i));
        let out = sched.alloc_host::<u32>(24 * n).unwrap();
        wild_batch(&sched, &input, &out, 3);
        let (failures, report) = expect_failed(sched.synchronize());
        eprintln!("{report}\nmoved: {:?}", report.moved);
        let blamed = failures.iter().find(|f| f.task.0 == 3).expect("the culprit is reported");
        assert_eq!(blamed.stage, Stage::Kernel, "{blamed}");
        assert!(!report.lost_gpus.is_empty());
        // Measured on 2 x H200 (driver 580): the driver poisons every context of the
        // process, not only the faulting one, so the GPU a task moves to fails at its
        // next call too (docs/faults.md). Either way: no hang, the culprit blamed,
        // every other task completed correctly or failed with a reason.
        if report.lost_gpus.len() == 1 {
            assert_eq!(sched.live_gpus().len(), 1);
            assert_eq!(failures.len(), 1, "only the culprit fails: {failures:?}");
        } else {
            eprintln!("the driver poisoned both GPUs' contexts");
            assert!(sched.live_gpus().is_empty());
        }
        for f in failures.iter().filter(|f| f.task.0 != 3) {
            assert!(f.message.contains("lost") || f.message.contains("no GPU left"), "{f}");
        }
        let failed: HashSet<u64> = failures.iter().map(|f| f.task.0).collect();
        let (input, out) = (input.read(), out.read());
        for i in (0..24).filter(|i| !failed.contains(i)) {
            let r = i as usize * n..(i as usize + 1) * n;
            assert_eq!(&out[r.clone()], &input[r], "task {i}");
        }
    });
}

/// A device buffer dropped after its scheduler (a struct holding the scheduler before its
/// buffers drops them in that order) returns its memory: found leaking while the hardware-aware defaults were built.
#[test]
#[ignore = "needs a CUDA GPU"]
fn cuda_a_buffer_that_outlives_its_scheduler_frees_its_memory() {
    isolated("cuda_a_buffer_that_outlives_its_scheduler_frees_its_memory", || {
        // A first scheduler of the same shape settles the driver's own allocations
        // (stream pools): what is measured then is the buffer's.
        let probe = cuda(1, Order::Fcfs);
        drop(cuda(4, Order::Fcfs));
        probe.synchronize().unwrap();
        let mem0 = probe.device_memory_in_use(0).unwrap();
        let sched = cuda(4, Order::Fcfs);
        let d = sched.alloc::<u32>(64 << 20).unwrap(); // 4 copies of 256 MiB
        let during = probe.device_memory_in_use(0).unwrap();
        assert!(during >= mem0 + (1 << 30), "{mem0} -> {during}");
        // The scheduler first, then its buffer (as a struct that holds both in that
        // order drops them): the memory still goes back.
        drop(sched);
        drop(d);
        let after = probe.device_memory_in_use(0).unwrap();
        assert_eq!(after, mem0, "device memory of a buffer dropped after its scheduler not returned");
    });
}

/// Dropping a scheduler with work in flight waits for it, joins every runtime thread and
/// frees every device buffer: thread count and device memory return to their start.
#[test]
#[ignore = "needs a CUDA GPU"]
fn cuda_drop_with_work_in_flight_joins_and_frees() {
    isolated("cuda_drop_with_work_in_flight_joins_and_frees", || {
        // The probe keeps the primary context (and the driver's own threads) alive
        // throughout, so that what is measured is the second scheduler's.
        let probe = cuda(1, Order::Fcfs);
        // Host dispatch: a workload replayed as CUDA graphs leaves the driver threads
        // of its own that wind down after the graphs are destroyed (a run saw 9 threads
        // at the start, 7 at the end), which is not what this test counts.
        let warm = builder(4, Order::Fcfs).execution(chariot::Execution::Host).build().unwrap();
        run_workload(&warm, plan(77, 1, 16, 4096, CUDA_RECIPES), Clocks::HOST);
        drop(warm);
        probe.synchronize().unwrap();
        let (threads0, mem0) = (threads_now(), probe.device_memory_in_use(0).unwrap());
        let n = 1usize << 18;
        let mut input;
        let out;
        {
            let sched = cuda(4, Order::Fcfs);
            input = sched.alloc_host::<u32>(64 * n).unwrap();
            input.write().iter_mut().enumerate().for_each(|(i, x)| *x = gen(i));
            out = sched.alloc_host::<u32>(64 * n).unwrap();
            let d = sched.alloc::<u32>(n).unwrap();
            for i in 0..64u64 {
                let r = i as usize * n..(i as usize + 1) * n;
                sched.task(i, n as u64).download(&d, 0, &input, r.clone()).readback(&out, r, &d, 0).submit().unwrap();
            }
            let during = probe.device_memory_in_use(0).unwrap();
            eprintln!("threads {threads0} -> {} with the scheduler; device memory {mem0} -> {during}", threads_now());
            // Dropped here, tasks in flight: `d` first, then the scheduler.
        }
        assert_eq!(&*out.read(), &*input.read(), "drop waited for every task");
        drop((input, out));
        let (threads1, mem1) = (threads_now(), probe.device_memory_in_use(0).unwrap());
        eprintln!("after drop: threads {threads1}, device memory {mem1}");
        assert_eq!(threads1, threads0, "runtime threads left behind");
        assert_eq!(mem1, mem0, "device memory not returned");
    });
}

/// External device memory ([`Arg::external`]): buffers cudarc allocated, outside the
/// runtime, as a kernel's input and as its output, beside the runtime's own buffers;
/// every element checked, through chariot's readback and through cudarc's copy back.
/// An ordinal that is none of the scheduler's GPUs is refused at submit.
#[test]
#[ignore = "needs a CUDA GPU"]
fn cuda_external_device_memory_as_launch_arguments() {
    isolated("cuda_external_device_memory_as_launch_arguments", || {
        use cudarc::driver::DevicePtr;
        let n = 1usize << 16;
        let sched = cuda(2, Order::Fcfs);
        let ordinal = sched.gpu_info()[0].ordinal;
        let ctx = cudarc::driver::CudaContext::new(ordinal).expect("cudarc on the same GPU");
        let stream = ctx.default_stream();
        let input: Vec<u32> = (0..n).map(gen).collect();
        let theirs_in = stream.clone_htod(&input).expect("cudarc's upload");
        let theirs_out = stream.alloc_zeros::<u32>(n).expect("cudarc's allocation");
        stream.synchronize().expect("cudarc's copies done before chariot's tasks");
        let (p_in, _in_sync) = theirs_in.device_ptr(&stream);
        let (p_out, _out_sync) = theirs_out.device_ptr(&stream);
        let affine = sched.register_kernel(affine_kernel()).unwrap();
        let mine = sched.alloc::<u32>(n).unwrap();
        let host = sched.alloc_host::<u32>(n).unwrap();
        let grid = (n as u32).div_ceil(256);
        // Theirs in, chariot's out, read back by chariot.
        sched
            .task(1, n as u64)
            .launch(
                &affine,
                grid,
                256u32,
                0,
                &[Arg::external(p_in, ordinal, ()), Arg::buffer(&mine), Arg::u32(n as u32), Arg::u32(3), Arg::u32(1)],
            )
            .readback(&host, .., &mine, 0)
            .submit()
            .unwrap();
        // Theirs in and out.
        sched
            .task(2, n as u64)
            .launch(
                &affine,
                grid,
                256u32,
                0,
                &[
                    Arg::external(p_in, ordinal, ()),
                    Arg::external(p_out, ordinal, ()),
                    Arg::u32(n as u32),
                    Arg::u32(5),
                    Arg::u32(7),
                ],
            )
            .submit()
            .unwrap();
        let e = sched
            .task(3, 1)
            .launch(
                &affine,
                1u32,
                256u32,
                0,
                &[Arg::external(p_in, ordinal + 7, ()), Arg::buffer(&mine), Arg::u32(1), Arg::u32(1), Arg::u32(1)],
            )
            .submit()
            .unwrap_err();
        assert!(
            matches!(&e, Error::InvalidCommand { task: TaskId(3), .. })
                && e.to_string().contains("not one of the scheduler's"),
            "{e}"
        );
        assert_eq!(sched.synchronize().unwrap().tasks, 2);
        let got = host.read();
        for (i, (&x, &y)) in input.iter().zip(got.iter()).enumerate() {
            assert_eq!(y, affine_ref(x, 3, 1), "chariot's output, element {i}");
        }
        let back = stream.clone_dtoh(&theirs_out).expect("cudarc's copy back");
        for (i, (&x, &y)) in input.iter().zip(&back).enumerate() {
            assert_eq!(y, affine_ref(x, 5, 7), "cudarc's output, element {i}");
        }
    });
}
