//! The Horus mechanism's variable choices.
//!
//! The defaults are the mechanism of the paper (§3.3, §3.4, Alg. 1) and of the
//! authors' Tofino program (horus-scheduler/horus-p4). The authors' Python
//! simulator (horus-scheduler/horus-sim), which produced the paper's
//! simulation figures, makes other choices; each is an option here so that
//! its results can be reproduced and the difference explained
//! (docs/fidelity.md).

/// How a spine picks a rack from its idle list (Alg. 1 SCHEDULETASKIDLE).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(rename_all = "kebab-case")
)]
pub enum SpineIdlePick {
    /// `idleList[p-1]`, the rack that announced itself last (paper, P4).
    #[default]
    Last,
    /// A uniformly random slot of `idleList[0..p)` (horus-sim). On a switch:
    /// read `p`, then `idleList[rand % p]` one stage later.
    Random,
}

/// What a spine does with an idleRemove that finds the idleNodes lock held.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(rename_all = "kebab-case")
)]
pub enum RemoveLock {
    /// Alg. 1: the remove is dropped and the leaf re-sends it when a task
    /// shows the spine still believes it idle (§A.3).
    #[default]
    On,
    /// horus-sim: removes are atomic and never lost. Modelled as both passes
    /// of the remove run back to back, so nothing can interleave. Not what a
    /// switch does; for reproducing the authors' simulator.
    Off,
}

/// Which spine a leaf's idle state (idleAdd/idleRemove) is linked to.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(rename_all = "kebab-case")
)]
pub enum IdleLink {
    /// The spine of the leaf's group (§3.2: every leaf is linked to one spine).
    #[default]
    OwnGroup,
    /// A spine of the pool drawn at random each time the leaf announces it
    /// has idle workers; its idleRemove goes to the same spine (horus-sim;
    /// the P4 also draws the spine of an idle signal at random).
    RandomOfPool,
}

/// Whose idle workers a leaf's idle list holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(rename_all = "kebab-case")
)]
pub enum LeafIdleScope {
    /// The leaf's own rack (paper, P4).
    #[default]
    Rack,
    /// Every leaf of a pool shares one idle list, so a leaf can dispatch to
    /// an idle worker in another rack and its idle threshold reads the
    /// pool-wide count. This is horus-sim's `[set([])] * num_tors`, one
    /// Python set aliased by every leaf: a defect no switch can implement,
    /// kept only to reproduce the unmodified simulator.
    Pool,
}

/// The data-plane choices of a Horus leaf and spine.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct HorusOptions {
    pub spine_idle_pick: SpineIdlePick,
    /// T: a leaf sends idleRemove when its idle count drops to T and
    /// idleAdd when it rises above T. The paper and P4 use 0 (announce while
    /// any worker is idle); horus-sim uses 4.
    pub leaf_idle_threshold: u32,
    pub remove_lock: RemoveLock,
    /// Whether a reply that lifts the idle count above T announces the rack
    /// at once (§3.4, P4). horus-sim re-links a leaf only when a later task
    /// finds more than T idle workers (its reply-path announcement is
    /// commented out), which is then the A.3 re-send of the next first pass.
    pub announce_on_reply: bool,
    /// netsched's high-rate variant (policy `horus-tokens`, docs/fidelity.md):
    /// a leaf sends the spine one idle token per worker that joins its idle
    /// list, and the spine pops a token per idle-path task instead of
    /// peeking at a rack that stays listed. A token stands for one idle
    /// worker, so tasks in flight cannot herd onto a rack whose idle workers
    /// they outnumber, and no idleRemove is needed: the message budget is one
    /// token per idle transition. Off for the paper's mechanism.
    pub idle_tokens: bool,
    /// With idle tokens: a second token list for workers that owe exactly
    /// one task (sent when a worker's count drops from 2 to 1). The spine
    /// uses it when it holds no idle token, before its power-of-2, so a
    /// worker's next task can be on its way while it finishes the current
    /// one: the reply-token-task round trip no longer idles it.
    pub slot_tokens: bool,
    /// A task or reply lost on the wire leaves a leaf counting one task too
    /// many at that worker. When a worker reports an empty queue and nothing
    /// was dispatched to it for this long, whatever the leaf still counts as
    /// outstanding there was lost and is forgotten. Longer than any in-flight
    /// time; the connection table's timeout is the same order (§A.4).
    pub loss_resync_ns: u64,
    /// Soft state (netsched's addition; 0 = off, the paper's mechanism). A
    /// spine's view of a rack (idle listing, average load) is set only by
    /// the leaf's notices, which Horus sends on change (§3.4) and repairs
    /// only when a task shows the spine a wrong idle belief (§A.3): a lost
    /// or forged notice about a rack that gets no task is never corrected.
    /// With this set, a leaf re-sends its whole state (idle add or remove,
    /// and its load) every `soft_state_ns / 4` from its control-plane timer
    /// ([`crate::Control::tick`]), and a spine forgets what a rack has not
    /// refreshed for `soft_state_ns` (off its idle list, load back to 0).
    /// Neither touches the per-task path.
    pub soft_state_ns: u64,
}

