//! The scheduler's builder (tokio's runtime builder is the model): every setter states
//! its default; `build` validates everything, opens the backend, and only then starts
//! threads, stopping those it started if a later one fails.

use crate::backend::{Backend, Machine};
use crate::config::{Config, Gpus};
use crate::error::{Error, Result};
use crate::execution::Execution;
use crate::scheduler::Scheduler;
use crate::stage::tuning::{self, Asked};
use crate::stage::{OverlapMatrix, Stage};
use crate::task::Order;

impl Scheduler {
    /// A builder with the defaults: 1 GPU, FCFS, backend `Auto`, dispatchers pinned,
    /// and S, the stage depth and the stage limits chosen from the hardware at `build`.
    pub fn builder() -> Builder {
        Builder::default()
    }
}

/// Builds a [`Scheduler`]. Get one from [`Scheduler::builder`].
///
/// Every knob left unset is chosen from the hardware at `build` (see
/// [`Tuning`](crate::stage::Tuning)): S, the stage depth, the stage limits, and an online
/// adaptation of the limits. The plain loop needs no setting but the GPUs;
/// [`Scheduler::tuning`](crate::Scheduler::tuning) says what was chosen and why, with
/// the call that sets each by hand.
///
/// ```
/// use chariot::{Backend, Order, Scheduler};
/// let sched = Scheduler::builder()
///     .backend(Backend::Sim)
///     .gpus(2)
///     .streams(4)
///     .order(Order::LargestFirst)
///     .cpu_cores(16)
///     .build()?;
/// assert_eq!(sched.gpu_count(), 2);
/// assert_eq!(sched.streams(), 4);
/// assert_eq!(sched.tuning().stage_depth, 2); // three copy engines on the simulated H100
/// // The paper's thresholds, one call away (at depth 1 unless the depth is set).
/// let paper = Scheduler::builder().backend(Backend::Sim).streams(4).cpu_cores(16).paper_thresholds().build()?;
/// assert_eq!(paper.thresholds().local, [4, 1, 1, 1]);
/// # Ok::<(), chariot::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct Builder {
    gpus: Gpus,
    streams: Option<usize>,
    order: Order,
    local: Option<[usize; Stage::K]>,
    global: Option<[usize; Stage::K]>,
    paper: bool,
    kernels: Option<usize>,
    fills: Option<f64>,
    adapt: Option<bool>,
    buses: Option<usize>,
    cores: Option<usize>,
    depth: Option<usize>,
    backend: Backend,
    pin: bool,
    device_timing: bool,
    nvtx: Option<bool>,
    execution: Option<Execution>,
    #[cfg(feature = "mpi")]
    cluster: Option<crate::seam::Cluster>,
}

impl Default for Builder {
    fn default() -> Self {
        Builder {
            gpus: Gpus::Count(1),
            streams: None,
            order: Order::Fcfs,
            local: None,
            global: None,
            paper: false,
            kernels: None,
            fills: None,
            adapt: None,
            buses: None,
            cores: None,
            depth: None,
            backend: Backend::Auto,
            pin: true,
            device_timing: false,
            nvtx: None,
            execution: None,
            #[cfg(feature = "mpi")]
            cluster: None,
        }
    }
}

impl Builder {
    /// Use the first `n` GPUs (default 1). `n` = 0 is an error at `build`, as is more
    /// than the backend has.
    pub fn gpus(mut self, n: usize) -> Self {
        self.gpus = Gpus::Count(n);
        self
    }

    /// Use every GPU the backend has: on CUDA those the driver lists (as
    /// `CUDA_VISIBLE_DEVICES` selects them), on the sim its profile's. Ranks of a cluster
    /// that share a host take its GPUs in equal shares (each rank one of them, shared,
    /// where the host has fewer GPUs than ranks).
    ///
    /// ```
    /// use chariot::{Backend, Scheduler};
    /// let s = Scheduler::builder().backend(Backend::Sim).all_gpus().build()?;
    /// assert_eq!(s.gpu_count(), chariot::sim::SimProfile::h100().gpus);
    /// # Ok::<(), chariot::Error>(())
    /// ```
    pub fn all_gpus(mut self) -> Self {
        self.gpus = Gpus::All;
        self
    }

