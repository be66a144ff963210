//! The online adaptation's measurement on one dispatcher (the hardware-aware defaults): the period of
//! tasks each GPU measures (`Meter`: time, work, per-stage busy and blocked time), and
//! the dispatcher's side of `crate::stage::adaptation`, which judges each period and
//! whose changes are put in force here. Kept apart from Algorithms 1 and 2 in `mod.rs`,
//! which only open periods and stamp busy time as commands start and end.

use super::{Device, Dispatcher};
use crate::report::Adapted;
use crate::stage::adaptation::{Change, Period};
use crate::stage::Stage;

/// Tasks a measured period holds at least (more where more are in flight: a period
/// spans a turnover of the pipeline).
const MIN_PERIOD: usize = 8;

/// One period's measurement for the adaptation (see `crate::stage::adaptation`).
#[derive(Debug, Default)]
pub(super) struct Meter {
    /// When the period began; `None` while the GPU has no task.
    pub(super) start_ns: Option<u64>,
    /// The period ends once this many tasks have ended in it.
    target: usize,
    tasks: usize,
    work: f64,
    pub(super) busy_ns: [u64; Stage::K],
    pub(super) busy_since: [Option<u64>; Stage::K],
    blocked_ns: [u64; Stage::K],
    blocked_since: [Option<u64>; Stage::K],
    /// The next period follows an idle spell (the pipeline fills again): not judged.
    pub(super) skip: bool,
}

impl Meter {
    /// Starts a period at `now` with `running` commands in flight per stage and
    /// `held` stages waiting for their limit.
    pub(super) fn open(
        &mut self,
        now: u64,
        tasks_in_flight: usize,
        running: &[usize; Stage::K],
        held: &[bool; Stage::K],
    ) {
        *self = Meter {
            start_ns: Some(now),
            target: tasks_in_flight.max(MIN_PERIOD),
            busy_since: std::array::from_fn(|k| (running[k] > 0).then_some(now)),
            blocked_since: std::array::from_fn(|k| held[k].then_some(now)),
            skip: self.skip,
            ..Default::default()
        };
    }

    /// The period up to `now`.
    fn period(&self, now: u64) -> Period {
        let open = |total: u64, since: Option<u64>| total + since.map_or(0, |t| now.saturating_sub(t));
        Period {
            ns: now.saturating_sub(self.start_ns.unwrap_or(now)),
            work: self.work,
            busy_ns: std::array::from_fn(|k| open(self.busy_ns[k], self.busy_since[k])),
            blocked_ns: std::array::from_fn(|k| open(self.blocked_ns[k], self.blocked_since[k])),
        }
    }
}

impl<D: Device> Dispatcher<D> {
    /// Notes whether a ready command of `stage` waits for the stage's limit, for the
    /// adaptation's measure (the clock is read only when that changes).
    pub(super) fn note_held(&mut self, stage: Stage, held: bool) {
        let k = stage.index();
        if self.held[k] == held {
            return;
        }
        self.held[k] = held;
        if self.meter.start_ns.is_none() {
            return;
        }
        let now = self.now_ns();
        if held {
            self.meter.blocked_since[k] = Some(now);
        } else if let Some(since) = self.meter.blocked_since[k].take() {
            self.meter.blocked_ns[k] += now.saturating_sub(since);
        }
    }

    /// A task ended on this GPU: counts it in the period, and at the period's end lets
    /// the adaptation judge it and applies what it changes.
    pub(super) fn task_ended(&mut self, granularity: u64) {
        if self.adaptation.is_none() || self.meter.start_ns.is_none() {
            return;
        }
        self.meter.tasks += 1;
        self.meter.work += granularity as f64;
        if self.meter.tasks < self.meter.target {
            return;
        }
        let now = self.now_ns();
        let period = self.meter.period(now);
        let skip = std::mem::take(&mut self.meter.skip);
        let changes = match self.adaptation.as_mut() {
            Some(a) if !skip => a.end_period(&period),
            _ => Vec::new(),
        };
        self.apply(&changes);
        let tasks = self.slots.iter().filter(|s| s.task.is_some()).count();
        self.meter.open(now, tasks, &self.running, &self.held);
    }

    /// Puts the adaptation's changes in force and logs them for the report.
    pub(super) fn apply(&mut self, changes: &[Change]) {
        for c in changes {
            match c.stage {
                Stage::Kernel => {
                    self.kernel_fills = Some(c.in_force());
                    self.shared.records.gpus[self.gpu].lock().kernel_fills = self.kernel_fills;
                }
                stage => self.limit[stage.index()] = (c.in_force().round() as usize).max(1),
            }
        }
        if !changes.is_empty() {
            let mut log = self.shared.records.adaptations.lock();
            log.extend(changes.iter().map(|&change| Adapted::new(self.gpu, change)));
        }
    }
}
