//! The worker agent (`netsched worker`): one node per listen address.
//!
//! * `executors = 1` (default): the node is one Horus worker, a core with its
//!   own FCFS queue (Horus §3.1); its replies carry the queue length after
//!   completion (§3.4).
//! * `executors = k > 1`: the node is one RackSched server whose k executors
//!   share a single queue served centralized-FCFS (RackSched §3.1: the
//!   intra-server scheduler is cFCFS, as Shinjuku's). Its replies carry LOAD,
//!   the server's outstanding tasks (queued and running, RackSched §4
//!   "maintain a counter … upon request arrival and reply departure").
//!
//! With `preempt_us > 0` a task runs at most that long at a time; the rest
//! of it goes back to the tail of the queue (RackSched §4: "both RackSched
//! and Shinjuku preempt requests that exceed 250 µs"). A synthetic task
//! keeps its remaining time; a RocksDB GET/SCAN keeps its resume key and
//! remaining object count and re-seeks its iterator when it runs again
//! ([`RocksStore::run_slice`]). A slice that wakes late is charged the time
//! it really took, so a task's total running time is its service time
//! however many slices the machine's timer lateness splits it into. A completed RocksDB task's reply carries
//! what it read: objects (u64) and a hash (FNV-1a step on 8-byte words) of keys and values (u64),
//! big-endian ([`ScanDigest`]).
//!
//! Task kinds (crate::tasks): synthetic (the service time the packet carries,
//! by sleeping to just before the deadline and spinning the rest, so many
//! executors share a small machine), RocksDB GET/SCAN on an embedded
//! database shared by the process, and TPC-C's classes as synthetic tasks.
//!
//! The worker replies in the family the task came in: a Horus task gets a
//! Horus reply (`qlen`), a RackSched REQF/REQR a REP (`LOAD`, REQ_ID). Tasks
//! that arrive while every executor is busy wait in the socket; an executor
//! moves them into the queue before it reports a length, so the report
//! counts them.
//!
//! **Liveness** (Horus §A.3): with a `leaf` and `heartbeat_ms > 0`, each
//! node has a thread of its own (`beat-<id>`) that sends a KeepAlive every
//! `heartbeat_ms` carrying the node's queued and running tasks, whatever its
//! executors run: a task of any length up to `max_service_ms` never gets
//! its worker declared failed at the leaf. The beat also moves waiting
//! datagrams into the queue, so a busy node's socket does not overflow.
//!
//! Only the leaf is obeyed: with `leaf` configured, a datagram from any other
//! address is dropped before decoding and counted
//! (`netsched_worker_stranger_total`), as the pull executor checks its
//! scheduler. A source address can be forged, so with the cluster key
//! (`notice_mac`, on by default) a task must also carry its leaf's seal
//! (crate::task_seal): an unsealed, wrongly sealed or replayed task is
//! dropped and counted (`netsched_worker_seal_drops_total{reason}`) before
//! it can occupy an executor. A synthetic service time above `max_service_ms` is answered as
//! failed (`service_time_over_cap`), and a synthetic task sleeps in slices of
//! at most [`STOP_POLL`], checking the stop flag, so no input can keep an
//! executor (or the process's shutdown) waiting.
//!
//! **Deduplication** (client `retries`): a client resubmits a task it got no
//! reply for with the same id. A copy that arrives while the task is still
//! queued or running at this node is dropped and counted
//! (`netsched_worker_duplicates_total`): its reply is coming. A copy of a
//! task already answered runs again, since its reply may be the one that
//! was lost, and a copy sent to another worker runs there: delivery is
//! at-least-once (docs/runtime.md). Answered ids are not remembered because
//! task ids repeat across client runs (each run numbers its tasks from 0).
//!
//! `fault` drops received datagrams at a seeded rate (the leaf → worker
//! link's loss in failure tests, crate::fault), counted by message type.
//!
//! Multi-packet tasks (Horus §A.4, RackSched REQR): schedulers keep every
//! packet of a task on one node; the task runs when its last packet arrives.
//! Earlier packets are only counted.

