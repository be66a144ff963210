//! The diagnosis's probes: the kernels it puts between the column phase's copies in
//! place of the FFT (`Probes`), the column phase with any [`ColumnWork`], and both
//! phases with their copies only. The example's own pipeline is `Pipeline` (main.rs).

use chariot::kernel::KernelHandle;
use chariot::report::Report;
use chariot::{Arg, DeviceBuffer, HostBuffer, Kernel, Param, TaskBuilder};
use std::time::{Duration, Instant};

use crate::fft::ColumnKernel;
use crate::{column_copy, err, Pipeline, Run, C};

/// The diagnosis's kernels, put between the copies in place of the FFT. `spin` only
/// waits: it reads the GPU's nanosecond timer until `ns` have passed and touches no
/// memory. `touch` reads and rewrites `n` complex values of a buffer the copies never
/// use (each value + 1), cache-streaming when `streaming` is set, as the FFT would.
pub(crate) const DIAG_KERNELS: &str = r#"extern "C" __global__ void spin(unsigned long long ns) {
    unsigned long long t0, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    do { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); } while (t - t0 < ns);
}
extern "C" __global__ void touch(float2* buf, unsigned long long n, unsigned streaming) {
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x) {
        float2 v = streaming ? __ldcs(buf + i) : buf[i];
        v.x += 1.0f;
        if (streaming) __stcs(buf + i, v); else buf[i] = v;
    }
}"#;

/// The waiting kernel: `spin(ns)`, one block; on sim it does nothing for `ns`.
pub(crate) fn spin_kernel() -> Kernel {
    Kernel::new("spin", DIAG_KERNELS)
        .params([Param::U64])
        .cpu_twin(|_| Ok(()))
        .sim_cost(|_, s| Duration::from_nanos(s.u64(0).unwrap_or(0)))
}

/// The touching kernel: `touch(buf, n, streaming)` adds 1 to the real part of the first
/// `n` values of `buf`.
pub(crate) fn touch_kernel() -> Kernel {
    Kernel::new("touch", DIAG_KERNELS)
        .params([Param::Buffer, Param::U64, Param::U32])
        .cpu_twin(|a| {
            let n = usize::try_from(a.u64(1)?)?;
            let buf = a.buffer_mut::<C>(0)?;
            let part = buf.get_mut(..n).ok_or("n exceeds the buffer")?;
            part.iter_mut().for_each(|v| v.re += 1.0);
            Ok(())
        })
        // Modeled: one read and one write of each value at 2 TB/s.
        .sim_cost(|_, s| Duration::from_secs_f64(16.0 * s.u64(1).unwrap_or(0) as f64 / 2e12))
}

/// What the column phase runs between its copies; the diagnosis varies it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ColumnWork {
    /// The column FFT with this kernel (the example's phase).
    Fft(ColumnKernel),
    /// No kernel: the readback returns what was downloaded.
    CopiesOnly,
    /// The waiting kernel for this many ns, then the readback of what was downloaded.
    Spin(u64),
    /// The touching kernel on this many values of a buffer the copies never use
    /// (cache-streaming or not), then the readback of what was downloaded.
    Touch { values: usize, streaming: bool },
    /// The kernel alone, on what the device buffers hold: no copies.
    KernelOnly(ColumnKernel),
}

impl ColumnWork {
    /// The name in the diagnosis table and the CSV's `way` (after `diag_`).
    pub(crate) fn name(self) -> String {
        match self {
            ColumnWork::Fft(k) => format!("copies+{}", k.name()),
            ColumnWork::CopiesOnly => "copies".into(),
            ColumnWork::Spin(_) => "copies+spin".into(),
            ColumnWork::Touch { values, streaming } => {
                format!("copies+touch{}{}", size_name(values), if streaming { "-cs" } else { "" })
            }
            ColumnWork::KernelOnly(k) => format!("{}_alone", k.name()),
        }
    }
}

/// `values` complex values in MiB (`64M`) or, under 1 MiB, KiB (`8K`).
pub(crate) fn size_name(values: usize) -> String {
    let bytes = values * std::mem::size_of::<C>();
    if bytes >= 1 << 20 {
        format!("{}M", bytes >> 20)
    } else {
        format!("{}K", bytes >> 10)
    }
}

