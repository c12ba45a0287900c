//! What a run measures, per pool, and how pools are combined.
//!
//! Each paper's metric keeps that paper's definition (DESIGN.md): the
//! *response time* is Horus's, from submission at the spine scheduler to
//! completion at the worker (Horus §4.1 "Methodology"); the *waiting time* is
//! the part of it before service starts (network, scheduler and node queues;
//! see docs/metrics.md). Counters
//! are small fixed arrays indexed by enums, so recording is a few adds and the
//! output order never depends on hashing.
//!
//! Tasks submitted during warm-up are "unmeasured": they still count in the
//! `*_total` counters (progress, message rates) but not in latencies or the
//! per-outcome counters.

mod hist;
mod summary;

pub use hist::{LatencyHist, RatioHist, QUANTILE_REL_ERROR, SIGFIG};
pub use summary::{throughput_at_target, ClassStats, ImbalanceStats, LatencyStats, Summary};

use netsched_core::dataplane::{Decision, DropReason};

/// Why a submitted task never completed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum AbortReason {
    /// Submitted to, or in flight at, a failed spine scheduler (Horus §5.3).
    DeadSpine,
    /// Its rack's leaf switch failed.
    DeadLeaf,
    /// Its worker (server) failed with the task queued or running.
    DeadWorker,
    /// A task or reply packet was lost on a link.
    Lost,
    /// An upper scheduler had no rack/node to send it to.
    NoSchedulerChoice,
    /// A leaf scheduler had no live worker to send it to.
    NoWorker,
    /// Still waiting inside a scheduler when the run ended: a central queue
    /// whose workers' idle replies were lost never hands it out.
    Stranded,
}

impl AbortReason {
    pub const COUNT: usize = 7;
    pub const ALL: [AbortReason; AbortReason::COUNT] = [
        AbortReason::DeadSpine,
        AbortReason::DeadLeaf,
        AbortReason::DeadWorker,
        AbortReason::Lost,
        AbortReason::NoSchedulerChoice,
        AbortReason::NoWorker,
        AbortReason::Stranded,
    ];

    pub fn name(self) -> &'static str {
        match self {
            AbortReason::DeadSpine => "dead_spine",
            AbortReason::DeadLeaf => "dead_leaf",
            AbortReason::DeadWorker => "dead_worker",
            AbortReason::Lost => "lost",
            AbortReason::NoSchedulerChoice => "no_scheduler_choice",
            AbortReason::NoWorker => "no_worker",
            AbortReason::Stranded => "stranded",
        }
    }
}

/// Packets counted per type (Horus §B Fig. 16 normalises state messages by the
/// task rate).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum MessageKind {
    /// One hop of a task packet between switches or to a worker.
    Task,
    /// A worker's reply (carries its queue length to the leaf).
    Reply,
    IdleAdd,
    IdleRemove,
    LoadUpdate,
}

impl MessageKind {
    pub const COUNT: usize = 5;
    pub const ALL: [MessageKind; MessageKind::COUNT] = [
        MessageKind::Task,
        MessageKind::Reply,
        MessageKind::IdleAdd,
        MessageKind::IdleRemove,
        MessageKind::LoadUpdate,
    ];

    pub fn name(self) -> &'static str {
        match self {
            MessageKind::Task => "task",
            MessageKind::Reply => "reply",
            MessageKind::IdleAdd => "idle_add",
            MessageKind::IdleRemove => "idle_remove",
            MessageKind::LoadUpdate => "load_update",
        }
    }
}

/// Scheduling layer: 0 = upper (spine, or the single layer of flat
/// policies), 1 = lower (leaf).
pub const LAYER_NAMES: [&str; 2] = ["spine", "leaf"];

/// Decision kinds in index order (see [`decision_index`]).
pub const DECISION_NAMES: [&str; 3] = ["idle", "sampled", "other"];

#[inline]
fn layer(upper: bool) -> usize {
    if upper {
        0
    } else {
        1
    }
}

#[inline]
pub fn decision_index(d: Decision) -> usize {
    match d {
        Decision::Idle => 0,
        Decision::Sampled => 1,
        Decision::Other => 2,
    }
}

