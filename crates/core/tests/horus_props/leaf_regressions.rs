//! Deterministic tests for the bugs the end-to-end properties found (bug 2, control-plane removals).

use super::*;
use netsched_core::Nanos;

/// Feeds one input to a two-worker leaf, records dispatches in `queues`
/// (checking that an idle-path task only ever reaches an idle worker) and
/// returns a resubmission, if any.
fn feed_leaf(
    leaf: &mut HorusLeaf,
    queues: &mut [VecDeque<u64>; 2],
    input: Input,
) -> Option<Resubmit> {
    let mut out = Outbox::new();
    leaf.handle(Nanos::ZERO, input, &mut out);
    let mut resubmit = None;
    for a in out.drain() {
        match a {
            Action::Dispatch(d) => {
                let queue = &mut queues[d.node as usize];
                if d.decision == Decision::Idle {
                    assert!(
                        queue.is_empty(),
                        "idle-path task {} to busy worker {}",
                        d.task.id,
                        d.node
                    );
                }
                queue.push_back(d.task.id)
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
    spine.handle(Nanos::ZERO, Input::IdleRemove { node: 0 }, &mut out);
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
    spine.handle(Nanos::ZERO, Input::Resubmit(second_pass), &mut out);
    assert!(out.drain().next().is_none());
    assert_eq!(
        spine.idle_nodes().idle(),
        &[2],
        "the failed rack must leave the idle list"
    );
    for id in 0..16 {
        spine.handle(Nanos::ZERO, Input::Task(single_packet_task(id)), &mut out);
        for a in out.drain() {
            if let Action::Dispatch(Dispatch { node, .. }) = a {
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
