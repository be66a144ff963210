//! Property tests of the timeline invariants (the robustness work): random task sets (random
//! command sequences and chunk sizes), D GPUs × S streams, thresholds, stage depth,
//! ordering rules and simulated machines. Every case builds a scheduler on the sim
//! backend, runs its tasks as one batch, and checks the timeline with the invariant
//! checker of `tests/common` (every task exactly once and in order on one slot, L and G
//! per stage, the overlap matrix) and every host element against a CPU model of the
//! task's commands.
//!
//! A task's commands are drawn freely, then kept only where they are meaningful: a
//! kernel, GPU callback or readback that reads a device buffer the task has not written
//! yet is dropped, because a slot's physical buffers hold whatever the previous task on
//! that slot left there. What remains is a valid pipeline whose outcome the model knows.
//!
//! `PROPTEST_CASES=1000 cargo test --release --test props` for a longer run (the
//! default is 48 cases, a few seconds in debug).
//!
//! The commands and their CPU model are in `model.rs`, the cases and their strategies in
//! `cases.rs`; this file runs a case and checks it.

// The shared helpers of every test target, one directory up from this one's.
#[path = "../common/mod.rs"]
mod common;

mod cases;
mod model;

use cases::*;
use chariot::callback::{CallInfo, Resource};
use chariot::sim::SimProfile;
use chariot::tuning::Thresholds;
use chariot::{Arg, Backend, Order, Scheduler, Stage, TaskId};
use common::{
    affine_kernel, affine_ref, check, checksum, grid, mix_kernel, mix_ref, with_timeout, Clocks, Limits, TaskSpec,
    BLOCK, SENTINEL,
};
use model::*;
use proptest::prelude::*;
use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};

/// A hung case fails after this long instead of stalling the run.
const DEADLINE_S: u64 = 60;
/// Default number of cases (the file runs in seconds in debug on 2 cores).
const CASES: u32 = 48;

// ---------------------------------------------------------------------------------------
// Running a case
// ---------------------------------------------------------------------------------------

/// What the callbacks saw, by task.
#[derive(Default)]
struct Seen {
    checksums: HashMap<u64, Vec<u64>>,
    infos: Vec<CallInfo>,
}

