//! The soak of the robustness work in CI: `chariot_studies::soak` as `examples/soak.rs` runs it, shorter (20,000 tasks of
//! 1 to 4096 elements in waves of 1,000 on the sim backend). Every output is checked;
//! the thread count must not grow, device memory must be back at its start value after
//! every wave, and resident memory may grow by at most 32 MiB after the first wave (a
//! generous allowance: the full run of a million tasks grew by less than 1 MiB). Memory
//! and threads are counted, not timed, so they may be asserted.

mod common;

use chariot::sim::SimProfile;
use chariot::Backend;
use chariot_studies::soak::{self, Config, Outcome, Sample};
use common::with_timeout;
use indicatif::ProgressBar;

const RSS_ALLOWANCE_KIB: u64 = 32 * 1024;

/// The only test of this binary: a second one would start and end a test thread of
/// its own while the soak counts the threads of the process.
#[test]
fn twenty_thousand_small_tasks_leave_nothing_behind() {
    the_verdict_catches_growth();
    with_timeout(300, || {
        let (gpus, streams, wave, tasks) = (2, 3, 1_000, 20_000);
        let cfg = Config {
            backend: Backend::SimWith(SimProfile::instant().with_gpus(gpus)),
            gpus,
            streams,
            tasks,
            wave,
            max_len: 4096,
            seed: 7,
        };
        let o = soak::run(&cfg, &ProgressBar::hidden()).expect("the soak runs");
        println!("{}", o.summary());
        assert_eq!(o.backend, "sim");
        assert_eq!(o.tasks, tasks);
        assert_eq!(o.samples.len(), tasks as usize / wave + 1, "the start and one sample per wave");
        assert!(o.elements_checked >= tasks, "every task's output was checked");
        let problems = o.problems(RSS_ALLOWANCE_KIB);
        assert!(problems.is_empty(), "{problems:#?}");
        // The samples measure something: each wave's device buffers were counted while
        // held (D·S copies of two buffers), and gone after its synchronize.
        let start = o.samples[0].device_bytes.expect("the sim backend counts device memory");
        for s in &o.samples[1..] {
            let held = s.device_bytes_in_wave.expect("counted");
            assert!(held >= start + (2 * gpus * streams * 4) as u64, "wave {}: {held} bytes held", s.wave);
            assert_eq!(s.device_bytes, Some(start), "wave {}", s.wave);
        }
        assert!(o.samples.iter().all(|s| s.rss_kib.is_some() && s.threads.is_some()), "Linux: /proc is read");
        // Shutdown joins every thread the scheduler started.
        assert_eq!(o.threads_after, o.threads_before);
    });
}

fn sample(wave: usize, rss_kib: u64, threads: u64, device_bytes: u64) -> Sample {
    Sample {
        wave,
        tasks: wave as u64 * 10,
        rss_kib: Some(rss_kib),
        threads: Some(threads),
        driver_mapped_kib: Some(0),
        device_bytes: Some(device_bytes),
        device_bytes_in_wave: Some(device_bytes + 100),
        ..Sample::default()
    }
}

/// The soak's verdict catches each kind of growth, and passes a flat run.
fn the_verdict_catches_growth() {
    let flat = Outcome {
        samples: vec![sample(0, 1000, 7, 0), sample(1, 5000, 7, 0), sample(2, 5100, 7, 0), sample(3, 5000, 7, 0)],
        mapped_before_kib: Some(0),
        mapped_after_kib: Some(0),
        ..Outcome::default()
    };
    assert!(flat.problems(1024).is_empty(), "{:?}", flat.problems(1024));
    assert_eq!(flat.rss_growth(), Some((5000, 5100)));

    let mut threads = flat.clone();
    threads.samples[2].threads = Some(8);
    assert!(threads.problems(1024).iter().any(|p| p.contains("threads grew from 7")));

    let mut device = flat.clone();
    device.samples[3].device_bytes = Some(4096);
    assert!(device.problems(1024).iter().any(|p| p.contains("device memory in use was Some(4096)")));

    let mut rss = flat.clone();
    rss.samples[3].rss_kib = Some(5000 + 1025);
    assert!(rss.problems(1024).iter().any(|p| p.contains("resident memory grew")));
    assert!(rss.problems(2048).is_empty(), "within the allowance");

    let mut pinned = flat.clone();
    pinned.mapped_after_kib = Some(64);
    assert!(pinned.problems(1024).iter().any(|p| p.contains("pinned host memory")));

    let mut wrong = flat;
    wrong.wrong_count = 1;
    wrong.wrong.push("task #3".into());
    assert!(wrong.problems(1024).iter().any(|p| p.contains("1 wrong result(s)")));
}
