//! Regression tests for Horus data-plane defects found in review and tests
//! of the options that reproduce the authors' simulator.
//! Each defect's test failed before its fix.

use netsched_core::dataplane::{
    Action, DataPlane, Decision, Dispatch, Input, NodeId, Notice, Outbox, Resubmit, TaskMeta,
};
use netsched_core::fixed;
use netsched_core::horus::{
    ConnTableConfig, HorusLeaf, HorusOptions, HorusSpine, RemoveLock, SpineIdlePick,
};
use netsched_core::Nanos;

fn task(id: u64) -> TaskMeta {
    TaskMeta::single(id)
}

fn reply(node: NodeId, qlen: u32, id: u64) -> Input {
    Input::Reply {
        node,
        qlen,
        class: 0,
        task: id,
    }
}

/// Everything one input led to, with resubmissions run at once.
#[derive(Default, Debug)]
struct Effects {
    dispatched: Vec<(NodeId, Decision)>,
    notices: Vec<Notice>,
    passes: u32,
}

fn feed<D: DataPlane>(dp: &mut D, now: u64, input: Input) -> Effects {
    let mut fx = Effects::default();
    let mut next = Some(input);
    while let Some(input) = next.take() {
        fx.passes += 1;
        assert!(fx.passes < 8, "input keeps resubmitting");
        let mut out = Outbox::new();
        dp.handle(Nanos::new(now), input, &mut out);
        for a in out.drain() {
            match a {
                Action::Dispatch(Dispatch { node, decision, .. }) => {
                    fx.dispatched.push((node, decision))
                }
                Action::Resubmit(r) => next = Some(Input::Resubmit(r)),
                Action::Notify { notice, .. } => fx.notices.push(notice),
                _ => {}
            }
        }
    }
    fx
}

fn leaf(workers: u32) -> HorusLeaf {
    HorusLeaf::new(workers, 1, ConnTableConfig::default())
}

/// Two replies of one worker arrive out of order: the empty-queue report
/// first, then the older one. The worker is idle and listed; before the fix
/// the older report set its load to 1, the pop found it "busy", discarded
/// the entry, and the idle worker was off the list until sampled by chance.
#[test]
fn reordered_replies_keep_an_idle_worker_usable() {
    let mut l = leaf(2);
    // Tasks 0 and 1 take both idle workers; task 2 goes by power-of-2.
    let a = feed(&mut l, 0, Input::Task(task(0))).dispatched[0].0;
    let b = feed(&mut l, 0, Input::Task(task(1))).dispatched[0].0;
    assert_ne!(a, b);
    let (x, _) = feed(&mut l, 0, Input::Task(task(2))).dispatched[0];
    let y = if x == a { b } else { a };
    // x ran its first task (reporting 1 queued) and task 2 (reporting 0);
    // the second reply overtakes the first. y stays busy.
    feed(&mut l, 1, reply(x, 0, 2));
    feed(&mut l, 2, reply(x, 1, if x == a { 0 } else { 1 }));
    assert_eq!(l.outstanding(x), 0);
    assert_eq!(l.outstanding(y), 1);
    let fx = feed(&mut l, 3, Input::Task(task(3)));
    assert_eq!(
        fx.dispatched,
        vec![(x, Decision::Idle)],
        "the idle worker takes the task from the idle list, first try"
    );
}

/// The rack average is the sum of tasks the leaf counts at its workers
/// times 1/w (§A.2). Before the fix a removed worker's tasks stayed in it
/// for good: two tasks on two workers, one worker removed, and the average
/// read 2.0 tasks per worker for a rack with one worker and one task.
#[test]
fn removing_a_worker_removes_its_tasks_from_the_rack_average() {
    let mut l = leaf(2);
    feed(&mut l, 0, Input::Task(task(0)));
    feed(&mut l, 0, Input::Task(task(1)));
    assert_eq!(l.average_load(), fixed::ONE);
    l.control_remove_worker(0, &mut Outbox::new());
    assert_eq!(l.average_load(), fixed::ONE, "one task on one worker");
}

