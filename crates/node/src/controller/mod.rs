//! The centralized controller (`netsched controller`, Horus §3.2 and §A.3).
//!
//! It holds the topology and pools (TOML, or its own state file after a
//! restart), assigns ids (rack ids within a pool are indices at the spine,
//! worker ids within a rack are indices at the leaf; the admin API also
//! hands out cluster-wide ids), links every leaf to one spine, and keeps the
//! scheduler daemons configured through the control protocol of
//! [`controller::proto`](crate::controller::proto):
//!
//! * **Failure detection.** Every daemon sends a status report every
//!   `status_ms`; one silent for `daemon_timeout_ms` is failed. A failed or
//!   unreachable leaf (a cut link looks the same) is dropped from its spine
//!   (§A.3 "Switch Failures"); the leaves of a failed spine are relinked to
//!   a live one, which they resync with their idle state and load. Worker
//!   failures are detected by the leaf from heartbeats (§A.3 "Server
//!   Failures") and arrive in the leaf's status; the controller then
//!   installs the rack's new 1/w at its spine (§A.2) and drops a rack with no
//!   live worker.
//! * **Reconciliation.** Every `tick_ms` the controller compares each
//!   daemon's last report with the state it wants and sends a `configure`
//!   where they differ (at most every `resend_ms`). So lost control
//!   datagrams, a daemon restart and a controller restart all heal the same
//!   way, and the data path never waits for the controller: the cluster keeps
//!   serving while it is down.
//! * **Admin API** (HTTP/JSON, bearer token): topology, add/remove workers
//!   and racks at runtime; changes are written to the state file first, so a
//!   restarted controller reloads them (docs/runtime.md).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::error::Error;
use crate::metrics::{self, Kind, Registry, Slot};
use crate::net;

mod admin;
mod config;
pub mod proto;
mod reconcile;
mod topology;

pub use admin::ct_eq;
pub use config::{ControllerConfig, PoolSpec, RackSpec};
use proto::{ControlMsg, OpenError, Opener, RoleName, Sealer};
use reconcile::{Round, State, Transition, KINDS};
use topology::Topology;

struct Slots {
    status_rx: Slot,
    /// By `Rejected` reason.
    rejected: [Slot; 12],
    configure_tx: Slot,
    resync_tx: Slot,
    failures: [Slot; 3],
    recoveries: [Slot; 3],
    live: [Slot; 3],
    admin: Vec<(u16, Slot)>,
    /// How long admin requests took to answer.
    admin_time: Slot,
}

/// Why the controller refused a control datagram or an admin request
/// (`netsched_control_rejected_total{reason}`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Rejected {
    /// A status report from an address that is no daemon of the topology.
    UnknownSource,
    /// A datagram without the control magic.
    NotControl,
    /// No valid MAC under the cluster key (forged, altered, another
    /// cluster's, or the unsealed format).
    BadMac,
    /// Authentic but not newer than the last one accepted from its sender.
    Replayed,
    /// Authentic but sealed for another destination or by another sender.
    Misaddressed,
    /// The control magic followed by invalid JSON or an unknown message.
    BadJson,
    /// A message only daemons receive (configure, resync).
    UnexpectedType,
    /// One instance of a status report names a pool the topology lacks
    /// (the rest of the report is kept).
    UnknownPool,
    /// Admin API: no or a wrong bearer token (401).
    BadAuth,
    /// Admin API: unparsable request or body, invalid field, wrong method,
    /// body too slow or too large (400, 405, 408, 413).
    BadRequest,
    /// Admin API: no such endpoint, pool, rack or worker (404).
    NotFound,
    /// Admin API: conflicts with the topology, e.g. a duplicate address (409).
    Conflict,
}

impl Rejected {
    const ALL: [Rejected; 12] = [
        Rejected::UnknownSource,
        Rejected::NotControl,
        Rejected::BadMac,
        Rejected::Replayed,
        Rejected::Misaddressed,
        Rejected::BadJson,
        Rejected::UnexpectedType,
        Rejected::UnknownPool,
        Rejected::BadAuth,
        Rejected::BadRequest,
        Rejected::NotFound,
        Rejected::Conflict,
    ];

