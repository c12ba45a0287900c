//! The centralized controller (`netsched controller`, Horus §3.2 and §A.3).
//!
//! It holds the topology and pools (TOML, or its own state file after a
//! restart), assigns ids (rack ids within a pool are indices at the spine,
//! worker ids within a rack are indices at the leaf; the admin API also
//! hands out cluster-wide ids), links every leaf to one spine, and keeps the
//! scheduler daemons configured through the control protocol of
//! [`controller_proto`](crate::controller_proto):
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

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::controller_proto::{
    ControlMsg, InstanceDesired, InstanceStatus, OpenError, Opener, RoleName, Sealer,
};
use crate::metrics::{self, Kind, Registry, Slot};
use crate::net;
use crate::secret::{ClusterKey, Secret};

/// `netsched controller -c FILE`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ControllerConfig {
    /// UDP address of the control protocol (daemons' `controller` setting).
    pub listen: String,
    /// HTTP address of the admin API.
    pub admin: String,
    /// Prometheus endpoint; none if absent.
    #[serde(default)]
    pub metrics: Option<String>,
    /// Admin bearer token inline (tests; the CLI refuses a config file
    /// holding it that others may read). Prefer `token_file` or `token_env`.
    #[serde(default)]
    pub token: Option<Secret>,
    /// A mode-0600 file holding the admin token.
    #[serde(default)]
    pub token_file: Option<PathBuf>,
    /// Environment variable holding the token when neither `token` nor
    /// `token_file` is set.
    #[serde(default = "default_token_env")]
    pub token_env: String,
    /// The cluster key sealing control datagrams: inline `key` (tests),
    /// `key_file` (a mode-0600 file of 64 hex digits), else the variable
    /// `key_env` (default `NETSCHED_CLUSTER_KEY`). The daemons need the same.
    #[serde(default)]
    pub key: Option<Secret>,
    #[serde(default)]
    pub key_file: Option<PathBuf>,
    #[serde(default)]
    pub key_env: Option<String>,
    /// JSON file the controller keeps its topology in (written on every
    /// admin change, read at start if present).
    #[serde(default)]
    pub state: Option<PathBuf>,
    /// A daemon silent this long is failed.
    #[serde(default = "default_daemon_timeout")]
    pub daemon_timeout_ms: u64,
    #[serde(default = "default_tick")]
    pub tick_ms: u64,
    /// Minimum time between two configuration pushes to one instance.
    #[serde(default = "default_resend")]
    pub resend_ms: u64,
    #[serde(default, rename = "pool")]
    pub pools: Vec<PoolSpec>,
}

fn default_token_env() -> String {
    "NETSCHED_TOKEN".into()
}
fn default_daemon_timeout() -> u64 {
    500
}
fn default_tick() -> u64 {
    20
}
fn default_resend() -> u64 {
    100
}

/// One pool: its spines and its racks.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PoolSpec {
    pub id: u16,
    /// Spine daemons serving the pool (their UDP addresses).
    pub spines: Vec<SocketAddr>,
    #[serde(default, rename = "rack")]
    pub racks: Vec<RackSpec>,
}

/// One rack of a pool: its leaf daemon and its workers (executors), in id order.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RackSpec {
    pub leaf: SocketAddr,
    pub workers: Vec<SocketAddr>,
    /// Preferred spine (index into `spines`); default: rack index mod spines.
    #[serde(default)]
    pub spine: Option<usize>,
}

impl ControllerConfig {
    pub fn from_toml(s: &str) -> Result<Self, String> {
        let c: ControllerConfig = toml::from_str(s).map_err(|e| e.to_string())?;
        c.validate()?;
        Ok(c)
    }

