//! The stand-ins of `crate::seam` for extensions built without their feature: each
//! hook does nothing, and the types carry no state, so the core compiles and runs the
//! paper's pipeline alone.

/// Replay windows off: every task goes to the batch as submitted; no dispatcher has
/// windows.
#[cfg(not(feature = "replay"))]
pub(crate) mod replay {
    use crate::dispatch::shared::Shared;
    use crate::dispatch::{Device, Dispatcher};
    use crate::execution::Execution;
    use crate::ids::{Preds, TaskId};
    use crate::report::Report;
    use crate::task::{Order, Task};
    use std::sync::Arc;

    /// What the capture did with a submitted task: here, always admitted.
    pub(crate) enum Offer {
        /// Never made without the feature (kept so the submit's match reads the same).
        #[allow(dead_code)]
        Held,
        Admit(Box<Task>, Preds),
    }

    /// The capture that holds nothing.
    #[derive(Debug)]
    pub(crate) struct Capture;

    impl Capture {
        pub(crate) fn new(
            _mode: Execution,
            _order: Order,
            _lanes: usize,
            _shared: Arc<Shared>,
            _machine: Arc<crate::backend::Machine>,
        ) -> Arc<Capture> {
            Arc::new(Capture)
        }

        #[inline]
        pub(crate) fn held(&self, _id: TaskId, _after: &[TaskId]) -> (bool, crate::ids::HeldAfter) {
            (false, crate::ids::HeldAfter::NONE)
        }

        #[inline]
        pub(crate) fn offer(&self, task: Box<Task>, _named: usize, preds: Preds) -> Offer {
            Offer::Admit(task, preds)
        }

        #[inline]
        pub(crate) fn admit_recorded(
            &self,
            _id: TaskId,
            _commands: &[crate::task::command::Command],
            _resident: bool,
            _claims: &[crate::task::HostClaim],
            _preds: &mut Preds,
        ) -> crate::Result<Option<Vec<Arc<crate::memory::host::HostShared>>>> {
            Ok(None)
        }

        pub(crate) fn before_wait(&self) {}

        pub(crate) fn end_batch(&self, _report: Option<&Report>) {}

        pub(crate) fn batch_execution(&self) -> Option<crate::report::BatchExecution> {
            None
        }
    }

    /// No windows queued anywhere.
    pub(crate) struct WindowQueues;

    impl WindowQueues {
        pub(crate) fn new(_gpus: usize) -> WindowQueues {
            WindowQueues
        }

        pub(crate) fn free_spent(&self) {}

        /// No window ends, so no argument list is spare.
        #[inline]
        pub(crate) fn take_spare_args(&self, _n: usize) -> Option<std::sync::Arc<[crate::kernel::ArgValue]>> {
            None
        }

        /// No window ends, so no task is spare.
        #[inline]
        pub(crate) fn take_spare(&self) -> Option<Box<crate::task::Task>> {
            None
        }
        pub(crate) fn wait_freed(&self) {}

        /// No window ends, so no launch is kept.
        pub(crate) fn let_go_kept(&self) {}

        /// No window ends, so nothing is left to free.
        pub(crate) fn free_batch(&self, _held_drops: bool) {}

        /// No recorded run, so no end foreseen.
        #[inline]
        pub(crate) fn expected_end(&self) -> u64 {
            0
        }

        pub(crate) fn forget_expected_end(&self) {}

        /// No window for another thread to take a turn of.
        #[inline]
        pub(crate) fn lend<D: Device>(&self, _gpu: usize, _cell: &Arc<crate::sync::Mutex<Dispatcher<D>>>) {}

        #[inline]
        pub(crate) fn take_turns(&self) {}
    }

    /// No windows in flight on a dispatcher.
    pub(crate) struct WindowsInFlight;

    impl WindowsInFlight {
        pub(crate) fn new() -> WindowsInFlight {
            WindowsInFlight
        }

