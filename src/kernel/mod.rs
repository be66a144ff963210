//! Kernels: CUDA C compiled by NVRTC for each GPU's architecture at registration, each
//! with a CPU twin that the sim backend runs so results stay checkable without a GPU.
//!
//! A kernel declares its parameters; a launch whose arguments do not match them is
//! refused when the command is added, never at dispatch.

pub(crate) mod cubin;
mod twin;

pub use twin::{ScalarArgs, TwinArg, TwinArgs};

use crate::backend::device::{Function, KernelCode};
use crate::callback::run_caught;
use crate::error::BoxError;
use crate::memory::{DeviceBuffer, DeviceBufferInner, Element};
#[cfg(feature = "resident")]
use crate::seam::{ResidentBuffer, ResidentInner};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

pub use crate::backend::device::Param;

/// One launch argument. Build with [`Arg::buffer`] or the scalar constructors.
///
/// ```
/// use chariot::{Arg, Param};
/// assert_eq!(Arg::u32(7).param(), Param::U32);
/// ```
#[derive(Clone, Debug)]
pub struct Arg(pub(crate) ArgValue);

#[derive(Clone, Debug)]
pub(crate) enum ArgValue {
    Buffer(Arc<DeviceBufferInner>),
    /// Bytes `bytes` of a resident buffer, passed as the address of the first; how the
    /// kernel uses them orders the task and moves the data.
    #[cfg(feature = "resident")]
    Resident {
        buf: Arc<ResidentInner>,
        bytes: std::ops::Range<usize>,
        read: bool,
        write: bool,
    },
    /// A resident range out of bounds: refused when the launch is added.
    #[cfg(feature = "resident")]
    BadRange(String),
    /// Device memory the runtime did not allocate, at `address` on CUDA GPU `ordinal`;
    /// `owner` keeps it allocated until the task has ended.
    External {
        address: u64,
        ordinal: usize,
        #[allow(dead_code)] // held, never read: it keeps the memory allocated
        owner: Arc<dyn std::any::Any + Send + Sync>,
    },
    I32(i32),
    U32(u32),
    I64(i64),
    U64(u64),
    F32(f32),
    F64(f64),
}

impl Arg {
    /// A device buffer, resolved to the physical copy of the task's GPU and stream.
    pub fn buffer<T: Element>(buf: &DeviceBuffer<T>) -> Self {
        Arg(ArgValue::Buffer(buf.inner().clone()))
    }
    /// Elements `range` of a resident buffer that the kernel only reads, passed as the
    /// address of the range's first element on the task's GPU (on sim, the CPU twin's
    /// [`TwinArgs::buffer`] is the range). The task runs after the last task that wrote
    /// them, and they are fetched to its GPU first.
    ///
    /// ```
    /// use chariot::{Arg, Backend, Param, Scheduler};
    /// let s = Scheduler::builder().backend(Backend::Sim).build()?;
    /// let w = s.alloc_resident::<f32>(1024)?;
    /// assert_eq!(Arg::reads(&w, 256..).param(), Param::Buffer);
    /// # Ok::<(), chariot::Error>(())
    /// ```
    #[cfg(feature = "resident")]
    pub fn reads<T: Element>(buf: &ResidentBuffer<T>, range: impl std::ops::RangeBounds<usize>) -> Self {
        Self::resident(buf, range, true, false)
    }

    /// Elements `range` of a resident buffer that the kernel only writes (every element
    /// of it, or what it leaves is undefined where a piece is covered whole): the task
    /// runs after the tasks that read or wrote them before, and what it writes is valid
    /// on its GPU alone once it ends.
    #[cfg(feature = "resident")]
    pub fn writes<T: Element>(buf: &ResidentBuffer<T>, range: impl std::ops::RangeBounds<usize>) -> Self {
        Self::resident(buf, range, false, true)
    }

