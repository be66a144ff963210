//! Bad input on the sim backend: every mistake gets the right `chariot::Error` variant,
//! with a message naming the offending value, and failures stay confined to their task.
//! Also the host-buffer guards: a read waits for an in-flight task writing its range.

mod common;

use chariot::{Arg, Backend, Copy2d, Error, Kernel, Param, Resource, Scheduler, SimProfile, Stage, TaskId};
use common::*;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::Duration;

const DEADLINE_S: u64 = 60;

fn sim() -> Backend {
    Backend::SimWith(SimProfile::instant().with_gpus(8))
}

fn sched(gpus: usize, streams: usize) -> Scheduler {
    Scheduler::builder().backend(sim()).gpus(gpus).streams(streams).build().unwrap()
}

/// Asserts `e` is `InvalidConfig` for parameter `name` with a value containing `value`,
/// and that its message names both.
fn assert_invalid_config(e: Error, name: &str, value: &str) {
    let text = e.to_string();
    match e {
        Error::InvalidConfig { name: n, value: v, allowed } => {
            assert_eq!(n, name, "{text}");
            assert!(v.contains(value), "value {v:?} should name {value:?}");
            assert!(!allowed.is_empty());
            assert!(text.contains(name) && text.contains(value), "message {text:?} should name {name} and {value}");
        }
        other => panic!("expected InvalidConfig for {name}, got {other:?}"),
    }
}

/// Asserts `e` is `InvalidCommand` for `task`'s command `command` at `stage`, with a
/// message containing every one of `needles`.
fn assert_invalid_command(e: Error, task: u64, command: usize, stage: Stage, needles: &[&str]) {
    let text = e.to_string();
    match e {
        Error::InvalidCommand { task: t, command: c, stage: s, message } => {
            assert_eq!((t, c, s), (TaskId(task), command, stage), "{text}");
            for n in needles {
                assert!(message.contains(n), "message {message:?} should contain {n:?}");
            }
            assert!(text.contains(&format!("#{task}")), "{text}");
        }
        other => panic!("expected InvalidCommand, got {other:?}"),
    }
}

// ---------------------------------------------------------------------------------------
// Builder
// ---------------------------------------------------------------------------------------

#[test]
fn zero_gpus_or_streams_are_invalid_config() {
    let e = Scheduler::builder().backend(sim()).gpus(0).build().unwrap_err();
    assert_invalid_config(e, "gpus", "0");
    let e = Scheduler::builder().backend(sim()).streams(0).build().unwrap_err();
    assert_invalid_config(e, "streams", "0");
    let e = Scheduler::builder().backend(sim()).streams(65).build().unwrap_err();
    assert_invalid_config(e, "streams", "65");
    let e = Scheduler::builder().backend(sim()).gpu_list([]).build().unwrap_err();
    assert_invalid_config(e, "gpu_list", "[]");
    let e = Scheduler::builder().backend(sim()).gpu_list([1, 3, 1]).build().unwrap_err();
    assert_invalid_config(e, "gpu_list", "[1, 3, 1]");
}

#[test]
fn more_gpus_than_exist_is_no_such_gpu() {
    let e = Scheduler::builder().backend(sim()).gpus(9).build().unwrap_err();
    let text = e.to_string();
    match e {
        Error::NoSuchGpu { ordinal, available, backend } => {
            assert_eq!((ordinal, available, backend), (8, 8, "sim"));
            assert!(text.contains("GPU 8") && text.contains("8 GPU(s)"), "{text}");
        }
        other => panic!("expected NoSuchGpu, got {other:?}"),
    }
    let e = Scheduler::builder().backend(sim()).gpu_list([0, 42]).build().unwrap_err();
    let text = e.to_string();
    assert!(matches!(e, Error::NoSuchGpu { ordinal: 42, available: 8, .. }), "{e:?}");
    assert!(text.contains("42"), "{text}");
    // The default sim profile has 8 GPUs too; a smaller profile fewer.
    assert!(matches!(
        Scheduler::builder().backend(Backend::Sim).gpus(9).build().unwrap_err(),
        Error::NoSuchGpu { ordinal: 8, available: 8, .. }
    ));
    let two = Backend::SimWith(SimProfile::instant().with_gpus(2));
    assert!(matches!(
        Scheduler::builder().backend(two.clone()).gpus(3).build().unwrap_err(),
        Error::NoSuchGpu { ordinal: 2, available: 2, .. }
    ));
    // A valid list is used in its order.
    let s = Scheduler::builder().backend(two).gpu_list([1, 0]).build().unwrap();
    assert_eq!(s.gpu_info().iter().map(|g| g.ordinal).collect::<Vec<_>>(), vec![1, 0]);
}

