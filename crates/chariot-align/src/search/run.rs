//! How a search runs: the scheduler and its buffers, then a task a chunk, streamed or
//! over the database uploaded first (see the module above).

use super::{
    rank_output, read_into, union_ns, DbPlacement, Launch, LoadPhase, Options, Outcome, Profiles, Query, Shared, Sizes,
    SlotData, SlotGuard, Startup, Writer, ARMED, DB_PIECE, PENDING, RESIDENT_SHARE,
};
use crate::db::{ChunkInfo, DbIndex};
use crate::matrix::Matrix;
use crate::output::Output;
use crate::sw::{self, KernelKind, Role};
use chariot::report::Report;
use chariot::{Arg, Backend, Scheduler};
use parking_lot::Mutex;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Runs the search of `queries` over the database `index`, writing the TSV to
/// `opt.out` when set (see [`search_to`]).
pub fn search(index: &DbIndex, matrix: &Matrix, queries: &[Query], opt: &Options) -> Result<Outcome, String> {
    let out = opt.out.as_deref().map(rank_output).transpose()?;
    search_to(index, matrix, queries, opt, out)
}

/// Runs the search of `queries` over the database `index`, writing the TSV to `out`
/// (created before the search by [`rank_output`]; renamed over its target when the
/// search succeeds, removed when it fails).
pub fn search_to(
    index: &DbIndex,
    matrix: &Matrix,
    queries: &[Query],
    opt: &Options,
    out: Option<Output>,
) -> Result<Outcome, String> {
    let mut profiles = Profiles::new(queries, matrix)?;
    let nq = queries.len();
    let mut builder = Scheduler::builder().backend(opt.backend.clone()).order(opt.order).adapt(opt.adapt);
    builder = match (opt.gpus, &opt.backend) {
        (0, Backend::Cuda) => builder.all_gpus(),
        (0, Backend::Auto) if Backend::cuda_devices().is_ok() => builder.all_gpus(),
        (0, _) => builder.gpus(1), // the simulator models as many GPUs as asked: one
        (n, _) => builder.gpus(n),
    };
    if let Some(s) = opt.streams {
        builder = builder.streams(s);
    }
    if let Some(d) = opt.stage_depth {
        builder = builder.stage_depth(d);
    }
    if let Some(k) = opt.kernels {
        builder = builder.kernel_concurrency(k);
    }
    if let Some(f) = opt.fills {
        builder = builder.kernel_fills(f);
    }
    #[cfg(feature = "mpi")]
    if let Some(c) = crate::ranks::cluster() {
        builder = builder.cluster(&c);
    }
    let t_start = Instant::now();
    let sched = builder.build().map_err(|e| format!("cannot start the scheduler: {e}"))?;
    let t_sched = t_start.elapsed();
    let archs: Vec<&str> = sched.gpu_info().iter().map(|g| g.arch.as_str()).collect();
    let kind = opt.kernel.resolve(&archs).for_gaps(opt.gaps);
    if opt.query_pairs {
        profiles.pair_up(kind);
    }
    let profiles = profiles;
    // One slot per task that can hold a stream slot, and 4 read ahead: the file read is
    // no bottleneck, and each slot is pinned at the largest chunk's size (3·D·S slots
    // pinned 1.2 GB for the paper's database, 0.45 s of a 0.8 s start on an H100).
    let slots = if opt.slots == 0 { sched.gpu_count() * sched.streams() + 4 } else { opt.slots };
    let slots = slots.min(index.chunks.len()).max(1);
    let size = Sizes::of(index);
    let slot_bytes = size.packed.next_multiple_of(64);
    let score_stride = nq * size.nseq;
    // A resident database's layout: each chunk at the start of a piece, so that a chunk's
    // tasks depend on, and fetch, its own pieces only (chunks differ in size: those of a
    // prepared database are sorted by length).
    let mut db_at = Vec::with_capacity(index.chunks.len());
    let mut db_bytes = 0usize;
    for c in &index.chunks {
        db_at.push(db_bytes);
        db_bytes += c.packed_bytes().next_multiple_of(DB_PIECE);
    }
    let resident = resident_here(opt.placement, &sched, db_bytes)?;
    // A resident database's upload stages its chunks in fewer pinned slots (the search's
    // tasks then need only their scores'): pinning them is much of a search's start.
    let chunk_slots = if resident && opt.slots == 0 { slots.min(UPLOAD_SLOTS) } else { slots };
    let me = |e: chariot::Error| e.to_string();
    // The kernel compiles (NVRTC, or the kernel cache) on a thread of its own while the
    // pinned and device buffers are allocated: both take a good part of the start.
    let (kernel, buffers) = std::thread::scope(|scope| {
        let compiling = scope.spawn(|| {
            let t = Instant::now();
            // One copy of the profiles for both kernels' CPU twins.
            let list = Arc::new(profiles.list.clone());
            let k = sched.register_kernel(sw::kernel(kind, list.clone(), profiles.offsets.clone(), opt.sim_gcups));
            // The query-pair kernel, where there are pairs.
            let pk = (!profiles.pairs.is_empty())
                .then(|| sched.register_kernel(sw::pair_kernel(list, profiles.offsets.clone(), opt.sim_gcups).0));
            let k = k.and_then(|k| Ok((k, pk.transpose()?)));
            (k, t.elapsed())
        });
        let t = Instant::now();
        let buffers = (|| -> Result<_, String> {
            let h_chunks = sched.alloc_host::<u8>(chunk_slots * slot_bytes).map_err(me)?;
            let h_scores = sched.alloc_host::<i32>(slots * score_stride).map_err(me)?;
            let mut h_prof = sched.alloc_host::<i8>(profiles.bytes.len()).map_err(me)?;
            h_prof.write().copy_from_slice(&profiles.bytes);
            // A resident database is one buffer on the GPUs; a streamed one a chunk's copy per slot.
            let chunks = if resident {
                Chunks::Resident(sched.alloc_resident_pieces::<u8>(db_bytes, DB_PIECE).map_err(me)?)
            } else {
                Chunks::Streamed(sched.alloc::<u8>(size.packed).map_err(me)?)
            };
            let d_scratch = sched.alloc::<[i32; 2]>(size.residues).map_err(me)?;
            let d_scores = sched.alloc::<i32>(score_stride).map_err(me)?;
            let d_prof = sched.alloc::<i8>(profiles.bytes.len()).map_err(me)?;
            Ok((h_chunks, h_scores, h_prof, chunks, d_scratch, d_scores, d_prof))
        })();
        let t_buffers = t.elapsed();
        let (k, t_kernel) = compiling.join().unwrap_or_else(|_| (Err(chariot::Error::ShutDown), Duration::ZERO));
        ((k, t_kernel), (buffers, t_buffers))
    });
    let ((kernel, t_kernel), (buffers, t_buffers)) = (kernel, buffers);
    let (kernel, pair_kernel) = kernel.map_err(|e| format!("kernel: {e}"))?;
    let (h_chunks, h_scores, h_prof, chunks, d_scratch, d_scores, d_prof) = buffers?;
    let startup = Startup { scheduler: t_sched, kernel: t_kernel, buffers: t_buffers, total: t_start.elapsed() };
    // Chunk `c`'s packed bytes where the kernel reads them.
    let chunk_arg = |c: usize, info: &ChunkInfo| match &chunks {
        Chunks::Streamed(d) => Arg::buffer(d),
        Chunks::Resident(d) => Arg::reads(d, db_at[c]..db_at[c] + info.packed_bytes()),
    };
    let arg = |r: Role, chunk: &Arg| match r {
        Role::Chunk => chunk.clone(),
        Role::Profiles => Arg::buffer(&d_prof),
        Role::Scratch => Arg::buffer(&d_scratch),
        Role::Scores => Arg::buffer(&d_scores),
        Role::U32(v) => Arg::u32(v),
        Role::I32(v) => Arg::i32(v),
        Role::U64(v) => Arg::u64(v),
    };

    // What a chunk's read leaves for its write: kept per slot while streaming, per chunk
    // while the database is resident (its read and its write are then in two tasks).
    let kept = if resident { index.chunks.len() } else { slots };
    let shared = Arc::new(Shared {
        matrix: matrix.clone(),
        index: index.clone(),
        data: (0..kept).map(|_| Mutex::new(SlotData::default())).collect(),
        writer: Writer::open_to(queries, opt, index.residues, out)?.counting_repasses(kind, &profiles.list),
        error: Mutex::new(None),
    });
    let gaps = opt.gaps;
    // The file read stage of chunk `c`, its data kept at `key`.
    let read = |c: usize, key: usize| {
        let (sh, info) = (shared.clone(), index.chunks[c].clone());
        move |buf: &mut [u8], _: &chariot::callback::CallInfo| -> std::result::Result<(), chariot::BoxError> {
            let data = read_into(&sh.index, &info, &sh.matrix, buf).map_err(|e| sh.fail(e))?;
            *sh.data[key].lock() = data;
            Ok(())
        }
    };
    // The file write stage of chunk `c`'s scores (its read's data kept at `key`); `guard`
    // gives the task's host slot back.
    let write = |c: usize, key: usize, guard: SlotGuard| {
        let (sh, info) = (shared.clone(), index.chunks[c].clone());
        move |scores: &[i32], _: &chariot::callback::CallInfo| -> std::result::Result<(), chariot::BoxError> {
            let _guard = guard;
            let data = std::mem::take(&mut *sh.data[key].lock());
            sh.writer.write(&data, scores, &info).map_err(|e| sh.fail(e))
        }
    };
    let crange = |s: usize, info: &ChunkInfo| s * slot_bytes..s * slot_bytes + info.packed_bytes();
    let srange = |s: usize, info: &ChunkInfo| s * score_stride..s * score_stride + nq * info.nseq;
    // The launches of every query over chunk `c`, then the scores' readback and write.
    let search_chunk = same_builder(|t, c, info, s, key, guard| {
        let chunk = chunk_arg(c, info);
        let mut t = t.download(&d_prof, 0, &h_prof, ..);
        for launch in &profiles.launches {
            match (*launch, &pair_kernel) {
                (Launch::Pair(i), Some(pk)) => {
                    let pair = &profiles.pairs[i];
                    let (nseq, residues) = (info.nseq, info.residues);
                    let args = sw::pair_args(&pair.profile, pair.at, nseq, info.res_off(), residues, gaps);
                    let (grid, shared) = (pair.profile.grid(nseq), pair.profile.shared);
                    t = t.launch(pk, grid, sw::BLOCK, shared, &args.map(|r| arg(r, &chunk)));
                }
                (Launch::Pair(_), None) => unreachable!("the pair kernel is registered wherever there are pairs"),
                (Launch::Query(q), _) => {
                    let p = &profiles.list[q];
                    let args = sw::args(p, q, profiles.offsets[q], info.nseq, info.res_off(), info.residues, gaps);
                    let (grid, shared) = (p.grid_of(kind, info.nseq), p.shared_bytes());
                    t = t.launch(&kernel, grid, sw::BLOCK, shared, &args.map(|r| arg(r, &chunk)));
                }
            }
        }
        t.readback(&h_scores, srange(s, info), &d_scores, 0).callback_reading(
            &h_scores,
            srange(s, info),
            write(c, key, guard),
        )
    });

    let load = match &chunks {
        Chunks::Streamed(d_chunk) => {
            let t0 = Instant::now();
            each_chunk(index, &shared, slots, |c, info, s, guard| {
                let t = sched
                    .task(c as u64, info.residues.max(1))
                    .callback_writing(&h_chunks, crange(s, info), read(c, s))
                    .download(d_chunk, 0, &h_chunks, crange(s, info));
                search_chunk(t, c, info, s, s, guard)
            })?;
            return finish(
                sched.synchronize(),
                t0.elapsed(),
                &shared,
                opt.top,
                &profiles,
                index,
                slots,
                kind,
                startup,
                None,
            );
        }
        Chunks::Resident(d_db) => {
            // The upload: each chunk read into a slot and downloaded into its pieces on
            // the GPU that takes the task; the slot is free once the download has ended.
            // The bar counts searched residues: meanwhile it says what runs.
            shared.writer.bar.set_message("(uploading the database to the GPUs)");
            shared.writer.bar.enable_steady_tick(Duration::from_millis(200));
            let t0 = Instant::now();
            each_chunk(index, &shared, chunk_slots, |c, info, s, guard| {
                sched
                    .task(c as u64, info.residues.max(1))
                    .callback_writing(&h_chunks, crange(s, info), read(c, c))
                    .download(d_db, db_at[c], &h_chunks, crange(s, info))
                    .callback(chariot::callback::Resource::Cpu, move |_| {
                        drop(guard);
                        Ok(())
                    })
            })?;
            let report = sched.synchronize();
            let wall = t0.elapsed();
            shared.writer.bar.disable_steady_tick();
            shared.writer.bar.set_message("");
            if let Some(e) = shared.error.lock().take() {
                shared.writer.bar.finish_and_clear();
                return Err(e);
            }
            let report = report.map_err(|e| format!("loading the database to the GPUs failed: {e}"))?;
            let busy = |stage: chariot::Stage| {
                union_ns(report.records.iter().filter(|r| r.stage == stage).map(|r| (r.start_ns, r.end_ns)).collect())
            };
            let (read_busy_ns, download_busy_ns) = (busy(chariot::Stage::Cpu), busy(chariot::Stage::Download));
            let bytes = index.chunks.iter().map(|c| c.packed_bytes() as u64).sum();
            LoadPhase { wall, bytes, read_busy_ns, download_busy_ns, report }
        }
    };
    // The search: a task a chunk, each on the GPU that holds the chunk (a task that
    // reads resident pieces runs where they are valid), reading it there.
    let t0 = Instant::now();
    each_chunk(index, &shared, slots, |c, info, s, guard| {
        search_chunk(sched.task(c as u64, info.residues.max(1)), c, info, s, c, guard)
    })?;
    finish(sched.synchronize(), t0.elapsed(), &shared, opt.top, &profiles, index, slots, kind, startup, Some(load))
}

