//! Packet against flow (Baraat Fig. 7's question at scale): one workload
//! through the fluid engine (`engine/`, SPC's converged allocation) and
//! through the packet-level engine (`packet/`, SPC's control loop), with
//! mean and p99 task completion time side by side.

use std::fmt::Write as _;
use std::time::Instant;

use netsched_config::ConfigError;

use crate::config::FlowConfig;
use crate::engine::EngineStats;
use crate::packet::{NoSwitchPlane, PacketEngine, PacketOpts, PacketStats};
use crate::policy::Policy;
use crate::report::{stats, Stats};
use crate::run::{heavy_threshold, run_one, task_source, RunResult};
use crate::workload::Generator;

/// Agreement the comparison asks for: the paper's Fig. 7 standard for the
/// mean, looser for the tail.
pub const MEAN_TOLERANCE: f64 = 0.05;
pub const P99_TOLERANCE: f64 = 0.10;

#[derive(Debug, thiserror::Error)]
pub enum CompareError {
    #[error(transparent)]
    Unsupported(#[from] NoSwitchPlane),
    #[error(transparent)]
    Config(#[from] ConfigError),
}

/// The packet engine's timing knobs.
#[derive(Clone, Copy, Debug)]
pub struct PacketTiming {
    pub rtt_ns: u64,
    pub ticks_per_rtt: u32,
    pub delta_fraction: f64,
}

impl Default for PacketTiming {
    fn default() -> Self {
        let o = PacketOpts::new(Policy::Fair, f64::INFINITY);
        PacketTiming {
            rtt_ns: o.rtt_ns,
            ticks_per_rtt: o.ticks_per_rtt,
            delta_fraction: o.delta_fraction,
        }
    }
}

/// One policy's packet-level run of the config's tasks (same seed, same
/// tasks and threshold as [`run_one`]).
pub fn run_packet(
    cfg: &FlowConfig,
    gen: &Generator,
    policy: Policy,
    timing: PacketTiming,
) -> Result<(RunResult, PacketStats), CompareError> {
    if policy.plane().is_none() {
        return Err(NoSwitchPlane(policy).into());
    }
    let start = Instant::now();
    let (_, thr) = heavy_threshold(cfg, gen, policy, None);
    let mut engine = PacketEngine::new(
        gen.topology().clone(),
        PacketOpts {
            policy,
            heavy_threshold: thr.unwrap_or(f64::INFINITY),
            rtt_ns: timing.rtt_ns,
            ticks_per_rtt: timing.ticks_per_rtt,
            delta_fraction: timing.delta_fraction,
        },
    )?;
    let mut tasks = engine.run(task_source(gen, cfg));
    tasks.sort_unstable_by_key(|t| t.index);
    let run = RunResult {
        policy,
        threshold_percentile: None,
        threshold_bytes: thr,
        tasks,
        stats: EngineStats::default(),
        wall_s: start.elapsed().as_secs_f64(),
    };
    Ok((run, engine.stats))
}

/// One policy both ways.
#[derive(Clone, Debug)]
pub struct Comparison {
    pub policy: Policy,
    pub fluid: Stats,
    pub packet: Stats,
    pub packet_stats: PacketStats,
    pub fluid_wall_s: f64,
    pub packet_wall_s: f64,
}

impl Comparison {
    /// Packet over fluid.
    pub fn mean_ratio(&self) -> f64 {
        self.packet.mean_ns / self.fluid.mean_ns
    }

    pub fn p99_ratio(&self) -> f64 {
        self.packet.p99_ns as f64 / self.fluid.p99_ns as f64
    }

    pub fn mean_agrees(&self) -> bool {
        (self.mean_ratio() - 1.0).abs() <= MEAN_TOLERANCE
    }

    pub fn p99_agrees(&self) -> bool {
        (self.p99_ratio() - 1.0).abs() <= P99_TOLERANCE
    }
}

/// Every policy of the config both ways.
pub fn compare(
    cfg: &FlowConfig,
    timing: PacketTiming,
    mut progress: impl FnMut(&Comparison),
) -> Result<Vec<Comparison>, CompareError> {
    cfg.validate()?;
    let policies = cfg.parsed_policies()?;
    // Refuse before spending a fluid run on a policy without a switch
    // data plane in the flow registry.
    if let Some(&p) = policies.iter().find(|p| p.plane().is_none()) {
        return Err(NoSwitchPlane(p).into());
    }
    let gen = Generator::new(cfg);
    let mut out = Vec::new();
    for policy in policies {
        let fluid = run_one(cfg, &gen, policy, None);
        let (packet, packet_stats) = run_packet(cfg, &gen, policy, timing)?;
        let c = Comparison {
            policy,
            fluid: stats(&fluid),
            packet: stats(&packet),
            packet_stats,
            fluid_wall_s: fluid.wall_s,
            packet_wall_s: packet.wall_s,
        };
        progress(&c);
        out.push(c);
    }
    Ok(out)
}

fn verdict(ok: bool) -> &'static str {
    if ok {
        "agrees"
    } else {
        "differs"
    }
}

/// Mean and p99 (ms) per mode, the packet/fluid ratios and the verdicts.
pub fn table(rows: &[Comparison]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{:<8} {:>6} {:>11} {:>11} {:>7}  {:<8} {:>10} {:>10} {:>7}  {:<8}",
        "policy",
        "tasks",
        "fluid mean",
        "packet mean",
        "ratio",
        "(±5%)",
        "fluid p99",
        "packet p99",
        "ratio",
        "(±10%)"
    );
    for r in rows {
        let _ = writeln!(
            s,
            "{:<8} {:>6} {:>11.3} {:>11.3} {:>7.3}  {:<8} {:>10.3} {:>10.3} {:>7.3}  {:<8}",
            r.policy.name(),
            r.fluid.tasks,
            r.fluid.mean_ns / 1e6,
            r.packet.mean_ns / 1e6,
            r.mean_ratio(),
            verdict(r.mean_agrees()),
            r.fluid.p99_ns as f64 / 1e6,
            r.packet.p99_ns as f64 / 1e6,
            r.p99_ratio(),
            verdict(r.p99_agrees()),
        );
    }
    s
}