#[test]
fn stage_depth_zero_is_invalid_config() {
    let e = Scheduler::builder().backend(sim()).stage_depth(0).build().unwrap_err();
    assert_invalid_config(e, "stage_depth", "0");
    let e = Scheduler::builder().backend(sim()).stage_depth(17).build().unwrap_err();
    assert_invalid_config(e, "stage_depth", "17");
}

#[test]
fn zero_thresholds_are_invalid_config() {
    let e = Scheduler::builder().backend(sim()).local_thresholds([1, 0, 1, 1]).build().unwrap_err();
    assert_invalid_config(e, "local_thresholds", "[1, 0, 1, 1]");
    let e = Scheduler::builder().backend(sim()).global_thresholds([2, 1, 1, 0]).build().unwrap_err();
    assert_invalid_config(e, "global_thresholds", "[2, 1, 1, 0]");
    let e = Scheduler::builder().backend(sim()).buses(0).build().unwrap_err();
    assert_invalid_config(e, "buses", "0");
    let e = Scheduler::builder().backend(sim()).cpu_cores(0).build().unwrap_err();
    assert_invalid_config(e, "cpu_cores", "0");
    // Explicit thresholds replace the paper's.
    let s = Scheduler::builder()
        .backend(sim())
        .local_thresholds([3, 1, 2, 1])
        .global_thresholds([5, 4, 3, 2])
        .build()
        .unwrap();
    assert_eq!((s.thresholds().local, s.thresholds().global), ([3, 1, 2, 1], [5, 4, 3, 2]));
}

#[test]
fn an_invalid_sim_profile_is_invalid_config() {
    let bad = SimProfile::instant().with_time_scale(-1.0);
    let e = Scheduler::builder().backend(Backend::SimWith(bad)).build().unwrap_err();
    let text = e.to_string();
    assert!(matches!(e, Error::InvalidConfig { name: "backend", .. }), "{e:?}");
    assert!(text.contains("time_scale"), "{text}");
    let bad = SimProfile::instant().with_copy_engines(0);
    assert!(matches!(
        Scheduler::builder().backend(Backend::SimWith(bad)).build().unwrap_err(),
        Error::InvalidConfig { name: "backend", .. }
    ));
}

#[test]
fn cuda_backend_without_a_driver_is_cuda_unavailable() {
    match Scheduler::builder().backend(Backend::Cuda).build() {
        // A GPU is present (e.g. on the GPU machine): nothing to check here.
        Ok(s) => eprintln!("skipped: the CUDA backend is available here ({:?})", s.gpu_info()),
        Err(Error::CudaUnavailable { reason }) => {
            assert!(!reason.is_empty());
            let e = Error::CudaUnavailable { reason: reason.clone() };
            assert!(e.to_string().contains(&reason));
        }
        Err(other) => panic!("expected CudaUnavailable, got {other:?}"),
    }
}

// ---------------------------------------------------------------------------------------
// Allocation and kernels
// ---------------------------------------------------------------------------------------

#[test]
fn alloc_of_zero_elements_is_invalid_length() {
    let s = sched(1, 1);
    let e = s.alloc::<u32>(0).unwrap_err();
    assert!(matches!(e, Error::InvalidLength { len: 0, elem_size: 4, .. }), "{e:?}");
    assert!(e.to_string().contains("length 0"), "{e}");
    let e = s.alloc_host::<f64>(0).unwrap_err();
    assert!(matches!(e, Error::InvalidLength { len: 0, elem_size: 8, .. }), "{e:?}");
    let e = s.alloc_host::<u64>(usize::MAX / 4).unwrap_err();
    assert!(matches!(e, Error::InvalidLength { .. }), "{e:?}");
    // A range outside a host buffer, through the guards.
    let h = s.alloc_host::<u32>(10).unwrap();
    let e = h.read_range(5..11).unwrap_err();
    assert!(matches!(e, Error::InvalidLength { len: 10, .. }), "{e:?}");
    assert!(e.to_string().contains("5..11"), "{e}");
}

