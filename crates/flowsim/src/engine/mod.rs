//! The event-driven flow-level engine.
//!
//! Rates change only when a flow starts or ends (or, under Baraat, when a
//! task crosses the heavy threshold at a port), so the engine jumps from one
//! such event to the next; between events every flow moves at a constant
//! rate. After the events of one instant it recomputes the rates of the
//! *connected component* of flows that the change can affect, not of the
//! whole network: the component is grown from the changed links through
//! links that can bind. A switch link whose capacity is at least the sum of
//! its flows' NIC rates can never be a bottleneck, so it is not followed
//! (otherwise the 600 Gbps pod links would glue every cross-pod flow into one
//! component). Host links are always followed: they are where Baraat's
//! classifier counts a task's bytes.
//!
//! Allocation (`Engine::recompute_component`, `Engine::fill_group`) is
//! strict priority between priority keys and max-min fairness within a key,
//! computed by water-filling key by key on the capacity the higher keys
//! left: the fixed point of SPC's Alg. 1 and 2 (§4.3.2-4.3.3; see
//! `allocation`). Every policy is a choice of key.
//!
//! The engine is split along its seams:
//! - `events`: the clock, the queue of arrivals and delayed flow starts,
//!   and what the events of one instant changed;
//! - `tasks`: task arrivals, flow starts and finishes, task completions
//!   (a task's flows start in stages behind gates);
//! - `fabric`: the flows and the links they cross;
//! - `allocation`: the component walk and the priority water-fill;
//! - `groups`: rate groups (flows frozen together at one level) with
//!   their virtual clocks and finish times;
//! - `fast_path`: departures and starts handled without a recomputation;
//! - `admission`: STF's non-preemptive admission of tasks at ports;
//! - `classifier`: Baraat's per-port FIFO-LM classifiers (§3.3, §4.3.1)
//!   and their per-task byte counters;
//! - `crossings`: pFabric's order changes between events (per-link
//!   timers);
//! - `keys`: the packed (float, id) keys and per-task counts they share;
//! - `checks`: the invariants and the from-scratch comparison (tests).

mod admission;
mod allocation;
mod checks;
mod classifier;
mod crossings;
mod events;
mod fabric;
mod fast_path;
mod groups;
mod keys;
mod tasks;

use crate::iheap::IndexedHeap;
use crate::policy::Policy;
use crate::topology::{LinkId, Topology};
use crate::workload::TaskSpec;

use allocation::{Scratch, WaterFill};
use classifier::Classifiers;
use events::{Ev, EventQueue, InstantChanges};
use fabric::Fabric;
use groups::RateGroups;
use tasks::TaskTable;

/// No group, no link (a `u32` id's null).
const NONE: u32 = u32::MAX;

/// Parameters of a run beyond the topology and the tasks.
#[derive(Clone, Debug)]
pub struct EngineOpts {
    pub policy: Policy,
    /// Baraat's heavy threshold (bytes reserved at a port).
    pub heavy_threshold: f64,
}

/// One finished task.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TaskResult {
    pub index: u64,
    pub task_id: u64,
    pub arrival_ns: u64,
    pub completion_ns: u64,
    pub bytes: u64,
}

/// Counters of a run (what the engine did, not what the tasks saw).
#[derive(Clone, Debug, Default)]
pub struct EngineStats {
    pub events: u64,
    pub recomputes: u64,
    pub flows_recomputed: u64,
    pub flows: u64,
    /// Departures handled by the rate-group fast path (not counted in
    /// `recomputes`).
    pub fast_departures: u64,
    /// Of those, groups emptied whose flows behind were promoted.
    pub promotions: u64,
    /// Flow starts joining a rate group without a recomputation.
    pub fast_arrivals: u64,
    /// pFabric: swaps of two flows' order on a link between other events.
    pub crossings: u64,
}

