//! The controller's configuration file (`netsched controller -c FILE`):
//! addresses, secrets, timers and the initial pools.

use std::net::SocketAddr;
use std::path::PathBuf;

use serde::Deserialize;

use crate::config::ConfigError;
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
    pub fn from_toml(s: &str) -> Result<Self, ConfigError> {
        let c: ControllerConfig = toml::from_str(s)?;
        c.validate()?;
        Ok(c)
    }

    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.tick_ms == 0 || self.daemon_timeout_ms == 0 {
            return Err(ConfigError::Invalid(
                "tick_ms and daemon_timeout_ms must be at least 1".into(),
            ));
        }
        let mut ids: Vec<u16> = self.pools.iter().map(|p| p.id).collect();
        ids.sort_unstable();
        if ids.windows(2).any(|w| w[0] == w[1]) {
            return Err(ConfigError::Invalid("pool ids must be unique".into()));
        }
        for p in &self.pools {
            if p.spines.is_empty() {
                return Err(ConfigError::Invalid(format!(
                    "pool {}: spines: at least one spine",
                    p.id
                )));
            }
            for (r, rack) in p.racks.iter().enumerate() {
                if rack.workers.is_empty() {
                    return Err(ConfigError::Invalid(format!(
                        "pool {}: rack {r}: workers: at least one",
                        p.id
                    )));
                }
                if rack.spine.is_some_and(|s| s >= p.spines.len()) {
                    return Err(ConfigError::Invalid(format!(
                        "pool {}: rack {r}: spine: no such spine",
                        p.id
                    )));
                }
            }
        }
        Ok(())
    }

    /// The cluster key ([`ControllerConfig::key_file`]).
    pub fn cluster_key(&self) -> Result<ClusterKey, ConfigError> {
        Ok(ClusterKey::resolve(
            self.key.as_ref().map(Secret::expose),
            self.key_file.as_deref(),
            self.key_env.as_deref(),
        )?)
    }

    /// The admin token: `token`, else `token_file`, else the `token_env`
    /// variable.
    pub fn resolve_token(&self) -> Result<String, ConfigError> {
        let t = match (&self.token, &self.token_file) {
            (Some(t), _) => t.expose().to_string(),
            (None, Some(p)) => crate::secret::read_secret_file(p)?,
            (None, None) => std::env::var(&self.token_env).map_err(|_| {
                ConfigError::Invalid(format!(
                    "token: no admin token (set `token_file` or the {} environment variable)",
                    self.token_env
                ))
            })?,
        };
        if t.len() < 8 {
            return Err(ConfigError::Invalid(
                "token: the admin token needs at least 8 characters".into(),
            ));
        }
        Ok(t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_errors_name_the_field() {
        let e = ControllerConfig::from_toml(
            "listen='127.0.0.1:0'\nadmin='127.0.0.1:0'\n[[pool]]\nid=1\nspines=[]\n",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("spines"), "{e}");
        let c = ControllerConfig::from_toml(
            "listen='127.0.0.1:0'\nadmin='127.0.0.1:0'\ntoken_env='NETSCHED_TEST_NO_SUCH_VAR'\n",
        )
        .unwrap();
        assert!(c
            .resolve_token()
            .unwrap_err()
            .to_string()
            .contains("NETSCHED_TEST_NO_SUCH_VAR"));
    }
}
