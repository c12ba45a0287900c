//! The pull scheduler daemon: `netsched switch` with a pull `policy`.
//!
//! One UDP socket, one scheduler from `netsched_core::pull` (a
//! [`PullPlane`]): the Draconis switch (FCFS, priority, resource, locality),
//! Draconis-Server, R2P2 JBSQ(k) or a Sparrow scheduler. The daemon is only a driver: it decodes a
//! datagram, maps it to the scheduler's input, and turns each action into a
//! datagram. Every scheduling choice is the data plane's.
//!
//! **Recirculation is real.** A `Recirculate` action (Draconis: the rest of a
//! job, repair packets, the next priority level, a swap; R2P2: the next
//! probe) goes into a FIFO and is fed back as a new pass no earlier than
//! `recirc_ns` later, *between* other datagrams, as a switch's recirculation
//! port interleaves with its ingress. So a task request can meet a pending
//! repair (Draconis §4.7.2) here exactly as on a switch. Draconis-Server runs
//! its passes inline instead (§8), which is the difference between the two.
//!
//! What the runtime adds, because UDP sockets are not switch ports:
//! * **Executor identity** is the source address: a task request, completion
//!   report or get-task from an address not in `executors` is a counted drop.
//! * **Client table.** The queue stores a client index (§4.1 stores IP and
//!   port); the daemon maps a job's source address to an index the first
//!   time it sees it and writes the address into each task assignment, so
//!   the executor answers the client directly. The table is bounded
//!   (`max_clients`) and recovers: when it is full, an index with no task
//!   left in the scheduler and no job for `client_idle_ms` is reused, so
//!   addresses seen once cannot lock new clients out. Tasks are counted per
//!   index (accepted minus assigned or returned) so an index is never reused
//!   under a queued task; a path that loses count only keeps an index
//!   longer, it never misdirects a task. One host (IP address) holds at
//!   most `max_clients_per_host` indices, so a host cycling source ports
//!   cannot fill the table either.
//! * **Nothing is lost silently.** A task R2P2 drops at its recirculation
//!   budget, or Sparrow cannot track, goes back to its client in an error
//!   packet, like a task that does not fit Draconis' queue (§4.3).
//!
//! No allocation per datagram once every client is known: batches, outboxes
//! and the recirculation FIFO are allocated at start.

use netsched_core::Nanos;
use std::collections::{HashMap, VecDeque};
use std::io;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use netsched_config::pull::{pull_params, PullPolicy};
use netsched_config::ConfigError;
use netsched_core::dataplane::DropReason;
use netsched_core::pull::{
    ClientId, ExecInfo, JobSubmission, PullAction, PullDataPlane, PullInput, PullOutbox, PullPlane,
    PullPlaneKind, TaskInfo, TaskList,
};
use netsched_core::rng::Rng;
use netsched_proto::{DecodeError, DraconisMessage, Message, TaskVec, WireTask, MAX_DATAGRAM};

use super::config::PullSwitchConfig;
use super::error::PullError;
use super::serve::{run_with_metrics, Started};
use crate::fault::Fault;
use crate::metrics::{Kind, Registry, Slot};
use crate::net::{self, Clock, Mmsg};

/// Why the pull daemon dropped a datagram or returned a task.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(usize)]
pub enum PullDrop {
    Truncated,
    UnknownType,
    Inconsistent,
    TrailingBytes,
    /// A Horus or RackSched datagram at a pull scheduler.
    UnsupportedFamily,
    /// An executor message from an address not in `executors`, or a job
    /// from a source outside `clients`.
    UnregisteredSource,
    /// A message a scheduler never receives (an ack, a completion, …), or a
    /// get-task at a scheduler that is not Sparrow.
    WrongRole,
    /// A job from a non-IPv4 client (assignments carry IPv4 addresses).
    UnsupportedAddress,
    /// A job from one client more than `max_clients`: its tasks go back.
    ClientTableFull,
    /// A job from one more port of a host at `max_clients_per_host`: its
    /// tasks go back.
    ClientSourceLimit,
    /// R2P2: a request used its recirculation budget; the task goes back.
    RecirculationBudget,
    /// Sparrow: no job slot free; the job's tasks go back.
    Overflow,
    /// The scheduler refused an input as unexpected (a get-task for a job
    /// slot not in use, a completion from an executor with nothing
    /// outstanding, …).
    Unexpected,
    /// The kernel refused a send.
    Send,
}

