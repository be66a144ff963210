//! Host buffers: the user's side of every copy. Pinned on the CUDA backend (portable,
//! not write-combined, so readback targets stay fast to read on the CPU).
//!
//! Safety contract: a user reads a buffer only through [`HostBuffer::read`] (which waits
//! until no in-flight task writes the range) and writes it only through
//! [`HostBuffer::write`] (which waits until no in-flight task touches the range, and
//! borrows the buffer mutably, so no read guard of this handle lives meanwhile).
//! Tasks claim their regions at submit; a task whose claim conflicts with earlier
//! tasks' runs after them (its claims dormant meanwhile; see `claims.rs`), and one that
//! conflicts with a live read guard, or asked to be refused, is refused.
//!
//! A guard made in a callback never waits for the callback's own task (which cannot
//! end while the callback runs): where that task's claim is in the way, or a dormant
//! claim (a task waiting for other tasks, perhaps for this one), the guard is refused
//! with [`Error::WaitInCallback`](crate::Error::WaitInCallback).

use super::claims::{Claims, Exclusive, Holder, Region};
use super::Element;
use crate::backend::host_alloc::{exclusive, HostAlloc};
use crate::error::LengthProblem;
use crate::ids::TaskId;
use parking_lot::{Condvar, Mutex};
use std::marker::PhantomData;
use std::ops::{Bound, Range, RangeBounds};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// What tasks share with the user's handle: the allocation and its claims.
#[derive(Debug)]
pub(crate) struct HostShared {
    pub(crate) id: u64,
    pub(crate) alloc: HostAlloc,
    pub(crate) claims: Mutex<Claims>,
    released: Condvar,
    /// Who holds tasks touching this buffer back (a batch held for replay), to let them
    /// go before a guard waits for them.
    held_by: Mutex<Option<std::sync::Weak<dyn HeldTasks>>>,
}

/// What holds submitted tasks back from running (the scheduler's replay capture): a
/// guard about to wait for tasks has it let them go first, or the wait would not end.
pub(crate) trait HeldTasks: Send + Sync {
    /// Lets every held task go (to run as a window, or to the host's dispatch).
    fn let_go(&self);
}

impl HostShared {
    pub(crate) fn new(alloc: HostAlloc) -> Arc<Self> {
        Arc::new(HostShared {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            alloc,
            claims: Mutex::new(Claims::default()),
            released: Condvar::new(),
            held_by: Mutex::new(None),
        })
    }

    /// Notes that `holder` holds back tasks that touch this buffer, and wakes the
    /// guards waiting on it, which let them go. The claims' lock is taken (and let go)
    /// before the wake, so a guard between its look at `held_by` and its wait cannot
    /// miss it.
    pub(crate) fn held_by(&self, holder: std::sync::Weak<dyn HeldTasks>) {
        *self.held_by.lock() = Some(holder);
        drop(self.claims.lock());
        self.released.notify_all();
    }

    /// Lets held tasks touching this buffer go, if any: with the claims' lock let go
    /// meanwhile (letting go activates their claims), and taken again.
    fn let_held_go<'a>(&'a self, claims: parking_lot::MutexGuard<'a, Claims>) -> parking_lot::MutexGuard<'a, Claims> {
        let holder = self.held_by.lock().take().and_then(|h| h.upgrade());
        match holder {
            None => claims,
            Some(h) => {
                drop(claims);
                h.let_go();
                self.claims.lock()
            }
        }
    }

    /// Gives back every claim of `holder` and wakes guards waiting for them.
    pub(crate) fn release(&self, holder: Holder) {
        if self.claims.lock().release(holder) {
            self.released.notify_all();
        }
    }

    /// Makes every claim of `holder` active: its task's predecessors have ended.
    pub(crate) fn activate(&self, holder: Holder) {
        self.claims.lock().activate(holder);
    }

