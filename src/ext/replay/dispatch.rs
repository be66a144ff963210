//! A dispatcher's replay windows, its second source of work beside Q: a window queued for this GPU starts when
//! every stream slot is idle (its lanes use the slots' copies of the virtual buffers)
//! and holds the GPU until it completes; no task is taken from Q meanwhile. Up to
//! [`IN_FLIGHT`] windows are issued at once, the next queued behind the one running
//! (the GPU runs them in order), so the GPU goes from one to the next without waiting
//! for the host. A window whose tasks run after tasks of earlier windows starts once
//! each of those ran well or runs before it here; a task after one that failed does
//! not run. Its tasks then end as host-dispatched ones do: records where the backend
//! timed them, failures where they failed, dependents released. A window queued for a
//! GPU that leaves the rotation goes to another GPU (its tasks have not begun), or
//! fails if none is left.

use crate::backend::{Fault, GraphUse, Reach, Span, TaskRun, WindowRun};
use crate::dispatch::{Device, Dispatcher};
use crate::ext::replay::queues::{Lender, Spent};
use crate::ext::replay::window::Window;
use crate::report::{CommandRecord, GraphSetup, LaunchedBy, LostGpu, ReplayedWindow, TaskFailure};
use crate::sync::Ordering;
use crate::TaskId;
use std::time::Instant;

/// The most windows a GPU has issued and not completed: one running, one queued.
const IN_FLIGHT: usize = 2;

/// Whether a queued window may start here now.
enum Start {
    /// Yes; these of its tasks (index, the earlier task) run after a task that failed.
    Go(Vec<(u32, TaskId)>),
    /// Not yet: a task of an earlier window on another GPU it runs after has not ended.
    Wait,
}

/// A dispatcher's windows in flight, in the order issued, and when the last one
/// here ended (one issued behind it began then).
pub(crate) struct WindowsInFlight {
    flights: std::collections::VecDeque<InFlight>,
    end_ns: u64,
    /// When the last window issued here whose run can be foreseen is expected to end
    /// (ns; 0: none foreseen).
    expected_end_ns: u64,
    /// How long a window of each structure (its key's hash) last ran here: a batch's
    /// window that repeats one is foreseen to run as long (a hint; a hash shared by
    /// two structures foresees wrongly, which costs a wait its spin, never a result).
    ran_ns: rustc_hash::FxHashMap<u64, u64>,
}

/// The most structures whose windows' run times a dispatcher keeps (beyond it they are
/// forgotten, and learnt again).
const RAN_KEPT: usize = 256;

impl WindowsInFlight {
    pub(crate) fn new() -> WindowsInFlight {
        WindowsInFlight {
            flights: std::collections::VecDeque::with_capacity(IN_FLIGHT),
            end_ns: 0,
            expected_end_ns: 0,
            ran_ns: Default::default(),
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.flights.is_empty()
    }
}

/// A window a dispatcher has in flight.
struct InFlight {
    window: Box<Window>,
    dispatched_ns: u64,
    used: GraphUse,
    host_ns: u64,
    by: LaunchedBy,
}

impl<D: Device> Dispatcher<D> {
    /// Whether windows wait for this GPU or one runs here: no task is taken from Q then.
    pub(crate) fn windows_pending(&self) -> bool {
        !self.windows.flights.is_empty() || self.shared.windows.count[self.gpu].load(Ordering::SeqCst) > 0
    }

    /// Whether `w` may start here: each task of an earlier window it runs after has
    /// ended (well, or failed: the tasks after it do not run), or runs before it here.
    fn start_of(&self, w: &Window, graph: &crate::task::graph::Graph) -> Start {
        let mut failed = Vec::new();
        for &(t, pred, seq) in &w.external {
            if self.windows.flights.iter().any(|f| f.window.seq == seq) {
                continue;
            }
            match graph.ended(pred) {
                None => return Start::Wait,
                Some(true) => failed.push((t, pred)),
                Some(false) => {}
            }
        }
        Start::Go(failed)
    }

