//! TOML configuration of a flow-level run (docs/flowsim.md lists every field).

use netsched_config::ConfigError;
use serde::{Deserialize, Serialize};

use crate::policy::Policy;

fn err(field: &str, msg: impl Into<String>) -> ConfigError {
    ConfigError::new(field, msg)
}

/// §5.2's three-level tree without path diversity: servers → ToR →
/// aggregation (one per pod) → core.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct TopologyConfig {
    pub pods: u32,
    pub racks_per_pod: u32,
    pub servers_per_rack: u32,
    /// Host (NIC) link rate, both directions.
    pub host_gbps: f64,
    /// Oversubscription at the ToR: ToR uplink = servers × host / this (2:1
    /// in §5.2, so a 40-server rack has a 20 Gbps uplink).
    pub tor_oversub: f64,
    /// Oversubscription at the aggregation switch: pod uplink = racks × ToR
    /// uplink / this. §5.2 only states the ToR's; 1 (none) by default.
    pub agg_oversub: f64,
}

impl Default for TopologyConfig {
    fn default() -> Self {
        TopologyConfig {
            pods: 30,
            racks_per_pod: 30,
            servers_per_rack: 40,
            host_gbps: 1.0,
            tor_oversub: 2.0,
            agg_oversub: 1.0,
        }
    }
}

#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum Workflow {
    /// One aggregator queries the other servers of its rack.
    SingleStage,
    /// A top aggregator queries mid aggregators in other racks, each of
    /// which queries the other servers of its rack (§5.2).
    TwoStage,
    /// A client reads a chunk from each of a few storage servers (§5.1).
    Storage,
}

#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum SizeModel {
    /// Bing-like bimodal task sizes (Fig. 2 left).
    Bing,
    /// Facebook-like heavy-tailed task sizes (Fig. 2 right).
    Facebook,
    /// Every flow uniform in [flow_min_kb, flow_max_kb].
    Uniform,
}

#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum Arrival {
    /// Online: Poisson arrivals at the rate that gives `load`.
    Poisson,
    /// A batch: every task arrives at t = 0 (data-parallel jobs, Fig. 11).
    Batch,
}

#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct WorkloadConfig {
    pub workflow: Workflow,
    pub sizes: SizeModel,
    pub arrival: Arrival,
    pub tasks: u32,
    /// Average utilisation of the bottleneck links (the aggregators'
    /// downlinks), §5.2.1 "80% data center load".
    pub load: f64,
    /// Single-stage: racks hosting an aggregator; two-stage: application
    /// instances (top aggregators, one per pod); storage: client hosts.
    pub aggregators: u32,
    /// Two-stage: mid-level aggregators per task (30 in §5.2).
    pub mid_aggregators: u32,
    /// Storage: servers read per task (3 in §5.1).
    pub storage_servers: u32,
    /// Aggregator output / input bytes (3% in §5.2).
    pub selectivity: f64,
    pub flow_min_kb: f64,
    pub flow_max_kb: f64,
    /// Bing: fraction of heavy tasks and their size factor.
    pub heavy_fraction: f64,
    pub heavy_factor: f64,
    /// Facebook: bounded Pareto task scale factor.
    pub pareto_shape: f64,
    pub pareto_max: f64,
    /// Mean of the exponential computation time at each worker before it
    /// responds (§5.2.3 "Adding computation"); 0 = none.
    pub compute_us: f64,
}

impl Default for WorkloadConfig {
    fn default() -> Self {
        WorkloadConfig {
            workflow: Workflow::SingleStage,
            sizes: SizeModel::Bing,
            arrival: Arrival::Poisson,
            tasks: 10_000,
            load: 0.8,
            aggregators: 30,
            mid_aggregators: 30,
            storage_servers: 3,
            selectivity: 0.03,
            flow_min_kb: 2.0,
            flow_max_kb: 50.0,
            heavy_fraction: 0.15,
            heavy_factor: 10.0,
            pareto_shape: 1.1,
            pareto_max: 1000.0,
            compute_us: 0.0,
        }
    }
}

