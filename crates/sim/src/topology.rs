//! The datacenter and where each pool's workers run.
//!
//! Horus §5.1 simulates a Clos (fat-tree) network of 48-port switches: 1,152
//! leaf (ToR) and 1,152 spine switches, 24 servers of 32 cores per rack,
//! 27,648 servers; 1,000 worker pools whose sizes follow an exponential
//! distribution with min 50, max 20K and mean 685 (685K workers, one per
//! core). Horus §4.1 adds the testbed's Uniform (4 racks × 8 workers) and
//! Skewed (4, 4, 8 and 32 workers) setups.
//!
//! Numbering: racks (= leaves) are pod-major and contiguous, servers are
//! rack-major, cores server-major, so a sorted list of cores is also sorted by
//! server, rack and pod. Spine `s` of pod `p` is `p * spines_per_pod + s`.

use std::ops::Range;

use netsched_core::rng::Rng;
use serde::{Deserialize, Serialize};

use crate::error::ConfigError;

/// Where the topology and placement tables sit in the simulator's TOML file.
pub const TOPOLOGY_FIELD: &str = "topology";
pub const PLACEMENT_FIELD: &str = "placement";

/// Random streams (for [`Rng::derive`]) used by [`Placement::place`].
const STREAM_POOL_SIZES: u64 = 0x504f_4f4c_5349_5a45;
const STREAM_CORES: u64 = 0x434f_5245_5348_5546;

fn default_radix() -> u32 {
    48
}
fn default_cores() -> u32 {
    32
}
fn default_racks_spines() -> u32 {
    1
}

/// The datacenter as written in the config.
///
/// ```toml
/// topology = { kind = "fat-tree", radix = 48, cores_per_server = 32 }
/// topology = { kind = "single-rack", servers = 8, cores_per_server = 8 }
/// topology = { kind = "testbed-uniform" }
/// topology = { kind = "testbed-skewed" }
/// topology = { kind = "racks", racks = [[8], [8], [16, 8, 8]] }  # cores per server, per rack
/// topology = { kind = "racks", racks = [[8], [8], [8], [8]], spines = 2 }
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum TopologyConfig {
    /// Fat tree of switches with `radix` ports: `radix` pods of radix/2
    /// leaves and radix/2 spines, radix/2 servers per rack.
    FatTree {
        #[serde(default = "default_radix")]
        radix: u32,
        #[serde(default = "default_cores")]
        cores_per_server: u32,
    },
    /// One rack under one spine.
    SingleRack {
        servers: u32,
        #[serde(default = "default_cores")]
        cores_per_server: u32,
    },
    /// Horus §4.1 Uniform: 4 racks, each one server running 8 workers.
    TestbedUniform,
    /// Horus §4.1 Skewed: racks of 4, 4, 8 and 32 workers (the last on three
    /// servers running 16, 8 and 8).
    TestbedSkewed,
    /// Arbitrary racks in one pod: cores of each server, per rack, under
    /// `spines` spine switches (1 if left out), among which `placement.ratio`
    /// groups each pool's racks.
    Racks {
        racks: Vec<Vec<u32>>,
        #[serde(default = "default_racks_spines")]
        spines: u32,
        /// Links a packet crosses between a spine and a leaf (1: a direct
        /// link). horus-sim charges 4 for a task and 3 for a leaf's notice
        /// on every pool (its utils.py); 4 reproduces it best here.
        #[serde(default = "default_spine_leaf_hops")]
        spine_leaf_hops: u32,
    },
}

impl Default for TopologyConfig {
    fn default() -> Self {
        TopologyConfig::FatTree {
            radix: default_radix(),
            cores_per_server: default_cores(),
        }
    }
}

