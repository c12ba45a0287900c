//! The open-loop client (`netsched client`): Poisson submissions at a fixed
//! mean rate, service times from the simulator's workload samplers, and
//! latencies measured from each task's *intended* send time, so a stalled
//! sender or a slow system cannot hide latency (no coordinated omission).
//!
//! Every submitted task ends in exactly one of: completed, failed (with the
//! reason the scheduler or worker gave), timed out. Replies after the timeout,
//! duplicates and replies for unknown tasks are counted separately.
//!
//! Options: a piecewise-constant rate schedule, multi-packet tasks
//! (`packets`), resubmission of timed-out tasks with the same id
//! (`retries`), and several sender threads (`threads`, one socket and app id
//! each, reports merged), injected loss of received replies (`fault`), and
//! spines learned from the controller (`controller`, [`SpineWatch`]).
//!
//! Which tasks are pending, when they time out and whether they are resubmitted
//! is decided by [`netsched_core::client::TaskTracker`], a sans-IO state
//! machine; this module is the I/O around it.

use std::collections::BTreeMap;
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use netsched_config::workload::ServiceSampler;
use netsched_core::client::{Expiry, ReplyOutcome, RetryPolicy, TaskTracker};
use netsched_core::rng::Rng;
use netsched_core::Nanos;
use netsched_proto::{
    task_id, HorusBody, HorusHeader, HorusMessage, HorusTask, Message, RackSchedMessage,
    RackSchedPacket, ReplyStatus, ReqId, MAX_DATAGRAM,
};

use crate::config::{ClientConfig, ConfigError, ControllerLink, RateStep, WireFamily};
use crate::error::Error;
use crate::fault::Fault;
use crate::metrics::ClientMetrics;
use crate::net;
use crate::tasks::{TaskKind, GET_OBJECTS, ROCKS_PAYLOAD_LEN, SCAN_OBJECTS};
use crate::worker::RS_FAILED_CLASS;

/// What a client run measured.
#[derive(Debug)]
pub struct ClientReport {
    pub submitted: u64,
    pub completed: u64,
    /// Failed tasks by reason (the reply's payload, or `send_error`).
    pub failed: BTreeMap<String, u64>,
    pub timed_out: u64,
    /// Resubmissions of timed-out tasks (`retries`); not extra tasks.
    pub resubmitted: u64,
    /// Replies that arrived after their task had timed out.
    pub late_replies: u64,
    pub duplicate_replies: u64,
    /// Replies whose task id this client never sent (or undecodable ones).
    pub unknown_replies: u64,
    /// Latency of completed tasks, ns, from intended send to reply received.
    /// HDR histogram with 3 significant digits (relative error ≤ 0.1 %).
    pub latency: Histogram<u64>,
    /// Wall time of the send window, ns.
    pub send_window_ns: u64,
    /// Largest lag of an actual send behind its intended time, ns.
    pub max_send_lag_ns: u64,
    /// Replies dropped by the client's own fault injection (`fault`).
    pub fault_dropped: u64,
    /// Spine sets learned from the controller that changed the targets.
    pub topology_updates: u64,
}

/// [`ClientReport::to_json`]'s fields, in the order scripts see them.
#[derive(serde::Serialize)]
struct JsonReport<'a> {
    submitted: u64,
    completed: u64,
    failed: &'a BTreeMap<String, u64>,
    timed_out: u64,
    resubmitted: u64,
    late_replies: u64,
    duplicate_replies: u64,
    unknown_replies: u64,
    p50_us: f64,
    p99_us: f64,
    p999_us: f64,
    max_us: f64,
    mean_us: f64,
    send_window_ns: u64,
    max_send_lag_ns: u64,
    fault_dropped: u64,
    topology_updates: u64,
    histogram: &'static str,
}

impl ClientReport {
    pub fn failed_total(&self) -> u64 {
        self.failed.values().sum()
    }

