//! The invariant checker over a [`Report`]: [`violations`] / [`check`], one function per
//! invariant, against what `expect.rs` describes (the tasks, [`Limits`], [`Clocks`]).

use super::expect::{Clocks, Limits, TaskSpec};
use super::spans::{max_overlap, union_ns};
use chariot::report::{CommandRecord, Report};
use chariot::Stage;
use std::collections::{BTreeMap, HashMap};

/// `[start + slack, end - slack)`: the part of a command's run that is certain.
fn run_span(r: &CommandRecord, slack: u64) -> (u64, u64) {
    (r.start_ns.saturating_add(slack), r.end_ns.saturating_sub(slack))
}

/// `[dispatched, end)`: when the dispatcher counts the command as in flight (at least).
fn issued_span(r: &CommandRecord) -> (u64, u64) {
    (r.dispatched_ns, r.end_ns)
}

fn describe(r: &CommandRecord) -> String {
    format!(
        "task #{} cmd {} ({}) gpu {} stream {} dispatched {} run {}..{}{}",
        r.task.0,
        r.command,
        r.stage,
        r.gpu,
        r.stream,
        r.dispatched_ns,
        r.start_ns,
        r.end_ns,
        if r.failed { " FAILED" } else { "" }
    )
}

/// Everything in `report` that breaks an invariant, given the tasks submitted in its
/// batch and the scheduler's limits. Empty when all hold.
///
/// (a) every task appears, each command `0..n` exactly once (up to and including the
///     failing command of a task expected to fail), with its expected stage;
/// (b) a task's commands run in index order without overlapping, all on one GPU and
///     one stream; and a stream slot never runs two commands at once;
/// (c) at no instant do more than `L_k` commands of stage k run on one GPU, nor more
///     than `G_k` on all GPUs together;
/// (d) where the overlap matrix forbids stages a and b, no command at a overlaps one
///     at b on the same GPU;
/// (e) the report's summary (span, makespan, tasks and busy time per GPU, failures)
///     agrees with its records, and only copies move bytes.
///
/// Each invariant has its own function below, returning the violations it finds; they
/// run in a fixed order, so the messages come in a fixed order too.
pub fn violations(report: &Report, tasks: &[TaskSpec], limits: &Limits, clocks: Clocks) -> Vec<String> {
    let records = &report.records;
    let by_task = records_by_task(records);
    let mut v = record_sanity(records, limits, clocks);
    v.extend(only_submitted_tasks(tasks, &by_task));
    for t in tasks {
        let recs = by_task.get(&t.id);
        v.extend(each_command_once(t, recs));
        if let Some(recs) = recs {
            v.extend(in_order_on_one_slot(t, recs, clocks));
        }
    }
    v.extend(task_count(report, tasks));
    v.extend(one_command_per_slot(records, clocks));
    v.extend(thresholds(records, limits, clocks));
    v.extend(overlap_matrix(records, limits, clocks));
    v.extend(summary_span(report));
    v.extend(summary_per_gpu(report, limits));
    v.extend(only_copies_move_bytes(records));
    v.extend(failures_agree(report));
    v
}

/// A report's records grouped by task id.
type ByTask<'a> = BTreeMap<u64, Vec<&'a CommandRecord>>;

fn records_by_task(records: &[CommandRecord]) -> ByTask<'_> {
    let mut by_task: ByTask<'_> = BTreeMap::new();
    for r in records {
        by_task.entry(r.task.0).or_default().push(r);
    }
    by_task
}

/// Every record lies on the machine (`gpu < D`, `stream < S`), ends after it starts and,
/// when the dispatcher's view is checked, starts after it was dispatched.
fn record_sanity(records: &[CommandRecord], limits: &Limits, clocks: Clocks) -> Vec<String> {
    let mut v = Vec::new();
    for r in records {
        if r.gpu as usize >= limits.gpus || r.stream as usize >= limits.streams {
            v.push(format!(
                "record outside the machine (D = {}, S = {}): {}",
                limits.gpus,
                limits.streams,
                describe(r)
            ));
        }
        if r.start_ns > r.end_ns {
            v.push(format!("record ends before it starts: {}", describe(r)));
        }
        if clocks.issued && r.dispatched_ns > r.start_ns {
            v.push(format!("record starts before it was dispatched: {}", describe(r)));
        }
    }
    v
}

