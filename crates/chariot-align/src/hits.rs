//! Results: a running top-k per query, and the tab-separated output file.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

/// One hit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hit {
    /// Score.
    pub score: i32,
    /// Index of the subject in the database (file order).
    pub seq: u64,
    /// Its name.
    pub id: String,
}

impl Ord for Hit {
    /// Better first: higher score, then earlier in the database.
    fn cmp(&self, o: &Self) -> Ordering {
        o.score.cmp(&self.score).then(self.seq.cmp(&o.seq))
    }
}
impl PartialOrd for Hit {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}

/// The k best hits seen so far.
#[derive(Debug)]
pub struct TopK {
    k: usize,
    /// Max-heap on "worse": its top is the worst hit kept.
    heap: BinaryHeap<Hit>,
}

impl TopK {
    /// Keeps the `k` best.
    pub fn new(k: usize) -> Self {
        TopK { k, heap: BinaryHeap::with_capacity(k + 1) }
    }

    /// Offers a hit; `id` is only built when it is kept.
    pub fn offer(&mut self, score: i32, seq: u64, id: impl FnOnce() -> String) {
        if self.k == 0 {
            return;
        }
        if self.heap.len() == self.k {
            let worst = self.heap.peek().expect("full heap");
            if (Reverse(score), seq) >= (Reverse(worst.score), worst.seq) {
                return;
            }
            self.heap.pop();
        }
        self.heap.push(Hit { score, seq, id: id() });
    }

    /// The hits kept, best first.
    pub fn sorted(&self) -> Vec<Hit> {
        let mut v = self.heap.clone().into_vec();
        v.sort();
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_best_with_ties_in_database_order() {
        let mut t = TopK::new(3);
        for (s, i) in [(5, 0), (9, 1), (5, 2), (7, 3), (9, 4), (1, 5), (7, 6)] {
            t.offer(s, i, || format!("s{i}"));
        }
        let v: Vec<(i32, u64)> = t.sorted().iter().map(|h| (h.score, h.seq)).collect();
        assert_eq!(v, [(9, 1), (9, 4), (7, 3)]);
        let mut z = TopK::new(0);
        z.offer(1, 0, String::new);
        assert!(z.sorted().is_empty());
    }
}
