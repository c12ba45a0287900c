//! Task service times and task arrivals.
//!
//! Service times come from a [`ServiceDist`] (read from TOML) that is checked
//! and turned into a [`ServiceSampler`] once; the sampler is immutable, so every
//! pool can share it and draw from its own [`Rng`] stream. Arrivals are Poisson
//! at a rate that follows a piecewise-constant [`RateSchedule`] of load
//! fractions, as in Horus §4.1 ("Task Arrival Model") and §5.1, where the
//! load of a pool is a fraction of λ = n / s̄.
//!
//! Time is integer nanoseconds; distributions are written in microseconds in
//! the config because that is how both papers state them.

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use netsched_core::rng::Rng;
use serde::{Deserialize, Serialize};

use crate::error::ConfigError;
use crate::ns::{round_ns, us_to_ns};

/// Where a [`ServiceDist`] sits in the simulator's TOML file; used to name the
/// field in errors from [`ServiceDist::validate`].
pub const SERVICE_FIELD: &str = "workload.service";

/// A task's class travels in the packet as a `u8` (`TaskMeta::class`), so a
/// mixture has at most this many components.
pub const MAX_CLASSES: usize = netsched_core::limits::MAX_CLASSES as usize;

/// A service-time distribution as written in the config.
///
/// TOML shapes (times in µs):
/// ```toml
/// service = { kind = "exp", mean_us = 100 }
/// service = { kind = "fixed", value_us = 50 }
/// service = { kind = "mix", values_us = [50, 500], weights = [0.9, 0.1] }
/// service = { kind = "lognormal", median_us = 40, sigma = 0.1 }
/// service = { kind = "lognormal-mix", medians_us = [40, 650], sigma = 0.1, weights = [1, 1] }
/// service = { kind = "preset", name = "bimodal" }
/// service = { kind = "trace", path = "traces/rocksdb.csv" }
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum ServiceDist {
    /// Exponential with the given mean.
    Exp { mean_us: f64 },
    /// Every task takes exactly this long.
    Fixed { value_us: f64 },
    /// A discrete mixture: `values_us[i]` with probability proportional to
    /// `weights[i]`. The component index is the task class.
    Mix {
        values_us: Vec<f64>,
        weights: Vec<f64>,
    },
    /// Lognormal with the given median (= e^μ) and shape σ.
    Lognormal { median_us: f64, sigma: f64 },
    /// A mixture of lognormals sharing one σ; the component index is the class.
    LognormalMix {
        medians_us: Vec<f64>,
        sigma: f64,
        weights: Vec<f64>,
    },
    /// One of the papers' workloads by name.
    Preset { name: ServicePreset },
    /// Service times read from a CSV file (see [`load_trace`]).
    Trace { path: PathBuf },
}

/// The named workloads of the Horus and RackSched papers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum ServicePreset {
    /// Horus §5.1: Exp(100).
    #[serde(rename = "exp100")]
    Exp100,
    /// Horus §5.1: Bimodal(50%-50 µs, 50%-500 µs).
    #[serde(rename = "bimodal")]
    Bimodal,
    /// Horus §5.1 (and RackSched §4.1): Trimodal(33.3%-50, 33.3%-500, 33.3%-5000 µs).
    #[serde(rename = "trimodal")]
    Trimodal,
    /// RackSched §2/§4.1: Exp(50).
    #[serde(rename = "rs-exp50")]
    RsExp50,
    /// RackSched §4.1: Bimodal(90%-50, 10%-500).
    #[serde(rename = "rs-bimodal")]
    RsBimodal,
    /// RackSched §4.1: Bimodal(50%-50, 50%-500).
    #[serde(rename = "rs-bimodal-50-50")]
    RsBimodal5050,
    /// RackSched §2: Trimodal(33.3%-5, 33.3%-50, 33.3%-500).
    #[serde(rename = "rs-trimodal")]
    RsTrimodal,
    /// Horus §4.1 RocksDB, YCSB-A-like: 50% GET (median 40 µs), 50% SCAN (median 650 µs).
    #[serde(rename = "rocksdb-50-50")]
    Rocksdb5050,
    /// Horus §4.1 RocksDB, Facebook-USR-like: 90% GET, 10% SCAN.
    #[serde(rename = "rocksdb-90-10")]
    Rocksdb9010,
    /// RackSched §4.4 RocksDB: 50% GET (median 50 µs), 50% SCAN (median 740 µs).
    #[serde(rename = "rs-rocksdb-50-50")]
    RsRocksdb5050,
    /// RackSched §4.4 RocksDB: 90% GET, 10% SCAN.
    #[serde(rename = "rs-rocksdb-90-10")]
    RsRocksdb9010,
    /// Horus §4.1 TPC-C: five transactions (Perséphone's profile, scaled).
    #[serde(rename = "tpcc")]
    Tpcc,
}

