//! The two counterexamples to the paper's literal swap head rule (§5.1: swap with
//! the head when pkt_retrieve_ptr < retrieve_ptr); ours swaps with the head when
//! retrieve_ptr > SWAP_INDX (docs/draconis.md).

use super::*;
use netsched_core::Nanos;

/// Where the literal rule sends a swap pass that read `retrieve_ptr = r`.
fn literal_rule_target(r: u32, pkt_retrieve_ptr: u32, swap_indx: u32) -> u32 {
    if ahead(r, pkt_retrieve_ptr) {
        r
    } else {
        swap_indx
    }
}

fn one_swap(actions: &[PullAction]) -> Recirc {
    let swaps: Vec<Recirc> = actions
        .iter()
        .filter_map(|a| match a {
            PullAction::Recirculate(r @ Recirc::Swap { .. }) => Some(*r),
            _ => None,
        })
        .collect();
    assert_eq!(swaps.len(), 1, "{actions:?}");
    swaps[0]
}

/// The swap packet's hand and the pointers a swap rule reads:
/// the queue's retrieve pointer at level 0, the packet's retrieve pointer and
/// its SWAP_INDX.
fn swap_pointers(dp: &Draconis, swap: &Recirc) -> (Slot, (u32, u32, u32)) {
    let Recirc::Swap {
        hand,
        swap_indx,
        pkt_retrieve_ptr,
        ..
    } = swap
    else {
        panic!("not a swap pass: {swap:?}")
    };
    let (r, _, _) = dp.queue().pointers(0);
    (*hand, (r, *pkt_retrieve_ptr, *swap_indx))
}

fn ids(dp: &Draconis) -> Vec<u64> {
    dp.queue().contents(0).iter().map(|s| s.task.id).collect()
}

const CPU_ONLY: ExecInfo = ExecInfo {
    id: 5,
    node: 5,
    resources: 0b01,
};
const GPU: ExecInfo = ExecInfo {
    id: 6,
    node: 6,
    resources: 0b11,
};

fn gpu_task(id: u64) -> TaskInfo {
    let mut t = TaskInfo::new(id);
    t.props = 0b10;
    t
}

/// Counterexample 1: a request served while a walk is out moves
/// retrieve_ptr past pkt_retrieve_ptr but not past SWAP_INDX. The literal
/// rule jumps the hand back to the head, behind a task it was already
/// swapped past: relative order broken. Ours continues at SWAP_INDX.
#[test]
fn literal_swap_rule_reorders_when_a_request_moves_the_head() {
    let mut dp = Draconis::new(DraconisConfig::resource(8, 16));
    // Positions 0..=4: gpu tasks 1, 2, 3, 4, then cpu task 5.
    for (j, id) in (1..=5).enumerate() {
        let t = if id == 5 {
            TaskInfo::new(5)
        } else {
            gpu_task(id)
        };
        feed(&mut dp, job(1, j as u64, &[t]));
    }
    // The cpu executor's walk: takes 1 at the head, swaps it into 1 (gets
    // 2), swaps 2 into 2 (gets 3); the hand is now task 3, aimed at 3.
    let mut swap = one_swap(&feed(&mut dp, PullInput::TaskRequest(CPU_ONLY)));
    for _ in 0..2 {
        swap = one_swap(&feed(&mut dp, PullInput::Resubmit(swap)));
    }
    assert_eq!(ids(&dp), vec![1, 2, 4, 5]);
    // A gpu executor takes task 1: retrieve_ptr 1 -> 2.
    assert_eq!(
        assigned(&feed(&mut dp, PullInput::TaskRequest(GPU))),
        Some(1)
    );
    let (hand, (r, pkt_retrieve_ptr, swap_indx)) = swap_pointers(&dp, &swap);
    assert_eq!(hand.task.id, 3);
    assert_eq!((r, pkt_retrieve_ptr, swap_indx), (2, 1, 3));
    // The rules disagree: literal jumps to the head (position 2, task 2,
    // which the hand already passed); ours stays at SWAP_INDX.
    assert_eq!(literal_rule_target(r, pkt_retrieve_ptr, swap_indx), 2);
    assert!(!ahead(r, swap_indx));

    let finish = |mut dp: Draconis, mut input: PullInput| -> (Option<u64>, Vec<u64>) {
        let mut ran = None;
        loop {
            let a = feed(&mut dp, input);
            ran = ran.or(assigned(&a));
            match a.iter().find_map(|x| match x {
                PullAction::Recirculate(r @ Recirc::Swap { .. }) => Some(*r),
                _ => None,
            }) {
                Some(s) => input = PullInput::Resubmit(s),
                None => return (ran, ids(&dp)),
            }
        }
    };
    // Ours: the walk goes on from position 3 and finds cpu task 5.
    let (ran, queue) = finish(dp.clone(), PullInput::Resubmit(swap));
    assert_eq!(ran, Some(5));
    assert_eq!(queue, vec![2, 3, 4], "acceptance order kept");
    // The literal rule, emulated by aiming the same pass at its target (our
    // rule then swaps at exactly that position): 3 lands before 2.
    let literal = match swap {
        Recirc::Swap {
            exec,
            level,
            hand,
            swaps,
            ..
        } => Recirc::Swap {
            exec,
            level,
            hand,
            swap_indx: literal_rule_target(r, pkt_retrieve_ptr, swap_indx),
            pkt_retrieve_ptr,
            swaps,
        },
        _ => unreachable!(),
    };
    let (ran, queue) = finish(dp, PullInput::Resubmit(literal));
    assert_eq!(ran, Some(5));
    assert_eq!(queue, vec![3, 2, 4], "the literal rule reorders 2 and 3");
}

