//! Replay capture: which of a batch's tasks are held back at submit to run
//! as replay windows (`ext::replay::window`), and when they go.
//!
//! A batch is held from its first task, while every task can run in a graph and names
//! only tasks held or gone in this batch's windows (so the windows hold the batch's
//! first tasks, and depend on nothing else), and while the mode wants it:
//! * [`Execution::Replay`]: always. The held tasks go as windows (one per GPU that
//!   gets work) at `synchronize`, when a task that cannot run in a graph comes (it
//!   runs after them, by the host), or when the batch has repeated the whole structure
//!   of the last replayed or learnt batch.
//! * [`Execution::Auto`]: while the batch repeats, task by task, the structure learnt
//!   from the last host-dispatched batch, and replaying that batch pays (its GPU
//!   commands were shorter than [`Execution::PAYS_BELOW`] × the host's time to
//!   dispatch one). The last window goes as soon as the whole structure has come
//!   again; a task that departs from it lets the held tasks go to the host, in submit
//!   order.
//! * `Execution::Host`: never.
//!
//! While the batch is being submitted, the held tasks go as a sub-window each time
//! they reach a cut ([`FIRST_CUT`] tasks, doubling to [`LAST_CUT`]), and the tasks
//! that follow may run after them: the GPUs run the first windows while the user's
//! loop submits the rest. The cuts fall at the same places in every batch of one
//! structure, so each sub-window finds its kept graph again. Where the host set the
//! pace of a structure's last two batches (their windows kept the GPU busy less than
//! the time their tasks took to submit, [`TAPER_BELOW`]), the cuts of its next batches
//! shrink again towards its end ([`next_cut`]), so that what runs after the user's
//! last submit is a small window, not the largest.
//!
//! With S ≥ 2 a batch's windows may be laid out on up to [`WIDE_LANES`] lanes, not S,
//! so that a window's width, not S, bounds how many of its tasks run side by side:
//! where the last two batches of its structure filled their S lanes with long steps
//! ([`WIDE_FROM_NS`] of GPU time a step of their graphs, measured from the report at
//! `synchronize`; two, as a structure's first replays include its graphs' first
//! launches), and every virtual buffer its tasks name has its copies for the lanes past
//! S on every GPU. A window that finds a buffer without them runs on S lanes and names
//! the buffer; the copies are made at its batch's end, outside the lock, while the
//! copies made for windows fit [`recorded::LANE_BUDGET`] a GPU (a loop's few buffers,
//! not new ones each batch). Short tasks stay on S lanes: a wider graph costs more to
//! set up and launch than it gains there.
//!
//! A guard about to wait on a host buffer that held tasks touch lets them go first
//! (`memory::HeldTasks`), as `synchronize` does, so nothing waits on a task that is
//! not on its way. After the held tasks were let go (not cut), the rest of the batch
//! is dispatched by the host.

use crate::backend::Machine;
use crate::dispatch::shared::{not_run, Shared};
use crate::error::RecordingProblem;
use crate::execution::Execution;
use crate::ext::replay::id_map::IdMap;
use crate::ext::replay::recorded;
use crate::ext::replay::window::layout::{lay_out_kept, Follow, KeptLayout, KEPT_CUTS};
use crate::ext::replay::window::Window;
use crate::ext::replay::window::{self, Held};
use crate::ids::{HeldAfter, Preds, TaskId};
use crate::memory::claims::{Claims, Holder};
use crate::memory::host::HostShared;
use crate::memory::DeviceBufferInner;
use crate::memory::HeldTasks;
use crate::report::{BatchExecution, HostReason, Pays, ReplayedWindow, Report, TaskFailure};
use crate::sync::{AtomicBool, Ordering};
use crate::task::command::Command;
use crate::task::{HostClaim, Order, Task};
use crossbeam_utils::CachePadded;
use parking_lot::Mutex;
use rustc_hash::FxHashMap;
use std::sync::{Arc, Weak};

/// The most tasks of a batch whose structure is recorded: `Auto` recognises batches
/// up to this long (a longer one departs from any structure at this task).
pub(crate) const MAX_LEARNT: usize = 1 << 16;

/// The held tasks of a batch go as a first sub-window at this many: small, so that
/// the GPU starts early.
pub(crate) const FIRST_CUT: usize = 64;

/// Each next sub-window is cut at twice the last one's size, up to this many tasks: a
/// batch of n tasks makes about n / `LAST_CUT` + 4 windows (few graphs to keep), and
/// what runs after the user's last submit is at most one such window.
pub(crate) const LAST_CUT: usize = 1024;

/// A structure whose last two batches' windows kept the GPU busy less than this share
/// of the time from their first window's queueing to their last's (the host set the
/// pace: the GPU ran each window and waited for the next) has its next batches' last
/// cuts tapered ([`next_cut`]). On an H200 the flow bench's tree of 1,023 empty tasks kept
/// it busy about half that time, and half its batch's GPU time was its 512-task cut's,
/// run after the user's last submit.
const TAPER_BELOW: f64 = 1.0;

/// A tapered structure stops tapering after two batches in a row at or above this
/// share: its windows set the pace, and more of them would lengthen its path on the
/// GPU (each window runs after the one before it ends).
const TAPER_UNTIL: f64 = 1.25;

/// A structure's windows go wide (lanes past S) once two batches of it in a row ran
/// their windows at least this much GPU time a step, a window filling its S lanes (ns:
/// the windows' GPU time over their depths, a window's depth being its longest chain of
/// tasks, lane order included, which its graph runs one after another: about a task's
/// time where each step is one task's, whatever S is). The flow bench's graphs of 1,024
/// one-block tasks take about 3 µs a task at 1,000 spin iterations and 31 µs at 10,000
/// on an H200.
const WIDE_FROM_NS: f64 = 20_000.0;

/// A wide structure goes back to S lanes below this GPU time a step.
const NARROW_BELOW_NS: f64 = WIDE_FROM_NS / 4.0;

/// The most lanes a wide window takes (its buffers' copies are the recorded graphs',
/// [`recorded::RECORD_LANES`] of them).
const WIDE_LANES: usize = recorded::RECORD_LANES;

/// The most buffers a batch's windows name without their lane copies (a loop names few;
/// beyond it the rest are not made, and windows naming them stay on S lanes).
const WANTS: usize = 64;

