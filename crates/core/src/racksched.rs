//! RackSched (OSDI'20 §3) and its multi-rack extensions RS-H and RS-LB used as
//! baselines by Horus (NSDI'24 §4.1 "Systems Compared Against", §5.2).
//!
//! The ToR switch keeps two pieces of state (RackSched §3.2, Alg. 1):
//!
//! * *LoadTable*: per-server queue lengths, written **only** from the LOAD field
//!   of reply packets (§3.5; INT1, the default tracking). Nothing is
//!   incremented when a request is dispatched: that is the defining property of RackSched's delayed updates
//!   and the reason it herds under stale information (Horus §2.1, App. C
//!   "Pow-of-2 Delayed Updated").
//! * *ReqTable*: request affinity, an [`AffinityTable`] of n stages × m slots
//!   (§3.4, Alg. 2). REQF inserts after scheduling, REQR reads, the reply
//!   removes; overflowed requests fall back to hash dispatch (§4.1).
//!
//! Power-of-k (§3.3, Fig. 8) reads k samples in one pass. A register array
//! allows one access per pass, so the table exists in k identical copies, one
//! per stage, sample `j` reads copy `j`, and every update writes all copies.
//!
//! Multi-queue support (§3.6): with C > 1 classes a server reports the queue
//! length of the completed request's type and the switch keeps one counter per
//! (server, type); a request is placed on the counters of its own type. A
//! request whose type is not configured falls back to the server's total,
//! which the switch keeps alongside as the sum of its per-type counters.
//!
//! Load tracking (§3.5, §4.6 Fig. 16), [`LoadTracking`]: INT1 (the default,
//! everything above), INT2 (one register with the least loaded server seen in
//! replies), INT3 (the LoadTable holds reported outstanding *work*, which only
//! changes what the server puts in LOAD) and Proactive (the switch counts
//! dispatches and replies itself; no LOAD is read).
//!
//! Roles:
//! * [`RackSched`]: the ToR scheduler over the servers (workers) of one rack.
//!   With [`RackSchedConfig::report_load`] it is an RS-H leaf: after every reply
//!   it tells every spine the rack's average load in 16.16 (Horus §4.1: "each
//!   leaf scheduler send the load state update ... immediately after each task
//!   is done"; §5.2: "to every available spine scheduler").
//! * [`RackSchedSpine`]: the RS-H spine, power-of-k over rack averages that only
//!   leaf reports update.
//! * RS-LB's upper layer is a stateless uniform balancer:
//!   [`crate::baselines::UniformLb`].

use crate::affinity::{stage_hash, AffinityTable};
use crate::dataplane::{
    Action, DataPlane, Decision, DropReason, Input, NodeId, Notice, Outbox, Resubmit, TaskMeta,
    Upstream,
};
use crate::fixed;
use crate::rng::Rng;
use crate::switch::{Pass, Pipeline, RegisterArray};

/// Largest k: one LoadTable copy per sample, each in its own stage.
pub const MAX_K: usize = 16;

const NO_SLOT: u32 = u32::MAX;

/// Hash-unit index for hash-based dispatch, distinct from the ReqTable stages
/// so that the fallback server is independent of the slot a request hashed to.
const DISPATCH_HASH: u32 = 0x100;

const TOTAL_NAMES: [&str; MAX_K] = [
    "loadtable.total.0",
    "loadtable.total.1",
    "loadtable.total.2",
    "loadtable.total.3",
    "loadtable.total.4",
    "loadtable.total.5",
    "loadtable.total.6",
    "loadtable.total.7",
    "loadtable.total.8",
    "loadtable.total.9",
    "loadtable.total.10",
    "loadtable.total.11",
    "loadtable.total.12",
    "loadtable.total.13",
    "loadtable.total.14",
    "loadtable.total.15",
];

const CLASS_NAMES: [&str; MAX_K] = [
    "loadtable.class.0",
    "loadtable.class.1",
    "loadtable.class.2",
    "loadtable.class.3",
    "loadtable.class.4",
    "loadtable.class.5",
    "loadtable.class.6",
    "loadtable.class.7",
    "loadtable.class.8",
    "loadtable.class.9",
    "loadtable.class.10",
    "loadtable.class.11",
    "loadtable.class.12",
    "loadtable.class.13",
    "loadtable.class.14",
    "loadtable.class.15",
];

/// ReqTable sizing (RackSched §3.4, Alg. 2: `ReqTable[n][m]`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReqTableConfig {
    pub stages: u32,
    pub slots_per_stage: u32,
    /// Entries older than this count as free; the control plane also sweeps
    /// them (§3.2: stale mappings from failed servers or lost replies).
    pub timeout_ns: u64,
}

impl Default for ReqTableConfig {
    fn default() -> Self {
        ReqTableConfig {
            stages: 2,
            slots_per_stage: 4096,
            timeout_ns: 10_000_000,
        }
    }
}

impl ReqTableConfig {
    pub fn build(&self) -> AffinityTable {
        AffinityTable::new(self.stages, self.slots_per_stage, self.timeout_ns)
    }
}

/// Configuration of a RackSched ToR scheduler.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RackSchedConfig {
    /// Samples per decision (power-of-k, §3.3), `1..=MAX_K`.
    pub k: u32,
    /// Request types with their own load counters (§3.6 multi-queue), `1..=256`.
    /// With 1, a reply's LOAD is the server's total queue length.
    pub classes: u32,
    pub req_table: ReqTableConfig,
    /// RS-H leaf: notify every spine of the rack average after each reply.
    pub report_load: bool,
    /// How the LoadTable learns server loads (§3.5, §4.6).
    pub tracking: LoadTracking,
}

impl Default for RackSchedConfig {
    fn default() -> Self {
        RackSchedConfig {
            k: 2,
            classes: 1,
            req_table: ReqTableConfig::default(),
            report_load: false,
            tracking: LoadTracking::Int1,
        }
    }
}

/// The server-load tracking mechanisms RackSched §4.6 compares in Fig. 16.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum LoadTracking {
    /// In-network telemetry, per server (§3.5, what RackSched ships): a reply's
    /// LOAD (the server's queue length) overwrites that server's counter;
    /// power-of-k chooses among them.
    #[default]
    Int1,
    /// In-network telemetry keeping only the minimum (§3.5 "only keeps the
    /// server with the minimum load"): one `(server, load)` register per type.
    /// A reply replaces it when its load is no larger, or refreshes the load
    /// when it comes from the recorded server; requests go to the recorded
    /// server, so they herd on it until a reply moves the minimum. Without
    /// exploration a server that never got a request never replies, so one
    /// request in `random_one_in` goes to a uniformly random server instead
    /// (the RackSched artifact's `int2.p4` uses 1 in 4); 0 disables it.
    Int2 { random_one_in: u32 },
    /// In-network telemetry of outstanding work (§4.6 "total service time of
    /// outstanding requests"): the switch logic is INT1's; the server reports
    /// the summed service time of its outstanding requests instead of their
    /// count, which presumes service times are known a priori.
    Int3,
    /// The switch tracks loads itself (§3.5 "proactively"): +1 on the chosen
    /// server's counter for every first request packet, -1 (floored at 0) for
    /// every reply; LOAD is ignored. The increment needs a second pass, since
    /// the chosen server is known only after every LoadTable copy was read
    /// (the artifact's `proactive.p4` resubmits for it too). A lost request or
    /// reply leaves its +1 behind for good: the error §4.6 blames.
    Proactive,
}

/// Draws `min(k, count)` distinct slots in random order. Rejection keeps the
/// order uniformly random, so breaking ties towards the earlier sample (what a
/// comparison tree in the pipeline does) favours no server.
#[inline]
pub fn distinct_samples(rng: &mut Rng, count: u32, k: usize, out: &mut [u32; MAX_K]) -> usize {
    let want = k.min(count as usize).min(MAX_K);
    let mut have = 0;
    while have < want {
        let s = rng.below(count);
        if !out[..have].contains(&s) {
            out[have] = s;
            have += 1;
        }
    }
    want
}

