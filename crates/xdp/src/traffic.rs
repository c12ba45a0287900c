//! The end-to-end benchmark's traffic in XDP (`bpf/traffic.bpf.c`): a
//! generator that sends pre-built task frames out of an interface through
//! `BPF_PROG_TEST_RUN` with live frames (kernel >= 5.18), and a responder
//! on the same interface that answers tasks as a worker and completes
//! replies as a client, timing each task from send to reply. Neither end is
//! user space, so a scheduler's rate through an interface can be measured.

use std::os::fd::{AsFd, AsRawFd};

use aya::maps::PerCpuArray;
use aya::programs::{Xdp, XdpFlags};
use aya::Ebpf;

use crate::daemon::{self, SchedulerThread, Steering};
use crate::{test_run, XdpError};

static OBJECT: &[u8] = aya::include_bytes_aligned!(concat!(env!("OUT_DIR"), "/traffic.bpf.o"));

/// Latency buckets of `lat_hist`, 1 µs each (the last: longer).
pub const LATENCY_BUCKETS: usize = 4096;

/// Bytes of the stamp a task's payload must hold (the send time).
pub const STAMP_BYTES: usize = 8;

/// Bytes of the generator's task frame (`GEN_FRAME` of bpf/traffic.bpf.c):
/// Ethernet 14, IPv4 20, UDP 8, the task's fixed 32 and the stamp.
pub const GEN_FRAME_BYTES: usize = 14 + 20 + 8 + 32 + STAMP_BYTES;

/// The UDP payload of the generator's task: application 1's task of one
/// packet, whose payload is [`STAMP_BYTES`] for the send time. In a frame,
/// [`GEN_FRAME_BYTES`] long.
pub fn generator_task() -> Vec<u8> {
    use netsched_proto::{HorusBody, HorusHeader, HorusMessage, HorusTask, Message};
    Message::Horus(HorusMessage {
        header: HorusHeader {
            pool_id: 1,
            ..HorusHeader::default()
        },
        body: HorusBody::TaskFirst(HorusTask {
            task_id: 1 << 32,
            is_last: true,
            payload: &[0; STAMP_BYTES],
            ..HorusTask::default()
        }),
    })
    .to_vec()
    .expect("a fixed task encodes")
}

const STEERING: Steering = Steering {
    steer: "responder_steer",
    on_cpu: "responder_cpu",
    cpumap: "resp_cpu",
    direct: "responder",
};

/// What the responder counted.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TrafficStats {
    /// Tasks answered (as a worker).
    pub answered: u64,
    /// Replies received (as the client): completed tasks.
    pub completed: u64,
    /// Their send-to-reply times, summed.
    pub latency_ns: u64,
    /// Completed tasks per microsecond of latency.
    pub histogram: Vec<u64>,
}

impl TrafficStats {
    /// The `q` quantile of the latency histogram, µs (upper bucket edge).
    pub fn quantile_us(&self, q: f64) -> Option<u64> {
        let total: u64 = self.histogram.iter().sum();
        if total == 0 {
            return None;
        }
        let want = ((total as f64) * q).ceil().max(1.0) as u64;
        let mut seen = 0;
        self.histogram.iter().enumerate().find_map(|(us, n)| {
            seen += n;
            (seen >= want).then_some(us as u64 + 1)
        })
    }

    /// What happened between `earlier` and `self`.
    pub fn since(&self, earlier: &TrafficStats) -> TrafficStats {
        TrafficStats {
            answered: self.answered - earlier.answered,
            completed: self.completed - earlier.completed,
            latency_ns: self.latency_ns - earlier.latency_ns,
            histogram: self
                .histogram
                .iter()
                .zip(earlier.histogram.iter().chain(std::iter::repeat(&0)))
                .map(|(a, b)| a - b)
                .collect(),
        }
    }
}

/// The path's floor program (bpf/traffic.bpf.c).
const FLOOR: &str = "path_floor";

/// The loaded generator and responder.
pub struct Traffic {
    ebpf: Ebpf,
}

