//! R2P2 (JBSQ) and client-side scheduling through the whole simulator
//! (RackSched §4.5, Fig. 14).

use std::path::Path;

use netsched_sim::config::SimConfig;
use netsched_sim::metrics::Summary;
use netsched_sim::run::{run_config, RunOpts};

#[path = "common/rack.rs"]
mod rack;
use rack::rack_of_64;

fn config(policy: &str, schedulers: &str, model: &str) -> String {
    config_with_hop(policy, schedulers, model, 2.0)
}

fn config_with_hop(policy: &str, schedulers: &str, model: &str, hop_us: f64) -> String {
    rack_of_64(3, policy, "rs-bimodal", 0.9, 300)
        + &format!(
            r#"[network]
hop_delay = {{ kind = "constant", us = {hop_us} }}
loss = 0
[workers]
model = "{model}"
ps_slice_us = 250
[schedulers]
{schedulers}
"#
        )
}

fn run(text: &str) -> Summary {
    let cfg = SimConfig::from_toml(text).unwrap();
    let runs = run_config(&cfg, Path::new("."), &RunOpts::default()).unwrap();
    Summary::of_pool(&runs[0].overall)
}

#[test]
fn jbsq_with_bound_one_is_the_central_queue() {
    let r2p2 = run(&config("r2p2", "jbsq_bound = 1", "fcfs"));
    let central = run(&config("central", "", "fcfs"));
    assert_eq!(r2p2.aborted, 0);
    assert!(r2p2.completed > 15_000);
    assert_eq!(r2p2.completed, central.completed);
    assert_eq!(r2p2.response.p50_ns, central.response.p50_ns);
    assert_eq!(r2p2.response.p99_ns, central.response.p99_ns);
    assert_eq!(r2p2.response.mean_ns, central.response.mean_ns);
}

#[test]
fn head_of_line_blocking_grows_with_the_bound() {
    // Bimodal(90-10) on non-preemptive cores: a 50 µs task queued behind a
    // 500 µs one at its worker waits for it, which JBSQ(1) never lets
    // happen (tasks wait in the one FIFO until a core is free). Zero delay:
    // with network hops, JBSQ(1) also idles each core for a round trip per
    // task, which is what R2P2's k > 1 hides.
    // Load 0.95: JBSQ(1) is M/G/64 FCFS.
    let at = |k: u32| {
        run(
            &config_with_hop("r2p2", &format!("jbsq_bound = {k}"), "fcfs", 0.0)
                .replace("load = 0.9", "load = 0.95"),
        )
    };
    let (k1, k3) = (at(1), at(3));
    assert_eq!(k3.aborted, 0);
    for (q, a, b) in [
        ("mean", k3.response.mean_ns, k1.response.mean_ns),
        ("p99", k3.response.p99_ns as f64, k1.response.p99_ns as f64),
        (
            "p99.9",
            k3.response.p999_ns as f64,
            k1.response.p999_ns as f64,
        ),
    ] {
        assert!(a > 1.1 * b, "{q}: JBSQ(3) {a} ns vs JBSQ(1) {b} ns");
    }
    assert!(k3.response.p999_ns as f64 > 1.4 * k1.response.p999_ns as f64);
}

#[test]
fn one_client_is_the_single_scheduler_run() {
    let one = run(&config("pow2-delayed", "clients = 1", "server-ps"));
    let default = run(&config("pow2-delayed", "", "server-ps"));
    assert_eq!(one.response.p99_ns, default.response.p99_ns);
    assert_eq!(one.response.mean_ns, default.response.mean_ns);
    let many = run(&config("pow2-delayed", "clients = 100", "server-ps"));
    assert_eq!(many.aborted, 0);
    assert_eq!(many.completed, one.completed, "same arrivals, none lost");
}

#[test]
fn clients_need_a_flat_policy_and_bounds_are_positive() {
    let e = SimConfig::from_toml(&config("racksched", "clients = 10", "server-ps")).unwrap_err();
    assert!(e.to_string().contains("schedulers.clients"), "{e}");
    let e = SimConfig::from_toml(&config("r2p2", "jbsq_bound = 0", "fcfs")).unwrap_err();
    assert!(e.to_string().contains("schedulers.jbsq_bound"), "{e}");
    let e = SimConfig::from_toml(&config("random", "clients = 0", "fcfs")).unwrap_err();
    assert!(e.to_string().contains("schedulers.clients"), "{e}"); // The power-of-k data planes hold at most 16 sample copies.
    let e = SimConfig::from_toml(&config("rs-h", "samples = 17", "fcfs")).unwrap_err();
    assert_eq!(
        e.to_string(),
        "schedulers.samples: must be in 1..=16, got 17"
    );
    assert!(SimConfig::from_toml(&config("rs-h", "samples = 16", "fcfs")).is_ok());
}

#[test]
fn the_old_k_key_is_refused_naming_the_new_ones() {
    let e = SimConfig::from_toml(&config("rs-h", "k = 2", "fcfs")).unwrap_err();
    assert!(e.field.starts_with("schedulers.k (line "), "{e}");
    assert_eq!(
        e.msg,
        "`k` is renamed: use `samples` (samples per power-of-k decision) or `jbsq_bound` (JBSQ's bound)"
    );
    for topology in [
        "topology = { kind = \"fat-tree\", k = 4 }\n",
        "[topology]\nkind = \"fat-tree\"\nk = 4\n",
    ] {
        let e = SimConfig::from_toml(topology).unwrap_err();
        assert!(e.field.starts_with("topology"), "{e}");
        assert_eq!(
            e.msg,
            "`k` is renamed: use `radix` (the fat tree's switch radix)"
        );
    }
    let fat_tree = config("rs-h", "", "fcfs").replace(
        "kind = \"single-rack\"\nservers = 8\n",
        "kind = \"fat-tree\"\nradix = 4\n",
    );
    let ok = SimConfig::from_toml(&fat_tree).unwrap();
    assert_eq!(ok.topology.build().unwrap().leaves(), 8);
}
