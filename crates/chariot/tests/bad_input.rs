//! Bad input on the sim backend: every mistake gets the right `chariot::Error` variant,
//! with a message naming the offending value, and failures stay confined to their task.
//! Also the host-buffer guards: a read waits for an in-flight task writing its range.
//!
//! The "Bad input" table of `docs/bad-input.md` lists every public entry point and bad
//! value with the test here that shows what it gets. Tests of inputs that once hung, aborted or
//! panicked run under a deadline or in a child process, so that a regression is
//! reported as a failure and the suite goes on. Tests that need a CUDA GPU are ignored
//! here and run on the GPU machine with `--include-ignored`.
//!
//! The tests follow the order of that table, one section per group of entry points:
//! builder, backends and profiles, allocation, kernels, commands, submit, callbacks,
//! guards, queries, FFT, baselines, bounds, plots and the tools' command lines.

mod common;

use chariot::{
    Arg, Backend, Copy2d, Error, HardwareBound, Kernel, LinkRates, LowerBound, Param, Resource, Scheduler, SimFaults,
    SimProfile, Stage, TaskId, TaskWork,
};
use common::*;
use std::ops::Bound;
use std::process::{Command, Output};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

const DEADLINE_S: u64 = 60;

/// Deadline for tests of inputs that once hung: short, so a regression fails fast.
const HANG_S: u64 = 20;

/// Set in a child process run by [`in_child`]: the test body runs there.
const CHILD: &str = "CHARIOT_BAD_INPUT_CHILD";

fn sim() -> Backend {
    Backend::SimWith(SimProfile::instant().with_gpus(8))
}

fn sched(gpus: usize, streams: usize) -> Scheduler {
    Scheduler::builder().backend(sim()).gpus(gpus).streams(streams).build().unwrap()
}

/// A sim backend whose GPUs have `bytes` of memory each.
fn sim_with_memory(gpus: usize, bytes: u64) -> Backend {
    let mut p = SimProfile::instant().with_gpus(gpus);
    p.memory_bytes = bytes;
    Backend::SimWith(p)
}

fn is_child() -> bool {
    std::env::var_os(CHILD).is_some()
}

/// Runs test `name` of this binary again in a child process, with `env` set, for
/// behaviour that can kill a process (an abort, a driver library) or needs its own
/// environment from the start (`LD_LIBRARY_PATH`).
fn in_child(name: &str, env: &[(&str, &std::ffi::OsStr)]) -> Output {
    let exe = std::env::current_exe().expect("the test binary's path");
    Command::new(exe)
        .args([name, "--exact", "--include-ignored", "--nocapture", "--test-threads=1"])
        .env(CHILD, "1")
        .env_remove("CHARIOT_BACKEND")
        .envs(env.iter().copied())
        .output()
        .expect("running the test binary again")
}

