//! The critical path of a batch's task graph: the chain of dependent tasks
//! whose recorded spans add up to the most. Each task weighs what it took in the
//! recorded timeline, from its first command's start to its last command's end, so the
//! path is a time no schedule of these tasks could beat *given those spans*: every task
//! of the chain starts only after its predecessor has ended. It is not a hardware bound
//! (a task's span holds the waits between its commands, and another schedule might make
//! a task faster or slower); it is a bound on the order, shown beside the bounds.

use super::CommandRecord;
use crate::ids::TaskId;
use serde::Serialize;
use std::collections::HashMap;

/// The longest chain of dependent tasks, weighted by their recorded spans.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct CriticalPath {
    /// The sum of the chain's task spans (each its first command's start to its last
    /// command's end, ns); a task with no command recorded (one that did not run)
    /// weighs 0.
    pub ns: u64,
    /// The chain, first task first: each runs after the one before it (an edge of
    /// [`Report::dependencies`](super::Report::dependencies)).
    pub tasks: Vec<TaskId>,
}

/// Each task's span in the records: first start to last end (ns).
pub(crate) fn spans(records: &[CommandRecord]) -> HashMap<TaskId, u64> {
    let mut m: HashMap<TaskId, (u64, u64)> = HashMap::new();
    for r in records {
        let e = m.entry(r.task).or_insert((r.start_ns, r.end_ns));
        e.0 = e.0.min(r.start_ns);
        e.1 = e.1.max(r.end_ns);
    }
    m.into_iter().map(|(t, (s, e))| (t, e.saturating_sub(s))).collect()
}

/// The critical path over `edges` (predecessor, successor) and every task recorded;
/// `None` without edges. Edges that would close a cycle (none can: a task names only
/// tasks submitted before it) are left out. Ties go to the chain found first in the
/// order of the tasks' ids.
pub(crate) fn critical_path(records: &[CommandRecord], edges: &[(TaskId, TaskId)]) -> Option<CriticalPath> {
    if edges.is_empty() {
        return None;
    }
    let span = spans(records);
    let mut nodes: Vec<TaskId> = span.keys().copied().chain(edges.iter().flat_map(|&(p, s)| [p, s])).collect();
    nodes.sort_unstable();
    nodes.dedup();
    let index: HashMap<TaskId, usize> = nodes.iter().enumerate().map(|(i, &t)| (t, i)).collect();
    let mut succs: Vec<Vec<usize>> = vec![Vec::new(); nodes.len()];
    let mut unmet = vec![0usize; nodes.len()];
    for &(p, s) in edges {
        succs[index[&p]].push(index[&s]);
        unmet[index[&s]] += 1;
    }
    // Kahn's order; `best[v]`: the heaviest chain ending at v, and v's place before it.
    let weight = |v: usize| span.get(&nodes[v]).copied().unwrap_or(0);
    let mut best: Vec<(u64, Option<usize>)> = (0..nodes.len()).map(|v| (weight(v), None)).collect();
    let mut ready: Vec<usize> = (0..nodes.len()).filter(|&v| unmet[v] == 0).rev().collect();
    while let Some(v) = ready.pop() {
        for &s in &succs[v] {
            let through = best[v].0.saturating_add(weight(s));
            if through > best[s].0 {
                best[s] = (through, Some(v));
            }
            unmet[s] -= 1;
            if unmet[s] == 0 {
                ready.push(s);
            }
        }
    }
    // The heaviest end (the first such in id order), then back along the chain.
    let mut end = 0;
    for v in 1..nodes.len() {
        if best[v].0 > best[end].0 {
            end = v;
        }
    }
    let mut tasks = vec![nodes[end]];
    let mut at = end;
    while let Some(p) = best[at].1 {
        tasks.push(nodes[p]);
        at = p;
    }
    tasks.reverse();
    Some(CriticalPath { ns: best[end].0, tasks })
}

impl std::fmt::Display for CriticalPath {
    /// `12.300 ms over 5 tasks (#1 -> #4 -> #7 -> #8 -> ... -> #12)`: at most the first
    /// four and the last task.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = self.tasks.len();
        write!(f, "{:.3} ms over {n} task{} (", self.ns as f64 / 1e6, if n == 1 { "" } else { "s" })?;
        for (i, t) in self.tasks.iter().enumerate() {
            match i {
                0 => write!(f, "{t}")?,
                1..4 => write!(f, " -> {t}")?,
                _ if i + 1 == n => write!(f, " -> ... -> {t}")?,
                _ => {}
            }
        }
        write!(f, ")")
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::stage::Stage;

    fn rec(task: u64, command: u32, start_ns: u64, end_ns: u64) -> CommandRecord {
        CommandRecord {
            task: TaskId(task),
            granularity: 1,
            command,
            stage: Stage::Kernel,
            gpu: 0,
            stream: 0,
            dispatched_ns: start_ns,
            start_ns,
            end_ns,
            bytes: 0,
            failed: false,
        }
    }

    fn e(p: u64, s: u64) -> (TaskId, TaskId) {
        (TaskId(p), TaskId(s))
    }

    #[test]
    fn a_diamond_takes_its_heavier_branch_and_spans_count_from_first_start_to_last_end() {
        // Task 1: 0..10 with a gap inside (span 10); 2: 30; 3: 5; 4: 7; 5 (no edge): 40.
        let records = [
            rec(1, 0, 0, 4),
            rec(1, 1, 6, 10),
            rec(2, 0, 10, 40),
            rec(3, 0, 10, 15),
            rec(4, 0, 40, 47),
            rec(5, 0, 0, 40),
        ];
        assert_eq!(critical_path(&records, &[]), None);
        let path = critical_path(&records, &[e(1, 2), e(1, 3), e(2, 4), e(3, 4)]).unwrap();
        assert_eq!(path, CriticalPath { ns: 47, tasks: vec![TaskId(1), TaskId(2), TaskId(4)] });
        assert_eq!(path.to_string(), "0.000 ms over 3 tasks (#1 -> #2 -> #4)");
        // A lone task heavier than every chain is the path (a chain of one).
        let path = critical_path(&[rec(1, 0, 0, 5), rec(2, 0, 5, 9), rec(3, 0, 0, 100)], &[e(1, 2)]).unwrap();
        assert_eq!(path, CriticalPath { ns: 100, tasks: vec![TaskId(3)] });
    }

    #[test]
    fn a_long_chain_is_shown_by_its_head_and_its_end_and_unrun_tasks_weigh_nothing() {
        let records: Vec<_> = (0..8).map(|i| rec(i, 0, i * 1_000_000, (i + 1) * 1_000_000)).collect();
        let mut edges: Vec<_> = (1..8).map(|i| e(i - 1, i)).collect();
        // Task 9 never ran (a failed predecessor): it weighs 0 and may end the chain.
        edges.push(e(7, 9));
        let path = critical_path(&records, &edges).unwrap();
        assert_eq!(path.ns, 8_000_000);
        assert_eq!(path.tasks.len(), 8, "{path:?}");
        assert_eq!(path.to_string(), "8.000 ms over 8 tasks (#0 -> #1 -> #2 -> #3 -> ... -> #7)");
    }
}
