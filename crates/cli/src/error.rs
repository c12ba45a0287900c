//! The CLI's errors: what a command refused or why it failed, as one line
//! `main` prints after `error: ` (exit code 1). The crates a command drives
//! keep their own typed errors ([`Cause`]); the CLI adds only where the
//! error was met: the config file (`PATH: field: msg`, the message
//! `netsched check` repeats), the flag, or the output being written.

use std::path::PathBuf;

/// Why a command did not do its job.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// A file's contents or a file operation: `PATH: why`.
    #[error("{}: {source}", path.display())]
    InFile {
        path: PathBuf,
        #[source]
        source: Box<Cause>,
    },
    /// Where a value came from that is no file (an address): `AT: why`.
    #[error("{at}: {source}")]
    At {
        at: String,
        #[source]
        source: Box<Cause>,
    },
    /// A config with a secret inline that others may read.
    #[error("{0} (or use token_file/key_file, or the environment)")]
    InlineSecret(#[source] netsched_node::secret::SecretError),
    /// A command-line flag's value: `--flag: why`.
    #[error("{flag}: {source}")]
    Flag {
        flag: &'static str,
        #[source]
        source: Box<Cause>,
    },
    /// An output file or directory: `writing PATH: why`.
    #[error("writing {}: {source}", path.display())]
    Writing {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A driver's own error, its message unchanged.
    #[error(transparent)]
    Cause(Box<Cause>),
    /// Flags out of range or in contradiction, in words naming them.
    #[error("{0}")]
    Usage(String),
    /// A run that ended without doing what it is for (no task completed, a
    /// log without the line a comparison reads).
    #[error("{0}")]
    Run(String),
    /// Baraat's UDP lab (`netsched_lab::baraat`): its namespaces could not
    /// be made, or a run failed.
    #[error(transparent)]
    BaraatLab(#[from] netsched_lab::baraat::LabError),
    #[error(transparent)]
    BaraatRun(#[from] netsched_lab::baraat::Fig7Error),
    /// What the operating system refused: `signal handlers: why`.
    #[error("{what}: {source}")]
    Os {
        what: &'static str,
        #[source]
        source: std::io::Error,
    },
    /// A program the command runs could not be started: `PROGRAM: why`.
    #[error("{program}: {source}{}", if *.hint { " (set NETSCHED_PYTHON to a Python 3.9+ interpreter)" } else { "" })]
    Spawn {
        program: String,
        #[source]
        source: std::io::Error,
        /// Say how to choose another interpreter.
        hint: bool,
    },
    /// `netsched experiment`/`report` without the Python package.
    #[error("the netsched Python package is not installed for {0}: run `pip install .` at the repository root (docs/experiments.md)")]
    NoPythonPackage(String),
}

/// The typed errors of the crates the CLI drives, each with its message.
#[derive(Debug, thiserror::Error)]
pub enum Cause {
    #[error(transparent)]
    Io(#[from] std::io::Error),
    #[error(transparent)]
    Config(#[from] netsched_config::ConfigError),
    #[error(transparent)]
    Name(#[from] netsched_core::names::NameError),
    #[error(transparent)]
    Policy(#[from] netsched_core::names::UnknownPolicy),
    #[error(transparent)]
    Node(#[from] netsched_node::Error),
    #[error(transparent)]
    NodeConfig(#[from] netsched_node::config::ConfigError),
    #[error(transparent)]
    Pull(#[from] netsched_node::pull::PullError),
    #[error(transparent)]
    Secret(#[from] netsched_node::secret::SecretError),
    #[error(transparent)]
    Lab(#[from] netsched_lab::error::Error),
    #[error(transparent)]
    Compare(#[from] netsched_flowsim::compare::CompareError),
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    #[error(transparent)]
    TomlSer(#[from] toml::ser::Error),
}

/// `?` on a driver's error: the error itself, message unchanged.
macro_rules! via_cause {
    ($($t:ty),*) => {$(
        impl From<$t> for CliError {
            fn from(e: $t) -> Self {
                CliError::Cause(Box::new(e.into()))
            }
        }
    )*};
}

via_cause!(
    std::io::Error,
    netsched_config::ConfigError,
    netsched_core::names::NameError,
    netsched_core::names::UnknownPolicy,
    netsched_node::Error,
    netsched_node::config::ConfigError,
    netsched_node::pull::PullError,
    netsched_node::secret::SecretError,
    netsched_lab::error::Error,
    netsched_flowsim::compare::CompareError,
    serde_json::Error,
    toml::ser::Error
);

impl CliError {
    /// `PATH: why` for an error met reading or checking `path`.
    pub fn in_file(path: impl Into<PathBuf>) -> impl FnOnce(Cause) -> CliError {
        let path = path.into();
        move |source| CliError::InFile {
            path,
            source: Box::new(source),
        }
    }

    /// `--flag: why`.
    pub fn flag(flag: &'static str) -> impl FnOnce(Cause) -> CliError {
        move |source| CliError::Flag {
            flag,
            source: Box::new(source),
        }
    }

    /// `AT: why` for a value from somewhere that is no file.
    pub fn at(at: impl Into<String>) -> impl FnOnce(Cause) -> CliError {
        let at = at.into();
        move |source| CliError::At {
            at,
            source: Box::new(source),
        }
    }

    /// `WHAT: why` for an operating-system call.
    pub fn os(what: &'static str) -> impl FnOnce(std::io::Error) -> CliError {
        move |source| CliError::Os { what, source }
    }

    /// `writing PATH: why`.
    pub fn writing(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> CliError {
        let path = path.into();
        move |source| CliError::Writing { path, source }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_keep_their_context_and_the_source() {
        let e = CliError::in_file("a.toml")(
            netsched_config::ConfigError::new("workload.load", "too high").into(),
        );
        assert_eq!(e.to_string(), "a.toml: workload.load: too high");
        assert!(matches!(
            e,
            CliError::InFile { ref source, .. } if matches!(**source, Cause::Config(_))
        ));
        let e = CliError::flag("--policy")(
            netsched_core::names::PullPolicy::parse("r2p2")
                .unwrap_err()
                .into(),
        );
        assert!(
            e.to_string()
                .starts_with("--policy: pull policy `r2p2` is renamed: use `r2p2-recirc`"),
            "{e}"
        );
        let io = std::io::Error::new(std::io::ErrorKind::NotFound, "gone");
        assert_eq!(
            CliError::writing("out")(io).to_string(),
            "writing out: gone"
        );
    }
}
