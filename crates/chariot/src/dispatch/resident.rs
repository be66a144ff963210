//! The dispatcher's part in resident data (`memory::resident`): a task taken
//! by a slot binds its copies on this GPU; fetches whose pieces are all valid here are
//! stepped over when they come next; the others are planned when dispatched
//! (`Dispatcher::dispatch`).

use super::{Device, Dispatcher};
use crate::memory::resident::Plan;
use crate::task::command::Command;
use crate::task::Task;

impl<D: Device> Dispatcher<D> {
    /// Makes this GPU's copies of the task's resident buffers (evicting idle ones if
    /// the GPU is full) and counts the task as their user here until it ends.
    pub(super) fn bind_resident(&self, task: &mut Task) -> Result<(), String> {
        if task.residency.uses.is_empty() || task.residency.bound.is_some() {
            return Ok(());
        }
        let others = || self.shared.residents();
        for (i, u) in task.residency.uses.iter().enumerate() {
            if let Err(e) = u.buf.bind(self.gpu, &others) {
                for done in &task.residency.uses[..i] {
                    done.buf.unbind(self.gpu);
                }
                return Err(format!("resident buffer {} on GPU {}: {e}", u.buf.id, self.gpu));
            }
        }
        task.residency.bound = Some(self.gpu);
        Ok(())
    }
}

/// Before command `index` of `task` is issued on `gpu`: a fetch plans what it copies
/// (`Err(None)`: nothing, every piece is valid here; `Err(Some(why))`: a piece is valid
/// nowhere); any other command marks the task as having begun to write.
pub(super) fn plan_command(gpu: usize, task: &mut Task, index: usize) -> Result<(), Option<String>> {
    match &mut task.commands[index] {
        Command::Fetch(f) => match f.buf.plan_fetch(gpu, &f.pieces) {
            Plan::Copy(parts) => {
                f.plan = parts;
                Ok(())
            }
            Plan::Valid => Err(None),
            Plan::Wait => Err(Some(format!("resident buffer {}: a fetch raced another", f.buf.id))),
            Plan::Lost { piece, by } => Err(Some(format!(
                "resident buffer {} piece {piece} is valid nowhere: task {by}, which wrote it, failed (or its GPU \
                 was lost)",
                f.buf.id
            ))),
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
pub(super) fn skip_valid_fetches(gpu: usize, task: &mut Task) {
    let last = task.commands.len() - 1;
    while let Some(Command::Fetch(f)) = task.commands.get(task.next) {
        if task.next == last || !f.buf.all_valid(gpu, &f.pieces) {
            break;
        }
        task.next += 1;
    }
}
