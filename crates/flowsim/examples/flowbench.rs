//! One policy of a flowsim config, for timing without building the CLI:
//! `cargo run --release -p netsched-flowsim --example flowbench -- CONFIG POLICY [TASKS] [no-swap-timers]`
//! (the last: pFabric without its order-swap timers, the reference their
//! cost is measured against).

use netsched_flowsim::run::run_one_with;
use netsched_flowsim::workload::Generator;
use netsched_flowsim::{FlowConfig, Policy};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 {
        eprintln!("usage: flowbench CONFIG POLICY [TASKS] [no-swap-timers]");
        std::process::exit(2);
    }
    let text = std::fs::read_to_string(&args[1]).expect("config");
    let mut cfg = FlowConfig::from_toml(&text).expect("valid config");
    if let Some(n) = args.get(3) {
        cfg.workload.tasks = n.parse().expect("task count");
    }
    let policy = Policy::parse(&args[2]).expect("policy");
    let gen = Generator::new(&cfg);
    let timers = args.get(4).map(String::as_str) != Some("no-swap-timers");
    let r = run_one_with(&cfg, &gen, policy, None, |e| e.swap_timers = timers);
    let mut ct: Vec<u64> = r.tasks.iter().map(|t| t.completion_ns).collect();
    ct.sort_unstable();
    let sum: u128 = ct.iter().map(|&c| c as u128).sum();
    println!(
        "{} tasks={} flows={} events={} crossings={} recomputes={} flows/recompute={:.1} fast={} wall={:.2}s mean={:.3}ms p50={:.3}ms max={:.3}ms",
        r.label(),
        ct.len(),
        r.stats.flows,
        r.stats.events,
        r.stats.crossings,
        r.stats.recomputes,
        r.stats.flows_recomputed as f64 / r.stats.recomputes.max(1) as f64,
        r.stats.fast_departures,
        r.wall_s,
        sum as f64 / ct.len().max(1) as f64 / 1e6,
        ct[ct.len() / 2] as f64 / 1e6,
        ct[ct.len() - 1] as f64 / 1e6,
    );
}
