//! `netsched bench capacity`: the highest offered rate each scheduler
//! sustains with p99 under a bound, and what it costs per scheduler
//! CPU-second, for the Horus leaf daemon and nginx's `random two least_conn`
//! UDP proxy over the same workers with the same open-loop client
//! (docs/benchmarks.md).
//!
//! Setup as `netsched bench nginx` (crate::nginx: single-executor workers that
//! reply to the task's sender, every path 4 loopback hops), but with tasks
//! short enough (1 µs by default) that the scheduler, not the workers, limits
//! the rate. Per setup and round a bounded search probes rates: from
//! `start_rate` it doubles while a probe passes (p99 within the bound, almost
//! every task answered), then bisects between the last passing and the first
//! failing rate `refine_steps` times. The figure of a round is the highest
//! passing probe: tasks it completed divided by the scheduler's own CPU time
//! over the probe (utime + stime from `/proc/<pid>/stat`, so nginx and the
//! daemon are charged alike, kernel time included). Setups alternate within
//! a round so background load hits both alike; figures are medians over
//! rounds.

use std::io::Write;
use std::net::{SocketAddr, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use netsched_config::workload::ServiceDist;
use netsched_core::Policy;

use crate::error::Error;
use crate::nginx::Nginx;
use netsched_node::config::{ClientConfig, ConfigError, Target, WireFamily};
use netsched_node::{Client, SwitchConfig, SwitchDaemon, Worker, WorkerConfig};

/// Where the scheduler daemon under test runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DaemonHost {
    /// Its own process, `<exe> switch -c <config>` (the CLI passes itself),
    /// so it is measured exactly as nginx is.
    Process(PathBuf),
    /// A thread of this process, measured by its `/proc/self/task/<tid>/stat`
    /// (tests, where no binary is at hand; with `threads > 1` only the first
    /// receive thread's CPU is counted).
    Thread,
}

#[derive(Clone, Debug)]
pub struct CapacityOpts {
    pub workers: usize,
    pub service: ServiceDist,
    /// A probe passes if its p99 is at most this (µs) ...
    pub p99_bound_us: f64,
    /// ... and at least this fraction of its tasks completed.
    pub min_completed: f64,
    pub start_rate: f64,
    /// The search never offers more than this (tasks/s).
    pub max_rate: f64,
    /// Bisections after the doubling phase.
    pub refine_steps: usize,
    /// A failing rate is tried this many more times and passes if any try
    /// does: on a shared machine one stall of the client or workers must not
    /// end a search.
    pub fail_retries: usize,
    pub probe_ms: u64,
    pub repeats: usize,
    /// `horus` (or another daemon policy) and/or `nginx`, in run order; a
    /// daemon setup may name its own settings after `@`s (`horus@200` for
    /// `coalesce_us`, `horus@batch=64@threads=2@busy_poll=50`; see
    /// [`DaemonSetup::parse`]), so settings compare side by side in one run.
    pub setups: Vec<String>,
    /// Datagrams per `recvmmsg` of the daemon (its config's `batch`).
    pub batch: usize,
    /// The daemon's `coalesce_us` (0: off, its default).
    pub coalesce_us: u64,
    pub daemon: DaemonHost,
    pub nginx: PathBuf,
    pub stream_module: PathBuf,
    pub seed: u64,
}

impl Default for CapacityOpts {
    fn default() -> Self {
        CapacityOpts {
            workers: 4,
            service: ServiceDist::Fixed { value_us: 1.0 },
            p99_bound_us: 1000.0,
            min_completed: 0.999,
            start_rate: 5_000.0,
            max_rate: 320_000.0,
            refine_steps: 3,
            fail_retries: 1,
            probe_ms: 1500,
            repeats: 3,
            setups: vec![
                Policy::Horus.name().into(),
                crate::nginx::NGINX_SETUP.into(),
            ],
            batch: netsched_node::config::SwitchConfig::default().batch,
            coalesce_us: 0,
            daemon: DaemonHost::Thread,
            nginx: crate::nginx::DEFAULT_NGINX.into(),
            stream_module: crate::nginx::DEFAULT_STREAM_MODULE.into(),
            seed: 1,
        }
    }
}

