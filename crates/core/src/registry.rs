//! One registry of the push-family data planes: the policy names every
//! driver accepts, the parameters they take (validated once, here), and one
//! enum holding any of the data planes, built from a policy, a layer and
//! those parameters. The simulator, the runtime daemon and the controller
//! use this and list no data planes of their own.
//!
//! A policy names a *system*: Horus (spine + leaf, NSDI'24 §3), RS-H (a
//! RackSched spine over RackSched leaves, Horus §4.1), RS-LB (a uniform
//! spread over RackSched leaves), or one flat scheduler over a pool's
//! workers (the papers' baselines). [`Policy::plane_at`] says which data
//! plane runs at each layer.

use crate::baselines::{
    CentralQueue, IdleOnly, Jbsq, Jiq, Jsq, PowKInstant, RandomDispatch, RoundRobin,
};
use crate::control::Control;
use crate::horus::{ConnTableConfig, HorusLeaf, HorusOptions, HorusSpine};
use crate::racksched::{LoadTracking, RackSched, RackSchedConfig, RackSchedSpine, ReqTableConfig};
use crate::switch::Pipeline;
use crate::Nanos;
use crate::{DataPlane, Input, NodeId, Outbox};

/// Where a [`registered!`] data plane runs in a pool (Horus §3.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// One scheduler over all of a pool's workers, as the flat baselines.
    Flat,
    /// One per rack over its workers, under RS-LB's spine, which spreads
    /// tasks uniformly over racks (Horus §4.1).
    Leaf,
}

/// What a data plane gives the registry to be run by every driver: how to
/// build it and where it runs. Besides it implements [`DataPlane`] (the
/// packets) and [`Control`] (nodes added and removed).
pub trait Registered: DataPlane + Control + Send + Sized {
    /// Where it runs.
    const SHAPE: Shape;
    /// Over nodes `0..nodes` (workers), seeded. `params` passed
    /// [`PlaneParams::validate`]; a data plane reads what it needs of them.
    fn build(nodes: u32, seed: u64, params: &PlaneParams) -> Self;
}

/// Declares every added data plane's module (`src/registry/<module>.rs`)
/// and makes its policy one of [`Policy`], its data plane one of [`Plane`]:
/// `module::Type = "policy-name"`, one line each.
macro_rules! registered {
    ($($module:ident :: $plane:ident = $name:literal),* $(,)?) => {
        $(pub mod $module;)*

        /// The policies of [`registered!`], one per line there.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Extra {
            $($plane),*
        }

        impl Extra {
            pub const ALL: [Extra; [$($name),*].len()] = [$(Extra::$plane),*];

            pub const fn name(self) -> &'static str {
                match self {
                    $(Extra::$plane => $name),*
                }
            }

            pub fn shape(self) -> Shape {
                match self {
                    $(Extra::$plane => <$module::$plane as Registered>::SHAPE),*
                }
            }

            fn build(self, nodes: u32, seed: u64, params: &PlaneParams) -> ExtraPlane {
                match self {
                    $(Extra::$plane => {
                        ExtraPlane::$plane(<$module::$plane as Registered>::build(nodes, seed, params))
                    })*
                }
            }
        }

        /// The data planes of [`registered!`]: what [`Plane::Extra`] holds.
        pub enum ExtraPlane {
            $($plane($module::$plane)),*
        }

        macro_rules! each_extra {
            ($self:expr, $dp:ident => $e:expr) => {
                match $self {
                    $(ExtraPlane::$plane($dp) => $e),*
                }
            };
        }
    };
}

// Researchers' data planes, one line each: `module::Type = "policy-name"`,
// the module in `src/registry/<module>.rs` (docs/extending.md).
registered! {
    pow3_idle::Pow3Idle = "pow3-idle",
}

impl DataPlane for ExtraPlane {
    #[inline]
    fn handle(&mut self, now: Nanos, input: Input, out: &mut Outbox) {
        each_extra!(self, dp => dp.handle(now, input, out))
    }

    fn pipeline(&self) -> &Pipeline {
        each_extra!(self, dp => dp.pipeline())
    }

    fn writes_state_only(&self, input: &Input) -> bool {
        each_extra!(self, dp => dp.writes_state_only(input))
    }
}

impl Control for ExtraPlane {
    fn add_node(&mut self, node: NodeId, weight: u32, now: Nanos, out: &mut Outbox) {
        each_extra!(self, dp => dp.add_node(node, weight, now, out))
    }

