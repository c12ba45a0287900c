//! Runs a configuration: builds the datacenter, simulates every pool in
//! parallel, and merges the results in pool order.

use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rayon::prelude::*;

use crate::config::{Policy, SimConfig};
use crate::error::ConfigError;
use crate::metrics::PoolMetrics;
use crate::ns::us_to_ns;
use crate::pool::{PoolPlan, PoolSim, RackPlan, RunSetup};
use crate::topology::{self, Topology};
use crate::workload::RateSchedule;
use netsched_core::horus::{IdleLink, LeafIdleScope};

#[derive(Clone, Debug, Default)]
pub struct RunOpts {
    /// Print progress to stderr while pools run.
    pub progress: bool,
    /// Give every state-only input its own event rather than holding it in
    /// its scheduler's inbox (`RunSetup::eager_state_writes`). Results are
    /// the same; it is slower, and there to test that claim.
    pub eager_state_writes: bool,
}

/// The result of one (policy, load) run.
pub struct RunResult {
    pub policy: Policy,
    pub load: f64,
    pub overall: PoolMetrics,
    pub pools: Vec<PoolMetrics>,
    pub workers: u64,
    pub tasks: u64,
    pub events: u64,
    pub wall_s: f64,
    /// Building topology and placement.
    pub setup_s: f64,
    /// Names of the workload's task classes (`get`, `scan`, ...).
    pub class_names: Vec<String>,
}

impl RunResult {
    /// The merged summary with class names attached.
    pub fn summary(&self) -> crate::metrics::Summary {
        let mut s = crate::metrics::Summary::of_pool(&self.overall);
        s.name_classes(&self.class_names);
        s
    }
}

/// Converts the placement's layouts into the simulator's pool plans.
pub fn plans(topo: &Topology, cfg: &SimConfig) -> Result<Vec<PoolPlan>, ConfigError> {
    let layouts = topology::Placement::place(topo, &cfg.placement, cfg.seed)?.pools;
    Ok(layouts
        .into_iter()
        .map(|l| PoolPlan {
            pool_id: l.pool_id,
            racks: l
                .racks
                .iter()
                .zip(&l.leaf_spine)
                .map(|(r, &s)| RackPlan {
                    leaf: r.leaf_id,
                    spine: s,
                    servers: r.servers.clone(),
                })
                .collect(),
            spines: l.spines.clone(),
        })
        .collect())
}

/// Keeps the pools `only` names (all of them for `None`), in pool-id order.
/// An id the placement did not produce is an error, not an empty run.
pub fn select_pools(
    plans: Vec<PoolPlan>,
    only: Option<&[u32]>,
) -> Result<Vec<PoolPlan>, ConfigError> {
    let Some(only) = only else {
        return Ok(plans);
    };
    if let Some(&missing) = only
        .iter()
        .find(|&&id| !plans.iter().any(|p| p.pool_id == id))
    {
        let ids = match (plans.first(), plans.last()) {
            (Some(a), Some(b)) => format!("ids {}-{}", a.pool_id, b.pool_id),
            _ => "no ids".to_string(),
        };
        return Err(ConfigError::new(
            "only_pools",
            format!(
                "pool {missing} does not exist (the placement has {} pools, {ids})",
                plans.len()
            ),
        ));
    }
    Ok(plans
        .into_iter()
        .filter(|p| only.contains(&p.pool_id))
        .collect())
}