    /// Adds another thread's report (disjoint task ids).
    pub fn merge(&mut self, o: ClientReport) {
        self.submitted += o.submitted;
        self.completed += o.completed;
        for (k, v) in o.failed {
            *self.failed.entry(k).or_default() += v;
        }
        self.timed_out += o.timed_out;
        self.resubmitted += o.resubmitted;
        self.late_replies += o.late_replies;
        self.duplicate_replies += o.duplicate_replies;
        self.unknown_replies += o.unknown_replies;
        self.latency
            .add(&o.latency)
            .expect("histograms with the same bounds");
        self.send_window_ns = self.send_window_ns.max(o.send_window_ns);
        self.max_send_lag_ns = self.max_send_lag_ns.max(o.max_send_lag_ns);
        self.fault_dropped += o.fault_dropped;
        self.topology_updates += o.topology_updates;
    }

    /// Every submitted task is accounted for exactly once.
    pub fn accounted(&self) -> bool {
        self.completed + self.failed_total() + self.timed_out == self.submitted
    }

    pub fn percentile_us(&self, q: f64) -> f64 {
        self.latency.value_at_quantile(q) as f64 / 1e3
    }

    /// JSON summary (latencies in µs, to the ns), for scripts and result
    /// files.
    pub fn to_json(&self) -> String {
        let us = |v: f64| (v * 1e3).round() / 1e3;
        serde_json::to_string_pretty(&JsonReport {
            submitted: self.submitted,
            completed: self.completed,
            failed: &self.failed,
            timed_out: self.timed_out,
            resubmitted: self.resubmitted,
            late_replies: self.late_replies,
            duplicate_replies: self.duplicate_replies,
            unknown_replies: self.unknown_replies,
            p50_us: us(self.percentile_us(0.5)),
            p99_us: us(self.percentile_us(0.99)),
            p999_us: us(self.percentile_us(0.999)),
            max_us: us(self.latency.max() as f64 / 1e3),
            mean_us: us(self.latency.mean() / 1e3),
            send_window_ns: self.send_window_ns,
            max_send_lag_ns: self.max_send_lag_ns,
            fault_dropped: self.fault_dropped,
            topology_updates: self.topology_updates,
            histogram: "hdr, 3 significant digits",
        })
        .expect("a report of numbers and strings serializes")
    }

    /// Human-readable summary, one `key=value` line.
    pub fn summary(&self) -> String {
        let failed: Vec<String> = self
            .failed
            .iter()
            .map(|(k, v)| format!("{k}:{v}"))
            .collect();
        format!(
            "submitted={} completed={} failed={} [{}] timed_out={} resubmitted={} late={} dup={} unknown={} \
             p50_us={:.1} p99_us={:.1} p999_us={:.1} max_us={:.1} mean_us={:.1} \
             rate_achieved={:.0}/s max_send_lag_us={:.1} fault_dropped={} topology_updates={}",
            self.submitted,
            self.completed,
            self.failed_total(),
            failed.join(","),
            self.timed_out,
            self.resubmitted,
            self.late_replies,
            self.duplicate_replies,
            self.unknown_replies,
            self.percentile_us(0.5),
            self.percentile_us(0.99),
            self.percentile_us(0.999),
            self.latency.max() as f64 / 1e3,
            self.latency.mean() / 1e3,
            self.submitted as f64 / (self.send_window_ns.max(1) as f64 / 1e9),
            self.max_send_lag_ns as f64 / 1e3,
            self.fault_dropped,
            self.topology_updates,
        )
    }
}

/// An open-loop load generator.
pub struct Client {
    cfg: ClientConfig,
    sampler: ServiceSampler,
    sock: UdpSocket,
    /// Live counts and latencies (served by `netsched client` when the
    /// config names `metrics`); shared by every sender thread.
    metrics: Arc<ClientMetrics>,
}

impl Client {
    /// A client on an already bound socket.
    pub fn new(cfg: ClientConfig, sock: UdpSocket) -> Result<Self, Error> {
        cfg.validate()?;
        let sampler = cfg.service.build().map_err(ConfigError::from)?;
        net::prepare(&sock)?;
        Ok(Client {
            cfg,
            sampler,
            sock,
            metrics: Arc::new(ClientMetrics::new()),
        })
    }

    /// The registry of the client's live series, to serve on `/metrics`.
    pub fn registry(&self) -> Arc<crate::metrics::Registry> {
        self.metrics.registry()
    }