    fn remove_node(&mut self, node: NodeId, now: Nanos, out: &mut Outbox) {
        each_extra!(self, dp => dp.remove_node(node, now, out))
    }

    fn resync(&mut self) -> Option<(bool, u32)> {
        each_extra!(self, dp => dp.resync())
    }

    fn tick(&mut self, now: Nanos, out: &mut Outbox) {
        each_extra!(self, dp => dp.tick(now, out))
    }
}

/// Configs name a policy by [`Policy::name`]; an unknown name is serde's
/// "unknown variant" error listing [`Policy::NAMES`].
#[cfg(feature = "serde")]
impl serde::Serialize for Policy {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

#[cfg(feature = "serde")]
impl<'de> serde::Deserialize<'de> for Policy {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Policy, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        Policy::parse(&s).map_err(|_| serde::de::Error::unknown_variant(&s, &Policy::NAMES))
    }
}

/// A scheduling system, by the name configs use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Policy {
    /// Horus spine + leaf schedulers (NSDI'24 §3).
    Horus,
    /// Horus with idle tokens: netsched's variant that holds at high task
    /// rates (`HorusOptions::idle_tokens`, docs/fidelity.md).
    HorusTokens,
    /// RackSched hierarchically at spines and leaves (Horus §4.1): leaves
    /// report their rack load to every spine after each reply.
    RsH,
    /// A uniformly random rack, then RackSched inside it (Horus §4.1; RS-R
    /// in §C).
    RsLb,
    /// RS-LB, named for single-rack experiments: a RackSched ToR scheduler
    /// per rack (RackSched OSDI'20).
    Racksched,
    /// Uniformly random worker.
    Random,
    /// Round robin over the pool's workers.
    RoundRobin,
    /// Ideal join-shortest-queue with a zero-delay view of every queue.
    Jsq,
    /// Join-idle-queue (Lu et al. 2011).
    Jiq,
    /// Power-of-k over the pool's workers with instant (zero-delay) updates.
    Pow2Instant,
    /// Power-of-k over loads that replies carry (Horus §C "DU"): RackSched's
    /// data plane over the flat pool.
    Pow2Delayed,
    /// Idle list, random when none is idle (Horus §C).
    IdleOnly,
    /// One central FCFS queue over all workers (M/M/c with zero delay).
    Central,
    /// R2P2's JBSQ(k) router (RackSched §4.5): a queue in the scheduler, at
    /// most `jbsq_bound` tasks outstanding per node.
    R2p2,
    /// A data plane added in one line of [`registered!`] (docs/extending.md).
    Extra(Extra),
}

/// Where a data plane sits: above racks, or in front of a rack's workers
/// (Horus §3.1). Configs and the runtime's control protocol call it an
/// instance's `role` (`spine`, `leaf`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(rename_all = "kebab-case")
)]
pub enum Layer {
    Spine,
    Leaf,
}

/// The data planes of the registry, one per variant of [`Plane`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PlaneKind {
    HorusSpine,
    HorusLeaf,
    RackSchedSpine,
    RackSched,
    /// Uniformly random: a flat policy over workers, or RS-LB's spread over
    /// racks (`UniformLb` is the same data plane).
    Random,
    RoundRobin,
    Jsq,
    Jiq,
    PowK,
    IdleOnly,
    Central,
    Jbsq,
    Extra(Extra),
}

/// A policy name no data plane answers to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownPolicy(pub String);

impl std::fmt::Display for UnknownPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names = Policy::ALL.map(|p| p.name());
        f.write_str(&crate::unknown_name::unknown(
            "policy",
            "push policies",
            &self.0,
            &names,
        ))
    }
}

impl std::error::Error for UnknownPolicy {}

/// The policies written out in this file; [`Policy::ALL`] adds the
/// [`registered!`] ones after them.
const BUILT_IN: [Policy; 14] = [
    Policy::Horus,
    Policy::HorusTokens,
    Policy::RsH,
    Policy::RsLb,
    Policy::Racksched,
    Policy::Random,
    Policy::RoundRobin,
    Policy::Jsq,
    Policy::Jiq,
    Policy::Pow2Instant,
    Policy::Pow2Delayed,
    Policy::IdleOnly,
    Policy::Central,
    Policy::R2p2,
];

