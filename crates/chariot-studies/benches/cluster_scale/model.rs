//! The discrete-event model of the cluster form running the search, in virtual time.
//!
//! Ranks, each with its GPUs and S slots per GPU. Each rank's loop builds every task of
//! the stream (`submit_s` each) and, while it has a free slot, claims the next position
//! from rank 0: a message there, a wait in the FIFO queue of rank 0's hand-out thread
//! (`handout_s` each), a message back; rank 0's own claims take the counter directly.
//! A taken chunk runs on a GPU of the rank with a free slot: file read (the file system
//! request, then the bytes through the file system's aggregate and the node's link, both
//! FIFO servers, while an executioner copies them), download (the GPU's copy engine),
//! the kernels (the GPU as one server at its measured rate), readback, and the write
//! (a part per thread, then the rank's writer lock, a FIFO server; the TSV's bytes load
//! the file system and link but do not hold the task). Then `synchronize`'s exchange.
//!
//! Simplified: servers are FIFO in the order the simulation reaches them (not fair
//! shares); chunks are equal; kernels of one GPU share it as one server; the CPU copy
//! overlaps the transfer; ranks sharing a node all cross the network to rank 0.

use crate::calibrate::{Costs, Workload, QUERIES, QUERY_RESIDUES};
use crate::network::Network;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// How GPUs are grouped: nodes, GPUs per node, ranks per node (1, or one per GPU).
#[derive(Clone, Copy, Debug)]
pub struct Layout {
    pub nodes: usize,
    pub gpus_per_node: usize,
    pub ranks_per_node: usize,
}

impl Layout {
    pub fn gpus(&self) -> usize {
        self.nodes * self.gpus_per_node
    }
    pub fn ranks(&self) -> usize {
        self.nodes * self.ranks_per_node
    }
}

/// A run's predicted time and how busy each shared resource was.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// First submit to the end of the search (exchange and gathers included).
    pub time_s: f64,
    /// The model's lower bound, and which resource sets it.
    pub bound_s: f64,
    pub bound: &'static str,
    pub tasks: usize,
    /// Busy time over `time_s`: rank 0's hand-out thread, the file system's aggregate,
    /// the busiest node link, the GPUs (mean), the busiest rank's writer lock, a
    /// rank's loop (building every task).
    pub u_handout: f64,
    pub u_fs: f64,
    pub u_link: f64,
    pub u_gpu: f64,
    pub u_writer: f64,
    pub u_loop: f64,
}

impl Outcome {
    /// The most utilised shared resource where it is busy at least 90% of the run:
    /// what saturated; "none" where nothing did (time lost to fill, drain or imbalance).
    pub fn bottleneck(&self) -> &'static str {
        let u = [
            (self.u_gpu, "gpu"),
            (self.u_fs, "fs"),
            (self.u_link, "link"),
            (self.u_writer, "writer"),
            (self.u_handout, "handout"),
            (self.u_loop, "loop"),
        ];
        let (v, name) = u.iter().fold((f64::MIN, "gpu"), |a, &(v, n)| if v > a.0 { (v, n) } else { a });
        if v >= 0.9 {
            name
        } else {
            "none"
        }
    }
}

/// Virtual time with a total order, for the event heap.
#[derive(Clone, Copy, PartialEq)]
struct T(f64);
impl Eq for T {}
impl PartialOrd for T {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for T {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&o.0)
    }
}

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Ev {
    /// A rank's claim reaches rank 0's hand-out.
    Claim { rank: usize },
    /// A rank's loop learns its next position.
    Claimed { rank: usize, pos: usize },
    /// A task reaches a stage (0 download, 1 kernel, 2 readback, 3 locked write, 4 done).
    Stage { task: usize, stage: u8 },
}

/// A FIFO server: takes a job arriving at `t` for `s` seconds; returns when it is done.
#[derive(Clone, Copy, Default)]
struct Server {
    free: f64,
    busy: f64,
}
impl Server {
    fn take(&mut self, t: f64, s: f64) -> f64 {
        let start = t.max(self.free);
        self.free = start + s;
        self.busy += s;
        self.free
    }
}

struct Rank {
    /// Position the loop reached, when its loop is free, tasks in flight per GPU.
    pos: usize,
    loop_free: f64,
    waiting: bool,
    done: bool,
    in_flight: Vec<usize>,
    writer: Server,
    finish: f64,
}

