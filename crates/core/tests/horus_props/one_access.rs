//! 4. Switch model: one access per register array per pass, under a random mix of every input.

use super::*;
use netsched_core::Nanos;

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
                spine.handle(Nanos::new(now), input, &mut out);
            } else {
                leaf.handle(Nanos::new(now), input, &mut out);
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
