//! Sealed state messages in the runtime (wire format: `netsched_proto::seal`).
//!
//! Leaves seal their idleAdd, idleRemove and loadUpdate to the spine (Horus
//! §3.4), workers their keepAlive to the leaf (§A.3). A receiver with a key
//! drops an unsealed, wrongly sealed or replayed one and counts it
//! (`netsched_drops_total{by="runtime",reason="unsealed"|"bad_seal"|"replayed"}`).
//!
//! The notice key is derived from the cluster key the controller generates
//! for the cluster (`netsched cluster up` hands it to every daemon and
//! worker): HMAC-SHA256(cluster key, "netsched notice key v1"), first 16
//! bytes. So one secret serves both protocols while a leak of the notice key
//! (which an XDP program's maps hold) does not give away the control key.

use std::sync::atomic::{AtomicU64, Ordering};

use hmac::{Hmac, KeyInit, Mac};
use netsched_proto::seal::{self, NoticeKey, SealError, NOTICE_KEY_LEN};
use netsched_proto::EncodeError;
use serde::Deserialize;
use sha2::Sha256;

use crate::secret::ClusterKey;

/// Whether state messages are sealed (`notice_mac` in switch and worker configs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum NoticeMac {
    /// On whenever the process has a cluster key (`key`, `key_file` or the
    /// key variable), as every process `netsched cluster up` starts does;
    /// off for a static config without one.
    #[default]
    Auto,
    /// On; a process without a cluster key refuses to start.
    On,
    /// Off: nothing is sealed, and seals received are ignored.
    Off,
}

/// The notice key derived from the cluster key.
pub fn notice_key(cluster: &ClusterKey) -> NoticeKey {
    let mut m =
        <Hmac<Sha256> as KeyInit>::new_from_slice(cluster.bytes()).expect("HMAC takes any key");
    m.update(b"netsched notice key v1");
    let full = m.finalize().into_bytes();
    let mut k = [0u8; NOTICE_KEY_LEN];
    k.copy_from_slice(&full[..NOTICE_KEY_LEN]);
    NoticeKey(k)
}

/// An error that can say "no cluster key is configured", the one case in
/// which `auto` sealing turns off rather than failing.
pub trait MissingKey {
    fn is_missing_key(&self) -> bool;
}

/// The notice key a process uses, if sealing is on (see [`NoticeMac`]).
pub fn resolve<E: MissingKey>(
    mode: NoticeMac,
    cluster: impl FnOnce() -> Result<ClusterKey, E>,
) -> Result<Option<NoticeKey>, E> {
    match (mode, cluster()) {
        (NoticeMac::Off, _) => Ok(None),
        (_, Ok(k)) => Ok(Some(notice_key(&k))),
        (NoticeMac::Auto, Err(e)) if e.is_missing_key() => Ok(None),
        (_, Err(e)) => Err(e),
    }
}

/// One sender's sealing: the key and a sequence number that grows by one
/// per message. It starts at the wall clock (ns since 1970), so a restarted
/// sender starts above everything it sent before and its receivers accept
/// it at once. Shared by threads (a worker's executors).
///
/// Tasks a leaf forwards to workers have a counter of their own, even
/// (stream 0, `netsched_proto::seal`'s "Sealed tasks"), growing by 2; the
/// XDP leaf program's counter is the odd one ([`xdp_task_seq_start`]).
#[derive(Debug)]
pub struct NoticeSealer {
    key: NoticeKey,
    seq: AtomicU64,
    task_seq: AtomicU64,
}

/// Nanoseconds since 1970 (1 if the clock is before it).
fn wall_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(1)
}

/// Where an XDP leaf program's task counter starts: the wall clock, odd.
pub fn xdp_task_seq_start() -> u64 {
    wall_ns() | 1
}

impl NoticeSealer {
    pub fn new(key: NoticeKey) -> Self {
        let start = wall_ns();
        NoticeSealer {
            key,
            seq: AtomicU64::new(start),
            task_seq: AtomicU64::new(start & !1),
        }
    }

    /// Seals the `len`-byte encoded message at the start of `buf`.
    pub fn seal(&self, buf: &mut [u8], len: usize) -> Result<usize, EncodeError> {
        let seq = self.seq.fetch_add(1, Ordering::Relaxed) + 1;
        seal::seal(&self.key, buf, len, seq)
    }

    /// Seals the `len`-byte encoded task packet at the start of `buf` (a
    /// leaf forwarding it to a worker).
    pub fn seal_task(&self, buf: &mut [u8], len: usize) -> Result<usize, EncodeError> {
        let seq = self.task_seq.fetch_add(2, Ordering::Relaxed) + 2;
        seal::seal_task(&self.key, buf, len, seq)
    }

    pub fn key(&self) -> &NoticeKey {
        &self.key
    }
}

/// A receiver's last accepted sequence number per sender (node id).
#[derive(Clone, Debug, Default)]
pub struct ReplayGuard {
    last: Vec<u64>,
}

impl ReplayGuard {
    /// Accepts `seq` from `node` if it is above the last one accepted.
    pub fn accept(&mut self, node: usize, seq: u64) -> Result<(), SealError> {
        if node >= self.last.len() {
            // Bounded by the 16-bit node id of the wire.
            self.last.resize(node + 1, 0);
        }
        if seq <= self.last[node] {
            return Err(SealError::Replayed);
        }
        self.last[node] = seq;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ConfigError;
    use crate::secret::SecretError;

    #[test]
    fn the_notice_key_is_derived_and_replays_are_refused() {
        let c = ClusterKey::from_hex(&"ab".repeat(32)).unwrap();
        let k = notice_key(&c);
        assert_eq!(k, notice_key(&c));
        assert_ne!(&k.0[..], &c.bytes()[..16]);
        let mut g = ReplayGuard::default();
        assert_eq!(g.accept(3, 10), Ok(()));
        assert_eq!(g.accept(3, 10), Err(SealError::Replayed));
        assert_eq!(g.accept(3, 9), Err(SealError::Replayed));
        assert_eq!(g.accept(2, 1), Ok(()));
        assert_eq!(g.accept(3, 11), Ok(()));
        let off = resolve(NoticeMac::Off, || Ok::<_, ConfigError>(c.clone())).unwrap();
        assert!(off.is_none());
        let none = resolve(NoticeMac::Auto, || {
            Err(ConfigError::Secret(SecretError::NoKey { var: "X".into() }))
        });
        assert!(none.unwrap().is_none());
        assert!(resolve(NoticeMac::On, || {
            Err(ConfigError::Secret(SecretError::NoKey { var: "X".into() }))
        })
        .is_err());
    }
}
