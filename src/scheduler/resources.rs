//! What a scheduler hands out: host buffers (pinned on CUDA), virtual device buffers,
//! kernels registered on every GPU, and the occupancy a launch would have.

use super::Scheduler;
use crate::backend::op::MAX_PARAMS;
use crate::error::{Error, Result};
use crate::kernel::{Kernel, KernelHandle, KernelInner};
use crate::memory::{checked_bytes, DeviceBuffer, DeviceBufferInner, Element, HostBuffer};
use crate::report::KernelUse;
#[cfg(feature = "resident")]
use crate::seam::{ResidentBuffer, ResidentInner};
use std::sync::Arc;

impl Scheduler {
    /// Allocates a host buffer of `len` elements: pinned and portable on CUDA
    /// (not write-combined), ordinary memory on sim; zeroed.
    ///
    /// # Errors
    /// [`Error::InvalidLength`] for 0 elements or a size that overflows,
    /// [`Error::OutOfMemory`] if the allocation fails.
    pub fn alloc_host<T: Element>(&self, len: usize) -> Result<HostBuffer<T>> {
        let bytes = checked_bytes::<T>(len)?;
        Ok(HostBuffer::new(self.machine.alloc_host(bytes)?, len))
    }

    /// Allocates a virtual device buffer of `len` elements: one physical buffer per GPU
    /// and stream slot (D·S in all), allocated now so that running out of memory shows
    /// here and not in the middle of a run.
    ///
    /// # Errors
    /// [`Error::InvalidLength`] for 0 elements or a size that overflows,
    /// [`Error::OutOfMemory`] if a GPU cannot hold them: `bytes` is one copy's size, the
    /// message says how many copies (S per GPU, D·S in all) and bytes the buffer needs;
    /// the copies already made are given back.
    pub fn alloc<T: Element>(&self, len: usize) -> Result<DeviceBuffer<T>> {
        let bytes = checked_bytes::<T>(len)?;
        let (d, s) = (self.gpu_count(), self.config.streams);
        let mut phys = Vec::with_capacity(d * s);
        for g in 0..d {
            for _ in 0..s {
                match self.machine.alloc_device(g, bytes) {
                    Ok(p) => phys.push(p),
                    Err(e) => {
                        let made = phys.len();
                        self.machine.free_device(phys);
                        return Err(match e {
                            Error::OutOfMemory { what, bytes, message } => Error::OutOfMemory {
                                what,
                                message: format!(
                                    "{message}; a device buffer needs one copy per stream on every GPU: 1 copy per \
                                     stream × {s} streams × {d} GPU(s) = {} copies of {bytes} bytes, {} bytes in all; \
                                     copy {} failed and the {made} made were given back (use fewer streams or a \
                                     smaller buffer)",
                                    d * s,
                                    (d * s) as u128 * bytes as u128,
                                    made + 1,
                                ),
                                bytes,
                            },
                            other => other,
                        });
                    }
                }
            }
        }
        Ok(DeviceBuffer::new(DeviceBufferInner::new(self.id, s, bytes, phys, self.graveyard.clone()), len))
    }

    /// Allocates a resident buffer of `len` elements, one piece: data shared by tasks
    /// and kept on the GPUs between them (see [`ResidentBuffer`]). Its copies are made
    /// on a GPU when a task first uses it there; its content starts as zeros.
    ///
    /// # Errors
    /// [`Error::InvalidLength`] for 0 elements or a size that overflows;
    /// [`Error::InvalidConfig`] on a machine of more than 64 GPUs.
    #[cfg(feature = "resident")]
    pub fn alloc_resident<T: Element>(&self, len: usize) -> Result<ResidentBuffer<T>> {
        self.alloc_resident_pieces(len, len)
    }

    /// Allocates a resident buffer of `len` elements cut into pieces of `piece_len`
    /// elements (the last may hold fewer): the unit of validity, of copies between GPUs
    /// and of dependencies. A task that touches one element of a piece depends on, and
    /// fetches, the whole piece; tasks on different pieces are independent.
    ///
    /// ```
    /// use chariot::{Backend, Error, Scheduler};
    /// let s = Scheduler::builder().backend(Backend::Sim).build()?;
    /// let m = s.alloc_resident_pieces::<f32>(1000, 300)?;
    /// assert_eq!((m.pieces(), m.piece_len()), (4, 300));
    /// assert!(matches!(s.alloc_resident_pieces::<f32>(1000, 0), Err(Error::InvalidLength { .. })));
    /// # Ok::<(), chariot::Error>(())
    /// ```
    ///
    /// # Errors
    /// Those of [`alloc_resident`](Scheduler::alloc_resident), and
    /// [`Error::InvalidLength`] for a piece of 0 elements or more than `len`.
    #[cfg(feature = "resident")]
    pub fn alloc_resident_pieces<T: Element>(&self, len: usize, piece_len: usize) -> Result<ResidentBuffer<T>> {
        let bytes = checked_bytes::<T>(len)?;
        if piece_len == 0 || piece_len > len {
            return Err(Error::InvalidLength {
                len: piece_len,
                elem_size: std::mem::size_of::<T>(),
                problem: crate::error::LengthProblem::Piece { max: len },
            });
        }
        let d = self.gpu_count();
        if d > crate::seam::MAX_GPUS {
            return Err(Error::InvalidConfig {
                name: "gpus",
                value: d.to_string(),
                allowed: format!("at most {} where resident buffers are used", crate::seam::MAX_GPUS),
            });
        }
        let piece_bytes = piece_len * std::mem::size_of::<T>();
        let inner = ResidentInner::new(self.id, d, bytes, piece_bytes, self.machine.clone(), self.graveyard.clone());
        let buf = ResidentBuffer::new(inner, len);
        self.shared.resident.add(buf.inner());
        Ok(buf)
    }

