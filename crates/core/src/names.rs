//! Every scheduling vocabulary in one place: the push policies (the
//! registry's [`Policy`]), the pull policies ([`PullPolicy`]) and the flow
//! policies ([`FlowPolicy`]), each name meaning one thing across all three.
//! A name that is none of a vocabulary's gets one message ([`unknown`], from
//! `crate::unknown_name`, which the registry below uses too): the name, the
//! closest known one when it is a likely typo, and every name.
//!
//! Each family has its own contract and registry, and each name maps to
//! the data plane it builds there: a push policy to a [`crate::Plane`]
//! (`DataPlane`: tasks dispatched to nodes), a pull policy to a
//! [`crate::pull::PullPlane`] (`PullDataPlane`: jobs queued until an
//! executor asks, [`PullPolicy::plane`]), a flow policy to a
//! [`crate::baraat::FlowPlane`] (`FlowDataPlane`: rate requests answered
//! with feedback, [`FlowPolicy::plane`]).
//!
//! Drivers, the lab and the CLI compare policies as these enums, never as
//! strings: a name is read once, by a `parse` here (or the registry's
//! [`Policy::parse`]), and written by `name`.

pub use crate::registry::{Policy, UnknownPolicy};
pub use crate::unknown_name::{suggest, unknown};

use crate::baraat::{FlowPlaneKind, SpcClasses};
use crate::pull::PullPlaneKind;

/// A name no policy of a vocabulary answers to, or one that was renamed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    /// The whole message of [`unknown`].
    #[error("{0}")]
    Unknown(String),
    /// A name that now means something else (or nothing) in this family:
    /// the name to use and why it changed.
    #[error("{family} `{old}` is renamed: use `{new}` ({why})")]
    Renamed {
        family: &'static str,
        old: &'static str,
        new: &'static str,
        why: &'static str,
    },
}

/// Which scheduler a pull run drives (all from `crate::pull` except
/// `racksched-nodes`, a push data plane run for comparison, Draconis §8).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PullPolicy {
    /// Draconis cFCFS in the switch (§4.8).
    Draconis,
    /// Draconis with one queue per priority level (§6).
    DraconisPriority,
    /// Draconis with resource bitmaps and task swapping (§5.2).
    DraconisResource,
    /// Draconis with skip counters and start limits (§5.3).
    DraconisLocality,
    /// The Draconis state machine as a software scheduler on a host (§8).
    DraconisServer,
    /// R2P2's JBSQ(k) as an in-switch scheduler that recirculates a request
    /// until an executor has room (Draconis §2.2, §8.3; `pull::r2p2`). Not
    /// the push policy `r2p2`, R2P2's queueing router (RackSched §4.5).
    R2p2Recirc,
    /// Sparrow batch sampling with late binding (§2.3.2, §8.1).
    Sparrow,
    /// RackSched (OSDI'20) as Draconis §8 runs it: power-of-k JSQ in the
    /// switch over nodes, a cFCFS queue inside each node (the push RackSched
    /// ToR, for comparison). Not the push policy `racksched` (RS-LB over
    /// racks of workers).
    RackschedNodes,
}

/// Pull names that meant something else before (the push family's
/// planes of the same words): each is refused, naming its successor.
pub const RENAMED_PULL_POLICIES: [(&str, PullPolicy, &str); 2] = [
    (
        "r2p2",
        PullPolicy::R2p2Recirc,
        "the in-switch JBSQ that recirculates; `r2p2` is the push family's queueing router",
    ),
    (
        "racksched",
        PullPolicy::RackschedNodes,
        "power-of-k over cFCFS nodes; `racksched` is the push family's RS-LB over racks",
    ),
];

impl PullPolicy {
    pub const ALL: [PullPolicy; 8] = [
        PullPolicy::Draconis,
        PullPolicy::DraconisPriority,
        PullPolicy::DraconisResource,
        PullPolicy::DraconisLocality,
        PullPolicy::DraconisServer,
        PullPolicy::R2p2Recirc,
        PullPolicy::Sparrow,
        PullPolicy::RackschedNodes,
    ];

