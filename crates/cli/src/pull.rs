//! `netsched pull`: the pull-based scheduling simulator (Draconis, R2P2,
//! Sparrow, Draconis-Server, and RackSched for comparison;
//! crates/sim/src/pull, docs/draconis.md).

use std::path::PathBuf;

use netsched_config::pull::PullPolicy;
use netsched_config::ConfigError;
use netsched_sim::pull::{self, report, PullConfig, PullSweep};

use crate::error::CliError;
use crate::sweep_flags::override_sweep;

#[derive(clap::Args)]
pub struct PullArgs {
    /// TOML config (e.g. experiments/draconis.toml); built-in defaults if omitted.
    #[arg(short, long)]
    config: Option<PathBuf>,
    /// Policies, comma-separated: draconis, draconis-priority, draconis-resource,
    /// draconis-locality, draconis-server, r2p2, sparrow, racksched.
    #[arg(long, value_delimiter = ',', long_help = crate::policy_help(
        "Policies to run, comma-separated (overrides the config's)",
        &PullPolicy::ALL.map(|p| p.name()),
    ))]
    policy: Vec<String>,
    /// Loads, comma-separated fractions of executors / mean service time.
    #[arg(long, value_delimiter = ',', allow_negative_numbers = true, value_parser = crate::load_arg)]
    load: Vec<f64>,
    /// A §8 synthetic workload replacing workload.service: fixed100, fixed250,
    /// fixed500, bimodal, trimodal, exp250.
    #[arg(long)]
    workload: Option<String>,
    /// Tasks submitted per run (overrides workload.tasks).
    #[arg(long)]
    tasks: Option<u64>,
    /// Seed of every random stream (overrides the config's `seed`); same
    /// seed, same results.
    #[arg(long)]
    seed: Option<u64>,
    /// Output directory for runs.csv and summary.json.
    #[arg(short, long, default_value = "results/pull")]
    out: PathBuf,
    /// No progress output.
    #[arg(short, long)]
    quiet: bool,
    /// What to print once the files are written: the table, or summary.json
    /// (json) or runs.csv (csv) for a script reading the pipe.
    #[arg(long, value_enum, default_value_t = crate::stdout::Format::Table)]
    format: crate::stdout::Format,
}

/// Reads and validates a pull config (`netsched pull`, `netsched check`).
pub fn read_config(p: &std::path::Path) -> Result<PullConfig, CliError> {
    let text = std::fs::read_to_string(p).map_err(|e| CliError::in_file(p)(e.into()))?;
    PullConfig::from_toml(&text).map_err(|e| CliError::in_file(p)(e.into()))
}

/// What a run checks before its first event, for `netsched check`.
pub fn prepare(cfg: &PullConfig, p: &std::path::Path) -> Result<(), CliError> {
    let base = p.parent().map(PathBuf::from).unwrap_or_default();
    pull::prepare(cfg, &base)
        .map(|_| ())
        .map_err(|e| CliError::in_file(p)(e.into()))
}

fn load(a: &PullArgs) -> Result<PullConfig, CliError> {
    let mut cfg = match &a.config {
        Some(p) => read_config(p)?,
        None => PullConfig::default(),
    };
    if let Some(s) = a.seed {
        cfg.seed = s;
    }
    if let Some(w) = &a.workload {
        cfg.workload.service = pull::config::paper_service(w)
            .map_err(|e| CliError::from(ConfigError::new("--workload", e.msg)))?;
    }
    if let Some(t) = a.tasks {
        cfg.workload.tasks = t;
        if cfg.workload.warmup_tasks.is_some_and(|w| w >= t) {
            cfg.workload.warmup_tasks = None;
        }
    }
    if !a.policy.is_empty() || !a.load.is_empty() {
        let sweep = cfg.sweep.get_or_insert_with(|| PullSweep {
            policies: vec![],
            loads: vec![],
        });
        override_sweep(
            &mut sweep.policies,
            &mut sweep.loads,
            &a.policy,
            &a.load,
            |p| PullPolicy::parse(p).map_err(|e| CliError::flag("--policy")(e.into())),
        )?;
    }
    cfg.validate()?;
    Ok(cfg)
}

pub fn run(a: PullArgs) -> Result<(), CliError> {
    let cfg = load(&a)?;
    let base = a
        .config
        .as_ref()
        .and_then(|p| p.parent().map(PathBuf::from))
        .unwrap_or_default();
    if !a.quiet {
        eprintln!(
            "pull: {} run(s), {} executors, {} tasks each",
            cfg.runs().len(),
            cfg.executors(),
            cfg.workload.tasks
        );
    }
    let runs = pull::run_config(&cfg, &base)?;
    let sums = report::summaries(&cfg, &runs);
    // Files first: the table goes to a stdout that may already be closed.
    report::write_outputs(&a.out, &cfg, &sums).map_err(CliError::writing(&a.out))?;
    crate::stdout::print(a.format, &a.out, || report::table(&cfg, &sums))?;
    if !a.quiet {
        eprintln!("wrote {}/runs.csv, summary.json", a.out.display());
    }
    Ok(())
}
