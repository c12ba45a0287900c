//! RackSched, RS-H and LoadTable behaviour.

use super::load_table::DISPATCH_HASH;
use super::*;
use crate::affinity::stage_hash;
use crate::dataplane::Dispatch;
use crate::dataplane::{DataPlane, Input, Notice, Resubmit, Upstream};
use crate::fixed;
use crate::rng::Rng;
use crate::Nanos;
use proptest::prelude::*;

fn run(dp: &mut impl DataPlane, now: u64, input: Input) -> Vec<Action> {
    let mut out = Outbox::new();
    dp.handle(Nanos::new(now), input, &mut out);
    out.drain().collect()
}

fn one_dispatch(acts: &[Action]) -> (NodeId, Decision) {
    match acts {
        [Action::Dispatch(Dispatch { node, decision, .. })] => (*node, *decision),
        other => panic!("expected one dispatch, got {other:?}"),
    }
}

fn req(id: u64, first: bool, last: bool) -> Input {
    Input::Task(TaskMeta {
        id,
        first,
        last,
        ..TaskMeta::default()
    })
}

fn single(id: u64) -> Input {
    req(id, true, true)
}

fn reply(node: NodeId, qlen: u32, task: u64) -> Input {
    Input::Reply {
        node,
        qlen,
        class: 0,
        task,
    }
}

fn cfg(samples: u32) -> RackSchedConfig {
    RackSchedConfig {
        samples,
        ..RackSchedConfig::default()
    }
}

fn with_loads(loads: &[u32], samples: u32, seed: u64) -> RackSched {
    let mut rs = RackSched::new(loads.len() as u32, seed, cfg(samples));
    for (n, &l) in loads.iter().enumerate() {
        assert!(run(&mut rs, 0, reply(n as NodeId, l, 0)).is_empty());
    }
    rs
}

