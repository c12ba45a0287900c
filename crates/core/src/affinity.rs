//! Request affinity: a multi-stage hash table built from register arrays, so
//! that insert, read and remove all run in the data plane.
//!
//! One table serves both papers: RackSched's ReqTable (§3.2, Alg. 2: n stages
//! of m slots, the first stage with a free slot wins, overflow falls back to
//! hash-based dispatch, the control plane sweeps stale entries) and the Horus
//! connection table for multi-packet tasks (§A.4: entries expire after a
//! timeout of tens of milliseconds, and a leaf also stores the spine the task
//! came from). An entry older than the timeout counts as free.

use crate::dataplane::NodeId;
use crate::switch::{Layout, Pass, RegisterArray, RegisterCell};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Entry {
    pub key: u64,
    pub node: NodeId,
    /// Extra per-entry datum (the Horus leaf's spine id).
    pub aux: u32,
    pub inserted_at: u64,
    pub used: bool,
}

impl RegisterCell for Entry {
    const BITS: u32 = 64 + 32 + 32 + 64 + 1;
}

/// Why [`Entry`] stays one cell (docs/switch-model.md): an insert must test
/// `used`, the key and the age of the entry in one stateful-ALU operation and
/// claim the slot in the same one, so key, stamp and flag cannot live in
/// separate arrays; at full width (64-bit key and timestamp) they are 129 bits.
/// A Tofino keeps a 32-bit key fingerprint and a 32-bit timestamp as one pair,
/// which admits fingerprint collisions and wraps the age: results change.
const ENTRY_IS_WIDE: &str = "claim tests used, key and age in one ALU op; a 32-bit fingerprint + 32-bit stamp pair would change results";

#[derive(Clone, Debug)]
pub struct AffinityTable {
    stages: Vec<RegisterArray<Entry>>,
    slots: u32,
    timeout_ns: u64,
    pub overflows: u64,
    pub expired_swept: u64,
}

