//! The study under `mpirun` (the cluster form, the root package's `mpi` feature): every rank
//! runs the same study, and chariot's runs are the cluster form (`Builder::cluster`):
//! one task stream over every rank's GPUs. Rank 0 probes the rates and the kernel and
//! shares what it measured, so that every rank submits the same kernels; each timed
//! batch starts at a barrier, rank 0 times it to its `synchronize` (which returns once
//! every rank's part has ended), gathers every rank's outputs and checks them, and
//! writes the CSV, the tables and the plots. Without the feature, or not launched by
//! MPI, it is one process: rank 0 of 1, and nothing here does anything.

use chariot::{Builder, HostBuffer, Scheduler};

/// This process's place among the ranks.
pub struct Ranks {
    #[cfg(feature = "mpi")]
    cluster: Option<chariot::cluster::Cluster>,
}

impl Ranks {
    /// Joins the ranks if an MPI launcher started this process (with the `mpi` feature).
    pub fn start() -> Result<Ranks, String> {
        #[cfg(feature = "mpi")]
        {
            let cluster = if chariot::cluster::Cluster::launched() {
                Some(chariot::cluster::Cluster::init().map_err(|e| e.to_string())?)
            } else {
                None
            };
            Ok(Ranks { cluster })
        }
        #[cfg(not(feature = "mpi"))]
        Ok(Ranks {})
    }

    /// This process's rank (0 alone).
    pub fn rank(&self) -> usize {
        #[cfg(feature = "mpi")]
        if let Some(c) = &self.cluster {
            return c.rank();
        }
        0
    }

    /// The number of ranks (1 alone).
    pub fn size(&self) -> usize {
        #[cfg(feature = "mpi")]
        if let Some(c) = &self.cluster {
            return c.size();
        }
        1
    }

    /// Whether this process is one of several ranks.
    pub fn many(&self) -> bool {
        self.size() > 1
    }

    /// `b`, taking part in the ranks' task stream where there are several.
    pub fn join(&self, b: Builder) -> Builder {
        #[cfg(feature = "mpi")]
        if let Some(c) = self.cluster.as_ref().filter(|c| c.size() > 1) {
            return b.cluster(c);
        }
        b
    }

    /// Waits for every rank (nothing alone): the timed batches start together.
    pub fn barrier(&self) {
        #[cfg(feature = "mpi")]
        if let Some(c) = &self.cluster {
            c.barrier();
        }
    }

    /// Rank 0's `values` on every rank (`values` alone). Collective.
    pub fn share(&self, values: &[f64]) -> Vec<f64> {
        #[cfg(feature = "mpi")]
        if let Some(c) = &self.cluster {
            let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
            return c
                .broadcast_bytes(&bytes)
                .chunks_exact(8)
                .map(|w| f64::from_le_bytes([w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]]))
                .collect();
        }
        values.to_vec()
    }

    /// Brings every rank's outputs of `sched`'s last batch into rank 0's `out`
    /// (nothing alone). Collective.
    pub fn gather(&self, sched: &Scheduler, out: &mut HostBuffer<u32>) -> Result<(), String> {
        #[cfg(feature = "mpi")]
        if self.many() {
            return sched.gather(out).map_err(|e| e.to_string());
        }
        let _ = (sched, out);
        Ok(())
    }

    /// Ends the study: with several ranks, a rank that failed ends the job at once
    /// (`mpirun` then stops the others), since leaving the ranks waits for every one of
    /// them and the others may be waiting in a batch this rank left.
    pub fn finish(self, result: Result<(), String>) -> Result<(), String> {
        if let Err(e) = &result {
            if self.many() {
                eprintln!("overhead, rank {}: {e}", self.rank());
                std::process::exit(1);
            }
        }
        // `self` goes here: the ranks leave together (a barrier, then MPI's end).
        result
    }
}
