//! Baraat (SIGCOMM'14) messages of the packet-level SPC lab: task-aware
//! flows whose data packets carry the Smart Priority Class header (§4.4
//! "Header"): the task id, the demand for the next RTT, what the switch
//! gave the flow last time (Alg. 1 line 1), and the switch's answer (AR,
//! NR), which the receiver echoes in its acknowledgements (§4.3.3).
//!
//! The paper's header packs rates into one byte each (bytes/µs with a scale
//! byte) for up to six switches. The lab has one switch and carries each
//! rate as an IEEE-754 double (bits/s), so that the lab runs the same
//! arithmetic as the simulators; a rate field that is not a rate (NaN,
//! infinite, negative, negative zero, above any NIC) is refused: Alg. 1 adds
//! demands into a port's counters, and one NaN would poison every later
//! allocation there.
//!
//! The family (framing byte `0x14`) is not one of [`Message`]'s: no
//! scheduler daemon receives it, so [`decode`](crate::decode) refuses it
//! and the lab decodes with [`decode_baraat`].
//!
//! Reliability is TCP-like (§4.3.3): data is acknowledged cumulatively; the
//! end of a flow (FIN, which returns the flow's last demand and allocation
//! to the switch) and the end of a task (DONE, after which the switch may
//! forget the task) are repeated until acknowledged.

use crate::error::{DecodeError, EncodeError};
use crate::wire::{check_payload, Reader, Writer, ERR_RESERVED_FLAGS};
#[cfg(doc)]
use crate::Message;
use crate::{Family, MAX_DATAGRAM};

/// Decodes one datagram of the Baraat family; the whole of `bytes` must be
/// exactly one message. Never panics; the encoding is canonical: if this
/// succeeds, [`BaraatMessage::encode`] gives back exactly `bytes`.
pub fn decode_baraat(bytes: &[u8]) -> Result<BaraatMessage<'_>, DecodeError> {
    match Family::of(bytes)? {
        Family::Baraat => BaraatMessage::decode(bytes),
        _ => Err(DecodeError::Inconsistent(ERR_NOT_BARAAT)),
    }
}

const ERR_NOT_BARAAT: &str = "not a Baraat datagram";

/// No NIC is faster: a rate field above it is hostile, not a demand.
pub const MAX_RATE_BPS: f64 = 1e13;

const DATA_FIXED: usize = 1 + 1 + 1 + 1 + 8 + 4 + 4 + 4 + 5 * 8 + 2;
/// Largest payload of a data packet.
pub const MAX_BARAAT_PAYLOAD: usize = MAX_DATAGRAM - DATA_FIXED;

const FLAG_REQUEST: u8 = 1 << 0;
const FLAG_NEW_FLOW: u8 = 1 << 1;
const FLAG_FEEDBACK: u8 = 1 << 2;

const ERR_RATE: &str = "rate field is not a rate";
const ERR_NEW_WITHOUT_REQUEST: &str = "new-flow flag without a request";
const ERR_FEEDBACK_WITHOUT_REQUEST: &str = "switch feedback on a packet without a request";
const ERR_ABSENT_NONZERO: &str = "field of an absent request or feedback is not zero";

wire_enum! {
    /// The message type byte.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub enum BaraatType {
        /// Client to server: send `bytes` for one flow of a task.
        Request = 1,
        /// Server to client: one data packet, maybe with an SPC request.
        Data = 2,
        /// Client to server: cumulative ACK and the latest switch feedback.
        Ack = 3,
        /// Server to client through the switch: the flow's end.
        Fin = 4,
        /// Client to switch: every byte of a task arrived.
        Done = 5,
        /// Client to server: the FIN arrived.
        FinAck = 6,
        /// Switch to client: the DONE arrived.
        DoneAck = 7,
    }
}

/// A rate in bits/s: finite, non-negative, at most [`MAX_RATE_BPS`].
#[derive(Clone, Copy, Debug, Default, PartialEq, PartialOrd)]
pub struct Rate(f64);

// No NaN gets in and negative zero is normalised, so equality is total and
// agrees with the bits.
impl Eq for Rate {}

