//! Sealed state messages: a keyed MAC and a sequence number on every
//! message one scheduler or worker sends to change what another believes
//! about it: Horus idleAdd, idleRemove, loadUpdate (leaf → spine, §3.4),
//! keepAlive (worker → leaf, §A.3), and RS-H's LOAD_REPORT (leaf → spine,
//! Horus §4.1).
//!
//! The paper's messages carry no authentication: any host that can reach a
//! spine can tell it a rack is busy. A sealed message is the unsealed one
//! followed by a 16-byte trailer:
//!
//! ```text
//! message (framing byte, Horus header, body) | seq u64 | tag u64
//! ```
//!
//! `tag` is SipHash-2-4 under the cluster's 128-bit notice key over every
//! byte before it (message and `seq`), so a changed header, body or sequence
//! number fails the check. `seq` only ever grows per sender; the receiver
//! refuses one not above the last it accepted from that sender (a replay).
//! SipHash-2-4 rather than the control protocol's HMAC-SHA256: a keyed PRF
//! built for short inputs, a few dozen cycles for these 36-byte messages,
//! and simple enough (64-bit adds, rotates and xors) for an XDP program.
//!
//! The trailer makes a message exactly [`SEAL_LEN`] bytes longer than its
//! fixed size, so [`split`] tells sealed from unsealed by length alone and
//! [`crate::decode`] of the message part is unchanged.
//!
//! **Sealed tasks** (leaf → worker). A leaf seals every task packet it
//! forwards to a worker (Horus taskFirst/taskContinuation, RackSched
//! REQF/REQR) with the same trailer and the same tag, SipHash-2-4 over
//! every byte of the task (header, task id, flags, class, service time,
//! payload length and payload) and `seq`. A task's length is its fixed part
//! plus the `payload_len` it declares, so [`split_task`] again tells sealed
//! from unsealed by length alone. Only workers check task seals
//! ([`open_task`]); clients' tasks to spines and leaves stay unsealed. The
//! low bit of a task's `seq` names the sealer within one leaf (0: the
//! daemon, 1: its XDP program), each with its own counter, so a worker
//! keeps one replay window per leaf address and stream.

use core::hash::Hasher;

use siphasher::sip::SipHasher24;

use crate::error::EncodeError;
use crate::horus::{HorusType, BODY_OFFSET, TASK_FIXED};
use crate::racksched::{RackSchedType, LOAD_REPORT_LEN, PACKET_FIXED};
use crate::Family;

/// Bytes a seal adds: `seq` and `tag`, both big-endian u64.
pub const SEAL_LEN: usize = 16;

/// Bytes of a notice key (SipHash's 128-bit key).
pub const NOTICE_KEY_LEN: usize = 16;

/// The cluster's key for sealed state messages. `Debug` never prints it.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct NoticeKey(pub [u8; NOTICE_KEY_LEN]);

impl core::fmt::Debug for NoticeKey {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("NoticeKey(<redacted>)")
    }
}

impl NoticeKey {
    /// SipHash-2-4 of `bytes` under this key.
    pub fn tag(&self, bytes: &[u8]) -> u64 {
        let mut h = SipHasher24::new_with_key(&self.0);
        h.write(bytes);
        h.finish()
    }
}

/// A seal as read from a datagram (not yet checked).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Seal {
    /// The sender's sequence number.
    pub seq: u64,
    /// SipHash-2-4 of the message and `seq`.
    pub tag: u64,
}

/// Why a sealed message was refused (a driver counts each and drops it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, thiserror::Error)]
pub enum SealError {
    /// A message of a sealed type without a seal.
    #[error("unsealed state message")]
    Unsealed,
    /// The tag does not match: wrong key, or altered in flight.
    #[error("bad seal")]
    BadTag,
    /// A sequence number not above the last one accepted from its sender.
    #[error("replayed state message")]
    Replayed,
}

