//! Task kinds a worker runs, and the application payload that names them.
//!
//! The wire format (crates/proto) carries a task's `class`, a synthetic
//! `service_time_ns` and an opaque payload. netsched-node gives the payload a
//! meaning (docs/protocol.md, "Task payloads"):
//!
//! | payload | kind | work |
//! |---|---|---|
//! | empty | synthetic | run for `service_time_ns` (sleep + spin) |
//! | `01` key:u32 count:u16 | RocksDB GET | read `count` objects, keys `key..key+count` |
//! | `02` key:u32 count:u16 | RocksDB SCAN | iterate `count` objects from `key` |
//!
//! Integers are big-endian like the rest of the wire. GET of 60 objects and
//! SCAN of 5,000 objects are the requests of RackSched §4.4 and Horus §4.1.
//! The TPC-C classes (Horus §4.1) are synthetic tasks: their class is the
//! transaction type and their service time the class's, as the simulator's
//! `tpcc` preset draws them (see [`TPCC_CLASSES`]).

use std::path::{Path, PathBuf};
use std::time::Instant;

/// Payload tag of a RocksDB GET task.
pub const TAG_GET: u8 = 1;
/// Payload tag of a RocksDB SCAN task.
pub const TAG_SCAN: u8 = 2;
/// Length of a RocksDB task payload: tag, start key, count.
pub const ROCKS_PAYLOAD_LEN: usize = 1 + 4 + 2;
/// Objects a GET reads (RackSched §4.4: "GET which gets 60 objects").
pub const GET_OBJECTS: u16 = 60;
/// Objects a SCAN reads (RackSched §4.4: "SCAN which scans 5000 objects").
pub const SCAN_OBJECTS: u16 = 5000;

/// The five TPC-C transaction classes of Horus §4.1 with their service times
/// (µs) and shares; class index = position (the simulator's `tpcc` preset).
pub const TPCC_CLASSES: [(&str, f64, f64); 5] = [
    ("payment", 21.6, 0.44),
    ("order_status", 22.68, 0.04),
    ("new_order", 71.28, 0.44),
    ("delivery", 332.64, 0.04),
    ("stock_level", 378.0, 0.04),
];

/// What a task packet asks the worker to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TaskKind {
    /// Busy for the packet's service time.
    Synthetic,
    /// Read `count` objects by key, starting at `key`.
    Get { key: u32, count: u16 },
    /// Iterate `count` objects in key order, starting at `key`.
    Scan { key: u32, count: u16 },
}

/// Why a payload names no task kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PayloadError {
    UnknownTag(u8),
    BadLength(usize),
}

impl PayloadError {
    /// The failed reply's reason.
    pub fn reason(self) -> &'static str {
        match self {
            PayloadError::UnknownTag(_) => "unknown_task_kind",
            PayloadError::BadLength(_) => "bad_task_payload",
        }
    }
}

impl TaskKind {
    /// Decodes a task payload (table in the module doc).
    pub fn decode(payload: &[u8]) -> Result<TaskKind, PayloadError> {
        let Some(&tag) = payload.first() else {
            return Ok(TaskKind::Synthetic);
        };
        if tag != TAG_GET && tag != TAG_SCAN {
            return Err(PayloadError::UnknownTag(tag));
        }
        if payload.len() != ROCKS_PAYLOAD_LEN {
            return Err(PayloadError::BadLength(payload.len()));
        }
        let key = u32::from_be_bytes([payload[1], payload[2], payload[3], payload[4]]);
        let count = u16::from_be_bytes([payload[5], payload[6]]);
        Ok(if tag == TAG_GET {
            TaskKind::Get { key, count }
        } else {
            TaskKind::Scan { key, count }
        })
    }

    /// Writes the payload into `buf`; returns its length (0 for synthetic).
    pub fn encode(self, buf: &mut [u8; ROCKS_PAYLOAD_LEN]) -> usize {
        let (tag, key, count) = match self {
            TaskKind::Synthetic => return 0,
            TaskKind::Get { key, count } => (TAG_GET, key, count),
            TaskKind::Scan { key, count } => (TAG_SCAN, key, count),
        };
        buf[0] = tag;
        buf[1..5].copy_from_slice(&key.to_be_bytes());
        buf[5..7].copy_from_slice(&count.to_be_bytes());
        ROCKS_PAYLOAD_LEN
    }

