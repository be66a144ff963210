//! The task buffer Q (paper §5.2): sealed tasks wait here until a dispatcher with an
//! idle stream pops one. It is kept in the order of the rule on every insertion: a
//! binary heap keyed by the rule's priority, ties broken by arrival (older first), one
//! per stage a task starts at, so that a dispatcher can take the first task that would
//! not wait behind one of its own (see [`TaskBuffer::pop_for`]).

use super::Task;
use crate::config::Order;
use crate::stage::Stage;
use crate::sync::{AtomicUsize, Mutex, Ordering};
use std::cmp::Ordering as CmpOrdering;
use std::collections::BinaryHeap;

struct Entry {
    key: u64,
    seq: u64,
    task: Box<Task>,
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == CmpOrdering::Equal
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<CmpOrdering> {
        Some(self.cmp(other))
    }
}
impl Ord for Entry {
    // The heap pops the greatest: highest key, then lowest sequence number.
    fn cmp(&self, other: &Self) -> CmpOrdering {
        self.key.cmp(&other.key).then_with(|| other.seq.cmp(&self.seq))
    }
}

/// Per stage, whether a dispatcher may take a task that starts there (indexed by
/// [`Stage::index`]).
pub(crate) type Stages = [bool; Stage::K];

/// Every stage allowed.
pub(crate) const ANY_STAGE: Stages = [true; Stage::K];

/// One heap of Q, split by the stage each task starts at: its next command's as it
/// waits, past the resident fetches its GPU would skip (their pieces all valid there;
/// [`crate::seam::start_stage`]). In the shared heap of several GPUs a fetch counts as a
/// download, whichever GPU takes it. The first task by the rule is the first of the
/// stages' heads. A task without commands (none is admitted) counts as a CPU task.
#[derive(Default)]
struct ByStage([BinaryHeap<Entry>; Stage::K]);

impl ByStage {
    fn push(&mut self, stage: Option<Stage>, entry: Entry) {
        self.0[stage.map_or(0, Stage::index)].push(entry);
    }

    fn len(&self) -> usize {
        self.0.iter().map(BinaryHeap::len).sum()
    }

    fn is_empty(&self) -> bool {
        self.0.iter().all(BinaryHeap::is_empty)
    }

    /// The first task by the rule among those starting at a stage of `allowed`, and
    /// that stage.
    fn head(&self, allowed: Stages) -> Option<(usize, &Entry)> {
        (0..Stage::K)
            .filter(|&k| allowed[k])
            .filter_map(|k| self.0[k].peek().map(|e| (k, e)))
            .max_by(|a, b| a.1.cmp(b.1))
    }

    fn pop(&mut self, stage: usize) -> Option<Entry> {
        self.0[stage].pop()
    }
}

/// The heaps of Q: one for tasks that may run anywhere, one per GPU for tasks whose
/// resident data is there (their `home`).
#[derive(Default)]
struct Heaps {
    anywhere: ByStage,
    homed: Vec<ByStage>,
}

impl Heaps {
    fn len(&self) -> usize {
        self.anywhere.len() + self.homed.iter().map(ByStage::len).sum::<usize>()
    }
}

/// Q: the shared, ordered buffer of waiting tasks.
///
/// Placement: a ready task whose resident data is valid on a GPU waits in
/// that GPU's heap, the others in the shared one. GPU g takes the first, by the rule, of
/// its own heap and the shared one; when both are empty it takes the first of the
/// fullest other GPU's heap if that holds more tasks than `steal_above` (the stream
/// slots of a GPU: more than its owner could start at once), or if that GPU has left
/// the rotation. Moving the data then beats leaving a GPU idle. With one GPU, or no
/// resident data, Q is the one heap of the paper.
pub(crate) struct TaskBuffer {
    order: Order,
    heaps: Mutex<Heaps>,
    len: AtomicUsize,
    steal_above: usize,
    gpus: usize,
}

impl TaskBuffer {
    /// Q without placement (every task in the one shared heap).
    #[cfg(all(test, feature = "model-check"))]
    pub(crate) fn new(order: Order) -> Self {
        TaskBuffer::placing(order, 0, 0)
    }

    /// Q for `gpus` GPUs of `slots` stream slots each.
    pub(crate) fn placing(order: Order, gpus: usize, slots: usize) -> Self {
        let heaps = Heaps { anywhere: ByStage::default(), homed: (0..gpus).map(|_| ByStage::default()).collect() };
        TaskBuffer { order, heaps: Mutex::new(heaps), len: AtomicUsize::new(0), steal_above: slots, gpus }
    }

    fn key(&self, granularity: u64) -> u64 {
        match self.order {
            Order::Fcfs => 0,
            Order::LargestFirst => granularity,
            Order::SmallestFirst => u64::MAX - granularity,
        }
    }

