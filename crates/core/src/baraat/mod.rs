//! Baraat (Dogar et al., SIGCOMM'14): task-aware flow scheduling as sans-IO
//! state machines.
//!
//! * [`TaskIdCounter`]: the task-id counters of the entry points (§4.1).
//! * [`FifoLm`]: the classifier of one switch port (§3.3, §4.3.1): per-task
//!   counters in task-id order, heavy-task detection, FIFO with limited
//!   multiplexing.
//! * [`SpcPort`]: Smart Priority Class at one switch output port, Alg. 1
//!   (§4.3.2) plus footnote 5's virtual capacity, written against the
//!   switch model ([`crate::switch`]): its register arrays, stages and
//!   passes are checked like every other data plane's (docs/switch-model.md).
//! * [`SpcSender`]: the sender's demand of Alg. 2 (§4.3.3).
//! * [`FlowPlane`] (`registry.rs`): the flow family's registry, with its
//!   contract [`FlowDataPlane`]; the drivers build their ports through it.
//!
//! None of them owns a clock, socket or thread: a driver hands them a packet
//! header's fields (or an interval tick) and gets back a rate or a decision.
//! Drivers: the flow simulator (crates/flowsim: its fluid engine keeps a
//! [`FifoLm`] per port and computes the fixed point [`SpcPort`] and
//! [`SpcSender`] converge to; its packet-level engine runs them per
//! request), and the lab's UDP switch (crates/lab/src/baraat: the same per
//! datagram, with the wire format of `netsched_proto::baraat`).
//!
//! Rates are bits per second (f64); the paper's header encodes them as
//! bytes/µs in one byte (§4.4 "Header"), which is a wire concern, not the
//! algorithm's.

mod classifier;
mod port;
mod registry;
mod sender;

pub use classifier::{FifoLm, TaskCounters, Tasks};
pub use port::SpcPort;
pub use registry::{FlowDataPlane, FlowParams, FlowPlane, FlowPlaneKind, SpcClasses};
pub use sender::SpcSender;

/// Baraat §4.1: a monotonically increasing counter per entry point. With `n`
/// counters, counter `i` starts at `i + 1` and steps by `n`, so ids from
/// different load balancers interleave and never collide.
#[derive(Clone, Debug)]
pub struct TaskIdCounter {
    next: u64,
    step: u64,
}

impl TaskIdCounter {
    /// Counter `index` (0-based) of `count` counters in the system.
    pub fn new(index: u64, count: u64) -> Self {
        let count = count.max(1);
        TaskIdCounter {
            next: index % count + 1,
            step: count,
        }
    }

    /// The id of the task arriving now through this entry point.
    pub fn next_id(&mut self) -> u64 {
        let id = self.next;
        self.next += self.step;
        id
    }
}

/// What a data packet's SPC header carries for one switch (Baraat §4.4
/// "Header"): the flow's task id, its demand for the next RTT, and what this
/// switch gave it in the previous RTT (so the switch can return it, Alg. 1
/// line 1).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SpcRequest {
    pub task_id: u64,
    /// Demand for the coming RTT (bits/s).
    pub demand: f64,
    /// Demand the flow announced last time (0 for a new flow).
    pub prev_demand: f64,
    /// Allocation (AR) this switch gave last time (0 for a new flow).
    pub prev_alloc: f64,
    /// True on the flow's first packet.
    pub new_flow: bool,
}

#[cfg(test)]
impl SpcRequest {
    /// A new flow's first request (the unit tests' usual one).
    pub(crate) fn first(task_id: u64, demand: f64) -> SpcRequest {
        SpcRequest {
            task_id,
            demand,
            prev_demand: 0.0,
            prev_alloc: 0.0,
            new_flow: true,
        }
    }
}

/// Alg. 1's output for one switch: actual rate and nominal rate (bits/s).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SpcFeedback {
    pub ar: f64,
    pub nr: f64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_interleave() {
        let mut a = TaskIdCounter::new(0, 2);
        let mut b = TaskIdCounter::new(1, 2);
        assert_eq!(
            (a.next_id(), b.next_id(), a.next_id(), b.next_id()),
            (1, 2, 3, 4)
        );
        let mut one = TaskIdCounter::new(0, 1);
        assert_eq!((one.next_id(), one.next_id()), (1, 2));
    }
}