/// Asserts that the child run of a test passed, showing its output if not.
fn assert_child_passed(out: &Output, what: &str) {
    assert!(
        out.status.success(),
        "{what}: the child process ended with {:?}\n--- stdout\n{}\n--- stderr\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
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
fn a_sim_profile_without_gpus_is_no_such_gpu() {
    let none = Backend::SimWith(SimProfile::instant().with_gpus(0));
    let e = Scheduler::builder().backend(none).build().unwrap_err();
    assert!(matches!(e, Error::NoSuchGpu { ordinal: 0, available: 0, backend: "sim" }), "{e:?}");
    assert!(e.to_string().contains("0 GPU(s)"), "{e}");
}

/// On a CUDA machine, an ordinal past the last device.
#[test]
#[ignore = "needs a CUDA GPU"]
fn cuda_ordinals_that_do_not_exist_are_no_such_gpu() {
    let s = Scheduler::builder().backend(Backend::Cuda).build().unwrap();
    let n = s.gpu_count();
    drop(s);
    let e = Scheduler::builder().backend(Backend::Cuda).gpu_list([0, n + 3]).build().unwrap_err();
    assert!(matches!(e, Error::NoSuchGpu { backend: "cuda", .. }), "{e:?}");
    assert!(e.to_string().contains(&format!("GPU {}", n + 3)), "{e}");
}

/// `gpus(n)` with a huge `n` is a count the backend cannot have.
#[test]
fn a_huge_gpu_count_is_no_such_gpu() {
    if !is_child() {
        // The abort would take the whole test binary with it: the body runs in a child.
        let out = in_child("a_huge_gpu_count_is_no_such_gpu", &[]);
        return assert_child_passed(&out, "gpus(huge)");
    }
    for n in [usize::MAX, 1 << 40] {
        let e = Scheduler::builder().backend(sim()).gpus(n).build().unwrap_err();
        assert!(matches!(e, Error::NoSuchGpu { ordinal: 8, available: 8, backend: "sim" }), "gpus({n}): {e:?}");
    }
}

#[test]
fn stage_depth_zero_is_invalid_config() {
    let e = Scheduler::builder().backend(sim()).stage_depth(0).build().unwrap_err();
    assert_invalid_config(e, "stage_depth", "0");
    let e = Scheduler::builder().backend(sim()).stage_depth(17).build().unwrap_err();
    assert_invalid_config(e, "stage_depth", "17");
}

/// The knobs of the automatic choice (issue 14): each value out of range, and the
/// combinations that contradict each other, are `InvalidConfig` naming the knob.
#[test]
fn bad_kernel_and_adaptation_settings_are_invalid_config() {
    for k in [0usize, 65, usize::MAX] {
        let e = Scheduler::builder().backend(sim()).kernel_concurrency(k).build().unwrap_err();
        assert_invalid_config(e, "kernel_concurrency", &k.to_string());
    }
    for f in [0.0f64, -1.0, 64.5, f64::NAN, f64::INFINITY] {
        let e = Scheduler::builder().backend(sim()).kernel_fills(f).build().unwrap_err();
        assert_invalid_config(e, "kernel_fills", &format!("{f:?}"));
    }
    // Counted and by fill at once; by fill beside the paper's thresholds.
    let e = Scheduler::builder().backend(sim()).kernel_concurrency(2).kernel_fills(2.0).build().unwrap_err();
    assert_invalid_config(e, "kernel_fills", "2.0");
    let e = Scheduler::builder().backend(sim()).paper_thresholds().kernel_fills(2.0).build().unwrap_err();
    assert_invalid_config(e, "kernel_fills", "2.0");
    // Adaptation asked for over thresholds set by hand, which it would not move.
    for b in [
        Scheduler::builder().backend(sim()).paper_thresholds(),
        Scheduler::builder().backend(sim()).local_thresholds([1, 1, 1, 1]),
        Scheduler::builder().backend(sim()).global_thresholds([1, 1, 1, 1]),
    ] {
        let e = b.adapt(true).build().unwrap_err();
        assert_invalid_config(e, "adapt", "true");
    }
    // Turned off, or beside knobs it leaves alone, it is fine.
    assert!(Scheduler::builder().backend(sim()).paper_thresholds().adapt(false).build().is_ok());
    let s = Scheduler::builder().backend(sim()).kernel_concurrency(3).adapt(true).build().unwrap();
    assert_eq!((s.thresholds().local[2], s.tuning().adaptive[2]), (3, false));
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

/// G_1 bounds the executioner threads; a G_1 larger than the D·S tasks that can hold a
/// stream slot at once cannot be used: the threads are capped at D·S, and the
/// thresholds report the G_1 given (it behaves the same).
#[test]
fn a_huge_cpu_threshold_is_capped() {
    let s = Scheduler::builder().backend(sim()).gpus(1).streams(2).global_thresholds([usize::MAX, 1, 1, 1]).build();
    let s = s.unwrap();
    assert_eq!(s.thresholds().global[0], usize::MAX);
    s.task(1, 1).callback(Resource::Cpu, |_| Ok(())).submit().unwrap();
    assert_eq!(s.synchronize().unwrap().tasks, 1);
}

// ---------------------------------------------------------------------------------------
// Backends and profiles
// ---------------------------------------------------------------------------------------

#[test]
fn every_invalid_sim_profile_field_is_named() {
    let base = SimProfile::instant();
    let cases: Vec<(&str, SimProfile)> = vec![
        ("h2d_bytes_per_s", SimProfile { h2d_bytes_per_s: 0.0, ..base.clone() }),
        ("d2h_bytes_per_s", SimProfile { d2h_bytes_per_s: f64::NAN, ..base.clone() }),
        ("duplex_bytes_per_s", SimProfile { duplex_bytes_per_s: f64::INFINITY, ..base.clone() }),
        ("bus_bytes_per_s", SimProfile { bus_bytes_per_s: -1.0, ..base.clone() }),
        ("bus_duplex_bytes_per_s", SimProfile { bus_duplex_bytes_per_s: 0.0, ..base.clone() }),
        ("time_scale", base.clone().with_time_scale(f64::NAN)),
        ("time_scale", base.clone().with_time_scale(f64::INFINITY)),
        ("copy_engines", base.clone().with_copy_engines(0)),
        ("buses", base.clone().with_buses(0)),
        ("sm_count", SimProfile { sm_count: 0, ..base.clone() }),
    ];
    for (field, profile) in cases {
        let e = Scheduler::builder().backend(Backend::SimWith(profile)).build().unwrap_err();
        let text = e.to_string();
        assert!(matches!(e, Error::InvalidConfig { name: "backend", .. }), "{field}: {e:?}");
        assert!(text.contains(field), "{field}: {text}");
    }
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

/// Modeled time is real time times `time_scale`; a scale outside 0..=1e6
/// (`SimProfile::MAX_TIME_SCALE`) is refused when the profile is checked.
#[test]
fn an_unrepresentable_sim_time_scale_is_invalid_config() {
    with_timeout(HANG_S, || {
        let p = SimProfile::instant().with_time_scale(1e30);
        match Scheduler::builder().backend(Backend::SimWith(p)).build() {
            Err(e) => {
                let text = e.to_string();
                assert!(matches!(e, Error::InvalidConfig { name: "backend", .. }), "{e:?}");
                assert!(text.contains("time_scale"), "{text}");
            }
            Ok(s) => {
                let host = s.alloc_host::<u32>(16).unwrap();
                let dev = s.alloc::<u32>(16).unwrap();
                s.task(1, 1).download(&dev, 0, &host, ..).submit().unwrap();
                panic!("time_scale 1e30 was accepted; synchronize gives {:?}", s.synchronize().map(|r| r.tasks));
            }
        }
    });
}

#[test]
fn invalid_sim_faults_are_invalid_config() {
    for k in [f64::NAN, -1.0, 0.5, f64::INFINITY] {
        let p = SimProfile::instant().with_faults(SimFaults::default().slow_gpu(0, k));
        let e = Scheduler::builder().backend(Backend::SimWith(p)).build().unwrap_err();
        let text = e.to_string();
        assert!(matches!(e, Error::InvalidConfig { name: "backend", .. }), "slow_gpu(0, {k}): {e:?}");
        assert!(text.contains(&format!("slow_gpu(0, {k})")) && text.contains("at least 1"), "{text}");
    }
}

/// A GPU death later than the clock can count is a death that never comes.
#[test]
fn a_sim_death_past_the_clock_never_comes() {
    let p = SimProfile::h100().with_faults(SimFaults::default().gpu_dies_at(0, Duration::MAX));
    match Scheduler::builder().backend(Backend::SimWith(p)).build() {
        Ok(s) => {
            s.task(1, 1).callback(Resource::Cpu, |_| Ok(())).submit().unwrap();
            assert_eq!(s.synchronize().unwrap().tasks, 1);
            assert_eq!(s.live_gpus(), vec![0]);
        }
        Err(e) => assert!(matches!(e, Error::InvalidConfig { name: "backend", .. }), "{e:?}"),
    }
}

/// NVTX ranges on a machine without the NVTX library: a clear error at `build` naming
/// what was tried (the GPU machines here have none); ignored on the simulator.
#[test]
#[ignore = "needs a CUDA GPU"]
fn cuda_nvtx_without_its_library_is_invalid_config() {
    if !is_child() {
        let out = in_child(
            "cuda_nvtx_without_its_library_is_invalid_config",
            &[("CHARIOT_NVTX_LIB", std::ffi::OsStr::new("/nonexistent/libnvToolsExt.so"))],
        );
        return assert_child_passed(&out, "nvtx without its library");
    }
    assert!(Scheduler::builder().backend(sim()).nvtx(true).build().is_ok(), "ignored on sim");
    match Scheduler::builder().backend(Backend::Cuda).nvtx(true).build() {
        // A machine with NVTX installed loads it from the system.
        Ok(s) => assert_eq!(s.backend_name(), "cuda"),
        Err(e) => {
            let text = e.to_string();
            assert!(matches!(e, Error::InvalidConfig { name: "nvtx", .. }), "{e:?}");
            assert!(text.contains("/nonexistent/libnvToolsExt.so"), "{text}");
        }
    }
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

/// A library found under the driver's name that is not the CUDA driver (here: the C
/// library, reached through a `libcuda.so` link first on `LD_LIBRARY_PATH`). cudarc
/// has no variable naming the library's path, so the dynamic loader's path is the way
/// to point it at a wrong one. CUDA must be unavailable, and `Auto` must fall back.
#[cfg(target_os = "linux")]
#[test]
fn a_wrong_cuda_driver_library_is_cuda_unavailable() {
    let name = "a_wrong_cuda_driver_library_is_cuda_unavailable";
    if !is_child() {
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
        let libc = maps
            .lines()
            .filter_map(|l| l.split_whitespace().nth(5))
            .find(|p| p.contains("/libc.so") || p.contains("/libc-"))
            .expect("the C library is mapped");
        let dir = std::env::temp_dir().join(format!("chariot-wrong-driver-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let link = dir.join("libcuda.so");
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(libc, &link).unwrap();
        let out = in_child(name, &[("LD_LIBRARY_PATH", dir.as_os_str())]);
        std::fs::remove_dir_all(&dir).ok();
        return assert_child_passed(&out, "a libcuda.so without cuInit");
    }
    match Scheduler::builder().backend(Backend::Cuda).build() {
        Err(Error::CudaUnavailable { reason }) => assert!(reason.contains("cuInit"), "{reason}"),
        other => panic!("expected CudaUnavailable naming cuInit, got {:?}", other.map(|s| s.backend_name())),
    }
    assert_eq!(Backend::from_name("auto", SimProfile::instant()).unwrap(), Backend::SimWith(SimProfile::instant()));
    assert_eq!(Scheduler::builder().backend(Backend::Auto).build().unwrap().backend_name(), "sim");
}

#[test]
fn an_unknown_backend_name_is_invalid_config() {
    for name in ["gpu", "CUDA", "Sim", " sim", "sim ", "", "sim-instant", "cuda\0"] {
        let e = Backend::from_name(name, SimProfile::instant()).unwrap_err();
        assert_invalid_config(e, "backend", &format!("{name:?}"));
    }
    let e = Backend::from_name("gpu", SimProfile::h100()).unwrap_err();
    assert!(e.to_string().contains("auto, cuda or sim"), "{e}");
    assert_eq!(Backend::from_name("sim", SimProfile::instant()).unwrap(), Backend::SimWith(SimProfile::instant()));
    assert_eq!(Backend::from_name("cuda", SimProfile::instant()).unwrap(), Backend::Cuda);
    // `auto` resolves now: CUDA where a driver and a device are there, else the profile.
    match Backend::from_name("auto", SimProfile::instant()).unwrap() {
        Backend::Cuda | Backend::SimWith(_) => {}
        other => panic!("auto resolved to {other:?}"),
    }
}

// ---------------------------------------------------------------------------------------
// Allocation
// ---------------------------------------------------------------------------------------

#[derive(Clone, Copy, bytemuck::Zeroable, bytemuck::Pod)]
#[repr(C, align(32))]
struct Wide([u8; 32]);

#[test]
fn alloc_of_zero_elements_is_invalid_length() {
    let s = sched(1, 1);
    let e = s.alloc::<u32>(0).unwrap_err();
    assert!(matches!(e, Error::InvalidLength { len: 0, elem_size: 4, .. }), "{e:?}");
    assert!(e.to_string().contains("length 0"), "{e}");
    let e = s.alloc_host::<f64>(0).unwrap_err();
    assert!(matches!(e, Error::InvalidLength { len: 0, elem_size: 8, .. }), "{e:?}");
}

#[test]
fn allocations_whose_size_overflows_are_invalid_length() {
    let s = sched(1, 2);
    for e in [
        s.alloc::<u64>(usize::MAX / 4).unwrap_err(),
        s.alloc_host::<u64>(usize::MAX / 4).unwrap_err(),
        s.alloc::<u8>(isize::MAX as usize + 1).unwrap_err(),
    ] {
        assert!(matches!(e, Error::InvalidLength { .. }), "{e:?}");
        assert!(e.to_string().contains("overflows"), "{e}");
    }
    let e = s.alloc_host::<u8>(isize::MAX as usize + 1).unwrap_err();
    assert!(matches!(e, Error::InvalidLength { elem_size: 1, .. }), "{e:?}");
    // Element types: non-empty and at most 16-byte aligned.
    let e = s.alloc_host::<()>(4).unwrap_err();
    assert!(matches!(e, Error::InvalidLength { elem_size: 0, .. }), "{e:?}");
    assert!(e.to_string().contains("non-empty"), "{e}");
    let e = s.alloc::<Wide>(4).unwrap_err();
    assert!(matches!(e, Error::InvalidLength { elem_size: 32, .. }), "{e:?}");
    assert!(e.to_string().contains("16-byte aligned"), "{e}");
    // Nothing was allocated on the GPU.
    assert_eq!(s.device_memory_in_use(0), Some(0));
}

#[test]
fn a_host_allocation_too_large_for_memory_is_out_of_memory() {
    let s = sched(1, 1);
    // 4 EiB: a valid size (under isize::MAX) that no machine can give.
    let e = s.alloc_host::<u8>(1 << 62).unwrap_err();
    let text = e.to_string();
    match e {
        Error::OutOfMemory { what, bytes, message } => {
            assert_eq!(bytes, 1 << 62);
            assert!(what.contains("host memory"), "{what}");
            assert!(!message.is_empty());
            assert!(text.contains(&(1usize << 62).to_string()), "{text}");
        }
        other => panic!("expected OutOfMemory, got {other:?}"),
    }
}

/// "Too many tasks for memory": device memory goes to virtual buffers, one physical copy
/// per GPU and stream slot, all allocated by `alloc`; tasks hold none of their own. So a
/// buffer that does not fit D·S times is refused at `alloc` with nothing left behind.
#[test]
fn device_memory_for_every_stream_is_allocated_up_front() {
    let s = Scheduler::builder().backend(sim_with_memory(2, 1 << 20)).gpus(2).streams(4).build().unwrap();
    let quarter = s.alloc::<u8>(256 << 10).unwrap();
    assert_eq!((s.device_memory_in_use(0), s.device_memory_in_use(1)), (Some(1 << 20), Some(1 << 20)));
    let e = s.alloc::<u8>(1).unwrap_err();
    let text = e.to_string();
    match e {
        Error::OutOfMemory { what, bytes, message } => {
            assert_eq!(bytes, 1);
            assert!(what.contains("GPU 0"), "{what}");
            assert!(message.contains("1048576 of 1048576"), "{message}");
            assert!(text.contains("device memory"), "{text}");
        }
        other => panic!("expected OutOfMemory, got {other:?}"),
    }
    drop(quarter);
    s.synchronize().unwrap();
    assert_eq!(s.device_memory_in_use(0), Some(0), "a dropped buffer's memory returns at synchronize");
    // 300 KiB fits three times in 1 MiB, not four: the fourth copy fails and the three
    // that were made are given back.
    let e = s.alloc::<u8>(300 << 10).unwrap_err();
    assert!(matches!(e, Error::OutOfMemory { bytes, .. } if bytes == 300 << 10), "{e:?}");
    assert_eq!((s.device_memory_in_use(0), s.device_memory_in_use(1)), (Some(0), Some(0)));
    // With fewer streams the same buffer fits.
    let two = Scheduler::builder().backend(sim_with_memory(1, 1 << 20)).streams(2).build().unwrap();
    two.alloc::<u8>(300 << 10).unwrap();
    assert_eq!(two.device_memory_in_use(0), Some(600 << 10));
}

/// Thousands of tasks through one small buffer on a GPU of 64 KiB: every task runs and
/// the memory in use stays at the buffer's D·S copies.
#[test]
fn many_tasks_need_no_more_device_memory() {
    with_timeout(DEADLINE_S, || {
        let (n, tasks) = (256usize, 2000usize);
        let s = Scheduler::builder().backend(sim_with_memory(2, 64 << 10)).gpus(2).streams(4).build().unwrap();
        let mut host = s.alloc_host::<u32>(n * tasks).unwrap();
        let out = s.alloc_host::<u32>(n * tasks).unwrap();
        host.write().iter_mut().enumerate().for_each(|(i, x)| *x = i as u32);
        let d = s.alloc::<u32>(n).unwrap();
        let held = 4 * (n as u64 * 4);
        for i in 0..tasks {
            let r = i * n..(i + 1) * n;
            s.task(i as u64, n as u64).download(&d, 0, &host, r.clone()).readback(&out, r, &d, 0).submit().unwrap();
            if i % 500 == 0 {
                assert_eq!((s.device_memory_in_use(0), s.device_memory_in_use(1)), (Some(held), Some(held)));
            }
        }
        let report = s.synchronize().unwrap();
        assert_eq!(report.tasks, tasks);
        assert!(out.read().iter().enumerate().all(|(i, &x)| x == i as u32));
        assert_eq!((s.device_memory_in_use(0), s.device_memory_in_use(1)), (Some(held), Some(held)));
    });
}

/// A user who allocates 200 KiB and is told "819200 of 1048576 bytes in use" cannot see
/// why: the message must say that the buffer needs a copy per GPU and stream.
#[test]
fn out_of_memory_names_the_copies_per_stream() {
    let s = Scheduler::builder().backend(sim_with_memory(1, 1 << 20)).streams(8).build().unwrap();
    let e = s.alloc::<u8>(200 << 10).unwrap_err();
    let text = e.to_string();
    assert!(matches!(e, Error::OutOfMemory { .. }), "{e:?}");
    assert!(text.contains("1638400") && text.contains("stream"), "{text}");
}

/// The sim backend's memory is real memory: a simulated GPU larger than the machine
/// must refuse what the machine cannot give, as `alloc_host` does.
#[test]
fn a_simulated_allocation_beyond_host_memory_is_out_of_memory() {
    if !is_child() {
        let out = in_child("a_simulated_allocation_beyond_host_memory_is_out_of_memory", &[]);
        return assert_child_passed(&out, "a 2 EiB simulated allocation");
    }
    let s = Scheduler::builder().backend(sim_with_memory(1, u64::MAX)).streams(1).build().unwrap();
    let e = s.alloc::<u8>(1 << 61).unwrap_err();
    assert!(matches!(e, Error::OutOfMemory { bytes, .. } if bytes == 1 << 61), "{e:?}");
    assert_eq!(s.device_memory_in_use(0), Some(0));
}

// ---------------------------------------------------------------------------------------
// Kernels
// ---------------------------------------------------------------------------------------

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

#[test]
fn a_sim_sm_share_outside_zero_to_one_is_kernel_invalid() {
    let s = Scheduler::builder().backend(sim()).build().unwrap();
    for share in [0.0f64, -0.5, 1.01, f64::NAN, f64::INFINITY] {
        let k = Kernel::new("k", "").cpu_twin(|_| Ok(())).sim_sm_share(share);
        let e = s.register_kernel(k).unwrap_err();
        assert!(matches!(&e, Error::KernelInvalid { kernel, .. } if kernel == "k"), "{share}: {e:?}");
        assert!(e.to_string().contains("sim_sm_share") && e.to_string().contains("(0, 1]"), "{e}");
    }
    assert!(s.register_kernel(Kernel::new("k", "").cpu_twin(|_| Ok(())).sim_sm_share(1.0)).is_ok());
}

/// A kernel's modeled time on the sim backend is the user's `sim_cost`; one too long
/// for a `Duration` sum must saturate (here with no modeled time at all: the instant
/// profile) or fail its task, not stop the simulated GPU.
#[test]
fn a_sim_cost_past_duration_max_does_not_stop_the_gpu() {
    with_timeout(HANG_S, || {
        let s = sched(1, 1);
        let k =
            s.register_kernel(Kernel::new("forever", "").cpu_twin(|_| Ok(())).sim_cost(|_, _| Duration::MAX)).unwrap();
        s.task(1, 1).launch(&k, 1, 1, 0, &[]).submit().unwrap();
        match s.synchronize() {
            Ok(r) => assert_eq!(r.tasks, 1),
            Err(Error::TasksFailed { failures, .. }) => assert_eq!(failures[0].task, TaskId(1)),
            Err(e) => panic!("{e:?}"),
        }
    });
}

// ---------------------------------------------------------------------------------------
// Commands
// ---------------------------------------------------------------------------------------

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
fn odd_ranges_and_offsets_are_invalid_command() {
    let s = sched(1, 1);
    let host = s.alloc_host::<u32>(100).unwrap();
    let dev = s.alloc::<u32>(100).unwrap();
    #[allow(clippy::reversed_empty_ranges)]
    let e = s.task(1, 1).download(&dev, 0, &host, 10..5).submit().unwrap_err();
    assert_invalid_command(e, 1, 0, Stage::Download, &["10..5", "0..100"]);
    let e = s.task(2, 1).readback(&host, ..=usize::MAX, &dev, 0).submit().unwrap_err();
    assert_invalid_command(e, 2, 0, Stage::Readback, &["overflows"]);
    let e =
        s.task(3, 1).download(&dev, 0, &host, (Bound::Excluded(usize::MAX), Bound::Unbounded)).submit().unwrap_err();
    assert_invalid_command(e, 3, 0, Stage::Download, &["overflows"]);
    // An empty range is an empty copy.
    let e = s.task(4, 1).download(&dev, 0, &host, 5..5).submit().unwrap_err();
    assert_invalid_command(e, 4, 0, Stage::Download, &["empty copy", "width 0"]);
    // A device offset whose end overflows.
    let e = s.task(5, 1).readback(&host, 0..10, &dev, usize::MAX).submit().unwrap_err();
    assert_invalid_command(e, 5, 0, Stage::Readback, &["overflow"]);
    let e = s.task(6, 1).readback(&host, 0..10, &dev, 91).submit().unwrap_err();
    assert_invalid_command(e, 6, 0, Stage::Readback, &["101", "100"]);
    // A 2-D copy of no rows.
    let none = Copy2d { host_offset: 0, host_pitch: 10, dev_offset: 0, dev_pitch: 10, width: 10, height: 0 };
    let e = s.task(7, 1).readback_2d(&host, &dev, none).submit().unwrap_err();
    assert_invalid_command(e, 7, 0, Stage::Readback, &["empty copy", "height 0"]);
    // Nothing was submitted.
    assert_eq!(s.synchronize().unwrap().tasks, 0);
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

/// In a one-row copy the pitch is never used, but its size in bytes is computed.
#[test]
fn a_2d_pitch_whose_bytes_overflow_is_invalid_command() {
    let s = sched(1, 1);
    let mut host = s.alloc_host::<u32>(100).unwrap();
    host.write().iter_mut().enumerate().for_each(|(i, x)| *x = i as u32);
    let dev = s.alloc::<u32>(100).unwrap();
    let out = s.alloc_host::<u32>(100).unwrap();
    let row =
        Copy2d { host_offset: 0, host_pitch: usize::MAX, dev_offset: 0, dev_pitch: usize::MAX, width: 10, height: 1 };
    let e = s.task(1, 1).download_2d(&dev, &host, row).readback(&out, 0..10, &dev, 0).submit().unwrap_err();
    assert_invalid_command(e, 1, 0, Stage::Download, &["pitch", &usize::MAX.to_string()]);
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
fn a_block_whose_thread_count_overflows_is_invalid_command() {
    let s = sched(1, 1);
    let k = s.register_kernel(Kernel::new("none", "").cpu_twin(|_| Ok(()))).unwrap();
    let e = s.task(1, 1).launch(&k, 1, (u32::MAX, u32::MAX, u32::MAX), 0, &[]).submit().unwrap_err();
    assert_invalid_command(e, 1, 0, Stage::Kernel, &["1024"]);
}

/// CUDA refuses a grid y or z above 65535, a grid x above 2^31 − 1, and a block z above
/// 64 (every GPU since compute capability 3.0). Checked when the command is added, a
/// launch fails the same way on both backends instead of failing on CUDA at dispatch.
#[test]
fn a_launch_beyond_cuda_limits_is_invalid_command() {
    let s = sched(1, 1);
    let k = s.register_kernel(Kernel::new("none", "").cpu_twin(|_| Ok(()))).unwrap();
    let e = s.task(1, 1).launch(&k, (1, 65536), 32, 0, &[]).submit().unwrap_err();
    assert_invalid_command(e, 1, 0, Stage::Kernel, &["65536", "65535"]);
    let e = s.task(2, 1).launch(&k, 1u32 << 31, 32, 0, &[]).submit().unwrap_err();
    assert_invalid_command(e, 2, 0, Stage::Kernel, &["2147483648"]);
    let e = s.task(3, 1).launch(&k, 1, (1, 1, 65), 0, &[]).submit().unwrap_err();
    assert_invalid_command(e, 3, 0, Stage::Kernel, &["65", "64"]);
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

// ---------------------------------------------------------------------------------------
// Submit: empty tasks, ids, host regions, shutdown
// ---------------------------------------------------------------------------------------

#[test]
fn an_empty_task_is_empty_task() {
    let s = sched(1, 1);
    let e = s.task(77, 1).submit().unwrap_err();
    assert!(matches!(e, Error::EmptyTask { task: TaskId(77) }), "{e:?}");
    assert!(e.to_string().contains("#77"), "{e}");
}

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

/// An id stays taken until `synchronize`, even after its task ended: the report keys
/// tasks by id, so a second task with it is `DuplicateTask` ("ids must be unique until
/// synchronize"), and after `synchronize` the id is free again.
#[test]
fn a_task_id_reused_in_one_batch_is_duplicate_task() {
    with_timeout(DEADLINE_S, || {
        let s = sched(1, 1);
        let host = s.alloc_host::<u32>(16).unwrap();
        let dev = s.alloc::<u32>(16).unwrap();
        s.task(1, 1).readback(&host, 0..8, &dev, 0).submit().unwrap();
        // The read waits for task 1's readback; the pause lets it end (its id leaves
        // the in-flight set just after its claims).
        drop(host.read());
        std::thread::sleep(Duration::from_millis(100));
        let e = s.task(1, 1).readback(&host, 8..16, &dev, 0).submit().unwrap_err();
        assert!(matches!(e, Error::DuplicateTask { task: TaskId(1) }), "{e:?}");
        assert_eq!(s.synchronize().unwrap().tasks, 1, "the refused task did not run");
        s.task(1, 1).readback(&host, 8..16, &dev, 0).submit().unwrap();
        assert_eq!(s.synchronize().unwrap().tasks, 1, "the id is free after synchronize");
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

/// 2-D host regions conflict only where they share a byte: column blocks of one matrix
/// interleave row by row without conflict, overlapping blocks do not.
#[test]
fn overlapping_2d_regions_are_host_conflict() {
    with_timeout(DEADLINE_S, || {
        let s = sched(1, 4);
        let (cols, rows) = (64, 8);
        let host = s.alloc_host::<u32>(cols * rows).unwrap();
        let dev = s.alloc::<u32>(16 * rows).unwrap();
        let block = |c0: usize| Copy2d {
            host_offset: c0,
            host_pitch: cols,
            dev_offset: 0,
            dev_pitch: 16,
            width: 16,
            height: rows,
        };
        let (open, wait) = gate();
        s.task(1, 1).callback(Resource::Cpu, wait).readback_2d(&host, &dev, block(0)).submit().unwrap();
        // Columns 8..24 share columns 8..16 with task 1's block.
        let e = s.task(2, 1).readback_2d(&host, &dev, block(8)).submit().unwrap_err();
        match e {
            Error::HostConflict { task, region, holder, .. } => {
                assert_eq!(task, TaskId(2));
                assert!(region.contains("rows") && region.contains("pitch 256"), "{region}");
                assert!(holder.contains("#1"), "{holder}");
            }
            other => panic!("expected HostConflict, got {other:?}"),
        }
        // Columns 16..32 interleave with task 1's rows without sharing a byte.
        s.task(3, 1).readback_2d(&host, &dev, block(16)).submit().unwrap();
        // Reading one element of row 5 that task 3 writes conflicts; one it does not, not.
        let e = s.task(4, 1).download(&dev, 0, &host, 5 * cols + 20..5 * cols + 21).submit().unwrap_err();
        assert!(matches!(e, Error::HostConflict { task: TaskId(4), ref holder, .. } if holder.contains("#3")), "{e:?}");
        s.task(5, 1).download(&dev, 0, &host, 5 * cols + 40..5 * cols + 48).submit().unwrap();
        open.send(()).unwrap();
        assert_eq!(s.synchronize().unwrap().tasks, 3);
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
// Callbacks: failures stay in their task
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

/// A CPU twin's mistakes with its arguments fail its task with the twin's message.
#[test]
fn twin_argument_mistakes_fail_the_task() {
    with_timeout(DEADLINE_S, || {
        let s = sched(1, 2);
        let a = s.alloc::<u32>(8).unwrap();
        let b = s.alloc::<u32>(8).unwrap();
        let params = [Param::Buffer, Param::Buffer, Param::U32];
        let beyond =
            s.register_kernel(Kernel::new("beyond", "").params(params).cpu_twin(|a| a.u32(5).map(|_| ()))).unwrap();
        let kind = s
            .register_kernel(Kernel::new("kind", "").params(params).cpu_twin(|a| a.buffer::<u32>(2).map(|_| ())))
            .unwrap();
        let same = s
            .register_kernel(
                Kernel::new("same", "").params(params).cpu_twin(|a| a.in_out::<u32, u32>(0, 1).map(|_| ())),
            )
            .unwrap();
        let args = |x, y| [Arg::buffer(x), Arg::buffer(y), Arg::u32(8)];
        s.task(1, 1).launch(&beyond, 1, 8, 0, &args(&a, &b)).submit().unwrap();
        s.task(2, 1).launch(&kind, 1, 8, 0, &args(&a, &b)).submit().unwrap();
        s.task(3, 1).launch(&same, 1, 8, 0, &args(&a, &a)).submit().unwrap();
        s.task(4, 1).launch(&same, 1, 8, 0, &args(&a, &b)).submit().unwrap();
        let Err(Error::TasksFailed { mut failures, .. }) = s.synchronize() else { panic!("expected TasksFailed") };
        failures.sort_by_key(|f| f.task);
        let got: Vec<_> = failures.iter().map(|f| (f.task.0, f.command, f.stage)).collect();
        assert_eq!(got, vec![(1, 0, Stage::Kernel), (2, 0, Stage::Kernel), (3, 0, Stage::Kernel)]);
        let wanted = [("beyond", "argument 5 does not exist"), ("kind", "not a buffer"), ("same", "same buffer")];
        for (f, (kernel, text)) in failures.iter().zip(wanted) {
            assert!(f.message.contains(kernel) && f.message.contains(text), "{}", f.message);
        }
    });
}

// ---------------------------------------------------------------------------------------
// Guards, and waiting in a callback
// ---------------------------------------------------------------------------------------

#[test]
fn guard_ranges_outside_their_buffer_are_invalid_length() {
    let s = sched(1, 1);
    let mut host = s.alloc_host::<u32>(10).unwrap();
    let e = host.write_range(5..11).unwrap_err();
    assert!(matches!(e, Error::InvalidLength { len: 10, elem_size: 4, .. }), "{e:?}");
    assert!(e.to_string().contains("5..11"), "{e}");
    let e = host.read_range(5..11).unwrap_err();
    assert!(matches!(e, Error::InvalidLength { len: 10, elem_size: 4, .. }), "{e:?}");
    assert!(e.to_string().contains("5..11"), "{e}");
    let e = host.read_range(..=usize::MAX).unwrap_err();
    assert!(e.to_string().contains("overflows"), "{e}");
    #[allow(clippy::reversed_empty_ranges)]
    let e = host.write_range(7..3).unwrap_err();
    assert!(matches!(e, Error::InvalidLength { .. }), "{e:?}");
    // An empty range inside the buffer is a valid, empty guard.
    assert!(host.read_range(4..4).unwrap().is_empty());
}

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

/// A CPU callback that reads, through a guard, a range its own task writes waits for
/// its own task to end: the guard should refuse (the callback then fails its task with
/// a message naming the guard) instead of waiting forever.
#[test]
fn a_guard_in_a_callback_of_its_own_writing_task_fails_the_task() {
    with_timeout(HANG_S, || {
        let s = sched(1, 1);
        let host = s.alloc_host::<u32>(64).unwrap();
        let dev = s.alloc::<u32>(64).unwrap();
        s.task(1, 1)
            .readback(&host, .., &dev, 0)
            .callback(Resource::Cpu, move |_| {
                let sum: u32 = host.read().iter().sum();
                Err(format!("the guard was granted (sum {sum})").into())
            })
            .submit()
            .unwrap();
        let Err(Error::TasksFailed { failures, .. }) = s.synchronize() else { panic!("expected TasksFailed") };
        assert_eq!((failures[0].task, failures[0].command, failures[0].stage), (TaskId(1), 1, Stage::Cpu));
        assert!(failures[0].message.contains("guard"), "{}", failures[0].message);
    });
}

/// `synchronize` from a callback waits for the callback's own task: it should return an
/// error at once.
#[test]
fn synchronize_in_a_callback_is_an_error() {
    with_timeout(HANG_S, || {
        let s = Arc::new(sched(1, 1));
        let inner = s.clone();
        let (tx, rx) = mpsc::channel();
        s.task(1, 1)
            .callback(Resource::Cpu, move |_| {
                tx.send(inner.synchronize().map(|r| r.tasks).map_err(|e| e.to_string())).map_err(|e| e.to_string())?;
                Ok(())
            })
            .submit()
            .unwrap();
        assert_eq!(s.synchronize().unwrap().tasks, 1);
        let inner = rx.recv().unwrap();
        assert!(inner.as_ref().is_err_and(|m| m.contains("callback")), "{inner:?}");
    });
}

// ---------------------------------------------------------------------------------------
// Queries
// ---------------------------------------------------------------------------------------

#[test]
fn out_of_range_gpu_queries_are_none() {
    let s = sched(2, 1);
    assert!(s.overlap_matrix(1).is_some() && s.overlap_matrix(2).is_none());
    assert!(s.device_memory_in_use(1).is_some() && s.device_memory_in_use(2).is_none());
    assert!(s.device_memory_in_use(usize::MAX).is_none());
}

// ---------------------------------------------------------------------------------------
// FFT
// ---------------------------------------------------------------------------------------

#[test]
fn fft_shape_mistakes_fail_the_task() {
    use chariot::fft::{FftPlans, FftShape};
    use num_complex::Complex32;
    with_timeout(DEADLINE_S, || {
        let s = sched(1, 1);
        let plans = FftPlans::new(&s).unwrap();
        let info = chariot::CallInfo { task: TaskId(0), gpu: 0, stream: 0 };
        for empty in [FftShape::Rows { len: 0, batch: 4 }, FftShape::TwoD { rows: 4, cols: 0 }] {
            let e = plans.prepare(&info, empty).unwrap_err();
            assert!(e.to_string().contains("empty FFT shape"), "{e}");
        }
        let d = s.alloc::<Complex32>(32).unwrap();
        for (id, shape) in
            [(1, FftShape::Rows { len: 16, batch: 4 }), (2, FftShape::Rows { len: usize::MAX, batch: 2 })]
        {
            let (p, d2) = (plans.clone(), d.clone());
            s.task(id, 1).gpu_callback(move |call| p.forward(call, &d2, shape)).submit().unwrap();
        }
        let Err(Error::TasksFailed { mut failures, .. }) = s.synchronize() else { panic!("expected TasksFailed") };
        failures.sort_by_key(|f| f.task);
        assert_eq!(failures.len(), 2, "{failures:?}");
        assert!(failures[0].message.contains("FFT of 64 elements on a buffer of 32"), "{}", failures[0].message);
        assert!(failures[1].message.contains("on a buffer of 32"), "{}", failures[1].message);
    });
}

// ---------------------------------------------------------------------------------------
// Bounds
// ---------------------------------------------------------------------------------------

#[test]
fn bounds_of_no_work_are_zero() {
    assert_eq!(LowerBound::from_times(&[], 0, 0), LowerBound::default());
    // Zero GPUs or buses count as one.
    assert_eq!(LowerBound::from_times(&[(1, 10, 30, 10)], 0, 0), LowerBound::from_times(&[(1, 10, 30, 10)], 1, 1));
    let work = [TaskWork { up_bytes: 100, kernel_ns: 100, down_bytes: 100 }];
    for rates in [(0.0, 1.0, 1.0), (1.0, f64::NAN, 1.0), (1.0, 1.0, -2.0)] {
        let b = HardwareBound::one_gpu(&work, LinkRates { up: rates.0, down: rates.1, both: rates.2 });
        assert_eq!(b, HardwareBound::default(), "{rates:?}");
    }
    let link = LinkRates { up: 1.0, down: 1.0, both: 2.0 };
    assert_eq!(HardwareBound::one_gpu(&[], link), HardwareBound::default());
    assert_eq!(HardwareBound::multi_gpu(&[], 2, link, link), HardwareBound::default());
    let dead = LinkRates { up: 0.0, ..link };
    assert_eq!(HardwareBound::multi_gpu(&work, 0, link, dead), HardwareBound::default());
    // Zero GPUs count as one.
    assert_eq!(HardwareBound::multi_gpu(&work, 0, link, link), HardwareBound::multi_gpu(&work, 1, link, link));
}

#[test]
fn bounds_saturate_instead_of_overflowing() {
    let b = LowerBound::from_times(&[(1, u64::MAX, 1, 1), (2, 1, u64::MAX, 1)], 1, 1);
    assert_eq!((b.t1_ns, b.t2_ns, b.t_lb_ns), (u64::MAX, u64::MAX, u64::MAX));
    let huge = TaskWork { up_bytes: u64::MAX, kernel_ns: 1, down_bytes: u64::MAX };
    let link = LinkRates { up: 1.0, down: 1.0, both: 2.0 };
    assert!(HardwareBound::one_gpu(&[huge, huge], link).t_ns > 0);
    assert!(HardwareBound::multi_gpu(&[huge, huge, huge], 2, link, link.times(2.0)).t_ns > 0);
}
