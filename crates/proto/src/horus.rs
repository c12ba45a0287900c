//! Horus messages (NSDI'24 §3.2, §3.4, §A.2-A.4).
//!
//! Every Horus datagram is the framing byte, the 11-byte Horus header
//! (type u8, pool_id u16, src_id u16, dst_id u16, qlen u16, seq u16) and a
//! type-specific body. The header is the same size as the Tofino
//! implementation's (Horus §A.5: "a small header of size 11 bytes") but not the
//! same layout: the Tofino header spends 8 bits on `local_pool_id` and 8 on
//! `qlen`; we drop `local_pool_id` (a rack-local index the switch controller
//! can derive from `pool_id`) and widen `qlen` to 16 bits because workers in
//! this project report queue lengths that do not fit in a byte. The 16.16 rack
//! average of §A.2 needs 32 bits, which the paper squeezes into `qLen`; we
//! carry it in a 4-byte extension of `LoadUpdate` instead.

use crate::error::{DecodeError, EncodeError};
use crate::wire::{check_payload, Reader, Writer, ERR_RESERVED_FLAGS};
use crate::{Family, MAX_DATAGRAM};

/// Length of the Horus header proper (type through seq), as in Horus §A.5.
pub const HORUS_HEADER_LEN: usize = 11;

/// Framing byte plus Horus header: where every Horus body starts.
pub(crate) const BODY_OFFSET: usize = 1 + HORUS_HEADER_LEN;

/// task_id, flags, class, service_time_ns, payload_len.
pub(crate) const TASK_FIXED: usize = BODY_OFFSET + 8 + 1 + 1 + 8 + 2;
/// task_id, status, payload_len.
const REPLY_FIXED: usize = BODY_OFFSET + 8 + 1 + 2;
/// 16.16 load.
const LOAD_UPDATE_LEN: usize = BODY_OFFSET + 4;

/// Largest payload a task packet can carry in one [`MAX_DATAGRAM`].
pub const MAX_TASK_PAYLOAD: usize = MAX_DATAGRAM - TASK_FIXED;
/// Largest payload a reply can carry in one [`MAX_DATAGRAM`].
pub const MAX_REPLY_PAYLOAD: usize = MAX_DATAGRAM - REPLY_FIXED;

const FLAG_LAST: u8 = 1 << 0;
const FLAG_IDLE_SELECTED: u8 = 1 << 1;
const FLAGS_KNOWN: u8 = FLAG_LAST | FLAG_IDLE_SELECTED;

/// Continuation packets follow the connection table (§A.4); no spine picks a
/// rack for them, so an idleSelected mark could only be stale or forged.
pub(crate) const ERR_IDLE_SELECTED_CONTINUATION: &str = "idleSelected set on a taskContinuation";
const ERR_STATUS: &str = "unknown reply status";

wire_enum! {
    /// Horus message type codes (the header's first byte).
    ///
    /// Our own dense numbering starting at 1, so a zeroed buffer is never a valid
    /// type. Correspondence with the Tofino code's `PKT_TYPE_*` is in
    /// docs/protocol.md.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub enum HorusType {
        /// First packet of a task (§3.2).
        TaskFirst = 1,
        /// Every non-first packet of a multi-packet task (§A.4).
        TaskContinuation = 2,
        /// Task completion, worker → leaf → client (§3.4).
        Reply = 3,
        /// Leaf → spine: the rack has an idle worker again (§3.4).
        IdleAdd = 4,
        /// Leaf → spine: the rack has no idle worker left (§3.4).
        IdleRemove = 5,
        /// Leaf → spine: the rack's average load moved by at least one (§3.4, §A.2).
        LoadUpdate = 6,
        /// Worker → leaf heartbeat for failure detection (§A.3).
        KeepAlive = 7,
    }
}