proptest! {
    /// §3.3: sampling every server is exact JSQ on the LoadTable.
    #[test]
    fn sampling_every_node_picks_a_minimum(loads in proptest::collection::vec(0u32..6, 1..=MAX_SAMPLES), seed in any::<u64>()) {
        let mut rs = with_loads(&loads, loads.len() as u32, seed);
        let min = *loads.iter().min().unwrap();
        for id in 0..20 {
            let (node, d) = one_dispatch(&run(&mut rs, 0, single(id)));
            prop_assert_eq!(loads[node as usize], min);
            prop_assert_eq!(d, Decision::Sampled);
        }
    }

    /// §3.3 power-of-2: the choice is the lighter of the two samples the
    /// switch drew (recomputed from a clone of its random stream), so it
    /// is never the unique most loaded server.
    #[test]
    fn k2_picks_the_lighter_of_its_two_samples(loads in proptest::collection::vec(0u32..4, 2..40), seed in any::<u64>()) {
        let mut rs = with_loads(&loads, 2, seed);
        let max = *loads.iter().max().unwrap();
        let unique_max = loads.iter().filter(|&&l| l == max).count() == 1;
        for id in 0..50 {
            let mut probe = rs.rng.clone();
            let mut slots = [0u32; MAX_SAMPLES];
            prop_assert_eq!(distinct_samples(&mut probe, loads.len() as u32, 2, &mut slots), 2);
            prop_assert_ne!(slots[0], slots[1]);
            // Slots are nodes here: no server was ever removed.
            let (a, b) = (slots[0] as usize, slots[1] as usize);
            let expect = if loads[b] < loads[a] { b } else { a };
            let (node, _) = one_dispatch(&run(&mut rs, 0, single(id)));
            prop_assert_eq!(node as usize, expect);
            prop_assert!(!(unique_max && loads[node as usize] == max));
        }
        rs.load_table().check_invariants().map_err(TestCaseError::fail)?;
    }

    /// What `writes_state_only` promises the simulator, which holds
    /// RS-H's load updates back and hands them over just before the
    /// spine's next input: an update emits at most a drop, and handling
    /// it later leaves the spine in exactly the same state (every
    /// register, the pass counters and the random stream).
    #[test]
    fn spine_load_updates_write_state_only(
        ops in proptest::collection::vec((0u8..4, 0u32..8, 0u32..4 * fixed::ONE), 1..80),
        seed in any::<u64>(),
    ) {
        // A small ReqTable keeps the whole-state comparison (Debug) cheap.
        let req = ReqTableConfig { stages: 1, slots_per_stage: 8, ..ReqTableConfig::default() };
        let mut sp = RackSchedSpine::new(6, seed, 2, req);
        for (i, &(op, node, load)) in ops.iter().enumerate() {
            let input = match op {
                0 | 1 => Input::LoadUpdate { node, load },
                2 => single(i as u64),
                _ => {
                    sp.control_remove_node(node % 6);
                    continue;
                }
            };
            prop_assert_eq!(sp.writes_state_only(&input), op < 2);
            if !sp.writes_state_only(&input) {
                run(&mut sp, 10, input);
                continue;
            }
            let mut late = sp.clone();
            let now = run(&mut sp, 10, input);
            prop_assert!(now.iter().all(|a| matches!(a, Action::Drop(_))), "{:?}", now);
            prop_assert_eq!(&run(&mut late, 5_000_000, input), &now);
            prop_assert_eq!(format!("{late:?}"), format!("{sp:?}"));
        }
    }

    /// Horus §4.1/§5.2 RS-H: exactly one LoadUpdate to all spines per
    /// reply, carrying sum(LoadTable)/n in 16.16.
    #[test]
    fn rs_h_leaf_reports_the_rack_average_once_per_reply(
        n in 1u32..12,
        replies in proptest::collection::vec((0u32..12, 0u32..50), 1..100),
    ) {
        let mut leaf = RackSched::rs_h_leaf(n, 1, RackSchedConfig::default());
        let mut model = vec![0u64; n as usize];
        for (node, q) in replies {
            let acts = run(&mut leaf, 0, reply(node, q, 7));
            if node >= n {
                prop_assert_eq!(acts, vec![Action::Drop(DropReason::UnknownNode)]);
                continue;
            }
            model[node as usize] = q as u64;
            let sum: u64 = model.iter().sum();
            let avg = ((sum << 16) / n as u64) as u32;
            prop_assert_eq!(acts, vec![Action::Notify { to: Upstream::All, notice: Notice::LoadUpdate(avg) }]);
            prop_assert_eq!(leaf.average_load(), avg);
            prop_assert_eq!(leaf.total_load(), sum);
        }
    }

    /// §3.4: every REQR of a request goes where its REQF went, also when
    /// a tiny ReqTable overflows and hash dispatch takes over, while
    /// replies of finished requests keep changing the loads.
    #[test]
    fn request_affinity_holds_under_overflow(
        seed in any::<u64>(),
        script in proptest::collection::vec((0usize..6, 0u32..5), 1..250),
    ) {
        let n = 5;
        let mut rs = RackSched::new(n, seed, RackSchedConfig {
            samples: 2,
            classes: 1,
            req_table: ReqTableConfig { stages: 2, slots_per_stage: 2, timeout_ns: u64::MAX / 2 },
            report_load: false,
            tracking: LoadTracking::Int1,
        });
        // Six request "lanes"; each lane runs requests of 1..4 packets back to back.
        let mut lane: Vec<Option<(u64, NodeId, u32)>> = vec![None; 6];
        let mut next_id = 1u64;
        for (t, (l, x)) in script.into_iter().enumerate() {
            let now = t as u64;
            match lane[l] {
                None => {
                    let packets = 1 + x % 4;
                    let id = next_id;
                    next_id += 1;
                    let (node, _) = one_dispatch(&run(&mut rs, now, req(id, true, packets == 1)));
                    lane[l] = Some((id, node, packets - 1));
                }
                Some((id, node, 0)) => {
                    // Reply: frees the entry and moves the load of the server.
                    prop_assert!(run(&mut rs, now, reply(node, x, id)).is_empty());
                    prop_assert!(rs.req.lookup(&rs.pipeline.begin(), now, id).is_none(), "reply removes the entry");
                    lane[l] = None;
                }
                Some((id, node, left)) => {
                    let (got, d) = one_dispatch(&run(&mut rs, now, req(id, false, left == 1)));
                    prop_assert_eq!(got, node, "REQR of {} strayed", id);
                    prop_assert_eq!(d, Decision::Other);
                    lane[l] = Some((id, node, left - 1));
                }
            }
            rs.load_table().check_invariants().map_err(TestCaseError::fail)?;
        }
    }
}

