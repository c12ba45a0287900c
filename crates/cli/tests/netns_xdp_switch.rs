//! `netsched switch` with `datapath = "xdp"` end to end, as processes in
//! network namespaces (`ip netns exec`, the shape of netns_processes.rs): a
//! client, a leaf whose XDP program (generic mode on its veth) schedules the
//! tasks, and a worker agent of three executors. Loss is injected in the I/O
//! layer (crates/node/src/fault.rs): the worker drops tasks it receives, the
//! leaf's daemon drops replies the program passed up (after the program
//! counted them). The client retries; every task must complete, and the
//! counters must add up: submitted <= executed <= dispatched. Two clients
//! pinned to different CPUs send, and the leaf must have run on one CPU only
//! (the cpumap steering of docs/xdp.md). One test runs the leaf on every
//! CPU in native mode on its veth. Needs root and
//! BPF; skipped loudly without (failed under NETSCHED_REQUIRE_NETNS=1).

mod common;

use std::path::Path;
use std::time::Duration;

use common::{n, quoted, run_client, wait_for, write_config, ClientRun, Procs, Scratch};
use netsched_lab::netns::Host;

use common::horus_xdp::{
    LEAF_PORT, METRICS as LEAF_METRICS, SCRAPE_ATTEMPTS, WORKERS, WORKER_METRICS, WORKER_PORT,
};

fn scrape(host: &Host, port: u16, metric: &str, label: &str) -> Option<u64> {
    common::scrape(host, port, metric, label, SCRAPE_ATTEMPTS)
}

/// The `WORKERS` executors of the worker agent on `wrk`, as the TOML list
/// its `listen` and the leaf's `downstream` take.
fn worker_list(wrk: &Host) -> String {
    let workers: Vec<String> = (0..WORKERS).map(|i| wrk.at(WORKER_PORT + i)).collect();
    quoted(&workers)
}

/// The cluster key, as `cluster up` hands it out (32 times the hex `byte`),
/// written under `dir`: the leaf's program seals every task it forwards and
/// the workers run only sealed ones. Returns its path.
fn cluster_key(dir: &Path, byte: &str) -> String {
    let key = dir.join("cluster.key");
    netsched_node::secret::write_secret_file(&key, &byte.repeat(32)).unwrap();
    key.display().to_string()
}

/// The worker agent of `WORKERS` executors on `wrk` under the leaf at
/// `leaf_at`, taking only tasks sealed under `key`; `extra` ends its config.
fn start_sealed_worker(
    procs: &mut Procs,
    dir: &Path,
    wrk: &Host,
    leaf_at: &str,
    key: &str,
    extra: &str,
) {
    let quoted = worker_list(wrk);
    let p = write_config(
        dir,
        "worker.toml",
        format!(
            "listen = [{quoted}]\nleaf = \"{leaf_at}\"\npool = 1\nheartbeat_ms = 50\n\
             metrics = \"{}\"\nkey_file = \"{key}\"\n{extra}",
            wrk.at(WORKER_METRICS)
        ),
    );
    procs.start("worker", wrk, &["worker", "-c", &p]);
}

/// The leaf daemon on `leaf` (seed 3, tasks sealed under `key`) over the
/// worker agent on `wrk`; `xdp` is its `[xdp]` table and what follows it
/// up to its `[[instance]]`.
fn start_sealed_leaf(procs: &mut Procs, dir: &Path, leaf: &Host, wrk: &Host, key: &str, xdp: &str) {
    let leaf_at = leaf.at(LEAF_PORT);
    let quoted = worker_list(wrk);
    let p = write_config(
        dir,
        "leaf.toml",
        format!(
            "listen = \"{leaf_at}\"\nmetrics = \"{}\"\nseed = 3\ndatapath = \"xdp\"\n\
             key_file = \"{key}\"\n\n{xdp}\
             [[instance]]\npool = 1\nrole = \"leaf\"\npolicy = \"horus\"\n\
             downstream = [{quoted}]\n",
            leaf.at(LEAF_METRICS)
        ),
    );
    procs.start("leaf", leaf, &["switch", "-c", &p]);
}