impl Policy {
    /// Every policy, built-in first, then the [`registered!`] ones in their
    /// order there: what `--help`, name checks and suggestions list.
    pub const ALL: [Policy; BUILT_IN.len() + Extra::ALL.len()] = {
        let mut all = [Policy::Horus; BUILT_IN.len() + Extra::ALL.len()];
        let mut i = 0;
        while i < BUILT_IN.len() {
            all[i] = BUILT_IN[i];
            i += 1;
        }
        let mut j = 0;
        while j < Extra::ALL.len() {
            all[i + j] = Policy::Extra(Extra::ALL[j]);
            j += 1;
        }
        all
    };

    /// Every policy's name, in [`Policy::ALL`]'s order.
    pub const NAMES: [&'static str; Policy::ALL.len()] = {
        let mut names = [""; Policy::ALL.len()];
        let mut i = 0;
        while i < names.len() {
            names[i] = Policy::ALL[i].name();
            i += 1;
        }
        names
    };

    pub const fn name(self) -> &'static str {
        match self {
            Policy::Horus => "horus",
            Policy::HorusTokens => "horus-tokens",
            Policy::RsH => "rs-h",
            Policy::RsLb => "rs-lb",
            Policy::Racksched => "racksched",
            Policy::Random => "random",
            Policy::RoundRobin => "round-robin",
            Policy::Jsq => "jsq",
            Policy::Jiq => "jiq",
            Policy::Pow2Instant => "pow2-instant",
            Policy::Pow2Delayed => "pow2-delayed",
            Policy::IdleOnly => "idle-only",
            Policy::Central => "central",
            Policy::R2p2 => "r2p2",
            Policy::Extra(e) => e.name(),
        }
    }

    pub fn parse(s: &str) -> Result<Policy, UnknownPolicy> {
        Policy::ALL
            .into_iter()
            .find(|p| p.name() == s)
            .ok_or_else(|| UnknownPolicy(s.to_string()))
    }

    /// One scheduler over all workers of a pool rather than spine + leaf.
    pub fn is_flat(self) -> bool {
        match self {
            Policy::Extra(e) => e.shape() == Shape::Flat,
            _ => !matches!(
                self,
                Policy::Horus
                    | Policy::HorusTokens
                    | Policy::RsH
                    | Policy::RsLb
                    | Policy::Racksched
            ),
        }
    }

    /// Runs Horus's leaf and spine data planes (with any options).
    pub fn is_horus(self) -> bool {
        matches!(self, Policy::Horus | Policy::HorusTokens)
    }

    /// Ideal policies that see queue changes with zero delay.
    pub fn sees_queues_instantly(self) -> bool {
        matches!(self, Policy::Jsq | Policy::Pow2Instant)
    }

    /// Runs RackSched's ToR data plane (whose load tracking is configurable).
    pub fn uses_racksched_tor(self) -> bool {
        matches!(
            self,
            Policy::RsH | Policy::RsLb | Policy::Racksched | Policy::Pow2Delayed
        )
    }

    /// The data plane this policy runs at `layer`. A flat policy runs the
    /// same one wherever it is placed.
    pub fn plane_at(self, layer: Layer) -> PlaneKind {
        match (self, layer) {
            (Policy::Horus | Policy::HorusTokens, Layer::Spine) => PlaneKind::HorusSpine,
            (Policy::Horus | Policy::HorusTokens, Layer::Leaf) => PlaneKind::HorusLeaf,
            (Policy::RsH, Layer::Spine) => PlaneKind::RackSchedSpine,
            (Policy::RsLb | Policy::Racksched, Layer::Spine) => PlaneKind::Random,
            (Policy::RsH | Policy::RsLb | Policy::Racksched, Layer::Leaf) => PlaneKind::RackSched,
            (Policy::Random, _) => PlaneKind::Random,
            (Policy::RoundRobin, _) => PlaneKind::RoundRobin,
            (Policy::Jsq, _) => PlaneKind::Jsq,
            (Policy::Jiq, _) => PlaneKind::Jiq,
            (Policy::Pow2Instant, _) => PlaneKind::PowK,
            (Policy::Pow2Delayed, _) => PlaneKind::RackSched,
            (Policy::IdleOnly, _) => PlaneKind::IdleOnly,
            (Policy::Central, _) => PlaneKind::Central,
            (Policy::R2p2, _) => PlaneKind::Jbsq,
            // RS-LB's spread over racks above a leaf-level data plane.
            (Policy::Extra(e), Layer::Spine) if e.shape() == Shape::Leaf => PlaneKind::Random,
            (Policy::Extra(e), _) => PlaneKind::Extra(e),
        }
    }
}