    /// Starts a window queued for this GPU once every slot is idle: the first in the
    /// queue that may start (a window waiting for another GPU does not hold up the
    /// ones behind it that do not).
    pub(crate) fn try_window(&mut self) -> bool {
        self.start_window(false)
    }

    /// As [`Dispatcher::try_window`]; with `relaunch` (a turn taken by another thread,
    /// [`Lender`]) only the first window queued, and only a recorded run that relaunches
    /// its kept graph or device image (`Part::relaunches`): on CUDA such a turn costs
    /// one launch.
    fn start_window(&mut self, relaunch: bool) -> bool {
        if self.windows.flights.len() >= IN_FLIGHT
            || self.lost.is_some()
            || self.shared.windows.count[self.gpu].load(Ordering::SeqCst) == 0
            || self.slots.iter().any(|s| s.task.is_some() || s.busy.is_some())
        {
            return false;
        }
        let picked = {
            let mut queue = self.shared.windows.queued[self.gpu].lock();
            let batch = self.shared.batch.lock();
            let mut picked = None;
            for (i, w) in queue.iter().enumerate() {
                if relaunch && (i > 0 || !w.recorded.as_ref().is_some_and(|p| p.relaunches())) {
                    break;
                }
                if !self.device.can_issue_window(w) {
                    break;
                }
                if let Start::Go(failed) = self.start_of(w, &batch.graph) {
                    picked = Some((i, failed));
                    break;
                }
            }
            drop(batch);
            picked.and_then(|(i, failed)| queue.remove(i).map(|w| (w, failed)))
        };
        let Some((mut window, failed)) = picked else { return false };
        self.shared.windows.count[self.gpu].fetch_sub(1, Ordering::SeqCst);
        let alive = |g: usize| self.shared.alive.get(g).is_some_and(|a| a.load(Ordering::SeqCst));
        // A recorded part spread over GPUs cannot run once one of them has left the
        // rotation: its nodes there have nowhere else to go.
        let gone = window.recorded.as_ref().and_then(|p| p.spans.iter().copied().find(|&g| !alive(g)));
        if let Some(g) = gone {
            let message = format!("GPU {g}, which this recorded part spans, has left the rotation");
            self.shared.fail_recorded(&mut window, &message);
            return true;
        }
        // A batch's window spread over GPUs runs on this one alone once another it spans
        // has left the rotation (laid out anew on this GPU's lanes).
        if window.recorded.is_none() && window.gpus.iter().any(|&g| !alive(g as usize)) {
            match window.take_blocked(&[]) {
                (_, Some(w)) => window = Box::new(w),
                (_, None) => return true,
            }
        }
        let window = if failed.is_empty() {
            window
        } else {
            let (blocked, rest) = window.take_blocked(&failed);
            let ended = blocked
                .into_iter()
                .map(|(task, lane, cause)| {
                    let failure = crate::dispatch::shared::not_run(&task, cause, self.gpu, lane as usize);
                    (task, Some(failure))
                })
                .collect();
            self.shared.end_tasks(ended);
            match rest {
                Some(w) => Box::new(w),
                None => return true,
            }
        };
        let t0 = Instant::now();
        let dispatched_ns = self.now_ns();
        let by = if relaunch { LaunchedBy::Caller } else { LaunchedBy::Dispatcher };
        let commands = window.recorded.as_ref().map_or_else(|| window.commands(), |p| p.commands) as u64;
        self.stats.commands += commands;
        self.stats.replayed += commands;
        let issued = match &window.recorded {
            Some(part) => self.device.issue_recorded(part),
            None => self.device.issue_window(&window),
        };
        match issued {
            Ok((driver_ns, used)) => {
                let host_ns = t0.elapsed().as_nanos() as u64;
                self.stats.driver_ns += driver_ns;
                self.stats.runtime_ns += host_ns.saturating_sub(driver_ns);
                self.gpu_busy += 1;
                // A recorded run, or a batch's window of a structure, that ran before:
                // `synchronize` may sleep until just before it ends and spin from there,
                // not wake on the batch's end (tens to hundreds of µs late). Issued
                // behind another, it begins when that one ends.
                let foreseen = match &window.recorded {
                    Some(p) => p.expected_ns(),
                    None => self.windows.ran_ns.get(&window.hash).copied(),
                };
                if let Some(ns) = foreseen {
                    let ahead = if self.windows.flights.is_empty() { 0 } else { self.windows.expected_end_ns };
                    self.windows.expected_end_ns = dispatched_ns.max(ahead) + ns;
                    self.shared.windows.expect_end(self.windows.expected_end_ns);
                }
                self.windows.flights.push_back(InFlight { window, dispatched_ns, used, host_ns, by });
                self.publish_flights();
            }
            Err(fault) => {
                let host_ns = t0.elapsed().as_nanos() as u64;
                let flight = InFlight { window, dispatched_ns, used: GraphUse::Built, host_ns, by };
                self.end_window(flight, Err(fault));
            }
        }
        true
    }

