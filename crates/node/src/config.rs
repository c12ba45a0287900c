//! TOML configs of the three programs (docs/runtime.md has examples).

use serde::Deserialize;
use std::net::SocketAddr;

use crate::secret::SecretError;

mod client;
pub use client::{parse_service, ClientConfig, ControllerLink, RateStep, Target, WireFamily};

/// Why a config of the runtime (switch, worker, client, controller, cluster
/// up) cannot be used. One line that names the setting.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// Not TOML, or not of the expected shape (unknown or missing fields).
    #[error(transparent)]
    Parse(#[from] toml::de::Error),
    /// A config generated from another (`cluster up`) cannot be written.
    #[error(transparent)]
    Serialize(#[from] toml::ser::Error),
    /// A setting breaks one of the config's rules; the message names it.
    #[error("{0}")]
    Invalid(String),
    /// A pool's data-plane parameters are out of range (core's limits).
    #[error("pool {pool}: {source}")]
    Plane {
        pool: u16,
        #[source]
        source: netsched_core::registry::ParamError,
    },
    /// Refused by the shared config crate: the workload (service-time
    /// distribution) settings, or a key that was renamed.
    #[error(transparent)]
    Workload(#[from] netsched_config::ConfigError),
    /// A key or token that cannot be read.
    #[error(transparent)]
    Secret(#[from] SecretError),
}

/// For callers that report errors as text (the CLI).
impl From<ConfigError> for String {
    fn from(e: ConfigError) -> String {
        e.to_string()
    }
}

/// Which side of the two-layer hierarchy an instance is (Horus §3.1): the
/// registry's [`Layer`](netsched_core::Layer). A spine schedules over racks
/// (leaf daemons) and receives idle/load notices; a leaf schedules over
/// workers, receives replies and heartbeats, and notifies its upstream
/// spine(s).
pub use netsched_core::registry::Layer as Role;

use netsched_config::horus::HorusConfig;
use netsched_core::horus::{IdleLink, LeafIdleScope};
/// The policy an instance runs: the one vocabulary of every driver
/// (`netsched_core::registry`). A policy names a system; with the instance's
/// role it picks the data plane (`Policy::plane_at`): `rs-h` is a RackSched
/// spine over RackSched leaves that report their rack load, `rs-lb` and
/// `racksched` a uniform spread over RackSched leaves, flat policies the
/// same scheduler at either role.
pub use netsched_core::registry::Policy;
use netsched_core::PlaneParams;

/// One scheduler instance: one role of one pool.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PoolConfig {
    /// Pool id (Horus header `pool_id`).
    pub pool: u16,
    pub role: Role,
    #[serde(default = "default_policy")]
    pub policy: Policy,
    /// Downstream nodes, node id = index: workers (executors) for a leaf,
    /// leaf daemons for a spine.
    pub downstream: Vec<SocketAddr>,
    /// Spine only: workers of this pool in each downstream rack, for the 1/w
    /// increment of §A.2 (default 1 per rack).
    #[serde(default)]
    pub rack_workers: Vec<u32>,
    /// Leaf only: upstream spine(s); the first is the linked spine that
    /// receives idle and load notices (§3.4). Empty: a standalone leaf.
    #[serde(default)]
    pub upstream: Vec<SocketAddr>,
    /// Leaf only: this rack's id at its spine (`src_id` of notices).
    #[serde(default)]
    pub rack: u16,
    /// Leaf only: a worker silent (no keep-alive, no reply) for this long is
    /// removed from the data plane, and re-added when heard again (the leaf
    /// controller's heartbeat timeout, Horus §A.3). 0 disables it.
    #[serde(default)]
    pub heartbeat_timeout_ms: u64,
    /// Client networks allowed to submit tasks to this instance directly
    /// (besides its `upstream` spines): networks (`"10.0.1.0/24"`), hosts or
    /// single addresses (crate::client_net). Present: a task from anywhere
    /// else is a counted `unregistered_source` drop (`clients = []`: only
    /// the upstream spines submit, a leaf under a spine). Absent: an open
    /// instance that accepts tasks from anyone (docs/runtime.md).
    #[serde(default)]
    pub clients: Option<Vec<crate::client_net::ClientNet>>,
    /// Reply routes (application ids) this instance remembers at most; a
    /// task of a new application beyond it is a counted `route_table_full`
    /// drop (the table is allocated once, at start).
    #[serde(default = "default_max_routes")]
    pub max_routes: usize,
    /// Samples per power-of-k decision (RackSched §3.3; `rs-h`, `rs-lb`,
    /// `racksched`, `pow2-instant`, `pow2-delayed`; Horus's power-of-2 is
    /// the paper's k = 2), 1..=16.
    #[serde(default = "default_samples")]
    pub samples: u32,
    /// `r2p2`: JBSQ's bound on tasks outstanding per node (RackSched §4.5).
    #[serde(default = "default_jbsq_bound")]
    pub jbsq_bound: u32,
    /// Horus soft state, ms (0: off, the paper's mechanism): a leaf
    /// re-sends its idle state and load to its spine every quarter of this,
    /// and a spine forgets what a rack has not refreshed for this long, so a
    /// lost or forged notice holds at most a quarter of it
    /// (`HorusOptions::soft_state_ns`, docs/runtime.md).
    #[serde(default = "default_soft_state_ms")]
    pub soft_state_ms: u64,
    /// `[instance.horus]`: Horus's mechanism choices, `preset` and every
    /// option, read as the simulator reads `[schedulers.horus]`
    /// (`netsched_config::horus`), for policies `horus` and `horus-tokens`.
    #[serde(default)]
    pub horus: HorusConfig,
}

/// Default [`PoolConfig::soft_state_ms`]: the bound on a wrong belief
/// about a rack is 1 s if every refresh in it is lost, 250 ms otherwise.
pub const DEFAULT_SOFT_STATE_MS: u64 = 1_000;

fn default_soft_state_ms() -> u64 {
    DEFAULT_SOFT_STATE_MS
}

fn default_samples() -> u32 {
    PlaneParams::default().samples
}

fn default_jbsq_bound() -> u32 {
    PlaneParams::default().jbsq_bound
}

/// `k` was an instance's sample count (the key was split by meaning).
const RENAMED_KEYS: [netsched_config::parse::Renamed; 1] = [netsched_config::parse::Renamed {
    table: "instance",
    key: "k",
    use_instead: "`samples` (samples per power-of-k decision)",
}];

/// Default `max_routes`: far more applications than one pool serves.
pub const DEFAULT_MAX_ROUTES: usize = 4096;

fn default_max_routes() -> usize {
    DEFAULT_MAX_ROUTES
}

impl PoolConfig {
    /// An instance with the defaults of every optional field.
    pub fn new(pool: u16, role: Role, policy: Policy, downstream: Vec<SocketAddr>) -> Self {
        PoolConfig {
            pool,
            role,
            policy,
            downstream,
            rack_workers: Vec::new(),
            upstream: Vec::new(),
            rack: 0,
            heartbeat_timeout_ms: 0,
            clients: None,
            max_routes: default_max_routes(),
            samples: default_samples(),
            jbsq_bound: default_jbsq_bound(),
            soft_state_ms: default_soft_state_ms(),
            horus: HorusConfig::default(),
        }
    }

    /// The data-plane parameters this instance sets; the rest are the
    /// registry's defaults (`netsched_core::registry::PlaneParams`).
    pub fn plane_params(&self) -> PlaneParams {
        let mut p = PlaneParams {
            samples: self.samples,
            jbsq_bound: self.jbsq_bound,
            horus: self.horus.resolve().data_plane,
            ..PlaneParams::default()
        };
        p.horus.soft_state_ns = self.soft_state_ms.saturating_mul(1_000_000);
        p
    }

    /// The Horus choices this instance can run, or why not (one line naming
    /// the option): those the policy cannot take, and the two driver-level
    /// ones a switch has no way to run.
    fn check_horus(&self) -> Result<(), ConfigError> {
        let bad = |m: String| Err(ConfigError::Invalid(format!("pool {}: {m}", self.pool)));
        if let Err(e) = self.horus.check_policies(&[self.policy]) {
            return bad(e.within("horus").to_string());
        }
        let choices = self.horus.resolve();
        if choices.leaf_idle_scope == LeafIdleScope::Pool {
            return bad(
                "horus.leaf_idle_scope: `pool` (one idle list shared by every leaf, the \
                 unmodified horus-sim) cannot run in a switch; use `rack` or preset \
                 `horus-sim-fixed`"
                    .into(),
            );
        }
        if choices.idle_link == IdleLink::RandomOfPool && self.upstream.len() > 1 {
            return bad(format!(
                "horus.idle_link: `random-of-pool` is modelled for one-spine pools only, and \
                 this leaf has {} upstream spines (set idle_link = \"own-group\")",
                self.upstream.len()
            ));
        }
        Ok(())
    }
}

fn default_policy() -> Policy {
    Policy::Horus
}

/// `netsched switch`: a scheduler daemon.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SwitchConfig {
    /// UDP address every message for this daemon arrives on.
    pub listen: String,
    /// HTTP address of the Prometheus endpoint; none if absent.
    #[serde(default)]
    pub metrics: Option<String>,
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// Datagrams read per batch before the loop checks its stop flag and
    /// gauges.
    #[serde(default = "default_batch")]
    pub batch: usize,
    /// Report failed tasks (data plane drops) to the client as a failed
    /// reply carrying the reason, so none is lost silently.
    #[serde(default = "default_true")]
    pub fail_replies: bool,
    #[serde(default, rename = "instance")]
    pub instances: Vec<PoolConfig>,
    /// The centralized controller (Horus §3.2): status reports go there every
    /// `status_ms`, and configuration pushes are accepted only from it
    /// (docs/runtime.md, control protocol). Absent: static config.
    #[serde(default)]
    pub controller: Option<SocketAddr>,
    #[serde(default = "default_status_ms")]
    pub status_ms: u64,
    /// The cluster key that seals control datagrams (with a `controller`):
    /// `key_file` (a mode-0600 file of 64 hex digits), else the variable
    /// `key_env` (default `NETSCHED_CLUSTER_KEY`); inline `key` for tests.
    #[serde(default)]
    pub key: Option<crate::secret::Secret>,
    #[serde(default)]
    pub key_file: Option<std::path::PathBuf>,
    #[serde(default)]
    pub key_env: Option<String>,
    /// Sealed state messages (`crate::notice_auth`): `auto` (default) seals
    /// notices and requires sealed notices and keep-alives whenever the
    /// cluster key above resolves; `on` requires the key; `off` neither
    /// seals nor checks.
    #[serde(default)]
    pub notice_mac: crate::notice_auth::NoticeMac,
    /// Fault injection on the receive path (tests: packet loss without tc).
    #[serde(default)]
    pub fault: crate::fault::FaultConfig,
    /// Reply routes one client host (IP address, whatever its ports;
    /// upstream spines are not capped) may hold per instance, so one
    /// host's made-up application ids cannot fill the table; beyond it a
    /// new application is a `route_source_limit` drop, answered.
    #[serde(default = "default_max_routes_per_source")]
    pub max_routes_per_source: usize,
    /// A reply route no task refreshed for this long is forgotten, ms (0:
    /// never), so a full table empties again. Far above the worker's
    /// `max_service_ms`, so a route is not forgotten under a running task.
    #[serde(default = "default_route_idle_ms")]
    pub route_idle_ms: u64,
    /// Where tasks are scheduled: `socket` (default), the data plane in this
    /// process behind its UDP socket; `xdp`, the Horus leaf as an XDP
    /// program on `[xdp] interface` (docs/xdp.md, `netsched switch`).
    #[serde(default)]
    pub datapath: Datapath,
    /// With `datapath = "xdp"`: the interface and attach mode.
    #[serde(default)]
    pub xdp: Option<XdpConfig>,
    /// After a batch that did not fill, sleep this long (µs) before the
    /// next receive, so the next system call finds several datagrams
    /// instead of one wake-up per datagram (0: off, read again at once).
    /// An empty socket still parks in `poll`, so an idle daemon costs
    /// nothing; a datagram waits at most this long more.
    #[serde(default)]
    pub coalesce_us: u64,
    /// `SO_BUSY_POLL` on the daemon's socket(s), µs (0: off). It spins in
    /// the driver's NAPI poll on a blocking receive; the daemon's receives
    /// are non-blocking and loopback has no NAPI, so there it changes
    /// nothing measurable (docs/benchmarks.md, `bench capacity`). Needs
    /// CAP_NET_ADMIN to raise above `net.core.busy_read`.
    #[serde(default)]
    pub busy_poll_us: u32,
    /// Receive threads, each with its own `SO_REUSEPORT` socket on `listen`
    /// (1: one socket, one thread). The data planes stay one state machine
    /// per instance behind a mutex, held only to handle a received batch:
    /// receive and send system calls run outside it (switch/threads.rs).
    #[serde(default = "default_switch_threads")]
    pub threads: usize,
}

/// [`SwitchConfig::datapath`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Datapath {
    #[default]
    Socket,
    Xdp,
}

