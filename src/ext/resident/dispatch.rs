//! The dispatcher's part in resident data (`ext::resident::memory`): a task taken
//! by a slot binds its copies on this GPU; fetches whose pieces are all valid here are
//! stepped over when they come next; the others are planned when dispatched
//! (`Dispatcher::dispatch`).

use crate::ext::resident::memory::Plan;
use crate::ext::resident::shared::Residents;
use crate::task::command::Command;
use crate::task::Task;

/// Makes `gpu`'s copies of the task's resident buffers (evicting idle ones of
/// `residents` if the GPU is full) and counts the task as their user there until it
/// ends. Called on `gpu`'s dispatcher when a slot takes the task.
pub(crate) fn bind_resident(gpu: usize, residents: &Residents, task: &mut Task) -> Result<(), ResidentFault> {
    if task.residency.uses.is_empty() || task.residency.bound.is_some() {
        return Ok(());
    }
    let others = || residents.alive();
    for (i, u) in task.residency.uses.iter().enumerate() {
        if let Err(e) = u.buf.bind(gpu, &others) {
            for done in &task.residency.uses[..i] {
                done.buf.unbind(gpu);
            }
            return Err(ResidentFault::Bind { buffer: u.buf.id, gpu, error: Box::new(e) });
        }
    }
    task.residency.bound = Some(gpu);
    Ok(())
}

/// Why a task's resident data failed it on a GPU ([`bind_resident`], [`plan_command`]).
#[derive(Debug, thiserror::Error)]
pub(crate) enum ResidentFault {
    /// A copy of the buffer could not be made on the GPU (boxed: the error is large,
    /// and this is the rare path).
    #[error("resident buffer {buffer} on GPU {gpu}: {error}")]
    Bind {
        /// The buffer's id.
        buffer: u64,
        /// The GPU.
        gpu: usize,
        /// Why (the allocation's error).
        error: Box<crate::Error>,
    },
    /// The fetch's plan met another fetch of the same pieces under way.
    #[error("resident buffer {buffer}: a fetch raced another")]
    Raced {
        /// The buffer's id.
        buffer: u64,
    },
    /// A piece the fetch needs is valid on no GPU and not on the host.
    #[error(
        "resident buffer {buffer} piece {piece} is valid nowhere: task {by}, which wrote it, failed (or its GPU was \
         lost)"
    )]
    Lost {
        /// The buffer's id.
        buffer: u64,
        /// The piece.
        piece: usize,
        /// The task that wrote it last.
        by: crate::TaskId,
    },
}

/// Before command `index` of `task` is issued on `gpu`: a fetch plans what it copies
/// (`Err(None)`: nothing, every piece is valid here; `Err(Some(why))`: a piece is valid
/// nowhere); any other command marks the task as having begun to write.
pub(crate) fn plan_command(gpu: usize, task: &mut Task, index: usize) -> Result<(), Option<ResidentFault>> {
    match &mut task.commands[index] {
        Command::Fetch(f) => match f.buf.plan_fetch(gpu, &f.pieces) {
            Plan::Copy(parts) => {
                f.plan = parts;
                Ok(())
            }
            Plan::Valid => Err(None),
            Plan::Wait => Err(Some(ResidentFault::Raced { buffer: f.buf.id })),
            Plan::Lost { piece, by } => Err(Some(ResidentFault::Lost { buffer: f.buf.id, piece, by })),
        },
        _ => {
            task.residency.dirty = true;
            Ok(())
        }
    }
}

/// Steps over the fetches at `task`'s next command whose pieces are all valid on `gpu`
/// already: nothing to copy, so no stage slot, grant or record for them. Called where a
/// task's next command changes (a slot takes it, a command of it completes), so each
/// fetch is looked at once; one that must copy waits for its stage as any copy.
pub(crate) fn skip_valid_fetches(gpu: usize, task: &mut Task) {
    let last = task.commands.len() - 1;
    while let Some(Command::Fetch(f)) = task.commands.get(task.next) {
        if task.next == last || !f.buf.all_valid(gpu, &f.pieces) {
            break;
        }
        task.next += 1;
    }
}

/// Whether command `c` may start on `gpu` now: a fetch waits while another slot is
/// fetching one of its pieces here; any other command may.
#[inline]
pub(crate) fn may_start(gpu: usize, c: &Command) -> bool {
    match c {
        Command::Fetch(f) => !f.buf.fetch_waits(gpu, &f.pieces),
        _ => true,
    }
}

/// Command `c` ended on `gpu` (well where `ok`), or was abandoned in flight: a fetch
/// gives back what its plan holds (the pieces pending here, the source copies it
/// counted as used).
#[inline]
pub(crate) fn fetch_ended(gpu: usize, c: &mut Command, ok: bool) {
    if let Command::Fetch(f) = c {
        if !f.plan.is_empty() {
            f.buf.fetched(gpu, &f.plan, ok);
            f.plan.clear();
        }
    }
}
