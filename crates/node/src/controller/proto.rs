//! The control protocol between the centralized controller (Horus §3.2,
//! §A.3) and the scheduler daemons, over UDP on the daemons' data socket.
//!
//! A control datagram is the 4-byte magic `NSC1`, a sealed header and one
//! JSON object (see [`Sealer`]). The magic's first byte (`N`, 0x4E: wire
//! version 4) is never a valid netsched-proto datagram, so the daemon tells
//! the two apart without decoding. Daemons accept control datagrams only
//! from the address in their `controller` setting (`unregistered_source`
//! otherwise) and only with a valid MAC under the cluster key, a sequence
//! number above the last one accepted from that sender, and themselves as
//! the destination (docs/runtime.md, threat model); the controller likewise.
//!
//! The protocol is declarative and idempotent: daemons report their state
//! (`status`) every `status_ms`; the controller compares it with what it
//! wants and, where they differ, sends the whole desired state of that
//! instance (`configure`). A lost datagram in either direction is repaired
//! by the next round, and a restarted controller re-learns everything from
//! the next reports.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::time::{SystemTime, UNIX_EPOCH};

use hmac::{Hmac, KeyInit, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;

use crate::config::Policy;
use crate::secret::ClusterKey;

pub const MAGIC: &[u8; 4] = b"NSC1";

/// Whether a datagram is a control datagram.
#[inline]
pub fn is_control(data: &[u8]) -> bool {
    data.len() >= 4 && &data[..4] == MAGIC
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum ControlMsg {
    /// Daemon → controller, every `status_ms`: also the daemon's keep-alive.
    Status(DaemonStatus),
    /// Controller → daemon: the desired state of one instance.
    Configure(InstanceDesired),
    /// Controller → leaf: send the linked spine an Idle Add/Remove matching
    /// the rack's state and a load update with its average (after the spine
    /// (re)admitted the rack, or the leaf was relinked).
    Resync { pool: u16 },
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DaemonStatus {
    pub instances: Vec<InstanceStatus>,
}

/// What one instance of a daemon runs now.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct InstanceStatus {
    pub pool: u16,
    pub role: RoleName,
    pub policy: String,
    /// Leaf: this rack's id at its spine.
    pub rack: u16,
    pub downstream: Vec<SocketAddr>,
    /// Leaf: workers the controller allows (not removed by the admin API).
    /// Spine: racks the controller made schedulable.
    pub enabled: Vec<bool>,
    /// Nodes the data plane schedules over now. Leaf: enabled and heard from
    /// within the heartbeat timeout (§A.3). Spine: admitted racks.
    pub live: Vec<bool>,
    pub upstream: Vec<SocketAddr>,
    /// Spine: workers per rack behind the installed 1/w (§A.2).
    pub rack_workers: Vec<u32>,
    /// Length of the idle list, where the data plane has one.
    pub idle: Option<u32>,
}

/// An instance's role in status reports and desired state: the config's
/// [`Role`](crate::config::Role), one type (serialized `spine`, `leaf`).
pub use crate::config::Role as RoleName;

/// The policy's name for status reports (informational: the controller
/// does not interpret it).
pub fn policy_name(p: Policy) -> String {
    p.name().to_string()
}

/// The desired state of one instance. Node ids are indices and never
/// change meaning: `downstream` may only grow (new workers or racks), and
/// removed nodes stay as disabled entries.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct InstanceDesired {
    pub pool: u16,
    /// Which of the pool's instances at the daemon; needed where it hosts
    /// both the pool's spine and its leaf. None: the pool's only instance.
    #[serde(default)]
    pub role: Option<RoleName>,
    pub downstream: Vec<SocketAddr>,
    /// Leaf: workers allowed. Spine: racks to schedule over.
    pub enabled: Vec<bool>,
    /// Leaf: spines, the linked one first (§3.4). None: unchanged.
    #[serde(default)]
    pub upstream: Option<Vec<SocketAddr>>,
    /// Spine: live workers per rack, for 1/w (§A.2). None: unchanged.
    #[serde(default)]
    pub rack_workers: Option<Vec<u32>>,
}

/// Bytes before the JSON body: magic, epoch, sequence number, MAC.
pub const HEADER_LEN: usize = 4 + 8 + 8 + 32;

/// What the MAC covers besides the header: the message and both ends, so a
/// datagram cannot be re-aimed at another daemon (`to`) or passed off as
/// another sender's (`from`) with the same key; and `peer`, the receiver's
/// epoch as the sender last heard it (0: none), so a datagram recorded in a
/// receiver's earlier life is refused by its next one even before the
/// sender's sequence numbers have reached it.
#[derive(Serialize, Deserialize)]
struct Envelope {
    from: SocketAddr,
    to: SocketAddr,
    peer: u64,
    msg: ControlMsg,
}

type HmacSha256 = Hmac<Sha256>;

fn mac(key: &ClusterKey, head: &[u8], body: &[u8]) -> HmacSha256 {
    let mut m = <HmacSha256 as KeyInit>::new_from_slice(key.bytes()).expect("HMAC takes any key");
    m.update(head);
    m.update(body);
    m
}

/// One sender's side of the sealed control protocol: every datagram carries
/// `epoch`, a sequence number that grows by one per datagram, and
/// HMAC-SHA256 under the cluster key over everything else.
///
/// The epoch is the wall clock (ns since 1970) when the sender started, so a
/// restarted controller or daemon starts above everything it sent before and
/// its receivers accept it at once, while its old datagrams stay refused.
pub struct Sealer {
    key: ClusterKey,
    from: SocketAddr,
    epoch: u64,
    seq: u64,
}

impl Sealer {
    pub fn new(key: ClusterKey, from: SocketAddr) -> Sealer {
        let epoch = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(1)
            .max(1);
        Sealer::with_epoch(key, from, epoch)
    }

    /// A fixed epoch (tests).
    pub fn with_epoch(key: ClusterKey, from: SocketAddr, epoch: u64) -> Sealer {
        Sealer {
            key,
            from,
            epoch,
            seq: 0,
        }
    }

    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// `msg` for `to`, whose epoch is `peer` (0: not known), sealed with the
    /// next sequence number.
    pub fn seal(&mut self, msg: &ControlMsg, to: SocketAddr, peer: u64) -> Vec<u8> {
        self.seq += 1;
        let body = serde_json::to_vec(&Envelope {
            from: self.from,
            to,
            peer,
            msg: msg.clone(),
        })
        .expect("control messages serialize");
        let mut v = Vec::with_capacity(HEADER_LEN + body.len());
        v.extend_from_slice(MAGIC);
        v.extend_from_slice(&self.epoch.to_be_bytes());
        v.extend_from_slice(&self.seq.to_be_bytes());
        let tag = mac(&self.key, &v, &body).finalize().into_bytes();
        v.extend_from_slice(&tag);
        v.extend_from_slice(&body);
        v
    }
}

/// Why a control datagram was refused before its content was looked at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpenError {
    /// Shorter than the header, or the MAC does not verify (no key, a
    /// different cluster's key, any changed byte, or the old unsealed format).
    BadMac,
    /// Authentic, but its (epoch, sequence number) is not above the last one
    /// accepted from this sender, or it names another epoch of the receiver
    /// than the current one: a replay (or a datagram overtaken by a later
    /// one, which the next reconciliation round repeats anyway).
    Replayed,
    /// Authentic, but sealed for another destination or by another sender
    /// than the source address claims.
    Misaddressed,
    /// Authentic, but the body is not a control message this version knows.
    Undecodable,
}

