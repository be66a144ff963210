//! Task graphs (issue 16) on the sim backend: dependencies named with `after` and
//! inferred from host regions (RAW, WAR, WAW) are honoured in the recorded timeline for
//! random DAGs over D ∈ {1, 2, 4}, S ∈ {1, 4} and every order, and the outputs equal a
//! CPU reference; a waiting task does not hold back ready ones; a failed task fails
//! those that run after it, transitively; a conflict is still an error where asked.

#[path = "common/mod.rs"]
mod common;

use chariot::{Arg, Backend, Error, Order, Resource, Scheduler, SimProfile, Stage, TaskId};
use common::*;
use rand::{Rng, SeedableRng};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

const DEADLINE_S: u64 = 120;
/// Elements of one task's region.
const N: usize = 256;
/// Scratch slots (written and read by CPU callbacks) and their elements.
const SLOTS: usize = 4;
const M: usize = 16;

/// H100-like engines with modeled time stretched 10x, so that commands overlap.
fn timed(gpus: usize) -> Backend {
    Backend::SimWith(SimProfile::h100().with_gpus(gpus).with_time_scale(10.0))
}

/// A writing callback that fills its region with `v`.
fn fill(v: u32) -> impl FnOnce(&mut [u32], &chariot::CallInfo) -> Result<(), chariot::BoxError> + Send + 'static {
    move |x, _| {
        x.fill(v);
        Ok(())
    }
}

/// One task of a random DAG.
struct Node {
    /// Reads this earlier task's output (an inferred RAW dependency), else its input.
    source: Option<usize>,
    /// Earlier tasks named with `after`.
    after: Vec<usize>,
    /// A scratch slot its CPU callback writes (`true`) or reads.
    scratch: Option<(usize, bool)>,
    granularity: u64,
}

fn random_dag(seed: u64, count: usize) -> Vec<Node> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    (0..count)
        .map(|i| {
            let recent = |rng: &mut rand::rngs::StdRng| rng.random_range(i.saturating_sub(8)..i);
            let source = (i > 0 && rng.random_bool(0.5)).then(|| recent(&mut rng));
            let after = if i > 0 { (0..rng.random_range(0..=2)).map(|_| recent(&mut rng)).collect() } else { vec![] };
            let scratch = rng.random_bool(0.5).then(|| (rng.random_range(0..SLOTS), rng.random_bool(0.5)));
            Node { source, after, scratch, granularity: rng.random_range(1..=9) }
        })
        .collect()
}

