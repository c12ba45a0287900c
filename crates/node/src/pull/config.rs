//! TOML configs of the pull runtime (docs/runtime.md, "Pull scheduling").
//!
//! The scheduler sections (`[draconis]`, `[r2p2]`, `[sparrow]`) and the
//! policy names are shared with the pull simulator
//! (`netsched_config::pull`), so one TOML fragment configures the same
//! data plane in `netsched pull` and in `netsched switch`.

use std::net::SocketAddr;

use netsched_config::parse::{from_toml_renamed, toml_error};
use netsched_config::pull::PullPolicy;
use netsched_config::pull::{DraconisSection, R2p2Section, SparrowSection};
use netsched_config::workload::ServiceDist;
use netsched_config::ConfigError;
use serde::Deserialize;

use super::error::PullError;
use crate::config::{Datapath, XdpConfig};
use crate::fault::FaultConfig;
use crate::tasks::RocksConfig;

/// `netsched switch` with `policy = "draconis"` (or another pull policy):
/// one pull scheduler on one UDP socket.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PullSwitchConfig {
    pub listen: String,
    /// `draconis`, `draconis-priority`, `draconis-resource`,
    /// `draconis-locality`, `draconis-server`, `r2p2` or `sparrow`.
    pub policy: PullPolicy,
    /// Executor addresses; executor id = index. Only these may request
    /// tasks (a switch knows its ports; a socket checks the source).
    pub executors: Vec<SocketAddr>,
    /// Executors per node, for §5.3's node and rack numbering (the node an
    /// executor is on comes from its task requests).
    #[serde(default = "one")]
    pub nodes_per_rack: u32,
    /// Priority levels of `draconis-priority` (§6: 4).
    #[serde(default = "four")]
    pub priority_levels: u8,
    #[serde(default)]
    pub draconis: DraconisSection,
    #[serde(default)]
    pub r2p2: R2p2Section,
    #[serde(default)]
    pub sparrow: SparrowSection,
    /// Time one recirculation pass takes, ns: a recirculated packet is not
    /// processed before then, as on a switch, where it re-enters the
    /// pipeline behind the packets already in it. Draconis-Server runs its
    /// recirculations inline (§8), so this does not apply to it.
    #[serde(default = "default_recirc_ns")]
    pub recirc_ns: u64,
    /// Distinct client addresses the scheduler remembers (the queue stores a
    /// client index; §4.1 stores the IP and port). A job from one more is
    /// answered with an error packet (`client_table_full`).
    #[serde(default = "default_max_clients")]
    pub max_clients: usize,
    /// Client addresses one host (IP address, whatever its ports) may hold
    /// in that table; a job from one more of its ports is answered with an
    /// error packet (`client_source_limit`), so one host cycling source
    /// ports cannot lock new clients out.
    #[serde(default = "default_max_clients_per_host")]
    pub max_clients_per_host: usize,
    /// A client address with no task waiting in the scheduler and no job
    /// for this long is forgotten when the table is full, ms (0: never), so
    /// addresses seen once (a flood, clients long gone) cannot keep a new
    /// client out until restart.
    #[serde(default = "default_client_idle_ms")]
    pub client_idle_ms: u64,
    /// Who may submit jobs: client networks, hosts or addresses
    /// (crate::client_net, as a push instance's `clients`). A job from any
    /// other source is a counted `unregistered_source` drop, answered with
    /// nothing. Absent: open to any sender.
    #[serde(default)]
    pub clients: Option<Vec<crate::client_net::ClientNet>>,
    #[serde(default)]
    pub metrics: Option<String>,
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// Datagrams per `recvmmsg`.
    #[serde(default = "default_batch")]
    pub batch: usize,
    #[serde(default)]
    pub fault: FaultConfig,
    /// `socket` (default): the scheduler runs in this process behind its
    /// UDP socket; `xdp`: the Draconis queue runs as an XDP program on
    /// `[xdp] interface` and the daemon keeps what the program leaves to
    /// user space (docs/xdp.md, "The pull daemon").
    #[serde(default)]
    pub datapath: Datapath,
    /// With `datapath = "xdp"`: the interface and attach mode (the push
    /// leaf's `[xdp]` table).
    #[serde(default)]
    pub xdp: Option<XdpConfig>,
}