/// A lost reply left the average one task too high forever, and the worker
/// counted as busy. An empty-queue report long after the last dispatch
/// forgets what was lost.
#[test]
fn lost_reply_is_forgotten_when_the_worker_reports_empty() {
    let mut l = leaf(1);
    feed(&mut l, 0, Input::Task(task(0)));
    feed(&mut l, 10, Input::Task(task(1)));
    assert_eq!(l.outstanding(0), 2);
    // The reply to task 0 is lost; task 1's reply comes much later.
    let late = 10 + HorusOptions::default().loss_resync_ns;
    feed(&mut l, late, reply(0, 0, 1));
    assert_eq!(l.outstanding(0), 0);
    assert_eq!(l.average_load(), 0);
    assert_eq!(l.counters().forgotten_lost, 1);
    let fx = feed(&mut l, late + 1, Input::Task(task(2)));
    assert_eq!(fx.dispatched, vec![(0, Decision::Idle)]);
}

/// A reply that answers no outstanding task (a duplicate, or one of a task
/// forgotten as lost) must not lower the average below the truth.
#[test]
fn unanswered_reply_does_not_lower_the_average() {
    let mut l = leaf(2);
    feed(&mut l, 0, Input::Task(task(0)));
    let before = l.average_load();
    feed(&mut l, 1, reply(1, 0, 99));
    feed(&mut l, 1, reply(0, 0, 0));
    feed(&mut l, 2, reply(0, 0, 0));
    assert_eq!(before, fixed::additive_factor(2));
    assert_eq!(l.average_load(), 0);
}

/// §3.4: a leaf reports when its average moved by one task per worker away
/// from the spine's view. With 1/w rounded down, w = 3 took 4 replies
/// (3 x 21845 < 65536) to report a drop of one task per worker.
#[test]
fn load_update_after_w_replies_for_any_w() {
    for w in [3u32, 5, 6, 7, 12, 24] {
        let mut l = leaf(w);
        // Tasks the spine sent move the spine's view with the average.
        let mut on = Vec::new();
        for id in 0..u64::from(w) {
            let fx = feed(&mut l, 0, Input::Task(task(id)));
            assert!(!fx
                .notices
                .iter()
                .any(|n| matches!(n, Notice::LoadUpdate(_))));
            on.push((fx.dispatched[0].0, id));
        }
        let mut reports = Vec::new();
        for (i, (node, id)) in on.into_iter().enumerate() {
            let fx = feed(&mut l, 1, reply(node, 0, id));
            if fx
                .notices
                .iter()
                .any(|n| matches!(n, Notice::LoadUpdate(_)))
            {
                reports.push(i + 1);
            }
        }
        assert_eq!(
            reports,
            vec![w as usize],
            "w = {w}: report at the w-th reply"
        );
    }
}

/// Leaf idle threshold T (horus-sim: 4): idleRemove when the idle count drops
/// to T, idleAdd when it rises above T.
#[test]
fn leaf_threshold_announces_at_t() {
    let opts = HorusOptions {
        leaf_idle_threshold: 4,
        ..HorusOptions::default()
    };
    let mut l = HorusLeaf::with_options(6, 1, ConnTableConfig::default(), opts);
    let idle_task = |id| TaskMeta {
        idle_selected: true,
        ..task(id)
    };
    // 6 idle -> 5: still above T.
    let fx = feed(&mut l, 0, Input::Task(idle_task(0)));
    assert!(fx.notices.is_empty(), "{:?}", fx.notices);
    // 5 -> 4 = T: remove.
    let fx = feed(&mut l, 0, Input::Task(idle_task(1)));
    assert_eq!(fx.notices, vec![Notice::IdleRemove]);
    let (w, _) = fx.dispatched[0];
    // 4 -> 3: below T, the spine already knows.
    let fx = feed(&mut l, 0, Input::Task(task(2)));
    assert!(fx.notices.is_empty(), "{:?}", fx.notices);
    let (w2, _) = fx.dispatched[0];
    // 3 -> 4: not above T.
    assert!(feed(&mut l, 1, reply(w2, 0, 2)).notices.is_empty());
    // 4 -> 5: above T again.
    assert_eq!(
        feed(&mut l, 1, reply(w, 0, 1)).notices,
        vec![Notice::IdleAdd]
    );
    // A rack of at most T workers never announces; its spine never lists it.
    let small = HorusSpine::with_options(&[4, 5], 1, ConnTableConfig::default(), opts);
    assert_eq!(small.idle_nodes().idle(), &[1]);
}

