//! The pull simulator (crates/sim/src/pull) against queueing theory and its
//! own accounting. The M/M/c check pools 1.4M tasks over parallel
//! replications (≈ 20 s in the test profile); every other run is small
//! (≤ 60K tasks).

use std::path::Path;

use netsched_sim::pull::{self, report, PullConfig, PullSummary};

mod common;
use common::zero_rtt_draconis as mmc_config;

fn run(text: &str) -> Vec<PullSummary> {
    let cfg = PullConfig::from_toml(text).unwrap_or_else(|e| panic!("config: {e}"));
    let runs = pull::run_config(&cfg, Path::new(".")).unwrap();
    report::summaries(&cfg, &runs)
}

fn one(text: &str) -> PullSummary {
    let mut v = run(text);
    assert_eq!(v.len(), 1);
    v.remove(0)
}

/// Erlang C: probability that an arrival waits in M/M/c with offered load a = λ/μ.
fn erlang_c(c: u32, a: f64) -> f64 {
    let mut term = 1.0; // a^k / k!
    let mut sum = 1.0;
    for k in 1..c {
        term *= a / k as f64;
        sum += term;
    }
    let last = term * a / c as f64 / (1.0 - a / c as f64);
    last / (sum + last)
}

/// One M/M/c point: `c` executors at load `rho`, `seeds.len()` independent
/// replications of `tasks` tasks each, pooled (their histograms merged).
/// Tolerances are relative to the M/M/c value, plus, where stated, one retry
/// interval (1 µs) for the pull protocol itself: an executor that got a
/// no-op asks again `retry_us` later, so a task that arrives while some
/// executor is idle waits up to one retry interval (never more: with zero
/// RTT, a queued task is taken the instant an executor completes, since the
/// completion carries the next request).
/// One replication's realized arrival rate and service mean (sampled, so
/// off the nominal ones by a few standard errors) and its mean wait.
struct Realized {
    lambda_per_us: f64,
    service_us: f64,
}

struct MmcPoint {
    c: u32,
    rho: f64,
    tasks: u64,
    seeds: std::ops::RangeInclusive<u64>,
    /// Relative tolerance of P(W > retry) and of the p90 and p99.
    rel_p: f64,
    rel_q: f64,
    /// Relative tolerance of the mean wait (plus one retry interval).
    rel_mean: f64,
    /// Relative tolerance of the mean wait against Erlang C at the realized
    /// load: the retry gap's share (+1.3 %) plus two standard errors of the
    /// pooled mean, no retry interval added.
    rel_realized: f64,
}

