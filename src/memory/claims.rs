//! Region claims on one host buffer: who may read or write which bytes now.
//!
//! A task claims, at submit, every host region its commands touch (downloads read,
//! readbacks and writing callbacks write) and gives the claims back when it ends. A
//! user guard claims its range while it lives. Two claims conflict when their regions
//! share a byte and one of them writes, unless both belong to the same task (a task's
//! commands run in order). A task whose claims conflict with earlier tasks' runs after
//! them (docs/graphs.md): its claims are *dormant* until those tasks have ended, then
//! *active*. Dormant claims are seen by later submits (which chain after them) and by
//! guards (which wait for them), and ignored by [`Claims::exclusive_to`]: a dormant
//! claim's task runs nothing yet. A submit that conflicts with a read guard, or whose
//! task asked for it, is refused instead. User guards wait, on the buffer's condition
//! variable, for conflicting tasks to end.
//!
//! Invariant: no two *active* claims of different holders conflict. A task's claims
//! become active only once every task whose claim conflicted with them at its submit
//! has ended (released its claims); a claim registered later that conflicts is either
//! refused (a read guard meeting a task's write, or a task that refuses conflicts),
//! waits (a guard; a task's claim, dormant until this task ends), or cannot be made (a
//! write guard borrows the buffer mutably).
//!
//! Writing host bytes needs an [`Exclusive`]: the proof, made only in this module, that
//! nothing else touches them (the `unsafe` write it unlocks is in `backend/host_alloc`).

use crate::backend::host_alloc::HostAlloc;
use crate::ids::TaskId;
use std::collections::{BTreeMap, HashMap};
use std::ops::Range;

/// Who holds a claim.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Holder {
    /// A submitted task, until it ends.
    Task(TaskId),
    /// A user's read guard.
    UserRead(u64),
    /// A user's write guard (a recorded graph's run, which no borrow orders, meets it).
    UserWrite(u64),
    /// A recorded graph's part, while runs of it are queued or run
    /// (`ext::replay::recorded`): guards wait for it as for a task.
    #[cfg(feature = "replay")]
    Run(u64),
}

impl std::fmt::Display for Holder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.public().fmt(f)
    }
}

impl Holder {
    /// Whether it is a user's guard (which nothing but the user ends).
    fn is_guard(self) -> bool {
        matches!(self, Holder::UserRead(_) | Holder::UserWrite(_))
    }

    /// The holder as an error names it.
    pub(crate) fn public(self) -> crate::error::ConflictHolder {
        match self {
            Holder::Task(t) => crate::error::ConflictHolder::Task(t),
            Holder::UserRead(_) => crate::error::ConflictHolder::ReadGuard,
            Holder::UserWrite(_) => crate::error::ConflictHolder::WriteGuard,
            #[cfg(feature = "replay")]
            Holder::Run(_) => crate::error::ConflictHolder::RecordedRun,
        }
    }
}

/// A set of bytes: `height` rows of `width` bytes, `pitch` bytes apart, from `start`.
/// A 1-D region has `height` = 1.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Region {
    pub start: usize,
    pub width: usize,
    pub pitch: usize,
    pub height: usize,
}

impl Region {
    pub(crate) fn linear(start: usize, len: usize) -> Self {
        Region { start, width: len, pitch: len, height: 1 }
    }

    /// One past the last byte.
    pub(crate) fn end(&self) -> usize {
        if self.height == 0 || self.width == 0 {
            self.start
        } else {
            self.start + (self.height - 1) * self.pitch + self.width
        }
    }

    fn is_empty(&self) -> bool {
        self.width == 0 || self.height == 0
    }

    /// Whether the byte interval `lo..hi` meets a row of this region.
    fn meets_interval(&self, lo: usize, hi: usize) -> bool {
        if self.is_empty() || hi <= self.start || lo >= self.end() {
            return false;
        }
        if self.height == 1 {
            return true;
        }
        // Rows whose span can reach lo..hi.
        let first = lo.saturating_sub(self.start + self.width - 1) / self.pitch;
        let last = ((hi - 1 - self.start.min(hi - 1)) / self.pitch).min(self.height - 1);
        (first..=last).any(|row| {
            let a = self.start + row * self.pitch;
            a < hi && lo < a + self.width
        })
    }

    /// Whether the two regions share a byte.
    pub(crate) fn overlaps(&self, other: &Region) -> bool {
        if self.is_empty() || other.is_empty() || self.end() <= other.start || other.end() <= self.start {
            return false;
        }
        let (few, many) = if self.height <= other.height { (self, other) } else { (other, self) };
        (0..few.height).any(|row| {
            let a = few.start + row * few.pitch;
            many.meets_interval(a, a + few.width)
        })
    }
}

