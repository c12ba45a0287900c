//! `netsched switch | worker | client` and `netsched bench switch`: the UDP
//! runtime of crates/node (docs/runtime.md).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use clap::Subcommand;
use netsched_config::pull::PullPolicy;
use netsched_lab::bench::{BenchOpts, BenchRole};
use netsched_node::cluster::{ClusterSpec, LocalCluster};
use netsched_node::config::{Policy, Target};
use netsched_node::pull;
use netsched_node::{Client, ClientConfig, SwitchConfig, Worker, WorkerConfig};

use crate::error::CliError;
use crate::stdout::outln;

#[derive(Subcommand)]
pub enum NodeCmd {
    /// Scheduler daemon: Horus spine/leaf instances (or baselines) from a TOML
    /// config; a config with a top-level `policy` runs a pull scheduler
    /// (Draconis, Draconis-Server, R2P2, Sparrow; docs/runtime.md).
    Switch {
        /// The daemon's TOML config: experiments/pull-runtime/switch.toml, or the
        /// spine*.toml and leaf*.toml `netsched cluster up` writes in run_dir/POLICY/.
        #[arg(short, long)]
        config: PathBuf,
        /// Stop after this many seconds (default: run until killed).
        #[arg(long)]
        duration_s: Option<f64>,
    },
    /// Worker agent: one executor thread per listen address; a config naming
    /// a `scheduler` runs pull executors.
    Worker {
        /// The daemon's TOML config: experiments/pull-runtime/worker.toml, or the
        /// worker*.toml `netsched cluster up` writes in run_dir/POLICY/.
        #[arg(short, long)]
        config: PathBuf,
        /// Stop after this many seconds (default: run until killed).
        #[arg(long)]
        duration_s: Option<f64>,
    },
    /// Open-loop Poisson client; prints the accounting and latency
    /// percentiles. A config naming a `scheduler` submits jobs to a pull
    /// scheduler.
    Client {
        /// The client's TOML config: experiments/pull-runtime/client.toml, or the
        /// client.toml `netsched cluster up` writes in run_dir/POLICY/.
        #[arg(short, long)]
        config: PathBuf,
        /// Override the config's rate (tasks/s).
        #[arg(long)]
        rate: Option<f64>,
        /// Override the config's duration (ms).
        #[arg(long)]
        duration_ms: Option<u64>,
        /// Also write the report as JSON to this file.
        #[arg(long)]
        json: Option<PathBuf>,
    },
    /// Centralized controller (Horus §3.2, §A.3): topology, failure handling,
    /// configuration pushes, bearer-token admin API (docs/runtime.md).
    Controller {
        /// The daemon's TOML config: the controller.toml `netsched cluster up`
        /// writes in run_dir/POLICY/ (docs/runtime.md).
        #[arg(short, long)]
        config: PathBuf,
        /// Stop after this many seconds (default: run until killed).
        #[arg(long)]
        duration_s: Option<f64>,
    },
    /// A local cluster in one process (spine, leaves, executors as threads on
    /// loopback) under an open-loop client; prints the client's report.
    /// `netsched cluster up CONFIG` instead starts every daemon as a separate
    /// process, per policy, beside the simulator (docs/lab.md).
    Cluster(ClusterArgs),
}

#[derive(clap::Args)]
pub struct ClusterArgs {
    /// `up`: run the multi-process datacenter of CONFIG (`cluster up CONFIG`).
    #[arg(value_name = "up")]
    action: Option<String>,
    /// The cluster-up config (experiments/cluster*.toml).
    #[arg(value_name = "CONFIG")]
    up_config: Option<PathBuf>,
    /// Racks (one leaf each) under the spine.
    #[arg(long, default_value_t = 2)]
    racks: usize,
    /// Executors (workers) per rack.
    #[arg(long, default_value_t = 2)]
    executors: usize,
    /// horus | random | round-robin | rs-lb (random spine, RackSched leaves) | rs-h
    #[arg(long, default_value = netsched_core::Policy::Horus.name())]
    policy: String,
    /// Tasks per second.
    #[arg(long, default_value_t = 2000.0)]
    rate: f64,
    /// How long the client sends (ms).
    #[arg(long, default_value_t = 3000)]
    duration_ms: u64,
    /// Service-time distribution as a TOML inline table (µs), as in configs.
    #[arg(long, default_value = "{ kind = \"exp\", mean_us = 100 }")]
    service: String,
    /// A task without a reply after this long (ms) counts as timed out.
    #[arg(long, default_value_t = 1000)]
    timeout_ms: u64,
    /// Seed of the client's arrivals and service times.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Also write the client's report as JSON to this file.
    #[arg(long)]
    json: Option<PathBuf>,
}

