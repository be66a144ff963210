//! The tiled Cholesky factorisation as a chariot task graph over device-resident tiles.
//!
//! The matrix lives in one resident buffer cut into one piece per tile
//! (`alloc_resident_pieces(tiling.len(), b²)`, the layout of [`Tiling`]). The batch is:
//!
//! * an upload task per tile (`download` of the tile from pinned host memory: a write of
//!   the tile);
//! * a task per tile operation of [`Plan`], declaring the tiles it reads (`reads`) and
//!   the one it updates (`reads_writes`), whose GPU callback runs cuSOLVER's
//!   `cusolverDnDpotrf` or cuBLAS's `cublasDtrsm`/`cublasDsyrk`/`cublasDgemm` on the
//!   task's stream with the tiles' addresses on the task's GPU (on the sim backend the
//!   same operation on the CPU, [`super::cpu::run_op`], on the simulated copy);
//! * a readback task per tile, submitted right after the operation that writes the
//!   tile last (a read of it), so that L comes back while the factorisation goes on.
//!
//! chariot infers every dependency from those declarations, tile by tile, and fetches a
//! tile a task reads from the GPU that wrote it when that is another one (D > 1). Each
//! task's granularity is its bottom level in flops (see [`super::plan`]), so that with
//! the largest-first order the ready task on the longest remaining chain goes first;
//! uploads get the level of the first operation that uses their tile, readbacks that of
//! the operation that finished it.

use super::plan::{granularity, Op, Plan};
use super::{cpu, Spd, Tiling};
use chariot::report::Report;
use chariot::{HostBuffer, Result, Scheduler};
use std::time::Instant;

/// The host side of one factorisation: A in tiles (pinned, written once) and room for L.
#[derive(Debug)]
pub struct TiledHost {
    /// The layout.
    pub tiling: Tiling,
    /// A's tiles ([`Tiling::len`] elements), the uploads' source.
    pub a: HostBuffer<f64>,
    /// L's tiles, the readbacks' destination (above the diagonal of the diagonal tiles:
    /// A's values).
    pub l: HostBuffer<f64>,
}

impl TiledHost {
    /// Allocates both buffers on `sched` and writes `spd`'s tiles into `a`.
    ///
    /// # Errors
    /// chariot's allocation errors.
    ///
    /// # Panics
    /// If `tiling` has another order than `spd`.
    pub fn new(sched: &Scheduler, spd: &Spd, tiling: Tiling) -> Result<TiledHost> {
        let mut a = sched.alloc_host::<f64>(tiling.len())?;
        spd.fill_tiles(&tiling, &mut a.write());
        let l = sched.alloc_host::<f64>(tiling.len())?;
        Ok(TiledHost { tiling, a, l })
    }
}

/// One factorisation's outcome.
#[derive(Debug)]
pub struct TiledRun {
    /// From the first submit to `synchronize`'s return, ns: uploads, factorisation and
    /// readbacks.
    pub wall_ns: u64,
    /// Tasks submitted.
    pub tasks: usize,
    /// chariot's report of the batch.
    pub report: Report,
}

impl TiledRun {
    /// GFLOP/s of order `n` (n³/3 flops) over the wall time.
    pub fn gflops(&self, n: usize) -> f64 {
        super::flops(n) / self.wall_ns.max(1) as f64
    }
}

/// The first element any tile of `op` has (the sim backend's view starts there).
fn lowest_offset(t: &Tiling, op: Op) -> usize {
    let (i, j) = op.writes();
    op.reads().into_iter().map(|(i, j)| t.offset(i, j)).fold(t.offset(i, j), usize::min)
}