    pub(crate) fn push(&self, task: Box<Task>) {
        // The user's placement first, then where the task's resident data is.
        let home = task.prefer.or(task.residency.home);
        // Where it waits for GPU g, a task whose first fetches g has no need of counts
        // at the stage after them: a kernel placed with its tiles is no upload waiting
        // for the copy engine. (Asked before Q's lock: it reads the buffers' states.)
        // With one GPU the shared heap is that GPU's.
        let stage = match home.or((self.gpus == 1).then_some(0)) {
            Some(g) => crate::seam::start_stage(g, &task),
            None => task.commands.get(task.next).map(|c| c.stage()),
        };
        let entry = Entry { key: self.key(task.granularity), seq: task.seq, task };
        let mut heaps = self.heaps.lock();
        match home.and_then(|g| heaps.homed.get_mut(g)) {
            Some(heap) => heap.push(stage, entry),
            None => heaps.anywhere.push(stage, entry),
        }
        self.len.store(heaps.len(), Ordering::SeqCst);
    }

    /// The tasks waiting in Q (a rank of a cluster asks for more below a limit).
    #[cfg(feature = "mpi")]
    pub(crate) fn waiting(&self) -> usize {
        self.len.load(Ordering::SeqCst)
    }

    /// Pops the task the rule puts first, wherever it waits. Cheap when empty: no lock
    /// is taken.
    pub(crate) fn pop(&self) -> Option<Box<Task>> {
        self.pop_where(None, &|_| false, ANY_STAGE)
    }

    /// Pops the task GPU `gpu` should run next (see the type's comment) among those
    /// that start at a stage of `allowed`; `gone` says whether a GPU has left the
    /// rotation. A GPU whose own or shared tasks all start at stages it may not take
    /// now steals none.
    pub(crate) fn pop_for(&self, gpu: usize, gone: &dyn Fn(usize) -> bool, allowed: Stages) -> Option<Box<Task>> {
        self.pop_where(Some(gpu), gone, allowed)
    }

    fn pop_where(&self, gpu: Option<usize>, gone: &dyn Fn(usize) -> bool, allowed: Stages) -> Option<Box<Task>> {
        if self.len.load(Ordering::SeqCst) == 0 {
            return None;
        }
        let mut heaps = self.heaps.lock();
        let Heaps { anywhere, homed } = &mut *heaps;
        // The heads to compare: the shared heap's, and GPU `gpu`'s (every GPU's for `pop`).
        let rank = |e: &Entry| (e.key, std::cmp::Reverse(e.seq));
        let own = match gpu {
            Some(g) if g < homed.len() => g..g + 1,
            Some(_) => 0..0,
            None => 0..homed.len(),
        };
        // None: the shared heap; Some(h): GPU h's; with the stage of its head.
        let mut pick: Option<(Option<usize>, usize, _)> = anywhere.head(allowed).map(|(k, e)| (None, k, rank(e)));
        for h in own.clone() {
            if let Some((k, e)) = homed[h].head(allowed) {
                if pick.as_ref().is_none_or(|(_, _, r)| rank(e) > *r) {
                    pick = Some((Some(h), k, rank(e)));
                }
            }
        }
        let (from, stage) = match (pick, gpu) {
            (Some((from, stage, _)), _) => (from, stage),
            // Work of its own that it may not take now: it steals none.
            (None, Some(_)) if !anywhere.is_empty() || own.clone().any(|h| !homed[h].is_empty()) => return None,
            // Nothing of its own: steal from the fullest other heap above the limit, or
            // from any GPU that has left the rotation.
            (None, Some(g)) => {
                let (h, stage) = (0..homed.len())
                    .filter(|&h| h != g && (gone(h) || homed[h].len() > self.steal_above))
                    .filter_map(|h| {
                        let (stage, e) = homed[h].head(allowed)?;
                        // A bound task stays (its memory is there) while its GPU lives.
                        (gone(h) || !e.task.bound).then_some((h, stage))
                    })
                    .max_by_key(|&(h, _)| homed[h].len())?;
                (Some(h), stage)
            }
            (None, None) => return None,
        };
        let task = match from {
            None => anywhere.pop(stage),
            Some(h) => homed[h].pop(stage),
        }
        .map(|e| e.task);
        self.len.store(heaps.len(), Ordering::SeqCst);
        task
    }
}

