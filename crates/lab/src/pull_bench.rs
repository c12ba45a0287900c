//! `netsched bench pull`: the pull runtime on loopback, one policy after
//! another in the same run (so the figures are comparable on a shared
//! machine).
//!
//! * **Throughput**: executors run empty tasks (`fn_par = 0`) and an
//!   open-loop client submits jobs of 8 tasks at `rate`; the daemon thread's
//!   own CPU time gives assignments per CPU-second (per core), meaningful
//!   even though client, executors and daemon share the machine's cores.
//! * **Saturation**: the same empty tasks, closed loop: the client keeps
//!   `window` tasks outstanding (more than the executors, so the scheduler
//!   never waits for work; few enough that no policy's queue overflows),
//!   with an unbounded job rate. Policies alternate round by round
//!   (`repeats` rounds) and the median of each is reported: assignments per
//!   wall second, the daemon thread's share of a core, and assignments per
//!   daemon CPU-second, the sustained rate one daemon core gives.
//! * **Latency against load**: `executors` executors with fixed `service_us`
//!   tasks, single-task jobs at each load; p50/p99 of the runtime's
//!   scheduling latency (`PullReport::scheduling`) and of the response time.

use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

use netsched_config::pull::PullPolicy;
use netsched_config::workload::ServiceDist;

use netsched_node::net;
use netsched_node::pull::client::{PullClient, PullReport};
use netsched_node::pull::config::{PullClientConfig, PullSwitchConfig, PullWorkerConfig};
use netsched_node::pull::error::PullError;
use netsched_node::pull::executor::PullWorker;
use netsched_node::pull::switch::PullDaemon;

#[derive(Clone, Debug)]
pub struct PullBenchOpts {
    pub policies: Vec<PullPolicy>,
    pub executors: usize,
    /// Tasks/s offered in the throughput part (jobs of 8 empty tasks).
    pub rate: f64,
    pub duration: Duration,
    /// Service time of the latency part, µs.
    pub service_us: f64,
    pub loads: Vec<f64>,
    /// Executors' no-op retry (§4.6), µs.
    pub retry_us: u64,
    /// Saturation part: tasks kept outstanding by the closed-loop client.
    pub window: u32,
    /// Saturation part: rounds over all policies (medians reported).
    pub repeats: usize,
}

impl Default for PullBenchOpts {
    fn default() -> Self {
        PullBenchOpts {
            policies: vec![
                PullPolicy::Draconis,
                PullPolicy::DraconisServer,
                PullPolicy::R2p2Recirc,
                PullPolicy::Sparrow,
            ],
            executors: 8,
            rate: 20_000.0,
            duration: Duration::from_secs(2),
            service_us: 1_000.0,
            loads: vec![0.2, 0.4, 0.6, 0.8],
            retry_us: 50,
            window: 32,
            repeats: 3,
        }
    }
}

/// Nominal job rate of a closed-loop client: far above anything a daemon
/// on this machine sustains, so the window alone paces submissions.
const UNBOUNDED_TASKS_PER_S: f64 = 10_000_000.0;

/// One run of one policy.
#[derive(Debug)]
pub struct PullRun {
    pub policy: PullPolicy,
    pub load: Option<f64>,
    pub report: PullReport,
    /// Assignments (dispatches, launches) the daemon made.
    pub decisions: u64,
    pub daemon_cpu_s: f64,
}

impl PullRun {
    pub fn decisions_per_cpu_s(&self) -> f64 {
        self.decisions as f64 / self.daemon_cpu_s.max(1e-9)
    }
}