/// Spread of each RocksDB request class around its median.
///
/// Both papers give only a median per class (Horus §4.1: GET 40 µs, SCAN 650 µs;
/// RackSched §4.4: 50 and 740 µs). The point of those workloads is the 16×
/// dispersion *between* classes; within a class a run of the same request is
/// tight. σ = 0.1 puts the 1st–99th percentile of a class at ×0.79–×1.26 of its
/// median and its mean at median·e^{σ²/2} ≈ 1.005 × median.
pub const ROCKSDB_SIGMA: f64 = 0.1;

impl ServicePreset {
    pub const ALL: [ServicePreset; 12] = [
        ServicePreset::Exp100,
        ServicePreset::Bimodal,
        ServicePreset::Trimodal,
        ServicePreset::RsExp50,
        ServicePreset::RsBimodal,
        ServicePreset::RsBimodal5050,
        ServicePreset::RsTrimodal,
        ServicePreset::Rocksdb5050,
        ServicePreset::Rocksdb9010,
        ServicePreset::RsRocksdb5050,
        ServicePreset::RsRocksdb9010,
        ServicePreset::Tpcc,
    ];

    pub fn name(self) -> &'static str {
        match self {
            ServicePreset::Exp100 => "exp100",
            ServicePreset::Bimodal => "bimodal",
            ServicePreset::Trimodal => "trimodal",
            ServicePreset::RsExp50 => "rs-exp50",
            ServicePreset::RsBimodal => "rs-bimodal",
            ServicePreset::RsBimodal5050 => "rs-bimodal-50-50",
            ServicePreset::RsTrimodal => "rs-trimodal",
            ServicePreset::Rocksdb5050 => "rocksdb-50-50",
            ServicePreset::Rocksdb9010 => "rocksdb-90-10",
            ServicePreset::RsRocksdb5050 => "rs-rocksdb-50-50",
            ServicePreset::RsRocksdb9010 => "rs-rocksdb-90-10",
            ServicePreset::Tpcc => "tpcc",
        }
    }

    /// The distribution this preset stands for.
    pub fn dist(self) -> ServiceDist {
        fn mix(values_us: &[f64], weights: &[f64]) -> ServiceDist {
            ServiceDist::Mix {
                values_us: values_us.to_vec(),
                weights: weights.to_vec(),
            }
        }
        fn rocksdb(get_us: f64, scan_us: f64, get: f64, scan: f64) -> ServiceDist {
            ServiceDist::LognormalMix {
                medians_us: vec![get_us, scan_us],
                sigma: ROCKSDB_SIGMA,
                weights: vec![get, scan],
            }
        }
        // "33.3%" in the papers is a rounded third: equal weights.
        match self {
            ServicePreset::Exp100 => ServiceDist::Exp { mean_us: 100.0 },
            ServicePreset::Bimodal => mix(&[50.0, 500.0], &[0.5, 0.5]),
            ServicePreset::Trimodal => mix(&[50.0, 500.0, 5000.0], &[1.0, 1.0, 1.0]),
            ServicePreset::RsExp50 => ServiceDist::Exp { mean_us: 50.0 },
            ServicePreset::RsBimodal => mix(&[50.0, 500.0], &[0.9, 0.1]),
            ServicePreset::RsBimodal5050 => mix(&[50.0, 500.0], &[0.5, 0.5]),
            ServicePreset::RsTrimodal => mix(&[5.0, 50.0, 500.0], &[1.0, 1.0, 1.0]),
            ServicePreset::Rocksdb5050 => rocksdb(40.0, 650.0, 0.5, 0.5),
            ServicePreset::Rocksdb9010 => rocksdb(40.0, 650.0, 0.9, 0.1),
            ServicePreset::RsRocksdb5050 => rocksdb(50.0, 740.0, 0.5, 0.5),
            ServicePreset::RsRocksdb9010 => rocksdb(50.0, 740.0, 0.9, 0.1),
            // Horus §4.1 lists the classes by service time; by the TPC-C mix
            // and Perséphone's profile (5.7/6/20/88/100 µs, ×3.8) they are
            // Payment, OrderStatus, NewOrder, Delivery, StockLevel.
            ServicePreset::Tpcc => mix(
                &[21.6, 22.68, 71.28, 332.64, 378.0],
                &[0.44, 0.04, 0.44, 0.04, 0.04],
            ),
        }
    }

    /// Names of the mixture classes, for per-type metrics.
    pub fn class_names(self) -> Vec<String> {
        let names: &[&str] = match self {
            ServicePreset::Exp100 | ServicePreset::RsExp50 => &["task"],
            ServicePreset::Bimodal
            | ServicePreset::RsBimodal
            | ServicePreset::RsBimodal5050
            | ServicePreset::Trimodal
            | ServicePreset::RsTrimodal => return self.dist().default_class_names(),
            ServicePreset::Rocksdb5050
            | ServicePreset::Rocksdb9010
            | ServicePreset::RsRocksdb5050
            | ServicePreset::RsRocksdb9010 => &["get", "scan"],
            ServicePreset::Tpcc => &[
                "payment",
                "order_status",
                "new_order",
                "delivery",
                "stock_level",
            ],
        };
        names.iter().map(|s| s.to_string()).collect()
    }
}

