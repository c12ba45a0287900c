//! The control protocol between the centralized controller (Horus §3.2,
//! §A.3) and the scheduler daemons, over UDP on the daemons' data socket.
//!
//! A control datagram is the 4-byte magic `NSC1` followed by one JSON
//! object. The magic's first byte (`N`, 0x4E: wire version 4) is never a
//! valid netsched-proto datagram, so the daemon tells the two apart without
//! decoding. Daemons accept control datagrams only from the address in their
//! `controller` setting (`unregistered_source` otherwise).
//!
//! The protocol is declarative and idempotent: daemons report their state
//! (`status`) every `status_ms`; the controller compares it with what it
//! wants and, where they differ, sends the whole desired state of that
//! instance (`configure`). A lost datagram in either direction is repaired
//! by the next round, and a restarted controller re-learns everything from
//! the next reports.

use std::net::SocketAddr;

use serde::{Deserialize, Serialize};

use crate::config::{PolicyName, Role};

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

/// `Role` with serde both ways (the config enum only deserializes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RoleName {
    Spine,
    Leaf,
}

impl From<Role> for RoleName {
    fn from(r: Role) -> Self {
        match r {
            Role::Spine => RoleName::Spine,
            Role::Leaf => RoleName::Leaf,
        }
    }
}

/// The policy's name for status reports (informational: the controller
/// does not interpret it).
pub fn policy_name(p: PolicyName) -> String {
    format!("{p:?}").to_ascii_lowercase()
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

impl ControlMsg {
    pub fn encode(&self) -> Vec<u8> {
        let mut v = MAGIC.to_vec();
        v.extend_from_slice(
            serde_json::to_string(self)
                .expect("control messages serialize")
                .as_bytes(),
        );
        v
    }

    pub fn decode(data: &[u8]) -> Result<ControlMsg, String> {
        if !is_control(data) {
            return Err("not a control datagram".into());
        }
        serde_json::from_slice(&data[4..]).map_err(|e| e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_magic_is_not_wire() {
        let m = ControlMsg::Configure(InstanceDesired {
            pool: 3,
            role: None,
            downstream: vec!["10.0.0.1:7000".parse().unwrap()],
            enabled: vec![true],
            upstream: Some(vec![]),
            rack_workers: None,
        });
        let b = m.encode();
        assert!(is_control(&b));
        assert_eq!(ControlMsg::decode(&b).unwrap(), m);
        // The magic is rejected by the wire decoder, so it cannot be
        // mistaken for a task.
        assert!(netsched_proto::Message::decode(&b).is_err());
        assert!(ControlMsg::decode(b"NSC1{").is_err());
        assert!(ControlMsg::decode(b"NSC").is_err());
    }
}
