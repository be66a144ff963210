//! The CPU transforms and the sim path of the plans, element by element against rustfft
//! applied along each dimension directly (no transpose, no shared helper).

use super::*;
use chariot::callback::Resource;
use chariot::sim::SimProfile;
use chariot::{Backend, Error, TaskId};

fn signal(n: usize, seed: f32) -> Vec<Complex32> {
    (0..n).map(|i| Complex32::new((i as f32 * 0.37 + seed).sin(), (i as f32 * 1.3 - seed).cos())).collect()
}

/// `len` transforms along a stride: element k of transform t at `start(t) + k·step`.
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

/// The 2-D transform of a `rows × cols` matrix: rustfft along every row, then along
/// every column gathered element by element.
fn reference_2d(m: &[Complex32], rows: usize, cols: usize) -> Vec<Complex32> {
    let mut r = m.to_vec();
    along(&mut r, rows, cols, |row| row * cols, 1);
    along(&mut r, cols, rows, |col| col, cols);
    r
}

/// Every element within 1e-5·log2(n)·‖want‖∞ of its reference (single precision).
fn assert_close(got: &[Complex32], want: &[Complex32], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: lengths");
    let max = want.iter().map(|v| v.norm()).fold(0f32, f32::max).max(1.0);
    let tol = 1e-5 * (want.len().max(2) as f32).log2() * max;
    for (i, (a, b)) in got.iter().zip(want).enumerate() {
        assert!((a - b).norm() <= tol, "{what}: element {i}: {a} against {b} (tolerance {tol:.2e})");
    }
}

#[test]
fn cpu_forward_2d_matches_rustfft_element_by_element() {
    for (rows, cols) in [(1, 1), (1, 16), (16, 1), (4, 8), (8, 4), (3, 5), (33, 100), (64, 48), (128, 256)] {
        let m = signal(rows * cols, rows as f32);
        let want = reference_2d(&m, rows, cols);
        for threads in [1, 3, 8] {
            let mut got = m.clone();
            cpu_forward_2d(&mut got, rows, cols, threads);
            assert_close(&got, &want, &format!("{rows} × {cols} on {threads} threads"));
        }
    }
}

#[test]
fn cpu_forward_2d_leaves_what_follows_the_matrix() {
    let (rows, cols) = (8, 8);
    let mut m = signal(rows * cols + 5, 2.0);
    let tail = m[rows * cols..].to_vec();
    cpu_forward_2d(&mut m, rows, cols, 2);
    assert_eq!(&m[rows * cols..], &tail[..]);
}

#[test]
fn transpose_puts_every_element_at_its_place() {
    for (rows, cols) in [(1, 1), (1, 70), (70, 1), (7, 100), (100, 7), (65, 33), (64, 64)] {
        let m: Vec<u32> = (0..(rows * cols) as u32).collect();
        for threads in [1, 2, 5, 64] {
            let mut t = vec![u32::MAX; rows * cols];
            transpose(&m, &mut t, rows, cols, threads);
            for r in 0..rows {
                for c in 0..cols {
                    assert_eq!(t[c * rows + r], m[r * cols + c], "{rows} × {cols}, {threads} threads, ({r}, {c})");
                }
            }
        }
    }
}

fn sim(gpus: usize, streams: usize) -> Scheduler {
    Scheduler::builder()
        .backend(Backend::SimWith(SimProfile::instant().with_gpus(gpus)))
        .gpus(gpus)
        .streams(streams)
        .build()
        .unwrap()
}

/// What `shape` makes of `m` (its first `shape.elements()` elements; the rest kept).
fn expected(m: &[Complex32], shape: FftShape) -> Vec<Complex32> {
    let mut r = m.to_vec();
    match shape {
        FftShape::Rows { len, batch } => along(&mut r, batch, len, |row| row * len, 1),
        FftShape::TwoD { rows, cols } => r[..rows * cols].copy_from_slice(&reference_2d(&m[..rows * cols], rows, cols)),
        FftShape::Columns { len, batch, stride } => along(&mut r, batch, len, |col| col, stride),
    }
    r
}

const SHAPES: [FftShape; 4] = [
    FftShape::Rows { len: 16, batch: 6 },
    FftShape::Rows { len: 12, batch: 1 },
    FftShape::TwoD { rows: 8, cols: 12 },
    FftShape::Columns { len: 8, batch: 5, stride: 7 },
];

