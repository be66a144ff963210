//! A recorded graph's part (`ext::replay::recorded`): one GPU's share of its tasks,
//! laid out once as a window and never ended, and the graph's runs in flight with the
//! host claims they hold.

use crate::backend::GraphUse;
use crate::ext::replay::window::Window;
use crate::ids::TaskId;
use crate::memory::claims::{Holder, Region};
use crate::memory::host::HostShared;
use crate::report::WayChosen;
use crate::sync::{AtomicU64, AtomicUsize, Condvar, Mutex, Ordering};
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
    /// Its window's longest chain of tasks (`Window::depth`).
    pub(crate) depth: usize,
    /// The graph's runs in flight, and their claims.
    pub(crate) runs: Arc<Runs>,
    /// Whether the device executor can run it: every task one kernel launch, all of one
    /// block shape (`Window::device_runnable`).
    pub(crate) device_runnable: bool,
    /// The GPUs its tasks run on where it spans GPUs (a part spread over them), else
    /// empty: a run fails once one of them has left the rotation.
    pub(crate) spans: Vec<usize>,
    /// How its runs go, as its first runs measured.
    trial: Mutex<Trial>,
    /// The trial's next way (`Way::Device as usize` or `Way::Graph as usize`), kept beside it
    /// so that a dispatcher asks without the trial's lock (it asks under its queue's).
    next: AtomicUsize,
    /// How long its last run of a kept graph or on the device took (ns; its time on
    /// the GPU, or its span where not measured there; 0: none yet): what the next run
    /// is expected to take.
    last_ns: AtomicU64,
    /// One past the generation of its last run, shifted left one, with the low bit set
    /// where that run was on the device (0: none yet): the backend keeps that graph or
    /// that image, so the next run of that generation the same way launches it again.
    kept: AtomicU64,
}

/// How a recorded part runs: as its kept CUDA graph, or on the GPU by the persistent
/// executor (Giles' scheme, `Execution::Device`'s).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Way {
    Graph = 0,
    Device = 1,
}

/// The runtime's choice of a part's way, from what its first runs took: where the
/// executor can run the part, runs as a CUDA graph until [`WARM`] + [`MEASURED`] have
/// ended (the first builds it), then on the device as many (the first compiles the
/// executor); the way whose best measured run was faster goes from then on. The best of
/// several, not one: a run is only ever slowed by what else the machine does, and one
/// slowed run must not send every later run the slower way. On the sim, and where the
/// executor cannot run the part or refuses it, the graph.
#[derive(Debug, Default)]
struct Trial {
    graph_runs: u8,
    device_runs: u8,
    /// The best measured run of each way so far (ns).
    graph_ns: Option<u64>,
    device_ns: Option<u64>,
    way: Option<Way>,
    /// The executor refused the part when asked (the way is then the graph).
    refused: bool,
}

/// Runs of a way that end before those measured (the first builds or compiles).
const WARM: u8 = 1;
/// Runs of each way measured, after its warm-up.
const MEASURED: u8 = 3;

impl Trial {
    /// Why a run that ended as `used` says went that way, before it counts (`device`:
    /// whether the executor can run the part); `None` on the sim, and for a run that
    /// left on a way since given up (issued before the switch).
    fn way_chosen(&self, used: GraphUse, device: bool) -> Option<WayChosen> {
        let on_device = match used {
            GraphUse::Simulated => return None,
            GraphUse::Device => true,
            GraphUse::Built | GraphUse::Updated(_) | GraphUse::Reused => false,
        };
        if !device {
            return Some(WayChosen::GraphOnly);
        }
        if self.refused {
            return (!on_device).then_some(WayChosen::Refused);
        }
        match (self.way, self.graph_ns, self.device_ns) {
            (Some(Way::Device), Some(graph_ns), Some(device_ns)) if on_device => {
                Some(WayChosen::Device { device_ns, graph_ns })
            }
            (Some(Way::Graph), Some(graph_ns), Some(device_ns)) if !on_device => {
                Some(WayChosen::Graph { graph_ns, device_ns })
            }
            (Some(_), ..) => None,
            (None, ..) => {
                let ran = if on_device { self.device_runs } else { self.graph_runs };
                let of = WARM + MEASURED;
                Some(WayChosen::Trying { device: on_device, run: (ran + 1).min(of), of })
            }
        }
    }

