//! The automatic choice of S, stage depth and the stage limits from the hardware, made
//! at `build` for every knob the user left unset, with the reason for each (the hardware-aware defaults).
//!
//! The paper's thresholds (L = (min(C,S),1,1,1), depth 1) were chosen for GPUs with one
//! hardware queue, where a command queued behind another blocks everything after it.
//! Today's GPUs have a copy engine per direction and run kernels of different streams
//! side by side, so the choice follows what each GPU reports:
//!
//! * **stage depth** 2 where a GPU has two or more copy engines (a second copy waits in
//!   the engine's own queue, blocking nothing), else 1;
//! * **kernel stage**: where kernels run concurrently, kernels are admitted while those
//!   in flight fill at most `2 × depth` GPUs (each kernel counts its grid over one full
//!   wave, from the occupancy calculator): a kernel that fills the GPU runs beside the
//!   next only at its last wave, one that fills a tenth of it runs beside nine others;
//! * **S**: one slot per CPU core (so every core can run a callback), at least the
//!   commands the GPU stages hold (2 copy directions × depth + 4 kernels), at most 32;
//! * **copy stages**: `depth` commands each, which the online adaptation may raise to
//!   `2 × depth`; the hard caps (the [`Thresholds`]) are those maxima.

use super::{Stage, Thresholds};
use crate::backend::device::GpuInfo;

/// One automatic choice: what was chosen, why, and the builder call that fixes it.
///
/// ```
/// use chariot::{Backend, Scheduler};
/// let s = Scheduler::builder().backend(Backend::Sim).cpu_cores(16).build()?;
/// let streams = &s.tuning().choices[1];
/// assert_eq!(streams.call, ".streams(16)");
/// assert!(streams.to_string().starts_with("streams 16: "), "{streams}");
/// # Ok::<(), chariot::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Choice {
    /// The knob and its value, e.g. `streams 16`.
    pub what: String,
    /// Why, from what the hardware reported.
    pub why: String,
    /// The builder call that sets the same value by hand, e.g. `.streams(16)`.
    pub call: String,
}

impl std::fmt::Display for Choice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {} [{}]", self.what, self.why, self.call)
    }
}

/// What `build` settled on: the values in force and, for each knob chosen
/// automatically, a [`Choice`] saying why. [`Scheduler::tuning`](crate::Scheduler::tuning)
/// returns it and every [`Report`](crate::report::Report) prints it.
///
/// ```
/// use chariot::{Backend, Scheduler};
/// use chariot::sim::SimProfile;
/// // A GPU with one copy engine and no concurrent kernels gets the paper's gating.
/// let mut old = SimProfile::single_copy_engine();
/// old.concurrent_kernels = false;
/// let s = Scheduler::builder().backend(Backend::SimWith(old)).cpu_cores(4).build()?;
/// let t = s.tuning();
/// assert_eq!((t.streams, t.stage_depth, t.kernel_fills), (4, 1, None));
/// assert_eq!(t.thresholds.local, [4, 1, 1, 1]);
/// // A Hopper GPU: depth 2, kernels by occupancy, a slot per core.
/// let s = Scheduler::builder().backend(Backend::Sim).cpu_cores(16).build()?;
/// let t = s.tuning();
/// assert_eq!((t.streams, t.stage_depth, t.kernel_fills, t.copy_limit), (16, 2, Some(4.0), 2));
/// assert_eq!(t.thresholds.local, [16, 4, 16, 4]);
/// # Ok::<(), chariot::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Tuning {
    /// S, stream slots per GPU.
    pub streams: usize,
    /// The stage depth: commands a copy stage starts with per GPU.
    pub stage_depth: usize,
    /// The hard caps L and G: no stage ever exceeds them, whatever the adaptation does.
    pub thresholds: Thresholds,
    /// Commands each copy stage may hold per GPU at the start (the adaptation moves it
    /// between `stage_depth` and the cap `thresholds.local`).
    pub copy_limit: usize,
    /// The kernel stage's capacity per GPU in GPU-fills: kernels are admitted while the
    /// fills of those in flight stay within it (a kernel's fill is its grid over one
    /// full wave, at most 1). `None`: kernels are counted against L_2 alone, as in the
    /// paper.
    pub kernel_fills: Option<f64>,
    /// Whether the online adaptation runs at all.
    pub adapt: bool,
    /// Per stage (by [`Stage::index`]): whether the adaptation may move its limit
    /// (those chosen here, not those set by hand).
    pub adaptive: [bool; Stage::K],
    /// Each automatic choice and its reason, in the order above; knobs the user set
    /// have none.
    pub choices: Vec<Choice>,
}

