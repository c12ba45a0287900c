//! The pull simulator's outputs, in `netsched sim`'s conventions: a table on
//! stdout, `runs.csv` (one row per (policy, load) run; `p50_us`/`p99_us` are
//! the scheduling latency, so `python3 -m netsched plot pull` plots it as is) and
//! `summary.json` (the config and every run's [`PullSummary`]).

use std::fmt::Write as _;
use std::path::Path;

use serde::Serialize;

use super::{PullConfig, PullRun, PullSummary};
use crate::ns::ns_to_us;

pub fn summaries(cfg: &PullConfig, runs: &[PullRun]) -> Vec<PullSummary> {
    let locality = cfg.workload.locality.is_some();
    runs.iter().map(|r| PullSummary::of(r, locality)).collect()
}

/// A fixed-width table: scheduling latency p50/p99 (µs) per run, decisions
/// per second, drops, recirculated fraction, timeouts, and per priority
/// level p50/p99 when the workload has levels.
pub fn table(cfg: &PullConfig, sums: &[PullSummary]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{:<18} {:>5} {:>10} {:>10} {:>10} {:>12} {:>7} {:>8} {:>8} {:>7} {:>6}",
        "policy",
        "load",
        "tasks/s",
        "p50 µs",
        "p99 µs",
        "decisions/s",
        "drops",
        "recirc%",
        "timeouts",
        "gave_up",
        "util"
    );
    // A run in which no measured task started (a collapsed scheduler) has no
    // latency to show, not a latency of 0.
    let lat = |count: u64, ns: u64| {
        if count == 0 {
            "n/a".to_string()
        } else {
            format!("{:.2}", ns_to_us(ns))
        }
    };
    for r in sums {
        let _ = writeln!(
            s,
            "{:<18} {:>5.2} {:>10.0} {:>10} {:>10} {:>12.0} {:>7} {:>8.3} {:>8} {:>7} {:>6.3}",
            r.policy,
            r.load,
            r.offered_tps,
            lat(r.sched.count, r.sched.p50_ns),
            lat(r.sched.count, r.sched.p99_ns),
            r.decisions_per_s,
            r.dropped,
            r.recirc_fraction * 100.0,
            r.timeouts,
            r.gave_up,
            r.utilization
        );
    }
    if cfg.workload.priority_weights.len() > 1 {
        let _ = writeln!(s, "scheduling latency per priority level (p50 / p99 µs):");
        for r in sums {
            let levels: Vec<String> = r
                .sched_by_level
                .iter()
                .enumerate()
                .map(|(i, l)| {
                    format!(
                        "L{} {:.1}/{:.1}",
                        i + 1,
                        ns_to_us(l.p50_ns),
                        ns_to_us(l.p99_ns)
                    )
                })
                .collect();
            let _ = writeln!(
                s,
                "  {:<18} {:>5.2}  {}",
                r.policy,
                r.load,
                levels.join("  ")
            );
        }
    }
    if cfg.workload.locality.is_some() {
        let _ = writeln!(
            s,
            "placement (data node / rack / remote) and response p50/p99 µs:"
        );
        for r in sums {
            if let Some(p) = r.placement {
                let _ = writeln!(
                    s,
                    "  {:<18} {:>5.2}  {:.1}% / {:.1}% / {:.1}%  response {:.1}/{:.1}",
                    r.policy,
                    r.load,
                    p[0] * 100.0,
                    p[1] * 100.0,
                    p[2] * 100.0,
                    ns_to_us(r.response.p50_ns),
                    ns_to_us(r.response.p99_ns)
                );
            }
        }
    }
    if cfg.workload.resource_phases {
        let _ = writeln!(
            s,
            "tasks per node per second, groups G1/G2/G3, phases A | B | C:"
        );
        for r in sums {
            if let Some(res) = &r.resource {
                let t = &res.tasks_per_node_per_s;
                let _ = writeln!(
                    s,
                    "  {:<18} {:>5.2}  A {:.0}/{:.0}/{:.0} | B {:.0}/{:.0}/{:.0} | C {:.0}/{:.0}/{:.0}  drain {:.0} µs",
                    r.policy,
                    r.load,
                    t[0][0],
                    t[1][0],
                    t[2][0],
                    t[0][1],
                    t[1][1],
                    t[2][1],
                    t[0][2],
                    t[1][2],
                    t[2][2],
                    res.drain_us
                );
            }
        }
    }
    s
}