    pub fn bind(cfg: ClientConfig) -> Result<Self, Error> {
        let sock = UdpSocket::bind(&cfg.bind).map_err(|e| Error::io(&cfg.bind, e))?;
        Self::new(cfg, sock)
    }

    /// Submits for `duration_ms`, then waits until every task has a reply or
    /// its last timeout. With `threads > 1` runs that many independent
    /// clients on their own sockets (app ids `app_id..app_id + threads`) and
    /// merges their reports.
    pub fn run(&mut self) -> ClientReport {
        let k = self.cfg.threads.max(1);
        if k == 1 {
            return self.run_one();
        }
        let subs: Vec<ClientConfig> = (0..k)
            .map(|i| {
                let mut c = self.cfg.clone();
                c.threads = 1;
                c.app_id = self.cfg.app_id + i;
                c.seed = self.cfg.seed.wrapping_add(0x9e37_79b9 * i as u64);
                c.rate = self.cfg.rate / k as f64;
                for st in &mut c.schedule {
                    st.rate /= k as f64;
                }
                c
            })
            .collect();
        let handles: Vec<_> = subs
            .into_iter()
            .enumerate()
            .map(|(i, c)| {
                // Thread 0 reuses this client's socket; the others bind their own.
                let sock = if i == 0 {
                    self.sock.try_clone()
                } else {
                    UdpSocket::bind(&c.bind)
                };
                let metrics = self.metrics.clone();
                std::thread::spawn(move || -> Result<ClientReport, Error> {
                    let mut sub = Client::new(c, sock?)?;
                    sub.metrics = metrics;
                    Ok(sub.run_one())
                })
            })
            .collect();
        let mut total: Option<ClientReport> = None;
        for h in handles {
            let r = h
                .join()
                .expect("client thread panicked")
                .expect("client thread could not start");
            match &mut total {
                None => total = Some(r),
                Some(t) => t.merge(r),
            }
        }
        total.expect("at least one thread")
    }

    /// The rate in force at `t_ns` since start.
    fn rate_at(&self, t_ns: u64) -> f64 {
        let ms = t_ns / 1_000_000;
        self.cfg
            .schedule
            .iter()
            .rev()
            .find(|s: &&RateStep| s.at_ms <= ms)
            .map_or(self.cfg.rate, |s| s.rate)
    }

    /// The next arrival after `t` of the non-homogeneous Poisson process
    /// the schedule defines: draw a gap at the rate in force; if it crosses
    /// the next step, restart at the step (exact, by memorylessness).
    /// `u64::MAX` if no arrival comes before `end`.
    fn next_arrival(&self, mut t: u64, end: u64, rng: &mut Rng) -> u64 {
        while t < end {
            let next_step = self
                .cfg
                .schedule
                .iter()
                .map(|s| s.at_ms * 1_000_000)
                .find(|&b| b > t)
                .unwrap_or(u64::MAX);
            let rate = self.rate_at(t);
            if rate <= 0.0 {
                t = next_step;
                continue;
            }
            let at = t.saturating_add(exp_gap(rng, 1e9 / rate));
            if at < next_step {
                return at;
            }
            t = next_step;
        }
        u64::MAX
    }

    /// Encodes packet `part` of task `seq` and sends it to target `t`.
    fn send_part(&self, tx: &mut [u8], seq: u32, spec: &TaskSpec, part: u8) -> bool {
        let cfg = &self.cfg;
        let mut payload = [0u8; ROCKS_PAYLOAD_LEN];
        let plen = match spec.kind {
            Some(kind) => kind.encode(&mut payload),
            None => 0,
        };
        let is_last = part + 1 == cfg.packets;
        let msg = match cfg.wire {
            WireFamily::Horus => {
                let task = HorusTask {
                    task_id: task_id::new(cfg.app_id, seq),
                    is_last,
                    idle_selected: false,
                    class: spec.class,
                    service_time_ns: spec.service_ns,
                    payload: &payload[..plen],
                };
                Message::Horus(HorusMessage {
                    header: HorusHeader {
                        pool_id: cfg.pool,
                        seq: seq as u16,
                        ..Default::default()
                    },
                    body: if part == 0 {
                        HorusBody::TaskFirst(task)
                    } else {
                        HorusBody::TaskContinuation(task)
                    },
                })
            }
            WireFamily::Racksched => {
                let p = RackSchedPacket {
                    req_id: ReqId {
                        client_id: cfg.app_id,
                        local_id: seq,
                    },
                    load: 0,
                    is_last,
                    class: spec.class,
                    service_time_ns: spec.service_ns,
                    payload: &payload[..plen],
                };
                Message::RackSched(if part == 0 {
                    RackSchedMessage::ReqFirst(p)
                } else {
                    RackSchedMessage::ReqRest(p)
                })
            }
        };
        let n = msg.encode(tx).expect("task fits a datagram");
        self.sock.send_to(&tx[..n], spec.target).is_ok()
    }

