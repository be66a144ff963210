//! The replay windows' hand-off on the real dispatchers (feature `replay`): windows
//! queued through `Shared::push_window` (the capture's call), taken by the real
//! `Dispatcher` loop (`ext::replay::dispatch`: `try_window`, `poll_window`,
//! `end_window`), their tasks ended through `Shared::end_tasks`, on `crate::sync`'s
//! primitives and shuttle's schedules.
//!
//! Window W1 (the earlier, `seq` 0) holds task 0 on GPU 1; window W2 (`seq` 1) holds
//! task 1 on GPU 0, which runs after task 0. W2 is queued first: GPU 0 finds it must
//! wait for W1 (`Start::Wait`) and parks. When W1's tasks end on GPU 1, the
//! dispatchers with windows queued are woken (`Shared::wake_window_waiters`), and GPU
//! 0 starts W2, or, where W1 failed, ends task 1 as not run: W2 is emptied by the
//! failure and never issued. Either way `synchronize` (here `Machine::finish`) returns.
//!
//! The hang the review found (a window emptied by a failure hung `synchronize`) was
//! that missing wake-up. With the mutation that removes it (`--cfg
//! chariot_mutation="no_window_wake"`, which compiles out the wake in
//! `Shared::end_tasks`):
//!
//! ```text
//! CARGO_TARGET_DIR=target/mutation RUSTFLAGS='--cfg chariot_mutation="no_window_wake"' \
//!   cargo test -p gpu-chariot --features model-check --lib model_check::windows
//! ```
//!
//! every test here fails: shuttle reports a deadlock (GPU 0's dispatcher parked with
//! W2 queued, the main thread waiting for the batch, the other threads idle). Recorded
//! (2026-11-28, default seed): all 3 tests FAILED within the first schedules ("deadlock!
//! blocked tasks: [main-thread, executioner 0, executioner 1, engine 0, dispatcher 0,
//! engine 1, dispatcher 1]"), against 3 passed without the mutation.
//!
//! Recorded graphs' runs go the same way (`recorded_runs_*`): shells queued, issued
//! and ended by the real dispatchers, then an update that must find the part free.
//! With `--cfg chariot_mutation="count_out_first"` (a run counted out before its
//! dispatcher lets go of the part) both tests FAILED in their first schedules
//! (2026-11-28: "the update found a run in flight"), against 2 passed without it.
//!
//! A recorded run may be launched by the thread that queues it, and polled and ended by
//! the thread that waits for it, where the dispatcher lets go of its state
//! (`recorded_runs_by_the_caller_*`: `ext::replay::queues::Lender`). With `--cfg
//! chariot_mutation="turn_without_ring"` (the dispatcher not rung after such a turn)
//! a run launched while the dispatcher parks is polled by nobody once the waiter's
//! spin ends, and the tests deadlock. Recorded (2026-11-29, default seed): both tests
//! FAILED in their first schedules ("deadlock! blocked tasks: [main-thread, ...,
//! dispatcher 0, engine 1, dispatcher 1]"), against 2 passed without the mutation.
//!
//! A batch's window spread over both GPUs may be queued while GPU 1 leaves the
//! rotation (`a_spread_window_queued_while_a_gpu_leaves_*`): GPU 0 runs it over both or
//! lays it out anew on its own. With the laid-out window dropped instead of started (a
//! hand edit of `start_window`, 2026-11-30) both tests deadlock in their first
//! schedules, against 2 passed without it.
//!
//! A window spread over both GPUs may fail with the other GPU lost under it
//! (`a_spread_window_failing_with_the_other_gpu_lost_*`, `Reach::Spanned`): GPU 1, not
//! the GPU that launched it, leaves the rotation, once, while a window of its own is
//! queued. With the old rule (the launching GPU marks itself lost, a hand edit of
//! `end_window`, 2026-11-30) both tests FAILED in their first schedules ("GPU 1
//! leaves, once; GPU 0 stays": left [0]), against 2 passed. The ring of GPU 1's
//! dispatcher in `Shared::lose_gpu` is for promptness here, not liveness: with it
//! removed the tests still pass (every path that gives GPU 1 work rings it too).
//!
//! A batch's last replayed tasks are freed by the thread that ends them while
//! `synchronize` waits, which waits for that free where a buffer's handle went while
//! tasks held it (`last_tasks_freed_*`; the mutation `no_wait_freed` below).
//!
//! An ended task's launches are kept for the next submit to refill, and a buffer's last
//! handle dropped meanwhile must not leave its memory with them
//! (`kept_launch_let_go_*`; the mutation `no_let_go_kept` below).

