//! The Draconis queue (EuroSys'24 §4-§6) as an XDP program: the loader of
//! `bpf/draconis_queue.bpf.c`. The control plane installs a sans-IO
//! [`Draconis`] switch's queue ([`XdpDraconis::install`]): its pointers,
//! repair flags and every entry into the maps named after the switch
//! model's arrays, and reads them back for the differential tests.
//!
//! The program runs cFCFS (§4.8) and priority levels (§6.1); the swap-based
//! policies (resource §5.2, locality §5.3) are refused at load.

use std::net::{Ipv4Addr, SocketAddrV4};

use aya::maps::{HashMap, MapData, Queue};
use aya::EbpfLoader;
use netsched_core::pull::queue::RepairFlags;
use netsched_core::pull::{Constraint, Draconis, DraconisConfig, Slot, TaskInfo};

use crate::daemon::Steering;
use crate::object::SchedulerObject;
use crate::XdpError;

// Aligned: the ELF parser reads the object in place.
static OBJECT: &[u8] =
    aya::include_bytes_aligned!(concat!(env!("OUT_DIR"), "/draconis_queue.bpf.o"));

const PROGRAM: &str = "draconis_queue";

/// Priority levels the program holds (`MAX_LEVELS` in the C source).
pub const MAX_LEVELS: u8 = 8;

/// Executors one program knows (the `drac_executors` map's size).
pub const MAX_EXECUTORS: usize = 4096;

/// Bytes of `struct slot`, `struct repair_flags`, `struct error_out`.
const SLOT_BYTES: usize = 48;
const REPAIR_BYTES: usize = 12;
const TASK_BYTES: usize = 32;
const ERROR_BYTES: usize = 8 + 8 * TASK_BYTES;

/// One entry of the XDP queue: the sans-IO [`Slot`] with the client's
/// address where the sans-IO entry has the daemon's client index (the
/// paper's CLIENT_IP and port, §4.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct XdpSlot {
    pub task: TaskInfo,
    pub client: SocketAddrV4,
    pub skips: u16,
    pub pos: u32,
    pub valid: bool,
}

impl XdpSlot {
    /// `slot` with its client index looked up in `clients` (an index out of
    /// range, only ever in an invalid entry's leftovers, becomes 0.0.0.0:0).
    pub fn of(slot: &Slot, clients: &[SocketAddrV4]) -> Self {
        XdpSlot {
            task: slot.task,
            client: clients
                .get(slot.client as usize)
                .copied()
                .unwrap_or(SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 0)),
            skips: slot.skips,
            pos: slot.pos,
            valid: slot.valid,
        }
    }

    fn to_bytes(self) -> [u8; SLOT_BYTES] {
        let mut b = [0u8; SLOT_BYTES];
        b[..TASK_BYTES].copy_from_slice(&task_bytes(&self.task));
        b[32..36].copy_from_slice(&self.client.ip().octets());
        b[36..38].copy_from_slice(&self.client.port().to_be_bytes());
        b[38..40].copy_from_slice(&self.skips.to_ne_bytes());
        b[40..44].copy_from_slice(&self.pos.to_ne_bytes());
        b[44] = u8::from(self.valid);
        b
    }

    fn from_bytes(b: &[u8; SLOT_BYTES]) -> Self {
        XdpSlot {
            task: task_of(&b[..TASK_BYTES]),
            client: SocketAddrV4::new(
                Ipv4Addr::new(b[32], b[33], b[34], b[35]),
                u16::from_be_bytes([b[36], b[37]]),
            ),
            skips: u16::from_ne_bytes([b[38], b[39]]),
            pos: u32::from_ne_bytes([b[40], b[41], b[42], b[43]]),
            valid: b[44] != 0,
        }
    }
}

/// `struct task_info` of the C source (host order).
fn task_bytes(t: &TaskInfo) -> [u8; TASK_BYTES] {
    let mut b = [0u8; TASK_BYTES];
    b[0..8].copy_from_slice(&t.id.to_ne_bytes());
    b[8..16].copy_from_slice(&t.fn_par.to_ne_bytes());
    b[16..24].copy_from_slice(&t.props.to_ne_bytes());
    b[24..28].copy_from_slice(&t.fn_id.to_ne_bytes());
    b[28] = t.priority;
    b
}

fn task_of(b: &[u8]) -> TaskInfo {
    let u64_at = |i: usize| u64::from_ne_bytes(b[i..i + 8].try_into().expect("8 bytes"));
    TaskInfo {
        id: u64_at(0),
        fn_par: u64_at(8),
        props: u64_at(16),
        fn_id: u32::from_ne_bytes(b[24..28].try_into().expect("4 bytes")),
        priority: b[28],
    }
}

