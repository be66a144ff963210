//! The sim backend: simulated GPUs for machines without CUDA (StarPU's SimGrid mode is
//! the precedent). The same dispatcher drives it, with the same device operations as
//! CUDA (`backend::op`): a command's operations go to one engine as one job.
//!
//! Each simulated GPU has engine threads like the hardware's: one copy engine (or one
//! per direction when `copy_engines` ≥ 2) and one compute engine, each taking its
//! commands in issue order. An engine does the command's real work (copy the bytes,
//! run the kernel's CPU twin), holds it for the modeled time (links and buses in
//! `link.rs`, latencies and kernel cost in the profile), then posts the completion for
//! the dispatcher's poll and wakes it. Modeled times saturate (`clock.rs`): no value a
//! user gives can panic an engine; a command whose modeled end is past what the clock
//! can count fails its task.

mod clock;
mod compute;
mod engine;
mod failure;
mod faults;
mod link;
mod nvrtc_check;
mod profile;

pub use faults::SimFaults;
pub use profile::SimProfile;

use super::device::{GpuInfo, PhysBuf, SimMemory};
use super::op::{Direction, Op, Tag};
#[cfg(feature = "replay")]
use super::op::{GraphOp, GraphSource};
use super::{Fault, Reach, Span, WindowRun};
use crate::config::Gpus;
use crate::signal::Signal;
use compute::Sms;
use crossbeam_channel::Sender;
#[cfg(feature = "replay")]
use engine::WindowJob;
use engine::{lost_fault, Engine, EngineKind, Job, SimOp, Work};
use link::Links;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant;

/// Compiles `kernel`'s CUDA C with NVRTC where libnvrtc loads, as registration on a GPU
/// would: a compile error, a missing entry point or parameters other than those declared
/// fail here as they would there (`nvrtc_check.rs`).
pub(crate) fn check_kernel(kernel: super::device::KernelCode<'_>) -> crate::Result<()> {
    nvrtc_check::check(kernel).map(drop)
}

/// Per stream slot: the completion an engine posted and the dispatcher has not polled.
type Completions = Arc<[Mutex<Option<Result<Span, Fault>>>]>;

/// One simulated GPU's replay windows: they run one after another in the order issued
/// (each takes its turn, whichever compute thread took it), the tasks of the last ones
/// that failed (a task after one of those in a window issued behind it does not run),
/// and those the dispatcher has not polled, in order.
#[derive(Default)]
pub(super) struct Windows {
    pub(super) state: Mutex<WindowsState>,
    pub(super) turn_taken: parking_lot::Condvar,
}

#[derive(Default)]
pub(super) struct WindowsState {
    /// The turn of the next window to run.
    pub(super) next: u64,
    /// The last windows run (their numbers, `Window::seq`) and their tasks that did not
    /// run well: a window is issued behind one in flight at most, so two are enough.
    pub(super) failed: std::collections::VecDeque<(u64, Vec<crate::TaskId>)>,
    pub(super) done: std::collections::VecDeque<Result<WindowRun, Fault>>,
}

type WindowDone = Arc<Windows>;

/// What a machine's injected faults have done so far, shared by its GPUs' handles and
/// engines.
#[derive(Debug)]
pub(super) struct Fired {
    /// Per GPU: whether it is lost (an injected death, crash or loss). A window spread
    /// over GPUs runs nodes of others on its engine, and a loss there fails it.
    pub(super) lost: Box<[AtomicBool]>,
    /// Per `faults.losing` entry: whether it has fired (it fires once, on whichever GPU
    /// runs the command first, so that the moved task can complete elsewhere).
    pub(super) lost_once: Box<[AtomicBool]>,
}

/// All simulated GPUs.
#[derive(Debug)]
pub(crate) struct Machine {
    profile: SimProfile,
    gpus: Vec<GpuInfo>,
    links: Arc<Links>,
    in_use: Vec<Arc<AtomicU64>>,
    /// What the injected faults have done so far.
    fired: Arc<Fired>,
    /// Errors met while freeing (only `SimFaults::fail_frees` makes any).
    cleanup: Arc<crate::report::Cleanup>,
}

