//! The synchronisation primitives of the dispatcher's shared structures (task buffer,
//! stage queues, signal, the batch, the executioners' channels). Normally parking_lot's,
//! std's and crossbeam's, re-exported as they are, so the normal build pays nothing;
//! with the `model-check` feature, shuttle's behind the same API, so that
//! `src/model_check.rs` can explore their interleavings with the real dispatcher.
//!
//! The API is parking_lot's: `Mutex::lock` returns the guard (no poisoning), and
//! `Condvar::wait` takes `&mut guard`. Under the model a lock poisoned by a panic is
//! taken anyway, as parking_lot would: the panic already fails the model's test.
//!
//! With `model-check` on, these primitives work only inside a shuttle test
//! (`shuttle::check_*`); the feature is for `cargo test --features model-check --lib
//! model_check` and nothing else.

pub(crate) mod channel;

pub(crate) use std::sync::atomic::Ordering;

#[cfg(not(feature = "model-check"))]
pub(crate) use parking_lot::Mutex;
#[cfg(not(feature = "model-check"))]
pub(crate) use real::Condvar;
#[cfg(not(feature = "model-check"))]
pub(crate) use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize};

#[cfg(feature = "model-check")]
pub(crate) use model::{Condvar, Mutex};
#[cfg(feature = "model-check")]
pub(crate) use shuttle::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize};

/// `yield_now`: a scheduling point under the model.
pub(crate) mod thread {
    #[cfg(not(feature = "model-check"))]
    pub(crate) use std::thread::yield_now;

    #[cfg(feature = "model-check")]
    pub(crate) use shuttle::thread::yield_now;
}

/// `spin_loop`: under the model it yields, so a spinning thread lets the others run.
pub(crate) mod hint {
    #[cfg(not(feature = "model-check"))]
    pub(crate) use std::hint::spin_loop;

    #[cfg(feature = "model-check")]
    pub(crate) use shuttle::hint::spin_loop;
}

/// A spin budget for busy-waiting before parking: `spin` of wall-clock time.
#[cfg(not(feature = "model-check"))]
pub(crate) struct SpinFor {
    until: std::time::Instant,
}

#[cfg(not(feature = "model-check"))]
impl SpinFor {
    /// Starts the budget now.
    #[inline]
    pub(crate) fn new(spin: std::time::Duration) -> Self {
        SpinFor { until: std::time::Instant::now() + spin }
    }

    /// Whether there is budget left.
    #[inline]
    pub(crate) fn going(&mut self) -> bool {
        std::time::Instant::now() < self.until
    }
}

/// A spin budget under the model: a fixed number of turns, whatever `spin` says.
/// Shuttle's schedules have no clock, and reading the real one would make a failing
/// schedule impossible to replay; a few turns still explore the spin's epoch checks.
#[cfg(feature = "model-check")]
pub(crate) struct SpinFor {
    turns: u32,
}

#[cfg(feature = "model-check")]
impl SpinFor {
    /// Turns of spinning under the model before parking.
    const TURNS: u32 = 3;

    /// Starts the budget (`spin` is ignored, see the type).
    pub(crate) fn new(_spin: std::time::Duration) -> Self {
        SpinFor { turns: Self::TURNS }
    }

    /// Whether there is budget left; takes one turn of it.
    pub(crate) fn going(&mut self) -> bool {
        let left = self.turns > 0;
        self.turns = self.turns.saturating_sub(1);
        left
    }
}

/// parking_lot's condition variable, with a deadline that says only whether it passed.
#[cfg(not(feature = "model-check"))]
mod real {
    /// parking_lot's `Condvar`; [`Condvar::wait_until`] answers a bool, as the model's.
    #[derive(Debug, Default)]
    pub(crate) struct Condvar(parking_lot::Condvar);

    impl Condvar {
        /// A new condition variable.
        pub(crate) const fn new() -> Self {
            Condvar(parking_lot::Condvar::new())
        }

        /// Releases the guard's lock, blocks until notified, and locks again.
        #[inline]
        pub(crate) fn wait<T>(&self, guard: &mut parking_lot::MutexGuard<'_, T>) {
            self.0.wait(guard);
        }