#[test]
fn every_task_completes_through_the_xdp_switch_with_loss() {
    let test = "every_task_completes_through_the_xdp_switch_with_loss";
    let Some(mut lab) = common::xdp_lab(test, "xsw") else {
        return;
    };
    let cli = lab.host("cli").unwrap();
    let leaf = lab.host("leaf").unwrap();
    let wrk = lab.host("wrk").unwrap();
    let scratch = Scratch::new("xsw");
    let dir = scratch.path();
    let leaf_at = leaf.at(LEAF_PORT);
    let mut procs = Procs::new(dir);

    let key = cluster_key(dir, "5e");
    // Tasks lost on their way into the worker (5 %).
    let fault = "\n[fault]\ndrop_rate = 0.05\nseed = 11\n";
    start_sealed_worker(&mut procs, dir, &wrk, &leaf_at, &key, fault);
    // Replies lost after the program counted them (5 %).
    let xdp = "[xdp]\ninterface = \"eth0\"\nmode = \"generic\"\ncpu = 1\n\n\
               [fault]\ndrop_rate = 0.05\nseed = 12\n\n";
    start_sealed_leaf(&mut procs, dir, &leaf, &wrk, &key, xdp);
    // Up: the leaf's metrics answer once the program is attached.
    let attached = scrape(&leaf, LEAF_METRICS, "netsched_xdp_events_total", "");
    procs.check_running();
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
    let submitted = pinned_clients(&cli, dir, &leaf_at, 500, 2000, 100);
    procs.check_running();

    let LeafCounts {
        executed,
        dispatched,
        replies,
        seal_drops,
        runs,
        refused,
    } = LeafCounts::settled(&leaf, &wrk);
    let metric = |host: &Host, port, name: &str, label: &str| {
        scrape(host, port, name, label).unwrap_or_else(|| panic!("{name} at {}", host.name))
    };
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
    // Sealing on at the workers: every task they ran came sealed by the
    // program, and none was refused for its seal.
    let seal_failed = metric(
        &leaf,
        LEAF_METRICS,
        "netsched_xdp_events_total",
        "seal_failed",
    );
    assert_eq!(
        (seal_drops, seal_failed),
        (0, 0),
        "seal drops at the workers, seal failures in the program"
    );
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
    assert_eq!(refused, 0, "{counts}");
}

/// What the XDP leaf tests read once the last replies are in: from the
/// worker agent's and the leaf's /metrics.
struct LeafCounts {
    /// Tasks the workers ran.
    executed: u64,
    /// Tasks the program dispatched, by every path.
    dispatched: u64,
    /// Replies the program took.
    replies: u64,
    /// Tasks the workers refused for their seal.
    seal_drops: u64,
    /// Packets per CPU: steered on CPU 0 and 1, run by the leaf on 0 and 1.
    runs: [u64; 4],
    /// Tasks passed up and refused by the daemon.
    refused: u64,
}

impl LeafCounts {
    fn settled(leaf: &Host, wrk: &Host) -> LeafCounts {
        std::thread::sleep(Duration::from_millis(300));
        let metric = |host: &Host, port, name: &str, label: &str| {
            scrape(host, port, name, label).unwrap_or_else(|| panic!("{name} at {}", host.name))
        };
        let at_leaf = |name: &str, label: &str| metric(leaf, LEAF_METRICS, name, label);
        let on = |program: &str, cpu: u32| {
            let label = format!("program=\"{program}\",cpu=\"{cpu}\"");
            at_leaf("netsched_xdp_cpu_packets_total", &label)
        };
        LeafCounts {
            executed: metric(wrk, WORKER_METRICS, "netsched_worker_tasks_total", ""),
            dispatched: at_leaf("netsched_xdp_events_total", "dispatch_"),
            replies: at_leaf("netsched_xdp_events_total", "\"replies\""),
            seal_drops: scrape(wrk, WORKER_METRICS, "netsched_worker_seal_drops_total", "")
                .unwrap_or(0),
            runs: [on("steer", 0), on("steer", 1), on("leaf", 0), on("leaf", 1)],
            refused: at_leaf("netsched_drops_total", "xdp_passed_task"),
        }
    }
}

