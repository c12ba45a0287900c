//! Cluster secrets: the control-plane key (HMAC-SHA256, see
//! [`controller::proto`](crate::controller::proto)) and the admin bearer token.
//!
//! Both come from the OS random source ([`generate_hex`], `getrandom`), are
//! stored in files created with mode 0600 ([`write_secret_file`]), and are
//! read either from such a file ([`read_secret_file`] refuses one that group
//! or others may read) or from an environment variable. No function here
//! logs or formats a secret: [`ClusterKey`]'s `Debug` is redacted, so a
//! config dumped with `{:?}` cannot leak it.

use std::io::{self, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Why a secret could not be made, stored or read.
#[derive(Debug, thiserror::Error)]
pub enum SecretError {
    #[error("OS random source: {0}")]
    Random(getrandom::Error),
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// Group or others may read the file.
    #[error("{}: holds a secret but has mode {mode:o}; run `chmod 600` on it", path.display())]
    NotPrivate { path: PathBuf, mode: u32 },
    #[error("a cluster key is {} hex digits (got {got})", 2 * KEY_LEN)]
    KeyLength { got: usize },
    #[error("a cluster key is hex digits only")]
    KeyNotHex,
    /// A key that is no key, and where it came from (`key`, a file, `$VAR`).
    #[error("{origin}: {source}")]
    BadKey {
        origin: String,
        #[source]
        source: Box<SecretError>,
    },
    #[error("no cluster key: set `key_file` (a mode-0600 file) or the {var} environment variable")]
    NoKey { var: String },
}

/// For callers that report errors as text (the CLI).
impl From<SecretError> for String {
    fn from(e: SecretError) -> String {
        e.to_string()
    }
}

impl SecretError {
    fn io(path: &Path) -> impl FnOnce(io::Error) -> SecretError + '_ {
        move |source| SecretError::Io {
            path: path.to_path_buf(),
            source,
        }
    }

    fn bad_key(origin: impl std::fmt::Display) -> impl FnOnce(SecretError) -> SecretError {
        move |e| SecretError::BadKey {
            origin: origin.to_string(),
            source: Box::new(e),
        }
    }
}

/// Environment variable holding the cluster key (64 hex digits) when a
/// config names neither `key` nor `key_file`.
pub const KEY_ENV: &str = "NETSCHED_CLUSTER_KEY";

/// Bytes of a cluster key (HMAC-SHA256's block-size-independent sweet spot:
/// its output size).
pub const KEY_LEN: usize = 32;

/// `n` bytes from the OS random source, hex encoded.
pub fn generate_hex(n: usize) -> Result<String, SecretError> {
    let mut b = vec![0u8; n];
    getrandom::fill(&mut b).map_err(SecretError::Random)?;
    Ok(hex(&b))
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Writes `text` to `path` with mode 0600, replacing any previous file, and
/// syncs it. The mode is set at creation (no window in which another user
/// could open it) and again afterwards, for a file that already existed.
pub fn write_secret_file(path: &Path, text: &str) -> Result<(), SecretError> {
    let e = |x: io::Error| SecretError::io(path)(x);
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .map_err(e)?;
    f.set_permissions(std::fs::Permissions::from_mode(0o600))
        .map_err(e)?;
    f.write_all(text.as_bytes()).map_err(e)?;
    f.sync_all().map_err(e)
}

/// Refuses a file that group or others may read or write: a secret there is
/// no secret.
pub fn check_private(path: &Path) -> Result<(), SecretError> {
    let m = std::fs::metadata(path).map_err(SecretError::io(path))?;
    let mode = m.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(SecretError::NotPrivate {
            path: path.to_path_buf(),
            mode,
        });
    }
    Ok(())
}

/// Reads a secret from a private file (mode 0600 or stricter), trimmed.
pub fn read_secret_file(path: &Path) -> Result<String, SecretError> {
    check_private(path)?;
    let s = std::fs::read_to_string(path).map_err(SecretError::io(path))?;
    Ok(s.trim().to_string())
}

