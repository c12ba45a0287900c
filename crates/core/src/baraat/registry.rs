//! The registry of the flow family, the counterpart of [`crate::registry`]
//! (push) and [`crate::pull::PullPlane`] (pull): the flow data planes'
//! contract, the parameters they are built from (validated once, here) and
//! one enum holding any of them. The flow policy names are
//! [`crate::names::FlowPolicy`], which maps each to a [`FlowPlaneKind`]
//! (`FlowPolicy::plane`); the flow simulator's packet engine and the lab's
//! UDP switch build their ports with [`FlowPlane::build`] and list none of
//! their own.
//!
//! The flow family has its own contract because its messages are not
//! tasks: a switch port answers a flow's rate request with feedback (Baraat
//! §4.3.2, Alg. 1), learns of flow and task ends, and recomputes its
//! capacity once per control interval. Nothing is dispatched to a node and
//! nothing is queued in the switch, so the push family's
//! `DataPlane::handle(now, Input, &mut Outbox)` would not describe it.

use super::{FifoLm, SpcFeedback, SpcPort, SpcRequest};
use crate::registry::ParamError;
use crate::switch::Pipeline;
use crate::Nanos;

/// A switch port's flow scheduler: what the flow family's drivers call.
/// Rates are bits/s, sizes bytes.
pub trait FlowDataPlane: Send {
    /// A data packet's rate request (its SPC header for this port): the
    /// feedback this port writes into it (Alg. 1).
    fn on_request(&mut self, req: SpcRequest) -> SpcFeedback;
    /// The flow ended (its FIN): return what it held.
    fn on_flow_end(&mut self, task_id: u64, last_demand: f64, last_alloc: f64);
    /// The task ended: forget it.
    fn on_task_end(&mut self, task_id: u64);
    /// Every flow of the task has sent its FIN: forget it and take back
    /// what is still booked to it.
    fn on_task_retired(&mut self, task_id: u64);
    /// Once per control interval, with the input rate and standing queue
    /// measured over it.
    fn on_interval(&mut self, input_bps: f64, queue_bytes: f64);
    /// The sum of the allocations it holds (a control-plane read).
    fn allocated(&self) -> f64;
    /// The capacity it allocates from (a control-plane read): SPC's
    /// virtual capacity of footnote 5.
    fn virtual_capacity(&self) -> f64;
    /// Its pipeline on the switch model: layout and pass counts.
    fn pipeline(&self) -> &Pipeline;
}

impl FlowDataPlane for SpcPort {
    fn on_request(&mut self, req: SpcRequest) -> SpcFeedback {
        self.on_packet(req)
    }
    fn on_flow_end(&mut self, task_id: u64, last_demand: f64, last_alloc: f64) {
        SpcPort::on_flow_end(self, task_id, last_demand, last_alloc)
    }
    fn on_task_end(&mut self, task_id: u64) {
        SpcPort::on_task_end(self, task_id)
    }
    fn on_task_retired(&mut self, task_id: u64) {
        SpcPort::on_task_retired(self, task_id)
    }
    fn on_interval(&mut self, input_bps: f64, queue_bytes: f64) {
        SpcPort::on_interval(self, input_bps, queue_bytes)
    }
    fn allocated(&self) -> f64 {
        SpcPort::allocated(self)
    }
    fn virtual_capacity(&self) -> f64 {
        SpcPort::virtual_capacity(self)
    }
    fn pipeline(&self) -> &Pipeline {
        SpcPort::pipeline(self)
    }
}

/// How an SPC port groups flows into classes (Baraat §4.3.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpcClasses {
    /// Every flow in one class (id 0): Alg. 1 splits the capacity max-min
    /// among all flows, ideal RCP (§5.2.1's fair sharing).
    One,
    /// One class per task id, ordered FIFO with limited multiplexing.
    FifoLm,
}

impl SpcClasses {
    /// The class id a flow of task `task_id` carries in its header.
    pub fn class_of(self, task_id: u64) -> u64 {
        match self {
            SpcClasses::One => 0,
            SpcClasses::FifoLm => task_id,
        }
    }
}

/// The flow data planes, one per variant of [`FlowPlane`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlowPlaneKind {
    /// Smart Priority Class (Alg. 1) with its classes.
    Spc(SpcClasses),
}

/// Everything a flow data plane is built from: its port's capacity, the
/// control interval and FIFO-LM's heavy threshold.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FlowParams {
    /// The port's physical capacity (bits/s).
    pub capacity_bps: f64,
    /// The control interval (the "RTT" of Alg. 1 and 2, footnote 5).
    pub interval: Nanos,
    /// Bytes a task reserves at a port before it is heavy (§4.3.1);
    /// `f64::INFINITY` for none. Ignored by one class.
    pub heavy_threshold_bytes: f64,
}