use super::pipeline::{start, Config};
use super::{pct, random, spawn, task};
use crate::ext::replay::window::Window;
use crate::ids::TaskId;
use crate::stage::Stage;
use crate::task::command::Command;
use std::sync::atomic::Ordering;

/// A window of one task, `id`, on lane 0; `after`: the tasks of earlier windows it
/// runs after (index here, the task, its window's `seq`).
fn window(seq: u64, id: usize, after: Vec<(u32, TaskId, u64)>) -> Box<Window> {
    let mut t = task(id, 1);
    t.commands = vec![Command::Gpu(None)];
    Box::new(Window {
        seq,
        external: after,
        lane_limit: 1,
        tasks: vec![t],
        preds: vec![Default::default()],
        lane_edges: vec![None],
        lanes: vec![0],
        lane_count: 1,
        depth: 1,
        gpus: Vec::new(),
        key: Vec::new(),
        hash: 0,
        device: false,
        timed_end: false,
        recorded: None,
        queued_ns: 0,
    })
}

/// One schedule of the hand-off; `fail_first`: W1 fails on GPU 1.
fn hand_off(fail_first: bool) {
    let config = Config::windows(if fail_first { vec![1] } else { Vec::new() });
    let machine = start(&config);
    let shared = machine.shared.clone();
    // Counted into the batch as running, as the capture's `launch` does.
    {
        let mut batch = shared.batch.lock();
        batch.outstanding += 2;
        batch.graph.add_live(TaskId(0));
        batch.graph.add_live(TaskId(1));
    }
    // The later window first, on the other GPU: it must wait for the earlier one.
    assert!(shared.push_window(0, window(1, 1, vec![(0, TaskId(0), 0)])).is_ok(), "GPU 0 in the rotation");
    assert!(shared.push_window(1, window(0, 0, Vec::new())).is_ok(), "GPU 1 in the rotation");
    let outcome = machine.finish();
    let failed: Vec<(TaskId, Stage, String)> =
        outcome.failures.iter().map(|f| (f.task, f.stage, f.message.clone())).collect();
    if fail_first {
        assert_eq!(failed.len(), 2, "both tasks fail: {failed:?}");
        assert!(failed.iter().any(|(t, _, m)| *t == TaskId(0) && m.contains("the model window failed")));
        assert!(failed.iter().any(|(t, _, m)| *t == TaskId(1) && m.contains("runs after task #0")), "{failed:?}");
        // W2 was emptied by the failure: only W1 was issued.
        assert_eq!(outcome.windows.len(), 1, "windows issued: {:?}", outcome.windows);
        assert!(outcome.windows[0].failed && outcome.windows[0].gpu == 1);
    } else {
        assert!(failed.is_empty(), "no task fails: {failed:?}");
        let gpus: Vec<usize> = outcome.windows.iter().map(|w| w.gpu).collect();
        assert_eq!(gpus, vec![1, 0], "W1 on GPU 1, then W2 on GPU 0");
    }
    for g in 0..2 {
        assert_eq!(shared.windows.count[g].load(std::sync::atomic::Ordering::SeqCst), 0, "GPU {g}'s queue at the end");
    }
}

/// Both windows run, W2 after W1. With the wake-up removed (the mutation above):
/// shuttle reports a deadlock.
#[test]
fn windows_hand_off_random() {
    random(1000, || hand_off(false));
}

/// W1 fails; W2 is emptied by the failure (task 1 ends not run) and `synchronize`
/// returns. With the wake-up removed: shuttle reports a deadlock.
#[test]
fn windows_emptied_by_a_failure_random() {
    random(1000, || hand_off(true));
}