impl CapacityOpts {
    pub fn validate(&self) -> Result<(), ConfigError> {
        let bad = |m: String| Err(ConfigError::Invalid(m));
        if self.workers == 0 || self.setups.is_empty() || self.repeats == 0 || self.batch == 0 {
            return bad("need at least one worker, setup, repeat and a batch of 1".into());
        }
        let rates_ok = self.start_rate > 0.0 && self.start_rate <= self.max_rate;
        if !rates_ok {
            return bad(format!(
                "need 0 < start rate ({}) <= max rate ({})",
                self.start_rate, self.max_rate
            ));
        }
        let bound_ok = self.p99_bound_us > 0.0 && (0.0..=1.0).contains(&self.min_completed);
        if !bound_ok {
            return bad("p99 bound must be positive, min completed in [0, 1]".into());
        }
        for s in &self.setups {
            if s != "nginx" {
                self.daemon_setup(s)?;
            }
        }
        Ok(())
    }

    /// A daemon setup's policy and settings ([`DaemonSetup::parse`]).
    pub fn daemon_setup(&self, setup: &str) -> Result<DaemonSetup, ConfigError> {
        DaemonSetup::parse(setup, self)
    }

    /// Most probes one search makes: doublings up to `max_rate`, plus the
    /// bisections, each failure tried `1 + fail_retries` times.
    pub fn max_probes(&self) -> usize {
        let doublings = (self.max_rate / self.start_rate).log2().floor() as usize + 1;
        doublings + self.refine_steps * (1 + self.fail_retries) + self.fail_retries
    }
}

/// One daemon setup of a run: its policy and the socket-path settings it
/// is measured with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DaemonSetup {
    pub policy: Policy,
    pub coalesce_us: u64,
    pub batch: usize,
    pub busy_poll_us: u32,
    pub threads: usize,
}

impl DaemonSetup {
    /// `policy[@setting]...`: a setting is a bare number (`coalesce_us`, as
    /// in `horus@200`) or one of `coalesce=`, `batch=`, `busy_poll=` (µs),
    /// `threads=`; unnamed ones take the run's `coalesce_us` and `batch`,
    /// no busy polling and one thread.
    pub fn parse(setup: &str, opts: &CapacityOpts) -> Result<Self, ConfigError> {
        let bad = |why: &str| {
            ConfigError::Invalid(format!(
                "setup '{setup}' ({why}): nginx or a daemon policy[@coalesce_us][@batch=N]\
                 [@threads=N][@busy_poll=US]"
            ))
        };
        let mut parts = setup.split('@');
        let policy = parts.next().unwrap_or_default();
        let policy = crate::bench::parse_policy(policy).map_err(|_| bad("unknown policy"))?;
        let mut d = DaemonSetup {
            policy,
            coalesce_us: opts.coalesce_us,
            batch: opts.batch,
            busy_poll_us: 0,
            threads: 1,
        };
        for part in parts {
            let (key, value) = part.split_once('=').unwrap_or(("coalesce", part));
            let n: u64 = value.parse().map_err(|_| bad("not a number"))?;
            match key {
                "coalesce" => d.coalesce_us = n,
                "batch" => d.batch = n as usize,
                "busy_poll" => d.busy_poll_us = u32::try_from(n).map_err(|_| bad("too big"))?,
                "threads" => d.threads = n as usize,
                _ => return Err(bad("unknown setting")),
            }
        }
        if d.batch == 0 || d.threads == 0 || d.threads > 64 {
            return Err(bad(
                "batch and threads must be at least 1, threads at most 64",
            ));
        }
        Ok(d)
    }