/// The receiving side: verifies the MAC, the ends and the freshness of every
/// datagram, per sender (its source address).
pub struct Opener {
    key: ClusterKey,
    /// Highest (epoch, seq) accepted per sender. Entries are only made for
    /// datagrams with a valid MAC, that is by cluster members, and the
    /// callers admit only their configured peers; the cap is a backstop.
    last: HashMap<SocketAddr, (u64, u64)>,
}

/// Backstop on [`Opener`]'s table (a controller has one entry per daemon).
const MAX_SENDERS: usize = 65_536;

/// `a` names `b`: the same port, and the same IP unless `a`'s is the
/// wildcard (a socket bound to 0.0.0.0 does not know the address it is
/// reached at).
fn names(a: SocketAddr, b: SocketAddr) -> bool {
    a.port() == b.port() && (a.ip().is_unspecified() || a.ip() == b.ip())
}

impl Opener {
    pub fn new(key: ClusterKey) -> Opener {
        Opener {
            key,
            last: HashMap::new(),
        }
    }

    /// The epoch last accepted from `src`: what a reply to it names as
    /// `peer`.
    pub fn epoch_of(&self, src: SocketAddr) -> Option<u64> {
        self.last.get(&src).map(|l| l.0)
    }

    /// The message of a datagram from `src` received on `local`, if it is
    /// authentic, fresh, meant for `local` and, where `mine` is given, sealed
    /// for the receiver's epoch `mine`; its (epoch, seq) is then the new
    /// floor for `src`.
    pub fn open(
        &mut self,
        data: &[u8],
        src: SocketAddr,
        local: SocketAddr,
        mine: Option<u64>,
    ) -> Result<ControlMsg, OpenError> {
        if data.len() < HEADER_LEN || !is_control(data) {
            return Err(OpenError::BadMac);
        }
        let (head, rest) = data.split_at(20);
        let (tag, body) = rest.split_at(32);
        mac(&self.key, head, body)
            .verify_slice(tag)
            .map_err(|_| OpenError::BadMac)?;
        let epoch = u64::from_be_bytes(head[4..12].try_into().expect("8 bytes"));
        let seq = u64::from_be_bytes(head[12..20].try_into().expect("8 bytes"));
        if self.last.get(&src).is_some_and(|&l| (epoch, seq) <= l) {
            return Err(OpenError::Replayed);
        }
        let env: Envelope = serde_json::from_slice(body).map_err(|_| OpenError::Undecodable)?;
        if mine.is_some_and(|e| e != env.peer) {
            return Err(OpenError::Replayed);
        }
        if !names(local, env.to) || !names(env.from, src) {
            return Err(OpenError::Misaddressed);
        }
        if self.last.len() >= MAX_SENDERS && !self.last.contains_key(&src) {
            self.last.clear();
        }
        self.last.insert(src, (epoch, seq));
        Ok(env.msg)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a(p: u16) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], p))
    }

    fn push() -> ControlMsg {
        ControlMsg::Configure(InstanceDesired {
            pool: 3,
            role: None,
            downstream: vec!["10.0.0.1:7000".parse().unwrap()],
            enabled: vec![true],
            upstream: Some(vec![]),
            rack_workers: None,
        })
    }

    #[test]
    fn sealed_round_trip_and_magic_is_not_wire() {
        let k = ClusterKey::generate().unwrap();
        let (ctl, d) = (a(7000), a(7100));
        let mut s = Sealer::new(k.clone(), ctl);
        let mut o = Opener::new(k);
        let b = s.seal(&push(), d, 0);
        assert!(is_control(&b));
        assert_eq!(o.open(&b, ctl, d, None).unwrap(), push());
        // The magic is rejected by the wire decoder, so it cannot be
        // mistaken for a task.
        assert!(netsched_proto::Message::decode(&b).is_err());
        assert_eq!(o.open(b"NSC1{", ctl, d, None), Err(OpenError::BadMac));
        assert_eq!(o.open(b"NSC", ctl, d, None), Err(OpenError::BadMac));
    }

    #[test]
    fn forged_tampered_replayed_and_misaddressed_datagrams_are_refused() {
        let k = ClusterKey::generate().unwrap();
        let (ctl, d, other) = (a(7000), a(7100), a(7101));
        let mut s = Sealer::with_epoch(k.clone(), ctl, 10);
        let mut o = Opener::new(k);
        // The pre-MAC format (magic + JSON) and another cluster's key.
        let mut plain = MAGIC.to_vec();
        plain.extend_from_slice(&serde_json::to_vec(&push()).unwrap());
        assert_eq!(o.open(&plain, ctl, d, None), Err(OpenError::BadMac));
        let mut stranger = Sealer::new(ClusterKey::generate().unwrap(), ctl);
        assert_eq!(
            o.open(&stranger.seal(&push(), d, 0), ctl, d, None),
            Err(OpenError::BadMac)
        );
        // Any flipped bit, in the header or the body.
        let good = s.seal(&push(), d, 0);
        for i in [5, 13, 30, HEADER_LEN + 3] {
            let mut t = good.clone();
            t[i] ^= 1;
            assert_eq!(o.open(&t, ctl, d, None), Err(OpenError::BadMac), "byte {i}");
        }
        // Sealed for `d`: another daemon refuses it, and a source that is
        // not the sealing sender cannot use it either.
        assert_eq!(
            o.open(&good, ctl, other, None),
            Err(OpenError::Misaddressed)
        );
        assert_eq!(o.open(&good, other, d, None), Err(OpenError::Misaddressed));
        assert!(o.open(&good, ctl, d, None).is_ok());
        // Once accepted, the same datagram, and any older one, is a replay.
        let older = good.clone();
        assert_eq!(o.open(&good, ctl, d, None), Err(OpenError::Replayed));
        let newer = s.seal(&push(), d, 0);
        assert!(o.open(&newer, ctl, d, None).is_ok());
        assert_eq!(o.open(&older, ctl, d, None), Err(OpenError::Replayed));
        // A restarted sender (a later epoch) is accepted from sequence 1;
        // the previous epoch's datagrams stay refused.
        let mut restarted = Sealer::with_epoch(s.key.clone(), ctl, 11);
        assert!(o.open(&restarted.seal(&push(), d, 0), ctl, d, None).is_ok());
        assert_eq!(
            o.open(&s.seal(&push(), d, 0), ctl, d, None),
            Err(OpenError::Replayed)
        );
        // Sealed for the receiver's previous life (epoch 5): its next life
        // (epoch 6) refuses it although it has no floor for the sender yet.
        let mut fresh = Opener::new(s.key.clone());
        let for_old_life = restarted.seal(&push(), d, 5);
        assert_eq!(
            fresh.open(&for_old_life, ctl, d, Some(6)),
            Err(OpenError::Replayed)
        );
        assert!(fresh.open(&for_old_life, ctl, d, Some(5)).is_ok());
        assert_eq!(fresh.epoch_of(ctl), Some(11));
        // A wildcard-bound receiver accepts any IP on its port.
        let any: SocketAddr = "0.0.0.0:7100".parse().unwrap();
        assert!(o
            .open(&restarted.seal(&push(), d, 0), ctl, any, None)
            .is_ok());
    }
}
