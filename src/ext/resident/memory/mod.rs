//! Device-resident data: a buffer that lives on the GPUs and is shared by
//! tasks, beside the virtual buffers that give every stream slot a private copy.
//!
//! A [`ResidentBuffer`] is cut into pieces (one by default), the unit of validity and of
//! dependencies. Per piece and GPU the state is MSI, as StarPU's data manager keeps it:
//! a GPU's copy of a piece is *modified* when it is the only valid one, *shared* when
//! other copies are valid too, *invalid* otherwise. Besides the GPUs a piece can be
//! valid as zeros (never written) or in the host shadow (written back by an eviction).
//!
//! * **Dependencies** (at submit, `track`): a task reading a piece runs after its last
//!   writer (RAW); a task writing one runs after the readers since the last write and
//!   that writer (WAR, WAW).
//! * **Fetches** (at dispatch, `plan_fetch`): before a task's commands run on GPU g,
//!   each piece it reads (or writes in part) that g does not hold is copied there: from
//!   another GPU that holds it (peer copy), from the host shadow, or zero-filled. A
//!   piece another fetch is bringing to g is waited for, not fetched twice.
//! * **Writes** (at the end of the task, `ended`): the pieces a task wrote are valid on
//!   its GPU alone. A writer that fails after it started leaves its GPU's copy invalid;
//!   a piece then valid nowhere is lost, and a task that reads it later fails, naming
//!   the writer.
//! * **Copies** are allocated on a GPU when a task first uses the buffer there
//!   (`bind`, on that GPU's dispatcher thread). When the GPU is full, copies of other
//!   resident buffers that no task on it uses are evicted, least recently bound first:
//!   pieces held only there are written back to the host shadow first.
//!
//! Only GPU g's dispatcher allocates, evicts, fetches to and binds on GPU g; the lock
//! of a buffer's state is held for bookkeeping only, never across a driver call (the
//! write-back of an eviction holds the shadow's own lock, on that cold path only).
//!
//! Files: here the state and its bookkeeping; `evict.rs` the eviction; `buffer.rs` the
//! user's handle; `tests.rs` the unit tests.

mod buffer;
mod evict;
#[cfg(test)]
mod tests;

pub use buffer::ResidentBuffer;

use crate::backend::device::PhysBuf;
use crate::ids::TaskId;
use crate::memory::Graveyard;
use crate::sync::Mutex;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

static NEXT_ID: AtomicU64 = AtomicU64::new(1);
static NEXT_STAMP: AtomicU64 = AtomicU64::new(1);

/// At most this many GPUs hold resident data (a piece's holders are a bit set).
pub(crate) const MAX_GPUS: usize = 64;

/// What resident copies need from the machine on the dispatcher's thread: allocate
/// and free a copy, and read one back synchronously (an eviction's write-back).
pub(crate) trait ResidentMemory: std::fmt::Debug + Send + Sync {
    /// A copy of `bytes` on `gpu`, zeroed or not.
    fn alloc_copy(&self, gpu: usize, bytes: usize) -> crate::Result<PhysBuf>;
    /// Frees a copy no command uses.
    fn free_copy(&self, buf: PhysBuf);
    /// Copies `out.len()` bytes from `buf` at `offset` to `out`, waiting for the copy.
    fn read_copy(&self, buf: &PhysBuf, offset: usize, out: &mut [u8]) -> Result<(), ReadBackFailure>;
}

/// Why a copy could not be read back ([`ResidentMemory::read_copy`]): the eviction
/// that asked keeps the copy.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ReadBackFailure {
    /// The driver's copy (or making the context current) failed.
    #[error(transparent)]
    Driver(#[from] crate::report::DriverError),
    /// The copy's memory is of another backend than the machine's.
    #[error("a copy of another backend")]
    OtherBackend,
    /// The copy was freed already (the model checker's stand-in memory tells).
    #[cfg(all(test, feature = "model-check"))]
    #[error("read of a freed copy")]
    Freed,
}

/// Where a fetch takes a run of pieces from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Source {
    /// Another GPU's valid copy (a peer copy; through the host where the link has no
    /// peer access).
    Gpu(usize),
    /// The host shadow (written by an eviction).
    Host,
    /// Never written: zero-fill.
    Zero,
}

/// One run of pieces a fetch copies from one source.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct FetchPart {
    pub(crate) pieces: Range<usize>,
    pub(crate) from: Source,
}

