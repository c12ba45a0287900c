//! `netsched pull` end to end: a small sweep prints its table and writes
//! runs.csv and summary.json; bad input gets a one-line error and a non-zero exit.

mod common;

use std::path::PathBuf;

use common::netsched;

const SMALL: &str = r#"
seed = 1
policy = "draconis"
[cluster]
nodes = 2
executors_per_node = 4
[workload]
service = { kind = "fixed", value_us = 100 }
load = 0.5
tasks = 2000
priority_weights = [1, 1, 1, 1]
"#;

/// This test binary's scratch directory.
fn dir() -> PathBuf {
    common::temp_dir("pull")
}

#[test]
fn sweep_writes_table_csv_and_json() {
    let d = dir();
    let cfg = d.join("small.toml");
    std::fs::write(&cfg, SMALL).unwrap();
    let out = d.join("out");
    let (code, stdout, stderr) = netsched(&[
        "pull",
        "-q",
        "-c",
        cfg.to_str().unwrap(),
        "--policy",
        "draconis,draconis-priority,r2p2-recirc,sparrow,draconis-server",
        "--load",
        "0.3,0.7",
        "--workload",
        "bimodal",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{stderr}");
    for p in [
        "draconis ",
        "draconis-priority",
        "r2p2-recirc",
        "sparrow",
        "draconis-server",
    ] {
        assert!(stdout.contains(p), "{p} missing from\n{stdout}");
    }
    assert!(stdout.contains("per priority level"), "{stdout}");
    let csv = std::fs::read_to_string(out.join("runs.csv")).unwrap();
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    for col in [
        "policy",
        "load",
        "p50_us",
        "p99_us",
        "decisions_per_s",
        "dropped",
        "recirc_fraction",
        "p99_l4_us",
    ] {
        assert!(header.contains(&col), "{col} not in {header:?}");
    }
    let rows: Vec<&str> = lines.collect();
    assert_eq!(rows.len(), 10);
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let runs = json["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 10);
    for r in runs {
        assert_eq!(r["completed"], r["submitted"], "{r}");
        assert!(r["sched"]["p99_ns"].as_u64().unwrap() > 0);
    }
    // The bimodal §8 workload replaced the config's fixed 100 µs.
    assert_eq!(json["config"]["workload"]["service"]["kind"], "mix");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn bad_input_is_one_line_error() {
    let d = dir().join("bad");
    std::fs::create_dir_all(&d).unwrap();
    let cfg = d.join("bad.toml");
    std::fs::write(&cfg, "[workload]\nload = 5\n").unwrap();
    let (code, _, err) = netsched(&["pull", "-q", "-c", cfg.to_str().unwrap()]);
    assert_ne!(code, 0);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("workload.load"), "{err}");
    let (code, _, err) = netsched(&["pull", "-q", "--policy", "horus"]);
    assert_ne!(code, 0);
    assert!(err.contains("--policy") && err.contains("horus"), "{err}");
    let (code, _, err) = netsched(&["pull", "-q", "--workload", "fixed7"]);
    assert_ne!(code, 0);
    assert!(
        err.contains("--workload") && err.contains("fixed7"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&d);
}