impl HorusType {
    /// Datagram length without payload.
    const fn fixed_len(self) -> usize {
        match self {
            HorusType::TaskFirst | HorusType::TaskContinuation => TASK_FIXED,
            HorusType::Reply => REPLY_FIXED,
            HorusType::LoadUpdate => LOAD_UPDATE_LEN,
            HorusType::IdleAdd | HorusType::IdleRemove | HorusType::KeepAlive => BODY_OFFSET,
        }
    }
}

/// The Horus header fields shared by every message; the type lives in
/// [`HorusBody`]'s variant.
///
/// Which fields a message uses is documented on each [`HorusBody`] variant; the
/// codec leaves their values unconstrained, because switches rewrite them in
/// flight (a leaf turning a copy of a task into an idleRemove sets `type` and
/// `src_id`, §A.6).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct HorusHeader {
    /// Worker pool (application) the message concerns; the key of every
    /// per-pool table in the schedulers (§A.2, §A.4).
    pub pool_id: u16,
    /// Sender: worker id within its rack, or leaf (rack) id towards a spine
    /// (Algorithm 1 uses it as the idle node's id).
    pub src_id: u16,
    /// Destination node chosen by the scheduler that forwarded the packet.
    pub dst_id: u16,
    /// A queue length: the worker's, in replies and keep-alives (§3.4).
    pub qlen: u16,
    /// Sender-chosen sequence number; schedulers carry it unchanged.
    pub seq: u16,
}

/// Body of `TaskFirst` and `TaskContinuation` packets.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct HorusTask<'a> {
    /// Application id in the upper 32 bits, per-application sequence number in
    /// the lower 32 (§3.2); see [`crate::task_id`].
    pub task_id: u64,
    /// isLastPacket (§A.4): a `TaskFirst` with it set is a single-packet task,
    /// which schedulers never put in the connection table.
    pub is_last: bool,
    /// Set by a spine that took the rack from its idle list, so the leaf can
    /// tell whether the spine still believes it idle and re-send a lost
    /// idleAdd/idleRemove (§A.3). The paper writes a marker into `qLen`; a flag
    /// bit keeps `qlen` a plain number. Only valid on `TaskFirst`.
    pub idle_selected: bool,
    /// Task type, e.g. GET vs SCAN, for per-class statistics.
    pub class: u8,
    /// Synthetic service time the worker should spin for; 0 for real tasks
    /// whose cost is their payload's work.
    pub service_time_ns: u64,
    /// Application data (e.g. a RocksDB key).
    pub payload: &'a [u8],
}

wire_enum! {
    /// Outcome carried by a [`HorusReply`].
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
    pub enum ReplyStatus {
        /// The task ran to completion.
        #[default]
        Ok = 0,
        /// The worker could not run the task.
        Failed = 1,
    }
}

/// Body of a `Reply`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct HorusReply<'a> {
    /// The completed task's id, echoed from the task packet.
    pub task_id: u64,
    /// Whether the task succeeded.
    pub status: ReplyStatus,
    /// Result data for the client.
    pub payload: &'a [u8],
}