    /// The daemon's config: a standalone leaf over `workers` on `listen`.
    fn toml(&self, workers: &[SocketAddr], listen: SocketAddr) -> String {
        // Top-level keys before the leaf's [[instance]] table.
        format!(
            "busy_poll_us = {}\nthreads = {}\n{}",
            self.busy_poll_us,
            self.threads,
            crate::nginx::leaf_toml(self.policy, workers, listen, self.batch, self.coalesce_us)
        )
    }
}

pub use crate::error::CapacityError;

/// One rate tried: what the client saw and what the scheduler spent.
#[derive(Clone, Debug)]
pub struct Probe {
    pub rate: f64,
    pub submitted: u64,
    pub completed: u64,
    pub p50_us: f64,
    pub p99_us: f64,
    /// The scheduler's CPU time (user + system) over the probe, s.
    pub cpu_s: f64,
    pub wall_s: f64,
}

impl Probe {
    pub fn passes(&self, opts: &CapacityOpts) -> bool {
        self.submitted > 0
            && self.p99_us <= opts.p99_bound_us
            && self.completed as f64 >= opts.min_completed * self.submitted as f64
    }

    pub fn tasks_per_cpu_s(&self) -> f64 {
        self.completed as f64 / self.cpu_s.max(1e-9)
    }

    /// The scheduler's busy share of one core over the probe.
    pub fn cpu_share(&self) -> f64 {
        self.cpu_s / self.wall_s.max(1e-9)
    }

    pub fn line(&self, opts: &CapacityOpts) -> String {
        format!(
            "rate {:>8.0}/s: {} / {} completed, p50 {:.0} µs, p99 {:.0} µs, scheduler CPU {:.2} s \
             ({:.0} % of a core) -> {:.0} tasks per CPU-s: {}",
            self.rate,
            self.completed,
            self.submitted,
            self.p50_us,
            self.p99_us,
            self.cpu_s,
            self.cpu_share() * 100.0,
            self.tasks_per_cpu_s(),
            if self.passes(opts) { "pass" } else { "FAIL" }
        )
    }
}

/// The bounded search over rates (module doc): at most
/// [`CapacityOpts::max_probes`] calls of `probe`. Returns the highest
/// passing probe (None if even `start_rate` failed).
pub fn search(
    opts: &CapacityOpts,
    mut probe_once: impl FnMut(f64) -> Result<Probe, Error>,
) -> Result<Option<Probe>, Error> {
    let mut probe = |rate| -> Result<Probe, Error> {
        let mut p = probe_once(rate)?;
        for _ in 0..opts.fail_retries {
            if p.passes(opts) {
                break;
            }
            p = probe_once(rate)?;
        }
        Ok(p)
    };
    let mut best: Option<Probe> = None;
    let mut failed_at: Option<f64> = None;
    let mut rate = opts.start_rate;
    while rate <= opts.max_rate {
        let p = probe(rate)?;
        if !p.passes(opts) {
            failed_at = Some(rate);
            break;
        }
        best = Some(p);
        rate *= 2.0;
    }
    let Some(mut hi) = failed_at else {
        return Ok(best);
    };
    for _ in 0..opts.refine_steps {
        let Some(lo) = best.as_ref().map(|b| b.rate) else {
            break;
        };
        let mid = (lo + hi) / 2.0;
        let p = probe(mid)?;
        if p.passes(opts) {
            best = Some(p);
        } else {
            hi = mid;
        }
    }
    Ok(best)
}

/// utime + stime of a `/proc/.../stat` line, in clock ticks. The command
/// name (field 2) may hold spaces and parentheses, so fields are counted
/// after its last ')'.
pub fn parse_stat_ticks(stat: &str) -> Option<u64> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut f = rest.split_whitespace();
    // After the name: state (3), ppid … cmajflt (4-13), utime (14), stime (15).
    let utime: u64 = f.nth(11)?.parse().ok()?;
    let stime: u64 = f.next()?.parse().ok()?;
    Some(utime + stime)
}

/// CPU seconds (user + system) of the process or thread whose stat is at `path`.
pub(crate) fn cpu_seconds(path: &Path) -> Result<f64, Error> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path.display(), e))?;
    let ticks = parse_stat_ticks(&text).ok_or_else(|| CapacityError::Stat {
        path: path.display().to_string(),
    })?;
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1);
    Ok(ticks as f64 / hz as f64)
}

