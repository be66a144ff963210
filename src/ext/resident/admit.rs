//! Resident data's admission step of a submit: a task's declared and implied resident
//! ranges become pieces per buffer, the tasks it runs after (RAW, WAR, WAW per piece)
//! join its predecessors, its GPU callbacks learn which resident buffers they may
//! reach, and a fetch per buffer it reads goes first among its commands.

use crate::dispatch::shared::Shared;
use crate::ext::resident::memory::ResidentInner;
use crate::ext::resident::task::{Residency, ResidentUse};
use crate::ids::{Preds, TaskId};
use crate::task::command::{Command, FetchCmd};
use std::sync::Arc;

/// Bytes of a resident buffer a command reads or writes.
pub(crate) struct ResidentRange {
    pub(crate) buf: Arc<ResidentInner>,
    pub(crate) bytes: std::ops::Range<usize>,
    pub(crate) read: bool,
    pub(crate) write: bool,
    /// Every byte of `bytes` is touched (a 2-D copy with gaps between its rows is not).
    pub(crate) dense: bool,
}

/// The admission step: the task's residency, its fetches put first among `commands`
/// and its GPU callbacks limited to its buffers; the tasks it runs after added to `preds`.
pub(crate) fn admit(
    shared: &Shared,
    id: TaskId,
    ranges: Vec<ResidentRange>,
    commands: &mut Vec<Command>,
    preds: &mut Preds,
) -> Residency {
    if ranges.is_empty() {
        // Most tasks: no resident data, nothing to track, splice or lock.
        return Residency::default();
    }
    let uses = resident_uses(shared, id, ranges, preds);
    if !uses.is_empty() {
        // GPU callbacks reach the resident buffers the task declared, and only those.
        let ids: Arc<[u64]> = uses.iter().map(|u| u.buf.id).collect();
        for c in commands.iter_mut() {
            if let Command::Gpu(Some(callback)) = c {
                callback.resident = Some(ids.clone());
            }
        }
    }
    // The fetches run first, at the download stage, once the task is on a GPU.
    let fetches = uses
        .iter()
        .filter(|u| !u.read.is_empty())
        .map(|u| Command::Fetch(FetchCmd { buf: u.buf.clone(), pieces: u.read.clone(), plan: Vec::new() }));
    commands.splice(0..0, fetches);
    Residency { uses, ..Residency::default() }
}

/// A task's resident ranges as pieces per buffer: those it needs valid where it runs
/// (read, or written in part) and those it writes; adds the tasks it runs after
/// (RAW, WAR, WAW per piece) to `preds`.
pub(crate) fn resident_uses(
    shared: &Shared,
    id: TaskId,
    ranges: Vec<ResidentRange>,
    preds: &mut Preds,
) -> Vec<ResidentUse> {
    let mut uses: Vec<ResidentUse> = Vec::new();
    if ranges.is_empty() {
        return uses; // nothing to track, and no lock to take
    }
    for r in ranges {
        let at = match uses.iter().position(|u| Arc::ptr_eq(&u.buf, &r.buf)) {
            Some(i) => i,
            None => {
                uses.push(ResidentUse { buf: r.buf.clone(), read: Vec::new(), write: Vec::new() });
                uses.len() - 1
            }
        };
        let u = &mut uses[at];
        let pieces = r.buf.pieces_of(&r.bytes);
        for p in pieces.clone() {
            // A piece written in part keeps the rest of its bytes: it is read too (a
            // 2-D copy's gaps between rows included).
            let whole = r.buf.bytes_of(&(p..p + 1));
            let partial = r.write && (!r.dense || r.bytes.start > whole.start || r.bytes.end < whole.end);
            if r.read || partial {
                u.read.push(p);
            }
            if r.write {
                u.write.push(p);
            }
        }
    }
    let batch = shared.batch.lock();
    let live = |t: TaskId| batch.graph.unended(t);
    for u in &mut uses {
        for list in [&mut u.read, &mut u.write] {
            list.sort_unstable();
            list.dedup();
        }
        let read_only: Vec<usize> = u.read.iter().copied().filter(|p| u.write.binary_search(p).is_err()).collect();
        u.buf.track(id, &u.write, true, &live, preds);
        u.buf.track(id, &read_only, false, &live, preds);
    }
    uses
}