/// Whether messages of type `code` (a Horus type byte) are sealed.
pub const fn is_sealed_type(code: u8) -> bool {
    matches!(
        HorusType::from_code(code),
        Some(
            HorusType::IdleAdd
                | HorusType::IdleRemove
                | HorusType::LoadUpdate
                | HorusType::KeepAlive
        )
    )
}

/// Unsealed length of a sealable Horus type.
fn sealable_len(code: u8) -> Option<usize> {
    match HorusType::from_code(code)? {
        HorusType::LoadUpdate => Some(BODY_OFFSET + 4),
        HorusType::IdleAdd | HorusType::IdleRemove | HorusType::KeepAlive => Some(BODY_OFFSET),
        _ => None,
    }
}

/// Unsealed length of a datagram starting with framing byte `frame` and
/// type `code`, if messages of that kind are sealed: the Horus types of
/// [`is_sealed_type`] and RackSched's LOAD_REPORT.
fn sealed_kind_len(frame: u8, code: u8) -> Option<usize> {
    if frame == Family::Horus.framing_byte() {
        sealable_len(code)
    } else if frame == Family::RackSched.framing_byte() && code == RackSchedType::LoadReport.code()
    {
        Some(LOAD_REPORT_LEN)
    } else {
        None
    }
}

/// Whether `datagram` is of a kind that is sealed (whether or not it
/// carries a seal).
pub fn is_sealed_kind(datagram: &[u8]) -> bool {
    match (datagram.first(), datagram.get(1)) {
        (Some(&frame), Some(&code)) => sealed_kind_len(frame, code).is_some(),
        _ => false,
    }
}

/// The sender of a sealed-kind message (whose replay window it is in): its
/// pool and node id, and whether it is a keep-alive (to a leaf; every
/// other sealed kind goes to a spine). `None` for any other datagram.
pub fn sender(msg: &[u8]) -> Option<(u16, u16, bool)> {
    if !is_sealed_kind(msg) || msg.len() < 6 {
        return None;
    }
    let word = |at: usize| u16::from_be_bytes([msg[at], msg[at + 1]]);
    if msg[0] == Family::Horus.framing_byte() {
        // Horus header: framing, type, pool_id, src_id.
        Some((word(2), word(4), msg[1] == HorusType::KeepAlive.code()))
    } else {
        // LOAD_REPORT: framing, type, src_id, pool_id.
        Some((word(4), word(2), false))
    }
}

/// Splits a datagram into its message and its seal: a Horus message of a
/// sealed type exactly [`SEAL_LEN`] bytes longer than its fixed size is
/// sealed; anything else is returned whole with `None` (and decodes, or
/// fails to, as it always did).
pub fn split(datagram: &[u8]) -> (&[u8], Option<Seal>) {
    let (Some(&frame), Some(&code)) = (datagram.first(), datagram.get(1)) else {
        return (datagram, None);
    };
    match sealed_kind_len(frame, code) {
        Some(n) if datagram.len() == n + SEAL_LEN => (&datagram[..n], Some(seal_at(datagram, n))),
        _ => (datagram, None),
    }
}

/// Checks the seal of a datagram [`split`] found sealed; returns its `seq`.
/// Replay is the receiver's to judge (it knows the last `seq` per sender).
pub fn verify(key: &NoticeKey, datagram: &[u8]) -> Result<u64, SealError> {
    let (msg, seal) = split(datagram);
    check_tag(key, datagram, msg.len(), seal)
}

/// The seal's `seq` if its tag is SipHash-2-4 of the first `plain` bytes
/// of `datagram` and the sequence number after them.
fn check_tag(
    key: &NoticeKey,
    datagram: &[u8],
    plain: usize,
    seal: Option<Seal>,
) -> Result<u64, SealError> {
    let seal = seal.ok_or(SealError::Unsealed)?;
    let signed = &datagram[..plain + 8];
    if key.tag(signed) == seal.tag {
        Ok(seal.seq)
    } else {
        Err(SealError::BadTag)
    }
}

