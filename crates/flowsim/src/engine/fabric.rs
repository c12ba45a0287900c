//! The flows and the links they cross: the network's state between two
//! recomputations (rates live in the rate groups, [`super::groups`]).

use crate::topology::{LinkId, MAX_HOPS};

/// A flow of a task, from its start to its last byte.
#[derive(Clone, Debug)]
pub(super) struct Flow {
    pub(super) task: u32,
    /// The task's Baraat id (§4.1), kept here to spare a lookup.
    pub(super) tid: u64,
    pub(super) dst: u32,
    pub(super) links: [LinkId; MAX_HOPS],
    pub(super) pos: [u32; MAX_HOPS],
    pub(super) n: u8,
    pub(super) cap: u64,
    /// Bytes left (fluid).
    pub(super) rem: f64,
    /// Bits per second.
    pub(super) rate: f64,
    /// Time `rem` was last brought up to date.
    pub(super) last: u64,
    pub(super) gen: u32,
    pub(super) key: (u64, u64),
    pub(super) spec: u32,
    pub(super) alive: bool,
    /// Rate group ([`Group`](super::groups::Group)) and index in its `members`, or `NONE`.
    pub(super) group: u32,
    pub(super) gpos: u32,
    /// In a group: the group's per-member byte count at which the flow is
    /// done (its bytes left when the group formed).
    pub(super) target: f64,
}

/// A flow's rate group and bytes left, in one 16-byte cell (see
/// [`Fabric::hot`]).
#[derive(Clone, Copy, Debug)]
pub(super) struct FlowHot {
    pub(super) rem: f64,
    pub(super) group: u32,
}

impl FlowHot {
    fn of(f: &Flow) -> Self {
        FlowHot {
            rem: f.rem,
            group: f.group,
        }
    }
}

/// A link's flows (a flow knows its index here: `Flow::pos`), the sum of
/// their NIC rates (whether the link can bind), and the component walk's
/// stamp and local index.
#[derive(Clone, Debug, Default)]
pub(super) struct Link {
    pub(super) flows: Vec<u32>,
    pub(super) sum_caps: u64,
    pub(super) stamp: u32,
    pub(super) local: u32,
}

/// The flows and the links they cross.
#[derive(Clone, Default)]
pub(super) struct Fabric {
    pub(super) links: Vec<Link>,
    pub(super) flows: Vec<Flow>,
    /// Component stamps of the flows, apart from `flows` so that the
    /// component walk (which sees every flow once per link) stays in cache.
    pub(super) fstamp: Vec<u32>,
    /// Copies of each flow's `group` and `rem`, dense for the same reason:
    /// pFabric's timers scan every flow of a full link at each promotion
    /// (`crossings`), which read two cache lines of each `Flow` apart.
    /// Kept equal to the flows' fields (checked with the invariants).
    pub(super) hot: Vec<FlowHot>,
    pub(super) free_flows: Vec<u32>,
    /// The current component stamp (of links, flows and groups).
    pub(super) stamp: u32,
}

impl Fabric {
    pub(super) fn new(links: usize) -> Self {
        Fabric {
            links: vec![Link::default(); links],
            ..Fabric::default()
        }
    }

    /// A new flow's id: a finished flow's slot (its generation bumped) or a
    /// new one.
    pub(super) fn insert(&mut self, f: Flow) -> u32 {
        match self.free_flows.pop() {
            Some(i) => {
                let gen = self.flows[i as usize].gen;
                self.hot[i as usize] = FlowHot::of(&f);
                self.flows[i as usize] = Flow { gen: gen + 1, ..f };
                i
            }
            None => {
                self.hot.push(FlowHot::of(&f));
                self.flows.push(f);
                self.fstamp.push(0);
                (self.flows.len() - 1) as u32
            }
        }
    }
}