/// Executors the XDP Draconis queue knows (`netsched_xdp`'s
/// `drac_executors` map).
pub const XDP_MAX_EXECUTORS: usize = 4096;
/// Priority levels the XDP Draconis queue holds (`netsched_xdp::MAX_LEVELS`).
pub const XDP_MAX_LEVELS: u8 = 8;

fn one() -> u32 {
    1
}
fn four() -> u8 {
    4
}
fn default_recirc_ns() -> u64 {
    500
}
fn default_max_clients() -> usize {
    4096
}
fn default_max_clients_per_host() -> usize {
    256
}
fn default_client_idle_ms() -> u64 {
    30_000
}
fn default_seed() -> u64 {
    1
}
fn default_batch() -> usize {
    32
}

impl PullSwitchConfig {
    /// A config for `policy` over `executors` with every default.
    pub fn new(listen: &str, policy: PullPolicy, executors: Vec<SocketAddr>) -> Self {
        PullSwitchConfig {
            listen: listen.into(),
            policy,
            executors,
            nodes_per_rack: 1,
            priority_levels: 4,
            draconis: DraconisSection::default(),
            r2p2: R2p2Section::default(),
            sparrow: SparrowSection::default(),
            recirc_ns: default_recirc_ns(),
            max_clients: default_max_clients(),
            max_clients_per_host: default_max_clients_per_host(),
            client_idle_ms: default_client_idle_ms(),
            clients: None,
            metrics: None,
            seed: default_seed(),
            batch: default_batch(),
            fault: FaultConfig::default(),
            datapath: Datapath::Socket,
            xdp: None,
        }
    }

    pub fn from_toml(s: &str) -> Result<Self, PullError> {
        let c: PullSwitchConfig = from_toml_renamed(s, &netsched_config::pull::RENAMED_KEYS)?;
        c.validate()?;
        Ok(c)
    }

    pub fn validate(&self) -> Result<(), PullError> {
        if self.policy == PullPolicy::RackschedNodes {
            return Err(invalid(
                "policy",
                "racksched-nodes runs a push scheduler; run `racksched` with `instance` tables (docs/runtime.md)",
            ));
        }
        if self.executors.is_empty() {
            return Err(invalid(
                "executors",
                "a pull scheduler needs at least one executor",
            ));
        }
        if self.executors.len() > u32::MAX as usize / 2 {
            return Err(invalid("executors", "too many"));
        }
        let section = |e: ConfigError, name| e.within(name);
        self.draconis
            .validate()
            .map_err(|e| section(e, "draconis"))?;
        let cap = self.draconis.capacity;
        if cap < 2 {
            return Err(invalid(
                "draconis.capacity",
                format!("must be a power of two ≥ 2, got {cap}"),
            ));
        }
        if self.priority_levels == 0 {
            return Err(invalid("priority_levels", "must be at least 1"));
        }
        if self.nodes_per_rack == 0 {
            return Err(invalid("nodes_per_rack", "must be at least 1"));
        }
        self.r2p2.validate().map_err(|e| section(e, "r2p2"))?;
        self.sparrow.validate().map_err(|e| section(e, "sparrow"))?;
        self.fault.validate()?;
        if self.max_clients_per_host == 0 {
            return Err(invalid("max_clients_per_host", "must be at least 1"));
        }
        if self.max_clients == 0 {
            return Err(invalid("max_clients", "must be at least 1"));
        }
        if self.batch == 0 || self.batch > 1024 {
            return Err(invalid(
                "batch",
                format!("must be in 1..=1024, got {}", self.batch),
            ));
        }
        self.fault
            .validate()
            .map_err(|e| PullError::Fault(e.to_string()))?;
        self.validate_datapath()
    }

    /// The levels the scheduler's queue has: `priority_levels` for
    /// `draconis-priority`, one otherwise.
    pub fn levels(&self) -> u8 {
        if self.policy == PullPolicy::DraconisPriority {
            self.priority_levels
        } else {
            1
        }
    }