/// Pinned chunk slots a resident database's upload stages its chunks in, where
/// `--slots` is left to chariot-align: the upload is bound by reading the file, and
/// each slot is pinned at the largest chunk's size.
const UPLOAD_SLOTS: usize = 8;

/// Ties a task-extending closure's builder lifetimes (the closure's signature alone
/// cannot name the scheduler's borrow).
fn same_builder<'s, F>(f: F) -> F
where
    F: Fn(chariot::TaskBuilder<'s>, usize, &ChunkInfo, usize, usize, SlotGuard) -> chariot::TaskBuilder<'s>,
{
    f
}

/// The device copy a search's kernels read each chunk from.
enum Chunks {
    /// A chunk's copy per GPU and stream slot, downloaded by each chunk's task.
    Streamed(chariot::DeviceBuffer<u8>),
    /// The whole database, each chunk from the start of a piece, uploaded once.
    Resident(chariot::resident::ResidentBuffer<u8>),
}

/// Whether a search under `placement` keeps its chunks, `bytes` on each GPU, there.
fn resident_here(placement: DbPlacement, sched: &Scheduler, bytes: usize) -> Result<bool, String> {
    // In a cluster each rank takes chunks as it frees: a chunk loaded on one rank
    // would be searched on another.
    let cluster = crate::ranks::size() > 1;
    let fits = sched.gpu_info().iter().all(|g| bytes as f64 <= RESIDENT_SHARE * g.memory_bytes as f64);
    if bytes == 0 {
        return Ok(false); // no chunk to keep
    }
    match placement {
        DbPlacement::Auto => Ok(fits && !cluster),
        DbPlacement::Streamed => Ok(false),
        DbPlacement::Resident if cluster => {
            Err("--db-on-gpu yes: not under mpirun (each rank streams the chunks it takes); use auto or no".into())
        }
        DbPlacement::Resident => {
            let least = sched.gpu_info().iter().map(|g| g.memory_bytes).min().unwrap_or(0);
            if bytes as u64 > least {
                return Err(format!(
                    "--db-on-gpu yes: the database's chunks take {bytes} bytes on the GPUs, more than the {least} \
                     bytes of the smallest; use auto or no"
                ));
            }
            Ok(true)
        }
    }
}

/// Submits a task a chunk, `task(c, info, slot, guard)` building chunk `c`'s with host
/// slot `slot` (of `slots`), which `guard` gives back when the task's last callback is
/// dropped; waits for a free slot before each.
fn each_chunk<'s>(
    index: &DbIndex,
    shared: &Shared,
    slots: usize,
    mut task: impl FnMut(usize, &ChunkInfo, usize, SlotGuard) -> chariot::TaskBuilder<'s>,
) -> Result<(), String> {
    let (tx, rx) = crossbeam_channel::unbounded::<usize>();
    let mut free: Vec<usize> = (0..slots).rev().collect();
    for (c, info) in index.chunks.iter().enumerate() {
        if shared.error.lock().is_some() {
            break;
        }
        let s = match free.pop() {
            Some(s) => s,
            None => rx.recv_timeout(Duration::from_secs(3600)).map_err(|_| "the pipeline stalled".to_string())?,
        };
        let state = Arc::new(AtomicU8::new(PENDING));
        let guard = SlotGuard { slot: s, state: state.clone(), tx: tx.clone() };
        match task(c, info, s, guard).submit() {
            Ok(_) => {
                if state.compare_exchange(PENDING, ARMED, Ordering::SeqCst, Ordering::SeqCst).is_err() {
                    let _ = tx.send(s);
                }
            }
            Err(e) => return Err(format!("submit of chunk {c}: {e}")),
        }
    }
    Ok(())
}

