//! The simulator can run Horus with soft state (`[schedulers.horus]
//! soft_state_ms`), to measure the refresh's cost; off by default, so every
//! other result is unchanged. On the authors' 250-worker pool with a 1 ms
//! bound (a refresh every 250 µs, far more often than the runtime's 250 ms,
//! so a short run sees many): the refresh adds its messages and nothing
//! else of note.
//!
//! Run with `-- --nocapture` for the figures (docs/benchmarks.md, *Soft state*).

use std::path::Path;

use netsched_sim::config::{Policy, SimConfig};
use netsched_sim::run::{run_config, RunOpts};

const POOL250: &str = include_str!("../../../experiments/fidelity/horus-sim-pool250.toml");

/// (p99 µs, messages per task, load updates, simulated ns) at `load`.
fn run(load: f64, extra: &str) -> (f64, f64, u64, u64) {
    let text = POOL250
        .replace("tasks_per_worker = 160", "tasks_per_worker = 60")
        .replace("spine_leaf_hops = 4", "spine_leaf_hops = 1")
        + extra;
    let mut cfg = SimConfig::from_toml(&text).unwrap();
    let sweep = cfg.sweep.as_mut().unwrap();
    sweep.policies = vec![Policy::parse("horus").unwrap()];
    sweep.loads = vec![load];
    let r = run_config(&cfg, Path::new("."), &RunOpts::default()).unwrap();
    let s = r[0].summary();
    let msgs: u64 = s.messages.values().sum();
    let updates = s.messages.get("load_update").copied().unwrap_or(0);
    (
        s.response.p99_ns as f64 / 1e3,
        msgs as f64 / s.submitted as f64,
        updates,
        s.window_ns,
    )
}

#[test]
fn soft_state_in_the_simulator_costs_its_refresh_messages() {
    for load in [0.5, 0.9] {
        let off = run(load, "");
        let on = run(load, "\n[schedulers.horus]\nsoft_state_ms = 1\n");
        eprintln!(
            "load {load}: off p99 {:.1} us, {:.4} msgs/task; soft state 1 ms: p99 {:.1} us, {:.4} msgs/task ({:.1} simulated ms)",
            off.0,
            off.1,
            on.0,
            on.1,
            on.3 as f64 / 1e6
        );
        assert!(on.2 > off.2, "load {load}: no refresh was sent");
        assert!(on.1 > off.1);
        assert!(
            on.0 <= off.0 * 1.25,
            "load {load}: p99 {} vs {}",
            on.0,
            off.0
        );
    }
}
