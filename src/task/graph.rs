//! The task graph of one batch: which tasks each task runs after, and the
//! tasks held back until those have ended. Pure bookkeeping, kept in the batch (under
//! its lock, `dispatch::shared`); the scheduler adds tasks at submit and the dispatchers
//! end them, and whatever this returns (tasks now ready, tasks that fail because a
//! predecessor failed) they act on after the lock is let go.
//!
//! A task names only tasks submitted before it (an unknown id is refused at submit, and
//! submits are serialised), so every edge points back in submit order and no cycle can
//! form; a task naming itself is the one cycle there is, refused at submit.

use super::Task;
use crate::ids::TaskId;
use rustc_hash::FxHashMap;

/// Where one task of the batch stands.
enum State {
    /// Held until `unmet` predecessors have ended.
    Waiting { task: Box<Task>, unmet: usize },
    /// In Q or on a stream slot.
    Live,
    /// Ended; `failed` if it failed (or did not run because a predecessor failed).
    Ended { failed: bool },
}

struct Node {
    state: State,
    /// Tasks that wait for this one (each once).
    dependents: Vec<TaskId>,
}

/// What [`Graph::add`] did with a task.
pub(crate) enum Added {
    /// Every predecessor has ended well (or it has none): it may run now.
    Ready(Box<Task>),
    /// Held in the graph until its predecessors end.
    Waiting,
    /// A predecessor had failed: the task fails without running.
    Failed(Box<Task>, TaskId),
}

/// A task released by [`Graph::end`].
pub(crate) enum Released {
    /// Its last predecessor ended: it may run now.
    Ready(Box<Task>),
    /// Its predecessor (the id) failed: it fails without running.
    Failed(Box<Task>, TaskId),
}

/// Ids below this find their node by index ([`Graph`]); a vector of at most this many
/// nodes (about 3.5 MB), and only as far as the largest such id a batch used.
const DENSE: u64 = 1 << 16;

/// The graph of the tasks submitted since the last `synchronize`.
///
/// Loops number their tasks densely from 0, batch after batch, and the scheduler looks
/// a task up several times (its submit's checks, a window's cut, its end on a
/// dispatcher): an id below [`DENSE`] finds its node by index, stamped with the batch
/// it was added in, so that a lookup is a bounds check and a compare and forgetting a
/// batch one increment. Other ids are hashed.
pub(crate) struct Graph {
    /// By id: the batch (`stamp`) it was added in, 0 for never, and its node.
    dense: Vec<(u32, Node)>,
    stamp: u32,
    sparse: FxHashMap<TaskId, Node>,
    len: usize,
}

impl Default for Graph {
    fn default() -> Self {
        Graph { dense: Vec::new(), stamp: 1, sparse: FxHashMap::default(), len: 0 }
    }
}

impl Graph {
    fn node(&self, id: TaskId) -> Option<&Node> {
        if id.0 < DENSE {
            return self.dense.get(id.0 as usize).filter(|e| e.0 == self.stamp).map(|e| &e.1);
        }
        self.sparse.get(&id)
    }

    fn node_mut(&mut self, id: TaskId) -> Option<&mut Node> {
        if id.0 < DENSE {
            let stamp = self.stamp;
            return self.dense.get_mut(id.0 as usize).filter(|e| e.0 == stamp).map(|e| &mut e.1);
        }
        self.sparse.get_mut(&id)
    }

    /// Adds `id` in `state`, with no dependents yet (a node of an earlier batch at its
    /// index is replaced, its list's room kept).
    fn insert(&mut self, id: TaskId, state: State) {
        self.len += 1;
        if id.0 >= DENSE {
            self.sparse.insert(id, Node { state, dependents: Vec::new() });
            return;
        }
        let i = id.0 as usize;
        if i >= self.dense.len() {
            // Grown at once, doubling: amortised over the ids.
            let len = (i + 1).max(self.dense.len() * 2).min(DENSE as usize);
            self.dense.resize_with(len, || (0, Node { state: State::Ended { failed: false }, dependents: Vec::new() }));
        }
        let e = &mut self.dense[i];
        e.0 = self.stamp;
        e.1.state = state;
        e.1.dependents.clear();
    }

    /// Whether `id` was submitted in this batch (ended or not).
    pub(crate) fn contains(&self, id: TaskId) -> bool {
        self.node(id).is_some()
    }

    /// Whether `id` was submitted in this batch and has not ended.
    pub(crate) fn unended(&self, id: TaskId) -> bool {
        self.node(id).is_some_and(|n| !matches!(n.state, State::Ended { .. }))
    }

