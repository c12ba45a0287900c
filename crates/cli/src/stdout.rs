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