impl fmt::Display for ServicePreset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for ServicePreset {
    type Err = ConfigError;
    fn from_str(s: &str) -> Result<Self, ConfigError> {
        ServicePreset::ALL
            .iter()
            .copied()
            .find(|p| p.name() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = ServicePreset::ALL.iter().map(|p| p.name()).collect();
                ConfigError::new(
                    "name",
                    format!("unknown preset '{s}'; known: {}", names.join(", ")),
                )
            })
    }
}

impl From<ServicePreset> for ServiceDist {
    fn from(p: ServicePreset) -> Self {
        ServiceDist::Preset { name: p }
    }
}

fn check_positive(field: &str, v: f64) -> Result<(), ConfigError> {
    if v.is_finite() && v > 0.0 {
        Ok(())
    } else {
        Err(ConfigError::new(
            field,
            format!("must be a finite number > 0, got {v}"),
        ))
    }
}

/// Normalised cumulative weights, so a draw is one uniform and a short scan.
fn cumulative(weights: &[f64], n: usize, values_field: &str) -> Result<Vec<f64>, ConfigError> {
    if n == 0 {
        return Err(ConfigError::new(values_field, "needs at least one value"));
    }
    if n > MAX_CLASSES {
        return Err(ConfigError::new(
            values_field,
            format!("at most {MAX_CLASSES} components (the class is a u8), got {n}"),
        ));
    }
    if weights.len() != n {
        return Err(ConfigError::new(
            "weights",
            format!("has {} entries but {values_field} has {n}", weights.len()),
        ));
    }
    for (i, &w) in weights.iter().enumerate() {
        if !(w.is_finite() && w >= 0.0) {
            return Err(ConfigError::new(
                format!("weights[{i}]"),
                format!("must be a finite number >= 0, got {w}"),
            ));
        }
    }
    let total: f64 = weights.iter().sum();
    if !(total > 0.0 && total.is_finite()) {
        return Err(ConfigError::new(
            "weights",
            "must sum to a finite number > 0",
        ));
    }
    let mut acc = 0.0;
    let mut cum: Vec<f64> = weights
        .iter()
        .map(|w| {
            acc += w / total;
            acc
        })
        .collect();
    // Rounding could leave the last entry at 0.999…; a draw of unit() must
    // always find a component.
    *cum.last_mut().expect("n > 0") = 1.0;
    Ok(cum)
}

