//! How a batch's tasks reach the GPU (replay): dispatched command by command by the
//! host, or replayed as graphs. The builder picks it; the task API does not change.

/// How tasks are executed. The default, [`Execution::Auto`], replays a batch as
/// graphs when it repeats an earlier batch's structure and its commands are short
/// against the host's cost of dispatching them; otherwise the host dispatches. See
/// `docs/replay.md`.
///
/// ```
/// use chariot::{Backend, Execution, Scheduler};
/// assert_eq!(Execution::default(), Execution::Auto);
/// assert_eq!("replay".parse::<Execution>()?, Execution::Replay);
/// let s = Scheduler::builder().backend(Backend::Sim).execution(Execution::Host).build()?;
/// assert_eq!(s.execution(), Execution::Host);
/// # Ok::<(), chariot::Error>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Execution {
    /// Replay a batch when it pays: it repeats the structure of the batch before it
    /// (the same tasks' commands, kernels and named dependencies, in the same order),
    /// every task can run in a graph, and that batch's GPU commands took less than
    /// [`Execution::PAYS_BELOW`] times the host's cost of dispatching one.
    #[default]
    Auto,
    /// Always dispatch command by command (the paper's pipeline).
    Host,
    /// Replay every batch, from its first task, as graphs: as long as its tasks can
    /// run in a graph, they are held and launched as windows (one per GPU that gets
    /// work) at each sub-window's cut (64 tasks, doubling to 1,024) and at
    /// `synchronize` (or a guard, or a task that cannot).
    Replay,
    /// As [`Execution::Replay`], but a window whose tasks are one kernel launch each,
    /// of one block shape, runs on the GPU itself: a persistent kernel takes ready
    /// tasks from a queue in device memory and counts their dependencies down, with no
    /// host call between two tasks (Giles' scheme). Other windows replay as graphs.
    Device,
}

impl Execution {
    /// [`Execution::Auto`] replays where a command's GPU time is below this many times
    /// the host's time to dispatch one: there the host, not the GPU, sets the pace.
    pub const PAYS_BELOW: f64 = 8.0;

    /// Every mode, in the order of the names in error messages.
    pub const ALL: [Execution; 4] = [Execution::Auto, Execution::Host, Execution::Replay, Execution::Device];

    /// The names an error message lists as accepted, from [`Execution::ALL`].
    pub(crate) fn allowed() -> String {
        crate::error::one_of(Execution::ALL.map(Execution::name))
    }

    /// The short name: `auto`, `host`, `replay` or `device`.
    pub fn name(self) -> &'static str {
        match self {
            Execution::Auto => "auto",
            Execution::Host => "host",
            Execution::Replay => "replay",
            Execution::Device => "device",
        }
    }
}

impl std::fmt::Display for Execution {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Execution {
    type Err = crate::Error;

    fn from_str(s: &str) -> crate::Result<Execution> {
        Execution::ALL.into_iter().find(|e| e.name() == s).ok_or_else(|| crate::Error::InvalidConfig {
            name: "execution",
            value: format!("{s:?}"),
            allowed: Execution::allowed(),
        })
    }
}
