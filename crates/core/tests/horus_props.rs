//! Property tests for the Horus data planes (NSDI'24 §3.3, §3.4, App. A).
//!
//! 1. `IdleNodes` (Alg. 1) against a `BTreeSet` model, spine and leaf flavours.
//! 2. `LazyPow2` (Alg. 2, lazy drift rule) against an exact i64 model.
//! 3. `HorusSpine` + `HorusLeaf` end to end through a tiny sans-IO driver, with
//!    optional delays, reordering and loss of leaf-to-spine notices (§3.4, §A.3).
//! 4. A random mix of every input never breaks the one-access-per-pass rule of
//!    the switch model (any such violation panics inside `RegisterArray`).
//!
//! Deterministic tests for the bugs these properties found sit next to the
//! property that found them. Bugs 1 (idle list top-slot remove racing an add)
//! and 2 (a leaf listing a worker twice, then indexing past its idle list) are
//! fixed in 77c7e33, and the control-plane removal bugs after it; every
//! regression test runs.
//!
//! The LazyPow2 model replays `LazyPow2::samples` to know which two slots a
//! first pass drew; keep `replay_samples` in step with `src/pow2.rs`.

use std::collections::{BTreeSet, HashSet, VecDeque};

use netsched_core::dataplane::{
    Action, DataPlane, Decision, DropReason, Input, NodeId, Notice, Outbox, Pow2Samples, Resubmit,
    TaskMeta, Upstream,
};
use netsched_core::fixed;
use netsched_core::horus::{ConnTableConfig, HorusLeaf, HorusSpine};
use netsched_core::idle::{AddOutcome, IdleNodes, RemoveFirst, Retrieved};
use netsched_core::pow2::{LazyPow2, Pow2First};
use netsched_core::rng::Rng;
use netsched_core::switch::{Layout, Pipeline};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

/// `cases` cases; shrunk failures are printed, not persisted (proptest finds
/// no lib.rs next to an integration test to store them beside).
fn quick(cases: u32) -> ProptestConfig {
    ProptestConfig {
        failure_persistence: None,
        ..ProptestConfig::with_cases(cases)
    }
}

fn fail(msg: String) -> TestCaseError {
    TestCaseError::fail(msg)
}

fn single_packet_task(id: u64) -> TaskMeta {
    TaskMeta {
        id,
        first: true,
        last: true,
        ..TaskMeta::default()
    }
}

// ---------------------------------------------------------------------------
// 1. IdleNodes (Alg. 1)
// ---------------------------------------------------------------------------

#[derive(Clone, Copy, Debug)]
enum IdleOp {
    /// Spine: add node `n`. Leaf: add the `n`-th node that is neither idle
    /// nor being removed.
    Add(u32),
    /// Spine: first pass of a remove of node `n`. Leaf: of the `n`-th idle node.
    Remove(u32),
    /// Second pass of the pending remove (at most one: the lock serialises them).
    Complete,
    /// Spine: read the top idle node.
    Peek,
    /// Leaf: take the top idle node.
    Retrieve,
}

#[derive(Clone, Copy, Debug)]
enum PendingRemove {
    Move {
        node: NodeId,
        last_node: NodeId,
        removed_index: u32,
    },
    Release,
}

impl PendingRemove {
    fn node(self) -> Option<NodeId> {
        match self {
            PendingRemove::Move { node, .. } => Some(node),
            PendingRemove::Release => None,
        }
    }
}

fn idle_ops(cap: u32, leaf: bool) -> impl Strategy<Value = Vec<IdleOp>> {
    // The leaf flavour interprets the payloads as indices into the model.
    let range = if leaf { 0..64 } else { 0..cap };
    let last = if leaf {
        Just(IdleOp::Retrieve)
    } else {
        Just(IdleOp::Peek)
    };
    let op = prop_oneof![
        4 => range.clone().prop_map(IdleOp::Add),
        4 => range.prop_map(IdleOp::Remove),
        3 => Just(IdleOp::Complete),
        2 => last,
    ];
    prop::collection::vec(op, 0..100)
}

/// Checks a first pass that took the lock for idle node `n` and returns what
/// its second pass must do. Alg. 1 moves the last idle node into the hole;
/// when `n` itself sits in the top slot there is nothing to move, and the
/// second pass must only release the lock (an add between the passes may
/// already have reused that slot).
fn expect_remove_of_member(
    got: RemoveFirst,
    n: NodeId,
    before: &[NodeId],
) -> Result<PendingRemove, TestCaseError> {
    let pos = before
        .iter()
        .position(|&x| x == n)
        .expect("quiescent list holds the model") as u32;
    let last_node = *before.last().unwrap();
    if last_node == n {
        prop_assert_eq!(
            got,
            RemoveFirst::RemovedTop,
            "remove({}) from {:?}",
            n,
            before
        );
        return Ok(PendingRemove::Release);
    }
    let want = RemoveFirst::Resubmit {
        last_node,
        removed_index: pos,
    };
    prop_assert_eq!(got, want, "remove({}) from {:?}", n, before);
    Ok(PendingRemove::Move {
        node: n,
        last_node,
        removed_index: pos,
    })
}

fn complete_pending(
    idle: &mut IdleNodes,
    pipe: &mut Pipeline,
    pending: &mut Option<PendingRemove>,
) {
    match pending.take() {
        Some(PendingRemove::Move {
            last_node,
            removed_index,
            ..
        }) => idle.remove_second(&pipe.resubmit(), last_node, removed_index),
        Some(PendingRemove::Release) => idle.release(&pipe.resubmit()),
        None => {}
    }
}

/// At a quiescent point the structure must hold exactly the model's nodes,
/// once each, contiguously, with consistent back-pointers (and membership bits).
fn check_idle_quiescent(
    idle: &IdleNodes,
    model: &BTreeSet<NodeId>,
    cap: u32,
) -> Result<(), TestCaseError> {
    idle.check_invariant()
        .map_err(|e| fail(format!("invariant: {e}; list {:?}", idle.idle())))?;
    let got: BTreeSet<NodeId> = idle.idle().iter().copied().collect();
    prop_assert_eq!(
        got.len(),
        idle.idle().len(),
        "duplicates in {:?}",
        idle.idle()
    );
    prop_assert_eq!(&got, model, "idle list {:?}", idle.idle());
    prop_assert_eq!(idle.len() as usize, model.len());
    for n in 0..cap {
        prop_assert_eq!(idle.contains(n), model.contains(&n), "contains({})", n);
    }
    Ok(())
}

/// Spine flavour (membership bit): duplicate adds and removes of absent nodes
/// are counted no-ops, removes under the lock are dropped. With
/// `adds_between_passes`, adds may also land between the two passes of a remove
/// (the module docs say add needs no lock).
fn run_spine_idle(
    cap: u32,
    ops: &[IdleOp],
    adds_between_passes: bool,
) -> Result<(), TestCaseError> {
    let mut pipe = Pipeline::new();
    let mut idle = IdleNodes::new(&mut Layout::new(), cap as usize, true);
    let mut model = BTreeSet::new();
    let mut pending: Option<PendingRemove> = None;
    for (step, &op) in ops.iter().enumerate() {
        match op {
            IdleOp::Add(n) => {
                if pending.is_some() && !adds_between_passes {
                    continue;
                }
                let got = idle.add(&pipe.begin(), n);
                let want = if model.contains(&n) {
                    AddOutcome::Duplicate
                } else {
                    AddOutcome::Added {
                        previous: model.len() as u32,
                    }
                };
                prop_assert_eq!(got, want, "step {}: add({})", step, n);
                model.insert(n);
            }
            IdleOp::Remove(n) => {
                let before = idle.idle().to_vec();
                let got = idle.remove_first(&pipe.begin(), n);
                if pending.is_some() {
                    prop_assert_eq!(
                        got,
                        RemoveFirst::LockHeld,
                        "step {}: remove({}) under the lock",
                        step,
                        n
                    );
                    prop_assert_eq!(
                        idle.idle(),
                        &before[..],
                        "a dropped remove must not touch the list"
                    );
                } else if !model.contains(&n) {
                    prop_assert_eq!(
                        got,
                        RemoveFirst::Absent,
                        "step {}: remove({}) of a non-idle node",
                        step,
                        n
                    );
                    pending = Some(PendingRemove::Release);
                } else {
                    pending = Some(
                        expect_remove_of_member(got, n, &before)
                            .map_err(|e| fail(format!("step {step}: {e}")))?,
                    );
                    model.remove(&n);
                }
            }
            IdleOp::Complete => complete_pending(&mut idle, &mut pipe, &mut pending),
            IdleOp::Peek => {
                let top_before = idle.idle().last().copied();
                let got = idle.peek(&pipe.begin());
                // Between a remove's passes the spine sees no idle node.
                prop_assert_eq!(
                    got.is_some(),
                    !model.is_empty() && pending.is_none(),
                    "step {}: peek",
                    step
                );
                if pending.is_none() {
                    prop_assert_eq!(got, top_before);
                }
                if let Some(n) = got {
                    // Between the passes the top may still show the node being removed.
                    prop_assert!(
                        model.contains(&n) || pending.and_then(PendingRemove::node) == Some(n),
                        "step {}: peek returned non-idle node {}",
                        step,
                        n
                    );
                }
            }
            IdleOp::Retrieve => unreachable!("spines never retrieve"),
        }
        prop_assert_eq!(idle.is_locked(), pending.is_some(), "step {}: lock", step);
        // p counts idle nodes even between the passes of a remove.
        prop_assert_eq!(idle.len() as usize, model.len(), "step {}: p", step);
        if pending.is_none() {
            check_idle_quiescent(&idle, &model, cap)
                .map_err(|e| fail(format!("step {step} {op:?}: {e}")))?;
        }
    }
    complete_pending(&mut idle, &mut pipe, &mut pending);
    check_idle_quiescent(&idle, &model, cap)
}

