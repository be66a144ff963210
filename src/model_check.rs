//! Model checks of the dispatcher (feature `model-check`): the real `Dispatcher` of
//! `src/dispatch/mod.rs` and the structures it shares (the task buffer Q, the stage
//! queues P_k with C_k.global, the wake-up `Signal`, the batch), run on shuttle's
//! primitives (through `crate::sync`) under thousands of randomised and PCT schedules
//! on small configurations.
//!
//! Each GPU's dispatcher is the real one (`Dispatcher::run`, its loop and recovery
//! code), generic over `dispatch::Device`: here a model GPU whose engine thread runs
//! the commands in arrival order and posts each completion in its slot, ringing the
//! dispatcher's signal as the simulated backend does. CPU callbacks go to model
//! executioners through the real hand-off (`executioners::run`). The main thread
//! submits as `Scheduler::submit` does (`Shared::admit`: count the task in the batch and
//! the task graph; a ready task goes to Q and wakes every dispatcher) while the
//! dispatchers run, then waits on the batch as `synchronize` does.
//!
//! What each schedule must show:
//! * every task is popped once and each of its commands runs exactly once, in order,
//!   on one GPU and stream slot, and no task fails;
//! * at most G_k commands of stage k in flight on all GPUs and at most L_k on one
//!   (counted from issue to the completion's discovery, inside grant to release), and
//!   a command starts only beside stages the overlap matrix lets it run with;
//! * P_k holds each GPU at most once, exactly while that GPU's `queued` flag says so,
//!   and its published `waiting` count is its length (checked inside `StageQueues` at
//!   each change under the model); all queues are empty at the end;
//! * no lost wake-up: a dispatcher parked with work to do, with everyone else blocked,
//!   is a deadlock, which shuttle reports as a failure;
//! * (`graph`, task graphs) a task's first command starts only once every command of each
//!   task it runs after has ended; waiting tasks reach Q from `Shared::end_task` on the
//!   dispatchers' threads while the main thread submits;
//! * (`frees`, device memory) a buffer whose last handle goes while the batch runs, on
//!   the user's thread or a dispatcher's, is freed exactly once: at once where no task
//!   is in flight (the graveyard asks the batch), else at the batch's end, and a buffer
//!   tasks name only after their commands ended.
//!
//! Beside that, `stage_protocol` drives P_k alone (request, park on `Wait`, release),
//! where every request may be followed by a park, and `buffer_order` checks Q's order
//! (FCFS, LF, SF) under a concurrent producer and two consumers.
//!
//! Files: `gpu` (the model GPU, its engine and the counts), `pipeline` (the
//! configurations and the schedules of the real dispatchers), `protocol`
//! (`stage_protocol`), `buffer` (`buffer_order`), `resident` (resident data: a fetch
//! from another GPU's copy while that GPU evicts to make room); here, what they share.
//!
//! Deleting any one wake-up of the protocol (the release's, the withdrawal's, the
//! submit's, the signal's lock around `notify_one`) makes some test deadlock, and so
//! does publishing `waiting` after the counter is tried. In `dispatch/mod.rs` itself:
//! without the release's wake, five of the six pipeline tests deadlock; without the
//! withdrawal's, both `one_copy_engine` tests. The one exception is the
//! grant's wake of the next head: without it the pipeline stays live, because the
//! holder's release wakes that GPU later; the wake saves latency (with G_k > 1 the
//! next head may go at once), which a liveness check cannot see.
//!
//! `resident` found a race in the first eviction, which cleared the evicted copy's
//! pieces before writing them back to the host shadow: a fetch planned in between found
//! a piece valid nowhere. Eviction now pins the copy while it writes back, and gives it
//! up only if no fetch began to read it meanwhile. A review then found two more, now
//! checked here: a write on another GPU during the write-back left the shadow marked as
//! holding the older bytes (pieces carry a version now), and two GPUs evicting their
//! copies of one piece at once lost it (one eviction of a buffer at a time, and none
//! that would leave a piece unsaved). Removing either fix fails its model check.
//!
//! Runs are seeded, so a failure replays; `CHARIOT_MODEL_SEED` picks another seed and
//! `CHARIOT_MODEL_SCALE` multiplies the iterations for longer searches.

mod buffer;
mod gpu;
mod pipeline;
mod protocol;
#[cfg(feature = "resident")]
mod resident;
#[cfg(feature = "replay")]
mod windows;

use crate::ids::TaskId;
use crate::task::Task;
use shuttle::scheduler::{PctScheduler, RandomScheduler};
use shuttle::{thread, Runner};

fn seed() -> u64 {
    std::env::var("CHARIOT_MODEL_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x00c4_a210)
}

fn scaled(iterations: usize) -> usize {
    let scale: usize = std::env::var("CHARIOT_MODEL_SCALE").ok().and_then(|s| s.parse().ok()).unwrap_or(1);
    iterations * scale.max(1)
}

/// Runs `f` under `iterations` random schedules.
fn random(iterations: usize, f: impl Fn() + Send + Sync + 'static) {
    Runner::new(RandomScheduler::new_from_seed(seed(), scaled(iterations)), Default::default()).run(f);
}

/// Runs `f` under `iterations` PCT schedules of `depth` priority changes (PCT finds bugs
/// that need a few preemptions at precise points with known probability).
fn pct(iterations: usize, depth: usize, f: impl Fn() + Send + Sync + 'static) {
    Runner::new(PctScheduler::new_from_seed(seed(), depth, scaled(iterations)), Default::default()).run(f);
}

/// Spawns a model thread named `name` (shuttle names the blocked threads of a deadlock).
fn spawn<T: Send + 'static>(name: String, f: impl FnOnce() -> T + Send + 'static) -> thread::JoinHandle<T> {
    thread::Builder::new().name(name).spawn(f).expect("shuttle spawns model threads")
}

/// A sealed task without commands, as the buffer holds it.
fn task(id: usize, granularity: u64) -> Box<Task> {
    Box::new(Task {
        id: TaskId(id as u64),
        granularity,
        seq: id as u64,
        commands: Vec::new(),
        next: 0,
        hosts: Vec::new(),
        residency: Default::default(),
        prefer: None,
        bound: false,
    })
}
