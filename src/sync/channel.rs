//! The channels between dispatchers and executioners (CPU jobs out, their completions
//! back): crossbeam's unbounded channel normally, re-exported as it is; with the
//! `model-check` feature, the same API over the model's mutex and condition variable,
//! so that an executioner blocked in `recv` is a shuttle thread shuttle can schedule
//! (a blocking crossbeam receive would stall every model thread).

#[cfg(not(feature = "model-check"))]
pub(crate) use crossbeam_channel::{unbounded, Receiver, Sender};

#[cfg(feature = "model-check")]
pub(crate) use model::{unbounded, Receiver, Sender};

#[cfg(feature = "model-check")]
mod model {
    use crate::sync::{Condvar, Mutex};
    use crossbeam_channel::{RecvError, SendError, TryRecvError};
    use std::collections::VecDeque;
    use std::sync::Arc;

    /// The queue and who can still use each end.
    struct State<T> {
        queue: VecDeque<T>,
        senders: usize,
        receivers: usize,
    }

    struct Inner<T> {
        state: Mutex<State<T>>,
        ready: Condvar,
    }

    /// An unbounded multi-producer, multi-consumer channel.
    pub(crate) fn unbounded<T>() -> (Sender<T>, Receiver<T>) {
        let state = State { queue: VecDeque::new(), senders: 1, receivers: 1 };
        let inner = Arc::new(Inner { state: Mutex::new(state), ready: Condvar::new() });
        (Sender(inner.clone()), Receiver(inner))
    }

    /// The sending end (crossbeam's `send`).
    pub(crate) struct Sender<T>(Arc<Inner<T>>);

    /// The receiving end (crossbeam's `recv` and `try_recv`).
    pub(crate) struct Receiver<T>(Arc<Inner<T>>);

    impl<T> Sender<T> {
        /// Queues `value`; fails when every receiver is gone.
        pub(crate) fn send(&self, value: T) -> Result<(), SendError<T>> {
            let mut state = self.0.state.lock();
            if state.receivers == 0 {
                return Err(SendError(value));
            }
            state.queue.push_back(value);
            self.0.ready.notify_one();
            Ok(())
        }
    }

    impl<T> Receiver<T> {
        /// The next value, waiting for one; fails once it is empty and every sender gone.
        pub(crate) fn recv(&self) -> Result<T, RecvError> {
            let mut state = self.0.state.lock();
            loop {
                if let Some(value) = state.queue.pop_front() {
                    return Ok(value);
                }
                if state.senders == 0 {
                    return Err(RecvError);
                }
                self.0.ready.wait(&mut state);
            }
        }

        /// The next value if there is one.
        pub(crate) fn try_recv(&self) -> Result<T, TryRecvError> {
            let mut state = self.0.state.lock();
            match state.queue.pop_front() {
                Some(value) => Ok(value),
                None if state.senders == 0 => Err(TryRecvError::Disconnected),
                None => Err(TryRecvError::Empty),
            }
        }
    }

    impl<T> std::fmt::Debug for Sender<T> {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("Sender { .. }")
        }
    }

    impl<T> Clone for Sender<T> {
        fn clone(&self) -> Self {
            self.0.state.lock().senders += 1;
            Sender(self.0.clone())
        }
    }

    impl<T> Clone for Receiver<T> {
        fn clone(&self) -> Self {
            self.0.state.lock().receivers += 1;
            Receiver(self.0.clone())
        }
    }

    impl<T> Drop for Sender<T> {
        fn drop(&mut self) {
            let mut state = self.0.state.lock();
            state.senders -= 1;
            if state.senders == 0 {
                // Receivers blocked in `recv` learn that nothing more comes.
                self.0.ready.notify_all();
            }
        }
    }

    impl<T> Drop for Receiver<T> {
        fn drop(&mut self) {
            self.0.state.lock().receivers -= 1;
        }
    }
}
