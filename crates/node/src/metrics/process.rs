//! The standard `process_*` series, which prometheus-client does not
//! collect: read from /proc/self at scrape time, with Prometheus's names and
//! meanings (client_golang's and client_python's process collectors).

use std::fs;
use std::io;

/// One reading of this process's resources.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ProcessStats {
    /// User plus system CPU time, seconds.
    pub cpu_seconds: f64,
    pub resident_bytes: u64,
    pub virtual_bytes: u64,
    pub open_fds: u64,
    /// Since the Unix epoch, seconds.
    pub start_time_seconds: f64,
}

impl ProcessStats {
    /// Reads /proc/self/stat, /proc/self/fd and /proc/stat's boot time.
    pub fn read() -> io::Result<Self> {
        let stat = fs::read_to_string("/proc/self/stat")?;
        let open_fds = fs::read_dir("/proc/self/fd")?.count() as u64;
        let boot_time = boot_time_seconds(&fs::read_to_string("/proc/stat")?)?;
        // SAFETY: sysconf only reads a configuration value.
        let (ticks, page) = unsafe {
            (
                libc::sysconf(libc::_SC_CLK_TCK),
                libc::sysconf(libc::_SC_PAGESIZE),
            )
        };
        if ticks <= 0 || page <= 0 {
            return Err(io::Error::other("sysconf gave no clock tick or page size"));
        }
        parse_stat(&stat, ticks as f64, page as u64, boot_time, open_fds)
    }
}

/// `proc(5)`: after the command name in parentheses (which may itself hold
/// spaces and parentheses) come fields 3 on; utime and stime (14, 15) and
/// starttime (22) are in clock ticks, vsize (23) in bytes, rss (24) in pages.
fn parse_stat(
    stat: &str,
    ticks_per_second: f64,
    page_bytes: u64,
    boot_time: f64,
    open_fds: u64,
) -> io::Result<ProcessStats> {
    let bad = || io::Error::new(io::ErrorKind::InvalidData, "unexpected /proc/self/stat");
    let after_comm = &stat[stat.rfind(')').ok_or_else(bad)? + 1..];
    let fields: Vec<&str> = after_comm.split_whitespace().collect();
    // fields[0] is field 3 (state).
    let field = |n: usize| -> io::Result<u64> {
        fields
            .get(n - 3)
            .and_then(|f| f.parse().ok())
            .ok_or_else(bad)
    };
    Ok(ProcessStats {
        cpu_seconds: (field(14)? + field(15)?) as f64 / ticks_per_second,
        resident_bytes: field(24)? * page_bytes,
        virtual_bytes: field(23)?,
        open_fds,
        start_time_seconds: boot_time + field(22)? as f64 / ticks_per_second,
    })
}

/// The `btime` line of /proc/stat: boot time, seconds since the epoch.
fn boot_time_seconds(proc_stat: &str) -> io::Result<f64> {
    proc_stat
        .lines()
        .find_map(|l| l.strip_prefix("btime "))
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map(|v| v as f64)
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "no btime in /proc/stat"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_name_with_spaces_and_parentheses_does_not_shift_fields() {
        let stat = "42 (a) b (c) S 1 42 42 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 3 0 \
                    1000 8192000 300 18446744073709551615";
        let s = parse_stat(stat, 100.0, 4096, 1_700_000_000.0, 7).unwrap();
        assert_eq!(s.cpu_seconds, 3.0);
        assert_eq!(s.virtual_bytes, 8_192_000);
        assert_eq!(s.resident_bytes, 300 * 4096);
        assert_eq!(s.start_time_seconds, 1_700_000_010.0);
        assert_eq!(s.open_fds, 7);
    }

    #[test]
    fn a_truncated_stat_is_an_error() {
        assert!(parse_stat("42 (a) S 1 2", 100.0, 4096, 0.0, 0).is_err());
        assert!(boot_time_seconds("cpu 1 2\n").is_err());
        assert_eq!(boot_time_seconds("cpu 1\nbtime 17\n").unwrap(), 17.0);
    }

    #[test]
    fn this_process_reads_plausibly() {
        let s = ProcessStats::read().unwrap();
        assert!(s.resident_bytes > 0 && s.virtual_bytes >= s.resident_bytes);
        assert!(s.open_fds >= 3, "{s:?}");
        assert!(s.start_time_seconds > 1.5e9, "{s:?}");
    }
}