use std::collections::{HashSet, VecDeque};
use std::marker::PhantomData;
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use netsched_proto::{
    HorusBody, HorusHeader, HorusMessage, HorusReply, Message, RackSchedMessage, RackSchedPacket,
    ReplyStatus, ReqId, MAX_DATAGRAM,
};

use crate::config::ConfigError;
use crate::config::WorkerConfig;
use crate::error::Error;
use crate::fault::{Fault, FaultCounters};
use crate::metrics::{Kind, Registry, Slot};
use crate::net;
use crate::tasks::{RocksStore, ScanDigest, Slice, TaskKind};

/// Class byte of a RackSched REP that reports a failed request (the REP
/// header has no status field; payload = reason). docs/protocol.md.
pub const RS_FAILED_CLASS: u8 = 0xff;

/// Wire family a task came in, and so its reply's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Family {
    Horus { pool: u16, seq: u16 },
    RackSched,
}

#[derive(Clone, Copy, Debug)]
struct Task {
    id: u64,
    family: Family,
    class: u8,
    kind: TaskKind,
    /// Synthetic service time still to run, ns. (A RocksDB task's rest is
    /// its `kind`: resume key and objects left.)
    remaining_ns: u64,
    /// What a RocksDB task has read so far, across its slices.
    digest: ScanDigest,
    /// Where to reply when no leaf is configured.
    from: SocketAddr,
    /// The payload named no task kind: answered as failed.
    bad: Option<&'static str>,
}

/// Per-node metric slots.
#[derive(Clone, Copy)]
struct NodeSlots {
    completed: Slot,
    busy: Slot,
    run_time: Slot,
    queue_length: Slot,
    invalid: Slot,
    stranger: Slot,
    queue_full: Slot,
    preempted: Slot,
    failed: Slot,
    fragments: Slot,
    duplicates: Slot,
    objects: Slot,
    /// Tasks dropped for their seal: unsealed, bad seal, replayed.
    seal_drops: [Slot; 3],
    fault_drops: FaultCounters,
}

/// A running worker process: its executor threads, which run the tasks a
/// leaf sends them.
pub type Worker = Executors<Sent>;

/// [`Executors`] that run the tasks a leaf sends them ([`Worker`]).
pub enum Sent {}

/// A running worker process, whichever way its executors get tasks (`K`:
/// [`Sent`] for a [`Worker`], [`crate::pull::executor::Pulled`] for a
/// [`crate::pull::PullWorker`]): their threads, the addresses they listen
/// on, the metrics and the RocksDB store they share.
pub struct Executors<K> {
    threads: Vec<JoinHandle<()>>,
    addrs: Vec<SocketAddr>,
    registry: Arc<Registry>,
    rocks: Option<Arc<RocksStore>>,
    kind: PhantomData<K>,
}

/// One bound socket [`Executors::spawn_per_socket`] hands on, with what
/// its threads share.
pub(crate) struct SocketStart<'a, S> {
    pub index: usize,
    pub sock: UdpSocket,
    pub slots: S,
    pub registry: &'a Arc<Registry>,
    pub rocks: &'a Option<Arc<RocksStore>>,
}