impl std::fmt::Display for Tuning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut first = true;
        for c in &self.choices {
            if !first {
                writeln!(f)?;
            }
            first = false;
            write!(f, "{c}")?;
        }
        Ok(())
    }
}

/// The most stream slots chosen automatically (more can be asked for, up to 64).
pub(crate) const MAX_AUTO_STREAMS: usize = 32;

/// What the user set by hand; `None` is "choose".
#[derive(Clone, Debug, Default)]
pub(crate) struct Asked {
    pub(crate) streams: Option<usize>,
    pub(crate) depth: Option<usize>,
    pub(crate) local: Option<[usize; Stage::K]>,
    pub(crate) global: Option<[usize; Stage::K]>,
    pub(crate) paper: bool,
    pub(crate) kernels: Option<usize>,
    pub(crate) fills: Option<f64>,
    pub(crate) adapt: Option<bool>,
}

/// The least of a property over the GPUs (a choice must suit the weakest).
fn least<T: Ord + Copy>(gpus: &[GpuInfo], f: impl Fn(&GpuInfo) -> T) -> Option<T> {
    gpus.iter().map(f).min()
}

/// Chooses every knob `asked` leaves open, for `gpus` on a host with `cores` cores and
/// `buses` host buses.
pub(crate) fn choose(asked: &Asked, gpus: &[GpuInfo], cores: usize, buses: usize) -> Tuning {
    let d = gpus.len().max(1);
    let engines = least(gpus, |g| g.copy_engines).unwrap_or(1);
    let concurrent = gpus.iter().all(|g| g.concurrent_kernels);
    let mut choices = Vec::new();
    let manual = asked.local.is_some() || asked.global.is_some() || asked.paper;

    let depth = asked.depth.unwrap_or_else(|| {
        if manual {
            choices.push(Choice {
                what: "stage depth 1".into(),
                why: "thresholds set by hand are the paper's gating: one command per threshold".into(),
                call: ".stage_depth(1)".into(),
            });
            return 1;
        }
        let depth = if engines >= 2 { 2 } else { 1 };
        let why = if engines >= 2 {
            format!(
                "each GPU has {engines} copy engines, so a second copy can wait in its direction's own engine \
                 queue, blocking nothing, and the engine never idles between two commands"
            )
        } else {
            "one copy engine serves both directions: a copy queued behind another would hold up the other \
             direction (the paper's gating)"
                .to_string()
        };
        choices.push(Choice { what: format!("stage depth {depth}"), why, call: format!(".stage_depth({depth})") });
        depth
    });

    let copy_cap = if engines >= 2 { 2 * depth } else { depth };
    let kernel_slots = if concurrent { 4 } else { 1 };
    let gpu_slots = if engines >= 2 { 2 * depth } else { depth } + kernel_slots;
    let streams = asked.streams.unwrap_or_else(|| {
        let per_gpu = cores.div_ceil(d);
        let s = per_gpu.clamp(gpu_slots, MAX_AUTO_STREAMS.max(gpu_slots));
        let why = format!(
            "a slot per CPU core ({cores} cores / {d} GPU(s) = {per_gpu}), so that every core can run a \
             callback; at least the {gpu_slots} commands the GPU stages hold at once ({} copy, {kernel_slots} \
             kernel), at most {MAX_AUTO_STREAMS}",
            gpu_slots - kernel_slots
        );
        choices.push(Choice { what: format!("streams {s}"), why, call: format!(".streams({s})") });
        s
    });

    let (mut thresholds, copy_limit, mut kernel_fills) = if manual {
        let mut t = Thresholds::paper(cores, streams, d, buses);
        if let Some(l) = asked.local {
            t.local = l;
        }
        if let Some(g) = asked.global {
            t.global = g;
        }
        let t = t.with_depth(depth);
        (t, t.local[Stage::Download.index()], None)
    } else {
        let cpu = (cores.min(streams), cores.min(d.saturating_mul(streams)));
        // GPUs on links of their own (B = D) are limited only by their own caps; GPUs
        // that share B < D buses keep the paper's bus gating, depth commands a bus.
        let bus = if buses >= d { d.saturating_mul(copy_cap) } else { buses.saturating_mul(depth) };
        let t = Thresholds {
            local: [cpu.0, copy_cap, streams, copy_cap],
            global: [cpu.1, bus, d.saturating_mul(streams), bus],
        };
        choices.push(Choice {
            what: format!("callbacks {} at once", cpu.1),
            why: format!(
                "one per core ({cores}), and no more than the D·S = {} tasks that hold a slot",
                d.saturating_mul(streams)
            ),
            call: format!(".global_thresholds([{}, ..])", cpu.1),
        });
        choices.push(Choice {
            what: format!("copies {depth} per direction and GPU"),
            why: format!(
                "the stage depth; the adaptation may raise it to {copy_cap} where a copy stage's queue waits \
                 while its engine idles"
            ),
            call: format!(".stage_depth({depth})"),
        });
        let fills = if let (true, Some(f)) = (concurrent, asked.fills) {
            Some(f)
        } else if concurrent {
            let fills = 2.0 * depth as f64;
            choices.push(Choice {
                what: format!("kernel stage {fills} GPU-fills at once"),
                why: format!(
                    "the GPU runs kernels of different streams side by side: kernels are admitted while those in \
                     flight fill at most 2 × depth = {fills} GPUs by occupancy (grid over one full wave), so a \
                     kernel that fills a tenth of the GPU runs beside others, one of many waves beside one more \
                     (its last wave leaves SMs idle); the report names each kernel's concurrency"
                ),
                call: format!(".kernel_fills({fills})"),
            });
            Some(fills)
        } else {
            choices.push(Choice {
                what: format!("kernel concurrency {depth}"),
                why: format!(
                    "the GPU runs one kernel at a time: {depth} in flight (the stage depth), the next waiting in \
                     the hardware queue"
                ),
                call: format!(".kernel_concurrency({depth})"),
            });
            None
        };
        let mut t = t;
        if !concurrent {
            t.local[Stage::Kernel.index()] = depth;
            t.global[Stage::Kernel.index()] = d.saturating_mul(depth);
        }
        (t, depth, fills)
    };
    if let Some(n) = asked.kernels {
        thresholds.local[Stage::Kernel.index()] = n;
        thresholds.global[Stage::Kernel.index()] = d.saturating_mul(n);
        kernel_fills = None;
    }
    // Limits set by hand are the user's: the adaptation moves only those chosen here
    // (the builder refuses `adapt(true)` beside thresholds set by hand).
    let adapt = asked.adapt.unwrap_or(true) && !manual;
    let mut adaptive = [false; Stage::K];
    if adapt {
        adaptive[Stage::Download.index()] = copy_cap > copy_limit;
        adaptive[Stage::Readback.index()] = copy_cap > copy_limit;
        adaptive[Stage::Kernel.index()] = kernel_fills.is_some() && asked.fills.is_none();
    }
    if adapt {
        choices.push(Choice {
            what: "adaptation on".into(),
            why: "after the first tasks, each GPU raises a stage's limit where its queue waits and the run gets \
                  faster by it, and lowers it again where that costs nothing or less; the changes are listed \
                  in the report"
                .into(),
            call: ".adapt(false)".into(),
        });
    }
    Tuning { streams, stage_depth: depth, thresholds, copy_limit, kernel_fills, adapt, adaptive, choices }
}

