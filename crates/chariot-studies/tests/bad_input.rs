//! Bad input to the studies crate, on the sim backend or before any CUDA call: the
//! hand-written baselines check their arguments and fail with typed errors, plots refuse
//! traces that are not chariot's, and the demo's command line refuses bad values. The
//! rows of `docs/bad-input.md` for baselines, plots and the demo's command line name
//! these tests; the runtime's are in `tests/bad_input/`.

mod common;

use chariot::sim::SimProfile;
use chariot::{Backend, Error, Kernel, Param, Scheduler};
use common::{assert_child_passed, assert_invalid_config, in_child, is_child, with_timeout};
use std::process::Command;

const DEADLINE_S: u64 = 60;

/// A scheduler on the instant sim backend, for its host buffers.
fn sched(gpus: usize, streams: usize) -> Scheduler {
    let backend = Backend::SimWith(SimProfile::instant().with_gpus(gpus));
    Scheduler::builder().backend(backend).gpus(gpus).streams(streams).build().unwrap()
}

// ---------------------------------------------------------------------------------------
// Baselines
// ---------------------------------------------------------------------------------------

/// The hand-written baselines check their arguments before any CUDA call.
#[test]
fn baseline_arguments_are_checked_before_cuda() {
    use chariot_studies::baseline::{shift, Baseline};
    let s = sched(1, 1);
    let input = s.alloc_host::<u32>(64).unwrap();
    let mut output = s.alloc_host::<u32>(32).unwrap();
    let e = shift(Baseline::Serial, 0, 0, &input, &mut output, std::slice::from_ref(&(0..8)), 1).unwrap_err();
    assert_invalid_config(e, "streams", "0");
    #[allow(clippy::reversed_empty_ranges)]
    for bad in [0..0, 8..4, 16..40] {
        let e = shift(Baseline::DepthFirst, 0, 2, &input, &mut output, std::slice::from_ref(&bad), 1).unwrap_err();
        let text = e.to_string();
        assert_invalid_config(e, "chunks", &format!("{bad:?}"));
        assert!(text.contains("inside 0..32"), "{text}");
    }
    let e = shift(Baseline::Graph, 0, 2, &input, &mut output, &[0..8, 4..12], 1).unwrap_err();
    assert_invalid_config(e, "chunks", "0..8 and 4..12");
    // Valid arguments: a CUDA run, or CudaUnavailable where there is no driver.
    match shift(Baseline::Serial, 0, 1, &input, &mut output, &[0..8, 8..16], 1) {
        Ok(t) => assert!(t.wall_ns > 0),
        Err(e) => assert!(matches!(e, Error::CudaUnavailable { .. }), "{e:?}"),
    }
}