/// What a load report did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Report {
    /// Stored; `sum` is the new total over all servers and types.
    Updated {
        sum: u64,
    },
    UnknownNode,
    /// The reported type is not configured (multi-queue only).
    BadClass,
}

/// RackSched's LoadTable (§3.3, §3.5): k identical copies so that one pass can
/// read k samples, per-type counters for multi-queue (§3.6), and the sum of
/// all counters for the RS-H rack average.
///
/// Servers occupy slots `0..count`; §3.4 "pre-allocate a large number of
/// registers ... and use another register to indicate the number of active
/// servers". Removing a server moves the last slot into its place so that
/// sampling stays uniform over active servers. Stage order: `slot_of`,
/// `count`, `class.j`, `total.j`, `servers`, `sum`.
#[derive(Clone, Debug)]
pub struct LoadTable {
    k: usize,
    classes: u32,
    /// Node -> slot, to apply a reply from a known source.
    slot_of: RegisterArray<u32>,
    count: RegisterArray<u32>,
    /// Per-(slot, type) counters with the node id, `k` copies; empty with one type.
    class_load: Vec<RegisterArray<(NodeId, u32)>>,
    /// Per-slot total with the node id, `k` copies.
    total: Vec<RegisterArray<(NodeId, u32)>>,
    /// Slot -> node for hash dispatch (§3.3, Fig. 6).
    servers: RegisterArray<NodeId>,
    /// Sum of all totals, maintained by deltas (the pipeline cannot add up an array).
    sum: RegisterArray<u64>,
}

impl LoadTable {
    /// `nodes` active nodes `0..nodes`, all at load 0.
    pub fn new(nodes: u32, k: u32, classes: u32) -> Self {
        assert!((1..=MAX_K as u32).contains(&k), "k must be in 1..={MAX_K}");
        assert!(
            (1..=256).contains(&classes),
            "classes must be in 1..=256 (TYPE is one byte)"
        );
        let n = nodes as usize;
        let c = if classes > 1 { classes as usize } else { 0 };
        let mut t = LoadTable {
            k: k as usize,
            classes,
            slot_of: RegisterArray::new("loadtable.slot_of", n, NO_SLOT),
            count: RegisterArray::new("loadtable.count", 1, 0),
            class_load: (0..if c > 0 { k as usize } else { 0 })
                .map(|j| RegisterArray::new(CLASS_NAMES[j], n * c, (0, 0)))
                .collect(),
            total: (0..k as usize)
                .map(|j| RegisterArray::new(TOTAL_NAMES[j], n, (0, 0)))
                .collect(),
            servers: RegisterArray::new("loadtable.servers", n, 0),
            sum: RegisterArray::new("loadtable.sum", 1, 0),
        };
        for node in 0..nodes {
            t.control_add(node);
        }
        t
    }

    pub fn k(&self) -> usize {
        self.k
    }

    pub fn classes(&self) -> u32 {
        self.classes
    }

    #[inline]
    fn multi(&self) -> bool {
        self.classes > 1
    }

    /// Data plane: number of active servers.
    #[inline]
    pub fn active(&mut self, pass: &Pass) -> u32 {
        self.count.read(pass, 0)
    }

    /// Power-of-k (§3.3, Fig. 8): the least loaded of `min(k, active)` distinct
    /// samples on the counters of `class` (its total if the type is not
    /// configured). Requires `active > 0`. Returns the node and its load.
    #[inline]
    pub fn choose(&mut self, pass: &Pass, rng: &mut Rng, active: u32, class: u8) -> (NodeId, u32) {
        debug_assert!(active > 0);
        let mut slots = [0u32; MAX_K];
        let m = distinct_samples(rng, active, self.k, &mut slots);
        let per_class = self.multi() && (class as u32) < self.classes;
        let c = self.classes as usize;
        let mut best = (0, u32::MAX);
        for (j, &slot) in slots[..m].iter().enumerate() {
            let v = if per_class {
                self.class_load[j].read(pass, slot as usize * c + class as usize)
            } else {
                self.total[j].read(pass, slot as usize)
            };
            // Strict: ties stay with the earlier sample.
            if j == 0 || v.1 < best.1 {
                best = v;
            }
        }
        best
    }

    /// Hash-based dispatch (§3.3 Fig. 6, §4.1 overflow fallback): the same
    /// request id always maps to the same server while the server set is
    /// unchanged, which is what keeps affinity without table state.
    #[inline]
    pub fn hashed(&mut self, pass: &Pass, active: u32, key: u64) -> NodeId {
        debug_assert!(active > 0);
        let slot = stage_hash(key, DISPATCH_HASH) % active as u64;
        self.servers.read(pass, slot as usize)
    }

    /// §3.2 Alg. 1 line 8 `LoadTable.update(srcip, load)`: store `load` as the
    /// queue length of `class` (ignored with one type) at `node`, in every copy.
    pub fn report(&mut self, pass: &Pass, node: NodeId, class: u8, load: u32) -> Report {
        self.apply(pass, node, class, |_| load)
    }

    /// Proactive tracking (§3.5): add `delta` to the counter of `class` at
    /// `node` in every copy, saturating at 0 and `u32::MAX`.
    pub fn adjust(&mut self, pass: &Pass, node: NodeId, class: u8, delta: i32) -> Report {
        self.apply(pass, node, class, |old| {
            (old as i64 + delta as i64).clamp(0, u32::MAX as i64) as u32
        })
    }

    /// One stateful-ALU update of the counter of `class` at `node`, `new(old)`,
    /// applied identically to every copy; the total and the sum follow by delta.
    fn apply(&mut self, pass: &Pass, node: NodeId, class: u8, new: impl Fn(u32) -> u32) -> Report {
        if self.multi() && class as u32 >= self.classes {
            return Report::BadClass;
        }
        if node as usize >= self.slot_of.len() {
            return Report::UnknownNode;
        }
        let slot = self.slot_of.read(pass, node as usize);
        if slot == NO_SLOT {
            return Report::UnknownNode;
        }
        let slot = slot as usize;
        // The copies are identical, so the first one's old value gives the delta.
        let delta = if self.multi() {
            let idx = slot * self.classes as usize + class as usize;
            let mut delta = 0;
            for (j, copy) in self.class_load.iter_mut().enumerate() {
                let d = copy.update(pass, idx, |v| {
                    let old = v.1;
                    *v = (node, new(old));
                    v.1 as i64 - old as i64
                });
                if j == 0 {
                    delta = d;
                }
            }
            delta
        } else {
            0
        };
        let multi = self.multi();
        let mut total_delta = 0;
        for (j, copy) in self.total.iter_mut().enumerate() {
            let d = copy.update(pass, slot, |v| {
                let old = v.1;
                v.1 = if multi {
                    (old as i64 + delta).clamp(0, u32::MAX as i64) as u32
                } else {
                    new(old)
                };
                v.1 as i64 - old as i64
            });
            if j == 0 {
                total_delta = d;
            }
        }
        let sum = self.sum.update(pass, 0, |s| {
            *s = (*s as i64 + total_delta).max(0) as u64;
            *s
        });
        Report::Updated { sum }
    }

    /// A uniformly random active server (INT2's exploration), read from the
    /// first total copy, which stores the node beside its load; `servers`
    /// stays free for the overflow hash in the same pass.
    #[inline]
    pub fn random(&mut self, pass: &Pass, rng: &mut Rng, active: u32) -> NodeId {
        debug_assert!(active > 0);
        self.total[0].read(pass, rng.below(active) as usize).0
    }

    /// Control-plane view: the server in slot 0, if any is active.
    pub fn first_active(&self) -> Option<NodeId> {
        (!self.is_empty()).then(|| self.servers.peek(0))
    }

    // ---- control plane (§3.4 "Handling system reconfiguration") ----

