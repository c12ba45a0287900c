//! A loaded scheduler object: the plumbing [`crate::XdpLeaf`],
//! [`crate::XdpSpine`] and [`crate::XdpDraconis`] share. Each object holds one XDP program run on
//! the interface or by `BPF_PROG_TEST_RUN`, its register maps, and the
//! steering that serialises it on one CPU (bpf/steer.h).

use std::borrow::Cow;
use std::os::fd::{AsFd, AsRawFd};
use std::path::Path;

use aya::maps::{Array, HashMap, MapData};
use aya::programs::{Xdp, XdpFlags};
use aya::Ebpf;
use netsched_core::switch::RegisterDump;

use crate::daemon::{self, CpuRuns, SchedulerThread, Steering};
use crate::test_run::{self, TestRun};
use crate::XdpError;

/// The environment variable naming a directory of compiled programs to load
/// instead of the ones built into this binary.
pub(crate) const OBJECT_DIR_ENV: &str = "NETSCHED_XDP_OBJECT_DIR";

/// The compiled program `name` (`horus_leaf`, `horus_spine`,
/// `draconis_queue`): the one built into this binary, or `{dir}/{name}.bpf.o`
/// when [`OBJECT_DIR_ENV`] names a directory. scripts/bpf-mutants.py loads
/// each mutant of the C this way, so that the differential tests run against
/// it without rebuilding the crate. The variable is read from the process's
/// own environment, which only the one who starts it (root, to load XDP at
/// all) sets.
pub(crate) fn object_bytes(
    name: &str,
    built_in: &'static [u8],
) -> Result<Cow<'static, [u8]>, XdpError> {
    let Some(dir) = std::env::var_os(OBJECT_DIR_ENV) else {
        if built_in.is_empty() {
            return Err(XdpError::ObjectMissing);
        }
        return Ok(Cow::Borrowed(built_in));
    };
    let path = Path::new(&dir).join(format!("{name}.bpf.o"));
    // A `Vec`'s allocation is at least 8-aligned, as the ELF parser needs.
    std::fs::read(&path)
        .map(Cow::Owned)
        .map_err(|source| XdpError::ObjectFile { path, source })
}

/// Where a Horus program (leaf or spine) keeps its switch model: the map
/// of each sans-IO register array and how wide a map's cells are, the map
/// of its random stream, and the map of its nodes' addresses.
pub(crate) struct ModelMaps {
    pub(crate) map_name: fn(&str) -> Option<&'static str>,
    pub(crate) cell_bytes: fn(&str) -> usize,
    pub(crate) rng: &'static str,
    pub(crate) addrs: &'static str,
}

pub(crate) struct SchedulerObject {
    pub(crate) ebpf: Ebpf,
    /// The scheduler's program as the interface's own XDP program.
    program: &'static str,
    steering: Steering,
}

impl SchedulerObject {
    /// Loads `program` of `ebpf` into the kernel (the verifier runs here).
    pub(crate) fn load(
        mut ebpf: Ebpf,
        program: &'static str,
        steering: Steering,
    ) -> Result<Self, XdpError> {
        let xdp: &mut Xdp = ebpf
            .program_mut(program)
            .ok_or(XdpError::NoNamedProgram(program))?
            .try_into()?;
        xdp.load()?;
        Ok(SchedulerObject {
            ebpf,
            program,
            steering,
        })
    }

    pub(crate) fn array<V: aya::Pod>(
        &mut self,
        name: &'static str,
    ) -> Result<Array<&mut MapData, V>, XdpError> {
        let map = self.ebpf.map_mut(name).ok_or(XdpError::NoMap(name))?;
        Ok(Array::try_from(map)?)
    }

    /// Writes `cells` into `map`, each `bytes` wide (1, 4 or 8): a switch
    /// model's array installed from its sans-IO dump.
    fn write_cells(
        &mut self,
        map: &'static str,
        bytes: usize,
        cells: &[u64],
    ) -> Result<(), XdpError> {
        for (i, &cell) in cells.iter().enumerate() {
            let i = i as u32;
            match bytes {
                1 => self.array::<u8>(map)?.set(i, cell as u8, 0)?,
                4 => self.array::<u32>(map)?.set(i, cell as u32, 0)?,
                _ => self.array::<u64>(map)?.set(i, cell, 0)?,
            }
        }
        Ok(())
    }

