//! Fault injection in a daemon's I/O path: seeded random loss of received
//! datagrams, so failure tests can run the "1 % packet loss" case without
//! `tc netem` (not available here) and reproduce it from a seed.
//!
//! Loss is applied to data-plane datagrams as they leave the receive batch,
//! before decoding: to the data plane a dropped datagram is one the network
//! lost. Control-protocol datagrams (controller ↔ daemon) are exempt, because
//! the controller's periodic reconciliation already makes them loss-tolerant
//! and exempting them keeps the injected loss where Horus §A.3 reasons about
//! it: tasks, replies, Idle Add/Remove and load updates.
//!
//! Every receiver of the push runtime takes the same option, so every link
//! can lose datagrams: the spine (client → spine, leaf → spine), each leaf
//! (spine → leaf, worker → leaf), each worker agent (leaf → worker) and the
//! client (spine → client). Drops are counted by message type
//! ([`FaultCounters`]), so a test can tell that Idle Add/Remove notices
//! were among the lost datagrams (Horus §A.3 is about healing exactly those).

use netsched_core::rng::Rng;
use netsched_proto::{HorusBody, HorusMessage, Message};
use serde::Deserialize;

use crate::metrics::{Kind, Registry, Slot};

/// Message types fault drops are counted by (`type` label).
pub const FAULT_TYPES: [&str; 9] = [
    "task_first",
    "task_continuation",
    "reply",
    "idle_add",
    "idle_remove",
    "load_update",
    "keep_alive",
    "racksched",
    "other",
];

/// Index into [`FAULT_TYPES`] of a datagram about to be dropped. Decoding
/// only happens on the drop path, so it costs nothing per delivered packet.
pub fn message_type(bytes: &[u8]) -> usize {
    // A sealed notice or task is classified by the message before its seal.
    let (msg, _) = netsched_proto::seal::split(bytes);
    let (msg, _) = netsched_proto::seal::split_task(msg);
    match Message::decode(msg) {
        Ok(Message::Horus(HorusMessage { body, .. })) => match body {
            HorusBody::TaskFirst(_) => 0,
            HorusBody::TaskContinuation(_) => 1,
            HorusBody::Reply(_) => 2,
            HorusBody::IdleAdd => 3,
            HorusBody::IdleRemove => 4,
            HorusBody::LoadUpdate { .. } => 5,
            HorusBody::KeepAlive => 6,
        },
        Ok(Message::RackSched(_)) => 7,
        _ => 8,
    }
}

/// `netsched_fault_drops_total{type=…}` of one component.
#[derive(Clone, Copy, Debug)]
pub struct FaultCounters {
    by_type: [Slot; FAULT_TYPES.len()],
}

impl FaultCounters {
    /// Registers one series per message type; `labels` are prepended
    /// (e.g. a worker's `executor`).
    pub fn register(reg: &mut Registry, labels: &[(&str, &str)]) -> Self {
        FaultCounters {
            by_type: FAULT_TYPES.map(|t| {
                let mut l = labels.to_vec();
                l.push(("type", t));
                reg.register(
                    "netsched_fault_drops_total",
                    "Received datagrams dropped by fault injection (fault.drop_rate), by message type",
                    Kind::Counter,
                    &l,
                )
            }),
        }
    }

    /// Counts the drop of `bytes`.
    pub fn count(&self, reg: &Registry, bytes: &[u8]) {
        reg.inc(self.by_type[message_type(bytes)]);
    }
}

/// `fault = { drop_rate = 0.01, seed = 7, until_ms = 2000 }` in a daemon config.
#[derive(Clone, Copy, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FaultConfig {
    /// Probability of dropping each received data-plane datagram.
    #[serde(default)]
    pub drop_rate: f64,
    /// Seed of the loss stream (independent of the data plane's RNG).
    #[serde(default)]
    pub seed: u64,
    /// Stop injecting this long after the daemon started (0: never stop).
    /// Lets a test check that state converges once the loss ends.
    #[serde(default)]
    pub until_ms: u64,
}

impl FaultConfig {
    /// The same loss for another receiver (a worker node, a client thread):
    /// its own stream, derived from this seed and `stream`.
    pub fn for_stream(&self, stream: u64) -> FaultConfig {
        FaultConfig {
            seed: self
                .seed
                .wrapping_add(stream.wrapping_mul(0x9e37_79b9_7f4a_7c15)),
            ..*self
        }
    }

    /// Refuses what no loss process can be; fields are named as the
    /// daemons' configs name them (`fault.drop_rate`).
    pub fn validate(&self) -> Result<(), netsched_config::ConfigError> {
        if !(0.0..=1.0).contains(&self.drop_rate) {
            return Err(netsched_config::ConfigError::new(
                "fault.drop_rate",
                format!("must be in [0, 1], got {}", self.drop_rate),
            ));
        }
        Ok(())
    }
}

