//! Constraint-based policies checked on a task retrieved for an executor
//! (Draconis §5): resource bitmaps (§5.2) and data locality with a skip
//! counter and two start limits (§5.3). A task that does not fit is swapped
//! back into the queue (§5.1).

use super::queue::Slot;
use super::{ExecInfo, TaskInfo};

/// Data-local nodes a task can name in its TPROPS (§5.3), 16 bits each.
pub const MAX_LOCAL_NODES: usize = 4;
/// Unused entry of the locality list.
pub const NO_NODE: u16 = u16::MAX;

/// Which constraint a retrieved task must satisfy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Constraint {
    /// cFCFS (§4.8): the head task goes to whoever asks.
    None,
    /// §5.2: `task.props` is the bitmap of required resources; the executor
    /// must hold all of them (`EXEC_RSRC`). A hard constraint.
    Resource,
    /// §5.3: `task.props` holds up to four 16-bit data-local node ids
    /// ([`TaskInfo::with_local_nodes`]). A soft constraint relaxed by the
    /// task's skip counter.
    Locality {
        rack_start_limit: u16,
        global_start_limit: u16,
        /// Racks are `node / nodes_per_rack`: an arithmetic shift or a small
        /// match table on a switch, not a register (a register lookup per
        /// data-local node would need several accesses to one array).
        nodes_per_rack: u32,
    },
}

/// Result of checking one task against one executor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fit {
    Run,
    Skip,
}

impl TaskInfo {
    /// Packs up to [`MAX_LOCAL_NODES`] data-local node ids into `props`
    /// (§5.3: "TPROPS ... hold the node ID of the nodes storing the input
    /// data"). Extra ids are ignored.
    pub fn with_local_nodes(mut self, nodes: &[u16]) -> Self {
        let mut props = u64::MAX;
        for (i, &n) in nodes.iter().take(MAX_LOCAL_NODES).enumerate() {
            props &= !(0xFFFFu64 << (16 * i));
            props |= (n as u64) << (16 * i);
        }
        self.props = props;
        self
    }

    /// The data-local node ids packed by [`TaskInfo::with_local_nodes`].
    pub fn local_nodes(&self) -> impl Iterator<Item = u16> + '_ {
        (0..MAX_LOCAL_NODES)
            .map(|i| ((self.props >> (16 * i)) & 0xFFFF) as u16)
            .filter(|&n| n != NO_NODE)
    }
}

impl Constraint {
    /// Checks `slot` for `exec`; for locality also bumps the skip counter the
    /// slot carries back into the queue when skipped (§5.3).
    #[inline]
    pub fn check(&self, exec: &ExecInfo, slot: &mut Slot) -> Fit {
        match *self {
            Constraint::None => Fit::Run,
            Constraint::Resource => {
                if slot.task.props & !exec.resources == 0 {
                    Fit::Run
                } else {
                    Fit::Skip
                }
            }
            Constraint::Locality {
                rack_start_limit,
                global_start_limit,
                nodes_per_rack,
            } => {
                let task = slot.task;
                if task.local_nodes().next().is_none()
                    || task.local_nodes().any(|n| n as u32 == exec.node)
                {
                    return Fit::Run;
                }
                // §5.3: the counter counts examinations by non-local executors.
                slot.skips = slot.skips.saturating_add(1);
                if slot.skips > global_start_limit {
                    return Fit::Run;
                }
                let per = nodes_per_rack.max(1);
                let rack = exec.node / per;
                if slot.skips > rack_start_limit
                    && task.local_nodes().any(|n| n as u32 / per == rack)
                {
                    Fit::Run
                } else {
                    Fit::Skip
                }
            }
        }
    }
}
