//! The cluster form: the predicted scaling of chariot-align's search in the cluster form to
//! 8, 32 and 128 nodes of 8 GPUs, and where the shared file system or the hand-out
//! becomes the bottleneck. chariot's own sim backend runs in scaled real time with a
//! thread per engine, so it cannot simulate 1,024 GPUs on a small machine; this is a
//! discrete-event model in virtual time instead (`cluster_scale/model.rs`), calibrated
//! from the H100 measurements (`calibrate.rs`) and checked against them at 1-2 GPUs.
//!
//! `cargo bench --bench cluster_scale -- --help` lists the options. Every row is checked
//! against the model's own lower bound; a row below it stops the study with an error.

// A bench's root is in benches/, so its modules are named by path.
#[path = "cluster_scale/calibrate.rs"]
mod calibrate;
#[path = "cluster_scale/model.rs"]
mod model;
#[path = "cluster_scale/network.rs"]
mod network;
#[path = "cluster_scale/report.rs"]
mod report;

use calibrate::{Costs, Workload, LARGE_MEAN_LEN, LARGE_RESIDUES, MEASURED, PAPER_CHUNK_RESIDUES};
use clap::Parser;
use model::{run, Layout};
use network::Network;
use report::Row;
use std::path::PathBuf;
use std::process::ExitCode;

/// Predicted scaling of the cluster form's protein search (a discrete-event model).
#[derive(Parser, Debug)]
#[command(name = "cluster_scale", long_about = None)]
struct Cli {
    /// Folder for the CSVs and PNGs (created if missing).
    #[arg(long, default_value = "results/model/cluster-scale")]
    out: PathBuf,
    /// Node counts, comma-separated (1 to 4096 each).
    #[arg(long, value_delimiter = ',', default_value = "1,2,4,8,16,32,64,128")]
    nodes: Vec<usize>,
    /// GPUs per node (1 to 64).
    #[arg(long, default_value_t = 8)]
    gpus_per_node: usize,
    /// Stream slots per GPU, S (1 to 256; chariot chose 16 on H100 hosts).
    #[arg(long, default_value_t = 16)]
    streams: usize,
    /// The shared file system's aggregate bandwidths to compare, GB/s (positive).
    #[arg(long, value_delimiter = ',', default_value = "50,200,1000")]
    fs_gbps: Vec<f64>,
    /// Each node's network link, GB/s (positive; 25 = 200 Gb/s InfiniBand).
    #[arg(long, default_value_t = 25.0)]
    link_gbps: f64,
    /// One-way latencies to compare, microseconds (0 to 10,000; 2 = InfiniBand, 30 = Ethernet).
    #[arg(long, value_delimiter = ',', default_value = "2,30")]
    latency_us: Vec<f64>,
    /// Rank 0's hand-out thread: microseconds per claim answered (0 to 10,000; 2 is
    /// what it took on a 32-core 2 × H200 host, results/nvidia-h200-x2/mpi-overhead).
    #[arg(long, default_value_t = 2.0)]
    handout_us: f64,
    /// Building and submitting one task on a rank, run or skipped, microseconds (0 to 10,000).
    #[arg(long, default_value_t = 5.0)]
    submit_us: f64,
    /// The write callback's part under the rank's writer lock, ns per TSV row (0 to
    /// 10,000; default: the measured uncontended write, 39 ns, an upper estimate).
    #[arg(long)]
    write_locked_ns: Option<f64>,
    /// Residues per database chunk, millions (0.001 to 1,000), for the scaling runs.
    #[arg(long, default_value_t = PAPER_CHUNK_RESIDUES / 1e6)]
    chunk_mres: f64,
    /// The hand-out sweep's chunk sizes, millions of residues (0.001 to 1,000 each).
    #[arg(long, value_delimiter = ',', default_value = "6.135,1.5,0.384,0.096,0.048")]
    sweep_chunk_mres: Vec<f64>,
    /// The hand-out sweep's service times, microseconds (0 to 10,000 each; 300 is this
    /// 2-core machine's oversubscribed measurement).
    #[arg(long, value_delimiter = ',', default_value = "2,20,300")]
    sweep_handout_us: Vec<f64>,
    /// Nodes in the hand-out sweep (1 to 4096).
    #[arg(long, default_value_t = 128)]
    sweep_nodes: usize,
    /// Skip the PNGs.
    #[arg(long)]
    no_plots: bool,
    /// Passed by `cargo bench`; ignored.
    #[arg(long, hide = true)]
    bench: bool,
}

