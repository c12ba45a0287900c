//! Property tests of the Baraat family (`decode_baraat`): round trips for
//! every message type, strict prefixes truncated, extra bytes refused, and
//! a stable-Rust fuzzer run by every `cargo test` (a fixed seed;
//! `NETSCHED_FUZZ_CASES` raises the number of inputs): valid encodings under
//! byte edits, insertions, removals and truncation, and arbitrary bytes behind
//! the family's framing byte, each checked with the fuzz target's oracle.

use netsched_proto::{
    decode_baraat, BaraatData, BaraatMessage, DecodeError, Rate, SpcAnswer, SpcEcho, SpcHeader,
    MAX_BARAAT_PAYLOAD, MAX_DATAGRAM, MAX_RATE_BPS,
};
use proptest::prelude::*;

/// A message without its payload, plus the payload (messages borrow it).
#[derive(Clone, Debug)]
struct Case {
    shape: BaraatMessage<'static>,
    payload: Vec<u8>,
}

impl Case {
    fn message(&self) -> BaraatMessage<'_> {
        match self.shape {
            BaraatMessage::Data(d) => BaraatMessage::Data(BaraatData {
                payload: &self.payload,
                ..d
            }),
            m => m,
        }
    }
}

/// Rates as the SPC header carries them: 0 and whole numbers often.
fn rate() -> impl Strategy<Value = Rate> {
    prop_oneof![
        Just(0.0),
        (0u64..=10_000_000_000).prop_map(|v| v as f64),
        0.0..=MAX_RATE_BPS,
    ]
    .prop_map(|v| Rate::new(v).expect("in range"))
}

fn answer() -> impl Strategy<Value = SpcAnswer> {
    (rate(), rate()).prop_map(|(ar, nr)| SpcAnswer { ar, nr })
}

fn header() -> impl Strategy<Value = SpcHeader> {
    (any::<u32>(), any::<bool>(), rate(), rate(), rate()).prop_map(
        |(req, new_flow, demand, prev_demand, prev_alloc)| SpcHeader {
            req,
            new_flow,
            demand,
            prev_demand,
            prev_alloc,
        },
    )
}

fn data() -> impl Strategy<Value = Case> {
    let payload = prop_oneof![
        4 => prop::collection::vec(any::<u8>(), 0..=48),
        1 => prop::collection::vec(any::<u8>(), 0..=MAX_BARAAT_PAYLOAD),
    ];
    (
        (any::<u8>(), any::<u64>(), any::<u32>(), any::<u32>()),
        prop::option::of((header(), prop::option::of(answer()))),
        payload,
    )
        .prop_map(|((server, task_id, flow, seq), spc, payload)| Case {
            shape: BaraatMessage::Data(BaraatData {
                server,
                task_id,
                flow,
                seq,
                request: spc.map(|s| s.0),
                answer: spc.and_then(|s| s.1),
                payload: &[],
            }),
            payload,
        })
}

fn control() -> impl Strategy<Value = Case> {
    prop_oneof![
        (any::<u8>(), any::<u64>(), any::<u32>(), any::<u64>()).prop_map(
            |(server, task_id, flow, bytes)| BaraatMessage::Request {
                server,
                task_id,
                flow,
                bytes,
            }
        ),
        (
            (any::<u8>(), any::<u32>(), any::<u32>()),
            prop::option::of((any::<u32>(), answer())),
        )
            .prop_map(|((server, flow, cumulative), echo)| BaraatMessage::Ack {
                server,
                flow,
                cumulative,
                echo: echo.map(|(req, answer)| SpcEcho { req, answer }),
            }),
        (any::<u8>(), any::<u64>(), any::<u32>(), rate(), rate()).prop_map(
            |(server, task_id, flow, demand, alloc)| BaraatMessage::Fin {
                server,
                task_id,
                flow,
                demand,
                alloc,
            }
        ),
        (any::<u64>(), any::<u32>())
            .prop_map(|(task_id, flows)| BaraatMessage::Done { task_id, flows }),
        (any::<u8>(), any::<u32>())
            .prop_map(|(server, flow)| BaraatMessage::FinAck { server, flow }),
        any::<u64>().prop_map(|task_id| BaraatMessage::DoneAck { task_id }),
    ]
    .prop_map(|shape| Case {
        shape,
        payload: vec![],
    })
}

