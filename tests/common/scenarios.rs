//! Scenarios shared by the sim and CUDA suites: a checked workload run, the ordering
//! rule's pop order, 2-D copies, a gate callback, and a panicking callback.

use super::expect::{Clocks, Limits, TaskSpec};
use super::invariants::{check, first_starts};
use super::kernels::{affine_kernel, affine_ref, gen, grid, BLOCK, SENTINEL};
use super::workload::{plan, Planned, Recipe, Workload};
use chariot::callback::{CallInfo, Resource};
use chariot::report::Report;
use chariot::{Arg, BoxError, Order, Scheduler, Stage, TaskId};
use std::time::Duration;

/// Runs `plan` as one batch on `sched`, checks every invariant and every output element
/// against the CPU reference, and returns the report.
pub fn run_workload(sched: &Scheduler, plan: Vec<Planned>, clocks: Clocks) -> Report {
    let count = plan.len();
    let w = Workload::new(sched, plan).unwrap();
    w.submit_all(sched).unwrap();
    let report = sched.synchronize().unwrap();
    assert!(report.failures.is_empty(), "{:?}", report.failures);
    check(&report, &w.specs(), &Limits::of(sched), clocks);
    w.verify(&report);
    assert_eq!(report.tasks, count);
    assert_eq!(report.tasks_per_gpu.iter().sum::<usize>(), count);
    assert_eq!(report.records.len(), w.plan.iter().map(|p| p.recipe.stages().len()).sum::<usize>());
    report
}

/// The ordering rule's pop order, made deterministic: on a scheduler with one GPU and
/// one stream, task 0 holds the only slot (its first command, a CPU callback, blocks
/// until every other task is submitted), so the others all wait in the task buffer and
/// the order in which they then start is the order the rule pops them in.
pub fn pop_order_scenario(sched: &Scheduler, order: Order, clocks: Clocks) {
    assert_eq!((sched.gpu_count(), sched.streams()), (1, 1), "the scenario needs D = 1, S = 1");
    let w = Workload::new(sched, plan(7, 1, 24, 64, &[Recipe::Plain])).unwrap();
    // Granularities 1..=6 over 24 tasks: many ties, which must go to the older task.
    let grains: Vec<u64> = (0..24u64).map(|i| (i * 7 + 3) % 6 + 1).collect();
    let (started_tx, started_rx) = std::sync::mpsc::channel();
    let (release_tx, release_rx) = std::sync::mpsc::channel::<()>();
    sched
        .task(0, 1000)
        .callback(Resource::Cpu, move |_| {
            started_tx.send(()).map_err(|e| e.to_string())?;
            release_rx.recv().map_err(|e| e.to_string())?;
            Ok(())
        })
        .submit()
        .unwrap();
    started_rx.recv_timeout(Duration::from_secs(30)).expect("task 0 started");
    for (p, &g) in w.plan.iter().zip(&grains) {
        let r = p.offset..p.offset + p.len;
        let args = [Arg::buffer(&w.d_in), Arg::buffer(&w.d_out), Arg::u32(p.len as u32), Arg::u32(p.a), Arg::u32(p.b)];
        sched
            .task(p.id, g)
            .download(&w.d_in, 0, &w.inp, r.clone())
            .launch(&w.affine, grid(p.len), BLOCK, 0, &args)
            .readback(&w.out, r, &w.d_out, 0)
            .submit()
            .unwrap();
    }
    release_tx.send(()).unwrap();
    let report = sched.synchronize().unwrap();
    let mut specs: Vec<TaskSpec> = w
        .plan
        .iter()
        .zip(&grains)
        .map(|(p, &g)| TaskSpec::new(p.id, g, &[Stage::Download, Stage::Kernel, Stage::Readback]))
        .collect();
    specs.push(TaskSpec::new(0, 1000, &[Stage::Cpu]));
    check(&report, &specs, &Limits::of(sched), clocks);
    w.verify(&report);

    let starts = first_starts(&report);
    let mut actual: Vec<u64> = w.plan.iter().map(|p| p.id).collect();
    actual.sort_by_key(|id| starts[id]);
    // Submission order is id order, and sort_by_key is stable: ties keep it.
    let mut expected: Vec<(u64, u64)> = w.plan.iter().map(|p| p.id).zip(grains.iter().copied()).collect();
    match order {
        Order::Fcfs => {}
        Order::LargestFirst => expected.sort_by_key(|&(_, g)| std::cmp::Reverse(g)),
        Order::SmallestFirst => expected.sort_by_key(|&(_, g)| g),
    }
    let expected: Vec<u64> = expected.into_iter().map(|(id, _)| id).collect();
    let grain_of = |ids: &[u64]| ids.iter().map(|id| grains[(*id - 1) as usize]).collect::<Vec<_>>();
    assert_eq!(
        actual,
        expected,
        "{order:?} started tasks in the wrong order (their granularities {:?}, expected {:?})",
        grain_of(&actual),
        grain_of(&expected)
    );
    // Task 0 ran first, alone.
    assert!(w.plan.iter().all(|p| starts[&p.id] >= starts[&0]));
}

