//! `plot::gantt_from_trace` on arbitrary JSON: a trace that is not one of chariot's is
//! an `Err` with a message, never a panic; one with usable events becomes a PNG.
//!
//! The input is turned into JSON two ways: raw bytes as text (the parser's error paths),
//! or structured events with arbitrary numbers (the drawing's arithmetic), their pids
//! small or anything. Small pids are below 4: the picture has rows for every GPU up to
//! the largest pid, and in the fuzz build each GPU costs about 50 ms to draw (a valid
//! pid of 255, about 12 s), which would leave a few runs a second.
//!
//! What the function must return is read off the JSON as it reads it: of the events it
//! draws (`ph` "X", a stage's `tid`, numbers for `pid`, `ts` and `dur`), the first with a
//! negative `ts` or `dur`, or a pid of 256 or more, is an `Err` naming that event, and no
//! file is written; no such event and at least one drawn is a PNG; none drawn is an `Err`.

#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use serde_json::{json, Value};
use std::path::PathBuf;
use std::sync::OnceLock;

#[derive(Arbitrary, Debug)]
enum Input {
    Text(String),
    Events(Vec<Event>),
}

#[derive(Arbitrary, Debug)]
struct Event {
    pid: Pid,
    tid: u8,
    ts: f64,
    dur: f64,
}

#[derive(Arbitrary, Debug)]
enum Pid {
    Small(u8),
    Any(u64),
}

/// The stages a trace's `tid` names: Cpu, Download, Kernel, Readback.
const STAGES: u64 = 4;

fn scratch() -> &'static PathBuf {
    static P: OnceLock<PathBuf> = OnceLock::new();
    P.get_or_init(|| std::env::temp_dir().join(format!("chariot-fuzz-trace-{}.png", std::process::id())))
}

/// What `gantt_from_trace` must give for `trace`.
enum Expect {
    /// An error naming this event (its index) and field.
    Hostile(usize, &'static str),
    /// A PNG: at least one event is drawn.
    Drawn,
    /// An error: not a trace, or nothing to draw.
    Nothing,
}

fn expect(trace: &str) -> Expect {
    let Ok(v) = serde_json::from_str::<Value>(trace) else { return Expect::Nothing };
    let Some(events) = v.get("traceEvents").and_then(|e| e.as_array()) else { return Expect::Nothing };
    let mut drawn = false;
    for (i, e) in events.iter().enumerate() {
        let (Some("X"), Some(pid), Some(tid), Some(ts), Some(dur)) = (
            e.get("ph").and_then(|x| x.as_str()),
            e.get("pid").and_then(|x| x.as_u64()),
            e.get("tid").and_then(|x| x.as_u64()),
            e.get("ts").and_then(|x| x.as_f64()),
            e.get("dur").and_then(|x| x.as_f64()),
        ) else {
            continue;
        };
        if tid >= STAGES {
            continue;
        }
        if !(ts.is_finite() && ts >= 0.0) {
            return Expect::Hostile(i, "ts");
        }
        if !(dur.is_finite() && dur >= 0.0) {
            return Expect::Hostile(i, "dur");
        }
        if pid >= 256 {
            return Expect::Hostile(i, "pid");
        }
        drawn = true;
    }
    if drawn {
        Expect::Drawn
    } else {
        Expect::Nothing
    }
}

fuzz_target!(|input: Input| {
    let text = match input {
        Input::Text(t) => t,
        // pid is a GPU: the picture has a row of 30 px per GPU and stage. A NaN or an
        // infinity becomes `null`, which the reader skips.
        Input::Events(events) => json!({
            "traceEvents": events
                .iter()
                .map(|e| {
                    let pid = match e.pid {
                        Pid::Small(p) => p as u64 % 4,
                        Pid::Any(p) => p,
                    };
                    json!({ "ph": "X", "pid": pid, "tid": e.tid % 5, "ts": e.ts, "dur": e.dur })
                })
                .collect::<Vec<_>>()
        })
        .to_string(),
    };
    let path = scratch();
    let _ = std::fs::remove_file(path);
    let result = chariot_studies::plot::gantt_from_trace(path, "fuzz", &text);
    match (expect(&text), result) {
        (Expect::Hostile(i, field), Err(message)) => {
            assert!(message.contains(&format!("event {i} has {field}")), "event {i}, {field}: {message}");
            assert!(!path.exists(), "a file was written for a hostile trace");
        }
        (Expect::Hostile(i, field), Ok(())) => panic!("event {i} has a bad {field}, but a PNG was drawn"),
        (Expect::Drawn, Ok(())) => assert!(path.exists(), "Ok without a file"),
        (Expect::Drawn, Err(message)) => panic!("a usable trace gave Err: {message}"),
        (Expect::Nothing, Err(message)) => assert!(!message.is_empty()),
        (Expect::Nothing, Ok(())) => panic!("a PNG of nothing"),
    }
});
