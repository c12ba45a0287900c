//! Helpers shared by the CLI crate's integration tests: the `netsched`
//! binary, scratch directories and config files, and for the
//! network-namespace tests daemon processes, metrics scraping and client
//! reports. Each test binary compiles this module and uses part of it.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use netsched_lab::netns::{self, Host, Lab, LabError};

pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_netsched")
}

/// Runs `netsched args` to completion: (exit code, stdout, stderr); -1 for
/// a process ended by a signal.
pub fn netsched(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(bin()).args(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Runs `netsched args` and checks it refused the input `name`: a non-zero
/// exit and a one-line error naming `field`.
pub fn assert_one_line_error(name: &str, args: &[&str], field: &str) {
    let (code, _, err) = netsched(args);
    assert_ne!(code, 0, "{name}: accepted");
    assert_eq!(
        err.trim_end().lines().count(),
        1,
        "{name}: not one line: {err}"
    );
    assert!(
        err.contains(field),
        "{name}: error does not name `{field}`: {err}"
    );
}

/// A loopback port free for both UDP and TCP, for a daemon process to bind.
///
/// Not the OS's pick (`bind` to port 0): that comes from the ephemeral range
/// (32768-60999 here) that every outgoing connection and every other
/// port-0 bind also draws from, so between its release and the daemon's bind
/// another socket of the test run could take it (CI lost a port that way).
/// These come from 24000-29999, below that range, which the kernel never hands
/// out by itself: each test process walks its own stride of 100 ports
/// (chosen by its pid), skipping any port that is taken.
fn free_port() -> u16 {
    use std::sync::atomic::{AtomicU16, Ordering};
    static NEXT: AtomicU16 = AtomicU16::new(0);
    let base = 24_000 + (std::process::id() % 60) as u16 * 100;
    for _ in 0..6_000 {
        let k = NEXT.fetch_add(1, Ordering::Relaxed) % 6_000;
        let port = 24_000 + (base - 24_000 + k) % 6_000;
        let udp = std::net::UdpSocket::bind(("127.0.0.1", port));
        let tcp = std::net::TcpListener::bind(("127.0.0.1", port));
        if udp.is_ok() && tcp.is_ok() {
            return port;
        }
    }
    panic!("no free loopback port in 24000-29999");
}

/// A free loopback UDP port, released for a daemon to bind ([`free_port`]).
pub fn udp_port() -> u16 {
    free_port()
}

/// A free loopback TCP port (a metrics or admin listener; [`free_port`]).
pub fn tcp_port() -> u16 {
    free_port()
}

/// The sum of the metric lines (0 if none or unreachable) of `name` on `port`'s /metrics whose labels
/// contain `label`.
pub fn loopback_metric(port: u16, name: &str, label: &str) -> u64 {
    let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", port)) else {
        return 0;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
    let _ = std::io::Write::write_all(
        &mut s,
        b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    );
    let mut text = String::new();
    let _ = std::io::Read::read_to_string(&mut s, &mut text);
    text.lines()
        .filter(|l| l.starts_with(name) && l.contains(label))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .map(|v| v as u64)
        .sum()
}

/// A single-packet Horus task `seq` of application `app` for pool 1,
/// running `ns`.
pub fn horus_task(app: u32, seq: u32, ns: u64) -> Vec<u8> {
    netsched_proto::Message::Horus(netsched_proto::HorusMessage::task_first(
        1,
        netsched_proto::HorusTask {
            task_id: netsched_proto::task_id::new(app, seq),
            is_last: true,
            service_time_ns: ns,
            ..Default::default()
        },
    ))
    .to_vec()
    .unwrap()
}

/// `netsched-{tag}-{pid}` under the temp dir, created if missing (kept
/// between the tests of one binary, which share it).
pub fn temp_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("netsched-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The small run the CLI tests simulate, after their own top-level keys
/// (`head`): a radix-4 fat tree with 20 + 10 servers of 8 cores, the
/// bimodal preset at load 0.7, `tasks_per_worker` tasks per worker.
pub fn small_fat_tree(head: &str, tasks_per_worker: u32) -> String {
    format!(
        "{head}[topology]\nkind = \"fat-tree\"\nradix = 4\ncores_per_server = 8\n\
         [placement]\nsizes = [20, 10]\n\
         [workload]\nservice = {{ kind = \"preset\", name = \"bimodal\" }}\nload = 0.7\n\
         tasks_per_worker = {tasks_per_worker}\n"
    )
}

/// Writes `text` to `dir/name`; returns the path as the string a command
/// line takes.
pub fn write_config(dir: &Path, name: &str, text: impl AsRef<[u8]>) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.to_string_lossy().into_owned()
}

/// `"a", "b"`: addresses as the elements of a TOML array.
pub fn quoted(addrs: &[String]) -> String {
    addrs
        .iter()
        .map(|a| format!("\"{a}\""))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A JSON report's unsigned field `k`; panics naming it when missing.
pub fn n(v: &serde_json::Value, k: &str) -> u64 {
    v[k].as_u64().unwrap_or_else(|| panic!("{k} in {v}"))
}

/// Tasks a client report counts as failed, over all reasons.
pub fn failed(v: &serde_json::Value) -> u64 {
    v["failed"]
        .as_object()
        .map(|m| m.values().filter_map(|x| x.as_u64()).sum())
        .unwrap_or(0)
}

/// Polls `f` every 50 ms until it holds; fails the test after `limit`.
pub fn wait_for(what: &str, limit: Duration, mut f: impl FnMut() -> bool) {
    let t = Instant::now();
    while !f() {
        assert!(t.elapsed() < limit, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The namespace lab of test `test`, or None when namespaces are
/// unavailable (skipped loudly; a failure under NETSCHED_REQUIRE_NETNS=1).
pub fn lab(test: &str, tag: &str) -> Option<Lab> {
    match Lab::new(tag) {
        Ok(l) => Some(l),
        Err(LabError::Skip(why)) => {
            netns::skip(test, &why);
            None
        }
        Err(LabError::Failed(e)) => panic!("{e}"),
    }
}

/// True (after a loud skip) when the BPF object was not built, unless
/// NETSCHED_REQUIRE_BPF is set: then the test runs and fails without it.
pub fn bpf_missing(test: &str) -> bool {
    // The loader refuses the empty object netsched-xdp builds without clang.
    let clang = Command::new("clang")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if std::env::var_os("NETSCHED_REQUIRE_BPF").is_none() && !clang {
        netns::skip(test, &"no BPF (clang missing when netsched-xdp was built)");
        return true;
    }
    false
}

/// [`lab`] for a test that needs BPF: `None` (the test skipped, loudly)
/// when BPF or network namespaces are missing.
pub fn xdp_lab(test: &str, prefix: &str) -> Option<Lab> {
    if bpf_missing(test) {
        return None;
    }
    lab(test, prefix)
}

/// A test's scratch directory (`netsched-netns-{tag}-{pid}`, emptied
/// first): removed when the test passes, kept with the daemons' logs and
/// configs when it fails.
pub struct Scratch(PathBuf);

impl Scratch {
    pub fn new(tag: &str) -> Scratch {
        let d = std::env::temp_dir().join(format!("netsched-netns-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        Scratch(d)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("logs and configs kept in {}", self.0.display());
        } else {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// `ip netns exec <host> [taskset -c <cpu>] netsched`, for `args` to follow.
pub fn in_netns(host: &Host, cpu: Option<&str>) -> Command {
    let mut c = Command::new("ip");
    c.args(["netns", "exec", &host.name]);
    if let Some(cpu) = cpu {
        c.args(["taskset", "-c", cpu]);
    }
    c.arg(bin());
    c
}

/// Daemon processes in namespaces, each logging to `<dir>/<name>.log`;
/// SIGKILLed and reaped on drop, before the lab's namespaces go.
pub struct Procs {
    pub list: Vec<(String, Child)>,
    dir: PathBuf,
    cpu: Option<String>,
}

impl Procs {
    pub fn new(dir: &Path) -> Procs {
        Procs {
            list: Vec::new(),
            dir: dir.to_path_buf(),
            cpu: None,
        }
    }

    /// Every daemon started later is pinned to `cpu` (taskset).
    pub fn pinned(dir: &Path, cpu: &str) -> Procs {
        Procs {
            list: Vec::new(),
            dir: dir.to_path_buf(),
            cpu: Some(cpu.to_string()),
        }
    }

    pub fn start(&mut self, name: &str, host: &Host, args: &[&str]) {
        let log = std::fs::File::create(self.log(name)).unwrap();
        let child = in_netns(host, self.cpu.as_deref())
            .args(args)
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("ip netns exec");
        self.list.push((name.to_string(), child));
    }

    pub fn log(&self, name: &str) -> PathBuf {
        self.dir.join(format!("{name}.log"))
    }

    pub fn pid(&self, name: &str) -> u32 {
        self.list
            .iter()
            .find(|(n, _)| n == name)
            .expect("known process")
            .1
            .id()
    }

    /// SIGKILL: the process gets no chance to say goodbye.
    pub fn kill(&mut self, name: &str) {
        let i = self
            .list
            .iter()
            .position(|(n, _)| n == name)
            .expect("known process");
        let (_, mut c) = self.list.remove(i);
        c.kill().unwrap();
        c.wait().unwrap();
    }

    /// Fails the test, with the log, if any daemon has exited.
    pub fn check_running(&mut self) {
        if let Err(e) = self.all_running() {
            panic!("{e}");
        }
    }

    /// The first daemon that has exited, with its status and log.
    pub fn all_running(&mut self) -> Result<(), String> {
        for (name, child) in &mut self.list {
            if let Ok(Some(status)) = child.try_wait() {
                let log = std::fs::read_to_string(self.dir.join(format!("{name}.log")));
                return Err(format!(
                    "{name} exited ({status}): {}",
                    log.unwrap_or_default()
                ));
            }
        }
        Ok(())
    }
}

impl Drop for Procs {
    fn drop(&mut self) {
        for (_, c) in &mut self.list {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// A `netsched client -c cfg --json json` process in a namespace.
pub struct ClientRun {
    child: Child,
    json: PathBuf,
}

impl ClientRun {
    pub fn start(host: &Host, cpu: Option<&str>, cfg: &str, json: PathBuf) -> ClientRun {
        let child = in_netns(host, cpu)
            .args(["client", "-c", cfg, "--json"])
            .arg(&json)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        ClientRun { child, json }
    }

    /// Waits for the client; fails the test with its stderr unless it
    /// exited 0; returns its JSON report.
    pub fn report(self) -> serde_json::Value {
        let out = self.child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_str(&std::fs::read_to_string(&self.json).unwrap()).unwrap()
    }
}

/// Two clients in `host`'s namespace at once, pinned to CPU 0 and CPU 1 (a
/// veth receives a frame on its sender's CPU, so an XDP program on the
/// other side runs on both), client `c` on the config `config(c)` (written
/// to `<dir>/client<c>.toml`); waits for both. Each must have submitted
/// more than `at_least` tasks and completed every one; returns the tasks
/// submitted by both together.
pub fn pinned_clients(
    host: &Host,
    dir: &Path,
    at_least: u64,
    config: impl Fn(u32) -> String,
) -> u64 {
    let clients: Vec<_> = (0..2u32)
        .map(|c| {
            let cfg = write_config(dir, &format!("client{c}.toml"), config(c));
            let json = dir.join(format!("client{c}.json"));
            ClientRun::start(host, Some(&c.to_string()), &cfg, json)
        })
        .collect();
    let mut submitted = 0;
    for client in clients {
        let report = client.report();
        let mine = n(&report, "submitted");
        assert!(mine > at_least, "{report}");
        assert_eq!(n(&report, "completed"), mine, "{report}");
        submitted += mine;
    }
    submitted
}

/// Writes `<dir>/<name>.toml`, runs a client on it in `host`'s namespace
/// and returns its report (`<dir>/<name>.json`).
pub fn run_client(host: &Host, dir: &Path, name: &str, config: &str) -> serde_json::Value {
    let cfg = write_config(dir, &format!("{name}.toml"), config);
    ClientRun::start(host, None, &cfg, dir.join(format!("{name}.json"))).report()
}

/// Sum over label sets of the series `metric` whose labels contain `label`
/// ("" for all) at `host`:`port`, read inside its namespace; the endpoint
/// is tried `attempts` times 100 ms apart, None if it never answered.
pub fn scrape(host: &Host, port: u16, metric: &str, label: &str, attempts: u32) -> Option<u64> {
    let addr = host.at(port).parse().unwrap();
    let (code, body) = (0..attempts).find_map(|_| {
        let got = host
            .run(move || netsched_node::controller::http(addr, "GET", "/metrics", None, None))
            .ok()?
            .ok();
        if got.is_none() {
            std::thread::sleep(Duration::from_millis(100));
        }
        got
    })?;
    assert_eq!(code, 200, "{body}");
    Some(
        body.lines()
            .filter(|l| {
                l.strip_prefix(metric)
                    .is_some_and(|rest| rest.starts_with(['{', ' ']) && rest.contains(label))
            })
            .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
            .sum(),
    )
}

/// A `netsched` process with its output discarded, killed and reaped on drop
/// so a failed assertion leaves nothing running.
pub struct Quiet(pub std::process::Child);

impl Quiet {
    pub fn spawn(args: &[&str]) -> Quiet {
        Quiet(
            std::process::Command::new(bin())
                .args(args)
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .unwrap_or_else(|e| panic!("netsched {args:?}: {e}")),
        )
    }
}

impl Drop for Quiet {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The number after `key=` in a client's or cluster's summary line (`text`),
/// e.g. `submitted=1200 completed=1200`; panics naming the key if absent.
pub fn summary_field(text: &str, key: &str) -> u64 {
    text.split_whitespace()
        .find_map(|f| f.strip_prefix(&format!("{key}=")))
        .unwrap_or_else(|| panic!("no {key} in {text}"))
        .parse()
        .unwrap_or_else(|e| panic!("{key} in {text}: {e}"))
}

/// Where the Horus XDP namespace tests put things in each host: the leaf's
/// and the spine's ports, the worker agent's executors and /metrics.
pub mod horus_xdp {
    pub const SPINE_PORT: u16 = 7100;
    pub const LEAF_PORT: u16 = 7101;
    pub const WORKER_PORT: u16 = 7201;
    pub const WORKERS: u16 = 3;
    /// A scheduler daemon's /metrics (the leaf's or the spine's).
    pub const METRICS: u16 = 7400;
    pub const WORKER_METRICS: u16 = 7401;
    /// Attempts at a daemon's /metrics, 100 ms apart: the first read waits
    /// for the program to attach, which took 2.2 s from the daemon's start
    /// on a loaded machine (two busy processes and three builds; BPF
    /// verification). Only a daemon that never answers waits them all out.
    pub const SCRAPE_ATTEMPTS: u32 = 200;
}