#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct BaraatConfig {
    /// Heavy threshold as a percentile of the per-port task size
    /// distribution (§3.3: 80th-90th for heavy-tailed workloads).
    pub threshold_percentile: f64,
    /// Absolute threshold in bytes; overrides the percentile.
    pub threshold_bytes: Option<f64>,
    /// Number of task-id counters (entry points, §4.1).
    pub entry_points: u32,
}

impl Default for BaraatConfig {
    fn default() -> Self {
        BaraatConfig {
            threshold_percentile: 0.8,
            threshold_bytes: None,
            entry_points: 1,
        }
    }
}

#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, Default)]
#[serde(deny_unknown_fields, default)]
pub struct SweepConfig {
    /// Fig. 12: Baraat heavy-threshold percentiles to run in addition.
    pub thresholds: Vec<f64>,
}

#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct FlowConfig {
    pub seed: u64,
    /// Policies to run: fair, pfabric, orchestra, stf, baraat.
    pub policies: Vec<String>,
    pub topology: TopologyConfig,
    pub workload: WorkloadConfig,
    pub baraat: BaraatConfig,
    pub sweep: SweepConfig,
}

impl Default for FlowConfig {
    fn default() -> Self {
        FlowConfig {
            seed: 1,
            policies: Policy::ALL.iter().map(|p| p.name().to_string()).collect(),
            topology: TopologyConfig::default(),
            workload: WorkloadConfig::default(),
            baraat: BaraatConfig::default(),
            sweep: SweepConfig::default(),
        }
    }
}

fn positive(field: &str, v: f64) -> Result<(), ConfigError> {
    if v > 0.0 && v.is_finite() {
        Ok(())
    } else {
        Err(err(field, "must be a finite number > 0"))
    }
}

fn fraction(field: &str, v: f64, lo_open: bool) -> Result<(), ConfigError> {
    let ok = if lo_open {
        v > 0.0 && v <= 1.0
    } else {
        (0.0..=1.0).contains(&v)
    };
    if ok {
        Ok(())
    } else if lo_open {
        Err(err(field, "must be in (0, 1]"))
    } else {
        Err(err(field, "must be in [0, 1]"))
    }
}

impl FlowConfig {
    /// Parse and validate; errors are `field (line N): msg`.
    pub fn from_toml(text: &str) -> Result<FlowConfig, ConfigError> {
        let cfg: FlowConfig = netsched_config::parse::from_toml(text)?;
        cfg.validate()?;
        Ok(cfg)
    }

    pub fn parsed_policies(&self) -> Result<Vec<Policy>, ConfigError> {
        if self.policies.is_empty() {
            return Err(err("policies", "name at least one policy"));
        }
        self.policies
            .iter()
            .enumerate()
            .map(|(i, p)| {
                Policy::parse(p).map_err(|m| err(&format!("policies[{i}]"), m.to_string()))
            })
            .collect()
    }