/// A stage-specific hash (each stage of a real switch has its own hash unit).
#[inline]
pub fn stage_hash(key: u64, stage: u32) -> u64 {
    let mut z = key ^ (0x9E37_79B9_7F4A_7C15u64.wrapping_mul(stage as u64 + 1));
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl AffinityTable {
    /// `stages` consecutive pipeline stages of `layout`, one array each.
    pub fn new(layout: &mut Layout, stages: u32, slots_per_stage: u32, timeout_ns: u64) -> Self {
        assert!(
            stages > 0 && slots_per_stage > 0,
            "affinity table needs at least one slot"
        );
        const NAMES: [&str; 8] = [
            "affinity.0",
            "affinity.1",
            "affinity.2",
            "affinity.3",
            "affinity.4",
            "affinity.5",
            "affinity.6",
            "affinity.7",
        ];
        assert!(
            stages as usize <= NAMES.len(),
            "at most {} stages",
            NAMES.len()
        );
        AffinityTable {
            stages: (0..stages as usize)
                .map(|i| {
                    let stage = layout.stage();
                    layout.wide_array(
                        stage,
                        NAMES[i],
                        slots_per_stage as usize,
                        Entry::default(),
                        ENTRY_IS_WIDE,
                    )
                })
                .collect(),
            slots: slots_per_stage,
            timeout_ns,
            overflows: 0,
            expired_swept: 0,
        }
    }

    #[inline]
    fn slot(&self, key: u64, stage: usize) -> usize {
        (stage_hash(key, stage as u32) % self.slots as u64) as usize
    }

    #[inline]
    fn live(&self, e: &Entry, now: u64) -> bool {
        e.used && now.saturating_sub(e.inserted_at) <= self.timeout_ns
    }

    /// Insert `key -> node`; false if every stage's slot is taken (overflow).
    pub fn insert(&mut self, pass: &Pass, now: u64, key: u64, node: NodeId, aux: u32) -> bool {
        let timeout = self.timeout_ns;
        for i in 0..self.stages.len() {
            let slot = self.slot(key, i);
            let done = self.stages[i].update(pass, slot, |e| {
                let free = !e.used || now.saturating_sub(e.inserted_at) > timeout || e.key == key;
                if free {
                    *e = Entry {
                        key,
                        node,
                        aux,
                        inserted_at: now,
                        used: true,
                    };
                }
                free
            });
            if done {
                return true;
            }
        }
        self.overflows += 1;
        false
    }

    /// The entry for `key`, if live.
    pub fn lookup(&mut self, pass: &Pass, now: u64, key: u64) -> Option<Entry> {
        for i in 0..self.stages.len() {
            let slot = self.slot(key, i);
            let e = self.stages[i].read(pass, slot);
            if e.used && e.key == key && self.live(&e, now) {
                return Some(e);
            }
        }
        None
    }

    /// Remove `key`; returns the removed entry.
    pub fn remove(&mut self, pass: &Pass, key: u64) -> Option<Entry> {
        for i in 0..self.stages.len() {
            let slot = self.slot(key, i);
            let found = self.stages[i].update(pass, slot, |e| {
                if e.used && e.key == key {
                    let old = *e;
                    e.used = false;
                    Some(old)
                } else {
                    None
                }
            });
            if found.is_some() {
                return found;
            }
        }
        None
    }

    /// Control plane: clear entries older than the timeout (RackSched §3.2 "the
    /// switch control plane periodically checks the data plane to remove stale
    /// mappings"). Returns how many were cleared.
    pub fn control_sweep(&mut self, now: u64) -> u64 {
        let mut cleared = 0;
        for stage in &mut self.stages {
            for i in 0..stage.len() {
                let e = stage.peek(i);
                if e.used && now.saturating_sub(e.inserted_at) > self.timeout_ns {
                    stage.control_write(i, Entry::default());
                    cleared += 1;
                }
            }
        }
        self.expired_swept += cleared;
        cleared
    }

    /// Control plane: drop every entry pointing at `node` (server failure).
    pub fn control_forget_node(&mut self, node: NodeId) {
        for stage in &mut self.stages {
            for i in 0..stage.len() {
                let e = stage.peek(i);
                if e.used && e.node == node {
                    stage.control_write(i, Entry::default());
                }
            }
        }
    }

    /// Stages of the table (pipeline stages, one array each).
    pub fn stage_count(&self) -> u32 {
        self.stages.len() as u32
    }

    pub fn slots_per_stage(&self) -> u32 {
        self.slots
    }

    /// How long an entry lives (§A.4: tens of milliseconds).
    pub fn timeout_ns(&self) -> u64 {
        self.timeout_ns
    }

    /// Every cell, stage 0 first (`affinity.0`, `affinity.1`, ...), read by
    /// the control plane: crates/xdp installs these in its connection-table
    /// map and checks them after every packet.
    pub fn cells(&self) -> impl Iterator<Item = &Entry> + '_ {
        self.stages.iter().flat_map(|s| s.as_slice().iter())
    }

    pub fn occupancy(&self) -> usize {
        self.stages
            .iter()
            .map(|s| s.as_slice().iter().filter(|e| e.used).count())
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::switch::{Layout, Pipeline};

    #[test]
    fn insert_lookup_remove_and_expiry() {
        let mut pipe = Pipeline::new();
        let mut t = AffinityTable::new(&mut Layout::new(), 2, 4, 1_000);
        assert!(t.insert(&pipe.begin(), 0, 42, 7, 1));
        assert_eq!(
            t.lookup(&pipe.begin(), 10, 42).map(|e| (e.node, e.aux)),
            Some((7, 1))
        );
        assert_eq!(
            t.lookup(&pipe.begin(), 2_000, 42),
            None,
            "expired entries miss"
        );
        assert!(t.remove(&pipe.begin(), 42).is_some());
        assert_eq!(t.lookup(&pipe.begin(), 10, 42), None);
    }

    #[test]
    fn overflow_after_all_stages_full_and_sweep_frees() {
        let mut pipe = Pipeline::new();
        let mut t = AffinityTable::new(&mut Layout::new(), 2, 1, 100);
        assert!(t.insert(&pipe.begin(), 0, 1, 1, 0));
        assert!(t.insert(&pipe.begin(), 0, 2, 2, 0));
        assert!(!t.insert(&pipe.begin(), 0, 3, 3, 0));
        assert_eq!(t.overflows, 1);
        assert_eq!(t.control_sweep(1_000), 2);
        assert_eq!(t.occupancy(), 0);
    }
}
