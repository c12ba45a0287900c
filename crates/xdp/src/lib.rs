//! The Horus leaf (NSDI'24 §3.3, §3.4, §A.2, §A.3) as an XDP program: the
//! clang-built object of `bpf/horus_leaf.bpf.c`, its loader (aya), and runs
//! through `BPF_PROG_TEST_RUN` for the differential tests against the sans-IO
//! [`HorusLeaf`]. docs/xdp.md describes the map layout and the differences
//! from a switch pipeline.
//!
//! The control plane installs the XDP leaf's state from a sans-IO leaf
//! ([`XdpLeaf::install`]): every register array into the map of the same
//! name, and the random stream's state, so both draw the same samples.

mod conn;
mod cpu_thread;
mod daemon;
mod draconis;
mod every_cpu;
mod object;
mod spine;
mod test_run;
pub mod traffic;

use aya::maps::{MapData, RingBuf};
use aya::Ebpf;
use netsched_core::horus::HorusLeaf;
use netsched_core::{Nanos, NodeId, Notice};

pub use aya::programs::XdpFlags;
pub use conn::{ConnCounters, CONN_CELLS, CONN_MAX_STAGES, MAX_UPSTREAMS};
use daemon::Steering;
pub use daemon::{interface_mac, neighbour_mac, CpuRuns, SchedulerThread, MAX_CPUS};
pub use draconis::{QueuedError, XdpDraconis, XdpDraconisCounters, XdpSlot, MAX_LEVELS};
pub use every_cpu::{PassLockStats, ProgramRunner, PASS_ORDER_LEN};
use object::{ModelMaps, SchedulerObject};
pub use spine::{RackAddr, SpineCounters, XdpSpine, MAX_RACKS};
pub use test_run::{TestRun, XdpAction};

/// The BPF object built by build.rs (empty when clang was missing).
// Aligned: the ELF parser reads the object in place.
static OBJECT: &[u8] = aya::include_bytes_aligned!(concat!(env!("OUT_DIR"), "/horus_leaf.bpf.o"));

/// The program's name in the object.
const PROGRAM: &str = "horus_leaf";

/// Workers one XDP leaf can hold: the size of its per-worker maps
/// (`MAX_WORKERS` in the C source).
pub const MAX_WORKERS: u32 = 64;

