//! Decisions the paper leaves open, one test each (docs/draconis.md).

use super::*;

#[test]
fn pointers_wrap_around_u32() {
    assert!(ahead(0, u32::MAX));
    assert!(!ahead(u32::MAX, 0));
    let mut dp = Draconis::new(DraconisConfig::fcfs(4));
    dp.queue_mut().control_set_pointers(u32::MAX - 1);
    for i in 0..4 {
        feed(&mut dp, job(1, i, &[TaskInfo::new(i)]));
    }
    let (_, a, _) = dp.queue().pointers(0);
    assert_eq!(a, 2, "add_ptr wrapped");
    for i in 0..4 {
        assert_eq!(
            assigned(&feed(&mut dp, PullInput::TaskRequest(exec(0)))),
            Some(i)
        );
    }
}

#[test]
fn dequeued_entry_is_invalidated_and_tagged() {
    let mut dp = Draconis::new(DraconisConfig::fcfs(2));
    feed(&mut dp, job(1, 0, &[TaskInfo::new(10)]));
    assert_eq!(dp.queue().contents(0)[0].pos, 0);
    assert_eq!(
        assigned(&feed(&mut dp, PullInput::TaskRequest(exec(0)))),
        Some(10)
    );
    assert!(dp.queue().is_empty(), "the taken entry is marked invalid");
    assert_eq!(dp.queue().pointers(0), (1, 1, Default::default()));
    // The next request is at position 1 (slot 1). Plant valid entries of
    // other laps in slot 1: position 3 (the next lap) and position
    // 1 - 2 = u32::MAX (the previous lap, across the 2^32 wrap). Neither may
    // be taken by the request at position 1: valid is not enough, the tag
    // must be 1. No packet sequence reaches this state (the property tests
    // pass without the tag check), so the control plane writes it.
    for (stale_pos, id) in [(3u32, 77u64), (u32::MAX, 78)] {
        let mut dp = dp.clone();
        let stale = Slot {
            pos: stale_pos,
            ..Slot::new(TaskInfo::new(id), 1)
        };
        dp.queue_mut().control_write_entry(0, 1, stale);
        let acts = feed(&mut dp, PullInput::TaskRequest(exec(0)));
        assert_eq!(
            acts,
            vec![PullAction::NoOp { executor: 0 }],
            "the entry tagged {stale_pos} was taken at position 1"
        );
        assert_eq!(
            dp.queue().contents(0),
            vec![stale],
            "a rejected entry is left as it was"
        );
        // The next submission lands at position 1 (after the retrieve
        // repair the empty-queue request made necessary) and overwrites the
        // stale cell: it is the task a request gets, and the stale one is
        // never assigned.
        let acts = feed(&mut dp, job(1, 1, &[TaskInfo::new(11)]));
        for r in repairs(&acts) {
            feed(&mut dp, PullInput::Resubmit(Recirc::Repair(r)));
        }
        assert_eq!(
            assigned(&feed(&mut dp, PullInput::TaskRequest(exec(0)))),
            Some(11)
        );
        assert!(dp.queue().is_empty());
    }
}

#[test]
fn add_repair_restores_value_read_by_first_overshoot() {
    let mut dp = Draconis::new(DraconisConfig::fcfs(2));
    feed(&mut dp, job(1, 0, &[TaskInfo::new(0), TaskInfo::new(1)]));
    // The two-task job recirculates its second task.
    let mut acts = feed(&mut dp, job(1, 1, &[TaskInfo::new(2)]));
    // queue: only task 0 in (the job's second task is still in its packet)
    assert!(repairs(&acts).is_empty());
    acts.clear();
    let a1 = feed(&mut dp, job(1, 2, &[TaskInfo::new(3)]));
    let a2 = feed(&mut dp, job(1, 3, &[TaskInfo::new(4)]));
    let a3 = feed(&mut dp, job(1, 4, &[TaskInfo::new(5)]));
    // Full at position 2: the first overshooting submission sends the only
    // repair, with the value it read.
    assert_eq!(repairs(&a1), vec![Repair::Add { level: 0, value: 2 }]);
    assert!(repairs(&a2).is_empty() && repairs(&a3).is_empty());
    assert!(a2
        .iter()
        .any(|a| matches!(a, PullAction::ErrorPacket { .. })));
    // A retrieval frees room, but while the repair is pending submissions
    // are still refused: add_ptr (5) is past the real tail (2).
    assert_eq!(
        assigned(&feed(&mut dp, PullInput::TaskRequest(exec(0)))),
        Some(0)
    );
    let a4 = feed(&mut dp, job(1, 5, &[TaskInfo::new(6)]));
    assert!(a4
        .iter()
        .any(|a| matches!(a, PullAction::ErrorPacket { .. })));
    assert_eq!(dp.queue().pointers(0).1, 6);
    feed(
        &mut dp,
        PullInput::Resubmit(Recirc::Repair(Repair::Add { level: 0, value: 2 })),
    );
    assert_eq!(dp.queue().pointers(0).1, 2);
    // Now the freed slot is used at the right position: FIFO holds.
    let a5 = feed(&mut dp, job(1, 6, &[TaskInfo::new(7)]));
    assert!(a5
        .iter()
        .any(|a| matches!(a, PullAction::Ack { accepted: 1, .. })));
    assert_eq!(
        assigned(&feed(&mut dp, PullInput::TaskRequest(exec(0)))),
        Some(2)
    );
    assert_eq!(
        assigned(&feed(&mut dp, PullInput::TaskRequest(exec(0)))),
        Some(7)
    );
}