/// Leaf flavour (no membership bit): callers only add non-idle nodes and only
/// remove idle ones; tasks retrieve the top node.
fn run_leaf_idle(cap: u32, ops: &[IdleOp], adds_between_passes: bool) -> Result<(), TestCaseError> {
    let mut pipe = Pipeline::new();
    let mut idle = IdleNodes::new(&mut Layout::new(), cap as usize, false);
    let mut model = BTreeSet::new();
    let mut pending: Option<PendingRemove> = None;
    for (step, &op) in ops.iter().enumerate() {
        match op {
            IdleOp::Add(k) => {
                if pending.is_some() && !adds_between_passes {
                    continue;
                }
                let removing = pending.and_then(PendingRemove::node);
                let candidates: Vec<NodeId> = (0..cap)
                    .filter(|n| !model.contains(n) && Some(*n) != removing)
                    .collect();
                if candidates.is_empty() {
                    continue;
                }
                let n = candidates[k as usize % candidates.len()];
                let got = idle.add(&pipe.begin(), n);
                prop_assert_eq!(
                    got,
                    AddOutcome::Added {
                        previous: model.len() as u32
                    },
                    "step {}: add({})",
                    step,
                    n
                );
                model.insert(n);
            }
            IdleOp::Remove(k) => {
                if model.is_empty() {
                    continue;
                }
                let n = *model.iter().nth(k as usize % model.len()).unwrap();
                let before = idle.idle().to_vec();
                let got = idle.remove_first(&pipe.begin(), n);
                if pending.is_some() {
                    prop_assert_eq!(
                        got,
                        RemoveFirst::LockHeld,
                        "step {}: remove({}) under the lock",
                        step,
                        n
                    );
                    prop_assert_eq!(idle.idle(), &before[..]);
                } else {
                    pending = Some(
                        expect_remove_of_member(got, n, &before)
                            .map_err(|e| fail(format!("step {step}: {e}")))?,
                    );
                    model.remove(&n);
                }
            }
            IdleOp::Complete => complete_pending(&mut idle, &mut pipe, &mut pending),
            IdleOp::Retrieve => {
                let before = idle.idle().to_vec();
                let got = idle.retrieve(&pipe.begin());
                if pending.is_some() {
                    prop_assert_eq!(
                        got,
                        Retrieved::Locked,
                        "step {}: retrieve under the lock",
                        step
                    );
                    prop_assert_eq!(idle.idle(), &before[..]);
                } else if model.is_empty() {
                    prop_assert_eq!(got, Retrieved::Empty, "step {}", step);
                } else {
                    let top = *before.last().unwrap();
                    prop_assert_eq!(
                        got,
                        Retrieved::Node {
                            node: top,
                            remaining: model.len() as u32 - 1
                        },
                        "step {}",
                        step
                    );
                    prop_assert!(model.remove(&top));
                }
            }
            IdleOp::Peek => unreachable!("leaves retrieve"),
        }
        prop_assert_eq!(idle.is_locked(), pending.is_some(), "step {}: lock", step);
        prop_assert_eq!(idle.len() as usize, model.len(), "step {}: p", step);
        if pending.is_none() {
            check_idle_quiescent(&idle, &model, cap)
                .map_err(|e| fail(format!("step {step} {op:?}: {e}")))?;
        }
    }
    complete_pending(&mut idle, &mut pipe, &mut pending);
    check_idle_quiescent(&idle, &model, cap)
}

fn spine_idle_case() -> impl Strategy<Value = (u32, Vec<IdleOp>)> {
    (1u32..10).prop_flat_map(|cap| (Just(cap), idle_ops(cap, false)))
}

fn leaf_idle_case() -> impl Strategy<Value = (u32, Vec<IdleOp>)> {
    (1u32..10).prop_flat_map(|cap| (Just(cap), idle_ops(cap, true)))
}

proptest! {
    #![proptest_config(quick(2048))]

    /// Spine idleNodes: add / remove (both passes, lock contention, absent
    /// nodes, duplicate adds) / peek keep the list equal to the model set.
    /// Adds only at quiescent points.
    #[test]
    fn spine_idle_nodes_match_set_model((cap, ops) in spine_idle_case()) {
        run_spine_idle(cap, &ops, false)?;
    }

    /// Same, with adds also landing between the two passes of a remove, which
    /// HorusSpine allows (an IdleAdd from another leaf can arrive any time).
    /// Found bug 1 (fixed in 77c7e33).
    #[test]
    fn spine_idle_nodes_match_set_model_with_adds_between_passes((cap, ops) in spine_idle_case()) {
        run_spine_idle(cap, &ops, true)?;
    }

    /// Leaf idleNodes: add of non-idle nodes, retrieve (Locked while a remove
    /// is pending, Empty iff the model is), remove of idle nodes.
    #[test]
    fn leaf_idle_nodes_match_set_model((cap, ops) in leaf_idle_case()) {
        run_leaf_idle(cap, &ops, false)?;
    }

    #[test]
    fn leaf_idle_nodes_match_set_model_with_adds_between_passes((cap, ops) in leaf_idle_case()) {
        run_leaf_idle(cap, &ops, true)?;
    }
}

/// Regression for bug 1 (found by the property above, fixed in 77c7e33 with
/// `RemoveFirst::RemovedTop`): when the removed node was the top one, the
/// second pass used to write `idle_list[p] = last_node` (the removed node)
/// over a node added between the passes.
#[test]
fn idle_add_between_passes_of_top_remove_is_kept() {
    let mut pipe = Pipeline::new();
    let mut idle = IdleNodes::new(&mut Layout::new(), 4, true);
    idle.add(&pipe.begin(), 0);
    idle.add(&pipe.begin(), 1);
    let first = idle.remove_first(&pipe.begin(), 1);
    assert_eq!(
        idle.add(&pipe.begin(), 2),
        AddOutcome::Added { previous: 1 }
    );
    match first {
        RemoveFirst::Resubmit {
            last_node,
            removed_index,
        } => idle.remove_second(&pipe.resubmit(), last_node, removed_index),
        RemoveFirst::Absent | RemoveFirst::RemovedTop => idle.release(&pipe.resubmit()),
        RemoveFirst::LockHeld => panic!("lock was free"),
    }
    // Before the fix: [0, 1], node 1 (removed) back and node 2 (added) lost.
    let got: BTreeSet<NodeId> = idle.idle().iter().copied().collect();
    assert_eq!(got, BTreeSet::from([0, 2]), "list {:?}", idle.idle());
    idle.check_invariant().unwrap();
}

