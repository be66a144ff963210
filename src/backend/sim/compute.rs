//! The simulated SMs of one GPU: a fluid model of the kernels that share it.
//!
//! Each kernel in flight has the share of the SMs it keeps busy when it runs alone
//! (its grid over one full wave, or its kernel's `sim_sm_share`), and the time it
//! needs alone. Shares are handed out in launch order, as the block scheduler starts
//! the blocks of the kernel launched first first: each kernel gets what it would use
//! alone, up to what the kernels launched before it leave, and runs at that fraction of
//! its speed alone. So a kernel that fills the GPU runs at full speed and holds the
//! ones behind it back; two that fill half of it each run side by side at full speed.
//!
//! As in `link.rs`, the threads wait for their own flow on one condition variable,
//! woken whenever the shares change.

use super::failure::SimFailure;
use parking_lot::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

#[derive(Debug)]
struct Flow {
    /// Launch order on this GPU.
    seq: u64,
    /// The share of the SMs it uses alone, in (0, 1].
    share: f64,
    /// Its time alone still to run, ns.
    left: f64,
    /// Its speed now: a fraction of its speed alone.
    speed: f64,
}

#[derive(Debug)]
struct State {
    flows: Vec<Flow>,
    last: Instant,
}

/// The SMs of one simulated GPU.
#[derive(Debug)]
pub(crate) struct Sms {
    state: Mutex<State>,
    changed: Condvar,
}

impl Sms {
    pub(crate) fn new() -> Self {
        Sms { state: Mutex::new(State { flows: Vec::new(), last: Instant::now() }), changed: Condvar::new() }
    }

    /// Runs a kernel (named `kernel`) launched `seq`-th on this GPU, using `share` of
    /// the SMs alone and taking `alone` alone; returns when the model says it ended, or
    /// at once with an error when that is past what the clock can count.
    pub(crate) fn run(&self, seq: u64, share: f64, alone: Duration, kernel: &str) -> Result<(), SimFailure> {
        if alone.is_zero() {
            return Ok(());
        }
        let share = if share.is_finite() { share.clamp(1e-6, 1.0) } else { 1.0 };
        let mut st = self.state.lock();
        self.advance(&mut st);
        st.flows.push(Flow { seq, share, left: alone.as_nanos() as f64, speed: 0.0 });
        Self::share_out(&mut st);
        self.changed.notify_all();
        loop {
            self.advance(&mut st);
            let f = st.flows.iter().find(|f| f.seq == seq).expect("own flow stays until removed");
            if f.left <= 0.5 {
                self.leave(&mut st, seq);
                return Ok(());
            }
            if f.speed <= 0.0 {
                // Every SM is taken by kernels launched earlier: wait for one to end.
                self.changed.wait(&mut st);
                continue;
            }
            let Some(eta) = super::clock::after_secs(Instant::now(), f.left / f.speed / 1e9) else {
                self.leave(&mut st, seq);
                return Err(SimFailure::KernelEnd { kernel: kernel.to_string() });
            };
            self.wait_until(&mut st, eta);
        }
    }

    fn leave(&self, st: &mut State, seq: u64) {
        st.flows.retain(|f| f.seq != seq);
        Self::share_out(st);
        self.changed.notify_all();
    }

    fn wait_until(&self, st: &mut MutexGuard<'_, State>, eta: Instant) {
        super::clock::wait_on(&self.changed, st, eta);
    }

    fn advance(&self, st: &mut State) {
        let now = Instant::now();
        let dt = now.saturating_duration_since(st.last).as_nanos() as f64;
        st.last = now;
        for f in &mut st.flows {
            f.left -= f.speed * dt;
        }
    }

    /// Launch order first: each flow gets its share of what the earlier ones leave.
    fn share_out(st: &mut State) {
        st.flows.sort_by_key(|f| f.seq);
        let mut free = 1.0f64;
        for f in &mut st.flows {
            let got = f.share.min(free).max(0.0);
            free -= got;
            f.speed = got / f.share;
        }
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use std::sync::Arc;

    /// Runs kernels `(share, alone ms)` launched at once (each on its own thread, released
    /// together by a barrier), and returns when each ended, ms after the release.
    fn ends(kernels: &[(f64, u64)]) -> Vec<f64> {
        let sms = Arc::new(Sms::new());
        let start = Arc::new(std::sync::Barrier::new(kernels.len()));
        let threads: Vec<_> = kernels
            .iter()
            .enumerate()
            .map(|(i, &(share, ms))| {
                let (sms, start) = (sms.clone(), start.clone());
                std::thread::spawn(move || {
                    start.wait();
                    let t0 = Instant::now();
                    sms.run(i as u64, share, Duration::from_millis(ms), "k").unwrap();
                    t0.elapsed().as_secs_f64() * 1e3
                })
            })
            .collect();
        threads.into_iter().map(|t| t.join().unwrap()).collect()
    }

    /// Whether `check` holds for one of three runs of `kernels`: these are wall-clock
    /// times, and a loaded machine (CI's two cores) can stall a thread for tens of ms,
    /// which only ever makes a run later; a wrong model fails all three.
    fn holds(kernels: &[(f64, u64)], check: impl Fn(&[f64]) -> bool) -> Result<(), Vec<Vec<f64>>> {
        let mut seen = Vec::new();
        for _ in 0..3 {
            let e = ends(kernels);
            if check(&e) {
                return Ok(());
            }
            seen.push(e);
        }
        Err(seen)
    }

    #[test]
    fn full_kernels_queue_and_partial_ones_share() {
        // Two that fill the GPU: one after the other (60 ms each; side by side both would
        // end at 60 ms).
        let r = holds(&[(1.0, 60), (1.0, 60)], |e| (55.0..90.0).contains(&e[0]) && (115.0..160.0).contains(&e[1]));
        assert!(r.is_ok(), "{r:?}");
        // Four that fill a quarter each: side by side (one after another: 60 … 240 ms).
        let r = holds(&[(0.25, 60); 4], |e| e.iter().all(|&t| (55.0..100.0).contains(&t)));
        assert!(r.is_ok(), "{r:?}");
        // 0.6 and 0.6: the second gets 0.4 until the first ends (at 60 ms, it has
        // run 2/3 of its time), then the rest alone: 60 + 20 = 80 ms (queued: 120 ms).
        let r = holds(&[(0.6, 60), (0.6, 60)], |e| (55.0..90.0).contains(&e[0]) && (75.0..110.0).contains(&e[1]));
        assert!(r.is_ok(), "{r:?}");
    }
}