/// A free loopback port: bind, read, release (the scheduler binds it next).
fn free_port() -> Result<SocketAddr, Error> {
    Ok(UdpSocket::bind("127.0.0.1:0").and_then(|s| s.local_addr())?)
}

/// The scheduler under test, stopped on drop.
enum Scheduler {
    Nginx(Nginx),
    Process {
        child: Child,
        dir: PathBuf,
        listen: SocketAddr,
    },
    Thread {
        handle: Option<std::thread::JoinHandle<()>>,
        stop: Arc<AtomicBool>,
        tid: i64,
        listen: SocketAddr,
    },
}

impl Scheduler {
    fn listen(&self) -> SocketAddr {
        match self {
            Scheduler::Nginx(n) => n.listen,
            Scheduler::Process { listen, .. } | Scheduler::Thread { listen, .. } => *listen,
        }
    }

    fn stat_path(&self) -> PathBuf {
        match self {
            Scheduler::Nginx(n) => format!("/proc/{}/stat", n.pid()).into(),
            Scheduler::Process { child, .. } => format!("/proc/{}/stat", child.id()).into(),
            Scheduler::Thread { tid, .. } => format!("/proc/self/task/{tid}/stat").into(),
        }
    }

    fn start(setup: &str, opts: &CapacityOpts, workers: &[SocketAddr]) -> Result<Self, Error> {
        if setup == "nginx" {
            return Ok(Scheduler::Nginx(Nginx::start(
                &opts.nginx,
                &opts.stream_module,
                workers,
            )?));
        }
        let listen = free_port()?;
        let toml = opts.daemon_setup(setup)?.toml(workers, listen);
        match &opts.daemon {
            DaemonHost::Thread => {
                let cfg = SwitchConfig::from_toml(&toml)?;
                let (mut d, extra) = SwitchDaemon::bind_threads(&cfg)?;
                let stop = Arc::new(AtomicBool::new(false));
                let tid = Arc::new(AtomicI64::new(0));
                let (s, t) = (stop.clone(), tid.clone());
                let handle = std::thread::spawn(move || {
                    // SAFETY: gettid has no preconditions.
                    t.store(
                        unsafe { libc::syscall(libc::SYS_gettid) },
                        Ordering::Release,
                    );
                    let _ = d.run_threaded(extra, &s);
                });
                while tid.load(Ordering::Acquire) == 0 {
                    std::thread::yield_now();
                }
                Ok(Scheduler::Thread {
                    handle: Some(handle),
                    stop,
                    tid: tid.load(Ordering::Acquire),
                    listen,
                })
            }
            DaemonHost::Process(exe) => {
                let dir = std::env::temp_dir().join(format!(
                    "netsched-capacity-{}-{}",
                    std::process::id(),
                    listen.port()
                ));
                std::fs::create_dir_all(&dir).map_err(|e| Error::io(dir.display(), e))?;
                let conf = dir.join("leaf.toml");
                std::fs::File::create(&conf)
                    .and_then(|mut f| f.write_all(toml.as_bytes()))
                    .map_err(|e| Error::io(conf.display(), e))?;
                let child = Command::new(exe)
                    .arg("switch")
                    .arg("-c")
                    .arg(&conf)
                    .env("RUST_LOG", "warn")
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()
                    .map_err(|e| Error::io(exe.display(), e))?;
                let mut s = Scheduler::Process { child, dir, listen };
                s.await_bind()?;
                Ok(s)
            }
        }
    }

    /// Waits until the child process holds its port.
    fn await_bind(&mut self) -> Result<(), Error> {
        let Scheduler::Process { child, listen, .. } = self else {
            return Ok(());
        };
        let listen = *listen;
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(status)) = child.try_wait() {
                return Err(CapacityError::DaemonExited { status, listen }.into());
            }
            if UdpSocket::bind(listen).is_err() {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Err(CapacityError::DaemonNoBind { listen }.into())
    }
}

