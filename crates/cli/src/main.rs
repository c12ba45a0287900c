//! The `netsched` command line.

mod bench;
mod cluster_up;
mod experiment;
mod flow;
mod node;
mod pull;
mod stdout;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use netsched_config::ConfigError;
use netsched_sim::config::{Policy, SimConfig};
use netsched_sim::report;
use netsched_sim::run::{run_config, RunOpts};
use stdout::outln;

#[derive(Parser)]
#[command(
    name = "netsched",
    version,
    about = "In-network task scheduling: Horus, RackSched and baselines"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Simulate a datacenter from a TOML config; prints a p99 table and writes CSV + JSON.
    Sim(SimArgs),
    /// Check a config file without running it.
    Check {
        /// The TOML config.
        config: PathBuf,
    },
    /// Benchmarks that print their figures.
    #[command(subcommand)]
    Bench(bench::BenchCmd),
    /// Baraat flow-level simulator (task-aware flow scheduling); see docs/flowsim.md.
    Flowsim(flow::FlowArgs),
    /// Pull-based scheduling simulator: Draconis, R2P2, Sparrow, Draconis-Server (docs/draconis.md).
    Pull(pull::PullArgs),
    /// The UDP runtime: `switch`, `worker`, `client` (docs/runtime.md).
    #[command(flatten)]
    Node(node::NodeCmd),
    /// The experiment catalog and report (Python package; docs/experiments.md).
    #[command(flatten)]
    Py(experiment::PyCmd),
}

#[derive(clap::Args)]
struct SimArgs {
    /// TOML config (see experiments/*.toml).
    #[arg(short, long)]
    config: PathBuf,
    /// Policies to run, comma-separated (overrides the config's policy/sweep).
    #[arg(long, value_delimiter = ',', long_help = policy_help(
        "Policies to run, comma-separated (overrides the config's policy/sweep)",
        &Policy::ALL.map(|p| p.name()),
    ))]
    policy: Vec<String>,
    /// Loads to run, comma-separated fractions in (0, 1].
    #[arg(long, value_delimiter = ',')]
    load: Vec<f64>,
    /// Seed of every random stream (overrides the config's `seed`); same
    /// seed, same results.
    #[arg(long)]
    seed: Option<u64>,
    /// Worker threads (0 = all cores); results do not depend on it.
    #[arg(long)]
    threads: Option<usize>,
    /// Tasks per worker (run length).
    #[arg(long)]
    tasks_per_worker: Option<f64>,
    /// Number of worker pools (overrides placement.pools).
    #[arg(long)]
    pools: Option<u32>,
    /// Simulate only these pool ids, comma-separated (sets `only_pools`;
    /// each selected pool's results equal the full run's).
    #[arg(long, value_delimiter = ',')]
    only_pools: Vec<u32>,
    /// Output directory for CSV and JSON.
    #[arg(short, long, default_value = "results/sim")]
    out: PathBuf,
    /// No progress output.
    #[arg(short, long)]
    quiet: bool,
    /// What to print once the files are written: the table, or summary.json
    /// (json) or runs.csv (csv) for a script reading the pipe.
    #[arg(long, value_enum, default_value_t = crate::stdout::Format::Table)]
    format: crate::stdout::Format,
}

fn load_config(path: &PathBuf) -> Result<SimConfig, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    SimConfig::from_toml(&text).map_err(|e| format!("{}: {e}", path.display()))
}

