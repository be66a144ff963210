//! The checks a command passes as it is added, before any thread sees it: copy extents
//! and pitches (`copy`, `linear`), a launch against its kernel's parameters and CUDA's
//! launch limits (`check_launch`), and a host region for a callback (`host_region`).

use super::TaskBuilder;
use crate::error::Result;
use crate::kernel::{Arg, ArgValue, KernelHandle, LaunchShape};
use crate::memory::claims::Region;
use crate::memory::{target_of, DeviceData, Element, HostBuffer, HostShared};
use crate::stage::Stage;
use crate::task::command::{Command, CopyCmd, Direction};
use crate::task::{Copy2d, HostClaim};
use std::ops::RangeBounds;
use std::sync::Arc;

/// CUDA's launch limits, the same on every GPU since compute capability 3.0: checked
/// when a launch is added, so that it fails alike on both backends.
const MAX_GRID_X: u32 = (1 << 31) - 1;
const MAX_GRID_YZ: u32 = 65_535;
const MAX_BLOCK_XY: u32 = 1024;
const MAX_BLOCK_Z: u32 = 64;
const MAX_BLOCK_THREADS: u64 = 1024;

impl TaskBuilder<'_> {
    #[allow(clippy::too_many_arguments)]
    pub(super) fn copy<T: Element>(
        &self,
        dir: Direction,
        host: &HostBuffer<T>,
        dev: &impl DeviceData<T>,
        shape: Copy2d,
    ) -> Result<(Command, Option<HostClaim>)> {
        let target = target_of(dev);
        let kind = if dev.is_resident() { "resident buffer" } else { "device buffer" };
        let stage = match dir {
            Direction::Download => Stage::Download,
            Direction::Readback => Stage::Readback,
        };
        let size = std::mem::size_of::<T>();
        let Copy2d { host_offset, host_pitch, dev_offset, dev_pitch, width, height } = shape;
        if target.sched_id() != self.sched.id() {
            return Err(self.bad(stage, format!("{kind} {} belongs to another scheduler", dev.buffer_id())));
        }
        if width == 0 || height == 0 {
            return Err(self.bad(stage, format!("empty copy: width {width}, height {height} (both must be > 0)")));
        }
        if host_pitch < width || dev_pitch < width {
            return Err(self.bad(
                stage,
                format!("pitch smaller than width: host pitch {host_pitch}, device pitch {dev_pitch}, width {width} (elements)"),
            ));
        }
        let extent = |offset: usize, pitch: usize| {
            (height - 1).checked_mul(pitch).and_then(|r| r.checked_add(offset)).and_then(|r| r.checked_add(width))
        };
        match extent(host_offset, host_pitch) {
            Some(end) if end <= host.len() => {}
            end => {
                return Err(self.bad(
                    stage,
                    format!(
                        "host region ends at element {} but host buffer {} has {} elements",
                        end.map_or("overflow".to_string(), |e| e.to_string()),
                        host.id(),
                        host.len()
                    ),
                ))
            }
        }
        match extent(dev_offset, dev_pitch) {
            Some(end) if end <= dev.elements() => {}
            end => {
                return Err(self.bad(
                    stage,
                    format!(
                        "copy reaches element {} of {kind} {}, which has {} elements",
                        end.map_or("overflow".to_string(), |e| e.to_string()),
                        dev.buffer_id(),
                        dev.elements()
                    ),
                ))
            }
        }
        // The extents fit in their buffers, whose sizes in bytes fit in `isize`; only a
        // pitch that no row steps over (one row) can still overflow in bytes.
        let bytes = |name: &str, elements: usize| {
            elements.checked_mul(size).ok_or_else(|| {
                self.bad(
                    stage,
                    format!(
                        "{name} {elements} elements of {size} bytes overflows usize in bytes (at most {} elements)",
                        usize::MAX / size
                    ),
                )
            })
        };
        let cmd = CopyCmd {
            dir,
            host: host.shared().clone(),
            host_offset: bytes("host offset", host_offset)?,
            host_pitch: bytes("host pitch", host_pitch)?,
            dev: target,
            dev_offset: bytes("device offset", dev_offset)?,
            dev_pitch: bytes("device pitch", dev_pitch)?,
            width: bytes("width", width)?,
            height,
        };
        let region = Region { start: cmd.host_offset, width: cmd.width, pitch: cmd.host_pitch, height };
        let claim = HostClaim { host: host.shared().clone(), region, write: dir == Direction::Readback };
        Ok((Command::Copy(cmd), Some(claim)))
    }

    pub(super) fn linear<T: Element>(
        &self,
        stage: Stage,
        host: &HostBuffer<T>,
        range: impl RangeBounds<usize>,
    ) -> Result<std::ops::Range<usize>> {
        let r = crate::memory::host::resolve(range, host.len())
            .map_err(|m| self.bad(stage, format!("host buffer {}: {m}", host.id())))?;
        Ok(r)
    }

    pub(super) fn check_launch(
        &self,
        kernel: &KernelHandle,
        shape: LaunchShape,
        args: &[Arg],
    ) -> Result<Option<ExternalHome>> {
        let def = &kernel.inner.def;
        if kernel.inner.sched_id != self.sched.id() {
            return Err(self.bad(Stage::Kernel, format!("kernel `{}` was registered with another scheduler", def.name)));
        }
        // Compared without collecting (a launch allocates only its argument list).
        if args.len() != def.params.len() || args.iter().zip(&def.params).any(|(a, p)| a.param() != *p) {
            let got: Vec<_> = args.iter().map(|a| a.param()).collect();
            return Err(self.bad(
                Stage::Kernel,
                format!(
                    "arguments of `{}` do not match its parameters: expected {:?}, got {:?}",
                    def.name, def.params, got
                ),
            ));
        }
        for d in [shape.grid, shape.block] {
            if d.x == 0 || d.y == 0 || d.z == 0 {
                return Err(self.bad(
                    Stage::Kernel,
                    format!(
                        "launch of `{}` has a zero dimension: grid {:?}, block {:?}",
                        def.name, shape.grid, shape.block
                    ),
                ));
            }
        }
        let (grid, block) = (shape.grid, shape.block);
        for (what, value, max) in [
            ("grid x", grid.x, MAX_GRID_X),
            ("grid y", grid.y, MAX_GRID_YZ),
            ("grid z", grid.z, MAX_GRID_YZ),
            ("block x", block.x, MAX_BLOCK_XY),
            ("block y", block.y, MAX_BLOCK_XY),
            ("block z", block.z, MAX_BLOCK_Z),
        ] {
            if value > max {
                return Err(self.bad(
                    Stage::Kernel,
                    format!("launch of `{}`: {what} is {value}; CUDA allows at most {max}", def.name),
                ));
            }
        }
        match block.checked_count() {
            Some(n) if n <= MAX_BLOCK_THREADS => {}
            n => {
                return Err(self.bad(
                    Stage::Kernel,
                    format!(
                        "block of `{}` is {}×{}×{} = {} threads; at most {MAX_BLOCK_THREADS} are allowed",
                        def.name,
                        block.x,
                        block.y,
                        block.z,
                        n.map_or("more than u64::MAX".to_string(), |n| n.to_string())
                    ),
                ))
            }
        }
        let mut home = self.external;
        for a in args {
            match &a.0 {
                ArgValue::External { ordinal, .. } => home = Some(self.external_home(&def.name, *ordinal, home)?),
                ArgValue::Buffer(b) if b.sched_id != self.sched.id() => {
                    return Err(self.bad(Stage::Kernel, format!("device buffer {} belongs to another scheduler", b.id)));
                }
                #[cfg(feature = "resident")]
                ArgValue::Resident { buf, .. } if buf.sched_id != self.sched.id() => {
                    return Err(
                        self.bad(Stage::Kernel, format!("resident buffer {} belongs to another scheduler", buf.id))
                    );
                }
                #[cfg(feature = "resident")]
                ArgValue::BadRange(m) => return Err(self.bad(Stage::Kernel, format!("launch of `{}`: {m}", def.name))),
                _ => {}
            }
        }
        Ok(home)
    }

    /// A launch's argument list: one list, shared by the command, its twin and its
    /// lowering; an ended launch's where one is spare, else allocated.
    pub(super) fn arg_list(&self, args: &[Arg]) -> Arc<[ArgValue]> {
        if let Some(mut list) = self.sched.spare_args(args.len()) {
            if let Some(values) = Arc::get_mut(&mut list) {
                values.iter_mut().zip(args).for_each(|(v, a)| *v = a.0.clone());
                return list;
            }
        }
        args.iter().map(|a| a.0.clone()).collect()
    }

    /// Where external device memory on CUDA GPU `ordinal` binds the task ([`crate::Arg::external`]),
    /// given where earlier arguments bound it (`home`).
    ///
    /// # Errors
    /// [`Error::InvalidCommand`] on the simulator, for an ordinal that is none of the
    /// scheduler's GPUs, and for memory on two GPUs.
    fn external_home(&self, kernel: &str, ordinal: usize, home: Option<ExternalHome>) -> Result<ExternalHome> {
        if self.sched.machine().simulated() {
            return Err(self.bad(
                Stage::Kernel,
                format!(
                    "launch of `{kernel}`: external device memory (CUDA GPU {ordinal}) does not exist on the simulator"
                ),
            ));
        }
        let gpus = self.sched.gpu_info();
        let Some(gpu) = gpus.iter().position(|g| g.ordinal == ordinal) else {
            let ours: Vec<usize> = gpus.iter().map(|g| g.ordinal).collect();
            return Err(self.bad(
                Stage::Kernel,
                format!(
                    "launch of `{kernel}`: external device memory on CUDA GPU {ordinal}, which is not one of the \
                     scheduler's (CUDA GPUs {ours:?})"
                ),
            ));
        };
        match home {
            Some(h) if h.gpu != gpu => Err(self.bad(
                Stage::Kernel,
                format!("external device memory on CUDA GPUs {} and {ordinal}: a task runs on one GPU", h.ordinal),
            )),
            Some(h) => Ok(h),
            None => Ok(ExternalHome { gpu, ordinal, command: self.written }),
        }
    }

    pub(super) fn host_region<T: Element>(
        &self,
        host: &HostBuffer<T>,
        range: impl RangeBounds<usize>,
        _write: bool,
    ) -> Result<(Arc<HostShared>, Region)> {
        let r = self.linear(Stage::Cpu, host, range)?;
        if r.is_empty() {
            return Err(
                self.bad(Stage::Cpu, format!("empty host range {}..{} of buffer {}", r.start, r.end, host.id()))
            );
        }
        let size = std::mem::size_of::<T>();
        Ok((host.shared().clone(), Region::linear(r.start * size, (r.end - r.start) * size)))
    }
}

/// The GPU a task's external device memory binds it to: the scheduler's index, the CUDA
/// ordinal the memory named, and the first launch that named it.
#[derive(Clone, Copy, Debug)]
pub(super) struct ExternalHome {
    pub(super) gpu: usize,
    pub(super) ordinal: usize,
    pub(super) command: usize,
}
