//! The data planes a pool's simulation drives, one enum per layer so that
//! each event is dispatched by a `match` rather than a virtual call.

use netsched_core::baselines::{
    IdleOnly, Jbsq, Jiq, Jsq, PowKInstant, RandomDispatch, RoundRobin, UniformLb,
};
use netsched_core::horus::{ConnTableConfig, HorusLeaf, HorusSpine};
use netsched_core::racksched::{RackSched, RackSchedSpine};
use netsched_core::switch::Pipeline;
use netsched_core::{DataPlane, Input, NodeId, Outbox};

/// A scheduler at the spine layer, or the one flat scheduler of a pool.
#[allow(clippy::large_enum_variant)]
pub enum Upper {
    Horus(HorusSpine),
    RsSpine(RackSchedSpine),
    Lb(UniformLb),
    Random(RandomDispatch),
    RoundRobin(RoundRobin),
    Jsq(Jsq),
    Jiq(Jiq),
    PowK(PowKInstant),
    /// Power-of-k with delayed updates is RackSched's policy over the flat pool.
    Delayed(RackSched),
    IdleOnly(IdleOnly),
    Central(netsched_core::baselines::CentralQueue),
    /// R2P2's JBSQ(k) router.
    Jbsq(Jbsq),
}

/// A scheduler at the leaf layer.
#[allow(clippy::large_enum_variant)]
pub enum Lower {
    Horus(HorusLeaf),
    Rs(RackSched),
    /// Flat policies: the leaf only forwards.
    Forward,
}

macro_rules! each_upper {
    ($self:ident, $dp:ident => $e:expr) => {
        match $self {
            Upper::Horus($dp) => $e,
            Upper::RsSpine($dp) => $e,
            Upper::Lb($dp) => $e,
            Upper::Random($dp) => $e,
            Upper::RoundRobin($dp) => $e,
            Upper::Jsq($dp) => $e,
            Upper::Jiq($dp) => $e,
            Upper::PowK($dp) => $e,
            Upper::Delayed($dp) => $e,
            Upper::IdleOnly($dp) => $e,
            Upper::Central($dp) => $e,
            Upper::Jbsq($dp) => $e,
        }
    };
}

fn counts(p: &Pipeline) -> (u64, u64) {
    (p.first_passes, p.resubmissions)
}

impl Upper {
    #[inline]
    pub fn handle(&mut self, now: u64, input: Input, out: &mut Outbox) {
        each_upper!(self, dp => dp.handle(now, input, out))
    }

    pub fn passes(&self) -> (u64, u64) {
        each_upper!(self, dp => counts(dp.pipeline()))
    }

    #[inline]
    pub fn writes_state_only(&self, input: &Input) -> bool {
        each_upper!(self, dp => dp.writes_state_only(input))
    }

    /// Control plane: node `node` (a rack, or a worker for flat policies) is gone.
    pub fn remove_node(&mut self, node: NodeId) {
        match self {
            Upper::Horus(s) => s.control_remove_rack(node),
            Upper::RsSpine(s) => s.control_remove_node(node),
            Upper::Lb(s) => s.control_remove_node(node),
            Upper::Random(s) => s.control_remove_node(node),
            Upper::RoundRobin(s) => s.control_remove_node(node),
            Upper::Jsq(s) => s.control_remove_node(node),
            Upper::Jiq(s) => s.control_remove_node(node),
            Upper::PowK(s) => s.control_remove_node(node),
            Upper::Delayed(s) => s.control_remove_node(node),
            Upper::IdleOnly(s) => s.control_remove_node(node),
            Upper::Central(s) => s.control_remove_node(node),
            Upper::Jbsq(s) => s.control_remove_node(node),
        }
    }

    /// Control plane: node `node` exists with `workers` workers behind it. A
    /// central or JBSQ queue hands waiting tasks to a new worker at once (in `out`).
    pub fn set_node(&mut self, node: NodeId, workers: u32, now: u64, out: &mut Outbox) {
        match self {
            Upper::Horus(s) => s.control_set_rack(node, workers),
            Upper::RsSpine(s) => s.control_add_node(node),
            Upper::Lb(s) => s.control_add_node(node),
            Upper::Random(s) => s.control_add_node(node),
            Upper::RoundRobin(s) => s.control_add_node(node),
            Upper::Jsq(s) => s.control_add_node(node),
            Upper::Jiq(s) => s.control_add_node(node),
            Upper::PowK(s) => s.control_add_node(node),
            Upper::Delayed(s) => s.control_add_node(node),
            Upper::IdleOnly(s) => s.control_add_node(node),
            Upper::Central(s) => s.control_add_node(node, now, out),
            Upper::Jbsq(s) => s.control_add_node(node, now, out),
        }
    }
}

impl Lower {
    #[inline]
    pub fn handle(&mut self, now: u64, input: Input, out: &mut Outbox) {
        match self {
            Lower::Horus(dp) => dp.handle(now, input, out),
            Lower::Rs(dp) => dp.handle(now, input, out),
            Lower::Forward => {}
        }
    }

    pub fn passes(&self) -> (u64, u64) {
        match self {
            Lower::Horus(dp) => counts(dp.pipeline()),
            Lower::Rs(dp) => counts(dp.pipeline()),
            Lower::Forward => (0, 0),
        }
    }

    pub fn remove_node(&mut self, node: NodeId, out: &mut Outbox) {
        match self {
            Lower::Horus(l) => l.control_remove_worker(node, out),
            Lower::Rs(l) => l.control_remove_node(node),
            Lower::Forward => {}
        }
    }

    pub fn add_node(&mut self, node: NodeId, out: &mut Outbox) {
        match self {
            Lower::Horus(l) => l.control_add_worker(node, out),
            Lower::Rs(l) => l.control_add_node(node),
            Lower::Forward => {}
        }
    }

    /// What a leaf re-announces to a spine it was newly linked to (Horus §A.3):
    /// whether it has idle workers and its average load.
    pub fn announce(&mut self) -> Option<(bool, u32)> {
        match self {
            Lower::Horus(l) => Some(l.control_resync()),
            Lower::Rs(_) | Lower::Forward => None,
        }
    }

    /// Rack weight for the upper layer's 1/w factor (Horus only).
    pub fn workers(&self) -> Option<u32> {
        match self {
            Lower::Horus(l) => Some(l.workers()),
            Lower::Rs(_) | Lower::Forward => None,
        }
    }
}

pub fn conn_table() -> ConnTableConfig {
    // Simulated tasks are single-packet (the common case of Horus §3.2), so the
    // connection table stays empty; keep it small.
    ConnTableConfig {
        stages: 1,
        slots_per_stage: 1,
        timeout_ns: 20_000_000,
    }
}