impl FlowParams {
    /// Refuses what would make Alg. 1 compute nonsense (rates of NaN or
    /// infinity).
    pub fn validate(&self) -> Result<(), ParamError> {
        let bad = |field, msg: &str| {
            Err(ParamError {
                field,
                msg: msg.to_string(),
            })
        };
        if !(self.capacity_bps.is_finite() && self.capacity_bps > 0.0) {
            return bad("capacity_bps", "must be a positive finite rate");
        }
        if self.interval == Nanos::ZERO {
            return bad("interval", "must be positive");
        }
        if self.heavy_threshold_bytes.is_nan() || self.heavy_threshold_bytes <= 0.0 {
            return bad("heavy_threshold_bytes", "must be positive");
        }
        Ok(())
    }
}

/// Any flow data plane: what a driver holds per switch port.
#[derive(Clone, Debug)]
pub enum FlowPlane {
    Spc(SpcPort),
}

impl FlowPlane {
    /// The data plane `kind` over a port of `params`.
    ///
    /// # Panics
    /// If `params` does not pass [`FlowParams::validate`].
    pub fn build(kind: FlowPlaneKind, params: &FlowParams) -> FlowPlane {
        if let Err(e) = params.validate() {
            panic!("flow plane parameters: {e}");
        }
        match kind {
            FlowPlaneKind::Spc(classes) => {
                let threshold = match classes {
                    SpcClasses::One => f64::INFINITY,
                    SpcClasses::FifoLm => params.heavy_threshold_bytes,
                };
                FlowPlane::Spc(SpcPort::new(
                    params.capacity_bps,
                    params.interval.get(),
                    threshold,
                ))
            }
        }
    }

    /// The per-task counters the port holds (FIFO-LM's classes).
    pub fn classifier(&self) -> &FifoLm {
        match self {
            FlowPlane::Spc(p) => p.classifier(),
        }
    }
}

impl FlowDataPlane for FlowPlane {
    #[inline]
    fn on_request(&mut self, req: SpcRequest) -> SpcFeedback {
        match self {
            FlowPlane::Spc(p) => p.on_packet(req),
        }
    }
    fn on_flow_end(&mut self, task_id: u64, last_demand: f64, last_alloc: f64) {
        match self {
            FlowPlane::Spc(p) => p.on_flow_end(task_id, last_demand, last_alloc),
        }
    }
    fn on_task_end(&mut self, task_id: u64) {
        match self {
            FlowPlane::Spc(p) => p.on_task_end(task_id),
        }
    }
    fn on_task_retired(&mut self, task_id: u64) {
        match self {
            FlowPlane::Spc(p) => p.on_task_retired(task_id),
        }
    }
    fn on_interval(&mut self, input_bps: f64, queue_bytes: f64) {
        match self {
            FlowPlane::Spc(p) => p.on_interval(input_bps, queue_bytes),
        }
    }
    fn allocated(&self) -> f64 {
        match self {
            FlowPlane::Spc(p) => p.allocated(),
        }
    }
    fn virtual_capacity(&self) -> f64 {
        match self {
            FlowPlane::Spc(p) => p.virtual_capacity(),
        }
    }
    fn pipeline(&self) -> &Pipeline {
        match self {
            FlowPlane::Spc(p) => p.pipeline(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PARAMS: FlowParams = FlowParams {
        capacity_bps: 100e6,
        interval: Nanos::from_millis(1),
        heavy_threshold_bytes: 1e12,
    };

    fn request(task_id: u64, demand: f64) -> SpcRequest {
        SpcRequest::first(task_id, demand)
    }

    #[test]
    fn a_built_plane_answers_as_the_port_it_holds() {
        for classes in [SpcClasses::One, SpcClasses::FifoLm] {
            let mut plane = FlowPlane::build(FlowPlaneKind::Spc(classes), &PARAMS);
            let mut port = SpcPort::new(
                PARAMS.capacity_bps,
                PARAMS.interval.get(),
                match classes {
                    SpcClasses::One => f64::INFINITY,
                    SpcClasses::FifoLm => PARAMS.heavy_threshold_bytes,
                },
            );
            for (task, demand) in [(1, 80e6), (2, 80e6), (1, 10e6)] {
                let task = classes.class_of(task);
                assert_eq!(
                    plane.on_request(request(task, demand)),
                    port.on_packet(request(task, demand))
                );
            }
            assert_eq!(FlowDataPlane::allocated(&plane), port.allocated());
        }
        // One class shares; FIFO-LM serves the first task first.
        assert_eq!(SpcClasses::One.class_of(7), 0);
        assert_eq!(SpcClasses::FifoLm.class_of(7), 7);
    }

    #[test]
    fn parameters_that_would_make_nonsense_rates_are_refused_by_name() {
        let with = |f: fn(&mut FlowParams)| {
            let mut p = PARAMS;
            f(&mut p);
            p.validate().map_err(|e| e.field)
        };
        assert_eq!(with(|_| ()), Ok(()));
        assert_eq!(with(|p| p.capacity_bps = f64::NAN), Err("capacity_bps"));
        assert_eq!(with(|p| p.capacity_bps = 0.0), Err("capacity_bps"));
        assert_eq!(with(|p| p.interval = Nanos::ZERO), Err("interval"));
        assert_eq!(
            with(|p| p.heavy_threshold_bytes = -1.0),
            Err("heavy_threshold_bytes")
        );
        assert_eq!(with(|p| p.heavy_threshold_bytes = f64::INFINITY), Ok(()));
    }
}