impl std::fmt::Debug for TaskBuffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskBuffer").field("order", &self.order).field("len", &self.len.load(Ordering::SeqCst)).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::{Order, TaskBuffer, ANY_STAGE};
    use crate::ids::TaskId;
    use crate::task::Task;
    use crate::Error;

    fn task(id: u64, granularity: u64, home: Option<usize>) -> Box<Task> {
        let mut t = Box::new(Task {
            id: TaskId(id),
            granularity,
            seq: id,
            commands: Vec::new(),
            next: 0,
            hosts: Vec::new(),
            residency: Default::default(),
            prefer: None,
            bound: false,
        });
        t.residency.home = home;
        t
    }

    #[test]
    fn a_gpu_takes_its_own_and_shared_tasks_in_order_and_steals_only_a_deep_or_orphaned_heap() {
        let q = TaskBuffer::placing(Order::LargestFirst, 2, 2);
        q.push(task(1, 5, None));
        q.push(task(2, 9, Some(1)));
        q.push(task(3, 7, Some(0)));
        let id = |t: Option<Box<Task>>| t.map(|t| t.id.0);
        let never = |_: usize| false;
        // GPU 0: its own (7) before the shared one (5); GPU 1's task (9) is not its own.
        assert_eq!(id(q.pop_for(0, &never, ANY_STAGE)), Some(3));
        assert_eq!(id(q.pop_for(0, &never, ANY_STAGE)), Some(1));
        // Nothing of its own left: GPU 1's heap holds 1 task, not more than S = 2.
        assert_eq!(id(q.pop_for(0, &never, ANY_STAGE)), None);
        // Deeper than S: GPU 0 steals the first of it.
        q.push(task(4, 3, Some(1)));
        q.push(task(5, 8, Some(1)));
        assert_eq!(id(q.pop_for(0, &never, ANY_STAGE)), Some(2));
        // Two left in GPU 1's heap: not stolen, unless GPU 1 has left the rotation.
        assert_eq!(id(q.pop_for(0, &never, ANY_STAGE)), None);
        assert_eq!(id(q.pop_for(0, &|g| g == 1, ANY_STAGE)), Some(5));
        // `pop` takes from anywhere, in order.
        assert_eq!(id(q.pop()), Some(4));
        assert_eq!(id(q.pop()), None);
    }

    /// A dispatcher that has a task waiting to start at a stage takes the first task
    /// that starts elsewhere, in the rule's order among them; the rest stay, in order.
    /// Its own work that it may not take now keeps it from stealing.
    #[test]
    fn a_gpu_takes_the_first_task_of_the_stages_it_may_start() {
        use crate::stage::Stage;
        use crate::task::command::Command;
        let staged = |id, g, home, cpu: bool| {
            let mut t = task(id, g, home);
            t.commands.push(if cpu { Command::Cpu(None) } else { Command::Gpu(None) });
            t
        };
        let q = TaskBuffer::placing(Order::LargestFirst, 2, 1);
        q.push(staged(1, 9, None, true));
        q.push(staged(2, 5, None, false));
        q.push(staged(3, 7, None, false));
        q.push(staged(4, 3, None, true));
        let never = |_: usize| false;
        let mut no_cpu = ANY_STAGE;
        no_cpu[Stage::Cpu.index()] = false;
        let id = |t: Option<Box<Task>>| t.map(|t| t.id.0);
        assert_eq!(id(q.pop_for(0, &never, no_cpu)), Some(3), "the first kernel-first task, not the CPU one");
        assert_eq!(id(q.pop_for(0, &never, no_cpu)), Some(2));
        assert_eq!(id(q.pop_for(0, &never, no_cpu)), None, "only CPU-first tasks are left");
        assert_eq!(id(q.pop_for(0, &never, ANY_STAGE)), Some(1));
        assert_eq!(id(q.pop_for(0, &never, ANY_STAGE)), Some(4));
        // GPU 0 holds a CPU-first task of its own; GPU 1's heap is deep with others.
        q.push(staged(5, 1, Some(0), true));
        for id in 6..9 {
            q.push(staged(id, 1, Some(1), false));
        }
        assert_eq!(id(q.pop_for(0, &never, no_cpu)), None, "work of its own: no stealing");
        assert_eq!(id(q.pop_for(0, &never, ANY_STAGE)), Some(5));
        assert_eq!(id(q.pop_for(0, &never, no_cpu)), Some(6), "nothing of its own: steals GPU 1's first");
    }

    /// A task bound to its GPU (external device memory there) is not stolen from a deep
    /// heap while that GPU lives; once it has left, a live GPU takes it (to fail it).
    #[test]
    fn a_bound_task_is_stolen_only_from_a_gpu_that_left() {
        let q = TaskBuffer::placing(Order::Fcfs, 2, 1);
        for id in 1..=3 {
            let mut t = task(id, 1, None);
            (t.prefer, t.bound) = (Some(1), true);
            q.push(t);
        }
        let never = |_: usize| false;
        assert!(q.pop_for(0, &never, ANY_STAGE).is_none(), "GPU 1's heap is deep, but its tasks are bound to it");
        let gone = |g: usize| g == 1;
        assert_eq!(q.pop_for(0, &gone, ANY_STAGE).map(|t| t.id.0), Some(1));
        assert_eq!(q.pop_for(1, &never, ANY_STAGE).map(|t| t.id.0), Some(2));
    }

    #[test]
    fn order_names_round_trip_and_others_are_refused() {
        for o in Order::ALL {
            assert_eq!(o.name().parse::<Order>().unwrap(), o);
            assert_eq!(o.to_string(), o.name());
        }
        assert_eq!(Order::ALL.len(), 3, "every variant is in Order::ALL");
        for bad in ["", "LF", "Fcfs", "largest-first", "lf ", " sf", "xx"] {
            match bad.parse::<Order>() {
                Err(Error::InvalidConfig { name: "order", value, allowed }) => {
                    assert_eq!(value, format!("{bad:?}"));
                    assert_eq!(allowed, "fcfs, lf or sf");
                }
                other => panic!("{bad:?}: {other:?}"),
            }
        }
    }
}
