//! Virtual device buffers (paper §4): the user names one `DeviceBuffer` in every task;
//! the runtime keeps one physical buffer per (GPU, stream slot) and resolves the handle
//! when it dispatches, on the GPU and stream the task was bound to.
//!
//! Lifetime: commands hold an `Arc` of the buffer, so the physical memory outlives
//! every queued command that names it. When the last reference goes, the physical
//! buffers return to the driver at once where the scheduler has no task in flight (a
//! free waits for the device, so it is done while nothing runs: on the dropping
//! thread, which may be a dispatcher freeing a batch's last replayed tasks), else they
//! move to the graveyard and return at the next `synchronize` or at shutdown, never
//! while a task is in flight (a handle dropped while tasks hold the buffer: at the
//! `synchronize` that ends them). The launches an ended replayed task keeps for the next
//! submit to refill name their buffers too: the last handle's drop lets go of them
//! (`Quiet::let_go_kept`), and the `synchronize` of a batch that saw such a drop lets
//! go of those its ended tasks kept. A buffer that outlives its scheduler's shutdown
//! returns its memory when it drops (nothing runs then).
//!
//! Freeing at once matters where a large buffer is dropped between batches: freed at
//! the next `synchronize`, just before the batch after it, the driver's release of
//! gigabytes slowed that batch by 4–6 % on H200s (the tiled Cholesky at N = 32 k).

use super::Element;
use crate::backend::device::PhysBuf;
use parking_lot::Mutex;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// What gives physical buffers back to the driver: the backend's machine. A trait, so
/// that device buffers sit below the backend that allocates and frees them.
pub(crate) trait FreeDevice: std::fmt::Debug + Send + Sync {
    /// Returns `bufs` to the driver. No command names them any more (their last
    /// reference is gone); called where no command is expected to run, since a free may
    /// wait for the device.
    fn free_device(&self, bufs: Vec<PhysBuf>);
}

/// Whether the scheduler has no task in flight now: the batch's (`dispatch::Shared`).
/// A trait, so that device buffers sit below the dispatch that runs their commands.
pub(crate) trait Quiet: Send + Sync {
    /// No task of the scheduler is admitted and unended. The answer may be stale at
    /// once; it only picks when a buffer no command names is freed, never whether.
    fn quiet(&self) -> bool;

    /// Lets go of what the scheduler keeps of ended tasks for its next submits (their
    /// launches, refilled in place by the next ones), which names buffers: called as
    /// the last handle of a buffer drops while more than the handle holds it, so that
    /// kept launches do not keep its memory.
    fn let_go_kept(&self);
}

/// Physical buffers whose virtual buffer is gone, waiting to be freed; after the
/// scheduler's shutdown (`close`), buffers are freed as they come.
#[derive(Debug)]
pub(crate) struct Graveyard {
    buried: Mutex<Vec<PhysBuf>>,
    closed: std::sync::atomic::AtomicBool,
    /// A buffer's handle was dropped while tasks held the buffer: its memory comes here
    /// when the last of them is freed, which `synchronize` then waits for.
    held_drops: std::sync::atomic::AtomicBool,
    machine: Arc<dyn FreeDevice>,
    /// The scheduler's batch, once it is made ([`Graveyard::watch`]).
    quiet: std::sync::OnceLock<std::sync::Weak<dyn Quiet>>,
}

impl Graveyard {
    pub(crate) fn new(machine: Arc<dyn FreeDevice>) -> Arc<Self> {
        Arc::new(Graveyard {
            buried: Mutex::new(Vec::new()),
            closed: Default::default(),
            held_drops: Default::default(),
            machine,
            quiet: std::sync::OnceLock::new(),
        })
    }

    /// Frees what comes in at once while `quiet` says no task is in flight.
    pub(crate) fn watch(&self, quiet: std::sync::Weak<dyn Quiet>) {
        // Set once, by the scheduler that made both.
        let _ = self.quiet.set(quiet);
    }

    /// Takes `bufs` in, or frees them at once after `close` or while no task is in
    /// flight.
    pub(crate) fn bury(&self, bufs: &mut Vec<PhysBuf>) {
        if bufs.is_empty() {
            return;
        }
        let quiet = self.quiet.get().and_then(std::sync::Weak::upgrade).is_some_and(|q| q.quiet());
        let mut buried = self.buried.lock();
        if quiet || self.closed.load(Ordering::SeqCst) {
            drop(buried);
            self.machine.free_device(std::mem::take(bufs));
        } else {
            buried.append(bufs);
        }
    }

    /// Returns what is buried to the driver. Only called when no command runs; the
    /// lock is not held while the driver frees (a buffer dropped on another thread
    /// meanwhile waits for nothing).
    pub(crate) fn free_buried(&self) {
        let bufs = std::mem::take(&mut *self.buried.lock());
        self.machine.free_device(bufs);
    }

    /// What the scheduler keeps of ended tasks is let go of ([`Quiet::let_go_kept`]).
    pub(crate) fn let_go_kept(&self) {
        if let Some(q) = self.quiet.get().and_then(std::sync::Weak::upgrade) {
            q.let_go_kept();
        }
    }