    /// Elements `range` of a resident buffer that the kernel reads and writes (in place).
    #[cfg(feature = "resident")]
    pub fn reads_writes<T: Element>(buf: &ResidentBuffer<T>, range: impl std::ops::RangeBounds<usize>) -> Self {
        Self::resident(buf, range, true, true)
    }

    #[cfg(feature = "resident")]
    fn resident<T: Element>(
        buf: &ResidentBuffer<T>,
        range: impl std::ops::RangeBounds<usize>,
        read: bool,
        write: bool,
    ) -> Self {
        let size = std::mem::size_of::<T>();
        Arg(match crate::memory::host::resolve(range, buf.len()) {
            Ok(r) if !r.is_empty() => {
                ArgValue::Resident { buf: buf.inner().clone(), bytes: r.start * size..r.end * size, read, write }
            }
            Ok(r) => ArgValue::BadRange(format!("empty range {}..{} of resident buffer {}", r.start, r.end, buf.id())),
            Err(m) => ArgValue::BadRange(format!("resident buffer {}: {m}", buf.id())),
        })
    }

    /// Device memory the runtime did not allocate (another library's array: CuPy's,
    /// PyTorch's, cudarc's), passed as `address` on CUDA GPU `ordinal`. The task runs
    /// on that GPU, which must be one of the scheduler's, and never moves (if the GPU is
    /// lost the task fails); the simulator has no such memory and refuses the task.
    /// `owner` (the array itself, or `()`) is held until the task has ended, so that
    /// the memory stays allocated while it may run. Nothing orders the task against
    /// the memory's other users: finish their work on it before submitting, or order
    /// the tasks that touch it with [`TaskBuilder::after`](crate::TaskBuilder::after).
    ///
    /// ```
    /// use chariot::{Arg, Param};
    /// assert_eq!(Arg::external(0x7f00_0000_0000, 0, ()).param(), Param::Buffer);
    /// ```
    pub fn external(address: u64, ordinal: usize, owner: impl std::any::Any + Send + Sync) -> Self {
        Arg(ArgValue::External { address, ordinal, owner: Arc::new(owner) })
    }

    /// An `int`.
    pub fn i32(v: i32) -> Self {
        Arg(ArgValue::I32(v))
    }
    /// An `unsigned int`.
    pub fn u32(v: u32) -> Self {
        Arg(ArgValue::U32(v))
    }
    /// A `long long`.
    pub fn i64(v: i64) -> Self {
        Arg(ArgValue::I64(v))
    }
    /// An `unsigned long long`.
    pub fn u64(v: u64) -> Self {
        Arg(ArgValue::U64(v))
    }
    /// A `float`.
    pub fn f32(v: f32) -> Self {
        Arg(ArgValue::F32(v))
    }
    /// A `double`.
    pub fn f64(v: f64) -> Self {
        Arg(ArgValue::F64(v))
    }
    /// The parameter kind this argument fills.
    pub fn param(&self) -> Param {
        self.0.param()
    }
}

impl ArgValue {
    pub(crate) fn param(&self) -> Param {
        match self {
            ArgValue::Buffer(_) | ArgValue::External { .. } => Param::Buffer,
            #[cfg(feature = "resident")]
            ArgValue::Resident { .. } | ArgValue::BadRange(_) => Param::Buffer,
            ArgValue::I32(_) => Param::I32,
            ArgValue::U32(_) => Param::U32,
            ArgValue::I64(_) => Param::I64,
            ArgValue::U64(_) => Param::U64,
            ArgValue::F32(_) => Param::F32,
            ArgValue::F64(_) => Param::F64,
        }
    }
}

