//! Property tests: round trips for every message type, and decoding that never
//! panics and never accepts a strict prefix.

use std::net::{Ipv4Addr, SocketAddrV4};

use netsched_proto::seal::{self, NoticeKey, SealError, SEAL_LEN};
use netsched_proto::{
    decode, CompletionStatus, DecodeError, DraconisMessage, HorusBody, HorusHeader, HorusMessage,
    HorusReply, HorusTask, Message, RackSchedLoadReport, RackSchedMessage, RackSchedPacket,
    ReplyStatus, ReqId, TaskVec, WireTask, MAX_DATAGRAM, MAX_PULL_TASKS, MAX_RACKSCHED_PAYLOAD,
    MAX_REPLY_PAYLOAD, MAX_TASK_PAYLOAD,
};
use proptest::prelude::*;

const TASK_KEY: NoticeKey = NoticeKey(*b"props-task-key-0");

/// A message without its payload, plus the payload it should carry. Messages
/// borrow their payload, so the strategy yields the owned parts and each test
/// assembles the message with [`Case::message`].
#[derive(Clone, Debug)]
struct Case {
    shape: Message<'static>,
    payload: Vec<u8>,
}

impl Case {
    fn message(&self) -> Message<'_> {
        let p = &self.payload[..];
        match self.shape {
            Message::Horus(HorusMessage { header, body }) => {
                let body = match body {
                    HorusBody::TaskFirst(t) => HorusBody::TaskFirst(HorusTask { payload: p, ..t }),
                    HorusBody::TaskContinuation(t) => {
                        HorusBody::TaskContinuation(HorusTask { payload: p, ..t })
                    }
                    HorusBody::Reply(r) => HorusBody::Reply(HorusReply { payload: p, ..r }),
                    HorusBody::IdleAdd => HorusBody::IdleAdd,
                    HorusBody::IdleRemove => HorusBody::IdleRemove,
                    HorusBody::LoadUpdate { load } => HorusBody::LoadUpdate { load },
                    HorusBody::KeepAlive => HorusBody::KeepAlive,
                };
                Message::Horus(HorusMessage { header, body })
            }
            Message::RackSched(m) => Message::RackSched(match m {
                RackSchedMessage::ReqFirst(x) => {
                    RackSchedMessage::ReqFirst(RackSchedPacket { payload: p, ..x })
                }
                RackSchedMessage::ReqRest(x) => {
                    RackSchedMessage::ReqRest(RackSchedPacket { payload: p, ..x })
                }
                RackSchedMessage::Reply(x) => {
                    RackSchedMessage::Reply(RackSchedPacket { payload: p, ..x })
                }
                RackSchedMessage::LoadReport(l) => RackSchedMessage::LoadReport(l),
            }),
            Message::Draconis(m) => Message::Draconis(m),
        }
    }
}

/// Mostly short payloads, sometimes up to the type's limit.
fn payload(max: usize) -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        4 => prop::collection::vec(any::<u8>(), 0..=48),
        1 => prop::collection::vec(any::<u8>(), 0..=max),
    ]
}

fn header() -> impl Strategy<Value = HorusHeader> {
    (
        any::<u16>(),
        any::<u16>(),
        any::<u16>(),
        any::<u16>(),
        any::<u16>(),
    )
        .prop_map(|(pool_id, src_id, dst_id, qlen, seq)| HorusHeader {
            pool_id,
            src_id,
            dst_id,
            qlen,
            seq,
        })
}

fn task(first: bool) -> impl Strategy<Value = HorusTask<'static>> {
    (
        any::<u64>(),
        any::<bool>(),
        any::<bool>(),
        any::<u8>(),
        any::<u64>(),
    )
        .prop_map(
            move |(task_id, is_last, idle, class, service_time_ns)| HorusTask {
                task_id,
                is_last,
                // Only a spine's scheduling decision sets it (§A.3).
                idle_selected: first && idle,
                class,
                service_time_ns,
                payload: &[],
            },
        )
}

fn horus_case() -> impl Strategy<Value = Case> {
    let body = prop_oneof![
        (task(true), payload(MAX_TASK_PAYLOAD)).prop_map(|(t, p)| (HorusBody::TaskFirst(t), p)),
        (task(false), payload(MAX_TASK_PAYLOAD))
            .prop_map(|(t, p)| (HorusBody::TaskContinuation(t), p)),
        (any::<u64>(), any::<bool>(), payload(MAX_REPLY_PAYLOAD)).prop_map(
            |(task_id, failed, p)| {
                let status = if failed {
                    ReplyStatus::Failed
                } else {
                    ReplyStatus::Ok
                };
                (
                    HorusBody::Reply(HorusReply {
                        task_id,
                        status,
                        payload: &[],
                    }),
                    p,
                )
            }
        ),
        Just((HorusBody::IdleAdd, vec![])),
        Just((HorusBody::IdleRemove, vec![])),
        any::<u32>().prop_map(|load| (HorusBody::LoadUpdate { load }, vec![])),
        Just((HorusBody::KeepAlive, vec![])),
    ];
    (header(), body).prop_map(|(header, (body, payload))| Case {
        shape: Message::Horus(HorusMessage { header, body }),
        payload,
    })
}