#[derive(clap::Args)]
pub struct BenchSwitchArgs {
    /// Role of the daemon under test: leaf or spine.
    #[arg(long, default_value = "leaf")]
    role: String,
    /// Downstream nodes (workers or racks).
    #[arg(long, default_value_t = 16)]
    nodes: u32,
    /// Seconds of saturation.
    #[arg(long, default_value_t = 3.0)]
    seconds: f64,
    /// Tasks in flight during the throughput part.
    #[arg(long, default_value_t = 64)]
    window: usize,
    /// Rate of the latency part, tasks/s.
    #[arg(long, default_value_t = 2000.0)]
    low_rate: f64,
    /// Data plane of the daemon: horus, racksched, random, round-robin, jsq,
    /// jiq, pow2-instant, pow2-delayed, idle-only, central, r2p2.
    #[arg(long, default_value = netsched_core::Policy::Horus.name())]
    policy: String,
}

type MetricsServer = Option<(std::net::SocketAddr, std::thread::JoinHandle<()>)>;

/// The Prometheus endpoint of a worker or client process, if its config
/// names one.
fn serve_metrics(
    addr: &Option<String>,
    registry: Arc<netsched_node::metrics::Registry>,
    stop: &Arc<AtomicBool>,
) -> Result<MetricsServer, CliError> {
    match addr {
        Some(a) => netsched_node::metrics::serve(a, registry, stop.clone())
            .map(Some)
            .map_err(|e| CliError::at(a.clone())(e.into())),
        None => Ok(None),
    }
}

/// `netsched worker` with a pull config: executors until `stop`.
fn pull_worker(cfg: &pull::PullWorkerConfig, stop: Arc<AtomicBool>) -> Result<(), CliError> {
    let w = pull::PullWorker::bind(cfg, stop.clone())?;
    let metrics = serve_metrics(&cfg.metrics, w.registry(), &stop)?;
    let addrs: Vec<String> = w.addrs().iter().map(|a| a.to_string()).collect();
    tracing::info!(
        target: "pull-worker",
        executors = %addrs.join(","),
        scheduler = %cfg.scheduler,
        policy = %cfg.policy.name(),
        "started"
    );
    w.join();
    if let Some((_, h)) = metrics {
        let _ = h.join();
    }
    tracing::info!(target: "pull-worker", "stopped");
    Ok(())
}

/// What `bench pull` compares unless told: every pull scheduler family.
const BENCH_PULL_POLICIES: [PullPolicy; 4] = [
    PullPolicy::Draconis,
    PullPolicy::DraconisServer,
    PullPolicy::R2p2Recirc,
    PullPolicy::Sparrow,
];

#[derive(clap::Args)]
pub struct BenchPullArgs {
    /// Comma-separated pull policies.
    #[arg(long, value_delimiter = ',', default_values = BENCH_PULL_POLICIES.map(PullPolicy::name))]
    policies: Vec<String>,
    /// Executors (one worker thread each) pulling from the scheduler.
    #[arg(long, default_value_t = 8)]
    executors: usize,
    /// Tasks/s of the throughput part (jobs of 8 empty tasks).
    #[arg(long, default_value_t = 20_000.0)]
    rate: f64,
    /// Seconds per run.
    #[arg(long, default_value_t = 2.0)]
    seconds: f64,
    /// Fixed service time of the latency part, µs.
    #[arg(long, default_value_t = 1_000.0)]
    service_us: f64,
    /// Comma-separated loads of the latency part.
    #[arg(long, default_value = "0.2,0.4,0.6,0.8")]
    loads: String,
    /// Executors' retry after a no-op, µs.
    #[arg(long, default_value_t = 50)]
    retry_us: u64,
    /// Skip the latency part.
    #[arg(long)]
    throughput_only: bool,
    /// Saturation part: tasks the closed-loop client keeps outstanding
    /// (0 skips the part).
    #[arg(long, default_value_t = 32)]
    window: u32,
    /// Saturation part: rounds over all policies; medians are reported.
    #[arg(long, default_value_t = 3)]
    repeats: usize,
}

