//! Hand-written byte vectors for every message type. They are written out
//! byte by byte rather than produced by the encoder, so any change to the
//! layout (field order, width, endianness, type codes) fails here.

use std::net::{Ipv4Addr, SocketAddrV4};

use netsched_proto::{
    decode, task_id, CompletionStatus, DecodeError, DraconisMessage, EncodeError, Family,
    HorusBody, HorusHeader, HorusMessage, HorusReply, HorusTask, Message, RackSchedLoadReport,
    RackSchedMessage, RackSchedPacket, ReplyStatus, ReqId, TaskVec, WireTask, MAX_DATAGRAM,
    MAX_RACKSCHED_PAYLOAD, MAX_REPLY_PAYLOAD, MAX_TASK_PAYLOAD,
};

const HDR: HorusHeader = HorusHeader {
    pool_id: 0x0102,
    src_id: 0x0304,
    dst_id: 0x0506,
    qlen: 0x0708,
    seq: 0x090a,
};

/// Header bytes after the type byte for `HDR`.
const HDR_BYTES: [u8; 10] = [0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a];

fn horus(body: HorusBody<'_>) -> Message<'_> {
    Message::Horus(HorusMessage { header: HDR, body })
}

fn horus_bytes(ty: u8, body: &[u8]) -> Vec<u8> {
    let mut v = vec![0x11, ty];
    v.extend_from_slice(&HDR_BYTES);
    v.extend_from_slice(body);
    v
}

/// Checks both directions and the length bookkeeping.
fn check(msg: Message<'_>, bytes: &[u8], kind: &str) {
    assert_eq!(decode(bytes), Ok(msg), "decode {kind}");
    assert_eq!(msg.to_vec().unwrap(), bytes, "encode {kind}");
    assert_eq!(msg.encoded_len(), bytes.len());
    assert_eq!(msg.kind(), kind);
}

#[rustfmt::skip]
const TASK_FIRST: [u8; 35] = [
    0x11,                                           // version 1, family Horus
    0x01,                                           // TaskFirst
    0x01, 0x02,                                     // pool_id
    0x03, 0x04,                                     // src_id
    0x05, 0x06,                                     // dst_id
    0x07, 0x08,                                     // qlen
    0x09, 0x0a,                                     // seq
    0xaa, 0xbb, 0xcc, 0xdd, 0x00, 0x00, 0x00, 0x01, // task_id: app 0xaabbccdd, seq 1
    0x03,                                           // isLastPacket | idleSelected
    0x02,                                           // class
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x61, 0xa8, // service_time_ns = 25_000
    0x00, 0x03,                                     // payload_len
    b'k', b'e', b'y',
];

fn task_first() -> Message<'static> {
    horus(HorusBody::TaskFirst(HorusTask {
        task_id: task_id::new(0xaabb_ccdd, 1),
        is_last: true,
        idle_selected: true,
        class: 2,
        service_time_ns: 25_000,
        payload: b"key",
    }))
}

#[test]
fn horus_task_first() {
    check(task_first(), &TASK_FIRST, "horus_task_first");
    let m = task_first();
    assert_eq!(m.pool_id(), Some(0x0102));
    assert_eq!(m.task_id(), Some(0xaabb_ccdd_0000_0001));
    assert_eq!(m.payload(), Some(&b"key"[..]));
    assert_eq!(m.family(), Family::Horus);
}

#[test]
fn horus_task_continuation() {
    #[rustfmt::skip]
    let body = [
        0x00, 0x00, 0x00, 0x05, 0x00, 0x00, 0x00, 0x09, // task_id: app 5, seq 9
        0x00,                                           // not last
        0x00,                                           // class
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // service_time_ns
        0x00, 0x00,                                     // empty payload
    ];
    let msg = horus(HorusBody::TaskContinuation(HorusTask {
        task_id: task_id::new(5, 9),
        ..Default::default()
    }));
    check(msg, &horus_bytes(0x02, &body), "horus_task_continuation");
}

