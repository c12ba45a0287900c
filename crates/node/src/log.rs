//! Logging: every daemon logs through `tracing` with its role as the target
//! (`switch`, `worker`, `controller`, `pull-switch`, `pull-worker`), values in
//! Display form; the CLI installs a `tracing-subscriber` formatter on stderr
//! filtered by `RUST_LOG` (default `info`; e.g. `RUST_LOG=switch=warn`).

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use signal_hook::consts::{SIGINT, SIGTERM};
use tracing_subscriber::EnvFilter;

/// Installs the stderr formatter once per process (later calls do nothing).
pub fn init() {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .try_init();
}

/// On SIGTERM or SIGINT, logs which signal came and sets `stop`, so the
/// daemon leaves its loops, logs its `stopped` line and exits 0.
pub fn stop_on_signals(daemon: &'static str, stop: Arc<AtomicBool>) -> std::io::Result<()> {
    let mut signals = signal_hook::iterator::Signals::new([SIGTERM, SIGINT])?;
    std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            if let Some(sig) = signals.forever().next() {
                let name = if sig == SIGTERM { "SIGTERM" } else { "SIGINT" };
                tracing::info!(target: "netsched", daemon = %daemon, signal = %name, "shutting down on signal");
                stop.store(true, Ordering::Relaxed);
            }
        })?;
    Ok(())
}
