//! Eviction under memory pressure: when a GPU is full, the least recently bound copy
//! that nothing on that GPU uses goes, after the pieces only it holds are written back
//! to the host shadow.
//!
//! The write-back reads the copy without the state's lock (a driver call), so the state
//! may change meanwhile; the second phase makes sure that did not lose anything:
//! * one eviction of a buffer at a time (`evicting`): two GPUs evicting their copies of
//!   a piece each, each counting on the other's, would leave it nowhere;
//! * a piece written since the first phase (its version moved: a writer on another GPU
//!   ended) is not marked as in the shadow, which holds the older bytes;
//! * a piece that only this copy holds now but was not written back (another GPU lost
//!   its copy, or a writer there failed) keeps the copy: the eviction is given up;
//! * so does a copy that a fetch began to read (the plan counts it as used).

use super::ResidentInner;
use std::sync::Arc;

impl ResidentInner {
    /// Tries to evict `gpu`'s copy. Returns whether memory was freed.
    pub(super) fn evict(&self, gpu: usize) -> bool {
        let bit = 1u64 << gpu;
        let _one = self.evicting.lock();
        // Phase 1, under the state's lock: nothing on `gpu` uses the copy and no fetch
        // brings a piece there; pin it (as a user) while the pieces only it holds are
        // written back, so that a fetch planning to read it meanwhile finds it whole.
        let (copy, only_here) = {
            let mut st = self.state.lock();
            if st.users[gpu] > 0 || st.pieces.iter().any(|p| p.pending & bit != 0) {
                return false;
            }
            let Some(copy) = st.copies[gpu].clone() else { return false };
            let only_here: Vec<(usize, u64)> = (0..st.pieces.len())
                .filter(|&p| {
                    let piece = st.pieces[p];
                    piece.gpus == bit && !piece.host && !piece.zero
                })
                .map(|p| (p, st.pieces[p].version))
                .collect();
            st.users[gpu] += 1;
            (copy, only_here)
        };
        let mut written = true;
        if !only_here.is_empty() {
            let mut shadow = self.shadow.lock();
            if shadow.is_empty() {
                shadow.resize(self.bytes, 0);
            }
            for &(p, _) in &only_here {
                let r = self.bytes_of(&(p..p + 1));
                written &= self.memory.read_copy(&copy, r.start, &mut shadow[r]).is_ok();
            }
        }
        // Phase 2, under the lock again: give the copy up only if nothing it alone holds
        // would be lost.
        let taken = {
            let mut st = self.state.lock();
            st.users[gpu] -= 1;
            let kept = |p: usize, st: &super::State| {
                let piece = st.pieces[p];
                piece.gpus == bit && !piece.host && !piece.zero
            };
            let unsaved = (0..st.pieces.len()).any(|p| {
                kept(p, &st) && !only_here.iter().any(|&(q, v)| q == p && v == st.pieces[p].version && written)
            });
            if !written || st.users[gpu] > 0 || unsaved {
                None
            } else {
                for &(p, v) in &only_here {
                    if st.pieces[p].version == v {
                        st.pieces[p].host = true;
                    }
                }
                for piece in &mut st.pieces {
                    piece.gpus &= !bit;
                }
                st.copies[gpu].take()
            }
        };
        drop(copy);
        match taken.map(Arc::try_unwrap) {
            Some(Ok(buf)) => {
                self.memory.free_copy(buf);
                true
            }
            // A command being issued still names it (an undeclared `resident_ptr`):
            // kept until the buffer drops, when nothing names it.
            Some(Err(shared)) => {
                self.zombies.lock().push(shared);
                true
            }
            None => false,
        }
    }
}

/// Evicts the least recently bound copy on `gpu` among `others` (not `this`) that
/// nothing uses. Returns whether one was evicted.
pub(super) fn evict_one(gpu: usize, this: &ResidentInner, others: &[Arc<ResidentInner>]) -> bool {
    let mut candidates: Vec<(u64, &Arc<ResidentInner>)> = others
        .iter()
        .filter(|o| !std::ptr::eq(&***o, this))
        .filter_map(|o| {
            let st = o.state.lock();
            (st.copies[gpu].is_some() && st.users[gpu] == 0).then(|| (st.stamp[gpu], o))
        })
        .collect();
    candidates.sort_by_key(|(stamp, _)| *stamp);
    candidates.into_iter().any(|(_, o)| o.evict(gpu))
}
