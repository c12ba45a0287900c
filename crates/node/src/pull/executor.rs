//! Pull executors (`netsched worker` with a `policy`): one thread and one UDP
//! socket per executor, as Draconis runs one executor process per core (§3.1).
//!
//! The protocol an executor speaks depends on the scheduler:
//! * **Draconis** (every variant, and Draconis-Server): a free executor
//!   sends a task_request (§4.6); a task_assignment is run, a no-op makes it
//!   ask again `retry_us` later. It asks at start and after every task.
//! * **R2P2**: tasks are pushed (JBSQ); after each task the executor reports
//!   the freed slot with a task_request, which is R2P2's completion feedback.
//! * **Sparrow**: probes place reservations in the executor's queue
//!   ([`SparrowWorker`], the same state machine the simulator drives); when
//!   free, it sends a get-task for the head reservation (late binding).
//!
//! A synthetic task longer than `max_service_ms` is reported failed without
//! running, and one runs in sleeps of at most [`STOP_POLL`] that check the
//! stop flag, so no job can hold an executor longer than the cap nor keep
//! the process from stopping (SIGTERM) for more than one such step.
//!
//! Every finished task is reported to its client directly (the assignment
//! carries the client's address, §4.1) with the time it ran.
//!
//! The request, no-op retry and request timeout are core's
//! [`Executor`] state machine (the one the simulator drives): a request
//! that gets no answer within `request_timeout_ms` (lost, or the scheduler
//! restarted) is sent again, so an executor never stalls; if that yields two
//! assignments, the second waits in a local FIFO.

use std::collections::VecDeque;
use std::net::{SocketAddr, SocketAddrV4, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use netsched_config::pull::PullPolicy;
use netsched_core::pull::sparrow::SparrowWorker;
use netsched_core::pull::{ExecInfo, Executor, ExecutorWake, PullInput};
use netsched_proto::{CompletionStatus, DraconisMessage, Message, WireTask, MAX_DATAGRAM};

use super::config::PullWorkerConfig;
use super::error::PullError;
use crate::metrics::{Kind, Registry, Slot};
use crate::net;
use crate::tasks::{RocksStore, TaskKind, GET_OBJECTS, SCAN_OBJECTS};
use crate::worker::{Executors, STOP_POLL};

/// `fn_id` of a synthetic task: busy for `fn_par` ns.
pub const FN_SYNTHETIC: u32 = 0;
/// `fn_id` of a RocksDB GET of 60 objects from key `fn_par`.
pub const FN_ROCKS_GET: u32 = 1;
/// `fn_id` of a RocksDB SCAN of 5,000 objects from key `fn_par`.
pub const FN_ROCKS_SCAN: u32 = 2;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Pull,
    Push,
    Sparrow,
}

impl Mode {
    fn of(p: PullPolicy) -> Mode {
        match p {
            PullPolicy::R2p2Recirc => Mode::Push,
            PullPolicy::Sparrow => Mode::Sparrow,
            _ => Mode::Pull,
        }
    }
}

#[derive(Clone, Copy)]
struct ExecSlots {
    tasks: Slot,
    failed: Slot,
    busy: Slot,
    run_time: Slot,
    requests: Slot,
    noops: Slot,
    retries: Slot,
    invalid: Slot,
}

fn register(reg: &mut Registry, id: u32) -> ExecSlots {
    let id = id.to_string();
    let l: &[(&str, &str)] = &[("executor", &id)];
    let c = Kind::Counter;
    ExecSlots {
        tasks: reg.register("netsched_worker_tasks_total", "Tasks run", c, l),
        failed: reg.register(
            "netsched_worker_failed_total",
            "Tasks reported failed (unknown fn_id, no RocksDB, RocksDB error)",
            c,
            l,
        ),
        busy: reg.register(
            "netsched_worker_busy_seconds_total",
            "Time spent running tasks",
            Kind::SecondsCounter,
            l,
        ),
        run_time: reg.register(
            "netsched_worker_run_seconds",
            "Time to run one task",
            Kind::Histogram,
            l,
        ),
        requests: reg.register(
            "netsched_worker_requests_total",
            "Task requests and get-tasks sent",
            c,
            l,
        ),
        noops: reg.register("netsched_worker_noops_total", "No-ops received", c, l),
        retries: reg.register(
            "netsched_worker_request_timeouts_total",
            "Requests sent again after request_timeout_ms without an answer",
            c,
            l,
        ),
        invalid: reg.register(
            "netsched_worker_invalid_total",
            "Datagrams dropped: undecodable, not for an executor, or not from the scheduler",
            c,
            l,
        ),
    }
}

/// A running set of pull executors.
pub type PullWorker = Executors<Pulled>;

/// [`Executors`] that pull their tasks from the scheduler ([`PullWorker`]).
pub enum Pulled {}

