//! Tasks forged in the leaf's name (docs/threat-model.md, "Forged tasks"):
//! a loopback cluster of processes (spine, leaf, one worker process with
//! four single-executor nodes, every process given the cluster key, so
//! sealing is on as `netsched cluster up` runs it), a client at a steady
//! rate through the spine, and an attacker sending 8 tasks of 4.9 s
//! straight to the workers from the leaf's own IP address and port (a raw
//! socket writes the IPv4 and UDP headers). The workers drop all 8 as
//! unsealed and count them; at least 99 % of the client's tasks complete.
//! Without the seal (`notice_mac = "off"` everywhere) the same 8 tasks
//! held all four executors for 9.8 s and the client completed none of its
//! 1,487 tasks (all timed out after 2 retries).
//!
//! Raw sockets need CAP_NET_RAW: without it the test is skipped loudly (a
//! failure under NETSCHED_REQUIRE_NETNS=1, as the namespace tests).

mod common;

use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, UdpSocket};
use std::process::Command;
use std::time::{Duration, Instant};

use common::{
    bin, horus_task as task, loopback_metric as metric, tcp_port, udp_port as port, Quiet,
};

const KEY: &str = "0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0";

/// A raw IPv4 socket that writes its own headers (IPPROTO_RAW implies
/// IP_HDRINCL), or None without CAP_NET_RAW.
struct RawSender(i32);

impl RawSender {
    fn open() -> Option<RawSender> {
        // SAFETY: plain socket(2); the fd is owned by the returned value.
        let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_RAW, libc::IPPROTO_RAW) };
        (fd >= 0).then_some(RawSender(fd))
    }

    /// Sends `payload` as a UDP datagram from `from` to `to`.
    fn send(&self, from: SocketAddrV4, to: SocketAddrV4, payload: &[u8]) {
        let udp_len = 8 + payload.len();
        let total = 20 + udp_len;
        let mut p = vec![0u8; total];
        p[0] = 0x45;
        p[2..4].copy_from_slice(&(total as u16).to_be_bytes());
        p[6] = 0x40; // don't fragment
        p[8] = 64;
        p[9] = libc::IPPROTO_UDP as u8;
        p[12..16].copy_from_slice(&from.ip().octets());
        p[16..20].copy_from_slice(&to.ip().octets());
        let mut sum = 0u32;
        for w in p[..20].chunks(2) {
            sum += u32::from(u16::from_be_bytes([w[0], w[1]]));
        }
        while sum > 0xffff {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        p[10..12].copy_from_slice(&(!(sum as u16)).to_be_bytes());
        p[20..22].copy_from_slice(&from.port().to_be_bytes());
        p[22..24].copy_from_slice(&to.port().to_be_bytes());
        p[24..26].copy_from_slice(&(udp_len as u16).to_be_bytes());
        // UDP checksum 0: none (optional over IPv4).
        p[28..].copy_from_slice(payload);
        let addr = libc::sockaddr_in {
            sin_family: libc::AF_INET as libc::sa_family_t,
            sin_port: to.port().to_be(),
            sin_addr: libc::in_addr {
                s_addr: u32::from_ne_bytes(to.ip().octets()),
            },
            sin_zero: [0; 8],
        };
        // SAFETY: `p` and `addr` outlive the call; lengths are theirs.
        let sent = unsafe {
            libc::sendto(
                self.0,
                p.as_ptr().cast(),
                p.len(),
                0,
                (&addr as *const libc::sockaddr_in).cast(),
                std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
            )
        };
        assert_eq!(sent, p.len() as isize, "raw send");
    }
}

impl Drop for RawSender {
    fn drop(&mut self) {
        // SAFETY: the fd is ours and closed once.
        unsafe { libc::close(self.0) };
    }
}

/// Waits until a task through `addr` is answered (every daemon up).
fn wait_up(addr: SocketAddr) {
    let s = UdpSocket::bind("127.0.0.1:0").unwrap();
    s.set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let end = Instant::now() + Duration::from_secs(10);
    let mut buf = [0u8; 2048];
    for seq in 0.. {
        s.send_to(&task(999, seq, 1_000), addr).unwrap();
        if s.recv_from(&mut buf).is_ok() {
            return;
        }
        assert!(Instant::now() < end, "cluster at {addr} never answered");
    }
}