    /// A real (non-synthetic) task: its cost is the work, not a carried time.
    pub fn is_real(self) -> bool {
        !matches!(self, TaskKind::Synthetic)
    }
}

/// Key bytes of object `i`: fixed width, so key order is numeric order and a
/// SCAN from `i` visits `i, i+1, …`.
pub fn key_bytes(i: u32) -> [u8; 10] {
    let mut k = *b"k000000000";
    let mut v = i;
    for b in k[1..].iter_mut().rev() {
        *b = b'0' + (v % 10) as u8;
        v /= 10;
    }
    k
}

/// How a worker process populates its RocksDB.
#[derive(Clone, Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RocksConfig {
    /// Objects written at start, keys `0..keys`.
    #[serde(default = "default_keys")]
    pub keys: u32,
    /// Bytes per object value.
    #[serde(default = "default_value_bytes")]
    pub value_bytes: usize,
    /// Database directory; default: a fresh directory under /dev/shm (an
    /// in-memory file system, as RackSched §4 configures RocksDB) or the
    /// system temp dir, removed when the worker stops.
    #[serde(default)]
    pub path: Option<PathBuf>,
}

fn default_keys() -> u32 {
    100_000
}
fn default_value_bytes() -> usize {
    64
}

impl Default for RocksConfig {
    fn default() -> Self {
        RocksConfig {
            keys: default_keys(),
            value_bytes: default_value_bytes(),
            path: None,
        }
    }
}

/// An embedded RocksDB shared by the executors of one worker process.
pub struct RocksStore {
    db: rocksdb::DB,
    dir: PathBuf,
    owned: bool,
    keys: u32,
}