/// What the capture did with a submitted task.
pub(crate) enum Offer {
    /// Held for a window.
    Held,
    /// To be admitted as usual, after these.
    Admit(Box<Task>, Preds),
}

/// A batch's structure, learnt to be recognised when it comes again.
struct Template {
    words: Vec<u64>,
    tasks: u32,
    pays: bool,
    /// The host's time to dispatch one command (runtime + driver) when it was learnt.
    host_ns: f64,
    /// A GPU command's mean time then (or in the replayed batch that stopped it paying).
    gpu_ns: f64,
}

/// What the capture knows of the batch under way.
struct State {
    /// Tasks submitted in this batch, and each one's position.
    count: u32,
    positions: IdMap<u32>,
    /// This batch's structure so far: per task its commands' kinds and kernels, and
    /// the positions of the tasks it named.
    words: Vec<u64>,
    /// Every task so far can run in a graph.
    replayable: bool,
    /// `words` is a prefix of the template's.
    matching: bool,
    held: Vec<Held>,
    held_ids: IdMap<u32>,
    /// The host dispatches the rest of this batch.
    open: bool,
    /// Why it does (set with `open`, the first reason kept).
    open_why: Option<HostReason>,
    /// The first task of this batch the host took, and why.
    host_from: Option<(TaskId, HostReason)>,
    /// Tasks of this batch sent as windows.
    replayed: usize,
    /// A window of this batch has gone.
    launched: bool,
    /// Tasks of this batch's windows that have gone: the GPU each window went to and
    /// its number.
    gone: IdMap<(usize, u64)>,
    /// The held tasks go as a sub-window at this many.
    cut: usize,
    /// The next window's number (never reset: numbers stay unique across batches).
    next_seq: u64,
    template: Option<Template>,
    /// This batch's windows so far, and the layouts of each batch's windows by their
    /// number in it (the cuts fall at the same places in every batch of one structure):
    /// `window::layout`.
    cuts: usize,
    layouts: Vec<Option<KeptLayout>>,
    given: Vec<u64>,
    /// The held tasks of this cut compared with its kept layout as they came.
    follow: Follow,
    /// A recording under way ([`Capture::start_recording`]): every submit goes to it.
    recording: Option<Recording>,
    /// This structure's windows take lanes past S where their buffers have the copies.
    wide: bool,
    /// The GPU time a step of this structure's last measured batch (ns).
    step_ns: f64,
    /// Batches of this structure in a row whose windows ran long (up to 2).
    long_batches: u8,
    /// The virtual buffers this batch's wide windows lacked lane copies of, each once,
    /// at most [`WANTS`]. Weak: a buffer the user drops is freed at its batch's end as
    /// on the host's path.
    wants: Vec<(u64, Weak<DeviceBufferInner>)>,
    /// The bytes a GPU holds of lane copies made for windows (never given back: a bound
    /// on what the loop's buffers may take, not a count of what lives).
    lane_bytes: usize,
    /// The virtual buffers a batch's windows lacked guest lanes' copies of, where a part
    /// of them was wide enough to spread over the GPUs (as `wants`).
    guest_wants: Vec<(u64, Weak<DeviceBufferInner>)>,
    /// As `lane_bytes`, for guest lanes' copies.
    guest_bytes: usize,
    /// This structure's last cuts shrink towards its end (`next_cut`): its last measured
    /// batch's windows kept the GPU busy this share of its submit time.
    taper: Option<f64>,
    /// Batches in a row measured past the taper's threshold (below [`TAPER_BELOW`]
    /// untapered, at or above [`TAPER_UNTIL`] tapered; up to 2).
    taper_turns: u8,
    /// A cut of this batch was tapered (for its report).
    tapered_now: bool,
    /// Per cut of this structure found too narrow to spread, one more than its launches'
    /// summed blocks then (0: not found so): not looked at again while the structure
    /// repeats with those blocks (its words hold no grid).
    narrow_cuts: Vec<u64>,
}

/// The tasks of a recording, and the host regions they claim among themselves (a
/// recorded task runs after the recorded tasks whose regions conflict with its own; the
/// buffers' own claims are taken by each run, not at record time).
#[derive(Default)]
struct Recording {
    held: Vec<Held>,
    ids: FxHashMap<TaskId, u32>,
    claims: FxHashMap<u64, Claims>,
}

impl State {
    fn new() -> State {
        State {
            count: 0,
            positions: IdMap::default(),
            words: Vec::new(),
            replayable: true,
            matching: true,
            held: Vec::new(),
            held_ids: IdMap::default(),
            open: false,
            open_why: None,
            host_from: None,
            replayed: 0,
            launched: false,
            gone: IdMap::default(),
            cut: FIRST_CUT,
            next_seq: 0,
            template: None,
            cuts: 0,
            layouts: Vec::new(),
            given: Vec::new(),
            follow: Follow::default(),
            recording: None,
            wide: false,
            step_ns: 0.0,
            long_batches: 0,
            wants: Vec::new(),
            lane_bytes: 0,
            guest_wants: Vec::new(),
            guest_bytes: 0,
            narrow_cuts: Vec::new(),
            taper: None,
            taper_turns: 0,
            tapered_now: false,
        }
    }

    /// The host dispatches the rest of the batch, for `why` (unless it already did).
    fn close(&mut self, why: HostReason) {
        self.open = true;
        self.open_why.get_or_insert(why);
    }

    /// The host took task `id` (the first it takes is the report's).
    fn host_took(&mut self, id: TaskId, why: HostReason) {
        self.host_from.get_or_insert((id, why));
    }

    /// This batch so far is the whole of `template`'s structure, task for task.
    fn repeats(&self, template: Option<&Template>) -> bool {
        self.matching && template.is_some_and(|t| t.tasks == self.count && t.words == self.words)
    }
}

/// The scheduler's replay capture.
pub(crate) struct Capture {
    mode: Execution,
    order: Order,
    lanes: usize,
    shared: Arc<Shared>,
    /// Where the lanes' copies are made.
    machine: Arc<Machine>,
    me: Weak<Capture>,
    /// On a cache line of its own: taken on every submit.
    state: CachePadded<Mutex<State>>,
    /// Whether a recording is under way (read without the lock on every submit).
    recording: AtomicBool,
}