/// Submits a random DAG of `count` tasks and checks the timeline, the invariants and the
/// outputs; returns how many tasks had a predecessor.
fn run_dag(sched: &Scheduler, seed: u64, count: usize) -> usize {
    let k = sched.register_kernel(affine_kernel()).unwrap();
    let mut input = sched.alloc_host::<u32>(count * N).unwrap();
    input.write().iter_mut().enumerate().for_each(|(i, x)| *x = gen(i));
    let out = sched.alloc_host::<u32>(count * N).unwrap();
    let mut scratch = sched.alloc_host::<u32>(SLOTS * M).unwrap();
    scratch.write().fill(0);
    let (d_in, d_out) = (sched.alloc::<u32>(N).unwrap(), sched.alloc::<u32>(N).unwrap());
    let nodes = random_dag(seed, count);
    let mut last_writer = [0u32; SLOTS];
    let mut touched: Vec<Vec<(usize, bool)>> = vec![Vec::new(); SLOTS];
    let (mut deps, mut specs) = (Vec::new(), Vec::new());
    for (i, node) in nodes.iter().enumerate() {
        let mut preds: Vec<u64> = node.after.iter().map(|&p| p as u64).collect();
        let mut t = sched.task(i as u64, node.granularity).after_all(preds.clone());
        t = match node.source {
            Some(p) => {
                preds.push(p as u64);
                t.download(&d_in, 0, &out, p * N..(p + 1) * N)
            }
            None => t.download(&d_in, 0, &input, i * N..(i + 1) * N),
        };
        let args = [Arg::buffer(&d_in), Arg::buffer(&d_out), Arg::u32(N as u32), Arg::u32(1), Arg::u32(1)];
        t = t.launch(&k, grid(N), BLOCK, 0, &args).readback(&out, i * N..(i + 1) * N, &d_out, 0);
        let mut stages = vec![Stage::Download, Stage::Kernel, Stage::Readback];
        if let Some((slot, write)) = node.scratch {
            // WAW and WAR: after every earlier writer or reader; RAW: after every writer.
            preds.extend(touched[slot].iter().filter(|(_, w)| write || *w).map(|&(j, _)| j as u64));
            touched[slot].push((i, write));
            let range = slot * M..(slot + 1) * M;
            t = if write {
                let v = i as u32 + 1;
                last_writer[slot] = v;
                t.callback_writing(&scratch, range, move |x, _| {
                    x.fill(v);
                    Ok(())
                })
            } else {
                let want = last_writer[slot];
                t.callback_reading(&scratch, range, move |x, _| match x.iter().all(|&y| y == want) {
                    true => Ok(()),
                    false => Err(format!("scratch slot {slot} holds {}, expected {want}", x[0]).into()),
                })
            };
            stages.push(Stage::Cpu);
        }
        t.submit().unwrap();
        specs.push(TaskSpec::new(i as u64, node.granularity, &stages));
        deps.push((i as u64, preds));
    }
    let report = sched.synchronize().unwrap();
    check(&report, &specs, &Limits::of(sched), Clocks::SIM);
    let v = dependency_violations(&report, &deps);
    assert!(v.is_empty(), "{} dependencies broken:\n  {}", v.len(), v.join("\n  "));
    // The CPU reference: each task adds 1 to its source.
    let mut expected = vec![0u32; count * N];
    for (i, node) in nodes.iter().enumerate() {
        for e in 0..N {
            let x = match node.source {
                Some(p) => expected[p * N + e],
                None => gen(i * N + e),
            };
            expected[i * N + e] = affine_ref(x, 1, 1);
        }
    }
    let got = out.read();
    if let Some(i) = (0..count * N).find(|&i| got[i] != expected[i]) {
        panic!("element {i} (task {}): got {}, expected {}", i / N, got[i], expected[i]);
    }
    let s = scratch.read();
    for (slot, &w) in last_writer.iter().enumerate() {
        assert!(s[slot * M..(slot + 1) * M].iter().all(|&x| x == w), "scratch slot {slot}: expected {w}");
    }
    deps.iter().filter(|(_, p)| !p.is_empty()).count()
}

#[test]
fn random_dags_honour_every_dependency() {
    with_timeout(DEADLINE_S * 2, || {
        let mut seed = 16;
        for d in [1, 2, 4] {
            for s in [1, 4] {
                for order in Order::ALL {
                    let sched = Scheduler::builder().backend(timed(d)).gpus(d).streams(s).order(order).build().unwrap();
                    seed += 1;
                    let with_preds = run_dag(&sched, seed, 40);
                    assert!(with_preds > 20, "D={d} S={s} {order}: only {with_preds} tasks had a predecessor");
                }
            }
        }
    });
}

/// Twenty tasks add 1 in place to one host region: each reads and writes what the one
/// before wrote (RAW and WAW), so they run one after another on any D and S.
#[test]
fn a_chain_on_one_region_adds_one_per_task() {
    with_timeout(DEADLINE_S, || {
        for d in [1, 2, 4] {
            for s in [1, 4] {
                let sched = Scheduler::builder().backend(timed(d)).gpus(d).streams(s).build().unwrap();
                let k = sched.register_kernel(affine_kernel()).unwrap();
                let mut host = sched.alloc_host::<u32>(N).unwrap();
                host.write().iter_mut().enumerate().for_each(|(i, x)| *x = i as u32);
                let (d_in, d_out) = (sched.alloc::<u32>(N).unwrap(), sched.alloc::<u32>(N).unwrap());
                let args = [Arg::buffer(&d_in), Arg::buffer(&d_out), Arg::u32(N as u32), Arg::u32(1), Arg::u32(1)];
                for i in 0..20u64 {
                    sched
                        .task(i, 1)
                        .download(&d_in, 0, &host, ..)
                        .launch(&k, grid(N), BLOCK, 0, &args)
                        .readback(&host, .., &d_out, 0)
                        .submit()
                        .unwrap();
                }
                let report = sched.synchronize().unwrap();
                let deps: Vec<_> = (1..20u64).map(|i| (i, vec![i - 1])).collect();
                let v = dependency_violations(&report, &deps);
                assert!(v.is_empty(), "D={d} S={s}: {v:#?}");
                assert!(host.read().iter().enumerate().all(|(i, &x)| x == i as u32 + 20), "D={d} S={s}");
            }
        }
    });
}

