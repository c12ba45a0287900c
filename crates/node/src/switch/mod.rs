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

use netsched_core::{Outbox, Plane, Resubmit};
use netsched_proto::{HorusMessage, MAX_DATAGRAM};

use crate::config::SwitchConfig;
use crate::error::Error;
use crate::fault::Fault;
use crate::metrics::Registry;
use crate::net::{self, Clock};

// Child modules along the daemon's seams; they reach its private state
// directly instead of widening its visibility.
mod control;
mod dispatch;
mod drops;
mod in_flight;
mod instance;
mod liveness;
mod output;
// RackSched's own wire family (REQF/REQR/REP, LOAD_REPORT), packets parked by
// queueing baselines, and the zero-delay feed of the ideal baselines.
mod racksched_wire;
mod reply_routes;
mod slots;
// threads > 1: SO_REUSEPORT sockets, a receive thread each, one daemon.
mod threads;
// datapath = "xdp": the Horus leaf in the kernel, what it passes up here.
mod xdp;

pub use drops::RuntimeDrop;
use instance::{role_slot, Instance};
pub use racksched_wire::RS_FAILED_CLASS;
use slots::Slots;

/// Receive buffer per datagram: larger than any valid one.
const RX_SLOT: usize = 2048;

/// A send buffer: the largest message and a task's seal
/// (netsched_proto::seal, "Sealed tasks").
const TX_SLOT: usize = MAX_DATAGRAM + netsched_proto::seal::SEAL_LEN;

/// A task packet to send: a message to encode, or bytes forwarded as they
/// came (RackSched requests, parked packets).
enum TaskOut<'a> {
    Encode(&'a netsched_proto::Message<'a>),
    Raw(&'a [u8]),
}

/// The task packet a pass belongs to, in its wire family.
#[derive(Clone, Copy)]
enum Pkt<'a> {
    Horus(&'a HorusMessage<'a>),
    /// A RackSched REQF/REQR, forwarded byte for byte (it has no field a
    /// scheduler rewrites).
    RackSched(&'a [u8]),
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
    control_auth: Option<control::ControlAuth>,
    control_slots: control::ControlSlots,
    status_ns: u64,
    /// `SwitchConfig::coalesce_us`.
    coalesce: Duration,
    /// `SwitchConfig::busy_poll_us`, for the sockets of further threads.
    busy_poll_us: u32,
    fault: Fault,
    /// Task packets a queueing data plane (central, r2p2) buffered, by task id,
    /// until it dispatches them; `spare` recycles their buffers.
    parked: HashMap<u64, Vec<u8>>,
    spare: Vec<Vec<u8>>,
    rs_slots: racksched_wire::RsSlots,
    /// `datapath = "xdp"`: the attached program (xdp.rs).
    xdp: Option<xdp::XdpPath>,
    /// Sealed state messages (`notice_mac`): seals this daemon's notices and
    /// checks received notices and keep-alives (notice_auth.rs).
    notice: Option<crate::notice_auth::NoticeSealer>,
}

impl SwitchDaemon {
    /// Builds the daemon on an already bound socket (made non-blocking here),
    /// so tests and the benchmark can pick ports before writing configs.
    pub fn new(cfg: &SwitchConfig, sock: UdpSocket) -> Result<Self, Error> {
        cfg.validate()?;
        net::prepare(&sock)?;
        if cfg.busy_poll_us > 0 {
            net::set_busy_poll(&sock, cfg.busy_poll_us)?;
        }
        let mut reg = Registry::new();
        let slots = Slots::register(&mut reg);
        let mut instances = Vec::new();
        let mut pool_index = vec![[0u16; 2]; 1 << 16];
        for (i, pc) in cfg.instances.iter().enumerate() {
            pool_index[pc.pool as usize][role_slot(pc.role)] = (i + 1) as u16;
            instances.push(Instance::build(cfg, pc, &mut reg));
        }
        let rs_slots = racksched_wire::register_rs(&mut reg);
        let notice = crate::notice_auth::resolve(cfg.notice_mac, || cfg.cluster_key())?
            .map(crate::notice_auth::NoticeSealer::new);
        let xdp = match cfg.datapath {
            crate::config::Datapath::Socket => None,
            crate::config::Datapath::Xdp => Some(xdp::XdpPath::start(
                cfg,
                &instances[0].plane,
                &instances[0].alive,
                &instances[0].rack_w,
                notice.as_ref().map(|n| n.key().0),
                &mut reg,
            )?),
        };
        let control_slots = control::ControlSlots::register(&mut reg);
        let control_auth = match cfg.controller {
            Some(_) => {
                let local = sock.local_addr()?;
                Some(control::ControlAuth::new(cfg.cluster_key()?, local))
            }
            None => None,
        };
        Ok(SwitchDaemon {
            sock,
            clock: Clock::new(),
            instances,
            pool_index,
            registry: Arc::new(reg),
            slots,
            // A datagram longer than a slot is truncated by the kernel and
            // then rejected by the decoder (counted).
            rxb: net::Mmsg::new(cfg.batch, RX_SLOT),
            txb: net::Mmsg::new((cfg.batch * 4).max(64), TX_SLOT),
            resubmits: VecDeque::with_capacity(Outbox::CAPACITY * 4),
            fail_replies: cfg.fail_replies,
            controller: cfg.controller,
            control_auth,
            control_slots,
            status_ns: cfg.status_ms.saturating_mul(1_000_000),
            coalesce: Duration::from_micros(cfg.coalesce_us),
            busy_poll_us: cfg.busy_poll_us,
            fault: Fault::new(&cfg.fault),
            parked: HashMap::new(),
            spare: Vec::new(),
            rs_slots,
            xdp,
            notice,
        })
    }

