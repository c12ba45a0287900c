//! `netsched flowsim`: the Baraat flow-level simulator (crates/flowsim,
//! docs/flowsim.md).

use std::path::PathBuf;

use netsched_flowsim::run::run_config;
use netsched_flowsim::{report, FlowConfig, Policy};

use crate::error::CliError;
use crate::stdout::outln;

#[derive(clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct FlowArgs {
    #[command(subcommand)]
    cmd: Option<FlowCmd>,
    /// TOML config (e.g. experiments/baraat.toml); built-in defaults if omitted.
    #[arg(short, long)]
    config: Option<PathBuf>,
    /// Policies to run, comma-separated: fair, pfabric, orchestra, stf, baraat.
    #[arg(long, value_delimiter = ',', long_help = crate::policy_help(
        "Policies to run, comma-separated (overrides the config's)",
        &Policy::ALL.map(|p| p.name()),
    ))]
    policy: Vec<String>,
    /// Number of tasks (overrides workload.tasks).
    #[arg(long)]
    tasks: Option<u32>,
    /// Seed of every random stream (overrides the config's `seed`); same
    /// seed, same results.
    #[arg(long)]
    seed: Option<u64>,
    /// Output directory for summary.json, runs.csv, tasks.csv.
    #[arg(short, long, default_value = "results/flowsim")]
    out: PathBuf,
    /// No per-run progress lines.
    #[arg(short, long)]
    quiet: bool,
    /// What to print once the files are written: the table, or summary.json
    /// (json) or runs.csv (csv) for a script reading the pipe.
    #[arg(long, value_enum, default_value_t = crate::stdout::Format::Table)]
    format: crate::stdout::Format,
}

#[derive(clap::Subcommand)]
enum FlowCmd {
    /// Baraat Fig. 7 over real UDP in network namespaces (needs root): one
    /// client, three servers, a software switch running SPC at the client's
    /// downlink; FIFO-LM against fair sharing.
    Fig7(Fig7Args),
    /// Packet against flow: run the config's workload through the fluid
    /// engine and through the packet-level SPC engine (Alg. 1 at every
    /// port, Alg. 2 at senders, per-RTT requests, queues), mean and p99 task
    /// completion time side by side. Policies: fair, baraat.
    Compare(CompareArgs),
}

#[derive(clap::Args)]
struct CompareArgs {
    /// TOML config (e.g. experiments/baraat.toml); built-in defaults if omitted.
    #[arg(short, long)]
    config: Option<PathBuf>,
    /// Policies, comma-separated (fair, baraat).
    #[arg(long, value_delimiter = ',', default_value = "fair,baraat")]
    policy: Vec<String>,
    /// Number of tasks (overrides workload.tasks).
    #[arg(long)]
    tasks: Option<u32>,
    /// Seed of every random stream (overrides the config's `seed`); same
    /// seed, same results.
    #[arg(long)]
    seed: Option<u64>,
    /// SPC control loop round-trip time in µs.
    #[arg(long, default_value_t = 100.0)]
    rtt_us: f64,
    /// Data-plane steps per RTT.
    #[arg(long, default_value_t = 4)]
    ticks_per_rtt: u32,
    /// Overrides topology.tor_oversub (switch links binding or not).
    #[arg(long)]
    tor_oversub: Option<f64>,
    /// Overrides workload.load.
    #[arg(long, allow_negative_numbers = true, value_parser = crate::load_arg)]
    load: Option<f64>,
    /// Overrides baraat.threshold_bytes (1e15: pure FIFO).
    #[arg(long)]
    threshold_bytes: Option<f64>,
    /// Alg. 2's δ in percent of the NIC rate.
    #[arg(long, default_value_t = 1.0)]
    delta_pct: f64,
    /// Instead of the config: Baraat Fig. 7's batched reads (1..=N tasks of
    /// three 400 KB flows over 100 Mbps, as `flowsim fig7` runs over UDP),
    /// fluid and packet means per task count. Use --rtt-us 1000 for the
    /// UDP lab's interval.
    #[arg(long)]
    fig7: Option<u32>,
}