impl Traffic {
    pub fn load() -> Result<Self, XdpError> {
        if OBJECT.is_empty() {
            return Err(XdpError::ObjectMissing);
        }
        let mut ebpf = Ebpf::load(OBJECT)?;
        for name in ["gen_tx", "responder", FLOOR] {
            let prog: &mut Xdp = ebpf
                .program_mut(name)
                .ok_or(XdpError::NoNamedProgram(name))?
                .try_into()?;
            prog.load()?;
        }
        Ok(Traffic { ebpf })
    }

    /// Attaches the responder to `interface`, run by `cpu`'s cpumap thread
    /// (bpf/steer.h, as the schedulers are attached), SCHED_FIFO at
    /// `realtime_priority` if above 0 (as the schedulers' threads run, so
    /// that the machine's other tasks do not starve the workers and the
    /// client into dropping at the cpumap's queue).
    pub fn attach_responder(
        &mut self,
        interface: &str,
        flags: XdpFlags,
        cpu: u32,
        realtime_priority: u8,
    ) -> Result<SchedulerThread, XdpError> {
        daemon::attach_steered(
            &mut self.ebpf,
            &STEERING,
            interface,
            flags,
            cpu,
            realtime_priority,
        )
    }

    /// Attaches the responder to `interface` itself: it runs wherever the
    /// interface's receive runs (with threaded NAPI, that thread), on any
    /// CPU; its counts are per CPU, so no steering is needed.
    pub fn attach_responder_direct(
        &mut self,
        interface: &str,
        flags: XdpFlags,
    ) -> Result<(), XdpError> {
        let prog: &mut Xdp = self
            .ebpf
            .program_mut(STEERING.direct)
            .ok_or(XdpError::NoNamedProgram(STEERING.direct))?
            .try_into()?;
        prog.attach(interface, flags)?;
        Ok(())
    }

    /// Attaches `path_floor` (bpf/traffic.bpf.c) to `interface`: every frame
    /// goes back out where it came in, by the redirect the leaf on every CPU
    /// sends with, and nothing else: the path's floor, in the leaf's place.
    pub fn attach_floor(&mut self, interface: &str, flags: XdpFlags) -> Result<(), XdpError> {
        let prog: &mut Xdp = self
            .ebpf
            .program_mut(FLOOR)
            .ok_or(XdpError::NoNamedProgram(FLOOR))?
            .try_into()?;
        prog.attach(interface, flags)?;
        Ok(())
    }

    /// `path_floor` on one frame, without an interface (its unit test).
    pub fn floor_once(&mut self, frame: &[u8]) -> Result<test_run::TestRun, XdpError> {
        let fd = self.fd(FLOOR)?;
        test_run::run(fd, frame, 1).map_err(XdpError::TestRun)
    }

    fn fd(&mut self, name: &'static str) -> Result<i32, XdpError> {
        let prog: &mut Xdp = self
            .ebpf
            .program_mut(name)
            .ok_or(XdpError::NoNamedProgram(name))?
            .try_into()?;
        Ok(prog.fd()?.as_fd().as_raw_fd())
    }

    /// Sends `frame` (a single-packet task whose payload is
    /// [`STAMP_BYTES`] long: [`GEN_FRAME_BYTES`] in all) `count` times out
    /// of interface `ifindex` of the calling thread's namespace, each
    /// stamped with its send time.
    pub fn send(&mut self, frame: &[u8], count: u32, ifindex: u32) -> Result<(), XdpError> {
        let run = self.load_frame(frame)?;
        let fd = self.fd("gen_tx")?;
        test_run::run_live(fd, &run, count, ifindex).map_err(XdpError::TestRun)
    }

    /// `gen_tx` once on `page` (what a recycled live frame may hold),
    /// without an interface, after loading `frame` as [`Traffic::send`]
    /// does: the frame it would send (its unit test).
    pub fn generate_once(
        &mut self,
        frame: &[u8],
        page: &[u8],
    ) -> Result<test_run::TestRun, XdpError> {
        self.load_frame(frame)?;
        let fd = self.fd("gen_tx")?;
        test_run::run(fd, page, 1).map_err(XdpError::TestRun)
    }

