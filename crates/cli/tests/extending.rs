//! docs/extending.md's worked example, `pow3-idle`
//! (crates/core/src/registry/pow3_idle.rs): added as one file and one line
//! of the registry, it runs in `netsched sim` and in `netsched switch`
//! over UDP with nothing else changed, and the source tree says so.

mod common;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStderr, Command, Stdio};

use common::{bin, netsched, quoted};

const POLICY: &str = "pow3-idle";

fn dir() -> PathBuf {
    common::temp_dir("extending")
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The column `name` of every row of a CSV whose first column is `policy`.
fn column(csv: &str, policy: &str, name: &str) -> Vec<f64> {
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let i = header.iter().position(|h| *h == name).unwrap();
    lines
        .map(|l| l.split(',').collect::<Vec<_>>())
        .filter(|r| r[0] == policy)
        .map(|r| r[i].parse().unwrap())
        .collect()
}

#[test]
fn the_example_runs_in_netsched_sim_and_its_choices_are_counted() {
    let out = dir().join("sim");
    let cfg = repo().join("experiments/example-pow3-idle.toml");
    let (code, stdout, err) = netsched(&[
        "sim",
        "-c",
        cfg.to_str().unwrap(),
        "--tasks-per-worker",
        "30",
        "-q",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(stdout.contains(POLICY), "{stdout}");
    let pools = std::fs::read_to_string(out.join("pools.csv")).unwrap();
    // Both loads ran; every task completed, none was aborted.
    let submitted = column(&pools, POLICY, "submitted");
    assert_eq!(submitted.len(), 2, "{pools}");
    assert_eq!(column(&pools, POLICY, "completed"), submitted);
    assert!(column(&pools, POLICY, "aborted").iter().all(|&a| a == 0.0));
    // The leaves decided every measured task once (RS-LB's spine spread
    // it first, an `other` decision): from the idle stack, and by sampling
    // when no worker of the rack was idle, which at load 0.9 happens.
    let idle = column(&pools, POLICY, "decision_leaf_idle");
    let sampled = column(&pools, POLICY, "decision_leaf_sampled");
    let spread = column(&pools, POLICY, "decision_spine_other");
    for i in 0..2 {
        assert!(idle[i] > 0.0, "{pools}");
        assert_eq!(idle[i] + sampled[i], submitted[i], "{pools}");
        assert_eq!(spread[i], submitted[i], "{pools}");
    }
    assert!(
        sampled[1] > sampled[0],
        "more tasks find no idle worker at load 0.9 than at 0.5: {pools}"
    );
}

/// A `netsched` daemon process, killed when dropped.
struct Daemon(Child, BufReader<ChildStderr>);

impl Daemon {
    fn start(args: &[&str]) -> Daemon {
        let mut child = Command::new(bin())
            .args(args)
            .env("RUST_LOG", "info")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let err = BufReader::new(child.stderr.take().unwrap());
        Daemon(child, err)
    }

    /// The daemon's `started` log line.
    fn started(&mut self) -> String {
        let mut line = String::new();
        loop {
            line.clear();
            assert!(self.1.read_line(&mut line).unwrap() > 0, "daemon exited");
            if line.contains("started") {
                return line;
            }
        }
    }
}

/// The value of `key=` on a log line.
fn field(line: &str, key: &str) -> String {
    line.split_whitespace()
        .find_map(|f| f.strip_prefix(&format!("{key}=")))
        .unwrap_or_else(|| panic!("no {key}= in {line}"))
        .to_string()
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `netsched worker` (three executors), a `netsched switch` leaf running
/// `pow3-idle` over them, and `netsched client` submitting through it, all
/// over loopback UDP.
#[test]
fn the_example_runs_in_netsched_switch_over_udp() {
    let d = dir();
    let worker_cfg = common::write_config(
        &d,
        "worker.toml",
        "listen = [\"127.0.0.1:0\", \"127.0.0.1:0\", \"127.0.0.1:0\"]\nheartbeat_ms = 0\n",
    );
    let mut worker = Daemon::start(&["worker", "-c", &worker_cfg]);
    let executors: Vec<String> = field(&worker.started(), "executors")
        .split(',')
        .map(str::to_string)
        .collect();
    assert_eq!(executors.len(), 3);
    let leaf_cfg = common::write_config(
        &d,
        "leaf.toml",
        format!(
            "listen = \"127.0.0.1:0\"\nmetrics = \"127.0.0.1:0\"\n[[instance]]\npool = 1\n\
             role = \"leaf\"\npolicy = \"{POLICY}\"\ndownstream = [{}]\n",
            quoted(&executors)
        ),
    );
    let mut leaf = Daemon::start(&["switch", "-c", &leaf_cfg]);
    let started = leaf.started();
    let listen = field(&started, "listen");
    let metrics: std::net::SocketAddr = field(&started, "metrics").parse().unwrap();
    // Load about 0.6 on three executors: queues form now and then, so
    // both of the policy's choices are taken.
    let client_cfg = common::write_config(
        &d,
        "client.toml",
        format!(
            "targets = [{{ addr = \"{listen}\" }}]\npool = 1\napp_id = 5\nrate = 9000\n\
             duration_ms = 400\nservice = {{ kind = \"fixed\", value_us = 200 }}\n\
             timeout_ms = 2000\n"
        ),
    );
    let json = d.join("client.json");
    let (code, _, err) = netsched(&[
        "client",
        "-c",
        &client_cfg,
        "--json",
        json.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let submitted = common::n(&report, "submitted");
    assert!(submitted > 1000, "{report}");
    assert_eq!(common::n(&report, "completed"), submitted, "{report}");
    // The leaf's metrics show the policy's two choices, one per task.
    let (status, body) =
        netsched_node::controller::http(metrics, "GET", "/metrics", None, None).unwrap();
    assert_eq!(status, 200);
    let decisions = |kind: &str| -> u64 {
        body.lines()
            .filter(|l| {
                l.starts_with("netsched_decisions_total{")
                    && l.contains(&format!("decision=\"{kind}\""))
            })
            .map(|l| l.rsplit(' ').next().unwrap().parse::<u64>().unwrap())
            .sum()
    };
    let (idle, sampled, other) = (decisions("idle"), decisions("sampled"), decisions("other"));
    assert_eq!(idle + sampled, submitted, "{body}");
    assert_eq!(other, 0, "{body}");
    assert!(idle > 0 && sampled > 0, "idle {idle}, sampled {sampled}");
    drop(leaf);
    drop(worker);
}

/// Every file under `dir` ending in one of `exts`, skipping build output.
fn sources(dir: &Path, exts: &[&str], out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy();
        if p.is_dir() {
            if !matches!(&*name, "target" | "tests" | "__pycache__" | ".venv") {
                sources(&p, exts, out);
            }
        } else if exts.iter().any(|x| name.ends_with(x)) {
            out.push(p);
        }
    }
}

/// The example's promise: its data plane is one file, and the registry's
/// one line is the only other place in any crate's or the Python
/// package's sources that names it (its module, its type or its policy).
/// A driver that needed a match arm, a config schema or a list of its own
/// for it would name it and fail this.
#[test]
fn the_example_is_one_file_and_one_registry_line() {
    let root = repo();
    let mut files = Vec::new();
    sources(&root.join("crates"), &[".rs", ".toml"], &mut files);
    sources(&root.join("python/netsched"), &[".py", ".pyi"], &mut files);
    let names = ["pow3_idle", "Pow3Idle", POLICY];
    let mut naming: Vec<(String, Vec<String>)> = files
        .iter()
        .filter_map(|f| {
            let text = std::fs::read_to_string(f).ok()?;
            let lines: Vec<String> = text
                .lines()
                .filter(|l| names.iter().any(|n| l.contains(n)))
                .map(|l| l.trim().to_string())
                .collect();
            let rel = f
                .strip_prefix(&root)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            (!lines.is_empty()).then_some((rel, lines))
        })
        .collect();
    naming.sort();
    let (files, lines): (Vec<_>, Vec<_>) = naming.into_iter().unzip();
    assert_eq!(
        files,
        [
            "crates/core/src/registry.rs",
            "crates/core/src/registry/pow3_idle.rs"
        ],
        "{lines:?}"
    );
    assert_eq!(lines[0], ["pow3_idle::Pow3Idle = \"pow3-idle\","]);
}

/// The registry's line is also what `--help` lists and what a typo is
/// matched against.
#[test]
fn the_example_is_in_help_and_in_suggestions() {
    let (code, out, err) = netsched(&["sim", "--help"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.lines()
            .any(|l| l.trim_start().starts_with("Policies: ") && l.contains(POLICY)),
        "{out}"
    );
    let cfg = repo().join("experiments/example-pow3-idle.toml");
    let (code, _, err) = netsched(&[
        "sim",
        "-q",
        "-c",
        cfg.to_str().unwrap(),
        "--policy",
        "pow3-idel",
    ]);
    assert_ne!(code, 0);
    assert!(err.contains("did you mean `pow3-idle`?"), "{err}");
    let (code, _, err) = netsched(&["check", cfg.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
}