#[test]
fn delayed_updates_mean_no_increment_at_dispatch() {
    // The point of RackSched's LoadTable (§3.5, Horus App. C "DU"): until a
    // reply arrives, every request sees the same loads and herds.
    let mut rs = with_loads(&[3, 2, 5, 1, 4], 5, 9);
    for id in 0..10 {
        assert_eq!(one_dispatch(&run(&mut rs, 0, single(id))).0, 3);
    }
    assert_eq!(rs.load_table().load(3), Some(1));
    run(&mut rs, 0, reply(3, 6, 0));
    assert_eq!(one_dispatch(&run(&mut rs, 0, single(11))).0, 1);
}

#[test]
fn reqf_inserts_reqr_reads_reply_removes() {
    let mut rs = RackSched::new(8, 4, RackSchedConfig::default());
    let (node, d) = one_dispatch(&run(&mut rs, 0, req(42, true, false)));
    assert_eq!(d, Decision::Sampled);
    assert_eq!(rs.req_table().occupancy(), 1);
    // Loads change in between; the continuation must not be rescheduled.
    for n in 0..8 {
        run(
            &mut rs,
            1,
            reply(n, if n == node { 50 } else { 0 }, 1000 + n as u64),
        );
    }
    assert_eq!(
        one_dispatch(&run(&mut rs, 2, req(42, false, false))),
        (node, Decision::Other)
    );
    assert_eq!(one_dispatch(&run(&mut rs, 3, req(42, false, true))).0, node);
    assert_eq!(
        rs.req_table().occupancy(),
        1,
        "REQR does not remove; the reply does (Alg. 1)"
    );
    run(&mut rs, 4, reply(node, 0, 42));
    assert_eq!(rs.req_table().occupancy(), 0);
    // Single-packet requests never occupy the table.
    one_dispatch(&run(&mut rs, 5, single(43)));
    assert_eq!(rs.req_table().occupancy(), 0);
}

#[test]
fn overflow_falls_back_to_hash_dispatch() {
    let mut rs = RackSched::new(
        16,
        4,
        RackSchedConfig {
            req_table: ReqTableConfig {
                stages: 1,
                slots_per_stage: 1,
                timeout_ns: 1_000_000,
            },
            ..RackSchedConfig::default()
        },
    );
    one_dispatch(&run(&mut rs, 0, req(1, true, false)));
    let mut fallback = 0;
    for id in 2..40u64 {
        let (node, d) = one_dispatch(&run(&mut rs, 0, req(id, true, false)));
        let expect = (stage_hash(id, DISPATCH_HASH) % 16) as NodeId;
        assert_eq!(
            (node, d),
            (expect, Decision::Other),
            "request {id} overflowed"
        );
        assert_eq!(one_dispatch(&run(&mut rs, 0, req(id, false, true))).0, node);
        fallback += 1;
    }
    assert_eq!(rs.req_table().overflows, fallback);
}

#[test]
fn sweep_removes_stale_entries() {
    let mut rs = RackSched::new(
        4,
        4,
        RackSchedConfig {
            req_table: ReqTableConfig {
                stages: 2,
                slots_per_stage: 64,
                timeout_ns: 1_000,
            },
            ..RackSchedConfig::default()
        },
    );
    for id in 0..5 {
        one_dispatch(&run(&mut rs, 0, req(id, true, false)));
    }
    one_dispatch(&run(&mut rs, 900, req(9, true, false)));
    assert_eq!(rs.req_table().occupancy(), 6);
    assert_eq!(
        rs.control_sweep(1_500),
        5,
        "only entries older than the timeout go"
    );
    assert_eq!(rs.req_table().occupancy(), 1);
}