    /// Use exactly these GPU ordinals, in this order.
    pub fn gpu_list(mut self, ordinals: impl IntoIterator<Item = usize>) -> Self {
        self.gpus = Gpus::List(ordinals.into_iter().collect());
        self
    }

    /// CUDA streams per GPU, S (1..=64; default: one per CPU core over the GPUs, at
    /// least what the GPU stages hold at once, at most 32: see [`Tuning`](crate::stage::Tuning)).
    /// Dispatch over several streams slows every CUDA graph ~25 % on an H200 (`docs/replay.md`).
    pub fn streams(mut self, s: usize) -> Self {
        self.streams = Some(s);
        self
    }

    /// Ordering rule of the task buffer (default [`Order::Fcfs`]).
    pub fn order(mut self, order: Order) -> Self {
        self.order = order;
        self
    }

    /// Local thresholds L, over the paper's `(min(C,S), 1, 1, 1)`. Each ≥ 1. Setting
    /// thresholds by hand gives the paper's gating: every stage counted against its
    /// threshold (times the stage depth), nothing adapted.
    pub fn local_thresholds(mut self, l: [usize; Stage::K]) -> Self {
        self.local = Some(l);
        self
    }

    /// Global thresholds G, over the paper's `(min(C,D·S), B, D, B)`. Each ≥ 1.
    /// G_1 is also the number of executioner threads, capped at D·S: no more tasks than
    /// that hold a stream slot, so no more CPU callbacks can run at once. As with
    /// [`local_thresholds`](Builder::local_thresholds), the paper's gating, nothing adapted.
    pub fn global_thresholds(mut self, g: [usize; Stage::K]) -> Self {
        self.global = Some(g);
        self
    }

    /// The paper's thresholds ([`Thresholds::paper`](crate::stage::Thresholds::paper), times
    /// the stage depth) and its gating: one kernel per GPU per level of depth, nothing
    /// adapted. With `.stage_depth(1)` this is GPU-chariot as published.
    pub fn paper_thresholds(mut self) -> Self {
        self.paper = true;
        self
    }

    /// Kernels one GPU may run at once (1..=64; at most S take effect), counted whatever
    /// their size; G_3 becomes D·n. Default: chosen per kernel from its occupancy (see
    /// [`Tuning::kernel_fills`](crate::stage::Tuning::kernel_fills)) and adapted.
    pub fn kernel_concurrency(mut self, n: usize) -> Self {
        self.kernels = Some(n);
        self
    }

    /// The kernel stage's capacity in GPU-fills (0 < f ≤ 64): kernels are admitted while
    /// the fills of those in flight stay within it, each counting its grid over one full
    /// wave, at most 1 (a kernel alone always runs). Default: 2 × the stage depth where
    /// kernels run concurrently, and adapted; set by hand, it is not adapted.
    ///
    /// ```
    /// use chariot::{Backend, Scheduler};
    /// let s = Scheduler::builder().backend(Backend::Sim).kernel_fills(1.0).build()?;
    /// assert_eq!(s.tuning().kernel_fills, Some(1.0));
    /// assert!(Scheduler::builder().backend(Backend::Sim).kernel_fills(0.0).build().is_err());
    /// # Ok::<(), chariot::Error>(())
    /// ```
    pub fn kernel_fills(mut self, fills: f64) -> Self {
        self.fills = Some(fills);
        self
    }

    /// Whether the online adaptation may move the stage limits chosen automatically
    /// (default true). `true` beside thresholds set by hand is an error at `build`:
    /// those limits are the user's.
    pub fn adapt(mut self, on: bool) -> Self {
        self.adapt = Some(on);
        self
    }

    /// Host buses B (default: one per GPU, as on machines where each GPU has its own
    /// PCIe link; the sim backend's profile may say otherwise).
    pub fn buses(mut self, b: usize) -> Self {
        self.buses = Some(b);
        self
    }

    /// CPU cores C for the thresholds and S (default: what the OS reports).
    pub fn cpu_cores(mut self, c: usize) -> Self {
        self.cores = Some(c);
        self
    }