fn spine(racks: usize, opts: HorusOptions) -> HorusSpine {
    HorusSpine::with_options(&vec![8; racks], 7, ConnTableConfig::default(), opts)
}

/// The paper's spine always takes idleList[p-1]; horus-sim's a random one.
#[test]
fn spine_idle_pick_last_and_random() {
    let mut last = spine(4, HorusOptions::default());
    let mut random = spine(
        4,
        HorusOptions {
            spine_idle_pick: SpineIdlePick::Random,
            ..HorusOptions::default()
        },
    );
    let mut seen_last = [0u32; 4];
    let mut seen_random = [0u32; 4];
    for id in 0..400 {
        let (r, d) = feed(&mut last, 0, Input::Task(task(id))).dispatched[0];
        assert_eq!(d, Decision::Idle);
        seen_last[r as usize] += 1;
        let (r, d) = feed(&mut random, 0, Input::Task(task(id))).dispatched[0];
        assert_eq!(d, Decision::Idle);
        seen_random[r as usize] += 1;
    }
    assert_eq!(seen_last.iter().filter(|&&c| c > 0).count(), 1);
    // Uniform over 4: each 100 expected; 60..140 is beyond 4 sigma.
    assert!(
        seen_random.iter().all(|&c| (60..140).contains(&c)),
        "{seen_random:?}"
    );
}

/// With the lock (Alg. 1) a second idleRemove while the first is between its
/// passes is dropped; with the lock off (horus-sim) both take effect at once.
#[test]
fn remove_lock_on_drops_and_off_applies() {
    let mut on = spine(4, HorusOptions::default());
    let mut out = Outbox::new();
    on.handle(Nanos::ZERO, Input::IdleRemove { node: 0 }, &mut out);
    let pending = out.drain().collect::<Vec<_>>();
    assert!(matches!(
        pending[..],
        [Action::Resubmit(Resubmit::IdleRemove { .. })]
    ));
    on.handle(Nanos::ZERO, Input::IdleRemove { node: 1 }, &mut out);
    assert!(matches!(
        out.drain().collect::<Vec<_>>()[..],
        [Action::Drop(netsched_core::DropReason::LockHeld)]
    ));

    let mut off = spine(
        4,
        HorusOptions {
            remove_lock: RemoveLock::Off,
            ..HorusOptions::default()
        },
    );
    for node in [0, 1] {
        off.handle(Nanos::ZERO, Input::IdleRemove { node }, &mut out);
        assert!(out.is_empty(), "{:?}", out.as_slice());
    }
    let mut left = off.idle_nodes().idle().to_vec();
    left.sort_unstable();
    assert_eq!(left, vec![2, 3]);
    off.idle_nodes().check_invariant().unwrap();
}

/// horus-tokens: a spine holds one token per idle worker and pops one per
/// idle-path task, so it never sends a rack more idle-path tasks than it
/// announced idle workers; a leaf sends a token per worker that idles.
#[test]
fn idle_tokens_one_task_per_announced_worker() {
    let opts = HorusOptions::idle_tokens();
    let mut s = HorusSpine::with_options(&[2, 1], 3, ConnTableConfig::default(), opts);
    let mut per_rack = [0u32; 2];
    for id in 0..3 {
        let fx = feed(&mut s, 0, Input::Task(task(id)));
        assert_eq!(fx.dispatched[0].1, Decision::Idle);
        per_rack[fx.dispatched[0].0 as usize] += 1;
    }
    assert_eq!(per_rack, [2, 1]);
    let fx = feed(&mut s, 0, Input::Task(task(3)));
    assert_eq!(fx.dispatched[0].1, Decision::Sampled, "no token left");
    feed(&mut s, 1, Input::IdleAdd { node: 1 });
    let fx = feed(&mut s, 2, Input::Task(task(4)));
    assert_eq!(fx.dispatched, vec![(1, Decision::Idle)]);

    let mut l = HorusLeaf::with_options(2, 1, ConnTableConfig::default(), opts);
    let a = feed(&mut l, 0, Input::Task(task(0)));
    assert!(a.notices.is_empty(), "tokens are never withdrawn");
    let b = feed(&mut l, 0, Input::Task(task(1)));
    assert!(b.notices.is_empty());
    let w = a.dispatched[0].0;
    assert_eq!(
        feed(&mut l, 1, reply(w, 0, 0)).notices,
        vec![Notice::IdleAdd]
    );
}

