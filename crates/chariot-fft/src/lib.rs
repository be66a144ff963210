//! # chariot-fft
//!
//! FFTs in chariot's GPU callbacks: cuFFT plans on the CUDA backend, rustfft on the
//! simulated one; and the 2-D transform on the CPU's cores.
//!
//! [`FftPlans`] is a plan cache keyed by (GPU, stream slot, [`FftShape`]). A task
//! bound to a slot uses that slot's plan, and a slot runs one task at a time, so a plan
//! never executes twice at once. A CPU callback may make the plan ahead
//! ([`FftPlans::prepare`], the paper's `MycufftPlan1dSetStream`); the GPU callback
//! ([`FftPlans::forward`]) binds it to the task's stream and enqueues the transform,
//! making the plan first if no callback did. On the sim backend the same call runs
//! rustfft on the task's simulated buffer.
//!
//! What the plans need of the runtime comes through its public door: a GPU's context
//! ([`chariot::cuda::GpuContext`]) to make plans in, and from the GPU callback's
//! [`GpuCall`] the task's stream and its buffers' device addresses.
//!
//! [`cpu_forward_2d`] is the 2-D transform on the CPU's cores, for references and for
//! comparison.

#![deny(missing_docs, missing_debug_implementations)]
#![deny(unsafe_op_in_unsafe_fn, clippy::undocumented_unsafe_blocks)]

mod cpu;
mod cufft;
mod plan;
#[cfg(test)]
mod tests;

pub use cpu::{cpu_forward_2d, transpose};

use chariot::callback::{CallInfo, GpuCall};
use chariot::cuda::GpuContext;
use chariot::resident::ResidentBuffer;
use chariot::{BoxError, DeviceBuffer, Scheduler};
use num_complex::Complex32;
use parking_lot::Mutex;
use plan::Plan;
use rustfft::FftPlanner;
use std::collections::HashMap;
use std::sync::Arc;

/// What one transform covers, in complex elements, row-major.
///
/// ```
/// use chariot_fft::FftShape;
/// assert_eq!(FftShape::Rows { len: 8, batch: 4 }.elements(), 32);
/// assert_eq!(FftShape::TwoD { rows: 4, cols: 8 }.elements(), 32);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FftShape {
    /// `batch` 1-D transforms of length `len`, over contiguous rows.
    Rows {
        /// Transform length (row length).
        len: usize,
        /// Rows.
        batch: usize,
    },
    /// One 2-D transform of `rows` rows of `cols` contiguous elements.
    TwoD {
        /// Rows (the slow dimension).
        rows: usize,
        /// Columns (contiguous).
        cols: usize,
    },
    /// `batch` 1-D transforms of length `len` over the first `batch` columns of a
    /// row-major matrix of `len` rows and `stride` columns (element k of column c at
    /// `c + k·stride`), in place: the column phase of a 2-D transform on data that
    /// stays on the GPU.
    Columns {
        /// Transform length (rows of the matrix).
        len: usize,
        /// Columns transformed (at most `stride`).
        batch: usize,
        /// Elements between rows.
        stride: usize,
    },
}

impl FftShape {
    /// Complex elements the transform reads and writes.
    pub fn elements(&self) -> usize {
        match *self {
            FftShape::Rows { len, batch } => len.saturating_mul(batch),
            FftShape::TwoD { rows, cols } => rows.saturating_mul(cols),
            FftShape::Columns { len, stride, .. } => len.saturating_mul(stride),
        }
    }

    fn check(&self) -> Result<(), BoxError> {
        let ok = match *self {
            FftShape::Rows { len, batch } => len > 0 && batch > 0,
            FftShape::TwoD { rows, cols } => rows > 0 && cols > 0,
            FftShape::Columns { len, batch, stride } => len > 0 && batch > 0 && batch <= stride,
        };
        if ok {
            Ok(())
        } else {
            Err(format!("empty FFT shape {self:?}").into())
        }
    }
}

type Key = (usize, usize, FftShape);

/// A cache of FFT plans for one scheduler: one plan per (GPU, stream slot, shape).
/// Share it with callbacks through an `Arc`.
///
/// ```
/// use chariot_fft::{FftPlans, FftShape};
/// use chariot::{Backend, Scheduler};
/// use chariot::callback::Resource;
/// use chariot::sim::SimProfile;
/// use num_complex::Complex32;
/// let sched = Scheduler::builder().backend(Backend::SimWith(SimProfile::instant())).streams(2).build()?;
/// let plans = FftPlans::new(&sched)?;
/// let (len, rows) = (64, 4);
/// let shape = FftShape::Rows { len, batch: rows };
/// let mut host = sched.alloc_host::<Complex32>(len * rows * 2)?;
/// host.write().iter_mut().step_by(len).for_each(|x| *x = Complex32::new(1.0, 0.0)); // impulses
/// let d = sched.alloc::<Complex32>(len * rows)?;
/// for i in 0..2 {
///     let r = i * len * rows..(i + 1) * len * rows;
///     let (p1, p2, d2) = (plans.clone(), plans.clone(), d.clone());
///     sched.task(i as u64, (len * rows) as u64)
///         .callback(Resource::Cpu, move |info| p1.prepare(info, shape))
///         .download(&d, 0, &host, r.clone())
///         .gpu_callback(move |call| p2.forward(call, &d2, shape))
///         .readback(&host, r, &d, 0)
///         .submit()?;
/// }
/// sched.synchronize()?;
/// assert!(host.read().iter().all(|x| (x.re - 1.0).abs() < 1e-6 && x.im.abs() < 1e-6)); // flat spectra
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct FftPlans {
    /// Each GPU's context, by index (CUDA); empty on sim.
    contexts: Vec<GpuContext>,
    cuda: Mutex<HashMap<Key, Arc<Plan>>>,
    cpu: Mutex<FftPlanner<f32>>,
}