    /// Make `node` active at load 0. Returns false if it already was.
    pub fn control_add(&mut self, node: NodeId) -> bool {
        let n = node as usize;
        if n >= self.slot_of.len() {
            self.slot_of.control_resize(n + 1, NO_SLOT);
        }
        if self.slot_of.peek(n) != NO_SLOT {
            return false;
        }
        let slot = self.count.peek(0) as usize;
        if slot >= self.servers.len() {
            let len = (slot + 1).max(self.servers.len() * 2);
            self.servers.control_resize(len, 0);
            for copy in &mut self.total {
                copy.control_resize(len, (0, 0));
            }
            let c = self.classes as usize;
            for copy in &mut self.class_load {
                copy.control_resize(len * c, (0, 0));
            }
        }
        self.slot_of.control_write(n, slot as u32);
        self.servers.control_write(slot, node);
        for copy in &mut self.total {
            copy.control_write(slot, (node, 0));
        }
        let c = self.classes as usize;
        for copy in &mut self.class_load {
            for class in 0..c {
                copy.control_write(slot * c + class, (node, 0));
            }
        }
        self.count.control_write(0, slot as u32 + 1);
        true
    }

    /// Stop scheduling onto `node`; its load leaves the sum. Returns false if
    /// it was not active.
    pub fn control_remove(&mut self, node: NodeId) -> bool {
        let n = node as usize;
        if n >= self.slot_of.len() || self.slot_of.peek(n) == NO_SLOT {
            return false;
        }
        let slot = self.slot_of.peek(n) as usize;
        let last = self.count.peek(0) as usize - 1;
        let gone = self.total[0].peek(slot).1 as u64;
        self.sum
            .control_write(0, self.sum.peek(0).saturating_sub(gone));
        if slot != last {
            let moved = self.servers.peek(last);
            self.servers.control_write(slot, moved);
            for copy in &mut self.total {
                copy.control_write(slot, copy.peek(last));
            }
            let c = self.classes as usize;
            for copy in &mut self.class_load {
                for class in 0..c {
                    copy.control_write(slot * c + class, copy.peek(last * c + class));
                }
            }
            self.slot_of.control_write(moved as usize, slot as u32);
        }
        self.slot_of.control_write(n, NO_SLOT);
        self.count.control_write(0, last as u32);
        true
    }

    // ---- control-plane views ----

    pub fn contains(&self, node: NodeId) -> bool {
        (node as usize) < self.slot_of.len() && self.slot_of.peek(node as usize) != NO_SLOT
    }

    pub fn len(&self) -> u32 {
        self.count.peek(0)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Total load of `node` as the switch sees it.
    pub fn load(&self, node: NodeId) -> Option<u32> {
        self.contains(node).then(|| {
            self.total[0]
                .peek(self.slot_of.peek(node as usize) as usize)
                .1
        })
    }

    /// Load of `node` for type `class` (the total with one type).
    pub fn class_load(&self, node: NodeId, class: u8) -> Option<u32> {
        if !self.multi() {
            return self.load(node);
        }
        if !self.contains(node) || class as u32 >= self.classes {
            return None;
        }
        let slot = self.slot_of.peek(node as usize) as usize;
        Some(
            self.class_load[0]
                .peek(slot * self.classes as usize + class as usize)
                .1,
        )
    }

    /// Sum of all servers' totals.
    pub fn sum(&self) -> u64 {
        self.sum.peek(0)
    }

    /// The rack's average load in 16.16: `sum / active`.
    pub fn average(&self) -> u32 {
        average_16_16(self.sum(), self.len())
    }

    /// Copies agree, totals are the sums of their types, `sum` is the sum of
    /// totals, and slots point back at their nodes.
    pub fn check_invariants(&self) -> Result<(), String> {
        let mut sum = 0u64;
        let c = self.classes as usize;
        for s in 0..self.len() as usize {
            let node = self.servers.peek(s);
            if self.slot_of.peek(node as usize) as usize != s {
                return Err(format!("slot_of[{node}] does not point at slot {s}"));
            }
            for copy in &self.total {
                if copy.peek(s) != self.total[0].peek(s) || copy.peek(s).0 != node {
                    return Err(format!("total copies differ at slot {s}"));
                }
            }
            if self.multi() {
                let mut t = 0u64;
                for class in 0..c {
                    let v = self.class_load[0].peek(s * c + class);
                    for copy in &self.class_load {
                        if copy.peek(s * c + class) != v || v.0 != node {
                            return Err(format!("class copies differ at slot {s} class {class}"));
                        }
                    }
                    t += v.1 as u64;
                }
                if t != self.total[0].peek(s).1 as u64 {
                    return Err(format!(
                        "slot {s}: total {} != sum of types {t}",
                        self.total[0].peek(s).1
                    ));
                }
            }
            sum += self.total[0].peek(s).1 as u64;
        }
        if sum != self.sum() {
            return Err(format!(
                "sum register {} != sum of totals {sum}",
                self.sum()
            ));
        }
        Ok(())
    }
}

/// `sum / n` in 16.16, saturating. A Tofino computes this with a
/// control-plane-installed lookup for the current `n` (its math unit), so the
/// data plane only sees the result.
#[inline]
pub fn average_16_16(sum: u64, n: u32) -> u32 {
    if n == 0 {
        return 0;
    }
    ((sum.saturating_mul(fixed::ONE as u64)) / n as u64).min(u32::MAX as u64) as u32
}

/// How a first request packet (REQF) picks its server.
enum Select<'a> {
    /// Power-of-k over the LoadTable (§3.3).
    PowerOfK,
    /// INT2 (§4.6): the recorded minimum of the request's type, or one time in
    /// `random_one_in` a uniformly random server.
    Minimum {
        register: &'a mut RegisterArray<(NodeId, u32)>,
        index: usize,
        random_one_in: u32,
    },
}

/// Alg. 1 for a request packet, shared by the ToR and the RS-H spine.
/// `remove_on_last`: a scheduler that replies do not traverse (the RS-H spine)
/// frees the entry with the last request packet instead (Horus §A.4).
/// Returns the server a first packet was sent to (what Proactive counts).
#[allow(clippy::too_many_arguments)]
fn schedule(
    pass: &Pass,
    now: u64,
    loads: &mut LoadTable,
    req: &mut AffinityTable,
    rng: &mut Rng,
    task: TaskMeta,
    remove_on_last: bool,
    select: Select<'_>,
    out: &mut Outbox,
) -> Option<NodeId> {
    if !task.first {
        // Alg. 1 lines 4-5: REQR follows ReqTable.
        let entry = if remove_on_last && task.last {
            req.remove(pass, task.id)
        } else {
            req.lookup(pass, now, task.id)
        };
        let node = match entry {
            Some(e) => e.node,
            None => {
                // The REQF overflowed (or its entry expired): §4.1 "fall back to
                // hash-based random dispatching which preserves request affinity".
                let active = loads.active(pass);
                if active == 0 {
                    out.push(Action::Drop(DropReason::NoNodes));
                    return None;
                }
                loads.hashed(pass, active, task.id)
            }
        };
        out.push(Action::Dispatch {
            node,
            task,
            decision: Decision::Other,
        });
        return None;
    }
    // Alg. 1 lines 1-3: REQF is scheduled on LoadTable, then remembered.
    let active = loads.active(pass);
    if active == 0 {
        out.push(Action::Drop(DropReason::NoNodes));
        return None;
    }
    let (node, decision) = match select {
        Select::PowerOfK => (
            loads.choose(pass, rng, active, task.class).0,
            Decision::Sampled,
        ),
        Select::Minimum {
            register,
            index,
            random_one_in,
        } => {
            if random_one_in > 0 && rng.below(random_one_in) == 0 {
                (loads.random(pass, rng, active), Decision::Other)
            } else {
                (register.read(pass, index).0, Decision::Other)
            }
        }
    };
    if task.last || req.insert(pass, now, task.id, node, 0) {
        out.push(Action::Dispatch {
            node,
            task,
            decision,
        });
        Some(node)
    } else {
        // ReqTable full: the continuations will miss, so the first packet must
        // already go where the hash sends them.
        let node = loads.hashed(pass, active, task.id);
        out.push(Action::Dispatch {
            node,
            task,
            decision: Decision::Other,
        });
        Some(node)
    }
}

