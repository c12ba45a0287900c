//! Network namespaces joined by veth pairs, for multi-host tests on one
//! machine (a namespace per rack, the spine in its own).
//!
//! [`Lab::new`] makes a hub namespace holding a bridge; every
//! [`Lab::host`] is a namespace with one veth pair into that bridge and an
//! address in 10.X.0.0/24. Daemons run as threads that first enter their
//! host's namespace ([`Host::spawn`]): sockets belong to the namespace they
//! were created in, so each daemon really sends through its own interface,
//! the bridge, and the peer's interface. [`Lab::set_link`] cuts and restores
//! a host's link (`ip link set … down`). Dropping the `Lab` deletes every
//! namespace, which deletes the veths and the bridge with them, even when a
//! test panics.
//!
//! Requires root (`ip netns add`); [`Lab::new`] returns `Err(Skip)` when it
//! is not permitted, so tests can skip with a loud `SKIP` message instead of
//! failing. With [`REQUIRE_NETNS_ENV`]`=1` (CI runs as root) the same
//! condition is `Err(Failed)`: a namespace test can then never pass without
//! having run.
//! Tests hand a skip to [`skip`], which prints a loud SKIP line.

use std::fs::File;
use std::net::{IpAddr, Ipv4Addr};
use std::os::fd::AsRawFd;
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::thread::JoinHandle;

/// Why a lab could not be built.
#[derive(Debug, thiserror::Error)]
pub enum LabError {
    /// `ip netns add` is not permitted here (not root, no CAP_SYS_ADMIN, no
    /// `ip`) and [`REQUIRE_NETNS_ENV`] is not `1`: the caller should skip,
    /// printing `SKIP`.
    #[error("network namespaces unavailable: {0}")]
    Skip(String),
    #[error(transparent)]
    Failed(#[from] NetnsError),
}

/// Why a namespace operation failed.
#[derive(Debug, thiserror::Error)]
pub enum NetnsError {
    /// `ip` could not run, or refused (`reason`: its error output).
    #[error("ip {args}: {reason}")]
    Ip { args: String, reason: String },
    #[error("{path}: {source}")]
    Open {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("setns {name}: {source}")]
    Setns {
        name: String,
        #[source]
        source: std::io::Error,
    },
    #[error("namespace thread panicked")]
    Panicked,
    /// An interface feature could not be set (`SIOCETHTOOL`).
    #[error("ethtool {ifname}: {source}")]
    Ethtool {
        ifname: String,
        #[source]
        source: std::io::Error,
    },
    /// Namespaces are unavailable where they are required.
    #[error("{source} ({}=1: namespaces are required)", REQUIRE_NETNS_ENV)]
    Required {
        #[source]
        source: Box<NetnsError>,
    },
}

/// For callers that report errors as text (tests).
impl From<NetnsError> for String {
    fn from(e: NetnsError) -> String {
        e.to_string()
    }
}

/// Set to `1` to make an unavailable `ip netns` a test failure instead of a
/// skip: where namespaces must work (root, CI), a silently skipped test would
/// pass without testing anything.
pub const REQUIRE_NETNS_ENV: &str = "NETSCHED_REQUIRE_NETNS";

/// Whether [`REQUIRE_NETNS_ENV`] is set to `1`.
pub fn netns_required() -> bool {
    std::env::var(REQUIRE_NETNS_ENV).is_ok_and(|v| v == "1")
}

/// The error for "`ip netns add` failed": a skip, unless namespaces are
/// required.
pub(crate) fn unavailable(why: NetnsError) -> LabError {
    if netns_required() {
        LabError::Failed(NetnsError::Required {
            source: Box::new(why),
        })
    } else {
        LabError::Skip(why.to_string())
    }
}

/// Loopback up, and `eth0` in namespace `name` up at `addr`/24.
fn bring_up(name: &str, addr: Ipv4Addr) -> Result<(), NetnsError> {
    ip(&["-n", name, "link", "set", "lo", "up"])?;
    ip(&[
        "-n",
        name,
        "addr",
        "add",
        &format!("{addr}/24"),
        "dev",
        "eth0",
    ])?;
    ip(&["-n", name, "link", "set", "eth0", "up"])
}

pub(crate) fn ip(args: &[&str]) -> Result<(), NetnsError> {
    ip_output(args).map(drop)
}

/// `ip args`'s standard output, or why it failed.
fn ip_output(args: &[&str]) -> Result<String, NetnsError> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| ip_failed(args, e.to_string()))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(ip_failed(
            args,
            String::from_utf8_lossy(&out.stderr).trim().to_string(),
        ))
    }
}

