//! The tiled Cholesky factorisation as a chariot task graph over device-resident tiles.
//!
//! The matrix lives in one resident buffer cut into one piece per tile
//! (`alloc_resident_pieces(tiling.len(), b²)`, the layout of [`Tiling`]). The batch is:
//!
//! * an upload task per tile (`download` of the tile from pinned host memory: a write of
//!   the tile);
//! * a task per tile operation of [`Plan`], declaring the tiles it reads (`reads`) and
//!   the one it updates (`reads_writes`), whose GPU callback runs cuSOLVER's
//!   `cusolverDnDpotrf` or cuBLAS's `cublasDtrsm`/`cublasDtrmm`/`cublasDsyrk`/
//!   `cublasDgemm` on the task's stream (those on the path to the next step, POTRF,
//!   INVERSE and a step's first TRSM: [`Op::on_the_path`], on a high-priority stream
//!   forked from it) with the tiles' addresses on the task's GPU
//!   (on the sim backend the same operation on the CPU, [`super::cpu::run_op`], on the
//!   simulated copy);
//! * with [`Trsm::Inverse`], an INVERSE task a step writes L_kk⁻¹ into the step's
//!   inverse tile, after the blocks in the same resident buffer, and the step's TRSM
//!   tasks read that tile in place of L_kk (a multiply, not a solve);
//! * a readback task per tile, submitted right after the operation that writes the
//!   tile last (a read of it), so that L comes back while the factorisation goes on.
//!
//! chariot infers every dependency from those declarations, tile by tile, and fetches a
//! tile a task reads from the GPU that wrote it when that is another one (D > 1). Each
//! task's granularity is its bottom level in flops (see [`super::plan`]), so that with
//! the largest-first order the ready task on the longest remaining chain goes first.
//! The uploads go up in the [`Uploads`] order (by default row by row, the leading
//! blocks first, on one GPU; by first use on more), their granularities the first-use
//! levels, highest first, dealt out in that order; the readbacks get the level of the
//! operation that finished their tile.
//!
//! Where the tasks run at D > 1 is the [`Layout`]'s: by their data (the runtime's rule:
//! a ready task goes to the GPU holding most of what it reads), or MUSTARD's 2-D
//! block-cyclic layout, each task placed (`TaskBuilder::prefer_gpu`) on the owner of the
//! tile it writes.

use super::plan::{granularity, Op, Plan, Trsm};
use super::{cpu, Spd, Tile, Tiling};
use chariot::report::Report;
use chariot::resident::ResidentBuffer;
use chariot::{HostBuffer, Result, Scheduler, Stage, TaskBuilder};
use std::time::Instant;

/// Where the factorisation's tasks run at D > 1. The default is the block-cyclic
/// layout: on two H200s it ran 1.00–1.20× the data rule's speed at N = 16 k and 32 k
/// with tiles of 1,024 and 2,048 (`results/nvidia-h200-x2/2026-11-28-cholesky-layouts/`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Layout {
    /// The runtime's rule: a ready task goes to the GPU holding most of what it reads.
    Data,
    /// MUSTARD's 2-D block-cyclic layout over a P × Q grid of the D GPUs (P the largest
    /// divisor of D not above √D): tile (i, j) is owned by GPU (i mod P)·Q + (j mod Q),
    /// and the upload, the operations and the readback of a tile are placed there.
    #[default]
    BlockCyclic,
}

impl Layout {
    /// The GPU that owns tile (`i`, `j`) among `d`, where the layout places tasks.
    pub fn owner(self, i: usize, j: usize, d: usize) -> Option<usize> {
        match self {
            Layout::Data => None,
            Layout::BlockCyclic if d < 2 => None,
            Layout::BlockCyclic => {
                let p = (1..=d).filter(|p| d % p == 0 && p * p <= d).max().unwrap_or(1);
                let q = d / p;
                Some((i % p) * q + j % q)
            }
        }
    }
}

