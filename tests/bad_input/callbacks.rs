//! Callbacks: failures stay in their task.

use super::*;

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
