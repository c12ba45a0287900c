//! The nginx comparison end to end at a small size: the same workers and
//! client behind a Horus leaf, a RackSched leaf and nginx's UDP stream proxy
//! (`random two least_conn`). Skipped, with a message, where Debian's nginx
//! and its stream module are not installed (.ci/run installs them).

use std::path::Path;

use netsched_config::workload::ServiceDist;
use netsched_lab::nginx::{nginx_conf, run, NginxBenchOpts, DEFAULT_NGINX, DEFAULT_STREAM_MODULE};

#[test]
fn config_balances_every_datagram_and_ends_sessions_with_the_reply() {
    let c = nginx_conf(
        Path::new("/tmp/x"),
        Path::new(DEFAULT_STREAM_MODULE),
        "127.0.0.1:9000".parse().unwrap(),
        &[
            "127.0.0.1:9001".parse().unwrap(),
            "127.0.0.1:9002".parse().unwrap(),
        ],
    );
    for needle in [
        "random two least_conn;",
        "server 127.0.0.1:9001;",
        "server 127.0.0.1:9002;",
        "listen 127.0.0.1:9000 udp rcvbuf=4m sndbuf=4m;",
        "proxy_requests 1;",
        "proxy_responses 1;",
        "worker_processes 1;",
    ] {
        assert!(c.contains(needle), "{needle} missing from\n{c}");
    }
}

#[test]
fn horus_racksched_and_nginx_serve_the_same_workers() {
    if !Path::new(DEFAULT_NGINX).exists() || !Path::new(DEFAULT_STREAM_MODULE).exists() {
        eprintln!(
            "skipped: {DEFAULT_NGINX} or {DEFAULT_STREAM_MODULE} missing \
             (apt-get install -y nginx libnginx-mod-stream)"
        );
        return;
    }
    let opts = NginxBenchOpts {
        // Light load (900 tasks/s): nginx opens a socket per datagram, and
        // on a busy shared machine a heavier run can overflow its receive
        // buffer, which the benchmark reports but a test must not trip on.
        // RackSched gets two servers of two executors (the default).
        workers: 4,
        service: ServiceDist::Fixed { value_us: 1000.0 },
        loads: vec![0.225],
        duration_ms: 500,
        ..Default::default()
    };
    let mut seen = Vec::new();
    let rows = run(&opts, |r| seen.push(r.setup.clone())).expect("bench runs");
    assert_eq!(seen, ["horus", "racksched", "nginx"]);
    for r in &rows {
        let c = &r.report;
        assert!(c.accounted(), "{}: {}", r.setup, c.summary());
        assert!(c.submitted > 100, "{}: {}", r.setup, c.summary());
        assert_eq!(c.completed, c.submitted, "{}: {}", r.setup, c.summary());
        // Every task ran its 200 µs on a worker before its reply came back.
        assert!(
            c.percentile_us(0.01) >= 200.0,
            "{}: {}",
            r.setup,
            c.summary()
        );
    }
}
