//! Issue 16 item 2, as an attack: a host on the data network forges the
//! controller's source address with a raw socket and sends `configure`
//! datagrams that would drop the only rack at the spine. The source check
//! cannot stop it (the address is right); the MAC under the cluster key does.
//!
//! The controller, the spine, the rack (leaf and worker) and the attacker
//! each run in their own network namespace (`netsched_lab::netns`), so the
//! forged packets really cross a bridge from another host. Needs root; a
//! loud skip otherwise, a failure with `NETSCHED_REQUIRE_NETNS=1`.

use std::net::{SocketAddr, SocketAddrV4};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use netsched_lab::netns::{self, Host, Lab, LabError};
use netsched_node::controller::proto::{ControlMsg, InstanceDesired, RoleName, Sealer};
use netsched_node::controller::{http, Controller, ControllerConfig};
use netsched_node::metrics::Registry;
use netsched_node::secret::ClusterKey;
use netsched_node::{SwitchConfig, SwitchDaemon, Worker, WorkerConfig};

const KEY: &str = "5f1e0c3a9b7d2e4f6a8c0b1d3e5f7a9c2b4d6e8f0a1c3e5b7d9f1a3c5e7b9d0f";
const TOKEN: &str = "netns-auth-token";

/// A daemon thread inside a namespace, stopped on drop.
struct Running {
    stop: Arc<AtomicBool>,
    reg: Arc<Registry>,
    h: Option<JoinHandle<Result<(), netns::NetnsError>>>,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.h.take() {
            let _ = h.join();
        }
    }
}

fn switch(host: &Host, toml: String) -> Running {
    let stop = Arc::new(AtomicBool::new(false));
    let (tx, rx) = mpsc::channel();
    let st = stop.clone();
    let h = host.spawn(move || {
        let mut d = SwitchDaemon::bind(&SwitchConfig::from_toml(&toml).unwrap()).unwrap();
        tx.send(d.registry()).unwrap();
        d.run(&st).unwrap();
    });
    let reg = rx.recv_timeout(Duration::from_secs(5)).expect("switch up");
    Running {
        stop,
        reg,
        h: Some(std::thread::spawn(move || h.join().unwrap())),
    }
}

fn worker(host: &Host, toml: String) -> Running {
    let stop = Arc::new(AtomicBool::new(false));
    let (tx, rx) = mpsc::channel();
    let st = stop.clone();
    let h = host.spawn(move || {
        let w = Worker::bind(&WorkerConfig::from_toml(&toml).unwrap(), st).unwrap();
        tx.send(w.registry()).unwrap();
        w.join();
    });
    let reg = rx.recv_timeout(Duration::from_secs(5)).expect("worker up");
    Running {
        stop,
        reg,
        h: Some(std::thread::spawn(move || h.join().unwrap())),
    }
}

/// Sends `payload` as a UDP datagram from `src` (any address: the IP header
/// is ours, `IPPROTO_RAW` implies `IP_HDRINCL`) to `dst`, from the calling
/// thread's namespace. The kernel fills in the IP checksum and length; a UDP
/// checksum of 0 means "none" in IPv4.
fn send_forged(src: SocketAddrV4, dst: SocketAddrV4, payload: &[u8]) -> Result<(), String> {
    let udp_len = 8 + payload.len();
    let mut p = Vec::with_capacity(20 + udp_len);
    p.extend_from_slice(&[0x45, 0]);
    p.extend_from_slice(&((20 + udp_len) as u16).to_be_bytes());
    p.extend_from_slice(&[0, 0, 0x40, 0, 64, 17, 0, 0]); // id, DF, ttl, UDP, csum
    p.extend_from_slice(&src.ip().octets());
    p.extend_from_slice(&dst.ip().octets());
    p.extend_from_slice(&src.port().to_be_bytes());
    p.extend_from_slice(&dst.port().to_be_bytes());
    p.extend_from_slice(&(udp_len as u16).to_be_bytes());
    p.extend_from_slice(&[0, 0]);
    p.extend_from_slice(payload);
    // SAFETY: plain socket calls on a descriptor we own and close; the
    // buffer and the sockaddr outlive the call.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_RAW, libc::IPPROTO_RAW);
        if fd < 0 {
            return Err(format!("raw socket: {}", std::io::Error::last_os_error()));
        }
        let mut sa: libc::sockaddr_in = std::mem::zeroed();
        sa.sin_family = libc::AF_INET as libc::sa_family_t;
        sa.sin_addr.s_addr = u32::from_ne_bytes(dst.ip().octets());
        let n = libc::sendto(
            fd,
            p.as_ptr().cast(),
            p.len(),
            0,
            (&sa as *const libc::sockaddr_in).cast(),
            std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
        );
        let err = std::io::Error::last_os_error();
        libc::close(fd);
        if n != p.len() as isize {
            return Err(format!("raw sendto: {err}"));
        }
    }
    Ok(())
}

