//! Long tasks and hostile clients against daemons run as processes on
//! loopback (docs/runtime.md, threat model "Long tasks and hostile
//! clients"): a task of any length up to the cap keeps its worker alive; a
//! stranger's tasks (another loopback address, 127.0.0.2) are counted drops
//! at a spine and a leaf that name their client networks; a stranger's
//! endless pull job is refused by the executor's cap, and a pull worker
//! stops within 2 s of SIGTERM in the middle of a task.
//!
//! The clusters are small (one or two single-executor workers) and every
//! run is bounded (a few seconds); margins are generous so a loaded 2-core
//! machine passes them.

mod common;

use std::net::{SocketAddr, UdpSocket};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use common::{bin, horus_task as task, tcp_port, udp_port as port, Quiet};
use netsched_proto::{
    task_id, DraconisMessage, HorusBody, HorusMessage, Message, ReplyStatus, TaskVec, WireTask,
};

fn dir() -> std::path::PathBuf {
    common::temp_dir("hostile")
}

fn write(name: &str, text: &str) -> String {
    common::write_config(&dir(), name, text)
}

/// Daemon processes killed when the test ends, however it ends.
struct Procs(Vec<(String, Quiet)>);

impl Procs {
    fn start(&mut self, name: &str, args: &[&str]) {
        self.0.push((name.into(), Quiet::spawn(args)));
    }

    fn child(&mut self, name: &str) -> &mut Child {
        &mut self.0.iter_mut().find(|(n, _)| n == name).unwrap().1 .0
    }
}

/// The value of the metric line starting with `series` (name and labels)
/// on `port`'s /metrics, 0 if absent.
fn metric(port: u16, series: &str) -> u64 {
    common::loopback_metric(port, series, "")
}

/// Replies reaching `s` within `limit` (or until `want` arrived): (ok,
/// failed) counts.
fn replies(s: &UdpSocket, want: usize, limit: Duration) -> (usize, usize) {
    let end = Instant::now() + limit;
    let (mut ok, mut failed) = (0, 0);
    let mut buf = [0u8; 2048];
    while ok + failed < want && Instant::now() < end {
        s.set_read_timeout(Some(Duration::from_millis(100)))
            .unwrap();
        if let Ok((n, _)) = s.recv_from(&mut buf) {
            if let Ok(Message::Horus(HorusMessage {
                body: HorusBody::Reply(r),
                ..
            })) = Message::decode(&buf[..n])
            {
                match r.status {
                    ReplyStatus::Ok => ok += 1,
                    _ => failed += 1,
                }
            }
        }
    }
    (ok, failed)
}

/// Waits until the switch daemon answers a task on `addr` (every daemon
/// started), at most 10 s.
fn wait_up(addr: SocketAddr) {
    let s = UdpSocket::bind("127.0.0.1:0").unwrap();
    let end = Instant::now() + Duration::from_secs(10);
    for seq in 0.. {
        s.send_to(&task(999, seq, 1_000), addr).unwrap();
        if replies(&s, 1, Duration::from_millis(200)).0 == 1 {
            return;
        }
        assert!(Instant::now() < end, "cluster at {addr} never answered");
    }
}

/// A leaf (clients on 127.0.0.1, heartbeat timeout 250 ms) over one
/// single-executor worker beating every 50 ms; returns (leaf address, leaf
/// metrics port).
fn leaf_and_worker(p: &mut Procs, tag: &str) -> (SocketAddr, u16) {
    let (leaf, worker, lm) = (port(), port(), tcp_port());
    let l = write(
        &format!("{tag}-leaf.toml"),
        &format!(
            "listen = \"127.0.0.1:{leaf}\"\nmetrics = \"127.0.0.1:{lm}\"\n\
             [[instance]]\npool = 1\nrole = \"leaf\"\ndownstream = [\"127.0.0.1:{worker}\"]\n\
             heartbeat_timeout_ms = 250\nclients = [\"127.0.0.1/32\"]\n"
        ),
    );
    let w = write(
        &format!("{tag}-worker.toml"),
        &format!(
            "listen = [\"127.0.0.1:{worker}\"]\nleaf = \"127.0.0.1:{leaf}\"\npool = 1\n\
             heartbeat_ms = 50\n"
        ),
    );
    p.start("leaf", &["switch", "-c", &l, "--duration-s", "60"]);
    p.start("worker", &["worker", "-c", &w, "--duration-s", "60"]);
    let addr = SocketAddr::from(([127, 0, 0, 1], leaf));
    wait_up(addr);
    (addr, lm)
}