fn rs_packet(request: bool) -> impl Strategy<Value = RackSchedPacket<'static>> {
    (
        any::<u32>(),
        any::<u32>(),
        any::<u32>(),
        any::<bool>(),
        any::<u8>(),
        any::<u64>(),
    )
        .prop_map(
            move |(client_id, local_id, load, is_last, class, service_time_ns)| RackSchedPacket {
                req_id: ReqId {
                    client_id,
                    local_id,
                },
                // OSDI'20 §3.2: LOAD is only used in replies.
                load: if request { 0 } else { load },
                is_last,
                class,
                service_time_ns,
                payload: &[],
            },
        )
}

fn racksched_case() -> impl Strategy<Value = Case> {
    prop_oneof![
        (rs_packet(true), payload(MAX_RACKSCHED_PAYLOAD))
            .prop_map(|(x, p)| (RackSchedMessage::ReqFirst(x), p)),
        (rs_packet(true), payload(MAX_RACKSCHED_PAYLOAD))
            .prop_map(|(x, p)| (RackSchedMessage::ReqRest(x), p)),
        (rs_packet(false), payload(MAX_RACKSCHED_PAYLOAD))
            .prop_map(|(x, p)| (RackSchedMessage::Reply(x), p)),
        (any::<u16>(), any::<u16>(), any::<u32>()).prop_map(|(src_id, pool_id, load)| {
            (
                RackSchedMessage::LoadReport(RackSchedLoadReport {
                    src_id,
                    pool_id,
                    load,
                }),
                vec![],
            )
        }),
    ]
    .prop_map(|(m, payload)| Case {
        shape: Message::RackSched(m),
        payload,
    })
}

fn wire_task() -> impl Strategy<Value = WireTask> {
    (
        any::<u64>(),
        any::<u32>(),
        any::<u8>(),
        any::<u64>(),
        any::<u64>(),
    )
        .prop_map(|(id, fn_id, priority, fn_par, props)| WireTask {
            id,
            fn_id,
            priority,
            fn_par,
            props,
        })
}

fn task_vec() -> impl Strategy<Value = TaskVec> {
    prop::collection::vec(wire_task(), 1..=MAX_PULL_TASKS)
        .prop_map(|v| TaskVec::from_slice(&v).expect("at most MAX_PULL_TASKS"))
}

fn draconis_case() -> impl Strategy<Value = Case> {
    prop_oneof![
        (any::<u64>(), task_vec())
            .prop_map(|(job, tasks)| DraconisMessage::JobSubmission { job, tasks }),
        (any::<u32>(), any::<u64>())
            .prop_map(|(node, resources)| DraconisMessage::TaskRequest { node, resources }),
        (any::<u32>(), any::<u16>(), any::<u16>(), wire_task()).prop_map(
            |(ip, port, skips, task)| DraconisMessage::TaskAssignment {
                client: SocketAddrV4::new(Ipv4Addr::from(ip), port),
                skips,
                task,
            }
        ),
        Just(DraconisMessage::NoOp),
        (any::<u64>(), any::<u8>())
            .prop_map(|(job, accepted)| DraconisMessage::Ack { job, accepted }),
        task_vec().prop_map(|tasks| DraconisMessage::ErrorPacket { tasks }),
        (any::<u64>(), any::<u64>(), any::<u32>(), any::<bool>()).prop_map(
            |(task_id, exec_ns, executor, failed)| DraconisMessage::Completion {
                task_id,
                exec_ns,
                executor,
                status: if failed {
                    CompletionStatus::Failed
                } else {
                    CompletionStatus::Ok
                },
            }
        ),
        any::<u32>().prop_map(|slot| DraconisMessage::Probe { slot }),
        any::<u32>().prop_map(|slot| DraconisMessage::GetTask { slot }),
    ]
    .prop_map(|m| Case {
        shape: Message::Draconis(m),
        payload: vec![],
    })
}

