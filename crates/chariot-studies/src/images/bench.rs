//! The image benchmark's runs (`benches/images.rs` is its command line): chariot with
//! its defaults against the three hand-written ways ([`HandWritten`]), alternated for
//! several rounds on the same pinned host buffers, every output checked pixel by pixel
//! against the CPU reference, medians and speedups over the synchronous way, a CSV.

use super::baseline::{HandRig, HandWritten};
use super::{compare, fill_images, references, Check};
use chariot::{Error, HostBuffer, Result, Scheduler};
use std::io::Write;
use std::time::Instant;

/// One way to run the image stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Variant {
    /// chariot: one task per node, resident buffers, default scheduler settings.
    Chariot,
    /// A hand-written way (CUDA only).
    Hand(HandWritten),
}

impl Variant {
    /// chariot, then the three hand-written ways.
    pub const ALL: [Variant; 4] = [
        Variant::Chariot,
        Variant::Hand(HandWritten::Sync),
        Variant::Hand(HandWritten::Graph),
        Variant::Hand(HandWritten::MultiStream),
    ];

    /// Short name for tables and the CSV.
    pub fn name(self) -> &'static str {
        match self {
            Variant::Chariot => "chariot",
            Variant::Hand(h) => h.name(),
        }
    }

    /// The variant a name names (as [`Variant::name`] writes it).
    ///
    /// ```
    /// use chariot_studies::images::bench::Variant;
    /// assert_eq!(Variant::from_name("cuda-graph"), Some(Variant::ALL[2]));
    /// assert_eq!(Variant::from_name("graph"), None);
    /// ```
    pub fn from_name(name: &str) -> Option<Variant> {
        Variant::ALL.into_iter().find(|v| v.name() == name)
    }
}

/// What to run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// Image side: images are `n × n` floats.
    pub n: usize,
    /// Images in the stream.
    pub images: usize,
    /// Timed rounds (each variant once a round, in an order rotated every round),
    /// after one warm-up round.
    pub rounds: usize,
    /// Buffer sets K of chariot's ring, the graphs and the multi-stream pipeline.
    pub ring: usize,
    /// CUDA ordinal of the hand-written runs (chariot uses the scheduler's GPUs).
    pub gpu: usize,
    /// Seed of the images.
    pub seed: u64,
    /// The variants, in their first round's order.
    pub variants: Vec<Variant>,
}

/// One run of one variant.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sample {
    /// Which.
    pub variant: Variant,
    /// 0 for the warm-up round, then 1 ..= rounds.
    pub round: usize,
    /// Host time from the first call to the last result, ns.
    pub wall_ns: u64,
    /// Building what is reused (the graphs, their first run only), ns; not in `wall_ns`.
    pub setup_ns: u64,
    /// chariot's makespan from its report, ns.
    pub makespan_ns: Option<u64>,
    /// The output against the reference.
    pub check: Check,
}

/// The runs, and what was around them.
#[derive(Clone, Debug, PartialEq)]
pub struct Outcome {
    /// Every run, warm-up included, in the order they ran.
    pub samples: Vec<Sample>,
    /// The scheduler's backend.
    pub backend: &'static str,
    /// Computing the CPU reference of all images, ns.
    pub reference_ns: u64,
}

/// chariot's side of the runs.
struct ChariotSide(super::stream::ChariotImages);

impl ChariotSide {
    fn open(sched: &Scheduler, cfg: &Config) -> Result<Self> {
        super::stream::ChariotImages::new(sched, cfg.n, cfg.ring).map(ChariotSide)
    }

    /// Runs the images; chariot's makespan.
    fn run(&self, sched: &Scheduler, input: &HostBuffer<f32>, output: &HostBuffer<f32>, count: usize) -> Result<u64> {
        self.0.run(sched, input, output, count).map(|r| r.makespan_ns)
    }
}

/// Fills `host` with NaN on all cores, so that a pixel a run does not write fails the check.
fn poison(host: &mut HostBuffer<f32>) {
    let mut guard = host.write();
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let per = guard.len().div_ceil(threads).max(1);
    std::thread::scope(|scope| {
        for part in guard.chunks_mut(per) {
            scope.spawn(move || part.fill(f32::NAN));
        }
    });
}