#[derive(Debug, thiserror::Error)]
pub enum XdpError {
    #[error("the BPF object was not built (clang missing when netsched-xdp was compiled)")]
    ObjectMissing,
    #[error(
        "reading the BPF object {path} (from {}): {source}",
        object::OBJECT_DIR_ENV
    )]
    ObjectFile {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
    #[error("loading the BPF object: {0}")]
    Load(#[from] aya::EbpfError),
    #[error("BPF program: {0}")]
    Program(#[from] aya::programs::ProgramError),
    #[error("BPF map: {0}")]
    Map(#[from] aya::maps::MapError),
    #[error("the BPF object has no map `{0}`")]
    NoMap(&'static str),
    #[error("{workers} workers exceed the XDP leaf's {MAX_WORKERS}")]
    TooManyWorkers { workers: u32 },
    #[error("register array `{0}` has no map in the XDP leaf")]
    UnknownArray(&'static str),
    #[error("BPF_PROG_TEST_RUN: {0}")]
    TestRun(std::io::Error),
    #[error(
        "the XDP leaf implements the paper's mechanism, not idle or slot tokens (horus-tokens)"
    )]
    IdleTokens,
    #[error("the XDP spine implements the paper's mechanism: idle tokens, a random idle pick and the lock-free remove (horus-sim) are refused")]
    SpineOptions,
    #[error("{racks} racks exceed the XDP spine's {}", spine::MAX_RACKS)]
    TooManyRacks { racks: u32 },
    #[error("notice of unknown kind {0} on the notices ring")]
    UnknownNotice(u32),
    #[error("a record of {0} bytes on the notices ring, not a notice of 8")]
    ShortNotice(usize),
    #[error("the BPF object has no program `{0}`")]
    NoNamedProgram(&'static str),
    #[error("the XDP Draconis queue runs cFCFS and priorities, not the swap policies (resource, locality)")]
    SwapPolicy,
    #[error(
        "{levels} priority levels exceed the XDP Draconis queue's {}",
        draconis::MAX_LEVELS
    )]
    TooManyLevels { levels: u8 },
    #[error("levels × capacity exceeds a BPF array's 2^32 entries")]
    QueueTooLarge,
    #[error(
        "the switch's queue ({capacity} entries × {levels} levels) is not the loaded program's"
    )]
    QueueMismatch { capacity: u32, levels: u8 },
    #[error(
        "{executors} executors exceed the XDP Draconis queue's {}",
        draconis::MAX_EXECUTORS
    )]
    TooManyExecutors { executors: usize },
    #[error("a queued task names client {0}, which has no address")]
    UnknownClient(u32),
    #[error("the leaf's CPU {cpu} is beyond the cpumap's {}", daemon::MAX_CPUS)]
    CpuOutOfRange { cpu: u32 },
    #[error("duplicating the leaf program's fd: {0}")]
    Fd(std::io::Error),
    #[error("BPF run-time statistics: {0}")]
    Stats(std::io::Error),
    #[error("a connection table of {stages} stages × {slots} slots exceeds the XDP program's {} stages, {} cells", conn::CONN_MAX_STAGES, conn::CONN_CELLS)]
    ConnTable { stages: u32, slots: u32 },
    #[error(
        "{upstreams} upstream spines exceed the XDP leaf's {}",
        conn::MAX_UPSTREAMS
    )]
    TooManyUpstreams { upstreams: usize },
    #[error("cpumap: {0}")]
    CpuMap(#[from] aya::maps::xdp::XdpMapError),
    #[error(
        "no kernel thread `{0}` in /proc: cannot make the scheduler's cpumap thread real-time"
    )]
    CpuThreadNotFound(String),
    /// Making it real-time needs CAP_SYS_NICE, which a daemon given only
    /// CAP_BPF and CAP_NET_ADMIN lacks: the message names the way out.
    #[error("the scheduler's cpumap thread: {0} ([xdp] realtime_priority = 0 leaves it an ordinary thread)")]
    CpuThread(std::io::Error),
}

/// Where the leaf sends a worker's tasks: the rewritten destination.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WorkerAddr {
    pub mac: [u8; 6],
    pub ip: std::net::Ipv4Addr,
    pub port: u16,
}

impl WorkerAddr {
    /// `struct worker_addr` of the C source: mac, port and IPv4 address in
    /// network order.
    pub(crate) fn to_bytes(self) -> [u8; 12] {
        let mut b = [0u8; 12];
        b[..6].copy_from_slice(&self.mac);
        b[6..8].copy_from_slice(&self.port.to_be_bytes());
        b[8..].copy_from_slice(&self.ip.octets());
        b
    }
}

/// The counters the program keeps (`enum counter` of the C source).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct XdpCounters {
    pub dispatch_idle: u64,
    pub dispatch_sampled: u64,
    /// Passes after the first (power-of-2 resubmissions, retries, relists).
    pub resubmissions: u64,
    pub stale_idle_entries: u64,
    pub relisted_after_reorder: u64,
    pub forgotten_lost: u64,
    pub drop_no_nodes: u64,
    pub drop_overflow: u64,
    pub drop_unknown_node: u64,
    /// Packets handed to the kernel's stack: not Horus, malformed.
    pub passed: u64,
    pub replies: u64,
    /// Notices the full `notices` queue could not take.
    pub notices_lost: u64,
    /// Forwarded tasks dropped because the frame could not grow by a seal.
    pub seal_failed: u64,
    /// Replies the program sent on to their clients itself
    /// ([`XdpLeaf::set_reply_forwarding`]); the rest of `replies` were
    /// passed up (or dropped, from an unknown worker).
    pub replies_forwarded: u64,
}