/// Factorises `host.a` into `host.l` on `sched`: submits the batch described in the
/// module's documentation and waits for it. The scheduler must have no other unended
/// task (the batch's task ids start at 0).
///
/// # Errors
/// chariot's errors: allocation, a refused submit, or failed tasks (a library call that
/// failed, a tile that is not positive definite).
pub fn factor(sched: &Scheduler, host: &TiledHost) -> Result<TiledRun> {
    let t = host.tiling;
    let plan = Plan::new(t);
    let m = sched.alloc_resident_pieces::<f64>(t.len(), t.tile_len())?;
    let start = Instant::now();
    let mut id = 0u64;
    let mut next = || {
        id += 1;
        id - 1
    };
    // Uploads, the tiles needed first first.
    let mut tiles: Vec<usize> = (0..t.tiles()).collect();
    tiles.sort_by(|&x, &y| plan.first_use_level[y].total_cmp(&plan.first_use_level[x]).then(x.cmp(&y)));
    for &tile in &tiles {
        let (i, j) = t.position(tile);
        let r = t.range(i, j);
        sched.task(next(), granularity(plan.first_use_level[tile])).download(&m, r.start, &host.a, r).submit()?;
    }
    for (o, planned) in plan.ops.iter().enumerate() {
        let op = planned.op;
        let mut task = sched.task(next(), granularity(planned.bottom_level));
        for (i, j) in op.reads() {
            task = task.reads(&m, t.range(i, j));
        }
        let (wi, wj) = op.writes();
        task = task.reads_writes(&m, t.range(wi, wj));
        let m2 = m.clone();
        task.gpu_callback(move |call| {
            if call.cuda_stream().is_some() {
                crate::backend::cuda::cholesky::tile_op(call, &m2, &t, op)?;
            } else {
                let base = lowest_offset(&t, op);
                call.sim_resident(&m2, base, |x: &mut [f64]| cpu::run_op(&t, op, x, base))
                    .ok_or("no simulated copy of the tiles")??;
            }
            Ok(())
        })
        .submit()?;
        let tile = t.index(wi, wj);
        if plan.last_writer[tile] == o {
            let r = t.range(wi, wj);
            sched.task(next(), granularity(planned.bottom_level)).readback(&host.l, r.clone(), &m, r.start).submit()?;
        }
    }
    let report = sched.synchronize()?;
    let wall_ns = start.elapsed().as_nanos() as u64;
    Ok(TiledRun { wall_ns, tasks: id as usize, report })
}

/// Makes the library handles of every (GPU, stream slot) of `sched` and sizes their
/// POTRF workspaces for tiles of order `b`, so that a timed factorisation does not: a
/// few batches of GPU callbacks, until each GPU has run one (at most 32 batches); the
/// first callback on a GPU prepares all of its slots, on that GPU's dispatcher thread,
/// and holds the dispatcher until every GPU has had one (at most 5 s). Returns
/// the GPUs reached. The scheduler must have no unended task.
///
/// # Errors
/// chariot's errors, or a library call that failed.
pub fn warm_up(sched: &Scheduler, b: usize) -> Result<usize> {
    let (gpus, streams) = (sched.gpu_count(), sched.streams());
    let seen = std::sync::Arc::new(parking_lot::Mutex::new(std::collections::HashSet::new()));
    for _ in 0..32 {
        for id in 0..2 * (gpus * streams) as u64 {
            let seen = seen.clone();
            sched
                .task(id, 1)
                .gpu_callback(move |call| {
                    let gpu = call.info().gpu;
                    if !seen.lock().contains(&gpu) {
                        crate::backend::cuda::cholesky::warm(call, b, streams)?;
                        seen.lock().insert(gpu);
                        // Hold this GPU's dispatcher (up to 5 s) so that the other
                        // GPUs take the remaining tasks.
                        let until = Instant::now() + std::time::Duration::from_secs(5);
                        while seen.lock().len() < gpus && Instant::now() < until {
                            std::thread::sleep(std::time::Duration::from_millis(1));
                        }
                    }
                    Ok(())
                })
                .submit()?;
        }
        sched.synchronize()?;
        if seen.lock().len() >= gpus {
            break;
        }
    }
    let n = seen.lock().len();
    Ok(n)
}