#[test]
fn windows_emptied_by_a_failure_pct() {
    pct(500, 3, || hand_off(true));
}

/// A batch's window spread over both GPUs: task 0 on GPU 0's lane 0, task 1 on GPU 1's
/// first guest lane.
fn spread_window() -> Box<Window> {
    let mut w = window(0, 0, Vec::new());
    let mut second = task(1, 1);
    second.commands = vec![Command::Gpu(None)];
    w.tasks.push(second);
    w.preds.push(Default::default());
    w.lane_edges.push(None);
    w.lanes.push(crate::memory::GUEST_LANES as u16);
    w.gpus = vec![0, 1];
    w
}

/// One schedule of a batch's window spread over both GPUs (task 0 on GPU 0, task 1 on
/// GPU 1's guest lane), queued on GPU 0 while another thread takes GPU 1 out of the
/// rotation (its `alive` flag, which a loss clears): GPU 0 launches it over both (it saw
/// GPU 1 in the rotation) or lays it out anew on its own (`Window::take_blocked`), and
/// either way both tasks run and `synchronize` returns.
fn spread_while_a_gpu_leaves() {
    let machine = start(&Config::windows(Vec::new()));
    let shared = machine.shared.clone();
    {
        let mut batch = shared.batch.lock();
        batch.outstanding += 2;
        batch.graph.add_live(TaskId(0));
        batch.graph.add_live(TaskId(1));
    }
    let w = spread_window();
    let leaving = shared.clone();
    let leaver = super::spawn("GPU 1 leaving".into(), move || leaving.alive[1].store(false, Ordering::SeqCst));
    assert!(shared.push_window(0, w).is_ok(), "GPU 0 in the rotation");
    leaver.join().expect("the leaver does not panic");
    let outcome = machine.finish();
    assert!(outcome.failures.is_empty(), "no task fails: {:?}", outcome.failures);
    assert_eq!(outcome.windows.len(), 1, "one window: {:?}", outcome.windows);
    let w = &outcome.windows[0];
    assert!(w.gpu == 0 && w.tasks == 2 && !w.failed, "{w:?}");
    assert!(matches!(w.gpu_count, 1 | 2), "{w:?}");
}

#[test]
fn a_spread_window_queued_while_a_gpu_leaves_runs_random() {
    random(1000, spread_while_a_gpu_leaves);
}

#[test]
fn a_spread_window_queued_while_a_gpu_leaves_runs_pct() {
    pct(500, 3, spread_while_a_gpu_leaves);
}

/// One schedule of a batch's window spread over both GPUs (tasks 0 and 1, queued on
/// GPU 0) that fails with GPU 1 lost under it (`Reach::Spanned`, as the sim reports a
/// loss of a GPU a window spans), while another thread queues a window of GPU 1's own
/// (task 2). GPU 0 records GPU 1 lost and goes on; GPU 1's dispatcher, rung, leaves the
/// rotation: task 2 runs on GPU 1 before it leaves, or on GPU 0 (handed over, or queued
/// there once GPU 1 is out). Tasks 0 and 1 fail with the window; `synchronize` returns.
fn spread_window_loses_the_other_gpu() {
    let mut config = Config::windows(Vec::new());
    config.lose_spanned = true;
    let machine = start(&config);
    let shared = machine.shared.clone();
    {
        let mut batch = shared.batch.lock();
        batch.outstanding += 3;
        for t in 0..3 {
            batch.graph.add_live(TaskId(t));
        }
    }
    let w = spread_window();
    let queuing = shared.clone();
    let own = super::spawn("GPU 1's window".into(), move || queuing.push_window(1, window(1, 2, Vec::new())).is_ok());
    assert!(shared.push_window(0, w).is_ok(), "GPU 0 in the rotation");
    assert!(own.join().expect("the queuing thread does not panic"), "a GPU in the rotation takes it");
    let outcome = machine.finish();
    let mut failed: Vec<u64> = outcome.failures.iter().map(|f| f.task.0).collect();
    failed.sort_unstable();
    assert_eq!(failed, [0, 1], "the spread window's tasks fail, task 2 runs: {:?}", outcome.failures);
    assert!(outcome.failures.iter().all(|f| f.message.contains("lost GPU 1 under the window")));
    let lost: Vec<usize> = outcome.lost_gpus.iter().map(|l| l.gpu).collect();
    assert_eq!(lost, [1], "GPU 1 leaves, once; GPU 0 stays");
    assert!(shared.alive[0].load(Ordering::SeqCst) && !shared.alive[1].load(Ordering::SeqCst));
}