fn any_case() -> impl Strategy<Value = Case> {
    prop_oneof![horus_case(), racksched_case(), draconis_case()]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn round_trip(case in any_case()) {
        let msg = case.message();
        let mut buf = [0u8; MAX_DATAGRAM];
        let n = msg.encode(&mut buf).unwrap();
        prop_assert_eq!(n, msg.encoded_len());
        prop_assert!(n <= MAX_DATAGRAM);
        prop_assert_eq!(decode(&buf[..n]), Ok(msg));
        prop_assert_eq!(msg.to_vec().unwrap(), &buf[..n]);
    }

    #[test]
    fn every_strict_prefix_is_truncated(case in any_case()) {
        let bytes = case.message().to_vec().unwrap();
        for len in 0..bytes.len() {
            match decode(&bytes[..len]) {
                Err(DecodeError::Truncated { needed, got }) => {
                    prop_assert_eq!(got, len);
                    prop_assert!(needed > got && needed <= bytes.len(), "needed {} for prefix {} of {}", needed, len, bytes.len());
                }
                other => prop_assert!(false, "prefix {} of {}: {:?}", len, bytes.len(), other),
            }
        }
    }

    #[test]
    fn extra_bytes_are_rejected(case in any_case(), extra in prop::collection::vec(any::<u8>(), 1..8)) {
        let mut bytes = case.message().to_vec().unwrap();
        bytes.extend_from_slice(&extra);
        let err = decode(&bytes).unwrap_err();
        prop_assert!(matches!(err, DecodeError::TrailingBytes | DecodeError::Inconsistent(_)), "{:?}", err);
    }

    /// Corrupting valid encodings reaches deep into every decoder. Whatever is
    /// accepted must re-encode to exactly the same bytes (the encoding is
    /// canonical: no bit is silently dropped).
    #[test]
    fn mutations_never_panic_and_stay_canonical(
        case in any_case(),
        edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..4),
    ) {
        let mut bytes = case.message().to_vec().unwrap();
        for (at, value) in edits {
            let i = at.index(bytes.len());
            bytes[i] = value;
        }
        if let Ok(msg) = decode(&bytes) {
            prop_assert_eq!(msg.to_vec().unwrap(), bytes);
        }
    }

    /// Sealed tasks (seal.rs, "Sealed tasks"): every task of either family
    /// seals, opens under its key to itself and its seq, decodes as before;
    /// any flipped bit or another key makes it refused; no other message
    /// seals as a task.
    #[test]
    fn sealed_tasks_open_to_themselves_and_any_change_is_refused(
        case in any_case(),
        seq in any::<u64>(),
        flip in (any::<prop::sample::Index>(), 0u8..8),
    ) {
        let msg = case.message();
        let mut buf = vec![0u8; MAX_DATAGRAM + SEAL_LEN];
        let n = msg.encode(&mut buf).unwrap();
        let is_task = matches!(
            msg,
            Message::Horus(HorusMessage { body: HorusBody::TaskFirst(_) | HorusBody::TaskContinuation(_), .. })
                | Message::RackSched(RackSchedMessage::ReqFirst(_) | RackSchedMessage::ReqRest(_))
        );
        let sealed = seal::seal_task(&TASK_KEY, &mut buf, n, seq);
        prop_assert_eq!(sealed.is_ok(), is_task);
        let Ok(s) = sealed else { return Ok(()) };
        prop_assert_eq!(s, n + SEAL_LEN);
        let (plain, got) = seal::open_task(Some(&TASK_KEY), &buf[..s]).unwrap();
        prop_assert_eq!(got, Some(seq));
        prop_assert_eq!(decode(plain), Ok(msg));
        prop_assert_eq!(seal::open_task(Some(&TASK_KEY), &buf[..n]), Err(SealError::Unsealed));
        prop_assert_eq!(
            seal::open_task(Some(&NoticeKey(*b"another-key-0000")), &buf[..s]),
            Err(SealError::BadTag)
        );
        let (at, bit) = flip;
        let mut t = buf[..s].to_vec();
        t[at.index(s)] ^= 1 << bit;
        prop_assert!(!matches!(seal::open_task(Some(&TASK_KEY), &t), Ok((_, Some(_)))));
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..1600)) {
        if let Ok(msg) = decode(&bytes) {
            prop_assert_eq!(msg.to_vec().unwrap(), bytes);
        }
    }

    /// Random bytes behind a valid framing byte and a small type code, so the
    /// per-type decoders see garbage rather than the framing check rejecting it.
    #[test]
    fn arbitrary_bodies_never_panic(
        family in prop_oneof![Just(0x11u8), Just(0x12u8), Just(0x13u8)],
        ty in 0u8..10,
        rest in prop::collection::vec(any::<u8>(), 0..64),
    ) {
        let mut bytes = vec![family, ty];
        bytes.extend_from_slice(&rest);
        match decode(&bytes) {
            Ok(msg) => prop_assert_eq!(msg.to_vec().unwrap(), bytes),
            Err(DecodeError::Truncated { needed, got }) => prop_assert!(needed > got),
            Err(_) => {}
        }
    }
}

