//! Chrome-trace JSON of a report's timeline: one process per GPU, a track ("thread")
//! per stage engine, and one per stream slot, so both views show in Perfetto.

use super::Report;
use crate::stage::Stage;
use serde_json::{json, Value};

pub(crate) fn chrome_trace(report: &Report) -> String {
    let mut events: Vec<Value> = Vec::with_capacity(report.records.len() * 2 + 16);
    let streams = report.streams as u64;
    for (g, name) in report.gpus.iter().enumerate() {
        events.push(json!({"ph": "M", "name": "process_name", "pid": g, "args": {"name": format!("GPU {g}: {name}")}}));
        for s in Stage::ALL {
            events.push(json!({"ph": "M", "name": "thread_name", "pid": g, "tid": s.index(), "args": {"name": format!("stage {s}")}}));
        }
        for j in 0..streams {
            events.push(json!({"ph": "M", "name": "thread_name", "pid": g, "tid": 100 + j, "args": {"name": format!("stream {j}")}}));
        }
    }
    for r in &report.records {
        let ts = r.start_ns as f64 / 1e3;
        let dur = r.duration_ns() as f64 / 1e3;
        let args = json!({"task": r.task.0, "command": r.command, "stream": r.stream, "dispatched_us": r.dispatched_ns as f64 / 1e3, "bytes": r.bytes, "granularity": r.granularity, "failed": r.failed});
        let name = format!("{} {}", r.stage, r.task);
        events.push(json!({"ph": "X", "name": name, "cat": r.stage.name(), "pid": r.gpu, "tid": r.stage.index(), "ts": ts, "dur": dur, "args": args}));
        events.push(json!({"ph": "X", "name": name, "cat": r.stage.name(), "pid": r.gpu, "tid": 100 + r.stream as u64, "ts": ts, "dur": dur}));
    }
    json!({"traceEvents": events, "displayTimeUnit": "ms"}).to_string()
}