/// `[xdp]` of a switch config.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct XdpConfig {
    /// The interface tasks and replies arrive on (the one `listen`'s
    /// address is on).
    pub interface: String,
    #[serde(default)]
    pub mode: XdpMode,
    /// Which CPUs run the scheduler (docs/xdp.md, "Every CPU"): `one`
    /// (default), `cpu` below; `all`, whichever CPU received the frame
    /// (each RX queue's), each packet's passes under the program's pass
    /// lock. `all` is the Horus leaf's and spine's, not the Draconis
    /// queue's.
    #[serde(default)]
    pub cpus: XdpCpus,
    /// With `cpus = "one"`, the CPU that runs the scheduler: every packet is
    /// redirected to it (cpumap), so the program's unsynchronised state
    /// sees one packet at a time whatever CPU received it (docs/xdp.md).
    #[serde(default)]
    pub cpu: u32,
    /// SCHED_FIFO priority (1-99) of the kernel thread that runs the
    /// program on `cpu`; 0 leaves it an ordinary thread, which busy
    /// processes on that CPU can starve for a second (docs/xdp.md, "One
    /// CPU").
    #[serde(default = "default_realtime_priority")]
    pub realtime_priority: u8,
}

/// Default [`XdpConfig::realtime_priority`]: the lowest real-time priority,
/// above every ordinary task and below the kernel's own real-time threads.
pub const DEFAULT_XDP_REALTIME_PRIORITY: u8 = 1;

