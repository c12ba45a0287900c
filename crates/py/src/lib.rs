//! `netsched._native`: the simulators behind the `netsched` Python package.
//!
//! Each entry point takes a TOML config as text, runs it in Rust with the GIL
//! released, and returns the files the CLI writes (`summary.json`, `runs.csv`,
//! ...) as strings, produced by the same report code, so the Python API and
//! `netsched sim` cannot disagree. Config errors become `ValueError` carrying
//! the CLI's one-line message (`label: field: msg`).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;

use netsched_flowsim::FlowConfig;
use netsched_sim::config::SimConfig;

/// The CLI prefixes config errors with the file they came from.
fn prefixed(label: Option<&str>, e: impl std::fmt::Display) -> String {
    match label {
        Some(l) if !l.is_empty() => format!("{l}: {e}"),
        _ => e.to_string(),
    }
}

/// A scratch directory for one call's output files, removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new() -> std::io::Result<Scratch> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let dir = std::env::temp_dir().join(format!(
            "netsched-py-{}-{}-{nanos}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir)?;
        Ok(Scratch(dir))
    }

    fn read(&self, name: &str) -> std::io::Result<String> {
        std::fs::read_to_string(self.0.join(name))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

enum Failure {
    Config(String),
    Io(String),
}

impl From<Failure> for PyErr {
    fn from(f: Failure) -> PyErr {
        match f {
            Failure::Config(m) => PyValueError::new_err(m),
            Failure::Io(m) => PyOSError::new_err(m),
        }
    }
}

fn parse_sim(text: &str, label: Option<&str>) -> Result<SimConfig, Failure> {
    SimConfig::from_toml(text).map_err(|e| Failure::Config(prefixed(label, e)))
}

fn parse_flow(text: &str, label: Option<&str>) -> Result<FlowConfig, Failure> {
    FlowConfig::from_toml(text).map_err(|e| Failure::Config(prefixed(label, e)))
}

/// The simulator's outputs for one config.
fn sim_outputs(
    cfg: &SimConfig,
    base_dir: &Path,
    progress: bool,
    label: Option<&str>,
) -> Result<(String, String, String, String), Failure> {
    use netsched_sim::report;
    use netsched_sim::run::{run_config, RunOpts};
    let runs = run_config(
        cfg,
        base_dir,
        &RunOpts {
            progress,
            ..RunOpts::default()
        },
    )
    // The checks a run makes before its first event (capacity, trace
    // files) name the file as the parse errors do, as `netsched sim` does.
    .map_err(|e| Failure::Config(prefixed(label, e)))?;
    let scratch = Scratch::new().map_err(|e| Failure::Io(e.to_string()))?;
    let io = |e: std::io::Error| Failure::Io(format!("{}: {e}", scratch.0.display()));
    report::write_outputs(&scratch.0, cfg, &runs).map_err(io)?;
    Ok((
        scratch.read("summary.json").map_err(io)?,
        scratch.read("runs.csv").map_err(io)?,
        scratch.read("pools.csv").map_err(io)?,
        report::table(&runs),
    ))
}

fn flow_outputs(cfg: &FlowConfig) -> Result<(String, String, String, String), Failure> {
    use netsched_flowsim::report;
    use netsched_flowsim::run::run_config;
    let runs = run_config(cfg, |_| {}).map_err(|e| Failure::Config(e.to_string()))?;
    let scratch = Scratch::new().map_err(|e| Failure::Io(e.to_string()))?;
    let io = |e: std::io::Error| Failure::Io(format!("{}: {e}", scratch.0.display()));
    report::write_outputs(&scratch.0, cfg, &runs).map_err(io)?;
    let mut table = report::table(&runs);
    if let Some(t4) = report::table4(&runs) {
        table.push_str(&t4);
    }
    Ok((
        scratch.read("summary.json").map_err(io)?,
        scratch.read("runs.csv").map_err(io)?,
        scratch.read("tasks.csv").map_err(io)?,
        table,
    ))
}

fn pull_outputs(
    cfg: &netsched_sim::pull::PullConfig,
    base_dir: &Path,
    label: Option<&str>,
) -> Result<(String, String, String), Failure> {
    use netsched_sim::pull::{self, report};
    let runs = pull::run_config(cfg, base_dir).map_err(|e| Failure::Config(prefixed(label, e)))?;
    let sums = report::summaries(cfg, &runs);
    let scratch = Scratch::new().map_err(|e| Failure::Io(e.to_string()))?;
    let io = |e: std::io::Error| Failure::Io(format!("{}: {e}", scratch.0.display()));
    report::write_outputs(&scratch.0, cfg, &sums).map_err(io)?;
    Ok((
        scratch.read("summary.json").map_err(io)?,
        scratch.read("runs.csv").map_err(io)?,
        report::table(cfg, &sums),
    ))
}

/// Runs a `netsched pull` config (the Draconis pull simulator; TOML text).
/// Returns (summary.json, runs.csv, table).
#[pyfunction]
#[pyo3(signature = (toml, label=None, base_dir="."))]
fn run_pull(
    py: Python<'_>,
    toml: &str,
    label: Option<&str>,
    base_dir: &str,
) -> PyResult<(String, String, String)> {
    let cfg = netsched_sim::pull::PullConfig::from_toml(toml)
        .map_err(|e| PyValueError::new_err(prefixed(label, e)))?;
    let base = PathBuf::from(base_dir);
    Ok(py.allow_threads(|| pull_outputs(&cfg, &base, label))?)
}

/// Runs a `netsched sim` config (TOML text). `label` (the file name, if any)
/// prefixes error messages as the CLI does; `base_dir` resolves relative
/// trace paths. Returns (summary.json, runs.csv, pools.csv, table).
#[pyfunction]
#[pyo3(signature = (toml, label=None, base_dir=".", threads=None, progress=false))]
fn run_sim(
    py: Python<'_>,
    toml: &str,
    label: Option<&str>,
    base_dir: &str,
    threads: Option<usize>,
    progress: bool,
) -> PyResult<(String, String, String, String)> {
    let mut cfg = parse_sim(toml, label)?;
    if let Some(t) = threads {
        cfg.threads = t;
    }
    let base = PathBuf::from(base_dir);
    Ok(py.allow_threads(|| sim_outputs(&cfg, &base, progress, label))?)
}

/// Runs a `netsched flowsim` config (TOML text). Returns (summary.json,
/// runs.csv, tasks.csv, table).
#[pyfunction]
#[pyo3(signature = (toml, label=None))]
fn run_flowsim(
    py: Python<'_>,
    toml: &str,
    label: Option<&str>,
) -> PyResult<(String, String, String, String)> {
    let cfg = parse_flow(toml, label)?;
    Ok(py.allow_threads(|| flow_outputs(&cfg))?)
}

/// The config as the simulator understands it, every default filled in, as
/// JSON: the canonical form the sweep cache hashes.
#[pyfunction]
#[pyo3(signature = (toml, label=None))]
fn canonical_sim(toml: &str, label: Option<&str>) -> PyResult<String> {
    let cfg = parse_sim(toml, label)?;
    serde_json::to_string(&cfg).map_err(|e| PyValueError::new_err(e.to_string()))
}

#[pyfunction]
#[pyo3(signature = (toml, label=None))]
fn canonical_flowsim(toml: &str, label: Option<&str>) -> PyResult<String> {
    let cfg = parse_flow(toml, label)?;
    cfg.validate()
        .map_err(|e| PyValueError::new_err(prefixed(label, e)))?;
    serde_json::to_string(&cfg).map_err(|e| PyValueError::new_err(e.to_string()))
}

/// The pull-simulator config (`netsched pull`) with every default filled in,
/// as JSON: the canonical form the sweep cache hashes for `kind="pull"`.
#[pyfunction]
#[pyo3(signature = (toml, label=None))]
fn canonical_pull(toml: &str, label: Option<&str>) -> PyResult<String> {
    let cfg = netsched_sim::pull::PullConfig::from_toml(toml)
        .map_err(|e| PyValueError::new_err(prefixed(label, e)))?;
    serde_json::to_string(&cfg).map_err(|e| PyValueError::new_err(e.to_string()))
}

/// Every pool's per-rack layout for a `netsched sim` config, as CSV: one row
/// per (pool, rack) with `pool_id,leaf_id,pod,workers,servers,spine_id`
/// (`spine_id`: the global id of the spine scheduler the rack's leaf reports
/// to, Horus §3.2). The same `Placement::place` call, seed and topology the
/// simulator uses, so it is exactly the layout a run of the config sees.
/// Horus App. C Fig. 19a groups pools by the variance of these counts.
#[pyfunction]
#[pyo3(signature = (toml, label=None))]
fn placement(py: Python<'_>, toml: &str, label: Option<&str>) -> PyResult<String> {
    use netsched_sim::topology::{Placement, Topology};
    let cfg = parse_sim(toml, label)?;
    let out = py.allow_threads(|| -> Result<String, Failure> {
        let cfg_err = |e: netsched_config::ConfigError| Failure::Config(prefixed(label, e));
        let topo = Topology::build(&cfg.topology).map_err(cfg_err)?;
        let placed = Placement::place(&topo, &cfg.placement, cfg.seed).map_err(cfg_err)?;
        Ok(placement_csv(&topo, &placed))
    })?;
    Ok(out)
}

fn placement_csv(
    topo: &netsched_sim::topology::Topology,
    p: &netsched_sim::topology::Placement,
) -> String {
    use std::fmt::Write as _;
    let mut s = String::from("pool_id,leaf_id,pod,workers,servers,spine_id\n");
    for pool in &p.pools {
        for (r, &slot) in pool.racks.iter().zip(&pool.leaf_spine) {
            let _ = writeln!(
                s,
                "{},{},{},{},{},{}",
                pool.pool_id,
                r.leaf_id,
                topo.leaf_pod(r.leaf_id),
                r.workers,
                r.servers.len(),
                pool.spines[slot as usize]
            );
        }
    }
    s
}

/// (version, commit) of the netsched this module was built from.
#[pyfunction]
fn build_info() -> (&'static str, &'static str) {
    let b = netsched_config::build_info::BUILD_INFO;
    (b.version, b.commit)
}

/// `clean`, or a digest of the uncommitted changes under `crates/` this
/// module was built with (crates/py/build.rs): part of the result cache key.
#[pyfunction]
fn source_tree() -> &'static str {
    env!("NETSCHED_SOURCE_TREE")
}

