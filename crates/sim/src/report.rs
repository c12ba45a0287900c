//! A run's outputs: the printed table, `runs.csv`, `pools.csv` and `summary.json`.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use serde::Serialize;

use crate::config::SimConfig;
use crate::metrics::{throughput_at_target, Summary};
use crate::run::RunResult;

/// The readable table: one row per (policy, load).
pub fn table(runs: &[RunResult]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{:<13} {:>5} {:>10} {:>10} {:>10} {:>10} {:>11} {:>8} {:>8} {:>9}",
        "policy",
        "load",
        "p50 µs",
        "p99 µs",
        "p99.9 µs",
        "mean µs",
        "completed",
        "aborted",
        "resub%",
        "msgs/task"
    );
    for r in runs {
        let sum = r.summary();
        let resub = sum.resubmitted_tasks_any;
        let msgs: u64 = sum.messages.values().sum();
        let [p50, p99, p999, mean] = sum.response.headline_us();
        let _ = writeln!(
            s,
            "{:<13} {:>5.2} {p50:>10.1} {p99:>10.1} {p999:>10.1} {mean:>10.1} {:>11} {:>8} {:>8.2} {:>9.2}",
            r.policy.name(),
            r.load,
            sum.completed,
            sum.aborted,
            100.0 * resub as f64 / sum.submitted.max(1) as f64,
            msgs as f64 / sum.submitted_total.max(1) as f64,
        );
    }
    s
}

/// Horus §4.1 "achievable throughput" per policy: the largest swept load whose
/// p99 stays within `target_ns` (interpolated between swept loads).
pub fn throughput_at(runs: &[RunResult], target_ns: u64) -> BTreeMap<&'static str, Option<f64>> {
    let mut points: BTreeMap<&'static str, Vec<(f64, u64)>> = BTreeMap::new();
    for r in runs {
        points
            .entry(r.policy.name())
            .or_default()
            .push((r.load, r.summary().response.p99_ns));
    }
    points
        .into_iter()
        .map(|(p, pts)| (p, throughput_at_target(&pts, target_ns)))
        .collect()
}

/// A one-line summary of [`throughput_at`], printed when a run swept loads.
pub fn throughput_line(runs: &[RunResult], target_ns: u64) -> Option<String> {
    let loads: std::collections::BTreeSet<u64> = runs.iter().map(|r| r.load.to_bits()).collect();
    if loads.len() < 2 {
        return None;
    }
    let parts: Vec<String> = throughput_at(runs, target_ns)
        .into_iter()
        .map(|(p, t)| match t {
            Some(t) => format!("{p} {t:.2}"),
            None => format!("{p} -"),
        })
        .collect();
    Some(format!(
        "max load with p99 <= {:.0} µs: {}",
        target_ns as f64 / 1e3,
        parts.join(", ")
    ))
}

#[derive(Serialize)]
struct RunJson<'a> {
    policy: &'a str,
    load: f64,
    wall_s: f64,
    tasks: u64,
    events: u64,
    overall: Summary,
}

#[derive(Serialize)]
struct SummaryJson<'a> {
    /// Which netsched produced the file.
    netsched: netsched_config::build_info::BuildInfo,
    config: &'a SimConfig,
    runs: Vec<RunJson<'a>>,
    /// Per policy: the largest load whose p99 meets `metrics.p99_target_us`.
    throughput_at_target: BTreeMap<&'static str, Option<f64>>,
}

/// Writes `runs.csv`, `pools.csv` and `summary.json` into `dir`.
pub fn write_outputs(dir: &Path, cfg: &SimConfig, runs: &[RunResult]) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let mut runs_csv = format!(
        "policy,load,p50_us,p99_us,p999_us,mean_us,wall_s,{}\n",
        Summary::csv_header()
    );
    let mut pools_csv = format!("policy,load,{}\n", Summary::csv_header());
    let mut json_runs = Vec::new();
    for r in runs {
        let overall = r.summary();
        let [p50, p99, p999, mean] = overall.response.headline_us();
        let _ = writeln!(
            runs_csv,
            "{},{},{p50},{p99},{p999},{mean},{:.3},{}",
            r.policy.name(),
            r.load,
            r.wall_s,
            overall.to_csv_row()
        );
        for p in &r.pools {
            let _ = writeln!(
                pools_csv,
                "{},{},{}",
                r.policy.name(),
                r.load,
                Summary::of_pool(p).to_csv_row()
            );
        }
        json_runs.push(RunJson {
            policy: r.policy.name(),
            load: r.load,
            wall_s: r.wall_s,
            tasks: r.tasks,
            events: r.events,
            overall,
        });
    }
    let target = (cfg.metrics.p99_target_us * 1e3) as u64;
    let summary = SummaryJson {
        netsched: netsched_config::build_info::BUILD_INFO,
        config: cfg,
        runs: json_runs,
        throughput_at_target: throughput_at(runs, target),
    };
    std::fs::write(dir.join("runs.csv"), runs_csv)?;
    std::fs::write(dir.join("pools.csv"), pools_csv)?;
    std::fs::write(
        dir.join("summary.json"),
        serde_json::to_string_pretty(&summary).map_err(std::io::Error::other)?,
    )?;
    Ok(())
}
