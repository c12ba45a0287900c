//! R2P2 JBSQ(k).

use super::*;
use netsched_core::Nanos;

fn r2p2_run(sw: &mut R2p2Jbsq, input: PullInput) -> (Option<u32>, u32, Option<DropReason>) {
    let mut out = PullOutbox::new();
    let mut input = input;
    let mut recircs = 0;
    loop {
        out.clear();
        sw.handle(Nanos::ZERO, input, &mut out);
        match out.as_slice()[0] {
            PullAction::AssignTask { executor, .. } => return (Some(executor), recircs, None),
            PullAction::Reprobe(p) => {
                recircs += 1;
                input = PullInput::Reprobe(p);
            }
            PullAction::Drop(r) => return (None, recircs, Some(r)),
            other => panic!("R2P2 never sends {other:?}"),
        }
    }
}

#[test]
fn r2p2_jbsq_fills_idle_first_then_up_to_k_then_drops() {
    let mut sw = R2p2Jbsq::new(
        4,
        R2p2Config {
            jbsq_bound: 3,
            recirc_budget: Some(20),
            search: JbsqSearch::ShortestFirst,
        },
    );
    let req = |id| PullInput::Request {
        client: 0,
        task: TaskInfo::new(id),
    };
    let mut per = [0u32; 4];
    for i in 0..12 {
        let (e, _, _) = r2p2_run(&mut sw, req(i));
        per[e.unwrap() as usize] += 1;
        // JBSQ: no executor more than one ahead of the least loaded.
        assert!(per.iter().max().unwrap() - per.iter().min().unwrap() <= 1);
    }
    assert_eq!(sw.outstanding(), &[3, 3, 3, 3]);
    let (e, recircs, drop) = r2p2_run(&mut sw, req(99));
    assert_eq!(
        (e, recircs, drop),
        (None, 20, Some(DropReason::RecirculationBudget))
    );
    assert_eq!(sw.stats.dropped, 1);
    let mut out = PullOutbox::new();
    sw.handle(Nanos::ZERO, PullInput::Completion { executor: 2 }, &mut out);
    assert_eq!(r2p2_run(&mut sw, req(100)).0, Some(2));
    sw.handle(
        Nanos::ZERO,
        PullInput::Completion { executor: 77 },
        &mut out,
    );
    assert_eq!(out.as_slice(), &[PullAction::Drop(DropReason::UnknownNode)]);
}

proptest! {
    #![proptest_config(quick(64))]

    /// JBSQ never exceeds its bound of outstanding tasks at any executor by the
    /// switch's counters, whichever search; every request is dispatched or
    /// dropped for budget, nothing else.
    #[test]
    fn r2p2_bound_never_exceeded(
        ops in prop::collection::vec((any::<bool>(), 0u32..6), 1..200),
        bound in 1u32..4,
        first_fit in any::<bool>(),
    ) {
        let search = if first_fit { JbsqSearch::FirstFit } else { JbsqSearch::ShortestFirst };
        let mut sw = R2p2Jbsq::new(6, R2p2Config { jbsq_bound: bound, recirc_budget: Some(30), search });
        let mut dispatched = 0u64;
        let mut dropped = 0u64;
        for (i, (is_req, e)) in ops.iter().enumerate() {
            if *is_req {
                match r2p2_run(&mut sw, PullInput::Request { client: 0, task: TaskInfo::new(i as u64) }) {
                    (Some(_), _, None) => dispatched += 1,
                    (None, _, Some(DropReason::RecirculationBudget)) => dropped += 1,
                    other => prop_assert!(false, "{:?}", other),
                }
            } else {
                let mut out = PullOutbox::new();
                sw.handle(Nanos::ZERO, PullInput::Completion { executor: *e }, &mut out);
            }
            prop_assert!(sw.outstanding().iter().all(|&c| c <= bound));
        }
        prop_assert_eq!(sw.stats.dispatched, dispatched);
        prop_assert_eq!(sw.stats.dropped, dropped);
    }
}
