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

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};
use std::net::UdpSocket;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use netsched_config::workload::ServiceSampler;
use netsched_core::rng::Rng;
use netsched_proto::{
    task_id, CompletionStatus, DraconisMessage, Message, TaskVec, WireTask, MAX_DATAGRAM,
    MAX_PULL_TASKS,
};

use super::config::PullClientConfig;
use super::error::PullError;
use super::executor::{FN_ROCKS_GET, FN_ROCKS_SCAN, FN_SYNTHETIC};
use crate::client::exp_gap;
use crate::net;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Pending,
    Completed,
    Failed,
    TimedOut,
}

/// One task of the run.
#[derive(Clone, Copy)]
struct Task {
    spec: WireTask,
    intended: u64,
    state: State,
    /// Sends so far; a deadline names the send it belongs to.
    sends: u16,
    timeouts: u16,
    /// Times the task came back in an error packet.
    returns: u16,
}

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
             \"timeout_resubmissions\": {}, \"error_resubmissions\": {}, \"error_packets\": {}, \
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
             resubmitted(error)={} error_packets={} dup={} late={} unknown={} \
             sched_p50_us={:.1} sched_p99_us={:.1} resp_p50_us={:.1} resp_p99_us={:.1} \
             rate_achieved={:.0}/s",
            self.submitted,
            self.completed,
            self.failed_total(),
            self.timed_out,
            self.timeout_resubmissions,
            self.error_resubmissions,
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
        let timeout = cfg.timeout_ms * 1_000_000;
        let backoff = cfg.error_backoff_us * 1_000;
        let mean_job_gap_ns = 1e9 * cfg.job_tasks as f64 / cfg.rate;
        // Preallocated for the open-loop rate, capped: a closed-loop
        // client's nominal rate can be far above what it will submit.
        let expected = ((cfg.rate * cfg.duration_ms as f64 / 1e3 * 1.2) as usize + 16).min(1 << 20);
        let closed = cfg.max_outstanding > 0;
        let room = |unresolved: u64| {
            !closed || unresolved + cfg.job_tasks as u64 <= cfg.max_outstanding as u64
        };
        let mut tasks: Vec<Task> = Vec::with_capacity(expected);
        // (deadline, task, send number), earliest first.
        let mut deadlines: BinaryHeap<Reverse<(u64, u32, u16)>> =
            BinaryHeap::with_capacity(expected);
        let backoff_timeout = |timeouts: u16| timeout << timeouts.min(6);
        // (due, task): tasks returned in error packets.
        let mut retries: BinaryHeap<Reverse<(u64, u32)>> = BinaryHeap::new();
        let hist = || {
            Histogram::<u64>::new_with_bounds(1_000, 100_000_000_000, 3)
                .expect("valid histogram bounds")
        };
        let mut response = hist();
        let mut scheduling = hist();
        let mut failed: BTreeMap<String, u64> = BTreeMap::new();
        let (mut completed, mut timed_out, mut late, mut dup, mut unknown) = (0u64, 0u64, 0, 0, 0);
        let (mut to_resub, mut err_resub, mut err_pkts, mut acks, mut acked) =
            (0u64, 0u64, 0, 0, 0);
        let mut unresolved = 0u64;
        let mut rx = [0u8; MAX_DATAGRAM];
        let mut tx = [0u8; MAX_DATAGRAM];
        let mut next_job_at = exp_gap(&mut arrivals, mean_job_gap_ns);
        let mut job_seq: u32 = 0;
        let mut max_lag = 0u64;
        let start = Instant::now();
        let ns = || start.elapsed().as_nanos() as u64;
        // A hard end, so a dead scheduler cannot hang the client.
        let hard_end = window
            + (0..cfg.max_attempts.min(64) as u16 + 2)
                .map(backoff_timeout)
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
            while next_job_at < window && next_job_at <= now && room(unresolved) {
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
                    let seq = tasks.len() as u32;
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
                    tasks.push(Task {
                        spec,
                        intended,
                        state: State::Pending,
                        sends: 1,
                        timeouts: 0,
                        returns: 0,
                    });
                    unresolved += 1;
                    deadlines.push(Reverse((now + timeout, seq, 1)));
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
                        let seq = task_id::seq(id) as usize;
                        let Some(t) = tasks.get_mut(seq).filter(|_| task_id::app_id(id) == app)
                        else {
                            unknown += 1;
                            continue;
                        };
                        match t.state {
                            State::Pending => {
                                unresolved -= 1;
                                if status == CompletionStatus::Ok {
                                    t.state = State::Completed;
                                    completed += 1;
                                    let r = at.saturating_sub(t.intended).max(1_000);
                                    let _ = response.record(r);
                                    let _ = scheduling.record(r.saturating_sub(exec_ns).max(1_000));
                                } else {
                                    t.state = State::Failed;
                                    *failed.entry("executor_failed".into()).or_default() += 1;
                                }
                            }
                            State::TimedOut => late += 1,
                            State::Completed | State::Failed => dup += 1,
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
                            match tasks.get_mut(seq as usize) {
                                Some(x)
                                    if x.state == State::Pending
                                        && task_id::app_id(t.id) == app =>
                                {
                                    // Doubling backoff: a scheduler that keeps
                                    // refusing is full, and an immediate
                                    // resubmission only fills it again.
                                    x.returns = x.returns.saturating_add(1);
                                    let wait = backoff << (x.returns - 1).min(6);
                                    retries.push(Reverse((at + wait, seq)))
                                }
                                Some(_) => {}
                                None => unknown += 1,
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
            while let Some(&Reverse((due, seq))) = retries.peek() {
                if due > now {
                    break;
                }
                retries.pop();
                let t = &mut tasks[seq as usize];
                if t.state != State::Pending {
                    continue;
                }
                err_resub += 1;
                t.sends += 1;
                deadlines.push(Reverse((now + backoff_timeout(t.timeouts), seq, t.sends)));
                out.tasks.push(t.spec);
                resent = true;
                if out.tasks.len() == MAX_PULL_TASKS {
                    send_packet(&mut out, &mut tx);
                }
            }
            while let Some(&Reverse((due, seq, send))) = deadlines.peek() {
                if due > now {
                    break;
                }
                deadlines.pop();
                let t = &mut tasks[seq as usize];
                if t.state != State::Pending || t.sends != send {
                    continue; // answered, or superseded by a later send
                }
                t.timeouts += 1;
                if t.timeouts as u32 >= cfg.max_attempts {
                    t.state = State::TimedOut;
                    timed_out += 1;
                    unresolved -= 1;
                    continue;
                }
                to_resub += 1;
                t.sends += 1;
                deadlines.push(Reverse((now + backoff_timeout(t.timeouts), seq, t.sends)));
                out.tasks.push(t.spec);
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
            if next_job_at >= window && unresolved == 0 {
                break;
            }
            if now >= hard_end {
                // Cannot happen while timeouts work; kept so a bug cannot
                // hang a test. Whatever is left counts as timed out.
                for t in tasks.iter_mut().filter(|t| t.state == State::Pending) {
                    t.state = State::TimedOut;
                    timed_out += 1;
                }
                break;
            }
            let next_due = [
                // A closed-loop client without room waits for an answer.
                (next_job_at < window && room(unresolved)).then_some(next_job_at),
                retries.peek().map(|r| r.0 .0),
                deadlines.peek().map(|d| d.0 .0),
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
        PullReport {
            submitted: tasks.len() as u64,
            completed,
            failed,
            timed_out,
            timeout_resubmissions: to_resub,
            error_resubmissions: err_resub,
            error_packets: err_pkts,
            acks,
            acked_tasks: acked,
            duplicates: dup,
            late,
            unknown,
            response,
            scheduling,
            send_window_ns: window.min(ns()),
            max_send_lag_ns: max_lag,
        }
    }
}