    /// Tells the other threads how many windows are in flight here (`WindowQueues::flying`,
    /// which `synchronize`'s spin reads to know where a turn may end one).
    fn publish_flights(&self) {
        self.shared.windows.flying[self.gpu].store(self.windows.flights.len(), Ordering::SeqCst);
    }

    /// Whether the first window in flight completed; ends it if so.
    pub(crate) fn poll_window(&mut self) -> bool {
        if self.windows.flights.is_empty() {
            return false;
        }
        let t0 = Instant::now();
        let Some(result) = self.device.poll_window() else { return false };
        let flight = self.windows.flights.pop_front().expect("checked above");
        self.publish_flights();
        self.gpu_busy -= 1;
        self.end_window(flight, result);
        self.stats.runtime_ns += t0.elapsed().as_nanos() as u64;
        true
    }

    /// Ends every task of a window that ran (or failed as a whole).
    fn end_window(&mut self, flight: InFlight, result: Result<WindowRun, Fault>) {
        let InFlight { mut window, dispatched_ns, used, host_ns, by } = flight;
        let now = self.now_ns();
        let (mut span, gpu_ns, runs, whole) = match result {
            Ok(run) => (run.span, run.gpu_ns, run.tasks, None),
            Err(fault) => (Span { start_ns: dispatched_ns, end_ns: now }, None, Vec::new(), Some(fault)),
        };
        // Issued behind another, it began when that one ended.
        span.start_ns = span.start_ns.max(self.windows.end_ns).min(span.end_ns);
        self.windows.end_ns = span.end_ns;
        if let Some(f) = &whole {
            match f.reach {
                Reach::Gpu | Reach::GpuByTask => self.mark_lost(&f.message),
                // Another GPU the graph spans is lost: it leaves the rotation (its
                // dispatcher is rung to retire); this one goes on.
                Reach::Spanned(gpu) => self.shared.lose_gpu(LostGpu { gpu, at_ns: now, message: f.message.clone() }),
                Reach::Task => {}
            }
            // One lost context may take others with it (driver 580 poisons every
            // context of the process on a sticky error): the other GPUs the graph spans
            // whose contexts are lost leave now, not at their next command.
            if f.loses_a_gpu() {
                let spans = window.recorded.as_ref().map_or_else(|| window.spans(self.gpu), |p| p.spans.clone());
                for g in spans.into_iter().filter(|&g| g != self.gpu) {
                    if self.device.other_gpu_lost(g) {
                        let message = format!("lost with a graph spread over it from GPU {}: {}", self.gpu, f.message);
                        self.shared.lose_gpu(LostGpu { gpu: g, at_ns: now, message });
                    }
                }
            }
        }
        let failed = whole.is_some() || runs.iter().any(|r| !matches!(r, TaskRun::Ran(_)));
        // Its time on the GPU where measured there; else its span, which holds the
        // delay in seeing its end.
        let ran_ns = gpu_ns.unwrap_or(span.end_ns.saturating_sub(span.start_ns));
        if window.recorded.is_none() && !failed {
            if self.windows.ran_ns.len() >= RAN_KEPT {
                self.windows.ran_ns.clear();
            }
            self.windows.ran_ns.insert(window.hash, ran_ns);
        }
        let setup = match used {
            GraphUse::Built => GraphSetup::Built,
            GraphUse::Updated(nodes) => GraphSetup::Updated { nodes },
            GraphUse::Reused => GraphSetup::Reused,
            GraphUse::Simulated => GraphSetup::Simulated,
            GraphUse::Device => GraphSetup::Device,
        };
        let (tasks, commands, depth, gpu_count, way) = match &window.recorded {
            // A recorded part's run is counted in its trial (one that failed as a whole
            // is not), which says why it went that way.
            Some(p) => {
                let way = if whole.is_none() { p.ran(used, ran_ns) } else { p.way_chosen(used) };
                (p.tasks, p.commands, p.depth, p.spans.len().max(1), way)
            }
            None => (window.tasks.len(), window.commands(), window.depth, window.gpu_count(self.gpu), None),
        };
        let record = ReplayedWindow {
            gpu: self.gpu,
            tasks,
            commands,
            lanes: window.lane_count,
            depth,
            gpu_count,
            queued_ns: window.queued_ns,
            launched_ns: span.start_ns,
            launched_by: by,
            end_ns: span.end_ns,
            gpu_ns,
            setup,
            timed_end: window.timed_end,
            host_ns,
            timed: !runs.is_empty(),
            failed,
            way,
        };
        self.shared.batch.lock().outcome.windows.push(record);
        if let Some(part) = window.recorded.take() {
            // A recorded part's run: its tasks stay the part's; failed ones are named
            // (and on the sim, where they are timed, each command recorded).
            let mut failures = Vec::new();
            if whole.is_some() || !runs.is_empty() {
                let w = part.window.lock();
                for (i, task) in w.tasks.iter().enumerate() {
                    let at = (w.gpus.get(i).map_or(self.gpu, |&g| g as usize), w.lanes[i] as usize);
                    failures.extend(self.task_outcome(task, at, dispatched_ns, whole.as_ref(), runs.get(i)));
                }
            }
            self.flush_stats();
            self.shared.end_part_run(part, failures);
            return;
        }
        let tasks = std::mem::take(&mut window.tasks);
        let lanes = std::mem::take(&mut window.lanes);
        let gpus = std::mem::take(&mut window.gpus);
        self.shared.windows.bury(std::iter::once(Spent::Window(window)));
        self.flush_stats();
        let mut ended = Vec::with_capacity(tasks.len());
        for (i, task) in tasks.into_iter().enumerate() {
            // This GPU, or the one it ran on where the window spans GPUs.
            let at = (gpus.get(i).map_or(self.gpu, |&g| g as usize), lanes[i] as usize);
            let failure = self.task_outcome(&task, at, dispatched_ns, whole.as_ref(), runs.get(i));
            ended.push((task, failure));
        }
        self.shared.end_tasks(ended);
    }

