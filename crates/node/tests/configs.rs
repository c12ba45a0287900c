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

/// `datapath = "xdp"` runs a Horus leaf or spine and refuses what the
/// programs cannot run, naming the key.
#[test]
fn xdp_datapath_configs_the_program_cannot_run_are_refused() {
    let leaf = |extra: &str, instance: &str| {
        format!(
            "listen = \"10.0.0.2:7101\"\ndatapath = \"xdp\"\n{extra}\n\
             [[instance]]\npool = 1\nrole = \"leaf\"\n{instance}"
        )
    };
    let xdp = "[xdp]\ninterface = \"eth0\"\nmode = \"generic\"\n";
    let ok = leaf(xdp, "downstream = [\"10.0.0.3:9000\"]");
    let c = SwitchConfig::from_toml(&ok).unwrap();
    assert_eq!(c.datapath, netsched_node::config::Datapath::Xdp);
    let x = c.xdp.unwrap();
    assert_eq!(
        (x.interface.as_str(), x.mode),
        ("eth0", netsched_node::config::XdpMode::Generic)
    );
    // A spine runs in XDP too, over its leaves.
    let spine = |extra: &str, instance: &str| {
        leaf(
            extra,
            &format!("{instance}downstream = [\"10.0.0.3:7101\"]\nrack_workers = [2]"),
        )
        .replace("role = \"leaf\"", "role = \"spine\"")
    };
    let c = SwitchConfig::from_toml(&spine(xdp, "")).unwrap();
    assert_eq!(c.instances[0].role, netsched_node::config::Role::Spine);
    // The leaf and the spine run on every CPU with cpus = "all"; one CPU
    // by default.
    let all = format!("{xdp}cpus = \"all\"\n");
    let c = SwitchConfig::from_toml(&leaf(&all, "downstream = [\"10.0.0.3:9000\"]")).unwrap();
    assert_eq!(c.xdp.unwrap().cpus, netsched_node::config::XdpCpus::All);
    let c = SwitchConfig::from_toml(&spine(&all, "")).unwrap();
    assert_eq!(c.xdp.unwrap().cpus, netsched_node::config::XdpCpus::All);
    assert_eq!(x.cpus, netsched_node::config::XdpCpus::One);
    let sixty_five = (0..65)
        .map(|i| format!("\"10.0.1.{i}:9000\""))
        .collect::<Vec<_>>()
        .join(", ");
    for (bad, why) in [
        (leaf("", "downstream = [\"10.0.0.3:9000\"]"), "needs [xdp] interface"),
        (
            leaf(xdp, "policy = \"horus-tokens\"\ndownstream = [\"10.0.0.3:9000\"]"),
            "instance.policy",
        ),
        (
            leaf(xdp, &format!("downstream = [{sixty_five}]")),
            "instance.downstream: 65 workers exceed the XDP program's 64",
        ),
        (
            leaf(xdp, "downstream = [\"10.0.0.3:9000\"]\nclients = [\"10.0.0.9:1\"]"),
            "instance.clients",
        ),
        (
            leaf(xdp, "downstream = [\"10.0.0.3:9000\"]").replace("10.0.0.2:7101", "0.0.0.0:7101"),
            "listen",
        ),
        (
            spine(xdp, "policy = \"horus-tokens\"\n"),
            "instance.policy",
        ),
        (
            format!("{ok}\n[[instance]]\npool = 2\nrole = \"leaf\"\ndownstream = [\"10.0.0.3:9000\"]"),
            "instance: exactly one",
        ),
        (
            format!("listen = \"x\"\n{xdp}\n[[instance]]\npool = 1\nrole = \"leaf\"\ndownstream = [\"10.0.0.3:9000\"]"),
            "[xdp] is for datapath = \"xdp\"",
        ),
    ] {
        let e = SwitchConfig::from_toml(&bad).unwrap_err().to_string();
        assert!(e.contains(why), "{e:?} should say {why:?}");
        assert!(!e.contains('\n'), "one line: {e:?}");
    }
}