impl PullDrop {
    pub const ALL: [PullDrop; 14] = [
        PullDrop::Truncated,
        PullDrop::UnknownType,
        PullDrop::Inconsistent,
        PullDrop::TrailingBytes,
        PullDrop::UnsupportedFamily,
        PullDrop::UnregisteredSource,
        PullDrop::WrongRole,
        PullDrop::UnsupportedAddress,
        PullDrop::ClientTableFull,
        PullDrop::ClientSourceLimit,
        PullDrop::RecirculationBudget,
        PullDrop::Overflow,
        PullDrop::Unexpected,
        PullDrop::Send,
    ];

    pub fn name(self) -> &'static str {
        match self {
            PullDrop::Truncated => "truncated",
            PullDrop::UnknownType => "unknown_type",
            PullDrop::Inconsistent => "inconsistent",
            PullDrop::TrailingBytes => "trailing_bytes",
            PullDrop::UnsupportedFamily => "unsupported_family",
            PullDrop::UnregisteredSource => "unregistered_source",
            PullDrop::WrongRole => "wrong_role",
            PullDrop::UnsupportedAddress => "unsupported_address",
            PullDrop::ClientTableFull => "client_table_full",
            PullDrop::ClientSourceLimit => "client_source_limit",
            PullDrop::RecirculationBudget => "recirculation_budget",
            PullDrop::Overflow => "overflow",
            PullDrop::Unexpected => "unexpected",
            PullDrop::Send => "send",
        }
    }

    pub(super) fn of_decode(e: DecodeError) -> PullDrop {
        match e {
            DecodeError::Truncated { .. } => PullDrop::Truncated,
            DecodeError::UnknownType(_) => PullDrop::UnknownType,
            DecodeError::Inconsistent(_) => PullDrop::Inconsistent,
            DecodeError::TrailingBytes => PullDrop::TrailingBytes,
        }
    }
}

/// Message type names by type code - 1, for the rx/tx counters.
const TYPES: [&str; 9] = [
    "job_submission",
    "task_request",
    "task_assignment",
    "noop",
    "ack",
    "error_packet",
    "completion",
    "probe",
    "get_task",
];

struct Slots {
    traffic: Traffic,
    tasks_accepted: Slot,
    tasks_returned: Slot,
    assigned: Slot,
    noops: Slot,
    recirculations: Slot,
    fault_drops: Slot,
    queue_length: Slot,
    passes: [Slot; 2],
    decision_time: Slot,
    clients: Slot,
}

/// The datagram counters of every pull scheduler daemon (this one and the
/// XDP one, [`super::xdp`]), so both export the same series.
pub(super) struct Traffic {
    pub(super) rx: [Slot; 9],
    pub(super) rx_invalid: Slot,
    pub(super) tx: [Slot; 9],
    pub(super) drops: [Slot; PullDrop::ALL.len()],
}

pub(super) fn register_traffic(reg: &mut Registry) -> Traffic {
    let c = Kind::Counter;
    let by_type =
        |reg: &mut Registry, name, help| TYPES.map(|t| reg.register(name, help, c, &[("type", t)]));
    Traffic {
        rx: by_type(
            reg,
            "netsched_rx_packets_total",
            "Datagrams received, by message type",
        ),
        rx_invalid: reg.register(
            "netsched_rx_packets_total",
            "Datagrams received, by message type",
            c,
            &[("type", "invalid")],
        ),
        tx: by_type(
            reg,
            "netsched_tx_packets_total",
            "Datagrams sent, by message type",
        ),
        drops: PullDrop::ALL.map(|d| {
            reg.register(
                "netsched_drops_total",
                "Datagrams dropped or tasks returned to their client, by reason",
                c,
                &[("reason", d.name())],
            )
        }),
    }
}

