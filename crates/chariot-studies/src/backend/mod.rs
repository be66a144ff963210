//! The studies' driver-level code (see `cuda`).

pub(crate) mod cuda;
