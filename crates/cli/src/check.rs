//! `netsched check CONFIG`: everything a command would refuse, refused
//! without running. Each kind of config is read by the function its command
//! reads it with and goes through the checks that command makes before its
//! first event (the simulator's topology, placement and capacity; a pull
//! run's data-plane parameters; a daemon's private-file rule), so a config
//! passes `check` exactly when its command would start, and fails with the
//! command's own message.

use std::path::{Path, PathBuf};

use crate::error::CliError;
use crate::stdout::outln;

/// The kinds of config, one per command that reads one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Kind {
    /// `netsched sim` (Horus, RackSched and push baselines).
    Sim,
    /// `netsched pull` (Draconis, R2P2, Sparrow, Draconis-Server).
    Pull,
    /// `netsched flowsim` (Baraat and flow-scheduling baselines).
    Flowsim,
    /// `netsched switch` (push instances or a pull scheduler).
    Switch,
    /// `netsched worker`.
    Worker,
    /// `netsched client`.
    Client,
    /// `netsched controller`.
    Controller,
    /// `netsched cluster up`.
    Cluster,
}

impl Kind {
    /// The command that runs a config of this kind.
    pub fn command(self) -> &'static str {
        match self {
            Kind::Sim => "netsched sim -c",
            Kind::Pull => "netsched pull -c",
            Kind::Flowsim => "netsched flowsim -c",
            Kind::Switch => "netsched switch -c",
            Kind::Worker => "netsched worker -c",
            Kind::Client => "netsched client -c",
            Kind::Controller => "netsched controller -c",
            Kind::Cluster => "netsched cluster up",
        }
    }
}

/// The kind a config's top-level keys say it is. Each command's config has
/// keys no other has (the daemons' `listen`, `targets`, `instance`; the
/// cluster's `run_dir`, `workers_per_rack`; a pull run's `cluster` table; a
/// flow run's `policies` list); a config with none of them is a `sim`
/// config, whose tables are all optional.
pub fn detect(text: &str) -> Kind {
    let Ok(t) = toml::from_str::<toml::Table>(text) else {
        // Unparsable: the sim parser reports where.
        return Kind::Sim;
    };
    let has = |k: &str| t.contains_key(k);
    let any = |ks: &[&str]| ks.iter().any(|k| has(k));
    if any(&[
        "run_dir",
        "workers_per_rack",
        "servers_per_rack",
        "base_port",
        "sim_hop_us",
        "sim_scale",
        "calibrate",
        "racksched_preempt_us",
    ]) {
        return Kind::Cluster;
    }
    // A controller's `[[pool]]` is a list of tables; a worker's and a
    // client's `pool` is a number.
    if any(&["admin", "daemon_timeout_ms", "tick_ms", "state"])
        || t.get("pool").is_some_and(|v| v.is_array())
    {
        return Kind::Controller;
    }
    if let Some(listen) = t.get("listen") {
        // A worker listens on a list of executor addresses (a pull one
        // also names its scheduler); a switch on one address.
        return if listen.is_array() || has("scheduler") {
            Kind::Worker
        } else {
            Kind::Switch
        };
    }
    if any(&["instance", "executors"]) {
        return Kind::Switch;
    }
    if any(&["targets", "rate", "job_tasks", "scheduler"]) {
        return Kind::Client;
    }
    if t.get("policies").is_some_and(|v| v.is_array()) {
        return Kind::Flowsim;
    }
    // `sim` and `pull` share `policy`, `sweep`, `workload` and `network`;
    // each has tables of its own, and policy names of its own.
    if any(&[
        "cluster",
        "client",
        "draconis",
        "r2p2",
        "sparrow",
        "server",
        "racksched",
    ]) {
        return Kind::Pull;
    }
    let sweep = t
        .get("sweep")
        .and_then(|s| s.get("policies"))
        .and_then(|p| p.as_array());
    let names = t
        .get("policy")
        .into_iter()
        .chain(sweep.into_iter().flatten())
        .filter_map(|v| v.as_str());
    let pull_only = |n: &str| {
        netsched_config::pull::PullPolicy::parse(n).is_ok()
            && netsched_sim::config::Policy::parse(n).is_err()
    };
    if names.into_iter().any(pull_only) {
        return Kind::Pull;
    }
    Kind::Sim
}

/// Checks `path` as `kind` (detected if `None`); prints `PATH (KIND
/// config, `COMMAND PATH`): ok` or returns the command's own error.
pub fn run(path: &PathBuf, kind: Option<Kind>) -> Result<(), CliError> {
    let text = std::fs::read_to_string(path).map_err(|e| CliError::in_file(path)(e.into()))?;
    let kind = kind.unwrap_or_else(|| detect(&text));
    check_as(path, kind)?;
    outln!(
        "{} ({} config, `{} {}`): ok",
        path.display(),
        format!("{kind:?}").to_lowercase(),
        kind.command(),
        path.display()
    );
    Ok(())
}

fn check_as(path: &Path, kind: Kind) -> Result<(), CliError> {
    let path_buf = path.to_path_buf();
    match kind {
        Kind::Sim => crate::prepare_sim(&crate::load_config(&path_buf)?, path).map(|_| ()),
        Kind::Pull => crate::pull::prepare(&crate::pull::read_config(path)?, path),
        Kind::Flowsim => crate::flow::load_config(Some(&path_buf)).map(|_| ()),
        Kind::Switch => crate::node::load_switch(path).map(|_| ()),
        Kind::Worker => crate::node::load_worker(path).map(|_| ()),
        Kind::Client => crate::node::load_client(path).map(|_| ()),
        Kind::Controller => crate::node::load_controller(path).map(|_| ()),
        Kind::Cluster => crate::node::load_cluster_up(path).map(|_| ()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_shipped_config_is_detected_as_its_command_reads_it() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../experiments");
        for (file, kind) in [
            ("main.toml", Kind::Sim),
            ("fidelity/horus-sim-pool50.toml", Kind::Sim),
            ("draconis.toml", Kind::Pull),
            ("draconis-priority.toml", Kind::Pull),
            ("baraat.toml", Kind::Flowsim),
            ("baraat-two-stage.toml", Kind::Flowsim),
            ("cluster-small.toml", Kind::Cluster),
            ("pull-runtime/switch.toml", Kind::Switch),
            ("pull-runtime/worker.toml", Kind::Worker),
            ("pull-runtime/client.toml", Kind::Client),
        ] {
            let text = std::fs::read_to_string(root.join(file)).unwrap();
            assert_eq!(detect(&text), kind, "{file}");
        }
    }
}
