//! A deadline for a test body, so that a hang in the runtime fails the test instead of
//! stalling the run.

use std::sync::mpsc::RecvTimeoutError;
use std::time::Duration;

/// Runs `body` on a fresh thread and waits at most `secs` seconds for it. A panic in the
/// body is re-raised here (with its own message); running past the deadline panics with
/// a message saying the runtime hung. The hung thread is left behind (it cannot be
/// killed), which is harmless: the test binary exits when its tests are done.
pub fn with_timeout<F>(secs: u64, body: F)
where
    F: FnOnce() + Send + 'static,
{
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let handle = std::thread::Builder::new()
        .name("test-body".into())
        .spawn(move || {
            body();
            let _ = tx.send(());
        })
        .expect("spawning the test body thread");
    match rx.recv_timeout(Duration::from_secs(secs)) {
        Ok(()) => handle.join().expect("the body finished"),
        // The sender was dropped without sending: the body panicked.
        Err(RecvTimeoutError::Disconnected) => {
            if let Err(payload) = handle.join() {
                std::panic::resume_unwind(payload);
            }
        }
        Err(RecvTimeoutError::Timeout) => panic!(
            "the test did not finish within {secs} s: the runtime hung \
             (deadlock or lost wake-up), or a callback never returned"
        ),
    }
}