    /// Commands a GPU stage holds per GPU (1..=16): 1 is the paper's gating; 2 lets a
    /// second command wait in the hardware queue behind the running one, hiding
    /// idle-detection time between commands. Default: 2 where every GPU has two or
    /// more copy engines, else 1; with thresholds set by hand, 1, and then it
    /// multiplies L and G of the GPU stages.
    pub fn stage_depth(mut self, depth: usize) -> Self {
        self.depth = Some(depth);
        self
    }

    /// The backend (default [`Backend::Auto`]).
    pub fn backend(mut self, backend: Backend) -> Self {
        self.backend = backend;
        self
    }

    /// Pin each dispatcher thread to its own core, near its GPU where the topology
    /// says (default true).
    pub fn pin_dispatchers(mut self, pin: bool) -> Self {
        self.pin = pin;
        self
    }

    fn invalid(name: &'static str, value: impl std::fmt::Debug, allowed: &str) -> Error {
        Error::InvalidConfig { name, value: format!("{value:?}"), allowed: allowed.to_string() }
    }

    /// Checks everything that does not need the backend.
    fn validate(&self) -> Result<()> {
        match &self.gpus {
            Gpus::Count(0) => return Err(Self::invalid("gpus", 0, "at least 1")),
            Gpus::List(v) if v.is_empty() => return Err(Self::invalid("gpu_list", v, "at least one ordinal")),
            Gpus::List(v) => {
                let mut seen = v.clone();
                seen.sort_unstable();
                seen.dedup();
                if seen.len() != v.len() {
                    return Err(Self::invalid("gpu_list", v, "distinct ordinals"));
                }
            }
            Gpus::Count(_) | Gpus::All => {}
        }
        if let Some(s) = self.streams.filter(|s| !(1..=64).contains(s)) {
            return Err(Self::invalid("streams", s, "1..=64 streams per GPU"));
        }
        if let Some(d) = self.depth.filter(|d| !(1..=16).contains(d)) {
            return Err(Self::invalid("stage_depth", d, "1..=16"));
        }
        if let Some(k) = self.kernels.filter(|k| !(1..=64).contains(k)) {
            return Err(Self::invalid("kernel_concurrency", k, "1..=64 kernels at once per GPU"));
        }
        if let Some(f) = self.fills.filter(|f| !(f.is_finite() && *f > 0.0 && *f <= 64.0)) {
            return Err(Self::invalid("kernel_fills", f, "a number of GPU-fills in (0, 64]"));
        }
        let manual = self.local.is_some() || self.global.is_some() || self.paper;
        if self.fills.is_some() && (self.kernels.is_some() || manual) {
            return Err(Self::invalid(
                "kernel_fills",
                self.fills,
                "unset where kernel_concurrency or thresholds are set by hand (kernels are then counted)",
            ));
        }
        for (name, v) in [("local_thresholds", self.local), ("global_thresholds", self.global)] {
            if let Some(v) = v {
                if v.contains(&0) {
                    return Err(Self::invalid(name, v, "every threshold >= 1 (0 would stall that stage forever)"));
                }
            }
        }
        if self.adapt == Some(true) && (self.local.is_some() || self.global.is_some() || self.paper) {
            return Err(Self::invalid(
                "adapt",
                true,
                "false, or leave the thresholds unset: the adaptation moves only limits chosen automatically, \
                 and thresholds set by hand (local_thresholds, global_thresholds, paper_thresholds) are kept",
            ));
        }
        if self.buses == Some(0) {
            return Err(Self::invalid("buses", 0, "at least 1"));
        }
        if self.cores == Some(0) {
            return Err(Self::invalid("cpu_cores", 0, "at least 1"));
        }
        Ok(())
    }
    /// Resolves [`Backend::Auto`] (and `CHARIOT_BACKEND`).
    fn resolve_backend(&self) -> Result<Backend> {
        if self.backend != Backend::Auto {
            return Ok(self.backend.clone());
        }
        match std::env::var("CHARIOT_BACKEND").ok().as_deref() {
            Some("cuda") => return Ok(Backend::Cuda),
            Some("sim") => return Ok(Backend::Sim),
            Some("" | "auto") | None => {}
            Some(other) => {
                let allowed = format!("{} (or unset)", Backend::allowed());
                return Err(Self::invalid("CHARIOT_BACKEND", other, &allowed));
            }
        }
        match Machine::cuda_present() {
            Ok(_) => Ok(Backend::Cuda),
            Err(reason) => {
                static SAID: std::sync::Once = std::sync::Once::new();
                SAID.call_once(|| eprintln!("chariot: using the sim backend ({reason})"));
                Ok(Backend::Sim)
            }
        }
    }

