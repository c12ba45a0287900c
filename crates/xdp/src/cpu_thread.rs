//! The kernel thread that runs a serialised scheduler (the cpumap entry's
//! thread, `cpumap/<cpu>/map:<id>`), found and made real-time.
//!
//! Why: the thread is an ordinary SCHED_OTHER task. On this machine's
//! kernel (6.18, EEVDF) two nice-0 busy processes on its CPU kept it
//! runnable but unscheduled for 0.9-1.4 s (sched_switch trace: 3,500 other
//! switches in the gap); its 4,096-packet queue filled, the steering
//! program's redirects failed with ENOSPC (5,199 drops in one run), and
//! clients' retries turned that into a storm that lost 623 of 981 tasks.
//! A switch pipeline is never descheduled; SCHED_FIFO is the nearest a
//! host offers. The kernel's real-time throttling (sched_rt_runtime_us,
//! 95 % by default) still leaves the CPU's other tasks 5 % under overload.

use std::io;

/// The cpumap thread's name: `cpumap/<cpu>/map:<map id>` (kernel/bpf/cpumap.c).
pub(crate) fn name(cpu: u32, map_id: u32) -> String {
    format!("cpumap/{cpu}/map:{map_id}")
}

/// The pid of the kernel thread called `name`. /proc/<pid>/comm shows a
/// kernel thread's full name (not the 15 bytes of a user task's), so the
/// map id makes it unique across daemons.
pub(crate) fn find(name: &str) -> io::Result<Option<i32>> {
    for entry in std::fs::read_dir("/proc")? {
        let entry = entry?;
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<i32>().ok())
        else {
            continue;
        };
        // A process that exited between the listing and the read is not it.
        let Ok(comm) = std::fs::read_to_string(entry.path().join("comm")) else {
            continue;
        };
        if comm.trim_end() == name {
            return Ok(Some(pid));
        }
    }
    Ok(None)
}

/// Puts `pid` in SCHED_FIFO at `priority` (1-99).
pub(crate) fn make_realtime(pid: i32, priority: u8) -> io::Result<()> {
    let param = libc::sched_param {
        sched_priority: i32::from(priority),
    };
    // SAFETY: `param` is a valid sched_param for the call's duration.
    if unsafe { libc::sched_setscheduler(pid, libc::SCHED_FIFO, &param) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The share of each period the kernel lets real-time tasks run
/// (`sched_rt_runtime_us / sched_rt_period_us`), or None when throttling is
/// off (runtime -1): then a SCHED_FIFO scheduler under overload holds its
/// CPU and starves everything else there.
pub(crate) fn realtime_share() -> io::Result<Option<f64>> {
    let read = |name: &str| std::fs::read_to_string(format!("/proc/sys/kernel/{name}"));
    Ok(parse_realtime_share(
        &read("sched_rt_runtime_us")?,
        &read("sched_rt_period_us")?,
    ))
}

fn parse_realtime_share(runtime_us: &str, period_us: &str) -> Option<f64> {
    let runtime: i64 = runtime_us.trim().parse().ok()?;
    let period: i64 = period_us.trim().parse().ok()?;
    (runtime >= 0 && period > 0).then(|| runtime as f64 / period as f64)
}

/// The scheduling policy and priority of `pid` (SCHED_OTHER is 0).
pub(crate) fn policy(pid: i32) -> io::Result<(i32, i32)> {
    // SAFETY: plain syscalls on a pid; `param` is written by the kernel.
    let policy = unsafe { libc::sched_getscheduler(pid) };
    if policy < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut param = libc::sched_param { sched_priority: 0 };
    if unsafe { libc::sched_getparam(pid, &mut param) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((policy, param.sched_priority))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn realtime_share_is_runtime_over_period_and_none_when_unthrottled() {
        assert_eq!(parse_realtime_share("950000\n", "1000000\n"), Some(0.95));
        assert_eq!(parse_realtime_share("-1\n", "1000000\n"), None);
        assert_eq!(parse_realtime_share("garbage", "1000000"), None);
        assert_eq!(parse_realtime_share("1000", "0"), None);
    }

    #[test]
    fn the_name_is_the_kernels() {
        assert_eq!(name(1, 49611), "cpumap/1/map:49611");
    }

    #[test]
    fn finds_a_thread_by_its_full_name_and_not_by_a_prefix() {
        let me = std::process::id() as i32;
        let comm = std::fs::read_to_string("/proc/self/comm").unwrap();
        let comm = comm.trim_end();
        assert!(find(comm).unwrap().is_some());
        // A prefix of a name (another daemon's map id extends ours) is not it.
        let prefix = &comm[..comm.len() - 1];
        assert_ne!(find(prefix).unwrap(), Some(me));
    }
}
