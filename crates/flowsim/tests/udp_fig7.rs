//! Baraat Fig. 7 over real UDP in network namespaces (crates/flowsim/src/udp.rs):
//! two batched tasks, each reading 200 KB from three servers through a
//! 100 Mbps software switch running SPC. FIFO-LM must finish the first task
//! well before fair sharing does, and every byte must arrive intact.
//! Needs root (`ip netns add`); without it the test prints a SKIP banner and
//! passes, unless NETSCHED_REQUIRE_NETNS=1, when it fails.

use std::io::Write;
use std::time::Duration;

use netsched_flowsim::udp::{Fig7Mode, Fig7Opts, Lab, LabError};

#[test]
fn fig7_fifo_lm_finishes_first_task_before_fair_sharing() {
    let lab = match Lab::new(&format!("fsim{}", std::process::id())) {
        Ok(l) => l,
        Err(LabError::NotPermitted(e)) => {
            // NETSCHED_REQUIRE_NETNS=1 makes `Lab::new` return `Other`
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
    let fair = lab.fig7(Fig7Mode::Fair, &o).expect("fair run");
    let fifo = lab.fig7(Fig7Mode::FifoLm, &o).expect("fifo-lm run");
    for r in [&fair, &fifo] {
        assert_eq!(r.bytes, vec![600_000; 2], "{:?}: bytes lost", r.mode);
    }
    eprintln!(
        "fair {:?} ns, fifo-lm {:?} ns",
        fair.completion_ns, fifo.completion_ns
    );
    // One task alone needs 600 KB / 100 Mbps = 48 ms; two share for 96 ms.
    // FIFO-LM serves task 1 first (ideally at half of fair sharing's time),
    // fair sharing finishes both near the end. The margin leaves room for
    // the control loop's start-up on a loaded machine.
    let (f1, s1) = (fair.completion_ns[0], fifo.completion_ns[0]);
    assert!(
        (s1 as f64) < 0.9 * f1 as f64,
        "first task: fifo-lm {s1} ns not earlier than fair {f1} ns"
    );
    // Neither beats the link: both tasks' bytes need 96 ms at 100 Mbps.
    let last = |r: &netsched_flowsim::udp::Fig7Run| *r.completion_ns.iter().max().unwrap();
    assert!(last(&fair) >= 94_000_000 && last(&fifo) >= 94_000_000);
}
