//! Malformed frames through both XDP programs' parsers (BPF_PROG_TEST_RUN):
//! every truncation of well-formed frames, and random mutations of them
//! (byte flips, wrong IPv4/UDP lengths, IP options, fragments, bad framing
//! bytes, huge counts and ids, Ethernet padding, other ethertypes).
//!
//! The oracle is the sans-IO decoder (crates/proto) behind a strict
//! Ethernet/IPv4/UDP reading. A program
//! * never sends (XDP_TX) a frame whose datagram the decoder rejects, or one
//!   of another type than documented (docs/xdp.md);
//! * leaves a frame it does not act on untouched: XDP_PASS, the frame and
//!   every map of the state unchanged, no notice or error_packet queued.
//!   That covers every frame the decoder rejects;
//! * acts only as documented on the frames it handles.
//!
//! Needs root, like the differential tests.

mod common;

use netsched_core::Nanos;
use std::cell::RefCell;
use std::net::{Ipv4Addr, SocketAddrV4};

use common::{frame, sent};
use netsched_core::horus::{ConnTableConfig, HorusLeaf, HorusOptions};
use netsched_core::pull::{
    Draconis, DraconisConfig, JobSubmission, PullDataPlane, PullInput, PullOutbox, TaskInfo,
    TaskList,
};
use netsched_proto::{
    CompletionStatus, DraconisMessage, HorusBody, HorusHeader, HorusMessage, HorusReply, HorusTask,
    Message, ReplyStatus, TaskVec, WireTask,
};
use netsched_xdp::{WorkerAddr, XdpAction, XdpDraconis, XdpError, XdpLeaf};
use proptest::prelude::*;
use proptest::test_runner::TestRunner;

const WORKERS: u32 = 4;
const EXECUTOR: SocketAddrV4 = SocketAddrV4::new(Ipv4Addr::new(10, 0, 2, 1), 8000);
const STRANGER: SocketAddrV4 = SocketAddrV4::new(Ipv4Addr::new(10, 0, 2, 9), 8009);
const CLIENT: SocketAddrV4 = SocketAddrV4::new(Ipv4Addr::new(10, 0, 1, 1), 6000);

fn worker_addr(node: u32) -> WorkerAddr {
    WorkerAddr {
        mac: [0x02, 0, 0, 0, 1, node as u8],
        ip: Ipv4Addr::new(10, 0, 3, node as u8 + 1),
        port: 9000 + node as u16,
    }
}

/// The datagram of `frame` read strictly: IPv4 without options, not a
/// fragment, UDP, lengths consistent and inside the frame (which Ethernet
/// may pad).
fn datagram(frame: &[u8]) -> Option<&[u8]> {
    let ip = frame.get(14..34)?;
    if frame[12..14] != [0x08, 0x00] || ip[0] != 0x45 || ip[9] != 17 {
        return None;
    }
    if u16::from_be_bytes([ip[6], ip[7]]) & 0x3fff != 0 {
        return None;
    }
    let tot = usize::from(u16::from_be_bytes([ip[2], ip[3]]));
    let udp = usize::from(u16::from_be_bytes(frame.get(38..40)?.try_into().ok()?));
    if udp < 8 || tot != 20 + udp || 14 + tot > frame.len() {
        return None;
    }
    frame.get(42..34 + udp)
}

fn decoded(frame: &[u8]) -> Option<Message<'_>> {
    netsched_proto::decode(datagram(frame)?).ok()
}

fn horus(header: HorusHeader, body: HorusBody<'_>) -> Vec<u8> {
    Message::Horus(HorusMessage { header, body })
        .to_vec()
        .expect("encode")
}

fn draconis(m: DraconisMessage) -> Vec<u8> {
    Message::Draconis(m).to_vec().expect("encode")
}

fn wire_task(id: u64) -> WireTask {
    WireTask {
        id,
        fn_id: 2,
        priority: 1,
        fn_par: id ^ 0xabcd,
        props: id.rotate_left(9),
    }
}

