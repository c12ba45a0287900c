//! A run's results as JSON and CSV, and the achievable-throughput metric.

use std::collections::BTreeMap;

use crate::ns::ns_to_us;
use netsched_core::dataplane::DropReason;
use serde::{Deserialize, Serialize};

use super::hist::{LatencyHist, QUANTILE_REL_ERROR};
use super::{AbortReason, MessageKind, PoolMetrics, DECISION_NAMES, LAYER_NAMES};

/// Quantiles of one latency distribution, in ns.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LatencyStats {
    pub count: u64,
    /// Exact.
    pub mean_ns: f64,
    pub p50_ns: u64,
    pub p90_ns: u64,
    pub p99_ns: u64,
    pub p999_ns: u64,
    /// Exact.
    pub max_ns: u64,
}

impl LatencyStats {
    /// The run table's four columns, in µs: p50, p99, p99.9 and the mean.
    pub fn headline_us(&self) -> [f64; 4] {
        [
            ns_to_us(self.p50_ns),
            ns_to_us(self.p99_ns),
            ns_to_us(self.p999_ns),
            self.mean_ns / 1e3,
        ]
    }

    pub fn of(h: &LatencyHist) -> Self {
        LatencyStats {
            count: h.count(),
            mean_ns: h.mean(),
            p50_ns: h.quantile(0.5),
            p90_ns: h.quantile(0.9),
            p99_ns: h.quantile(0.99),
            p999_ns: h.quantile(0.999),
            max_ns: h.max(),
        }
    }

    const COLUMNS: [&'static str; 7] = [
        "count", "mean_ns", "p50_ns", "p90_ns", "p99_ns", "p999_ns", "max_ns",
    ];

    fn values(&self) -> [String; 7] {
        [
            self.count.to_string(),
            self.mean_ns.to_string(),
            self.p50_ns.to_string(),
            self.p90_ns.to_string(),
            self.p99_ns.to_string(),
            self.p999_ns.to_string(),
            self.max_ns.to_string(),
        ]
    }
}

/// Response-time quantiles of one task class.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClassStats {
    pub class: u8,
    /// Filled in by [`Summary::name_classes`] (e.g. `get`, `scan`).
    #[serde(default)]
    pub name: Option<String>,
    pub response: LatencyStats,
}

/// Queue imbalance (max / mean queue length within the pool) as Horus §5.2
/// Fig. 12a reports it: the 1st, 50th and 99th percentile over samples.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ImbalanceStats {
    pub samples: u64,
    /// Samples skipped because all queues were empty.
    pub skipped: u64,
    pub mean: f64,
    pub p1: f64,
    pub p50: f64,
    pub p99: f64,
}

/// One pool's (or all pools') results, for the JSON summary and a CSV row.
///
/// Counts of tasks, decisions and aborts are of measured (post-warm-up) tasks;
/// message, drop, resubmission and pass counts cover the whole run and are
/// normalised by `submitted_total`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Summary {
    /// `None` for the merge of all pools.
    pub pool_id: Option<u32>,
    pub pools: u32,
    pub workers: u64,
    pub submitted: u64,
    pub completed: u64,
    pub aborted: u64,
    pub submitted_total: u64,
    /// Measured aborts by reason ([`AbortReason::name`]).
    pub aborted_by: BTreeMap<String, u64>,
    /// Data-plane drops by reason ([`DropReason::name`]).
    pub drops: BTreeMap<String, u64>,
    /// Packets by type ([`MessageKind::name`]), plus `controller`.
    pub messages: BTreeMap<String, u64>,
    /// Measured decisions, keyed `<layer>_<kind>` (`spine_idle`, `leaf_sampled`, ...).
    pub decisions: BTreeMap<String, u64>,
    /// Resubmission passes per layer, keyed by layer name.
    pub resubmissions: BTreeMap<String, u64>,
    /// Resubmission passes carrying a measured task, keyed by layer name.
    pub resubmitted_tasks: BTreeMap<String, u64>,
    /// Measured tasks repeated by a switch of any layer, each counted once.
    #[serde(default)]
    pub resubmitted_tasks_any: u64,
    /// Pipeline passes, keyed `<layer>_first` / `<layer>_resubmit`.
    pub passes: BTreeMap<String, u64>,
    /// Horus response time (spine submission to completion at the worker).
    pub response: LatencyStats,
    /// Submission to start of service (response = waiting + service).
    pub waiting: LatencyStats,
    pub per_class: Vec<ClassStats>,
    pub imbalance: ImbalanceStats,
    pub window_ns: u64,
    /// Completed measured tasks per second over the window.
    pub throughput_per_s: f64,
    /// Submitted measured tasks per second over the window.
    pub offered_per_s: f64,
    /// Relative error bound of every reported quantile (HDR, 3 digits).
    pub quantile_rel_error: f64,
    pub events: u64,
}

