//! The client's series (`netsched client` with `metrics = "ADDR"`): what
//! became of the tasks it submitted and their end-to-end latency, live
//! while it runs. The same counts end up in its final report
//! ([`crate::client::ClientReport`]); these let Prometheus watch a long run.

use std::sync::Arc;
use std::time::Duration;

use super::{Kind, Registry, Slot};

/// Slots of the client's series in a shared [`Registry`].
pub struct ClientMetrics {
    registry: Arc<Registry>,
    submitted: Slot,
    completed: Slot,
    failed_send: Slot,
    failed_reply: Slot,
    timed_out: Slot,
    resubmitted: Slot,
    latency: Slot,
}

impl Default for ClientMetrics {
    fn default() -> Self {
        Self::new()
    }
}

impl ClientMetrics {
    pub fn new() -> Self {
        let mut r = Registry::new();
        let tasks = |r: &mut Registry, name, help| r.register(name, help, Kind::Counter, &[]);
        let submitted = tasks(
            &mut r,
            "netsched_client_tasks_submitted_total",
            "Tasks submitted (first sends; resubmissions are counted apart)",
        );
        let completed = tasks(
            &mut r,
            "netsched_client_tasks_completed_total",
            "Tasks answered with a successful reply",
        );
        let failed = "netsched_client_tasks_failed_total";
        let failed_help = "Tasks that failed, by reason: the send failed (send_error) or a \
                           scheduler or worker answered with a failure (reply)";
        let failed_send = r.register(
            failed,
            failed_help,
            Kind::Counter,
            &[("reason", "send_error")],
        );
        let failed_reply = r.register(failed, failed_help, Kind::Counter, &[("reason", "reply")]);
        let timed_out = tasks(
            &mut r,
            "netsched_client_tasks_timed_out_total",
            "Tasks without a reply after their last attempt's timeout",
        );
        let resubmitted = tasks(
            &mut r,
            "netsched_client_resubmissions_total",
            "Sends of a task again after a timeout (retries > 0)",
        );
        let latency = r.register(
            "netsched_client_latency_seconds",
            "End-to-end latency of completed tasks, from the intended send to the reply",
            Kind::Histogram,
            &[],
        );
        ClientMetrics {
            registry: Arc::new(r),
            submitted,
            completed,
            failed_send,
            failed_reply,
            timed_out,
            resubmitted,
            latency,
        }
    }

    /// The registry to serve on `/metrics`.
    pub fn registry(&self) -> Arc<Registry> {
        self.registry.clone()
    }

    pub fn submitted(&self) {
        self.registry.inc(self.submitted);
    }

    pub fn completed(&self, latency_ns: u64) {
        self.registry.inc(self.completed);
        self.registry
            .observe(self.latency, Duration::from_nanos(latency_ns));
    }

    pub fn send_failed(&self) {
        self.registry.inc(self.failed_send);
    }

    pub fn reply_failed(&self) {
        self.registry.inc(self.failed_reply);
    }

    pub fn timed_out(&self) {
        self.registry.inc(self.timed_out);
    }

    pub fn resubmitted(&self) {
        self.registry.inc(self.resubmitted);
    }
}
