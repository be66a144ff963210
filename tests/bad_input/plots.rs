//! Plots (`chariot::plot`): only these tests, as they move to the studies' crate with the plots.

use super::*;

#[test]
fn gantt_of_no_trace_is_an_error() {
    let path = std::env::temp_dir().join(format!("chariot-no-trace-{}.png", std::process::id()));
    for trace in ["", "[]", "{}", r#"{"traceEvents":3}"#, r#"{"traceEvents":[{"ph":"B"}]}"#] {
        let e = chariot::plot::gantt_from_trace(&path, "none", trace).unwrap_err();
        assert!(!e.is_empty(), "{trace}");
    }
    let e = chariot::plot::line_chart(&path, "none", "x", "y", false, &[]).unwrap_err();
    assert!(!e.is_empty());
    assert!(!path.exists(), "nothing was drawn");
}

/// A Chrome trace whose events end before they start, or name a GPU past what fits in a
/// picture, is not one of chariot's: an error, not a panic or a giant allocation.
#[test]
fn a_hostile_trace_is_an_error() {
    if !is_child() {
        let out = in_child(module_path!(), "a_hostile_trace_is_an_error", &[]);
        return assert_child_passed(&out, "hostile traces");
    }
    let path = std::env::temp_dir().join(format!("chariot-hostile-trace-{}.png", std::process::id()));
    let event = |pid: u64, ts: f64, dur: f64| {
        format!(r#"{{"traceEvents":[{{"ph":"X","pid":{pid},"tid":1,"ts":{ts},"dur":{dur}}}]}}"#)
    };
    for trace in [event(0, 10.0, -5.0), event(1 << 26, 0.0, 1.0), event(10_000_000, 0.0, 1.0)] {
        let r = chariot::plot::gantt_from_trace(&path, "hostile", &trace);
        assert!(r.is_err(), "{trace}: {r:?}");
    }
    std::fs::remove_file(&path).ok();
}