    pub fn validate(&self) -> Result<(), String> {
        if self.tick_ms == 0 || self.daemon_timeout_ms == 0 {
            return Err("tick_ms and daemon_timeout_ms must be at least 1".into());
        }
        let mut ids: Vec<u16> = self.pools.iter().map(|p| p.id).collect();
        ids.sort_unstable();
        if ids.windows(2).any(|w| w[0] == w[1]) {
            return Err("pool ids must be unique".into());
        }
        for p in &self.pools {
            if p.spines.is_empty() {
                return Err(format!("pool {}: spines: at least one spine", p.id));
            }
            for (r, rack) in p.racks.iter().enumerate() {
                if rack.workers.is_empty() {
                    return Err(format!("pool {}: rack {r}: workers: at least one", p.id));
                }
                if rack.spine.is_some_and(|s| s >= p.spines.len()) {
                    return Err(format!("pool {}: rack {r}: spine: no such spine", p.id));
                }
            }
        }
        Ok(())
    }

    /// The cluster key ([`ControllerConfig::key_file`]).
    pub fn cluster_key(&self) -> Result<ClusterKey, String> {
        ClusterKey::resolve(
            self.key.as_ref().map(Secret::expose),
            self.key_file.as_deref(),
            self.key_env.as_deref(),
        )
    }

    /// The admin token: `token`, else `token_file`, else the `token_env`
    /// variable.
    pub fn resolve_token(&self) -> Result<String, String> {
        let t = match (&self.token, &self.token_file) {
            (Some(t), _) => t.expose().to_string(),
            (None, Some(p)) => crate::secret::read_secret_file(p)?,
            (None, None) => std::env::var(&self.token_env).map_err(|_| {
                format!(
                    "token: no admin token (set `token_file` or the {} environment variable)",
                    self.token_env
                )
            })?,
        };
        if t.len() < 8 {
            return Err("token: the admin token needs at least 8 characters".into());
        }
        Ok(t)
    }
}

// ---- the persisted topology ----

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
struct WorkerEntry {
    id: u64,
    addr: SocketAddr,
    removed: bool,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
struct RackEntry {
    id: u64,
    leaf: SocketAddr,
    spine: usize,
    removed: bool,
    workers: Vec<WorkerEntry>,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
struct PoolEntry {
    id: u16,
    spines: Vec<SocketAddr>,
    racks: Vec<RackEntry>,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
struct Topology {
    next_id: u64,
    pools: Vec<PoolEntry>,
}

impl Topology {
    fn from_spec(pools: &[PoolSpec]) -> Self {
        let mut t = Topology {
            next_id: 1,
            pools: Vec::new(),
        };
        for p in pools {
            let mut racks = Vec::new();
            for (r, rs) in p.racks.iter().enumerate() {
                let workers = rs
                    .workers
                    .iter()
                    .map(|a| WorkerEntry {
                        id: t.take_id(),
                        addr: *a,
                        removed: false,
                    })
                    .collect();
                racks.push(RackEntry {
                    id: t.take_id(),
                    leaf: rs.leaf,
                    spine: rs.spine.unwrap_or(r % p.spines.len()),
                    removed: false,
                    workers,
                });
            }
            t.pools.push(PoolEntry {
                id: p.id,
                spines: p.spines.clone(),
                racks,
            });
        }
        t
    }

    fn take_id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id - 1
    }

    fn pool_mut(&mut self, id: u16) -> Option<&mut PoolEntry> {
        self.pools.iter_mut().find(|p| p.id == id)
    }

    /// Every daemon address the controller expects reports from.
    fn daemons(&self) -> Vec<SocketAddr> {
        let mut v: Vec<SocketAddr> = self
            .pools
            .iter()
            .flat_map(|p| {
                p.spines
                    .iter()
                    .copied()
                    .chain(p.racks.iter().map(|r| r.leaf))
            })
            .collect();
        v.sort();
        v.dedup();
        v
    }
}

// ---- runtime state ----

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
}

const KINDS: [&str; 3] = ["spine", "leaf", "worker"];

/// Why the controller refused a control datagram or an admin request
/// (`netsched_controller_rejected_total{reason}`).
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

struct State {
    topo: Topology,
    state_path: Option<PathBuf>,
    started: Instant,
    /// Last report per (daemon, pool).
    /// Keyed by role too: one daemon may host a pool's spine and its leaf.
    reports: BTreeMap<(SocketAddr, u16, RoleName), InstanceStatus>,
    /// When each daemon was last heard from.
    heard: BTreeMap<SocketAddr, Instant>,
    /// Liveness as last logged, to log and count transitions once.
    daemon_up: BTreeMap<SocketAddr, bool>,
    worker_up: BTreeMap<u64, bool>,
    last_push: BTreeMap<(SocketAddr, u16, RoleName), Instant>,
    timeout: Duration,
    resend: Duration,
}

impl State {
    fn alive(&self, a: SocketAddr, now: Instant) -> bool {
        let last = self.heard.get(&a).copied().unwrap_or(self.started);
        now.saturating_duration_since(last) <= self.timeout
    }

