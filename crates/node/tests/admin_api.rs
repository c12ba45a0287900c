//! The controller's admin API under attack and faults:
//! a slow connection beside authenticated requests, changes without a token,
//! the token checked before the body, body limits, and a change whose state
//! save fails.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use netsched_node::controller::{http, Controller, ControllerConfig};

const TOKEN: &str = "admin-api-token";
const KEY: &str = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";

fn port() -> SocketAddr {
    UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
}

struct Ctl {
    c: Option<Controller>,
    stop: Arc<AtomicBool>,
    admin: SocketAddr,
    dir: PathBuf,
}

impl Drop for Ctl {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(c) = self.c.take() {
            c.join();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A controller with one pool of one rack and a state file (no daemons:
/// the admin API does not need them).
fn controller(tag: &str) -> Ctl {
    let dir = std::env::temp_dir().join(format!("netsched-admin-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    // The controller binds port 0 and reports what it got: a port picked
    // here and released would race every other socket in the test run
    // (CI once lost one to another test's TCP connection). The pool's
    // addresses are never bound, only named.
    let (spine, leaf, w) = (port(), port(), port());
    let cfg = ControllerConfig::from_toml(&format!(
        "listen = \"127.0.0.1:0\"\nadmin = \"127.0.0.1:0\"\ntoken = \"{TOKEN}\"\nkey = \"{KEY}\"\n\
         state = \"{}\"\n[[pool]]\nid = 1\nspines = [\"{spine}\"]\n\
         [[pool.rack]]\nleaf = \"{leaf}\"\nworkers = [\"{w}\"]\n",
        dir.join("state.json").display()
    ))
    .unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let c = Controller::start(&cfg, stop.clone()).unwrap();
    let admin = c.admin_addr;
    Ctl {
        c: Some(c),
        stop,
        admin,
        dir,
    }
}

fn workers_in_rack(c: &Ctl) -> usize {
    let (code, body) = http(c.admin, "GET", "/v1/topology", Some(TOKEN), None).unwrap();
    assert_eq!(code, 200);
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    v["pools"][0]["racks"][0]["workers"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|w| w["removed"] == false)
        .count()
}

/// A client that sends its request head one byte every 0.8 s does not hold
/// up anyone else: three authenticated requests meanwhile are answered
/// promptly, and the server drops the slow one at its header deadline.
#[test]
fn a_slow_connection_does_not_block_authenticated_requests() {
    let c = controller("slow");
    let admin = c.admin;
    let slow = std::thread::spawn(move || {
        let mut s = TcpStream::connect(admin).unwrap();
        let t = Instant::now();
        let head = format!("GET /v1/topology HTTP/1.1\r\nAuthorization: Bearer {TOKEN}\r\n\r\n");
        for b in head.bytes() {
            if s.write_all(&[b]).is_err() || t.elapsed() > Duration::from_secs(8) {
                break;
            }
            std::thread::sleep(Duration::from_millis(800));
            // Closed by the server: a read returns at once.
            s.set_nonblocking(true).unwrap();
            let mut buf = [0u8; 512];
            // Ok(0) is EOF, Ok(n) an answer (408); WouldBlock: still open.
            let closed = s.read(&mut buf).is_ok();
            s.set_nonblocking(false).unwrap();
            if closed {
                break;
            }
        }
        t.elapsed()
    });
    std::thread::sleep(Duration::from_millis(300));
    for k in 0..3 {
        let t = Instant::now();
        let (code, _) = http(admin, "GET", "/v1/topology", Some(TOKEN), None).unwrap();
        assert_eq!(code, 200);
        assert!(
            t.elapsed() < Duration::from_millis(500),
            "request {k} took {:?} beside a slow connection",
            t.elapsed()
        );
        std::thread::sleep(Duration::from_millis(700));
    }
    let held = slow.join().unwrap();
    // Header deadline 2 s, plus one 0.8 s step to notice.
    assert!(
        held < Duration::from_secs(4),
        "slow connection kept {held:?}"
    );
}

/// `n` connections that hold the server's attention: half open and stay
/// silent, half trickle a request head one byte every 200 ms; kept open
/// until `done` (or the server closes them).
fn slow_connections(admin: SocketAddr, n: usize, done: Arc<AtomicBool>) -> Vec<TcpStream> {
    let conns: Vec<TcpStream> = (0..n)
        .map(|_| TcpStream::connect(admin).expect("connect"))
        .collect();
    let trickle: Vec<TcpStream> = conns
        .iter()
        .skip(n / 2)
        .map(|s| s.try_clone().unwrap())
        .collect();
    std::thread::spawn(move || {
        let head = format!("GET /v1/topology HTTP/1.1\r\nAuthorization: Bearer {TOKEN}\r\n\r\n");
        let mut streams = trickle;
        for b in head.bytes().cycle() {
            if done.load(Ordering::Relaxed) {
                break;
            }
            streams.retain_mut(|s| s.write_all(&[b]).is_ok());
            std::thread::sleep(Duration::from_millis(200));
        }
    });
    conns
}

/// An authenticated GET beside `n` slow or silent connections: the worst
/// of three answers' times (each must be 200).
fn get_beside_slow_connections(n: usize) -> Duration {
    let c = controller(&format!("slow{n}"));
    let done = Arc::new(AtomicBool::new(false));
    let conns = slow_connections(c.admin, n, done.clone());
    // Let the server accept them all first.
    std::thread::sleep(Duration::from_millis(300));
    let mut worst = Duration::ZERO;
    for _ in 0..3 {
        let t = Instant::now();
        let (code, _) = http(c.admin, "GET", "/v1/topology", Some(TOKEN), None).unwrap();
        assert_eq!(code, 200);
        worst = worst.max(t.elapsed());
        std::thread::sleep(Duration::from_millis(300));
    }
    done.store(true, Ordering::Relaxed);
    drop(conns);
    worst
}

/// Slow connections beyond what the server serves at once wait in the
/// backlog; authenticated requests behind them would wait for their header
/// deadline. 70 and 300 such connections leave a GET answered within 1 s
/// (a quiet run: a few ms).
#[test]
fn a_get_is_answered_beside_70_slow_connections() {
    let worst = get_beside_slow_connections(70);
    assert!(worst < Duration::from_secs(1), "GET took {worst:?}");
}

#[test]
fn a_get_is_answered_beside_300_slow_connections() {
    let worst = get_beside_slow_connections(300);
    assert!(worst < Duration::from_secs(1), "GET took {worst:?}");
}

/// POST and DELETE without (or with a wrong) token are refused and change
/// nothing; the token is checked before the body is read, so a request that
/// announces a body it never sends is still answered 401 at once.
#[test]
fn changes_without_a_token_are_refused_before_the_body() {
    let c = controller("auth");
    let body = r#"{"pool": 1, "rack": 0, "addr": "127.0.0.1:9"}"#;
    for token in [None, Some("admin-api-tokeN")] {
        let r = http(c.admin, "POST", "/v1/workers", token, Some(body)).unwrap();
        assert_eq!(r.0, 401, "{token:?}");
        let r = http(c.admin, "DELETE", "/v1/workers/1", token, None).unwrap();
        assert_eq!(r.0, 401, "{token:?}");
        let r = http(c.admin, "DELETE", "/v1/racks/2", token, None).unwrap();
        assert_eq!(r.0, 401, "{token:?}");
    }
    assert_eq!(workers_in_rack(&c), 1);

    let mut s = TcpStream::connect(c.admin).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
    let t = Instant::now();
    s.write_all(b"POST /v1/workers HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n")
        .unwrap();
    let mut resp = String::new();
    let _ = s.read_to_string(&mut resp);
    assert!(resp.starts_with("HTTP/1.1 401"), "{resp}");
    assert!(t.elapsed() < Duration::from_secs(1), "{:?}", t.elapsed());

    // Authenticated: a body over the limit is refused without being read.
    let big = "x".repeat(70_000);
    let r = http(c.admin, "POST", "/v1/workers", Some(TOKEN), Some(&big)).unwrap();
    assert_eq!(r.0, 413);
    // And the real thing works.
    let r = http(c.admin, "POST", "/v1/workers", Some(TOKEN), Some(body)).unwrap();
    assert_eq!(r.0, 201, "{}", r.1);
    assert_eq!(workers_in_rack(&c), 2);
}

/// A change whose state save fails is answered 500 and rolled back: the
/// topology and the state file stay as they were, so the API never
/// acknowledges what a restarted controller would not reload.
#[test]
fn a_change_whose_save_fails_is_rolled_back_with_500() {
    let c = controller("save");
    let state = c.dir.join("state.json");
    let saved = std::fs::read_to_string(&state).unwrap();
    // The save writes state.tmp first; a directory there makes it fail
    // (for root too, unlike permissions).
    let blocker = c.dir.join("state.tmp");
    std::fs::create_dir(&blocker).unwrap();
    let body = r#"{"pool": 1, "rack": 0, "addr": "127.0.0.1:9"}"#;
    let (code, text) = http(c.admin, "POST", "/v1/workers", Some(TOKEN), Some(body)).unwrap();
    assert_eq!(code, 500, "{text}");
    assert!(text.contains("rolled back"), "{text}");
    let (code, _) = http(c.admin, "DELETE", "/v1/workers/1", Some(TOKEN), None).unwrap();
    assert_eq!(code, 500);
    assert_eq!(workers_in_rack(&c), 1, "the failed change stayed in effect");
    assert_eq!(std::fs::read_to_string(&state).unwrap(), saved);
    // Once the save can succeed, the same change is made and saved.
    std::fs::remove_dir(&blocker).unwrap();
    let (code, text) = http(c.admin, "POST", "/v1/workers", Some(TOKEN), Some(body)).unwrap();
    assert_eq!(code, 201, "{text}");
    assert_eq!(workers_in_rack(&c), 2);
    assert!(std::fs::read_to_string(&state)
        .unwrap()
        .contains("127.0.0.1:9"));
}