    /// Compiles `kernel` with NVRTC for each GPU's architecture and loads it (CUDA), or
    /// checks it has a CPU twin (sim). On sim, where libnvrtc loads, its source (if it
    /// has one) is compiled too, for compute_90, and its entry point's parameters are
    /// checked against those declared; where libnvrtc does not load, the process says
    /// once that kernels are not compiled.
    ///
    /// # Errors
    /// [`Error::KernelCompile`] with NVRTC's log (naming the line), [`Error::KernelInvalid`]
    /// for a missing entry point, parameters other than declared (count or sizes, sim)
    /// or (sim) a missing CPU twin.
    pub fn register_kernel(&self, kernel: Kernel) -> Result<KernelHandle> {
        if kernel.name.is_empty() {
            return Err(Error::KernelInvalid { kernel: kernel.name, message: "the name is empty".into() });
        }
        if let Some(share) = kernel.sim_share.filter(|s| !(s.is_finite() && *s > 0.0 && *s <= 1.0)) {
            return Err(Error::KernelInvalid {
                kernel: kernel.name.clone(),
                message: format!("sim_sm_share = {share}; must be in (0, 1] (a share of the SMs)"),
            });
        }
        if kernel.params.len() > MAX_PARAMS {
            return Err(Error::KernelInvalid {
                kernel: kernel.name.clone(),
                message: format!("{} parameters; at most {MAX_PARAMS} are supported", kernel.params.len()),
            });
        }
        let functions = self.machine.load_kernel(kernel.code(), kernel.twin.is_some())?;
        Ok(KernelHandle { inner: Arc::new(KernelInner::new(kernel, self.id, functions)) })
    }

    /// The share of GPU `gpu`'s SMs a launch of `kernel` with this shape occupies while
    /// it runs alone: its blocks over one full wave (SMs × resident blocks per SM, from
    /// the occupancy calculator on CUDA), at most 1. The kernel stage admits kernels by
    /// it, and a bound that adds kernels up should take each kernel's time times it.
    /// `None` for a GPU index out of range.
    ///
    /// ```
    /// use chariot::{Backend, Kernel, Scheduler};
    /// let s = Scheduler::builder().backend(Backend::Sim).build()?;
    /// let k = s.register_kernel(Kernel::new("k", "").cpu_twin(|_| Ok(())))?;
    /// assert_eq!(s.launch_fill(0, &k, 132 * 4, 256, 0), Some(0.5)); // 8 blocks of 256 an SM
    /// assert_eq!(s.launch_fill(0, &k, 100_000, 256, 0), Some(1.0));
    /// assert_eq!(s.launch_fill(9, &k, 1, 1, 0), None);
    /// # Ok::<(), chariot::Error>(())
    /// ```
    pub fn launch_fill(
        &self,
        gpu: usize,
        kernel: &KernelHandle,
        grid: impl Into<crate::kernel::Dim3>,
        block: impl Into<crate::kernel::Dim3>,
        shared_bytes: u32,
    ) -> Option<f64> {
        if gpu >= self.gpu_count() {
            return None;
        }
        let (grid, block) = (grid.into(), block.into());
        let threads = u32::try_from(block.count()).unwrap_or(u32::MAX);
        let wave = kernel.inner.waves(&self.machine, threads, shared_bytes).0[gpu];
        Some(if wave == 0 { 1.0 } else { (grid.count() as f64 / wave as f64).min(1.0) })
    }

    /// Notes a launch of `blocks` blocks of `kernel` (one wave of the first GPU holds
    /// `wave`), for the report's line on the kernel's concurrency.
    /// An emptied task of an ended replay window for a new task to fill, if any.
    pub(crate) fn spare_task(&self) -> Option<Box<crate::task::Task>> {
        self.shared.windows.take_spare()
    }

    /// An argument list of `n` values of an ended launch to fill, if any.
    pub(crate) fn spare_args(&self, n: usize) -> Option<Arc<[crate::kernel::ArgValue]>> {
        self.shared.windows.take_spare_args(n)
    }

    pub(crate) fn note_launch(&self, kernel: &crate::kernel::KernelInner, blocks: u64, wave: u32) {
        if kernel.noted.covers(blocks, wave) {
            return;
        }
        let mut kernels = self.shared.records.kernels.lock();
        if KernelUse::note(&mut kernels.uses, &kernel.def.name, blocks, wave) {
            kernels.changes += 1;
        }
        // After the use took it in, under the lock: a launch that finds itself covered
        // was noted.
        kernel.noted.widen(blocks, wave);
    }
}