fn check_mmc(points: &[MmcPoint]) {
    const RETRY_NS: u64 = 1_000;
    const S_US: f64 = 100.0;
    // Every replication on its own thread: the runs are independent and
    // each is a function of its seed alone.
    let pooled: Vec<(netsched_sim::metrics::LatencyHist, Vec<Realized>)> =
        std::thread::scope(|scope| {
            let handles: Vec<Vec<_>> = points
                .iter()
                .map(|p| {
                    p.seeds
                        .clone()
                        .map(|seed| {
                            scope.spawn(move || {
                                let cfg =
                                    PullConfig::from_toml(&mmc_config(p.c, p.rho, p.tasks, seed))
                                        .unwrap();
                                let runs = pull::run_config(&cfg, Path::new(".")).unwrap();
                                let m = &runs[0].metrics;
                                assert_eq!(m.completed, m.submitted, "seed {seed}");
                                let arrivals = (m.last_arrival_ns - m.first_arrival_ns) as f64;
                                // Over every task: `submitted` and `completed`
                                // count the measured ones (after the warm-up).
                                let realized = Realized {
                                    lambda_per_us: (p.tasks - 1) as f64 / arrivals * 1e3,
                                    service_us: m.busy_ns as f64 / p.tasks as f64 / 1e3,
                                };
                                (m.sched.clone(), realized)
                            })
                        })
                        .collect()
                })
                .collect();
            handles
                .into_iter()
                .map(|hs| {
                    let mut pooled = netsched_sim::metrics::LatencyHist::new();
                    let mut realized = Vec::new();
                    for h in hs {
                        let (h, r) = h.join().unwrap();
                        pooled.merge(&h);
                        realized.push(r);
                    }
                    (pooled, realized)
                })
                .collect()
        });
    for (p, (h, realized)) in points.iter().zip(&pooled) {
        let (c, rho) = (p.c, p.rho);
        let a = rho * c as f64;
        let pw = erlang_c(c, a);
        // The queue drains at cμ − λ per µs when every executor is busy.
        let drain = (c as f64 - a) / S_US;
        let n = h.count() as f64;
        assert_eq!(n as u64, p.tasks * 9 / 10 * p.seeds.clone().count() as u64);
        // Erlang C directly: P(W > t) = C·e^{-(cμ-λ)t}, at t = one retry
        // interval, below which waits are the pull protocol's own.
        let t_us = RETRY_NS as f64 / 1e3;
        let p_theory = pw * (-drain * t_us).exp();
        let p_got = 1.0 - h.count_at_most(RETRY_NS) as f64 / n;
        assert!(
            (p_got - p_theory).abs() <= p.rel_p * p_theory,
            "c={c} ρ={rho}: P(W > 1 µs) {p_got:.4}, Erlang C {p_theory:.4} (±{:.1} %)",
            p.rel_p * 100.0
        );
        let mean = h.mean() / 1e3;
        let theory = pw / drain;
        eprintln!(
            "c={c} ρ={rho} n={n}: P(W > 1 µs) {p_got:.6} vs {p_theory:.4}, mean {mean:.2} vs \
             {theory:.2} µs, p90 {:.1} vs {:.1}, p99 {:.1} vs {:.1}",
            h.quantile(0.9) as f64 / 1e3,
            (pw / 0.1).ln() / drain,
            h.quantile(0.99) as f64 / 1e3,
            (pw / 0.01).ln() / drain,
        );
        // Erlang C at the realized load: the replications' mean arrival
        // rate and service mean, which sampling puts off the nominal ones
        // (docs/draconis.md, "the M/M/c excess").
        let reps = realized.len() as f64;
        let lambda = realized.iter().map(|r| r.lambda_per_us).sum::<f64>() / reps;
        let service = realized.iter().map(|r| r.service_us).sum::<f64>() / reps;
        let a_realized = lambda * service;
        let theory_realized = erlang_c(c, a_realized) * service / (c as f64 - a_realized);
        eprintln!(
            "c={c} ρ={rho}: realized ρ {:.4}, mean wait {mean:.2} µs vs Erlang C {theory_realized:.2} \
             at the realized load ({:+.1} %), {theory:.2} at the nominal ({:+.1} %)",
            a_realized / c as f64,
            (mean / theory_realized - 1.0) * 100.0,
            (mean / theory - 1.0) * 100.0,
        );
        assert!(
            (mean - theory_realized).abs() <= p.rel_realized * theory_realized,
            "c={c} ρ={rho}: mean wait {mean:.2} µs, Erlang C at the realized load ρ = {:.4}: \
             {theory_realized:.2} µs (±{:.1} %)",
            a_realized / c as f64,
            p.rel_realized * 100.0
        );
        let tol = p.rel_mean * theory + t_us;
        assert!(
            (mean - theory).abs() <= tol,
            "c={c} ρ={rho}: mean wait {mean:.2} µs, Erlang C {theory:.2} µs (±{tol:.2})"
        );
        // The q-quantile for q > 1 − C is ln(C / (1 − q)) / (cμ − λ).
        for q in [0.9, 0.99] {
            let got = h.quantile(q) as f64 / 1e3;
            let theory = (pw / (1.0 - q)).ln() / drain;
            let tol = p.rel_q * theory + t_us;
            assert!(
                (got - theory).abs() <= tol,
                "c={c} ρ={rho}: p{} wait {got:.2} µs, theory {theory:.2} µs (±{tol:.2})",
                q * 100.0
            );
        }
    }
}

