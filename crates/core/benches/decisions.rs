//! Scheduling decisions per second of the Horus data planes (one core).
//!
//! Every benchmark counts `Throughput::Elements(1)` per task decision, so
//! criterion reports decisions/s. Work that a decision triggers (a
//! resubmission pass, the reply or LoadUpdate mixed in to keep the state
//! steady) is inside the measured time.
//!
//! * `leaf/busy/{24,768}`: every worker holds ~8 tasks, so every decision takes
//!   the power-of-2 path; one reply per task (round robin over workers, never
//!   reporting an empty queue) keeps the queues steady.
//! * `leaf/idle_rich/{24,768}`: half the workers idle; every decision pops an
//!   idle worker, and the oldest busy worker replies idle.
//! * `spine/busy/{10,1152}`: no idle rack; power-of-2 over racks with one
//!   LoadUpdate per 8 tasks, from a model of each rack's average (24 workers
//!   per rack, one completion per task).
//! * `spine/idle/1152`: every rack idle; decisions read the idle list.
//! * `switch/*`: the cost of one register access through `RegisterArray`
//!   against a plain slice, to size the switch-model bookkeeping.
//!
//! Run: `cargo bench -p netsched-core --bench decisions` (about 50 s).

use netsched_core::Nanos;
use std::collections::VecDeque;
use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use netsched_core::dataplane::{handle_resubmitting, DataPlane, Input, NodeId, Outbox, TaskMeta};
use netsched_core::fixed;
use netsched_core::horus::{ConnTableConfig, HorusLeaf, HorusSpine};
use netsched_core::rng::Rng;
use netsched_core::switch::{Layout, Pipeline};

fn task(id: u64, idle_selected: bool) -> TaskMeta {
    TaskMeta {
        id,
        first: true,
        last: true,
        idle_selected,
        upstream: 0,
        class: 0,
    }
}

fn report(name: &str, pipe: &Pipeline, decisions: u64) {
    eprintln!(
        "    {name}: {decisions} decisions, {:.3} passes/decision, resubmitted {:.1}%",
        pipe.total_passes() as f64 / decisions.max(1) as f64,
        100.0 * pipe.resubmissions as f64 / decisions.max(1) as f64
    );
}

/// A leaf whose workers are all busy.
struct LeafBusy {
    leaf: HorusLeaf,
    out: Outbox,
    queue: Vec<u32>,
    rr: usize,
    next: u64,
}

impl LeafBusy {
    fn new(workers: u32, per_worker: u32) -> Self {
        let mut s = LeafBusy {
            leaf: HorusLeaf::new(workers, 7, ConnTableConfig::default()),
            out: Outbox::new(),
            queue: vec![0; workers as usize],
            rr: 0,
            next: 0,
        };
        for _ in 0..workers * per_worker {
            s.task();
        }
        assert!(
            s.leaf.idle_nodes().is_empty(),
            "pre-load must leave no idle worker"
        );
        s
    }

    #[inline]
    fn task(&mut self) {
        let queue = &mut self.queue;
        handle_resubmitting(
            &mut self.leaf,
            Nanos::ZERO,
            Input::Task(task(self.next, false)),
            &mut self.out,
            |w| queue[w as usize] += 1,
        );
        self.next += 1;
    }

    /// A completion at the next worker (round robin) that keeps at least one task.
    #[inline]
    fn reply(&mut self) {
        let n = self.queue.len();
        loop {
            self.rr += 1;
            if self.rr == n {
                self.rr = 0;
            }
            if self.queue[self.rr] > 1 {
                break;
            }
        }
        self.queue[self.rr] -= 1;
        let input = Input::Reply {
            node: self.rr as NodeId,
            qlen: self.queue[self.rr],
            class: 0,
            task: 0,
        };
        self.out.clear();
        self.leaf.handle(Nanos::ZERO, input, &mut self.out);
    }
}

