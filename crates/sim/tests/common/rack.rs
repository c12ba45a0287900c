//! The RackSched setting shared by the push simulator's whole-run tests.

/// One rack of 8 servers × 8 cores with one colocated pool of all 64 workers
/// (RackSched §4.1), a preset service at `load`. Callers append the sections
/// they set ([network], [workers], [schedulers], …).
pub fn rack_of_64(
    seed: u64,
    policy: &str,
    service: &str,
    load: f64,
    tasks_per_worker: u32,
) -> String {
    format!(
        r#"
seed = {seed}
policy = "{policy}"
[topology]
kind = "single-rack"
servers = 8
cores_per_server = 8
[placement]
sizes = [64]
mode = "colocated"
[workload]
service = {{ kind = "preset", name = "{service}" }}
load = {load}
tasks_per_worker = {tasks_per_worker}
"#
    )
}