impl TopologyConfig {
    /// Check the parameters, naming fields under `topology`.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.build().map(|_| ())
    }

    pub fn build(&self) -> Result<Topology, ConfigError> {
        match self {
            TopologyConfig::FatTree {
                radix,
                cores_per_server,
            } => Topology::fat_tree(*radix, *cores_per_server),
            TopologyConfig::SingleRack {
                servers,
                cores_per_server,
            } => Topology::single_rack(*servers, *cores_per_server),
            TopologyConfig::TestbedUniform => Ok(Topology::testbed_uniform()),
            TopologyConfig::TestbedSkewed => Ok(Topology::testbed_skewed()),
            TopologyConfig::Racks {
                racks,
                spines,
                spine_leaf_hops,
            } => Topology::from_racks_spines(racks, *spines).and_then(|mut t| {
                if *spine_leaf_hops == 0 {
                    return Err(ConfigError::new("spine_leaf_hops", "must be >= 1"));
                }
                t.same_pod_hops = *spine_leaf_hops;
                Ok(t)
            }),
        }
        .map_err(|e| e.within(TOPOLOGY_FIELD))
    }
}

/// Racks, servers, cores and spines, in flat vectors indexed by id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Topology {
    pods: u32,
    spines_per_pod: u32,
    rack_pod: Vec<u32>,
    /// Servers of rack r are `rack_first_server[r]..rack_first_server[r + 1]`.
    rack_first_server: Vec<u32>,
    /// Cores of server s are `server_first_core[s]..server_first_core[s + 1]`.
    server_first_core: Vec<u32>,
    server_rack: Vec<u32>,
    /// Spine-to-leaf links within a pod.
    same_pod_hops: u32,
}

fn default_spine_leaf_hops() -> u32 {
    1
}

impl Topology {
    /// A fat tree of radix-`radix` switches (`radix` even, the k of a k-ary
    /// fat tree): `radix` pods, each with radix/2 leaves and radix/2 spines
    /// (aggregation switches, Horus's "spine schedulers"), radix/2 servers
    /// per rack. Radix 48, 32 cores: 1,152 leaves and spines, 27,648 servers,
    /// 884,736 cores (Horus §5.1).
    pub fn fat_tree(radix: u32, cores_per_server: u32) -> Result<Self, ConfigError> {
        if radix < 2 || radix & 1 == 1 {
            return Err(ConfigError::new(
                "radix",
                format!("must be even and >= 2, got {radix}"),
            ));
        }
        if cores_per_server == 0 {
            return Err(ConfigError::new("cores_per_server", "must be >= 1"));
        }
        let half = radix / 2;
        let cores = (radix as u64) * (half as u64) * (half as u64) * cores_per_server as u64;
        if cores > u32::MAX as u64 {
            return Err(ConfigError::new(
                "radix",
                format!("{cores} cores in total; at most 2^32 - 1 are supported"),
            ));
        }
        let racks = vec![vec![cores_per_server; half as usize]; (radix * half) as usize];
        let pods: Vec<u32> = (0..radix * half).map(|r| r / half).collect();
        Topology::assemble(radix, half, &racks, pods)
    }

    /// One rack of `servers` servers under one spine.
    pub fn single_rack(servers: u32, cores_per_server: u32) -> Result<Self, ConfigError> {
        if servers == 0 {
            return Err(ConfigError::new("servers", "must be >= 1"));
        }
        if cores_per_server == 0 {
            return Err(ConfigError::new("cores_per_server", "must be >= 1"));
        }
        if servers as u64 * cores_per_server as u64 > u32::MAX as u64 {
            return Err(ConfigError::new(
                "servers",
                "too many cores (at most 2^32 - 1)",
            ));
        }
        Topology::from_racks(&[vec![cores_per_server; servers as usize]])
    }

    /// Horus §4.1 Uniform: 32 workers, 8 per rack on one server each.
    pub fn testbed_uniform() -> Self {
        Topology::from_racks(&[vec![8], vec![8], vec![8], vec![8]]).expect("valid testbed")
    }