#[test]
fn retrieve_repair_and_requests_while_pending() {
    let mut dp = Draconis::new(DraconisConfig::fcfs(4));
    for _ in 0..10 {
        let a = feed(&mut dp, PullInput::TaskRequest(exec(0)));
        assert!(matches!(a[0], PullAction::NoOp { .. }));
    }
    assert_eq!(dp.queue().pointers(0).0, 10, "retrieve_ptr overshoots");
    let a = feed(&mut dp, job(1, 0, &[TaskInfo::new(100)]));
    let rep = repairs(&a);
    assert_eq!(rep, vec![Repair::Retrieve { level: 0, value: 0 }]);
    // §4.7.2: a request meeting the pending repair gets a no-op and does not
    // consume the task.
    let b = feed(&mut dp, PullInput::TaskRequest(exec(0)));
    assert!(matches!(b[0], PullAction::NoOp { .. }));
    // While pending, fullness is judged against the repair's target: the
    // queue takes 4 tasks, not 4 + overshoot.
    let mut accepted = 1;
    for i in 0..6 {
        let a = feed(&mut dp, job(1, i + 1, &[TaskInfo::new(101 + i)]));
        if a.iter()
            .any(|a| matches!(a, PullAction::Ack { accepted: 1, .. }))
        {
            accepted += 1;
        }
        assert!(repairs(&a).iter().all(|r| matches!(r, Repair::Add { .. })));
    }
    assert_eq!(accepted, 4);
    feed(&mut dp, PullInput::Resubmit(Recirc::Repair(rep[0])));
    for want in 100..104 {
        assert_eq!(
            assigned(&feed(&mut dp, PullInput::TaskRequest(exec(0)))),
            Some(want)
        );
    }
}

#[test]
fn multi_task_job_one_pass_per_task_ack_and_error_packet() {
    let mut dp = Draconis::new(DraconisConfig::fcfs(4));
    let tasks: Vec<TaskInfo> = (0..6).map(TaskInfo::new).collect();
    let mut input = job(9, 42, &tasks);
    let mut passes = 0;
    let mut acks = Vec::new();
    let mut errors = Vec::new();
    loop {
        passes += 1;
        let mut next = None;
        for a in feed(&mut dp, input) {
            match a {
                PullAction::Recirculate(r @ Recirc::Submit { .. }) => {
                    next = Some(PullInput::Resubmit(r))
                }
                PullAction::Recirculate(Recirc::Repair(r)) => {
                    feed(&mut dp, PullInput::Resubmit(Recirc::Repair(r)));
                }
                PullAction::Ack {
                    client,
                    job,
                    accepted,
                } => acks.push((client, job, accepted)),
                PullAction::ErrorPacket { client, tasks } => errors.push((
                    client,
                    tasks.as_slice().iter().map(|t| t.id).collect::<Vec<_>>(),
                )),
                other => panic!("{other:?}"),
            }
        }
        match next {
            Some(i) => input = i,
            None => break,
        }
    }
    assert_eq!(passes, 6, "one pass per task (§4.3)");
    assert_eq!(acks, vec![(9, 42, 4)]);
    assert_eq!(errors, vec![(9, vec![4, 5])]);
    // Each overflowing task found the earlier repair already landed (it is
    // fed at once here), so each sent its own.
    assert_eq!(
        dp.pipeline().resubmissions,
        5 + 2,
        "5 continuations + 2 add repairs"
    );
}

