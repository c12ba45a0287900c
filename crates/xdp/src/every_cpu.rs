//! A Horus scheduler (the leaf or the spine) on every CPU (docs/xdp.md,
//! "Every CPU"): the program attached straight to the interface, each
//! packet's passes under the pass lock of bpf/pass_lock.h, beside the
//! one-CPU steering of `attach_serialised`.

use std::os::fd::{AsRawFd, OwnedFd};

use crate::object::SchedulerObject;
use crate::{test_run, TestRun, XdpError, XdpFlags};

/// Keys `pass_order` keeps (`PASS_ORDER_LEN` in bpf/pass_lock.h).
pub const PASS_ORDER_LEN: u64 = 1 << 14;

/// `struct pass_lock` of bpf/pass_lock.h as u32 words: held, on, ticket
/// (low, high), busy (low, high), log_on, pad.
type PassLockCell = [u32; 8];

/// What the pass lock has counted since the program was loaded.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PassLockStats {
    /// Packets whose passes ran (under the lock when it is on): the next
    /// ticket.
    pub tickets: u64,
    /// Packets given up after spinning the bound without the lock (a task
    /// dropped, a reply passed up unapplied, a notice at a spine dropped).
    pub busy: u64,
    /// Whether a CPU holds the lock now (false whenever no packet runs).
    pub held: bool,
}

impl SchedulerObject {
    fn pass_lock_cell(&mut self) -> Result<PassLockCell, XdpError> {
        Ok(self.array::<PassLockCell>("pass_lock")?.get(&0, 0)?)
    }

    pub(crate) fn set_pass_lock_word(&mut self, word: usize, value: u32) -> Result<(), XdpError> {
        let mut cell = self.pass_lock_cell()?;
        cell[word] = value;
        self.array::<PassLockCell>("pass_lock")?.set(0, cell, 0)?;
        Ok(())
    }

    pub(crate) fn pass_lock_stats(&mut self) -> Result<PassLockStats, XdpError> {
        let c = self.pass_lock_cell()?;
        let word = |lo: usize| u64::from(c[lo]) | (u64::from(c[lo + 1]) << 32);
        Ok(PassLockStats {
            tickets: word(2),
            busy: word(4),
            held: c[0] != 0,
        })
    }

    pub(crate) fn pass_order(&mut self, from: u64) -> Result<Vec<u32>, XdpError> {
        let tickets = self.pass_lock_stats()?.tickets;
        let first = from.max(tickets.saturating_sub(PASS_ORDER_LEN));
        let log = self.array::<u32>("pass_order")?;
        (first..tickets)
            .map(|t| Ok(log.get(&((t % PASS_ORDER_LEN) as u32), 0)?))
            .collect()
    }

    pub(crate) fn runner(&mut self) -> Result<ProgramRunner, XdpError> {
        Ok(ProgramRunner {
            fd: self.program_fd()?,
        })
    }

    pub(crate) fn every_cpu_runner(&mut self) -> Result<ProgramRunner, XdpError> {
        Ok(ProgramRunner {
            fd: self.direct_program_fd()?,
        })
    }

    pub(crate) fn attach_every_cpu(
        &mut self,
        interface: &str,
        flags: XdpFlags,
    ) -> Result<(), XdpError> {
        self.set_pass_lock_word(1, 1)?;
        self.attach_direct(interface, flags)
    }
}

/// The pass lock's controls and the every-CPU attach, which the leaf and
/// the spine offer by delegating to their loaded [`SchedulerObject`],
/// written once.
macro_rules! every_cpu_methods {
    () => {
        /// With `on`, each packet's passes take the pass lock, so the
        /// program may run on several CPUs at once (`attach_every_cpu` and
        /// concurrent `BPF_PROG_TEST_RUN`s). Off (as loaded) it assumes one
        /// CPU runs it (`attach_serialised`). Set it while no packet runs.
        pub fn set_every_cpu(&mut self, on: bool) -> Result<(), $crate::XdpError> {
            self.object.set_pass_lock_word(1, u32::from(on))
        }

        /// With `on`, the program keeps each packet's key at its ticket in
        /// `pass_order`: the order the passes ran in (the leaf's key is
        /// the task id's low word, the spine's the packet's type and its
        /// header's seq).
        pub fn set_pass_order_log(&mut self, on: bool) -> Result<(), $crate::XdpError> {
            self.object.set_pass_lock_word(6, u32::from(on))
        }

        pub fn pass_lock_stats(&mut self) -> Result<$crate::PassLockStats, $crate::XdpError> {
            self.object.pass_lock_stats()
        }

        /// The keys of the packets whose passes took tickets `from` onward,
        /// in the order they ran (the log is a ring: at most the last
        /// [`PASS_ORDER_LEN`](crate::PASS_ORDER_LEN) are kept, so `from` is
        /// raised to the oldest kept).
        pub fn pass_order(&mut self, from: u64) -> Result<Vec<u32>, $crate::XdpError> {
            self.object.pass_order(from)
        }

        /// A handle that runs the program through `BPF_PROG_TEST_RUN` from
        /// any thread (it owns a duplicate of the program's fd): the
        /// concurrent differential tests run one per CPU.
        pub fn runner(&mut self) -> Result<$crate::ProgramRunner, $crate::XdpError> {
            self.object.runner()
        }

        /// A handle that runs the program `attach_every_cpu` attaches: the
        /// same passes, but a frame the scheduler sends back out leaves by
        /// a redirect to the interface it came in on instead of `XDP_TX`
        /// (which a veth's peer collects only if it runs XDP itself).
        pub fn every_cpu_runner(&mut self) -> Result<$crate::ProgramRunner, $crate::XdpError> {
            self.object.every_cpu_runner()
        }

        /// Attaches the program itself to `interface`: it runs on whichever
        /// CPU received the frame (in native mode, each RX queue's CPU),
        /// each packet's passes under the pass lock (`set_every_cpu`,
        /// turned on here). The alternative to `attach_serialised`
        /// (`[xdp] cpus = "all"`); docs/xdp.md, "Every CPU", argues it.
        pub fn attach_every_cpu(
            &mut self,
            interface: &str,
            flags: $crate::XdpFlags,
        ) -> Result<(), $crate::XdpError> {
            self.object.attach_every_cpu(interface, flags)
        }
    };
}
pub(crate) use every_cpu_methods;

/// `runner()`: the loaded program, run from any thread.
pub struct ProgramRunner {
    fd: OwnedFd,
}

impl ProgramRunner {
    /// `test_run`, on this thread's CPU.
    pub fn test_run(&self, packet: &[u8], repeat: u32) -> Result<TestRun, XdpError> {
        test_run::run(self.fd.as_raw_fd(), packet, repeat).map_err(XdpError::TestRun)
    }
}