        #[inline]
        pub(crate) fn is_empty(&self) -> bool {
            true
        }
    }

    impl<D: Device> Dispatcher<D> {
        #[inline]
        pub(crate) fn windows_pending(&self) -> bool {
            false
        }

        #[inline]
        pub(crate) fn try_window(&mut self) -> bool {
            false
        }

        #[inline]
        pub(crate) fn poll_window(&mut self) -> bool {
            false
        }

        pub(crate) fn drop_windows(&mut self, _message: &str) {}

        pub(crate) fn hand_over_windows(&mut self, _message: &str) {}
    }
}

/// Resident data off: no task uses any, so no dependency, fetch or binding comes of it.
#[cfg(not(feature = "resident"))]
pub(crate) mod resident {
    use crate::dispatch::shared::Shared;
    use crate::ids::TaskId;
    use crate::sync::AtomicBool;
    use crate::task::command::Command;
    use crate::task::Task;

    /// A task's resident data: none; only the placement hint Q reads.
    #[derive(Debug, Default)]
    pub(crate) struct Residency {
        pub(crate) home: Option<usize>,
    }

    impl Residency {
        #[inline]
        pub(crate) fn place(&mut self, _alive: &[AtomicBool]) {}

        #[inline]
        pub(crate) fn moved(&mut self) {}

        #[inline]
        pub(crate) fn end(&mut self, _task: TaskId, _ok: bool) {}
    }

    /// A resident range a command names: none can be made.
    pub(crate) enum ResidentRange {}

    /// No resident buffers.
    #[derive(Default)]
    pub(crate) struct Residents;

    impl Residents {
        pub(crate) fn gpu_lost(&self, _gpu: usize) {}

        pub(crate) fn forget_tasks(&self) {}
    }

    #[inline]
    pub(crate) fn admit_resident(
        _shared: &Shared,
        _id: TaskId,
        _ranges: Vec<ResidentRange>,
        _commands: &mut Vec<Command>,
        _preds: &mut crate::ids::Preds,
    ) -> Residency {
        Residency::default()
    }

    /// Without resident data nothing fails a task on its account: no value exists.
    #[derive(Debug)]
    pub(crate) enum ResidentFault {}

    impl std::fmt::Display for ResidentFault {
        fn fmt(&self, _: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            match *self {}
        }
    }

    #[inline]
    pub(crate) fn bind_resident(_gpu: usize, _residents: &Residents, _task: &mut Task) -> Result<(), ResidentFault> {
        Ok(())
    }

    #[inline]
    pub(crate) fn skip_valid_fetches(_gpu: usize, _task: &mut Task) {}

    /// Without fetches a task starts at its next command's stage wherever it runs.
    #[inline]
    pub(crate) fn start_stage(_gpu: usize, task: &Task) -> Option<crate::stage::Stage> {
        task.commands.get(task.next).map(Command::stage)
    }

    #[inline]
    pub(crate) fn may_start(_gpu: usize, _c: &Command) -> bool {
        true
    }

    /// Without fetches every command is issued as it is; a command that is not a fetch
    /// still marks nothing (there is no resident data to have written).
    #[inline]
    pub(crate) fn plan_command(_gpu: usize, _task: &mut Task, _index: usize) -> Result<(), Option<ResidentFault>> {
        Ok(())
    }

    #[inline]
    pub(crate) fn fetch_ended(_gpu: usize, _c: &mut Command, _ok: bool) {}
}

/// Not in a cluster: no submit waits for room.
#[cfg(not(feature = "mpi"))]
pub(crate) mod cluster {
    /// The claim gate of a process outside any cluster: always open.
    pub(crate) struct ClaimGate;

    impl ClaimGate {
        pub(crate) fn new() -> ClaimGate {
            ClaimGate
        }

        #[inline]
        pub(crate) fn waits_below(&self, _outstanding: usize) -> bool {
            false
        }

        #[inline]
        pub(crate) fn active(&self) -> bool {
            false
        }
    }
}