impl std::fmt::Display for Region {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.public().fmt(f)
    }
}

impl Region {
    /// The region as an error names it.
    pub(crate) fn public(&self) -> crate::error::HostRegion {
        crate::error::HostRegion { start: self.start, width: self.width, pitch: self.pitch, height: self.height }
    }
}

/// Proof that bytes `start..end` of one host allocation are touched by nothing else
/// for `'a`: what [`exclusive::bytes_mut`](crate::backend::host_alloc::exclusive::bytes_mut)
/// takes to hand out a writable slice. Neither `Clone` nor `Copy`: one slice per proof.
///
/// Only `src/memory` makes one (the fields and [`Exclusive::new`] are private to it),
/// in two places, each under the buffer's claims lock:
/// - `HostShared::task_exclusive`, for a task running one of its commands, after
///   [`Claims::exclusive_to`] found the task's (active) write claim covering the bytes
///   and no other active claim meeting them. The claim is given back only when the task
///   ends, after the command; the token and its slice are used within the command. A
///   dormant claim meeting them belongs to a task that runs after this one (it found
///   this task's claim at its submit), so it touches no byte before this claim is gone.
/// - `HostBuffer::write_span`, after [`Claims::task_conflict`] found no task's claim
///   meeting the bytes. `'a` borrows the `HostBuffer` mutably: no task can be built on
///   it (that takes `&HostBuffer`) and no read guard of it lives (they borrow it too).
#[derive(Debug)]
pub(crate) struct Exclusive<'a> {
    alloc: &'a HostAlloc,
    start: usize,
    end: usize,
}

impl<'a> Exclusive<'a> {
    /// Only for the two places named in the type's doc, once their check passed.
    pub(super) fn new(alloc: &'a HostAlloc, bytes: Range<usize>) -> Self {
        Exclusive { alloc, start: bytes.start, end: bytes.end }
    }

    /// The allocation the bytes are in.
    pub(crate) fn alloc(&self) -> &'a HostAlloc {
        self.alloc
    }

    /// The bytes.
    pub(crate) fn range(&self) -> Range<usize> {
        self.start..self.end
    }
}

#[derive(Clone, Copy, Debug)]
struct Claim {
    region: Region,
    write: bool,
    holder: Holder,
    /// False while the holder is a task waiting for its predecessors (see the module).
    active: bool,
}

/// The live claims of one host buffer, indexed so that a check costs O(log n + k) for
/// claims of similar length (k the claims near the region), and a release O(k log n)
/// for the holder's k claims: thousands of tasks may be in flight at once.
#[derive(Debug, Default)]
pub(crate) struct Claims {
    /// By (first byte, claim number).
    by_start: BTreeMap<(usize, u64), Claim>,
    by_holder: HashMap<Holder, Vec<(usize, u64)>>,
    /// The longest span (first to last byte) of a live claim: a claim that meets a
    /// region starts at most this far before it.
    max_span: usize,
    next: u64,
}