#[test]
fn priority_walks_levels_then_noop() {
    let mut dp = Draconis::new(DraconisConfig::priority(8));
    let mut low = TaskInfo::new(1);
    low.priority = 4;
    let mut high = TaskInfo::new(2);
    high.priority = 2;
    feed(&mut dp, job(1, 0, &[low]));
    feed(&mut dp, job(1, 1, &[high]));
    let mut input = PullInput::TaskRequest(exec(0));
    let mut got = Vec::new();
    for _ in 0..3 {
        let mut walked = 0;
        loop {
            let a = feed(&mut dp, input);
            match a[0] {
                PullAction::Recirculate(r @ Recirc::Request { .. }) => {
                    walked += 1;
                    input = PullInput::Resubmit(r);
                }
                PullAction::AssignTask { task, .. } => {
                    got.push((task.id, walked));
                    break;
                }
                PullAction::NoOp { .. } => {
                    got.push((0, walked));
                    break;
                }
                ref other => panic!("{other:?}"),
            }
        }
        input = PullInput::TaskRequest(exec(0));
    }
    assert_eq!(got, vec![(2, 1), (1, 3), (0, 3)]);
}

/// A request that meets a pending retrieve repair at one priority level
/// moves on to the next level (RTRV_PRIO + 1, §6.1) rather than taking a
/// no-op (§4.7.2's no-op is for the last level): an executor must not idle
/// while a lower level holds a task.
#[test]
fn priority_request_passes_a_level_with_a_pending_repair() {
    let mut dp = Draconis::new(DraconisConfig::priority(8));
    let at = |id, priority| {
        let mut t = TaskInfo::new(id);
        t.priority = priority;
        t
    };
    // Walks a request through the levels; what it finally gets.
    let walk = |dp: &mut Draconis| {
        let mut input = PullInput::TaskRequest(exec(0));
        loop {
            let a = feed(dp, input);
            match a
                .iter()
                .find(|a| !matches!(a, PullAction::Recirculate(Recirc::Repair(_))))
            {
                Some(PullAction::Recirculate(r @ Recirc::Request { .. })) => {
                    input = PullInput::Resubmit(*r)
                }
                Some(other) => return *other,
                None => panic!("no answer: {a:?}"),
            }
        }
    };
    feed(&mut dp, job(1, 0, &[at(20, 2)]));
    feed(&mut dp, job(1, 1, &[at(21, 2)]));
    // Level 1 is empty: this request overshoots its retrieve_ptr and takes 20.
    assert!(matches!(walk(&mut dp), PullAction::AssignTask { task, .. } if task.id == 20));
    // A level-1 submission now needs a retrieve repair, still in flight.
    let a = feed(&mut dp, job(1, 2, &[at(10, 1)]));
    assert_eq!(repairs(&a), vec![Repair::Retrieve { level: 0, value: 0 }]);
    match walk(&mut dp) {
        PullAction::AssignTask { task, .. } => assert_eq!(task.id, 21),
        other => panic!("level 2 holds task 21, got {other:?}"),
    }
}