    pub fn name(self) -> &'static str {
        match self {
            PullPolicy::Draconis => "draconis",
            PullPolicy::DraconisPriority => "draconis-priority",
            PullPolicy::DraconisResource => "draconis-resource",
            PullPolicy::DraconisLocality => "draconis-locality",
            PullPolicy::DraconisServer => "draconis-server",
            PullPolicy::R2p2Recirc => "r2p2-recirc",
            PullPolicy::Sparrow => "sparrow",
            PullPolicy::RackschedNodes => "racksched-nodes",
        }
    }

    /// The pull scheduler this policy runs; `None` for `racksched-nodes`,
    /// which runs the push family's RackSched data plane.
    pub fn plane(self) -> Option<PullPlaneKind> {
        match self {
            PullPolicy::Draconis
            | PullPolicy::DraconisPriority
            | PullPolicy::DraconisResource
            | PullPolicy::DraconisLocality => Some(PullPlaneKind::Switch),
            PullPolicy::DraconisServer => Some(PullPlaneKind::Server),
            PullPolicy::R2p2Recirc => Some(PullPlaneKind::Jbsq),
            PullPolicy::Sparrow => Some(PullPlaneKind::Sparrow),
            PullPolicy::RackschedNodes => None,
        }
    }

    pub fn parse(s: &str) -> Result<PullPolicy, NameError> {
        if let Some(p) = PullPolicy::ALL.into_iter().find(|p| p.name() == s) {
            return Ok(p);
        }
        if let Some(&(old, p, why)) = RENAMED_PULL_POLICIES.iter().find(|r| r.0 == s) {
            return Err(NameError::Renamed {
                family: "pull policy",
                old,
                new: p.name(),
                why,
            });
        }
        Err(NameError::Unknown(unknown(
            "policy",
            "pull policies",
            s,
            &PullPolicy::ALL.map(PullPolicy::name),
        )))
    }
}

/// The bandwidth-allocation policies of the flow simulator (Baraat §5.2.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FlowPolicy {
    /// Ideal RCP: max-min fair sharing among all flows.
    Fair,
    /// pFabric's best case (§5.2.1: "shortest flow first ... with no
    /// protocol overhead"): shortest remaining flow first, preemptive strict
    /// priority, work-conserving; flows, not tasks.
    Pfabric,
    /// Orchestra: a central scheduler serving tasks FIFO by arrival.
    Orchestra,
    /// Shortest task first (§5.2.1): an idealised centralised scheduler that
    /// knows every task's total size up front and orders waiting tasks by
    /// it; non-preemptive, so a task it started keeps its port until done
    /// (flowsim's engine/admission.rs says why).
    Stf,
    /// Baraat: FIFO-LM over task ids, enforced by SPC.
    Baraat,
}

impl FlowPolicy {
    pub const ALL: [FlowPolicy; 5] = [
        FlowPolicy::Fair,
        FlowPolicy::Pfabric,
        FlowPolicy::Orchestra,
        FlowPolicy::Stf,
        FlowPolicy::Baraat,
    ];

