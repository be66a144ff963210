//! The host study (`--host-study`): per-direction copy rates of D GPUs copying at
//! once, and the host memory's own bandwidth.

use crate::plan::elements;
use chariot::{Backend, Scheduler};
use chariot_studies::demo::fill;
use std::path::Path;
use std::time::Instant;

/// `--host-study`: per-direction copy rates of D GPUs copying at once, and the host
/// memory's bandwidth. Prints a table and writes `host.csv` into `out`.
pub fn host_study(backend: &Backend, gpus: &[usize], mib: f64, out: Option<&Path>) -> Result<(), String> {
    use chariot::Stage;
    let len = elements(mib);
    let mut csv = String::from("gpus,rep,batch,gpu,up_gb_s,down_gb_s\n");
    println!("{:>2} {:>6} {:>4} {:>10} {:>10} {:>10}", "D", "batch", "GPU", "up GB/s", "down GB/s", "sum");
    for &d in gpus {
        let sched = Scheduler::builder()
            .backend(backend.clone())
            .gpus(d)
            .streams(4)
            .stage_depth(2)
            .adapt(false)
            .build()
            .map_err(|e| e.to_string())?;
        let n = 8 * d;
        let mut input = sched.alloc_host::<u32>(len * n).map_err(|e| e.to_string())?;
        let output = sched.alloc_host::<u32>(len * n).map_err(|e| e.to_string())?;
        fill(&mut input, 7);
        let d_in = sched.alloc::<u32>(len).map_err(|e| e.to_string())?;
        let d_out = sched.alloc::<u32>(len).map_err(|e| e.to_string())?;
        // 0: uploads alone, 1: readbacks alone, 2: both at once.
        let batch = |kind: u8| -> Result<chariot::report::Report, String> {
            for i in 0..n {
                let r = i * len..(i + 1) * len;
                if kind != 1 {
                    sched
                        .task(2 * i as u64, 1)
                        .download(&d_in, 0, &input, r.clone())
                        .submit()
                        .map_err(|e| e.to_string())?;
                }
                if kind != 0 {
                    sched
                        .task(2 * i as u64 + 1, 1)
                        .readback(&output, r, &d_out, 0)
                        .submit()
                        .map_err(|e| e.to_string())?;
                }
            }
            sched.synchronize().map_err(|e| e.to_string())
        };
        batch(2)?;
        for rep in 0..5 {
            for (kind, name) in [(0u8, "up"), (1, "down"), (2, "both")] {
                let report = batch(kind)?;
                let (mut tu, mut td) = (0.0, 0.0);
                for g in 0..d {
                    let rate = |stage: Stage| {
                        let bytes: u64 = report
                            .records
                            .iter()
                            .filter(|r| r.gpu as usize == g && r.stage == stage)
                            .map(|r| r.bytes)
                            .sum();
                        bytes as f64 / report.busy_ns[g][stage.index()].max(1) as f64
                    };
                    let (u, dn) = (rate(Stage::Download), rate(Stage::Readback));
                    tu += u;
                    td += dn;
                    csv += &format!("{d},{rep},{name},{g},{u:.3},{dn:.3}\n");
                }
                csv += &format!("{d},{rep},{name},all,{tu:.3},{td:.3}\n");
                println!("{d:>2} {name:>6} {:>4} {tu:>10.1} {td:>10.1} {:>10.1}", "all", tu + td);
            }
        }
    }
    // The host memory itself: memcpy between two 1 GiB buffers, read and written bytes.
    let bytes = 1usize << 30;
    let src = vec![1u8; bytes];
    let mut dst = vec![0u8; bytes];
    let cores = std::thread::available_parallelism().map_or(1, |c| c.get());
    for threads in [1, cores / 2, cores] {
        let mut best = 0.0f64;
        for _ in 0..3 {
            let t0 = Instant::now();
            let per = bytes.div_ceil(threads);
            std::thread::scope(|scope| {
                for (s, d) in src.chunks(per).zip(dst.chunks_mut(per)) {
                    scope.spawn(move || d.copy_from_slice(s));
                }
            });
            best = best.max(2.0 * bytes as f64 / t0.elapsed().as_nanos() as f64);
        }
        println!("host memory, memcpy on {threads} thread(s): {best:.1} GB/s read + written");
        csv += &format!("0,0,memcpy-{threads},all,{best:.3},0\n");
    }
    if let Some(dir) = out {
        std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
        std::fs::write(dir.join("host.csv"), csv).map_err(|e| e.to_string())?;
    }
    Ok(())
}
