//! Cost of sealed state messages (`netsched_proto::seal`) per message, one
//! core: sealing an encoded LoadUpdate (what a leaf does per notice) and
//! splitting plus verifying a sealed one (what a spine does per notice
//! before its data plane sees it), beside decoding it unsealed.
//!
//! Run: `cargo bench -p netsched-proto --bench seal` (about 10 s).

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

criterion_group!(benches, seal_costs);
criterion_main!(benches);