impl Drop for Scheduler {
    fn drop(&mut self) {
        match self {
            Scheduler::Nginx(_) => {}
            Scheduler::Process { child, dir, .. } => {
                // SIGTERM: the daemon stops cleanly; kill if it lingers.
                // SAFETY: signalling our own child by its pid.
                unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
                let deadline = Instant::now() + Duration::from_secs(2);
                while Instant::now() < deadline && matches!(child.try_wait(), Ok(None)) {
                    std::thread::sleep(Duration::from_millis(10));
                }
                let _ = child.kill();
                let _ = child.wait();
                let _ = std::fs::remove_dir_all(&*dir);
            }
            Scheduler::Thread { handle, stop, .. } => {
                stop.store(true, Ordering::Relaxed);
                if let Some(h) = handle.take() {
                    let _ = h.join();
                }
            }
        }
    }
}

/// One probe: the open-loop client at `rate` through `s`, with the
/// scheduler's CPU time read around it.
fn probe(opts: &CapacityOpts, s: &Scheduler, rate: f64, app_id: u32) -> Result<Probe, Error> {
    let mut c = Client::bind(ClientConfig {
        targets: vec![Target {
            addr: s.listen(),
            weight: 1.0,
        }],
        pool: 1,
        app_id,
        rate,
        duration_ms: opts.probe_ms,
        service: opts.service.clone(),
        // Far above any passing p99, short enough that an overloaded probe
        // ends soon.
        timeout_ms: 500,
        seed: opts.seed.wrapping_add(u64::from(app_id)),
        wire: WireFamily::Horus,
        ..Default::default()
    })?;
    let stat = s.stat_path();
    let cpu0 = cpu_seconds(&stat)?;
    let t0 = Instant::now();
    let r = c.run();
    let wall_s = t0.elapsed().as_secs_f64();
    let cpu_s = cpu_seconds(&stat)? - cpu0;
    Ok(Probe {
        rate,
        submitted: r.submitted,
        completed: r.completed,
        p50_us: r.percentile_us(0.5),
        p99_us: r.percentile_us(0.99),
        cpu_s,
        wall_s,
    })
}

/// A round's result for one setup.
#[derive(Clone, Debug)]
pub struct Outcome {
    pub round: usize,
    pub setup: String,
    /// The highest passing probe, if any passed.
    pub best: Option<Probe>,
    pub probes: usize,
    /// Every probe of the search, in order (retries included).
    pub tried: Vec<Probe>,
}

/// Runs every round; `progress` gets a line per probe (for stderr).
pub fn run(opts: &CapacityOpts, mut progress: impl FnMut(&str)) -> Result<Vec<Outcome>, Error> {
    opts.validate()?;
    let stop = Arc::new(AtomicBool::new(false));
    let socks = (0..opts.workers)
        .map(|_| UdpSocket::bind("127.0.0.1:0"))
        .collect::<Result<Vec<_>, _>>()?;
    let wcfg = WorkerConfig {
        heartbeat_ms: 0,
        ..Default::default()
    };
    let workers = Worker::start(&wcfg, socks, stop.clone())?;
    let addrs = workers.addrs().to_vec();
    let result = rounds(opts, &addrs, &mut progress);
    stop.store(true, Ordering::Relaxed);
    workers.join();
    result
}

