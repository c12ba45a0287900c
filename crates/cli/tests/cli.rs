//! The `netsched` binary end to end: bad input gets a one-line error naming the
//! field and a non-zero exit; a small run writes its outputs.

mod common;

use std::path::PathBuf;
use std::process::Command;

use common::{bin, netsched};

/// The run the tests vary, one line at a time.
fn base() -> String {
    common::small_fat_tree("seed = 1\npolicy = \"horus\"\n", 30)
}

/// This test binary's scratch directory.
fn dir() -> PathBuf {
    common::temp_dir("cli")
}

/// Writes `text` to `name` in this binary's directory; returns its path.
fn write(name: &str, text: &str) -> String {
    common::write_config(&dir(), name, text)
}

fn assert_rejected(name: &str, text: &str, field: &str) {
    let p = write(name, text);
    let args = ["sim", "-q", "-c", &p, "--out", "/dev/null/x"];
    common::assert_one_line_error(name, &args, field);
}

/// Each case replaces one line of `base()`: (file name, from, to, the field the
/// one-line error must name).
const REJECTED: [(&str, &str, &str, &str); 8] = [
    (
        "policy.toml",
        "policy = \"horus\"",
        "policy = \"fifo\"",
        "policy",
    ),
    ("load.toml", "load = 0.7", "load = 1.5", "workload.load"),
    ("load0.toml", "load = 0.7", "load = 0", "workload.load"),
    (
        "empty.toml",
        "sizes = [20, 10]",
        "sizes = [20, 0]",
        "placement.sizes[1]",
    ),
    ("radix.toml", "radix = 4", "radix = 5", "topology.radix"),
    ("unknown.toml", "seed = 1", "seed = 1\nsed = 2", "sed"),
    (
        "type.toml",
        "load = 0.7",
        "load = \"high\"",
        "workload.load",
    ),
    (
        "toobig.toml",
        "sizes = [20, 10]",
        "sizes = [1000]",
        "placement",
    ),
];

#[test]
fn invalid_configs_are_rejected_with_the_field_named() {
    for (name, from, to, field) in REJECTED {
        assert!(base().contains(from), "{name}: `{from}` is not in the base");
        assert_rejected(name, &base().replace(from, to), field);
    }
    // A value the data plane refuses is a config error, not a panic in a
    // simulation thread (netsched_core::registry::PlaneParams).
    assert_rejected(
        "samples.toml",
        &format!("{}\n[schedulers]\nsamples = 17\n", base()),
        "schedulers.samples: must be in 1..=16, got 17",
    );
}

#[test]
fn policy_and_load_flags_are_validated_too() {
    let p = write("ok.toml", &base());
    let (code, _, err) = netsched(&["sim", "-q", "-c", &p, "--policy", "nope"]);
    assert_ne!(code, 0);
    assert!(err.contains("unknown policy `nope`"), "{err}");
    let (code, _, err) = netsched(&["sim", "-q", "-c", &p, "--load", "1.2"]);
    assert_ne!(code, 0);
    assert!(err.contains("load must be in (0, 1]"), "{err}");
}

