//! The scheduler daemon (`netsched switch`): software spines and leaves
//! (Horus §3.5, §4.1 run the schedulers in software when no Tofino is at
//! hand) for any number of pools on one UDP socket, a spine and/or a leaf per
//! pool, for every policy the simulator has.
//!
//! The daemon is only a driver of the `netsched-core` data planes: it decodes
//! a datagram, maps it to an [`Input`], calls [`DataPlane::handle`] and
//! executes the [`Action`]s. Every scheduling choice is the data plane's. The
//! loop runs to completion per datagram: a [`Action::Resubmit`] is fed back
//! as [`Input::Resubmit`] (a real second pass, Horus §3.3, Alg. 1-2) before
//! the next datagram is read, so the packet it belongs to is still in the
//! receive buffer when the later pass dispatches it.
//!
//! Nothing is allocated per datagram: receive and send buffers, the outbox,
//! the resubmission queue and the reply-route tables (sized at start) are
//! reused.
//!
//! What the runtime adds, because UDP sockets are not switch ports:
//! * **Source checks.** A notice, reply or heartbeat must come from the
//!   address registered for the node its header names (a leaf's `src_id` at
//!   its spine, a worker's at its leaf); anything else is a counted drop. A
//!   switch gets this from its port numbers.
//! * **Instance selection.** Horus datagrams name their pool; within a pool
//!   the message kind picks the role (notices and LOAD_REPORTs to the spine,
//!   keep-alives to the leaf, replies to the instance the sender is a
//!   downstream node of) and a task goes to the instance whose configured
//!   upstream or clients list its sender (else the pool's only open
//!   instance, or its only open entry point). RackSched's wire has no pool id (one rack, one application,
//!   OSDI'20 §3.2), so its requests and replies are placed by source alone;
//!   a source that fits several instances is an `ambiguous_source` drop.
//! * **Reply routes.** A worker cannot address the client in a reply (no IP
//!   header of its own to rewrite), so each instance learns, per application
//!   id (the upper half of the task id, §3.2), where that application's
//!   tasks came from and sends its replies back there: worker → leaf → spine
//!   → client, the path a reply takes through a leaf-spine fabric anyway.
//!   Per instance, so a leaf's route to its spine and the co-hosted spine's
//!   route to the client do not overwrite each other. An instance with
//!   configured `clients` learns only from them and its upstream spines.
//! * **Failed replies.** A task the data plane drops (no nodes, no affinity
//!   entry, …) is answered with a failed reply naming the reason, so the
//!   client accounts for every task (DESIGN.md: nothing accepted is lost
//!   silently).

use std::collections::{HashMap, VecDeque};
use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use netsched_core::rng::Rng;
use netsched_core::{
    Action, Control, DataPlane, Decision, DropReason, Input, Layer, Notice, Outbox, Plane,
    Resubmit, TaskMeta, Upstream,
};
use netsched_proto::{
    task_id, DecodeError, HorusBody, HorusHeader, HorusMessage, HorusReply, HorusTask, Message,
    ReplyStatus, MAX_DATAGRAM,
};

use crate::config::{PoolConfig, Role, SwitchConfig};
use crate::fault::Fault;
use crate::metrics::{Kind, Registry, Slot};
use crate::net::{self, Clock};

// RackSched's own wire family (REQF/REQR/REP, LOAD_REPORT), packets parked by
// queueing baselines, and the zero-delay feed of the ideal baselines: a child
// module for the same reason.
#[path = "racksched_wire.rs"]
mod racksched_wire;
pub use racksched_wire::RS_FAILED_CLASS;

/// The task packet a pass belongs to, in its wire family.
#[derive(Clone, Copy)]
enum Pkt<'a> {
    Horus(&'a HorusMessage<'a>),
    /// A RackSched REQF/REQR, forwarded byte for byte (it has no field a
    /// scheduler rewrites).
    RackSched(&'a [u8]),
}

// Controller hooks (configuration pushes, status reports): a child module so
// they can reach the instances without widening their visibility.
#[path = "controller_hooks.rs"]
mod controller_hooks;

#[path = "reply_routes.rs"]
mod reply_routes;
use reply_routes::{ReplyRoutes, RouteRefused};

#[path = "in_flight.rs"]
mod in_flight;
use in_flight::InFlight;

/// Why the runtime (not a data plane) dropped a datagram.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(usize)]
pub enum RuntimeDrop {
    /// `DecodeError::Truncated`.
    Truncated,
    /// `DecodeError::UnknownType`.
    UnknownType,
    /// `DecodeError::Inconsistent` (also a bad version or family nibble).
    Inconsistent,
    /// `DecodeError::TrailingBytes`.
    TrailingBytes,
    /// A datagram of a family this daemon does not serve: pull scheduling
    /// (`netsched switch` with a pull config runs `crate::pull::switch`).
    UnsupportedFamily,
    /// No instance of this daemon serves the header's pool.
    UnknownPool,
    /// A notice, reply or heartbeat whose source address is not the one
    /// registered for the node it names, or a task from an address that is
    /// neither a configured client nor an upstream spine of a closed
    /// instance (spoofed or misconfigured).
    UnregisteredSource,
    /// A datagram whose source fits more than one instance, with nothing on
    /// the wire to tell them apart (RackSched family, or two open entry
    /// instances of one pool).
    AmbiguousSource,
    /// A task of a new application at an instance whose reply-route table
    /// is full (`max_routes`) of routes still in use.
    RouteTableFull,
    /// A task of a new application from an unprivileged source that already
    /// holds `max_routes_per_source` routes.
    RouteSourceLimit,
    /// A message this role never receives (a heartbeat at a spine, …).
    WrongRole,
    /// A reply for an application whose tasks never passed here.
    NoRoute,
    /// A leaf notice with no upstream spine configured (standalone leaf).
    NoUpstream,
    /// A dispatch not caused by a task packet (queueing baselines are not
    /// hosted); counted rather than invented.
    NoPacket,
    /// Encoding failed (cannot happen for decoded input; counted anyway).
    Encode,
    /// The kernel refused the send (buffer full, unreachable).
    Send,
}