/// The loss process of one daemon.
#[derive(Clone, Debug)]
pub struct Fault {
    /// Drop when a uniform u32 is below this (0: never).
    threshold: u64,
    until_ns: u64,
    rng: Rng,
}

impl Fault {
    pub fn new(cfg: &FaultConfig) -> Self {
        Fault {
            threshold: (cfg.drop_rate * (1u64 << 32) as f64).round() as u64,
            until_ns: cfg.until_ms.saturating_mul(1_000_000),
            rng: Rng::new(cfg.seed ^ 0x6661_756c_7421),
        }
    }

    pub fn is_active(&self, now_ns: u64) -> bool {
        self.threshold > 0 && (self.until_ns == 0 || now_ns < self.until_ns)
    }

    /// Whether to drop the datagram received at `now_ns` (daemon clock).
    #[inline]
    pub fn drop_now(&mut self, now_ns: u64) -> bool {
        if !self.is_active(now_ns) {
            return false;
        }
        (self.rng.next_u64() >> 32) < self.threshold
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loss_rate_matches_and_stops_at_until() {
        let mut f = Fault::new(&FaultConfig {
            drop_rate: 0.01,
            seed: 3,
            until_ms: 5,
        });
        let n = 200_000;
        let dropped = (0..n).filter(|_| f.drop_now(1_000)).count();
        // Binomial(200k, 0.01): mean 2000, sd ≈ 44.5; ±5 sd.
        assert!((1777..=2223).contains(&dropped), "dropped {dropped}");
        assert!((0..10_000).all(|_| !f.drop_now(5_000_000)));
        let mut never = Fault::new(&FaultConfig::default());
        assert!((0..10_000).all(|_| !never.drop_now(0)));
        let mut always = Fault::new(&FaultConfig {
            drop_rate: 1.0,
            ..Default::default()
        });
        assert!((0..10_000).all(|_| always.drop_now(0)));
    }

    #[test]
    fn drops_are_classified_by_message_type() {
        use netsched_proto::HorusHeader;
        let mut buf = [0u8; 64];
        let mut enc = |body| {
            let m = Message::Horus(HorusMessage {
                header: HorusHeader::default(),
                body,
            });
            let n = m.encode(&mut buf).unwrap();
            message_type(&buf[..n])
        };
        assert_eq!(FAULT_TYPES[enc(HorusBody::IdleAdd)], "idle_add");
        assert_eq!(FAULT_TYPES[enc(HorusBody::IdleRemove)], "idle_remove");
        assert_eq!(FAULT_TYPES[enc(HorusBody::KeepAlive)], "keep_alive");
        assert_eq!(
            FAULT_TYPES[enc(HorusBody::LoadUpdate { load: 3 })],
            "load_update"
        );
        assert_eq!(FAULT_TYPES[message_type(b"junk")], "other");
        // Sealed notices (the runtime's default) keep their type.
        let key = netsched_proto::seal::NoticeKey([7; 16]);
        for (body, name) in [
            (HorusBody::IdleAdd, "idle_add"),
            (HorusBody::LoadUpdate { load: 3 }, "load_update"),
        ] {
            let m = Message::Horus(HorusMessage {
                header: HorusHeader::default(),
                body,
            });
            let n = m.encode(&mut buf).unwrap();
            let sealed = netsched_proto::seal::seal(&key, &mut buf, n, 1).unwrap();
            assert_eq!(FAULT_TYPES[message_type(&buf[..sealed])], name);
        }
        let mut reg = Registry::new();
        let c = FaultCounters::register(&mut reg, &[("executor", "2")]);
        c.count(&reg, b"");
        assert_eq!(
            reg.value(
                "netsched_fault_drops_total",
                "{executor=\"2\",type=\"other\"}"
            ),
            Some(1)
        );
        assert_eq!(reg.sum("netsched_fault_drops_total"), 1);
        let cfg = FaultConfig {
            drop_rate: 0.5,
            seed: 1,
            until_ms: 0,
        };
        let (mut a, mut b) = (
            Fault::new(&cfg.for_stream(0)),
            Fault::new(&cfg.for_stream(1)),
        );
        let va: Vec<bool> = (0..64).map(|_| a.drop_now(0)).collect();
        let vb: Vec<bool> = (0..64).map(|_| b.drop_now(0)).collect();
        assert_ne!(va, vb, "streams are independent");
    }

    #[test]
    fn same_seed_same_losses() {
        let cfg = FaultConfig {
            drop_rate: 0.3,
            seed: 9,
            until_ms: 0,
        };
        let (mut a, mut b) = (Fault::new(&cfg), Fault::new(&cfg));
        let va: Vec<bool> = (0..1000).map(|_| a.drop_now(0)).collect();
        let vb: Vec<bool> = (0..1000).map(|_| b.drop_now(0)).collect();
        assert_eq!(va, vb);
        assert!(FaultConfig {
            drop_rate: 1.5,
            ..Default::default()
        }
        .validate()
        .is_err());
    }
}
