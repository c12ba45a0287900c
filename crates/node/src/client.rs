//! The open-loop client (`netsched client`): Poisson submissions at a fixed
//! mean rate, service times from the simulator's workload samplers, and
//! latencies measured from each task's *intended* send time, so a stalled
//! sender or a slow system cannot hide latency (no coordinated omission).
//!
//! Every submitted task ends in exactly one of: completed, failed (with the
//! reason the scheduler or worker gave), timed out. Replies after the timeout,
//! duplicates and replies for unknown tasks are counted separately.

use std::collections::BTreeMap;
use std::net::UdpSocket;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use netsched_core::rng::Rng;
use netsched_proto::{
    task_id, HorusBody, HorusHeader, HorusMessage, HorusTask, Message, RackSchedMessage,
    RackSchedPacket, ReplyStatus, ReqId, MAX_DATAGRAM,
};
use netsched_sim::workload::ServiceSampler;

use crate::config::{ClientConfig, WireFamily};
use crate::net;
use crate::tasks::{TaskKind, GET_OBJECTS, ROCKS_PAYLOAD_LEN, SCAN_OBJECTS};
use crate::worker::RS_FAILED_CLASS;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Pending,
    Completed,
    Failed,
    TimedOut,
}

/// What a client run measured.
#[derive(Debug)]
pub struct ClientReport {
    pub submitted: u64,
    pub completed: u64,
    /// Failed tasks by reason (the reply's payload, or `send_error`).
    pub failed: BTreeMap<String, u64>,
    pub timed_out: u64,
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
}

impl ClientReport {
    pub fn failed_total(&self) -> u64 {
        self.failed.values().sum()
    }

    /// Every submitted task is accounted for exactly once.
    pub fn accounted(&self) -> bool {
        self.completed + self.failed_total() + self.timed_out == self.submitted
    }

    pub fn percentile_us(&self, q: f64) -> f64 {
        self.latency.value_at_quantile(q) as f64 / 1e3
    }

    /// JSON summary (latencies in µs), for scripts and result files.
    pub fn to_json(&self) -> String {
        let failed: Vec<String> = self
            .failed
            .iter()
            .map(|(k, v)| format!("\"{}\": {v}", k.replace(['"', '\\'], "_")))
            .collect();
        format!(
            "{{\"submitted\": {}, \"completed\": {}, \"failed\": {{{}}}, \"timed_out\": {}, \
             \"late_replies\": {}, \"duplicate_replies\": {}, \"unknown_replies\": {}, \
             \"p50_us\": {:.3}, \"p99_us\": {:.3}, \"p999_us\": {:.3}, \"max_us\": {:.3}, \
             \"mean_us\": {:.3}, \"send_window_ns\": {}, \"max_send_lag_ns\": {}, \
             \"histogram\": \"hdr, 3 significant digits\"}}",
            self.submitted,
            self.completed,
            failed.join(", "),
            self.timed_out,
            self.late_replies,
            self.duplicate_replies,
            self.unknown_replies,
            self.percentile_us(0.5),
            self.percentile_us(0.99),
            self.percentile_us(0.999),
            self.latency.max() as f64 / 1e3,
            self.latency.mean() / 1e3,
            self.send_window_ns,
            self.max_send_lag_ns,
        )
    }

    /// Human-readable summary, one `key=value` line.
    pub fn summary(&self) -> String {
        let failed: Vec<String> = self
            .failed
            .iter()
            .map(|(k, v)| format!("{k}:{v}"))
            .collect();
        format!(
            "submitted={} completed={} failed={} [{}] timed_out={} late={} dup={} unknown={} \
             p50_us={:.1} p99_us={:.1} p999_us={:.1} max_us={:.1} mean_us={:.1} \
             rate_achieved={:.0}/s max_send_lag_us={:.1}",
            self.submitted,
            self.completed,
            self.failed_total(),
            failed.join(","),
            self.timed_out,
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
        )
    }
}

/// An open-loop load generator.
pub struct Client {
    cfg: ClientConfig,
    sampler: ServiceSampler,
    sock: UdpSocket,
}

impl Client {
    /// A client on an already bound socket.
    pub fn new(cfg: ClientConfig, sock: UdpSocket) -> Result<Self, String> {
        cfg.validate()?;
        let sampler = cfg.service.build().map_err(|e| e.to_string())?;
        net::prepare(&sock).map_err(|e| e.to_string())?;
        Ok(Client { cfg, sampler, sock })
    }

    pub fn bind(cfg: ClientConfig) -> Result<Self, String> {
        let sock = UdpSocket::bind(&cfg.bind).map_err(|e| format!("{}: {e}", cfg.bind))?;
        Self::new(cfg, sock)
    }