/// With zero link delay and zero recirculation latency, Draconis FCFS is one
/// central FCFS queue over c executors: M/M/c. Two points, each pooled over
/// independent replications (≈ 1.4M tasks in all, ≈ 20 s in the test
/// profile on two shared cores). Tolerances: the systematic excess measured
/// by the long variant (2M tasks per point: the pull system runs slightly
/// above M/M/c, like M/M/c at ≈ 0.5 % more load; P(W > 1 µs) +3.3 % at
/// c = 16, ρ = 0.85 and +1.5 % at c = 4, ρ = 0.7, the mean +7.8 % and +3.3 %)
/// plus about three standard errors of the pooled estimate, from the spread
/// between seeds (per 100K-task replication: P(W > 1 µs) ±3.6 % and ±2 %,
/// the mean ±10 % and ±4.5 %: waiting times near saturation are strongly
/// autocorrelated, so the mean converges slowest).
#[test]
fn zero_rtt_draconis_fcfs_is_mmc() {
    check_mmc(&[
        MmcPoint {
            c: 16,
            rho: 0.85,
            tasks: 100_000,
            seeds: 1..=8,
            rel_p: 0.07,
            rel_q: 0.1,
            rel_mean: 0.15,
            rel_realized: 0.08,
        },
        MmcPoint {
            c: 4,
            rho: 0.7,
            tasks: 100_000,
            seeds: 1..=6,
            rel_p: 0.04,
            rel_q: 0.06,
            rel_mean: 0.08,
            rel_realized: 0.05,
        },
    ]);
}

/// Long variant (4 × 500K tasks per point, ≈ 65 s in the test profile):
/// `cargo test -p netsched-sim --test pull zero_rtt_draconis_fcfs_is_mmc_long
/// -- --ignored --nocapture`. Measured (2026-11-24): c = 16, ρ = 0.85:
/// P(W > 1 µs) 0.4368 vs 0.4229, mean 19.45 vs 18.05 µs, p90 64.6 vs 61.1,
/// p99 164.9 vs 157.0; ρ = 0.9: 0.5965 vs 0.5820, 39.89 vs 36.96, 118.3 vs
/// 111.1, 270.8 vs 255.0; c = 4, ρ = 0.7: 0.4297 vs 0.4235, 36.90 vs 35.72,
/// 124.2 vs 121.3, 319.5 vs 313.2. Against Erlang C at the realized load
/// (2026-11-26: ρ 0.8528 / 0.9030 / 0.7023) the mean is +3.7 % / +2.8 % /
/// +1.6 %, against +7.9 % / +8.0 % / +3.4 % at the nominal: most of the
/// excess is the load the replications realized (docs/draconis.md).
#[test]
#[ignore]
fn zero_rtt_draconis_fcfs_is_mmc_long() {
    let long = |c, rho, rel_p, rel_q, rel_mean| MmcPoint {
        c,
        rho,
        tasks: 500_000,
        seeds: 1..=4,
        rel_p,
        rel_q,
        rel_mean,
        rel_realized: rel_mean,
    };
    check_mmc(&[
        long(16, 0.85, 0.05, 0.08, 0.1),
        long(16, 0.9, 0.05, 0.08, 0.1),
        long(4, 0.7, 0.03, 0.04, 0.05),
    ]);
}

fn small(policy: &str, extra: &str) -> String {
    format!(
        r#"
seed = 3
policy = "{policy}"
[cluster]
nodes = 4
executors_per_node = 4
[workload]
service = {{ kind = "fixed", value_us = 100 }}
load = 0.8
tasks = 6000
{extra}
"#
    )
}

fn accounted(s: &PullSummary) {
    assert_eq!(
        s.completed + s.gave_up,
        s.submitted,
        "{}: every measured task ends completed or given up: {s:?}",
        s.policy
    );
}

/// R2P2 with JBSQ(1) and a tiny recirculation budget drops requests at the
/// switch; clients time out and resubmit; every task still ends completed.
#[test]
fn r2p2_drops_are_counted_and_resubmitted() {
    let s = one(&small(
        "r2p2-recirc",
        "[r2p2]\njbsq_bound = 1\nrecirc_budget = 4\n[client]\ntimeout_us = 200\nmax_attempts = 1000",
    ));
    assert!(s.dropped > 0, "{s:?}");
    assert_eq!(
        s.drops.get("recirculation_budget").copied(),
        Some(s.dropped),
        "{s:?}"
    );
    assert!(s.timeouts >= s.dropped.min(1), "{s:?}");
    assert!(s.resubmissions >= s.timeouts);
    assert!(s.recirc_fraction > 0.0);
    assert_eq!(s.gave_up, 0);
    accounted(&s);
}

