//! What a simulated machine is: engine counts, copy rates, latencies, host buses.

use std::time::Duration;

/// The hardware a sim backend imitates.
///
/// The defaults ([`SimProfile::h100`]) are the figures measured on this project's H100
/// machine (nvidia-h100-x1, results/nvidia-h100-x1/core/): pinned copies at 55 GB/s each way alone and 90 GB/s both
/// ways at once, three async engines, 3.5 µs per launch, 0.8 µs per kernel node of a
/// replayed graph.
///
/// ```
/// use chariot::sim::SimProfile;
/// let p = SimProfile::h100().with_gpus(8).with_buses(2);
/// assert_eq!(p.gpus, 8);
/// assert_eq!(p.buses, Some(2));
/// assert_eq!(SimProfile::instant().time_scale, 0.0);
/// ```
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct SimProfile {
    /// A name for reports.
    pub name: String,
    /// How many simulated GPUs the machine has (ordinals 0..gpus).
    pub gpus: usize,
    /// `ASYNC_ENGINE_COUNT`: 1 means one DMA engine for both directions.
    pub copy_engines: u32,
    /// Whether kernels may run concurrently (one compute engine runs them in order either way).
    pub concurrent_kernels: bool,
    /// Host-to-device rate of one GPU's link, bytes/s.
    pub h2d_bytes_per_s: f64,
    /// Device-to-host rate of one GPU's link, bytes/s.
    pub d2h_bytes_per_s: f64,
    /// Both directions of one link together, bytes/s.
    pub duplex_bytes_per_s: f64,
    /// GPU-to-GPU copies (a resident buffer's peer fetch), bytes/s: NVLink or PCIe
    /// peer-to-peer. Peer copies run on the destination's copy engine at this rate,
    /// beside the host links (they do not take a share of them).
    pub peer_bytes_per_s: f64,
    /// Host buses shared by the GPUs (GPU g on bus g mod B); `None`: each GPU has its own.
    pub buses: Option<usize>,
    /// One bus's rate per direction, bytes/s (when `buses` is set).
    pub bus_bytes_per_s: f64,
    /// One bus's rate both directions together, bytes/s (when `buses` is set).
    pub bus_duplex_bytes_per_s: f64,
    /// Fixed cost of starting a copy.
    pub copy_latency: Duration,
    /// Fixed cost of starting a kernel.
    pub launch_latency: Duration,
    /// Fixed cost of launching a replayed window's graph, once per window.
    pub graph_launch_latency: Duration,
    /// Fixed cost of each kernel node inside a graph (in place of `launch_latency`).
    pub graph_node_latency: Duration,
    /// Device memory per GPU, bytes.
    pub memory_bytes: u64,
    /// Streaming multiprocessors per GPU (the occupancy of a launch is counted against
    /// them: see [`GpuInfo::blocks_per_sm`](crate::backend::device::GpuInfo::blocks_per_sm)).
    pub sm_count: u32,
    /// Modeled time runs at this factor of real time: 1.0 real time, 0.0 no modeled
    /// time at all (results only, as fast as the CPU twins run). At most
    /// [`SimProfile::MAX_TIME_SCALE`].
    pub time_scale: f64,
    /// Whether engines do the commands' real work (copy the bytes, run CPU twins).
    /// `false` is timing only, for predictions at full size: outputs are not computed
    /// and kernels take their [`Kernel::sim_cost`](crate::Kernel::sim_cost) (or no time).
    pub execute: bool,
    /// Whether the simulated dispatcher and engines spin (yielding) briefly before they
    /// block, as a CUDA dispatcher does, so that hand-overs cost what they cost on a GPU
    /// machine rather than a thread wake-up each. For predictions; it burns CPU.
    pub spin: bool,
    /// Injected faults (none by default). Shared: profiles are cloned per engine.
    pub faults: std::sync::Arc<super::SimFaults>,
}

impl SimProfile {
    /// The largest [`SimProfile::time_scale`]: a microsecond of modeled time lasts a
    /// second. Beyond some scale no `Duration` holds even a nanosecond of modeled time;
    /// this bound keeps every latency and copy of a sensible profile far from that.
    pub const MAX_TIME_SCALE: f64 = 1e6;

    /// An H100 80 GB on PCIe gen 5 x16, as measured here.
    pub fn h100() -> Self {
        SimProfile {
            name: "sim-h100".into(),
            gpus: 8,
            copy_engines: 3,
            concurrent_kernels: true,
            h2d_bytes_per_s: 55e9,
            d2h_bytes_per_s: 55e9,
            duplex_bytes_per_s: 90e9,
            peer_bytes_per_s: 50e9,
            buses: None,
            bus_bytes_per_s: 55e9,
            bus_duplex_bytes_per_s: 90e9,
            copy_latency: Duration::from_micros(2),
            launch_latency: Duration::from_nanos(3500),
            // A hand-written graph of a chain of empty kernels took 0.8 µs a node on the
            // H100 (results/nvidia-h100-x1/flow); the graph launch is taken as a launch.
            graph_launch_latency: Duration::from_nanos(3500),
            graph_node_latency: Duration::from_nanos(800),
            memory_bytes: 80 << 30,
            sm_count: 132,
            time_scale: 1.0,
            execute: true,
            spin: false,
            faults: Default::default(),
        }
    }

    /// The paper's GTX 580: one DMA engine (downloads and readbacks never overlap).
    pub fn single_copy_engine() -> Self {
        SimProfile {
            name: "sim-1dma".into(),
            copy_engines: 1,
            h2d_bytes_per_s: 6e9,
            d2h_bytes_per_s: 6e9,
            duplex_bytes_per_s: 6e9,
            peer_bytes_per_s: 6e9,
            bus_bytes_per_s: 6e9,
            bus_duplex_bytes_per_s: 6e9,
            memory_bytes: 3 << 29,
            ..Self::h100()
        }
    }

