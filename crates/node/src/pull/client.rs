//! The pull client (`netsched client` with `scheduler` set): jobs of tasks
//! submitted open loop to a pull scheduler (Draconis §4.1, §4.3).
//!
//! Jobs arrive as a Poisson process at `rate / job_tasks` jobs per second;
//! a job of more tasks than one packet holds is split across
//! job_submission packets (§4.3). Latencies are measured from each task's
//! *intended* submission time (no coordinated omission).
//!
//! Every task ends exactly once as completed, failed (an executor could not
//! run it) or timed out (`max_attempts` attempts without a completion):
//! * a task returned in an error packet (queue full, §4.3; an R2P2 budget or
//!   Sparrow overflow) is resubmitted after `error_backoff_us`, doubled at
//!   each return of the same task (capped at 64×);
//! * an attempt without a completion after `timeout_ms` is resubmitted
//!   (§8.3: clients resubmit on timeout), which is how a scheduler restart
//!   that lost its queue is survived. Each further attempt of a task waits
//!   twice as long (capped at 64 × `timeout_ms`): a fixed timeout below the
//!   queueing delay of an overloaded system would resubmit every task again
//!   and again, adding load exactly when there is none to spare.
//!
//! Completions after a resubmission can arrive twice; the first counts, the
//! rest are `duplicates`.
//!
//! Every one of those decisions is `netsched_core::client::TaskTracker`'s,
//! the state machine the pull simulator's clients drive too; this loop owns
//! the socket and the clock. (The runtime's acknowledgments count a job's
//! queued tasks but name none, so they do not stop a timeout here.)

use std::collections::BTreeMap;
use std::net::UdpSocket;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use netsched_config::workload::ServiceSampler;
use netsched_core::client::{Expiry, ReplyOutcome, RetryPolicy, TaskTracker};
use netsched_core::retry_budget::RetryBudget;
use netsched_core::rng::Rng;
use netsched_core::Nanos;
use netsched_proto::{
    task_id, CompletionStatus, DraconisMessage, Message, TaskVec, WireTask, MAX_DATAGRAM,
    MAX_PULL_TASKS,
};

use super::config::PullClientConfig;
use super::error::PullError;
use super::executor::{FN_ROCKS_GET, FN_ROCKS_SCAN, FN_SYNTHETIC};
use crate::client::exp_gap;
use crate::net;

/// Doublings of the timeout per attempt and of the error backoff per
/// return, at most (64×).
const MAX_DOUBLINGS: u32 = 6;

/// What a pull client run measured.
#[derive(Debug)]
pub struct PullReport {
    pub submitted: u64,
    pub completed: u64,
    /// Failed tasks by reason.
    pub failed: BTreeMap<String, u64>,
    pub timed_out: u64,
    /// Attempts resubmitted after `timeout_ms`.
    pub timeout_resubmissions: u64,
    /// Tasks resubmitted after coming back in an error packet.
    pub error_resubmissions: u64,
    /// Resubmissions the retry budget put off (each time one was due).
    pub retries_deferred: u64,
    pub error_packets: u64,
    pub acks: u64,
    /// Tasks the acknowledgments counted as queued.
    pub acked_tasks: u64,
    pub duplicates: u64,
    /// Completions after their task timed out for good.
    pub late: u64,
    pub unknown: u64,
    /// Intended submission to completion received, ns; HDR, 3 significant
    /// digits (relative error ≤ 0.1 %).
    pub response: Histogram<u64>,
    /// Response less the executor's run time: queueing, scheduling and the
    /// network both ways (the runtime's measure of Draconis §8's scheduling
    /// latency; it includes the completion's trip, the simulator's does not).
    pub scheduling: Histogram<u64>,
    pub send_window_ns: u64,
    pub max_send_lag_ns: u64,
}

impl PullReport {
    pub fn failed_total(&self) -> u64 {
        self.failed.values().sum()
    }

    /// Every submitted task is accounted for exactly once.
    pub fn accounted(&self) -> bool {
        self.completed + self.failed_total() + self.timed_out == self.submitted
    }

    /// Quantile `q` of a histogram of ns, in µs.
    fn quantile_us(h: &Histogram<u64>, q: f64) -> f64 {
        h.value_at_quantile(q) as f64 / 1e3
    }

    pub fn response_us(&self, q: f64) -> f64 {
        Self::quantile_us(&self.response, q)
    }

    pub fn scheduling_us(&self, q: f64) -> f64 {
        Self::quantile_us(&self.scheduling, q)
    }

