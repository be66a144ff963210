//! The real dispatchers on model GPUs: small configurations, each run under random
//! and PCT schedules (see the parent module for what each schedule must show).

use super::gpu::{commands, engine, Counts, ModelGpu, NoFree};
use super::{pct, random, spawn, task, thread};
use crate::backend::device::PhysBuf;
use crate::backend::host_alloc::HostAlloc;
use crate::dispatch::executioners;
use crate::dispatch::shared::{Batch, Shared};
use crate::dispatch::Dispatcher;
use crate::ids::TaskId;
use crate::memory::{DeviceBufferInner, Graveyard, HostShared};
use crate::report::Outcome;
use crate::signal::Signal;
use crate::stage::queues::StageQueues;
use crate::stage::{OverlapMatrix, Stage, Thresholds, Tuning};
use crate::task::buffer::TaskBuffer;
use crate::task::Order;
use crossbeam_utils::CachePadded;
use shuttle::sync::atomic::AtomicUsize;
use shuttle::sync::{mpsc, Mutex};
use std::collections::VecDeque;
use std::sync::atomic::Ordering::SeqCst;
use std::sync::Arc;

/// A small machine and workload.
#[derive(Clone, Debug)]
pub(super) struct Config {
    gpus: usize,
    slots: usize,
    pub(super) thresholds: Thresholds,
    pub(super) matrix: OverlapMatrix,
    order: Order,
    /// Per task (id = index): granularity and the stages of its commands.
    pub(super) plans: Vec<(u64, Vec<Stage>)>,
    /// Per task: the tasks it runs after (earlier ones), as `TaskBuilder::after` names them.
    pub(super) after: Vec<Vec<usize>>,
    /// The first `spinners` dispatchers spin before parking (as on CUDA); the rest park.
    pub(super) spinners: usize,
    /// The last `pollers` GPUs show completions only to polling, as on CUDA: their
    /// engines do not ring, and their dispatchers spin while commands are in flight.
    pollers: usize,
    /// The GPUs whose model fails every replay window issued there.
    failing_windows: Vec<usize>,
    /// Whether a window spread over GPUs fails, with a GPU it spans lost under it.
    pub(super) lose_spanned: bool,
}

impl Config {
    /// Whether `gpu`'s completions show only to polling.
    pub(super) fn polls(&self, gpu: usize) -> bool {
        gpu + self.pollers >= self.gpus
    }

    /// Two GPUs of one slot each, no task of their own: the replay windows' model
    /// (`super::windows`) hands them windows; `failing` fails every window issued there.
    #[cfg(feature = "replay")]
    pub(super) fn windows(failing: Vec<usize>) -> Config {
        Config {
            gpus: 2,
            slots: 1,
            thresholds: Thresholds { local: [1, 1, 1, 1], global: [2, 2, 2, 2] },
            matrix: OverlapMatrix::all(),
            order: Order::Fcfs,
            plans: Vec::new(),
            after: Vec::new(),
            spinners: 0,
            pollers: 0,
            failing_windows: failing,
            lose_spanned: false,
        }
    }

    /// As [`Config::windows`], with GPUs as CUDA's: completions shown only to polling,
    /// dispatchers that spin before they park.
    pub(super) fn polled_windows() -> Config {
        Config { spinners: 2, pollers: 2, ..Config::windows(Vec::new()) }
    }

    /// The runtime's configuration for this machine: the caps as given, no adaptation.
    fn runtime(&self) -> crate::config::Config {
        let tuning = Tuning {
            streams: self.slots,
            stage_depth: 1,
            thresholds: self.thresholds,
            copy_limit: usize::MAX,
            kernel_fills: None,
            adapt: false,
            adaptive: [false; Stage::K],
            choices: Vec::new(),
        };
        crate::config::Config {
            streams: self.slots,
            order: self.order,
            thresholds: self.thresholds,
            tuning,
            matrices: vec![self.matrix; self.gpus],
            buses: 1,
            pin: false,
            pin_skip: 0,
            device_timing: false,
            nvtx: false,
            execution: crate::Execution::Host,
        }
    }
}