    /// What the XDP Draconis queue cannot run is refused here, one line
    /// naming the key, rather than half-run (docs/xdp.md).
    fn validate_datapath(&self) -> Result<(), PullError> {
        if self.datapath == Datapath::Socket {
            if self.xdp.is_some() {
                return Err(invalid("xdp", "[xdp] is for datapath = \"xdp\""));
            }
            return Ok(());
        }
        let xdp_invalid =
            |field: &str, msg: String| Err(invalid(field, format!("datapath = \"xdp\": {msg}")));
        let Some(xdp) = &self.xdp else {
            return xdp_invalid("xdp", "needs [xdp] interface".into());
        };
        if self.clients.is_some() {
            // The program takes jobs in the kernel without this check.
            return xdp_invalid("clients", "not enforced by the XDP queue yet".into());
        }
        if let Err((key, why)) = xdp.check() {
            return xdp_invalid(key, why);
        }
        if xdp.cpus == crate::config::XdpCpus::All {
            return xdp_invalid(
                "xdp.cpus",
                "\"all\" is the Horus leaf's and spine's only: the Draconis queue runs on one CPU (its program has no pass lock)".into(),
            );
        }
        if !matches!(
            self.policy,
            PullPolicy::Draconis | PullPolicy::DraconisPriority
        ) {
            return xdp_invalid(
                "policy",
                format!(
                    "the XDP queue runs `draconis` (cFCFS) and `draconis-priority`, not `{}`",
                    self.policy.name()
                ),
            );
        }
        if self.levels() > XDP_MAX_LEVELS {
            return xdp_invalid(
                "priority_levels",
                format!(
                    "{} levels exceed the XDP queue's {XDP_MAX_LEVELS}",
                    self.priority_levels
                ),
            );
        }
        if self.executors.len() > XDP_MAX_EXECUTORS {
            return xdp_invalid(
                "executors",
                format!(
                    "{} executors exceed the XDP queue's {XDP_MAX_EXECUTORS}",
                    self.executors.len()
                ),
            );
        }
        if self.executors.iter().any(|a| !a.is_ipv4()) {
            return xdp_invalid("executors", "executors need IPv4 addresses".into());
        }
        match self.listen.parse::<SocketAddr>() {
            Ok(SocketAddr::V4(a)) if !a.ip().is_unspecified() && a.port() != 0 => {}
            _ => {
                return xdp_invalid(
                    "listen",
                    format!(
                        "{:?} must be the scheduler's IPv4 address and port on the interface",
                        self.listen
                    ),
                )
            }
        }
        if self.fault.drop_rate > 0.0 {
            return xdp_invalid(
                "fault.drop_rate",
                "the program's datagrams never reach the daemon; inject loss at the executors"
                    .into(),
            );
        }
        Ok(())
    }
}

/// `netsched worker` with `policy` set: pull executors, one per address.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PullWorkerConfig {
    /// The pull scheduler executors request tasks from.
    pub scheduler: SocketAddr,
    /// Which protocol the executors speak: Draconis variants pull (request
    /// at start, after each task and after a no-op); `r2p2` is pushed to
    /// and reports each freed slot; `sparrow` answers probes.
    pub policy: PullPolicy,
    /// One UDP address per executor, in the order of the scheduler's
    /// `executors` list; `executor_ids[i]` names it in completions.
    pub listen: Vec<String>,
    /// Id of the first executor at the scheduler (its index there).
    #[serde(default)]
    pub first_id: u32,
    /// The node these executors run on (§5.3: TASK_PROPS names data nodes).
    #[serde(default)]
    pub node: u32,
    /// EXEC_RSRC bitmap (§5.2); all resources by default.
    #[serde(default = "all_resources")]
    pub resources: u64,
    /// After a no-op, ask again this long later (§4.6), µs.
    #[serde(default = "default_retry_us")]
    pub retry_us: u64,
    /// A request with no answer (lost, or the scheduler restarted) is sent
    /// again after this long, ms.
    #[serde(default = "default_request_timeout")]
    pub request_timeout_ms: u64,
    /// Final part of a synthetic task that is spun rather than slept, µs.
    #[serde(default = "default_spin")]
    pub spin_us: u64,
    #[serde(default)]
    pub metrics: Option<String>,
    /// An embedded RocksDB for `fn_id` 1 (GET) and 2 (SCAN).
    #[serde(default)]
    pub rocksdb: Option<RocksConfig>,
    /// Longest synthetic task (`fn_par`) an executor runs, ms, as the push
    /// worker's; a longer one is reported failed at once instead of
    /// occupying the executor for as long as one datagram says.
    #[serde(default = "default_max_service_ms")]
    pub max_service_ms: u64,
}

