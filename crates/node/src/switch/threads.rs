//! `threads > 1`: several receive threads in front of one daemon, each with
//! its own `SO_REUSEPORT` socket on the listen address.
//!
//! The data planes are not split: a Horus leaf is one state machine (one
//! idle list, one set of load counters, Horus §3.3-3.4), and a data plane
//! per thread would be a different policy. So every thread hands its batch
//! to the one daemon under a mutex, and only the two system calls, the
//! kernel's part of each datagram (95 % of the cycles, docs/benchmarks.md),
//! run outside it: `recvmmsg` on the thread's socket before taking the
//! lock, `sendmmsg` of what the batch produced after releasing it. The
//! datagrams of one sender always reach the same socket (the kernel hashes
//! the flow), so one sender's datagrams keep their order; those of
//! different senders interleave as they would through a switch's ports.

use std::io;
use std::net::{SocketAddr, ToSocketAddrs, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};

use super::{flush_counted, idle_or_coalesce, SendSlots, SwitchDaemon, Timers, RX_SLOT, TX_SLOT};
use crate::config::SwitchConfig;
use crate::error::Error;
use crate::net;

impl SwitchDaemon {
    /// Binds `cfg.listen` (with `SO_REUSEPORT` and `cfg.threads` sockets if
    /// `threads > 1`) and builds the daemon on the first socket; the others
    /// are for [`run_threaded`](Self::run_threaded).
    pub fn bind_threads(cfg: &SwitchConfig) -> Result<(Self, Vec<UdpSocket>), Error> {
        if cfg.threads <= 1 {
            return Ok((Self::bind(cfg)?, Vec::new()));
        }
        let addr: SocketAddr = cfg
            .listen
            .to_socket_addrs()
            .map_err(|e| Error::io(&cfg.listen, e))?
            .next()
            .ok_or_else(|| {
                Error::io(
                    &cfg.listen,
                    io::Error::new(io::ErrorKind::InvalidInput, "no address"),
                )
            })?;
        let mut socks = net::bind_reuseport(addr, cfg.threads).map_err(|e| Error::io(addr, e))?;
        let first = socks.remove(0);
        Ok((Self::new(cfg, first)?, socks))
    }

    /// Runs until `stop`: this thread on the daemon's socket (and the
    /// periodic duties), one more thread per socket of `extra` (bound to the
    /// same address with `SO_REUSEPORT`). With no `extra`, exactly
    /// [`run`](Self::run).
    pub fn run_threaded(&mut self, extra: Vec<UdpSocket>, stop: &AtomicBool) -> io::Result<()> {
        if extra.is_empty() {
            return self.run(stop);
        }
        for s in &extra {
            net::prepare(s)?;
            if self.busy_poll_us > 0 {
                net::set_busy_poll(s, self.busy_poll_us)?;
            }
        }
        let own = self.sock.try_clone()?;
        let shared = Mutex::new(&mut *self);
        let result = std::thread::scope(|scope| {
            let handles: Vec<_> = extra
                .iter()
                .map(|s| scope.spawn(|| serve(&shared, s, stop, false)))
                .collect();
            let mut result = serve(&shared, &own, stop, true);
            // One thread failing stops them all.
            stop.store(true, Ordering::Relaxed);
            for h in handles {
                let r = h.join().unwrap_or_else(|_| {
                    Err(io::Error::other("a receive thread of the daemon panicked"))
                });
                result = result.and(r);
            }
            result
        });
        self.publish_gauges();
        result
    }
}

fn lock<'a, 'd>(shared: &'a Mutex<&'d mut SwitchDaemon>) -> MutexGuard<'a, &'d mut SwitchDaemon> {
    // A panic of another thread mid-batch leaves no invariant half-made
    // that matters more than stopping; carry on to let `stop` end the run.
    shared.lock().unwrap_or_else(|e| e.into_inner())
}

/// One receive thread: its own buffers and socket, the daemon's data
/// planes under the lock. `duties`: this thread also runs the periodic
/// duties (one thread does).
fn serve(
    shared: &Mutex<&mut SwitchDaemon>,
    sock: &UdpSocket,
    stop: &AtomicBool,
    duties: bool,
) -> io::Result<()> {
    let (batch, tx_cap, coalesce, registry, slots) = {
        let d = lock(shared);
        let slots = SendSlots::of(&d.slots);
        (
            d.rxb.capacity(),
            d.txb.capacity(),
            d.coalesce,
            d.registry.clone(),
            slots,
        )
    };
    let mut rxb = net::Mmsg::new(batch, RX_SLOT);
    let mut txb = net::Mmsg::new(tx_cap, TX_SLOT);
    let mut timers = Timers::default();
    while !stop.load(Ordering::Relaxed) {
        let got = rxb.recv(sock)?;
        if got == 0 && !duties {
            // Nothing to hand over: park without touching the lock.
            idle_or_coalesce(sock, got, batch, coalesce);
            continue;
        }
        let mut d = lock(shared);
        if got > 0 {
            // The batch's sends queue in this thread's buffer, so they leave
            // from its socket after the lock is released.
            std::mem::swap(&mut d.txb, &mut txb);
            d.handle_received(&rxb, got);
            std::mem::swap(&mut d.txb, &mut txb);
        }
        if duties {
            d.tick(&mut timers);
        }
        drop(d);
        flush_counted(&mut txb, sock, &registry, slots);
        idle_or_coalesce(sock, got, batch, coalesce);
    }
    Ok(())
}
