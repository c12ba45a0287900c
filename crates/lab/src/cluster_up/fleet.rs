//! `cluster up`'s processes: the [`Fleet`] of children (own session, die
//! with their parent, niced, killed and reaped when dropped) and the
//! Ctrl-C/SIGTERM flag it polls.

use std::fs::File;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::error::{Error, FleetError};

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    INTERRUPTED.store(true, Ordering::SeqCst);
}

/// Ctrl-C and SIGTERM set a flag that `cluster up` polls, so it can tear
/// the fleet down before exiting.
pub fn install_signal_handlers() {
    // SAFETY: the handler only stores to an atomic (async-signal-safe).
    unsafe {
        libc::signal(libc::SIGINT, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
    }
}

pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

/// Child processes, killed and reaped when dropped.
pub struct Fleet {
    children: Vec<(String, Child)>,
    pids: File,
    pub(super) nice: i32,
}

/// Child setup shared by daemons and clients: its own session (so a
/// terminal's Ctrl-C reaches only `cluster up`, which tears down in order),
/// die with `cluster up` (PR_SET_PDEATHSIG), and run at `nice`.
///
/// With the kernel's autogroup scheduling (`sched_autogroup_enabled`), CPU
/// is shared fairly between *sessions* first and a process's nice value only
/// counts inside its session, so a nice value alone does not help against
/// other users' jobs. A new session is a new autogroup, and its own nice
/// (`/proc/self/autogroup`) is what weighs against the other sessions.
pub(super) fn child_setup(cmd: &mut Command, nice: i32) {
    let text = format!("{nice}");
    let mut buf = [0u8; 8];
    let len = text.len().min(buf.len());
    buf[..len].copy_from_slice(&text.as_bytes()[..len]);
    // SAFETY: setsid, prctl, setpriority, open, write and close are
    // async-signal-safe; this runs in the child between fork and exec and
    // allocates nothing (the buffer was filled before the fork).
    unsafe {
        cmd.pre_exec(move || {
            libc::setsid();
            libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGKILL as libc::c_ulong,
                0,
                0,
                0,
            );
            if nice != 0 {
                // Failures (no CAP_SYS_NICE, no autogroup) leave the
                // default; the parent checks the nice value and warns.
                libc::setpriority(libc::PRIO_PROCESS, 0, nice);
                let fd = libc::open(c"/proc/self/autogroup".as_ptr(), libc::O_WRONLY);
                if fd >= 0 {
                    libc::write(fd, buf.as_ptr().cast(), len);
                    libc::close(fd);
                }
            }
            Ok(())
        });
    }
}

/// Warns once if a child did not get the requested nice value.
fn check_nice(pid: u32, nice: i32) {
    static WARNED: AtomicBool = AtomicBool::new(false);
    if nice == 0 {
        return;
    }
    // SAFETY: getpriority on a pid; errno is irrelevant here (-1 is a valid
    // answer, compared below).
    let got = unsafe { libc::getpriority(libc::PRIO_PROCESS, pid as libc::id_t) };
    if got != nice && !WARNED.swap(true, Ordering::Relaxed) {
        tracing::warn!(
            target: "cluster",
            wanted = nice,
            got,
            "could not set nice (needs root or CAP_SYS_NICE); running at default priority"
        );
    }
}

impl Fleet {
    pub(super) fn new(dir: &Path, nice: i32) -> Result<Self, Error> {
        let p = dir.join("pids");
        Ok(Fleet {
            children: Vec::new(),
            pids: File::create(&p).map_err(|e| Error::io(p.display(), e))?,
            nice,
        })
    }

    pub(super) fn spawn(
        &mut self,
        name: &str,
        bin: &Path,
        args: &[&str],
        dir: &Path,
    ) -> Result<(), Error> {
        use std::io::Write;
        let log = File::create(dir.join(format!("{name}.log")))?;
        let log2 = log.try_clone()?;
        let mut cmd = Command::new(bin);
        cmd.args(args).stdin(Stdio::null()).stdout(log).stderr(log2);
        child_setup(&mut cmd, self.nice);
        let child = cmd.spawn().map_err(|e| Error::io(bin.display(), e))?;
        check_nice(child.id(), self.nice);
        let _ = writeln!(self.pids, "{} {name}", child.id());
        self.children.push((name.to_string(), child));
        Ok(())
    }

    /// The first child that exited, if any (a daemon must not).
    pub(super) fn exited(&mut self) -> Option<FleetError> {
        for (n, c) in &mut self.children {
            if let Ok(Some(status)) = c.try_wait() {
                return Some(FleetError::ExitedEarly {
                    name: n.clone(),
                    status,
                });
            }
        }
        None
    }
}

impl Drop for Fleet {
    fn drop(&mut self) {
        for (_, c) in &self.children {
            // SAFETY: signalling our own child by pid.
            unsafe {
                libc::kill(c.id() as libc::pid_t, libc::SIGTERM);
            }
        }
        let deadline = Instant::now() + Duration::from_secs(2);
        for (_, c) in &mut self.children {
            loop {
                match c.try_wait() {
                    Ok(Some(_)) | Err(_) => break,
                    Ok(None) if Instant::now() >= deadline => {
                        let _ = c.kill();
                        let _ = c.wait();
                        break;
                    }
                    Ok(None) => std::thread::sleep(Duration::from_millis(10)),
                }
            }
        }
    }
}