pub fn bench_pull(a: BenchPullArgs) -> Result<(), CliError> {
    use netsched_lab::pull_bench as bench;
    let policies = a
        .policies
        .iter()
        .map(|p| PullPolicy::parse(p.trim()).map_err(|e| CliError::flag("--policies")(e.into())))
        .collect::<Result<Vec<_>, _>>()?;
    let loads = a
        .loads
        .split(',')
        .map(|l| {
            l.trim()
                .parse::<f64>()
                .ok()
                .filter(|x| *x > 0.0 && *x < 1.0)
                .ok_or_else(|| {
                    CliError::Usage(format!("--loads: each load must be in (0, 1), got '{l}'"))
                })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let positive = |x: f64| x.is_finite() && x > 0.0;
    if a.executors == 0 || ![a.seconds, a.service_us, a.rate].into_iter().all(positive) {
        return Err(CliError::Usage(
            "--executors, --seconds, --service-us and --rate must be positive".into(),
        ));
    }
    let o = bench::PullBenchOpts {
        policies,
        executors: a.executors,
        rate: a.rate,
        duration: Duration::from_secs_f64(a.seconds),
        service_us: a.service_us,
        loads,
        retry_us: a.retry_us,
        window: a.window,
        repeats: a.repeats,
    };
    eprintln!(
        "throughput: {} policies × {:.1} s",
        o.policies.len(),
        a.seconds
    );
    let t = bench::throughput(&o)?;
    outln!("{}", bench::throughput_table(&t));
    if o.window > 0 && o.repeats > 0 {
        if (o.window as usize) < 8 {
            return Err(CliError::Usage(
                "--window: at least one job of 8 tasks".into(),
            ));
        }
        eprintln!(
            "saturation: {} rounds × {} policies × {:.1} s, {} tasks outstanding",
            o.repeats,
            o.policies.len(),
            a.seconds,
            o.window
        );
        let s = bench::saturation(&o)?;
        outln!("{}", bench::saturation_table(&s));
    }
    if !a.throughput_only {
        eprintln!(
            "latency: {} policies × {} loads × {:.1} s",
            o.policies.len(),
            o.loads.len(),
            a.seconds
        );
        let l = bench::latency(&o)?;
        outln!("{}", bench::latency_table(&l));
    }
    Ok(())
}

/// A config holding a secret inline (`token`, `key`) must be as private as a
/// secret file: mode 0600 or stricter.
fn inline_secret(path: &std::path::Path, has_secret: bool) -> Result<(), CliError> {
    if has_secret {
        netsched_node::secret::check_private(path).map_err(CliError::InlineSecret)?;
    }
    Ok(())
}

fn read(path: &Path) -> Result<String, CliError> {
    std::fs::read_to_string(path).map_err(|e| CliError::in_file(path)(e.into()))
}

fn stop_after(duration_s: Option<f64>) -> Arc<AtomicBool> {
    let stop = Arc::new(AtomicBool::new(false));
    if let Some(s) = duration_s {
        let st = stop.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_secs_f64(s.max(0.0)));
            st.store(true, Ordering::Relaxed);
        });
    }
    stop
}

/// The stop flag of a daemon: set after `duration_s` if given, and on
/// SIGTERM or SIGINT (logged), after which the daemon logs `stopped` and the
/// process exits 0.
fn stop_on_signals(
    daemon: &'static str,
    duration_s: Option<f64>,
) -> Result<Arc<AtomicBool>, CliError> {
    let stop = stop_after(duration_s);
    netsched_node::log::stop_on_signals(daemon, stop.clone())
        .map_err(CliError::os("signal handlers"))?;
    Ok(stop)
}

/// A `netsched switch` config: a pull scheduler's (top-level `policy`) or
/// push instances'.
pub enum SwitchFile {
    Pull(pull::PullSwitchConfig),
    Push(SwitchConfig),
}

/// A `netsched worker` config: pull executors (names a `scheduler`) or push.
pub enum WorkerFile {
    Pull(pull::PullWorkerConfig),
    Push(WorkerConfig),
}

/// A `netsched client` config: pull jobs (names a `scheduler`) or push tasks.
pub enum ClientFile {
    Pull(pull::PullClientConfig),
    Push(ClientConfig),
}

/// Reads and validates a switch config as `netsched switch` and
/// `netsched check` do.
pub fn load_switch(path: &Path) -> Result<SwitchFile, CliError> {
    let text = read(path)?;
    if pull::config::is_pull_config(&text, "policy") {
        return pull::PullSwitchConfig::from_toml(&text)
            .map(SwitchFile::Pull)
            .map_err(|e| CliError::in_file(path)(e.into()));
    }
    let cfg = SwitchConfig::from_toml(&text).map_err(|e| CliError::in_file(path)(e.into()))?;
    inline_secret(path, cfg.key.is_some())?;
    Ok(SwitchFile::Push(cfg))
}

