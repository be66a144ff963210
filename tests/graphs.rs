//! Task graphs on the sim backend: dependencies named with `after` and
//! inferred from host regions (RAW, WAR, WAW) are honoured in the recorded timeline for
//! random DAGs over D ∈ {1, 2, 4}, S ∈ {1, 4} and every order, and the outputs equal a
//! CPU reference; a waiting task does not hold back ready ones; a failed task fails
//! those that run after it, transitively; a conflict is still an error where asked.
//!
//! Why this file is long: one scheduler behaviour a test, each with its own set-up.

#[path = "common/mod.rs"]
mod common;

use chariot::callback::Resource;
use chariot::error::ConflictHolder;
use chariot::report::Report;
use chariot::sim::SimProfile;
use chariot::{Arg, Backend, Error, Order, Scheduler, Stage, TaskId};
use common::*;
use rand::{Rng, SeedableRng};
use std::collections::{HashMap, HashSet};
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
fn fill(
    v: u32,
) -> impl FnOnce(&mut [u32], &chariot::callback::CallInfo) -> Result<(), chariot::BoxError> + Send + 'static {
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

/// Submits a random DAG of `count` tasks and checks the timeline, the invariants, the
/// outputs and the report's graph (its edges, critical path and trace arrows); returns
/// how many tasks had a predecessor, and the report.
fn run_dag(sched: &Scheduler, seed: u64, count: usize) -> (usize, Report) {
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
        let mut t = sched.task(i as u64, node.granularity).after_all(preds.iter().copied().map(TaskId));
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
    // The report's edges: every named one, and only dependencies the test knows of (an
    // inferred one only where the earlier task had not ended at submit).
    let edges: HashSet<(u64, u64)> = report.dependencies.iter().map(|(p, s)| (p.0, s.0)).collect();
    assert_eq!(edges.len(), report.dependencies.len(), "an edge listed twice");
    for (i, node) in nodes.iter().enumerate() {
        for &p in &node.after {
            assert!(edges.contains(&(p as u64, i as u64)), "named edge #{p} -> #{i} not in the report");
        }
    }
    for &(p, s) in &edges {
        assert!(deps[s as usize].1.contains(&p), "edge #{p} -> #{s} is no dependency");
    }
    check_critical_path(&report);
    check_trace_arrows(&report);
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
    (deps.iter().filter(|(_, p)| !p.is_empty()).count(), report)
}

/// Each task's span in the timeline: its first command's start to its last one's end.
fn spans(report: &Report) -> HashMap<u64, u64> {
    let mut m: HashMap<u64, (u64, u64)> = HashMap::new();
    for r in &report.records {
        let e = m.entry(r.task.0).or_insert((r.start_ns, r.end_ns));
        *e = (e.0.min(r.start_ns), e.1.max(r.end_ns));
    }
    m.into_iter().map(|(t, (s, e))| (t, e - s)).collect()
}

/// The critical path is a chain of the report's edges whose ns is the sum of its tasks'
/// spans, and no chain weighs more (the heaviest chain ending at each task, by ids in
/// submit order, as every edge points back in it).
fn check_critical_path(report: &Report) {
    let Some(path) = report.critical_path() else {
        assert!(report.dependencies.is_empty(), "no critical path with {} edges", report.dependencies.len());
        return;
    };
    let span = spans(report);
    let edges: HashSet<(TaskId, TaskId)> = report.dependencies.iter().copied().collect();
    assert!(!path.tasks.is_empty());
    for w in path.tasks.windows(2) {
        assert!(edges.contains(&(w[0], w[1])), "{} -> {} is no edge: {path:?}", w[0], w[1]);
    }
    let sum: u64 = path.tasks.iter().map(|t| span.get(&t.0).copied().unwrap_or(0)).sum();
    assert_eq!(path.ns, sum, "{path:?}");
    let mut ids: Vec<u64> = span.keys().copied().chain(edges.iter().flat_map(|(p, s)| [p.0, s.0])).collect();
    ids.sort_unstable();
    ids.dedup();
    let mut heaviest: HashMap<u64, u64> = HashMap::new();
    for &t in &ids {
        let before = edges.iter().filter(|e| e.1 .0 == t).map(|e| heaviest[&e.0 .0]).max().unwrap_or(0);
        heaviest.insert(t, before + span.get(&t).copied().unwrap_or(0));
    }
    assert_eq!(Some(&path.ns), heaviest.values().max(), "{path:?}");
}

