//! `netsched bench nginx`: p99 response time against offered load for Horus
//! and RackSched, beside nginx's UDP stream proxy with `random two
//! least_conn` (the software power-of-two balancer an operator might deploy
//! instead), in front of the same workers, with the same client, in one run.
//!
//! Horus and nginx share one set of single-executor workers (a FCFS queue
//! each, Horus §3.1); RackSched runs on its own system's servers over the
//! same number of cores: `workers / racksched_executors` servers whose
//! executors share a cFCFS queue and preempt requests after 250 µs
//! (RackSched §3.1, §4). Only one setup runs at a time.
//!
//! | setup | path | scheduler |
//! |---|---|---|
//! | `horus` | client → leaf → worker → leaf → client | Horus leaf (idle list + lazy power-of-2) |
//! | `racksched` | same, RackSched wire (REQF/REP), to RackSched servers | RackSched power-of-2 on LOAD |
//! | `nginx` | client → nginx → worker → nginx → client | `random two least_conn` on open sessions |
//! | any other daemon policy (`jsq`, `central`, …) | as `horus` | that data plane |
//!
//! nginx as a UDP proxy cannot route a reply along a multi-hop path (it
//! relays only what comes back on the upstream socket it opened), so the
//! workers reply to whoever sent them the task: the leaf daemon for the
//! first two setups, nginx's per-session upstream socket for the third. All
//! three paths are therefore 4 loopback hops. nginx runs with one worker
//! process (the daemon is one thread), `proxy_requests 1` (every datagram is
//! its own session, hence its own balancing decision; without it all of a
//! client's datagrams stick to one upstream) and `proxy_responses 1` (the
//! session, and its least_conn count, ends with the reply), and 4 MiB
//! socket buffers like the daemon's (`netsched_node::net::prepare`). nginx's
//! least_conn thus counts tasks outstanding at each worker, which is exactly
//! what a worker's queue holds.

use std::io::Write;
use std::net::{SocketAddr, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use netsched_config::workload::ServiceDist;

use crate::error::Error;
use netsched_node::config::{ClientConfig, ConfigError, Policy, Target, WireFamily};
use netsched_node::{Client, ClientReport, SwitchConfig, SwitchDaemon, Worker, WorkerConfig};

/// Where Debian's nginx and its stream module live.
pub const DEFAULT_NGINX: &str = "/usr/sbin/nginx";
pub const DEFAULT_STREAM_MODULE: &str = "/usr/lib/nginx/modules/ngx_stream_module.so";

#[derive(Clone, Debug)]
pub struct NginxBenchOpts {
    pub workers: usize,
    pub service: ServiceDist,
    /// Offered loads as fractions of the workers' capacity n / s̄.
    pub loads: Vec<f64>,
    pub duration_ms: u64,
    pub setups: Vec<String>,
    pub nginx: PathBuf,
    pub stream_module: PathBuf,
    /// Nonzero: RocksDB GET/SCAN tasks on an embedded database of this many
    /// keys (classes of `service` pick GET or SCAN; its times give s̄).
    pub rocksdb_keys: u32,
    pub seed: u64,
    pub timeout_ms: u64,
    /// Rounds over (load, setup); figures are medians over rounds.
    pub repeats: usize,
    /// Executors per RackSched server (must divide `workers`).
    pub racksched_executors: usize,
    /// RackSched servers preempt a request after this long (0: never).
    pub racksched_preempt_us: u64,
}

impl Default for NginxBenchOpts {
    fn default() -> Self {
        NginxBenchOpts {
            workers: 4,
            service: ServiceDist::Exp { mean_us: 500.0 },
            loads: vec![0.3, 0.5, 0.7, 0.8, 0.9],
            duration_ms: 3000,
            setups: vec![
                Policy::Horus.name().into(),
                Policy::Racksched.name().into(),
                NGINX_SETUP.into(),
            ],
            nginx: DEFAULT_NGINX.into(),
            stream_module: DEFAULT_STREAM_MODULE.into(),
            rocksdb_keys: 0,
            seed: 1,
            timeout_ms: 2000,
            repeats: 1,
            racksched_executors: 2,
            racksched_preempt_us: 250,
        }
    }
}

pub use crate::error::NginxError;

impl NginxBenchOpts {
    /// One-line errors for bad options, before anything starts.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.workers == 0 || self.loads.is_empty() {
            return Err(ConfigError::Invalid(
                "need at least one worker and one load".into(),
            ));
        }
        if self.racksched_executors == 0 || !self.workers.is_multiple_of(self.racksched_executors) {
            return Err(ConfigError::Invalid(format!(
                "racksched_executors ({}) must divide workers ({})",
                self.racksched_executors, self.workers
            )));
        }
        if let Some(l) = self.loads.iter().find(|l| !(**l > 0.0 && **l <= 1.0)) {
            return Err(ConfigError::Invalid(format!(
                "loads must be in (0, 1], got {l}"
            )));
        }
        for s in &self.setups {
            Setup::parse(s)?;
        }
        Ok(())
    }
}

