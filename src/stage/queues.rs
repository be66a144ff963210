//! The shared per-stage request queues P_k and global counters C_k.global (paper §5.3,
//! Algorithm 1). A dispatcher with a command ready for stage k enqueues its GPU id in
//! P_k; only the head may take a slot of stage k, and only while fewer than G_k
//! commands of that stage run on all GPUs. Taking a slot dequeues the head, so the next
//! GPU may ask at once; the slot is held until idle detection gives it back.
//!
//! Invariant: `running[k] <= G_k` at all times, and P_k holds each GPU at most once.

use super::Stage;
use crate::sync::{AtomicUsize, Mutex, Ordering};
use std::collections::VecDeque;

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

#[cfg(feature = "model-check")]
impl StageQueue {
    /// Under the model checks, after each change by `gpu` (under P_k's lock): P_k
    /// holds `gpu` at most once, exactly while its `queued` flag says so, and `waiting`
    /// is P_k's length. Only `gpu` changes its own membership, so this is exact.
    fn check(&self, requests: &VecDeque<usize>, gpu: usize, queued: bool) {
        let waiting = self.waiting.load(Ordering::SeqCst);
        assert_eq!(waiting, requests.len(), "P_k's waiting count differs from its length: {requests:?}");
        let mine = requests.iter().filter(|&&g| g == gpu).count();
        assert!(mine <= 1, "GPU {gpu} is {mine} times in P_k: {requests:?}");
        assert_eq!(mine == 1, queued, "GPU {gpu}'s queued flag, P_k = {requests:?}");
    }
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
    /// `wake` is the GPU now at the head of P_k, if any: it may be parked behind us and
    /// must be woken to ask in turn.
    Granted { wake: Option<usize> },
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
        // Publish that someone waits *before* trying the counter (both SeqCst): a GPU
        // that releases a slot after our failed try then sees `waiting > 0` and wakes
        // us. Publishing after the try would let its release fall in between, unseen.
        q.waiting.store(requests.len(), Ordering::SeqCst);
        // Only the head may take a slot, and only below G_k.
        let limit = self.global[stage.index()];
        let grant = if requests.front() == Some(&gpu)
            && q.running.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| (n < limit).then_some(n + 1)).is_ok()
        {
            requests.pop_front();
            *queued = false;
            q.waiting.store(requests.len(), Ordering::SeqCst);
            Grant::Granted { wake: requests.front().copied() }
        } else {
            Grant::Wait
        };
        #[cfg(feature = "model-check")]
        q.check(&requests, gpu, *queued);
        grant
    }

    /// Takes `gpu` out of P_k (its command is no longer ready, e.g. M now forbids it).
    /// Returns the GPU that became head by it, to be woken.
    pub(crate) fn withdraw(&self, stage: Stage, gpu: usize, queued: &mut bool) -> Option<usize> {
        if !*queued {
            return None;
        }
        let q = &self.stages[stage.index()];
        let mut requests = q.requests.lock();
        let was_head = requests.front() == Some(&gpu);
        requests.retain(|&g| g != gpu);
        q.waiting.store(requests.len(), Ordering::SeqCst);
        *queued = false;
        #[cfg(feature = "model-check")]
        q.check(&requests, gpu, *queued);
        if was_head {
            requests.front().copied()
        } else {
            None
        }
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

    /// P_k as it stands and the `waiting` count published for it, read together
    /// under P_k's lock (for the model checks' invariants).
    #[cfg(all(test, feature = "model-check"))]
    pub(crate) fn requests(&self, stage: Stage) -> (Vec<usize>, usize) {
        let q = &self.stages[stage.index()];
        let requests = q.requests.lock();
        (requests.iter().copied().collect(), q.waiting.load(Ordering::SeqCst))
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn head_only_and_global_limit() {
        let q = StageQueues::new([4, 1, 2, 1]);
        let (mut a, mut b) = (false, false);
        assert_eq!(q.request(Stage::Download, 0, &mut a), Grant::Granted { wake: None });
        // GPU 1 is now head, but the bus (G = 1) is taken.
        assert_eq!(q.request(Stage::Download, 1, &mut b), Grant::Wait);
        assert!(b);
        assert!(q.release(Stage::Download));
        assert_eq!(q.request(Stage::Download, 1, &mut b), Grant::Granted { wake: None });
        assert_eq!(q.running(Stage::Download), 1);
        // FIFO: GPU 0 queued behind GPU 1 cannot pass it.
        let mut c = false;
        assert_eq!(q.request(Stage::Kernel, 1, &mut c), Grant::Granted { wake: None });
        assert_eq!(q.running(Stage::Kernel), 1);
        // GPU 2 queues behind GPU 0 at the readback stage; when 0 is granted or
        // withdraws, 2 is named to be woken.
        let (mut r0, mut r2) = (false, false);
        let q = StageQueues::new([4, 1, 2, 1]);
        assert_eq!(q.request(Stage::Readback, 0, &mut r0), Grant::Granted { wake: None });
        assert_eq!(q.request(Stage::Readback, 0, &mut r0), Grant::Wait);
        assert_eq!(q.request(Stage::Readback, 2, &mut r2), Grant::Wait);
        assert_eq!(q.withdraw(Stage::Readback, 0, &mut r0), Some(2));
        assert!(q.release(Stage::Readback));
        assert_eq!(q.request(Stage::Readback, 2, &mut r2), Grant::Granted { wake: None });
    }
}
