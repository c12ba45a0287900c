//! The Horus spine (NSDI'24 §3.3, §3.4, §A.3, §A.6) as an XDP program: the
//! loader of `bpf/horus_spine.bpf.c`, installed from a sans-IO
//! [`HorusSpine`] as [`crate::XdpLeaf`] is from a leaf, and checked against
//! it decision for decision (tests/spine_differential/). docs/xdp.md, "The
//! spine", has the maps.

use std::net::SocketAddrV4;

use aya::Ebpf;
use netsched_core::horus::{HorusSpine, RemoveLock, SpineIdlePick};
use netsched_core::Nanos;

use crate::daemon::Steering;
use crate::object::{ModelMaps, SchedulerObject};
use crate::{WorkerAddr, XdpError};

static OBJECT: &[u8] = aya::include_bytes_aligned!(concat!(env!("OUT_DIR"), "/horus_spine.bpf.o"));

const PROGRAM: &str = "horus_spine";

/// Racks one XDP spine can hold (`MAX_RACKS` in the C source).
pub const MAX_RACKS: u32 = 64;

/// Where the spine sends a rack's tasks: its leaf's MAC, IPv4 address and
/// UDP port (the same layout as a leaf's worker address).
pub type RackAddr = WorkerAddr;

/// The counters the spine program keeps (`enum counter` of the C source).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SpineCounters {
    pub dispatch_idle: u64,
    pub dispatch_sampled: u64,
    /// Second passes: power-of-2 resubmissions and idleRemove's second pass.
    pub resubmissions: u64,
    pub drop_no_nodes: u64,
    pub drop_unknown_node: u64,
    /// idleAdd of a listed rack, idleRemove of an unlisted one (§A.3 re-sends).
    pub stale_idle_updates: u64,
    pub drop_lock_held: u64,
    pub drop_overflow: u64,
    pub idle_adds: u64,
    pub idle_removes: u64,
    pub load_updates: u64,
    /// Handed to the stack: replies, malformed frames.
    pub passed: u64,
    /// Notices whose source is not the rack's leaf address.
    pub drop_unregistered: u64,
    /// Sealing on: notices without a seal.
    pub drop_unsealed: u64,
    /// Sealing on: notices whose tag is wrong (another key, altered).
    pub drop_bad_seal: u64,
    /// Sealing on: notices whose sequence number is not above the last
    /// one taken from their rack.
    pub drop_replayed: u64,
    /// Soft state: racks forgotten for not refreshing within soft_state_ns.
    pub expired: u64,
}

/// Map names of the spine's arrays: the leaf's names (`.` becomes `_`).
fn map_name(array: &str) -> Option<&'static str> {
    match array {
        "idle.member" => Some("idle_member"),
        other => crate::map_name(other).filter(|m| !m.starts_with("leaf_")),
    }
}

fn cell_bytes(map: &str) -> usize {
    match map {
        "idle_lock" | "idle_member" => 1,
        "pow2_load1" | "pow2_load2" => 8,
        _ => 4,
    }
}

/// Where the spine program keeps its switch model.
const SPINE_MAPS: ModelMaps = ModelMaps {
    map_name,
    cell_bytes,
    rng: "spine_rng",
    addrs: "rack_addr",
};

/// Bytes of `struct spine_config`.
const SPINE_CONFIG_BYTES: usize = 32;

/// Bytes of `struct notice_key`.
pub(crate) const NOTICE_KEY_BYTES: usize = 24;

/// A loaded (not necessarily attached) XDP Horus spine.
pub struct XdpSpine {
    object: SchedulerObject,
    mac: [u8; 6],
    source: Option<SocketAddrV4>,
    racks: u32,
    soft_state_ns: u64,
}

/// `struct notice_key` (bpf/seal.h) holding `key`, sealing on.
pub(crate) fn notice_key_bytes(key: [u8; 16]) -> [u8; NOTICE_KEY_BYTES] {
    let mut b = [0u8; NOTICE_KEY_BYTES];
    // SipHash's k0 and k1: the key's halves as little-endian words,
    // which the program reads in its own (little-endian) order.
    let k0 = u64::from_le_bytes(key[..8].try_into().expect("8 bytes"));
    let k1 = u64::from_le_bytes(key[8..].try_into().expect("8 bytes"));
    b[0..8].copy_from_slice(&k0.to_ne_bytes());
    b[8..16].copy_from_slice(&k1.to_ne_bytes());
    b[16..20].copy_from_slice(&1u32.to_ne_bytes());
    b
}

impl XdpSpine {
    crate::object::steered_program_methods!("spine_steer");
    crate::conn::conn_table_methods!();
    crate::every_cpu::every_cpu_methods!();

    /// Loads the program (the verifier runs here) with zeroed maps.
    pub fn load() -> Result<Self, XdpError> {
        let bytes = crate::object::object_bytes("horus_spine", OBJECT)?;
        let object = SchedulerObject::load(Ebpf::load(&bytes)?, PROGRAM, Steering::SPINE)?;
        Ok(XdpSpine {
            object,
            mac: [0; 6],
            source: None,
            racks: 0,
            soft_state_ns: 0,
        })
    }

    /// The control plane installs `spine`'s state: every register array,
    /// its connection table (§A.4), its random stream, and each rack's
    /// leaf address (`racks[r]`). Only
    /// the paper's mechanism runs in XDP: idle tokens, a random idle pick
    /// and the lock-free remove (horus-sim's) are refused.
    pub fn install(
        &mut self,
        spine: &HorusSpine,
        spine_mac: [u8; 6],
        racks: &[RackAddr],
    ) -> Result<(), XdpError> {
        self.install_registers(spine, spine_mac, racks)?;
        self.object.install_conn(spine.conn_table())
    }