/// One (setup, load) measurement.
#[derive(Debug)]
pub struct Row {
    pub round: usize,
    pub setup: String,
    pub load: f64,
    pub rate: f64,
    pub report: ClientReport,
}

impl Row {
    pub fn line(&self) -> String {
        let r = &self.report;
        format!(
            "| {} | {} | {:.2} | {:.0} | {} / {} | {} | {} | {:.0} | {:.0} | {:.0} | {:.0} |",
            self.round,
            self.setup,
            self.load,
            self.rate,
            r.completed,
            r.submitted,
            r.failed_total(),
            r.timed_out,
            r.percentile_us(0.5),
            r.percentile_us(0.99),
            r.percentile_us(0.999),
            r.max_send_lag_ns as f64 / 1e3,
        )
    }

    pub const HEADER: &'static str = "| round | setup | load | rate (tasks/s) | completed | failed | timed out | p50 µs | p99 µs | p99.9 µs | client send lag µs |\n|---|---|---|---|---|---|---|---|---|---|---|";
}

/// A running nginx in a private temporary directory; killed and cleaned up
/// on drop.
pub struct Nginx {
    child: Child,
    dir: PathBuf,
    pub listen: SocketAddr,
}

/// The nginx.conf of the comparison (module doc).
pub fn nginx_conf(
    dir: &Path,
    module: &Path,
    listen: SocketAddr,
    upstreams: &[SocketAddr],
) -> String {
    let servers: String = upstreams
        .iter()
        .map(|a| format!("        server {a};\n"))
        .collect();
    format!(
        "load_module {module};\n\
         worker_processes 1;\n\
         worker_rlimit_nofile 65536;\n\
         daemon off;\n\
         master_process off;\n\
         pid {dir}/nginx.pid;\n\
         error_log {dir}/error.log error;\n\
         events {{ worker_connections 32768; }}\n\
         stream {{\n\
         \x20   upstream workers {{\n\
         \x20       random two least_conn;\n\
         {servers}\
         \x20   }}\n\
         \x20   server {{\n\
         \x20       listen {listen} udp rcvbuf=4m sndbuf=4m;\n\
         \x20       proxy_pass workers;\n\
         \x20       proxy_requests 1;\n\
         \x20       proxy_responses 1;\n\
         \x20       proxy_timeout 5s;\n\
         \x20   }}\n\
         }}\n",
        module = module.display(),
        dir = dir.display(),
    )
}

impl Nginx {
    /// Starts nginx proxying UDP on a free loopback port to `upstreams`.
    pub fn start(bin: &Path, module: &Path, upstreams: &[SocketAddr]) -> Result<Nginx, Error> {
        // A free port: bind, read, release (nginx binds it right after).
        let listen = UdpSocket::bind("127.0.0.1:0").and_then(|s| s.local_addr())?;
        Nginx::start_at(bin, module, listen, upstreams)
    }