impl ServiceDist {
    /// Check the parameters, naming fields under `workload.service`, where the
    /// simulator's config keeps it. A trace file is not read here (its path
    /// may be relative to a config file this call does not know about): its
    /// errors come from [`build`](Self::build) / [`build_relative_to`](Self::build_relative_to).
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.validate_at(SERVICE_FIELD)
    }

    /// [`validate`](Self::validate) for a distribution kept elsewhere in a config.
    pub fn validate_at(&self, field: &str) -> Result<(), ConfigError> {
        match self {
            ServiceDist::Trace { path } if path.as_os_str().is_empty() => {
                Err(ConfigError::new("path", "must name a CSV file"))
            }
            ServiceDist::Trace { .. } => Ok(()),
            _ => self.build_inner(None).map(|_| ()),
        }
        .map_err(|e| e.within(field))
    }

    /// Check and prepare for sampling. A trace path is read relative to the
    /// working directory.
    pub fn build(&self) -> Result<ServiceSampler, ConfigError> {
        self.build_inner(None).map_err(|e| e.within(SERVICE_FIELD))
    }

    /// [`build`](Self::build) with a relative trace path resolved against
    /// `base` (the config file's directory, typically).
    pub fn build_relative_to(&self, base: &Path) -> Result<ServiceSampler, ConfigError> {
        self.build_inner(Some(base))
            .map_err(|e| e.within(SERVICE_FIELD))
    }

    fn default_class_names(&self) -> Vec<String> {
        match self {
            ServiceDist::Mix { values_us, .. } => {
                values_us.iter().map(|v| format!("{v}us")).collect()
            }
            ServiceDist::LognormalMix { medians_us, .. } => {
                medians_us.iter().map(|v| format!("median{v}us")).collect()
            }
            ServiceDist::Preset { name } => name.class_names(),
            _ => vec!["task".to_string()],
        }
    }

    fn build_inner(&self, base: Option<&Path>) -> Result<ServiceSampler, ConfigError> {
        let class_names = self.default_class_names();
        let sampler = match self {
            ServiceDist::Exp { mean_us } => {
                check_positive("mean_us", *mean_us)?;
                let mean_ns = mean_us * 1e3;
                // The analytic mean; rounding each draw to whole ns shifts it
                // by less than 1/(24·mean_ns) ns.
                ServiceSampler {
                    kind: Kind::Exp { mean_ns },
                    mean_ns,
                    class_names,
                }
            }
            ServiceDist::Fixed { value_us } => {
                check_positive("value_us", *value_us)?;
                let ns = us_to_ns(*value_us).max(1);
                ServiceSampler {
                    kind: Kind::Fixed { ns },
                    mean_ns: ns as f64,
                    class_names,
                }
            }
            ServiceDist::Mix { values_us, weights } => {
                let cum = cumulative(weights, values_us.len(), "values_us")?;
                for (i, &v) in values_us.iter().enumerate() {
                    if !(v.is_finite() && v >= 0.0) {
                        return Err(ConfigError::new(
                            format!("values_us[{i}]"),
                            format!("must be a finite number >= 0, got {v}"),
                        ));
                    }
                }
                let values_ns: Vec<u64> = values_us.iter().map(|&v| us_to_ns(v)).collect();
                // Exact: the mean of what is actually sampled (rounded values).
                let mean_ns = mixture_mean(&cum, values_ns.iter().map(|&v| v as f64));
                if mean_ns <= 0.0 {
                    return Err(ConfigError::new("values_us", "the mean service time is 0"));
                }
                ServiceSampler {
                    kind: Kind::Mix { cum, values_ns },
                    mean_ns,
                    class_names,
                }
            }
            ServiceDist::Lognormal { median_us, sigma } => {
                lognormal(&[*median_us], *sigma, &[1.0], "median_us", class_names)?
            }
            ServiceDist::LognormalMix {
                medians_us,
                sigma,
                weights,
            } => lognormal(medians_us, *sigma, weights, "medians_us", class_names)?,
            ServiceDist::Preset { name } => {
                let mut s = name.dist().build_inner(base)?;
                s.class_names = class_names;
                s
            }
            ServiceDist::Trace { path } => {
                let full = match base {
                    Some(b) if path.is_relative() => b.join(path),
                    _ => path.clone(),
                };
                let trace =
                    load_trace(&full).map_err(|e| ConfigError::new("path", e.to_string()))?;
                let n = trace.service_ns.len() as f64;
                // Exact for uniform resampling: the trace's own mean.
                let mean_ns = trace.service_ns.iter().map(|&v| v as f64).sum::<f64>() / n;
                if mean_ns <= 0.0 {
                    return Err(ConfigError::new(
                        "path",
                        format!("{}: the mean service time is 0", full.display()),
                    ));
                }
                let class_names = match trace.classes.iter().max() {
                    Some(&m) => (0..=m).map(|c| format!("class{c}")).collect(),
                    None => class_names,
                };
                ServiceSampler {
                    kind: Kind::Trace {
                        ns: trace.service_ns,
                        classes: trace.classes,
                    },
                    mean_ns,
                    class_names,
                }
            }
        };
        Ok(sampler)
    }
}