/// Grid or block dimensions.
///
/// ```
/// use chariot::kernel::Dim3;
/// assert_eq!(Dim3::from(128), Dim3 { x: 128, y: 1, z: 1 });
/// assert_eq!(Dim3::from((4, 2)).count(), 8);
/// let huge = Dim3::from((u32::MAX, u32::MAX, u32::MAX));
/// assert_eq!(huge.checked_count(), None);
/// assert_eq!(huge.count(), u64::MAX);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dim3 {
    /// x extent.
    pub x: u32,
    /// y extent.
    pub y: u32,
    /// z extent.
    pub z: u32,
}

impl Dim3 {
    /// x·y·z, saturating at `u64::MAX` (three `u32` can multiply past it).
    pub fn count(&self) -> u64 {
        self.checked_count().unwrap_or(u64::MAX)
    }

    /// x·y·z, or `None` where it passes `u64::MAX`.
    pub fn checked_count(&self) -> Option<u64> {
        (self.x as u64).checked_mul(self.y as u64)?.checked_mul(self.z as u64)
    }
}

impl From<u32> for Dim3 {
    fn from(x: u32) -> Self {
        Dim3 { x, y: 1, z: 1 }
    }
}
impl From<(u32, u32)> for Dim3 {
    fn from((x, y): (u32, u32)) -> Self {
        Dim3 { x, y, z: 1 }
    }
}
impl From<(u32, u32, u32)> for Dim3 {
    fn from((x, y, z): (u32, u32, u32)) -> Self {
        Dim3 { x, y, z }
    }
}

/// Shape of one launch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchShape {
    /// Blocks in the grid.
    pub grid: Dim3,
    /// Threads in a block.
    pub block: Dim3,
    /// Dynamic shared memory per block, in bytes.
    pub shared_bytes: u32,
}

