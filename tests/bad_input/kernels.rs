//! Kernels: registrations the sim backend cannot run, and costs past what it counts.

use super::*;

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