fn named<const N: usize>(
    names: impl Iterator<Item = &'static str>,
    counts: &[u64; N],
) -> BTreeMap<String, u64> {
    names
        .zip(counts.iter())
        .map(|(n, &c)| (n.to_string(), c))
        .collect()
}

impl Summary {
    /// The summary of one pool, or of a merge ([`PoolMetrics::merge_all`]),
    /// which gets `pool_id: None`.
    pub fn of_pool(m: &PoolMetrics) -> Self {
        Self::from_metrics(m)
    }

    /// All pools merged in pool-id order (deterministic whatever the input order).
    pub fn overall<'a>(pools: impl IntoIterator<Item = &'a PoolMetrics>) -> Self {
        Self::from_metrics(&PoolMetrics::merge_all(pools))
    }

    fn from_metrics(m: &PoolMetrics) -> Self {
        let window = m.window_ns;
        let per_s = |n: u64| {
            if window == 0 {
                0.0
            } else {
                n as f64 * 1e9 / window as f64
            }
        };
        let mut messages = named(MessageKind::ALL.iter().map(|k| k.name()), &m.messages);
        messages.insert("controller".into(), m.controller_messages);
        let mut decisions = BTreeMap::new();
        let mut passes = BTreeMap::new();
        for (l, lname) in LAYER_NAMES.iter().enumerate() {
            for (k, kname) in DECISION_NAMES.iter().enumerate() {
                decisions.insert(format!("{lname}_{kname}"), m.decisions[l][k]);
            }
            passes.insert(format!("{lname}_first"), m.passes[l][0]);
            passes.insert(format!("{lname}_resubmit"), m.passes[l][1]);
        }
        Summary {
            pool_id: (m.pool_id != PoolMetrics::MERGED).then_some(m.pool_id),
            pools: m.pools,
            workers: m.workers,
            submitted: m.submitted,
            completed: m.completed,
            aborted: m.aborted_measured(),
            submitted_total: m.submitted_total,
            aborted_by: named(AbortReason::ALL.iter().map(|r| r.name()), &m.aborted),
            drops: named(DropReason::ALL.iter().map(|r| r.name()), &m.drops),
            messages,
            decisions,
            resubmissions: named(LAYER_NAMES.iter().copied(), &m.resubmissions),
            resubmitted_tasks: named(LAYER_NAMES.iter().copied(), &m.resubmitted_tasks),
            resubmitted_tasks_any: m.resubmitted_tasks_any,
            passes,
            response: LatencyStats::of(&m.response),
            waiting: LatencyStats::of(&m.waiting),
            per_class: m
                .class_response
                .iter()
                .enumerate()
                .map(|(c, h)| ClassStats {
                    class: c as u8,
                    name: None,
                    response: LatencyStats::of(h),
                })
                .collect(),
            imbalance: ImbalanceStats {
                samples: m.imbalance.count(),
                skipped: m.imbalance_skipped,
                mean: m.imbalance.mean(),
                p1: m.imbalance.quantile(0.01),
                p50: m.imbalance.quantile(0.5),
                p99: m.imbalance.quantile(0.99),
            },
            window_ns: window,
            throughput_per_s: per_s(m.completed),
            offered_per_s: per_s(m.submitted),
            quantile_rel_error: QUANTILE_REL_ERROR,
            events: m.events,
        }
    }

    /// Attach class names (from `ServiceSampler::class_names`) to `per_class`.
    pub fn name_classes(&mut self, names: &[String]) {
        for c in &mut self.per_class {
            c.name = names.get(c.class as usize).cloned();
        }
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self)
            .expect("a Summary has only string keys and finite numbers")
    }

    pub fn from_json(text: &str) -> Result<Self, serde_json::Error> {
        serde_json::from_str(text)
    }

    /// Name and value of every CSV column, in a fixed order; one list so
    /// header and rows cannot drift apart. Per-class stats are left out (their
    /// number varies with the workload); they are in the JSON.
    fn columns(&self) -> Vec<(String, String)> {
        let mut cols: Vec<(String, String)> = Vec::with_capacity(96);
        let mut push = |name: String, value: String| cols.push((name, value));
        push(
            "pool_id".into(),
            self.pool_id.map(|p| p.to_string()).unwrap_or_default(),
        );
        push("pools".into(), self.pools.to_string());
        push("workers".into(), self.workers.to_string());
        push("submitted".into(), self.submitted.to_string());
        push("completed".into(), self.completed.to_string());
        push("aborted".into(), self.aborted.to_string());
        push("submitted_total".into(), self.submitted_total.to_string());
        push("throughput_per_s".into(), self.throughput_per_s.to_string());
        push("offered_per_s".into(), self.offered_per_s.to_string());
        push("window_ns".into(), self.window_ns.to_string());
        for (prefix, stats) in [("response", &self.response), ("waiting", &self.waiting)] {
            for (c, v) in LatencyStats::COLUMNS.iter().zip(stats.values()) {
                push(format!("{prefix}_{c}"), v);
            }
        }
        let im = &self.imbalance;
        push("imbalance_samples".into(), im.samples.to_string());
        push("imbalance_skipped".into(), im.skipped.to_string());
        push("imbalance_mean".into(), im.mean.to_string());
        push("imbalance_p1".into(), im.p1.to_string());
        push("imbalance_p50".into(), im.p50.to_string());
        push("imbalance_p99".into(), im.p99.to_string());
        // Map columns in the enums' declaration order, not the maps' key order,
        // so related columns sit together.
        let get = |m: &BTreeMap<String, u64>, k: &str| m.get(k).copied().unwrap_or(0).to_string();
        for r in AbortReason::ALL {
            push(
                format!("aborted_{}", r.name()),
                get(&self.aborted_by, r.name()),
            );
        }
        for r in DropReason::ALL {
            push(format!("drop_{}", r.name()), get(&self.drops, r.name()));
        }
        for k in MessageKind::ALL
            .iter()
            .map(|k| k.name())
            .chain(["controller"])
        {
            push(format!("msg_{k}"), get(&self.messages, k));
        }
        for l in LAYER_NAMES {
            for k in DECISION_NAMES {
                let key = format!("{l}_{k}");
                push(format!("decision_{key}"), get(&self.decisions, &key));
            }
        }
        push(
            "resubmitted_tasks_any".into(),
            self.resubmitted_tasks_any.to_string(),
        );
        for l in LAYER_NAMES {
            push(format!("resubmissions_{l}"), get(&self.resubmissions, l));
            push(
                format!("resubmitted_tasks_{l}"),
                get(&self.resubmitted_tasks, l),
            );
            for p in ["first", "resubmit"] {
                let key = format!("{l}_{p}");
                push(format!("passes_{key}"), get(&self.passes, &key));
            }
        }
        push(
            "quantile_rel_error".into(),
            self.quantile_rel_error.to_string(),
        );
        push("events".into(), self.events.to_string());
        cols
    }

    /// The CSV header matching [`to_csv_row`](Self::to_csv_row).
    pub fn csv_header() -> String {
        Summary::default()
            .columns()
            .into_iter()
            .map(|(n, _)| n)
            .collect::<Vec<_>>()
            .join(",")
    }

    /// One CSV row (numbers only; no quoting needed).
    pub fn to_csv_row(&self) -> String {
        self.columns()
            .into_iter()
            .map(|(_, v)| v)
            .collect::<Vec<_>>()
            .join(",")
    }
}