        /// As [`wait`](Self::wait), but gives up at `deadline`: whether it did.
        #[inline]
        pub(crate) fn wait_until<T>(
            &self,
            guard: &mut parking_lot::MutexGuard<'_, T>,
            deadline: std::time::Instant,
        ) -> bool {
            self.0.wait_until(guard, deadline).timed_out()
        }

        /// Wakes one waiter, if any.
        #[inline]
        pub(crate) fn notify_one(&self) {
            self.0.notify_one();
        }

        /// Wakes every waiter.
        #[inline]
        pub(crate) fn notify_all(&self) {
            self.0.notify_all();
        }
    }
}

/// parking_lot's API over shuttle's std-like primitives.
#[cfg(feature = "model-check")]
mod model {
    use std::ops::{Deref, DerefMut};
    use std::sync::PoisonError;

    /// A mutex with parking_lot's `lock() -> guard`.
    #[derive(Debug, Default)]
    pub(crate) struct Mutex<T>(shuttle::sync::Mutex<T>);

    impl<T> Mutex<T> {
        /// A new unlocked mutex holding `value`.
        pub(crate) fn new(value: T) -> Self {
            Mutex(shuttle::sync::Mutex::new(value))
        }

        /// Locks, blocking (a scheduling point).
        pub(crate) fn lock(&self) -> MutexGuard<'_, T> {
            MutexGuard(Some(self.0.lock().unwrap_or_else(PoisonError::into_inner)))
        }

        /// Locks if nobody holds it (a scheduling point), else answers `None` at once.
        #[allow(dead_code)] // only a recorded run's launch tries a dispatcher's lock
        pub(crate) fn try_lock(&self) -> Option<MutexGuard<'_, T>> {
            match self.0.try_lock() {
                Ok(g) => Some(MutexGuard(Some(g))),
                Err(std::sync::TryLockError::Poisoned(p)) => Some(MutexGuard(Some(p.into_inner()))),
                Err(std::sync::TryLockError::WouldBlock) => None,
            }
        }

        /// The value, through the only reference to the mutex (no locking).
        #[allow(dead_code)] // used by recorded graphs, which the model checks do not build
        pub(crate) fn get_mut(&mut self) -> &mut T {
            self.0.get_mut().unwrap_or_else(PoisonError::into_inner)
        }
    }

    /// The guard of [`Mutex`]. The `Option` is empty only inside [`Condvar::wait`],
    /// which hands shuttle's guard to shuttle's condvar and takes it back.
    #[derive(Debug)]
    pub(crate) struct MutexGuard<'a, T>(Option<shuttle::sync::MutexGuard<'a, T>>);

    impl<T> Deref for MutexGuard<'_, T> {
        type Target = T;
        fn deref(&self) -> &T {
            self.0.as_ref().expect("a guard is held outside Condvar::wait")
        }
    }

    impl<T> DerefMut for MutexGuard<'_, T> {
        fn deref_mut(&mut self) -> &mut T {
            self.0.as_mut().expect("a guard is held outside Condvar::wait")
        }
    }

    /// A condition variable with parking_lot's `wait(&mut guard)`.
    #[derive(Debug, Default)]
    pub(crate) struct Condvar(shuttle::sync::Condvar);

    impl Condvar {
        /// Releases the guard's lock, blocks until notified, and locks again.
        pub(crate) fn wait<T>(&self, guard: &mut MutexGuard<'_, T>) {
            let inner = guard.0.take().expect("a guard is held outside Condvar::wait");
            guard.0 = Some(self.0.wait(inner).unwrap_or_else(PoisonError::into_inner));
        }

        /// As [`wait`](Self::wait): shuttle's timed wait never times out (its schedules
        /// have no clock), so neither does this one; it answers false.
        #[allow(dead_code)] // only `synchronize_within` waits with a deadline
        pub(crate) fn wait_until<T>(&self, guard: &mut MutexGuard<'_, T>, _deadline: std::time::Instant) -> bool {
            self.wait(guard);
            false
        }

        /// A new condition variable.
        pub(crate) fn new() -> Self {
            Condvar(shuttle::sync::Condvar::new())
        }

        /// Wakes one waiter, if any.
        pub(crate) fn notify_one(&self) {
            self.0.notify_one();
        }

        /// Wakes every waiter.
        pub(crate) fn notify_all(&self) {
            self.0.notify_all();
        }
    }
}
