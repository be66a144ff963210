//! The user's handle on a resident buffer.

use super::ResidentInner;
use crate::memory::Element;
use std::marker::PhantomData;
use std::sync::Arc;

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
