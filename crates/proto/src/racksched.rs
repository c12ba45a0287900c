//! RackSched messages (OSDI'20 §3.2, Algorithm 1, §3.6) and the leaf → spine
//! load report of the RS-H extension (Horus NSDI'24 §4.1).
//!
//! The RackSched header of Figure 4(b) is TYPE, REQ_ID and LOAD. The paper
//! overloads TYPE with the request type for multi-queue scheduling (§3.6); we
//! keep TYPE for the packet kind and carry the request type in a separate
//! `class` byte, followed by the fields every netsched task carries (flags,
//! synthetic service time, payload length).

use crate::error::{DecodeError, EncodeError};
use crate::wire::{check_payload, Reader, Writer, ERR_RESERVED_FLAGS};
use crate::{Family, MAX_DATAGRAM};

/// framing, type, client_id, local_id, load, flags, class, service_time_ns,
/// payload_len.
pub(crate) const PACKET_FIXED: usize = 1 + 1 + 4 + 4 + 4 + 1 + 1 + 8 + 2;
/// framing, type, src_id, pool_id, load.
pub(crate) const LOAD_REPORT_LEN: usize = 1 + 1 + 2 + 2 + 4;

/// Largest payload a RackSched request or reply can carry in one [`MAX_DATAGRAM`].
pub const MAX_RACKSCHED_PAYLOAD: usize = MAX_DATAGRAM - PACKET_FIXED;

const FLAG_LAST: u8 = 1 << 0;

/// §3.2: "LOAD is not used in request packets". Requiring 0 keeps the encoding
/// canonical, so a switch that forgot to clear it is caught.
pub(crate) const ERR_LOAD_IN_REQUEST: &str = "LOAD set in a request";

wire_enum! {
    /// RackSched message type codes (the TYPE byte).
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub enum RackSchedType {
        /// REQF: first packet of a request (§3.2).
        ReqFirst = 1,
        /// REQR: a remaining packet of a request (§3.2).
        ReqRest = 2,
        /// REP: a reply packet (§3.2).
        Reply = 3,
        /// LOAD_REPORT: rack load from a leaf to a spine (RS-H).
        LoadReport = 4,
    }
}

impl RackSchedType {
    const fn fixed_len(self) -> usize {
        match self {
            RackSchedType::ReqFirst | RackSchedType::ReqRest | RackSchedType::Reply => PACKET_FIXED,
            RackSchedType::LoadReport => LOAD_REPORT_LEN,
        }
    }
}

/// REQ_ID = <client ID, local request ID> (§3.2): globally unique because each
/// client prefixes its own id. All packets of a request and its reply share it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ReqId {
    /// The client that issued the request.
    pub client_id: u32,
    /// The client's own request counter.
    pub local_id: u32,
}

impl ReqId {
    /// The id as one `u64`, client in the upper half: the same shape as a
    /// Horus task id (§3.2 of the Horus paper), so metrics can key both alike.
    pub const fn as_u64(self) -> u64 {
        crate::task_id::new(self.client_id, self.local_id)
    }
}

/// A RackSched request or reply packet (REQF, REQR, REP).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct RackSchedPacket<'a> {
    /// Request id shared by all packets of the request and its reply.
    pub req_id: ReqId,
    /// In replies, the server's queue length after the request, piggybacked
    /// for the ToR's LoadTable (Algorithm 1 line 8); must be 0 in requests.
    pub load: u32,
    /// Last packet of the request or reply; the first and only packet of a
    /// single-packet request has it set.
    pub is_last: bool,
    /// Request type for multi-queue scheduling (§3.6). In replies, the class
    /// whose queue `load` reports.
    pub class: u8,
    /// Synthetic service time for the server to spin; 0 for real requests.
    pub service_time_ns: u64,
    /// Application data.
    pub payload: &'a [u8],
}

/// Rack load from a leaf to a spine, used by RS-H (RackSched run
/// hierarchically; Horus §4.1: each leaf sends its rack's load state to the
/// spine after every completed task).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct RackSchedLoadReport {
    /// The reporting leaf (rack).
    pub src_id: u16,
    /// Worker pool the load refers to.
    pub pool_id: u16,
    /// Rack average queue length, 16.16 fixed point as in Horus §A.2.
    pub load: u32,
}