    /// Sends every packet of a task; false if any send failed.
    fn send_task(&self, tx: &mut [u8], seq: u32, spec: &TaskSpec) -> bool {
        (0..self.cfg.packets).all(|part| self.send_part(tx, seq, spec, part))
    }

    fn run_one(&mut self) -> ClientReport {
        let cfg = self.cfg.clone();
        let mut arrivals = Rng::derive(cfg.seed, 1);
        let mut service_rng = Rng::derive(cfg.seed, 2);
        let mut route_rng = Rng::derive(cfg.seed, 3);
        let mut key_rng = Rng::derive(cfg.seed, 4);
        let mut resend_route_rng = Rng::derive(cfg.seed, 5);
        let mut fault = Fault::new(&cfg.fault.for_stream(u64::from(cfg.app_id)));
        let mut fault_dropped = 0u64;
        let mut spines = Spines::new(cfg.targets.iter().map(|t| (t.addr, t.weight)).collect());
        let watch = match &cfg.controller {
            // The token was checked by `validate`; only a failed thread
            // spawn lands here, and the configured targets still serve.
            Some(link) => match SpineWatch::start(link, cfg.pool) {
                Ok(w) => Some(w),
                Err(e) => {
                    tracing::warn!(target: "client", error = %e, "no spine watch");
                    None
                }
            },
            None => None,
        };
        let mut topology_updates = 0u64;
        if let Some(w) = &watch {
            // Learn the spines before the first send (the clock starts
            // after); without an answer the configured targets serve.
            if w.wait_first(Duration::from_secs(2)) {
                if let Some(v) = w.take_update() {
                    topology_updates += spines.replace(v) as u64;
                }
            }
        }
        let window = cfg.duration_ms * 1_000_000;
        let peak = cfg.schedule.iter().map(|s| s.rate).fold(cfg.rate, f64::max);
        let expected = (peak * cfg.duration_ms as f64 / 1e3 * 1.2) as usize + 16;
        // Timeouts and resubmissions (`retries` at a fixed `timeout_ms`).
        let mut tasks = TaskTracker::new(
            RetryPolicy::fixed(Nanos::from_millis(cfg.timeout_ms), cfg.retries),
            expected,
        );
        // What a resubmission needs to send the task again (only kept with
        // `retries > 0`).
        let mut specs: Vec<TaskSpec> = Vec::new();
        let mut hist = Histogram::<u64>::new_with_bounds(1_000, 100_000_000_000, 3)
            .expect("valid histogram bounds");
        let mut report_failed: BTreeMap<String, u64> = BTreeMap::new();
        let mut unknown = 0u64;
        let mut rx = vec![0u8; 2048];
        let mut tx = vec![0u8; MAX_DATAGRAM];
        let mut next_at = self.next_arrival(0, window, &mut arrivals);
        let mut max_lag = 0u64;
        let start = Instant::now();
        let ns = || start.elapsed().as_nanos() as u64;
        loop {
            let now = ns();
            // Send everything whose intended time has come (catching up in a
            // burst if the loop was late: the lag stays in the latencies).
            while next_at < window && next_at <= now {
                let seq = tasks.len() as u32;
                let (service_ns, class) = self.sampler.sample(&mut service_rng);
                let target = spines.pick(&mut route_rng);
                // RocksDB tasks: the class picks GET or SCAN (RackSched §4.4);
                // the work is the request itself, not a carried time.
                let spec = if cfg.rocksdb_keys > 0 {
                    let key = (key_rng.unit() * cfg.rocksdb_keys as f64) as u32;
                    let kind = if class == 0 {
                        TaskKind::Get {
                            key,
                            count: GET_OBJECTS,
                        }
                    } else {
                        TaskKind::Scan {
                            key,
                            count: SCAN_OBJECTS,
                        }
                    };
                    TaskSpec {
                        service_ns: 0,
                        class,
                        kind: Some(kind),
                        target,
                    }
                } else {
                    TaskSpec {
                        service_ns,
                        class,
                        kind: None,
                        target,
                    }
                };
                // The timeout runs from the intended send time, like the
                // latency.
                let sent = self.send_task(&mut tx, seq, &spec);
                let intended = Nanos::new(next_at);
                tasks.submit(intended, sent.then_some(intended));
                self.metrics.submitted();
                if !sent {
                    *report_failed.entry("send_error".into()).or_default() += 1;
                    self.metrics.send_failed();
                }
                if cfg.retries > 0 {
                    specs.push(spec);
                }
                max_lag = max_lag.max(ns().saturating_sub(next_at));
                next_at = self.next_arrival(next_at, window, &mut arrivals);
            }
            // Replies.
            while let Ok(Some((n, _))) = net::try_recv(&self.sock, &mut rx) {
                let at = ns();
                if fault.drop_now(at) {
                    fault_dropped += 1;
                    continue;
                }
                let r = match Message::decode(&rx[..n]) {
                    Ok(Message::Horus(HorusMessage {
                        body: HorusBody::Reply(r),
                        ..
                    })) => r,
                    // A RackSched REP; a failed one is marked by its class.
                    Ok(Message::RackSched(RackSchedMessage::Reply(p))) => {
                        netsched_proto::HorusReply {
                            task_id: p.req_id.as_u64(),
                            status: if p.class == RS_FAILED_CLASS {
                                ReplyStatus::Failed
                            } else {
                                ReplyStatus::Ok
                            },
                            payload: p.payload,
                        }
                    }
                    _ => {
                        unknown += 1;
                        continue;
                    }
                };
                let seq = task_id::seq(r.task_id);
                if task_id::app_id(r.task_id) != cfg.app_id {
                    unknown += 1;
                    continue;
                }
                match tasks.on_reply(seq, r.status == ReplyStatus::Ok) {
                    ReplyOutcome::Completed => {
                        let intended = tasks.intended(seq).map_or(at, Nanos::get);
                        let latency = at.saturating_sub(intended).max(1_000);
                        let _ = hist.record(latency);
                        self.metrics.completed(latency);
                    }
                    ReplyOutcome::Failed => {
                        self.metrics.reply_failed();
                        let reason = std::str::from_utf8(r.payload)
                            .ok()
                            .filter(|s| !s.is_empty())
                            .unwrap_or("failed");
                        match report_failed.get_mut(reason) {
                            Some(c) => *c += 1,
                            None => {
                                report_failed.insert(reason.to_string(), 1);
                            }
                        }
                    }
                    ReplyOutcome::Unknown => unknown += 1,
                    ReplyOutcome::Late | ReplyOutcome::Duplicate => {}
                }
            }
            // Deadlines, earliest first: resubmit while retries are left,
            // then time out. Entries of finished tasks are dropped here.
            let now = ns();
            while let Some(expiry) = tasks.expire(Nanos::new(now)) {
                if let Expiry::GaveUp { .. } = expiry {
                    self.metrics.timed_out();
                }
                if let Expiry::Resubmit { seq, .. } = expiry {
                    self.metrics.resubmitted();
                    let spec = &mut specs[seq as usize];
                    // Through a spine live now: the first may have died.
                    spec.target = spines.pick(&mut resend_route_rng);
                    let spec = *spec;
                    // A failed resend leaves the task pending until its
                    // next deadline, like a lost datagram.
                    let _ = self.send_task(&mut tx, seq, &spec);
                }
            }
            if let Some(w) = &watch {
                if let Some(v) = w.take_update() {
                    if spines.replace(v) {
                        topology_updates += 1;
                    }
                }
            }
            if next_at >= window && !tasks.has_deadlines() {
                break;
            }
            // Park until the next send or 1 ms, whichever is first; a reply
            // wakes us earlier. Under 50 µs we spin for send accuracy.
            let wait = if next_at < window {
                next_at.saturating_sub(ns())
            } else {
                1_000_000
            };
            if wait > 50_000 {
                net::wait_readable(
                    &self.sock,
                    Duration::from_nanos(wait.min(1_000_000) - 50_000),
                );
            } else {
                std::hint::spin_loop();
            }
        }
        let tally = tasks.tally();
        ClientReport {
            submitted: tally.submitted,
            completed: tally.completed,
            failed: report_failed,
            timed_out: tally.timed_out,
            resubmitted: tally.resubmitted,
            late_replies: tally.late,
            duplicate_replies: tally.duplicates,
            unknown_replies: unknown,
            latency: hist,
            send_window_ns: window.min(ns()),
            max_send_lag_ns: max_lag,
            fault_dropped,
            topology_updates,
        }
    }
}