#[test]
fn a_kernel_without_cpu_twin_is_kernel_invalid_on_sim() {
    let s = sched(1, 1);
    let e = s.register_kernel(Kernel::new("no_twin", AFFINE_SRC).params([Param::Buffer])).unwrap_err();
    let text = e.to_string();
    match e {
        Error::KernelInvalid { kernel, message } => {
            assert_eq!(kernel, "no_twin");
            assert!(message.contains("twin"), "{message}");
            assert!(text.contains("no_twin"), "{text}");
        }
        other => panic!("expected KernelInvalid, got {other:?}"),
    }
    let e = s.register_kernel(Kernel::new("", AFFINE_SRC).cpu_twin(|_| Ok(()))).unwrap_err();
    assert!(matches!(e, Error::KernelInvalid { .. }), "{e:?}");
    let many = Kernel::new("many", "").params(vec![Param::U32; 33]).cpu_twin(|_| Ok(()));
    let e = s.register_kernel(many).unwrap_err();
    assert!(matches!(e, Error::KernelInvalid { ref message, .. } if message.contains("33")), "{e:?}");
}

// ---------------------------------------------------------------------------------------
// Commands
// ---------------------------------------------------------------------------------------

#[test]
fn a_copy_larger_than_its_device_buffer_is_invalid_command() {
    let s = sched(1, 2);
    let host = s.alloc_host::<u32>(1000).unwrap();
    let dev = s.alloc::<u32>(100).unwrap();
    let e = s.task(1, 1).download(&dev, 0, &host, 0..200).submit().unwrap_err();
    assert_invalid_command(e, 1, 0, Stage::Download, &["200", "100"]);
    // Fits in size, but not at that offset: 60 + 50 = 110 > 100.
    let e = s.task(2, 1).download(&dev, 60, &host, 0..50).submit().unwrap_err();
    assert_invalid_command(e, 2, 0, Stage::Download, &["110", "100"]);
    let e = s.task(3, 1).readback(&host, 0..150, &dev, 0).submit().unwrap_err();
    assert_invalid_command(e, 3, 0, Stage::Readback, &["150", "100"]);
    // Nothing was submitted, so the ids are free and nothing is outstanding.
    s.task(1, 1).download(&dev, 0, &host, 0..100).submit().unwrap();
    s.synchronize().unwrap();
}

#[test]
fn a_host_range_outside_its_host_buffer_is_invalid_command() {
    let s = sched(1, 1);
    let host = s.alloc_host::<u32>(100).unwrap();
    let dev = s.alloc::<u32>(1000).unwrap();
    let e = s.task(1, 1).download(&dev, 0, &host, 90..120).submit().unwrap_err();
    assert_invalid_command(e, 1, 0, Stage::Download, &["90..120", "0..100"]);
    let e = s.task(2, 1).readback(&host, 50..=100, &dev, 0).submit().unwrap_err();
    assert_invalid_command(e, 2, 0, Stage::Readback, &["50..101", "0..100"]);
    let e = s.task(3, 1).callback_writing(&host, 0..101, |_, _| Ok(())).submit().unwrap_err();
    assert_invalid_command(e, 3, 0, Stage::Cpu, &["0..101"]);
    let e = s.task(4, 1).callback_reading(&host, 7..7, |_, _| Ok(())).submit().unwrap_err();
    assert_invalid_command(e, 4, 0, Stage::Cpu, &["7..7"]);
    // The command index is the bad command's position; the first error is kept.
    let e = s
        .task(5, 1)
        .download(&dev, 0, &host, 0..10)
        .readback(&host, 0..10, &dev, 0)
        .download(&dev, 0, &host, 99..200)
        .download(&dev, 5000, &host, 0..1)
        .submit()
        .unwrap_err();
    assert_invalid_command(e, 5, 2, Stage::Download, &["99..200"]);
}

