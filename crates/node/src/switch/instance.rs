//! One hosted scheduler instance: a pool's spine or leaf, its data plane,
//! the runtime state the driver keeps beside it and its per-instance gauges.

use std::net::SocketAddr;

use netsched_core::rng::Rng;
use netsched_core::Plane;

use super::in_flight::InFlight;
use super::reply_routes::ReplyRoutes;
use crate::config::{PoolConfig, Role, SwitchConfig};
use crate::metrics::{Kind, Registry, Slot};

pub(super) struct Instance {
    pub(super) cfg: PoolConfig,
    pub(super) plane: Plane,
    /// Last queue length each downstream worker reported (leaf), for the gauge.
    pub(super) qlen_gauges: Vec<Slot>,
    pub(super) idle_gauge: Slot,
    pub(super) load_gauge: Slot,
    /// Pipeline passes (first, resubmit), copied from the data plane.
    pub(super) passes: [Slot; 2],
    /// How long the data plane took per task.
    pub(super) decision_time: Slot,
    pub(super) live_gauge: Slot,
    /// Leaf: when each worker was last heard from (ns), and whether the data
    /// plane currently has it.
    pub(super) last_seen: Vec<u64>,
    pub(super) alive: Vec<bool>,
    /// Tasks dispatched to each node and not yet answered: the zero-delay
    /// view fed to `jsq` and `pow2-instant` (racksched_wire.rs).
    pub(super) outstanding: Vec<u32>,
    /// Tasks arrive in RackSched's family: notices go up as LOAD_REPORTs.
    pub(super) rs_wire: bool,
    /// Nodes the controller allows (leaf: workers not removed by the admin
    /// API; spine: racks it admitted). All at start.
    pub(super) enabled: Vec<bool>,
    /// Spine: workers per rack behind the installed 1/w (§A.2).
    pub(super) rack_w: Vec<u32>,
    /// Application id → where its tasks came from (reply route).
    pub(super) routes: ReplyRoutes,
    /// Leaf: dispatches not yet answered, so only a reply that answers one
    /// reaches the data plane (in_flight.rs).
    pub(super) in_flight: InFlight,
    /// Sealed state messages: the last sequence number accepted from each
    /// downstream node (crate::notice_auth).
    pub(super) replay: crate::notice_auth::ReplayGuard,
}

impl Instance {
    /// Is `src` the registered address of downstream node `node`?
    #[inline]
    pub(super) fn is_node(&self, node: u16, src: SocketAddr) -> bool {
        self.cfg.downstream.get(node as usize) == Some(&src)
    }

    /// Is `src` a configured upstream spine or in a client network of this
    /// instance?
    #[inline]
    pub(super) fn permits(&self, src: SocketAddr) -> bool {
        self.is_upstream(src)
            || self
                .cfg
                .clients
                .as_ref()
                .is_some_and(|c| c.iter().any(|n| n.contains(&src)))
    }

    /// Is `src` one of this instance's upstream spines?
    #[inline]
    pub(super) fn is_upstream(&self, src: SocketAddr) -> bool {
        self.cfg.upstream.contains(&src)
    }

    /// Open: no client list, tasks from anyone are accepted.
    #[inline]
    pub(super) fn is_open(&self) -> bool {
        self.cfg.clients.is_none()
    }

    /// Where clients submit: a spine, or a leaf with no spine above it.
    #[inline]
    pub(super) fn is_entry(&self) -> bool {
        self.cfg.role == Role::Spine || self.cfg.upstream.is_empty()
    }
}

/// Pool id → instance index + 1 per role (0: not hosted).
pub(super) const SPINE: usize = 0;
pub(super) const LEAF: usize = 1;

pub(super) fn role_slot(role: Role) -> usize {
    match role {
        Role::Spine => SPINE,
        Role::Leaf => LEAF,
    }
}