/// The seal after the first `n` bytes of `datagram` (which must hold
/// `n + SEAL_LEN`).
fn seal_at(datagram: &[u8], n: usize) -> Seal {
    let word = |at: usize| {
        let mut b = [0u8; 8];
        b.copy_from_slice(&datagram[at..at + 8]);
        u64::from_be_bytes(b)
    };
    Seal {
        seq: word(n),
        tag: word(n + 8),
    }
}

/// Appends `seq` and the tag after the `len`-byte message at the start of
/// `buf`; returns the sealed length.
fn append_seal(
    key: &NoticeKey,
    buf: &mut [u8],
    len: usize,
    seq: u64,
) -> Result<usize, EncodeError> {
    let needed = len + SEAL_LEN;
    if buf.len() < needed {
        return Err(EncodeError::BufferTooSmall {
            needed,
            got: buf.len(),
        });
    }
    buf[len..len + 8].copy_from_slice(&seq.to_be_bytes());
    let tag = key.tag(&buf[..len + 8]);
    buf[len + 8..needed].copy_from_slice(&tag.to_be_bytes());
    Ok(needed)
}

/// A receiver's rule for one datagram, the socket daemon's and the XDP
/// spine's alike: without a key a seal is cut off and ignored; with one, a
/// message of a sealed type must carry a seal under it (else
/// [`SealError::Unsealed`] or [`SealError::BadTag`]). Returns the message
/// and, when a seal was checked, its sequence number, which the receiver
/// then checks against the last it took from that sender (a replay). Any
/// other datagram is returned whole.
pub fn open<'a>(
    key: Option<&NoticeKey>,
    datagram: &'a [u8],
) -> Result<(&'a [u8], Option<u64>), SealError> {
    let (msg, seal) = split(datagram);
    let Some(key) = key else {
        return Ok((msg, None));
    };
    if !is_sealed_kind(datagram) {
        return Ok((datagram, None));
    }
    if seal.is_none() {
        return Err(SealError::Unsealed);
    }
    verify(key, datagram).map(|seq| (msg, Some(seq)))
}

/// Seals the `len`-byte message at the start of `buf` in place: appends
/// `seq` and the tag; returns the sealed length. The message must be of a
/// sealed type (an encoded one, as [`crate::Message::encode`] wrote it).
pub fn seal(key: &NoticeKey, buf: &mut [u8], len: usize, seq: u64) -> Result<usize, EncodeError> {
    const ERR: &str = "only idleAdd, idleRemove, loadUpdate, keepAlive and LOAD_REPORT are sealed";
    let (Some(&frame), Some(&code)) = (buf.first(), buf.get(1)) else {
        return Err(EncodeError::Invalid(ERR));
    };
    if sealed_kind_len(frame, code) != Some(len) {
        return Err(EncodeError::Invalid(ERR));
    }
    append_seal(key, buf, len, seq)
}

/// Fixed length (through `payload_len`) of a task packet starting with
/// framing byte `frame` and type `code`: Horus taskFirst and
/// taskContinuation, RackSched REQF and REQR.
fn task_fixed_len(frame: u8, code: u8) -> Option<usize> {
    if frame == Family::Horus.framing_byte() {
        match HorusType::from_code(code)? {
            HorusType::TaskFirst | HorusType::TaskContinuation => Some(TASK_FIXED),
            _ => None,
        }
    } else if frame == Family::RackSched.framing_byte() {
        match RackSchedType::from_code(code)? {
            RackSchedType::ReqFirst | RackSchedType::ReqRest => Some(PACKET_FIXED),
            _ => None,
        }
    } else {
        None
    }
}

/// Whether `datagram` is a task packet (by its framing and type bytes),
/// whether or not it is sealed or complete.
pub fn is_task(datagram: &[u8]) -> bool {
    match (datagram.first(), datagram.get(1)) {
        (Some(&frame), Some(&code)) => task_fixed_len(frame, code).is_some(),
        _ => false,
    }
}

