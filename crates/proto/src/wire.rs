//! Bounds-checked big-endian cursors.
//!
//! Every read and write goes through `get`/`get_mut`, so a miscomputed length
//! turns into an error instead of a panic on hostile input.

use crate::error::{DecodeError, EncodeError};

/// Reserved bits must be 0 so that a later version can give them meaning and
/// an old decoder rejects what it cannot interpret instead of misreading it.
pub(crate) const ERR_RESERVED_FLAGS: &str = "reserved flag bits set";

pub(crate) struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }

    pub(crate) fn pos(&self) -> usize {
        self.pos
    }

    pub(crate) fn remaining(&self) -> usize {
        self.buf.len().saturating_sub(self.pos)
    }

    /// Fails with `Truncated` unless the whole datagram is at least `total`
    /// bytes. Checking a message's fixed part up front makes `needed` report
    /// the full fixed length rather than the next field's end.
    pub(crate) fn require(&self, total: usize) -> Result<(), DecodeError> {
        if self.buf.len() < total {
            Err(DecodeError::Truncated {
                needed: total,
                got: self.buf.len(),
            })
        } else {
            Ok(())
        }
    }

    pub(crate) fn take(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        let end = self.pos.saturating_add(n);
        let got = self.buf.len();
        let s = self
            .buf
            .get(self.pos..end)
            .ok_or(DecodeError::Truncated { needed: end, got })?;
        self.pos = end;
        Ok(s)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], DecodeError> {
        let s = self.take(N)?;
        let a: &[u8; N] = s.first_chunk().ok_or(DecodeError::Truncated {
            needed: self.pos,
            got: self.buf.len(),
        })?;
        Ok(*a)
    }

    pub(crate) fn u8(&mut self) -> Result<u8, DecodeError> {
        self.array::<1>().map(|[b]| b)
    }

    pub(crate) fn u16(&mut self) -> Result<u16, DecodeError> {
        self.array().map(u16::from_be_bytes)
    }

    pub(crate) fn u32(&mut self) -> Result<u32, DecodeError> {
        self.array().map(u32::from_be_bytes)
    }

    pub(crate) fn u64(&mut self) -> Result<u64, DecodeError> {
        self.array().map(u64::from_be_bytes)
    }

    /// Ends a fixed-size message.
    pub(crate) fn finish(&self) -> Result<(), DecodeError> {
        if self.remaining() > 0 {
            Err(DecodeError::TrailingBytes)
        } else {
            Ok(())
        }
    }

    /// Reads `payload_len` and the payload that must end the datagram exactly.
    /// `max` is the largest payload the message type can carry within
    /// `MAX_DATAGRAM`; a larger declared length is rejected before looking at
    /// the datagram's length, since no datagram could ever satisfy it.
    pub(crate) fn payload(&mut self, max: usize) -> Result<&'a [u8], DecodeError> {
        let len = usize::from(self.u16()?);
        if len > max {
            return Err(DecodeError::Inconsistent(
                "payload_len exceeds MAX_DATAGRAM",
            ));
        }
        let end = self.pos.saturating_add(len);
        let got = self.buf.len();
        if got < end {
            return Err(DecodeError::Truncated { needed: end, got });
        }
        if got > end {
            return Err(DecodeError::Inconsistent(
                "datagram longer than payload_len declares",
            ));
        }
        self.take(len)
    }
}

pub(crate) struct Writer<'a> {
    buf: &'a mut [u8],
    pos: usize,
}

impl<'a> Writer<'a> {
    pub(crate) fn new(buf: &'a mut [u8]) -> Self {
        Writer { buf, pos: 0 }
    }

    pub(crate) fn pos(&self) -> usize {
        self.pos
    }

    pub(crate) fn bytes(&mut self, src: &[u8]) -> Result<(), EncodeError> {
        let end = self.pos.saturating_add(src.len());
        let got = self.buf.len();
        let dst = self
            .buf
            .get_mut(self.pos..end)
            .ok_or(EncodeError::BufferTooSmall { needed: end, got })?;
        dst.copy_from_slice(src);
        self.pos = end;
        Ok(())
    }

    pub(crate) fn u8(&mut self, v: u8) -> Result<(), EncodeError> {
        self.bytes(&[v])
    }

    pub(crate) fn u16(&mut self, v: u16) -> Result<(), EncodeError> {
        self.bytes(&v.to_be_bytes())
    }

    pub(crate) fn u32(&mut self, v: u32) -> Result<(), EncodeError> {
        self.bytes(&v.to_be_bytes())
    }

    pub(crate) fn u64(&mut self, v: u64) -> Result<(), EncodeError> {
        self.bytes(&v.to_be_bytes())
    }

    /// Writes `payload_len` then the payload. The caller has already checked
    /// the length against the type's maximum, which is below `u16::MAX`.
    pub(crate) fn payload(&mut self, payload: &[u8]) -> Result<(), EncodeError> {
        let len = u16::try_from(payload.len()).map_err(|_| EncodeError::PayloadTooLarge {
            len: payload.len(),
            max: usize::from(u16::MAX),
        })?;
        self.u16(len)?;
        self.bytes(payload)
    }
}

/// Writes a message of `len` bytes to the front of `buf` with `write`;
/// nothing is written if `buf` is too small. Every family's `encode`.
pub(crate) fn encode_into(
    buf: &mut [u8],
    len: usize,
    write: impl FnOnce(&mut Writer<'_>) -> Result<(), EncodeError>,
) -> Result<usize, EncodeError> {
    let got = buf.len();
    let out = buf
        .get_mut(..len)
        .ok_or(EncodeError::BufferTooSmall { needed: len, got })?;
    let mut w = Writer::new(out);
    write(&mut w)?;
    debug_assert_eq!(w.pos(), len, "encoded_len disagrees with write");
    Ok(len)
}

/// Payload-size check shared by every payload-carrying message.
pub(crate) fn check_payload(payload: &[u8], max: usize) -> Result<(), EncodeError> {
    if payload.len() > max {
        Err(EncodeError::PayloadTooLarge {
            len: payload.len(),
            max,
        })
    } else {
        Ok(())
    }
}
