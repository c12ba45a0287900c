use super::*;

#[test]
fn fat_tree_counts_at_k48() {
    let t = Topology::fat_tree(48, 32).unwrap();
    assert_eq!(t.pods(), 48);
    assert_eq!(t.leaves(), 1_152);
    assert_eq!(t.spines(), 1_152);
    assert_eq!(t.servers(), 27_648);
    assert_eq!(t.cores(), 884_736);
    assert_eq!(t.servers_of_rack(5).len(), 24);
    assert_eq!(t.cores_of_server(100).len(), 32);
    assert_eq!(t.leaf_pod(23), 0);
    assert_eq!(t.leaf_pod(24), 1);
    assert_eq!(t.spine_pod(1_151), 47);
    assert_eq!(t.spines_in_pod(2), 48..72);
    assert_eq!(t.spine_leaf_hops(0, 23), 1);
    assert_eq!(t.spine_leaf_hops(0, 24), 3);
    assert_eq!(t.spine_leaf_hops(30, 24), 1);
    for core in [0, 31, 32, 884_735, 123_456] {
        let s = t.server_of_core(core);
        assert!(t.cores_of_server(s).contains(&core));
        assert!(t.cores_of_rack(t.rack_of_server(s)).contains(&core));
    }
    assert_eq!(TopologyConfig::default().build().unwrap(), t);
    assert!(Topology::fat_tree(47, 32).is_err());
    assert_eq!(
        TopologyConfig::FatTree {
            radix: 4,
            cores_per_server: 0
        }
        .validate()
        .unwrap_err()
        .field,
        "topology.cores_per_server"
    );
}

#[test]
fn testbeds_and_single_rack() {
    let u = Topology::testbed_uniform();
    assert_eq!((u.leaves(), u.spines(), u.cores()), (4, 1, 32));
    let s = Topology::testbed_skewed();
    assert_eq!((s.leaves(), s.servers(), s.cores()), (4, 6, 48));
    assert_eq!(s.cores_of_rack(3).len(), 32);
    let r = Topology::single_rack(8, 8).unwrap();
    assert_eq!(
        (r.leaves(), r.servers(), r.cores(), r.spines()),
        (1, 8, 64, 1)
    );
    assert_eq!(r.spine_leaf_hops(0, 0), 1);
    // One pool over the whole testbed reproduces the paper's rack sizes.
    let p = Placement::place(&s, &PlacementConfig::single_pool(48), 1).unwrap();
    let sizes: Vec<u32> = p.pools[0].racks.iter().map(|r| r.workers).collect();
    assert_eq!(sizes, vec![4, 4, 8, 32]);
    assert_eq!(p.pools[0].racks[3].servers, vec![(3, 16), (4, 8), (5, 8)]);
    assert_eq!(p.pools[0].spines, vec![0]);
    let p = Placement::place(&u, &PlacementConfig::single_pool(32), 1).unwrap();
    let sizes: Vec<u32> = p.pools[0].racks.iter().map(|r| r.workers).collect();
    assert_eq!(sizes, vec![8, 8, 8, 8]);
    assert!(Placement::place(&u, &PlacementConfig::single_pool(33), 1).is_err());
}

#[test]
fn layout_helpers() {
    let l = PoolLayout::on_racks(7, &[4, 0, 8, 32]);
    assert_eq!(l.workers(), 44);
    assert_eq!(l.racks.len(), 3);
    assert_eq!(l.racks[1].leaf_id, 2);
    assert_eq!(l.racks[2].first_worker, 12);
    assert_eq!(l.rack_of_worker(0), Some(0));
    assert_eq!(l.rack_of_worker(11), Some(1));
    assert_eq!(l.rack_of_worker(12), Some(2));
    assert_eq!(l.rack_of_worker(44), None);
    assert_eq!(l.spine_workers(), vec![44]);
    let s = PoolLayout::single_rack(0, 16);
    assert_eq!(
        (s.racks.len(), s.workers(), s.leaf_spine.clone()),
        (1, 16, vec![0])
    );
}

#[test]
fn pool_sizes_follow_the_paper() {
    let cfg = PlacementConfig::default();
    for seed in 0..5 {
        let sizes = pool_sizes(&cfg, &mut Rng::new(seed));
        assert_eq!(sizes.len(), 1000);
        assert!(sizes.iter().all(|&s| (50..=20_000).contains(&s)));
        let mean = sizes.iter().map(|&s| s as f64).sum::<f64>() / 1000.0;
        assert!((mean / 685.0 - 1.0).abs() < 0.05, "mean {mean}");
        // Calibrated on the sample: the total is 685K to within a few workers.
        assert!((mean - 685.0).abs() < 0.05, "mean {mean}");
        // Still exponential-looking: median near min + θ ln 2 ≈ 490.
        let mut sorted = sizes.clone();
        sorted.sort_unstable();
        assert!((380..600).contains(&sorted[500]), "median {}", sorted[500]);
    }
    let flat = PlacementConfig {
        min_size: 10,
        max_size: 10,
        mean_size: 10.0,
        pools: Some(3),
        ..PlacementConfig::default()
    };
    assert_eq!(pool_sizes(&flat, &mut Rng::new(1)), vec![10, 10, 10]);
}