impl Instance {
    /// Builds instance `pc` of daemon `cfg` and registers its gauges.
    pub(super) fn build(cfg: &SwitchConfig, pc: &PoolConfig, reg: &mut Registry) -> Self {
        let n = pc.downstream.len() as u32;
        // One stream per pool so instances do not move in lockstep.
        let seed = Rng::derive(cfg.seed, pc.pool as u64).next_u64();
        let layer = pc.role;
        // A spine's nodes stand for their racks' workers (§A.2 1/w).
        let weights = match pc.role {
            Role::Spine if !pc.rack_workers.is_empty() => pc.rack_workers.clone(),
            _ => vec![1; n as usize],
        };
        let plane = Plane::build(pc.policy, layer, &weights, seed, &pc.plane_params());
        let pool = pc.pool.to_string();
        // Where a pool's spine and leaf share this daemon, a `role` label
        // keeps their series apart; elsewhere `{pool}` alone names one.
        let both_roles = cfg
            .instances
            .iter()
            .any(|o| o.pool == pc.pool && o.role != pc.role);
        let role = match pc.role {
            Role::Spine => "spine",
            Role::Leaf => "leaf",
        };
        let labels = |extra: &[(&'static str, &str)]| -> Vec<(&str, String)> {
            let mut l = vec![("pool", pool.clone())];
            if both_roles {
                l.push(("role", role.to_string()));
            }
            l.extend(extra.iter().map(|(k, v)| (*k, v.to_string())));
            l
        };
        let reg_metric = |reg: &mut Registry,
                          name: &'static str,
                          help: &'static str,
                          kind: Kind,
                          extra: &[(&'static str, &str)]| {
            let l = labels(extra);
            let l: Vec<(&str, &str)> = l.iter().map(|(k, v)| (*k, v.as_str())).collect();
            reg.register(name, help, kind, &l)
        };
        let qlen_gauges = if pc.role == Role::Leaf {
            (0..n)
                .map(|node| {
                    reg_metric(
                        reg,
                        "netsched_reported_queue_length",
                        "Leaf: queue length a worker last reported (reply or keep-alive)",
                        Kind::Gauge,
                        &[("node", &node.to_string())],
                    )
                })
                .collect()
        } else {
            Vec::new()
        };
        let idle_gauge = reg_metric(
            reg,
            "netsched_idle_nodes",
            "Length of the data plane's idle list (Horus idleNodes)",
            Kind::Gauge,
            &[],
        );
        let load_gauge = reg_metric(
            reg,
            "netsched_rack_load",
            "Leaf: rack average queue length, tasks (Horus A.2)",
            Kind::FloatGauge,
            &[],
        );
        let passes = ["first", "resubmit"].map(|k| {
            reg_metric(
                reg,
                "netsched_pipeline_passes_total",
                "Pipeline passes the data plane ran, first or resubmission (Horus Alg. 1/2)",
                Kind::Counter,
                &[("pass", k)],
            )
        });
        let decision_time = reg_metric(
            reg,
            "netsched_dispatch_decision_seconds",
            "Time the data plane took to handle one task (its dispatch decision)",
            Kind::Histogram,
            &[],
        );
        let live_gauge = reg_metric(
            reg,
            "netsched_live_nodes",
            "Downstream nodes the data plane schedules over",
            Kind::Gauge,
            &[],
        );
        reg.set(live_gauge, n as u64);
        Instance {
            cfg: pc.clone(),
            plane,
            qlen_gauges,
            idle_gauge,
            load_gauge,
            passes,
            decision_time,
            live_gauge,
            last_seen: vec![0; n as usize],
            alive: vec![true; n as usize],
            enabled: vec![true; n as usize],
            rack_w: if pc.rack_workers.is_empty() {
                vec![1; n as usize]
            } else {
                pc.rack_workers.clone()
            },
            outstanding: vec![0; n as usize],
            rs_wire: false,
            routes: ReplyRoutes::new(
                pc.max_routes,
                cfg.max_routes_per_source,
                cfg.route_idle_ms.saturating_mul(1_000_000),
            ),
            // Enough for every worker's full queue (worker.rs).
            in_flight: InFlight::new(if pc.role == Role::Leaf {
                (n as usize * crate::worker::QUEUE_CAPACITY).min(1 << 20)
            } else {
                0
            }),
            replay: Default::default(),
        }
    }
}