    /// The spine rack `r` of pool `p` is linked to: its preferred spine if
    /// alive, else the next live one (Horus §A.3: leaves of a failed spine
    /// are relinked).
    fn linked_spine(&self, p: &PoolEntry, r: &RackEntry, now: Instant) -> usize {
        let n = p.spines.len();
        (0..n)
            .map(|k| (r.spine + k) % n)
            .find(|&s| self.alive(p.spines[s], now))
            .unwrap_or(r.spine % n)
    }

    /// Per worker of rack `r`: live as its leaf last reported (all
    /// non-removed ones before the first report).
    fn worker_live(&self, pool: u16, r: &RackEntry) -> Vec<bool> {
        let rep = self.reports.get(&(r.leaf, pool, RoleName::Leaf));
        r.workers
            .iter()
            .enumerate()
            .map(|(j, w)| {
                !w.removed
                    && match rep {
                        Some(s) => s.live.get(j).copied().unwrap_or(false),
                        None => true,
                    }
            })
            .collect()
    }

    fn rack_live_workers(&self, pool: u16, r: &RackEntry) -> u32 {
        self.worker_live(pool, r).iter().filter(|x| **x).count() as u32
    }

    fn spine_desired(&self, p: &PoolEntry, s: usize, now: Instant) -> InstanceDesired {
        let mut enabled = Vec::new();
        let mut workers = Vec::new();
        for r in &p.racks {
            let w = self.rack_live_workers(p.id, r);
            enabled.push(
                !r.removed && self.alive(r.leaf, now) && self.linked_spine(p, r, now) == s && w > 0,
            );
            workers.push(w);
        }
        InstanceDesired {
            pool: p.id,
            downstream: p.racks.iter().map(|r| r.leaf).collect(),
            enabled,
            role: Some(RoleName::Spine),
            upstream: None,
            rack_workers: Some(workers),
        }
    }

    fn leaf_desired(&self, p: &PoolEntry, r: &RackEntry, now: Instant) -> InstanceDesired {
        let linked = self.linked_spine(p, r, now);
        let mut up = vec![p.spines[linked]];
        up.extend(
            p.spines
                .iter()
                .enumerate()
                .filter(|&(s, a)| s != linked && self.alive(*a, now))
                .map(|(_, a)| *a),
        );
        InstanceDesired {
            pool: p.id,
            downstream: r.workers.iter().map(|w| w.addr).collect(),
            enabled: r.workers.iter().map(|w| !w.removed).collect(),
            role: Some(RoleName::Leaf),
            upstream: Some(up),
            rack_workers: None,
        }
    }

    /// Writes the topology to the state file durably: a temporary file,
    /// fsynced, renamed over the old one, and the directory fsynced so the
    /// rename itself survives a crash. Only then is a change acknowledged.
    fn save(&self) -> Result<(), String> {
        let Some(p) = &self.state_path else {
            return Ok(());
        };
        let tmp = p.with_extension("tmp");
        let body = serde_json::to_string_pretty(&self.topo).map_err(|e| e.to_string())?;
        let e = |path: &std::path::Path| {
            let path = path.display().to_string();
            move |x: std::io::Error| format!("{path}: {x}")
        };
        let mut f = std::fs::File::create(&tmp).map_err(e(&tmp))?;
        f.write_all(body.as_bytes()).map_err(e(&tmp))?;
        f.sync_all().map_err(e(&tmp))?;
        drop(f);
        std::fs::rename(&tmp, p).map_err(e(p))?;
        let dir = match p.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => std::path::Path::new("."),
        };
        std::fs::File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(e(dir))
    }
}