fn ip_failed(args: &[&str], reason: String) -> NetnsError {
    NetnsError::Ip {
        args: args.join(" "),
        reason,
    }
}

/// A namespace test cannot run (`why`): prints a loud SKIP to stderr, or
/// panics if [`netns_required`].
pub fn skip(test: &str, why: &dyn std::fmt::Display) {
    if netns_required() {
        panic!("{test}: network namespaces are required ({REQUIRE_NETNS_ENV}=1) but unavailable: {why}");
    }
    eprintln!(
        "\n*** SKIP {test}: network namespaces unavailable ({why}); \
         this multi-host test did NOT run. Set {REQUIRE_NETNS_ENV}=1 to make this a failure. ***\n"
    );
}

/// Moves the calling thread into the namespace `name` (`ip netns`'s
/// `/run/netns/<name>`); sockets it creates afterwards live there.
pub(crate) fn enter_ns(name: &str) -> Result<(), NetnsError> {
    let path = format!("/run/netns/{name}");
    let f = File::open(&path).map_err(|source| NetnsError::Open {
        path: path.clone(),
        source,
    })?;
    // SAFETY: a valid namespace fd; setns affects only this thread.
    let r = unsafe { libc::setns(f.as_raw_fd(), libc::CLONE_NEWNET) };
    if r != 0 {
        return Err(NetnsError::Setns {
            name: name.to_string(),
            source: std::io::Error::last_os_error(),
        });
    }
    Ok(())
}

/// `ethtool -K ifname gro on`: `ETHTOOL_SGRO`.
const ETHTOOL_SGRO: u32 = 0x2c;
/// `ethtool -K ifname tx off`: `ETHTOOL_STXCSUM`.
const ETHTOOL_STXCSUM: u32 = 0x17;

/// Sets feature `cmd` of `ifname` to `data` in the calling thread's
/// namespace, through `SIOCETHTOOL` (as `ethtool -K` does).
fn ethtool_set(ifname: &str, cmd: u32, data: u32) -> Result<(), NetnsError> {
    const SIOCETHTOOL: libc::c_ulong = 0x8946;
    #[repr(C)]
    struct EthtoolValue {
        cmd: u32,
        data: u32,
    }
    let failed = |source| NetnsError::Ethtool {
        ifname: ifname.to_string(),
        source,
    };
    let mut value = EthtoolValue { cmd, data };
    // SAFETY: a zeroed ifreq is valid; the name fits (checked) and stays
    // NUL-terminated; ifr_data points at `value`, alive across the call.
    unsafe {
        let mut req: libc::ifreq = std::mem::zeroed();
        let name = ifname.as_bytes();
        if name.len() >= req.ifr_name.len() {
            return Err(failed(std::io::Error::other("interface name too long")));
        }
        for (d, s) in req.ifr_name.iter_mut().zip(name) {
            *d = *s as libc::c_char;
        }
        req.ifr_ifru.ifru_data = (&mut value as *mut EthtoolValue).cast();
        let fd = libc::socket(libc::AF_INET, libc::SOCK_DGRAM, 0);
        if fd < 0 {
            return Err(failed(std::io::Error::last_os_error()));
        }
        let r = libc::ioctl(fd, SIOCETHTOOL as _, &mut req);
        let err = std::io::Error::last_os_error();
        libc::close(fd);
        if r != 0 {
            return Err(failed(err));
        }
    }
    Ok(())
}

/// Distinct names for labs of one process (tests run in parallel).
static NEXT_LAB: AtomicU32 = AtomicU32::new(0);