impl Machine {
    pub(crate) fn open(selection: &Gpus, profile: SimProfile) -> crate::Result<Self> {
        profile.validate().and_then(|()| profile.faults.validate()).map_err(|m| crate::Error::InvalidConfig {
            name: "backend",
            value: format!("SimProfile {}", profile.name),
            allowed: m.to_string(),
        })?;
        let ordinals = selection.resolve(profile.gpus, "sim")?;
        let gpus = ordinals
            .iter()
            .map(|&ordinal| GpuInfo {
                name: format!("{} #{ordinal}", profile.name),
                ordinal,
                copy_engines: profile.copy_engines,
                concurrent_kernels: profile.concurrent_kernels,
                arch: "sim".into(),
                memory_bytes: profile.memory_bytes,
                local_cpus: None,
                sm_count: profile.sm_count,
                max_threads_per_sm: 2048,
                max_blocks_per_sm: 32,
                shared_bytes_per_sm: 228 << 10,
            })
            .collect::<Vec<_>>();
        let in_use = gpus.iter().map(|_| Arc::new(AtomicU64::new(0))).collect();
        let fired = Arc::new(Fired {
            lost: gpus.iter().map(|_| AtomicBool::new(false)).collect(),
            lost_once: profile.faults.losing.iter().map(|_| AtomicBool::new(false)).collect(),
        });
        let links = Arc::new(Links::new(profile.clone()));
        Ok(Machine { links, profile, gpus, in_use, fired, cleanup: Default::default() })
    }

    /// Frees simulated buffers: their memory returns as they drop. Under
    /// `SimFaults::fail_frees` each free also reports an error, as a failing
    /// `cuMemFree` would (the memory is returned all the same).
    pub(crate) fn free_device(&self, bufs: Vec<PhysBuf>) {
        for _ in bufs {
            if self.profile.faults.fail_frees {
                self.cleanup.push(crate::report::DriverError {
                    call: "cuMemFree (simulated)".into(),
                    code: 1,
                    name: "CUDA_ERROR_INVALID_VALUE".into(),
                    text: "injected by SimFaults::fail_frees".into(),
                });
            }
        }
    }

    pub(crate) fn cleanup(&self) -> &Arc<crate::report::Cleanup> {
        &self.cleanup
    }

    pub(crate) fn gpus(&self) -> &[GpuInfo] {
        &self.gpus
    }