/// A leaf with half its workers idle; busy workers hold one task each.
struct LeafIdle {
    leaf: HorusLeaf,
    out: Outbox,
    busy: VecDeque<NodeId>,
    next: u64,
}

impl LeafIdle {
    fn new(workers: u32) -> Self {
        let mut s = LeafIdle {
            leaf: HorusLeaf::new(workers, 7, ConnTableConfig::default()),
            out: Outbox::new(),
            busy: VecDeque::with_capacity(workers as usize),
            next: 0,
        };
        for _ in 0..workers / 2 {
            s.task();
        }
        s
    }

    #[inline]
    fn task(&mut self) {
        let busy = &mut self.busy;
        // The spine picked this rack from its idle list (§A.3 flag set).
        handle_resubmitting(
            &mut self.leaf,
            Nanos::ZERO,
            Input::Task(task(self.next, true)),
            &mut self.out,
            |w| busy.push_back(w),
        );
        self.next += 1;
    }

    #[inline]
    fn reply(&mut self) {
        let w = self.busy.pop_front().expect("a busy worker");
        self.out.clear();
        self.leaf.handle(
            Nanos::ZERO,
            Input::Reply {
                node: w,
                qlen: 0,
                class: 0,
                task: 0,
            },
            &mut self.out,
        );
    }
}

/// A spine whose racks are all busy, with a model of each rack's outstanding
/// tasks that a leaf would report.
struct SpineBusy {
    spine: HorusSpine,
    out: Outbox,
    outstanding: Vec<u32>,
    factor: u32,
    complete_rr: usize,
    update_rr: usize,
    next: u64,
}

const RACK_WORKERS: u32 = 24;
const SPINE_BATCH: u64 = 8;

impl SpineBusy {
    fn new(racks: usize) -> Self {
        let mut s = SpineBusy {
            spine: HorusSpine::new(&vec![RACK_WORKERS; racks], 7, ConnTableConfig::default()),
            out: Outbox::new(),
            outstanding: vec![4 * RACK_WORKERS; racks],
            factor: fixed::additive_factor(RACK_WORKERS),
            complete_rr: 0,
            update_rr: 0,
            next: 0,
        };
        for r in 0..racks as NodeId {
            handle_resubmitting(
                &mut s.spine,
                Nanos::ZERO,
                Input::IdleRemove { node: r },
                &mut s.out,
                |_| {},
            );
            let load = s.outstanding[r as usize] * s.factor;
            handle_resubmitting(
                &mut s.spine,
                Nanos::ZERO,
                Input::LoadUpdate { node: r, load },
                &mut s.out,
                |_| {},
            );
        }
        assert!(s.spine.idle_nodes().is_empty());
        s
    }

    /// `SPINE_BATCH` tasks, as many completions, one LoadUpdate.
    #[inline]
    fn batch(&mut self) {
        for _ in 0..SPINE_BATCH {
            let outstanding = &mut self.outstanding;
            handle_resubmitting(
                &mut self.spine,
                Nanos::ZERO,
                Input::Task(task(self.next, false)),
                &mut self.out,
                |r| outstanding[r as usize] += 1,
            );
            self.next += 1;
            let n = self.outstanding.len();
            loop {
                self.complete_rr += 1;
                if self.complete_rr == n {
                    self.complete_rr = 0;
                }
                if self.outstanding[self.complete_rr] > 0 {
                    break;
                }
            }
            self.outstanding[self.complete_rr] -= 1;
        }
        self.update_rr += 1;
        if self.update_rr == self.outstanding.len() {
            self.update_rr = 0;
        }
        let node = self.update_rr as NodeId;
        let load = self.outstanding[self.update_rr] * self.factor;
        self.out.clear();
        self.spine
            .handle(Nanos::ZERO, Input::LoadUpdate { node, load }, &mut self.out);
    }
}