    /// Horus §4.1 Skewed: 48 workers in racks of 4, 4, 8 and 32; the 32 run on
    /// a 16-worker server and two 8-worker servers.
    pub fn testbed_skewed() -> Self {
        Topology::from_racks(&[vec![4], vec![4], vec![8], vec![16, 8, 8]]).expect("valid testbed")
    }

    /// Racks in one pod under one spine (the testbed: one Tofino plays the
    /// spine and every leaf). `racks[r][i]` is the core count of server i of
    /// rack r.
    pub fn from_racks(racks: &[Vec<u32>]) -> Result<Self, ConfigError> {
        Topology::from_racks_spines(racks, 1)
    }

    /// Racks in one pod under `spines` spines, each one hop from every leaf
    /// (a pod of a Clos network; the Horus authors' simulator gives a pool's
    /// racks several spines the same way).
    pub fn from_racks_spines(racks: &[Vec<u32>], spines: u32) -> Result<Self, ConfigError> {
        if spines == 0 {
            return Err(ConfigError::new("spines", "must be >= 1"));
        }
        if racks.is_empty() {
            return Err(ConfigError::new("racks", "needs at least one rack"));
        }
        let mut total = 0u64;
        for (r, servers) in racks.iter().enumerate() {
            if servers.is_empty() {
                return Err(ConfigError::new(
                    format!("racks[{r}]"),
                    "needs at least one server",
                ));
            }
            for (i, &c) in servers.iter().enumerate() {
                if c == 0 {
                    return Err(ConfigError::new(
                        format!("racks[{r}][{i}]"),
                        "a server needs at least one core",
                    ));
                }
                total += c as u64;
            }
        }
        if total > u32::MAX as u64 {
            return Err(ConfigError::new(
                "racks",
                "too many cores (at most 2^32 - 1)",
            ));
        }
        Topology::assemble(1, spines, racks, vec![0; racks.len()])
    }

    /// The topology a config describes (same as [`TopologyConfig::build`]).
    pub fn build(cfg: &TopologyConfig) -> Result<Self, ConfigError> {
        cfg.build()
    }

    fn assemble(
        pods: u32,
        spines_per_pod: u32,
        racks: &[Vec<u32>],
        rack_pod: Vec<u32>,
    ) -> Result<Self, ConfigError> {
        let n_servers: usize = racks.iter().map(Vec::len).sum();
        let mut rack_first_server = Vec::with_capacity(racks.len() + 1);
        let mut server_first_core = Vec::with_capacity(n_servers + 1);
        let mut server_rack = Vec::with_capacity(n_servers);
        let mut core = 0u32;
        for (r, servers) in racks.iter().enumerate() {
            rack_first_server.push(server_rack.len() as u32);
            for &c in servers {
                server_first_core.push(core);
                server_rack.push(r as u32);
                core += c;
            }
        }
        rack_first_server.push(server_rack.len() as u32);
        server_first_core.push(core);
        Ok(Topology {
            pods,
            spines_per_pod,
            rack_pod,
            rack_first_server,
            server_first_core,
            server_rack,
            same_pod_hops: 1,
        })
    }

    pub fn pods(&self) -> u32 {
        self.pods
    }
    pub fn leaves(&self) -> u32 {
        self.rack_pod.len() as u32
    }
    pub fn spines(&self) -> u32 {
        self.pods * self.spines_per_pod
    }
    pub fn spines_per_pod(&self) -> u32 {
        self.spines_per_pod
    }
    pub fn servers(&self) -> u32 {
        self.server_rack.len() as u32
    }
    pub fn cores(&self) -> u32 {
        *self.server_first_core.last().expect("sentinel")
    }
    pub fn leaf_pod(&self, leaf: u32) -> u32 {
        self.rack_pod[leaf as usize]
    }
    pub fn spine_pod(&self, spine: u32) -> u32 {
        spine / self.spines_per_pod
    }
    pub fn spines_in_pod(&self, pod: u32) -> Range<u32> {
        pod * self.spines_per_pod..(pod + 1) * self.spines_per_pod
    }
    pub fn servers_of_rack(&self, leaf: u32) -> Range<u32> {
        self.rack_first_server[leaf as usize]..self.rack_first_server[leaf as usize + 1]
    }
    pub fn rack_of_server(&self, server: u32) -> u32 {
        self.server_rack[server as usize]
    }
    pub fn cores_of_server(&self, server: u32) -> Range<u32> {
        self.server_first_core[server as usize]..self.server_first_core[server as usize + 1]
    }
    pub fn cores_of_rack(&self, leaf: u32) -> Range<u32> {
        let s = self.servers_of_rack(leaf);
        self.server_first_core[s.start as usize]..self.server_first_core[s.end as usize]
    }
    pub fn server_of_core(&self, core: u32) -> u32 {
        (self.server_first_core.partition_point(|&c| c <= core) - 1) as u32
    }