    pub(crate) fn alloc_device(&self, gpu: usize, bytes: usize) -> crate::Result<PhysBuf> {
        let counter = &self.in_use[gpu];
        let cap = self.profile.memory_bytes;
        let taken = counter.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |used| {
            used.checked_add(bytes as u64).filter(|&t| t <= cap)
        });
        if taken.is_err() {
            return Err(crate::Error::OutOfMemory {
                what: crate::error::MemoryKind::Device { gpu },
                bytes,
                message: format!("{} of {cap} bytes in use", counter.load(Ordering::SeqCst)),
            });
        }
        // The simulated GPU's memory is host memory: the host may refuse it even where the
        // profile's GPU has room (`vec!` would abort the process).
        let words = match super::host_alloc::zeroed_words(bytes.div_ceil(16)) {
            Ok(words) => words,
            Err(message) => {
                counter.fetch_sub(bytes as u64, Ordering::SeqCst);
                return Err(crate::Error::OutOfMemory {
                    what: crate::error::MemoryKind::Device { gpu },
                    bytes,
                    message: format!("a simulated GPU's memory is host memory, and {message}"),
                });
            }
        };
        Ok(PhysBuf::Sim(Arc::new(SimMemory::new(words, bytes, counter.clone()))))
    }

    /// The rates the model moves bytes at, in bytes per ns of real time: one GPU's link
    /// alone, and the host with `gpus` GPUs copying at once (each on its own link, or
    /// GPU g on bus g mod B). No copy of the model is faster (latencies and slowed GPUs
    /// only add time), so a bound taking them holds. `None` without modeled time.
    pub(crate) fn rates(&self, gpus: usize) -> Option<(crate::report::LinkRates, crate::report::LinkRates)> {
        let p = &self.profile;
        if p.time_scale == 0.0 {
            return None;
        }
        let per_ns = |bytes_per_s: f64| bytes_per_s / p.time_scale / 1e9;
        let link = crate::report::LinkRates {
            up: per_ns(p.h2d_bytes_per_s),
            down: per_ns(p.d2h_bytes_per_s),
            both: per_ns(p.duplex_bytes_per_s),
        };
        let host = match p.buses {
            None => link.times(gpus as f64),
            Some(b) => {
                let k = b.min(gpus).max(1) as f64;
                crate::report::LinkRates {
                    up: k * per_ns(p.bus_bytes_per_s).min(link.up * gpus as f64 / k),
                    down: k * per_ns(p.bus_bytes_per_s).min(link.down * gpus as f64 / k),
                    both: k * per_ns(p.bus_duplex_bytes_per_s),
                }
            }
        };
        Some((link, host))
    }

    pub(crate) fn memory_in_use(&self, gpu: usize) -> u64 {
        self.in_use[gpu].load(Ordering::SeqCst)
    }

    /// Starts GPU `gpu`'s engine threads.
    ///
    /// # Errors
    /// [`Error::Thread`](crate::Error::Thread) where the OS refuses a thread; the
    /// threads already started are stopped and joined first.
    pub(crate) fn open_gpu(&self, gpu: usize, streams: usize, epoch: Instant, wake: Arc<Signal>) -> crate::Result<Gpu> {
        let done: Completions = (0..streams).map(|_| Mutex::new(None)).collect();
        let kinds: &[EngineKind] = if self.profile.copy_engines >= 2 {
            &[EngineKind::Up, EngineKind::Down, EngineKind::Compute]
        } else {
            &[EngineKind::Copy, EngineKind::Compute]
        };
        let window_done: WindowDone = Arc::new(Windows::default());
        // Built first, so that a failed spawn drops it: its drop ends and joins the
        // threads started so far (the sender of the kind being started drops before it).
        let mut g = Gpu {
            gpu,
            spin: self.profile.spin,
            senders: Vec::new(),
            threads: Vec::new(),
            done: done.clone(),
            window_done: window_done.clone(),
            fired: self.fired.clone(),
            launched: 0,
            windows_issued: 0,
            execute: self.profile.execute,
            pending: None,
        };
        // A death past what the clock can count never comes.
        let death =
            self.profile.faults.death(gpu).and_then(|at| epoch.checked_add(clock::scale(at, self.profile.time_scale)));
        let slow = self.profile.faults.slowdown(gpu);
        let sms = Arc::new(Sms::new());
        for &kind in kinds {
            let (tx, rx) = crossbeam_channel::unbounded::<Job>();
            // Kernels of different streams run side by side where the GPU allows: a
            // compute thread per stream slot, sharing the SMs' fluid model.
            let workers = if kind == EngineKind::Compute && self.profile.concurrent_kernels { streams } else { 1 };
            for w in 0..workers {
                let engine = Engine {
                    gpu,
                    profile: self.profile.clone(),
                    links: self.links.clone(),
                    sms: sms.clone(),
                    done: done.clone(),
                    window_done: window_done.clone(),
                    wake: wake.clone(),
                    epoch,
                    death,
                    slow,
                    fired: self.fired.clone(),
                };
                let rx = rx.clone();
                let name = format!("chariot-sim{gpu}-{kind:?}{w}");
                let t = std::thread::Builder::new()
                    .name(name.clone())
                    .spawn(move || engine.run(rx))
                    .map_err(|e| crate::Error::Thread { name, message: e.to_string() })?;
                g.threads.push(t);
            }
            g.senders.push((kind, tx));
        }
        Ok(g)
    }
}