/// The trace has one `s`/`f` pair per edge, sharing id, cat and name; the `s` at the
/// start of the predecessor's last command on its stream's track, the `f` (`bp: e`) at
/// the start of the successor's first command on its own.
fn check_trace_arrows(report: &Report) {
    let trace: serde_json::Value = serde_json::from_str(&report.chrome_trace()).unwrap();
    let events = trace["traceEvents"].as_array().unwrap();
    let flows = |ph: &str| -> HashMap<u64, &serde_json::Value> {
        let v: Vec<_> = events.iter().filter(|e| e["ph"] == ph).collect();
        let m: HashMap<_, _> = v.iter().map(|e| (e["id"].as_u64().unwrap(), *e)).collect();
        assert_eq!(m.len(), v.len(), "two {ph} events share an id");
        m
    };
    let (starts, finishes) = (flows("s"), flows("f"));
    assert_eq!(starts.len(), report.dependencies.len());
    assert_eq!(finishes.len(), report.dependencies.len());
    let at =
        |e: &serde_json::Value| (e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap(), e["ts"].as_f64().unwrap());
    let place = |r: &chariot::report::CommandRecord| (r.gpu as u64, 100 + r.stream as u64, r.start_ns as f64 / 1e3);
    for (id, s) in &starts {
        let f = finishes.get(id).unwrap_or_else(|| panic!("flow {id} has no f"));
        assert_eq!((&s["cat"], &s["name"]), (&f["cat"], &f["name"]), "flow {id}");
        assert_eq!(f["bp"], "e", "flow {id}");
        let (p, t) = report.dependencies[*id as usize];
        let (pred, succ) = (report.task_records(p), report.task_records(t));
        assert_eq!(at(s), place(pred.last().unwrap()), "flow {id}: s not on {p}'s last command");
        assert_eq!(at(f), place(&succ[0]), "flow {id}: f not on {t}'s first command");
        // The slice it binds to is there, on that track.
        assert!(events.iter().any(|e| e["ph"] == "X" && at(e) == at(s)), "flow {id}: no slice under s");
        assert!(events.iter().any(|e| e["ph"] == "X" && at(e) == at(f)), "flow {id}: no slice under f");
    }
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
                    let (with_preds, _) = run_dag(&sched, seed, 40);
                    assert!(with_preds > 20, "D={d} S={s} {order}: only {with_preds} tasks had a predecessor");
                }
            }
        }
    });
}

/// On small random DAGs, no chain of the report's edges (enumerated one by one) weighs
/// more than the critical path.
#[test]
fn the_critical_path_is_the_heaviest_chain_of_small_random_dags() {
    with_timeout(DEADLINE_S, || {
        for (seed, d, s) in [(101, 1, 1), (102, 2, 4), (103, 4, 4), (104, 1, 4), (105, 2, 1)] {
            let sched = Scheduler::builder().backend(timed(d)).gpus(d).streams(s).build().unwrap();
            let (_, report) = run_dag(&sched, seed, 12);
            let path = report.critical_path().expect("a DAG of 12 tasks has edges");
            let span = spans(&report);
            let weight = |t: TaskId| span.get(&t.0).copied().unwrap_or(0);
            // Every chain: from each task, every way along the edges.
            let mut stack: Vec<(TaskId, u64)> = span.keys().map(|&t| (TaskId(t), weight(TaskId(t)))).collect();
            let (mut chains, mut heaviest) = (0, 0);
            while let Some((t, w)) = stack.pop() {
                chains += 1;
                heaviest = heaviest.max(w);
                stack.extend(report.dependencies.iter().filter(|e| e.0 == t).map(|e| (e.1, w + weight(e.1))));
            }
            assert_eq!(path.ns, heaviest, "seed {seed}: {path:?} against {chains} chains");
        }
    });
}