    /// Switch hops between a spine and a leaf: 1 inside a pod, else 3 (spine
    /// → core → the leaf's pod's spine → leaf). Used to delay the controller's
    /// failure notices (Horus §5.3: "based on the number of hops between the
    /// failed spine and each impacted leaf") and cross-pod scheduler traffic.
    pub fn spine_leaf_hops(&self, spine: u32, leaf: u32) -> u32 {
        if self.spine_pod(spine) == self.leaf_pod(leaf) {
            self.same_pod_hops
        } else {
            3
        }
    }
}

/// How workers are spread over the datacenter.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PlacementMode {
    /// Every worker on a uniformly random free core anywhere (Horus §5.1:
    /// workers "randomly distributed across racks").
    #[default]
    Scattered,
    /// Pools fill cores in order, each taking the next free cores: whole
    /// servers and racks, spilling into the next rack.
    Colocated,
}

/// How a pool's leaves are grouped under its spine schedulers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SpineGrouping {
    /// Groups never cross pods (Horus §3.2: groups "aligned with datacenter
    /// pods", so spine–leaf traffic is one hop).
    #[default]
    Pod,
    /// Groups of up to r consecutive racks regardless of pods, so that r
    /// alone sets the number of spines (Horus §5.3's r = 10/20/40 comparison
    /// when a pool has fewer than r racks per pod).
    Global,
}

/// Pools and their placement, as written in the config. Every field has a
/// default (Horus §5.1):
///
/// ```toml
/// [placement]
/// pools = 1000          # omit when giving `sizes`
/// min_size = 50
/// max_size = 20000
/// mean_size = 685.0
/// sizes = []            # explicit pool sizes; replaces the random draw
/// mode = "scattered"    # or "colocated"
/// ratio = 10            # r: leaf schedulers per spine scheduler
/// grouping = "pod"      # or "global"
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PlacementConfig {
    /// Number of pools; 1000 if unset (and `sizes` is empty).
    pub pools: Option<u32>,
    pub min_size: u32,
    pub max_size: u32,
    pub mean_size: f64,
    pub sizes: Vec<u32>,
    pub mode: PlacementMode,
    /// r, leaf to spine schedulers (Horus §5.3). The paper compares 10, 20
    /// and 40 without naming a default; 10 ([`Self::DEFAULT_RATIO`]) uses the
    /// most spines. An option so that a ratio given where it cannot matter
    /// (one spine per pod) is refused rather than ignored; read it with
    /// [`Self::ratio`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ratio: Option<u32>,
    pub grouping: SpineGrouping,
}

impl Default for PlacementConfig {
    fn default() -> Self {
        PlacementConfig {
            pools: None,
            min_size: 50,
            max_size: 20_000,
            mean_size: 685.0,
            sizes: Vec::new(),
            mode: PlacementMode::Scattered,
            ratio: None,
            grouping: SpineGrouping::Pod,
        }
    }
}

impl PlacementConfig {
    pub const DEFAULT_POOLS: u32 = 1000;
    pub const DEFAULT_RATIO: u32 = 10;

    /// r, as given or the default.
    pub fn ratio(&self) -> u32 {
        self.ratio.unwrap_or(Self::DEFAULT_RATIO)
    }

