//! `netsched bench ...`: benchmarks that print their figures (docs/benchmarks.md).

use crate::error::CliError;
use netsched_core::Nanos;
use std::time::Instant;

use clap::{Args, Subcommand};
use netsched_core::dataplane::handle_resubmitting;
use netsched_core::horus::{ConnTableConfig, HorusLeaf, HorusSpine};
use netsched_core::rng::Rng;
use netsched_core::{DataPlane, Input, Outbox, TaskMeta};
use netsched_sim::config::{Policy, SimConfig};
use netsched_sim::report;
use netsched_sim::run::{run_config, RunOpts};

use crate::stdout::outln;

#[derive(Subcommand)]
pub enum BenchCmd {
    /// The full datacenter of Horus §5.1: k=48 fat tree, 1,000 pools (~685K
    /// workers), Bimodal at load 0.9, 100 tasks per worker (~68M tasks).
    Sim {
        /// Tasks per worker (run length).
        #[arg(long, default_value_t = 100.0)]
        tasks_per_worker: f64,
        /// Worker pools in the k=48 datacenter.
        #[arg(long, default_value_t = 1000)]
        pools: u32,
        /// Scheduling policy (a `netsched sim` policy name).
        #[arg(long, default_value = netsched_core::Policy::Horus.name())]
        policy: String,
        /// Worker threads (0 = all cores).
        #[arg(long, default_value_t = 0)]
        threads: usize,
        /// Events of the floor loop run after the simulation: a
        /// bare binary-heap event loop, with a pool's mean number of
        /// pending events (0 skips it).
        #[arg(long, default_value_t = 30_000_000)]
        floor_events: u64,
    },
    /// Decisions per second of the Horus leaf and spine data planes alone, on one core.
    Dataplane {
        /// Seconds per measurement.
        #[arg(long, default_value_t = 1.0)]
        seconds: f64,
    },
    /// Scheduler daemon on loopback: tasks/s per core and latency added at low load.
    Switch(crate::node::BenchSwitchArgs),
    /// p99 against offered load: Horus and RackSched leaves vs nginx's UDP
    /// proxy (random two least_conn) over the same workers, same client.
    Nginx(crate::node::BenchNginxArgs),
    /// Highest rate with p99 under a bound, and tasks per scheduler
    /// CPU-second at it: the Horus leaf daemon vs nginx (random two
    /// least_conn, UDP) over the same workers, same client, one run.
    Capacity(CapacityArgs),
    /// Pull runtime on loopback (Draconis, Draconis-Server, R2P2, Sparrow):
    /// assignments per daemon CPU-second, then scheduling latency against
    /// load, every policy in one run.
    Pull(crate::node::BenchPullArgs),
    /// End to end through veths in network namespaces (root): tasks per
    /// scheduler CPU-second and latency added at low load, for the XDP leaf
    /// and spine, the socket daemon's leaf and spine, and nginx, in one run.
    XdpE2e(XdpE2eArgs),
}

pub fn run(cmd: BenchCmd) -> Result<(), CliError> {
    match cmd {
        BenchCmd::Switch(a) => crate::node::bench_switch(a),
        BenchCmd::Nginx(a) => crate::node::bench_nginx(a),
        BenchCmd::Pull(a) => crate::node::bench_pull(a),
        BenchCmd::Capacity(a) => bench_capacity(a),
        BenchCmd::XdpE2e(a) => bench_xdp_e2e(a),
        BenchCmd::Sim {
            tasks_per_worker,
            pools,
            policy,
            threads,
            floor_events,
        } => bench_sim(tasks_per_worker, pools, &policy, threads, floor_events),
        BenchCmd::Dataplane { seconds } => {
            bench_dataplane(seconds);
            Ok(())
        }
    }
}