/// Everything measured for one worker pool.
#[derive(Clone, Debug, PartialEq)]
pub struct PoolMetrics {
    /// [`PoolMetrics::MERGED`] for a merge of several pools.
    pub pool_id: u32,
    /// Pools folded into this one (1 for a single pool).
    pub pools: u32,
    pub workers: u64,
    /// Horus response time: submission at the spine to completion at the worker.
    pub response: LatencyHist,
    /// Time queued at the worker before service started.
    pub waiting: LatencyHist,
    /// Response time per task class; empty unless enabled by
    /// [`with_classes`](Self::with_classes) (each costs a histogram per pool).
    pub class_response: Vec<LatencyHist>,
    /// Measured (post-warm-up) tasks.
    pub submitted: u64,
    pub completed: u64,
    pub aborted: [u64; AbortReason::COUNT],
    /// All tasks, warm-up included.
    pub submitted_total: u64,
    pub completed_total: u64,
    pub aborted_total: u64,
    /// Data-plane drops by [`DropReason`] (all, warm-up included).
    pub drops: [u64; DropReason::ALL.len()],
    /// Resubmission passes requested per layer (all, warm-up included).
    pub resubmissions: [u64; 2],
    /// Measured tasks a layer's switch processed more than once, each
    /// counted once per layer whatever the number or reason of its extra
    /// passes (Horus Fig. 15, "fraction of resubmitted tasks").
    pub resubmitted_tasks: [u64; 2],
    /// Measured tasks processed more than once by a spine or a leaf, each
    /// counted once whatever the layers (Horus App. B: "the fraction of task
    /// packets that are processed twice by a spine or leaf switch", at most
    /// 100 % when every packet is resubmitted; the per-layer counts summed
    /// would count a task repeated at both layers twice).
    pub resubmitted_tasks_any: u64,
    /// Measured tasks' decisions per layer and kind.
    pub decisions: [[u64; 3]; 2],
    /// Packets by type (all, warm-up included).
    pub messages: [u64; MessageKind::COUNT],
    /// Switch pipeline passes per layer: [first passes, resubmission passes].
    pub passes: [[u64; 2]; 2],
    /// Control messages from the controller (Horus §5.3 Fig. 18a).
    pub controller_messages: u64,
    /// Queue imbalance: max / mean queue length over the pool's workers
    /// (Horus §5.2 Fig. 12a, sampled every 50 µs by the engine).
    pub imbalance: RatioHist,
    /// Imbalance samples skipped because every queue was empty (mean 0).
    pub imbalance_skipped: u64,
    /// Length of the measurement window, for throughput.
    pub window_ns: u64,
    /// Events the engine processed for this pool.
    pub events: u64,
}

impl PoolMetrics {
    /// The `pool_id` of metrics merged from several pools.
    pub const MERGED: u32 = u32::MAX;

    pub fn new(pool_id: u32, workers: u64) -> Self {
        PoolMetrics {
            pool_id,
            pools: 1,
            workers,
            response: LatencyHist::new(),
            waiting: LatencyHist::new(),
            class_response: Vec::new(),
            submitted: 0,
            completed: 0,
            aborted: [0; AbortReason::COUNT],
            submitted_total: 0,
            completed_total: 0,
            aborted_total: 0,
            drops: [0; DropReason::ALL.len()],
            resubmissions: [0; 2],
            resubmitted_tasks: [0; 2],
            resubmitted_tasks_any: 0,
            decisions: [[0; 3]; 2],
            messages: [0; MessageKind::COUNT],
            passes: [[0; 2]; 2],
            controller_messages: 0,
            imbalance: RatioHist::new(),
            imbalance_skipped: 0,
            window_ns: 0,
            events: 0,
        }
    }

    /// Also keep a response-time histogram per task class (RackSched §4.4
    /// Fig. 13c/d: GET and SCAN tails). Only worth it with more than one class.
    pub fn with_classes(pool_id: u32, workers: u64, classes: usize) -> Self {
        let mut m = Self::new(pool_id, workers);
        if classes > 1 {
            // One by one, so that each takes a thread's spare counters (a
            // clone would copy a fresh 60 KiB).
            m.class_response = (0..classes).map(|_| LatencyHist::new()).collect();
        }
        m
    }

    /// Shrink the latency histograms to what their samples need (see
    /// [`LatencyHist::compact`]); nothing reported changes.
    pub fn compact(&mut self) {
        self.response.compact();
        self.waiting.compact();
        for h in &mut self.class_response {
            h.compact();
        }
    }

    /// Set the measurement window (post-warm-up span during which tasks are
    /// submitted) that throughput is computed over.
    pub fn set_window(&mut self, start_ns: u64, end_ns: u64) {
        self.window_ns = end_ns.saturating_sub(start_ns);
    }

    #[inline]
    pub fn submit(&mut self, measured: bool) {
        self.submitted_total += 1;
        if measured {
            self.submitted += 1;
        }
    }

    #[inline]
    pub fn complete(&mut self, measured: bool, response_ns: u64, waiting_ns: u64, class: u8) {
        self.completed_total += 1;
        if measured {
            self.completed += 1;
            self.response.record(response_ns);
            self.waiting.record(waiting_ns);
            if let Some(h) = self.class_response.get_mut(class as usize) {
                h.record(response_ns);
            }
        }
    }