    /// A buffer's handle went while tasks held the buffer.
    pub(crate) fn note_held_drop(&self) {
        self.held_drops.store(true, Ordering::SeqCst);
    }

    /// Whether a handle went while tasks held its buffer since the last call.
    pub(crate) fn take_held_drops(&self) -> bool {
        self.held_drops.swap(false, Ordering::SeqCst)
    }

    /// The scheduler has shut down: frees what is buried, and from now on every buffer
    /// as it drops.
    pub(crate) fn close(&self) {
        let bufs = {
            let mut buried = self.buried.lock();
            self.closed.store(true, Ordering::SeqCst);
            std::mem::take(&mut *buried)
        };
        self.machine.free_device(bufs);
    }
}

/// What commands share: the physical buffers and their shape.
///
/// Aligned to 128 bytes, so that in its `Arc` the count each launch naming it moves
/// (a clone at submit, a drop as the task is emptied) has its lines to itself, away
/// from the addresses the dispatchers read.
#[derive(Debug)]
#[repr(align(128))]
pub(crate) struct DeviceBufferInner {
    pub(crate) id: u64,
    /// The scheduler that allocated it.
    pub(crate) sched_id: u64,
    /// Stream slots per GPU: physical buffer of (gpu, slot) is `phys[gpu * slots + slot]`.
    pub(crate) slots: usize,
    pub(crate) phys: Vec<PhysBuf>,
    /// One copy's size.
    pub(crate) bytes: usize,
    /// Per GPU, copies for lanes past the S slots: lane `slots + i` uses copy `i`. Made
    /// once, when a recorded graph laid out on more lanes than S first uses the buffer
    /// on that GPU (`ext::replay::recorded`), and kept with the buffer.
    #[cfg(feature = "replay")]
    pub(crate) lanes: Vec<std::sync::OnceLock<Vec<PhysBuf>>>,
    /// Per GPU, copies for guest lanes: lane [`GUEST_LANES`]` + i` uses copy `i`. A
    /// recorded part spread over GPUs runs its tasks on a GPU other than the one it is
    /// launched from on them: that GPU's dispatcher does not order those tasks with its
    /// own work, so they must not share a copy with it. Made as `lanes` are.
    #[cfg(feature = "replay")]
    pub(crate) guests: Vec<std::sync::OnceLock<Vec<PhysBuf>>>,
    graveyard: Arc<Graveyard>,
    /// The user's handles ([`DeviceBuffer`] and its clones): the last one's drop lets go
    /// of what holds the buffer for no task ([`Quiet::let_go_kept`]).
    handles: AtomicUsize,
}

/// The first guest lane (see [`DeviceBufferInner::guests`]): past every lane a GPU's own
/// windows use.
#[cfg(feature = "replay")]
pub(crate) const GUEST_LANES: usize = 256;

/// One unmade list of copies per GPU, for a buffer of `copies` copies over `slots`
/// slots a GPU.
#[cfg(feature = "replay")]
fn per_gpu(copies: usize, slots: usize) -> Vec<std::sync::OnceLock<Vec<PhysBuf>>> {
    (0..copies.div_ceil(slots.max(1))).map(|_| std::sync::OnceLock::new()).collect()
}

impl DeviceBufferInner {
    /// Buffer of `bytes` a copy, with `phys` for `slots` slots of each of its GPUs.
    pub(crate) fn new(
        sched_id: u64,
        slots: usize,
        bytes: usize,
        phys: Vec<PhysBuf>,
        graveyard: Arc<Graveyard>,
    ) -> Self {
        DeviceBufferInner {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            sched_id,
            slots,
            bytes,
            #[cfg(feature = "replay")]
            lanes: per_gpu(phys.len(), slots),
            #[cfg(feature = "replay")]
            guests: per_gpu(phys.len(), slots),
            phys,
            graveyard,
            handles: AtomicUsize::new(0),
        }
    }

    /// The physical buffer of `gpu`'s stream slot `slot` (a lane past the slots, or a
    /// guest lane: that lane's copy, which the recorded graph using it made).
    pub(crate) fn phys(&self, gpu: usize, slot: usize) -> &PhysBuf {
        #[cfg(feature = "replay")]
        if slot >= GUEST_LANES {
            let guest = self.guests[gpu].get().map(|v| &v[slot - GUEST_LANES]);
            return guest.expect("a guest lane is laid out only where its copies were made");
        }
        #[cfg(feature = "replay")]
        if slot >= self.slots {
            let extra = self.lanes[gpu].get().map(|v| &v[slot - self.slots]);
            return extra.expect("a lane past the slots is laid out only where its copies were made");
        }
        &self.phys[gpu * self.slots + slot]
    }
}

impl Drop for DeviceBufferInner {
    fn drop(&mut self) {
        #[cfg(feature = "replay")]
        for lanes in self.lanes.iter_mut().chain(&mut self.guests) {
            if let Some(mut extra) = lanes.take() {
                self.graveyard.bury(&mut extra);
            }
        }
        self.graveyard.bury(&mut self.phys);
    }
}