    fn name(self) -> &'static str {
        match self {
            Rejected::UnknownSource => "unknown_source",
            Rejected::NotControl => "not_control",
            Rejected::BadMac => "bad_mac",
            Rejected::Replayed => "replayed",
            Rejected::Misaddressed => "misaddressed",
            Rejected::BadJson => "bad_json",
            Rejected::UnexpectedType => "unexpected_type",
            Rejected::UnknownPool => "unknown_pool",
            Rejected::BadAuth => "bad_auth",
            Rejected::BadRequest => "bad_request",
            Rejected::NotFound => "not_found",
            Rejected::Conflict => "conflict",
        }
    }

    /// The admin API's refusals, by status code.
    fn of_status(code: u16) -> Option<Rejected> {
        match code {
            400 | 405 | 408 | 413 => Some(Rejected::BadRequest),
            401 => Some(Rejected::BadAuth),
            404 => Some(Rejected::NotFound),
            409 => Some(Rejected::Conflict),
            _ => None,
        }
    }
}

impl Slots {
    fn reject(&self, reg: &Registry, why: Rejected) {
        reg.inc(self.rejected[why as usize]);
    }
}
const CODES: [u16; 10] = [200, 201, 400, 401, 404, 405, 408, 409, 413, 500];

/// A running controller.
pub struct Controller {
    state: Arc<Mutex<State>>,
    registry: Arc<Registry>,
    pub control_addr: SocketAddr,
    pub admin_addr: SocketAddr,
    pub metrics_addr: Option<SocketAddr>,
    threads: Vec<JoinHandle<()>>,
}

impl Controller {
    /// Binds its sockets (in the caller's network namespace), loads or
    /// builds the topology and starts the control and admin threads.
    pub fn start(cfg: &ControllerConfig, stop: Arc<AtomicBool>) -> Result<Self, Error> {
        cfg.validate()?;
        let token = cfg.resolve_token()?;
        let key = cfg.cluster_key()?;
        let restored = match &cfg.state {
            Some(p) if p.exists() => {
                let s = std::fs::read_to_string(p).map_err(|e| Error::io(p.display(), e))?;
                Some(
                    serde_json::from_str::<Topology>(&s).map_err(|source| Error::Json {
                        what: p.display().to_string(),
                        source,
                    })?,
                )
            }
            _ => None,
        };
        let from_state = restored.is_some();
        let topo = restored.unwrap_or_else(|| Topology::from_spec(&cfg.pools));
        let sock = net::bind(&cfg.listen).map_err(|e| Error::io(&cfg.listen, e))?;
        let admin = TcpListener::bind(&cfg.admin).map_err(|e| Error::io(&cfg.admin, e))?;
        admin.set_nonblocking(true)?;
        let control_addr = sock.local_addr()?;
        let admin_addr = admin.local_addr()?;

        let mut reg = Registry::new();
        let kinds = |reg: &mut Registry, name: &'static str, help: &'static str, kind: Kind| {
            KINDS.map(|k| reg.register(name, help, kind, &[("kind", k)]))
        };
        let slots = Slots {
            status_rx: reg.register(
                "netsched_controller_status_rx_total",
                "Status reports received from daemons",
                Kind::Counter,
                &[],
            ),
            rejected: Rejected::ALL.map(|r| {
                reg.register(
                    "netsched_control_rejected_total",
                    "Control datagrams and admin requests refused, by reason",
                    Kind::Counter,
                    &[("reason", r.name())],
                )
            }),
            configure_tx: reg.register(
                "netsched_controller_configure_tx_total",
                "Configuration pushes sent",
                Kind::Counter,
                &[],
            ),
            resync_tx: reg.register(
                "netsched_controller_resync_tx_total",
                "Resync requests sent to leaves",
                Kind::Counter,
                &[],
            ),
            failures: kinds(
                &mut reg,
                "netsched_node_failures_total",
                "Failures detected (daemon timeout; workers as reported by their leaf)",
                Kind::Counter,
            ),
            recoveries: kinds(
                &mut reg,
                "netsched_node_recoveries_total",
                "Failed nodes heard from again",
                Kind::Counter,
            ),
            live: kinds(
                &mut reg,
                "netsched_live_nodes",
                "Live nodes by kind",
                Kind::Gauge,
            ),
            admin: CODES
                .iter()
                .map(|c| {
                    (
                        *c,
                        reg.register(
                            "netsched_controller_admin_requests_total",
                            "Admin API requests by status code",
                            Kind::Counter,
                            &[("code", &c.to_string())],
                        ),
                    )
                })
                .collect(),
            admin_time: reg.register(
                "netsched_controller_admin_request_seconds",
                "Time to answer one admin API request (state changes include their fsync)",
                Kind::Histogram,
                &[],
            ),
        };
        let registry = Arc::new(reg);
        let metrics_addr = match &cfg.metrics {
            Some(a) => {
                let (addr, h) = metrics::serve(a, registry.clone(), stop.clone())
                    .map_err(|e| Error::io(a, e))?;
                Some((addr, h))
            }
            None => None,
        };
        let now = Instant::now();
        let state = State::new(
            topo,
            cfg.state.clone(),
            now,
            Duration::from_millis(cfg.daemon_timeout_ms),
            Duration::from_millis(cfg.resend_ms),
        );
        if !from_state {
            state.save()?;
        }
        tracing::info!(
            target: "controller",
            control = %control_addr,
            admin = %admin_addr,
            topology = %if from_state { "state file" } else { "config" },
            daemons = state.topo.daemons().len(),
            "started"
        );
        let state = Arc::new(Mutex::new(state));
        let slots = Arc::new(slots);
        let mut threads = Vec::new();
        {
            let (state, registry, slots, stop) =
                (state.clone(), registry.clone(), slots.clone(), stop.clone());
            let tick = Duration::from_millis(cfg.tick_ms);
            threads.push(
                std::thread::Builder::new()
                    .name("controller".into())
                    .spawn(move || {
                        // A new epoch per start: daemons accept this
                        // controller at once and refuse its previous life's
                        // datagrams.
                        let auth = (Sealer::new(key.clone(), control_addr), Opener::new(key));
                        control_loop(sock, auth, state, registry, slots, stop, tick)
                    })?,
            );
        }
        {
            let (state, registry, slots, stop) =
                (state.clone(), registry.clone(), slots.clone(), stop.clone());
            threads.push(
                std::thread::Builder::new()
                    .name("admin".into())
                    .spawn(move || admin::admin_loop(admin, token, state, registry, slots, stop))?,
            );
        }
        let metrics_addr = metrics_addr.map(|(a, h)| {
            threads.push(h);
            a
        });
        Ok(Controller {
            state,
            registry,
            control_addr,
            admin_addr,
            metrics_addr,
            threads,
        })
    }

