//! The pull scheduling vocabulary shared by the pull simulator
//! (`netsched pull`) and the pull runtime (`netsched switch` with a pull
//! policy): policy names and the `[draconis]`, `[r2p2]` and `[sparrow]`
//! sections, so one TOML fragment configures the same data plane in both.

use serde::{Deserialize, Serialize};

use netsched_core::limits;
use netsched_core::pull::r2p2::{JbsqSearch, R2p2Config};
use netsched_core::pull::sparrow::SparrowConfig;
use netsched_core::pull::PullParams;

use crate::error::ConfigError;
use crate::parse::Renamed;

/// `k` meant two things in the pull configs: each has its own
/// key now, and loaders of pull configs (`netsched pull`, the pull runtime)
/// refuse the old one naming the new.
pub const RENAMED_KEYS: [Renamed; 2] = [
    Renamed {
        table: "r2p2",
        key: "k",
        use_instead: "`jbsq_bound` (R2P2's JBSQ bound)",
    },
    Renamed {
        table: "racksched",
        key: "k",
        use_instead: "`samples` (samples per power-of-k decision)",
    },
];

/// The pull policies are one of core's vocabularies (`netsched_core::names`),
/// re-exported where the pull configs use them.
pub use netsched_core::names::{PullPolicy, RENAMED_PULL_POLICIES};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DraconisSection {
    /// Queue entries per priority level (power of two).
    pub capacity: u32,
    /// An executor that got a no-op asks again after this long, µs (§4.6).
    pub retry_us: f64,
    /// Swap bound of the resource policy (§5.1).
    pub max_swaps: u16,
    /// §5.3 limits (Fig. 10: 3 and 9).
    pub rack_start_limit: u16,
    pub global_start_limit: u16,
}

impl DraconisSection {
    /// What the Draconis data plane refuses, and what makes no sense for
    /// any driver; fields are named relative to `[draconis]`.
    pub fn validate(&self) -> Result<(), ConfigError> {
        ConfigError::limit("capacity", limits::queue_capacity(self.capacity))?;
        if !(self.retry_us.is_finite() && self.retry_us > 0.0) {
            return Err(ConfigError::new(
                "retry_us",
                format!("must be a finite number > 0, got {}", self.retry_us),
            ));
        }
        if self.max_swaps == 0 {
            return Err(ConfigError::new("max_swaps", "must be >= 1"));
        }
        if self.rack_start_limit > self.global_start_limit {
            return Err(ConfigError::new(
                "rack_start_limit",
                format!(
                    "must be <= global_start_limit ({}), got {}",
                    self.global_start_limit, self.rack_start_limit
                ),
            ));
        }
        Ok(())
    }

    /// The switch configuration for `policy` (a Draconis variant): the one
    /// place the simulator and the UDP runtime turn this section into a data
    /// plane, so both drive the same scheduler. `levels` is the number of
    /// priority queues (priority policy only); `nodes_per_rack` feeds §5.3's
    /// rack_start_limit.
    pub fn switch_config(
        &self,
        policy: PullPolicy,
        levels: u8,
        nodes_per_rack: u32,
    ) -> netsched_core::pull::DraconisConfig {
        use netsched_core::pull::DraconisConfig;
        let cap = self.capacity;
        match policy {
            PullPolicy::DraconisPriority => DraconisConfig {
                levels: levels.max(1),
                ..DraconisConfig::priority(cap)
            },
            PullPolicy::DraconisResource => DraconisConfig::resource(cap, self.max_swaps),
            PullPolicy::DraconisLocality => DraconisConfig::locality(
                cap,
                self.rack_start_limit,
                self.global_start_limit,
                nodes_per_rack,
            ),
            _ => DraconisConfig::fcfs(cap),
        }
    }
}

