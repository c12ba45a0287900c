//! The `netsched` command line.

mod bench;
mod check;
mod cluster_up;
mod error;
mod experiment;
mod flow;
mod node;
mod progress;
mod pull;
mod stdout;
mod sweep_flags;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use clap::{Parser, Subcommand};
use error::CliError;
use netsched_config::ConfigError;
use netsched_sim::config::{Policy, SimConfig};
use netsched_sim::report;
use netsched_sim::run::{run_config_observed, Prepared, RunOpts};

/// mimalloc rather than glibc's malloc: see crates/cli/Cargo.toml.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(
    name = "netsched",
    version,
    about = "In-network task scheduling: Horus, RackSched, Draconis and Baraat with their \
             baselines, simulated at datacenter scale and run as UDP daemons",
    long_about = "In-network task scheduling: Horus (NSDI '24), RackSched (OSDI '20), Draconis \
                  (EuroSys '24) and Baraat (SIGCOMM '14) with their baselines.\n\n\
                  Simulators: `sim` (Horus, RackSched, push baselines), `pull` (Draconis, R2P2, \
                  Sparrow), `flowsim` (Baraat, pFabric, Orchestra). UDP runtime: `switch`, \
                  `worker`, `client`, `controller`, `cluster`. Paper figures: `experiment run \
                  NAME`, then `report`. `check CONFIG` validates any of their configs."
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Simulate a datacenter from a TOML config; prints a p99 table and writes CSV + JSON.
    Sim(SimArgs),
    /// Check any config (sim, pull, flowsim, switch, worker, client,
    /// controller, cluster up) without running it: the same checks, and
    /// the same messages, as its command.
    Check {
        /// The TOML config.
        config: PathBuf,
        /// Its kind (detected from its keys if omitted).
        #[arg(long, value_enum)]
        kind: Option<check::Kind>,
    },
    /// Print a shell completion script: `netsched completions bash >
    /// /etc/bash_completion.d/netsched` (or zsh, fish, elvish, powershell).
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
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
    /// Loads to run, comma-separated fractions of capacity in (0, 1].
    #[arg(long, value_delimiter = ',', allow_negative_numbers = true, value_parser = load_arg)]
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

/// A `--load` value: a positive fraction of capacity. Parsed here so that
/// `--load -0.5` is a negative load, not an unknown flag.
pub fn load_arg(s: &str) -> Result<f64, String> {
    let v: f64 = s.trim().parse().map_err(|_| {
        format!("`{s}` is not a number (a load is a fraction of capacity, e.g. 0.7)")
    })?;
    if !v.is_finite() || v <= 0.0 {
        return Err(format!(
            "a load must be a positive fraction of capacity, got {v}{}",
            if v < 0.0 { " (negative)" } else { "" }
        ));
    }
    Ok(v)
}

/// Everything `sim` checks before its first event (`netsched check`
/// stops here), errors prefixed by the config's path.
fn prepare_sim(cfg: &SimConfig, path: &Path) -> Result<Prepared, CliError> {
    let base = path.parent().map(PathBuf::from).unwrap_or_default();
    Prepared::new(cfg, &base).map_err(|e| CliError::in_file(path)(e.into()))
}

fn load_config(path: &PathBuf) -> Result<SimConfig, CliError> {
    let text = std::fs::read_to_string(path).map_err(|e| CliError::in_file(path)(e.into()))?;
    SimConfig::from_toml(&text).map_err(|e| CliError::in_file(path)(e.into()))
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
        let sweep = cfg
            .sweep
            .get_or_insert_with(|| netsched_sim::config::Sweep {
                policies: vec![],
                loads: vec![],
            });
        sweep_flags::override_sweep(
            &mut sweep.policies,
            &mut sweep.loads,
            &a.policy,
            &a.load,
            |p| Policy::parse(p).map_err(|e| ConfigError::new("--policy", e.to_string())),
        )?;
    }
    cfg.validate()
}