impl Default for HorusOptions {
    fn default() -> Self {
        HorusOptions {
            spine_idle_pick: SpineIdlePick::Last,
            leaf_idle_threshold: 0,
            remove_lock: RemoveLock::On,
            announce_on_reply: true,
            idle_tokens: false,
            slot_tokens: false,
            loss_resync_ns: 10_000_000,
            soft_state_ns: 0,
        }
    }
}

impl HorusOptions {
    /// netsched's high-rate variant: idle tokens and slot tokens (see
    /// [`Self::idle_tokens`], [`Self::slot_tokens`]).
    pub fn idle_tokens() -> Self {
        HorusOptions {
            idle_tokens: true,
            slot_tokens: true,
            ..HorusOptions::default()
        }
    }

    /// How often a leaf refreshes its spine with [`Self::soft_state_ns`] on.
    pub fn refresh_interval_ns(&self) -> u64 {
        self.soft_state_ns / 4
    }

    /// The first option (by its config name) that the idle-token variant
    /// ([`Self::idle_tokens`]) has no use for but `self` sets to other than
    /// the paper's value: with one token per idle worker there is no idle
    /// threshold, no idle list to pick from, no idleRemove to lock and no
    /// announcement to defer. A driver refuses such a configuration by this
    /// name rather than ignoring it.
    pub fn unused_by_tokens(&self) -> Option<&'static str> {
        let paper = HorusOptions::default();
        [
            (
                "spine_idle_pick",
                self.spine_idle_pick != paper.spine_idle_pick,
            ),
            (
                "leaf_idle_threshold",
                self.leaf_idle_threshold != paper.leaf_idle_threshold,
            ),
            ("remove_lock", self.remove_lock != paper.remove_lock),
            (
                "announce_on_reply",
                self.announce_on_reply != paper.announce_on_reply,
            ),
        ]
        .into_iter()
        .find(|(_, set)| *set)
        .map(|(name, _)| name)
    }

    /// `self` with idle and slot tokens on (policy `horus-tokens`): the
    /// options tokens have no use for must be the paper's
    /// ([`Self::unused_by_tokens`]); the rest (`loss_resync_ns`) are kept.
    pub fn with_tokens(self) -> Self {
        HorusOptions {
            idle_tokens: true,
            slot_tokens: true,
            ..self
        }
    }

    /// The choices of the authors' simulator (horus-sim), except the
    /// driver-level ones ([`IdleLink`], [`LeafIdleScope`]).
    pub fn horus_sim() -> Self {
        HorusOptions {
            spine_idle_pick: SpineIdlePick::Random,
            leaf_idle_threshold: 4,
            remove_lock: RemoveLock::Off,
            announce_on_reply: false,
            ..HorusOptions::default()
        }
    }
}