fn rounds(
    opts: &CapacityOpts,
    workers: &[SocketAddr],
    progress: &mut impl FnMut(&str),
) -> Result<Vec<Outcome>, Error> {
    let schedulers = opts
        .setups
        .iter()
        .map(|s| Scheduler::start(s, opts, workers))
        .collect::<Result<Vec<_>, _>>()?;
    let mut app = 1000u32;
    let started = Instant::now();
    // A fresh process pages in, learns its reply route and warms its caches
    // on its first tasks; none of that belongs to a probe.
    for (setup, s) in opts.setups.iter().zip(&schedulers) {
        app += 1;
        let warm = CapacityOpts {
            probe_ms: 500,
            ..opts.clone()
        };
        let p = probe(&warm, s, opts.start_rate, app)?;
        progress(&format!("warm-up {setup}: {}", p.line(opts)));
    }
    let mut out = Vec::new();
    for round in 0..opts.repeats {
        for (setup, s) in opts.setups.iter().zip(&schedulers) {
            let mut tried = Vec::new();
            let best = search(opts, |rate| {
                app += 1;
                let p = probe(opts, s, rate, app)?;
                progress(&format!(
                    "[{:>5.0} s] round {} {setup}: {}",
                    started.elapsed().as_secs_f64(),
                    round + 1,
                    p.line(opts)
                ));
                // Let stragglers drain before the next probe.
                std::thread::sleep(Duration::from_millis(100));
                tried.push(p.clone());
                Ok(p)
            })?;
            out.push(Outcome {
                round,
                setup: setup.clone(),
                best,
                probes: tried.len(),
                tried,
            });
        }
    }
    Ok(out)
}

/// (offered rate, median tasks per scheduler CPU-second, probes at it).
pub type RateCost = (f64, f64, usize);

fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn setups_in_order(outcomes: &[Outcome]) -> Vec<&str> {
    let mut setups: Vec<&str> = Vec::new();
    for o in outcomes {
        if !setups.contains(&o.setup.as_str()) {
            setups.push(&o.setup);
        }
    }
    setups
}

/// The cost at equal load: per setup (first-seen order) and per rate of
/// the doubling ladder (`start_rate`, twice that, …), the median tasks per
/// scheduler CPU-second over every probe at that rate, passing or not, and
/// how many. Steadier than the highest passing probe, which is one probe
/// at the edge; setups that alternate within rounds meet the same load.
pub fn cost_at_rates(opts: &CapacityOpts, outcomes: &[Outcome]) -> Vec<(String, Vec<RateCost>)> {
    let mut ladder = Vec::new();
    let mut r = opts.start_rate;
    while r <= opts.max_rate {
        ladder.push(r);
        r *= 2.0;
    }
    setups_in_order(outcomes)
        .into_iter()
        .map(|s| {
            let at = |rate: f64| -> Vec<f64> {
                outcomes
                    .iter()
                    .filter(|o| o.setup == s)
                    .flat_map(|o| &o.tried)
                    .filter(|p| p.rate == rate)
                    .map(Probe::tasks_per_cpu_s)
                    .collect()
            };
            let row = ladder
                .iter()
                .map(|&rate| {
                    let v = at(rate);
                    (rate, median(v.clone()), v.len())
                })
                .collect();
            (s.to_string(), row)
        })
        .collect()
}

