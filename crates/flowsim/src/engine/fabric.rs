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

/// A [`Link::keys`] entry of a flow in a rate group (above any packed
/// key: a finite float's bits are below the infinities').
pub(super) const MOVING: u128 = u128::MAX;

/// A link's flows (a flow knows its index here: `Flow::pos`), the sum of
/// their NIC rates (whether the link can bind), and the component walk's
/// stamp and local index.
#[derive(Clone, Debug, Default)]
pub(super) struct Link {
    pub(super) flows: Vec<u32>,
    /// Beside each of `flows`, under pFabric with its timers: the flow's
    /// packed (bytes left, id) while it is at rate 0 (out of any group;
    /// its bytes left do not move then), [`MOVING`] while it is in a
    /// group. The timers scan this instead of the flows (`crossings`): a
    /// full link holds hundreds at 0 and is re-armed at every promotion.
    pub(super) keys: Vec<u128>,
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
                self.flows[i as usize] = Flow { gen: gen + 1, ..f };
                i
            }
            None => {
                self.flows.push(f);
                self.fstamp.push(0);
                (self.flows.len() - 1) as u32
            }
        }
    }
}