/// The leaf on every CPU (`[xdp] cpus = "all"`) in native mode on its
/// veth, the daemon's program in the veth's driver (docs/xdp.md, "Native
/// mode on a veth"): every task completes, every executed task's reply
/// reached the program and went on from it, and the program ran on both
/// CPUs. The peer veth has NAPI by GRO, not an XDP program of its own:
/// frames the program sent back by `XDP_TX` then sat in the peer's ring
/// unwoken (the kernel's veth wakes it after an `XDP_TX` only for a peer
/// with an XDP program), so no task reached a worker and none completed.
#[test]
fn every_task_completes_through_the_native_xdp_leaf_on_every_cpu() {
    let test = "every_task_completes_through_the_native_xdp_leaf_on_every_cpu";
    let Some(mut lab) = common::xdp_lab(test, "xsn") else {
        return;
    };
    let cli = lab.host("cli").unwrap();
    let leaf = lab.host("leaf").unwrap();
    let wrk = lab.host("wrk").unwrap();
    lab.native_xdp(&leaf, &[&wrk]).unwrap();
    let scratch = Scratch::new("xsn");
    let dir = scratch.path();
    let leaf_at = leaf.at(LEAF_PORT);
    let mut procs = Procs::new(dir);
    let key = cluster_key(dir, "7a");
    start_sealed_worker(&mut procs, dir, &wrk, &leaf_at, &key, "");
    let xdp = "[xdp]\ninterface = \"eth0\"\nmode = \"native\"\ncpus = \"all\"\n\n";
    start_sealed_leaf(&mut procs, dir, &leaf, &wrk, &key, xdp);
    // The workers' keep-alives are passed up by the program.
    wait_for("every worker live", Duration::from_secs(15), || {
        scrape(&leaf, LEAF_METRICS, "netsched_live_nodes", "") == Some(u64::from(WORKERS))
    });
    procs.check_running();

    // Two clients, pinned to CPU 0 and CPU 1 (a veth receives on the
    // sender's CPU): 300 tasks/s of 50 µs each for 1 s, retried.
    let submitted = pinned_clients(&cli, dir, &leaf_at, 300, 1000, 50);
    procs.check_running();

    let LeafCounts {
        executed,
        dispatched,
        replies,
        seal_drops,
        runs,
        refused,
    } = LeafCounts::settled(&leaf, &wrk);
    let forwarded = scrape(
        &leaf,
        LEAF_METRICS,
        "netsched_xdp_events_total",
        "\"replies_forwarded\"",
    )
    .expect("replies_forwarded at the leaf");
    let counts = format!(
        "submitted {submitted}, executed {executed}, dispatched {dispatched}, \
         replies {replies}, forwarded by the program {forwarded}, seal drops {seal_drops}"
    );
    assert!(submitted <= executed && executed <= dispatched, "{counts}");
    assert_eq!(seal_drops, 0, "{counts}");
    // Every executed task's reply reached the program, which sent it on.
    assert_eq!(replies, executed, "{counts}");
    assert_eq!(forwarded, replies, "{counts}");
    // The program itself ran, on both CPUs; no steering.
    assert_eq!((runs[0], runs[1]), (0, 0), "nothing steered: {runs:?}");
    assert!(
        runs[2] > 0 && runs[3] > 0,
        "the leaf ran on both CPUs: {runs:?}"
    );
    assert!(
        runs[2] + runs[3] >= dispatched + replies,
        "every task and reply ran the leaf: {runs:?}, {counts}"
    );
    assert_eq!(refused, 0, "{counts}");
}