/// Does a report already show what we want?
fn matches(rep: &InstanceStatus, d: &InstanceDesired) -> bool {
    if rep.downstream != d.downstream {
        return false;
    }
    match rep.role {
        RoleName::Leaf => {
            rep.enabled == d.enabled && d.upstream.as_ref().is_none_or(|u| *u == rep.upstream)
        }
        RoleName::Spine => {
            let w = d.rack_workers.as_deref().unwrap_or(&[]);
            rep.live == d.enabled
                && d.enabled
                    .iter()
                    .enumerate()
                    .all(|(r, &e)| !e || rep.rack_workers.get(r) == w.get(r))
        }
    }
}

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
    pub fn start(cfg: &ControllerConfig, stop: Arc<AtomicBool>) -> Result<Self, String> {
        cfg.validate()?;
        let token = cfg.resolve_token()?;
        let key = cfg.cluster_key()?;
        let restored = match &cfg.state {
            Some(p) if p.exists() => {
                let s = std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()))?;
                Some(
                    serde_json::from_str::<Topology>(&s)
                        .map_err(|e| format!("{}: {e}", p.display()))?,
                )
            }
            _ => None,
        };
        let from_state = restored.is_some();
        let topo = restored.unwrap_or_else(|| Topology::from_spec(&cfg.pools));
        let sock = net::bind(&cfg.listen).map_err(|e| format!("{}: {e}", cfg.listen))?;
        let admin = TcpListener::bind(&cfg.admin).map_err(|e| format!("{}: {e}", cfg.admin))?;
        admin.set_nonblocking(true).map_err(|e| e.to_string())?;
        let control_addr = sock.local_addr().map_err(|e| e.to_string())?;
        let admin_addr = admin.local_addr().map_err(|e| e.to_string())?;

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
                    "netsched_controller_rejected_total",
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
                "netsched_controller_failures_total",
                "Failures detected (daemon timeout; workers as reported by their leaf)",
                Kind::Counter,
            ),
            recoveries: kinds(
                &mut reg,
                "netsched_controller_recoveries_total",
                "Failed nodes heard from again",
                Kind::Counter,
            ),
            live: kinds(
                &mut reg,
                "netsched_controller_live",
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
        };
        let registry = Arc::new(reg);
        let metrics_addr = match &cfg.metrics {
            Some(a) => {
                let (addr, h) = metrics::serve(a, registry.clone(), stop.clone())
                    .map_err(|e| format!("{a}: {e}"))?;
                Some((addr, h))
            }
            None => None,
        };
        let now = Instant::now();
        let state = State {
            heard: BTreeMap::new(),
            daemon_up: topo.daemons().into_iter().map(|a| (a, true)).collect(),
            topo,
            state_path: cfg.state.clone(),
            started: now,
            reports: BTreeMap::new(),
            worker_up: BTreeMap::new(),
            last_push: BTreeMap::new(),
            timeout: Duration::from_millis(cfg.daemon_timeout_ms),
            resend: Duration::from_millis(cfg.resend_ms),
        };
        if !from_state {
            state.save()?;
        }
        metrics::log(
            "info",
            "controller",
            "started",
            &[
                ("control", &control_addr),
                ("admin", &admin_addr),
                (
                    "topology",
                    &if from_state { "state file" } else { "config" },
                ),
                ("daemons", &state.topo.daemons().len()),
            ],
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
                    })
                    .map_err(|e| e.to_string())?,
            );
        }
        {
            let (state, registry, slots, stop) =
                (state.clone(), registry.clone(), slots.clone(), stop.clone());
            threads.push(
                std::thread::Builder::new()
                    .name("admin".into())
                    .spawn(move || admin::admin_loop(admin, token, state, registry, slots, stop))
                    .map_err(|e| e.to_string())?,
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
            if !crate::controller_proto::is_control(data) {
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
                    st.heard.insert(src, Instant::now());
                    for inst in s.instances {
                        if st.topo.pools.iter().any(|p| p.id == inst.pool) {
                            st.reports.insert((src, inst.pool, inst.role), inst);
                        } else {
                            slots.reject(&reg, Rejected::UnknownPool);
                        }
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
            let mut st = state.lock().unwrap();
            reconcile(
                &mut st,
                &sock,
                (&mut sealer, &opener),
                &reg,
                &slots,
                last_tick,
            );
        }
    }
}

/// One reconciliation round: note failures and recoveries, then push the
/// desired state to every live instance whose report differs.
fn reconcile(
    st: &mut State,
    sock: &UdpSocket,
    (sealer, opener): (&mut Sealer, &Opener),
    reg: &Registry,
    slots: &Slots,
    now: Instant,
) {
    // Liveness transitions, logged and counted once.
    let mut live = [0u64; 3];
    let mut events: Vec<(usize, bool, String)> = Vec::new();
    let topo = st.topo.clone();
    for p in &topo.pools {
        for (s, &a) in p.spines.iter().enumerate() {
            let up = st.alive(a, now);
            live[0] += up as u64;
            if st.daemon_up.insert(a, up) != Some(up) {
                events.push((0, up, format!("pool={} spine={s} addr={a}", p.id)));
            }
        }
        for (r, rack) in p.racks.iter().enumerate() {
            if rack.removed {
                continue;
            }
            let up = st.alive(rack.leaf, now);
            live[1] += up as u64;
            if st.daemon_up.insert(rack.leaf, up) != Some(up) {
                events.push((1, up, format!("pool={} rack={r} leaf={}", p.id, rack.leaf)));
            }
            let wl = st.worker_live(p.id, rack);
            for (j, w) in rack.workers.iter().enumerate() {
                if w.removed {
                    continue;
                }
                // A dead leaf cannot vouch for its workers; keep their last state.
                let wup = if up {
                    wl[j]
                } else {
                    *st.worker_up.get(&w.id).unwrap_or(&true)
                };
                live[2] += wup as u64;
                if st.worker_up.insert(w.id, wup).is_some_and(|old| old != wup) {
                    events.push((
                        2,
                        wup,
                        format!(
                            "pool={} rack={r} node={j} id={} addr={}",
                            p.id, w.id, w.addr
                        ),
                    ));
                }
            }
        }
    }
    for (k, n) in live.iter().enumerate() {
        reg.set(slots.live[k], *n);
    }
    for (k, up, what) in events {
        if up {
            reg.inc(slots.recoveries[k]);
            metrics::log(
                "info",
                "controller",
                &format!("{} back", KINDS[k]),
                &[("node", &what)],
            );
        } else {
            reg.inc(slots.failures[k]);
            metrics::log(
                "warn",
                "controller",
                &format!("{} failed", KINDS[k]),
                &[("node", &what)],
            );
        }
    }
    // Pushes.
    let mut sends: Vec<(SocketAddr, ControlMsg)> = Vec::new();
    for p in &topo.pools {
        for (s, &a) in p.spines.iter().enumerate() {
            if !st.alive(a, now) {
                continue;
            }
            let d = st.spine_desired(p, s, now);
            if let Some(rep) = st.reports.get(&(a, p.id, RoleName::Spine)) {
                if matches(rep, &d) {
                    continue;
                }
                // Racks this push admits start from their leaf's truth.
                for (r, rack) in p.racks.iter().enumerate() {
                    if d.enabled[r] && !rep.live.get(r).copied().unwrap_or(false) {
                        sends.push((rack.leaf, ControlMsg::Resync { pool: p.id }));
                    }
                }
            } else {
                // Never reported: wait for its first status.
                continue;
            }
            sends.push((a, ControlMsg::Configure(d)));
        }
        for rack in &p.racks {
            if rack.removed || !st.alive(rack.leaf, now) {
                continue;
            }
            let d = st.leaf_desired(p, rack, now);
            match st.reports.get(&(rack.leaf, p.id, RoleName::Leaf)) {
                Some(rep) if !matches(rep, &d) => sends.push((rack.leaf, ControlMsg::Configure(d))),
                _ => {}
            }
        }
    }
    for (dst, msg) in sends {
        let key = match &msg {
            ControlMsg::Configure(d) => (dst, d.pool, d.role.unwrap_or(RoleName::Leaf)),
            // A resync waits for the leaf's own configure (same key).
            ControlMsg::Resync { pool } => (dst, *pool, RoleName::Leaf),
            ControlMsg::Status(_) => continue,
        };
        let is_resync = matches!(msg, ControlMsg::Resync { .. });
        if !is_resync {
            if let Some(t) = st.last_push.get(&key) {
                if now.saturating_duration_since(*t) < st.resend {
                    continue;
                }
            }
            st.last_push.insert(key, now);
        } else if st
            .last_push
            .get(&key)
            .is_some_and(|t| now.saturating_duration_since(*t) < st.resend)
        {
            // The leaf's own configure is pending; resync after it.
            continue;
        }
        // A push names the daemon's epoch from its last report; a daemon not
        // heard from in this controller's life gets none until it reports.
        let Some(peer) = opener.epoch_of(dst) else {
            continue;
        };
        if sock.send_to(&sealer.seal(&msg, dst, peer), dst).is_ok() {
            reg.inc(if is_resync {
                slots.resync_tx
            } else {
                slots.configure_tx
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

// ---- admin API (controller_admin.rs) ----

// A child module, so it reaches the controller's state directly.
#[path = "controller_admin.rs"]
mod admin;
pub use admin::ct_eq;

/// A minimal HTTP client for the admin API (tests, `cluster up`).
pub fn http(
    addr: SocketAddr,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: Option<&str>,
) -> Result<(u16, String), String> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(2))
        .map_err(|e| format!("{addr}: {e}"))?;
    let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
    let auth = token
        .map(|t| format!("Authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    let body = body.unwrap_or("");
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\n{auth}Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .map_err(|e| e.to_string())?;
    let mut resp = String::new();
    s.read_to_string(&mut resp).map_err(|e| e.to_string())?;
    let code = resp
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| format!("bad response from {addr}"))?;
    let body = resp
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    Ok((code, body))
}

/// Runs a controller from its config until `stop` (the CLI).
pub fn run_config(cfg: &ControllerConfig, stop: Arc<AtomicBool>) -> Result<(), String> {
    let c = Controller::start(cfg, stop)?;
    c.join();
    metrics::log("info", "controller", "stopped", &[]);
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

    #[test]
    fn config_errors_name_the_field() {
        let e = ControllerConfig::from_toml(
            "listen='127.0.0.1:0'\nadmin='127.0.0.1:0'\n[[pool]]\nid=1\nspines=[]\n",
        )
        .unwrap_err();
        assert!(e.contains("spines"), "{e}");
        let c = ControllerConfig::from_toml(
            "listen='127.0.0.1:0'\nadmin='127.0.0.1:0'\ntoken_env='NETSCHED_TEST_NO_SUCH_VAR'\n",
        )
        .unwrap();
        assert!(c
            .resolve_token()
            .unwrap_err()
            .contains("NETSCHED_TEST_NO_SUCH_VAR"));
    }

    #[test]
    fn rack_ids_and_links_are_assigned_round_robin() {
        let a = |p: u16| SocketAddr::from(([127, 0, 0, 1], p));
        let t = Topology::from_spec(&[PoolSpec {
            id: 1,
            spines: vec![a(1), a(2)],
            racks: (0..3)
                .map(|r| RackSpec {
                    leaf: a(10 + r),
                    workers: vec![a(100 + r), a(200 + r)],
                    spine: None,
                })
                .collect(),
        }]);
        let spines: Vec<usize> = t.pools[0].racks.iter().map(|r| r.spine).collect();
        assert_eq!(spines, vec![0, 1, 0]);
        let mut ids: Vec<u64> = t.pools[0]
            .racks
            .iter()
            .flat_map(|r| std::iter::once(r.id).chain(r.workers.iter().map(|w| w.id)))
            .collect();
        let n = ids.len();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), n, "ids are unique");
    }
}