#[test]
fn multi_queue_uses_the_counters_of_the_request_type() {
    // §3.6: per-type counters; an unconfigured type falls back to totals.
    let mut rs = RackSched::new(
        2,
        1,
        RackSchedConfig {
            samples: 2,
            classes: 2,
            ..RackSchedConfig::default()
        },
    );
    for (node, class, q) in [(0, 0, 5), (1, 0, 0), (0, 1, 0), (1, 1, 7)] {
        assert!(run(
            &mut rs,
            0,
            Input::Reply {
                node,
                qlen: q,
                class,
                task: 0
            }
        )
        .is_empty());
    }
    for _ in 0..10 {
        assert_eq!(one_dispatch(&run(&mut rs, 0, typed_task(0))).0, 1);
        assert_eq!(one_dispatch(&run(&mut rs, 0, typed_task(1))).0, 0);
        assert_eq!(
            one_dispatch(&run(&mut rs, 0, typed_task(9))).0,
            0,
            "totals 5 vs 7"
        );
    }
    assert_eq!(rs.load_table().load(1), Some(7));
    assert_eq!(rs.total_load(), 12);
    assert_eq!(
        run(
            &mut rs,
            0,
            Input::Reply {
                node: 0,
                qlen: 1,
                class: 2,
                task: 0
            }
        ),
        vec![Action::Drop(DropReason::Unexpected)]
    );
    rs.load_table().check_invariants().unwrap();
}

#[test]
fn removed_server_gets_no_requests_and_loses_its_entries() {
    let mut rs = with_loads(&[0, 9, 9, 9], 4, 2);
    let (node, _) = one_dispatch(&run(&mut rs, 0, req(5, true, false)));
    assert_eq!(node, 0);
    rs.control_remove_node(0);
    assert_eq!(rs.req_table().occupancy(), 0);
    assert_eq!(rs.total_load(), 27);
    for id in 10..60 {
        assert_ne!(one_dispatch(&run(&mut rs, 0, single(id))).0, 0);
    }
    // The orphaned continuation is re-homed by hash onto a live server.
    assert_ne!(one_dispatch(&run(&mut rs, 0, req(5, false, true))).0, 0);
    assert_eq!(
        run(&mut rs, 0, reply(0, 0, 5)),
        vec![Action::Drop(DropReason::UnknownNode)]
    );
    rs.control_add_node(6);
    assert_eq!(
        one_dispatch(&run(&mut rs, 0, single(99))).0,
        6,
        "a new server starts empty"
    );
    rs.load_table().check_invariants().unwrap();
    for n in [1, 2, 3, 6] {
        rs.control_remove_node(n);
    }
    assert_eq!(
        run(&mut rs, 0, single(1)),
        vec![Action::Drop(DropReason::NoNodes)]
    );
    assert_eq!(
        run(&mut rs, 0, Input::QueueChanged { node: 1, qlen: 0 }),
        vec![Action::Drop(DropReason::Unexpected)]
    );
}

#[test]
fn spine_balances_racks_on_reported_averages_only() {
    let mut sp = RackSchedSpine::new(3, 5, 3, ReqTableConfig::default());
    for (rack, avg) in [(0, 3 * fixed::ONE), (1, fixed::ONE / 2), (2, fixed::ONE)] {
        assert!(run(
            &mut sp,
            0,
            Input::LoadUpdate {
                node: rack,
                load: avg
            }
        )
        .is_empty());
    }
    for id in 0..5 {
        assert_eq!(
            one_dispatch(&run(&mut sp, 0, single(id))),
            (1, Decision::Sampled)
        );
    }
    assert_eq!(
        sp.load_table().load(1),
        Some(fixed::ONE / 2),
        "nothing added at dispatch"
    );
    run(
        &mut sp,
        0,
        Input::LoadUpdate {
            node: 1,
            load: 2 * fixed::ONE,
        },
    );
    let (rack, _) = one_dispatch(&run(&mut sp, 0, req(50, true, false)));
    assert_eq!(rack, 2);
    run(
        &mut sp,
        0,
        Input::LoadUpdate {
            node: 2,
            load: 9 * fixed::ONE,
        },
    );
    assert_eq!(
        one_dispatch(&run(&mut sp, 0, req(50, false, true))).0,
        2,
        "continuation follows"
    );
    assert_eq!(
        sp.req_table().occupancy(),
        0,
        "the last packet frees the entry at a spine"
    );
    assert_eq!(
        run(&mut sp, 0, Input::LoadUpdate { node: 7, load: 0 }),
        vec![Action::Drop(DropReason::UnknownNode)]
    );
    assert_eq!(
        run(&mut sp, 0, reply(0, 0, 0)),
        vec![Action::Drop(DropReason::Unexpected)]
    );
}