/// Two clients on `cli`, pinned to CPU 0 and CPU 1, each sending `rate`
/// tasks/s of `service_us` to `leaf_at` for `duration_ms`, a task not
/// answered in 50 ms sent again up to 20 times; each must complete every
/// task it submitted, more than half its rate's worth. Returns the tasks
/// submitted.
fn pinned_clients(
    cli: &Host,
    dir: &Path,
    leaf_at: &str,
    rate: u64,
    duration_ms: u64,
    service_us: u64,
) -> u64 {
    common::pinned_clients(cli, dir, rate * duration_ms / 2000, |c| {
        format!(
            "targets = [{{ addr = \"{leaf_at}\" }}]\npool = 1\napp_id = {}\n\
             rate = {rate}\nduration_ms = {duration_ms}\ntimeout_ms = 50\nretries = 20\n\
             seed = {}\nbind = \"{}:0\"\n\
             service = {{ kind = \"fixed\", value_us = {service_us} }}\n",
            7 + c,
            5 + c,
            cli.addr
        )
    })
}

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
    let Some(mut lab) = common::lab(test, "xbn") else {
        return;
    };
    let cli = lab.host("cli").unwrap();
    let leaf = lab.host("leaf").unwrap();
    let wrk = lab.host("wrk").unwrap();
    let scratch = Scratch::new("xbn");
    let dir = scratch.path();
    let leaf_at = leaf.at(LEAF_PORT);
    let quoted = worker_list(&wrk);
    let rate: u64 = std::env::var("XDP_BENCH_RATE")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(40_000);
    let mut workers_proc = Procs::new(dir);
    let p = write_config(
        dir,
        "worker.toml",
        format!(
            "listen = [{quoted}]\nleaf = \"{leaf_at}\"\npool = 1\nheartbeat_ms = 50\nspin_us = 0\n"
        ),
    );
    workers_proc.start("worker", &wrk, &["worker", "-c", &p]);
    let client_cfg = write_config(
        dir,
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
        let p = write_config(
            dir,
            &format!("leaf{round}.toml"),
            format!(
                "listen = \"{leaf_at}\"\nmetrics = \"{}\"\n{xdp}\n\
                 [[instance]]\npool = 1\nrole = \"leaf\"\npolicy = \"horus\"\n\
                 downstream = [{quoted}]\n",
                leaf.at(LEAF_METRICS)
            ),
        );
        let mut procs = Procs::new(dir);
        procs.start("leaf", &leaf, &["switch", "-c", &p]);
        assert!(scrape(&leaf, LEAF_METRICS, "netsched_rx_packets_total", "").is_some());
        let pid = procs.pid("leaf");
        let (cpu0, soft0) = (process_ticks(pid), softirq_ticks());
        let client = ClientRun::start(
            &cli,
            None,
            &client_cfg,
            dir.join(format!("client{round}.json")),
        );
        let report = client.report();
        let (cpu1, soft1) = (process_ticks(pid), softirq_ticks());
        procs.check_running();
        drop(procs);
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
}

/// A client of 500 tasks/s for 1 s against `leaf_at`, without retries;
/// returns its report.
fn client_against(cli: &Host, dir: &Path, name: &str, leaf_at: &str) -> serde_json::Value {
    let config = format!(
        "targets = [{{ addr = \"{leaf_at}\" }}]\npool = 1\napp_id = 9\n\
         rate = 500\nduration_ms = 1000\ntimeout_ms = 200\nseed = 9\n\
         bind = \"{}:0\"\nservice = {{ kind = \"fixed\", value_us = 100 }}\n",
        cli.addr
    );
    run_client(cli, dir, name, &config)
}

/// The control plane's worker removal and re-addition reach the program's
/// maps: the leaf's failure detector (the path the controller's pushes take
/// too, switch/xdp.rs) removes a killed worker agent, and no task goes to it
/// afterwards (a client without retries completes every task); restarted,
/// it is added back and gets tasks again.
#[test]
fn worker_removal_and_return_reach_the_xdp_maps() {
    worker_removal_and_return("worker_removal_and_return_reach_the_xdp_maps", "one");
}

/// The same with the leaf on every CPU (`[xdp] cpus = "all"`, the pass
/// lock; docs/xdp.md "Every CPU"): the daemon attaches the program itself.
#[test]
fn worker_removal_and_return_reach_the_xdp_maps_on_every_cpu() {
    worker_removal_and_return(
        "worker_removal_and_return_reach_the_xdp_maps_on_every_cpu",
        "all",
    );
}

