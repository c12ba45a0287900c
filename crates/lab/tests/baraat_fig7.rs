//! Baraat Fig. 7 over real UDP in network namespaces (crates/lab/src/baraat/):
//! two batched tasks, each reading 200 KB from three servers through a
//! 100 Mbps software switch running SPC. FIFO-LM must finish the first task
//! well before fair sharing does, and every byte must arrive intact.
//! Needs root (`ip netns add`); without it the test prints a SKIP banner and
//! passes, unless NETSCHED_REQUIRE_NETNS=1, when it fails.

use std::io::Write;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use netsched_lab::baraat::{Fig7Error, Fig7Faults, Fig7Mode, Fig7Opts, Lab};
use netsched_lab::netns::LabError;

/// One lab at a time: each runs five busy threads, and the timing of
/// `fig7_fifo_lm_finishes_first_task_before_fair_sharing` does not survive
/// two other labs on two shared cores (FIFO-LM's first task took 350-470 ms
/// instead of about 50 in one run of ten with three labs at once).
static ONE_LAB: Mutex<()> = Mutex::new(());

fn one_lab() -> MutexGuard<'static, ()> {
    // A failed test poisons the lock; the next one still runs.
    ONE_LAB.lock().unwrap_or_else(|e| e.into_inner())
}

#[test]
fn fig7_fifo_lm_finishes_first_task_before_fair_sharing() {
    let _one = one_lab();
    let lab = match Lab::new(&format!("fsim{}", std::process::id())) {
        Ok(l) => l,
        Err(LabError::Skip(e)) => {
            // NETSCHED_REQUIRE_NETNS=1 makes `Lab::new` return `Failed`
            // instead (a failure, below). Straight to the stderr handle:
            // libtest captures eprintln! of a passing test, and a skip must
            // be seen.
            let _ = writeln!(
                std::io::stderr(),
                "\n*** SKIP fig7_fifo_lm_finishes_first_task_before_fair_sharing: \
                 cannot create network namespaces ({e}); the test checked nothing. \
                 Run as root, or set NETSCHED_REQUIRE_NETNS=1 to make this a failure. ***\n"
            );
            return;
        }
        Err(e) => panic!("{e}"),
    };
    let o = Fig7Opts {
        tasks: 2,
        bytes_per_server: 200_000,
        timeout: Duration::from_secs(20),
        ..Fig7Opts::default()
    };
    // One task alone needs 600 KB / 100 Mbps = 48 ms; two share for 96 ms.
    // FIFO-LM serves task 1 first (ideally at half of fair sharing's time),
    // fair sharing finishes both near the end. A software switch and its
    // senders on a CPU-starved machine (other test binaries on 2 cores) can
    // stall either run by tens of ms, so the runs are compared in pairs:
    // FIFO-LM must finish task 1 before 0.9x fair's in two of at most three
    // rounds (a FIFO-LM that shared fairly fails every round).
    let mut won = 0;
    let mut seen = Vec::new();
    for _ in 0..3 {
        let fair = lab.fig7(Fig7Mode::Fair, &o).expect("fair run");
        let fifo = lab.fig7(Fig7Mode::FifoLm, &o).expect("fifo-lm run");
        for r in [&fair, &fifo] {
            assert_eq!(r.bytes, vec![600_000; 2], "{:?}: bytes lost", r.mode);
            // Neither beats the link: both tasks' bytes need 96 ms at 100 Mbps.
            assert!(*r.completion_ns.iter().max().unwrap() >= 94_000_000);
        }
        let (f1, s1) = (fair.completion_ns[0], fifo.completion_ns[0]);
        seen.push((s1, f1));
        if (s1 as f64) < 0.9 * f1 as f64 {
            won += 1;
        }
        if won == 2 {
            break;
        }
    }
    eprintln!("first task (fifo-lm ns, fair ns) per round: {seen:?}");
    assert!(
        won >= 2,
        "FIFO-LM did not finish task 1 before 0.9x fair sharing's in 2 of 3 rounds: {seen:?}"
    );
}