/// A parameter value a data plane refuses: the field it came from (as the
/// configs name it) and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParamError {
    pub field: &'static str,
    pub msg: String,
}

impl std::fmt::Display for ParamError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.field, self.msg)
    }
}

impl std::error::Error for ParamError {}

/// Everything a data plane is built from besides its nodes and seed, with
/// one meaning and one set of limits for every driver.
#[derive(Clone, Copy, Debug)]
pub struct PlaneParams {
    /// Samples per power-of-k decision (RackSched §3.3, Horus's spine and
    /// leaf use 2): `1..=`[`PlaneParams::MAX_SAMPLES`].
    pub samples: u32,
    /// JBSQ's bound on tasks outstanding per node (R2P2, RackSched §4.5).
    pub jbsq_bound: u32,
    /// RackSched request types with their own load counters (§3.6).
    pub classes: u32,
    /// How RackSched's LoadTable learns server loads (§3.5, §4.6).
    pub tracking: LoadTracking,
    /// Horus's mechanism choices (policy `horus`; `horus-tokens` adds its
    /// idle and slot tokens to them).
    pub horus: HorusOptions,
    /// Horus's connection table (§A.4).
    pub conn_table: ConnTableConfig,
    /// RackSched's ReqTable (§3.4).
    pub req_table: ReqTableConfig,
    /// Tasks a central queue or JBSQ router holds at most.
    pub queue_capacity: usize,
}

impl Default for PlaneParams {
    fn default() -> Self {
        PlaneParams {
            samples: 2,
            jbsq_bound: Jbsq::DEFAULT_BOUND,
            classes: 1,
            tracking: LoadTracking::default(),
            horus: HorusOptions::default(),
            conn_table: ConnTableConfig::default(),
            req_table: ReqTableConfig::default(),
            queue_capacity: CentralQueue::DEFAULT_CAPACITY,
        }
    }
}

impl PlaneParams {
    /// The most samples a power-of-k decision draws (one register pass
    /// reads at most this many load cells).
    pub const MAX_SAMPLES: u32 = crate::limits::MAX_SAMPLES as u32;
    /// RackSched's TYPE field is one byte.
    pub const MAX_CLASSES: u32 = crate::limits::MAX_CLASSES;

    /// Refuses what a data plane would refuse (with a panic) at build time,
    /// by the checks its constructors assert (`crate::limits`).
    pub fn validate(&self) -> Result<(), ParamError> {
        let err = |field, msg: String| Err(ParamError { field, msg });
        let checks = [
            ("samples", crate::limits::samples(self.samples)),
            ("jbsq_bound", crate::limits::jbsq_bound(self.jbsq_bound)),
            ("classes", crate::limits::classes(self.classes)),
        ];
        for (field, check) in checks {
            if let Err(e) = check {
                return err(field, e.to_string());
            }
        }
        if self.queue_capacity == 0 {
            return err("queue_capacity", "must be at least 1".into());
        }
        Ok(())
    }

    fn racksched(&self, report_load: bool) -> RackSchedConfig {
        RackSchedConfig {
            samples: self.samples,
            classes: self.classes,
            req_table: self.req_table,
            report_load,
            tracking: self.tracking,
        }
    }

    /// Policy `horus-tokens` is the configured options with idle and slot
    /// tokens on; drivers refuse the options tokens cannot take first
    /// ([`HorusOptions::unused_by_tokens`]).
    fn horus_options(&self, policy: Policy) -> HorusOptions {
        match policy {
            Policy::HorusTokens => self.horus.with_tokens(),
            _ => self.horus,
        }
    }
}

/// Any push-family data plane: what a driver holds per scheduler instance.
/// Dispatch is a `match`, not a virtual call, on the simulator's hot path.
#[allow(clippy::large_enum_variant)]
pub enum Plane {
    HorusSpine(HorusSpine),
    HorusLeaf(HorusLeaf),
    RackSchedSpine(RackSchedSpine),
    /// RackSched's ToR scheduler; also power-of-k with reply-only updates
    /// over a flat pool (`pow2-delayed`).
    RackSched(RackSched),
    /// Uniformly random over workers, or over racks (RS-LB's `UniformLb`).
    Random(RandomDispatch),
    RoundRobin(RoundRobin),
    Jsq(Jsq),
    Jiq(Jiq),
    PowK(PowKInstant),
    IdleOnly(IdleOnly),
    Central(CentralQueue),
    Jbsq(Jbsq),
    /// A [`registered!`] data plane.
    Extra(ExtraPlane),
}

