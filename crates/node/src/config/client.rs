//! `netsched client`'s config: the targets it submits to, its load
//! (rate, schedule, service), its wire family and its controller link.

use netsched_config::workload::ServiceDist;
use serde::Deserialize;
use std::net::SocketAddr;

use super::{default_seed, ConfigError};

/// One scheduler a client submits to, chosen with probability ∝ weight.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Target {
    pub addr: SocketAddr,
    #[serde(default = "default_weight")]
    pub weight: f64,
}

fn default_weight() -> f64 {
    1.0
}

/// `netsched client`: an open-loop Poisson load generator.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClientConfig {
    pub targets: Vec<Target>,
    pub pool: u16,
    /// Application id: the upper half of every task id (Horus §3.2), and the
    /// key schedulers use to route replies back to this client.
    pub app_id: u32,
    /// Mean submission rate, tasks per second.
    pub rate: f64,
    pub duration_ms: u64,
    pub service: ServiceDist,
    #[serde(default = "default_timeout")]
    pub timeout_ms: u64,
    #[serde(default = "default_seed")]
    pub seed: u64,
    #[serde(default = "default_bind")]
    pub bind: String,
    /// Wire family of the tasks: `horus` (task/reply) or `racksched`
    /// (REQF/REP with REQ_ID = <app_id, seq>, OSDI'20 §3.2).
    #[serde(default)]
    pub wire: WireFamily,
    /// Nonzero: RocksDB tasks over keys `0..rocksdb_keys` instead of
    /// synthetic ones. The service distribution's class picks the request:
    /// class 0 a GET of 60 objects, any other a SCAN of 5,000 (crate::tasks);
    /// its service time is not sent.
    #[serde(default)]
    pub rocksdb_keys: u32,
    /// Datagrams per task: a TaskFirst (REQF) then continuations (REQR), the
    /// last one marked; schedulers route the rest after the first (Horus
    /// §A.4 connection table, RackSched §3.2 ReqTable) and the worker runs
    /// the task on its last packet.
    #[serde(default = "default_packets")]
    pub packets: u8,
    /// A task that times out is resubmitted with the same id up to this
    /// many times (its deadline restarts); its latency still counts from
    /// the first intended send, and only the last attempt can time out.
    #[serde(default)]
    pub retries: u32,
    /// Rate schedule: from `at_ms` on, `rate` tasks/s (piecewise constant,
    /// non-homogeneous Poisson); `rate` above holds before the first step.
    #[serde(default)]
    pub schedule: Vec<RateStep>,
    /// Sender threads: thread i is an independent Poisson stream of
    /// 1/threads of the rate, on its own socket, with app id `app_id + i`
    /// (replies are routed by app id); the report merges them.
    #[serde(default = "default_threads")]
    pub threads: u32,
    /// Fault injection on the receive path (spine → client loss), as the
    /// scheduler daemon's; each sender thread draws its own stream.
    #[serde(default)]
    pub fault: crate::fault::FaultConfig,
    /// Learn the spines from the centralized controller instead of keeping
    /// `targets` fixed: poll its admin API's `GET /v1/topology` and submit
    /// to the live spines of `pool` in proportion to their `weight` (the
    /// share of live workers linked to each, Horus §3.2). `targets` is used
    /// until the first answer, and kept while no spine is live.
    #[serde(default)]
    pub controller: Option<ControllerLink>,
    /// Serve the client's counts and end-to-end latency histogram on
    /// `http://ADDR/metrics` while it runs (docs/metrics.md).
    #[serde(default)]
    pub metrics: Option<String>,
}

/// Where a client finds the controller's admin API.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ControllerLink {
    /// HTTP address of the admin API.
    pub admin: SocketAddr,
    /// Bearer token inline (tests), a mode-0600 file holding it
    /// (`token_file`), or the environment variable holding it (`token_env`).
    #[serde(default)]
    pub token: Option<crate::secret::Secret>,
    #[serde(default)]
    pub token_file: Option<std::path::PathBuf>,
    #[serde(default)]
    pub token_env: Option<String>,
    /// Poll period.
    #[serde(default = "default_poll_ms")]
    pub poll_ms: u64,
}

fn default_poll_ms() -> u64 {
    100
}