    /// [`Self::install`] without the connection table.
    fn install_registers(
        &mut self,
        spine: &HorusSpine,
        spine_mac: [u8; 6],
        racks: &[RackAddr],
    ) -> Result<(), XdpError> {
        let options = spine.options();
        if options.idle_tokens
            || options.spine_idle_pick != SpineIdlePick::Last
            || options.remove_lock != RemoveLock::On
        {
            return Err(XdpError::SpineOptions);
        }
        let linked = spine.idle_nodes().capacity() as u32;
        if linked > MAX_RACKS || racks.len() > MAX_RACKS as usize {
            return Err(XdpError::TooManyRacks {
                racks: linked.max(racks.len() as u32),
            });
        }
        self.mac = spine_mac;
        self.racks = linked;
        self.soft_state_ns = options.soft_state_ns;
        self.write_config()?;
        self.object.install_model(
            &SPINE_MAPS,
            MAX_RACKS,
            &spine.registers(),
            spine.rng_state(),
            racks.iter().map(|a| a.to_bytes()),
        )
    }

    /// Installs `spine`'s state again (a rack added or removed), keeping the
    /// program's random stream and its connection table, less the entries
    /// of racks `spine` no longer has (`HorusSpine::control_remove_rack`).
    pub fn reinstall(
        &mut self,
        spine: &HorusSpine,
        spine_mac: [u8; 6],
        racks: &[RackAddr],
    ) -> Result<(), XdpError> {
        let rng = self.rng_state()?;
        self.install_registers(spine, spine_mac, racks)?;
        self.object
            .conn_forget(|rack| spine.busy_nodes().contains(rack))?;
        self.object.array::<[u64; 4]>("spine_rng")?.set(0, rng, 0)?;
        Ok(())
    }

    /// Forwarded tasks leave from `source` and the program records each
    /// application's source in `reply_routes`, as the leaf does.
    pub fn set_source(&mut self, source: SocketAddrV4) -> Result<(), XdpError> {
        self.source = Some(source);
        self.write_config()
    }

    /// Where application `app_id`'s tasks last came from.
    pub fn reply_route(&mut self, app_id: u32) -> Result<Option<SocketAddrV4>, XdpError> {
        self.object.reply_route(app_id)
    }

    /// Sealed state messages (`bpf/seal.h`): with `Some(key)` (the 16-byte
    /// notice key of `netsched_proto::seal::NoticeKey`) a notice is taken
    /// only sealed under it, with a sequence number above the last one
    /// taken from its rack; `None` ignores seals. The sequence numbers
    /// already taken are kept.
    pub fn set_notice_key(&mut self, key: Option<[u8; 16]>) -> Result<(), XdpError> {
        let b = key.map(notice_key_bytes).unwrap_or_default();
        self.object
            .array::<[u8; NOTICE_KEY_BYTES]>("notice_key")?
            .set(0, b, 0)?;
        Ok(())
    }

    /// Soft state: the control plane's clock (ns, any monotonic origin).
    /// The program stamps each rack's notices with it, and the first packet
    /// after it changed forgets racks not heard from for the spine's
    /// `soft_state_ns` ([`HorusSpine::control_expire`] at this `now`). The
    /// daemon calls it from its periodic tick.
    pub fn set_clock(&mut self, now: Nanos) -> Result<(), XdpError> {
        self.object
            .array::<u64>("spine_clock")?
            .set(0, now.get(), 0)?;
        Ok(())
    }

    /// Fixes the connection table's clock at `now` (the differential
    /// tests; `None`, the default: the kernel's monotonic clock). The spine
    /// has no other clock on its data path.
    pub fn set_conn_clock(&mut self, now: Option<Nanos>) -> Result<(), XdpError> {
        self.object.set_conn_clock(now.map(Nanos::get))
    }

    fn write_config(&mut self) -> Result<(), XdpError> {
        let mut b = [0u8; SPINE_CONFIG_BYTES];
        b[0..6].copy_from_slice(&self.mac);
        if let Some(source) = self.source {
            b[8..12].copy_from_slice(&source.ip().octets());
            b[12..14].copy_from_slice(&source.port().to_be_bytes());
        }
        b[16..20].copy_from_slice(&self.racks.to_ne_bytes());
        b[24..32].copy_from_slice(&self.soft_state_ns.to_ne_bytes());
        self.object
            .array::<[u8; SPINE_CONFIG_BYTES]>("spine_config")?
            .set(0, b, 0)?;
        Ok(())
    }

    /// The first `len` cells of the map holding the switch model's `array`.
    pub fn read_array(&mut self, array: &'static str, len: usize) -> Result<Vec<u64>, XdpError> {
        self.object.read_model_array(&SPINE_MAPS, array, len)
    }

    pub fn rng_state(&mut self) -> Result<[u64; 4], XdpError> {
        self.object.model_rng(&SPINE_MAPS)
    }

    pub fn counters(&mut self) -> Result<SpineCounters, XdpError> {
        let counters = self.object.array::<u64>("counters")?;
        let c = |i: u32| counters.get(&i, 0);
        Ok(SpineCounters {
            dispatch_idle: c(0)?,
            dispatch_sampled: c(1)?,
            resubmissions: c(2)?,
            drop_no_nodes: c(3)?,
            drop_unknown_node: c(4)?,
            stale_idle_updates: c(5)?,
            drop_lock_held: c(6)?,
            drop_overflow: c(7)?,
            idle_adds: c(8)?,
            idle_removes: c(9)?,
            load_updates: c(10)?,
            passed: c(11)?,
            drop_unregistered: c(12)?,
            drop_unsealed: c(13)?,
            drop_bad_seal: c(14)?,
            drop_replayed: c(15)?,
            expired: c(16)?,
        })
    }
}