fn default_max_service_ms() -> u64 {
    crate::config::DEFAULT_MAX_SERVICE_MS
}

fn all_resources() -> u64 {
    u64::MAX
}
fn default_retry_us() -> u64 {
    10
}
fn default_request_timeout() -> u64 {
    50
}
fn default_spin() -> u64 {
    20
}

impl PullWorkerConfig {
    pub fn new(scheduler: SocketAddr, policy: PullPolicy, listen: Vec<String>) -> Self {
        PullWorkerConfig {
            scheduler,
            policy,
            listen,
            first_id: 0,
            node: 0,
            resources: all_resources(),
            retry_us: default_retry_us(),
            request_timeout_ms: default_request_timeout(),
            spin_us: default_spin(),
            metrics: None,
            rocksdb: None,
            max_service_ms: default_max_service_ms(),
        }
    }

    pub fn from_toml(s: &str) -> Result<Self, PullError> {
        let c: PullWorkerConfig = toml::from_str(s).map_err(|e| toml_error(s, &e))?;
        c.validate()?;
        Ok(c)
    }

    pub fn validate(&self) -> Result<(), PullError> {
        if self.listen.is_empty() {
            return Err(invalid(
                "listen",
                "a worker needs at least one executor address",
            ));
        }
        if self.policy == PullPolicy::RackschedNodes {
            return Err(invalid(
                "policy",
                "racksched-nodes workers are push workers (no `policy` key)",
            ));
        }
        if self.request_timeout_ms == 0 {
            return Err(invalid("request_timeout_ms", "must be positive"));
        }
        Ok(())
    }
}

/// `netsched client` with `scheduler` set: jobs of tasks, open loop.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PullClientConfig {
    pub scheduler: SocketAddr,
    /// Upper half of every job and task id (the paper's UID, §4.1).
    #[serde(default = "one")]
    pub app_id: u32,
    /// Mean task rate, tasks per second; jobs arrive as a Poisson process at
    /// `rate / job_tasks`.
    pub rate: f64,
    pub duration_ms: u64,
    /// Tasks per job; a job of more than a packet's worth is split (§4.3).
    #[serde(default = "one")]
    pub job_tasks: u32,
    /// Synthetic service time (ignored for RocksDB tasks).
    pub service: ServiceDist,
    /// Nonzero: RocksDB tasks over keys `0..rocksdb_keys` (class 0 GET of 60
    /// objects, other classes SCAN of 5,000), as the push client.
    #[serde(default)]
    pub rocksdb_keys: u32,
    /// Weights of priority levels 1.. (§8.6); empty: every task level 1.
    #[serde(default)]
    pub priority_weights: Vec<f64>,
    /// TPROPS of every task (§5.2 resource bitmap); 0: none required.
    #[serde(default)]
    pub props: u64,
    /// An attempt without a completion after this long is resubmitted, ms.
    #[serde(default = "default_client_timeout")]
    pub timeout_ms: u64,
    /// Attempts before the client gives up on a task (timed out).
    #[serde(default = "default_attempts")]
    pub max_attempts: u32,
    /// Tasks returned in an error packet are resubmitted after this long, µs.
    #[serde(default = "default_backoff")]
    pub error_backoff_us: u64,
    #[serde(default = "default_seed")]
    pub seed: u64,
    #[serde(default = "default_bind")]
    pub bind: String,
    /// 0: open loop (Poisson jobs at `rate`). Otherwise closed loop: a job
    /// is submitted only while at most this many tasks are unresolved (it
    /// must hold one job), `rate` still capping the job rate; latency is
    /// then measured from the submission, not the Poisson arrival.
    /// Saturation benchmarks use it to keep every policy backlogged without
    /// overflowing any queue.
    #[serde(default)]
    pub max_outstanding: u32,
    /// What resubmissions may add to the load (netsched_core::retry_budget).
    #[serde(default)]
    pub retry_budget: RetryBudgetConfig,
}