    /// Timestamp each CUDA command on the device with a pair of timing events, and time
    /// each replayed window and recorded graph's run on the GPU the same way
    /// ([`ReplayedWindow::gpu_ns`](crate::report::ReplayedWindow::gpu_ns), which the
    /// runtime's measures of windows then read) (default false: spans are observed on
    /// the host, to within the dispatcher's polling latency). Measured on an H100: timing
    /// events serialise commands of different streams, so a pipeline ran 1.5× slower
    /// with them; on two H200s the pair cost a recorded graph's run 3–16 µs. Use to
    /// study device times. Needs a driver with `cuEventElapsedTime_v2` (CUDA 12.8 or
    /// newer): `build` fails with [`Error::InvalidConfig`] where it lacks it. No effect
    /// on the sim backend, whose windows' times are its engines' own.
    pub fn device_timing(mut self, on: bool) -> Self {
        self.device_timing = on;
        self
    }

    /// Annotate the CUDA timeline for Nsight Systems with NVTX (default: off, or on
    /// when the environment has `CHARIOT_NVTX=1`): one range per command from its issue
    /// to its completion, named `task <id> <stage> #<command>`, and the streams and
    /// dispatcher threads named after their GPU. The NVTX library is loaded at `build`
    /// (`CHARIOT_NVTX_LIB` names it, else `libnvToolsExt.so.1` on the loader's path);
    /// asking for NVTX where it cannot be loaded is an error. No effect on the sim backend.
    ///
    /// ```
    /// use chariot::{Backend, Scheduler};
    /// let s = Scheduler::builder().backend(Backend::Sim).nvtx(true).build()?;
    /// # Ok::<(), chariot::Error>(())
    /// ```
    pub fn nvtx(mut self, on: bool) -> Self {
        self.nvtx = Some(on);
        self
    }

    /// How tasks reach the GPU (default [`Execution::Auto`], or `CHARIOT_EXECUTION` =
    /// `auto`, `host`, `replay` or `device` when set): command by command from the
    /// host, replayed as graphs, or run by a persistent kernel on the GPU. See
    /// [`Execution`].
    ///
    /// ```
    /// use chariot::{Backend, Execution, Scheduler};
    /// let s = Scheduler::builder().backend(Backend::Sim).execution(Execution::Replay).build()?;
    /// assert_eq!(s.execution(), Execution::Replay);
    /// # Ok::<(), chariot::Error>(())
    /// ```
    pub fn execution(mut self, execution: Execution) -> Self {
        self.execution = Some(execution);
        self
    }

    /// Takes part in `cluster`'s task stream (the `mpi` feature): every rank
    /// builds its scheduler so and runs the same loop; each runs the tasks rank 0
    /// hands it as its GPUs have room, the others skip them at submit, and every
    /// rank's `synchronize` names every rank's failed tasks. One scheduler of a
    /// process at a time (`build` refuses a second while the first lives).
    ///
    /// ```no_run
    /// let cluster = chariot::cluster::Cluster::init()?;
    /// let s = chariot::Scheduler::builder().cluster(&cluster).build()?;
    /// # Ok::<(), chariot::Error>(())
    /// ```
    #[cfg(feature = "mpi")]
    pub fn cluster(mut self, cluster: &crate::seam::Cluster) -> Self {
        self.cluster = Some(cluster.clone());
        self
    }

