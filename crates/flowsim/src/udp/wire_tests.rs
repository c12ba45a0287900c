use super::*;
use proptest::prelude::*;

fn header(demand: f64) -> Data {
    Data {
        flags: F_REQ,
        server: 1,
        task_id: 7,
        flow: 2,
        seq: 3,
        len: 0,
        demand,
        prev_demand: 1e6,
        prev_alloc: 5e5,
        ar: 0.0,
        nr: 0.0,
        req: 9,
    }
}

#[test]
fn a_header_round_trips() {
    let mut b = Vec::new();
    header(8e7).encode(&mut b);
    let d = Data::decode(&b).expect("a valid header decodes");
    assert_eq!((d.task_id, d.flow, d.seq, d.req), (7, 2, 3, 9));
    assert_eq!((d.demand, d.prev_demand, d.prev_alloc), (8e7, 1e6, 5e5));
}

/// A rate Alg. 1 would add into a port's counters must be a rate: one NaN
/// demand would make every later allocation at that port NaN.
#[test]
fn rates_that_are_not_rates_are_refused_in_every_field() {
    for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, -1.0, 1e300] {
        for field in 0..5 {
            let mut b = Vec::new();
            header(8e7).encode(&mut b);
            let at = 24 + 8 * field;
            b[at..at + 8].copy_from_slice(&bad.to_le_bytes());
            assert!(
                Data::decode(&b).is_none(),
                "{bad} in rate field {field} was accepted"
            );
        }
    }
}

proptest! {
    /// Arbitrary datagrams never panic the decoder, and whatever it
    /// accepts carries rates Alg. 1 can add.
    #[test]
    fn arbitrary_bytes_decode_to_rates_or_nothing(
        tail in prop::collection::vec(any::<u8>(), 0..DATA_HDR + 16),
        typed in any::<bool>(),
    ) {
        let mut b = tail;
        if typed && !b.is_empty() {
            b[0] = T_DATA;
        }
        if let Some(d) = Data::decode(&b) {
            for v in [d.demand, d.prev_demand, d.prev_alloc, d.ar, d.nr] {
                prop_assert!(v.is_finite() && (0.0..=MAX_RATE_BPS).contains(&v));
            }
        }
    }
}
