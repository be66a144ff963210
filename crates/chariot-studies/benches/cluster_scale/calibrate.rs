//! Where the model's per-chunk costs come from: figures measured on H100s, each with its
//! file. The network's figures are in `network.rs`: they are assumptions, not
//! measurements, since nothing past one host was measured.

/// The paper-shaped database (results/nvidia-h100-x1/align/README.md): residues, sequences,
/// chunks, and the prepared file's bytes (`two-1.err` in results/nvidia-h100-x2/mpi/logs.tgz).
pub const PAPER_RESIDUES: f64 = 404_900_667.0;
pub const PAPER_SEQS: f64 = 536_000.0;
pub const PAPER_CHUNKS: usize = 66;
pub const PAPER_FILE_BYTES: f64 = 422_588_811.0;
/// The 7 queries' residues (63 + 127 + 255 + 511 + 1023 + 2047 + 5000).
pub const QUERY_RESIDUES: f64 = 9026.0;
pub const QUERIES: f64 = 7.0;

/// Measured wall times (first submit to the end of `synchronize`), seconds.
pub struct Measured {
    pub name: &'static str,
    pub nodes: usize,
    pub gpus_per_node: usize,
    pub ranks_per_node: usize,
    pub seconds: f64,
    pub source: &'static str,
    /// Whether a model parameter was fitted to this figure (then it is no test).
    pub calibrates: bool,
}

/// The three measured configurations of the 7-query search of the paper-shaped database.
pub const MEASURED: [Measured; 3] = [
    Measured {
        name: "1 GPU",
        nodes: 1,
        gpus_per_node: 1,
        ranks_per_node: 1,
        seconds: 0.954,
        source: "nvidia-h100-x1/align-vs-cudasw/probes/slots.txt, all7, 12 runs 0.953-0.955 s",
        calibrates: true,
    },
    Measured {
        name: "1 rank x 2 GPUs",
        nodes: 1,
        gpus_per_node: 2,
        ranks_per_node: 1,
        seconds: 0.551,
        source: "nvidia-h100-x2/mpi/rounds.txt, median of 5 (0.540-0.577 s)",
        calibrates: false,
    },
    Measured {
        name: "2 ranks x 1 GPU",
        nodes: 1,
        gpus_per_node: 2,
        ranks_per_node: 2,
        seconds: 0.563,
        source: "nvidia-h100-x2/mpi/rounds.txt, median of 5 (0.509-0.567 s)",
        calibrates: false,
    },
];

/// Per-chunk costs of the search's stages on one H100 and its share of a host's cores.
#[derive(Clone, Debug)]
pub struct Costs {
    /// Smith-Waterman cells a second per GPU (the kernel stage as one server).
    pub gpu_cells_per_s: f64,
    /// Host copy of a read chunk, bytes a second per executioner thread.
    pub host_read_bps: f64,
    /// Host-to-device bytes a second per GPU (its copy engine as one server).
    pub h2d_bps: f64,
    /// Device-to-host seconds per score (4 bytes, one per subject and query).
    pub d2h_s_per_score: f64,
    /// The file write callback's seconds per TSV row outside the writer's lock
    /// (reorder, digest) and inside it (top-k, format, write), which is serial per rank.
    pub write_free_s_per_row: f64,
    pub write_locked_s_per_row: f64,
    /// TSV bytes per row written to the file system.
    pub tsv_bytes_per_row: f64,
    /// Prepared file bytes per sequence beyond its residues (tables and names).
    pub bytes_per_seq: f64,
    /// Building and submitting one task on a rank, run or skipped (every rank builds
    /// every task of the stream).
    pub submit_s: f64,
    /// Stream slots per GPU (S).
    pub streams: usize,
}

