//! `netsched cluster up`: real processes on loopback, torn down on exit,
//! on Ctrl-C and when `cluster up` itself is killed (no orphans).

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::bin;

fn config(dir: &Path, port: u16, duration_ms: u64, policies: &str) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let p = dir.join("cluster.toml");
    std::fs::write(
        &p,
        format!(
            "run_dir = \"{}\"\npolicies = [{policies}]\nracks = 2\nworkers_per_rack = 2\n\
             base_port = {port}\n\n[workload]\nservice = {{ kind = \"exp\", mean_us = 200 }}\n\
             load = 0.2\nduration_ms = {duration_ms}\ntimeout_ms = 300\n",
            dir.join("run").display()
        ),
    )
    .unwrap();
    p
}

fn tmp(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("netsched-up-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// Pids `cluster up` started, from every policy's `pids` file.
fn pids(run: &Path) -> Vec<i32> {
    let mut v = Vec::new();
    for e in std::fs::read_dir(run).into_iter().flatten().flatten() {
        if let Ok(t) = std::fs::read_to_string(e.path().join("pids")) {
            v.extend(
                t.lines()
                    .filter_map(|l| l.split_whitespace().next()?.parse::<i32>().ok()),
            );
        }
    }
    v
}

fn alive(pid: i32) -> bool {
    // A zombie still answers kill(0); read its state to tell.
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(s) => !s.split(") ").nth(1).is_some_and(|r| r.starts_with('Z')),
        Err(_) => false,
    }
}

fn wait_gone(pids: &[i32], limit: Duration) -> Vec<i32> {
    let t = Instant::now();
    loop {
        let left: Vec<i32> = pids.iter().copied().filter(|p| alive(*p)).collect();
        if left.is_empty() || t.elapsed() > limit {
            return left;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The agreement test measures latency, so it runs with no other cluster
/// of this binary alive: the tests that start clusters share this lock,
/// the agreement test takes it alone (cargo runs a binary's tests in
/// parallel threads, and three concurrent clusters on 2 cores were a load
/// the agreement's own client could not see).
fn cluster_lock(exclusive: bool) -> Box<dyn std::any::Any> {
    static LOCK: std::sync::RwLock<()> = std::sync::RwLock::new(());
    if exclusive {
        Box::new(LOCK.write().unwrap_or_else(|e| e.into_inner()))
    } else {
        Box::new(LOCK.read().unwrap_or_else(|e| e.into_inner()))
    }
}

#[test]
fn runs_horus_and_rs_h_and_prints_both_beside_the_simulator() {
    let _shared = cluster_lock(false);
    let d = tmp("ok");
    let cfg = config(&d, 21000, 400, "\"horus\", \"rs-h\"");
    let out = Command::new(bin())
        .args(["cluster", "up", cfg.to_str().unwrap()])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for p in ["horus", "rs-h"] {
        let line = stdout
            .lines()
            .find(|l| l.starts_with(&format!("{p} ")))
            .unwrap_or_else(|| panic!("no {p} line in {stdout}"));
        let f: Vec<&str> = line.split_whitespace().collect();
        // policy submitted completed failed timed_out p50 p99 sim_p50 sim_p99
        // p50/sim p99/sim
        assert_eq!(f.len(), 11, "{line}");
        let n: Vec<u64> = f[1..5].iter().map(|x| x.parse().unwrap()).collect();
        assert!(n[0] > 100, "{line}");
        assert_eq!(n[0], n[1] + n[2] + n[3], "every task accounted for: {line}");
        assert!(n[1] as f64 >= 0.95 * n[0] as f64, "{line}");
        let sim_p99: f64 = f[8].parse().unwrap();
        assert!(sim_p99 > 200.0, "{line}");
    }
    let left = wait_gone(&pids(&d.join("run")), Duration::from_secs(2));
    assert!(left.is_empty(), "orphans: {left:?}");
    let _ = std::fs::remove_dir_all(&d);
}

fn start_long(tag: &str, port: u16) -> (PathBuf, std::process::Child) {
    let d = tmp(tag);
    let cfg = config(&d, port, 30_000, "\"horus\"");
    let child = Command::new(bin())
        .args(["cluster", "up", cfg.to_str().unwrap()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Until the client runs: every daemon is up.
    let t = Instant::now();
    while !d.join("run/horus/client.log").exists() {
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "cluster never came up"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    (d, child)
}

#[test]
fn ctrl_c_tears_everything_down() {
    let _shared = cluster_lock(false);
    let (d, mut child) = start_long("int", 24000);
    let started = pids(&d.join("run"));
    assert_eq!(started.len(), 6, "controller, spine, 2 leaves, 2 workers");
    assert!(started.iter().all(|p| alive(*p)));
    let ok = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(ok.success());
    let t = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "cluster up ignored Ctrl-C"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(!status.success(), "interrupted run reports failure");
    let left = wait_gone(&started, Duration::from_secs(3));
    assert!(left.is_empty(), "orphans after Ctrl-C: {left:?}");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn killing_cluster_up_leaves_no_orphans() {
    let _shared = cluster_lock(false);
    let (d, mut child) = start_long("kill", 27000);
    let started = pids(&d.join("run"));
    assert_eq!(started.len(), 6);
    child.kill().unwrap();
    child.wait().unwrap();
    // PR_SET_PDEATHSIG: the kernel kills the daemons with their parent.
    let left = wait_gone(&started, Duration::from_secs(3));
    assert!(left.is_empty(), "orphans after SIGKILL: {left:?}");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn bad_configs_give_one_line_errors() {
    let d = tmp("bad");
    std::fs::create_dir_all(&d).unwrap();
    let cases = [
        ("policies = [\"nope\"]\n[workload]\nservice = { kind = \"exp\", mean_us = 100 }\nload = 0.5\nduration_ms = 100\n", "policies"),
        ("[workload]\nservice = { kind = \"exp\", mean_us = 100 }\nload = 1.5\nduration_ms = 100\n", "workload.load"),
        ("racks = 0\n[workload]\nservice = { kind = \"exp\", mean_us = 100 }\nload = 0.5\nduration_ms = 100\n", "racks"),
    ];
    for (i, (text, field)) in cases.iter().enumerate() {
        let p = d.join(format!("bad{i}.toml"));
        std::fs::write(&p, text).unwrap();
        let out = Command::new(bin())
            .args(["cluster", "up", p.to_str().unwrap()])
            .output()
            .unwrap();
        assert!(!out.status.success());
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(err.contains(field), "{field}: {err}");
    }
    let out = Command::new(bin())
        .args(["cluster", "down"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown action"));
    let p = d.join("ctl.toml");
    std::fs::write(
        &p,
        "listen = \"127.0.0.1:0\"\nadmin = \"127.0.0.1:0\"\n[[pool]]\nid = 1\nspines = []\n",
    )
    .unwrap();
    let out = Command::new(bin())
        .args(["controller", "-c", p.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("spines") && err.trim().lines().count() == 1,
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&d);
}

// The agreement's tolerances and their derivation:
// netsched_lab::cluster_up::{P50_TOLERANCE, P99_TOLERANCE}, which
// `cluster up` prints its verdict against.
/// A client that could not send on time for this long was itself stalled
/// (this VM stalls even a nice -10 process for up to tens of ms under other
/// users' load): such a run's disagreement is retried, an undisturbed one's
/// fails at once.
const DISTURBED_LAG_US: f64 = 10_000.0;
/// The comparison's premise is hop delays small beside the 5 ms tasks (the
/// simulator's hops are constant). When the idle path's p99 in the run's
/// own calibration exceeds this (quiet: a few hundred µs), the daemons
/// were stalled for ms: the premise failed, and such a run's disagreement
/// is retried too (RS-H, whose spine decides on the loads replies carry,
/// then runs ×1.2-×1.5 the simulator's p50 with an undisturbed client).
const DISTURBED_IDLE_P99_US: f64 = 1_000.0;

#[test]
fn simulator_and_runtime_agree_at_moderate_load() {
    let _alone = cluster_lock(true);
    // experiments/cluster-agree.toml: moderate load (0.5) on few workers
    // (2 racks x 2) with long timer tasks (Exp, mean 5 ms): hop and daemon
    // overheads (tens of µs) and the machine's ms-scale stalls are small
    // beside the service time, and 400 tasks/s leave a loaded 2-core
    // machine room. Since RS-H runs on RackSched's 2-executor servers the
    // two policies differ by only ×1.02-×1.08 here (they differed ×1.5 on
    // single-queue workers), so this checks each runtime against its own
    // simulated twin; it would not tell the two policies apart.
    let d = tmp("agree");
    std::fs::create_dir_all(&d).unwrap();
    let cfg = d.join("cluster.toml");
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../experiments/cluster-agree.toml"),
    )
    .unwrap()
    .replace(
        "run_dir = \"results/cluster-agree\"",
        &format!("run_dir = \"{}\"", d.join("run").display()),
    )
    .replace("base_port = 17800", "base_port = 30000");
    assert!(text.contains(&d.display().to_string()), "run_dir replaced");
    std::fs::write(&cfg, text).unwrap();
    let mut attempts = Vec::new();
    for _ in 0..3 {
        let out = Command::new(bin())
            .args(["cluster", "up", cfg.to_str().unwrap()])
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        eprintln!("{stdout}");
        assert!(
            out.status.success(),
            "{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let mut bad = Vec::new();
        let mut disturbed = false;
        for p in ["horus", "rs-h"] {
            let dir = d.join("run").join(p);
            let v: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(dir.join("compare.json")).unwrap())
                    .unwrap();
            let c: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(dir.join("client.json")).unwrap())
                    .unwrap();
            let n = |k: &str| v[k].as_f64().unwrap_or_else(|| panic!("{k} in {v}"));
            // Accounting and calibration are checked on every attempt.
            assert_eq!(n("completed"), n("submitted"), "{p}: every task completed");
            assert!(n("submitted") > 3500.0, "{p}: {v}");
            assert!(
                n("overhead_us") > 5.0 && n("overhead_us") < 3000.0,
                "{p}: implausible round trip: {v}"
            );
            let (r50, r99) = (n("p50_ratio"), n("p99_ratio"));
            if !netsched_lab::cluster_up::within_tolerance(r50, r99) {
                bad.push(format!(
                    "{p}: runtime p50 {:.0} / p99 {:.0} us vs simulator {:.0} / {:.0} us (x{r50:.2}, x{r99:.2})",
                    n("runtime_p50_us"),
                    n("runtime_p99_us"),
                    n("sim_p50_us"),
                    n("sim_p99_us")
                ));
                let lag = c["max_send_lag_ns"].as_f64().unwrap() / 1e3;
                let calibration: serde_json::Value = serde_json::from_str(
                    &std::fs::read_to_string(dir.join("calibration.json")).unwrap(),
                )
                .unwrap();
                let idle_p99 = calibration["p99_us"].as_f64().unwrap();
                disturbed |= lag > DISTURBED_LAG_US || idle_p99 > DISTURBED_IDLE_P99_US;
                bad.push(format!(
                    "{p}: client max send lag {lag:.0} us, idle-path p99 {idle_p99:.0} us"
                ));
            }
        }
        if bad.is_empty() {
            let _ = std::fs::remove_dir_all(&d);
            return;
        }
        assert!(
            disturbed,
            "disagreement in an undisturbed run: {bad:?} (earlier attempts: {attempts:?})"
        );
        attempts.push(bad);
    }
    panic!("every attempt disagreed, each on a stalled machine: {attempts:?}");
}