fn default_realtime_priority() -> u8 {
    DEFAULT_XDP_REALTIME_PRIORITY
}

impl XdpConfig {
    /// What both daemons' `[xdp]` must satisfy: the key and what is wrong.
    pub fn check(&self) -> Result<(), (&'static str, String)> {
        if self.cpu >= XDP_MAX_CPUS {
            return Err((
                "xdp.cpu",
                format!("{} is beyond the cpumap's {XDP_MAX_CPUS} CPUs", self.cpu),
            ));
        }
        if self.realtime_priority > 99 {
            return Err((
                "xdp.realtime_priority",
                format!(
                    "{} is beyond SCHED_FIFO's 1-99 (0: an ordinary thread)",
                    self.realtime_priority
                ),
            ));
        }
        Ok(())
    }
}

/// [`XdpConfig::cpus`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum XdpCpus {
    #[default]
    One,
    All,
}

/// How the program is attached: `native` in the driver (default), or
/// `generic` after the kernel built its socket buffer (any interface, e.g.
/// a veth inside a network namespace).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum XdpMode {
    #[default]
    Native,
    Generic,
}

/// Workers one XDP leaf holds (`netsched_xdp::MAX_WORKERS`).
pub const XDP_MAX_WORKERS: usize = 64;
/// CPUs the XDP leaf's cpumap covers (`netsched_xdp::MAX_CPUS`).
pub const XDP_MAX_CPUS: u32 = 64;

