//! `pow3-idle`: join-idle-queue at the leaf, power-of-3 when no worker is
//! idle. The worked example of docs/extending.md: a researcher's scheduler
//! in one file, registered by one line of `registered!` (registry.rs), and
//! from there run by the simulator, the UDP runtime and the catalog.
//!
//! The policy: each leaf keeps a stack of its workers whose last reply
//! reported an empty queue (JIQ's I-queue, Lu et al. 2011, kept at the
//! leaf rather than at a dispatcher) and the queue lengths replies carry
//! (RackSched §3.2's LoadTable). A task goes to an idle worker if the leaf
//! knows one, else to the shortest of three distinct sampled queues
//! (Mitzenmacher's power of d choices, d = 3; RackSched §3.3). Above the
//! leaves, RS-LB's spine spreads tasks uniformly over racks (Horus §4.1),
//! as [`Shape::Leaf`] says. It differs from JIQ (random when none is idle)
//! and from Horus's leaf (power-of-2 over loads corrected by the drift of
//! its own dispatches, Alg. 2): loads here are only what replies say.
//!
//! Written against the switch model like every data plane: register arrays
//! in stage order, one access per array per pass. The LoadTable comes first
//! (its three copies are read in the task's one pass), then the stack's
//! top, then its cells, then the affinity table of multi-packet tasks.
//! A worker can be on the stack twice (a reply reports an empty queue for a
//! worker that a sampled decision just chose); it then receives a task
//! meant for an idle worker while busy, which is soft: the stack is bounded
//! by its capacity and a full stack ignores the push.

use crate::Nanos;
use crate::affinity::AffinityTable;
use crate::dataplane::{Action, DataPlane, Decision, DropReason, Input, NodeId, Outbox};
use crate::racksched::{LoadTable, Report, ReqTableConfig};
use crate::registry::{PlaneParams, Registered, Shape};
use crate::rng::Rng;
use crate::switch::{Layout, Pipeline, RegisterArray};
use crate::Control;

/// Samples per decision when no worker is idle.
pub const SAMPLES: u32 = 3;

/// A leaf's `pow3-idle` data plane over workers `0..n`.
#[derive(Clone, Debug)]
pub struct Pow3Idle {
    pipeline: Pipeline,
    rng: Rng,
    /// Queue lengths as replies reported them, three copies.
    loads: LoadTable,
    /// How many workers the stack holds.
    top: RegisterArray<u32>,
    /// The idle workers, `0..top`.
    stack: RegisterArray<NodeId>,
    affinity: AffinityTable,
}

impl Registered for Pow3Idle {
    const SHAPE: Shape = Shape::Leaf;

    fn build(nodes: u32, seed: u64, _params: &PlaneParams) -> Self {
        let mut layout = Layout::new();
        let loads = LoadTable::new(&mut layout, nodes, SAMPLES, 1);
        let top = layout.stage();
        let top = layout.array(top, "idle.top", 1, 0);
        let stack = layout.stage();
        let stack = layout.array(stack, "idle.stack", nodes.max(1) as usize, 0);
        let affinity = ReqTableConfig::default().build(&mut layout);
        let mut p = Pow3Idle {
            pipeline: Pipeline::with_layout(layout),
            rng: Rng::new(seed),
            loads,
            top,
            stack,
            affinity,
        };
        // Every worker starts idle; node 0 on top.
        for node in (0..nodes).rev() {
            p.control_push(node);
        }
        p
    }
}

impl Pow3Idle {
    /// The idle stack, bottom first (control-plane view).
    pub fn idle(&self) -> Vec<NodeId> {
        (0..self.top.peek(0) as usize)
            .map(|i| self.stack.peek(i))
            .collect()
    }

    /// The queue length the leaf holds for `node`, if it is active.
    pub fn load(&self, node: NodeId) -> Option<u32> {
        self.loads.load(node)
    }

    fn control_push(&mut self, node: NodeId) {
        let top = self.top.peek(0) as usize;
        if top >= self.stack.len() {
            self.stack.control_resize(top + 1, 0);
        }
        self.stack.control_write(top, node);
        self.top.control_write(0, top as u32 + 1);
    }
}

impl DataPlane for Pow3Idle {
    fn handle(&mut self, now: Nanos, input: Input, out: &mut Outbox) {
        match input {
            Input::Task(task) => {
                let (loads, rng, top, stack) =
                    (&mut self.loads, &mut self.rng, &mut self.top, &mut self.stack);
                self.affinity.dispatch(&mut self.pipeline, now, task, out, |pass| {
                    let active = loads.active(pass);
                    if active == 0 {
                        return None;
                    }
                    // Both choices are computed in the one pass, in stage
                    // order; the idle worker wins.
                    let (sampled, _) = loads.choose(pass, rng, active, task.class);
                    let depth = top.update(pass, 0, |t| {
                        let depth = *t;
                        *t = t.saturating_sub(1);
                        depth
                    });
                    Some(match depth {
                        0 => (sampled, Decision::Sampled),
                        d => (stack.read(pass, d as usize - 1), Decision::Idle),
                    })
                });
            }
            Input::Reply { node, qlen, .. } => {
                let pass = self.pipeline.begin();
                if self.loads.report(&pass, node, 0, qlen) == Report::UnknownNode {
                    out.push(Action::Drop(DropReason::UnknownNode));
                    return;
                }
                if qlen == 0 {
                    let cap = self.stack.len() as u32;
                    let depth = self.top.update(&pass, 0, |t| {
                        let depth = *t;
                        if depth < cap {
                            *t += 1;
                        }
                        depth
                    });
                    if depth < cap {
                        self.stack.write(&pass, depth as usize, node);
                    }
                }
            }
            _ => out.push(Action::Drop(DropReason::Unexpected)),
        }
    }