/// RackSched's ToR scheduler over the servers of one rack (§3), optionally an
/// RS-H leaf (Horus §4.1, §5.2).
///
/// Inputs: `Task` (REQF/REQR; under Proactive a REQF also emits
/// `Resubmit(CountDispatch)`), `Reply` (removes the ReqTable entry of `task`;
/// stores `qlen` as the load of `class` at `node`, or under Proactive takes
/// one off its counter; an RS-H leaf then emits one
/// `Notify{All, LoadUpdate(avg)}`), `Resubmit(CountDispatch)` under
/// Proactive. Anything else is `Drop(Unexpected)`; in particular
/// `QueueChanged`, which would turn the delayed-update scheduler into an
/// ideal one.
#[derive(Clone, Debug)]
pub struct RackSched {
    pipeline: Pipeline,
    rng: Rng,
    loads: LoadTable,
    req: AffinityTable,
    report_load: bool,
    tracking: LoadTracking,
    /// INT2: `(server, load)` of the least loaded server seen, per type
    /// (one entry with a single type); empty in the other modes.
    minimum: RegisterArray<(NodeId, u32)>,
}

impl RackSched {
    /// A ToR over `servers` servers `0..servers`, all at load 0.
    pub fn new(servers: u32, seed: u64, config: RackSchedConfig) -> Self {
        let minimum_len = match config.tracking {
            LoadTracking::Int2 { .. } => config.classes as usize,
            _ => 0,
        };
        RackSched {
            pipeline: Pipeline::new(),
            rng: Rng::new(seed),
            loads: LoadTable::new(servers, config.k, config.classes),
            req: config.req_table.build(),
            report_load: config.report_load,
            tracking: config.tracking,
            // No reply seen yet: any first report replaces the entry (the
            // artifact starts at load 9999).
            minimum: RegisterArray::new("minimum", minimum_len, (0, u32::MAX)),
        }
    }

    /// INT2's register entry for a request type: its own with multi-queue,
    /// else the single entry (unconfigured types share entry 0).
    fn minimum_index(&self, class: u8) -> usize {
        if (class as u32) < self.loads.classes() {
            class as usize
        } else {
            0
        }
    }

    /// The RS-H leaf: RackSched that reports its rack average to every spine
    /// after each reply.
    pub fn rs_h_leaf(servers: u32, seed: u64, config: RackSchedConfig) -> Self {
        RackSched::new(
            servers,
            seed,
            RackSchedConfig {
                report_load: true,
                ..config
            },
        )
    }

    fn on_reply(&mut self, node: NodeId, qlen: u32, class: u8, task: u64, out: &mut Outbox) {
        let pass = self.pipeline.begin();
        // Alg. 1 line 7. A reply from a removed server still frees its entry.
        self.req.remove(&pass, task);
        let report = match self.tracking {
            // The switch counts for itself; LOAD is not read.
            LoadTracking::Proactive => self.loads.adjust(&pass, node, class, -1),
            LoadTracking::Int1 | LoadTracking::Int3 | LoadTracking::Int2 { .. } => {
                self.loads.report(&pass, node, class, qlen)
            }
        };
        if let (LoadTracking::Int2 { .. }, Report::Updated { .. }) = (self.tracking, report) {
            // The artifact's `lowest_load.p4`: a load no larger than the
            // recorded one takes over; the recorded server refreshes its own.
            let index = self.minimum_index(class);
            self.minimum.update(&pass, index, |(min_node, min_load)| {
                if qlen <= *min_load {
                    *min_node = node;
                    *min_load = qlen;
                } else if *min_node == node {
                    *min_load = qlen;
                }
            });
        }
        match report {
            Report::Updated { sum } => {
                if self.report_load {
                    let active = self.loads.active(&pass);
                    let avg = average_16_16(sum, active);
                    out.push(Action::Notify {
                        to: Upstream::All,
                        notice: Notice::LoadUpdate(avg),
                    });
                }
            }
            Report::UnknownNode => out.push(Action::Drop(DropReason::UnknownNode)),
            Report::BadClass => out.push(Action::Drop(DropReason::Unexpected)),
        }
    }

    /// Proactive, second pass: the dispatched server's counter goes up.
    fn on_count_dispatch(&mut self, node: NodeId, class: u8, out: &mut Outbox) {
        let pass = self.pipeline.resubmit();
        match self.loads.adjust(&pass, node, class, 1) {
            Report::Updated { .. } => {}
            // Removed between the passes: nothing left to count on.
            Report::UnknownNode => out.push(Action::Drop(DropReason::UnknownNode)),
            Report::BadClass => out.push(Action::Drop(DropReason::Unexpected)),
        }
    }

    // ---- control plane ----

    /// A server joined (§3.4 reconfiguration): schedulable at once, load 0.
    pub fn control_add_node(&mut self, node: NodeId) {
        self.loads.control_add(node);
        // INT2 entries that name no live server (none was active) start here.
        for i in 0..self.minimum.len() {
            if !self.loads.contains(self.minimum.peek(i).0) {
                self.minimum.control_write(i, (node, u32::MAX));
            }
        }
    }

    /// A server failed or left: no new requests go to it, and ReqTable entries
    /// pointing at it are deleted (§3.4 "unplanned server removal").
    pub fn control_remove_node(&mut self, node: NodeId) {
        if self.loads.control_remove(node) {
            self.req.control_forget_node(node);
            // INT2 must not keep herding onto a server that is gone: the
            // entry restarts on a live one, replaced by the next reply.
            let live = self.loads.first_active().unwrap_or(0);
            for i in 0..self.minimum.len() {
                if self.minimum.peek(i).0 == node {
                    self.minimum.control_write(i, (live, u32::MAX));
                }
            }
        }
    }

    /// §3.2: the control plane periodically removes stale ReqTable entries.
    pub fn control_sweep(&mut self, now: u64) -> u64 {
        self.req.control_sweep(now)
    }

    // ---- views ----

    pub fn load_table(&self) -> &LoadTable {
        &self.loads
    }

    pub fn req_table(&self) -> &AffinityTable {
        &self.req
    }

    /// Sum of the LoadTable (all servers, all types).
    pub fn total_load(&self) -> u64 {
        self.loads.sum()
    }

    /// Rack average load in 16.16, what an RS-H leaf reports.
    pub fn average_load(&self) -> u32 {
        self.loads.average()
    }

    pub fn reports_load(&self) -> bool {
        self.report_load
    }

    pub fn tracking(&self) -> LoadTracking {
        self.tracking
    }

    /// INT2's recorded `(server, load)` for `class` (`None` in other modes).
    pub fn recorded_minimum(&self, class: u8) -> Option<(NodeId, u32)> {
        (!self.minimum.is_empty()).then(|| self.minimum.peek(self.minimum_index(class)))
    }
}

impl DataPlane for RackSched {
    fn handle(&mut self, now: u64, input: Input, out: &mut Outbox) {
        match input {
            Input::Task(task) => {
                let pass = self.pipeline.begin();
                let select = match self.tracking {
                    LoadTracking::Int2 { random_one_in } => Select::Minimum {
                        index: self.minimum_index(task.class),
                        register: &mut self.minimum,
                        random_one_in,
                    },
                    _ => Select::PowerOfK,
                };
                let sent = schedule(
                    &pass,
                    now,
                    &mut self.loads,
                    &mut self.req,
                    &mut self.rng,
                    task,
                    false,
                    select,
                    out,
                );
                if let (LoadTracking::Proactive, Some(node)) = (self.tracking, sent) {
                    out.push(Action::Resubmit(Resubmit::CountDispatch {
                        node,
                        class: task.class,
                    }));
                }
            }
            Input::Reply {
                node,
                qlen,
                class,
                task,
            } => self.on_reply(node, qlen, class, task, out),
            Input::Resubmit(Resubmit::CountDispatch { node, class })
                if self.tracking == LoadTracking::Proactive =>
            {
                self.on_count_dispatch(node, class, out)
            }
            _ => out.push(Action::Drop(DropReason::Unexpected)),
        }
    }

