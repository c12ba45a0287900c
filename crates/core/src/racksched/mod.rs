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
//! allows one access per pass, so the table exists in one identical copy per
//! sample, one per stage, sample `j` reads copy `j`, and every update writes
//! all copies.
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

mod leaf;
mod load_table;
mod spine;

pub use leaf::RackSched;
pub use load_table::{average_16_16, distinct_samples, LoadTable, Report, MAX_SAMPLES};
pub use spine::RackSchedSpine;

use crate::affinity::AffinityTable;
use crate::dataplane::{Action, Decision, DropReason, NodeId, Outbox, TaskMeta};
use crate::rng::Rng;
use crate::switch::{Layout, Pass, Pipeline, RegisterArray};

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
    pub fn build(&self, layout: &mut Layout) -> AffinityTable {
        AffinityTable::new(layout, self.stages, self.slots_per_stage, self.timeout_ns)
    }
}

/// Configuration of a RackSched ToR scheduler.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RackSchedConfig {
    /// Samples per decision (power-of-k, §3.3), `1..=MAX_SAMPLES`.
    pub samples: u32,
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
            samples: 2,
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

/// What the ToR, the RS-H spine and the instant power-of-k baseline are
/// built on: a pipeline laid out as a LoadTable over `nodes` (§3.3) with
/// `between` placing the arrays that stand between its `sum` and `servers`
/// stages (the ReqTable, §3.4), and the switch's random source.
pub(crate) fn pipeline_with_load_table<R>(
    nodes: u32,
    seed: u64,
    samples: u32,
    classes: u32,
    between: impl FnOnce(&mut Layout) -> R,
) -> (Pipeline, Rng, LoadTable, R) {
    let mut layout = Layout::new();
    let (loads, placed) = LoadTable::with_between(&mut layout, nodes, samples, classes, between);
    (Pipeline::with_layout(layout), Rng::new(seed), loads, placed)
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
        // `count` is in the first stage, before the ReqTable: read it on the
        // way in, in case the lookup misses.
        let active = loads.active(pass);
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
                if active == 0 {
                    out.push(Action::Drop(DropReason::NoNodes));
                    return None;
                }
                loads.hashed(pass, active, task.id)
            }
        };
        out.push(Action::dispatch(node, task, Decision::Other));
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
        out.push(Action::dispatch(node, task, decision));
        Some(node)
    } else {
        // ReqTable full: the continuations will miss, so the first packet must
        // already go where the hash sends them.
        let node = loads.hashed(pass, active, task.id);
        out.push(Action::dispatch(node, task, Decision::Other));
        Some(node)
    }
}

#[cfg(test)]
mod tests;