/// Map names of the switch model's arrays (docs/xdp.md): `.` becomes `_`,
/// and `leaf.outstanding` is shortened to fit BPF's 15-character names.
pub fn map_name(array: &str) -> Option<&'static str> {
    Some(match array {
        "idle.lock" => "idle_lock",
        "idle.p" => "idle_p",
        "idle.list" => "idle_list",
        "idle.index" => "idle_index",
        "leaf.listed" => "leaf_listed",
        "pow2.slot_of" => "pow2_slot_of",
        "pow2.count" => "pow2_count",
        "pow2.factor.pre" => "pow2_factor_pre",
        "pow2.node1" => "pow2_node1",
        "pow2.load1" => "pow2_load1",
        "pow2.node2" => "pow2_node2",
        "pow2.load2" => "pow2_load2",
        "pow2.factor" => "pow2_factor",
        "pow2.drift1" => "pow2_drift1",
        "pow2.drift2" => "pow2_drift2",
        "leaf.outstanding" => "leaf_outstand",
        "leaf.last_sent" => "leaf_last_sent",
        "leaf.factor" => "leaf_factor",
        "leaf.avg" => "leaf_avg",
        "leaf.spine_view" => "leaf_spine_view",
        _ => return None,
    })
}

/// Cell width in bytes of each map (the switch model's cell, rounded up to
/// what a BPF array stores: a 1-bit cell takes a byte, the 48-bit
/// load/epoch pair 8 bytes).
fn cell_bytes(map: &str) -> usize {
    match map {
        "idle_lock" => 1,
        "pow2_load1" | "pow2_load2" | "leaf_last_sent" => 8,
        _ => 4,
    }
}

/// Where the leaf program keeps its switch model.
const LEAF_MAPS: ModelMaps = ModelMaps {
    map_name,
    cell_bytes,
    rng: "leaf_rng",
    addrs: "worker_addr",
};

/// The leaf's options the program reads (`struct leaf_config`).
#[derive(Clone, Copy, Debug)]
struct LeafConfig {
    threshold: u32,
    idle_capacity: u32,
    announce_on_reply: bool,
    loss_resync_ns: u64,
    fixed_now: u64,
    leaf_mac: [u8; 6],
    /// Where forwarded tasks leave from (`netsched switch`); none: the
    /// client's source is kept (the differential tests).
    source: Option<std::net::SocketAddrV4>,
    /// Replies go on to their clients from the program (with a source).
    forward_replies: bool,
}

use spine::NOTICE_KEY_BYTES;
/// Bytes of `struct task_sealer`: the key and the sequence counter.
const TASK_SEALER_BYTES: usize = NOTICE_KEY_BYTES + 8;

/// Bytes of `struct leaf_config`.
const LEAF_CONFIG_BYTES: usize = 48;

impl LeafConfig {
    fn to_bytes(self) -> [u8; LEAF_CONFIG_BYTES] {
        let mut b = [0u8; LEAF_CONFIG_BYTES];
        b[0..4].copy_from_slice(&self.threshold.to_ne_bytes());
        b[4..8].copy_from_slice(&self.idle_capacity.to_ne_bytes());
        b[8..12].copy_from_slice(&u32::from(self.announce_on_reply).to_ne_bytes());
        b[12..16].copy_from_slice(&u32::from(self.forward_replies).to_ne_bytes());
        b[16..24].copy_from_slice(&self.loss_resync_ns.to_ne_bytes());
        b[24..32].copy_from_slice(&self.fixed_now.to_ne_bytes());
        b[32..38].copy_from_slice(&self.leaf_mac);
        if let Some(source) = self.source {
            b[40..44].copy_from_slice(&source.ip().octets());
            b[44..46].copy_from_slice(&source.port().to_be_bytes());
        }
        b
    }
}

