//! Tasks made of flows (§2.1, §5.2) and the workload models of §5.2.
//!
//! A task is a set of flows linked by *gates*: a flow may wait for a gate
//! (start only when every flow feeding that gate has finished, plus its own
//! computation delay) and may feed one. Partition-aggregate's second stage is
//! a mid aggregator's response waiting for the gate its workers' responses
//! feed. Query (request) messages are not modelled: like the paper (§5.1
//! "ignore the overhead of requesting the data") only responses move bytes.

use netsched_core::rng::Rng;

use crate::config::{Arrival, FlowConfig, SizeModel, Workflow};
use crate::topology::Topology;

pub const NO_GATE: u32 = u32::MAX;

#[derive(Clone, Debug, PartialEq)]
pub struct FlowSpec {
    pub src: u32,
    pub dst: u32,
    pub bytes: u64,
    /// Gate that must open before this flow starts (`NO_GATE`: at arrival).
    pub after: u32,
    /// Gate this flow feeds (`NO_GATE`: none).
    pub feeds: u32,
    /// Computation before the flow starts, once it may (ns).
    pub delay_ns: u64,
}

#[derive(Clone, Debug, PartialEq)]
pub struct TaskSpec {
    pub arrival_ns: u64,
    /// Baraat task id from the entry point's counter (§4.1).
    pub task_id: u64,
    pub flows: Vec<FlowSpec>,
}

impl TaskSpec {
    pub fn total_bytes(&self) -> u64 {
        self.flows.iter().map(|f| f.bytes).sum()
    }

    pub fn gates(&self) -> u32 {
        self.flows
            .iter()
            .flat_map(|f| [f.after, f.feeds])
            .filter(|&g| g != NO_GATE)
            .map(|g| g + 1)
            .max()
            .unwrap_or(0)
    }
}

/// Draws task size scale factors, flow sizes and placements.
pub struct Generator {
    cfg: FlowConfig,
    topo: Topology,
    /// Mean task-size scale factor of the size model.
    mean_scale: f64,
    /// Mean arrival gap (ns) for Poisson arrivals.
    mean_gap_ns: f64,
}

/// Bounded Pareto on [1, h] with shape a: inverse-CDF sample.
fn bounded_pareto(rng: &mut Rng, a: f64, h: f64) -> f64 {
    let u = rng.unit();
    let tail = (1.0 / h).powf(a);
    (1.0 - u * (1.0 - tail)).powf(-1.0 / a)
}

fn bounded_pareto_mean(a: f64, h: f64) -> f64 {
    let tail = (1.0 / h).powf(a);
    (1.0 / (1.0 - tail)) * (a / (a - 1.0)) * (1.0 - h.powf(1.0 - a))
}

impl Generator {
    pub fn new(cfg: &FlowConfig) -> Self {
        let topo = Topology::new(&cfg.topology);
        let w = &cfg.workload;
        let mean_scale = match w.sizes {
            SizeModel::Uniform => 1.0,
            SizeModel::Bing => 1.0 - w.heavy_fraction + w.heavy_fraction * w.heavy_factor,
            SizeModel::Facebook => bounded_pareto_mean(w.pareto_shape, w.pareto_max),
        };
        let mean_flow = 1000.0 * (w.flow_min_kb + w.flow_max_kb) / 2.0 * mean_scale;
        let workers = (topo.servers_per_rack - 1) as f64;
        // Bytes per task into one bottleneck link (an aggregator's downlink).
        let per_link_bytes = match w.workflow {
            Workflow::SingleStage => workers * mean_flow,
            Workflow::TwoStage => {
                let mid = workers * mean_flow;
                let top = w.mid_aggregators as f64 * (w.selectivity * mid).ceil().max(1.0);
                mid.max(top)
            }
            Workflow::Storage => w.storage_servers as f64 * mean_flow,
        };
        // `aggregators` bottleneck links, each loaded to `load`.
        let rate_per_s =
            w.load * w.aggregators as f64 * topo.host_bps as f64 / (8.0 * per_link_bytes);
        Generator {
            cfg: cfg.clone(),
            topo,
            mean_scale,
            mean_gap_ns: 1e9 / rate_per_s,
        }
    }

