//! 5. What `writes_state_only` promises the simulator.

use super::*;
use netsched_core::Nanos;

fn spine_run(spine: &mut HorusSpine, now: u64, input: Input) -> Vec<Action> {
    let mut out = Outbox::new();
    spine.handle(Nanos::new(now), input, &mut out);
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
