//! Which netsched produced an output: recorded in every summary.json and
//! experiment JSON, so a number can be traced to its code.

use serde::Serialize;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct BuildInfo {
    pub version: &'static str,
    /// The git commit built from, or "unknown" outside a checkout.
    pub commit: &'static str,
}

pub const BUILD_INFO: BuildInfo = BuildInfo {
    version: env!("CARGO_PKG_VERSION"),
    commit: env!("NETSCHED_COMMIT"),
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_commit_is_a_full_hash_or_unknown() {
        let c = BUILD_INFO.commit;
        assert!(
            c == "unknown" || (c.len() == 40 && c.bytes().all(|b| b.is_ascii_hexdigit())),
            "{c}"
        );
        assert!(!BUILD_INFO.version.is_empty());
    }
}