#[test]
fn horus_task_continuation_last() {
    let mut body = [0u8; 20];
    body[8] = 0x01;
    let msg = horus(HorusBody::TaskContinuation(HorusTask {
        is_last: true,
        ..Default::default()
    }));
    check(msg, &horus_bytes(0x02, &body), "horus_task_continuation");
}

#[test]
fn horus_reply() {
    #[rustfmt::skip]
    let body = [
        0x00, 0x00, 0x00, 0x05, 0x00, 0x00, 0x00, 0x09, // task_id
        0x01,                                           // status failed
        0x00, 0x01,                                     // payload_len
        b'v',
    ];
    let msg = horus(HorusBody::Reply(HorusReply {
        task_id: task_id::new(5, 9),
        status: ReplyStatus::Failed,
        payload: b"v",
    }));
    check(msg, &horus_bytes(0x03, &body), "horus_reply");
    assert_eq!(msg.task_id(), Some(0x0000_0005_0000_0009));
}

#[test]
fn horus_header_only_messages() {
    for (ty, body, kind) in [
        (0x04, HorusBody::IdleAdd, "horus_idle_add"),
        (0x05, HorusBody::IdleRemove, "horus_idle_remove"),
        (0x07, HorusBody::KeepAlive, "horus_keep_alive"),
    ] {
        let bytes = horus_bytes(ty, &[]);
        assert_eq!(bytes.len(), 12, "framing byte + 11-byte header");
        check(horus(body), &bytes, kind);
        assert_eq!(horus(body).task_id(), None);
        assert_eq!(horus(body).payload(), None);
    }
}

#[test]
fn horus_load_update() {
    // Horus §A.2: 11 tasks over 8 workers = 1.375 = 0x0001_6000.
    let msg = horus(HorusBody::LoadUpdate { load: 0x0001_6000 });
    check(
        msg,
        &horus_bytes(0x06, &[0x00, 0x01, 0x60, 0x00]),
        "horus_load_update",
    );
    assert_eq!(msg.pool_id(), Some(0x0102));
}

#[rustfmt::skip]
const REQ_FIRST: [u8; 28] = [
    0x12,                                           // version 1, family RackSched
    0x01,                                           // REQF
    0x00, 0x00, 0x00, 0x07,                         // client_id
    0x00, 0x00, 0x00, 0x2a,                         // local_id
    0x00, 0x00, 0x00, 0x00,                         // LOAD (0 in requests)
    0x01,                                           // last packet
    0x01,                                           // class
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03, 0xe8, // service_time_ns = 1000
    0x00, 0x02,                                     // payload_len
    b'a', b'b',
];

fn rs_packet() -> RackSchedPacket<'static> {
    RackSchedPacket {
        req_id: ReqId {
            client_id: 7,
            local_id: 42,
        },
        load: 0,
        is_last: true,
        class: 1,
        service_time_ns: 1000,
        payload: b"ab",
    }
}

#[test]
fn racksched_req_first() {
    let msg = Message::RackSched(RackSchedMessage::ReqFirst(rs_packet()));
    check(msg, &REQ_FIRST, "racksched_req_first");
    assert_eq!(msg.task_id(), Some(0x0000_0007_0000_002a));
    assert_eq!(msg.pool_id(), None);
    assert_eq!(msg.payload(), Some(&b"ab"[..]));
    assert_eq!(msg.family(), Family::RackSched);
}

#[test]
fn racksched_req_rest() {
    #[rustfmt::skip]
    let bytes = [
        0x12, 0x02,
        0x00, 0x00, 0x00, 0x07, 0x00, 0x00, 0x00, 0x2a,
        0x00, 0x00, 0x00, 0x00,
        0x00,                                           // not last
        0x01,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03, 0xe8,
        0x00, 0x00,
    ];
    let msg = Message::RackSched(RackSchedMessage::ReqRest(RackSchedPacket {
        is_last: false,
        payload: b"",
        ..rs_packet()
    }));
    check(msg, &bytes, "racksched_req_rest");
}

