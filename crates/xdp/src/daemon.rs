//! What `netsched switch` with `datapath = "xdp"` needs of the loader
//! beyond the differential tests: the leaf's own address on forwarded tasks,
//! the reply routes the program learns, re-installing the control plane's
//! state, and the MACs of the interface and its neighbours.

use std::net::{Ipv4Addr, SocketAddrV4};

use aya::maps::{Array, CpuMap, Map, MapData};
use aya::programs::{Xdp, XdpFlags};
use aya::Ebpf;
use netsched_core::horus::HorusLeaf;

use crate::{cpu_thread, WorkerAddr, XdpError, XdpLeaf};

/// The steering program and the leaf as a cpumap program (the C source's
/// "Serialising the leaf").
const STEER: &str = "horus_steer";
const LEAF_ON_CPU: &str = "horus_leaf_cpu";

/// Packets the cpumap queues toward the leaf's CPU before dropping.
const CPU_QUEUE: u32 = 4096;

/// CPUs `leaf_runs_on` and `leaf_cpu` cover.
pub const MAX_CPUS: u32 = 64;

impl XdpLeaf {
    /// Forwarded tasks leave from `source` (the daemon's address, as the
    /// socket daemon sends them, so workers that accept tasks only from
    /// their leaf take them), and the program records each application's
    /// source in `reply_routes`.
    pub fn set_source(&mut self, source: SocketAddrV4) -> Result<(), XdpError> {
        self.config.source = Some(source);
        self.write_config()
    }

    /// With `on` (and a source, [`XdpLeaf::set_source`]), a reply from a
    /// worker's registered address whose application has a route goes on
    /// to its client from the program (`XDP_TX`, from the source address,
    /// to the Ethernet address the application's last task came from);
    /// otherwise every reply is passed up, as before. The daemon turns it
    /// off where its I/O layer must see replies (fault injection).
    pub fn set_reply_forwarding(&mut self, on: bool) -> Result<(), XdpError> {
        self.config.forward_replies = on;
        self.write_config()
    }

    /// Where application `app_id`'s tasks last came from, as the program
    /// recorded it (after [`XdpLeaf::set_source`]).
    pub fn reply_route(&mut self, app_id: u32) -> Result<Option<SocketAddrV4>, XdpError> {
        self.object.reply_route(app_id)
    }

    /// Installs `leaf`'s state again (a control-plane change: a worker added
    /// or removed) but keeps the program's random stream, so the samples do
    /// not repeat the ones drawn since the first install, and its
    /// connection table, less the entries of workers `leaf` no longer has
    /// (`HorusLeaf::control_remove_worker` forgets them so).
    pub fn reinstall(
        &mut self,
        leaf: &HorusLeaf,
        leaf_mac: [u8; 6],
        workers: &[WorkerAddr],
    ) -> Result<(), XdpError> {
        let rng = self.rng_state()?;
        self.install_registers(leaf, leaf_mac, workers)?;
        self.object
            .conn_forget(|node| leaf.busy_nodes().contains(node))?;
        self.object.array::<[u64; 4]>("leaf_rng")?.set(0, rng, 0)?;
        Ok(())
    }
}

impl XdpLeaf {}

/// The names of a program's steering pieces in its object.
pub(crate) struct Steering {
    /// The program attached to the interface: it redirects every packet.
    pub steer: &'static str,
    /// The scheduler as a cpumap program, run on the one chosen CPU.
    pub on_cpu: &'static str,
    /// The cpumap whose one entry runs `on_cpu`.
    pub cpumap: &'static str,
    /// The scheduler attached to the interface itself, on every CPU
    /// (`SchedulerObject::attach_direct`): a program whose frames leave by
    /// a redirect, as `on_cpu`'s do (steer.h, `DEFINE_REDIRECTING`), or the
    /// scheduler's own program (XDP_TX).
    pub direct: &'static str,
}

impl Steering {
    pub(crate) const LEAF: Steering = Steering {
        steer: STEER,
        on_cpu: LEAF_ON_CPU,
        cpumap: "leaf_cpu",
        direct: "horus_leaf_all",
    };
    /// The Horus spine's (horus_spine.bpf.c).
    pub(crate) const SPINE: Steering = Steering {
        steer: "spine_steer",
        on_cpu: "horus_spine_cpu",
        cpumap: "spine_cpu",
        direct: "horus_spine_all",
    };
    /// The Draconis queue's (draconis_queue.bpf.c, "Serialising the queue").
    pub(crate) const QUEUE: Steering = Steering {
        steer: "draconis_steer",
        on_cpu: "draconis_queue_cpu",
        cpumap: "queue_cpu",
        direct: "draconis_queue",
    };
}