/// Reads and validates a worker config (`netsched worker`, `check`).
pub fn load_worker(path: &Path) -> Result<WorkerFile, CliError> {
    let text = read(path)?;
    if pull::config::is_pull_config(&text, "scheduler") {
        return pull::PullWorkerConfig::from_toml(&text)
            .map(WorkerFile::Pull)
            .map_err(|e| CliError::in_file(path)(e.into()));
    }
    let cfg = WorkerConfig::from_toml(&text).map_err(|e| CliError::in_file(path)(e.into()))?;
    inline_secret(path, cfg.key.is_some())?;
    Ok(WorkerFile::Push(cfg))
}

/// Reads and validates a client config (`netsched client`, `check`).
pub fn load_client(path: &Path) -> Result<ClientFile, CliError> {
    let text = read(path)?;
    if pull::config::is_pull_config(&text, "scheduler") {
        return pull::PullClientConfig::from_toml(&text)
            .map(ClientFile::Pull)
            .map_err(|e| CliError::in_file(path)(e.into()));
    }
    let cfg = ClientConfig::from_toml(&text).map_err(|e| CliError::in_file(path)(e.into()))?;
    inline_secret(
        path,
        cfg.controller.as_ref().is_some_and(|c| c.token.is_some()),
    )?;
    Ok(ClientFile::Push(cfg))
}

/// Reads and validates a controller config (`netsched controller`, `check`).
pub fn load_controller(
    path: &Path,
) -> Result<netsched_node::controller::ControllerConfig, CliError> {
    let cfg = netsched_node::controller::ControllerConfig::from_toml(&read(path)?)
        .map_err(|e| CliError::in_file(path)(e.into()))?;
    inline_secret(path, cfg.token.is_some() || cfg.key.is_some())?;
    Ok(cfg)
}

/// Reads and validates a `cluster up` config (`netsched cluster up`, `check`).
pub fn load_cluster_up(path: &Path) -> Result<netsched_lab::cluster_up::ClusterUpConfig, CliError> {
    netsched_lab::cluster_up::ClusterUpConfig::from_toml(&read(path)?)
        .map_err(|e| CliError::in_file(path)(e.into()))
}

pub fn run(cmd: NodeCmd) -> Result<(), CliError> {
    match cmd {
        NodeCmd::Cluster(a) => cluster(a),
        NodeCmd::Controller { config, duration_s } => {
            let cfg = load_controller(&config)?;
            Ok(netsched_node::controller::run_config(
                &cfg,
                stop_on_signals("controller", duration_s)?,
            )?)
        }
        NodeCmd::Switch { config, duration_s } => {
            let cfg = match load_switch(&config)? {
                SwitchFile::Pull(cfg) => {
                    return pull::run_config(&cfg, stop_on_signals("pull-switch", duration_s)?)
                        .map_err(CliError::from)
                }
                SwitchFile::Push(cfg) => cfg,
            };
            Ok(netsched_node::switch::run_config(
                &cfg,
                stop_on_signals("switch", duration_s)?,
            )?)
        }
        NodeCmd::Worker { config, duration_s } => {
            let file = load_worker(&config)?;
            // SIGTERM / Ctrl-C stop the executors, so that the worker's
            // RocksDB directory (in /dev/shm) is removed on the way out.
            let stop = stop_on_signals("worker", duration_s)?;
            let cfg = match file {
                WorkerFile::Pull(cfg) => return pull_worker(&cfg, stop),
                WorkerFile::Push(cfg) => cfg,
            };
            let w = Worker::bind(&cfg, stop.clone())?;
            let metrics = serve_metrics(&cfg.metrics, w.registry(), &stop)?;
            let addrs: Vec<String> = w.addrs().iter().map(|a| a.to_string()).collect();
            tracing::info!(
                target: "worker",
                executors = %addrs.join(","),
                leaf = %cfg.leaf.map_or_else(|| "any".to_string(), |a| a.to_string()),
                "started"
            );
            w.join();
            if let Some((_, h)) = metrics {
                let _ = h.join();
            }
            tracing::info!(target: "worker", "stopped");
            Ok(())
        }
        NodeCmd::Client {
            config,
            rate,
            duration_ms,
            json,
        } => {
            let mut cfg = match load_client(&config)? {
                ClientFile::Pull(mut cfg) => {
                    cfg.rate = rate.unwrap_or(cfg.rate);
                    cfg.duration_ms = duration_ms.unwrap_or(cfg.duration_ms);
                    cfg.validate()?;
                    let r = pull::PullClient::bind(cfg)?.run();
                    if let Some(p) = json {
                        std::fs::write(&p, r.to_json() + "\n")
                            .map_err(|e| CliError::in_file(&p)(e.into()))?;
                    }
                    outln!("{}", r.summary());
                    return some_completed(r.submitted, r.completed);
                }
                ClientFile::Push(cfg) => cfg,
            };
            if let Some(r) = rate {
                cfg.rate = r;
            }
            if let Some(d) = duration_ms {
                cfg.duration_ms = d;
            }
            let metrics_addr = cfg.metrics.clone();
            let mut c = Client::bind(cfg)?;
            // The live series, for as long as the client runs.
            let stop = Arc::new(AtomicBool::new(false));
            let metrics = serve_metrics(&metrics_addr, c.registry(), &stop)?;
            let r = c.run();
            stop.store(true, Ordering::Relaxed);
            if let Some((_, h)) = metrics {
                let _ = h.join();
            }
            if let Some(p) = json {
                std::fs::write(&p, r.to_json() + "\n")
                    .map_err(|e| CliError::in_file(&p)(e.into()))?;
            }
            outln!("{}", r.summary());
            some_completed(r.submitted, r.completed)
        }
    }
}

