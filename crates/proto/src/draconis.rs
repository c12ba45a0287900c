//! Pull-scheduling messages (family 3): Draconis (EuroSys'24) and the systems
//! its evaluation runs over the same clients and executors, R2P2 JBSQ and
//! Sparrow.
//!
//! Draconis §4.1 (Fig. 3) names the packets: `job_submission` (client →
//! switch, TASK_INFO of up to a packet's worth of tasks), `task_request`
//! (executor → switch, EXEC_RSRC and the executor's node), `task_assignment`
//! (switch → executor, with the client's address so the executor answers the
//! client directly), the no-op of §4.6, the acknowledgment and the
//! `error_packet` of §4.3. netsched adds the completion an executor sends the
//! client (the paper's "result"), and Sparrow's probe and get-task (late
//! binding, §2.3.2). R2P2's executor feedback is a `task_request` (a free
//! slot), so R2P2 needs no message of its own.
//!
//! Task lists are fixed-capacity inline arrays ([`TaskVec`]): decoding fills
//! one without allocating, and a message stays a `Copy` value.

use std::net::{Ipv4Addr, SocketAddrV4};

use crate::error::{DecodeError, EncodeError};
use crate::wire::{Reader, Writer};
use crate::Family;

/// Tasks one job_submission or error_packet carries (§4.3: a job larger than
/// a packet is split across packets). Matches the data plane's
/// `MAX_TASKS_PER_PACKET`.
pub const MAX_PULL_TASKS: usize = 8;

/// TASK_INFO on the wire: id, fn_id, priority, fn_par, props.
pub const WIRE_TASK_LEN: usize = 8 + 4 + 1 + 8 + 8;

/// TASK_INFO (Draconis §4.1, Fig. 3).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct WireTask {
    /// <UID, JID, TID>: unique in the system; the client's key.
    pub id: u64,
    /// Which function to run (netsched: the task kind, docs/protocol.md).
    pub fn_id: u32,
    /// Priority level, 1 = highest (§6.1); 0 when unused.
    pub priority: u8,
    /// The function's parameter (netsched: service time in ns for synthetic
    /// tasks, the start key for RocksDB ones).
    pub fn_par: u64,
    /// TPROPS: required-resource bitmap (§5.2) or data-local nodes (§5.3).
    pub props: u64,
}

/// Up to [`MAX_PULL_TASKS`] tasks, inline. Unused entries are always
/// `WireTask::default()`, so derived equality compares only the used ones.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct TaskVec {
    len: u8,
    items: [WireTask; MAX_PULL_TASKS],
}

impl TaskVec {
    /// An empty list.
    pub const fn new() -> Self {
        TaskVec {
            len: 0,
            items: [WireTask {
                id: 0,
                fn_id: 0,
                priority: 0,
                fn_par: 0,
                props: 0,
            }; MAX_PULL_TASKS],
        }
    }

    /// `None` if `tasks` does not fit one packet.
    pub fn from_slice(tasks: &[WireTask]) -> Option<Self> {
        let mut v = TaskVec::new();
        for &t in tasks {
            if !v.push(t) {
                return None;
            }
        }
        Some(v)
    }

    /// Appends `t`; false if the list is full.
    pub fn push(&mut self, t: WireTask) -> bool {
        match self.items.get_mut(usize::from(self.len)) {
            Some(slot) => {
                *slot = t;
                self.len += 1;
                true
            }
            None => false,
        }
    }

    /// The tasks.
    pub fn as_slice(&self) -> &[WireTask] {
        &self.items[..usize::from(self.len)]
    }

    /// Number of tasks.
    pub const fn len(&self) -> usize {
        self.len as usize
    }

    /// True if there is no task.
    pub const fn is_empty(&self) -> bool {
        self.len == 0
    }
}

wire_enum! {
    /// Outcome an executor reports in a completion.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub enum CompletionStatus {
        /// The task ran.
        Ok = 0,
        /// The task could not run (unknown function, no database, …).
        Failed = 1,
    }
}

