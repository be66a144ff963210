//! Builder: bad settings are `InvalidConfig` or `NoSuchGpu`, named.

use super::*;

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
    // All of them: the profile's two.
    let s = Scheduler::builder().backend(two.clone()).all_gpus().build().unwrap();
    assert_eq!(s.gpu_info().iter().map(|g| g.ordinal).collect::<Vec<_>>(), vec![0, 1]);
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
        let out = in_child(module_path!(), "a_huge_gpu_count_is_no_such_gpu", &[]);
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

/// The knobs of the automatic choice (the hardware-aware defaults): each value out of range, and the
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