fn v4(h: &Host, port: u16) -> SocketAddrV4 {
    SocketAddrV4::new(h.addr, port)
}

fn wait_for(what: &dyn Fn() -> String, mut f: impl FnMut() -> bool) {
    let t = Instant::now();
    while !f() {
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "timed out: {}",
            what()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn spoofed_source_configure_datagrams_are_refused_by_their_mac() {
    let test = "spoofed_source_configure_datagrams_are_refused_by_their_mac";
    let mut lab = match Lab::new("auth") {
        Ok(l) => l,
        Err(LabError::Skip(why)) => return netns::skip(test, &why),
        Err(e) => panic!("{e}"),
    };
    let ctl = lab.host("ctl").unwrap();
    let spn = lab.host("spn").unwrap();
    let rck = lab.host("rck").unwrap();
    let evil = lab.host("evl").unwrap();
    let (ctl_udp, spine, leaf, exec) = (
        v4(&ctl, 7000),
        v4(&spn, 7100),
        v4(&rck, 7101),
        v4(&rck, 7201),
    );

    let sp = switch(
        &spn,
        format!(
            "listen = \"{spine}\"\ncontroller = \"{ctl_udp}\"\nkey = \"{KEY}\"\nstatus_ms = 30\n\
             [[instance]]\npool = 1\nrole = \"spine\"\npolicy = \"horus\"\n\
             downstream = [\"{leaf}\"]\nrack_workers = [1]\n"
        ),
    );
    let _leaf = switch(
        &rck,
        format!(
            "listen = \"{leaf}\"\ncontroller = \"{ctl_udp}\"\nkey = \"{KEY}\"\nstatus_ms = 30\n\
             [[instance]]\npool = 1\nrole = \"leaf\"\npolicy = \"horus\"\nrack = 0\n\
             upstream = [\"{spine}\"]\ndownstream = [\"{exec}\"]\nheartbeat_timeout_ms = 250\n"
        ),
    );
    let _worker = worker(
        &rck,
        format!("listen = [\"{exec}\"]\nleaf = \"{leaf}\"\npool = 1\nheartbeat_ms = 40\nkey = \"{KEY}\"\n"),
    );
    let cfg = ControllerConfig::from_toml(&format!(
        "listen = \"{ctl_udp}\"\nadmin = \"{}\"\ntoken = \"{TOKEN}\"\nkey = \"{KEY}\"\n\
         daemon_timeout_ms = 500\ntick_ms = 10\nresend_ms = 40\n\
         [[pool]]\nid = 1\nspines = [\"{spine}\"]\n[[pool.rack]]\nleaf = \"{leaf}\"\nworkers = [\"{exec}\"]\n",
        ctl.at(7080)
    ))
    .unwrap();
    let cstop = Arc::new(AtomicBool::new(false));
    let st = cstop.clone();
    let c = ctl
        .run(move || Controller::start(&cfg, st))
        .unwrap()
        .unwrap();
    let admitted = |c: &Controller| -> Vec<bool> {
        serde_json::from_value(c.topology_json()["pools"][0]["spines"][0]["admitted"].clone())
            .unwrap_or_default()
    };
    wait_for(&|| "the rack admitted".into(), || {
        admitted(&c) == vec![true]
    });
    // Settled: nothing left for the controller to change.
    std::thread::sleep(Duration::from_millis(300));
    let changes = || sp.reg.value("netsched_control_changes_total", "").unwrap();
    let rejected = |why: &str| {
        sp.reg
            .value(
                "netsched_control_rejected_total",
                &format!("{{reason=\"{why}\"}}"),
            )
            .unwrap()
    };
    let before = changes();
    let sp_epoch = 2;

    // What a spoofer would send: drop the only rack. As the old unsealed
    // format (magic + JSON), sealed under a key that is not the cluster's,
    // and — standing in for datagrams recorded in an earlier life of the
    // controller and of the spine — sealed under the real key at an old
    // epoch for an old epoch of the spine. (The spine has heard nothing from
    // the controller yet, its static config already matching: no sequence
    // floor protects it, only the epoch its pushes must name.)
    let drop_rack = ControlMsg::Configure(InstanceDesired {
        pool: 1,
        role: Some(RoleName::Spine),
        downstream: vec![SocketAddr::V4(leaf)],
        enabled: vec![false],
        upstream: None,
        rack_workers: Some(vec![1]),
    });
    let mut unsealed = b"NSC1".to_vec();
    unsealed.extend_from_slice(&serde_json::to_vec(&drop_rack).unwrap());
    let from = SocketAddr::V4(ctl_udp);
    let mut wrong_key = Sealer::new(ClusterKey::generate().unwrap(), from);
    let mut old_life = Sealer::with_epoch(ClusterKey::from_hex(KEY).unwrap(), from, 1);
    let (n_forged, n_old) = (40u64, 5u64);
    let mut datagrams = Vec::new();
    for _ in 0..n_old {
        datagrams.push(old_life.seal(&drop_rack, SocketAddr::V4(spine), 1));
    }
    for k in 0..n_forged {
        datagrams.push(if k % 2 == 0 {
            unsealed.clone()
        } else {
            wrong_key.seal(&drop_rack, SocketAddr::V4(spine), sp_epoch)
        });
    }
    evil.run(move || -> Result<(), String> {
        for d in &datagrams {
            send_forged(ctl_udp, spine, d)?;
            std::thread::sleep(Duration::from_millis(5));
        }
        Ok(())
    })
    .unwrap()
    .unwrap();

    // Every forged datagram got past the source check (the spoof worked) and
    // was refused by the seal; none changed the spine.
    let seen = || {
        let m = sp.reg.render();
        let lines: Vec<&str> = m
            .lines()
            .filter(|l| l.contains("control") || l.contains("runtime_drop"))
            .collect();
        format!("every forged datagram refused: {lines:#?}")
    };
    wait_for(&seen, || {
        rejected("bad_mac") == n_forged && rejected("replayed") == n_old
    });
    assert_eq!(
        rejected("unregistered_source"),
        0,
        "the source was forged right"
    );
    assert_eq!(changes(), before, "a forged configure changed the spine");
    assert_eq!(
        sp.reg.value("netsched_live_nodes", "{pool=\"1\"}"),
        Some(1),
        "the rack stays admitted"
    );
    assert_eq!(admitted(&c), vec![true]);
    // The genuine controller still reaches the spine: removing the rack
    // through the admin API drops it there.
    let rack_id = c.topology_json()["pools"][0]["racks"][0]["id"]
        .as_u64()
        .unwrap();
    let admin: SocketAddr = ctl.at(7080).parse().unwrap();
    let (code, _) = ctl
        .run(move || {
            http(
                admin,
                "DELETE",
                &format!("/v1/racks/{rack_id}"),
                Some(TOKEN),
                None,
            )
        })
        .unwrap()
        .unwrap();
    assert_eq!(code, 200);
    wait_for(&|| "the genuine push applied".into(), || {
        sp.reg.value("netsched_live_nodes", "{pool=\"1\"}") == Some(0)
    });
    assert!(sp.reg.value("netsched_control_rx_total", "").unwrap() > 0);
    cstop.store(true, Ordering::Relaxed);
    c.join();
}