/// One run's simulator: the state of every concern, each in its own
/// sub-struct, and the knobs and counters that tests and `run` read.
#[derive(Clone)]
pub struct Engine {
    topo: Topology,
    opts: EngineOpts,
    events: EventQueue,
    instant: InstantChanges,
    fabric: Fabric,
    groups: RateGroups,
    tasks: TaskTable,
    baraat: Classifiers,
    /// pFabric: per link, the next time two of its flows swap order
    /// (`crossings`).
    crossings: IndexedHeap,
    fill: WaterFill,
    scratch: Scratch,
    /// Check the rate groups' invariants after every recomputation, and
    /// every fast-path result against a from-scratch recomputation (tests).
    pub check: bool,
    /// Recompute every active flow at every change (the from-scratch
    /// reference the component recomputation is tested against).
    pub full_recompute: bool,
    /// pFabric's order-swap timers (`crossings`); off only to time a run
    /// without them (the benchmark's reference: the order then changes
    /// only at flow starts and ends, which is not pFabric).
    pub swap_timers: bool,
    pub stats: EngineStats,
}

impl Engine {
    pub fn new(topo: Topology, opts: EngineOpts) -> Self {
        let nl = topo.links() as usize;
        let hosts = topo.hosts as usize;
        Engine {
            topo,
            opts,
            events: EventQueue::default(),
            instant: InstantChanges::default(),
            fabric: Fabric::new(nl),
            groups: RateGroups::default(),
            tasks: TaskTable::default(),
            baraat: Classifiers::new(hosts),
            crossings: IndexedHeap::new(),
            fill: WaterFill::default(),
            scratch: Scratch::default(),
            check: false,
            full_recompute: false,
            swap_timers: true,
            stats: EngineStats::default(),
        }
    }

    /// Run every task of `source` (sorted by arrival) to completion.
    pub fn run(&mut self, source: impl Iterator<Item = TaskSpec>) -> Vec<TaskResult> {
        let mut source = source.peekable();
        let mut index = 0u64;
        if let Some(t) = source.peek() {
            self.events.push(t.arrival_ns, Ev::Arrival);
        }
        loop {
            let te = self.events.next_time();
            let tf = self.groups.finish.peek().map(|(t, _)| t);
            let tr = self.baraat.reclass.peek().map(|(t, _)| t);
            let tc = self.crossings.peek().map(|(t, _)| t);
            let Some(t) = [te, tf, tr, tc].into_iter().flatten().min() else {
                break;
            };
            self.events.now = t;
            // Every event of this instant, then one recomputation.
            while let Some((t2, g)) = self.groups.finish.peek() {
                if t2 != t {
                    break;
                }
                let grp = &self.groups.all[g as usize];
                let fid = grp.members[grp.head as usize];
                self.stats.events += 1;
                self.finish_flow(fid);
            }
            while let Some(ev) = self.events.pop_at(t) {
                self.stats.events += 1;
                match ev {
                    Ev::Arrival => {
                        // All tasks arriving at this instant.
                        while source.peek().is_some_and(|s| s.arrival_ns <= t) {
                            let spec = source.next().expect("peeked");
                            self.arrive(spec, index);
                            index += 1;
                        }
                        if let Some(nx) = source.peek() {
                            self.events.push(nx.arrival_ns, Ev::Arrival);
                        }
                    }
                    Ev::Start { task, spec } => self.start_flow(task, spec),
                }
            }
            // Baraat: a task crossed the heavy threshold at a port; the
            // recomputation there charges the counters and re-keys.
            while let Some(p) = self.baraat.reclass.pop_at(t) {
                self.stats.events += 1;
                self.instant.dirty.push(self.topo.host_down(p));
            }
            // pFabric: two flows of a link swap order; its component is
            // re-keyed.
            while let Some(l) = self.crossings.pop_at(t) {
                self.stats.events += 1;
                self.stats.crossings += 1;
                self.instant.dirty.push(l);
            }
            if !self.instant.dirty.is_empty() || !self.instant.dep_dirty.is_empty() {
                self.recompute();
                if self.check {
                    self.check_invariants();
                }
            }
            self.instant.end();
        }
        std::mem::take(&mut self.tasks.results)
    }

    /// Sum of the current rates (bits/s) of the flows on a link.
    pub fn link_load(&self, l: LinkId) -> f64 {
        self.fabric.links[l as usize]
            .flows
            .iter()
            .map(|&f| self.rate_of(f))
            .sum()
    }

    pub fn topology(&self) -> &Topology {
        &self.topo
    }
}
