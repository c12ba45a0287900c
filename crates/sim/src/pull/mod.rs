//! Pull-based scheduling in the simulator (Draconis, EuroSys'24 §8): executors
//! that pull tasks from a central queue, and the systems Draconis is compared
//! with (R2P2 JBSQ, Sparrow, Draconis-Server, RackSched), on one switch with ten
//! 16-executor nodes by default. See docs/draconis.md "Simulator".
//!
//! A separate driver from the push simulator ([`crate::pool`]): pull
//! scheduling has no pools, no fat tree and other messages (job submissions,
//! task requests, no-ops, acknowledgments, error packets, probes), but it
//! reuses the push simulator's event queue, seeded streams, service-time
//! distributions, HDR histograms and config error conventions.

pub mod config;
mod engine;
pub mod metrics;
pub mod report;

use std::path::Path;

use rayon::prelude::*;

pub use config::{PullConfig, PullPolicy, PullSweep};
pub use engine::{mean_job_tasks, run_one, stream};
pub use metrics::{PullMetrics, PullRun, PullSummary};

use crate::error::ConfigError;

/// Everything a run of `cfg` checks before its first event: the config,
/// the service distribution (a trace file resolved against `base`) and
/// every run's data-plane parameters. `netsched check` stops here.
pub fn prepare(
    cfg: &PullConfig,
    base: &Path,
) -> Result<crate::workload::ServiceSampler, ConfigError> {
    cfg.validate()?;
    let sampler = cfg.workload.service.build_relative_to(base)?;
    let levels = cfg.workload.priority_weights.len().clamp(1, 255) as u8;
    for (policy, _) in cfg.runs() {
        engine::checked_params(cfg, policy, levels, cfg.nodes_per_rack())?;
    }
    Ok(sampler)
}

/// Runs every (policy, load) of `cfg` (in parallel; results in config
/// order, each a function of the config and seed alone). `base` resolves a
/// relative trace path in `workload.service`.
pub fn run_config(cfg: &PullConfig, base: &Path) -> Result<Vec<PullRun>, ConfigError> {
    let sampler = prepare(cfg, base)?;
    cfg.runs()
        .into_par_iter()
        .map(|(policy, load)| run_one(cfg, &sampler, policy, load))
        .collect()
}
