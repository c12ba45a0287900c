//! Typed errors for decoding and encoding.
//!
//! A scheduler drops and counts a malformed packet (DESIGN.md: "bad input gets
//! a clear error or a counted drop, never a panic"), so each variant says what
//! went wrong without allocating, and the `Inconsistent` reason is a static
//! string a driver can use as a metrics label.

/// Why a datagram was rejected by [`decode`](crate::decode).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, thiserror::Error)]
pub enum DecodeError {
    /// The datagram ends before the message does. `needed` is the total
    /// datagram length the decoder had established it needs when it stopped
    /// (it may grow once more of the header is readable), `got` the length it
    /// was given.
    #[error("truncated datagram: needed {needed} bytes, got {got}")]
    Truncated {
        /// Bytes the message needs, counted from the start of the datagram.
        needed: usize,
        /// Bytes the datagram has.
        got: usize,
    },
    /// The message type byte names no message of the datagram's family.
    #[error("unknown message type {0}")]
    UnknownType(u8),
    /// The bytes are all there but contradict each other or the format: bad
    /// version or family, reserved bits set, flags or field values invalid for
    /// the type, a payload longer than its declared length.
    #[error("inconsistent datagram: {0}")]
    Inconsistent(&'static str),
    /// A fixed-size message is followed by extra bytes.
    #[error("trailing bytes after a fixed-size message")]
    TrailingBytes,
}

/// Why [`Message::encode`](crate::Message::encode) refused to write a message.
///
/// Encoding checks everything decoding checks, so any bytes `encode` writes
/// decode back to the same message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, thiserror::Error)]
pub enum EncodeError {
    /// The output buffer cannot hold the encoded message.
    #[error("buffer too small: needed {needed} bytes, got {got}")]
    BufferTooSmall {
        /// Encoded length of the message.
        needed: usize,
        /// Length of the buffer given.
        got: usize,
    },
    /// The payload would push the datagram past [`MAX_DATAGRAM`](crate::MAX_DATAGRAM).
    #[error("payload of {len} bytes exceeds the maximum of {max} for this message")]
    PayloadTooLarge {
        /// Payload length given.
        len: usize,
        /// Largest payload this message type can carry.
        max: usize,
    },
    /// The message holds a combination the wire format forbids (the same
    /// reason string decoding would report as [`DecodeError::Inconsistent`]).
    #[error("invalid message: {0}")]
    Invalid(&'static str),
}
