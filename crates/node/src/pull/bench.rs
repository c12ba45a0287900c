//! `netsched bench pull`: the pull runtime on loopback, one policy after
//! another in the same run (so the figures are comparable on a shared
//! machine).
//!
//! * **Throughput**: executors run empty tasks (`fn_par = 0`) and an
//!   open-loop client submits jobs of 8 tasks at `rate`; the daemon thread's
//!   own CPU time gives assignments per CPU-second (per core), meaningful
//!   even though client, executors and daemon share the machine's cores.
//! * **Latency against load**: `executors` executors with fixed `service_us`
//!   tasks, single-task jobs at each load; p50/p99 of the runtime's
//!   scheduling latency (`PullReport::scheduling`) and of the response time.

use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

use netsched_sim::pull::PullPolicy;
use netsched_sim::workload::ServiceDist;

use super::client::{PullClient, PullReport};
use super::config::{PullClientConfig, PullSwitchConfig, PullWorkerConfig};
use super::executor::PullWorker;
use super::switch::PullDaemon;
use crate::net;

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
}

impl Default for PullBenchOpts {
    fn default() -> Self {
        PullBenchOpts {
            policies: vec![
                PullPolicy::Draconis,
                PullPolicy::DraconisServer,
                PullPolicy::R2p2,
                PullPolicy::Sparrow,
            ],
            executors: 8,
            rate: 20_000.0,
            duration: Duration::from_secs(2),
            service_us: 1_000.0,
            loads: vec![0.2, 0.4, 0.6, 0.8],
            retry_us: 50,
        }
    }
}

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
) -> Result<(PullReport, u64, f64), String> {
    let socks: Vec<UdpSocket> = (0..executors)
        .map(|_| UdpSocket::bind("127.0.0.1:0").map_err(|e| e.to_string()))
        .collect::<Result<_, _>>()?;
    let addrs: Vec<SocketAddr> = socks.iter().map(|s| s.local_addr().unwrap()).collect();
    let scfg = PullSwitchConfig::new("127.0.0.1:0", policy, addrs);
    let stop = Arc::new(AtomicBool::new(false));
    let cpu_ns = Arc::new(AtomicU64::new(0));
    let (tx, rx) = mpsc::channel();
    let daemon = {
        let (stop, cpu_ns) = (stop.clone(), cpu_ns.clone());
        std::thread::spawn(move || -> Result<(), String> {
            let mut d = PullDaemon::bind(&scfg)?;
            tx.send((d.local_addr(), d.registry()))
                .map_err(|e| e.to_string())?;
            let t0 = net::thread_cpu_ns();
            d.run(&stop).map_err(|e| e.to_string())?;
            cpu_ns.store(net::thread_cpu_ns() - t0, Ordering::Relaxed);
            Ok(())
        })
    };
    let (addr, registry) = rx
        .recv_timeout(Duration::from_secs(5))
        .map_err(|_| "pull daemon did not start".to_string())?;
    let mut wcfg = PullWorkerConfig::new(addr, policy, vec![String::new(); executors]);
    wcfg.retry_us = retry_us;
    let wstop = Arc::new(AtomicBool::new(false));
    let workers = PullWorker::start(&wcfg, socks, wstop.clone())?;
    let report = PullClient::bind(client(addr))?.run();
    wstop.store(true, Ordering::Relaxed);
    workers.join();
    stop.store(true, Ordering::Relaxed);
    daemon
        .join()
        .map_err(|_| "pull daemon panicked".to_string())??;
    let decisions = registry.sum("netsched_pull_decisions_total");
    Ok((
        report,
        decisions,
        cpu_ns.load(Ordering::Relaxed) as f64 / 1e9,
    ))
}

/// The throughput part, one run per policy.
pub fn throughput(o: &PullBenchOpts) -> Result<Vec<PullRun>, String> {
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

/// The latency part: every policy at every load.
pub fn latency(o: &PullBenchOpts) -> Result<Vec<PullRun>, String> {
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