/// Runs `client` against a fresh daemon and executors of `policy`.
fn run_once(
    policy: PullPolicy,
    executors: usize,
    retry_us: u64,
    client: impl FnOnce(SocketAddr) -> PullClientConfig,
) -> Result<(PullReport, u64, f64), PullError> {
    let socks: Vec<UdpSocket> = (0..executors)
        .map(|_| UdpSocket::bind("127.0.0.1:0"))
        .collect::<Result<_, _>>()?;
    let addrs: Vec<SocketAddr> = socks.iter().map(|s| s.local_addr().unwrap()).collect();
    let scfg = PullSwitchConfig::new("127.0.0.1:0", policy, addrs);
    let stop = Arc::new(AtomicBool::new(false));
    let cpu_ns = Arc::new(AtomicU64::new(0));
    let (tx, rx) = mpsc::channel();
    let daemon = {
        let (stop, cpu_ns) = (stop.clone(), cpu_ns.clone());
        std::thread::spawn(move || -> Result<(), PullError> {
            let mut d = PullDaemon::bind(&scfg)?;
            tx.send((d.local_addr(), d.registry()))
                .map_err(|_| PullError::DaemonDidNotStart)?;
            let t0 = net::thread_cpu_ns();
            d.run(&stop)?;
            cpu_ns.store(net::thread_cpu_ns() - t0, Ordering::Relaxed);
            Ok(())
        })
    };
    let (addr, registry) = rx
        .recv_timeout(Duration::from_secs(5))
        .map_err(|_| PullError::DaemonDidNotStart)?;
    let mut wcfg = PullWorkerConfig::new(addr, policy, vec![String::new(); executors]);
    wcfg.retry_us = retry_us;
    let wstop = Arc::new(AtomicBool::new(false));
    let workers = PullWorker::start(&wcfg, socks, wstop.clone())?;
    let report = PullClient::bind(client(addr))?.run();
    wstop.store(true, Ordering::Relaxed);
    workers.join();
    stop.store(true, Ordering::Relaxed);
    daemon.join().map_err(|_| PullError::DaemonPanicked)??;
    let decisions = registry.sum("netsched_decisions_total");
    Ok((
        report,
        decisions,
        cpu_ns.load(Ordering::Relaxed) as f64 / 1e9,
    ))
}

/// The throughput part, one run per policy.
pub fn throughput(o: &PullBenchOpts) -> Result<Vec<PullRun>, PullError> {
    o.policies
        .iter()
        .map(|&policy| {
            let (report, decisions, cpu) = run_once(policy, o.executors, o.retry_us, |addr| {
                let mut c = PullClientConfig::new(
                    addr,
                    o.rate,
                    o.duration.as_millis() as u64,
                    // 1 ns: the smallest valid service time, an empty task.
                    ServiceDist::Fixed { value_us: 0.001 },
                );
                c.job_tasks = 8;
                c.timeout_ms = 2_000;
                c
            })?;
            Ok(PullRun {
                policy,
                load: None,
                report,
                decisions,
                daemon_cpu_s: cpu,
            })
        })
        .collect()
}

/// One policy's saturation runs.
#[derive(Debug)]
pub struct SaturationRow {
    pub policy: PullPolicy,
    pub runs: Vec<PullRun>,
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    let n = xs.len();
    if n == 0 {
        0.0
    } else if n % 2 == 1 {
        xs[n / 2]
    } else {
        (xs[n / 2 - 1] + xs[n / 2]) / 2.0
    }
}

impl SaturationRow {
    fn wall_s(r: &PullRun) -> f64 {
        r.report.send_window_ns.max(1) as f64 / 1e9
    }

    /// Median assignments per wall second.
    pub fn assignments_per_s(&self) -> f64 {
        median(
            self.runs
                .iter()
                .map(|r| r.decisions as f64 / Self::wall_s(r))
                .collect(),
        )
    }

    /// Median share of one core the daemon thread used.
    pub fn daemon_core_share(&self) -> f64 {
        median(
            self.runs
                .iter()
                .map(|r| r.daemon_cpu_s / Self::wall_s(r))
                .collect(),
        )
    }

    /// Median assignments per daemon CPU-second.
    pub fn per_daemon_core(&self) -> f64 {
        median(self.runs.iter().map(PullRun::decisions_per_cpu_s).collect())
    }
}

