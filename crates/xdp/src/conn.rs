//! Horus's connection table (NSDI'24 §A.4) in the leaf and spine programs
//! (`bpf/conn.h`): installing a sans-IO [`AffinityTable`] into the
//! `conn_table` map, reading it back cell for cell, forgetting the entries
//! of nodes the control plane removed, a leaf's upstream spines, and the
//! table's counters.

use std::net::SocketAddr;

use aya::maps::{HashMap, MapData};
use netsched_core::affinity::{AffinityTable, Entry};
use netsched_core::NodeId;

use crate::object::SchedulerObject;
use crate::XdpError;

/// Stages the program's table can have (`CONN_MAX_STAGES`, the sans-IO
/// table's limit).
pub const CONN_MAX_STAGES: u32 = 8;
/// Cells of all stages together (`CONN_CELLS`).
pub const CONN_CELLS: u32 = 65_536;
/// Upstream spines a leaf program tells apart (`CONN_MAX_UPSTREAMS`).
pub const MAX_UPSTREAMS: usize = 256;

/// Bytes of `struct conn_entry`.
const ENTRY_BYTES: usize = 32;
/// Bytes of `struct conn_config`.
const CONFIG_BYTES: usize = 32;

/// What the connection table did (`enum conn_counter` of `bpf/conn.h`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ConnCounters {
    /// Continuations sent where their first packet went.
    pub followed: u64,
    /// Continuations without an entry, dropped (`DropReason::NoAffinity`).
    pub drop_no_affinity: u64,
    /// First packets no stage had room for ([`AffinityTable`]'s `overflows`).
    pub overflows: u64,
}

/// `struct conn_entry`: key, insertion time, node, aux, used.
fn entry_bytes(e: &Entry) -> [u8; ENTRY_BYTES] {
    let mut b = [0u8; ENTRY_BYTES];
    b[0..8].copy_from_slice(&e.key.to_ne_bytes());
    b[8..16].copy_from_slice(&e.inserted_at.to_ne_bytes());
    b[16..20].copy_from_slice(&e.node.to_ne_bytes());
    b[20..24].copy_from_slice(&e.aux.to_ne_bytes());
    b[24] = u8::from(e.used);
    b
}

fn entry_of(b: &[u8; ENTRY_BYTES]) -> Entry {
    let u64_at = |i: usize| u64::from_ne_bytes(b[i..i + 8].try_into().expect("8 bytes"));
    let u32_at = |i: usize| u32::from_ne_bytes(b[i..i + 4].try_into().expect("4 bytes"));
    Entry {
        key: u64_at(0),
        inserted_at: u64_at(8),
        node: u32_at(16),
        aux: u32_at(20),
        used: b[24] != 0,
    }
}

impl SchedulerObject {
    fn conn_config(&mut self) -> Result<[u8; CONFIG_BYTES], XdpError> {
        Ok(self
            .array::<[u8; CONFIG_BYTES]>("conn_config")?
            .get(&0, 0)?)
    }

    /// Cells the installed table has (stages × slots).
    fn conn_cells(&mut self) -> Result<u32, XdpError> {
        let c = self.conn_config()?;
        let stages = u32::from_ne_bytes(c[0..4].try_into().expect("4 bytes"));
        let slots = u32::from_ne_bytes(c[4..8].try_into().expect("4 bytes"));
        Ok(stages * slots)
    }

    /// Installs `table`: its size and timeout, and every cell. The table's
    /// clock setting is kept.
    pub(crate) fn install_conn(&mut self, table: &AffinityTable) -> Result<(), XdpError> {
        let (stages, slots) = (table.stage_count(), table.slots_per_stage());
        if stages > CONN_MAX_STAGES || u64::from(stages) * u64::from(slots) > u64::from(CONN_CELLS)
        {
            return Err(XdpError::ConnTable { stages, slots });
        }
        let mut c = self.conn_config()?;
        c[0..4].copy_from_slice(&stages.to_ne_bytes());
        c[4..8].copy_from_slice(&slots.to_ne_bytes());
        c[8..16].copy_from_slice(&table.timeout_ns().to_ne_bytes());
        self.array::<[u8; CONFIG_BYTES]>("conn_config")?
            .set(0, c, 0)?;
        let mut cells = self.array::<[u8; ENTRY_BYTES]>("conn_table")?;
        for (i, e) in table.cells().enumerate() {
            cells.set(i as u32, entry_bytes(e), 0)?;
        }
        Ok(())
    }