/// A loaded (not necessarily attached) XDP Horus leaf.
pub struct XdpLeaf {
    object: SchedulerObject,
    config: LeafConfig,
    /// The program's `notices` ring buffer, mapped once: draining it reads
    /// shared memory, no system call per notice.
    notices: RingBuf<MapData>,
}

impl XdpLeaf {
    crate::object::steered_program_methods!("horus_steer");
    crate::conn::conn_table_methods!();
    crate::every_cpu::every_cpu_methods!();

    /// Loads the program (the verifier runs here) with zeroed maps.
    pub fn load() -> Result<Self, XdpError> {
        let bytes = object::object_bytes("horus_leaf", OBJECT)?;
        let mut object = SchedulerObject::load(Ebpf::load(&bytes)?, PROGRAM, Steering::LEAF)?;
        let notices = object
            .ebpf
            .take_map("notices")
            .ok_or(XdpError::NoMap("notices"))?;
        Ok(XdpLeaf {
            notices: RingBuf::try_from(notices)?,
            object,
            config: LeafConfig {
                threshold: 0,
                idle_capacity: 0,
                announce_on_reply: true,
                loss_resync_ns: 0,
                fixed_now: 0,
                leaf_mac: [0; 6],
                source: None,
                forward_replies: false,
            },
        })
    }

    /// The control plane installs `leaf`'s state: its options, every
    /// register array, its connection table (§A.4), its random stream, and
    /// the workers' addresses. Only the paper's mechanism runs in XDP: a
    /// leaf with idle tokens is refused ([`XdpError::IdleTokens`]).
    pub fn install(
        &mut self,
        leaf: &HorusLeaf,
        leaf_mac: [u8; 6],
        workers: &[WorkerAddr],
    ) -> Result<(), XdpError> {
        self.install_registers(leaf, leaf_mac, workers)?;
        self.object.install_conn(leaf.conn_table())
    }

    /// A multi-packet task's first packet from the i-th of `upstream` (the
    /// leaf's spines, its config's order) records spine i in the
    /// connection table (§A.4), from any other source 0, as the socket
    /// daemon records it.
    pub fn set_upstreams(&mut self, upstream: &[std::net::SocketAddr]) -> Result<(), XdpError> {
        self.object.set_conn_upstreams(upstream)
    }

    /// [`Self::install`] without the connection table.
    fn install_registers(
        &mut self,
        leaf: &HorusLeaf,
        leaf_mac: [u8; 6],
        workers: &[WorkerAddr],
    ) -> Result<(), XdpError> {
        let options = leaf.options();
        if options.idle_tokens {
            return Err(XdpError::IdleTokens);
        }
        if leaf.workers() > MAX_WORKERS || workers.len() > MAX_WORKERS as usize {
            return Err(XdpError::TooManyWorkers {
                workers: leaf.workers().max(workers.len() as u32),
            });
        }
        self.config = LeafConfig {
            threshold: options.leaf_idle_threshold,
            idle_capacity: leaf.idle_nodes().capacity() as u32,
            announce_on_reply: options.announce_on_reply,
            loss_resync_ns: options.loss_resync_ns,
            fixed_now: self.config.fixed_now,
            leaf_mac,
            source: self.config.source,
            forward_replies: self.config.forward_replies,
        };
        self.write_config()?;
        self.object.install_model(
            &LEAF_MAPS,
            MAX_WORKERS,
            &leaf.registers(),
            leaf.rng_state(),
            workers.iter().map(|a| a.to_bytes()),
        )
    }

