//! A replay window: tasks of one batch that run as one graph on one GPU,
//! launched once instead of command by command. The scheduler holds the tasks
//! (`ext::replay::capture`), [`plan`] cuts them into a window per GPU and lays each
//! out, and the dispatcher of that GPU hands it to the backend as a graph operation
//! ([`Window::graph`]: a node per command, a group per task, the tasks' edges, lowered
//! as the backend walks them), which the backend replays as a graph of the same
//! structure (CUDA: an executable graph whose changed parameters are set, or built
//! once) or runs node after node on the simulated engines.
//!
//! The layout keeps what host dispatch guarantees:
//! * **Placement.** Tasks joined by an edge share a GPU: each weakly connected part of
//!   the window goes whole to the GPU with the fewest commands so far, largest part
//!   first, so D GPUs share independent work and no edge crosses GPUs. A part that
//!   runs after tasks of an earlier window of its batch (a sub-window, cut while the
//!   batch is still being submitted) goes to the GPU that window went to: the GPU runs
//!   its windows in order, so those edges hold without a wait.
//! * **Order.** Within a GPU the tasks are ordered by the scheduler's rule (FCFS, LF,
//!   SF) among those whose predecessors come earlier: the order a graph engine that
//!   runs one task at a time follows, and in which tasks take lanes.
//! * **Lanes.** A virtual [`DeviceBuffer`](crate::DeviceBuffer) has one copy per stream
//!   slot, and a slot runs one task at a time. A task that uses virtual buffers runs on
//!   a lane (a slot's copies) after the task before it on that lane: the lane of a
//!   predecessor that ended it (no edge added, as a capturer keeps a chain on its
//!   stream), else the lane whose last task is earliest in the order. So S lanes run at
//!   most S such tasks at once, as S slots would.
//!
//! Every edge, given or added, runs from an earlier task to a later one in the window's
//! order, so the window's graph has no cycle.

pub(crate) mod layout;
pub(crate) mod part;

use crate::backend::op::{GraphOp, GraphSource, Group, Node, Op, Tag, MAX_PARAMS};
use crate::backend::op_failure::OpFailure;
use crate::ids::TaskId;
use crate::kernel::ArgValue;
use crate::memory::GUEST_LANES;
use crate::task::command::Command;
use crate::task::{Order, Task};
use part::Part;
use std::collections::BinaryHeap;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

/// A task taken out of a window ([`Window::take_blocked`]): its lane and the failed
/// task it runs after.
pub(crate) type Blocked = (Box<Task>, u16, TaskId);

/// The number of a window that later windows' tasks do not count on (see
/// [`Window::take_blocked`]).
pub(crate) const UNNUMBERED: u64 = u64::MAX;

/// Tasks that run as one graph on one GPU.
pub(crate) struct Window {
    /// The window's number among all windows the scheduler has launched (ascending).
    pub(crate) seq: u64,
    /// Tasks of earlier windows that tasks of this one run after: (task index here,
    /// the earlier task, its window's `seq`), by task index. The dispatcher starts the
    /// window once each of those ran well or runs before it on the same GPU.
    pub(crate) external: Vec<(u32, TaskId, u64)>,
    /// The most lanes the window may use (the scheduler's S).
    pub(crate) lane_limit: usize,
    /// In the window's order. Boxed as everywhere else: a task moves between Q, the
    /// graph and the dispatchers by its box, never copied.
    #[allow(clippy::vec_box)]
    pub(crate) tasks: Vec<Box<Task>>,
    /// Per task: the tasks it runs after, as indices into `tasks` (each lower than its
    /// own), ascending: its own predecessors and its lane's previous task.
    pub(crate) preds: Vec<LanePreds>,
    /// Per task: the edge its lane added (the lane's previous task, where that is not
    /// one of its own predecessors): an order, not a dependency, so a failure does not
    /// pass along it.
    pub(crate) lane_edges: Vec<Option<u32>>,
    /// Per task: its lane (the stream slot whose virtual-buffer copies it uses).
    pub(crate) lanes: Vec<u16>,
    /// Lanes used (at most the scheduler's S).
    pub(crate) lane_count: usize,
    /// The longest chain of its tasks along `preds` (lane order included): the steps
    /// its graph takes one after another.
    pub(crate) depth: usize,
    /// Per task, where the window spans GPUs (a recorded part that keeps a GPU busy,
    /// [`plan`]): the GPU it runs on, whose slot or guest lane its lane is. Empty where
    /// every task runs on the window's GPU.
    pub(crate) gpus: Vec<u16>,
    /// The structure (per task its commands' kinds and kernels, its lane and its
    /// edges): windows of equal keys make graphs that differ in parameters only.
    pub(crate) key: Vec<u64>,
    /// A hash of `key`, compared first.
    pub(crate) hash: u64,
    /// Run on the device by a persistent kernel (`Execution::Device`, where
    /// [`Window::device_runnable`]), not as a CUDA graph.
    pub(crate) device: bool,
    /// Its completion event is made with timing ([`GraphOp::timed_end`]): a window of a
    /// batch on lanes past S (the capture sets it).
    pub(crate) timed_end: bool,
    /// A run of a recorded graph's part: this window is its shell (no tasks of its
    /// own), and the part's window is what runs (`ext::replay::recorded`).
    pub(crate) recorded: Option<Arc<Part>>,
    /// When it was queued for its GPU (ns since the scheduler started; 0 until then).
    pub(crate) queued_ns: u64,
}