/// (a) The expected tasks have distinct ids, and every recorded task was submitted in
/// this batch.
fn only_submitted_tasks(tasks: &[TaskSpec], by_task: &ByTask<'_>) -> Vec<String> {
    let mut v = Vec::new();
    let specs: HashMap<u64, &TaskSpec> = tasks.iter().map(|t| (t.id, t)).collect();
    if specs.len() != tasks.len() {
        v.push("the expected task list repeats an id".to_string());
    }
    for (id, recs) in by_task {
        if !specs.contains_key(id) {
            v.push(format!("task #{id} was not submitted in this batch but has {} record(s)", recs.len()));
        }
    }
    v
}

/// (a) Task `t` ran (`recs` are its records), each of its commands exactly once up to
/// the failing one, at its expected stage and granularity, failed only where expected.
fn each_command_once(t: &TaskSpec, recs: Option<&Vec<&CommandRecord>>) -> Vec<String> {
    let mut v = Vec::new();
    let Some(recs) = recs else {
        v.push(format!("task #{} never ran (no record)", t.id));
        return v;
    };
    let expected = t.fails_at.map_or(t.stages.len(), |f| f + 1);
    let mut seen = vec![0usize; t.stages.len().max(expected)];
    for r in recs {
        let c = r.command as usize;
        if c >= expected {
            v.push(format!(
                "task #{} has a record for command {c}, expected only 0..{expected}: {}",
                t.id,
                describe(r)
            ));
            continue;
        }
        seen[c] += 1;
        if r.stage != t.stages[c] {
            v.push(format!("task #{} command {c} recorded at stage {}, expected {}", t.id, r.stage, t.stages[c]));
        }
        if r.granularity != t.granularity {
            v.push(format!(
                "task #{} recorded with granularity {}, submitted with {}",
                t.id, r.granularity, t.granularity
            ));
        }
        let should_fail = t.fails_at == Some(c);
        if r.failed != should_fail {
            v.push(format!("task #{} command {c}: failed = {}, expected {should_fail}", t.id, r.failed));
        }
    }
    for (c, &n) in seen.iter().enumerate().take(expected) {
        if n != 1 {
            v.push(format!("task #{} command {c} recorded {n} time(s), expected exactly once", t.id));
        }
    }
    v
}

/// (b) Task `t`'s commands (`recs`, not empty) all ran on one slot, in index order,
/// never overlapping, and each was dispatched only after the previous one ended.
fn in_order_on_one_slot(t: &TaskSpec, recs: &[&CommandRecord], clocks: Clocks) -> Vec<String> {
    let mut v = Vec::new();
    let mut sorted: Vec<&CommandRecord> = recs.to_vec();
    sorted.sort_by_key(|r| (r.command, r.start_ns));
    let first = sorted[0];
    for r in &sorted {
        if r.gpu != first.gpu || r.stream != first.stream {
            v.push(format!(
                "task #{} ran on two slots: command {} on gpu {} stream {}, command {} on gpu {} stream {}",
                t.id, first.command, first.gpu, first.stream, r.command, r.gpu, r.stream
            ));
        }
    }
    for w in sorted.windows(2) {
        let (a, b) = (w[0], w[1]);
        if a.command == b.command {
            continue; // reported by each_command_once
        }
        let slack = clocks.between(a.stage, b.stage);
        if a.end_ns > b.start_ns.saturating_add(slack) {
            v.push(format!("task #{} commands overlap or run out of order: {} | {}", t.id, describe(a), describe(b)));
        }
        if clocks.issued && a.end_ns > b.dispatched_ns {
            v.push(format!(
                "task #{} command {} was dispatched before command {} ended: {} | {}",
                t.id,
                b.command,
                a.command,
                describe(a),
                describe(b)
            ));
        }
    }
    v
}

/// (a) The report counts as many tasks as were submitted.
fn task_count(report: &Report, tasks: &[TaskSpec]) -> Vec<String> {
    let mut v = Vec::new();
    if report.tasks != tasks.len() {
        v.push(format!("report.tasks = {}, but {} tasks were submitted", report.tasks, tasks.len()));
    }
    v
}

/// (b') A stream slot runs one command at a time (and, when the dispatcher's view is
/// checked, has one in flight at a time).
fn one_command_per_slot(records: &[CommandRecord], clocks: Clocks) -> Vec<String> {
    let mut v = Vec::new();
    let mut by_slot: BTreeMap<(u16, u16), Vec<&CommandRecord>> = BTreeMap::new();
    for r in records {
        by_slot.entry((r.gpu, r.stream)).or_default().push(r);
    }
    for ((g, s), recs) in &by_slot {
        let mut recs = recs.clone();
        recs.sort_by_key(|r| (r.start_ns, r.end_ns));
        for w in recs.windows(2) {
            let (a, b) = (w[0], w[1]);
            if a.end_ns > b.start_ns.saturating_add(clocks.between(a.stage, b.stage)) {
                v.push(format!("gpu {g} stream {s} ran two commands at once: {} | {}", describe(a), describe(b)));
            }
        }
        if clocks.issued {
            recs.sort_by_key(|r| (r.dispatched_ns, r.end_ns));
            for w in recs.windows(2) {
                if w[0].end_ns > w[1].dispatched_ns {
                    v.push(format!(
                        "gpu {g} stream {s} had two commands in flight: {} | {}",
                        describe(w[0]),
                        describe(w[1])
                    ));
                }
            }
        }
    }
    v
}