/// A machine of the model running: the structures the dispatchers share, the counts,
/// and the threads (engines, executioners, the real dispatchers).
pub(super) struct Machine {
    pub(super) shared: Arc<Shared>,
    pub(super) counts: Arc<Counts>,
    threads: Vec<thread::JoinHandle<()>>,
}

/// Starts engines, executioners and the real dispatchers for `config`.
pub(super) fn start(config: &Config) -> Machine {
    let runtime = config.runtime();
    let (gpus, n) = (config.gpus, config.plans.len());
    let counts = Arc::new(Counts {
        config: config.clone(),
        global: Default::default(),
        local: (0..gpus).map(|_| Default::default()).collect(),
        ran: (0..n).map(|_| AtomicUsize::new(0)).collect(),
        finished: (0..n).map(|_| AtomicUsize::new(0)).collect(),
    });
    let shared = Arc::new(Shared {
        buffer: TaskBuffer::new(config.order),
        queues: StageQueues::new(config.thresholds.global),
        signals: (0..gpus).map(|_| Arc::new(Signal::default())).collect(),
        batch: CachePadded::new(crate::sync::Mutex::new(Batch::default())),
        batch_done: crate::sync::Condvar::new(),
        stop: crate::sync::AtomicBool::new(false),
        live: crate::sync::AtomicUsize::new(gpus),
        alive: (0..gpus).map(|_| crate::sync::AtomicBool::new(true)).collect(),
        records: crate::dispatch::recorders::Recorders::new(gpus, None),
        resident: Default::default(),
        windows: crate::seam::WindowQueues::new(gpus),
        claims: crate::seam::ClaimGate::new(),
        woken_for_batch: crate::sync::AtomicBool::new(false),
        left: crate::sync::AtomicUsize::new(0),
        epoch: std::time::Instant::now(),
    });
    let mut threads = Vec::new();
    let (cpu_jobs, cpu_rx) = crate::sync::channel::unbounded();
    for e in 0..config.thresholds.global[Stage::Cpu.index()].min(gpus * config.slots) {
        let rx = cpu_rx.clone();
        threads.push(spawn(format!("executioner {e}"), move || {
            while let Ok(job) = rx.recv() {
                executioners::run(job);
            }
        }));
    }
    drop(cpu_rx);
    for gpu in 0..gpus {
        let (tx, rx) = mpsc::channel();
        let posted: Arc<[Mutex<bool>]> = (0..config.slots).map(|_| Mutex::new(false)).collect();
        let windows: Arc<Mutex<VecDeque<bool>>> = Default::default();
        let (c, p, w) = (counts.clone(), posted.clone(), windows.clone());
        let ring = (!config.polls(gpu)).then(|| shared.signals[gpu].clone());
        threads.push(spawn(format!("engine {gpu}"), move || engine(c, gpu, ring, rx, p, w)));
        let stages = vec![None; config.slots];
        let fail_windows = config.failing_windows.contains(&gpu);
        let spans = VecDeque::new();
        let lose_spanned = config.lose_spanned;
        let device = ModelGpu {
            gpu,
            counts: counts.clone(),
            jobs: tx,
            posted,
            stages,
            windows,
            fail_windows,
            lose_spanned,
            spans,
        };
        let dispatcher = Dispatcher::new(gpu, device, &runtime, shared.clone(), cpu_jobs.clone(), None);
        let dispatcher = Arc::new(crate::sync::Mutex::new(dispatcher));
        shared.windows.lend(gpu, &dispatcher);
        threads.push(spawn(format!("dispatcher {gpu}"), move || Dispatcher::run(dispatcher)));
    }
    drop(cpu_jobs);
    Machine { shared, counts, threads }
}

impl Machine {
    /// Waits for the batch as `synchronize` does, then shuts down as the scheduler does
    /// and joins every thread; returns what the batch's report is made from.
    pub(super) fn finish(self) -> Outcome {
        let Machine { shared, threads, .. } = self;
        let outcome = shared.close_batch(None).expect("no deadline: the batch ends");
        shared.stop.store(true, SeqCst);
        shared.wake_all();
        for t in threads {
            t.join().expect("model threads do not panic");
        }
        outcome
    }
}

