//! `netsched cluster up`: each policy's fleet of real processes
//! (`netsched_lab::cluster_up`), then the simulator on the same
//! configuration, side by side. It lives in the CLI because the CLI is what
//! composes the runtime and the simulator; neither depends on the other.

use crate::error::CliError;
use std::path::Path;

use netsched_config::workload::{ServiceDist, ROCKSDB_SIGMA};
use netsched_lab::cluster_up::{
    install_signal_handlers, rocksdb_medians, run_fleet, within_tolerance, Calibration,
    ClusterUpConfig, ServerModel, CALIBRATION_SERVICE_US, P50_TOLERANCE, P99_TOLERANCE,
};

use crate::stdout::outln;

/// Hops a task and its reply take on the runtime: client → spine → leaf →
/// worker → leaf → spine → client. The simulator's response time (Horus
/// §4.1, docs/metrics.md) covers only the first two after the client's:
/// spine → leaf → worker, then service; the other four are added to its
/// quantiles so both sides measure client send to reply received.
pub const RUNTIME_HOPS: f64 = 6.0;
pub const SIM_MEASURED_HOPS: f64 = 2.0;

/// The simulator's side of one comparison.
#[derive(Clone, Debug)]
pub struct SimSide {
    /// The simulator's response time (submission at the spine to completion
    /// at the worker), µs.
    pub response_p50_us: f64,
    pub response_p99_us: f64,
    /// Per-hop delay the simulator used, µs.
    pub hop_us: f64,
    /// The same quantiles as the client measures them: response time plus
    /// the `RUNTIME_HOPS - SIM_MEASURED_HOPS` hops the simulator's metric
    /// leaves out. A constant shifts every quantile by itself.
    pub p50_us: f64,
    pub p99_us: f64,
    /// The simulator's offered load (the client's rate × the simulated mean
    /// service time / workers).
    pub load: f64,
    /// The service distribution the simulator used (TOML).
    pub service: String,
    /// The intra-server model both sides ran ([`ServerModel::describe`]).
    pub workers: String,
}

/// What one policy run measured.
#[derive(Clone, Debug)]
pub struct UpResult {
    pub policy: String,
    pub client: serde_json::Value,
    pub calibration: Option<Calibration>,
    pub sim: Option<SimSide>,
}

impl UpResult {
    /// Runtime quantile / simulator quantile (client-side), p50 and p99.
    pub fn ratios(&self) -> Option<(f64, f64)> {
        let s = self.sim.as_ref()?;
        let p50 = self.client["p50_us"].as_f64()?;
        let p99 = self.client["p99_us"].as_f64()?;
        Some((p50 / s.p50_us, p99 / s.p99_us))
    }

    /// The comparison as JSON (`run_dir/<policy>/compare.json`).
    pub fn compare_json(&self) -> serde_json::Value {
        let mut v = serde_json::json!({
            "policy": self.policy,
            "runtime_p50_us": self.client["p50_us"],
            "runtime_p99_us": self.client["p99_us"],
            "submitted": self.client["submitted"],
            "completed": self.client["completed"],
        });
        if let Some(c) = &self.calibration {
            v["overhead_us"] = c.overhead_us.into();
            v["calibration_tasks"] = c.tasks.into();
        }
        if let Some(s) = &self.sim {
            v["sim_response_p50_us"] = s.response_p50_us.into();
            v["sim_response_p99_us"] = s.response_p99_us.into();
            v["sim_hop_us"] = s.hop_us.into();
            v["sim_p50_us"] = s.p50_us.into();
            v["sim_p99_us"] = s.p99_us.into();
            v["sim_load"] = s.load.into();
            v["sim_service"] = s.service.clone().into();
            v["workers"] = s.workers.clone().into();
        }
        if let Some((a, b)) = self.ratios() {
            v["p50_ratio"] = a.into();
            v["p99_ratio"] = b.into();
            v["p50_tolerance"] = P50_TOLERANCE.into();
            v["p99_tolerance"] = P99_TOLERANCE.into();
            v["within_tolerance"] = within_tolerance(a, b).into();
        }
        v
    }
}

/// A service distribution as a TOML inline table (`{ kind = "exp", … }`).
fn service_inline(d: &ServiceDist) -> Result<String, CliError> {
    Ok(toml::Value::try_from(d)?.to_string())
}

/// Class weights of a service distribution (one class if it has none).
fn class_weights(d: &ServiceDist) -> Vec<f64> {
    match d {
        ServiceDist::Preset { name } => class_weights(&name.dist()),
        ServiceDist::Mix { weights, .. } | ServiceDist::LognormalMix { weights, .. } => {
            weights.clone()
        }
        _ => vec![1.0],
    }
}

