//! Every daemon's metrics on prometheus-client, served at `/metrics` by the
//! daemons' shared hyper server ([`crate::http`]).
//!
//! A daemon registers its series once at start and keeps a [`Slot`] per
//! series, so the hot loops only do relaxed atomic adds (histograms take an
//! uncontended lock): no allocation and no map lookup per packet.
//! docs/metrics.md lists every series.

mod client;
mod process;
mod text;

use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use http_body_util::Full;
use hyper::body::Bytes;
use hyper::header::{ACCEPT, ALLOW, CONTENT_TYPE};
use hyper::{Method, Request, Response, StatusCode};
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry as PromRegistry;

pub use client::ClientMetrics;
pub use process::ProcessStats;
pub use text::{openmetrics_to_prometheus, sort_series};

/// What a series measures, which fixes its Prometheus type and value type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Events so far (integer counter); the name ends in `_total`.
    Counter,
    /// A level that goes up and down (integer gauge).
    Gauge,
    /// A level in base units (float gauge), e.g. a mean queue length.
    FloatGauge,
    /// Time spent so far (float counter); the name ends in `_seconds_total`.
    SecondsCounter,
    /// A latency distribution in seconds; the name ends in `_seconds`.
    Histogram,
}

type Labels = Vec<(String, String)>;
type FloatGaugeMetric = Gauge<f64, AtomicU64>;
type SecondsMetric = Counter<f64, AtomicU64>;

#[derive(Clone)]
enum FamilyOf {
    Counter(Family<Labels, Counter>),
    Gauge(Family<Labels, Gauge>),
    FloatGauge(Family<Labels, FloatGaugeMetric>),
    Seconds(Family<Labels, SecondsMetric>),
    Histogram(Family<Labels, Histogram, fn() -> Histogram>),
}

enum Series {
    Counter(Counter),
    Gauge(Gauge),
    FloatGauge(FloatGaugeMetric),
    Seconds(SecondsMetric),
    Histogram(Histogram),
}

struct Entry {
    name: &'static str,
    /// Rendered label set, e.g. `{reason="truncated"}`, or empty.
    labels: String,
    series: Series,
}

/// Latency buckets: 100 ns to about 0.8 s by doubling, which spans a
/// dispatch decision (sub-µs) and a RocksDB scan (ms).
fn latency_histogram() -> Histogram {
    Histogram::new(exponential_buckets(1e-7, 2.0, 24))
}

/// A daemon's metric series, shared between its loops and its `/metrics`.
pub struct Registry {
    prom: PromRegistry,
    families: Vec<(&'static str, Kind, FamilyOf)>,
    entries: Vec<Entry>,
    process: ProcessSlots,
    /// Two scrapes at once would both raise the CPU counter by one delta.
    process_refresh: Mutex<()>,
}

/// The `process_*` series, refreshed from /proc/self at each scrape.
struct ProcessSlots {
    cpu: Slot,
    resident: Slot,
    virtual_memory: Slot,
    open_fds: Slot,
    start_time: Slot,
}

/// Index of a registered series.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slot(usize);

impl Default for Registry {
    fn default() -> Self {
        Self::new()
    }
}

impl Registry {
    /// An empty registry but for `netsched_build_info{version,commit} 1`
    /// and the standard `process_*` series.
    pub fn new() -> Self {
        let unset = Slot(usize::MAX);
        let mut r = Registry {
            prom: PromRegistry::default(),
            families: Vec::new(),
            entries: Vec::new(),
            process: ProcessSlots {
                cpu: unset,
                resident: unset,
                virtual_memory: unset,
                open_fds: unset,
                start_time: unset,
            },
            process_refresh: Mutex::new(()),
        };
        let build = netsched_config::build_info::BUILD_INFO;
        let info = r.register(
            "netsched_build_info",
            "Always 1; the labels name the netsched version and git commit running",
            Kind::Gauge,
            &[("version", build.version), ("commit", build.commit)],
        );
        r.set(info, 1);
        r.process = ProcessSlots {
            cpu: r.register(
                "process_cpu_seconds_total",
                "Total user and system CPU time spent in seconds",
                Kind::SecondsCounter,
                &[],
            ),
            resident: r.register(
                "process_resident_memory_bytes",
                "Resident memory size in bytes",
                Kind::Gauge,
                &[],
            ),
            virtual_memory: r.register(
                "process_virtual_memory_bytes",
                "Virtual memory size in bytes",
                Kind::Gauge,
                &[],
            ),
            open_fds: r.register(
                "process_open_fds",
                "Number of open file descriptors",
                Kind::Gauge,
                &[],
            ),
            start_time: r.register(
                "process_start_time_seconds",
                "Start time of the process since unix epoch in seconds",
                Kind::FloatGauge,
                &[],
            ),
        };
        r.refresh_process();
        r
    }

