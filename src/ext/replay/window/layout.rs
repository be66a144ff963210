//! A sub-window's layout kept for the same cut of the next batch.
//!
//! The per-iteration loop submits the same structure batch after batch, and the
//! capture cuts it into sub-windows at the same places each time. Laying one out
//! (`assign_lanes`: lanes, edges, key) was a fifth of the submitting thread's work, and
//! it gives the same result for the same structure. So each cut of a batch on one GPU
//! keeps what its layout was given (per task its shape, whether it takes a lane, its
//! predecessors) and what it made; the next batch's cut at that place is compared with
//! the first, word for word, and where they are equal it takes the kept lanes, edges
//! and key instead of laying itself out. Nothing is taken on trust: a cut that differs
//! in any word is laid out anew, and its layout kept in place of the old one.

use super::{lay_out, shape_words, uses_virtual, Held, Window};
use crate::task::Order;

/// The most cuts of one batch whose layouts are kept: a batch of
/// `capture::MAX_LEARNT` tasks makes about 70 (see `capture::LAST_CUT`); a `Replay`
/// batch may go on past that, and its later cuts are laid out every time.
pub(crate) const KEPT_CUTS: usize = 128;

/// What one cut was given and what its layout made of it.
pub(crate) struct KeptLayout {
    /// Per held task: its shape words, whether it takes a lane, its predecessor count
    /// and its predecessors (indices into the held list): everything `lay_out` reads on
    /// one GPU in submit order.
    given: Vec<u64>,
    lanes: usize,
    /// Per task: its predecessors as laid out, flattened (task `i`'s are
    /// `preds[at[i]..at[i + 1]]`).
    preds: Vec<u32>,
    at: Vec<u32>,
    lane_edges: Vec<Option<u32>>,
    lane_of: Vec<u16>,
    lane_count: usize,
    depth: usize,
    key: Vec<u64>,
    hash: u64,
}

/// Words describing what `lay_out` reads of `held` on one GPU in submit order.
fn given_words(held: &[Held], out: &mut Vec<u64>) {
    out.clear();
    for h in held {
        shape_words(&h.task, out);
        out.push(uses_virtual(&h.task) as u64);
        out.push(h.preds.len() as u64);
        out.extend(h.preds.iter().map(|&p| p as u64));
    }
}

/// Lays `held` out on GPU `home` in submit order, with `lanes` lanes, as
/// `lay_out(held, &[], home, Order::Fcfs, lanes)` does: from `kept` where it was given
/// the same, else anew, keeping the new layout in `kept`. `given` is scratch space.
/// Whether the kept layout was taken.
pub(crate) fn lay_out_kept(
    held: Vec<Held>,
    home: usize,
    lanes: usize,
    kept: &mut Option<KeptLayout>,
    given: &mut Vec<u64>,
) -> (Window, bool) {
    given_words(&held, given);
    if let Some(k) = kept.as_ref().filter(|k| k.lanes == lanes && k.given == *given) {
        return (k.apply(held), true);
    }
    let w = lay_out(held, &[], home, Order::Fcfs, lanes);
    *kept = Some(KeptLayout::of(&w, given.clone()));
    (w, false)
}

impl KeptLayout {
    fn of(w: &Window, given: Vec<u64>) -> KeptLayout {
        let mut at = Vec::with_capacity(w.preds.len() + 1);
        at.push(0);
        let mut preds = Vec::new();
        for p in &w.preds {
            preds.extend_from_slice(p);
            at.push(preds.len() as u32);
        }
        KeptLayout {
            given,
            lanes: w.lane_limit,
            preds,
            at,
            lane_edges: w.lane_edges.clone(),
            lane_of: w.lanes.clone(),
            lane_count: w.lane_count,
            depth: w.depth,
            key: w.key.clone(),
            hash: w.hash,
        }
    }