/// A RackSched message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RackSchedMessage<'a> {
    /// REQF: the switch picks a server and inserts REQ_ID into ReqTable
    /// (Algorithm 1 lines 1-3).
    ReqFirst(RackSchedPacket<'a>),
    /// REQR: forwarded to the server in ReqTable (Algorithm 1 lines 4-5).
    ReqRest(RackSchedPacket<'a>),
    /// REP: removes the ReqTable entry and updates LoadTable with LOAD
    /// (Algorithm 1 lines 6-8).
    Reply(RackSchedPacket<'a>),
    /// Leaf → spine rack load (RS-H).
    LoadReport(RackSchedLoadReport),
}

impl<'a> RackSchedMessage<'a> {
    /// The wire type of this message.
    pub const fn racksched_type(&self) -> RackSchedType {
        match self {
            RackSchedMessage::ReqFirst(_) => RackSchedType::ReqFirst,
            RackSchedMessage::ReqRest(_) => RackSchedType::ReqRest,
            RackSchedMessage::Reply(_) => RackSchedType::Reply,
            RackSchedMessage::LoadReport(_) => RackSchedType::LoadReport,
        }
    }

    /// Metrics name of the message type.
    pub const fn kind(&self) -> &'static str {
        match self {
            RackSchedMessage::ReqFirst(_) => "racksched_req_first",
            RackSchedMessage::ReqRest(_) => "racksched_req_rest",
            RackSchedMessage::Reply(_) => "racksched_reply",
            RackSchedMessage::LoadReport(_) => "racksched_load_report",
        }
    }

    /// The request or reply packet, if this is one.
    pub const fn packet(&self) -> Option<&RackSchedPacket<'a>> {
        match self {
            RackSchedMessage::ReqFirst(p)
            | RackSchedMessage::ReqRest(p)
            | RackSchedMessage::Reply(p) => Some(p),
            RackSchedMessage::LoadReport(_) => None,
        }
    }

    /// Encoded length in bytes, framing byte included.
    pub const fn encoded_len(&self) -> usize {
        let payload = match self.packet() {
            Some(p) => p.payload.len(),
            None => 0,
        };
        self.racksched_type().fixed_len() + payload
    }

    pub(crate) fn validate(&self) -> Result<(), EncodeError> {
        match self {
            RackSchedMessage::ReqFirst(p) | RackSchedMessage::ReqRest(p) => {
                if p.load != 0 {
                    return Err(EncodeError::Invalid(ERR_LOAD_IN_REQUEST));
                }
                check_payload(p.payload, MAX_RACKSCHED_PAYLOAD)
            }
            RackSchedMessage::Reply(p) => check_payload(p.payload, MAX_RACKSCHED_PAYLOAD),
            RackSchedMessage::LoadReport(_) => Ok(()),
        }
    }

    pub(crate) fn write(&self, w: &mut Writer<'_>) -> Result<(), EncodeError> {
        w.u8(Family::RackSched.framing_byte())?;
        w.u8(self.racksched_type().code())?;
        match self {
            RackSchedMessage::ReqFirst(p)
            | RackSchedMessage::ReqRest(p)
            | RackSchedMessage::Reply(p) => {
                w.u32(p.req_id.client_id)?;
                w.u32(p.req_id.local_id)?;
                w.u32(p.load)?;
                w.u8(if p.is_last { FLAG_LAST } else { 0 })?;
                w.u8(p.class)?;
                w.u64(p.service_time_ns)?;
                w.payload(p.payload)
            }
            RackSchedMessage::LoadReport(l) => {
                w.u16(l.src_id)?;
                w.u16(l.pool_id)?;
                w.u32(l.load)
            }
        }
    }

    /// Decodes a datagram whose framing byte has already been checked.
    pub(crate) fn decode(bytes: &'a [u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(bytes);
        r.u8()?; // framing byte
        let code = r.u8()?;
        let ty = RackSchedType::from_code(code).ok_or(DecodeError::UnknownType(code))?;
        r.require(ty.fixed_len())?;
        Ok(match ty {
            RackSchedType::ReqFirst => RackSchedMessage::ReqFirst(decode_packet(&mut r, true)?),
            RackSchedType::ReqRest => RackSchedMessage::ReqRest(decode_packet(&mut r, true)?),
            RackSchedType::Reply => RackSchedMessage::Reply(decode_packet(&mut r, false)?),
            RackSchedType::LoadReport => {
                let report = RackSchedLoadReport {
                    src_id: r.u16()?,
                    pool_id: r.u16()?,
                    load: r.u32()?,
                };
                r.finish()?;
                RackSchedMessage::LoadReport(report)
            }
        })
    }
}

fn decode_packet<'a>(
    r: &mut Reader<'a>,
    request: bool,
) -> Result<RackSchedPacket<'a>, DecodeError> {
    let req_id = ReqId {
        client_id: r.u32()?,
        local_id: r.u32()?,
    };
    let load = r.u32()?;
    if request && load != 0 {
        return Err(DecodeError::Inconsistent(ERR_LOAD_IN_REQUEST));
    }
    let flags = r.u8()?;
    if flags & !FLAG_LAST != 0 {
        return Err(DecodeError::Inconsistent(ERR_RESERVED_FLAGS));
    }
    let class = r.u8()?;
    let service_time_ns = r.u64()?;
    let payload = r.payload(MAX_RACKSCHED_PAYLOAD)?;
    Ok(RackSchedPacket {
        req_id,
        load,
        is_last: flags & FLAG_LAST != 0,
        class,
        service_time_ns,
        payload,
    })
}
