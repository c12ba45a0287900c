//! netsched wire format: every message Horus (NSDI'24), RackSched (OSDI'20),
//! the pull schedulers (Draconis EuroSys'24, R2P2 JBSQ, Sparrow) and Baraat's
//! packet-level SPC lab (SIGCOMM'14) exchange,
//! as typed values with allocation-free encode and decode.
//!
//! Every datagram starts with one framing byte: wire version in the high
//! nibble, protocol family in the low nibble ([`Family`]). The families can
//! therefore share one UDP port, and a receiver rejects a datagram from another
//! version before reading anything else. All multi-byte fields are big-endian.
//! docs/protocol.md has the byte layout of every message.
//!
//! Decoded messages borrow their payload from the datagram, so decoding never
//! allocates, and decoding never panics: malformed input yields a
//! [`DecodeError`] a driver can count as a drop. The encoding is canonical:
//! if `decode(b)` succeeds, encoding the result gives back exactly `b`.
//!
//! ```
//! use netsched_proto::{decode, HorusBody, HorusHeader, HorusMessage, HorusTask, Message};
//!
//! let task = HorusTask { task_id: netsched_proto::task_id::new(7, 1), is_last: true, payload: b"key", ..Default::default() };
//! let msg = Message::Horus(HorusMessage { header: HorusHeader { pool_id: 3, ..Default::default() }, body: HorusBody::TaskFirst(task) });
//! let mut buf = [0u8; netsched_proto::MAX_DATAGRAM];
//! let n = msg.encode(&mut buf).unwrap();
//! assert_eq!(decode(&buf[..n]), Ok(msg));
//! assert_eq!(msg.kind(), "horus_task_first");
//! ```

#![forbid(unsafe_code)]
#![warn(missing_docs)]

/// A one-byte wire enumeration: the enum with its codes, `code()`, and
/// `from_code()`, which names exactly the listed codes, so a decoder that
/// maps `None` to an error rejects every other byte.
macro_rules! wire_enum {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident {
            $($(#[$variant_meta:meta])* $variant:ident = $code:literal,)+
        }
    ) => {
        $(#[$meta])*
        #[repr(u8)]
        $vis enum $name {
            $($(#[$variant_meta])* $variant = $code,)+
        }

        impl $name {
            /// The wire code.
            pub const fn code(self) -> u8 {
                self as u8
            }

            /// The value a wire code names, if it names one.
            pub const fn from_code(code: u8) -> Option<Self> {
                match code {
                    $($code => Some($name::$variant),)+
                    _ => None,
                }
            }
        }
    };
}

mod baraat;
mod draconis;
mod error;
mod horus;
mod racksched;
pub mod seal;
mod wire;

pub use baraat::{
    decode_baraat, BaraatData, BaraatMessage, BaraatType, Rate, SpcAnswer, SpcEcho, SpcHeader,
    MAX_BARAAT_PAYLOAD, MAX_RATE_BPS,
};
pub use draconis::{
    CompletionStatus, DraconisMessage, DraconisType, TaskVec, WireTask, MAX_PULL_TASKS,
    WIRE_TASK_LEN,
};
pub use error::{DecodeError, EncodeError};
pub use horus::{
    HorusBody, HorusHeader, HorusMessage, HorusReply, HorusTask, HorusType, ReplyStatus,
    HORUS_HEADER_LEN, MAX_REPLY_PAYLOAD, MAX_TASK_PAYLOAD,
};
pub use racksched::{
    RackSchedLoadReport, RackSchedMessage, RackSchedPacket, RackSchedType, ReqId,
    MAX_RACKSCHED_PAYLOAD,
};

/// Largest datagram any message encodes to: a 1500-byte Ethernet MTU less
/// the 20-byte IPv4 and 8-byte UDP headers, so one message is one unfragmented
/// UDP datagram. Payload limits derive from it.
pub const MAX_DATAGRAM: usize = 1472;

/// Wire version, the high nibble of the framing byte.
pub const WIRE_VERSION: u8 = 1;

/// Protocol family, the low nibble of the framing byte.
///
/// 0 and 5-15 are unassigned.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Family {
    /// Horus (NSDI'24).
    Horus = 1,
    /// RackSched (OSDI'20), including the RS-H load report.
    RackSched = 2,
    /// Pull scheduling: Draconis (EuroSys'24), R2P2 JBSQ, Sparrow.
    Draconis = 3,
    /// Baraat's packet-level SPC lab (SIGCOMM'14).
    Baraat = 4,
}

impl Family {
    /// The byte every datagram of this family starts with.
    pub const fn framing_byte(self) -> u8 {
        (WIRE_VERSION << 4) | self as u8
    }

    /// Reads the framing byte only, e.g. to hand a datagram to the right
    /// handler before decoding it.
    pub fn of(bytes: &[u8]) -> Result<Family, DecodeError> {
        let b = *bytes
            .first()
            .ok_or(DecodeError::Truncated { needed: 1, got: 0 })?;
        if b >> 4 != WIRE_VERSION {
            return Err(DecodeError::Inconsistent("unsupported wire version"));
        }
        match b & 0x0f {
            1 => Ok(Family::Horus),
            2 => Ok(Family::RackSched),
            3 => Ok(Family::Draconis),
            4 => Ok(Family::Baraat),
            _ => Err(DecodeError::Inconsistent("unknown protocol family")),
        }
    }
}

/// Horus task ids (Horus §3.2): the application id concatenated with a 32-bit
/// per-application sequence number, which the paper deems enough for tasks to
/// be long finished by the time it wraps.
pub mod task_id {
    /// `app_id << 32 | seq`.
    pub const fn new(app_id: u32, seq: u32) -> u64 {
        ((app_id as u64) << 32) | seq as u64
    }

    /// The application half.
    pub const fn app_id(id: u64) -> u32 {
        (id >> 32) as u32
    }

    /// The sequence-number half.
    pub const fn seq(id: u64) -> u32 {
        id as u32
    }
}

/// Any netsched message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
// A job_submission carries its task list inline (`TaskVec`, 8 tasks) so that
// decoding never allocates; that makes the pull variant the largest. Boxing
// it would allocate per datagram and lose `Copy`.
#[allow(clippy::large_enum_variant)]
pub enum Message<'a> {
    /// A Horus message.
    Horus(HorusMessage<'a>),
    /// A RackSched message.
    RackSched(RackSchedMessage<'a>),
    /// A pull-scheduling message (Draconis, R2P2, Sparrow).
    Draconis(DraconisMessage),
}

impl<'a> From<HorusMessage<'a>> for Message<'a> {
    fn from(m: HorusMessage<'a>) -> Self {
        Message::Horus(m)
    }
}

impl From<DraconisMessage> for Message<'_> {
    fn from(m: DraconisMessage) -> Self {
        Message::Draconis(m)
    }
}

impl<'a> From<RackSchedMessage<'a>> for Message<'a> {
    fn from(m: RackSchedMessage<'a>) -> Self {
        Message::RackSched(m)
    }
}

/// Why [`decode`] refuses a datagram of the Baraat family.
pub const ERR_BARAAT_FAMILY: &str = "Baraat datagram: decode it with decode_baraat";

/// Decodes one datagram. Same as [`Message::decode`].
pub fn decode(bytes: &[u8]) -> Result<Message<'_>, DecodeError> {
    Message::decode(bytes)
}