#[test]
fn rs_h_leaf_feeds_spine() {
    let mut spine = RackSchedSpine::new(2, 1, 2, ReqTableConfig::default());
    let mut leaves = [
        RackSched::rs_h_leaf(4, 1, RackSchedConfig::default()),
        RackSched::rs_h_leaf(2, 2, RackSchedConfig::default()),
    ];
    for (rack, leaf) in leaves.iter_mut().enumerate() {
        for w in 0..leaf.load_table().len() {
            for a in run(leaf, 0, reply(w, 2 + rack as u32, 0)) {
                let Action::Notify {
                    to: Upstream::All,
                    notice: Notice::LoadUpdate(load),
                } = a
                else {
                    panic!("{a:?}")
                };
                run(
                    &mut spine,
                    0,
                    Input::LoadUpdate {
                        node: rack as NodeId,
                        load,
                    },
                );
            }
        }
    }
    assert_eq!(spine.load_table().load(0), Some(2 * fixed::ONE));
    assert_eq!(spine.load_table().load(1), Some(3 * fixed::ONE));
    assert_eq!(one_dispatch(&run(&mut spine, 0, single(1))).0, 0);
}

fn tracking(n: u32, samples: u32, tracking: LoadTracking) -> RackSched {
    RackSched::new(
        n,
        11,
        RackSchedConfig {
            samples,
            tracking,
            ..RackSchedConfig::default()
        },
    )
}

/// Feeds a Proactive dispatch and its counting pass; returns the server.
fn proactive_dispatch(rs: &mut RackSched, id: u64, class: u8) -> NodeId {
    let t = TaskMeta {
        class,
        ..TaskMeta::single(id)
    };
    let acts = run(rs, 0, Input::Task(t));
    let [Action::Dispatch(Dispatch { node, .. }), Action::Resubmit(r)] = acts[..] else {
        panic!("expected a dispatch and a counting pass, got {acts:?}")
    };
    assert_eq!(r, Resubmit::CountDispatch { node, class });
    assert!(run(rs, 0, Input::Resubmit(r)).is_empty());
    node
}

#[test]
fn proactive_counts_dispatches_minus_replies_and_keeps_lost_replies() {
    // §3.5/§4.6 Proactive, samples = n so the choice is the exact minimum.
    let mut rs = tracking(4, 4, LoadTracking::Proactive);
    let t = single(1);
    let acts = run(&mut rs, 0, t);
    let [Action::Dispatch(Dispatch { node: first, .. }), Action::Resubmit(r)] = acts[..] else {
        panic!("{acts:?}")
    };
    assert_eq!(
        rs.load_table().load(first),
        Some(0),
        "the first pass only reads the counters"
    );
    run(&mut rs, 0, Input::Resubmit(r));
    assert_eq!(rs.load_table().load(first), Some(1));
    // Three more go to the three servers still at 0, then the fifth to any.
    let mut sent = vec![first];
    for id in 2..5 {
        sent.push(proactive_dispatch(&mut rs, id, 0));
    }
    sent.sort_unstable();
    assert_eq!(sent, vec![0, 1, 2, 3]);
    assert_eq!(rs.total_load(), 4);
    // A reply takes one off whatever LOAD says.
    assert!(run(&mut rs, 0, reply(2, 57, 3)).is_empty());
    assert_eq!(rs.load_table().load(2), Some(0));
    // Floors at 0: a duplicate reply cannot go negative.
    run(&mut rs, 0, reply(2, 0, 3));
    assert_eq!(rs.load_table().load(2), Some(0));
    // Replies of servers 0 and 3 arrive; server 1's is lost: its +1 stays
    // for good and every later choice avoids it.
    run(&mut rs, 0, reply(0, 0, 1));
    run(&mut rs, 0, reply(3, 0, 4));
    assert_eq!(
        (0..4)
            .map(|n| rs.load_table().load(n).unwrap())
            .collect::<Vec<_>>(),
        vec![0, 1, 0, 0]
    );
    let mut next: Vec<NodeId> = (10..13)
        .map(|id| proactive_dispatch(&mut rs, id, 0))
        .collect();
    next.sort_unstable();
    assert_eq!(next, vec![0, 2, 3], "the leaked count repels requests");
    assert_eq!(
        rs.pipeline().resubmissions,
        7,
        "one counting pass per request"
    );
    rs.load_table().check_invariants().unwrap();
    // Unknown servers are dropped in either pass.
    assert_eq!(
        run(&mut rs, 0, reply(9, 0, 0)),
        vec![Action::Drop(DropReason::UnknownNode)]
    );
    rs.control_remove_node(3);
    assert_eq!(
        run(
            &mut rs,
            0,
            Input::Resubmit(Resubmit::CountDispatch { node: 3, class: 0 })
        ),
        vec![Action::Drop(DropReason::UnknownNode)]
    );
}