/// Unsealed length of a task packet: its fixed part and the `payload_len`
/// it declares. `None` for other datagrams and tasks too short to say.
pub fn task_len(datagram: &[u8]) -> Option<usize> {
    let fixed = task_fixed_len(*datagram.first()?, *datagram.get(1)?)?;
    let len = datagram.get(fixed - 2..fixed)?;
    Some(fixed + usize::from(u16::from_be_bytes([len[0], len[1]])))
}

/// Splits a task packet into the task and its seal: a task exactly
/// [`SEAL_LEN`] bytes longer than its declared length is sealed; anything
/// else is returned whole with `None`.
pub fn split_task(datagram: &[u8]) -> (&[u8], Option<Seal>) {
    match task_len(datagram) {
        Some(n) if datagram.len() == n + SEAL_LEN => (&datagram[..n], Some(seal_at(datagram, n))),
        _ => (datagram, None),
    }
}

/// A worker's rule for one datagram: without a key a task's seal is cut off
/// and ignored; with one, a task packet must carry a seal under it (else
/// [`SealError::Unsealed`], also for a task whose length fits neither
/// form, or [`SealError::BadTag`]). Returns the task and, when a seal was
/// checked, its sequence number for the worker's replay window. Any other
/// datagram is returned whole.
pub fn open_task<'a>(
    key: Option<&NoticeKey>,
    datagram: &'a [u8],
) -> Result<(&'a [u8], Option<u64>), SealError> {
    if !is_task(datagram) {
        return Ok((datagram, None));
    }
    let (msg, seal) = split_task(datagram);
    match key {
        None => Ok((msg, None)),
        Some(key) => check_tag(key, datagram, msg.len(), seal).map(|seq| (msg, Some(seq))),
    }
}