/// (c) At no instant do more than `L_k` commands of stage k run on one GPU, nor more
/// than `G_k` on all GPUs together (running, and in flight when that view is checked).
fn thresholds(records: &[CommandRecord], limits: &Limits, clocks: Clocks) -> Vec<String> {
    let mut v = Vec::new();
    for stage in Stage::ALL {
        let k = stage.index();
        let (local, global) = (limits.thresholds.local[k], limits.thresholds.global[k]);
        let of_stage: Vec<&CommandRecord> = records.iter().filter(|r| r.stage == stage).collect();
        let mut views: Vec<(&str, bool)> = vec![("running", false)];
        if clocks.issued {
            views.push(("in flight", true));
        }
        for (view, issued) in views {
            let span = |r: &CommandRecord, slack: u64| if issued { issued_span(r) } else { run_span(r, slack) };
            for g in 0..limits.gpus {
                let (n, at) =
                    max_overlap(of_stage.iter().filter(|r| r.gpu as usize == g).map(|r| span(r, clocks.same_ns)));
                if n > local {
                    v.push(format!("{n} {stage} commands {view} at once on gpu {g} at {at} ns, but L_{k} = {local}"));
                }
            }
            let slack = if stage.on_gpu() && limits.gpus > 1 { clocks.cross_ns } else { clocks.same_ns };
            let (n, at) = max_overlap(of_stage.iter().map(|r| span(r, slack)));
            if n > global {
                v.push(format!("{n} {stage} commands {view} at once on all GPUs at {at} ns, but G_{k} = {global}"));
            }
        }
    }
    v
}

/// (d) Where a GPU's overlap matrix forbids stages a and b, no command at a overlaps one
/// at b on that GPU (running, and in flight when that view is checked).
fn overlap_matrix(records: &[CommandRecord], limits: &Limits, clocks: Clocks) -> Vec<String> {
    let mut v = Vec::new();
    for (g, m) in limits.matrices.iter().enumerate() {
        let Some(m) = m else { continue };
        let forbids_any = Stage::ALL.iter().any(|&a| Stage::ALL.iter().any(|&b| !m.allows(a, b)));
        if !forbids_any {
            continue;
        }
        let mine: Vec<&CommandRecord> = records.iter().filter(|r| r.gpu as usize == g).collect();
        let mut views: Vec<(&str, bool)> = vec![("ran", false)];
        if clocks.issued {
            views.push(("were in flight", true));
        }
        for (view, issued) in views {
            let span = |r: &CommandRecord| if issued { issued_span(r) } else { (r.start_ns, r.end_ns) };
            let mut sorted = mine.clone();
            sorted.sort_by_key(|r| span(r));
            let mut active: Vec<&CommandRecord> = Vec::new();
            for r in sorted {
                let (s, e) = span(r);
                active.retain(|a| span(a).1 > s);
                for a in &active {
                    if m.allows(a.stage, r.stage) {
                        continue;
                    }
                    let slack = if issued { 0 } else { clocks.between(a.stage, r.stage) };
                    let lo = s.max(span(a).0).saturating_add(slack);
                    let hi = e.min(span(a).1).saturating_sub(slack);
                    if lo < hi {
                        v.push(format!(
                            "gpu {g}: {} and {} {view} at the same time, which the overlap matrix forbids: {} | {}",
                            a.stage,
                            r.stage,
                            describe(a),
                            describe(r)
                        ));
                    }
                }
                active.push(r);
            }
        }
    }
    v
}

/// (e) The report's start, end and makespan are those of its records.
fn summary_span(report: &Report) -> Vec<String> {
    let mut v = Vec::new();
    let records = &report.records;
    if !records.is_empty() {
        let start = records.iter().map(|r| r.start_ns).min().unwrap_or(0);
        let end = records.iter().map(|r| r.end_ns).max().unwrap_or(0);
        if (report.start_ns, report.end_ns, report.makespan_ns) != (start, end, end - start) {
            v.push(format!(
                "report start/end/makespan {}/{}/{} but the records span {start}..{end}",
                report.start_ns, report.end_ns, report.makespan_ns
            ));
        }
    }
    v
}

