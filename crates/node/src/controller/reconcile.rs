//! Reconciliation (Horus §3.2, §A.3) as a sans-IO state machine: status
//! reports ([`State::on_status`]) and the passing of time ([`State::tick`])
//! go in; liveness transitions and the control datagrams to send come out
//! as values. The control loop in `mod.rs` owns the socket and the sealing;
//! the admin API changes the topology between rounds.
//!
//! Every round compares each daemon's last report with the state the
//! controller wants and pushes a `configure` where they differ, at most every
//! `resend` per instance, so a lost push is re-sent until a report
//! acknowledges it.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use super::proto::{ControlMsg, DaemonStatus, InstanceDesired, InstanceStatus, RoleName};
use super::topology::{PoolEntry, RackEntry, Topology};

/// The kinds of node whose liveness the controller tracks, in the order of
/// the `kind` label of its metrics.
pub(super) const KINDS: [&str; 3] = ["spine", "leaf", "worker"];

/// A node that failed or came back since the previous round.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Transition {
    /// Index into [`KINDS`].
    pub kind: usize,
    pub up: bool,
    /// Where it is, for the log line.
    pub what: String,
}

/// What one reconciliation round decided.
#[derive(Debug, Default)]
pub(super) struct Round {
    /// Live nodes by kind ([`KINDS`]).
    pub live: [u64; 3],
    pub transitions: Vec<Transition>,
    /// Control messages to seal and send, in order. A destination not heard
    /// from in this controller's life has no epoch yet; the I/O loop skips it.
    pub pushes: Vec<(SocketAddr, ControlMsg)>,
}

pub(super) struct State {
    pub(super) topo: Topology,
    pub(super) state_path: Option<PathBuf>,
    pub(super) started: Instant,
    /// Last report per (daemon, pool).
    /// Keyed by role too: one daemon may host a pool's spine and its leaf.
    pub(super) reports: BTreeMap<(SocketAddr, u16, RoleName), InstanceStatus>,
    /// When each daemon was last heard from.
    pub(super) heard: BTreeMap<SocketAddr, Instant>,
    /// Liveness as last logged, to log and count transitions once.
    pub(super) daemon_up: BTreeMap<SocketAddr, bool>,
    pub(super) worker_up: BTreeMap<u64, bool>,
    pub(super) last_push: BTreeMap<(SocketAddr, u16, RoleName), Instant>,
    pub(super) timeout: Duration,
    pub(super) resend: Duration,
}

impl State {
    pub(super) fn alive(&self, a: SocketAddr, now: Instant) -> bool {
        let last = self.heard.get(&a).copied().unwrap_or(self.started);
        now.saturating_duration_since(last) <= self.timeout
    }

    /// The spine rack `r` of pool `p` is linked to: its preferred spine if
    /// alive, else the next live one (Horus §A.3: leaves of a failed spine
    /// are relinked).
    pub(super) fn linked_spine(&self, p: &PoolEntry, r: &RackEntry, now: Instant) -> usize {
        let n = p.spines.len();
        (0..n)
            .map(|k| (r.spine + k) % n)
            .find(|&s| self.alive(p.spines[s], now))
            .unwrap_or(r.spine % n)
    }

    /// Per worker of rack `r`: live as its leaf last reported (all
    /// non-removed ones before the first report).
    pub(super) fn worker_live(&self, pool: u16, r: &RackEntry) -> Vec<bool> {
        let rep = self.reports.get(&(r.leaf, pool, RoleName::Leaf));
        r.workers
            .iter()
            .enumerate()
            .map(|(j, w)| {
                !w.removed
                    && match rep {
                        Some(s) => s.live.get(j).copied().unwrap_or(false),
                        None => true,
                    }
            })
            .collect()
    }

    pub(super) fn rack_live_workers(&self, pool: u16, r: &RackEntry) -> u32 {
        self.worker_live(pool, r).iter().filter(|x| **x).count() as u32
    }

