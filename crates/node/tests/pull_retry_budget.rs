//! The pull client's retry budget over a real socket: against a scheduler
//! that never answers, every task times out, and the resubmissions stay
//! within what the budget earned (its reserve, `ratio` of the tasks sent and
//! `min_per_s` a second) instead of multiplying the client's load. Nothing
//! is lost: every task still ends exactly once.

use std::net::UdpSocket;
use std::time::Instant;

use netsched_config::workload::ServiceDist;
use netsched_node::pull::{PullClient, PullClientConfig, PullReport, RetryBudgetConfig};

/// 400 tasks in 200 ms to a bound socket nobody reads (datagrams vanish
/// without an ICMP error), 20 ms timeouts, 3 attempts.
fn against_a_silent_scheduler(budget: RetryBudgetConfig) -> (PullReport, f64) {
    let silent = UdpSocket::bind("127.0.0.1:0").unwrap();
    let mut c = PullClientConfig::new(
        silent.local_addr().unwrap(),
        2_000.0,
        200,
        ServiceDist::Fixed { value_us: 100.0 },
    );
    c.timeout_ms = 20;
    c.max_attempts = 3;
    c.retry_budget = budget;
    let t = Instant::now();
    let r = PullClient::bind(c).unwrap().run();
    (r, t.elapsed().as_secs_f64())
}

#[test]
fn resubmissions_stay_within_the_budget_and_every_task_ends() {
    let budget = RetryBudgetConfig::default();
    let (r, secs) = against_a_silent_scheduler(budget);
    assert!(r.accounted(), "{}", r.summary());
    assert!(r.submitted > 100, "{}", r.summary());
    assert_eq!(r.completed, 0);
    assert_eq!(r.timed_out, r.submitted, "{}", r.summary());
    let earned = f64::from(budget.min_per_s.min(budget.burst))
        + budget.ratio * r.submitted as f64
        + f64::from(budget.min_per_s) * secs;
    let resubmitted = r.timeout_resubmissions as f64;
    assert!(
        resubmitted <= earned + 1.0,
        "{resubmitted} > {earned}: {}",
        r.summary()
    );
    // Without the budget each task would be resubmitted twice.
    assert!(resubmitted < r.submitted as f64, "{}", r.summary());
    assert!(r.retries_deferred > 0, "{}", r.summary());
}

/// The same run with a budget too large to bind: each task is resubmitted
/// once per timeout, as before budgets (the limit above is the budget's).
#[test]
fn an_unbinding_budget_resubmits_every_timeout() {
    let (r, _) = against_a_silent_scheduler(RetryBudgetConfig {
        ratio: 1_000.0,
        min_per_s: 1_000_000,
        burst: 1_000_000,
    });
    assert!(r.accounted(), "{}", r.summary());
    assert_eq!(r.timeout_resubmissions, 2 * r.submitted, "{}", r.summary());
    assert_eq!(r.retries_deferred, 0);
}