impl Window {
    /// The shell of one run of recorded part `part`: queued and issued as a window, it
    /// runs the part's tasks, which stay the part's.
    pub(crate) fn shell(part: Arc<Part>) -> Window {
        Window {
            seq: UNNUMBERED,
            external: Vec::new(),
            lane_limit: part.lane_limit,
            tasks: Vec::new(),
            preds: Vec::new(),
            lane_edges: Vec::new(),
            lanes: Vec::new(),
            lane_count: part.lane_count,
            depth: part.depth,
            gpus: Vec::new(),
            key: Vec::new(),
            hash: 0,
            device: false,
            timed_end: false,
            recorded: Some(part),
            queued_ns: 0,
        }
    }

    /// Takes out the tasks that must not run because a task they run after failed:
    /// those of `failed` (task index, the failed task), and every task that depends on
    /// one of those in the window (not along a lane's order). Returns them with their
    /// lanes and causes, and the rest as a window laid out anew in the same order, if
    /// any is left, [`UNNUMBERED`]: a later window waits for its tasks to end.
    pub(crate) fn take_blocked(self, failed: &[(u32, TaskId)]) -> (Vec<Blocked>, Option<Window>) {
        let n = self.tasks.len();
        let mut cause: Vec<Option<TaskId>> = vec![None; n];
        for &(t, c) in failed {
            cause[t as usize].get_or_insert(c);
        }
        for t in 0..n {
            if cause[t].is_none() {
                cause[t] = self.dependencies(t).find_map(|p| cause[p as usize]);
            }
        }
        let mut blocked = Vec::new();
        let mut share = Vec::with_capacity(n);
        let mut index = vec![u32::MAX; n];
        let Window { external, lane_limit, tasks, preds, lane_edges, lanes, device, .. } = self;
        let mut external = external.into_iter().peekable();
        for (t, task) in tasks.into_iter().enumerate() {
            let ext: ExternalPreds =
                std::iter::from_fn(|| external.next_if(|e| e.0 as usize == t)).map(|(_, p, s)| (p, s)).collect();
            if let Some(c) = cause[t] {
                blocked.push((task, lanes[t], c));
                continue;
            }
            index[t] = share.len() as u32;
            let own = preds[t].iter().filter(|&&p| Some(p) != lane_edges[t]).map(|&p| index[p as usize]).collect();
            share.push(Held { task, preds: own, external: ext, pin: None });
        }
        if share.is_empty() {
            return (blocked, None);
        }
        let sequence: Vec<usize> = (0..share.len()).collect();
        // On one GPU, its own lanes: a window spanning GPUs is a recorded part's, never
        // taken apart, or a batch's, whose rest then runs where it is launched (a GPU
        // it spanned may have left the rotation).
        let mut rest = assign_lanes(share, &[], 0, &sequence, lane_limit);
        // No number: a later window's task after one taken out must not count it as
        // running here (it did not run), so none matches this window.
        rest.seq = UNNUMBERED;
        rest.device = device && rest.device_runnable();
        (blocked, Some(rest))
    }

    /// Task `t`'s dependencies in the window: its predecessors, without its lane's edge.
    pub(crate) fn dependencies(&self, t: usize) -> impl Iterator<Item = u32> + '_ {
        let lane = self.lane_edges[t];
        self.preds[t].iter().copied().filter(move |&p| Some(p) != lane)
    }

    /// Whether the window can run on the device: every task one kernel launch, all of
    /// one block shape, every grid's block count an `i32`.
    pub(crate) fn device_runnable(&self) -> bool {
        let mut block = None;
        // The executor runs on one GPU.
        self.gpus.is_empty()
            && self.tasks.iter().all(|t| match t.commands.as_slice() {
                [Command::Launch(l)] => {
                    let b = (l.shape.block.x, l.shape.block.y, l.shape.block.z);
                    *block.get_or_insert(b) == b && l.shape.grid.count() <= i32::MAX as u64
                }
                _ => false,
            })
    }

    /// Commands in the window.
    pub(crate) fn commands(&self) -> usize {
        self.tasks.iter().map(|t| t.commands.len()).sum()
    }

    /// How many GPUs its tasks run on, launched from `gpu`: 1, or those it spans
    /// ([`Window::spans`], listed only where it spans GPUs).
    pub(crate) fn gpu_count(&self, gpu: usize) -> usize {
        if self.gpus.is_empty() {
            1
        } else {
            self.spans(gpu).len()
        }
    }

    /// The GPUs its tasks run on, each once: the window's own, or those it spans.
    pub(crate) fn spans(&self, gpu: usize) -> Vec<usize> {
        let mut on: Vec<usize> = self.gpus.iter().map(|&g| g as usize).collect();
        on.push(gpu);
        on.sort_unstable();
        on.dedup();
        on
    }

    /// The window as the backend's graph operation for GPU `gpu`: a node per command
    /// (copies and launches only: [`replayable`]), each task on its lane's copies (of its
    /// GPU, where the window spans GPUs), and a group per task with its edges, read as
    /// the backend walks them ([`GraphSource`]).
    pub(crate) fn graph(&self, gpu: usize) -> GraphOp<'_, Window> {
        GraphOp {
            source: self,
            gpu,
            external: &self.external,
            seq: self.seq,
            recorded: None,
            key: &self.key,
            hash: self.hash,
            device: self.device,
            timed_end: self.timed_end,
        }
    }
}