    /// Submits for `duration_ms`, then waits for the last task's timeout.
    pub fn run(&mut self) -> ClientReport {
        let cfg = &self.cfg;
        let mut arrivals = Rng::derive(cfg.seed, 1);
        let mut service_rng = Rng::derive(cfg.seed, 2);
        let mut route_rng = Rng::derive(cfg.seed, 3);
        let mut key_rng = Rng::derive(cfg.seed, 4);
        let mut payload = [0u8; ROCKS_PAYLOAD_LEN];
        let total_w: f64 = cfg.targets.iter().map(|t| t.weight).sum();
        let cum: Vec<f64> = cfg
            .targets
            .iter()
            .scan(0.0, |acc, t| {
                *acc += t.weight / total_w;
                Some(*acc)
            })
            .collect();
        let window = cfg.duration_ms * 1_000_000;
        let timeout = cfg.timeout_ms * 1_000_000;
        let mean_gap_ns = 1e9 / cfg.rate;
        // Intended send times, ns since start; one entry per task.
        let expected = (cfg.rate * cfg.duration_ms as f64 / 1e3 * 1.2) as usize + 16;
        let mut intended: Vec<u64> = Vec::with_capacity(expected);
        let mut state: Vec<State> = Vec::with_capacity(expected);
        let mut hist = Histogram::<u64>::new_with_bounds(1_000, 100_000_000_000, 3)
            .expect("valid histogram bounds");
        let mut report_failed: BTreeMap<String, u64> = BTreeMap::new();
        let (mut completed, mut timed_out, mut late, mut dup, mut unknown) = (0u64, 0, 0, 0, 0);
        let mut rx = vec![0u8; 2048];
        let mut tx = vec![0u8; MAX_DATAGRAM];
        let mut next_at = exp_gap(&mut arrivals, mean_gap_ns);
        let mut oldest = 0usize;
        let mut max_lag = 0u64;
        let start = Instant::now();
        let ns = || start.elapsed().as_nanos() as u64;
        loop {
            let now = ns();
            // Send everything whose intended time has come (catching up in a
            // burst if the loop was late: the lag stays in the latencies).
            while next_at < window && next_at <= now {
                let seq = intended.len() as u32;
                let (service_ns, class) = self.sampler.sample(&mut service_rng);
                let u = route_rng.unit();
                let t = cum.iter().position(|&c| u < c).unwrap_or(cum.len() - 1);
                // RocksDB tasks: the class picks GET or SCAN (RackSched §4.4);
                // the work is the request itself, not a carried time.
                let (service_ns, plen) = if cfg.rocksdb_keys > 0 {
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
                    (0, kind.encode(&mut payload))
                } else {
                    (service_ns, 0)
                };
                let msg = match cfg.wire {
                    WireFamily::Horus => Message::Horus(HorusMessage {
                        header: HorusHeader {
                            pool_id: cfg.pool,
                            seq: seq as u16,
                            ..Default::default()
                        },
                        body: HorusBody::TaskFirst(HorusTask {
                            task_id: task_id::new(cfg.app_id, seq),
                            is_last: true,
                            idle_selected: false,
                            class,
                            service_time_ns: service_ns,
                            payload: &payload[..plen],
                        }),
                    }),
                    WireFamily::Racksched => {
                        Message::RackSched(RackSchedMessage::ReqFirst(RackSchedPacket {
                            req_id: ReqId {
                                client_id: cfg.app_id,
                                local_id: seq,
                            },
                            load: 0,
                            is_last: true,
                            class,
                            service_time_ns: service_ns,
                            payload: &payload[..plen],
                        }))
                    }
                };
                intended.push(next_at);
                let n = msg.encode(&mut tx).expect("task fits a datagram");
                match self.sock.send_to(&tx[..n], cfg.targets[t].addr) {
                    Ok(_) => state.push(State::Pending),
                    Err(_) => {
                        state.push(State::Failed);
                        *report_failed.entry("send_error".into()).or_default() += 1;
                    }
                }
                max_lag = max_lag.max(ns().saturating_sub(next_at));
                next_at += exp_gap(&mut arrivals, mean_gap_ns);
            }
            // Replies.
            while let Ok(Some((n, _))) = net::try_recv(&self.sock, &mut rx) {
                let at = ns();
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
                let seq = task_id::seq(r.task_id) as usize;
                if task_id::app_id(r.task_id) != cfg.app_id || seq >= state.len() {
                    unknown += 1;
                    continue;
                }
                match state[seq] {
                    State::Pending => {
                        if r.status == ReplyStatus::Ok {
                            state[seq] = State::Completed;
                            completed += 1;
                            let _ = hist.record(at.saturating_sub(intended[seq]).max(1_000));
                        } else {
                            state[seq] = State::Failed;
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
                    }
                    State::TimedOut => late += 1,
                    State::Completed | State::Failed => dup += 1,
                }
            }
            // Timeouts, oldest first (tasks are sent in intended-time order).
            let now = ns();
            while oldest < state.len() {
                match state[oldest] {
                    State::Pending if intended[oldest] + timeout <= now => {
                        state[oldest] = State::TimedOut;
                        timed_out += 1;
                    }
                    State::Pending => break,
                    _ => {}
                }
                oldest += 1;
            }
            if next_at >= window && oldest == state.len() {
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
        ClientReport {
            submitted: state.len() as u64,
            completed,
            failed: report_failed,
            timed_out,
            late_replies: late,
            duplicate_replies: dup,
            unknown_replies: unknown,
            latency: hist,
            send_window_ns: window.min(ns()),
            max_send_lag_ns: max_lag,
        }
    }
}

/// Exponential inter-arrival gap (Poisson process), at least 1 ns.
pub(crate) fn exp_gap(rng: &mut Rng, mean_ns: f64) -> u64 {
    ((-rng.unit_open0().ln() * mean_ns) as u64).max(1)
}
