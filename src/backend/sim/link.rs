//! The simulated host links and buses: a fluid model. Every active copy is a flow with
//! bytes left; rates are shared out whenever a flow starts or ends:
//!
//! 1. each flow gets its link's rate for its direction, split among the flows of that
//!    link and direction, and no more than its bus's share (when buses are shared);
//! 2. where both directions of a link (or bus) are busy and their sum exceeds the
//!    duplex rate, all its flows are scaled down to fit.
//!
//! Threads wait for their own flow on one condition variable, woken when rates change.
//! A flow whose end is past what the clock can count (absurd sizes, slowdowns or
//! rates) leaves at once and fails its command.

use super::failure::SimFailure;
use super::profile::SimProfile;
use parking_lot::{Condvar, Mutex, MutexGuard};
use std::time::Instant;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Dir {
    Up,
    Down,
}

#[derive(Debug)]
struct Flow {
    id: u64,
    gpu: usize,
    dir: Dir,
    left: f64,
    rate: f64,
}

#[derive(Debug)]
struct State {
    flows: Vec<Flow>,
    last: Instant,
    next_id: u64,
}

/// All links and buses of one simulated machine.
#[derive(Debug)]
pub(crate) struct Links {
    profile: SimProfile,
    state: Mutex<State>,
    changed: Condvar,
}

impl Links {
    pub(crate) fn new(profile: SimProfile) -> Self {
        Links {
            profile,
            state: Mutex::new(State { flows: Vec::new(), last: Instant::now(), next_id: 0 }),
            changed: Condvar::new(),
        }
    }

    /// Moves `bytes` over `gpu`'s link in `dir`; returns when the model says they
    /// arrived, or at once with an error when that is past what the clock can count.
    pub(crate) fn transfer(&self, gpu: usize, dir: Dir, bytes: f64) -> Result<(), SimFailure> {
        let scale = self.profile.time_scale;
        if scale == 0.0 || bytes == 0.0 {
            return Ok(());
        }
        let mut st = self.state.lock();
        self.advance(&mut st);
        let id = st.next_id;
        st.next_id += 1;
        // Model bytes are scaled so that the flow takes `scale` × its real-time duration.
        st.flows.push(Flow { id, gpu, dir, left: bytes * scale, rate: 0.0 });
        self.share(&mut st);
        self.changed.notify_all();
        loop {
            self.advance(&mut st);
            let f = st.flows.iter().find(|f| f.id == id).expect("own flow stays until removed");
            if f.left <= 0.5 {
                self.leave(&mut st, id);
                return Ok(());
            }
            let Some(eta) = super::clock::after_secs(Instant::now(), f.left / f.rate) else {
                self.leave(&mut st, id);
                return Err(SimFailure::CopyEnd { bytes });
            };
            self.wait_until(&mut st, eta);
        }
    }

    /// Removes flow `id` and shares its rate out.
    fn leave(&self, st: &mut State, id: u64) {
        st.flows.retain(|f| f.id != id);
        self.share(st);
        self.changed.notify_all();
    }

    fn wait_until(&self, st: &mut MutexGuard<'_, State>, eta: Instant) {
        super::clock::wait_on(&self.changed, st, eta);
    }

    fn advance(&self, st: &mut State) {
        let now = Instant::now();
        let dt = now.saturating_duration_since(st.last).as_secs_f64();
        st.last = now;
        for f in &mut st.flows {
            f.left -= f.rate * dt;
        }
    }

    fn share(&self, st: &mut State) {
        let p = &self.profile;
        let bus = |gpu: usize| p.buses.map(|b| gpu % b);
        let n = st.flows.len();
        for i in 0..n {
            let (gpu, dir) = (st.flows[i].gpu, st.flows[i].dir);
            let cap = match dir {
                Dir::Up => p.h2d_bytes_per_s,
                Dir::Down => p.d2h_bytes_per_s,
            };
            let same_link = st.flows.iter().filter(|f| f.gpu == gpu && f.dir == dir).count();
            let mut rate = cap / same_link as f64;
            if let Some(b) = bus(gpu) {
                let same_bus = st.flows.iter().filter(|f| bus(f.gpu) == Some(b) && f.dir == dir).count();
                rate = rate.min(p.bus_bytes_per_s / same_bus as f64);
            }
            st.flows[i].rate = rate;
        }
        // Duplex limits: per link, then per bus.
        let groups: Vec<(usize, bool)> = (0..n).map(|i| (st.flows[i].gpu, false)).collect();
        for &(gpu, _) in &groups {
            Self::fit(&mut st.flows, |f| f.gpu == gpu, p.duplex_bytes_per_s);
        }
        if let Some(b) = p.buses {
            for bus_id in 0..b {
                Self::fit(&mut st.flows, |f| f.gpu % b == bus_id, p.bus_duplex_bytes_per_s);
            }
        }
    }

    /// Scales the flows selected by `member` to a total of `duplex` when both
    /// directions are busy and together exceed it.
    fn fit(flows: &mut [Flow], member: impl Fn(&Flow) -> bool, duplex: f64) {
        let (mut up, mut down) = (0.0, 0.0);
        for f in flows.iter().filter(|f| member(f)) {
            match f.dir {
                Dir::Up => up += f.rate,
                Dir::Down => down += f.rate,
            }
        }
        if up > 0.0 && down > 0.0 && up + down > duplex {
            let k = duplex / (up + down);
            for f in flows.iter_mut().filter(|f| member(f)) {
                f.rate *= k;
            }
        }
    }
}
