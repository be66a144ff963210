//! What the builder validated: which GPUs to open ([`Gpus`], which the backends resolve
//! against the GPUs they have) and the configuration the running parts see
//! ([`Config`], with the task buffer's [`Order`]). Plain data, below the backend and the dispatcher that read it and the
//! builder that makes it.

use crate::error::{Error, Result};
use crate::stage::{OverlapMatrix, Thresholds, Tuning};

/// Which GPUs to use.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Gpus {
    /// The first `n` GPUs (ordinals `0..n`).
    Count(usize),
    /// These ordinals, in this order.
    List(Vec<usize>),
    /// Every GPU the backend has.
    All,
}

impl Gpus {
    /// Resolves to ordinals on a backend with `available` GPUs. A count is checked
    /// before any list is made: `Count(usize::MAX)` names ordinal `available`, the
    /// first one missing.
    pub(crate) fn resolve(&self, available: usize, backend: &'static str) -> Result<Vec<usize>> {
        match self {
            Gpus::Count(n) if *n > available => Err(Error::NoSuchGpu { ordinal: available, available, backend }),
            Gpus::Count(n) => Ok((0..*n).collect()),
            Gpus::All if available == 0 => Err(Error::NoSuchGpu { ordinal: 0, available, backend }),
            Gpus::All => Ok((0..available).collect()),
            Gpus::List(v) => match v.iter().find(|&&o| o >= available) {
                Some(&ordinal) => Err(Error::NoSuchGpu { ordinal, available, backend }),
                None => Ok(v.clone()),
            },
        }
    }
}

/// The validated configuration the running parts see.
#[derive(Clone, Debug)]
pub(crate) struct Config {
    pub(crate) streams: usize,
    pub(crate) order: Order,
    /// The hard caps L and G (`tuning.thresholds`).
    pub(crate) thresholds: Thresholds,
    pub(crate) tuning: Tuning,
    pub(crate) matrices: Vec<OverlapMatrix>,
    pub(crate) buses: usize,
    pub(crate) pin: bool,
    /// Dispatcher cores to leave to other processes of this host first (in a cluster:
    /// the ranks before this one on the host, D each), so that ranks sharing a host
    /// pin their dispatchers to distinct cores.
    pub(crate) pin_skip: usize,
    pub(crate) device_timing: bool,
    pub(crate) nvtx: bool,
    pub(crate) execution: crate::Execution,
}

/// The ordering rule of the task buffer (`task::buffer`), a choice of the
/// configuration.
///
/// ```
/// use chariot::Order;
/// assert_eq!(Order::default(), Order::Fcfs);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Order {
    /// First come, first served: arrival order.
    #[default]
    Fcfs,
    /// Largest granularity first (the paper's LF): best for chunks of uneven size.
    LargestFirst,
    /// Smallest granularity first (SF).
    SmallestFirst,
}

impl Order {
    /// Every rule, in the order of the names in error messages and help texts.
    ///
    /// ```
    /// use chariot::Order;
    /// let names: Vec<&str> = Order::ALL.iter().map(|o| o.name()).collect();
    /// assert_eq!(names, ["fcfs", "lf", "sf"]);
    /// ```
    pub const ALL: [Order; 3] = [Order::Fcfs, Order::LargestFirst, Order::SmallestFirst];

    /// The rule's short name, the one command lines take: `fcfs`, `lf` or `sf`.
    /// [`Display`](std::fmt::Display) writes it, and [`str::parse`] reads it back.
    ///
    /// ```
    /// use chariot::Order;
    /// assert_eq!(Order::LargestFirst.name(), "lf");
    /// assert_eq!(Order::SmallestFirst.to_string(), "sf");
    /// assert_eq!("fcfs".parse::<Order>()?, Order::Fcfs);
    /// # Ok::<(), chariot::Error>(())
    /// ```
    pub fn name(&self) -> &'static str {
        match self {
            Order::Fcfs => "fcfs",
            Order::LargestFirst => "lf",
            Order::SmallestFirst => "sf",
        }
    }
}

impl std::fmt::Display for Order {
    /// Writes the short name ([`Order::name`]).
    ///
    /// ```
    /// use chariot::Order;
    /// assert_eq!(format!("order {}", Order::Fcfs), "order fcfs");
    /// ```
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Order {
    type Err = crate::Error;

    /// Reads a short name ([`Order::name`]): exactly `fcfs`, `lf` or `sf`, lower case.
    /// This is the one parser of order names; every program of the crate uses it.
    ///
    /// ```
    /// use chariot::{Error, Order};
    /// assert_eq!("lf".parse::<Order>()?, Order::LargestFirst);
    /// let err = "largest".parse::<Order>().unwrap_err();
    /// assert!(matches!(err, Error::InvalidConfig { name: "order", .. }));
    /// assert_eq!(err.to_string(), r#"invalid configuration: order = "largest"; allowed: fcfs, lf or sf"#);
    /// # Ok::<(), chariot::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`crate::Error::InvalidConfig`] named `order` for any other text (another case,
    /// surrounding spaces and the empty string included), listing the names allowed.
    fn from_str(s: &str) -> crate::Result<Order> {
        Order::ALL.into_iter().find(|o| o.name() == s).ok_or_else(|| crate::Error::InvalidConfig {
            name: "order",
            value: format!("{s:?}"),
            allowed: crate::error::one_of(Order::ALL.iter().map(Order::name)),
        })
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn a_count_is_checked_before_it_is_listed() {
        assert_eq!(Gpus::Count(2).resolve(8, "sim").ok(), Some(vec![0, 1]));
        assert_eq!(Gpus::Count(8).resolve(8, "sim").ok(), Some((0..8).collect()));
        for n in [9, 1 << 40, usize::MAX] {
            let e = Gpus::Count(n).resolve(8, "sim").unwrap_err();
            assert!(matches!(e, Error::NoSuchGpu { ordinal: 8, available: 8, backend: "sim" }), "{n}: {e:?}");
        }
        let e = Gpus::List(vec![1, 9, 3]).resolve(8, "cuda").unwrap_err();
        assert!(matches!(e, Error::NoSuchGpu { ordinal: 9, available: 8, backend: "cuda" }), "{e:?}");
        assert_eq!(Gpus::List(vec![3, 1]).resolve(8, "sim").ok(), Some(vec![3, 1]));
        assert_eq!(Gpus::All.resolve(3, "cuda").ok(), Some(vec![0, 1, 2]));
        let e = Gpus::All.resolve(0, "cuda").unwrap_err();
        assert!(matches!(e, Error::NoSuchGpu { ordinal: 0, available: 0, backend: "cuda" }), "{e:?}");
    }
}
