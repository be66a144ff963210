//! A wake-up signal for a parked dispatcher: an epoch counter and a condition variable.
//!
//! Protocol (no lost wake-up): the dispatcher reads the epoch *before* it looks for
//! work, and parks only while the epoch is unchanged. A notifier bumps the epoch and,
//! if the dispatcher says it is parked, takes the lock and notifies. Both the bump/
//! `parked` read and the `parked` store/epoch read are SeqCst, so either the
//! notifier sees `parked` or the dispatcher sees the new epoch.

use crate::sync::{AtomicBool, AtomicU64, Condvar, Mutex, Ordering, SpinFor};

/// See the module comment.
#[derive(Debug, Default)]
pub(crate) struct Signal {
    epoch: AtomicU64,
    parked: AtomicBool,
    lock: Mutex<()>,
    cv: Condvar,
}

impl Signal {
    /// The epoch to pass to [`Signal::park`] after looking for work.
    pub(crate) fn epoch(&self) -> u64 {
        self.epoch.load(Ordering::SeqCst)
    }

    /// Wakes the owner if it is parked (or makes its next park return at once).
    pub(crate) fn notify(&self) {
        self.epoch.fetch_add(1, Ordering::SeqCst);
        if self.parked.load(Ordering::SeqCst) {
            let _guard = self.lock.lock();
            self.cv.notify_one();
        }
    }

    /// Spins up to `spin` for the epoch to move, then parks: a dispatcher that owns a
    /// core answers the next submit or completion in well under a microsecond instead
    /// of a condition variable's wake-up (tens of microseconds). Under the model
    /// (feature `model-check`) the spin is a few turns, not `spin`: see [`SpinFor`].
    pub(crate) fn spin_then_park(&self, seen: u64, spin: std::time::Duration) {
        let mut budget = SpinFor::new(spin);
        let mut turns = 0u32;
        while budget.going() {
            if self.epoch.load(Ordering::SeqCst) != seen {
                return;
            }
            // Yield now and then: on a busy machine the thread that will ring us may
            // need this core.
            turns += 1;
            if turns % 16 == 0 {
                crate::sync::thread::yield_now();
            } else {
                crate::sync::hint::spin_loop();
            }
        }
        self.park(seen);
    }

    /// Blocks until the epoch differs from `seen`.
    pub(crate) fn park(&self, seen: u64) {
        let mut guard = self.lock.lock();
        self.parked.store(true, Ordering::SeqCst);
        while self.epoch.load(Ordering::SeqCst) == seen {
            self.cv.wait(&mut guard);
        }
        self.parked.store(false, Ordering::SeqCst);
    }
}