#[test]
fn placement_validation() {
    let bad = |c: PlacementConfig| c.validate().unwrap_err().field;
    assert_eq!(
        bad(PlacementConfig {
            ratio: Some(0),
            ..Default::default()
        }),
        "placement.ratio"
    );
    assert_eq!(
        bad(PlacementConfig {
            mean_size: 30.0,
            ..Default::default()
        }),
        "placement.mean_size"
    );
    assert_eq!(
        bad(PlacementConfig {
            max_size: 10,
            ..Default::default()
        }),
        "placement.max_size"
    );
    assert_eq!(
        bad(PlacementConfig {
            pools: Some(2),
            sizes: vec![3],
            ..Default::default()
        }),
        "placement.pools"
    );
    assert_eq!(
        bad(PlacementConfig {
            sizes: vec![3, 0],
            ..Default::default()
        }),
        "placement.sizes[1]"
    );
    let t = Topology::fat_tree(4, 2).unwrap(); // 32 cores
    let e = Placement::place(&t, &PlacementConfig::default(), 1).unwrap_err();
    assert_eq!(e.field, "placement");
    assert!(e.msg.contains("32 cores"), "{e}");
}

/// Layouts list servers, not cores; no server handing out more cores
/// than it has (summed over all pools) is what "every worker on its own
/// core" means for them.
fn check_distinct_cores(topo: &Topology, p: &Placement) {
    let mut used = vec![0u32; topo.servers() as usize];
    for pool in &p.pools {
        let mut next_worker = 0;
        for r in &pool.racks {
            assert_eq!(r.first_worker, next_worker);
            next_worker += r.workers;
            assert_eq!(r.servers.iter().map(|s| s.1).sum::<u32>(), r.workers);
            assert!(r.servers.windows(2).all(|w| w[0].0 < w[1].0));
            for &(s, c) in &r.servers {
                assert_eq!(topo.rack_of_server(s), r.leaf_id);
                assert!(c >= 1);
                used[s as usize] += c;
            }
        }
        assert_eq!(pool.leaf_spine.len(), pool.racks.len());
        assert!(pool.racks.windows(2).all(|w| w[0].leaf_id < w[1].leaf_id));
    }
    for s in 0..topo.servers() {
        assert!(
            used[s as usize] <= topo.cores_of_server(s).len() as u32,
            "server {s} oversubscribed"
        );
    }
    assert_eq!(
        used.iter().map(|&u| u as u64).sum::<u64>(),
        p.total_workers()
    );
}

#[test]
fn scattered_placement_at_scale() {
    let topo = Topology::fat_tree(48, 32).unwrap();
    let cfg = PlacementConfig::default();
    let started = std::time::Instant::now();
    let p = Placement::place(&topo, &cfg, 42).unwrap();
    let took = started.elapsed();
    assert!(took.as_secs_f64() < 5.0, "placement took {took:?}");
    assert_eq!(p.pools.len(), 1000);
    let total = p.total_workers();
    assert!((total as f64 / 685_000.0 - 1.0).abs() < 0.001, "{total}");
    check_distinct_cores(&topo, &p);
    // Deterministic for a seed.
    assert_eq!(Placement::place(&topo, &cfg, 42).unwrap(), p);
    assert_ne!(Placement::place(&topo, &cfg, 43).unwrap(), p);
    // Spine grouping: within a pod, a spine leads at most r of the pool's racks.
    for pool in &p.pools {
        let mut per_spine = vec![0u32; pool.spines.len()];
        for (r, &s) in pool.racks.iter().zip(&pool.leaf_spine) {
            per_spine[s as usize] += 1;
            assert_eq!(
                topo.spine_pod(pool.spines[s as usize]),
                topo.leaf_pod(r.leaf_id)
            );
        }
        assert!(
            per_spine.iter().all(|&n| (1..=cfg.ratio()).contains(&n)),
            "{per_spine:?}"
        );
        let w: u64 = pool.spine_workers().iter().sum();
        assert_eq!(w, pool.workers() as u64);
    }
}