/// Counterexample 2: the queue drains while a hand is out, retrieve_ptr
/// overshoots, a refill's retrieve repair is pending when the swap pass
/// re-aims (so the packet carries the overshot pointer), then the repair
/// lowers retrieve_ptr and a request moves it past SWAP_INDX. The literal
/// test (pkt_retrieve_ptr < retrieve_ptr) is false: it writes the hand at
/// SWAP_INDX, behind the head, where no request will ever read it: the task
/// is lost. Ours sees retrieve_ptr > SWAP_INDX and appends it at the head.
#[test]
fn literal_swap_rule_loses_the_hand_after_a_retrieve_repair() {
    let mut dp = Draconis::new(DraconisConfig::resource(8, 16));
    feed(&mut dp, job(1, 0, &[gpu_task(1)]));
    // The cpu executor takes gpu task 1 from position 0: the hand is out.
    let swap = one_swap(&feed(&mut dp, PullInput::TaskRequest(CPU_ONLY)));
    // Empty queue: two requests overshoot retrieve_ptr to 3.
    for _ in 0..2 {
        feed(&mut dp, PullInput::TaskRequest(GPU));
    }
    // Refill with cpu task 2 at position 1; its retrieve repair (to 1) stays
    // in flight.
    let retrieve = repairs(&feed(&mut dp, job(1, 1, &[TaskInfo::new(2)])));
    assert_eq!(retrieve, vec![Repair::Retrieve { level: 0, value: 1 }]);
    // The swap pass meets the pending repair: it re-aims at the repair's
    // target and undoes its tail claim with an add repair; the packet now
    // carries the overshot retrieve_ptr (3).
    let a = feed(&mut dp, PullInput::Resubmit(swap));
    let swap = one_swap(&a);
    for r in repairs(&a).into_iter().chain(retrieve) {
        feed(&mut dp, PullInput::Resubmit(Recirc::Repair(r)));
    }
    // A request takes task 2 at position 1: retrieve_ptr 1 -> 2.
    assert_eq!(
        assigned(&feed(&mut dp, PullInput::TaskRequest(GPU))),
        Some(2)
    );
    let (hand, (r, pkt_retrieve_ptr, swap_indx)) = swap_pointers(&dp, &swap);
    assert_eq!(hand.task.id, 1);
    assert_eq!((r, pkt_retrieve_ptr, swap_indx), (2, 3, 1));
    // Literal: no jump, write at SWAP_INDX = 1, behind the head (2).
    let literal_at = literal_rule_target(r, pkt_retrieve_ptr, swap_indx);
    assert_eq!(literal_at, 1);
    assert!(
        ahead(r, literal_at),
        "the literal target is behind the head"
    );

    // The literal pass, emulated: the hand written at position 1 (the
    // entry there was consumed, so the hand fills the slot and the executor
    // gets a no-op). A gpu executor then never finds task 1.
    let mut literal = dp.clone();
    literal.queue_mut().control_write_entry(
        0,
        literal_at,
        Slot {
            pos: literal_at,
            ..hand
        },
    );
    assert_eq!(literal.queue().reachable(0), 0, "task 1 is stranded");
    for _ in 0..4 {
        assert_eq!(
            assigned(&feed(&mut literal, PullInput::TaskRequest(GPU))),
            None
        );
    }

    // Ours: the pass jumps to the head, which is the end of the queue, and
    // appends the hand there; a gpu executor gets it.
    let a = feed(&mut dp, PullInput::Resubmit(swap));
    assert!(matches!(a[..], [PullAction::NoOp { executor: 5 }]), "{a:?}");
    assert_eq!(ids(&dp), vec![1]);
    assert_eq!(dp.queue().reachable(0), 1);
    assert_eq!(
        assigned(&feed(&mut dp, PullInput::TaskRequest(GPU))),
        Some(1)
    );
}

/// `CircularQueue::entries` is the level's cells as they are: a queued task
/// in the cell its position maps to, a taken one left behind with its valid
/// bit cleared (what the XDP queue is compared against, crates/xdp).
#[test]
fn entries_show_each_level_cell_by_cell() {
    let mut d = Draconis::new(DraconisConfig::priority(4));
    let mut out = PullOutbox::new();
    // Four tasks at level 1 (priority 2); a request takes the first after two.
    for i in 0..4u64 {
        let mut t = TaskInfo::new(i + 1);
        t.priority = 2;
        d.handle(Nanos::ZERO, job(0, i, &[t]), &mut out);
        out.clear();
        if i == 1 {
            d.handle(Nanos::ZERO, PullInput::TaskRequest(exec(0)), &mut out);
            let mut pending: Vec<Recirc> = out
                .drain()
                .filter_map(|a| match a {
                    PullAction::Recirculate(r) => Some(r),
                    _ => None,
                })
                .collect();
            // Level 0 is empty: the request walks on to level 1.
            while let Some(r) = pending.pop() {
                d.handle(Nanos::ZERO, PullInput::Resubmit(r), &mut out);
                out.clear();
            }
        }
    }
    let cells = d.queue().entries(1);
    assert_eq!(cells.len(), 4);
    let ids: Vec<(u64, u32, bool)> = cells.iter().map(|s| (s.task.id, s.pos, s.valid)).collect();
    assert_eq!(
        ids,
        [(1, 0, false), (2, 1, true), (3, 2, true), (4, 3, true)]
    );
    assert!(d.queue().entries(0).iter().all(|s| !s.valid));
}
