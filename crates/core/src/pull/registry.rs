//! One registry of the pull-family schedulers, the counterpart of
//! [`crate::registry`]: the parameters they take (validated once, here) and
//! one enum holding any of them. The pull simulator and the pull runtime
//! daemon hold a [`PullPlane`] and list no schedulers of their own; the
//! policy names live with the configs (`netsched_config::pull::PullPolicy`,
//! which maps each to a [`PullPlaneKind`]).

use super::r2p2::{R2p2Config, R2p2Jbsq};
use super::server::DraconisServer;
use super::sparrow::{SparrowConfig, SparrowScheduler};
use super::{Draconis, DraconisConfig, PullDataPlane, PullInput, PullOutbox};
use crate::limits;
use crate::registry::ParamError;
use crate::switch::Pipeline;
use crate::Nanos;

/// The pull schedulers, one per variant of [`PullPlane`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PullPlaneKind {
    /// Draconis in the switch (§4), any of its policies.
    Switch,
    /// Draconis-Server (§8): the same state machine, passes run inline.
    Server,
    /// R2P2 JBSQ(k) in the switch (Draconis §2.2, §8.3).
    Jbsq,
    /// One Sparrow scheduler (§2.3.2, §8.1).
    Sparrow,
}

/// Everything a pull scheduler is built from besides its executor count and
/// seed, with one set of limits for every driver (`crate::limits`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PullParams {
    pub draconis: DraconisConfig,
    pub r2p2: R2p2Config,
    pub sparrow: SparrowConfig,
}

impl PullParams {
    /// Refuses what a scheduler's constructor would refuse with a panic.
    /// Fields are named as the configs name them.
    pub fn validate(&self) -> Result<(), ParamError> {
        let checks = [
            (
                "draconis.capacity",
                limits::queue_capacity(self.draconis.capacity),
            ),
            (
                "priority_levels",
                limits::priority_levels(self.draconis.levels.into()),
            ),
            ("r2p2.jbsq_bound", limits::jbsq_bound(self.r2p2.jbsq_bound)),
            (
                "sparrow.probe_ratio",
                limits::sparrow_probe_ratio(self.sparrow.probe_ratio),
            ),
            (
                "sparrow.max_jobs",
                limits::sparrow_max_jobs(self.sparrow.max_jobs),
            ),
        ];
        for (field, check) in checks {
            if let Err(e) = check {
                return Err(ParamError {
                    field,
                    msg: e.to_string(),
                });
            }
        }
        Ok(())
    }
}

/// Any pull scheduler: what a driver holds per scheduler instance. Dispatch
/// is a `match`, not a virtual call, on the simulator's hot path.
#[derive(Clone, Debug)]
pub enum PullPlane {
    Switch(Box<Draconis>),
    Server(Box<DraconisServer>),
    Jbsq(Box<R2p2Jbsq>),
    Sparrow(Box<SparrowScheduler>),
}

macro_rules! each_pull_plane {
    ($self:expr, $dp:ident => $e:expr) => {
        match $self {
            PullPlane::Switch($dp) => $e,
            PullPlane::Server($dp) => $e,
            PullPlane::Jbsq($dp) => $e,
            PullPlane::Sparrow($dp) => $e,
        }
    };
}

impl PullPlane {
    /// The `kind` scheduler over executors `0..executors`. `params` must
    /// have passed [`PullParams::validate`]; `seed` drives Sparrow's
    /// sampling (the switches make no random choice).
    pub fn build(kind: PullPlaneKind, executors: u32, seed: u64, params: &PullParams) -> PullPlane {
        match kind {
            PullPlaneKind::Switch => PullPlane::Switch(Box::new(Draconis::new(params.draconis))),
            PullPlaneKind::Server => {
                PullPlane::Server(Box::new(DraconisServer::new(params.draconis)))
            }
            PullPlaneKind::Jbsq => PullPlane::Jbsq(Box::new(R2p2Jbsq::new(executors, params.r2p2))),
            PullPlaneKind::Sparrow => PullPlane::Sparrow(Box::new(SparrowScheduler::new(
                executors,
                params.sparrow,
                seed,
            ))),
        }
    }

    pub fn kind(&self) -> PullPlaneKind {
        match self {
            PullPlane::Switch(_) => PullPlaneKind::Switch,
            PullPlane::Server(_) => PullPlaneKind::Server,
            PullPlane::Jbsq(_) => PullPlaneKind::Jbsq,
            PullPlane::Sparrow(_) => PullPlaneKind::Sparrow,
        }
    }

    /// Speaks the Draconis protocol: task requests and job acknowledgments.
    pub fn is_draconis(&self) -> bool {
        matches!(self, PullPlane::Switch(_) | PullPlane::Server(_))
    }

    /// Pass counters of the switch pipeline: (first passes, resubmissions);
    /// a Draconis-Server's inline steps beyond the first per message count
    /// as resubmissions, Sparrow has none.
    pub fn passes(&self) -> (u64, u64) {
        self.pipeline()
            .map_or((0, 0), |p| (p.first_passes, p.resubmissions))
    }