/// Runs every (policy, load) combination the config asks for.
pub fn run_config(
    cfg: &SimConfig,
    base_dir: &Path,
    opts: &RunOpts,
) -> Result<Vec<RunResult>, ConfigError> {
    cfg.validate()?;
    let t0 = Instant::now();
    let topo = Topology::build(&cfg.topology)?;
    let plans = select_pools(plans(&topo, cfg)?, cfg.only_pools.as_deref())?;
    let setup_s = t0.elapsed().as_secs_f64();
    let service = cfg.workload.service.build_relative_to(base_dir)?;
    let threads = if cfg.threads == 0 {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    } else {
        cfg.threads
    };
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .map_err(|e| ConfigError::new("threads", e.to_string()))?;
    // Biggest pools first so that one straggler does not finish alone.
    let mut order: Vec<usize> = (0..plans.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(plans[i].workers()));
    let workers: u64 = plans.iter().map(|p| p.workers()).sum();
    let horus_choices = cfg.schedulers.horus.resolve();
    if horus_choices.idle_link == IdleLink::RandomOfPool && !cfg.failures.is_empty() {
        if let Some(p) = plans.iter().find(|p| p.spines.len() > 1) {
            return Err(ConfigError::new(
                "schedulers.horus.idle_link",
                format!(
                    "`random-of-pool` with failure events is not modelled for pools with \
                     several spines (pool {} has {}): a spine's failure would have to move \
                     idle links it holds for other groups",
                    p.pool_id,
                    p.spines.len()
                ),
            ));
        }
    }
    if horus_choices.leaf_idle_scope == LeafIdleScope::Pool && !cfg.failures.is_empty() {
        return Err(ConfigError::new(
            "schedulers.horus.leaf_idle_scope",
            "`pool` merges each pool's racks into one, which failure events cannot address",
        ));
    }
    let merged: Vec<PoolPlan> = if horus_choices.leaf_idle_scope == LeafIdleScope::Pool {
        plans.iter().map(PoolPlan::merged_racks).collect()
    } else {
        Vec::new()
    };
    let mut results = Vec::new();
    for (policy, load) in cfg.runs() {
        let schedule = RateSchedule::from_us_pairs(load, &cfg.workload.schedule)
            .map_err(|e| e.within("workload"))?;
        let arrival_ns = match (cfg.workload.duration_us, cfg.workload.tasks_per_worker) {
            (Some(d), _) => us_to_ns(d),
            (None, Some(t)) => (t * service.mean_ns() / load).round() as u64,
            (None, None) => unreachable!("validated"),
        };
        let warmup_ns = (arrival_ns as f64 * cfg.workload.warmup_fraction) as u64;
        let hops = |spine: u32, leaf: u32| topo.spine_leaf_hops(spine, leaf);
        let setup = RunSetup {
            policy,
            seed: cfg.seed,
            service: &service,
            schedule,
            end_ns: arrival_ns,
            warmup_ns,
            hop_delay: cfg.network.hop_delay,
            loss: cfg.network.loss,
            resubmit_ns: cfg.network.resubmit_ns,
            worker_model: cfg.workers.model,
            ps_slice_ns: us_to_ns(cfg.workers.ps_slice_us),
            heartbeat_timeout_ns: us_to_ns(cfg.workers.heartbeat_timeout_us),
            failure_detection_ns: us_to_ns(cfg.network.failure_detection_us),
            samples: cfg.schedulers.samples,
            multi_queue: cfg.workers.multi_queue,
            load_tracking: cfg.schedulers.load_tracking,
            int2_random_one_in: cfg.schedulers.int2_random_one_in,
            horus: horus_choices,
            clients: cfg.schedulers.clients,
            jbsq_bound: cfg.schedulers.jbsq_bound,
            failures: &cfg.failures,
            imbalance_interval_ns: us_to_ns(cfg.metrics.imbalance_interval_us),
            hops: &hops,
            eager_state_writes: opts.eager_state_writes,
        };
        let expected = (workers as f64 * load * arrival_ns as f64 / service.mean_ns()) as u64;
        let done = Arc::new(AtomicU64::new(0));
        let finished = Arc::new(AtomicBool::new(false));
        let label = format!("{} load {load}", policy.name());
        let reporter = opts
            .progress
            .then(|| spawn_progress(label, expected, done.clone(), finished.clone()));
        let start = Instant::now();
        let mut per_pool: Vec<Option<PoolMetrics>> = (0..plans.len()).map(|_| None).collect();
        let computed: Vec<(usize, PoolMetrics)> = pool.install(|| {
            order
                .par_iter()
                .map(|&i| {
                    let last = std::cell::Cell::new(0u64);
                    let progress = |completed: u64| {
                        done.fetch_add(completed - last.get(), Ordering::Relaxed);
                        last.set(completed);
                    };
                    let plan = if policy == Policy::Horus && !merged.is_empty() {
                        &merged[i]
                    } else {
                        &plans[i]
                    };
                    let mut m = PoolSim::new(&setup, plan).run(&progress);
                    m.set_window(warmup_ns, arrival_ns);
                    (i, m)
                })
                .collect()
        });
        for (i, m) in computed {
            per_pool[i] = Some(m);
        }
        let pools: Vec<PoolMetrics> = per_pool
            .into_iter()
            .map(|m| m.expect("every pool ran"))
            .collect();
        finished.store(true, Ordering::Relaxed);
        if let Some(h) = reporter {
            let _ = h.join();
        }
        let overall = PoolMetrics::merge_all(&pools);
        results.push(RunResult {
            policy,
            load,
            tasks: overall.submitted_total,
            events: overall.events,
            workers,
            overall,
            pools,
            wall_s: start.elapsed().as_secs_f64(),
            setup_s,
            class_names: service.class_names().to_vec(),
        });
    }
    Ok(results)
}

fn spawn_progress(
    label: String,
    expected: u64,
    done: Arc<AtomicU64>,
    finished: Arc<AtomicBool>,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let start = Instant::now();
        let mut last_print = Instant::now();
        while !finished.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(100));
            if last_print.elapsed() < Duration::from_secs(2) {
                continue;
            }
            last_print = Instant::now();
            let d = done.load(Ordering::Relaxed);
            let el = start.elapsed().as_secs_f64();
            let rate = d as f64 / el.max(1e-9);
            let frac = (d as f64 / expected.max(1) as f64).min(1.0);
            let eta = if rate > 0.0 {
                (expected.saturating_sub(d)) as f64 / rate
            } else {
                f64::NAN
            };
            eprintln!(
                "[{label}] {:5.1}%  {:.2}M/{:.2}M tasks  {:.2}M tasks/s  elapsed {:.0}s  eta {:.0}s",
                frac * 100.0,
                d as f64 / 1e6,
                expected as f64 / 1e6,
                rate / 1e6,
                el,
                eta
            );
            let _ = std::io::stderr().flush();
        }
    })
}
