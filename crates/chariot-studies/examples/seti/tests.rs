//! The tests: the column kernel's twin and indexing, the signal, and whole runs on sim.

use chariot::sim::SimProfile;
use chariot::{Backend, Scheduler, Stage};
use chariot_fft::cpu_forward_2d;
use clap::Parser;

use crate::fft::{column_fft, column_tile, columns_twin, digit_reverse, log_lmax, pass_logs, ColumnKernel};
use crate::probes::{ColumnWork, Probes};
use crate::report::CSV_HEADER;
use crate::resident::Resident;
use crate::run::{in_core, run_all, validate};
use crate::shape::Shape;
use crate::signal::{check, check_peaks, error_bound, fill_signal, rel_l2};
use crate::{Cli, Pipeline, C};

fn reference(x: usize, y: usize, seed: u64) -> (Vec<C>, Vec<C>) {
    let mut m = vec![C::default(); x * y];
    fill_signal(&mut m, x, y, seed, 2);
    let mut r = m.clone();
    cpu_forward_2d(&mut r, y, x, 2);
    (m, r)
}

#[test]
fn column_algorithm_matches_rustfft_in_one_pass_and_many() {
    // A small largest radix forces several passes: (rows, log2 of the largest radix).
    let mut planner = rustfft::FftPlanner::<f32>::new();
    for (rows, log_lmax) in
        [(1, 11), (2, 11), (64, 11), (64, 3), (256, 2), (1024, 1), (512, 4), (8192, 10), (32768, 8), (2048, 11)]
    {
        let col: Vec<C> = (0..rows).map(|i| C::new((i as f32 * 0.37).sin(), (i as f32 * 1.3).cos())).collect();
        let mut expect = col.clone();
        planner.plan_fft_forward(rows).process(&mut expect);
        let (mut scratch, mut out) = (col.clone(), vec![C::new(f32::NAN, 0.0); rows]);
        column_fft(&mut scratch, &mut out, log_lmax);
        let e = rel_l2(&out, &expect, 1);
        assert!(e < 1e-5, "rows {rows}, largest radix 2^{log_lmax}: relative error {e:.2e}");
    }
}

#[test]
fn passes_split_the_column_evenly_and_digits_turn_around() {
    assert_eq!(pass_logs(0, 10), [0]);
    assert_eq!(pass_logs(10, 10), [10]);
    assert_eq!(pass_logs(13, 10), [7, 6]);
    assert_eq!(pass_logs(15, 8), [8, 7]);
    assert_eq!(pass_logs(21, 10), [7, 7, 7]);
    assert_eq!(pass_logs(22, 10), [8, 7, 7]);
    // λ = k0·2 + k1 with k0 of 2 bits, k1 of 1 (the last pass's 3 bits are not λ's).
    assert_eq!(digit_reverse((2 << 1) | 1, &[2, 1, 3]), 2 + 4);
    assert_eq!(digit_reverse(1 << 1, &[2, 1, 3]), 1);
    assert_eq!(digit_reverse(0, &[5]), 0);
    // Shared memory holds TILE values: the radix shrinks as the tile widens.
    assert_eq!((log_lmax(0), log_lmax(2), log_lmax(4)), (11, 10, 8));
    for (width, log2tile) in [(1, 0), (2, 1), (4, 2), (64, 2), (512, 2), (1024, 3), (2048, 4), (8192, 4)] {
        assert_eq!(column_tile(width), log2tile, "width {width}");
    }
}

#[test]
fn twin_transforms_every_column_of_a_block() {
    let mut planner = rustfft::FftPlanner::<f32>::new();
    let (width, rows) = (8, 2048);
    let input: Vec<C> = (0..width * rows).map(|i| C::new((i as f32 * 0.11).cos(), (i as f32 * 0.7).sin())).collect();
    for log2tile in [0, 3] {
        let mut out = vec![C::default(); width * rows];
        columns_twin(&input, &mut out, width, rows, log2tile);
        for c in 0..width {
            let mut expect: Vec<C> = (0..rows).map(|r| input[r * width + c]).collect();
            planner.plan_fft_forward(rows).process(&mut expect);
            let got: Vec<C> = (0..rows).map(|r| out[r * width + c]).collect();
            let e = rel_l2(&got, &expect, 1);
            assert!(e < 1e-5, "column {c}, tile 2^{log2tile}: relative error {e:.2e}");
        }
    }
}

#[test]
fn signal_is_reproducible_and_its_spectrum_has_the_tones() {
    let (a, r) = reference(64, 32, 7);
    let mut b = vec![C::default(); 64 * 32];
    fill_signal(&mut b, 64, 32, 7, 1);
    assert_eq!(a, b, "the signal must not depend on the thread count");
    check_peaks(&r, 64, 32).unwrap();
}