/// One pull-scheduling message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DraconisMessage {
    /// job_submission (§4.1): a job's tasks, client → scheduler.
    JobSubmission {
        /// <UID, JID> (§4.1).
        job: u64,
        /// At least one task.
        tasks: TaskVec,
    },
    /// task_request (§4.6): a free executor asks for work; under R2P2 it
    /// reports a freed slot. Executor → scheduler.
    TaskRequest {
        /// The node the executor runs on (§5.3).
        node: u32,
        /// EXEC_RSRC (§5.2).
        resources: u64,
    },
    /// task_assignment (§4.1), scheduler → executor.
    TaskAssignment {
        /// Where the executor sends the completion (the paper's CLIENT_IP
        /// and port, kept in the queue entry).
        client: SocketAddrV4,
        /// The task's skip_counter at assignment (§5.3; 0 otherwise).
        skips: u16,
        /// The task.
        task: WireTask,
    },
    /// No task now (§4.6): the executor retries later.
    NoOp,
    /// The job_submission was processed (§4.3), scheduler → client.
    Ack {
        /// The job.
        job: u64,
        /// Tasks of this packet that were queued.
        accepted: u8,
    },
    /// error_packet (§4.3): tasks that did not fit, scheduler → client.
    ErrorPacket {
        /// At least one task.
        tasks: TaskVec,
    },
    /// A task's result, executor → client.
    Completion {
        /// The task.
        task_id: u64,
        /// Time the executor spent running it, ns.
        exec_ns: u64,
        /// Which executor ran it (its index at the scheduler's config).
        executor: u32,
        /// Ran or failed.
        status: CompletionStatus,
    },
    /// Sparrow: a reservation for the job in scheduler slot `slot`.
    Probe {
        /// The scheduler's job slot.
        slot: u32,
    },
    /// Sparrow: a reservation reached the head of the executor's queue
    /// (late binding).
    GetTask {
        /// The job slot of that reservation.
        slot: u32,
    },
}

wire_enum! {
    /// Pull message type codes. Dense, starting at 1 like the other families.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub enum DraconisType {
        /// [`DraconisMessage::JobSubmission`].
        JobSubmission = 1,
        /// [`DraconisMessage::TaskRequest`].
        TaskRequest = 2,
        /// [`DraconisMessage::TaskAssignment`].
        TaskAssignment = 3,
        /// [`DraconisMessage::NoOp`].
        NoOp = 4,
        /// [`DraconisMessage::Ack`].
        Ack = 5,
        /// [`DraconisMessage::ErrorPacket`].
        ErrorPacket = 6,
        /// [`DraconisMessage::Completion`].
        Completion = 7,
        /// [`DraconisMessage::Probe`].
        Probe = 8,
        /// [`DraconisMessage::GetTask`].
        GetTask = 9,
    }
}

const ERR_EMPTY_TASKS: &str = "task count 0";
const ERR_TOO_MANY_TASKS: &str = "task count above MAX_PULL_TASKS";
const ERR_STATUS: &str = "unknown completion status";

impl DraconisMessage {
    /// The type byte.
    pub const fn draconis_type(&self) -> DraconisType {
        match self {
            DraconisMessage::JobSubmission { .. } => DraconisType::JobSubmission,
            DraconisMessage::TaskRequest { .. } => DraconisType::TaskRequest,
            DraconisMessage::TaskAssignment { .. } => DraconisType::TaskAssignment,
            DraconisMessage::NoOp => DraconisType::NoOp,
            DraconisMessage::Ack { .. } => DraconisType::Ack,
            DraconisMessage::ErrorPacket { .. } => DraconisType::ErrorPacket,
            DraconisMessage::Completion { .. } => DraconisType::Completion,
            DraconisMessage::Probe { .. } => DraconisType::Probe,
            DraconisMessage::GetTask { .. } => DraconisType::GetTask,
        }
    }

