//! `datapath = "xdp"`: the Horus leaf or spine runs as an XDP program on the
//! switch's interface (crates/xdp, docs/xdp.md) and this daemon keeps what
//! the program leaves to user space (a spine: replies, refused tasks,
//! metrics; it has no notices to send and no heartbeats to watch):
//! * **Replies**: the program sends a reply on to its client itself when it
//!   knows the application's route and the reply came from the worker's
//!   registered address (no fault injection configured); the ones it passed
//!   up after updating its state go on to their clients from here by the
//!   same routes, without a second scheduling pass. Liveness and the
//!   workers' queue-length gauges come from their KeepAlives either way.
//! * **Tasks**, multi-packet ones included (the program keeps §A.4's
//!   connection table), never reach the socket unless the program could not
//!   parse them (IP options, a fragment) or is not attached; those are
//!   refused with a failed reply, counted as the runtime drop
//!   `xdp_passed_task` and logged: never scheduled beside the program,
//!   whose state would then be wrong.
//! * **Notices** the program queued go to the linked spine as the datagrams
//!   the socket daemon sends (§3.4).
//! * **Control**: the sans-IO leaf of the instance is the control plane's
//!   view. Worker add/remove (the controller's pushes, the heartbeat
//!   failure detector) changes it as in the socket daemon; the change is then
//!   installed into the maps and the spine resynchronised (§A.3).
//! * **Metrics**: the program's `counters` map as
//!   `netsched_xdp_events_total{event}` beside the daemon's own series.

use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, UdpSocket};
use std::time::{Duration, Instant};

use netsched_core::dataplane::{Action, Outbox};
use netsched_core::{Nanos, Plane, Upstream};
use netsched_proto::{task_id, HorusBody, Message};
use netsched_xdp::{
    ConnCounters, SpineCounters, WorkerAddr, XdpCounters, XdpFlags, XdpLeaf, XdpSpine,
};

use super::slots::TX_REPLY;
use super::{Pkt, RuntimeDrop, SwitchDaemon};
use crate::config::{Role, SwitchConfig, XdpCpus, XdpMode};
use crate::error::Error;
use crate::metrics::{Kind, Registry, Slot};

/// How long start-up waits for a worker's MAC to resolve.
const NEIGHBOUR_WAIT: Duration = Duration::from_secs(3);

/// The leaf or spine is always the daemon's one instance (config validation).
const LEAF: usize = 0;

/// `XdpCounters`' fields in the order of `netsched_xdp_events_total`.
const EVENTS: [&str; 14] = [
    "dispatch_idle",
    "dispatch_sampled",
    "resubmissions",
    "stale_idle_entries",
    "relisted_after_reorder",
    "forgotten_lost",
    "drop_no_nodes",
    "drop_overflow",
    "drop_unknown_node",
    "passed",
    "replies",
    "notices_lost",
    "seal_failed",
    "replies_forwarded",
];

fn event_values(c: &XdpCounters) -> [u64; 14] {
    [
        c.dispatch_idle,
        c.dispatch_sampled,
        c.resubmissions,
        c.stale_idle_entries,
        c.relisted_after_reorder,
        c.forgotten_lost,
        c.drop_no_nodes,
        c.drop_overflow,
        c.drop_unknown_node,
        c.passed,
        c.replies,
        c.notices_lost,
        c.seal_failed,
        c.replies_forwarded,
    ]
}

/// `ConnCounters`' fields (§A.4's connection table, either role), after
/// the role's own in `netsched_xdp_events_total`.
const CONN_EVENTS: [&str; 3] = ["conn_followed", "drop_no_affinity", "conn_overflows"];

fn conn_event_values(c: &ConnCounters) -> [u64; 3] {
    [c.followed, c.drop_no_affinity, c.overflows]
}