/// What [`ResidentInner::plan_fetch`] found.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Plan {
    /// Every piece is valid on the GPU: nothing to copy.
    Valid,
    /// Another fetch is bringing a piece to this GPU: try again after it completes.
    Wait,
    /// Copy these runs (marked pending on the GPU until `fetched`).
    Copy(Vec<FetchPart>),
    /// A piece is valid nowhere: the task that lost it (its writer failed).
    Lost { piece: usize, by: TaskId },
}

#[derive(Clone, Copy, Debug, Default)]
struct Piece {
    /// GPUs holding a valid copy.
    gpus: u64,
    /// GPUs a fetch is bringing it to.
    pending: u64,
    /// The host shadow holds it.
    host: bool,
    /// Never written: all zeros.
    zero: bool,
    /// Valid nowhere since this writer failed (or its GPU was lost).
    lost: Option<TaskId>,
    /// The last task that wrote it.
    writer: Option<TaskId>,
    /// Bumped by every write: an eviction's write-back counts only if no write came
    /// between the copy it read and the state it sets.
    version: u64,
}

#[derive(Debug)]
struct State {
    /// Per GPU: its copy, once a task used the buffer there.
    copies: Vec<Option<Arc<PhysBuf>>>,
    /// Per GPU: tasks bound there using the buffer, and fetches reading its copy.
    users: Vec<u32>,
    /// Per GPU: when a task last bound the buffer there (for least-recently-used eviction).
    stamp: Vec<u64>,
    pieces: Vec<Piece>,
}

/// Per piece, for dependencies at submit: the last writer and the readers since.
#[derive(Debug, Default)]
struct Deps {
    writer: Option<TaskId>,
    readers: Vec<TaskId>,
}

/// What tasks and commands share of a resident buffer.
#[derive(Debug)]
pub(crate) struct ResidentInner {
    pub(crate) id: u64,
    pub(crate) sched_id: u64,
    pub(crate) bytes: usize,
    pub(crate) piece_bytes: usize,
    state: Mutex<State>,
    deps: Mutex<Vec<Deps>>,
    /// The host copy of pieces an eviction wrote back (empty until then).
    shadow: Mutex<Vec<u8>>,
    /// Held through an eviction of this buffer (one GPU at a time).
    evicting: Mutex<()>,
    /// Evicted copies that a command was still naming when they went: freed when the
    /// buffer drops.
    zombies: Mutex<Vec<Arc<PhysBuf>>>,
    memory: Arc<dyn ResidentMemory>,
    graveyard: Arc<Graveyard>,
}

impl ResidentInner {
    pub(crate) fn new(
        sched_id: u64,
        gpus: usize,
        bytes: usize,
        piece_bytes: usize,
        memory: Arc<dyn ResidentMemory>,
        graveyard: Arc<Graveyard>,
    ) -> Self {
        let pieces = bytes.div_ceil(piece_bytes);
        ResidentInner {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            sched_id,
            bytes,
            piece_bytes,
            state: Mutex::new(State {
                copies: vec![None; gpus],
                users: vec![0; gpus],
                stamp: vec![0; gpus],
                pieces: vec![Piece { zero: true, ..Piece::default() }; pieces],
            }),
            deps: Mutex::new((0..pieces).map(|_| Deps::default()).collect()),
            shadow: Mutex::new(Vec::new()),
            evicting: Mutex::new(()),
            zombies: Mutex::new(Vec::new()),
            memory,
            graveyard,
        }
    }

    /// Number of pieces.
    pub(crate) fn pieces(&self) -> usize {
        self.bytes.div_ceil(self.piece_bytes)
    }

    /// The pieces bytes `range` touches.
    pub(crate) fn pieces_of(&self, range: &Range<usize>) -> Range<usize> {
        if range.is_empty() {
            return 0..0;
        }
        range.start / self.piece_bytes..(range.end - 1) / self.piece_bytes + 1
    }

    /// The bytes of piece run `pieces`.
    pub(crate) fn bytes_of(&self, pieces: &Range<usize>) -> Range<usize> {
        pieces.start * self.piece_bytes..(pieces.end * self.piece_bytes).min(self.bytes)
    }

    /// GPU `gpu`'s copy, if it has one.
    pub(crate) fn copy(&self, gpu: usize) -> Option<Arc<PhysBuf>> {
        self.state.lock().copies.get(gpu).cloned().flatten()
    }

