//! Per-instance reply routes: where each application's replies go.
//!
//! A worker cannot address the client in a reply (it has no client IP header
//! to reuse), so every scheduler instance remembers, per application id (the
//! upper half of a task id, Horus §3.2; RackSched's REQ_ID client id, §3.2),
//! the address that application's tasks came from. Only the caller decides
//! whether a source may teach a route (switch/dispatch.rs: configured clients and
//! upstream spines always, anyone at an open instance); this table bounds
//! the memory and keeps it usable under a flood of unknown application ids:
//!
//! * **Capacity** is allocated once and never grows, so learning a route
//!   never allocates on the packet path.
//! * **Idle expiry.** A route no task has refreshed for `idle_ns` is
//!   forgotten, so a table filled once (by a flood, or by clients long gone)
//!   empties again instead of refusing every new application until restart.
//!   Expired routes are swept when a new application finds the table full,
//!   at most once per [`SWEEP_NS`], so the sweep's O(capacity) cost cannot be
//!   triggered per packet.
//! * **Per-source cap.** A capped source (every client; upstream spines
//!   are not capped) holds at most `per_source` routes per host (IP
//!   address, whatever its ports), so one host's made-up application ids,
//!   from one port or thousands, cannot take the room another client needs.
//! * **Ownership.** An application's route belongs to the host that taught
//!   it until it goes idle: a task of that application from another capped
//!   host is refused ([`RouteRefused::Owned`]), so a client cannot take
//!   another's replies by using its application id. The same host may move
//!   it (a client restarted on a new port); an uncapped source (an upstream
//!   spine) always may (a leaf relinked to another spine). Hosts, not
//!   ports, are what the network can tell apart: two processes on one host
//!   are one client here.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};

/// Why a route was not learned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RouteRefused {
    /// The table is full of routes still in use and the application is new.
    Full,
    /// The source's host already holds its share of routes.
    SourceLimit,
    /// The application's route is in use by another host.
    Owned,
}

/// Least interval between two sweeps of expired routes, ns.
pub const SWEEP_NS: u64 = 100_000_000;

#[derive(Clone, Copy)]
struct Route {
    src: SocketAddr,
    /// Last time a task of the application taught or confirmed the route.
    seen_ns: u64,
    /// Counted against `src`'s per-source share.
    capped: bool,
}

pub struct ReplyRoutes {
    /// Looked up by key only; its iteration order never reaches an output.
    by_app: HashMap<u32, Route>,
    /// Routes held per capped host (hosts with none are removed).
    per_src: HashMap<IpAddr, usize>,
    capacity: usize,
    per_source: usize,
    idle_ns: u64,
    next_sweep_ns: u64,
}

impl ReplyRoutes {
    /// At most `capacity` routes, `per_source` of them per capped source,
    /// each forgotten after `idle_ns` without a task (0: never).
    pub fn new(capacity: usize, per_source: usize, idle_ns: u64) -> Self {
        ReplyRoutes {
            by_app: HashMap::with_capacity(capacity),
            per_src: HashMap::with_capacity(capacity),
            capacity,
            per_source: per_source.max(1),
            idle_ns,
            next_sweep_ns: 0,
        }
    }

    /// Replies of `app` go to `src` from now on. `capped`: `src` is an
    /// unprivileged source, held to its per-source share. A new application
    /// beyond the capacity is refused rather than evicting a route still in
    /// use, so an accepted task never loses its reply path.
    #[inline]
    pub fn learn(
        &mut self,
        app: u32,
        src: SocketAddr,
        capped: bool,
        now: u64,
    ) -> Result<(), RouteRefused> {
        if let Some(known) = self.by_app.get(&app).copied() {
            if known.src == src && known.capped == capped {
                self.by_app.insert(
                    app,
                    Route {
                        seen_ns: now,
                        ..known
                    },
                );
                return Ok(());
            }
            // Another client host may not take a route still in use. A
            // route an upstream spine taught (uncapped) is no client's: when
            // that spine dies, its clients submit here directly and must be
            // able to take it over.
            let idle = self.idle_ns > 0 && now.saturating_sub(known.seen_ns) > self.idle_ns;
            if capped && known.capped && known.src.ip() != src.ip() && !idle {
                return Err(RouteRefused::Owned);
            }
            // The application moved (its host, or an upstream spine): the
            // new source must have room for it like any new route.
            if capped && self.held(src) >= self.per_source {
                return Err(RouteRefused::SourceLimit);
            }
            self.release(known);
            self.insert(app, src, capped, now);
            return Ok(());
        }
        if capped && self.held(src) >= self.per_source {
            return Err(RouteRefused::SourceLimit);
        }
        if self.by_app.len() >= self.capacity {
            if now >= self.next_sweep_ns {
                self.expire(now);
            }
            if self.by_app.len() >= self.capacity {
                return Err(RouteRefused::Full);
            }
        }
        self.insert(app, src, capped, now);
        Ok(())
    }

