//! Horus's configuration (`[schedulers.horus]` in a simulator config,
//! `[instance.horus]` in a `netsched switch` config): the mechanism choices
//! where the authors' simulator (horus-sim) departs from the paper and the
//! P4 program (docs/fidelity.md). Every driver reads this one struct; the
//! option types are the data plane's own (`netsched_core::horus`).

use netsched_core::horus::{HorusOptions, IdleLink, LeafIdleScope, RemoveLock, SpineIdlePick};
use netsched_core::registry::Policy;
use serde::{Deserialize, Serialize};

use crate::ConfigError;

/// The choices as written: a preset, then any option it sets overridden.
/// Defaults are the paper's; `preset = "horus-sim"` sets the authors'
/// values, which the other keys then override.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HorusConfig {
    #[serde(default)]
    pub preset: HorusPreset,
    /// `last` (idleList[p-1], paper) or `random` (horus-sim).
    #[serde(default)]
    pub spine_idle_pick: Option<SpineIdlePick>,
    /// T: idleRemove at <= T idle workers, idleAdd above T (paper 0, horus-sim 4).
    #[serde(default)]
    pub leaf_idle_threshold: Option<u32>,
    /// `on` (Alg. 1's lock: a remove meeting it is dropped) or `off` (atomic removes, horus-sim).
    #[serde(default)]
    pub remove_lock: Option<RemoveLock>,
    /// `true`: a reply lifting the idle count above T announces at once
    /// (paper); `false`: only the next task does (horus-sim).
    #[serde(default)]
    pub announce_on_reply: Option<bool>,
    /// `own-group` (paper) or `random-of-pool` (horus-sim, P4's idle signal).
    #[serde(default)]
    pub idle_link: Option<IdleLink>,
    /// `rack` (paper) or `pool`: every leaf of a pool shares one idle list,
    /// reproducing the unmodified horus-sim's aliased Python set. Not
    /// implementable in a switch.
    #[serde(default)]
    pub leaf_idle_scope: Option<LeafIdleScope>,
    /// Soft state (not in the paper; off by default): leaves refresh their
    /// spine every quarter of this many milliseconds and a spine forgets a
    /// rack silent for this long (`HorusOptions::soft_state_ns`). For
    /// measuring the refresh's cost in the simulator; the runtime sets it
    /// per instance (`soft_state_ms`, on by default there).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub soft_state_ms: Option<u64>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum HorusPreset {
    /// The paper's and P4's mechanism.
    #[default]
    Paper,
    /// horus-sim at commit e2ed839 with its shared idle set fixed.
    HorusSimFixed,
    /// horus-sim at commit e2ed839 unmodified (leaf idle scope = pool).
    HorusSim,
}

/// The resolved choices: data-plane options and the two the driver owns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HorusChoices {
    pub data_plane: HorusOptions,
    pub idle_link: IdleLink,
    pub leaf_idle_scope: LeafIdleScope,
}

impl HorusConfig {
    pub fn resolve(&self) -> HorusChoices {
        let (mut data_plane, mut idle_link, mut leaf_idle_scope) = match self.preset {
            HorusPreset::Paper => (
                HorusOptions::default(),
                IdleLink::OwnGroup,
                LeafIdleScope::Rack,
            ),
            // `random-of-pool` is modelled for one-spine pools only; on
            // others a run must override it (docs/fidelity.md, row 3).
            HorusPreset::HorusSimFixed => (
                HorusOptions::horus_sim(),
                IdleLink::RandomOfPool,
                LeafIdleScope::Rack,
            ),
            HorusPreset::HorusSim => (
                HorusOptions::horus_sim(),
                IdleLink::RandomOfPool,
                LeafIdleScope::Pool,
            ),
        };
        if let Some(p) = self.spine_idle_pick {
            data_plane.spine_idle_pick = p;
        }
        if let Some(a) = self.announce_on_reply {
            data_plane.announce_on_reply = a;
        }
        if let Some(t) = self.leaf_idle_threshold {
            data_plane.leaf_idle_threshold = t;
        }
        if let Some(l) = self.remove_lock {
            data_plane.remove_lock = l;
        }
        if let Some(l) = self.idle_link {
            idle_link = l;
        }
        if let Some(s) = self.leaf_idle_scope {
            leaf_idle_scope = s;
        }
        if let Some(ms) = self.soft_state_ms {
            data_plane.soft_state_ns = ms.saturating_mul(1_000_000);
        }
        HorusChoices {
            data_plane,
            idle_link,
            leaf_idle_scope,
        }
    }