impl RuntimeDrop {
    pub const ALL: [RuntimeDrop; 16] = [
        RuntimeDrop::Truncated,
        RuntimeDrop::UnknownType,
        RuntimeDrop::Inconsistent,
        RuntimeDrop::TrailingBytes,
        RuntimeDrop::UnsupportedFamily,
        RuntimeDrop::UnknownPool,
        RuntimeDrop::UnregisteredSource,
        RuntimeDrop::AmbiguousSource,
        RuntimeDrop::RouteTableFull,
        RuntimeDrop::RouteSourceLimit,
        RuntimeDrop::WrongRole,
        RuntimeDrop::NoRoute,
        RuntimeDrop::NoUpstream,
        RuntimeDrop::NoPacket,
        RuntimeDrop::Encode,
        RuntimeDrop::Send,
    ];

    pub fn name(self) -> &'static str {
        match self {
            RuntimeDrop::Truncated => "truncated",
            RuntimeDrop::UnknownType => "unknown_type",
            RuntimeDrop::Inconsistent => "inconsistent",
            RuntimeDrop::TrailingBytes => "trailing_bytes",
            RuntimeDrop::UnsupportedFamily => "unsupported_family",
            RuntimeDrop::UnknownPool => "unknown_pool",
            RuntimeDrop::UnregisteredSource => "unregistered_source",
            RuntimeDrop::AmbiguousSource => "ambiguous_source",
            RuntimeDrop::RouteTableFull => "route_table_full",
            RuntimeDrop::RouteSourceLimit => "route_source_limit",
            RuntimeDrop::WrongRole => "wrong_role",
            RuntimeDrop::NoRoute => "no_route",
            RuntimeDrop::NoUpstream => "no_upstream",
            RuntimeDrop::NoPacket => "no_packet",
            RuntimeDrop::Encode => "encode",
            RuntimeDrop::Send => "send",
        }
    }
}

const RX_TYPES: [&str; 8] = [
    "task_first",
    "task_continuation",
    "reply",
    "idle_add",
    "idle_remove",
    "load_update",
    "keep_alive",
    "invalid",
];
const TX_TYPES: [&str; 6] = [
    "task",
    "reply",
    "failed_reply",
    "idle_add",
    "idle_remove",
    "load_update",
];
const TX_TASK: usize = 0;
const TX_REPLY: usize = 1;
const TX_FAILED: usize = 2;

/// Receive buffer per datagram: larger than any valid one.
const RX_SLOT: usize = 2048;

/// Pre-registered metric slots of a switch daemon.
struct Slots {
    rx: [Slot; 8],
    tx: [Slot; 6],
    decisions: [Slot; 3],
    resubmissions: Slot,
    queued: Slot,
    failed_workers: Slot,
    recovered_workers: Slot,
    stale_replies: Slot,
    runtime_drops: Vec<Slot>,
    dp_drops: Vec<Slot>,
    control: controller_hooks::ControlSlots,
}

struct Instance {
    cfg: PoolConfig,
    plane: Plane,
    /// Last queue length each downstream worker reported (leaf), for the gauge.
    qlen_gauges: Vec<Slot>,
    idle_gauge: Slot,
    load_gauge: Slot,
    passes_gauge: [Slot; 2],
    live_gauge: Slot,
    /// Leaf: when each worker was last heard from (ns), and whether the data
    /// plane currently has it.
    last_seen: Vec<u64>,
    alive: Vec<bool>,
    /// Tasks dispatched to each node and not yet answered: the zero-delay
    /// view fed to `jsq` and `pow2-instant` (racksched_wire.rs).
    outstanding: Vec<u32>,
    /// Tasks arrive in RackSched's family: notices go up as LOAD_REPORTs.
    rs_wire: bool,
    /// Nodes the controller allows (leaf: workers not removed by the admin
    /// API; spine: racks it admitted). All at start.
    enabled: Vec<bool>,
    /// Spine: workers per rack behind the installed 1/w (§A.2).
    rack_w: Vec<u32>,
    /// Application id → where its tasks came from (reply route).
    routes: ReplyRoutes,
    /// Leaf: dispatches not yet answered, so only a reply that answers one
    /// reaches the data plane (in_flight.rs).
    in_flight: InFlight,
}

impl Instance {
    /// Is `src` the registered address of downstream node `node`?
    #[inline]
    fn is_node(&self, node: u16, src: SocketAddr) -> bool {
        self.cfg.downstream.get(node as usize) == Some(&src)
    }

    /// Is `src` a configured upstream spine or client of this instance?
    #[inline]
    fn permits(&self, src: SocketAddr) -> bool {
        self.cfg.upstream.contains(&src) || self.cfg.clients.contains(&src)
    }

    /// Open: no client list, tasks from anyone are accepted.
    #[inline]
    fn is_open(&self) -> bool {
        self.cfg.clients.is_empty()
    }

    /// Where clients submit: a spine, or a leaf with no spine above it.
    #[inline]
    fn is_entry(&self) -> bool {
        self.cfg.role == Role::Spine || self.cfg.upstream.is_empty()
    }
}

/// Pool id → instance index + 1 per role (0: not hosted).
const SPINE: usize = 0;
const LEAF: usize = 1;

fn role_slot(role: Role) -> usize {
    match role {
        Role::Spine => SPINE,
        Role::Leaf => LEAF,
    }
}