impl Traffic {
    /// Decodes a received datagram and counts it: by its Draconis type, or
    /// as invalid with the reason it was dropped.
    pub(super) fn decode(&self, registry: &Registry, data: &[u8]) -> Option<DraconisMessage> {
        let drop = match Message::decode(data) {
            Ok(Message::Draconis(m)) => {
                registry.inc(self.rx[m.draconis_type() as usize - 1]);
                return Some(m);
            }
            Ok(_) => PullDrop::UnsupportedFamily,
            Err(e) => PullDrop::of_decode(e),
        };
        registry.inc(self.rx_invalid);
        registry.inc(self.drops[drop as usize]);
        None
    }
}

fn register(reg: &mut Registry) -> Slots {
    let c = Kind::Counter;
    let g = Kind::Gauge;
    Slots {
        traffic: register_traffic(reg),
        tasks_accepted: reg.register(
            "netsched_pull_tasks_accepted_total",
            "Tasks taken into the scheduler (queued, dispatched or tracked)",
            c,
            &[],
        ),
        tasks_returned: reg.register(
            "netsched_pull_tasks_returned_total",
            "Tasks returned to their client in error packets",
            c,
            &[],
        ),
        assigned: reg.register(
            "netsched_decisions_total",
            "Tasks assigned to executors",
            c,
            &[],
        ),
        noops: reg.register(
            "netsched_pull_noops_total",
            "No-op answers to task requests",
            c,
            &[],
        ),
        recirculations: reg.register(
            "netsched_pull_recirculations_total",
            "Recirculated passes (switch policies)",
            c,
            &[],
        ),
        fault_drops: reg.register(
            "netsched_fault_drops_total",
            "Datagrams dropped by fault injection",
            c,
            &[],
        ),
        queue_length: reg.register(
            "netsched_pull_queue_length",
            "Tasks in the central queue (Draconis)",
            g,
            &[],
        ),
        passes: ["first", "resubmit"].map(|pass| {
            reg.register(
                "netsched_pipeline_passes_total",
                "Pipeline passes of the switch model, first or resubmission (recirculation)",
                c,
                &[("pass", pass)],
            )
        }),
        decision_time: reg.register(
            "netsched_dispatch_decision_seconds",
            "Time of one scheduler pass (a job submission or an executor's request)",
            Kind::Histogram,
            &[],
        ),
        clients: reg.register(
            "netsched_pull_clients",
            "Client addresses in the client table",
            g,
            &[],
        ),
    }
}

/// The pull scheduler daemon.
pub struct PullDaemon {
    sock: UdpSocket,
    sched: PullPlane,
    policy: PullPolicy,
    executors: Vec<SocketAddr>,
    exec_index: HashMap<SocketAddr, u32>,
    clients: Vec<SocketAddrV4>,
    client_index: HashMap<SocketAddrV4, ClientId>,
    max_clients: usize,
    /// Indices held per client host (hosts with none are removed).
    host_clients: HashMap<Ipv4Addr, usize>,
    max_clients_per_host: usize,
    /// Who may submit jobs (`clients`); `None`: anyone.
    ingress: Option<Vec<crate::client_net::ClientNet>>,
    /// Per client index: tasks in the scheduler (signed: within a pass an
    /// assignment may precede its job's acknowledgement).
    client_tasks: Vec<i64>,
    /// Per client index: last job, ns.
    client_seen: Vec<u64>,
    /// Indices of forgotten clients, reused before the table grows.
    free_clients: Vec<ClientId>,
    client_idle_ns: u64,
    next_client_sweep: u64,
    /// Passes waiting for the recirculation port, with when they are due.
    // Recirculated packets are fixed-size `Copy` values (a Draconis job
    // carries its tasks); boxing would allocate per pass.
    recirc: VecDeque<(u64, PullInput)>,
    recirc_ns: u64,
    out: PullOutbox,
    rxb: Mmsg,
    txb: Mmsg,
    clock: Clock,
    fault: Fault,
    registry: Arc<Registry>,
    slots: Slots,
}