/// The order in which the tiles go up to their GPU (each GPU its own, under a layout).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Uploads {
    /// [`Uploads::Rows`] on one GPU, [`Uploads::FirstUse`] on more: what measured
    /// fastest at each. On one H200 with the copies counted, rows took 34.1–34.2 ms at
    /// N = 16 k (b = 2,048) against 37.1–37.5 by first use, 8.9 against 9.8–10.0 at
    /// 8 k, 230.6 against 236.2 at 32 k
    /// (`results/nvidia-h200/2026-12-01-cholesky-upload-order/`). On two H200s at
    /// 32 k, block-cyclic, rows ran 2 % slower (131.6 against 129.0 ms, medians of six
    /// runs in two processes; `results/nvidia-h200-x2/2026-12-01-cholesky-upload-order-d2/`).
    #[default]
    Auto,
    /// By the bottom level of the first operation that touches the tile, highest
    /// first: column by column, roughly, each column's tiles by their row.
    FirstUse,
    /// Row by row, each row from its first column. Once rows 0 to r are up, the whole
    /// factorisation of the leading (r + 1)·b block can run: about (r + 1)³/3 tile
    /// operations' worth for (r + 1)²/2 tiles. By columns, the first columns' tiles
    /// carry only a POTRF and TRSMs, so the operations wait for the uploads longer.
    Rows,
}

impl Uploads {
    /// Its name on the command line: `auto`, `first-use` or `rows`.
    pub fn name(self) -> &'static str {
        match self {
            Uploads::Auto => "auto",
            Uploads::FirstUse => "first-use",
            Uploads::Rows => "rows",
        }
    }

    /// The order it gives at `d` GPUs: never [`Uploads::Auto`].
    pub fn at(self, d: usize) -> Uploads {
        match self {
            Uploads::Auto if d > 1 => Uploads::FirstUse,
            Uploads::Auto => Uploads::Rows,
            other => other,
        }
    }
}

/// How one factorisation is done.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Options {
    /// Where its tasks run at D > 1.
    pub layout: Layout,
    /// How its TRSMs are done.
    pub trsm: Trsm,
    /// The order of its uploads.
    pub uploads: Uploads,
}

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
    /// readbacks (the tiles' device memory allocated before: [`alloc_tiles`]).
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

/// Where a run's time went, from its report: each stage's busy time (the union of
/// its commands' intervals on all GPUs: some GPU copying up, some GPU computing, some
/// GPU copying down) and when each began and ended, in ns from the run's first
/// command. What the copies cost a factorisation is what of them the tile operations
/// did not hide: `compute_start_ns` (before the first operation), the idle time
/// within the operations' span (`compute_end_ns − compute_start_ns −
/// compute_busy_ns`), and `end_ns − compute_end_ns` (the readbacks after the last).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Timeline {
    /// The uploads' busy time (the download stage's: at D > 1 with the fetches of
    /// tiles from another GPU).
    pub upload_busy_ns: u64,
    /// When the last upload (or fetch) ended.
    pub upload_end_ns: u64,
    /// The tile operations' busy time (some operation running on some GPU).
    pub compute_busy_ns: u64,
    /// When the first operation started.
    pub compute_start_ns: u64,
    /// When the last operation ended.
    pub compute_end_ns: u64,
    /// The readbacks' busy time.
    pub readback_busy_ns: u64,
    /// When the last command ended.
    pub end_ns: u64,
}

impl Timeline {
    /// The timeline of `report`'s batch (all zeros without a command).
    pub fn of(report: &Report) -> Timeline {
        Timeline::of_gpus(report, None)
    }

    /// The timeline of GPU `gpu`'s commands in `report`'s batch, its times counted from
    /// the batch's first command on any GPU (all zeros where the GPU ran none).
    pub fn of_gpu(report: &Report, gpu: usize) -> Timeline {
        Timeline::of_gpus(report, Some(gpu))
    }