fn worker_removal_and_return(test: &str, cpus: &str) {
    // Namespaces and scratch of their own: both variants run at once.
    let prefix = if cpus == "all" { "xsa" } else { "xsc" };
    let Some(mut lab) = common::lab(test, prefix) else {
        return;
    };
    let cli = lab.host("cli").unwrap();
    let leaf = lab.host("leaf").unwrap();
    let stay = lab.host("wrk").unwrap();
    let go = lab.host("wrk").unwrap();
    let scratch = Scratch::new(prefix);
    let dir = scratch.path();
    let leaf_at = leaf.at(LEAF_PORT);
    let mut procs = Procs::new(dir);
    let worker = |procs: &mut Procs, name: &str, host: &Host, first_id: u16, n: u16| {
        let listen = (0..n)
            .map(|i| format!("\"{}\"", host.at(WORKER_PORT + i)))
            .collect::<Vec<_>>()
            .join(", ");
        let p = write_config(
            dir,
            &format!("{name}.toml"),
            format!(
                "listen = [{listen}]\nfirst_id = {first_id}\nleaf = \"{leaf_at}\"\npool = 1\n\
                 heartbeat_ms = 50\nmetrics = \"{}\"\n",
                host.at(WORKER_METRICS)
            ),
        );
        procs.start(name, host, &["worker", "-c", &p]);
    };
    worker(&mut procs, "stay", &stay, 0, 2);
    worker(&mut procs, "go", &go, 2, 1);
    let p = write_config(
        dir,
        "leaf.toml",
        format!(
            "listen = \"{leaf_at}\"\nmetrics = \"{}\"\ndatapath = \"xdp\"\n\n\
             [xdp]\ninterface = \"eth0\"\nmode = \"generic\"\ncpus = \"{cpus}\"\n\n\
             [[instance]]\npool = 1\nrole = \"leaf\"\npolicy = \"horus\"\n\
             heartbeat_timeout_ms = 300\ndownstream = [\"{}\", \"{}\", \"{}\"]\n",
            leaf.at(LEAF_METRICS),
            stay.at(WORKER_PORT),
            stay.at(WORKER_PORT + 1),
            go.at(WORKER_PORT),
        ),
    );
    procs.start("leaf", &leaf, &["switch", "-c", &p]);
    let metric = |name: &str, label: &str| scrape(&leaf, LEAF_METRICS, name, label).unwrap();
    let within = Duration::from_secs(15);
    // All three live at once (a slow start can time a worker out before
    // its first heartbeat; it comes back when heard).
    wait_for("every worker live", within, || {
        metric("netsched_rx_packets_total", "keep_alive") >= 6
            && metric("netsched_live_nodes", "") == 3
    });
    procs.check_running();

    // Killed: removed by the failure detector, and the maps follow.
    let installed = metric("netsched_xdp_reinstalls_total", "");
    procs.kill("go");
    wait_for("the removal installed", within, || {
        metric("netsched_live_nodes", "") == 2
            && metric("netsched_xdp_reinstalls_total", "") > installed
    });
    let before = metric("netsched_xdp_events_total", "dispatch_");
    let r = client_against(&cli, dir, "client-without", &leaf_at);
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
    wait_for("the return installed", within, || {
        metric("netsched_live_nodes", "") == 3
            && metric("netsched_xdp_reinstalls_total", "") > installed
    });
    let r = client_against(&cli, dir, "client-with", &leaf_at);
    assert_eq!(n(&r, "completed"), n(&r, "submitted"), "{r}");
    let ran_on_go = scrape(&go, WORKER_METRICS, "netsched_worker_tasks_total", "").unwrap();
    assert!(ran_on_go > 0, "the returned worker gets tasks");
    procs.check_running();
}

