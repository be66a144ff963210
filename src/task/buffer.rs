//! The task buffer Q (paper §5.2): sealed tasks wait here until a dispatcher with an
//! idle stream pops one. It is kept in the order of the rule on every insertion: a
//! binary heap keyed by the rule's priority, ties broken by arrival (older first).

use super::Task;
use crate::sync::{AtomicUsize, Mutex, Ordering};
use std::cmp::Ordering as CmpOrdering;
use std::collections::BinaryHeap;

/// The ordering rule of the task buffer.
///
/// ```
/// use chariot::Order;
/// assert_eq!(Order::default(), Order::Fcfs);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Order {
    /// First come, first served: arrival order.
    #[default]
    Fcfs,
    /// Largest granularity first (the paper's LF): best for chunks of uneven size.
    LargestFirst,
    /// Smallest granularity first (SF).
    SmallestFirst,
}

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

/// Q: the shared, ordered buffer of waiting tasks.
pub(crate) struct TaskBuffer {
    order: Order,
    heap: Mutex<BinaryHeap<Entry>>,
    len: AtomicUsize,
}

impl TaskBuffer {
    pub(crate) fn new(order: Order) -> Self {
        TaskBuffer { order, heap: Mutex::new(BinaryHeap::new()), len: AtomicUsize::new(0) }
    }

    fn key(&self, granularity: u64) -> u64 {
        match self.order {
            Order::Fcfs => 0,
            Order::LargestFirst => granularity,
            Order::SmallestFirst => u64::MAX - granularity,
        }
    }

    pub(crate) fn push(&self, task: Box<Task>) {
        let entry = Entry { key: self.key(task.granularity), seq: task.seq, task };
        let mut heap = self.heap.lock();
        heap.push(entry);
        self.len.store(heap.len(), Ordering::SeqCst);
    }

    /// Pops the task the rule puts first. Cheap when empty: no lock is taken.
    pub(crate) fn pop(&self) -> Option<Box<Task>> {
        if self.len.load(Ordering::SeqCst) == 0 {
            return None;
        }
        let mut heap = self.heap.lock();
        let task = heap.pop().map(|e| e.task);
        self.len.store(heap.len(), Ordering::SeqCst);
        task
    }
}

impl std::fmt::Debug for TaskBuffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskBuffer").field("order", &self.order).field("len", &self.len.load(Ordering::SeqCst)).finish()
    }
}
