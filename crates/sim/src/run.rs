//! Runs a configuration: builds the datacenter, simulates every pool in
//! parallel, and merges the results in pool order.

use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

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

/// What a run reports while it goes: `netsched sim` draws a progress bar
/// from it and keeps every finished run, so that Ctrl-C can still write
/// the runs that completed. Every method has a do-nothing default.
pub trait RunObserver: Sync {
    /// Run `index` (0-based) of `runs` starts; about `expected_tasks` tasks
    /// will complete in it.
    fn run_started(&self, _index: usize, _runs: usize, _label: &str, _expected_tasks: u64) {}
    /// `tasks` more tasks completed in the current run (called from the
    /// simulating threads).
    fn tasks_done(&self, _tasks: u64) {}
    /// A run finished; its result is final.
    fn run_finished(&self, _result: RunResult) {}
}

/// Everything a config needs before its first event, checked: the
/// topology, the placement (its capacity against the topology), the
/// selected pools, the service distribution (files a trace names, resolved
/// against `base_dir`) and the combinations the model does not cover.
/// `netsched check` builds it and stops; [`run_config`] runs it.
pub struct Prepared {
    topo: Topology,
    plans: Vec<PoolPlan>,
    /// Pools with their racks merged (`leaf_idle_scope = "pool"`), else empty.
    merged: Vec<PoolPlan>,
    service: crate::workload::ServiceSampler,
    setup_s: f64,
}

impl Prepared {
    pub fn new(cfg: &SimConfig, base_dir: &Path) -> Result<Prepared, ConfigError> {
        cfg.validate()?;
        let t0 = Instant::now();
        let topo = Topology::build(&cfg.topology)?;
        let plans = select_pools(plans(&topo, cfg)?, cfg.only_pools.as_deref())?;
        let setup_s = t0.elapsed().as_secs_f64();
        let service = cfg.workload.service.build_relative_to(base_dir)?;
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
        Ok(Prepared {
            topo,
            plans,
            merged,
            service,
            setup_s,
        })
    }

    /// Workers in the simulated pools.
    pub fn workers(&self) -> u64 {
        self.plans.iter().map(|p| p.workers()).sum()
    }
}

/// Runs every (policy, load) combination the config asks for.
pub fn run_config(
    cfg: &SimConfig,
    base_dir: &Path,
    opts: &RunOpts,
) -> Result<Vec<RunResult>, ConfigError> {
    struct Collect {
        done: Arc<AtomicU64>,
        runs: std::sync::Mutex<Vec<RunResult>>,
    }
    impl RunObserver for Collect {
        fn tasks_done(&self, tasks: u64) {
            self.done.fetch_add(tasks, Ordering::Relaxed);
        }
        fn run_finished(&self, result: RunResult) {
            self.runs.lock().expect("not poisoned").push(result);
        }
    }
    let c = Collect {
        done: Arc::new(AtomicU64::new(0)),
        runs: Default::default(),
    };
    let prepared = Prepared::new(cfg, base_dir)?;
    let runs = cfg.runs();
    let n = runs.len();
    for (k, (policy, load)) in runs.into_iter().enumerate() {
        c.done.store(0, Ordering::Relaxed);
        let finished = Arc::new(AtomicBool::new(false));
        let label = format!("run {}/{n}: {} load {load}", k + 1, policy.name());
        let expected = expected_tasks(cfg, &prepared, load);
        let reporter = opts
            .progress
            .then(|| spawn_progress(label, expected, c.done.clone(), finished.clone()));
        let r = run_one(cfg, &prepared, opts, policy, load, &c);
        finished.store(true, Ordering::Relaxed);
        if let Some(h) = reporter {
            let _ = h.join();
        }
        c.run_finished(r?);
    }
    Ok(c.runs.into_inner().expect("not poisoned"))
}

/// [`run_config`] reporting to `obs`: each run's start, its tasks as they
/// complete, and its result when it finishes (then dropped here).
pub fn run_config_observed(
    cfg: &SimConfig,
    prepared: &Prepared,
    opts: &RunOpts,
    obs: &dyn RunObserver,
) -> Result<(), ConfigError> {
    let runs = cfg.runs();
    let n = runs.len();
    for (k, (policy, load)) in runs.into_iter().enumerate() {
        let label = format!("{} load {load}", policy.name());
        obs.run_started(k, n, &label, expected_tasks(cfg, prepared, load));
        obs.run_finished(run_one(cfg, prepared, opts, policy, load, obs)?);
    }
    Ok(())
}

/// The arrival window of a run at `load`, ns.
fn arrival_ns(cfg: &SimConfig, p: &Prepared, load: f64) -> u64 {
    match (cfg.workload.duration_us, cfg.workload.tasks_per_worker) {
        (Some(d), _) => us_to_ns(d),
        (None, Some(t)) => (t * p.service.mean_ns() / load).round() as u64,
        (None, None) => unreachable!("validated"),
    }
}

/// Tasks a run at `load` is expected to complete (for progress only).
fn expected_tasks(cfg: &SimConfig, p: &Prepared, load: f64) -> u64 {
    (p.workers() as f64 * load * arrival_ns(cfg, p, load) as f64 / p.service.mean_ns()) as u64
}

fn run_one(
    cfg: &SimConfig,
    prepared: &Prepared,
    opts: &RunOpts,
    policy: Policy,
    load: f64,
    obs: &dyn RunObserver,
) -> Result<RunResult, ConfigError> {
    let Prepared {
        topo,
        plans,
        merged,
        service,
        setup_s,
    } = prepared;
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
    // Biggest pools first, each taken by the first free thread, so that
    // one straggler does not finish alone.
    let mut order: Vec<usize> = (0..plans.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(plans[i].workers()));
    let workers = prepared.workers();
    let horus_choices = cfg.schedulers.horus.resolve();
    let schedule = RateSchedule::from_us_pairs(load, &cfg.workload.schedule)
        .map_err(|e| e.within("workload"))?;
    let arrival_ns = arrival_ns(cfg, prepared, load);
    let warmup_ns = (arrival_ns as f64 * cfg.workload.warmup_fraction) as u64;
    let hops = |spine: u32, leaf: u32| topo.spine_leaf_hops(spine, leaf);
    let setup = RunSetup {
        policy,
        seed: cfg.seed,
        service,
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
    let start = Instant::now();
    let mut per_pool: Vec<Option<PoolMetrics>> = (0..plans.len()).map(|_| None).collect();
    let run_pool = |i: usize| {
        let last = std::cell::Cell::new(0u64);
        let progress = |completed: u64| {
            obs.tasks_done(completed - last.get());
            last.set(completed);
        };
        let plan = if policy == Policy::Horus && !merged.is_empty() {
            &merged[i]
        } else {
            &plans[i]
        };
        let mut m = PoolSim::new(&setup, plan).run(&progress);
        m.set_window(warmup_ns, arrival_ns);
        m
    };
    let computed = crate::work_queue::run_in_order(&pool, &order, run_pool);
    for (i, m) in computed {
        per_pool[i] = Some(m);
    }
    let pools: Vec<PoolMetrics> = per_pool
        .into_iter()
        .map(|m| m.expect("every pool ran"))
        .collect();
    let overall = PoolMetrics::merge_all(&pools);
    Ok(RunResult {
        policy,
        load,
        tasks: overall.submitted_total,
        events: overall.events,
        workers,
        overall,
        pools,
        wall_s: start.elapsed().as_secs_f64(),
        setup_s: *setup_s,
        class_names: service.class_names().to_vec(),
    })
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