fn mixture_mean(cum: &[f64], means: impl Iterator<Item = f64>) -> f64 {
    let mut prev = 0.0;
    cum.iter()
        .zip(means)
        .map(|(&c, m)| {
            let w = c - prev;
            prev = c;
            w * m
        })
        .sum()
}

fn lognormal(
    medians_us: &[f64],
    sigma: f64,
    weights: &[f64],
    field: &str,
    class_names: Vec<String>,
) -> Result<ServiceSampler, ConfigError> {
    let cum = cumulative(weights, medians_us.len(), field)?;
    for (i, &m) in medians_us.iter().enumerate() {
        let name = if medians_us.len() == 1 && field == "median_us" {
            field.to_string()
        } else {
            format!("{field}[{i}]")
        };
        check_positive(&name, m)?;
    }
    // σ beyond ~5 makes e^{σ²/2} dwarf the median: almost surely a unit mistake.
    if !(sigma.is_finite() && (0.0..=5.0).contains(&sigma)) {
        return Err(ConfigError::new(
            "sigma",
            format!("must be in [0, 5], got {sigma}"),
        ));
    }
    let mu: Vec<f64> = medians_us.iter().map(|&m| (m * 1e3).ln()).collect();
    let factor = (sigma * sigma / 2.0).exp();
    let mean_ns = mixture_mean(&cum, medians_us.iter().map(|&m| m * 1e3 * factor));
    Ok(ServiceSampler {
        kind: Kind::Lognormal { cum, mu, sigma },
        mean_ns,
        class_names,
    })
}

#[derive(Clone, Debug)]
enum Kind {
    Exp {
        mean_ns: f64,
    },
    Fixed {
        ns: u64,
    },
    Mix {
        cum: Vec<f64>,
        values_ns: Vec<u64>,
    },
    Lognormal {
        cum: Vec<f64>,
        mu: Vec<f64>,
        sigma: f64,
    },
    Trace {
        ns: Vec<u64>,
        classes: Vec<u8>,
    },
}

/// A checked, ready-to-sample service-time distribution. Immutable, so one
/// instance serves every pool; each pool brings its own [`Rng`] stream.
#[derive(Clone, Debug)]
pub struct ServiceSampler {
    kind: Kind,
    mean_ns: f64,
    class_names: Vec<String>,
}

#[inline]
fn pick(cum: &[f64], rng: &mut Rng) -> usize {
    if cum.len() == 1 {
        return 0;
    }
    let u = rng.unit();
    // A handful of components: a linear scan beats a binary search.
    cum.iter().position(|&c| u < c).unwrap_or(cum.len() - 1)
}

/// A standard normal draw (Box–Muller, one of the pair: the sampler stays
/// stateless so that draws depend only on the stream, not on call history).
#[inline]
fn std_normal(rng: &mut Rng) -> f64 {
    let r = (-2.0 * rng.unit_open0().ln()).sqrt();
    let theta = std::f64::consts::TAU * rng.unit();
    r * theta.cos()
}

impl ServiceSampler {
    /// One task: its service time in ns and its class (the mixture component,
    /// e.g. GET = 0 / SCAN = 1, the TPC-C transaction; 0 for single-class
    /// distributions; the trace's `class` column for a trace).
    #[inline]
    pub fn sample(&self, rng: &mut Rng) -> (u64, u8) {
        match &self.kind {
            Kind::Exp { mean_ns } => (round_ns(-rng.unit_open0().ln() * mean_ns), 0),
            Kind::Fixed { ns } => (*ns, 0),
            Kind::Mix { cum, values_ns } => {
                let i = pick(cum, rng);
                (values_ns[i], i as u8)
            }
            Kind::Lognormal { cum, mu, sigma } => {
                let i = pick(cum, rng);
                let x = (mu[i] + sigma * std_normal(rng)).exp();
                (round_ns(x), i as u8)
            }
            Kind::Trace { ns, classes } => {
                // Uniform resampling with replacement (see load_trace).
                let i = rng.below(ns.len() as u32) as usize;
                (ns[i], classes.get(i).copied().unwrap_or(0))
            }
        }
    }

    /// The exact mean service time in ns, for λ = n / s̄ (Horus §5.1).
    pub fn mean_ns(&self) -> f64 {
        self.mean_ns
    }

    /// Number of task classes [`sample`](Self::sample) can return.
    pub fn classes(&self) -> usize {
        self.class_names.len()
    }

