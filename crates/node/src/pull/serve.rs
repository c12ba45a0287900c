//! A pull daemon's run in its process: its metrics endpoint beside it and
//! the start and stop lines of the log, whichever datapath schedules
//! ([`super::switch`] in this process, [`super::xdp`] as the XDP program).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use super::config::PullSwitchConfig;
use super::error::PullError;
use crate::metrics::Registry;

/// What the "started" line says of the daemon.
pub(super) struct Started<'a> {
    pub listen: SocketAddr,
    pub policy: &'a str,
    pub datapath: &'static str,
}

/// Runs `run` (the daemon's loop, until `stop`) with `registry` served at
/// `cfg.metrics`. An error ends the run before `stop` does, so `stop` is set
/// then too: the endpoint waits on it.
pub(super) fn run_with_metrics(
    cfg: &PullSwitchConfig,
    registry: Arc<Registry>,
    started: Started<'_>,
    stop: &Arc<AtomicBool>,
    run: impl FnOnce() -> Result<(), PullError>,
) -> Result<(), PullError> {
    let metrics =
        match &cfg.metrics {
            Some(a) => Some(crate::metrics::serve(a, registry, stop.clone()).map_err(
                |source| PullError::Metrics {
                    addr: a.clone(),
                    source,
                },
            )?),
            None => None,
        };
    tracing::info!(
        target: "pull-switch",
        listen = %started.listen,
        policy = %started.policy,
        datapath = started.datapath,
        executors = cfg.executors.len(),
        metrics = %metrics.as_ref().map_or_else(|| "off".to_string(), |m| m.0.to_string()),
        "started"
    );
    let result = run();
    stop.store(true, Ordering::Relaxed);
    if let Some((_, h)) = metrics {
        let _ = h.join();
    }
    result?;
    tracing::info!(target: "pull-switch", "stopped");
    Ok(())
}
