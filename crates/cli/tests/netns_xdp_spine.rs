//! `netsched switch` running the Horus spine with `datapath = "xdp"`, end to
//! end as processes in network namespaces: two clients (pinned to CPU 0 and
//! CPU 1) send to the spine, whose XDP program (generic mode on its veth,
//! steered to CPU 1, or with `[xdp] cpus = "all"` run on both CPUs under its
//! pass lock) picks a rack and forwards each task to that rack's leaf (`netsched switch`, the
//! socket daemon), which schedules it on a worker agent of three executors.
//! Replies go back through the leaf to the spine, whose program passes them
//! up to its daemon, which sends them on to the client by the program's
//! reply routes; the leaf's notices (idleAdd, idleRemove, loadUpdate; Horus
//! §3.3-§3.4) go to the spine's program. Every task must complete, and the
//! spine's counters must show it scheduled them: every task the workers ran
//! was dispatched by the spine's program, none in user space. Needs root
//! and BPF; skipped loudly without (failed under NETSCHED_REQUIRE_NETNS=1).

mod common;

use std::time::Duration;

use common::{quoted, wait_for, write_config, Procs, Scratch};
use netsched_lab::netns::Host;

use common::horus_xdp::{
    LEAF_PORT, METRICS, SCRAPE_ATTEMPTS, SPINE_PORT, WORKERS, WORKER_METRICS, WORKER_PORT,
};

fn scrape(host: &Host, port: u16, metric: &str, label: &str) -> u64 {
    common::scrape(host, port, metric, label, SCRAPE_ATTEMPTS)
        .unwrap_or_else(|| panic!("{metric} at {} never answered", host.name))
}

#[test]
fn every_task_completes_through_the_xdp_spine_daemon() {
    xdp_spine_daemon(
        "every_task_completes_through_the_xdp_spine_daemon",
        "xsp",
        "cpu = 1",
    );
}

/// The same with the spine on every CPU (`[xdp] cpus = "all"`; docs/xdp.md
/// "Every CPU"), in native mode: the daemon attaches the program itself,
/// both CPUs the clients send from ran it, and its tasks leave by a
/// redirect that wakes the leaf's veth peer (sent by XDP_TX, they waited in
/// the peer's ring and no task completed).
#[test]
fn every_task_completes_through_the_xdp_spine_daemon_on_every_cpu() {
    xdp_spine_daemon(
        "every_task_completes_through_the_xdp_spine_daemon_on_every_cpu",
        "xsq",
        "cpus = \"all\"",
    );
}