/// A task held back by the graph holds no slot and no place in Q: on one GPU with two
/// slots, a task independent of a gated one runs and ends while the gated one's
/// dependent waits.
#[test]
fn a_waiting_task_does_not_hold_back_ready_ones() {
    with_timeout(DEADLINE_S, || {
        let sched = Scheduler::builder().backend(timed(1)).gpus(1).streams(2).build().unwrap();
        let (open, wait) = gate();
        let ran = Arc::new(AtomicBool::new(false));
        sched.task(1, 1).callback(Resource::Cpu, wait).submit().unwrap();
        let r = ran.clone();
        sched
            .task(2, 1)
            .after(1)
            .callback(Resource::Cpu, move |_| {
                r.store(true, Ordering::SeqCst);
                Ok(())
            })
            .submit()
            .unwrap();
        let host = sched.alloc_host::<u32>(8).unwrap();
        sched.task(3, 1).callback_writing(&host, .., fill(3)).submit().unwrap();
        // Task 3 ends (the guard waits for it) while task 2 still waits for task 1.
        assert!(host.read().iter().all(|&x| x == 3));
        assert!(!ran.load(Ordering::SeqCst), "task 2 ran before task 1 ended");
        open.send(()).unwrap();
        let report = sched.synchronize().unwrap();
        assert!(ran.load(Ordering::SeqCst));
        assert_eq!(report.tasks, 3);
        assert!(dependency_violations(&report, &[(2, vec![1])]).is_empty());
    });
}

/// A task whose predecessor fails does not run and fails naming it, transitively,
/// through `after` and through host regions alike, also when the predecessor had
/// already failed at submit; tasks outside the chain complete.
#[test]
fn a_failed_predecessor_fails_its_dependents() {
    with_timeout(DEADLINE_S, || {
        let sched = Scheduler::builder().backend(timed(2)).gpus(2).streams(2).build().unwrap();
        let host = sched.alloc_host::<u32>(64).unwrap();
        let ran = Arc::new(AtomicBool::new(false));
        let (open, wait) = gate();
        sched
            .task(1, 1)
            .callback(Resource::Cpu, wait)
            .callback_writing(&host, 0..8, |_, _| Err("task 1 fails".into()))
            .submit()
            .unwrap();
        let mark = |ran: &Arc<AtomicBool>| {
            let r = ran.clone();
            move |_: &chariot::CallInfo| {
                r.store(true, Ordering::SeqCst);
                Ok(())
            }
        };
        sched.task(2, 1).after(1).callback_writing(&host, 8..16, |_, _| Ok(())).submit().unwrap();
        // Reads what task 2 writes: runs after it (inferred), so fails with it.
        sched
            .task(3, 1)
            .callback_reading(&host, 12..13, |_, _| Ok(()))
            .callback(Resource::Cpu, mark(&ran))
            .submit()
            .unwrap();
        sched.task(4, 1).after(3).callback(Resource::Cpu, mark(&ran)).submit().unwrap();
        sched.task(5, 1).callback_writing(&host, 32..40, fill(5)).submit().unwrap();
        open.send(()).unwrap();
        // The guard waits for task 1's claim: task 1 has ended (failed) after it.
        drop(host.read_range(0..8).unwrap());
        sched.task(6, 1).after(1).callback(Resource::Cpu, mark(&ran)).submit().unwrap();
        let (failures, report) = expect_failed(sched.synchronize());
        let mut named: Vec<(u64, String)> = failures.iter().map(|f| (f.task.0, f.message.clone())).collect();
        named.sort();
        let ids: Vec<u64> = named.iter().map(|(t, _)| *t).collect();
        assert_eq!(ids, [1, 2, 3, 4, 6], "{named:#?}");
        for (task, cause) in [(2, 1), (3, 2), (4, 3), (6, 1)] {
            let m = &named.iter().find(|(t, _)| *t == task).unwrap().1;
            assert!(m.contains("not run") && m.contains(&format!("#{cause}")), "task {task}: {m}");
        }
        assert!(!ran.load(Ordering::SeqCst), "a dependent of a failed task ran");
        assert!(report.records.iter().all(|r| r.task.0 == 1 || r.task.0 == 5), "only tasks 1 and 5 ran");
        assert!(host.read_range(32..40).unwrap().iter().all(|&x| x == 5));
        // The next batch runs as usual.
        sched.task(2, 1).callback_writing(&host, 8..16, |_, _| Ok(())).submit().unwrap();
        assert_eq!(sched.synchronize().unwrap().tasks, 1);
    });
}

