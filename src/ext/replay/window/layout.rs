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
//!
//! The comparison is made as the cut's tasks are held ([`Follow`]), from the words the
//! capture already made of each task for its structure, so that a cut that repeats is
//! not described a second time; a cut whose tasks were not all followed is compared
//! whole, as before.

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

/// A cut's tasks compared, as they are held, with what the kept layout of its place
/// was given (the words `given_words` makes of them, in its order).
#[derive(Default)]
pub(crate) struct Follow {
    /// Tasks compared, all equal.
    tasks: usize,
    /// Words of the kept layout's `given` they took.
    at: usize,
    /// A task differed, or one was held without being compared.
    differs: bool,
}

impl Follow {
    /// Held task number `held` of the cut (the first starts anew): its shape words
    /// (`shape_words`), whether it takes a lane, its predecessors (indices into the
    /// held list), against `kept`, the layout kept for the cut's place.
    pub(crate) fn task(&mut self, kept: Option<&KeptLayout>, held: usize, shape: &[u64], lane: bool, preds: &[u32]) {
        if held == 0 {
            *self = Follow::default();
        }
        let Some(k) = kept.filter(|_| !self.differs && self.tasks == held) else {
            self.differs = true;
            return;
        };
        let (s, n) = (shape.len(), shape.len() + 2 + preds.len());
        let same = k.given.get(self.at..self.at + n).is_some_and(|g| {
            g[..s] == *shape
                && g[s] == lane as u64
                && g[s + 1] == preds.len() as u64
                && g[s + 2..].iter().zip(preds).all(|(&a, &b)| a == b as u64)
        });
        if same {
            self.tasks += 1;
            self.at += n;
        } else {
            self.differs = true;
        }
    }

    /// Whether every one of `held` tasks was followed and equals all `kept` was given.
    fn whole(&self, kept: &KeptLayout, held: usize) -> bool {
        !self.differs && self.tasks == held && self.at == kept.given.len()
    }
}

/// Lays `held` out on GPU `home` in submit order, with `lanes` lanes, as
/// `lay_out(held, &[], home, Order::Fcfs, lanes)` does: from `kept` where it was given
/// the same (as `follow` found while they were held, else compared here), else anew,
/// keeping the new layout in `kept`. `given` is scratch space. Whether the kept layout
/// was taken.
pub(crate) fn lay_out_kept(
    held: Vec<Held>,
    home: usize,
    lanes: usize,
    kept: &mut Option<KeptLayout>,
    given: &mut Vec<u64>,
    follow: &Follow,
) -> (Window, bool) {
    if let Some(k) = kept.as_ref().filter(|k| k.lanes == lanes && follow.whole(k, held.len())) {
        return (k.apply(held), true);
    }
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
                Held { task, preds, external: Default::default(), pin: None }
            })
            .collect()
    }

    fn same_window(a: &Window, b: &Window) {
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
        let (mut kept, mut given, none) = (None, Vec::new(), Follow::default());
        let lay_out_kept = |h, l, k: &mut _, g: &mut _| lay_out_kept(h, 0, l, k, g, &none);
        let (first, reused) = lay_out_kept(held(shape), 2, &mut kept, &mut given);
        assert!(!reused);
        same_window(&first, &lay_out(held(shape), &[], 0, Order::Fcfs, 2));
        // The same cut again, its tasks' lists sized as the capture sizes them: taken
        // from the kept layout, equal to a fresh one.
        let (again, reused) = lay_out_kept(held(shape), 2, &mut kept, &mut given);
        assert!(reused);
        same_window(&again, &lay_out(held(shape), &[], 0, Order::Fcfs, 2));
        // One edge changed: laid out anew, and that layout kept instead.
        let other: &[&[u32]] = &[&[], &[0], &[1], &[1, 2], &[], &[4]];
        let (changed, reused) = lay_out_kept(held(other), 2, &mut kept, &mut given);
        assert!(!reused);
        same_window(&changed, &lay_out(held(other), &[], 0, Order::Fcfs, 2));
        assert!(lay_out_kept(held(other), 2, &mut kept, &mut given).1);
        // Other lanes, or one task fewer: anew too.
        let (wider, reused) = lay_out_kept(held(other), 4, &mut kept, &mut given);
        assert!(!reused);
        same_window(&wider, &lay_out(held(other), &[], 0, Order::Fcfs, 4));
        assert!(!lay_out_kept(held(&other[..5]), 4, &mut kept, &mut given).1);
    }

    /// Follows `held` against `kept` as the capture does, task by task.
    fn follow(held: &[Held], kept: Option<&KeptLayout>) -> Follow {
        let mut f = Follow::default();
        for (i, h) in held.iter().enumerate() {
            let mut shape = Vec::new();
            shape_words(&h.task, &mut shape);
            f.task(kept, i, &shape, uses_virtual(&h.task), &h.preds);
        }
        f
    }

    #[test]
    fn following_a_cut_as_it_is_held_finds_what_comparing_it_whole_finds() {
        let shape: &[&[u32]] = &[&[], &[0], &[0], &[1, 2], &[], &[4]];
        let (mut kept, mut given) = (None, Vec::new());
        let (_, reused) = lay_out_kept(held(shape), 0, 2, &mut kept, &mut given, &Follow::default());
        assert!(!reused);
        let same = follow(&held(shape), kept.as_ref());
        assert!(same.whole(kept.as_ref().unwrap(), shape.len()));
        let (again, reused) = lay_out_kept(held(shape), 0, 2, &mut kept, &mut given, &same);
        assert!(reused);
        same_window(&again, &lay_out(held(shape), &[], 0, Order::Fcfs, 2));
        // A changed edge, one task fewer, one more: not whole, so compared here.
        let other: &[&[u32]] = &[&[], &[0], &[1], &[1, 2], &[], &[4]];
        let k = kept.as_ref().unwrap();
        assert!(!follow(&held(other), Some(k)).whole(k, other.len()));
        assert!(!follow(&held(&shape[..5]), Some(k)).whole(k, 5));
        let longer: &[&[u32]] = &[&[], &[0], &[0], &[1, 2], &[], &[4], &[5]];
        assert!(!follow(&held(longer), Some(k)).whole(k, longer.len()));
        assert!(follow(&held(shape), None).differs, "no kept layout: nothing followed");
        let (changed, reused) = lay_out_kept(held(other), 0, 2, &mut kept, &mut given, &follow(&held(other), None));
        assert!(!reused);
        same_window(&changed, &lay_out(held(other), &[], 0, Order::Fcfs, 2));
        // Followed whole, but on other lanes: laid out anew.
        let k = kept.as_ref().unwrap();
        let f = follow(&held(other), Some(k));
        assert!(f.whole(k, other.len()));
        assert!(!lay_out_kept(held(other), 0, 4, &mut kept, &mut given, &f).1);
    }
}