/// The spines a client submits to, weighted (Horus §3.2).
struct Spines {
    addrs: Vec<SocketAddr>,
    /// Cumulative normalized weights.
    cum: Vec<f64>,
}

impl Spines {
    fn new(weighted: Vec<(SocketAddr, f64)>) -> Self {
        let mut s = Spines {
            addrs: Vec::new(),
            cum: Vec::new(),
        };
        s.replace(weighted);
        s
    }

    /// Installs a new weighted set; false if it is the one in use.
    fn replace(&mut self, weighted: Vec<(SocketAddr, f64)>) -> bool {
        let total: f64 = weighted.iter().map(|w| w.1).sum();
        let addrs: Vec<SocketAddr> = weighted.iter().map(|w| w.0).collect();
        let cum: Vec<f64> = weighted
            .iter()
            .scan(0.0, |acc, w| {
                *acc += w.1 / total;
                Some(*acc)
            })
            .collect();
        if addrs == self.addrs && cum == self.cum {
            return false;
        }
        self.addrs = addrs;
        self.cum = cum;
        true
    }

    fn pick(&self, rng: &mut Rng) -> SocketAddr {
        let u = rng.unit();
        let i = self
            .cum
            .iter()
            .position(|&c| u < c)
            .unwrap_or(self.cum.len() - 1);
        self.addrs[i]
    }
}