fn apply_overrides(cfg: &mut SimConfig, a: &SimArgs) -> Result<(), ConfigError> {
    if let Some(s) = a.seed {
        cfg.seed = s;
    }
    if let Some(t) = a.threads {
        cfg.threads = t;
    }
    if let Some(t) = a.tasks_per_worker {
        cfg.workload.tasks_per_worker = Some(t);
        cfg.workload.duration_us = None;
    }
    if let Some(p) = a.pools {
        cfg.placement.pools = Some(p);
        cfg.placement.sizes.clear();
    }
    if !a.only_pools.is_empty() {
        cfg.only_pools = Some(a.only_pools.clone());
    }
    if !a.policy.is_empty() || !a.load.is_empty() {
        let mut sweep = cfg.sweep.clone().unwrap_or(netsched_sim::config::Sweep {
            policies: vec![],
            loads: vec![],
        });
        if !a.policy.is_empty() {
            sweep.policies = a
                .policy
                .iter()
                .map(|p| Policy::parse(p).map_err(|e| ConfigError::new("--policy", e.to_string())))
                .collect::<Result<_, _>>()?;
        }
        if !a.load.is_empty() {
            sweep.loads = a.load.clone();
        }
        cfg.sweep = Some(sweep);
    }
    cfg.validate()
}

fn sim(a: SimArgs) -> Result<(), String> {
    let mut cfg = load_config(&a.config)?;
    apply_overrides(&mut cfg, &a).map_err(|e| e.to_string())?;
    let base = a.config.parent().map(PathBuf::from).unwrap_or_default();
    let runs = run_config(
        &cfg,
        &base,
        &RunOpts {
            progress: !a.quiet,
            ..RunOpts::default()
        },
    )
    .map_err(|e| e.to_string())?;
    // Files first: the table goes to a stdout that may already be closed.
    report::write_outputs(&a.out, &cfg, &runs)
        .map_err(|e| format!("writing {}: {e}", a.out.display()))?;
    let target_ns = (cfg.metrics.p99_target_us * 1e3) as u64;
    stdout::print(a.format, &a.out, || {
        let mut t = report::table(&runs);
        if let Some(line) = report::throughput_line(&runs, target_ns) {
            t.push_str(&line);
            t.push('\n');
        }
        t
    })?;
    if !a.quiet {
        eprintln!(
            "wrote {}/summary.json, runs.csv, pools.csv",
            a.out.display()
        );
    }
    Ok(())
}

/// Everything a run would refuse, refused without running: the config, and
/// every file it names (a trace), resolved as `sim` resolves it.
fn check(path: &PathBuf) -> Result<(), String> {
    let cfg = load_config(path)?;
    let base = path.parent().map(PathBuf::from).unwrap_or_default();
    cfg.workload
        .service
        .build_relative_to(&base)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    outln!("{}: ok", path.display());
    Ok(())
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    netsched_node::log::init();
    let result = match cli.cmd {
        Cmd::Sim(a) => sim(a),
        Cmd::Check { config } => check(&config),
        Cmd::Bench(b) => bench::run(b),
        Cmd::Flowsim(a) => flow::run(a),
        Cmd::Pull(a) => pull::run(a),
        Cmd::Node(n) => node::run(n),
        Cmd::Py(c) => experiment::run(c),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// `--help` of a `--policy` option: what it takes, then every name (the
/// parse functions' vocabulary, so help and errors list the same names).
pub(crate) fn policy_help(intro: &str, names: &[&str]) -> String {
    format!("{intro}.\n\nPolicies: {}", names.join(", "))
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    /// Every option and positional argument of every subcommand says what
    /// it is in `--help` (issue 20: `--seed`, `-c` and `--duration-s` had
    /// none).
    #[test]
    fn every_argument_has_help_text() {
        fn walk(cmd: &clap::Command, path: &str, missing: &mut Vec<String>) {
            for arg in cmd.get_arguments() {
                let id = arg.get_id().as_str();
                if matches!(id, "help" | "version") {
                    continue;
                }
                let help = arg.get_help().map(|h| h.to_string()).unwrap_or_default();
                if help.trim().is_empty() {
                    missing.push(format!("{path} --{id}"));
                }
            }
            for sub in cmd.get_subcommands() {
                walk(sub, &format!("{path} {}", sub.get_name()), missing);
            }
        }
        let mut missing = Vec::new();
        walk(&super::Cli::command(), "netsched", &mut missing);
        assert!(missing.is_empty(), "arguments without help: {missing:#?}");
    }
}
