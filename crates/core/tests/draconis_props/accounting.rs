//! Switch model accounting.

use super::*;
use netsched_core::time::Nanos;

#[test]
fn fcfs_request_is_one_pass_and_no_recirculation_in_steady_state() {
    let mut dp = Draconis::new(DraconisConfig::fcfs(16));
    for i in 0..8 {
        feed(&mut dp, job(1, i, &[TaskInfo::new(i)]));
        assert_eq!(
            assigned(&feed(&mut dp, PullInput::TaskRequest(exec(0)))),
            Some(i)
        );
    }
    assert_eq!(dp.pipeline().resubmissions, 0);
    assert_eq!(dp.pipeline().first_passes, 16);
}

/// A swap walk whose queue drained and refilled while its hand was out, with
/// the retrieve repair still pending and retrieve_ptr overshot past the new
/// tail: the hand (older) must go before the refill, not behind it.
#[test]
fn swap_hand_stays_ahead_of_refill_during_retrieve_repair() {
    let mut dp = Draconis::new(DraconisConfig::resource(8, 64));
    let mut gpu = TaskInfo::new(1);
    gpu.props = 0b10;
    feed(&mut dp, job(1, 0, &[gpu]));
    let cpu = ExecInfo {
        id: 2,
        node: 2,
        resources: 1,
    };
    // The cpu executor takes the gpu task: a swap packet is in flight.
    let a = feed(&mut dp, PullInput::TaskRequest(cpu));
    let PullAction::Recirculate(swap @ Recirc::Swap { .. }) = a[0] else {
        panic!("{a:?}")
    };
    // Empty queue: requests overshoot retrieve_ptr.
    for _ in 0..3 {
        feed(&mut dp, PullInput::TaskRequest(exec(0)));
    }
    // Refill: the first insert sends a retrieve repair (kept in flight).
    let r1 = feed(&mut dp, job(1, 1, &[TaskInfo::new(2)]));
    let rep = repairs(&r1);
    assert_eq!(rep.len(), 1);
    feed(&mut dp, job(1, 2, &[TaskInfo::new(3)]));
    for _ in 0..4 {
        feed(&mut dp, PullInput::TaskRequest(exec(0)));
    }
    // retrieve_ptr is now past the tail; the swap must not append there.
    let mut q = std::collections::VecDeque::from([PullInput::Resubmit(swap)]);
    let mut repaired = false;
    while let Some(i) = q.pop_front() {
        for a in feed(&mut dp, i) {
            if let PullAction::Recirculate(r) = a {
                q.push_back(PullInput::Resubmit(r));
            }
        }
        if !repaired {
            repaired = true;
            feed(&mut dp, PullInput::Resubmit(Recirc::Repair(rep[0])));
        }
    }
    let ids: Vec<u64> = dp.queue().contents(0).iter().map(|s| s.task.id).collect();
    assert_eq!(
        ids,
        vec![1, 3],
        "hand kept ahead; cpu task 2 was taken by the walk"
    );
}

#[test]
fn executor_retries_after_noop_and_bad_recirculation_is_dropped() {
    let mut dp = Draconis::new(DraconisConfig::fcfs(4));
    let mut e = netsched_core::pull::Executor::new(exec(3), Nanos::new(2_000));
    let a = feed(&mut dp, e.request());
    assert_eq!(a, vec![PullAction::NoOp { executor: 3 }]);
    assert_eq!(e.on_noop(Nanos::new(10_000)), Nanos::new(12_000));
    // The submission finds retrieve_ptr overshot by the first request.
    let a = feed(&mut dp, job(1, 0, &[TaskInfo::new(5)]));
    let rep = repairs(&a);
    assert_eq!(rep, vec![Repair::Retrieve { level: 0, value: 0 }]);
    let rep = PullInput::Resubmit(Recirc::Repair(rep[0]));
    let a = feed(&mut dp, e.request());
    assert_eq!(a, vec![PullAction::NoOp { executor: 3 }], "§4.7.2");
    feed(&mut dp, rep);
    assert_eq!(assigned(&feed(&mut dp, e.request())), Some(5));
    e.on_task();
    assert_eq!(e.noops, 0);
    let bad = PullInput::Resubmit(Recirc::Request {
        exec: exec(0),
        level: 3,
    });
    assert_eq!(
        feed(&mut dp, bad),
        vec![PullAction::Drop(DropReason::Unexpected)]
    );
}