impl GraphSource for Window {
    fn node_count(&self) -> usize {
        self.commands()
    }

    fn group_count(&self) -> usize {
        self.tasks.len()
    }

    fn group(&self, t: usize) -> Group<'_> {
        Group {
            id: self.tasks[t].id,
            nodes: self.tasks[t].commands.len(),
            after: &self.preds[t],
            order_only: self.lane_edges[t],
        }
    }

    #[inline]
    fn each<E, F>(&self, gpu: usize, words: bool, mut f: F) -> Result<(), E>
    where
        E: From<OpFailure>,
        F: FnMut(Node<'_>) -> Result<(), E>,
    {
        use crate::task::lower::{copy_op, launch_op, launch_words};
        // A launch's words on the stack (a kernel takes at most MAX_PARAMS: registration
        // refuses more).
        let mut inline = [0u64; MAX_PARAMS];
        for (t, task) in self.tasks.iter().enumerate() {
            let slot = self.lanes[t] as usize;
            let gpu = self.gpus.get(t).map_or(gpu, |&g| g as usize);
            for (command, cmd) in task.commands.iter().enumerate() {
                let tag = Tag { task: task.id, command };
                let op = match cmd {
                    Command::Copy(c) => Op::Copy(copy_op(c, gpu, slot)?),
                    Command::Launch(l) if words => {
                        let n = launch_words(l, gpu, slot, &mut inline)?;
                        Op::Launch(launch_op(l, gpu, Some(&inline[..n])))
                    }
                    Command::Launch(l) => Op::Launch(launch_op(l, gpu, None)),
                    _ => return Err(OpFailure::NotReplayable.into()),
                };
                f(Node { gpu, slot, tag, op })?;
            }
        }
        Ok(())
    }
}

impl std::fmt::Debug for Window {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Window")
            .field("tasks", &self.tasks.len())
            .field("lanes", &self.lane_count)
            .field("hash", &self.hash)
            .finish()
    }
}

/// Whether a task may run in a window: its commands are copies between host memory
/// and virtual device buffers and kernel launches on those, it keeps no resident
/// data, and its user placed it on no GPU. Callbacks (CPU or GPU library work),
/// resident buffers (fetched and tracked where the task runs) and placed tasks (a
/// window's GPU is the runtime's choice) are dispatched by the host.
pub(crate) fn replayable(task: &Task) -> bool {
    #[cfg(feature = "resident")]
    if !task.residency.uses.is_empty() {
        return false;
    }
    task.prefer.is_none() && replayable_commands(&task.commands)
}

/// Whether commands may run in a graph (see [`replayable`]).
pub(crate) fn replayable_commands(commands: &[Command]) -> bool {
    !commands.is_empty()
        && commands.iter().all(|c| match c {
            Command::Copy(c) => c.dev.as_virtual().is_some(),
            Command::Launch(l) => {
                // External memory binds its task to a GPU, as a placement does.
                l.args.iter().all(|a| match a {
                    ArgValue::External { .. } => false,
                    #[cfg(feature = "resident")]
                    ArgValue::Resident { .. } | ArgValue::BadRange(_) => false,
                    _ => true,
                })
            }
            Command::Cpu(_) | Command::Gpu(_) => false,
            #[cfg(feature = "resident")]
            Command::Fetch(_) => false,
        })
}

/// Whether a task uses a virtual buffer (and so needs a lane of its own).
pub(crate) fn uses_virtual(task: &Task) -> bool {
    task.commands.iter().any(|c| match c {
        Command::Copy(_) => true,
        Command::Launch(l) => l.args.iter().any(|a| matches!(a, ArgValue::Buffer(_))),
        _ => false,
    })
}

/// The structural words of one task: what a graph's node kinds and functions depend
/// on (not the pointers, sizes, grids and scalars, which an executable graph updates).
pub(crate) fn shape_words(task: &Task, out: &mut Vec<u64>) {
    out.push(task.commands.len() as u64);
    for c in &task.commands {
        match c {
            Command::Copy(c) => out.push(1 + 2 * (c.height > 1) as u64 + 4 * (c.dir as u64)),
            Command::Launch(l) => {
                out.push(16 + ((l.args.len() as u64) << 8));
                out.push(Arc::as_ptr(&l.kernel) as usize as u64);
            }
            Command::Cpu(_) | Command::Gpu(_) => out.push(u64::MAX),
            #[cfg(feature = "resident")]
            Command::Fetch(_) => out.push(u64::MAX),
        }
    }
}

/// A task's predecessors in its window (indices), with room for its lane's edge: inline
/// up to six, so that holding a task allocates nothing for most graphs' tasks.
pub(crate) type LanePreds = smallvec::SmallVec<[u32; 6]>;

/// A held task's predecessors in earlier windows of the batch, with their windows'
/// `seq`: inline up to two, so that a task after one or two of them (a tree's or a
/// DAG's task whose parents went in the window before) allocates nothing either.
pub(crate) type ExternalPreds = smallvec::SmallVec<[(TaskId, u64); 2]>;