    /// The first `len` cells of `map`, each `bytes` wide, widened to u64.
    fn read_cells(
        &mut self,
        map: &'static str,
        bytes: usize,
        len: usize,
    ) -> Result<Vec<u64>, XdpError> {
        (0..len as u32)
            .map(|i| {
                Ok(match bytes {
                    1 => u64::from(self.array::<u8>(map)?.get(&i, 0)?),
                    4 => u64::from(self.array::<u32>(map)?.get(&i, 0)?),
                    _ => self.array::<u64>(map)?.get(&i, 0)?,
                })
            })
            .collect()
    }

    /// Installs a Horus switch model's state (a leaf's or a spine's): every
    /// node of `pow2_slot_of` up to `max_nodes` not live (`NO_SLOT` of
    /// crates/core/src/pow2.rs) until its register says so, each register
    /// array of `registers`, the random stream `rng`, and where each of
    /// its nodes is reached (`addrs`, `struct worker_addr`).
    pub(crate) fn install_model(
        &mut self,
        maps: &ModelMaps,
        max_nodes: u32,
        registers: &[RegisterDump],
        rng: [u64; 4],
        addrs: impl Iterator<Item = [u8; 12]>,
    ) -> Result<(), XdpError> {
        let mut slot_of = self.array::<u32>("pow2_slot_of")?;
        for node in 0..max_nodes {
            slot_of.set(node, u32::MAX, 0)?;
        }
        for dump in registers {
            let map = (maps.map_name)(dump.name).ok_or(XdpError::UnknownArray(dump.name))?;
            self.write_cells(map, (maps.cell_bytes)(map), &dump.cells)?;
        }
        self.array::<[u64; 4]>(maps.rng)?.set(0, rng, 0)?;
        let mut table = self.array::<[u8; 12]>(maps.addrs)?;
        for (node, addr) in addrs.enumerate() {
            table.set(node as u32, addr, 0)?;
        }
        Ok(())
    }

    /// The first `len` cells of the map holding the switch model's `array`.
    pub(crate) fn read_model_array(
        &mut self,
        maps: &ModelMaps,
        array: &'static str,
        len: usize,
    ) -> Result<Vec<u64>, XdpError> {
        let map = (maps.map_name)(array).ok_or(XdpError::UnknownArray(array))?;
        self.read_cells(map, (maps.cell_bytes)(map), len)
    }

    /// The model's random stream after the packets run so far.
    pub(crate) fn model_rng(&mut self, maps: &ModelMaps) -> Result<[u64; 4], XdpError> {
        Ok(self.array::<[u64; 4]>(maps.rng)?.get(&0, 0)?)
    }

    fn program(&mut self) -> Result<&mut Xdp, XdpError> {
        Ok(self
            .ebpf
            .program_mut(self.program)
            .ok_or(XdpError::NoNamedProgram(self.program))?
            .try_into()?)
    }

    /// A duplicate of the program's fd, for test runs from other threads.
    pub(crate) fn program_fd(&mut self) -> Result<std::os::fd::OwnedFd, XdpError> {
        self.program()?
            .fd()?
            .as_fd()
            .try_clone_to_owned()
            .map_err(XdpError::Fd)
    }

    pub(crate) fn test_run(&mut self, packet: &[u8], repeat: u32) -> Result<TestRun, XdpError> {
        let fd = self.program()?.fd()?.as_fd().as_raw_fd();
        test_run::run(fd, packet, repeat).map_err(XdpError::TestRun)
    }

    /// Attaches the scheduler itself to `interface` (no steering): it runs
    /// on whichever CPU takes a packet. The program is the steering's
    /// `direct` one, loaded here unless it is the scheduler's own.
    pub(crate) fn attach_direct(
        &mut self,
        interface: &str,
        flags: XdpFlags,
    ) -> Result<(), XdpError> {
        self.direct_program()?.attach(interface, flags)?;
        Ok(())
    }

    /// The steering's `direct` program, loaded on first use unless it is
    /// the scheduler's own.
    fn direct_program(&mut self) -> Result<&mut Xdp, XdpError> {
        let direct = self.steering.direct;
        let xdp: &mut Xdp = self
            .ebpf
            .program_mut(direct)
            .ok_or(XdpError::NoNamedProgram(direct))?
            .try_into()?;
        if xdp.fd().is_err() {
            xdp.load()?;
        }
        Ok(xdp)
    }