fn leaf_busy(c: &mut Criterion) {
    let mut g = c.benchmark_group("leaf/busy");
    g.throughput(Throughput::Elements(1));
    for workers in [24u32, 768] {
        let mut s = LeafBusy::new(workers, 8);
        let (p0, d0) = (s.leaf.pipeline().clone(), s.next);
        g.bench_function(workers.to_string(), |b| {
            b.iter(|| {
                s.task();
                s.reply();
            })
        });
        let mut p = s.leaf.pipeline().clone();
        p.first_passes -= p0.first_passes;
        p.resubmissions -= p0.resubmissions;
        report(&format!("leaf/busy/{workers}"), &p, s.next - d0);
        assert!(s.leaf.idle_nodes().is_empty(), "stayed busy");
    }
    g.finish();
}

fn leaf_idle_rich(c: &mut Criterion) {
    let mut g = c.benchmark_group("leaf/idle_rich");
    g.throughput(Throughput::Elements(1));
    for workers in [24u32, 768] {
        let mut s = LeafIdle::new(workers);
        g.bench_function(workers.to_string(), |b| {
            b.iter(|| {
                s.task();
                s.reply();
            })
        });
        assert_eq!(
            s.leaf.idle_nodes().len(),
            workers - workers / 2,
            "stayed half idle"
        );
    }
    g.finish();
}

fn spine_busy(c: &mut Criterion) {
    let mut g = c.benchmark_group("spine/busy");
    g.throughput(Throughput::Elements(SPINE_BATCH));
    for racks in [10usize, 1152] {
        let mut s = SpineBusy::new(racks);
        let (p0, d0) = (s.spine.pipeline().clone(), s.next);
        g.bench_function(racks.to_string(), |b| b.iter(|| s.batch()));
        let mut p = s.spine.pipeline().clone();
        p.first_passes -= p0.first_passes;
        p.resubmissions -= p0.resubmissions;
        report(
            &format!("spine/busy/{racks} (incl. LoadUpdates)"),
            &p,
            s.next - d0,
        );
    }
    g.finish();
}

fn spine_idle(c: &mut Criterion) {
    let mut g = c.benchmark_group("spine/idle");
    g.throughput(Throughput::Elements(1));
    let racks = 1152usize;
    let mut spine = HorusSpine::new(&vec![RACK_WORKERS; racks], 7, ConnTableConfig::default());
    let mut out = Outbox::new();
    let mut next = 0u64;
    g.bench_function(racks.to_string(), |b| {
        b.iter(|| {
            handle_resubmitting(
                &mut spine,
                Nanos::ZERO,
                Input::Task(task(next, false)),
                &mut out,
                |r| {
                    black_box(r);
                },
            );
            next += 1;
        })
    });
    g.finish();
}

/// One pass with one register read, through the switch model and directly.
fn switch_overhead(c: &mut Criterion) {
    let mut g = c.benchmark_group("switch");
    g.throughput(Throughput::Elements(1));
    const N: usize = 1024;
    let mut layout = Layout::new();
    let stage = layout.stage();
    let mut arr = layout.array(stage, "bench", N, 1u32);
    let mut pipe = Pipeline::with_layout(layout);
    let plain = vec![1u32; N];
    let mut rng = Rng::new(1);
    g.bench_function("rng_below", |b| b.iter(|| black_box(rng.below(N as u32))));
    g.bench_function("register_read", |b| {
        b.iter(|| {
            let i = rng.below(N as u32) as usize;
            black_box(arr.read(&pipe.begin(), i))
        })
    });
    g.bench_function("slice_read", |b| {
        b.iter(|| {
            let i = rng.below(N as u32) as usize;
            black_box(plain[black_box(i)])
        })
    });
    g.finish();
}

fn quick() -> Criterion {
    Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
}

criterion_group! {
    name = benches;
    config = quick();
    targets = leaf_busy, leaf_idle_rich, spine_busy, spine_idle, switch_overhead
}
criterion_main!(benches);