    /// How `id` ended: `Some(true)` failed, `Some(false)` ran well (or is not of this
    /// batch: an earlier one's, ended), `None` not yet.
    pub(crate) fn ended(&self, id: TaskId) -> Option<bool> {
        match self.node(id).map(|n| &n.state) {
            Some(State::Ended { failed }) => Some(*failed),
            Some(_) => None,
            None => Some(false),
        }
    }

    /// Adds `task`, to run after each of `after` (ids of this batch; one not found, from
    /// a batch `synchronize` has closed meanwhile, counts as ended). Allocates per task
    /// (its node and its place in its predecessors' lists), never per command.
    pub(crate) fn add(&mut self, task: Box<Task>, after: &[TaskId]) -> Added {
        let id = task.id;
        debug_assert!(!self.contains(id), "task {id} added twice");
        let mut unmet = 0;
        let mut failed = None;
        for p in after {
            let Some(pred) = self.node_mut(*p) else { continue };
            match pred.state {
                State::Ended { failed: false } => {}
                State::Ended { failed: true } => failed = failed.or(Some(*p)),
                State::Waiting { .. } | State::Live => {
                    if !pred.dependents.contains(&id) {
                        pred.dependents.push(id);
                        unmet += 1;
                    }
                }
            }
        }
        if let Some(cause) = failed {
            // Ended at once (the caller ends it); the lists it joined skip it then.
            self.insert(id, State::Ended { failed: true });
            return Added::Failed(task, cause);
        }
        if unmet == 0 {
            self.insert(id, State::Live);
            return Added::Ready(task);
        }
        self.insert(id, State::Waiting { task, unmet });
        Added::Waiting
    }

    /// Adds task `id` as running: a task of a replay window, whose predecessors are all
    /// in its window (which orders them) or ended well.
    pub(crate) fn add_live(&mut self, id: TaskId) {
        debug_assert!(!self.contains(id), "task {id} added twice");
        self.insert(id, State::Live);
    }

    /// Task `id` ended (`failed` if it failed): its waiting dependents whose last
    /// predecessor it was are released ready, or, if it failed, every waiting dependent
    /// is released to fail (ending each of those in turn releases theirs).
    pub(crate) fn end(&mut self, id: TaskId, failed: bool, out: &mut Vec<Released>) {
        let Some(node) = self.node_mut(id) else { return };
        node.state = State::Ended { failed };
        let dependents = std::mem::take(&mut node.dependents);
        for &d in &dependents {
            let Some(dep) = self.node_mut(d) else { continue };
            let State::Waiting { unmet, .. } = &mut dep.state else { continue };
            *unmet -= 1;
            if failed || *unmet == 0 {
                let next = if failed { State::Ended { failed: true } } else { State::Live };
                let State::Waiting { task, .. } = std::mem::replace(&mut dep.state, next) else { unreachable!() };
                out.push(if failed { Released::Failed(task, id) } else { Released::Ready(task) });
            }
        }
    }

    /// Tasks of this batch (ended or not).
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Tasks held back now.
    pub(crate) fn waiting(&self) -> usize {
        let dense = self.dense.iter().filter(|e| e.0 == self.stamp).map(|e| &e.1);
        dense.chain(self.sparse.values()).filter(|n| matches!(n.state, State::Waiting { .. })).count()
    }

    /// Forgets the batch (`synchronize`, once every task has ended): a new stamp (the
    /// vector's stamps wiped only when they run out), the hashed ids cleared keeping
    /// their room.
    pub(crate) fn clear(&mut self) {
        debug_assert_eq!(self.waiting(), 0, "synchronize with tasks held back");
        if self.stamp == u32::MAX {
            self.dense.iter_mut().for_each(|e| e.0 = 0);
            self.stamp = 0;
        }
        self.stamp += 1;
        self.sparse.clear();
        self.len = 0;
    }
}

impl std::fmt::Debug for Graph {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Graph").field("tasks", &self.len).field("waiting", &self.waiting()).finish()
    }
}

#[cfg(test)]
mod test {
    use super::*;

    fn task(id: u64) -> Box<Task> {
        Box::new(Task {
            id: TaskId(id),
            granularity: 1,
            seq: id,
            commands: Vec::new(),
            next: 0,
            hosts: Vec::new(),
            residency: Default::default(),
            prefer: None,
            bound: false,
        })
    }

