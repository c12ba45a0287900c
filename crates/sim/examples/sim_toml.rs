//! Runs a simulator TOML and prints one line per (policy, load): the same
//! simulation as `netsched sim -c FILE`, without building the CLI, which links
//! RocksDB through netsched-node.
//!
//! `cargo run --release -p netsched-sim --example sim_toml -- FILE.toml`

use std::path::Path;

use netsched_sim::config::SimConfig;
use netsched_sim::run::{run_config, RunOpts};

fn main() {
    let path = std::env::args().nth(1).expect("usage: sim_toml FILE.toml");
    let fail = |e: String| -> ! {
        eprintln!("error: {path}: {e}");
        std::process::exit(1)
    };
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| fail(e.to_string()));
    let cfg = SimConfig::from_toml(&text).unwrap_or_else(|e| fail(e.to_string()));
    let base = Path::new(&path).parent().unwrap_or(Path::new("."));
    let runs = run_config(&cfg, base, &RunOpts::default()).unwrap_or_else(|e| fail(e.to_string()));
    println!("policy\tload\tp50_us\tp99_us\tmean_us\twait_p50_us\tcompleted\taborted");
    for r in &runs {
        let s = r.summary();
        println!(
            "{}\t{}\t{:.1}\t{:.1}\t{:.1}\t{:.1}\t{}\t{}",
            r.policy.name(),
            r.load,
            s.response.p50_ns as f64 / 1e3,
            s.response.p99_ns as f64 / 1e3,
            s.response.mean_ns / 1e3,
            s.waiting.p50_ns as f64 / 1e3,
            s.completed,
            s.aborted,
        );
    }
}
