//! Configurations shared by the pull simulator's test binaries.

/// Draconis FCFS on one node of `executors` executors, zero link and
/// recirculation latency, exponential 100 µs tasks at `load`, executors
/// re-polling every 1 µs: the M/M/c setting (tests/pull.rs) and the
/// realized-load replay (tests/pull_streams.rs).
pub fn zero_rtt_draconis(executors: u32, load: f64, tasks: u64, seed: u64) -> String {
    format!(
        r#"
seed = {seed}
policy = "draconis"
[cluster]
nodes = 1
executors_per_node = {executors}
[network]
link_ns = 0
recirc_ns = 0
[workload]
service = {{ kind = "exp", mean_us = 100 }}
load = {load}
tasks = {tasks}
[draconis]
retry_us = 1
"#
    )
}