/// `SpineCounters`' fields in the order of `netsched_xdp_events_total`.
const SPINE_EVENTS: [&str; 17] = [
    "dispatch_idle",
    "dispatch_sampled",
    "resubmissions",
    "drop_no_nodes",
    "drop_unknown_node",
    "stale_idle_updates",
    "drop_lock_held",
    "drop_overflow",
    "idle_adds",
    "idle_removes",
    "load_updates",
    "passed",
    "drop_unregistered",
    "drop_unsealed",
    "drop_bad_seal",
    "drop_replayed",
    "expired",
];

fn spine_event_values(c: &SpineCounters) -> [u64; 17] {
    [
        c.dispatch_idle,
        c.dispatch_sampled,
        c.resubmissions,
        c.drop_no_nodes,
        c.drop_unknown_node,
        c.stale_idle_updates,
        c.drop_lock_held,
        c.drop_overflow,
        c.idle_adds,
        c.idle_removes,
        c.load_updates,
        c.passed,
        c.drop_unregistered,
        c.drop_unsealed,
        c.drop_bad_seal,
        c.drop_replayed,
        c.expired,
    ]
}

/// The program the daemon attached: the instance's role.
pub(super) enum Program {
    Leaf(XdpLeaf),
    Spine(XdpSpine),
}

impl Program {
    fn reply_route(&mut self, app: u32) -> Result<Option<SocketAddrV4>, netsched_xdp::XdpError> {
        match self {
            Program::Leaf(l) => l.reply_route(app),
            Program::Spine(s) => s.reply_route(app),
        }
    }

    fn events(&mut self) -> Result<Vec<u64>, netsched_xdp::XdpError> {
        let (mut values, conn) = match self {
            Program::Leaf(l) => (event_values(&l.counters()?).to_vec(), l.conn_counters()?),
            Program::Spine(s) => (
                spine_event_values(&s.counters()?).to_vec(),
                s.conn_counters()?,
            ),
        };
        values.extend(conn_event_values(&conn));
        Ok(values)
    }

    fn runs_on(&mut self) -> Result<netsched_xdp::CpuRuns, netsched_xdp::XdpError> {
        match self {
            Program::Leaf(l) => l.runs_on(),
            Program::Spine(s) => s.runs_on(),
        }
    }
}

/// The loaded, attached program and what the daemon keeps beside it.
pub(super) struct XdpPath {
    program: Program,
    interface: String,
    /// The interface's MAC: forwarded tasks leave from it.
    mac: [u8; 6],
    /// The downstream nodes' addresses (workers, or a spine's leaves).
    nodes: Vec<WorkerAddr>,
    /// The control view when it was last installed: live nodes, and (at a
    /// spine) each rack's live workers, whose 1/w the spine adds per task.
    installed_alive: Vec<bool>,
    installed_weights: Vec<u32>,
    events: Vec<Slot>,
    reinstalls: Slot,
    /// Per CPU: packets the steering program took, packets the scheduler ran.
    cpu_packets: Vec<[Slot; 2]>,
    /// Passed-up tasks refused so far (the log says the first and then
    /// every 1000th, not one line per datagram).
    refused: u64,
}