#[test]
fn a_spread_window_failing_with_the_other_gpu_lost_retires_that_gpu_random() {
    random(1000, spread_window_loses_the_other_gpu);
}

#[test]
fn a_spread_window_failing_with_the_other_gpu_lost_retires_that_gpu_pct() {
    pct(500, 3, spread_window_loses_the_other_gpu);
}

/// One schedule of recorded runs: a graph of two parts (task 0 on GPU 1, task 1 on
/// GPU 0) run twice, its shells queued through `Shared::push_window`, issued by the
/// real dispatchers (`issue_recorded`) and ended through `Shared::end_part_run`; then
/// an update. The update waits for every run and must find the part its own
/// (`Arc::get_mut`): a dispatcher lets go of its share of a part before counting the
/// run out. With the mutation `chariot_mutation="count_out_first"` (the run counted out
/// first) the update finds a run's share still held and fails with `RunInFlight`.
fn recorded_runs(fail: bool) {
    use crate::error::RecordingProblem;
    use crate::kernel::Arg;
    let config = Config::windows(if fail { vec![1] } else { Vec::new() });
    let machine = start(&config);
    let shared = machine.shared.clone();
    let one = |w: Box<Window>| *w;
    let parts = vec![(1, one(window(u64::MAX, 0, Vec::new()))), (0, one(window(u64::MAX, 1, Vec::new())))];
    let mut graph = crate::seam::RecordedGraph::new(shared.clone(), None, parts);
    graph.run().expect("a run of a graph with no host copies");
    graph.run().expect("a second run");
    // Not a launch: the update is refused for that, once every run ended, and the part
    // is found this graph's alone.
    let e = graph.set_arg(TaskId(0), 0, 0, Arg::u32(1)).expect_err("a GPU callback has no argument");
    assert!(
        matches!(e, crate::Error::Recording { problem: RecordingProblem::NoSuchArgument { .. }, .. }),
        "the update found a run in flight: {e}"
    );
    let outcome = machine.finish();
    assert_eq!(outcome.windows.len(), 4, "two runs of two parts: {:?}", outcome.windows);
    if fail {
        // Task 0's part fails on GPU 1 in both runs; task 1's runs well.
        assert_eq!(outcome.failures.len(), 2, "{:?}", outcome.failures);
        assert!(outcome.failures.iter().all(|f| f.task == TaskId(0)));
    } else {
        assert!(outcome.failures.is_empty(), "{:?}", outcome.failures);
    }
    for g in 0..2 {
        assert_eq!(shared.windows.count[g].load(std::sync::atomic::Ordering::SeqCst), 0, "GPU {g}'s queue at the end");
    }
}

#[test]
fn recorded_runs_random() {
    random(1000, || recorded_runs(false));
}

#[test]
fn recorded_runs_failing_pct() {
    pct(500, 3, || recorded_runs(true));
}