/// The saturation part: `repeats` rounds, each running every policy once.
pub fn saturation(o: &PullBenchOpts) -> Result<Vec<SaturationRow>, PullError> {
    let mut rows: Vec<SaturationRow> = o
        .policies
        .iter()
        .map(|&policy| SaturationRow {
            policy,
            runs: Vec::new(),
        })
        .collect();
    for _ in 0..o.repeats {
        for row in rows.iter_mut() {
            let (report, decisions, cpu) = run_once(row.policy, o.executors, o.retry_us, |addr| {
                let mut c = PullClientConfig::new(
                    addr,
                    UNBOUNDED_TASKS_PER_S,
                    o.duration.as_millis() as u64,
                    ServiceDist::Fixed { value_us: 0.001 },
                );
                c.job_tasks = 8;
                c.max_outstanding = o.window;
                c.timeout_ms = 2_000;
                c
            })?;
            row.runs.push(PullRun {
                policy: row.policy,
                load: None,
                report,
                decisions,
                daemon_cpu_s: cpu,
            });
        }
    }
    Ok(rows)
}

/// A markdown table of the saturation medians.
pub fn saturation_table(rows: &[SaturationRow]) -> String {
    let mut s = String::from(
        "| policy | runs | completed / submitted (all runs) | assignments/s (wall) | daemon core share | assignments per daemon CPU-s | resubmitted |\n|---|---|---|---|---|---|---|\n",
    );
    for row in rows {
        let sum = |f: fn(&PullReport) -> u64| row.runs.iter().map(|r| f(&r.report)).sum::<u64>();
        s += &format!(
            "| {} | {} | {} / {} | {:.0} | {:.2} | {:.0} | {} |\n",
            row.policy.name(),
            row.runs.len(),
            sum(|p| p.completed),
            sum(|p| p.submitted),
            row.assignments_per_s(),
            row.daemon_core_share(),
            row.per_daemon_core(),
            sum(|p| p.timeout_resubmissions + p.error_resubmissions),
        );
    }
    s
}

/// The latency part: every policy at every load.
pub fn latency(o: &PullBenchOpts) -> Result<Vec<PullRun>, PullError> {
    let mut runs = Vec::new();
    let capacity = o.executors as f64 * 1e6 / o.service_us;
    for &load in &o.loads {
        for &policy in &o.policies {
            let (report, decisions, cpu) = run_once(policy, o.executors, o.retry_us, |addr| {
                let mut c = PullClientConfig::new(
                    addr,
                    load * capacity,
                    o.duration.as_millis() as u64,
                    ServiceDist::Fixed {
                        value_us: o.service_us,
                    },
                );
                // §8.3: "typically 5–10× the task execution time", plus room
                // for a loaded 2-core machine.
                c.timeout_ms = ((o.service_us * 50.0 / 1e3) as u64).max(50);
                c
            })?;
            runs.push(PullRun {
                policy,
                load: Some(load),
                report,
                decisions,
                daemon_cpu_s: cpu,
            });
        }
    }
    Ok(runs)
}

/// A markdown table of the throughput runs.
pub fn throughput_table(runs: &[PullRun]) -> String {
    let mut s = String::from(
        "| policy | tasks | completed | assignments/s (wall) | assignments per daemon CPU-s | resubmitted |\n|---|---|---|---|---|---|\n",
    );
    for r in runs {
        let wall = r.report.send_window_ns.max(1) as f64 / 1e9;
        s += &format!(
            "| {} | {} | {} | {:.0} | {:.0} | {} |\n",
            r.policy.name(),
            r.report.submitted,
            r.report.completed,
            r.decisions as f64 / wall,
            r.decisions_per_cpu_s(),
            r.report.timeout_resubmissions + r.report.error_resubmissions,
        );
    }
    s
}

/// A markdown table of the latency runs: scheduling p50/p99, response p99.
pub fn latency_table(runs: &[PullRun]) -> String {
    let mut s = String::from(
        "| load | policy | completed / submitted | scheduling p50 µs | scheduling p99 µs | response p99 µs | resubmitted |\n|---|---|---|---|---|---|---|\n",
    );
    for r in runs {
        let p = &r.report;
        s += &format!(
            "| {:.1} | {} | {} / {} | {:.1} | {:.1} | {:.1} | {} |\n",
            r.load.unwrap_or(0.0),
            r.policy.name(),
            p.completed,
            p.submitted,
            p.scheduling_us(0.5),
            p.scheduling_us(0.99),
            p.response_us(0.99),
            p.timeout_resubmissions + p.error_resubmissions,
        );
    }
    s
}