    /// Starts nginx proxying UDP on `listen` to `upstreams` (in the calling
    /// thread's network namespace).
    pub fn start_at(
        bin: &Path,
        module: &Path,
        listen: SocketAddr,
        upstreams: &[SocketAddr],
    ) -> Result<Nginx, Error> {
        if !bin.exists() {
            return Err(NginxError::NotInstalled {
                path: bin.to_path_buf(),
                packages: "nginx libnginx-mod-stream",
            }
            .into());
        }
        if !module.exists() {
            return Err(NginxError::NotInstalled {
                path: module.to_path_buf(),
                packages: "libnginx-mod-stream",
            }
            .into());
        }
        let dir = std::env::temp_dir().join(format!(
            "netsched-nginx-{}-{}",
            std::process::id(),
            listen.port()
        ));
        std::fs::create_dir_all(&dir).map_err(|e| Error::io(dir.display(), e))?;
        let conf = dir.join("nginx.conf");
        std::fs::File::create(&conf)
            .and_then(|mut f| f.write_all(nginx_conf(&dir, module, listen, upstreams).as_bytes()))
            .map_err(|e| Error::io(conf.display(), e))?;
        let child = Command::new(bin)
            .arg("-p")
            .arg(&dir)
            .arg("-c")
            .arg(&conf)
            .arg("-e")
            .arg(dir.join("error.log"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| Error::io(bin.display(), e))?;
        let mut n = Nginx { child, dir, listen };
        // Ready when it holds the port; fail fast if it exited.
        for _ in 0..100 {
            if let Ok(Some(status)) = n.child.try_wait() {
                let log = std::fs::read_to_string(n.dir.join("error.log")).unwrap_or_default();
                return Err(NginxError::Exited {
                    status,
                    log: log.trim().to_string(),
                }
                .into());
            }
            if UdpSocket::bind(listen).is_err() {
                return Ok(n);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Err(NginxError::NoBind.into())
    }
}

impl Nginx {
    /// The nginx process (one worker, no master: it does all the proxying).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn loopback() -> Result<UdpSocket, Error> {
    Ok(UdpSocket::bind("127.0.0.1:0")?)
}

/// The config of a standalone leaf of `policy` over `workers` (pool 1).
pub(crate) fn leaf_toml(
    policy: Policy,
    workers: &[SocketAddr],
    listen: SocketAddr,
    batch: usize,
    coalesce_us: u64,
) -> String {
    let list: Vec<String> = workers.iter().map(|a| format!("\"{a}\"")).collect();
    format!(
        "listen = \"{listen}\"\nbatch = {batch}\ncoalesce_us = {coalesce_us}\n[[instance]]\npool = 1\nrole = \"leaf\"\n\
         policy = \"{}\"\ndownstream = [{}]\n",
        policy.name(),
        list.join(", ")
    )
}

/// A standalone leaf daemon of `policy` over `workers`, on its own thread.
fn leaf(
    policy: Policy,
    workers: &[SocketAddr],
    stop: &Arc<AtomicBool>,
) -> Result<(SocketAddr, std::thread::JoinHandle<()>), Error> {
    let listen: SocketAddr = "127.0.0.1:0".parse().expect("literal address");
    let batch = SwitchConfig::default().batch;
    let cfg = SwitchConfig::from_toml(&leaf_toml(policy, workers, listen, batch, 0))?;
    let mut d = SwitchDaemon::new(&cfg, loopback()?)?;
    let addr = d.local_addr();
    let s = stop.clone();
    let h = std::thread::spawn(move || {
        let _ = d.run(&s);
    });
    Ok((addr, h))
}

fn client(
    opts: &NginxBenchOpts,
    target: SocketAddr,
    wire: WireFamily,
    rate: f64,
    app_id: u32,
) -> Result<ClientReport, Error> {
    let mut c = Client::bind(ClientConfig {
        targets: vec![Target {
            addr: target,
            weight: 1.0,
        }],
        pool: 1,
        app_id,
        rate,
        duration_ms: opts.duration_ms,
        service: opts.service.clone(),
        timeout_ms: opts.timeout_ms,
        seed: opts.seed,
        wire,
        rocksdb_keys: opts.rocksdb_keys,
        ..Default::default()
    })?;
    Ok(c.run())
}

/// Runs every setup at every load against one set of workers; calls
/// `progress` with each row as it completes.
pub fn run(opts: &NginxBenchOpts, mut progress: impl FnMut(&Row)) -> Result<Vec<Row>, Error> {
    opts.validate()?;
    let mean_ns = opts.service.build().map_err(ConfigError::from)?.mean_ns();
    let capacity = opts.workers as f64 * 1e9 / mean_ns;
    let stop = Arc::new(AtomicBool::new(false));
    let socks = (0..opts.workers)
        .map(|_| loopback())
        .collect::<Result<Vec<_>, _>>()?;
    // No leaf: each worker replies to the task's sender (module doc).
    let wcfg = WorkerConfig {
        heartbeat_ms: 0,
        rocksdb: (opts.rocksdb_keys > 0).then(|| netsched_node::tasks::RocksConfig {
            keys: opts.rocksdb_keys,
            ..Default::default()
        }),
        ..Default::default()
    };
    let workers = Worker::start(&wcfg, socks, stop.clone())?;
    let addrs = workers.addrs().to_vec();
    let rs_servers = if opts
        .setups
        .iter()
        .any(|s| matches!(Setup::parse(s), Ok(Setup::Daemon(Policy::Racksched))))
    {
        let socks = (0..opts.workers / opts.racksched_executors)
            .map(|_| loopback())
            .collect::<Result<Vec<_>, _>>()?;
        let cfg = WorkerConfig {
            executors: opts.racksched_executors,
            preempt_us: opts.racksched_preempt_us,
            ..wcfg.clone()
        };
        Some(Worker::start(&cfg, socks, stop.clone())?)
    } else {
        None
    };
    let rs_addrs = rs_servers.as_ref().map(|w| w.addrs().to_vec());
    // Every scheduler is up for the whole run; loads and setups are
    // interleaved (load by load, setup by setup, round after round) so that
    // background activity on the machine hits all of them alike.
    let d_stop = Arc::new(AtomicBool::new(false));
    let mut daemons = Vec::new();
    let mut nginx = None;
    let backends = Backends {
        workers: &addrs,
        racksched_servers: rs_addrs.as_deref().unwrap_or(&addrs),
    };
    let result = measure(
        opts,
        &backends,
        capacity,
        &mut progress,
        &d_stop,
        &mut daemons,
        &mut nginx,
    );
    d_stop.store(true, Ordering::Relaxed);
    for h in daemons {
        let _ = h.join();
    }
    drop(nginx);
    stop.store(true, Ordering::Relaxed);
    workers.join();
    if let Some(w) = rs_servers {
        w.join();
    }
    result
}

/// The worker nodes setups schedule over.
struct Backends<'a> {
    /// Single-executor workers (Horus, nginx, the other daemon policies).
    workers: &'a [SocketAddr],
    /// RackSched's servers (the same cores, shared cFCFS queues).
    racksched_servers: &'a [SocketAddr],
}

/// Starts the setups' schedulers (kept in `daemons` / `nginx` for the caller
/// to stop) and runs every round.
fn measure(
    opts: &NginxBenchOpts,
    backends: &Backends,
    capacity: f64,
    progress: &mut impl FnMut(&Row),
    d_stop: &Arc<AtomicBool>,
    daemons: &mut Vec<std::thread::JoinHandle<()>>,
    nginx: &mut Option<Nginx>,
) -> Result<Vec<Row>, Error> {
    let mut targets = Vec::new();
    for setup in &opts.setups {
        let t = match Setup::parse(setup)? {
            Setup::Nginx => {
                let n = Nginx::start(&opts.nginx, &opts.stream_module, backends.workers)?;
                let t = (n.listen, WireFamily::Horus);
                *nginx = Some(n);
                t
            }
            Setup::Daemon(policy) => {
                let nodes = if policy == Policy::Racksched {
                    backends.racksched_servers
                } else {
                    backends.workers
                };
                let (a, h) = leaf(policy, nodes, d_stop)?;
                daemons.push(h);
                let wire = if policy == Policy::Racksched {
                    WireFamily::Racksched
                } else {
                    WireFamily::Horus
                };
                (a, wire)
            }
        };
        targets.push(t);
    }
    let mut rows = Vec::new();
    let mut app = 100;
    for round in 0..opts.repeats.max(1) {
        for &load in &opts.loads {
            for (setup, &(target, wire)) in opts.setups.iter().zip(&targets) {
                let rate = load * capacity;
                app += 1;
                let report = client(opts, target, wire, rate, app)?;
                let row = Row {
                    round,
                    setup: setup.clone(),
                    load,
                    rate,
                    report,
                };
                progress(&row);
                rows.push(row);
                // Let stragglers drain before the next run.
                std::thread::sleep(Duration::from_millis(100));
            }
        }
    }
    Ok(rows)
}

/// Median over rounds of each (setup, load): p50, p99, p99.9 (µs) and the
/// totals of completed / submitted / timed out, in first-seen order.
pub fn medians(rows: &[Row]) -> Vec<(String, f64, [f64; 3], [u64; 3])> {
    let mut keys: Vec<(String, f64)> = Vec::new();
    for r in rows {
        if !keys.iter().any(|(s, l)| *s == r.setup && *l == r.load) {
            keys.push((r.setup.clone(), r.load));
        }
    }
    keys.into_iter()
        .map(|(setup, load)| {
            let sel: Vec<&Row> = rows
                .iter()
                .filter(|r| r.setup == setup && r.load == load)
                .collect();
            let med = |q: f64| {
                let mut v: Vec<f64> = sel.iter().map(|r| r.report.percentile_us(q)).collect();
                v.sort_by(f64::total_cmp);
                v[v.len() / 2]
            };
            let tot = [
                sel.iter().map(|r| r.report.completed).sum(),
                sel.iter().map(|r| r.report.submitted).sum(),
                sel.iter().map(|r| r.report.timed_out).sum(),
            ];
            (setup, load, [med(0.5), med(0.99), med(0.999)], tot)
        })
        .collect()
}

/// The setup that runs nginx rather than a daemon.
pub const NGINX_SETUP: &str = "nginx";

/// What one setup runs: nginx, or a leaf daemon of a push policy (whose
/// `racksched` runs RackSched's ToR over its own servers and wire family).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Setup {
    Nginx,
    Daemon(Policy),
}

impl Setup {
    pub fn parse(s: &str) -> Result<Setup, ConfigError> {
        if s == NGINX_SETUP {
            return Ok(Setup::Nginx);
        }
        crate::bench::parse_policy(s)
            .map(Setup::Daemon)
            .map_err(|_| {
                ConfigError::Invalid(format!("unknown setup '{s}': nginx or a daemon policy"))
            })
    }
}