/// One schedule of recorded runs on GPUs that show completions only to polling (as
/// CUDA's): a graph of two parts run once and waited for, so that each part's graph is
/// kept, then run twice more. The later runs are relaunches, which the calling thread
/// launches itself where the dispatcher lets go of its state (it spins or parks), and
/// `synchronize`'s spin polls and ends; the dispatcher takes whatever the caller does
/// not. Every run must end once, in order, and nothing be left queued or in flight.
fn recorded_runs_by_the_caller() {
    let machine = start(&Config::polled_windows());
    let shared = machine.shared.clone();
    let one = |w: Box<Window>| *w;
    let parts = vec![(0, one(window(u64::MAX, 0, Vec::new()))), (1, one(window(u64::MAX, 1, Vec::new())))];
    let graph = crate::seam::RecordedGraph::new(shared.clone(), None, parts);
    graph.run().expect("a run of a graph with no host copies");
    let first = shared.close_batch(None).expect("no deadline: the batch ends");
    assert_eq!(first.windows.len(), 2, "the first run of two parts: {:?}", first.windows);
    graph.run().expect("a second run");
    graph.run().expect("a third run");
    let outcome = machine.finish();
    assert!(outcome.failures.is_empty(), "{:?}", outcome.failures);
    for g in 0..2 {
        let here = outcome.windows.iter().filter(|w| w.gpu == g).count();
        assert_eq!(here, 2, "two runs of GPU {g}'s part: {:?}", outcome.windows);
        assert_eq!(shared.windows.count[g].load(std::sync::atomic::Ordering::SeqCst), 0, "GPU {g}'s queue at the end");
        assert_eq!(shared.windows.flying[g].load(std::sync::atomic::Ordering::SeqCst), 0, "GPU {g} in flight");
    }
}

#[test]
fn recorded_runs_by_the_caller_random() {
    random(1000, recorded_runs_by_the_caller);
}

#[test]
fn recorded_runs_by_the_caller_pct() {
    pct(500, 3, recorded_runs_by_the_caller);
}

/// One schedule of a batch's last window ending while `synchronize` waits: the thread
/// that ends its tasks frees them itself (`Shared::end_tasks`, where the capture marked
/// the batch closing), after telling the waiter, so that the free is off the waiter's
/// way out. Where a buffer's handle was dropped while tasks held it, the waiter, before
/// it gives buried device memory back (`Scheduler::end_batch`), waits for that free
/// (`WindowQueues::wait_freed`) and frees what is left: whatever a task held (the last
/// reference to the buffer) must be let go by then, so that the buffer is returned by
/// that `synchronize`. With `--cfg chariot_mutation="no_wait_freed"` (the wait compiled
/// out) the waiter can look while the ender still holds the tasks, and the tests fail.
/// Recorded (2026-11-29, default seed): both FAILED in their first schedules ("a task's
/// last reference outlived synchronize's wait"), against 2 passed without it. The freed
/// task is kept, emptied, for the next submit (`WindowQueues::take_spare`), by either
/// thread.
fn last_tasks_freed_before_the_waiter_frees_memory() {
    let machine = start(&Config::windows(Vec::new()));
    let shared = machine.shared.clone();
    // What the task holds, its last reference going with the task.
    let held = std::sync::Arc::new(0u8);
    let weak = std::sync::Arc::downgrade(&held);
    let mut w = window(0, 0, Vec::new());
    let keep: crate::callback::CpuFn = Box::new(move |_| {
        let _held = &held;
        Ok(())
    });
    w.tasks[0].commands.push(Command::Cpu(Some(keep)));
    {
        let mut batch = shared.batch.lock();
        batch.outstanding += 1;
        batch.graph.add_live(TaskId(0));
    }
    // As `synchronize` does: marked closing, then waits for the batch.
    shared.windows.set_closing(true);
    assert!(shared.push_window(1, w).is_ok(), "GPU 1 in the rotation");
    let outcome = shared.close_batch(None).expect("no deadline: the batch ends");
    assert!(outcome.failures.is_empty(), "{:?}", outcome.failures);
    #[cfg(not(chariot_mutation = "no_wait_freed"))]
    shared.windows.wait_freed();
    shared.windows.free_spent();
    assert!(weak.upgrade().is_none(), "a task's last reference outlived synchronize's wait");
    // Whichever thread freed it kept the task emptied for the next submit to fill.
    let spare = shared.windows.take_spare().expect("the ended task is kept for the next submit");
    assert!(spare.commands.is_empty() && spare.hosts.is_empty(), "a spare task still holds what it ran with");
    shared.windows.set_closing(false);
    machine.finish();
}

#[test]
fn last_tasks_freed_before_the_waiter_frees_memory_random() {
    random(1000, last_tasks_freed_before_the_waiter_frees_memory);
}

#[test]
fn last_tasks_freed_before_the_waiter_frees_memory_pct() {
    pct(500, 3, last_tasks_freed_before_the_waiter_frees_memory);
}

