//! `netsched switch` with a pull config and `datapath = "xdp"`: the Draconis
//! queue (EuroSys'24 §4-§6.1, cFCFS and priority levels) runs as the XDP
//! program of crates/xdp on `[xdp] interface`, and this daemon keeps what
//! the program leaves to user space (docs/xdp.md, "The pull daemon"):
//! * **Rejections.** A job's tasks that did not fit the queue (§4.3) are
//!   queued by the program (XDP cannot originate a second frame); the daemon
//!   sends them to their client as one error_packet, and the client
//!   resubmits them.
//! * **Passed-up task requests** (the frame could not grow to hold an
//!   assignment, or IP options or fragments the program does not parse) are
//!   answered with a no-op, after which the executor asks again (§4.6):
//!   counted and logged, never scheduled beside the program.
//! * **Passed-up jobs** (IP options, fragments) are refused: their tasks go
//!   back to the client in an error_packet, counted and logged. Queueing
//!   them here would need a second queue the program does not see.
//! * **Metrics**: the program's `drac_counters` map as
//!   `netsched_xdp_events_total{event}` beside the daemon's own series.
//!
//! Start-up installs a fresh sans-IO [`Draconis`] switch built from the same
//! config (every pointer 0, no client known yet) and the executors'
//! addresses, which the program checks task requests against. The program
//! assigns, acknowledges and answers no-ops by turning the frame around
//! (XDP_TX), so it needs no neighbour's MAC.
//!
//! One CPU: like the Horus leaf, the program's state is unsynchronised, so
//! the daemon attaches it behind its steering program: every packet is
//! redirected to `[xdp] cpu`, whose cpumap thread runs the queue one packet
//! at a time (docs/xdp.md, "One CPU").

use std::collections::HashSet;
use std::net::{SocketAddr, SocketAddrV4, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use netsched_core::pull::Draconis;
use netsched_proto::{DraconisMessage, Message, TaskVec, WireTask, MAX_DATAGRAM};
use netsched_xdp::{QueuedError, XdpDraconis, XdpDraconisCounters, XdpFlags};

use super::config::PullSwitchConfig;
use super::error::PullError;
use super::serve::{run_with_metrics, Started};
use super::switch::{register_traffic, to_wire, PullDrop, Traffic};
use crate::config::XdpMode;
use crate::metrics::{Kind, Registry, Slot};
use crate::net;

/// `XdpDraconisCounters`' fields in the order of `netsched_xdp_events_total`.
const EVENTS: [&str; 11] = [
    "tasks_enqueued",
    "tasks_rejected",
    "assigned",
    "noops",
    "add_repairs",
    "retrieve_repairs",
    "recirculations",
    "passed",
    "drop_unknown_executor",
    "no_tailroom",
    "errors_lost",
];

fn event_values(c: &XdpDraconisCounters) -> [u64; 11] {
    [
        c.tasks_enqueued,
        c.tasks_rejected,
        c.assigned,
        c.noops,
        c.add_repairs,
        c.retrieve_repairs,
        c.recirculations,
        c.passed,
        c.drop_unknown_executor,
        c.no_tailroom,
        c.errors_lost,
    ]
}

/// How often the queued rejections are sent when no datagram wakes the
/// daemon: well under the client's `error_backoff_us`-scale waits and its
/// `timeout_ms`, so a rejected task is resubmitted before it would time out.
const ERROR_POLL: Duration = Duration::from_millis(1);

/// How often the program's counters are copied into the metrics.
const PUBLISH_EVERY: Duration = Duration::from_millis(100);

/// What the daemon did with a datagram the program passed up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Answer {
    /// A task request answered with a no-op.
    Noop,
    /// A job whose tasks went back to the client.
    RefusedJob,
}

impl Answer {
    const ALL: [Answer; 2] = [Answer::Noop, Answer::RefusedJob];

    fn name(self) -> &'static str {
        match self {
            Answer::Noop => "noop",
            Answer::RefusedJob => "refused_job",
        }
    }
}

struct Slots {
    traffic: Traffic,
    events: [Slot; 11],
    answered: [Slot; 2],
    tasks_returned: Slot,
}