    /// The proof that `task`, running one of its commands, may write the 1-D `region`
    /// (its write claim, made at submit, covers it); use it within that command only.
    ///
    /// # Panics
    /// Where the claims say otherwise: a bug in their bookkeeping, caught before any
    /// byte is written (the task fails with the message).
    pub(crate) fn task_exclusive(&self, region: Region, task: TaskId) -> Exclusive<'_> {
        let claims = self.claims.lock();
        assert!(
            claims.exclusive_to(&region, Holder::Task(task)),
            "task {task} writes {region} of host buffer {} without an exclusive claim on them",
            self.id
        );
        Exclusive::new(&self.alloc, region.start..region.end())
    }

    /// Waits until no task holds a claim on `region` that excludes a user's access
    /// (writing if `write`), unless that task runs the callback this thread is in.
    fn wait_until_free(
        &self,
        region: &Region,
        write: bool,
        call: &'static str,
    ) -> crate::Result<parking_lot::MutexGuard<'_, Claims>> {
        let mut claims = self.claims.lock();
        if !claims.task_conflict(region, write) {
            return Ok(claims);
        }
        // Held tasks (a batch held for replay) may be what conflicts: they go first,
        // or the wait would not end.
        claims = self.let_held_go(claims);
        if !claims.task_conflict(region, write) {
            return Ok(claims);
        }
        // Only a guard that would wait asks which callback this thread runs. The task's
        // claims were all made at its submit, so one check before waiting is enough for
        // them; a dormant claim may come later (a submit while this guard waits), so in
        // a callback the wait wakes now and then to look for one.
        let (guard, access) = if write { ("write guard", "touches") } else { ("read guard", "writes") };
        let in_callback = crate::ids::current().map(|(_, task)| task);
        if let Some(task) = in_callback {
            if let Some(held) = claims.held_against(region, write, Holder::Task(task)) {
                return Err(crate::Error::WaitInCallback {
                    task,
                    call,
                    reason: format!(
                        "a {guard} on {region} of host buffer {} waits until no task {access} them, and task {task} \
                         claims {held}; name the range in the task instead, with callback_reading or callback_writing",
                        self.id
                    ),
                });
            }
        }
        while claims.task_conflict(region, write) {
            let Some(task) = in_callback else {
                self.released.wait(&mut claims);
                // A task held since (a submit meanwhile) rings too: let it go.
                claims = self.let_held_go(claims);
                continue;
            };
            if let Some(holder) = claims.dormant_conflict(region, write) {
                return Err(crate::Error::WaitInCallback {
                    task,
                    call,
                    reason: format!(
                        "a {guard} on {region} of host buffer {} waits until no task {access} them, and {holder}, \
                         which waits for other tasks (perhaps task {task}) before it runs, claims them; name the \
                         range in the task instead, with callback_reading or callback_writing",
                        self.id
                    ),
                });
            }
            self.released.wait_for(&mut claims, std::time::Duration::from_millis(1));
            claims = self.let_held_go(claims);
        }
        Ok(claims)
    }
}

#[cfg(feature = "replay")]
impl HostShared {
    /// Claims `region` (written if `write`) for a recorded graph's runs (`holder`):
    /// waits for tasks and other graphs' runs whose claims conflict, as a guard does;
    /// a conflicting guard is [`Error::HostConflict`](crate::Error::HostConflict),
    /// naming the graph's task `first`.
    pub(crate) fn claim_for_run(
        &self,
        region: &Region,
        write: bool,
        holder: Holder,
        first: TaskId,
    ) -> crate::Result<()> {
        let mut claims = self.wait_until_free(region, write, "RecordedGraph::run")?;
        if let Some(guard) = claims.guard_conflict(region, write) {
            return Err(crate::Error::HostConflict {
                task: first,
                buffer: self.id,
                region: region.public(),
                holder: guard.public(),
            });
        }
        claims.add(*region, write, holder);
        Ok(())
    }
}

/// A host buffer of `len` elements of `T`, allocated by
/// [`Scheduler::alloc_host`](crate::Scheduler::alloc_host).
///
/// Commands name regions of it by element ranges. Reading and writing it from the CPU
/// goes through guards that wait for the tasks touching the range.
///
/// ```
/// use chariot::{Backend, Scheduler};
/// let sched = Scheduler::builder().backend(Backend::Sim).build()?;
/// let mut host = sched.alloc_host::<u32>(8)?;
/// host.write().copy_from_slice(&[1, 2, 3, 4, 5, 6, 7, 8]);
/// assert_eq!(host.read()[7], 8);
/// # Ok::<(), chariot::Error>(())
/// ```
pub struct HostBuffer<T: Element> {
    shared: Arc<HostShared>,
    len: usize,
    _t: PhantomData<fn() -> T>,
}

impl<T: Element> HostBuffer<T> {
    pub(crate) fn new(alloc: HostAlloc, len: usize) -> Self {
        HostBuffer { shared: HostShared::new(alloc), len, _t: PhantomData }
    }