    /// The next run's way (`device`: whether the executor can run the part).
    fn next(&self, device: bool) -> Way {
        match self.way {
            Some(w) => w,
            None if device && self.graph_runs >= WARM + MEASURED => Way::Device,
            None => Way::Graph,
        }
    }

    /// A run ended, as `used` says, in `ns`.
    fn ran(&mut self, used: GraphUse, ns: u64, device: bool) {
        if self.way.is_some() {
            return;
        }
        let best = |b: &mut Option<u64>| *b = Some(b.map_or(ns, |b| b.min(ns)));
        match used {
            GraphUse::Simulated => self.way = Some(Way::Graph),
            GraphUse::Device => {
                self.device_runs += 1;
                if self.device_runs > WARM {
                    best(&mut self.device_ns);
                }
                if self.device_runs >= WARM + MEASURED {
                    let faster = self.device_ns.zip(self.graph_ns).is_some_and(|(d, g)| d < g);
                    self.way = Some(if faster { Way::Device } else { Way::Graph });
                }
            }
            GraphUse::Built | GraphUse::Updated(_) | GraphUse::Reused => {
                self.graph_runs = self.graph_runs.saturating_add(1);
                // A graph run that ends after the device runs began (it was in flight
                // at the switch) is not measured.
                if self.graph_runs > WARM && self.graph_runs <= WARM + MEASURED && self.device_runs == 0 {
                    best(&mut self.graph_ns);
                }
                if !device && self.graph_runs > WARM {
                    self.way = Some(Way::Graph);
                }
            }
        }
    }
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
            depth: window.depth,
            lane_limit: window.lane_limit,
            device_runnable: window.device_runnable(),
            spans: if window.gpus.is_empty() { Vec::new() } else { window.spans(gpu) },
            window: Mutex::new(window),
            runs,
            trial: Mutex::new(Trial::default()),
            next: AtomicUsize::new(Way::Graph as usize),
            last_ns: AtomicU64::new(0),
            kept: AtomicU64::new(0),
        }
    }

    /// How its next run goes (see [`Trial`]).
    pub(crate) fn next_way(&self) -> Way {
        if self.next.load(Ordering::Acquire) == Way::Device as usize {
            Way::Device
        } else {
            Way::Graph
        }
    }

    /// Why a run of it that ended as `used` says went that way (a run that failed as a
    /// whole, which [`Part::ran`] does not count): the report's [`WayChosen`].
    pub(crate) fn way_chosen(&self, used: GraphUse) -> Option<WayChosen> {
        self.trial.lock().way_chosen(used, self.device_runnable)
    }

    /// A run of it ended, as `used` says, in `ns` (`ReplayedWindow::run_ns`): counted,
    /// and why it went that way, as it stood before it counted.
    pub(crate) fn ran(&self, used: GraphUse, ns: u64) -> Option<WayChosen> {
        // A run that built or updated its graph took longer than the next will.
        if matches!(used, GraphUse::Reused | GraphUse::Device) {
            self.last_ns.store(ns, Ordering::Relaxed);
        }
        self.kept.store((self.generation + 1) << 1 | u64::from(used == GraphUse::Device), Ordering::Relaxed);
        let mut trial = self.trial.lock();
        let why = trial.way_chosen(used, self.device_runnable);
        trial.ran(used, ns, self.device_runnable);
        self.next.store(trial.next(self.device_runnable) as usize, Ordering::Release);
        why
    }

    /// How long its next run is expected to take (ns: the last run's time on the GPU,
    /// or, where not measured there, its launch to its completion seen), if a run of a
    /// kept graph or on the device has ended.
    pub(crate) fn expected_ns(&self) -> Option<u64> {
        Some(self.last_ns.load(Ordering::Relaxed)).filter(|&ns| ns > 0)
    }

    /// Whether its next run launches again what its last run left kept (unchanged
    /// since, and to run the same way): the graph, or on the device the image (a reset
    /// of its counters and a launch). Cheap, so a thread other than the dispatcher's may
    /// make it (`ext::replay::queues::Lender`). The sim keeps neither: there the run is
    /// lowered again, as every run there is.
    pub(crate) fn relaunches(&self) -> bool {
        let device = self.next_way() == Way::Device;
        self.kept.load(Ordering::Relaxed) == (self.generation + 1) << 1 | u64::from(device)
    }

    /// A run asked of the device ran as a graph: the executor cannot take the part.
    pub(crate) fn refused(&self) {
        let mut trial = self.trial.lock();
        trial.way = Some(Way::Graph);
        trial.refused = true;
        self.next.store(Way::Graph as usize, Ordering::Release);
    }
}

