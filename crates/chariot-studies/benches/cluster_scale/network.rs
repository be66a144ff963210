//! The network and the shared file system: latency and bandwidth per link, the file
//! system as an aggregate bandwidth plus each node's link, and rank 0's hand-out
//! thread as a serial server. Every figure here is an assumption (named in
//! results/model/cluster-scale/README.md) but the hand-out's service time, measured on
//! one 32-core host (2 µs a claim: results/nvidia-h200-x2/mpi-overhead/).

/// One network and file system.
#[derive(Clone, Debug)]
pub struct Network {
    /// One-way latency of a message between nodes, seconds.
    pub latency_s: f64,
    /// Software cost of one MPI message at each end, seconds.
    pub message_s: f64,
    /// Each node's link, bytes a second (file reads and writes, and MPI, share it).
    pub link_bps: f64,
    /// The shared file system's aggregate bandwidth, bytes a second.
    pub fs_bps: f64,
    /// Latency of one file system request (a read of a chunk's byte range), seconds.
    pub fs_op_s: f64,
    /// Rank 0's hand-out thread: seconds to receive one claim and send its answer.
    pub handout_s: f64,
    /// Whether there is a file system to cross at all (false: one host, page cache).
    pub remote_fs: bool,
}

impl Network {
    /// A cluster: `latency_us` each way, `link_gbps` per node, `fs_gbps` in all.
    pub fn cluster(latency_us: f64, link_gbps: f64, fs_gbps: f64, handout_us: f64) -> Network {
        Network {
            latency_s: latency_us * 1e-6,
            message_s: 1e-6,
            link_bps: link_gbps * 1e9,
            fs_bps: fs_gbps * 1e9,
            // Assumed: a Lustre/GPFS read RPC of a few MB costs ~100 us before data flows.
            fs_op_s: 100e-6,
            handout_s: handout_us * 1e-6,
            remote_fs: true,
        }
    }

    /// One host as measured: ranks over shared memory, the database in the page cache.
    pub fn one_host(handout_us: f64) -> Network {
        Network {
            latency_s: 0.5e-6,
            message_s: 0.5e-6,
            link_bps: f64::INFINITY,
            fs_bps: f64::INFINITY,
            fs_op_s: 0.0,
            handout_s: handout_us * 1e-6,
            remote_fs: false,
        }
    }

    /// One message of `bytes` from one node to another.
    pub fn message(&self, bytes: f64) -> f64 {
        self.latency_s + 2.0 * self.message_s + bytes / self.link_bps
    }

    /// Rounds of a tree or recursive-doubling collective over `p` ranks.
    fn rounds(p: usize) -> f64 {
        (p.max(1) as f64).log2().ceil()
    }

    /// An all-gather of `each` bytes from every one of `p` ranks (recursive doubling).
    pub fn all_gather(&self, p: usize, each: f64) -> f64 {
        if p <= 1 {
            return 0.0;
        }
        Self::rounds(p) * (self.latency_s + 2.0 * self.message_s) + each * (p - 1) as f64 / self.link_bps
    }

    /// A gather of `total` bytes onto rank 0 (its link takes them all).
    pub fn gather(&self, p: usize, total: f64) -> f64 {
        if p <= 1 {
            return 0.0;
        }
        Self::rounds(p) * (self.latency_s + 2.0 * self.message_s) + total / self.link_bps
    }

    /// What `synchronize` and the search's end cost after the last task: the exchange
    /// (counts, taken, failures: four small all-gathers; every rank's timeline gathered
    /// on rank 0), the top hits gathered on rank 0, the digest summed (an all-reduce).
    pub fn end(&self, ranks: usize, tasks: usize) -> f64 {
        // A timeline record is 6 u64 and 3 u32 (cluster/exchange.rs), ~60 bytes, and a
        // search task has 12 commands (read, 2 downloads, 7 kernels, readback, write).
        let timeline = tasks as f64 * 12.0 * 60.0;
        // 7 queries x top 10 x ~40 bytes (score, sequence, name) a rank.
        let hits = ranks as f64 * 7.0 * 10.0 * 40.0;
        4.0 * self.all_gather(ranks, 8.0)
            + self.gather(ranks, timeline)
            + self.gather(ranks, hits)
            + 2.0 * self.all_gather(ranks, 8.0)
    }
}
