//! The core's one door to the extensions (`crate::ext`): every hook the pipeline
//! calls, by name, and with its feature off a stand-in that does nothing (the way
//! rayon-core reaches its sleep module through a few calls). Only re-exports live
//! here, so scripts/check-layers.py resolves each name to the module that defines it
//! and checks its layer; no other core module names `crate::ext` (checked there too).
//!
//! The hooks, in the order a task meets them:
//! * at submit, the admission steps after the core's host claims: the rank's share
//!   (`RankShare::takes`, feature `mpi`), resident dependencies and fetches
//!   ([`admit_resident`]), the replay capture ([`Capture::offer`], the last step: it
//!   holds the task back or hands it to the batch);
//! * in `Shared`, each extension's own state: [`WindowQueues`] (windows queued per
//!   GPU, what ended windows leave, the end foreseen for the recorded runs in flight,
//!   which `synchronize` sleeps toward), [`Residents`] (the resident buffers) and
//!   `ClaimGate` (a cluster rank's room to take more of the stream);
//! * in the scheduler, each dispatcher's state lent to the replay windows
//!   (`WindowQueues::lend`), so that the thread that queues or waits for a recorded run
//!   takes a turn of them where the dispatcher waits (`WindowQueues::take_turns` in
//!   `Shared::close_batch`'s spin);
//! * in the dispatcher, a second source of work beside Q (the replay windows:
//!   [`WindowsInFlight`] and the methods `windows_pending`, `try_window`,
//!   `poll_window`, `hand_over_windows`, `drop_windows`), and the binder of resident
//!   data ([`bind_resident`] when a slot takes a task, [`skip_valid_fetches`] where its
//!   next command changes, [`may_start`] at selection, [`plan_command`] before issue,
//!   [`fetch_ended`] at completion);
//! * in Q, [`start_stage`]: the stage a task placed on a GPU starts at there;
//! * in the task, its [`Residency`]: `place` when it goes to Q, `moved`, `end`.

#[cfg(feature = "replay")]
pub(crate) use crate::ext::replay::{
    capture::{Capture, Offer},
    dispatch::WindowsInFlight,
    queues::WindowQueues,
    recorded::{make_lanes, RecordedGraph},
    window::{
        part::{Part, Way},
        Window,
    },
};
#[cfg(not(feature = "replay"))]
pub(crate) use off::replay::{Capture, Offer, WindowQueues, WindowsInFlight};

#[cfg(feature = "resident")]
pub(crate) use crate::ext::resident::{
    admit::{admit as admit_resident, ResidentRange},
    dispatch::{bind_resident, fetch_ended, may_start, plan_command, skip_valid_fetches},
    memory::{FetchPart, ReadBackFailure, ResidentBuffer, ResidentInner, ResidentMemory, Source, MAX_GPUS},
    shared::Residents,
    task::{lower_fetch, start_stage, Residency},
};
#[cfg(not(feature = "resident"))]
pub(crate) use off::resident::{
    admit_resident, bind_resident, fetch_ended, may_start, plan_command, skip_valid_fetches, start_stage, Residency,
    ResidentRange, Residents,
};

#[cfg(feature = "mpi")]
pub(crate) use crate::ext::cluster::{gate::ClaimGate, ranks::RankShare, Cluster};
#[cfg(not(feature = "mpi"))]
pub(crate) use off::cluster::ClaimGate;

/// The stand-ins of the extensions whose feature is off.
#[cfg(not(all(feature = "replay", feature = "resident", feature = "mpi")))]
mod off;
