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
    /// Under pFabric with its timers: the bits of the bytes left written
    /// as this flow's key in its links' [`Link::keys`], or
    /// [`MOVING_BITS`] (so that a key that does not change is not
    /// written, nor its links read).
    pub(super) order_bits: u64,
}

/// [`Flow::order_bits`] of a flow whose keys are [`MOVING`] (a NaN's bits,
/// no flow's bytes left).
pub(super) const MOVING_BITS: u64 = u64::MAX;

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

/// How many of a link's smallest keys at rate 0 a scan keeps
/// ([`LinkOrder::front_min`] and [`Fabric::fronts`]).
pub(super) const FRONT: usize = 32;

/// What pFabric's timers keep beside a link's [`Link::keys`] (apart from
/// [`Link`], which every policy's recomputation walks).
#[derive(Clone, Debug)]
pub(super) struct LinkOrder {
    /// Of the link's keys: the smallest at rate 0
    /// that the last scan found, or a later one ([`Fabric::fronts`] holds
    /// the others it kept; [`MOVING`]: none), and at most every key at
    /// rate 0 out of the front ([`MOVING`]: none; lowered where such a key
    /// is written). Their minimum is at most every key at rate 0: the
    /// timers scan the keys for a flow at 0 ahead of a moving one only
    /// while it is below the last moving flow's key. A link's order
    /// usually loses its head at each promotion, so the front spares that
    /// many scans.
    pub(super) front_min: u128,
    pub(super) rest_floor: u128,
    /// How many of `keys` are [`MOVING`], and their flows' ids xor-ed (the
    /// id when one is, the usual case on a full link: the head of its
    /// order), so that re-arming a link reads neither its keys nor a list.
    pub(super) moving: u32,
    pub(super) moving_xor: u32,
    /// The floor counts the keys before this index; those after it came
    /// with flows started since (pushed at the end, read at the next
    /// re-arm), so that a start does not touch this.
    pub(super) seen: u32,
}

impl Default for LinkOrder {
    fn default() -> Self {
        LinkOrder {
            front_min: MOVING,
            rest_floor: MOVING,
            moving: 0,
            moving_xor: 0,
            seen: 0,
        }
    }
}

impl LinkOrder {
    /// At most every key at rate 0 of the link.
    #[inline]
    pub(super) fn still_floor(&self) -> u128 {
        self.front_min.min(self.rest_floor)
    }

    /// The key at `fid`'s place in the link's keys went from `old` to `key` (pFabric
    /// with its timers): keep the moving count and the floor; `front` is
    /// the rest of the link's front ([`Fabric::fronts`]), read only when
    /// its smallest key leaves.
    #[inline]
    pub(super) fn set_key(&mut self, front: &mut Vec<u128>, fid: u32, old: u128, key: u128) {
        if old == key {
            return;
        }
        self.forget_key(front, fid, old);
        if key == MOVING {
            self.moving += 1;
            self.moving_xor ^= fid;
        } else {
            self.rest_floor = self.rest_floor.min(key);
        }
    }

    /// `fid`'s key `old` left the link's keys.
    #[inline]
    pub(super) fn forget_key(&mut self, front: &mut Vec<u128>, fid: u32, old: u128) {
        if old == MOVING {
            self.moving -= 1;
            self.moving_xor ^= fid;
        } else if old == self.front_min {
            // The usual case: the head of the order starts moving. (A key
            // of the front that leaves otherwise stays there: a stale
            // entry only lowers the floor.)
            self.front_min = front.pop().unwrap_or(MOVING);
        }
    }
}

/// The flows and the links they cross.
#[derive(Clone, Default)]
pub(super) struct Fabric {
    pub(super) links: Vec<Link>,
    /// Beside each of `links`, under pFabric with its timers.
    pub(super) orders: Vec<LinkOrder>,
    /// Beside each of `links`, under pFabric with its timers: the keys of
    /// its front above [`LinkOrder::front_min`], descending (the next smallest
    /// last; apart from [`Link`] so that a recomputation's walk does not
    /// read them).
    pub(super) fronts: Vec<Vec<u128>>,
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
            orders: vec![LinkOrder::default(); links],
            fronts: vec![Vec::new(); links],
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