/// Default `max_routes_per_source`: a client process uses one application
/// id per thread (docs/runtime.md, client `threads`).
pub const DEFAULT_MAX_ROUTES_PER_SOURCE: usize = 64;

fn default_max_routes_per_source() -> usize {
    DEFAULT_MAX_ROUTES_PER_SOURCE
}

/// Default `route_idle_ms`.
pub const DEFAULT_ROUTE_IDLE_MS: u64 = 30_000;

fn default_route_idle_ms() -> u64 {
    DEFAULT_ROUTE_IDLE_MS
}

fn default_status_ms() -> u64 {
    100
}

impl Default for SwitchConfig {
    fn default() -> Self {
        SwitchConfig {
            listen: "127.0.0.1:0".into(),
            metrics: None,
            seed: default_seed(),
            batch: default_batch(),
            fail_replies: true,
            instances: Vec::new(),
            controller: None,
            status_ms: default_status_ms(),
            key: None,
            key_file: None,
            key_env: None,
            notice_mac: Default::default(),
            fault: Default::default(),
            max_routes_per_source: DEFAULT_MAX_ROUTES_PER_SOURCE,
            route_idle_ms: DEFAULT_ROUTE_IDLE_MS,
            datapath: Datapath::Socket,
            xdp: None,
            coalesce_us: 0,
            busy_poll_us: 0,
            threads: 1,
        }
    }
}