    /// Copies a fresh /proc/self reading into the `process_*` series; on a
    /// read error they keep their last values (and the error is logged).
    fn refresh_process(&self) {
        let _one_at_a_time = self
            .process_refresh
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let stats = match ProcessStats::read() {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!(target: "metrics", error = %e, "cannot read /proc/self");
                return;
            }
        };
        let p = &self.process;
        if let Series::Seconds(c) = &self.entries[p.cpu.0].series {
            let delta = stats.cpu_seconds - c.get();
            if delta > 0.0 {
                c.inc_by(delta);
            }
        }
        self.set(p.resident, stats.resident_bytes);
        self.set(p.virtual_memory, stats.virtual_bytes);
        self.set(p.open_fds, stats.open_fds);
        self.set_f64(p.start_time, stats.start_time_seconds);
    }

    /// Registers one series of family `name` (its full exposed name, suffix
    /// included); `labels` are (name, value) pairs. Every series of a family
    /// must be registered with the same `kind` and label names.
    pub fn register(
        &mut self,
        name: &'static str,
        help: &'static str,
        kind: Kind,
        labels: &[(&str, &str)],
    ) -> Slot {
        let family = match self.families.iter().find(|(n, _, _)| *n == name) {
            Some((_, k, f)) => {
                assert_eq!(*k, kind, "{name} registered as two kinds");
                f.clone()
            }
            None => {
                let f = self.new_family(name, help, kind);
                self.families.push((name, kind, f.clone()));
                f
            }
        };
        let set: Labels = labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let series = match &family {
            FamilyOf::Counter(f) => Series::Counter(f.get_or_create_owned(&set)),
            FamilyOf::Gauge(f) => Series::Gauge(f.get_or_create_owned(&set)),
            FamilyOf::FloatGauge(f) => Series::FloatGauge(f.get_or_create_owned(&set)),
            FamilyOf::Seconds(f) => Series::Seconds(f.get_or_create_owned(&set)),
            FamilyOf::Histogram(f) => Series::Histogram(f.get_or_create_owned(&set)),
        };
        self.entries.push(Entry {
            name,
            labels: render_labels(labels),
            series,
        });
        Slot(self.entries.len() - 1)
    }

    fn new_family(&mut self, name: &'static str, help: &'static str, kind: Kind) -> FamilyOf {
        // prometheus-client names a counter family without `_total` and adds
        // it to the samples.
        let counter_name = |suffix: &str| {
            assert!(name.ends_with(suffix), "{name} must end in {suffix}");
            name.trim_end_matches("_total")
        };
        match kind {
            Kind::Counter => {
                let f = Family::<Labels, Counter>::default();
                self.prom.register(counter_name("_total"), help, f.clone());
                FamilyOf::Counter(f)
            }
            Kind::SecondsCounter => {
                let f = Family::<Labels, SecondsMetric>::default();
                self.prom
                    .register(counter_name("_seconds_total"), help, f.clone());
                FamilyOf::Seconds(f)
            }
            Kind::Gauge => {
                let f = Family::<Labels, Gauge>::default();
                self.prom.register(name, help, f.clone());
                FamilyOf::Gauge(f)
            }
            Kind::FloatGauge => {
                let f = Family::<Labels, FloatGaugeMetric>::default();
                self.prom.register(name, help, f.clone());
                FamilyOf::FloatGauge(f)
            }
            Kind::Histogram => {
                assert!(name.ends_with("_seconds"), "{name} must end in _seconds");
                let f = Family::<Labels, Histogram, fn() -> Histogram>::new_with_constructor(
                    latency_histogram,
                );
                self.prom.register(name, help, f.clone());
                FamilyOf::Histogram(f)
            }
        }
    }

    #[inline]
    pub fn inc(&self, s: Slot) {
        self.add(s, 1);
    }

    /// Adds `n` to a counter or gauge.
    #[inline]
    pub fn add(&self, s: Slot, n: u64) {
        match &self.entries[s.0].series {
            Series::Counter(c) => {
                c.inc_by(n);
            }
            Series::Gauge(g) => {
                g.inc_by(n as i64);
            }
            _ => debug_assert!(false, "add on a float series"),
        }
    }

    /// Sets a gauge; on a counter, raises it to `v` (a running total kept
    /// elsewhere, e.g. a data plane's pass count), never lowers it.
    #[inline]
    pub fn set(&self, s: Slot, v: u64) {
        match &self.entries[s.0].series {
            Series::Gauge(g) => {
                g.set(v as i64);
            }
            Series::Counter(c) => {
                let now = c.get();
                if v > now {
                    c.inc_by(v - now);
                }
            }
            _ => debug_assert!(false, "set on a float series"),
        }
    }

    /// Sets a float gauge.
    #[inline]
    pub fn set_f64(&self, s: Slot, v: f64) {
        match &self.entries[s.0].series {
            Series::FloatGauge(g) => {
                g.set(v);
            }
            _ => debug_assert!(false, "set_f64 on a non-float gauge"),
        }
    }

    /// Adds `d` to a seconds counter.
    #[inline]
    pub fn add_time(&self, s: Slot, d: Duration) {
        match &self.entries[s.0].series {
            Series::Seconds(c) => {
                c.inc_by(d.as_secs_f64());
            }
            _ => debug_assert!(false, "add_time on a non-seconds series"),
        }
    }

