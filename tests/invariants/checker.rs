//! The checker itself: it accepts a valid timeline and catches each kind of violation.

use super::*;

fn rec(task: u64, command: u32, stage: Stage, gpu: u16, stream: u16, start: u64, end: u64) -> CommandRecord {
    CommandRecord::new(TaskId(task), command, stage, gpu, stream, start, end)
}

/// A report over `records` (two GPUs, two streams) whose summary agrees with them.
fn fake_report(records: Vec<CommandRecord>) -> Report {
    let tasks = records.iter().map(|r| r.task).collect::<std::collections::HashSet<_>>().len();
    let start_ns = records.iter().map(|r| r.start_ns).min().unwrap_or(0);
    let end_ns = records.iter().map(|r| r.end_ns).max().unwrap_or(0);
    let tasks_per_gpu = (0..2u16)
        .map(|g| records.iter().filter(|r| r.gpu == g).map(|r| r.task).collect::<std::collections::HashSet<_>>().len())
        .collect();
    let busy_ns = (0..2u16)
        .map(|g| {
            Stage::ALL.map(|k| {
                union_ns(records.iter().filter(|r| r.gpu == g && r.stage == k).map(|r| (r.start_ns, r.end_ns)))
            })
        })
        .collect();
    let mut report = Report::default();
    report.backend = "fake".into();
    report.gpus = vec!["a".into(), "b".into()];
    report.streams = 2;
    report.buses = 1;
    report.records = records;
    report.tasks = tasks;
    report.start_ns = start_ns;
    report.end_ns = end_ns;
    report.makespan_ns = end_ns - start_ns;
    report.busy_ns = busy_ns;
    report.tasks_per_gpu = tasks_per_gpu;
    report
}

fn fake_limits(matrix: OverlapMatrix) -> Limits {
    Limits {
        gpus: 2,
        streams: 2,
        thresholds: Thresholds { local: [2, 1, 1, 1], global: [2, 1, 2, 1] },
        matrices: vec![Some(matrix); 2],
    }
}

const DKR: [Stage; 3] = [Stage::Download, Stage::Kernel, Stage::Readback];

/// Two tasks, one per GPU, that satisfy every invariant.
fn good_records() -> Vec<CommandRecord> {
    vec![
        rec(1, 0, Stage::Download, 0, 0, 0, 10),
        rec(1, 1, Stage::Kernel, 0, 0, 10, 20),
        rec(1, 2, Stage::Readback, 0, 0, 25, 30),
        rec(2, 0, Stage::Download, 1, 1, 10, 20),
        rec(2, 1, Stage::Kernel, 1, 1, 20, 30),
        rec(2, 2, Stage::Readback, 1, 1, 30, 40),
    ]
}

fn good_specs() -> Vec<TaskSpec> {
    vec![TaskSpec::new(1, 1, &DKR), TaskSpec::new(2, 1, &DKR)]
}

fn violations_of(records: Vec<CommandRecord>, specs: &[TaskSpec], matrix: OverlapMatrix) -> Vec<String> {
    violations(&fake_report(records), specs, &fake_limits(matrix), Clocks::SIM)
}

fn assert_caught(records: Vec<CommandRecord>, specs: &[TaskSpec], matrix: OverlapMatrix, needle: &str) {
    let v = violations_of(records, specs, matrix);
    assert!(v.iter().any(|m| m.contains(needle)), "expected a violation containing {needle:?}, got {v:#?}");
}

#[test]
fn checker_accepts_a_valid_timeline() {
    let v = violations_of(good_records(), &good_specs(), OverlapMatrix::from_hardware(1, true));
    assert!(v.is_empty(), "{v:#?}");
}

#[test]
fn checker_catches_missing_and_duplicate_commands() {
    let all = OverlapMatrix::all();
    let mut r = good_records();
    r.remove(1);
    assert_caught(r, &good_specs(), all, "task #1 command 1 recorded 0 time(s)");
    let mut r = good_records();
    r.push(rec(2, 2, Stage::Readback, 1, 1, 40, 45));
    assert_caught(r, &good_specs(), all, "task #2 command 2 recorded 2 time(s)");
    let r: Vec<_> = good_records().into_iter().filter(|r| r.task.0 == 1).collect();
    assert_caught(r, &good_specs(), all, "task #2 never ran");
    let mut r = good_records();
    r.push(rec(9, 0, Stage::Cpu, 0, 1, 0, 1));
    assert_caught(r, &good_specs(), all, "task #9 was not submitted");
    let mut r = good_records();
    r[1].stage = Stage::Cpu;
    assert_caught(r, &good_specs(), all, "recorded at stage cpu, expected kernel");
    let mut r = good_records();
    r[2].failed = true;
    assert_caught(r, &good_specs(), all, "failed = true, expected false");
    // A task expected to fail at command 1 has no record of command 2.
    let specs = vec![TaskSpec::new(1, 1, &DKR).failing_at(1), TaskSpec::new(2, 1, &DKR)];
    let mut r = good_records();
    r[1].failed = true;
    assert_caught(r.clone(), &specs, all, "has a record for command 2");
    r.remove(2);
    // ...and its report lists the failure.
    let mut report = fake_report(r);
    let limits = fake_limits(all);
    assert!(violations(&report, &specs, &limits, Clocks::SIM).iter().any(|m| m.contains("failures name []")));
    report.failures.push(chariot::report::TaskFailure::new(TaskId(1), 1, Stage::Kernel, 0, 0, "x"));
    let v = violations(&report, &specs, &limits, Clocks::SIM);
    assert!(v.is_empty(), "{v:#?}");
}