fn register(reg: &mut Registry) -> Slots {
    let c = Kind::Counter;
    Slots {
        traffic: register_traffic(reg),
        events: EVENTS.map(|e| {
            reg.register(
                "netsched_xdp_events_total",
                "datapath xdp: the program's counters map (Draconis: tasks queued and rejected, assignments, no-ops, repairs, passes, drops)",
                c,
                &[("event", e)],
            )
        }),
        answered: Answer::ALL.map(|a| {
            reg.register(
                "netsched_xdp_passed_answered_total",
                "datapath xdp: datagrams the program passed up, by the daemon's answer (a no-op to a task request, a job's tasks returned)",
                c,
                &[("answer", a.name())],
            )
        }),
        tasks_returned: reg.register(
            "netsched_pull_tasks_returned_total",
            "Tasks returned to their client in error packets",
            c,
            &[],
        ),
    }
}

/// The pull daemon of `datapath = "xdp"`: the loaded, attached program and
/// the socket on `listen` that gets what the program passes up.
pub struct PullXdpDaemon {
    sock: UdpSocket,
    queue: XdpDraconis,
    executors: HashSet<SocketAddr>,
    registry: Arc<Registry>,
    slots: Slots,
    /// Passed-up datagrams answered so far (the log says the first and
    /// then every 1000th, not one line per datagram).
    passed_up: u64,
}

impl PullXdpDaemon {
    /// Binds `listen`, loads the program with a fresh queue built from
    /// `cfg` and attaches it to `[xdp] interface`.
    pub fn start(cfg: &PullSwitchConfig) -> Result<Self, PullError> {
        // Bound before the program attaches, so nothing it passes up is
        // refused by the kernel for want of a socket.
        let sock = UdpSocket::bind(&cfg.listen).map_err(|e| PullError::bind(&cfg.listen, e))?;
        let mut d = Self::new(cfg, sock)?;
        let xcfg = cfg.xdp.as_ref().expect("validated: datapath xdp has [xdp]");
        let flags = match xcfg.mode {
            XdpMode::Native => XdpFlags::DRV_MODE,
            XdpMode::Generic => XdpFlags::SKB_MODE,
        };
        let thread =
            d.queue
                .attach_serialised(&xcfg.interface, flags, xcfg.cpu, xcfg.realtime_priority)?;
        tracing::info!(
            target: "pull-switch",
            interface = %xcfg.interface,
            mode = ?xcfg.mode,
            cpu = xcfg.cpu,
            thread = %thread.name,
            realtime_priority = ?thread.realtime_priority,
            capacity = d.queue.capacity(),
            levels = d.queue.levels(),
            executors = cfg.executors.len(),
            "xdp draconis queue attached"
        );
        if let Some(warning) = thread.throttling_warning() {
            tracing::warn!(target: "pull-switch", "{warning}");
        }
        Ok(d)
    }

    /// The daemon on an already bound socket (made non-blocking here), its
    /// program loaded and installed but not attached.
    pub fn new(cfg: &PullSwitchConfig, sock: UdpSocket) -> Result<Self, PullError> {
        cfg.validate()?;
        net::prepare(&sock)?;
        let executors: Vec<SocketAddrV4> = cfg
            .executors
            .iter()
            .map(|a| match a {
                SocketAddr::V4(v4) => *v4,
                SocketAddr::V6(_) => unreachable!("validated: IPv4 executors"),
            })
            .collect();
        let config = cfg
            .draconis
            .switch_config(cfg.policy, cfg.levels(), cfg.nodes_per_rack);
        let mut queue = XdpDraconis::load(&config)?;
        // A fresh switch knows no client: the program stores each task's
        // client address itself (§4.1), so the client table starts empty.
        queue.install(&Draconis::new(config), &[], &executors)?;
        let mut reg = Registry::new();
        let slots = register(&mut reg);
        Ok(PullXdpDaemon {
            sock,
            queue,
            executors: cfg.executors.iter().copied().collect(),
            registry: Arc::new(reg),
            slots,
            passed_up: 0,
        })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.sock.local_addr().expect("bound socket")
    }