/// The end of a search: its hits, digest and stage times from the report `report` of
/// its tasks, which took `wall`.
#[allow(clippy::too_many_arguments)]
fn finish(
    report: chariot::Result<Report>,
    wall: Duration,
    shared: &Shared,
    top: usize,
    profiles: &Profiles,
    index: &DbIndex,
    slots: usize,
    kind: KernelKind,
    startup: Startup,
    load: Option<LoadPhase>,
) -> Result<Outcome, String> {
    if let Some(e) = shared.error.lock().take() {
        shared.writer.bar.finish_and_clear();
        return Err(e);
    }
    let report = report.map_err(|e| format!("search failed: {e}"))?;
    let (hits, digest) = shared.writer.finish()?;
    // Under mpirun: every rank's hits on rank 0, every rank's digest and repasses.
    let hits = crate::ranks::merge_hits(hits, top);
    let digest = crate::ranks::sum(digest);
    let repassed = crate::ranks::sum(shared.writer.repassed());
    let launches = profiles.launches.len();
    let mut sum = [0u64; 5];
    let mut spans: [Vec<(u64, u64)>; 5] = Default::default();
    for r in &report.records {
        // A streamed chunk's commands: read, the chunk's and the profiles' downloads,
        // a launch a query, readback, write. A resident one's search task has no read
        // and no chunk download (and a fetch of its pieces, at the download stage, where
        // it had to be copied): its stages tell.
        let k = if load.is_none() {
            match r.command as usize {
                0 => 0,
                1 | 2 => 1,
                i if i < 3 + launches => 2,
                i if i == 3 + launches => 3,
                _ => 4,
            }
        } else {
            match r.stage {
                chariot::Stage::Download => 1,
                chariot::Stage::Kernel => 2,
                chariot::Stage::Readback => 3,
                chariot::Stage::Cpu => 4,
            }
        };
        sum[k] += r.duration_ns();
        spans[k].push((r.start_ns, r.end_ns));
    }
    let busy = spans.map(union_ns);
    let cells = profiles.cells(index);
    Ok(Outcome {
        hits,
        report,
        wall,
        stage_sum_ns: sum,
        stage_busy_ns: busy,
        cells,
        slots,
        digest,
        kernel: kind,
        repassed,
        query_pairs: profiles.pairs.len(),
        paired_queries: profiles.paired(),
        startup,
        load,
    })
}