/// Bug 1 through the HorusSpine API: rack 2 announces IdleRemove, rack 1's
/// IdleAdd overtakes the resubmitted second pass.
#[test]
fn spine_idle_add_between_passes_of_idle_remove_is_kept() {
    let mut spine = HorusSpine::new(&[4, 4, 4], 1, ConnTableConfig::default());
    let mut out = Outbox::new();
    let mut feed = |spine: &mut HorusSpine, input: Input| -> Vec<Action> {
        spine.handle(0, input, &mut out);
        out.drain().collect()
    };
    // Rack 1 busy: list [0, 2].
    for a in feed(&mut spine, Input::IdleRemove { node: 1 }) {
        let Action::Resubmit(r) = a else {
            panic!("{a:?}")
        };
        assert!(feed(&mut spine, Input::Resubmit(r)).is_empty());
    }
    assert_eq!(spine.idle_nodes().idle(), &[0, 2]);
    // Rack 2 (the top) goes busy; before its second pass rack 1 turns idle.
    let acts = feed(&mut spine, Input::IdleRemove { node: 2 });
    let [Action::Resubmit(second_pass)] = acts[..] else {
        panic!("{acts:?}")
    };
    assert!(feed(&mut spine, Input::IdleAdd { node: 1 }).is_empty());
    assert!(feed(&mut spine, Input::Resubmit(second_pass)).is_empty());
    // Before the fix: [0, 2]; rack 2 had no idle worker but kept receiving
    // "idle" tasks, rack 1 was idle but never picked from the list.
    let got: BTreeSet<NodeId> = spine.idle_nodes().idle().iter().copied().collect();
    assert_eq!(
        got,
        BTreeSet::from([0, 1]),
        "list {:?}",
        spine.idle_nodes().idle()
    );
    spine.idle_nodes().check_invariant().unwrap();
}

// ---------------------------------------------------------------------------
// 2. LazyPow2 (Alg. 2 with the lazy drift rule)
// ---------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------
// 3. HorusSpine + HorusLeaf end to end
// ---------------------------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum NoticeMode {
    /// Leaf-to-spine notices are handled as soon as they are emitted.
    Immediate,
    /// In flight, FIFO per leaf, delivered by `DeliverNotice` ops.
    Fifo,
    /// In flight, delivered in any order.
    Reorder,
}

#[derive(Clone, Copy, Debug)]
struct E2eCfg {
    notices: NoticeMode,
    /// `DeliverNotice(_, true)` loses the notice (§A.3).
    loss: bool,
    /// Park Pow2 resubmissions at the spine / at the leaves, so other packets
    /// run between the two passes.
    delay_spine_pow2: bool,
    delay_leaf_pow2: bool,
    /// Park the second pass of the spine's idleRemove (the lock stays held).
    delay_spine_idle_remove: bool,
}

impl E2eCfg {
    const IMMEDIATE: E2eCfg = E2eCfg {
        notices: NoticeMode::Immediate,
        loss: false,
        delay_spine_pow2: false,
        delay_leaf_pow2: false,
        delay_spine_idle_remove: false,
    };

    /// Can the spine's idle view go stale in a way only §A.3 re-sends repair?
    fn may_go_stale(&self) -> bool {
        self.loss || self.notices == NoticeMode::Reorder || self.delay_spine_idle_remove
    }
}

#[derive(Clone, Copy, Debug)]
enum E2eOp {
    Task,
    /// Complete the head task of the `k`-th busy worker.
    Complete(u32),
    DeliverNotice(u32, bool),
    DeliverSpineResubmit(u32),
    DeliverLeafResubmit(u32),
    /// Deliver everything in flight (without loss) and check quiescent state.
    Drain,
}

enum Ev {
    Spine(Input),
    Leaf(usize, Input),
}

struct Cluster {
    cfg: E2eCfg,
    spine: HorusSpine,
    leaves: Vec<HorusLeaf>,
    /// FCFS queue of task ids per worker.
    queues: Vec<Vec<VecDeque<u64>>>,
    notices: VecDeque<(usize, Notice)>,
    spine_parked: Vec<Resubmit>,
    leaf_parked: Vec<(usize, Resubmit)>,
    next_task: u64,
    /// Tasks that reached a worker.
    delivered: HashSet<u64>,
    /// Idle workers whose idle reply found the leaf's list full (of stale
    /// entries) and was not listed; cleared when the worker gets a task.
    add_dropped: Vec<Vec<bool>>,
    full_drops: u64,
    completed: u64,
    /// What each leaf believes its spine believes (§3.4 aggregated updates):
    /// its last LoadUpdate plus 1/w per task it committed since.
    leaf_mirror: Vec<u64>,
    /// 1/w of each rack in 16.16.
    factor: Vec<u32>,
    /// What the spine's load + drift of each rack should be: the last
    /// LoadUpdate it processed plus 1/w per task it sent there since.
    spine_expect_q: Vec<u64>,
    /// Rack of the spine's latest dispatch.
    last_rack: Option<usize>,
    /// Spine Pow2 second passes were ever parked (the over-count they can
    /// cause lasts until the rack's next LoadUpdate).
    spine_may_overcount: bool,
    /// Largest over-count seen, in 16.16.
    max_overcount: u64,
    now: u64,
    // Coverage counters.
    resubmits: u64,
    idle_decisions: u64,
    sampled_decisions: u64,
    load_updates: u64,
    lost: u64,
    lock_held: u64,
}

fn notice_input(rack: usize, notice: Notice) -> Input {
    let node = rack as NodeId;
    match notice {
        Notice::IdleAdd => Input::IdleAdd { node },
        Notice::IdleRemove => Input::IdleRemove { node },
        Notice::LoadUpdate(load) => Input::LoadUpdate { node, load },
        Notice::SlotAdd => Input::SlotAdd { node },
    }
}

impl Cluster {
    fn new(cfg: E2eCfg, rack_workers: &[u32], seed: u64) -> Self {
        let conn = ConnTableConfig::default();
        Cluster {
            cfg,
            spine: HorusSpine::new(rack_workers, seed, conn),
            leaves: rack_workers
                .iter()
                .enumerate()
                .map(|(r, &w)| {
                    HorusLeaf::new(w, seed ^ (r as u64 + 1).wrapping_mul(0x9E37_79B9), conn)
                })
                .collect(),
            queues: rack_workers
                .iter()
                .map(|&w| vec![VecDeque::new(); w as usize])
                .collect(),
            notices: VecDeque::new(),
            spine_parked: Vec::new(),
            leaf_parked: Vec::new(),
            next_task: 0,
            delivered: HashSet::new(),
            add_dropped: rack_workers
                .iter()
                .map(|&w| vec![false; w as usize])
                .collect(),
            full_drops: 0,
            completed: 0,
            leaf_mirror: vec![0; rack_workers.len()],
            factor: rack_workers
                .iter()
                .map(|&w| fixed::additive_factor(w))
                .collect(),
            spine_expect_q: vec![0; rack_workers.len()],
            last_rack: None,
            spine_may_overcount: cfg.delay_spine_pow2,
            max_overcount: 0,
            now: 0,
            resubmits: 0,
            idle_decisions: 0,
            sampled_decisions: 0,
            load_updates: 0,
            lost: 0,
            lock_held: 0,
        }
    }