/// Attaches `steering.steer` to `interface` and installs `steering.on_cpu`
/// as the program of `cpu`'s cpumap entry: whatever CPU takes a packet, the
/// scheduler runs on `cpu`'s cpumap thread, one packet at a time (kernel >=
/// 5.9). Each object keeps its steering CPU in `steer_cpu` and its counts in
/// `runs_on`. With `realtime_priority` > 0 that thread runs SCHED_FIFO at it
/// before the first packet is steered (crate::cpu_thread says why).
pub(crate) fn attach_steered(
    ebpf: &mut Ebpf,
    steering: &Steering,
    interface: &str,
    flags: XdpFlags,
    cpu: u32,
    realtime_priority: u8,
) -> Result<SchedulerThread, XdpError> {
    if cpu >= MAX_CPUS {
        return Err(XdpError::CpuOutOfRange { cpu });
    }
    let on_cpu: &mut Xdp = ebpf
        .program_mut(steering.on_cpu)
        .ok_or(XdpError::NoNamedProgram(steering.on_cpu))?
        .try_into()?;
    on_cpu.load()?;
    let on_cpu_fd = on_cpu.fd()?.try_clone().map_err(XdpError::Fd)?;
    let map = ebpf
        .map_mut(steering.cpumap)
        .ok_or(XdpError::NoMap(steering.cpumap))?;
    let Map::CpuMap(data) = &*map else {
        return Err(XdpError::NoMap(steering.cpumap));
    };
    let map_id = data.info()?.id();
    CpuMap::try_from(map)?.set(cpu, CPU_QUEUE, Some(&on_cpu_fd), 0)?;
    // The entry's thread exists once the update returns.
    let thread = SchedulerThread::of_entry(cpu, map_id, realtime_priority)?;
    let map = ebpf
        .map_mut("steer_cpu")
        .ok_or(XdpError::NoMap("steer_cpu"))?;
    Array::<&mut MapData, u32>::try_from(map)?.set(0, cpu, 0)?;
    let steer: &mut Xdp = ebpf
        .program_mut(steering.steer)
        .ok_or(XdpError::NoNamedProgram(steering.steer))?
        .try_into()?;
    steer.load()?;
    steer.attach(interface, flags)?;
    Ok(thread)
}

/// The kernel thread that runs a serialised scheduler: the cpumap entry's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SchedulerThread {
    /// `cpumap/<cpu>/map:<id>`.
    pub name: String,
    /// None if /proc does not show it (only an error when a real-time
    /// priority was asked for).
    pub pid: Option<i32>,
    /// Its SCHED_FIFO priority, or None for an ordinary thread.
    pub realtime_priority: Option<u8>,
}

impl SchedulerThread {
    fn of_entry(cpu: u32, map_id: u32, realtime_priority: u8) -> Result<Self, XdpError> {
        let name = cpu_thread::name(cpu, map_id);
        let pid = cpu_thread::find(&name).map_err(XdpError::CpuThread)?;
        if realtime_priority == 0 {
            return Ok(SchedulerThread {
                name,
                pid,
                realtime_priority: None,
            });
        }
        let Some(found) = pid else {
            return Err(XdpError::CpuThreadNotFound(name));
        };
        cpu_thread::make_realtime(found, realtime_priority).map_err(XdpError::CpuThread)?;
        Ok(SchedulerThread {
            name,
            pid,
            realtime_priority: Some(realtime_priority),
        })
    }

    /// A warning for the operator when the thread is real-time and the
    /// kernel does not throttle real-time tasks (`sched_rt_runtime_us` is
    /// -1): an overloaded scheduler would then keep its CPU's other tasks
    /// (the daemon's own control thread among them) from running at all.
    pub fn throttling_warning(&self) -> Option<String> {
        self.realtime_priority?;
        match cpu_thread::realtime_share() {
            Ok(Some(_)) => None,
            Ok(None) => Some(format!(
                "{} is SCHED_FIFO and real-time throttling is off \
                 (/proc/sys/kernel/sched_rt_runtime_us = -1): under overload it \
                 can starve every other task on its CPU; set \
                 sched_rt_runtime_us (default 950000) or realtime_priority = 0",
                self.name
            )),
            Err(e) => Some(format!(
                "{} is SCHED_FIFO and the real-time throttling settings are \
                 unreadable ({e})",
                self.name
            )),
        }
    }

    /// The thread's scheduling policy and priority as the kernel reports
    /// them now (SCHED_FIFO is `libc::SCHED_FIFO`).
    pub fn policy(&self) -> Result<Option<(i32, i32)>, XdpError> {
        self.pid
            .map(cpu_thread::policy)
            .transpose()
            .map_err(XdpError::CpuThread)
    }
}

/// The `runs_on` map of an object attached by [`attach_steered`].
pub(crate) fn runs_on(ebpf: &Ebpf) -> Result<CpuRuns, XdpError> {
    let map = ebpf.map("runs_on").ok_or(XdpError::NoMap("runs_on"))?;
    let runs: Array<&MapData, u64> = Array::try_from(map)?;
    let per_cpu = |offset: u32| -> Result<Vec<u64>, XdpError> {
        (0..MAX_CPUS)
            .map(|cpu| Ok(runs.get(&(offset + cpu), 0)?))
            .collect()
    };
    Ok(CpuRuns {
        steered: per_cpu(0)?,
        scheduler: per_cpu(MAX_CPUS)?,
    })
}

/// [`XdpLeaf::runs_on`], indexed by CPU.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CpuRuns {
    pub steered: Vec<u64>,
    /// Packets the scheduler (the leaf or the queue) ran, per CPU.
    pub scheduler: Vec<u64>,
}

