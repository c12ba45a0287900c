//! The pull runtime as processes: `netsched switch`, `worker` and `client`
//! with the pull configs of experiments/pull-runtime/ (ports moved so tests
//! do not collide with a hand-started cluster), and one-line config errors.

mod common;

use std::path::PathBuf;
use std::process::{Command, Stdio};

use common::bin;

/// This test binary's scratch directory.
fn dir() -> PathBuf {
    common::temp_dir("pull-cli")
}

/// Writes `text` to `name` in this binary's directory; returns its path.
fn write(name: &str, text: &str) -> String {
    common::write_config(&dir(), name, text)
}

/// The example config with its ports shifted by `offset`.
fn example(name: &str, offset: u16) -> String {
    let root = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../experiments/pull-runtime/"
    );
    let text = std::fs::read_to_string(format!("{root}{name}")).unwrap();
    let mut out = text.clone();
    for port in 9300..9400u16 {
        out = out.replace(
            &format!("127.0.0.1:{port}\""),
            &format!("127.0.0.1:{}\"", port + offset),
        );
    }
    out
}

#[test]
fn example_configs_run_as_processes_and_every_task_completes() {
    let off = 20_000 + (std::process::id() % 1000) as u16 * 20;
    let s = write("switch.toml", &example("switch.toml", off));
    let w = write("worker.toml", &example("worker.toml", off));
    let c = write(
        "client.toml",
        &example("client.toml", off)
            .replace("rate = 10000", "rate = 2000")
            .replace("duration_ms = 3000", "duration_ms = 500"),
    );
    let mut switch = Command::new(bin())
        .args(["switch", "-c", &s, "--duration-s", "8"])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut worker = Command::new(bin())
        .args(["worker", "-c", &w, "--duration-s", "8"])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(300));
    let out = Command::new(bin())
        .args(["client", "-c", &c])
        .output()
        .unwrap();
    let _ = switch.kill();
    let _ = worker.kill();
    let _ = switch.wait();
    let _ = worker.wait();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let field = |k: &str| common::summary_field(&text, k);
    assert!(field("submitted") > 500, "{text}");
    assert_eq!(field("completed"), field("submitted"), "{text}");
    assert_eq!(field("timed_out"), 0, "{text}");
}

#[test]
fn bad_pull_configs_are_one_line_naming_the_field() {
    let cases = [
        (
            "switch",
            "listen = \"127.0.0.1:0\"\npolicy = \"racksched-nodes\"\nexecutors = [\"127.0.0.1:9\"]\n",
            "policy: racksched-nodes runs a push scheduler",
        ),
        (
            // The pull side's `racksched` and `r2p2` were other planes than
            // the push policies of those names: the old names name the new.
            "switch",
            "listen = \"127.0.0.1:0\"\npolicy = \"r2p2\"\nexecutors = [\"127.0.0.1:9\"]\n",
            "policy (line 2): pull policy `r2p2` is renamed: use `r2p2-recirc`",
        ),
        (
            "switch",
            "listen = \"127.0.0.1:0\"\npolicy = \"draconis\"\nexecutors = []\n",
            "executors:",
        ),
        (
            "switch",
            "listen = \"127.0.0.1:0\"\npolicy = \"draconis\"\nexecutors = [\"127.0.0.1:9\"]\n[draconis]\ncapacity = 1000\n",
            "draconis.capacity: must be a power of two",
        ),
        (
            // Passed before the limits were shared, then panicked in the
            // data plane's constructor.
            "switch",
            "listen = \"127.0.0.1:0\"\npolicy = \"draconis\"\nexecutors = [\"127.0.0.1:9\"]\n[draconis]\ncapacity = 2147483648\n",
            "draconis.capacity: must be a power of two <= 1073741824, got 2147483648",
        ),
        (
            "switch",
            "listen = \"127.0.0.1:0\"\npolicy = \"r2p2-recirc\"\nexecutors = [\"127.0.0.1:9\"]\n[r2p2]\njbsq_bound = 0\n",
            "r2p2.jbsq_bound: must be >= 1, got 0",
        ),
        (
            // `k` meant two things; the old key names its successor.
            "switch",
            "listen = \"127.0.0.1:0\"\npolicy = \"r2p2-recirc\"\nexecutors = [\"127.0.0.1:9\"]\n[r2p2]\nk = 3\n",
            "r2p2.k (line 5): `k` is renamed: use `jbsq_bound` (R2P2's JBSQ bound)",
        ),
        (
            "switch",
            "listen = \"127.0.0.1:0\"\npolicy = \"fifo\"\nexecutors = [\"127.0.0.1:9\"]\n",
            "unknown policy `fifo`",
        ),
        (
            "client",
            "scheduler = \"127.0.0.1:9\"\nrate = -5\nduration_ms = 10\nservice = { kind = \"fixed\", value_us = 10 }\n",
            "rate: must be positive",
        ),
        (
            "worker",
            "scheduler = \"127.0.0.1:9\"\npolicy = \"draconis\"\nlisten = []\n",
            "listen: a worker needs",
        ),
    ];
    for (i, (cmd, toml, want)) in cases.iter().enumerate() {
        let p = write(&format!("bad{i}.toml"), toml);
        let out = Command::new(bin()).args([cmd, "-c", &p]).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{cmd} {toml}: {err}");
        assert!(err.contains(want), "{cmd}: want `{want}` in {err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
    }
}
