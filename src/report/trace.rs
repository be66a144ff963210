//! Chrome-trace JSON of a report's timeline: one process per GPU, a track ("thread")
//! per stage engine, and one per stream slot, so both views show in Perfetto; and one
//! flow arrow per dependency of the task graph.

use super::{CommandRecord, Report};
use crate::ids::TaskId;
use crate::stage::Stage;
use serde_json::{json, Value};
use std::collections::HashMap;

/// The stream track of GPU `g`'s slot `j` is thread `STREAM_TID + j`.
const STREAM_TID: u64 = 100;

pub(crate) fn chrome_trace(report: &Report) -> String {
    let mut events: Vec<Value> = Vec::with_capacity(report.records.len() * 2 + report.dependencies.len() * 2 + 16);
    let streams = report.streams as u64;
    for (g, name) in report.gpus.iter().enumerate() {
        events.push(json!({"ph": "M", "name": "process_name", "pid": g, "args": {"name": format!("GPU {g}: {name}")}}));
        for s in Stage::ALL {
            events.push(json!({"ph": "M", "name": "thread_name", "pid": g, "tid": s.index(), "args": {"name": format!("stage {s}")}}));
        }
        for j in 0..streams {
            events.push(json!({"ph": "M", "name": "thread_name", "pid": g, "tid": STREAM_TID + j, "args": {"name": format!("stream {j}")}}));
        }
    }
    for r in &report.records {
        let ts = r.start_ns as f64 / 1e3;
        let dur = r.duration_ns() as f64 / 1e3;
        let args = json!({"task": r.task.0, "command": r.command, "stream": r.stream, "dispatched_us": r.dispatched_ns as f64 / 1e3, "bytes": r.bytes, "granularity": r.granularity, "failed": r.failed});
        let name = format!("{} {}", r.stage, r.task);
        events.push(json!({"ph": "X", "name": name, "cat": r.stage.name(), "pid": r.gpu, "tid": r.stage.index(), "ts": ts, "dur": dur, "args": args}));
        events.push(json!({"ph": "X", "name": name, "cat": r.stage.name(), "pid": r.gpu, "tid": STREAM_TID + r.stream as u64, "ts": ts, "dur": dur}));
    }
    flows(report, &mut events);
    json!({"traceEvents": events, "displayTimeUnit": "ms"}).to_string()
}

/// One flow per dependency (Trace Event Format flow events, as Perfetto draws them):
/// `"ph": "s"` at the start of the predecessor's last command on its stream's track, and
/// `"ph": "f"`, `"bp": "e"` at the start of the successor's first command on its own,
/// each binding to the slice that encloses it; the pair shares `id` (the edge's index in
/// `Report::dependencies`), `cat` and `name`. A dependency one of whose tasks has no
/// command recorded (it did not run) has no arrow.
fn flows(report: &Report, events: &mut Vec<Value>) {
    if report.dependencies.is_empty() {
        return;
    }
    // Per task: its first command (lowest index, then earliest) and its last (highest
    // index, then latest: a task moved off a lost GPU ran its tail again).
    let mut ends: HashMap<TaskId, (&CommandRecord, &CommandRecord)> = HashMap::new();
    for r in &report.records {
        let e = ends.entry(r.task).or_insert((r, r));
        if (r.command, r.start_ns) < (e.0.command, e.0.start_ns) {
            e.0 = r;
        }
        if (r.command, r.end_ns) > (e.1.command, e.1.end_ns) {
            e.1 = r;
        }
    }
    for (id, (p, s)) in report.dependencies.iter().enumerate() {
        let (Some(&(_, last)), Some(&(first, _))) = (ends.get(p), ends.get(s)) else { continue };
        let name = format!("{p} -> {s}");
        let at = |r: &CommandRecord| (r.gpu, STREAM_TID + r.stream as u64, r.start_ns as f64 / 1e3);
        let (pid, tid, ts) = at(last);
        events.push(json!({"ph": "s", "id": id, "name": name, "cat": "dependency", "pid": pid, "tid": tid, "ts": ts}));
        let (pid, tid, ts) = at(first);
        events.push(json!({"ph": "f", "bp": "e", "id": id, "name": name, "cat": "dependency", "pid": pid, "tid": tid, "ts": ts}));
    }
}
