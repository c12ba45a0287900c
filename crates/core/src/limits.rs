//! What the data planes refuse to be built with, each limit written once.
//!
//! The constructors assert these (a data plane cannot be built outside
//! them), and every config loader (`netsched check`, the simulators, the
//! runtime daemons) checks the same functions first, so that a bad value is
//! a one-line error naming its field rather than a panic inside a
//! simulation thread.

/// Most samples per decision (RackSched's LoadTable): one LoadTable copy
/// per sample, each in its own stage.
pub const MAX_SAMPLES: usize = 16;

/// Largest Draconis queue (Draconis §4.3: the pointers wrap by masking, so
/// a power of two; 2^30 leaves the 32-bit pointers room to tell full from
/// empty).
pub const MAX_QUEUE_CAPACITY: u32 = 1 << 30;

/// Task classes (request types) a LoadTable keeps counters for: the class
/// travels in the packet as one byte (RackSched §3.6, `TaskMeta::class`).
pub const MAX_CLASSES: u32 = 256;

/// Why a value was refused; the message reads after the field's name
/// (`schedulers.samples: must be in 1..=16, got 17`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    #[error("must be >= {min}, got {got}")]
    TooSmall { got: u64, min: u64 },
    #[error("must be in {min}..={max}, got {got}")]
    OutOfRange { got: u64, min: u64, max: u64 },
    #[error("must be a power of two <= {max}, got {got}")]
    NotPowerOfTwo { got: u64, max: u64 },
}

fn at_least(got: u32, min: u32) -> Result<(), Refused> {
    if got >= min {
        Ok(())
    } else {
        Err(Refused::TooSmall {
            got: got.into(),
            min: min.into(),
        })
    }
}

fn within(got: u32, min: u32, max: u32) -> Result<(), Refused> {
    if (min..=max).contains(&got) {
        Ok(())
    } else {
        Err(Refused::OutOfRange {
            got: got.into(),
            min: min.into(),
            max: max.into(),
        })
    }
}

/// Samples per power-of-k decision (RackSched §3.3 leaf and spine, the
/// power-of-k baseline): one LoadTable copy per sample, so `1..=MAX_SAMPLES`.
pub fn samples(samples: u32) -> Result<(), Refused> {
    within(samples, 1, MAX_SAMPLES as u32)
}

/// Tasks outstanding per node under JBSQ(k) (R2P2 §3.2; the `r2p2` push
/// baseline and the pull R2P2 switch): at least 1.
pub fn jbsq_bound(bound: u32) -> Result<(), Refused> {
    at_least(bound, 1)
}

/// Entries per Draconis queue: a power of two up to [`MAX_QUEUE_CAPACITY`].
pub fn queue_capacity(capacity: u32) -> Result<(), Refused> {
    if capacity.is_power_of_two() && capacity <= MAX_QUEUE_CAPACITY {
        Ok(())
    } else {
        Err(Refused::NotPowerOfTwo {
            got: capacity.into(),
            max: MAX_QUEUE_CAPACITY.into(),
        })
    }
}

/// Draconis priority levels (§6), one queue each: `1..=255`.
pub fn priority_levels(levels: u32) -> Result<(), Refused> {
    within(levels, 1, u8::MAX.into())
}

/// Task classes a LoadTable counts separately: `1..=MAX_CLASSES`.
pub fn classes(classes: u32) -> Result<(), Refused> {
    within(classes, 1, MAX_CLASSES)
}

/// Sparrow probes per task (d) and jobs a scheduler tracks: each at least 1.
pub fn sparrow_probe_ratio(d: u32) -> Result<(), Refused> {
    at_least(d, 1)
}

/// See [`sparrow_probe_ratio`].
pub fn sparrow_max_jobs(jobs: u32) -> Result<(), Refused> {
    at_least(jobs, 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::baselines::Jbsq;
    use crate::pull::queue::CircularQueue;
    use crate::racksched::{RackSched, RackSchedConfig};
    use crate::switch::Layout;
    use std::panic::catch_unwind;

    /// The checks accept exactly what the constructors build: each edge on
    /// both sides.
    #[test]
    fn checks_agree_with_the_constructors() {
        for count in [0, 1, MAX_SAMPLES as u32, MAX_SAMPLES as u32 + 1] {
            let built = catch_unwind(|| {
                RackSched::new(
                    4,
                    1,
                    RackSchedConfig {
                        samples: count,
                        ..RackSchedConfig::default()
                    },
                )
            })
            .is_ok();
            assert_eq!(samples(count).is_ok(), built, "samples = {count}");
        }
        for c in [0, 1, MAX_CLASSES, MAX_CLASSES + 1] {
            let built = catch_unwind(|| {
                RackSched::new(
                    4,
                    1,
                    RackSchedConfig {
                        classes: c,
                        ..RackSchedConfig::default()
                    },
                )
            })
            .is_ok();
            assert_eq!(classes(c).is_ok(), built, "classes = {c}");
        }
        for b in [0, 1, 3] {
            let built = catch_unwind(|| Jbsq::new(4, b, 16)).is_ok();
            assert_eq!(jbsq_bound(b).is_ok(), built, "bound = {b}");
        }
        for cap in [
            0,
            1,
            3,
            1 << 10,
            MAX_QUEUE_CAPACITY,
            MAX_QUEUE_CAPACITY << 1,
        ] {
            // Only the refusal is exercised at the largest sizes: building
            // a 2^30-entry queue would allocate gigabytes.
            if cap <= 1 << 10 || queue_capacity(cap).is_err() {
                let built = catch_unwind(|| CircularQueue::new(&mut Layout::new(), cap, 1)).is_ok();
                assert_eq!(queue_capacity(cap).is_ok(), built, "capacity = {cap}");
            }
        }
        assert!(queue_capacity(MAX_QUEUE_CAPACITY).is_ok());
    }

    #[test]
    fn messages_read_after_the_field_name() {
        assert_eq!(
            samples(17).unwrap_err().to_string(),
            "must be in 1..=16, got 17"
        );
        assert_eq!(
            jbsq_bound(0).unwrap_err().to_string(),
            "must be >= 1, got 0"
        );
        assert_eq!(
            queue_capacity(3).unwrap_err().to_string(),
            "must be a power of two <= 1073741824, got 3"
        );
        assert!(priority_levels(256).is_err() && priority_levels(255).is_ok());
        assert!(sparrow_probe_ratio(0).is_err() && sparrow_max_jobs(1).is_ok());
    }
}