    /// The GPUs asked for, or, for ranks sharing a host that asked for a count or for
    /// all, this rank's own: rank l of the host takes ordinals l·n .. l·n + n, where the
    /// host has that many for every rank (else every rank takes the first n, sharing
    /// them); for all, n is the host's GPUs over its ranks (at least one: with fewer GPUs
    /// than ranks, rank l takes GPU l mod the GPUs).
    fn rank_gpus(&self, backend: &Backend) -> Gpus {
        let (local, on_host) = (self.rank_on_host(), self.ranks_on_host());
        if on_host < 2 || matches!(self.gpus, Gpus::List(_)) {
            return self.gpus.clone();
        }
        // Only for ranks sharing a host: counting CUDA's devices costs a driver probe.
        let available = match backend {
            Backend::Cuda => Machine::cuda_present().unwrap_or(0),
            Backend::Sim => crate::backend::SimProfile::h100().gpus,
            Backend::SimWith(p) => p.gpus,
            Backend::Auto => 0,
        };
        let n = match self.gpus {
            Gpus::Count(n) => n,
            Gpus::All if available == 0 => return Gpus::All, // opening reports no GPU
            Gpus::All if available < on_host => return Gpus::List(vec![local % available]),
            Gpus::All => available / on_host,
            Gpus::List(_) => return self.gpus.clone(),
        };
        if n.saturating_mul(on_host) <= available {
            return Gpus::List((local * n..local * n + n).collect());
        }
        self.gpus.clone()
    }

    /// This process's rank among the ranks of its host (0 outside a cluster).
    fn rank_on_host(&self) -> usize {
        #[cfg(feature = "mpi")]
        if self.cluster.is_some() {
            return crate::seam::Cluster::local_rank();
        }
        0
    }

    /// Processes of this cluster on this host (1 outside a cluster).
    fn ranks_on_host(&self) -> usize {
        #[cfg(feature = "mpi")]
        if self.cluster.is_some() {
            return crate::seam::Cluster::local_size();
        }
        1
    }

    /// Dispatcher cores the ranks before this one on its host took (their D each): none
    /// outside a cluster.
    fn pin_skip(&self, d: usize) -> usize {
        #[cfg(feature = "mpi")]
        if self.cluster.is_some() {
            return crate::seam::Cluster::local_rank() * d;
        }
        let _ = d;
        0
    }

    /// Validates the configuration, opens the backend and starts the runtime threads.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] for a parameter out of range, [`Error::NoSuchGpu`] for
    /// more GPUs than the backend has, [`Error::CudaUnavailable`] for `Backend::Cuda`
    /// without a driver or device, [`Error::Driver`] or [`Error::Thread`] if set-up fails.
    pub fn build(self) -> Result<Scheduler> {
        self.validate()?;
        let execution = match (self.execution, std::env::var("CHARIOT_EXECUTION").ok().as_deref()) {
            (Some(e), _) => e,
            (None, Some("") | None) => Execution::Auto,
            (None, Some(name)) => {
                let allowed = format!("{} (or unset)", Execution::allowed());
                name.parse().map_err(|_| Self::invalid("CHARIOT_EXECUTION", name, &allowed))?
            }
        };
        let backend = self.resolve_backend()?;
        let machine = Machine::open(&backend, &self.rank_gpus(&backend))?;
        let d = machine.gpus().len();
        // Ranks sharing a host share its cores: each is tuned for its part of them.
        let cores = self.cores.unwrap_or_else(|| {
            (std::thread::available_parallelism().map_or(1, |n| n.get()) / self.ranks_on_host()).max(1)
        });
        let buses = self.buses.unwrap_or(match &backend {
            Backend::SimWith(p) => p.buses.map_or(d, |b| b.min(d)),
            _ => d,
        });
        let asked = Asked {
            streams: self.streams,
            depth: self.depth,
            local: self.local,
            global: self.global,
            paper: self.paper,
            kernels: self.kernels,
            fills: self.fills,
            adapt: self.adapt,
        };
        let tuning = tuning::choose(&asked, machine.gpus(), cores, buses);
        let matrices =
            machine.gpus().iter().map(|g| OverlapMatrix::from_hardware(g.copy_engines, g.concurrent_kernels)).collect();
        let config = Config {
            streams: tuning.streams,
            order: self.order,
            thresholds: tuning.thresholds,
            tuning,
            matrices,
            buses,
            pin: self.pin,
            pin_skip: self.pin_skip(d),
            device_timing: self.device_timing,
            nvtx: self.nvtx.unwrap_or_else(|| std::env::var("CHARIOT_NVTX").is_ok_and(|v| v == "1")),
            execution,
        };
        #[cfg(feature = "mpi")]
        if let Some(cluster) = self.cluster {
            let mut s = Scheduler::start(machine, config)?;
            s.join_cluster(cluster)?;
            return Ok(s);
        }
        Scheduler::start(machine, config)
    }
}