/// `[retry_budget]` of a pull client: resubmissions and retries may add at
/// most `ratio` of the tasks sent plus `min_per_s` a second, with at most
/// `burst` saved up; one over the budget waits until it is paid for (the
/// defaults are Finagle's budget, 20 % and 10 a second).
#[derive(Clone, Copy, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct RetryBudgetConfig {
    pub ratio: f64,
    pub min_per_s: u32,
    pub burst: u32,
}

impl Default for RetryBudgetConfig {
    fn default() -> Self {
        RetryBudgetConfig {
            ratio: 0.2,
            min_per_s: 10,
            burst: 1_000,
        }
    }
}

fn default_client_timeout() -> u64 {
    200
}
fn default_attempts() -> u32 {
    5
}
fn default_backoff() -> u64 {
    100
}
fn default_bind() -> String {
    "127.0.0.1:0".into()
}

impl PullClientConfig {
    pub fn new(scheduler: SocketAddr, rate: f64, duration_ms: u64, service: ServiceDist) -> Self {
        PullClientConfig {
            scheduler,
            app_id: 1,
            rate,
            duration_ms,
            job_tasks: 1,
            service,
            rocksdb_keys: 0,
            priority_weights: Vec::new(),
            props: 0,
            timeout_ms: default_client_timeout(),
            max_attempts: default_attempts(),
            error_backoff_us: default_backoff(),
            seed: default_seed(),
            bind: default_bind(),
            max_outstanding: 0,
            retry_budget: RetryBudgetConfig::default(),
        }
    }

    pub fn from_toml(s: &str) -> Result<Self, PullError> {
        let c: PullClientConfig = toml::from_str(s).map_err(|e| toml_error(s, &e))?;
        c.validate()?;
        Ok(c)
    }

    pub fn validate(&self) -> Result<(), PullError> {
        if !(self.rate > 0.0 && self.rate.is_finite()) {
            return Err(invalid(
                "rate",
                format!("must be positive, got {}", self.rate),
            ));
        }
        if self.job_tasks == 0 {
            return Err(invalid("job_tasks", "must be at least 1"));
        }
        if self.max_attempts == 0 {
            return Err(invalid("max_attempts", "must be at least 1"));
        }
        if self.timeout_ms == 0 {
            return Err(invalid("timeout_ms", "must be positive"));
        }
        let b = &self.retry_budget;
        if !(b.ratio.is_finite() && (0.0..=1_000.0).contains(&b.ratio)) {
            return Err(invalid(
                "retry_budget.ratio",
                format!("must be within 0..=1000, got {}", b.ratio),
            ));
        }
        if b.min_per_s == 0 {
            // Without a refill a retry put off at the end of a run would
            // wait for sends that never come.
            return Err(invalid("retry_budget.min_per_s", "must be at least 1"));
        }
        if b.burst == 0 {
            return Err(invalid("retry_budget.burst", "must be at least 1"));
        }
        if self.max_outstanding != 0 && self.max_outstanding < self.job_tasks {
            return Err(invalid(
                "max_outstanding",
                "must hold at least one job (job_tasks)",
            ));
        }
        if self
            .priority_weights
            .iter()
            .any(|w| !(w.is_finite() && *w >= 0.0))
            || (!self.priority_weights.is_empty()
                && self.priority_weights.iter().sum::<f64>() <= 0.0)
        {
            return Err(invalid(
                "priority_weights",
                "must be non-negative with a positive sum",
            ));
        }
        if self.priority_weights.len() > 255 {
            return Err(invalid("priority_weights", "at most 255 levels"));
        }
        let n = self.rate * self.duration_ms as f64 / 1e3;
        if n > u32::MAX as f64 / 2.0 {
            return Err(invalid(
                "rate × duration",
                "too many tasks for 32-bit task numbers",
            ));
        }
        Ok(self.service.validate()?)
    }
}

fn invalid(field: &str, msg: impl Into<String>) -> PullError {
    PullError::Config(ConfigError::new(field, msg))
}

/// Whether a config file is for the pull runtime: `netsched switch`,
/// `worker` and `client` take either family's config, and a pull one names
/// its `policy` (switch, worker) or its `scheduler` (worker, client) at the
/// top level, which the push configs never do. Unparsable text is not pull
/// (the push parser then reports the error).
pub fn is_pull_config(toml_text: &str, key: &str) -> bool {
    toml::from_str::<toml::Table>(toml_text).is_ok_and(|t| t.contains_key(key))
}