#[test]
fn racksched_reply() {
    #[rustfmt::skip]
    let bytes = [
        0x12, 0x03,
        0x00, 0x00, 0x00, 0x07, 0x00, 0x00, 0x00, 0x2a,
        0x00, 0x00, 0x00, 0x04,                         // LOAD: server queue length 4
        0x01,
        0x01,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x01,
        b'r',
    ];
    let msg = Message::RackSched(RackSchedMessage::Reply(RackSchedPacket {
        load: 4,
        service_time_ns: 0,
        payload: b"r",
        ..rs_packet()
    }));
    check(msg, &bytes, "racksched_reply");
}

#[test]
fn racksched_load_report() {
    #[rustfmt::skip]
    let bytes = [
        0x12, 0x04,
        0x00, 0x09,                                     // src_id
        0x00, 0x03,                                     // pool_id
        0x00, 0x01, 0x60, 0x00,                         // load 1.375
    ];
    let msg = Message::RackSched(RackSchedMessage::LoadReport(RackSchedLoadReport {
        src_id: 9,
        pool_id: 3,
        load: 0x0001_6000,
    }));
    check(msg, &bytes, "racksched_load_report");
    assert_eq!(msg.pool_id(), Some(3));
    assert_eq!(msg.task_id(), None);
    assert_eq!(msg.payload(), None);
}

// ---- decode errors ----

fn inconsistent(bytes: &[u8]) -> &'static str {
    match decode(bytes) {
        Err(DecodeError::Inconsistent(why)) => why,
        other => panic!("expected Inconsistent, got {other:?}"),
    }
}

#[test]
fn framing_errors() {
    assert_eq!(
        decode(&[]),
        Err(DecodeError::Truncated { needed: 1, got: 0 })
    );
    assert_eq!(inconsistent(&[0x21, 0x01]), "unsupported wire version");
    assert_eq!(inconsistent(&[0x01, 0x01]), "unsupported wire version");
    assert_eq!(inconsistent(&[0x10]), "unknown protocol family");
    assert_eq!(inconsistent(&[0x15, 0x01]), "unknown protocol family");
    assert_eq!(Family::of(&[0x13]), Ok(Family::Draconis));
    assert_eq!(Family::of(&[0x14]), Ok(Family::Baraat));
    assert_eq!(Family::of(&[0x11]), Ok(Family::Horus));
    assert_eq!(Family::of(&[0x12, 0xff]), Ok(Family::RackSched));
    assert_eq!(Family::Horus.framing_byte(), 0x11);
    assert_eq!(Family::RackSched.framing_byte(), 0x12);
}

#[test]
fn unknown_types() {
    assert_eq!(
        decode(&[0x11]),
        Err(DecodeError::Truncated { needed: 2, got: 1 })
    );
    assert_eq!(decode(&[0x11, 0x00]), Err(DecodeError::UnknownType(0)));
    assert_eq!(
        decode(&horus_bytes(0x08, &[])),
        Err(DecodeError::UnknownType(8))
    );
    assert_eq!(decode(&[0x11, 0xff]), Err(DecodeError::UnknownType(0xff)));
    assert_eq!(decode(&[0x12, 0x00]), Err(DecodeError::UnknownType(0)));
    assert_eq!(
        decode(&[0x12, 0x05, 0, 0, 0, 0, 0, 0, 0, 0]),
        Err(DecodeError::UnknownType(5))
    );
}

#[test]
fn truncated_reports_what_is_known() {
    // Inside the fixed part, `needed` is the whole fixed part.
    assert_eq!(
        decode(&TASK_FIRST[..20]),
        Err(DecodeError::Truncated {
            needed: 32,
            got: 20
        })
    );
    assert_eq!(
        decode(&TASK_FIRST[..2]),
        Err(DecodeError::Truncated { needed: 32, got: 2 })
    );
    // Once payload_len is readable, `needed` includes the payload.
    assert_eq!(
        decode(&TASK_FIRST[..34]),
        Err(DecodeError::Truncated {
            needed: 35,
            got: 34
        })
    );
    assert_eq!(
        decode(&TASK_FIRST[..32]),
        Err(DecodeError::Truncated {
            needed: 35,
            got: 32
        })
    );
    assert_eq!(
        decode(&REQ_FIRST[..27]),
        Err(DecodeError::Truncated {
            needed: 28,
            got: 27
        })
    );
    assert_eq!(
        decode(&REQ_FIRST[..5]),
        Err(DecodeError::Truncated { needed: 26, got: 5 })
    );
    assert_eq!(
        decode(&horus_bytes(0x06, &[0, 1])),
        Err(DecodeError::Truncated {
            needed: 16,
            got: 14
        })
    );
}

