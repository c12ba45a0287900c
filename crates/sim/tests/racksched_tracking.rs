//! RackSched multi-queue servers (§3.6) and load-tracking mechanisms (§4.6,
//! Fig. 16) in whole runs: config checks, and behaviour a broken plumbing
//! would change.

use std::path::Path;

use netsched_sim::config::SimConfig;
use netsched_sim::metrics::Summary;
use netsched_sim::run::{run_config, RunOpts};

#[path = "common/rack.rs"]
mod rack;
use rack::rack_of_64;

/// One rack of 8 servers × 8 cores behind RackSched, 2 µs hops.
fn rack(policy: &str, service: &str, load: f64, extra: &str) -> String {
    rack_of_64(3, policy, service, load, 300)
        + &format!(
            r#"[network]
hop_delay = {{ kind = "constant", us = 2.0 }}
loss = 0.0
{extra}
"#
        )
}

fn summary(text: &str) -> Summary {
    let cfg = SimConfig::from_toml(text).unwrap();
    let runs = run_config(&cfg, Path::new("."), &RunOpts::default()).unwrap();
    let s = runs[0].summary();
    assert_eq!(
        s.submitted,
        s.completed + s.aborted,
        "every measured task is accounted for"
    );
    s
}

#[test]
fn config_rejects_tracking_without_racksched_and_multi_queue_on_cores() {
    let e = SimConfig::from_toml(&rack(
        "random",
        "rs-bimodal",
        0.5,
        "[schedulers]\nload_tracking = \"proactive\"",
    ))
    .unwrap_err();
    assert_eq!(e.field, "schedulers.load_tracking", "{e}");
    assert!(e.msg.contains("`random`"), "{e}");
    let e = SimConfig::from_toml(&rack(
        "racksched",
        "rs-bimodal",
        0.5,
        "[sweep]\npolicies = [\"racksched\", \"jsq\"]\n[schedulers]\nload_tracking = \"int2\"",
    ))
    .unwrap_err();
    assert_eq!(e.field, "schedulers.load_tracking", "{e}");
    let e = SimConfig::from_toml(&rack(
        "racksched",
        "rs-bimodal",
        0.5,
        "[workers]\nmulti_queue = true",
    ))
    .unwrap_err();
    assert_eq!(e.field, "workers.multi_queue", "{e}");
    let e = SimConfig::from_toml(&rack(
        "racksched",
        "rs-bimodal",
        0.5,
        "[schedulers]\nload_tracking = \"int4\"",
    ))
    .unwrap_err();
    assert!(e.field.starts_with("schedulers.load_tracking"), "{e}");
    for mode in ["int1", "int2", "int3", "proactive"] {
        SimConfig::from_toml(&rack(
            "rs-lb",
            "rs-bimodal",
            0.5,
            &format!("[workers]\nmodel = \"server-ps\"\nmulti_queue = true\n[schedulers]\nload_tracking = \"{mode}\""),
        ))
        .unwrap();
    }
}

/// §3.6 at one 8-core cFCFS server (no inter-server choice): a queue per
/// type lets a freed core take a short request that has waited long relative
/// to its type's mean while long ones wait ahead of it, so the short type's
/// tail drops far below the single queue's and the long type pays for it.
#[test]
fn multi_queue_server_shortens_the_short_types_tail() {
    let run = |multi: bool| {
        let one_server = rack(
            "racksched",
            "rs-bimodal",
            0.9,
            &format!("[workers]\nmodel = \"server-cfcfs\"\nmulti_queue = {multi}"),
        )
        .replace("servers = 8", "servers = 1")
        .replace("sizes = [64]", "sizes = [8]");
        summary(&one_server)
    };
    let (single, multi) = (run(false), run(true));
    let p99 = |s: &Summary, c: usize| s.per_class[c].response.p99_ns;
    assert_eq!((single.per_class.len(), multi.per_class.len()), (2, 2));
    assert!(
        2 * p99(&multi, 0) < p99(&single, 0),
        "50 µs type: multi-queue {} ns, single queue {} ns",
        p99(&multi, 0),
        p99(&single, 0)
    );
    assert!(
        p99(&multi, 1) > p99(&single, 1),
        "500 µs type: multi-queue {} ns, single queue {} ns",
        p99(&multi, 1),
        p99(&single, 1)
    );
}

/// Proactive counts every first request packet in a second pass: with no
/// loss, exactly one leaf resubmission per submitted task; INT1 needs none.
#[test]
fn proactive_counts_each_dispatch_in_one_resubmission() {
    let pro = summary(&rack(
        "racksched",
        "rs-bimodal",
        0.7,
        "[schedulers]\nload_tracking = \"proactive\"",
    ));
    assert_eq!(pro.resubmissions["leaf"], pro.submitted_total);
    let int1 = summary(&rack("racksched", "rs-bimodal", 0.7, ""));
    assert_eq!(int1.resubmissions.get("leaf").copied().unwrap_or(0), 0);
}

/// INT2 without exploration herds everything onto the server that replied
/// first (no other server ever gets a request, so none reports), which one
/// 8-core server cannot carry at half the rack's capacity; the artifact's
/// 1-in-4 random requests keep every server reporting.
#[test]
fn int2_needs_its_random_requests_to_escape_one_server() {
    let run = |one_in: u32| {
        summary(&rack(
            "racksched",
            "rs-bimodal",
            0.5,
            &format!("[schedulers]\nload_tracking = \"int2\"\nint2_random_one_in = {one_in}"),
        ))
    };
    let (stuck, exploring) = (run(0), run(4));
    assert!(
        stuck.response.p99_ns > 20 * exploring.response.p99_ns,
        "p99 without exploration {} ns, with {} ns",
        stuck.response.p99_ns,
        exploring.response.p99_ns
    );
}
