//! Buffers the user names in commands: host buffers (pinned, guarded by region claims)
//! virtual device buffers (one physical copy per GPU and stream slot), and resident
//! buffers shared by tasks and kept on the GPUs (`resident.rs`).

pub(crate) mod claims;
mod device;
pub(crate) mod host;
mod target;

pub use device::DeviceBuffer;
#[cfg(feature = "replay")]
pub(crate) use device::GUEST_LANES;
pub(crate) use device::{DeviceBufferInner, FreeDevice, Graveyard, Quiet};
#[cfg(feature = "replay")]
pub(crate) use host::HeldTasks;
pub(crate) use host::HostShared;
pub use host::{HostBuffer, HostRead, HostWrite};
pub use target::DeviceData;
pub(crate) use target::{target_of, DevTarget};

/// Element types that may live in host and device buffers: plain data, any bit
/// pattern valid (`bytemuck::Pod`), at most 16-byte aligned.
pub trait Element: bytemuck::Pod + Send + Sync + 'static {}
impl<T: bytemuck::Pod + Send + Sync + 'static> Element for T {}

use crate::error::LengthProblem;

/// Bytes for `len` elements of `T`, refusing zero and overflow.
pub(crate) fn checked_bytes<T>(len: usize) -> crate::Result<usize> {
    let elem_size = std::mem::size_of::<T>();
    let bad = |problem| crate::Error::InvalidLength { len, elem_size, problem };
    if len == 0 {
        return Err(bad(LengthProblem::Empty));
    }
    if elem_size == 0 || std::mem::align_of::<T>() > 16 {
        return Err(bad(LengthProblem::ElementType));
    }
    len.checked_mul(elem_size).filter(|&b| b <= isize::MAX as usize).ok_or_else(|| bad(LengthProblem::Overflow))
}