    /// JSON summary (latencies in µs).
    pub fn to_json(&self) -> String {
        let failed: Vec<String> = self
            .failed
            .iter()
            .map(|(k, v)| format!("\"{}\": {v}", k.replace(['"', '\\'], "_")))
            .collect();
        format!(
            "{{\"submitted\": {}, \"completed\": {}, \"failed\": {{{}}}, \"timed_out\": {}, \
             \"timeout_resubmissions\": {}, \"error_resubmissions\": {}, \"retries_deferred\": {}, \
             \"error_packets\": {}, \
             \"acks\": {}, \"acked_tasks\": {}, \"duplicates\": {}, \"late\": {}, \"unknown\": {}, \
             \"response_p50_us\": {:.3}, \"response_p99_us\": {:.3}, \
             \"scheduling_p50_us\": {:.3}, \"scheduling_p99_us\": {:.3}, \"scheduling_p999_us\": {:.3}, \
             \"send_window_ns\": {}, \"max_send_lag_ns\": {}, \
             \"histogram\": \"hdr, 3 significant digits\"}}",
            self.submitted,
            self.completed,
            failed.join(", "),
            self.timed_out,
            self.timeout_resubmissions,
            self.error_resubmissions,
            self.retries_deferred,
            self.error_packets,
            self.acks,
            self.acked_tasks,
            self.duplicates,
            self.late,
            self.unknown,
            self.response_us(0.5),
            self.response_us(0.99),
            self.scheduling_us(0.5),
            self.scheduling_us(0.99),
            self.scheduling_us(0.999),
            self.send_window_ns,
            self.max_send_lag_ns,
        )
    }

    /// One `key=value` line.
    pub fn summary(&self) -> String {
        format!(
            "submitted={} completed={} failed={} timed_out={} resubmitted(timeout)={} \
             resubmitted(error)={} deferred={} error_packets={} dup={} late={} unknown={} \
             sched_p50_us={:.1} sched_p99_us={:.1} resp_p50_us={:.1} resp_p99_us={:.1} \
             rate_achieved={:.0}/s",
            self.submitted,
            self.completed,
            self.failed_total(),
            self.timed_out,
            self.timeout_resubmissions,
            self.error_resubmissions,
            self.retries_deferred,
            self.error_packets,
            self.duplicates,
            self.late,
            self.unknown,
            self.scheduling_us(0.5),
            self.scheduling_us(0.99),
            self.response_us(0.5),
            self.response_us(0.99),
            self.submitted as f64 / (self.send_window_ns.max(1) as f64 / 1e9),
        )
    }
}

/// An open-loop job generator for a pull scheduler.
pub struct PullClient {
    cfg: PullClientConfig,
    sampler: ServiceSampler,
    sock: UdpSocket,
}

/// Tasks waiting to go out in the next job_submission packet.
struct Outgoing {
    tasks: TaskVec,
    job: u64,
}

impl PullClient {
    pub fn new(cfg: PullClientConfig, sock: UdpSocket) -> Result<Self, PullError> {
        cfg.validate()?;
        let sampler = cfg.service.build()?;
        net::prepare(&sock)?;
        Ok(PullClient { cfg, sampler, sock })
    }

    pub fn bind(cfg: PullClientConfig) -> Result<Self, PullError> {
        let sock = UdpSocket::bind(&cfg.bind).map_err(|e| PullError::bind(&cfg.bind, e))?;
        Self::new(cfg, sock)
    }

    pub fn local_addr(&self) -> std::net::SocketAddr {
        self.sock.local_addr().expect("bound socket")
    }