impl Default for DraconisSection {
    fn default() -> Self {
        DraconisSection {
            capacity: 1 << 17,
            retry_us: 10.0,
            max_swaps: 16,
            rack_start_limit: 3,
            global_start_limit: 9,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct R2p2Section {
    /// JBSQ bound: tasks outstanding per executor, one running (§8: 3).
    pub jbsq_bound: u32,
    /// Recirculations before a request is dropped; unset (the default, as
    /// in R2P2's own router): none, only the recirculation port drops.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recirc_budget: Option<u32>,
    /// `shortest-first` (R2P2's design, Draconis §2.2) or `first-fit` (what
    /// Draconis §8 measured); docs/draconis.md "R2P2 as its authors built it".
    pub search: JbsqSearch,
}

impl R2p2Section {
    /// The JBSQ bound the R2P2 switch is built with (R2P2 §3.2).
    pub fn validate(&self) -> Result<(), ConfigError> {
        ConfigError::limit("jbsq_bound", limits::jbsq_bound(self.jbsq_bound))
    }
}

impl Default for R2p2Section {
    fn default() -> Self {
        R2p2Section {
            jbsq_bound: 3,
            recirc_budget: None,
            search: JbsqSearch::default(),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SparrowSection {
    /// Probes per task (d).
    pub probe_ratio: u32,
    /// Scheduler servers (§8.1 runs 1 and 2).
    pub schedulers: u32,
    /// Service time per message at a scheduler, ns. 700 ns puts one
    /// scheduler near §8.2's 500 K tasks/s (≈3 messages per task, d = 2).
    pub msg_ns: u64,
    /// Jobs a scheduler can track at once.
    pub max_jobs: u32,
}

impl SparrowSection {
    /// What a Sparrow scheduler is built with; fields relative to `[sparrow]`.
    pub fn validate(&self) -> Result<(), ConfigError> {
        ConfigError::limit("probe_ratio", limits::sparrow_probe_ratio(self.probe_ratio))?;
        ConfigError::limit("max_jobs", limits::sparrow_max_jobs(self.max_jobs))
    }
}

impl Default for SparrowSection {
    fn default() -> Self {
        SparrowSection {
            probe_ratio: 2,
            schedulers: 1,
            msg_ns: 700,
            max_jobs: 1 << 14,
        }
    }
}

/// The parameters of `policy`'s pull scheduler from the three sections,
/// validated: the one place the simulator, `netsched check` and the UDP
/// runtime turn them into [`PullParams`], so all build the same scheduler
/// and refuse the same values. `levels` and `nodes_per_rack` as for
/// [`DraconisSection::switch_config`].
pub fn pull_params(
    policy: PullPolicy,
    levels: u8,
    nodes_per_rack: u32,
    draconis: &DraconisSection,
    r2p2: &R2p2Section,
    sparrow: &SparrowSection,
) -> Result<PullParams, ConfigError> {
    let params = PullParams {
        draconis: draconis.switch_config(policy, levels, nodes_per_rack),
        r2p2: R2p2Config {
            jbsq_bound: r2p2.jbsq_bound,
            recirc_budget: r2p2.recirc_budget,
            search: r2p2.search,
        },
        sparrow: SparrowConfig {
            probe_ratio: sparrow.probe_ratio,
            max_jobs: sparrow.max_jobs,
        },
    };
    params
        .validate()
        .map_err(|e| ConfigError::new(e.field, e.msg))?;
    Ok(params)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections_refuse_what_their_data_planes_refuse() {
        assert!(DraconisSection::default().validate().is_ok());
        let e = DraconisSection {
            capacity: 1 << 31,
            ..DraconisSection::default()
        }
        .validate()
        .unwrap_err()
        .within("draconis");
        assert_eq!(e.field, "draconis.capacity");
        assert!(e.msg.contains("power of two"), "{e}");
        let e = R2p2Section {
            jbsq_bound: 0,
            ..R2p2Section::default()
        }
        .validate()
        .unwrap_err();
        assert_eq!(e.to_string(), "jbsq_bound: must be >= 1, got 0");
        let e = SparrowSection {
            max_jobs: 0,
            ..SparrowSection::default()
        }
        .validate()
        .unwrap_err();
        assert_eq!(e.field, "max_jobs");
    }
}