/// With a single attempt, a dropped task is given up, never silently lost.
#[test]
fn r2p2_single_attempt_gives_up_dropped_tasks() {
    let s = one(&small(
        "r2p2-recirc",
        "[r2p2]\njbsq_bound = 1\nrecirc_budget = 2\n[client]\ntimeout_us = 1000\nmax_attempts = 1",
    ));
    assert!(s.gave_up > 0, "{s:?}");
    assert!(s.gave_up <= s.dropped, "{s:?}");
    accounted(&s);
}

/// R2P2 at load 0.8 on 16 executors with a slow recirculation port
/// (1 Gb/s, 4 packets): JBSQ(1) has no executor queue, so a request walks
/// the busy executors pass by pass and the port overflows (Draconis §8.3,
/// Fig. 7-8); JBSQ(3) takes the first executor under its bound and hardly
/// recirculates, so nothing is dropped. With an unlimited port JBSQ(1)
/// drops nothing either: the drops are the port's bandwidth, not a budget.
#[test]
fn r2p2_1_drops_at_the_recirculation_port_r2p2_3_does_not() {
    let run = |bound: u32, gbps: f64| {
        one(&small(
            "r2p2-recirc",
            &format!(
                "[network]\nrecirc_gbps = {gbps}\nrecirc_buffer = 4\n\
                 [client]\ntimeout_us = 1000\nmax_attempts = 1000\n[r2p2]\njbsq_bound = {bound}"
            ),
        ))
    };
    let r1 = run(1, 1.0);
    assert!(r1.dropped > 0, "{r1:?}");
    assert_eq!(r1.drops.get("overflow").copied(), Some(r1.dropped));
    assert!(r1.recirc_fraction > 0.5, "{r1:?}");
    accounted(&r1);
    let r3 = run(3, 1.0);
    assert_eq!(r3.dropped, 0, "{r3:?}");
    assert!(r3.recirc_fraction < 0.25, "{r3:?}");
    accounted(&r3);
    let unlimited = run(1, 0.0);
    assert_eq!(unlimited.dropped, 0, "{unlimited:?}");
    assert!(unlimited.recirc_fraction > 0.5, "{unlimited:?}");
    accounted(&unlimited);
}

/// A tiny Draconis queue and bursty jobs: error packets return the tasks that
/// did not fit; clients resubmit them; all complete, none twice.
#[test]
fn draconis_full_queue_returns_tasks_in_error_packets() {
    let s = one(&small(
        "draconis",
        "arrival = \"bursty\"\nburst_fraction = 0.2\nburst_mean_tasks = 40\n[draconis]\ncapacity = 8",
    ));
    assert!(s.error_tasks > 0, "{s:?}");
    assert_eq!(s.timeouts, 0, "acknowledged tasks never time out");
    assert_eq!(s.duplicate_executions, 0);
    assert_eq!(s.completed, s.submitted);
}

/// Every policy accounts for every task; Sparrow's job table overflows into
/// counted drops that clients recover from by timeout.
#[test]
fn every_policy_accounts_for_every_task() {
    for p in [
        "draconis",
        "draconis-priority",
        "draconis-server",
        "r2p2-recirc",
        "sparrow",
        "racksched-nodes",
    ] {
        let s = one(&small(p, "job_tasks = 3"));
        accounted(&s);
        assert!(s.completed > 0);
        assert!((s.utilization - 0.8).abs() < 0.1, "{p}: {s:?}");
    }
    let s = one(&small(
        "sparrow",
        "job_tasks = 3\n[sparrow]\nmax_jobs = 2\n[client]\ntimeout_us = 300\nmax_attempts = 1000",
    ));
    assert!(s.drops.get("overflow").copied().unwrap_or(0) > 0, "{s:?}");
    accounted(&s);
}

/// Same seed, same result; another seed, another result.
#[test]
fn deterministic_for_a_seed() {
    let strip = |mut s: PullSummary| {
        s.wall_s = 0.0;
        s
    };
    for p in [
        "draconis-locality",
        "r2p2-recirc",
        "sparrow",
        "draconis-server",
        "racksched-nodes",
    ] {
        let text = small(p, "arrival = \"bursty\"\n[workload.locality]");
        let a = strip(one(&text));
        let b = strip(one(&text));
        assert_eq!(a, b, "{p}");
        let c = strip(one(&text.replace("seed = 3", "seed = 4")));
        assert_ne!(a.sched, c.sched, "{p}");
    }
}