    pub fn registry(&self) -> Arc<Registry> {
        self.registry.clone()
    }

    /// The topology document of `GET /v1/topology`.
    pub fn topology_json(&self) -> serde_json::Value {
        let st = self.state.lock().unwrap();
        topology_json(&st, Instant::now())
    }

    /// Waits for the threads (after `stop` was set).
    pub fn join(self) {
        for t in self.threads {
            let _ = t.join();
        }
    }
}

fn control_loop(
    sock: UdpSocket,
    (mut sealer, mut opener): (Sealer, Opener),
    state: Arc<Mutex<State>>,
    reg: Arc<Registry>,
    slots: Arc<Slots>,
    stop: Arc<AtomicBool>,
    tick: Duration,
) {
    let mut buf = vec![0u8; 65536];
    let control_addr = sock.local_addr().expect("bound socket");
    let mut last_tick = Instant::now();
    while !stop.load(Ordering::Relaxed) {
        net::wait_readable(&sock, tick.min(Duration::from_millis(10)));
        while let Ok(Some((n, src))) = net::try_recv(&sock, &mut buf) {
            let data = &buf[..n];
            if !proto::is_control(data) {
                slots.reject(&reg, Rejected::NotControl);
                continue;
            }
            let mut st = state.lock().unwrap();
            // Strangers first: only the topology's daemons get a replay
            // floor in the opener.
            if !st.topo.daemons().contains(&src) {
                slots.reject(&reg, Rejected::UnknownSource);
                continue;
            }
            // No epoch of ours to check: a restarted controller has told no
            // daemon its epoch before their first reports (threat model).
            match opener.open(data, src, control_addr, None) {
                Ok(ControlMsg::Status(s)) => {
                    reg.inc(slots.status_rx);
                    for _ in 0..st.on_status(src, s, Instant::now()) {
                        slots.reject(&reg, Rejected::UnknownPool);
                    }
                }
                Ok(ControlMsg::Configure(_) | ControlMsg::Resync { .. }) => {
                    slots.reject(&reg, Rejected::UnexpectedType)
                }
                Err(OpenError::BadMac) => slots.reject(&reg, Rejected::BadMac),
                Err(OpenError::Replayed) => slots.reject(&reg, Rejected::Replayed),
                Err(OpenError::Misaddressed) => slots.reject(&reg, Rejected::Misaddressed),
                Err(OpenError::Undecodable) => slots.reject(&reg, Rejected::BadJson),
            }
        }
        if last_tick.elapsed() >= tick {
            last_tick = Instant::now();
            let round = state.lock().unwrap().tick(last_tick);
            send_round(round, &sock, (&mut sealer, &opener), &reg, &slots);
        }
    }
}