/// A Horus message body; the variant determines the header's type byte.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HorusBody<'a> {
    /// First packet of a task, client → spine → leaf → worker (§3.2).
    TaskFirst(HorusTask<'a>),
    /// A non-first packet of a multi-packet task; follows the connection
    /// table to the first packet's worker (§A.4). `idle_selected` must be
    /// false.
    TaskContinuation(HorusTask<'a>),
    /// Worker → leaf → client after completion. Header `qlen` is the worker's
    /// queue length after the task left it, the piggybacked load report of
    /// §3.4 (0 means the worker is idle); `src_id` is the worker.
    Reply(HorusReply<'a>),
    /// Leaf → spine: the rack (header `src_id`) has an idle worker (§3.4,
    /// Algorithm 1). Header only.
    IdleAdd,
    /// Leaf → spine: the rack (header `src_id`) has no idle worker (§3.4,
    /// Algorithm 1). Header only.
    IdleRemove,
    /// Leaf → spine: the rack's (header `src_id`) average queue length in
    /// 16.16 fixed point (§A.2: `0x0001_6000` is 11 tasks over 8 workers).
    LoadUpdate {
        /// Rack average load, 16.16 fixed point.
        load: u32,
    },
    /// Worker → leaf heartbeat (§A.3); header `qlen` is the worker's current
    /// queue length, `src_id` the worker.
    KeepAlive,
}

impl HorusBody<'_> {
    /// The wire type of this body.
    pub const fn horus_type(&self) -> HorusType {
        match self {
            HorusBody::TaskFirst(_) => HorusType::TaskFirst,
            HorusBody::TaskContinuation(_) => HorusType::TaskContinuation,
            HorusBody::Reply(_) => HorusType::Reply,
            HorusBody::IdleAdd => HorusType::IdleAdd,
            HorusBody::IdleRemove => HorusType::IdleRemove,
            HorusBody::LoadUpdate { .. } => HorusType::LoadUpdate,
            HorusBody::KeepAlive => HorusType::KeepAlive,
        }
    }
}

/// A complete Horus message: header plus body.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct HorusMessage<'a> {
    /// Header fields other than the type.
    pub header: HorusHeader,
    /// Type and type-specific fields.
    pub body: HorusBody<'a>,
}

impl<'a> HorusMessage<'a> {
    /// The `TaskFirst` a client sends to pool `pool_id`: the other header
    /// fields are the schedulers' to write (§A.2).
    pub fn task_first(pool_id: u16, task: HorusTask<'a>) -> Self {
        HorusMessage {
            header: HorusHeader {
                pool_id,
                ..HorusHeader::default()
            },
            body: HorusBody::TaskFirst(task),
        }
    }