/// By default a host conflict with an unended task is a dependency; `refuse_conflicts`
/// gives the error instead, and a live read guard refuses a writer either way.
#[test]
fn host_conflicts_wait_by_default_and_refuse_when_asked() {
    with_timeout(DEADLINE_S, || {
        let sched = Scheduler::builder().backend(timed(1)).gpus(1).streams(4).build().unwrap();
        let host = sched.alloc_host::<u32>(64).unwrap();
        let dev = sched.alloc::<u32>(64).unwrap();
        let (open, wait) = gate();
        sched.task(1, 1).callback(Resource::Cpu, wait).callback_writing(&host, 0..32, fill(1)).submit().unwrap();
        let e = sched.task(2, 1).readback(&host, 16..48, &dev, 0).refuse_conflicts().submit().unwrap_err();
        assert!(matches!(e, Error::HostConflict { task: TaskId(2), ref holder, .. } if holder.contains("#1")), "{e:?}");
        // Reads what task 1 writes (RAW), then one that writes what 3 reads (WAR).
        sched
            .task(3, 1)
            .callback_reading(&host, 8..9, |x, _| if x[0] == 1 { Ok(()) } else { Err("read before the write".into()) })
            .submit()
            .unwrap();
        sched.task(4, 1).callback_writing(&host, 0..16, fill(4)).submit().unwrap();
        open.send(()).unwrap();
        let guard = host.read_range(40..48).unwrap();
        let e = sched.task(5, 1).readback(&host, 44..46, &dev, 0).submit().unwrap_err();
        assert!(
            matches!(e, Error::HostConflict { task: TaskId(5), ref holder, .. } if holder.contains("read guard")),
            "{e:?}"
        );
        drop(guard);
        let report = sched.synchronize().unwrap();
        assert_eq!(report.tasks, 3);
        assert!(dependency_violations(&report, &[(3, vec![1]), (4, vec![1, 3])]).is_empty());
        let h = host.read();
        assert!(h[..16].iter().all(|&x| x == 4) && h[16..32].iter().all(|&x| x == 1));
    });
}

/// A guard in a callback never waits on a task that waits for other tasks (which may be
/// the callback's own): it is `WaitInCallback`, and the scheduler goes on.
#[test]
fn a_guard_in_a_callback_does_not_wait_for_a_waiting_task() {
    with_timeout(DEADLINE_S, || {
        let sched = Scheduler::builder().backend(timed(1)).gpus(1).streams(2).build().unwrap();
        let host = Arc::new(std::sync::Mutex::new(sched.alloc_host::<u32>(64).unwrap()));
        let (tx, rx) = std::sync::mpsc::channel();
        let (open, wait) = gate();
        let h = host.clone();
        sched
            .task(1, 1)
            .callback(Resource::Cpu, wait)
            .callback(Resource::Cpu, move |_| {
                let got = h.lock().unwrap().read_range(0..8).map(|_| ());
                let _ = tx.send(got);
                Ok(())
            })
            .submit()
            .unwrap();
        // Task 2 writes 0..8 after task 1: a guard in task 1 on it would wait forever.
        sched.task(2, 1).after(1).callback_writing(&host.lock().unwrap(), 0..8, |_, _| Ok(())).submit().unwrap();
        open.send(()).unwrap();
        match rx.recv().unwrap() {
            Err(e @ Error::WaitInCallback { task: TaskId(1), .. }) => assert!(e.to_string().contains("#2"), "{e}"),
            other => panic!("{other:?}"),
        }
        assert_eq!(sched.synchronize().unwrap().tasks, 2);
    });
}
