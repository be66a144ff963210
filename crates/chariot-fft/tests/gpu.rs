//! The plans on a backend, checked element by element against rustfft applied along each
//! dimension: every shape on device buffers (planned ahead and in the GPU callback) and
//! on resident data at an offset. The sim runs it here; the CUDA run (cuFFT through the
//! runtime's context, stream and device addresses) is ignored without a GPU and runs on
//! the GPU machine with `--include-ignored`.

use chariot::callback::Resource;
use chariot::cuda::GpuContext;
use chariot::sim::SimProfile;
use chariot::{Backend, Scheduler};
use chariot_fft::{FftPlans, FftShape};
use num_complex::Complex32;
use rustfft::FftPlanner;

fn signal(n: usize, seed: f32) -> Vec<Complex32> {
    (0..n).map(|i| Complex32::new((i as f32 * 0.37 + seed).sin(), (i as f32 * 1.3 - seed).cos())).collect()
}

/// `count` transforms of `len` elements: element k of transform t at `start(t) + k·step`.
fn along(m: &mut [Complex32], count: usize, len: usize, start: impl Fn(usize) -> usize, step: usize) {
    let fft = FftPlanner::<f32>::new().plan_fft_forward(len);
    for t in 0..count {
        let mut v: Vec<Complex32> = (0..len).map(|k| m[start(t) + k * step]).collect();
        fft.process(&mut v);
        for (k, x) in v.into_iter().enumerate() {
            m[start(t) + k * step] = x;
        }
    }
}

/// What `shape` makes of `m`: its first `shape.elements()` elements transformed.
fn expected(m: &[Complex32], shape: FftShape) -> Vec<Complex32> {
    let mut r = m.to_vec();
    match shape {
        FftShape::Rows { len, batch } => along(&mut r, batch, len, |row| row * len, 1),
        FftShape::TwoD { rows, cols } => {
            along(&mut r, rows, cols, |row| row * cols, 1);
            along(&mut r, cols, rows, |col| col, cols);
        }
        FftShape::Columns { len, batch, stride } => along(&mut r, batch, len, |col| col, stride),
    }
    r
}

/// Every element within 1e-5·log2(n)·‖want‖∞ of its reference (single precision).
fn assert_close(got: &[Complex32], want: &[Complex32], what: &str) {
    let max = want.iter().map(|v| v.norm()).fold(0f32, f32::max).max(1.0);
    let tol = 1e-5 * (want.len().max(2) as f32).log2() * max;
    for (i, (a, b)) in got.iter().zip(want).enumerate() {
        assert!((a - b).norm() <= tol, "{what}: element {i}: {a} against {b} (tolerance {tol:.2e})");
    }
}

const SHAPES: [FftShape; 4] = [
    FftShape::Rows { len: 256, batch: 12 },
    FftShape::Rows { len: 1000, batch: 1 },
    FftShape::TwoD { rows: 64, cols: 48 },
    FftShape::Columns { len: 128, batch: 20, stride: 24 },
];

fn plans_match_rustfft_on(backend: Backend, gpus: usize, streams: usize) {
    let s = Scheduler::builder().backend(backend).gpus(gpus).streams(streams).build().unwrap();
    let plans = FftPlans::new(&s).unwrap();
    let cuda = GpuContext::of(&s, 0).is_some();
    assert_eq!(format!("{plans:?}").contains("\"cuda\""), cuda, "{plans:?}");
    // Each buffer is longer than its shape: the elements past it stay as they were.
    let len = SHAPES.iter().map(FftShape::elements).max().unwrap() + 7;
    let tasks = 3 * SHAPES.len();
    let mut host = s.alloc_host::<Complex32>(len * tasks).unwrap();
    let input = signal(len * tasks, 0.25);
    host.write().copy_from_slice(&input);
    let d = s.alloc::<Complex32>(len).unwrap();
    let offset = 5;
    for i in 0..tasks {
        let shape = SHAPES[i % SHAPES.len()];
        let r = i * len..(i + 1) * len;
        let t = s.task(i as u64, len as u64);
        if i < 2 * SHAPES.len() {
            // The first round plans ahead in a CPU callback, the second in the GPU callback.
            let (p1, p2, d2) = (plans.clone(), plans.clone(), d.clone());
            let t = if i < SHAPES.len() { t.callback(Resource::Cpu, move |info| p1.prepare(info, shape)) } else { t };
            t.download(&d, 0, &host, r.clone())
                .gpu_callback(move |call| p2.forward(call, &d2, shape))
                .readback(&host, r, &d, 0)
                .submit()
                .unwrap();
        } else {
            let buf = s.alloc_resident::<Complex32>(len).unwrap();
            let (p, b) = (plans.clone(), buf.clone());
            t.download(&buf, 0, &host, r.clone())
                .gpu_callback(move |call| p.forward_resident(call, &b, offset, shape))
                .readback(&host, r, &buf, 0)
                .submit()
                .unwrap();
        }
    }
    s.synchronize().unwrap();
    let out = host.read();
    for i in 0..tasks {
        let shape = SHAPES[i % SHAPES.len()];
        let r = i * len..(i + 1) * len;
        let mut want = input[r.clone()].to_vec();
        let at = if i < 2 * SHAPES.len() { 0 } else { offset };
        let part = expected(&want[at..], shape);
        want[at..].copy_from_slice(&part);
        assert_close(&out[r], &want, &format!("task {i}, {shape:?} at element {at}"));
    }
    if cuda {
        // One plan per (GPU, stream slot, shape) at most, and at least one per shape.
        let made = plans.len();
        assert!((SHAPES.len()..=gpus * streams * SHAPES.len()).contains(&made), "{made} plans");
    } else {
        assert!(plans.is_empty());
    }
    drop(plans);
    // Destroying the plans met no error (it would be in the next report's cleanup).
    let report = s.synchronize().unwrap();
    assert!(report.cleanup.is_empty(), "{:?}", report.cleanup);
}

#[test]
fn plans_match_rustfft_on_sim() {
    plans_match_rustfft_on(Backend::SimWith(SimProfile::instant().with_gpus(2)), 2, 2);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn plans_match_rustfft_on_gpu() {
    let gpus = Backend::cuda_devices().unwrap().min(2);
    plans_match_rustfft_on(Backend::Cuda, gpus, 2);
}