    /// Human-readable class names (`get`/`scan`, TPC-C transactions, ...).
    pub fn class_names(&self) -> &[String] {
        &self.class_names
    }

    /// Each class's mean service time in ns, indexed like
    /// [`class_names`](Self::class_names): a mixture component's exact mean,
    /// a trace class's sample mean (the overall mean for a class without rows).
    pub fn class_means_ns(&self) -> Vec<f64> {
        let n = self.classes();
        match &self.kind {
            Kind::Exp { .. } | Kind::Fixed { .. } => vec![self.mean_ns; n],
            Kind::Mix { values_ns, .. } => values_ns.iter().map(|&v| v as f64).collect(),
            Kind::Lognormal { mu, sigma, .. } => {
                mu.iter().map(|m| (m + sigma * sigma / 2.0).exp()).collect()
            }
            Kind::Trace { ns, classes } => {
                let mut sum = vec![0.0; n];
                let mut count = vec![0u64; n];
                for (i, &t) in ns.iter().enumerate() {
                    let c = classes.get(i).copied().unwrap_or(0) as usize;
                    if c < n {
                        sum[c] += t as f64;
                        count[c] += 1;
                    }
                }
                (0..n)
                    .map(|c| {
                        if count[c] > 0 {
                            sum[c] / count[c] as f64
                        } else {
                            self.mean_ns
                        }
                    })
                    .collect()
            }
        }
    }
}

/// Service times read from a CSV trace.
#[derive(Clone, Debug, PartialEq)]
pub struct Trace {
    /// Service times in ns, in file order.
    pub service_ns: Vec<u64>,
    /// Per-row class when the file has a `class` column, else empty.
    pub classes: Vec<u8>,
}

/// Read a service-time trace.
///
/// Format: comma-separated, one task per line; blank lines and lines starting
/// with `#` are ignored. An optional header line names the columns: the
/// service time is the column named `service_time_us` if there is one, else
/// the first column whose value in the first data row is a number; an optional
/// `class` column (0–255) gives the task class. Times are in µs.
///
/// The simulator *resamples* a trace uniformly with replacement rather than
/// replaying it in order: the sampler then stays stateless and shareable, every
/// pool sees the trace's empirical distribution whatever its size or run
/// length, and the mean used for λ = n / s̄ is exactly the trace's mean.
///
/// Errors are one line: `<path>: line <n>: <what>`.
pub fn load_trace(path: &Path) -> Result<Trace, TraceError> {
    let text = std::fs::read_to_string(path).map_err(|source| TraceError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    parse_trace(&text).map_err(|reason| TraceError::Invalid {
        path: path.to_path_buf(),
        reason,
    })
}

/// Why a service-time trace cannot be used; one line naming the file.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    #[error("{}: cannot read: {source}", path.display())]
    Read {
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A line that is not a service time (`line <n>: <what>`), or no rows.
    #[error("{}: {reason}", path.display())]
    Invalid {
        path: std::path::PathBuf,
        reason: TraceRowError,
    },
}

/// What is wrong with a trace's text (`line <n>: <what>`, or the whole).
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum TraceRowError {
    #[error("line {line}: header has no service-time column")]
    NoServiceColumn { line: usize },
    #[error("line {line}: no numeric column")]
    NoNumericColumn { line: usize },
    #[error("line {line}: missing column {column} (has {fields} fields)")]
    MissingColumn {
        line: usize,
        column: usize,
        fields: usize,
    },
    #[error("line {line}: service time '{field}' is not a number")]
    NotANumber { line: usize, field: String },
    #[error("line {line}: service time must be finite and >= 0, got {us}")]
    BadServiceTime { line: usize, us: f64 },
    #[error("line {line}: missing class column {column}")]
    MissingClass { line: usize, column: usize },
    #[error("line {line}: class '{field}' is not an integer in 0..=255")]
    BadClass { line: usize, field: String },
    #[error("no service times found")]
    Empty,
    #[error("too many rows ({0}), at most 2^32 - 1")]
    TooManyRows(usize),
}

fn split_fields(line: &str) -> Vec<&str> {
    line.split(',')
        .map(|f| f.trim().trim_matches('"').trim())
        .collect()
}

fn parse_trace(text: &str) -> Result<Trace, TraceRowError> {
    let mut service_ns = Vec::new();
    let mut classes = Vec::new();
    let mut col: Option<usize> = None;
    let mut class_col: Option<usize> = None;
    let mut seen_first = false;
    for (idx, raw) in text.lines().enumerate() {
        let lineno = idx + 1;
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let fields = split_fields(line);
        if !seen_first {
            seen_first = true;
            let named = fields.iter().position(|f| *f == "service_time_us");
            let any_numeric = fields.iter().any(|f| f.parse::<f64>().is_ok());
            if named.is_some() || !any_numeric {
                col = named;
                class_col = fields.iter().position(|f| *f == "class");
                if col.is_none() && class_col.is_some() && fields.len() == 1 {
                    return Err(TraceRowError::NoServiceColumn { line: lineno });
                }
                continue;
            }
        }
        let c = match col {
            Some(c) => c,
            None => {
                let found = fields
                    .iter()
                    .enumerate()
                    .position(|(i, f)| Some(i) != class_col && f.parse::<f64>().is_ok());
                let c = found.ok_or(TraceRowError::NoNumericColumn { line: lineno })?;
                col = Some(c);
                c
            }
        };
        let field = fields.get(c).ok_or(TraceRowError::MissingColumn {
            line: lineno,
            column: c + 1,
            fields: fields.len(),
        })?;
        let us: f64 = field.parse().map_err(|_| TraceRowError::NotANumber {
            line: lineno,
            field: field.to_string(),
        })?;
        if !(us.is_finite() && us >= 0.0) {
            return Err(TraceRowError::BadServiceTime { line: lineno, us });
        }
        service_ns.push(us_to_ns(us));
        if let Some(cc) = class_col {
            let f = fields.get(cc).ok_or(TraceRowError::MissingClass {
                line: lineno,
                column: cc + 1,
            })?;
            let class: u8 = f.parse().map_err(|_| TraceRowError::BadClass {
                line: lineno,
                field: f.to_string(),
            })?;
            classes.push(class);
        }
    }
    if service_ns.is_empty() {
        return Err(TraceRowError::Empty);
    }
    if service_ns.len() > u32::MAX as usize {
        return Err(TraceRowError::TooManyRows(service_ns.len()));
    }
    Ok(Trace {
        service_ns,
        classes,
    })
}

/// From `start_ns` on (until the next segment starts) the offered load is
/// `load` × the pool's capacity.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RateSegment {
    pub start_ns: u64,
    /// Fraction of λ = n / s̄; 0 pauses arrivals, above 1 overloads.
    pub load: f64,
}

