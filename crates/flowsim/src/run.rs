//! Running a config: one engine run per policy (and per swept threshold).

use std::time::Instant;

use netsched_config::ConfigError;

use crate::config::FlowConfig;
use crate::engine::{Engine, EngineOpts, EngineStats, TaskResult};
use crate::policy::Policy;
use crate::workload::{Generator, TaskSpec};
use netsched_core::baraat::TaskIdCounter;

/// One policy's run.
#[derive(Clone, Debug)]
pub struct RunResult {
    pub policy: Policy,
    /// Heavy-threshold percentile (Baraat runs), for the Fig. 12 sweep.
    pub threshold_percentile: Option<f64>,
    pub threshold_bytes: Option<f64>,
    pub tasks: Vec<TaskResult>,
    pub stats: EngineStats,
    pub wall_s: f64,
}

impl RunResult {
    pub fn label(&self) -> String {
        match self.threshold_percentile {
            Some(p) => format!("{}@p{}", self.policy.name(), (p * 100.0).round()),
            None => self.policy.name().to_string(),
        }
    }
}

/// Every task of the config with its Baraat task id (§4.1: the entry point's
/// counter at the moment the task arrives).
pub fn task_source<'a>(
    gen: &'a Generator,
    cfg: &FlowConfig,
) -> impl Iterator<Item = TaskSpec> + 'a {
    let n = cfg.baraat.entry_points as u64;
    let mut counters: Vec<TaskIdCounter> = (0..n).map(|i| TaskIdCounter::new(i, n)).collect();
    gen.arrivals()
        .into_iter()
        .enumerate()
        .map(move |(i, (t, entry))| TaskSpec {
            arrival_ns: t,
            task_id: counters[entry as usize].next_id(),
            flows: gen.flows(i as u64),
        })
}

/// Baraat's heavy-threshold percentile and bytes for a run (`None` for
/// other policies): `percentile` if given (the Fig. 12 sweep), else the
/// config's bytes or percentile.
pub fn heavy_threshold(
    cfg: &FlowConfig,
    gen: &Generator,
    policy: Policy,
    percentile: Option<f64>,
) -> (Option<f64>, Option<f64>) {
    if policy != Policy::Baraat {
        return (None, None);
    }
    let p = percentile.unwrap_or(cfg.baraat.threshold_percentile);
    let thr = match (percentile, cfg.baraat.threshold_bytes) {
        (None, Some(b)) => b,
        _ => gen.threshold_bytes(p),
    };
    (Some(p), Some(thr))
}

pub fn run_one(
    cfg: &FlowConfig,
    gen: &Generator,
    policy: Policy,
    percentile: Option<f64>,
) -> RunResult {
    run_one_with(cfg, gen, policy, percentile, |_| {})
}

/// [`run_one`] with the engine's knobs set by `tune` first (benchmarks).
pub fn run_one_with(
    cfg: &FlowConfig,
    gen: &Generator,
    policy: Policy,
    percentile: Option<f64>,
    tune: impl FnOnce(&mut Engine),
) -> RunResult {
    let start = Instant::now();
    let (pct, thr) = heavy_threshold(cfg, gen, policy, percentile);
    let mut engine = Engine::new(
        gen.topology().clone(),
        EngineOpts {
            policy,
            heavy_threshold: thr.unwrap_or(f64::INFINITY),
        },
    );
    tune(&mut engine);
    let mut tasks = engine.run(task_source(gen, cfg));
    tasks.sort_unstable_by_key(|t| t.index);
    RunResult {
        policy,
        threshold_percentile: if percentile.is_some() { pct } else { None },
        threshold_bytes: thr,
        tasks,
        stats: engine.stats.clone(),
        wall_s: start.elapsed().as_secs_f64(),
    }
}

/// All policies of the config, then the threshold sweep (Baraat only).
pub fn run_config(
    cfg: &FlowConfig,
    mut progress: impl FnMut(&RunResult),
) -> Result<Vec<RunResult>, ConfigError> {
    cfg.validate()?;
    let gen = Generator::new(cfg);
    let mut out = Vec::new();
    for p in cfg.parsed_policies()? {
        let r = run_one(cfg, &gen, p, None);
        progress(&r);
        out.push(r);
    }
    for &pct in &cfg.sweep.thresholds {
        let r = run_one(cfg, &gen, Policy::Baraat, Some(pct));
        progress(&r);
        out.push(r);
    }
    Ok(out)
}
