//! The image benchmark (task graphs and resident data, benchmark 1) on the sim backend: chariot's run of the
//! per-image DAG (one task per node, resident buffers in a ring) gives the CPU
//! reference's output for every image at D ∈ {1, 2} × S ∈ {1, 4}, with rings smaller
//! than the stream so that buffer sets are reused; the benchmark's code path runs and
//! writes its CSV. The `#[ignore]`d test runs every variant on a CUDA GPU.

mod common;

use chariot::sim::SimProfile;
use chariot::{Backend, Error, Scheduler};
use chariot_studies::images::baseline::HandWritten;
use chariot_studies::images::bench::{self, Config, Variant};
use chariot_studies::images::stream::ChariotImages;
use chariot_studies::images::{compare, fill_images, reference, Node};
use common::with_timeout;

const DEADLINE_S: u64 = 120;

/// A scheduler on the instant sim backend with D GPUs and S streams.
fn sched(gpus: usize, streams: usize) -> Scheduler {
    let backend = Backend::SimWith(SimProfile::instant().with_gpus(gpus));
    Scheduler::builder().backend(backend).gpus(gpus).streams(streams).build().unwrap()
}

/// Runs `count` images of `n × n` through chariot on a ring of `ring` sets and checks
/// each against the reference: to the last bit (the twins are the reference's
/// functions) and so within the tolerance.
fn check_stream(gpus: usize, streams: usize, n: usize, count: usize, ring: usize) {
    let s = sched(gpus, streams);
    let mut input = s.alloc_host::<f32>(n * n * count).unwrap();
    let output = s.alloc_host::<f32>(n * n * count).unwrap();
    fill_images(&mut input.write(), (gpus * 10 + streams) as u64);
    let images = ChariotImages::new(&s, n, ring).unwrap();
    assert_eq!(images.ring(), ring);
    let report = images.run(&s, &input, &output, count).unwrap();
    assert_eq!(report.records.iter().map(|r| r.task).collect::<std::collections::HashSet<_>>().len(), count * 13);
    let (input, output) = (input.read(), output.read());
    for i in 0..count {
        let r = i * n * n..(i + 1) * n * n;
        let want = reference::pipeline(&input[r.clone()], n);
        let got = &output[r];
        let c = compare(got, &want);
        assert!(c.ok(), "D={gpus} S={streams} ring={ring} image {i}: {c:?}");
        let exact = got.iter().zip(&want).all(|(a, b)| a.to_bits() == b.to_bits());
        assert!(exact, "D={gpus} S={streams} ring={ring} image {i}: not bit-identical to the twins' reference");
    }
}

/// D ∈ {1, 2} × S ∈ {1, 4}: every image matches the reference; 7 images over a ring of
/// 3 sets, so every set is reused and the inferred dependencies must order the reuse.
#[test]
fn chariot_matches_the_reference_at_every_d_and_s() {
    with_timeout(DEADLINE_S, || {
        for gpus in [1, 2] {
            for streams in [1, 4] {
                check_stream(gpus, streams, 20, 7, 3);
            }
        }
    });
}

/// A ring of one set: every image reuses the buffers of the one before, on two GPUs
/// with four streams each; an image side that is no multiple of the blocks' sides.
#[test]
fn a_ring_of_one_set_is_ordered_by_the_inferred_dependencies() {
    with_timeout(DEADLINE_S, || check_stream(2, 4, 37, 5, 1));
}

/// The benchmark's code path on sim: warm-up and timed rounds of chariot, every
/// output checked, the summary and the CSV.
#[test]
fn the_bench_runs_on_sim() {
    with_timeout(DEADLINE_S, || {
        let s = sched(1, 2);
        let cfg = Config { n: 16, images: 5, rounds: 2, ring: 2, gpu: 0, seed: 3, variants: vec![Variant::Chariot] };
        let mut seen = 0;
        let outcome = bench::run(&s, &cfg, |_| seen += 1).unwrap();
        assert_eq!(seen, 3);
        assert_eq!(outcome.samples.len(), 3);
        assert!(outcome.samples.iter().all(|x| x.check.ok() && x.check.pixels == 16 * 16 * 5), "{outcome:?}");
        assert!(outcome.samples.iter().all(|x| x.makespan_ns.is_some_and(|m| m > 0)));
        let summary = bench::summarize(&outcome.samples);
        assert_eq!(summary.len(), 1);
        assert!(summary[0].all_ok && summary[0].speedup_over_sync.is_none());
        assert!(bench::table(&summary, cfg.images).contains("chariot"));
        let mut csv = Vec::new();
        bench::write_csv(&mut csv, &cfg, &outcome).unwrap();
        let text = String::from_utf8(csv).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], bench::CSV_HEADER);
        assert_eq!(lines.len(), 4);
        assert!(lines[1].starts_with("chariot,0,true,sim,16,5,2,"), "{}", lines[1]);
    });
}

/// The hand-written ways need CUDA: on a sim scheduler the benchmark refuses them
/// before allocating anything.
#[test]
fn hand_written_variants_need_cuda() {
    let s = sched(1, 1);
    let cfg = Config {
        n: 8,
        images: 1,
        rounds: 1,
        ring: 1,
        gpu: 0,
        seed: 1,
        variants: vec![Variant::Hand(HandWritten::Sync)],
    };
    assert!(matches!(bench::run(&s, &cfg, |_| {}), Err(Error::InvalidConfig { name: "variants", .. })));
    let empty = Config { variants: vec![], ..cfg };
    assert!(matches!(bench::run(&s, &empty, |_| {}), Err(Error::InvalidConfig { .. })));
    assert!(matches!(ChariotImages::new(&s, 0, 2), Err(Error::InvalidConfig { .. })));
    assert!(matches!(ChariotImages::new(&s, 8, 0), Err(Error::InvalidConfig { name: "ring", .. })));
    assert_eq!(Node::ALL.len(), 13);
}

/// On a CUDA GPU: all four variants over a few images of a side that is no multiple of
/// the blocks' sides, every output within the tolerance of the reference.
/// `cargo test --release -p chariot-studies --test images -- --include-ignored`
#[test]
#[ignore = "needs a CUDA GPU"]
fn every_variant_matches_the_reference_on_cuda() {
    let s = Scheduler::builder().backend(Backend::Cuda).gpus(1).build().unwrap();
    for (n, images, ring) in [(100, 6, 2), (257, 5, 4), (1024, 9, 4)] {
        let cfg = Config { n, images, rounds: 1, ring, gpu: 0, seed: 5, variants: Variant::ALL.to_vec() };
        let outcome = bench::run(&s, &cfg, |x| {
            println!("{n}² × {images}, {} round {}: {:?}", x.variant.name(), x.round, x.check)
        })
        .unwrap();
        for x in &outcome.samples {
            assert!(x.check.ok(), "{n}² {}: {:?}", x.variant.name(), x.check);
        }
    }
}
