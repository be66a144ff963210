//! The scheduler's builder (tokio's runtime builder is the model): every setter states
//! its default; `build` validates everything, opens the backend, and only then starts
//! threads, stopping those it started if a later one fails.

use crate::backend::{Backend, Machine};
use crate::error::{Error, Result};
use crate::stage::{OverlapMatrix, Stage, Thresholds};
use crate::task::Order;

/// Which GPUs to use.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Gpus {
    /// The first `n` GPUs (ordinals `0..n`).
    Count(usize),
    /// These ordinals, in this order.
    List(Vec<usize>),
}

impl Gpus {
    /// Resolves to ordinals on a backend with `available` GPUs. A count is checked
    /// before any list is made: `Count(usize::MAX)` names ordinal `available`, the
    /// first one missing.
    pub(crate) fn resolve(&self, available: usize, backend: &'static str) -> Result<Vec<usize>> {
        match self {
            Gpus::Count(n) if *n > available => Err(Error::NoSuchGpu { ordinal: available, available, backend }),
            Gpus::Count(n) => Ok((0..*n).collect()),
            Gpus::List(v) => match v.iter().find(|&&o| o >= available) {
                Some(&ordinal) => Err(Error::NoSuchGpu { ordinal, available, backend }),
                None => Ok(v.clone()),
            },
        }
    }
}

/// Builds a [`Scheduler`](crate::Scheduler). Get one from
/// [`Scheduler::builder`](crate::Scheduler::builder).
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
/// assert_eq!(sched.thresholds().local, [4, 1, 1, 1]);
/// # Ok::<(), chariot::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct Builder {
    gpus: Gpus,
    streams: usize,
    order: Order,
    local: Option<[usize; Stage::K]>,
    global: Option<[usize; Stage::K]>,
    buses: Option<usize>,
    cores: Option<usize>,
    depth: usize,
    backend: Backend,
    pin: bool,
    device_timing: bool,
    nvtx: Option<bool>,
}

impl Default for Builder {
    fn default() -> Self {
        Builder {
            gpus: Gpus::Count(1),
            streams: 2,
            order: Order::Fcfs,
            local: None,
            global: None,
            buses: None,
            cores: None,
            depth: 1,
            backend: Backend::Auto,
            pin: true,
            device_timing: false,
            nvtx: None,
        }
    }
}

/// The validated configuration the running parts see.
#[derive(Clone, Debug)]
pub(crate) struct Config {
    pub(crate) streams: usize,
    pub(crate) order: Order,
    pub(crate) thresholds: Thresholds,
    pub(crate) matrices: Vec<OverlapMatrix>,
    pub(crate) buses: usize,
    pub(crate) pin: bool,
    pub(crate) device_timing: bool,
    pub(crate) nvtx: bool,
}

impl Builder {
    /// Use the first `n` GPUs (default 1). `n` = 0 is an error at `build`, as is more
    /// than the backend has.
    pub fn gpus(mut self, n: usize) -> Self {
        self.gpus = Gpus::Count(n);
        self
    }

    /// Use exactly these GPU ordinals, in this order.
    pub fn gpu_list(mut self, ordinals: impl IntoIterator<Item = usize>) -> Self {
        self.gpus = Gpus::List(ordinals.into_iter().collect());
        self
    }

    /// CUDA streams per GPU, S (default 2; 1..=64).
    pub fn streams(mut self, s: usize) -> Self {
        self.streams = s;
        self
    }

    /// Ordering rule of the task buffer (default [`Order::Fcfs`]).
    pub fn order(mut self, order: Order) -> Self {
        self.order = order;
        self
    }

    /// Local thresholds L, overriding the paper's `(min(C,S), 1, 1, 1)`. Each ≥ 1.
    pub fn local_thresholds(mut self, l: [usize; Stage::K]) -> Self {
        self.local = Some(l);
        self
    }

    /// Global thresholds G, overriding the paper's `(min(C,D·S), B, D, B)`. Each ≥ 1.
    /// G_1 is also the number of executioner threads, capped at D·S: no more tasks than
    /// that hold a stream slot, so no more CPU callbacks can run at once.
    pub fn global_thresholds(mut self, g: [usize; Stage::K]) -> Self {
        self.global = Some(g);
        self
    }

