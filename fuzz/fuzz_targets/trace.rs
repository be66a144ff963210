//! `plot::gantt_from_trace` on arbitrary JSON: a trace that is not one of chariot's is
//! an `Err` with a message, never a panic; one with usable events becomes a PNG.
//!
//! The input is turned into JSON two ways: raw bytes as text (the parser's error paths),
//! or structured events with arbitrary numbers (the drawing's arithmetic).
//!
//! `known_bug` skips traces that reach the bug of `a_hostile_trace_is_an_error` in
//! tests/bad_input.rs (an event ending before it starts, a huge pid); remove it once
//! that is fixed.

#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use serde_json::json;
use std::path::PathBuf;
use std::sync::OnceLock;

#[derive(Arbitrary, Debug)]
enum Input {
    Text(String),
    Events(Vec<Event>),
}

#[derive(Arbitrary, Debug)]
struct Event {
    pid: u16,
    tid: u8,
    ts: f64,
    dur: f64,
}

fn scratch() -> &'static PathBuf {
    static P: OnceLock<PathBuf> = OnceLock::new();
    P.get_or_init(|| std::env::temp_dir().join(format!("chariot-fuzz-trace-{}.png", std::process::id())))
}

/// Whether `trace` has an event that ends before it starts, or a pid of 64 or more, as
/// `gantt_from_trace` reads them.
fn known_bug(trace: &str) -> bool {
    let Ok(v) = serde_json::from_str::<serde_json::Value>(trace) else { return false };
    let Some(events) = v.get("traceEvents").and_then(|e| e.as_array()) else { return false };
    events.iter().any(|e| {
        let f = |k: &str| e.get(k).and_then(|x| x.as_f64());
        let big_pid = e.get("pid").and_then(|x| x.as_u64()).is_some_and(|p| p >= 64);
        let backwards = match (f("ts"), f("dur")) {
            (Some(ts), Some(dur)) => (((ts + dur) * 1e3) as u64) < ((ts * 1e3) as u64),
            _ => false,
        };
        big_pid || backwards
    })
}

fuzz_target!(|input: Input| {
    let text = match input {
        Input::Text(t) => t,
        // pid is a GPU: the picture has a row of 30 px per GPU and stage.
        Input::Events(events) => json!({
            "traceEvents": events
                .iter()
                .map(|e| json!({ "ph": "X", "pid": e.pid % 64, "tid": e.tid % 5, "ts": e.ts, "dur": e.dur }))
                .collect::<Vec<_>>()
        })
        .to_string(),
    };
    if known_bug(&text) {
        return;
    }
    if let Err(message) = chariot::plot::gantt_from_trace(scratch(), "fuzz", &text) {
        assert!(!message.is_empty());
    }
});
