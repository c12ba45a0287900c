//! The one error type for configuration problems.
//!
//! Configuration is read from TOML by the CLI (DESIGN.md "Conventions"), so an
//! error must say *which* setting is wrong, in a single line a user can act on:
//! `field: msg`, where `field` is the dotted path of the setting as written in
//! the TOML file (`workload.service.weights`, `placement.mean_size`, ...).

/// A configuration value that cannot be used.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {msg}")]
pub struct ConfigError {
    /// Dotted path of the offending setting, e.g. `placement.min_size`.
    pub field: String,
    /// What is wrong with it, in words a user can act on.
    pub msg: String,
}

impl ConfigError {
    pub fn new(field: impl Into<String>, msg: impl Into<String>) -> Self {
        ConfigError {
            field: field.into(),
            msg: msg.into(),
        }
    }

    /// A data plane's refusal of the value at `field` (the limits of
    /// `netsched_core::limits`): `schedulers.samples: must be in 1..=16, got 17`.
    pub fn limit(
        field: &str,
        check: Result<(), netsched_core::limits::Refused>,
    ) -> Result<(), ConfigError> {
        check.map_err(|e| ConfigError::new(field, e.to_string()))
    }

    /// Prefix the field with the path of the table it was found in, so a
    /// validator can report `weights` and its caller `workload.service.weights`
    /// without each validator knowing where its struct sits in the file.
    pub fn within(mut self, parent: &str) -> Self {
        if !parent.is_empty() {
            self.field = if self.field.is_empty() {
                parent.to_string()
            } else {
                format!("{parent}.{}", self.field)
            };
        }
        self
    }
}

impl From<netsched_core::registry::UnknownPolicy> for ConfigError {
    fn from(e: netsched_core::registry::UnknownPolicy) -> Self {
        ConfigError::new("policy", e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_and_nesting() {
        let e = ConfigError::new("weights", "must sum to more than 0").within("service");
        assert_eq!(e.to_string(), "service.weights: must sum to more than 0");
        let e = e.within("workload");
        assert_eq!(e.field, "workload.service.weights");
        assert_eq!(ConfigError::new("", "x").within("a").field, "a");
        assert_eq!(ConfigError::new("f", "x").within("").field, "f");
    }
}