    /// One pool of `workers`, filling cores in order (single-rack and
    /// testbed experiments: `single_pool(32)` on the Uniform testbed puts 8
    /// workers in each rack).
    pub fn single_pool(workers: u32) -> Self {
        PlacementConfig {
            sizes: vec![workers],
            mode: PlacementMode::Colocated,
            ..PlacementConfig::default()
        }
    }

    pub fn pool_count(&self) -> u32 {
        if self.sizes.is_empty() {
            self.pools.unwrap_or(Self::DEFAULT_POOLS)
        } else {
            self.sizes.len() as u32
        }
    }

    /// Check the parameters, naming fields under `placement`. Whether the
    /// pools fit the topology is checked by [`Placement::place`].
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.check().map_err(|e| e.within(PLACEMENT_FIELD))
    }

    /// [`Self::validate`], and refuse what has no effect on `topo`: a ratio
    /// given for a topology with one spine per pod, where every group of a
    /// pod's racks gets that spine whatever r is.
    pub fn validate_on(&self, topo: &Topology) -> Result<(), ConfigError> {
        self.validate()?;
        if self.ratio.is_some() && topo.spines_per_pod() == 1 {
            return Err(ConfigError::new(
                "ratio",
                "has no effect: the topology has one spine per pod, which every group of racks \
                 shares whatever the ratio; leave it out, or give a `racks` topology `spines`",
            )
            .within(PLACEMENT_FIELD));
        }
        Ok(())
    }

    fn check(&self) -> Result<(), ConfigError> {
        if self.ratio == Some(0) {
            return Err(ConfigError::new("ratio", "must be >= 1"));
        }
        if !self.sizes.is_empty() {
            if let Some(p) = self.pools {
                if p as usize != self.sizes.len() {
                    return Err(ConfigError::new(
                        "pools",
                        format!(
                            "is {p} but sizes lists {} pools; leave pools out",
                            self.sizes.len()
                        ),
                    ));
                }
            }
            if let Some(i) = self.sizes.iter().position(|&s| s == 0) {
                return Err(ConfigError::new(
                    format!("sizes[{i}]"),
                    "a pool needs at least one worker",
                ));
            }
            return Ok(());
        }
        if self.pools == Some(0) {
            return Err(ConfigError::new("pools", "must be >= 1"));
        }
        if self.min_size == 0 {
            return Err(ConfigError::new("min_size", "must be >= 1"));
        }
        if self.max_size < self.min_size {
            return Err(ConfigError::new(
                "max_size",
                format!("{} is below min_size {}", self.max_size, self.min_size),
            ));
        }
        let m = self.mean_size;
        if !(m.is_finite() && m >= self.min_size as f64 && m <= self.max_size as f64) {
            return Err(ConfigError::new(
                "mean_size",
                format!(
                    "must lie in [min_size, max_size] = [{}, {}], got {m}",
                    self.min_size, self.max_size
                ),
            ));
        }
        Ok(())
    }
}

