//! The control plane's one interface to every push data plane: the switch
//! CPU's operations (Horus §3.2, §A.2-A.3; RackSched §3.2) with the same
//! arguments everywhere, so a driver (the simulator, the runtime daemon, the
//! controller's hooks) adds, removes and resynchronizes nodes without
//! knowing which data plane it holds.
//!
//! Each data plane keeps its own `control_*` methods, named for what they
//! do to its registers; this trait maps the driver's three operations onto
//! them.

use crate::baselines::{IdleOnly, Jbsq, Jiq, Jsq, PowKInstant, RandomDispatch, RoundRobin};
use crate::horus::{HorusLeaf, HorusSpine};
use crate::racksched::{RackSched, RackSchedSpine};
use crate::Nanos;
use crate::{NodeId, Outbox};

/// What the control plane does to a data plane's node set.
pub trait Control {
    /// `node` is schedulable from `now` on, standing for `weight` workers:
    /// a rack's live workers at a Horus spine (the 1/w of §A.2), 1 for a
    /// worker. A data plane holding tasks (a central queue, JBSQ) may hand
    /// some to the new node at once, into `out`.
    fn add_node(&mut self, node: NodeId, weight: u32, now: Nanos, out: &mut Outbox);

    /// No new task goes to `node` from `now` on. A Horus leaf that loses its
    /// last idle worker tells its spine so (idleRemove, §A.3), into `out`.
    fn remove_node(&mut self, node: NodeId, now: Nanos, out: &mut Outbox);

    /// What a leaf re-announces to a spine it was newly linked to (Horus
    /// §A.3): whether it has an idle worker, and its average load (16.16).
    /// None for data planes that announce nothing upstream.
    fn resync(&mut self) -> Option<(bool, u32)> {
        None
    }

    /// The control plane's periodic timer (soft state,
    /// [`crate::horus::HorusOptions::soft_state_ns`]): a Horus leaf re-sends
    /// its state upstream when due, a spine forgets racks that stopped
    /// refreshing theirs. Drivers call it often (every few milliseconds);
    /// the data plane decides what is due. Off the per-task path; a no-op
    /// for planes without soft state.
    fn tick(&mut self, _now: Nanos, _out: &mut Outbox) {}
}

impl Control for HorusLeaf {
    fn add_node(&mut self, node: NodeId, _weight: u32, _now: Nanos, out: &mut Outbox) {
        self.control_add_worker(node, out);
    }
    fn remove_node(&mut self, node: NodeId, _now: Nanos, out: &mut Outbox) {
        self.control_remove_worker(node, out);
    }
    fn resync(&mut self) -> Option<(bool, u32)> {
        Some(self.control_resync())
    }
    fn tick(&mut self, now: Nanos, out: &mut Outbox) {
        self.control_tick(now.get(), out);
    }
}

impl Control for HorusSpine {
    fn add_node(&mut self, node: NodeId, weight: u32, _now: Nanos, _out: &mut Outbox) {
        self.control_set_rack(node, weight);
    }
    fn remove_node(&mut self, node: NodeId, _now: Nanos, _out: &mut Outbox) {
        self.control_remove_rack(node);
    }
    fn tick(&mut self, now: Nanos, _out: &mut Outbox) {
        self.control_expire(now.get());
    }
}

/// A central queue is JBSQ without a bound (`CentralQueue = Jbsq`).
impl Control for Jbsq {
    fn add_node(&mut self, node: NodeId, _weight: u32, now: Nanos, out: &mut Outbox) {
        self.control_add_node(node, now.get(), out);
    }
    fn remove_node(&mut self, node: NodeId, _now: Nanos, _out: &mut Outbox) {
        self.control_remove_node(node);
    }
}

/// Data planes whose node set is a membership bit per node: adding or
/// removing one emits nothing and needs no time.
macro_rules! membership_control {
    ($($plane:ty),* $(,)?) => {$(
        impl Control for $plane {
            fn add_node(&mut self, node: NodeId, _weight: u32, _now: Nanos, _out: &mut Outbox) {
                self.control_add_node(node);
            }
            fn remove_node(&mut self, node: NodeId, _now: Nanos, _out: &mut Outbox) {
                self.control_remove_node(node);
            }
        }
    )*};
}

/// RS-H soft state: the leaf re-reports, the spine expires.
impl Control for RackSched {
    fn add_node(&mut self, node: NodeId, _weight: u32, _now: Nanos, _out: &mut Outbox) {
        self.control_add_node(node);
    }
    fn remove_node(&mut self, node: NodeId, _now: Nanos, _out: &mut Outbox) {
        self.control_remove_node(node);
    }
    fn tick(&mut self, now: Nanos, out: &mut Outbox) {
        self.control_tick(now.get(), out);
    }
}

impl Control for RackSchedSpine {
    fn add_node(&mut self, node: NodeId, _weight: u32, _now: Nanos, _out: &mut Outbox) {
        self.control_add_node(node);
    }
    fn remove_node(&mut self, node: NodeId, _now: Nanos, _out: &mut Outbox) {
        self.control_remove_node(node);
    }
    fn tick(&mut self, now: Nanos, _out: &mut Outbox) {
        self.control_expire(now.get());
    }
}

membership_control!(
    // Also `UniformLb`, the same data plane over racks.
    RandomDispatch,
    RoundRobin,
    Jsq,
    Jiq,
    PowKInstant,
    IdleOnly,
);
