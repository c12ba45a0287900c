//! Cost of sealed state messages (`netsched_proto::seal`) per message, one
//! core: sealing an encoded LoadUpdate (what a leaf does per notice) and
//! splitting plus verifying a sealed one (what a spine does per notice
//! before its data plane sees it), beside decoding it unsealed.
//!
//! Sealed tasks (leaf → worker): sealing a forwarded task and a worker's
//! `open_task`, beside encoding and decoding it unsealed.
//!
//! Run: `cargo bench -p netsched-proto --bench seal` (about 40 s).

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use netsched_proto::seal::{self, NoticeKey};
use netsched_proto::{decode, HorusBody, HorusHeader, HorusMessage, Message, MAX_DATAGRAM};

fn seal_costs(c: &mut Criterion) {
    let key = NoticeKey(*b"0123456789abcdef");
    let msg = Message::Horus(HorusMessage {
        header: HorusHeader {
            pool_id: 1,
            src_id: 3,
            ..Default::default()
        },
        body: HorusBody::LoadUpdate { load: 0x1_6000 },
    });
    let mut buf = [0u8; MAX_DATAGRAM];
    let n = msg.encode(&mut buf).unwrap();
    let mut g = c.benchmark_group("seal");
    g.throughput(Throughput::Elements(1));
    g.measurement_time(Duration::from_secs(3));
    g.bench_function("decode_unsealed_load_update", |b| {
        b.iter(|| decode(black_box(&buf[..n])).is_ok())
    });
    let mut seq = 0u64;
    g.bench_function("encode_and_seal_load_update", |b| {
        b.iter(|| {
            seq += 1;
            let n = black_box(&msg).encode(&mut buf).unwrap();
            seal::seal(&key, &mut buf, n, seq).unwrap()
        })
    });
    let sealed_len = seal::seal(&key, &mut buf, n, 7).unwrap();
    let sealed = buf[..sealed_len].to_vec();
    g.bench_function("split_verify_decode_sealed_load_update", |b| {
        b.iter(|| {
            let d = black_box(&sealed[..]);
            let seq = seal::verify(&key, d).unwrap();
            let (m, _) = seal::split(d);
            (seq, decode(m).is_ok())
        })
    });
    // The socket daemon's receive rule for a notice (switch/mod.rs
    // `unseal`): `open` (split, check the type, verify), then decode.
    g.bench_function("open_and_decode_sealed_load_update", |b| {
        b.iter(|| {
            let (m, seq) = seal::open(Some(&key), black_box(&sealed[..])).unwrap();
            (seq, decode(m).is_ok())
        })
    });
    g.finish();
}

/// Sealed tasks (leaf → worker): what the socket leaf adds per forwarded
/// task (encode and seal, against encode alone) and what a worker adds
/// (`open_task` and decode, against decode alone), for a task with a
/// 16-byte payload (a RocksDB key) and one with the largest payload.
fn task_seal_costs(c: &mut Criterion) {
    use netsched_proto::{HorusTask, MAX_TASK_PAYLOAD};
    let key = NoticeKey(*b"0123456789abcdef");
    let mut g = c.benchmark_group("task_seal");
    g.throughput(Throughput::Elements(1));
    g.measurement_time(Duration::from_secs(3));
    let big = vec![0x5a; MAX_TASK_PAYLOAD];
    for (name, payload) in [("16", &b"0123456789abcdef"[..]), ("max", &big[..])] {
        let msg = Message::Horus(HorusMessage {
            header: HorusHeader {
                pool_id: 1,
                dst_id: 3,
                ..Default::default()
            },
            body: HorusBody::TaskFirst(HorusTask {
                task_id: 42,
                is_last: true,
                service_time_ns: 100_000,
                payload,
                ..Default::default()
            }),
        });
        let mut buf = vec![0u8; MAX_DATAGRAM + seal::SEAL_LEN];
        g.bench_function(format!("encode_task_{name}"), |b| {
            b.iter(|| black_box(&msg).encode(&mut buf).unwrap())
        });
        let mut seq = 0u64;
        g.bench_function(format!("encode_and_seal_task_{name}"), |b| {
            b.iter(|| {
                seq += 2;
                let n = black_box(&msg).encode(&mut buf).unwrap();
                seal::seal_task(&key, &mut buf, n, seq).unwrap()
            })
        });
        let n = msg.encode(&mut buf).unwrap();
        let plain = buf[..n].to_vec();
        let s = seal::seal_task(&key, &mut buf, n, 2).unwrap();
        let sealed = buf[..s].to_vec();
        g.bench_function(format!("decode_task_{name}"), |b| {
            b.iter(|| decode(black_box(&plain[..])).is_ok())
        });
        g.bench_function(format!("open_and_decode_sealed_task_{name}"), |b| {
            b.iter(|| {
                let (m, seq) = seal::open_task(Some(&key), black_box(&sealed[..])).unwrap();
                (seq, decode(m).is_ok())
            })
        });
    }
    g.finish();
}

criterion_group!(benches, seal_costs, task_seal_costs);
criterion_main!(benches);