    fn pipeline(&self) -> &Pipeline {
        &self.pipeline
    }
}

impl Control for Pow3Idle {
    /// A worker joins with an empty queue, idle.
    fn add_node(&mut self, node: NodeId, _weight: u32, _now: Nanos, _out: &mut Outbox) {
        if self.loads.control_add(node) {
            self.control_push(node);
        }
    }

    /// The switch CPU rewrites the stack without `node`.
    fn remove_node(&mut self, node: NodeId, _now: Nanos, _out: &mut Outbox) {
        if !self.loads.control_remove(node) {
            return;
        }
        self.affinity.control_forget_node(node);
        let kept: Vec<NodeId> = self.idle().into_iter().filter(|&n| n != node).collect();
        for (i, &n) in kept.iter().enumerate() {
            self.stack.control_write(i, n);
        }
        self.top.control_write(0, kept.len() as u32);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dataplane::Dispatch;
    use crate::baselines::testutil::{done, run};

    fn task(id: u64) -> Input {
        Input::Task(crate::baselines::testutil::task(id))
    }

    /// The one action `input` causes.
    fn one(p: &mut Pow3Idle, input: Input) -> Action {
        let out = run(p, 0, input);
        assert_eq!(out.len(), 1, "{out:?}");
        out[0]
    }

    fn dispatch(p: &mut Pow3Idle, id: u64) -> (NodeId, Decision) {
        match one(p, task(id)) {
            Action::Dispatch(Dispatch { node, decision, .. }) => (node, decision),
            a => panic!("{a:?}"),
        }
    }

    #[test]
    fn idle_workers_first_then_the_shortest_of_three() {
        let mut p = Pow3Idle::build(4, 1, &PlaneParams::default());
        // Every worker starts idle: four idle decisions, each a different worker.
        let mut first: Vec<NodeId> = (0..4).map(|id| dispatch(&mut p, id)).map(|d| d.0).collect();
        assert!(p.idle().is_empty());
        first.sort();
        assert_eq!(first, [0, 1, 2, 3]);
        // Replies report queues 5, 1, 7 and 9: no worker is idle, so every
        // task samples three of four; worker 1 is among any three but one
        // (which holds 0, 2, 3: the shortest is 0's 5).
        for (node, qlen) in [(0, 5), (1, 1), (2, 7), (3, 9)] {
            let reply = Input::Reply {
                node,
                qlen,
                class: 0,
                task: 0,
            };
            assert!(run(&mut p, 0, reply).is_empty());
        }
        for id in 10..200 {
            let (node, d) = dispatch(&mut p, id);
            assert_eq!(d, Decision::Sampled);
            assert!(node == 1 || node == 0, "the longest queues are never chosen: {node}");
        }
        // Worker 2 reports an empty queue: the next task is its, from the stack.
        assert!(run(&mut p, 0, done(2)).is_empty());
        assert_eq!(p.idle(), [2]);
        assert_eq!(dispatch(&mut p, 300), (2, Decision::Idle));
        assert_eq!(dispatch(&mut p, 301).1, Decision::Sampled);
    }

    #[test]
    fn hostile_replies_and_removed_workers() {
        let mut p = Pow3Idle::build(2, 1, &PlaneParams::default());
        assert_eq!(
            one(&mut p, done(9)),
            Action::Drop(DropReason::UnknownNode)
        );
        // Repeated idle reports fill the stack to its capacity, no further.
        let mut out = Outbox::new();
        for _ in 0..10 {
            p.handle(Nanos::ZERO, done(0), &mut out);
        }
        assert_eq!(p.idle().len(), 2);
        p.remove_node(0, Nanos::ZERO, &mut out);
        assert_eq!(p.idle(), [1]);
        for id in 0..20 {
            assert_eq!(dispatch(&mut p, id).0, 1, "only worker 1 is left");
        }
        p.remove_node(1, Nanos::ZERO, &mut out);
        assert_eq!(one(&mut p, task(50)), Action::Drop(DropReason::NoNodes));
        p.add_node(5, 1, Nanos::ZERO, &mut out);
        assert_eq!(dispatch(&mut p, 51), (5, Decision::Idle));
        assert_eq!(
            one(&mut p, Input::IdleAdd { node: 5 }),
            Action::Drop(DropReason::Unexpected)
        );
    }
}
