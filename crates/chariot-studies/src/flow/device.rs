//! A graph run entirely on the device (replay and device-side execution, Giles' scheme), the safe face of
//! `backend::cuda::device_graph`: the graph uploaded once as a CSR of successors with
//! a dependency counter per node ([`DeviceCsr`]), then per run a reset kernel and one
//! persistent kernel per GPU whose blocks take ready nodes from a queue in device
//! memory, run them (the spin kernel's body) and make their successors ready; the host
//! only launches and waits. A study: chariot's runtime does not use it yet.

use super::Graph;
use crate::backend::cuda::device_graph::Rig;
use chariot::{Error, Result};
use std::time::Duration;

/// The watchdog's default: a run that has not finished after this long is aborted and
/// reported as timed out.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// A graph as the device kernel reads it: the successors of node `i` are
/// `successors[offsets[i]..offsets[i + 1]]` (ascending), `indegree[i]` counts its
/// predecessors, and `roots` lists the nodes without any (ascending), which start in
/// the ready queue. Node ids and offsets are `i32`, as the kernel reads them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceCsr {
    /// `nodes + 1` offsets into `successors`, the last one its length.
    pub offsets: Vec<i32>,
    /// Every node's successors, node by node.
    pub successors: Vec<i32>,
    /// Every node's number of predecessors.
    pub indegree: Vec<i32>,
    /// The nodes with no predecessors.
    pub roots: Vec<i32>,
    /// The most nodes of one level (a node's level: the longest path to it from a
    /// root): how many nodes can be ready at once, about; no more blocks are launched.
    pub width: usize,
}

impl DeviceCsr {
    /// The CSR of `graph`'s successors.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] when the nodes or the edges do not fit the kernel's
    /// `i32` ids and offsets, or an edge names a node the graph does not have.
    pub fn new(graph: &Graph) -> Result<DeviceCsr> {
        let too_big = |what: &'static str, value: usize| Error::InvalidConfig {
            name: what,
            value: value.to_string(),
            allowed: format!("at most {} for the device graph's i32 ids", i32::MAX),
        };
        if graph.nodes >= i32::MAX as usize {
            return Err(too_big("nodes", graph.nodes));
        }
        if graph.edges.len() > i32::MAX as usize {
            return Err(too_big("edges", graph.edges.len()));
        }
        let n = graph.nodes;
        let mut out = vec![0usize; n];
        let mut indegree = vec![0i32; n];
        for &(p, s) in &graph.edges {
            if p >= n || s >= n {
                return Err(Error::InvalidConfig {
                    name: "edge",
                    value: format!("{p} -> {s}"),
                    allowed: format!("nodes 0..{n}"),
                });
            }
            out[p] += 1;
            indegree[s] += 1;
        }
        // Counting sort by predecessor: offsets are the running sums of the
        // out-degrees, then each row is sorted (the edges come in any order).
        let mut offsets = Vec::with_capacity(n + 1);
        let mut sum = 0usize;
        offsets.push(0i32);
        for &d in &out {
            sum += d;
            offsets.push(sum as i32);
        }
        let mut next: Vec<usize> = offsets[..n].iter().map(|&o| o as usize).collect();
        let mut successors = vec![0i32; graph.edges.len()];
        for &(p, s) in &graph.edges {
            successors[next[p]] = s as i32;
            next[p] += 1;
        }
        for i in 0..n {
            successors[offsets[i] as usize..offsets[i + 1] as usize].sort_unstable();
        }
        let roots = (0..n).filter(|&i| indegree[i] == 0).map(|i| i as i32).collect();
        // Levels in any topological order: Kahn's, from the roots.
        let mut level = vec![0usize; n];
        let mut unmet = indegree.clone();
        let mut ready: Vec<usize> = (0..n).filter(|&i| indegree[i] == 0).collect();
        while let Some(i) = ready.pop() {
            for &s in &successors[offsets[i] as usize..offsets[i + 1] as usize] {
                let s = s as usize;
                level[s] = level[s].max(level[i] + 1);
                unmet[s] -= 1;
                if unmet[s] == 0 {
                    ready.push(s);
                }
            }
        }
        let mut per_level = vec![0usize; n.max(1)];
        for &l in &level {
            per_level[l] += 1;
        }
        let width = per_level.iter().copied().max().unwrap_or(0).max(1);
        Ok(DeviceCsr { offsets, successors, indegree, roots, width })
    }

    /// Number of nodes.
    pub fn nodes(&self) -> usize {
        self.indegree.len()
    }

    /// The successors of node `i`.
    pub fn successors_of(&self, i: usize) -> &[i32] {
        &self.successors[self.offsets[i] as usize..self.offsets[i + 1] as usize]
    }
}

/// One run of a [`DeviceGraph`].
#[derive(Clone, Debug, PartialEq)]
pub struct DeviceTiming {
    /// Host time from the reset kernel's launch to the last GPU's completion (the
    /// counters' reset, the persistent kernels and the host's polling), in ns.
    pub wall_ns: u64,
    /// Nodes each GPU ran, in the order of the ordinals (they sum to the graph's nodes).
    pub per_gpu: Vec<usize>,
    /// Each GPU's sink after the run: [`super::spin_value`] of the iterations where the
    /// GPU ran a node, 0 where it ran none.
    pub sinks: Vec<f32>,
}