/// One dispatcher's simulated GPU.
pub(crate) struct Gpu {
    gpu: usize,
    /// The profile's `spin`: the dispatcher spins before parking, too.
    pub(crate) spin: bool,
    senders: Vec<(EngineKind, Sender<Job>)>,
    threads: Vec<JoinHandle<()>>,
    done: Completions,
    window_done: WindowDone,
    /// The machine's faults fired so far (`Fired::lost`: every command of a lost GPU
    /// fails).
    fired: Arc<Fired>,
    /// Kernels launched so far (their order on the SMs).
    launched: u64,
    /// Replay windows issued so far (each one's turn).
    windows_issued: u64,
    /// The profile's `execute`: whether operations move real bytes.
    execute: bool,
    /// The command begun: its slot, tag and the work its operations make.
    pending: Option<(usize, Tag, Option<Work>)>,
}

impl Gpu {
    /// The GPU's index in the machine's list.
    pub(crate) fn index(&self) -> usize {
        self.gpu
    }

    /// Whether GPU `gpu` of the machine is lost (a fault fired there).
    #[cfg(feature = "replay")]
    pub(crate) fn gpu_lost(&self, gpu: usize) -> bool {
        self.fired.lost.get(gpu).is_some_and(|l| l.load(Ordering::SeqCst))
    }

    /// Begins a command on slot `slot`: its operations follow ([`Gpu::op`]) and go to
    /// an engine together at [`Gpu::end`], which runs them as one command.
    pub(crate) fn begin(&mut self, slot: usize, tag: Tag) -> Result<(), Fault> {
        if self.fired.lost[self.gpu].load(Ordering::SeqCst) {
            return Err(lost_fault(self.gpu, Reach::Gpu));
        }
        self.pending = Some((slot, tag, None));
        Ok(())
    }

    /// Adds one operation to the command begun.
    pub(crate) fn op(&mut self, op: Op<'_>) -> Result<(), Fault> {
        self.op_on(self.gpu, op)
    }

    /// As [`Gpu::op`], a launch's twin run on GPU `gpu`'s memory (this GPU's, or
    /// another's for a node of a window that spans GPUs).
    fn op_on(&mut self, gpu: usize, op: Op<'_>) -> Result<(), Fault> {
        let (slot, _, work) = self.pending.as_mut().ok_or("an operation outside a command")?;
        let (slot, execute) = (*slot, self.execute);
        let one = match op {
            Op::Copy(c) => {
                let dev = c.dev.sim().ok_or("device buffer is not simulated memory")?;
                let shape = [c.host_offset, c.host_pitch, c.dev_offset, c.dev_pitch, c.width, c.height];
                SimOp::Copy { dir: c.dir, host: c.host.share(), dev, shape }
            }
            Op::Upload(u) => SimOp::Upload {
                dst: u.dst.sim().ok_or("resident copy is not simulated memory")?,
                at: u.dst_offset,
                len: u.src.len(),
                // The bytes are read now, while the lowering holds them.
                bytes: execute.then(|| u.src.to_vec()),
            },
            Op::Peer(p) => SimOp::Peer {
                src: p.src.sim().ok_or("not simulated memory")?,
                src_at: p.src_offset,
                dst: p.dst.sim().ok_or("resident copy is not simulated memory")?,
                dst_at: p.dst_offset,
                len: p.bytes,
            },
            Op::Fill(f) => SimOp::Fill {
                dst: f.dst.sim().ok_or("resident copy is not simulated memory")?,
                at: f.offset,
                len: f.bytes,
            },
            Op::Launch(l) => {
                self.launched += 1;
                let twin = l.twin.ok_or("a launch without its CPU twin bound reached the sim")?.clone();
                let job = Work::Launch { twin, gpu, slot, seq: self.launched, share: l.share };
                return Self::set(work, job);
            }
            Op::Host(f) => return Self::set(work, Work::Callback(f, slot)),
        };
        match work {
            None => *work = Some(Work::Copies(one, Vec::new())),
            Some(Work::Copies(_, more)) => more.push(one),
            Some(_) => return Err("a copy in a command of another kind".into()),
        }
        Ok(())
    }