/// A recorded graph's runs queued or running (one count a part), and the host claims
/// held while any is.
pub(crate) struct Runs {
    holder: Holder,
    /// The graph's first task: the one a refused run's error names.
    first: TaskId,
    state: Mutex<RunState>,
    idle: Condvar,
}

struct RunState {
    /// Part runs queued or running.
    count: usize,
    /// Per host buffer the graph copies from or to: the span its copies touch, and
    /// whether any writes it.
    claims: Vec<(Arc<HostShared>, Region, bool)>,
}

impl Runs {
    /// No run yet: the graph's claims (holder `holder`, per buffer its span) and its
    /// first task.
    pub(crate) fn new(holder: Holder, claims: Vec<(Arc<HostShared>, Region, bool)>, first: TaskId) -> Runs {
        Runs { holder, first, state: Mutex::new(RunState { count: 0, claims }), idle: Condvar::new() }
    }

    /// Counts `parts` part runs in, claiming the host spans first if none was in flight:
    /// waits for tasks whose claims conflict, refuses a conflicting guard.
    pub(crate) fn begin(&self, parts: usize) -> Result<()> {
        let mut st = self.state.lock();
        if st.count == 0 {
            for (i, (host, region, write)) in st.claims.iter().enumerate() {
                if let Err(e) = host.claim_for_run(region, *write, self.holder, self.first) {
                    for (h, ..) in &st.claims[..i] {
                        h.release(self.holder);
                    }
                    return Err(e);
                }
            }
        }
        st.count += parts;
        Ok(())
    }

    /// One part run ended (after the dispatcher let go of its share of the part): the
    /// claims go with the last one.
    pub(crate) fn end_one(&self) {
        let mut st = self.state.lock();
        st.count -= 1;
        if st.count == 0 {
            for (host, ..) in &st.claims {
                host.release(self.holder);
            }
            self.idle.notify_all();
        }
    }

    /// Waits until no run is queued or running.
    pub(crate) fn wait_idle(&self) {
        let mut st = self.state.lock();
        while st.count > 0 {
            self.idle.wait(&mut st);
        }
    }

    /// The spans the next runs claim, after an update moved a copy (no run in flight:
    /// the caller waited, and holds the graph alone).
    pub(crate) fn set_claims(&self, claims: Vec<(Arc<HostShared>, Region, bool)>) {
        let mut st = self.state.lock();
        debug_assert_eq!(st.count, 0, "claims changed under a run");
        st.claims = claims;
    }
}

#[cfg(test)]
mod test {
    use super::{Trial, Way};
    use crate::backend::GraphUse;
    use crate::report::WayChosen;