/// A client run in which no task completed is a failure (exit 1), not a
/// report of `p99_us: 0` with exit 0: a script must not mistake a dead
/// scheduler for a fast one. The report above says how each task ended.
fn some_completed(submitted: u64, completed: u64) -> Result<(), CliError> {
    match (submitted, completed) {
        (0, _) => Err(CliError::Run(
            "the client sent no task (rate or duration too small?)".into(),
        )),
        (n, 0) => Err(CliError::Run(format!(
            "none of the {n} tasks completed (see failed/timed_out above): is the scheduler \
             at the target address running?"
        ))),
        _ => Ok(()),
    }
}

fn cluster(a: ClusterArgs) -> Result<(), CliError> {
    if let Some(act) = &a.action {
        return cluster_up(act, a.up_config.as_ref());
    }
    // One policy names the system; each layer runs its data plane.
    let policy = Policy::parse(&a.policy)?;
    let (spine, leaf) = (policy, policy);
    let service = netsched_node::config::parse_service(&a.service)
        .map_err(|e| CliError::flag("--service")(e.into()))?;
    let c = LocalCluster::start(&ClusterSpec {
        racks: a.racks,
        executors: a.executors,
        spine_policy: spine,
        leaf_policy: leaf,
        seed: a.seed,
        ..ClusterSpec::default()
    })?;
    let cfg = ClientConfig {
        targets: vec![Target {
            addr: c.spine,
            weight: 1.0,
        }],
        pool: 1,
        app_id: 1,
        rate: a.rate,
        duration_ms: a.duration_ms,
        service,
        timeout_ms: a.timeout_ms,
        seed: a.seed,
        bind: "127.0.0.1:0".into(),
        ..Default::default()
    };
    let report = Client::bind(cfg).map(|mut cl| cl.run());
    c.shutdown()?;
    let r = report?;
    outln!(
        "cluster: {} racks x {} executors, policy {}",
        a.racks,
        a.executors,
        a.policy
    );
    outln!("{}", r.summary());
    if let Some(p) = a.json {
        std::fs::write(&p, r.to_json() + "\n").map_err(|e| CliError::in_file(&p)(e.into()))?;
    }
    Ok(())
}

pub fn bench_switch(a: BenchSwitchArgs) -> Result<(), CliError> {
    let role = match a.role.as_str() {
        "leaf" => BenchRole::Leaf,
        "spine" => BenchRole::Spine,
        r => {
            return Err(CliError::Usage(format!(
                "unknown role {r:?} (leaf or spine)"
            )))
        }
    };
    let opts = BenchOpts {
        role,
        policy: netsched_lab::bench::parse_policy(&a.policy)?,
        nodes: a.nodes,
        duration: Duration::from_secs_f64(a.seconds),
        window: a.window,
        low_rate: a.low_rate,
        ..BenchOpts::default()
    };
    let r = netsched_lab::bench::run(&opts)?;
    outln!(
        "daemon role {} policy {} over {} nodes",
        a.role,
        a.policy,
        a.nodes
    );
    outln!("{}", r.summary());
    Ok(())
}

