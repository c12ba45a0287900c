//! Decodes arbitrary bytes (every family: Horus, RackSched, pull scheduling
//! through `decode`, Baraat's SPC lab through `decode_baraat`).
//! Decoding must never panic; whatever it accepts must
//! re-encode to the same bytes (the encoding is canonical) and decode again to
//! the same message. Sealed state messages (`netsched_proto::seal`): split
//! and verify never panic, a split-off message decodes like any other, and
//! re-sealing it with the seal's own sequence number under the fuzz key
//! verifies (and reproduces the bytes when the input's tag was that key's).
//! Sealed tasks: `open_task` never panics and a task it takes re-seals to
//! the same bytes.
//!
//! Run with `cargo +nightly fuzz run decode` from the repository root.

#![no_main]

use libfuzzer_sys::fuzz_target;
use netsched_proto::seal::{self, NoticeKey, SEAL_LEN};
use netsched_proto::{decode, decode_baraat, MAX_DATAGRAM};

const KEY: NoticeKey = NoticeKey(*b"netsched-fuzzkey");

fuzz_target!(|data: &[u8]| {
    if let Ok(msg) = decode_baraat(data) {
        let mut buf = [0u8; MAX_DATAGRAM];
        let n = msg.encode(&mut buf).expect("a decoded message re-encodes");
        assert_eq!(n, msg.encoded_len());
        assert_eq!(&buf[..n], data, "encoding is canonical");
        assert_eq!(decode_baraat(&buf[..n]), Ok(msg), "decode(encode(m)) == m");
    }
    let (msg_bytes, s) = seal::split(data);
    let verified = seal::verify(&KEY, data);
    if let Some(s) = s {
        assert_eq!(msg_bytes.len() + SEAL_LEN, data.len());
        let mut buf = [0u8; MAX_DATAGRAM];
        buf[..msg_bytes.len()].copy_from_slice(msg_bytes);
        let n = seal::seal(&KEY, &mut buf, msg_bytes.len(), s.seq).expect("a split message seals");
        assert_eq!(seal::verify(&KEY, &buf[..n]), Ok(s.seq));
        assert_eq!(verified.is_ok(), &buf[..n] == data);
    } else {
        assert!(verified.is_err());
    }
    // Sealed tasks (leaf → worker): the worker's rule never panics, and a
    // task it takes is the datagram less one seal and re-seals to it.
    match seal::open_task(Some(&KEY), data) {
        Ok((plain, Some(seq))) => {
            assert_eq!(plain.len() + SEAL_LEN, data.len());
            let mut buf = data.to_vec();
            let n = seal::seal_task(&KEY, &mut buf, plain.len(), seq).expect("a task re-seals");
            assert_eq!(&buf[..n], data);
        }
        Ok((plain, None)) => assert_eq!(plain, data),
        Err(_) => assert!(seal::is_task(data)),
    }
    let Ok(msg) = decode(msg_bytes) else { return };
    let mut buf = [0u8; MAX_DATAGRAM];
    let n = msg.encode(&mut buf).expect("a decoded message re-encodes");
    assert_eq!(n, msg.encoded_len());
    assert_eq!(&buf[..n], msg_bytes, "encoding is canonical");
    assert_eq!(decode(&buf[..n]), Ok(msg), "decode(encode(m)) == m");
});