#[test]
fn bad_2d_copies_are_invalid_command() {
    let s = sched(1, 1);
    let host = s.alloc_host::<u32>(1000).unwrap();
    let dev = s.alloc::<u32>(1000).unwrap();
    let ok = Copy2d { host_offset: 0, host_pitch: 100, dev_offset: 0, dev_pitch: 50, width: 50, height: 10 };
    // Pitch smaller than the width, on either side.
    let e = s.task(1, 1).download_2d(&dev, &host, Copy2d { host_pitch: 40, ..ok }).submit().unwrap_err();
    assert_invalid_command(e, 1, 0, Stage::Download, &["pitch", "40", "50"]);
    let e = s.task(2, 1).readback_2d(&host, &dev, Copy2d { dev_pitch: 49, ..ok }).submit().unwrap_err();
    assert_invalid_command(e, 2, 0, Stage::Readback, &["pitch", "49", "50"]);
    // 11 rows of pitch 100 end at element 10 * 100 + 50 = 1050 > 1000.
    let e = s.task(3, 1).download_2d(&dev, &host, Copy2d { height: 11, ..ok }).submit().unwrap_err();
    assert_invalid_command(e, 3, 0, Stage::Download, &["1050", "1000"]);
    // The device side: offset 600 + 9 * 50 + 50 = 1100 > 1000.
    let e = s.task(4, 1).readback_2d(&host, &dev, Copy2d { dev_offset: 600, ..ok }).submit().unwrap_err();
    assert_invalid_command(e, 4, 0, Stage::Readback, &["1100", "1000"]);
    let e = s.task(5, 1).download_2d(&dev, &host, Copy2d { width: 0, ..ok }).submit().unwrap_err();
    assert_invalid_command(e, 5, 0, Stage::Download, &["empty"]);
    // An overflowing extent is refused, not wrapped.
    let huge = Copy2d { host_pitch: usize::MAX / 2, height: 3, ..ok };
    let e = s.task(6, 1).download_2d(&dev, &host, huge).submit().unwrap_err();
    assert_invalid_command(e, 6, 0, Stage::Download, &["overflow"]);
    // The valid shape runs.
    s.task(7, 1).download_2d(&dev, &host, ok).readback_2d(&host, &dev, ok).submit().unwrap();
    s.synchronize().unwrap();
}

#[test]
fn a_launch_with_mismatched_arguments_is_invalid_command() {
    let s = sched(1, 1);
    let a = s.alloc::<u32>(16).unwrap();
    let k = s.register_kernel(affine_kernel()).unwrap();
    let args4 = [Arg::buffer(&a), Arg::buffer(&a), Arg::u32(16), Arg::u32(1)];
    let e = s.task(1, 1).launch(&k, 1, 32, 0, &args4).submit().unwrap_err();
    assert_invalid_command(e, 1, 0, Stage::Kernel, &["affine", "expected", "got"]);
    let wrong_kind = [Arg::buffer(&a), Arg::buffer(&a), Arg::f32(16.0), Arg::u32(1), Arg::u32(2)];
    let e = s.task(2, 1).launch(&k, 1, 32, 0, &wrong_kind).submit().unwrap_err();
    assert_invalid_command(e, 2, 0, Stage::Kernel, &["F32"]);
    let good = [Arg::buffer(&a), Arg::buffer(&a), Arg::u32(16), Arg::u32(1), Arg::u32(2)];
    let e = s.task(3, 1).launch(&k, 0, 32, 0, &good).submit().unwrap_err();
    assert_invalid_command(e, 3, 0, Stage::Kernel, &["zero dimension"]);
    let e = s.task(4, 1).launch(&k, 1, (32, 32, 2), 0, &good).submit().unwrap_err();
    assert_invalid_command(e, 4, 0, Stage::Kernel, &["2048", "1024"]);
}

#[test]
fn buffers_and_kernels_of_another_scheduler_are_invalid_command() {
    let (s1, s2) = (sched(1, 1), sched(1, 1));
    let host = s1.alloc_host::<u32>(8).unwrap();
    let foreign = s2.alloc::<u32>(8).unwrap();
    let k2 = s2.register_kernel(mix_kernel()).unwrap();
    let e = s1.task(1, 1).download(&foreign, 0, &host, ..).submit().unwrap_err();
    assert_invalid_command(e, 1, 0, Stage::Download, &["another scheduler"]);
    let e =
        s1.task(2, 1).launch(&k2, 1, 8, 0, &[Arg::buffer(&foreign), Arg::u32(8), Arg::u32(1)]).submit().unwrap_err();
    assert_invalid_command(e, 2, 0, Stage::Kernel, &["another scheduler"]);
}

#[test]
fn an_empty_task_is_empty_task() {
    let s = sched(1, 1);
    let e = s.task(77, 1).submit().unwrap_err();
    assert!(matches!(e, Error::EmptyTask { task: TaskId(77) }), "{e:?}");
    assert!(e.to_string().contains("#77"), "{e}");
}

