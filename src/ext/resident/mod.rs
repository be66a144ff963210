//! Device-resident data (feature `resident`): the buffers and their per-piece state
//! (`memory`), a task's use of them (`task`), the dependencies and fetches added at
//! submit (`admit`) and the dispatcher's binding and fetch planning (`dispatch`).
//!
//! The core reaches it through `crate::seam`: an admission step at submit, the
//! binder a dispatcher calls when a slot takes a task, and the planner it calls before
//! issuing a command.

pub(crate) mod admit;
pub(crate) mod dispatch;
pub(crate) mod memory;
pub(crate) mod shared;
pub(crate) mod task;
