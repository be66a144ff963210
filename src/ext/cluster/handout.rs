//! The hand-out of a batch's task stream (the cluster form): positions in submit order, given
//! out by rank 0 one block at a time. Rank 0 answers on a thread of its own
//! (`chariot-handout`), with point-to-point messages on `MPI_COMM_WORLD` under tags of
//! its own ([`TAG_CLAIM`], [`TAG_REPLY`]); its own claims take the counter directly.
//! Every batch has its own counter, so a rank still in one batch and a rank already in
//! the next never share positions.

use crate::error::{Error, Result};
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;
use parking_lot::Mutex;
use rustc_hash::FxHashMap;
use std::sync::Arc;
use std::thread::JoinHandle;

/// A claim: `[batch, block]` to rank 0 (an empty message stops the hand-out). Tags
/// below 32,768, the bound every MPI must allow (UCX's and MPICH's are far below
/// Open MPI's default); a program's own messages on `MPI_COMM_WORLD` must not use them.
pub(crate) const TAG_CLAIM: i32 = 32_701;
/// The answer: the first position of the block.
pub(crate) const TAG_REPLY: i32 = 32_702;

/// Per batch, the next position not given out (rank 0's).
#[derive(Default)]
struct Counters {
    next: FxHashMap<u64, u64>,
    newest: u64,
}

impl Counters {
    fn claim(&mut self, batch: u64, block: u64) -> u64 {
        if batch > self.newest {
            self.newest = batch;
            // Batches before the one before the newest are over on every rank: a rank
            // enters a batch only once every rank has left the one before
            // (`synchronize` exchanges, collectively).
            self.next.retain(|&b, _| b + 1 >= batch);
        }
        let next = self.next.entry(batch).or_insert(0);
        let start = *next;
        *next += block;
        start
    }
}

/// One rank's side of the hand-out.
pub(crate) struct HandOut {
    rank: usize,
    counters: Arc<Mutex<Counters>>,
    server: Option<JoinHandle<()>>,
}

impl HandOut {
    /// Starts rank 0's answering thread; nothing on the other ranks.
    pub(crate) fn start(rank: usize) -> Result<HandOut> {
        let counters = Arc::new(Mutex::new(Counters::default()));
        let server = if rank == 0 {
            let c = counters.clone();
            let h = std::thread::Builder::new()
                .name("chariot-handout".into())
                .spawn(move || serve(&c))
                .map_err(|e| Error::Thread { name: "chariot-handout".into(), message: e.to_string() })?;
            Some(h)
        } else {
            None
        };
        Ok(HandOut { rank, counters, server })
    }

    /// The first of `block` positions of batch `batch` given to this rank.
    pub(crate) fn claim(&self, batch: u64, block: u64) -> u64 {
        if self.rank == 0 {
            return self.counters.lock().claim(batch, block);
        }
        let world = SimpleCommunicator::world();
        let root = world.process_at_rank(0);
        root.send_with_tag(&[batch, block][..], TAG_CLAIM);
        let (start, _) = root.receive_with_tag::<u64>(TAG_REPLY);
        start
    }
}

/// Rank 0's thread: answers claims until an empty message comes.
fn serve(counters: &Mutex<Counters>) {
    let world = SimpleCommunicator::world();
    loop {
        let (msg, status) = world.any_process().receive_vec_with_tag::<u64>(TAG_CLAIM);
        let [batch, block] = msg[..] else { return };
        let start = counters.lock().claim(batch, block);
        world.process_at_rank(status.source_rank()).send_with_tag(&start, TAG_REPLY);
    }
}

impl Drop for HandOut {
    /// Every rank waits for the others (none claims any more), then rank 0 stops its
    /// thread. Collective: a rank that never drops its cluster holds the others here.
    fn drop(&mut self) {
        let world = SimpleCommunicator::world();
        world.barrier();
        if let Some(h) = self.server.take() {
            world.process_at_rank(0).send_with_tag(&[0u64; 0][..], TAG_CLAIM);
            let _ = h.join();
        }
    }
}

#[cfg(test)]
mod test {
    use super::Counters;

    #[test]
    fn blocks_are_disjoint_and_batches_apart() {
        let mut c = Counters::default();
        assert_eq!(c.claim(0, 1), 0);
        assert_eq!(c.claim(0, 4), 1);
        assert_eq!(c.claim(1, 2), 0);
        assert_eq!(c.claim(0, 1), 5);
        assert_eq!(c.claim(3, 1), 0);
        assert!(!c.next.contains_key(&0) && !c.next.contains_key(&1));
    }
}