/// A task lost on its way to a worker that then keeps getting tasks: each
/// reply comes soon after a dispatch, so replies never prove the loss, and
/// every idle entry of the worker is popped as stale. The worker's heartbeat
/// with an empty queue proves it once nothing was sent to it for the resync
/// time; before, the worker never took an idle-path task again.
#[test]
fn heartbeat_of_an_idle_worker_forgets_a_lost_task() {
    let mut l = leaf(1);
    feed(&mut l, 0, Input::Task(task(0))); // lost on the wire
    feed(&mut l, 5, Input::Task(task(1)));
    feed(&mut l, 50, reply(0, 0, 1));
    assert_eq!(l.outstanding(0), 1, "the lost task still counts");
    let mut out = Outbox::new();
    l.control_reconcile_worker(0, 0, 60, &mut out);
    assert_eq!(l.outstanding(0), 1, "too soon: the task may be in flight");
    let late = 5 + HorusOptions::default().loss_resync_ns;
    l.control_reconcile_worker(0, 0, late, &mut out);
    assert_eq!(l.outstanding(0), 0);
    assert_eq!(l.average_load(), 0);
    let fx = feed(&mut l, late + 1, Input::Task(task(2)));
    assert_eq!(fx.dispatched, vec![(0, Decision::Idle)]);
}

/// horus-tokens' slot tokens: a worker whose count drops from two owed
/// tasks to one is offered as a slot; the spine uses slots only when it
/// holds no idle token, before its power-of-2.
#[test]
fn slot_tokens_follow_idle_tokens() {
    let opts = HorusOptions::idle_tokens();
    assert!(opts.slot_tokens);
    let mut l = HorusLeaf::with_options(1, 1, ConnTableConfig::default(), opts);
    feed(&mut l, 0, Input::Task(task(0)));
    feed(&mut l, 0, Input::Task(task(1)));
    assert_eq!(l.outstanding(0), 2);
    let fx = feed(&mut l, 1, reply(0, 1, 0));
    assert!(fx.notices.contains(&Notice::SlotAdd), "{:?}", fx.notices);
    // The leaf takes a task for the slot: the worker owes two again.
    let fx = feed(&mut l, 2, Input::Task(task(2)));
    assert_eq!(fx.dispatched, vec![(0, Decision::Other)]);

    let mut s = HorusSpine::with_options(&[1, 1], 3, ConnTableConfig::default(), opts);
    for id in 0..2 {
        assert_eq!(
            feed(&mut s, 0, Input::Task(task(id))).dispatched[0].1,
            Decision::Idle
        );
    }
    feed(&mut s, 1, Input::SlotAdd { node: 1 });
    feed(&mut s, 1, Input::IdleAdd { node: 0 });
    // The idle token first, then the slot, then power-of-2.
    assert_eq!(
        feed(&mut s, 2, Input::Task(task(2))).dispatched,
        vec![(0, Decision::Idle)]
    );
    assert_eq!(
        feed(&mut s, 2, Input::Task(task(3))).dispatched,
        vec![(1, Decision::Other)]
    );
    assert_eq!(
        feed(&mut s, 2, Input::Task(task(4))).dispatched[0].1,
        Decision::Sampled
    );
}