fn compare_fig7(
    max_tasks: u32,
    timing: netsched_flowsim::compare::PacketTiming,
) -> Result<(), CliError> {
    use netsched_flowsim::compare::fig7_means;
    outln!(
        "tasks  fair fluid  fair packet  ratio  fifo-lm fluid  fifo-lm packet  ratio   (mean ms)"
    );
    for n in 1..=max_tasks {
        let (ff, fp) = fig7_means(n, 400_000, 100e6, Policy::Fair, timing)?;
        let (bf, bp) = fig7_means(n, 400_000, 100e6, Policy::Baraat, timing)?;
        outln!(
            "{n:>5}  {:>10.1}  {:>11.1}  {:>5.3}  {:>13.1}  {:>14.1}  {:>5.3}",
            ff / 1e6,
            fp / 1e6,
            fp / ff,
            bf / 1e6,
            bp / 1e6,
            bp / bf
        );
    }
    Ok(())
}

pub fn load_config(path: Option<&PathBuf>) -> Result<FlowConfig, CliError> {
    match path {
        Some(p) => {
            let text = std::fs::read_to_string(p).map_err(|e| CliError::in_file(p)(e.into()))?;
            FlowConfig::from_toml(&text).map_err(|e| CliError::in_file(p)(e.into()))
        }
        None => Ok(FlowConfig::default()),
    }
}

/// The command line's policies (if any), task count and seed over the
/// config's.
fn override_run(
    cfg: &mut FlowConfig,
    policies: &[String],
    tasks: Option<u32>,
    seed: Option<u64>,
) -> Result<(), CliError> {
    if !policies.is_empty() {
        for p in policies {
            Policy::parse(p).map_err(|e| CliError::flag("--policy")(e.into()))?;
        }
        cfg.policies = policies.to_vec();
    }
    if let Some(t) = tasks {
        cfg.workload.tasks = t;
    }
    if let Some(s) = seed {
        cfg.seed = s;
    }
    Ok(())
}

fn compare(a: CompareArgs) -> Result<(), CliError> {
    use netsched_flowsim::compare::{compare, table, PacketTiming};
    let mut cfg = load_config(a.config.as_ref())?;
    override_run(&mut cfg, &a.policy, a.tasks, a.seed)?;
    if let Some(x) = a.tor_oversub {
        cfg.topology.tor_oversub = x;
    }
    if let Some(x) = a.load {
        cfg.workload.load = x;
    }
    if a.threshold_bytes.is_some() {
        cfg.baraat.threshold_bytes = a.threshold_bytes;
    }
    if !(a.rtt_us.is_finite() && a.rtt_us > 0.0)
        || a.ticks_per_rtt == 0
        || !(a.delta_pct.is_finite() && a.delta_pct > 0.0)
    {
        return Err(CliError::Usage(
            "--rtt-us, --ticks-per-rtt and --delta-pct must be positive".into(),
        ));
    }
    let timing = PacketTiming {
        rtt_ns: (a.rtt_us * 1e3).round() as u64,
        ticks_per_rtt: a.ticks_per_rtt,
        delta_fraction: a.delta_pct / 100.0,
    };
    if let Some(n) = a.fig7 {
        return compare_fig7(n, timing);
    }
    let rows = compare(&cfg, timing, |c| {
        eprintln!(
            "{}: fluid {:.2} s, packet {:.2} s ({} requests, max queue {:.0} B, \
             saturated link-ticks: switch {} host {})",
            c.policy.name(),
            c.fluid_wall_s,
            c.packet_wall_s,
            c.packet_stats.requests,
            c.packet_stats.max_queue_bytes,
            c.packet_stats.switch_saturated_ticks,
            c.packet_stats.host_saturated_ticks
        );
    })?;
    crate::stdout::write(&table(&rows));
    Ok(())
}

#[derive(clap::Args)]
struct Fig7Args {
    /// Numbers of concurrent tasks, `A..B` or one number.
    #[arg(long, default_value = "1..8")]
    tasks: String,
    /// Bytes each server returns per task.
    #[arg(long, default_value_t = 400_000)]
    bytes: u64,
    /// Bottleneck (client downlink) rate in Mbps.
    #[arg(long, default_value_t = 100.0)]
    mbps: f64,
    /// SPC control interval in µs.
    #[arg(long, default_value_t = 1000)]
    interval_us: u64,
}