impl std::hash::Hash for Rate {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        self.0.to_bits().hash(h)
    }
}

impl Rate {
    /// Zero bits/s.
    pub const ZERO: Rate = Rate(0.0);

    /// `bps` if it is a rate (negative zero becomes zero).
    pub fn new(bps: f64) -> Option<Rate> {
        (bps.is_finite() && (0.0..=MAX_RATE_BPS).contains(&bps)).then_some(Rate(bps + 0.0))
    }

    /// Bits per second.
    pub const fn bps(self) -> f64 {
        self.0
    }

    fn read(r: &mut Reader<'_>) -> Result<Rate, DecodeError> {
        let bits = r.u64()?;
        let v = f64::from_bits(bits);
        // Negative zero would decode to the same value as zero and re-encode
        // differently: refused, so the encoding stays canonical.
        match Rate::new(v) {
            Some(rate) if bits >> 63 == 0 => Ok(rate),
            _ => Err(DecodeError::Inconsistent(ERR_RATE)),
        }
    }

    fn write(self, w: &mut Writer<'_>) -> Result<(), EncodeError> {
        w.u64(self.0.to_bits())
    }
}

/// The SPC request a data packet carries (Alg. 1's input, Alg. 2's output).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct SpcHeader {
    /// The flow's request number; the feedback the receiver echoes names it.
    pub req: u32,
    /// The flow's first request (until feedback confirms the switch counted
    /// the flow).
    pub new_flow: bool,
    /// Demand for the next RTT.
    pub demand: Rate,
    /// What the flow announced last time and the switch holds for it.
    pub prev_demand: Rate,
    /// The allocation (AR) the switch gave last time.
    pub prev_alloc: Rate,
}

/// One switch's answer (Alg. 1 lines 10-11): actual and nominal rate.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct SpcAnswer {
    /// Actual rate AR.
    pub ar: Rate,
    /// Nominal rate NR.
    pub nr: Rate,
}

/// A data packet of one flow.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct BaraatData<'a> {
    /// The server the flow comes from (the switch routes the lab's replies
    /// by it).
    pub server: u8,
    /// The flow's task (its priority, Baraat §4.1).
    pub task_id: u64,
    /// The flow, numbered by the lab's client.
    pub flow: u32,
    /// Packet number within the flow.
    pub seq: u32,
    /// The SPC request, on one packet per RTT.
    pub request: Option<SpcHeader>,
    /// The switch's answer to `request`, written by the switch.
    pub answer: Option<SpcAnswer>,
    /// Data bytes.
    pub payload: &'a [u8],
}

/// The latest switch feedback a receiver echoes: the request it answers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct SpcEcho {
    /// The request answered.
    pub req: u32,
    /// The switch's answer.
    pub answer: SpcAnswer,
}

/// Any Baraat lab message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum BaraatMessage<'a> {
    Request {
        server: u8,
        task_id: u64,
        flow: u32,
        bytes: u64,
    },
    Data(BaraatData<'a>),
    Ack {
        server: u8,
        flow: u32,
        /// Packets of the flow received in order.
        cumulative: u32,
        echo: Option<SpcEcho>,
    },
    /// The flow's last demand and allocation, returned to the switch.
    Fin {
        server: u8,
        task_id: u64,
        flow: u32,
        demand: Rate,
        alloc: Rate,
    },
    Done {
        task_id: u64,
        flows: u32,
    },
    FinAck {
        server: u8,
        flow: u32,
    },
    DoneAck {
        task_id: u64,
    },
}

impl BaraatType {
    const fn fixed_len(self) -> usize {
        match self {
            BaraatType::Request => 2 + 1 + 8 + 4 + 8,
            BaraatType::Data => DATA_FIXED,
            BaraatType::Ack => 2 + 1 + 1 + 4 + 4 + 4 + 8 + 8,
            BaraatType::Fin => 2 + 1 + 8 + 4 + 8 + 8,
            BaraatType::Done => 2 + 8 + 4,
            BaraatType::FinAck => 2 + 1 + 4,
            BaraatType::DoneAck => 2 + 8,
        }
    }
}