    /// Runs one packet and everything it triggers that is not parked.
    fn run(&mut self, first: Ev) -> Result<(), TestCaseError> {
        let mut work = VecDeque::from([first]);
        let mut out = Outbox::new();
        while let Some(ev) = work.pop_front() {
            self.now += 100;
            match ev {
                Ev::Spine(input) => {
                    self.spine.handle(self.now, input, &mut out);
                    for a in out.drain() {
                        match a {
                            Action::Dispatch {
                                node,
                                task,
                                decision,
                            } => {
                                prop_assert!(
                                    (node as usize) < self.leaves.len(),
                                    "spine picked rack {}",
                                    node
                                );
                                prop_assert_eq!(
                                    task.idle_selected,
                                    decision == Decision::Idle,
                                    "§A.3 flag"
                                );
                                self.spine_expect_q[node as usize] +=
                                    self.factor[node as usize] as u64;
                                self.last_rack = Some(node as usize);
                                work.push_back(Ev::Leaf(node as usize, Input::Task(task)));
                            }
                            Action::Resubmit(r) => {
                                let park = match r {
                                    Resubmit::Pow2 { .. } => {
                                        self.resubmits += 1;
                                        self.cfg.delay_spine_pow2
                                    }
                                    _ => self.cfg.delay_spine_idle_remove,
                                };
                                if park {
                                    self.spine_parked.push(r);
                                } else {
                                    work.push_back(Ev::Spine(Input::Resubmit(r)));
                                }
                            }
                            Action::Drop(DropReason::StaleIdleUpdate)
                                if matches!(
                                    input,
                                    Input::IdleAdd { .. } | Input::IdleRemove { .. }
                                ) => {}
                            Action::Drop(DropReason::LockHeld)
                                if matches!(input, Input::IdleRemove { .. }) =>
                            {
                                prop_assert!(
                                    self.cfg.delay_spine_idle_remove,
                                    "lock held although every remove completes at once"
                                );
                                self.lock_held += 1;
                            }
                            other => {
                                prop_assert!(false, "spine: unexpected {:?} for {:?}", other, input)
                            }
                        }
                    }
                    if let Input::LoadUpdate { node, load } = input {
                        prop_assert_eq!(
                            self.spine.busy_nodes().view(node),
                            Some((load, 0)),
                            "Alg. 2 UPDATE"
                        );
                        self.spine_expect_q[node as usize] = load as u64;
                    }
                    for r in 0..self.leaves.len() {
                        let (l, d) = self
                            .spine
                            .busy_nodes()
                            .view(r as NodeId)
                            .expect("rack known");
                        let over = (l as u64 + d as u64).saturating_sub(self.spine_expect_q[r]);
                        self.max_overcount = self.max_overcount.max(over);
                    }
                }
                Ev::Leaf(r, input) => {
                    self.leaves[r].handle(self.now, input, &mut out);
                    let mut load_update = None;
                    for a in out.drain() {
                        match a {
                            Action::Dispatch {
                                node,
                                task,
                                decision,
                            } => {
                                let w = node as usize;
                                prop_assert!(
                                    w < self.queues[r].len(),
                                    "leaf {} picked worker {}",
                                    r,
                                    w
                                );
                                prop_assert!(
                                    self.delivered.insert(task.id),
                                    "task {} dispatched twice",
                                    task.id
                                );
                                match decision {
                                    Decision::Idle => {
                                        // A stale idle entry must never win.
                                        prop_assert!(
                                            self.queues[r][w].is_empty(),
                                            "leaf {} sent an idle-path task to busy worker {}",
                                            r,
                                            w
                                        );
                                        self.idle_decisions += 1
                                    }
                                    _ => self.sampled_decisions += 1,
                                }
                                self.queues[r][w].push_back(task.id);
                                self.add_dropped[r][w] = false;
                                self.leaf_mirror[r] += self.factor[r] as u64;
                            }
                            Action::Resubmit(rs) => {
                                self.resubmits += 1;
                                if self.cfg.delay_leaf_pow2 {
                                    self.leaf_parked.push((r, rs));
                                } else {
                                    work.push_back(Ev::Leaf(r, Input::Resubmit(rs)));
                                }
                            }
                            Action::Notify { to, notice } => {
                                prop_assert_eq!(to, Upstream::Linked);
                                if let Notice::LoadUpdate(v) = notice {
                                    load_update = Some(v);
                                    self.load_updates += 1;
                                }
                                if self.cfg.notices == NoticeMode::Immediate {
                                    work.push_back(Ev::Spine(notice_input(r, notice)));
                                } else {
                                    self.notices.push_back((r, notice));
                                }
                            }
                            other => prop_assert!(
                                false,
                                "leaf {}: unexpected {:?} for {:?}",
                                r,
                                other,
                                input
                            ),
                        }
                    }
                    // A report replaces the mirrored view, including the task
                    // committed in the same pass.
                    if let Some(v) = load_update {
                        self.leaf_mirror[r] = v as u64;
                    }
                    self.check_leaf(r)?;
                }
            }
        }
        Ok(())
    }

    fn check_leaf(&self, r: usize) -> Result<(), TestCaseError> {
        let leaf = &self.leaves[r];
        let outstanding: u32 = self.queues[r].iter().map(|q| q.len() as u32).sum();
        // §A.2: the average is a sum of 1/w increments and decrements, exact.
        prop_assert_eq!(
            leaf.average_load(),
            outstanding * leaf.additive_factor(),
            "leaf {} average",
            r
        );
        // §3.4: the leaf reports whenever the spine's view (last report plus
        // 1/w per task sent) is a whole task per worker off the true average.
        prop_assert!(
            (leaf.average_load() as u64).abs_diff(self.leaf_mirror[r]) < fixed::ONE as u64,
            "leaf {} average {:#x} is a task per worker away from the spine's view {:#x}",
            r,
            leaf.average_load(),
            self.leaf_mirror[r]
        );
        Ok(())
    }

    fn new_task(&mut self) -> Result<(), TestCaseError> {
        let t = single_packet_task(self.next_task);
        self.next_task += 1;
        self.run(Ev::Spine(Input::Task(t)))
    }

    fn busy_workers(&self) -> Vec<(usize, usize)> {
        let mut v = Vec::new();
        for (r, qs) in self.queues.iter().enumerate() {
            for (w, q) in qs.iter().enumerate() {
                if !q.is_empty() {
                    v.push((r, w));
                }
            }
        }
        v
    }

    fn complete(&mut self, r: usize, w: usize) -> Result<(), TestCaseError> {
        let id = self.queues[r][w].pop_front().expect("busy worker");
        self.completed += 1;
        let qlen = self.queues[r][w].len() as u32;
        self.run(Ev::Leaf(
            r,
            Input::Reply {
                node: w as NodeId,
                qlen,
                class: 0,
                task: id,
            },
        ))?;
        let listed = self.leaves[r].idle_nodes().idle();
        if qlen == 0 && !listed.contains(&(w as NodeId)) {
            // Only a list full of (stale) entries may refuse the add.
            prop_assert_eq!(
                listed.len(),
                self.queues[r].len(),
                "leaf {} did not list idle worker {}: {:?}",
                r,
                w,
                listed
            );
            self.add_dropped[r][w] = true;
            self.full_drops += 1;
        }
        Ok(())
    }

    fn deliver_notice(&mut self, k: u32, lose: bool) -> Result<(), TestCaseError> {
        if self.notices.is_empty() {
            return Ok(());
        }
        let idx = match self.cfg.notices {
            NoticeMode::Reorder => k as usize % self.notices.len(),
            _ => {
                // FIFO per leaf: the oldest notice of the k-th leaf with notices in flight.
                let racks: BTreeSet<usize> = self.notices.iter().map(|&(r, _)| r).collect();
                let rack = *racks.iter().nth(k as usize % racks.len()).unwrap();
                self.notices.iter().position(|&(r, _)| r == rack).unwrap()
            }
        };
        let (r, notice) = self.notices.remove(idx).unwrap();
        if lose && self.cfg.loss {
            self.lost += 1;
            return Ok(());
        }
        self.run(Ev::Spine(notice_input(r, notice)))
    }

    fn in_flight(&self) -> bool {
        !self.notices.is_empty() || !self.spine_parked.is_empty() || !self.leaf_parked.is_empty()
    }

    /// Deliver everything in flight, oldest first, without loss.
    fn drain(&mut self) -> Result<(), TestCaseError> {
        while self.in_flight() {
            if !self.spine_parked.is_empty() {
                let r = self.spine_parked.remove(0);
                self.run(Ev::Spine(Input::Resubmit(r)))?;
            } else if !self.leaf_parked.is_empty() {
                let (l, r) = self.leaf_parked.remove(0);
                self.run(Ev::Leaf(l, Input::Resubmit(r)))?;
            } else {
                let (r, notice) = self.notices.pop_front().unwrap();
                self.run(Ev::Spine(notice_input(r, notice)))?;
            }
        }
        Ok(())
    }