/// Model device memory that records each free.
#[derive(Debug, Default)]
struct Freed(std::sync::Mutex<Vec<u64>>);

impl crate::memory::FreeDevice for Freed {
    fn free_device(&self, bufs: Vec<crate::backend::device::PhysBuf>) {
        let mut freed = self.0.lock().expect("no model thread panicked");
        freed.extend(bufs.into_iter().filter_map(|b| match b {
            crate::backend::device::PhysBuf::Cuda { ptr, .. } => Some(ptr),
            _ => None,
        }));
    }
}

/// One schedule of a buffer's last handle dropped on a user thread while the batch's
/// last window ends: the thread that ends its task empties it and keeps its launch,
/// which names the buffer, for the next submit to refill (`WindowQueues::recycle`).
/// The drop lets go of the launches the spare tasks keep (`WindowQueues::let_go_kept`)
/// and, where more than its handle still holds the buffer, notes a held drop; the
/// waiter's end of the batch (`WindowQueues::free_batch`, as `Scheduler::end_batch`
/// calls it, then `free_buried`) then waits for the emptying and lets go of the kept
/// launch. Whatever the interleaving the buffer's memory is freed once, by that
/// `synchronize`. With `--cfg chariot_mutation="no_let_go_kept"` (the waiter's let-go
/// compiled out) the launch kept after the drop keeps it, and the tests fail. Recorded
/// (2026-12-02, default seed): both FAILED ("the dropped buffer's memory, freed once by
/// that synchronize"), against 2 passed without it.
fn kept_launch_let_go_as_the_last_handle_drops() {
    use crate::kernel::{ArgValue, Kernel, KernelInner, LaunchShape, Waves};
    use crate::memory::{DeviceBuffer, DeviceBufferInner, Graveyard};
    use std::sync::Arc;
    let machine = start(&Config::windows(Vec::new()));
    let shared = machine.shared.clone();
    let memory = Arc::new(Freed::default());
    let graveyard = Graveyard::new(memory.clone());
    graveyard.watch(Arc::downgrade(&shared) as std::sync::Weak<dyn crate::memory::Quiet>);
    let phys = vec![crate::backend::device::PhysBuf::Cuda { gpu: 1, ptr: 7 }];
    let handle = DeviceBuffer::<u32>::new(DeviceBufferInner::new(0, 1, 4, phys, graveyard.clone()), 1);
    let kernel = Arc::new(KernelInner::new(Kernel::new("k", ""), 0, Vec::new()));
    let launch = crate::task::command::LaunchCmd {
        kernel,
        shape: LaunchShape { grid: 1.into(), block: 1.into(), shared_bytes: 0 },
        args: Arc::from([ArgValue::Buffer(handle.inner().clone())]),
        waves: Arc::new(Waves(Box::new([]))),
        twin: None,
    };
    let mut w = window(0, 0, Vec::new());
    w.tasks[0].commands = vec![Command::Launch(launch)];
    {
        let mut batch = shared.batch.lock();
        batch.outstanding += 1;
        batch.graph.add_live(TaskId(0));
    }
    // As `synchronize` does: marked closing, then waits for the batch.
    shared.windows.set_closing(true);
    assert!(shared.push_window(1, w).is_ok(), "GPU 1 in the rotation");
    let user = spawn("user".into(), move || drop(handle));
    let outcome = shared.close_batch(None).expect("no deadline: the batch ends");
    assert!(outcome.failures.is_empty(), "{:?}", outcome.failures);
    user.join().expect("the user thread does not panic");
    shared.windows.free_batch(graveyard.take_held_drops());
    graveyard.free_buried();
    let freed = memory.0.lock().expect("no model thread panicked").clone();
    assert_eq!(freed, vec![7], "the dropped buffer's memory, freed once by that synchronize");
    shared.windows.set_closing(false);
    machine.finish();
}

#[test]
fn kept_launch_let_go_as_the_last_handle_drops_random() {
    random(1000, kept_launch_let_go_as_the_last_handle_drops);
}

#[test]
fn kept_launch_let_go_as_the_last_handle_drops_pct() {
    pct(500, 3, kept_launch_let_go_as_the_last_handle_drops);
}
