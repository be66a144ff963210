//! The hand-written CUDA pipelines chariot is measured against, as a CUDA programmer
//! writes them without a scheduler: plain driver calls through cudarc on the primary
//! context. This is the studies crate's only `unsafe` code, as `backend/` is the
//! runtime's; `crate::baseline` is its safe face.

pub(crate) mod baseline;
pub(crate) mod cholesky;
pub(crate) mod device_graph;
pub(crate) mod flow;
pub(crate) mod images;

/// `call` failed with `e`, as a message (see [`chariot_inorder::rig::failed_text`]).
pub(crate) use chariot_inorder::rig::failed_text;