#[test]
fn a_submit_after_shutdown_is_shut_down() {
    with_timeout(DEADLINE_S, || {
        let s = sched(2, 2);
        let w = Workload::new(&s, plan(3, 1, 8, 100, SIM_RECIPES)).unwrap();
        w.submit_all(&s).unwrap();
        let report = s.shutdown().unwrap();
        // Shutdown waited for the batch.
        check(&report, &w.specs(), &Limits::of(&s), Clocks::SIM);
        w.verify(&report);
        let e = w.submit(&s, &w.plan[0]).unwrap_err();
        assert!(matches!(e, Error::ShutDown), "{e:?}");
        assert!(e.to_string().contains("shut down"));
        // Shutting down twice is harmless.
        assert_eq!(s.shutdown().unwrap().tasks, 0);
    });
}

// ---------------------------------------------------------------------------------------
// Ids and host regions
// ---------------------------------------------------------------------------------------

#[test]
fn a_duplicate_task_id_in_flight_is_duplicate_task() {
    with_timeout(DEADLINE_S, || {
        let s = sched(1, 2);
        let host = s.alloc_host::<u32>(64).unwrap();
        let (open, wait) = gate();
        s.task(5, 1).callback(Resource::Cpu, wait).submit().unwrap();
        let e = s.task(5, 1).callback_reading(&host, .., |_, _| Ok(())).submit().unwrap_err();
        assert!(matches!(e, Error::DuplicateTask { task: TaskId(5) }), "{e:?}");
        assert!(e.to_string().contains("#5"), "{e}");
        // Another id is fine meanwhile.
        s.task(6, 1).callback_reading(&host, .., |_, _| Ok(())).submit().unwrap();
        open.send(()).unwrap();
        let report = s.synchronize().unwrap();
        assert_eq!(report.tasks, 2);
        // Once it has ended, the id may be used again.
        s.task(5, 1).callback_reading(&host, .., |_, _| Ok(())).submit().unwrap();
        s.synchronize().unwrap();
    });
}

#[test]
fn two_tasks_writing_one_host_region_is_host_conflict() {
    with_timeout(DEADLINE_S, || {
        let s = sched(1, 2);
        let host = s.alloc_host::<u32>(100).unwrap();
        let dev = s.alloc::<u32>(100).unwrap();
        let (open, wait) = gate();
        s.task(1, 1).callback(Resource::Cpu, wait).readback(&host, 10..30, &dev, 0).submit().unwrap();
        // Overlapping writes (a readback, a writing callback) and a read of a written
        // region are refused while task 1 is in flight.
        let e = s.task(2, 1).readback(&host, 25..40, &dev, 0).submit().unwrap_err();
        let text = e.to_string();
        match e {
            Error::HostConflict { task, buffer, region, holder } => {
                assert_eq!((task, buffer), (TaskId(2), host.id()));
                assert!(region.contains("100..160"), "bytes of elements 25..40: {region}");
                assert!(holder.contains("#1"), "{holder}");
                assert!(text.contains("#2") && text.contains("#1"), "{text}");
            }
            other => panic!("expected HostConflict, got {other:?}"),
        }
        let e = s.task(3, 1).callback_writing(&host, 0..11, |_, _| Ok(())).submit().unwrap_err();
        assert!(matches!(e, Error::HostConflict { task: TaskId(3), .. }), "{e:?}");
        let e = s.task(4, 1).download(&dev, 0, &host, 29..31).submit().unwrap_err();
        assert!(matches!(e, Error::HostConflict { task: TaskId(4), .. }), "{e:?}");
        // A refused task leaves no claim behind: its other region is free.
        let e = s.task(5, 1).readback(&host, 60..70, &dev, 0).readback(&host, 20..21, &dev, 0).submit().unwrap_err();
        assert!(matches!(e, Error::HostConflict { task: TaskId(5), .. }), "{e:?}");
        // Adjacent regions do not conflict.
        s.task(6, 1).readback(&host, 30..40, &dev, 0).submit().unwrap();
        s.task(7, 1).readback(&host, 60..70, &dev, 0).submit().unwrap();
        open.send(()).unwrap();
        let report = s.synchronize().unwrap();
        assert_eq!(report.tasks, 3);
        // Once task 1 has ended, its region is free.
        s.task(2, 1).readback(&host, 25..40, &dev, 0).submit().unwrap();
        s.synchronize().unwrap();
    });
}