macro_rules! each_plane {
    ($self:expr, $dp:ident => $e:expr) => {
        match $self {
            Plane::HorusSpine($dp) => $e,
            Plane::HorusLeaf($dp) => $e,
            Plane::RackSchedSpine($dp) => $e,
            Plane::RackSched($dp) => $e,
            Plane::Random($dp) => $e,
            Plane::RoundRobin($dp) => $e,
            Plane::Jsq($dp) => $e,
            Plane::Jiq($dp) => $e,
            Plane::PowK($dp) => $e,
            Plane::IdleOnly($dp) => $e,
            Plane::Central($dp) => $e,
            Plane::Jbsq($dp) => $e,
            Plane::Extra($dp) => $e,
        }
    };
}

impl Plane {
    /// `policy`'s data plane at `layer` over nodes `0..weights.len()`, node
    /// n standing for `weights[n]` workers (only a Horus spine's 1/w uses
    /// the weights; §A.2). `params` must have passed
    /// [`PlaneParams::validate`].
    pub fn build(
        policy: Policy,
        layer: Layer,
        weights: &[u32],
        seed: u64,
        params: &PlaneParams,
    ) -> Plane {
        let n = weights.len() as u32;
        let p = params;
        match policy.plane_at(layer) {
            PlaneKind::HorusSpine => Plane::HorusSpine(HorusSpine::with_options(
                weights,
                seed,
                p.conn_table,
                p.horus_options(policy),
            )),
            PlaneKind::HorusLeaf => Plane::HorusLeaf(HorusLeaf::with_options(
                n,
                seed,
                p.conn_table,
                p.horus_options(policy),
            )),
            // Soft state for RS-H as for Horus (`soft_state_ns`; the
            // simulator's default is off).
            PlaneKind::RackSchedSpine => Plane::RackSchedSpine(
                RackSchedSpine::new(n, seed, p.samples, p.req_table)
                    .with_soft_state(p.horus.soft_state_ns),
            ),
            PlaneKind::RackSched => {
                let rs_h = policy == Policy::RsH;
                Plane::RackSched(
                    RackSched::new(n, seed, p.racksched(rs_h)).with_soft_state(if rs_h {
                        p.horus.soft_state_ns
                    } else {
                        0
                    }),
                )
            }
            PlaneKind::Random => Plane::Random(RandomDispatch::new(n, seed)),
            PlaneKind::RoundRobin => Plane::RoundRobin(RoundRobin::new(n, seed)),
            PlaneKind::Jsq => Plane::Jsq(Jsq::new(n, seed)),
            PlaneKind::Jiq => Plane::Jiq(Jiq::new(n, seed)),
            PlaneKind::PowK => Plane::PowK(PowKInstant::new(n, p.samples, seed)),
            PlaneKind::IdleOnly => Plane::IdleOnly(IdleOnly::new(n, seed)),
            // FCFS and longest-waiting-node-first: no random choice to seed.
            PlaneKind::Central => Plane::Central(CentralQueue::central(n, p.queue_capacity)),
            PlaneKind::Jbsq => Plane::Jbsq(Jbsq::new(n, p.jbsq_bound, p.queue_capacity)),
            PlaneKind::Extra(e) => Plane::Extra(e.build(n, seed, p)),
        }
    }

    /// A Horus spine over all of a pool's racks whose power-of-2 covers only
    /// the racks `in_group` (the authors' simulator's random idle link on a
    /// multi-spine pool, `IdleLink::RandomOfPool`).
    pub fn horus_spine_of_group(
        policy: Policy,
        rack_workers: &[u32],
        in_group: &[bool],
        seed: u64,
        params: &PlaneParams,
    ) -> Plane {
        Plane::HorusSpine(HorusSpine::with_group(
            rack_workers,
            in_group,
            seed,
            params.conn_table,
            params.horus_options(policy),
        ))
    }

    /// Pass counters of this instance's pipeline: (first passes,
    /// resubmissions).
    pub fn passes(&self) -> (u64, u64) {
        let p = self.pipeline();
        (p.first_passes, p.resubmissions)
    }

    /// Length of the idle list, for data planes that keep one (Horus).
    pub fn idle_len(&self) -> Option<u32> {
        match self {
            Plane::HorusSpine(p) => Some(p.idle_nodes().len()),
            Plane::HorusLeaf(p) => Some(p.idle_nodes().len()),
            _ => None,
        }
    }

