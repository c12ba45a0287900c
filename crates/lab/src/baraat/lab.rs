//! The lab: network namespaces joined to a software switch by veth pairs,
//! and the addresses and sockets the experiment's threads use in them.

use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicU32, Ordering};

use crate::netns::{enter_ns, ip, unavailable, LabError, NetnsError};

use super::{
    run_fig7, Fig7Error, Fig7Mode, Fig7Opts, Fig7Run, PORT_CLIENT, PORT_SERVER, PORT_SW, SERVERS,
};

/// Namespaces `<prefix>-sw`, `-c`, `-s0..2`, veth pairs from the switch to
/// each; deleted on drop (also when a run fails).
pub struct Lab {
    prefix: String,
    names: Vec<String>,
}

impl Lab {
    pub fn new(prefix: &str) -> Result<Lab, LabError> {
        let mut lab = Lab {
            prefix: prefix.to_string(),
            names: Vec::new(),
        };
        let sw = lab.ns("sw");
        static LABS: AtomicU32 = AtomicU32::new(0);
        let lab_no = LABS.fetch_add(1, Ordering::Relaxed);
        // A skip unless NETSCHED_REQUIRE_NETNS=1, as every namespace lab.
        ip(&["netns", "add", &sw]).map_err(unavailable)?;
        lab.names.push(sw.clone());
        let ends: Vec<(String, String)> = std::iter::once(("c".to_string(), "10.77.0".to_string()))
            .chain((0..SERVERS).map(|i| (format!("s{i}"), format!("10.77.{}", i + 1))))
            .collect();
        let o = |r: Result<(), NetnsError>| r.map_err(LabError::Failed);
        o(ip(&["-n", &sw, "link", "set", "lo", "up"]))?;
        for (k, (end, net)) in ends.iter().enumerate() {
            let ns = lab.ns(end);
            o(ip(&["netns", "add", &ns]))?;
            lab.names.push(ns.clone());
            // Interface names are per namespace once moved, but are created
            // in ours first: unique by pid and by lab within the process
            // (tests build labs in parallel), within IFNAMSIZ (15).
            let tag = format!("{}x{}x{k}", std::process::id() % 100_000, lab_no % 100);
            let (a, b) = (format!("fa{tag}"), format!("fb{tag}"));
            o(ip(&["link", "add", &a, "type", "veth", "peer", "name", &b]))?;
            o(ip(&["link", "set", &a, "netns", &sw]))?;
            o(ip(&["link", "set", &b, "netns", &ns]))?;
            o(ip(&[
                "-n",
                &sw,
                "addr",
                "add",
                &format!("{net}.2/24"),
                "dev",
                &a,
            ]))?;
            o(ip(&[
                "-n",
                &ns,
                "addr",
                "add",
                &format!("{net}.1/24"),
                "dev",
                &b,
            ]))?;
            o(ip(&["-n", &sw, "link", "set", &a, "up"]))?;
            o(ip(&["-n", &ns, "link", "set", &b, "up"]))?;
            o(ip(&["-n", &ns, "link", "set", "lo", "up"]))?;
        }
        Ok(lab)
    }

    pub(super) fn ns(&self, end: &str) -> String {
        format!("{}-{end}", self.prefix)
    }

    /// Run one Fig. 7 experiment in the lab.
    pub fn fig7(&self, mode: Fig7Mode, o: &Fig7Opts) -> Result<Fig7Run, Fig7Error> {
        run_fig7(self, mode, o)
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        for n in self.names.iter().rev() {
            let _ = ip(&["netns", "del", n]);
        }
    }
}

/// Move the calling thread into a network namespace.
pub(super) fn enter(ns: &str) -> Result<(), NetnsError> {
    enter_ns(ns)?;
    // Short sleeps of the pacing loops should not be stretched by the
    // default 50 µs timer slack (half a packet time at 100 Mbps).
    // SAFETY: prctl(PR_SET_TIMERSLACK) only affects this thread.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong);
    }
    Ok(())
}

pub(super) fn bind_port(port: u16) -> io::Result<UdpSocket> {
    let s = UdpSocket::bind(("0.0.0.0", port))?;
    let big: libc::c_int = 8 << 20;
    // The *FORCE variants (root) go past net.core.rmem_max: a receive
    // buffer overflow while a thread waits for a core would lose a request
    // the switch already counted (Alg. 1 keeps its allocation until the
    // sender returns it).
    for opt in [
        libc::SO_RCVBUF,
        libc::SO_SNDBUF,
        libc::SO_RCVBUFFORCE,
        libc::SO_SNDBUFFORCE,
    ] {
        // SAFETY: setsockopt with a valid fd and an int option value.
        unsafe {
            libc::setsockopt(
                s.as_raw_fd(),
                libc::SOL_SOCKET,
                opt,
                &big as *const _ as *const libc::c_void,
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            );
        }
    }
    s.set_nonblocking(true)?;
    Ok(s)
}

pub(super) fn sw_addr(i: Option<usize>) -> SocketAddr {
    let net = i.map_or(0, |i| i + 1);
    format!("10.77.{net}.2:{PORT_SW}").parse().expect("address")
}
pub(super) fn client_addr() -> SocketAddr {
    format!("10.77.0.1:{PORT_CLIENT}").parse().expect("address")
}
pub(super) fn server_addr(i: usize) -> SocketAddr {
    format!("10.77.{}.1:{PORT_SERVER}", i + 1)
        .parse()
        .expect("address")
}