impl XdpPath {
    /// Loads the program, installs the instance's (fresh) leaf, attaches it.
    pub(super) fn start(
        cfg: &SwitchConfig,
        plane: &Plane,
        alive: &[bool],
        weights: &[u32],
        notice_key: Option<[u8; 16]>,
        reg: &mut Registry,
    ) -> Result<Self, Error> {
        let xcfg = cfg.xdp.as_ref().expect("validated: datapath xdp has [xdp]");
        let Ok(SocketAddr::V4(listen)) = cfg.listen.parse::<SocketAddr>() else {
            unreachable!("validated: an IPv4 listen address");
        };
        let interface = xcfg.interface.clone();
        let mac = netsched_xdp::interface_mac(&interface).map_err(|e| Error::io(&interface, e))?;
        let downstream = &cfg.instances[LEAF].downstream;
        let nodes = resolve_workers(&interface, downstream)?;
        let flags = match xcfg.mode {
            XdpMode::Native => XdpFlags::DRV_MODE,
            XdpMode::Generic => XdpFlags::SKB_MODE,
        };
        let (mut program, names): (Program, &[&'static str]) = match plane {
            Plane::HorusLeaf(sans_io) => {
                let mut leaf = XdpLeaf::load()?;
                leaf.set_source(listen)?;
                // Tasks to workers are sealed in the program (bpf/seal.h),
                // its counter the odd stream (crate::notice_auth).
                let start = crate::notice_auth::xdp_task_seq_start();
                leaf.set_task_key(notice_key, start)?;
                // Replies go on to their clients from the program, unless
                // injected loss must see them in the daemon's I/O layer.
                leaf.set_reply_forwarding(cfg.fault.drop_rate == 0.0)?;
                // A multi-packet task's entry records the spine it came
                // from (§A.4), numbered as the socket daemon numbers it.
                leaf.set_upstreams(&cfg.instances[LEAF].upstream)?;
                leaf.install(sans_io, mac, &nodes)?;
                (Program::Leaf(leaf), &EVENTS)
            }
            Plane::HorusSpine(sans_io) => {
                let mut spine = XdpSpine::load()?;
                spine.set_source(listen)?;
                // Sealed notices are checked in the program (bpf/seal.h):
                // the daemon never sees the well-formed ones.
                spine.set_notice_key(notice_key)?;
                spine.install(sans_io, mac, &nodes)?;
                (Program::Spine(spine), &SPINE_EVENTS)
            }
            _ => unreachable!("validated: a Horus leaf or spine"),
        };
        let (cpu, priority) = (xcfg.cpu, xcfg.realtime_priority);
        // `cpus = "all"`: no cpumap thread; the leaf or spine runs wherever
        // the frame was received, its passes under the pass lock
        // (docs/xdp.md, "Every CPU").
        let thread = match (&mut program, xcfg.cpus) {
            (Program::Leaf(l), XdpCpus::All) => {
                l.attach_every_cpu(&interface, flags)?;
                None
            }
            (Program::Spine(s), XdpCpus::All) => {
                s.attach_every_cpu(&interface, flags)?;
                None
            }
            (Program::Leaf(l), XdpCpus::One) => {
                Some(l.attach_serialised(&interface, flags, cpu, priority)?)
            }
            (Program::Spine(s), XdpCpus::One) => {
                Some(s.attach_serialised(&interface, flags, cpu, priority)?)
            }
        };
        let events = names
            .iter()
            .chain(&CONN_EVENTS)
            .map(|e| {
                reg.register(
                    "netsched_xdp_events_total",
                    "datapath xdp: the program's counters maps (dispatches by path, passes, drops, notices lost, the connection table's)",
                    Kind::Counter,
                    &[("event", e)],
                )
            })
            .collect();
        let reinstalls = reg.register(
            "netsched_xdp_reinstalls_total",
            "datapath xdp: control-plane changes installed into the program's maps",
            Kind::Counter,
            &[],
        );
        let cpus = std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .min(netsched_xdp::MAX_CPUS as usize);
        // The scheduler's series is named by its role, so a spine's runs are
        // not reported as a leaf's.
        let role = if matches!(program, Program::Leaf(_)) {
            "leaf"
        } else {
            "spine"
        };
        let cpu_packets = (0..cpus)
            .map(|cpu| {
                let cpu = cpu.to_string();
                ["steer", role].map(|label| {
                    reg.register(
                        "netsched_xdp_cpu_packets_total",
                        "datapath xdp: packets per CPU the steering program took and the scheduler (leaf or spine) ran",
                        Kind::Counter,
                        &[("program", label), ("cpu", &cpu)],
                    )
                })
            })
            .collect();
        tracing::info!(
            target: "switch",
            interface = %interface,
            mode = ?xcfg.mode,
            cpus = ?xcfg.cpus,
            cpu = xcfg.cpu,
            thread = %thread.as_ref().map_or("none (every CPU)", |t| t.name.as_str()),
            realtime_priority = ?thread.as_ref().and_then(|t| t.realtime_priority),
            nodes = nodes.len(),
            role = if matches!(program, Program::Leaf(_)) { "leaf" } else { "spine" },
            "xdp scheduler attached"
        );
        if let Some(warning) = thread.as_ref().and_then(|t| t.throttling_warning()) {
            tracing::warn!(target: "switch", "{warning}");
        }
        Ok(XdpPath {
            program,
            interface,
            mac,
            nodes,
            installed_alive: alive.to_vec(),
            installed_weights: weights.to_vec(),
            events,
            reinstalls,
            cpu_packets,
            refused: 0,
        })
    }
}

/// Each worker's MAC from the neighbour table, resolved by sending it a
/// datagram to the discard port when not there yet.
fn resolve_workers(interface: &str, downstream: &[SocketAddr]) -> Result<Vec<WorkerAddr>, Error> {
    let probe = UdpSocket::bind((Ipv4Addr::UNSPECIFIED, 0))?;
    let mut workers = Vec::with_capacity(downstream.len());
    for (node, addr) in downstream.iter().enumerate() {
        let SocketAddr::V4(a) = *addr else {
            unreachable!("validated: IPv4 workers");
        };
        let deadline = Instant::now() + NEIGHBOUR_WAIT;
        let mac = loop {
            if let Some(mac) = netsched_xdp::neighbour_mac(interface, *a.ip())
                .map_err(|e| Error::io("/proc/thread-self/net/arp", e))?
            {
                break mac;
            }
            if Instant::now() > deadline {
                return Err(Error::Protocol(format!(
                    "xdp: no MAC for worker {a} (downstream[{node}]) on {interface}: not a neighbour on that link?"
                )));
            }
            let _ = probe.send_to(&[], SocketAddrV4::new(*a.ip(), 9));
            std::thread::sleep(Duration::from_millis(20));
        };
        workers.push(WorkerAddr {
            mac,
            ip: *a.ip(),
            port: a.port(),
        });
    }
    Ok(workers)
}

impl SwitchDaemon {
    /// A datagram the program passed up (module docs).
    pub(super) fn on_xdp_passed(&mut self, data: &[u8], src: SocketAddr, now: u64) {
        let Ok(Message::Horus(m)) = Message::decode(data) else {
            return self.handle_datagram(data, src, now);
        };
        let h = m.header;
        let inst = &self.instances[LEAF];
        if inst.cfg.pool != h.pool_id {
            return self.handle_datagram(data, src, now);
        }
        match m.body {
            HorusBody::Reply(r) => {
                self.registry.inc(self.slots.rx[2]);
                if inst.cfg.role == Role::Spine {
                    // A reply passes a spine on its way to the client: from
                    // one of its leaves, with nothing to learn (dispatch.rs).
                    if !inst.cfg.downstream.contains(&src) {
                        return self.drop_rt(RuntimeDrop::UnregisteredSource);
                    }
                } else {
                    if !inst.is_node(h.src_id, src) {
                        return self.drop_rt(RuntimeDrop::UnregisteredSource);
                    }
                    if let Some(&g) = inst.qlen_gauges.get(h.src_id as usize) {
                        self.registry.set(g, h.qlen as u64);
                    }
                    self.heard_from(LEAF, h.src_id as usize, now);
                }
                let app = task_id::app_id(r.task_id);
                let route = self.xdp.as_mut().map(|x| x.program.reply_route(app));
                match route {
                    Some(Ok(Some(to))) => self.send_raw(data, SocketAddr::V4(to), TX_REPLY),
                    Some(Err(e)) => {
                        tracing::warn!(target: "switch", error = %e, "xdp: reading reply_routes");
                        self.drop_rt(RuntimeDrop::NoRoute)
                    }
                    _ => self.drop_rt(RuntimeDrop::NoRoute),
                }
            }
            HorusBody::TaskFirst(_) | HorusBody::TaskContinuation(_) => {
                let first = matches!(m.body, HorusBody::TaskFirst(_));
                self.registry.inc(self.slots.rx[if first { 0 } else { 1 }]);
                self.refuse_passed_task(Pkt::Horus(&m), src);
            }
            HorusBody::KeepAlive => {
                self.registry.inc(self.slots.rx[6]);
                if !inst.is_node(h.src_id, src) {
                    return self.drop_rt(RuntimeDrop::UnregisteredSource);
                }
                if let Some(&g) = inst.qlen_gauges.get(h.src_id as usize) {
                    self.registry.set(g, h.qlen as u64);
                }
                // The failure detector only: the heartbeat reconciliation
                // of the socket daemon would change the control view, not
                // the program's counts (the program forgets lost tasks
                // after loss_resync_ns on its own).
                self.heard_from(LEAF, h.src_id as usize, now);
            }
            _ => self.handle_datagram(data, src, now),
        }
    }

