//! `netsched switch` with `datapath = "xdp"` end to end, as processes in
//! network namespaces (`ip netns exec`, the shape of netns_processes.rs): a
//! client, a leaf whose XDP program (generic mode on its veth) schedules the
//! tasks, and a worker agent of three executors. Loss is injected in the I/O
//! layer (crates/node/src/fault.rs): the worker drops tasks it receives, the
//! leaf's daemon drops replies the program passed up (after the program
//! counted them). The client retries; every task must complete, and the
//! counters must add up: submitted <= executed <= dispatched. Two clients
//! pinned to different CPUs send, and the leaf must have run on one CPU only
//! (the cpumap steering of docs/xdp.md). Needs root and
//! BPF; skipped loudly without (failed under NETSCHED_REQUIRE_NETNS=1).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use netsched_node::netns::{self, Host, Lab, LabError};

const LEAF_PORT: u16 = 7101;
const WORKER_PORT: u16 = 7201;
const WORKERS: u16 = 3;
const LEAF_METRICS: u16 = 7400;
const WORKER_METRICS: u16 = 7401;

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_netsched")
}

/// Daemon processes, killed and reaped on drop before the namespaces go.
struct Procs(Vec<(String, Child)>);

impl Procs {
    fn start(&mut self, name: &str, host: &Host, args: &[&str], dir: &Path) {
        let log = std::fs::File::create(dir.join(format!("{name}.log"))).unwrap();
        let child = Command::new("ip")
            .args(["netns", "exec", &host.name, bin()])
            .args(args)
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("ip netns exec");
        self.0.push((name.to_string(), child));
    }

    fn check_running(&mut self, dir: &Path) {
        for (name, child) in &mut self.0 {
            if let Ok(Some(status)) = child.try_wait() {
                let log = std::fs::read_to_string(dir.join(format!("{name}.log")));
                panic!("{name} exited ({status}): {}", log.unwrap_or_default());
            }
        }
    }
}