impl Claims {
    fn near<'a>(&'a self, region: &Region) -> impl Iterator<Item = &'a Claim> + 'a {
        let lo = region.start.saturating_sub(self.max_span);
        let hi = region.end();
        let r = *region;
        self.by_start.range((lo, 0)..(hi, 0)).map(|(_, c)| c).filter(move |c| c.region.overlaps(&r))
    }

    /// The first claim that conflicts with `region` (written if `write`) by `holder`,
    /// dormant or active (the tests' short form of [`Claims::conflicts`]).
    #[cfg(test)]
    pub(crate) fn conflict(&self, region: &Region, write: bool, holder: Holder) -> Option<Holder> {
        self.near(region).find(|c| c.holder != holder && (write || c.write)).map(|c| c.holder)
    }

    /// Every holder of a claim (dormant or active) that conflicts with `region` (written
    /// if `write`) by `holder`, added to `out` once each: the tasks a submit runs after.
    pub(crate) fn conflicts(&self, region: &Region, write: bool, holder: Holder, out: &mut Vec<Holder>) {
        for c in self.near(region).filter(|c| c.holder != holder && (write || c.write)) {
            if !out.contains(&c.holder) {
                out.push(c.holder);
            }
        }
    }

    /// Whether a dormant claim (a task waiting for its predecessors) conflicts with a
    /// user access: a guard in a callback must not wait for one (it may wait, through
    /// the graph, for the callback's own task).
    pub(crate) fn dormant_conflict(&self, region: &Region, write: bool) -> Option<Holder> {
        self.near(region).find(|c| !c.active && (write || c.write)).map(|c| c.holder)
    }

    /// Whether a task (any task, or a recorded graph's run) holds a claim conflicting
    /// with a user access.
    pub(crate) fn task_conflict(&self, region: &Region, write: bool) -> bool {
        self.near(region).any(|c| !c.holder.is_guard() && (write || c.write))
    }

    /// The first user guard whose claim conflicts with `region` (written if `write`).
    #[cfg(feature = "replay")]
    pub(crate) fn guard_conflict(&self, region: &Region, write: bool) -> Option<Holder> {
        self.near(region).find(|c| c.holder.is_guard() && (write || c.write)).map(|c| c.holder)
    }

    /// The region of a claim of `holder` that conflicts with a user access (writing if
    /// `write`), if any: what a guard would wait for.
    pub(crate) fn held_against(&self, region: &Region, write: bool, holder: Holder) -> Option<Region> {
        self.near(region).find(|c| c.holder == holder && (write || c.write)).map(|c| c.region)
    }

    /// Whether `holder` may write the 1-D `region` alone: an active write claim of its
    /// own covers every byte, and no active claim of another holder meets any (a
    /// dormant one belongs to a task that runs after `holder`'s: see the module).
    pub(crate) fn exclusive_to(&self, region: &Region, holder: Holder) -> bool {
        let covered = self.by_holder.get(&holder).is_some_and(|keys| {
            keys.iter().filter_map(|k| self.by_start.get(k)).any(|c| {
                let r = &c.region;
                c.active
                    && c.write
                    && (r == region
                        || (region.height == 1 && r.height == 1 && r.start <= region.start && region.end() <= r.end()))
            })
        });
        covered && !self.near(region).any(|c| c.active && c.holder != holder)
    }

    /// Adds an active claim (a guard's, or a task's that waits for no other task).
    pub(crate) fn add(&mut self, region: Region, write: bool, holder: Holder) {
        self.insert(Claim { region, write, holder, active: true });
    }

    /// Adds a dormant claim: a task's, made at its submit, until [`Claims::activate`].
    pub(crate) fn add_dormant(&mut self, region: Region, write: bool, holder: Holder) {
        self.insert(Claim { region, write, holder, active: false });
    }

    fn insert(&mut self, claim: Claim) {
        let key = (claim.region.start, self.next);
        self.next += 1;
        self.max_span = self.max_span.max(claim.region.end() - claim.region.start);
        self.by_start.insert(key, claim);
        self.by_holder.entry(claim.holder).or_default().push(key);
    }

    /// Makes every claim of `holder` active: its task is ready to run (every task whose
    /// claim conflicted with one of them at its submit has ended).
    pub(crate) fn activate(&mut self, holder: Holder) {
        if let Some(keys) = self.by_holder.get(&holder) {
            for k in keys {
                if let Some(c) = self.by_start.get_mut(k) {
                    c.active = true;
                }
            }
        }
    }

    /// Drops every claim of `holder`; returns whether any was dropped.
    pub(crate) fn release(&mut self, holder: Holder) -> bool {
        let Some(keys) = self.by_holder.remove(&holder) else { return false };
        for k in keys {
            self.by_start.remove(&k);
        }
        if self.by_start.is_empty() {
            self.max_span = 0;
        }
        true
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn column_blocks_of_one_matrix_do_not_overlap() {
        // 8 rows of 64 bytes; two tasks take columns 0..16 and 16..32 of every row.
        let a = Region { start: 0, width: 16, pitch: 64, height: 8 };
        let b = Region { start: 16, width: 16, pitch: 64, height: 8 };
        assert!(!a.overlaps(&b));
        let c = Region { start: 8, width: 16, pitch: 64, height: 8 };
        assert!(a.overlaps(&c) && b.overlaps(&c));
        // A row-major block (2 whole rows) meets column blocks.
        let rows = Region::linear(128, 128);
        assert!(rows.overlaps(&a) && a.overlaps(&rows));
        assert!(!Region::linear(0, 16).overlaps(&Region::linear(16, 16)));
        assert!(!Region::linear(40, 10).overlaps(&a));
    }

    #[test]
    fn readers_share_writers_exclude() {
        let mut c = Claims::default();
        let t1 = Holder::Task(TaskId(1));
        let t2 = Holder::Task(TaskId(2));
        c.add(Region::linear(0, 100), false, t1);
        assert_eq!(c.conflict(&Region::linear(50, 10), false, t2), None);
        assert_eq!(c.conflict(&Region::linear(50, 10), true, t2), Some(t1));
        assert_eq!(c.conflict(&Region::linear(50, 10), true, t1), None);
        assert!(c.release(t1));
        assert!(!c.task_conflict(&Region::linear(0, 100), true));
    }

    #[test]
    fn held_against_names_only_the_holders_conflicting_claim() {
        let mut c = Claims::default();
        let (t1, t2) = (Holder::Task(TaskId(1)), Holder::Task(TaskId(2)));
        c.add(Region::linear(0, 100), true, t1);
        c.add(Region::linear(200, 100), false, t1);
        c.add(Region::linear(400, 100), true, t2);
        assert_eq!(c.held_against(&Region::linear(50, 10), false, t1), Some(Region::linear(0, 100)));
        assert_eq!(c.held_against(&Region::linear(250, 10), false, t1), None, "readers share");
        assert_eq!(c.held_against(&Region::linear(250, 10), true, t1), Some(Region::linear(200, 100)));
        assert_eq!(c.held_against(&Region::linear(450, 10), true, t1), None, "task 2's claim");
        assert_eq!(c.held_against(&Region::linear(100, 100), true, t1), None, "no shared byte");
    }

    #[test]
    fn exclusive_needs_an_own_covering_write_claim_and_no_other() {
        let mut c = Claims::default();
        let (t1, t2) = (Holder::Task(TaskId(1)), Holder::Task(TaskId(2)));
        c.add(Region::linear(0, 100), true, t1);
        c.add(Region::linear(200, 100), false, t1);
        assert!(c.exclusive_to(&Region::linear(0, 100), t1));
        assert!(c.exclusive_to(&Region::linear(10, 20), t1), "inside its claim");
        assert!(!c.exclusive_to(&Region::linear(90, 20), t1), "past its claim");
        assert!(!c.exclusive_to(&Region::linear(200, 10), t1), "a read claim");
        assert!(!c.exclusive_to(&Region::linear(0, 10), t2), "another's claim");
        c.add(Region::linear(250, 100), false, Holder::UserRead(7));
        c.add(Region::linear(80, 10), false, Holder::UserRead(7));
        assert!(!c.exclusive_to(&Region::linear(0, 100), t1), "a reader meets it");
        assert!(c.exclusive_to(&Region::linear(0, 50), t1));
    }

    #[test]
    fn dormant_claims_chain_but_do_not_block_exclusive() {
        let mut c = Claims::default();
        let (t1, t2, t3) = (Holder::Task(TaskId(1)), Holder::Task(TaskId(2)), Holder::Task(TaskId(3)));
        c.add(Region::linear(0, 100), true, t1);
        // Task 2 reads what task 1 writes: dormant, seen by conflicts and guards.
        let mut preds = Vec::new();
        c.conflicts(&Region::linear(50, 100), false, t2, &mut preds);
        assert_eq!(preds, [t1]);
        c.add_dormant(Region::linear(50, 100), false, t2);
        assert!(c.exclusive_to(&Region::linear(0, 100), t1), "a dormant reader does not block the writer");
        assert!(c.task_conflict(&Region::linear(120, 4), true), "a write guard waits for the dormant claim");
        assert_eq!(c.dormant_conflict(&Region::linear(120, 4), true), Some(t2));
        assert_eq!(c.dormant_conflict(&Region::linear(120, 4), false), None, "readers share");
        // Task 3 writes over both: it runs after each, once.
        let mut preds = Vec::new();
        c.conflicts(&Region::linear(0, 200), true, t3, &mut preds);
        c.conflicts(&Region::linear(60, 10), true, t3, &mut preds);
        assert_eq!(preds, [t1, t2]);
        c.add_dormant(Region::linear(0, 200), true, t3);
        assert!(!c.exclusive_to(&Region::linear(0, 200), t3), "a dormant claim proves nothing");
        c.release(t1);
        c.activate(t2);
        c.release(t2);
        c.activate(t3);
        assert!(c.exclusive_to(&Region::linear(0, 200), t3));
        assert_eq!(c.dormant_conflict(&Region::linear(0, 200), true), None);
    }

    #[test]
    fn many_claims_index() {
        let mut c = Claims::default();
        for i in 0..10_000u64 {
            c.add(Region::linear(i as usize * 4, 4), true, Holder::Task(TaskId(i)));
        }
        assert_eq!(c.conflict(&Region::linear(40_000, 4), true, Holder::Task(TaskId(99_999))), None);
        assert_eq!(
            c.conflict(&Region::linear(39_998, 4), false, Holder::Task(TaskId(99_999))),
            Some(Holder::Task(TaskId(9_999)))
        );
        // A long read claim far to the left still meets a region on its right end.
        c.add(Region::linear(0, 50_000), false, Holder::Task(TaskId(77_777)));
        assert_eq!(
            c.conflict(&Region::linear(49_000, 8), true, Holder::Task(TaskId(88_888))),
            Some(Holder::Task(TaskId(77_777)))
        );
        for i in 0..10_000u64 {
            assert!(c.release(Holder::Task(TaskId(i))));
        }
        assert!(c.release(Holder::Task(TaskId(77_777))));
        assert_eq!(c.max_span, 0);
    }
}