fn default_seed() -> u64 {
    1
}
fn default_batch() -> usize {
    32
}
fn default_switch_threads() -> usize {
    1
}
fn default_true() -> bool {
    true
}

impl SwitchConfig {
    /// The cluster key ([`SwitchConfig::key_file`]).
    pub fn cluster_key(&self) -> Result<crate::secret::ClusterKey, ConfigError> {
        Ok(crate::secret::ClusterKey::resolve(
            self.key.as_ref().map(|k| k.expose()),
            self.key_file.as_deref(),
            self.key_env.as_deref(),
        )?)
    }

    pub fn from_toml(s: &str) -> Result<Self, ConfigError> {
        let c: SwitchConfig = netsched_config::parse::from_toml_renamed(s, &RENAMED_KEYS)?;
        c.validate()?;
        Ok(c)
    }

    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.batch == 0 {
            return Err(ConfigError::Invalid("batch must be at least 1".into()));
        }
        if self.threads == 0 || self.threads > 64 {
            return Err(ConfigError::Invalid("threads must be 1..=64".into()));
        }
        if self.threads > 1 && self.datapath != Datapath::Socket {
            return Err(ConfigError::Invalid(
                "threads > 1 is for datapath = \"socket\" (an XDP leaf's CPUs are `[xdp] cpus`)"
                    .into(),
            ));
        }
        if self.max_routes_per_source == 0 {
            return Err(ConfigError::Invalid(
                "max_routes_per_source must be at least 1".into(),
            ));
        }
        self.fault.validate()?;
        if self.controller.is_some() && self.status_ms == 0 {
            return Err(ConfigError::Invalid(
                "status_ms must be at least 1 with a controller".into(),
            ));
        }
        self.validate_datapath()?;
        // A daemon may host a spine and a leaf of the same pool (Horus §3.5:
        // software schedulers at either layer), but one of each.
        let mut slots: Vec<(u16, bool)> = self
            .instances
            .iter()
            .map(|i| (i.pool, i.role == Role::Spine))
            .collect();
        slots.sort_unstable();
        if slots.windows(2).any(|w| w[0] == w[1]) {
            return Err(ConfigError::Invalid(
                "one instance per pool and role per daemon".into(),
            ));
        }
        for i in &self.instances {
            if i.downstream.is_empty() {
                return Err(ConfigError::Invalid(format!(
                    "pool {}: no downstream nodes",
                    i.pool
                )));
            }
            if i.downstream.len() > u16::MAX as usize {
                return Err(ConfigError::Invalid(format!(
                    "pool {}: too many downstream nodes",
                    i.pool
                )));
            }
            if i.max_routes == 0 {
                return Err(ConfigError::Invalid(format!(
                    "pool {}: max_routes must be at least 1",
                    i.pool
                )));
            }
            i.check_horus()?;
            i.plane_params()
                .validate()
                .map_err(|source| ConfigError::Plane {
                    pool: i.pool,
                    source,
                })?;
            match i.role {
                Role::Spine if i.heartbeat_timeout_ms > 0 => {
                    return Err(ConfigError::Invalid(format!(
                        "pool {}: heartbeat_timeout_ms is for leaves",
                        i.pool
                    )));
                }
                Role::Spine => {
                    if !i.rack_workers.is_empty() && i.rack_workers.len() != i.downstream.len() {
                        return Err(ConfigError::Invalid(format!(
                            "pool {}: rack_workers needs one entry per downstream leaf",
                            i.pool
                        )));
                    }
                    if i.rack_workers.contains(&0) {
                        return Err(ConfigError::Invalid(format!(
                            "pool {}: a rack needs at least one worker",
                            i.pool
                        )));
                    }
                    if !i.upstream.is_empty() {
                        return Err(ConfigError::Invalid(format!(
                            "pool {}: a spine has no upstream",
                            i.pool
                        )));
                    }
                }
                Role::Leaf => {
                    if !i.rack_workers.is_empty() {
                        return Err(ConfigError::Invalid(format!(
                            "pool {}: rack_workers is for spines",
                            i.pool
                        )));
                    }
                }
            }
        }
        Ok(())
    }
}