#[cfg(test)]
mod test {
    use super::*;

    fn gpu(copy_engines: u32, concurrent_kernels: bool) -> GpuInfo {
        GpuInfo::for_tests(copy_engines, concurrent_kernels)
    }

    #[test]
    fn the_choice_follows_the_engines() {
        let auto = Asked::default();
        // One copy engine, no concurrent kernels: the paper's GPU.
        let t = choose(&auto, &[gpu(1, false)], 8, 1);
        assert_eq!((t.stage_depth, t.streams, t.copy_limit, t.kernel_fills), (1, 8, 1, None));
        assert_eq!(t.thresholds.local, [8, 1, 1, 1]);
        // One copy engine, concurrent kernels.
        let t = choose(&auto, &[gpu(1, true)], 2, 1);
        assert_eq!((t.stage_depth, t.streams, t.kernel_fills), (1, 5, Some(2.0)));
        assert_eq!(t.thresholds.local, [2, 1, 5, 1]);
        // Two and three copy engines: depth 2, the adaptation may go to 4.
        for engines in [2, 3] {
            let t = choose(&auto, &[gpu(engines, true)], 4, 1);
            assert_eq!((t.stage_depth, t.streams, t.copy_limit, t.kernel_fills), (2, 8, 2, Some(4.0)));
            assert_eq!(t.thresholds.local, [4, 4, 8, 4]);
            assert_eq!(t.thresholds.global, [4, 4, 8, 4]);
            let t = choose(&auto, &[gpu(engines, false)], 4, 1);
            assert_eq!((t.kernel_fills, t.thresholds.local[2], t.streams), (None, 2, 5));
        }
        // Many cores: a slot each, at most 32; two GPUs share the cores.
        assert_eq!(choose(&auto, &[gpu(3, true)], 16, 1).streams, 16);
        assert_eq!(choose(&auto, &[gpu(3, true)], 128, 1).streams, 32);
        let two = [gpu(3, true), gpu(3, true)];
        let t = choose(&auto, &two, 32, 2);
        assert_eq!(t.streams, 16);
        assert_eq!(t.thresholds.global, [32, 8, 32, 8]);
        // Four GPUs on two shared buses: depth copies a bus.
        let t = choose(&auto, &[gpu(3, true), gpu(3, true), gpu(3, true), gpu(3, true)], 8, 2);
        assert_eq!(t.thresholds.global, [8, 4, 32, 4]);
        // The weakest GPU decides.
        let t = choose(&auto, &[gpu(3, true), gpu(1, false)], 8, 2);
        assert_eq!((t.stage_depth, t.kernel_fills), (1, None));
    }