impl Costs {
    /// The figures, and where each comes from.
    /// `write_locked_s` replaces the locked part of the write (None: the measured 39 ns).
    pub fn measured(submit_s: f64, streams: usize, write_locked_s: Option<f64>) -> Costs {
        let rows = PAPER_SEQS * QUERIES;
        Costs {
            // 1 GPU, 7 queries: kernel-bound (T/slowest about 1), 0.954 s for
            // 404.9 M x 9026 cells: 3,831 GCUPS. Fill and drain are in it, so this
            // underestimates the rate by a percent or two.
            gpu_cells_per_s: PAPER_RESIDUES * QUERY_RESIDUES / 0.954,
            // Stage sums of 2 ranks x 1 GPU (mpi/logs.tgz two-1..5.txt, medians): file
            // read 446.2 ms over 66 chunks (6.40 MB each from the page cache, 16
            // executioners a GPU): 0.947 GB/s a thread under contention.
            host_read_bps: PAPER_FILE_BYTES / 0.4462,
            // download 10.6 ms for 66 chunks.
            h2d_bps: PAPER_FILE_BYTES / 0.0106,
            // readback 1.7 ms for 66 chunks of 8,121 x 7 scores.
            d2h_s_per_score: 0.0017 / rows,
            // file write 524.0 ms (median sum) for 3.752 M rows: 140 ns a row in all,
            // of which the uncontended serial write (align/README.md Table 1, median 20.9 ms
            // for 536,000 rows, S = 1) is taken as the locked part: 39 ns.
            write_free_s_per_row: 0.524 / rows - 0.0209 / PAPER_SEQS,
            write_locked_s_per_row: write_locked_s.unwrap_or(0.0209 / PAPER_SEQS),
            // Assumed: "q2047\tdb0123456\t57\n" is 19 bytes; UniRef names are longer.
            tsv_bytes_per_row: 20.0,
            // (422,588,811 - 404,900,667) / 536,000 = 33 bytes a sequence.
            bytes_per_seq: (PAPER_FILE_BYTES - PAPER_RESIDUES) / PAPER_SEQS,
            submit_s,
            // chariot's default on an H100 host of 16 cores a GPU
            // (results/nvidia-h100-x1/align/README.md, results/nvidia-h100-x2/mpi/README.md).
            streams,
        }
    }
}

/// One chunk of a database.
#[derive(Clone, Copy, Debug)]
pub struct Chunk {
    pub residues: f64,
    pub seqs: f64,
}

/// A search: chunks, and the queries' total residues (cells = residues x that).
#[derive(Clone, Debug)]
pub struct Workload {
    pub chunks: Vec<Chunk>,
}

impl Workload {
    /// The paper-shaped database as 66 equal chunks (the real ones differ a little).
    pub fn paper() -> Workload {
        let c = Chunk { residues: PAPER_RESIDUES / PAPER_CHUNKS as f64, seqs: PAPER_SEQS / PAPER_CHUNKS as f64 };
        Workload { chunks: vec![c; PAPER_CHUNKS] }
    }

    /// `residues` in equal chunks of `chunk_residues`, at `mean_len` residues a sequence.
    pub fn uniform(residues: f64, chunk_residues: f64, mean_len: f64) -> Workload {
        let n = (residues / chunk_residues).ceil().max(1.0) as usize;
        let c = Chunk { residues: residues / n as f64, seqs: residues / n as f64 / mean_len };
        Workload { chunks: vec![c; n] }
    }

    /// Smith-Waterman cells of the whole search.
    pub fn cells(&self) -> f64 {
        self.chunks.iter().map(|c| c.residues).sum::<f64>() * QUERY_RESIDUES
    }
}

/// A UniRef/TrEMBL-sized database (assumed: 85 G residues, 250 M sequences, mean 340).
pub const LARGE_RESIDUES: f64 = 85e9;
pub const LARGE_MEAN_LEN: f64 = 340.0;
/// The paper database's mean chunk (6.13 M residues).
pub const PAPER_CHUNK_RESIDUES: f64 = PAPER_RESIDUES / PAPER_CHUNKS as f64;