/// Carries out a reconciliation round: gauges, transition logs and counts,
/// and the pushes, sealed for each daemon's epoch from its last report (a
/// daemon not heard from in this controller's life gets none until it
/// reports).
fn send_round(
    round: Round,
    sock: &UdpSocket,
    (sealer, opener): (&mut Sealer, &Opener),
    reg: &Registry,
    slots: &Slots,
) {
    for (k, n) in round.live.iter().enumerate() {
        reg.set(slots.live[k], *n);
    }
    for Transition { kind, up, what } in round.transitions {
        if up {
            reg.inc(slots.recoveries[kind]);
            tracing::info!(target: "controller", kind = %KINDS[kind], node = %what, "node back");
        } else {
            reg.inc(slots.failures[kind]);
            tracing::warn!(target: "controller", kind = %KINDS[kind], node = %what, "node failed");
        }
    }
    for (dst, msg) in round.pushes {
        let Some(peer) = opener.epoch_of(dst) else {
            continue;
        };
        if sock.send_to(&sealer.seal(&msg, dst, peer), dst).is_ok() {
            reg.inc(match msg {
                ControlMsg::Resync { .. } => slots.resync_tx,
                _ => slots.configure_tx,
            });
        }
    }
}

fn topology_json(st: &State, now: Instant) -> serde_json::Value {
    let pools: Vec<serde_json::Value> = st
        .topo
        .pools
        .iter()
        .map(|p| {
            let linked: Vec<usize> = p.racks.iter().map(|r| st.linked_spine(p, r, now)).collect();
            let mut per_spine = vec![0u32; p.spines.len()];
            let racks: Vec<serde_json::Value> = p
                .racks
                .iter()
                .enumerate()
                .map(|(ri, r)| {
                    let wl = st.worker_live(p.id, r);
                    let leaf_alive = st.alive(r.leaf, now);
                    let live_workers = wl.iter().filter(|x| **x).count() as u32;
                    if !r.removed && leaf_alive {
                        per_spine[linked[ri]] += live_workers;
                    }
                    json!({
                        "id": r.id,
                        "rack": ri,
                        "leaf": r.leaf.to_string(),
                        "alive": leaf_alive,
                        "removed": r.removed,
                        "linked_spine": linked[ri],
                        "live_workers": live_workers,
                        "workers": r.workers.iter().enumerate().map(|(j, w)| json!({
                            "id": w.id,
                            "node": j,
                            "addr": w.addr.to_string(),
                            "removed": w.removed,
                            "live": wl[j],
                        })).collect::<Vec<_>>(),
                    })
                })
                .collect();
            let total: u32 = per_spine.iter().sum();
            let spines: Vec<serde_json::Value> = p
                .spines
                .iter()
                .enumerate()
                .map(|(s, a)| {
                    let rep = st.reports.get(&(*a, p.id, RoleName::Spine));
                    json!({
                        "spine": s,
                        "addr": a.to_string(),
                        "alive": st.alive(*a, now),
                        // §3.2: clients pick a spine in proportion to its workers.
                        "weight": if total == 0 { 0.0 } else { per_spine[s] as f64 / total as f64 },
                        "idle_racks": rep.and_then(|r| r.idle),
                        "admitted": rep.map(|r| r.live.clone()),
                        "rack_workers": rep.map(|r| r.rack_workers.clone()),
                    })
                })
                .collect();
            json!({"id": p.id, "spines": spines, "racks": racks})
        })
        .collect();
    json!({ "pools": pools })
}

/// A minimal HTTP client for the admin API (tests, `cluster up`).
pub fn http(
    addr: SocketAddr,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: Option<&str>,
) -> Result<(u16, String), Error> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(2))
        .map_err(|e| Error::io(addr, e))?;
    let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
    let auth = token
        .map(|t| format!("Authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    let body = body.unwrap_or("");
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\n{auth}Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )?;
    let mut resp = String::new();
    s.read_to_string(&mut resp)?;
    let code = resp
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| Error::Protocol(format!("bad response from {addr}")))?;
    let body = resp
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    Ok((code, body))
}

/// Runs a controller from its config until `stop` (the CLI).
pub fn run_config(cfg: &ControllerConfig, stop: Arc<AtomicBool>) -> Result<(), Error> {
    let c = Controller::start(cfg, stop)?;
    c.join();
    tracing::info!(target: "controller", "stopped");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ct_eq_compares_whole_strings() {
        assert!(ct_eq(b"Bearer abcdefgh", b"Bearer abcdefgh"));
        assert!(!ct_eq(b"Bearer abcdefgh", b"Bearer abcdefgX"));
        assert!(!ct_eq(b"Bearer abc", b"Bearer abcdefgh"));
        assert!(!ct_eq(b"", b"x"));
    }
}