#[derive(Args)]
pub struct CapacityArgs {
    /// A probe passes with p99 (from intended send time) at most this, µs.
    #[arg(long, default_value_t = 1000.0)]
    p99_bound_us: f64,
    /// ... and at least this fraction of its tasks answered.
    #[arg(long, default_value_t = 0.999)]
    min_completed: f64,
    /// First rate of each search (tasks/s); doubled while probes pass.
    #[arg(long, default_value_t = 5000.0)]
    start_rate: f64,
    /// The search never offers more (tasks/s).
    #[arg(long, default_value_t = 320_000.0)]
    max_rate: f64,
    /// Bisections between the last passing and first failing rate.
    #[arg(long, default_value_t = 3)]
    refine_steps: usize,
    /// A failing rate is tried this many more times before it counts.
    #[arg(long, default_value_t = 1)]
    fail_retries: usize,
    /// How long each probe's client sends (ms).
    #[arg(long, default_value_t = 1500)]
    probe_ms: u64,
    /// Rounds (searches per setup); the summary shows medians.
    #[arg(long, default_value_t = 3)]
    repeats: usize,
    /// Setups in run order within a round: nginx and/or a daemon policy,
    /// optionally with its own settings after `@`s: coalesce_us
    /// (`horus@200`), `batch=N`, `threads=N` (SO_REUSEPORT receive
    /// threads), `busy_poll=US` (SO_BUSY_POLL), e.g. `horus@batch=64@threads=2`.
    #[arg(long, default_values = [netsched_core::Policy::Horus.name(), netsched_lab::nginx::NGINX_SETUP], value_delimiter = ',')]
    setups: Vec<String>,
    /// Single-executor workers shared by every setup.
    #[arg(long, default_value_t = 4)]
    workers: usize,
    /// Service-time distribution as a TOML inline table (µs); short, so the
    /// scheduler is the bottleneck.
    #[arg(long, default_value = "{ kind = \"fixed\", value_us = 1 }")]
    service: String,
    /// Datagrams per recvmmsg of the daemon (its `batch`).
    #[arg(long, default_value_t = 32)]
    batch: usize,
    /// The daemon's `coalesce_us`: sleep this long after a batch that did
    /// not fill (0: off, the default).
    #[arg(long, default_value_t = 0)]
    coalesce_us: u64,
    /// Run the daemon as a thread of this process instead of its own
    /// `netsched switch` process.
    #[arg(long)]
    daemon_thread: bool,
    /// The nginx binary (Debian's by default).
    #[arg(long, default_value = netsched_lab::nginx::DEFAULT_NGINX)]
    nginx: std::path::PathBuf,
    /// Seed of the open-loop client's streams (each probe adds its
    /// application id, so probes draw different sequences).
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

#[derive(Args)]
pub struct XdpE2eArgs {
    /// Systems in run order: xdp-leaf-live (the XDP leaf between an XDP
    /// generator and XDP workers), xdp-leaf-live-all (the same on every
    /// CPU), xdp-floor-live (the same path with a program that sends every
    /// frame back in the leaf's place: the path's floor), xdp-leaf, xdp-leaf-all (the XDP leaf on every CPU, `[xdp] cpus
    /// = "all"`), xdp-spine, socket-leaf, socket-spine, nginx. A system
    /// named more than once runs each time (alternate them for a
    /// comparison) and gets a line of medians.
    #[arg(
        long,
        default_value = "xdp-leaf-live,xdp-leaf-live-all,xdp-floor-live,xdp-leaf,xdp-leaf-all,xdp-spine,socket-leaf,socket-spine,nginx",
        value_delimiter = ','
    )]
    systems: Vec<String>,
    /// Closed-loop generator threads (batched sendmmsg/recvmmsg).
    #[arg(long, default_value_t = 2)]
    generators: usize,
    /// Tasks in flight per generator thread.
    #[arg(long, default_value_t = 128)]
    window: usize,
    /// Throughput measurement per system (ms).
    #[arg(long, default_value_t = 2000)]
    duration_ms: u64,
    /// Open-loop rate of the latency part (tasks/s) ...
    #[arg(long, default_value_t = 1000.0)]
    low_rate: f64,
    /// ... for this long per system (ms).
    #[arg(long, default_value_t = 1000)]
    latency_ms: u64,
    /// Worker entries (leaf) or one-worker racks (spine), all one echo.
    #[arg(long, default_value_t = 4)]
    workers: usize,
    /// XDP attach mode: native or generic.
    #[arg(long, default_value = "native")]
    mode: String,
    /// The CPU that runs the XDP program.
    #[arg(long, default_value_t = 1)]
    cpu: u32,
    /// The nginx binary (Debian's by default).
    #[arg(long, default_value = netsched_lab::nginx::DEFAULT_NGINX)]
    nginx: std::path::PathBuf,
}

