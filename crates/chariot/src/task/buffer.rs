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

impl Order {
    /// Every rule, in the order of the names in error messages and help texts.
    ///
    /// ```
    /// use chariot::Order;
    /// let names: Vec<&str> = Order::ALL.iter().map(|o| o.name()).collect();
    /// assert_eq!(names, ["fcfs", "lf", "sf"]);
    /// ```
    pub const ALL: [Order; 3] = [Order::Fcfs, Order::LargestFirst, Order::SmallestFirst];

    /// The rule's short name, the one command lines take: `fcfs`, `lf` or `sf`.
    /// [`Display`](std::fmt::Display) writes it, and [`str::parse`] reads it back.
    ///
    /// ```
    /// use chariot::Order;
    /// assert_eq!(Order::LargestFirst.name(), "lf");
    /// assert_eq!(Order::SmallestFirst.to_string(), "sf");
    /// assert_eq!("fcfs".parse::<Order>()?, Order::Fcfs);
    /// # Ok::<(), chariot::Error>(())
    /// ```
    pub fn name(&self) -> &'static str {
        match self {
            Order::Fcfs => "fcfs",
            Order::LargestFirst => "lf",
            Order::SmallestFirst => "sf",
        }
    }
}

impl std::fmt::Display for Order {
    /// Writes the short name ([`Order::name`]).
    ///
    /// ```
    /// use chariot::Order;
    /// assert_eq!(format!("order {}", Order::Fcfs), "order fcfs");
    /// ```
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Order {
    type Err = crate::Error;

    /// Reads a short name ([`Order::name`]): exactly `fcfs`, `lf` or `sf`, lower case.
    /// This is the one parser of order names; every program of the crate uses it.
    ///
    /// ```
    /// use chariot::{Error, Order};
    /// assert_eq!("lf".parse::<Order>()?, Order::LargestFirst);
    /// let err = "largest".parse::<Order>().unwrap_err();
    /// assert!(matches!(err, Error::InvalidConfig { name: "order", .. }));
    /// assert_eq!(err.to_string(), r#"invalid configuration: order = "largest"; allowed: fcfs, lf or sf"#);
    /// # Ok::<(), chariot::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`crate::Error::InvalidConfig`] named `order` for any other text (another case,
    /// surrounding spaces and the empty string included), listing the names allowed.
    fn from_str(s: &str) -> crate::Result<Order> {
        Order::ALL.into_iter().find(|o| o.name() == s).ok_or_else(|| {
            let names: Vec<&str> = Order::ALL.iter().map(|o| o.name()).collect();
            let (last, rest) = names.split_last().expect("Order::ALL is not empty");
            crate::Error::InvalidConfig {
                name: "order",
                value: format!("{s:?}"),
                allowed: format!("{} or {last}", rest.join(", ")),
            }
        })
    }
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

#[cfg(test)]
mod tests {
    use super::Order;
    use crate::Error;

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