impl PullDaemon {
    /// A daemon on an already bound socket (made non-blocking here).
    pub fn new(cfg: &PullSwitchConfig, sock: UdpSocket) -> Result<Self, PullError> {
        cfg.validate()?;
        net::prepare(&sock)?;
        let n_exec = cfg.executors.len() as u32;
        let levels = if cfg.policy == PullPolicy::DraconisPriority {
            cfg.priority_levels
        } else {
            1
        };
        let params = pull_params(
            cfg.policy,
            levels,
            cfg.nodes_per_rack,
            &cfg.draconis,
            &cfg.r2p2,
            &cfg.sparrow,
        )?;
        let Some(kind) = cfg.policy.plane() else {
            let msg = format!("{} is not a pull scheduler", cfg.policy.name());
            return Err(ConfigError::new("policy", msg).into());
        };
        let sched = PullPlane::build(kind, n_exec, Rng::new(cfg.seed).next_u64(), &params);
        let out = sched.outbox();
        let mut exec_index = HashMap::with_capacity(cfg.executors.len());
        for (i, a) in cfg.executors.iter().enumerate() {
            if exec_index.insert(*a, i as u32).is_some() {
                return Err(ConfigError::new("executors", format!("{a} is listed twice")).into());
            }
        }
        let mut reg = Registry::new();
        let slots = register(&mut reg);
        Ok(PullDaemon {
            sock,
            sched,
            policy: cfg.policy,
            executors: cfg.executors.clone(),
            exec_index,
            clients: Vec::with_capacity(cfg.max_clients.min(1 << 16)),
            client_index: HashMap::with_capacity(cfg.max_clients.min(1 << 16)),
            max_clients: cfg.max_clients,
            host_clients: HashMap::with_capacity(cfg.max_clients.min(1 << 16)),
            max_clients_per_host: cfg.max_clients_per_host,
            ingress: cfg.clients.clone(),
            client_tasks: Vec::with_capacity(cfg.max_clients.min(1 << 16)),
            client_seen: Vec::with_capacity(cfg.max_clients.min(1 << 16)),
            free_clients: Vec::with_capacity(cfg.max_clients.min(1 << 16)),
            client_idle_ns: cfg.client_idle_ms.saturating_mul(1_000_000),
            next_client_sweep: 0,
            recirc: VecDeque::with_capacity(4096),
            recirc_ns: cfg.recirc_ns,
            out,
            rxb: Mmsg::new(cfg.batch, MAX_DATAGRAM),
            txb: Mmsg::new(cfg.batch * 4 + 64, MAX_DATAGRAM),
            clock: Clock::new(),
            fault: Fault::new(&cfg.fault),
            registry: Arc::new(reg),
            slots,
        })
    }

    pub fn bind(cfg: &PullSwitchConfig) -> Result<Self, PullError> {
        let sock = UdpSocket::bind(&cfg.listen).map_err(|e| PullError::bind(&cfg.listen, e))?;
        Self::new(cfg, sock)
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.sock.local_addr().expect("bound socket")
    }

    pub fn registry(&self) -> Arc<Registry> {
        self.registry.clone()
    }

    pub fn policy(&self) -> PullPolicy {
        self.policy
    }