#[test]
fn writing_under_a_live_read_guard_is_host_conflict() {
    with_timeout(DEADLINE_S, || {
        let s = sched(1, 1);
        let host = s.alloc_host::<u32>(100).unwrap();
        let dev = s.alloc::<u32>(100).unwrap();
        let guard = host.read_range(40..60).unwrap();
        let e = s.task(1, 1).readback(&host, 50..55, &dev, 0).submit().unwrap_err();
        match e {
            Error::HostConflict { task, holder, .. } => {
                assert_eq!(task, TaskId(1));
                assert!(holder.contains("read guard"), "{holder}");
            }
            other => panic!("expected HostConflict, got {other:?}"),
        }
        let e = s.task(2, 1).callback_writing(&host, 0..41, |_, _| Ok(())).submit().unwrap_err();
        assert!(matches!(e, Error::HostConflict { task: TaskId(2), .. }), "{e:?}");
        // Reading under a read guard is fine, and so is writing outside it.
        s.task(3, 1).download(&dev, 0, &host, 45..50).readback(&host, 60..65, &dev, 0).submit().unwrap();
        s.synchronize().unwrap();
        drop(guard);
        s.task(1, 1).readback(&host, 50..55, &dev, 0).submit().unwrap();
        s.synchronize().unwrap();
    });
}

// ---------------------------------------------------------------------------------------
// Failures stay in their task
// ---------------------------------------------------------------------------------------

/// A panicking CPU callback fails its task alone (see `panic_scenario`).
#[test]
fn a_panicking_callback_fails_only_its_task() {
    with_timeout(DEADLINE_S, || {
        let s = Scheduler::builder().backend(sim()).gpus(2).streams(2).build().unwrap();
        panic_scenario(&s, Clocks::SIM);
    });
}

#[test]
fn failing_gpu_callbacks_and_twins_fail_only_their_tasks() {
    with_timeout(DEADLINE_S, || {
        let s = Scheduler::builder().backend(sim()).gpus(1).streams(3).build().unwrap();
        let mut host = s.alloc_host::<u32>(64).unwrap();
        host.write().fill(5);
        let d = s.alloc::<u32>(64).unwrap();
        let picky = s
            .register_kernel(Kernel::new("picky", "").params([Param::Buffer, Param::U32]).cpu_twin(|a| {
                if a.u32(1)? == 13 {
                    Err("unlucky thirteen".into())
                } else {
                    Ok(())
                }
            }))
            .unwrap();
        s.task(1, 1)
            .download(&d, 0, &host, 0..8)
            .gpu_callback(|_| panic!("gpu callback exploded"))
            .readback(&host, 0..8, &d, 0)
            .submit()
            .unwrap();
        s.task(2, 1)
            .download(&d, 0, &host, 8..16)
            .launch(&picky, 1, 1, 0, &[Arg::buffer(&d), Arg::u32(13)])
            .readback(&host, 8..16, &d, 0)
            .submit()
            .unwrap();
        s.task(3, 1)
            .download(&d, 0, &host, 16..24)
            .launch(&picky, 1, 1, 0, &[Arg::buffer(&d), Arg::u32(12)])
            .callback(Resource::Cpu, |_| Err("callback said no".into()))
            .submit()
            .unwrap();
        s.task(4, 1)
            .download(&d, 0, &host, 24..32)
            .launch(&picky, 1, 1, 0, &[Arg::buffer(&d), Arg::u32(12)])
            .readback(&host, 24..32, &d, 0)
            .submit()
            .unwrap();
        let Err(Error::TasksFailed { mut failures, report }) = s.synchronize() else { panic!("expected TasksFailed") };
        failures.sort_by_key(|f| f.task);
        let got: Vec<_> = failures.iter().map(|f| (f.task.0, f.command, f.stage)).collect();
        assert_eq!(got, vec![(1, 1, Stage::Kernel), (2, 1, Stage::Kernel), (3, 2, Stage::Cpu)]);
        assert!(failures[0].message.contains("gpu callback exploded"), "{}", failures[0].message);
        assert!(
            failures[1].message.contains("unlucky thirteen") && failures[1].message.contains("picky"),
            "{}",
            failures[1].message
        );
        assert!(failures[2].message.contains("callback said no"), "{}", failures[2].message);
        let dkr = [Stage::Download, Stage::Kernel, Stage::Readback];
        let specs = vec![
            TaskSpec::new(1, 1, &dkr).failing_at(1),
            TaskSpec::new(2, 1, &dkr).failing_at(1),
            TaskSpec::new(3, 1, &[Stage::Download, Stage::Kernel, Stage::Cpu]).failing_at(2),
            TaskSpec::new(4, 1, &dkr),
        ];
        check(&report, &specs, &Limits::of(&s), Clocks::SIM);
        assert_eq!(report.tasks, 4);
    });
}

