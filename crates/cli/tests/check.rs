//! `netsched check` reads every kind of config its command reads: every
//! TOML shipped in experiments/ and every config `cluster up` writes pass
//! it, and a bad config fails it with the message its own command gives.

mod common;

use std::path::{Path, PathBuf};

use common::netsched;

fn experiments() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../experiments")
}

fn tomls(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            tomls(&p, out);
        } else if p.extension().is_some_and(|e| e == "toml") {
            out.push(p);
        }
    }
}

fn check(path: &Path) -> (i32, String, String) {
    netsched(&["check", &path.to_string_lossy()])
}

#[test]
fn every_shipped_config_passes_check() {
    let mut files = Vec::new();
    tomls(&experiments(), &mut files);
    assert!(files.len() >= 20, "{files:?}");
    let mut failed = Vec::new();
    for f in &files {
        let (code, out, err) = check(f);
        if code != 0 || !out.trim_end().ends_with(": ok") {
            failed.push(format!("{}: {err}{out}", f.display()));
        }
    }
    assert!(failed.is_empty(), "check refused:\n{}", failed.join("\n"));
}

/// The kind `check` reports is the command that runs the file.
#[test]
fn check_names_the_command_of_each_kind() {
    let e = experiments();
    for (file, cmd) in [
        ("main.toml", "netsched sim -c"),
        ("draconis.toml", "netsched pull -c"),
        ("baraat.toml", "netsched flowsim -c"),
        ("cluster-small.toml", "netsched cluster up"),
        ("pull-runtime/switch.toml", "netsched switch -c"),
        ("pull-runtime/worker.toml", "netsched worker -c"),
        ("pull-runtime/client.toml", "netsched client -c"),
    ] {
        let (code, out, err) = check(&e.join(file));
        assert_eq!(code, 0, "{file}: {err}");
        assert!(out.contains(&format!("`{cmd} ")), "{file}: {out}");
    }
}

/// Every config `cluster up` writes for every policy of every shipped
/// cluster config (controller, spines, leaves, workers, client) passes
/// `check`, as the daemon started on it would accept it.
#[test]
fn every_config_cluster_up_writes_passes_check() {
    use netsched_lab::cluster_up::{write_configs, ClusterUpConfig};
    let dir = common::temp_dir("check-cluster");
    let mut n = 0;
    for name in [
        "cluster-small.toml",
        "cluster-agree.toml",
        "cluster-rocksdb.toml",
    ] {
        let text = std::fs::read_to_string(experiments().join(name)).unwrap();
        let mut cfg = ClusterUpConfig::from_toml(&text).unwrap();
        cfg.prometheus = true;
        for policy in cfg.policies.clone() {
            let out = dir.join(name).join(&policy);
            let written = write_configs(&cfg, &policy, &out).unwrap();
            assert!(written.len() >= 5, "{written:?}");
            for p in written {
                let (code, stdout, err) = check(&p);
                assert_eq!(code, 0, "{}: {err}", p.display());
                assert!(stdout.trim_end().ends_with(": ok"), "{stdout}");
                n += 1;
            }
            let prom = std::fs::read_to_string(out.join("prometheus.yml")).unwrap();
            for job in ["controller", "switch", "worker", "client"] {
                assert!(
                    prom.contains(&format!("job_name: netsched-{job}")),
                    "{prom}"
                );
            }
            promtool_check_config(&out.join("prometheus.yml"));
        }
    }
    assert!(n >= 30, "{n} configs");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `promtool check config` on a scrape configuration, where promtool is
/// installed (scripts/install-deps.sh installs it; NETSCHED_REQUIRE_PROMTOOL=1
/// makes its absence a failure).
fn promtool_check_config(path: &Path) {
    let out = match std::process::Command::new("promtool")
        .args(["check", "config", &path.to_string_lossy()])
        .output()
    {
        Ok(o) => o,
        Err(_) => {
            assert!(
                std::env::var("NETSCHED_REQUIRE_PROMTOOL").as_deref() != Ok("1"),
                "NETSCHED_REQUIRE_PROMTOOL=1 but promtool is not installed"
            );
            return;
        }
    };
    assert!(
        out.status.success(),
        "promtool check config {}: {}{}",
        path.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The command's stderr and `check`'s are the same one line.
fn same_error(name: &str, text: &str, command: &[&str]) -> String {
    let dir = common::temp_dir("check-bad");
    let p = common::write_config(&dir, name, text);
    let mut args: Vec<&str> = command.to_vec();
    args.push(&p);
    let (code, _, run_err) = netsched(&args);
    assert_ne!(code, 0, "{name}: {command:?} accepted it");
    let (code, _, check_err) = netsched(&["check", &p]);
    assert_eq!(code, 1, "{name}: check accepted it");
    assert_eq!(check_err.trim_end().lines().count(), 1, "{check_err}");
    assert_eq!(check_err, run_err, "{name}");
    check_err
}

/// 100,000 pools parse, but do not fit the fat tree's cores: `sim` refuses
/// them before simulating, and `check` with the same message.
#[test]
fn too_many_pools_fail_check_as_they_fail_sim() {
    let text = std::fs::read_to_string(experiments().join("main.toml"))
        .unwrap()
        .replace("pools = 30", "pools = 100000");
    let err = same_error(
        "pools100k.toml",
        &text,
        &["sim", "-q", "--out", "/dev/null/x", "-c"],
    );
    assert!(err.contains(": placement: 100000 pools need"), "{err}");
    assert!(err.contains("but the topology has"), "{err}");
}

#[test]
fn bad_configs_of_each_kind_fail_check_with_their_commands_message() {
    let e = experiments();
    let read = |f: &str| std::fs::read_to_string(e.join(f)).unwrap();
    let err = same_error(
        "pull-bad.toml",
        &read("draconis.toml").replace("nodes = 10", "nodes = 0"),
        &["pull", "-q", "--out", "/dev/null/x", "-c"],
    );
    assert!(err.contains("cluster.nodes"), "{err}");
    let err = same_error(
        "flow-bad.toml",
        &read("baraat.toml").replace("pods = 30", "pods = 0"),
        &["flowsim", "-q", "--out", "/dev/null/x", "-c"],
    );
    assert!(err.contains("topology.pods"), "{err}");
    let err = same_error(
        "worker-bad.toml",
        &read("pull-runtime/worker.toml").replace("node = 0", "node = 0\nbogus = 1"),
        &["worker", "-c"],
    );
    assert!(err.contains("bogus"), "{err}");
    let err = same_error(
        "client-bad.toml",
        &read("pull-runtime/client.toml").replace("rate = 10000", "rate = -5"),
        &["client", "-c"],
    );
    assert!(err.contains("rate"), "{err}");
    let err = same_error(
        "cluster-bad.toml",
        &read("cluster-small.toml").replace("\"rs-h\"", "\"rs-x\""),
        &["cluster", "up"],
    );
    assert!(err.contains("rs-x"), "{err}");
}

/// `--kind` overrides detection; a config read as the wrong kind fails with
/// that kind's message.
#[test]
fn kind_can_be_forced() {
    let p = experiments().join("draconis.toml");
    let (code, _, err) = netsched(&["check", "--kind", "sim", &p.to_string_lossy()]);
    assert_eq!(code, 1, "{err}");
    let (code, out, err) = netsched(&["check", "--kind", "pull", &p.to_string_lossy()]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("netsched pull -c"), "{out}");
}