impl Drop for Procs {
    fn drop(&mut self) {
        for (_, c) in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn write(dir: &Path, name: &str, text: String) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.to_string_lossy().into_owned()
}

/// Sum over label sets of the series `metric` (optionally only those whose
/// labels contain `label`) at `host`:`port`, read inside its namespace.
fn scrape(host: &Host, port: u16, metric: &str, label: &str) -> Option<u64> {
    let addr = host.at(port).parse().unwrap();
    let (code, body) = (0..20).find_map(|_| {
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

fn n(v: &serde_json::Value, k: &str) -> u64 {
    v[k].as_u64().unwrap_or_else(|| panic!("{k} in {v}"))
}

#[test]
fn every_task_completes_through_the_xdp_switch_with_loss() {
    let test = "every_task_completes_through_the_xdp_switch_with_loss";
    if std::env::var_os("NETSCHED_REQUIRE_BPF").is_none() && !netsched_xdp_available() {
        return netns::skip(test, &"no BPF (clang missing when netsched-xdp was built)");
    }
    let mut lab = match Lab::new("xsw") {
        Ok(l) => l,
        Err(LabError::Skip(why)) => return netns::skip(test, &why),
        Err(LabError::Failed(e)) => panic!("{e}"),
    };
    let cli = lab.host("cli").unwrap();
    let leaf = lab.host("leaf").unwrap();
    let wrk = lab.host("wrk").unwrap();
    let dir: PathBuf =
        std::env::temp_dir().join(format!("netsched-netns-xsw-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let leaf_at = leaf.at(LEAF_PORT);
    let workers: Vec<String> = (0..WORKERS).map(|i| wrk.at(WORKER_PORT + i)).collect();
    let quoted = workers
        .iter()
        .map(|a| format!("\"{a}\""))
        .collect::<Vec<_>>()
        .join(", ");
    let mut procs = Procs(Vec::new());

    // Tasks lost on their way into the worker (5 %).
    let p = write(
        &dir,
        "worker.toml",
        format!(
            "listen = [{quoted}]\nleaf = \"{leaf_at}\"\npool = 1\nheartbeat_ms = 50\n\
             metrics = \"{}\"\n\n[fault]\ndrop_rate = 0.05\nseed = 11\n",
            wrk.at(WORKER_METRICS)
        ),
    );
    procs.start("worker", &wrk, &["worker", "-c", &p], &dir);
    // Replies lost after the program counted them (5 %).
    let p = write(
        &dir,
        "leaf.toml",
        format!(
            "listen = \"{leaf_at}\"\nmetrics = \"{}\"\nseed = 3\ndatapath = \"xdp\"\n\n\
             [xdp]\ninterface = \"eth0\"\nmode = \"generic\"\ncpu = 1\n\n\
             [fault]\ndrop_rate = 0.05\nseed = 12\n\n\
             [[instance]]\npool = 1\nrole = \"leaf\"\npolicy = \"horus\"\n\
             downstream = [{quoted}]\n",
            leaf.at(LEAF_METRICS)
        ),
    );
    procs.start("leaf", &leaf, &["switch", "-c", &p], &dir);
    // Up: the leaf's metrics answer once the program is attached.
    let attached = scrape(&leaf, LEAF_METRICS, "netsched_xdp_events_total", "");
    procs.check_running(&dir);
    assert!(attached.is_some(), "the leaf's /metrics never answered");
    assert_eq!(
        scheduler_thread_policy(&dir.join("leaf.log")),
        SCHED_FIFO_AT_1,
        "the leaf's cpumap thread runs real-time by default"
    );

    // Two clients, pinned to CPU 0 and CPU 1, so packets reach the leaf's
    // XDP hook on both CPUs (a veth receives on the sender's CPU). Each:
    // 500 tasks/s of 100 µs for 2 s; a task not answered in 50 ms is sent
    // again, up to 20 times.
    let clients: Vec<_> = (0..2u32)
        .map(|c| {
            let cfg = write(
                &dir,
                &format!("client{c}.toml"),
                format!(
                    "targets = [{{ addr = \"{leaf_at}\" }}]\npool = 1\napp_id = {}\n\
                     rate = 500\nduration_ms = 2000\ntimeout_ms = 50\nretries = 20\nseed = {}\n\
                     bind = \"{}:0\"\nservice = {{ kind = \"fixed\", value_us = 100 }}\n",
                    7 + c,
                    5 + c,
                    cli.addr
                ),
            );
            let json = dir.join(format!("client{c}.json"));
            let child = Command::new("ip")
                .args([
                    "netns",
                    "exec",
                    &cli.name,
                    "taskset",
                    "-c",
                    &c.to_string(),
                    bin(),
                ])
                .args(["client", "-c", &cfg, "--json"])
                .arg(&json)
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            (child, json)
        })
        .collect();
    let mut submitted = 0;
    for (child, json) in clients {
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let report: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        let mine = n(&report, "submitted");
        assert!(mine > 500, "{report}");
        assert_eq!(n(&report, "completed"), mine, "{report}");
        submitted += mine;
    }
    procs.check_running(&dir);

    // Counters settle once the last replies are in.
    std::thread::sleep(Duration::from_millis(300));
    let metric = |host: &Host, port, name: &str, label: &str| {
        scrape(host, port, name, label).unwrap_or_else(|| panic!("{name} at {}", host.name))
    };
    let executed = metric(&wrk, WORKER_METRICS, "netsched_worker_tasks_total", "");
    let dispatched = metric(
        &leaf,
        LEAF_METRICS,
        "netsched_xdp_events_total",
        "dispatch_",
    );
    let replies = metric(
        &leaf,
        LEAF_METRICS,
        "netsched_xdp_events_total",
        "\"replies\"",
    );
    let forwarded = metric(
        &leaf,
        LEAF_METRICS,
        "netsched_tx_packets_total",
        "\"reply\"",
    );
    let reply_loss = metric(
        &leaf,
        LEAF_METRICS,
        "netsched_fault_drops_total",
        "\"reply\"",
    );
    let task_loss = metric(&wrk, WORKER_METRICS, "netsched_fault_drops_total", "task");
    let counts = format!(
        "submitted {submitted}, executed {executed}, dispatched {dispatched}, \
         replies {replies}, forwarded {forwarded}, loss: tasks {task_loss} replies {reply_loss}"
    );
    assert!(submitted <= executed && executed <= dispatched, "{counts}");
    assert!(
        task_loss > 0 && reply_loss > 0,
        "loss was injected: {counts}"
    );
    // Every executed task's reply reached the program, and every reply the
    // daemon did not lose went on to the client.
    assert_eq!(replies, executed, "{counts}");
    assert_eq!(forwarded + reply_loss, replies, "{counts}");
    // Packets came in on both CPUs; one CPU (xdp.cpu = 1) ran the leaf.
    let on = |program: &str, cpu: u32| {
        let label = format!("program=\"{program}\",cpu=\"{cpu}\"");
        metric(
            &leaf,
            LEAF_METRICS,
            "netsched_xdp_cpu_packets_total",
            &label,
        )
    };
    let runs = [on("steer", 0), on("steer", 1), on("leaf", 0), on("leaf", 1)];
    assert!(
        runs[0] > 0 && runs[1] > 0,
        "steered per CPU {runs:?}: {counts}"
    );
    assert_eq!(runs[2], 0, "the leaf ran only on CPU 1: {runs:?}");
    assert!(
        runs[3] >= dispatched,
        "every task ran the leaf on CPU 1: {runs:?}"
    );
    // No task was scheduled in user space.
    let refused = metric(
        &leaf,
        LEAF_METRICS,
        "netsched_drops_total",
        "xdp_passed_task",
    );
    assert_eq!(refused, 0, "{counts}");
    drop(procs);
    drop(lab);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Whether the BPF object was built (its loader refuses an empty one).
/// (policy, priority) fields of /proc/<pid>/stat for SCHED_FIFO at 1.
const SCHED_FIFO_AT_1: (u64, u64) = (1, 1);

/// The policy and real-time priority of the kernel thread the daemon's
/// log names as the one running its program (`thread=cpumap/...`).
fn scheduler_thread_policy(log: &Path) -> (u64, u64) {
    let text = std::fs::read_to_string(log).unwrap();
    let name = text
        .split_whitespace()
        .find_map(|w| w.strip_prefix("thread="))
        .unwrap_or_else(|| panic!("no thread= in {}: {text}", log.display()));
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(comm) = std::fs::read_to_string(entry.path().join("comm")) else {
            continue;
        };
        if comm.trim_end() != name {
            continue;
        }
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap();
        // Fields after the parenthesised name: rt_priority and policy are
        // the 40th and 41st of the whole line.
        let rest: Vec<&str> = stat
            .rsplit_once(')')
            .unwrap()
            .1
            .split_whitespace()
            .collect();
        let field = |n: usize| rest[n - 3].parse::<u64>().unwrap();
        return (field(41), field(40));
    }
    panic!("no kernel thread {name}");
}

fn netsched_xdp_available() -> bool {
    Command::new("clang")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// utime + stime of process `pid`, in clock ticks (/proc/PID/stat).
fn process_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command's closing parenthesis: utime, stime are 14, 15.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let fields: Vec<u64> = rest
        .split_whitespace()
        .skip(1)
        .map(|f| f.parse().unwrap_or(0))
        .collect();
    fields.get(11).copied().unwrap_or(0) + fields.get(12).copied().unwrap_or(0)
}

/// Machine-wide softirq time, clock ticks (/proc/stat `cpu` line): where
/// XDP's generic hook runs, with the rest of the receive path.
fn softirq_ticks() -> u64 {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let cpu = stat.lines().next().unwrap_or("");
    cpu.split_whitespace()
        .nth(7)
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// Tasks per second end to end through veths, the XDP leaf beside the
/// socket daemon in one run: the same lab, worker agent and client config,
/// the two leaves alternating (XDP on the interface would take the socket
/// daemon's tasks too), three rounds each; prints the medians. Run with
/// `NETSCHED_REQUIRE_BPF=1 NETSCHED_REQUIRE_NETNS=1 cargo test -p netsched
/// --release --test netns_xdp_switch xdp_beside_socket -- --ignored --nocapture`.
#[test]
#[ignore = "benchmark: docs/benchmarks.md"]
fn xdp_beside_socket_tasks_per_second() {
    let test = "xdp_beside_socket_tasks_per_second";
    let mut lab = match Lab::new("xbn") {
        Ok(l) => l,
        Err(LabError::Skip(why)) => return netns::skip(test, &why),
        Err(LabError::Failed(e)) => panic!("{e}"),
    };
    let cli = lab.host("cli").unwrap();
    let leaf = lab.host("leaf").unwrap();
    let wrk = lab.host("wrk").unwrap();
    let dir: PathBuf =
        std::env::temp_dir().join(format!("netsched-netns-xbn-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let leaf_at = leaf.at(LEAF_PORT);
    let workers: Vec<String> = (0..WORKERS).map(|i| wrk.at(WORKER_PORT + i)).collect();
    let quoted = workers
        .iter()
        .map(|a| format!("\"{a}\""))
        .collect::<Vec<_>>()
        .join(", ");
    let rate: u64 = std::env::var("XDP_BENCH_RATE")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(40_000);
    let mut workers_proc = Procs(Vec::new());
    let p = write(
        &dir,
        "worker.toml",
        format!(
            "listen = [{quoted}]\nleaf = \"{leaf_at}\"\npool = 1\nheartbeat_ms = 50\nspin_us = 0\n"
        ),
    );
    workers_proc.start("worker", &wrk, &["worker", "-c", &p], &dir);
    let client_cfg = write(
        &dir,
        "client.toml",
        format!(
            "targets = [{{ addr = \"{leaf_at}\" }}]\npool = 1\napp_id = 7\nthreads = 2\n\
             rate = {rate}\nduration_ms = 2000\ntimeout_ms = 200\nseed = 5\n\
             bind = \"{}:0\"\nservice = {{ kind = \"fixed\", value_us = 1 }}\n",
            cli.addr
        ),
    );
    let mut results: Vec<(&str, f64, f64, f64)> = Vec::new();
    for round in 0..6 {
        let datapath = if round % 2 == 0 { "xdp" } else { "socket" };
        let xdp = if datapath == "xdp" {
            "datapath = \"xdp\"\n\n[xdp]\ninterface = \"eth0\"\nmode = \"generic\"\ncpu = 1\n"
        } else {
            ""
        };
        let p = write(
            &dir,
            &format!("leaf{round}.toml"),
            format!(
                "listen = \"{leaf_at}\"\nmetrics = \"{}\"\n{xdp}\n\
                 [[instance]]\npool = 1\nrole = \"leaf\"\npolicy = \"horus\"\n\
                 downstream = [{quoted}]\n",
                leaf.at(LEAF_METRICS)
            ),
        );
        let mut procs = Procs(Vec::new());
        procs.start("leaf", &leaf, &["switch", "-c", &p], &dir);
        assert!(scrape(&leaf, LEAF_METRICS, "netsched_rx_packets_total", "").is_some());
        let pid = procs.0[0].1.id();
        let (cpu0, soft0) = (process_ticks(pid), softirq_ticks());
        let json = dir.join(format!("client{round}.json"));
        let out = Command::new("ip")
            .args([
                "netns",
                "exec",
                &cli.name,
                bin(),
                "client",
                "-c",
                &client_cfg,
                "--json",
            ])
            .arg(&json)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let (cpu1, soft1) = (process_ticks(pid), softirq_ticks());
        procs.check_running(&dir);
        drop(procs);
        let report: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        let completed = n(&report, "completed") as f64;
        let per_s = completed / 2.0;
        // Clock ticks are 10 ms (USER_HZ 100).
        let us_per_task = |ticks: u64| ticks as f64 * 10_000.0 / completed.max(1.0);
        let (daemon_us, softirq_us) = (us_per_task(cpu1 - cpu0), us_per_task(soft1 - soft0));
        eprintln!(
            "{datapath:>6}: {per_s:>8.0} tasks/s completed of {rate} offered; leaf process {daemon_us:.2} us/task, machine softirq {softirq_us:.2} us/task"
        );
        results.push((datapath, per_s, daemon_us, softirq_us));
    }
    for datapath in ["xdp", "socket"] {
        let median = |f: fn(&(&str, f64, f64, f64)) -> f64| {
            let mut v: Vec<f64> = results.iter().filter(|r| r.0 == datapath).map(f).collect();
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        };
        eprintln!(
            "median {datapath:>6}: {:.0} tasks/s, leaf process {:.2} us/task, machine softirq {:.2} us/task",
            median(|r| r.1),
            median(|r| r.2),
            median(|r| r.3)
        );
    }
    drop(workers_proc);
    drop(lab);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Runs one client process in `cli`'s namespace against `leaf_at`; returns
/// its JSON report.
fn run_client(cli: &Host, dir: &Path, name: &str, leaf_at: &str, extra: &str) -> serde_json::Value {
    let cfg = write(
        dir,
        &format!("{name}.toml"),
        format!(
            "targets = [{{ addr = \"{leaf_at}\" }}]\npool = 1\napp_id = 9\n\
             rate = 500\nduration_ms = 1000\ntimeout_ms = 200\nseed = 9\n\
             bind = \"{}:0\"\nservice = {{ kind = \"fixed\", value_us = 100 }}\n{extra}",
            cli.addr
        ),
    );
    let json = dir.join(format!("{name}.json"));
    let out = Command::new("ip")
        .args([
            "netns",
            "exec",
            &cli.name,
            bin(),
            "client",
            "-c",
            &cfg,
            "--json",
        ])
        .arg(&json)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap()
}

/// The control plane's worker removal and re-addition reach the program's
/// maps: the leaf's failure detector (the path the controller's pushes take
/// too, switch/xdp.rs) removes a killed worker agent, and no task goes to it
/// afterwards (a client without retries completes every task); restarted,
/// it is added back and gets tasks again.
#[test]
fn worker_removal_and_return_reach_the_xdp_maps() {
    let test = "worker_removal_and_return_reach_the_xdp_maps";
    let mut lab = match Lab::new("xsc") {
        Ok(l) => l,
        Err(LabError::Skip(why)) => return netns::skip(test, &why),
        Err(LabError::Failed(e)) => panic!("{e}"),
    };
    let cli = lab.host("cli").unwrap();
    let leaf = lab.host("leaf").unwrap();
    let stay = lab.host("wrk").unwrap();
    let go = lab.host("wrk").unwrap();
    let dir: PathBuf =
        std::env::temp_dir().join(format!("netsched-netns-xsc-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let leaf_at = leaf.at(LEAF_PORT);
    let mut procs = Procs(Vec::new());
    let worker = |procs: &mut Procs, name: &str, host: &Host, first_id: u16, n: u16| {
        let listen = (0..n)
            .map(|i| format!("\"{}\"", host.at(WORKER_PORT + i)))
            .collect::<Vec<_>>()
            .join(", ");
        let p = write(
            &dir,
            &format!("{name}.toml"),
            format!(
                "listen = [{listen}]\nfirst_id = {first_id}\nleaf = \"{leaf_at}\"\npool = 1\n\
                 heartbeat_ms = 50\nmetrics = \"{}\"\n",
                host.at(WORKER_METRICS)
            ),
        );
        procs.start(name, host, &["worker", "-c", &p], &dir);
    };
    worker(&mut procs, "stay", &stay, 0, 2);
    worker(&mut procs, "go", &go, 2, 1);
    let p = write(
        &dir,
        "leaf.toml",
        format!(
            "listen = \"{leaf_at}\"\nmetrics = \"{}\"\ndatapath = \"xdp\"\n\n\
             [xdp]\ninterface = \"eth0\"\nmode = \"generic\"\n\n\
             [[instance]]\npool = 1\nrole = \"leaf\"\npolicy = \"horus\"\n\
             heartbeat_timeout_ms = 300\ndownstream = [\"{}\", \"{}\", \"{}\"]\n",
            leaf.at(LEAF_METRICS),
            stay.at(WORKER_PORT),
            stay.at(WORKER_PORT + 1),
            go.at(WORKER_PORT),
        ),
    );
    procs.start("leaf", &leaf, &["switch", "-c", &p], &dir);
    let metric = |name: &str, label: &str| scrape(&leaf, LEAF_METRICS, name, label).unwrap();
    let wait = |what: &str, f: &dyn Fn() -> bool| {
        let t = std::time::Instant::now();
        while !f() {
            assert!(t.elapsed() < Duration::from_secs(15), "timed out: {what}");
            std::thread::sleep(Duration::from_millis(100));
        }
    };
    // All three live at once (a slow start can time a worker out before
    // its first heartbeat; it comes back when heard).
    wait("every worker live", &|| {
        metric("netsched_rx_packets_total", "keep_alive") >= 6
            && metric("netsched_live_nodes", "") == 3
    });
    procs.check_running(&dir);

    // Killed: removed by the failure detector, and the maps follow.
    let installed = metric("netsched_xdp_reinstalls_total", "");
    let i = procs.0.iter().position(|(n, _)| n == "go").unwrap();
    let (_, mut child) = procs.0.remove(i);
    child.kill().unwrap();
    child.wait().unwrap();
    wait("the removal installed", &|| {
        metric("netsched_live_nodes", "") == 2
            && metric("netsched_xdp_reinstalls_total", "") > installed
    });
    let before = metric("netsched_xdp_events_total", "dispatch_");
    let r = run_client(&cli, &dir, "client-without", &leaf_at, "");
    assert_eq!(
        n(&r, "completed"),
        n(&r, "submitted"),
        "no task went to the dead worker: {r}"
    );
    let ran_on_stay = scrape(&stay, WORKER_METRICS, "netsched_worker_tasks_total", "").unwrap();
    let dispatched = metric("netsched_xdp_events_total", "dispatch_") - before;
    assert_eq!(
        ran_on_stay, dispatched,
        "every dispatch went to a live worker"
    );

    // Back: heard from again, added, and scheduled.
    let installed = metric("netsched_xdp_reinstalls_total", "");
    worker(&mut procs, "go", &go, 2, 1);
    wait("the return installed", &|| {
        metric("netsched_live_nodes", "") == 3
            && metric("netsched_xdp_reinstalls_total", "") > installed
    });
    let r = run_client(&cli, &dir, "client-with", &leaf_at, "");
    assert_eq!(n(&r, "completed"), n(&r, "submitted"), "{r}");
    let ran_on_go = scrape(&go, WORKER_METRICS, "netsched_worker_tasks_total", "").unwrap();
    assert!(ran_on_go > 0, "the returned worker gets tasks");
    procs.check_running(&dir);
    drop(procs);
    drop(lab);
    let _ = std::fs::remove_dir_all(&dir);
}
