//! A fixed amount of Draconis work for instruction counts (docs/benchmarks.md,
//! "Draconis data plane"): `pull_steady <fcfs|priority|resource> <steps>`
//! under `valgrind --tool=callgrind`, where criterion's timings are too
//! noisy on a shared machine to show a few percent.

use netsched_core::pull::bench::{Shape, Steady};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let shape = match args.get(1).map(String::as_str) {
        Some("fcfs") => Shape::Fcfs,
        Some("priority") => Shape::Priority,
        Some("resource") => Shape::Resource,
        _ => {
            eprintln!("usage: pull_steady <fcfs|priority|resource> <steps>");
            std::process::exit(2);
        }
    };
    let steps: u64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(200_000);
    let mut steady = Steady::new(shape, 1024);
    for _ in 0..steps {
        steady.step();
    }
    println!("{} decisions", steady.decisions);
}