/// Runs `work` on `layout` over `net` with `costs`; returns the prediction.
pub fn run(work: &Workload, layout: Layout, net: &Network, costs: &Costs) -> Outcome {
    let n = work.chunks.len();
    let gpr = layout.gpus_per_node / layout.ranks_per_node;
    let ranks = layout.ranks();
    let slots = gpr * costs.streams;
    let mut rk: Vec<Rank> = (0..ranks)
        .map(|_| Rank {
            pos: 0,
            loop_free: 0.0,
            waiting: false,
            done: false,
            in_flight: vec![0; gpr],
            writer: Server::default(),
            finish: 0.0,
        })
        .collect();
    let (mut gpu, mut h2d, mut d2h) = (
        vec![Server::default(); layout.gpus()],
        vec![Server::default(); layout.gpus()],
        vec![Server::default(); layout.gpus()],
    );
    let mut link = vec![Server::default(); layout.nodes];
    let (mut fs, mut handout) = (Server::default(), Server::default());
    let mut next_pos = 0usize;
    let mut placed: Vec<(usize, usize)> = vec![(0, 0); n]; // (rank, gpu index in the rank)
    let mut heap: BinaryHeap<Reverse<(T, u64, Ev)>> = BinaryHeap::new();
    let mut seq = 0u64;
    let mut push = |heap: &mut BinaryHeap<Reverse<(T, u64, Ev)>>, t: f64, e: Ev| {
        seq += 1;
        heap.push(Reverse((T(t), seq, e)));
    };
    let claim_msg = net.message(16.0);
    let reply_msg = net.message(8.0);
    for r in 0..ranks {
        let t = if r == 0 { 0.0 } else { claim_msg };
        push(&mut heap, t, Ev::Claim { rank: r });
    }
    let node_of = |r: usize| r / layout.ranks_per_node;
    while let Some(Reverse((T(t), _, ev))) = heap.pop() {
        match ev {
            Ev::Claim { rank } => {
                let pos = next_pos;
                next_pos += 1;
                // Rank 0 takes the counter directly; the others queue at its thread.
                let at = if rank == 0 { t } else { handout.take(t, net.handout_s) + reply_msg };
                push(&mut heap, at, Ev::Claimed { rank, pos });
            }
            Ev::Claimed { rank, pos } => {
                let r = &mut rk[rank];
                // The loop builds and skips the tasks before `pos`, then builds `pos`.
                let upto = pos.min(n);
                let built = (upto + usize::from(pos < n)).saturating_sub(r.pos);
                let t1 = t.max(r.loop_free) + built as f64 * costs.submit_s;
                r.pos = upto + usize::from(pos < n);
                r.loop_free = t1;
                if pos >= n {
                    r.done = true;
                    if r.in_flight.iter().all(|&k| k == 0) {
                        r.finish = t1;
                    }
                    continue;
                }
                let g = (0..gpr).min_by_key(|&g| r.in_flight[g]).unwrap_or(0);
                r.in_flight[g] += 1;
                placed[pos] = (rank, g);
                let c = work.chunks[pos];
                let bytes = c.residues + c.seqs * costs.bytes_per_seq;
                let copy = bytes / costs.host_read_bps;
                let read_done = if net.remote_fs {
                    let req = t1 + net.fs_op_s + 2.0 * net.latency_s;
                    let via_fs = fs.take(req, bytes / net.fs_bps);
                    let via_link = link[node_of(rank)].take(via_fs, bytes / net.link_bps);
                    via_link.max(req + copy)
                } else {
                    t1 + copy
                };
                push(&mut heap, read_done, Ev::Stage { task: pos, stage: 0 });
                if r.in_flight.iter().sum::<usize>() < slots {
                    let at = if rank == 0 { t1 } else { t1 + claim_msg };
                    push(&mut heap, at, Ev::Claim { rank });
                } else {
                    r.waiting = true;
                }
            }
            Ev::Stage { task, stage } => {
                let (rank, g) = placed[task];
                let gi = rank * gpr + g;
                let c = work.chunks[task];
                let rows = c.seqs * QUERIES;
                match stage {
                    0 => {
                        let bytes = c.residues + c.seqs * costs.bytes_per_seq;
                        let at = h2d[gi].take(t, bytes / costs.h2d_bps);
                        push(&mut heap, at, Ev::Stage { task, stage: 1 });
                    }
                    1 => {
                        let at = gpu[gi].take(t, c.residues * QUERY_RESIDUES / costs.gpu_cells_per_s);
                        push(&mut heap, at, Ev::Stage { task, stage: 2 });
                    }
                    2 => {
                        let at = d2h[gi].take(t, rows * costs.d2h_s_per_score) + rows * costs.write_free_s_per_row;
                        push(&mut heap, at, Ev::Stage { task, stage: 3 });
                    }
                    3 => {
                        let at = rk[rank].writer.take(t, rows * costs.write_locked_s_per_row);
                        if net.remote_fs {
                            let b = rows * costs.tsv_bytes_per_row;
                            let f = fs.take(at, b / net.fs_bps);
                            link[node_of(rank)].take(f, b / net.link_bps);
                        }
                        push(&mut heap, at, Ev::Stage { task, stage: 4 });
                    }
                    _ => {
                        let r = &mut rk[rank];
                        r.in_flight[g] -= 1;
                        let idle = r.in_flight.iter().all(|&k| k == 0);
                        if r.done && idle {
                            r.finish = t.max(r.loop_free);
                        } else if r.waiting {
                            r.waiting = false;
                            let t1 = t.max(r.loop_free);
                            let at = if rank == 0 { t1 } else { t1 + claim_msg };
                            push(&mut heap, at, Ev::Claim { rank });
                        }
                    }
                }
            }
        }
    }
    let work_end = rk.iter().map(|r| r.finish).fold(0.0, f64::max);
    // File system and links are still busy with the last TSV bytes at the end.
    let drained = link.iter().map(|l| l.free).fold(fs.free, f64::max).max(work_end);
    let time_s = drained + net.end(ranks, n);
    let gpus = layout.gpus() as f64;
    let kernel_total: f64 = gpu.iter().map(|s| s.busy).sum();
    let rows_total: f64 = work.chunks.iter().map(|c| c.seqs * QUERIES).sum();
    let bytes_total: f64 = work.chunks.iter().map(|c| c.residues + c.seqs * costs.bytes_per_seq).sum::<f64>()
        + if net.remote_fs { rows_total * costs.tsv_bytes_per_row } else { 0.0 };
    // Bounds: the work each resource must do, spread at best evenly. These are the
    // work the model charges each server, so they catch its bookkeeping (a server
    // double-booked, time running backwards), not its assumptions. The last term is
    // not such a sum: some GPU runs at least ceil(n / GPUs) chunks one after another
    // (its kernels are one server), each at least the smallest chunk's kernels.
    let smallest = work.chunks.iter().map(|c| c.residues).fold(f64::INFINITY, f64::min);
    let per_gpu = n.div_ceil(layout.gpus().max(1)) as f64;
    let bounds = [
        (work.cells() / costs.gpu_cells_per_s / gpus, "gpu"),
        (if net.remote_fs { bytes_total / net.fs_bps } else { 0.0 }, "fs"),
        (if net.remote_fs { bytes_total / net.link_bps / layout.nodes as f64 } else { 0.0 }, "link"),
        (rows_total * costs.write_locked_s_per_row / ranks as f64, "writer"),
        // The hand-out's own busy time: how the claims split between rank 0 (free) and
        // the others is only known after the run.
        (handout.busy, "handout"),
        (n as f64 * costs.submit_s, "loop"),
        (per_gpu * smallest * QUERY_RESIDUES / costs.gpu_cells_per_s, "chunks"),
    ];
    let (bound_s, bound) = bounds.iter().fold((0.0, "gpu"), |a, &(v, nm)| if v > a.0 { (v, nm) } else { a });
    debug_assert!((kernel_total - work.cells() / costs.gpu_cells_per_s).abs() <= 1e-6 * kernel_total.max(1.0));
    Outcome {
        time_s,
        bound_s,
        bound,
        tasks: n,
        u_handout: handout.busy / time_s,
        u_fs: if net.remote_fs { fs.busy / time_s } else { 0.0 },
        u_link: if net.remote_fs { link.iter().map(|l| l.busy).fold(0.0, f64::max) / time_s } else { 0.0 },
        u_gpu: kernel_total / gpus / time_s,
        u_writer: rk.iter().map(|r| r.writer.busy).fold(0.0, f64::max) / time_s,
        u_loop: n as f64 * costs.submit_s / time_s,
    }
}