    #[inline]
    pub fn abort(&mut self, measured: bool, reason: AbortReason) {
        self.aborted_total += 1;
        if measured {
            self.aborted[reason as usize] += 1;
        }
    }

    #[inline]
    pub fn drop(&mut self, reason: DropReason) {
        self.drops[reason as usize] += 1;
    }

    /// A scheduling decision at the upper (`upper`) or lower layer.
    #[inline]
    pub fn decision(&mut self, upper: bool, d: Decision, measured: bool) {
        if measured {
            self.decisions[layer(upper)][decision_index(d)] += 1;
        }
    }

    /// A resubmission pass; `task` is `Some(measured)` when it is the first
    /// repeat pass of a task at this layer.
    #[inline]
    pub fn resubmission(&mut self, upper: bool, task: Option<bool>) {
        self.resubmissions[layer(upper)] += 1;
        if task == Some(true) {
            self.resubmitted_tasks[layer(upper)] += 1;
        }
    }

    /// A measured task's first repeat pass at any layer.
    #[inline]
    pub fn resubmitted_task_any_layer(&mut self) {
        self.resubmitted_tasks_any += 1;
    }

    #[inline]
    pub fn message(&mut self, kind: MessageKind) {
        self.messages[kind as usize] += 1;
    }

    #[inline]
    pub fn add_messages(&mut self, kind: MessageKind, n: u64) {
        self.messages[kind as usize] += n;
    }

    /// Pipeline pass counters of one scheduler instance.
    pub fn add_passes(&mut self, upper: bool, first: u64, resubmitted: u64) {
        let l = layer(upper);
        self.passes[l][0] += first;
        self.passes[l][1] += resubmitted;
    }

    /// One imbalance sample from the max and mean queue length; skipped when
    /// the mean is 0 (all queues empty: the ratio is undefined).
    #[inline]
    pub fn imbalance(&mut self, max: u32, mean: f64) {
        if mean > 0.0 {
            self.imbalance.record(max as f64 / mean);
        } else {
            self.imbalance_skipped += 1;
        }
    }

    /// One imbalance sample from the queue lengths of the pool's workers.
    pub fn imbalance_of(&mut self, queues: &[u32]) {
        if queues.is_empty() {
            self.imbalance_skipped += 1;
            return;
        }
        let max = queues.iter().copied().max().unwrap_or(0);
        let sum: u64 = queues.iter().map(|&q| q as u64).sum();
        self.imbalance(max, sum as f64 / queues.len() as f64);
    }

    pub fn completed_total(&self) -> u64 {
        self.completed_total
    }

    pub fn aborted_measured(&self) -> u64 {
        self.aborted.iter().sum()
    }

    /// Completed measured tasks per second over the window; 0 without one.
    pub fn throughput_per_s(&self) -> f64 {
        if self.window_ns == 0 {
            0.0
        } else {
            self.completed as f64 * 1e9 / self.window_ns as f64
        }
    }

    /// Add `other` into `self`, as if one pool had seen both; the result is
    /// labelled [`MERGED`](Self::MERGED). Workers add up;
    /// the window is the longer one (pools run side by side over the same
    /// simulated time, so the total throughput is the sum of completions over it).
    pub fn merge(&mut self, other: &PoolMetrics) {
        fn add<const N: usize>(a: &mut [u64; N], b: &[u64; N]) {
            for (x, y) in a.iter_mut().zip(b) {
                *x += y;
            }
        }
        self.pool_id = Self::MERGED;
        self.pools += other.pools;
        self.workers += other.workers;
        self.response.merge(&other.response);
        self.waiting.merge(&other.waiting);
        if self.class_response.len() < other.class_response.len() {
            self.class_response
                .resize(other.class_response.len(), LatencyHist::new());
        }
        for (a, b) in self.class_response.iter_mut().zip(&other.class_response) {
            a.merge(b);
        }
        self.submitted += other.submitted;
        self.completed += other.completed;
        add(&mut self.aborted, &other.aborted);
        self.submitted_total += other.submitted_total;
        self.completed_total += other.completed_total;
        self.aborted_total += other.aborted_total;
        add(&mut self.drops, &other.drops);
        add(&mut self.resubmissions, &other.resubmissions);
        add(&mut self.resubmitted_tasks, &other.resubmitted_tasks);
        self.resubmitted_tasks_any += other.resubmitted_tasks_any;
        for l in 0..2 {
            add(&mut self.decisions[l], &other.decisions[l]);
            add(&mut self.passes[l], &other.passes[l]);
        }
        add(&mut self.messages, &other.messages);
        self.controller_messages += other.controller_messages;
        self.imbalance.merge(&other.imbalance);
        self.imbalance_skipped += other.imbalance_skipped;
        self.window_ns = self.window_ns.max(other.window_ns);
        self.events += other.events;
    }