impl FftPlans {
    /// An empty cache for `sched`'s GPUs.
    ///
    /// # Errors
    /// [`Error::CudaUnavailable`](chariot::Error::CudaUnavailable) on the CUDA backend
    /// when libcufft cannot be loaded.
    pub fn new(sched: &Scheduler) -> chariot::Result<Arc<FftPlans>> {
        let contexts: Vec<GpuContext> = (0..sched.gpu_count()).map_while(|gpu| GpuContext::of(sched, gpu)).collect();
        if !contexts.is_empty() {
            plan::present().map_err(|reason| chariot::Error::CudaUnavailable { reason })?;
        }
        Ok(Arc::new(FftPlans { contexts, cuda: Mutex::new(HashMap::new()), cpu: Mutex::new(FftPlanner::new()) }))
    }

    /// Whether the scheduler runs on CUDA (its GPUs have contexts).
    fn on_cuda(&self) -> bool {
        !self.contexts.is_empty()
    }

    /// Plans made so far (CUDA; 0 on sim).
    ///
    /// ```
    /// # use chariot::{Backend, Scheduler};
    /// # use chariot_fft::FftPlans;
    /// let sched = Scheduler::builder().backend(Backend::Sim).build()?;
    /// assert_eq!(FftPlans::new(&sched)?.len(), 0);
    /// # Ok::<(), chariot::Error>(())
    /// ```
    pub fn len(&self) -> usize {
        self.cuda.lock().len()
    }

