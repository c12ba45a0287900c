//! `netsched experiment` and `netsched report`: the experiment catalog lives
//! in the `netsched` Python package (docs/experiments.md); these commands run
//! `python3 -m netsched ...` with the same arguments so that one binary is the
//! entry point for everything.

use std::process::Command;

#[derive(clap::Subcommand)]
pub enum PyCmd {
    /// The experiment catalog: `list`, `run NAME|all [--scale reduced|paper] [--out DIR]
    /// [--scheduler ADDR]` (runs `python3 -m netsched experiment ...`).
    #[command(disable_help_flag = true)]
    Experiment {
        /// Passed to `python3 -m netsched experiment` (list, run NAME..., claims).
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// The results as a website, an index and a page per entry: `[--results DIR] [--out DIR]`.
    #[command(disable_help_flag = true)]
    Report {
        /// Passed to `python3 -m netsched report` (--results DIR, --out DIR).
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
}

/// `NETSCHED_PYTHON` picks the interpreter (a virtualenv's, say).
fn python() -> String {
    std::env::var("NETSCHED_PYTHON").unwrap_or_else(|_| "python3".to_string())
}

pub fn run(cmd: PyCmd) -> Result<(), crate::error::CliError> {
    use crate::error::CliError;
    let (sub, args) = match cmd {
        PyCmd::Experiment { args } => ("experiment", args),
        PyCmd::Report { args } => ("report", args),
    };
    let py = python();
    let probe = Command::new(&py)
        .args(["-c", "import netsched._native"])
        .output()
        .map_err(|source| CliError::Spawn {
            program: py.clone(),
            source,
            hint: true,
        })?;
    if !probe.status.success() {
        return Err(CliError::NoPythonPackage(py));
    }
    let status = Command::new(&py)
        .args(["-m", "netsched", sub])
        .args(&args)
        .status()
        .map_err(|source| CliError::Spawn {
            program: py.clone(),
            source,
            hint: false,
        })?;
    if status.success() {
        Ok(())
    } else {
        // The Python side has already printed its one-line error.
        std::process::exit(status.code().unwrap_or(1));
    }
}