/// Spine addresses with their weights.
pub type WeightedSpines = Vec<(SocketAddr, f64)>;

/// A thread polling the controller's `GET /v1/topology` every `poll_ms`
/// for the live spines of one pool and their weights (the share of live
/// workers linked to each, Horus §3.2), so a client stops sending to a
/// spine the controller found dead (§A.3 "Switch Failures") and follows the
/// racks relinked to the survivors. A separate thread, because an HTTP
/// round trip must not delay the Poisson sender.
pub struct SpineWatch {
    latest: Arc<Mutex<Option<WeightedSpines>>>,
    /// Bumped on every new answer; the sender reads it with one atomic load.
    version: Arc<AtomicU64>,
    seen: AtomicU64,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl SpineWatch {
    pub fn start(link: &ControllerLink, pool: u16) -> Result<Self, Error> {
        let token = link.token()?;
        let latest = Arc::new(Mutex::new(None));
        let version = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (l, v, st) = (latest.clone(), version.clone(), stop.clone());
        let (admin, period) = (link.admin, Duration::from_millis(link.poll_ms));
        let thread = std::thread::Builder::new()
            .name("spine-watch".into())
            .spawn(move || {
                while !st.load(Ordering::Relaxed) {
                    if let Some(spines) = live_spines(admin, &token, pool) {
                        *l.lock().unwrap() = Some(spines);
                        v.fetch_add(1, Ordering::Release);
                    }
                    std::thread::sleep(period);
                }
            })?;
        Ok(SpineWatch {
            latest,
            version,
            seen: AtomicU64::new(0),
            stop,
            thread: Some(thread),
        })
    }

    /// Waits up to `limit` for the controller's first answer, so a client
    /// does not start submitting to a spine that is already known dead.
    pub fn wait_first(&self, limit: Duration) -> bool {
        let t = Instant::now();
        while self.version.load(Ordering::Acquire) == 0 {
            if t.elapsed() >= limit {
                return false;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        true
    }

    /// The newest answer not yet taken.
    pub fn take_update(&self) -> Option<Vec<(SocketAddr, f64)>> {
        let v = self.version.load(Ordering::Acquire);
        if v == self.seen.load(Ordering::Relaxed) {
            return None;
        }
        self.seen.store(v, Ordering::Relaxed);
        self.latest.lock().unwrap().clone()
    }
}

impl Drop for SpineWatch {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The live spines of `pool` with positive weight, from one topology
/// answer; `None` if the controller did not answer or no spine qualifies
/// (the client then keeps what it has).
fn live_spines(admin: SocketAddr, token: &str, pool: u16) -> Option<Vec<(SocketAddr, f64)>> {
    let (code, body) =
        crate::controller::http(admin, "GET", "/v1/topology", Some(token), None).ok()?;
    if code != 200 {
        return None;
    }
    let v: serde_json::Value = serde_json::from_str(&body).ok()?;
    spines_of(&v, pool)
}

/// The weighted live spines of `pool` in a `GET /v1/topology` answer.
pub fn spines_of(topology: &serde_json::Value, pool: u16) -> Option<Vec<(SocketAddr, f64)>> {
    let p = topology["pools"]
        .as_array()?
        .iter()
        .find(|p| p["id"].as_u64() == Some(u64::from(pool)))?;
    let live: Vec<(SocketAddr, f64)> = p["spines"]
        .as_array()?
        .iter()
        .filter(|s| s["alive"] == true)
        .filter_map(|s| {
            let w = s["weight"].as_f64()?;
            let a = s["addr"].as_str()?.parse().ok()?;
            (w > 0.0).then_some((a, w))
        })
        .collect();
    (!live.is_empty()).then_some(live)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn live_weighted_spines_come_from_the_topology() {
        let t = serde_json::json!({"pools": [
            {"id": 2, "spines": [{"addr": "10.0.0.9:1", "alive": true, "weight": 1.0}]},
            {"id": 1, "spines": [
                {"addr": "10.0.0.1:7100", "alive": false, "weight": 0.0},
                {"addr": "10.0.0.2:7100", "alive": true, "weight": 0.75},
                {"addr": "10.0.0.3:7100", "alive": true, "weight": 0.25},
                {"addr": "10.0.0.4:7100", "alive": true, "weight": 0.0}
            ]}
        ]});
        let a = |s: &str| s.parse::<SocketAddr>().unwrap();
        assert_eq!(
            spines_of(&t, 1),
            Some(vec![(a("10.0.0.2:7100"), 0.75), (a("10.0.0.3:7100"), 0.25)])
        );
        assert_eq!(spines_of(&t, 3), None);
        let dead = serde_json::json!({"pools": [{"id": 1, "spines": [
            {"addr": "10.0.0.1:7100", "alive": false, "weight": 1.0}]}]});
        assert_eq!(spines_of(&dead, 1), None);
        // Weighted choice follows the weights; a replaced set takes over.
        let mut s = Spines::new(spines_of(&t, 1).unwrap());
        let mut rng = Rng::new(3);
        let n = 20_000;
        let first = (0..n)
            .filter(|_| s.pick(&mut rng) == a("10.0.0.2:7100"))
            .count();
        // Binomial(20000, 0.75): sd ≈ 61; ±5 sd.
        assert!((14_694..=15_306).contains(&first), "{first}");
        assert!(!s.replace(spines_of(&t, 1).unwrap()), "same set");
        assert!(s.replace(vec![(a("10.0.0.3:7100"), 1.0)]));
        assert!((0..100).all(|_| s.pick(&mut rng) == a("10.0.0.3:7100")));
    }
}

/// What (re)sending one task needs.
#[derive(Clone, Copy, Debug)]
struct TaskSpec {
    service_ns: u64,
    class: u8,
    /// A RocksDB request; `None`: synthetic (runs for `service_ns`).
    kind: Option<TaskKind>,
    /// The spine it was (last) sent to.
    target: SocketAddr,
}

/// Exponential inter-arrival gap (Poisson process), at least 1 ns.
pub(crate) fn exp_gap(rng: &mut Rng, mean_ns: f64) -> u64 {
    ((-rng.unit_open0().ln() * mean_ns) as u64).max(1)
}