/// Well-formed frames of both families (and of every message type the
/// programs must leave alone), with huge ids and full task lists.
fn seeds() -> Vec<Vec<u8>> {
    let w = worker_addr(1);
    let worker = SocketAddrV4::new(w.ip, w.port);
    let task = |is_last, idle_selected, payload: &'static [u8]| HorusTask {
        task_id: u64::MAX,
        is_last,
        idle_selected,
        class: 3,
        service_time_ns: 10_000,
        payload,
    };
    let reply_header = |src_id| HorusHeader {
        pool_id: 1,
        src_id,
        qlen: 2,
        seq: u16::MAX,
        ..HorusHeader::default()
    };
    let tasks = |n: u64| {
        TaskVec::from_slice(&(0..n).map(|i| wire_task(u64::MAX - i)).collect::<Vec<_>>())
            .expect("at most 8")
    };
    vec![
        frame(
            CLIENT,
            &horus(
                HorusHeader::default(),
                HorusBody::TaskFirst(task(true, false, b"key")),
            ),
        ),
        frame(
            CLIENT,
            &horus(
                HorusHeader::default(),
                HorusBody::TaskFirst(task(true, true, b"")),
            ),
        ),
        frame(
            CLIENT,
            &horus(
                HorusHeader::default(),
                HorusBody::TaskFirst(task(false, false, b"part")),
            ),
        ),
        frame(
            CLIENT,
            &horus(
                HorusHeader::default(),
                HorusBody::TaskContinuation(task(true, false, b"rest")),
            ),
        ),
        // A continuation marked idleSelected, which the decoder refuses
        // (`Inconsistent`) and the encoder will not write: a first packet
        // so marked, its type byte turned into a continuation's.
        frame(CLIENT, &{
            let mut marked = horus(
                HorusHeader::default(),
                HorusBody::TaskFirst(task(true, true, b"rest")),
            );
            marked[1] = 2;
            marked
        }),
        frame(
            worker,
            &horus(
                reply_header(1),
                HorusBody::Reply(HorusReply {
                    task_id: 7,
                    status: ReplyStatus::Ok,
                    payload: b"value",
                }),
            ),
        ),
        frame(
            worker,
            &horus(
                reply_header(0),
                HorusBody::Reply(HorusReply {
                    task_id: 8,
                    status: ReplyStatus::Failed,
                    payload: b"",
                }),
            ),
        ),
        frame(
            worker,
            &horus(
                reply_header(u16::MAX),
                HorusBody::Reply(HorusReply {
                    task_id: 9,
                    status: ReplyStatus::Ok,
                    payload: b"",
                }),
            ),
        ),
        frame(CLIENT, &horus(reply_header(1), HorusBody::IdleAdd)),
        frame(
            CLIENT,
            &horus(reply_header(1), HorusBody::LoadUpdate { load: u32::MAX }),
        ),
        frame(CLIENT, &horus(reply_header(1), HorusBody::KeepAlive)),
        frame(
            CLIENT,
            &draconis(DraconisMessage::JobSubmission {
                job: u64::MAX,
                tasks: tasks(1),
            }),
        ),
        frame(
            CLIENT,
            &draconis(DraconisMessage::JobSubmission {
                job: 3,
                tasks: tasks(8),
            }),
        ),
        frame(
            EXECUTOR,
            &draconis(DraconisMessage::TaskRequest {
                node: u32::MAX,
                resources: u64::MAX,
            }),
        ),
        frame(
            STRANGER,
            &draconis(DraconisMessage::TaskRequest {
                node: 0,
                resources: 0,
            }),
        ),
        frame(
            EXECUTOR,
            &draconis(DraconisMessage::TaskAssignment {
                client: CLIENT,
                skips: 1,
                task: wire_task(5),
            }),
        ),
        frame(CLIENT, &draconis(DraconisMessage::NoOp)),
        frame(
            CLIENT,
            &draconis(DraconisMessage::Ack {
                job: 1,
                accepted: 255,
            }),
        ),
        frame(
            CLIENT,
            &draconis(DraconisMessage::ErrorPacket { tasks: tasks(2) }),
        ),
        frame(
            EXECUTOR,
            &draconis(DraconisMessage::Completion {
                task_id: u64::MAX,
                exec_ns: 1,
                executor: 0,
                status: CompletionStatus::Ok,
            }),
        ),
        frame(EXECUTOR, &draconis(DraconisMessage::GetTask { slot: 1 })),
    ]
}