    pub(super) fn spine_desired(&self, p: &PoolEntry, s: usize, now: Instant) -> InstanceDesired {
        let mut enabled = Vec::new();
        let mut workers = Vec::new();
        for r in &p.racks {
            let w = self.rack_live_workers(p.id, r);
            enabled.push(
                !r.removed && self.alive(r.leaf, now) && self.linked_spine(p, r, now) == s && w > 0,
            );
            workers.push(w);
        }
        InstanceDesired {
            pool: p.id,
            downstream: p.racks.iter().map(|r| r.leaf).collect(),
            enabled,
            role: Some(RoleName::Spine),
            upstream: None,
            rack_workers: Some(workers),
        }
    }

    pub(super) fn leaf_desired(
        &self,
        p: &PoolEntry,
        r: &RackEntry,
        now: Instant,
    ) -> InstanceDesired {
        let linked = self.linked_spine(p, r, now);
        let mut up = vec![p.spines[linked]];
        up.extend(
            p.spines
                .iter()
                .enumerate()
                .filter(|&(s, a)| s != linked && self.alive(*a, now))
                .map(|(_, a)| *a),
        );
        InstanceDesired {
            pool: p.id,
            downstream: r.workers.iter().map(|w| w.addr).collect(),
            enabled: r.workers.iter().map(|w| !w.removed).collect(),
            role: Some(RoleName::Leaf),
            upstream: Some(up),
            rack_workers: None,
        }
    }

    /// A fresh state for `topo` at `now`: every daemon gets `timeout` from
    /// now before it counts as failed.
    pub(super) fn new(
        topo: Topology,
        state_path: Option<PathBuf>,
        now: Instant,
        timeout: Duration,
        resend: Duration,
    ) -> Self {
        State {
            heard: BTreeMap::new(),
            daemon_up: topo.daemons().into_iter().map(|a| (a, true)).collect(),
            topo,
            state_path,
            started: now,
            reports: BTreeMap::new(),
            worker_up: BTreeMap::new(),
            last_push: BTreeMap::new(),
            timeout,
            resend,
        }
    }

    /// An authentic status report from daemon `src` (the caller checked it
    /// is one of the topology's): the daemon is alive, and its instances'
    /// reports replace the previous ones. Returns how many instances named a
    /// pool the topology lacks (not kept).
    pub(super) fn on_status(&mut self, src: SocketAddr, status: DaemonStatus, now: Instant) -> u32 {
        self.heard.insert(src, now);
        let mut unknown = 0;
        for inst in status.instances {
            if self.topo.pools.iter().any(|p| p.id == inst.pool) {
                self.reports.insert((src, inst.pool, inst.role), inst);
            } else {
                unknown += 1;
            }
        }
        unknown
    }

    /// One reconciliation round at `now`: note failures and recoveries, then
    /// the pushes that bring every live instance whose report differs to the
    /// desired state.
    pub(super) fn tick(&mut self, now: Instant) -> Round {
        let mut live = [0u64; 3];
        let transitions = self.liveness(now, &mut live);
        let pushes = self.pushes(now);
        Round {
            live,
            transitions,
            pushes,
        }
    }

    /// Liveness transitions since the last round, each reported once;
    /// counts the live nodes by kind into `live`.
    fn liveness(&mut self, now: Instant, live: &mut [u64; 3]) -> Vec<Transition> {
        let mut events = Vec::new();
        let mut event = |kind: usize, up: bool, what: String| {
            events.push(Transition { kind, up, what });
        };
        let topo = self.topo.clone();
        for p in &topo.pools {
            for (s, &a) in p.spines.iter().enumerate() {
                let up = self.alive(a, now);
                live[0] += up as u64;
                if self.daemon_up.insert(a, up) != Some(up) {
                    event(0, up, format!("pool={} spine={s} addr={a}", p.id));
                }
            }
            for (r, rack) in p.racks.iter().enumerate() {
                if rack.removed {
                    continue;
                }
                let up = self.alive(rack.leaf, now);
                live[1] += up as u64;
                if self.daemon_up.insert(rack.leaf, up) != Some(up) {
                    event(1, up, format!("pool={} rack={r} leaf={}", p.id, rack.leaf));
                }
                let wl = self.worker_live(p.id, rack);
                for (j, w) in rack.workers.iter().enumerate() {
                    if w.removed {
                        continue;
                    }
                    // A dead leaf cannot vouch for its workers; keep their last state.
                    let wup = if up {
                        wl[j]
                    } else {
                        *self.worker_up.get(&w.id).unwrap_or(&true)
                    };
                    live[2] += wup as u64;
                    if self
                        .worker_up
                        .insert(w.id, wup)
                        .is_some_and(|old| old != wup)
                    {
                        event(
                            2,
                            wup,
                            format!(
                                "pool={} rack={r} node={j} id={} addr={}",
                                p.id, w.id, w.addr
                            ),
                        );
                    }
                }
            }
        }
        events
    }