    fn apply(&mut self, op: E2eOp) -> Result<(), TestCaseError> {
        match op {
            E2eOp::Task => self.new_task(),
            E2eOp::Complete(k) => {
                let busy = self.busy_workers();
                if busy.is_empty() {
                    return Ok(());
                }
                let (r, w) = busy[k as usize % busy.len()];
                self.complete(r, w)
            }
            E2eOp::DeliverNotice(k, lose) => self.deliver_notice(k, lose),
            E2eOp::DeliverSpineResubmit(k) => {
                if self.spine_parked.is_empty() {
                    return Ok(());
                }
                let r = self
                    .spine_parked
                    .remove(k as usize % self.spine_parked.len());
                self.run(Ev::Spine(Input::Resubmit(r)))
            }
            E2eOp::DeliverLeafResubmit(k) => {
                if self.leaf_parked.is_empty() {
                    return Ok(());
                }
                let (l, r) = self.leaf_parked.remove(k as usize % self.leaf_parked.len());
                self.run(Ev::Leaf(l, Input::Resubmit(r)))
            }
            E2eOp::Drain => {
                self.drain()?;
                self.check_quiescent()
            }
        }
    }

    /// Racks whose leaf knows an idle worker.
    fn racks_with_idle(&self) -> BTreeSet<NodeId> {
        (0..self.leaves.len())
            .filter(|&r| !self.leaves[r].idle_nodes().is_empty())
            .map(|r| r as NodeId)
            .collect()
    }

    fn spine_idle_set(&self) -> Result<BTreeSet<NodeId>, TestCaseError> {
        let list = self.spine.idle_nodes().idle();
        let set: BTreeSet<NodeId> = list.iter().copied().collect();
        prop_assert_eq!(
            set.len(),
            list.len(),
            "duplicate rack in spine idle list {:?}",
            list
        );
        Ok(set)
    }

    /// Holds after every operation.
    fn check_always(&self) -> Result<(), TestCaseError> {
        self.spine
            .busy_nodes()
            .check_copies()
            .map_err(|e| fail(format!("spine pow2: {e}")))?;
        if !self.spine.idle_nodes().is_locked() {
            self.spine.idle_nodes().check_invariant().map_err(|e| {
                fail(format!(
                    "spine idle list {:?}: {e}",
                    self.spine.idle_nodes().idle()
                ))
            })?;
        }
        for (r, leaf) in self.leaves.iter().enumerate() {
            leaf.busy_nodes()
                .check_copies()
                .map_err(|e| fail(format!("leaf {r} pow2: {e}")))?;
            prop_assert!(!leaf.idle_nodes().is_locked(), "leaf {} lock held", r);
            self.check_leaf(r)?;
            let (l, d) = self
                .spine
                .busy_nodes()
                .view(r as NodeId)
                .expect("rack known");
            if self.spine_may_overcount {
                // A LoadUpdate between the passes of a resubmitted task makes the
                // second pass add the carried drift on top of a load that already
                // counts it (pow2.rs: atomic add/sub), so the view may over-count.
                prop_assert!(
                    l as u64 + d as u64 >= self.spine_expect_q[r],
                    "spine view of rack {} under-counts",
                    r
                );
            } else {
                prop_assert_eq!(
                    l as u64 + d as u64,
                    self.spine_expect_q[r],
                    "spine load+drift of rack {}",
                    r
                );
            }
            let listed = leaf.idle_nodes().idle();
            // The leaf's list holds up to 2w entries: stale duplicates wait
            // there until popped (horus/leaf.rs `HorusLeaf::schedule`).
            prop_assert!(
                listed.len() <= 2 * self.queues[r].len(),
                "leaf {} list overflows",
                r
            );
            if !self.cfg.delay_leaf_pow2 {
                // Workers and leaf talk without delay and no leaf pass is
                // parked: the idle list holds each empty worker exactly once.
                leaf.idle_nodes()
                    .check_invariant()
                    .map_err(|e| fail(format!("leaf {r} idle list {listed:?}: {e}")))?;
                for (w, q) in self.queues[r].iter().enumerate() {
                    // Every reply resets the view to the true queue length and
                    // every dispatch adds exactly one.
                    let (l, d) = leaf.busy_nodes().view(w as NodeId).expect("worker known");
                    prop_assert_eq!(
                        l as usize + d as usize,
                        q.len(),
                        "leaf {} load+drift of worker {}",
                        r,
                        w
                    );
                    prop_assert_eq!(
                        leaf.idle_nodes().contains(w as NodeId),
                        q.is_empty(),
                        "leaf {} worker {} (queue {}) vs idle list {:?}",
                        r,
                        w,
                        q.len(),
                        listed
                    );
                }
            } else {
                // A reply between the passes of a parked task can list a worker
                // that the second pass then loads, and list it again when it
                // turns idle: stale and duplicate entries are allowed and
                // discarded at retrieve time (horus/leaf.rs: the outstanding-count claim).
                for (w, q) in self.queues[r].iter().enumerate() {
                    let (l, d) = leaf.busy_nodes().view(w as NodeId).expect("worker known");
                    prop_assert!(
                        l as usize + d as usize >= q.len(),
                        "leaf {} under-counts worker {}",
                        r,
                        w
                    );
                    prop_assert!(
                        !q.is_empty() || listed.contains(&(w as NodeId)) || self.add_dropped[r][w],
                        "leaf {} idle worker {} is not on the idle list {:?}",
                        r,
                        w,
                        listed
                    );
                }
            }
            if self.cfg.notices == NoticeMode::Immediate
                && !self.spine_may_overcount
                && !self.cfg.delay_leaf_pow2
            {
                prop_assert_eq!(
                    self.spine_expect_q[r],
                    self.leaf_mirror[r],
                    "leaf {} mirror of the spine's view",
                    r
                );
            }
        }
        if self.cfg.notices == NoticeMode::Immediate && !self.cfg.may_go_stale() {
            prop_assert_eq!(
                self.spine_idle_set()?,
                self.racks_with_idle(),
                "spine idle view"
            );
        }
        Ok(())
    }

    /// Nothing in flight.
    fn check_quiescent(&self) -> Result<(), TestCaseError> {
        self.check_always()?;
        prop_assert!(!self.spine.idle_nodes().is_locked());
        if !self.cfg.may_go_stale() {
            // Every empty<->non-empty transition of a leaf's idle list emits a
            // notice stating the new state, and re-sends state the current one,
            // so after in-order delivery the spine holds each leaf's last word.
            prop_assert_eq!(
                self.spine_idle_set()?,
                self.racks_with_idle(),
                "spine idle view at quiescence"
            );
        }
        let outstanding: usize = self.queues.iter().flatten().map(VecDeque::len).sum();
        prop_assert_eq!(
            self.delivered.len() as u64,
            self.next_task,
            "every task reached exactly one worker"
        );
        prop_assert_eq!(self.completed + outstanding as u64, self.next_task);
        Ok(())
    }

    /// §A.3 healing: with loss over and delivery immediate, tasks alone must
    /// repair every stale entry (flagged task at a busy leaf -> IdleRemove,
    /// unflagged task at a leaf with idle workers -> IdleAdd) until the rack
    /// is full and the spine's view is empty and true.
    fn heal(&mut self) -> Result<(), TestCaseError> {
        self.cfg = E2eCfg {
            delay_leaf_pow2: self.cfg.delay_leaf_pow2,
            ..E2eCfg::IMMEDIATE
        };
        let total: usize = self.queues.iter().map(Vec::len).sum();
        let mut tasks = 0;
        while !(self.racks_with_idle().is_empty() && self.spine.idle_nodes().is_empty()) {
            prop_assert!(
                tasks < 200 * total + 1_000,
                "no convergence after {} tasks: spine {:?}, truth {:?}",
                tasks,
                self.spine.idle_nodes().idle(),
                self.racks_with_idle()
            );
            self.new_task()?;
            tasks += 1;
            // Whatever the spine believed, the task it sent repairs that
            // rack's entry: flagged at a leaf without idle workers -> IdleRemove,
            // unflagged at a leaf with some left -> IdleAdd.
            let r = self.last_rack.expect("task dispatched");
            prop_assert_eq!(
                self.spine.idle_nodes().contains(r as NodeId),
                !self.leaves[r].idle_nodes().is_empty(),
                "rack {} not repaired by a task: spine list {:?}",
                r,
                self.spine.idle_nodes().idle()
            );
        }
        self.check_always()?;
        prop_assert!(self.busy_workers().len() == total);
        Ok(())
    }