    pub(crate) fn shared(&self) -> &Arc<HostShared> {
        &self.shared
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the buffer has no elements (never: empty buffers are refused).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether the memory is page-locked (always on the CUDA backend).
    pub fn is_pinned(&self) -> bool {
        self.shared.alloc.is_pinned()
    }

    /// The buffer's id, as error messages name it.
    pub fn id(&self) -> u64 {
        self.shared.id
    }

    /// Reads the whole buffer, waiting until no in-flight task writes any of it.
    ///
    /// # Panics
    /// In a callback whose own task writes part of the buffer (the wait would never
    /// end), with the message of [`Error::WaitInCallback`](crate::Error::WaitInCallback):
    /// the callback's task fails with it. [`read_range`](HostBuffer::read_range) returns
    /// that error instead.
    pub fn read(&self) -> HostRead<'_, T> {
        self.read_span(0, self.len, "HostBuffer::read").unwrap_or_else(|e| panic!("{e}"))
    }

    /// Reads elements `range`, waiting until no in-flight task writes them.
    ///
    /// # Errors
    /// A range outside the buffer is [`Error::InvalidLength`](crate::Error::InvalidLength);
    /// in a callback whose own task writes the range,
    /// [`Error::WaitInCallback`](crate::Error::WaitInCallback).
    pub fn read_range(&self, range: impl RangeBounds<usize>) -> crate::Result<HostRead<'_, T>> {
        let r = self.resolve(range)?;
        self.read_span(r.start, r.end, "HostBuffer::read_range")
    }

    /// Writes the whole buffer, waiting until no in-flight task touches any of it.
    ///
    /// # Panics
    /// In a callback whose own task touches part of the buffer, as [`HostBuffer::read`].
    pub fn write(&mut self) -> HostWrite<'_, T> {
        self.write_span(0, self.len, "HostBuffer::write").unwrap_or_else(|e| panic!("{e}"))
    }

    /// Writes elements `range`, waiting until no in-flight task touches them.
    ///
    /// # Errors
    /// As [`HostBuffer::read_range`], for a range the callback's own task touches.
    pub fn write_range(&mut self, range: impl RangeBounds<usize>) -> crate::Result<HostWrite<'_, T>> {
        let r = self.resolve(range)?;
        self.write_span(r.start, r.end, "HostBuffer::write_range")
    }

    /// Resolves a range of elements, checking it lies in the buffer.
    pub(crate) fn resolve(&self, range: impl RangeBounds<usize>) -> crate::Result<Range<usize>> {
        resolve(range, self.len).map_err(|problem| crate::Error::InvalidLength {
            len: self.len,
            elem_size: std::mem::size_of::<T>(),
            problem,
        })
    }

    fn read_span(&self, start: usize, end: usize, call: &'static str) -> crate::Result<HostRead<'_, T>> {
        let size = std::mem::size_of::<T>();
        let region = Region::linear(start * size, (end - start) * size);
        let token = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        let mut claims = self.shared.wait_until_free(&region, false, call)?;
        claims.add(region, false, Holder::UserRead(token));
        drop(claims);
        let bytes = self.shared.alloc.bytes(region.start, region.end());
        Ok(HostRead { shared: &self.shared, token, data: bytemuck::cast_slice(bytes) })
    }

    fn write_span(&mut self, start: usize, end: usize, call: &'static str) -> crate::Result<HostWrite<'_, T>> {
        let size = std::mem::size_of::<T>();
        let region = Region::linear(start * size, (end - start) * size);
        // `&mut self` rules out this handle's read guards; waiting rules out tasks, and
        // holding no claim is enough because a task needs `&self` to be built.
        let mut claims = self.shared.wait_until_free(&region, true, call)?;
        assert!(
            !claims.task_conflict(&region, true),
            "a task claims {region} of host buffer {} under a write guard",
            self.id()
        );
        // Claimed, though no task can be built meanwhile: a recorded graph's run holds
        // no borrow, and must meet the guard.
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        claims.add(region, true, Holder::UserWrite(id));
        drop(claims);
        let shared: &HostShared = &self.shared;
        let token = Exclusive::new(&shared.alloc, region.start..region.end());
        Ok(HostWrite { shared, id, data: bytemuck::cast_slice_mut(exclusive::bytes_mut(token)) })
    }
}

/// Resolves `range` against `len`, or says why it does not fit.
pub(crate) fn resolve(range: impl RangeBounds<usize>, len: usize) -> Result<Range<usize>, LengthProblem> {
    let start = match range.start_bound() {
        Bound::Included(&s) => s,
        Bound::Excluded(&s) => s.checked_add(1).ok_or(LengthProblem::RangeStartOverflow)?,
        Bound::Unbounded => 0,
    };
    let end = match range.end_bound() {
        Bound::Included(&e) => e.checked_add(1).ok_or(LengthProblem::RangeEndOverflow)?,
        Bound::Excluded(&e) => e,
        Bound::Unbounded => len,
    };
    if start > end || end > len {
        return Err(LengthProblem::Range { start, end, len });
    }
    Ok(start..end)
}

impl<T: Element> std::fmt::Debug for HostBuffer<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostBuffer")
            .field("id", &self.shared.id)
            .field("len", &self.len)
            .field("pinned", &self.is_pinned())
            .finish()
    }
}