impl ControllerLink {
    /// The bearer token: `token`, else `token_file`, else the variable
    /// `token_env` names.
    pub fn token(&self) -> Result<String, ConfigError> {
        match (&self.token, &self.token_file, &self.token_env) {
            (Some(t), _, _) => Ok(t.expose().to_string()),
            (None, Some(p), _) => Ok(crate::secret::read_secret_file(p)?),
            (None, None, Some(v)) => std::env::var(v).map_err(|_| {
                ConfigError::Invalid(format!("controller.token_env: ${v} is not set"))
            }),
            (None, None, None) => Err(ConfigError::Invalid(
                "controller: token_file, token_env or token is required".into(),
            )),
        }
    }
}

/// One step of a client's rate schedule.
#[derive(Clone, Copy, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RateStep {
    pub at_ms: u64,
    pub rate: f64,
}

fn default_packets() -> u8 {
    1
}
fn default_threads() -> u32 {
    1
}

/// Which family of crates/proto a client speaks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WireFamily {
    #[default]
    Horus,
    Racksched,
}

impl Default for ClientConfig {
    fn default() -> Self {
        ClientConfig {
            targets: Vec::new(),
            pool: 1,
            app_id: 1,
            rate: 1000.0,
            duration_ms: 1000,
            service: ServiceDist::Fixed { value_us: 100.0 },
            timeout_ms: default_timeout(),
            seed: default_seed(),
            bind: default_bind(),
            wire: WireFamily::Horus,
            rocksdb_keys: 0,
            packets: 1,
            retries: 0,
            schedule: Vec::new(),
            threads: 1,
            fault: Default::default(),
            controller: None,
            metrics: None,
        }
    }
}

fn default_timeout() -> u64 {
    1000
}
fn default_bind() -> String {
    "127.0.0.1:0".into()
}

impl ClientConfig {
    pub fn from_toml(s: &str) -> Result<Self, ConfigError> {
        let c: ClientConfig = toml::from_str(s)?;
        c.validate()?;
        Ok(c)
    }

    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.targets.is_empty() {
            return Err(ConfigError::Invalid("no targets".into()));
        }
        if self
            .targets
            .iter()
            .any(|t| t.weight.is_nan() || t.weight <= 0.0 || t.weight.is_infinite())
        {
            return Err(ConfigError::Invalid(
                "target weights must be positive".into(),
            ));
        }
        if !(self.rate > 0.0 && self.rate.is_finite()) {
            return Err(ConfigError::Invalid("rate must be positive".into()));
        }
        if self
            .schedule
            .iter()
            .any(|s| !(s.rate >= 0.0 && s.rate.is_finite()))
        {
            return Err(ConfigError::Invalid(
                "schedule: every rate must be finite and non-negative".into(),
            ));
        }
        if self.schedule.windows(2).any(|w| w[0].at_ms >= w[1].at_ms) {
            return Err(ConfigError::Invalid("schedule: at_ms must increase".into()));
        }
        if self.packets == 0 || self.packets > 64 {
            return Err(ConfigError::Invalid("packets must be in 1..=64".into()));
        }
        if self.threads == 0 || self.threads > 64 {
            return Err(ConfigError::Invalid("threads must be in 1..=64".into()));
        }
        self.fault.validate()?;
        if let Some(c) = &self.controller {
            c.token()?;
            if c.poll_ms == 0 {
                return Err(ConfigError::Invalid(
                    "controller.poll_ms must be at least 1".into(),
                ));
            }
        }
        let peak = self
            .schedule
            .iter()
            .map(|s| s.rate)
            .fold(self.rate, f64::max);
        let n = peak * self.duration_ms as f64 / 1e3;
        if n > u32::MAX as f64 / 2.0 {
            return Err(ConfigError::Invalid(
                "too many tasks for 32-bit sequence numbers".into(),
            ));
        }
        Ok(self.service.validate()?)
    }
}

/// A service-time distribution written as a TOML inline table, as in
/// configs: `{ kind = "exp", mean_us = 100 }`.
pub fn parse_service(s: &str) -> Result<ServiceDist, ConfigError> {
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Wrap {
        service: ServiceDist,
    }
    let w: Wrap = toml::from_str(&format!("service = {s}"))?;
    w.service.validate()?;
    Ok(w.service)
}
