//! `netsched flowsim`: the Baraat flow-level simulator (crates/flowsim,
//! docs/flowsim.md).

use std::path::PathBuf;

use netsched_flowsim::run::run_config;
use netsched_flowsim::{report, FlowConfig, Policy};

#[derive(clap::Args)]
pub struct FlowArgs {
    /// TOML config (e.g. experiments/baraat.toml); built-in defaults if omitted.
    #[arg(short, long)]
    config: Option<PathBuf>,
    /// Policies to run, comma-separated: fair, pfabric, orchestra, stf, baraat.
    #[arg(long, value_delimiter = ',')]
    policy: Vec<String>,
    /// Number of tasks (overrides workload.tasks).
    #[arg(long)]
    tasks: Option<u32>,
    #[arg(long)]
    seed: Option<u64>,
    /// Output directory for summary.json, runs.csv, tasks.csv.
    #[arg(short, long, default_value = "results/flowsim")]
    out: PathBuf,
    /// No per-run progress lines.
    #[arg(short, long)]
    quiet: bool,
}

pub fn run(a: FlowArgs) -> Result<(), String> {
    let mut cfg = match &a.config {
        Some(p) => {
            let text = std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()))?;
            FlowConfig::from_toml(&text).map_err(|e| format!("{}: {e}", p.display()))?
        }
        None => FlowConfig::default(),
    };
    if !a.policy.is_empty() {
        for p in &a.policy {
            Policy::parse(p).map_err(|e| format!("--policy: {e}"))?;
        }
        cfg.policies = a.policy.clone();
    }
    if let Some(t) = a.tasks {
        cfg.workload.tasks = t;
    }
    if let Some(s) = a.seed {
        cfg.seed = s;
    }
    let quiet = a.quiet;
    let runs = run_config(&cfg, |r| {
        if !quiet {
            eprintln!(
                "{}: {} tasks, {} flows, {} events, {:.0} flows per recomputation, in {:.2} s",
                r.label(),
                r.tasks.len(),
                r.stats.flows,
                r.stats.events,
                r.stats.flows_recomputed as f64 / r.stats.recomputes.max(1) as f64,
                r.wall_s
            );
        }
    })
    .map_err(|e| e.to_string())?;
    print!("{}", report::table(&runs));
    if let Some(t4) = report::table4(&runs) {
        print!("{t4}");
    }
    report::write_outputs(&a.out, &cfg, &runs)
        .map_err(|e| format!("writing {}: {e}", a.out.display()))?;
    if !quiet {
        eprintln!(
            "wrote {}/summary.json, runs.csv, tasks.csv",
            a.out.display()
        );
    }
    Ok(())
}