/// Runs the benchmark on `sched` (built with chariot's defaults by the caller):
/// allocates the pinned input and output, fills the images, computes their reference
/// outputs, then runs a warm-up round and `cfg.rounds` timed rounds of every variant,
/// checking every output image. `progress` sees each sample as it comes.
///
/// # Errors
/// [`Error::InvalidConfig`] for an empty configuration, or hand-written variants on a
/// scheduler that is not on CUDA; what allocating, running or the hand-written
/// pipelines return. A mismatch is not an error: it is in the samples
/// ([`Check::ok`]).
pub fn run(sched: &Scheduler, cfg: &Config, mut progress: impl FnMut(&Sample)) -> Result<Outcome> {
    let bad = |name: &'static str, value: String, allowed: &str| Error::InvalidConfig {
        name,
        value,
        allowed: allowed.into(),
    };
    if cfg.n == 0 || cfg.images == 0 || cfg.ring == 0 || cfg.variants.is_empty() {
        return Err(bad("config", format!("{cfg:?}"), "n, images, ring and variants non-zero"));
    }
    let hand = cfg.variants.iter().any(|v| matches!(v, Variant::Hand(_)));
    if hand && sched.backend_name() != "cuda" {
        return Err(bad("variants", format!("{:?}", cfg.variants), "chariot only, on a scheduler that is not on CUDA"));
    }
    let len = cfg.n * cfg.n;
    let total = len.checked_mul(cfg.images).ok_or_else(|| bad("images", cfg.images.to_string(), "fewer"))?;
    let mut input = sched.alloc_host::<f32>(total)?;
    let mut output = sched.alloc_host::<f32>(total)?;
    fill_images(&mut input.write(), cfg.seed);
    let t0 = Instant::now();
    let refs = references(&input.read(), cfg.n, cfg.images);
    let reference_ns = t0.elapsed().as_nanos() as u64;
    let chariot = if cfg.variants.contains(&Variant::Chariot) { Some(ChariotSide::open(sched, cfg)?) } else { None };
    let mut rig = if hand { Some(HandRig::open(cfg.gpu, cfg.n, cfg.ring)?) } else { None };
    let mut samples = Vec::new();
    for round in 0..=cfg.rounds {
        let k = cfg.variants.len();
        for j in 0..k {
            let variant = cfg.variants[(j + round) % k];
            poison(&mut output);
            let (wall_ns, setup_ns, makespan_ns) = match variant {
                Variant::Chariot => {
                    let side = chariot.as_ref().expect("opened above");
                    let t0 = Instant::now();
                    let makespan = side.run(sched, &input, &output, cfg.images)?;
                    (t0.elapsed().as_nanos() as u64, 0, Some(makespan))
                }
                Variant::Hand(way) => {
                    let t = rig.as_mut().expect("opened above").run(way, &input, &mut output, cfg.images)?;
                    (t.wall_ns, t.setup_ns, None)
                }
            };
            let check = compare(&output.read(), &refs);
            let sample = Sample { variant, round, wall_ns, setup_ns, makespan_ns, check };
            progress(&sample);
            samples.push(sample);
        }
    }
    Ok(Outcome { samples, backend: sched.backend_name(), reference_ns })
}

/// The median of the timed rounds of one variant.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Summary {
    /// Which.
    pub variant: Variant,
    /// Median wall time of its timed rounds, ns.
    pub median_ns: u64,
    /// The synchronous way's median over this one's (None without a sync run).
    pub speedup_over_sync: Option<f64>,
    /// Whether every one of its outputs, warm-up included, matched the reference.
    pub all_ok: bool,
    /// The largest error of its outputs.
    pub max_abs_err: f32,
}

/// The median of `values` (the lower middle for an even count); 0 for none.
fn median(mut values: Vec<u64>) -> u64 {
    values.sort_unstable();
    values.get(values.len().saturating_sub(1) / 2).copied().unwrap_or(0)
}

