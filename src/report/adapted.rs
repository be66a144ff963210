//! What the report says of the limits: each change the online adaptation made, and
//! each kernel's concurrency from its fill (the hardware-aware defaults).

use crate::stage::adaptation::{Change, Verdict};
use crate::stage::{Stage, Tuning};
use serde::Serialize;

/// A change the online adaptation made to one GPU's stage limit (see
/// [`Tuning::adapt`](crate::stage::Tuning::adapt)). It prints as the report's
/// `adapted:` lines do, e.g. `GPU 0 kernel stage 4 -> 8 GPU-fills: kept (task rate x1.50)`.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Adapted {
    /// The GPU (index in the scheduler's list).
    pub gpu: usize,
    /// The stage whose limit moved.
    pub stage: Stage,
    /// The limit before and after: commands for the copy stages, GPU-fills for the
    /// kernel stage.
    pub from: f64,
    /// See `from`.
    pub to: f64,
    /// `trial` (set for the next period of tasks), `kept`, `undone` (back to `from`), or
    /// `void` (back to `from`: the work changed during the trial, nothing concluded).
    pub verdict: &'static str,
    /// The GPU's task rate (task granularity per µs) before the trial, and in the
    /// trial's period (the same for a trial).
    pub rate_before: f64,
    /// See `rate_before`.
    pub rate_after: f64,
}

impl Adapted {
    pub(crate) fn new(gpu: usize, c: Change) -> Adapted {
        let verdict = match c.verdict {
            Verdict::Trial => "trial",
            Verdict::Kept => "kept",
            Verdict::Undone => "undone",
            Verdict::Void => "void",
        };
        Adapted {
            gpu,
            stage: c.stage,
            from: c.from,
            to: c.to,
            verdict,
            rate_before: c.before * 1e3,
            rate_after: c.after * 1e3,
        }
    }
}

impl std::fmt::Display for Adapted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let unit = if self.stage == Stage::Kernel { "GPU-fills" } else { "commands" };
        write!(f, "GPU {} {} stage {} -> {} {unit}: {}", self.gpu, self.stage, self.from, self.to, self.verdict)?;
        if self.verdict != "trial" && self.verdict != "void" {
            write!(f, " (task rate x{:.2})", self.rate_after / self.rate_before.max(f64::MIN_POSITIVE))?;
        }
        Ok(())
    }
}

/// The launches of one kernel so far: the fewest and most blocks, and the blocks one
/// wave of the first GPU holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct KernelUse {
    pub(crate) name: String,
    pub(crate) min_blocks: u64,
    pub(crate) max_blocks: u64,
    pub(crate) wave: u32,
}

impl KernelUse {
    /// Notes a launch of `blocks` blocks of `name` in `uses`: whether that changed them
    /// (a new kernel, or a launch outside its known range).
    pub(crate) fn note(uses: &mut Vec<KernelUse>, name: &str, blocks: u64, wave: u32) -> bool {
        match uses.iter_mut().find(|u| u.name == name) {
            Some(u) => {
                let was = (u.min_blocks, u.max_blocks, u.wave);
                u.min_blocks = u.min_blocks.min(blocks);
                u.max_blocks = u.max_blocks.max(blocks);
                u.wave = u.wave.max(wave);
                was != (u.min_blocks, u.max_blocks, u.wave)
            }
            None => {
                uses.push(KernelUse { name: name.to_string(), min_blocks: blocks, max_blocks: blocks, wave });
                true
            }
        }
    }
}