/// Soft state at an XDP leaf: its registers live in the program's maps,
/// and its daemon refreshes the spine from them. With `soft_state_ms =
/// 200` the leaf re-sends its idle listing and load every 50 ms while no
/// task arrives; the spine here is a socket that counts them (sealing off:
/// the test holds no key). Before the daemon read the maps, an XDP leaf
/// sent nothing once its workers were installed.
#[test]
fn an_xdp_leaf_refreshes_its_spine_from_the_programs_maps() {
    let test = "an_xdp_leaf_refreshes_its_spine_from_the_programs_maps";
    let Some(mut lab) = common::xdp_lab(test, "xsr") else {
        return;
    };
    let leaf = lab.host("leaf").unwrap();
    let wrk = lab.host("wrk").unwrap();
    let spn = lab.host("spn").unwrap();
    let scratch = Scratch::new("xsr");
    let dir = scratch.path();
    let leaf_at = leaf.at(LEAF_PORT);
    let spine_at = spn.at(LEAF_PORT);
    let quoted = worker_list(&wrk);
    let mut procs = Procs::new(dir);
    let p = write_config(
        dir,
        "worker.toml",
        format!("listen = [{quoted}]\nleaf = \"{leaf_at}\"\npool = 1\nheartbeat_ms = 50\n"),
    );
    procs.start("worker", &wrk, &["worker", "-c", &p]);
    let p = write_config(
        dir,
        "leaf.toml",
        format!(
            "listen = \"{leaf_at}\"\nmetrics = \"{}\"\ndatapath = \"xdp\"\nnotice_mac = \"off\"\n\n\
             [xdp]\ninterface = \"eth0\"\nmode = \"generic\"\n\n\
             [[instance]]\npool = 1\nrole = \"leaf\"\npolicy = \"horus\"\nrack = 0\n\
             soft_state_ms = 200\nupstream = [\"{spine_at}\"]\ndownstream = [{quoted}]\n",
            leaf.at(LEAF_METRICS)
        ),
    );
    procs.start("leaf", &leaf, &["switch", "-c", &p]);
    let metric = |name: &str, label: &str| scrape(&leaf, LEAF_METRICS, name, label).unwrap();
    wait_for("every worker live", Duration::from_secs(15), || {
        metric("netsched_live_nodes", "") == u64::from(WORKERS)
    });
    procs.check_running();
    // Notices from here on are refreshes: no task is sent.
    let (idle_adds, loads) = spn
        .run(move || {
            let sock = std::net::UdpSocket::bind(spine_at.as_str()).unwrap();
            sock.set_read_timeout(Some(Duration::from_millis(100)))
                .unwrap();
            let end = std::time::Instant::now() + Duration::from_secs(3);
            let (mut idle_adds, mut loads) = (0u32, 0u32);
            let mut buf = [0u8; 2048];
            while std::time::Instant::now() < end {
                let Ok(n) = sock.recv(&mut buf) else { continue };
                if let Ok(netsched_proto::Message::Horus(m)) = netsched_proto::decode(&buf[..n]) {
                    match m.body {
                        netsched_proto::HorusBody::IdleAdd => idle_adds += 1,
                        netsched_proto::HorusBody::LoadUpdate { load } => {
                            assert_eq!(load, 0, "no task: the rack's load is 0");
                            loads += 1;
                        }
                        _ => {}
                    }
                }
            }
            (idle_adds, loads)
        })
        .unwrap();
    procs.check_running();
    // Every 50 ms for 3 s: 60 of each on a quiet machine; a loaded one
    // still ticks far more often than this asks.
    assert!(
        idle_adds >= 5 && loads >= 5,
        "{idle_adds} idleAdds, {loads} loadUpdates in 3 s"
    );
}