impl Capture {
    pub(crate) fn new(
        mode: Execution,
        order: Order,
        lanes: usize,
        shared: Arc<Shared>,
        machine: Arc<Machine>,
    ) -> Arc<Capture> {
        Arc::new_cyclic(|me| Capture {
            mode,
            order,
            lanes,
            shared,
            machine,
            me: me.clone(),
            state: CachePadded::new(Mutex::new(State::new())),
            recording: AtomicBool::new(false),
        })
    }

    /// Whether task `id` is held (submitted in this batch, not yet admitted), and
    /// which of `after` are. A held task only ever leaves for the batch's graph, so a
    /// caller that asks here first and then the graph misses none.
    pub(crate) fn held(&self, id: TaskId, after: &[TaskId]) -> (bool, HeldAfter) {
        if self.recording() {
            let st = self.state.lock();
            if let Some(r) = &st.recording {
                return (r.ids.contains_key(&id), HeldAfter::of(after, |p| r.ids.contains_key(p)));
            }
        }
        if self.mode == Execution::Host {
            return (false, HeldAfter::NONE);
        }
        let st = self.state.lock();
        if st.held_ids.is_empty() {
            return (false, HeldAfter::NONE);
        }
        (st.held_ids.contains_key(&id), HeldAfter::of(after, |p| st.held_ids.contains_key(p)))
    }

    /// A sealed task at submit: `preds` every task of the batch it runs after, its
    /// first `named` those it named with `after`, then those inferred from host regions.
    pub(crate) fn offer(&self, task: Box<Task>, named: usize, preds: Preds) -> Offer {
        if self.recording() {
            let mut st = self.state.lock();
            if let Some(r) = st.recording.as_mut() {
                // Every predecessor is recorded: named ones were checked against the
                // recording (`Scheduler::check_ids`), inferred ones come from its claims.
                let preds = preds.iter().filter_map(|p| r.ids.get(p).copied()).collect();
                r.ids.insert(task.id, r.held.len() as u32);
                r.held.push(Held { task, preds, external: Default::default(), pin: None });
                return Offer::Held;
            }
        }
        if self.mode == Execution::Host {
            return Offer::Admit(task, preds);
        }
        let mut guard = self.state.lock();
        let st = &mut *guard;
        let replayable = window::replayable(&task);
        let at = st.words.len();
        // Where this task's shape words end in `words`, if they were made.
        let mut shape_end = None;
        if st.replayable && replayable && (st.count as usize) < MAX_LEARNT {
            window::shape_words(&task, &mut st.words);
            let count_at = st.words.len();
            shape_end = Some(count_at);
            st.words.push(0);
            for p in &preds[..named.min(preds.len())] {
                if let Some(q) = st.positions.get(p) {
                    st.words.push(q as u64);
                }
            }
            st.words[count_at] = (st.words.len() - count_at - 1) as u64;
            if st.matching {
                let t = st.template.as_ref();
                st.matching = t.is_some_and(|t| t.words.get(at..st.words.len()) == Some(&st.words[at..]));
            }
        } else {
            st.replayable = false;
            st.matching = false;
        }
        st.positions.insert(task.id, st.count);
        st.count += 1;
        if st.open {
            let why = st.open_why.unwrap_or(HostReason::PastTheStructure);
            st.host_took(task.id, why);
            return Offer::Admit(task, preds);
        }
        let fits = replayable && preds.iter().all(|p| st.held_ids.contains_key(p) || st.gone.contains_key(p));
        let wanted = fits
            && match self.mode {
                Execution::Replay | Execution::Device => true,
                _ => st.matching && st.template.as_ref().is_some_and(|t| t.pays),
            };
        if !wanted {
            let why = if !replayable {
                HostReason::NotInAGraph
            } else if self.mode == Execution::Auto && st.template.is_none() {
                HostReason::Learning
            } else if self.mode == Execution::Auto && !st.matching {
                HostReason::Departs
            } else if !fits {
                HostReason::AfterAHostTask
            } else {
                let t = st.template.as_ref();
                HostReason::DoesNotPay { gpu_ns: t.map_or(0.0, |t| t.gpu_ns), host_ns: t.map_or(0.0, |t| t.host_ns) }
            };
            self.let_go_locked(st, why);
            st.close(why);
            st.host_took(task.id, why);
            return Offer::Admit(task, preds);
        }
        for h in &task.hosts {
            let me: Weak<dyn HeldTasks> = self.me.clone();
            h.held_by(me);
        }
        let index = st.held.len() as u32;
        // Room for the lane edge its window may add (`window::assign_lanes`); inline
        // for most tasks (`LanePreds`).
        let mut held_preds = crate::ext::replay::window::LanePreds::with_capacity(preds.len() + 1);
        let mut external = crate::ext::replay::window::ExternalPreds::new();
        let mut pin = None;
        for p in &preds {
            match st.held_ids.get(p) {
                Some(i) => held_preds.push(i),
                None => {
                    let (g, seq) = st.gone.get(p).expect("every predecessor is held or gone: `fits`");
                    pin.get_or_insert(g);
                    external.push((*p, seq));
                }
            }
        }
        st.held_ids.insert(task.id, index);
        if self.follows(st) {
            let shape = match shape_end {
                Some(end) => &st.words[at..end],
                None => {
                    st.given.clear();
                    window::shape_words(&task, &mut st.given);
                    &st.given[..]
                }
            };
            let kept = st.layouts.get(st.cuts).and_then(Option::as_ref);
            st.follow.task(kept, index as usize, shape, window::uses_virtual(&task), &held_preds);
        }
        st.held.push(Held { task, preds: held_preds, external, pin });
        if st.repeats(st.template.as_ref()) {
            self.launch(st, true);
        } else if st.held.len() >= st.cut {
            // A sub-window: the batch goes on being held after it.
            let left = match (&st.template, st.taper) {
                (Some(t), Some(_)) if st.matching => Some(t.tasks.saturating_sub(st.count) as usize),
                _ => None,
            };
            st.tapered_now |= left.is_some();
            st.cut = next_cut(st.cut, left);
            self.launch(st, false);
            drop(guard);
            // What earlier windows left, freed on this thread (not under the lock) once
            // it is much: most batches free theirs as `synchronize` waits.
            self.shared.windows.free_spent_beyond(crate::ext::replay::queues::SPENT_KEEP);
        }
        Offer::Held
    }