/// Seals the `len`-byte encoded task packet at the start of `buf` in place
/// (a leaf, before it sends the task to a worker); returns the sealed
/// length.
pub fn seal_task(
    key: &NoticeKey,
    buf: &mut [u8],
    len: usize,
    seq: u64,
) -> Result<usize, EncodeError> {
    if task_len(&buf[..len.min(buf.len())]) != Some(len) {
        return Err(EncodeError::Invalid(
            "only complete task packets (taskFirst, taskContinuation, REQF, REQR) are sealed as tasks",
        ));
    }
    append_seal(key, buf, len, seq)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{decode, HorusBody, HorusHeader, HorusMessage, Message, MAX_DATAGRAM};

    const KEY: NoticeKey = NoticeKey(*b"0123456789abcdef");

    fn encoded(body: HorusBody<'static>) -> ([u8; MAX_DATAGRAM], usize) {
        let m = Message::Horus(HorusMessage {
            header: HorusHeader {
                pool_id: 1,
                src_id: 1,
                ..Default::default()
            },
            body,
        });
        let mut buf = [0u8; MAX_DATAGRAM];
        let n = m.encode(&mut buf).unwrap();
        (buf, n)
    }

    #[test]
    fn sealed_messages_verify_and_decode_and_tampering_fails() {
        for body in [
            HorusBody::IdleAdd,
            HorusBody::IdleRemove,
            HorusBody::LoadUpdate { load: 0x1_6000 },
            HorusBody::KeepAlive,
        ] {
            let (mut buf, n) = encoded(body);
            let unsealed = buf[..n].to_vec();
            assert_eq!(verify(&KEY, &unsealed), Err(SealError::Unsealed));
            let s = seal(&KEY, &mut buf, n, 42).unwrap();
            assert_eq!(s, n + SEAL_LEN);
            assert_eq!(verify(&KEY, &buf[..s]), Ok(42));
            let (msg, seal) = split(&buf[..s]);
            assert_eq!(msg, &unsealed[..]);
            assert_eq!(seal.map(|s| s.seq), Some(42));
            assert!(decode(msg).is_ok());
            // Every byte is covered: flip each in turn.
            for i in 0..s {
                let mut t = buf;
                t[i] ^= 1;
                assert!(verify(&KEY, &t[..s]).is_err(), "byte {i} not covered");
            }
            assert_eq!(
                verify(&NoticeKey(*b"fedcba9876543210"), &buf[..s]),
                Err(SealError::BadTag)
            );
        }
    }

    #[test]
    fn racksched_load_reports_are_sealed_and_name_their_sender() {
        use crate::{RackSchedLoadReport, RackSchedMessage};
        let m = Message::RackSched(RackSchedMessage::LoadReport(RackSchedLoadReport {
            src_id: 3,
            pool_id: 9,
            load: 5 << 16,
        }));
        let mut buf = [0u8; MAX_DATAGRAM];
        let n = m.encode(&mut buf).unwrap();
        assert_eq!(open(Some(&KEY), &buf[..n]), Err(SealError::Unsealed));
        let s = seal(&KEY, &mut buf, n, 77).unwrap();
        let (msg, seq) = open(Some(&KEY), &buf[..s]).unwrap();
        assert_eq!((msg, seq), (&buf[..n], Some(77)));
        assert_eq!(decode(msg), Ok(m));
        assert_eq!(sender(msg), Some((9, 3, false)));
        let mut t = buf;
        t[9] ^= 1; // the load
        assert_eq!(open(Some(&KEY), &t[..s]), Err(SealError::BadTag));
        // Sealing off: the seal is cut off and ignored.
        assert_eq!(open(None, &buf[..s]), Ok((&buf[..n], None)));
    }

    #[test]
    fn sealed_tasks_cover_every_byte_and_open_only_at_their_length() {
        use crate::HorusTask;
        let (mut buf, n) = encoded(HorusBody::TaskFirst(HorusTask {
            task_id: 7,
            is_last: true,
            service_time_ns: 4_900_000_000,
            payload: b"key",
            ..Default::default()
        }));
        let plain = buf[..n].to_vec();
        assert_eq!(task_len(&plain), Some(n));
        assert_eq!(open_task(Some(&KEY), &plain), Err(SealError::Unsealed));
        assert_eq!(open_task(None, &plain), Ok((&plain[..], None)));
        // A notice sealer refuses a task, and the other way round.
        assert!(seal(&KEY, &mut buf.clone(), n, 1).is_err());
        let (mut ka, k) = encoded(HorusBody::KeepAlive);
        assert!(seal_task(&KEY, &mut ka, k, 1).is_err());
        let s = seal_task(&KEY, &mut buf, n, 9).unwrap();
        assert_eq!(s, n + SEAL_LEN);
        assert_eq!(open_task(Some(&KEY), &buf[..s]), Ok((&plain[..], Some(9))));
        assert_eq!(open_task(None, &buf[..s]), Ok((&plain[..], None)));
        assert!(decode(&plain).is_ok());
        for i in 0..s {
            let mut t = buf;
            t[i] ^= 1;
            assert!(
                !matches!(open_task(Some(&KEY), &t[..s]), Ok((_, Some(_)))),
                "byte {i} not covered"
            );
        }
        // A byte more or less is no seal at all.
        assert_eq!(
            open_task(Some(&KEY), &buf[..s - 1]),
            Err(SealError::Unsealed)
        );
        assert_eq!(
            open_task(Some(&KEY), &buf[..s + 1]),
            Err(SealError::Unsealed)
        );
        // Not a task: returned whole, whatever the key.
        assert_eq!(open_task(Some(&KEY), &ka[..k]), Ok((&ka[..k], None)));
    }

    #[test]
    fn replies_are_not_sealed_and_siphash_matches_the_reference_vector() {
        let (mut buf, n) = encoded(HorusBody::Reply(Default::default()));
        assert!(seal(&KEY, &mut buf, n, 1).is_err());
        assert!(seal_task(&KEY, &mut buf, n, 1).is_err());
        assert!(!is_sealed_type(HorusType::Reply.code()));
        // The SipHash paper's test vector (appendix A): key 00..0f,
        // message 00..0e.
        let mut k = [0u8; 16];
        for (i, b) in k.iter_mut().enumerate() {
            *b = i as u8;
        }
        let m: Vec<u8> = (0..15).collect();
        assert_eq!(NoticeKey(k).tag(&m), 0xa129ca6149be45e5);
    }
}