#[test]
fn length_disagreements() {
    let mut long = TASK_FIRST.to_vec();
    long.push(0);
    assert_eq!(
        inconsistent(&long),
        "datagram longer than payload_len declares"
    );
    let mut long = REQ_FIRST.to_vec();
    long.push(0);
    assert_eq!(
        inconsistent(&long),
        "datagram longer than payload_len declares"
    );

    // A payload_len no datagram can satisfy is inconsistent, not truncated.
    let mut huge = TASK_FIRST.to_vec();
    huge[30] = 0xff;
    huge[31] = 0xff;
    assert_eq!(inconsistent(&huge), "payload_len exceeds MAX_DATAGRAM");
    let mut just_over = TASK_FIRST[..32].to_vec();
    just_over[30..32].copy_from_slice(&((MAX_TASK_PAYLOAD + 1) as u16).to_be_bytes());
    assert_eq!(inconsistent(&just_over), "payload_len exceeds MAX_DATAGRAM");

    for mut fixed in [
        horus_bytes(0x04, &[]),
        horus_bytes(0x05, &[]),
        horus_bytes(0x07, &[]),
        horus_bytes(0x06, &[0; 4]),
    ] {
        fixed.push(0);
        assert_eq!(decode(&fixed), Err(DecodeError::TrailingBytes));
    }
    assert_eq!(
        decode(&[0x12, 0x04, 0, 9, 0, 3, 0, 1, 0x60, 0, 0]),
        Err(DecodeError::TrailingBytes)
    );
}

#[test]
fn reserved_and_invalid_fields() {
    for bit in 2..8 {
        let mut b = TASK_FIRST;
        b[20] |= 1 << bit;
        assert_eq!(inconsistent(&b), "reserved flag bits set");
    }
    let mut cont = TASK_FIRST;
    cont[1] = 0x02;
    assert_eq!(
        inconsistent(&cont),
        "idleSelected set on a taskContinuation"
    );
    cont[20] = 0x01;
    assert!(
        decode(&cont).is_ok(),
        "isLastPacket alone is fine on a continuation"
    );

    let reply = horus_bytes(0x03, &[0, 0, 0, 0, 0, 0, 0, 0, 0x02, 0, 0]);
    assert_eq!(inconsistent(&reply), "unknown reply status");

    for bit in 1..8 {
        let mut b = REQ_FIRST;
        b[14] |= 1 << bit;
        assert_eq!(inconsistent(&b), "reserved flag bits set");
    }
    for ty in [0x01, 0x02] {
        let mut b = REQ_FIRST;
        b[1] = ty;
        b[13] = 1;
        assert_eq!(inconsistent(&b), "LOAD set in a request");
    }
    let mut rep = REQ_FIRST;
    rep[1] = 0x03;
    rep[10] = 0x80;
    assert!(decode(&rep).is_ok(), "replies carry LOAD");
}

// ---- encode errors ----

#[test]
fn encode_buffer_too_small_writes_nothing() {
    let msg = task_first();
    let mut buf = [0xeeu8; 34];
    assert_eq!(
        msg.encode(&mut buf),
        Err(EncodeError::BufferTooSmall {
            needed: 35,
            got: 34
        })
    );
    assert!(buf.iter().all(|&b| b == 0xee));
    let mut buf = [0u8; 40];
    assert_eq!(msg.encode(&mut buf), Ok(35));
    assert_eq!(buf[..35], TASK_FIRST);
    assert!(buf[35..].iter().all(|&b| b == 0));
}