#[test]
fn a_small_run_prints_the_table_and_writes_outputs() {
    let p = write("run.toml", &base());
    let out = std::env::temp_dir().join(format!("netsched-cli-out-{}", std::process::id()));
    let (code, stdout, err) = netsched(&[
        "sim",
        "-q",
        "-c",
        &p,
        "--policy",
        "horus,rs-h",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        stdout.contains("horus") && stdout.contains("rs-h"),
        "{stdout}"
    );
    let runs = std::fs::read_to_string(out.join("runs.csv")).unwrap();
    assert_eq!(runs.lines().count(), 3, "header + 2 runs");
    let pools = std::fs::read_to_string(out.join("pools.csv")).unwrap();
    assert_eq!(pools.lines().count(), 5, "header + 2 runs x 2 pools");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(json["runs"].as_array().unwrap().len(), 2);
    assert!(json["runs"][0]["overall"]["completed"].as_u64().unwrap() > 0);
}

/// A value the data plane would refuse at build time (RackSched's LoadTable
/// holds at most 16 sample copies) is a config error, not a panic inside a
/// simulation thread: one line naming the field, exit code 1, from `check`
/// and from `sim` alike.
#[test]
fn samples_beyond_the_data_plane_are_refused_by_check_and_sim() {
    let text =
        base().replace("policy = \"horus\"", "policy = \"rs-h\"") + "[schedulers]\nsamples = 17\n";
    let p = write("samples17.toml", &text);
    for args in [
        vec!["check", &p],
        vec!["sim", "-q", "-c", &p, "--out", "/dev/null/x"],
    ] {
        let (code, _, err) = netsched(&args);
        assert_eq!(code, 1, "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(
            err.contains("schedulers.samples: must be in 1..=16, got 17"),
            "{args:?}: {err}"
        );
    }
    let ok = write(
        "samples16.toml",
        &text.replace("samples = 17", "samples = 16"),
    );
    let (code, out, err) = netsched(&["check", &ok]);
    assert_eq!((code, out.trim_end().ends_with(": ok")), (0, true), "{err}");
}

/// `check` reads every file a run would: a trace that is not there fails
/// the check (exit 1, one line naming the file), as `sim` would fail, and a
/// trace beside the config (relative paths resolve against its directory)
/// passes.
#[test]
fn check_resolves_the_trace_a_run_would_read() {
    // The base with its service read from the trace at `path`.
    let with_trace = |name: &str, path: &str| {
        let svc = format!("service = {{ kind = \"trace\", path = \"{path}\" }}");
        write(
            name,
            &base().replace("service = { kind = \"preset\", name = \"bimodal\" }", &svc),
        )
    };
    let missing = with_trace("trace-missing.toml", "no-such-trace.csv");
    let (code, _, err) = netsched(&["check", &missing]);
    assert_eq!(code, 1, "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains("no-such-trace.csv"), "{err}");
    write("trace-here.csv", "service_time_us\n10\n20\n30\n");
    let here = with_trace("trace-here.toml", "trace-here.csv");
    let (code, out, err) = netsched(&["check", &here]);
    assert_eq!((code, out.trim_end().ends_with(": ok")), (0, true), "{err}");
}

/// Runs `netsched args` with stdout a pipe whose reader is already gone.
fn with_closed_stdout(args: &[&str]) -> (i32, String) {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let out = Command::new(bin())
        .args(args)
        .stdout(writer)
        .stderr(std::process::Stdio::piped())
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `netsched sim … | head -1` and `netsched check … | true`: a closed
/// stdout ends the program quietly (exit 0, nothing on stderr), and a run's
/// files are written all the same.
#[test]
fn a_closed_stdout_ends_quietly_and_files_are_still_written() {
    let p = write("pipe.toml", &base());
    let (code, err) = with_closed_stdout(&["check", &p]);
    assert_eq!((code, err.as_str()), (0, ""));
    let out = std::env::temp_dir().join(format!("netsched-cli-pipe-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let (code, err) = with_closed_stdout(&["sim", "-q", "-c", &p, "--out", out.to_str().unwrap()]);
    assert_eq!((code, err.as_str()), (0, ""));
    let runs = std::fs::read_to_string(out.join("runs.csv")).unwrap();
    assert_eq!(runs.lines().count(), 2, "header + 1 run");
    assert!(out.join("summary.json").exists() && out.join("pools.csv").exists());
    let _ = std::fs::remove_dir_all(&out);
}

/// `--format json|csv` prints the file a script wants (after writing it);
/// the default stays the table.
#[test]
fn sim_prints_json_or_csv_for_scripts() {
    let p = write("format.toml", &base());
    let out = std::env::temp_dir().join(format!("netsched-cli-format-{}", std::process::id()));
    let run = |fmt: &str| {
        netsched(&[
            "sim",
            "-q",
            "-c",
            &p,
            "--out",
            out.to_str().unwrap(),
            "--format",
            fmt,
        ])
    };
    let (code, json, err) = run("json");
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&json).expect("stdout is JSON");
    let file = std::fs::read_to_string(out.join("summary.json")).unwrap();
    assert_eq!(json.trim_end(), file.trim_end());
    // Which netsched wrote it: the crate's version and the commit built.
    assert_eq!(v["netsched"]["version"], env!("CARGO_PKG_VERSION"));
    let commit = v["netsched"]["commit"].as_str().unwrap();
    assert!(commit == "unknown" || commit.len() == 40, "{commit}");
    let (code, csv, err) = run("csv");
    assert_eq!(code, 0, "{err}");
    assert_eq!(csv, std::fs::read_to_string(out.join("runs.csv")).unwrap());
    assert!(csv.lines().next().unwrap().contains("p99"), "{csv}");
    let (code, _, err) = run("yaml");
    assert_eq!(code, 2, "{err}");
    let _ = std::fs::remove_dir_all(&out);
}

/// `bench sim` on a sliver of the datacenter: its summary says how many
/// cores the run kept busy on average (CPU over wall), never more than its
/// threads.
#[test]
fn bench_sim_reports_how_busy_its_threads_were() {
    let args = [
        "bench",
        "sim",
        "--tasks-per-worker",
        "0.01",
        "--threads",
        "2",
        "--floor-events",
        "0",
    ];
    let (code, out, err) = netsched(&args);
    assert_eq!(code, 0, "{err}");
    let line = out
        .lines()
        .find(|l| l.starts_with("bench sim: CPU"))
        .unwrap_or_else(|| panic!("no CPU line in:\n{out}"));
    let busy: f64 = line
        .split_once('(')
        .and_then(|(_, rest)| rest.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no cores-busy figure in {line:?}"));
    assert!(
        line.contains("cores busy on average"),
        "unlabelled figure in {line:?}"
    );
    // Two simulating threads, plus the progress thread's and the process's
    // own bits of CPU.
    assert!(busy > 0.0 && busy <= 2.5, "{busy} cores busy in {line:?}");
}