    /// Dependencies at submit: adds to `preds` the tasks that task `id`, reading or
    /// writing `pieces`, runs after, and records its use. `live` says whether a task
    /// has yet to end (ended ones are dropped from the lists).
    pub(crate) fn track(
        &self,
        id: TaskId,
        pieces: &[usize],
        write: bool,
        live: &dyn Fn(TaskId) -> bool,
        preds: &mut crate::ids::Preds,
    ) {
        let mut deps = self.deps.lock();
        let mut add = |t: TaskId| {
            if t != id && live(t) && !preds.contains(&t) {
                preds.push(t);
            }
        };
        for &p in pieces {
            let d = &mut deps[p];
            d.readers.retain(|&r| live(r));
            if d.writer.is_some_and(|w| !live(w)) {
                d.writer = None;
            }
            if let Some(w) = d.writer {
                add(w);
            }
            if write {
                d.readers.iter().for_each(|&r| add(r));
                d.readers.clear();
                d.writer = Some(id);
            } else if !d.readers.contains(&id) && d.writer != Some(id) {
                d.readers.push(id);
            }
        }
    }

    /// Makes sure `gpu` has a copy, and counts a task using it there. Allocates when
    /// there is none (on `gpu`'s dispatcher thread), evicting copies of `others` on
    /// `gpu` that nothing uses if the GPU is full.
    pub(crate) fn bind(&self, gpu: usize, others: &dyn Fn() -> Vec<Arc<ResidentInner>>) -> crate::Result<()> {
        {
            let mut st = self.state.lock();
            st.stamp[gpu] = NEXT_STAMP.fetch_add(1, Ordering::Relaxed);
            if st.copies[gpu].is_some() {
                st.users[gpu] += 1;
                return Ok(());
            }
        }
        // No lock held while the driver allocates: only this GPU's dispatcher makes
        // this GPU's copy.
        let mut candidates: Option<Vec<Arc<ResidentInner>>> = None;
        let copy = loop {
            match self.memory.alloc_copy(gpu, self.bytes) {
                Ok(c) => break c,
                Err(crate::Error::OutOfMemory { .. })
                    if evict::evict_one(gpu, self, candidates.get_or_insert_with(others)) =>
                {
                    continue
                }
                Err(e) => return Err(e),
            }
        };
        let mut st = self.state.lock();
        st.copies[gpu] = Some(Arc::new(copy));
        st.users[gpu] += 1;
        Ok(())
    }

    /// A task bound on `gpu` is done with the buffer.
    pub(crate) fn unbind(&self, gpu: usize) {
        let mut st = self.state.lock();
        st.users[gpu] = st.users[gpu].saturating_sub(1);
    }

    /// Whether every piece of `pieces` is valid on `gpu` (a fetch would copy nothing).
    pub(crate) fn all_valid(&self, gpu: usize, pieces: &[usize]) -> bool {
        let st = self.state.lock();
        pieces.iter().all(|&p| st.pieces[p].gpus & (1 << gpu) != 0)
    }

    /// Whether a fetch of `pieces` to `gpu` must wait for another fetch bringing one of
    /// them there (no side effect: the dispatcher asks before it plans).
    pub(crate) fn fetch_waits(&self, gpu: usize, pieces: &[usize]) -> bool {
        let bit = 1u64 << gpu;
        let st = self.state.lock();
        pieces.iter().any(|&p| st.pieces[p].gpus & bit == 0 && st.pieces[p].pending & bit != 0)
    }

    /// What a fetch of `pieces` to `gpu` must copy; marks the copied pieces pending on
    /// `gpu` and counts the source GPUs' copies as used until [`fetched`](Self::fetched).
    pub(crate) fn plan_fetch(&self, gpu: usize, pieces: &[usize]) -> Plan {
        let bit = 1u64 << gpu;
        let mut st = self.state.lock();
        let mut parts: Vec<FetchPart> = Vec::new();
        for &p in pieces {
            let piece = st.pieces[p];
            if piece.gpus & bit != 0 {
                continue;
            }
            if piece.pending & bit != 0 {
                return Plan::Wait;
            }
            // Cheapest first: a fill moves nothing, a peer copy beats the host's link.
            let from = if piece.zero {
                Source::Zero
            } else if piece.gpus != 0 {
                Source::Gpu(piece.gpus.trailing_zeros() as usize)
            } else if piece.host {
                Source::Host
            } else {
                return Plan::Lost { piece: p, by: piece.lost.unwrap_or(TaskId(0)) };
            };
            match parts.last_mut() {
                Some(last) if last.from == from && last.pieces.end == p => last.pieces.end = p + 1,
                _ => parts.push(FetchPart { pieces: p..p + 1, from }),
            }
        }
        if parts.is_empty() {
            return Plan::Valid;
        }
        for part in &parts {
            for p in part.pieces.clone() {
                st.pieces[p].pending |= bit;
            }
            if let Source::Gpu(h) = part.from {
                st.users[h] += 1;
            }
        }
        Plan::Copy(parts)
    }