    /// No modeled time: commands take as long as their real work (copies, CPU twins).
    pub fn instant() -> Self {
        SimProfile { name: "sim-instant".into(), time_scale: 0.0, ..Self::h100() }
    }

    /// The same profile with `gpus` simulated GPUs.
    pub fn with_gpus(mut self, gpus: usize) -> Self {
        self.gpus = gpus;
        self
    }

    /// The same profile with `buses` shared host buses.
    pub fn with_buses(mut self, buses: usize) -> Self {
        self.buses = Some(buses);
        self
    }

    /// The same profile with this many copy engines.
    pub fn with_copy_engines(mut self, engines: u32) -> Self {
        self.copy_engines = engines;
        self
    }

    /// The same profile with link rates measured on a real machine, in bytes per
    /// nanosecond (GB/s): one direction alone each way, and both at once.
    pub fn with_link(mut self, up: f64, down: f64, both: f64) -> Self {
        self.h2d_bytes_per_s = up * 1e9;
        self.d2h_bytes_per_s = down * 1e9;
        self.duplex_bytes_per_s = both * 1e9;
        self.bus_bytes_per_s = up.max(down) * 1e9;
        self.bus_duplex_bytes_per_s = both * 1e9;
        self
    }

    /// The same profile doing timing only (see [`SimProfile::execute`]).
    pub fn timing_only(mut self) -> Self {
        self.execute = false;
        self
    }

    /// The same profile with spinning hand-overs (see [`SimProfile::spin`]).
    pub fn spinning(mut self) -> Self {
        self.spin = true;
        self
    }

    /// The same profile with these injected faults.
    pub fn with_faults(mut self, faults: super::SimFaults) -> Self {
        self.faults = std::sync::Arc::new(faults);
        self
    }

    /// The same profile running at `scale` × real time (`0..=`[`SimProfile::MAX_TIME_SCALE`];
    /// `build` refuses others with `InvalidConfig`).
    pub fn with_time_scale(mut self, scale: f64) -> Self {
        self.time_scale = scale;
        self
    }

    /// Checks the numbers make sense.
    pub(crate) fn validate(&self) -> Result<(), ProfileProblem> {
        let rates = [
            ("h2d_bytes_per_s", self.h2d_bytes_per_s),
            ("d2h_bytes_per_s", self.d2h_bytes_per_s),
            ("duplex_bytes_per_s", self.duplex_bytes_per_s),
            ("peer_bytes_per_s", self.peer_bytes_per_s),
            ("bus_bytes_per_s", self.bus_bytes_per_s),
            ("bus_duplex_bytes_per_s", self.bus_duplex_bytes_per_s),
        ];
        for (name, v) in rates {
            if !(v.is_finite() && v > 0.0) {
                return Err(ProfileProblem::Rate { name, value: v });
            }
        }
        if !(0.0..=Self::MAX_TIME_SCALE).contains(&self.time_scale) {
            return Err(ProfileProblem::TimeScale { value: self.time_scale });
        }
        if self.copy_engines == 0 {
            return Err(ProfileProblem::Zero { name: "copy_engines" });
        }
        if self.sm_count == 0 {
            return Err(ProfileProblem::Zero { name: "sm_count" });
        }
        if self.buses == Some(0) {
            return Err(ProfileProblem::NoBus);
        }
        Ok(())
    }
}

/// What makes a [`SimProfile`] unusable (the sim refuses to open with it): the
/// setting, its value, and what it must be.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub(crate) enum ProfileProblem {
    /// A copy rate that is not a positive finite number.
    #[error("{name} = {value}; must be a positive rate")]
    Rate {
        /// The rate's field.
        name: &'static str,
        /// Its value.
        value: f64,
    },
    /// A time scale outside `0..=MAX_TIME_SCALE`.
    #[error(
        "time_scale = {value:?}; must be in 0..={max:e} (1 is real time, 0 no modeled time)",
        max = SimProfile::MAX_TIME_SCALE
    )]
    TimeScale {
        /// The scale given.
        value: f64,
    },
    /// A count of engines or SMs that is 0.
    #[error("{name} = 0; must be at least 1")]
    Zero {
        /// The count's field.
        name: &'static str,
    },
    /// `buses = Some(0)`.
    #[error("buses = Some(0); must be at least 1")]
    NoBus,
    /// A slowed GPU's factor that is not finite or below 1 (`SimFaults::slow_gpu`).
    #[error("slow_gpu({gpu}, {factor}): the factor must be finite and at least 1")]
    SlowFactor {
        /// The GPU.
        gpu: usize,
        /// The factor given.
        factor: f64,
    },
}

impl Default for SimProfile {
    fn default() -> Self {
        Self::h100()
    }
}

#[cfg(test)]
mod test {
    use super::SimProfile;

    #[test]
    fn time_scale_is_bounded() {
        for ok in [0.0, 0.05, 1.0, SimProfile::MAX_TIME_SCALE] {
            assert_eq!(SimProfile::h100().with_time_scale(ok).validate(), Ok(()), "{ok}");
        }
        for bad in [-1.0, 1.0e6 + 1.0, 1e30, f64::NAN, f64::INFINITY] {
            let e = SimProfile::h100().with_time_scale(bad).validate().unwrap_err().to_string();
            assert!(e.contains(&format!("time_scale = {bad:?}")) && e.contains("0..=1e6"), "{e}");
        }
    }
}
