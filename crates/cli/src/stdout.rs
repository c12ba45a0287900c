//! Standard output that its reader may close: `netsched sim … | head -1`,
//! `netsched check … | true`.
//!
//! Rust ignores SIGPIPE, so a write to a closed pipe fails with EPIPE and
//! `println!` panics ("failed printing to stdout"). Here a closed stdout
//! only silences the program: later output is dropped and the command
//! finishes its work as it would have (files written, children torn down by
//! their guards, exit code 0). Exiting on the spot would skip the
//! destructors that stop a benchmark's nginx or a cluster's daemons.

use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering};

static CLOSED: AtomicBool = AtomicBool::new(false);

/// Writes `text` to stdout unless its reader has gone. Another write error
/// (a full disk behind a redirect) is reported once on stderr.
pub fn write(text: &str) {
    if CLOSED.load(Ordering::Relaxed) {
        return;
    }
    let mut out = io::stdout().lock();
    if let Err(e) = out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        CLOSED.store(true, Ordering::Relaxed);
        if e.kind() != io::ErrorKind::BrokenPipe {
            eprintln!("warning: writing to stdout: {e}; further output dropped");
        }
    }
}

/// `println!` that survives a closed stdout ([`write`]).
macro_rules! outln {
    ($($arg:tt)*) => {
        $crate::stdout::write(&format!("{}\n", format_args!($($arg)*)))
    };
}
pub(crate) use outln;

/// What `sim`, `pull` and `flowsim` print on stdout once their files are
/// written: the human table, or one of the written files for a script to
/// read from a pipe.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// The table (and, for flowsim, Table 4's comparison).
    #[default]
    Table,
    /// summary.json: the config and every run's statistics.
    Json,
    /// runs.csv: one row per run.
    Csv,
}

/// Prints `table()` or the file `format` names from `out_dir`, which the
/// command has just written.
pub fn print(
    format: Format,
    out_dir: &std::path::Path,
    table: impl FnOnce() -> String,
) -> Result<(), crate::error::CliError> {
    let file = match format {
        Format::Table => {
            write(&table());
            return Ok(());
        }
        Format::Json => "summary.json",
        Format::Csv => "runs.csv",
    };
    let p = out_dir.join(file);
    let text =
        std::fs::read_to_string(&p).map_err(|e| crate::error::CliError::in_file(&p)(e.into()))?;
    write(&text);
    if !text.ends_with('\n') {
        write("\n");
    }
    Ok(())
}