    fn of_gpus(report: &Report, gpu: Option<usize>) -> Timeline {
        let origin = report.records.iter().map(|r| r.start_ns).min().unwrap_or(0);
        let mine = |r: &&chariot::report::CommandRecord| gpu.is_none_or(|g| r.gpu as usize == g);
        let of_stage = |stage: Stage| {
            let mut spans: Vec<(u64, u64)> = report
                .records
                .iter()
                .filter(mine)
                .filter(|r| r.stage == stage)
                .map(|r| (r.start_ns - origin, r.end_ns.max(r.start_ns) - origin))
                .collect();
            spans.sort_unstable();
            let (mut busy, mut reach) = (0u64, 0u64);
            for &(s, e) in &spans {
                busy += e.saturating_sub(s.max(reach));
                reach = reach.max(e);
            }
            let first = spans.first().map_or(0, |s| s.0);
            (busy, first, reach)
        };
        let (upload_busy_ns, _, upload_end_ns) = of_stage(Stage::Download);
        let (compute_busy_ns, compute_start_ns, compute_end_ns) = of_stage(Stage::Kernel);
        let (readback_busy_ns, _, readback_end) = of_stage(Stage::Readback);
        Timeline {
            upload_busy_ns,
            upload_end_ns,
            compute_busy_ns,
            compute_start_ns,
            compute_end_ns,
            readback_busy_ns,
            end_ns: upload_end_ns.max(compute_end_ns).max(readback_end),
        }
    }
}

/// The first element any tile of `op` has (the sim backend's view starts there).
fn lowest_offset(t: &Tiling, op: Op) -> usize {
    op.reads().into_iter().map(|tile| t.tile_range(tile).start).fold(t.tile_range(op.writes()).start, usize::min)
}

/// Factorises `host.a` into `host.l` on `sched`: submits the batch described in the
/// module's documentation, done the [`Options::default`] way, and waits for it. The
/// scheduler must have no other unended task (the batch's task ids start at 0).
///
/// # Errors
/// chariot's errors: allocation, a refused submit, or failed tasks (a library call that
/// failed, a tile that is not positive definite).
pub fn factor(sched: &Scheduler, host: &TiledHost) -> Result<TiledRun> {
    factor_with(sched, host, Options::default())
}

/// [`factor`] done the `how` way.
///
/// # Errors
/// As [`factor`].
pub fn factor_with(sched: &Scheduler, host: &TiledHost, how: Options) -> Result<TiledRun> {
    let plan = Plan::new(host.tiling, how.trsm);
    let m = alloc_tiles(sched, host.tiling, how.trsm)?;
    let start = Instant::now();
    for (id, step) in steps(&plan, how.uploads.at(sched.gpu_count())).into_iter().enumerate() {
        submit_step(sched, host, &plan, &m, how.layout, id as u64, step)?;
    }
    let report = sched.synchronize()?;
    let wall_ns = start.elapsed().as_nanos() as u64;
    Ok(TiledRun { wall_ns, tasks: plan.ops.len() + 2 * host.tiling.tiles(), report })
}

/// [`factor_with`] with the copies apart: the uploads as a batch of their own, then
/// the operations as the timed batch (the tiles already on the GPUs, as
/// `cusolverDnXpotrf`'s factorisation alone has its matrix), then the readbacks. The
/// run's `wall_ns`, `tasks` and `report` are the operations' batch's: chariot's
/// factorisation alone, to set beside cuSOLVER's.
///
/// # Errors
/// As [`factor`].
pub fn factor_apart(sched: &Scheduler, host: &TiledHost, how: Options) -> Result<TiledRun> {
    let plan = Plan::new(host.tiling, how.trsm);
    let m = alloc_tiles(sched, host.tiling, how.trsm)?;
    let all = steps(&plan, how.uploads.at(sched.gpu_count()));
    let batch = |keep: fn(&Step) -> bool| -> Result<(usize, Report)> {
        let mut n = 0;
        for (id, step) in all.iter().filter(|s| keep(s)).enumerate() {
            submit_step(sched, host, &plan, &m, how.layout, id as u64, *step)?;
            n += 1;
        }
        Ok((n, sched.synchronize()?))
    };
    batch(|s| matches!(s, Step::Upload(..)))?;
    let start = Instant::now();
    let (tasks, report) = batch(|s| matches!(s, Step::Op(_)))?;
    let wall_ns = start.elapsed().as_nanos() as u64;
    batch(|s| matches!(s, Step::Readback(..)))?;
    Ok(TiledRun { wall_ns, tasks, report })
}