#[test]
fn plans_on_sim_transform_device_buffers_as_rustfft_does() {
    let s = sim(2, 2);
    let plans = FftPlans::new(&s).unwrap();
    // Each task's buffer is longer than its shape: the elements past it stay as they were.
    let len = SHAPES.iter().map(FftShape::elements).max().unwrap() + 5;
    let d = s.alloc::<Complex32>(len).unwrap();
    let mut host = s.alloc_host::<Complex32>(len * SHAPES.len() * 2).unwrap();
    let input = signal(len * SHAPES.len() * 2, 0.5);
    host.write().copy_from_slice(&input);
    for (i, shape) in SHAPES.iter().chain(&SHAPES).copied().enumerate() {
        let r = i * len..(i + 1) * len;
        let (p1, p2, d2) = (plans.clone(), plans.clone(), d.clone());
        // Half the tasks plan ahead in a CPU callback; the others plan in the GPU callback.
        let t = s.task(i as u64, len as u64);
        let t = if i < SHAPES.len() { t.callback(Resource::Cpu, move |info| p1.prepare(info, shape)) } else { t };
        t.download(&d, 0, &host, r.clone())
            .gpu_callback(move |call| p2.forward(call, &d2, shape))
            .readback(&host, r, &d, 0)
            .submit()
            .unwrap();
    }
    s.synchronize().unwrap();
    let out = host.read();
    for (i, shape) in SHAPES.iter().chain(&SHAPES).enumerate() {
        let r = i * len..(i + 1) * len;
        assert_close(&out[r.clone()], &expected(&input[r], *shape), &format!("task {i}, {shape:?}"));
    }
    assert!(plans.is_empty(), "the sim makes no cuFFT plans");
}

#[test]
fn plans_on_sim_transform_resident_data_at_an_offset() {
    let s = sim(2, 2);
    let plans = FftPlans::new(&s).unwrap();
    let (offset, span) = (3, SHAPES.iter().map(FftShape::elements).max().unwrap());
    let len = offset + span + 4;
    let mut host = s.alloc_host::<Complex32>(len * SHAPES.len()).unwrap();
    let input = signal(len * SHAPES.len(), 1.5);
    host.write().copy_from_slice(&input);
    for (i, shape) in SHAPES.iter().copied().enumerate() {
        let buf = s.alloc_resident::<Complex32>(len).unwrap();
        let r = i * len..(i + 1) * len;
        let (p, b) = (plans.clone(), buf.clone());
        s.task(i as u64, len as u64)
            .download(&buf, 0, &host, r.clone())
            .gpu_callback(move |call| p.forward_resident(call, &b, offset, shape))
            .readback(&host, r, &buf, 0)
            .submit()
            .unwrap();
    }
    s.synchronize().unwrap();
    let out = host.read();
    for (i, shape) in SHAPES.iter().enumerate() {
        let r = i * len..(i + 1) * len;
        let mut want = input[r.clone()].to_vec();
        let part = expected(&want[offset..], *shape);
        want[offset..].copy_from_slice(&part);
        assert_close(&out[r], &want, &format!("resident, {shape:?}"));
    }
}

#[test]
fn shapes_past_the_data_or_empty_are_refused() {
    let s = sim(1, 1);
    let plans = FftPlans::new(&s).unwrap();
    let info = CallInfo { task: TaskId(0), gpu: 0, stream: 0 };
    for bad in [
        FftShape::Rows { len: 4, batch: 0 },
        FftShape::TwoD { rows: 0, cols: 4 },
        FftShape::Columns { len: 4, batch: 8, stride: 7 },
        FftShape::Columns { len: 0, batch: 1, stride: 1 },
    ] {
        let e = plans.prepare(&info, bad).unwrap_err();
        assert!(e.to_string().contains("empty FFT shape"), "{bad:?}: {e}");
    }
    let buf = s.alloc_resident::<Complex32>(32).unwrap();
    let (p, b) = (plans.clone(), buf.clone());
    s.task(1, 1)
        .reads_writes(&buf, ..)
        .gpu_callback(move |call| p.forward_resident(call, &b, 20, FftShape::Rows { len: 16, batch: 1 }))
        .submit()
        .unwrap();
    // Undeclared: the task may not reach the buffer.
    let (p, b) = (plans.clone(), buf.clone());
    s.task(2, 1)
        .gpu_callback(move |call| p.forward_resident(call, &b, 0, FftShape::Rows { len: 16, batch: 1 }))
        .submit()
        .unwrap();
    let Err(Error::TasksFailed { mut failures, .. }) = s.synchronize() else { panic!("expected TasksFailed") };
    failures.sort_by_key(|f| f.task);
    assert_eq!(failures.len(), 2, "{failures:?}");
    assert!(
        failures[0].message.contains("FFT of 16 elements at element 20 of a resident buffer of 32"),
        "{}",
        failures[0].message
    );
    assert!(failures[1].message.contains("neither a CUDA stream nor a simulated copy"), "{}", failures[1].message);
}

#[test]
fn plans_say_their_backend_and_count() {
    let s = sim(1, 1);
    let plans = FftPlans::new(&s).unwrap();
    assert_eq!(format!("{plans:?}"), "FftPlans { backend: \"sim\", plans: 0 }");
    assert!(plans.is_empty());
    assert!(plans.contexts.is_empty(), "no CUDA context on the sim");
}
