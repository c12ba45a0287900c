//! Scheduler throughput with no-op executors (Draconis §8.2, Fig. 5b) against
//! its closed form. A closed loop keeps the scheduler's queue full, so every
//! executor loops pull → task → pull without waiting:
//!
//! - Draconis in the switch: each executor makes one decision per pull round
//!   trip (two host↔switch links) plus its per-task overhead (the service
//!   time), so throughput = executors / (2·link + overhead), capped at
//!   switch_pps / 2 when the pipeline rate is set (a task costs two passes:
//!   its job_submission and the task_request that takes it).
//! - Draconis-Server: the same loop with the server two links away and one
//!   step per request, capped at 1 / (2·step) (one step to enqueue a
//!   one-task job, one to dequeue it).

use std::path::Path;

use netsched_sim::pull::{self, report, PullConfig, PullSummary};

const LINK_NS: u64 = 2_000;

fn one(text: &str) -> PullSummary {
    let cfg = PullConfig::from_toml(text).unwrap_or_else(|e| panic!("config: {e}"));
    let runs = pull::run_config(&cfg, Path::new(".")).unwrap();
    let mut v = report::summaries(&cfg, &runs);
    assert_eq!(v.len(), 1);
    v.remove(0)
}

/// `executors` no-op executors (16 per node), each task `overhead_ns` of
/// executor work, clients keeping 1,024 tasks outstanding.
fn noop(policy: &str, executors: u32, overhead_ns: u64, extra: &str) -> String {
    let per_node = executors.min(16);
    assert_eq!(executors % per_node, 0);
    format!(
        r#"
seed = 5
policy = "{policy}"
[cluster]
nodes = {nodes}
executors_per_node = {per_node}
[network]
link_ns = {LINK_NS}
[workload]
service = {{ kind = "fixed", value_us = {overhead_us} }}
arrival = "closed-loop"
outstanding = 1024
tasks = 20000
[client]
timeout_us = 1000000
{extra}
"#,
        nodes = executors / per_node,
        overhead_us = overhead_ns as f64 / 1e3,
    )
}

fn with_pps(config: &str, pps: u64) -> String {
    config.replace("[network]\n", &format!("[network]\nswitch_pps = {pps}\n"))
}

fn assert_close(got: f64, want: f64, rel: f64, what: &str, s: &PullSummary) {
    assert!(
        (got - want).abs() <= rel * want,
        "{what}: {got:.0} decisions/s, closed form {want:.0} (±{:.2} %): {s:?}",
        rel * 100.0
    );
}

/// Every task ran exactly once and nothing was dropped or resubmitted: the
/// throughput is the scheduler's, not an artefact of lost work.
fn clean(s: &PullSummary) {
    assert_eq!(s.completed, s.submitted, "{s:?}");
    assert_eq!(s.decisions, 20_000, "{s:?}");
    assert_eq!(
        (s.dropped, s.timeouts, s.duplicate_executions),
        (0, 0, 0),
        "{s:?}"
    );
}

#[test]
fn draconis_throughput_is_executors_over_the_pull_loop() {
    for (executors, overhead_ns) in [(16, 1), (64, 1), (208, 1), (64, 1_000)] {
        let s = one(&noop("draconis", executors, overhead_ns, ""));
        clean(&s);
        let want = executors as f64 * 1e9 / (2 * LINK_NS + overhead_ns) as f64;
        assert_close(
            s.steady_decisions_per_s,
            want,
            0.002,
            &format!("draconis, {executors} executors, {overhead_ns} ns per task"),
            &s,
        );
        // The whole-run rate includes the ramp-up and the drain: lower.
        assert!(s.decisions_per_s < s.steady_decisions_per_s, "{s:?}");
        assert_eq!(s.offered_tps, 0.0, "a closed loop has no offered rate");
    }
}

#[test]
fn server_throughput_is_the_pull_loop_capped_by_its_step_cost() {
    // (executors, step ns): a 10 ns step never saturates 4 executors; the
    // socket server's 3.125 µs (§8.1's 160 K tasks/s) and the DPDK server's
    // 450 ns (§8.2's 1.1 M) saturate at 16 and 208 executors.
    for (executors, step_ns) in [(4, 10), (16, 3_125), (208, 3_125), (208, 450)] {
        let s = one(&noop(
            "draconis-server",
            executors,
            1,
            &format!("[server]\nstep_ns = {step_ns}"),
        ));
        clean(&s);
        // Request: two links to the server, one step, two links back.
        let pull_loop = executors as f64 * 1e9 / (4 * LINK_NS + step_ns + 1) as f64;
        let server = 1e9 / (2 * step_ns) as f64;
        assert_close(
            s.steady_decisions_per_s,
            pull_loop.min(server),
            0.005,
            &format!("draconis-server, {executors} executors, {step_ns} ns per step"),
            &s,
        );
    }
}

