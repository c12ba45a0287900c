//! Property and scenario tests for the Draconis data planes (EuroSys'24 §4-§6)
//! and the pull-model baselines (R2P2 JBSQ, Sparrow, Draconis-Server).
//!
//! Property tests drive the switch through a harness that keeps every
//! recirculated packet in a pool and delivers them in any order, interleaved
//! with new submissions and task requests: the interleavings a pipeline with
//! recirculation allows. Any second access to a register array in one pass
//! panics inside the switch model, so every test also checks that rule.
//!
//! The harness is the module `harness`; each group of tests is a module of
//! this test binary (`properties`, `open_decisions`, `r2p2`, `sparrow`,
//! `accounting`, `swap_head`).

use std::collections::HashMap;

use netsched_core::dataplane::DropReason;
use netsched_core::pull::queue::ahead;
use netsched_core::pull::r2p2::{JbsqSearch, R2p2Config, R2p2Jbsq};
use netsched_core::pull::server::DraconisServer;
use netsched_core::pull::sparrow::{SparrowConfig, SparrowScheduler, SparrowWorker};
use netsched_core::pull::{
    Constraint, Draconis, DraconisConfig, ExecInfo, JobSubmission, PullAction, PullDataPlane,
    PullInput, PullOutbox, Recirc, Repair, Slot, TaskInfo, TaskList, MAX_TASKS_PER_PACKET,
};
use proptest::prelude::*;
use proptest::test_runner::{RngAlgorithm, TestCaseError, TestRng, TestRunner};

fn quick(cases: u32) -> ProptestConfig {
    ProptestConfig {
        failure_persistence: None,
        ..ProptestConfig::with_cases(cases)
    }
}

fn job(client: u32, id: u64, tasks: &[TaskInfo]) -> PullInput {
    PullInput::JobSubmission(JobSubmission {
        client,
        job: id,
        tasks: TaskList::from_slice(tasks).unwrap(),
    })
}

fn exec(id: u32) -> ExecInfo {
    ExecInfo {
        id,
        node: id,
        resources: u64::MAX,
    }
}

mod accounting;
mod harness;
mod open_decisions;
mod properties;
mod r2p2;
mod sparrow;
mod swap_head;

use harness::*;
