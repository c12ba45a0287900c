//! Task completion time statistics, the Table 4-shaped comparison, the
//! Fig. 12 sweep table, and the CSV/JSON outputs.

use std::fmt::Write as _;
use std::path::Path;

use serde::Serialize;

use crate::config::FlowConfig;
use crate::policy::Policy;
use crate::run::RunResult;

/// Exact statistics over every task (no histogram): quantiles use the
/// ceil(q·n)-th smallest sample.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Stats {
    pub tasks: usize,
    pub mean_ns: f64,
    pub median_ns: u64,
    pub p95_ns: u64,
    pub p99_ns: u64,
    pub max_ns: u64,
}

pub fn quantile(sorted: &[u64], q: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

pub fn stats(r: &RunResult) -> Stats {
    let mut v: Vec<u64> = r.tasks.iter().map(|t| t.completion_ns).collect();
    v.sort_unstable();
    let mean = if v.is_empty() {
        0.0
    } else {
        v.iter().map(|&x| x as f64).sum::<f64>() / v.len() as f64
    };
    Stats {
        tasks: v.len(),
        mean_ns: mean,
        median_ns: quantile(&v, 0.5),
        p95_ns: quantile(&v, 0.95),
        p99_ns: quantile(&v, 0.99),
        max_ns: v.last().copied().unwrap_or(0),
    }
}

fn ms(ns: f64) -> f64 {
    ns / 1e6
}

/// One row per run: completion time mean, median, p95, p99, worst (ms).
pub fn table(runs: &[RunResult]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{:<14} {:>7} {:>10} {:>10} {:>10} {:>10} {:>10} {:>8}",
        "policy", "tasks", "mean ms", "p50 ms", "p95 ms", "p99 ms", "max ms", "wall s"
    );
    for r in runs {
        let st = stats(r);
        let _ = writeln!(
            s,
            "{:<14} {:>7} {:>10.3} {:>10.3} {:>10.3} {:>10.3} {:>10.3} {:>8.2}",
            r.label(),
            st.tasks,
            ms(st.mean_ns),
            ms(st.median_ns as f64),
            ms(st.p95_ns as f64),
            ms(st.p99_ns as f64),
            ms(st.max_ns as f64),
            r.wall_s
        );
    }
    s
}

fn reduction(baraat: u64, other: u64) -> f64 {
    if other == 0 {
        0.0
    } else {
        100.0 * (other as f64 - baraat as f64) / other as f64
    }
}

/// Table 4: reduction in task completion time with Baraat relative to each
/// other policy, at the median, 95th and 99th percentile.
pub fn table4(runs: &[RunResult]) -> Option<String> {
    let b = runs
        .iter()
        .find(|r| r.policy == Policy::Baraat && r.threshold_percentile.is_none())?;
    let bs = stats(b);
    let mut s = String::new();
    let _ = writeln!(
        s,
        "Reduction with Baraat (Table 4): {:<10} {:>8} {:>8} {:>8}",
        "policy", "median", "95th", "99th"
    );
    for r in runs
        .iter()
        .filter(|r| r.policy != Policy::Baraat && r.threshold_percentile.is_none())
    {
        let st = stats(r);
        let _ = writeln!(
            s,
            "{:<32} {:<10} {:>7.0}% {:>7.0}% {:>7.0}%",
            "",
            r.policy.name(),
            reduction(bs.median_ns, st.median_ns),
            reduction(bs.p95_ns, st.p95_ns),
            reduction(bs.p99_ns, st.p99_ns)
        );
    }
    Some(s)
}

#[derive(Serialize)]
struct RunSummary {
    label: String,
    policy: &'static str,
    threshold_percentile: Option<f64>,
    threshold_bytes: Option<f64>,
    completion: Stats,
    events: u64,
    recomputes: u64,
    flows: u64,
    wall_s: f64,
}

/// `summary.json` (config + per-run statistics), `runs.csv` and `tasks.csv`.
pub fn write_outputs(dir: &Path, cfg: &FlowConfig, runs: &[RunResult]) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let summaries: Vec<RunSummary> = runs
        .iter()
        .map(|r| RunSummary {
            label: r.label(),
            policy: r.policy.name(),
            threshold_percentile: r.threshold_percentile,
            threshold_bytes: r.threshold_bytes,
            completion: stats(r),
            events: r.stats.events,
            recomputes: r.stats.recomputes,
            flows: r.stats.flows,
            wall_s: r.wall_s,
        })
        .collect();
    let json = serde_json::json!({
        "netsched": netsched_config::build_info::BUILD_INFO,
        "config": cfg,
        "runs": summaries,
    });
    std::fs::write(
        dir.join("summary.json"),
        serde_json::to_string_pretty(&json).map_err(std::io::Error::other)? + "\n",
    )?;
    let mut csv = String::from(
        "label,policy,threshold_percentile,tasks,mean_ns,median_ns,p95_ns,p99_ns,max_ns\n",
    );
    for s in &summaries {
        let c = &s.completion;
        let _ = writeln!(
            csv,
            "{},{},{},{},{:.1},{},{},{},{}",
            s.label,
            s.policy,
            s.threshold_percentile
                .map_or(String::new(), |p| p.to_string()),
            c.tasks,
            c.mean_ns,
            c.median_ns,
            c.p95_ns,
            c.p99_ns,
            c.max_ns
        );
    }
    std::fs::write(dir.join("runs.csv"), csv)?;
    let mut tasks = String::from("label,index,task_id,arrival_ns,completion_ns,bytes\n");
    for r in runs {
        let label = r.label();
        for t in &r.tasks {
            let _ = writeln!(
                tasks,
                "{label},{},{},{},{},{}",
                t.index, t.task_id, t.arrival_ns, t.completion_ns, t.bytes
            );
        }
    }
    std::fs::write(dir.join("tasks.csv"), tasks)
}
