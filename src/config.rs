//! What the builder validated: which GPUs to open ([`Gpus`], which the backends resolve
//! against the GPUs they have) and the configuration the running parts see
//! ([`Config`]). Plain data, below the backend and the dispatcher that read it and the
//! builder that makes it.

use crate::error::{Error, Result};
use crate::stage::{OverlapMatrix, Thresholds, Tuning};
use crate::task::Order;

/// Which GPUs to use.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Gpus {
    /// The first `n` GPUs (ordinals `0..n`).
    Count(usize),
    /// These ordinals, in this order.
    List(Vec<usize>),
}

impl Gpus {
    /// Resolves to ordinals on a backend with `available` GPUs. A count is checked
    /// before any list is made: `Count(usize::MAX)` names ordinal `available`, the
    /// first one missing.
    pub(crate) fn resolve(&self, available: usize, backend: &'static str) -> Result<Vec<usize>> {
        match self {
            Gpus::Count(n) if *n > available => Err(Error::NoSuchGpu { ordinal: available, available, backend }),
            Gpus::Count(n) => Ok((0..*n).collect()),
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
    }
}