#[test]
fn tasks_forged_in_the_leafs_name_are_dropped_by_the_workers() {
    let Some(raw) = RawSender::open() else {
        netsched_lab::netns::skip(
            "tasks_forged_in_the_leafs_name_are_dropped_by_the_workers",
            &"no raw socket (CAP_NET_RAW) to forge the leaf's address",
        );
        return;
    };
    let dir = common::temp_dir("forged-tasks");
    let key_file = dir.join("cluster.key");
    netsched_node::secret::write_secret_file(&key_file, KEY).unwrap();
    let key = key_file.display();
    let (spine, leaf, sm, lm, wm) = (port(), port(), tcp_port(), tcp_port(), tcp_port());
    let workers: Vec<u16> = (0..4).map(|_| port()).collect();
    let listed = |ps: &[u16]| {
        ps.iter()
            .map(|p| format!("\"127.0.0.1:{p}\""))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let s = common::write_config(
        &dir,
        "spine.toml",
        format!(
            "listen = \"127.0.0.1:{spine}\"\nmetrics = \"127.0.0.1:{sm}\"\nkey_file = \"{key}\"\n\
             [[instance]]\npool = 1\nrole = \"spine\"\ndownstream = [\"127.0.0.1:{leaf}\"]\n\
             rack_workers = [4]\nclients = [\"127.0.0.1/32\"]\n"
        ),
    );
    let l = common::write_config(
        &dir,
        "leaf.toml",
        format!(
            "listen = \"127.0.0.1:{leaf}\"\nmetrics = \"127.0.0.1:{lm}\"\nkey_file = \"{key}\"\n\
             [[instance]]\npool = 1\nrole = \"leaf\"\nupstream = [\"127.0.0.1:{spine}\"]\n\
             downstream = [{}]\nheartbeat_timeout_ms = 500\nclients = []\n",
            listed(&workers)
        ),
    );
    let w = common::write_config(
        &dir,
        "worker.toml",
        format!(
            "listen = [{}]\nleaf = \"127.0.0.1:{leaf}\"\npool = 1\nheartbeat_ms = 50\n\
             metrics = \"127.0.0.1:{wm}\"\nkey_file = \"{key}\"\n",
            listed(&workers)
        ),
    );
    // Killed when the test ends, however it ends.
    let _daemons = [
        Quiet::spawn(&["switch", "-c", &s, "--duration-s", "60"]),
        Quiet::spawn(&["switch", "-c", &l, "--duration-s", "60"]),
        Quiet::spawn(&["worker", "-c", &w, "--duration-s", "60"]),
    ];
    wait_up(SocketAddr::from(([127, 0, 0, 1], spine)));

    // 8 tasks of 4.9 s, two per worker, from the leaf's own address.
    let from = SocketAddrV4::new(Ipv4Addr::LOCALHOST, leaf);
    for seq in 0..8u32 {
        let to = SocketAddrV4::new(Ipv4Addr::LOCALHOST, workers[seq as usize % 4]);
        raw.send(from, to, &task(7, seq, 4_900_000_000));
    }
    let c = common::write_config(
        &dir,
        "client.toml",
        format!(
            "targets = [{{ addr = \"127.0.0.1:{spine}\" }}]\npool = 1\napp_id = 1\nrate = 500\n\
             duration_ms = 3000\ntimeout_ms = 2000\nretries = 2\nseed = 5\n\
             service = {{ kind = \"fixed\", value_us = 100 }}\n"
        ),
    );
    let out = Command::new(bin())
        .args(["client", "-c", &c])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let field = |k: &str| common::summary_field(&text, k);
    let (submitted, completed) = (field("submitted"), field("completed"));
    let seal_drops = |reason: &str| {
        metric(
            wm,
            "netsched_worker_seal_drops_total",
            &format!("reason=\"{reason}\""),
        )
    };
    let (unsealed, bad, replayed) = (
        seal_drops("unsealed"),
        seal_drops("bad_seal"),
        seal_drops("replayed"),
    );
    let stranger = metric(wm, "netsched_worker_stranger_total", "");
    assert!(submitted > 1000, "{text}");
    assert!(
        completed * 100 >= submitted * 99,
        "fewer than 99 % completed ({completed} of {submitted}): {text}"
    );
    assert_eq!(
        (unsealed, bad, replayed, stranger),
        (8, 0, 0, 0),
        "forged tasks dropped unsealed (and nothing else dropped)"
    );
}