/// `v` within [lo, hi], or an error naming the option, the value and what is allowed.
fn within(name: &str, v: f64, lo: f64, hi: f64, unit: &str) -> Result<(), String> {
    if v.is_finite() && v >= lo && v <= hi {
        Ok(())
    } else {
        Err(format!("--{name} {v}: must be {lo} to {hi} {unit}"))
    }
}

impl Cli {
    fn validate(&self) -> Result<(), String> {
        if self.nodes.is_empty() {
            return Err("--nodes: give at least one node count".into());
        }
        for &n in &self.nodes {
            within("nodes", n as f64, 1.0, 4096.0, "nodes")?;
        }
        within("sweep-nodes", self.sweep_nodes as f64, 1.0, 4096.0, "nodes")?;
        if !self.nodes.contains(&1) {
            return Err("--nodes: must include 1 (efficiency is measured against one node)".into());
        }
        within("gpus-per-node", self.gpus_per_node as f64, 1.0, 64.0, "GPUs")?;
        within("streams", self.streams as f64, 1.0, 256.0, "slots")?;
        for &f in &self.fs_gbps {
            within("fs-gbps", f, 1e-3, 1e6, "GB/s")?;
        }
        within("link-gbps", self.link_gbps, 1e-3, 1e6, "GB/s")?;
        for &l in &self.latency_us {
            within("latency-us", l, 0.0, 1e4, "us")?;
        }
        within("handout-us", self.handout_us, 0.0, 1e4, "us")?;
        within("submit-us", self.submit_us, 0.0, 1e4, "us")?;
        if let Some(w) = self.write_locked_ns {
            within("write-locked-ns", w, 0.0, 1e4, "ns")?;
        }
        within("chunk-mres", self.chunk_mres, 1e-3, 1e3, "M residues")?;
        for &c in &self.sweep_chunk_mres {
            within("sweep-chunk-mres", c, 1e-3, 1e3, "M residues")?;
        }
        for &h in &self.sweep_handout_us {
            within("sweep-handout-us", h, 0.0, 1e4, "us")?;
        }
        if self.fs_gbps.is_empty()
            || self.latency_us.is_empty()
            || self.sweep_chunk_mres.is_empty()
            || self.sweep_handout_us.is_empty()
        {
            return Err("--fs-gbps, --latency-us, --sweep-chunk-mres and --sweep-handout-us each need a value".into());
        }
        Ok(())
    }
}

/// Predicted against measured at the three measured configurations.
fn validate_model(costs: &Costs, handout_us: f64) -> String {
    let mut s = String::from("config,ranks,gpus,measured_s,predicted_s,error_pct,calibrates,source\n");
    println!("validation: the paper-shaped database, 7 queries, one host (page cache, shared memory)");
    println!("  {:<18} {:>10} {:>10} {:>8}  note", "config", "measured", "model", "error");
    for m in MEASURED {
        let layout = Layout { nodes: m.nodes, gpus_per_node: m.gpus_per_node, ranks_per_node: m.ranks_per_node };
        let o = run(&Workload::paper(), layout, &Network::one_host(handout_us), costs);
        let err = 100.0 * (o.time_s - m.seconds) / m.seconds;
        let note = if m.calibrates { "calibrates the GPU rate (not a test)" } else { "a test" };
        println!("  {:<18} {:>8.3} s {:>8.3} s {:>+7.1}%  {note}", m.name, m.seconds, o.time_s, err);
        s += &format!(
            "{},{},{},{},{:.4},{:.1},{},{}\n",
            m.name,
            layout.ranks(),
            layout.gpus(),
            m.seconds,
            o.time_s,
            err,
            m.calibrates,
            m.source
        );
    }
    s
}