/// Inputs per run of each fuzz property below (docs/benchmarks.md records the
/// time); `NETSCHED_FUZZ_CASES` raises it for a longer run on stable, and
/// `fuzz/` keeps the coverage-guided cargo-fuzz target for nightly.
fn fuzz_cases() -> u32 {
    std::env::var("NETSCHED_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000)
}

/// The fuzz target's oracle (fuzz/fuzz_targets/decode.rs): decoding never
/// panics, whatever it accepts re-encodes to exactly the same bytes and
/// decodes again to the same message, and a `Truncated` error asks for more
/// than it got.
fn check_decoder(bytes: &[u8]) -> Result<(), TestCaseError> {
    // A worker's rule never panics; what it opens is the datagram less
    // exactly one seal, and a task it takes re-seals to the same bytes.
    match seal::open_task(Some(&TASK_KEY), bytes) {
        Ok((plain, Some(seq))) => {
            prop_assert_eq!(plain.len() + SEAL_LEN, bytes.len());
            let mut buf = bytes.to_vec();
            let n = seal::seal_task(&TASK_KEY, &mut buf, plain.len(), seq).expect("re-seal");
            prop_assert_eq!(&buf[..n], bytes);
        }
        Ok((plain, None)) => prop_assert_eq!(plain, bytes),
        Err(_) => prop_assert!(seal::is_task(bytes)),
    }
    match decode(bytes) {
        Ok(msg) => {
            let mut buf = [0u8; MAX_DATAGRAM];
            let n = msg.encode(&mut buf).expect("a decoded message re-encodes");
            prop_assert_eq!(n, msg.encoded_len());
            prop_assert_eq!(&buf[..n], bytes);
            prop_assert_eq!(decode(&buf[..n]), Ok(msg));
        }
        Err(DecodeError::Truncated { needed, got }) => {
            prop_assert!(needed > got);
            prop_assert_eq!(got, bytes.len());
        }
        Err(_) => {}
    }
    Ok(())
}

/// One edit of a fuzzing mutation.
#[derive(Clone, Debug)]
enum Edit {
    Set(prop::sample::Index, u8),
    FlipBit(prop::sample::Index, u8),
    Insert(prop::sample::Index, u8),
    Remove(prop::sample::Index),
    Truncate(prop::sample::Index),
}

fn edit() -> impl Strategy<Value = Edit> {
    let i = any::<prop::sample::Index>;
    prop_oneof![
        (i(), any::<u8>()).prop_map(|(i, v)| Edit::Set(i, v)),
        (i(), 0u8..8).prop_map(|(i, b)| Edit::FlipBit(i, b)),
        (i(), any::<u8>()).prop_map(|(i, v)| Edit::Insert(i, v)),
        i().prop_map(Edit::Remove),
        i().prop_map(Edit::Truncate),
    ]
}

fn apply(bytes: &mut Vec<u8>, e: &Edit) {
    if bytes.is_empty() {
        return;
    }
    match *e {
        Edit::Set(ref i, v) => {
            let k = i.index(bytes.len());
            bytes[k] = v;
        }
        Edit::FlipBit(ref i, b) => {
            let k = i.index(bytes.len());
            bytes[k] ^= 1 << b;
        }
        Edit::Insert(ref i, v) => bytes.insert(i.index(bytes.len() + 1), v),
        Edit::Remove(ref i) => {
            bytes.remove(i.index(bytes.len()));
        }
        Edit::Truncate(ref i) => bytes.truncate(i.index(bytes.len())),
    }
}

proptest! {
    // Stable-Rust fuzzing inside `cargo test`: a fixed
    // seed, so a run is reproducible and a failure is not a flake; raise
    // NETSCHED_FUZZ_CASES for more inputs.
    #![proptest_config(ProptestConfig {
        cases: fuzz_cases(),
        rng_seed: prop::test_runner::RngSeed::Fixed(0x6e65_7473_6368_6564),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// Valid encodings of every message type under byte edits, insertions,
    /// removals and truncation: reaches every decoder's deep branches.
    #[test]
    fn fuzz_mutated_messages(case in any_case(), edits in prop::collection::vec(edit(), 1..8)) {
        let mut bytes = case.message().to_vec().unwrap();
        for e in &edits {
            apply(&mut bytes, e);
        }
        check_decoder(&bytes)?;
    }

    /// Arbitrary bytes, half of them behind a valid framing byte and a
    /// small type code so they get past the first checks.
    #[test]
    fn fuzz_arbitrary_bytes(
        framed in any::<bool>(),
        family in 0x11u8..=0x13,
        ty in 0u8..12,
        rest in prop::collection::vec(any::<u8>(), 0..1600),
    ) {
        let mut bytes = Vec::with_capacity(rest.len() + 2);
        if framed {
            bytes.extend_from_slice(&[family, ty]);
        }
        bytes.extend_from_slice(&rest);
        check_decoder(&bytes)?;
    }
}