/// Baselines started together on several GPUs: a caller whose arguments are wrong (or
/// that has no GPU) still meets the others at the barrier, so none of them hangs.
#[test]
fn a_failing_party_of_shift_started_by_strands_no_one() {
    use chariot_studies::baseline::{shift_started_by, Baseline};
    with_timeout(DEADLINE_S, || {
        let s = sched(1, 1);
        let input = s.alloc_host::<u32>(64).unwrap();
        let mut outs = [s.alloc_host::<u32>(64).unwrap(), s.alloc_host::<u32>(64).unwrap()];
        let start = std::sync::Barrier::new(2);
        let results = std::thread::scope(|t| {
            let [a, b] = &mut outs;
            let (input, start) = (&input, &start);
            let bad = t.spawn(move || {
                shift_started_by(Baseline::BreadthFirst, 0, 0, input, a, std::slice::from_ref(&(0..8)), 1, start)
            });
            let good = t.spawn(move || {
                shift_started_by(Baseline::BreadthFirst, 0, 2, input, b, std::slice::from_ref(&(8..16)), 1, start)
            });
            [bad.join().unwrap(), good.join().unwrap()]
        });
        match &results[0] {
            Err(e) => assert!(matches!(e, Error::InvalidConfig { name: "streams", .. }), "{e:?}"),
            Ok(_) => panic!("0 streams accepted"),
        }
        match &results[1] {
            Ok(t) => assert!(t.wall_ns > 0),
            Err(e) => assert!(matches!(e, Error::CudaUnavailable { .. }), "{e:?}"),
        }
    });
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn baseline_on_a_missing_gpu_is_no_such_gpu() {
    use chariot_studies::baseline::{shift, Baseline};
    let s = Scheduler::builder().backend(Backend::Cuda).build().unwrap();
    let input = s.alloc_host::<u32>(64).unwrap();
    let mut output = s.alloc_host::<u32>(64).unwrap();
    let e = shift(Baseline::Serial, 99, 1, &input, &mut output, std::slice::from_ref(&(0..64)), 1).unwrap_err();
    assert!(matches!(e, Error::NoSuchGpu { ordinal: 99, backend: "cuda", .. }), "{e:?}");
}

/// The hand-written in-order pipeline, on its CPU-twin device: a bad plan is a `Setup`
/// error before any thread starts; a producer's or consumer's error or panic, or a
/// chunk that does not fit the plan, names the chunk.
#[test]
fn in_order_baseline_mistakes_are_typed_errors() {
    use chariot::kernel::LaunchShape;
    use chariot::BoxError;
    use chariot_studies::baseline::{
        in_order, DeviceArg, InOrderDevice, InOrderError, InOrderLaunch, InOrderPlan, Prepared,
    };
    with_timeout(DEADLINE_S, || {
        let k = Kernel::new("copy", "").params([Param::Buffer, Param::Buffer, Param::U32]).cpu_twin(|a| {
            let n = a.u32(2)? as usize;
            let (i, o) = a.in_out::<u32, u32>(0, 1)?;
            o[..n].copy_from_slice(&i[..n]);
            Ok(())
        });
        let plan = InOrderPlan {
            device: InOrderDevice::CpuTwin,
            streams: 2,
            readers: 1,
            chunks: 4,
            input_len: 8,
            output_len: 8,
            scratch_bytes: vec![],
            constants: vec![],
        };
        let shape = LaunchShape { grid: 1.into(), block: 8.into(), shared_bytes: 0 };
        let copy = |n: u32| InOrderLaunch { shape, args: vec![DeviceArg::Input, DeviceArg::Output, DeviceArg::U32(n)] };
        let good = |i: usize, buf: &mut [u32]| -> Result<Prepared<usize>, BoxError> {
            buf.fill(i as u32 + 1);
            Ok(Prepared { meta: i, input_len: 8, launches: vec![copy(8)], output_len: 8 })
        };
        let ok = |_: usize, _: usize, _: &[u32]| -> Result<(), BoxError> { Ok(()) };
        // The plan itself.
        for (name, bad) in [
            ("streams", InOrderPlan { streams: 0, ..plan.clone() }),
            ("readers", InOrderPlan { readers: 0, ..plan.clone() }),
            ("input_len", InOrderPlan { input_len: 0, ..plan.clone() }),
            ("output_len", InOrderPlan { output_len: usize::MAX, ..plan.clone() }),
            ("scratch_bytes", InOrderPlan { scratch_bytes: vec![16, 0], ..plan.clone() }),
        ] {
            match in_order(&k, &bad, good, ok) {
                Err(InOrderError::Setup(Error::InvalidConfig { name: n, .. })) => assert_eq!(n, name),
                other => panic!("{name}: expected Setup(InvalidConfig), got {other:?}"),
            }
        }
        // A valid run consumes every chunk in order.
        let mut seen = Vec::new();
        in_order(&k, &plan, good, |i, meta, out: &[u32]| {
            seen.push((i, meta, out[0]));
            Ok(())
        })
        .unwrap();
        assert_eq!(seen, (0..4).map(|i| (i, i, i as u32 + 1)).collect::<Vec<_>>());
        // Chunks that do not fit, producers and consumers that fail.
        let too_long = |i: usize, _: &mut [u32]| -> Result<Prepared<usize>, BoxError> {
            Ok(Prepared { meta: i, input_len: 9, launches: vec![copy(8)], output_len: 8 })
        };
        let wrong_args = |i: usize, _: &mut [u32]| -> Result<Prepared<usize>, BoxError> {
            Ok(Prepared {
                meta: i,
                input_len: 8,
                launches: vec![copy(8), InOrderLaunch { shape, args: vec![] }],
                output_len: 8,
            })
        };
        let fails_at_2 = |i: usize, buf: &mut [u32]| -> Result<Prepared<usize>, BoxError> {
            if i == 2 {
                return Err("no chunk 2".into());
            }
            good(i, buf)
        };
        let panics_at_1 = |i: usize, buf: &mut [u32]| -> Result<Prepared<usize>, BoxError> {
            assert!(i != 1, "producer panic at 1");
            good(i, buf)
        };
        for (what, produce, chunk) in [
            ("too long", &too_long as &(dyn Fn(usize, &mut [u32]) -> Result<Prepared<usize>, BoxError> + Sync), 0),
            ("wrong arguments", &wrong_args, 0),
            ("an error", &fails_at_2, 2),
            ("a panic", &panics_at_1, 1),
        ] {
            match in_order(&k, &plan, produce, ok) {
                Err(InOrderError::Produce { chunk: c, message }) => {
                    assert_eq!(c, chunk, "{what}: {message}");
                    assert!(!message.is_empty());
                }
                other => panic!("{what}: expected Produce for chunk {chunk}, got {other:?}"),
            }
        }
        let consume = |i: usize, _: usize, _: &[u32]| -> Result<(), BoxError> {
            if i == 3 {
                return Err("no room for chunk 3".into());
            }
            Ok(())
        };
        match in_order(&k, &plan, good, consume) {
            Err(InOrderError::Consume { chunk: 3, message }) => assert!(message.contains("no room"), "{message}"),
            other => panic!("expected Consume for chunk 3, got {other:?}"),
        }
    });
}

// ---------------------------------------------------------------------------------------
// Plots
// ---------------------------------------------------------------------------------------

#[test]
fn gantt_of_no_trace_is_an_error() {
    let path = std::env::temp_dir().join(format!("chariot-no-trace-{}.png", std::process::id()));
    // Flow events (dependency arrows) alone are nothing to draw, whatever their numbers.
    let flows = r#"{"traceEvents":[{"ph":"s","id":0,"pid":0,"tid":1,"ts":-1,"dur":-5},
        {"ph":"f","bp":"e","id":0,"pid":18446744073709551615,"tid":2,"ts":1e308}]}"#;
    for trace in ["", "[]", "{}", r#"{"traceEvents":3}"#, r#"{"traceEvents":[{"ph":"B"}]}"#, flows] {
        let e = chariot_studies::plot::gantt_from_trace(&path, "none", trace).unwrap_err();
        assert!(!e.is_empty(), "{trace}");
    }
    let e = chariot_studies::plot::line_chart(&path, "none", "x", "y", false, &[]).unwrap_err();
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
        let r = chariot_studies::plot::gantt_from_trace(&path, "hostile", &trace);
        assert!(r.is_err(), "{trace}: {r:?}");
    }
    std::fs::remove_file(&path).ok();
}