impl<K> Executors<K> {
    /// Registers each socket's metric slots (`register`, before any thread
    /// starts), prepares each bound socket (non-blocking, buffers) and hands
    /// it to `spawn`, which starts the threads that serve it.
    pub(crate) fn spawn_per_socket<S>(
        socks: Vec<UdpSocket>,
        rocks: Option<Arc<RocksStore>>,
        register: impl Fn(&mut Registry, usize) -> S,
        mut spawn: impl FnMut(SocketStart<'_, S>, &mut Vec<JoinHandle<()>>) -> std::io::Result<()>,
    ) -> std::io::Result<Self> {
        let mut reg = Registry::new();
        let slots: Vec<S> = (0..socks.len()).map(|i| register(&mut reg, i)).collect();
        let registry = Arc::new(reg);
        let mut threads = Vec::new();
        let mut addrs = Vec::new();
        for ((index, sock), slots) in socks.into_iter().enumerate().zip(slots) {
            net::prepare(&sock)?;
            addrs.push(sock.local_addr()?);
            let start = SocketStart {
                index,
                sock,
                slots,
                registry: &registry,
                rocks: &rocks,
            };
            spawn(start, &mut threads)?;
        }
        Ok(Executors {
            threads,
            addrs,
            registry,
            rocks,
            kind: PhantomData,
        })
    }

    /// Starts thread `name` running `f`, one of `threads`.
    pub(crate) fn spawn_thread(
        threads: &mut Vec<JoinHandle<()>>,
        name: String,
        f: impl FnOnce() + Send + 'static,
    ) -> std::io::Result<()> {
        threads.push(std::thread::Builder::new().name(name).spawn(f)?);
        Ok(())
    }

    /// Binds every address of `listen`; `error` names a failure.
    pub(crate) fn bind_all<E>(
        listen: &[String],
        error: impl Fn(&String, std::io::Error) -> E,
    ) -> Result<Vec<UdpSocket>, E> {
        listen
            .iter()
            .map(|a| UdpSocket::bind(a).map_err(|e| error(a, e)))
            .collect()
    }

    pub fn addrs(&self) -> &[SocketAddr] {
        &self.addrs
    }

    pub fn registry(&self) -> Arc<Registry> {
        self.registry.clone()
    }

    /// Waits for every executor to stop (after `stop` is set), then closes
    /// and removes the process's RocksDB (if it has one).
    pub fn join(self) {
        for t in self.threads {
            let _ = t.join();
        }
        drop(self.rocks);
    }
}

/// Bound on each node's queue; beyond it a task is answered with a failed
/// reply (`queue_full`) rather than buffered without limit.
pub const QUEUE_CAPACITY: usize = 4096;

/// Longest uninterrupted sleep of a synthetic task: the executor checks the
/// stop flag at least this often, so SIGTERM stops a worker well within 1 s
/// whatever it is running.
pub const STOP_POLL: Duration = Duration::from_millis(50);

/// What the executors of one node share.
struct Node {
    sock: UdpSocket,
    id: u16,
    pool: u16,
    leaf: Option<SocketAddr>,
    /// `WorkerConfig::max_service_ms`, ns.
    max_service_ns: u64,
    heartbeat: Duration,
    spin: Duration,
    preempt: Option<Duration>,
    rocks: Option<Arc<RocksStore>>,
    registry: Arc<Registry>,
    slots: NodeSlots,
    state: Mutex<Shared>,
    /// Signalled when the queue gains a task (idle executors wait on it).
    cv: Condvar,
    /// Time zero of the fault injector's `until_ms`.
    started: Instant,
    /// Seals keep-alives (crate::notice_auth) and, with its key, checks
    /// the seals of tasks (crate::task_seal).
    sealer: Option<crate::notice_auth::NoticeSealer>,
}

struct Shared {
    queue: VecDeque<Task>,
    /// Executors of this node running a task now.
    running: usize,
    /// An executor is parked in poll on the socket.
    poller: bool,
    rx: Vec<u8>,
    /// Injected loss of received datagrams (leaf → worker).
    fault: Fault,
    /// Ids of the tasks queued or running (deduplication, module docs);
    /// bounded by the queue's capacity plus the executors.
    pending: HashSet<u64>,
    /// Replay windows of the senders of sealed tasks.
    windows: crate::task_seal::TaskWindows,
}

fn register_slots(reg: &mut Registry, id: u16) -> NodeSlots {
    let id = id.to_string();
    let l: &[(&str, &str)] = &[("executor", &id)];
    let c = Kind::Counter;
    NodeSlots {
        completed: reg.register("netsched_worker_tasks_total", "Tasks completed", c, l),
        busy: reg.register(
            "netsched_worker_busy_seconds_total",
            "Time spent running tasks",
            Kind::SecondsCounter,
            l,
        ),
        run_time: reg.register(
            "netsched_worker_run_seconds",
            "Time of one run of a task on an executor (a preempted task runs more than once)",
            Kind::Histogram,
            l,
        ),
        queue_length: reg.register(
            "netsched_worker_queue_length",
            "Tasks waiting in the executor's own queue",
            Kind::Gauge,
            l,
        ),
        invalid: reg.register(
            "netsched_worker_invalid_total",
            "Datagrams dropped: undecodable or not a task",
            c,
            l,
        ),
        stranger: reg.register(
            "netsched_worker_stranger_total",
            "Datagrams dropped: the sender is not the worker's leaf",
            c,
            l,
        ),
        queue_full: reg.register(
            "netsched_worker_queue_full_total",
            "Tasks refused because the queue was full",
            c,
            l,
        ),
        preempted: reg.register(
            "netsched_worker_preemptions_total",
            "Tasks (synthetic or RocksDB) preempted and requeued at the tail",
            c,
            l,
        ),
        failed: reg.register(
            "netsched_worker_failed_total",
            "Tasks answered as failed (bad payload, no RocksDB, RocksDB error)",
            c,
            l,
        ),
        fragments: reg.register(
            "netsched_worker_fragments_total",
            "Non-last packets of multi-packet tasks",
            c,
            l,
        ),
        duplicates: reg.register(
            "netsched_worker_duplicates_total",
            "Copies of a task that arrived while it was queued or running (dropped)",
            c,
            l,
        ),
        objects: reg.register(
            "netsched_worker_rocksdb_objects_total",
            "Objects read by completed RocksDB tasks",
            c,
            l,
        ),
        seal_drops: ["unsealed", "bad_seal", "replayed"].map(|reason| {
            reg.register(
                "netsched_worker_seal_drops_total",
                "Tasks dropped for their seal: unsealed, wrongly sealed or replayed",
                c,
                &[("executor", &id), ("reason", reason)],
            )
        }),
        fault_drops: FaultCounters::register(reg, l),
    }
}

impl Worker {
    /// Starts one node per socket (already bound; made non-blocking) with
    /// `cfg.executors` executor threads each.
    pub fn start(
        cfg: &WorkerConfig,
        socks: Vec<UdpSocket>,
        stop: Arc<AtomicBool>,
    ) -> Result<Self, Error> {
        if cfg.executors == 0 {
            return Err(ConfigError::Invalid("executors must be at least 1".into()).into());
        }
        let rocks = match &cfg.rocksdb {
            Some(rc) => {
                let s = Arc::new(RocksStore::open(rc)?);
                let get60 = TaskKind::Get { key: 0, count: 60 };
                let scan5000 = TaskKind::Scan {
                    key: 0,
                    count: 5000,
                };
                tracing::info!(
                    target: "worker",
                    keys = s.keys(),
                    get60_us = s.time_median(get60, 21) / 1000,
                    scan5000_us = s.time_median(scan5000, 5) / 1000,
                    "rocksdb ready"
                );
                Some(s)
            }
            None => None,
        };
        let notice_key = cfg.notice_key()?;
        let slots_of = |reg: &mut Registry, i: usize| register_slots(reg, cfg.first_id + i as u16);
        let executors = Self::spawn_per_socket(socks, rocks, slots_of, |s, threads| {
            let node = Arc::new(Node {
                sock: s.sock,
                id: cfg.first_id + s.index as u16,
                pool: cfg.pool,
                leaf: cfg.leaf,
                max_service_ns: cfg.max_service_ms.saturating_mul(1_000_000),
                heartbeat: Duration::from_millis(cfg.heartbeat_ms),
                spin: Duration::from_micros(cfg.spin_us),
                preempt: (cfg.preempt_us > 0).then(|| Duration::from_micros(cfg.preempt_us)),
                rocks: s.rocks.clone(),
                registry: s.registry.clone(),
                slots: s.slots,
                state: Mutex::new(Shared {
                    queue: VecDeque::with_capacity(QUEUE_CAPACITY),
                    running: 0,
                    poller: false,
                    rx: vec![0u8; 2048],
                    fault: Fault::new(
                        &cfg.fault
                            .for_stream(u64::from(cfg.first_id) + s.index as u64),
                    ),
                    pending: HashSet::with_capacity(QUEUE_CAPACITY + cfg.executors),
                    windows: Default::default(),
                }),
                cv: Condvar::new(),
                started: Instant::now(),
                sealer: notice_key.map(crate::notice_auth::NoticeSealer::new),
            });
            if !node.heartbeat.is_zero() && node.leaf.is_some() {
                let (name, node, stop) = (format!("beat-{}", node.id), node.clone(), stop.clone());
                Self::spawn_thread(threads, name, move || beat(&node, &stop))?;
            }
            for e in 0..cfg.executors {
                let (name, node, stop) =
                    (format!("exec-{}.{e}", node.id), node.clone(), stop.clone());
                Self::spawn_thread(threads, name, move || executor(&node, &stop))?;
            }
            Ok(())
        })?;
        Ok(executors)
    }