    pub fn name(self) -> &'static str {
        match self {
            FlowPolicy::Fair => "fair",
            FlowPolicy::Pfabric => "pfabric",
            FlowPolicy::Orchestra => "orchestra",
            FlowPolicy::Stf => "stf",
            FlowPolicy::Baraat => "baraat",
        }
    }

    /// The switch data plane this policy runs in the flow family's
    /// registry (`crate::baraat::FlowPlane`): SPC with one class (fair
    /// sharing, ideal RCP) or with FIFO-LM's (Baraat); `None` for the
    /// idealised central schedulers (pFabric's best case, Orchestra, STF),
    /// which only the flow simulator's fluid engine computes.
    pub fn plane(self) -> Option<FlowPlaneKind> {
        match self {
            FlowPolicy::Fair => Some(FlowPlaneKind::Spc(SpcClasses::One)),
            FlowPolicy::Baraat => Some(FlowPlaneKind::Spc(SpcClasses::FifoLm)),
            FlowPolicy::Pfabric | FlowPolicy::Orchestra | FlowPolicy::Stf => None,
        }
    }

    /// A name, or one of the papers' other names for it (RCP's fair sharing,
    /// shortest-flow-first, Orchestra's FIFO, Baraat's FIFO-LM), in any case.
    pub fn parse(s: &str) -> Result<FlowPolicy, NameError> {
        match s.trim().to_ascii_lowercase().as_str() {
            "fair" | "rcp" | "fs" => Ok(FlowPolicy::Fair),
            "pfabric" | "sff" => Ok(FlowPolicy::Pfabric),
            "orchestra" | "fifo" => Ok(FlowPolicy::Orchestra),
            "stf" => Ok(FlowPolicy::Stf),
            "baraat" | "fifo-lm" => Ok(FlowPolicy::Baraat),
            _ => Err(NameError::Unknown(unknown(
                "policy",
                "flow policies",
                s,
                &FlowPolicy::ALL.map(FlowPolicy::name),
            ))),
        }
    }
}

/// Every vocabulary's names, by family (`push`, `pull`, `flow`), in the
/// order of each enum's `ALL`: what front ends (the Python catalog, `--help`)
/// list instead of copies.
pub fn families() -> [(&'static str, Vec<&'static str>); 3] {
    [
        ("push", Policy::ALL.map(Policy::name).to_vec()),
        ("pull", PullPolicy::ALL.map(PullPolicy::name).to_vec()),
        ("flow", FlowPolicy::ALL.map(FlowPolicy::name).to_vec()),
    ]
}

// Configs spell a pull policy by name; reading goes through `parse`, so a
// renamed name gets its successor rather than serde's variant list.
#[cfg(feature = "serde")]
impl serde::Serialize for PullPolicy {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

#[cfg(feature = "serde")]
impl<'de> serde::Deserialize<'de> for PullPolicy {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        PullPolicy::parse(&s).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_parses_to_itself_and_renamed_pull_names_name_their_successor() {
        for p in PullPolicy::ALL {
            assert_eq!(PullPolicy::parse(p.name()), Ok(p));
        }
        for p in FlowPolicy::ALL {
            assert_eq!(FlowPolicy::parse(p.name()), Ok(p));
        }
        assert_eq!(
            PullPolicy::parse("r2p2").unwrap_err().to_string(),
            "pull policy `r2p2` is renamed: use `r2p2-recirc` (the in-switch JBSQ that \
             recirculates; `r2p2` is the push family's queueing router)"
        );
        assert_eq!(
            PullPolicy::parse("racksched"),
            Err(NameError::Renamed {
                family: "pull policy",
                old: "racksched",
                new: "racksched-nodes",
                why: RENAMED_PULL_POLICIES[1].2,
            })
        );
        assert!(matches!(
            PullPolicy::parse("horus"),
            Err(NameError::Unknown(_))
        ));
        assert_eq!(FlowPolicy::parse(" FIFO-LM "), Ok(FlowPolicy::Baraat));
        // Each name means one thing: no name is in two families (the flow
        // simulator's aliases included), and a renamed pull name is push.
        let [(_, push), (_, pull), (_, flow)] = families();
        for n in &pull {
            assert!(Policy::parse(n).is_err(), "{n} is push and pull");
            assert!(FlowPolicy::parse(n).is_err(), "{n} is pull and flow");
        }
        for n in &push {
            assert!(FlowPolicy::parse(n).is_err(), "{n} is push and flow");
        }
        assert!(flow.iter().all(|n| PullPolicy::parse(n).is_err()));
        for (old, _, _) in RENAMED_PULL_POLICIES {
            assert!(Policy::parse(old).is_ok(), "{old}");
        }
        assert_eq!(
            pull.iter()
                .filter(|n| PullPolicy::parse(n).unwrap().plane().is_none())
                .count(),
            1
        );
    }
}