    /// Completes everything with immediate delivery, checking the spine view
    /// after every reply, then checks the all-idle end state.
    fn finish(&mut self) -> Result<(), TestCaseError> {
        self.cfg = E2eCfg {
            delay_leaf_pow2: self.cfg.delay_leaf_pow2,
            ..E2eCfg::IMMEDIATE
        };
        let mut k = 0usize;
        loop {
            let busy = self.busy_workers();
            if busy.is_empty() {
                break;
            }
            let (r, w) = busy[k % busy.len()];
            k = k.wrapping_mul(31).wrapping_add(7);
            self.complete(r, w)?;
            self.check_always()?;
            prop_assert_eq!(
                self.spine_idle_set()?,
                self.racks_with_idle(),
                "spine idle view while draining"
            );
        }
        self.check_quiescent()?;
        for (r, leaf) in self.leaves.iter().enumerate() {
            prop_assert_eq!(leaf.average_load(), 0);
            let set: BTreeSet<NodeId> = leaf.idle_nodes().idle().iter().copied().collect();
            let want: BTreeSet<NodeId> = (0..leaf.workers())
                .filter(|&w| !self.add_dropped[r][w as usize])
                .collect();
            prop_assert!(set.is_superset(&want), "leaf {} all idle: {:?}", r, set);
            for w in 0..leaf.workers() {
                // Every reply reset the view exactly; no task is left.
                prop_assert_eq!(leaf.busy_nodes().view(w), Some((0, 0)));
            }
        }
        let all: BTreeSet<NodeId> = (0..self.leaves.len() as NodeId).collect();
        prop_assert_eq!(self.spine_idle_set()?, all);
        prop_assert_eq!(self.completed, self.next_task);
        Ok(())
    }
}

fn run_e2e(
    cfg: E2eCfg,
    rack_workers: &[u32],
    seed: u64,
    ops: &[E2eOp],
) -> Result<Cluster, TestCaseError> {
    let mut c = Cluster::new(cfg, rack_workers, seed);
    c.check_quiescent()?;
    for (step, &op) in ops.iter().enumerate() {
        c.apply(op)
            .and_then(|_| c.check_always())
            .map_err(|e| fail(format!("step {step} {op:?}: {e}")))?;
    }
    c.drain()?;
    c.check_quiescent()?;
    if cfg.may_go_stale() {
        c.heal()?;
    }
    c.finish()?;
    Ok(c)
}

fn e2e_ops() -> impl Strategy<Value = Vec<E2eOp>> {
    let op = prop_oneof![
        8 => Just(E2eOp::Task),
        6 => any::<u32>().prop_map(E2eOp::Complete),
        4 => (any::<u32>(), any::<bool>()).prop_map(|(k, lose)| E2eOp::DeliverNotice(k, lose)),
        2 => any::<u32>().prop_map(E2eOp::DeliverSpineResubmit),
        2 => any::<u32>().prop_map(E2eOp::DeliverLeafResubmit),
        1 => Just(E2eOp::Drain),
    ];
    prop::collection::vec(op, 0..200)
}

fn e2e_case() -> impl Strategy<Value = (Vec<u32>, u64, Vec<E2eOp>)> {
    (
        prop::collection::vec(1u32..=4, 1..=4),
        any::<u64>(),
        e2e_ops(),
    )
}

proptest! {
    #![proptest_config(quick(512))]

    /// No delay, no loss: after every packet each task went to exactly one
    /// worker, leaf idle lists are exactly the empty workers, leaf averages are
    /// exact, and the spine's idle list is exactly the racks with idle workers.
    #[test]
    fn e2e_immediate_delivery_keeps_every_view_exact((racks, seed, ops) in e2e_case()) {
        run_e2e(E2eCfg::IMMEDIATE, &racks, seed, &ops)?;
    }

    /// Notices delayed (FIFO per leaf) and spine power-of-2 second passes
    /// interleaved with other packets: the spine view is exact at quiescence.
    #[test]
    fn e2e_delayed_notices_converge_at_quiescence((racks, seed, ops) in e2e_case()) {
        let cfg = E2eCfg { notices: NoticeMode::Fifo, delay_spine_pow2: true, ..E2eCfg::IMMEDIATE };
        run_e2e(cfg, &racks, seed, &ops)?;
    }

    /// Notices reordered and lost (§A.3): once loss stops, tasks alone heal
    /// the spine's idle view, then it stays exact.
    #[test]
    fn e2e_lost_and_reordered_notices_heal((racks, seed, ops) in e2e_case()) {
        let cfg = E2eCfg { notices: NoticeMode::Reorder, loss: true, delay_spine_pow2: true, ..E2eCfg::IMMEDIATE };
        run_e2e(cfg, &racks, seed, &ops)?;
    }

    /// The spine's idleRemove second pass parked: removes under the lock are
    /// dropped and healed like losses; idle adds overtake second passes.
    #[test]
    fn e2e_spine_idle_remove_interleaved((racks, seed, ops) in e2e_case()) {
        let cfg = E2eCfg {
            notices: NoticeMode::Reorder,
            delay_spine_pow2: true,
            delay_spine_idle_remove: true,
            ..E2eCfg::IMMEDIATE
        };
        run_e2e(cfg, &racks, seed, &ops)?;
    }

    /// The leaves' power-of-2 second passes parked: replies run between them.
    #[test]
    fn e2e_leaf_pow2_interleaved((racks, seed, ops) in e2e_case()) {
        let cfg = E2eCfg { notices: NoticeMode::Fifo, delay_leaf_pow2: true, ..E2eCfg::IMMEDIATE };
        run_e2e(cfg, &racks, seed, &ops)?;
    }
}

/// The properties above must not hold vacuously: a long fixed run exercises
/// both decision kinds, resubmissions, LoadUpdates, losses and healing.
#[test]
fn e2e_driver_covers_every_path() {
    let mut rng = Rng::new(42);
    let ops: Vec<E2eOp> = (0..20_000)
        .map(|_| match rng.below(23) {
            0..=6 => E2eOp::Task,
            7..=13 => E2eOp::Complete(rng.below(1 << 20)),
            14..=17 => E2eOp::DeliverNotice(rng.below(1 << 20), rng.chance(0.3)),
            18..=19 => E2eOp::DeliverSpineResubmit(rng.below(1 << 20)),
            20..=21 => E2eOp::DeliverLeafResubmit(rng.below(1 << 20)),
            _ => E2eOp::Drain,
        })
        .collect();
    let cfg = E2eCfg {
        notices: NoticeMode::Reorder,
        loss: true,
        delay_spine_pow2: true,
        ..E2eCfg::IMMEDIATE
    };
    let c = run_e2e(cfg, &[3, 1, 4, 2], 7, &ops).unwrap();
    assert!(c.next_task > 5_000);
    assert!(
        c.idle_decisions > 100,
        "idle decisions {}",
        c.idle_decisions
    );
    assert!(
        c.sampled_decisions > 100,
        "sampled decisions {}",
        c.sampled_decisions
    );
    assert!(c.resubmits > 10, "resubmissions {}", c.resubmits);
    assert!(c.load_updates > 10, "load updates {}", c.load_updates);
    assert!(c.lost > 10, "lost notices {}", c.lost);
    println!(
        "tasks {} idle {} sampled {} resubmits {} load updates {} lost {} max spine over-count {:#x}",
        c.next_task, c.idle_decisions, c.sampled_decisions, c.resubmits, c.load_updates, c.lost, c.max_overcount
    );
    // Parked leaf passes: stale entries get discarded, some idle adds are refused.
    let cfg = E2eCfg {
        notices: NoticeMode::Fifo,
        delay_leaf_pow2: true,
        ..E2eCfg::IMMEDIATE
    };
    let c = run_e2e(cfg, &[3, 1, 4, 2], 8, &ops).unwrap();
    assert!(c.resubmits > 10 && c.idle_decisions > 100);
    println!(
        "parked leaf passes: resubmits {} refused idle adds {}",
        c.resubmits, c.full_drops
    );
}

/// Feeds one input to a two-worker leaf, records dispatches in `queues`
/// (checking that an idle-path task only ever reaches an idle worker) and
/// returns a resubmission, if any.
fn feed_leaf(
    leaf: &mut HorusLeaf,
    queues: &mut [VecDeque<u64>; 2],
    input: Input,
) -> Option<Resubmit> {
    let mut out = Outbox::new();
    leaf.handle(0, input, &mut out);
    let mut resubmit = None;
    for a in out.drain() {
        match a {
            Action::Dispatch {
                node,
                task,
                decision,
            } => {
                if decision == Decision::Idle {
                    assert!(
                        queues[node as usize].is_empty(),
                        "idle-path task {} to busy worker {node}",
                        task.id
                    );
                }
                queues[node as usize].push_back(task.id)
            }
            Action::Resubmit(r) => resubmit = Some(r),
            _ => {}
        }
    }
    resubmit
}