    /// Tasks waiting in the scheduler: Draconis' queues, or Sparrow's jobs
    /// with outstanding probes; R2P2 holds none.
    pub fn backlog(&self) -> u64 {
        match self {
            PullPlane::Switch(d) => d.queue().len() as u64,
            PullPlane::Server(s) => s.scheduler().queue().len() as u64,
            PullPlane::Jbsq(_) => 0,
            PullPlane::Sparrow(s) => s.active_jobs() as u64,
        }
    }

    /// Draconis-Server: switch passes run inline so far (its cost model).
    pub fn server_steps(&self) -> Option<u64> {
        match self {
            PullPlane::Server(s) => Some(s.steps),
            _ => None,
        }
    }
}

impl PullDataPlane for PullPlane {
    #[inline]
    fn handle(&mut self, now: Nanos, input: PullInput, out: &mut PullOutbox) {
        each_pull_plane!(self, dp => dp.handle(now, input, out))
    }

    fn pipeline(&self) -> Option<&Pipeline> {
        each_pull_plane!(self, dp => PullDataPlane::pipeline(dp.as_ref()))
    }

    fn outbox_capacity(&self) -> usize {
        each_pull_plane!(self, dp => dp.outbox_capacity())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pull::{ExecInfo, JobSubmission, PullAction, TaskInfo, TaskList};

    const KINDS: [PullPlaneKind; 4] = [
        PullPlaneKind::Switch,
        PullPlaneKind::Server,
        PullPlaneKind::Jbsq,
        PullPlaneKind::Sparrow,
    ];

    #[test]
    fn refused_values_name_their_field() {
        let bad = |f: fn(&mut PullParams)| {
            let mut p = PullParams::default();
            f(&mut p);
            p.validate().unwrap_err().field
        };
        assert!(PullParams::default().validate().is_ok());
        assert_eq!(bad(|p| p.draconis.capacity = 3), "draconis.capacity");
        assert_eq!(bad(|p| p.draconis.levels = 0), "priority_levels");
        assert_eq!(bad(|p| p.r2p2.jbsq_bound = 0), "r2p2.jbsq_bound");
        assert_eq!(bad(|p| p.sparrow.probe_ratio = 0), "sparrow.probe_ratio");
        assert_eq!(bad(|p| p.sparrow.max_jobs = 0), "sparrow.max_jobs");
    }

    /// Every scheduler is built as its kind and answers a message its role
    /// never receives with a counted drop rather than a panic.
    #[test]
    fn every_kind_builds_and_refuses_foreign_messages() {
        let params = PullParams {
            draconis: DraconisConfig::fcfs(64),
            ..PullParams::default()
        };
        for kind in KINDS {
            let mut plane = PullPlane::build(kind, 4, 7, &params);
            assert_eq!(plane.kind(), kind);
            let mut out = plane.outbox();
            let foreign = match kind {
                PullPlaneKind::Sparrow | PullPlaneKind::Jbsq => {
                    PullInput::TaskRequest(ExecInfo::default())
                }
                _ => PullInput::GetTask { worker: 0, slot: 0 },
            };
            plane.handle(Nanos::ZERO, foreign, &mut out);
            assert_eq!(
                out.as_slice(),
                [PullAction::Drop(crate::DropReason::Unexpected)],
                "{kind:?}"
            );
        }
    }

    #[test]
    fn a_job_reaches_an_executor_through_every_kind() {
        let params = PullParams {
            draconis: DraconisConfig::fcfs(64),
            ..PullParams::default()
        };
        for kind in KINDS {
            let mut plane = PullPlane::build(kind, 2, 7, &params);
            let mut out = plane.outbox();
            let task = TaskInfo::new(9);
            let first = match kind {
                PullPlaneKind::Jbsq => PullInput::Request { client: 1, task },
                _ => PullInput::JobSubmission(JobSubmission {
                    client: 1,
                    job: 3,
                    tasks: TaskList::from_slice(&[task]).unwrap(),
                }),
            };
            plane.handle(Nanos::ZERO, first, &mut out);
            let follow_up = match (kind, out.as_slice()) {
                (PullPlaneKind::Sparrow, [PullAction::Probe { worker, slot }, ..]) => {
                    Some(PullInput::GetTask {
                        worker: *worker,
                        slot: *slot,
                    })
                }
                (PullPlaneKind::Switch | PullPlaneKind::Server, _) => {
                    Some(PullInput::TaskRequest(ExecInfo::default()))
                }
                _ => None,
            };
            if let Some(input) = follow_up {
                out.clear();
                plane.handle(Nanos::new(1), input, &mut out);
            }
            assert!(
                out.as_slice().iter().any(|a| matches!(
                    a,
                    PullAction::AssignTask { client: 1, task: t, .. } if t.id == 9
                )),
                "{kind:?}: {:?}",
                out.as_slice()
            );
        }
    }
}