    /// How task `task` of a window ended, on `(GPU, lane)` (this GPU's, or another's
    /// where a recorded part spans GPUs): failed with the window (`whole`), failed or
    /// not run as its run says, or ran (its commands recorded where the backend timed
    /// them).
    fn task_outcome(
        &self,
        task: &crate::task::Task,
        (gpu, lane): (usize, usize),
        dispatched_ns: u64,
        whole: Option<&Fault>,
        run: Option<&TaskRun>,
    ) -> Option<TaskFailure> {
        let fail = |command: usize, message: String, driver| TaskFailure {
            task: task.id,
            command,
            stage: task.commands.get(command).map_or(crate::stage::Stage::Kernel, |c| c.stage()),
            gpu,
            stream: lane,
            message,
            driver,
        };
        match (whole, run) {
            (Some(f), _) => Some(fail(0, format!("its replayed window failed: {}", f.message), f.driver.clone())),
            (None, Some(TaskRun::Failed { command, fault })) => {
                Some(fail(*command, fault.message.clone(), fault.driver.clone()))
            }
            (None, Some(TaskRun::NotRun { cause })) => {
                Some(fail(0, format!("not run: it runs after task {cause}, which failed"), None))
            }
            (None, Some(TaskRun::Ran(spans))) => {
                let mut recorder = self.shared.records.gpus[gpu].lock();
                for (c, s) in spans.iter().enumerate() {
                    let cmd = &task.commands[c];
                    recorder.timeline.push(CommandRecord {
                        task: task.id,
                        granularity: task.granularity,
                        command: c as u32,
                        stage: cmd.stage(),
                        gpu: gpu as u16,
                        stream: lane as u16,
                        dispatched_ns,
                        start_ns: s.start_ns,
                        end_ns: s.end_ns,
                        bytes: cmd.bytes(),
                        failed: false,
                    });
                }
                None
            }
            (None, None) => None,
        }
    }