    /// Sealed tasks (crates/proto/src/seal.rs, "Sealed tasks"): with a key
    /// the program seals every task it forwards under it, with sequence
    /// numbers `seq_start + 2`, `seq_start + 4`, … (`seq_start` odd: the
    /// XDP stream); `None` forwards tasks unsealed.
    pub fn set_task_key(&mut self, key: Option<[u8; 16]>, seq_start: u64) -> Result<(), XdpError> {
        let mut b = [0u8; TASK_SEALER_BYTES];
        if let Some(key) = key {
            b[..NOTICE_KEY_BYTES].copy_from_slice(&spine::notice_key_bytes(key));
        }
        b[NOTICE_KEY_BYTES..].copy_from_slice(&seq_start.to_ne_bytes());
        self.object
            .array::<[u8; TASK_SEALER_BYTES]>("task_sealer")?
            .set(0, b, 0)?;
        Ok(())
    }

    /// The program's task sequence counter: the last `seq` it sealed with.
    pub fn task_seq(&mut self) -> Result<u64, XdpError> {
        let b = self
            .object
            .array::<[u8; TASK_SEALER_BYTES]>("task_sealer")?
            .get(&0, 0)?;
        Ok(u64::from_ne_bytes(
            b[NOTICE_KEY_BYTES..].try_into().expect("8 bytes"),
        ))
    }

    /// Fixes the program's clock at `now` ([`Nanos::ZERO`]: the kernel's
    /// monotonic clock).
    pub fn set_clock(&mut self, now: Nanos) -> Result<(), XdpError> {
        self.config.fixed_now = now.get();
        self.write_config()
    }

    fn write_config(&mut self) -> Result<(), XdpError> {
        let bytes = self.config.to_bytes();
        self.object
            .array::<[u8; LEAF_CONFIG_BYTES]>("leaf_config")?
            .set(0, bytes, 0)?;
        Ok(())
    }

    /// The first `len` cells of the map holding the switch model's `array`.
    pub fn read_array(&mut self, array: &'static str, len: usize) -> Result<Vec<u64>, XdpError> {
        self.object.read_model_array(&LEAF_MAPS, array, len)
    }

    /// The random stream's state after the packets run so far.
    pub fn rng_state(&mut self) -> Result<[u64; 4], XdpError> {
        self.object.model_rng(&LEAF_MAPS)
    }

    /// Pops the notices the program queued, in the order it queued them.
    pub fn drain_notices(&mut self) -> Result<Vec<Notice>, XdpError> {
        let mut notices = Vec::new();
        while let Some(record) = self.notices.next() {
            let word = |i: usize| -> Result<u32, XdpError> {
                let bytes = record
                    .get(4 * i..4 * i + 4)
                    .ok_or(XdpError::ShortNotice(record.len()))?;
                Ok(u32::from_ne_bytes(bytes.try_into().expect("4 bytes")))
            };
            let (kind, value) = (word(0)?, word(1)?);
            notices.push(match kind {
                1 => Notice::IdleAdd,
                2 => Notice::IdleRemove,
                3 => Notice::LoadUpdate(value),
                other => return Err(XdpError::UnknownNotice(other)),
            });
        }
        Ok(notices)
    }

    pub fn counters(&mut self) -> Result<XdpCounters, XdpError> {
        let counters = self.object.array::<u64>("counters")?;
        let c = |i: u32| counters.get(&i, 0);
        Ok(XdpCounters {
            dispatch_idle: c(0)?,
            dispatch_sampled: c(1)?,
            resubmissions: c(2)?,
            stale_idle_entries: c(3)?,
            relisted_after_reorder: c(4)?,
            forgotten_lost: c(5)?,
            drop_no_nodes: c(6)?,
            drop_overflow: c(7)?,
            drop_unknown_node: c(8)?,
            passed: c(9)?,
            replies: c(10)?,
            notices_lost: c(11)?,
            seal_failed: c(12)?,
            replies_forwarded: c(13)?,
        })
    }
}

/// The worker a forwarded task was sent to: `dst_id` of its netsched header.
pub fn forwarded_to(frame: &[u8]) -> Option<NodeId> {
    // Ethernet 14 + IPv4 20 + UDP 8, then dst_id at offset 6.
    let header = frame.get(42..54)?;
    Some(NodeId::from(u16::from_be_bytes([header[6], header[7]])))
}