    /// The configures and resyncs this round sends: to every live instance
    /// whose report differs from what the controller wants, at most every
    /// `resend` per instance.
    fn pushes(&mut self, now: Instant) -> Vec<(SocketAddr, ControlMsg)> {
        let mut sends: Vec<(SocketAddr, ControlMsg)> = Vec::new();
        for p in &self.topo.pools {
            for (s, &a) in p.spines.iter().enumerate() {
                if !self.alive(a, now) {
                    continue;
                }
                let d = self.spine_desired(p, s, now);
                // Never reported: wait for its first status.
                let Some(rep) = self.reports.get(&(a, p.id, RoleName::Spine)) else {
                    continue;
                };
                if matches(rep, &d) {
                    continue;
                }
                // Racks this push admits start from their leaf's truth.
                for (r, rack) in p.racks.iter().enumerate() {
                    if d.enabled[r] && !rep.live.get(r).copied().unwrap_or(false) {
                        sends.push((rack.leaf, ControlMsg::Resync { pool: p.id }));
                    }
                }
                sends.push((a, ControlMsg::Configure(d)));
            }
            for rack in &p.racks {
                if rack.removed || !self.alive(rack.leaf, now) {
                    continue;
                }
                let d = self.leaf_desired(p, rack, now);
                match self.reports.get(&(rack.leaf, p.id, RoleName::Leaf)) {
                    Some(rep) if !matches(rep, &d) => {
                        sends.push((rack.leaf, ControlMsg::Configure(d)))
                    }
                    _ => {}
                }
            }
        }
        sends.retain(|(dst, msg)| self.due(*dst, msg, now));
        sends
    }

    /// Rate limit of pushes: a configure goes out if none went to the same
    /// instance within `resend` (and is then recorded); a resync waits while
    /// the leaf's own configure is that recent, and is otherwise sent every
    /// round until the spine admits the rack.
    fn due(&mut self, dst: SocketAddr, msg: &ControlMsg, now: Instant) -> bool {
        let key = match msg {
            ControlMsg::Configure(d) => (dst, d.pool, d.role.unwrap_or(RoleName::Leaf)),
            // A resync waits for the leaf's own configure (same key).
            ControlMsg::Resync { pool } => (dst, *pool, RoleName::Leaf),
            ControlMsg::Status(_) => return false,
        };
        let recent = self
            .last_push
            .get(&key)
            .is_some_and(|t| now.saturating_duration_since(*t) < self.resend);
        if matches!(msg, ControlMsg::Resync { .. }) {
            return !recent;
        }
        if recent {
            return false;
        }
        self.last_push.insert(key, now);
        true
    }
}