    /// Host buses B (default: one per GPU, as on machines where each GPU has its own
    /// PCIe link; the sim backend's profile may say otherwise).
    pub fn buses(mut self, b: usize) -> Self {
        self.buses = Some(b);
        self
    }

    /// CPU cores C for the thresholds (default: what the OS reports).
    pub fn cpu_cores(mut self, c: usize) -> Self {
        self.cores = Some(c);
        self
    }

    /// Commands a GPU stage may hold per GPU: 1 (default) is the paper's gating;
    /// 2 lets a second command wait in the hardware queue behind the running one,
    /// hiding idle-detection time between commands. Multiplies L and G of the GPU stages.
    pub fn stage_depth(mut self, depth: usize) -> Self {
        self.depth = depth;
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
            Gpus::Count(_) => {}
        }
        if !(1..=64).contains(&self.streams) {
            return Err(Self::invalid("streams", self.streams, "1..=64 streams per GPU"));
        }
        if !(1..=16).contains(&self.depth) {
            return Err(Self::invalid("stage_depth", self.depth, "1..=16"));
        }
        for (name, v) in [("local_thresholds", self.local), ("global_thresholds", self.global)] {
            if let Some(v) = v {
                if v.contains(&0) {
                    return Err(Self::invalid(name, v, "every threshold >= 1 (0 would stall that stage forever)"));
                }
            }
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
            Some("") | None => {}
            Some(other) => return Err(Self::invalid("CHARIOT_BACKEND", other, "cuda or sim (or unset)")),
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

    /// Timestamp each CUDA command on the device with a pair of timing events (default
    /// false: spans are observed on the host, to within the dispatcher's polling
    /// latency). Measured on an H100: timing events serialise commands of different
    /// streams, so a pipeline ran 1.5× slower with them; use only to study one command's
    /// device time. No effect on the sim backend.
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

    /// Validates the configuration, opens the backend and starts the runtime threads.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] for a parameter out of range, [`Error::NoSuchGpu`] for
    /// more GPUs than the backend has, [`Error::CudaUnavailable`] for `Backend::Cuda`
    /// without a driver or device, [`Error::Driver`] or [`Error::Thread`] if set-up fails.
    pub fn build(self) -> Result<crate::Scheduler> {
        self.validate()?;
        let backend = self.resolve_backend()?;
        let machine = Machine::open(&backend, &self.gpus)?;
        let d = machine.gpus().len();
        let s = self.streams;
        let cores = self.cores.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
        let buses = self.buses.unwrap_or(match &backend {
            Backend::SimWith(p) => p.buses.map_or(d, |b| b.min(d)),
            _ => d,
        });
        let mut thresholds = Thresholds::paper(cores, s, d, buses);
        if let Some(l) = self.local {
            thresholds.local = l;
        }
        if let Some(g) = self.global {
            thresholds.global = g;
        }
        let thresholds = thresholds.with_depth(self.depth);
        let matrices =
            machine.gpus().iter().map(|g| OverlapMatrix::from_hardware(g.copy_engines, g.concurrent_kernels)).collect();
        let config = Config {
            streams: s,
            order: self.order,
            thresholds,
            matrices,
            buses,
            pin: self.pin,
            device_timing: self.device_timing,
            nvtx: self.nvtx.unwrap_or_else(|| std::env::var("CHARIOT_NVTX").is_ok_and(|v| v == "1")),
        };
        crate::scheduler::Scheduler::start(machine, config)
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn a_count_is_checked_before_it_is_listed() {
        assert_eq!(Gpus::Count(2).resolve(8, "sim").ok(), Some(vec![0, 1]));
        assert_eq!(Gpus::Count(8).resolve(8, "sim").ok(), Some((0..8).collect()));
        for n in [9, 1 << 40, usize::MAX] {
            let e = Gpus::Count(n).resolve(8, "sim").unwrap_err();
            assert!(matches!(e, Error::NoSuchGpu { ordinal: 8, available: 8, backend: "sim" }), "{n}: {e:?}");
        }
        let e = Gpus::List(vec![1, 9, 3]).resolve(8, "cuda").unwrap_err();
        assert!(matches!(e, Error::NoSuchGpu { ordinal: 9, available: 8, backend: "cuda" }), "{e:?}");
        assert_eq!(Gpus::List(vec![3, 1]).resolve(8, "sim").ok(), Some(vec![3, 1]));
    }
}