/// A held task and the held tasks it runs after (indices into the held list, lower
/// than its own), and the tasks of earlier windows it runs after.
pub(crate) struct Held {
    pub(crate) task: Box<Task>,
    pub(crate) preds: LanePreds,
    /// Tasks of earlier windows of the batch it runs after, with their windows' `seq`.
    pub(crate) external: ExternalPreds,
    /// The GPU those earlier windows went to, if any: its part goes there.
    pub(crate) pin: Option<usize>,
}

/// How wide a recorded part must be to be spread over every GPU: its launches' summed
/// share of a GPU (each launch's blocks over one full wave, at most 1) over its longest
/// chain of tasks. Measured on two H200s with MUSTARD's rnd 4096 (10,000 spin
/// iterations a node), spreading against one GPU's graph: nodes of 16 blocks (width
/// 0.12) ran 1.11× slower, their edges between GPUs (about 6 µs each) on a path the
/// GPU's width did not bound; nodes of 33 blocks (0.25) 1.21× faster; spread, nodes of
/// 264 (2.0) ran 1.96× faster than at D = 1. A GPU's FMA pipes fill long before its
/// resident blocks do, so a part a quarter of a wave wide already keeps one GPU busy.
pub(crate) const SPREAD_WIDTH: f64 = 0.2;

/// Cuts held tasks (in submit order, each after lower-numbered ones only) into one
/// window per GPU of `gpus` that gets work, laid out as the module says, `lanes`
/// lanes at most (≥ 1). With `spread` (where every virtual buffer the tasks name has
/// its guest lanes' copies on the GPUs past the first), a connected part wide enough
/// to keep one GPU busy ([`SPREAD_WIDTH`]) is one window of its own whose tasks run on
/// every GPU ([`spread_over`]), launched from the first, its edges between GPUs kept
/// inside its graph.
pub(crate) fn plan(held: Vec<Held>, order: Order, gpus: &[usize], lanes: usize, spread: bool) -> Vec<(usize, Window)> {
    let n = held.len();
    if n == 0 || gpus.is_empty() {
        return Vec::new();
    }
    if gpus.len() == 1 && !spread {
        // One GPU takes every part, pinned or not, and its share is the held tasks in
        // submit order, their edges already numbered in it: what the parts below would
        // come to, without finding them (the per-iteration loop cuts a window at each
        // sub-window on the submitting thread).
        return vec![(gpus[0], lay_out(held, &[], gpus[0], order, lanes.max(1)))];
    }
    let roots = roots_of(&held);
    let mut part_cmds = vec![0usize; n];
    for (i, h) in held.iter().enumerate() {
        part_cmds[roots[i]] += h.task.commands.len().max(1);
    }
    let spread_to = if spread && gpus.len() > 1 {
        let shares: Vec<f64> = held.iter().map(|h| gpu_share(&h.task, gpus[0])).collect();
        spread_over(&held, &roots, &shares, gpus.len())
    } else {
        Vec::new()
    };
    let spreads = |r: usize| spread_to.get(r).is_some_and(Option::is_some);
    let mut parts: Vec<usize> = (0..n).filter(|&i| roots[i] == i).collect();
    parts.sort_by_key(|&r| (std::cmp::Reverse(part_cmds[r]), r));
    // A part pinned by an earlier window goes to that window's GPU, if it is offered.
    let mut pin_of_root: Vec<Option<usize>> = vec![None; n];
    for (i, h) in held.iter().enumerate() {
        if let Some(g) = h.pin.and_then(|p| gpus.iter().position(|&x| x == p)) {
            pin_of_root[roots[i]].get_or_insert(g);
        }
    }
    let mut load = vec![0usize; gpus.len()];
    let mut gpu_of_root = vec![usize::MAX; n];
    // A spread part's window: its own share, launched from the GPU it is homed on.
    let mut spread_of_root = vec![usize::MAX; n];
    let mut spread_shares: Vec<(usize, Vec<Held>, Vec<u16>)> = Vec::new();
    for r in parts {
        if spreads(r) {
            load.iter_mut().for_each(|l| *l += part_cmds[r].div_ceil(gpus.len()));
            spread_of_root[r] = spread_shares.len();
            // Launched from the first GPU, every spread part: that GPU's stream runs
            // them one after another, so no two share another GPU's guest lanes.
            spread_shares.push((gpus[0], Vec::new(), Vec::new()));
            continue;
        }
        let g = pin_of_root[r].unwrap_or_else(|| (0..gpus.len()).min_by_key(|&g| (load[g], g)).unwrap_or(0));
        load[g] += part_cmds[r];
        gpu_of_root[r] = g;
    }
    // Each GPU's share, in submit order, with its edges renumbered.
    let mut local = vec![u32::MAX; n];
    let mut shares: Vec<Vec<Held>> = (0..gpus.len()).map(|_| Vec::new()).collect();
    for (i, mut h) in held.into_iter().enumerate() {
        let share = match spread_to.get(i).copied().flatten() {
            Some(g) => {
                let (_, share, on) = &mut spread_shares[spread_of_root[roots[i]]];
                on.push(gpus[g as usize] as u16);
                share
            }
            None => &mut shares[gpu_of_root[roots[i]]],
        };
        local[i] = share.len() as u32;
        // Renumbered in place: no allocation per task.
        for p in &mut h.preds {
            *p = local[*p as usize];
        }
        share.push(h);
    }
    let lanes = lanes.max(1);
    let mut out: Vec<(usize, Window)> = shares
        .into_iter()
        .enumerate()
        .filter(|(_, s)| !s.is_empty())
        .map(|(g, s)| (gpus[g], lay_out(s, &[], gpus[g], order, lanes)))
        .collect();
    out.extend(spread_shares.into_iter().map(|(home, s, on)| (home, lay_out(s, &on, home, order, lanes))));
    out
}