struct Exec {
    sock: UdpSocket,
    id: u32,
    scheduler: SocketAddr,
    mode: Mode,
    node: u32,
    resources: u64,
    retry: Duration,
    request_timeout: Duration,
    spin: Duration,
    /// `max_service_ms`, ns.
    max_service_ns: u64,
    rocks: Option<Arc<RocksStore>>,
    registry: Arc<Registry>,
    slots: ExecSlots,
}

impl PullWorker {
    /// Starts one executor per socket (already bound).
    pub fn start(
        cfg: &PullWorkerConfig,
        socks: Vec<UdpSocket>,
        stop: Arc<AtomicBool>,
    ) -> Result<Self, PullError> {
        cfg.validate()?;
        let rocks = match &cfg.rocksdb {
            Some(rc) => Some(Arc::new(
                RocksStore::open(rc).map_err(|e| PullError::Rocks(e.to_string()))?,
            )),
            None => None,
        };
        let slots_of = |reg: &mut Registry, i: usize| register(reg, cfg.first_id + i as u32);
        let executors = Self::spawn_per_socket(socks, rocks, slots_of, |s, threads| {
            let ex = Exec {
                sock: s.sock,
                id: cfg.first_id + s.index as u32,
                scheduler: cfg.scheduler,
                mode: Mode::of(cfg.policy),
                node: cfg.node,
                resources: cfg.resources,
                retry: Duration::from_micros(cfg.retry_us),
                request_timeout: Duration::from_millis(cfg.request_timeout_ms),
                spin: Duration::from_micros(cfg.spin_us),
                max_service_ns: cfg.max_service_ms.saturating_mul(1_000_000),
                rocks: s.rocks.clone(),
                registry: s.registry.clone(),
                slots: s.slots,
            };
            let stop = stop.clone();
            Self::spawn_thread(threads, format!("pull-exec-{}", ex.id), move || {
                ex.run(&stop)
            })
        })?;
        Ok(executors)
    }

    /// Binds `cfg.listen` and starts.
    pub fn bind(cfg: &PullWorkerConfig, stop: Arc<AtomicBool>) -> Result<Self, PullError> {
        let socks = Self::bind_all(&cfg.listen, |a, e| PullError::bind(a, e))?;
        Self::start(cfg, socks, stop)
    }
}

impl Exec {
    fn run(self, stop: &AtomicBool) {
        net::tighten_timer_slack();
        let clock = net::Clock::new();
        let mut local: VecDeque<(SocketAddrV4, WireTask)> = VecDeque::with_capacity(16);
        let mut sparrow = SparrowWorker::new(self.id, 64);
        let info = ExecInfo {
            id: self.id,
            node: self.node,
            resources: self.resources,
        };
        let mut ex = Executor::new(info, self.retry.into())
            .with_request_timeout(self.request_timeout.into());
        let mut rx = [0u8; MAX_DATAGRAM];
        let mut tx = [0u8; MAX_DATAGRAM];
        if self.mode == Mode::Pull {
            self.request(&mut tx);
            ex.sent(clock.now());
        }
        while !stop.load(Ordering::Relaxed) {
            // Everything queued in the socket first.
            while let Ok(Some((n, src))) = net::try_recv(&self.sock, &mut rx) {
                if src != self.scheduler {
                    self.registry.inc(self.slots.invalid);
                    continue;
                }
                match Message::decode(&rx[..n]) {
                    Ok(Message::Draconis(DraconisMessage::TaskAssignment {
                        client, task, ..
                    })) => {
                        if self.mode == Mode::Sparrow {
                            sparrow.on_assign();
                        }
                        ex.on_task();
                        local.push_back((client, task));
                    }
                    Ok(Message::Draconis(DraconisMessage::NoOp)) => {
                        self.registry.inc(self.slots.noops);
                        match self.mode {
                            Mode::Sparrow => {
                                self.sparrow_next(sparrow.on_free(), &mut ex, &clock, &mut tx)
                            }
                            _ => {
                                ex.on_noop(clock.now());
                            }
                        }
                    }
                    Ok(Message::Draconis(DraconisMessage::Probe { slot }))
                        if self.mode == Mode::Sparrow =>
                    {
                        if let Some(next) = sparrow.on_probe(slot) {
                            self.sparrow_next(Some(next), &mut ex, &clock, &mut tx);
                        }
                    }
                    _ => self.registry.inc(self.slots.invalid),
                }
            }
            if let Some((client, task)) = local.pop_front() {
                if !self.execute(client, &task, stop, &mut tx) {
                    // Stopped mid-task: neither reported nor requeued.
                    break;
                }
                match self.mode {
                    Mode::Pull if local.is_empty() => {
                        self.request(&mut tx);
                        ex.sent(clock.now());
                    }
                    Mode::Pull => {}
                    // R2P2: every finished task frees a JBSQ slot.
                    Mode::Push => self.request(&mut tx),
                    Mode::Sparrow => self.sparrow_next(sparrow.on_free(), &mut ex, &clock, &mut tx),
                }
                continue;
            }
            let now = clock.now();
            match (ex.poll(now), self.mode) {
                (Some(ExecutorWake::AnswerLost), Mode::Sparrow) => {
                    // The reservation's answer is lost; give it up (its
                    // task, if assigned, times out at the client).
                    self.registry.inc(self.slots.retries);
                    self.sparrow_next(sparrow.on_free(), &mut ex, &clock, &mut tx);
                }
                (Some(wake), _) => {
                    if wake == ExecutorWake::AnswerLost {
                        self.registry.inc(self.slots.retries);
                    }
                    self.request(&mut tx);
                    ex.sent(now);
                }
                (None, _) => {}
            }
            let wait = match ex.deadline() {
                Some(at) => at.saturating_sub(now).into(),
                None => Duration::from_millis(10),
            };
            // Park even for short waits (ppoll has µs resolution with the
            // tightened timer slack): many executors share few cores, and
            // an executor spinning through its no-op retry would take the
            // CPU the busy ones need.
            if wait > Duration::from_micros(2) {
                net::wait_readable(&self.sock, wait.min(Duration::from_millis(10)));
            } else {
                std::hint::spin_loop();
            }
        }
    }

