//! What the studies' tests share with the runtime's, included from the runtime's test
//! support (test crates of two packages share no module otherwise): a deadline for a
//! test body, re-running a test in a child process, and the checks of bad input's
//! typed errors.
#![allow(dead_code)] // each test binary uses a part

#[path = "../../../../tests/common/child.rs"]
mod child;
#[path = "../../../../tests/common/errors.rs"]
mod errors;
#[path = "../../../../tests/common/timeout.rs"]
mod timeout;

#[allow(unused_imports)]
pub use child::*;
#[allow(unused_imports)]
pub use errors::*;
pub use timeout::*;
