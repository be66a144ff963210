//! Modeled time to real time, without overflow. Kernel costs, latencies, deaths and
//! slowdowns are the user's values and can be anything; an engine thread must not panic
//! on them (its GPU would stop and `synchronize` wait forever). So a scaled duration
//! too long for a `Duration` saturates at `Duration::MAX`, and an instant past what an
//! `Instant` can count is `None`: a moment that never comes.

use parking_lot::{Condvar, MutexGuard};
use std::time::{Duration, Instant};

/// Below this a wait ends by spinning: condition-variable timeouts overshoot by tens of
/// microseconds, as much as a whole small copy.
pub(crate) const SPIN: Duration = Duration::from_micros(120);

/// Waits on `changed` until `eta` or a change of the fluid model behind `st`, whichever
/// comes first; the last stretch before `eta` spins with the lock released. Shared by
/// the links' and the SMs' models, whose threads each wait for their own flow.
pub(crate) fn wait_on<T>(changed: &Condvar, st: &mut MutexGuard<'_, T>, eta: Instant) {
    let now = Instant::now();
    if eta > now + SPIN {
        changed.wait_until(st, eta - SPIN);
    } else {
        MutexGuard::unlocked(st, || {
            while Instant::now() < eta {
                std::thread::yield_now();
            }
        });
    }
}

/// Waits until `deadline`, precisely (sleep, then spin the last stretch).
pub(crate) fn sleep_until(deadline: Instant) {
    let now = Instant::now();
    if deadline > now + SPIN {
        std::thread::sleep(deadline - now - SPIN);
    }
    while Instant::now() < deadline {
        std::thread::yield_now();
    }
}

/// `d` × `factor` (`factor` ≥ 0), saturating at `Duration::MAX`.
pub(crate) fn scale(d: Duration, factor: f64) -> Duration {
    if d.is_zero() || factor == 0.0 {
        return Duration::ZERO;
    }
    // The same product as `Duration::mul_f64`, which panics where this saturates.
    Duration::try_from_secs_f64(d.as_secs_f64() * factor).unwrap_or(Duration::MAX)
}

/// `secs` seconds after `from`, or `None` when no `Instant` can hold it (or `secs` is
/// not a finite non-negative number).
pub(crate) fn after_secs(from: Instant, secs: f64) -> Option<Instant> {
    Duration::try_from_secs_f64(secs).ok().and_then(|d| from.checked_add(d))
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn scaling_saturates() {
        let s = Duration::from_secs(1);
        assert_eq!(scale(s, 2.5), Duration::from_millis(2500));
        assert_eq!(scale(s, 0.0), Duration::ZERO);
        assert_eq!(scale(Duration::ZERO, f64::INFINITY), Duration::ZERO);
        assert_eq!(scale(Duration::MAX, 1.0), Duration::MAX);
        assert_eq!(scale(Duration::MAX, 2.0), Duration::MAX);
        assert_eq!(scale(Duration::from_nanos(1), 1e30), Duration::MAX);
        assert_eq!(scale(s, f64::INFINITY), Duration::MAX);
        // As `mul_f64` wherever that does not panic.
        for (d, k) in [(Duration::from_nanos(3500), 0.2), (Duration::from_micros(2), 20.0), (s, 1e6)] {
            assert_eq!(scale(d, k), d.mul_f64(k));
        }
    }

    #[test]
    fn instants_past_the_clock_are_none() {
        let now = Instant::now();
        assert_eq!(after_secs(now, 0.0), Some(now));
        assert_eq!(after_secs(now, 1.5), Some(now + Duration::from_millis(1500)));
        for secs in [1e300, f64::INFINITY, f64::NAN, -1.0, Duration::MAX.as_secs_f64()] {
            assert_eq!(after_secs(now, secs), None, "{secs}");
        }
        assert_eq!(now.checked_add(scale(Duration::MAX, 1.0)), None);
    }
}