/// Per held task, the root (lowest index) of its weakly connected part (union-find,
/// path halving).
fn roots_of(held: &[Held]) -> Vec<usize> {
    let n = held.len();
    let mut parent: Vec<usize> = (0..n).collect();
    fn find(p: &mut [usize], mut x: usize) -> usize {
        while p[x] != x {
            p[x] = p[p[x]];
            x = p[x];
        }
        x
    }
    for (i, h) in held.iter().enumerate() {
        for &p in &h.preds {
            let (a, b) = (find(&mut parent, i), find(&mut parent, p as usize));
            if a != b {
                parent[a.max(b)] = a.min(b);
            }
        }
    }
    (0..n).map(|i| find(&mut parent, i)).collect()
}

/// Whether [`plan`] with `spread` would spread a part of `held` over `gpus` (a part wide
/// enough to keep one GPU busy, [`spread_over`]): what asks for the copies of its
/// virtual buffers' guest lanes where they are missing.
pub(crate) fn would_spread(held: &[Held], gpus: &[usize]) -> bool {
    if gpus.len() < 2 || held.is_empty() {
        return false;
    }
    let shares: Vec<f64> = held.iter().map(|h| gpu_share(&h.task, gpus[0])).collect();
    spread_over(held, &roots_of(held), &shares, gpus.len()).iter().any(Option::is_some)
}

/// The share of GPU `gpu` that task `task`'s launches take while they run: the largest
/// launch's blocks over one full wave, at most 1 (its commands run one after another).
fn gpu_share(task: &Task, gpu: usize) -> f64 {
    task.commands
        .iter()
        .filter_map(|c| match c {
            Command::Launch(l) => Some(l.fill(gpu)),
            _ => None,
        })
        .fold(0.0, f64::max)
}

/// Per held task (`roots`: its connected part's root, `shares`: its share of one GPU),
/// the GPU index (of `d`) it runs on where its part is spread, `None` elsewhere. A part
/// is spread where its summed share over its longest chain is at least
/// [`SPREAD_WIDTH`] (and it is more than a chain). Its tasks are placed level by level
/// (a task's level is its longest chain of predecessors), as MUSTARD splits a graph's
/// levels evenly between GPUs: each to the GPU with the least share placed at its
/// level, on a tie the GPU of one of its predecessors (an edge that stays on a GPU
/// costs nothing), else the lowest.
pub(crate) fn spread_over(held: &[Held], roots: &[usize], shares: &[f64], d: usize) -> Vec<Option<u16>> {
    let n = held.len();
    let mut level = vec![0usize; n];
    let (mut chain, mut width, mut count) = (vec![0usize; n], vec![0f64; n], vec![0usize; n]);
    for (i, h) in held.iter().enumerate() {
        level[i] = h.preds.iter().map(|&p| level[p as usize] + 1).max().unwrap_or(0);
        let r = roots[i];
        chain[r] = chain[r].max(level[i] + 1);
        width[r] += shares[i];
        count[r] += 1;
    }
    // A chain (one task a level) has nothing to run beside itself.
    let wide = |r: usize| d > 1 && count[r] > chain[r] && width[r] >= SPREAD_WIDTH * chain[r] as f64;
    let mut out = vec![None; n];
    if !(0..n).any(|i| roots[i] == i && wide(i)) {
        return out;
    }
    let levels = level.iter().max().map_or(1, |&l| l + 1);
    let mut placed = vec![0f64; levels * d];
    for i in 0..n {
        if !wide(roots[i]) {
            continue;
        }
        let at = level[i] * d;
        let near = |g: usize| held[i].preds.iter().any(|&p| out[p as usize] == Some(g as u16));
        let g = (0..d)
            .min_by(|&a, &b| placed[at + a].total_cmp(&placed[at + b]).then(near(b).cmp(&near(a))).then(a.cmp(&b)))
            .unwrap_or(0);
        // A task of no launch still counts, so that such tasks alternate too.
        placed[at + g] += shares[i].max(1e-9);
        out[i] = Some(g as u16);
    }
    out
}

