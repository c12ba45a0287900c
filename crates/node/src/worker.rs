//! The worker agent (`netsched worker`): N executors per process, each a
//! Horus worker with its own FCFS queue (Horus §3.1: a worker is a core with
//! its own queue; §3.4: the agent reports its queue length in replies).
//!
//! Each executor is one thread with one UDP socket, so each is a distinct
//! node address at its leaf. A task is a synthetic busy period of the service
//! time its packet carries: the executor sleeps until the deadline and spins
//! the last few µs, which keeps the timing accurate while letting many
//! executors share a small machine. While it runs a task, newly arrived
//! tasks wait in the socket's receive queue; they are moved into the FCFS
//! queue before the reply is sent, so the reply's `qlen` counts them (§3.4:
//! the queue length "after completion").

use std::collections::VecDeque;
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use netsched_proto::{
    HorusBody, HorusHeader, HorusMessage, HorusReply, Message, ReplyStatus, MAX_DATAGRAM,
};

use crate::config::WorkerConfig;
use crate::metrics::{Kind, Registry, Slot};
use crate::net;

#[derive(Clone, Copy, Debug)]
struct Task {
    id: u64,
    pool: u16,
    seq: u16,
    service_ns: u64,
    /// Where to reply when no leaf is configured.
    from: SocketAddr,
}

/// Per-executor metric slots.
#[derive(Clone, Copy)]
struct ExecSlots {
    completed: Slot,
    busy_ns: Slot,
    qlen: Slot,
    invalid: Slot,
    queue_full: Slot,
}

/// A running worker process: its executor threads.
pub struct Worker {
    threads: Vec<JoinHandle<()>>,
    addrs: Vec<SocketAddr>,
    registry: Arc<Registry>,
}

/// Bound on each executor's FCFS queue; beyond it a task is answered with a
/// failed reply (`queue_full`) rather than buffered without limit.
pub const QUEUE_CAPACITY: usize = 4096;

impl Worker {
    /// Starts one executor per socket (already bound; made non-blocking).
    pub fn start(
        cfg: &WorkerConfig,
        socks: Vec<UdpSocket>,
        stop: Arc<AtomicBool>,
    ) -> Result<Self, String> {
        let mut reg = Registry::new();
        let mut slots = Vec::new();
        for i in 0..socks.len() {
            let id = (cfg.first_id as usize + i).to_string();
            let l: &[(&str, &str)] = &[("executor", &id)];
            slots.push(ExecSlots {
                completed: reg.register(
                    "netsched_worker_tasks_total",
                    "Tasks completed",
                    Kind::Counter,
                    l,
                ),
                busy_ns: reg.register(
                    "netsched_worker_busy_ns_total",
                    "Time spent running tasks, ns",
                    Kind::Counter,
                    l,
                ),
                qlen: reg.register(
                    "netsched_worker_qlen",
                    "Tasks waiting in the FCFS queue",
                    Kind::Gauge,
                    l,
                ),
                invalid: reg.register(
                    "netsched_worker_invalid_total",
                    "Datagrams dropped: undecodable or not a task",
                    Kind::Counter,
                    l,
                ),
                queue_full: reg.register(
                    "netsched_worker_queue_full_total",
                    "Tasks refused because the FCFS queue was full",
                    Kind::Counter,
                    l,
                ),
            });
        }
        let registry = Arc::new(reg);
        let mut threads = Vec::new();
        let mut addrs = Vec::new();
        for (i, sock) in socks.into_iter().enumerate() {
            net::prepare(&sock).map_err(|e| e.to_string())?;
            addrs.push(sock.local_addr().map_err(|e| e.to_string())?);
            let exec = Executor {
                sock,
                id: cfg.first_id + i as u16,
                pool: cfg.pool,
                leaf: cfg.leaf,
                heartbeat: Duration::from_millis(cfg.heartbeat_ms),
                spin: Duration::from_micros(cfg.spin_us),
                queue: VecDeque::with_capacity(QUEUE_CAPACITY),
                registry: registry.clone(),
                slots: slots[i],
            };
            let stop = stop.clone();
            threads.push(
                std::thread::Builder::new()
                    .name(format!("exec-{}", exec.id))
                    .spawn(move || exec.run(&stop))
                    .map_err(|e| e.to_string())?,
            );
        }
        Ok(Worker {
            threads,
            addrs,
            registry,
        })
    }

    /// Binds `cfg.listen` and starts.
    pub fn bind(cfg: &WorkerConfig, stop: Arc<AtomicBool>) -> Result<Self, String> {
        let socks = cfg
            .listen
            .iter()
            .map(|a| UdpSocket::bind(a).map_err(|e| format!("{a}: {e}")))
            .collect::<Result<Vec<_>, _>>()?;
        Self::start(cfg, socks, stop)
    }