/// A graph uploaded to one or more GPUs for device-side runs.
///
/// Limits: every node runs the spin kernel's body on one block of [`super::BLOCK`]
/// threads (a study of the scheduling, not of node bodies); with several GPUs, each
/// further GPU must reach the first one's memory by peer access with native atomics
/// (the shared queue lives there) or [`DeviceGraph::build`] fails; a node's body is
/// never cut short, so the watchdog stops a run at the next node boundary; and a run
/// whose kernel does not stop even then leaves this graph unusable (its memory leaked:
/// freeing it would wait for the kernel forever).
#[derive(Debug)]
pub struct DeviceGraph {
    rig: Rig,
    nodes: usize,
    build_ns: u64,
    fail_node: Option<usize>,
    timeout: Duration,
}

impl DeviceGraph {
    /// Compiles the kernels for CUDA GPUs `ordinals` (one persistent kernel each, all
    /// taking nodes from one queue), uploads `graph` with `iters` spin iterations for
    /// every node; the time the allocations and uploads take is
    /// [`DeviceGraph::build_ns`].
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] for no ordinals, an ordinal named twice or a graph the
    /// kernel cannot hold ([`DeviceCsr::new`]); [`Error::NoSuchGpu`] for an ordinal the
    /// machine does not have; [`Error::CudaUnavailable`] without CUDA, when a driver
    /// call fails or when the GPUs lack peer atomics.
    pub fn build(ordinals: &[usize], graph: &Graph, iters: u32) -> Result<DeviceGraph> {
        if ordinals.is_empty() || (1..ordinals.len()).any(|k| ordinals[..k].contains(&ordinals[k])) {
            return Err(Error::InvalidConfig {
                name: "ordinals",
                value: format!("{ordinals:?}"),
                allowed: "one or more distinct GPUs".into(),
            });
        }
        let csr = DeviceCsr::new(graph)?;
        let available = chariot::Backend::cuda_devices()?;
        if let Some(&ordinal) = ordinals.iter().find(|&&o| o >= available) {
            return Err(Error::NoSuchGpu { ordinal, available, backend: "cuda" });
        }
        let (rig, build_ns) = Rig::build(ordinals, &csr, iters)
            .map_err(|e| Error::CudaUnavailable { reason: format!("device graph set-up: {e}") })?;
        Ok(DeviceGraph { rig, nodes: graph.nodes, build_ns, fail_node: None, timeout: DEFAULT_TIMEOUT })
    }

    /// Host time of the allocations and uploads, in ns (the kernels' compilation and
    /// loading are not counted).
    pub fn build_ns(&self) -> u64 {
        self.build_ns
    }

    /// Persistent blocks launched on each GPU (as many as fit resident, at most one
    /// per node).
    pub fn blocks(&self) -> Vec<u32> {
        self.rig.blocks()
    }

    /// The test mode: from the next run on, node `node` fails (sets the device's error
    /// word instead of running) and the run reports it; `None` runs every node.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] for a node the graph does not have.
    pub fn set_fail_node(&mut self, node: Option<usize>) -> Result<()> {
        if let Some(n) = node.filter(|&n| n >= self.nodes) {
            return Err(Error::InvalidConfig {
                name: "fail node",
                value: n.to_string(),
                allowed: format!("0..{}", self.nodes),
            });
        }
        self.fail_node = node;
        Ok(())
    }

    /// The watchdog's time for the following runs ([`DEFAULT_TIMEOUT`] until set).
    pub fn set_timeout(&mut self, timeout: Duration) {
        self.timeout = timeout;
    }

    /// Resets the counters on the device, runs the graph and waits for it.
    ///
    /// # Errors
    /// [`Error::CudaUnavailable`] when a driver call fails, when a node failed (the
    /// message names it: "node N failed"), when the run outlived the watchdog's time
    /// ("timed out"), or when an earlier run left the graph unusable.
    pub fn run(&mut self) -> Result<DeviceTiming> {
        let fail = self.fail_node.map_or(-1, |n| n as i32);
        let o = self
            .rig
            .run(fail, self.timeout)
            .map_err(|e| Error::CudaUnavailable { reason: format!("device graph: {e}") })?;
        if let Some(node) = o.failed_node {
            return Err(Error::CudaUnavailable {
                reason: format!(
                    "device graph: node {node} failed on the device; {} of {} nodes finished",
                    o.done, self.nodes
                ),
            });
        }
        if o.aborted {
            return Err(Error::CudaUnavailable {
                reason: format!(
                    "device graph: timed out after {:?}: {} of {} nodes finished",
                    self.timeout, o.done, self.nodes
                ),
            });
        }
        if o.done != self.nodes {
            // The kernel ended without an error word and with nodes unrun: a bug in
            // the kernel, reported rather than taken as a run.
            return Err(Error::CudaUnavailable {
                reason: format!("device graph: the kernel ended with {} of {} nodes finished", o.done, self.nodes),
            });
        }
        Ok(DeviceTiming { wall_ns: o.wall_ns, per_gpu: o.per_gpu, sinks: o.sinks })
    }
}
