//! Histograms with a stated error bound (DESIGN.md: "Percentiles come from all
//! samples or from a histogram whose relative error is stated").

use hdrhistogram::{Counter, Histogram};

/// Significant decimal digits kept by every histogram here.
pub const SIGFIG: u8 = 3;

/// Upper bound on the relative error of a reported quantile.
///
/// With 3 significant digits HDR keeps 2048 sub-buckets per power of two, so
/// values below 2048 ns are exact and every larger value shares its bucket only
/// with values within 1/1024 of it; a quantile is reported as the highest
/// value of its bucket, so it is never below the true sample quantile and at
/// most 0.1% above it.
pub const QUANTILE_REL_ERROR: f64 = 0.001;

fn new_hist() -> Histogram<u64> {
    Histogram::new(SIGFIG).expect("3 significant digits is a valid HDR precision")
}

/// A latency histogram's counter: 32 bits, half the 64 of HDR's usual
/// counter, so that a pool's four working histograms (response, waiting,
/// two classes) take half the cache while it runs and the 1,000 pools'
/// kept ones half the fresh memory. A counter could saturate only past
/// 2^32 samples in one histogram; [`LatencyHist::compact`] and
/// [`LatencyHist::merge`] refuse that rather than lose samples silently.
type Count = u32;

/// Latencies of a loaded pool reach milliseconds; sizing the counters for
/// them up front spares the ~13 reallocations (each a copy of the counters
/// and fresh pages) that growing one power of two at a time costs every pool.
/// Larger values still grow the histogram; quantiles depend on counts only.
const LATENCY_PRESIZE_NS: u64 = 1 << 24;

/// Presized counters a thread has finished with (see [`LatencyHist::compact`]),
/// reused by its next pool so that their pages are touched only once.
const SPARES_KEPT: usize = 16;

