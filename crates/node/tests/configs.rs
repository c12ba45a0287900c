//! The example configs of docs/runtime.md parse and are consistent.

use netsched_node::config::Role;
use netsched_node::{ClientConfig, SwitchConfig, WorkerConfig};

const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/configs/local");

fn read(name: &str) -> String {
    std::fs::read_to_string(format!("{DIR}/{name}")).unwrap()
}

#[test]
fn local_cluster_configs_parse_and_agree() {
    let spine = SwitchConfig::from_toml(&read("spine.toml")).unwrap();
    let client = ClientConfig::from_toml(&read("client.toml")).unwrap();
    assert_eq!(client.targets[0].addr.to_string(), spine.listen);
    let s = &spine.instances[0];
    assert_eq!(s.role, Role::Spine);
    for r in 0..2 {
        let leaf = SwitchConfig::from_toml(&read(&format!("leaf{r}.toml"))).unwrap();
        let worker = WorkerConfig::from_toml(&read(&format!("worker{r}.toml"))).unwrap();
        let l = &leaf.instances[0];
        assert_eq!(l.role, Role::Leaf);
        assert_eq!(l.rack as usize, r);
        assert_eq!(s.downstream[r].to_string(), leaf.listen);
        assert_eq!(l.upstream[0].to_string(), spine.listen);
        assert_eq!(worker.leaf.unwrap().to_string(), leaf.listen);
        let execs: Vec<String> = l.downstream.iter().map(|a| a.to_string()).collect();
        assert_eq!(execs, worker.listen);
        assert_eq!(s.rack_workers[r] as usize, worker.listen.len());
    }
}

#[test]
fn invalid_configs_are_rejected_with_a_message() {
    for (bad, why) in [
        ("listen = \"x\"\n[[instance]]\npool = 1\nrole = \"leaf\"\ndownstream = []", "no downstream"),
        ("listen = \"x\"\nbogus = 1", "unknown field"),
        (
            "listen = \"x\"\n[[instance]]\npool = 1\nrole = \"spine\"\ndownstream = [\"127.0.0.1:1\"]\nrack_workers = [1, 2]",
            "rack_workers",
        ),
        (
            "listen = \"x\"\n[[instance]]\npool = 1\nrole = \"leaf\"\ndownstream = [\"127.0.0.1:1\"]\n[[instance]]\npool = 1\nrole = \"leaf\"\ndownstream = [\"127.0.0.1:1\"]",
            "one instance per pool",
        ),
        // The registry's limits (netsched_core::registry::PlaneParams), the
        // simulator's too: refused here, not by a panic in the data plane.
        (
            "listen = \"x\"\n[[instance]]\npool = 1\nrole = \"leaf\"\npolicy = \"rs-h\"\nsamples = 17\ndownstream = [\"127.0.0.1:1\"]",
            "pool 1: samples: must be in 1..=16, got 17",
        ),
        (
            "listen = \"x\"\n[[instance]]\npool = 1\nrole = \"leaf\"\nk = 2\ndownstream = [\"127.0.0.1:1\"]",
            "instance.k (line 5): `k` is renamed: use `samples` (samples per power-of-k decision)",
        ),
        (
            "listen = \"x\"\n[[instance]]\npool = 1\nrole = \"leaf\"\npolicy = \"r2p2\"\njbsq_bound = 0\ndownstream = [\"127.0.0.1:1\"]",
            "pool 1: jbsq_bound: must be >= 1, got 0",
        ),
        (
            "listen = \"x\"\n[[instance]]\npool = 1\nrole = \"leaf\"\npolicy = \"jbsq\"\ndownstream = [\"127.0.0.1:1\"]",
            "unknown variant `jbsq`",
        ),
    ] {
        let e = SwitchConfig::from_toml(bad).unwrap_err().to_string();
        assert!(e.contains(why), "{e:?} should mention {why:?}");
    }
    let c = "targets = []\npool = 1\napp_id = 1\nrate = 10\nduration_ms = 1\nservice = { kind = \"fixed\", value_us = 1 }";
    assert!(ClientConfig::from_toml(c)
        .unwrap_err()
        .to_string()
        .contains("no targets"));
}
