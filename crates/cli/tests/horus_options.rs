//! Horus's configuration in the runtime: `netsched switch` takes the same
//! `preset` and options as the simulator (`[instance.horus]`, read by
//! `netsched_config::horus`), and a Horus leaf process behaves by them. A
//! leaf of four workers with idle threshold T announces idleRemove to its
//! spine when its idle count drops to T (Horus §3.4, Alg. 1; horus-sim's
//! T = 4 in preset `horus-sim-fixed`, overridden here to 2), so after the
//! second task, where the paper's T = 0 waits for the fourth.

mod common;

use std::io::{BufRead, BufReader};
use std::net::{SocketAddr, UdpSocket};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::{assert_one_line_error, bin};
use netsched_proto::{task_id, HorusBody, HorusMessage, HorusTask, Message};

const POOL: u16 = 1;
const WORKERS: usize = 4;

fn write(name: &str, text: &str) -> String {
    common::write_config(&common::temp_dir("horus-options"), name, text)
}

fn local() -> UdpSocket {
    UdpSocket::bind("127.0.0.1:0").unwrap()
}

fn quoted(socks: &[UdpSocket]) -> String {
    let a: Vec<String> = socks
        .iter()
        .map(|s| format!("\"{}\"", s.local_addr().unwrap()))
        .collect();
    a.join(", ")
}

/// A leaf daemon process; killed when dropped.
struct Leaf(Child);

impl Drop for Leaf {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `netsched switch -c cfg` and returns it with the address it bound
/// (from its `started listen=` line).
fn start_leaf(cfg: &str) -> (Leaf, SocketAddr) {
    let mut child = Command::new(bin())
        .args(["switch", "-c", cfg])
        .env("RUST_LOG", "info")
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let leaf = Leaf(child);
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        let Ok(line) = rx.recv_timeout(Duration::from_secs(1)) else {
            continue;
        };
        if let Some(rest) = line.split("listen=").nth(1) {
            let addr = rest.split_whitespace().next().unwrap();
            return (leaf, addr.parse().unwrap());
        }
    }
    panic!("the leaf printed no start line");
}

fn task(seq: u32) -> Vec<u8> {
    Message::Horus(HorusMessage::task_first(
        POOL,
        HorusTask {
            task_id: task_id::new(7, seq),
            is_last: true,
            service_time_ns: 1000,
            ..Default::default()
        },
    ))
    .to_vec()
    .unwrap()
}

/// Waits until one of `workers` receives a task.
fn delivered(workers: &[UdpSocket]) {
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut buf = [0u8; 2048];
    while Instant::now() < deadline {
        for w in workers {
            if let Ok(n) = w.recv(&mut buf) {
                if let Ok(Message::Horus(m)) = Message::decode(&buf[..n]) {
                    if matches!(m.body, HorusBody::TaskFirst(_)) {
                        return;
                    }
                }
            }
        }
    }
    panic!("no worker received the task");
}

/// Whether the spine socket receives an idleRemove within `wait`.
fn idle_remove_within(spine: &UdpSocket, wait: Duration) -> bool {
    let deadline = Instant::now() + wait;
    let mut buf = [0u8; 2048];
    while Instant::now() < deadline {
        if let Ok(n) = spine.recv(&mut buf) {
            if let Ok(Message::Horus(m)) = Message::decode(&buf[..n]) {
                if matches!(m.body, HorusBody::IdleRemove) {
                    return true;
                }
            }
        }
    }
    false
}

/// Sends tasks one by one to a leaf configured with `horus` and returns the
/// number of tasks after which it sent idleRemove. Before that task no
/// remove may arrive (checked for a moment after each delivery); at it the
/// remove must arrive (waited for generously: a busy machine is slow, not
/// wrong).
fn tasks_until_idle_remove(tag: &str, horus: &str, expect: usize) {
    let spine = local();
    let client = local();
    let workers: Vec<UdpSocket> = (0..WORKERS).map(|_| local()).collect();
    for s in workers.iter().chain([&spine]) {
        s.set_read_timeout(Some(Duration::from_millis(20))).unwrap();
    }
    let cfg = write(
        &format!("{tag}.toml"),
        &format!(
            "listen = \"127.0.0.1:0\"\n[[instance]]\npool = {POOL}\nrole = \"leaf\"\n\
             policy = \"horus\"\ndownstream = [{}]\nupstream = [\"{}\"]\nclients = [\"{}\"]\n\
             [instance.horus]\n{horus}\n",
            quoted(&workers),
            spine.local_addr().unwrap(),
            client.local_addr().unwrap(),
        ),
    );
    let (_leaf, addr) = start_leaf(&cfg);
    for k in 1..=expect {
        client.send_to(&task(k as u32), addr).unwrap();
        delivered(&workers);
        if k < expect {
            assert!(
                !idle_remove_within(&spine, Duration::from_millis(300)),
                "{tag}: idleRemove after task {k}, expected after task {expect}"
            );
        } else {
            assert!(
                idle_remove_within(&spine, Duration::from_secs(20)),
                "{tag}: no idleRemove after task {k}"
            );
        }
    }
}

#[test]
fn leaf_idle_threshold_from_a_preset_and_an_option_is_honoured() {
    // horus-sim's choices with T overridden to 2: 4 - 2 tasks busy the rack.
    tasks_until_idle_remove(
        "sim-fixed-t2",
        "preset = \"horus-sim-fixed\"\nleaf_idle_threshold = 2",
        WORKERS - 2,
    );
    // The paper's T = 0: the rack is busy when every worker is.
    tasks_until_idle_remove("paper", "preset = \"paper\"", WORKERS);
}

#[test]
fn options_a_switch_cannot_run_are_refused_by_name() {
    let leaf = |policy: &str, horus: &str| {
        write(
            &format!("refuse-{}.toml", horus.replace(['"', ' ', '='], "")),
            &format!(
                "listen = \"127.0.0.1:0\"\n[[instance]]\npool = 1\nrole = \"leaf\"\n\
                 policy = \"{policy}\"\ndownstream = [\"127.0.0.1:9\"]\n\
                 upstream = [\"127.0.0.1:7\", \"127.0.0.1:8\"]\n[instance.horus]\n{horus}\n"
            ),
        )
    };
    let p = leaf("horus-tokens", "leaf_idle_threshold = 3");
    assert_one_line_error("tokens", &["switch", "-c", &p], "horus.leaf_idle_threshold");
    let p = leaf("horus", "leaf_idle_scope = \"pool\"");
    assert_one_line_error("pool scope", &["switch", "-c", &p], "horus.leaf_idle_scope");
    // horus-sim-fixed links idle state to a random spine of the pool: with
    // two upstream spines the runtime cannot.
    let p = leaf("horus", "preset = \"horus-sim-fixed\"");
    assert_one_line_error("two spines", &["switch", "-c", &p], "horus.idle_link");
    let p = leaf("horus", "remove_lock = \"maybe\"");
    assert_one_line_error("bad value", &["switch", "-c", &p], "remove_lock");
}