/// Piecewise-constant offered load over time (Horus §4.2 "Dynamic Task Rate"
/// changes the rate every 10 s). TOML:
/// ```toml
/// segments = [{ start_ns = 0, load = 0.3 }, { start_ns = 10_000_000_000, load = 0.5 }]
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RateSchedule {
    pub segments: Vec<RateSegment>,
}

impl RateSchedule {
    /// The same load for the whole run.
    pub fn constant(load: f64) -> Self {
        RateSchedule {
            segments: vec![RateSegment { start_ns: 0, load }],
        }
    }

    /// `initial_load` from time 0, then each `[start_us, load]` from its start
    /// on (a pair starting at 0 replaces the initial load). This is the
    /// `workload.schedule` shape of the simulator's config.
    pub fn from_us_pairs(initial_load: f64, pairs: &[[f64; 2]]) -> Result<Self, ConfigError> {
        let mut segments = vec![RateSegment {
            start_ns: 0,
            load: initial_load,
        }];
        for (i, &[start_us, load]) in pairs.iter().enumerate() {
            if !(start_us.is_finite() && start_us >= 0.0) {
                return Err(ConfigError::new(
                    format!("schedule[{i}]"),
                    format!("start must be a finite time >= 0 µs, got {start_us}"),
                ));
            }
            let start_ns = us_to_ns(start_us);
            if start_ns == 0 {
                segments[0].load = load;
            } else {
                segments.push(RateSegment { start_ns, load });
            }
        }
        let s = RateSchedule { segments };
        s.validate()?;
        Ok(s)
    }

    pub fn validate(&self) -> Result<(), ConfigError> {
        let Some(first) = self.segments.first() else {
            return Err(ConfigError::new("segments", "needs at least one segment"));
        };
        if first.start_ns != 0 {
            return Err(ConfigError::new(
                "segments[0].start_ns",
                "the first segment must start at 0 so that the load is defined from the start",
            ));
        }
        for (i, s) in self.segments.iter().enumerate() {
            if !(s.load.is_finite() && s.load >= 0.0) {
                return Err(ConfigError::new(
                    format!("segments[{i}].load"),
                    format!("must be a finite number >= 0, got {}", s.load),
                ));
            }
            if i > 0 && s.start_ns <= self.segments[i - 1].start_ns {
                return Err(ConfigError::new(
                    format!("segments[{i}].start_ns"),
                    "start times must increase strictly",
                ));
            }
        }
        Ok(())
    }