/// (e) The report's tasks and busy time per GPU and stage are those of its records.
fn summary_per_gpu(report: &Report, limits: &Limits) -> Vec<String> {
    let mut v = Vec::new();
    let records = &report.records;
    if report.tasks_per_gpu.len() != limits.gpus || report.busy_ns.len() != limits.gpus {
        v.push(format!(
            "report has {} tasks_per_gpu and {} busy_ns entries for {} GPUs",
            report.tasks_per_gpu.len(),
            report.busy_ns.len(),
            limits.gpus
        ));
    } else {
        for g in 0..limits.gpus {
            let mine: Vec<&CommandRecord> = records.iter().filter(|r| r.gpu as usize == g).collect();
            let tasks = mine.iter().map(|r| r.task).collect::<std::collections::HashSet<_>>().len();
            if report.tasks_per_gpu[g] != tasks {
                v.push(format!("report says gpu {g} ran {} tasks, its records show {tasks}", report.tasks_per_gpu[g]));
            }
            for stage in Stage::ALL {
                let busy = union_ns(mine.iter().filter(|r| r.stage == stage).map(|r| (r.start_ns, r.end_ns)));
                if report.busy_ns[g][stage.index()] != busy {
                    v.push(format!(
                        "report says gpu {g} was busy {} ns at {stage}, its records show {busy} ns",
                        report.busy_ns[g][stage.index()]
                    ));
                }
            }
        }
    }
    v
}

/// (e) Only copies move bytes: CPU callbacks and kernels record none.
fn only_copies_move_bytes(records: &[CommandRecord]) -> Vec<String> {
    records
        .iter()
        .filter(|r| matches!(r.stage, Stage::Cpu | Stage::Kernel) && r.bytes != 0)
        .map(|r| format!("a {} command moved {} bytes: {}", r.stage, r.bytes, describe(r)))
        .collect()
}

/// (e) The tasks with a failed record are exactly those the report's failures name.
fn failures_agree(report: &Report) -> Vec<String> {
    let mut v = Vec::new();
    let mut failed: Vec<u64> = report.records.iter().filter(|r| r.failed).map(|r| r.task.0).collect();
    let mut reported: Vec<u64> = report.failures.iter().map(|f| f.task.0).collect();
    failed.sort_unstable();
    reported.sort_unstable();
    if failed != reported {
        v.push(format!("failed records of tasks {failed:?}, but the report's failures name {reported:?}"));
    }
    v
}
/// Panics with every violation found (the first 40) if any invariant fails.
pub fn check(report: &Report, tasks: &[TaskSpec], limits: &Limits, clocks: Clocks) {
    let v = violations(report, tasks, limits, clocks);
    if !v.is_empty() {
        panic!(
            "{} invariant violation(s) in a report of {} records:\n  {}",
            v.len(),
            report.records.len(),
            v.iter().take(40).cloned().collect::<Vec<_>>().join("\n  ")
        );
    }
}

/// The start of each task's first command.
pub fn first_starts(report: &Report) -> HashMap<u64, u64> {
    let mut m: HashMap<u64, u64> = HashMap::new();
    for r in &report.records {
        if r.command == 0 {
            m.insert(r.task.0, r.start_ns);
        }
    }
    m
}

/// Every dependency in `deps` (a task, and the tasks it runs after) honoured in the
/// report's timeline: the task's first command is dispatched, and starts, no earlier than
/// each predecessor's last command ends. A task with no record (it did not run) is
/// skipped, and so is a predecessor with none.
pub fn dependency_violations(report: &Report, deps: &[(u64, Vec<u64>)]) -> Vec<String> {
    let mut first: HashMap<u64, (u64, u64)> = HashMap::new();
    let mut last: HashMap<u64, u64> = HashMap::new();
    for r in &report.records {
        let f = first.entry(r.task.0).or_insert((u64::MAX, u64::MAX));
        *f = (f.0.min(r.dispatched_ns), f.1.min(r.start_ns));
        let l = last.entry(r.task.0).or_insert(0);
        *l = (*l).max(r.end_ns);
    }
    let mut v = Vec::new();
    for (task, preds) in deps {
        let Some(&(dispatched, start)) = first.get(task) else { continue };
        for p in preds {
            if let Some(&end) = last.get(p) {
                if dispatched < end || start < end {
                    v.push(format!(
                        "task #{task} runs after task #{p}, but its first command was dispatched at {dispatched} and \
                         started at {start}, before #{p}'s last command ended at {end}"
                    ));
                }
            }
        }
    }
    v
}