/// A secret given inline in a config (tests, or a config file the CLI has
/// checked is private): deserializes from a string, never prints.
#[derive(Clone, PartialEq, Eq, serde::Deserialize)]
#[serde(transparent)]
pub struct Secret(String);

impl Secret {
    pub fn new(s: impl Into<String>) -> Secret {
        Secret(s.into())
    }

    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("<redacted>")
    }
}

/// The per-cluster key of the control protocol.
#[derive(Clone, PartialEq, Eq)]
pub struct ClusterKey([u8; KEY_LEN]);

impl std::fmt::Debug for ClusterKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ClusterKey(<redacted>)")
    }
}

impl ClusterKey {
    /// A fresh key from the OS random source.
    pub fn generate() -> Result<ClusterKey, SecretError> {
        let mut b = [0u8; KEY_LEN];
        getrandom::fill(&mut b).map_err(SecretError::Random)?;
        Ok(ClusterKey(b))
    }

    /// From 64 hex digits. The error never echoes the input.
    pub fn from_hex(s: &str) -> Result<ClusterKey, SecretError> {
        let s = s.trim().as_bytes();
        if s.len() != 2 * KEY_LEN {
            return Err(SecretError::KeyLength { got: s.len() });
        }
        let mut b = [0u8; KEY_LEN];
        for (i, pair) in s.chunks(2).enumerate() {
            let d = |c: u8| (c as char).to_digit(16).map(|v| v as u8);
            match (d(pair[0]), d(pair[1])) {
                (Some(h), Some(l)) => b[i] = h << 4 | l,
                _ => return Err(SecretError::KeyNotHex),
            }
        }
        Ok(ClusterKey(b))
    }

    pub fn to_hex(&self) -> String {
        hex(&self.0)
    }

    pub fn bytes(&self) -> &[u8; KEY_LEN] {
        &self.0
    }

    /// The key a config names: inline `key` (tests; a config file holding it
    /// must itself be private, which the CLI checks), else `key_file`, else
    /// the environment variable `key_env` (default [`KEY_ENV`]).
    pub fn resolve(
        key: Option<&str>,
        key_file: Option<&Path>,
        key_env: Option<&str>,
    ) -> Result<ClusterKey, SecretError> {
        if let Some(k) = key {
            return ClusterKey::from_hex(k).map_err(SecretError::bad_key("key"));
        }
        if let Some(p) = key_file {
            return ClusterKey::from_hex(&read_secret_file(p)?)
                .map_err(SecretError::bad_key(p.display()));
        }
        let var = key_env.unwrap_or(KEY_ENV);
        let v = std::env::var(var).map_err(|_| SecretError::NoKey {
            var: var.to_string(),
        })?;
        ClusterKey::from_hex(&v).map_err(SecretError::bad_key(format!("${var}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_round_trip_and_never_print() {
        let k = ClusterKey::generate().unwrap();
        assert_eq!(ClusterKey::from_hex(&k.to_hex()).unwrap(), k);
        assert_ne!(ClusterKey::generate().unwrap(), k, "fresh randomness");
        assert!(!format!("{k:?}").contains(&k.to_hex()[..8]));
        let e = ClusterKey::from_hex(&"zz".repeat(32))
            .unwrap_err()
            .to_string();
        assert!(!e.contains("zz"), "{e}");
        assert!(ClusterKey::from_hex("00").is_err());
    }

    #[test]
    fn secret_files_are_private_and_public_ones_are_refused() {
        let dir = std::env::temp_dir().join(format!("netsched-secret-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("k");
        let k = ClusterKey::generate().unwrap();
        write_secret_file(&p, &k.to_hex()).unwrap();
        let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert_eq!(ClusterKey::resolve(None, Some(&p), None).unwrap(), k);
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
        let e = ClusterKey::resolve(None, Some(&p), None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("chmod 600"), "{e}");
        // Rewriting an existing public file makes it private again.
        write_secret_file(&p, "x").unwrap();
        assert_eq!(read_secret_file(&p).unwrap(), "x");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
