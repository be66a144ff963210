//! Which task: its id, as every layer names it (reports, errors, claims, callbacks), and
//! the mark a thread carries while it runs one of the task's callbacks.
//!
//! While a callback runs, its thread knows which task it serves ([`InCallback`]): a call
//! that would wait for that very task (`synchronize`, a host guard on a range the task
//! claims) asks [`current`] and refuses instead of waiting forever.

use serde::Serialize;
use std::cell::Cell;

/// A task's id, chosen by the user (the paper's `i`); unique within a batch (from one
/// `synchronize` to the next), whether or not its first task has ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct TaskId(pub u64);

impl std::fmt::Display for TaskId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "#{}", self.0)
    }
}

thread_local! {
    /// The callback running on this thread: its scheduler's id and its task.
    static CURRENT: Cell<Option<(u64, TaskId)>> = const { Cell::new(None) };
}

/// Marks this thread as running a callback of `task` (of scheduler `sched`) until it is
/// dropped, unwinding included. Every user callback runs inside one (the task builder
/// wraps it), on whatever thread runs it: an executioner, a dispatcher, a simulated engine.
#[derive(Debug)]
pub(crate) struct InCallback {
    prev: Option<(u64, TaskId)>,
}

impl InCallback {
    pub(crate) fn enter(sched: u64, task: TaskId) -> Self {
        InCallback { prev: CURRENT.with(|c| c.replace(Some((sched, task)))) }
    }
}

impl Drop for InCallback {
    fn drop(&mut self) {
        CURRENT.with(|c| c.set(self.prev));
    }
}

/// The scheduler id and task whose callback runs on this thread, if one does.
pub(crate) fn current() -> Option<(u64, TaskId)> {
    CURRENT.with(Cell::get)
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::callback::run_caught;
    use crate::error::BoxError;

    #[test]
    fn in_callback_marks_the_thread_until_dropped_even_by_a_panic() {
        assert_eq!(current(), None);
        {
            let _outer = InCallback::enter(1, TaskId(7));
            assert_eq!(current(), Some((1, TaskId(7))));
            {
                let _inner = InCallback::enter(2, TaskId(8));
                assert_eq!(current(), Some((2, TaskId(8))));
            }
            assert_eq!(current(), Some((1, TaskId(7))), "the outer mark comes back");
            let r = run_caught(|| -> Result<(), BoxError> {
                let _in = InCallback::enter(3, TaskId(9));
                panic!("boom")
            });
            assert_eq!(r.map_err(|e| e.to_string()), Err("panicked: boom".to_string()));
            assert_eq!(current(), Some((1, TaskId(7))), "unwinding restores the mark");
        }
        assert_eq!(current(), None);
        // Another thread has its own mark.
        let _in = InCallback::enter(1, TaskId(7));
        assert_eq!(std::thread::spawn(current).join().ok(), Some(None));
    }
}

/// Which of a submitted task's `after` ids are held back by the replay capture: bit
/// `i` for the `i`-th where it names at most 64 (no allocation on the submit path),
/// a flag each beyond.
#[derive(Debug)]
pub(crate) enum HeldAfter {
    Bits(u64),
    Flags(Vec<bool>),
}

impl HeldAfter {
    /// None held.
    pub(crate) const NONE: HeldAfter = HeldAfter::Bits(0);

    /// Whether `after[i]` is held, where `is_held` says so of each id.
    pub(crate) fn of(after: &[TaskId], is_held: impl Fn(&TaskId) -> bool) -> HeldAfter {
        if after.len() <= 64 {
            HeldAfter::Bits(after.iter().enumerate().fold(0, |m, (i, p)| m | (u64::from(is_held(p)) << i)))
        } else {
            HeldAfter::Flags(after.iter().map(is_held).collect())
        }
    }

    /// Whether the `i`-th is held.
    pub(crate) fn get(&self, i: usize) -> bool {
        match self {
            HeldAfter::Bits(m) => i < 64 && m >> i & 1 == 1,
            HeldAfter::Flags(f) => f.get(i).copied().unwrap_or(false),
        }
    }
}

/// The tasks a task being submitted runs after: those it named, then those inferred
/// from its host regions and resident data. Inline up to four, the most of a typical
/// task (a tree's or a random DAG's node names one to three), so a submit allocates no
/// list for them.
pub(crate) type Preds = smallvec::SmallVec<[TaskId; 4]>;

#[cfg(test)]
mod held_after_test {
    use super::{HeldAfter, TaskId};

    #[test]
    fn bits_and_flags_agree() {
        for n in [0usize, 1, 63, 64, 65, 200] {
            let after: Vec<TaskId> = (0..n as u64).map(TaskId).collect();
            let h = HeldAfter::of(&after, |p| p.0 % 3 == 1);
            for i in 0..n + 2 {
                assert_eq!(h.get(i), i < n && i % 3 == 1, "n {n} i {i}");
            }
        }
        assert!(!HeldAfter::NONE.get(0));
    }
}