    /// Loads `frame` into `gen_frame`, which the program writes into every
    /// frame it sends (bpf/traffic.bpf.c says why the stamp alone is not
    /// enough); returns what a run is given: the frame and one byte more,
    /// which the program trims.
    fn load_frame(&mut self, frame: &[u8]) -> Result<[u8; GEN_FRAME_BYTES + 1], XdpError> {
        let bytes: [u8; GEN_FRAME_BYTES] = frame.try_into().map_err(|_| {
            XdpError::TestRun(std::io::Error::other(format!(
                "a generated frame is {GEN_FRAME_BYTES} bytes, not {}",
                frame.len()
            )))
        })?;
        let map = self
            .ebpf
            .map_mut("gen_frame")
            .ok_or(XdpError::NoMap("gen_frame"))?;
        aya::maps::Array::<_, [u8; GEN_FRAME_BYTES]>::try_from(map)?.set(0, bytes, 0)?;
        let mut run = [0u8; GEN_FRAME_BYTES + 1];
        run[..GEN_FRAME_BYTES].copy_from_slice(&bytes);
        Ok(run)
    }

    /// The responder on one frame, without an interface (its unit test).
    pub fn respond_once(&mut self, frame: &[u8]) -> Result<test_run::TestRun, XdpError> {
        let fd = self.fd("responder")?;
        test_run::run(fd, frame, 1).map_err(XdpError::TestRun)
    }

    /// Packets the responder's steering took and the responder ran, per
    /// CPU, since [`Traffic::attach_responder`] (the difference was dropped
    /// at the cpumap's queue).
    pub fn runs_on(&self) -> Result<daemon::CpuRuns, XdpError> {
        daemon::runs_on(&self.ebpf)
    }

    /// The responder's counts so far, summed over CPUs.
    pub fn stats(&self) -> Result<TrafficStats, XdpError> {
        let sum = |map: &'static str, len: usize| -> Result<Vec<u64>, XdpError> {
            let data = self.ebpf.map(map).ok_or(XdpError::NoMap(map))?;
            let array: PerCpuArray<_, u64> = PerCpuArray::try_from(data)?;
            (0..len as u32)
                .map(|i| Ok(array.get(&i, 0)?.iter().sum()))
                .collect()
        };
        let s = sum("traffic_stats", 3)?;
        Ok(TrafficStats {
            answered: s[0],
            completed: s[1],
            latency_ns: s[2],
            histogram: sum("lat_hist", LATENCY_BUCKETS)?,
        })
    }
}

/// The kernel's per-program run-time statistics (`BPF_ENABLE_STATS` with
/// `BPF_STATS_RUN_TIME`), on while this value lives and off when the last
/// holder closes it (unlike `kernel.bpf_stats_enabled`, nothing is left
/// switched on if the process dies).
pub struct RunTimeStats(#[allow(dead_code)] std::os::fd::OwnedFd);

pub fn enable_run_time_stats() -> Result<RunTimeStats, XdpError> {
    aya::sys::enable_stats(aya::sys::Stats::RunTime)
        .map(RunTimeStats)
        .map_err(|e| XdpError::Stats(e.io_error))
}

/// The run time (ns) and run count of the program in entry `cpu` of the
/// cpumap with id `map_id` (a serialised scheduler: its cpumap thread's
/// name, `cpumap/<cpu>/map:<id>`, carries the id), counted while
/// [`enable_run_time_stats`] was on.
pub fn cpumap_program_runs(map_id: u32, cpu: u32) -> Result<(u64, u64), XdpError> {
    let map = aya::maps::Map::CpuMap(aya::maps::MapData::from_id(map_id)?);
    let entry = aya::maps::CpuMap::try_from(map)?.get(cpu, 0)?;
    let id = entry
        .prog_id
        .ok_or(XdpError::NoNamedProgram("cpumap entry program"))?
        .get();
    program_runs(id)
}

/// The run time (ns) and run count of the loaded program with id `id` (an
/// interface's XDP program: `ip link` shows its id), counted while
/// [`enable_run_time_stats`] was on.
pub fn program_runs(id: u32) -> Result<(u64, u64), XdpError> {
    for info in aya::programs::loaded_programs() {
        let info = info?;
        if info.id() == id {
            return Ok((info.run_time().as_nanos() as u64, info.run_count()));
        }
    }
    Err(XdpError::NoNamedProgram("a program of that id"))
}