    fn ids(out: &[Released]) -> Vec<(u64, bool)> {
        out.iter()
            .map(|r| match r {
                Released::Ready(t) => (t.id.0, true),
                Released::Failed(t, _) => (t.id.0, false),
            })
            .collect()
    }

    #[test]
    fn a_diamond_releases_its_join_after_both_branches() {
        let mut g = Graph::default();
        assert!(matches!(g.add(task(1), &[]), Added::Ready(_)));
        assert!(matches!(g.add(task(2), &[TaskId(1)]), Added::Waiting));
        assert!(matches!(g.add(task(3), &[TaskId(1), TaskId(1)]), Added::Waiting));
        assert!(matches!(g.add(task(4), &[TaskId(2), TaskId(3)]), Added::Waiting));
        assert_eq!(g.waiting(), 3);
        let mut out = Vec::new();
        g.end(TaskId(1), false, &mut out);
        assert_eq!(ids(&out), [(2, true), (3, true)], "a repeated predecessor counts once");
        out.clear();
        g.end(TaskId(2), false, &mut out);
        assert!(out.is_empty());
        g.end(TaskId(3), false, &mut out);
        assert_eq!(ids(&out), [(4, true)]);
        out.clear();
        // A task after ones that ended runs at once; after a live one, it waits.
        g.end(TaskId(4), false, &mut out);
        assert!(matches!(g.add(task(5), &[TaskId(4), TaskId(1)]), Added::Ready(_)));
        assert!(matches!(g.add(task(6), &[TaskId(5)]), Added::Waiting));
        assert!(g.contains(TaskId(5)) && !g.contains(TaskId(7)));
        g.end(TaskId(5), false, &mut out);
        assert_eq!(ids(&out), [(6, true)]);
        g.clear();
        assert!(!g.contains(TaskId(1)));
    }

    #[test]
    fn ids_by_index_and_hashed_are_forgotten_with_their_batch() {
        let mut g = Graph::default();
        let big = DENSE + 5;
        let mut out = Vec::new();
        for batch in 0..3u64 {
            assert!(!g.contains(TaskId(3)) && !g.contains(TaskId(big)), "batch {batch}: nothing yet");
            assert!(matches!(g.add(task(3), &[]), Added::Ready(_)));
            assert!(matches!(g.add(task(big), &[TaskId(3)]), Added::Waiting));
            assert!(matches!(g.add(task(4), &[TaskId(big)]), Added::Waiting));
            assert_eq!((g.len(), g.waiting()), (3, 2), "batch {batch}");
            g.end(TaskId(3), false, &mut out);
            assert_eq!(ids(&out), [(big, true)], "batch {batch}: the hashed id after the indexed one");
            out.clear();
            g.end(TaskId(big), batch == 1, &mut out);
            assert_eq!(ids(&out), [(4, batch != 1)], "batch {batch}: the indexed id after the hashed one");
            out.clear();
            g.end(TaskId(4), batch == 1, &mut out);
            assert_eq!(g.ended(TaskId(4)), Some(batch == 1));
            g.clear();
            assert_eq!(g.len(), 0);
        }
        // The stamps wrap: every index is wiped, nothing of the last batch is seen.
        g.add_live(TaskId(7));
        g.end(TaskId(7), false, &mut out);
        g.stamp = u32::MAX;
        g.add_live(TaskId(8));
        g.end(TaskId(8), false, &mut out);
        g.clear();
        assert!(!g.contains(TaskId(7)) && !g.contains(TaskId(8)) && g.stamp == 1);
    }

    #[test]
    fn a_failure_fails_the_waiting_dependents_once() {
        let mut g = Graph::default();
        let _ = g.add(task(1), &[]);
        let _ = g.add(task(2), &[]);
        let _ = g.add(task(3), &[TaskId(1), TaskId(2)]);
        let _ = g.add(task(4), &[TaskId(3)]);
        let mut out = Vec::new();
        g.end(TaskId(1), true, &mut out);
        assert!(matches!(&out[..], [Released::Failed(t, TaskId(1))] if t.id == TaskId(3)));
        out.clear();
        // Task 3's end (as the caller does) fails task 4; task 2's end releases nothing.
        g.end(TaskId(3), true, &mut out);
        assert_eq!(ids(&out), [(4, false)]);
        out.clear();
        g.end(TaskId(2), false, &mut out);
        assert!(out.is_empty());
        assert!(matches!(g.add(task(5), &[TaskId(2), TaskId(4)]), Added::Failed(_, TaskId(4))));
        assert!(matches!(g.add(task(6), &[TaskId(99)]), Added::Ready(_)), "an id of a closed batch");
    }
}