fn complete_worker(leaf: &mut HorusLeaf, queues: &mut [VecDeque<u64>; 2], w: NodeId) {
    let task = queues[w as usize].pop_front().expect("busy worker");
    let qlen = queues[w as usize].len() as u32;
    assert!(feed_leaf(
        leaf,
        queues,
        Input::Reply {
            node: w,
            qlen,
            class: 0,
            task
        }
    )
    .is_none());
}

/// Bug 2 (found by `e2e_leaf_pow2_interleaved`): an idle reply that crosses
/// a power-of-2 task on the wire lists a worker that is about to be busy;
/// its next idle reply listed it twice, and the next add ran past the end of
/// `idle.list` (index out of bounds). Since 77c7e33 a leaf tolerates stale
/// and duplicate entries: a popped entry whose worker still owes replies is
/// discarded, and the list has room for 2w entries. (The same used to happen
/// when a power-of-2 second pass chose a worker listed between the passes;
/// that pass now takes an idle worker from the list instead.) Returns the
/// leaf after both workers finished everything, with `first` listed twice.
fn leaf_idle_reply_crossing_a_pow2_pass() -> (HorusLeaf, [VecDeque<u64>; 2], NodeId) {
    let mut leaf = HorusLeaf::new(2, 1, ConnTableConfig::default());
    let mut queues: [VecDeque<u64>; 2] = Default::default();
    // Two tasks take both idle workers (load 0, drift 1 each).
    feed_leaf(&mut leaf, &mut queues, Input::Task(single_packet_task(0)));
    feed_leaf(&mut leaf, &mut queues, Input::Task(single_packet_task(1)));
    assert!(leaf.idle_nodes().is_empty());
    // The third samples both: equal loads, drift 1 > 0, so it resubmits and
    // the second pass picks `first`.
    let second_pass = feed_leaf(&mut leaf, &mut queues, Input::Task(single_packet_task(2)))
        .expect("resubmission");
    assert!(feed_leaf(&mut leaf, &mut queues, Input::Resubmit(second_pass)).is_none());
    let first = if queues[0].len() == 2 { 0 } else { 1 };
    assert_eq!(queues[first as usize].len(), 2);
    assert_eq!(leaf.outstanding(first), 2);
    // `first` finishes its first task before task 2 reaches it: its reply
    // says the queue is empty, and it is listed although task 2 is on the wire.
    let done = queues[first as usize].pop_front().unwrap();
    let reply = Input::Reply {
        node: first,
        qlen: 0,
        class: 0,
        task: done,
    };
    assert!(feed_leaf(&mut leaf, &mut queues, reply).is_none());
    assert_eq!(leaf.idle_nodes().idle(), &[first]);
    // `first` finishes task 2 and is listed again; then the other worker idles.
    complete_worker(&mut leaf, &mut queues, first);
    assert_eq!(leaf.idle_nodes().idle(), &[first, first]);
    complete_worker(&mut leaf, &mut queues, 1 - first);
    (leaf, queues, first)
}

/// Regression for bug 2: the crossing no longer panics, and a stale entry
/// never wins an idle-path task (it is discarded and the task retried).
#[test]
fn leaf_absorbs_idle_reply_crossing_a_pow2_pass() {
    let (mut leaf, mut queues, first) = leaf_idle_reply_crossing_a_pow2_pass();
    // The list is [first, first, other]. Three tasks: the first two pop
    // `other` and `first` (both idle, claimed); the third pops the duplicate
    // of `first`, finds it busy and retries on the busy path.
    assert_eq!(leaf.idle_nodes().idle(), &[first, first, 1 - first]);
    for id in 3..6 {
        let mut next = feed_leaf(&mut leaf, &mut queues, Input::Task(single_packet_task(id)));
        let mut passes = 0;
        while let Some(r) = next {
            passes += 1;
            assert!(passes < 4, "task {id} keeps resubmitting");
            next = feed_leaf(&mut leaf, &mut queues, Input::Resubmit(r));
        }
    }
    assert_eq!(
        queues[0].len() + queues[1].len(),
        3,
        "every task dispatched once"
    );
    assert!(
        leaf.idle_nodes().is_empty(),
        "the stale entry was discarded"
    );
    leaf.busy_nodes().check_copies().unwrap();
}

/// Residual of the bug-2 fix, fixed by giving the leaf's list room for 2w
/// entries: stale duplicates must not crowd an idle worker's add out
/// (`AddOutcome::Full`), which would leave it idle but unlisted.
#[test]
fn leaf_lists_every_idle_worker_after_a_crossing() {
    let (leaf, queues, first) = leaf_idle_reply_crossing_a_pow2_pass();
    assert!(queues.iter().all(VecDeque::is_empty));
    let listed: BTreeSet<NodeId> = leaf.idle_nodes().idle().iter().copied().collect();
    assert!(
        listed.contains(&(1 - first)),
        "idle worker {} unlisted: {:?}",
        1 - first,
        leaf.idle_nodes().idle()
    );
}

/// Regression: `HorusSpine::control_remove_rack` while an idleRemove is
/// between its passes must neither release that remove's lock nor leave the
/// failed rack on the idle list; the removal waits for the lock's release.
#[test]
fn spine_control_remove_rack_during_pending_idle_remove() {
    let mut spine = HorusSpine::new(&[2, 2, 2], 1, ConnTableConfig::default());
    let mut out = Outbox::new();
    spine.handle(0, Input::IdleRemove { node: 0 }, &mut out);
    let acts: Vec<Action> = out.drain().collect();
    let [Action::Resubmit(second_pass)] = acts[..] else {
        panic!("{acts:?}")
    };
    spine.control_remove_rack(1);
    // Fixed in 77c7e33: this used to release the lock of rack 0's remove.
    assert!(
        spine.idle_nodes().is_locked(),
        "control plane released the lock of a pending remove"
    );
    spine.handle(0, Input::Resubmit(second_pass), &mut out);
    assert!(out.drain().next().is_none());
    assert_eq!(
        spine.idle_nodes().idle(),
        &[2],
        "the failed rack must leave the idle list"
    );
    for id in 0..16 {
        spine.handle(0, Input::Task(single_packet_task(id)), &mut out);
        for a in out.drain() {
            if let Action::Dispatch { node, .. } = a {
                assert_ne!(node, 1, "task sent to the removed rack");
            }
        }
    }
}

/// `control_remove_rack` of a rack the spine never had is a no-op, like
/// `LazyPow2::control_remove` and `HorusLeaf::control_remove_worker`.
#[test]
fn spine_control_remove_unknown_rack_is_a_no_op() {
    let mut spine = HorusSpine::new(&[2, 2], 1, ConnTableConfig::default());
    spine.control_remove_rack(5);
    assert_eq!(spine.idle_nodes().idle(), &[0, 1]);
}

// ---------------------------------------------------------------------------
// 4. Switch model: one access per register array per pass
// ---------------------------------------------------------------------------

#[derive(Clone, Copy, Debug)]
enum FuzzOp {
    SpineTask {
        id: u8,
        first: bool,
        last: bool,
        idle_selected: bool,
    },
    SpineIdleAdd(u32),
    SpineIdleRemove(u32),
    SpineLoadUpdate(u32, u32),
    SpineStray(u32),
    SpineResubmit(u32),
    LeafTask {
        id: u8,
        first: bool,
        last: bool,
        idle_selected: bool,
    },
    LeafReply {
        node: u32,
        qlen: u32,
    },
    LeafStray(u32),
    LeafResubmit(u32),
    Time(u32),
    RemoveRack(u32),
    SetRack(u32, u32),
    RemoveWorker(u32),
    AddWorker(u32),
}