/// A diamond (1 -> 2, 3 -> 4) and a chain (10 -> ... -> 15) in one batch: the path is
/// the chain or the diamond through its heavier branch, whichever weighs more; the
/// report shows it in one line, and a batch without dependencies has none.
#[test]
fn a_diamond_and_a_chain_show_their_critical_path_and_arrows() {
    with_timeout(DEADLINE_S, || {
        let sched = Scheduler::builder().backend(timed(2)).gpus(2).streams(2).build().unwrap();
        let k = sched.register_kernel(affine_kernel()).unwrap();
        let (d_in, d_out) = (sched.alloc::<u32>(N).unwrap(), sched.alloc::<u32>(N).unwrap());
        let input = sched.alloc_host::<u32>(N).unwrap();
        let out = sched.alloc_host::<u32>(16 * N).unwrap();
        let args = [Arg::buffer(&d_in), Arg::buffer(&d_out), Arg::u32(N as u32), Arg::u32(1), Arg::u32(1)];
        let submit = |id: u64, g: u64, after: &[u64]| {
            let at = id as usize * N;
            sched
                .task(id, g)
                .after_all(after.iter().copied().map(TaskId))
                .download(&d_in, 0, &input, ..)
                .launch(&k, grid(N), BLOCK, 0, &args)
                .readback(&out, at..at + N, &d_out, 0)
                .submit()
                .unwrap();
        };
        let report = sched.synchronize().unwrap();
        assert!(report.dependencies.is_empty() && report.critical_path().is_none());
        submit(1, 1, &[]);
        submit(2, 4, &[1]);
        submit(3, 2, &[1]);
        submit(4, 1, &[2, 3]);
        submit(10, 1, &[]);
        for i in 11..16 {
            submit(i, 1, &[i - 1]);
        }
        let report = sched.synchronize().unwrap();
        let pairs: Vec<(u64, u64)> = report.dependencies.iter().map(|(p, s)| (p.0, s.0)).collect();
        let want = [(1, 2), (1, 3), (2, 4), (3, 4), (10, 11), (11, 12), (12, 13), (13, 14), (14, 15)];
        assert_eq!(pairs, want, "named edges, in submit order");
        let span = spans(&report);
        let sum = |ids: &[u64]| ids.iter().map(|t| span[t]).sum::<u64>();
        let branch = if span[&2] >= span[&3] { 2 } else { 3 };
        let diamond = [1, branch, 4];
        let chain: Vec<u64> = (10..16).collect();
        let path = report.critical_path().unwrap();
        let got: Vec<u64> = path.tasks.iter().map(|t| t.0).collect();
        assert!(got == diamond || got == chain || (span[&2] == span[&3] && got == [1, 5 - branch, 4]), "{got:?}");
        assert_eq!(path.ns, sum(&diamond).max(sum(&chain)), "{path:?}");
        check_critical_path(&report);
        check_trace_arrows(&report);
        let shown = report.to_string();
        let line: Vec<&str> = shown.lines().filter(|l| l.starts_with("critical path: ")).collect();
        assert_eq!(line, [format!("critical path: {path}")], "{shown}");
        assert!(shown.lines().nth(1).is_some_and(|l| l.starts_with("T = ")), "{shown}");
        assert!(shown.lines().nth(2) == Some(line[0]), "next to the bounds: {shown}");
        let report = sched.synchronize().unwrap();
        assert!(!report.to_string().contains("critical path"));
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
            .after(TaskId(1))
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

/// A ready task that starts with a kernel is not held in Q behind uploads that wait
/// for the copy engine: it starts while the first upload runs, not after the uploads
/// before it in the order have started (first come, first served, one GPU). All seven
/// wait for one gate task, so that they enter Q together: submitted one by one, the
/// kernel could reach Q after the first upload had ended on a loaded host.
#[test]
fn a_kernel_does_not_wait_in_q_behind_uploads_waiting_for_the_copy_engine() {
    with_timeout(DEADLINE_S, || {
        let sched = Scheduler::builder().backend(timed(1)).gpus(1).streams(8).order(Order::Fcfs).build().unwrap();
        const MB4: usize = 1 << 20; // u32s: 4 MiB a task
        let host = sched.alloc_host::<u32>(6 * MB4).unwrap();
        let dev = sched.alloc::<u32>(MB4).unwrap();
        let (open, wait) = gate();
        sched.task(100, 1).callback(Resource::Cpu, wait).submit().unwrap();
        for i in 0..6u64 {
            let r = i as usize * MB4..(i as usize + 1) * MB4;
            sched.task(i, 1).after(TaskId(100)).download(&dev, 0, &host, r).submit().unwrap();
        }
        sched.task(6, 1).after(TaskId(100)).gpu_callback(|_| Ok(())).submit().unwrap();
        open.send(()).unwrap();
        let report = sched.synchronize().unwrap();
        let span = |t: u64| {
            let r = report.task_records(TaskId(t));
            (r[0].start_ns, r[r.len() - 1].end_ns)
        };
        let first_upload_end = (0..6).map(|t| span(t).1).min().unwrap();
        assert!(
            span(6).0 < first_upload_end,
            "the kernel started at {} ns, after the first upload ended at {first_upload_end} ns",
            span(6).0
        );
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
            move |_: &chariot::callback::CallInfo| {
                r.store(true, Ordering::SeqCst);
                Ok(())
            }
        };
        sched.task(2, 1).after(TaskId(1)).callback_writing(&host, 8..16, |_, _| Ok(())).submit().unwrap();
        // Reads what task 2 writes: runs after it (inferred), so fails with it.
        sched
            .task(3, 1)
            .callback_reading(&host, 12..13, |_, _| Ok(()))
            .callback(Resource::Cpu, mark(&ran))
            .submit()
            .unwrap();
        sched.task(4, 1).after(TaskId(3)).callback(Resource::Cpu, mark(&ran)).submit().unwrap();
        sched.task(5, 1).callback_writing(&host, 32..40, fill(5)).submit().unwrap();
        open.send(()).unwrap();
        // The guard waits for task 1's claim: task 1 has ended (failed) after it.
        drop(host.read_range(0..8).unwrap());
        sched.task(6, 1).after(TaskId(1)).callback(Resource::Cpu, mark(&ran)).submit().unwrap();
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
        assert!(
            matches!(e, Error::HostConflict { task: TaskId(2), holder: ConflictHolder::Task(TaskId(1)), .. }),
            "{e:?}"
        );
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
        assert!(matches!(e, Error::HostConflict { task: TaskId(5), holder: ConflictHolder::ReadGuard, .. }), "{e:?}");
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
        sched
            .task(2, 1)
            .after(TaskId(1))
            .callback_writing(&host.lock().unwrap(), 0..8, |_, _| Ok(()))
            .submit()
            .unwrap();
        open.send(()).unwrap();
        match rx.recv().unwrap() {
            Err(e @ Error::WaitInCallback { task: TaskId(1), .. }) => assert!(e.to_string().contains("#2"), "{e}"),
            other => panic!("{other:?}"),
        }
        assert_eq!(sched.synchronize().unwrap().tasks, 2);
    });
}

/// Placed tasks run on the GPU their user chose while its share of Q holds no more than
/// S of them (D = 2, S = 8, 8 tasks a GPU, chained in pairs across the GPUs so that
/// dependencies are crossed); a GPU the scheduler lacks is a named error at submit.
#[test]
fn placed_tasks_run_where_they_were_placed() {
    with_timeout(DEADLINE_S, || {
        let s = Scheduler::builder().backend(timed(2)).gpus(2).streams(8).build().unwrap();
        let ran: Arc<std::sync::Mutex<HashMap<u64, usize>>> = Arc::default();
        for i in 0..16u64 {
            let gpu = (i % 2) as usize;
            let ran = ran.clone();
            let t = s.task(i, 1).prefer_gpu(gpu);
            let t = if i >= 2 { t.after(TaskId(i - 1)) } else { t };
            t.callback(Resource::Cpu, move |c| {
                ran.lock().unwrap().insert(c.task.0, c.gpu);
                Ok(())
            })
            .submit()
            .unwrap();
        }
        let report = s.synchronize().unwrap();
        assert_eq!(report.tasks, 16);
        let ran = ran.lock().unwrap();
        for i in 0..16u64 {
            assert_eq!(ran.get(&i), Some(&((i % 2) as usize)), "task {i} ran on GPU {:?}", ran.get(&i));
        }
        match s.task(99, 1).prefer_gpu(2).callback(Resource::Cpu, |_| Ok(())).submit() {
            Err(e @ Error::NoSuchPlacement { .. }) => {
                assert_eq!(e.to_string(), "task #99: prefer_gpu(2), but the scheduler has 2 GPU(s) (0..2)");
            }
            other => panic!("expected NoSuchPlacement, got {other:?}"),
        }
    });
}

/// `synchronize_within` gives up at its timeout while a task runs, and leaves the
/// batch whole: a later call takes its report, as `synchronize` would. In a callback
/// it is `WaitInCallback`, as `synchronize` is.
#[test]
fn synchronize_within_gives_up_and_leaves_the_batch_whole() {
    with_timeout(DEADLINE_S, || {
        let sched = Arc::new(Scheduler::builder().backend(timed(1)).gpus(1).streams(2).build().unwrap());
        let (open, wait) = gate();
        sched.task(1, 1).callback(Resource::Cpu, wait).submit().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let s = sched.clone();
        sched
            .task(2, 1)
            .callback(Resource::Cpu, move |_| {
                let _ = tx.send(s.synchronize_within(std::time::Duration::from_secs(1)).map(|r| r.is_some()));
                Ok(())
            })
            .submit()
            .unwrap();
        match rx.recv().unwrap() {
            Err(Error::WaitInCallback { task: TaskId(2), .. }) => {}
            other => panic!("in a callback: {other:?}"),
        }
        let t0 = std::time::Instant::now();
        assert!(sched.synchronize_within(std::time::Duration::from_millis(30)).unwrap().is_none());
        assert!(t0.elapsed() >= std::time::Duration::from_millis(30), "{:?}", t0.elapsed());
        open.send(()).unwrap();
        let report = loop {
            if let Some(r) = sched.synchronize_within(std::time::Duration::from_millis(5)).unwrap() {
                break r;
            }
        };
        assert_eq!(report.tasks, 2);
        // The batch was taken: the next one is empty.
        assert_eq!(sched.synchronize_within(std::time::Duration::ZERO).unwrap().map(|r| r.tasks), Some(0));
    });
}

/// A launch on external device memory (another library's) is refused at submit on the
/// simulator, which has no such memory, naming the task, the command and the kernel;
/// nothing of it runs and the batch goes on.
#[test]
fn external_device_memory_is_refused_on_the_simulator() {
    with_timeout(DEADLINE_S, || {
        let sched = Scheduler::builder().backend(timed(1)).gpus(1).streams(2).build().unwrap();
        let k = sched.register_kernel(affine_kernel()).unwrap();
        let d = sched.alloc::<u32>(16).unwrap();
        let e = sched
            .task(7, 1)
            .launch(
                &k,
                1u32,
                16u32,
                0,
                &[Arg::external(0x7f00_0000_0000, 0, ()), Arg::buffer(&d), Arg::u32(16), Arg::u32(3), Arg::u32(1)],
            )
            .submit()
            .unwrap_err();
        match &e {
            Error::InvalidCommand { task: TaskId(7), command: 0, stage: Stage::Kernel, message } => {
                assert!(message.contains("does not exist on the simulator"), "{message}")
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(sched.synchronize().unwrap().tasks, 0);
    });
}
