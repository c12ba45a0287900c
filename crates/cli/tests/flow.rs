//! `netsched flowsim` end to end: a small run writes summary.json, runs.csv
//! and tasks.csv with the documented columns and one row per policy and
//! task; bad input gets a one-line error naming the field.

mod common;

use std::path::PathBuf;

use common::netsched;

const SMALL: &str = r#"
seed = 3
policies = ["fair", "pfabric", "orchestra", "stf", "baraat"]
[topology]
pods = 2
racks_per_pod = 3
servers_per_rack = 6
[workload]
workflow = "two-stage"
sizes = "bing"
tasks = 40
load = 0.7
aggregators = 2
mid_aggregators = 2
compute_us = 50.0
[sweep]
thresholds = [0.5, 0.9]
"#;

/// This test binary's scratch directory.
fn dir() -> PathBuf {
    common::temp_dir("flowcli")
}

/// Writes `text` to `name` in this binary's directory; returns its path.
fn write(name: &str, text: &str) -> String {
    common::write_config(&dir(), name, text)
}

#[test]
fn small_run_writes_outputs() {
    let cfg = write("small.toml", SMALL);
    let out = dir().join("out");
    let (code, stdout, err) = netsched(&[
        "flowsim",
        "-q",
        "--config",
        &cfg,
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    // The per-policy table and the Table 4-shaped comparison.
    for p in [
        "fair",
        "pfabric",
        "orchestra",
        "stf",
        "baraat@p50",
        "baraat@p90",
    ] {
        assert!(stdout.contains(p), "{p} missing from:\n{stdout}");
    }
    let runs = std::fs::read_to_string(out.join("runs.csv")).unwrap();
    let mut lines = runs.lines();
    assert_eq!(
        lines.next().unwrap(),
        "label,policy,threshold_percentile,tasks,mean_ns,median_ns,p95_ns,p99_ns,max_ns"
    );
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), 7, "{runs}");
    for r in &rows {
        assert_eq!(r.len(), 9, "{r:?}");
        assert_eq!(r[3], "40");
        let q: Vec<f64> = r[4..].iter().map(|x| x.parse().unwrap()).collect();
        // median <= p95 <= p99 <= max, all positive.
        assert!(
            q[1] > 0.0 && q[1] <= q[2] && q[2] <= q[3] && q[3] <= q[4],
            "{r:?}"
        );
    }
    let tasks = std::fs::read_to_string(out.join("tasks.csv")).unwrap();
    let mut lines = tasks.lines();
    assert_eq!(
        lines.next().unwrap(),
        "label,index,task_id,arrival_ns,completion_ns,bytes"
    );
    assert_eq!(lines.count(), 7 * 40);
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["runs"].as_array().unwrap().len(), 7);
    assert_eq!(summary["config"]["workload"]["tasks"], 40);
}

fn assert_rejected(name: &str, text: &str, extra: &[&str], field: &str) {
    let p = write(name, text);
    let mut args = vec!["flowsim", "-q", "--config", &p];
    args.extend_from_slice(extra);
    args.extend_from_slice(&["--out", "/dev/null/x"]);
    common::assert_one_line_error(name, &args, field);
}

#[test]
fn invalid_configs_name_the_field() {
    assert_rejected(
        "load.toml",
        &SMALL.replace("load = 0.7", "load = 1.5"),
        &[],
        "workload.load",
    );
    assert_rejected(
        "spr.toml",
        &SMALL.replace("servers_per_rack = 6", "servers_per_rack = 1"),
        &[],
        "topology.servers_per_rack",
    );
    assert_rejected(
        "policy.toml",
        &SMALL.replace("\"stf\"", "\"lifo\""),
        &[],
        "lifo",
    );
    assert_rejected("flag.toml", SMALL, &["--policy", "fastest"], "--policy");
}

#[test]
fn fig7_rejects_bad_task_range() {
    let (code, _, err) = netsched(&["flowsim", "fig7", "--tasks", "5..2"]);
    assert_ne!(code, 0);
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains("--tasks"), "{err}");
}