    fn set(work: &mut Option<Work>, job: Work) -> Result<(), Fault> {
        match work {
            None => {
                *work = Some(job);
                Ok(())
            }
            Some(_) => Err("a launch or host function is a command of its own".into()),
        }
    }

    /// Hands the command begun to its engine.
    pub(crate) fn end(&mut self) -> Result<(), Fault> {
        let (stream, tag, work) = self.pending.take().ok_or("no command begun")?;
        let work = work.ok_or("a command without operations")?;
        let kind = self.engine_of(&work);
        let tx = &self.senders.iter().find(|(k, _)| *k == kind).expect("engine exists").1;
        tx.send(Job { stream, tag, work })
            .map_err(|_| Fault::task(failure::SimFailure::EngineStopped { gpu: self.gpu }))
    }

    /// The command begun failed before its end: nothing was sent.
    pub(crate) fn abandon(&mut self) {
        self.pending = None;
    }

    /// The engine that runs `work`: copies on a copy engine (by direction where there
    /// are two), launches and host functions on the compute engine.
    fn engine_of(&self, work: &Work) -> EngineKind {
        match work {
            Work::Copies(first, _) => match (self.senders.len(), first) {
                (2, _) => EngineKind::Copy,
                (_, SimOp::Copy { dir: Direction::Readback, .. }) => EngineKind::Down,
                _ => EngineKind::Up,
            },
            _ => EngineKind::Compute,
        }
    }

    pub(crate) fn poll(&mut self, stream: usize) -> Option<Result<Span, Fault>> {
        self.done[stream].lock().take()
    }

    /// Hands graph `g` (a window) to a compute engine, which runs it as one graph
    /// launch and then its nodes one after another in order (each on its slot's
    /// memory), at the profile's graph latencies.
    #[cfg(feature = "replay")]
    pub(crate) fn issue_window<N: GraphSource>(&mut self, g: &mut GraphOp<'_, N>) -> Result<(), Fault> {
        if self.fired.lost[self.gpu].load(Ordering::SeqCst) {
            return Err(lost_fault(self.gpu, Reach::Gpu));
        }
        let mut items = Vec::with_capacity(g.source.node_count());
        // The window's own engine runs them, whichever engine would take them alone (a
        // node of another GPU too, on that GPU's memory: the sim times a window's nodes
        // one after another wherever they run).
        g.each_node(false, |node| {
            self.begin(node.slot, node.tag)?;
            let added = self.op_on(node.gpu, node.op);
            let (_, _, work) = self.pending.take().ok_or("no command begun")?;
            added?;
            items.push((node.gpu, node.tag, work.ok_or("a command without operations")?));
            Ok::<(), Fault>(())
        })?;
        let groups = g.groups().len();
        let (mut counts, mut preds, mut ids) =
            (Vec::with_capacity(groups), Vec::with_capacity(groups), Vec::with_capacity(groups));
        for gr in g.groups() {
            counts.push(gr.nodes);
            // Failures pass along dependencies only, not along a lane's order.
            preds.push(gr.dependencies().collect());
            ids.push(gr.id);
        }
        let mut external = vec![Vec::new(); groups];
        for &(t, p, seq) in g.external {
            external[t as usize].push((p, seq));
        }
        let tag = Tag { task: ids.first().copied().unwrap_or(crate::TaskId(0)), command: 0 };
        let job = WindowJob { items, counts, preds, ids, external, seq: g.seq, turn: self.windows_issued };
        let tx = &self.senders.iter().find(|(k, _)| *k == EngineKind::Compute).expect("engine exists").1;
        tx.send(Job { stream: 0, tag, work: Work::Window(Box::new(job)) })
            .map_err(|_| Fault::task(failure::SimFailure::EngineStopped { gpu: self.gpu }))?;
        // Counted once sent: a window never sent is no turn to wait for.
        self.windows_issued += 1;
        Ok(())
    }