fn any_case() -> impl Strategy<Value = Case> {
    prop_oneof![data(), control()]
}

/// The fuzz target's oracle for this family: never a panic; whatever is
/// accepted re-encodes to exactly the same bytes and decodes again to the
/// same message, and every rate in it is a rate; `Truncated` asks for more
/// than it got.
fn check_decoder(bytes: &[u8]) -> Result<(), TestCaseError> {
    match decode_baraat(bytes) {
        Ok(msg) => {
            let mut buf = [0u8; MAX_DATAGRAM];
            let n = msg.encode(&mut buf).expect("a decoded message re-encodes");
            prop_assert_eq!(n, msg.encoded_len());
            prop_assert_eq!(&buf[..n], bytes);
            prop_assert_eq!(decode_baraat(&buf[..n]), Ok(msg));
            if let BaraatMessage::Data(d) = msg {
                let h = d.request.unwrap_or_default();
                let a = d.answer.unwrap_or_default();
                for r in [h.demand, h.prev_demand, h.prev_alloc, a.ar, a.nr] {
                    prop_assert!(r.bps().is_finite() && (0.0..=MAX_RATE_BPS).contains(&r.bps()));
                }
            }
        }
        Err(DecodeError::Truncated { needed, got }) => {
            prop_assert!(needed > got);
            prop_assert_eq!(got, bytes.len());
        }
        Err(_) => {}
    }
    Ok(())
}

fn fuzz_cases() -> u32 {
    std::env::var("NETSCHED_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(50_000)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn round_trip(case in any_case()) {
        let msg = case.message();
        let bytes = msg.to_vec().unwrap();
        prop_assert_eq!(bytes.len(), msg.encoded_len());
        prop_assert!(bytes.len() <= MAX_DATAGRAM);
        prop_assert_eq!(decode_baraat(&bytes), Ok(msg));
    }

    #[test]
    fn every_strict_prefix_is_truncated(case in any_case()) {
        let bytes = case.message().to_vec().unwrap();
        for len in 0..bytes.len() {
            match decode_baraat(&bytes[..len]) {
                Err(DecodeError::Truncated { needed, got }) => {
                    prop_assert_eq!(got, len);
                    prop_assert!(needed > got && needed <= bytes.len());
                }
                other => prop_assert!(false, "prefix {} of {}: {:?}", len, bytes.len(), other),
            }
        }
    }

    #[test]
    fn extra_bytes_are_rejected(case in any_case(), extra in prop::collection::vec(any::<u8>(), 1..8)) {
        let mut bytes = case.message().to_vec().unwrap();
        bytes.extend_from_slice(&extra);
        let err = decode_baraat(&bytes).unwrap_err();
        prop_assert!(matches!(err, DecodeError::TrailingBytes | DecodeError::Inconsistent(_)), "{:?}", err);
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: fuzz_cases(),
        rng_seed: prop::test_runner::RngSeed::Fixed(0x6261_7261_6174_0001),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// Valid encodings under edits, insertions, removals and truncation.
    #[test]
    fn fuzz_mutated_baraat_messages(
        case in any_case(),
        edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>(), 0u8..4), 1..8),
    ) {
        let mut bytes = case.message().to_vec().unwrap();
        for (at, v, kind) in edits {
            if bytes.is_empty() {
                break;
            }
            let i = at.index(bytes.len());
            match kind {
                0 => bytes[i] = v,
                1 => bytes[i] ^= 1 << (v % 8),
                2 => bytes.insert(i, v),
                _ => bytes.truncate(i),
            }
        }
        check_decoder(&bytes)?;
    }

    /// Arbitrary bytes behind the family's framing byte and a small type.
    #[test]
    fn fuzz_arbitrary_baraat_bodies(ty in 0u8..9, rest in prop::collection::vec(any::<u8>(), 0..96)) {
        let mut bytes = vec![0x14, ty];
        bytes.extend_from_slice(&rest);
        check_decoder(&bytes)?;
    }
}