    /// The window `lay_out` would make of `held`, given what this layout was given.
    fn apply(&self, held: Vec<Held>) -> Window {
        let n = held.len();
        let mut tasks = Vec::with_capacity(n);
        let mut preds = Vec::with_capacity(n);
        let mut external = Vec::new();
        for (i, h) in held.into_iter().enumerate() {
            let Held { task, preds: mut p, external: ext, .. } = h;
            external.extend(ext.into_iter().map(|(t, s)| (i as u32, t, s)));
            // In the held task's own list, which has room for the lane edge: no
            // allocation per task.
            p.clear();
            p.extend_from_slice(&self.preds[self.at[i] as usize..self.at[i + 1] as usize]);
            tasks.push(task);
            preds.push(p);
        }
        Window {
            seq: 0,
            external,
            lane_limit: self.lanes,
            tasks,
            preds,
            lane_edges: self.lane_edges.clone(),
            lanes: self.lane_of.clone(),
            lane_count: self.lane_count,
            depth: self.depth,
            gpus: Vec::new(),
            key: self.key.clone(),
            hash: self.hash,
            device: false,
            timed_end: false,
            recorded: None,
            queued_ns: 0,
        }
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::ext::replay::window::LanePreds;
    use crate::ids::TaskId;
    use crate::task::Task;

    fn held(edges: &[&[u32]]) -> Vec<Held> {
        edges
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let task = Box::new(Task {
                    id: TaskId(100 + i as u64),
                    granularity: 1,
                    seq: i as u64,
                    commands: Vec::new(),
                    next: 0,
                    hosts: Vec::new(),
                    residency: Default::default(),
                    prefer: None,
                    bound: false,
                });
                let mut preds = LanePreds::with_capacity(p.len() + 1);
                preds.extend_from_slice(p);
                Held { task, preds, external: Vec::new(), pin: None }
            })
            .collect()
    }

    fn same(a: &Window, b: &Window) {
        let ids = |w: &Window| w.tasks.iter().map(|t| t.id).collect::<Vec<_>>();
        assert_eq!(ids(a), ids(b));
        assert_eq!(a.preds, b.preds);
        assert_eq!(a.lane_edges, b.lane_edges);
        assert_eq!(a.lanes, b.lanes);
        assert_eq!((a.lane_count, a.lane_limit, a.depth), (b.lane_count, b.lane_limit, b.depth));
        assert_eq!((&a.key, a.hash), (&b.key, b.hash));
        assert_eq!(a.external, b.external);
    }

    #[test]
    fn a_kept_layout_is_what_laying_out_anew_makes_and_a_changed_cut_is_laid_out_anew() {
        let shape: &[&[u32]] = &[&[], &[0], &[0], &[1, 2], &[], &[4]];
        let (mut kept, mut given) = (None, Vec::new());
        let (first, reused) = lay_out_kept(held(shape), 0, 2, &mut kept, &mut given);
        assert!(!reused);
        same(&first, &lay_out(held(shape), &[], 0, Order::Fcfs, 2));
        // The same cut again, its tasks' lists sized as the capture sizes them: taken
        // from the kept layout, equal to a fresh one.
        let (again, reused) = lay_out_kept(held(shape), 0, 2, &mut kept, &mut given);
        assert!(reused);
        same(&again, &lay_out(held(shape), &[], 0, Order::Fcfs, 2));
        // One edge changed: laid out anew, and that layout kept instead.
        let other: &[&[u32]] = &[&[], &[0], &[1], &[1, 2], &[], &[4]];
        let (changed, reused) = lay_out_kept(held(other), 0, 2, &mut kept, &mut given);
        assert!(!reused);
        same(&changed, &lay_out(held(other), &[], 0, Order::Fcfs, 2));
        assert!(lay_out_kept(held(other), 0, 2, &mut kept, &mut given).1);
        // Other lanes, or one task fewer: anew too.
        let (wider, reused) = lay_out_kept(held(other), 0, 4, &mut kept, &mut given);
        assert!(!reused);
        same(&wider, &lay_out(held(other), &[], 0, Order::Fcfs, 4));
        assert!(!lay_out_kept(held(&other[..5]), 0, 4, &mut kept, &mut given).1);
    }
}