// ---------------------------------------------------------------------------------------
// The tools' command lines
// ---------------------------------------------------------------------------------------

/// Runs one of the crate's binaries (cargo's path for it; where the test executable was
/// copied elsewhere, as to the GPU machines, the binary of that name beside it); returns
/// its exit code and stderr.
fn run_tool(exe: &str, args: &[&std::ffi::OsStr]) -> (Option<i32>, String) {
    let mut path = std::path::PathBuf::from(exe);
    if !path.exists() {
        let beside = std::env::current_exe().ok().and_then(|t| Some(t.parent()?.join(path.file_name()?)));
        path = beside.filter(|p| p.exists()).unwrap_or(path);
    }
    let out = Command::new(&path).args(args).env("CHARIOT_BACKEND", "sim").output().expect("running the tool");
    (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
}

/// The demo's command line; chariot-align's cases are the test of the same name in
/// `crates/chariot-align/tests/bad_input.rs` (cargo gives a test the path of its own
/// package's binaries only).
#[test]
fn the_tools_refuse_bad_arguments_and_files() {
    let demo = env!("CARGO_BIN_EXE_chariot-demo");
    let os = |s: &'static str| std::ffi::OsStr::new(s);
    // Values out of range are clap's usage errors (exit code 2), naming the option.
    for (args, needle) in [(vec!["--chunks", "0"], "--chunks"), (vec!["--backend", "gpu"], "--backend")] {
        let args: Vec<_> = args.into_iter().map(os).collect();
        let (code, err) = run_tool(demo, &args);
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
    }
}
