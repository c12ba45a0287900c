//! Sealed tasks in the runtime (wire format: `netsched_proto::seal`,
//! "Sealed tasks"): a leaf seals every task it forwards to a worker, and a
//! worker with the key runs only sealed, fresh ones.
//!
//! The worker side is [`TaskWindows`]: per sender (the leaf's address and
//! the sealer's stream, the low bit of `seq`) an IPsec-style sliding window
//! of [`WINDOW`] sequence numbers (RFC 4303 §3.4.3): a `seq` above the
//! highest accepted slides the window; one inside it is accepted once;
//! one below it is a replay. Windows tolerate the reordering of a leaf's
//! threads and of the network, which a "strictly above the last" rule
//! would turn into drops.
//!
//! The table is soft state a hostile host cannot grow: an entry is created
//! only for a task whose tag verified (a key holder's), there are at most
//! [`MAX_SENDERS`] entries, and an entry unused for [`IDLE_EXPIRY`] goes.
//! Forgetting a window must not reopen the sequence numbers it refused, so
//! the table keeps a floor per stream, the highest `seq` of any window of
//! that stream it dropped: a new window takes only a `seq` above it. Every
//! sealer's sequence numbers start at the wall clock in ns and grow by 2
//! per task (crate::notice_auth), so a restarted leaf starts above the
//! floor (its predecessor would have had to seal more than 5·10^8 tasks a
//! second to get ahead of the clock).

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use netsched_proto::seal::SealError;

/// Sequence numbers a window remembers below its highest (a u64 bitmap).
pub const WINDOW: u64 = 64;

/// Senders one worker node remembers at once: its leaf's two sealers, with
/// room for a restarted leaf on a new port.
pub const MAX_SENDERS: usize = 8;

/// A window unused this long is forgotten.
pub const IDLE_EXPIRY: Duration = Duration::from_secs(60);

/// One sender's window: the highest accepted `seq` and which of the
/// [`WINDOW`] below it (bit k: `top - k`) were accepted.
#[derive(Clone, Copy, Debug)]
struct Window {
    from: SocketAddr,
    stream: u64,
    top: u64,
    seen: u64,
    used: Instant,
}

impl Window {
    fn accept(&mut self, seq: u64) -> Result<(), SealError> {
        if seq > self.top {
            let shift = seq - self.top;
            self.seen = if shift >= WINDOW {
                0
            } else {
                self.seen << shift
            };
            self.seen |= 1;
            self.top = seq;
            return Ok(());
        }
        let back = self.top - seq;
        if back >= WINDOW || self.seen & (1 << back) != 0 {
            return Err(SealError::Replayed);
        }
        self.seen |= 1 << back;
        Ok(())
    }
}

/// One worker node's replay windows (module docs).
#[derive(Debug, Default)]
pub struct TaskWindows {
    windows: Vec<Window>,
    /// Per stream, the highest `seq` of any window forgotten (expired or
    /// evicted).
    floor: [u64; 2],
}

impl TaskWindows {
    /// Accepts the verified `seq` from `from` at `now`, or refuses it as
    /// a replay.
    pub fn accept(&mut self, from: SocketAddr, seq: u64, now: Instant) -> Result<(), SealError> {
        let stream = seq & 1;
        self.expire(now);
        if let Some(w) = self
            .windows
            .iter_mut()
            .find(|w| w.from == from && w.stream == stream)
        {
            w.accept(seq)?;
            w.used = now;
            return Ok(());
        }
        if seq <= self.floor[stream as usize] {
            return Err(SealError::Replayed);
        }
        if self.windows.len() >= MAX_SENDERS {
            // The least recently used sender goes (its seq joins the floor).
            let (k, _) = self
                .windows
                .iter()
                .enumerate()
                .min_by_key(|(_, w)| w.used)
                .expect("a full table is not empty");
            let w = self.windows.swap_remove(k);
            let f = &mut self.floor[w.stream as usize];
            *f = (*f).max(w.top);
        }
        self.windows.push(Window {
            from,
            stream,
            top: seq,
            seen: 1,
            used: now,
        });
        Ok(())
    }

    fn expire(&mut self, now: Instant) {
        let floor = &mut self.floor;
        self.windows.retain(|w| {
            let keep = now.saturating_duration_since(w.used) < IDLE_EXPIRY;
            if !keep {
                let f = &mut floor[w.stream as usize];
                *f = (*f).max(w.top);
            }
            keep
        });
    }

    /// Senders remembered now.
    pub fn len(&self) -> usize {
        self.windows.len()
    }

    pub fn is_empty(&self) -> bool {
        self.windows.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(port: u16) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], port))
    }

    #[test]
    fn a_window_takes_reordered_seqs_once_and_refuses_old_ones() {
        let t = Instant::now();
        let mut w = TaskWindows::default();
        let a = addr(1);
        for seq in [1000, 1004, 1002, 998, 1006] {
            assert_eq!(w.accept(a, seq, t), Ok(()), "{seq}");
        }
        for seq in [1000, 1004, 1002, 998, 1006] {
            assert_eq!(w.accept(a, seq, t), Err(SealError::Replayed), "{seq}");
        }
        // Below the window: refused even though never seen.
        assert_eq!(w.accept(a, 1006 - 2 * WINDOW, t), Err(SealError::Replayed));
        assert_eq!(w.accept(a, 1006 - WINDOW + 2, t), Ok(()));
        // The other stream (odd: the XDP program) has a window of its own.
        assert_eq!(w.accept(a, 51, t), Ok(()));
        assert_eq!(w.accept(a, 51, t), Err(SealError::Replayed));
        assert_eq!(w.len(), 2);
        // A jump far ahead clears the bitmap.
        assert_eq!(w.accept(a, 10_000, t), Ok(()));
        assert_eq!(w.accept(a, 9_999, t), Ok(()));
        assert_eq!(w.accept(a, 10_000, t), Err(SealError::Replayed));
    }

    #[test]
    fn the_table_is_bounded_and_forgetting_does_not_reopen_old_seqs() {
        let t = Instant::now();
        let mut w = TaskWindows::default();
        for p in 0..20u16 {
            assert_eq!(w.accept(addr(p), 1000 + 2 * u64::from(p), t), Ok(()));
            assert!(w.len() <= MAX_SENDERS);
        }
        // Port 0's window was evicted: its old seq stays refused.
        assert_eq!(w.accept(addr(0), 1000, t), Err(SealError::Replayed));
        // Expiry: after IDLE_EXPIRY every window goes, the floor stays.
        let later = t + IDLE_EXPIRY + Duration::from_secs(1);
        assert_eq!(w.accept(addr(19), 1038, later), Err(SealError::Replayed));
        assert_eq!(w.len(), 0);
        assert_eq!(w.accept(addr(19), 1040, later), Ok(()));
        assert_eq!(w.len(), 1);
    }
}
