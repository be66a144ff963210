//! # chariot-studies
//!
//! What chariot is measured with and against, kept out of the runtime crate
//! (`crates/chariot`), which never imports it:
//!
//! * [`demo`]: the paper's dummy shift kernel (§6.1) and the demo of `cargo run`, with
//!   the host link probe its bounds use;
//! * [`baseline`]: the pipelines a CUDA programmer writes by hand (serial, breadth-first,
//!   depth-first, one CUDA graph; the in-order pipeline of a stream application);
//! * [`plot`]: PNG plots of reports and studies, drawn with an embedded font.
//! * [`soak`]: many small tasks in waves, checking that nothing accumulates (the robustness work).
//! * [`cholesky`]: the tiled Cholesky factorisation (task graphs and resident data, benchmark 2) and its
//!   baseline, cuSOLVER's dense potrf.
//! * [`flow`]: cudaFlow's micro-benchmark shapes (replay) as task graphs of tiny
//!   kernels, run by chariot and by one hand-written CUDA graph.
//!
//! The binary `chariot` (the demo), the overhead study (`benches/overhead`), the SETI
//! example (`examples/seti`) and the soak (`examples/soak.rs`) are this package's
//! targets; [`baseline::in_order`] re-exports the crate chariot-inorder, which chariot-align's
//! `bench` also runs (so the search tool depends on no crate of the lab).
//!
//! ```
//! use chariot::{Backend, Scheduler};
//! use chariot::sim::SimProfile;
//! use chariot_studies::demo;
//! let sched = Scheduler::builder().backend(Backend::SimWith(SimProfile::instant())).build()?;
//! let shift = sched.register_kernel(demo::shift_kernel())?;
//! assert_eq!(shift.name(), "shift");
//! # Ok::<(), chariot::Error>(())
//! ```

#![deny(missing_docs, missing_debug_implementations)]

mod backend;
pub mod baseline;
pub mod cholesky;
pub mod demo;
pub mod flow;
pub mod images;
pub mod plot;
pub mod soak;
