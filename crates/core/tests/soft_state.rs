//! Soft state (`HorusOptions::soft_state_ns`): a forged or lost notice about
//! a rack ends within the refresh interval, and a spine forgets a rack that
//! stopped refreshing, without touching the per-task path.

use netsched_core::dataplane::{Action, DataPlane, Dispatch, Input, Notice, Outbox, TaskMeta};
use netsched_core::horus::{ConnTableConfig, HorusLeaf, HorusOptions, HorusSpine};
use netsched_core::Control;
use netsched_core::Nanos;

const BOUND: u64 = 1_000_000_000;

fn opts(soft: u64) -> HorusOptions {
    HorusOptions {
        soft_state_ns: soft,
        ..HorusOptions::default()
    }
}

fn task(id: u64) -> TaskMeta {
    TaskMeta::single(id)
}

/// Feeds `input` and its resubmissions; returns the racks tasks went to.
fn feed(spine: &mut HorusSpine, now: u64, input: Input) -> Vec<u32> {
    let mut racks = Vec::new();
    let mut next = Some(input);
    while let Some(i) = next.take() {
        let mut out = Outbox::new();
        spine.handle(Nanos::new(now), i, &mut out);
        for a in out.drain() {
            match a {
                Action::Dispatch(Dispatch { node, .. }) => racks.push(node),
                Action::Resubmit(r) => next = Some(Input::Resubmit(r)),
                _ => {}
            }
        }
    }
    racks
}

fn as_input(rack: u32, n: Notice) -> Input {
    match n {
        Notice::IdleAdd => Input::IdleAdd { node: rack },
        Notice::IdleRemove => Input::IdleRemove { node: rack },
        Notice::SlotAdd => Input::SlotAdd { node: rack },
        Notice::LoadUpdate(load) => Input::LoadUpdate { node: rack, load },
    }
}

/// The two forged notices of the runtime attack: rack 1 "busy" and at the
/// highest load. Rack 0 is busy too, but honestly so (load 2 per worker).
fn forged(spine: &mut HorusSpine, now: u64) {
    feed(spine, now, Input::IdleRemove { node: 0 });
    feed(
        spine,
        now,
        Input::LoadUpdate {
            node: 0,
            load: 2 << 16,
        },
    );
    feed(spine, now, Input::IdleRemove { node: 1 });
    feed(
        spine,
        now,
        Input::LoadUpdate {
            node: 1,
            load: u32::MAX >> 1,
        },
    );
}

fn share_of_rack1(spine: &mut HorusSpine, now: u64, first_id: u64) -> usize {
    (0..200)
        .flat_map(|k| feed(spine, now, Input::Task(task(first_id + k))))
        .filter(|&r| r == 1)
        .count()
}

#[test]
fn a_leafs_refresh_undoes_forged_notices_within_the_interval() {
    let o = opts(BOUND);
    let mut spine = HorusSpine::with_options(&[4, 4], 7, ConnTableConfig::default(), o);
    let mut leaf1 = HorusLeaf::with_options(4, 9, ConnTableConfig::default(), o);
    forged(&mut spine, 1);
    // Without a refresh rack 1 gets nothing (what the paper's mechanism
    // leaves in place for as long as rack 1 gets no task).
    assert_eq!(share_of_rack1(&mut spine, 2, 0), 0);
    // The leaf refreshes once per interval; before it nothing is due.
    let mut out = Outbox::new();
    leaf1.tick(Nanos::new(o.refresh_interval_ns() - 1), &mut out);
    assert!(out.is_empty());
    let now = o.refresh_interval_ns();
    leaf1.tick(Nanos::new(now), &mut out);
    let notices: Vec<Notice> = out
        .drain()
        .map(|a| match a {
            Action::Notify { notice, .. } => notice,
            other => panic!("a tick only notifies: {other:?}"),
        })
        .collect();
    assert_eq!(notices, [Notice::IdleAdd, Notice::LoadUpdate(0)]);
    for n in notices {
        feed(&mut spine, now, as_input(1, n));
    }
    assert!(spine.idle_nodes().contains(1));
    assert_eq!(spine.busy_nodes().view(1), Some((0, 0)));
    assert!(share_of_rack1(&mut spine, now, 1000) > 0);
}

#[test]
fn a_spine_forgets_a_rack_that_stopped_refreshing() {
    let o = opts(BOUND);
    let mut spine = HorusSpine::with_options(&[4, 4], 7, ConnTableConfig::default(), o);
    forged(&mut spine, 1);
    // Rack 0 keeps refreshing; rack 1's refreshes are all lost. Rack 1 was
    // last heard at 1 ns: at the fourth tick (1 s) it is still within the
    // bound, at the fifth it has expired.
    let mut out = Outbox::new();
    for k in 1..=5 {
        if k == 5 {
            assert_eq!(spine.busy_nodes().view(1), Some((u32::MAX >> 1, 0)));
        }
        let now = k * o.refresh_interval_ns();
        feed(&mut spine, now, Input::IdleRemove { node: 0 });
        feed(
            &mut spine,
            now,
            Input::LoadUpdate {
                node: 0,
                load: 2 << 16,
            },
        );
        spine.tick(Nanos::new(now), &mut out);
        assert!(out.is_empty());
    }
    assert_eq!(spine.busy_nodes().view(1), Some((0, 0)), "expired: load 0");
    assert_eq!(spine.busy_nodes().view(0), Some((2 << 16, 0)), "refreshed");
    assert!(share_of_rack1(&mut spine, 2 * BOUND, 0) > 0);
}