/// The simulator's `[workers]` table for a runtime server model.
fn sim_workers(model: ServerModel) -> String {
    match model {
        ServerModel::QueuePerWorker { .. } => "model = \"fcfs\"".into(),
        ServerModel::ServerQueue { preempt_us: 0, .. } => "model = \"server-cfcfs\"".into(),
        ServerModel::ServerQueue { preempt_us, .. } => {
            format!("model = \"server-ps\"\nps_slice_us = {preempt_us}")
        }
    }
}

/// Runs one policy's fleet, then the simulator on the same configuration,
/// and writes `run_dir/<policy>/compare.json`.
pub fn run_policy(cfg: &ClusterUpConfig, policy: &str, bin: &Path) -> Result<UpResult, CliError> {
    let fleet = run_fleet(cfg, policy, bin)?;
    let sim = if cfg.sim {
        Some(simulate_beside(cfg, policy, &fleet.dir, fleet.calibration)?)
    } else {
        None
    };
    let r = UpResult {
        policy: policy.to_string(),
        client: fleet.client,
        calibration: fleet.calibration,
        sim,
    };
    let cmp = fleet.dir.join("compare.json");
    std::fs::write(&cmp, format!("{:#}\n", r.compare_json()))
        .map_err(|e| CliError::in_file(&cmp)(e.into()))?;
    Ok(r)
}

/// The simulator's side for a finished fleet run in `dir`.
fn simulate_beside(
    cfg: &ClusterUpConfig,
    policy: &str,
    dir: &Path,
    calibration: Option<Calibration>,
) -> Result<SimSide, CliError> {
    let hop_us = match calibration {
        Some(c) => c.overhead_us / RUNTIME_HOPS,
        None => cfg.sim_hop_us,
    };
    let service = if cfg.rocksdb_keys > 0 {
        // The runtime executes real GET/SCAN requests; the simulator gets
        // the medians this machine's RocksDB measured at start (σ as the
        // presets, ROCKSDB_SIGMA), not the papers' 40/650 µs.
        let (get, scan) = rocksdb_medians(dir, cfg.racks).ok_or_else(|| {
            CliError::Run(
                "no `rocksdb ready` line with get60_us/scan5000_us in a worker log".into(),
            )
        })?;
        let weights = class_weights(&cfg.workload.service);
        let mut medians_us = vec![scan; weights.len()];
        medians_us[0] = get;
        ServiceDist::LognormalMix {
            medians_us,
            sigma: ROCKSDB_SIGMA,
            weights,
        }
    } else {
        cfg.workload.service.clone()
    };
    let mean_ns = service.build()?.mean_ns();
    let load = cfg.rate()? * mean_ns / 1e9 / cfg.workers() as f64;
    let (p50, p99) = simulate(cfg, policy, &service, load, hop_us)?;
    let extra = (RUNTIME_HOPS - SIM_MEASURED_HOPS) * hop_us;
    Ok(SimSide {
        response_p50_us: p50,
        response_p99_us: p99,
        hop_us,
        p50_us: p50 + extra,
        p99_us: p99 + extra,
        load,
        service: service_inline(&service)?,
        workers: cfg.server_model(policy).describe(),
    })
}

/// The simulator on the same configuration: `racks` racks of
/// `servers_per_rack` servers with `workers_per_rack` cores in all, the
/// policy's intra-server model ([`ServerModel`]), one pool over all of them,
/// `spines` spines (leaf:spine ratio racks/spines), the given service
/// distribution and offered load (the client's rate), `sim_scale` × the
/// duration, every network hop a constant `hop_us`, no loss.
/// Returns (p50, p99) of the response time in µs (docs/metrics.md).
pub fn simulate(
    cfg: &ClusterUpConfig,
    policy: &str,
    service: &ServiceDist,
    load: f64,
    hop_us: f64,
) -> Result<(f64, f64), CliError> {
    if !(load > 0.0 && load <= 1.0) {
        return Err(CliError::Run(format!(
            "sim: the client's rate is a load of {load:.3} on the simulated service times (> 1)"
        )));
    }
    let text = sim_config(cfg, policy, service, load, hop_us)?;
    let sc = netsched_sim::config::SimConfig::from_toml(&text)
        .map_err(|e| CliError::at("sim")(e.into()))?;
    let runs = netsched_sim::run::run_config(&sc, Path::new("."), &Default::default())
        .map_err(|e| CliError::at("sim")(e.into()))?;
    let s = netsched_sim::metrics::Summary::of_pool(&runs[0].overall);
    Ok((
        s.response.p50_ns as f64 / 1e3,
        s.response.p99_ns as f64 / 1e3,
    ))
}

