//! A task's use of resident data: the buffers it uses, the pieces it reads and writes,
//! and the GPU whose copies it holds while it runs. The core holds it in `Task` and
//! calls its three hooks (`place` when the task goes to Q, `moved`, `end`). A fetch's
//! plan is lowered here to the backend's device operations ([`lower_fetch`]), once for
//! both backends.

use crate::ext::resident::memory::ResidentInner;
use crate::ids::TaskId;
use crate::stage::Stage;
use crate::sync::{AtomicBool, Ordering};
use crate::task::command::Command;
use crate::task::Task;
use std::sync::Arc;

/// A task's use of one resident buffer.
#[derive(Debug)]
pub(crate) struct ResidentUse {
    pub(crate) buf: Arc<ResidentInner>,
    /// Pieces it needs valid where it runs (read, or written in part), ascending.
    pub(crate) read: Vec<usize>,
    /// Pieces it writes, ascending.
    pub(crate) write: Vec<usize>,
}

/// A task's resident data and its state on the GPU that runs it.
#[derive(Debug, Default)]
pub(crate) struct Residency {
    pub(crate) uses: Vec<ResidentUse>,
    /// The GPU whose copies it holds (bound when a slot took it).
    pub(crate) bound: Option<usize>,
    /// A command other than a fetch has been issued (it may have written).
    pub(crate) dirty: bool,
    /// The GPU that holds most of what it reads, when it went to Q.
    pub(crate) home: Option<usize>,
}

impl Residency {
    /// The task moves off a lost GPU: it gives up its copies' count there (the copies
    /// are gone) and binds and is placed again where it goes.
    pub(crate) fn moved(&mut self) {
        if let Some(g) = self.bound.take() {
            self.uses.iter().for_each(|u| u.buf.unbind(g));
        }
        self.dirty = false;
        self.home = None;
    }

    /// Gives back the copies it holds on its GPU, marking what it wrote there (`ok`) or
    /// invalidating it (failed after it started writing).
    pub(crate) fn end(&mut self, task: TaskId, ok: bool) {
        if let Some(g) = self.bound.take() {
            for u in &self.uses {
                u.buf.ended(g, &u.write, ok, self.dirty, task);
                u.buf.unbind(g);
            }
        }
    }

    /// Where a ready task's resident data is: the GPU in the rotation holding the most
    /// bytes of what it reads (the first of equals), if any holds some; kept as `home`
    /// for Q's placement. With one GPU there is no choice to make.
    pub(crate) fn place(&mut self, alive: &[AtomicBool]) {
        let d = alive.len();
        if d < 2 || self.uses.iter().all(|u| u.read.is_empty()) {
            self.home = None;
            return;
        }
        self.home = (0..d)
            .filter(|&g| alive[g].load(Ordering::SeqCst))
            .map(|g| (g, self.uses.iter().map(|u| u.buf.valid_bytes(g, &u.read)).sum::<usize>()))
            .filter(|&(_, bytes)| bytes > 0)
            .fold(None, |best: Option<(usize, usize)>, (g, b)| match best {
                Some((_, bb)) if bb >= b => best,
                _ => Some((g, b)),
            })
            .map(|(g, _)| g);
    }
}

/// Lowers a planned fetch to the backend's operations, once for both backends: per part
/// of its plan, a peer copy from another GPU's copy, an upload from the host shadow
/// (locked while the operation is issued), or a zero fill, each into this GPU's copy.
pub(crate) fn lower_fetch<E: From<crate::backend::op_failure::OpFailure>>(
    f: &crate::task::command::FetchCmd,
    gpu: usize,
    sink: &mut crate::task::lower::Sink<'_, E>,
) -> Result<(), E> {
    use crate::backend::op::{Dev, FillOp, Op, PeerOp, UploadOp};
    use crate::backend::op_failure::OpFailure;
    use crate::ext::resident::memory::Source;
    let dst = f.buf.copy(gpu).ok_or(OpFailure::NoResidentCopy)?;
    for part in &f.plan {
        let r = f.buf.bytes_of(&part.pieces);
        match part.from {
            Source::Gpu(h) => {
                let src = f.buf.copy(h).ok_or(OpFailure::SourceCopyGone)?;
                sink(Op::Peer(PeerOp {
                    src: Dev::Held(src),
                    src_offset: r.start,
                    dst: Dev::Borrowed(&dst),
                    dst_offset: r.start,
                    bytes: r.len(),
                }))?
            }
            Source::Host => {
                let shadow = f.buf.shadow();
                let src = shadow.get(r.clone()).ok_or(OpFailure::ShadowShort)?;
                sink(Op::Upload(UploadOp { src, dst: Dev::Borrowed(&dst), dst_offset: r.start }))?
            }
            Source::Zero => sink(Op::Fill(FillOp { dst: Dev::Borrowed(&dst), offset: r.start, bytes: r.len() }))?,
        }
    }
    Ok(())
}

/// The stage `task` would start at on `gpu`: its next command's, past the fetches
/// whose pieces are all valid there (those the dispatcher steps over, with
/// `skip_valid_fetches`, when `gpu` takes the task; nothing is stepped over here).
/// `None` without commands left.
pub(crate) fn start_stage(gpu: usize, task: &Task) -> Option<Stage> {
    let last = task.commands.len().checked_sub(1)?;
    let mut i = task.next;
    while let Some(Command::Fetch(f)) = task.commands.get(i) {
        if i == last || !f.buf.all_valid(gpu, &f.pieces) {
            break;
        }
        i += 1;
    }
    task.commands.get(i).map(Command::stage)
}