    /// Sends Sparrow's get-task, if the worker state machine asks for one,
    /// and waits for its answer; otherwise waits for nothing.
    fn sparrow_next(
        &self,
        next: Option<PullInput>,
        ex: &mut Executor,
        clock: &net::Clock,
        tx: &mut [u8],
    ) {
        match next {
            Some(PullInput::GetTask { slot, .. }) => {
                self.send(DraconisMessage::GetTask { slot }, self.scheduler, tx);
                self.registry.inc(self.slots.requests);
                ex.sent(clock.now());
            }
            _ => ex.idle(),
        }
    }

    fn request(&self, tx: &mut [u8]) {
        self.registry.inc(self.slots.requests);
        self.send(
            DraconisMessage::TaskRequest {
                node: self.node,
                resources: self.resources,
            },
            self.scheduler,
            tx,
        );
    }

    fn send(&self, msg: DraconisMessage, dst: SocketAddr, tx: &mut [u8]) {
        if let Ok(n) = Message::Draconis(msg).encode(tx) {
            let _ = self.sock.send_to(&tx[..n], dst);
        }
    }

    /// Runs `task` and reports it to its client; false if `stop` was set
    /// while it ran (then it is not reported).
    fn execute(
        &self,
        client: SocketAddrV4,
        task: &WireTask,
        stop: &AtomicBool,
        tx: &mut [u8],
    ) -> bool {
        let start = Instant::now();
        let Some(status) = self.run_task(task, stop) else {
            return false;
        };
        let ran = start.elapsed();
        let exec_ns = ran.as_nanos() as u64;
        self.registry.add_time(self.slots.busy, ran);
        self.registry.observe(self.slots.run_time, ran);
        match status {
            CompletionStatus::Ok => self.registry.inc(self.slots.tasks),
            CompletionStatus::Failed => self.registry.inc(self.slots.failed),
        }
        self.send(
            DraconisMessage::Completion {
                task_id: task.id,
                exec_ns,
                executor: self.id,
                status,
            },
            SocketAddr::V4(client),
            tx,
        );
        true
    }

    /// The task's status, or `None` if `stop` was set while it ran.
    fn run_task(&self, task: &WireTask, stop: &AtomicBool) -> Option<CompletionStatus> {
        let kind = match task.fn_id {
            FN_SYNTHETIC if task.fn_par > self.max_service_ns => {
                return Some(CompletionStatus::Failed);
            }
            FN_SYNTHETIC => {
                let deadline = Instant::now() + Duration::from_nanos(task.fn_par);
                // Bounded steps, so a stop request is seen within STOP_POLL.
                while Instant::now() < deadline {
                    if stop.load(Ordering::Relaxed) {
                        return None;
                    }
                    net::sleep_until(deadline.min(Instant::now() + STOP_POLL), self.spin);
                }
                return Some(CompletionStatus::Ok);
            }
            FN_ROCKS_GET => TaskKind::Get {
                key: task.fn_par as u32,
                count: GET_OBJECTS,
            },
            FN_ROCKS_SCAN => TaskKind::Scan {
                key: task.fn_par as u32,
                count: SCAN_OBJECTS,
            },
            _ => return Some(CompletionStatus::Failed),
        };
        Some(match self.rocks.as_deref().map(|db| db.run(kind)) {
            Some(Ok(_)) => CompletionStatus::Ok,
            _ => CompletionStatus::Failed,
        })
    }
}