/// The `netsched sim` config [`simulate`] runs. `policy`, one of
/// `cfg.policies`, is the simulator's name too: the runtime and the
/// simulator share one policy vocabulary (`netsched_core::Policy`).
fn sim_config(
    cfg: &ClusterUpConfig,
    policy: &str,
    service: &ServiceDist,
    load: f64,
    hop_us: f64,
) -> Result<String, CliError> {
    let service = format!("service = {}\n", service_inline(service)?);
    let per_server = cfg.workers_per_rack / cfg.servers_per_rack;
    let rack = vec![per_server.to_string(); cfg.servers_per_rack].join(", ");
    let racks = vec![format!("[{rack}]"); cfg.racks].join(", ");
    // The cluster's spines split its racks as the daemons do; with one spine
    // a ratio would have no effect, which the simulator refuses.
    let spines = cfg.spines.max(1);
    let ratio = if spines > 1 {
        format!("ratio = {}\n", cfg.racks.div_ceil(spines).max(1))
    } else {
        String::new()
    };
    let text = format!(
        "seed = {}\npolicy = \"{policy}\"\n[topology]\nkind = \"racks\"\nspines = {spines}\nracks = [{racks}]\n\
         [placement]\nsizes = [{}]\nmode = \"colocated\"\n{ratio}\
         [workload]\n{service}load = {load}\nduration_us = {}\n\
         [network]\nhop_delay = {{ kind = \"constant\", us = {hop_us} }}\nloss = 0\n\
         [workers]\n{}\n",
        cfg.workload.seed,
        cfg.workers(),
        cfg.workload.duration_ms * 1000 * cfg.sim_scale as u64,
        sim_workers(cfg.server_model(policy)),
    );
    Ok(text)
}

/// One line per policy: the runtime's accounting and percentiles beside the
/// simulator's (client-side: response time + the four hops it leaves out)
/// and their ratios.
pub fn report_line(r: &UpResult) -> String {
    let c = &r.client;
    let f = |k: &str| c[k].as_f64().unwrap_or(f64::NAN);
    let failed: u64 = c["failed"]
        .as_object()
        .map(|m| m.values().filter_map(|v| v.as_u64()).sum())
        .unwrap_or(0);
    let sim = match (&r.sim, r.ratios()) {
        (Some(s), Some((a, b))) => {
            format!("{:>9.1} {:>9.1} {a:>6.2} {b:>6.2}", s.p50_us, s.p99_us)
        }
        _ => format!("{:>9} {:>9} {:>6} {:>6}", "-", "-", "-", "-"),
    };
    format!(
        "{:<12} {:>9} {:>9} {:>7} {:>9} {:>9.1} {:>9.1} {sim}",
        r.policy,
        c["submitted"].as_u64().unwrap_or(0),
        c["completed"].as_u64().unwrap_or(0),
        failed,
        c["timed_out"].as_u64().unwrap_or(0),
        f("p50_us"),
        f("p99_us"),
    )
}

pub const REPORT_HEADER: &str =
    "policy       submitted completed  failed timed_out   p50(us)   p99(us)   sim_p50   sim_p99 p50/sim p99/sim";

/// How the simulator's side of one line was obtained.
pub fn note_line(r: &UpResult) -> Option<String> {
    let s = r.sim.as_ref()?;
    let cal = match r.calibration {
        Some(c) => format!(
            "calibrated round trip {:.1} us (p50 of {} idle-path tasks minus {CALIBRATION_SERVICE_US} us) / {RUNTIME_HOPS}",
            c.overhead_us, c.tasks
        ),
        None => "sim_hop_us from the config".into(),
    };
    Some(format!(
        "  {}: {}; sim hop {:.1} us ({cal}); sim response p50 {:.1} / p99 {:.1} us + {} hops; sim load {:.3}, service {}",
        r.policy,
        s.workers,
        s.hop_us,
        s.response_p50_us,
        s.response_p99_us,
        RUNTIME_HOPS - SIM_MEASURED_HOPS,
        s.load,
        s.service
    ))
}

/// The runtime-against-simulator verdict of one policy, with the tolerance
/// it is held to.
pub fn verdict_line(r: &UpResult) -> Option<String> {
    let (a, b) = r.ratios()?;
    let verdict = if within_tolerance(a, b) {
        "within tolerance"
    } else {
        "OUTSIDE tolerance"
    };
    Some(format!(
        "  {}: runtime/sim p50 x{a:.2} (tolerance x{:.2}..x{P50_TOLERANCE:.2}), p99 x{b:.2} \
         (tolerance x{:.2}..x{P99_TOLERANCE:.2}): {verdict}",
        r.policy,
        1.0 / P50_TOLERANCE,
        1.0 / P99_TOLERANCE,
    ))
}