    fn pipeline(&self) -> &Pipeline {
        &self.pipeline
    }
}

/// RS-H's spine scheduler (Horus §4.1): RackSched one level up, power-of-k
/// over rack average loads (16.16) that only the leaves' `LoadUpdate`
/// messages change; nothing is added at dispatch.
///
/// Replies do not pass through a spine, so its ReqTable entry for a
/// multi-packet task is freed by the task's last packet (Horus §A.4) or by
/// expiry. Inputs: `Task`, `LoadUpdate`; anything else is `Drop(Unexpected)`.
#[derive(Clone, Debug)]
pub struct RackSchedSpine {
    pipeline: Pipeline,
    rng: Rng,
    loads: LoadTable,
    req: AffinityTable,
}

impl RackSchedSpine {
    /// A spine over racks `0..racks`, all at load 0, sampling `k` racks.
    pub fn new(racks: u32, seed: u64, k: u32, req_table: ReqTableConfig) -> Self {
        RackSchedSpine {
            pipeline: Pipeline::new(),
            rng: Rng::new(seed),
            loads: LoadTable::new(racks, k, 1),
            req: req_table.build(),
        }
    }

    pub fn control_add_node(&mut self, rack: NodeId) {
        self.loads.control_add(rack);
    }

    /// Leaf or link failure: no new tasks to the rack; its affinity entries go.
    pub fn control_remove_node(&mut self, rack: NodeId) {
        if self.loads.control_remove(rack) {
            self.req.control_forget_node(rack);
        }
    }

    pub fn control_sweep(&mut self, now: u64) -> u64 {
        self.req.control_sweep(now)
    }

    pub fn load_table(&self) -> &LoadTable {
        &self.loads
    }

    pub fn req_table(&self) -> &AffinityTable {
        &self.req
    }
}

impl DataPlane for RackSchedSpine {
    fn handle(&mut self, now: u64, input: Input, out: &mut Outbox) {
        match input {
            Input::Task(task) => {
                let pass = self.pipeline.begin();
                schedule(
                    &pass,
                    now,
                    &mut self.loads,
                    &mut self.req,
                    &mut self.rng,
                    task,
                    true,
                    Select::PowerOfK,
                    out,
                );
            }
            Input::LoadUpdate { node, load } => {
                let pass = self.pipeline.begin();
                if self.loads.report(&pass, node, 0, load) == Report::UnknownNode {
                    out.push(Action::Drop(DropReason::UnknownNode));
                }
            }
            _ => out.push(Action::Drop(DropReason::Unexpected)),
        }
    }

    fn pipeline(&self) -> &Pipeline {
        &self.pipeline
    }