/// One scaling series: every node count for one layout, latency and file system.
fn scaling(cli: &Cli, costs: &Costs, weak: bool, per_gpu: bool, lat: f64, fs: f64) -> Vec<Row> {
    let net = Network::cluster(lat, cli.link_gbps, fs, cli.handout_us);
    let mut rows: Vec<Row> = Vec::new();
    let mut nodes = cli.nodes.clone();
    nodes.sort_unstable();
    nodes.dedup();
    for &n in &nodes {
        // Weak: 85 G / 16 residues a node, so 16 nodes hold the large database.
        let residues = if weak { LARGE_RESIDUES / 16.0 * n as f64 } else { LARGE_RESIDUES };
        let work = Workload::uniform(residues, cli.chunk_mres * 1e6, LARGE_MEAN_LEN);
        let layout = Layout {
            nodes: n,
            gpus_per_node: cli.gpus_per_node,
            ranks_per_node: if per_gpu { cli.gpus_per_node } else { 1 },
        };
        let out = run(&work, layout, &net, costs);
        let t1 = rows.first().map_or(out.time_s, |r| r.out.time_s);
        let scaled = if weak { t1 / out.time_s } else { t1 / (n as f64 * out.time_s) };
        rows.push(Row {
            scaling: if weak { "weak" } else { "strong" },
            layout: if per_gpu { "gpu" } else { "node" },
            nodes: n,
            gpus: layout.gpus(),
            latency_us: lat,
            fs_gbps: fs,
            handout_us: cli.handout_us,
            chunk_mres: cli.chunk_mres,
            gcups: work.cells() / out.time_s / 1e9,
            efficiency: out.u_gpu,
            scaled,
            out,
        });
    }
    rows
}

fn print_rows(title: &str, rows: &[Row], show: &[usize]) {
    println!("\n{title}");
    println!(
        "  {:<5} {:>5} {:>5} {:>6} {:>6} {:>9} {:>9} {:>6} {:>6} | {:>5} {:>5} {:>6} {:>7} {:>5} | saturated",
        "rank",
        "lat",
        "FS",
        "nodes",
        "GPUs",
        "time s",
        "GCUPS",
        "eff",
        "scaled",
        "fs",
        "link",
        "writer",
        "handout",
        "loop"
    );
    for r in rows.iter().filter(|r| show.contains(&r.nodes)) {
        let o = &r.out;
        println!(
            "  {:<5} {:>5} {:>5} {:>6} {:>6} {:>9.3} {:>9.0} {:>6.2} {:>6.2} | {:>5.2} {:>5.2} {:>6.2} {:>7.3} {:>5.2} | {}",
            r.layout, r.latency_us, r.fs_gbps, r.nodes, r.gpus, o.time_s, r.gcups, r.efficiency, r.scaled, o.u_fs, o.u_link,
            o.u_writer, o.u_handout, o.u_loop, o.bottleneck()
        );
    }
}