/// Draw pool sizes: `min + min(round(θ·E), max − min)` with E ~ Exp(1), i.e.
/// an exponential shifted to start at `min` and clamped at `max` (Horus
/// §5.1). Clamping (rather than redrawing) keeps pools at exactly 20K as the
/// paper's max. The scale θ is then calibrated by bisection *on the drawn
/// sample*, so that the realised mean is `mean_size` (to within one worker per
/// pool in total) rather than only its expectation: the paper reports 685K
/// workers for 1K pools, and the spread of a 1000-pool sample mean (±3%)
/// would otherwise make every seed's datacenter a different size.
pub fn pool_sizes(cfg: &PlacementConfig, rng: &mut Rng) -> Vec<u32> {
    if !cfg.sizes.is_empty() {
        return cfg.sizes.clone();
    }
    let n = cfg.pool_count() as usize;
    let (min, max) = (cfg.min_size, cfg.max_size);
    let span = (max - min) as f64;
    let draws: Vec<f64> = (0..n).map(|_| -rng.unit_open0().ln()).collect();
    let size = |theta: f64, e: f64| min + (theta * e).round().min(span) as u32;
    let total = |theta: f64| draws.iter().map(|&e| size(theta, e) as u64).sum::<u64>();
    let target = (cfg.mean_size * n as f64).round() as u64;
    let (mut lo, mut hi) = (0.0f64, (cfg.mean_size - min as f64).max(1.0));
    // total() is non-decreasing in θ; grow hi until it brackets the target.
    for _ in 0..200 {
        if total(hi) >= target {
            break;
        }
        lo = hi;
        hi *= 2.0;
    }
    for _ in 0..100 {
        let mid = 0.5 * (lo + hi);
        if total(mid) < target {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    let theta = if target.abs_diff(total(lo)) < target.abs_diff(total(hi)) {
        lo
    } else {
        hi
    };
    draws.iter().map(|&e| size(theta, e)).collect()
}

/// The part of a pool in one rack.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RackSlice {
    /// Global rack (leaf switch) index.
    pub leaf_id: u32,
    pub workers: u32,
    /// Pool-wide index of this rack's first worker; the rack holds workers
    /// `first_worker..first_worker + workers`.
    pub first_worker: u32,
    /// The pool's cores per server: (global server id, cores), by server id.
    pub servers: Vec<(u32, u32)>,
}

/// Where one pool's workers are and which spines schedule for it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PoolLayout {
    pub pool_id: u32,
    /// By leaf id (hence by pod).
    pub racks: Vec<RackSlice>,
    /// Global ids of the spine schedulers serving the pool.
    pub spines: Vec<u32>,
    /// For each entry of `racks`, the index into `spines` of the spine its
    /// leaf scheduler is linked to (Horus §3.2: each leaf belongs to one group).
    pub leaf_spine: Vec<u32>,
}

impl PoolLayout {
    pub fn workers(&self) -> u32 {
        self.racks.iter().map(|r| r.workers).sum()
    }

    /// Workers under each entry of `spines`. Clients pick a spine with these
    /// weights: Horus §3.2 weights the choice "in proportion to the number of
    /// workers per pod".
    pub fn spine_workers(&self) -> Vec<u64> {
        let mut w = vec![0u64; self.spines.len()];
        for (r, &s) in self.racks.iter().zip(&self.leaf_spine) {
            w[s as usize] += r.workers as u64;
        }
        w
    }

    /// Index into `racks` of the rack holding pool worker `w`.
    pub fn rack_of_worker(&self, w: u32) -> Option<usize> {
        let i = self.racks.partition_point(|r| r.first_worker <= w);
        let r = self.racks.get(i.checked_sub(1)?)?;
        (w < r.first_worker + r.workers).then_some(i - 1)
    }

    /// A pool of `workers` on one server of one rack (leaf 0, server 0) under
    /// spine 0: for single-rack tests.
    pub fn single_rack(pool_id: u32, workers: u32) -> Self {
        PoolLayout::on_racks(pool_id, &[workers])
    }

    /// A pool over racks `0..sizes.len()` holding `sizes[i]` workers each
    /// (rack i = leaf i with one server, id i), all linked to spine 0: the
    /// testbed setups of Horus §4.1 (`&[8, 8, 8, 8]`, `&[4, 4, 8, 32]`).
    /// Empty racks are left out.
    pub fn on_racks(pool_id: u32, sizes: &[u32]) -> Self {
        let mut racks = Vec::new();
        let mut first = 0;
        for (i, &n) in sizes.iter().enumerate() {
            if n == 0 {
                continue;
            }
            racks.push(RackSlice {
                leaf_id: i as u32,
                workers: n,
                first_worker: first,
                servers: vec![(i as u32, n)],
            });
            first += n;
        }
        let leaf_spine = vec![0; racks.len()];
        PoolLayout {
            pool_id,
            racks,
            spines: vec![0],
            leaf_spine,
        }
    }
}