/// Issue 15: a dropped request packet, a lost feedback ACK, a lost FIN, a
/// lost FIN-ACK and a lost DONE must leave the switch's SPC counters exactly as a
/// loss-free run does: every allocation and demand returned, every flow
/// counted once and removed once, every task forgotten at its end.
#[test]
fn lost_requests_feedback_fins_and_dones_leave_no_spc_state_behind() {
    let _one = one_lab();
    let Some(lab) = lab_or_skip(
        "lost_requests_feedback_fins_and_dones_leave_no_spc_state_behind",
        "fsl",
    ) else {
        return;
    };
    for faults in [
        Fig7Faults {
            drop_every_nth_request: 3,
            ..Fig7Faults::default()
        },
        Fig7Faults {
            drop_every_nth_feedback_ack: 2,
            ..Fig7Faults::default()
        },
        // Before the FIN was repeated, the dropped FINs left their tasks'
        // counters (and the next task waiting behind them) for good.
        Fig7Faults {
            drop_every_nth_fin: 2,
            ..Fig7Faults::default()
        },
        // The switch applied these FINs; the repeats must not count.
        Fig7Faults {
            drop_every_nth_fin_ack: 2,
            ..Fig7Faults::default()
        },
        // Before the DONE was repeated, a dropped one left its task's
        // counters at the switch for good (the task never retired).
        Fig7Faults {
            drop_every_nth_done: 2,
            ..Fig7Faults::default()
        },
    ] {
        let o = Fig7Opts {
            tasks: 3,
            bytes_per_server: 100_000,
            timeout: Duration::from_secs(20),
            faults,
            ..Fig7Opts::default()
        };
        // Issue 15's starved task (a waiting task's flows never got a rate
        // after the task ahead finished, about one run in ten) is fixed
        // (udp/task_end.rs, with its deterministic test): no retry.
        let r = lab.fig7(Fig7Mode::FifoLm, &o).expect("fifo-lm run");
        let res = r.residual;
        eprintln!("{faults:?}: {res:?}");
        assert!(res.injected_drops > 0, "{faults:?}: nothing was dropped");
        assert_eq!(r.bytes, vec![300_000; 3], "{faults:?}: bytes lost");
        assert_eq!(res.fins, 9, "{faults:?}: FINs applied, one per flow");
        assert_eq!((res.tasks, res.flows), (0, 0), "{faults:?}: {res:?}");
        // Sums of f64 allocations: a residue under 1 bit/s is rounding.
        assert!(res.allocated_bps.abs() < 1.0, "{faults:?}: {res:?}");
        assert!(res.demand_bps.abs() < 1.0, "{faults:?}: {res:?}");
    }
}

/// Issue 15: the client repeated each flow's feedback every 20 ms until
/// the run ended (100 ms after the last task), so a finished task's flows
/// were repeated for the rest of the run: over 3 tasks of 24 ms, task 1's
/// three flows about (48 + 100) / 20 times each, 50-odd repeats in all.
/// The repeats stop at the flow's FIN, which its server sends as soon as
/// its last byte and last feedback are in: a repeat after the task's end
/// needs 20 ms between the client's last ACK and that FIN (one per flow
/// at most, on a machine that stalls the server that long).
#[test]
fn feedback_is_not_repeated_for_finished_tasks() {
    let _one = one_lab();
    let Some(lab) = lab_or_skip("feedback_is_not_repeated_for_finished_tasks", "fsr") else {
        return;
    };
    let o = Fig7Opts {
        tasks: 3,
        bytes_per_server: 100_000,
        ..Fig7Opts::default()
    };
    for mode in [Fig7Mode::Fair, Fig7Mode::FifoLm] {
        let r = lab.fig7(mode, &o).expect("run");
        assert_eq!(r.bytes, vec![300_000; 3], "{mode:?}");
        assert!(
            r.feedback_repeats_after_task_end < 9,
            "{mode:?}: {} feedback repeats after the tasks ended",
            r.feedback_repeats_after_task_end
        );
    }
}

/// A lab for `test`, whose namespaces are named after `tag` and the
/// process: tests run in parallel, each in its own lab.
fn lab_or_skip(test: &str, tag: &str) -> Option<Lab> {
    match Lab::new(&format!("{tag}{}", std::process::id())) {
        Ok(l) => Some(l),
        Err(LabError::Skip(e)) => {
            let _ = writeln!(
                std::io::stderr(),
                "\n*** SKIP {test}: cannot create network namespaces ({e}); the test checked \
                 nothing. Run as root, or set NETSCHED_REQUIRE_NETNS=1 to make this a failure. ***\n"
            );
            None
        }
        Err(e) => panic!("{e}"),
    }
}

/// A run the port's Alg. 1 cannot take is refused with a typed error that
/// names the parameter, before any thread starts.
#[test]
fn a_zero_link_rate_is_refused_by_name() {
    let _one = one_lab();
    let Some(lab) = lab_or_skip("a_zero_link_rate_is_refused_by_name", "fzr") else {
        return;
    };
    let o = Fig7Opts {
        link_bps: 0.0,
        ..Fig7Opts::default()
    };
    let err = lab
        .fig7(Fig7Mode::FifoLm, &o)
        .expect_err("a zero link rate");
    assert!(
        matches!(err, Fig7Error::Params(ref p) if p.field == "capacity_bps"),
        "{err}"
    );
}