    /// Before `synchronize` waits: the held tasks go, what ended windows left is freed,
    /// and the rest of a batch whose windows went is the host's (a task another thread submits meanwhile runs in this
    /// batch, after the tasks it names, as host dispatch would).
    pub(crate) fn before_wait(&self) {
        self.shared.windows.set_closing(true);
        if self.mode != Execution::Host {
            let mut st = self.state.lock();
            // Auto's held tasks go to the host here; Replay's go as windows.
            let early = match self.mode {
                Execution::Auto => HostReason::SynchronizedEarly,
                _ => HostReason::WhileSynchronizing,
            };
            self.let_go_locked(&mut st, early);
            if st.launched {
                st.close(HostReason::WhileSynchronizing);
            }
        }
        // What the batch's ended windows left, freed while its last ones run (those
        // are freed by the thread that ends them: `Shared::end_tasks`).
        self.shared.windows.free_spent();
    }

    /// After `synchronize`: learns the batch's structure if every task of it could run
    /// in a graph (Auto: a batch the host dispatched, `report` saying whether replaying
    /// it pays; Replay: any, to close the next window as soon as it is whole), and
    /// starts the next batch.
    pub(crate) fn end_batch(&self, report: Option<&Report>) {
        self.shared.windows.set_closing(false);
        if self.mode == Execution::Host {
            return;
        }
        let mut st = self.state.lock();
        // Tasks submitted while `synchronize` waited (another thread's) are the next
        // batch's: taken out here, let go below.
        let early = std::mem::take(&mut st.held);
        let mut template = st.template.take();
        let whole = st.replayable && st.count > 0 && early.is_empty();
        // A batch that repeated its structure and ran windows: how long they kept their
        // lanes busy says whether that structure's next windows go wide.
        let repeated = st.repeats(template.as_ref());
        let measured = report.filter(|_| repeated && st.launched && self.widens()).and_then(|r| step_ns(r, self.lanes));
        if let Some((ns, bound)) = measured {
            // On S lanes only a window that filled them could gain from more.
            st.step_ns = ns;
            let long = ns >= WIDE_FROM_NS && (bound || st.wide);
            st.long_batches = if long { (st.long_batches + 1).min(2) } else { 0 };
            st.wide = if st.wide { ns >= NARROW_BELOW_NS } else { st.long_batches >= 2 };
        }
        if let Some(share) = report.filter(|_| repeated && st.launched).and_then(busy_share) {
            (st.taper, st.taper_turns) = taper_after(st.taper, st.taper_turns, share);
        }
        let learnt = if whole && (matches!(self.mode, Execution::Replay | Execution::Device) || !st.launched) {
            let host_ns = report.map_or(0.0, host_ns_per_command);
            let gpu_ns = report.map_or(f64::INFINITY, gpu_ns_per_command);
            let pays = gpu_ns < Execution::PAYS_BELOW * host_ns;
            if !repeated {
                // Another structure.
                st.wide = false;
                st.long_batches = 0;
                st.narrow_cuts.clear();
                st.taper = None;
                st.taper_turns = 0;
            }
            Some(Template { words: std::mem::take(&mut st.words), tasks: st.count, pays, host_ns, gpu_ns })
        } else {
            // A replayed batch whose windows grew long (the kernels did) against the
            // host's cost of a command when the structure was learnt stops paying: the
            // next such batch goes to the host and is judged again.
            if let (Some(t), Some(r)) = (template.as_mut(), report.filter(|_| st.launched)) {
                let (ns, commands) =
                    r.windows.iter().fold((0u64, 0usize), |(n, c), w| (n + w.run_ns(), c + w.commands));
                if commands > 0 && ns as f64 / commands as f64 >= Execution::PAYS_BELOW * t.host_ns {
                    t.pays = false;
                    t.gpu_ns = ns as f64 / commands as f64;
                }
            }
            template
        };
        // Cleared, not made anew: the maps keep their capacity for the next batch.
        st.count = 0;
        st.positions.clear();
        st.words.clear();
        st.replayable = true;
        st.matching = true;
        st.held.clear();
        st.held_ids.clear();
        st.open = false;
        st.open_why = None;
        st.host_from = None;
        st.replayed = 0;
        st.launched = false;
        st.gone.clear();
        st.cut = FIRST_CUT;
        st.cuts = 0;
        st.tapered_now = false;
        st.template = learnt;
        let wants = std::mem::take(&mut st.wants);
        let lanes_past_s = |b: &DeviceBufferInner| recorded::RECORD_LANES.saturating_sub(b.slots);
        let make = if st.wide { to_make(wants, &mut st.lane_bytes, lanes_past_s) } else { Vec::new() };
        let guests = to_make(std::mem::take(&mut st.guest_wants), &mut st.guest_bytes, |_| recorded::RECORD_LANES);
        if !early.is_empty() {
            st.held = early;
            for i in 0..st.held.len() {
                let id = st.held[i].task.id;
                st.held_ids.insert(id, i as u32);
            }
            self.let_go_locked(&mut st, HostReason::WhileSynchronizing);
        }
        drop(st);
        // Outside the lock: allocations, once a buffer. One that fails leaves its buffer
        // without them (its windows stay on S lanes); its bytes stay counted.
        for b in make {
            for gpu in 0..b.lanes.len() {
                if recorded::make_buffer_lanes(&self.machine, gpu, &b).is_err() {
                    break;
                }
            }
        }
        // On every GPU but the first alive, where spread windows are launched from.
        let alive = if guests.is_empty() { Vec::new() } else { self.alive() };
        for b in guests {
            for &gpu in alive.iter().skip(1) {
                if recorded::make_guest_lanes(&self.machine, gpu, &b).is_err() {
                    break;
                }
            }
        }
    }

    /// The GPUs in the rotation.
    fn alive(&self) -> Vec<usize> {
        (0..self.shared.alive.len()).filter(|&g| self.shared.alive[g].load(Ordering::SeqCst)).collect()
    }

