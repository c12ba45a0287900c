//! 16.16 fixed-point numbers for rack average loads (Horus §A.2).
//!
//! Switches have no floating point, so a leaf tracks its rack's average queue
//! length as a sum of additive factors `1/w` in 16.16 fixed point.

/// One unit (1.0) in 16.16 fixed point.
pub const ONE: u32 = 1 << 16;

/// The additive factor `1/w` for a rack holding `w` workers of a pool (Horus §A.2):
/// 8 workers give `0x0000_2000`.
///
/// Rounded up, so that `w` tasks add at least [`ONE`]: a leaf reports its
/// average when it moved by one task per worker (§3.4), which with
/// `floor(65536 / w)` would take `w + 1` tasks whenever `w` is not a power of
/// two. The overestimate is below `w / 65536` of one task per worker.
pub fn additive_factor(workers: u32) -> u32 {
    assert!(workers > 0, "a rack in a pool holds at least one worker");
    ONE.div_ceil(workers)
}

pub fn to_f64(v: u32) -> f64 {
    v as f64 / ONE as f64
}

pub fn from_int(v: u32) -> u32 {
    v.saturating_mul(ONE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paper_examples() {
        // Horus §A.2: 8 workers -> 0x00002000; 11 tasks over 8 workers -> 0x00016000.
        assert_eq!(additive_factor(8), 0x0000_2000);
        assert_eq!(additive_factor(8) * 11, 0x0001_6000);
        assert_eq!(to_f64(0x0001_6000), 1.375);
    }

    #[test]
    fn w_tasks_add_at_least_one_for_every_w() {
        for w in 1..=4096u32 {
            let f = additive_factor(w);
            assert!(f * w >= ONE, "w = {w}: {} < ONE", f * w);
            assert!((f - 1) * w < ONE, "w = {w}: not the smallest such factor");
        }
    }
}
