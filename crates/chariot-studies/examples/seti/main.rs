//! The SETI spectrometer of the paper (Fig. 1, §6.3): the 2-D FFT of a complex
//! matrix in pinned host memory, in two phases of N tasks, streamed through the GPUs
//! chunk by chunk, so the matrix is bounded by host memory, not by GPU memory.
//!
//! * Column phase: task i downloads columns i·x/N.. of all y rows (`download_2d`), runs
//!   our column-FFT kernel (`kernels/fft_columns.cu`: a block per tile of adjacent
//!   columns, so that every warp access reads whole rows of the tile; radix-2 in shared
//!   memory, one global round trip per pass; cache-streaming loads and stores, because
//!   ordinary L2 traffic of that size slows the pitched copies that follow it by 68%,
//!   results/nvidia-h100-x1/seti/README.md) and writes the block back (`readback_2d`).
//! * Row phase: task i takes y/N contiguous rows (`download`); a CPU callback makes or
//!   finds the cuFFT plan of its GPU and stream slot, a GPU callback runs the batched
//!   C2C transform on the task's stream, `readback` returns the rows.
//!
//! Alongside, in the same run: serial (S = 1, no overlap), the in-core way (upload the
//! whole matrix, one cuFFT 2-D plan, download) and rustfft on all CPU cores, which is
//! also the reference every result is checked against. `--diagnose` runs the column
//! phase alone with other work between its copies (none, a kernel that only waits, a
//! kernel that only moves data, each column kernel) and after other work (the row
//! phase), to find what slows it.
//!
//! `cargo run --release --example seti -- --help`
//!
//! This file holds the command line and the two phases as chariot tasks (`Pipeline`,
//! the loop of Fig. 1); `fft` the column kernels and their CPU twin, `signal` the input
//! and the checks, `shape` the configurations, `bounds` the rate probes and bounds,
//! `probes` the diagnosis's kernels and its variants of the phases, `diagnose` the
//! `--diagnose` study, `run` a whole run (`run_all`) step by step, `report` the tables'
//! arithmetic and the CSV, `resident` the mode that keeps the matrix on the GPU between
//! the phases (task graphs and resident data) and its comparison with in-core cuFFT.

mod bounds;
mod diagnose;
mod fft;
mod probes;
mod report;
mod resident;
mod run;
mod shape;
mod signal;
#[cfg(test)]
mod tests;

use chariot::callback::Resource;
use chariot::kernel::KernelHandle;
use chariot::report::Report;
use chariot::{Arg, Backend, Copy2d, DeviceBuffer, HostBuffer, Order, Scheduler};
use chariot_fft::{FftPlans, FftShape};
use clap::Parser;
use num_complex::Complex32;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use crate::fft::{column_block, column_kernel, column_tile, strided_kernel, ColumnKernel, TILED_THREADS};
use crate::report::append_csv;
use crate::run::run_all;
use crate::shape::Shape;

pub(crate) type C = Complex32;

