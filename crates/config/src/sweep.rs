//! `[sweep]`: the (policy, load) runs one invocation makes, the same in
//! every simulator whatever its policy names are.

use serde::{Deserialize, Serialize};

/// Policies × loads run by one invocation; an empty list means the
/// config's single `policy` / `workload.load`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Sweep<P> {
    // `default = "Vec::new"`, not `default`: the latter would make serde
    // require `P: Default`, which no policy name has.
    #[serde(default = "Vec::new")]
    pub policies: Vec<P>,
    #[serde(default)]
    pub loads: Vec<f64>,
}

impl<P> Default for Sweep<P> {
    fn default() -> Self {
        Sweep {
            policies: Vec::new(),
            loads: Vec::new(),
        }
    }
}

/// The (policy, load) runs in order, policy-major: every load of the first
/// policy, then the next policy's. Without a sweep, the one run
/// (`policy`, `load`).
pub fn runs<P: Copy>(sweep: Option<&Sweep<P>>, policy: P, load: f64) -> Vec<(P, f64)> {
    let (policies, loads): (&[P], &[f64]) = match sweep {
        Some(s) => (
            if s.policies.is_empty() {
                std::slice::from_ref(&policy)
            } else {
                &s.policies
            },
            if s.loads.is_empty() {
                std::slice::from_ref(&load)
            } else {
                &s.loads
            },
        ),
        None => (std::slice::from_ref(&policy), std::slice::from_ref(&load)),
    };
    policies
        .iter()
        .flat_map(|&p| loads.iter().map(move |&l| (p, l)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policy_major_with_defaults_for_empty_lists() {
        assert_eq!(runs::<char>(None, 'a', 0.5), vec![('a', 0.5)]);
        let s = Sweep {
            policies: vec!['x', 'y'],
            loads: vec![0.1, 0.2],
        };
        assert_eq!(
            runs(Some(&s), 'a', 0.5),
            vec![('x', 0.1), ('x', 0.2), ('y', 0.1), ('y', 0.2)]
        );
        let only_loads = Sweep {
            policies: vec![],
            loads: vec![0.1, 0.2],
        };
        assert_eq!(
            runs(Some(&only_loads), 'a', 0.5),
            vec![('a', 0.1), ('a', 0.2)]
        );
        let only_policies = Sweep {
            policies: vec!['x', 'y'],
            loads: vec![],
        };
        assert_eq!(
            runs(Some(&only_policies), 'a', 0.5),
            vec![('x', 0.5), ('y', 0.5)]
        );
        assert_eq!(runs(Some(&Sweep::default()), 'a', 0.5), vec![('a', 0.5)]);
    }
}