fn repair_bytes(f: RepairFlags) -> [u8; REPAIR_BYTES] {
    let mut b = [0u8; REPAIR_BYTES];
    b[0..4].copy_from_slice(&f.add.unwrap_or(0).to_ne_bytes());
    b[4..8].copy_from_slice(&f.retrieve.unwrap_or(0).to_ne_bytes());
    b[8] = u8::from(f.add.is_some());
    b[9] = u8::from(f.retrieve.is_some());
    b
}

fn repair_of(b: &[u8; REPAIR_BYTES]) -> RepairFlags {
    let value = |i: usize| u32::from_ne_bytes(b[i..i + 4].try_into().expect("4 bytes"));
    RepairFlags {
        add: (b[8] != 0).then(|| value(0)),
        retrieve: (b[9] != 0).then(|| value(4)),
    }
}

/// `struct executor_key`: address and port in network order.
fn executor_key(addr: SocketAddrV4) -> [u8; 8] {
    let mut k = [0u8; 8];
    k[..4].copy_from_slice(&addr.ip().octets());
    k[4..6].copy_from_slice(&addr.port().to_be_bytes());
    k
}

/// The counters the program keeps (`enum counter` of the C source); the
/// first six are the sans-IO switch's `DraconisStats`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct XdpDraconisCounters {
    pub tasks_enqueued: u64,
    pub tasks_rejected: u64,
    pub assigned: u64,
    pub noops: u64,
    pub add_repairs: u64,
    pub retrieve_repairs: u64,
    /// Passes after a packet's first (the switch's recirculations).
    pub recirculations: u64,
    /// Frames handed to the kernel's stack unchanged: not a well-formed
    /// job_submission or task_request.
    pub passed: u64,
    pub drop_unknown_executor: u64,
    /// Task requests passed up because the frame could not grow to hold
    /// an assignment (no tailroom).
    pub no_tailroom: u64,
    /// error_packets the full `drac_errors` queue could not take.
    pub errors_lost: u64,
}

/// An error_packet (§4.3) the program queued for user space to send.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueuedError {
    pub client: SocketAddrV4,
    pub tasks: Vec<TaskInfo>,
}

/// A loaded (not necessarily attached) XDP Draconis queue.
pub struct XdpDraconis {
    object: SchedulerObject,
    capacity: u32,
    levels: u8,
}

impl XdpDraconis {
    crate::object::steered_program_methods!("draconis_steer");

    /// Loads the program for `config`'s queue (the verifier runs here): the
    /// queue map is sized `levels × capacity`, every pointer starts at 0.
    pub fn load(config: &DraconisConfig) -> Result<Self, XdpError> {
        let bytes = crate::object::object_bytes("draconis_queue", OBJECT)?;
        if config.constraint != Constraint::None {
            return Err(XdpError::SwapPolicy);
        }
        let levels = config.levels.max(1);
        if levels > MAX_LEVELS {
            return Err(XdpError::TooManyLevels { levels });
        }
        let entries = u32::from(levels)
            .checked_mul(config.capacity)
            .ok_or(XdpError::QueueTooLarge)?;
        let ebpf = EbpfLoader::new()
            .set_max_entries("drac_queue", entries)
            .load(&bytes)?;
        let mut xdp = XdpDraconis {
            object: SchedulerObject::load(ebpf, PROGRAM, Steering::QUEUE)?,
            capacity: config.capacity,
            levels,
        };
        let mut cfg = [0u8; 8];
        cfg[..4].copy_from_slice(&config.capacity.to_ne_bytes());
        cfg[4..].copy_from_slice(&u32::from(levels).to_ne_bytes());
        xdp.object.array::<[u8; 8]>("drac_config")?.set(0, cfg, 0)?;
        Ok(xdp)
    }

    pub fn capacity(&self) -> u32 {
        self.capacity
    }

    pub fn levels(&self) -> u8 {
        self.levels
    }

    /// The control plane installs `switch`'s queue: every level's pointers,
    /// repair flags and entries. `clients[i]` is the address of the
    /// switch's client `i`; `executors` the addresses task requests may
    /// come from (an executor's index is its place in the slice, as in the
    /// daemon's config).
    pub fn install(
        &mut self,
        switch: &Draconis,
        clients: &[SocketAddrV4],
        executors: &[SocketAddrV4],
    ) -> Result<(), XdpError> {
        let queue = switch.queue();
        if queue.capacity() != self.capacity || queue.levels() != self.levels {
            return Err(XdpError::QueueMismatch {
                capacity: queue.capacity(),
                levels: queue.levels(),
            });
        }
        if executors.len() > MAX_EXECUTORS {
            return Err(XdpError::TooManyExecutors {
                executors: executors.len(),
            });
        }
        for level in 0..self.levels {
            let (r, a, flags) = queue.pointers(level);
            let l = u32::from(level);
            self.object.array::<u32>("drac_retrieve")?.set(l, r, 0)?;
            self.object.array::<u32>("drac_add")?.set(l, a, 0)?;
            self.object
                .array::<[u8; REPAIR_BYTES]>("drac_repair")?
                .set(l, repair_bytes(flags), 0)?;
            let base = l * self.capacity;
            let mut cells = self.object.array::<[u8; SLOT_BYTES]>("drac_queue")?;
            for (i, slot) in queue.entries(level).iter().enumerate() {
                if slot.valid && slot.client as usize >= clients.len() {
                    return Err(XdpError::UnknownClient(slot.client));
                }
                let cell = XdpSlot::of(slot, clients).to_bytes();
                cells.set(base + i as u32, cell, 0)?;
            }
        }
        let map = self
            .object
            .ebpf
            .map_mut("drac_executors")
            .ok_or(XdpError::NoMap("drac_executors"))?;
        let mut table: HashMap<&mut MapData, [u8; 8], u32> = HashMap::try_from(map)?;
        for (id, &addr) in executors.iter().enumerate() {
            table.insert(executor_key(addr), id as u32, 0)?;
        }
        Ok(())
    }