#[test]
fn payload_limits_fill_exactly_one_datagram() {
    let big = vec![0x5a; MAX_DATAGRAM];
    let cases: [(Message<'_>, usize); 3] = [
        (
            horus(HorusBody::TaskFirst(HorusTask {
                payload: &big[..MAX_TASK_PAYLOAD],
                ..Default::default()
            })),
            MAX_TASK_PAYLOAD,
        ),
        (
            horus(HorusBody::Reply(HorusReply {
                payload: &big[..MAX_REPLY_PAYLOAD],
                ..Default::default()
            })),
            MAX_REPLY_PAYLOAD,
        ),
        (
            Message::RackSched(RackSchedMessage::Reply(RackSchedPacket {
                payload: &big[..MAX_RACKSCHED_PAYLOAD],
                ..Default::default()
            })),
            MAX_RACKSCHED_PAYLOAD,
        ),
    ];
    for (msg, max) in cases {
        let bytes = msg.to_vec().unwrap();
        assert_eq!(bytes.len(), MAX_DATAGRAM);
        assert_eq!(decode(&bytes), Ok(msg));
        let over = &big[..max + 1];
        let too_big = match msg {
            Message::Horus(HorusMessage {
                header,
                body: HorusBody::TaskFirst(t),
            }) => Message::Horus(HorusMessage {
                header,
                body: HorusBody::TaskFirst(HorusTask { payload: over, ..t }),
            }),
            Message::Horus(HorusMessage {
                header,
                body: HorusBody::Reply(r),
            }) => Message::Horus(HorusMessage {
                header,
                body: HorusBody::Reply(HorusReply { payload: over, ..r }),
            }),
            Message::RackSched(RackSchedMessage::Reply(p)) => {
                Message::RackSched(RackSchedMessage::Reply(RackSchedPacket {
                    payload: over,
                    ..p
                }))
            }
            _ => unreachable!(),
        };
        let mut buf = vec![0; 2 * MAX_DATAGRAM];
        assert_eq!(
            too_big.encode(&mut buf),
            Err(EncodeError::PayloadTooLarge { len: max + 1, max })
        );
    }
}

#[test]
fn encode_rejects_what_decode_rejects() {
    let cont = horus(HorusBody::TaskContinuation(HorusTask {
        idle_selected: true,
        ..Default::default()
    }));
    assert_eq!(
        cont.to_vec(),
        Err(EncodeError::Invalid(
            "idleSelected set on a taskContinuation"
        ))
    );
    for msg in [
        RackSchedMessage::ReqFirst(RackSchedPacket {
            load: 1,
            ..rs_packet()
        }),
        RackSchedMessage::ReqRest(RackSchedPacket {
            load: 1,
            ..rs_packet()
        }),
    ] {
        assert_eq!(
            Message::RackSched(msg).to_vec(),
            Err(EncodeError::Invalid("LOAD set in a request"))
        );
    }
}

#[test]
fn task_id_halves() {
    let id = task_id::new(0xdead_beef, 0x0102_0304);
    assert_eq!(id, 0xdead_beef_0102_0304);
    assert_eq!(task_id::app_id(id), 0xdead_beef);
    assert_eq!(task_id::seq(id), 0x0102_0304);
    assert_eq!(
        ReqId {
            client_id: 1,
            local_id: 2
        }
        .as_u64(),
        0x0000_0001_0000_0002
    );
}

#[test]
fn kinds_are_distinct() {
    let msgs = [
        task_first(),
        horus(HorusBody::TaskContinuation(HorusTask::default())),
        horus(HorusBody::Reply(HorusReply::default())),
        horus(HorusBody::IdleAdd),
        horus(HorusBody::IdleRemove),
        horus(HorusBody::LoadUpdate { load: 0 }),
        horus(HorusBody::KeepAlive),
        Message::RackSched(RackSchedMessage::ReqFirst(rs_packet())),
        Message::RackSched(RackSchedMessage::ReqRest(rs_packet())),
        Message::RackSched(RackSchedMessage::Reply(rs_packet())),
        Message::RackSched(RackSchedMessage::LoadReport(RackSchedLoadReport::default())),
    ];
    let mut kinds: Vec<_> = msgs.iter().map(Message::kind).collect();
    kinds.sort_unstable();
    kinds.dedup();
    assert_eq!(kinds.len(), msgs.len());
}

// ---- Draconis (family 3) ----

const WTASK: WireTask = WireTask {
    id: 0x0102_0304_0506_0708,
    fn_id: 0x0000_0001,
    priority: 2,
    fn_par: 100_000,
    props: 0b1010,
};

#[rustfmt::skip]
const WTASK_BYTES: [u8; 29] = [
    0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, // id
    0x00, 0x00, 0x00, 0x01,                         // fn_id
    0x02,                                           // priority
    0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x86, 0xa0, // fn_par = 100_000
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x0a, // props
];

fn draconis_bytes(ty: u8, parts: &[&[u8]]) -> Vec<u8> {
    let mut v = vec![0x13, ty];
    for p in parts {
        v.extend_from_slice(p);
    }
    v
}

#[test]
fn draconis_job_submission_and_error_packet() {
    let tasks = TaskVec::from_slice(&[WTASK, WTASK]).unwrap();
    check(
        Message::Draconis(DraconisMessage::JobSubmission { job: 0x2a, tasks }),
        &draconis_bytes(
            0x01,
            &[
                &[0, 0, 0, 0, 0, 0, 0, 0x2a],
                &[2],
                &WTASK_BYTES,
                &WTASK_BYTES,
            ],
        ),
        "draconis_job_submission",
    );
    let one = TaskVec::from_slice(&[WTASK]).unwrap();
    check(
        Message::Draconis(DraconisMessage::ErrorPacket { tasks: one }),
        &draconis_bytes(0x06, &[&[1], &WTASK_BYTES]),
        "draconis_error_packet",
    );
    // A job with no task, or more than a packet holds, is refused both ways.
    assert_eq!(
        decode(&draconis_bytes(0x01, &[&[0; 8], &[0]])),
        Err(DecodeError::Inconsistent("task count 0"))
    );
    assert_eq!(
        decode(&draconis_bytes(0x06, &[&[9]])),
        Err(DecodeError::Inconsistent("task count above MAX_PULL_TASKS"))
    );
    assert_eq!(
        Message::Draconis(DraconisMessage::ErrorPacket {
            tasks: TaskVec::new()
        })
        .to_vec(),
        Err(EncodeError::Invalid("task count 0"))
    );
    assert!(TaskVec::from_slice(&[WTASK; 9]).is_none());
}

#[test]
fn draconis_executor_messages() {
    check(
        Message::Draconis(DraconisMessage::TaskRequest {
            node: 3,
            resources: 0xff,
        }),
        &draconis_bytes(0x02, &[&[0, 0, 0, 3], &[0, 0, 0, 0, 0, 0, 0, 0xff]]),
        "draconis_task_request",
    );
    check(
        Message::Draconis(DraconisMessage::TaskAssignment {
            client: SocketAddrV4::new(Ipv4Addr::new(10, 77, 0, 2), 0x1f90),
            skips: 5,
            task: WTASK,
        }),
        &draconis_bytes(
            0x03,
            &[&[10, 77, 0, 2], &[0x1f, 0x90], &[0, 5], &WTASK_BYTES],
        ),
        "draconis_task_assignment",
    );
    check(
        Message::Draconis(DraconisMessage::NoOp),
        &[0x13, 0x04],
        "draconis_noop",
    );
    check(
        Message::Draconis(DraconisMessage::Ack {
            job: 7,
            accepted: 3,
        }),
        &draconis_bytes(0x05, &[&[0, 0, 0, 0, 0, 0, 0, 7], &[3]]),
        "draconis_ack",
    );
    check(
        Message::Draconis(DraconisMessage::Completion {
            task_id: 9,
            exec_ns: 0x0100,
            executor: 4,
            status: CompletionStatus::Failed,
        }),
        &draconis_bytes(
            0x07,
            &[
                &[0, 0, 0, 0, 0, 0, 0, 9],
                &[0, 0, 0, 0, 0, 0, 1, 0],
                &[0, 0, 0, 4],
                &[1],
            ],
        ),
        "draconis_completion",
    );
    check(
        Message::Draconis(DraconisMessage::Probe { slot: 0x0102 }),
        &draconis_bytes(0x08, &[&[0, 0, 1, 2]]),
        "draconis_probe",
    );
    check(
        Message::Draconis(DraconisMessage::GetTask { slot: 1 }),
        &draconis_bytes(0x09, &[&[0, 0, 0, 1]]),
        "draconis_get_task",
    );
    assert_eq!(
        decode(&draconis_bytes(0x07, &[&[0; 20], &[2]])),
        Err(DecodeError::Inconsistent("unknown completion status"))
    );
    assert_eq!(decode(&[0x13, 0x0a]), Err(DecodeError::UnknownType(10)));
    assert_eq!(decode(&[0x13, 0x04, 0]), Err(DecodeError::TrailingBytes));
}

/// Baraat's SPC lab messages (docs/protocol.md, family 4): a data packet
/// with a request and the switch's answer, and a FIN, byte for byte.
#[test]
fn baraat_messages() {
    use netsched_proto::{
        decode_baraat, BaraatData, BaraatMessage, Rate, SpcAnswer, SpcHeader, ERR_BARAAT_FAMILY,
    };
    let inconsistent = |b: &[u8]| match decode_baraat(b) {
        Err(DecodeError::Inconsistent(why)) => why,
        other => panic!("{other:?}"),
    };
    let r = |v: f64| Rate::new(v).unwrap();
    let data = BaraatMessage::Data(BaraatData {
        server: 2,
        task_id: 5,
        flow: 7,
        seq: 9,
        request: Some(SpcHeader {
            req: 3,
            new_flow: true,
            demand: r(1e9),
            prev_demand: r(0.0),
            prev_alloc: r(0.0),
        }),
        answer: Some(SpcAnswer {
            ar: r(5e8),
            nr: r(1e9),
        }),
        payload: b"xy",
    });
    let mut want = vec![0x14, 0x02, 0b111, 2];
    want.extend_from_slice(&5u64.to_be_bytes());
    want.extend_from_slice(&7u32.to_be_bytes());
    want.extend_from_slice(&9u32.to_be_bytes());
    want.extend_from_slice(&3u32.to_be_bytes());
    for v in [1e9f64, 0.0, 0.0, 5e8, 1e9] {
        want.extend_from_slice(&v.to_bits().to_be_bytes());
    }
    want.extend_from_slice(&[0, 2, b'x', b'y']);
    assert_eq!(data.to_vec().unwrap(), want);
    assert_eq!(decode_baraat(&want), Ok(data));
    // No scheduler decodes it.
    assert_eq!(
        decode(&want),
        Err(DecodeError::Inconsistent(ERR_BARAAT_FAMILY))
    );
    // The new-flow flag without a request, and reserved flag bits.
    let mut bad = want.clone();
    bad[2] = 0b010;
    assert_eq!(inconsistent(&bad), "new-flow flag without a request");
    bad[2] = 0b1000_0001;
    assert_eq!(inconsistent(&bad), "reserved flag bits set");

    let fin = BaraatMessage::Fin {
        server: 1,
        task_id: 4,
        flow: 6,
        demand: r(2e6),
        alloc: r(1e6),
    };
    let mut want = vec![0x14, 0x04, 1];
    want.extend_from_slice(&4u64.to_be_bytes());
    want.extend_from_slice(&6u32.to_be_bytes());
    want.extend_from_slice(&2e6f64.to_bits().to_be_bytes());
    want.extend_from_slice(&1e6f64.to_bits().to_be_bytes());
    assert_eq!(fin.to_vec().unwrap(), want);
    let last = want.len() - 1;
    want[last - 7] = 0xc1; // the allocation's sign bit: -1e6
    assert_eq!(inconsistent(&want), "rate field is not a rate");
    assert_eq!(
        decode_baraat(&[0x14, 0x08]),
        Err(DecodeError::UnknownType(8))
    );
}