    /// Whether `held`'s windows may spread a part wide enough to keep one GPU busy over
    /// the GPUs `alive`, as a recorded part does ([`window::plan`]): with S ≥ 2 (with one
    /// stream a program may rely on a virtual buffer's one copy), where every virtual
    /// buffer its tasks name has its guest lanes' copies on every GPU past the first.
    /// Where one lacks them and a part would spread, those buffers are named in `wants`
    /// (up to [`WANTS`]; made at the batch's end, so the structure's next batch spreads);
    /// where none would, the cut (`st.cuts`) is marked narrow with its blocks and not
    /// looked at again while the structure repeats with them (the per-iteration loop of
    /// narrow tasks then pays a sum a task).
    fn spreads(&self, held: &[Held], alive: &[usize], st: &mut State) -> bool {
        if alive.len() < 2 || self.lanes < 2 {
            return false;
        }
        let blocks = held
            .iter()
            .flat_map(|h| &h.task.commands)
            .filter_map(|c| match c {
                Command::Launch(l) => Some(l.shape.grid.count()),
                _ => None,
            })
            .fold(1u64, u64::saturating_add);
        if st.narrow_cuts.get(st.cuts) == Some(&blocks) {
            return false;
        }
        let wants = &mut st.guest_wants;
        let has =
            |b: &DeviceBufferInner| alive[1..].iter().all(|&g| b.guests.get(g).is_some_and(|c| c.get().is_some()));
        let mut all = true;
        for h in held {
            recorded::each_virtual(&h.task, |b| all &= has(b));
        }
        if all {
            return true;
        }
        if !window::would_spread(held, alive) {
            if st.narrow_cuts.len() <= st.cuts {
                st.narrow_cuts.resize(st.cuts + 1, 0);
            }
            st.narrow_cuts[st.cuts] = blocks;
            return false;
        }
        for h in held {
            recorded::each_virtual(&h.task, |b| {
                if !has(b) && wants.len() < WANTS && !wants.iter().any(|w| w.0 == b.id) {
                    wants.push((b.id, Arc::downgrade(b)));
                }
            });
        }
        false
    }

    /// How this batch's tasks went, and why, for its report (`None` with
    /// `Execution::Host`, or where the batch held none and the host took none).
    pub(crate) fn batch_execution(&self) -> Option<BatchExecution> {
        if self.mode == Execution::Host {
            return None;
        }
        let st = self.state.lock();
        if st.replayed == 0 && st.host_from.is_none() {
            return None;
        }
        let pays = (self.mode == Execution::Auto && st.replayed > 0)
            .then(|| st.template.as_ref().map(|t| Pays { gpu_ns: t.gpu_ns, host_ns: t.host_ns }))
            .flatten();
        let wide_step_ns = (st.wide && st.replayed > 0 && self.widens()).then_some(st.step_ns);
        let tapered = st.taper.filter(|_| st.tapered_now);
        Some(BatchExecution { replayed: st.replayed, pays, wide_step_ns, tapered, host_from: st.host_from })
    }

    /// Whether windows may take lanes past S: with one stream a program may rely on a
    /// virtual buffer's one copy from task to task (every task ran on it), so there they
    /// stay on it.
    fn widens(&self) -> bool {
        (2..WIDE_LANES).contains(&self.lanes)
    }

    /// The lanes `held`'s window takes: [`WIDE_LANES`] where its structure
    /// is wide and every virtual buffer its tasks name has its lane copies on every GPU,
    /// else S (and the buffers without them are named in `wants`, up to [`WANTS`]).
    fn window_lanes(&self, held: &[Held], wide: bool, wants: &mut Vec<(u64, Weak<DeviceBufferInner>)>) -> usize {
        if !(wide && self.widens()) {
            return self.lanes;
        }
        let mut all = true;
        for h in held {
            recorded::each_virtual(&h.task, |b| {
                if !has_lanes(b) {
                    all = false;
                    if wants.len() < WANTS && !wants.iter().any(|w| w.0 == b.id) {
                        wants.push((b.id, Arc::downgrade(b)));
                    }
                }
            });
        }
        if all {
            WIDE_LANES
        } else {
            self.lanes
        }
    }

    /// Lets the held tasks go, if any: as windows (Replay), or to the host in submit
    /// order (Auto: the batch departed from the structure, or something waits for
    /// them); the rest of the batch is then the host's.
    fn let_go_locked(&self, st: &mut State, why: HostReason) {
        if st.held.is_empty() {
            return;
        }
        st.close(why);
        if matches!(self.mode, Execution::Replay | Execution::Device) {
            self.launch(st, true);
            return;
        }
        let held = std::mem::take(&mut st.held);
        st.held_ids.clear();
        st.host_took(held[0].task.id, why);
        let ids: Vec<TaskId> = held.iter().map(|h| h.task.id).collect();
        for h in held {
            // Tasks of windows gone are in the batch's graph, running.
            let preds: Vec<TaskId> =
                h.preds.iter().map(|&p| ids[p as usize]).chain(h.external.iter().map(|e| e.0)).collect();
            self.shared.admit(h.task, &preds);
        }
    }

    /// Whether this cut's layout may be kept for the next batch's (`window::layout`):
    /// on a scheduler of one GPU (`launch` checks that it is alive as it lays the cut
    /// out), in submit order, among the first [`KEPT_CUTS`]. Elsewhere a held task is not
    /// compared with a kept layout no cut would take.
    fn follows(&self, st: &State) -> bool {
        self.shared.alive.len() == 1 && self.order == Order::Fcfs && st.cuts < KEPT_CUTS
    }