#[test]
fn checker_catches_order_and_slot_violations() {
    let all = OverlapMatrix::all();
    let mut r = good_records();
    r[1].start_ns = 5; // kernel starts before the download ends
    assert_caught(r, &good_specs(), all, "task #1 commands overlap or run out of order");
    let mut r = good_records();
    r[2].dispatched_ns = 15; // readback issued while the kernel ran
    r[2].start_ns = 20;
    assert_caught(r, &good_specs(), all, "was dispatched before command 1 ended");
    let mut r = good_records();
    r[2].stream = 1;
    assert_caught(r, &good_specs(), all, "task #1 ran on two slots");
    // Task 2 moved onto task 1's slot while task 1 runs there.
    let mut r = good_records();
    for x in r.iter_mut().filter(|x| x.task.0 == 2) {
        x.gpu = 0;
        x.stream = 0;
    }
    assert_caught(r, &good_specs(), all, "gpu 0 stream 0 ran two commands at once");
    let mut r = good_records();
    r[0].stream = 7;
    r[1].stream = 7;
    r[2].stream = 7;
    assert_caught(r, &good_specs(), all, "record outside the machine");
}

#[test]
fn checker_catches_threshold_violations() {
    let all = OverlapMatrix::all();
    // Task 2 on GPU 0, stream 1: its download overlaps task 1's (L_download = 1).
    let mut r = good_records();
    for x in r.iter_mut().filter(|x| x.task.0 == 2) {
        x.gpu = 0;
    }
    r[3].start_ns = 5;
    r[3].dispatched_ns = 5;
    assert_caught(r, &good_specs(), all, "2 download commands running at once on gpu 0");
    // Downloads on two GPUs at once: G_download = 1.
    let mut r = good_records();
    r[3].start_ns = 5;
    r[3].dispatched_ns = 5;
    assert_caught(r, &good_specs(), all, "2 download commands running at once on all GPUs");
    // Only the dispatcher's view overlaps: issued at 5 while the other ran until 10.
    let mut r = good_records();
    r[3].dispatched_ns = 5;
    assert_caught(r, &good_specs(), all, "2 download commands in flight at once on all GPUs");
    // Touching intervals [0,10) and [10,20) do not overlap.
    assert_eq!(max_overlap([(0, 10), (10, 20)]), (1, 0));
    assert_eq!(max_overlap([(0, 10), (5, 20), (6, 7)]).0, 3);
    assert_eq!(max_overlap([(5, 5)]).0, 0);
}

#[test]
fn checker_catches_overlap_matrix_violations() {
    let one_engine = OverlapMatrix::from_hardware(1, true);
    // Task 2 on GPU 0: its download (10..20) overlaps nothing forbidden...
    let mut r = good_records();
    for x in r.iter_mut().filter(|x| x.task.0 == 2) {
        x.gpu = 0;
    }
    r[3].start_ns = 26;
    r[3].dispatched_ns = 26;
    r[3].end_ns = 28; // ...but 26..28 overlaps task 1's readback 25..30.
    r[4].start_ns = 28;
    r[4].dispatched_ns = 28;
    r[5].start_ns = 30;
    r[5].dispatched_ns = 30;
    r[4].end_ns = 30;
    let specs = good_specs();
    assert_caught(r.clone(), &specs, one_engine, "readback and download ran at the same time");
    // With three engines the same timeline is fine.
    let mut limits = fake_limits(OverlapMatrix::from_hardware(3, true));
    limits.thresholds.global = [2, 2, 2, 2];
    assert!(violations(&fake_report(r), &specs, &limits, Clocks::SIM).is_empty());
}

#[test]
fn checker_catches_an_inconsistent_summary() {
    let specs = good_specs();
    let limits = fake_limits(OverlapMatrix::all());
    let mut r = fake_report(good_records());
    r.makespan_ns += 1;
    assert!(violations(&r, &specs, &limits, Clocks::SIM).iter().any(|m| m.contains("makespan")));
    let mut r = fake_report(good_records());
    r.tasks_per_gpu = vec![2, 0];
    assert!(violations(&r, &specs, &limits, Clocks::SIM).iter().any(|m| m.contains("gpu 0 ran 2 tasks")));
    let mut r = fake_report(good_records());
    r.busy_ns[1][Stage::Kernel.index()] = 1;
    assert!(violations(&r, &specs, &limits, Clocks::SIM).iter().any(|m| m.contains("busy 1 ns at kernel")));
    let mut records = good_records();
    records[1].bytes = 64;
    let v = violations(&fake_report(records), &specs, &limits, Clocks::SIM);
    assert!(v.iter().any(|m| m.contains("a kernel command moved 64 bytes")), "{v:#?}");
    assert_eq!(union_ns([(0, 10), (5, 20), (30, 40), (40, 41), (7, 7)]), 31);
}

/// A real run passes the checker, and the same run with one record moved fails it.
#[test]
fn checker_catches_a_tampered_real_report() {
    with_timeout(DEADLINE_S, || {
        let sched = Scheduler::builder().backend(timed(1)).gpus(1).streams(2).build().unwrap();
        let w = Workload::new(&sched, plan(61, 1, 12, 500, &[Recipe::Plain])).unwrap();
        w.submit_all(&sched).unwrap();
        let report = sched.synchronize().unwrap();
        let limits = Limits::of(&sched);
        check(&report, &w.specs(), &limits, Clocks::SIM);
        let mut bad = report.clone();
        let i = bad.records.iter().position(|r| r.task.0 == 5 && r.command == 2).unwrap();
        bad.records[i].start_ns = 0; // the readback "starts" before its task's download
        assert!(!violations(&bad, &w.specs(), &limits, Clocks::SIM).is_empty());
        let mut bad = report.clone();
        bad.records.retain(|r| r.task.0 != 3);
        assert!(!violations(&bad, &w.specs(), &limits, Clocks::SIM).is_empty());
    });
}