/// One of the programs, behind what the oracle needs of it.
trait Program {
    /// Every map of the scheduler's state.
    fn state(&mut self) -> Vec<Vec<u8>>;
    /// Notices or error_packets the last run queued for user space.
    fn queued(&mut self) -> usize;
    fn run(&mut self, frame: &[u8]) -> Result<(XdpAction, Vec<u8>), XdpError>;
    /// Whether the program acts on `message` (from the frame's source),
    /// and if so which verdicts and which sent types are documented.
    fn handles(&self, message: &Message<'_>, frame: &[u8]) -> Option<Handled>;
}

struct Handled {
    verdicts: &'static [XdpAction],
    /// The sent datagram's family and type bytes.
    sends: &'static [[u8; 2]],
}

struct Leaf(XdpLeaf, Vec<&'static str>, Vec<usize>);

impl Program for Leaf {
    fn state(&mut self) -> Vec<Vec<u8>> {
        let mut all: Vec<Vec<u8>> = self
            .1
            .iter()
            .zip(&self.2)
            .map(|(&name, &len)| {
                let cells = self.0.read_array(name, len).expect("read map");
                cells.iter().flat_map(|c| c.to_le_bytes()).collect()
            })
            .collect();
        let rng = self.0.rng_state().expect("rng");
        all.push(rng.iter().flat_map(|w| w.to_le_bytes()).collect());
        // The connection table (§A.4), cell by cell.
        let table = self.0.conn_entries().expect("connection table");
        all.extend(table.iter().map(|e| format!("{e:?}").into_bytes()));
        all
    }

    fn queued(&mut self) -> usize {
        self.0.drain_notices().expect("notices").len()
    }

    fn run(&mut self, frame: &[u8]) -> Result<(XdpAction, Vec<u8>), XdpError> {
        self.0.test_run(frame, 1).map(|r| (r.action, r.frame))
    }

    fn handles(&self, message: &Message<'_>, _frame: &[u8]) -> Option<Handled> {
        match message {
            Message::Horus(HorusMessage {
                body: HorusBody::TaskFirst(_),
                ..
            }) => Some(Handled {
                verdicts: &[XdpAction::Tx, XdpAction::Drop],
                sends: &[[0x11, 1]],
            }),
            // Follows the connection table (§A.4), or is dropped without an
            // entry.
            Message::Horus(HorusMessage {
                body: HorusBody::TaskContinuation(_),
                ..
            }) => Some(Handled {
                verdicts: &[XdpAction::Tx, XdpAction::Drop],
                sends: &[[0x11, 2]],
            }),
            Message::Horus(HorusMessage {
                body: HorusBody::Reply(_),
                ..
            }) => Some(Handled {
                verdicts: &[XdpAction::Pass, XdpAction::Drop],
                sends: &[],
            }),
            _ => None,
        }
    }
}

struct Queue(XdpDraconis);

impl Program for Queue {
    fn state(&mut self) -> Vec<Vec<u8>> {
        (0..self.0.levels())
            .flat_map(|level| {
                let p = self.0.pointers(level).expect("pointers");
                let cells = self.0.entries(level).expect("entries");
                [
                    format!("{p:?}").into_bytes(),
                    format!("{cells:?}").into_bytes(),
                ]
            })
            .collect()
    }

    fn queued(&mut self) -> usize {
        self.0.drain_errors().expect("errors").len()
    }

    fn run(&mut self, frame: &[u8]) -> Result<(XdpAction, Vec<u8>), XdpError> {
        self.0.test_run(frame, 1).map(|r| (r.action, r.frame))
    }

    fn handles(&self, message: &Message<'_>, frame: &[u8]) -> Option<Handled> {
        let from = SocketAddrV4::new(
            Ipv4Addr::new(frame[26], frame[27], frame[28], frame[29]),
            u16::from_be_bytes([frame[34], frame[35]]),
        );
        match message {
            Message::Draconis(DraconisMessage::JobSubmission { .. }) => Some(Handled {
                verdicts: &[XdpAction::Tx],
                sends: &[[0x13, 5]],
            }),
            Message::Draconis(DraconisMessage::TaskRequest { .. }) if from == EXECUTOR => {
                Some(Handled {
                    verdicts: &[XdpAction::Tx],
                    sends: &[[0x13, 3], [0x13, 4]],
                })
            }
            // An unknown executor's request is dropped without a change.
            Message::Draconis(DraconisMessage::TaskRequest { .. }) => Some(Handled {
                verdicts: &[XdpAction::Drop],
                sends: &[],
            }),
            _ => None,
        }
    }
}

/// Runs `frame` through `program` and checks the oracle; returns whether
/// the program acted on it.
fn check(program: &mut dyn Program, frame: &[u8]) -> bool {
    let before = program.state();
    let result = program.run(frame);
    let (action, out) = match result {
        Ok(r) => r,
        // The kernel refuses frames shorter than an Ethernet header before
        // any program runs.
        Err(XdpError::TestRun(e)) if frame.len() < 14 => {
            assert_eq!(e.raw_os_error(), Some(libc::EINVAL), "{frame:02x?}");
            return false;
        }
        Err(e) => panic!("test run: {e}"),
    };
    let handled = decoded(frame).and_then(|m| program.handles(&m, frame));
    let Some(handled) = handled else {
        assert_eq!(action, XdpAction::Pass, "acted on {frame:02x?}");
        assert_eq!(out, frame, "changed a frame it passed");
        assert_eq!(program.state(), before, "state changed by {frame:02x?}");
        assert_eq!(program.queued(), 0, "queued for {frame:02x?}");
        return false;
    };
    assert!(
        handled.verdicts.contains(&action),
        "{action:?} for {frame:02x?}"
    );
    if action == XdpAction::Tx {
        let s = sent(&out).unwrap_or_else(|e| panic!("sent a bad frame ({e}) for {frame:02x?}"));
        if let Err(e) = netsched_proto::decode(s.payload) {
            panic!("sent a datagram the decoder rejects ({e}) for {frame:02x?}");
        }
        let kind = [s.payload[0], s.payload[1]];
        assert!(handled.sends.contains(&kind), "sent {kind:02x?}");
    } else {
        assert_eq!(out, frame, "changed a frame it did not send");
    }
    if action == XdpAction::Drop && handled.sends.is_empty() {
        assert_eq!(program.state(), before, "a drop changed state");
    }
    program.queued();
    true
}

fn leaf(test: &str) -> Option<Leaf> {
    let mut xdp = common::load_program(test, "leaf", XdpLeaf::load)?;
    // A small connection table: the oracle reads every cell per frame.
    let conn = ConnTableConfig {
        stages: 2,
        slots_per_stage: 8,
        ..ConnTableConfig::default()
    };
    let sans_io = HorusLeaf::with_options(WORKERS, 1, conn, HorusOptions::default());
    let addrs: Vec<WorkerAddr> = (0..WORKERS).map(worker_addr).collect();
    xdp.install(&sans_io, [0x02, 0, 0, 0, 0, 0xfe], &addrs)
        .expect("install");
    xdp.set_clock(Nanos::new(1_000)).expect("clock");
    let dumps = sans_io.registers();
    let names = dumps.iter().map(|d| d.name).collect();
    let lens = dumps.iter().map(|d| d.cells.len()).collect();
    Some(Leaf(xdp, names, lens))
}

fn queue(test: &str) -> Option<Queue> {
    let config = DraconisConfig {
        levels: 2,
        ..DraconisConfig::fcfs(8)
    };
    let mut xdp = common::load_program(test, "Draconis queue", || XdpDraconis::load(&config))?;
    // A few tasks queued, so that requests are assigned some.
    let mut switch = Draconis::new(config);
    let tasks: Vec<TaskInfo> = (1..=4).map(TaskInfo::new).collect();
    let mut out = PullOutbox::new();
    switch.handle(
        Nanos::ZERO,
        PullInput::JobSubmission(JobSubmission {
            client: 0,
            job: 1,
            tasks: TaskList::from_slice(&tasks).expect("4 tasks"),
        }),
        &mut out,
    );
    xdp.install(&switch, &[CLIENT], &[EXECUTOR])
        .expect("install");
    Some(Queue(xdp))
}

/// Every prefix of every seed, through both programs.
#[test]
fn every_truncation_is_passed_untouched() {
    let (Some(mut leaf), Some(mut queue)) = (leaf("every_truncation"), queue("every_truncation"))
    else {
        return;
    };
    let mut acted = 0;
    for seed in seeds() {
        for len in 0..=seed.len() {
            let programs: [&mut dyn Program; 2] = [&mut leaf, &mut queue];
            for program in programs {
                if check(program, &seed[..len]) {
                    acted += 1;
                    assert_eq!(len, seed.len(), "acted on a truncated frame");
                }
            }
        }
    }
    // The whole seeds are handled: the programs were not merely passing.
    assert!(acted >= 8, "{acted}");
}

#[derive(Clone, Debug)]
enum Mutation {
    Truncate(usize),
    Flip(usize, u8),
    /// Ethernet padding or junk after the datagram.
    Append(Vec<u8>),
    /// Four bytes of IPv4 options (ihl 6), lengths kept consistent.
    IpOptions,
    Fragment {
        more: bool,
        offset: u16,
    },
    IpLength(i16),
    UdpLength(i16),
    /// Both lengths moved together (the datagram seems longer or shorter).
    Lengths(i16),
    Framing(u8),
    /// The byte after framing and type: a task count or id's top byte.
    Type(u8),
    Count(u8),
    Ethertype(u16),
}

fn add(frame: &mut [u8], at: usize, delta: i16) {
    if let Some(b) = frame.get_mut(at..at + 2) {
        let v = u16::from_be_bytes([b[0], b[1]]).wrapping_add_signed(delta);
        b.copy_from_slice(&v.to_be_bytes());
    }
}

fn apply(frame: &mut Vec<u8>, m: &Mutation) {
    match m {
        Mutation::Truncate(n) => frame.truncate(*n % (frame.len() + 1)),
        Mutation::Flip(at, x) => {
            // Mostly the headers and the first bytes of the datagram.
            let n = frame.len().clamp(1, 96);
            if let Some(b) = frame.get_mut(at % n) {
                *b ^= x | 1;
            }
        }
        Mutation::Append(bytes) => frame.extend_from_slice(bytes),
        Mutation::IpOptions => {
            if frame.len() >= 34 {
                frame.splice(34..34, [1, 1, 1, 0]);
                frame[14] = 0x46;
                add(frame, 16, 4);
            }
        }
        Mutation::Fragment { more, offset } => {
            if let Some(b) = frame.get_mut(20..22) {
                let v = (u16::from(*more) << 13) | (offset & 0x1fff);
                b.copy_from_slice(&v.to_be_bytes());
            }
        }
        Mutation::IpLength(d) => add(frame, 16, *d),
        Mutation::UdpLength(d) => add(frame, 38, *d),
        Mutation::Lengths(d) => {
            add(frame, 16, *d);
            add(frame, 38, *d);
        }
        Mutation::Framing(b) => {
            if let Some(x) = frame.get_mut(42) {
                *x = *b;
            }
        }
        Mutation::Type(b) => {
            if let Some(x) = frame.get_mut(43) {
                *x = *b;
            }
        }
        Mutation::Count(b) => {
            if let Some(x) = frame.get_mut(52) {
                *x = *b;
            }
        }
        Mutation::Ethertype(t) => {
            if let Some(x) = frame.get_mut(12..14) {
                x.copy_from_slice(&t.to_be_bytes());
            }
        }
    }
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        1 => any::<usize>().prop_map(Mutation::Truncate),
        4 => (any::<usize>(), any::<u8>()).prop_map(|(at, x)| Mutation::Flip(at, x)),
        1 => proptest::collection::vec(prop_oneof![Just(0u8), any::<u8>()], 1..40)
            .prop_map(Mutation::Append),
        1 => Just(Mutation::IpOptions),
        1 => (any::<bool>(), prop_oneof![Just(0u16), 1u16..0x2000])
            .prop_map(|(more, offset)| Mutation::Fragment { more, offset }),
        1 => (-40i16..40).prop_map(Mutation::IpLength),
        1 => (-40i16..40).prop_map(Mutation::UdpLength),
        1 => (-40i16..40).prop_map(Mutation::Lengths),
        1 => prop_oneof![Just(0x11u8), Just(0x13), Just(0x21), Just(0x10), any::<u8>()]
            .prop_map(Mutation::Framing),
        1 => (0u8..12).prop_map(Mutation::Type),
        1 => prop_oneof![Just(0u8), Just(9), Just(255), 1u8..9].prop_map(Mutation::Count),
        1 => prop_oneof![Just(0x86ddu16), Just(0x8100), Just(0x0806), any::<u16>()]
            .prop_map(Mutation::Ethertype),
    ]
}

/// Random mutations of the seeds, through both programs loaded once (a
/// load per case would spend the test in the verifier); the state carries
/// over from case to case, as on an interface. Bounded: 512 cases.
#[test]
fn mutated_frames_are_never_sent_malformed_nor_change_state() {
    let (Some(leaf), Some(queue)) = (leaf("mutated_frames"), queue("mutated_frames")) else {
        return;
    };
    // TestRunner::run takes an Fn.
    let (leaf, queue) = (RefCell::new(leaf), RefCell::new(queue));
    let seeds = seeds();
    let mut runner = TestRunner::new(ProptestConfig {
        cases: 512,
        ..ProptestConfig::default()
    });
    let strategy = (
        any::<prop::sample::Index>(),
        proptest::collection::vec(mutation(), 1..4),
    );
    runner
        .run(&strategy, |(seed, mutations)| {
            let mut frame = seeds[seed.index(seeds.len())].clone();
            for m in &mutations {
                apply(&mut frame, m);
            }
            check(&mut *leaf.borrow_mut(), &frame);
            check(&mut *queue.borrow_mut(), &frame);
            Ok(())
        })
        .unwrap_or_else(|e| panic!("{e}"));
}