fn fig7(a: Fig7Args) -> Result<(), CliError> {
    use netsched_lab::baraat::{fig7_table, mean_ms, Fig7Opts, Lab};
    let bad = || {
        CliError::Usage(format!(
            "--tasks: expected A..B or N with 1 <= A <= B <= 64, got `{}`",
            a.tasks
        ))
    };
    let (lo, hi) = match a.tasks.split_once("..") {
        Some((x, y)) => (x.trim().parse::<u32>(), y.trim().parse::<u32>()),
        None => (a.tasks.trim().parse::<u32>(), a.tasks.trim().parse::<u32>()),
    };
    let (lo, hi) = (lo.map_err(|_| bad())?, hi.map_err(|_| bad())?);
    if lo == 0 || lo > hi || hi > 64 {
        return Err(bad());
    }
    if a.bytes == 0 || a.mbps.is_nan() || a.mbps <= 0.0 || a.interval_us == 0 {
        return Err(CliError::Usage(
            "--bytes, --mbps and --interval-us must be positive".into(),
        ));
    }
    let lab = Lab::new(&format!("fig7-{}", std::process::id()))?;
    let base = Fig7Opts {
        bytes_per_server: a.bytes,
        link_bps: a.mbps * 1e6,
        rtt_ns: a.interval_us * 1000,
        ..Fig7Opts::default()
    };
    let rows = fig7_table(&lab, lo..=hi, &base)?;
    outln!(
        "tasks  fair mean ms  fifo-lm mean ms  link use fair/fifo-lm  fair per task ms  |  fifo-lm per task ms"
    );
    let list = |v: &[u64]| {
        v.iter()
            .map(|c| format!("{:.1}", *c as f64 / 1e6))
            .collect::<Vec<_>>()
            .join(" ")
    };
    for (n, fair, fifo) in &rows {
        outln!(
            "{n:>5}  {:>12.1}  {:>15.1}  {:>10.2} / {:<10.2}  {}  |  {}",
            mean_ms(fair),
            mean_ms(fifo),
            fair.utilisation,
            fifo.utilisation,
            list(&fair.completion_ns),
            list(&fifo.completion_ns)
        );
    }
    let drops: u64 = rows
        .iter()
        .map(|r| r.1.switch_drops + r.2.switch_drops)
        .sum();
    let retx: u64 = rows.iter().map(|r| r.1.retransmits + r.2.retransmits).sum();
    eprintln!("switch drops {drops}, retransmitted packets {retx}");
    Ok(())
}

pub fn run(a: FlowArgs) -> Result<(), CliError> {
    let mut a = a;
    match a.cmd.take() {
        Some(FlowCmd::Fig7(f)) => return fig7(f),
        Some(FlowCmd::Compare(c)) => return compare(c),
        None => {}
    }
    let mut cfg = load_config(a.config.as_ref())?;
    override_run(&mut cfg, &a.policy, a.tasks, a.seed)?;
    let quiet = a.quiet;
    // Runs: one per policy, then one per threshold of the sweep.
    let n = cfg.policies.len() + cfg.sweep.thresholds.len();
    let mut k = 0;
    let runs = run_config(&cfg, |r| {
        k += 1;
        if !quiet {
            eprintln!(
                "run {k}/{n} {}: {} tasks, {} flows, {} events, {:.0} flows per recomputation, in {:.2} s",
                r.label(),
                r.tasks.len(),
                r.stats.flows,
                r.stats.events,
                r.stats.flows_recomputed as f64 / r.stats.recomputes.max(1) as f64,
                r.wall_s
            );
        }
    })?;
    // Files first: the table goes to a stdout that may already be closed.
    report::write_outputs(&a.out, &cfg, &runs).map_err(CliError::writing(&a.out))?;
    crate::stdout::print(a.format, &a.out, || {
        let mut t = report::table(&runs);
        t.push_str(&report::table4(&runs).unwrap_or_default());
        t
    })?;
    if !quiet {
        eprintln!(
            "wrote {}/summary.json, runs.csv, tasks.csv",
            a.out.display()
        );
    }
    Ok(())
}