/// Orders one GPU's share by the rule among the ready, assigns lanes, and keys it.
/// `on`: per task of the share, the GPU it runs on, where the window spans GPUs (else
/// empty); `home`: the GPU it is launched from.
fn lay_out(share: Vec<Held>, on: &[u16], home: usize, order: Order, lanes: usize) -> Window {
    let n = share.len();
    // Under FCFS the order is submit order itself (every edge points back in it).
    if order == Order::Fcfs {
        let sequence: Vec<usize> = (0..n).collect();
        return assign_lanes(share, on, home, &sequence, lanes);
    }
    let mut succ: Vec<Vec<u32>> = vec![Vec::new(); n];
    let mut unmet = vec![0usize; n];
    for (i, h) in share.iter().enumerate() {
        for &p in &h.preds {
            succ[p as usize].push(i as u32);
            unmet[i] += 1;
        }
    }
    let key_of = |t: &Task| match order {
        Order::Fcfs => 0,
        Order::LargestFirst => t.granularity,
        Order::SmallestFirst => u64::MAX - t.granularity,
    };
    // Greatest rule key first, then the earliest submitted.
    let mut ready: BinaryHeap<(u64, std::cmp::Reverse<usize>)> = BinaryHeap::new();
    for (i, h) in share.iter().enumerate() {
        if unmet[i] == 0 {
            ready.push((key_of(&h.task), std::cmp::Reverse(i)));
        }
    }
    let mut sequence = Vec::with_capacity(n);
    while let Some((_, std::cmp::Reverse(i))) = ready.pop() {
        sequence.push(i);
        for &s in &succ[i] {
            unmet[s as usize] -= 1;
            if unmet[s as usize] == 0 {
                ready.push((key_of(&share[s as usize].task), std::cmp::Reverse(s as usize)));
            }
        }
    }
    debug_assert_eq!(sequence.len(), n, "a held task names a later one");
    assign_lanes(share, on, home, &sequence, lanes)
}

/// One GPU's lanes while a window is laid out: which task ran last on each, and the
/// choice of a task's lane: the lowest lane whose last task is one of its predecessors
/// (cudaFlow's chain: no edge to add), else the lowest lane never used, else the lane
/// whose last task is earliest in the order. Found without a walk over every lane (128
/// of them where a window is wide): the used lanes are queued by their last task,
/// oldest first (an entry whose lane has had a task since is stale and dropped).
struct Lanes {
    last: Vec<Option<u32>>,
    fresh: usize,
    oldest: std::collections::VecDeque<(u32, u32)>,
    /// Per task of the window (by its place in the order), its lane (`u32::MAX`: none).
    lane_at: Vec<u32>,
}

impl Lanes {
    fn new(lanes: usize, tasks: usize) -> Lanes {
        Lanes {
            last: vec![None; lanes.max(1)],
            fresh: 0,
            oldest: std::collections::VecDeque::new(),
            lane_at: vec![u32::MAX; tasks],
        }
    }

    /// Task `at` (its predecessors `preds`, earlier places) takes a lane: the lane, and
    /// the task that ran last on it, if any (the caller adds the edge where that is not
    /// a predecessor).
    fn take(&mut self, preds: &[u32], at: u32) -> (usize, Option<u32>) {
        let lanes = self.last.len();
        let chained = preds
            .iter()
            .map(|&q| self.lane_at[q as usize] as usize)
            .filter(|&l| l < lanes && self.last[l].is_some_and(|last| preds.contains(&last)))
            .min();
        let l = chained.unwrap_or_else(|| {
            if self.fresh < lanes {
                return self.fresh;
            }
            while let Some(&(t, l)) = self.oldest.front() {
                if self.last[l as usize] == Some(t) {
                    return l as usize;
                }
                self.oldest.pop_front();
            }
            0
        });
        let before = self.last[l].replace(at);
        self.oldest.push_back((at, l as u32));
        self.lane_at[at as usize] = l as u32;
        self.fresh = self.fresh.max(l + 1);
        (l, before)
    }
}

/// Lays `share` out in `sequence` (a topological order of it): lanes, edges, key. Where
/// `on` names each task's GPU (a window spanning GPUs, launched from `home`), each GPU
/// has its own lanes: `home`'s own, the others' guest lanes (lane numbers from
/// `GUEST_LANES` on), which no work of their own GPU uses.
fn assign_lanes(share: Vec<Held>, on: &[u16], home: usize, sequence: &[usize], lanes: usize) -> Window {
    let n = share.len();
    let spans = on.iter().max().map_or(1, |&g| g as usize + 1);
    let mut gpus = Vec::with_capacity(on.len());
    let mut position = vec![0u32; n];
    for (at, &i) in sequence.iter().enumerate() {
        position[i] = at as u32;
    }
    let mut slots: Vec<Option<Held>> = share.into_iter().map(Some).collect();
    let mut tasks = Vec::with_capacity(n);
    let mut preds: Vec<LanePreds> = Vec::with_capacity(n);
    let mut lane_of = Vec::with_capacity(n);
    let mut lane_edges = Vec::with_capacity(n);
    let mut spans_lanes: Vec<Lanes> = (0..spans).map(|_| Lanes::new(lanes, n)).collect();
    let mut used = 0usize;
    // Each task's depth: one more than its deepest predecessor's.
    let mut depths: Vec<u32> = Vec::with_capacity(n);
    // Sized once: a task's words are at most its shape's (1 + 2 a command), its GPU,
    // lane and predecessor count, and its predecessors with the lane edge.
    let words: usize = slots.iter().flatten().map(|h| 5 + 2 * h.task.commands.len() + h.preds.len()).sum();
    let mut key = Vec::with_capacity(words + 1);
    if !on.is_empty() {
        // Marks a key whose tasks carry their GPUs, so that it cannot read as the key
        // of a window on one GPU (no task's first word, its command count, is this).
        key.push(u64::MAX - 1);
    }
    let mut external = Vec::new();
    for &i in sequence {
        let Held { task, preds: p, external: ext, .. } = slots[i].take().expect("each task is placed once");
        let at = tasks.len() as u32;
        external.extend(ext.into_iter().map(|(p, s)| (at, p, s)));
        let mut p = p;
        for q in &mut p {
            *q = position[*q as usize];
        }
        let mut lane_edge = None;
        let gpu = on.get(i).copied();
        let span = gpu.map_or(0, |g| g as usize);
        let lane = if uses_virtual(&task) {
            let (l, last) = spans_lanes[span].take(&p, at);
            if let Some(last) = last {
                if !p.contains(&last) {
                    p.push(last);
                    lane_edge = Some(last);
                }
            }
            used = used.max(l + 1);
            if gpu.is_some_and(|g| g as usize != home) {
                GUEST_LANES + l
            } else {
                l
            }
        } else {
            0
        };
        p.sort_unstable();
        p.dedup();
        depths.push(1 + p.iter().map(|&q| depths[q as usize]).max().unwrap_or(0));
        shape_words(&task, &mut key);
        if let Some(g) = gpu {
            key.push(g as u64);
            gpus.push(g);
        }
        key.push(lane as u64);
        key.push(p.len() as u64);
        key.extend(p.iter().map(|&q| q as u64));
        lane_of.push(lane as u16);
        lane_edges.push(lane_edge);
        preds.push(p);
        tasks.push(task);
    }
    let mut h = rustc_hash::FxHasher::default();
    key.hash(&mut h);
    Window {
        seq: 0,
        external,
        lane_limit: lanes,
        tasks,
        preds,
        lane_edges,
        lanes: lane_of,
        lane_count: used.max(1),
        depth: depths.iter().copied().max().unwrap_or(0) as usize,
        gpus,
        key,
        hash: h.finish(),
        device: false,
        timed_end: false,
        recorded: None,
        queued_ns: 0,
    }
}

