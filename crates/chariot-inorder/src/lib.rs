//! # chariot-inorder
//!
//! The hand-written, in-order pipeline of a stream application: what a CUDA programmer
//! writes without chariot, and what chariot's stream applications are measured against
//! in the same run. Producer threads prepare chunks into pinned staging slots; the
//! calling thread issues chunk i on stream i mod S, in order, and before reusing a
//! stream waits for that stream's previous chunk (its event) and consumes its output.
//!
//! [`in_order`] is the safe entry point; it runs on a CUDA GPU (plain driver calls on
//! the primary context, [`rig`]) or on the kernel's CPU twin ([`InOrderDevice::CpuTwin`]),
//! for checking a pipeline's wiring with no GPU.
//!
//! This crate is a baseline, not part of the runtime: it depends on chariot only for
//! its kernel type, its NVRTC compile and its error texts. chariot-align's `bench` and
//! the studies (chariot-studies) use it; the runtime never does.

#![deny(missing_docs, missing_debug_implementations)]

mod pipeline;
mod primary;
pub mod rig;

use chariot::memory::Element;
use chariot::{BoxError, Kernel};
pub use pipeline::{DeviceArg, InOrderDevice, InOrderError, InOrderLaunch, InOrderPlan, InOrderTiming, Prepared};

/// Runs `plan.chunks` chunks through a hand-written, in-order pipeline of `kernel` on
/// `plan.streams` streams, as a CUDA programmer writes it without chariot:
///
/// 1. `plan.readers` producer threads fill pinned staging buffers: thread r calls
///    `produce(i, staging)` for chunks i = r, r + readers, …, each into a free slot;
///    S + readers slots exist, so the producers run at most `readers` chunks ahead of
///    the GPU, and each waits for a free slot before it reads.
/// 2. The calling thread takes the chunks in order. For chunk i on stream s = i mod S
///    it first waits for the stream's previous chunk (its event) and calls
///    `consume(that chunk, meta, output)` itself, then issues chunk i's download, its
///    launches and its readback on stream s, and records the stream's event.
/// 3. At the end it waits for and consumes the last S chunks, in order.
///
/// Consumers run on the calling thread, between issues: the other S − 1 streams keep
/// the GPU busy meanwhile, and the consumer needs no locking and sees chunks in order.
/// Constants are downloaded once, before the run.
///
/// # Errors
/// [`InOrderError::Setup`] for zero streams, readers or buffer sizes, a kernel with
/// too many parameters, or no CUDA GPU (no CPU twin on [`InOrderDevice::CpuTwin`]);
/// the other variants name the chunk that failed. After an error, work already issued
/// is waited for before the call returns.
pub fn in_order<I, O, M, P, C>(
    kernel: &Kernel,
    plan: &InOrderPlan<'_>,
    produce: P,
    consume: C,
) -> std::result::Result<InOrderTiming, InOrderError>
where
    I: Element,
    O: Element,
    M: Send,
    P: Fn(usize, &mut [I]) -> std::result::Result<Prepared<M>, BoxError> + Sync,
    C: FnMut(usize, M, &[O]) -> std::result::Result<(), BoxError>,
{
    let bad = |name: &'static str, value: String, allowed: &str| {
        InOrderError::Setup(chariot::Error::InvalidConfig { name, value, allowed: allowed.into() })
    };
    for (name, v) in [("streams", plan.streams), ("readers", plan.readers)] {
        if v == 0 {
            return Err(bad(name, "0".into(), "at least 1"));
        }
    }
    for (name, len, size) in [
        ("input_len", plan.input_len, std::mem::size_of::<I>()),
        ("output_len", plan.output_len, std::mem::size_of::<O>()),
    ] {
        if len == 0 || len.checked_mul(size).is_none_or(|b| b > isize::MAX as usize) {
            return Err(bad(name, len.to_string(), "at least 1 element, under isize::MAX bytes"));
        }
    }
    if let Some(b) = plan.scratch_bytes.iter().find(|&&b| b == 0) {
        return Err(bad("scratch_bytes", b.to_string(), "at least 1 byte each"));
    }
    if kernel.param_list().len() > crate::pipeline::MAX_PARAMS {
        return Err(bad(
            "kernel",
            format!("{} parameters", kernel.param_list().len()),
            &format!("at most {}", crate::pipeline::MAX_PARAMS),
        ));
    }
    crate::pipeline::run(kernel, plan, &produce, consume)
}