/// Baraat Fig. 7's batched reads (§5.1) through both engines: `tasks`
/// tasks at t = 0, each reading `bytes_per_server` from each of three
/// servers into one client over `link_bps` links, as the UDP lab
/// (`udp.rs`, `netsched flowsim fig7`) runs them. FIFO-LM is Baraat with a
/// threshold above the task size (the lab's FIFO). Returns the mean task
/// completion time (ns), fluid then packet.
pub fn fig7_means(
    tasks: u32,
    bytes_per_server: u64,
    link_bps: f64,
    policy: Policy,
    timing: PacketTiming,
) -> Result<(f64, f64), CompareError> {
    use crate::config::TopologyConfig;
    use crate::engine::{Engine, EngineOpts};
    use crate::topology::Topology;
    use crate::workload::{FlowSpec, TaskSpec, NO_GATE};
    if policy.plane().is_none() {
        return Err(NoSwitchPlane(policy).into());
    }
    let topo = Topology::new(&TopologyConfig {
        pods: 1,
        racks_per_pod: 1,
        servers_per_rack: 4,
        host_gbps: link_bps / 1e9,
        tor_oversub: 1.0,
        agg_oversub: 1.0,
    });
    let specs: Vec<TaskSpec> = (0..tasks as u64)
        .map(|i| TaskSpec {
            arrival_ns: 0,
            task_id: i + 1,
            flows: (1..4)
                .map(|server| FlowSpec {
                    src: server,
                    dst: 0,
                    bytes: bytes_per_server,
                    after: NO_GATE,
                    feeds: NO_GATE,
                    delay_ns: 0,
                })
                .collect(),
        })
        .collect();
    let mean = |r: Vec<crate::engine::TaskResult>| {
        r.iter().map(|t| t.completion_ns as f64).sum::<f64>() / r.len().max(1) as f64
    };
    let fluid = Engine::new(
        topo.clone(),
        EngineOpts {
            policy,
            heavy_threshold: f64::INFINITY,
        },
    )
    .run(specs.clone().into_iter());
    let packet = PacketEngine::new(
        topo,
        PacketOpts {
            policy,
            heavy_threshold: f64::INFINITY,
            rtt_ns: timing.rtt_ns,
            ticks_per_rtt: timing.ticks_per_rtt,
            delta_fraction: timing.delta_fraction,
        },
    )?
    .run(specs.into_iter());
    Ok((mean(fluid), mean(packet)))
}