    /// The first window issued, if an engine completed it.
    pub(crate) fn poll_window(&mut self) -> Option<Result<WindowRun, Fault>> {
        self.window_done.state.lock().done.pop_front()
    }
}

impl Drop for Gpu {
    fn drop(&mut self) {
        self.senders.clear();
        for t in self.threads.drain(..) {
            // An engine runs the twins through `run_caught`; a panic of its own is a
            // bug the panic hook has printed already, and its GPU has stopped anyway.
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod test {
    use crate::backend::{SimFaults, SimProfile};
    use crate::{Backend, Error, Kernel, Scheduler};
    use std::time::Duration;

    fn failure(r: crate::Result<crate::report::Report>) -> String {
        match r {
            Err(Error::TasksFailed { failures, .. }) => failures[0].message.clone(),
            other => panic!("expected TasksFailed, got {:?}", other.map(|r| r.tasks)),
        }
    }

    /// Modeled time that no clock can count fails the command's task, on real-time
    /// profiles too; the GPU goes on.
    #[test]
    fn commands_past_the_clock_fail_their_task() {
        let s = Scheduler::builder().backend(Backend::SimWith(SimProfile::h100().with_gpus(1))).build().unwrap();
        let k =
            s.register_kernel(Kernel::new("forever", "").cpu_twin(|_| Ok(())).sim_cost(|_, _| Duration::MAX)).unwrap();
        s.task(1, 1).launch(&k, 1, 1, 0, &[]).submit().unwrap();
        let m = failure(s.synchronize());
        assert!(m.contains("kernel `forever`") && m.contains("past what the simulated clock can count"), "{m}");
        // A slowdown no copy's time survives: the link's flow ends past the clock.
        let mut slow = SimProfile::h100().with_gpus(1).with_faults(SimFaults::default().slow_gpu(0, 1e300));
        slow.copy_latency = Duration::ZERO;
        let s = Scheduler::builder().backend(Backend::SimWith(slow.clone())).build().unwrap();
        let (host, dev) = (s.alloc_host::<u32>(16).unwrap(), s.alloc::<u32>(16).unwrap());
        s.task(2, 1).download(&dev, 0, &host, ..).submit().unwrap();
        let m = failure(s.synchronize());
        assert!(m.contains("copy of") && m.contains("past what the simulated clock can count"), "{m}");
        assert_eq!(s.live_gpus(), vec![0]);
        // The same with a copy latency: the latency is past the clock first.
        slow.copy_latency = Duration::from_micros(2);
        let s = Scheduler::builder().backend(Backend::SimWith(slow)).build().unwrap();
        let (host, dev) = (s.alloc_host::<u32>(16).unwrap(), s.alloc::<u32>(16).unwrap());
        s.task(3, 1).download(&dev, 0, &host, ..).submit().unwrap();
        let m = failure(s.synchronize());
        assert!(m.starts_with("copy: modeled time"), "{m}");
        assert_eq!(s.live_gpus(), vec![0]);
    }

    /// An allocation the host refuses gives back what it counted.
    #[test]
    // Asks the allocator for exabytes: Miri reports the request instead of refusing it.
    #[cfg_attr(miri, ignore)]
    fn a_refused_allocation_counts_nothing() {
        let mut p = SimProfile::instant().with_gpus(1);
        p.memory_bytes = u64::MAX;
        let s = Scheduler::builder().backend(Backend::SimWith(p)).streams(1).build().unwrap();
        let e = s.alloc::<u8>(1 << 61).unwrap_err();
        assert!(matches!(e, Error::OutOfMemory { .. }) && e.to_string().contains("host"), "{e}");
        assert_eq!(s.device_memory_in_use(0), Some(0));
        let _small = s.alloc::<u8>(100).unwrap();
        assert_eq!(s.device_memory_in_use(0), Some(100));
    }
}
