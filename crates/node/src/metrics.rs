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
    eprintln!("{}", log_line(ts, level, comp, msg, kv));
}

/// The logfmt line of [`log`]: `key=value` pairs, a value quoted (with `"`
/// and `\` escaped) when it is empty or holds a space, `=`, `"`, `\` or a
/// control character, so `pool=1 rack=2` inside a value cannot read as two
/// keys.
fn log_line(
    ts: Duration,
    level: &str,
    comp: &str,
    msg: &str,
    kv: &[(&str, &dyn Display)],
) -> String {
    let mut line = format!("ts={}.{:06}", ts.as_secs(), ts.subsec_micros());
    let mut value = String::new();
    let fields: [(&str, &dyn Display); 3] = [("level", &level), ("comp", &comp), ("msg", &msg)];
    for (k, v) in fields.iter().chain(kv) {
        value.clear();
        let _ = write!(value, "{v}");
        let _ = write!(line, " {k}=");
        push_logfmt_value(&mut line, &value, *k == "msg");
    }
    line
}

fn push_logfmt_value(out: &mut String, v: &str, always_quote: bool) {
    let needs_quotes = always_quote
        || v.is_empty()
        || v.chars()
            .any(|c| c == ' ' || c == '=' || c == '"' || c == '\\' || c.is_control());
    if !needs_quotes {
        out.push_str(v);
        return;
    }
    out.push('"');
    for c in v.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_values_are_quoted_when_they_would_split() {
        let pool = "pool=1 rack=2";
        let from = format!("{:?}", ["127.0.0.1:1", "127.0.0.1:2"]);
        let line = log_line(
            Duration::new(12, 3_000),
            "warn",
            "switch",
            "say \"hi\"",
            &[
                ("node", &pool),
                ("from", &from),
                ("n", &7),
                ("empty", &""),
                ("path", &"a\\b\nc"),
            ],
        );
        assert_eq!(
            line,
            "ts=12.000003 level=warn comp=switch msg=\"say \\\"hi\\\"\" node=\"pool=1 rack=2\" \
             from=\"[\\\"127.0.0.1:1\\\", \\\"127.0.0.1:2\\\"]\" n=7 empty=\"\" \
             path=\"a\\\\b\\nc\""
        );
    }

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