    /// The load in force at time `t`.
    pub fn load_at(&self, t: u64) -> f64 {
        let i = self.segments.partition_point(|s| s.start_ns <= t);
        self.segments[i.saturating_sub(1)].load
    }
}

/// λ for a pool: `load` × n / s̄ tasks per ns (Horus §5.1).
pub fn pool_rate_per_ns(load: f64, n_workers: u32, mean_service_ns: f64) -> f64 {
    load * n_workers as f64 / mean_service_ns
}

/// A Poisson arrival process whose rate changes at given instants.
///
/// Arrival instants are generated in continuous time and rounded to ns only on
/// output; when called with the time it last returned it continues from the
/// unrounded instant, so rounding never biases the rate. Two arrivals can thus
/// share a nanosecond when λ is of order 1/ns (a 20K-worker pool at 100 µs is
/// at 0.2/ns). Crossing a rate change uses memorylessness: a gap drawn at the
/// old rate that would end past the change is discarded and a new gap is drawn
/// at the new rate from the change instant.
#[derive(Clone, Debug)]
pub struct ArrivalProcess {
    starts: Vec<u64>,
    /// Tasks per ns in each segment.
    rates: Vec<f64>,
    last_ns: u64,
    last_exact: f64,
}

impl ArrivalProcess {
    /// The process for one pool of `n_workers` with mean service `mean_service_ns`.
    pub fn new(
        schedule: &RateSchedule,
        n_workers: u32,
        mean_service_ns: f64,
    ) -> Result<Self, ConfigError> {
        schedule.validate()?;
        if n_workers == 0 {
            return Err(ConfigError::new(
                "workers",
                "a pool needs at least one worker",
            ));
        }
        check_positive("mean_service_ns", mean_service_ns)?;
        let segments: Vec<(u64, f64)> = schedule
            .segments
            .iter()
            .map(|s| {
                (
                    s.start_ns,
                    pool_rate_per_ns(s.load, n_workers, mean_service_ns),
                )
            })
            .collect();
        Self::with_rates(&segments)
    }

    /// A process from explicit `(start_ns, tasks per ns)` segments; the first
    /// must start at 0.
    pub fn with_rates(segments: &[(u64, f64)]) -> Result<Self, ConfigError> {
        let schedule = RateSchedule {
            segments: segments
                .iter()
                .map(|&(start_ns, load)| RateSegment { start_ns, load })
                .collect(),
        };
        schedule.validate()?;
        Ok(ArrivalProcess {
            starts: segments.iter().map(|s| s.0).collect(),
            rates: segments.iter().map(|s| s.1).collect(),
            last_ns: u64::MAX,
            last_exact: 0.0,
        })
    }

    /// Arrival rate (tasks per ns) in force at `t`.
    pub fn rate_at(&self, t: u64) -> f64 {
        let i = self.starts.partition_point(|&s| s <= t);
        self.rates[i.saturating_sub(1)]
    }

    /// The first arrival after `now` (at or after it, after rounding), or
    /// `None` if the rate is 0 from `now` on.
    // Called once per task from the simulators' event loops, across the
    // crate boundary.
    #[inline]
    pub fn next_arrival(&mut self, now: u64, rng: &mut Rng) -> Option<u64> {
        let mut t = if now == self.last_ns {
            self.last_exact
        } else {
            now as f64
        };
        let mut i = self
            .starts
            .partition_point(|&s| (s as f64) <= t)
            .saturating_sub(1);
        loop {
            let rate = self.rates[i];
            let end = self.starts.get(i + 1).map(|&s| s as f64);
            if rate > 0.0 {
                let cand = t - rng.unit_open0().ln() / rate;
                let inside = match end {
                    Some(e) => cand < e,
                    None => true,
                };
                if inside {
                    let ns = round_ns(cand).max(now);
                    self.last_ns = ns;
                    self.last_exact = cand;
                    return Some(ns);
                }
            }
            t = end?;
            i += 1;
        }
    }
}

#[cfg(test)]
mod tests;