    /// Records one latency in a histogram.
    #[inline]
    pub fn observe(&self, s: Slot, d: Duration) {
        match &self.entries[s.0].series {
            Series::Histogram(h) => h.observe(d.as_secs_f64()),
            _ => debug_assert!(false, "observe on a non-histogram"),
        }
    }

    /// An integer series' value (0 for float series and histograms).
    pub fn get(&self, s: Slot) -> u64 {
        int_value(&self.entries[s.0].series)
    }

    /// The integer series `name` with exactly `labels` (tests, reports).
    pub fn value(&self, name: &str, labels: &str) -> Option<u64> {
        self.entries
            .iter()
            .find(|e| e.name == name && e.labels == labels)
            .map(|e| int_value(&e.series))
    }

    /// Sum over every integer series named `name`.
    pub fn sum(&self, name: &str) -> u64 {
        self.entries
            .iter()
            .filter(|e| e.name == name)
            .map(|e| int_value(&e.series))
            .sum()
    }

    /// Sum over every series named `name` as floats (float gauges and
    /// seconds counters included).
    pub fn sum_f64(&self, name: &str) -> f64 {
        self.entries
            .iter()
            .filter(|e| e.name == name)
            .map(|e| match &e.series {
                Series::FloatGauge(g) => g.get(),
                Series::Seconds(c) => c.get(),
                s => int_value(s) as f64,
            })
            .sum()
    }

    /// OpenMetrics 1.0 text, each family's series in label-set order.
    pub fn render_openmetrics(&self) -> String {
        self.refresh_process();
        let mut out = String::with_capacity(self.entries.len() * 64);
        encode(&mut out, &self.prom).expect("writing to a String cannot fail");
        sort_series(&out)
    }

    /// Prometheus text exposition format 0.0.4.
    pub fn render(&self) -> String {
        openmetrics_to_prometheus(&self.render_openmetrics())
    }
}

fn int_value(s: &Series) -> u64 {
    match s {
        Series::Counter(c) => c.get(),
        Series::Gauge(g) => g.get().max(0) as u64,
        _ => 0,
    }
}

fn render_labels(labels: &[(&str, &str)]) -> String {
    if labels.is_empty() {
        return String::new();
    }
    let inner: Vec<String> = labels
        .iter()
        .map(|(k, v)| format!("{k}=\"{}\"", v.replace('\\', "\\\\").replace('"', "\\\"")))
        .collect();
    format!("{{{}}}", inner.join(","))
}

const PROMETHEUS_TEXT: &str = "text/plain; version=0.0.4; charset=utf-8";
const OPENMETRICS_TEXT: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The `/metrics` endpoint: `GET` and `HEAD` on exactly `/metrics`, in
/// OpenMetrics when the scraper asks for it, else Prometheus 0.0.4.
fn metrics_reply<B>(req: &Request<B>, registry: &Registry) -> Response<Full<Bytes>> {
    let status = |code: StatusCode| {
        let mut r = Response::new(Full::new(Bytes::new()));
        *r.status_mut() = code;
        r
    };
    if req.uri().path() != "/metrics" {
        return status(StatusCode::NOT_FOUND);
    }
    if req.method() != Method::GET && req.method() != Method::HEAD {
        let mut r = status(StatusCode::METHOD_NOT_ALLOWED);
        r.headers_mut()
            .insert(ALLOW, "GET, HEAD".parse().expect("valid"));
        return r;
    }
    let openmetrics = req
        .headers()
        .get(ACCEPT)
        .and_then(|a| a.to_str().ok())
        .is_some_and(|a| a.contains("application/openmetrics-text"));
    let (body, content_type) = if openmetrics {
        (registry.render_openmetrics(), OPENMETRICS_TEXT)
    } else {
        (registry.render(), PROMETHEUS_TEXT)
    };
    // hyper sends a HEAD answer's headers (Content-Length included) only.
    let mut r = Response::new(Full::new(Bytes::from(body)));
    r.headers_mut()
        .insert(CONTENT_TYPE, content_type.parse().expect("valid"));
    r
}

/// Serves `/metrics` from `registry` on `addr` until `stop` is set, on the
/// daemons' shared HTTP server. Returns the bound address (port 0 picks one)
/// and the thread.
pub fn serve(
    addr: &str,
    registry: Arc<Registry>,
    stop: Arc<AtomicBool>,
) -> std::io::Result<(SocketAddr, JoinHandle<()>)> {
    let listener = TcpListener::bind(addr)?;
    let local = listener.local_addr()?;
    let h = std::thread::Builder::new()
        .name("metrics".into())
        .spawn(move || {
            let served =
                crate::http::serve_blocking(listener, "metrics-http", 1, stop, move |req| {
                    let reply = metrics_reply(&req, &registry);
                    async move { reply }
                });
            if let Err(e) = served {
                tracing::error!(target: "metrics", error = %e, "metrics endpoint stopped");
            }
        })?;
    Ok((local, h))
}

#[cfg(test)]
mod tests;