fn sim(a: SimArgs) -> Result<(), CliError> {
    let mut cfg = load_config(&a.config)?;
    apply_overrides(&mut cfg, &a).map_err(|e| CliError::in_file(&a.config)(e.into()))?;
    let prepared = prepare_sim(&cfg, &a.config)?;
    let progress = progress::Progress::new(progress::Show::for_stderr(a.quiet));
    // Ctrl-C: the run in progress is abandoned and the finished ones are
    // written (exit 130, as a shell reports a SIGINT), so a long sweep
    // interrupted late keeps what it computed.
    let interrupted = Arc::new(AtomicBool::new(false));
    signal_hook::flag::register(signal_hook::consts::SIGINT, interrupted.clone())
        .map_err(CliError::os("signal handler"))?;
    let result = std::thread::scope(|s| {
        let h = s.spawn(|| run_config_observed(&cfg, &prepared, &RunOpts::default(), &progress));
        while !h.is_finished() {
            if interrupted.load(Ordering::Relaxed) {
                progress.clear();
                let runs = progress.take_finished();
                let n = cfg.runs().len();
                if runs.is_empty() {
                    eprintln!("interrupted: none of the {n} runs had finished; nothing written");
                } else if let Err(e) = report::write_outputs(&a.out, &cfg, &runs) {
                    eprintln!("interrupted; writing {}: {e}", a.out.display());
                } else {
                    eprintln!(
                        "interrupted: wrote the {} finished run(s) of {n} to {}/runs.csv, \
                         summary.json, pools.csv",
                        runs.len(),
                        a.out.display()
                    );
                }
                std::process::exit(130);
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        h.join().expect("the simulation thread does not panic")
    });
    progress.clear();
    result.map_err(|e| CliError::in_file(&a.config)(e.into()))?;
    let runs = progress.take_finished();
    // Files first: the table goes to a stdout that may already be closed.
    report::write_outputs(&a.out, &cfg, &runs).map_err(CliError::writing(&a.out))?;
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

/// `netsched completions SHELL`.
fn completions(shell: clap_complete::Shell) -> Result<(), CliError> {
    use clap::CommandFactory;
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "netsched", &mut script);
    stdout::write(&String::from_utf8_lossy(&script));
    Ok(())
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    netsched_node::log::init();
    let result = match cli.cmd {
        Cmd::Sim(a) => sim(a),
        Cmd::Check { config, kind } => check::run(&config, kind),
        Cmd::Completions { shell } => completions(shell),
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
    /// it is in `--help` (`--seed`, `-c` and `--duration-s` had
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

    /// Every help text, of every command and argument.
    fn help_texts(cmd: &clap::Command, out: &mut Vec<String>) {
        for t in [cmd.get_about(), cmd.get_long_about()]
            .into_iter()
            .flatten()
        {
            out.push(t.to_string());
        }
        for a in cmd.get_arguments() {
            for t in [a.get_help(), a.get_long_help()].into_iter().flatten() {
                out.push(t.to_string());
            }
        }
        for sub in cmd.get_subcommands() {
            help_texts(sub, out);
        }
    }

    /// Every `experiments/…` path a help text names exists (a `*` stands
    /// for any file name part, and must match at least one file).
    #[test]
    fn paths_named_in_help_exist() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let mut texts = Vec::new();
        help_texts(&super::Cli::command(), &mut texts);
        let mut named = 0;
        for t in &texts {
            for (i, _) in t.match_indices("experiments/") {
                let path: String = t[i..]
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || "/._-*".contains(*c))
                    .collect();
                let path = path.trim_end_matches(['.', ',']);
                named += 1;
                let (dir, file) = path.rsplit_once('/').expect("a directory");
                let found = match file.split_once('*') {
                    None => root.join(path).exists(),
                    Some((pre, post)) => std::fs::read_dir(root.join(dir)).is_ok_and(|d| {
                        d.filter_map(Result::ok).any(|e| {
                            let n = e.file_name().to_string_lossy().into_owned();
                            n.starts_with(pre) && n.ends_with(post)
                        })
                    }),
                };
                assert!(found, "help names {path}, which does not exist: {t}");
            }
        }
        assert!(named >= 5, "{named} paths");
    }
}