    /// Refuses choices that none of `policies` uses, and those that
    /// `horus-tokens` cannot take, naming the option (relative to this
    /// table: the caller adds its path with [`ConfigError::within`]).
    pub fn check_policies(&self, policies: &[Policy]) -> Result<(), ConfigError> {
        if *self == HorusConfig::default() {
            return Ok(());
        }
        if !policies.iter().any(|p| p.is_horus()) {
            return Err(ConfigError::new(
                "",
                "sets Horus mechanism choices but no run uses policy `horus` or `horus-tokens`",
            ));
        }
        if policies.contains(&Policy::HorusTokens) {
            if let Some(name) = self.resolve().data_plane.unused_by_tokens() {
                let field = if self.option_set(name) {
                    name
                } else {
                    "preset"
                };
                return Err(ConfigError::new(
                    field,
                    format!(
                        "policy `horus-tokens` sends one idle token per idle worker and cannot \
                         take `{name}` (use policy `horus`, or leave `{name}` at the paper's value)"
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Whether the option `name` is written (rather than set by the preset).
    fn option_set(&self, name: &str) -> bool {
        match name {
            "spine_idle_pick" => self.spine_idle_pick.is_some(),
            "leaf_idle_threshold" => self.leaf_idle_threshold.is_some(),
            "remove_lock" => self.remove_lock.is_some(),
            "announce_on_reply" => self.announce_on_reply.is_some(),
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> HorusConfig {
        toml::from_str(s).unwrap()
    }

    #[test]
    fn preset_then_overrides() {
        let c = parse("preset = \"horus-sim-fixed\"\nleaf_idle_threshold = 2\n").resolve();
        assert_eq!(c.data_plane.leaf_idle_threshold, 2);
        assert_eq!(c.data_plane.spine_idle_pick, SpineIdlePick::Random);
        assert_eq!(c.data_plane.remove_lock, RemoveLock::Off);
        assert!(!c.data_plane.announce_on_reply);
        assert_eq!(c.idle_link, IdleLink::RandomOfPool);
        assert_eq!(c.leaf_idle_scope, LeafIdleScope::Rack);
        let c = parse("remove_lock = \"off\"\nidle_link = \"random-of-pool\"\n").resolve();
        assert_eq!(c.data_plane.remove_lock, RemoveLock::Off);
        assert_eq!(c.data_plane.leaf_idle_threshold, 0);
        assert_eq!(c.idle_link, IdleLink::RandomOfPool);
        assert!(toml::from_str::<HorusConfig>("remove_lock = \"maybe\"").is_err());
        assert!(toml::from_str::<HorusConfig>("threshold = 1").is_err());
    }

    #[test]
    fn horus_tokens_refuses_what_it_cannot_take_by_name() {
        let tokens = [Policy::HorusTokens];
        let e = parse("leaf_idle_threshold = 3")
            .check_policies(&tokens)
            .unwrap_err();
        assert_eq!(e.field, "leaf_idle_threshold");
        assert!(e.msg.contains("horus-tokens"), "{e}");
        let e = parse("preset = \"horus-sim\"")
            .check_policies(&tokens)
            .unwrap_err();
        assert_eq!(e.field, "preset");
        assert!(e.msg.contains("spine_idle_pick"), "{e}");
        // What tokens can take, or the paper's value written out.
        parse("leaf_idle_threshold = 0")
            .check_policies(&tokens)
            .unwrap();
        parse("idle_link = \"random-of-pool\"")
            .check_policies(&tokens)
            .unwrap();
        // Both policies in one sweep: the tokens run still refuses.
        let both = [Policy::Horus, Policy::HorusTokens];
        assert!(parse("remove_lock = \"off\"")
            .check_policies(&both)
            .is_err());
        parse("remove_lock = \"off\"")
            .check_policies(&[Policy::Horus])
            .unwrap();
        let e = parse("remove_lock = \"off\"")
            .check_policies(&[Policy::RsH])
            .unwrap_err();
        assert!(e.msg.contains("no run uses"), "{e}");
        HorusConfig::default()
            .check_policies(&[Policy::RsH])
            .unwrap();
    }
}