/// One line per kernel: how many run at once on a GPU, and why.
///
/// With the kernel stage counted by fill, a kernel of fill f runs ⌊capacity / f⌋ at once
/// beside its own kind (at most L_2 = S), with the capacity in force now (`fills_now`,
/// which the adaptation may have moved from the tuning's start). The line ends in the
/// call that fixes it: `.kernel_concurrency(n)` where every launch gives the same n,
/// else `.kernel_fills(capacity)`, which admits each launch by its own fill as here.
pub(crate) fn kernel_lines(tuning: &Tuning, fills_now: Option<f64>, uses: &[KernelUse]) -> Vec<String> {
    let cap = tuning.thresholds.local[Stage::Kernel.index()];
    uses.iter()
        .map(|u| {
            let fill = |blocks: u64| if u.wave == 0 { 1.0 } else { (blocks as f64 / u.wave as f64).min(1.0) };
            let (lo, hi) = (fill(u.min_blocks), fill(u.max_blocks));
            let blocks = if u.min_blocks == u.max_blocks {
                format!("{} blocks", u.min_blocks)
            } else {
                format!("{}-{} blocks", u.min_blocks, u.max_blocks)
            };
            let share = |f: f64| format!("{:.0}%", f * 100.0);
            let fills = if lo == hi { share(hi) } else { format!("{}-{}", share(lo), share(hi)) };
            match fills_now.or(tuning.kernel_fills) {
                Some(capacity) => {
                    let at_once = |f: f64| ((capacity / f).floor() as usize).clamp(1, cap);
                    let (most, least) = (at_once(lo), at_once(hi));
                    let (n, call) = if most == least {
                        (most.to_string(), format!(".kernel_concurrency({most})"))
                    } else {
                        (format!("{least}-{most}"), format!(".kernel_fills({capacity})"))
                    };
                    format!(
                        "kernel concurrency {n}: {} fills {fills} of the SMs ({blocks}; one wave holds {}), \
                         {capacity} GPU-fills at once, at most S = {cap} [{call}]",
                        u.name, u.wave
                    )
                }
                None => format!(
                    "kernel concurrency {cap}: {} fills {fills} of the SMs ({blocks}; one wave holds {}), counted \
                     against the kernel stage's L = {cap} [.kernel_concurrency({cap})]",
                    u.name, u.wave
                ),
            }
        })
        .collect()
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::backend::device::GpuInfo;
    use crate::stage::tuning::{choose, Asked};

    fn hopper() -> Tuning {
        let gpu = GpuInfo::for_tests(3, true);
        choose(&Asked::default(), &[gpu], 16, 1)
    }

    #[test]
    fn a_change_prints_as_the_reports_adapted_line() {
        let a = Adapted {
            gpu: 0,
            stage: Stage::Kernel,
            from: 4.0,
            to: 8.0,
            verdict: "kept",
            rate_before: 1.0,
            rate_after: 1.5,
        };
        assert_eq!(a.to_string(), "GPU 0 kernel stage 4 -> 8 GPU-fills: kept (task rate x1.50)");
    }

    #[test]
    fn kernel_lines_give_the_capacity_in_force_and_a_call_that_reproduces_it() {
        let t = hopper();
        assert_eq!((t.kernel_fills, t.thresholds.local[Stage::Kernel.index()]), (Some(4.0), 16));
        let (mut uses, wave) = (Vec::new(), 528);
        KernelUse::note(&mut uses, "small", 53, wave); // a tenth of a wave
                                                       // At the start: 4 GPU-fills, so 16 at once (capped by S), one count for all.
        assert_eq!(
            kernel_lines(&t, None, &uses),
            ["kernel concurrency 16: small fills 10% of the SMs (53 blocks; one wave holds 528), \
              4 GPU-fills at once, at most S = 16 [.kernel_concurrency(16)]"]
        );
        // Launches from a tenth of a wave to two waves, after the adaptation raised the
        // capacity to 8: 8 to 16 at once, which only admission by fill reproduces.
        KernelUse::note(&mut uses, "small", 1056, wave);
        let line = &kernel_lines(&t, Some(8.0), &uses)[0];
        assert!(line.starts_with("kernel concurrency 8-16: small fills 10%-100% of the SMs (53-1056 blocks"), "{line}");
        assert!(line.ends_with("8 GPU-fills at once, at most S = 16 [.kernel_fills(8)]"), "{line}");
        // Counted (no fill capacity): L_2 kernels, whatever their fill.
        let mut counted = t.clone();
        counted.kernel_fills = None;
        assert!(kernel_lines(&counted, None, &uses)[0].starts_with("kernel concurrency 16: "));
    }
}