    /// `(retrieve_ptr, add_ptr, repair flags)` of `level`, as
    /// `CircularQueue::pointers` gives them.
    pub fn pointers(&mut self, level: u8) -> Result<(u32, u32, RepairFlags), XdpError> {
        let l = u32::from(level);
        let r = self.object.array::<u32>("drac_retrieve")?.get(&l, 0)?;
        let a = self.object.array::<u32>("drac_add")?.get(&l, 0)?;
        let flags = self
            .object
            .array::<[u8; REPAIR_BYTES]>("drac_repair")?
            .get(&l, 0)?;
        Ok((r, a, repair_of(&flags)))
    }

    /// Every cell of `level`'s entries, in slot order (as
    /// `CircularQueue::entries`).
    pub fn entries(&mut self, level: u8) -> Result<Vec<XdpSlot>, XdpError> {
        let base = u32::from(level) * self.capacity;
        let end = base + self.capacity;
        let cells = self.object.array::<[u8; SLOT_BYTES]>("drac_queue")?;
        (base..end)
            .map(|i| Ok(XdpSlot::from_bytes(&cells.get(&i, 0)?)))
            .collect()
    }

    /// Control plane: a repair packet that was in flight when the state was
    /// installed lands (§4.5): the pointer is written, its flag cleared.
    pub fn land_repair(&mut self, repair: netsched_core::pull::Repair) -> Result<(), XdpError> {
        use netsched_core::pull::Repair;
        let (level, value, map) = match repair {
            Repair::Add { level, value } => (level, value, "drac_add"),
            Repair::Retrieve { level, value } => (level, value, "drac_retrieve"),
        };
        let l = u32::from(level);
        self.object.array::<u32>(map)?.set(l, value, 0)?;
        let (_, _, mut flags) = self.pointers(level)?;
        match repair {
            Repair::Add { .. } => flags.add = None,
            Repair::Retrieve { .. } => flags.retrieve = None,
        }
        self.object
            .array::<[u8; REPAIR_BYTES]>("drac_repair")?
            .set(l, repair_bytes(flags), 0)?;
        Ok(())
    }

    /// Pops the error_packets the program queued, oldest first.
    pub fn drain_errors(&mut self) -> Result<Vec<QueuedError>, XdpError> {
        let map = self
            .object
            .ebpf
            .map_mut("drac_errors")
            .ok_or(XdpError::NoMap("drac_errors"))?;
        let mut queue: Queue<&mut MapData, [u8; ERROR_BYTES]> = Queue::try_from(map)?;
        let mut errors = Vec::new();
        // An empty queue answers the pop with ENOENT.
        while let Ok(b) = queue.pop(0) {
            let n = usize::from(b[6]).min(8);
            errors.push(QueuedError {
                client: SocketAddrV4::new(
                    Ipv4Addr::new(b[0], b[1], b[2], b[3]),
                    u16::from_be_bytes([b[4], b[5]]),
                ),
                tasks: (0..n)
                    .map(|i| task_of(&b[8 + i * TASK_BYTES..8 + (i + 1) * TASK_BYTES]))
                    .collect(),
            });
        }
        Ok(errors)
    }

    pub fn counters(&mut self) -> Result<XdpDraconisCounters, XdpError> {
        let counters = self.object.array::<u64>("drac_counters")?;
        let c = |i: u32| counters.get(&i, 0);
        Ok(XdpDraconisCounters {
            tasks_enqueued: c(0)?,
            tasks_rejected: c(1)?,
            assigned: c(2)?,
            noops: c(3)?,
            add_repairs: c(4)?,
            retrieve_repairs: c(5)?,
            recirculations: c(6)?,
            passed: c(7)?,
            drop_unknown_executor: c(8)?,
            no_tailroom: c(9)?,
            errors_lost: c(10)?,
        })
    }
}