/// Every pool's layout.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Placement {
    pub pools: Vec<PoolLayout>,
}

impl Placement {
    /// Draw pool sizes and place every worker on its own core.
    ///
    /// Scattered: a partial Fisher–Yates shuffle of all cores hands each pool
    /// its next `size` cores, which is the same as every worker taking a
    /// uniformly random free core. Colocated: pools take consecutive cores.
    ///
    /// Spines (Horus §3.2, §5.3): a pool's racks, in leaf order, are split
    /// into groups of at most `ratio` racks, as evenly as possible, each group
    /// led by one spine. With [`SpineGrouping::Pod`] groups are formed per pod
    /// and the spine is in that pod; with [`SpineGrouping::Global`] groups are
    /// formed over all the pool's racks and the spine is in the pod holding
    /// most of the group. Within a pod, the j-th group of pool p gets spine
    /// `(p + j) mod spines_per_pod` of that pod, so pools spread over all the
    /// pod's spines instead of piling onto the first. A pod has radix/2 racks
    /// and radix/2 spines, so per-pod groups never outnumber the pod's spines; in
    /// smaller topologies (one spine) groups share a spine.
    pub fn place(topo: &Topology, cfg: &PlacementConfig, seed: u64) -> Result<Self, ConfigError> {
        cfg.validate_on(topo)?;
        let sizes = pool_sizes(cfg, &mut Rng::derive(seed, STREAM_POOL_SIZES));
        let total: u64 = sizes.iter().map(|&s| s as u64).sum();
        if total > topo.cores() as u64 {
            return Err(ConfigError::new(
                PLACEMENT_FIELD,
                format!(
                    "{} pools need {total} workers but the topology has {} cores",
                    sizes.len(),
                    topo.cores()
                ),
            ));
        }
        let total = total as usize;
        let mut spine_slot = vec![u32::MAX; topo.spines() as usize];
        let mut pools = Vec::with_capacity(sizes.len());
        match cfg.mode {
            PlacementMode::Scattered => {
                let mut rng = Rng::derive(seed, STREAM_CORES);
                let n = topo.cores();
                let mut cores: Vec<u32> = (0..n).collect();
                for i in 0..total {
                    let j = i + rng.below(n - i as u32) as usize;
                    cores.swap(i, j);
                }
                let mut off = 0;
                let mut mine: Vec<u32> = Vec::new();
                for (p, &size) in sizes.iter().enumerate() {
                    mine.clear();
                    mine.extend_from_slice(&cores[off..off + size as usize]);
                    mine.sort_unstable();
                    off += size as usize;
                    pools.push(layout(
                        topo,
                        cfg,
                        p as u32,
                        mine.iter().copied(),
                        &mut spine_slot,
                    ));
                }
            }
            PlacementMode::Colocated => {
                let mut next = 0u32;
                for (p, &size) in sizes.iter().enumerate() {
                    pools.push(layout(
                        topo,
                        cfg,
                        p as u32,
                        next..next + size,
                        &mut spine_slot,
                    ));
                    next += size;
                }
            }
        }
        Ok(Placement { pools })
    }

    pub fn total_workers(&self) -> u64 {
        self.pools.iter().map(|p| p.workers() as u64).sum()
    }
}

/// Every pool's layout: [`Placement::place`] without the wrapper.
pub fn place(
    topo: &Topology,
    cfg: &PlacementConfig,
    seed: u64,
) -> Result<Vec<PoolLayout>, ConfigError> {
    Placement::place(topo, cfg, seed).map(|p| p.pools)
}

