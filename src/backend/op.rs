//! The device operations: what the layers above hand the backend, lowered from their
//! commands and fetches (`task::lower`, `ext::resident::task::lower_fetch`), and a
//! replay window's as the backend walks it ([`GraphSource`]). A copy between
//! host and device (1-D or 2-D, with pitches), a peer copy between two GPUs' memories,
//! a fill, a kernel launch (its arguments already the words the driver takes) and a
//! host function the backend runs in stream order. Both backends take these, so what
//! a command or a fetch means is decided once, above them, and the backend knows
//! nothing of tasks.
//!
//! This is the backend's low part (beside `device` and `host_alloc`): the values here
//! borrow from the commands that own the memory, so an operation costs no allocation;
//! where the sim's engines run an operation later on their own threads, they take a
//! share of what it names (an `Arc` count, never a copy of the data).

use super::device::{Function, KernelCode, PhysBuf, SimMemory};
use super::host_alloc::HostAlloc;
use super::op_failure::{CallbackFailure, OpFailure};
use std::sync::Arc;
use std::time::Duration;

/// Kernel parameters at most (a launch with more is refused when lowered).
pub(crate) const MAX_PARAMS: usize = 32;

/// Direction of a host–device copy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Direction {
    /// Host to device (the download stage).
    Download,
    /// Device to host (the readback stage).
    Readback,
}

/// A host block that the sim's engines may hold while they copy (the owner of a
/// [`HostAlloc`], shared).
pub(crate) trait HostBlock: Send + Sync {
    /// The allocation.
    fn alloc(&self) -> &HostAlloc;
}

/// A borrowed share of a host block: its allocation now, and a share of its owner for
/// an engine that copies later.
pub(crate) trait HostShare: Sync {
    /// The allocation.
    fn alloc(&self) -> &HostAlloc;
    /// A share of the owner (an `Arc` count).
    fn share(&self) -> Arc<dyn HostBlock>;
}

impl<T: HostBlock + 'static> HostShare for Arc<T> {
    fn alloc(&self) -> &HostAlloc {
        HostBlock::alloc(&**self)
    }

    fn share(&self) -> Arc<dyn HostBlock> {
        self.clone()
    }
}

/// Device memory an operation names: a physical buffer borrowed from its owner, or
/// held for the operation (a resident copy, whose owner hands out shares).
pub(crate) enum Dev<'a> {
    Borrowed(&'a PhysBuf),
    Held(Arc<PhysBuf>),
}

impl Dev<'_> {
    pub(crate) fn phys(&self) -> &PhysBuf {
        match self {
            Dev::Borrowed(p) => p,
            Dev::Held(p) => p,
        }
    }

    /// The CUDA address, `None` on a simulated buffer.
    pub(crate) fn cuda_ptr(&self) -> Option<u64> {
        self.phys().cuda_ptr()
    }

    /// The simulated memory, `None` on a CUDA buffer.
    pub(crate) fn sim(&self) -> Option<Arc<SimMemory>> {
        match self.phys() {
            PhysBuf::Sim(m) => Some(m.clone()),
            PhysBuf::Cuda { .. } => None,
        }
    }
}

/// A copy between a host block and device memory, in bytes: `height` rows of `width`
/// bytes (a 1-D copy is one row), each side at its offset and pitch.
pub(crate) struct CopyOp<'a> {
    pub(crate) dir: Direction,
    pub(crate) host: &'a dyn HostShare,
    pub(crate) host_offset: usize,
    pub(crate) host_pitch: usize,
    pub(crate) dev: Dev<'a>,
    pub(crate) dev_offset: usize,
    pub(crate) dev_pitch: usize,
    pub(crate) width: usize,
    pub(crate) height: usize,
}

/// Bytes from host memory that is not pinned (a resident buffer's shadow), to device
/// memory at `dst_offset`. The caller holds the bytes (locked) while the operation is
/// issued; the driver stages pageable memory before the call returns, and the sim
/// copies the bytes at issue.
pub(crate) struct UploadOp<'a> {
    pub(crate) src: &'a [u8],
    pub(crate) dst: Dev<'a>,
    pub(crate) dst_offset: usize,
}