/// The probe kernels and the touching kernel's buffer, on a pipeline's scheduler. Drop
/// it before the pipeline: its buffer must go before the scheduler shuts down.
pub(crate) struct Probes {
    d_touch: DeviceBuffer<C>,
    spin: KernelHandle,
    touch: KernelHandle,
}

impl Probes {
    /// The kernels registered on `p.sched`, with a touching buffer of `touch_values`.
    pub(crate) fn new(p: &Pipeline, touch_values: usize) -> Result<Self, String> {
        let spin = p.sched.register_kernel(spin_kernel()).map_err(err)?;
        let touch = p.sched.register_kernel(touch_kernel()).map_err(err)?;
        let d_touch = p.sched.alloc::<C>(touch_values).map_err(err)?;
        Ok(Probes { d_touch, spin, touch })
    }

    /// The column phase of `p` with `what` between its copies (`Fft(k)`: the pipeline's
    /// own phase, with kernel k).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn columns(
        &self,
        p: &mut Pipeline,
        what: ColumnWork,
        input: &HostBuffer<C>,
        work: &HostBuffer<C>,
        x: usize,
        y: usize,
        n: usize,
    ) -> Result<Report, String> {
        match what {
            ColumnWork::Fft(k) => {
                p.kernel = k;
                p.columns(input, work, x, y, n)
            }
            ColumnWork::CopiesOnly => copy_columns(p, input, work, x, y, n, |t| t),
            ColumnWork::Spin(ns) => {
                copy_columns(p, input, work, x, y, n, |t| t.launch(&self.spin, 1, 32, 0, &[Arg::u64(ns)]))
            }
            ColumnWork::Touch { values, streaming } => {
                let args = [Arg::buffer(&self.d_touch), Arg::u64(values as u64), Arg::u32(u32::from(streaming))];
                copy_columns(p, input, work, x, y, n, |t| t.launch(&self.touch, 264, 1024, 0, &args))
            }
            ColumnWork::KernelOnly(k) => {
                let w = x / n;
                for i in 0..n {
                    p.launch_columns(p.sched.task(i as u64, (w * y) as u64), k, w, y).submit().map_err(err)?;
                }
                p.sched.synchronize().map_err(err)
            }
        }
    }

    /// The plain touching kernel on `values` values, alone (what runs before a phase).
    pub(crate) fn touch_alone(&self, p: &Pipeline, values: usize) -> Result<(), String> {
        let args = [Arg::buffer(&self.d_touch), Arg::u64(values as u64), Arg::u32(0)];
        p.sched.task(u64::MAX, 1).launch(&self.touch, 264, 1024, 0, &args).submit().map_err(err)?;
        p.sched.synchronize().map_err(err).map(drop)
    }
}

/// The column phase's copies with `between` in place of the FFT: the readback returns
/// what was downloaded, so `work` ends up equal to `input`.
fn copy_columns(
    p: &Pipeline,
    input: &HostBuffer<C>,
    work: &HostBuffer<C>,
    x: usize,
    y: usize,
    n: usize,
    between: impl Fn(TaskBuilder<'_>) -> TaskBuilder<'_>,
) -> Result<Report, String> {
    let w = x / n;
    for i in 0..n {
        let shape = column_copy(i, w, x, y);
        let t = p.sched.task(i as u64, (w * y) as u64).download_2d(&p.d_in, input, shape);
        between(t).readback_2d(work, &p.d_in, shape).submit().map_err(err)?;
    }
    p.sched.synchronize().map_err(err)
}

/// Both phases with their copies only, no FFT (`--copies-only`): what the copies alone
/// cost in the pipeline; `work` ends up equal to `input`.
pub(crate) fn run_copies_only(
    p: &Pipeline,
    input: &HostBuffer<C>,
    work: &HostBuffer<C>,
    x: usize,
    y: usize,
    n: usize,
) -> Result<Run, String> {
    let t0 = Instant::now();
    let col = copy_columns(p, input, work, x, y, n, |t| t)?;
    let h = y / n;
    for i in 0..n {
        let r = i * h * x..(i + 1) * h * x;
        let t = p.sched.task((n + i) as u64, (h * x) as u64).download(&p.d_in, 0, work, r.clone());
        t.readback(work, r, &p.d_in, 0).submit().map_err(err)?;
    }
    let row = p.sched.synchronize().map_err(err)?;
    Ok(Run { wall_ns: t0.elapsed().as_nanos() as u64, col, row })
}