/// Column blocks of one row-major matrix: each task downloads a block of whole columns
/// with the matrix's pitch (2-D copy), packs it on the device, transforms it, and reads
/// it back into the same columns of the output matrix. The blocks' host regions
/// interleave row by row without sharing a byte, so no submit may be refused.
pub fn two_d_scenario(sched: &Scheduler, clocks: Clocks) {
    let (cols, rows, block) = (384usize, 40usize, 48usize);
    let mut inp = sched.alloc_host::<u32>(cols * rows).unwrap();
    let mut out = sched.alloc_host::<u32>(cols * rows).unwrap();
    inp.write().iter_mut().enumerate().for_each(|(i, x)| *x = gen(i));
    out.write().fill(SENTINEL);
    let d_in = sched.alloc::<u32>(block * rows).unwrap();
    let d_out = sched.alloc::<u32>(block * rows).unwrap();
    let affine = sched.register_kernel(affine_kernel()).unwrap();
    let n = block * rows;
    let mut specs = Vec::new();
    for (t, c0) in (0..cols).step_by(block).enumerate() {
        let shape = chariot::Copy2d {
            host_offset: c0,
            host_pitch: cols,
            dev_offset: 0,
            dev_pitch: block,
            width: block,
            height: rows,
        };
        let args =
            [Arg::buffer(&d_in), Arg::buffer(&d_out), Arg::u32(n as u32), Arg::u32(3 + t as u32), Arg::u32(t as u32)];
        sched
            .task(t as u64, n as u64)
            .download_2d(&d_in, &inp, shape)
            .launch(&affine, grid(n), BLOCK, 0, &args)
            .readback_2d(&out, &d_out, shape)
            .submit()
            .unwrap();
        specs.push(TaskSpec::new(t as u64, n as u64, &[Stage::Download, Stage::Kernel, Stage::Readback]));
    }
    let report = sched.synchronize().unwrap();
    check(&report, &specs, &Limits::of(sched), clocks);
    let out = out.read();
    for r in 0..rows {
        for c in 0..cols {
            let t = (c / block) as u32;
            assert_eq!(out[r * cols + c], affine_ref(gen(r * cols + c), 3 + t, t), "row {r} column {c}");
        }
    }
    // Bytes moved: every element once each way.
    assert_eq!(report.records.iter().map(|r| r.bytes).sum::<u64>(), (2 * cols * rows * 4) as u64);
}

/// A task whose first command blocks until the returned sender sends (or is dropped).
pub fn gate() -> (std::sync::mpsc::Sender<()>, impl FnOnce(&CallInfo) -> Result<(), BoxError> + Send + 'static) {
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let f = move |_: &CallInfo| -> Result<(), BoxError> {
        let _ = rx.recv();
        Ok(())
    };
    (tx, f)
}

/// One task of the workload gets an extra CPU callback that panics between its download
/// and its readback; the batch must fail with exactly that task (id, command, stage,
/// the panic's message) while every other task completes with correct output, and the
/// scheduler must run the next batch.
pub fn panic_scenario(sched: &Scheduler, clocks: Clocks) {
    let w = Workload::new(sched, plan(9, 1, 24, 300, &[Recipe::Plain, Recipe::CpuAround, Recipe::TwoKernels])).unwrap();
    let victim = w.plan[10];
    for p in w.plan.iter().filter(|p| p.id != victim.id) {
        w.submit(sched, p).unwrap();
    }
    let r = victim.offset..victim.offset + victim.len;
    sched
        .task(victim.id, victim.len as u64)
        .download(&w.d_in, 0, &w.inp, r.clone())
        .callback(Resource::Cpu, move |info| panic!("boom in task {}", info.task.0))
        .readback(&w.out, r, &w.d_out, 0)
        .submit()
        .unwrap();
    let e = sched.synchronize().unwrap_err();
    let text = e.to_string();
    let chariot::Error::TasksFailed { failures, report } = e else { panic!("expected TasksFailed, got {e:?}") };
    assert_eq!(failures.len(), 1, "{failures:?}");
    let f = &failures[0];
    assert_eq!((f.task, f.command, f.stage), (TaskId(victim.id), 1, Stage::Cpu), "{f:?}");
    assert!(f.message.contains(&format!("boom in task {}", victim.id)), "{}", f.message);
    assert!(text.contains(&format!("#{}", victim.id)) && text.contains("cpu") && text.contains("boom"), "{text}");
    assert_eq!(report.failures, failures);
    let mut specs = w.specs();
    for sp in specs.iter_mut().filter(|sp| sp.id == victim.id) {
        *sp =
            TaskSpec::new(victim.id, victim.len as u64, &[Stage::Download, Stage::Cpu, Stage::Readback]).failing_at(1);
    }
    check(&report, &specs, &Limits::of(sched), clocks);
    w.verify_tasks(&report, |p| p.id != victim.id);
    // The victim's readback never ran: its output chunk is untouched.
    assert!(w.out.read()[victim.offset..victim.offset + victim.len].iter().all(|&x| x == SENTINEL));
    // The scheduler lives on: the next batch runs, with the victim's id free again.
    sched.task(victim.id, 1).callback(Resource::Cpu, |_| Ok(())).submit().unwrap();
    assert_eq!(sched.synchronize().unwrap().tasks, 1);
}