fn locality(policy: &str) -> PullSummary {
    one(&format!(
        r#"
seed = 5
policy = "{policy}"
[cluster]
nodes = 10
executors_per_node = 4
racks = 3
[workload]
service = {{ kind = "fixed", value_us = 100 }}
load = 0.8
tasks = 8000
[workload.locality]
rack_us = 20
remote_us = 100
[draconis]
rack_start_limit = 3
global_start_limit = 9
"#
    ))
}

/// §5.3: the locality policy never runs a task off its node before the
/// start limits allow it, and places more tasks near their data than FCFS.
#[test]
fn locality_limits_respected_and_placement_improves() {
    let loc = locality("draconis-locality");
    let fcfs = locality("draconis");
    assert_eq!(loc.locality_violations, 0, "{loc:?}");
    assert!(loc.max_skips > 3, "the rack limit was exercised: {loc:?}");
    let (l, f) = (loc.placement.unwrap(), fcfs.placement.unwrap());
    assert!(
        l[0] > 2.0 * f[0],
        "node-local: locality {l:?} vs fcfs {f:?}"
    );
    assert!(l[0] + l[1] > f[0] + f[1] + 0.1, "{l:?} vs {f:?}");
    assert!(loc.recirc_fraction > fcfs.recirc_fraction);
    // Fig. 10 compares the two at the 66th percentile of end-to-end delay;
    // it lies between the median and the 90th percentile of the same run.
    for s in [&loc, &fcfs] {
        let r = &s.response;
        assert!(
            r.p50_ns <= s.response_p66_ns && s.response_p66_ns <= r.p90_ns,
            "p50 {} p66 {} p90 {}",
            r.p50_ns,
            s.response_p66_ns,
            r.p90_ns
        );
        assert!(s.response_p66_ns > r.p50_ns, "a spread distribution");
    }
    accounted(&loc);
}

fn priority(policy: &str) -> PullSummary {
    one(&format!(
        r#"
seed = 9
policy = "{policy}"
[cluster]
nodes = 2
executors_per_node = 8
[workload]
service = {{ kind = "exp", mean_us = 100 }}
load = 0.95
tasks = 20000
priority_weights = [1.2, 1.7, 64.6, 32.2]
"#
    ))
}

/// §6 / §8.6: with priority queues, higher levels wait less; the same
/// workload under FCFS shows no such ordering.
#[test]
fn priority_ordering_visible_in_latencies() {
    let p = priority("draconis-priority");
    let l: Vec<f64> = p.sched_by_level.iter().map(|s| s.mean_ns).collect();
    assert_eq!(l.len(), 4);
    assert!(l[0] < l[2] && l[1] < l[2] && l[2] < l[3], "{l:?}");
    assert!(l[3] > 2.0 * l[2], "{l:?}");
    let f = priority("draconis");
    let fl: Vec<f64> = f.sched_by_level.iter().map(|s| s.mean_ns).collect();
    // FCFS: level 4 waits about as long as level 3 (sampling noise only).
    assert!((fl[3] - fl[2]).abs() < 0.25 * fl[2], "{fl:?}");
    accounted(&p);
}