#[derive(clap::Args)]
pub struct BenchNginxArgs {
    /// Single-executor workers shared by every setup.
    #[arg(long, default_value_t = 4)]
    workers: usize,
    /// Service-time distribution as a TOML inline table (µs).
    #[arg(long, default_value = "{ kind = \"exp\", mean_us = 500 }")]
    service: String,
    /// Offered loads, fractions of the workers' capacity, comma-separated.
    #[arg(long, default_value = "0.3,0.5,0.7,0.8,0.9", value_delimiter = ',')]
    loads: Vec<f64>,
    /// How long each (load, setup) round sends (ms).
    #[arg(long, default_value_t = 3000)]
    duration_ms: u64,
    /// Setups in run order: horus, racksched, nginx.
    #[arg(
        long,
        default_values = [Policy::Horus.name(), Policy::Racksched.name(), netsched_lab::nginx::NGINX_SETUP],
        value_delimiter = ','
    )]
    setups: Vec<String>,
    /// RocksDB tasks on an embedded database of this many keys (0: synthetic).
    #[arg(long, default_value_t = 0)]
    rocksdb_keys: u32,
    /// The nginx binary (Debian's by default).
    #[arg(long, default_value = netsched_lab::nginx::DEFAULT_NGINX)]
    nginx: PathBuf,
    /// Seed of the clients' arrivals and service times.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Rounds over every (load, setup); the summary shows medians.
    #[arg(long, default_value_t = 1)]
    repeats: usize,
    /// Also write the rows as CSV here.
    #[arg(long)]
    csv: Option<PathBuf>,
}

pub fn bench_nginx(a: BenchNginxArgs) -> Result<(), CliError> {
    let service = netsched_node::config::parse_service(&a.service)
        .map_err(|e| CliError::flag("--service")(e.into()))?;
    let opts = netsched_lab::nginx::NginxBenchOpts {
        workers: a.workers,
        service,
        loads: a.loads,
        duration_ms: a.duration_ms,
        setups: a.setups,
        nginx: a.nginx,
        rocksdb_keys: a.rocksdb_keys,
        seed: a.seed,
        repeats: a.repeats,
        ..Default::default()
    };
    opts.validate()?;
    outln!("{}", netsched_lab::nginx::Row::HEADER);
    let rows = netsched_lab::nginx::run(&opts, |r| outln!("{}", r.line()))?;
    outln!(
        "\nmedians over {} round(s)\n| setup | load | p50 µs | p99 µs | p99.9 µs | completed / submitted | timed out |\n|---|---|---|---|---|---|---|",
        opts.repeats
    );
    for (setup, load, p, t) in netsched_lab::nginx::medians(&rows) {
        outln!(
            "| {setup} | {load:.2} | {:.0} | {:.0} | {:.0} | {} / {} | {} |",
            p[0],
            p[1],
            p[2],
            t[0],
            t[1],
            t[2]
        );
    }
    if let Some(p) = a.csv {
        let mut out = String::from(
            "round,setup,load,rate,submitted,completed,failed,timed_out,p50_us,p99_us,p999_us\n",
        );
        for r in &rows {
            let c = &r.report;
            out += &format!(
                "{},{},{},{:.1},{},{},{},{},{:.1},{:.1},{:.1}\n",
                r.round,
                r.setup,
                r.load,
                r.rate,
                c.submitted,
                c.completed,
                c.failed_total(),
                c.timed_out,
                c.percentile_us(0.5),
                c.percentile_us(0.99),
                c.percentile_us(0.999)
            );
        }
        std::fs::write(&p, out).map_err(|e| CliError::in_file(&p)(e.into()))?;
    }
    Ok(())
}

/// `netsched cluster up CONFIG`: the multi-process local datacenter.
fn cluster_up(action: &str, config: Option<&PathBuf>) -> Result<(), CliError> {
    if action != "up" {
        return Err(CliError::Usage(format!(
            "cluster: unknown action {action:?} (only `up CONFIG`)"
        )));
    }
    let config = config.ok_or_else(|| CliError::Usage("cluster up: missing CONFIG".into()))?;
    let cfg = load_cluster_up(config)?;
    let bin = std::env::current_exe()?;
    crate::cluster_up::run(&cfg, &bin).map(|_| ())
}