    /// Runs until `stop` is set.
    pub fn run(&mut self, stop: &AtomicBool) -> io::Result<()> {
        let mut last_gauges = 0u64;
        while !stop.load(Ordering::Relaxed) {
            let got = self.poll_batch()?;
            if got == 0 {
                // Park until a datagram arrives or the next recirculated pass
                // is due; spin for the sub-50 µs waits a pass takes.
                match self.recirc.front() {
                    None => {
                        net::wait_readable(&self.sock, Duration::from_millis(10));
                    }
                    Some(&(due, _)) => {
                        let wait = due.saturating_sub(self.clock.now_ns());
                        if wait > 50_000 {
                            net::wait_readable(&self.sock, Duration::from_nanos(wait - 50_000));
                        } else {
                            std::hint::spin_loop();
                        }
                    }
                }
            }
            let now = self.clock.now_ns();
            if now.saturating_sub(last_gauges) >= 100_000_000 {
                last_gauges = now;
                self.publish_gauges();
            }
        }
        self.publish_gauges();
        Ok(())
    }

    /// Reads one batch (`recvmmsg`) and handles it; after each datagram one
    /// due recirculated pass runs, and at the end of the batch up to a
    /// batch's worth more. Then sends what was produced (`sendmmsg`).
    /// Returns the number of datagrams and passes handled.
    ///
    /// The bound is the software counterpart of a switch's recirculation
    /// bandwidth: on a switch, recirculated packets never delay the ports'
    /// packets, but here both share one CPU. Draining every due pass would
    /// let many R2P2 probes circling over full executors (each due again
    /// `recirc_ns` later) crowd out the completions that free those
    /// executors, and the scheduler would collapse under its own probes.
    pub fn poll_batch(&mut self) -> io::Result<usize> {
        let mut rxb = std::mem::take(&mut self.rxb);
        let r = rxb.recv(&self.sock);
        let n = *r.as_ref().unwrap_or(&0);
        let mut work = n;
        for k in 0..n {
            let now = self.clock.now_ns();
            match rxb.get(k) {
                (_, Some(_)) if self.fault.drop_now(now) => {
                    self.registry.inc(self.slots.fault_drops)
                }
                (data, Some(src)) => self.on_datagram(data, src, now),
                (_, None) => self.drop(PullDrop::UnsupportedAddress),
            }
            work += self.run_due(self.clock.now_ns(), 1);
        }
        self.rxb = rxb;
        work += self.run_due(self.clock.now_ns(), self.rxb.capacity());
        self.flush();
        r.map(|_| work)
    }

    /// Runs up to `limit` recirculated passes that are due at `now`.
    fn run_due(&mut self, now: u64, limit: usize) -> usize {
        let mut done = 0;
        while done < limit {
            match self.recirc.front() {
                Some(&(due, p)) if due <= now => {
                    self.recirc.pop_front();
                    done += 1;
                    self.pass(p, now);
                }
                _ => break,
            }
        }
        done
    }

    /// Sends every queued datagram.
    pub fn flush(&mut self) {
        let PullDaemon {
            txb,
            sock,
            registry,
            slots,
            ..
        } = self;
        txb.flush(sock, |tag, ok| {
            if ok {
                registry.inc(slots.traffic.tx[tag as usize]);
            } else {
                registry.inc(slots.traffic.drops[PullDrop::Send as usize]);
            }
        });
    }

    pub fn publish_gauges(&mut self) {
        let (first, resub) = self.sched.passes();
        self.registry
            .set(self.slots.queue_length, self.sched.backlog());
        self.registry.set(self.slots.passes[0], first);
        self.registry.set(self.slots.passes[1], resub);
        self.registry
            .set(self.slots.clients, self.client_index.len() as u64);
    }

    #[inline]
    fn drop(&self, d: PullDrop) {
        self.registry.inc(self.slots.traffic.drops[d as usize]);
    }