    #[inline]
    pub fn get(&self, app: u32) -> Option<SocketAddr> {
        self.by_app.get(&app).map(|r| r.src)
    }

    /// Forgets every route idle for longer than `idle_ns`.
    pub fn expire(&mut self, now: u64) {
        self.next_sweep_ns = now.saturating_add(SWEEP_NS);
        if self.idle_ns == 0 {
            return;
        }
        let idle = self.idle_ns;
        let per_src = &mut self.per_src;
        self.by_app.retain(|_, r| {
            let keep = now.saturating_sub(r.seen_ns) <= idle;
            if !keep && r.capped {
                release(per_src, r.src);
            }
            keep
        });
    }

    fn held(&self, src: SocketAddr) -> usize {
        self.per_src.get(&src.ip()).copied().unwrap_or(0)
    }

    fn insert(&mut self, app: u32, src: SocketAddr, capped: bool, now: u64) {
        if capped {
            *self.per_src.entry(src.ip()).or_insert(0) += 1;
        }
        self.by_app.insert(
            app,
            Route {
                src,
                seen_ns: now,
                capped,
            },
        );
    }

    fn release(&mut self, r: Route) {
        if r.capped {
            release(&mut self.per_src, r.src);
        }
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.by_app.len()
    }
}

fn release(per_src: &mut HashMap<IpAddr, usize>, src: SocketAddr) {
    if let Some(n) = per_src.get_mut(&src.ip()) {
        *n -= 1;
        if *n == 0 {
            per_src.remove(&src.ip());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    /// Host `n` (each its own IP address).
    fn a(n: u16) -> SocketAddr {
        SocketAddr::from(([10, 0, (n >> 8) as u8, n as u8], 7000))
    }

    fn port(host: u16, port: u16) -> SocketAddr {
        SocketAddr::new(a(host).ip(), port)
    }

    #[test]
    fn a_route_in_use_stays_with_its_host() {
        let mut r = ReplyRoutes::new(8, 8, 10 * S);
        assert_eq!(r.learn(1, a(1), true, 0), Ok(()));
        // Another client host using application 1 is refused...
        assert_eq!(r.learn(1, a(2), true, S), Err(RouteRefused::Owned));
        assert_eq!(r.get(1), Some(a(1)));
        // ...the same host on a new port (a restarted client) is not...
        assert_eq!(r.learn(1, port(1, 9), true, S), Ok(()));
        assert_eq!(r.get(1), Some(port(1, 9)));
        // ...nor an upstream spine (uncapped); a spine's route is no client
        // host's, so a client that submits here directly (its spine died)
        // takes it back, and then holds it against other hosts...
        assert_eq!(r.learn(1, a(3), false, S), Ok(()));
        assert_eq!(r.learn(1, a(1), true, 2 * S), Ok(()));
        assert_eq!(r.learn(1, a(2), true, 2 * S), Err(RouteRefused::Owned));
        // ...and once the route went idle, anyone may take it.
        assert_eq!(r.learn(1, a(2), true, 13 * S), Ok(()));
        assert_eq!(r.get(1), Some(a(2)));
        assert_eq!(r.held(a(1)), 0);
    }

    #[test]
    fn one_host_is_one_source_whatever_its_ports() {
        let mut r = ReplyRoutes::new(64, 4, 10 * S);
        for p in 0..80u16 {
            for app in 0..64 {
                let _ = r.learn(u32::from(p) * 64 + app, port(1, p), true, 0);
            }
        }
        assert_eq!(r.len(), 4);
        assert_eq!(r.learn(1_000_000, a(2), true, 0), Ok(()));
    }

    #[test]
    fn learns_moves_and_refuses_new_apps_when_full() {
        let mut r = ReplyRoutes::new(2, 2, 0);
        assert_eq!(r.learn(1, a(1), false, 0), Ok(()));
        assert_eq!(r.learn(2, a(2), false, 0), Ok(()));
        assert_eq!(r.learn(3, a(3), false, 0), Err(RouteRefused::Full));
        assert_eq!(r.get(3), None);
        // A known application may still move (an upstream spine decided).
        assert_eq!(r.learn(1, a(9), false, 0), Ok(()));
        assert_eq!(r.get(1), Some(a(9)));
        assert_eq!(r.get(2), Some(a(2)));
        assert_eq!(r.len(), 2);
    }

    #[test]
    fn one_source_cannot_take_the_room_of_another() {
        let mut r = ReplyRoutes::new(8, 3, 10 * S);
        for app in 0..3 {
            assert_eq!(r.learn(app, a(1), true, 0), Ok(()));
        }
        for app in 3..10_000 {
            assert_eq!(r.learn(app, a(1), true, 0), Err(RouteRefused::SourceLimit));
        }
        // A known application of the capped source is still refreshed.
        assert_eq!(r.learn(0, a(1), true, 1), Ok(()));
        // A newcomer is served; privileged sources are not capped.
        assert_eq!(r.learn(10_000, a(2), true, 1), Ok(()));
        for app in 20_000..20_004 {
            assert_eq!(r.learn(app, a(3), false, 1), Ok(()));
        }
        assert_eq!(r.len(), 8);
        // Another host's route in use cannot be taken.
        assert_eq!(r.learn(10_000, a(1), true, 1), Err(RouteRefused::Owned));
        // Moving a route onto a host at its share is refused too.
        assert_eq!(
            r.learn(10_000, port(2, 1), false, 1),
            Ok(()),
            "an upstream spine takes it"
        );
        assert_eq!(
            r.learn(10_000, a(1), true, 11 * S),
            Err(RouteRefused::SourceLimit)
        );
    }

    /// A leaf's route taught by its spine, which then died: the client that
    /// now submits to the leaf directly takes it over (before, its task was
    /// refused `route_owned` while the dead spine's route looked in use).
    #[test]
    fn a_client_takes_over_a_route_its_dead_spine_taught() {
        let mut r = ReplyRoutes::new(8, 3, 10 * S);
        assert_eq!(r.learn(7, a(1), false, 0), Ok(()), "the spine teaches it");
        assert_eq!(r.learn(7, a(2), true, 1), Ok(()), "the client takes it");
        assert_eq!(r.get(7), Some(a(2)));
        // Once a client host holds it, another client host may not.
        assert_eq!(r.learn(7, a(3), true, 2), Err(RouteRefused::Owned));
    }

    #[test]
    fn idle_routes_expire_so_a_full_table_recovers() {
        let mut r = ReplyRoutes::new(4, 4, S);
        for app in 0..4 {
            assert_eq!(r.learn(app, a(app as u16), true, 0), Ok(()));
        }
        assert_eq!(r.learn(9, a(9), true, S / 2), Err(RouteRefused::Full));
        // App 0 keeps its route by sending tasks; the others go idle.
        assert_eq!(r.learn(0, a(0), true, S), Ok(()));
        assert_eq!(r.learn(9, a(9), true, S + S / 2), Ok(()));
        assert_eq!(r.get(0), Some(a(0)));
        assert_eq!(r.get(1), None);
        assert_eq!(r.get(9), Some(a(9)));
        // Their per-source shares were released with them.
        assert_eq!(r.held(a(1)), 0);
        assert_eq!(r.held(a(0)), 1);
    }

    #[test]
    fn sweeps_are_rate_limited() {
        let mut r = ReplyRoutes::new(1, 1, 1);
        assert_eq!(r.learn(1, a(1), true, 0), Ok(()));
        assert_eq!(r.learn(2, a(2), true, 0), Err(RouteRefused::Full));
        // Expired, but the last sweep was less than SWEEP_NS ago.
        assert_eq!(r.learn(2, a(2), true, 10), Err(RouteRefused::Full));
        assert_eq!(r.learn(2, a(2), true, SWEEP_NS), Ok(()));
    }
}