    /// Sends the held tasks as windows, one per GPU in the rotation that gets work:
    /// counted into the batch as running, their host claims active, their dependencies
    /// in the report.
    /// `close`: the rest of the batch is the host's (else it goes on being held).
    fn launch(&self, st: &mut State, close: bool) {
        if close {
            st.close(HostReason::PastTheStructure);
        }
        st.launched = true;
        // A batch held on keeps room for its next cut (growing it task by task moved
        // every held task again at each doubling).
        let room = if st.open { 0 } else { st.cut };
        let held = std::mem::replace(&mut st.held, Vec::with_capacity(room));
        st.held_ids.clear();
        if held.is_empty() {
            return;
        }
        st.replayed += held.len();
        {
            let mut batch = self.shared.batch.lock();
            batch.outstanding += held.len();
            for h in &held {
                batch.graph.add_live(h.task.id);
            }
            for h in &held {
                for &p in &h.preds {
                    let pred = held[p as usize].task.id;
                    batch.outcome.dependencies.push((pred, h.task.id));
                }
                for &(pred, _) in &h.external {
                    batch.outcome.dependencies.push((pred, h.task.id));
                }
            }
        }
        for h in &held {
            for host in &h.task.hosts {
                host.activate(Holder::Task(h.task.id));
            }
        }
        let alive = self.alive();
        if alive.is_empty() {
            for h in held {
                let failure = TaskFailure {
                    message: "no GPU left to run its replayed window".into(),
                    ..not_run(&h.task, h.task.id, 0, 0)
                };
                self.shared.end_task(h.task, Some(failure));
            }
            return;
        }
        let lanes = self.window_lanes(&held, st.wide, &mut st.wants);
        let windows = if alive.len() == 1 && self.follows(st) {
            // One GPU, in submit order: the same cut of the last batch of this
            // structure laid out the same tasks (`window::layout`).
            if st.layouts.len() <= st.cuts {
                st.layouts.resize_with(st.cuts + 1, || None);
            }
            let kept = &mut st.layouts[st.cuts];
            let (w, _) = lay_out_kept(held, alive[0], lanes.max(1), kept, &mut st.given, &st.follow);
            vec![(alive[0], w)]
        } else {
            let spread = self.spreads(&held, &alive, st);
            window::plan(held, self.order, &alive, lanes, spread)
        };
        st.cuts += 1;
        for (g, mut w) in windows {
            w.device = self.mode == Execution::Device && w.device_runnable();
            // A wide window (lanes past S) ends with a timed event: behind untimed ones,
            // the windows after it ran several times slower in some batches on the
            // H200 (`backend::op::GraphOp::timed_end`).
            w.timed_end = w.lane_count > self.lanes;
            w.seq = st.next_seq;
            st.next_seq += 1;
            for t in &w.tasks {
                st.gone.insert(t.id, (g, w.seq));
            }
            if let Err(w) = self.shared.push_window(g, Box::new(w)) {
                for task in w.tasks {
                    let failure = TaskFailure {
                        message: "no GPU left to run its replayed window".into(),
                        ..not_run(&task, task.id, g, 0)
                    };
                    self.shared.end_task(task, Some(failure));
                }
            }
        }
    }
}

/// Recording (`ext::replay::recorded`): while one is under way, every task submitted
/// is kept in it, and nothing runs.
impl Capture {
    /// Whether a recording is under way.
    pub(crate) fn recording(&self) -> bool {
        self.recording.load(Ordering::SeqCst)
    }

    /// Starts a recording (called under the scheduler's submit lock): refused while one
    /// is under way, and while the batch has tasks (a recorded graph runs after none).
    pub(crate) fn start_recording(&self) -> Result<(), RecordingProblem> {
        let mut st = self.state.lock();
        if st.recording.is_some() {
            return Err(RecordingProblem::Nested);
        }
        let tasks = self.shared.batch.lock().graph.len() + st.held.len();
        if tasks > 0 {
            return Err(RecordingProblem::BatchOpen { tasks });
        }
        st.recording = Some(Recording::default());
        self.recording.store(true, Ordering::SeqCst);
        Ok(())
    }

    /// The recording's admission step, in place of the core's host claims while a
    /// recording is under way (`Ok(None)` otherwise): refuses a task a recorded graph
    /// cannot take (a callback, resident data or a GPU preference: `held_back`), then
    /// checks its host regions against the recording's own (not the buffers' claims:
    /// each run takes those), adding the recorded tasks they conflict with to `preds`.
    /// The buffers touched.
    pub(crate) fn admit_recorded(
        &self,
        id: TaskId,
        commands: &[Command],
        held_back: bool,
        claims: &[HostClaim],
        preds: &mut Preds,
    ) -> crate::Result<Option<Vec<Arc<HostShared>>>> {
        if !self.recording() {
            return Ok(None);
        }
        if held_back || !window::replayable_commands(commands) {
            return Err(crate::Error::Recording { task: Some(id), problem: RecordingProblem::NotRecordable });
        }
        let mut st = self.state.lock();
        let Some(r) = st.recording.as_mut() else { return Ok(None) };
        let mut hosts: Vec<Arc<HostShared>> = Vec::new();
        let mut holders = Vec::new();
        for c in claims {
            let list = r.claims.entry(c.host.id).or_default();
            holders.clear();
            list.conflicts(&c.region, c.write, Holder::Task(id), &mut holders);
            for h in &holders {
                if let Holder::Task(t) = *h {
                    if !preds.contains(&t) {
                        preds.push(t);
                    }
                }
            }
            list.add(c.region, c.write, Holder::Task(id));
            if !hosts.iter().any(|h| Arc::ptr_eq(h, &c.host)) {
                hosts.push(c.host.clone());
            }
        }
        Ok(Some(hosts))
    }

    /// Ends the recording: its tasks laid out as one window per GPU that gets work.
    pub(crate) fn finish_recording(&self) -> Result<Vec<(usize, Window)>, RecordingProblem> {
        let held = {
            let mut st = self.state.lock();
            self.recording.store(false, Ordering::SeqCst);
            st.recording.take().map(|r| r.held).unwrap_or_default()
        };
        if held.is_empty() {
            return Err(RecordingProblem::Empty);
        }
        let alive = self.alive();
        if alive.is_empty() {
            return Err(RecordingProblem::ShutDown);
        }
        // More lanes than slots where the copies they need are small: a graph's width,
        // not S, then bounds how many of its tasks run side by side.
        let bytes: usize = recorded::virtual_buffers(held.iter().map(|h| &*h.task)).iter().map(|b| b.bytes).sum();
        let extra = recorded::RECORD_LANES.saturating_sub(self.lanes);
        let lanes = if bytes.saturating_mul(extra) <= recorded::LANE_BUDGET { self.lanes + extra } else { self.lanes };
        // A part that keeps a GPU busy may spread over the others where their guest lanes'
        // copies are small too.
        let spread = bytes.saturating_mul(recorded::RECORD_LANES) <= recorded::LANE_BUDGET;
        Ok(window::plan(held, self.order, &alive, lanes, spread)
            .into_iter()
            .map(|(g, mut w)| {
                w.seq = window::UNNUMBERED;
                w.device = false;
                (g, w)
            })
            .collect())
    }