    /// One datagram.
    pub fn on_datagram(&mut self, data: &[u8], src: SocketAddr, now: u64) {
        let Some(msg) = self.slots.traffic.decode(&self.registry, data) else {
            return;
        };
        match msg {
            DraconisMessage::JobSubmission { job, tasks } => self.on_job(job, tasks, src, now),
            DraconisMessage::TaskRequest { node, resources } => {
                let Some(id) = self.executor(src) else { return };
                let exec = ExecInfo {
                    id,
                    node,
                    resources,
                };
                match self.sched.kind() {
                    PullPlaneKind::Switch | PullPlaneKind::Server => {
                        self.pass(PullInput::TaskRequest(exec), now)
                    }
                    // R2P2's completion feedback rides on the task request.
                    PullPlaneKind::Jbsq => self.pass(PullInput::Completion { executor: id }, now),
                    PullPlaneKind::Sparrow => self.drop(PullDrop::WrongRole),
                }
            }
            DraconisMessage::GetTask { slot } => {
                let Some(worker) = self.executor(src) else {
                    return;
                };
                if self.sched.kind() == PullPlaneKind::Sparrow {
                    self.pass(PullInput::GetTask { worker, slot }, now);
                } else {
                    self.drop(PullDrop::WrongRole);
                }
            }
            DraconisMessage::TaskAssignment { .. }
            | DraconisMessage::NoOp
            | DraconisMessage::Ack { .. }
            | DraconisMessage::ErrorPacket { .. }
            | DraconisMessage::Completion { .. }
            | DraconisMessage::Probe { .. } => self.drop(PullDrop::WrongRole),
        }
    }

    fn executor(&self, src: SocketAddr) -> Option<u32> {
        let id = self.exec_index.get(&src).copied();
        if id.is_none() {
            self.drop(PullDrop::UnregisteredSource);
        }
        id
    }

    /// The client index of `src`, registering it on first sight.
    fn client(&mut self, src: SocketAddr, now: u64) -> Result<ClientId, PullDrop> {
        let SocketAddr::V4(v4) = src else {
            return Err(PullDrop::UnsupportedAddress);
        };
        if let Some(&c) = self.client_index.get(&v4) {
            self.client_seen[c as usize] = now;
            return Ok(c);
        }
        let full = self.free_clients.is_empty() && self.clients.len() >= self.max_clients;
        if full || self.host_held(*v4.ip()) >= self.max_clients_per_host {
            self.forget_idle_clients(now);
        }
        if self.host_held(*v4.ip()) >= self.max_clients_per_host {
            return Err(PullDrop::ClientSourceLimit);
        }
        let c = match self.free_clients.pop() {
            Some(c) => {
                self.clients[c as usize] = v4;
                self.client_tasks[c as usize] = 0;
                self.client_seen[c as usize] = now;
                c
            }
            None if self.clients.len() < self.max_clients => {
                self.clients.push(v4);
                self.client_tasks.push(0);
                self.client_seen.push(now);
                (self.clients.len() - 1) as ClientId
            }
            None => return Err(PullDrop::ClientTableFull),
        };
        self.client_index.insert(v4, c);
        *self.host_clients.entry(*v4.ip()).or_insert(0) += 1;
        Ok(c)
    }

    fn host_held(&self, ip: Ipv4Addr) -> usize {
        self.host_clients.get(&ip).copied().unwrap_or(0)
    }

    /// Frees every index with no task in the scheduler and no job for
    /// `client_idle_ns`; at most once per 100 ms, so a full table cannot
    /// make each new address cost a scan.
    fn forget_idle_clients(&mut self, now: u64) {
        if self.client_idle_ns == 0 || now < self.next_client_sweep {
            return;
        }
        self.next_client_sweep = now.saturating_add(100_000_000);
        let (idle, tasks, seen) = (self.client_idle_ns, &self.client_tasks, &self.client_seen);
        let free = &mut self.free_clients;
        let hosts = &mut self.host_clients;
        self.client_index.retain(|addr, c| {
            let i = *c as usize;
            let keep = tasks[i] > 0 || now.saturating_sub(seen[i]) <= idle;
            if !keep {
                free.push(*c);
                if let Some(n) = hosts.get_mut(addr.ip()) {
                    *n -= 1;
                    if *n == 0 {
                        hosts.remove(addr.ip());
                    }
                }
            }
            keep
        });
    }

