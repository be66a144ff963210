//! Lowering: a command becomes the backend's device operations (`backend::op`), here,
//! once for both backends. A copy is a copy operation on the physical memory of the
//! task's GPU and slot; a launch is the kernel's function with its arguments resolved
//! to the driver's words (CUDA) and its CPU twin bound to them (sim); a GPU callback
//! is a host function; a resident fetch is its plan's copies, peer copies and fills
//! (`ext::resident::task::lower_fetch`, through the seam).
//!
//! Nothing here allocates: operations borrow from the command, the argument words are
//! an inline array, and a callback is the box the command already holds.

use crate::backend::device::{PhysBuf, SimMemory};
use crate::backend::op::{CopyOp, Dev, LaunchOp, Op, Tag, Twin, MAX_PARAMS};
use crate::backend::op_failure::OpFailure;
use crate::callback::run_caught;
use crate::kernel::{ArgValue, KernelInner, LaunchShape, ScalarArgs, TwinArgs};
use crate::memory::DevTarget;
use crate::task::command::{Command, CopyCmd, LaunchCmd};
use std::sync::Arc;
use std::time::Duration;

/// Where the operations go: the backend's issue of one operation, failing with the
/// backend's error `E` (an [`OpFailure`] becomes one).
pub(crate) type Sink<'s, E> = dyn FnMut(Op<'_>) -> Result<(), E> + 's;

/// Lowers `cmd` for GPU `gpu`, stream slot `slot` and hands its operations to `sink`,
/// in order. `words`: whether launches need their argument words (CUDA). A GPU
/// callback is taken (it runs once).
pub(crate) fn lower<E: From<OpFailure>>(
    cmd: &mut Command,
    gpu: usize,
    slot: usize,
    tag: Tag,
    words: bool,
    sink: &mut Sink<'_, E>,
) -> Result<(), E> {
    match cmd {
        Command::Gpu(f) => {
            let mut callback = f.take().ok_or(OpFailure::CallbackRan)?;
            callback.task = tag.task;
            sink(Op::Host(callback))
        }
        #[cfg(feature = "resident")]
        Command::Fetch(f) => crate::seam::lower_fetch(f, gpu, sink),
        cmd => lower_data(cmd, gpu, slot, words, sink),
    }
}

/// Lowers a copy or a launch (nothing is taken: a replay window lowers its commands
/// each time it runs).
pub(crate) fn lower_data<E: From<OpFailure>>(
    cmd: &Command,
    gpu: usize,
    slot: usize,
    words: bool,
    sink: &mut Sink<'_, E>,
) -> Result<(), E> {
    match cmd {
        Command::Copy(c) => sink(Op::Copy(copy_op(c, gpu, slot)?)),
        Command::Launch(l) => {
            let mut args = [0u64; MAX_PARAMS];
            let n = if words { Some(launch_words(l, gpu, slot, &mut args)?) } else { None };
            let words = n.map(|n| &args[..n]);
            sink(Op::Launch(launch_op(l, gpu, words)))
        }
        Command::Gpu(_) => Err(OpFailure::CallbackShared.into()),
        Command::Cpu(_) => Err(OpFailure::CpuOnGpu.into()),
        #[cfg(feature = "resident")]
        Command::Fetch(_) => Err(OpFailure::FetchUnplanned.into()),
    }
}

/// A copy's operation on GPU `gpu`, slot `slot`.
pub(crate) fn copy_op(c: &CopyCmd, gpu: usize, slot: usize) -> Result<CopyOp<'_>, OpFailure> {
    let dev = dev_of(&c.dev, gpu, slot).ok_or(OpFailure::NoDeviceCopy)?;
    Ok(CopyOp {
        dir: c.dir,
        host: &c.host,
        host_offset: c.host_offset,
        host_pitch: c.host_pitch,
        dev,
        dev_offset: c.dev_offset,
        dev_pitch: c.dev_pitch,
        width: c.width,
        height: c.height,
    })
}

/// Writes a launch's argument words on GPU `gpu`, slot `slot` into `out`; how many.
pub(crate) fn launch_words(
    l: &LaunchCmd,
    gpu: usize,
    slot: usize,
    out: &mut [u64; MAX_PARAMS],
) -> Result<usize, OpFailure> {
    let n = l.args.len();
    if n > MAX_PARAMS {
        return Err(OpFailure::TooManyArgs { given: n, max: MAX_PARAMS });
    }
    for (w, a) in out.iter_mut().zip(l.args.iter()) {
        *w = arg_word(a, gpu, slot)?;
    }
    Ok(n)
}

/// A launch's operation on GPU `gpu`: on CUDA with its argument words (`Some(args)`),
/// on the sim (`None`) with its CPU twin and its share of the GPU (which CUDA does not
/// read, so a launch there does not work them out).
pub(crate) fn launch_op<'a>(l: &'a LaunchCmd, gpu: usize, words: Option<&'a [u64]>) -> LaunchOp<'a> {
    let s = l.shape;
    let sim = words.is_none();
    LaunchOp {
        func: l.kernel.functions.get(gpu),
        code: l.kernel.def.code(),
        grid: (s.grid.x, s.grid.y, s.grid.z),
        block: (s.block.x, s.block.y, s.block.z),
        shared_bytes: s.shared_bytes,
        args: words.unwrap_or(&[]),
        twin: if sim { l.twin.as_ref() } else { None },
        share: if sim { l.kernel.def.sim_share.unwrap_or_else(|| l.fill(gpu)) } else { 1.0 },
    }
}