    /// The fetch of `parts` to `gpu` ended (`ok`: the pieces are valid there now).
    pub(crate) fn fetched(&self, gpu: usize, parts: &[FetchPart], ok: bool) {
        let bit = 1u64 << gpu;
        let mut st = self.state.lock();
        for part in parts {
            for p in part.pieces.clone() {
                let piece = &mut st.pieces[p];
                piece.pending &= !bit;
                if ok {
                    piece.gpus |= bit;
                }
            }
            if let Source::Gpu(h) = part.from {
                st.users[h] = st.users[h].saturating_sub(1);
            }
        }
    }

    /// A task on `gpu` that wrote `pieces` ended: `ok`, they are valid on `gpu` alone;
    /// failed after it started writing (`dirty`), `gpu`'s copy of them is invalid.
    pub(crate) fn ended(&self, gpu: usize, pieces: &[usize], ok: bool, dirty: bool, task: TaskId) {
        let bit = 1u64 << gpu;
        let mut st = self.state.lock();
        for &p in pieces {
            let piece = &mut st.pieces[p];
            if ok {
                let version = piece.version + 1;
                *piece = Piece { gpus: bit, pending: piece.pending, writer: Some(task), version, ..Piece::default() };
            } else if dirty {
                piece.gpus &= !bit;
                if piece.gpus == 0 && !piece.host && !piece.zero {
                    piece.lost = Some(task);
                }
            }
        }
    }

    /// GPU `gpu` is lost: its copies are gone. A piece held only there is lost, and its
    /// readers' failures name its last writer.
    pub(crate) fn gpu_lost(&self, gpu: usize) {
        let bit = 1u64 << gpu;
        let mut st = self.state.lock();
        for piece in &mut st.pieces {
            if piece.gpus & bit != 0 {
                piece.gpus &= !bit;
                if piece.gpus == 0 && !piece.host && !piece.zero {
                    piece.lost = Some(piece.writer.unwrap_or(TaskId(0)));
                }
            }
        }
    }

    /// Forgets the tasks of a closed batch (`synchronize`: all have ended): ids are the
    /// user's and come again in the next batch, where they must not be taken for these.
    pub(crate) fn forget_tasks(&self) {
        for d in self.deps.lock().iter_mut() {
            *d = Deps::default();
        }
    }

    /// Bytes of `pieces` valid on `gpu` (for placing a ready task).
    pub(crate) fn valid_bytes(&self, gpu: usize, pieces: &[usize]) -> usize {
        let st = self.state.lock();
        pieces.iter().filter(|&&p| st.pieces[p].gpus & (1 << gpu) != 0).map(|&p| self.bytes_of(&(p..p + 1)).len()).sum()
    }

    /// The host shadow, for a fetch from it: locked while the copy reads it.
    pub(crate) fn shadow(&self) -> impl std::ops::Deref<Target = Vec<u8>> + '_ {
        self.shadow.lock()
    }

    /// The MSI state of piece `p` on `gpu`, for tests and the trace: 'M', 'S' or 'I'.
    pub(crate) fn msi(&self, gpu: usize, p: usize) -> char {
        let piece = self.state.lock().pieces[p];
        let holders = piece.gpus.count_ones() + u32::from(piece.host) + u32::from(piece.zero);
        match (piece.gpus & (1 << gpu) != 0, holders) {
            (false, _) => 'I',
            (true, 1) => 'M',
            (true, _) => 'S',
        }
    }
}

impl Drop for ResidentInner {
    fn drop(&mut self) {
        let mut bufs: Vec<PhysBuf> = Vec::new();
        let copies = self.state.lock().copies.iter_mut().filter_map(Option::take).collect::<Vec<_>>();
        let zombies = std::mem::take(&mut *self.zombies.lock());
        for c in copies.into_iter().chain(zombies) {
            // Commands hold a buffer's handle, not its copies' Arcs, beyond the call that
            // names them: at drop every copy is this buffer's alone.
            if let Ok(b) = Arc::try_unwrap(c) {
                bufs.push(b);
            }
        }
        self.graveyard.bury(&mut bufs);
    }
}
