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

/// Why the RocksDB store could not be opened or read.
#[derive(Debug, thiserror::Error)]
pub enum RocksError {
    #[error("rocksdb.keys must be at least 1")]
    NoKeys,
    #[error("{}: {source}", dir.display())]
    Open {
        dir: PathBuf,
        #[source]
        source: rocksdb::Error,
    },
    /// The database holds a key that is none of the objects it was filled
    /// with (not a database this store wrote).
    #[error("a key outside the object key space")]
    ForeignKey,
    /// A write while populating, or a read while running a task.
    #[error(transparent)]
    Db(#[from] rocksdb::Error),
}

/// For callers that report errors as text (`node/src/pull`).
impl From<RocksError> for String {
    fn from(e: RocksError) -> String {
        e.to_string()
    }
}

impl RocksStore {
    /// Opens (creating) the database and writes objects `0..keys`.
    pub fn open(cfg: &RocksConfig) -> Result<RocksStore, RocksError> {
        if cfg.keys == 0 {
            return Err(RocksError::NoKeys);
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
        let db = rocksdb::DB::open(&o, &dir).map_err(|source| RocksError::Open {
            dir: dir.clone(),
            source,
        })?;
        let value = vec![0x5a; cfg.value_bytes];
        let mut wo = rocksdb::WriteOptions::default();
        // Population is a start-up cost, not part of any measurement.
        wo.disable_wal(true);
        let mut batch = rocksdb::WriteBatch::default();
        for i in 0..cfg.keys {
            batch.put(key_bytes(i), &value);
            if batch.len() >= 10_000 {
                db.write_opt(std::mem::take(&mut batch), &wo)?;
            }
        }
        db.write_opt(batch, &wo)?;
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

    /// Runs a RocksDB task to completion; returns the objects read. Keys
    /// wrap around the key space, so any start key reads `count` objects.
    pub fn run(&self, kind: TaskKind) -> Result<u64, RocksError> {
        let mut rest = kind;
        let mut digest = ScanDigest::default();
        match self.run_slice(&mut rest, &mut digest, None)? {
            Slice::Done => Ok(digest.objects),
            Slice::Paused => unreachable!("no deadline, no pause"),
        }
    }

    /// Runs `kind` until it is done or `deadline` has passed, checked every
    /// [`SLICE_CHECK_OBJECTS`] objects (so a slice always makes progress).
    /// On [`Slice::Paused`], `kind` is the rest of the request: its key is
    /// where to resume and its count what is left. The next slice opens a
    /// fresh iterator there (a re-seek), because the request waits in the
    /// server queue in between and an iterator pins RocksDB state. This is
    /// how a SCAN of 5,000 objects is preempted at 250 µs like any other
    /// long request (RackSched §4, Shinjuku-style). `digest` accumulates
    /// what the request read across slices.
    pub fn run_slice(
        &self,
        kind: &mut TaskKind,
        digest: &mut ScanDigest,
        deadline: Option<Instant>,
    ) -> Result<Slice, RocksError> {
        let due = || deadline.is_some_and(|d| Instant::now() >= d);
        match kind {
            TaskKind::Synthetic => Ok(Slice::Done),
            TaskKind::Get { key, count } => {
                while *count > 0 {
                    for _ in 0..SLICE_CHECK_OBJECTS.min(*count) {
                        let k = key_bytes(*key % self.keys);
                        if let Some(v) = self.db.get_pinned(k)? {
                            digest.add(&k, &v);
                        }
                        *key = key.wrapping_add(1) % self.keys;
                        *count -= 1;
                    }
                    if *count > 0 && due() {
                        return Ok(Slice::Paused);
                    }
                }
                Ok(Slice::Done)
            }
            TaskKind::Scan { key, count } => {
                *key %= self.keys;
                // Objects read in this slice, across a wrap to the first key.
                let mut in_slice = 0u16;
                while *count > 0 {
                    let start = key_bytes(*key);
                    let it = self.db.iterator(rocksdb::IteratorMode::From(
                        &start,
                        rocksdb::Direction::Forward,
                    ));
                    let mut read = 0u16;
                    let mut reached_end = true;
                    for item in it {
                        let (k, v) = item?;
                        digest.add(&k, &v);
                        read += 1;
                        in_slice = in_slice.wrapping_add(1);
                        *count -= 1;
                        let pause =
                            *count > 0 && in_slice.is_multiple_of(SLICE_CHECK_OBJECTS) && due();
                        if *count == 0 || pause {
                            // Resume after the last key read, whatever the
                            // key space holds: the key says where we are.
                            // (Parsed only here, not per object.)
                            *key = parse_key(&k).ok_or(RocksError::ForeignKey)?.wrapping_add(1)
                                % self.keys;
                        }
                        if pause {
                            return Ok(Slice::Paused);
                        }
                        if *count == 0 {
                            reached_end = false;
                            break;
                        }
                    }
                    if read == 0 && *key == 0 {
                        // An empty key space: nothing more to read.
                        break;
                    }
                    if reached_end {
                        // A scan that reaches the end continues from the first key.
                        *key = 0;
                    }
                }
                Ok(Slice::Done)
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

/// How a sliced request ended its slice.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Slice {
    Done,
    /// The deadline passed; the task's kind now names the rest.
    Paused,
}

/// Objects read between two deadline checks of a sliced request: a clock
/// read costs about as much as reading one object, so checking every 32
/// keeps the overhead small and the overshoot past 250 µs to a few µs.
pub const SLICE_CHECK_OBJECTS: u16 = 32;

/// What a request read, accumulated across its slices: the object count and
/// an order-sensitive hash (FNV-1a's step over 8-byte words) of every key
/// and value, so a preempted SCAN can be checked to read exactly what an
/// unpreempted one reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScanDigest {
    pub objects: u64,
    pub hash: u64,
}

impl Default for ScanDigest {
    fn default() -> Self {
        ScanDigest {
            objects: 0,
            hash: 0xcbf2_9ce4_8422_2325,
        }
    }
}

impl ScanDigest {
    /// Folds in one object, 8 bytes per multiply (FNV-1a's step on words,
    /// not bytes: a SCAN hashes 5,000 objects, and a per-byte loop would
    /// add about half a SCAN's own RocksDB time).
    fn add(&mut self, key: &[u8], value: &[u8]) {
        self.objects += 1;
        for part in [key, value] {
            let mut words = part.chunks_exact(8);
            for w in &mut words {
                self.mix(u64::from_le_bytes(w.try_into().expect("8 bytes")));
            }
            let rest = words.remainder();
            let mut last = [0u8; 8];
            last[..rest.len()].copy_from_slice(rest);
            // The length tells "ab" + "c" from "a" + "bc".
            self.mix(u64::from_le_bytes(last) ^ ((part.len() as u64) << 56));
        }
    }

    #[inline]
    fn mix(&mut self, word: u64) {
        self.hash = (self.hash ^ word).wrapping_mul(0x0100_0000_01b3);
    }
}

/// The object index a key names (inverse of [`key_bytes`]).
pub fn parse_key(k: &[u8]) -> Option<u32> {
    let digits = k.strip_prefix(b"k")?;
    if digits.len() != 9 || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(digits.iter().fold(0, |v, d| v * 10 + (d - b'0') as u32))
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
        assert_eq!(s.run(TaskKind::Get { key: 10, count: 60 }).ok(), Some(60));
        // Wraps around the key space.
        assert_eq!(
            s.run(TaskKind::Get {
                key: 5990,
                count: 60
            })
            .ok(),
            Some(60)
        );
        assert_eq!(
            s.run(TaskKind::Scan {
                key: 0,
                count: 5000
            })
            .ok(),
            Some(5000)
        );
        assert_eq!(
            s.run(TaskKind::Scan {
                key: 4000,
                count: 5000
            })
            .ok(),
            Some(5000)
        );
        drop(s);
        assert!(!dir.exists(), "the worker's database is removed on drop");
    }

    /// Runs `kind` in slices whose deadline has always passed, so each slice
    /// reads exactly one check interval of objects; returns (slices, digest).
    fn sliced(s: &RocksStore, mut kind: TaskKind) -> (u64, ScanDigest) {
        let mut digest = ScanDigest::default();
        let mut slices = 0;
        loop {
            slices += 1;
            let past = Some(Instant::now());
            match s.run_slice(&mut kind, &mut digest, past).unwrap() {
                Slice::Done => return (slices, digest),
                Slice::Paused => assert!(kind.is_real()),
            }
        }
    }

    #[test]
    fn a_preempted_scan_reads_exactly_what_an_unpreempted_one_reads() {
        let s = RocksStore::open(&RocksConfig {
            keys: 6000,
            value_bytes: 8,
            path: None,
        })
        .unwrap();
        let whole = |kind: TaskKind| {
            let (mut k, mut d) = (kind, ScanDigest::default());
            assert_eq!(s.run_slice(&mut k, &mut d, None).unwrap(), Slice::Done);
            d
        };
        let per_slice = SLICE_CHECK_OBJECTS as u64;
        // From key 0, and from key 4000, where the scan wraps to key 0 in
        // the middle of a slice (2000 = 62.5 slices of 32).
        for key in [0, 4000] {
            let scan = TaskKind::Scan { key, count: 5000 };
            let (slices, digest) = sliced(&s, scan);
            assert_eq!(slices, 5000u64.div_ceil(per_slice), "from {key}");
            assert_eq!(digest, whole(scan), "from {key}");
            assert_eq!(digest.objects, 5000);
        }
        // Different start keys read different objects.
        assert_ne!(
            whole(TaskKind::Scan {
                key: 1,
                count: 5000
            }),
            whole(TaskKind::Scan {
                key: 0,
                count: 5000
            })
        );
        // A GET is sliced the same way (60 objects: 2 slices).
        let get = TaskKind::Get {
            key: 5990,
            count: 60,
        };
        let (slices, digest) = sliced(&s, get);
        assert_eq!((slices, digest), (2, whole(get)));
        assert_eq!(digest.objects, 60);
        // A deadline in the future does not cut a request.
        let mut k = TaskKind::Scan {
            key: 3,
            count: 5000,
        };
        let mut d = ScanDigest::default();
        let later = Some(Instant::now() + std::time::Duration::from_secs(60));
        assert_eq!(s.run_slice(&mut k, &mut d, later).unwrap(), Slice::Done);
        assert_eq!(
            k,
            TaskKind::Scan {
                key: 3 + 5000,
                count: 0
            }
        );
    }

    #[test]
    fn parse_key_inverts_key_bytes() {
        for i in [0, 7, 42, 99_999, 999_999_999] {
            assert_eq!(parse_key(&key_bytes(i)), Some(i));
        }
        assert_eq!(parse_key(b"x000000001"), None);
        assert_eq!(parse_key(b"k00000001"), None);
        assert_eq!(parse_key(b"k0000000a1"), None);
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
