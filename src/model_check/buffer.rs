//! Q's order under a concurrent producer and two consumers.

use super::{random, spawn, task};
use crate::signal::Signal;
use crate::task::buffer::TaskBuffer;
use crate::task::Order;
use shuttle::sync::atomic::AtomicUsize;
use std::sync::atomic::Ordering::SeqCst;
use std::sync::Arc;

/// Q under a concurrent producer and two consumers. The producer pushes in the rule's
/// own order (each push ranks at or after every earlier one), so whatever the
/// interleaving, Q hands tasks out in that order: each consumer's pops must follow it,
/// and together they take every task exactly once. Consumers park on a `Signal` the
/// producer rings after each push, as dispatchers do.
fn buffer_order(order: Order, granularities: &'static [u64]) {
    random(2000, move || {
        let n = granularities.len();
        let buffer = Arc::new(TaskBuffer::new(order));
        let signals: Arc<[Signal; 2]> = Arc::new(Default::default());
        let taken = Arc::new(AtomicUsize::new(0));
        let consumers: Vec<_> = (0..2)
            .map(|c| {
                let (buffer, signals, taken) = (buffer.clone(), signals.clone(), taken.clone());
                spawn(format!("consumer {c}"), move || {
                    let mut got = Vec::new();
                    loop {
                        let seen = signals[c].epoch();
                        if let Some(t) = buffer.pop() {
                            got.push((t.granularity, t.seq));
                            if taken.fetch_add(1, SeqCst) + 1 == n {
                                signals[1 - c].notify();
                            }
                            continue;
                        }
                        if taken.load(SeqCst) == n {
                            return got;
                        }
                        signals[c].park(seen);
                    }
                })
            })
            .collect();
        for (id, &g) in granularities.iter().enumerate() {
            buffer.push(task(id, g));
            for s in signals.iter() {
                s.notify();
            }
        }
        let mut all = Vec::new();
        for c in consumers {
            let got = c.join().expect("consumers do not panic");
            for pair in got.windows(2) {
                let ((g0, s0), (g1, s1)) = (pair[0], pair[1]);
                let in_order = match order {
                    Order::Fcfs => s0 < s1,
                    Order::LargestFirst => g0 > g1 || (g0 == g1 && s0 < s1),
                    Order::SmallestFirst => g0 < g1 || (g0 == g1 && s0 < s1),
                };
                assert!(in_order, "{order:?}: popped {:?} before {:?}", pair[0], pair[1]);
            }
            all.extend(got.into_iter().map(|(_, seq)| seq));
        }
        all.sort_unstable();
        assert_eq!(all, (0..n as u64).collect::<Vec<_>>(), "every task popped exactly once");
    });
}

#[test]
fn buffer_fcfs() {
    buffer_order(Order::Fcfs, &[3, 1, 4, 1, 5]);
}

#[test]
fn buffer_largest_first() {
    buffer_order(Order::LargestFirst, &[5, 4, 4, 2, 2]);
}

#[test]
fn buffer_smallest_first() {
    buffer_order(Order::SmallestFirst, &[1, 1, 2, 3, 3]);
}
