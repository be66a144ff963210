//! Replay windows (feature `replay`): the submitting thread holds tasks back
//! (`capture`), cuts them into windows of independent lanes (`window`), and a
//! dispatcher issues a window as one unit and ends its tasks (`dispatch`); a loop
//! recorded once runs as its windows again and again (`recorded`).
//!
//! The core reaches it through `crate::seam`: the capture is the last admission step
//! of a submit, and the dispatcher's window methods are its second source of work.

pub(crate) mod capture;
pub(crate) mod dispatch;
pub(crate) mod id_map;
pub(crate) mod queues;
pub(crate) mod recorded;
pub(crate) mod window;
