//! Sparrow.

use super::*;
use netsched_core::Nanos;

#[test]
fn sparrow_batch_sampling_late_binding() {
    let mut s = SparrowScheduler::new(
        10,
        SparrowConfig {
            probe_ratio: 2,
            max_jobs: 4,
        },
        3,
    );
    let mut out = s.outbox();
    let tasks: Vec<TaskInfo> = (0..3).map(TaskInfo::new).collect();
    s.handle(
        Nanos::ZERO,
        PullInput::JobSubmission(JobSubmission {
            client: 1,
            job: 1,
            tasks: TaskList::from_slice(&tasks).unwrap(),
        }),
        &mut out,
    );
    let probes: Vec<(u32, u32)> = out
        .as_slice()
        .iter()
        .map(|a| match *a {
            PullAction::Probe { worker, slot } => (worker, slot),
            ref o => panic!("{o:?}"),
        })
        .collect();
    assert_eq!(probes.len(), 6, "d·m probes");
    let mut ws: Vec<u32> = probes.iter().map(|p| p.0).collect();
    ws.sort();
    ws.dedup();
    assert_eq!(ws.len(), 6, "distinct workers");
    // Workers answer in any order; the first three get tasks in order.
    let mut workers: Vec<SparrowWorker> = (0..10).map(|i| SparrowWorker::new(i, 8)).collect();
    let mut got = Vec::new();
    for &(w, slot) in probes.iter().rev() {
        let req = workers[w as usize].on_probe(slot).unwrap();
        out.clear();
        s.handle(Nanos::ZERO, req, &mut out);
        match out.as_slice()[0] {
            PullAction::AssignTask {
                task,
                executor: worker,
                ..
            } => {
                workers[worker as usize].on_assign();
                got.push(task.id)
            }
            PullAction::NoOp { executor: worker } => {
                assert!(workers[worker as usize].on_free().is_none())
            }
            ref o => panic!("{o:?}"),
        }
    }
    assert_eq!(got, vec![0, 1, 2]);
    assert_eq!(s.stats.cancelled, 3);
    assert_eq!(s.active_jobs(), 0, "job state freed after the last probe");
    out.clear();
    s.handle(
        Nanos::ZERO,
        PullInput::GetTask { worker: 0, slot: 0 },
        &mut out,
    );
    assert_eq!(out.as_slice(), &[PullAction::Drop(DropReason::Unexpected)]);
}