/// A 2 s task (8× the leaf's heartbeat timeout) on a single-executor
/// worker: the worker stays alive at the leaf, and the short tasks sent
/// meanwhile wait behind it and complete (before, the worker fell silent,
/// was removed, and they failed `no_nodes`).
#[test]
fn a_long_task_does_not_get_its_worker_declared_failed() {
    let mut p = Procs(Vec::new());
    let (leaf, lm) = leaf_and_worker(&mut p, "long");
    let c = UdpSocket::bind("127.0.0.1:0").unwrap();
    c.send_to(&task(1, 0, 2_000_000_000), leaf).unwrap();
    for seq in 1..=20 {
        std::thread::sleep(Duration::from_millis(50));
        c.send_to(&task(1, seq, 1_000_000), leaf).unwrap();
    }
    let (ok, failed) = replies(&c, 21, Duration::from_secs(15));
    assert_eq!((ok, failed), (21, 0), "replies (ok, failed)");
    assert_eq!(
        metric(lm, "netsched_node_failures_total{kind=\"worker\"}"),
        0
    );
}

/// A stranger (127.0.0.2) sends 8 tasks of 4.9 s to a spine and 8 to a
/// leaf under it, both naming 127.0.0.1 as their client network: every
/// one is a counted `unregistered_source` drop, and a legitimate client
/// at a steady rate loses nothing (before, open instances ran them and
/// the workers they occupied were declared failed).
#[test]
fn a_strangers_long_tasks_are_dropped_at_ingress() {
    let mut p = Procs(Vec::new());
    let (spine, leaf, w0, w1, sm, lm) = (port(), port(), port(), port(), tcp_port(), tcp_port());
    let s = write(
        "ingress-spine.toml",
        &format!(
            "listen = \"127.0.0.1:{spine}\"\nmetrics = \"127.0.0.1:{sm}\"\n\
             [[instance]]\npool = 1\nrole = \"spine\"\ndownstream = [\"127.0.0.1:{leaf}\"]\n\
             rack_workers = [2]\nclients = [\"127.0.0.1/32\"]\n"
        ),
    );
    let l = write(
        "ingress-leaf.toml",
        &format!(
            "listen = \"127.0.0.1:{leaf}\"\nmetrics = \"127.0.0.1:{lm}\"\n\
             [[instance]]\npool = 1\nrole = \"leaf\"\nupstream = [\"127.0.0.1:{spine}\"]\n\
             downstream = [\"127.0.0.1:{w0}\", \"127.0.0.1:{w1}\"]\n\
             heartbeat_timeout_ms = 250\nclients = []\n"
        ),
    );
    let w = write(
        "ingress-worker.toml",
        &format!(
            "listen = [\"127.0.0.1:{w0}\", \"127.0.0.1:{w1}\"]\nleaf = \"127.0.0.1:{leaf}\"\n\
             pool = 1\nheartbeat_ms = 50\n"
        ),
    );
    p.start("spine", &["switch", "-c", &s, "--duration-s", "60"]);
    p.start("leaf", &["switch", "-c", &l, "--duration-s", "60"]);
    p.start("worker", &["worker", "-c", &w, "--duration-s", "60"]);
    let spine_addr = SocketAddr::from(([127, 0, 0, 1], spine));
    wait_up(spine_addr);
    let stranger = UdpSocket::bind("127.0.0.2:0").unwrap();
    for seq in 0..8 {
        stranger
            .send_to(&task(7, seq, 4_900_000_000), spine_addr)
            .unwrap();
        stranger
            .send_to(&task(7, 100 + seq, 4_900_000_000), ("127.0.0.1", leaf))
            .unwrap();
    }
    let c = write(
        "ingress-client.toml",
        &format!(
            "targets = [{{ addr = \"127.0.0.1:{spine}\" }}]\npool = 1\napp_id = 1\nrate = 500\n\
             duration_ms = 3000\ntimeout_ms = 2000\nretries = 2\nseed = 3\n\
             service = {{ kind = \"fixed\", value_us = 100 }}\n"
        ),
    );
    client_completes_99_percent(&c, 1000);
    let drops = "netsched_drops_total{by=\"runtime\",reason=\"unregistered_source\"}";
    assert_eq!(metric(sm, drops), 8, "spine");
    assert_eq!(metric(lm, drops), 8, "leaf");
}

/// Runs `netsched client -c config`: it must submit more than `min`
/// tasks and complete at least 99 % of them.
fn client_completes_99_percent(config: &str, min: u64) {
    let out = Command::new(bin())
        .args(["client", "-c", config])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let field = |k: &str| common::summary_field(&text, k);
    assert!(field("submitted") > min, "{text}");
    assert!(
        field("completed") * 100 >= field("submitted") * 99,
        "fewer than 99 % completed: {text}"
    );
}

