//! The shared per-stage request queues P_k and global counters C_k.global (paper §5.3,
//! Algorithm 1). A dispatcher with a command ready for stage k enqueues its GPU id in
//! P_k; only the head may take a slot of stage k, and only while fewer than G_k
//! commands of that stage run on all GPUs. Taking a slot dequeues the head, so the next
//! GPU may ask at once; the slot is held until idle detection gives it back.
//!
//! Invariant: `running[k] <= G_k` at all times, and P_k holds each GPU at most once.

use super::Stage;
use parking_lot::Mutex;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};

/// One stage's queue and counter.
#[derive(Debug, Default)]
struct StageQueue {
    /// P_k: GPU ids in request order.
    requests: Mutex<VecDeque<usize>>,
    /// C_k.global: commands of this stage running on all GPUs.
    running: AtomicUsize,
    /// Length of `requests`, readable without the lock (to decide whom to wake).
    waiting: AtomicUsize,
}

/// P_k and C_k.global for every stage.
#[derive(Debug)]
pub(crate) struct StageQueues {
    stages: [StageQueue; Stage::K],
    global: [usize; Stage::K],
}

/// What a request for a stage slot came to.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Grant {
    /// The slot is taken: dispatch now, and `release` it when the command completes.
    Granted,
    /// Not (yet) this GPU's turn, or the stage is full on all GPUs.
    Wait,
}

impl StageQueues {
    pub(crate) fn new(global: [usize; Stage::K]) -> Self {
        StageQueues { stages: Default::default(), global }
    }

    /// Enqueues `gpu` in P_k unless it is there already, and grants the slot if `gpu`
    /// is at the head and fewer than G_k commands of the stage run.
    pub(crate) fn request(&self, stage: Stage, gpu: usize, queued: &mut bool) -> Grant {
        let q = &self.stages[stage.index()];
        let mut requests = q.requests.lock();
        if !*queued {
            requests.push_back(gpu);
            *queued = true;
        }
        if requests.front() != Some(&gpu) {
            q.waiting.store(requests.len(), Ordering::SeqCst);
            return Grant::Wait;
        }
        let limit = self.global[stage.index()];
        let taken = q
            .running
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| (n < limit).then_some(n + 1))
            .is_ok();
        if taken {
            requests.pop_front();
            *queued = false;
        }
        q.waiting.store(requests.len(), Ordering::SeqCst);
        if taken {
            Grant::Granted
        } else {
            Grant::Wait
        }
    }

    /// Takes `gpu` out of P_k (its command is no longer ready, e.g. M now forbids it).
    pub(crate) fn withdraw(&self, stage: Stage, gpu: usize, queued: &mut bool) {
        if !*queued {
            return;
        }
        let q = &self.stages[stage.index()];
        let mut requests = q.requests.lock();
        requests.retain(|&g| g != gpu);
        q.waiting.store(requests.len(), Ordering::SeqCst);
        *queued = false;
    }

    /// Gives back a slot of `stage`; returns whether other GPUs wait in P_k (and
    /// should be woken to ask again).
    pub(crate) fn release(&self, stage: Stage) -> bool {
        let q = &self.stages[stage.index()];
        q.running.fetch_sub(1, Ordering::SeqCst);
        q.waiting.load(Ordering::SeqCst) > 0
    }

    /// Commands of `stage` running on all GPUs now.
    #[cfg(test)]
    pub(crate) fn running(&self, stage: Stage) -> usize {
        self.stages[stage.index()].running.load(Ordering::SeqCst)
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn head_only_and_global_limit() {
        let q = StageQueues::new([4, 1, 2, 1]);
        let (mut a, mut b) = (false, false);
        assert_eq!(q.request(Stage::Download, 0, &mut a), Grant::Granted);
        // GPU 1 is now head, but the bus (G = 1) is taken.
        assert_eq!(q.request(Stage::Download, 1, &mut b), Grant::Wait);
        assert!(b);
        assert!(q.release(Stage::Download));
        assert_eq!(q.request(Stage::Download, 1, &mut b), Grant::Granted);
        assert_eq!(q.running(Stage::Download), 1);
        // FIFO: GPU 0 queued behind GPU 1 cannot pass it.
        let mut c = false;
        assert_eq!(q.request(Stage::Kernel, 1, &mut c), Grant::Granted);
        q.withdraw(Stage::Kernel, 1, &mut c);
        assert_eq!(q.running(Stage::Kernel), 1);
    }
}