impl<'a> Message<'a> {
    /// Decodes one datagram; the whole of `bytes` must be exactly one message.
    pub fn decode(bytes: &'a [u8]) -> Result<Self, DecodeError> {
        match Family::of(bytes)? {
            Family::Horus => HorusMessage::decode(bytes).map(Message::Horus),
            Family::RackSched => RackSchedMessage::decode(bytes).map(Message::RackSched),
            Family::Draconis => DraconisMessage::decode(bytes).map(Message::Draconis),
            // Not a scheduler's message: the SPC lab decodes its own
            // family with `decode_baraat`.
            Family::Baraat => Err(DecodeError::Inconsistent(ERR_BARAAT_FAMILY)),
        }
    }

    /// Writes the message to the front of `buf` and returns its length.
    /// Nothing is written if the message is invalid or `buf` too small.
    pub fn encode(&self, buf: &mut [u8]) -> Result<usize, EncodeError> {
        match self {
            Message::Horus(m) => m.validate()?,
            Message::RackSched(m) => m.validate()?,
            Message::Draconis(m) => m.validate()?,
        }
        wire::encode_into(buf, self.encoded_len(), |w| match self {
            Message::Horus(m) => m.write(w),
            Message::RackSched(m) => m.write(w),
            Message::Draconis(m) => m.write(w),
        })
    }

    /// Encodes into a freshly allocated vector; for tests and control paths,
    /// not the per-packet path.
    pub fn to_vec(&self) -> Result<Vec<u8>, EncodeError> {
        let mut v = vec![0; self.encoded_len()];
        self.encode(&mut v)?;
        Ok(v)
    }

    /// Encoded length in bytes, framing byte included.
    pub const fn encoded_len(&self) -> usize {
        match self {
            Message::Horus(m) => m.encoded_len(),
            Message::RackSched(m) => m.encoded_len(),
            Message::Draconis(m) => m.encoded_len(),
        }
    }

    /// The protocol family.
    pub const fn family(&self) -> Family {
        match self {
            Message::Horus(_) => Family::Horus,
            Message::RackSched(_) => Family::RackSched,
            Message::Draconis(_) => Family::Draconis,
        }
    }

    /// Stable snake_case name of the message type, for metrics labels and
    /// drop counters (e.g. `"horus_idle_add"`, `"racksched_reply"`).
    pub const fn kind(&self) -> &'static str {
        match self {
            Message::Horus(m) => m.kind(),
            Message::RackSched(m) => m.kind(),
            Message::Draconis(m) => m.kind(),
        }
    }

    /// The worker pool the message concerns: every Horus message, and the
    /// RS-H load report. RackSched requests and replies have no pool: the
    /// whole rack is one rack-scale computer behind an anycast address
    /// (OSDI'20 §3.1, §3.2).
    pub const fn pool_id(&self) -> Option<u16> {
        match self {
            Message::Horus(m) => Some(m.header.pool_id),
            Message::RackSched(RackSchedMessage::LoadReport(l)) => Some(l.pool_id),
            Message::RackSched(_) | Message::Draconis(_) => None,
        }
    }

    /// The task id of task, request and reply packets. RackSched's
    /// `<client_id, local_id>` is packed as [`ReqId::as_u64`] so both families
    /// key alike.
    pub const fn task_id(&self) -> Option<u64> {
        match self {
            Message::Horus(m) => m.task_id(),
            Message::RackSched(m) => match m.packet() {
                Some(p) => Some(p.req_id.as_u64()),
                None => None,
            },
            Message::Draconis(DraconisMessage::TaskAssignment { task, .. }) => Some(task.id),
            Message::Draconis(DraconisMessage::Completion { task_id, .. }) => Some(*task_id),
            Message::Draconis(_) => None,
        }
    }

    /// The application payload of task, request and reply packets.
    pub const fn payload(&self) -> Option<&'a [u8]> {
        match self {
            Message::Horus(m) => m.payload(),
            Message::RackSched(m) => match m.packet() {
                Some(p) => Some(p.payload),
                None => None,
            },
            Message::Draconis(_) => None,
        }
    }
}