/// Two-phase 2-D FFT of an x × y complex matrix streamed through D GPUs × S streams,
/// against serial, in-core cuFFT and rustfft on the CPU.
#[derive(Parser, Debug, Clone)]
#[command(name = "seti", long_about = None)]
pub(crate) struct Cli {
    /// Columns x (power of two).
    #[arg(long, default_value_t = 8192)]
    pub(crate) x: usize,
    /// Rows y (power of two).
    #[arg(long, default_value_t = 8192)]
    pub(crate) y: usize,
    /// Tasks per phase N (power of two, at most x and y).
    #[arg(long, default_value_t = 16)]
    pub(crate) tasks: usize,
    /// GPUs D.
    #[arg(long, default_value_t = 1)]
    pub(crate) gpus: usize,
    /// Pipelined configurations to run, comma-separated: `auto` (chariot's defaults,
    /// chosen from the hardware), or S with, where given, the stage depth and kernel
    /// concurrency (a count, or `f` and GPU-fills) set by hand, `S[:DEPTH[:KERNELS]]`
    /// (e.g. `4`, `4:2`, `8:2:1`, `16:2:f2`; all three set: no adaptation). The serial
    /// baseline (S = 1) always runs first.
    #[arg(long, value_delimiter = ',', default_value = "auto")]
    pub(crate) streams: Vec<Shape>,
    /// Stage depth of the configurations that give none (default: chariot's choice).
    #[arg(long)]
    pub(crate) depth: Option<usize>,
    /// Timed repetitions of each configuration after one warm-up, alternated between
    /// the configurations; the median is reported.
    #[arg(long, default_value_t = 3)]
    pub(crate) repeat: usize,
    /// Column kernel of the two-phase runs: tiled (a block per tile of adjacent
    /// columns), tiled-cs (the same with cache-streaming loads and stores) or strided
    /// (the first kernel, a block per column).
    #[arg(long, default_value = "tiled-cs", value_parser = ["tiled", "tiled-cs", "strided"])]
    pub(crate) kernel: String,
    /// Backend: auto, cuda or sim.
    #[arg(long, default_value = "auto", value_parser = ["auto", "cuda", "sim"])]
    pub(crate) backend: String,
    /// On sim: modeled time at this factor of the modeled H100 (0: no modeled time).
    #[arg(long, default_value_t = 1.0)]
    pub(crate) sim_scale: f64,
    /// Skip the in-core cuFFT 2-D comparison.
    #[arg(long)]
    pub(crate) no_incore: bool,
    /// Skip resident mode (the matrix kept on the GPU between the phases) and its
    /// comparison with in-core cuFFT, alternated.
    #[arg(long)]
    pub(crate) no_resident: bool,
    /// Also run each S with the same copies and no FFT at all (diagnosis: what the
    /// copies alone cost in the pipeline).
    #[arg(long)]
    pub(crate) copies_only: bool,
    /// Diagnosis of the column phase, run alone for each S: its copies with nothing
    /// between them; with a kernel that waits as long as the strided kernel and touches
    /// no memory; with a kernel that reads and rewrites a buffer the copies never use
    /// (2 chunks or 4 MiB, plain or cache-streaming); with each column kernel; and each
    /// column kernel with no copies (on device-resident data); and the tiled-cs phase
    /// after the row phase or after the plain touching kernel. Prints the makespan, the
    /// median command of each stage (each task's copies after other work), and the
    /// pitches of the 2-D copies.
    #[arg(long)]
    pub(crate) diagnose: bool,
    /// Run the diagnosis alone: no rustfft reference, copy-rate probe, two-phase runs,
    /// in-core run or checks.
    #[arg(long)]
    pub(crate) diagnose_only: bool,
    /// Timestamp commands on the device (chariot's `device_timing`) in every scheduler of
    /// the run; it serialises streams, so use it for command times, not makespans.
    #[arg(long)]
    pub(crate) device_timing: bool,
    /// CPU threads for rustfft (default: every core).
    #[arg(long)]
    pub(crate) cpu_threads: Option<usize>,
    /// Directory for seti.csv (appended to; created if missing).
    #[arg(long)]
    pub(crate) out: Option<PathBuf>,
    /// Seed of the noise.
    #[arg(long, default_value_t = 2013)]
    pub(crate) seed: u64,
}