impl SwitchConfig {
    /// What the XDP leaf cannot run is refused here, one line naming the
    /// key, rather than half-run (docs/xdp.md).
    fn validate_datapath(&self) -> Result<(), ConfigError> {
        let invalid = |m: String| Err(ConfigError::Invalid(format!("datapath = \"xdp\": {m}")));
        if self.datapath == Datapath::Socket {
            if self.xdp.is_some() {
                return Err(ConfigError::Invalid(
                    "[xdp] is for datapath = \"xdp\"".into(),
                ));
            }
            return Ok(());
        }
        let Some(xdp) = &self.xdp else {
            return invalid("needs [xdp] interface".into());
        };
        if self
            .instances
            .iter()
            .any(|i| i.horus != HorusConfig::default())
        {
            return invalid(
                "[instance.horus]: the XDP leaf runs the paper's mechanism only".into(),
            );
        }
        if let Err((key, why)) = xdp.check() {
            return invalid(format!("{key}: {why}"));
        }
        match self.listen.parse::<SocketAddr>() {
            Ok(SocketAddr::V4(a)) if !a.ip().is_unspecified() && a.port() != 0 => {}
            _ => {
                return invalid(format!(
                    "listen = {:?} must be the leaf's IPv4 address and port (forwarded tasks leave from it)",
                    self.listen
                ))
            }
        }
        let [i] = &self.instances[..] else {
            return invalid("instance: exactly one (a Horus leaf or spine)".into());
        };
        if i.policy != Policy::Horus {
            return invalid(format!(
                "instance.policy: XDP runs `horus` (the paper's mechanism, no tokens), not `{}`",
                i.policy.name()
            ));
        }
        // The same bound for both: 64 workers per leaf, 64 racks per spine.
        let nodes = if i.role == Role::Leaf {
            "workers"
        } else {
            "leaves"
        };
        if i.downstream.len() > XDP_MAX_WORKERS {
            return invalid(format!(
                "instance.downstream: {} {nodes} exceed the XDP program's {XDP_MAX_WORKERS}",
                i.downstream.len()
            ));
        }
        if i.downstream.iter().any(|a| !a.is_ipv4()) {
            return invalid(format!("instance.downstream: {nodes} need IPv4 addresses"));
        }
        if i.clients.is_some() {
            return invalid(
                "instance.clients: the program takes tasks from any source (no closed instances)"
                    .into(),
            );
        }
        Ok(())
    }
}