    /// Binds `cfg.listen` and builds the daemon.
    pub fn bind(cfg: &SwitchConfig) -> Result<Self, Error> {
        let sock = UdpSocket::bind(&cfg.listen).map_err(|e| Error::io(&cfg.listen, e))?;
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
        let mut timers = Timers::default();
        while !stop.load(Ordering::Relaxed) {
            let got = self.poll_batch()?;
            idle_or_coalesce(&self.sock, got, self.rxb.capacity(), self.coalesce);
            self.tick(&mut timers);
        }
        self.publish_gauges();
        Ok(())
    }

    /// The periodic duties between batches: XDP counters, liveness,
    /// controller status, gauges.
    fn tick(&mut self, timers: &mut Timers) {
        let now = self.clock.now_ns();
        if self.xdp.is_some() {
            let publish = now.saturating_sub(timers.gauges) >= 100_000_000;
            self.xdp_tick(publish);
        }
        if now.saturating_sub(timers.check) >= 5_000_000 {
            timers.check = now;
            self.check_liveness(now);
            self.tick_planes(now);
            self.flush();
        }
        if self.controller.is_some() && now.saturating_sub(timers.status) >= self.status_ns {
            timers.status = now;
            self.send_status();
        }
        if now.saturating_sub(timers.gauges) >= 100_000_000 {
            timers.gauges = now;
            self.publish_gauges();
        }
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
        self.handle_received(&rxb, n);
        self.rxb = rxb;
        self.flush();
        r
    }

    /// Handles the first `n` datagrams of `rxb`; their output stays queued
    /// in `txb`.
    fn handle_received(&mut self, rxb: &net::Mmsg, n: usize) {
        if n == 0 {
            return;
        }
        let now = self.clock.now_ns();
        for k in 0..n {
            match rxb.get(k) {
                (data, Some(src)) if crate::controller::proto::is_control(data) => {
                    self.on_control(data, src, now)
                }
                (data, Some(_)) if self.fault.drop_now(now) => {
                    self.control_slots.fault_drops.count(&self.registry, data)
                }
                (data, Some(src)) => self.datagram(data, src, now),
                (_, None) => self.drop_rt(RuntimeDrop::Inconsistent),
            }
        }
    }

    /// Sends every queued datagram.
    pub fn flush(&mut self) {
        let slots = SendSlots::of(&self.slots);
        flush_counted(&mut self.txb, &self.sock, &self.registry, slots);
    }

    /// Copies data-plane state into the gauges (the metrics thread must not
    /// touch the data planes).
    pub fn publish_gauges(&mut self) {
        // The state is the program's; the data plane here is the control view.
        if self.xdp.is_some() {
            return self.xdp_publish();
        }
        for inst in &mut self.instances {
            if let Some(n) = inst.plane.idle_len() {
                self.registry.set(inst.idle_gauge, n as u64);
            }
            if let Plane::HorusLeaf(l) = &inst.plane {
                // The leaf keeps it in 16.16 fixed point (Horus A.2).
                let tasks = l.average_load() as f64 / 65536.0;
                self.registry.set_f64(inst.load_gauge, tasks);
            }
            let (f, r) = inst.plane.passes();
            self.registry.set(inst.passes[0], f);
            self.registry.set(inst.passes[1], r);
        }
    }

    #[inline]
    fn drop_rt(&self, r: RuntimeDrop) {
        self.registry.inc(self.slots.runtime_drops[r as usize]);
    }

    /// One datagram, run to completion (including its resubmission passes),
    /// and its output sent.
    pub fn on_datagram(&mut self, data: &[u8], src: SocketAddr, now: u64) {
        if crate::controller::proto::is_control(data) {
            self.on_control(data, src, now);
            return self.flush();
        }
        self.datagram(data, src, now);
        self.flush();
    }