    /// `n` more (or, negative, fewer) of `client`'s tasks in the scheduler.
    fn count_tasks(&mut self, client: ClientId, n: i64) {
        if let Some(t) = self.client_tasks.get_mut(client as usize) {
            *t += n;
        }
    }

    fn on_job(&mut self, job: u64, tasks: TaskVec, src: SocketAddr, now: u64) {
        // Ingress: a source outside `clients` takes no table entry and gets
        // no answer (the push side's rule, crate::client_net).
        if let Some(nets) = &self.ingress {
            if !nets.iter().any(|n| n.contains(&src)) {
                return self.drop(PullDrop::UnregisteredSource);
            }
        }
        let client = match self.client(src, now) {
            Ok(c) => c,
            Err(d @ (PullDrop::ClientTableFull | PullDrop::ClientSourceLimit)) => {
                // Refused, not lost: the tasks go straight back.
                self.drop(d);
                return self.send_error(src, &tasks);
            }
            Err(d) => return self.drop(d),
        };
        let mut list = TaskList::new();
        for t in tasks.as_slice() {
            list.push(to_core(t));
        }
        match self.sched.kind() {
            // R2P2 schedules requests, not jobs: each task is one.
            PullPlaneKind::Jbsq => {
                for &task in list.as_slice() {
                    self.registry.inc(self.slots.tasks_accepted);
                    self.count_tasks(client, 1);
                    self.pass(PullInput::Request { client, task }, now);
                }
            }
            PullPlaneKind::Switch | PullPlaneKind::Server | PullPlaneKind::Sparrow => self.pass(
                PullInput::JobSubmission(JobSubmission {
                    client,
                    job,
                    tasks: list,
                }),
                now,
            ),
        }
    }

    /// One pass of the scheduler (for Draconis-Server, one message run to
    /// completion; for Sparrow, one message) and its actions.
    fn pass(&mut self, input: PullInput, now: u64) {
        let mut out = std::mem::replace(&mut self.out, PullOutbox::with_capacity(0));
        out.clear();
        let started = Instant::now();
        self.sched.handle(Nanos::new(now), input, &mut out);
        self.registry
            .observe(self.slots.decision_time, started.elapsed());
        let mut overflowed = false;
        for a in out.drain() {
            match a {
                PullAction::AssignTask {
                    executor,
                    client,
                    task,
                    skips,
                } => {
                    self.registry.inc(self.slots.assigned);
                    self.assign(executor, client, task, skips);
                }
                PullAction::NoOp { executor } => {
                    self.registry.inc(self.slots.noops);
                    self.send_exec(executor, DraconisMessage::NoOp);
                }
                PullAction::Ack {
                    client,
                    job,
                    accepted,
                } => {
                    self.registry
                        .add(self.slots.tasks_accepted, accepted as u64);
                    self.count_tasks(client, i64::from(accepted));
                    if let Some(&c) = self.clients.get(client as usize) {
                        self.send(DraconisMessage::Ack { job, accepted }, SocketAddr::V4(c));
                    }
                }
                PullAction::ErrorPacket { client, tasks } => {
                    if let Some(&c) = self.clients.get(client as usize) {
                        let mut v = TaskVec::new();
                        for t in tasks.as_slice() {
                            v.push(to_wire(t));
                        }
                        self.send_error(SocketAddr::V4(c), &v);
                    }
                }
                PullAction::Probe { worker, slot } => {
                    self.send_exec(worker, DraconisMessage::Probe { slot })
                }
                PullAction::Recirculate(r) => {
                    self.registry.inc(self.slots.recirculations);
                    self.recirc
                        .push_back((now + self.recirc_ns, PullInput::Resubmit(r)));
                }
                PullAction::Reprobe(p) => {
                    self.registry.inc(self.slots.recirculations);
                    self.recirc
                        .push_back((now + self.recirc_ns, PullInput::Reprobe(p)));
                }
                PullAction::Drop(DropReason::RecirculationBudget) => {
                    // R2P2: the probe that ran out carried the task: return it.
                    self.drop(PullDrop::RecirculationBudget);
                    if let PullInput::Reprobe(p) = input {
                        self.count_tasks(p.client, -1);
                        self.return_task(p.client, &p.task);
                    }
                }
                PullAction::Drop(DropReason::Overflow) => {
                    // Sparrow: no job slot free; the job's tasks go back.
                    overflowed = true;
                    self.drop(PullDrop::Overflow);
                    if let PullInput::JobSubmission(JobSubmission { client, tasks, .. }) = input {
                        for t in tasks.as_slice() {
                            self.return_task(client, t);
                        }
                    }
                }
                PullAction::Drop(_) => self.drop(PullDrop::Unexpected),
            }
        }
        // Draconis counts a job's accepted tasks by its Ack; Sparrow, which
        // sends none, took them all unless it overflowed.
        if let (PullPlaneKind::Sparrow, PullInput::JobSubmission(job)) = (self.sched.kind(), input)
        {
            if !overflowed {
                self.count_tasks(job.client, job.tasks.len() as i64);
                self.registry
                    .add(self.slots.tasks_accepted, job.tasks.len() as u64);
            }
        }
        self.out = out;
    }

