//! Decodes arbitrary bytes (every family: Horus, RackSched, pull scheduling).
//! Decoding must never panic; whatever it accepts must
//! re-encode to the same bytes (the encoding is canonical) and decode again to
//! the same message.
//!
//! Run with `cargo +nightly fuzz run decode` from the repository root.

#![no_main]

use libfuzzer_sys::fuzz_target;
use netsched_proto::{decode, MAX_DATAGRAM};

fuzz_target!(|data: &[u8]| {
    let Ok(msg) = decode(data) else { return };
    let mut buf = [0u8; MAX_DATAGRAM];
    let n = msg.encode(&mut buf).expect("a decoded message re-encodes");
    assert_eq!(n, msg.encoded_len());
    assert_eq!(&buf[..n], data, "encoding is canonical");
    assert_eq!(decode(&buf[..n]), Ok(msg), "decode(encode(m)) == m");
});