#[test]
fn swap_finds_capable_task_and_keeps_order() {
    let gpu = |id| {
        let mut t = TaskInfo::new(id);
        t.props = 0b10;
        t
    };
    let mut dp2 = Draconis::new(DraconisConfig::resource(8, 16));
    let h = |dp: &mut Draconis, input: PullInput| -> Vec<PullAction> {
        let mut all = Vec::new();
        let mut q = std::collections::VecDeque::from([input]);
        while let Some(i) = q.pop_front() {
            for a in feed(dp, i) {
                match a {
                    PullAction::Recirculate(r) => q.push_back(PullInput::Resubmit(r)),
                    other => all.push(other),
                }
            }
        }
        all
    };
    h(
        &mut dp2,
        job(1, 0, &[gpu(1), gpu(2), TaskInfo::new(3), gpu(4)]),
    );
    let cpu_only = ExecInfo {
        id: 5,
        node: 5,
        resources: 0b01,
    };
    let a = h(&mut dp2, PullInput::TaskRequest(cpu_only));
    assert_eq!(assigned(&a), Some(3));
    assert_eq!(dp2.stats.swaps, 2);
    let ids: Vec<u64> = dp2.queue().contents(0).iter().map(|s| s.task.id).collect();
    assert_eq!(ids, vec![1, 2, 4], "relative order kept");
    // No capable task left: the walk reaches the end, the hand goes back at
    // the tail in the same pass, the executor gets a no-op.
    let a = h(&mut dp2, PullInput::TaskRequest(cpu_only));
    assert!(matches!(a[..], [PullAction::NoOp { executor: 5 }]));
    let ids: Vec<u64> = dp2.queue().contents(0).iter().map(|s| s.task.id).collect();
    assert_eq!(ids, vec![1, 2, 4]);
    let gpu_exec = ExecInfo {
        id: 6,
        node: 6,
        resources: 0b11,
    };
    for want in [1, 2, 4] {
        assert_eq!(
            assigned(&h(&mut dp2, PullInput::TaskRequest(gpu_exec))),
            Some(want)
        );
    }
}

#[test]
fn swap_bound_returns_hand_to_tail() {
    let mut dp = Draconis::new(DraconisConfig::resource(8, 1));
    let mut q = std::collections::VecDeque::new();
    let gpu = |id| {
        let mut t = TaskInfo::new(id);
        t.props = 0b10;
        t
    };
    q.push_back(job(1, 0, &[gpu(1), gpu(2), gpu(3), TaskInfo::new(4)]));
    let mut outs = Vec::new();
    let mut requested = false;
    loop {
        let Some(i) = q.pop_front() else {
            if requested {
                break;
            }
            requested = true;
            q.push_back(PullInput::TaskRequest(ExecInfo {
                id: 9,
                node: 9,
                resources: 1,
            }));
            continue;
        };
        for a in feed(&mut dp, i) {
            match a {
                PullAction::Recirculate(r) => q.push_back(PullInput::Resubmit(r)),
                other => outs.push(other),
            }
        }
    }
    assert!(outs.contains(&PullAction::NoOp { executor: 9 }));
    assert_eq!(dp.stats.tail_returns, 1);
    let ids: Vec<u64> = dp.queue().contents(0).iter().map(|s| s.task.id).collect();
    assert_eq!(
        ids,
        vec![1, 3, 4, 2],
        "only the bound reorders: 2 went to the tail"
    );
}

#[test]
fn locality_skip_counter_and_limits() {
    // Nodes 0..4, two per rack. Task local to node 0 (rack 0).
    let config = DraconisConfig::locality(8, 1, 3, 2);
    let mut dp = Draconis::new(config);
    let t = TaskInfo::new(1).with_local_nodes(&[0]);
    feed(&mut dp, job(1, 0, &[t]));
    let run = |dp: &mut Draconis, node: u32| {
        let mut q = std::collections::VecDeque::from([PullInput::TaskRequest(ExecInfo {
            id: node,
            node,
            resources: 0,
        })]);
        let mut res = None;
        while let Some(i) = q.pop_front() {
            for a in feed(dp, i) {
                match a {
                    PullAction::Recirculate(r) => q.push_back(PullInput::Resubmit(r)),
                    PullAction::AssignTask { skips, .. } => res = Some(skips),
                    _ => {}
                }
            }
        }
        res
    };
    assert_eq!(
        run(&mut dp, 2),
        None,
        "other rack: skip 1, not > rack limit 1"
    );
    assert_eq!(run(&mut dp, 1), Some(2), "same rack: skip 2 > rack limit 1");
    let t = TaskInfo::new(2).with_local_nodes(&[0]);
    feed(&mut dp, job(1, 1, &[t]));
    assert_eq!(run(&mut dp, 2), None, "skip 1");
    assert_eq!(run(&mut dp, 3), None, "skip 2: other rack needs > 3");
    assert_eq!(run(&mut dp, 2), None, "skip 3");
    assert_eq!(
        run(&mut dp, 3),
        Some(4),
        "skip 4 > global limit 3: anywhere"
    );
    let t = TaskInfo::new(3).with_local_nodes(&[0]);
    feed(&mut dp, job(1, 2, &[t]));
    assert_eq!(run(&mut dp, 0), Some(0), "data-local node runs it at once");
}
