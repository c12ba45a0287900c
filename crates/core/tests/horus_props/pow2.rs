//! 2. `LazyPow2` (Horus Alg. 2 with the lazy drift rule) against an exact model.

use super::*;

#[derive(Clone, Copy, Debug)]
enum P2Op {
    Update {
        node: u32,
        load: u32,
    },
    /// First pass; a resubmission is fed back at once or parked.
    Schedule {
        deliver_now: bool,
    },
    /// Second pass of the `k`-th parked resubmission.
    Deliver(usize),
    AddDrift(u32),
    ControlRemove(u32),
    ControlAdd {
        node: u32,
        workers: u32,
    },
}

/// Exact reference model. Values live in i64 and are clamped to the u32 range
/// exactly where the implementation uses saturating arithmetic; any wrap or
/// off-by-one shows up as a mismatch.
#[derive(Clone, Debug)]
struct P2Model {
    spine: bool,
    /// slot -> node, mirroring the swap-remove of `control_remove`.
    slots: Vec<NodeId>,
    alive: Vec<bool>,
    load: Vec<i64>,
    drift: Vec<i64>,
    /// Reports per node (the load entry's epoch, pow2.rs).
    epoch: Vec<u16>,
    factor: Vec<u32>,
}

const U32_MAX: i64 = u32::MAX as i64;

fn sat(v: i64) -> i64 {
    v.clamp(0, U32_MAX)
}

fn spine_factor(workers: u32) -> u32 {
    fixed::additive_factor(workers)
}

impl P2Model {
    fn new(n: u32, spine: bool, workers: &[u32]) -> Self {
        P2Model {
            spine,
            slots: (0..n).collect(),
            alive: vec![true; n as usize],
            load: vec![0; n as usize],
            drift: vec![0; n as usize],
            epoch: vec![0; n as usize],
            factor: (0..n as usize)
                .map(|i| if spine { spine_factor(workers[i]) } else { 1 })
                .collect(),
        }
    }

    fn check(&self, p2: &LazyPow2) -> Result<(), TestCaseError> {
        p2.check_copies()
            .map_err(|e| fail(format!("copies: {e}")))?;
        prop_assert_eq!(p2.live() as usize, self.slots.len(), "live count");
        for n in 0..self.alive.len() {
            let want = self.alive[n].then(|| (self.load[n] as u32, self.drift[n] as u32));
            prop_assert_eq!(p2.view(n as u32), want, "view({})", n);
            prop_assert_eq!(p2.contains(n as u32), self.alive[n]);
        }
        Ok(())
    }
}

/// Mirrors `LazyPow2::samples`: two distinct uniform slots (one if only one is
/// live). Keep in step with `src/pow2.rs`.
fn replay_samples(rng: &Rng, count: u32) -> (u32, u32) {
    let mut r = rng.clone();
    let a = r.below(count);
    if count == 1 {
        return (a, a);
    }
    (a, (a + 1 + r.below(count - 1)) % count)
}

