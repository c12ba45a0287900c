//! Draconis data-plane decisions per second (one core), plus R2P2 JBSQ and
//! Draconis-Server for comparison.
//!
//! `Throughput::Elements(1)` per step; a step is one single-task job
//! submission and one task request that ends in an assignment (see
//! `netsched_core::pull::bench`), every recirculation fed inline.
//!
//! Run: `cargo bench -p netsched-core --bench draconis` (about 25 s).

use netsched_core::Nanos;
use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use netsched_core::pull::bench::{Shape, Steady};
use netsched_core::pull::r2p2::{R2p2Config, R2p2Jbsq};
use netsched_core::pull::server::DraconisServer;
use netsched_core::pull::{
    DraconisConfig, ExecInfo, JobSubmission, PullAction, PullDataPlane, PullInput, PullOutbox,
    TaskInfo, TaskList,
};

fn switch(c: &mut Criterion) {
    let mut g = c.benchmark_group("draconis/switch");
    g.throughput(Throughput::Elements(1));
    for (name, shape) in [
        ("fcfs", Shape::Fcfs),
        ("priority4", Shape::Priority),
        ("resource", Shape::Resource),
    ] {
        let mut s = Steady::new(shape, 1024);
        let p0 = s.dp.pipeline().clone();
        let d0 = s.decisions;
        g.bench_function(name, |b| b.iter(|| s.step()));
        let p = s.dp.pipeline();
        let d = (s.decisions - d0).max(1) as f64;
        eprintln!(
            "    draconis/switch/{name}: {:.3} passes per step (submission + request), {:.3} recirculations",
            (p.total_passes() - p0.total_passes()) as f64 / d,
            (p.resubmissions - p0.resubmissions) as f64 / d
        );
    }
    g.finish();
}

fn server(c: &mut Criterion) {
    let mut g = c.benchmark_group("draconis/server");
    g.throughput(Throughput::Elements(1));
    let mut srv = DraconisServer::new(DraconisConfig::fcfs(4096));
    let mut out = srv.outbox();
    let mut next = 0u64;
    let exec = ExecInfo::default();
    let submit = |srv: &mut DraconisServer, out: &mut _, id: u64| {
        let mut tasks = TaskList::new();
        tasks.push(TaskInfo::new(id));
        srv.handle(
            Nanos::ZERO,
            PullInput::JobSubmission(JobSubmission {
                client: 0,
                job: id,
                tasks,
            }),
            out,
        );
    };
    for _ in 0..1024 {
        submit(&mut srv, &mut out, next);
        next += 1;
        out.clear();
    }
    g.bench_function("fcfs", |b| {
        b.iter(|| {
            out.clear();
            submit(&mut srv, &mut out, next);
            next += 1;
            srv.handle(Nanos::ZERO, PullInput::TaskRequest(exec), &mut out);
            black_box(out.len());
        })
    });
    g.finish();
}

/// R2P2 JBSQ(3) over 160 executors (§8), every executor holding 2 tasks: a
/// request sweeps to an executor under the bound; one completion per request
/// (round robin) keeps the state steady.
fn r2p2(c: &mut Criterion) {
    let mut g = c.benchmark_group("r2p2/jbsq3");
    g.throughput(Throughput::Elements(1));
    let n = 160u32;
    let mut sw = R2p2Jbsq::new(n, R2p2Config::default());
    let mut out = PullOutbox::new();
    let run = |sw: &mut R2p2Jbsq, out: &mut PullOutbox, input: PullInput| {
        let mut input = input;
        loop {
            out.clear();
            sw.handle(Nanos::ZERO, input, out);
            match out.as_slice().first() {
                Some(PullAction::Reprobe(p)) => input = PullInput::Reprobe(*p),
                Some(PullAction::AssignTask { executor, .. }) => return *executor,
                _ => return u32::MAX,
            }
        }
    };
    let req = PullInput::Request {
        client: 0,
        task: TaskInfo::new(0),
    };
    for _ in 0..2 * n {
        run(&mut sw, &mut out, req);
    }
    let mut rr = 0u32;
    let (s0, p0) = (sw.stats, sw.pipeline().clone());
    g.bench_function("160", |b| {
        b.iter(|| {
            sw.handle(
                Nanos::ZERO,
                PullInput::Completion { executor: rr },
                &mut out,
            );
            rr = (rr + 1) % n;
            black_box(run(&mut sw, &mut out, req));
        })
    });
    let d = (sw.stats.dispatched - s0.dispatched).max(1) as f64;
    eprintln!(
        "    r2p2/jbsq3/160: {:.1} recirculations per request, {} dropped",
        (sw.pipeline().resubmissions - p0.resubmissions) as f64 / d,
        sw.stats.dropped - s0.dropped
    );
    g.finish();
}

fn quick() -> Criterion {
    Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
}

criterion_group! {
    name = benches;
    config = quick();
    targets = switch, server, r2p2
}
criterion_main!(benches);