/// §8.5 resource groups: in phase B only G2/G3 run tasks, in phase C only
/// G3; the resource policy never violates a constraint.
#[test]
fn resource_phases_follow_groups() {
    let s = one(r#"
seed = 2
policy = "draconis-resource"
[cluster]
nodes = 6
executors_per_node = 2
resource_groups = true
[workload]
service = { kind = "fixed", value_us = 100 }
load = 0.3
tasks = 6000
resource_phases = true
"#);
    assert_eq!(s.resource_violations, 0);
    let t = s.resource.as_ref().unwrap().tasks_per_node_per_s;
    assert!(t[0][0] > 0.0 && t[1][0] > 0.0 && t[2][0] > 0.0, "{t:?}");
    assert_eq!(t[0][1], 0.0, "G1 lacks B: {t:?}");
    assert!(t[1][1] > 0.0 && t[2][1] > 0.0, "{t:?}");
    assert_eq!(t[0][2], 0.0, "{t:?}");
    assert_eq!(t[1][2], 0.0, "{t:?}");
    assert!(t[2][2] > 0.0);
    assert_eq!(s.completed, s.submitted);
}

#[test]
fn config_errors_name_the_field() {
    let e = PullConfig::from_toml("[workload]\nload = 3").unwrap_err();
    assert_eq!(e.field, "workload.load");
    let e = PullConfig::from_toml("[draconis]\ncapacity = 1000").unwrap_err();
    assert_eq!(e.field, "draconis.capacity");
    let e = PullConfig::from_toml("[cluster]\nnodez = 3").unwrap_err();
    assert!(e.to_string().contains("nodez"), "{e}");
    let e = PullConfig::from_toml("policy = \"horus\"").unwrap_err();
    assert!(e.to_string().contains("horus"), "{e}");
    let e = PullConfig::from_toml("[workload]\nresource_phases = true").unwrap_err();
    assert_eq!(e.field, "workload.resource_phases");
    // What the data planes refuse at build time is refused here, with the
    // data plane's own limits (netsched_core::limits).
    let e = PullConfig::from_toml("[racksched]\nsamples = 17").unwrap_err();
    assert_eq!(
        e.to_string(),
        "racksched.samples: must be in 1..=16, got 17"
    );
    assert!(PullConfig::from_toml("[racksched]\nsamples = 16").is_ok());
    let e = PullConfig::from_toml("[draconis]\ncapacity = 2147483648").unwrap_err();
    assert_eq!(e.field, "draconis.capacity");
    let e = PullConfig::from_toml("[r2p2]\njbsq_bound = 0").unwrap_err();
    assert_eq!(e.to_string(), "r2p2.jbsq_bound: must be >= 1, got 0");
    // `k` meant two things: the old key is refused naming its successor.
    let e = PullConfig::from_toml("[racksched]\nk = 2").unwrap_err();
    assert_eq!(
        e.to_string(),
        "racksched.k (line 2): `k` is renamed: use `samples` (samples per power-of-k decision)"
    );
    let e = PullConfig::from_toml("[r2p2]\nk = 3").unwrap_err();
    assert_eq!(
        e.to_string(),
        "r2p2.k (line 2): `k` is renamed: use `jbsq_bound` (R2P2's JBSQ bound)"
    );
}

/// `completion` (arrival at the switch to completion at the executor, the
/// push simulator's response time) and `response` (first submission to the
/// reply at the client) cover the same tasks and differ by exactly three
/// links per task: the client's link to the switch, and the reply's two
/// links back. A task's completion also includes at least its service time
/// and the switch→executor link.
#[test]
fn completion_is_response_minus_the_client_links() {
    for p in [
        "draconis",
        "r2p2-recirc",
        "racksched-nodes",
        "sparrow",
        "draconis-server",
    ] {
        let s = one(&small(p, "[network]\nlink_ns = 3000"));
        assert_eq!(s.timeouts, 0, "{p}: {s:?}");
        assert_eq!(s.completion.count, s.response.count, "{p}");
        assert_eq!(s.completion.count, s.completed, "{p}");
        let diff = s.response.mean_ns - s.completion.mean_ns;
        assert!(
            (diff - 9000.0).abs() < 1e-3,
            "{p}: mean difference {diff} ns, want 9000"
        );
        assert!(
            s.completion.max_ns + 9000 == s.response.max_ns,
            "{p}: {s:?}"
        );
        assert!(
            s.completion.p50_ns >= 100_000 + 3000,
            "{p}: completion p50 {} below service + link",
            s.completion.p50_ns
        );
        // No duplicates: completion = scheduling latency + service − client link.
        assert_eq!(s.duplicate_executions, 0, "{p}");
        let want = s.sched.mean_ns + 100_000.0 - 3000.0;
        assert!((s.completion.mean_ns - want).abs() < 1.0, "{p}: {s:?}");
    }
}

/// Jobs are spread over Sparrow's scheduler hosts: with schedulers slow
/// enough that one cannot keep up (4 µs per message, ≈3 messages per task,
/// 128 K tasks/s offered), two of them bring the tail down.
#[test]
fn two_sparrow_schedulers_share_the_work() {
    let run = |n: u32| {
        one(&small(
            "sparrow",
            &format!("[sparrow]\nschedulers = {n}\nmsg_ns = 4000\n[client]\ntimeout_us = 100000"),
        ))
    };
    let (one_s, two_s) = (run(1), run(2));
    accounted(&two_s);
    assert!(
        two_s.sched.p99_ns * 4 < one_s.sched.p99_ns,
        "p99 with two schedulers {} ns, with one {} ns",
        two_s.sched.p99_ns,
        one_s.sched.p99_ns
    );
}

/// Draconis Fig. 13: the get_task() step (task_request → task arrival) is
/// two links plus one recirculation per empty level above the task's own
/// (a request that finds every level empty gets a no-op, and its retry is a
/// new step), so a level-4 task's step is three recirculations (3 × 500 ns)
/// longer than a level-1 task's.
#[test]
fn get_task_step_grows_by_a_recirculation_per_level() {
    let s = one(&small(
        "draconis-priority",
        "priority_weights = [1, 1, 1, 1]\n[network]\nlink_ns = 2000\nrecirc_ns = 500",
    ));
    assert_eq!(s.get_task_by_level.len(), 4);
    let p50: Vec<u64> = s.get_task_by_level.iter().map(|l| l.p50_ns).collect();
    assert!(s.get_task_by_level.iter().all(|l| l.count > 500), "{s:?}");
    assert!(p50[0] >= 4000, "two links at least: {p50:?}");
    assert!(
        p50[0] <= p50[1] && p50[1] <= p50[2] && p50[2] <= p50[3],
        "{p50:?}"
    );
    let extra = p50[3] - p50[0];
    assert!(
        (1000..=2500).contains(&extra),
        "level 4 − level 1 = {extra} ns: {p50:?}"
    );
    // FCFS has one level and records every step there.
    let f = one(&small("draconis", ""));
    assert!(f.get_task_by_level[0].count > 1000);
}

/// The client's timer guards against loss only. A push baseline's copy that
/// its scheduler has taken (R2P2 and RackSched dispatched it, Sparrow's
/// scheduler accepted the job) cannot be lost in the simulator, so it must
/// not be resubmitted however long it queues at its executor or node: with
/// a timeout of 1.5 × the service time at ρ = 0.9, every queued task would
/// otherwise be sent again, adding load.
#[test]
fn push_baselines_resubmit_only_lost_copies() {
    for p in ["r2p2-recirc", "racksched-nodes", "sparrow"] {
        let s = one(&small(
            p,
            "load = 0.9\ntasks = 2000\n[r2p2]\nrecirc_budget = 100000\n[client]\ntimeout_us = 150\nmax_attempts = 2",
        )
        .replace("load = 0.8\ntasks = 6000\n", ""));
        assert_eq!(s.dropped, 0, "{p}: {s:?}");
        assert_eq!(s.timeouts, 0, "{p}: accepted copies never time out: {s:?}");
        assert_eq!(s.resubmissions, 0, "{p}: {s:?}");
        assert_eq!(s.duplicate_executions, 0, "{p}: {s:?}");
        accounted(&s);
    }
}

/// Issue 14's bar on `experiments/draconis.toml` at load 0.2, shortened to
/// 2,000 tasks: Draconis' p99 within 5.9 µs (the paper's 4.7 µs + 25 %) and
/// Draconis-DPDK-Server's at least 10× it. Both follow from the calibrated
/// latencies (docs/draconis.md "Calibration"): executors polling once per
/// round trip leave a submission two links from a start on the switch, and
/// queue it behind every idle executor's poll on the server.
#[test]
fn calibrated_draconis_toml_meets_the_low_load_bar() {
    let text = include_str!("../../../experiments/draconis.toml")
        .replace("tasks = 60000", "tasks = 2000")
        .replace(
            r#"policies = ["draconis", "racksched-nodes", "draconis-server", "r2p2-recirc", "sparrow"]"#,
            r#"policies = ["draconis", "draconis-server"]"#,
        )
        .replace("loads = [0.2, 0.4, 0.6, 0.8, 0.9, 0.95]", "loads = [0.2]");
    let runs = run(&text);
    let p99 = |p: &str| runs.iter().find(|s| s.policy == p).unwrap().sched.p99_ns as f64 / 1e3;
    let (draconis, server) = (p99("draconis"), p99("draconis-server"));
    assert!(draconis <= 5.9, "Draconis p99 {draconis} µs");
    assert!(
        server >= 10.0 * draconis,
        "server {server} µs vs Draconis {draconis} µs"
    );
}