/// A pool's layout from its cores in increasing order.
fn layout(
    topo: &Topology,
    cfg: &PlacementConfig,
    pool_id: u32,
    cores: impl Iterator<Item = u32>,
    spine_slot: &mut [u32],
) -> PoolLayout {
    let mut racks: Vec<RackSlice> = Vec::new();
    let mut server_end = 0u32;
    for (worker, c) in cores.enumerate() {
        if racks.is_empty() || c >= server_end {
            let s = topo.server_of_core(c);
            server_end = topo.cores_of_server(s).end;
            let leaf = topo.rack_of_server(s);
            if racks.last().map(|r| r.leaf_id) != Some(leaf) {
                racks.push(RackSlice {
                    leaf_id: leaf,
                    workers: 0,
                    first_worker: worker as u32,
                    servers: Vec::new(),
                });
            }
            racks.last_mut().expect("pushed").servers.push((s, 0));
        }
        let r = racks
            .last_mut()
            .expect("a rack exists once a core was seen");
        r.workers += 1;
        r.servers.last_mut().expect("a server exists").1 += 1;
    }
    let (spines, leaf_spine) =
        assign_spines(topo, pool_id, &racks, cfg.ratio(), cfg.grouping, spine_slot);
    PoolLayout {
        pool_id,
        racks,
        spines,
        leaf_spine,
    }
}

fn assign_spines(
    topo: &Topology,
    pool_id: u32,
    racks: &[RackSlice],
    ratio: u32,
    grouping: SpineGrouping,
    spine_slot: &mut [u32],
) -> (Vec<u32>, Vec<u32>) {
    let spp = topo.spines_per_pod();
    let rot = pool_id % spp;
    let ratio = ratio.max(1) as usize;
    let mut spines: Vec<u32> = Vec::new();
    let mut leaf_spine = vec![0u32; racks.len()];
    // spine_slot maps a global spine id to its index in `spines` (u32::MAX =
    // not yet used by this pool); reset below so the scratch can be reused.
    let mut slot = |spine: u32, spines: &mut Vec<u32>| -> u32 {
        let e = &mut spine_slot[spine as usize];
        if *e == u32::MAX {
            *e = spines.len() as u32;
            spines.push(spine);
        }
        *e
    };
    // Runs of racks in the same pod (racks are in leaf order, hence pod order).
    let mut runs: Vec<(usize, usize, u32)> = Vec::new();
    for (i, r) in racks.iter().enumerate() {
        let pod = topo.leaf_pod(r.leaf_id);
        match runs.last_mut() {
            Some(run) if run.2 == pod => run.1 = i + 1,
            _ => runs.push((i, i + 1, pod)),
        }
    }
    match grouping {
        SpineGrouping::Pod => {
            for &(a, b, pod) in &runs {
                let m = b - a;
                let groups = m.div_ceil(ratio);
                let base = topo.spines_in_pod(pod).start;
                for j in 0..m {
                    // Balanced split: group sizes differ by at most one, each <= ratio.
                    let g = (j * groups / m) as u32;
                    let spine = base + (rot + g) % spp;
                    leaf_spine[a + j] = slot(spine, &mut spines);
                }
            }
        }
        SpineGrouping::Global => {
            let m = racks.len();
            let groups = m.div_ceil(ratio);
            let mut used_in_pod = vec![0u32; topo.pods() as usize];
            let mut start = 0;
            for g in 0..groups {
                let end = (g + 1) * m / groups;
                // The pod holding most of the group (first on ties).
                let mut best = (0usize, 0u32);
                for &(a, b, pod) in &runs {
                    let overlap = b.min(end).saturating_sub(a.max(start));
                    if overlap > best.0 {
                        best = (overlap, pod);
                    }
                }
                let pod = best.1;
                let spine = topo.spines_in_pod(pod).start + (rot + used_in_pod[pod as usize]) % spp;
                used_in_pod[pod as usize] += 1;
                let s = slot(spine, &mut spines);
                for e in &mut leaf_spine[start..end] {
                    *e = s;
                }
                start = end;
            }
        }
    }
    for &s in &spines {
        spine_slot[s as usize] = u32::MAX;
    }
    (spines, leaf_spine)
}

#[cfg(test)]
mod tests;
