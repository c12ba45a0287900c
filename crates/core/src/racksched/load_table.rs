//! RackSched's LoadTable (§3.3, §3.5, §3.6), shared by the ToR, the RS-H spine
//! and the power-of-k baseline.

use crate::affinity::stage_hash;
use crate::dataplane::NodeId;
use crate::fixed;
use crate::rng::Rng;
use crate::switch::{Layout, Pass, RegisterArray};

pub use crate::limits::MAX_SAMPLES;

const NO_SLOT: u32 = u32::MAX;

/// Hash-unit index for hash-based dispatch, distinct from the ReqTable stages
/// so that the fallback server is independent of the slot a request hashed to.
pub(super) const DISPATCH_HASH: u32 = 0x100;

const TOTAL_NAMES: [&str; MAX_SAMPLES] = [
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

const CLASS_NAMES: [&str; MAX_SAMPLES] = [
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

/// Draws `min(samples, count)` distinct slots in random order. Rejection keeps the
/// order uniformly random, so breaking ties towards the earlier sample (what a
/// comparison tree in the pipeline does) favours no server.
#[inline]
pub fn distinct_samples(
    rng: &mut Rng,
    count: u32,
    samples: usize,
    out: &mut [u32; MAX_SAMPLES],
) -> usize {
    let want = samples.min(count as usize).min(MAX_SAMPLES);
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

/// RackSched's LoadTable (§3.3, §3.5): one identical copy per sample so that
/// one pass can read every sample, per-type counters for multi-queue (§3.6), and the sum of
/// all counters for the RS-H rack average.
///
/// Servers occupy slots `0..count`; §3.4 "pre-allocate a large number of
/// registers ... and use another register to indicate the number of active
/// servers". Removing a server moves the last slot into its place so that
/// sampling stays uniform over active servers.
///
/// Stages: `count` and `slot_of`; the `class.j` copies; the `total.j` copies
/// (a multi-queue total moves by its type counter's delta); `sum` (moves by
/// the total's delta); then whatever the data plane places after it (the
/// ReqTable); `servers` last, because hash dispatch is the fallback of a
/// ReqTable insert that overflowed ([`LoadTable::with_between`]).
#[derive(Clone, Debug)]
pub struct LoadTable {
    samples: usize,
    classes: u32,
    /// Node -> slot, to apply a reply from a known source.
    slot_of: RegisterArray<u32>,
    count: RegisterArray<u32>,
    /// Per-(slot, type) counters with the node id, `samples` copies; empty with one type.
    class_load: Vec<RegisterArray<(NodeId, u32)>>,
    /// Per-slot total with the node id, `samples` copies.
    total: Vec<RegisterArray<(NodeId, u32)>>,
    /// Slot -> node for hash dispatch (§3.3, Fig. 6).
    servers: RegisterArray<NodeId>,
    /// Sum of all totals, maintained by deltas (the pipeline cannot add up an array).
    sum: RegisterArray<u64>,
}

impl LoadTable {
    /// `nodes` active nodes `0..nodes`, all at load 0.
    pub fn new(layout: &mut Layout, nodes: u32, samples: u32, classes: u32) -> Self {
        Self::with_between(layout, nodes, samples, classes, |_| ()).0
    }

    /// As [`LoadTable::new`], with `between` placing the arrays of the stages
    /// between `sum` and `servers` (the ReqTable of RackSched, whose overflow
    /// falls back to hash dispatch over `servers`).
    pub fn with_between<R>(
        layout: &mut Layout,
        nodes: u32,
        samples: u32,
        classes: u32,
        between: impl FnOnce(&mut Layout) -> R,
    ) -> (Self, R) {
        if let Err(e) = crate::limits::samples(samples) {
            panic!("samples: {e}");
        }
        if let Err(e) = crate::limits::classes(classes) {
            panic!("classes: {e}");
        }
        let n = nodes as usize;
        let c = if classes > 1 { classes as usize } else { 0 };
        let first = layout.stage();
        let count = layout.array(first, "loadtable.count", 1, 0);
        let slot_of = layout.array(first, "loadtable.slot_of", n, NO_SLOT);
        let class_stage = (c > 0).then(|| layout.stage());
        let class_load = class_stage
            .map(|stage| {
                (0..samples as usize)
                    .map(|j| layout.array(stage, CLASS_NAMES[j], n * c, (0, 0)))
                    .collect()
            })
            .unwrap_or_default();
        let totals = layout.stage();
        let total = (0..samples as usize)
            .map(|j| layout.array(totals, TOTAL_NAMES[j], n, (0, 0)))
            .collect();
        let sum = layout.stage();
        let sum = layout.array(sum, "loadtable.sum", 1, 0);
        let placed = between(layout);
        let servers = layout.stage();
        let mut t = LoadTable {
            samples: samples as usize,
            classes,
            slot_of,
            count,
            class_load,
            total,
            servers: layout.array(servers, "loadtable.servers", n, 0),
            sum,
        };
        for node in 0..nodes {
            t.control_add(node);
        }
        (t, placed)
    }

    pub fn samples(&self) -> usize {
        self.samples
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

    /// Power-of-k (§3.3, Fig. 8): the least loaded of `min(samples, active)` distinct
    /// samples on the counters of `class` (its total if the type is not
    /// configured). Requires `active > 0`. Returns the node and its load.
    #[inline]
    pub fn choose(&mut self, pass: &Pass, rng: &mut Rng, active: u32, class: u8) -> (NodeId, u32) {
        debug_assert!(active > 0);
        let mut slots = [0u32; MAX_SAMPLES];
        let m = distinct_samples(rng, active, self.samples, &mut slots);
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
