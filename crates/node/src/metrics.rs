//! Prometheus text-format metrics over a tiny HTTP listener, and structured
//! log lines.
//!
//! The hot loops only do relaxed atomic adds on pre-registered slots: no
//! allocation, no lock, no map lookup per packet. The registry's shape is
//! fixed before a daemon starts.

use std::fmt::{Display, Write as _};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Counter,
    Gauge,
}

struct Entry {
    name: &'static str,
    help: &'static str,
    kind: Kind,
    /// Rendered label set, e.g. `{reason="truncated"}`, or empty.
    labels: String,
    value: AtomicU64,
}

/// A fixed set of counters and gauges, shared between a daemon's loop and its
/// metrics endpoint.
#[derive(Default)]
pub struct Registry {
    entries: Vec<Entry>,
}

/// Index of a registered metric.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slot(usize);

impl Registry {
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers one time series; `labels` are (name, value) pairs.
    pub fn register(
        &mut self,
        name: &'static str,
        help: &'static str,
        kind: Kind,
        labels: &[(&str, &str)],
    ) -> Slot {
        let mut l = String::new();
        if !labels.is_empty() {
            l.push('{');
            for (i, (k, v)) in labels.iter().enumerate() {
                if i > 0 {
                    l.push(',');
                }
                let _ = write!(
                    l,
                    "{k}=\"{}\"",
                    v.replace('\\', "\\\\").replace('"', "\\\"")
                );
            }
            l.push('}');
        }
        self.entries.push(Entry {
            name,
            help,
            kind,
            labels: l,
            value: AtomicU64::new(0),
        });
        Slot(self.entries.len() - 1)
    }

    #[inline]
    pub fn inc(&self, s: Slot) {
        self.entries[s.0].value.fetch_add(1, Ordering::Relaxed);
    }

    #[inline]
    pub fn add(&self, s: Slot, n: u64) {
        self.entries[s.0].value.fetch_add(n, Ordering::Relaxed);
    }

    #[inline]
    pub fn set(&self, s: Slot, v: u64) {
        self.entries[s.0].value.store(v, Ordering::Relaxed);
    }

    pub fn get(&self, s: Slot) -> u64 {
        self.entries[s.0].value.load(Ordering::Relaxed)
    }

    /// The value of the series `name` with exactly `labels` (tests, reports).
    pub fn value(&self, name: &str, labels: &str) -> Option<u64> {
        self.entries
            .iter()
            .find(|e| e.name == name && e.labels == labels)
            .map(|e| e.value.load(Ordering::Relaxed))
    }

    /// Sum over every series named `name`.
    pub fn sum(&self, name: &str) -> u64 {
        self.entries
            .iter()
            .filter(|e| e.name == name)
            .map(|e| e.value.load(Ordering::Relaxed))
            .sum()
    }

    /// Prometheus text exposition format 0.0.4.
    pub fn render(&self) -> String {
        let mut out = String::with_capacity(self.entries.len() * 64);
        let mut seen: Vec<&str> = Vec::new();
        for (i, e) in self.entries.iter().enumerate() {
            if seen.contains(&e.name) {
                continue;
            }
            seen.push(e.name);
            let kind = match e.kind {
                Kind::Counter => "counter",
                Kind::Gauge => "gauge",
            };
            let _ = writeln!(out, "# HELP {} {}", e.name, e.help);
            let _ = writeln!(out, "# TYPE {} {}", e.name, kind);
            for f in self.entries[i..].iter().filter(|f| f.name == e.name) {
                let _ = writeln!(
                    out,
                    "{}{} {}",
                    f.name,
                    f.labels,
                    f.value.load(Ordering::Relaxed)
                );
            }
        }
        out
    }
}

/// Serves `GET /metrics` from `registry` on `addr` until `stop` is set.
/// Returns the bound address (port 0 picks one) and the thread.
pub fn serve(
    addr: &str,
    registry: Arc<Registry>,
    stop: Arc<AtomicBool>,
) -> std::io::Result<(SocketAddr, JoinHandle<()>)> {
    let listener = TcpListener::bind(addr)?;
    listener.set_nonblocking(true)?;
    let local = listener.local_addr()?;
    let h = std::thread::Builder::new()
        .name("metrics".into())
        .spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((mut s, _)) => {
                        let _ = s.set_nonblocking(false);
                        let _ = s.set_read_timeout(Some(Duration::from_millis(500)));
                        let mut req = [0u8; 1024];
                        let mut n = 0;
                        while n < req.len() {
                            match s.read(&mut req[n..]) {
                                Ok(0) | Err(_) => break,
                                Ok(k) => n += k,
                            }
                            if req[..n].windows(4).any(|w| w == b"\r\n\r\n") {
                                break;
                            }
                        }
                        let head = std::str::from_utf8(&req[..n]).unwrap_or("");
                        let resp = if head.starts_with("GET /metrics") {
                            let body = registry.render();
                            format!(
                                "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{}",
                                body.len(),
                                body
                            )
                        } else {
                            "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                                .to_string()
                        };
                        let _ = s.write_all(resp.as_bytes());
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(20)),
                }
            }
        })?;
    Ok((local, h))
}

/// One structured log line on stderr: `ts=… level=… comp=… msg="…" k=v …`.
pub fn log(level: &str, comp: &str, msg: &str, kv: &[(&str, &dyn Display)]) {
    let ts = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    let mut line = format!(
        "ts={}.{:06} level={level} comp={comp} msg=\"{msg}\"",
        ts.as_secs(),
        ts.subsec_micros()
    );
    for (k, v) in kv {
        let _ = write!(line, " {k}={v}");
    }
    eprintln!("{line}");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_families_once() {
        let mut r = Registry::new();
        let a = r.register("x_total", "x", Kind::Counter, &[("reason", "a")]);
        let _ = r.register("y", "y", Kind::Gauge, &[]);
        let b = r.register("x_total", "x", Kind::Counter, &[("reason", "b")]);
        r.inc(a);
        r.add(b, 5);
        let t = r.render();
        assert_eq!(t.matches("# TYPE x_total counter").count(), 1);
        assert!(t.contains("x_total{reason=\"a\"} 1\n"));
        assert!(t.contains("x_total{reason=\"b\"} 5\n"));
        assert!(t.contains("y 0\n"));
        assert_eq!(r.sum("x_total"), 6);
    }
}

#[cfg(test)]
mod http_tests {
    use super::*;
    use std::net::TcpStream;

    fn get(addr: SocketAddr, path: &str) -> String {
        let mut s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        write!(s, "GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        out
    }

    #[test]
    fn serves_prometheus_text() {
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
        let body = get(addr, "/metrics");
        assert!(body.starts_with("HTTP/1.1 200 OK"), "{body}");
        assert!(body.contains("text/plain; version=0.0.4"));
        assert!(body.contains("netsched_drops_total{reason=\"truncated\"} 3\n"));
        assert!(get(addr, "/other").starts_with("HTTP/1.1 404"));
        stop.store(true, Ordering::Relaxed);
        h.join().unwrap();
    }
}