    /// Binds `cfg.listen` and starts.
    pub fn bind(cfg: &WorkerConfig, stop: Arc<AtomicBool>) -> Result<Self, Error> {
        let socks = Self::bind_all(&cfg.listen, |a, e| Error::io(a, e))?;
        Self::start(cfg, socks, stop)
    }
}

/// One executor thread of a node: take the queue's head (cFCFS when several
/// executors share the node), run it, reply. An idle executor either polls
/// the socket (one at a time) or waits on the node's condition variable, so
/// a task queued by a busy executor's drain wakes an idle one at once.
fn executor(node: &Node, stop: &AtomicBool) {
    net::tighten_timer_slack();
    let mut tx = vec![0u8; MAX_DATAGRAM];
    let mut st = node.state.lock().unwrap();
    while !stop.load(Ordering::Relaxed) {
        node.drain(&mut st, &mut tx);
        let Some(mut t) = st.queue.pop_front() else {
            // Long enough to cost nothing idle; `stop` is seen this often.
            let wait = Duration::from_millis(10);
            if st.poller {
                st = node.cv.wait_timeout(st, wait).unwrap().0;
            } else {
                st.poller = true;
                drop(st);
                net::wait_readable(&node.sock, wait);
                st = node.state.lock().unwrap();
                st.poller = false;
            }
            continue;
        };
        st.running += 1;
        drop(st);
        let start = Instant::now();
        let outcome = node.run(&mut t, stop);
        let ran = start.elapsed();
        node.registry.add_time(node.slots.busy, ran);
        node.registry.observe(node.slots.run_time, ran);
        st = node.state.lock().unwrap();
        st.running -= 1;
        // Tasks that arrived meanwhile are queued before the load is reported.
        node.drain(&mut st, &mut tx);
        let load = st.queue.len() + st.running;
        match outcome {
            // Shutting down: the task is neither answered nor requeued.
            Outcome::Stopped => break,
            Outcome::Preempted => {
                node.registry.inc(node.slots.preempted);
                st.queue.push_back(t);
            }
            Outcome::Done => {
                st.pending.remove(&t.id);
                let mut result = [0u8; 16];
                let payload: &[u8] = if t.kind.is_real() {
                    node.registry.add(node.slots.objects, t.digest.objects);
                    result[..8].copy_from_slice(&t.digest.objects.to_be_bytes());
                    result[8..].copy_from_slice(&t.digest.hash.to_be_bytes());
                    &result
                } else {
                    b""
                };
                node.reply(&t, load, ReplyStatus::Ok, payload, &mut tx);
                node.registry.inc(node.slots.completed);
            }
            Outcome::Failed(reason) => {
                st.pending.remove(&t.id);
                node.registry.inc(node.slots.failed);
                node.reply(&t, load, ReplyStatus::Failed, reason.as_bytes(), &mut tx);
            }
        }
    }
}

/// The node's liveness signal (Horus §A.3), on a thread of its own so it
/// does not depend on an executor being idle: a task of any length up to
/// `max_service_ms` keeps its worker alive at the leaf. Each beat first
/// moves the datagrams waiting in the socket into the queue (so a busy
/// node's socket does not overflow and the reported load counts them),
/// then reports the queued and running tasks.
fn beat(node: &Node, stop: &AtomicBool) {
    let mut tx = vec![0u8; MAX_DATAGRAM];
    // Announce ourselves at once: the leaf sees the node alive.
    let mut next = Instant::now();
    while !stop.load(Ordering::Relaxed) {
        let now = Instant::now();
        if now < next {
            std::thread::sleep((next - now).min(STOP_POLL));
            continue;
        }
        let load = {
            let mut st = node.state.lock().unwrap();
            node.drain(&mut st, &mut tx);
            st.queue.len() + st.running
        };
        node.keep_alive(load, &mut tx);
        next = now + node.heartbeat;
    }
}

enum Outcome {
    Done,
    /// The stop flag was set while the task slept.
    Stopped,
    Preempted,
    Failed(&'static str),
}

impl Node {
    /// Runs (a slice of) `t`.
    fn run(&self, t: &mut Task, stop: &AtomicBool) -> Outcome {
        if let Some(reason) = t.bad {
            return Outcome::Failed(reason);
        }
        if t.kind.is_real() {
            let Some(db) = &self.rocks else {
                return Outcome::Failed("no_rocksdb");
            };
            let deadline = self.preempt.map(|p| Instant::now() + p);
            return match db.run_slice(&mut t.kind, &mut t.digest, deadline) {
                Ok(Slice::Done) => Outcome::Done,
                Ok(Slice::Paused) => Outcome::Preempted,
                Err(_) => Outcome::Failed("rocksdb_error"),
            };
        }
        let slice = match self.preempt {
            Some(p) => (p.as_nanos() as u64).min(t.remaining_ns),
            None => t.remaining_ns,
        };
        let started = Instant::now();
        if slice > 0 {
            let deadline = started + Duration::from_nanos(slice);
            // Bounded steps, so a stop request is seen within STOP_POLL.
            loop {
                net::sleep_until(deadline.min(Instant::now() + STOP_POLL), self.spin);
                if Instant::now() >= deadline {
                    break;
                }
                if stop.load(Ordering::Relaxed) {
                    return Outcome::Stopped;
                }
            }
        }
        // A late wake-up is time the task ran: a CPU-bound request that
        // a timer interrupt preempts late has made that much more progress.
        // Charging only the nominal slice would add every slice's
        // overshoot to the task (≈ 20 slices of a 5 ms task, ×1.5 response
        // time on a loaded machine, where the simulator's slices are exact).
        let ran = (started.elapsed().as_nanos() as u64).max(slice);
        t.remaining_ns = t.remaining_ns.saturating_sub(ran);
        if t.remaining_ns > 0 {
            Outcome::Preempted
        } else {
            Outcome::Done
        }
    }