/// `cpus` is the `[xdp]` line choosing the spine's CPUs.
fn xdp_spine_daemon(test: &str, prefix: &str, cpus: &str) {
    let every_cpu = cpus.starts_with("cpus");
    let Some(mut lab) = common::xdp_lab(test, prefix) else {
        return;
    };
    let cli = lab.host("cli").unwrap();
    let spine = lab.host("spine").unwrap();
    let leaf = lab.host("leaf").unwrap();
    let wrk = lab.host("wrk").unwrap();
    // One CPU in generic mode, every CPU in native mode: both paths out.
    let mode = if every_cpu {
        lab.native_xdp(&spine, &[&cli, &leaf]).unwrap();
        "native"
    } else {
        "generic"
    };
    let scratch = Scratch::new(prefix);
    let dir = scratch.path();
    let spine_at = spine.at(SPINE_PORT);
    let leaf_at = leaf.at(LEAF_PORT);
    let workers: Vec<String> = (0..WORKERS).map(|i| wrk.at(WORKER_PORT + i)).collect();
    let workers = quoted(&workers);
    let mut procs = Procs::new(dir);

    let p = write_config(
        dir,
        "worker.toml",
        format!(
            "listen = [{workers}]\nleaf = \"{leaf_at}\"\npool = 1\nheartbeat_ms = 50\n\
             metrics = \"{}\"\n",
            wrk.at(WORKER_METRICS)
        ),
    );
    procs.start("worker", &wrk, &["worker", "-c", &p]);
    let p = write_config(
        dir,
        "spine.toml",
        format!(
            "listen = \"{spine_at}\"\nmetrics = \"{}\"\nseed = 3\ndatapath = \"xdp\"\n\n\
             [xdp]\ninterface = \"eth0\"\nmode = \"{mode}\"\n{cpus}\n\n\
             [[instance]]\npool = 1\nrole = \"spine\"\npolicy = \"horus\"\n\
             downstream = [\"{leaf_at}\"]\nrack_workers = [{WORKERS}]\n",
            spine.at(METRICS)
        ),
    );
    procs.start("spine", &spine, &["switch", "-c", &p]);
    // Up: the spine's metrics answer once its program is attached.
    scrape(&spine, METRICS, "netsched_xdp_events_total", "");
    let p = write_config(
        dir,
        "leaf.toml",
        format!(
            "listen = \"{leaf_at}\"\nmetrics = \"{}\"\nseed = 4\n\n\
             [[instance]]\npool = 1\nrole = \"leaf\"\npolicy = \"horus\"\nrack = 0\n\
             upstream = [\"{spine_at}\"]\ndownstream = [{workers}]\n",
            leaf.at(METRICS)
        ),
    );
    procs.start("leaf", &leaf, &["switch", "-c", &p]);
    wait_for(
        "every worker live at the leaf",
        Duration::from_secs(15),
        || scrape(&leaf, METRICS, "netsched_live_nodes", "") == u64::from(WORKERS),
    );
    procs.check_running();

    // Two clients pinned to CPU 0 and CPU 1, so packets reach the spine's
    // XDP hook on both CPUs (a veth receives on the sender's CPU), each
    // 500 tasks/s of 200 µs for 2 s; a task not answered in 200 ms is sent
    // again (a loaded machine can delay a reply that long), so a retry may
    // run a task twice: counted below as such.
    let submitted = common::pinned_clients(&cli, dir, 500, |c| {
        format!(
            "targets = [{{ addr = \"{spine_at}\" }}]\npool = 1\napp_id = {}\n\
             rate = 500\nduration_ms = 2000\ntimeout_ms = 200\nretries = 20\nseed = {}\n\
             bind = \"{}:0\"\nservice = {{ kind = \"fixed\", value_us = 200 }}\n",
            7 + c,
            5 + c,
            cli.addr
        )
    });
    procs.check_running();

    // Counters settle once the last replies are in.
    std::thread::sleep(Duration::from_millis(300));
    let at_spine = |name: &str, label: &str| scrape(&spine, METRICS, name, label);
    let dispatched = at_spine("netsched_xdp_events_total", "dispatch_");
    let executed = scrape(&wrk, WORKER_METRICS, "netsched_worker_tasks_total", "");
    let leaf_tasks = scrape(
        &leaf,
        METRICS,
        "netsched_rx_packets_total",
        "\"task_first\"",
    );
    let forwarded = at_spine("netsched_tx_packets_total", "\"reply\"");
    let notices = [
        at_spine("netsched_xdp_events_total", "\"idle_adds\""),
        at_spine("netsched_xdp_events_total", "\"idle_removes\""),
        at_spine("netsched_xdp_events_total", "\"load_updates\""),
    ];
    let counts = format!(
        "submitted {submitted}, spine dispatched {dispatched}, leaf received {leaf_tasks}, \
         executed {executed}, spine forwarded replies {forwarded}, \
         notices (adds, removes, loads) {notices:?}"
    );
    // Every task the workers ran came through the spine's program, and
    // every one it dispatched reached the leaf (no loss is injected).
    assert!(submitted <= executed && executed <= dispatched, "{counts}");
    assert_eq!(leaf_tasks, dispatched, "{counts}");
    // Every reply went back through the spine's daemon to the client.
    assert!(forwarded >= submitted, "{counts}");
    // The program scheduled them all: no task without a rack, none from an
    // unknown rack, none passed up and refused in user space.
    for event in [
        "\"drop_no_nodes\"",
        "\"drop_unknown_node\"",
        "\"drop_unregistered\"",
    ] {
        assert_eq!(
            at_spine("netsched_xdp_events_total", event),
            0,
            "{event}: {counts}"
        );
    }
    assert_eq!(
        at_spine("netsched_drops_total", "xdp_passed_task"),
        0,
        "{counts}"
    );
    // The leaf's notices reached the spine's program: the idle rack it
    // announced at start (idleAdd, §3.3) at least.
    assert!(notices[0] > 0, "{counts}");
    let on = |program: &str, cpu: u32| {
        at_spine(
            "netsched_xdp_cpu_packets_total",
            &format!("program=\"{program}\",cpu=\"{cpu}\""),
        )
    };
    let runs = [
        on("steer", 0),
        on("steer", 1),
        on("spine", 0),
        on("spine", 1),
    ];
    if every_cpu {
        // No steering: the CPU that received a frame ran the spine, both
        // CPUs the clients sent from, every task among them.
        assert_eq!(runs[..2], [0, 0], "nothing steered: {runs:?} {counts}");
        assert!(runs[2] > 0 && runs[3] > 0, "{runs:?} {counts}");
        assert!(runs[2] + runs[3] >= dispatched, "{runs:?} {counts}");
    } else {
        // Packets came in on both CPUs; one CPU (xdp.cpu = 1) ran the
        // spine, reported as the spine's runs.
        assert!(runs[0] > 0 && runs[1] > 0, "{runs:?} {counts}");
        assert_eq!(runs[2], 0, "the spine ran only on CPU 1: {runs:?} {counts}");
        assert!(runs[3] >= dispatched, "{runs:?} {counts}");
    }
    assert_eq!(
        on("leaf", 0) + on("leaf", 1),
        0,
        "a spine is no leaf: {counts}"
    );
}