type TwinFn = dyn Fn(&mut TwinArgs<'_>) -> Result<(), BoxError> + Send + Sync;
type CostFn = dyn Fn(&LaunchShape, &ScalarArgs<'_>) -> Duration + Send + Sync;

/// A kernel to register with [`Scheduler::register_kernel`](crate::Scheduler::register_kernel):
/// its CUDA C source, its entry point, its parameters and its CPU twin.
///
/// ```
/// use chariot::{Kernel, Param};
/// let k = Kernel::new("scale", r#"extern "C" __global__ void scale(float* x, unsigned n, float a) {
///         unsigned i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] *= a; }"#)
///     .params([Param::Buffer, Param::U32, Param::F32])
///     .cpu_twin(|args| {
///         let (n, a) = (args.u32(1)? as usize, args.f32(2)?);
///         for x in &mut args.buffer_mut::<f32>(0)?[..n] { *x *= a; }
///         Ok(())
///     });
/// assert_eq!(k.name(), "scale");
/// ```
#[derive(Clone)]
pub struct Kernel {
    pub(crate) name: String,
    pub(crate) source: String,
    pub(crate) params: Vec<Param>,
    pub(crate) twin: Option<Arc<TwinFn>>,
    pub(crate) sim_cost: Option<Arc<CostFn>>,
    pub(crate) sim_share: Option<f64>,
}

impl Kernel {
    /// A kernel named `name` (its `extern "C" __global__` entry point) in `source`.
    pub fn new(name: impl Into<String>, source: impl Into<String>) -> Self {
        Kernel {
            name: name.into(),
            source: source.into(),
            params: Vec::new(),
            twin: None,
            sim_cost: None,
            sim_share: None,
        }
    }

    /// Declares the parameters, in order.
    pub fn params(mut self, params: impl IntoIterator<Item = Param>) -> Self {
        self.params = params.into_iter().collect();
        self
    }

    /// The CPU twin the sim backend runs in place of the kernel: same arguments, same
    /// effect on the buffers.
    pub fn cpu_twin(
        mut self,
        twin: impl Fn(&mut TwinArgs<'_>) -> Result<(), BoxError> + Send + Sync + 'static,
    ) -> Self {
        self.twin = Some(Arc::new(twin));
        self
    }

    /// How long the kernel takes on the simulated GPU, given the launch. Without it the
    /// sim backend charges the CPU twin's own run time.
    pub fn sim_cost(
        mut self,
        cost: impl Fn(&LaunchShape, &ScalarArgs<'_>) -> Duration + Send + Sync + 'static,
    ) -> Self {
        self.sim_cost = Some(Arc::new(cost));
        self
    }

    /// The share of a simulated GPU's SMs the kernel keeps busy while it runs alone, in
    /// (0, 1] (default: its grid over one full wave, at most 1). A kernel whose last
    /// blocks run far longer than the others (a chunk's longest subject, say) fills the
    /// GPU by its grid and yet leaves most SMs idle most of its time: a smaller share
    /// lets the sim show what running such kernels side by side gains. Only the sim
    /// backend reads it; another value is [`Error::KernelInvalid`](crate::Error::KernelInvalid)
    /// at registration.
    ///
    /// ```
    /// use chariot::{Backend, Kernel, Scheduler};
    /// let s = Scheduler::builder().backend(Backend::Sim).build()?;
    /// let tails = Kernel::new("tails", "").cpu_twin(|_| Ok(())).sim_sm_share(0.2);
    /// assert!(s.register_kernel(tails).is_ok());
    /// let bad = Kernel::new("bad", "").cpu_twin(|_| Ok(())).sim_sm_share(1.5);
    /// assert!(s.register_kernel(bad).is_err());
    /// # Ok::<(), chariot::Error>(())
    /// ```
    pub fn sim_sm_share(mut self, share: f64) -> Self {
        self.sim_share = Some(share);
        self
    }

    /// The entry point's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The CUDA C source.
    ///
    /// ```
    /// use chariot::{Kernel, Param};
    /// let k = Kernel::new("nop", "extern \"C\" __global__ void nop(unsigned n) {}").params([Param::U32]);
    /// assert!(k.source().contains("__global__"));
    /// assert_eq!(k.param_list(), &[Param::U32]);
    /// assert!(!k.has_cpu_twin());
    /// assert!(k.cpu_twin(|_| Ok(())).has_cpu_twin());
    /// ```
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The declared parameters, in order.
    pub fn param_list(&self) -> &[Param] {
        &self.params
    }

    /// Whether the kernel has a CPU twin.
    pub fn has_cpu_twin(&self) -> bool {
        self.twin.is_some()
    }

    /// What the backend compiles, loads and checks of it.
    pub(crate) fn code(&self) -> KernelCode<'_> {
        KernelCode { name: &self.name, source: &self.source, params: &self.params }
    }

    /// Runs the CPU twin once on host memory, as the sim backend runs it for a launch:
    /// for code that runs the kernel without a scheduler, such as the hand-written
    /// pipelines chariot is measured against. A [`TwinArg::Buffer`] names one of
    /// `buffers` by index (two arguments may name the same buffer); each buffer must be
    /// aligned for the element type the twin reads it as, as a `Vec<u128>`'s bytes are.
    /// A panic of the twin comes back as an error.
    ///
    /// ```
    /// use chariot::{Kernel, Param};
    /// use chariot::kernel::{LaunchShape, TwinArg};
    /// let k = Kernel::new("inc", "").params([Param::Buffer, Param::U32]).cpu_twin(|a| {
    ///     let n = a.u32(1)? as usize;
    ///     a.buffer_mut::<u32>(0)?[..n].iter_mut().for_each(|x| *x += 1);
    ///     Ok(())
    /// });
    /// let mut store = vec![0u128; 1];
    /// let bytes: &mut [u8] = bytemuck::cast_slice_mut(&mut store[..]);
    /// let shape = LaunchShape { grid: 1.into(), block: 4.into(), shared_bytes: 0 };
    /// k.run_cpu_twin(shape, &[TwinArg::Buffer(0), TwinArg::U32(4)], &mut [bytes])?;
    /// assert_eq!(bytemuck::cast_slice::<u128, u32>(&store[..]), &[1, 1, 1, 1]);
    /// // An argument naming a buffer that is not there is an error, not a panic.
    /// assert!(k.run_cpu_twin(shape, &[TwinArg::Buffer(1), TwinArg::U32(4)], &mut []).is_err());
    /// # Ok::<(), chariot::BoxError>(())
    /// ```
    pub fn run_cpu_twin(
        &self,
        shape: LaunchShape,
        args: &[TwinArg],
        buffers: &mut [&mut [u8]],
    ) -> Result<(), BoxError> {
        let twin = self.twin.as_ref().ok_or_else(|| format!("kernel `{}` has no CPU twin", self.name))?;
        if args.len() != self.params.len() {
            return Err(
                format!("kernel `{}` takes {} arguments, {} given", self.name, self.params.len(), args.len()).into()
            );
        }
        let mut values = Vec::with_capacity(args.len());
        let mut index = Vec::with_capacity(args.len());
        for (i, a) in args.iter().enumerate() {
            index.push(match *a {
                TwinArg::Buffer(b) if b >= buffers.len() => {
                    return Err(format!("argument {i} names buffer {b}, {} given", buffers.len()).into())
                }
                TwinArg::Buffer(b) => Some((b, 0..buffers[b].len())),
                _ => None,
            });
            values.push(match *a {
                TwinArg::I32(v) => ArgValue::I32(v),
                TwinArg::U32(v) => ArgValue::U32(v),
                TwinArg::I64(v) => ArgValue::I64(v),
                TwinArg::U64(v) => ArgValue::U64(v),
                TwinArg::F32(v) => ArgValue::F32(v),
                TwinArg::F64(v) => ArgValue::F64(v),
                // A placeholder: the twin reaches buffers through `index`, not values.
                TwinArg::Buffer(_) => ArgValue::U64(0),
            });
        }
        let memory = buffers.iter_mut().map(|b| &mut **b).collect();
        let mut targs = TwinArgs::new(shape, &values, memory, index);
        run_caught(|| twin(&mut targs)).map_err(Into::into)
    }
}

impl std::fmt::Debug for Kernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Kernel")
            .field("name", &self.name)
            .field("params", &self.params)
            .field("cpu_twin", &self.twin.is_some())
            .finish()
    }
}

/// A kernel registered on every GPU of a scheduler; name it in
/// [`TaskBuilder::launch`](crate::TaskBuilder::launch).
#[derive(Clone, Debug)]
pub struct KernelHandle {
    pub(crate) inner: Arc<KernelInner>,
}

impl KernelHandle {
    /// The kernel's name.
    pub fn name(&self) -> &str {
        &self.inner.def.name
    }
}

/// A registered kernel: its definition and its loaded function on each GPU.
///
/// Aligned to 128 bytes, so that in its `Arc` the count every launch moves (a clone at
/// submit, a drop as the task is emptied) has its lines to itself, away from the
/// fields the dispatchers read.
#[derive(Debug)]
#[repr(align(128))]
pub(crate) struct KernelInner {
    pub(crate) def: Kernel,
    /// The scheduler it was registered with.
    pub(crate) sched_id: u64,
    /// Per GPU (cuda backend): the loaded function. Empty on sim.
    pub(crate) functions: Vec<Function>,
    /// Per launch shape (threads a block, dynamic shared bytes): the blocks one full
    /// wave of each GPU holds (SMs × resident blocks per SM), asked once per shape.
    pub(crate) waves: parking_lot::Mutex<Vec<(LaunchKey, Arc<Waves>)>>,
    /// The first shape asked and its waves, read without a lock: most kernels launch
    /// with one shape (perf on an H200's host, 2026-12-01: the lookup under the lock
    /// took 26 ns a launch, this one 11).
    first_waves: std::sync::OnceLock<(LaunchKey, Arc<Waves>)>,
    /// The launches already noted in the scheduler's kernel uses (`Scheduler::note_launch`).
    pub(crate) noted: Noted,
}

/// The range of blocks and the widest wave of a kernel's launches noted so far: a
/// launch inside it changes nothing, so it is not noted again (a lock and a search by
/// name a launch otherwise). It only grows, as the uses it mirrors do.
#[derive(Debug)]
pub(crate) struct Noted {
    min_blocks: AtomicU64,
    max_blocks: AtomicU64,
    wave: AtomicU32,
}

impl Default for Noted {
    fn default() -> Self {
        Noted { min_blocks: AtomicU64::new(u64::MAX), max_blocks: AtomicU64::new(0), wave: AtomicU32::new(0) }
    }
}

impl Noted {
    /// Whether a launch of `blocks` blocks and wave `wave` is inside what was noted.
    pub(crate) fn covers(&self, blocks: u64, wave: u32) -> bool {
        self.min_blocks.load(Ordering::Relaxed) <= blocks
            && blocks <= self.max_blocks.load(Ordering::Relaxed)
            && wave <= self.wave.load(Ordering::Relaxed)
    }

    /// Takes in a launch, once it is noted in the uses.
    pub(crate) fn widen(&self, blocks: u64, wave: u32) {
        self.min_blocks.fetch_min(blocks, Ordering::Relaxed);
        self.max_blocks.fetch_max(blocks, Ordering::Relaxed);
        self.wave.fetch_max(wave, Ordering::Relaxed);
    }
}

/// A launch's threads a block and dynamic shared bytes: what its occupancy depends on.
pub(crate) type LaunchKey = (u32, u32);

/// Per GPU, the blocks of one launch shape that one full wave holds
/// ([`KernelInner::waves`]). Aligned to 128 bytes, so that in its `Arc` the count each
/// launch moves is on lines of its own, not on the one the dispatchers read these from.
#[derive(Debug)]
#[repr(align(128))]
pub(crate) struct Waves(pub(crate) Box<[u32]>);

impl KernelInner {
    /// The blocks of this kernel that one full wave of each GPU of `machine` holds with
    /// this block and dynamic shared memory (see `Machine::waves`). Asked once per
    /// shape and kept.
    pub(crate) fn waves(&self, machine: &crate::backend::Machine, block_threads: u32, shared_bytes: u32) -> Arc<Waves> {
        let key = (block_threads, shared_bytes);
        if let Some((k, w)) = self.first_waves.get() {
            if *k == key {
                return w.clone();
            }
        }
        if let Some((_, w)) = self.waves.lock().iter().find(|(k, _)| *k == key) {
            return w.clone();
        }
        let waves = Arc::new(Waves(machine.waves(&self.functions, block_threads, shared_bytes)));
        self.waves.lock().push((key, waves.clone()));
        let _ = self.first_waves.set((key, waves.clone())); // taken by the first shape asked
        waves
    }

    pub(crate) fn new(def: Kernel, sched_id: u64, functions: Vec<Function>) -> Self {
        KernelInner {
            def,
            sched_id,
            functions,
            waves: Default::default(),
            first_waves: Default::default(),
            noted: Noted::default(),
        }
    }
}

#[cfg(test)]
mod noted_test {
    use super::Noted;

    #[test]
    fn a_launch_is_covered_only_inside_what_was_noted() {
        let n = Noted::default();
        assert!(!n.covers(1, 0), "nothing noted covers nothing");
        n.widen(8, 3);
        assert!(n.covers(8, 3) && n.covers(8, 1));
        assert!(!n.covers(7, 3) && !n.covers(9, 3) && !n.covers(8, 4));
        n.widen(2, 1);
        n.widen(16, 2);
        assert!(n.covers(2, 3) && n.covers(12, 0) && n.covers(16, 3));
        assert!(!n.covers(1, 0) && !n.covers(17, 0) && !n.covers(4, 5));
    }
}