/// Multi-packet tasks (Horus §A.4) through an XDP spine and an XDP leaf,
/// both `netsched switch` daemons: every packet of a task is scheduled or
/// followed in the programs (the first by the spine's and the leaf's
/// passes, each continuation by their connection tables), sealed by the
/// leaf's program for the workers, and none is passed up and refused. A
/// client sends tasks of three packets with retries; every task completes,
/// and the tables' counters account for every continuation.
#[test]
fn multi_packet_tasks_complete_through_the_xdp_spine_and_leaf() {
    let test = "multi_packet_tasks_complete_through_the_xdp_spine_and_leaf";
    let Some(mut lab) = common::xdp_lab(test, "xmp") else {
        return;
    };
    let cli = lab.host("cli").unwrap();
    let spine = lab.host("spine").unwrap();
    let leaf = lab.host("leaf").unwrap();
    let wrk = lab.host("wrk").unwrap();
    let scratch = Scratch::new("xmp");
    let dir = scratch.path();
    let spine_at = spine.at(LEAF_PORT - 1);
    let leaf_at = leaf.at(LEAF_PORT);
    let quoted = worker_list(&wrk);
    let mut procs = Procs::new(dir);
    let key = cluster_key(dir, "6f");
    start_sealed_worker(&mut procs, dir, &wrk, &leaf_at, &key, "");
    let xdp = "datapath = \"xdp\"\n\n[xdp]\ninterface = \"eth0\"\nmode = \"generic\"\ncpu = 1\n";
    let p = write_config(
        dir,
        "spine.toml",
        format!(
            "listen = \"{spine_at}\"\nmetrics = \"{}\"\nseed = 3\nkey_file = \"{key}\"\n{xdp}\n\
             [[instance]]\npool = 1\nrole = \"spine\"\npolicy = \"horus\"\n\
             downstream = [\"{leaf_at}\"]\nrack_workers = [{WORKERS}]\n",
            spine.at(LEAF_METRICS)
        ),
    );
    procs.start("spine", &spine, &["switch", "-c", &p]);
    let p = write_config(
        dir,
        "leaf.toml",
        format!(
            "listen = \"{leaf_at}\"\nmetrics = \"{}\"\nseed = 4\nkey_file = \"{key}\"\n{xdp}\n\
             [[instance]]\npool = 1\nrole = \"leaf\"\npolicy = \"horus\"\nrack = 0\n\
             upstream = [\"{spine_at}\"]\ndownstream = [{quoted}]\n",
            leaf.at(LEAF_METRICS)
        ),
    );
    procs.start("leaf", &leaf, &["switch", "-c", &p]);
    for host in [&spine, &leaf] {
        let up = scrape(host, LEAF_METRICS, "netsched_xdp_events_total", "");
        assert!(up.is_some(), "{}'s /metrics never answered", host.name);
    }
    wait_for("every worker live", Duration::from_secs(15), || {
        scrape(&leaf, LEAF_METRICS, "netsched_live_nodes", "") == Some(u64::from(WORKERS))
    });
    procs.check_running();

    // 500 tasks/s of three packets each for 1.5 s; a task not answered in
    // 100 ms is sent again, every packet of it.
    let cfg = write_config(
        dir,
        "client.toml",
        format!(
            "targets = [{{ addr = \"{spine_at}\" }}]\npool = 1\napp_id = 7\npackets = 3\n\
             rate = 500\nduration_ms = 1500\ntimeout_ms = 100\nretries = 20\nseed = 5\n\
             bind = \"{}:0\"\nservice = {{ kind = \"fixed\", value_us = 100 }}\n",
            cli.addr
        ),
    );
    let report = ClientRun::start(&cli, None, &cfg, dir.join("client.json")).report();
    let submitted = n(&report, "submitted");
    assert!(submitted > 400, "{report}");
    assert_eq!(n(&report, "completed"), submitted, "{report}");
    procs.check_running();

    std::thread::sleep(Duration::from_millis(300));
    let metric = |host: &Host, name: &str, label: &str| {
        scrape(host, LEAF_METRICS, name, label).unwrap_or_else(|| panic!("{name} at {}", host.name))
    };
    let executed = scrape(&wrk, WORKER_METRICS, "netsched_worker_tasks_total", "").unwrap();
    let seal_drops =
        scrape(&wrk, WORKER_METRICS, "netsched_worker_seal_drops_total", "").unwrap_or(0);
    let mut counts = format!("submitted {submitted}, executed {executed}");
    for host in [&spine, &leaf] {
        let event = |e: &str| metric(host, "netsched_xdp_events_total", &format!("\"{e}\""));
        let dispatched = metric(host, "netsched_xdp_events_total", "dispatch_");
        let followed = event("conn_followed");
        let (strangers, overflows) = (event("drop_no_affinity"), event("conn_overflows"));
        let refused = metric(host, "netsched_drops_total", "xdp_passed_task");
        counts += &format!(
            "; {}: dispatched {dispatched}, followed {followed}, no affinity {strangers}, \
             overflows {overflows}, refused {refused}",
            host.name
        );
        // Each dispatched first packet has two continuations, each
        // followed (nothing is lost here); each completed task's last
        // packet went through the table at least once.
        assert_eq!(followed, 2 * dispatched, "{counts}");
        assert!(dispatched >= submitted, "{counts}");
        assert_eq!((strangers, overflows, refused), (0, 0, 0), "{counts}");
    }
    assert!(submitted <= executed, "{counts}");
    assert_eq!(seal_drops, 0, "continuations sealed by the leaf: {counts}");
}
