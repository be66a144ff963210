//! The online adaptation of the stage limits (the hardware-aware defaults): after the first tasks, each
//! GPU's dispatcher knows how long its stages are busy and how long a ready command
//! waited for a stage's limit. Where a stage's queue waits, it tries that stage with a
//! higher limit for one period of tasks and keeps it if the GPU's task rate rose; where
//! the work has changed (another bottleneck) and a stage raised for the old work no
//! longer waits, it tries it lower again, and keeps that if the queue still does not
//! wait (so the higher limit buys nothing now) or the rate held.
//!
//! Rates of different work do not compare, and a run's work can change at any time (the
//! bottleneck moves). So a raise is judged by its rate only where its period has the
//! same bottleneck as the period before it (the stage whose queue waited most, else the
//! busiest): otherwise the trial is void, its value undone, and nothing concluded. A
//! lowering is kept where its queue does not wait, and undone where it does.
//!
//! The rule is a pure function of the periods' measurements (deterministic given the
//! same measurements), and bounded: every limit stays within its range, a value a trial
//! rejected is not tried again, and at most [`MAX_TRIALS`] trials are made in all.
//!
//! A copy stage is raised only while its engine is not saturated (busy less than
//! [`SATURATED`] of the period): a queue that waits behind a busy engine gains nothing
//! from a deeper queue. The kernel stage has no such test, since its busy time says
//! nothing of how full the SMs are: a kernel with long tails keeps the stage busy and
//! most SMs idle, and only a trial shows whether a second one beside it helps.

use super::Stage;

/// Share of a period in which a stage's ready command waited for its limit, from which
/// a raise is tried.
pub(crate) const BLOCKED: f64 = 0.25;
/// Share at most in which a raised stage's commands waited, for a lowering to be tried.
pub(crate) const IDLE: f64 = 0.02;
/// Share of a period a copy engine is busy, from which it counts as saturated.
pub(crate) const SATURATED: f64 = 0.9;
/// Rise in the task rate a raise must bring to be kept.
pub(crate) const GAIN: f64 = 0.04;
/// Fall in the task rate at which a lowering is undone (where the queue waits again).
pub(crate) const COST: f64 = 0.02;
/// Trials made at most over a scheduler's life.
pub(crate) const MAX_TRIALS: u32 = 12;

/// What one period of a GPU's run measured.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct Period {
    /// Its length, ns.
    pub(crate) ns: u64,
    /// Σ granularity of the tasks that ended in it (the work done).
    pub(crate) work: f64,
    /// Per stage: time with at least one command of the stage in flight, ns.
    pub(crate) busy_ns: [u64; Stage::K],
    /// Per stage: time in which a command was ready at the stage and waited for the
    /// stage's limit on this GPU, ns.
    pub(crate) blocked_ns: [u64; Stage::K],
}

impl Period {
    fn rate(&self) -> f64 {
        self.work / self.ns.max(1) as f64
    }

    fn share(&self, ns: u64) -> f64 {
        ns as f64 / self.ns.max(1) as f64
    }

    /// The period's bottleneck: the GPU stage whose ready commands waited most for its
    /// limit, where that was an eighth of the period or more, else the busiest.
    fn bottleneck(&self) -> Stage {
        let gpu = [Stage::Download, Stage::Kernel, Stage::Readback];
        let most = |f: &dyn Fn(Stage) -> u64| gpu.into_iter().max_by_key(|&s| f(s)).unwrap_or(Stage::Kernel);
        let held = most(&|s| self.blocked_ns[s.index()]);
        if self.share(self.blocked_ns[held.index()]) >= BLOCKED / 2.0 {
            held
        } else {
            most(&|s| self.busy_ns[s.index()])
        }
    }
}

/// A limit the adaptation may move, and how.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Knob {
    /// The limit now.
    pub(crate) value: f64,
    /// Its range.
    pub(crate) min: f64,
    pub(crate) max: f64,
    /// Raising multiplies by `times` and adds `plus` (lowering undoes it).
    pub(crate) times: f64,
    pub(crate) plus: f64,
}