/// A read guard on a host range: no task writes it while the guard lives, and a
/// submit of such a task is refused with [`Error::HostConflict`](crate::Error::HostConflict)
/// (a guard is not a task: nothing would end it for the task to run after).
pub struct HostRead<'a, T: Element> {
    shared: &'a HostShared,
    token: u64,
    data: &'a [T],
}

impl<T: Element> std::ops::Deref for HostRead<'_, T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        self.data
    }
}

impl<T: Element> Drop for HostRead<'_, T> {
    fn drop(&mut self) {
        self.shared.release(Holder::UserRead(self.token));
    }
}

impl<T: Element> std::fmt::Debug for HostRead<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostRead").field("len", &self.data.len()).finish()
    }
}

/// A write guard on a host range: it borrows the buffer mutably, so no task can be
/// built on it while the guard lives, and no task touched the range when it was made.
pub struct HostWrite<'a, T: Element> {
    shared: &'a HostShared,
    id: u64,
    data: &'a mut [T],
}

impl<T: Element> Drop for HostWrite<'_, T> {
    fn drop(&mut self) {
        self.shared.release(Holder::UserWrite(self.id));
    }
}

impl<T: Element> std::ops::Deref for HostWrite<'_, T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        self.data
    }
}

impl<T: Element> std::ops::DerefMut for HostWrite<'_, T> {
    fn deref_mut(&mut self) -> &mut [T] {
        self.data
    }
}

impl<T: Element> std::fmt::Debug for HostWrite<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostWrite").field("len", &self.data.len()).finish()
    }
}

/// The sim's copy engines hold a host buffer's block while they copy.
impl crate::backend::op::HostBlock for HostShared {
    fn alloc(&self) -> &HostAlloc {
        &self.alloc
    }
}

#[cfg(test)]
mod test {
    use crate::backend::SimProfile;
    use crate::callback::Resource;
    use crate::{Backend, Error, Scheduler, TaskId};
    use std::sync::mpsc;

    #[test]
    fn a_guard_in_a_callback_never_waits_for_its_own_task() {
        let s = Scheduler::builder().backend(Backend::SimWith(SimProfile::instant())).streams(1).build().unwrap();
        let mut host = s.alloc_host::<u32>(64).unwrap();
        host.write().iter_mut().enumerate().for_each(|(i, x)| *x = i as u32);
        let host = std::sync::Arc::new(std::sync::Mutex::new(host));
        let (tx, rx) = mpsc::channel();
        let (h, t) = (host.clone(), tx.clone());
        // Task 1 writes 0..32 (a writing callback) and, in another callback, guards.
        s.task(1, 1)
            .callback_writing(&host.lock().unwrap(), 0..32, |_, _| Ok(()))
            .callback(Resource::Cpu, move |_| {
                let mut b = h.lock().unwrap();
                // Test channel: the receiver outlives the task; a failed send shows as a count.
                let _ = t.send(("read 0..32", b.read_range(0..32).map(|_| ())));
                let _ = t.send(("read 32..64", b.read_range(32..64).map(|_| ())));
                let _ = t.send(("write 16..48", b.write_range(16..48).map(|_| ())));
                Ok(())
            })
            .submit()
            .unwrap();
        s.synchronize().unwrap();
        drop(tx);
        let got: Vec<_> = rx.iter().collect();
        assert_eq!(got.len(), 3);
        for (what, r) in got {
            match (what, r) {
                ("read 32..64", r) => assert!(r.is_ok(), "{r:?}"),
                (what, Err(e @ Error::WaitInCallback { task: TaskId(1), .. })) => {
                    let m = e.to_string();
                    assert!(m.contains("guard") && m.contains("bytes 0..128") && m.contains("callback"), "{what}: {m}");
                }
                (what, r) => panic!("{what}: {r:?}"),
            }
        }
        // Outside callbacks the guards wait as before.
        assert_eq!(host.lock().unwrap().read()[5], 5);
    }
}