/// Medians and speedups over sync, one per variant present, in `Variant::ALL` order.
///
/// ```
/// use chariot_studies::images::bench::{summarize, Sample, Variant};
/// use chariot_studies::images::Check;
/// use chariot_studies::images::baseline::HandWritten;
/// let ok = Check { pixels: 4, mismatches: 0, max_abs_err: 0.0 };
/// let s = |variant, round, wall_ns| Sample { variant, round, wall_ns, setup_ns: 0, makespan_ns: None, check: ok };
/// let samples = [
///     s(Variant::Chariot, 0, 999), s(Variant::Chariot, 1, 10), s(Variant::Chariot, 2, 12), s(Variant::Chariot, 3, 11),
///     s(Variant::Hand(HandWritten::Sync), 1, 33), s(Variant::Hand(HandWritten::Sync), 2, 30),
///     s(Variant::Hand(HandWritten::Sync), 3, 36),
/// ];
/// let sum = summarize(&samples);
/// assert_eq!(sum[0].median_ns, 11);
/// assert_eq!(sum[0].speedup_over_sync, Some(3.0));
/// ```
pub fn summarize(samples: &[Sample]) -> Vec<Summary> {
    let timed = |v: Variant| samples.iter().filter(move |s| s.variant == v && s.round > 0);
    let sync = Variant::Hand(HandWritten::Sync);
    let sync_median = timed(sync).next().map(|_| median(timed(sync).map(|s| s.wall_ns).collect()));
    Variant::ALL
        .into_iter()
        .filter(|&v| timed(v).next().is_some())
        .map(|v| {
            let median_ns = median(timed(v).map(|s| s.wall_ns).collect());
            let all = samples.iter().filter(|s| s.variant == v);
            Summary {
                variant: v,
                median_ns,
                speedup_over_sync: sync_median.map(|m| m as f64 / median_ns.max(1) as f64),
                all_ok: all.clone().all(|s| s.check.ok()),
                max_abs_err: all.fold(0.0f32, |m, s| m.max(s.check.max_abs_err)),
            }
        })
        .collect()
}

/// The CSV's header.
pub const CSV_HEADER: &str =
    "variant,round,warmup,backend,n,images,ring,wall_ns,setup_ns,makespan_ns,us_per_image,pixels_checked,mismatches,max_abs_err";

/// Writes `outcome`'s samples as CSV ([`CSV_HEADER`]) into `out`.
///
/// # Errors
/// What writing returns.
pub fn write_csv(out: &mut impl Write, cfg: &Config, outcome: &Outcome) -> std::io::Result<()> {
    writeln!(out, "{CSV_HEADER}")?;
    for s in &outcome.samples {
        writeln!(
            out,
            "{},{},{},{},{},{},{},{},{},{},{:.3},{},{},{:e}",
            s.variant.name(),
            s.round,
            s.round == 0,
            outcome.backend,
            cfg.n,
            cfg.images,
            cfg.ring,
            s.wall_ns,
            s.setup_ns,
            s.makespan_ns.map(|m| m.to_string()).unwrap_or_default(),
            s.wall_ns as f64 / 1e3 / cfg.images.max(1) as f64,
            s.check.pixels,
            s.check.mismatches,
            s.check.max_abs_err,
        )?;
    }
    Ok(())
}

/// The summary as a table, one line per variant.
pub fn table(summary: &[Summary], images: usize) -> String {
    let mut t = format!(
        "{:<14} {:>12} {:>12} {:>15} {:>10} {:>12}\n",
        "variant", "median ms", "µs/image", "speedup/sync", "checked", "max |err|"
    );
    for s in summary {
        t += &format!(
            "{:<14} {:>12.3} {:>12.1} {:>15} {:>10} {:>12.2e}\n",
            s.variant.name(),
            s.median_ns as f64 / 1e6,
            s.median_ns as f64 / 1e3 / images.max(1) as f64,
            s.speedup_over_sync.map(|x| format!("{x:.2}×")).unwrap_or_else(|| "-".into()),
            if s.all_ok { "ok" } else { "MISMATCH" },
            s.max_abs_err,
        );
    }
    t
}