    pub fn registry(&self) -> Arc<Registry> {
        self.registry.clone()
    }

    /// Runs until `stop` is set; dropping the daemon detaches the program.
    pub fn run(&mut self, stop: &AtomicBool) -> Result<(), PullError> {
        let mut buf = vec![0u8; MAX_DATAGRAM];
        let mut last_publish = Instant::now();
        while !stop.load(Ordering::Relaxed) {
            self.poll(&mut buf, ERROR_POLL)?;
            if last_publish.elapsed() >= PUBLISH_EVERY {
                last_publish = Instant::now();
                self.publish()?;
            }
        }
        self.send_rejections()?;
        self.publish()
    }

    /// Sends the queued rejections, waits up to `wait` for a datagram and
    /// answers every one that arrived.
    pub fn poll(&mut self, buf: &mut [u8], wait: Duration) -> Result<(), PullError> {
        self.send_rejections()?;
        net::wait_readable(&self.sock, wait);
        loop {
            match self.sock.recv_from(buf) {
                Ok((n, src)) => self.on_passed(&buf[..n], src),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                // An ICMP error of an earlier send surfaces here; the
                // datagram it reports was counted when sent.
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => continue,
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// Sends every error_packet the program queued (§4.3).
    fn send_rejections(&mut self) -> Result<(), PullError> {
        for QueuedError { client, tasks } in self.queue.drain_errors()? {
            self.return_tasks(SocketAddr::V4(client), tasks.iter().map(to_wire));
        }
        Ok(())
    }

    /// The program's counters into the metrics.
    pub fn publish(&mut self) -> Result<(), PullError> {
        let counters = self.queue.counters()?;
        for (slot, v) in self.slots.events.iter().zip(event_values(&counters)) {
            self.registry.set(*slot, v);
        }
        Ok(())
    }

    /// A datagram the program passed up (module docs).
    fn on_passed(&mut self, data: &[u8], src: SocketAddr) {
        let Some(msg) = self.slots.traffic.decode(&self.registry, data) else {
            return;
        };
        match msg {
            DraconisMessage::TaskRequest { .. } => {
                if !self.executors.contains(&src) {
                    return self.drop(PullDrop::UnregisteredSource);
                }
                self.answered(Answer::Noop, src);
                self.send(DraconisMessage::NoOp, src);
            }
            DraconisMessage::JobSubmission { tasks, .. } => {
                self.answered(Answer::RefusedJob, src);
                self.return_tasks(src, tasks.as_slice().iter().copied());
            }
            DraconisMessage::TaskAssignment { .. }
            | DraconisMessage::NoOp
            | DraconisMessage::Ack { .. }
            | DraconisMessage::ErrorPacket { .. }
            | DraconisMessage::Completion { .. }
            | DraconisMessage::Probe { .. }
            | DraconisMessage::GetTask { .. } => self.drop(PullDrop::WrongRole),
        }
    }

    fn answered(&mut self, answer: Answer, src: SocketAddr) {
        self.registry.inc(self.slots.answered[answer as usize]);
        self.passed_up += 1;
        if self.passed_up % 1000 == 1 {
            tracing::warn!(
                target: "pull-switch",
                %src,
                answer = answer.name(),
                passed_up = self.passed_up,
                "xdp: datagram passed up by the program (no tailroom, IP options or fragments); answered in user space, not scheduled"
            );
        }
    }

    /// Tasks back to `client` in error_packets of at most a packet's worth.
    fn return_tasks(&mut self, client: SocketAddr, tasks: impl Iterator<Item = WireTask>) {
        let mut packet = TaskVec::new();
        for t in tasks {
            if !packet.push(t) {
                self.send_error(client, &packet);
                packet = TaskVec::new();
                packet.push(t);
            }
        }
        if !packet.is_empty() {
            self.send_error(client, &packet);
        }
    }

    fn send_error(&mut self, client: SocketAddr, tasks: &TaskVec) {
        self.registry
            .add(self.slots.tasks_returned, tasks.len() as u64);
        self.send(DraconisMessage::ErrorPacket { tasks: *tasks }, client);
    }

    fn send(&mut self, msg: DraconisMessage, dst: SocketAddr) {
        let tag = msg.draconis_type() as usize - 1;
        let sent = Message::Draconis(msg)
            .to_vec()
            .ok()
            .is_some_and(|bytes| self.sock.send_to(&bytes, dst).is_ok());
        if sent {
            self.registry.inc(self.slots.traffic.tx[tag]);
        } else {
            self.drop(PullDrop::Send);
        }
    }

    fn drop(&self, d: PullDrop) {
        self.registry.inc(self.slots.traffic.drops[d as usize]);
    }
}

/// Runs the XDP pull daemon until `stop` is set, with its metrics endpoint.
pub fn run_config(cfg: &PullSwitchConfig, stop: Arc<AtomicBool>) -> Result<(), PullError> {
    let mut d = PullXdpDaemon::start(cfg)?;
    let started = Started {
        listen: d.local_addr(),
        policy: cfg.policy.name(),
        datapath: "xdp",
    };
    run_with_metrics(cfg, d.registry(), started, &stop, || d.run(&stop))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Datapath;

    fn sched(extra: &str) -> String {
        format!(
            "listen = \"10.0.0.2:7300\"\npolicy = \"draconis\"\n\
             executors = [\"10.0.0.3:7400\", \"10.0.0.4:7400\"]\n{extra}"
        )
    }

    const XDP: &str = "datapath = \"xdp\"\n[xdp]\ninterface = \"eth0\"\nmode = \"generic\"\n";

    #[test]
    fn a_pull_config_with_the_push_leafs_xdp_keys_parses() {
        let c = PullSwitchConfig::from_toml(&sched(XDP)).unwrap();
        assert_eq!(c.datapath, Datapath::Xdp);
        let x = c.xdp.unwrap();
        assert_eq!((x.interface.as_str(), x.mode), ("eth0", XdpMode::Generic));
        let text = sched(XDP).replace("\"draconis\"", "\"draconis-priority\"");
        let c = PullSwitchConfig::from_toml(&format!("priority_levels = 8\n{text}")).unwrap();
        assert_eq!(c.levels(), 8);
        assert_eq!(
            PullSwitchConfig::from_toml(&sched("")).unwrap().datapath,
            Datapath::Socket
        );
    }

    #[test]
    fn what_the_xdp_queue_cannot_run_is_refused_in_one_line_naming_the_key() {
        let priority = sched(XDP).replace("\"draconis\"", "\"draconis-priority\"");
        for (bad, key) in [
            (sched("datapath = \"xdp\"\n"), "xdp: "),
            (
                sched(XDP).replace("\"draconis\"", "\"sparrow\""),
                "policy: ",
            ),
            (
                sched(XDP).replace("\"draconis\"", "\"draconis-resource\""),
                "policy: ",
            ),
            (
                sched(XDP).replace("\"draconis\"", "\"draconis-server\""),
                "policy: ",
            ),
            (
                format!("priority_levels = 9\n{priority}"),
                "priority_levels: ",
            ),
            (format!("{}cpu = 64\n", sched(XDP)), "xdp.cpu: "),
            (format!("{}cpus = \"all\"\n", sched(XDP)), "xdp.cpus: "),
            (
                format!("{}realtime_priority = 100\n", sched(XDP)),
                "xdp.realtime_priority: ",
            ),
            (
                format!("{}[fault]\ndrop_rate = 0.1\n", sched(XDP)),
                "fault.drop_rate: ",
            ),
            (
                sched(XDP).replace("10.0.0.2:7300", "0.0.0.0:7300"),
                "listen: ",
            ),
            (
                sched(XDP).replace("\"10.0.0.4:7400\"", "\"[::1]:7400\""),
                "executors: ",
            ),
            (
                sched("[xdp]\ninterface = \"eth0\"\n"),
                "xdp: [xdp] is for datapath",
            ),
        ] {
            let e = PullSwitchConfig::from_toml(&bad).unwrap_err().to_string();
            assert!(e.starts_with(key), "{e:?} should name {key:?}");
            assert!(!e.contains('\n'), "one line: {e:?}");
        }
    }

    /// Loading BPF needs root: skipped without, failed under
    /// NETSCHED_REQUIRE_BPF=1 (as crates/xdp's tests).
    fn bpf_allowed(test: &str) -> bool {
        let required = std::env::var("NETSCHED_REQUIRE_BPF").is_ok_and(|v| v == "1");
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            assert!(!required, "{test}: NETSCHED_REQUIRE_BPF=1 but not root");
            eprintln!("{test}: skipped, loading BPF programs needs root");
            return false;
        }
        true
    }

    fn recv(sock: &UdpSocket) -> Option<DraconisMessage> {
        let mut buf = [0u8; MAX_DATAGRAM];
        match sock.recv_from(&mut buf) {
            Ok((n, _)) => match Message::decode(&buf[..n]) {
                Ok(Message::Draconis(m)) => Some(m),
                other => panic!("not a Draconis message: {other:?}"),
            },
            Err(_) => None,
        }
    }

    /// What the program passes up (loaded, not attached: every datagram
    /// reaches the socket) is answered, counted, and never scheduled.
    #[test]
    fn passed_up_requests_get_a_noop_and_passed_up_jobs_come_back() {
        let test = "passed_up_requests_get_a_noop_and_passed_up_jobs_come_back";
        if !bpf_allowed(test) {
            return;
        }
        let local = |_| UdpSocket::bind("127.0.0.1:0").unwrap();
        let [daemon_sock, executor, stranger, client] = [0, 1, 2, 3].map(local);
        for s in [&executor, &stranger, &client] {
            s.set_read_timeout(Some(Duration::from_millis(200)))
                .unwrap();
        }
        let at = daemon_sock.local_addr().unwrap();
        let mut cfg = PullSwitchConfig::from_toml(&sched(XDP)).unwrap();
        cfg.executors = vec![executor.local_addr().unwrap()];
        let mut d = match PullXdpDaemon::new(&cfg, daemon_sock) {
            Err(PullError::Xdp(netsched_xdp::XdpError::ObjectMissing)) => {
                return eprintln!("{test}: skipped, the BPF object was not built");
            }
            r => r.unwrap(),
        };
        let send = |from: &UdpSocket, m: DraconisMessage| {
            from.send_to(&Message::Draconis(m).to_vec().unwrap(), at)
                .unwrap();
        };
        let request = DraconisMessage::TaskRequest {
            node: 0,
            resources: u64::MAX,
        };
        let task = |id| WireTask {
            id,
            fn_id: 0,
            priority: 1,
            fn_par: 1_000,
            props: 0,
        };
        let tasks = TaskVec::from_slice(&[task(1), task(2), task(3)]).unwrap();
        send(&executor, request);
        send(&stranger, request);
        send(&client, DraconisMessage::JobSubmission { job: 7, tasks });
        let mut buf = vec![0u8; MAX_DATAGRAM];
        for _ in 0..20 {
            d.poll(&mut buf, Duration::from_millis(10)).unwrap();
        }
        assert_eq!(recv(&executor), Some(DraconisMessage::NoOp));
        assert_eq!(recv(&stranger), None, "an unlisted executor gets nothing");
        assert_eq!(
            recv(&client),
            Some(DraconisMessage::ErrorPacket { tasks }),
            "the job's tasks come back"
        );
        let r = d.registry();
        let value = |name: &str, labels: &str| r.value(name, labels).unwrap_or(0);
        assert_eq!(
            value("netsched_xdp_passed_answered_total", "{answer=\"noop\"}"),
            1
        );
        assert_eq!(
            value(
                "netsched_xdp_passed_answered_total",
                "{answer=\"refused_job\"}"
            ),
            1
        );
        assert_eq!(value("netsched_pull_tasks_returned_total", ""), 3);
        assert_eq!(
            value("netsched_drops_total", "{reason=\"unregistered_source\"}"),
            1
        );
        // Nothing reached the program's queue.
        d.publish().unwrap();
        assert_eq!(
            value("netsched_xdp_events_total", "{event=\"tasks_enqueued\"}"),
            0
        );
    }
}