#[test]
fn without_soft_state_nothing_is_refreshed_or_forgotten() {
    let o = HorusOptions::default();
    let mut spine = HorusSpine::with_options(&[4, 4], 7, ConnTableConfig::default(), o);
    let mut leaf = HorusLeaf::with_options(4, 9, ConnTableConfig::default(), o);
    forged(&mut spine, 1);
    let mut out = Outbox::new();
    for now in [BOUND, 10 * BOUND] {
        leaf.tick(Nanos::new(now), &mut out);
        spine.tick(Nanos::new(now), &mut out);
    }
    assert!(out.is_empty());
    assert_eq!(spine.busy_nodes().view(1), Some((u32::MAX >> 1, 0)));
}

/// RS-H (Horus §4.1): a rack's LOAD_REPORT at the spine expires after the
/// bound unless refreshed, and an RS-H leaf re-reports every quarter of it
/// whether or not it saw a reply; a ToR that reports nothing stays silent.
#[test]
fn rs_h_loads_expire_and_rs_h_leaves_re_report() {
    use netsched_core::racksched::{RackSched, RackSchedConfig, RackSchedSpine, ReqTableConfig};
    let mut spine = RackSchedSpine::new(2, 1, 2, ReqTableConfig::default()).with_soft_state(BOUND);
    let mut out = Outbox::new();
    // A forged (or last) report: rack 1 at the highest load.
    let max = Input::LoadUpdate {
        node: 1,
        load: u32::MAX,
    };
    spine.handle(Nanos::new(10), max, &mut out);
    spine.handle(
        Nanos::new(600_000_000),
        Input::LoadUpdate {
            node: 0,
            load: 3 << 16,
        },
        &mut out,
    );
    spine.tick(Nanos::new(BOUND), &mut out);
    assert_eq!(spine.load_table().load(1), Some(u32::MAX), "not yet");
    spine.tick(Nanos::new(BOUND + 10), &mut out);
    assert_eq!(spine.load_table().load(1), Some(0), "rack 1 forgotten");
    assert_eq!(
        spine.load_table().load(0),
        Some(3 << 16),
        "rack 0 refreshed"
    );
    assert_eq!(spine.expired_racks(), 1);
    spine.tick(Nanos::new(BOUND + 600_000_000), &mut out);
    assert_eq!(spine.load_table().load(0), Some(0));
    assert!(out.is_empty(), "a spine emits nothing");
    // Off by default: nothing expires.
    let mut plain = RackSchedSpine::new(2, 1, 2, ReqTableConfig::default());
    plain.handle(Nanos::new(10), max, &mut out);
    plain.tick(Nanos::new(10 * BOUND), &mut out);
    assert_eq!(plain.load_table().load(1), Some(u32::MAX));

    let leaf = |report_load| {
        RackSched::new(
            4,
            1,
            RackSchedConfig {
                report_load,
                ..RackSchedConfig::default()
            },
        )
        .with_soft_state(BOUND)
    };
    let mut rs_h = leaf(true);
    let mut sent = 0;
    for ms in (0..=1000u64).step_by(5) {
        let mut out = Outbox::new();
        rs_h.tick(Nanos::new(ms * 1_000_000), &mut out);
        for a in out.drain() {
            assert!(matches!(
                a,
                Action::Notify {
                    notice: Notice::LoadUpdate(0),
                    ..
                }
            ));
            sent += 1;
        }
    }
    assert_eq!(sent, 4, "at 250, 500, 750 and 1000 ms");
    let mut tor = leaf(false);
    tor.tick(Nanos::new(BOUND), &mut out);
    assert!(out.is_empty());
}

/// A leaf whose registers live in an XDP program refreshes through
/// `control_tick_of` from the idle list's length and the average read
/// there: the same notices, at the same times, as `control_tick` from its
/// own registers.
#[test]
fn a_refresh_from_read_registers_is_the_leafs_own_refresh() {
    let o = opts(BOUND);
    let mut own = HorusLeaf::with_options(4, 9, ConnTableConfig::default(), o);
    // Some workers busy: idle list shorter, rack average above 0.
    for id in 0..6 {
        let mut out = Outbox::new();
        netsched_core::dataplane::handle_resubmitting(
            &mut own,
            Nanos::ZERO,
            Input::Task(task(id)),
            &mut out,
            |_| {},
        );
    }
    let mut read = own.clone();
    let reg = |name: &str| {
        own.registers()
            .into_iter()
            .find(|r| r.name == name)
            .unwrap_or_else(|| panic!("no register {name}"))
            .cells[0] as u32
    };
    let (listed, avg) = (reg("idle.p"), reg("leaf.avg"));
    assert!(avg > 0, "tasks raised the rack average");
    let every = o.refresh_interval_ns();
    for now in [every - 1, every, every + 1, 2 * every] {
        let (mut a, mut b) = (Outbox::new(), Outbox::new());
        own.control_tick(now, &mut a);
        read.control_tick_of(now, || Some((listed, avg)), &mut b);
        let a: Vec<Action> = a.drain().collect();
        let b: Vec<Action> = b.drain().collect();
        assert_eq!(a, b, "at {now}");
        assert_eq!(a.is_empty(), now % every != 0, "refreshes exactly when due");
    }
}
