//! The process's place among the MPI ranks: [`Cluster`].

use super::handout::HandOut;
use crate::error::{Error, Result};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

/// This process's place among the MPI ranks: made once per process by
/// [`Cluster::init`], given to [`Builder::cluster`](crate::Builder::cluster).
///
/// ```no_run
/// let cluster = chariot::cluster::Cluster::init()?;
/// println!("rank {} of {}", cluster.rank(), cluster.size());
/// # Ok::<(), chariot::Error>(())
/// ```
#[derive(Clone)]
pub struct Cluster {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub(crate) rank: usize,
    pub(crate) size: usize,
    /// Rank 0's hand-out of the task stream (its thread), the others' requests.
    pub(crate) handout: HandOut,
    /// A scheduler takes part in the stream now (one at a time).
    pub(crate) attached: AtomicBool,
    /// The next batch's number: batches are numbered across the process's schedulers,
    /// in the same order on every rank (each rank runs the same program).
    pub(crate) batches: AtomicU64,
    /// Dropped last: finalizes MPI.
    _universe: mpi::environment::Universe,
}

impl Cluster {
    /// Initialises MPI (with `MPI_THREAD_MULTIPLE`: the hand-out answers on a
    /// thread of its own) and starts rank 0's hand-out. Once per process; every
    /// rank calls it. Fails where MPI is already initialised or cannot give
    /// threads that level.
    pub fn init() -> Result<Cluster> {
        let refused = |why: String| Error::Cluster { rank: None, message: why };
        let (universe, threading) = mpi::initialize_with_threading(mpi::Threading::Multiple)
            .ok_or_else(|| refused("MPI is already initialised in this process: call Cluster::init once".into()))?;
        if threading != mpi::Threading::Multiple {
            return Err(refused(format!(
                "this MPI gives threads {threading:?}; chariot needs Multiple (its hand-out answers on a thread)"
            )));
        }
        use mpi::traits::*;
        let world = universe.world();
        let (rank, size) = (world.rank() as usize, world.size() as usize);
        let handout = HandOut::start(rank)?;
        Ok(Cluster {
            inner: Arc::new(Inner {
                rank,
                size,
                handout,
                attached: AtomicBool::new(false),
                batches: AtomicU64::new(0),
                _universe: universe,
            }),
        })
    }

    /// This process's rank (0 ≤ rank < size).
    pub fn rank(&self) -> usize {
        self.inner.rank
    }

    /// The number of ranks.
    pub fn size(&self) -> usize {
        self.inner.size
    }

    /// Whether an MPI launcher started this process (`mpirun`/`mpiexec` of Open MPI or
    /// MPICH, or Slurm's `srun`): what a program may ask before [`Cluster::init`] to
    /// run the one-process form otherwise.
    pub fn launched() -> bool {
        ["OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS"]
            .iter()
            .any(|v| std::env::var_os(v).is_some())
    }

    /// This process's rank among the ranks on its host, as the launcher says (Open
    /// MPI, MPICH or Slurm; 0 where none does): ranks sharing a host pin their
    /// dispatchers to distinct cores by it.
    pub fn local_rank() -> usize {
        ["OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"]
            .iter()
            .find_map(|v| std::env::var(v).ok()?.parse().ok())
            .unwrap_or(0)
    }

    /// How many ranks share this host, as the launcher says (1 where none does): each
    /// is tuned for its part of the host's cores.
    pub fn local_size() -> usize {
        ["OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "SLURM_NTASKS_PER_NODE"]
            .iter()
            .find_map(|v| std::env::var(v).ok()?.parse().ok())
            .filter(|&n| n > 0)
            .unwrap_or(1)
    }

    /// Every rank's `bytes`, rank by rank, on rank 0; `None` on the others. Collective:
    /// for results of a program's own (a search's best hits) that rank 0 merges.
    ///
    /// ```no_run
    /// let cluster = chariot::cluster::Cluster::init()?;
    /// if let Some(parts) = cluster.gather_bytes(&[cluster.rank() as u8]) {
    ///     assert_eq!(parts.len(), cluster.size());
    /// }
    /// # Ok::<(), chariot::Error>(())
    /// ```
    pub fn gather_bytes(&self, bytes: &[u8]) -> Option<Vec<Vec<u8>>> {
        super::exchange::to_root(&mpi::topology::SimpleCommunicator::world(), bytes)
    }

    /// Rank 0's `bytes` on every rank (what the others pass is not read). Collective:
    /// for what rank 0 alone measures or reads, that every rank's loop must agree on.
    ///
    /// ```no_run
    /// let cluster = chariot::cluster::Cluster::init()?;
    /// let mine = [cluster.rank() as u8; 3];
    /// assert_eq!(cluster.broadcast_bytes(&mine), vec![0u8; 3]);
    /// # Ok::<(), chariot::Error>(())
    /// ```
    pub fn broadcast_bytes(&self, bytes: &[u8]) -> Vec<u8> {
        use mpi::traits::*;
        let world = mpi::topology::SimpleCommunicator::world();
        let root = world.process_at_rank(0);
        let mut len = bytes.len() as u64;
        root.broadcast_into(&mut len);
        let mut data = if world.rank() == 0 { bytes.to_vec() } else { vec![0u8; len as usize] };
        if len > 0 {
            root.broadcast_into(&mut data[..]);
        }
        data
    }

    /// The sum of every rank's `v` (wrapping), on every rank. Collective.
    ///
    /// ```no_run
    /// let cluster = chariot::cluster::Cluster::init()?;
    /// assert_eq!(cluster.sum(1), cluster.size() as u64);
    /// # Ok::<(), chariot::Error>(())
    /// ```
    pub fn sum(&self, v: u64) -> u64 {
        use mpi::collective::SystemOperation;
        use mpi::traits::*;
        let mut out = 0u64;
        mpi::topology::SimpleCommunicator::world().all_reduce_into(&v, &mut out, SystemOperation::sum());
        out
    }

    /// Waits until every rank has called it (`MPI_Barrier`).
    pub fn barrier(&self) {
        use mpi::traits::*;
        mpi::topology::SimpleCommunicator::world().barrier();
    }

    /// Takes the cluster for one scheduler; false if one has it already.
    pub(crate) fn attach(&self) -> bool {
        !self.inner.attached.swap(true, Ordering::SeqCst)
    }

    /// The next batch's number (see `Inner::batches`).
    pub(crate) fn next_batch(&self) -> u64 {
        self.inner.batches.fetch_add(1, Ordering::SeqCst)
    }

    pub(crate) fn detach(&self) {
        self.inner.attached.store(false, Ordering::SeqCst);
    }
}

impl std::fmt::Debug for Cluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cluster").field("rank", &self.inner.rank).field("size", &self.inner.size).finish()
    }
}
