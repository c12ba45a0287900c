//! Per-instance reply routes: where each application's replies go.
//!
//! A worker cannot address the client in a reply (it has no client IP header
//! to reuse), so every scheduler instance remembers, per application id (the
//! upper half of a task id, Horus §3.2; RackSched's REQ_ID client id, §3.2),
//! the address that application's tasks came from. Only the caller decides
//! whether a source may teach a route (switch.rs: configured clients and
//! upstream spines always, anyone at an open instance); this table only
//! bounds the memory: it is allocated once and never grows, so learning a
//! route never allocates on the packet path.

use std::collections::HashMap;
use std::net::SocketAddr;

/// The table is full and the application is new: the task is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RoutesFull;

pub struct ReplyRoutes {
    /// Looked up by key only; its iteration order never reaches an output.
    by_app: HashMap<u32, SocketAddr>,
    capacity: usize,
}

impl ReplyRoutes {
    pub fn with_capacity(capacity: usize) -> Self {
        ReplyRoutes {
            by_app: HashMap::with_capacity(capacity),
            capacity,
        }
    }

    /// Replies of `app` go to `src` from now on. A new application beyond
    /// the capacity is refused rather than evicting a route in use, so an
    /// accepted task never loses its reply path.
    #[inline]
    pub fn learn(&mut self, app: u32, src: SocketAddr) -> Result<(), RoutesFull> {
        if let Some(known) = self.by_app.get_mut(&app) {
            *known = src;
            return Ok(());
        }
        if self.by_app.len() >= self.capacity {
            return Err(RoutesFull);
        }
        self.by_app.insert(app, src);
        Ok(())
    }

    #[inline]
    pub fn get(&self, app: u32) -> Option<SocketAddr> {
        self.by_app.get(&app).copied()
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.by_app.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a(port: u16) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], port))
    }

    #[test]
    fn learns_moves_and_refuses_new_apps_when_full() {
        let mut r = ReplyRoutes::with_capacity(2);
        assert_eq!(r.learn(1, a(1)), Ok(()));
        assert_eq!(r.learn(2, a(2)), Ok(()));
        assert_eq!(r.learn(3, a(3)), Err(RoutesFull));
        assert_eq!(r.get(3), None);
        // A known application may still move (a permitted source decided).
        assert_eq!(r.learn(1, a(9)), Ok(()));
        assert_eq!(r.get(1), Some(a(9)));
        assert_eq!(r.get(2), Some(a(2)));
        assert_eq!(r.len(), 2);
    }
}
