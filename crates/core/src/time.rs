//! Time as the data planes see it: integer nanoseconds since an origin the
//! driver chooses (the simulator's start, the daemon's start). [`Nanos`] is
//! what the public data-plane API passes (`DataPlane::handle`, `Control`,
//! `PullDataPlane::handle`, the registries), so a driver cannot hand a data
//! plane microseconds or a tick count by mistake; a data plane's own
//! arithmetic reads the integer once ([`Nanos::get`]) at its edge.

use std::fmt;
use std::ops::{Add, AddAssign, Sub};
use std::time::Duration;

/// A point in time, or a span, in integer nanoseconds.
///
/// `+` and `-` behave as on `u64` (a panic on overflow in checked builds);
/// the `checked_` and `saturating_` forms are there where a value comes
/// from outside.
#[repr(transparent)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(transparent)
)]
pub struct Nanos(u64);

impl Nanos {
    pub const ZERO: Nanos = Nanos(0);
    pub const MAX: Nanos = Nanos(u64::MAX);

    /// `ns` nanoseconds.
    #[inline]
    pub const fn new(ns: u64) -> Nanos {
        Nanos(ns)
    }

    /// `us` microseconds, saturating at [`Nanos::MAX`].
    #[inline]
    pub const fn from_micros(us: u64) -> Nanos {
        Nanos(us.saturating_mul(1_000))
    }

    /// `ms` milliseconds, saturating at [`Nanos::MAX`].
    #[inline]
    pub const fn from_millis(ms: u64) -> Nanos {
        Nanos(ms.saturating_mul(1_000_000))
    }

    /// The integer nanoseconds.
    #[inline]
    pub const fn get(self) -> u64 {
        self.0
    }

    #[inline]
    pub const fn checked_add(self, d: Nanos) -> Option<Nanos> {
        match self.0.checked_add(d.0) {
            Some(n) => Some(Nanos(n)),
            None => None,
        }
    }

    #[inline]
    pub const fn checked_sub(self, d: Nanos) -> Option<Nanos> {
        match self.0.checked_sub(d.0) {
            Some(n) => Some(Nanos(n)),
            None => None,
        }
    }

    #[inline]
    pub const fn saturating_add(self, d: Nanos) -> Nanos {
        Nanos(self.0.saturating_add(d.0))
    }

    #[inline]
    pub const fn saturating_sub(self, d: Nanos) -> Nanos {
        Nanos(self.0.saturating_sub(d.0))
    }
}

impl Add for Nanos {
    type Output = Nanos;
    #[inline]
    fn add(self, d: Nanos) -> Nanos {
        Nanos(self.0 + d.0)
    }
}

impl AddAssign for Nanos {
    #[inline]
    fn add_assign(&mut self, d: Nanos) {
        self.0 += d.0;
    }
}

impl Sub for Nanos {
    type Output = Nanos;
    #[inline]
    fn sub(self, d: Nanos) -> Nanos {
        Nanos(self.0 - d.0)
    }
}

impl From<Nanos> for Duration {
    #[inline]
    fn from(n: Nanos) -> Duration {
        Duration::from_nanos(n.0)
    }
}

/// A `Duration` beyond `u64` nanoseconds (584 years) saturates.
impl From<Duration> for Nanos {
    #[inline]
    fn from(d: Duration) -> Nanos {
        Nanos(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
    }
}

impl fmt::Display for Nanos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ns", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arithmetic_is_u64s_and_the_checked_forms_refuse_what_u64_would_not_hold() {
        let (a, b) = (Nanos::new(7), Nanos::from_micros(2));
        assert_eq!((a + b).get(), 2_007);
        assert_eq!((b - a).get(), 1_993);
        assert_eq!(a.checked_sub(b), None);
        assert_eq!(a.saturating_sub(b), Nanos::ZERO);
        assert_eq!(Nanos::MAX.checked_add(a), None);
        assert_eq!(Nanos::MAX.saturating_add(a), Nanos::MAX);
        assert_eq!(Nanos::from_millis(u64::MAX), Nanos::MAX);
        let mut c = a;
        c += a;
        assert_eq!(c, Nanos::new(14));
        assert!(a < b);
        assert_eq!(Duration::from(b), Duration::from_micros(2));
        assert_eq!(Nanos::from(Duration::from_secs(u64::MAX)), Nanos::MAX);
        assert_eq!(Nanos::from(Duration::from_millis(3)), Nanos::from_millis(3));
        assert_eq!(a.to_string(), "7 ns");
    }
}