/// Submits every task of `config`, their copies through `dev`, as `Scheduler::submit`
/// does once the claims are made: `Shared::admit` counts the task in and adds it to the
/// graph; a ready task goes to Q and rings every dispatcher, a waiting one goes when its
/// last predecessor ends.
fn submit_all(config: &Config, shared: &Shared, counts: &Arc<Counts>, dev: &Arc<DeviceBufferInner>) {
    let host = HostShared::new(HostAlloc::heap(1).expect("one byte of host memory"));
    for (id, &(granularity, _)) in config.plans.iter().enumerate() {
        let mut t = task(id, granularity);
        t.commands = commands(counts, id, &host, dev);
        let after: Vec<TaskId> = config.after.get(id).into_iter().flatten().map(|&p| TaskId(p as u64)).collect();
        shared.admit(t, &after);
    }
}

/// One schedule: start the machine, submit every task while it runs, wait for the
/// batch, stop, and check what ran.
fn pipeline(config: &Config) {
    let machine = start(config);
    let (shared, counts) = (machine.shared.clone(), machine.counts.clone());
    let dev = Arc::new(DeviceBufferInner::new(0, config.slots, 4, Vec::new(), Graveyard::new(Arc::new(NoFree))));
    submit_all(config, &shared, &counts, &dev);
    let outcome = machine.finish();
    assert!(outcome.failures.is_empty() && outcome.lost_gpus.is_empty(), "tasks failed: {outcome:?}");
    let (records, _) = shared.records.take_batch();
    for (id, (_, stages)) in config.plans.iter().enumerate() {
        assert_eq!(counts.ran[id].load(SeqCst), stages.len(), "commands of task {id} run");
        let mine: Vec<_> = records.iter().filter(|r| r.task == TaskId(id as u64)).collect();
        let order: Vec<u32> = mine.iter().map(|r| r.command).collect();
        assert_eq!(order, (0..stages.len() as u32).collect::<Vec<_>>(), "task {id}'s commands, in order");
        let place = (mine[0].gpu, mine[0].stream);
        assert!(mine.iter().all(|r| (r.gpu, r.stream) == place), "task {id} popped once, ran on one slot");
    }
    for stage in Stage::ALL {
        assert_eq!(shared.queues.running(stage), 0, "C_{stage}.global at the end");
        assert_eq!(counts.global[stage.index()].load(SeqCst), 0);
        assert_eq!(shared.queues.requests(stage), (Vec::new(), 0), "P_{stage} at the end");
    }
    assert!(shared.buffer.pop().is_none(), "Q empty at the end");
}

const D: Stage = Stage::Download;
const K: Stage = Stage::Kernel;
const R: Stage = Stage::Readback;
const C: Stage = Stage::Cpu;

/// Two GPUs, one slot each, one bus and one kernel slot for both (G = 1): every stage
/// is contended through P_k, and a release must wake the other GPU.
fn shared_bus() -> Config {
    Config {
        gpus: 2,
        slots: 1,
        thresholds: Thresholds { local: [1, 1, 1, 1], global: [2, 1, 1, 1] },
        matrix: OverlapMatrix::all(),
        order: Order::Fcfs,
        plans: vec![(4, vec![D, K, R]), (4, vec![D, K, R]), (4, vec![D, K, R])],
        after: Vec::new(),
        spinners: 0,
        pollers: 0,
        failing_windows: Vec::new(),
        lose_spanned: false,
    }
}