    /// Stable snake_case name, for metrics labels.
    pub const fn kind(&self) -> &'static str {
        match self {
            DraconisMessage::JobSubmission { .. } => "draconis_job_submission",
            DraconisMessage::TaskRequest { .. } => "draconis_task_request",
            DraconisMessage::TaskAssignment { .. } => "draconis_task_assignment",
            DraconisMessage::NoOp => "draconis_noop",
            DraconisMessage::Ack { .. } => "draconis_ack",
            DraconisMessage::ErrorPacket { .. } => "draconis_error_packet",
            DraconisMessage::Completion { .. } => "draconis_completion",
            DraconisMessage::Probe { .. } => "draconis_probe",
            DraconisMessage::GetTask { .. } => "draconis_get_task",
        }
    }

    /// Encoded length, framing byte included.
    pub const fn encoded_len(&self) -> usize {
        2 + match self {
            DraconisMessage::JobSubmission { tasks, .. } => 8 + 1 + tasks.len() * WIRE_TASK_LEN,
            DraconisMessage::TaskRequest { .. } => 4 + 8,
            DraconisMessage::TaskAssignment { .. } => 4 + 2 + 2 + WIRE_TASK_LEN,
            DraconisMessage::NoOp => 0,
            DraconisMessage::Ack { .. } => 8 + 1,
            DraconisMessage::ErrorPacket { tasks } => 1 + tasks.len() * WIRE_TASK_LEN,
            DraconisMessage::Completion { .. } => 8 + 8 + 4 + 1,
            DraconisMessage::Probe { .. } | DraconisMessage::GetTask { .. } => 4,
        }
    }

    pub(crate) fn validate(&self) -> Result<(), EncodeError> {
        match self {
            DraconisMessage::JobSubmission { tasks, .. }
            | DraconisMessage::ErrorPacket { tasks } => {
                if tasks.is_empty() {
                    return Err(EncodeError::Invalid(ERR_EMPTY_TASKS));
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    pub(crate) fn write(&self, w: &mut Writer<'_>) -> Result<(), EncodeError> {
        w.u8(Family::Draconis.framing_byte())?;
        w.u8(self.draconis_type() as u8)?;
        match *self {
            DraconisMessage::JobSubmission { job, tasks } => {
                w.u64(job)?;
                write_tasks(w, &tasks)
            }
            DraconisMessage::TaskRequest { node, resources } => {
                w.u32(node)?;
                w.u64(resources)
            }
            DraconisMessage::TaskAssignment {
                client,
                skips,
                task,
            } => {
                w.bytes(&client.ip().octets())?;
                w.u16(client.port())?;
                w.u16(skips)?;
                write_task(w, &task)
            }
            DraconisMessage::NoOp => Ok(()),
            DraconisMessage::Ack { job, accepted } => {
                w.u64(job)?;
                w.u8(accepted)
            }
            DraconisMessage::ErrorPacket { tasks } => write_tasks(w, &tasks),
            DraconisMessage::Completion {
                task_id,
                exec_ns,
                executor,
                status,
            } => {
                w.u64(task_id)?;
                w.u64(exec_ns)?;
                w.u32(executor)?;
                w.u8(status as u8)
            }
            DraconisMessage::Probe { slot } | DraconisMessage::GetTask { slot } => w.u32(slot),
        }
    }

    /// Decodes one datagram of family 3; the whole of `bytes` must be
    /// exactly one message.
    pub fn decode(bytes: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(bytes);
        if Family::of(bytes)? != Family::Draconis {
            return Err(DecodeError::Inconsistent("not a Draconis datagram"));
        }
        r.u8()?;
        let code = r.u8()?;
        let msg = match code {
            1 => {
                r.require(2 + 8 + 1)?;
                let job = r.u64()?;
                DraconisMessage::JobSubmission {
                    job,
                    tasks: read_tasks(&mut r)?,
                }
            }
            2 => {
                r.require(2 + 12)?;
                DraconisMessage::TaskRequest {
                    node: r.u32()?,
                    resources: r.u64()?,
                }
            }
            3 => {
                r.require(2 + 8 + WIRE_TASK_LEN)?;
                let ip = r.u32()?;
                let port = r.u16()?;
                DraconisMessage::TaskAssignment {
                    client: SocketAddrV4::new(Ipv4Addr::from(ip), port),
                    skips: r.u16()?,
                    task: read_task(&mut r)?,
                }
            }
            4 => DraconisMessage::NoOp,
            5 => {
                r.require(2 + 9)?;
                DraconisMessage::Ack {
                    job: r.u64()?,
                    accepted: r.u8()?,
                }
            }
            6 => DraconisMessage::ErrorPacket {
                tasks: read_tasks(&mut r)?,
            },
            7 => {
                r.require(2 + 21)?;
                let task_id = r.u64()?;
                let exec_ns = r.u64()?;
                let executor = r.u32()?;
                let status = CompletionStatus::from_code(r.u8()?)
                    .ok_or(DecodeError::Inconsistent(ERR_STATUS))?;
                DraconisMessage::Completion {
                    task_id,
                    exec_ns,
                    executor,
                    status,
                }
            }
            8 => DraconisMessage::Probe { slot: r.u32()? },
            9 => DraconisMessage::GetTask { slot: r.u32()? },
            other => return Err(DecodeError::UnknownType(other)),
        };
        r.finish()?;
        Ok(msg)
    }
}

fn write_task(w: &mut Writer<'_>, t: &WireTask) -> Result<(), EncodeError> {
    w.u64(t.id)?;
    w.u32(t.fn_id)?;
    w.u8(t.priority)?;
    w.u64(t.fn_par)?;
    w.u64(t.props)
}

fn write_tasks(w: &mut Writer<'_>, tasks: &TaskVec) -> Result<(), EncodeError> {
    w.u8(tasks.len)?;
    tasks.as_slice().iter().try_for_each(|t| write_task(w, t))
}

fn read_task(r: &mut Reader<'_>) -> Result<WireTask, DecodeError> {
    Ok(WireTask {
        id: r.u64()?,
        fn_id: r.u32()?,
        priority: r.u8()?,
        fn_par: r.u64()?,
        props: r.u64()?,
    })
}

/// A count byte, then exactly that many tasks ending the datagram.
fn read_tasks(r: &mut Reader<'_>) -> Result<TaskVec, DecodeError> {
    let n = r.u8()?;
    if n == 0 {
        return Err(DecodeError::Inconsistent(ERR_EMPTY_TASKS));
    }
    if usize::from(n) > MAX_PULL_TASKS {
        return Err(DecodeError::Inconsistent(ERR_TOO_MANY_TASKS));
    }
    r.require(r.pos() + usize::from(n) * WIRE_TASK_LEN)?;
    let mut v = TaskVec::new();
    for _ in 0..n {
        v.push(read_task(r)?);
    }
    Ok(v)
}