/// The first node count of each series where the GPUs are no longer what saturates,
/// and where T(1 node) / (nodes x T) falls under 80%.
fn crossovers(rows: &[Row]) {
    println!("\ncrossovers (strong scaling): where the GPUs stop being what saturates (busy >= 90%)");
    let mut keys: Vec<(&str, u64, u64)> =
        rows.iter().map(|r| (r.layout, r.latency_us.to_bits(), r.fs_gbps.to_bits())).collect();
    keys.dedup();
    for (layout, lat, fs) in keys {
        let series: Vec<&Row> = rows
            .iter()
            .filter(|r| (r.layout, r.latency_us.to_bits(), r.fs_gbps.to_bits()) == (layout, lat, fs))
            .collect();
        let moved = series.iter().find(|r| r.out.bottleneck() != "gpu");
        let low = series.iter().find(|r| r.scaled < 0.8);
        println!(
            "  rank per {layout:<4} latency {:>4} us FS {:>6} GB/s: {}; T(1)/(n T) < 0.8 from {}",
            f64::from_bits(lat),
            f64::from_bits(fs),
            moved.map_or("GPUs saturate throughout".into(), |r| format!(
                "{} from {} nodes",
                r.out.bottleneck(),
                r.nodes
            )),
            low.map_or("never".into(), |r| format!("{} nodes", r.nodes))
        );
    }
}

/// On paper: the node count at which each shared resource's demand reaches its
/// capacity, with every GPU at its measured rate (the simulation then shows the way
/// there: queues, fill, drain, the tail).
fn on_paper(cli: &Cli, costs: &Costs) {
    let c = Workload::uniform(LARGE_RESIDUES, cli.chunk_mres * 1e6, LARGE_MEAN_LEN).chunks[0];
    let kernel = c.residues * calibrate::QUERY_RESIDUES / costs.gpu_cells_per_s;
    let rows = c.seqs * calibrate::QUERIES;
    let bytes = c.residues + c.seqs * costs.bytes_per_seq + rows * costs.tsv_bytes_per_row;
    let gpn = cli.gpus_per_node as f64;
    let per_node_bps = bytes / kernel * gpn;
    println!(
        "\non paper, chunks of {:.3} M residues: a GPU finishes one every {:.1} ms and moves {:.1} MB for it",
        cli.chunk_mres,
        kernel * 1e3,
        bytes / 1e6
    );
    for &fs in &cli.fs_gbps {
        println!(
            "  file system {fs} GB/s: saturates at {:.1} nodes ({:.2} GB/s a node)",
            fs * 1e9 / per_node_bps,
            per_node_bps / 1e9
        );
    }
    println!(
        "  node link {} GB/s: {:.0}% busy at any node count",
        cli.link_gbps,
        100.0 * per_node_bps / (cli.link_gbps * 1e9)
    );
    for &h in &cli.sweep_handout_us {
        println!("  hand-out at {h} us a claim: saturates at {:.0} nodes", kernel / (h * 1e-6 * gpn));
    }
    println!(
        "  every rank's loop at {} us a task: saturates at {:.0} nodes",
        cli.submit_us,
        kernel / (costs.submit_s * gpn)
    );
    println!(
        "  writer lock at {:.0} ns a row: {:.0}% busy with a rank per node, {:.0}% with a rank per GPU",
        costs.write_locked_s_per_row * 1e9,
        100.0 * rows * costs.write_locked_s_per_row / kernel * gpn,
        100.0 * rows * costs.write_locked_s_per_row / kernel
    );
}