/// How the first policy's runtime p50/p99 compare with each other
/// policy's: the difference the run is there to show.
pub fn difference_line(out: &[UpResult]) -> Option<String> {
    let (first, rest) = out.split_first()?;
    let q = |r: &UpResult, k: &str| r.client[k].as_f64().filter(|v| *v > 0.0);
    let parts: Vec<String> = rest
        .iter()
        .filter_map(|r| {
            Some(format!(
                "{} p50 x{:.2}, p99 x{:.2}",
                r.policy,
                q(r, "p50_us")? / q(first, "p50_us")?,
                q(r, "p99_us")? / q(first, "p99_us")?
            ))
        })
        .collect();
    (!parts.is_empty()).then(|| format!("runtime against {}: {}", first.policy, parts.join("; ")))
}

/// `cluster up`: every policy in turn; prints the table as it goes.
pub fn run(cfg: &ClusterUpConfig, bin: &Path) -> Result<Vec<UpResult>, CliError> {
    install_signal_handlers();
    let rate = cfg.rate()?;
    outln!(
        "cluster up: {} racks x {} workers, {} spine(s), load {} ({rate:.0} tasks/s) for {} ms; run dir {}",
        cfg.racks,
        cfg.workers_per_rack,
        cfg.spines,
        cfg.workload.load,
        cfg.workload.duration_ms,
        cfg.run_dir.display()
    );
    for p in &cfg.policies {
        outln!("  {p}: {}", cfg.server_model(p).describe());
    }
    outln!("{REPORT_HEADER}");
    let mut out = Vec::new();
    for p in &cfg.policies {
        let r = run_policy(cfg, p, bin)?;
        outln!("{}", report_line(&r));
        out.push(r);
    }
    if cfg.sim {
        outln!(
            "sim_*: the simulator on the same configuration; its response time (spine to completion, \
             docs/metrics.md) plus the {} hops it leaves out, so both sides are client send to reply",
            RUNTIME_HOPS - SIM_MEASURED_HOPS
        );
        for r in &out {
            if let Some(l) = note_line(r) {
                outln!("{l}");
            }
        }
        for r in &out {
            if let Some(l) = verdict_line(r) {
                outln!("{l}");
            }
        }
    }
    if let Some(l) = difference_line(&out) {
        outln!("{l}");
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use netsched_config::workload::ServicePreset;
    use netsched_sim::config::{SimConfig, WorkerModel};

    /// RackSched runs simulate RackSched's preempting servers (RackSched
    /// §4), as the runtime runs them; Horus a queue per worker (Horus §3.5).
    #[test]
    fn racksched_runs_simulate_preempting_server_queues() {
        let cfg = ClusterUpConfig::from_toml(
            "racks = 2\nworkers_per_rack = 4\nservers_per_rack = 2\n\
             [workload]\nservice = { kind = \"exp\", mean_us = 1000 }\nload = 0.5\nduration_ms = 100\n",
        )
        .unwrap();
        let sim = |policy: &str| {
            let text = sim_config(&cfg, policy, &cfg.workload.service, 0.5, 10.0).unwrap();
            SimConfig::from_toml(&text).unwrap()
        };
        let (h, r) = (sim("horus"), sim("rs-h"));
        assert_eq!(h.workers.model, WorkerModel::Fcfs);
        assert_eq!(r.workers.model, WorkerModel::ServerPs);
        assert_eq!(r.workers.ps_slice_us, 250.0);
        assert_eq!(sim("rs-lb").workers.model, WorkerModel::ServerPs);
        let cfcfs = ClusterUpConfig {
            racksched_preempt_us: 0,
            ..cfg.clone()
        };
        let text = sim_config(&cfcfs, "rs-h", &cfg.workload.service, 0.5, 10.0).unwrap();
        assert!(text.contains("model = \"server-cfcfs\""), "{text}");
        assert!(text.contains("racks = [[2, 2], [2, 2]]"), "{text}");
    }

    #[test]
    fn class_weights_of_presets_and_single_class_distributions() {
        let w = class_weights(&ServiceDist::Preset {
            name: ServicePreset::Rocksdb9010,
        });
        assert_eq!(w, vec![0.9, 0.1]);
        assert_eq!(class_weights(&ServiceDist::Exp { mean_us: 1.0 }), vec![1.0]);
    }
}