    /// Each run's reason, taken before it counts: its number among its way's trial
    /// runs, then the way kept with both best runs; none for a run left on a way given
    /// up, none on the sim; a part the executor cannot run, or refused, says so.
    #[test]
    fn each_run_says_why_it_went_its_way() {
        let trying = |device, run| Some(WayChosen::Trying { device, run, of: 4 });
        for (device_ns, kept) in [(50, Way::Device), (500, Way::Graph)] {
            let mut t = Trial::default();
            let graph =
                [(GraphUse::Built, 10_000), (GraphUse::Reused, 100), (GraphUse::Reused, 900), (GraphUse::Reused, 120)];
            for (k, (used, ns)) in graph.into_iter().enumerate() {
                assert_eq!(t.way_chosen(used, true), trying(false, k as u8 + 1));
                t.ran(used, ns, true);
            }
            // A graph run issued before the switch: still the graph's trial.
            assert_eq!(t.way_chosen(GraphUse::Reused, true), trying(false, 4));
            t.ran(GraphUse::Reused, 1, true);
            for (k, ns) in [200_000, 5_000, device_ns, 4_000].into_iter().enumerate() {
                assert_eq!(t.way_chosen(GraphUse::Device, true), trying(true, k as u8 + 1));
                t.ran(GraphUse::Device, ns, true);
            }
            let graph_ns = 100;
            match kept {
                Way::Device => {
                    assert_eq!(t.way_chosen(GraphUse::Device, true), Some(WayChosen::Device { device_ns, graph_ns }));
                    assert_eq!(t.way_chosen(GraphUse::Reused, true), None, "a graph run left before the switch");
                }
                Way::Graph => {
                    assert_eq!(t.way_chosen(GraphUse::Reused, true), Some(WayChosen::Graph { graph_ns, device_ns }));
                    assert_eq!(t.way_chosen(GraphUse::Device, true), None, "a device run left before the choice");
                }
            }
        }
        assert_eq!(Trial::default().way_chosen(GraphUse::Simulated, true), None);
        assert_eq!(Trial::default().way_chosen(GraphUse::Built, false), Some(WayChosen::GraphOnly));
        let refused = Trial { way: Some(Way::Graph), refused: true, ..Trial::default() };
        assert_eq!(refused.way_chosen(GraphUse::Built, true), Some(WayChosen::Refused));
    }

    /// Graph runs, then device runs, each a warm-up and three measured; the way of the
    /// faster best run stays, whatever runs were still in flight when the trial moved
    /// on, and one slow run does not decide it.
    #[test]
    fn the_way_of_the_faster_best_run_stays() {
        for (device_ns, want) in [(50, Way::Device), (500, Way::Graph)] {
            let mut t = Trial::default();
            assert_eq!(t.next(true), Way::Graph);
            t.ran(GraphUse::Built, 10_000, true);
            // One slowed graph run among the measured ones: the best counts.
            for ns in [100, 900, 120] {
                assert_eq!(t.next(true), Way::Graph);
                t.ran(GraphUse::Reused, ns, true);
            }
            assert_eq!(t.next(true), Way::Device);
            // A graph run issued before the switch ends late: nothing changes.
            t.ran(GraphUse::Reused, 1, true);
            assert_eq!(t.next(true), Way::Device);
            t.ran(GraphUse::Device, 200_000, true);
            // A slowed device run first: the best of the three decides.
            for ns in [5_000, device_ns, 4_000] {
                assert_eq!(t.next(true), Way::Device);
                t.ran(GraphUse::Device, ns, true);
            }
            assert_eq!(t.next(true), want, "best device run of {device_ns} ns against the graph's 100");
            t.ran(GraphUse::Device, 1, true);
            assert_eq!(t.next(true), want, "decided once");
        }
    }

    /// The sim, and a part the executor cannot run: the graph, without a device run.
    #[test]
    fn the_sim_and_parts_the_executor_cannot_run_stay_graphs() {
        let mut t = Trial::default();
        t.ran(GraphUse::Simulated, 5, true);
        assert_eq!(t.next(true), Way::Graph);
        let mut t = Trial::default();
        t.ran(GraphUse::Built, 5, false);
        t.ran(GraphUse::Reused, 5, false);
        assert_eq!(t.next(false), Way::Graph);
        assert_eq!(t.way, Some(Way::Graph));
    }
}