    /// All pools folded into one, in pool-id order whatever order `pools`
    /// is in, so the result does not depend on which thread finished first.
    pub fn merge_all<'a>(pools: impl IntoIterator<Item = &'a PoolMetrics>) -> PoolMetrics {
        let mut sorted: Vec<&PoolMetrics> = pools.into_iter().collect();
        sorted.sort_by_key(|p| p.pool_id);
        let mut acc = PoolMetrics::new(Self::MERGED, 0);
        acc.pools = 0;
        for p in sorted {
            acc.merge(p);
        }
        acc
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enum_indices_match_all() {
        for (i, r) in AbortReason::ALL.iter().enumerate() {
            assert_eq!(*r as usize, i);
        }
        for (i, m) in MessageKind::ALL.iter().enumerate() {
            assert_eq!(*m as usize, i);
        }
        for (i, d) in DropReason::ALL.iter().enumerate() {
            assert_eq!(*d as usize, i);
        }
        for (i, d) in [Decision::Idle, Decision::Sampled, Decision::Other]
            .into_iter()
            .enumerate()
        {
            assert_eq!(decision_index(d), i);
        }
    }

    #[test]
    fn counting_respects_warmup() {
        let mut m = PoolMetrics::with_classes(3, 10, 2);
        m.submit(false);
        m.submit(true);
        m.submit(true);
        m.complete(false, 1_000, 0, 0);
        m.complete(true, 2_000, 500, 1);
        m.abort(true, AbortReason::Lost);
        m.abort(false, AbortReason::DeadSpine);
        m.decision(true, Decision::Idle, true);
        m.decision(false, Decision::Sampled, false);
        m.resubmission(false, Some(true));
        m.resubmission(false, None);
        m.message(MessageKind::IdleAdd);
        m.drop(DropReason::LockHeld);
        assert_eq!((m.submitted, m.submitted_total), (2, 3));
        assert_eq!((m.completed, m.completed_total()), (1, 2));
        assert_eq!(m.response.count(), 1);
        assert_eq!(m.class_response[1].count(), 1);
        assert_eq!(m.class_response[0].count(), 0);
        assert_eq!(m.aborted_measured(), 1);
        assert_eq!(m.aborted_total, 2);
        assert_eq!(m.decisions, [[1, 0, 0], [0, 0, 0]]);
        assert_eq!(m.resubmissions, [0, 2]);
        assert_eq!(m.resubmitted_tasks, [0, 1]);
        assert_eq!(m.messages[MessageKind::IdleAdd as usize], 1);
        assert_eq!(m.drops[DropReason::LockHeld as usize], 1);
    }

    #[test]
    fn imbalance_samples() {
        let mut m = PoolMetrics::new(0, 4);
        m.imbalance_of(&[0, 0, 0, 0]);
        m.imbalance_of(&[4, 0, 0, 0]); // max 4 / mean 1
        m.imbalance_of(&[2, 2, 2, 2]); // perfectly balanced
        m.imbalance(3, 1.5);
        assert_eq!(m.imbalance_skipped, 1);
        assert_eq!(m.imbalance.count(), 3);
        assert!((m.imbalance.quantile(0.01) - 1.0).abs() < 1e-9);
        assert!((m.imbalance.quantile(0.5) - 2.0).abs() < 0.003);
        assert!((m.imbalance.quantile(0.99) - 4.0).abs() < 0.005);
    }

    #[test]
    fn merge_all_is_order_independent_and_sums() {
        let mut pools: Vec<PoolMetrics> = (0..5)
            .map(|i| {
                let mut m = PoolMetrics::new(i, 10 + i as u64);
                for k in 0..100u64 {
                    m.submit(true);
                    m.complete(true, 1_000 * (k + 1) * (i as u64 + 1), k, 0);
                }
                m.message(MessageKind::Reply);
                m.imbalance(2, 1.0);
                m.set_window(0, 1_000_000 * (i as u64 + 1));
                m
            })
            .collect();
        let a = PoolMetrics::merge_all(&pools);
        pools.reverse();
        let b = PoolMetrics::merge_all(&pools);
        assert_eq!(a, b);
        assert_eq!(a.completed, 500);
        assert_eq!(a.workers, 60);
        assert_eq!((a.pool_id, a.pools), (PoolMetrics::MERGED, 5));
        assert_eq!(a.window_ns, 5_000_000);
        assert_eq!(a.messages[MessageKind::Reply as usize], 5);
        let mut all = LatencyHist::new();
        for i in 0..5u64 {
            for k in 0..100u64 {
                all.record(1_000 * (k + 1) * (i + 1));
            }
        }
        assert_eq!(a.response, all);
        assert!((a.throughput_per_s() - 500.0 * 1e9 / 5e6).abs() < 1e-6);
    }
}