/// Per setup (in first-seen order): median over rounds of the highest
/// passing rate and of its tasks per scheduler CPU-second, and how many
/// rounds found a passing rate.
pub fn medians(outcomes: &[Outcome]) -> Vec<(String, f64, f64, usize)> {
    setups_in_order(outcomes)
        .into_iter()
        .map(|s| {
            let best: Vec<&Probe> = outcomes
                .iter()
                .filter(|o| o.setup == s)
                .filter_map(|o| o.best.as_ref())
                .collect();
            (
                s.to_string(),
                median(best.iter().map(|p| p.rate).collect()),
                median(best.iter().map(|p| p.tasks_per_cpu_s()).collect()),
                best.len(),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fake(rate: f64, ceiling: f64) -> Probe {
        let over = rate > ceiling;
        Probe {
            rate,
            submitted: 1000,
            completed: 1000,
            p50_us: 50.0,
            p99_us: if over { 50_000.0 } else { 200.0 },
            cpu_s: 0.5,
            wall_s: 1.0,
        }
    }

    #[test]
    fn search_brackets_the_ceiling_within_its_probe_budget() {
        let opts = CapacityOpts {
            start_rate: 1000.0,
            max_rate: 64_000.0,
            refine_steps: 3,
            fail_retries: 0,
            ..Default::default()
        };
        let mut calls = Vec::new();
        let best = search(&opts, |r| {
            calls.push(r);
            Ok(fake(r, 11_000.0))
        })
        .unwrap()
        .unwrap();
        // 1k..8k pass, 16k fails; bisection: 12k fails, 10k passes, 11k passes.
        assert_eq!(
            calls,
            vec![1000.0, 2000.0, 4000.0, 8000.0, 16_000.0, 12_000.0, 10_000.0, 11_000.0]
        );
        assert_eq!(best.rate, 11_000.0);
        assert!(calls.len() <= opts.max_probes());
    }

    #[test]
    fn search_stops_at_max_rate_and_reports_nothing_when_start_fails() {
        let opts = CapacityOpts {
            start_rate: 1000.0,
            max_rate: 4000.0,
            fail_retries: 0,
            ..Default::default()
        };
        let mut n = 0;
        let best = search(&opts, |r| {
            n += 1;
            Ok(fake(r, 1e9))
        })
        .unwrap();
        assert_eq!((n, best.unwrap().rate), (3, 4000.0));
        let none = search(&opts, |r| Ok(fake(r, 10.0))).unwrap();
        assert!(none.is_none());
    }

    #[test]
    fn a_failure_counts_only_if_its_retry_fails_too() {
        let opts = CapacityOpts {
            start_rate: 1000.0,
            max_rate: 8000.0,
            refine_steps: 0,
            fail_retries: 1,
            ..Default::default()
        };
        // 2,000/s stalls once, then passes; 4,000/s is over the ceiling.
        let mut calls = Vec::new();
        let best = search(&opts, |r| {
            calls.push(r);
            let stalled = r == 2000.0 && calls.iter().filter(|&&c| c == r).count() == 1;
            Ok(fake(r, if stalled { 0.0 } else { 3000.0 }))
        })
        .unwrap();
        assert_eq!(calls, vec![1000.0, 2000.0, 2000.0, 4000.0, 4000.0]);
        assert_eq!(best.unwrap().rate, 2000.0);
        assert!(calls.len() <= opts.max_probes());
    }

    #[test]
    fn a_setup_may_name_its_own_coalescing() {
        let opts = CapacityOpts {
            coalesce_us: 7,
            ..Default::default()
        };
        let plain = opts.daemon_setup("horus").unwrap();
        assert_eq!((plain.policy, plain.coalesce_us), (Policy::Horus, 7));
        assert_eq!((plain.batch, plain.threads, plain.busy_poll_us), (32, 1, 0));
        assert_eq!(opts.daemon_setup("horus@200").unwrap().coalesce_us, 200);
        let tuned = opts
            .daemon_setup("horus@0@batch=64@threads=2@busy_poll=50")
            .unwrap();
        assert_eq!(
            tuned,
            DaemonSetup {
                policy: Policy::Horus,
                coalesce_us: 0,
                batch: 64,
                busy_poll_us: 50,
                threads: 2
            }
        );
        let cfg =
            SwitchConfig::from_toml(&tuned.toml(&[free_port().unwrap()], free_port().unwrap()))
                .unwrap();
        assert_eq!((cfg.batch, cfg.threads, cfg.busy_poll_us), (64, 2, 50));
        for bad in [
            "horus@x",
            "nope@5",
            "horus@threads=0",
            "horus@batch=0",
            "horus@spin=3",
        ] {
            assert!(opts.daemon_setup(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn probe_fails_on_lost_tasks_even_with_low_p99() {
        let opts = CapacityOpts::default();
        let mut p = fake(1000.0, 1e9);
        assert!(p.passes(&opts));
        p.completed = 990;
        assert!(!p.passes(&opts));
    }

    #[test]
    fn stat_ticks_survive_odd_command_names() {
        let line = "4242 (a (b) c) S 1 4242 4242 0 -1 4194560 900 0 0 0 157 43 0 0 20 0 3 0 \
                    100 1000 200 18446744073709551615";
        assert_eq!(parse_stat_ticks(line), Some(200));
        assert_eq!(parse_stat_ticks("garbage"), None);
    }

    #[test]
    fn medians_take_the_middle_round_per_setup() {
        let mk = |round, setup: &str, rate, cpu_s| Outcome {
            round,
            setup: setup.into(),
            best: Some(Probe {
                cpu_s,
                ..fake(rate, 1e9)
            }),
            probes: 1,
            tried: Vec::new(),
        };
        let o = vec![
            mk(0, "horus", 10_000.0, 0.1),
            mk(0, "nginx", 5_000.0, 0.5),
            mk(1, "horus", 30_000.0, 0.01),
            mk(1, "nginx", 6_000.0, 0.4),
            mk(2, "horus", 20_000.0, 0.02),
            Outcome {
                round: 2,
                setup: "nginx".into(),
                best: None,
                probes: 1,
                tried: Vec::new(),
            },
        ];
        let m = medians(&o);
        assert_eq!(m[0].0, "horus");
        assert_eq!((m[0].1, m[0].2, m[0].3), (20_000.0, 50_000.0, 3));
        assert_eq!(m[1].0, "nginx");
        assert_eq!((m[1].1, m[1].3), (5_500.0, 2));
        assert!((m[1].2 - 2_250.0).abs() < 1e-6);
    }

    #[test]
    fn cost_at_rates_takes_every_probe_at_a_ladder_rate() {
        let opts = CapacityOpts {
            start_rate: 1000.0,
            max_rate: 4000.0,
            ..Default::default()
        };
        let at = |rate, cpu_s| Probe {
            cpu_s,
            ..fake(rate, 1e9)
        };
        let o = |setup: &str, tried: Vec<Probe>| Outcome {
            round: 0,
            setup: setup.into(),
            best: None,
            probes: tried.len(),
            tried,
        };
        // 1,000 completed per probe: cpu 0.1 s -> 10,000 per CPU-s.
        let outcomes = vec![
            o(
                "horus",
                vec![at(1000.0, 0.1), at(2000.0, 0.05), at(1500.0, 1.0)],
            ),
            o(
                "horus",
                vec![at(1000.0, 0.2), at(2000.0, 0.04), at(2000.0, 0.02)],
            ),
        ];
        let rows = cost_at_rates(&opts, &outcomes);
        assert_eq!(rows.len(), 1);
        let (setup, row) = &rows[0];
        assert_eq!(setup, "horus");
        // Ladder 1k, 2k, 4k; the 1.5k bisection probe is not on it.
        assert_eq!(
            row.iter().map(|c| (c.0, c.2)).collect::<Vec<_>>(),
            vec![(1000.0, 2), (2000.0, 3), (4000.0, 0)]
        );
        assert!((row[0].1 - 7_500.0).abs() < 1e-6);
        assert!((row[1].1 - 25_000.0).abs() < 1e-6);
        assert!(row[2].1.is_nan());
    }

    #[test]
    fn leaf_threads_sustain_a_low_rate_with_and_without_coalescing() {
        let opts = CapacityOpts {
            workers: 2,
            start_rate: 500.0,
            max_rate: 1000.0,
            refine_steps: 0,
            probe_ms: 400,
            repeats: 1,
            p99_bound_us: 200_000.0,
            min_completed: 0.99,
            // Stalls of a second happen on a shared CI machine.
            fail_retries: 3,
            // The daemon as it ships, with coalescing on, and with two
            // receive threads on SO_REUSEPORT sockets.
            setups: vec!["horus".into(), "horus@200".into(), "horus@threads=2".into()],
            ..Default::default()
        };
        let out = run(&opts, |_| {}).unwrap();
        assert_eq!(out.len(), 3);
        for o in &out {
            let best = o
                .best
                .as_ref()
                .expect("a loaded machine still passes 1,000/s");
            assert_eq!(best.rate, 1000.0, "{}", o.setup);
            assert!(best.completed > 0 && best.cpu_s >= 0.0);
        }
    }
}