impl Knob {
    fn up(&self) -> f64 {
        (self.value * self.times + self.plus).min(self.max)
    }

    fn down(&self) -> f64 {
        ((self.value - self.plus) / self.times).max(self.min)
    }
}

/// What a period's end did to a limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// A trial value is set for the next period.
    Trial,
    /// The trial value stays.
    Kept,
    /// The trial value is undone.
    Undone,
    /// The trial's period had another bottleneck than the one before it (the work
    /// changed): the trial value is undone and nothing concluded.
    Void,
}

/// A change of one stage's limit.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Change {
    pub(crate) stage: Stage,
    pub(crate) from: f64,
    pub(crate) to: f64,
    pub(crate) verdict: Verdict,
    /// The task rate (granularity per ns) before the trial, and in its period (for
    /// verdicts).
    pub(crate) before: f64,
    pub(crate) after: f64,
}

impl Change {
    /// The limit in force after the change.
    pub(crate) fn in_force(&self) -> f64 {
        match self.verdict {
            Verdict::Trial | Verdict::Kept => self.to,
            Verdict::Undone | Verdict::Void => self.from,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum State {
    /// The first period is the pipeline filling up: not measured.
    Warmup,
    Measure,
    Trial {
        stage: Stage,
        from: f64,
        baseline: f64,
        bottleneck: Stage,
        up: bool,
    },
}

/// One GPU's adaptation: its knobs and where its trials stand.
#[derive(Clone, Debug)]
pub(crate) struct Adaptation {
    knobs: [Option<Knob>; Stage::K],
    /// Per stage: the lowest value a raise brought no gain at (not tried again).
    ceiling: [f64; Stage::K],
    /// Per stage: the highest value a lowering cost at (not tried again).
    floor: [f64; Stage::K],
    /// Per stage: the bottleneck under which a raise of it was kept. It is lowered only
    /// under another (so a raise is never undone by the work that wanted it).
    raised_under: [Option<Stage>; Stage::K],
    state: State,
    trials: u32,
}

impl Adaptation {
    /// An adaptation of the stages that have a knob.
    pub(crate) fn new(knobs: [Option<Knob>; Stage::K]) -> Self {
        Adaptation {
            knobs,
            ceiling: [f64::INFINITY; Stage::K],
            floor: [f64::NEG_INFINITY; Stage::K],
            raised_under: [None; Stage::K],
            state: State::Warmup,
            trials: 0,
        }
    }

    /// The limit of `stage` now, if it has a knob.
    #[cfg(test)]
    pub(crate) fn value(&self, stage: Stage) -> Option<f64> {
        self.knobs[stage.index()].map(|k| k.value)
    }

    /// Whether any stage can move at all.
    pub(crate) fn active(&self) -> bool {
        self.trials < MAX_TRIALS && self.knobs.iter().any(|k| k.is_some_and(|k| k.min < k.max))
    }

    /// The end of a period: judges the trial it ran, if any, then starts the next
    /// trial if one is called for. Returns the changes made, in order.
    pub(crate) fn end_period(&mut self, w: &Period) -> Vec<Change> {
        let mut changes = Vec::new();
        if w.ns == 0 {
            return changes;
        }
        let rate = w.rate();
        match self.state {
            State::Warmup => {
                self.state = State::Measure;
                return changes;
            }
            State::Measure => {}
            State::Trial { stage, from, baseline, bottleneck, up } => {
                let k = stage.index();
                let knob = self.knobs[k].as_mut().expect("a trial has a knob");
                let to = knob.value;
                let same = w.bottleneck() == bottleneck;
                let unblocked = w.share(w.blocked_ns[k]) < BLOCKED;
                // A lowering whose queue waits holds commands back: undone, whatever
                // else changed. A raise is judged by the rate, on the same work only.
                let verdict = match (up, same) {
                    (false, _) if unblocked => Verdict::Kept,
                    (false, true) if rate >= baseline * (1.0 - COST) => Verdict::Kept,
                    (false, _) => Verdict::Undone,
                    (true, false) => Verdict::Void,
                    (true, true) if rate >= baseline * (1.0 + GAIN) => Verdict::Kept,
                    (true, true) => Verdict::Undone,
                };
                let keep = verdict == Verdict::Kept;
                if !keep {
                    knob.value = from;
                }
                if keep && up {
                    self.raised_under[k] = Some(bottleneck);
                } else if keep && knob.value <= knob.min {
                    self.raised_under[k] = None;
                }
                if verdict == Verdict::Undone {
                    if up {
                        self.ceiling[k] = self.ceiling[k].min(to);
                    } else {
                        self.floor[k] = self.floor[k].max(to);
                    }
                }
                changes.push(Change { stage, from, to, verdict, before: baseline, after: rate });
                self.state = State::Measure;
                if !keep {
                    // The period measured the trial value, not the one restored: the
                    // next trial waits for a period of its own.
                    return changes;
                }
            }
        }
        if let Some(change) = self.next_trial(w, rate) {
            changes.push(change);
        }
        changes
    }

    /// The GPU ran out of work (a batch ended): a trial under way concludes nothing (its
    /// period will hold other work), so its value is undone.
    pub(crate) fn interrupt(&mut self) -> Option<Change> {
        let State::Trial { stage, from, baseline, .. } = self.state else { return None };
        let knob = self.knobs[stage.index()].as_mut().expect("a trial has a knob");
        let to = std::mem::replace(&mut knob.value, from);
        self.state = State::Measure;
        Some(Change { stage, from, to, verdict: Verdict::Void, before: baseline, after: baseline })
    }

    fn next_trial(&mut self, w: &Period, rate: f64) -> Option<Change> {
        if self.trials >= MAX_TRIALS {
            return None;
        }
        let raise = Stage::ALL
            .iter()
            .filter_map(|&s| {
                let k = s.index();
                let knob = self.knobs[k]?;
                let (to, blocked) = (knob.up(), w.share(w.blocked_ns[k]));
                let saturated = s != Stage::Kernel && w.share(w.busy_ns[k]) >= SATURATED;
                (to > knob.value && to < self.ceiling[k] && blocked >= BLOCKED && !saturated).then_some((s, blocked))
            })
            .max_by(|a, b| a.1.total_cmp(&b.1))
            .map(|(s, _)| (s, true));
        let lower = || {
            Stage::ALL
                .iter()
                .find(|&&s| {
                    let k = s.index();
                    let changed = self.raised_under[k].is_some_and(|b| b != w.bottleneck());
                    self.knobs[k].is_some_and(|knob| {
                        let to = knob.down();
                        changed && to < knob.value && to > self.floor[k] && w.share(w.blocked_ns[k]) <= IDLE
                    })
                })
                .map(|&s| (s, false))
        };
        let (stage, up) = raise.or_else(lower)?;
        let knob = self.knobs[stage.index()].as_mut().expect("chosen with a knob");
        let from = knob.value;
        knob.value = if up { knob.up() } else { knob.down() };
        self.trials += 1;
        self.state = State::Trial { stage, from, baseline: rate, bottleneck: w.bottleneck(), up };
        Some(Change { stage, from, to: knob.value, verdict: Verdict::Trial, before: rate, after: rate })
    }
}

#[cfg(test)]
mod test {
    use super::*;

    /// The kernel stage from 4 GPU-fills, doubling, to 16.
    fn kernel_knob() -> [Option<Knob>; Stage::K] {
        let mut knobs = [None; Stage::K];
        knobs[Stage::Kernel.index()] = Some(Knob { value: 4.0, min: 4.0, max: 16.0, times: 2.0, plus: 0.0 });
        knobs[Stage::Download.index()] = Some(Knob { value: 2.0, min: 2.0, max: 4.0, times: 1.0, plus: 1.0 });
        knobs
    }

    fn period(rate: f64, blocked: [f64; 4], busy: [f64; 4]) -> Period {
        let ns = 1_000_000;
        Period {
            ns,
            work: rate * ns as f64,
            busy_ns: busy.map(|b| (b * ns as f64) as u64),
            blocked_ns: blocked.map(|b| (b * ns as f64) as u64),
        }
    }

    /// A model of a GPU whose kernels keep `share` of the SMs busy each: the task rate
    /// grows with the kernels in flight until they fill the GPU; the kernel stage
    /// waits while kernels are held back.
    fn kernel_bound(a: &Adaptation, share: f64) -> Period {
        let fills = a.value(Stage::Kernel).unwrap();
        let used = (fills * share).min(1.0);
        let blocked = if fills * share < 1.0 { 0.8 } else { 0.5 };
        period(used, [0.0, 0.0, blocked, 0.0], [0.0, 0.3, 1.0, 0.3])
    }

    #[test]
    fn the_first_period_is_not_measured() {
        let mut a = Adaptation::new(kernel_knob());
        assert!(a.end_period(&period(1.0, [0.0, 0.0, 0.9, 0.0], [0.0; 4])).is_empty());
        let c = a.end_period(&period(1.0, [0.0, 0.0, 0.9, 0.0], [0.0; 4]));
        assert_eq!(c.len(), 1);
        assert_eq!((c[0].stage, c[0].from, c[0].to, c[0].verdict), (Stage::Kernel, 4.0, 8.0, Verdict::Trial));
    }

    #[test]
    fn a_raise_that_pays_is_kept_and_one_that_does_not_is_undone() {
        let mut a = Adaptation::new(kernel_knob());
        let mut log = Vec::new();
        for _ in 0..10 {
            let w = kernel_bound(&a, 0.15);
            log.extend(a.end_period(&w));
        }
        // 4 → 8 pays (0.6 → 1.0 of the SMs), 8 → 16 does not: back to 8, for good.
        let verdicts: Vec<_> = log.iter().map(|c| (c.from, c.to, c.verdict)).collect();
        assert_eq!(
            verdicts,
            vec![
                (4.0, 8.0, Verdict::Trial),
                (4.0, 8.0, Verdict::Kept),
                (8.0, 16.0, Verdict::Trial),
                (8.0, 16.0, Verdict::Undone),
            ]
        );
        assert_eq!(a.value(Stage::Kernel), Some(8.0));
    }

    #[test]
    fn a_saturated_copy_engine_is_not_raised() {
        let mut a = Adaptation::new(kernel_knob());
        let copy_bound = period(1.0, [0.0, 0.9, 0.0, 0.0], [0.0, 0.99, 0.2, 0.5]);
        for _ in 0..5 {
            assert!(a.end_period(&copy_bound).is_empty(), "{a:?}");
        }
        // An engine that idles while its queue waits (commands shorter than a turn of
        // the dispatcher) is.
        let starved = period(1.0, [0.0, 0.9, 0.0, 0.0], [0.0, 0.6, 0.2, 0.5]);
        let c = a.end_period(&starved);
        assert_eq!((c[0].stage, c[0].to), (Stage::Download, 3.0));
    }

    #[test]
    fn a_raised_stage_that_no_longer_waits_is_lowered_where_that_costs_nothing() {
        let mut a = Adaptation::new(kernel_knob());
        for _ in 0..6 {
            let w = kernel_bound(&a, 0.15);
            a.end_period(&w);
        }
        assert_eq!(a.value(Stage::Kernel), Some(8.0));
        // The bottleneck moves to the copies: the kernels never wait, at 8 or at 4.
        let copies = period(0.5, [0.0, 0.5, 0.0, 0.0], [0.0, 1.0, 0.1, 0.9]);
        let c = a.end_period(&copies);
        assert_eq!((c[0].from, c[0].to, c[0].verdict), (8.0, 4.0, Verdict::Trial));
        let c = a.end_period(&copies);
        assert_eq!(c[0].verdict, Verdict::Kept);
        for _ in 0..5 {
            assert!(a.end_period(&copies).is_empty());
        }
        assert_eq!(a.value(Stage::Kernel), Some(4.0));
    }

    #[test]
    fn a_lowering_that_makes_the_queue_wait_is_undone_and_not_tried_again() {
        let mut a = Adaptation::new(kernel_knob());
        for _ in 0..6 {
            let w = kernel_bound(&a, 0.15);
            a.end_period(&w);
        }
        // Kernels that no longer wait, still the bottleneck: 8 stays (no flip-flop).
        for _ in 0..3 {
            assert!(a.end_period(&period(1.0, [0.0; 4], [0.0, 0.3, 1.0, 0.3])).is_empty());
        }
        // The readbacks become the busiest stage: lowered to 4 on trial...
        let readbacks = period(1.0, [0.0; 4], [0.0, 0.3, 0.5, 1.0]);
        a.end_period(&readbacks);
        assert_eq!(a.value(Stage::Kernel), Some(4.0));
        // ...where the kernels wait again (and are again the bottleneck, the rate lower):
        // back to 8, for good.
        let c = a.end_period(&kernel_bound(&a, 0.15));
        assert_eq!((c[0].from, c[0].to, c[0].verdict), (8.0, 4.0, Verdict::Undone));
        for _ in 0..5 {
            a.end_period(&readbacks);
        }
        assert_eq!(a.value(Stage::Kernel), Some(8.0));
    }

    #[test]
    fn a_trial_across_a_change_of_work_concludes_nothing() {
        let mut a = Adaptation::new(kernel_knob());
        a.end_period(&kernel_bound(&a, 0.15));
        let c = a.end_period(&kernel_bound(&a, 0.15));
        assert_eq!((c[0].to, c[0].verdict), (8.0, Verdict::Trial));
        // The trial's period is copy-bound, and three times the rate: no verdict.
        let copies = period(3.0, [0.0, 0.6, 0.0, 0.0], [0.0, 1.0, 0.2, 0.6]);
        let c = a.end_period(&copies);
        assert_eq!((c[0].from, c[0].to, c[0].verdict), (4.0, 8.0, Verdict::Void));
        assert_eq!(a.value(Stage::Kernel), Some(4.0));
        // The same raise may be tried again once the kernels are the bottleneck again.
        let c = a.end_period(&kernel_bound(&a, 0.15));
        assert_eq!((c[0].to, c[0].verdict), (8.0, Verdict::Trial));
        let c = a.end_period(&kernel_bound(&a, 0.15));
        assert_eq!(c[0].verdict, Verdict::Kept);
    }

    #[test]
    fn a_trial_cut_short_by_the_end_of_the_work_is_void() {
        let mut a = Adaptation::new(kernel_knob());
        assert_eq!(a.interrupt(), None);
        a.end_period(&kernel_bound(&a, 0.15));
        a.end_period(&kernel_bound(&a, 0.15));
        assert_eq!(a.value(Stage::Kernel), Some(8.0));
        let c = a.interrupt().unwrap();
        assert_eq!((c.from, c.to, c.verdict), (4.0, 8.0, Verdict::Void));
        assert_eq!(a.value(Stage::Kernel), Some(4.0));
        // Nothing marked: the raise may be tried again.
        let c = a.end_period(&kernel_bound(&a, 0.15));
        assert_eq!((c[0].to, c[0].verdict), (8.0, Verdict::Trial));
    }

    #[test]
    fn it_is_deterministic_and_bounded() {
        let run = || {
            let mut a = Adaptation::new(kernel_knob());
            let mut log = Vec::new();
            let mut s = 0x9e37_79b9_u64;
            for _ in 0..400 {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                let r = |shift: u32| ((s >> shift) & 0xff) as f64 / 255.0;
                let w = period(0.5 + r(0), [0.0, r(8), r(16), r(24)], [0.0, r(32), r(40), r(48)]);
                log.extend(a.end_period(&w));
                for st in Stage::ALL {
                    if let (Some(v), Some(k)) = (a.value(st), a.knobs[st.index()]) {
                        assert!((k.min..=k.max).contains(&v), "{st}: {v} outside {k:?}");
                    }
                }
            }
            (log, a.trials)
        };
        let (first, trials) = run();
        assert_eq!(run().0, first, "the same periods give the same changes");
        assert!(trials <= MAX_TRIALS);
        assert_eq!(first.iter().filter(|c| c.verdict == Verdict::Trial).count() as u32, trials);
    }
}