/// `netsched bench xdp-e2e` end to end with a tiny load: the lab, native
/// XDP on the scheduler's veth, every system started, driven and measured.
/// Asserts only that each system completed tasks end to end (the bench
/// fails when one completes none), never a rate.
#[test]
fn bench_xdp_e2e_runs_every_system() {
    let test = "bench_xdp_e2e_runs_every_system";
    // The bench builds its own lab; this one only asks whether it can.
    if common::xdp_lab(test, "xbs").is_none() {
        return;
    }
    let mut systems = vec!["xdp-leaf", "xdp-spine", "socket-leaf", "socket-spine"];
    let nginx = std::path::Path::new(netsched_lab::nginx::DEFAULT_NGINX).exists()
        && std::path::Path::new(netsched_lab::nginx::DEFAULT_STREAM_MODULE).exists();
    if nginx {
        systems.push("nginx");
    } else {
        eprintln!("{test}: nginx or its stream module missing, not run");
    }
    let list = systems.join(",");
    let (code, out, err) = common::netsched(&[
        "bench",
        "xdp-e2e",
        "--systems",
        &list,
        "--generators",
        "1",
        "--window",
        "8",
        "--duration-ms",
        "500",
        "--low-rate",
        "500",
        "--latency-ms",
        "1000",
    ]);
    assert_eq!(code, 0, "{out}\n{err}");
    for system in systems {
        let row = out
            .lines()
            .rev()
            .find(|l| l.starts_with(&format!("| {system} |")))
            .unwrap_or_else(|| panic!("no row for {system}: {out}"));
        let per_s: f64 = row.split('|').nth(2).unwrap().trim().parse().unwrap();
        assert!(per_s > 0.0, "{row}");
    }
}

/// `netsched bench xdp-e2e --systems
/// xdp-leaf-live,xdp-leaf-live-all,xdp-floor-live` with short runs: the XDP
/// generator (live frames) and the XDP workers around the XDP leaf in
/// native mode, on one CPU and on every CPU, and around the path's floor in
/// its place, every program detached and the namespaces deleted after.
/// Asserts that tasks completed through each and each row reports the
/// generator's rate, never a rate's size.
#[test]
fn bench_xdp_e2e_live_frames_smoke() {
    let test = "bench_xdp_e2e_live_frames_smoke";
    if common::xdp_lab(test, "xls").is_none() {
        return;
    }
    let (code, out, err) = common::netsched(&[
        "bench",
        "xdp-e2e",
        "--systems",
        "xdp-leaf-live,xdp-leaf-live-all,xdp-floor-live",
        "--duration-ms",
        "200",
        "--low-rate",
        "500",
        "--latency-ms",
        "300",
    ]);
    assert_eq!(code, 0, "{out}\n{err}");
    for system in ["xdp-leaf-live", "xdp-leaf-live-all", "xdp-floor-live"] {
        let row = out
            .lines()
            .rev()
            .find(|l| l.starts_with(&format!("| {system} |")))
            .unwrap_or_else(|| panic!("no {system} row: {out}"));
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        let per_s: f64 = cells[2].parse().unwrap();
        let generated: f64 = cells[7].parse().unwrap();
        assert!(per_s > 0.0 && generated >= per_s, "{row}");
        if system == "xdp-floor-live" {
            // No leaf, no daemon: nothing for the program to forward.
            continue;
        }
        // The replies went on from the program, not from the leaf's daemon.
        let forwarded: u64 = out
            .split(&format!("{system}: sent "))
            .nth(1)
            .and_then(|rest| rest.split("replies forwarded by the program ").nth(1))
            .and_then(|rest| rest.split(';').next())
            .and_then(|n| n.trim().parse().ok())
            .unwrap_or_else(|| panic!("no forwarded count for {system}: {out}"));
        assert!(forwarded > 0, "{system}: {out}");
    }
}
