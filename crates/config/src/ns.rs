//! Time unit conversions. Configs and reports speak microseconds (both
//! papers state times in µs); the simulators count integer nanoseconds.

/// `x.round() as u64` for every `f64` (negative and NaN give 0, too large
/// saturates), without the call to libm's `round` that the x86-64 baseline
/// (no SSE4.1 rounding instruction) compiles `f64::round` into. Every
/// sampled delay, service time and arrival goes through it: the call was
/// ~9 % of an RS-H run's profile. Equality with `f64::round` is tested.
#[inline]
pub fn round_ns(x: f64) -> u64 {
    let t = x as u64; // truncates toward zero, saturating
    if x - t as f64 >= 0.5 {
        t.saturating_add(1)
    } else {
        t
    }
}

/// A configured time in µs as whole ns (rounded; negative and NaN give 0).
pub fn us_to_ns(us: f64) -> u64 {
    (us * 1e3).round() as u64
}

/// A measured time in ns as µs, for reports.
pub fn ns_to_us(ns: u64) -> f64 {
    ns as f64 / 1e3
}

#[cfg(test)]
mod tests {
    use super::{ns_to_us, round_ns, us_to_ns};

    #[test]
    fn unit_conversions_round_to_the_nearest_ns() {
        assert_eq!(us_to_ns(1.5), 1_500);
        assert_eq!(us_to_ns(0.0004), 0);
        assert_eq!(us_to_ns(0.0005), 1);
        assert_eq!(us_to_ns(-3.0), 0);
        assert_eq!(ns_to_us(2_500), 2.5);
    }
    use proptest::prelude::*;

    #[test]
    fn edges_match_f64_round() {
        let max = u64::MAX as f64;
        for x in [
            0.0,
            -0.0,
            0.5,
            1.5,
            2.5,
            -0.4,
            -0.5,
            -3.0,
            0.49999999999999994,
            4503599627370495.5,
            9007199254740993.0,
            1.8446744073709552e19,
            max,
            2.0 * max,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            f64::MIN_POSITIVE,
            1e-300,
        ] {
            assert_eq!(round_ns(x), x.round() as u64, "{x:e}");
        }
    }

    proptest! {
        #[test]
        fn matches_f64_round_for_any_bits(bits in any::<u64>()) {
            let x = f64::from_bits(bits);
            prop_assert_eq!(round_ns(x), x.round() as u64, "{:e}", x);
        }

        #[test]
        fn matches_f64_round_on_the_sampled_range(x in 0.0f64..1e13) {
            prop_assert_eq!(round_ns(x), x.round() as u64);
            let h = x.floor() + 0.5;
            prop_assert_eq!(round_ns(h), h.round() as u64);
        }
    }
}