/// A set of namespaces on one bridge; removed on drop.
pub struct Lab {
    prefix: String,
    hub: String,
    subnet: u8,
    hosts: Vec<String>,
}

/// One namespace with one address.
#[derive(Clone, Debug)]
pub struct Host {
    pub name: String,
    pub addr: Ipv4Addr,
    /// Interface in the hub namespace (bridge port) and inside the host.
    pub hub_if: String,
}

impl Lab {
    /// A hub namespace with a bridge. `tag` names the test; the pid and a
    /// per-process counter keep names unique across concurrent tests.
    pub fn new(tag: &str) -> Result<Lab, LabError> {
        let n = NEXT_LAB.fetch_add(1, Ordering::Relaxed);
        let pid = std::process::id();
        let prefix = format!("ns{}{}x{n}", &tag[..tag.len().min(4)], pid % 100_000);
        let hub = format!("{prefix}h");
        ip(&["netns", "add", &hub]).map_err(unavailable)?;
        let lab = Lab {
            prefix,
            hub,
            // Each lab is its own set of namespaces: addresses never meet.
            subnet: 77,
            hosts: Vec::new(),
        };
        let f = |r: Result<(), NetnsError>| r.map_err(LabError::Failed);
        f(ip(&["-n", &lab.hub, "link", "set", "lo", "up"]))?;
        f(ip(&[
            "-n", &lab.hub, "link", "add", "br0", "type", "bridge",
        ]))?;
        f(ip(&["-n", &lab.hub, "link", "set", "br0", "up"]))?;
        Ok(lab)
    }

    /// Adds namespace number `self.hosts.len()` with address
    /// 10.subnet.0.(index + 1)/24 on the bridge.
    pub fn host(&mut self, label: &str) -> Result<Host, LabError> {
        let i = self.hosts.len();
        let name = format!("{}{}{}", self.prefix, &label[..label.len().min(3)], i);
        ip(&["netns", "add", &name]).map_err(LabError::Failed)?;
        self.hosts.push(name.clone());
        let addr = Ipv4Addr::new(10, self.subnet, 0, i as u8 + 1);
        let hub_if = format!("v{}", i);
        let peer = format!("p{}", i);
        let f = |r: Result<(), NetnsError>| r.map_err(LabError::Failed);
        f(ip(&[
            "-n", &self.hub, "link", "add", &hub_if, "type", "veth", "peer", "name", &peer,
        ]))?;
        f(ip(&["-n", &self.hub, "link", "set", &peer, "netns", &name]))?;
        f(ip(&[
            "-n", &self.hub, "link", "set", &hub_if, "master", "br0",
        ]))?;
        f(ip(&["-n", &self.hub, "link", "set", &hub_if, "up"]))?;
        f(ip(&["-n", &name, "link", "set", &peer, "name", "eth0"]))?;
        f(bring_up(&name, addr))?;
        Ok(Host { name, addr, hub_if })
    }

    /// Two namespaces joined by one veth pair of their own (`eth0` in each,
    /// 10.subnet.1.1/24 and 10.subnet.1.2/24), not on the bridge: frames
    /// one sends reach the other's driver directly (native XDP on both
    /// ends). Removed with the lab.
    pub fn pair(&mut self, a: &str, b: &str) -> Result<(Host, Host), LabError> {
        let f = |r: Result<(), NetnsError>| r.map_err(LabError::Failed);
        let i = self.hosts.len();
        let names = [a, b].map(|l| format!("{}{}{}", self.prefix, &l[..l.len().min(3)], i));
        for name in &names {
            f(ip(&["netns", "add", name]))?;
            self.hosts.push(name.clone());
        }
        f(ip(&[
            "-n", &names[0], "link", "add", "eth0", "type", "veth", "peer", "name", "eth0",
            "netns", &names[1],
        ]))?;
        let mut hosts = Vec::new();
        for (k, name) in names.iter().enumerate() {
            let addr = Ipv4Addr::new(10, self.subnet, 1, k as u8 + 1);
            f(bring_up(name, addr))?;
            hosts.push(Host {
                name: name.clone(),
                addr,
                hub_if: String::new(),
            });
        }
        let b = hosts.pop().expect("two hosts");
        let a = hosts.pop().expect("two hosts");
        Ok((a, b))
    }