    /// Moves every datagram waiting in the socket into the queue.
    fn drain(&self, st: &mut Shared, tx: &mut [u8]) {
        let mut rx = std::mem::take(&mut st.rx);
        while let Ok(Some((n, src))) = net::try_recv(&self.sock, &mut rx) {
            if st.fault.drop_now(self.started.elapsed().as_nanos() as u64) {
                self.slots.fault_drops.count(&self.registry, &rx[..n]);
                continue;
            }
            if self.leaf.is_some_and(|leaf| leaf != src) {
                self.registry.inc(self.slots.stranger);
                continue;
            }
            let Some(bytes) = self.unseal(st, &rx[..n], src) else {
                continue;
            };
            let Some((mut task, last)) = parse_task(bytes, src) else {
                self.registry.inc(self.slots.invalid);
                continue;
            };
            if !last {
                self.registry.inc(self.slots.fragments);
                continue;
            }
            if !task.kind.is_real() && task.remaining_ns > self.max_service_ns {
                task.bad = Some("service_time_over_cap");
            }
            if st.pending.contains(&task.id) {
                self.registry.inc(self.slots.duplicates);
                continue;
            }
            if st.queue.len() >= QUEUE_CAPACITY {
                self.registry.inc(self.slots.queue_full);
                let load = st.queue.len() + st.running;
                self.reply(&task, load, ReplyStatus::Failed, b"queue_full", tx);
            } else {
                st.pending.insert(task.id);
                st.queue.push_back(task);
            }
        }
        st.rx = rx;
        if !st.queue.is_empty() {
            self.cv.notify_all();
        }
        self.registry
            .set(self.slots.queue_length, st.queue.len() as u64);
    }