    /// Whether no plan has been made.
    ///
    /// ```
    /// # use chariot::{Backend, Scheduler};
    /// # use chariot_fft::FftPlans;
    /// let sched = Scheduler::builder().backend(Backend::Sim).build()?;
    /// assert!(FftPlans::new(&sched)?.is_empty());
    /// # Ok::<(), chariot::Error>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn plan(&self, gpu: usize, stream: usize, shape: FftShape) -> Result<Arc<Plan>, BoxError> {
        let key = (gpu, stream, shape);
        if let Some(p) = self.cuda.lock().get(&key) {
            return Ok(p.clone());
        }
        let ctx =
            self.contexts.get(gpu).ok_or_else(|| format!("no GPU {gpu}: the scheduler has {}", self.contexts.len()))?;
        // Made outside the lock: planning takes milliseconds and must not stall a
        // dispatcher that only looks a plan up.
        let made = match shape {
            FftShape::Rows { len, batch } => Plan::rows(ctx.clone(), len, batch),
            FftShape::TwoD { rows, cols } => Plan::two_d(ctx.clone(), rows, cols),
            FftShape::Columns { len, batch, stride } => Plan::columns(ctx.clone(), len, batch, stride),
        }?;
        Ok(self.cuda.lock().entry(key).or_insert_with(|| Arc::new(made)).clone())
    }

    /// Makes the plan of `shape` for the task's GPU and stream slot if the cache has
    /// none (CUDA), or plans the rustfft transforms (sim). Meant for a CPU callback
    /// ahead of the task's download, so that planning overlaps the pipeline.
    ///
    /// # Errors
    /// An empty shape, or cuFFT's error.
    ///
    /// ```
    /// # use chariot::{Backend, Scheduler, TaskId};
    /// # use chariot::callback::CallInfo;
    /// # use chariot_fft::{FftPlans, FftShape};
    /// let sched = Scheduler::builder().backend(Backend::Sim).build()?;
    /// let plans = FftPlans::new(&sched)?;
    /// let info = CallInfo { task: TaskId(0), gpu: 0, stream: 0 };
    /// plans.prepare(&info, FftShape::Rows { len: 16, batch: 2 }).unwrap();
    /// assert!(plans.prepare(&info, FftShape::Rows { len: 0, batch: 2 }).is_err());
    /// # Ok::<(), chariot::Error>(())
    /// ```
    pub fn prepare(&self, info: &CallInfo, shape: FftShape) -> Result<(), BoxError> {
        shape.check()?;
        if self.on_cuda() {
            self.plan(info.gpu, info.stream, shape).map(|_| ())
        } else {
            let mut p = self.cpu.lock();
            match shape {
                FftShape::Rows { len, .. } | FftShape::Columns { len, .. } => drop(p.plan_fft_forward(len)),
                FftShape::TwoD { rows, cols } => {
                    p.plan_fft_forward(rows);
                    p.plan_fft_forward(cols);
                }
            }
            Ok(())
        }
    }

    /// Enqueues the forward (e^−2πi…) transform of `shape`, in place on the first
    /// `shape.elements()` elements of `buf`'s copy for this task, on the task's stream
    /// (CUDA); on sim, transforms them with rustfft at once. Call it from a
    /// [`gpu_callback`](chariot::TaskBuilder::gpu_callback); see [`FftPlans`].
    ///
    /// # Errors
    /// An empty shape, a buffer shorter than the shape, or cuFFT's error.
    pub fn forward(
        &self,
        call: &mut GpuCall<'_>,
        buf: &DeviceBuffer<Complex32>,
        shape: FftShape,
    ) -> Result<(), BoxError> {
        shape.check()?;
        if shape.elements() > buf.len() {
            return Err(format!("FFT of {} elements on a buffer of {} elements", shape.elements(), buf.len()).into());
        }
        if self.on_cuda() {
            let info = call.info();
            let plan = self.plan(info.gpu, info.stream, shape)?;
            let ptr = call.device_ptr(buf).ok_or("a simulated buffer given to cuFFT")?;
            return Ok(plan.forward_at(call, ptr, buf.len() * std::mem::size_of::<Complex32>())?);
        }
        let mut data = call.sim_buffer(buf).ok_or("neither a CUDA stream nor a simulated buffer")?;
        let data = &mut data[..shape.elements()];
        match shape {
            FftShape::Rows { len, .. } => {
                let fft = self.cpu.lock().plan_fft_forward(len);
                fft.process(data);
            }
            FftShape::TwoD { rows, cols } => {
                let (fr, fc) = {
                    let mut p = self.cpu.lock();
                    (p.plan_fft_forward(rows), p.plan_fft_forward(cols))
                };
                cpu::forward_2d_with(data, rows, cols, 1, &*fr, &*fc);
            }
            FftShape::Columns { len, batch, stride } => {
                let fft = self.cpu.lock().plan_fft_forward(len);
                cpu::columns(data, len, batch, stride, &*fft);
            }
        }
        Ok(())
    }

    /// [`forward`](FftPlans::forward) on a resident buffer: the transform of `shape`
    /// in place on elements `offset..` of `buf`'s copy on the task's GPU. Declare the
    /// use on the task (`TaskBuilder::reads_writes`), unless one of its downloads
    /// writes those elements.
    ///
    /// # Errors
    /// An empty shape, a shape past the buffer's end, no copy on this GPU, or cuFFT's
    /// error.
    pub fn forward_resident(
        &self,
        call: &mut GpuCall<'_>,
        buf: &ResidentBuffer<Complex32>,
        offset: usize,
        shape: FftShape,
    ) -> Result<(), BoxError> {
        shape.check()?;
        if offset.checked_add(shape.elements()).is_none_or(|end| end > buf.len()) {
            return Err(format!(
                "FFT of {} elements at element {offset} of a resident buffer of {} elements",
                shape.elements(),
                buf.len()
            )
            .into());
        }
        if self.on_cuda() {
            let info = call.info();
            let plan = self.plan(info.gpu, info.stream, shape)?;
            let ptr = call.resident_ptr(buf, offset).ok_or("no copy of the resident buffer on this GPU")?;
            return Ok(plan.forward_at(call, ptr, (buf.len() - offset) * std::mem::size_of::<Complex32>())?);
        }
        let (f1, f2) = {
            let mut p = self.cpu.lock();
            match shape {
                FftShape::Rows { len, .. } | FftShape::Columns { len, .. } => (p.plan_fft_forward(len), None),
                FftShape::TwoD { rows, cols } => (p.plan_fft_forward(rows), Some(p.plan_fft_forward(cols))),
            }
        };
        call.sim_resident(buf, offset, |data: &mut [Complex32]| {
            let data = &mut data[..shape.elements()];
            match (shape, &f2) {
                (FftShape::Columns { len, batch, stride }, _) => cpu::columns(data, len, batch, stride, &*f1),
                (FftShape::TwoD { rows, cols }, Some(fc)) => cpu::forward_2d_with(data, rows, cols, 1, &*f1, &**fc),
                _ => f1.process(data),
            }
        })
        .ok_or("neither a CUDA stream nor a simulated copy")?;
        Ok(())
    }
}

impl std::fmt::Debug for FftPlans {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let backend = if self.on_cuda() { "cuda" } else { "sim" };
        f.debug_struct("FftPlans").field("backend", &backend).field("plans", &self.len()).finish()
    }
}
