//! Resident data's share of what the dispatchers and the scheduler share: every
//! resident buffer allocated (for eviction and lost GPUs); dropped ones are pruned as
//! new ones come.

use crate::ext::resident::memory::ResidentInner;
use parking_lot::Mutex;
use std::sync::{Arc, Weak};

/// The resident buffers of one scheduler.
#[derive(Default)]
pub(crate) struct Residents {
    list: Mutex<Vec<Weak<ResidentInner>>>,
}

impl Residents {
    /// Keeps `buf` in the list, pruning the dropped ones.
    pub(crate) fn add(&self, buf: &Arc<ResidentInner>) {
        let mut all = self.list.lock();
        all.retain(|w| w.strong_count() > 0);
        all.push(Arc::downgrade(buf));
    }

    /// The resident buffers alive now.
    pub(crate) fn alive(&self) -> Vec<Arc<ResidentInner>> {
        self.list.lock().iter().filter_map(Weak::upgrade).collect()
    }

    /// GPU `gpu` is lost: the copies of resident data there are gone.
    pub(crate) fn gpu_lost(&self, gpu: usize) {
        for r in self.alive() {
            r.gpu_lost(gpu);
        }
    }

    /// The batch's ids are free again (`synchronize`): resident data forgets who used it.
    pub(crate) fn forget_tasks(&self) {
        for r in self.alive() {
            r.forget_tasks();
        }
    }
}
