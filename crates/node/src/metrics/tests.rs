use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::Ordering;
use std::time::Instant;

use super::*;

#[test]
fn renders_families_once_with_counters_total() {
    let mut r = Registry::new();
    let a = r.register("x_total", "x", Kind::Counter, &[("reason", "a")]);
    let _ = r.register("y", "y", Kind::Gauge, &[]);
    let b = r.register("x_total", "x", Kind::Counter, &[("reason", "b")]);
    let busy = r.register("busy_seconds_total", "busy", Kind::SecondsCounter, &[]);
    let load = r.register("load", "load", Kind::FloatGauge, &[]);
    let lat = r.register("lat_seconds", "lat", Kind::Histogram, &[]);
    r.inc(a);
    r.add(b, 5);
    r.add_time(busy, Duration::from_millis(1500));
    r.set_f64(load, 2.25);
    r.observe(lat, Duration::from_micros(3));
    let t = r.render();
    assert_eq!(t.matches("# TYPE x_total counter").count(), 1, "{t}");
    assert!(t.contains("x_total{reason=\"a\"} 1\n"), "{t}");
    assert!(t.contains("x_total{reason=\"b\"} 5\n"), "{t}");
    assert!(
        t.contains("# TYPE busy_seconds_total counter\nbusy_seconds_total 1.5\n"),
        "{t}"
    );
    assert!(t.contains("load 2.25\n"), "{t}");
    assert!(t.contains("lat_seconds_count 1\n"), "{t}");
    assert!(t.contains("y 0\n"), "{t}");
    assert!(t.contains("netsched_build_info{version=\""), "{t}");
    assert!(!t.contains("# EOF"), "{t}");
    assert_eq!(r.sum("x_total"), 6);
    assert_eq!(r.value("x_total", "{reason=\"b\"}"), Some(5));
    assert!((r.sum_f64("busy_seconds_total") - 1.5).abs() < 1e-9);
}

#[test]
fn a_counter_set_from_a_running_total_never_goes_down() {
    let mut r = Registry::new();
    let c = r.register("passes_total", "p", Kind::Counter, &[]);
    r.set(c, 7);
    r.set(c, 3);
    assert_eq!(r.get(c), 7);
}

fn request(addr: SocketAddr, head: &str) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    write!(s, "{head}\r\nHost: x\r\n\r\n").unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out
}

fn served() -> (SocketAddr, Arc<AtomicBool>, JoinHandle<()>) {
    let mut r = Registry::new();
    let a = r.register(
        "netsched_drops_total",
        "d",
        Kind::Counter,
        &[("reason", "truncated")],
    );
    let r = Arc::new(r);
    r.add(a, 3);
    let stop = Arc::new(AtomicBool::new(false));
    let (addr, h) = serve("127.0.0.1:0", r, stop.clone()).unwrap();
    (addr, stop, h)
}

#[test]
fn serves_metrics_only_at_metrics_and_answers_head() {
    let (addr, stop, h) = served();
    let body = request(addr, "GET /metrics HTTP/1.1");
    assert!(body.starts_with("HTTP/1.1 200 OK"), "{body}");
    assert!(body.contains("text/plain; version=0.0.4"), "{body}");
    assert!(body.contains("netsched_drops_total{reason=\"truncated\"} 3\n"));
    let om = request(
        addr,
        "GET /metrics HTTP/1.1\r\nAccept: application/openmetrics-text; version=1.0.0",
    );
    assert!(om.contains("application/openmetrics-text"), "{om}");
    assert!(om.trim_end().ends_with("# EOF"), "{om}");
    let head = request(addr, "HEAD /metrics HTTP/1.1");
    assert!(head.starts_with("HTTP/1.1 200 OK"), "{head}");
    assert!(!head.contains("netsched_drops_total"), "{head}");
    assert!(request(addr, "GET /metricsfoo HTTP/1.1").starts_with("HTTP/1.1 404"));
    assert!(request(addr, "GET /other HTTP/1.1").starts_with("HTTP/1.1 404"));
    assert!(request(addr, "POST /metrics HTTP/1.1").starts_with("HTTP/1.1 405"));
    stop.store(true, Ordering::Relaxed);
    h.join().unwrap();
}