fn study(cli: &Cli) -> Result<(), String> {
    cli.validate()?;
    std::fs::create_dir_all(&cli.out).map_err(|e| format!("cannot create {}: {e}", cli.out.display()))?;
    let costs = Costs::measured(cli.submit_us * 1e-6, cli.streams, cli.write_locked_ns.map(|w| w * 1e-9));
    println!(
        "calibration: {:.0} GCUPS a GPU, host read {:.2} GB/s a thread, download {:.1} GB/s, write {:.0} ns a row ({:.0} ns locked), S = {}",
        costs.gpu_cells_per_s / 1e9,
        costs.host_read_bps / 1e9,
        costs.h2d_bps / 1e9,
        (costs.write_free_s_per_row + costs.write_locked_s_per_row) * 1e9,
        costs.write_locked_s_per_row * 1e9,
        costs.streams
    );
    on_paper(cli, &costs);
    let v = validate_model(&costs, cli.handout_us);
    let path = cli.out.join("validation.csv");
    std::fs::write(&path, v).map_err(|e| format!("cannot write {}: {e}", path.display()))?;

    let (mut strong, mut weak) = (Vec::new(), Vec::new());
    for per_gpu in [false, true] {
        for &lat in &cli.latency_us {
            for &fs in &cli.fs_gbps {
                strong.extend(scaling(cli, &costs, false, per_gpu, lat, fs));
                weak.extend(scaling(cli, &costs, true, per_gpu, lat, fs));
            }
        }
    }
    let net = Network::cluster(cli.latency_us[0], cli.link_gbps, cli.fs_gbps.iter().copied().fold(0.0, f64::max), 0.0);
    let mut sweep = Vec::new();
    for &h in &cli.sweep_handout_us {
        let net = Network { handout_s: h * 1e-6, ..net.clone() };
        for &c in &cli.sweep_chunk_mres {
            let work = Workload::uniform(LARGE_RESIDUES, c * 1e6, LARGE_MEAN_LEN);
            // A rank per GPU, so that the writer lock (rank per node) does not hide the hand-out.
            let layout =
                Layout { nodes: cli.sweep_nodes, gpus_per_node: cli.gpus_per_node, ranks_per_node: cli.gpus_per_node };
            let out = run(&work, layout, &net, &costs);
            let gcups = work.cells() / out.time_s / 1e9;
            let (latency_us, fs_gbps) = (net.latency_s * 1e6, net.fs_bps / 1e9);
            sweep.push(Row {
                scaling: "sweep",
                layout: "gpu",
                nodes: cli.sweep_nodes,
                gpus: layout.gpus(),
                latency_us,
                fs_gbps,
                handout_us: h,
                chunk_mres: c,
                gcups,
                efficiency: out.u_gpu,
                // No one-node run in the sweep to compare with.
                scaled: f64::NAN,
                out,
            });
        }
    }
    for rows in [&strong, &weak, &sweep] {
        report::check(rows)?;
    }
    let show = [1, 8, 32, 128];
    print_rows(
        "strong scaling: 85 G residues (UniRef-sized), 7 queries (eff = kernel-bound time / T = GPU busy share; scaled = T(1 node) / (nodes x T))",
        &strong,
        &show,
    );
    crossovers(&strong);
    print_rows(
        "weak scaling: 5.3 G residues a node (eff = kernel-bound time / T = GPU busy share; scaled = T(1 node) / T)",
        &weak,
        &show,
    );
    println!("\nhand-out sweep at {} nodes (rank per GPU; largest FS; eff = GPU busy share)", cli.sweep_nodes);
    println!(
        "  {:>8} {:>10} {:>9} {:>9} {:>6} {:>8} {:>6}  saturated",
        "chunk M", "handout us", "tasks", "time s", "eff", "handout", "loop"
    );
    for r in &sweep {
        let o = &r.out;
        println!(
            "  {:>8} {:>10} {:>9} {:>9.3} {:>6.2} {:>8.2} {:>6.2}  {}",
            r.chunk_mres,
            r.handout_us,
            o.tasks,
            o.time_s,
            o.u_gpu,
            o.u_handout,
            o.u_loop,
            o.bottleneck()
        );
    }
    println!("\nevery row's time is at or above the model's lower bound (checked)");
    report::csv(&cli.out.join("strong.csv"), &strong)?;
    report::csv(&cli.out.join("weak.csv"), &weak)?;
    report::csv(&cli.out.join("handout-sweep.csv"), &sweep)?;
    if !cli.no_plots {
        let fs_mid = cli.fs_gbps.get(cli.fs_gbps.len() / 2).copied().unwrap_or(200.0);
        report::plots(&cli.out, &strong, &weak, &sweep, cli.latency_us[0], &cli.fs_gbps, fs_mid)?;
    }
    println!("wrote {}", cli.out.display());
    Ok(())
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match study(&cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("cluster_scale: {e}");
            ExitCode::FAILURE
        }
    }
}