    pub fn addrs(&self) -> &[SocketAddr] {
        &self.addrs
    }

    pub fn registry(&self) -> Arc<Registry> {
        self.registry.clone()
    }

    /// Waits for every executor to stop (after `stop` is set).
    pub fn join(self) {
        for t in self.threads {
            let _ = t.join();
        }
    }
}

struct Executor {
    sock: UdpSocket,
    id: u16,
    pool: u16,
    leaf: Option<SocketAddr>,
    heartbeat: Duration,
    spin: Duration,
    queue: VecDeque<Task>,
    registry: Arc<Registry>,
    slots: ExecSlots,
}

impl Executor {
    fn run(mut self, stop: &AtomicBool) {
        net::tighten_timer_slack();
        let mut rx = vec![0u8; 2048];
        let mut tx = vec![0u8; MAX_DATAGRAM];
        // Announce ourselves at once: the leaf sees the executor alive (§A.3).
        let mut next_beat = Instant::now();
        while !stop.load(Ordering::Relaxed) {
            self.drain(&mut rx, &mut tx);
            let now = Instant::now();
            if !self.heartbeat.is_zero() && now >= next_beat {
                self.keep_alive(&mut tx);
                next_beat = now + self.heartbeat;
            }
            match self.queue.pop_front() {
                Some(t) => {
                    let start = Instant::now();
                    if t.service_ns > 0 {
                        net::sleep_until(start + Duration::from_nanos(t.service_ns), self.spin);
                    }
                    self.registry
                        .add(self.slots.busy_ns, start.elapsed().as_nanos() as u64);
                    // Tasks that arrived meanwhile are queued before the
                    // queue length is reported.
                    self.drain(&mut rx, &mut tx);
                    self.reply(&t, ReplyStatus::Ok, b"", &mut tx);
                    self.registry.inc(self.slots.completed);
                }
                None => {
                    let wait = if self.heartbeat.is_zero() {
                        Duration::from_millis(10)
                    } else {
                        next_beat
                            .saturating_duration_since(Instant::now())
                            .min(Duration::from_millis(10))
                    };
                    net::wait_readable(&self.sock, wait);
                }
            }
        }
    }

    /// Moves every queued datagram into the FCFS queue.
    fn drain(&mut self, rx: &mut [u8], tx: &mut [u8]) {
        while let Ok(Some((n, src))) = net::try_recv(&self.sock, rx) {
            let task = match Message::decode(&rx[..n]) {
                Ok(Message::Horus(HorusMessage {
                    header,
                    body: HorusBody::TaskFirst(t) | HorusBody::TaskContinuation(t),
                })) => Task {
                    id: t.task_id,
                    pool: header.pool_id,
                    seq: header.seq,
                    service_ns: t.service_time_ns,
                    from: src,
                },
                _ => {
                    self.registry.inc(self.slots.invalid);
                    continue;
                }
            };
            if self.queue.len() >= QUEUE_CAPACITY {
                self.registry.inc(self.slots.queue_full);
                self.reply(&task, ReplyStatus::Failed, b"queue_full", tx);
            } else {
                self.queue.push_back(task);
            }
        }
        self.registry.set(self.slots.qlen, self.queue.len() as u64);
    }

    fn qlen(&self) -> u16 {
        self.queue.len().min(u16::MAX as usize) as u16
    }

    fn reply(&self, t: &Task, status: ReplyStatus, payload: &[u8], tx: &mut [u8]) {
        let msg = Message::Horus(HorusMessage {
            header: HorusHeader {
                pool_id: t.pool,
                src_id: self.id,
                qlen: self.qlen(),
                seq: t.seq,
                ..Default::default()
            },
            body: HorusBody::Reply(HorusReply {
                task_id: t.id,
                status,
                payload,
            }),
        });
        if let Ok(n) = msg.encode(tx) {
            let _ = self.sock.send_to(&tx[..n], self.leaf.unwrap_or(t.from));
        }
    }

    fn keep_alive(&self, tx: &mut [u8]) {
        let Some(leaf) = self.leaf else { return };
        let msg = Message::Horus(HorusMessage {
            header: HorusHeader {
                pool_id: self.pool,
                src_id: self.id,
                qlen: self.qlen(),
                ..Default::default()
            },
            body: HorusBody::KeepAlive,
        });
        if let Ok(n) = msg.encode(tx) {
            let _ = self.sock.send_to(&tx[..n], leaf);
        }
    }
}