fn main() -> ExitCode {
    match real_main(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn real_main(cli: Cli) -> Result<(), String> {
    let out = run_all(&cli)?;
    if let Some(dir) = &cli.out {
        append_csv(dir, out.rows)?;
    }
    Ok(())
}

// ---------------------------------------------------------------------------------
// The two phases.

/// What one scheduler needs for the two-phase FFT.
///
/// Fields drop in order: the buffers and plans before the scheduler, whose shutdown
/// returns the buffers' memory to the driver.
pub(crate) struct Pipeline {
    pub(crate) d_in: DeviceBuffer<C>,
    pub(crate) d_out: DeviceBuffer<C>,
    pub(crate) plans: Arc<FftPlans>,
    pub(crate) tiled: KernelHandle,
    pub(crate) strided: KernelHandle,
    pub(crate) sched: Scheduler,
    /// The column phase's kernel (tiled, cache-streaming, unless changed).
    pub(crate) kernel: ColumnKernel,
}

pub(crate) fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

/// The shape of column task `i`'s 2-D copies: columns i·w.. of all y rows, packed w wide
/// on the device.
pub(crate) fn column_copy(i: usize, w: usize, x: usize, y: usize) -> Copy2d {
    Copy2d { host_offset: i * w, host_pitch: x, dev_offset: 0, dev_pitch: w, width: w, height: y }
}

impl Pipeline {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        backend: &Backend,
        gpus: usize,
        shape: Shape,
        device_timing: bool,
        x: usize,
        y: usize,
        n: usize,
    ) -> Result<Self, String> {
        let builder =
            Scheduler::builder().backend(backend.clone()).gpus(gpus).device_timing(device_timing).order(Order::Fcfs);
        let sched = shape.builder(builder).build().map_err(|e| format!("{}: {e}", shape.name()))?;
        let chunk = x * y / n;
        let tiled = sched.register_kernel(column_kernel()).map_err(err)?;
        let strided = sched.register_kernel(strided_kernel()).map_err(err)?;
        let plans = FftPlans::new(&sched).map_err(err)?;
        let d_in = sched.alloc::<C>(chunk).map_err(err)?;
        let d_out = sched.alloc::<C>(chunk).map_err(err)?;
        Ok(Pipeline { d_in, d_out, plans, tiled, strided, sched, kernel: ColumnKernel::TiledStreaming })
    }

    /// Adds the launch of column kernel `k` on the `y` rows of `w` columns of `d_in` to `t`.
    pub(crate) fn launch_columns<'a>(
        &self,
        t: chariot::TaskBuilder<'a>,
        k: ColumnKernel,
        w: usize,
        y: usize,
    ) -> chariot::TaskBuilder<'a> {
        let mut args = vec![
            Arg::buffer(&self.d_out),
            Arg::buffer(&self.d_in),
            Arg::u32(w as u32),
            Arg::u32(y as u32),
            Arg::u32(y.trailing_zeros()),
        ];
        match k {
            ColumnKernel::Tiled | ColumnKernel::TiledStreaming => {
                let lt = column_tile(w);
                args.push(Arg::u32(lt));
                args.push(Arg::u32(u32::from(k == ColumnKernel::TiledStreaming)));
                t.launch(&self.tiled, (w >> lt) as u32, TILED_THREADS, 0, &args)
            }
            ColumnKernel::Strided => t.launch(&self.strided, w as u32, column_block(y), 0, &args),
        }
    }

    /// The column phase: task i downloads its columns of `input`, transforms them with
    /// the column kernel and writes them to `work`.
    pub(crate) fn columns(
        &self,
        input: &HostBuffer<C>,
        work: &HostBuffer<C>,
        x: usize,
        y: usize,
        n: usize,
    ) -> Result<Report, String> {
        let w = x / n;
        for i in 0..n {
            let shape = column_copy(i, w, x, y);
            let t = self.sched.task(i as u64, (w * y) as u64).download_2d(&self.d_in, input, shape);
            let t = self.launch_columns(t, self.kernel, w, y);
            t.readback_2d(work, &self.d_out, shape).submit().map_err(err)?;
        }
        self.sched.synchronize().map_err(err)
    }

    /// The row phase: row FFTs of `work` in place, cuFFT through the plan cache (the CPU
    /// callback makes or finds the plan, so the GPU callback only enqueues it).
    pub(crate) fn rows(&self, work: &HostBuffer<C>, x: usize, y: usize, n: usize) -> Result<Report, String> {
        let h = y / n;
        let shape = FftShape::Rows { len: x, batch: h };
        for i in 0..n {
            let r = i * h * x..(i + 1) * h * x;
            let (p1, p2, d) = (self.plans.clone(), self.plans.clone(), self.d_in.clone());
            self.sched
                .task((n + i) as u64, (h * x) as u64)
                .callback(Resource::Cpu, move |info| p1.prepare(info, shape))
                .download(&self.d_in, 0, work, r.clone())
                .gpu_callback(move |call| p2.forward(call, &d, shape))
                .readback(work, r, &self.d_in, 0)
                .submit()
                .map_err(err)?;
        }
        self.sched.synchronize().map_err(err)
    }

    /// Both phases; (column report, row report, wall time of both).
    pub(crate) fn run(
        &self,
        input: &HostBuffer<C>,
        work: &HostBuffer<C>,
        x: usize,
        y: usize,
        n: usize,
    ) -> Result<Run, String> {
        let t0 = Instant::now();
        let col = self.columns(input, work, x, y, n)?;
        let row = self.rows(work, x, y, n)?;
        Ok(Run { wall_ns: t0.elapsed().as_nanos() as u64, col, row })
    }
}

#[derive(Clone)]
pub(crate) struct Run {
    pub(crate) wall_ns: u64,
    pub(crate) col: Report,
    pub(crate) row: Report,
}

impl Run {
    /// T: both phases' makespans.
    pub(crate) fn t_ns(&self) -> u64 {
        self.col.makespan_ns + self.row.makespan_ns
    }
}