    #[test]
    fn what_the_user_set_stays_and_has_no_reason() {
        let asked = Asked { streams: Some(3), depth: Some(1), ..Default::default() };
        let t = choose(&asked, &[gpu(3, true)], 16, 1);
        assert_eq!((t.streams, t.stage_depth, t.copy_limit), (3, 1, 1));
        assert!(t.choices.iter().all(|c| !c.what.starts_with("streams") && !c.what.starts_with("stage depth")));
        // Thresholds by hand: the paper's gating, counted, not adapted, at depth 1
        // unless the depth is set too.
        let asked = Asked { streams: Some(4), paper: true, ..Default::default() };
        let t = choose(&asked, &[gpu(3, true)], 16, 1);
        assert_eq!(t.thresholds, Thresholds::paper(16, 4, 1, 1));
        let asked = Asked { streams: Some(4), paper: true, depth: Some(2), ..Default::default() };
        let t = choose(&asked, &[gpu(3, true)], 16, 1);
        assert_eq!(t.thresholds, Thresholds::paper(16, 4, 1, 1).with_depth(2));
        assert_eq!((t.kernel_fills, t.adapt), (None, false));
        // Kernel concurrency by hand: counted, whatever the rest.
        let asked = Asked { kernels: Some(8), ..Default::default() };
        let t = choose(&asked, &[gpu(3, true), gpu(3, true)], 16, 2);
        assert_eq!((t.thresholds.local[2], t.thresholds.global[2], t.kernel_fills), (8, 16, None));
        assert!(t.adapt);
        // Adaptation off by hand.
        let t = choose(&Asked { adapt: Some(false), ..Default::default() }, &[gpu(3, true)], 16, 1);
        assert!(!t.adapt && t.choices.iter().all(|c| !c.what.starts_with("adaptation")));
    }
}