/// `netsched worker`: a worker agent with one executor per address.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkerConfig {
    /// One UDP address per executor; executor `i` is node `first_id + i` at
    /// its leaf.
    pub listen: Vec<String>,
    #[serde(default)]
    pub first_id: u16,
    /// The leaf daemon replies and heartbeats go to, and the only address
    /// tasks are accepted from (any other sender's are dropped and counted in
    /// `netsched_worker_stranger_total`). Absent: a standalone worker that
    /// takes tasks from anyone, replies to each task's sender and sends no
    /// heartbeats (tests and benchmarks without a scheduler).
    #[serde(default)]
    pub leaf: Option<SocketAddr>,
    /// Pool of the heartbeats (tasks carry their own pool id).
    #[serde(default)]
    pub pool: u16,
    /// KeepAlive period (§A.3); 0 disables heartbeats.
    #[serde(default = "default_heartbeat")]
    pub heartbeat_ms: u64,
    /// Final part of a synthetic task that is spun rather than slept.
    #[serde(default = "default_spin")]
    pub spin_us: u64,
    #[serde(default)]
    pub metrics: Option<String>,
    /// Executor threads per address. 1: the address is one Horus worker with
    /// its own FCFS queue (§3.1). k > 1: the address is one server whose k
    /// executors share a single cFCFS queue (RackSched §3.1, §4).
    #[serde(default = "default_executors")]
    pub executors: usize,
    /// Preempt synthetic tasks after this long; the rest goes back to the
    /// queue's tail (RackSched §4: 250 µs, as Shinjuku). 0: run to completion.
    #[serde(default)]
    pub preempt_us: u64,
    /// An embedded RocksDB for GET/SCAN tasks (crate::tasks); none: such tasks
    /// fail with `no_rocksdb`.
    #[serde(default)]
    pub rocksdb: Option<crate::tasks::RocksConfig>,
    /// Fault injection on the receive path (leaf → worker loss), as the
    /// scheduler daemon's; each node draws its own stream from the seed.
    #[serde(default)]
    pub fault: crate::fault::FaultConfig,
    /// Longest synthetic service time a task may ask for, ms; a longer one
    /// is answered as failed (`service_time_over_cap`) instead of occupying
    /// an executor for as long as one datagram says.
    #[serde(default = "default_max_service_ms")]
    pub max_service_ms: u64,
    /// The cluster key, from which keep-alives' seal key is derived
    /// (crate::notice_auth): as a switch's `key`, `key_file`, `key_env`.
    #[serde(default)]
    pub key: Option<crate::secret::Secret>,
    #[serde(default)]
    pub key_file: Option<std::path::PathBuf>,
    #[serde(default)]
    pub key_env: Option<String>,
    /// Seal keep-alives: `auto` (default: when the key resolves), `on`, `off`.
    #[serde(default)]
    pub notice_mac: crate::notice_auth::NoticeMac,
}

/// Default [`WorkerConfig::max_service_ms`]: far above any workload of the
/// papers (Horus's longest class is 500 µs, RackSched's SCAN ~ 1 ms), short
/// enough that a hostile task cannot hold an executor for long.
pub const DEFAULT_MAX_SERVICE_MS: u64 = 5_000;

fn default_max_service_ms() -> u64 {
    DEFAULT_MAX_SERVICE_MS
}

impl Default for WorkerConfig {
    fn default() -> Self {
        WorkerConfig {
            listen: Vec::new(),
            first_id: 0,
            leaf: None,
            pool: 0,
            heartbeat_ms: default_heartbeat(),
            spin_us: default_spin(),
            metrics: None,
            executors: default_executors(),
            preempt_us: 0,
            rocksdb: None,
            fault: Default::default(),
            max_service_ms: DEFAULT_MAX_SERVICE_MS,
            key: None,
            key_file: None,
            key_env: None,
            notice_mac: Default::default(),
        }
    }
}

fn default_executors() -> usize {
    1
}

fn default_heartbeat() -> u64 {
    100
}
fn default_spin() -> u64 {
    20
}

impl crate::notice_auth::MissingKey for ConfigError {
    fn is_missing_key(&self) -> bool {
        matches!(
            self,
            ConfigError::Secret(crate::secret::SecretError::NoKey { .. })
        )
    }
}

impl WorkerConfig {
    /// The key keep-alives are sealed with, if sealing is on.
    pub fn notice_key(&self) -> Result<Option<netsched_proto::seal::NoticeKey>, ConfigError> {
        crate::notice_auth::resolve(self.notice_mac, || {
            Ok(crate::secret::ClusterKey::resolve(
                self.key.as_ref().map(|k| k.expose()),
                self.key_file.as_deref(),
                self.key_env.as_deref(),
            )?)
        })
    }

    pub fn from_toml(s: &str) -> Result<Self, ConfigError> {
        let c: WorkerConfig = toml::from_str(s)?;
        if c.listen.is_empty() {
            return Err(ConfigError::Invalid(
                "a worker needs at least one executor address".into(),
            ));
        }
        if c.first_id as usize + c.listen.len() > u16::MAX as usize {
            return Err(ConfigError::Invalid("executor ids exceed u16".into()));
        }
        if c.executors == 0 || c.executors > 256 {
            return Err(ConfigError::Invalid(format!(
                "executors must be in 1..=256, got {}",
                c.executors
            )));
        }
        c.fault.validate()?;
        Ok(c)
    }
}
