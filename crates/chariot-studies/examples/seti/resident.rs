//! Resident mode: where the matrix fits in GPU memory, it stays there between
//! the phases, so each byte crosses the link once each way, as in-core cuFFT's do, but
//! the copies overlap the transforms:
//!
//! * row task i downloads row block i into the resident matrix (one piece per block)
//!   and transforms its rows with cuFFT as soon as they arrive, while block i + 1 is
//!   still on its way;
//! * the column task, which reads and writes every block (so it runs after all row
//!   tasks), transforms the columns in place on the resident data (a strided cuFFT
//!   plan: `FftShape::Columns`);
//! * readback task i returns row block i (it runs after the column task) while the
//!   others are still being copied.
//!
//! The two-phase mode of `Pipeline` stays for matrices larger than GPU memory: its
//! data crosses the link twice. `compare` times this mode against in-core cuFFT,
//! alternated, and checks every result against rustfft.

use chariot::callback::Resource;
use chariot::report::Report;
use chariot::resident::ResidentBuffer;
use chariot::{Backend, HostBuffer, Order, Scheduler};
use chariot_fft::{FftPlans, FftShape};
use std::sync::Arc;

use crate::report::{median, ms};
use crate::run::in_core_on;
use crate::signal::check;
use crate::{err, C};

/// The matrix kept on the GPU, its plans and the scheduler (chariot's defaults).
pub(crate) struct Resident {
    pub(crate) matrix: ResidentBuffer<C>,
    pub(crate) plans: Arc<FftPlans>,
    pub(crate) sched: Scheduler,
}

impl Resident {
    /// For an x × y matrix in `n` row blocks on `gpus` GPUs.
    pub(crate) fn new(backend: &Backend, gpus: usize, x: usize, y: usize, n: usize) -> Result<Self, String> {
        let sched = Scheduler::builder().backend(backend.clone()).gpus(gpus).order(Order::Fcfs).build().map_err(err)?;
        let plans = FftPlans::new(&sched).map_err(err)?;
        let matrix = sched.alloc_resident_pieces::<C>(x * y, x * y / n).map_err(err)?;
        Ok(Resident { matrix, plans, sched })
    }

    /// The 2-D transform of `input` into `output`: N row tasks, a column task, N
    /// readback tasks, their order inferred from the pieces they use.
    pub(crate) fn run(
        &self,
        input: &HostBuffer<C>,
        output: &HostBuffer<C>,
        x: usize,
        y: usize,
        n: usize,
    ) -> Result<Report, String> {
        let h = y / n;
        let rows = FftShape::Rows { len: x, batch: h };
        let columns = FftShape::Columns { len: y, batch: x, stride: x };
        for i in 0..n {
            let r = i * h * x..(i + 1) * h * x;
            let (p1, p2, m) = (self.plans.clone(), self.plans.clone(), self.matrix.clone());
            self.sched
                .task(i as u64, (h * x) as u64)
                .callback(Resource::Cpu, move |info| p1.prepare(info, rows))
                .download(&self.matrix, r.start, input, r.clone())
                .gpu_callback(move |call| p2.forward_resident(call, &m, r.start, rows))
                .submit()
                .map_err(err)?;
        }
        let (p1, p2, m) = (self.plans.clone(), self.plans.clone(), self.matrix.clone());
        self.sched
            .task(n as u64, (x * y) as u64)
            .callback(Resource::Cpu, move |info| p1.prepare(info, columns))
            .reads_writes(&self.matrix, ..)
            .gpu_callback(move |call| p2.forward_resident(call, &m, 0, columns))
            .submit()
            .map_err(err)?;
        for i in 0..n {
            let r = i * h * x..(i + 1) * h * x;
            self.sched
                .task((n + 1 + i) as u64, (h * x) as u64)
                .readback(output, r.clone(), &self.matrix, r.start)
                .submit()
                .map_err(err)?;
        }
        self.sched.synchronize().map_err(err)
    }
}

/// Resident mode and in-core cuFFT, a warm-up each, then `repeat` runs of each,
/// alternated; every result checked against `reference`. Prints both medians and
/// returns CSV rows (`base(s, depth, way)` as the run's other rows).
#[allow(clippy::too_many_arguments)]
pub(crate) fn compare(
    backend: &Backend,
    input: &HostBuffer<C>,
    work: &mut HostBuffer<C>,
    reference: &[C],
    (x, y, n, repeat): (usize, usize, usize, usize),
    base: &dyn Fn(usize, usize, &str) -> String,
    threads: usize,
) -> Result<Vec<String>, String> {
    let resident = Resident::new(backend, 1, x, y, n)?;
    let incore = Scheduler::builder().backend(backend.clone()).streams(1).build().map_err(err)?;
    let incore_plans = FftPlans::new(&incore).map_err(err)?;
    let d = incore.alloc::<C>(x * y).map_err(err)?;
    let (mut t_res, mut t_in) = (Vec::new(), Vec::new());
    let (mut e_res, mut e_in) = (0f64, 0f64);
    for rep in 0..=repeat {
        // Alternate which goes first; the warm-up (rep 0) is not timed.
        for first in [rep % 2 == 0, rep % 2 != 0] {
            work.write().fill(C::default());
            if first {
                let r = resident.run(input, work, x, y, n)?;
                e_res = e_res.max(check(&work.read(), reference, x, y, threads).map_err(|e| format!("resident: {e}"))?);
                if rep > 0 {
                    t_res.push(r.makespan_ns);
                }
            } else {
                let r = in_core_on(&incore, &incore_plans, &d, input, work, x, y)?;
                e_in = e_in.max(check(&work.read(), reference, x, y, threads).map_err(|e| format!("in-core: {e}"))?);
                if rep > 0 {
                    t_in.push(r.makespan_ns);
                }
            }
        }
    }
    let (mr, mi) = (median(t_res.clone()), median(t_in.clone()));
    let list = |v: &[u64]| v.iter().map(|&t| format!("{:.3}", ms(t))).collect::<Vec<_>>().join(" ");
    println!(
        "\nresident mode (rows as they arrive, columns on the GPU, blocks back as they finish; S = {}): T = {:.3} ms \
         median of {} [{}]\nin-core cuFFT 2-D, same run, alternated: T = {:.3} ms [{}]; resident / in-core = {:.3}",
        resident.sched.streams(),
        ms(mr),
        t_res.len(),
        list(&t_res),
        ms(mi),
        list(&t_in),
        mr as f64 / mi.max(1) as f64
    );
    let s = resident.sched.streams();
    let depth = resident.sched.tuning().stage_depth;
    // The CSV's columns after `base`: t_ms first, rel_l2_error 16th, cpu_threads 19th.
    let row = |way: &str, s: usize, depth: usize, t: u64, e: f64| {
        let mut f = vec![String::new(); 21];
        (f[0], f[15], f[18]) = (format!("{:.4}", ms(t)), format!("{e:.3e}"), threads.to_string());
        format!("{},{}", base(s, depth, way), f.join(","))
    };
    Ok(vec![row("resident", s, depth, mr, e_res), row("incore_cufft2d_alternated", 1, 1, mi, e_in)])
}