fn run_pow2(spine: bool, workers: &[u32], seed: u64, ops: &[P2Op]) -> Result<(), TestCaseError> {
    let n = workers.len() as u32;
    let mut p2 = if spine {
        LazyPow2::new(&mut Layout::new(), n, |i| spine_factor(workers[i as usize]))
    } else {
        LazyPow2::new(&mut Layout::new(), n, |_| 1)
    };
    let mut m = P2Model::new(n, spine, workers);
    let mut pipe = Pipeline::new();
    let mut rng = Rng::new(seed);
    let mut parked: Vec<Resubmit> = Vec::new();
    let mut next_id = 0u64;
    m.check(&p2)?;
    for (step, &op) in ops.iter().enumerate() {
        let ctx = |e: TestCaseError| fail(format!("step {step} {op:?}: {e}"));
        match op {
            P2Op::Update { node, load } => {
                let known = (node as usize) < m.alive.len() && m.alive[node as usize];
                prop_assert_eq!(
                    p2.update(&pipe.begin(), node, load),
                    known,
                    "step {}: update",
                    step
                );
                if known {
                    m.load[node as usize] = load as i64;
                    m.drift[node as usize] = 0;
                    m.epoch[node as usize] = m.epoch[node as usize].wrapping_add(1);
                }
            }
            P2Op::Schedule { deliver_now } => {
                let task = single_packet_task(next_id);
                next_id += 1;
                let count = m.slots.len() as u32;
                let (i1, i2) = if count > 0 {
                    replay_samples(&rng, count)
                } else {
                    (0, 0)
                };
                let got = p2.schedule(&pipe.begin(), &mut rng, task);
                if count == 0 {
                    prop_assert_eq!(got, Pow2First::Empty);
                    continue;
                }
                check_first_pass(&m, got).map_err(ctx)?;
                // Exact Alg. 2 on the replayed samples.
                let (n1, n2) = (m.slots[i1 as usize], m.slots[i2 as usize]);
                let (sel, oth) = if m.load[n1 as usize] <= m.load[n2 as usize] {
                    (n1, n2)
                } else {
                    (n2, n1)
                };
                let (s, o) = (sel as usize, oth as usize);
                // One live node: nothing to compare, never resubmitted.
                let want = if count == 1 || m.drift[s] <= m.load[o] - m.load[s] {
                    Pow2First::Chosen(sel)
                } else {
                    Pow2First::Resubmit(Resubmit::Pow2 {
                        task,
                        samples: Pow2Samples {
                            first: sel,
                            first_load: m.load[s] as u32,
                            first_drift: m.drift[s] as u32,
                            first_epoch: m.epoch[s],
                            second: oth,
                            second_load: m.load[o] as u32,
                            second_drift: m.drift[o] as u32,
                            second_epoch: m.epoch[o],
                        },
                    })
                };
                prop_assert_eq!(got, want, "step {}: samples ({}, {})", step, n1, n2);
                match got {
                    Pow2First::Chosen(c) => {
                        let c = c as usize;
                        m.drift[c] = sat(m.drift[c] + m.factor[c] as i64);
                    }
                    Pow2First::Resubmit(r) if deliver_now => {
                        deliver_pow2(&mut p2, &mut m, &mut pipe, r).map_err(ctx)?
                    }
                    Pow2First::Resubmit(r) => parked.push(r),
                    Pow2First::Empty => unreachable!(),
                }
            }
            P2Op::Deliver(k) => {
                if parked.is_empty() {
                    continue;
                }
                let r = parked.remove(k % parked.len());
                deliver_pow2(&mut p2, &mut m, &mut pipe, r).map_err(ctx)?;
            }
            P2Op::AddDrift(node) => {
                p2.add_drift(&pipe.begin(), node);
                let i = node as usize;
                if m.alive[i] {
                    m.drift[i] = sat(m.drift[i] + m.factor[i] as i64);
                }
            }
            P2Op::ControlRemove(node) => {
                p2.control_remove(node);
                let i = node as usize;
                if i < m.alive.len() && m.alive[i] {
                    let slot = m.slots.iter().position(|&x| x == node).unwrap();
                    m.slots.swap_remove(slot);
                    m.alive[i] = false;
                }
            }
            P2Op::ControlAdd { node, workers } => {
                let f = if m.spine { spine_factor(workers) } else { 1 };
                p2.control_add(node, f);
                let i = node as usize;
                m.factor[i] = f;
                if !m.alive[i] {
                    m.alive[i] = true;
                    m.slots.push(node);
                    m.load[i] = 0;
                    m.drift[i] = 0;
                    m.epoch[i] = 0;
                }
            }
        }
        m.check(&p2)
            .map_err(|e| fail(format!("step {step} {op:?}: {e}")))?;
    }
    for r in parked {
        deliver_pow2(&mut p2, &mut m, &mut pipe, r)?;
        m.check(&p2)?;
    }
    Ok(())
}