    fn refuse_passed_task(&mut self, p: Pkt<'_>, src: SocketAddr) {
        let Some(x) = self.xdp.as_mut() else { return };
        x.refused += 1;
        if x.refused % 1000 == 1 {
            tracing::warn!(
                target: "switch",
                %src,
                refused = x.refused,
                "xdp: task passed up (IP options, a fragment, or the program not attached); refused"
            );
        }
        self.refuse_task(p, src, RuntimeDrop::XdpPassedTask);
    }

    /// Between batches: sends the notices the program queued, installs a
    /// changed control view, and copies the counters into the metrics
    /// (`publish`: every 100 ms).
    pub(super) fn xdp_tick(&mut self, publish: bool) {
        let Some(x) = self.xdp.as_mut() else { return };
        // A spine sends no notices.
        if let Program::Leaf(leaf) = &mut x.program {
            let notices = match leaf.drain_notices() {
                Ok(n) => n,
                Err(e) => {
                    tracing::warn!(target: "switch", error = %e, "xdp: draining notices");
                    Vec::new()
                }
            };
            for notice in notices {
                self.notify(LEAF, Upstream::Linked, notice);
            }
        }
        let inst = &self.instances[LEAF];
        let x = self.xdp.as_ref().expect("xdp");
        if inst.alive != x.installed_alive || inst.rack_w != x.installed_weights {
            self.xdp_reinstall();
        }
        if publish {
            self.xdp_publish();
        }
        self.flush();
    }