#[allow(missing_docs)]
impl<'a> BaraatMessage<'a> {
    pub const fn baraat_type(&self) -> BaraatType {
        match self {
            BaraatMessage::Request { .. } => BaraatType::Request,
            BaraatMessage::Data(_) => BaraatType::Data,
            BaraatMessage::Ack { .. } => BaraatType::Ack,
            BaraatMessage::Fin { .. } => BaraatType::Fin,
            BaraatMessage::Done { .. } => BaraatType::Done,
            BaraatMessage::FinAck { .. } => BaraatType::FinAck,
            BaraatMessage::DoneAck { .. } => BaraatType::DoneAck,
        }
    }

    pub const fn kind(&self) -> &'static str {
        match self {
            BaraatMessage::Request { .. } => "baraat_request",
            BaraatMessage::Data(_) => "baraat_data",
            BaraatMessage::Ack { .. } => "baraat_ack",
            BaraatMessage::Fin { .. } => "baraat_fin",
            BaraatMessage::Done { .. } => "baraat_done",
            BaraatMessage::FinAck { .. } => "baraat_fin_ack",
            BaraatMessage::DoneAck { .. } => "baraat_done_ack",
        }
    }

    pub const fn task_id(&self) -> Option<u64> {
        match self {
            BaraatMessage::Request { task_id, .. }
            | BaraatMessage::Fin { task_id, .. }
            | BaraatMessage::Done { task_id, .. }
            | BaraatMessage::DoneAck { task_id } => Some(*task_id),
            BaraatMessage::Data(d) => Some(d.task_id),
            BaraatMessage::Ack { .. } | BaraatMessage::FinAck { .. } => None,
        }
    }

    pub const fn payload(&self) -> Option<&'a [u8]> {
        match self {
            BaraatMessage::Data(d) => Some(d.payload),
            _ => None,
        }
    }

    pub const fn encoded_len(&self) -> usize {
        let payload = match self {
            BaraatMessage::Data(d) => d.payload.len(),
            _ => 0,
        };
        self.baraat_type().fixed_len() + payload
    }

    /// Writes the message to the front of `buf` and returns its length.
    /// Nothing is written if the message is invalid or `buf` too small.
    pub fn encode(&self, buf: &mut [u8]) -> Result<usize, EncodeError> {
        self.validate()?;
        crate::wire::encode_into(buf, self.encoded_len(), |w| self.write(w))
    }

    /// Encodes into a freshly allocated vector (tests, control paths).
    pub fn to_vec(&self) -> Result<Vec<u8>, EncodeError> {
        let mut v = vec![0; self.encoded_len()];
        self.encode(&mut v)?;
        Ok(v)
    }

    fn validate(&self) -> Result<(), EncodeError> {
        match self {
            BaraatMessage::Data(d) => {
                if d.answer.is_some() && d.request.is_none() {
                    return Err(EncodeError::Invalid(ERR_FEEDBACK_WITHOUT_REQUEST));
                }
                check_payload(d.payload, MAX_BARAAT_PAYLOAD)
            }
            _ => Ok(()),
        }
    }

    fn write(&self, w: &mut Writer<'_>) -> Result<(), EncodeError> {
        w.u8(Family::Baraat.framing_byte())?;
        w.u8(self.baraat_type().code())?;
        match *self {
            BaraatMessage::Request {
                server,
                task_id,
                flow,
                bytes,
            } => {
                w.u8(server)?;
                w.u64(task_id)?;
                w.u32(flow)?;
                w.u64(bytes)
            }
            BaraatMessage::Data(d) => {
                let mut flags = 0;
                if let Some(r) = d.request {
                    flags |= FLAG_REQUEST;
                    if r.new_flow {
                        flags |= FLAG_NEW_FLOW;
                    }
                }
                if d.answer.is_some() {
                    flags |= FLAG_FEEDBACK;
                }
                w.u8(flags)?;
                w.u8(d.server)?;
                w.u64(d.task_id)?;
                w.u32(d.flow)?;
                w.u32(d.seq)?;
                let r = d.request.unwrap_or_default();
                let a = d.answer.unwrap_or_default();
                w.u32(r.req)?;
                for rate in [r.demand, r.prev_demand, r.prev_alloc, a.ar, a.nr] {
                    rate.write(w)?;
                }
                w.payload(d.payload)
            }
            BaraatMessage::Ack {
                server,
                flow,
                cumulative,
                echo,
            } => {
                w.u8(server)?;
                w.u8(if echo.is_some() { FLAG_FEEDBACK } else { 0 })?;
                w.u32(flow)?;
                w.u32(cumulative)?;
                let e = echo.unwrap_or_default();
                w.u32(e.req)?;
                e.answer.ar.write(w)?;
                e.answer.nr.write(w)
            }
            BaraatMessage::Fin {
                server,
                task_id,
                flow,
                demand,
                alloc,
            } => {
                w.u8(server)?;
                w.u64(task_id)?;
                w.u32(flow)?;
                demand.write(w)?;
                alloc.write(w)
            }
            BaraatMessage::Done { task_id, flows } => {
                w.u64(task_id)?;
                w.u32(flows)
            }
            BaraatMessage::FinAck { server, flow } => {
                w.u8(server)?;
                w.u32(flow)
            }
            BaraatMessage::DoneAck { task_id } => w.u64(task_id),
        }
    }

    fn decode(bytes: &'a [u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(bytes);
        r.u8()?; // framing byte
        let code = r.u8()?;
        let ty = BaraatType::from_code(code).ok_or(DecodeError::UnknownType(code))?;
        r.require(ty.fixed_len())?;
        let msg = match ty {
            BaraatType::Request => BaraatMessage::Request {
                server: r.u8()?,
                task_id: r.u64()?,
                flow: r.u32()?,
                bytes: r.u64()?,
            },
            BaraatType::Data => return decode_data(&mut r).map(BaraatMessage::Data),
            BaraatType::Ack => {
                let server = r.u8()?;
                let flags = r.u8()?;
                if flags & !FLAG_FEEDBACK != 0 {
                    return Err(DecodeError::Inconsistent(ERR_RESERVED_FLAGS));
                }
                let (flow, cumulative) = (r.u32()?, r.u32()?);
                let e = SpcEcho {
                    req: r.u32()?,
                    answer: SpcAnswer {
                        ar: Rate::read(&mut r)?,
                        nr: Rate::read(&mut r)?,
                    },
                };
                let echo = absent_if_unflagged(flags & FLAG_FEEDBACK != 0, e)?;
                BaraatMessage::Ack {
                    server,
                    flow,
                    cumulative,
                    echo,
                }
            }
            BaraatType::Fin => BaraatMessage::Fin {
                server: r.u8()?,
                task_id: r.u64()?,
                flow: r.u32()?,
                demand: Rate::read(&mut r)?,
                alloc: Rate::read(&mut r)?,
            },
            BaraatType::Done => BaraatMessage::Done {
                task_id: r.u64()?,
                flows: r.u32()?,
            },
            BaraatType::FinAck => BaraatMessage::FinAck {
                server: r.u8()?,
                flow: r.u32()?,
            },
            BaraatType::DoneAck => BaraatMessage::DoneAck { task_id: r.u64()? },
        };
        r.finish()?;
        Ok(msg)
    }
}