/// Three GPUs with two slots and one copy engine each (a download and a readback never
/// overlap on a GPU): a GPU waiting in P_readback withdraws when it starts a download,
/// and must wake the GPU behind it. Three GPUs, because with L_R = G_R = 1 the GPU
/// that holds the readback slot cannot queue for it: with two, P_readback is two deep
/// only just after a release, and the random schedules rarely hit the withdrawal
/// then (they missed a deleted wake-up for one seed in four). GPU 0 spins before
/// parking.
fn one_copy_engine() -> Config {
    Config {
        gpus: 3,
        slots: 2,
        thresholds: Thresholds { local: [2, 1, 1, 1], global: [2, 1, 2, 1] },
        matrix: OverlapMatrix::from_hardware(1, true),
        order: Order::LargestFirst,
        plans: vec![(1, vec![D, R]), (3, vec![D, K, R]), (2, vec![C, D, R]), (3, vec![R, D])],
        after: Vec::new(),
        spinners: 1,
        pollers: 0,
        failing_windows: Vec::new(),
        lose_spanned: false,
    }
}

/// Three GPUs, one slot each, G = 1 everywhere: P_k three deep, so a grant must name
/// and wake the next head. GPU 2 polls, as on CUDA.
fn three_gpus() -> Config {
    Config {
        gpus: 3,
        slots: 1,
        thresholds: Thresholds { local: [1, 1, 1, 1], global: [1, 1, 1, 1] },
        matrix: OverlapMatrix::all(),
        order: Order::SmallestFirst,
        plans: vec![(2, vec![D, R]), (1, vec![D, K, R]), (2, vec![K, R])],
        after: Vec::new(),
        spinners: 0,
        pollers: 1,
        failing_windows: Vec::new(),
        lose_spanned: false,
    }
}

/// Stage depth 2 on two GPUs with two slots: L = G = 2 for the GPU stages.
fn depth_two() -> Config {
    Config {
        gpus: 2,
        slots: 2,
        thresholds: Thresholds { local: [1, 1, 1, 1], global: [1, 1, 1, 1] }.with_depth(2),
        matrix: OverlapMatrix::all(),
        order: Order::Fcfs,
        plans: vec![(1, vec![D, K, R]), (1, vec![D, R]), (1, vec![K, R]), (1, vec![D, K])],
        after: Vec::new(),
        spinners: 2,
        pollers: 0,
        failing_windows: Vec::new(),
        lose_spanned: false,
    }
}

/// A task graph on two GPUs with two slots: a diamond after task 0 (tasks 1
/// and 2, joined by 3), task 4 after 1, and task 5 free. Each task's first command
/// starts only once every command of each task it runs after has ended (checked in
/// `Counts::enter`); waiting tasks go to Q from `Shared::end_task` on the dispatchers'
/// threads, racing the submits, and a lost wake-up there is a deadlock.
fn graph() -> Config {
    Config {
        gpus: 2,
        slots: 2,
        thresholds: Thresholds { local: [2, 1, 1, 1], global: [2, 2, 2, 2] },
        matrix: OverlapMatrix::all(),
        order: Order::LargestFirst,
        plans: vec![(1, vec![D, R]), (2, vec![C]), (3, vec![K, R]), (1, vec![D, C]), (2, vec![R]), (3, vec![D, K])],
        after: vec![vec![], vec![0], vec![0], vec![1, 2], vec![1], vec![]],
        spinners: 1,
        pollers: 0,
        failing_windows: Vec::new(),
        lose_spanned: false,
    }
}

#[test]
fn graph_random() {
    let config = graph();
    random(2000, move || pipeline(&config));
}

#[test]
fn graph_pct() {
    let config = graph();
    pct(1000, 3, move || pipeline(&config));
}

#[test]
fn shared_bus_random() {
    let config = shared_bus();
    random(2000, move || pipeline(&config));
}

#[test]
fn shared_bus_pct() {
    let config = shared_bus();
    pct(1000, 3, move || pipeline(&config));
}

#[test]
fn one_copy_engine_random() {
    let config = one_copy_engine();
    random(2000, move || pipeline(&config));
}

#[test]
fn one_copy_engine_pct() {
    let config = one_copy_engine();
    pct(1000, 3, move || pipeline(&config));
}

#[test]
fn three_gpus_random() {
    let config = three_gpus();
    random(2000, move || pipeline(&config));
}