    pub fn validate(&self) -> Result<(), ConfigError> {
        self.parsed_policies()?;
        let t = &self.topology;
        for (f, v) in [
            ("topology.pods", t.pods),
            ("topology.racks_per_pod", t.racks_per_pod),
        ] {
            if v == 0 {
                return Err(err(f, "must be >= 1"));
            }
        }
        if t.servers_per_rack < 2 {
            return Err(err("topology.servers_per_rack", "must be >= 2"));
        }
        let hosts = t.pods as u64 * t.racks_per_pod as u64 * t.servers_per_rack as u64;
        if hosts > u32::MAX as u64 / 4 {
            return Err(err("topology", "too many servers"));
        }
        positive("topology.host_gbps", t.host_gbps)?;
        positive("topology.tor_oversub", t.tor_oversub)?;
        positive("topology.agg_oversub", t.agg_oversub)?;
        let w = &self.workload;
        if w.tasks == 0 {
            return Err(err("workload.tasks", "must be >= 1"));
        }
        fraction("workload.load", w.load, true)?;
        if w.aggregators == 0 {
            return Err(err("workload.aggregators", "must be >= 1"));
        }
        let racks = t.pods * t.racks_per_pod;
        match w.workflow {
            Workflow::SingleStage if w.aggregators > racks => {
                return Err(err(
                    "workload.aggregators",
                    format!("single-stage uses one aggregator per rack: at most {racks}"),
                ));
            }
            Workflow::TwoStage => {
                if t.racks_per_pod < 2 {
                    return Err(err(
                        "topology.racks_per_pod",
                        "two-stage needs >= 2 (rack 0 of a pod holds top aggregators)",
                    ));
                }
                if w.aggregators > t.pods * t.servers_per_rack {
                    return Err(err(
                        "workload.aggregators",
                        "at most pods x servers_per_rack top aggregators",
                    ));
                }
                if w.mid_aggregators == 0 || w.mid_aggregators > t.pods * (t.racks_per_pod - 1) {
                    return Err(err(
                        "workload.mid_aggregators",
                        "must be in 1..=pods x (racks_per_pod - 1)",
                    ));
                }
            }
            Workflow::Storage => {
                if w.storage_servers == 0 || w.storage_servers as u64 >= hosts {
                    return Err(err("workload.storage_servers", "must be in 1..servers"));
                }
                if w.aggregators as u64 > hosts {
                    return Err(err("workload.aggregators", "more clients than servers"));
                }
            }
            _ => {}
        }
        fraction("workload.selectivity", w.selectivity, true)?;
        positive("workload.flow_min_kb", w.flow_min_kb)?;
        positive("workload.flow_max_kb", w.flow_max_kb)?;
        if w.flow_max_kb < w.flow_min_kb {
            return Err(err("workload.flow_max_kb", "must be >= flow_min_kb"));
        }
        fraction("workload.heavy_fraction", w.heavy_fraction, false)?;
        if !(w.heavy_factor >= 1.0 && w.heavy_factor.is_finite()) {
            return Err(err("workload.heavy_factor", "must be >= 1"));
        }
        if !(w.pareto_shape > 1.0 && w.pareto_shape.is_finite()) {
            return Err(err(
                "workload.pareto_shape",
                "must be > 1 (finite mean, so load is defined)",
            ));
        }
        if !(w.pareto_max > 1.0 && w.pareto_max.is_finite()) {
            return Err(err("workload.pareto_max", "must be > 1"));
        }
        if !(w.compute_us >= 0.0 && w.compute_us.is_finite()) {
            return Err(err("workload.compute_us", "must be >= 0"));
        }
        fraction(
            "baraat.threshold_percentile",
            self.baraat.threshold_percentile,
            false,
        )?;
        if let Some(b) = self.baraat.threshold_bytes {
            if b.is_nan() || b < 0.0 {
                return Err(err("baraat.threshold_bytes", "must be >= 0"));
            }
        }
        if self.baraat.entry_points == 0 {
            return Err(err("baraat.entry_points", "must be >= 1"));
        }
        for (i, &p) in self.sweep.thresholds.iter().enumerate() {
            fraction(&format!("sweep.thresholds[{i}]"), p, false)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_validate_and_errors_name_fields() {
        let c = FlowConfig::from_toml("").unwrap();
        assert_eq!(c.topology.pods * c.topology.racks_per_pod, 900);
        let e = FlowConfig::from_toml("[workload]\nload = 1.5\n").unwrap_err();
        assert_eq!(e.field, "workload.load");
        let e = FlowConfig::from_toml("[workload]\nbogus = 1\n").unwrap_err();
        assert!(e.field.starts_with("workload"), "{e}");
        let e = FlowConfig::from_toml("policies = [\"fifo-x\"]\n").unwrap_err();
        assert_eq!(e.field, "policies[0]");
    }
}