    /// The hub namespace, which holds the bridge and the hosts' peer veths
    /// (`Host::hub_if`).
    pub fn hub(&self) -> &str {
        &self.hub
    }

    /// Readies `host`'s eth0 for a native-mode XDP program that sends
    /// frames back out of it and passes others up (docs/xdp.md, "Native
    /// mode on a veth"). A veth takes XDP frames only with NAPI of its own:
    /// GRO goes on at `host`'s bridge-side peer, which then takes the frames
    /// the program redirects there. And native XDP drops a veth's
    /// "checksum left to hardware" mark, so the stack would discard the
    /// datagrams the program passes up as checksum errors: TX checksum
    /// offload goes off at each of `senders`' eth0, whose datagrams then
    /// carry full checksums, as a NIC's do.
    pub fn native_xdp(&self, host: &Host, senders: &[&Host]) -> Result<(), NetnsError> {
        let hub = Host {
            name: self.hub.clone(),
            addr: host.addr,
            hub_if: String::new(),
        };
        let peer = host.hub_if.clone();
        hub.run(move || ethtool_set(&peer, ETHTOOL_SGRO, 1))??;
        for s in senders {
            s.run(|| ethtool_set("eth0", ETHTOOL_STXCSUM, 0))??;
        }
        Ok(())
    }

    /// Cuts (`up = false`) or restores a host's link at the bridge port.
    pub fn set_link(&self, h: &Host, up: bool) -> Result<(), NetnsError> {
        ip(&[
            "-n",
            &self.hub,
            "link",
            "set",
            &h.hub_if,
            if up { "up" } else { "down" },
        ])
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        // Deleting a namespace deletes its interfaces; veth peers go too.
        for h in self.hosts.iter().rev() {
            let _ = ip(&["netns", "del", h]);
        }
        let _ = ip(&["netns", "del", &self.hub]);
    }
}

impl Host {
    pub fn ip(&self) -> IpAddr {
        IpAddr::V4(self.addr)
    }

    /// `addr:port` in this namespace.
    pub fn at(&self, port: u16) -> String {
        format!("{}:{port}", self.addr)
    }

    /// eth0's MAC. (Not from /sys: sysfs shows the devices of the namespace
    /// it was mounted in, whatever a thread entered.)
    pub fn mac(&self) -> Result<[u8; 6], NetnsError> {
        let args = ["-n", &self.name, "link", "show", "eth0"];
        let failed = |reason: String| ip_failed(&args, reason);
        let text = ip_output(&args)?;
        let hex = text
            .split("link/ether ")
            .nth(1)
            .and_then(|rest| rest.split_whitespace().next())
            .ok_or_else(|| failed(format!("no link/ether in {text:?}")))?;
        let mut mac = [0u8; 6];
        let mut parts = hex.split(':');
        for byte in &mut mac {
            *byte = parts
                .next()
                .and_then(|p| u8::from_str_radix(p, 16).ok())
                .ok_or_else(|| failed(format!("bad MAC {hex:?}")))?;
        }
        Ok(mac)
    }

    /// Moves the calling thread into this namespace; sockets it creates
    /// afterwards live there.
    pub fn enter(&self) -> Result<(), NetnsError> {
        enter_ns(&self.name)
    }

    /// Runs `f` on a new thread inside this namespace.
    pub fn spawn<T: Send + 'static>(
        &self,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> JoinHandle<Result<T, NetnsError>> {
        let me = self.clone();
        std::thread::spawn(move || {
            me.enter()?;
            Ok(f())
        })
    }

    /// Runs `f` inside this namespace and waits for it.
    pub fn run<T: Send + 'static>(
        &self,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, NetnsError> {
        self.spawn(f).join().map_err(|_| NetnsError::Panicked)?
    }
}