// ---------------------------------------------------------------------------------------
// Guards wait for tasks
// ---------------------------------------------------------------------------------------

/// `HostBuffer::read` must wait while an in-flight task will still write the range: a
/// task holds its readback region from submit until it ends. Task 1 is held at a gate
/// (its first command), then fills the device buffer with 7s and reads them back. The
/// reader thread, started after the submit, must see the 7s and the gate opened.
#[test]
fn host_read_waits_for_an_in_flight_readback() {
    with_timeout(DEADLINE_S, || {
        let s = sched(1, 1);
        let mut host = s.alloc_host::<u32>(1024).unwrap();
        host.write().fill(1);
        let d = s.alloc::<u32>(512).unwrap();
        let (started_tx, started_rx) = mpsc::channel();
        let (open, wait) = gate();
        let d2 = d.clone();
        s.task(1, 512)
            .callback(Resource::Cpu, move |info| {
                started_tx.send(()).map_err(|e| e.to_string())?;
                wait(info)
            })
            .gpu_callback(move |call| gpu_fill(call, &d2, 512, 7))
            .readback(&host, 0..512, &d, 0)
            .submit()
            .unwrap();
        started_rx.recv_timeout(Duration::from_secs(20)).expect("task 1 started");
        let opened = AtomicBool::new(false);
        std::thread::scope(|sc| {
            let reader = sc.spawn(|| {
                let g = host.read();
                let was_open = opened.load(Ordering::SeqCst);
                (was_open, g[..512].iter().all(|&x| x == 7), g[512..].iter().all(|&x| x == 1))
            });
            // The untouched half can be read while the task is in flight (it would
            // hang here, and hit the deadline, if guards waited for unrelated regions).
            assert!(host.read_range(512..).unwrap().iter().all(|&x| x == 1));
            // Give the reader time to reach `read` (no timing is asserted: if `read`
            // did not wait, the reader would finish before `opened` is set).
            std::thread::sleep(Duration::from_millis(100));
            assert!(!reader.is_finished(), "HostBuffer::read returned while a task was to write the range");
            opened.store(true, Ordering::SeqCst);
            open.send(()).unwrap();
            let (was_open, sevens, ones) = reader.join().unwrap();
            assert!(was_open, "HostBuffer::read returned before the writing task ended");
            assert!(sevens, "the reader saw the range before the readback wrote it");
            assert!(ones);
        });
        s.synchronize().unwrap();
    });
}

/// `HostBuffer::write` waits for an in-flight task that reads the range (a download).
#[test]
fn host_write_waits_for_an_in_flight_download() {
    with_timeout(DEADLINE_S, || {
        let s = sched(1, 1);
        let mut host = s.alloc_host::<u32>(256).unwrap();
        let mut out = s.alloc_host::<u32>(256).unwrap();
        host.write().fill(3);
        out.write().fill(0);
        let d = s.alloc::<u32>(256).unwrap();
        let (started_tx, started_rx) = mpsc::channel();
        let (open, wait) = gate();
        s.task(1, 256)
            .callback(Resource::Cpu, move |info| {
                started_tx.send(()).map_err(|e| e.to_string())?;
                wait(info)
            })
            .download(&d, 0, &host, ..)
            .readback(&out, .., &d, 0)
            .submit()
            .unwrap();
        started_rx.recv_timeout(Duration::from_secs(20)).expect("task 1 started");
        let opened = AtomicBool::new(false);
        std::thread::scope(|sc| {
            let writer = sc.spawn(|| {
                let mut g = host.write();
                let was_open = opened.load(Ordering::SeqCst);
                g.fill(9);
                was_open
            });
            std::thread::sleep(Duration::from_millis(100));
            assert!(!writer.is_finished(), "HostBuffer::write returned while a task was to read the range");
            opened.store(true, Ordering::SeqCst);
            open.send(()).unwrap();
            assert!(writer.join().unwrap(), "HostBuffer::write returned before the reading task ended");
        });
        s.synchronize().unwrap();
        assert!(out.read().iter().all(|&x| x == 3), "the download saw the write made after it");
        assert!(host.read().iter().all(|&x| x == 9));
    });
}
