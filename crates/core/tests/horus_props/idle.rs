//! 1. `IdleNodes` (Horus Alg. 1) against a `BTreeSet` model, spine and leaf flavours.

use super::*;
use netsched_core::Nanos;

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

/// After `op` (step `step`): the lock is held exactly while a remove is
/// `pending`, `p` counts the idle nodes even between the passes of a
/// remove, and with no remove pending the arrays are quiescent.
fn check_idle_step(
    idle: &IdleNodes,
    model: &BTreeSet<NodeId>,
    pending: bool,
    cap: u32,
    step: usize,
    op: IdleOp,
) -> Result<(), TestCaseError> {
    prop_assert_eq!(idle.is_locked(), pending, "step {}: lock", step);
    prop_assert_eq!(idle.len() as usize, model.len(), "step {}: p", step);
    if !pending {
        check_idle_quiescent(idle, model, cap)
            .map_err(|e| fail(format!("step {step} {op:?}: {e}")))?;
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
        check_idle_step(&idle, &model, pending.is_some(), cap, step, op)?;
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
        check_idle_step(&idle, &model, pending.is_some(), cap, step, op)?;
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
    #![proptest_config(quick(4096))]

    /// Spine idleNodes: add / remove (both passes, lock contention, absent
    /// nodes, duplicate adds) / peek keep the list equal to the model set.
    /// Adds land only at quiescent points, or also between the two passes of
    /// a remove, which HorusSpine allows (an IdleAdd from another leaf can
    /// arrive any time); the latter found bug 1 (fixed in 77c7e33).
    #[test]
    fn spine_idle_nodes_match_set_model(
        (cap, ops) in spine_idle_case(),
        adds_between_passes in any::<bool>(),
    ) {
        run_spine_idle(cap, &ops, adds_between_passes)?;
    }

    /// Leaf idleNodes: add of non-idle nodes, retrieve (Locked while a remove
    /// is pending, Empty iff the model is), remove of idle nodes; adds at
    /// quiescent points or between the passes too.
    #[test]
    fn leaf_idle_nodes_match_set_model(
        (cap, ops) in leaf_idle_case(),
        adds_between_passes in any::<bool>(),
    ) {
        run_leaf_idle(cap, &ops, adds_between_passes)?;
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
        spine.handle(Nanos::ZERO, input, &mut out);
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