fn run(case: &Case) {
    let mut b = Scheduler::builder()
        .backend(Backend::SimWith(case.machine.profile(case.gpus)))
        .gpus(case.gpus)
        .streams(case.streams)
        .order(case.order)
        .stage_depth(case.depth)
        .cpu_cores(case.cores);
    if let Some((l, g)) = case.thresholds {
        b = b.local_thresholds(l).global_thresholds(g);
    }
    let sched = b.build().expect("a valid configuration builds");
    if let Some((local, global)) = case.thresholds {
        assert_eq!(sched.thresholds(), Thresholds { local, global }.with_depth(case.depth), "thresholds in force");
    }

    let total: usize = case.tasks.iter().map(|t| t.len).sum();
    let max_len = case.tasks.iter().map(|t| t.len).max().unwrap_or(1);
    let mut inp = sched.alloc_host::<u32>(total).unwrap();
    let mut out = sched.alloc_host::<u32>(total).unwrap();
    inp.write().iter_mut().enumerate().for_each(|(i, x)| *x = input(i));
    out.write().fill(SENTINEL);
    let dev_a = sched.alloc::<u32>(max_len).unwrap();
    let dev_b = sched.alloc::<u32>(max_len).unwrap();
    let affine = sched.register_kernel(affine_kernel()).unwrap();
    let mix = sched.register_kernel(mix_kernel()).unwrap();
    let seen = Arc::new(Mutex::new(Seen::default()));

    for t in &case.tasks {
        let (id, len, chunk) = (t.id, t.len, t.offset..t.offset + t.len);
        let dev = |d: Dev| if d == Dev::A { &dev_a } else { &dev_b };
        let mut tb = sched.task(id, len as u64);
        for &op in &t.ops {
            tb = match op {
                Op::Fill { salt } => tb.callback_writing(&inp, chunk.clone(), move |s, _| {
                    s.iter_mut().enumerate().for_each(|(j, x)| *x = fill(salt, j));
                    Ok(())
                }),
                Op::Download => tb.download(&dev_a, 0, &inp, chunk.clone()),
                Op::Affine { src, a, b } => {
                    let args = [
                        Arg::buffer(dev(src)),
                        Arg::buffer(dev(src.other())),
                        Arg::u32(len as u32),
                        Arg::u32(a),
                        Arg::u32(b),
                    ];
                    tb.launch(&affine, grid(len), BLOCK, 0, &args)
                }
                Op::Mix { on, k } => {
                    tb.launch(&mix, grid(len), BLOCK, 0, &[Arg::buffer(dev(on)), Arg::u32(len as u32), Arg::u32(k)])
                }
                Op::GpuAdd { on, k } => {
                    let buf = dev(on).clone();
                    tb.gpu_callback(move |call| {
                        let mut mem = call.sim_buffer(&buf).ok_or("the sim backend gives its buffers")?;
                        mem[..len].iter_mut().for_each(|x| *x = x.wrapping_add(k));
                        Ok(())
                    })
                }
                Op::Readback { from } => tb.readback(&out, chunk.clone(), dev(from), 0),
                Op::Inspect => {
                    let seen = seen.clone();
                    tb.callback_reading(&out, chunk.clone(), move |s, _| {
                        seen.lock().unwrap().checksums.entry(id).or_default().push(checksum(s));
                        Ok(())
                    })
                }
                Op::CpuNote | Op::GpuNote => {
                    let seen = seen.clone();
                    let resource = if op == Op::CpuNote { Resource::Cpu } else { Resource::Gpu };
                    tb.callback(resource, move |info| {
                        seen.lock().unwrap().infos.push(*info);
                        Ok(())
                    })
                }
            };
        }
        assert_eq!(tb.submit().expect("a valid task submits"), TaskId(id));
    }
    let report = sched.synchronize().expect("no task fails");

    // The timeline.
    let specs: Vec<TaskSpec> = case
        .tasks
        .iter()
        .map(|t| TaskSpec::new(t.id, t.len as u64, &t.ops.iter().map(|op| op.stage()).collect::<Vec<_>>()))
        .collect();
    check(&report, &specs, &Limits::of(&sched), Clocks::SIM);

    // The data, against the model.
    let (inp, out, seen) = (inp.read(), out.read(), seen.lock().unwrap());
    let slots: HashMap<u64, (usize, usize)> =
        report.records.iter().map(|r| (r.task.0, (r.gpu as usize, r.stream as usize))).collect();
    let mut bad = Vec::new();
    for t in &case.tasks {
        let m = t.model();
        let chunk = t.offset..t.offset + t.len;
        if let Some(j) = (0..t.len).find(|&j| out[chunk.start + j] != m.out[j]) {
            bad.push(format!(
                "task #{}: output element {j} = {:#x}, expected {:#x}",
                t.id,
                out[chunk.start + j],
                m.out[j]
            ));
        }
        if let Some(j) = (0..t.len).find(|&j| inp[chunk.start + j] != m.inp[j]) {
            bad.push(format!(
                "task #{}: input element {j} = {:#x}, expected {:#x}",
                t.id,
                inp[chunk.start + j],
                m.inp[j]
            ));
        }
        let sums = seen.checksums.get(&t.id).cloned().unwrap_or_default();
        if sums != m.inspected {
            bad.push(format!("task #{}: inspections saw checksums {sums:x?}, expected {:x?}", t.id, m.inspected));
        }
        let notes = t.ops.iter().filter(|op| matches!(op, Op::CpuNote | Op::GpuNote)).count();
        let infos: Vec<&CallInfo> = seen.infos.iter().filter(|i| i.task == TaskId(t.id)).collect();
        if infos.len() != notes {
            bad.push(format!("task #{}: {} callbacks recorded a CallInfo, expected {notes}", t.id, infos.len()));
        }
        if let Some(i) = infos.iter().find(|i| Some(&(i.gpu, i.stream)) != slots.get(&t.id)) {
            bad.push(format!(
                "task #{}: a callback ran as gpu {} stream {}, its records say {:?}",
                t.id,
                i.gpu,
                i.stream,
                slots.get(&t.id)
            ));
        }
    }
    assert!(bad.is_empty(), "{} wrong result(s):\n  {}", bad.len(), bad.join("\n  "));
}

fn config() -> ProptestConfig {
    // ProptestConfig::default() reads PROPTEST_CASES (and the other PROPTEST_* variables);
    // without it, 48 cases keep the file fast in CI.
    let mut c = ProptestConfig::default();
    if std::env::var_os("PROPTEST_CASES").is_none() {
        c.cases = CASES;
    }
    // Each shrinking step builds a scheduler: bound the search.
    c.max_shrink_iters = c.max_shrink_iters.min(1024);
    c
}

proptest! {
    #![proptest_config(config())]

    /// Random task sets on random configurations keep every timeline invariant and
    /// compute what the CPU model computes.
    #[test]
    fn random_pipelines_keep_the_invariants(case in case()) {
        with_timeout(DEADLINE_S, move || run(&case));
    }
}

/// The normalizer drops exactly the commands that read a device buffer not yet written.
#[test]
fn normalize_keeps_only_meaningful_commands() {
    let raw = vec![
        Op::Readback { from: Dev::A },
        Op::Affine { src: Dev::B, a: 3, b: 1 },
        Op::Download,
        Op::Mix { on: Dev::B, k: 1 },
        Op::Affine { src: Dev::A, a: 3, b: 1 },
        Op::Mix { on: Dev::B, k: 1 },
        Op::Readback { from: Dev::B },
    ];
    let ops = normalize(8, raw);
    assert_eq!(
        ops,
        vec![
            Op::Download,
            Op::Affine { src: Dev::A, a: 3, b: 1 },
            Op::Mix { on: Dev::B, k: 1 },
            Op::Readback { from: Dev::B }
        ]
    );
    assert_eq!(normalize(8, vec![Op::GpuAdd { on: Dev::A, k: 1 }]), vec![Op::Download]);
    // The model of the kept commands: out = mix(affine(input)).
    let t = TaskPlan { id: 1, offset: 5, len: 8, ops };
    let want: Vec<u32> = (0..8).map(|j| mix_ref(affine_ref(input(5 + j), 3, 1), 1, j)).collect();
    assert_eq!(t.model().out, want);
}
