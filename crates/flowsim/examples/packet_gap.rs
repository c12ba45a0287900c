//! Where the packet-level engine's extra task completion time goes, per
//! task, against the fluid engine (docs/flowsim.md, "Packet against flow",
//! switch links binding):
//! `cargo run --profile test -p netsched-flowsim --example packet_gap -- CONFIG TASKS RTT_NS [TOR_OVERSUB] [THRESHOLD_BYTES] [DELTA_FRACTION]`.
//! Prints, per policy (fair, baraat), the excess packet − fluid per task
//! (mean and percentiles), the share of it the worst 10 % of tasks carry,
//! the light (85 % smallest) and heavy tasks' means, and the switch
//! capacity left idle while its port had booked its whole virtual capacity,
//! how often Alg. 2 put a demand back up to the NIC rate, the hand-overs
//! per task (a port's top class changing between control intervals) and
//! the mean standing queue.

use netsched_flowsim::compare::{run_packet, PacketTiming};
use netsched_flowsim::engine::TaskResult;
use netsched_flowsim::run::run_one;
use netsched_flowsim::workload::Generator;
use netsched_flowsim::{FlowConfig, Policy};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 4 {
        eprintln!(
            "usage: packet_gap CONFIG TASKS RTT_NS [TOR_OVERSUB] [THRESHOLD_BYTES] [DELTA_FRACTION]"
        );
        std::process::exit(2);
    }
    let text = std::fs::read_to_string(&args[1]).expect("config");
    let mut cfg = FlowConfig::from_toml(&text).expect("valid config");
    cfg.workload.tasks = args[2].parse().expect("task count");
    let rtt_ns: u64 = args[3].parse().expect("RTT in ns");
    // "-" leaves an optional argument at the config's value.
    if let Some(v) = args.get(4).filter(|v| *v != "-") {
        cfg.topology.tor_oversub = v.parse().expect("ToR oversubscription");
    }
    if let Some(v) = args.get(5).filter(|v| *v != "-") {
        cfg.baraat.threshold_bytes = Some(v.parse().expect("threshold bytes"));
    }
    let gen = Generator::new(&cfg);
    let mut timing = PacketTiming {
        rtt_ns,
        ..PacketTiming::default()
    };
    if let Some(v) = args.get(6) {
        timing.delta_fraction = v.parse().expect("δ as a fraction of the NIC rate");
    }
    for policy in [Policy::Fair, Policy::Baraat] {
        let mut fluid = run_one(&cfg, &gen, policy, None).tasks;
        fluid.sort_by_key(|t| t.index);
        let (packet, stats) = run_packet(&cfg, &gen, policy, timing).expect("fair or baraat");
        report(policy, rtt_ns, &fluid, &packet.tasks);
        println!(
            "  switch capacity idle while fully booked: {:.2} % of {:.3e} bits; demand re-raised to the NIC rate in {:.2} % of {} requests",
            100.0 * stats.switch_booked_idle_bits / stats.switch_active_bits.max(1.0),
            stats.switch_active_bits,
            100.0 * stats.demand_reraises as f64 / stats.requests.max(1) as f64,
            stats.requests
        );
        let n = cfg.workload.tasks.max(1) as f64;
        println!(
            "  hand-overs per task: {:.2} at switch ports, {:.2} at host ports; mean queue {:.0} bytes over all links",
            stats.switch_handovers as f64 / n,
            stats.host_handovers as f64 / n,
            stats.queue_byte_ticks / stats.ticks.max(1) as f64
        );
    }
}

fn report(policy: Policy, rtt_ns: u64, fluid: &[TaskResult], packet: &[TaskResult]) {
    let n = fluid.len();
    let ms = |ns: f64| ns / 1e6;
    let mut excess: Vec<f64> = fluid
        .iter()
        .zip(packet)
        .map(|(f, p)| p.completion_ns as f64 - f.completion_ns as f64)
        .collect();
    let total: f64 = excess.iter().sum();
    excess.sort_by(f64::total_cmp);
    let at = |q: f64| ms(excess[((n - 1) as f64 * q) as usize]);
    let worst: f64 = excess[n * 9 / 10..].iter().sum();
    println!(
        "{}: RTT {} µs: excess per task mean {:.3} ms ({:.0} RTTs), p10 {:.3} p50 {:.3} p90 {:.3} p99 {:.3} ms; worst 10 % of tasks carry {:.0} %",
        policy.name(),
        rtt_ns / 1000,
        ms(total / n as f64),
        total / n as f64 / rtt_ns as f64,
        at(0.1),
        at(0.5),
        at(0.9),
        at(0.99),
        100.0 * worst / total
    );
    let mut by_size: Vec<(u64, f64, f64)> = fluid
        .iter()
        .zip(packet)
        .map(|(f, p)| (f.bytes, f.completion_ns as f64, p.completion_ns as f64))
        .collect();
    by_size.sort_by_key(|x| x.0);
    let split = n * 85 / 100;
    for (name, part) in [("light", &by_size[..split]), ("heavy", &by_size[split..])] {
        let m = part.len().max(1) as f64;
        let f: f64 = part.iter().map(|x| x.1).sum::<f64>() / m;
        let p: f64 = part.iter().map(|x| x.2).sum::<f64>() / m;
        println!(
            "  {name} ({} tasks): fluid mean {:.3} ms, packet {:.3} ms, ratio {:.3}",
            part.len(),
            ms(f),
            ms(p),
            p / f
        );
    }
}