    /// A data datagram: the data plane's, or what the XDP program passed up.
    fn datagram(&mut self, data: &[u8], src: SocketAddr, now: u64) {
        let Some(data) = self.unseal(data) else {
            return;
        };
        if self.xdp.is_some() {
            self.on_xdp_passed(data, src, now);
        } else {
            self.handle_datagram(data, src, now);
        }
    }
}

impl SwitchDaemon {
    /// Sealed state messages (notice_auth.rs): returns the message without
    /// its seal, or `None` if it was dropped (counted): a notice or
    /// keep-alive unsealed, wrongly sealed or replayed where sealing is on.
    /// With sealing off a seal is ignored. Every other datagram is returned
    /// whole.
    fn unseal<'a>(&mut self, data: &'a [u8]) -> Option<&'a [u8]> {
        let key = self.notice.as_ref().map(|s| *s.key());
        let (msg, seq) = match netsched_proto::seal::open(key.as_ref(), data) {
            Ok(opened) => opened,
            Err(netsched_proto::seal::SealError::Unsealed) => {
                self.drop_rt(RuntimeDrop::Unsealed);
                return None;
            }
            Err(_) => {
                self.drop_rt(RuntimeDrop::BadSeal);
                return None;
            }
        };
        let Some(seq) = seq else {
            return Some(msg);
        };
        // The sender's instance: keep-alives go to a leaf, notices and
        // LOAD_REPORTs to a spine. A message for an instance this daemon
        // lacks is dropped by the handler as before; its sequence number is
        // not recorded.
        let (pool, src_id, keep_alive) = netsched_proto::seal::sender(msg)?;
        let role = if keep_alive {
            crate::config::Role::Leaf
        } else {
            crate::config::Role::Spine
        };
        if let Some(i) = self.hosted(pool, role) {
            if self.instances[i]
                .replay
                .accept(src_id as usize, seq)
                .is_err()
            {
                self.drop_rt(RuntimeDrop::Replayed);
                return None;
            }
        }
        Some(msg)
    }
}

/// When the daemon's periodic duties last ran (ns on its clock).
#[derive(Default)]
struct Timers {
    gauges: u64,
    check: u64,
    status: u64,
}

/// After a receive of `got` datagrams into a batch of `batch`: park in
/// `poll` if there were none, or sleep `coalesce` if the batch did not fill.
fn idle_or_coalesce(sock: &UdpSocket, got: usize, batch: usize, coalesce: Duration) {
    if got == 0 {
        net::wait_readable(sock, Duration::from_millis(10));
    } else if got < batch && !coalesce.is_zero() {
        // A wake-up costs more CPU than the datagram it brings
        // (docs/benchmarks.md, bench capacity): let a few queue.
        std::thread::sleep(coalesce);
    }
}

/// The counters a send bumps: sent, by tx type, or a `send` drop.
#[derive(Clone, Copy)]
struct SendSlots {
    tx: [crate::metrics::Slot; 6],
    failed: crate::metrics::Slot,
}

impl SendSlots {
    fn of(slots: &Slots) -> Self {
        SendSlots {
            tx: slots.tx,
            failed: slots.runtime_drops[RuntimeDrop::Send as usize],
        }
    }
}

/// Sends every datagram queued in `txb` from `sock`, counting each.
fn flush_counted(txb: &mut net::Mmsg, sock: &UdpSocket, registry: &Registry, slots: SendSlots) {
    txb.flush(sock, |tag, ok| {
        registry.inc(if ok {
            slots.tx[tag as usize]
        } else {
            slots.failed
        });
    });
}

/// Runs a daemon from its config until `stop`: binds, serves metrics, logs.
pub fn run_config(cfg: &SwitchConfig, stop: Arc<AtomicBool>) -> Result<(), Error> {
    let (mut d, extra) = SwitchDaemon::bind_threads(cfg)?;
    let metrics = match &cfg.metrics {
        Some(a) => Some(
            crate::metrics::serve(a, d.registry(), stop.clone()).map_err(|e| Error::io(a, e))?,
        ),
        None => None,
    };
    let listen = d.local_addr();
    tracing::info!(
        target: "switch",
        %listen,
        instances = cfg.instances.len(),
        threads = cfg.threads,
        metrics = %metrics.as_ref().map_or_else(|| "off".to_string(), |(a, _)| a.to_string()),
        "started"
    );
    d.run_threaded(extra, &stop)?;
    let r = d.registry();
    tracing::info!(
        target: "switch",
        %listen,
        rx = r.sum("netsched_rx_packets_total"),
        tx = r.sum("netsched_tx_packets_total"),
        decisions = r.sum("netsched_decisions_total"),
        resubmissions = r.sum("netsched_resubmissions_total"),
        drops = r.sum("netsched_drops_total"),
        "stopped"
    );
    if let Some((_, h)) = metrics {
        let _ = h.join();
    }
    Ok(())
}
