//! The topology the controller persists (its state file): pools, spines,
//! racks and workers with their cluster-wide ids.

use std::io::Write;
use std::net::SocketAddr;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::config::PoolSpec;
use crate::error::Error;

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub(super) struct WorkerEntry {
    pub(super) id: u64,
    pub(super) addr: SocketAddr,
    pub(super) removed: bool,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub(super) struct RackEntry {
    pub(super) id: u64,
    pub(super) leaf: SocketAddr,
    pub(super) spine: usize,
    pub(super) removed: bool,
    pub(super) workers: Vec<WorkerEntry>,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub(super) struct PoolEntry {
    pub(super) id: u16,
    pub(super) spines: Vec<SocketAddr>,
    pub(super) racks: Vec<RackEntry>,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub(super) struct Topology {
    pub(super) next_id: u64,
    pub(super) pools: Vec<PoolEntry>,
}

impl Topology {
    pub(super) fn from_spec(pools: &[PoolSpec]) -> Self {
        let mut t = Topology {
            next_id: 1,
            pools: Vec::new(),
        };
        for p in pools {
            let mut racks = Vec::new();
            for (r, rs) in p.racks.iter().enumerate() {
                let workers = rs
                    .workers
                    .iter()
                    .map(|a| WorkerEntry {
                        id: t.take_id(),
                        addr: *a,
                        removed: false,
                    })
                    .collect();
                racks.push(RackEntry {
                    id: t.take_id(),
                    leaf: rs.leaf,
                    spine: rs.spine.unwrap_or(r % p.spines.len()),
                    removed: false,
                    workers,
                });
            }
            t.pools.push(PoolEntry {
                id: p.id,
                spines: p.spines.clone(),
                racks,
            });
        }
        t
    }

    pub(super) fn take_id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id - 1
    }

    pub(super) fn pool_mut(&mut self, id: u16) -> Option<&mut PoolEntry> {
        self.pools.iter_mut().find(|p| p.id == id)
    }

    /// Every daemon address the controller expects reports from.
    pub(super) fn daemons(&self) -> Vec<SocketAddr> {
        let mut v: Vec<SocketAddr> = self
            .pools
            .iter()
            .flat_map(|p| {
                p.spines
                    .iter()
                    .copied()
                    .chain(p.racks.iter().map(|r| r.leaf))
            })
            .collect();
        v.sort();
        v.dedup();
        v
    }

    /// Writes the topology to the state file durably: a temporary file,
    /// fsynced, renamed over the old one, and the directory fsynced so the
    /// rename itself survives a crash. Only then is a change acknowledged.
    pub(super) fn save(&self, p: &Path) -> Result<(), Error> {
        let tmp = p.with_extension("tmp");
        let body = serde_json::to_string_pretty(self).map_err(|source| Error::Json {
            what: p.display().to_string(),
            source,
        })?;
        let e = |path: &Path| {
            let path = path.display().to_string();
            move |x: std::io::Error| Error::io(path, x)
        };
        let mut f = std::fs::File::create(&tmp).map_err(e(&tmp))?;
        f.write_all(body.as_bytes()).map_err(e(&tmp))?;
        f.sync_all().map_err(e(&tmp))?;
        drop(f);
        std::fs::rename(&tmp, p).map_err(e(p))?;
        let dir = match p.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        std::fs::File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(e(dir))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::config::RackSpec;

    #[test]
    fn rack_ids_and_links_are_assigned_round_robin() {
        let a = |p: u16| SocketAddr::from(([127, 0, 0, 1], p));
        let t = Topology::from_spec(&[PoolSpec {
            id: 1,
            spines: vec![a(1), a(2)],
            racks: (0..3)
                .map(|r| RackSpec {
                    leaf: a(10 + r),
                    workers: vec![a(100 + r), a(200 + r)],
                    spine: None,
                })
                .collect(),
        }]);
        let spines: Vec<usize> = t.pools[0].racks.iter().map(|r| r.spine).collect();
        assert_eq!(spines, vec![0, 1, 0]);
        let mut ids: Vec<u64> = t.pools[0]
            .racks
            .iter()
            .flat_map(|r| std::iter::once(r.id).chain(r.workers.iter().map(|w| w.id)))
            .collect();
        let n = ids.len();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), n, "ids are unique");
    }
}