/// The physical memory a device target has on GPU `gpu`, slot `slot`.
fn dev_of(dev: &DevTarget, gpu: usize, slot: usize) -> Option<Dev<'_>> {
    match dev {
        DevTarget::Virtual(b) => Some(Dev::Borrowed(b.phys(gpu, slot))),
        #[cfg(feature = "resident")]
        DevTarget::Resident(r) => r.copy(gpu).map(Dev::Held),
    }
}

/// A launch argument's word on GPU `gpu`, stream slot `slot` (see [`LaunchOp::args`]).
#[inline]
pub(crate) fn arg_word(a: &ArgValue, gpu: usize, slot: usize) -> Result<u64, OpFailure> {
    Ok(match a {
        ArgValue::Buffer(b) => match b.phys(gpu, slot) {
            PhysBuf::Cuda { ptr, .. } => *ptr,
            PhysBuf::Sim(_) => return Err(OpFailure::SimBufferOnCuda),
        },
        #[cfg(feature = "resident")]
        ArgValue::Resident { buf, bytes, .. } => match buf.copy(gpu).and_then(|c| c.cuda_ptr()) {
            Some(ptr) => ptr + bytes.start as u64,
            None => return Err(OpFailure::NoResidentCopy),
        },
        #[cfg(feature = "resident")]
        ArgValue::BadRange(m) => return Err(OpFailure::ArgRange(m.clone())),
        ArgValue::External { address, .. } => *address,
        ArgValue::I32(v) => *v as u32 as u64,
        ArgValue::U32(v) => *v as u64,
        ArgValue::I64(v) => *v as u64,
        ArgValue::U64(v) => *v,
        ArgValue::F32(v) => v.to_bits() as u64,
        ArgValue::F64(v) => v.to_bits(),
    })
}

/// A launch's CPU twin with its arguments: the sim's launch.
#[derive(Debug)]
pub(crate) struct TwinCall {
    pub(crate) kernel: Arc<KernelInner>,
    pub(crate) shape: LaunchShape,
    pub(crate) args: Arc<[ArgValue]>,
}

impl Twin for TwinCall {
    fn name(&self) -> &str {
        &self.kernel.def.name
    }

    fn modeled(&self) -> Option<Duration> {
        self.kernel.def.sim_cost.as_ref().map(|cost| cost(&self.shape, &ScalarArgs { values: &self.args }))
    }

    fn run(&self, gpu: usize, slot: usize) -> Result<(), OpFailure> {
        let kernel = &self.kernel;
        let args = &self.args[..];
        let twin = kernel.def.twin.as_ref().ok_or(OpFailure::NoTwin)?;
        // Lock each distinct memory once; arguments naming the same buffer share it. A
        // virtual buffer's argument sees the whole buffer, a resident one its range.
        let mut mems: Vec<Arc<SimMemory>> = Vec::new();
        let mut index = Vec::with_capacity(args.len());
        for a in args {
            let (mem, window) = match a {
                ArgValue::Buffer(b) => {
                    let PhysBuf::Sim(m) = b.phys(gpu, slot) else {
                        return Err(OpFailure::NotSimMemory { what: "device buffer" });
                    };
                    (m.clone(), 0..m.bytes)
                }
                #[cfg(feature = "resident")]
                ArgValue::Resident { buf, bytes, .. } => {
                    let copy = buf.copy(gpu).ok_or(OpFailure::NoResidentCopy)?;
                    let PhysBuf::Sim(m) = &*copy else { return Err(OpFailure::NotSimMemory { what: "resident copy" }) };
                    (m.clone(), bytes.clone())
                }
                // Refused at submit on the simulator; here only if that check is bypassed.
                ArgValue::External { .. } => return Err(OpFailure::NotSimMemory { what: "external device memory" }),
                _ => {
                    index.push(None);
                    continue;
                }
            };
            let pos = mems.iter().position(|x| Arc::ptr_eq(x, &mem)).unwrap_or_else(|| {
                mems.push(mem);
                mems.len() - 1
            });
            index.push(Some((pos, window)));
        }
        // Locked in address order: a resident copy is shared by the GPU's slots, and two
        // kernels naming two buffers in opposite orders must not hold one each.
        let mut order: Vec<usize> = (0..mems.len()).collect();
        order.sort_by_key(|&i| Arc::as_ptr(&mems[i]) as usize);
        let mut guards: Vec<Option<parking_lot::MutexGuard<'_, Vec<u128>>>> = mems.iter().map(|_| None).collect();
        for i in order {
            guards[i] = Some(mems[i].data.lock());
        }
        let memory = guards
            .iter_mut()
            .zip(&mems)
            .filter_map(|(g, m)| g.as_mut().map(|g| &mut bytemuck::cast_slice_mut(&mut g[..])[..m.bytes]))
            .collect();
        let mut targs = TwinArgs::new(self.shape, args, memory, index);
        run_caught(|| twin(&mut targs)).map_err(|failure| OpFailure::Twin { kernel: kernel.def.name.clone(), failure })
    }
}
