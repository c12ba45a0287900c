//! The bandwidth-allocation policies compared in §5.2.1.

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Policy {
    /// Ideal RCP: max-min fair sharing among all flows.
    Fair,
    /// pFabric's best case: shortest (remaining) flow first, strict priority,
    /// no protocol overhead, work-conserving.
    Pfabric,
    /// Orchestra: a central scheduler serving tasks FIFO by arrival.
    Orchestra,
    /// Shortest task first with task sizes known up front (centralised).
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
            other => Err(format!(
                "unknown policy `{other}` (fair, pfabric, orchestra, stf, baraat)"
            )),
        }
    }
}