    /// A duplicate of the `direct` program's fd (the one `attach_direct`
    /// attaches), for test runs.
    pub(crate) fn direct_program_fd(&mut self) -> Result<std::os::fd::OwnedFd, XdpError> {
        self.direct_program()?
            .fd()?
            .as_fd()
            .try_clone_to_owned()
            .map_err(XdpError::Fd)
    }

    pub(crate) fn attach_serialised(
        &mut self,
        interface: &str,
        flags: XdpFlags,
        cpu: u32,
        realtime_priority: u8,
    ) -> Result<SchedulerThread, XdpError> {
        daemon::attach_steered(
            &mut self.ebpf,
            &self.steering,
            interface,
            flags,
            cpu,
            realtime_priority,
        )
    }

    /// Where application `app_id`'s tasks last came from, as a Horus
    /// program recorded it in `reply_routes` (after a source was set).
    pub(crate) fn reply_route(
        &mut self,
        app_id: u32,
    ) -> Result<Option<std::net::SocketAddrV4>, XdpError> {
        let map = self
            .ebpf
            .map("reply_routes")
            .ok_or(XdpError::NoMap("reply_routes"))?;
        // `struct reply_route`: IPv4 address, port (network order), MAC.
        let routes: HashMap<&MapData, u32, [u8; 12]> = HashMap::try_from(map)?;
        // The program keys by the id's bytes as they are on the wire.
        let key = u32::from_ne_bytes(app_id.to_be_bytes());
        match routes.get(&key, 0) {
            Ok(v) => Ok(Some(std::net::SocketAddrV4::new(
                std::net::Ipv4Addr::new(v[0], v[1], v[2], v[3]),
                u16::from_be_bytes([v[4], v[5]]),
            ))),
            Err(aya::maps::MapError::KeyNotFound) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// Packets per CPU: the steering's and the scheduler's counts (the
    /// cpumap program's, or the redirecting program's on every CPU).
    pub(crate) fn runs_on(&self) -> Result<CpuRuns, XdpError> {
        let runs = daemon::runs_on(&self.ebpf)?;
        Ok(runs)
    }
}

/// Test runs, the serialised attach and per-CPU counts: what every scheduler
/// program (the leaf, the spine, the Draconis queue) offers by delegating to
/// its loaded [`SchedulerObject`], written once. `$steer` names its steering
/// program.
macro_rules! steered_program_methods {
    ($steer:literal) => {
        /// Runs the program once on `packet` (an Ethernet frame) without
        /// attaching it, `repeat` times (>= 1; state changes every time).
        pub fn test_run(
            &mut self,
            packet: &[u8],
            repeat: u32,
        ) -> Result<$crate::TestRun, $crate::XdpError> {
            self.object.test_run(packet, repeat)
        }

        #[doc = concat!(
                    "Attaches the program so that one CPU runs it whatever CPU took the packet: `",
                    $steer,
                    "` on `interface` redirects every packet into the cpumap entry of `cpu`, ",
                    "whose program is this one (kernel >= 5.9), and that CPU's cpumap thread ",
                    "runs it one packet at a time: two CPUs running the program at once would ",
                    "race on its unsynchronised maps (docs/xdp.md, \"One CPU\"); the Horus ",
                    "leaf and spine can instead run on every CPU, behind their pass lock ",
                    "(`attach_every_cpu`). ",
                    "A `realtime_priority` above 0 makes that ",
                    "thread SCHED_FIFO at it ([`SchedulerThread`](crate::SchedulerThread))."
                )]
        pub fn attach_serialised(
            &mut self,
            interface: &str,
            flags: $crate::XdpFlags,
            cpu: u32,
            realtime_priority: u8,
        ) -> Result<$crate::SchedulerThread, $crate::XdpError> {
            self.object
                .attach_serialised(interface, flags, cpu, realtime_priority)
        }

        /// Packets per CPU since `attach_serialised`: the ones the steering
        /// program took, and the ones this program ran.
        pub fn runs_on(&self) -> Result<$crate::CpuRuns, $crate::XdpError> {
            self.object.runs_on()
        }
    };
}
pub(crate) use steered_program_methods;