    /// A LOAD report writes one load register (or is dropped for an unknown
    /// rack): Alg. 1's update, nothing emitted.
    fn writes_state_only(&self, input: &Input) -> bool {
        matches!(input, Input::LoadUpdate { .. })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;
    use proptest::prelude::*;

    fn run(dp: &mut impl DataPlane, now: u64, input: Input) -> Vec<Action> {
        let mut out = Outbox::new();
        dp.handle(now, input, &mut out);
        out.drain().collect()
    }

    fn one_dispatch(acts: &[Action]) -> (NodeId, Decision) {
        match acts {
            [Action::Dispatch { node, decision, .. }] => (*node, *decision),
            other => panic!("expected one dispatch, got {other:?}"),
        }
    }

    fn req(id: u64, first: bool, last: bool) -> Input {
        Input::Task(TaskMeta {
            id,
            first,
            last,
            ..TaskMeta::default()
        })
    }

    fn single(id: u64) -> Input {
        req(id, true, true)
    }

    fn reply(node: NodeId, qlen: u32, task: u64) -> Input {
        Input::Reply {
            node,
            qlen,
            class: 0,
            task,
        }
    }

    fn cfg(k: u32) -> RackSchedConfig {
        RackSchedConfig {
            k,
            ..RackSchedConfig::default()
        }
    }

    fn with_loads(loads: &[u32], k: u32, seed: u64) -> RackSched {
        let mut rs = RackSched::new(loads.len() as u32, seed, cfg(k));
        for (n, &l) in loads.iter().enumerate() {
            assert!(run(&mut rs, 0, reply(n as NodeId, l, 0)).is_empty());
        }
        rs
    }

    proptest! {
        /// §3.3: sampling every server is exact JSQ on the LoadTable.
        #[test]
        fn k_equal_n_picks_a_minimum(loads in proptest::collection::vec(0u32..6, 1..=MAX_K), seed in any::<u64>()) {
            let mut rs = with_loads(&loads, loads.len() as u32, seed);
            let min = *loads.iter().min().unwrap();
            for id in 0..20 {
                let (node, d) = one_dispatch(&run(&mut rs, 0, single(id)));
                prop_assert_eq!(loads[node as usize], min);
                prop_assert_eq!(d, Decision::Sampled);
            }
        }

        /// §3.3 power-of-2: the choice is the lighter of the two samples the
        /// switch drew (recomputed from a clone of its random stream), so it
        /// is never the unique most loaded server.
        #[test]
        fn k2_picks_the_lighter_of_its_two_samples(loads in proptest::collection::vec(0u32..4, 2..40), seed in any::<u64>()) {
            let mut rs = with_loads(&loads, 2, seed);
            let max = *loads.iter().max().unwrap();
            let unique_max = loads.iter().filter(|&&l| l == max).count() == 1;
            for id in 0..50 {
                let mut probe = rs.rng.clone();
                let mut slots = [0u32; MAX_K];
                prop_assert_eq!(distinct_samples(&mut probe, loads.len() as u32, 2, &mut slots), 2);
                prop_assert_ne!(slots[0], slots[1]);
                // Slots are nodes here: no server was ever removed.
                let (a, b) = (slots[0] as usize, slots[1] as usize);
                let expect = if loads[b] < loads[a] { b } else { a };
                let (node, _) = one_dispatch(&run(&mut rs, 0, single(id)));
                prop_assert_eq!(node as usize, expect);
                prop_assert!(!(unique_max && loads[node as usize] == max));
            }
            rs.load_table().check_invariants().map_err(TestCaseError::fail)?;
        }

        /// What `writes_state_only` promises the simulator, which holds
        /// RS-H's load updates back and hands them over just before the
        /// spine's next input: an update emits at most a drop, and handling
        /// it later leaves the spine in exactly the same state (every
        /// register, the pass counters and the random stream).
        #[test]
        fn spine_load_updates_write_state_only(
            ops in proptest::collection::vec((0u8..4, 0u32..8, 0u32..4 * fixed::ONE), 1..80),
            seed in any::<u64>(),
        ) {
            // A small ReqTable keeps the whole-state comparison (Debug) cheap.
            let req = ReqTableConfig { stages: 1, slots_per_stage: 8, ..ReqTableConfig::default() };
            let mut sp = RackSchedSpine::new(6, seed, 2, req);
            for (i, &(op, node, load)) in ops.iter().enumerate() {
                let input = match op {
                    0 | 1 => Input::LoadUpdate { node, load },
                    2 => single(i as u64),
                    _ => {
                        sp.control_remove_node(node % 6);
                        continue;
                    }
                };
                prop_assert_eq!(sp.writes_state_only(&input), op < 2);
                if !sp.writes_state_only(&input) {
                    run(&mut sp, 10, input);
                    continue;
                }
                let mut late = sp.clone();
                let now = run(&mut sp, 10, input);
                prop_assert!(now.iter().all(|a| matches!(a, Action::Drop(_))), "{:?}", now);
                prop_assert_eq!(&run(&mut late, 5_000_000, input), &now);
                prop_assert_eq!(format!("{late:?}"), format!("{sp:?}"));
            }
        }

        /// Horus §4.1/§5.2 RS-H: exactly one LoadUpdate to all spines per
        /// reply, carrying sum(LoadTable)/n in 16.16.
        #[test]
        fn rs_h_leaf_reports_the_rack_average_once_per_reply(
            n in 1u32..12,
            replies in proptest::collection::vec((0u32..12, 0u32..50), 1..100),
        ) {
            let mut leaf = RackSched::rs_h_leaf(n, 1, RackSchedConfig::default());
            let mut model = vec![0u64; n as usize];
            for (node, q) in replies {
                let acts = run(&mut leaf, 0, reply(node, q, 7));
                if node >= n {
                    prop_assert_eq!(acts, vec![Action::Drop(DropReason::UnknownNode)]);
                    continue;
                }
                model[node as usize] = q as u64;
                let sum: u64 = model.iter().sum();
                let avg = ((sum << 16) / n as u64) as u32;
                prop_assert_eq!(acts, vec![Action::Notify { to: Upstream::All, notice: Notice::LoadUpdate(avg) }]);
                prop_assert_eq!(leaf.average_load(), avg);
                prop_assert_eq!(leaf.total_load(), sum);
            }
        }

        /// §3.4: every REQR of a request goes where its REQF went, also when
        /// a tiny ReqTable overflows and hash dispatch takes over, while
        /// replies of finished requests keep changing the loads.
        #[test]
        fn request_affinity_holds_under_overflow(
            seed in any::<u64>(),
            script in proptest::collection::vec((0usize..6, 0u32..5), 1..250),
        ) {
            let n = 5;
            let mut rs = RackSched::new(n, seed, RackSchedConfig {
                k: 2,
                classes: 1,
                req_table: ReqTableConfig { stages: 2, slots_per_stage: 2, timeout_ns: u64::MAX / 2 },
                report_load: false,
                tracking: LoadTracking::Int1,
            });
            // Six request "lanes"; each lane runs requests of 1..4 packets back to back.
            let mut lane: Vec<Option<(u64, NodeId, u32)>> = vec![None; 6];
            let mut next_id = 1u64;
            for (t, (l, x)) in script.into_iter().enumerate() {
                let now = t as u64;
                match lane[l] {
                    None => {
                        let packets = 1 + x % 4;
                        let id = next_id;
                        next_id += 1;
                        let (node, _) = one_dispatch(&run(&mut rs, now, req(id, true, packets == 1)));
                        lane[l] = Some((id, node, packets - 1));
                    }
                    Some((id, node, 0)) => {
                        // Reply: frees the entry and moves the load of the server.
                        prop_assert!(run(&mut rs, now, reply(node, x, id)).is_empty());
                        prop_assert!(rs.req.lookup(&rs.pipeline.begin(), now, id).is_none(), "reply removes the entry");
                        lane[l] = None;
                    }
                    Some((id, node, left)) => {
                        let (got, d) = one_dispatch(&run(&mut rs, now, req(id, false, left == 1)));
                        prop_assert_eq!(got, node, "REQR of {} strayed", id);
                        prop_assert_eq!(d, Decision::Other);
                        lane[l] = Some((id, node, left - 1));
                    }
                }
                rs.load_table().check_invariants().map_err(TestCaseError::fail)?;
            }
        }
    }

    #[test]
    fn delayed_updates_mean_no_increment_at_dispatch() {
        // The point of RackSched's LoadTable (§3.5, Horus App. C "DU"): until a
        // reply arrives, every request sees the same loads and herds.
        let mut rs = with_loads(&[3, 2, 5, 1, 4], 5, 9);
        for id in 0..10 {
            assert_eq!(one_dispatch(&run(&mut rs, 0, single(id))).0, 3);
        }
        assert_eq!(rs.load_table().load(3), Some(1));
        run(&mut rs, 0, reply(3, 6, 0));
        assert_eq!(one_dispatch(&run(&mut rs, 0, single(11))).0, 1);
    }

    #[test]
    fn reqf_inserts_reqr_reads_reply_removes() {
        let mut rs = RackSched::new(8, 4, RackSchedConfig::default());
        let (node, d) = one_dispatch(&run(&mut rs, 0, req(42, true, false)));
        assert_eq!(d, Decision::Sampled);
        assert_eq!(rs.req_table().occupancy(), 1);
        // Loads change in between; the continuation must not be rescheduled.
        for n in 0..8 {
            run(
                &mut rs,
                1,
                reply(n, if n == node { 50 } else { 0 }, 1000 + n as u64),
            );
        }
        assert_eq!(
            one_dispatch(&run(&mut rs, 2, req(42, false, false))),
            (node, Decision::Other)
        );
        assert_eq!(one_dispatch(&run(&mut rs, 3, req(42, false, true))).0, node);
        assert_eq!(
            rs.req_table().occupancy(),
            1,
            "REQR does not remove; the reply does (Alg. 1)"
        );
        run(&mut rs, 4, reply(node, 0, 42));
        assert_eq!(rs.req_table().occupancy(), 0);
        // Single-packet requests never occupy the table.
        one_dispatch(&run(&mut rs, 5, single(43)));
        assert_eq!(rs.req_table().occupancy(), 0);
    }

    #[test]
    fn overflow_falls_back_to_hash_dispatch() {
        let mut rs = RackSched::new(
            16,
            4,
            RackSchedConfig {
                req_table: ReqTableConfig {
                    stages: 1,
                    slots_per_stage: 1,
                    timeout_ns: 1_000_000,
                },
                ..RackSchedConfig::default()
            },
        );
        one_dispatch(&run(&mut rs, 0, req(1, true, false)));
        let mut fallback = 0;
        for id in 2..40u64 {
            let (node, d) = one_dispatch(&run(&mut rs, 0, req(id, true, false)));
            let expect = (stage_hash(id, DISPATCH_HASH) % 16) as NodeId;
            assert_eq!(
                (node, d),
                (expect, Decision::Other),
                "request {id} overflowed"
            );
            assert_eq!(one_dispatch(&run(&mut rs, 0, req(id, false, true))).0, node);
            fallback += 1;
        }
        assert_eq!(rs.req_table().overflows, fallback);
    }

    #[test]
    fn sweep_removes_stale_entries() {
        let mut rs = RackSched::new(
            4,
            4,
            RackSchedConfig {
                req_table: ReqTableConfig {
                    stages: 2,
                    slots_per_stage: 64,
                    timeout_ns: 1_000,
                },
                ..RackSchedConfig::default()
            },
        );
        for id in 0..5 {
            one_dispatch(&run(&mut rs, 0, req(id, true, false)));
        }
        one_dispatch(&run(&mut rs, 900, req(9, true, false)));
        assert_eq!(rs.req_table().occupancy(), 6);
        assert_eq!(
            rs.control_sweep(1_500),
            5,
            "only entries older than the timeout go"
        );
        assert_eq!(rs.req_table().occupancy(), 1);
    }

    #[test]
    fn multi_queue_uses_the_counters_of_the_request_type() {
        // §3.6: per-type counters; an unconfigured type falls back to totals.
        let mut rs = RackSched::new(
            2,
            1,
            RackSchedConfig {
                k: 2,
                classes: 2,
                ..RackSchedConfig::default()
            },
        );
        for (node, class, q) in [(0, 0, 5), (1, 0, 0), (0, 1, 0), (1, 1, 7)] {
            assert!(run(
                &mut rs,
                0,
                Input::Reply {
                    node,
                    qlen: q,
                    class,
                    task: 0
                }
            )
            .is_empty());
        }
        let typed = |class: u8| {
            Input::Task(TaskMeta {
                id: 1,
                first: true,
                last: true,
                class,
                ..TaskMeta::default()
            })
        };
        for _ in 0..10 {
            assert_eq!(one_dispatch(&run(&mut rs, 0, typed(0))).0, 1);
            assert_eq!(one_dispatch(&run(&mut rs, 0, typed(1))).0, 0);
            assert_eq!(
                one_dispatch(&run(&mut rs, 0, typed(9))).0,
                0,
                "totals 5 vs 7"
            );
        }
        assert_eq!(rs.load_table().load(1), Some(7));
        assert_eq!(rs.total_load(), 12);
        assert_eq!(
            run(
                &mut rs,
                0,
                Input::Reply {
                    node: 0,
                    qlen: 1,
                    class: 2,
                    task: 0
                }
            ),
            vec![Action::Drop(DropReason::Unexpected)]
        );
        rs.load_table().check_invariants().unwrap();
    }

    #[test]
    fn removed_server_gets_no_requests_and_loses_its_entries() {
        let mut rs = with_loads(&[0, 9, 9, 9], 4, 2);
        let (node, _) = one_dispatch(&run(&mut rs, 0, req(5, true, false)));
        assert_eq!(node, 0);
        rs.control_remove_node(0);
        assert_eq!(rs.req_table().occupancy(), 0);
        assert_eq!(rs.total_load(), 27);
        for id in 10..60 {
            assert_ne!(one_dispatch(&run(&mut rs, 0, single(id))).0, 0);
        }
        // The orphaned continuation is re-homed by hash onto a live server.
        assert_ne!(one_dispatch(&run(&mut rs, 0, req(5, false, true))).0, 0);
        assert_eq!(
            run(&mut rs, 0, reply(0, 0, 5)),
            vec![Action::Drop(DropReason::UnknownNode)]
        );
        rs.control_add_node(6);
        assert_eq!(
            one_dispatch(&run(&mut rs, 0, single(99))).0,
            6,
            "a new server starts empty"
        );
        rs.load_table().check_invariants().unwrap();
        for n in [1, 2, 3, 6] {
            rs.control_remove_node(n);
        }
        assert_eq!(
            run(&mut rs, 0, single(1)),
            vec![Action::Drop(DropReason::NoNodes)]
        );
        assert_eq!(
            run(&mut rs, 0, Input::QueueChanged { node: 1, qlen: 0 }),
            vec![Action::Drop(DropReason::Unexpected)]
        );
    }

    #[test]
    fn spine_balances_racks_on_reported_averages_only() {
        let mut sp = RackSchedSpine::new(3, 5, 3, ReqTableConfig::default());
        for (rack, avg) in [(0, 3 * fixed::ONE), (1, fixed::ONE / 2), (2, fixed::ONE)] {
            assert!(run(
                &mut sp,
                0,
                Input::LoadUpdate {
                    node: rack,
                    load: avg
                }
            )
            .is_empty());
        }
        for id in 0..5 {
            assert_eq!(
                one_dispatch(&run(&mut sp, 0, single(id))),
                (1, Decision::Sampled)
            );
        }
        assert_eq!(
            sp.load_table().load(1),
            Some(fixed::ONE / 2),
            "nothing added at dispatch"
        );
        run(
            &mut sp,
            0,
            Input::LoadUpdate {
                node: 1,
                load: 2 * fixed::ONE,
            },
        );
        let (rack, _) = one_dispatch(&run(&mut sp, 0, req(50, true, false)));
        assert_eq!(rack, 2);
        run(
            &mut sp,
            0,
            Input::LoadUpdate {
                node: 2,
                load: 9 * fixed::ONE,
            },
        );
        assert_eq!(
            one_dispatch(&run(&mut sp, 0, req(50, false, true))).0,
            2,
            "continuation follows"
        );
        assert_eq!(
            sp.req_table().occupancy(),
            0,
            "the last packet frees the entry at a spine"
        );
        assert_eq!(
            run(&mut sp, 0, Input::LoadUpdate { node: 7, load: 0 }),
            vec![Action::Drop(DropReason::UnknownNode)]
        );
        assert_eq!(
            run(&mut sp, 0, reply(0, 0, 0)),
            vec![Action::Drop(DropReason::Unexpected)]
        );
    }

    #[test]
    fn rs_h_leaf_feeds_spine() {
        let mut spine = RackSchedSpine::new(2, 1, 2, ReqTableConfig::default());
        let mut leaves = [
            RackSched::rs_h_leaf(4, 1, RackSchedConfig::default()),
            RackSched::rs_h_leaf(2, 2, RackSchedConfig::default()),
        ];
        for (rack, leaf) in leaves.iter_mut().enumerate() {
            for w in 0..leaf.load_table().len() {
                for a in run(leaf, 0, reply(w, 2 + rack as u32, 0)) {
                    let Action::Notify {
                        to: Upstream::All,
                        notice: Notice::LoadUpdate(load),
                    } = a
                    else {
                        panic!("{a:?}")
                    };
                    run(
                        &mut spine,
                        0,
                        Input::LoadUpdate {
                            node: rack as NodeId,
                            load,
                        },
                    );
                }
            }
        }
        assert_eq!(spine.load_table().load(0), Some(2 * fixed::ONE));
        assert_eq!(spine.load_table().load(1), Some(3 * fixed::ONE));
        assert_eq!(one_dispatch(&run(&mut spine, 0, single(1))).0, 0);
    }

    fn tracking(n: u32, k: u32, tracking: LoadTracking) -> RackSched {
        RackSched::new(
            n,
            11,
            RackSchedConfig {
                k,
                tracking,
                ..RackSchedConfig::default()
            },
        )
    }

    /// Feeds a Proactive dispatch and its counting pass; returns the server.
    fn proactive_dispatch(rs: &mut RackSched, id: u64, class: u8) -> NodeId {
        let t = TaskMeta {
            id,
            first: true,
            last: true,
            class,
            ..TaskMeta::default()
        };
        let acts = run(rs, 0, Input::Task(t));
        let [Action::Dispatch { node, .. }, Action::Resubmit(r)] = acts[..] else {
            panic!("expected a dispatch and a counting pass, got {acts:?}")
        };
        assert_eq!(r, Resubmit::CountDispatch { node, class });
        assert!(run(rs, 0, Input::Resubmit(r)).is_empty());
        node
    }

    #[test]
    fn proactive_counts_dispatches_minus_replies_and_keeps_lost_replies() {
        // §3.5/§4.6 Proactive, k = n so the choice is the exact minimum.
        let mut rs = tracking(4, 4, LoadTracking::Proactive);
        let t = single(1);
        let acts = run(&mut rs, 0, t);
        let [Action::Dispatch { node: first, .. }, Action::Resubmit(r)] = acts[..] else {
            panic!("{acts:?}")
        };
        assert_eq!(
            rs.load_table().load(first),
            Some(0),
            "the first pass only reads the counters"
        );
        run(&mut rs, 0, Input::Resubmit(r));
        assert_eq!(rs.load_table().load(first), Some(1));
        // Three more go to the three servers still at 0, then the fifth to any.
        let mut sent = vec![first];
        for id in 2..5 {
            sent.push(proactive_dispatch(&mut rs, id, 0));
        }
        sent.sort_unstable();
        assert_eq!(sent, vec![0, 1, 2, 3]);
        assert_eq!(rs.total_load(), 4);
        // A reply takes one off whatever LOAD says.
        assert!(run(&mut rs, 0, reply(2, 57, 3)).is_empty());
        assert_eq!(rs.load_table().load(2), Some(0));
        // Floors at 0: a duplicate reply cannot go negative.
        run(&mut rs, 0, reply(2, 0, 3));
        assert_eq!(rs.load_table().load(2), Some(0));
        // Replies of servers 0 and 3 arrive; server 1's is lost: its +1 stays
        // for good and every later choice avoids it.
        run(&mut rs, 0, reply(0, 0, 1));
        run(&mut rs, 0, reply(3, 0, 4));
        assert_eq!(
            (0..4)
                .map(|n| rs.load_table().load(n).unwrap())
                .collect::<Vec<_>>(),
            vec![0, 1, 0, 0]
        );
        let mut next: Vec<NodeId> = (10..13)
            .map(|id| proactive_dispatch(&mut rs, id, 0))
            .collect();
        next.sort_unstable();
        assert_eq!(next, vec![0, 2, 3], "the leaked count repels requests");
        assert_eq!(
            rs.pipeline().resubmissions,
            7,
            "one counting pass per request"
        );
        rs.load_table().check_invariants().unwrap();
        // Unknown servers are dropped in either pass.
        assert_eq!(
            run(&mut rs, 0, reply(9, 0, 0)),
            vec![Action::Drop(DropReason::UnknownNode)]
        );
        rs.control_remove_node(3);
        assert_eq!(
            run(
                &mut rs,
                0,
                Input::Resubmit(Resubmit::CountDispatch { node: 3, class: 0 })
            ),
            vec![Action::Drop(DropReason::UnknownNode)]
        );
    }

    #[test]
    fn proactive_counts_per_request_type_with_multi_queue() {
        let mut rs = RackSched::new(
            3,
            5,
            RackSchedConfig {
                k: 3,
                classes: 2,
                tracking: LoadTracking::Proactive,
                ..RackSchedConfig::default()
            },
        );
        let a = proactive_dispatch(&mut rs, 1, 1);
        assert_eq!(rs.load_table().class_load(a, 1), Some(1));
        assert_eq!(rs.load_table().class_load(a, 0), Some(0));
        // Type 0 counters are all 0, so type 0 may land on `a` again; type 1 may not.
        for id in 2..4 {
            assert_ne!(proactive_dispatch(&mut rs, id, 1), a);
        }
        run(
            &mut rs,
            0,
            Input::Reply {
                node: a,
                qlen: 40,
                class: 1,
                task: 1,
            },
        );
        assert_eq!(rs.load_table().class_load(a, 1), Some(0));
        assert_eq!(rs.total_load(), 2);
        rs.load_table().check_invariants().unwrap();
    }

    #[test]
    fn int2_herds_on_the_recorded_minimum_until_a_reply_moves_it() {
        let mut rs = tracking(5, 2, LoadTracking::Int2 { random_one_in: 0 });
        assert_eq!(rs.recorded_minimum(0), Some((0, u32::MAX)));
        for (node, q) in [(0, 3), (1, 2), (2, 5)] {
            assert!(run(&mut rs, 0, reply(node, q, 0)).is_empty());
        }
        assert_eq!(rs.recorded_minimum(0), Some((1, 2)));
        // Nothing changes at dispatch: every request herds onto server 1.
        for id in 0..20 {
            assert_eq!(
                one_dispatch(&run(&mut rs, 0, single(id))),
                (1, Decision::Other)
            );
        }
        // The recorded server's own reply refreshes its load but keeps it:
        // the switch knows no other minimum.
        run(&mut rs, 0, reply(1, 7, 0));
        assert_eq!(rs.recorded_minimum(0), Some((1, 7)));
        assert_eq!(one_dispatch(&run(&mut rs, 0, single(30))).0, 1);
        // A reply no larger takes over; a larger one does not.
        run(&mut rs, 0, reply(3, 7, 0));
        run(&mut rs, 0, reply(0, 9, 0));
        assert_eq!(rs.recorded_minimum(0), Some((3, 7)));
        for id in 40..50 {
            assert_eq!(one_dispatch(&run(&mut rs, 0, single(id))).0, 3);
        }
        assert_eq!(
            run(&mut rs, 0, reply(9, 0, 0)),
            vec![Action::Drop(DropReason::UnknownNode)]
        );
        assert_eq!(
            rs.recorded_minimum(0),
            Some((3, 7)),
            "unknown servers are ignored"
        );
        // Removing the recorded server restarts the entry on a live one.
        rs.control_remove_node(3);
        let (live, load) = rs.recorded_minimum(0).unwrap();
        assert!(rs.load_table().contains(live) && load == u32::MAX);
        run(&mut rs, 0, reply(4, 100, 0));
        assert_eq!(rs.recorded_minimum(0), Some((4, 100)));
        assert_eq!(one_dispatch(&run(&mut rs, 0, single(60))).0, 4);
        rs.load_table().check_invariants().unwrap();
        // A ToR that starts empty herds onto its first server, not node 0.
        let mut empty = tracking(0, 2, LoadTracking::Int2 { random_one_in: 0 });
        assert_eq!(
            run(&mut empty, 0, single(1)),
            vec![Action::Drop(DropReason::NoNodes)]
        );
        empty.control_add_node(5);
        assert_eq!(empty.recorded_minimum(0), Some((5, u32::MAX)));
        assert_eq!(one_dispatch(&run(&mut empty, 0, single(2))).0, 5);
    }

    #[test]
    fn int2_sends_one_in_n_requests_to_a_random_server() {
        // The artifact's exploration: predicted draw by draw from a clone of
        // the switch's random stream.
        let n = 8;
        let mut rs = tracking(n, 2, LoadTracking::Int2 { random_one_in: 4 });
        run(&mut rs, 0, reply(5, 0, 0));
        let mut explored = 0;
        for id in 0..2_000 {
            let mut probe = rs.rng.clone();
            let expect = if probe.below(4) == 0 {
                explored += 1;
                probe.below(n)
            } else {
                5
            };
            assert_eq!(one_dispatch(&run(&mut rs, 0, single(id))).0, expect);
        }
        assert!((400..600).contains(&explored), "{explored} of 2000");
    }

    #[test]
    fn int2_keeps_one_minimum_per_request_type() {
        let mut rs = RackSched::new(
            3,
            1,
            RackSchedConfig {
                classes: 2,
                tracking: LoadTracking::Int2 { random_one_in: 0 },
                ..RackSchedConfig::default()
            },
        );
        for (node, class, qlen) in [(0, 0, 4), (1, 0, 1), (2, 1, 3), (0, 1, 6)] {
            run(
                &mut rs,
                0,
                Input::Reply {
                    node,
                    qlen,
                    class,
                    task: 0,
                },
            );
        }
        assert_eq!(rs.recorded_minimum(0), Some((1, 1)));
        assert_eq!(rs.recorded_minimum(1), Some((2, 3)));
        let typed = |class| {
            Input::Task(TaskMeta {
                id: 1,
                first: true,
                last: true,
                class,
                ..TaskMeta::default()
            })
        };
        assert_eq!(one_dispatch(&run(&mut rs, 0, typed(0))).0, 1);
        assert_eq!(one_dispatch(&run(&mut rs, 0, typed(1))).0, 2);
    }

    #[test]
    fn int3_balances_on_the_reported_outstanding_work() {
        // INT3 is INT1's switch logic over work in ns rather than a count: a
        // server with one 500 µs request is busier than one with four 50 µs.
        let mut rs = tracking(2, 2, LoadTracking::Int3);
        run(&mut rs, 0, reply(0, 500_000, 0));
        run(&mut rs, 0, reply(1, 200_000, 0));
        for id in 0..10 {
            assert_eq!(
                one_dispatch(&run(&mut rs, 0, single(id))),
                (1, Decision::Sampled)
            );
        }
        assert_eq!(rs.load_table().load(1), Some(200_000));
    }

    #[test]
    fn many_classes_and_max_k_respect_the_switch_model() {
        let mut rs = RackSched::new(
            40,
            3,
            RackSchedConfig {
                k: MAX_K as u32,
                classes: 4,
                ..RackSchedConfig::default()
            },
        );
        let mut rng = Rng::new(1);
        for i in 0..2_000u64 {
            let node = rng.below(40);
            let class = rng.below(5) as u8;
            run(
                &mut rs,
                i,
                Input::Reply {
                    node,
                    qlen: rng.below(20),
                    class,
                    task: i,
                },
            );
            let t = TaskMeta {
                id: i,
                first: true,
                last: rng.chance(0.5),
                class,
                ..TaskMeta::default()
            };
            one_dispatch(&run(&mut rs, i, Input::Task(t)));
            if i % 97 == 0 {
                rs.control_remove_node(rng.below(40));
                rs.control_add_node(rng.below(45));
            }
        }
        rs.load_table().check_invariants().unwrap();
        assert_eq!(
            rs.pipeline().resubmissions,
            0,
            "RackSched decides in one pass"
        );
    }
}