    /// Ends a recording whose body failed: its tasks are dropped unrun.
    pub(crate) fn abandon_recording(&self) {
        let mut st = self.state.lock();
        self.recording.store(false, Ordering::SeqCst);
        st.recording = None;
    }
}

impl HeldTasks for Capture {
    fn let_go(&self) {
        self.let_go_locked(&mut self.state.lock(), HostReason::GuardWaited);
    }
}

/// The mean time of a GPU command of the batch `report` describes, in ns (infinite
/// without any): replaying pays where it is below [`Execution::PAYS_BELOW`] times the
/// host's time to dispatch one.
fn gpu_ns_per_command(report: &Report) -> f64 {
    let (mut n, mut gpu_ns) = (0u64, 0u64);
    for r in report.records.iter().filter(|r| r.stage.on_gpu()) {
        n += 1;
        gpu_ns += r.duration_ns();
    }
    if n == 0 {
        return f64::INFINITY;
    }
    gpu_ns as f64 / n as f64
}

/// The GPU time a step of the batch's windows in `report` (ns): each window's GPU time
/// ([`each_gpu_ns`]) summed over the windows, over their depths summed (the steps their graphs ran one
/// after another); and whether a window used `s` lanes or more. `None` without windows.
/// Not S's multiple: a window of a graph's steps of short tasks on many lanes reads as
/// short (counting each window's GPU time on its lanes read launch latency as work, and
/// more of it the larger S).
fn step_ns(report: &Report, s: usize) -> Option<(f64, bool)> {
    let (mut gpu_ns, mut steps) = (0u64, 0usize);
    let bound = report.windows.iter().any(|w| w.lanes >= s);
    each_gpu_ns(report, |w, ns| {
        gpu_ns += ns;
        steps += w.depth;
    });
    (steps > 0).then(|| (gpu_ns as f64 / steps as f64, bound))
}

/// Calls `f` with each window of `report` on one of its GPUs and its GPU time: as
/// measured on the GPU, [`ReplayedWindow::gpu_ns`]; where it was not, from its launch,
/// or from the end of the window before it on its GPU, to its end seen (a window issued
/// while the one before it ran counts from that one's end).
fn each_gpu_ns(report: &Report, mut f: impl FnMut(&ReplayedWindow, u64)) {
    let mut last_end = vec![0u64; report.gpus.len().max(1)];
    for w in &report.windows {
        let Some(end) = last_end.get_mut(w.gpu) else { continue };
        f(w, w.gpu_ns.unwrap_or_else(|| w.end_ns.saturating_sub(w.launched_ns.max(*end))));
        *end = (*end).max(w.end_ns);
    }
}

/// The cut after one of `cut` tasks: twice it, up to [`LAST_CUT`]; where `left` tasks
/// of a tapered structure are still to come, at most half of them (a power of two, at
/// least [`FIRST_CUT`]), so that the cuts shrink again towards the batch's end (1,024
/// tasks: 64, 128, 256, 256, 128, 64, 64, 64). Each depends only on the position, so
/// the cuts fall at the same places in every batch of the structure.
fn next_cut(cut: usize, left: Option<usize>) -> usize {
    let grown = (cut * 2).min(LAST_CUT);
    match left {
        Some(left) => {
            let half = left / 2;
            let half = if half == 0 { 0 } else { 1 << half.ilog2() };
            grown.min(half.max(FIRST_CUT))
        }
        None => grown,
    }
}

/// Whether a structure tapers its cuts after a batch whose windows kept the GPU busy
/// `share` of its submit time (`busy_share`), from whether it did (`taper`, the share
/// it tapered at) and the batches in a row past the threshold before (`turns`): two in
/// a row turn it over, as for wide windows, so that one noisy batch does not.
fn taper_after(taper: Option<f64>, turns: u8, share: f64) -> (Option<f64>, u8) {
    let past = if taper.is_some() { share >= TAPER_UNTIL } else { share < TAPER_BELOW };
    match (past, turns) {
        (false, _) => (taper.map(|_| share), 0),
        (true, 0) => (taper.map(|_| share), 1),
        (true, _) => (if taper.is_some() { None } else { Some(share) }, 0),
    }
}

/// How busy the batch's windows kept its busiest GPU, as a share of the time from its
/// first window's queueing to its last's (about the time its tasks took to submit), each
/// window's GPU time as [`each_gpu_ns`] gives it. `None` with fewer than two windows.
fn busy_share(report: &Report) -> Option<f64> {
    let first = report.windows.iter().map(|w| w.queued_ns).min()?;
    let last = report.windows.iter().map(|w| w.queued_ns).max()?;
    if report.windows.len() < 2 || last <= first {
        return None;
    }
    let mut busy = vec![0u64; report.gpus.len().max(1)];
    each_gpu_ns(report, |w, ns| busy[w.gpu] += ns);
    Some(busy.into_iter().max().unwrap_or(0) as f64 / (last - first) as f64)
}

/// Of the buffers named in `wants` (a batch's windows lacked their lane or guest lanes'
/// copies), those whose `copies(b)` copies fit what is left of
/// [`recorded::LANE_BUDGET`] a GPU (`taken`: what windows took before), counted in.
fn to_make(
    wants: Vec<(u64, Weak<DeviceBufferInner>)>,
    taken: &mut usize,
    copies: impl Fn(&DeviceBufferInner) -> usize,
) -> Vec<Arc<DeviceBufferInner>> {
    let mut make = Vec::new();
    for b in wants.iter().filter_map(|(_, w)| w.upgrade()) {
        let bytes = b.bytes.saturating_mul(copies(&b));
        if taken.saturating_add(bytes) <= recorded::LANE_BUDGET {
            *taken += bytes;
            make.push(b);
        }
    }
    make
}

/// Whether `b` has its copies for the lanes past S on every GPU.
fn has_lanes(b: &DeviceBufferInner) -> bool {
    b.lanes.iter().all(|l| l.get().is_some())
}

