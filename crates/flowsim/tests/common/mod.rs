//! Topology and task builders shared by the flowsim integration tests
//! (`examples.rs`, `packet.rs`).

use netsched_flowsim::config::TopologyConfig;
use netsched_flowsim::topology::Topology;
use netsched_flowsim::workload::{FlowSpec, TaskSpec, NO_GATE};

/// One pod of two racks of four servers; ToR uplinks `tor_oversub`:1.
pub fn topo(tor_oversub: f64) -> Topology {
    Topology::new(&TopologyConfig {
        pods: 1,
        racks_per_pod: 2,
        servers_per_rack: 4,
        host_gbps: 1.0,
        tor_oversub,
        agg_oversub: 1.0,
    })
}

/// An ungated flow of `bytes` from `src` to `dst`.
pub fn flow(src: u32, dst: u32, bytes: u64) -> FlowSpec {
    FlowSpec {
        src,
        dst,
        bytes,
        after: NO_GATE,
        feeds: NO_GATE,
        delay_ns: 0,
    }
}

pub fn task(arrival_ns: u64, task_id: u64, flows: Vec<FlowSpec>) -> TaskSpec {
    TaskSpec {
        arrival_ns,
        task_id,
        flows,
    }
}