/// Does a report already show what we want?
fn matches(rep: &InstanceStatus, d: &InstanceDesired) -> bool {
    if rep.downstream != d.downstream {
        return false;
    }
    match rep.role {
        RoleName::Leaf => {
            rep.enabled == d.enabled && d.upstream.as_ref().is_none_or(|u| *u == rep.upstream)
        }
        RoleName::Spine => {
            let w = d.rack_workers.as_deref().unwrap_or(&[]);
            rep.live == d.enabled
                && d.enabled
                    .iter()
                    .enumerate()
                    .all(|(r, &e)| !e || rep.rack_workers.get(r) == w.get(r))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::config::{PoolSpec, RackSpec};

    const TIMEOUT: Duration = Duration::from_millis(500);
    const RESEND: Duration = Duration::from_millis(100);

    fn a(p: u16) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], p))
    }
    const SPINE: u16 = 1;
    const LEAF: u16 = 10;

    /// Pool 7: one spine, one rack of two workers; `t0` is the start.
    fn state(t0: Instant) -> State {
        let topo = Topology::from_spec(&[PoolSpec {
            id: 7,
            spines: vec![a(SPINE)],
            racks: vec![RackSpec {
                leaf: a(LEAF),
                workers: vec![a(100), a(101)],
                spine: None,
            }],
        }]);
        State::new(topo, None, t0, TIMEOUT, RESEND)
    }

    fn status(role: RoleName, downstream: Vec<SocketAddr>, live: Vec<bool>) -> DaemonStatus {
        let n = downstream.len();
        let spine = role == RoleName::Spine;
        DaemonStatus {
            instances: vec![InstanceStatus {
                pool: 7,
                role,
                policy: "horus".into(),
                rack: 0,
                downstream,
                enabled: if spine { live.clone() } else { vec![true; n] },
                live: live.clone(),
                upstream: if spine { vec![] } else { vec![a(SPINE)] },
                rack_workers: if spine {
                    live.iter().map(|&l| if l { 2 } else { 0 }).collect()
                } else {
                    vec![]
                },
                idle: None,
            }],
        }
    }

    fn leaf_report(live: Vec<bool>) -> DaemonStatus {
        status(RoleName::Leaf, vec![a(100), a(101)], live)
    }

    fn spine_report(admitted: bool) -> DaemonStatus {
        status(RoleName::Spine, vec![a(LEAF)], vec![admitted])
    }

    fn ms(t0: Instant, ms: u64) -> Instant {
        t0 + Duration::from_millis(ms)
    }

    fn configure_to(round: &Round, dst: u16) -> Option<&InstanceDesired> {
        round.pushes.iter().find_map(|(d, m)| match m {
            ControlMsg::Configure(c) if *d == a(dst) => Some(c),
            _ => None,
        })
    }

    fn resyncs(round: &Round) -> usize {
        round
            .pushes
            .iter()
            .filter(|(d, m)| *d == a(LEAF) && matches!(m, ControlMsg::Resync { pool: 7 }))
            .count()
    }

    #[test]
    fn nothing_is_pushed_to_a_daemon_that_never_reported() {
        let t0 = Instant::now();
        let mut st = state(t0);
        let r = st.tick(ms(t0, 20));
        assert!(r.pushes.is_empty(), "{:?}", r.pushes);
        assert!(r.transitions.is_empty());
        assert_eq!(r.live, [1, 1, 2]);
    }

    #[test]
    fn a_configure_is_resent_until_a_report_acknowledges_it() {
        let t0 = Instant::now();
        let mut st = state(t0);
        assert_eq!(st.on_status(a(LEAF), leaf_report(vec![true, true]), t0), 0);
        assert_eq!(st.on_status(a(SPINE), spine_report(false), t0), 0);
        // The spine has not admitted the rack: admit it with 1/w of two
        // workers, and have the leaf resync its state to it.
        let r = st.tick(ms(t0, 20));
        let c = configure_to(&r, SPINE).expect("spine configure");
        assert_eq!(c.enabled, vec![true]);
        assert_eq!(c.rack_workers, Some(vec![2]));
        assert_eq!(resyncs(&r), 1);
        assert!(
            configure_to(&r, LEAF).is_none(),
            "the leaf's report matches"
        );
        // Within `resend` the configure is held back; the resync is not.
        let r = st.tick(ms(t0, 40));
        assert!(configure_to(&r, SPINE).is_none());
        assert_eq!(resyncs(&r), 1);
        // Lost: sent again once `resend` passed.
        let r = st.tick(ms(t0, 120));
        assert!(configure_to(&r, SPINE).is_some());
        // Acknowledged by the spine's next report: nothing more to send.
        st.on_status(a(SPINE), spine_report(true), ms(t0, 130));
        st.on_status(a(LEAF), leaf_report(vec![true, true]), ms(t0, 130));
        let r = st.tick(ms(t0, 240));
        assert!(r.pushes.is_empty(), "{:?}", r.pushes);
    }

    #[test]
    fn a_silent_leaf_is_failed_after_the_timeout_and_its_rack_dropped() {
        let t0 = Instant::now();
        let mut st = state(t0);
        st.on_status(a(LEAF), leaf_report(vec![true, true]), t0);
        st.on_status(a(SPINE), spine_report(true), t0);
        assert!(st.tick(ms(t0, 20)).pushes.is_empty());
        // The spine keeps reporting; the leaf falls silent at t0.
        st.on_status(a(SPINE), spine_report(true), ms(t0, 400));
        let r = st.tick(ms(t0, 500));
        assert!(
            r.transitions.is_empty(),
            "exactly the timeout is still alive"
        );
        let r = st.tick(ms(t0, 501));
        assert_eq!(
            r.transitions,
            vec![Transition {
                kind: 1,
                up: false,
                what: format!("pool=7 rack=0 leaf={}", a(LEAF)),
            }]
        );
        assert_eq!(r.live, [1, 0, 2], "a dead leaf's workers keep their state");
        let c = configure_to(&r, SPINE).expect("drop the rack at the spine");
        assert_eq!(c.enabled, vec![false]);
        assert!(configure_to(&r, LEAF).is_none(), "no push to a dead leaf");
        // Reported once, not every round.
        assert!(st.tick(ms(t0, 520)).transitions.is_empty());
        // Heard from again: back, and re-admitted (with a resync).
        st.on_status(a(LEAF), leaf_report(vec![true, true]), ms(t0, 700));
        st.on_status(a(SPINE), spine_report(false), ms(t0, 700));
        let r = st.tick(ms(t0, 710));
        assert_eq!(r.transitions.len(), 1);
        assert!(r.transitions[0].up && r.transitions[0].kind == 1);
        assert_eq!(configure_to(&r, SPINE).unwrap().enabled, vec![true]);
        assert_eq!(resyncs(&r), 1);
    }

    #[test]
    fn a_failed_worker_changes_the_racks_weight_and_a_recovered_one_restores_it() {
        let t0 = Instant::now();
        let mut st = state(t0);
        st.on_status(a(LEAF), leaf_report(vec![true, true]), t0);
        st.on_status(a(SPINE), spine_report(true), t0);
        assert!(st.tick(ms(t0, 20)).pushes.is_empty());
        // The leaf's heartbeat detector found worker 1 silent (§A.3).
        st.on_status(a(LEAF), leaf_report(vec![true, false]), ms(t0, 30));
        let r = st.tick(ms(t0, 40));
        assert_eq!(r.transitions.len(), 1);
        let t = &r.transitions[0];
        assert_eq!((t.kind, t.up), (2, false));
        assert!(t.what.contains("node=1"), "{}", t.what);
        assert_eq!(r.live, [1, 1, 1]);
        assert_eq!(
            configure_to(&r, SPINE).unwrap().rack_workers,
            Some(vec![1]),
            "the spine's 1/w follows the live workers (§A.2)"
        );
        // The spine applied it; then the worker is back: counted once, and
        // the weight restored.
        let mut applied = spine_report(true);
        applied.instances[0].rack_workers = vec![1];
        st.on_status(a(SPINE), applied, ms(t0, 50));
        assert!(st.tick(ms(t0, 200)).pushes.is_empty(), "acknowledged");
        st.on_status(a(LEAF), leaf_report(vec![true, true]), ms(t0, 300));
        let r = st.tick(ms(t0, 310));
        assert_eq!(r.transitions.len(), 1);
        assert!(r.transitions[0].up);
        assert_eq!(r.live, [1, 1, 2]);
        assert_eq!(configure_to(&r, SPINE).unwrap().rack_workers, Some(vec![2]));
    }

    #[test]
    fn reports_for_unknown_pools_are_counted_and_not_kept() {
        let t0 = Instant::now();
        let mut st = state(t0);
        let mut s = leaf_report(vec![true, true]);
        s.instances[0].pool = 9;
        assert_eq!(st.on_status(a(LEAF), s, t0), 1);
        assert!(st.reports.is_empty());
        assert_eq!(st.heard.get(&a(LEAF)), Some(&t0), "still a keep-alive");
    }
}