/// Issue 20: with 5 idle connections open a scrape took 2.55 s, and one slow
/// client stalled the server for 16.7 s.
#[test]
fn idle_and_slow_clients_do_not_stall_a_scrape() {
    let (addr, stop, h) = served();
    let idle: Vec<TcpStream> = (0..5).map(|_| TcpStream::connect(addr).unwrap()).collect();
    let mut slow = TcpStream::connect(addr).unwrap();
    // Half a request head, the rest never comes.
    slow.write_all(b"GET /metr").unwrap();
    let t = Instant::now();
    let body = request(addr, "GET /metrics HTTP/1.1");
    let took = t.elapsed();
    assert!(body.starts_with("HTTP/1.1 200 OK"), "{body}");
    assert!(took < Duration::from_millis(500), "scrape took {took:?}");
    drop(idle);
    drop(slow);
    stop.store(true, Ordering::Relaxed);
    h.join().unwrap();
}

/// prometheus-client's families are hash maps: without sorting, two
/// registries built alike listed their series in different orders.
#[test]
fn scrapes_list_series_in_the_same_sorted_order() {
    let build = || {
        let mut r = Registry::new();
        for pool in 0..6 {
            for node in 0..6 {
                let (p, n) = (pool.to_string(), node.to_string());
                let labels = [("pool", p.as_str()), ("node", n.as_str())];
                let q = r.register("queue_length", "q", Kind::Gauge, &labels);
                r.set(q, pool * 10 + node);
                let lat = r.register("lat_seconds", "l", Kind::Histogram, &labels);
                r.observe(lat, Duration::from_micros(node + 1));
            }
        }
        r
    };
    // The process series' values change between scrapes; their places do not.
    let series = |text: &str| -> Vec<String> {
        text.lines()
            .map(|l| l.rsplit_once(' ').map_or(l, |(s, _)| s).to_string())
            .collect()
    };
    let (a, b) = (build(), build());
    let first = a.render();
    assert_eq!(series(&first), series(&a.render()));
    assert_eq!(series(&first), series(&b.render()));
    let queue: Vec<&str> = first
        .lines()
        .filter(|l| l.starts_with("queue_length{"))
        .collect();
    let mut sorted = queue.clone();
    sorted.sort();
    assert_eq!(queue.len(), 36);
    assert_eq!(queue, sorted);
    let sums: Vec<&str> = first
        .lines()
        .filter(|l| l.starts_with("lat_seconds_sum{"))
        .collect();
    let mut sorted = sums.clone();
    sorted.sort();
    assert_eq!(sums.len(), 36);
    assert_eq!(sums, sorted);
    // Each histogram's buckets follow its own _sum and _count.
    let after_first_sum: Vec<&str> = first
        .lines()
        .skip_while(|l| !l.starts_with("lat_seconds_sum{"))
        .take(3)
        .collect();
    assert!(
        after_first_sum[1].starts_with("lat_seconds_count{pool=\"0\",node=\"0\"}"),
        "{after_first_sum:?}"
    );
    assert!(
        after_first_sum[2].ends_with("pool=\"0\",node=\"0\"} 0"),
        "{after_first_sum:?}"
    );
}

fn sample(text: &str, name: &str) -> f64 {
    let prefix = format!("{name} ");
    text.lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .unwrap_or_else(|| panic!("no {name} in\n{text}"))
        .parse()
        .unwrap()
}

#[test]
fn every_registry_serves_process_series_read_at_scrape_time() {
    let r = Registry::new();
    let before = r.render();
    let rss = sample(&before, "process_resident_memory_bytes");
    assert!(rss > 0.0, "{before}");
    assert!(sample(&before, "process_virtual_memory_bytes") >= rss);
    assert!(sample(&before, "process_open_fds") >= 3.0);
    let started = sample(&before, "process_start_time_seconds");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    assert!(
        started <= now + 1.0 && started > now - 86_400.0,
        "{started}"
    );
    assert!(before.contains("# TYPE process_cpu_seconds_total counter\n"));
    // Burn CPU until the kernel's tick-granular count moves.
    let cpu0 = sample(&before, "process_cpu_seconds_total");
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut spin = 0u64;
    let mut cpu = cpu0;
    while cpu <= cpu0 && Instant::now() < deadline {
        for i in 0..2_000_000u64 {
            spin = std::hint::black_box(spin.wrapping_mul(31).wrapping_add(i));
        }
        cpu = sample(&r.render(), "process_cpu_seconds_total");
    }
    assert!(cpu > cpu0, "CPU time stayed at {cpu0} s after 5 s of work");
}