thread_local! {
    static SPARES: std::cell::RefCell<Vec<Histogram<Count>>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

fn new_latency_hist() -> Histogram<Count> {
    if let Some(h) = SPARES.with(|s| s.borrow_mut().pop()) {
        return h;
    }
    let mut h = Histogram::new_with_bounds(1, LATENCY_PRESIZE_NS, SIGFIG)
        .expect("valid HDR bounds and precision");
    h.auto(true);
    h
}

/// Record with growth. (`saturating_record` would clamp to the current range
/// instead of growing it.) Only a value beyond 2^62, which cannot be grown
/// to, is clamped.
#[inline]
fn record_into<C: Counter>(h: &mut Histogram<C>, v: u64, n: C) {
    if h.record_n(v, n).is_err() {
        h.saturating_record_n(v, n);
    }
}

/// Add `src` into `dst`. With auto-resize on `add` cannot fail in practice;
/// should it ever, fall back to re-recording so that no sample is lost.
fn add_into<C: Counter>(dst: &mut Histogram<C>, src: &Histogram<C>) {
    if dst.add(src).is_err() {
        for v in src.iter_recorded() {
            record_into(dst, v.value_iterated_to(), v.count_at_value());
        }
    }
}

/// A latency histogram in ns: HDR with 3 significant digits (quantiles within
/// [`QUANTILE_REL_ERROR`] = 0.1% relative), growing to whatever range it sees.
/// Count, mean, min and max are tracked exactly beside it.
///
/// Memory: about 1 000 × (log2(max / 2048) + 2) 32-bit counters,
/// allocated at once for values up to 16.7 ms (~60 KiB) and grown beyond.
#[derive(Clone, Debug)]
pub struct LatencyHist {
    h: Histogram<Count>,
    sum: u128,
    min: u64,
    max: u64,
}

impl Default for LatencyHist {
    fn default() -> Self {
        Self::new()
    }
}

impl PartialEq for LatencyHist {
    fn eq(&self, other: &Self) -> bool {
        self.sum == other.sum && self.min == other.min && self.max == other.max && self.h == other.h
    }
}

impl LatencyHist {
    pub fn new() -> Self {
        LatencyHist {
            h: new_latency_hist(),
            sum: 0,
            min: u64::MAX,
            max: 0,
        }
    }

    #[inline]
    pub fn record(&mut self, ns: u64) {
        record_into(&mut self.h, ns, 1);
        self.sum += ns as u128;
        self.min = self.min.min(ns);
        self.max = self.max.max(ns);
    }

    /// Keep the samples in counters sized to the largest of them, exactly
    /// the layout recording alone would have grown to, and hand the presized
    /// counters back to this thread for its next histogram: a pool's
    /// metrics outlive it, the working counters need not.
    pub fn compact(&mut self) {
        fits_counters(self.count());
        // Sized for the largest sample at once: the layout growing one
        // power of two at a time ends at (same bucket count, same counters),
        // without that growth's dozen reallocations and copies.
        let mut small = Histogram::new_with_bounds(1, self.h.max().max(2), SIGFIG)
            .expect("valid HDR bounds and precision");
        small.auto(true);
        add_into(&mut small, &self.h);
        let mut used = std::mem::replace(&mut self.h, small);
        used.reset();
        SPARES.with(|s| {
            let mut s = s.borrow_mut();
            // One grown past the presize is dropped: every fresh histogram
            // has the same layout, which equality compares.
            if s.len() < SPARES_KEPT && used.high() == LATENCY_PRESIZE_NS {
                s.push(used);
            }
        });
    }

    /// Add every sample of `other`; the result equals having recorded both streams.
    pub fn merge(&mut self, other: &LatencyHist) {
        fits_counters(self.count() + other.count());
        add_into(&mut self.h, &other.h);
        self.sum += other.sum;
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
    }

    pub fn count(&self) -> u64 {
        self.h.len()
    }

    pub fn is_empty(&self) -> bool {
        self.h.is_empty()
    }

    /// The `q`-quantile (q in [0, 1]), at most 0.1% above the exact sample
    /// quantile and never above the exact maximum; 0 when empty.
    pub fn quantile(&self, q: f64) -> u64 {
        if self.is_empty() {
            return 0;
        }
        if q >= 1.0 {
            return self.max;
        }
        if q <= 0.0 {
            return self.min;
        }
        self.h.value_at_quantile(q).min(self.max)
    }

    /// Exact mean of the recorded values; 0 when empty.
    pub fn mean(&self) -> f64 {
        if self.is_empty() {
            0.0
        } else {
            self.sum as f64 / self.count() as f64
        }
    }

    /// Number of recorded values ≤ `ns`. Exact for `ns` < 2048 (unit
    /// buckets); above, the bucket holding `ns` counts whole, so values up
    /// to [`QUANTILE_REL_ERROR`] above `ns` may be included.
    pub fn count_at_most(&self, ns: u64) -> u64 {
        if self.is_empty() {
            0
        } else {
            self.h.count_between(0, ns)
        }
    }

    /// Exact maximum; 0 when empty.
    pub fn max(&self) -> u64 {
        self.max
    }

    /// Exact minimum; 0 when empty.
    pub fn min(&self) -> u64 {
        if self.is_empty() {
            0
        } else {
            self.min
        }
    }
}

/// No counter of a histogram holding `samples` can have saturated.
fn fits_counters(samples: u64) {
    assert!(
        samples <= Count::MAX as u64,
        "{samples} latency samples in one histogram: its counters hold at most {}",
        Count::MAX
    );
}

/// A histogram of ratios ≥ 0 kept in thousandths, for the queue-imbalance
/// metric (max/mean queue length). Quantization adds at most 0.0005 absolute
/// to the histogram's 0.1% relative error; ratios here are ≥ 1, so quantiles
/// stay within 0.15% relative.
#[derive(Clone, Debug)]
pub struct RatioHist {
    h: Histogram<u64>,
    sum: f64,
}

impl Default for RatioHist {
    fn default() -> Self {
        Self::new()
    }
}

impl PartialEq for RatioHist {
    fn eq(&self, other: &Self) -> bool {
        self.h == other.h
    }
}

const RATIO_SCALE: f64 = 1000.0;

impl RatioHist {
    pub fn new() -> Self {
        RatioHist {
            h: new_hist(),
            sum: 0.0,
        }
    }

    #[inline]
    pub fn record(&mut self, ratio: f64) {
        if ratio.is_finite() && ratio >= 0.0 {
            record_into(&mut self.h, (ratio * RATIO_SCALE).round() as u64, 1);
            self.sum += ratio;
        }
    }

    pub fn merge(&mut self, other: &RatioHist) {
        add_into(&mut self.h, &other.h);
        self.sum += other.sum;
    }

    pub fn count(&self) -> u64 {
        self.h.len()
    }

    /// The `q`-quantile of the recorded ratios; 0 when empty.
    pub fn quantile(&self, q: f64) -> f64 {
        if self.h.is_empty() {
            return 0.0;
        }
        let v = if q >= 1.0 {
            self.h.max()
        } else {
            self.h.value_at_quantile(q.max(0.0))
        };
        v as f64 / RATIO_SCALE
    }

    pub fn mean(&self) -> f64 {
        if self.h.is_empty() {
            0.0
        } else {
            self.sum / self.count() as f64
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use netsched_core::rng::Rng;
    use proptest::prelude::*;

    /// The exact sample quantile with HDR's rank convention: the
    /// ceil(q·n)-th smallest value (at least the first).
    fn exact_quantile(sorted: &[u64], q: f64) -> u64 {
        let rank = ((q * sorted.len() as f64).ceil() as usize).max(1);
        sorted[rank - 1]
    }

    /// A compacted histogram has the counters recording alone grows to
    /// (equality compares them index by index, both ways), and the reused
    /// presized counters start empty.
    #[test]
    fn compact_keeps_the_grown_layout_and_reuses_empty_counters() {
        for max in [0u64, 1_500, 3_000_000, 1 << 30] {
            let xs = [max, max / 3, 7, max / 2 + 1];
            let mut presized = LatencyHist::new();
            let mut grown = LatencyHist {
                h: Histogram::new(SIGFIG).unwrap(),
                sum: 0,
                min: u64::MAX,
                max: 0,
            };
            for &x in &xs {
                presized.record(x);
                grown.record(x);
            }
            presized.compact();
            // HDR's equality is one-sided (it walks the left side's counters).
            assert_eq!(presized, grown, "max {max}");
            assert_eq!(grown, presized, "max {max}");
            assert_eq!(presized.h.distinct_values(), grown.h.distinct_values());
            let reused = LatencyHist::new();
            assert_eq!((reused.count(), reused.h.high()), (0, LATENCY_PRESIZE_NS));
        }
    }

    /// A 32-bit counter cannot take a 2^32nd sample: merging past that is
    /// refused, not saturated silently.
    #[test]
    #[should_panic(expected = "latency samples in one histogram")]
    fn merging_past_the_counters_range_is_refused() {
        let mut a = LatencyHist::new();
        a.h.record_n(1_000, Count::MAX).unwrap();
        let mut b = LatencyHist::new();
        b.record(1_000);
        a.merge(&b);
    }

    #[test]
    fn quantiles_within_stated_error() {
        let mut rng = Rng::new(5);
        let mut h = LatencyHist::new();
        let mut xs: Vec<u64> = (0..200_000)
            .map(|_| (-rng.unit_open0().ln() * 250_000.0) as u64)
            .collect();
        for &x in &xs {
            h.record(x);
        }
        xs.sort_unstable();
        for q in [0.01, 0.1, 0.5, 0.9, 0.99, 0.999, 0.9999] {
            let exact = exact_quantile(&xs, q) as f64;
            let est = h.quantile(q) as f64;
            assert!(est >= exact, "q={q}: {est} < {exact}");
            assert!(
                (est - exact) / exact <= QUANTILE_REL_ERROR,
                "q={q}: {est} vs {exact}"
            );
        }
        assert_eq!(h.count(), 200_000);
        assert_eq!(h.max(), *xs.last().unwrap());
        assert_eq!(h.min(), xs[0]);
        assert_eq!(h.quantile(1.0), h.max());
        let mean = xs.iter().map(|&x| x as f64).sum::<f64>() / xs.len() as f64;
        assert!((h.mean() - mean).abs() < 1e-6 * mean);
    }

    #[test]
    fn small_values_are_exact_and_empty_is_zero() {
        let mut h = LatencyHist::new();
        assert_eq!(
            (h.quantile(0.5), h.mean(), h.max(), h.min()),
            (0, 0.0, 0, 0)
        );
        for v in 1..=1000u64 {
            h.record(v);
        }
        assert_eq!(h.quantile(0.5), 500);
        assert_eq!(h.quantile(0.99), 990);
        assert_eq!(h.quantile(0.0), 1);
        assert_eq!(h.mean(), 500.5);
        assert_eq!(h.count_at_most(0), 0);
        assert_eq!(h.count_at_most(1), 1);
        assert_eq!(h.count_at_most(250), 250);
        assert_eq!(h.count_at_most(5000), 1000);
    }

    #[test]
    fn ratio_hist() {
        let mut r = RatioHist::new();
        for i in 0..1000 {
            r.record(1.0 + i as f64 / 1000.0);
        }
        assert!((r.quantile(0.5) - 1.5).abs() < 0.003);
        assert!((r.quantile(0.01) - 1.01).abs() < 0.003);
        assert!((r.mean() - 1.4995).abs() < 1e-9);
        r.record(f64::NAN);
        assert_eq!(r.count(), 1000);
    }

    proptest! {
        #[test]
        fn merge_equals_recording_all(
            a in proptest::collection::vec(0u64..50_000_000, 0..300),
            b in proptest::collection::vec(0u64..5_000_000_000, 0..300),
        ) {
            let mut ha = LatencyHist::new();
            let mut hb = LatencyHist::new();
            let mut all = LatencyHist::new();
            for &x in &a { ha.record(x); all.record(x); }
            for &x in &b { hb.record(x); all.record(x); }
            ha.merge(&hb);
            prop_assert_eq!(ha.count(), all.count());
            prop_assert_eq!(ha.mean(), all.mean());
            prop_assert_eq!(ha.max(), all.max());
            prop_assert_eq!(ha.min(), all.min());
            for q in [0.0, 0.25, 0.5, 0.9, 0.99, 1.0] {
                prop_assert_eq!(ha.quantile(q), all.quantile(q));
            }
        }
    }
}