    /// The windows in flight when the dispatcher dies (a panic while they ran): their
    /// tasks fail with `message`. Called after the GPU is quiesced.
    pub(crate) fn drop_windows(&mut self, message: &str) {
        while let Some(flight) = self.windows.flights.pop_front() {
            self.publish_flights();
            self.gpu_busy -= 1;
            let fault = Fault::task(format!("its GPU's dispatcher stopped: {message}"));
            self.end_window(flight, Err(fault));
        }
    }

    /// Windows queued here when this GPU leaves the rotation (it is marked out first):
    /// to another GPU in it (their tasks have not begun), or failed with `message` when
    /// none is left.
    pub(crate) fn hand_over_windows(&mut self, message: &str) {
        let queued: Vec<Box<Window>> = self.shared.windows.queued[self.gpu].lock().drain(..).collect();
        self.shared.windows.count[self.gpu].fetch_sub(queued.len(), Ordering::SeqCst);
        for window in queued {
            let Err(mut window) = self.shared.push_window(self.gpu, window) else { continue };
            if window.recorded.is_some() {
                let message = format!("no GPU left to run the recorded graph; the last one failed: {message}");
                self.shared.fail_recorded(&mut window, &message);
                continue;
            }
            let Window { tasks, lanes, .. } = *window;
            for (task, lane) in tasks.into_iter().zip(lanes) {
                let failure = TaskFailure {
                    task: task.id,
                    command: 0,
                    stage: task.commands.first().map_or(crate::stage::Stage::Kernel, |c| c.stage()),
                    gpu: self.gpu,
                    stream: lane as usize,
                    message: format!("no GPU left to run its replayed window; the last one failed: {message}"),
                    driver: None,
                };
                self.shared.end_task(task, Some(failure));
            }
        }
        self.shared.wake_window_waiters();
    }
}

impl<D: Device> Lender for crate::sync::Mutex<Dispatcher<D>> {
    fn take_turn(&self) -> bool {
        let Some(mut d) = self.try_lock() else { return false };
        if d.lost.is_some() {
            return false;
        }
        // The GPU's context current on this thread for the turn, the thread's own after.
        let Ok(visit) = d.device.visit() else { return false };
        let mut progress = d.poll_window();
        progress |= d.start_window(true);
        drop(visit);
        let left = d.windows_pending() || d.lost.is_some();
        // Rung once its state is let go of, so that it does not wake into a held lock.
        // Without this ring a run launched here while the dispatcher parks is polled by
        // nobody once its waiter stops spinning: the model check
        // `model_check::windows::recorded_runs_by_the_caller_*` deadlocks (its
        // `turn_without_ring` mutation).
        let ring = (progress && left && cfg!(not(chariot_mutation = "turn_without_ring")))
            .then(|| d.shared.signals[d.gpu].clone());
        drop(d);
        if let Some(signal) = ring {
            signal.notify();
        }
        progress
    }
}