    /// Soft state at an XDP spine: the control-plane timer writes its clock
    /// into the program, which forgets racks not heard from for
    /// `soft_state_ms` at its next packet (bpf/horus_spine.bpf.c).
    pub(super) fn xdp_set_clock(&mut self, now: u64) {
        let Some(XdpPath {
            program: Program::Spine(spine),
            ..
        }) = self.xdp.as_mut()
        else {
            return;
        };
        if let Err(e) = spine.set_clock(Nanos::new(now)) {
            tracing::warn!(target: "switch", error = %e, "xdp: writing the clock");
        }
    }

    /// Soft state at an XDP leaf: its registers live in the program's maps,
    /// so the refresh reads the idle list's length and the rack average
    /// there and sends what a socket leaf's refresh sends, when it is due
    /// (`HorusLeaf::control_tick_of`). The program's own memory of what it
    /// last told the spine (`leaf.spine_view`) stays as it was: its next
    /// loadUpdate is decided as before.
    pub(super) fn xdp_refresh(&mut self, now: u64) {
        let Some(XdpPath {
            program: Program::Leaf(leaf),
            ..
        }) = self.xdp.as_mut()
        else {
            return;
        };
        let Plane::HorusLeaf(sans_io) = &mut self.instances[LEAF].plane else {
            return;
        };
        // The maps are read only when a refresh is due.
        let read = || {
            let mut cell = |array| leaf.read_array(array, 1).map(|c| c[0] as u32);
            match (cell("idle.p"), cell("leaf.avg")) {
                (Ok(listed), Ok(avg)) => Some((listed, avg)),
                (Err(e), _) | (_, Err(e)) => {
                    tracing::warn!(target: "switch", error = %e, "xdp: reading the leaf's view for a refresh");
                    None
                }
            }
        };
        let mut out = Outbox::new();
        sans_io.control_tick_of(now, read, &mut out);
        for action in out.drain() {
            if let Action::Notify { to, notice } = action {
                self.notify(LEAF, to, notice);
            }
        }
    }