#[test]
fn colocated_uses_far_fewer_racks() {
    let topo = Topology::fat_tree(16, 32).unwrap(); // 128 racks, 8 servers each, 32,768 cores
    let base = PlacementConfig {
        pools: Some(40),
        min_size: 50,
        max_size: 2_000,
        mean_size: 400.0,
        ..PlacementConfig::default()
    };
    let scattered = Placement::place(&topo, &base, 3).unwrap();
    let colocated = Placement::place(
        &topo,
        &PlacementConfig {
            mode: PlacementMode::Colocated,
            ..base.clone()
        },
        3,
    )
    .unwrap();
    check_distinct_cores(&topo, &scattered);
    check_distinct_cores(&topo, &colocated);
    let racks = |p: &Placement| p.pools.iter().map(|l| l.racks.len()).sum::<usize>();
    // Same sizes either way (same seed and size stream).
    let sizes = |p: &Placement| p.pools.iter().map(|l| l.workers()).collect::<Vec<_>>();
    assert_eq!(sizes(&scattered), sizes(&colocated));
    assert!(
        racks(&colocated) * 5 < racks(&scattered),
        "{} vs {}",
        racks(&colocated),
        racks(&scattered)
    );
    // Colocated: a pool's racks are consecutive, each full except the ends.
    for l in &colocated.pools {
        assert!(l.racks.windows(2).all(|w| w[1].leaf_id == w[0].leaf_id + 1));
        let n = l.racks.len();
        if n > 2 {
            assert!(l.racks[1..n - 1].iter().all(|r| r.workers == 256));
        }
    }
}

#[test]
fn ratio_controls_spine_count() {
    let topo = Topology::fat_tree(48, 32).unwrap();
    let sizes = vec![20_000, 5_000, 685];
    let spines = |ratio: u32, grouping: SpineGrouping, mode: PlacementMode| -> Vec<usize> {
        let cfg = PlacementConfig {
            sizes: sizes.clone(),
            ratio: Some(ratio),
            grouping,
            mode,
            ..PlacementConfig::default()
        };
        let p = Placement::place(&topo, &cfg, 9).unwrap();
        for l in &p.pools {
            let mut per = vec![0usize; l.spines.len()];
            for &s in &l.leaf_spine {
                per[s as usize] += 1;
            }
            assert!(
                per.iter().all(|&n| n >= 1 && n <= ratio as usize),
                "{per:?}"
            );
            // Groups are as even as possible: ceil(racks / r) spines when global.
            if grouping == SpineGrouping::Global {
                assert_eq!(l.spines.len(), l.racks.len().div_ceil(ratio as usize));
            }
        }
        p.pools.iter().map(|l| l.spines.len()).collect()
    };
    for mode in [PlacementMode::Scattered, PlacementMode::Colocated] {
        let s10 = spines(10, SpineGrouping::Global, mode);
        let s40 = spines(40, SpineGrouping::Global, mode);
        for (a, b) in s10.iter().zip(&s40) {
            assert!(a >= b);
        }
        // The 20K pool covers (nearly) every rack: ~1152/10 vs ~1152/40 spines.
        assert!(s10[0] >= 3 * s40[0], "{s10:?} {s40:?}");
        let p10 = spines(10, SpineGrouping::Pod, mode);
        let p40 = spines(40, SpineGrouping::Pod, mode);
        assert!(p10[0] > p40[0], "{p10:?} {p40:?}");
    }
}

#[test]
fn toml_shapes() {
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Cfg {
        topology: TopologyConfig,
        #[serde(default)]
        placement: PlacementConfig,
    }
    let c: Cfg = toml::from_str(
            "topology = { kind = \"fat-tree\", radix = 8 }\n[placement]\npools = 3\nmode = \"colocated\"\nratio = 20\n",
        )
        .unwrap();
    assert_eq!(
        c.topology,
        TopologyConfig::FatTree {
            radix: 8,
            cores_per_server: 32
        }
    );
    assert_eq!(c.placement.pool_count(), 3);
    assert_eq!(c.placement.mode, PlacementMode::Colocated);
    assert_eq!(c.placement.min_size, 50);
    let c: Cfg = toml::from_str("topology = { kind = \"testbed-skewed\" }").unwrap();
    assert_eq!(c.topology.build().unwrap().cores(), 48);
    assert_eq!(c.placement, PlacementConfig::default());
    let c: Cfg = toml::from_str("topology = { kind = \"racks\", racks = [[8], [16, 8]] }\n[placement]\nsizes = [20]\ngrouping = \"global\"\n").unwrap();
    assert_eq!(c.topology.build().unwrap().cores(), 32);
    assert_eq!(c.placement.pool_count(), 1);
    assert!(toml::from_str::<Cfg>("topology = { kind = \"fat-tree\", kk = 8 }").is_err());
    assert!(toml::from_str::<Cfg>(
        "topology = { kind = \"testbed-uniform\" }\n[placement]\nmod = \"x\"\n"
    )
    .is_err());
    assert!(toml::from_str::<Cfg>("topology = { kind = \"torus\" }").is_err());
}