#[derive(Serialize)]
struct SummaryJson<'a> {
    /// Which netsched produced the file.
    netsched: netsched_config::build_info::BuildInfo,
    config: &'a PullConfig,
    runs: &'a [PullSummary],
}

/// Writes `runs.csv` and `summary.json` into `dir`.
pub fn write_outputs(dir: &Path, cfg: &PullConfig, sums: &[PullSummary]) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let levels = sums
        .iter()
        .map(|r| r.sched_by_level.len())
        .max()
        .unwrap_or(1);
    let mut csv = String::from(
        "policy,load,offered_tps,p50_us,p99_us,p999_us,mean_us,response_p50_us,response_p99_us,\
         submitted,completed,gave_up,timeouts,resubmissions,error_tasks,duplicate_executions,\
         dropped,decisions,decisions_per_s,noops,first_passes,recirculations,recirc_fraction,\
         utilization,sim_s,events,wall_s,p90_us,response_p90_us,response_mean_us,\
         completion_p50_us,completion_p90_us,completion_p99_us,completion_p999_us,completion_mean_us,\
         steady_decisions_per_s",
    );
    if levels > 1 {
        for l in 1..=levels {
            let _ = write!(csv, ",p50_l{l}_us,p99_l{l}_us");
        }
    }
    csv.push('\n');
    for r in sums {
        let _ = write!(
            csv,
            "{},{},{:.1},{},{},{},{:.3},{},{},{},{},{},{},{},{},{},{},{},{:.1},{},{},{},{:.6},{:.4},{:.6},{},{:.3}",
            r.policy,
            r.load,
            r.offered_tps,
            ns_to_us(r.sched.p50_ns),
            ns_to_us(r.sched.p99_ns),
            ns_to_us(r.sched.p999_ns),
            r.sched.mean_ns / 1e3,
            ns_to_us(r.response.p50_ns),
            ns_to_us(r.response.p99_ns),
            r.submitted,
            r.completed,
            r.gave_up,
            r.timeouts,
            r.resubmissions,
            r.error_tasks,
            r.duplicate_executions,
            r.dropped,
            r.decisions,
            r.decisions_per_s,
            r.noops,
            r.first_passes,
            r.recirculations,
            r.recirc_fraction,
            r.utilization,
            r.sim_s,
            r.events,
            r.wall_s
        );
        let _ = write!(
            csv,
            ",{},{},{:.3},{},{},{},{},{:.3},{:.1}",
            ns_to_us(r.sched.p90_ns),
            ns_to_us(r.response.p90_ns),
            r.response.mean_ns / 1e3,
            ns_to_us(r.completion.p50_ns),
            ns_to_us(r.completion.p90_ns),
            ns_to_us(r.completion.p99_ns),
            ns_to_us(r.completion.p999_ns),
            r.completion.mean_ns / 1e3,
            r.steady_decisions_per_s
        );
        if levels > 1 {
            for l in 0..levels {
                match r.sched_by_level.get(l) {
                    Some(s) => {
                        let _ = write!(csv, ",{},{}", ns_to_us(s.p50_ns), ns_to_us(s.p99_ns));
                    }
                    None => csv.push_str(",,"),
                }
            }
        }
        csv.push('\n');
    }
    std::fs::write(dir.join("runs.csv"), csv)?;
    let json = SummaryJson {
        netsched: netsched_config::build_info::BUILD_INFO,
        config: cfg,
        runs: sums,
    };
    std::fs::write(
        dir.join("summary.json"),
        serde_json::to_string_pretty(&json).map_err(std::io::Error::other)?,
    )?;
    Ok(())
}
