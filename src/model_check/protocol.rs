//! P_k's protocol alone, where every request may be followed by a park.

use super::{random, spawn};
use crate::signal::Signal;
use crate::stage::queues::{Grant, StageQueues};
use crate::stage::Stage;
use shuttle::sync::atomic::AtomicUsize;
use shuttle::thread;
use std::sync::atomic::Ordering::SeqCst;
use std::sync::Arc;

/// P_k's protocol alone, without the dispatcher's loop: each of `gpus` threads runs
/// `rounds` commands at one stage with G = `global`. It reads its epoch, requests, and
/// parks on `Wait`; granted, it wakes the head named by the grant, holds the slot for
/// a scheduling point and releases it, waking the others if any wait. GPU 0 once
/// withdraws after a wake-up (as when M comes to forbid the stage) and asks again.
///
/// The dispatcher's loop retries at once after any progress, which hides some lost
/// wake-ups (a request that publishes `waiting` too late is retried in the same
/// turn); here every request may be followed by a park, so the protocol's own
/// contract is what keeps the threads live.
fn stage_protocol(gpus: usize, global: usize, rounds: usize) {
    const STAGE: Stage = Stage::Download;
    random(3000, move || {
        let queues = Arc::new(StageQueues::new([global; Stage::K]));
        let signals: Arc<Vec<Signal>> = Arc::new((0..gpus).map(|_| Signal::default()).collect());
        let holding = Arc::new(AtomicUsize::new(0));
        let threads: Vec<_> = (0..gpus)
            .map(|g| {
                let (queues, signals, holding) = (queues.clone(), signals.clone(), holding.clone());
                spawn(format!("gpu {g}"), move || {
                    let mut queued = false;
                    let mut may_withdraw = g == 0;
                    for _ in 0..rounds {
                        let mut woken = false;
                        loop {
                            let seen = signals[g].epoch();
                            if woken && may_withdraw {
                                may_withdraw = false;
                                if let Some(head) = queues.withdraw(STAGE, g, &mut queued) {
                                    signals[head].notify();
                                }
                                continue;
                            }
                            match queues.request(STAGE, g, &mut queued) {
                                Grant::Granted { wake } => {
                                    if let Some(head) = wake {
                                        signals[head].notify();
                                    }
                                    break;
                                }
                                Grant::Wait => {
                                    signals[g].park(seen);
                                    woken = true;
                                }
                            }
                        }
                        let n = holding.fetch_add(1, SeqCst) + 1;
                        assert!(n <= global, "{n} hold the stage (G = {global})");
                        thread::yield_now();
                        holding.fetch_sub(1, SeqCst);
                        if queues.release(STAGE) {
                            for (other, s) in signals.iter().enumerate() {
                                if other != g {
                                    s.notify();
                                }
                            }
                        }
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().expect("model threads do not panic");
        }
        assert_eq!(queues.running(STAGE), 0);
        assert_eq!(queues.requests(STAGE), (Vec::new(), 0));
    });
}

#[test]
fn stage_protocol_two_gpus() {
    stage_protocol(2, 1, 2);
}

#[test]
fn stage_protocol_three_gpus() {
    stage_protocol(3, 1, 2);
}

#[test]
fn stage_protocol_three_gpus_two_slots() {
    stage_protocol(3, 2, 2);
}