    pub fn topology(&self) -> &Topology {
        &self.topo
    }

    pub fn mean_gap_ns(&self) -> f64 {
        self.mean_gap_ns
    }

    pub fn mean_scale(&self) -> f64 {
        self.mean_scale
    }

    fn scale(&self, rng: &mut Rng) -> f64 {
        let w = &self.cfg.workload;
        match w.sizes {
            SizeModel::Uniform => 1.0,
            SizeModel::Bing => {
                if rng.unit() < w.heavy_fraction {
                    w.heavy_factor
                } else {
                    1.0
                }
            }
            SizeModel::Facebook => bounded_pareto(rng, w.pareto_shape, w.pareto_max),
        }
    }

    fn flow_bytes(&self, rng: &mut Rng, scale: f64) -> u64 {
        let w = &self.cfg.workload;
        let kb = w.flow_min_kb + rng.unit() * (w.flow_max_kb - w.flow_min_kb);
        ((kb * 1000.0 * scale).round() as u64).max(1)
    }

    fn compute_ns(&self, rng: &mut Rng) -> u64 {
        let m = self.cfg.workload.compute_us;
        if m > 0.0 {
            (-rng.unit_open0().ln() * m * 1e3).round() as u64
        } else {
            0
        }
    }

    /// The flows of task number `index` (placement and sizes from the
    /// task's own stream, so they do not depend on the policy).
    pub fn flows(&self, index: u64) -> Vec<FlowSpec> {
        let mut rng = Rng::derive(self.cfg.seed, 0x7A5C_0000_0000 + index);
        let t = &self.topo;
        let w = &self.cfg.workload;
        let spr = t.servers_per_rack;
        let scale = self.scale(&mut rng);
        let mut flows = Vec::new();
        match w.workflow {
            Workflow::SingleStage => {
                // Aggregator racks spread evenly over the datacenter; the
                // aggregator is the rack's server 0 (its front end).
                let a = rng.below(w.aggregators);
                let rack = (a as u64 * t.racks as u64 / w.aggregators as u64) as u32;
                let agg = rack * spr;
                for s in 1..spr {
                    let delay_ns = self.compute_ns(&mut rng);
                    flows.push(FlowSpec {
                        src: agg + s,
                        dst: agg,
                        bytes: self.flow_bytes(&mut rng, scale),
                        after: NO_GATE,
                        feeds: NO_GATE,
                        delay_ns,
                    });
                }
            }
            Workflow::TwoStage => {
                // Instance i: top aggregator on rack 0 of pod i % pods (the
                // pod's top-aggregator rack), server i / pods; its mid
                // aggregators are server 0 of rack 1 + (i + j / pods) % (rpp - 1)
                // of pod j % pods: one rack per pod, distinct per instance.
                let i = rng.below(w.aggregators);
                let top = t.host(i % t.pods, 0, i / t.pods);
                for j in 0..w.mid_aggregators {
                    let pod = j % t.pods;
                    let rack = 1 + (i + j / t.pods) % (t.racks_per_pod - 1);
                    let mid = t.host(pod, rack, 0);
                    let mut received = 0;
                    for s in 1..spr {
                        let bytes = self.flow_bytes(&mut rng, scale);
                        received += bytes;
                        let delay_ns = self.compute_ns(&mut rng);
                        flows.push(FlowSpec {
                            src: mid + s,
                            dst: mid,
                            bytes,
                            after: NO_GATE,
                            feeds: j,
                            delay_ns,
                        });
                    }
                    flows.push(FlowSpec {
                        src: mid,
                        dst: top,
                        bytes: ((received as f64 * w.selectivity).ceil() as u64).max(1),
                        after: j,
                        feeds: NO_GATE,
                        delay_ns: 0,
                    });
                }
            }
            Workflow::Storage => {
                let c = rng.below(w.aggregators);
                let client = (c as u64 * t.hosts as u64 / w.aggregators as u64) as u32;
                let mut chosen: Vec<u32> = Vec::with_capacity(w.storage_servers as usize);
                while chosen.len() < w.storage_servers as usize {
                    let s = rng.below(t.hosts);
                    if s != client && !chosen.contains(&s) {
                        chosen.push(s);
                    }
                }
                for s in chosen {
                    let delay_ns = self.compute_ns(&mut rng);
                    flows.push(FlowSpec {
                        src: s,
                        dst: client,
                        bytes: self.flow_bytes(&mut rng, scale),
                        after: NO_GATE,
                        feeds: NO_GATE,
                        delay_ns,
                    });
                }
            }
        }
        flows
    }