/// A device-to-device copy, from another GPU's memory (a peer copy where peer access is
/// on, staged through the host by the driver where not).
pub(crate) struct PeerOp<'a> {
    pub(crate) src: Dev<'a>,
    pub(crate) src_offset: usize,
    pub(crate) dst: Dev<'a>,
    pub(crate) dst_offset: usize,
    pub(crate) bytes: usize,
}

/// Zero bytes of device memory.
pub(crate) struct FillOp<'a> {
    pub(crate) dst: Dev<'a>,
    pub(crate) offset: usize,
    pub(crate) bytes: usize,
}

/// A kernel's CPU twin bound to one launch's arguments: what the sim runs in place of
/// the kernel.
pub(crate) trait Twin: Send + Sync + std::fmt::Debug {
    /// The kernel's name, for messages.
    fn name(&self) -> &str;
    /// Runs the twin on GPU `gpu`'s simulated memory of stream slot `slot`.
    fn run(&self, gpu: usize, slot: usize) -> Result<(), OpFailure>;
    /// The modeled time of the launch where the kernel gives a cost model.
    fn modeled(&self) -> Option<Duration>;
}

/// A kernel launch. On CUDA, `func` with the words `args`; on the sim, `twin`, using
/// `share` of the GPU's SMs while it runs alone.
pub(crate) struct LaunchOp<'a> {
    pub(crate) func: Option<&'a Function>,
    /// The kernel's code (what CUDA's device-side executor is generated from).
    pub(crate) code: KernelCode<'a>,
    pub(crate) grid: (u32, u32, u32),
    pub(crate) block: (u32, u32, u32),
    pub(crate) shared_bytes: u32,
    /// Each argument's value in the low bytes of its 8-byte word (little-endian),
    /// which is where the driver reads a 4-byte parameter from. Resolved on CUDA only.
    pub(crate) args: &'a [u64],
    /// The CPU twin bound to the launch's arguments: bound on the sim only (CUDA takes
    /// `args`, and a launch on CUDA skips the binding's allocation).
    pub(crate) twin: Option<&'a Arc<dyn Twin>>,
    pub(crate) share: f64,
}

/// Where a host function runs: the GPU, the stream slot and, on CUDA, the slot's
/// stream (work enqueued on it is ordered with the slot's other operations).
#[derive(Clone, Copy, Debug)]
pub(crate) struct HostAt {
    pub(crate) gpu: usize,
    pub(crate) slot: usize,
    pub(crate) stream: Option<cudarc::driver::sys::CUstream>,
}

/// A host function, run once in stream order (a library call that enqueues its own
/// work on the stream); its error or panic is caught as a value.
pub(crate) trait HostFunc: Send {
    fn run(self: Box<Self>, at: HostAt) -> Result<(), CallbackFailure>;
}