/// One pull job.
fn job(id: u64, fn_par: u64) -> Vec<u8> {
    let mut tasks = TaskVec::new();
    tasks.push(WireTask {
        id,
        fn_id: 0,
        fn_par,
        ..Default::default()
    });
    Message::Draconis(DraconisMessage::JobSubmission { job: id, tasks })
        .to_vec()
        .unwrap()
}

/// A Draconis scheduler over one pull executor; returns the scheduler's
/// address.
fn pull_cluster(p: &mut Procs, tag: &str) -> SocketAddr {
    let (sched, exec) = (port(), port());
    let s = write(
        &format!("{tag}-switch.toml"),
        &format!(
            "listen = \"127.0.0.1:{sched}\"\npolicy = \"draconis\"\n\
             executors = [\"127.0.0.1:{exec}\"]\n"
        ),
    );
    let w = write(
        &format!("{tag}-worker.toml"),
        &format!(
            "scheduler = \"127.0.0.1:{sched}\"\npolicy = \"draconis\"\n\
             listen = [\"127.0.0.1:{exec}\"]\n"
        ),
    );
    p.start("switch", &["switch", "-c", &s, "--duration-s", "60"]);
    p.start("worker", &["worker", "-c", &w, "--duration-s", "60"]);
    std::thread::sleep(Duration::from_millis(500));
    SocketAddr::from(([127, 0, 0, 1], sched))
}

/// A completion for `id` reaching `s` within `limit`: its status.
fn completion(s: &UdpSocket, id: u64, limit: Duration) -> Option<netsched_proto::CompletionStatus> {
    let end = Instant::now() + limit;
    let mut buf = [0u8; 2048];
    while Instant::now() < end {
        s.set_read_timeout(Some(Duration::from_millis(100)))
            .unwrap();
        if let Ok((n, _)) = s.recv_from(&mut buf) {
            if let Ok(Message::Draconis(DraconisMessage::Completion {
                task_id, status, ..
            })) = Message::decode(&buf[..n])
            {
                if task_id == id {
                    return Some(status);
                }
            }
        }
    }
    None
}

/// A stranger's job asking for 31 years on the only executor is reported
/// failed at once (the push worker's `max_service_ms`), and the jobs after
/// it complete (before: 0 % of them).
#[test]
fn a_strangers_endless_pull_job_is_refused_by_the_cap() {
    let mut p = Procs(Vec::new());
    let sched = pull_cluster(&mut p, "cap");
    let stranger = UdpSocket::bind("127.0.0.2:0").unwrap();
    let years31 = 31 * 365 * 86_400 * 1_000_000_000u64;
    stranger
        .send_to(&job(task_id::new(9, 0), years31), sched)
        .unwrap();
    assert_eq!(
        completion(&stranger, task_id::new(9, 0), Duration::from_secs(5)),
        Some(netsched_proto::CompletionStatus::Failed)
    );
    let c = write(
        "cap-client.toml",
        &format!(
            "scheduler = \"127.0.0.1:{}\"\nrate = 1000\nduration_ms = 1000\njob_tasks = 1\n\
             service = {{ kind = \"fixed\", value_us = 100 }}\ntimeout_ms = 500\nmax_attempts = 3\n",
            sched.port()
        ),
    );
    client_completes_99_percent(&c, 500);
}

/// SIGTERM while the only executor runs a 4 s task: the worker exits
/// within 2 s (before: when the task ended).
#[test]
fn a_pull_worker_stops_within_2_s_of_sigterm_mid_task() {
    let mut p = Procs(Vec::new());
    let sched = pull_cluster(&mut p, "term");
    let c = UdpSocket::bind("127.0.0.1:0").unwrap();
    c.send_to(&job(task_id::new(3, 0), 4_000_000_000), sched)
        .unwrap();
    std::thread::sleep(Duration::from_millis(500));
    let worker = p.child("worker");
    assert!(worker.try_wait().unwrap().is_none(), "worker already gone");
    let pid = worker.id().to_string();
    let t = Instant::now();
    let sent = Command::new("kill").args(["-TERM", &pid]).status().unwrap();
    assert!(sent.success());
    while worker.try_wait().unwrap().is_none() {
        assert!(
            t.elapsed() < Duration::from_secs(2),
            "worker still running {:?} after SIGTERM",
            t.elapsed()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}