#[test]
fn proactive_counts_per_request_type_with_multi_queue() {
    let mut rs = RackSched::new(
        3,
        5,
        RackSchedConfig {
            samples: 3,
            classes: 2,
            tracking: LoadTracking::Proactive,
            ..RackSchedConfig::default()
        },
    );
    let a = proactive_dispatch(&mut rs, 1, 1);
    assert_eq!(rs.load_table().class_load(a, 1), Some(1));
    assert_eq!(rs.load_table().class_load(a, 0), Some(0));
    // Type 0 counters are all 0, so type 0 may land on `a` again; type 1 may not.
    for id in 2..4 {
        assert_ne!(proactive_dispatch(&mut rs, id, 1), a);
    }
    run(
        &mut rs,
        0,
        Input::Reply {
            node: a,
            qlen: 40,
            class: 1,
            task: 1,
        },
    );
    assert_eq!(rs.load_table().class_load(a, 1), Some(0));
    assert_eq!(rs.total_load(), 2);
    rs.load_table().check_invariants().unwrap();
}

#[test]
fn int2_herds_on_the_recorded_minimum_until_a_reply_moves_it() {
    let mut rs = tracking(5, 2, LoadTracking::Int2 { random_one_in: 0 });
    assert_eq!(rs.recorded_minimum(0), Some((0, u32::MAX)));
    for (node, q) in [(0, 3), (1, 2), (2, 5)] {
        assert!(run(&mut rs, 0, reply(node, q, 0)).is_empty());
    }
    assert_eq!(rs.recorded_minimum(0), Some((1, 2)));
    // Nothing changes at dispatch: every request herds onto server 1.
    for id in 0..20 {
        assert_eq!(
            one_dispatch(&run(&mut rs, 0, single(id))),
            (1, Decision::Other)
        );
    }
    // The recorded server's own reply refreshes its load but keeps it:
    // the switch knows no other minimum.
    run(&mut rs, 0, reply(1, 7, 0));
    assert_eq!(rs.recorded_minimum(0), Some((1, 7)));
    assert_eq!(one_dispatch(&run(&mut rs, 0, single(30))).0, 1);
    // A reply no larger takes over; a larger one does not.
    run(&mut rs, 0, reply(3, 7, 0));
    run(&mut rs, 0, reply(0, 9, 0));
    assert_eq!(rs.recorded_minimum(0), Some((3, 7)));
    for id in 40..50 {
        assert_eq!(one_dispatch(&run(&mut rs, 0, single(id))).0, 3);
    }
    assert_eq!(
        run(&mut rs, 0, reply(9, 0, 0)),
        vec![Action::Drop(DropReason::UnknownNode)]
    );
    assert_eq!(
        rs.recorded_minimum(0),
        Some((3, 7)),
        "unknown servers are ignored"
    );
    // Removing the recorded server restarts the entry on a live one.
    rs.control_remove_node(3);
    let (live, load) = rs.recorded_minimum(0).unwrap();
    assert!(rs.load_table().contains(live) && load == u32::MAX);
    run(&mut rs, 0, reply(4, 100, 0));
    assert_eq!(rs.recorded_minimum(0), Some((4, 100)));
    assert_eq!(one_dispatch(&run(&mut rs, 0, single(60))).0, 4);
    rs.load_table().check_invariants().unwrap();
    // A ToR that starts empty herds onto its first server, not node 0.
    let mut empty = tracking(0, 2, LoadTracking::Int2 { random_one_in: 0 });
    assert_eq!(
        run(&mut empty, 0, single(1)),
        vec![Action::Drop(DropReason::NoNodes)]
    );
    empty.control_add_node(5);
    assert_eq!(empty.recorded_minimum(0), Some((5, u32::MAX)));
    assert_eq!(one_dispatch(&run(&mut empty, 0, single(2))).0, 5);
}

