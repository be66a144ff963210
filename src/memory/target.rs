//! What a copy's device side may be: a virtual buffer (the copy of the task's GPU and
//! stream slot) or a resident buffer (the copy of the task's GPU). [`DeviceData`] is the
//! sealed trait `download` and `readback` take, so one method serves both.

use super::device::DeviceBufferInner;
use super::{DeviceBuffer, Element};
#[cfg(feature = "resident")]
use crate::seam::{ResidentBuffer, ResidentInner};
use std::sync::Arc;

/// The device side of a copy or a launch argument, resolved when a command is issued.
#[derive(Clone, Debug)]
pub(crate) enum DevTarget {
    /// A virtual buffer: one copy per GPU and stream slot.
    Virtual(Arc<DeviceBufferInner>),
    /// A resident buffer: one copy per GPU, made when a task binds it there.
    #[cfg(feature = "resident")]
    Resident(Arc<ResidentInner>),
}

impl DevTarget {
    /// The virtual buffer, where it is one.
    #[cfg(feature = "replay")]
    pub(crate) fn as_virtual(&self) -> Option<&Arc<DeviceBufferInner>> {
        match self {
            DevTarget::Virtual(b) => Some(b),
            #[cfg(feature = "resident")]
            DevTarget::Resident(_) => None,
        }
    }

    /// The scheduler that allocated it.
    pub(crate) fn sched_id(&self) -> u64 {
        match self {
            DevTarget::Virtual(b) => b.sched_id,
            #[cfg(feature = "resident")]
            DevTarget::Resident(r) => r.sched_id,
        }
    }
}

mod sealed {
    /// What the builder takes from device data; opaque outside the crate.
    #[derive(Debug)]
    pub struct Target(pub(crate) super::DevTarget);

    /// Only chariot's buffers are device data.
    pub trait Sealed {
        fn target(&self) -> Target;
    }
}

/// The device side of [`TaskBuilder::download`](crate::TaskBuilder::download) and
/// [`TaskBuilder::readback`](crate::TaskBuilder::readback): a virtual [`DeviceBuffer`]
/// or a [`ResidentBuffer`]. Sealed: only these two implement it.
///
/// ```
/// use chariot::{Backend, Scheduler};
/// use chariot::memory::DeviceData;
/// let s = Scheduler::builder().backend(Backend::Sim).build()?;
/// fn elements<T: chariot::memory::Element>(d: &impl DeviceData<T>) -> usize { d.elements() }
/// assert_eq!(elements(&s.alloc::<u8>(10)?), 10);
/// # #[cfg(feature = "resident")]
/// assert_eq!(elements(&s.alloc_resident::<u8>(20)?), 20);
/// # Ok::<(), chariot::Error>(())
/// ```
pub trait DeviceData<T: Element>: sealed::Sealed {
    /// Number of elements.
    fn elements(&self) -> usize;
    /// The buffer's id, as error messages name it.
    fn buffer_id(&self) -> u64;
    /// Whether it is a resident buffer (its copies are shared by tasks).
    fn is_resident(&self) -> bool;
}

impl<T: Element> sealed::Sealed for DeviceBuffer<T> {
    fn target(&self) -> sealed::Target {
        sealed::Target(DevTarget::Virtual(self.inner().clone()))
    }
}

impl<T: Element> DeviceData<T> for DeviceBuffer<T> {
    fn elements(&self) -> usize {
        self.len()
    }
    fn buffer_id(&self) -> u64 {
        self.id()
    }
    fn is_resident(&self) -> bool {
        false
    }
}

#[cfg(feature = "resident")]
impl<T: Element> sealed::Sealed for ResidentBuffer<T> {
    fn target(&self) -> sealed::Target {
        sealed::Target(DevTarget::Resident(self.inner().clone()))
    }
}

#[cfg(feature = "resident")]
impl<T: Element> DeviceData<T> for ResidentBuffer<T> {
    fn elements(&self) -> usize {
        self.len()
    }
    fn buffer_id(&self) -> u64 {
        self.id()
    }
    fn is_resident(&self) -> bool {
        true
    }
}

/// The target of `d`, for the builder.
pub(crate) fn target_of<T: Element>(d: &impl DeviceData<T>) -> DevTarget {
    sealed::Sealed::target(d).0
}