/// The resident tiles of `tiling` (and the inverse tiles `trsm` needs after them), with
/// a copy already allocated on every GPU of `sched`, so that a timed factorisation
/// allocates no device memory, as the baseline's `cudaMalloc` comes before its clock.
/// chariot allocates a GPU's copy when a task first uses the buffer there; here a task
/// placed on each GPU writes the first tile (nothing: every factorisation's upload
/// overwrites it). On two H200s joined by
/// NVLink, allocated in the timed batch, GPU 0's copy (4.6 GB at N = 32 k, b = 2,048)
/// delayed its first upload by about 10 ms, and GPU 1's first upload took as long.
/// It synchronizes `sched`: call it between batches.
///
/// # Errors
/// chariot's allocation, submit and `synchronize` errors.
pub fn alloc_tiles(sched: &Scheduler, tiling: Tiling, trsm: Trsm) -> Result<ResidentBuffer<f64>> {
    let m = sched.alloc_resident_pieces::<f64>(tiling.len() + trsm.extra_len(&tiling), tiling.tile_len())?;
    let first = tiling.range(0, 0);
    for g in 0..sched.gpu_count() {
        sched.task(g as u64, 1).prefer_gpu(g).writes(&m, first.clone()).gpu_callback(|_| Ok(())).submit()?;
    }
    sched.synchronize()?;
    Ok(m)
}

/// Submits `step` of `plan`'s batch as task `id`, over the resident tiles `m`, placed by
/// `layout`.
fn submit_step(
    sched: &Scheduler,
    host: &TiledHost,
    plan: &Plan,
    m: &ResidentBuffer<f64>,
    layout: Layout,
    id: u64,
    step: Step,
) -> Result<()> {
    let t = host.tiling;
    let d = sched.gpu_count();
    let place = |task, (i, j)| placed(task, layout.owner(i, j, d));
    match step {
        Step::Upload(tile, level) => {
            let (i, j) = t.position(tile);
            let r = t.range(i, j);
            place(sched.task(id, level), (i, j)).download(m, r.start, &host.a, r).submit()?;
        }
        Step::Op(o) => {
            let planned = &plan.ops[o];
            let (op, urgent) = (planned.op, planned.urgent);
            let mut task = place(sched.task(id, granularity(planned.bottom_level)), op.writes().block());
            for tile in op.reads() {
                task = task.reads(m, t.tile_range(tile));
            }
            task = match op.writes() {
                // Written whole: nothing of it is fetched.
                out @ Tile::Inverse(_) => task.writes(m, t.tile_range(out)),
                out @ Tile::Block(..) => task.reads_writes(m, t.tile_range(out)),
            };
            let m2 = m.clone();
            task.gpu_callback(move |call| {
                if call.cuda_stream().is_some() {
                    crate::backend::cuda::cholesky::tile_op(call, &m2, &t, op, urgent)?;
                } else {
                    let base = lowest_offset(&t, op);
                    call.sim_resident(&m2, base, |x: &mut [f64]| cpu::run_op(&t, op, x, base))
                        .ok_or("no simulated copy of the tiles")??;
                }
                Ok(())
            })
            .submit()?;
        }
        Step::Readback(tile, o) => {
            let (i, j) = t.position(tile);
            let r = t.range(i, j);
            place(sched.task(id, granularity(plan.ops[o].bottom_level)), (i, j))
                .readback(&host.l, r.clone(), m, r.start)
                .submit()?;
        }
    }
    Ok(())
}

/// One task of the batch, in submit order (task ids count from 0 in this order).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    /// The upload of a tile (by [`Tiling::index`]), with its granularity.
    Upload(usize, u64),
    /// Operation `o` of the plan.
    Op(usize),
    /// The readback of a tile, after operation `o`, its last writer.
    Readback(usize, usize),
}

