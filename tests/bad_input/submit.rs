//! Submit: empty tasks, ids, host regions, shutdown.

use super::*;

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
        let e = s.task(2, 1).readback(&host, 25..40, &dev, 0).refuse_conflicts().submit().unwrap_err();
        let text = e.to_string();
        match e {
            Error::HostConflict { task, buffer, region, holder } => {
                assert_eq!((task, buffer), (TaskId(2), host.id()));
                assert_eq!(
                    (region.start, region.end(), region.height),
                    (100, 160, 1),
                    "bytes of elements 25..40: {region}"
                );
                assert_eq!(holder, ConflictHolder::Task(TaskId(1)));
                assert!(text.contains("#2") && text.contains("#1"), "{text}");
                // One unit, said once: the region names its bytes.
                let head = format!("task #2: host buffer {}, bytes 100..160, conflicts with", host.id());
                assert!(text.starts_with(&head), "{text}");
            }
            other => panic!("expected HostConflict, got {other:?}"),
        }
        let e = s.task(3, 1).callback_writing(&host, 0..11, |_, _| Ok(())).refuse_conflicts().submit().unwrap_err();
        assert!(matches!(e, Error::HostConflict { task: TaskId(3), .. }), "{e:?}");
        let e = s.task(4, 1).download(&dev, 0, &host, 29..31).refuse_conflicts().submit().unwrap_err();
        assert!(matches!(e, Error::HostConflict { task: TaskId(4), .. }), "{e:?}");
        // A refused task leaves no claim behind: its other region is free.
        let e = s
            .task(5, 1)
            .readback(&host, 60..70, &dev, 0)
            .readback(&host, 20..21, &dev, 0)
            .refuse_conflicts()
            .submit()
            .unwrap_err();
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
        let e = s.task(2, 1).readback_2d(&host, &dev, block(8)).refuse_conflicts().submit().unwrap_err();
        match e {
            Error::HostConflict { task, region, holder, .. } => {
                assert_eq!(task, TaskId(2));
                assert!(region.height > 1 && region.pitch == 256, "{region}");
                assert!(region.to_string().contains("rows") && region.to_string().contains("pitch 256"), "{region}");
                assert_eq!(holder, ConflictHolder::Task(TaskId(1)));
            }
            other => panic!("expected HostConflict, got {other:?}"),
        }
        // Columns 16..32 interleave with task 1's rows without sharing a byte. Held
        // behind task 1 (whose gate is shut), so it has not ended when task 4 comes:
        // its claims, dormant until then, are what task 4 meets.
        s.task(3, 1).after(TaskId(1)).readback_2d(&host, &dev, block(16)).submit().unwrap();
        // Reading one element of row 5 that task 3 writes conflicts; one it does not, not.
        let e = s
            .task(4, 1)
            .download(&dev, 0, &host, 5 * cols + 20..5 * cols + 21)
            .refuse_conflicts()
            .submit()
            .unwrap_err();
        assert!(
            matches!(e, Error::HostConflict { task: TaskId(4), holder: ConflictHolder::Task(TaskId(3)), .. }),
            "{e:?}"
        );
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
                assert_eq!(holder, ConflictHolder::ReadGuard);
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

/// `after` names only tasks submitted earlier in this batch: an id never submitted, one
/// of a batch `synchronize` closed, or a refused task's is `UnknownDependency`; the task's
/// own id is `DependencyCycle`. The refused task keeps no id and no claim.
#[test]
fn a_dependency_on_an_unknown_task_or_itself_is_refused() {
    with_timeout(DEADLINE_S, || {
        let s = sched(1, 2);
        let host = s.alloc_host::<u32>(64).unwrap();
        let e = s.task(2, 1).after(TaskId(1)).callback_writing(&host, 0..8, |_, _| Ok(())).submit().unwrap_err();
        assert!(matches!(e, Error::UnknownDependency { task: TaskId(2), dependency: TaskId(1) }), "{e:?}");
        let text = e.to_string();
        assert!(text.contains("#2") && text.contains("#1") && text.contains("not submitted"), "{text}");
        let e = s.task(3, 1).after_all([TaskId(3)]).callback_writing(&host, 0..8, |_, _| Ok(())).submit().unwrap_err();
        assert!(matches!(e, Error::DependencyCycle { task: TaskId(3) }), "{e:?}");
        assert!(e.to_string().contains("#3") && e.to_string().contains("cycle"), "{e}");
        // Neither left an id or a claim: both submit now, and a task after an ended one runs.
        s.task(2, 1).callback_writing(&host, 0..8, |_, _| Ok(())).submit().unwrap();
        s.task(3, 1).after(TaskId(2)).callback_writing(&host, 0..8, |_, _| Ok(())).submit().unwrap();
        assert_eq!(s.synchronize().unwrap().tasks, 2);
        // A new batch: task 2 of the last one is unknown now.
        let e = s.task(4, 1).after(TaskId(2)).callback(Resource::Cpu, |_| Ok(())).submit().unwrap_err();
        assert!(matches!(e, Error::UnknownDependency { task: TaskId(4), dependency: TaskId(2) }), "{e:?}");
        // A task refused for a conflict is unknown to later ones.
        let guard = host.read_range(0..8).unwrap();
        let e = s.task(5, 1).callback_writing(&host, 0..8, |_, _| Ok(())).submit().unwrap_err();
        assert!(matches!(e, Error::HostConflict { task: TaskId(5), .. }), "{e:?}");
        drop(guard);
        let e = s.task(6, 1).after(TaskId(5)).callback(Resource::Cpu, |_| Ok(())).submit().unwrap_err();
        assert!(matches!(e, Error::UnknownDependency { task: TaskId(6), dependency: TaskId(5) }), "{e:?}");
        assert!(s.synchronize().is_ok());
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