    fn assign(&mut self, executor: u32, client: ClientId, task: TaskInfo, skips: u16) {
        self.count_tasks(client, -1);
        let Some(&c) = self.clients.get(client as usize) else {
            return self.drop(PullDrop::Unexpected);
        };
        self.send_exec(
            executor,
            DraconisMessage::TaskAssignment {
                client: c,
                skips,
                task: to_wire(&task),
            },
        );
    }

    /// One task back to its client in an error packet.
    fn return_task(&mut self, client: ClientId, task: &TaskInfo) {
        if let Some(&c) = self.clients.get(client as usize) {
            let mut v = TaskVec::new();
            v.push(to_wire(task));
            self.send_error(SocketAddr::V4(c), &v);
        }
    }

    fn send_error(&mut self, dst: SocketAddr, tasks: &TaskVec) {
        self.registry
            .add(self.slots.tasks_returned, tasks.len() as u64);
        self.send(DraconisMessage::ErrorPacket { tasks: *tasks }, dst);
    }

    fn send_exec(&mut self, executor: u32, msg: DraconisMessage) {
        match self.executors.get(executor as usize) {
            Some(&dst) => self.send(msg, dst),
            None => self.drop(PullDrop::Unexpected),
        }
    }

    fn send(&mut self, msg: DraconisMessage, dst: SocketAddr) {
        if self.txb.is_full() {
            self.flush();
        }
        let tag = msg.draconis_type() as u8 - 1;
        match Message::Draconis(msg).encode(self.txb.next_buf()) {
            Ok(n) => self.txb.commit(n, dst, tag),
            Err(_) => self.drop(PullDrop::Send),
        }
    }
}

fn to_core(t: &WireTask) -> TaskInfo {
    TaskInfo {
        id: t.id,
        fn_id: t.fn_id,
        priority: t.priority,
        fn_par: t.fn_par,
        props: t.props,
    }
}

pub(super) fn to_wire(t: &TaskInfo) -> WireTask {
    WireTask {
        id: t.id,
        fn_id: t.fn_id,
        priority: t.priority,
        fn_par: t.fn_par,
        props: t.props,
    }
}

/// Runs the socket pull scheduler until `stop` is set, with its metrics
/// endpoint ([`super::run_config`] chooses between it and the XDP one).
pub fn run_config(cfg: &PullSwitchConfig, stop: Arc<AtomicBool>) -> Result<(), PullError> {
    let mut d = PullDaemon::bind(cfg)?;
    let started = Started {
        listen: d.local_addr(),
        policy: d.policy().name(),
        datapath: "socket",
    };
    run_with_metrics(cfg, d.registry(), started, &stop, || Ok(d.run(&stop)?))
}
