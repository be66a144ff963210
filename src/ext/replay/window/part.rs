//! A recorded graph's part (`ext::replay::recorded`): one GPU's share of its tasks,
//! laid out once as a window and never ended, and the graph's runs in flight with the
//! host claims they hold.

use crate::ext::replay::window::Window;
use crate::ids::TaskId;
use crate::memory::claims::{Holder, Region};
use crate::memory::host::HostShared;
use crate::sync::{Condvar, Mutex};
use crate::Result;
use std::sync::Arc;

/// One GPU's part of a recorded graph.
pub(crate) struct Part {
    /// The backend keeps the part's graph under (`id`, `generation`).
    pub(crate) id: u64,
    /// Bumped by each update: a kept graph of an older generation is set anew.
    pub(crate) generation: u64,
    /// The GPU it was laid out for (a run goes elsewhere only if that GPU left).
    pub(crate) gpu: usize,
    /// Its tasks, laid out once, never ended. Locked only to lower them (a part's first
    /// run on a GPU, and the first after an update) and to name its tasks in a failed
    /// run's report: never on a run of a kept graph. Uncontended: a GPU runs a part's
    /// runs one after another, and an update takes the part alone once no run is left.
    pub(crate) window: Mutex<Window>,
    /// Its commands and tasks, its lanes and their limit (a run reads them without the
    /// lock).
    pub(crate) commands: usize,
    pub(crate) tasks: usize,
    pub(crate) lane_count: usize,
    pub(crate) lane_limit: usize,
    /// The graph's runs in flight, and their claims.
    pub(crate) runs: Arc<Runs>,
}

impl Part {
    /// Part `id` of a graph, on GPU `gpu`: the window `window`, its graph's `runs`.
    pub(crate) fn new(id: u64, gpu: usize, window: Window, runs: Arc<Runs>) -> Part {
        Part {
            id,
            generation: 0,
            gpu,
            commands: window.commands(),
            tasks: window.tasks.len(),
            lane_count: window.lane_count,
            lane_limit: window.lane_limit,
            window: Mutex::new(window),
            runs,
        }
    }
}

/// A recorded graph's runs queued or running (one count a part), and the host claims
/// held while any is.
pub(crate) struct Runs {
    holder: Holder,
    /// Per host buffer the graph copies from or to: the span its copies touch, and
    /// whether any writes it.
    claims: Vec<(Arc<HostShared>, Region, bool)>,
    /// The graph's first task: the one a refused run's error names.
    first: TaskId,
    count: Mutex<usize>,
    idle: Condvar,
}

impl Runs {
    /// No run yet: the graph's claims (holder `holder`, per buffer its span) and its
    /// first task.
    pub(crate) fn new(holder: Holder, claims: Vec<(Arc<HostShared>, Region, bool)>, first: TaskId) -> Runs {
        Runs { holder, claims, first, count: Mutex::new(0), idle: Condvar::new() }
    }

    /// Counts `parts` part runs in, claiming the host spans first if none was in flight:
    /// waits for tasks whose claims conflict, refuses a conflicting guard.
    pub(crate) fn begin(&self, parts: usize) -> Result<()> {
        let mut count = self.count.lock();
        if *count == 0 {
            for (i, (host, region, write)) in self.claims.iter().enumerate() {
                if let Err(e) = host.claim_for_run(region, *write, self.holder, self.first) {
                    for (h, ..) in &self.claims[..i] {
                        h.release(self.holder);
                    }
                    return Err(e);
                }
            }
        }
        *count += parts;
        Ok(())
    }

    /// One part run ended (after the dispatcher let go of its share of the part): the
    /// claims go with the last one.
    pub(crate) fn end_one(&self) {
        let mut count = self.count.lock();
        *count -= 1;
        if *count == 0 {
            for (host, ..) in &self.claims {
                host.release(self.holder);
            }
            self.idle.notify_all();
        }
    }

    /// Waits until no run is queued or running.
    pub(crate) fn wait_idle(&self) {
        let mut count = self.count.lock();
        while *count > 0 {
            self.idle.wait(&mut count);
        }
    }
}