/// A virtual device buffer of `len` elements of `T`, allocated by
/// [`Scheduler::alloc`](crate::Scheduler::alloc): one physical copy per GPU and
/// stream slot, chosen when a task's command is dispatched. Clones are handles to the
/// same buffer (for moving into GPU callbacks).
///
/// ```
/// use chariot::{Backend, Scheduler};
/// let sched = Scheduler::builder().backend(Backend::Sim).streams(2).build()?;
/// let d_in = sched.alloc::<f32>(1024)?;
/// assert_eq!(d_in.len(), 1024);
/// d_in.free(); // or let it drop
/// # Ok::<(), chariot::Error>(())
/// ```
pub struct DeviceBuffer<T: Element> {
    inner: Arc<DeviceBufferInner>,
    len: usize,
    _t: PhantomData<fn() -> T>,
}

impl<T: Element> DeviceBuffer<T> {
    pub(crate) fn new(inner: DeviceBufferInner, len: usize) -> Self {
        inner.handles.store(1, Ordering::Relaxed);
        DeviceBuffer { inner: Arc::new(inner), len, _t: PhantomData }
    }

    pub(crate) fn inner(&self) -> &Arc<DeviceBufferInner> {
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

    /// The buffer's id, as error messages name it.
    pub fn id(&self) -> u64 {
        self.inner.id
    }

    /// Frees the buffer. Commands already submitted keep their physical copies alive
    /// until they complete. The memory returns to the driver at once where no task of
    /// the scheduler is in flight, else at the next `synchronize` (or at shutdown).
    /// Dropping the handle does the same.
    pub fn free(self) {}
}

impl<T: Element> Clone for DeviceBuffer<T> {
    fn clone(&self) -> Self {
        self.inner.handles.fetch_add(1, Ordering::Relaxed);
        DeviceBuffer { inner: self.inner.clone(), len: self.len, _t: PhantomData }
    }
}

impl<T: Element> Drop for DeviceBuffer<T> {
    /// The last handle: lets go of the launches the scheduler keeps for its next
    /// submits, and where tasks still hold the buffer, tells `synchronize` that the
    /// memory comes back as the last of them is freed (it waits for that before it
    /// returns what is buried).
    fn drop(&mut self) {
        if self.inner.handles.fetch_sub(1, Ordering::AcqRel) != 1 || Arc::strong_count(&self.inner) == 1 {
            return;
        }
        self.inner.graveyard.let_go_kept();
        if Arc::strong_count(&self.inner) > 1 {
            self.inner.graveyard.note_held_drop();
        }
    }
}

impl<T: Element> std::fmt::Debug for DeviceBuffer<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceBuffer").field("id", &self.inner.id).field("len", &self.len).finish()
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use std::sync::atomic::AtomicBool;
    use std::sync::{OnceLock, Weak};

    /// A driver whose every free checks that the graveyard's lock is free, and, the
    /// first time, drops a buffer on another thread meanwhile (as a user would).
    #[derive(Debug, Default)]
    struct CheckingDriver {
        graveyard: OnceLock<Weak<Graveyard>>,
        freed: Mutex<Vec<(usize, bool)>>,
        dropped_meanwhile: AtomicBool,
    }

    impl FreeDevice for CheckingDriver {
        fn free_device(&self, bufs: Vec<PhysBuf>) {
            let graveyard = self.graveyard.get().and_then(Weak::upgrade).unwrap();
            // `try_lock`, not `lock`: a held lock fails the test instead of hanging it.
            let unlocked = graveyard.buried.try_lock().is_some();
            self.freed.lock().push((bufs.len(), unlocked));
            if unlocked && !self.dropped_meanwhile.swap(true, Ordering::SeqCst) {
                let buf = DeviceBufferInner::new(0, 1, 4, vec![PhysBuf::Cuda { gpu: 0, ptr: 64 }], graveyard);
                std::thread::spawn(move || drop(buf)).join().unwrap();
            }
        }
    }

    #[test]
    fn no_graveyard_lock_is_held_while_the_driver_frees() {
        let driver = Arc::new(CheckingDriver::default());
        let graveyard = Graveyard::new(driver.clone());
        driver.graveyard.set(Arc::downgrade(&graveyard)).unwrap();
        let buffer = |ptr| {
            DeviceBufferInner::new(0, 2, 4, (0..2).map(|_| PhysBuf::Cuda { gpu: 0, ptr }).collect(), graveyard.clone())
        };
        drop(buffer(128));
        graveyard.free_buried();
        // The buffer dropped during that free waits in the graveyard for the next one.
        assert_eq!(graveyard.buried.lock().len(), 1);
        drop(buffer(256));
        graveyard.close();
        // After `close`, a buffer is freed as it drops.
        drop(buffer(512));
        assert_eq!(*driver.freed.lock(), [(2, true), (3, true), (2, true)]);
    }
}