#[test]
fn int2_sends_one_in_n_requests_to_a_random_server() {
    // The artifact's exploration: predicted draw by draw from a clone of
    // the switch's random stream.
    let n = 8;
    let mut rs = tracking(n, 2, LoadTracking::Int2 { random_one_in: 4 });
    run(&mut rs, 0, reply(5, 0, 0));
    let mut explored = 0;
    for id in 0..2_000 {
        let mut probe = rs.rng.clone();
        let expect = if probe.below(4) == 0 {
            explored += 1;
            probe.below(n)
        } else {
            5
        };
        assert_eq!(one_dispatch(&run(&mut rs, 0, single(id))).0, expect);
    }
    assert!((400..600).contains(&explored), "{explored} of 2000");
}

#[test]
fn int2_keeps_one_minimum_per_request_type() {
    let mut rs = RackSched::new(
        3,
        1,
        RackSchedConfig {
            classes: 2,
            tracking: LoadTracking::Int2 { random_one_in: 0 },
            ..RackSchedConfig::default()
        },
    );
    for (node, class, qlen) in [(0, 0, 4), (1, 0, 1), (2, 1, 3), (0, 1, 6)] {
        run(
            &mut rs,
            0,
            Input::Reply {
                node,
                qlen,
                class,
                task: 0,
            },
        );
    }
    assert_eq!(rs.recorded_minimum(0), Some((1, 1)));
    assert_eq!(rs.recorded_minimum(1), Some((2, 3)));
    assert_eq!(one_dispatch(&run(&mut rs, 0, typed_task(0))).0, 1);
    assert_eq!(one_dispatch(&run(&mut rs, 0, typed_task(1))).0, 2);
}

#[test]
fn int3_balances_on_the_reported_outstanding_work() {
    // INT3 is INT1's switch logic over work in ns rather than a count: a
    // server with one 500 µs request is busier than one with four 50 µs.
    let mut rs = tracking(2, 2, LoadTracking::Int3);
    run(&mut rs, 0, reply(0, 500_000, 0));
    run(&mut rs, 0, reply(1, 200_000, 0));
    for id in 0..10 {
        assert_eq!(
            one_dispatch(&run(&mut rs, 0, single(id))),
            (1, Decision::Sampled)
        );
    }
    assert_eq!(rs.load_table().load(1), Some(200_000));
}

#[test]
fn many_classes_and_max_k_respect_the_switch_model() {
    let mut rs = RackSched::new(
        40,
        3,
        RackSchedConfig {
            samples: MAX_SAMPLES as u32,
            classes: 4,
            ..RackSchedConfig::default()
        },
    );
    let mut rng = Rng::new(1);
    for i in 0..2_000u64 {
        let node = rng.below(40);
        let class = rng.below(5) as u8;
        run(
            &mut rs,
            i,
            Input::Reply {
                node,
                qlen: rng.below(20),
                class,
                task: i,
            },
        );
        let t = TaskMeta {
            id: i,
            first: true,
            last: rng.chance(0.5),
            class,
            ..TaskMeta::default()
        };
        one_dispatch(&run(&mut rs, i, Input::Task(t)));
        if i % 97 == 0 {
            rs.control_remove_node(rng.below(40));
            rs.control_add_node(rng.below(45));
        }
    }
    rs.load_table().check_invariants().unwrap();
    assert_eq!(
        rs.pipeline().resubmissions,
        0,
        "RackSched decides in one pass"
    );
}

/// Task 1, one packet, of type `class` (RackSched §3.3 multi-queue).
fn typed_task(class: u8) -> Input {
    Input::Task(TaskMeta {
        class,
        ..TaskMeta::single(1)
    })
}
