//! A fixed number of `netsched bench dataplane` steps (one task decision,
//! its resubmissions, one update) of one scenario, for counts that do not
//! depend on the machine's load: instructions per step under callgrind
//! (run once with 0 steps to subtract the set-up), or CPU time per step
//! under `perf stat`. docs/benchmarks.md ("Toward 50 M decisions per core")
//! has the commands.
//!
//! `cargo build --release -p netsched-core --example decision_steps`, then
//! `decision_steps <leaf24|leaf768|idle24|spine10|spine1152> <steps>`.

use netsched_core::Nanos;
use std::hint::black_box;

use netsched_core::dataplane::{handle_resubmitting, DataPlane, Input, Outbox, TaskMeta};
use netsched_core::horus::{ConnTableConfig, HorusLeaf, HorusSpine};
use netsched_core::rng::Rng;

/// Feeds `input` and every resubmission it causes, as `bench dataplane`
/// does; returns the dispatches and the last node chosen.
fn drive(dp: &mut impl DataPlane, input: Input, out: &mut Outbox) -> (u64, u32) {
    let (mut dispatched, mut node) = (0, 0);
    handle_resubmitting(dp, Nanos::ZERO, input, out, |n| {
        dispatched += 1;
        node = n;
    });
    (dispatched, node)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: decision_steps <leaf24|leaf768|idle24|spine10|spine1152> <steps>";
    let (Some(scenario), Some(steps)) = (args.get(1), args.get(2)) else {
        panic!("{usage}")
    };
    let steps: u64 = steps.parse().expect(usage);
    let conn = ConnTableConfig::default();
    let task = Input::Task(TaskMeta {
        first: true,
        last: true,
        ..TaskMeta::default()
    });
    let reply = |node, qlen| Input::Reply {
        node,
        qlen,
        class: 0,
        task: 0,
    };
    let mut out = Outbox::new();
    let mut dispatched = 0;
    match scenario.as_str() {
        "leaf24" | "leaf768" => {
            // Busy: every worker queued, one reply per task, power-of-2 path.
            let workers = if scenario == "leaf24" { 24 } else { 768 };
            let mut leaf = HorusLeaf::new(workers, 1, conn);
            let mut rng = Rng::new(9);
            for _ in 0..workers * 4 {
                drive(&mut leaf, task, &mut out);
            }
            for _ in 0..steps {
                dispatched += drive(&mut leaf, task, &mut out).0;
                out.clear();
                leaf.handle(Nanos::ZERO, reply(rng.below(workers), 3), &mut out);
            }
        }
        "idle24" => {
            // Idle: each task pops an idle worker, which replies idle.
            let mut leaf = HorusLeaf::new(24, 1, conn);
            for _ in 0..steps {
                let (d, node) = drive(&mut leaf, task, &mut out);
                dispatched += d;
                out.clear();
                leaf.handle(Nanos::ZERO, reply(node, 0), &mut out);
            }
        }
        "spine10" | "spine1152" => {
            // Busy: no idle rack, one loadUpdate per task.
            let racks = if scenario == "spine10" { 10 } else { 1152 };
            let mut spine = HorusSpine::new(&vec![24u32; racks as usize], 1, conn);
            for node in 0..racks {
                drive(&mut spine, Input::IdleRemove { node }, &mut out);
            }
            let mut rng = Rng::new(5);
            for _ in 0..steps {
                dispatched += drive(&mut spine, task, &mut out).0;
                out.clear();
                let update = Input::LoadUpdate {
                    node: rng.below(racks),
                    load: 3 << 16,
                };
                spine.handle(Nanos::ZERO, update, &mut out);
            }
        }
        _ => panic!("{usage}"),
    }
    black_box(dispatched);
}
