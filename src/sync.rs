//! The synchronisation primitives of the dispatcher's shared structures (task buffer,
//! stage queues, signal). Normally parking_lot's and std's; with the `model-check`
//! feature, shuttle's, so that `src/model_check.rs` can explore their interleavings.