#[cfg(test)]
mod test {
    use super::*;

    fn task(id: u64, granularity: u64) -> Box<Task> {
        Box::new(Task {
            id: TaskId(id),
            granularity,
            seq: id,
            commands: Vec::new(),
            next: 0,
            hosts: Vec::new(),
            residency: Default::default(),
            prefer: None,
            bound: false,
        })
    }

    fn held(edges: &[&[u32]]) -> Vec<Held> {
        edges
            .iter()
            .enumerate()
            .map(|(i, p)| Held {
                task: task(i as u64, i as u64),
                preds: LanePreds::from_slice(p),
                external: ExternalPreds::new(),
                pin: None,
            })
            .collect()
    }

    #[test]
    fn independent_parts_spread_over_gpus_and_edges_stay_on_one() {
        // 0 -> 1 -> 2, and 3, 4 alone.
        let w = plan(held(&[&[], &[0], &[1], &[], &[]]), Order::Fcfs, &[0, 1], 4, false);
        assert_eq!(w.len(), 2);
        let ids = |g: usize| -> Vec<u64> {
            w.iter().find(|(x, _)| *x == g).map(|(_, w)| w.tasks.iter().map(|t| t.id.0).collect()).unwrap()
        };
        assert_eq!(ids(0), [0, 1, 2]);
        assert_eq!(ids(1), [3, 4]);
        let chain = &w.iter().find(|(g, _)| *g == 0).unwrap().1;
        assert_eq!(chain.preds.iter().map(|p| p.to_vec()).collect::<Vec<_>>(), [vec![], vec![0], vec![1]]);
        // Depths: the chain's three steps, the two alone one.
        assert!(w.iter().all(|(g, w)| w.depth == if *g == 0 { 3 } else { 1 }));
        // A diamond 0 -> {1, 2} -> 3 beside 4: three steps.
        assert_eq!(lay_out(held(&[&[], &[0], &[0], &[1, 2], &[]]), &[], 0, Order::Fcfs, 4).depth, 3);
    }

    #[test]
    fn the_order_rule_picks_among_the_ready() {
        // LF: granularities 0..4, 4 after 0: the ready order is 3, 2, 1, 0, then 4.
        let w = plan(held(&[&[], &[], &[], &[], &[0]]), Order::LargestFirst, &[0], 4, false);
        let ids: Vec<u64> = w[0].1.tasks.iter().map(|t| t.id.0).collect();
        assert_eq!(ids, [3, 2, 1, 0, 4]);
        assert_eq!(w[0].1.preds[4].as_slice(), [3]);
    }

    #[test]
    fn a_part_after_an_earlier_window_goes_to_its_gpu() {
        // 0 -> 1 and 2 alone; 0 runs after a task of an earlier window on GPU 1.
        let mut h = held(&[&[], &[0], &[]]);
        h[0].external = smallvec::smallvec![(TaskId(100), 7)];
        h[0].pin = Some(1);
        let w = plan(h, Order::Fcfs, &[0, 1], 4, false);
        let on = |g: usize| w.iter().find(|(x, _)| *x == g).map(|(_, w)| w);
        let pinned = on(1).expect("the pinned part is on GPU 1");
        assert_eq!(pinned.tasks.iter().map(|t| t.id.0).collect::<Vec<_>>(), [0, 1]);
        assert_eq!(pinned.external, [(0, TaskId(100), 7)]);
        assert_eq!(on(0).expect("the free part takes the other GPU").tasks.len(), 1);
    }