/// A scheduler daemon hosting one instance per configured pool.
pub struct SwitchDaemon {
    sock: UdpSocket,
    clock: Clock,
    instances: Vec<Instance>,
    /// Pool id → [spine, leaf] instance index + 1 (0: not hosted). 256 KiB,
    /// no hashing.
    pool_index: Vec<[u16; 2]>,
    registry: Arc<Registry>,
    slots: Slots,
    /// recvmmsg buffers: one system call per batch of datagrams.
    rxb: net::Mmsg,
    /// sendmmsg buffers: sends of a batch leave in one system call at its end.
    txb: net::Mmsg,
    resubmits: VecDeque<Resubmit>,
    fail_replies: bool,
    /// Centralized controller: status goes there, configuration only comes
    /// from there.
    controller: Option<SocketAddr>,
    /// Seals status reports and opens configuration pushes (with a
    /// controller): the cluster key, epoch and sequence numbers.
    control_auth: Option<controller_hooks::ControlAuth>,
    status_ns: u64,
    fault: Fault,
    /// Task packets a queueing data plane (central, r2p2) buffered, by task id,
    /// until it dispatches them; `spare` recycles their buffers.
    parked: HashMap<u64, Vec<u8>>,
    spare: Vec<Vec<u8>>,
    rs_slots: racksched_wire::RsSlots,
}

