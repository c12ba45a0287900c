//! `placement.ratio` (Horus §3.2, §5.3: r leaf schedulers per spine
//! scheduler) must either change the run or be refused.
//! It can only change anything where a pod has more than one spine: a
//! `racks` topology declares its spines with `spines`; with one spine per
//! pod every group of racks shares it, whatever r is.

use std::path::Path;

use netsched_sim::config::SimConfig;
use netsched_sim::metrics::Summary;
use netsched_sim::run::{run_config, RunOpts};
use netsched_sim::topology::place;

/// Eight racks of four one-core servers; one pool of all 32 workers.
fn config(topology_extra: &str, placement_extra: &str) -> Result<SimConfig, String> {
    let text = format!(
        r#"
seed = 3
policy = "horus"
[topology]
kind = "racks"
racks = [[1, 1, 1, 1], [1, 1, 1, 1], [1, 1, 1, 1], [1, 1, 1, 1],
         [1, 1, 1, 1], [1, 1, 1, 1], [1, 1, 1, 1], [1, 1, 1, 1]]
{topology_extra}
[placement]
sizes = [32]
mode = "colocated"
{placement_extra}
[workload]
service = {{ kind = "exp", mean_us = 100 }}
load = 0.8
tasks_per_worker = 200
[network]
hop_delay = {{ kind = "exp", mean_us = 1 }}
loss = 0
"#
    );
    SimConfig::from_toml(&text).map_err(|e| e.to_string())
}

#[test]
fn ratio_on_a_topology_with_one_spine_is_an_error() {
    for ratio in [1, 5, 10, 64] {
        let e = config("", &format!("ratio = {ratio}")).unwrap_err();
        assert!(e.starts_with("placement.ratio"), "{e}");
        assert!(e.contains("one spine"), "{e}");
        assert!(!e.contains('\n'), "one line: {e}");
        let e = config("spines = 1", &format!("ratio = {ratio}")).unwrap_err();
        assert!(e.starts_with("placement.ratio"), "{e}");
    }
    // Left out, the default applies silently: there is nothing to choose.
    config("", "").unwrap();
    // The other one-spine topologies refuse it too.
    let single = r#"
policy = "jsq"
[topology]
kind = "single-rack"
servers = 4
[placement]
sizes = [8]
ratio = 10
[workload]
service = { kind = "exp", mean_us = 100 }
load = 0.5
tasks_per_worker = 10
"#;
    let e = SimConfig::from_toml(single).unwrap_err().to_string();
    assert!(e.starts_with("placement.ratio"), "{e}");
}

#[test]
fn ratio_groups_racks_under_a_racks_topologys_spines() {
    let spines_of = |ratio: u32| {
        let cfg = config("spines = 4", &format!("ratio = {ratio}")).unwrap();
        let topo = cfg.topology.build().unwrap();
        assert_eq!(topo.spines(), 4);
        let pools = place(&topo, &cfg.placement, cfg.seed).unwrap();
        pools[0].spines.len()
    };
    // 8 racks in groups of at most r: 4, 2 and 1 groups, each its own spine.
    assert_eq!(spines_of(2), 4);
    assert_eq!(spines_of(4), 2);
    assert_eq!(spines_of(8), 1);
    // More groups than spines: groups share the pod's 4 spines.
    assert_eq!(spines_of(1), 4);
    // And it changes the run: Horus with one spine vs four.
    let run = |ratio: u32| {
        let cfg = config("spines = 4", &format!("ratio = {ratio}")).unwrap();
        let runs = run_config(&cfg, Path::new("."), &RunOpts::default()).unwrap();
        Summary::of_pool(&runs[0].overall).to_json()
    };
    assert_ne!(run(2), run(8));
}

#[test]
fn a_racks_topology_needs_a_spine() {
    let e = config("spines = 0", "").unwrap_err();
    assert!(e.starts_with("topology.spines"), "{e}");
}