impl RocksStore {
    /// Opens (creating) the database and writes objects `0..keys`.
    pub fn open(cfg: &RocksConfig) -> Result<RocksStore, String> {
        if cfg.keys == 0 {
            return Err("rocksdb.keys must be at least 1".into());
        }
        let (dir, owned) = match &cfg.path {
            Some(p) => (p.clone(), false),
            None => {
                let base = Path::new("/dev/shm");
                let base = if base.is_dir() {
                    base.to_path_buf()
                } else {
                    std::env::temp_dir()
                };
                let unique = format!(
                    "netsched-rocks-{}-{}",
                    std::process::id(),
                    NEXT_DB.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
                );
                (base.join(unique), true)
            }
        };
        if owned {
            let _ = std::fs::remove_dir_all(&dir);
            if let Some(base) = dir.parent() {
                remove_orphans(base);
            }
        }
        let mut o = rocksdb::Options::default();
        o.create_if_missing(true);
        let db = rocksdb::DB::open(&o, &dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let value = vec![0x5a; cfg.value_bytes];
        let mut wo = rocksdb::WriteOptions::default();
        // Population is a start-up cost, not part of any measurement.
        wo.disable_wal(true);
        let mut batch = rocksdb::WriteBatch::default();
        for i in 0..cfg.keys {
            batch.put(key_bytes(i), &value);
            if batch.len() >= 10_000 {
                db.write_opt(std::mem::take(&mut batch), &wo)
                    .map_err(|e| e.to_string())?;
            }
        }
        db.write_opt(batch, &wo).map_err(|e| e.to_string())?;
        Ok(RocksStore {
            db,
            dir,
            owned,
            keys: cfg.keys,
        })
    }

    pub fn keys(&self) -> u32 {
        self.keys
    }

    /// Runs a RocksDB task; returns the objects read. Keys wrap around the
    /// key space, so any start key reads `count` objects.
    pub fn run(&self, kind: TaskKind) -> Result<u64, String> {
        match kind {
            TaskKind::Synthetic => Ok(0),
            TaskKind::Get { key, count } => {
                let mut found = 0;
                for j in 0..count as u32 {
                    let k = key_bytes((key.wrapping_add(j)) % self.keys);
                    if self.db.get_pinned(k).map_err(|e| e.to_string())?.is_some() {
                        found += 1;
                    }
                }
                Ok(found)
            }
            TaskKind::Scan { key, count } => {
                let mut read = 0u64;
                let mut from = key % self.keys;
                // A scan that reaches the end continues from the first key.
                while read < count as u64 {
                    let start = key_bytes(from);
                    let it = self.db.iterator(rocksdb::IteratorMode::From(
                        &start,
                        rocksdb::Direction::Forward,
                    ));
                    let before = read;
                    for item in it.take((count as u64 - read) as usize) {
                        let (_k, v) = item.map_err(|e| e.to_string())?;
                        std::hint::black_box(&v);
                        read += 1;
                    }
                    if read == before {
                        break;
                    }
                    from = 0;
                }
                Ok(read)
            }
        }
    }

    /// Median wall time of `n` runs of `kind`, ns (start-up calibration log).
    pub fn time_median(&self, kind: TaskKind, n: usize) -> u64 {
        let mut v: Vec<u64> = (0..n.max(1))
            .map(|_| {
                let t = Instant::now();
                let _ = self.run(kind);
                t.elapsed().as_nanos() as u64
            })
            .collect();
        v.sort_unstable();
        v[v.len() / 2]
    }
}

static NEXT_DB: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Removes databases left in `base` by worker processes that no longer
/// exist (killed before they could clean up: /dev/shm is memory).
fn remove_orphans(base: &Path) {
    let Ok(entries) = std::fs::read_dir(base) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(rest) = name
            .to_str()
            .and_then(|n| n.strip_prefix("netsched-rocks-"))
        else {
            continue;
        };
        let Some(pid) = rest.split('-').next().and_then(|p| p.parse::<u32>().ok()) else {
            continue;
        };
        if !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

impl Drop for RocksStore {
    fn drop(&mut self) {
        if self.owned {
            let _ = rocksdb::DB::destroy(&rocksdb::Options::default(), &self.dir);
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payload_golden_bytes_and_round_trip() {
        let mut b = [0u8; ROCKS_PAYLOAD_LEN];
        let n = TaskKind::Scan {
            key: 0x0102_0304,
            count: 5000,
        }
        .encode(&mut b);
        assert_eq!(&b[..n], &[2, 1, 2, 3, 4, 0x13, 0x88]);
        assert_eq!(
            TaskKind::decode(&b[..n]),
            Ok(TaskKind::Scan {
                key: 0x0102_0304,
                count: 5000
            })
        );
        let n = TaskKind::Get { key: 7, count: 60 }.encode(&mut b);
        assert_eq!(&b[..n], &[1, 0, 0, 0, 7, 0, 60]);
        assert_eq!(TaskKind::Synthetic.encode(&mut b), 0);
        assert_eq!(TaskKind::decode(b""), Ok(TaskKind::Synthetic));
        assert_eq!(
            TaskKind::decode(&[9, 0, 0, 0, 0, 0, 0]),
            Err(PayloadError::UnknownTag(9))
        );
        assert_eq!(
            TaskKind::decode(&[1, 0, 0]),
            Err(PayloadError::BadLength(3))
        );
    }

    #[test]
    fn keys_sort_numerically() {
        assert_eq!(&key_bytes(42), b"k000000042");
        assert!(key_bytes(9) < key_bytes(10));
        assert!(key_bytes(99_999) < key_bytes(100_000));
    }

    #[test]
    fn rocksdb_get_and_scan_read_what_they_ask_for() {
        let s = RocksStore::open(&RocksConfig {
            keys: 6000,
            value_bytes: 16,
            path: None,
        })
        .unwrap();
        let dir = s.dir.clone();
        assert_eq!(s.run(TaskKind::Get { key: 10, count: 60 }), Ok(60));
        // Wraps around the key space.
        assert_eq!(
            s.run(TaskKind::Get {
                key: 5990,
                count: 60
            }),
            Ok(60)
        );
        assert_eq!(
            s.run(TaskKind::Scan {
                key: 0,
                count: 5000
            }),
            Ok(5000)
        );
        assert_eq!(
            s.run(TaskKind::Scan {
                key: 4000,
                count: 5000
            }),
            Ok(5000)
        );
        drop(s);
        assert!(!dir.exists(), "the worker's database is removed on drop");
    }

    #[test]
    fn databases_of_dead_processes_are_removed_at_start() {
        let base = std::env::temp_dir().join(format!("netsched-orphans-{}", std::process::id()));
        // pid 0 never names a live process in /proc; our own pid is alive.
        let dead = base.join("netsched-rocks-0-7");
        let alive = base.join(format!("netsched-rocks-{}-7", std::process::id()));
        let other = base.join("unrelated");
        for d in [&dead, &alive, &other] {
            std::fs::create_dir_all(d).unwrap();
        }
        remove_orphans(&base);
        assert!(!dead.exists());
        assert!(alive.exists() && other.exists());
        std::fs::remove_dir_all(&base).unwrap();
    }
}