/// `Some(v)` if the flag is set; otherwise `None`, provided `v` is all
/// zeros (the canonical encoding of an absent part).
fn absent_if_unflagged<T: Default + PartialEq>(
    flagged: bool,
    v: T,
) -> Result<Option<T>, DecodeError> {
    match (flagged, v == T::default()) {
        (true, _) => Ok(Some(v)),
        (false, true) => Ok(None),
        (false, false) => Err(DecodeError::Inconsistent(ERR_ABSENT_NONZERO)),
    }
}

fn decode_data<'a>(r: &mut Reader<'a>) -> Result<BaraatData<'a>, DecodeError> {
    let flags = r.u8()?;
    if flags & !(FLAG_REQUEST | FLAG_NEW_FLOW | FLAG_FEEDBACK) != 0 {
        return Err(DecodeError::Inconsistent(ERR_RESERVED_FLAGS));
    }
    let has_request = flags & FLAG_REQUEST != 0;
    if flags & FLAG_NEW_FLOW != 0 && !has_request {
        return Err(DecodeError::Inconsistent(ERR_NEW_WITHOUT_REQUEST));
    }
    if flags & FLAG_FEEDBACK != 0 && !has_request {
        return Err(DecodeError::Inconsistent(ERR_FEEDBACK_WITHOUT_REQUEST));
    }
    let server = r.u8()?;
    let task_id = r.u64()?;
    let flow = r.u32()?;
    let seq = r.u32()?;
    let request = SpcHeader {
        req: r.u32()?,
        new_flow: flags & FLAG_NEW_FLOW != 0,
        demand: Rate::read(r)?,
        prev_demand: Rate::read(r)?,
        prev_alloc: Rate::read(r)?,
    };
    let answer = SpcAnswer {
        ar: Rate::read(r)?,
        nr: Rate::read(r)?,
    };
    Ok(BaraatData {
        server,
        task_id,
        flow,
        seq,
        request: absent_if_unflagged(has_request, request)?,
        answer: absent_if_unflagged(flags & FLAG_FEEDBACK != 0, answer)?,
        payload: r.payload(MAX_BARAAT_PAYLOAD)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode;

    fn data(payload: &[u8]) -> BaraatData<'_> {
        BaraatData {
            server: 1,
            task_id: 7,
            flow: 2,
            seq: 3,
            request: Some(SpcHeader {
                req: 9,
                new_flow: true,
                demand: Rate::new(8e7).unwrap(),
                prev_demand: Rate::new(1e6).unwrap(),
                prev_alloc: Rate::new(5e5).unwrap(),
            }),
            answer: None,
            payload,
        }
    }

    #[test]
    fn a_data_packet_round_trips() {
        let m = BaraatMessage::Data(data(b"abc"));
        let b = m.to_vec().unwrap();
        assert_eq!(b.len(), DATA_FIXED + 3);
        assert_eq!(decode_baraat(&b), Ok(m));
        assert_eq!(m.kind(), "baraat_data");
        assert_eq!(m.task_id(), Some(7));
        // Not a scheduler's message, and no other family's is Baraat's.
        assert_eq!(
            decode(&b),
            Err(DecodeError::Inconsistent(crate::ERR_BARAAT_FAMILY))
        );
        assert_eq!(
            decode_baraat(&[0x11, 4]),
            Err(DecodeError::Inconsistent(ERR_NOT_BARAAT))
        );
    }

    /// A rate Alg. 1 would add into a port's counters must be a rate: one
    /// NaN demand would make every later allocation at that port NaN.
    #[test]
    fn rates_that_are_not_rates_are_refused_in_every_field() {
        let good = BaraatMessage::Data(data(b"")).to_vec().unwrap();
        for bad in [
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            -1.0,
            -0.0,
            1e300,
        ] {
            for field in 0..5 {
                let mut b = good.clone();
                let at = 2 + 1 + 1 + 8 + 4 + 4 + 4 + 8 * field;
                b[at..at + 8].copy_from_slice(&bad.to_bits().to_be_bytes());
                assert_eq!(
                    decode_baraat(&b),
                    Err(DecodeError::Inconsistent(ERR_RATE)),
                    "{bad} in rate field {field}"
                );
            }
        }
        assert_eq!(Rate::new(-0.0).map(|r| r.bps().to_bits()), Some(0));
    }

    #[test]
    fn feedback_needs_a_request_and_absent_parts_are_zero() {
        let mut d = data(b"");
        d.request = None;
        d.answer = Some(SpcAnswer::default());
        let m = BaraatMessage::Data(d);
        assert_eq!(
            m.to_vec(),
            Err(EncodeError::Invalid(ERR_FEEDBACK_WITHOUT_REQUEST))
        );
        let ack = BaraatMessage::Ack {
            server: 0,
            flow: 1,
            cumulative: 2,
            echo: None,
        };
        let mut b = ack.to_vec().unwrap();
        assert_eq!(decode_baraat(&b), Ok(ack));
        let last = b.len() - 1;
        b[last] = 1;
        assert_eq!(
            decode_baraat(&b),
            Err(DecodeError::Inconsistent(ERR_ABSENT_NONZERO))
        );
    }
}