fn run_sim(x: usize, y: usize, n: usize, gpus: usize, streams: usize) {
    let backend = Backend::SimWith(SimProfile::instant());
    let owner = Scheduler::builder().backend(backend.clone()).build().unwrap();
    let (m, r) = reference(x, y, 11);
    let mut input = owner.alloc_host::<C>(x * y).unwrap();
    input.write().copy_from_slice(&m);
    let work = owner.alloc_host::<C>(x * y).unwrap();
    let shape = Shape { streams: Some(streams), depth: Some(1), ..Shape::AUTO };
    let p = Pipeline::new(&backend, gpus, shape, false, x, y, n).unwrap();
    let run = p.run(&input, &work, x, y, n).unwrap();
    assert_eq!(run.col.tasks + run.row.tasks, 2 * n);
    // Element by element against rustfft: |a − b| ≤ 1e-5·log2(xy)·‖b‖∞ plus the L2 bound.
    let out = work.read();
    let max = r.iter().map(|v| v.norm()).fold(0f32, f32::max);
    for (i, (a, b)) in out.iter().zip(&r).enumerate() {
        assert!((a - b).norm() <= error_bound(x, y) as f32 * max, "bin {i}: {a} against {b}");
    }
    check(&out, &r, x, y, 2).unwrap();
    // The input is untouched (the column phase reads it, writes `work`).
    assert_eq!(&input.read()[..], &m[..]);
}

#[test]
fn two_phase_matches_rustfft_on_sim_square() {
    run_sim(64, 64, 4, 1, 2);
}

#[test]
fn two_phase_matches_rustfft_on_sim_wide_two_gpus() {
    run_sim(256, 128, 8, 2, 3);
}

#[test]
fn in_core_matches_rustfft_on_sim() {
    let backend = Backend::SimWith(SimProfile::instant());
    let owner = Scheduler::builder().backend(backend.clone()).build().unwrap();
    let (x, y) = (128, 64);
    let (m, r) = reference(x, y, 3);
    let mut input = owner.alloc_host::<C>(x * y).unwrap();
    input.write().copy_from_slice(&m);
    let work = owner.alloc_host::<C>(x * y).unwrap();
    in_core(&backend, &input, &work, x, y, 1).unwrap();
    check(&work.read(), &r, x, y, 2).unwrap();
}

/// Resident mode: the matrix stays on the (simulated) GPUs between the phases; at D = 2
/// the column task fetches the row blocks the other GPU transformed.
#[test]
fn resident_mode_matches_rustfft_on_sim() {
    for (gpus, x, y, n) in [(1, 128, 64, 4), (2, 64, 128, 8)] {
        let backend = Backend::SimWith(SimProfile::h100().with_gpus(gpus).with_time_scale(0.0));
        let (m, r) = reference(x, y, 7);
        let res = Resident::new(&backend, gpus, x, y, n).unwrap();
        let mut input = res.sched.alloc_host::<C>(x * y).unwrap();
        input.write().copy_from_slice(&m);
        let work = res.sched.alloc_host::<C>(x * y).unwrap();
        for _ in 0..2 {
            let report = res.run(&input, &work, x, y, n).unwrap();
            check(&work.read(), &r, x, y, 2).unwrap_or_else(|e| panic!("D = {gpus}: {e}"));
            // Every readback runs after the column task, which runs after every row task.
            let last_row_end = report.records.iter().filter(|c| c.task.0 < n as u64).map(|c| c.end_ns).max().unwrap();
            let col = report.records.iter().filter(|c| c.task.0 == n as u64);
            assert!(col.clone().all(|c| c.start_ns >= last_row_end), "D = {gpus}: column task before a row task ended");
            let col_end = col.map(|c| c.end_ns).max().unwrap();
            assert!(report.records.iter().filter(|c| c.task.0 > n as u64).all(|c| c.start_ns >= col_end));
        }
    }
}

#[test]
fn whole_example_runs_on_sim() {
    let cli = Cli::parse_from([
        "seti",
        "--backend",
        "sim",
        "--sim-scale",
        "0",
        "--x",
        "64",
        "--y",
        "32",
        "--tasks",
        "4",
        "--streams",
        "2",
        "--repeat",
        "1",
        "--copies-only",
        "--diagnose",
    ]);
    let out = run_all(&cli).unwrap();
    // cpu, serial, pipelined, copies only (S = 1, 2), the diagnosis (14 kinds of
    // column work at S = 1, 2), resident and in-core alternated, in-core; each row has
    // every CSV column.
    assert_eq!(out.rows.len(), 8 + 28);
    let cols = CSV_HEADER.split(',').count();
    for r in &out.rows {
        assert_eq!(r.split(',').count(), cols, "{r}");
    }
    let diag: Vec<&String> = out.rows.iter().filter(|r| r.contains(",diag_")).collect();
    assert_eq!(diag.len(), 28);
    // 64 × 32 / 4 values a chunk: 2 chunks are 8 KiB, the small buffer 4 KiB.
    for name in [
        "copies",
        "copies+spin",
        "copies+touch8K",
        "copies+touch8K-cs",
        "copies+touch4K",
        "copies+strided",
        "copies+tiled",
        "copies+tiled-cs",
        "strided_alone",
        "tiled_alone",
        "tiled-cs_alone",
        "copies+tiled-cs_after_rows",
        "copies+tiled-cs_after_touch8K",
        "copies_after_touch8K",
    ] {
        assert_eq!(diag.iter().filter(|r| r.contains(&format!(",diag_{name},"))).count(), 2, "{name}");
    }
}