/// Every policy name by family (`push` for `run_sim`, `pull` for
/// `run_pull`, `flow` for `run_flowsim`), from the enums every driver
/// parses (`netsched_core::names`): Python lists these, not copies.
#[pyfunction]
fn policy_names() -> std::collections::BTreeMap<&'static str, Vec<&'static str>> {
    netsched_core::names::families().into_iter().collect()
}

/// JSON text of a table → TOML text, so a config given as a Python dict goes
/// through the same TOML parser (and error messages) as a file.
#[pyfunction]
fn json_to_toml(json: &str) -> PyResult<String> {
    let v: toml::Value =
        serde_json::from_str(json).map_err(|e| PyValueError::new_err(format!("config: {e}")))?;
    toml::to_string(&v).map_err(|e| PyValueError::new_err(format!("config: {e}")))
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(build_info, m)?)?;
    m.add_function(wrap_pyfunction!(source_tree, m)?)?;
    m.add_function(wrap_pyfunction!(run_sim, m)?)?;
    m.add_function(wrap_pyfunction!(run_flowsim, m)?)?;
    m.add_function(wrap_pyfunction!(run_pull, m)?)?;
    m.add_function(wrap_pyfunction!(placement, m)?)?;
    m.add_function(wrap_pyfunction!(canonical_sim, m)?)?;
    m.add_function(wrap_pyfunction!(canonical_flowsim, m)?)?;
    m.add_function(wrap_pyfunction!(canonical_pull, m)?)?;
    m.add_function(wrap_pyfunction!(json_to_toml, m)?)?;
    m.add_function(wrap_pyfunction!(policy_names, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