#[test]
fn depth_two_random() {
    let config = depth_two();
    random(1000, move || pipeline(&config));
}

/// Two GPUs, one slot each; two tasks of a download and a readback (they name the
/// `frees` check's buffer), the second after the first.
fn two_copies() -> Config {
    Config {
        gpus: 2,
        slots: 1,
        thresholds: Thresholds { local: [1, 1, 1, 1], global: [2, 2, 2, 2] },
        matrix: OverlapMatrix::all(),
        order: Order::Fcfs,
        plans: vec![(1, vec![D, R]), (1, vec![D, R])],
        after: vec![vec![], vec![0]],
        spinners: 1,
        pollers: 0,
        failing_windows: Vec::new(),
        lose_spanned: false,
    }
}

/// The model's two device buffers: one the batch's tasks name, one no task names.
const NAMED: u64 = 1;
const UNNAMED: u64 = 2;

/// Model device memory that records each free, checking at the free of [`NAMED`] that
/// every command of every task (all name it) has ended.
struct Frees {
    counts: Arc<Counts>,
    freed: Mutex<Vec<u64>>,
}

impl std::fmt::Debug for Frees {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Frees").field("freed", &self.freed).finish()
    }
}

impl crate::memory::FreeDevice for Frees {
    fn free_device(&self, bufs: Vec<PhysBuf>) {
        for b in bufs {
            let PhysBuf::Cuda { ptr, .. } = b else { continue };
            if ptr == NAMED {
                for (id, (_, stages)) in self.counts.config.plans.iter().enumerate() {
                    let ended = self.counts.finished[id].load(SeqCst);
                    assert_eq!(ended, stages.len(), "the named buffer freed before task {id}'s commands ended");
                }
            }
            self.freed.lock().expect("no model thread panics holding it").push(ptr);
        }
    }
}

/// Device memory freed beside the real dispatchers. The batch's tasks name buffer
/// [`NAMED`], whose handle the main thread drops once it has submitted them; a user
/// thread drops [`UNNAMED`], which no task names, while the batch runs. The graveyard
/// watches the real batch (`Shared`'s `Quiet`), so each drop frees at once where no task
/// is in flight, else buries for the batch's end (`free_buried`, as `synchronize` does).
/// Whatever the interleaving: each buffer is freed exactly once, [`NAMED`] only after
/// every command naming it ended, and nothing deadlocks (a task's last reference goes
/// on a dispatcher's thread, whose check only tries the batch's lock).
fn frees(config: &Config) {
    let machine = start(config);
    let (shared, counts) = (machine.shared.clone(), machine.counts.clone());
    let memory = Arc::new(Frees { counts: counts.clone(), freed: Mutex::new(Vec::new()) });
    let graveyard = Graveyard::new(memory.clone());
    graveyard.watch(Arc::downgrade(&shared) as std::sync::Weak<dyn crate::memory::Quiet>);
    let buffer =
        |ptr| Arc::new(DeviceBufferInner::new(0, 1, 1, vec![PhysBuf::Cuda { gpu: 0, ptr }], graveyard.clone()));
    let (named, unnamed) = (buffer(NAMED), buffer(UNNAMED));
    let user = spawn("user".into(), move || drop(unnamed));
    submit_all(config, &shared, &counts, &named);
    drop(named);
    user.join().expect("the user thread does not panic");
    let outcome = machine.finish();
    assert!(outcome.failures.is_empty() && outcome.lost_gpus.is_empty(), "tasks failed: {outcome:?}");
    graveyard.free_buried();
    let mut freed = memory.freed.lock().expect("no model thread panicked").clone();
    freed.sort_unstable();
    assert_eq!(freed, vec![NAMED, UNNAMED], "each buffer freed once");
}

#[test]
fn frees_beside_a_running_batch_random() {
    let config = two_copies();
    random(2000, move || frees(&config));
}

#[test]
fn frees_beside_a_running_batch_pct() {
    let config = two_copies();
    pct(1000, 3, move || frees(&config));
}