/// Implementation-independent checks of a first pass against the state it saw:
/// a direct choice must be provably no heavier than some other live node
/// (Eq. 1 with d_n dropped); a resubmission must carry that state verbatim and
/// only happen when the drift exceeds the load difference.
fn check_first_pass(m: &P2Model, got: Pow2First) -> Result<(), TestCaseError> {
    let count = m.slots.len();
    match got {
        Pow2First::Chosen(c) => {
            let c = c as usize;
            prop_assert!(m.alive[c], "chose dead node {}", c);
            let witness = m.slots.iter().any(|&o| {
                let o = o as usize;
                count == 1
                    || o != c && m.load[c] <= m.load[o] && m.drift[c] <= m.load[o] - m.load[c]
            });
            prop_assert!(
                witness,
                "no sample could justify choosing {} without resubmitting",
                c
            );
        }
        Pow2First::Resubmit(Resubmit::Pow2 { samples, .. }) => {
            let Pow2Samples {
                first,
                first_load,
                first_drift,
                second,
                second_load,
                second_drift,
                ..
            } = samples;
            let (f, s) = (first as usize, second as usize);
            prop_assert!(m.alive[f] && m.alive[s]);
            prop_assert!(
                f != s,
                "samples must be distinct (one live node never resubmits)"
            );
            prop_assert_eq!(
                (first_load as i64, first_drift as i64),
                (m.load[f], m.drift[f])
            );
            prop_assert_eq!(
                (second_load as i64, second_drift as i64),
                (m.load[s], m.drift[s])
            );
            prop_assert!(
                first_load <= second_load,
                "first is the lighter-looking sample"
            );
            prop_assert!(
                first_drift > second_load - first_load,
                "resubmitted without need"
            );
        }
        other => prop_assert!(false, "unexpected {:?}", other),
    }
    Ok(())
}

fn deliver_pow2(
    p2: &mut LazyPow2,
    m: &mut P2Model,
    pipe: &mut Pipeline,
    r: Resubmit,
) -> Result<(), TestCaseError> {
    let Resubmit::Pow2 { samples, .. } = r else {
        unreachable!()
    };
    let got = p2.schedule_resubmitted(&pipe.resubmit(), &samples);
    let Pow2Samples {
        first,
        first_load,
        first_drift,
        first_epoch,
        second,
        second_load,
        second_drift,
        second_epoch,
    } = samples;
    // The truly lighter (load + drift) of the two samples as carried; ties to first.
    let q1 = sat(first_load as i64 + first_drift as i64);
    let q2 = sat(second_load as i64 + second_drift as i64);
    let (node, carried, epoch) = if q1 <= q2 {
        (first, first_drift, first_epoch)
    } else {
        (second, second_drift, second_epoch)
    };
    let i = node as usize;
    if !m.alive[i] {
        prop_assert_eq!(got, None, "node {} was removed between the passes", node);
        return Ok(());
    }
    prop_assert_eq!(got, Some(node), "second pass over q1={} q2={}", q1, q2);
    if m.epoch[i] == epoch {
        // Fold the carried drift into the load with atomic add/sub (pow2.rs docs).
        m.load[i] = sat(m.load[i] + carried as i64 + m.factor[i] as i64);
        m.drift[i] = sat(m.drift[i] - carried as i64);
    } else {
        // A report replaced load and drift between the passes: it already
        // counts the carried drift, so only this task is added.
        m.drift[i] = sat(m.drift[i] + m.factor[i] as i64);
    }
    Ok(())
}