    /// Metrics name of the message type.
    pub const fn kind(&self) -> &'static str {
        match self.body {
            HorusBody::TaskFirst(_) => "horus_task_first",
            HorusBody::TaskContinuation(_) => "horus_task_continuation",
            HorusBody::Reply(_) => "horus_reply",
            HorusBody::IdleAdd => "horus_idle_add",
            HorusBody::IdleRemove => "horus_idle_remove",
            HorusBody::LoadUpdate { .. } => "horus_load_update",
            HorusBody::KeepAlive => "horus_keep_alive",
        }
    }

    /// The task id of task packets and replies.
    pub const fn task_id(&self) -> Option<u64> {
        match self.body {
            HorusBody::TaskFirst(t) | HorusBody::TaskContinuation(t) => Some(t.task_id),
            HorusBody::Reply(r) => Some(r.task_id),
            _ => None,
        }
    }

    /// The application payload of task packets and replies.
    pub const fn payload(&self) -> Option<&'a [u8]> {
        match self.body {
            HorusBody::TaskFirst(t) | HorusBody::TaskContinuation(t) => Some(t.payload),
            HorusBody::Reply(r) => Some(r.payload),
            _ => None,
        }
    }

    /// Encoded length in bytes, framing byte included.
    pub const fn encoded_len(&self) -> usize {
        let payload = match self.payload() {
            Some(p) => p.len(),
            None => 0,
        };
        self.body.horus_type().fixed_len() + payload
    }

    pub(crate) fn validate(&self) -> Result<(), EncodeError> {
        match self.body {
            HorusBody::TaskFirst(t) => check_payload(t.payload, MAX_TASK_PAYLOAD),
            HorusBody::TaskContinuation(t) => {
                if t.idle_selected {
                    return Err(EncodeError::Invalid(ERR_IDLE_SELECTED_CONTINUATION));
                }
                check_payload(t.payload, MAX_TASK_PAYLOAD)
            }
            HorusBody::Reply(r) => check_payload(r.payload, MAX_REPLY_PAYLOAD),
            HorusBody::IdleAdd
            | HorusBody::IdleRemove
            | HorusBody::LoadUpdate { .. }
            | HorusBody::KeepAlive => Ok(()),
        }
    }

    /// Writes the message; the caller has validated it and sized `w`.
    pub(crate) fn write(&self, w: &mut Writer<'_>) -> Result<(), EncodeError> {
        let h = &self.header;
        w.u8(Family::Horus.framing_byte())?;
        w.u8(self.body.horus_type().code())?;
        w.u16(h.pool_id)?;
        w.u16(h.src_id)?;
        w.u16(h.dst_id)?;
        w.u16(h.qlen)?;
        w.u16(h.seq)?;
        match self.body {
            HorusBody::TaskFirst(t) | HorusBody::TaskContinuation(t) => {
                let mut flags = 0;
                if t.is_last {
                    flags |= FLAG_LAST;
                }
                if t.idle_selected {
                    flags |= FLAG_IDLE_SELECTED;
                }
                w.u64(t.task_id)?;
                w.u8(flags)?;
                w.u8(t.class)?;
                w.u64(t.service_time_ns)?;
                w.payload(t.payload)
            }
            HorusBody::Reply(r) => {
                w.u64(r.task_id)?;
                w.u8(r.status.code())?;
                w.payload(r.payload)
            }
            HorusBody::LoadUpdate { load } => w.u32(load),
            HorusBody::IdleAdd | HorusBody::IdleRemove | HorusBody::KeepAlive => Ok(()),
        }
    }

    /// Decodes a datagram whose framing byte has already been checked.
    pub(crate) fn decode(bytes: &'a [u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(bytes);
        r.u8()?; // framing byte
        let code = r.u8()?;
        let ty = HorusType::from_code(code).ok_or(DecodeError::UnknownType(code))?;
        r.require(ty.fixed_len())?;
        let header = HorusHeader {
            pool_id: r.u16()?,
            src_id: r.u16()?,
            dst_id: r.u16()?,
            qlen: r.u16()?,
            seq: r.u16()?,
        };
        debug_assert_eq!(r.pos(), BODY_OFFSET);
        let body = match ty {
            HorusType::TaskFirst => HorusBody::TaskFirst(decode_task(&mut r)?),
            HorusType::TaskContinuation => {
                let t = decode_task(&mut r)?;
                if t.idle_selected {
                    return Err(DecodeError::Inconsistent(ERR_IDLE_SELECTED_CONTINUATION));
                }
                HorusBody::TaskContinuation(t)
            }
            HorusType::Reply => {
                let task_id = r.u64()?;
                let status =
                    ReplyStatus::from_code(r.u8()?).ok_or(DecodeError::Inconsistent(ERR_STATUS))?;
                let payload = r.payload(MAX_REPLY_PAYLOAD)?;
                HorusBody::Reply(HorusReply {
                    task_id,
                    status,
                    payload,
                })
            }
            HorusType::IdleAdd => fixed(&r, HorusBody::IdleAdd)?,
            HorusType::IdleRemove => fixed(&r, HorusBody::IdleRemove)?,
            HorusType::KeepAlive => fixed(&r, HorusBody::KeepAlive)?,
            HorusType::LoadUpdate => {
                let load = r.u32()?;
                fixed(&r, HorusBody::LoadUpdate { load })?
            }
        };
        Ok(HorusMessage { header, body })
    }
}

fn fixed<'a>(r: &Reader<'a>, body: HorusBody<'a>) -> Result<HorusBody<'a>, DecodeError> {
    r.finish().map(|()| body)
}

fn decode_task<'a>(r: &mut Reader<'a>) -> Result<HorusTask<'a>, DecodeError> {
    let task_id = r.u64()?;
    let flags = r.u8()?;
    if flags & !FLAGS_KNOWN != 0 {
        return Err(DecodeError::Inconsistent(ERR_RESERVED_FLAGS));
    }
    let class = r.u8()?;
    let service_time_ns = r.u64()?;
    let payload = r.payload(MAX_TASK_PAYLOAD)?;
    Ok(HorusTask {
        task_id,
        is_last: flags & FLAG_LAST != 0,
        idle_selected: flags & FLAG_IDLE_SELECTED != 0,
        class,
        service_time_ns,
        payload,
    })
}
