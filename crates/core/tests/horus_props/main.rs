//! Property tests for the Horus data planes (NSDI'24 §3.3, §3.4, App. A).
//!
//! 1. `IdleNodes` (Alg. 1) against a `BTreeSet` model, spine and leaf flavours.
//! 2. `LazyPow2` (Alg. 2, lazy drift rule) against an exact i64 model.
//! 3. `HorusSpine` + `HorusLeaf` end to end through a tiny sans-IO driver, with
//!    optional delays, reordering and loss of leaf-to-spine notices (§3.4, §A.3).
//! 4. A random mix of every input never breaks the one-access-per-pass rule of
//!    the switch model (any such violation panics inside `RegisterArray`).
//! 5. What `writes_state_only` promises the simulator.
//!
//! Each part is a module of this test binary (`idle`, `pow2`, `e2e` with
//! `leaf_regressions`, `one_access`, `writes_state_only`); the helpers every
//! part uses are here.
//!
//! Deterministic tests for the bugs these properties found sit next to the
//! property that found them. Bugs 1 (idle list top-slot remove racing an add)
//! and 2 (a leaf listing a worker twice, then indexing past its idle list) are
//! fixed in 77c7e33, and the control-plane removal bugs after it; every
//! regression test runs.
//!
//! The LazyPow2 model replays `LazyPow2::samples` to know which two slots a
//! first pass drew; keep `replay_samples` in step with `src/pow2.rs`.

use std::collections::{BTreeSet, HashSet, VecDeque};

use netsched_core::dataplane::{
    Action, DataPlane, Decision, Dispatch, DropReason, Input, NodeId, Notice, Outbox, Pow2Samples,
    Resubmit, TaskMeta, Upstream,
};
use netsched_core::fixed;
use netsched_core::horus::{ConnTableConfig, HorusLeaf, HorusSpine};
use netsched_core::idle::{AddOutcome, IdleNodes, RemoveFirst, Retrieved};
use netsched_core::pow2::{LazyPow2, Pow2First};
use netsched_core::rng::Rng;
use netsched_core::switch::{Layout, Pipeline};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

/// `cases` cases; shrunk failures are printed, not persisted (proptest finds
/// no lib.rs next to an integration test to store them beside).
fn quick(cases: u32) -> ProptestConfig {
    ProptestConfig {
        failure_persistence: None,
        ..ProptestConfig::with_cases(cases)
    }
}

fn fail(msg: String) -> TestCaseError {
    TestCaseError::fail(msg)
}

fn single_packet_task(id: u64) -> TaskMeta {
    TaskMeta::single(id)
}

mod e2e;
mod idle;
mod leaf_regressions;
mod one_access;
mod pow2;
mod writes_state_only;