impl SwitchDaemon {
    /// Builds the daemon on an already bound socket (made non-blocking here),
    /// so tests and the benchmark can pick ports before writing configs.
    pub fn new(cfg: &SwitchConfig, sock: UdpSocket) -> Result<Self, String> {
        cfg.validate()?;
        net::prepare(&sock).map_err(|e| e.to_string())?;
        let mut reg = Registry::new();
        let rx = RX_TYPES.map(|t| {
            reg.register(
                "netsched_rx_packets_total",
                "Datagrams received, by Horus message type",
                Kind::Counter,
                &[("type", t)],
            )
        });
        let tx = TX_TYPES.map(|t| {
            reg.register(
                "netsched_tx_packets_total",
                "Datagrams sent, by message type",
                Kind::Counter,
                &[("type", t)],
            )
        });
        let decisions = ["idle", "sampled", "other"].map(|d| {
            reg.register(
                "netsched_decisions_total",
                "Tasks dispatched, by how the data plane chose the node",
                Kind::Counter,
                &[("decision", d)],
            )
        });
        let resubmissions = reg.register(
            "netsched_resubmissions_total",
            "Resubmission passes run (Horus Alg. 1/2 second passes)",
            Kind::Counter,
            &[],
        );
        let queued = reg.register(
            "netsched_queued_total",
            "Tasks buffered by a data plane",
            Kind::Counter,
            &[],
        );
        let failed_workers = reg.register(
            "netsched_worker_failures_total",
            "Workers removed after the heartbeat timeout (Horus A.3)",
            Kind::Counter,
            &[],
        );
        let recovered_workers = reg.register(
            "netsched_worker_recoveries_total",
            "Removed workers re-added when heard from again",
            Kind::Counter,
            &[],
        );
        let stale_replies = reg.register(
            "netsched_stale_replies_total",
            "Worker replies that answer no task in flight (duplicated, stale or forged): forwarded, not fed to the data plane",
            Kind::Counter,
            &[],
        );
        let runtime_drops = RuntimeDrop::ALL
            .iter()
            .map(|r| {
                reg.register(
                    "netsched_drops_total",
                    "Datagrams or tasks dropped, by who dropped them and why",
                    Kind::Counter,
                    &[("by", "runtime"), ("reason", r.name())],
                )
            })
            .collect();
        let dp_drops = DropReason::ALL
            .iter()
            .map(|r| {
                reg.register(
                    "netsched_drops_total",
                    "Datagrams or tasks dropped, by who dropped them and why",
                    Kind::Counter,
                    &[("by", "dataplane"), ("reason", r.name())],
                )
            })
            .collect();
        let mut instances = Vec::new();
        let mut pool_index = vec![[0u16; 2]; 1 << 16];
        for (i, pc) in cfg.instances.iter().enumerate() {
            let n = pc.downstream.len() as u32;
            // One stream per pool so instances do not move in lockstep.
            let seed = Rng::derive(cfg.seed, pc.pool as u64).next_u64();
            let layer = match pc.role {
                Role::Spine => Layer::Spine,
                Role::Leaf => Layer::Leaf,
            };
            // A spine's nodes stand for their racks' workers (§A.2 1/w).
            let weights = match pc.role {
                Role::Spine if !pc.rack_workers.is_empty() => pc.rack_workers.clone(),
                _ => vec![1; n as usize],
            };
            let plane = Plane::build(pc.policy, layer, &weights, seed, &pc.plane_params());
            let pool = pc.pool.to_string();
            // Where a pool's spine and leaf share this daemon, a `role` label
            // keeps their series apart; elsewhere `{pool}` alone names one.
            let both_roles = cfg
                .instances
                .iter()
                .any(|o| o.pool == pc.pool && o.role != pc.role);
            let role = match pc.role {
                Role::Spine => "spine",
                Role::Leaf => "leaf",
            };
            let labels = |extra: &[(&'static str, &str)]| -> Vec<(&str, String)> {
                let mut l = vec![("pool", pool.clone())];
                if both_roles {
                    l.push(("role", role.to_string()));
                }
                l.extend(extra.iter().map(|(k, v)| (*k, v.to_string())));
                l
            };
            let reg_gauge = |reg: &mut Registry,
                             name: &'static str,
                             help: &'static str,
                             extra: &[(&'static str, &str)]| {
                let l = labels(extra);
                let l: Vec<(&str, &str)> = l.iter().map(|(k, v)| (*k, v.as_str())).collect();
                reg.register(name, help, Kind::Gauge, &l)
            };
            let qlen_gauges = if pc.role == Role::Leaf {
                (0..n)
                    .map(|node| {
                        reg_gauge(
                            &mut reg,
                            "netsched_worker_qlen",
                            "Queue length a worker last reported (reply or keep-alive)",
                            &[("node", &node.to_string())],
                        )
                    })
                    .collect()
            } else {
                Vec::new()
            };
            let idle_gauge = reg_gauge(
                &mut reg,
                "netsched_idle_nodes",
                "Length of the data plane's idle list (Horus idleNodes)",
                &[],
            );
            let load_gauge = reg_gauge(
                &mut reg,
                "netsched_rack_load_fixed16",
                "Leaf: rack average queue length, 16.16 fixed point (Horus A.2)",
                &[],
            );
            let passes_gauge = ["first", "resubmit"].map(|k| {
                reg_gauge(
                    &mut reg,
                    "netsched_pipeline_passes",
                    "Pipeline passes the data plane ran",
                    &[("pass", k)],
                )
            });
            let live_gauge = reg_gauge(
                &mut reg,
                "netsched_live_nodes",
                "Downstream nodes the data plane schedules over",
                &[],
            );
            reg.set(live_gauge, n as u64);
            pool_index[pc.pool as usize][role_slot(pc.role)] = (i + 1) as u16;
            instances.push(Instance {
                cfg: pc.clone(),
                plane,
                qlen_gauges,
                idle_gauge,
                load_gauge,
                passes_gauge,
                live_gauge,
                last_seen: vec![0; n as usize],
                alive: vec![true; n as usize],
                enabled: vec![true; n as usize],
                rack_w: if pc.rack_workers.is_empty() {
                    vec![1; n as usize]
                } else {
                    pc.rack_workers.clone()
                },
                outstanding: vec![0; n as usize],
                rs_wire: false,
                routes: ReplyRoutes::new(
                    pc.max_routes,
                    cfg.max_routes_per_source,
                    cfg.route_idle_ms.saturating_mul(1_000_000),
                ),
                // Enough for every worker's full queue (worker.rs).
                in_flight: InFlight::new(if pc.role == Role::Leaf {
                    (n as usize * crate::worker::QUEUE_CAPACITY).min(1 << 20)
                } else {
                    0
                }),
            });
        }
        let rs_slots = racksched_wire::register_rs(&mut reg);
        let control = controller_hooks::ControlSlots::register(&mut reg);
        let control_auth = match cfg.controller {
            Some(_) => {
                let local = sock.local_addr().map_err(|e| e.to_string())?;
                Some(controller_hooks::ControlAuth::new(
                    cfg.cluster_key()?,
                    local,
                ))
            }
            None => None,
        };
        Ok(SwitchDaemon {
            sock,
            clock: Clock::new(),
            instances,
            pool_index,
            registry: Arc::new(reg),
            slots: Slots {
                rx,
                tx,
                decisions,
                resubmissions,
                queued,
                failed_workers,
                recovered_workers,
                stale_replies,
                runtime_drops,
                dp_drops,
                control,
            },
            // A datagram longer than a slot is truncated by the kernel and
            // then rejected by the decoder (counted).
            rxb: net::Mmsg::new(cfg.batch, RX_SLOT),
            txb: net::Mmsg::new((cfg.batch * 4).max(64), MAX_DATAGRAM),
            resubmits: VecDeque::with_capacity(Outbox::CAPACITY * 4),
            fail_replies: cfg.fail_replies,
            controller: cfg.controller,
            control_auth,
            status_ns: cfg.status_ms.saturating_mul(1_000_000),
            fault: Fault::new(&cfg.fault),
            parked: HashMap::new(),
            spare: Vec::new(),
            rs_slots,
        })
    }

    /// Binds `cfg.listen` and builds the daemon.
    pub fn bind(cfg: &SwitchConfig) -> Result<Self, String> {
        let sock = UdpSocket::bind(&cfg.listen).map_err(|e| format!("{}: {e}", cfg.listen))?;
        Self::new(cfg, sock)
    }

    /// This daemon's epoch in the sealed control protocol (with a
    /// controller): pushes to it must name it.
    pub fn control_epoch(&self) -> Option<u64> {
        self.control_auth.as_ref().map(|a| a.epoch())
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.sock.local_addr().expect("bound socket")
    }

    pub fn registry(&self) -> Arc<Registry> {
        self.registry.clone()
    }

    /// Runs until `stop` is set: batched non-blocking receive, park in
    /// `poll` when the socket is empty.
    pub fn run(&mut self, stop: &AtomicBool) -> io::Result<()> {
        let mut last_gauges = 0u64;
        let mut last_check = 0u64;
        let mut last_status = 0u64;
        while !stop.load(Ordering::Relaxed) {
            let got = self.poll_batch()?;
            if got == 0 {
                net::wait_readable(&self.sock, Duration::from_millis(10));
            }
            let now = self.clock.now_ns();
            if now.saturating_sub(last_check) >= 5_000_000 {
                last_check = now;
                self.check_liveness(now);
                self.flush();
            }
            if self.controller.is_some() && now.saturating_sub(last_status) >= self.status_ns {
                last_status = now;
                self.send_status();
            }
            if now.saturating_sub(last_gauges) >= 100_000_000 {
                last_gauges = now;
                self.publish_gauges();
            }
        }
        self.publish_gauges();
        Ok(())
    }

    /// Parks until a datagram is queued or `timeout` passed.
    pub fn wait(&self, timeout: Duration) {
        net::wait_readable(&self.sock, timeout);
    }

    /// Reads (one `recvmmsg`) and handles up to `batch` datagrams without
    /// blocking, then sends what they produced (one `sendmmsg`); returns how
    /// many datagrams it handled.
    pub fn poll_batch(&mut self) -> io::Result<usize> {
        let mut rxb = std::mem::take(&mut self.rxb);
        let r = rxb.recv(&self.sock);
        let n = *r.as_ref().unwrap_or(&0);
        if n > 0 {
            let now = self.clock.now_ns();
            for k in 0..n {
                match rxb.get(k) {
                    (data, Some(src)) if crate::controller_proto::is_control(data) => {
                        self.on_control(data, src, now)
                    }
                    (data, Some(_)) if self.fault.drop_now(now) => {
                        self.slots.control.fault_drops.count(&self.registry, data)
                    }
                    (data, Some(src)) => self.handle_datagram(data, src, now),
                    (_, None) => self.drop_rt(RuntimeDrop::Inconsistent),
                }
            }
        }
        self.rxb = rxb;
        self.flush();
        r
    }

    /// Sends every queued datagram.
    pub fn flush(&mut self) {
        let SwitchDaemon {
            txb,
            sock,
            registry,
            slots,
            ..
        } = self;
        txb.flush(sock, |tag, ok| {
            if ok {
                registry.inc(slots.tx[tag as usize]);
            } else {
                registry.inc(slots.runtime_drops[RuntimeDrop::Send as usize]);
            }
        });
    }

    /// Copies data-plane state into the gauges (the metrics thread must not
    /// touch the data planes).
    pub fn publish_gauges(&mut self) {
        for inst in &mut self.instances {
            if let Some(n) = inst.plane.idle_len() {
                self.registry.set(inst.idle_gauge, n as u64);
            }
            if let Plane::HorusLeaf(l) = &inst.plane {
                self.registry.set(inst.load_gauge, l.average_load() as u64);
            }
            let (f, r) = inst.plane.passes();
            self.registry.set(inst.passes_gauge[0], f);
            self.registry.set(inst.passes_gauge[1], r);
        }
    }

    #[inline]
    fn drop_rt(&self, r: RuntimeDrop) {
        self.registry.inc(self.slots.runtime_drops[r as usize]);
    }

    /// One datagram, run to completion (including its resubmission passes),
    /// and its output sent.
    pub fn on_datagram(&mut self, data: &[u8], src: SocketAddr, now: u64) {
        if crate::controller_proto::is_control(data) {
            self.on_control(data, src, now);
            return self.flush();
        }
        self.handle_datagram(data, src, now);
        self.flush();
    }

    /// One datagram, run to completion; output stays queued until `flush`.
    fn handle_datagram(&mut self, data: &[u8], src: SocketAddr, now: u64) {
        let msg = match Message::decode(data) {
            Ok(Message::Horus(m)) => m,
            Ok(Message::RackSched(m)) => return self.handle_racksched(data, m, src, now),
            // Pull scheduling runs in its own daemon (crate::pull::switch).
            Ok(Message::Draconis(_)) => {
                self.registry.inc(self.slots.rx[7]);
                return self.drop_rt(RuntimeDrop::UnsupportedFamily);
            }
            Err(e) => {
                self.registry.inc(self.slots.rx[7]);
                return self.drop_rt(match e {
                    DecodeError::Truncated { .. } => RuntimeDrop::Truncated,
                    DecodeError::UnknownType(_) => RuntimeDrop::UnknownType,
                    DecodeError::Inconsistent(_) => RuntimeDrop::Inconsistent,
                    DecodeError::TrailingBytes => RuntimeDrop::TrailingBytes,
                });
            }
        };
        self.registry
            .inc(self.slots.rx[msg.body.horus_type().code() as usize - 1]);
        let h = msg.header;
        let pool = h.pool_id;
        if self.pool_index[pool as usize] == [0, 0] {
            return self.drop_rt(RuntimeDrop::UnknownPool);
        }
        match msg.body {
            HorusBody::TaskFirst(t) | HorusBody::TaskContinuation(t) => {
                let i = match self.task_instance(Some(pool), src) {
                    Ok(i) => i,
                    Err(r) => return self.drop_rt(r),
                };
                if let Err(r) = self.learn_route(i, task_id::app_id(t.task_id), src, now) {
                    return self.refuse_task(Pkt::Horus(&msg), src, r);
                }
                let inst = &self.instances[i];
                // §A.4: a leaf's connection table remembers which spine a
                // task came from.
                let upstream = inst
                    .cfg
                    .upstream
                    .iter()
                    .position(|a| *a == src)
                    .unwrap_or(0) as u32;
                let meta = TaskMeta {
                    id: t.task_id,
                    first: matches!(msg.body, HorusBody::TaskFirst(_)),
                    last: t.is_last,
                    idle_selected: t.idle_selected,
                    upstream,
                    class: t.class,
                };
                self.run_passes(i, now, Input::Task(meta), Some(Pkt::Horus(&msg)));
            }
            HorusBody::Reply(r) => {
                // A worker's reply belongs to the pool's leaf, a leaf's to
                // the pool's spine: the sender is a downstream node of one.
                let leaf = self.hosted(pool, Role::Leaf);
                let spine = self.hosted(pool, Role::Spine);
                let i = match (leaf, spine) {
                    (Some(l), _) if self.instances[l].is_node(h.src_id, src) => l,
                    (_, Some(s)) if self.instances[s].cfg.downstream.contains(&src) => s,
                    _ => return self.drop_rt(RuntimeDrop::UnregisteredSource),
                };
                let inst = &self.instances[i];
                match inst.cfg.role {
                    Role::Leaf => {
                        if let Some(&g) = inst.qlen_gauges.get(h.src_id as usize) {
                            self.registry.set(g, h.qlen as u64);
                        }
                        self.heard_from(i, h.src_id as usize, now);
                        // Only a reply that answers a dispatch may move the
                        // worker's load and idle state (in_flight.rs).
                        let inst = &mut self.instances[i];
                        if !inst.in_flight.answer(r.task_id, h.src_id) {
                            self.registry.inc(self.slots.stale_replies);
                            self.forward_reply(i, data, r.task_id, TX_REPLY);
                            return;
                        }
                        // §3.4: the reply carries the worker's queue length.
                        let input = Input::Reply {
                            node: h.src_id as u32,
                            qlen: h.qlen as u32,
                            class: 0,
                            task: r.task_id,
                        };
                        self.run_passes(i, now, input, None);
                        self.oracle_replied(i, h.src_id as u32, now);
                    }
                    Role::Spine => {
                        // Replies pass through on their way to the client; a
                        // spine's data plane has nothing to learn from them,
                        // except the zero-delay feed of ideal baselines.
                        if let Some(rack) = inst.cfg.downstream.iter().position(|a| *a == src) {
                            self.oracle_replied(i, rack as u32, now);
                        }
                    }
                }
                self.forward_reply(i, data, r.task_id, TX_REPLY);
            }
            HorusBody::IdleAdd | HorusBody::IdleRemove | HorusBody::LoadUpdate { .. } => {
                // Notices go up to a spine (§3.4).
                let Some(i) = self.hosted(pool, Role::Spine) else {
                    return self.drop_rt(RuntimeDrop::WrongRole);
                };
                if !self.instances[i].is_node(h.src_id, src) {
                    return self.drop_rt(RuntimeDrop::UnregisteredSource);
                }
                let node = h.src_id as u32;
                let input = match msg.body {
                    HorusBody::IdleAdd => Input::IdleAdd { node },
                    HorusBody::IdleRemove => Input::IdleRemove { node },
                    HorusBody::LoadUpdate { load } => Input::LoadUpdate { node, load },
                    _ => unreachable!(),
                };
                self.run_passes(i, now, input, None);
            }
            HorusBody::KeepAlive => {
                // Heartbeats feed a leaf controller (§A.3).
                let Some(i) = self.hosted(pool, Role::Leaf) else {
                    return self.drop_rt(RuntimeDrop::WrongRole);
                };
                let inst = &self.instances[i];
                if !inst.is_node(h.src_id, src) {
                    return self.drop_rt(RuntimeDrop::UnregisteredSource);
                }
                // The failure detector's, and the leaf's reconciliation.
                if let Some(&g) = inst.qlen_gauges.get(h.src_id as usize) {
                    self.registry.set(g, h.qlen as u64);
                }
                self.heard_from(i, h.src_id as usize, now);
                // The heartbeat's queue length is the truth the leaf's
                // counters are reconciled with (issue 16 item 5).
                if let Plane::HorusLeaf(leaf) = &mut self.instances[i].plane {
                    let mut out = Outbox::new();
                    leaf.control_reconcile_worker(h.src_id as u32, h.qlen as u32, now, &mut out);
                    self.execute(i, &mut out, false, None);
                }
            }
        }
    }

    /// The instance of `pool` in `role`, if this daemon hosts it.
    #[inline]
    fn hosted(&self, pool: u16, role: Role) -> Option<usize> {
        match self.pool_index[pool as usize][role_slot(role)] {
            0 => None,
            i => Some(i as usize - 1),
        }
    }

    /// The instance a task from `src` is for, among those of `pool` (Horus
    /// wire) or all of them (RackSched wire, which names no pool): the one
    /// whose upstream spines or clients list `src`; failing that the only
    /// open instance, or the only open entry point (a spine, or a leaf with
    /// no spine) if several are open. Allocation-free: a linear scan over a
    /// handful of instances.
    fn task_instance(&self, pool: Option<u16>, src: SocketAddr) -> Result<usize, RuntimeDrop> {
        let candidates = || {
            self.instances
                .iter()
                .enumerate()
                .filter(move |(_, inst)| pool.is_none_or(|p| inst.cfg.pool == p))
        };
        if let Some(i) = unique(candidates().filter(|(_, inst)| inst.permits(src)))? {
            return Ok(i);
        }
        let open = || candidates().filter(|(_, inst)| inst.is_open());
        match unique(open()) {
            Ok(Some(i)) => Ok(i),
            Ok(None) if candidates().next().is_none() => Err(RuntimeDrop::UnknownPool),
            Ok(None) => Err(RuntimeDrop::UnregisteredSource),
            Err(_) => unique(open().filter(|(_, inst)| inst.is_entry()))?
                .ok_or(RuntimeDrop::AmbiguousSource),
        }
    }

    /// Remembers where `app`'s replies go, if `src` may say so: a closed
    /// instance accepted the task only from a permitted source already. A
    /// source that is neither a configured client nor an upstream spine is
    /// held to its per-source share of the table.
    fn learn_route(
        &mut self,
        i: usize,
        app: u32,
        src: SocketAddr,
        now: u64,
    ) -> Result<(), RuntimeDrop> {
        let inst = &mut self.instances[i];
        let capped = !inst.permits(src);
        inst.routes
            .learn(app, src, capped, now)
            .map_err(|e| match e {
                RouteRefused::Full => RuntimeDrop::RouteTableFull,
                RouteRefused::SourceLimit => RuntimeDrop::RouteSourceLimit,
            })
    }

    /// A task whose reply route could not be learned: counted, and answered
    /// with a failed reply straight to its sender (the only address known
    /// for it), so the client learns at once instead of timing out.
    fn refuse_task(&mut self, p: Pkt<'_>, src: SocketAddr, r: RuntimeDrop) {
        self.drop_rt(r);
        if self.fail_replies {
            self.send_failed(p, src, r.name());
        }
    }

    /// Leaf controller (§A.3): a worker heard from is alive; one that was
    /// removed is added back, idle.
    fn heard_from(&mut self, i: usize, node: usize, now: u64) {
        let inst = &mut self.instances[i];
        inst.last_seen[node] = now;
        // A worker the controller removed stays out however alive it is.
        if !inst.alive[node] && inst.enabled[node] {
            inst.alive[node] = true;
            let mut out = Outbox::new();
            inst.plane.add_node(node as u32, 1, now, &mut out);
            let live = inst.alive.iter().filter(|a| **a).count() as u64;
            self.registry.set(inst.live_gauge, live);
            self.registry.inc(self.slots.recovered_workers);
            let pool = inst.cfg.pool;
            crate::metrics::log(
                "info",
                "switch",
                "worker back",
                &[("pool", &pool), ("node", &node)],
            );
            self.execute(i, &mut out, false, None);
            self.flush_resubmits(i, now);
        }
    }

    /// Runs resubmissions a control operation left queued (none today).
    fn flush_resubmits(&mut self, i: usize, now: u64) {
        if let Some(r) = self.resubmits.pop_front() {
            self.run_passes(i, now, Input::Resubmit(r), None);
        }
    }

    /// Leaf controller (§A.3): removes workers silent for longer than the
    /// heartbeat timeout. The rack's new 1/w at its spine is the centralized
    /// controller's to install (controller.rs, from the leaf's status).
    pub fn check_liveness(&mut self, now: u64) {
        for i in 0..self.instances.len() {
            let timeout = self.instances[i].cfg.heartbeat_timeout_ms * 1_000_000;
            if timeout == 0 {
                continue;
            }
            for node in 0..self.instances[i].alive.len() {
                let inst = &mut self.instances[i];
                if inst.alive[node] && now.saturating_sub(inst.last_seen[node]) > timeout {
                    inst.alive[node] = false;
                    let mut out = Outbox::new();
                    inst.plane.remove_node(node as u32, now, &mut out);
                    let live = inst.alive.iter().filter(|a| **a).count() as u64;
                    self.registry.set(inst.live_gauge, live);
                    self.registry.inc(self.slots.failed_workers);
                    let pool = inst.cfg.pool;
                    crate::metrics::log(
                        "warn",
                        "switch",
                        "worker failed: heartbeat timeout",
                        &[("pool", &pool), ("node", &node)],
                    );
                    self.execute(i, &mut out, false, None);
                    self.flush_resubmits(i, now);
                }
            }
        }
    }

    /// Feeds `input` and then every resubmission it causes, in order, before
    /// returning (run to completion).
    fn run_passes(&mut self, i: usize, now: u64, input: Input, task: Option<Pkt<'_>>) {
        let mut input = input;
        let mut out = Outbox::new();
        loop {
            let carries_task = matches!(
                input,
                Input::Task(_)
                    | Input::Resubmit(Resubmit::Retry { .. })
                    | Input::Resubmit(Resubmit::Pow2 { .. })
            );
            self.instances[i].plane.handle(now, input, &mut out);
            self.execute(i, &mut out, carries_task, task);
            match self.resubmits.pop_front() {
                Some(r) => input = Input::Resubmit(r),
                None => break,
            }
        }
    }

    /// Executes the actions in `out` (resubmissions are queued, not run).
    fn execute(&mut self, i: usize, out: &mut Outbox, carries_task: bool, task: Option<Pkt<'_>>) {
        for a in out.drain() {
            match a {
                Action::Dispatch {
                    node,
                    task: meta,
                    decision,
                } => {
                    let d = match decision {
                        Decision::Idle => 0,
                        Decision::Sampled => 1,
                        Decision::Other => 2,
                    };
                    self.registry.inc(self.slots.decisions[d]);
                    let inst = &mut self.instances[i];
                    if inst.cfg.role == Role::Leaf {
                        let now = self.clock.now_ns();
                        inst.in_flight.dispatched(meta.id, node as u16, now);
                    }
                    self.dispatch(i, node, meta, task);
                    self.oracle_dispatched(i, node);
                }
                Action::Resubmit(r) => {
                    self.registry.inc(self.slots.resubmissions);
                    self.resubmits.push_back(r);
                }
                Action::Notify { to, notice } => self.notify(i, to, notice),
                Action::Drop(reason) => {
                    let k = DropReason::ALL.iter().position(|r| *r == reason);
                    self.registry.inc(self.slots.dp_drops[k.unwrap_or(0)]);
                    if carries_task && self.fail_replies {
                        if let Some(m) = task {
                            self.fail_task(i, m, reason);
                        }
                    }
                }
                Action::Queued => {
                    self.registry.inc(self.slots.queued);
                    if let Some(p) = task {
                        self.park(p);
                    }
                }
            }
        }
    }

    /// Forwards the task packet being processed to downstream `node`, with
    /// the header's `dst_id` and the idleSelected mark set by the data plane.
    fn dispatch(&mut self, i: usize, node: u32, meta: TaskMeta, task: Option<Pkt<'_>>) {
        let m = match task {
            Some(Pkt::Horus(m)) if m.task_id() == Some(meta.id) => m,
            Some(Pkt::RackSched(bytes)) if racksched_wire::req_id(bytes) == Some(meta.id) => {
                let Some(&dst) = self.instances[i].cfg.downstream.get(node as usize) else {
                    return self.drop_rt(RuntimeDrop::NoPacket);
                };
                return self.send_raw(bytes, dst, TX_TASK);
            }
            // Not the packet of this pass: one a queueing plane parked.
            _ => return self.dispatch_parked(i, node, meta),
        };
        let t = match m.body {
            HorusBody::TaskFirst(t) | HorusBody::TaskContinuation(t) => t,
            _ => return self.drop_rt(RuntimeDrop::NoPacket),
        };
        let t = HorusTask {
            idle_selected: meta.idle_selected && meta.first,
            ..t
        };
        let body = if meta.first {
            HorusBody::TaskFirst(t)
        } else {
            HorusBody::TaskContinuation(t)
        };
        let out = HorusMessage {
            header: HorusHeader {
                dst_id: node as u16,
                ..m.header
            },
            body,
        };
        let Some(&dst) = self.instances[i].cfg.downstream.get(node as usize) else {
            return self.drop_rt(RuntimeDrop::NoPacket);
        };
        self.send(Message::Horus(out), dst, TX_TASK);
    }

    fn notify(&mut self, i: usize, to: Upstream, notice: Notice) {
        let inst = &self.instances[i];
        if let (true, Notice::LoadUpdate(load)) = (inst.rs_wire, notice) {
            return self.notify_racksched(i, to, load);
        }
        let (body, tx) = match notice {
            Notice::IdleAdd => (HorusBody::IdleAdd, 3),
            Notice::IdleRemove => (HorusBody::IdleRemove, 4),
            Notice::LoadUpdate(load) => (HorusBody::LoadUpdate { load }, 5),
            // Only `horus-tokens` with slot tokens emits it, a simulator
            // policy the daemon does not run; the wire has no message for it.
            Notice::SlotAdd => return self.drop_rt(RuntimeDrop::WrongRole),
        };
        let msg = Message::Horus(HorusMessage {
            header: HorusHeader {
                pool_id: inst.cfg.pool,
                src_id: inst.cfg.rack,
                ..Default::default()
            },
            body,
        });
        let n = match to {
            Upstream::Linked => inst.cfg.upstream.len().min(1),
            Upstream::All => inst.cfg.upstream.len(),
        };
        if n == 0 {
            return self.drop_rt(RuntimeDrop::NoUpstream);
        }
        for k in 0..n {
            let dst = self.instances[i].cfg.upstream[k];
            self.send(msg, dst, tx);
        }
    }

    /// Answers a task the data plane dropped with a failed reply whose
    /// payload names the reason.
    fn fail_task(&mut self, i: usize, p: Pkt<'_>, reason: DropReason) {
        let id = match p {
            Pkt::Horus(m) => m.task_id(),
            Pkt::RackSched(bytes) => racksched_wire::req_id(bytes),
        };
        let Some(id) = id else { return };
        let Some(dst) = self.instances[i].routes.get(task_id::app_id(id)) else {
            return self.drop_rt(RuntimeDrop::NoRoute);
        };
        self.send_failed(p, dst, reason.name());
    }

    /// Sends `dst` a failed reply to task packet `p` naming `reason`.
    fn send_failed(&mut self, p: Pkt<'_>, dst: SocketAddr, reason: &str) {
        let m = match p {
            Pkt::Horus(m) => m,
            Pkt::RackSched(bytes) => return self.fail_racksched(bytes, dst, reason),
        };
        let Some(id) = m.task_id() else { return };
        let reply = Message::Horus(HorusMessage {
            header: HorusHeader {
                pool_id: m.header.pool_id,
                seq: m.header.seq,
                ..Default::default()
            },
            body: HorusBody::Reply(HorusReply {
                task_id: id,
                status: ReplyStatus::Failed,
                payload: reason.as_bytes(),
            }),
        });
        self.send(reply, dst, TX_FAILED);
    }

    fn forward_reply(&mut self, i: usize, data: &[u8], id: u64, tx: usize) {
        let Some(dst) = self.instances[i].routes.get(task_id::app_id(id)) else {
            return self.drop_rt(RuntimeDrop::NoRoute);
        };
        self.send_raw(data, dst, tx);
    }

    fn send(&mut self, msg: Message<'_>, dst: SocketAddr, tx: usize) {
        if self.txb.is_full() {
            self.flush();
        }
        match msg.encode(self.txb.next_buf()) {
            Ok(n) => self.txb.commit(n, dst, tx as u8),
            Err(_) => self.drop_rt(RuntimeDrop::Encode),
        }
    }

    fn send_raw(&mut self, bytes: &[u8], dst: SocketAddr, tx: usize) {
        if self.txb.is_full() {
            self.flush();
        }
        let buf = self.txb.next_buf();
        match buf.get_mut(..bytes.len()) {
            Some(b) => {
                b.copy_from_slice(bytes);
                self.txb.commit(bytes.len(), dst, tx as u8);
            }
            None => self.drop_rt(RuntimeDrop::Encode),
        }
    }
}

/// The index of the only item, `None` if there is none, or
/// `AmbiguousSource` if there are several.
fn unique<'a, T: 'a>(
    mut it: impl Iterator<Item = (usize, &'a T)>,
) -> Result<Option<usize>, RuntimeDrop> {
    match (it.next(), it.next()) {
        (None, _) => Ok(None),
        (Some((i, _)), None) => Ok(Some(i)),
        (Some(_), Some(_)) => Err(RuntimeDrop::AmbiguousSource),
    }
}

/// Runs a daemon from its config until `stop`: binds, serves metrics, logs.
pub fn run_config(cfg: &SwitchConfig, stop: Arc<AtomicBool>) -> Result<(), String> {
    let mut d = SwitchDaemon::bind(cfg)?;
    let metrics = match &cfg.metrics {
        Some(a) => Some(
            crate::metrics::serve(a, d.registry(), stop.clone())
                .map_err(|e| format!("{a}: {e}"))?,
        ),
        None => None,
    };
    let listen = d.local_addr();
    crate::metrics::log(
        "info",
        "switch",
        "started",
        &[
            ("listen", &listen),
            ("instances", &cfg.instances.len()),
            (
                "metrics",
                &metrics
                    .as_ref()
                    .map(|(a, _)| a.to_string())
                    .unwrap_or_else(|| "off".into()),
            ),
        ],
    );
    d.run(&stop).map_err(|e| e.to_string())?;
    let r = d.registry();
    crate::metrics::log(
        "info",
        "switch",
        "stopped",
        &[
            ("listen", &listen),
            ("rx", &r.sum("netsched_rx_packets_total")),
            ("tx", &r.sum("netsched_tx_packets_total")),
            ("decisions", &r.sum("netsched_decisions_total")),
            ("resubmissions", &r.sum("netsched_resubmissions_total")),
            ("drops", &r.sum("netsched_drops_total")),
        ],
    );
    if let Some((_, h)) = metrics {
        let _ = h.join();
    }
    Ok(())
}
