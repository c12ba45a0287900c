//! The bandwidth-allocation policies compared in §5.2.1.

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Policy {
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
    /// (engine/admission.rs says why).
    Stf,
    /// Baraat: FIFO-LM over task ids, enforced by SPC.
    Baraat,
}

impl Policy {
    pub const ALL: [Policy; 5] = [
        Policy::Fair,
        Policy::Pfabric,
        Policy::Orchestra,
        Policy::Stf,
        Policy::Baraat,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Policy::Fair => "fair",
            Policy::Pfabric => "pfabric",
            Policy::Orchestra => "orchestra",
            Policy::Stf => "stf",
            Policy::Baraat => "baraat",
        }
    }

    pub fn parse(s: &str) -> Result<Policy, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "fair" | "rcp" | "fs" => Ok(Policy::Fair),
            "pfabric" | "sff" => Ok(Policy::Pfabric),
            "orchestra" | "fifo" => Ok(Policy::Orchestra),
            "stf" => Ok(Policy::Stf),
            "baraat" | "fifo-lm" => Ok(Policy::Baraat),
            _ => Err(netsched_core::names::unknown(
                "policy",
                "flow policies",
                s,
                &Policy::ALL.map(|p| p.name()),
            )),
        }
    }
}