/// `interface`'s MAC in the calling thread's network namespace
/// (`SIOCGIFHWADDR` on a socket, which belongs to the namespace of the thread
/// that opens it). Sysfs would answer for the namespace it was mounted in:
/// right under `ip netns exec`, which mounts the namespace's own, but from a
/// thread that entered a namespace with `setns` it names the host's
/// interface of that name, and its MAC.
pub fn interface_mac(interface: &str) -> std::io::Result<[u8; 6]> {
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    let name = interface.as_bytes();
    if name.is_empty() || name.len() >= libc::IFNAMSIZ || name.contains(&0) {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("{interface:?}: not an interface name"),
        ));
    }
    // SAFETY: socket(2) has no memory preconditions; the fd is owned below.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: fd is a fresh descriptor nobody else owns.
    let sock = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: ifreq is plain data; all-zero is a valid value.
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    for (dst, src) in req.ifr_name.iter_mut().zip(name) {
        *dst = *src as libc::c_char;
    }
    // SAFETY: req is a valid ifreq with a NUL-terminated name (zeroed tail).
    if unsafe { libc::ioctl(sock.as_raw_fd(), libc::SIOCGIFHWADDR, &mut req) } < 0 {
        let e = std::io::Error::last_os_error();
        return Err(std::io::Error::new(e.kind(), format!("{interface}: {e}")));
    }
    // SAFETY: SIOCGIFHWADDR filled the ifru_hwaddr member of the union.
    let hw = unsafe { req.ifr_ifru.ifru_hwaddr };
    if hw.sa_family != libc::ARPHRD_ETHER {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!(
                "{interface}: not an Ethernet interface (type {})",
                hw.sa_family
            ),
        ));
    }
    let mut mac = [0u8; 6];
    for (dst, src) in mac.iter_mut().zip(hw.sa_data.iter()) {
        *dst = *src as u8;
    }
    Ok(mac)
}

/// The MAC the kernel's neighbour table holds for `ip` on `interface`, if
/// resolved: `/proc/thread-self/net/arp`, the calling thread's network
/// namespace (`/proc/net` is the process's, which a thread that entered a
/// namespace with `setns` does not share).
pub fn neighbour_mac(interface: &str, ip: Ipv4Addr) -> std::io::Result<Option<[u8; 6]>> {
    let table = std::fs::read_to_string("/proc/thread-self/net/arp")?;
    Ok(parse_arp(&table, interface, ip))
}

/// `/proc/net/arp`: IP address, HW type, Flags, HW address, Mask, Device.
fn parse_arp(table: &str, interface: &str, ip: Ipv4Addr) -> Option<[u8; 6]> {
    const COMPLETE: u32 = 0x2;
    table.lines().skip(1).find_map(|line| {
        let cols: Vec<&str> = line.split_whitespace().collect();
        let [addr, _, flags, mac, _, dev] = cols[..] else {
            return None;
        };
        let flags = u32::from_str_radix(flags.trim_start_matches("0x"), 16).ok()?;
        (addr.parse() == Ok(ip) && dev == interface && flags & COMPLETE != 0)
            .then(|| parse_mac(mac))
            .flatten()
    })
}

fn parse_mac(text: &str) -> Option<[u8; 6]> {
    let mut mac = [0u8; 6];
    let mut parts = text.split(':');
    for byte in &mut mac {
        *byte = u8::from_str_radix(parts.next()?, 16).ok()?;
    }
    parts.next().is_none().then_some(mac)
}

#[cfg(test)]
mod tests {
    use super::*;

    const ARP: &str =
        "IP address       HW type     Flags       HW address            Mask     Device
10.0.0.3         0x1         0x2         aa:bb:cc:00:11:22     *        eth0
10.0.0.4         0x1         0x0         00:00:00:00:00:00     *        eth0
10.0.0.5         0x1         0x2         aa:bb:cc:00:11:55     *        eth1
";

    #[test]
    fn arp_entries_resolve_only_when_complete_and_on_the_interface() {
        let ip = |s: &str| s.parse::<Ipv4Addr>().unwrap();
        assert_eq!(
            parse_arp(ARP, "eth0", ip("10.0.0.3")),
            Some([0xaa, 0xbb, 0xcc, 0x00, 0x11, 0x22])
        );
        assert_eq!(parse_arp(ARP, "eth0", ip("10.0.0.4")), None, "incomplete");
        assert_eq!(parse_arp(ARP, "eth0", ip("10.0.0.5")), None, "other device");
        assert_eq!(parse_arp(ARP, "eth0", ip("10.0.0.9")), None);
    }

    #[test]
    fn macs_need_six_hex_bytes() {
        assert_eq!(parse_mac("01:02:03:0a:0b:ff"), Some([1, 2, 3, 10, 11, 255]));
        assert_eq!(parse_mac("01:02:03:0a:0b"), None);
        assert_eq!(parse_mac("01:02:03:0a:0b:ff:00"), None);
        assert_eq!(parse_mac("01:02:03:0a:0b:zz"), None);
    }
}