    /// Workers behind a Horus leaf (its rack's weight at the spine, §A.2).
    pub fn workers(&self) -> Option<u32> {
        match self {
            Plane::HorusLeaf(l) => Some(l.workers()),
            _ => None,
        }
    }
}

impl DataPlane for Plane {
    #[inline]
    fn handle(&mut self, now: Nanos, input: Input, out: &mut Outbox) {
        each_plane!(self, dp => dp.handle(now, input, out))
    }

    fn pipeline(&self) -> &Pipeline {
        each_plane!(self, dp => dp.pipeline())
    }

    #[inline]
    fn writes_state_only(&self, input: &Input) -> bool {
        each_plane!(self, dp => dp.writes_state_only(input))
    }
}

impl Control for Plane {
    fn add_node(&mut self, node: NodeId, weight: u32, now: Nanos, out: &mut Outbox) {
        each_plane!(self, dp => dp.add_node(node, weight, now, out))
    }

    fn remove_node(&mut self, node: NodeId, now: Nanos, out: &mut Outbox) {
        each_plane!(self, dp => dp.remove_node(node, now, out))
    }

    fn resync(&mut self) -> Option<(bool, u32)> {
        each_plane!(self, dp => dp.resync())
    }

    fn tick(&mut self, now: Nanos, out: &mut Outbox) {
        each_plane!(self, dp => dp.tick(now, out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_names_are_refused() {
        for p in Policy::ALL {
            assert_eq!(Policy::parse(p.name()), Ok(p));
        }
        let e = Policy::parse("jbsq").unwrap_err().to_string();
        assert!(
            e.contains("unknown policy `jbsq`") && e.contains("r2p2"),
            "{e}"
        );
    }

    #[test]
    fn every_layered_policy_has_a_leaf_plane_and_flat_ones_run_one_plane() {
        for p in Policy::ALL {
            let (s, l) = (p.plane_at(Layer::Spine), p.plane_at(Layer::Leaf));
            assert_eq!(p.is_flat(), s == l, "{p:?}: {s:?} / {l:?}");
        }
        assert_eq!(
            Policy::RsH.plane_at(Layer::Spine),
            PlaneKind::RackSchedSpine
        );
        assert_eq!(Policy::Racksched.plane_at(Layer::Spine), PlaneKind::Random);
    }

    #[test]
    fn refused_values_name_their_field() {
        let bad = |f: fn(&mut PlaneParams)| {
            let mut p = PlaneParams::default();
            f(&mut p);
            p.validate().unwrap_err()
        };
        let e = bad(|p| p.samples = 17);
        assert_eq!(e.field, "samples");
        assert!(e.to_string().contains("1..=16"), "{e}");
        assert_eq!(bad(|p| p.samples = 0).field, "samples");
        assert_eq!(bad(|p| p.jbsq_bound = 0).field, "jbsq_bound");
        assert_eq!(bad(|p| p.classes = 257).field, "classes");
        assert!(PlaneParams::default().validate().is_ok());
    }

    #[test]
    fn every_policy_builds_at_both_layers_with_the_largest_valid_params() {
        let params = PlaneParams {
            samples: PlaneParams::MAX_SAMPLES,
            classes: PlaneParams::MAX_CLASSES,
            ..PlaneParams::default()
        };
        params.validate().unwrap();
        for p in Policy::ALL {
            for layer in [Layer::Spine, Layer::Leaf] {
                let mut plane = Plane::build(p, layer, &[2, 1, 3], 7, &params);
                let mut out = Outbox::new();
                plane.remove_node(1, Nanos::ZERO, &mut out);
                plane.add_node(1, 1, Nanos::ZERO, &mut out);
                assert_eq!(plane.passes().1, plane.pipeline().resubmissions);
            }
        }
    }

    #[test]
    fn a_horus_leaf_that_loses_its_last_idle_worker_tells_its_spine() {
        let mut leaf = Plane::build(Policy::Horus, Layer::Leaf, &[1], 1, &PlaneParams::default());
        assert_eq!(leaf.resync(), Some((true, 0)));
        let mut out = Outbox::new();
        leaf.remove_node(0, Nanos::ZERO, &mut out);
        assert!(!out.is_empty(), "idleRemove to the spine");
        assert_eq!(leaf.resync().map(|r| r.0), Some(false));
        let mut spine = Plane::build(
            Policy::Horus,
            Layer::Spine,
            &[1],
            1,
            &PlaneParams::default(),
        );
        assert_eq!(spine.resync(), None);
    }
}