    /// A received datagram without its seal, or `None` if it is a task
    /// whose seal is missing, wrong or replayed where sealing is on
    /// (counted). With sealing off a seal is cut off and ignored.
    fn unseal<'a>(&self, st: &mut Shared, data: &'a [u8], src: SocketAddr) -> Option<&'a [u8]> {
        use netsched_proto::seal::{open_task, SealError};
        let key = self.sealer.as_ref().map(|s| s.key());
        let drop = |k: usize| {
            self.registry.inc(self.slots.seal_drops[k]);
            None
        };
        match open_task(key, data) {
            Ok((task, None)) => Some(task),
            Ok((task, Some(seq))) => match st.windows.accept(src, seq, Instant::now()) {
                Ok(()) => Some(task),
                Err(_) => drop(2),
            },
            Err(SealError::Unsealed) => drop(0),
            Err(_) => drop(1),
        }
    }

    fn reply(&self, t: &Task, load: usize, status: ReplyStatus, payload: &[u8], tx: &mut [u8]) {
        let msg = match t.family {
            Family::Horus { pool, seq } => Message::Horus(HorusMessage {
                header: HorusHeader {
                    pool_id: pool,
                    src_id: self.id,
                    qlen: load.min(u16::MAX as usize) as u16,
                    seq,
                    ..Default::default()
                },
                body: HorusBody::Reply(HorusReply {
                    task_id: t.id,
                    status,
                    payload,
                }),
            }),
            Family::RackSched => Message::RackSched(RackSchedMessage::Reply(RackSchedPacket {
                req_id: ReqId {
                    client_id: (t.id >> 32) as u32,
                    local_id: t.id as u32,
                },
                load: load as u32,
                is_last: true,
                class: if status == ReplyStatus::Ok {
                    t.class
                } else {
                    RS_FAILED_CLASS
                },
                service_time_ns: 0,
                payload,
            })),
        };
        if let Ok(n) = msg.encode(tx) {
            let _ = self.sock.send_to(&tx[..n], self.leaf.unwrap_or(t.from));
        }
    }

