//! The capture's maps from task ids, which it touches several times a submit.
//!
//! Loops number their tasks densely from 0, batch after batch, so an id below
//! [`DENSE`] finds its entry by index in a vector, stamped with the map's generation:
//! a lookup is a bounds check and a compare, and clearing the map (at every cut and
//! every batch) is one increment, not a walk over a table. Other ids are hashed.

use crate::ids::TaskId;
use rustc_hash::FxHashMap;

/// Ids below this are kept by index (a few MB at most, and only as far as the
/// largest such id a batch used).
pub(crate) const DENSE: u64 = 1 << 18;

/// A map from task ids to small values.
pub(crate) struct IdMap<V: Copy> {
    /// By id: the generation it was set in, and its value.
    dense: Vec<(u32, V)>,
    /// The generation in force (0 marks an entry never set).
    stamp: u32,
    sparse: FxHashMap<TaskId, V>,
    len: usize,
}

impl<V: Copy> Default for IdMap<V> {
    fn default() -> Self {
        IdMap { dense: Vec::new(), stamp: 1, sparse: FxHashMap::default(), len: 0 }
    }
}

impl<V: Copy> IdMap<V> {
    /// The value of `id`, if set.
    pub(crate) fn get(&self, id: &TaskId) -> Option<V> {
        if id.0 < DENSE {
            return self.dense.get(id.0 as usize).filter(|e| e.0 == self.stamp).map(|e| e.1);
        }
        self.sparse.get(id).copied()
    }

    pub(crate) fn contains_key(&self, id: &TaskId) -> bool {
        self.get(id).is_some()
    }

    /// Sets `id` to `v`.
    pub(crate) fn insert(&mut self, id: TaskId, v: V) {
        if id.0 < DENSE {
            let i = id.0 as usize;
            if i >= self.dense.len() {
                // Whole vector grown at once, doubling: amortised over the ids.
                let len = (i + 1).max(self.dense.len() * 2).min(DENSE as usize);
                self.dense.resize(len, (0, v));
            }
            let e = &mut self.dense[i];
            self.len += (e.0 != self.stamp) as usize;
            *e = (self.stamp, v);
            return;
        }
        if self.sparse.insert(id, v).is_none() {
            self.len += 1;
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Unsets every id: a new generation (the vector is wiped only when the stamps
    /// run out), and the hashed ones cleared keeping their room.
    pub(crate) fn clear(&mut self) {
        if self.len == 0 {
            return;
        }
        if self.stamp == u32::MAX {
            self.dense.iter_mut().for_each(|e| e.0 = 0);
            self.stamp = 0;
        }
        self.stamp += 1;
        self.sparse.clear();
        self.len = 0;
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn dense_and_hashed_ids_are_set_found_and_cleared_alike() {
        let mut m: IdMap<u32> = IdMap::default();
        assert!(m.is_empty());
        for id in [0, 5, 3, DENSE - 1, DENSE, u64::MAX] {
            assert_eq!(m.get(&TaskId(id)), None);
            m.insert(TaskId(id), id as u32 ^ 7);
        }
        m.insert(TaskId(5), 50); // set again: still one entry
        assert_eq!(m.len, 6);
        assert_eq!(m.get(&TaskId(5)), Some(50));
        assert_eq!(m.get(&TaskId(3)), Some(3 ^ 7));
        assert_eq!(m.get(&TaskId(DENSE)), Some(DENSE as u32 ^ 7));
        assert!(!m.contains_key(&TaskId(4)) && !m.contains_key(&TaskId(DENSE + 1)));
        m.clear();
        assert!(m.is_empty());
        for id in [0, 5, 3, DENSE - 1, DENSE, u64::MAX] {
            assert!(!m.contains_key(&TaskId(id)), "{id} left after clear");
        }
        m.insert(TaskId(3), 1);
        assert_eq!((m.get(&TaskId(3)), m.get(&TaskId(5))), (Some(1), None));
    }

    #[test]
    fn stamps_running_out_wipe_the_vector() {
        let mut m: IdMap<u8> = IdMap::default();
        m.insert(TaskId(2), 9);
        m.stamp = u32::MAX;
        m.insert(TaskId(1), 1);
        m.clear();
        assert_eq!(m.stamp, 1);
        // Entry 2 was set at an old generation that the wrap made current again; the
        // wipe keeps it from coming back.
        assert_eq!((m.get(&TaskId(1)), m.get(&TaskId(2))), (None, None));
    }
}