fn fuzz_op() -> impl Strategy<Value = FuzzOp> {
    let task = (any::<u8>(), any::<bool>(), any::<bool>(), any::<bool>());
    prop_oneof![
        6 => task.prop_map(|(id, first, last, idle_selected)| FuzzOp::SpineTask { id: id % 16, first, last, idle_selected }),
        2 => (0u32..8).prop_map(FuzzOp::SpineIdleAdd),
        2 => (0u32..8).prop_map(FuzzOp::SpineIdleRemove),
        2 => (0u32..8, any::<u32>()).prop_map(|(n, l)| FuzzOp::SpineLoadUpdate(n, l)),
        1 => (0u32..8).prop_map(FuzzOp::SpineStray),
        3 => any::<u32>().prop_map(FuzzOp::SpineResubmit),
        6 => task.prop_map(|(id, first, last, idle_selected)| FuzzOp::LeafTask { id: id % 16, first, last, idle_selected }),
        4 => (0u32..10, 0u32..4).prop_map(|(node, qlen)| FuzzOp::LeafReply { node, qlen }),
        1 => (0u32..8).prop_map(FuzzOp::LeafStray),
        3 => any::<u32>().prop_map(FuzzOp::LeafResubmit),
        1 => (0u32..50_000_000).prop_map(FuzzOp::Time),
        1 => (0u32..8).prop_map(FuzzOp::RemoveRack),
        1 => (0u32..8, 1u32..8).prop_map(|(r, w)| FuzzOp::SetRack(r, w)),
        1 => (0u32..10).prop_map(FuzzOp::RemoveWorker),
        1 => (0u32..10).prop_map(FuzzOp::AddWorker),
    ]
}

fn stray_input(k: u32) -> Input {
    match k % 6 {
        0 => Input::IdleAdd { node: k },
        1 => Input::IdleRemove { node: k },
        2 => Input::LoadUpdate { node: k, load: k },
        3 => Input::QueueChanged { node: k, qlen: k },
        4 => Input::Reply {
            node: k,
            qlen: k,
            class: 0,
            task: 0,
        },
        _ => Input::Resubmit(Resubmit::IdleRemoveRelease),
    }
}

proptest! {
    #![proptest_config(quick(1024))]

    /// Any mix of inputs (including ones a role never expects, multi-packet
    /// tasks, second passes in any order or never, time jumps past the
    /// connection-table timeout, control-plane changes) keeps every pass within
    /// one access per register array: a violation would panic in `RegisterArray`.
    /// Idle replies may repeat (bug 2 made that an out-of-bounds panic).
    #[test]
    fn random_inputs_never_access_a_register_array_twice_per_pass(
        racks in 1u32..=4,
        workers in 1u32..=6,
        seed in any::<u64>(),
        ops in prop::collection::vec(fuzz_op(), 0..300),
    ) {
        let conn = ConnTableConfig { stages: 2, slots_per_stage: 8, timeout_ns: 20_000_000 };
        let mut spine = HorusSpine::new(&vec![3; racks as usize], seed, conn);
        let mut leaf = HorusLeaf::new(workers, seed ^ 1, conn);
        let mut out = Outbox::new();
        let mut spine_parked: Vec<Resubmit> = Vec::new();
        let mut leaf_parked: Vec<Resubmit> = Vec::new();
        let mut now = 0u64;
        let task = |id: u8, first: bool, last: bool, idle_selected: bool| TaskMeta {
            id: id as u64,
            first,
            last,
            idle_selected,
            upstream: 0,
            class: 0,
        };
        for op in ops {
            now += 1_000;
            let (to_spine, input) = match op {
                FuzzOp::SpineTask { id, first, last, idle_selected } => (true, Input::Task(task(id, first, last, idle_selected))),
                FuzzOp::SpineIdleAdd(node) => (true, Input::IdleAdd { node }),
                FuzzOp::SpineIdleRemove(node) => (true, Input::IdleRemove { node }),
                FuzzOp::SpineLoadUpdate(node, load) => (true, Input::LoadUpdate { node, load }),
                FuzzOp::SpineStray(k) => (true, stray_input(k)),
                FuzzOp::SpineResubmit(k) => {
                    if spine_parked.is_empty() { continue; }
                    (true, Input::Resubmit(spine_parked.remove(k as usize % spine_parked.len())))
                }
                FuzzOp::LeafTask { id, first, last, idle_selected } => (false, Input::Task(task(id, first, last, idle_selected))),
                FuzzOp::LeafReply { node, qlen } => (false, Input::Reply { node, qlen, class: 0, task: 0 }),
                FuzzOp::LeafStray(k) => (false, stray_input(k + 1)),
                FuzzOp::LeafResubmit(k) => {
                    if leaf_parked.is_empty() { continue; }
                    (false, Input::Resubmit(leaf_parked.remove(k as usize % leaf_parked.len())))
                }
                FuzzOp::Time(dt) => {
                    now += dt as u64;
                    continue;
                }
                FuzzOp::RemoveRack(r) => {
                    // Unknown racks panic (see spine_control_remove_unknown_rack_is_a_no_op).
                    if (r as usize) < spine.idle_nodes().capacity() {
                        spine.control_remove_rack(r);
                    }
                    continue;
                }
                FuzzOp::SetRack(r, w) => {
                    spine.control_set_rack(r, w);
                    continue;
                }
                FuzzOp::RemoveWorker(w) => {
                    leaf.control_remove_worker(w, &mut out);
                    out.clear();
                    continue;
                }
                FuzzOp::AddWorker(w) => {
                    leaf.control_add_worker(w, &mut out);
                    out.clear();
                    continue;
                }
            };
            if to_spine {
                spine.handle(now, input, &mut out);
            } else {
                leaf.handle(now, input, &mut out);
            }
            for a in out.drain() {
                if let Action::Resubmit(r) = a {
                    if to_spine { spine_parked.push(r) } else { leaf_parked.push(r) }
                }
            }
            spine.busy_nodes().check_copies().map_err(fail)?;
            leaf.busy_nodes().check_copies().map_err(fail)?;
        }
        // Every pass is counted exactly once.
        prop_assert!(spine.pipeline().total_passes() >= spine.pipeline().first_passes);
    }
}

// ---------------------------------------------------------------------------
// 5. What `writes_state_only` promises the simulator
// ---------------------------------------------------------------------------

fn spine_run(spine: &mut HorusSpine, now: u64, input: Input) -> Vec<Action> {
    let mut out = Outbox::new();
    spine.handle(now, input, &mut out);
    out.drain().collect()
}

proptest! {
    #![proptest_config(quick(256))]

    /// The simulator holds a Horus spine's idleAdds, slotAdds and LOAD
    /// reports back and hands them over just before the spine's next input:
    /// each emits at most a drop, and handling it later leaves the spine in
    /// exactly the same state (idle list and its lock, load registers, pass
    /// counters, random stream). Tasks and idleRemoves (with their
    /// resubmitted second passes) interleave, so held inputs meet a locked
    /// list and a list changed by dispatches.
    #[test]
    fn spine_idle_adds_and_load_updates_write_state_only(
        ops in proptest::collection::vec((0u8..6, 0u32..8, 0u32..4 * fixed::ONE), 1..80),
        seed in any::<u64>(),
    ) {
        let mut spine = HorusSpine::new(&[4, 2, 8, 1, 3, 5], seed, ConnTableConfig::default());
        let mut parked: Vec<Resubmit> = Vec::new();
        for (i, &(op, node, load)) in ops.iter().enumerate() {
            let input = match op {
                0 => Input::IdleAdd { node },
                1 => Input::LoadUpdate { node, load },
                2 => Input::SlotAdd { node },
                3 => Input::IdleRemove { node },
                4 => Input::Task(single_packet_task(i as u64)),
                _ => match parked.pop() {
                    Some(r) => Input::Resubmit(r),
                    None => continue,
                },
            };
            let state_only = spine.writes_state_only(&input);
            prop_assert_eq!(state_only, op < 3);
            if !state_only {
                for a in spine_run(&mut spine, 10, input) {
                    if let Action::Resubmit(r) = a {
                        parked.push(r);
                    }
                }
                continue;
            }
            let mut late = spine.clone();
            let now = spine_run(&mut spine, 10, input);
            prop_assert!(now.iter().all(|a| matches!(a, Action::Drop(_))), "{:?}", now);
            prop_assert_eq!(&spine_run(&mut late, 5_000_000, input), &now);
            prop_assert_eq!(format!("{late:?}"), format!("{spine:?}"));
        }
    }
}