#[test]
fn switch_pipeline_rate_caps_draconis_at_half_the_pass_rate() {
    // Without a pipeline limit: 16 M decisions/s.
    let unlimited = 64.0 * 1e9 / (2 * LINK_NS + 1) as f64;
    // 10 M passes/s: two passes per task cap it at 5 M/s.
    let s = one(&with_pps(&noop("draconis", 64, 1, ""), 10_000_000));
    clean(&s);
    assert_close(s.steady_decisions_per_s, 5e6, 0.002, "10 M pps", &s);
    // Tofino's 4.7 G packets/s (§8.2) is far above what 64 executors ask.
    let s = one(&with_pps(&noop("draconis", 64, 1, ""), 4_700_000_000));
    clean(&s);
    assert_close(s.steady_decisions_per_s, unlimited, 0.002, "4.7 G pps", &s);
}

/// Fig. 5b's switch capacity as experiments/draconis-throughput.toml
/// measures it: links of 0 ns and 1 ns tasks, so 208 executors ask faster
/// than the pipeline answers, and decisions/s is half the pass rate (a
/// job_submission and a task_request per decision) at every rate: it is
/// measured from the switch model and follows its pipeline rate.
#[test]
fn switch_capacity_is_measured_and_scales_with_the_pipeline_rate() {
    let zero_links =
        noop("draconis", 208, 1, "").replace(&format!("link_ns = {LINK_NS}"), "link_ns = 0");
    for pps in [100_000_000u64, 1_000_000_000, 4_700_000_000] {
        let s = one(&with_pps(&zero_links, pps));
        clean(&s);
        assert_close(
            s.steady_decisions_per_s,
            pps as f64 / 2.0,
            0.005,
            &format!("{pps} passes/s, zero links"),
            &s,
        );
    }
}

#[test]
fn closed_loop_config_errors_name_the_field() {
    let err = |text: &str| PullConfig::from_toml(text).unwrap_err().to_string();
    let base = noop("draconis", 16, 1, "");
    assert!(err(&base.replace("outstanding = 1024\n", "")).contains("workload.outstanding"));
    assert!(err(&base.replace("timeout_us = 1000000\n", "")).contains("client.timeout_us"));
    assert!(err(&base.replace("arrival = \"closed-loop\"\n", "")).contains("workload.outstanding"));
    assert!(err(&with_pps(&base, 0)).contains("network.switch_pps"));
    assert!(err(&format!("{base}[server]\ncores = 0\n")).contains("server.cores"));
}

/// Fig. 5b's server row as experiments/draconis-throughput.toml measures it:
/// 208 no-op executors, 0 ns links, so the server's cores are the only
/// limit. Its tasks/s come from running the server model and follow what
/// each message kind costs and how many cores serve them: a one-task job is
/// a submission and an assignment on one core, 1 / (submit + assign), and
/// cores multiply it. With only 8 tasks outstanding most of the 208
/// executors find the queue empty, so their polls take the core too and the
/// poll cost moves the figure.
#[test]
fn server_capacity_is_measured_and_follows_its_costs_and_cores() {
    let zero_links = |server: &str, outstanding: u32| {
        noop("draconis-server", 208, 1, &format!("[server]\n{server}"))
            .replace(&format!("link_ns = {LINK_NS}"), "link_ns = 0")
            .replace(
                "outstanding = 1024",
                &format!("outstanding = {outstanding}"),
            )
    };
    for (server, want) in [
        ("step_ns = 450", 1e9 / 900.0),
        ("step_ns = 450\nassign_ns = 150", 1e9 / 600.0),
        (
            "step_ns = 450\nsubmit_ns = 3125\nassign_ns = 3125",
            1e9 / 6250.0,
        ),
        ("step_ns = 450\ncores = 2", 2e9 / 900.0),
        ("step_ns = 450\ncores = 4", 4e9 / 900.0),
    ] {
        let s = one(&zero_links(server, 4096));
        clean(&s);
        eprintln!("{server}: {:.0} tasks/s", s.steady_decisions_per_s);
        assert_close(s.steady_decisions_per_s, want, 0.005, server, &s);
    }
    // Polls share the core: cheaper polls, more tasks per second.
    let polled = |poll_ns: u64| {
        let s = one(&zero_links(&format!("poll_ns = {poll_ns}"), 8));
        clean(&s);
        assert!(s.noops > s.decisions, "poll_ns {poll_ns}: {s:?}");
        s.steady_decisions_per_s
    };
    let (dear, cheap) = (polled(900), polled(45));
    eprintln!("8 outstanding: {dear:.0} tasks/s at 900 ns per poll, {cheap:.0} at 45 ns");
    assert!(cheap > 1.5 * dear, "{cheap:.0} vs {dear:.0}");
}