/// The host's time to dispatch one command of that batch (runtime + driver), in ns.
fn host_ns_per_command(report: &Report) -> f64 {
    let d = &report.dispatch;
    (d.runtime_ns + d.driver_ns) as f64 / d.commands.max(1) as f64
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::report::{DispatchStats, GraphSetup, LaunchedBy, Outcome, ReplayedWindow};

    fn window(gpu: usize, tasks: usize, lanes: usize, depth: usize, launched_ns: u64, end_ns: u64) -> ReplayedWindow {
        ReplayedWindow {
            gpu,
            tasks,
            commands: tasks,
            lanes,
            depth,
            gpu_count: 1,
            queued_ns: 0,
            launched_ns,
            launched_by: LaunchedBy::Dispatcher,
            end_ns,
            gpu_ns: None,
            setup: GraphSetup::Reused,
            timed_end: false,
            host_ns: 0,
            timed: false,
            failed: false,
            way: None,
        }
    }

    fn report(windows: Vec<ReplayedWindow>) -> Report {
        let outcome = Outcome { windows, ..Outcome::default() };
        let names = vec!["sim #0".into(), "sim #1".into()];
        Report::build("sim", names, 16, 1, vec![], DispatchStats::default(), outcome, vec![], vec![], vec![])
    }

    /// A window issued while the one before it on its GPU ran counts from that one's
    /// end; the GPU time is shared over the windows' steps (their depths), whatever S is.
    #[test]
    fn step_time_counts_each_window_from_the_end_of_the_one_before_it_on_its_gpu() {
        let r = report(vec![
            window(0, 64, 16, 4, 0, 1_000_000),
            window(0, 64, 16, 4, 500_000, 1_500_000),
            window(1, 128, 128, 1, 0, 1_000_000),
        ]);
        // GPU time 1, 0.5 and 1 ms, over 4 + 4 + 1 steps; S only says which filled it.
        assert_eq!(step_ns(&r, 16), Some((2_500_000.0 / 9.0, true)));
        assert_eq!(step_ns(&r, 32), Some((2_500_000.0 / 9.0, true)));
        assert_eq!(step_ns(&report(vec![]), 16), None);
        // A chain's window on one lane does not fill S = 16: 64 steps of its 2 ms.
        let chain = report(vec![window(0, 64, 1, 64, 0, 2_000_000)]);
        assert_eq!(step_ns(&chain, 16), Some((2_000_000.0 / 64.0, false)));
        // Measured on the GPU, a window's time is that, not its span: the second
        // window's end was seen 0.3 ms late.
        let timed = |w: ReplayedWindow, ns| ReplayedWindow { gpu_ns: Some(ns), ..w };
        let r = report(vec![
            timed(window(0, 64, 16, 4, 0, 1_000_000), 900_000),
            timed(window(0, 64, 16, 4, 500_000, 1_800_000), 500_000),
        ]);
        assert_eq!(step_ns(&r, 16), Some((1_400_000.0 / 8.0, true)));
    }

    /// The cuts a batch of `tasks` tasks makes: tapered where `taper`.
    fn cuts(tasks: usize, taper: bool) -> Vec<usize> {
        let (mut cuts, mut cut, mut held, mut count) = (Vec::new(), FIRST_CUT, 0, 0);
        while count < tasks {
            count += 1;
            held += 1;
            if count == tasks {
                cuts.push(held);
            } else if held >= cut {
                cuts.push(held);
                held = 0;
                cut = next_cut(cut, taper.then_some(tasks - count));
            }
        }
        cuts
    }

    #[test]
    fn tapered_cuts_shrink_towards_the_batch_end_and_others_double() {
        assert_eq!(cuts(1024, false), [64, 128, 256, 512, 64]);
        assert_eq!(cuts(1024, true), [64, 128, 256, 256, 128, 64, 64, 64]);
        assert_eq!(cuts(5000, false), [64, 128, 256, 512, 1024, 1024, 1024, 968]);
        let long = cuts(5000, true);
        assert_eq!(long.iter().sum::<usize>(), 5000);
        assert_eq!(&long[..6], [64, 128, 256, 512, 1024, 1024]);
        assert!(long[6..].windows(2).all(|w| w[1] <= w[0]), "{long:?}");
        assert!(long.last().is_some_and(|&l| l <= FIRST_CUT), "{long:?}");
        // A short batch is one cut either way.
        assert_eq!(cuts(40, true), [40]);
    }

    fn queued(w: ReplayedWindow, ns: u64) -> ReplayedWindow {
        ReplayedWindow { queued_ns: ns, ..w }
    }

    #[test]
    fn busy_share_is_the_busiest_gpus_time_over_the_span_of_the_windows_queueing() {
        // Queued over 1 ms; GPU 0 ran 0.2 + 0.3 ms (the second from the first's end).
        let r = report(vec![
            queued(window(0, 64, 16, 4, 100_000, 300_000), 0),
            queued(window(0, 64, 16, 4, 200_000, 600_000), 500_000),
            queued(window(1, 64, 16, 4, 900_000, 1_000_000), 1_000_000),
        ]);
        assert_eq!(busy_share(&r), Some(0.5));
        // One window says nothing.
        assert_eq!(busy_share(&report(vec![window(0, 64, 16, 4, 0, 10)])), None);
    }

    #[test]
    fn two_batches_in_a_row_past_the_threshold_turn_the_taper_over() {
        let (mut taper, mut turns) = (None, 0);
        let mut step = |share| {
            (taper, turns) = taper_after(taper, turns, share);
            taper
        };
        assert_eq!(step(0.5), None);
        assert_eq!(step(1.1), None, "one batch at the pace of the GPU starts over");
        assert_eq!(step(0.5), None);
        assert_eq!(step(0.6), Some(0.6), "two host-paced batches in a row");
        assert_eq!(step(1.1), Some(1.1), "between the thresholds it stays tapered");
        assert_eq!(step(1.3), Some(1.3));
        assert_eq!(step(0.9), Some(0.9));
        assert_eq!(step(1.3), Some(1.3));
        assert_eq!(step(1.4), None, "two GPU-paced batches in a row");
        assert_eq!(step(1.1), None, "between the thresholds it stays untapered");
    }
}