    /// Every task's arrival time and entry point (cheap; flows are drawn
    /// lazily by [`Generator::flows`]).
    pub fn arrivals(&self) -> Vec<(u64, u32)> {
        let mut rng = Rng::derive(self.cfg.seed, 0xA881_7A15);
        let n = self.cfg.workload.tasks;
        let entries = self.cfg.baraat.entry_points;
        let mut t = 0.0f64;
        (0..n)
            .map(|_| {
                if self.cfg.workload.arrival == Arrival::Poisson {
                    t += -rng.unit_open0().ln() * self.mean_gap_ns;
                }
                (t.round() as u64, rng.below(entries))
            })
            .collect()
    }

    /// §3.3: the heavy threshold is a percentile of the task-size history.
    /// Heavy detection happens at the port where a task's flows converge
    /// (the aggregator's downlink), so the history here is the bytes each
    /// task sends into each of its aggregators, from tasks drawn on a
    /// separate stream ("historically collected data").
    pub fn threshold_bytes(&self, percentile: f64) -> f64 {
        let mut per_port: Vec<u64> = Vec::new();
        let hist = Generator {
            cfg: FlowConfig {
                seed: self.cfg.seed ^ 0x4157_0000_5EED,
                ..self.cfg.clone()
            },
            topo: self.topo.clone(),
            mean_scale: self.mean_scale,
            mean_gap_ns: self.mean_gap_ns,
        };
        for i in 0..2_000u64 {
            let flows = hist.flows(i);
            let mut ports: Vec<(u32, u64)> = Vec::new();
            for f in &flows {
                match ports.iter_mut().find(|p| p.0 == f.dst) {
                    Some(p) => p.1 += f.bytes,
                    None => ports.push((f.dst, f.bytes)),
                }
            }
            per_port.extend(ports.into_iter().map(|p| p.1));
        }
        per_port.sort_unstable();
        let rank = ((percentile * per_port.len() as f64).ceil() as usize).clamp(1, per_port.len());
        per_port[rank - 1] as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_and_load() {
        let mut cfg = FlowConfig::default();
        let g = Generator::new(&cfg);
        let f = g.flows(0);
        assert_eq!(f.len(), 39);
        assert!(f.iter().all(|x| x.dst == f[0].dst && x.src != x.dst));
        // Bing mean scale 0.85 + 1.5 = 2.35; per task 39 × 26 KB × 2.35.
        let per_task = 39.0 * 26_000.0 * 2.35;
        let expect_gap = 8.0 * per_task / (0.8 * 30.0 * 1e9) * 1e9;
        assert!((g.mean_gap_ns() - expect_gap).abs() < 1.0);
        cfg.workload.workflow = Workflow::TwoStage;
        let g = Generator::new(&cfg);
        let f = g.flows(3);
        assert_eq!(f.len(), 1200);
        let tops: Vec<_> = f.iter().filter(|x| x.after != NO_GATE).collect();
        assert_eq!(tops.len(), 30);
        assert!(tops.iter().all(|x| x.dst == tops[0].dst));
        let mut mids: Vec<u32> = tops.iter().map(|x| x.src).collect();
        mids.sort_unstable();
        mids.dedup();
        assert_eq!(mids.len(), 30);
        cfg.workload.workflow = Workflow::Storage;
        assert_eq!(Generator::new(&cfg).flows(1).len(), 3);
    }

    #[test]
    fn pareto_mean_matches_samples() {
        let mut rng = Rng::new(3);
        let n = 400_000;
        let s: f64 = (0..n).map(|_| bounded_pareto(&mut rng, 1.5, 100.0)).sum();
        let m = bounded_pareto_mean(1.5, 100.0);
        assert!(
            (s / n as f64 - m).abs() / m < 0.02,
            "{} vs {m}",
            s / n as f64
        );
    }
}