    #[test]
    fn taking_out_blocked_tasks_keeps_the_rest_and_its_edges() {
        // 0 -> 1 -> 3, 2 alone, 4 after 2; 0 runs after a task that failed.
        let mut h = held(&[&[], &[0], &[], &[1], &[2]]);
        h[0].external = smallvec::smallvec![(TaskId(100), 7)];
        h[2].external = smallvec::smallvec![(TaskId(101), 7)];
        let (_, mut w) = plan(h, Order::Fcfs, &[0], 4, false).pop().unwrap();
        w.seq = 9;
        let (blocked, rest) = w.take_blocked(&[(0, TaskId(100))]);
        let ids: Vec<(u64, TaskId)> = blocked.iter().map(|(t, _, c)| (t.id.0, *c)).collect();
        assert_eq!(ids, [(0, TaskId(100)), (1, TaskId(100)), (3, TaskId(100))]);
        let rest = rest.expect("2 and 4 are left");
        assert_eq!(rest.tasks.iter().map(|t| t.id.0).collect::<Vec<_>>(), [2, 4]);
        assert_eq!(rest.dependencies(1).collect::<Vec<_>>(), [0]);
        assert_eq!(rest.external, [(0, TaskId(101), 7)]);
        assert_eq!(rest.seq, UNNUMBERED);
    }

    #[test]
    fn a_part_wider_than_a_gpu_spreads_level_by_level_and_a_narrow_one_does_not() {
        // A diamond chain: 0 -> {1, 2, 3, 4} -> 5 -> {6, 7} -> 8, in one part.
        let h = held(&[&[], &[0], &[0], &[0], &[0], &[1, 2, 3, 4], &[5], &[5], &[6, 7]]);
        let roots = vec![0; h.len()];
        // Each task a whole GPU: 9 over a chain of 5 is wide.
        let on = spread_over(&h, &roots, &[1.0; 9], 2);
        let on: Vec<u16> = on.into_iter().map(|g| g.expect("the part spreads")).collect();
        // A level's tasks alternate; a lone task keeps its predecessor's GPU.
        assert_eq!(on, [0, 0, 1, 0, 1, 0, 0, 1, 0]);
        // A tenth of a GPU each: 0.9 over 5 is narrow; one GPU is never spread, nor a chain.
        assert!(spread_over(&h, &roots, &[0.1; 9], 2).iter().all(Option::is_none));
        assert!(spread_over(&h, &roots, &[1.0; 9], 1).iter().all(Option::is_none));
        let chain = held(&[&[], &[0], &[1]]);
        assert!(spread_over(&chain, &[0; 3], &[1.0; 3], 2).iter().all(Option::is_none));
    }

    #[test]
    fn a_spread_window_has_lanes_per_gpu_and_its_gpus_in_its_key() {
        let on = [0u16, 0, 1, 0, 1];
        let share = held(&[&[], &[0], &[0], &[1, 2], &[2]]);
        let w = lay_out(share, &on, 0, Order::Fcfs, 2);
        assert_eq!(w.gpus, on);
        assert_eq!(w.spans(0), [0, 1]);
        assert!(!w.device_runnable());
        let plain = lay_out(held(&[&[], &[0], &[0], &[1, 2], &[2]]), &[], 1, Order::Fcfs, 2);
        assert!(plain.gpus.is_empty());
        assert_eq!(plain.spans(1), [1]);
        assert_ne!(w.key, plain.key);
    }

    /// The lane choice against the rule written as a walk over every lane, on random
    /// windows (each task after up to three earlier ones) of 1, 4 and 16 lanes.
    #[test]
    fn a_lane_is_chosen_as_a_walk_over_every_lane_would() {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut next = |m: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % m
        };
        for lanes in [1usize, 4, 16] {
            for _ in 0..50 {
                let n = 1 + next(200) as usize;
                let mut fast = Lanes::new(lanes, n);
                let mut last: Vec<Option<u32>> = vec![None; lanes];
                for at in 0..n as u32 {
                    let preds: Vec<u32> = (0..next(4)).filter(|_| at > 0).map(|_| next(at as u64) as u32).collect();
                    let walk = (0..lanes)
                        .find(|&l| last[l].is_some_and(|t| preds.contains(&t)))
                        .unwrap_or_else(|| (0..lanes).min_by_key(|&l| (last[l].map_or(-1, |t| t as i64), l)).unwrap());
                    let (l, before) = fast.take(&preds, at);
                    assert_eq!((l, before), (walk, last[walk]), "{lanes} lanes, task {at} after {preds:?}");
                    last[walk] = Some(at);
                }
            }
        }
    }

    #[test]
    fn equal_structures_have_equal_keys() {
        let a = plan(held(&[&[], &[0], &[0], &[1, 2]]), Order::Fcfs, &[0], 2, false);
        let b = plan(held(&[&[], &[0], &[0], &[1, 2]]), Order::Fcfs, &[0], 2, false);
        let c = plan(held(&[&[], &[0], &[0], &[1]]), Order::Fcfs, &[0], 2, false);
        assert_eq!(a[0].1.key, b[0].1.key);
        assert_eq!(a[0].1.hash, b[0].1.hash);
        assert_ne!(a[0].1.key, c[0].1.key);
    }
}
