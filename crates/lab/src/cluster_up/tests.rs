use super::*;

#[test]
fn the_example_configs_parse() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../experiments");
    let mut n = 0;
    for e in std::fs::read_dir(&dir).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().to_string();
        if name.starts_with("cluster-") && name.ends_with(".toml") {
            let text = std::fs::read_to_string(e.path()).unwrap();
            ClusterUpConfig::from_toml(&text).unwrap_or_else(|err| panic!("{name}: {err}"));
            n += 1;
        }
    }
    assert!(n >= 3, "cluster-small, cluster-rocksdb, cluster-agree");
}

#[test]
fn the_calibration_client_is_a_valid_low_load_config_with_its_own_app_id() {
    let cfg = ClusterUpConfig::from_toml(
        "[workload]\nservice = { kind = \"exp\", mean_us = 1000 }\nload = 0.5\nduration_ms = 100\n",
    )
    .unwrap();
    let dir = std::env::temp_dir().join(format!("netsched-plan-{}", std::process::id()));
    let p = plan(&cfg, "horus", &dir).unwrap();
    // Secrets live only in private files; no config holds them.
    for f in ["admin.token", "cluster.key"] {
        netsched_node::secret::check_private(&dir.join(f)).unwrap();
    }
    let key = std::fs::read_to_string(dir.join("cluster.key")).unwrap();
    for (_, _, path, _) in &p.daemons {
        let text = std::fs::read_to_string(path).unwrap();
        assert!(!text.contains(&p.token) && !text.contains(&key), "{path:?}");
    }
    let main = std::fs::read_to_string(&p.client).unwrap();
    let main_cfg = netsched_node::config::ClientConfig::from_toml(&main).unwrap();
    let cal =
        netsched_node::config::ClientConfig::from_toml(&calibration_client(&main, &cfg)).unwrap();
    assert_ne!(cal.app_id, main_cfg.app_id, "replies must not mix");
    let link = main_cfg
        .controller
        .as_ref()
        .expect("follows the controller");
    assert_eq!(link.admin.port(), cfg.base_port + 1);
    assert_eq!(link.token().unwrap(), p.token);
    // The token is 256 random bits, not derived from the pid or seed.
    assert_eq!(p.token.len(), 64);
    assert!(p.token.bytes().all(|c| c.is_ascii_hexdigit()));
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(cal.targets.len(), main_cfg.targets.len());
    assert_eq!(cal.targets[0].addr, main_cfg.targets[0].addr);
    // 400/s of 50 µs on 4 workers: load 0.5 %.
    let load = cal.rate * CALIBRATION_SERVICE_US / 1e6 / cfg.workers() as f64;
    assert!(load < 0.01, "{load}");
    assert!((main_cfg.rate - cfg.rate().unwrap()).abs() < 0.01);
}

/// RackSched runs get RackSched's servers (RackSched §4); Horus keeps a
/// queue per worker (Horus §3.5). The simulator's side is tested with
/// the comparison, in the CLI.
#[test]
fn racksched_runs_use_preempting_server_queues() {
    let cfg = ClusterUpConfig::from_toml(
            "racks = 2\nworkers_per_rack = 4\nservers_per_rack = 2\n\
             [workload]\nservice = { kind = \"exp\", mean_us = 1000 }\nload = 0.5\nduration_ms = 100\n",
        )
        .unwrap();
    let dir = std::env::temp_dir().join(format!("netsched-model-{}", std::process::id()));
    let worker = |policy: &str| {
        let p = plan(&cfg, policy, &dir.join(policy)).unwrap();
        let path = &p.daemons.iter().find(|d| d.0 == "worker1").unwrap().2;
        netsched_node::config::WorkerConfig::from_toml(&std::fs::read_to_string(path).unwrap())
            .unwrap()
    };
    let (horus, rsh) = (worker("horus"), worker("rs-h"));
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(
        (horus.listen.len(), horus.executors, horus.preempt_us),
        (4, 1, 0)
    );
    assert_eq!(
        (rsh.listen.len(), rsh.executors, rsh.preempt_us),
        (2, 2, 250)
    );
    assert!(ClusterUpConfig::from_toml(
            "workers_per_rack = 3\nservers_per_rack = 2\n[workload]\nservice = { kind = \"exp\", mean_us = 1 }\nload = 0.5\nduration_ms = 1\n"
        )
        .is_err());
}

#[test]
fn rocksdb_medians_come_from_the_worker_logs() {
    let dir = std::env::temp_dir().join(format!("netsched-rlog-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (r, (g, s)) in [(40, 700), (60, 900)].iter().enumerate() {
        std::fs::write(
                dir.join(format!("worker{r}.log")),
                format!(
                    "2026-11-26T11:00:00.000000Z  INFO worker: rocksdb ready keys=10 get60_us={g} scan5000_us={s}\n"
                ),
            )
            .unwrap();
    }
    assert_eq!(rocksdb_medians(&dir, 2), Some((50.0, 800.0)));
    assert_eq!(rocksdb_medians(&dir, 3), None, "a worker without the line");
    let _ = std::fs::remove_dir_all(&dir);
}