fn bench_xdp_e2e(a: XdpE2eArgs) -> Result<(), CliError> {
    use netsched_lab::xdp_e2e::{self, Row, System, XdpE2eOpts};
    let systems = a
        .systems
        .iter()
        .map(|s| {
            System::ALL
                .into_iter()
                .find(|x| x.name() == s)
                .ok_or_else(|| CliError::Usage(format!("--systems: unknown system {s:?}")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let opts = XdpE2eOpts {
        netsched: std::env::current_exe().map_err(|source| CliError::Os {
            what: "current executable",
            source,
        })?,
        systems,
        workers: a.workers.max(1),
        generators: a.generators.max(1),
        window: a.window.max(1),
        duration: std::time::Duration::from_millis(a.duration_ms),
        low_rate: a.low_rate,
        latency_duration: std::time::Duration::from_millis(a.latency_ms),
        mode: a.mode,
        cpu: a.cpu,
        nginx: a.nginx,
        ..Default::default()
    };
    let mut printed = false;
    let out = xdp_e2e::run(&opts, |r| {
        if !printed {
            outln!("{}", Row::HEADER);
            printed = true;
        }
        outln!("{}", r.line(0.0));
    })?;
    outln!(
        "\ndirect to the echo (no scheduler): p50 {:.1} us p99 {:.1} us",
        out.direct_p50_us,
        out.direct_p99_us
    );
    outln!("\n{}", Row::HEADER);
    for r in &out.rows {
        outln!("{}", r.line(out.direct_p50_us));
    }
    for (r, l) in out.rows.iter().filter_map(|r| Some((r, r.live.as_ref()?))) {
        outln!(
            "{}: sent {}, leaf dispatched {}, responder answered {}, leaf took replies {}, \
             completed {}, replies forwarded by the program {}; leaf steered {} \
             ran {}; responder steered {} ran {} (a difference was dropped at that cpumap queue); \
             scheduler CPU per task: daemon {:.0} ns, NAPI thread {:.0} ns, cpumap thread {:.0} ns; \
             leaf CPU's softirq {:.0} ns; scheduler CPU per packet the leaf ran {:.0} ns",
            r.system.name(),
            l.sent,
            l.dispatched,
            l.answered,
            l.replies,
            r.tasks,
            l.replies_forwarded,
            l.leaf_steered,
            l.leaf_ran,
            l.responder_steered,
            l.responder_ran,
            per_task_ns(l.daemon_cpu_s, r.tasks),
            per_task_ns(l.napi_cpu_s, r.tasks),
            per_task_ns(l.cpumap_cpu_s, r.tasks),
            per_task_ns(l.leaf_cpu_softirq_s, r.tasks),
            per_task_ns(r.sched_cpu_s, l.leaf_ran)
        );
    }
    medians(&out.rows);
    if let Some(base) = out.rows.iter().find(|r| r.system == System::Nginx) {
        for r in &out.rows {
            outln!(
                "{}: {:.2}x nginx tasks per scheduler CPU-second, {:.2}x its tasks/s",
                r.system.name(),
                r.tasks_per_core_s() / base.tasks_per_core_s(),
                r.tasks_per_s() / base.tasks_per_s()
            );
        }
    }
    Ok(())
}

/// `seconds` per task, in ns.
fn per_task_ns(seconds: f64, tasks: u64) -> f64 {
    seconds * 1e9 / tasks.max(1) as f64
}

/// For each system that ran more than once: the medians of its runs.
fn medians(rows: &[netsched_lab::xdp_e2e::Row]) {
    let mut seen = Vec::new();
    for r in rows {
        if seen.contains(&r.system) {
            continue;
        }
        seen.push(r.system);
        let runs: Vec<_> = rows.iter().filter(|x| x.system == r.system).collect();
        if runs.len() < 2 {
            continue;
        }
        let median = |f: &dyn Fn(&netsched_lab::xdp_e2e::Row) -> Option<f64>| {
            let mut v: Vec<f64> = runs.iter().filter_map(|x| f(x)).collect();
            v.sort_by(f64::total_cmp);
            v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
        };
        let live = |f: fn(&netsched_lab::xdp_e2e::Live) -> Option<f64>| {
            median(&|x| x.live.as_ref().and_then(f))
        };
        outln!(
            "{} median of {}: {:.0} tasks/s, {:.0} tasks per scheduler CPU-second, \
             scheduler CPU share {:.2}, p50 {:.1} us, leaf program {:.0} ns/packet, \
             steering {:.0} ns/packet, scheduler CPU {:.0} ns per packet the leaf ran",
            r.system.name(),
            runs.len(),
            median(&|x| Some(x.tasks_per_s())),
            median(&|x| Some(x.tasks_per_core_s())),
            median(&|x| Some(x.sched_cpu_s / x.wall_s.max(1e-9))),
            median(&|x| Some(x.p50_us)),
            live(|l| l.prog_ns_per_run),
            live(|l| l.steer_ns_per_run),
            median(&|x| x
                .live
                .as_ref()
                .map(|l| per_task_ns(x.sched_cpu_s, l.leaf_ran))),
        );
    }
}

fn bench_capacity(a: CapacityArgs) -> Result<(), CliError> {
    use netsched_lab::capacity::{self, CapacityOpts, DaemonHost};
    let service = netsched_node::config::parse_service(&a.service)
        .map_err(|e| CliError::flag("--service")(e.into()))?;
    let daemon = if a.daemon_thread {
        DaemonHost::Thread
    } else {
        DaemonHost::Process(std::env::current_exe().map_err(CliError::os("own binary"))?)
    };
    let opts = CapacityOpts {
        workers: a.workers,
        service,
        p99_bound_us: a.p99_bound_us,
        min_completed: a.min_completed,
        start_rate: a.start_rate,
        max_rate: a.max_rate,
        refine_steps: a.refine_steps,
        fail_retries: a.fail_retries,
        probe_ms: a.probe_ms,
        repeats: a.repeats,
        setups: a.setups,
        batch: a.batch,
        coalesce_us: a.coalesce_us,
        daemon,
        nginx: a.nginx,
        seed: a.seed,
        ..Default::default()
    };
    opts.validate()?;
    eprintln!(
        "bench capacity: {} setup(s) x {} round(s), at most {} probes of {} ms each per search",
        opts.setups.len(),
        opts.repeats,
        opts.max_probes(),
        opts.probe_ms
    );
    let outcomes = capacity::run(&opts, |line| eprintln!("{line}"))?;
    outln!(
        "p99 bound {:.0} µs, >= {:.1} % answered; {} workers; service {}; daemon batch {}, coalesce {} µs",
        opts.p99_bound_us,
        opts.min_completed * 100.0,
        opts.workers,
        a.service,
        opts.batch,
        opts.coalesce_us
    );
    outln!("| round | setup | highest passing rate (tasks/s) | p99 µs | scheduler CPU share | tasks per scheduler CPU-s | probes |");
    outln!("|---|---|---|---|---|---|---|");
    for o in &outcomes {
        match &o.best {
            Some(p) => outln!(
                "| {} | {} | {:.0} | {:.0} | {:.0} % | {:.0} | {} |",
                o.round + 1,
                o.setup,
                p.rate,
                p.p99_us,
                p.cpu_share() * 100.0,
                p.tasks_per_cpu_s(),
                o.probes
            ),
            None => outln!(
                "| {} | {} | none passed | | | | {} |",
                o.round + 1,
                o.setup,
                o.probes
            ),
        }
    }
    let med = capacity::medians(&outcomes);
    outln!(
        "\nmedians over {} round(s)\n| setup | highest passing rate | tasks per scheduler CPU-s | rounds passing |\n|---|---|---|---|",
        opts.repeats
    );
    for (setup, rate, per_cpu, n) in &med {
        outln!("| {setup} | {rate:.0} | {per_cpu:.0} | {n} |");
    }
    let cost = capacity::cost_at_rates(&opts, &outcomes);
    let rates: Vec<f64> = cost
        .first()
        .map(|(_, row)| row.iter().map(|c| c.0).collect())
        .unwrap_or_default();
    let tried = |i: usize| cost.iter().any(|(_, row)| row[i].2 > 0);
    let cols: Vec<usize> = (0..rates.len()).filter(|&i| tried(i)).collect();
    outln!(
        "\ncost at equal offered rate: median tasks per scheduler CPU-s over every probe (pass or fail) at that rate (probes)"
    );
    let head: Vec<String> = cols.iter().map(|&i| format!("{:.0}/s", rates[i])).collect();
    outln!("| setup | {} |", head.join(" | "));
    outln!("|---|{}", "---|".repeat(cols.len()));
    for (setup, row) in &cost {
        let cells: Vec<String> = cols
            .iter()
            .map(|&i| match row[i] {
                (_, _, 0) => String::new(),
                (_, v, n) => format!("{v:.0} ({n})"),
            })
            .collect();
        outln!("| {setup} | {} |", cells.join(" | "));
    }
    let nginx = med.iter().find(|m| m.0 == "nginx");
    for (setup, hr, hc, _) in med.iter().filter(|m| m.0 != "nginx") {
        if let Some((_, nr, nc, _)) = nginx {
            outln!(
                "ratio {setup} / nginx: {:.2}x tasks per scheduler CPU-second, {:.2}x highest passing rate",
                hc / nc,
                hr / nr
            );
        }
    }
    Ok(())
}

/// Peak resident set size of this process (VmHWM), in bytes.
pub fn peak_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

fn bench_sim(
    tasks_per_worker: f64,
    pools: u32,
    policy: &str,
    threads: usize,
    floor_events: u64,
) -> Result<(), CliError> {
    let text = format!(
        r#"
seed = 1
policy = "{policy}"
threads = {threads}
[topology]
kind = "fat-tree"
radix = 48
[placement]
pools = {pools}
[workload]
service = {{ kind = "preset", name = "bimodal" }}
load = 0.9
tasks_per_worker = {tasks_per_worker}
"#
    );
    let cfg = SimConfig::from_toml(&text)?;
    let _ = Policy::parse(policy)?;
    let cpu_before = process_cpu_s()?;
    let start = Instant::now();
    let runs = run_config(
        &cfg,
        std::path::Path::new("."),
        &RunOpts {
            progress: true,
            ..RunOpts::default()
        },
    )?;
    let wall = start.elapsed().as_secs_f64();
    let cpu = process_cpu_s()? - cpu_before;
    crate::stdout::write(&report::table(&runs));
    let r = &runs[0];
    outln!(
        "bench sim: policy={policy} pools={pools} workers={} tasks={} events={}",
        r.workers,
        r.tasks,
        r.events
    );
    outln!(
        "bench sim: wall {:.1} s (setup {:.1} s), {:.2} M tasks/s, {:.2} M events/s, peak RSS {:.2} GiB",
        wall,
        r.setup_s,
        r.tasks as f64 / wall / 1e6,
        r.events as f64 / wall / 1e6,
        peak_rss_bytes().unwrap_or(0) as f64 / (1u64 << 30) as f64
    );
    let sim_ns_per_event = cpu * 1e9 / r.events.max(1) as f64;
    // CPU over wall: a run whose threads idle (a tail on one core) shows
    // here before anywhere else.
    outln!(
        "bench sim: CPU {cpu:.1} s ({:.2} cores busy on average), {:.2} M tasks per CPU-second, {:.2} events per task, {sim_ns_per_event:.1} ns of CPU per event",
        cpu / wall.max(1e-9),
        r.tasks as f64 / cpu / 1e6,
        r.events as f64 / r.tasks.max(1) as f64,
    );
    if floor_events > 0 {
        let pending = (r.workers as f64 / pools.max(1) as f64).round() as usize;
        // Successors a mean service time ahead, as a worker's completion is.
        let mean_delay_ns = 275_000;
        let t0 = netsched_node::net::thread_cpu_ns();
        std::hint::black_box(netsched_sim::pool::floor_loop(
            pending,
            floor_events,
            mean_delay_ns,
        ));
        let floor_ns = (netsched_node::net::thread_cpu_ns() - t0) as f64 / floor_events as f64;
        outln!(
            "bench sim: floor loop (bare binary-heap event loop, {pending} pending, {floor_events} events): {floor_ns:.1} ns of CPU per event; simulator / floor = {:.2}x",
            sim_ns_per_event / floor_ns
        );
    }
    Ok(())
}

/// User plus system CPU time of this process so far, seconds.
fn process_cpu_s() -> Result<f64, CliError> {
    netsched_node::metrics::ProcessStats::read()
        .map(|s| s.cpu_seconds)
        .map_err(CliError::os("reading /proc/self/stat"))
}

/// Runs `step` until `seconds` elapse; returns decisions per second.
/// Decisions per CPU-second of this thread: on a shared machine, wall time
/// would count the time other processes held the core.
fn measure(seconds: f64, mut step: impl FnMut() -> u64) -> f64 {
    // Warm up caches and branch predictors first.
    for _ in 0..10_000 {
        step();
    }
    let start = Instant::now();
    let cpu_start = netsched_node::net::thread_cpu_ns();
    let mut decisions = 0u64;
    loop {
        for _ in 0..10_000 {
            decisions += step();
        }
        if start.elapsed().as_secs_f64() >= seconds {
            let cpu_ns = netsched_node::net::thread_cpu_ns() - cpu_start;
            return decisions as f64 / (cpu_ns.max(1) as f64 * 1e-9);
        }
    }
}

/// Executes a data plane's resubmissions inline. Returns how many tasks were
/// dispatched and the last node chosen.
fn drive(dp: &mut impl DataPlane, now: u64, input: Input, out: &mut Outbox) -> (u64, u32) {
    let (mut decisions, mut node) = (0, 0);
    handle_resubmitting(dp, Nanos::new(now), input, out, |n| {
        decisions += 1;
        node = n;
    });
    (decisions, node)
}

fn bench_dataplane(seconds: f64) {
    let conn = ConnTableConfig::default();
    let task = TaskMeta {
        first: true,
        last: true,
        ..TaskMeta::default()
    };
    let reply = |node, qlen| Input::Reply {
        node,
        qlen,
        class: 0,
        task: 0,
    };
    outln!(
        "{:<52} {:>17}",
        "data plane (one core; each step = 1 task + 1 update)",
        "M decisions/CPU-s"
    );
    for workers in [24u32, 768] {
        // Busy leaf: every worker has a queue and each task is followed by one
        // reply, so decisions stay on the power-of-2 path.
        let mut leaf = HorusLeaf::new(workers, 1, conn);
        let mut out = Outbox::new();
        let mut rng = Rng::new(9);
        for _ in 0..workers * 4 {
            drive(&mut leaf, 0, Input::Task(task), &mut out);
        }
        let rate = measure(seconds, || {
            let (d, _) = drive(&mut leaf, 0, Input::Task(task), &mut out);
            out.clear();
            leaf.handle(Nanos::ZERO, reply(rng.below(workers), 3), &mut out);
            d
        });
        outln!(
            "{:<52} {:>17.1}",
            format!("horus leaf, {workers} workers, busy"),
            rate / 1e6
        );
        // Idle-rich leaf: every task finds an idle worker, which replies idle.
        let mut leaf = HorusLeaf::new(workers, 1, conn);
        let rate = measure(seconds, || {
            let (d, node) = drive(&mut leaf, 0, Input::Task(task), &mut out);
            out.clear();
            leaf.handle(Nanos::ZERO, reply(node, 0), &mut out);
            d
        });
        outln!(
            "{:<52} {:>17.1}",
            format!("horus leaf, {workers} workers, idle"),
            rate / 1e6
        );
    }
    for racks in [10u32, 1152] {
        // Busy spine: no idle rack, loads arrive as loadUpdates.
        let weights = vec![24u32; racks as usize];
        let mut spine = HorusSpine::new(&weights, 1, conn);
        let mut out = Outbox::new();
        for r in 0..racks {
            drive(&mut spine, 0, Input::IdleRemove { node: r }, &mut out);
        }
        let mut rng = Rng::new(5);
        let rate = measure(seconds, || {
            let (d, _) = drive(&mut spine, 0, Input::Task(task), &mut out);
            out.clear();
            spine.handle(
                Nanos::ZERO,
                Input::LoadUpdate {
                    node: rng.below(racks),
                    load: 3 << 16,
                },
                &mut out,
            );
            d
        });
        outln!(
            "{:<52} {:>17.1}",
            format!("horus spine, {racks} racks, busy"),
            rate / 1e6
        );
    }
}