#[test]
fn diagnosis_runs_alone_and_each_column_work_leaves_its_result() {
    let cli = Cli::parse_from([
        "seti",
        "--backend",
        "sim",
        "--sim-scale",
        "0",
        "--x",
        "32",
        "--y",
        "64",
        "--tasks",
        "2",
        "--streams",
        "1",
        "--repeat",
        "1",
        "--diagnose-only",
    ]);
    assert_eq!(run_all(&cli).unwrap().rows.len(), 14);
    // What each kind of column work leaves in `work`: the column FFTs for every
    // kernel, the input for the copies with or without the waiting or touching kernel.
    let backend = Backend::SimWith(SimProfile::instant());
    let owner = Scheduler::builder().backend(backend.clone()).build().unwrap();
    let (x, y, n) = (32, 64, 2);
    let mut m = vec![C::default(); x * y];
    fill_signal(&mut m, x, y, 1, 1);
    let mut expect = vec![C::default(); x * y];
    columns_twin(&m, &mut expect, x, y, 0);
    let mut input = owner.alloc_host::<C>(x * y).unwrap();
    input.write().copy_from_slice(&m);
    let work = owner.alloc_host::<C>(x * y).unwrap();
    let mut p = Pipeline::new(&backend, 1, Shape::streams(2).or_depth(Some(1)), false, x, y, n).unwrap();
    let probes = Probes::new(&p, x * y / n).unwrap();
    for what in [
        ColumnWork::Fft(ColumnKernel::Tiled),
        ColumnWork::Fft(ColumnKernel::TiledStreaming),
        ColumnWork::Fft(ColumnKernel::Strided),
        ColumnWork::CopiesOnly,
        ColumnWork::Spin(1000),
        ColumnWork::Touch { values: x * y / n, streaming: true },
    ] {
        probes.columns(&mut p, what, &input, &work, x, y, n).unwrap();
        let want = if matches!(what, ColumnWork::Fft(_)) { &expect } else { &m };
        assert!(rel_l2(&work.read(), want, 1) < 1e-6, "{what:?}");
    }
    let r = probes.columns(&mut p, ColumnWork::KernelOnly(ColumnKernel::Tiled), &input, &work, x, y, n).unwrap();
    assert!(r.records.iter().all(|c| c.stage == Stage::Kernel), "no copies when the kernel runs alone");
}

#[test]
fn bad_arguments_are_refused() {
    let huge = (1usize << 32).to_string();
    for args in [
        &["seti", "--x", "100"][..],
        &["seti", "--tasks", "3"],
        &["seti", "--x", "16", "--tasks", "32"],
        &["seti", "--x", &huge, "--y", &huge],
    ] {
        assert!(validate(&Cli::parse_from(args)).is_err(), "{args:?}");
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn two_phase_and_in_core_match_rustfft_on_gpu() {
    let backend = Backend::Cuda;
    let owner = Scheduler::builder().backend(backend.clone()).build().unwrap();
    // 8192 rows: two passes of the tiled kernel (2^7 · 2^6 at 4 columns a block),
    // and the strided kernel's global DIF stage; 512 rows: one pass.
    for (x, y, n, s) in [(1024, 8192, 16, 2), (2048, 512, 8, 4)] {
        let (m, r) = reference(x, y, 5);
        let mut input = owner.alloc_host::<C>(x * y).unwrap();
        input.write().copy_from_slice(&m);
        let mut work = owner.alloc_host::<C>(x * y).unwrap();
        let mut p = Pipeline::new(&backend, 1, Shape::streams(s).or_depth(Some(1)), false, x, y, n).unwrap();
        let mut errors = Vec::new();
        for k in [ColumnKernel::Strided, ColumnKernel::Tiled, ColumnKernel::TiledStreaming] {
            work.write().fill(C::default());
            p.kernel = k;
            p.run(&input, &work, x, y, n).unwrap();
            let e = check(&work.read(), &r, x, y, 4).unwrap_or_else(|e| panic!("{} kernel: {e}", k.name()));
            errors.push(format!("{e:.2e} ({})", k.name()));
        }
        assert!(p.plans.len() <= s, "one plan per stream slot at most, got {}", p.plans.len());
        work.write().fill(C::default());
        in_core(&backend, &input, &work, x, y, 1).unwrap();
        let e2 = check(&work.read(), &r, x, y, 4).unwrap();
        let res = Resident::new(&backend, 1, x, y, n).unwrap();
        work.write().fill(C::default());
        res.run(&input, &work, x, y, n).unwrap();
        let e3 = check(&work.read(), &r, x, y, 4).unwrap();
        println!("{x} × {y}: two-phase error {}, in-core error {e2:.2e}, resident error {e3:.2e}", errors.join(", "));
    }
}