fn pow2_ops(n: u32, spine: bool) -> impl Strategy<Value = Vec<P2Op>> {
    let unit = if spine { 4096u32 } else { 1 };
    // Small loads (ties and near ties make resubmissions common) and loads at
    // the top of the range (saturation).
    let load = prop_oneof![
        8 => (0u32..8).prop_map(move |l| l * unit),
        1 => (0u32..64).prop_map(|d| u32::MAX - d * 1024),
    ];
    let op = prop_oneof![
        3 => (0..n + 2, load).prop_map(|(node, load)| P2Op::Update { node, load }),
        6 => any::<bool>().prop_map(|deliver_now| P2Op::Schedule { deliver_now }),
        3 => any::<usize>().prop_map(P2Op::Deliver),
        2 => (0..n).prop_map(P2Op::AddDrift),
        1 => (0..n + 2).prop_map(P2Op::ControlRemove),
        1 => (0..n, 1u32..=64).prop_map(|(node, workers)| P2Op::ControlAdd { node, workers }),
    ];
    prop::collection::vec(op, 0..150)
}

fn pow2_case(spine: bool) -> impl Strategy<Value = (Vec<u32>, u64, Vec<P2Op>)> {
    (1u32..=8).prop_flat_map(move |n| {
        (
            prop::collection::vec(1u32..=64, n as usize),
            any::<u64>(),
            pow2_ops(n, spine),
        )
    })
}

proptest! {
    #![proptest_config(quick(1024))]

    /// Leaf units (increment 1): every first pass, second pass (immediate or
    /// interleaved), update, add_drift and control add/remove matches the
    /// exact model, both list copies agree, nothing wraps.
    #[test]
    fn lazy_pow2_leaf_matches_model((workers, seed, ops) in pow2_case(false)) {
        run_pow2(false, &workers, seed, &ops)?;
    }

    /// Spine units: per-rack increments 1/w in 16.16 (§A.2).
    #[test]
    fn lazy_pow2_spine_matches_model((workers, seed, ops) in pow2_case(true)) {
        run_pow2(true, &workers, seed, &ops)?;
    }
}

proptest! {
    #![proptest_config(quick(24))]

    /// Sampling stays uniform over the live nodes after control removals:
    /// with equal loads and positive drifts every first pass resubmits, which
    /// reveals both samples without changing state.
    #[test]
    fn lazy_pow2_samples_uniformly_over_live_nodes(
        n in 2u32..=12,
        removed in prop::collection::vec(any::<prop::sample::Index>(), 0..6),
        seed in any::<u64>(),
    ) {
        let mut p2 = LazyPow2::new(&mut Layout::new(), n, |_| 1);
        let mut live: Vec<NodeId> = (0..n).collect();
        for ix in removed {
            if live.len() <= 2 {
                break;
            }
            let node = live.remove(ix.index(live.len()));
            p2.control_remove(node);
        }
        let mut pipe = Pipeline::new();
        for &node in &live {
            p2.add_drift(&pipe.begin(), node);
        }
        let k = live.len();
        let mut firsts = vec![0u64; n as usize];
        let mut seconds = vec![0u64; n as usize];
        let draws = 4_000 * k as u64;
        let mut rng = Rng::new(seed);
        for _ in 0..draws {
            let got = p2.schedule(&pipe.begin(), &mut rng, TaskMeta::default());
            let Pow2First::Resubmit(Resubmit::Pow2 {
                samples: Pow2Samples { first, second, .. },
                ..
            }) = got
            else {
                return Err(fail(format!("equal loads with drift must resubmit, got {got:?}")));
            };
            prop_assert_ne!(first, second);
            firsts[first as usize] += 1;
            seconds[second as usize] += 1;
        }
        for counts in [&firsts, &seconds] {
            let expected = draws as f64 / k as f64;
            let mut chi2 = 0.0;
            for (node, &c) in counts.iter().enumerate() {
                if live.contains(&(node as u32)) {
                    chi2 += (c as f64 - expected).powi(2) / expected;
                } else {
                    prop_assert_eq!(c, 0, "removed node {} was sampled", node);
                }
            }
            // df = k-1 <= 11; the 1e-9 quantile is below 70.
            let df = (k - 1) as f64;
            prop_assert!(chi2 < df + 10.0 * (2.0 * df).sqrt() + 25.0, "chi2 {} over {:?} (live {:?})", chi2, counts, live);
        }
    }
}