/// Achievable throughput (Horus §4.1): the largest load at which the p99
/// response time stays within `target_ns`, from a load sweep of
/// `(load, p99_ns)` points (any order; non-finite loads are ignored).
///
/// Points are taken in increasing load. If every point meets the target the
/// answer is the largest load; if the first already misses it there is none.
/// Otherwise the answer lies between the last point that meets the target and
/// the first that misses it, by linear interpolation of p99 against load.
/// The first crossing is used, not the last: beyond saturation a lower p99 at
/// a higher load is sampling noise (or tasks aborted instead of served), not
/// spare capacity.
pub fn throughput_at_target(points: &[(f64, u64)], target_ns: u64) -> Option<f64> {
    let mut pts: Vec<(f64, u64)> = points.iter().copied().filter(|p| p.0.is_finite()).collect();
    pts.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let first = pts.first()?;
    if first.1 > target_ns {
        return None;
    }
    for w in pts.windows(2) {
        let (l0, p0) = w[0];
        let (l1, p1) = w[1];
        if p1 > target_ns {
            // p0 <= target < p1, so the denominator is positive.
            let frac = (target_ns - p0) as f64 / (p1 - p0) as f64;
            return Some(l0 + frac * (l1 - l0));
        }
    }
    pts.last().map(|p| p.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::PoolMetrics;
    use netsched_core::dataplane::Decision;

    fn sample_pool(id: u32) -> PoolMetrics {
        let mut m = PoolMetrics::with_classes(id, 16, 2);
        for k in 0..1000u64 {
            m.submit(true);
            m.complete(
                true,
                10_000 + k * 37 * (id as u64 + 1),
                k * 3,
                (k % 2) as u8,
            );
        }
        m.abort(true, AbortReason::DeadSpine);
        m.drop(DropReason::NoNodes);
        m.decision(true, Decision::Idle, true);
        m.decision(false, Decision::Sampled, true);
        m.resubmission(true, Some(true));
        m.add_passes(false, 100, 7);
        m.message(MessageKind::LoadUpdate);
        m.controller_messages = 3;
        m.imbalance(3, 1.5);
        m.set_window(1_000, 1_001_000);
        m
    }

    #[test]
    fn json_round_trip() {
        let mut s = Summary::of_pool(&sample_pool(2));
        s.name_classes(&["get".into(), "scan".into()]);
        let text = s.to_json();
        let back = Summary::from_json(&text).unwrap();
        assert_eq!(back, s);
        assert_eq!(s.pool_id, Some(2));
        assert_eq!(s.completed, 1000);
        assert_eq!(s.throughput_per_s, 1e6);
        assert_eq!(s.aborted_by["dead_spine"], 1);
        assert_eq!(s.drops["no_nodes"], 1);
        assert_eq!(s.decisions["spine_idle"], 1);
        assert_eq!(s.decisions["leaf_sampled"], 1);
        assert_eq!(s.passes["leaf_resubmit"], 7);
        assert_eq!(s.messages["controller"], 3);
        assert_eq!(s.per_class[1].name.as_deref(), Some("scan"));
        assert_eq!(
            s.per_class[0].response.count + s.per_class[1].response.count,
            1000
        );
        assert!((s.imbalance.p50 - 2.0).abs() < 0.003);
        // Empty metrics serialise too (no NaN anywhere).
        let empty = Summary::of_pool(&PoolMetrics::new(0, 0));
        assert_eq!(Summary::from_json(&empty.to_json()).unwrap(), empty);
    }

    #[test]
    fn overall_merges_deterministically() {
        let pools: Vec<PoolMetrics> = (0..4).map(sample_pool).collect();
        let a = Summary::overall(&pools);
        let rev: Vec<PoolMetrics> = pools.iter().rev().cloned().collect();
        let b = Summary::overall(&rev);
        assert_eq!(a.to_json(), b.to_json());
        assert_eq!(a.pool_id, None);
        assert_eq!(a.pools, 4);
        assert_eq!(a.completed, 4000);
        assert_eq!(a.workers, 64);
        assert_eq!(a.aborted, 4);
        let mut all = LatencyHist::new();
        for p in &pools {
            all.merge(&p.response);
        }
        assert_eq!(a.response, LatencyStats::of(&all));
    }

    #[test]
    fn csv_header_and_row_agree() {
        let header = Summary::csv_header();
        let row = Summary::of_pool(&sample_pool(1)).to_csv_row();
        let h: Vec<&str> = header.split(',').collect();
        let r: Vec<&str> = row.split(',').collect();
        assert_eq!(h.len(), r.len());
        let mut uniq = h.clone();
        uniq.sort_unstable();
        uniq.dedup();
        assert_eq!(uniq.len(), h.len(), "duplicate column names");
        let col = |name: &str| r[h.iter().position(|c| *c == name).unwrap()];
        assert_eq!(col("pool_id"), "1");
        assert_eq!(col("completed"), "1000");
        assert_eq!(col("aborted_dead_spine"), "1");
        assert_eq!(col("decision_leaf_sampled"), "1");
        assert_eq!(col("msg_load_update"), "1");
        assert_eq!(col("quantile_rel_error"), "0.001");
        let overall = Summary::overall(&[sample_pool(1)]).to_csv_row();
        assert!(overall.starts_with(",1,16,"), "{overall}");
    }

    #[test]
    fn throughput_at_target_interpolates() {
        let pts = [(0.5, 1_000), (0.7, 2_000), (0.9, 6_000), (0.8, 4_000)];
        // Between 0.7 (2000) and 0.8 (4000): 3000 is half way.
        assert!((throughput_at_target(&pts, 3_000).unwrap() - 0.75).abs() < 1e-12);
        assert_eq!(throughput_at_target(&pts, 2_000), Some(0.7));
        assert_eq!(throughput_at_target(&pts, 10_000), Some(0.9));
        assert_eq!(throughput_at_target(&pts, 999), None);
        assert_eq!(throughput_at_target(&[], 1), None);
        // First crossing: a later dip below the target does not count.
        let noisy = [(0.1, 100), (0.2, 300), (0.3, 150)];
        assert!((throughput_at_target(&noisy, 200).unwrap() - 0.15).abs() < 1e-12);
        assert_eq!(
            throughput_at_target(&[(f64::NAN, 1), (0.4, 10)], 20),
            Some(0.4)
        );
    }
}