    fn keep_alive(&self, load: usize, tx: &mut [u8]) {
        let Some(leaf) = self.leaf else { return };
        let msg = Message::Horus(HorusMessage {
            header: HorusHeader {
                pool_id: self.pool,
                src_id: self.id,
                qlen: load.min(u16::MAX as usize) as u16,
                ..Default::default()
            },
            body: HorusBody::KeepAlive,
        });
        let sealed = msg.encode(tx).and_then(|n| match &self.sealer {
            Some(s) => s.seal(tx, n),
            None => Ok(n),
        });
        if let Ok(n) = sealed {
            let _ = self.sock.send_to(&tx[..n], leaf);
        }
    }
}

/// A task packet of either family, and whether it is the task's last packet.
fn parse_task(bytes: &[u8], src: SocketAddr) -> Option<(Task, bool)> {
    let (id, family, class, service, payload, last) = match Message::decode(bytes).ok()? {
        Message::Horus(HorusMessage {
            header,
            body: HorusBody::TaskFirst(t) | HorusBody::TaskContinuation(t),
        }) => (
            t.task_id,
            Family::Horus {
                pool: header.pool_id,
                seq: header.seq,
            },
            t.class,
            t.service_time_ns,
            t.payload,
            t.is_last,
        ),
        Message::RackSched(RackSchedMessage::ReqFirst(p) | RackSchedMessage::ReqRest(p)) => (
            p.req_id.as_u64(),
            Family::RackSched,
            p.class,
            p.service_time_ns,
            p.payload,
            p.is_last,
        ),
        _ => return None,
    };
    let (kind, bad) = match TaskKind::decode(payload) {
        Ok(k) => (k, None),
        Err(e) => (TaskKind::Synthetic, Some(e.reason())),
    };
    Some((
        Task {
            id,
            family,
            class,
            kind,
            remaining_ns: service,
            digest: ScanDigest::default(),
            from: src,
            bad,
        },
        last,
    ))
}