/// One device operation.
pub(crate) enum Op<'a> {
    Copy(CopyOp<'a>),
    Upload(UploadOp<'a>),
    Peer(PeerOp<'a>),
    Fill(FillOp<'a>),
    Launch(LaunchOp<'a>),
    Host(Box<dyn HostFunc>),
}

/// What the stage records and the injected faults know an operation by: the command
/// it was lowered from (its task's id and its index there). The backend only passes it
/// on (NVTX ranges, the sim's fault injection).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Tag {
    pub(crate) task: crate::ids::TaskId,
    pub(crate) command: usize,
}

/// One node of a graph: an operation on GPU `gpu`'s stream slot `slot` (whose memory
/// and functions it names: the graph's GPU, or another where the graph spans GPUs),
/// lowered from the command `tag` names.
pub(crate) struct Node<'a> {
    pub(crate) gpu: usize,
    pub(crate) slot: usize,
    pub(crate) tag: Tag,
    pub(crate) op: Op<'a>,
}

/// Nodes of a graph that run one after another (the layers above lower a task to
/// one), after the groups it names.
pub(crate) struct Group<'a> {
    /// Its id (a task's): a failure's cause, where the sim runs the graph.
    pub(crate) id: crate::ids::TaskId,
    /// Its nodes, the next ones of the graph's list.
    pub(crate) nodes: usize,
    /// The groups it runs after, by index (each lower than its own), ascending.
    pub(crate) after: &'a [u32],
    /// Of those, the one that only orders it (a failure does not pass along it).
    pub(crate) order_only: Option<u32>,
}

/// A graph's nodes and groups, read as the backend walks them: a window may hold
/// thousands of nodes, and a backend turns each at once into its own form (CUDA's node
/// parameters, the sim's work), so no list of nodes or groups is built in between (a
/// kept CUDA graph relaunched with new parameters reads no group at all). Static, not
/// `dyn`: the walk and what the backend does with a node compile into one loop.
pub(crate) trait GraphSource {
    /// Nodes in all.
    fn node_count(&self) -> usize;

    /// Lowers every node for GPU `gpu` (or the GPU its group runs on, where the graph
    /// spans GPUs), in order, and hands it to `f`. `words`: whether
    /// launches need their argument words (CUDA). The first error, a node's that cannot
    /// be lowered or `f`'s, ends the walk and is returned.
    fn each<E, F>(&self, gpu: usize, words: bool, f: F) -> Result<(), E>
    where
        E: From<OpFailure>,
        F: FnMut(Node<'_>) -> Result<(), E>;

    /// Groups in all.
    fn group_count(&self) -> usize;

    /// Group `i` (below [`GraphSource::group_count`]); its nodes follow group `i − 1`'s.
    fn group(&self, i: usize) -> Group<'_>;
}

/// A graph of operations, launched as one (a replayed window): its nodes in order,
/// grouped, with the edges of the groups.
pub(crate) struct GraphOp<'a, N: GraphSource> {
    /// The nodes and groups, read as they are walked ([`GraphOp::each_node`],
    /// [`GraphOp::groups`]).
    pub(crate) source: &'a N,
    /// The GPU the graph is launched on, and the nodes are lowered for (whose memory and
    /// functions they name) unless their group runs on another ([`Node::gpu`]).
    pub(crate) gpu: usize,
    /// Groups of earlier graphs that groups of this one run after: (group here, that
    /// group's id, its graph's `seq`); the sim runs none after one that failed.
    pub(crate) external: &'a [(u32, crate::ids::TaskId, u64)],
    /// The graph's number among those launched (ascending).
    pub(crate) seq: u64,
    /// A name the backend keeps the graph under, (number, generation), for
    /// [`Gpu::relaunch`](crate::backend::Gpu::relaunch) (a recorded graph's part).
    pub(crate) recorded: Option<(u64, u64)>,
    /// The structure: graphs of equal keys differ in their nodes' parameters only
    /// (CUDA keeps an executable graph per key), and a hash of it, compared first.
    pub(crate) key: &'a [u64],
    pub(crate) hash: u64,
    /// Run on the device by a persistent kernel where the backend can (CUDA, every
    /// group one launch of one block shape), not as a graph.
    pub(crate) device: bool,
    /// End it with a completion event made with timing (CUDA; the sim ignores it), not
    /// an untimed one. The stream runs the graph behind it in order either way; what the
    /// kind of event changes was measured, not explained (H200s, the flow bench's loop:
    /// `results/nvidia-h200/2026-12-01-tree-loop-slow-batches/`). Behind untimed events
    /// after wide windows (the tree at 10,000 iterations, up to 128 lanes) some batches
    /// ran their later windows several times slower; behind timed ones fewer did (over
    /// 2 ms, 1 of 56 batches against 5; none in either in another call). Timed events
    /// after every window made batches of empty tasks on S lanes up to 17 % slower. So
    /// wide windows end timed, no other.
    pub(crate) timed_end: bool,
}

impl<'a, N: GraphSource> GraphOp<'a, N> {
    /// Lowers every node in order and hands it to `f` ([`GraphSource::each`] for this
    /// graph's GPU).
    #[inline]
    pub(crate) fn each_node<E: From<OpFailure>>(
        &self,
        words: bool,
        f: impl FnMut(Node<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        self.source.each(self.gpu, words, f)
    }

    /// The groups, in order.
    pub(crate) fn groups(&self) -> impl ExactSizeIterator<Item = Group<'a>> + 'a {
        let source = self.source;
        (0..source.group_count()).map(move |i| source.group(i))
    }
}

impl Group<'_> {
    /// The groups a failure passes from: those it runs after, but its order's edge.
    pub(crate) fn dependencies(&self) -> impl Iterator<Item = u32> + '_ {
        self.after.iter().copied().filter(move |&p| Some(p) != self.order_only)
    }
}