    /// The control view changed (a worker or, at a spine, a rack added,
    /// removed or reweighted): install it. At a leaf, soft state restarts
    /// from the view (every live worker idle, loads and outstanding tasks
    /// zero, as after a leaf controller's restart) and the spine is told the
    /// rack's state again; replies re-teach the loads. At a spine, the
    /// sans-IO spine already applied the change (§A.3: a failed leaf's rack
    /// takes no new tasks; §A.2: a rack's 1/w follows its live workers) and
    /// its registers are installed, the program's random stream and
    /// connection table aside. That spine sees no traffic (the program takes
    /// the notices), so the racks' loads and idle list restart from the
    /// control view, as the leaf's do: the leaves' next loadUpdates and idle
    /// notices, and §A.3's repair of a wrong idle pick, re-teach them.
    fn xdp_reinstall(&mut self) {
        let inst = &self.instances[LEAF];
        let x = self.xdp.as_mut().expect("xdp");
        let known = x.nodes.len();
        if inst.cfg.downstream.len() > known {
            match resolve_workers(&x.interface, &inst.cfg.downstream[known..]) {
                Ok(more) => x.nodes.extend(more),
                Err(e) => {
                    // Retried at the next tick.
                    tracing::warn!(target: "switch", error = %e, "xdp: new downstream node not installed");
                    return;
                }
            }
        }
        let installed = match (&inst.plane, &mut x.program) {
            (Plane::HorusLeaf(sans_io), Program::Leaf(leaf)) => {
                leaf.reinstall(sans_io, x.mac, &x.nodes)
            }
            (Plane::HorusSpine(sans_io), Program::Spine(spine)) => {
                spine.reinstall(sans_io, x.mac, &x.nodes)
            }
            _ => return,
        };
        if let Err(e) = installed {
            tracing::error!(target: "switch", error = %e, "xdp: installing the control view");
            return;
        }
        x.installed_alive = inst.alive.clone();
        x.installed_weights = inst.rack_w.clone();
        self.registry.inc(x.reinstalls);
        let live = inst.alive.iter().filter(|a| **a).count();
        tracing::info!(target: "switch", live, "xdp: control view installed");
        self.resync(LEAF);
    }

    pub(super) fn xdp_publish(&mut self) {
        let Some(x) = self.xdp.as_mut() else { return };
        match x.program.events() {
            Ok(values) => {
                for (slot, v) in x.events.iter().zip(values) {
                    self.registry.set(*slot, v);
                }
            }
            Err(e) => tracing::warn!(target: "switch", error = %e, "xdp: reading counters"),
        }
        if let Ok(runs) = x.program.runs_on() {
            for (cpu, [steer, leaf]) in x.cpu_packets.iter().enumerate() {
                self.registry.set(*steer, runs.steered[cpu]);
                self.registry.set(*leaf, runs.scheduler[cpu]);
            }
        }
        let Program::Leaf(leaf) = &mut x.program else {
            return;
        };
        // The rack average lives in the program (Horus A.2, 16.16 fixed point).
        if let Ok(avg) = leaf.read_array("leaf.avg", 1) {
            let tasks = avg[0] as f64 / 65536.0;
            self.registry
                .set_f64(self.instances[LEAF].load_gauge, tasks);
        }
    }
}