/// The batch in submit order: the uploads in the `uploads` order (its order at one GPU
/// where it is [`Uploads::Auto`]); then the operations in the plan's order, each tile's
/// readback right after its last writer. The uploads' granularities are the first-use
/// levels, highest first, dealt out in that order, so that chariot's largest-first
/// order starts them in it.
fn steps(plan: &Plan, uploads: Uploads) -> Vec<Step> {
    let t = plan.tiling;
    let mut levels = plan.first_use_level.clone();
    levels.sort_by(|x, y| y.total_cmp(x));
    let mut tiles: Vec<usize> = (0..t.tiles()).collect();
    match uploads.at(1) {
        Uploads::FirstUse => {
            tiles.sort_by(|&x, &y| plan.first_use_level[y].total_cmp(&plan.first_use_level[x]).then(x.cmp(&y)))
        }
        Uploads::Rows | Uploads::Auto => tiles.sort_by_key(|&x| t.position(x)),
    }
    let mut out: Vec<Step> =
        tiles.into_iter().zip(levels).map(|(tile, level)| Step::Upload(tile, granularity(level))).collect();
    for (o, planned) in plan.ops.iter().enumerate() {
        out.push(Step::Op(o));
        if let Tile::Block(wi, wj) = planned.op.writes() {
            let tile = t.index(wi, wj);
            if plan.last_writer[tile] == o {
                out.push(Step::Readback(tile, o));
            }
        }
    }
    out
}

/// Per task id of [`factor_with`]'s batch at D GPUs (`d`), done the `how` way, the GPU
/// its layout places it on (`None`: the runtime's choice).
pub fn placements(tiling: Tiling, how: Options, d: usize) -> Vec<Option<usize>> {
    let plan = Plan::new(tiling, how.trsm);
    let owner = |tile: usize| {
        let (i, j) = tiling.position(tile);
        how.layout.owner(i, j, d)
    };
    steps(&plan, how.uploads.at(d))
        .into_iter()
        .map(|step| match step {
            Step::Upload(tile, _) | Step::Readback(tile, _) => owner(tile),
            Step::Op(o) => {
                let (i, j) = plan.ops[o].op.writes().block();
                how.layout.owner(i, j, d)
            }
        })
        .collect()
}