    /// Submits for `duration_ms`, then waits until every task is resolved.
    pub fn run(&mut self) -> PullReport {
        let cfg = self.cfg.clone();
        let mut arrivals = Rng::derive(cfg.seed, 1);
        let mut service_rng = Rng::derive(cfg.seed, 2);
        let mut prio_rng = Rng::derive(cfg.seed, 3);
        let mut key_rng = Rng::derive(cfg.seed, 4);
        let prio_cum: Vec<f64> = {
            let total: f64 = cfg.priority_weights.iter().sum();
            cfg.priority_weights
                .iter()
                .scan(0.0, |acc, w| {
                    *acc += w / total;
                    Some(*acc)
                })
                .collect()
        };
        let window = cfg.duration_ms * 1_000_000;
        let timeout = Nanos::from_millis(cfg.timeout_ms);
        let backoff = Nanos::from_micros(cfg.error_backoff_us);
        let mean_job_gap_ns = 1e9 * cfg.job_tasks as f64 / cfg.rate;
        // Preallocated for the open-loop rate, capped: a closed-loop
        // client's nominal rate can be far above what it will submit.
        let expected = ((cfg.rate * cfg.duration_ms as f64 / 1e3 * 1.2) as usize + 16).min(1 << 20);
        let closed = cfg.max_outstanding > 0;
        let room = |unresolved: u64| {
            !closed || unresolved + cfg.job_tasks as u64 <= cfg.max_outstanding as u64
        };
        let policy = RetryPolicy {
            timeout,
            max_attempts: cfg.max_attempts,
            max_doublings: MAX_DOUBLINGS,
            backoff,
            max_backoff_doublings: MAX_DOUBLINGS,
        };
        let b = cfg.retry_budget;
        let mut tracker = TaskTracker::new(policy, expected).with_retry_budget(RetryBudget::new(
            b.ratio,
            b.min_per_s,
            b.burst,
        ));
        // What each task's packets carry, by sequence number.
        let mut specs: Vec<WireTask> = Vec::with_capacity(expected);
        let hist = || {
            Histogram::<u64>::new_with_bounds(1_000, 100_000_000_000, 3)
                .expect("valid histogram bounds")
        };
        let mut response = hist();
        let mut scheduling = hist();
        let mut failed: BTreeMap<String, u64> = BTreeMap::new();
        let (mut unknown, mut err_pkts, mut acks, mut acked) = (0u64, 0u64, 0u64, 0u64);
        let mut rx = [0u8; MAX_DATAGRAM];
        let mut tx = [0u8; MAX_DATAGRAM];
        let mut next_job_at = exp_gap(&mut arrivals, mean_job_gap_ns);
        let mut job_seq: u32 = 0;
        let mut max_lag = 0u64;
        let start = Instant::now();
        let ns = || start.elapsed().as_nanos() as u64;
        // A hard end, so a dead scheduler cannot hang the client.
        let hard_end = window
            + (0..cfg.max_attempts.min(64) + 2)
                .map(|k| policy.timeout_after(k).get())
                .sum::<u64>()
            + 1_000_000_000;
        let app = cfg.app_id;
        let sock = &self.sock;
        let dst = cfg.scheduler;
        let send_packet = |out: &mut Outgoing, tx: &mut [u8]| -> bool {
            if out.tasks.is_empty() {
                return true;
            }
            let msg = Message::Draconis(DraconisMessage::JobSubmission {
                job: out.job,
                tasks: out.tasks,
            });
            out.tasks = TaskVec::new();
            match msg.encode(tx) {
                Ok(n) => sock.send_to(&tx[..n], dst).is_ok(),
                Err(_) => false,
            }
        };
        loop {
            let now = ns();
            // New jobs whose intended time has come.
            while next_job_at < window && next_job_at <= now && room(tracker.unresolved()) {
                // Closed loop: the job goes now, when room freed, so its
                // latency does not include the wait for room.
                let intended = if closed { now } else { next_job_at };
                let job = task_id::new(app, job_seq);
                job_seq = job_seq.wrapping_add(1);
                let mut out = Outgoing {
                    tasks: TaskVec::new(),
                    job,
                };
                for _ in 0..cfg.job_tasks {
                    let seq = tracker.len() as u32;
                    let (service_ns, class) = self.sampler.sample(&mut service_rng);
                    let (fn_id, fn_par) = if cfg.rocksdb_keys > 0 {
                        let key = (key_rng.unit() * cfg.rocksdb_keys as f64) as u64;
                        (
                            if class == 0 {
                                FN_ROCKS_GET
                            } else {
                                FN_ROCKS_SCAN
                            },
                            key,
                        )
                    } else {
                        (FN_SYNTHETIC, service_ns)
                    };
                    let priority = if prio_cum.is_empty() {
                        1
                    } else {
                        let u = prio_rng.unit();
                        prio_cum
                            .iter()
                            .position(|&c| u < c)
                            .unwrap_or(prio_cum.len() - 1) as u8
                            + 1
                    };
                    let spec = WireTask {
                        id: task_id::new(app, seq),
                        fn_id,
                        priority,
                        fn_par,
                        props: cfg.props,
                    };
                    tracker.submit(Nanos::new(intended), Some(Nanos::new(now)));
                    specs.push(spec);
                    out.tasks.push(spec);
                    if out.tasks.len() == MAX_PULL_TASKS {
                        send_packet(&mut out, &mut tx);
                    }
                }
                send_packet(&mut out, &mut tx);
                max_lag = max_lag.max(ns().saturating_sub(intended));
                next_job_at = if closed {
                    // Gaps from the actual submission: the rate caps, the
                    // window paces.
                    now.max(next_job_at)
                } else {
                    next_job_at
                } + exp_gap(&mut arrivals, mean_job_gap_ns);
            }
            // Answers.
            while let Ok(Some((n, _))) = net::try_recv(sock, &mut rx) {
                let at = ns();
                match Message::decode(&rx[..n]) {
                    Ok(Message::Draconis(DraconisMessage::Completion {
                        task_id: id,
                        exec_ns,
                        status,
                        ..
                    })) => {
                        let seq = task_id::seq(id);
                        if task_id::app_id(id) != app {
                            unknown += 1;
                            continue;
                        }
                        match tracker.on_reply(seq, status == CompletionStatus::Ok) {
                            ReplyOutcome::Completed => {
                                let intended = tracker.intended(seq).expect("a known task").get();
                                let r = at.saturating_sub(intended).max(1_000);
                                let _ = response.record(r);
                                let _ = scheduling.record(r.saturating_sub(exec_ns).max(1_000));
                            }
                            ReplyOutcome::Failed => {
                                *failed.entry("executor_failed".into()).or_default() += 1;
                            }
                            ReplyOutcome::Unknown => unknown += 1,
                            ReplyOutcome::Late | ReplyOutcome::Duplicate => {}
                        }
                    }
                    Ok(Message::Draconis(DraconisMessage::Ack { accepted, .. })) => {
                        acks += 1;
                        acked += accepted as u64;
                    }
                    Ok(Message::Draconis(DraconisMessage::ErrorPacket { tasks: back })) => {
                        err_pkts += 1;
                        for t in back.as_slice() {
                            let seq = task_id::seq(t.id);
                            if seq as usize >= tracker.len() {
                                unknown += 1;
                            } else if task_id::app_id(t.id) == app {
                                // Doubling backoff: a scheduler that keeps
                                // refusing is full, and an immediate
                                // resubmission only fills it again. The
                                // packet does not say which send came back.
                                tracker.on_returned(seq, None, Nanos::new(at));
                            }
                        }
                    }
                    _ => unknown += 1,
                }
            }
            // Resubmissions: returned tasks whose backoff passed, then
            // attempts whose timeout passed; batched into packets.
            let now = ns();
            let mut out = Outgoing {
                tasks: TaskVec::new(),
                job: task_id::new(app, job_seq),
            };
            let mut resent = false;
            while let Some(expiry) = tracker.expire(Nanos::new(now)) {
                let (Expiry::Retry { seq, .. } | Expiry::Resubmit { seq, .. }) = expiry else {
                    continue; // timed out for good
                };
                out.tasks.push(specs[seq as usize]);
                resent = true;
                if out.tasks.len() == MAX_PULL_TASKS {
                    send_packet(&mut out, &mut tx);
                }
            }
            send_packet(&mut out, &mut tx);
            if resent {
                job_seq = job_seq.wrapping_add(1);
            }
            let now = ns();
            if next_job_at >= window && tracker.unresolved() == 0 {
                break;
            }
            if now >= hard_end {
                // Reached when the retry budget holds resubmissions back
                // longer than the timeouts would run (a dead or swamped
                // scheduler): the client stops waiting, and whatever is
                // left counts as timed out.
                tracker.give_up_all();
                break;
            }
            let next_due = [
                // A closed-loop client without room waits for an answer.
                (next_job_at < window && room(tracker.unresolved())).then_some(next_job_at),
                tracker.next_deadline().map(Nanos::get),
            ]
            .into_iter()
            .flatten()
            .min()
            .unwrap_or(now + 1_000_000);
            let wait = next_due.saturating_sub(ns());
            if wait > 50_000 {
                net::wait_readable(sock, Duration::from_nanos(wait.min(1_000_000) - 50_000));
            } else {
                std::hint::spin_loop();
            }
        }
        let tally = tracker.tally();
        PullReport {
            submitted: tally.submitted,
            completed: tally.completed,
            failed,
            timed_out: tally.timed_out,
            timeout_resubmissions: tally.resubmitted,
            error_resubmissions: tally.retried,
            retries_deferred: tally.deferred,
            error_packets: err_pkts,
            acks,
            acked_tasks: acked,
            duplicates: tally.duplicates,
            late: tally.late,
            unknown,
            response,
            scheduling,
            send_window_ns: window.min(ns()),
            max_send_lag_ns: max_lag,
        }
    }
}
