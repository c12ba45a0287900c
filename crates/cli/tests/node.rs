//! `netsched switch | worker | client` as processes: config errors are one
//! line and a non-zero exit; daemons start, log and stop by themselves; a
//! client facing nothing still accounts for every task (as timed out).

mod common;

use std::net::UdpSocket;
use std::path::PathBuf;
use std::process::Command;

use common::{bin, netsched};
use std::time::{Duration, Instant};

use netsched_proto::{task_id, HorusMessage, HorusTask, Message};

/// This test binary's scratch directory.
fn dir() -> PathBuf {
    common::temp_dir("node-cli")
}

/// Writes `text` to `name` in this binary's directory; returns its path.
fn write(name: &str, text: &str) -> String {
    common::write_config(&dir(), name, text)
}

#[test]
fn bad_switch_config_is_one_line_and_exit_1() {
    let p = write(
        "bad.toml",
        "listen = \"127.0.0.1:0\"\n[[instance]]\npool = 1\nrole = \"leaf\"\ndownstream = []\n",
    );
    let (code, _, err) = netsched(&["switch", "-c", &p]);
    assert_eq!(code, 1);
    assert!(err.contains("no downstream"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}

#[test]
fn daemons_start_log_and_stop() {
    let s = write(
        "leaf.toml",
        "listen = \"127.0.0.1:0\"\n[[instance]]\npool = 1\nrole = \"leaf\"\ndownstream = [\"127.0.0.1:9\"]\n",
    );
    let (code, _, err) = netsched(&["switch", "-c", &s, "--duration-s", "0.2"]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains(" switch: started listen=127.0.0.1:"), "{err}");
    assert!(err.contains(" switch: stopped"), "{err}");
    let w = write(
        "worker.toml",
        "listen = [\"127.0.0.1:0\", \"127.0.0.1:0\"]\nheartbeat_ms = 0\n",
    );
    let (code, _, err) = netsched(&["worker", "-c", &w, "--duration-s", "0.2"]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains(" worker: started"), "{err}");
    assert!(err.contains(" worker: stopped"), "{err}");
    // Display, not Debug: no `Some(…)` around an address.
    assert!(!err.contains("Some("), "{err}");
}

/// Issue 20 item 2: a daemon stopped by SIGTERM says so, logs its `stopped`
/// line and exits 0 (switch and worker; the controller and the pull daemons
/// share the handler, crates/cli/src/node.rs `stop_on_signals`).
#[test]
fn sigterm_stops_a_daemon_with_a_shutdown_line_and_exit_0() {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;
    use std::time::{Duration, Instant};
    let leaf = write(
        "sigterm-leaf.toml",
        "listen = \"127.0.0.1:0\"\n[[instance]]\npool = 1\nrole = \"leaf\"\ndownstream = [\"127.0.0.1:9\"]\n",
    );
    let worker = write(
        "sigterm-worker.toml",
        "listen = [\"127.0.0.1:0\"]\nheartbeat_ms = 0\n",
    );
    for (daemon, cfg) in [("switch", leaf), ("worker", worker)] {
        let mut child = Command::new(bin())
            .args([daemon, "-c", &cfg])
            .env("RUST_LOG", "info")
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let stderr = child.stderr.take().unwrap();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        let started = rx
            .recv_timeout(Duration::from_secs(10))
            .expect("a start line");
        assert!(
            started.contains(&format!(" {daemon}: started")),
            "{started}"
        );
        let killed = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status()
            .unwrap();
        assert!(killed.success());
        let deadline = Instant::now() + Duration::from_secs(10);
        let status = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break s;
            }
            assert!(
                Instant::now() < deadline,
                "{daemon} still running 10 s after SIGTERM"
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        reader.join().unwrap();
        let rest: Vec<String> = rx.try_iter().collect();
        let rest = rest.join("\n");
        assert_eq!(status.code(), Some(0), "{daemon}: {rest}");
        assert!(
            rest.contains("shutting down on signal") && rest.contains("signal=SIGTERM"),
            "{daemon}: {rest}"
        );
        assert!(
            rest.contains(&format!(" {daemon}: stopped")),
            "{daemon}: {rest}"
        );
    }
}

#[test]
fn client_without_a_cluster_times_every_task_out() {
    // Nothing listens on the discard port: every task times out, none is
    // lost, and the run is a failure (exit 1, said on stderr) with its
    // report still printed and written.
    let c = write(
        "client.toml",
        "targets = [{ addr = \"127.0.0.1:9\" }]\npool = 1\napp_id = 3\nrate = 200\n\
         duration_ms = 200\nservice = { kind = \"fixed\", value_us = 10 }\ntimeout_ms = 100\n",
    );
    let json = write("out.json", "");
    let (code, out, err) = netsched(&["client", "-c", &c, "--json", &json]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("tasks completed"), "{err}");
    let field = |k: &str| common::summary_field(&out, k);
    assert!(field("submitted") > 10, "{out}");
    assert_eq!(field("submitted"), field("timed_out"), "{out}");
    assert_eq!(field("completed"), 0);
    let j = std::fs::read_to_string(json).unwrap();
    assert!(
        j.contains(&format!("\"timed_out\": {}", field("timed_out"))),
        "{j}"
    );
}

#[test]
fn in_process_cluster_completes_every_task() {
    let (code, out, err) = netsched(&[
        "cluster",
        "--rate",
        "500",
        "--duration-ms",
        "300",
        "--service",
        "{ kind = \"fixed\", value_us = 50 }",
    ]);
    assert_eq!(code, 0, "{err}");
    let line = out.lines().last().unwrap();
    let field = |k: &str| common::summary_field(line, k);
    assert!(field("submitted") > 50, "{out}");
    assert_eq!(field("completed"), field("submitted"), "{out}");
    let (code, _, err) = netsched(&["cluster", "--service", "{ kind = \"nope\" }"]);
    assert_eq!(code, 1);
    assert!(err.contains("--service"), "{err}");
}

/// Issue 16 item 1: an executor inside a long task never holds the worker
/// process up; SIGTERM ends it within a second.
#[test]
fn sigterm_ends_a_worker_inside_a_long_task_within_a_second() {
    let leaf = UdpSocket::bind("127.0.0.1:0").unwrap();
    let port = UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let w = write(
        "long-task-worker.toml",
        &format!(
            "listen = [\"127.0.0.1:{port}\"]\nleaf = \"{}\"\nheartbeat_ms = 0\n",
            leaf.local_addr().unwrap()
        ),
    );
    let mut worker = common::Quiet::spawn(&["worker", "-c", &w]);
    let child = &mut worker.0;
    // A 4 s task (under the 5 s cap), sent again until the worker has bound.
    let task = |seq: u32, service_time_ns: u64| {
        Message::Horus(HorusMessage::task_first(
            1,
            HorusTask {
                task_id: task_id::new(7, seq),
                is_last: true,
                service_time_ns,
                ..Default::default()
            },
        ))
        .to_vec()
        .unwrap()
    };
    for _ in 0..10 {
        leaf.send_to(&task(1, 4_000_000_000), ("127.0.0.1", port))
            .unwrap();
        std::thread::sleep(Duration::from_millis(50));
    }
    // The one executor is busy: a 1 µs task behind the long one gets no
    // answer (it would within milliseconds on an idle executor).
    leaf.send_to(&task(2, 1_000), ("127.0.0.1", port)).unwrap();
    leaf.set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    let mut buf = [0u8; 2048];
    assert!(leaf.recv_from(&mut buf).is_err(), "the executor is busy");
    assert_eq!(child.try_wait().unwrap(), None, "the worker runs its task");
    let sent = Instant::now();
    let kill = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(
            sent.elapsed() < Duration::from_secs(3),
            "the worker outlived SIGTERM by 3 s"
        );
        std::thread::sleep(Duration::from_millis(10));
    };
    assert!(
        sent.elapsed() < Duration::from_secs(1),
        "SIGTERM took {:?}",
        sent.elapsed()
    );
    assert!(status.success(), "{status}");
}
