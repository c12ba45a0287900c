//! The daemon-wide metric slots of a switch daemon, registered once at
//! start so the data path only bumps atomics.

use netsched_core::DropReason;

use super::RuntimeDrop;
use crate::metrics::{Kind, Registry, Slot};

pub(super) const RX_TYPES: [&str; 8] = [
    "task_first",
    "task_continuation",
    "reply",
    "idle_add",
    "idle_remove",
    "load_update",
    "keep_alive",
    "invalid",
];
pub(super) const TX_TYPES: [&str; 6] = [
    "task",
    "reply",
    "failed_reply",
    "idle_add",
    "idle_remove",
    "load_update",
];
pub(super) const TX_TASK: usize = 0;
pub(super) const TX_REPLY: usize = 1;
pub(super) const TX_FAILED: usize = 2;
/// The first notice type in `TX_TYPES` (idle_add, idle_remove, load_update).
pub(super) const TX_NOTICE: usize = 3;

/// Pre-registered metric slots of a switch daemon.
pub(super) struct Slots {
    pub(super) rx: [Slot; 8],
    pub(super) tx: [Slot; 6],
    pub(super) decisions: [Slot; 3],
    pub(super) resubmissions: Slot,
    pub(super) queued: Slot,
    pub(super) failed_workers: Slot,
    pub(super) recovered_workers: Slot,
    pub(super) stale_replies: Slot,
    /// Notices with no upstream to go to, by `TX_TYPES[TX_NOTICE..]`.
    pub(super) unsent_notices: [Slot; 3],
    pub(super) runtime_drops: Vec<Slot>,
    pub(super) dp_drops: Vec<Slot>,
}

impl Slots {
    /// Registers the daemon-wide counters, in the order `/metrics` lists them.
    pub(super) fn register(reg: &mut Registry) -> Self {
        let rx = RX_TYPES.map(|t| {
            reg.register(
                "netsched_rx_packets_total",
                "Datagrams received, by Horus message type",
                Kind::Counter,
                &[("type", t)],
            )
        });
        let tx = TX_TYPES.map(|t| {
            reg.register(
                "netsched_tx_packets_total",
                "Datagrams sent, by message type",
                Kind::Counter,
                &[("type", t)],
            )
        });
        let decisions = ["idle", "sampled", "other"].map(|d| {
            reg.register(
                "netsched_decisions_total",
                "Tasks dispatched, by how the data plane chose the node",
                Kind::Counter,
                &[("decision", d)],
            )
        });
        let resubmissions = reg.register(
            "netsched_resubmissions_total",
            "Resubmission passes run (Horus Alg. 1/2 second passes)",
            Kind::Counter,
            &[],
        );
        let queued = reg.register(
            "netsched_queued_total",
            "Tasks buffered by a data plane",
            Kind::Counter,
            &[],
        );
        let failed_workers = reg.register(
            "netsched_node_failures_total",
            "Workers removed after the heartbeat timeout (Horus A.3)",
            Kind::Counter,
            &[("kind", "worker")],
        );
        let recovered_workers = reg.register(
            "netsched_node_recoveries_total",
            "Removed workers re-added when heard from again",
            Kind::Counter,
            &[("kind", "worker")],
        );
        let stale_replies = reg.register(
            "netsched_stale_replies_total",
            "Worker replies that answer no task in flight (duplicated, stale or forged): forwarded, not fed to the data plane",
            Kind::Counter,
            &[],
        );
        // A standalone leaf's notices (§3.4) have no spine to go to. Nothing
        // received is lost, so they are not drops: counted apart, or a
        // standalone leaf reports ~3 drops per task.
        let unsent_notices = [
            TX_TYPES[TX_NOTICE],
            TX_TYPES[TX_NOTICE + 1],
            TX_TYPES[TX_NOTICE + 2],
        ]
        .map(|t| {
            reg.register(
                "netsched_notices_unsent_total",
                "Notices (idle add/remove, load updates) a leaf with no upstream spine had no one to send to",
                Kind::Counter,
                &[("type", t)],
            )
        });
        let runtime_drops = RuntimeDrop::ALL
            .iter()
            .map(|r| {
                reg.register(
                    "netsched_drops_total",
                    "Datagrams or tasks dropped, by who dropped them and why",
                    Kind::Counter,
                    &[("by", "runtime"), ("reason", r.name())],
                )
            })
            .collect();
        let dp_drops = DropReason::ALL
            .iter()
            .map(|r| {
                reg.register(
                    "netsched_drops_total",
                    "Datagrams or tasks dropped, by who dropped them and why",
                    Kind::Counter,
                    &[("by", "dataplane"), ("reason", r.name())],
                )
            })
            .collect();
        Slots {
            rx,
            tx,
            decisions,
            resubmissions,
            queued,
            failed_workers,
            recovered_workers,
            stale_replies,
            unsent_notices,
            runtime_drops,
            dp_drops,
        }
    }
}