    /// Every cell of the installed table, stage 0 first (the order of
    /// [`AffinityTable::cells`]).
    pub(crate) fn conn_entries(&mut self) -> Result<Vec<Entry>, XdpError> {
        let n = self.conn_cells()?;
        let cells = self.array::<[u8; ENTRY_BYTES]>("conn_table")?;
        (0..n).map(|i| Ok(entry_of(&cells.get(&i, 0)?))).collect()
    }

    /// The control plane forgets the entries of every node `live` says is
    /// gone ([`AffinityTable::control_forget_node`]: the cell is cleared);
    /// the others stay, so tasks in progress keep their nodes.
    pub(crate) fn conn_forget(&mut self, live: impl Fn(NodeId) -> bool) -> Result<(), XdpError> {
        let n = self.conn_cells()?;
        let mut cells = self.array::<[u8; ENTRY_BYTES]>("conn_table")?;
        for i in 0..n {
            let e = entry_of(&cells.get(&i, 0)?);
            if e.used && !live(e.node) {
                cells.set(i, [0; ENTRY_BYTES], 0)?;
            }
        }
        Ok(())
    }

    /// Fixes the table's clock at `now` (`None`: the kernel's monotonic
    /// clock), for a program without a clock of its own (the spine).
    pub(crate) fn set_conn_clock(&mut self, now: Option<u64>) -> Result<(), XdpError> {
        let mut c = self.conn_config()?;
        c[16..20].copy_from_slice(&u32::from(now.is_some()).to_ne_bytes());
        c[24..32].copy_from_slice(&now.unwrap_or(0).to_ne_bytes());
        self.array::<[u8; CONFIG_BYTES]>("conn_config")?
            .set(0, c, 0)?;
        Ok(())
    }

    /// A leaf's upstream spines, in the order of its config's `upstream`:
    /// a first packet from the i-th (IPv4 address and port) records i as
    /// its spine, from anywhere else 0 (the socket daemon's rule). A
    /// repeated address keeps its first position.
    pub(crate) fn set_conn_upstreams(&mut self, upstream: &[SocketAddr]) -> Result<(), XdpError> {
        if upstream.len() > MAX_UPSTREAMS {
            return Err(XdpError::TooManyUpstreams {
                upstreams: upstream.len(),
            });
        }
        let map = self
            .ebpf
            .map_mut("conn_upstream")
            .ok_or(XdpError::NoMap("conn_upstream"))?;
        let mut index: HashMap<&mut MapData, [u8; 8], u32> = HashMap::try_from(map)?;
        let old: Vec<[u8; 8]> = index.keys().filter_map(Result::ok).collect();
        for k in old {
            index.remove(&k)?;
        }
        for (i, addr) in upstream.iter().enumerate().rev() {
            let SocketAddr::V4(a) = addr else { continue };
            // `struct conn_upstream_key`: address and port in network order.
            let mut k = [0u8; 8];
            k[0..4].copy_from_slice(&a.ip().octets());
            k[4..6].copy_from_slice(&a.port().to_be_bytes());
            // Written last to first: a repeated address ends at its first.
            index.insert(k, i as u32, 0)?;
        }
        Ok(())
    }

    pub(crate) fn conn_counters(&mut self) -> Result<ConnCounters, XdpError> {
        let counters = self.array::<u64>("conn_counters")?;
        let c = |i: u32| counters.get(&i, 0);
        Ok(ConnCounters {
            followed: c(0)?,
            drop_no_affinity: c(1)?,
            overflows: c(2)?,
        })
    }
}

/// The connection-table methods the leaf and the spine share, delegating
/// to their [`SchedulerObject`], written once.
macro_rules! conn_table_methods {
    () => {
        /// Every cell of the program's connection table (§A.4), stage 0
        /// first: [`AffinityTable::cells`](netsched_core::affinity::AffinityTable::cells)
        /// of the sans-IO plane, for the differential tests.
        pub fn conn_entries(
            &mut self,
        ) -> Result<Vec<netsched_core::affinity::Entry>, $crate::XdpError> {
            self.object.conn_entries()
        }

        /// The connection table's counters.
        pub fn conn_counters(&mut self) -> Result<$crate::ConnCounters, $crate::XdpError> {
            self.object.conn_counters()
        }
    };
}
pub(crate) use conn_table_methods;