/// `task`, placed on `gpu` where one is given.
fn placed(task: TaskBuilder<'_>, gpu: Option<usize>) -> TaskBuilder<'_> {
    match gpu {
        Some(gpu) => task.prefer_gpu(gpu),
        None => task,
    }
}

/// Makes the library handles of every (GPU, stream slot) of `sched` and sizes their
/// POTRF workspaces (and, for `trsm` [`Trsm::Inverse`], their scratch tiles) for tiles
/// of order `b`, so that a timed factorisation does not: a
/// few batches of GPU callbacks, until each GPU has run one (at most 32 batches); the
/// first callback on a GPU prepares all of its slots, on that GPU's dispatcher thread,
/// and holds the dispatcher until every GPU has had one (at most 5 s). Returns
/// the GPUs reached. The scheduler must have no unended task.
///
/// # Errors
/// chariot's errors, or a library call that failed.
pub fn warm_up(sched: &Scheduler, b: usize, trsm: Trsm) -> Result<usize> {
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
                        crate::backend::cuda::cholesky::warm(call, b, streams, trsm)?;
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

#[cfg(test)]
mod test {
    use super::{steps, Layout, Step, Timeline, Uploads};
    use crate::cholesky::plan::{granularity, Plan, Trsm};
    use crate::cholesky::Tiling;
    use chariot::report::{CommandRecord, Report};
    use chariot::{Stage, TaskId};

    /// Busy times are unions (overlaps counted once, gaps not at all), from the first
    /// command's start.
    #[test]
    fn timeline_unions_each_stage() {
        let mut r = Report::default();
        let rec = |task, stage, start, end| CommandRecord::new(TaskId(task), 0, stage, 0, 0, start, end);
        r.records = vec![
            rec(0, Stage::Download, 100, 200),
            rec(1, Stage::Download, 150, 260),
            rec(2, Stage::Kernel, 210, 300),
            rec(3, Stage::Kernel, 400, 500),
            rec(4, Stage::Kernel, 450, 480),
            rec(5, Stage::Readback, 500, 560),
        ];
        let t = Timeline::of(&r);
        assert_eq!((t.upload_busy_ns, t.upload_end_ns), (160, 160));
        assert_eq!((t.compute_busy_ns, t.compute_start_ns, t.compute_end_ns), (190, 110, 400));
        assert_eq!((t.readback_busy_ns, t.end_ns), (60, 460));
        assert_eq!(Timeline::of(&Report::default()), Timeline::default());
    }

    /// The uploads come first, one a tile, their granularities falling; by first use
    /// (the highest level first) or row by row, the leading blocks first; the default
    /// by rows on one GPU and by first use on more.
    #[test]
    fn upload_orders() {
        let t = Tiling::new(40, 10).unwrap();
        let plan = Plan::new(t, Trsm::Inverse);
        let order = |uploads| -> Vec<((usize, usize), u64)> {
            let all = steps(&plan, uploads);
            assert_eq!(all.len(), plan.ops.len() + 2 * t.tiles());
            all.iter()
                .take_while(|s| matches!(s, Step::Upload(..)))
                .map(|s| match *s {
                    Step::Upload(tile, g) => (t.position(tile), g),
                    _ => unreachable!(),
                })
                .collect()
        };
        let rows = order(Uploads::Rows);
        let tiles: Vec<_> = rows.iter().map(|r| r.0).collect();
        assert_eq!(tiles, [(0, 0), (1, 0), (1, 1), (2, 0), (2, 1), (2, 2), (3, 0), (3, 1), (3, 2), (3, 3)]);
        let first = order(Uploads::FirstUse);
        assert_eq!(first.len(), t.tiles());
        assert_eq!(first[0].0, (0, 0));
        for o in [&rows, &first] {
            assert!(o.windows(2).all(|w| w[0].1 >= w[1].1), "granularities rise: {o:?}");
        }
        // The same granularities, dealt out in another order; by first use, each its own.
        let (mut a, mut b): (Vec<u64>, Vec<u64>) =
            (rows.iter().map(|r| r.1).collect(), first.iter().map(|r| r.1).collect());
        a.sort_unstable();
        b.sort_unstable();
        assert_eq!(a, b);
        for &((i, j), g) in &first {
            assert_eq!(g, granularity(plan.first_use_level[t.index(i, j)]));
        }
        // The default: rows on one GPU, first use on more.
        assert_eq!(order(Uploads::Auto), rows);
        assert_eq!(
            [Uploads::Auto.at(1), Uploads::Auto.at(2), Uploads::Rows.at(4)],
            [Uploads::Rows, Uploads::FirstUse, Uploads::Rows]
        );
    }

    /// The block-cyclic owners: a 1 × 2 grid at D = 2 (columns alternate), 2 × 2 at 4,
    /// 2 × 3 at 6; every GPU owns tiles; no placement at D = 1 or by data.
    #[test]
    fn block_cyclic_owners() {
        let c = Layout::BlockCyclic;
        assert_eq!([c.owner(0, 0, 2), c.owner(5, 1, 2), c.owner(3, 2, 2)], [Some(0), Some(1), Some(0)]);
        assert_eq!(
            [c.owner(0, 0, 4), c.owner(0, 1, 4), c.owner(1, 0, 4), c.owner(3, 3, 4)],
            [Some(0), Some(1), Some(2), Some(3)]
        );
        assert_eq!(c.owner(1, 5, 6), Some(5));
        for d in [2, 3, 4, 6, 8] {
            let mut owned = vec![false; d];
            for i in 0..16 {
                for j in 0..=i {
                    owned[c.owner(i, j, d).unwrap()] = true;
                }
            }
            assert!(owned.iter().all(|&o| o), "D = {d}: {owned:?}");
        }
        assert_eq!(c.owner(3, 1, 1), None);
        assert_eq!(Layout::Data.owner(3, 1, 4), None);
    }
}
