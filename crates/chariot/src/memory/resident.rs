//! Device-resident data (issue 16): a buffer that lives on the GPUs and is shared by
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

use super::device::Graveyard;
use super::Element;
use crate::backend::device::PhysBuf;
use crate::ids::TaskId;
use crate::sync::Mutex;
use std::marker::PhantomData;
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
    fn read_copy(&self, buf: &PhysBuf, offset: usize, out: &mut [u8]) -> Result<(), String>;
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
    /// Valid nowhere since this writer failed.
    lost: Option<TaskId>,
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
        preds: &mut Vec<TaskId>,
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
                    if evict_one(gpu, self, candidates.get_or_insert_with(others)) =>
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
                *piece = Piece { gpus: bit, pending: piece.pending, ..Piece::default() };
            } else if dirty {
                piece.gpus &= !bit;
                if piece.gpus == 0 && !piece.host && !piece.zero {
                    piece.lost = Some(task);
                }
            }
        }
    }

    /// GPU `gpu` is lost: its copies are gone.
    pub(crate) fn gpu_lost(&self, gpu: usize, by: TaskId) {
        let bit = 1u64 << gpu;
        let mut st = self.state.lock();
        for piece in &mut st.pieces {
            if piece.gpus & bit != 0 {
                piece.gpus &= !bit;
                if piece.gpus == 0 && !piece.host && !piece.zero {
                    piece.lost = Some(by);
                }
            }
            piece.pending &= !bit;
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

    /// Tries to evict `gpu`'s copy: only when nothing on `gpu` uses it and no fetch is
    /// bringing a piece there. Pieces held nowhere else are written back to the host
    /// shadow first. Returns whether memory was freed.
    fn evict(&self, gpu: usize) -> bool {
        let bit = 1u64 << gpu;
        // First, under the lock: nothing uses the copy; pin it (as a user) while the
        // pieces only it holds are written back, so that it stays valid for any fetch
        // that plans to read it meanwhile.
        let (copy, only_here) = {
            let mut st = self.state.lock();
            if st.users[gpu] > 0 || st.pieces.iter().any(|p| p.pending & bit != 0) {
                return false;
            }
            let Some(copy) = st.copies[gpu].clone() else { return false };
            let only_here: Vec<usize> = (0..st.pieces.len())
                .filter(|&p| {
                    let piece = st.pieces[p];
                    piece.gpus == bit && !piece.host && !piece.zero
                })
                .collect();
            st.users[gpu] += 1;
            (copy, only_here)
        };
        let mut written = true;
        if !only_here.is_empty() {
            let mut shadow = self.shadow.lock();
            if shadow.is_empty() {
                shadow.resize(self.bytes, 0);
            }
            for &p in &only_here {
                let r = self.bytes_of(&(p..p + 1));
                written &= self.memory.read_copy(&copy, r.start, &mut shadow[r]).is_ok();
            }
        }
        // Then, again under the lock: if a fetch began to read the copy meanwhile, or
        // the write-back failed, the copy stays; else it goes, and the shadow holds what
        // only it held.
        let taken = {
            let mut st = self.state.lock();
            st.users[gpu] -= 1;
            if !written || st.users[gpu] > 0 {
                None
            } else {
                for &p in &only_here {
                    st.pieces[p].host = true;
                }
                for piece in &mut st.pieces {
                    piece.gpus &= !bit;
                }
                st.copies[gpu].take()
            }
        };
        drop(copy);
        match taken.map(Arc::try_unwrap) {
            Some(Ok(buf)) => {
                self.memory.free_copy(buf);
                true
            }
            // A reader of the pointer still holds it (a command being issued): it is
            // freed when that lets go, through the graveyard at the next synchronize.
            Some(Err(shared)) => {
                drop(shared);
                true
            }
            None => false,
        }
    }
}

/// Evicts the least recently bound copy on `gpu` among `others` (not `this`) that
/// nothing uses. Returns whether one was evicted.
fn evict_one(gpu: usize, this: &ResidentInner, others: &[Arc<ResidentInner>]) -> bool {
    let mut candidates: Vec<(u64, &Arc<ResidentInner>)> = others
        .iter()
        .filter(|o| !std::ptr::eq(&***o, this))
        .filter_map(|o| {
            let st = o.state.lock();
            (st.copies[gpu].is_some() && st.users[gpu] == 0).then(|| (st.stamp[gpu], o))
        })
        .collect();
    candidates.sort_by_key(|(stamp, _)| *stamp);
    candidates.into_iter().any(|(_, o)| o.evict(gpu))
}

impl Drop for ResidentInner {
    fn drop(&mut self) {
        let mut bufs: Vec<PhysBuf> = Vec::new();
        for c in self.state.lock().copies.iter_mut() {
            if let Some(c) = c.take() {
                if let Ok(b) = Arc::try_unwrap(c) {
                    bufs.push(b);
                }
            }
        }
        self.graveyard.bury(&mut bufs);
    }
}

/// A device-resident buffer of `len` elements of `T`, shared by tasks and kept on the
/// GPUs between them, allocated by
/// [`Scheduler::alloc_resident`](crate::Scheduler::alloc_resident). Its content starts
/// as zeros. Tasks name ranges of it as kernel arguments ([`Arg::reads`](crate::Arg::reads),
/// [`Arg::writes`](crate::Arg::writes), [`Arg::reads_writes`](crate::Arg::reads_writes)),
/// in copies ([`TaskBuilder::download`](crate::TaskBuilder::download) writes,
/// [`TaskBuilder::readback`](crate::TaskBuilder::readback) reads) and in declarations
/// for GPU callbacks ([`TaskBuilder::reads`](crate::TaskBuilder::reads) …); chariot
/// orders the tasks by those uses and moves the data where a task runs
/// (`docs/graphs.md`). Clones are handles to the same buffer.
///
/// ```
/// use chariot::{Backend, Scheduler};
/// let sched = Scheduler::builder().backend(Backend::Sim).build()?;
/// let weights = sched.alloc_resident::<f32>(1 << 16)?;
/// assert_eq!((weights.len(), weights.pieces()), (1 << 16, 1));
/// let tiles = sched.alloc_resident_pieces::<f64>(64 * 64, 16 * 16)?;
/// assert_eq!(tiles.pieces(), 16);
/// # Ok::<(), chariot::Error>(())
/// ```
pub struct ResidentBuffer<T: Element> {
    inner: Arc<ResidentInner>,
    len: usize,
    _t: PhantomData<fn() -> T>,
}

impl<T: Element> Clone for ResidentBuffer<T> {
    fn clone(&self) -> Self {
        ResidentBuffer { inner: self.inner.clone(), len: self.len, _t: PhantomData }
    }
}

impl<T: Element> ResidentBuffer<T> {
    pub(crate) fn new(inner: ResidentInner, len: usize) -> Self {
        ResidentBuffer { inner: Arc::new(inner), len, _t: PhantomData }
    }

    pub(crate) fn inner(&self) -> &Arc<ResidentInner> {
        &self.inner
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the buffer has no elements (never: empty buffers are refused).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Number of pieces (the unit of validity and of dependencies).
    pub fn pieces(&self) -> usize {
        self.inner.pieces()
    }

    /// Elements in a piece (the last may hold fewer).
    pub fn piece_len(&self) -> usize {
        self.inner.piece_bytes / std::mem::size_of::<T>()
    }

    /// The buffer's id, as error messages name it.
    pub fn id(&self) -> u64 {
        self.inner.id
    }

    /// The state of piece `piece` on GPU `gpu` now: `'M'` (the only valid copy), `'S'`
    /// (valid, other copies too) or `'I'` (invalid); for tests and diagnosis, as tasks
    /// change it while they run.
    ///
    /// # Panics
    /// If `piece` or `gpu` is out of range.
    pub fn state(&self, gpu: usize, piece: usize) -> char {
        self.inner.msi(gpu, piece)
    }
}

impl<T: Element> std::fmt::Debug for ResidentBuffer<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResidentBuffer")
            .field("id", &self.inner.id)
            .field("len", &self.len)
            .field("pieces", &self.inner.pieces())
            .finish()
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::memory::FreeDevice;

    #[derive(Debug, Default)]
    struct Fake {
        cap: usize,
        used: Mutex<usize>,
    }
    impl ResidentMemory for Fake {
        fn alloc_copy(&self, _gpu: usize, bytes: usize) -> crate::Result<PhysBuf> {
            let mut used = self.used.lock();
            if *used + bytes > self.cap {
                return Err(crate::Error::OutOfMemory { what: "fake".into(), bytes, message: "full".into() });
            }
            *used += bytes;
            Ok(PhysBuf::Cuda { gpu: 0, ptr: bytes as u64 })
        }
        fn free_copy(&self, buf: PhysBuf) {
            if let PhysBuf::Cuda { ptr, .. } = buf {
                *self.used.lock() -= ptr as usize;
            }
        }
        fn read_copy(&self, _: &PhysBuf, _: usize, out: &mut [u8]) -> Result<(), String> {
            out.fill(7);
            Ok(())
        }
    }
    impl FreeDevice for Fake {
        fn free_device(&self, _: Vec<PhysBuf>) {}
    }

    fn buffer(fake: &Arc<Fake>, bytes: usize, piece: usize) -> Arc<ResidentInner> {
        let graveyard = Graveyard::new(fake.clone());
        Arc::new(ResidentInner::new(0, 2, bytes, piece, fake.clone(), graveyard))
    }

    #[test]
    fn dependencies_are_raw_war_and_waw_per_piece() {
        let fake = Arc::new(Fake { cap: 1 << 20, ..Fake::default() });
        let b = buffer(&fake, 400, 100);
        let live = |_: TaskId| true;
        let mut p = Vec::new();
        b.track(TaskId(1), &[0, 1], true, &live, &mut p);
        assert!(p.is_empty());
        b.track(TaskId(2), &[1], false, &live, &mut p);
        assert_eq!(p, [TaskId(1)]); // RAW
        p.clear();
        b.track(TaskId(3), &[1, 2], false, &live, &mut p);
        assert_eq!(p, [TaskId(1)]); // readers share
        p.clear();
        b.track(TaskId(4), &[1], true, &live, &mut p);
        assert_eq!(p, [TaskId(1), TaskId(2), TaskId(3)]); // WAW and WAR
        p.clear();
        b.track(TaskId(5), &[3], true, &live, &mut p);
        assert!(p.is_empty()); // another piece
                               // Ended tasks are no wait.
        b.track(TaskId(6), &[1], false, &|t| t != TaskId(4), &mut p);
        assert!(p.is_empty());
    }

    #[test]
    fn fetches_follow_msi_and_wait_for_each_other() {
        let fake = Arc::new(Fake { cap: 1 << 20, ..Fake::default() });
        let b = buffer(&fake, 300, 100);
        b.bind(0, &Vec::new).unwrap();
        // Fresh: zeros.
        let Plan::Copy(parts) = b.plan_fetch(0, &[0, 1, 2]) else { panic!() };
        assert_eq!(parts, [FetchPart { pieces: 0..3, from: Source::Zero }]);
        assert_eq!(b.plan_fetch(0, &[1]), Plan::Wait);
        b.fetched(0, &parts, true);
        assert_eq!(b.plan_fetch(0, &[0, 1, 2]), Plan::Valid);
        assert_eq!(b.msi(0, 1), 'S'); // zeros are valid "everywhere"
        b.ended(0, &[1], true, true, TaskId(1));
        assert_eq!((b.msi(0, 1), b.msi(1, 1)), ('M', 'I'));
        b.bind(1, &Vec::new).unwrap();
        let Plan::Copy(parts) = b.plan_fetch(1, &[0, 1]) else { panic!() };
        assert_eq!(
            parts,
            [FetchPart { pieces: 0..1, from: Source::Zero }, FetchPart { pieces: 1..2, from: Source::Gpu(0) }]
        );
        b.fetched(1, &parts, true);
        assert_eq!((b.msi(0, 1), b.msi(1, 1)), ('S', 'S'));
        // A failed writer that started leaves its copy invalid; the other stays.
        b.ended(1, &[1], false, true, TaskId(2));
        assert_eq!((b.msi(0, 1), b.msi(1, 1)), ('M', 'I'));
        b.ended(0, &[1], false, true, TaskId(3));
        assert_eq!(b.plan_fetch(1, &[1]), Plan::Lost { piece: 1, by: TaskId(3) });
    }

    #[test]
    fn a_full_gpu_evicts_the_least_recently_used_idle_copy_writing_back_what_only_it_holds() {
        let fake = Arc::new(Fake { cap: 250, ..Fake::default() });
        let a = buffer(&fake, 100, 100);
        let b = buffer(&fake, 100, 100);
        let c = buffer(&fake, 100, 100);
        let all = || vec![a.clone(), b.clone(), c.clone()];
        a.bind(0, &all).unwrap();
        a.ended(0, &[0], true, true, TaskId(1)); // modified on GPU 0 only
        b.bind(0, &all).unwrap();
        // a is idle, b is in use: c's copy evicts a's, writing it back first.
        a.unbind(0);
        c.bind(0, &all).unwrap();
        assert!(a.copy(0).is_none() && b.copy(0).is_some() && c.copy(0).is_some());
        assert_eq!(a.plan_fetch(1, &[0]), Plan::Copy(vec![FetchPart { pieces: 0..1, from: Source::Host }]));
        assert!(a.shadow().iter().all(|&x| x == 7));
        // Nothing idle to evict: the allocation's error stands.
        let d = buffer(&fake, 100, 100);
        assert!(matches!(d.bind(0, &|| vec![b.clone(), c.clone()]), Err(crate::Error::OutOfMemory { .. })));
    }
}
