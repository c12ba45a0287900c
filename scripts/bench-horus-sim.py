#!/usr/bin/env python3
"""Tasks per CPU-second of netsched and of the Horus authors' simulator, on one configuration.

    cargo build --release -p netsched
    python3 scripts/bench-horus-sim.py --horus-sim DIR [--pools 50,1000] [--tasks 40000] [--repeat 3]

DIR is the `horus-sim/` directory of a checkout of horus-scheduler/horus-sim
(the one holding simulator.py), whose Python needs numpy, pandas, loguru and
docopt (`--python` picks the interpreter, e.g. a virtualenv's). horus-sim is
never vendored here and is not in CI: this is a benchmark, not a test.

Both simulators run the same pool of the authors' small dataset alone under
one spine (experiments/fidelity/horus-sim-pool{50,250,1000}.toml, the
fidelity cross-check's configurations, docs/fidelity.md): Exp(100 µs)
service, Pingmesh hops of 1 µs mean, 4 spine-leaf hops, no loss, the same
load, policy and number of tasks, each pinned to one CPU (netsched with one
thread). netsched runs with `preset = "horus-sim"`, horus-sim's own Horus.
Each run's CPU time (user + system) is that of the whole child process, read
with getrusage, so start-up, set-up and result writing count on both sides.
Each long run is paired with a short one (a tenth of the tasks per worker)
whose CPU is that fixed cost, so the rate net of it (the extra tasks over
the extra CPU) is reported too: Python's imports alone cost horus-sim about
a second, netsched's start-up and output a few milliseconds. The two
simulators alternate, and the medians over --repeat runs are reported, with
the ratios.

horus-sim has no option for the number of tasks (utils.NUM_TASK_PER_WORKER
= 160 per worker); this script sets that module constant before running
simulator.py as __main__, and cuts the chosen pool out of the dataset into
the run directory (otherwise SAMPLE_TENANTS_FRACTIONAL keeps the first pool
only). Nothing else of horus-sim is changed; it seeds itself from the OS.
"""

import argparse
import ast
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_NETSCHED = ROOT / "target/release/netsched"
POOL_CONFIGS = {pool: ROOT / f"experiments/fidelity/horus-sim-pool{pool}.toml" for pool in (50, 250, 1000)}
DATASET = "result-dir/summary_system.log.small_dataset"
RTT_TABLE = "rtt_results.txt"
HORUS_SIM_MODULES = ("numpy", "pandas", "loguru", "docopt")
# Each long run is paired with a short one of a tenth of its tasks per
# worker, whose CPU is the fixed cost (start-up, set-up, result writing).
SHORT_DIVISOR = 10
MIN_TASKS_PER_WORKER = 20

# netsched policy -> (horus-sim policy, extra horus-sim flags). docs/fidelity.md:
# Horus = adaptive, RS-H = pow_of_k, RS-LB = random_pow_of_k (with --du, which
# changes nothing for the latter two).
POLICIES = {
    "horus": ("adaptive", []),
    "rs-h": ("pow_of_k", ["--du"]),
    "rs-lb": ("random_pow_of_k", ["--du"]),
}

# Runs simulator.py as its own `python3 simulator.py ...` would, after setting
# the number of tasks per worker that utils.generate_task_dist reads.
HORUS_SIM_LAUNCHER = """
import runpy, sys
directory, tasks_per_worker, argv = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
sys.path.insert(0, directory)
import utils
utils.NUM_TASK_PER_WORKER = tasks_per_worker
sys.argv = [directory + "/simulator.py"] + argv
runpy.run_path(directory + "/simulator.py", run_name="__main__")
"""


class BenchError(Exception):
    """A precondition of the benchmark failed; main prints it as one line."""


@dataclass
class Run:
    simulator: str  # "horus-sim" or "netsched"
    pool: int
    tasks: int
    cpu_s: float
    p99_us: float
    short: bool = False  # a run of 1/SHORT_DIVISOR of the tasks, for the fixed cost

    @property
    def tasks_per_cpu_s(self):
        return self.tasks / self.cpu_s


def find_horus_sim(directory):
    """The horus-sim directory holding simulator.py and the small dataset;
    a checkout's root is accepted for its horus-sim/ subdirectory."""
    if directory is None:
        raise BenchError("horus-sim not given: pass --horus-sim DIR (a checkout of horus-scheduler/horus-sim) or set HORUS_SIM")
    path = Path(directory)
    for candidate in (path, path / "horus-sim"):
        if (candidate / "simulator.py").is_file():
            if not (candidate / DATASET).is_file():
                raise BenchError(f"horus-sim at {candidate} has no {DATASET}")
            return candidate.resolve()
    raise BenchError(f"horus-sim not found: no simulator.py in {path} or {path / 'horus-sim'}")


def check_horus_sim_python(python):
    missing = []
    for module in HORUS_SIM_MODULES:
        try:
            probe = subprocess.run([python, "-c", f"import {module}"], capture_output=True)
        except OSError as error:
            raise BenchError(f"cannot run --python {python}: {error.strerror}")
        if probe.returncode != 0:
            missing.append(module)
    if missing:
        raise BenchError(f"{python} lacks horus-sim's modules {', '.join(missing)}: pip install them or pass --python")


def find_netsched(binary):
    path = Path(binary)
    if not os.access(path, os.X_OK):
        raise BenchError(f"{path} not found: build it with `cargo build --release -p netsched`")
    return path


def pinned_cpu(requested):
    """The CPU both simulators run on: the one asked for, which this
    process must be allowed to use, or by default the lowest it may use."""
    allowed = os.sched_getaffinity(0)
    if requested is None:
        return min(allowed)
    if requested not in allowed:
        raise BenchError(f"--cpu {requested} is not among the CPUs this process may use: {sorted(allowed)}")
    return requested


def tasks_per_worker(tasks, pool):
    """Whole tasks per worker closest to `tasks` per pool: horus-sim draws
    NUM_TASK_PER_WORKER * workers service times, so it must be an integer."""
    return max(1, round(tasks / pool))


def short_tasks_per_worker(per_worker):
    """The short run's length, a tenth of the long one's but at least 2 per
    worker: horus-sim drops the first pool-size tasks as warm-up and needs
    some left to take percentiles of."""
    return max(2, per_worker // SHORT_DIVISOR)


def schedule(pools, repeat, tasks):
    """The runs in order, as (repetition, pool, simulator, tasks per worker,
    short). Per repetition and pool each simulator runs short then long; the
    simulator that goes first alternates, so a drift in the machine's load
    falls on both."""
    order = []
    for repetition in range(repeat):
        sims = ("horus-sim", "netsched") if repetition % 2 == 0 else ("netsched", "horus-sim")
        for pool in pools:
            per_worker = tasks_per_worker(tasks, pool)
            if per_worker < MIN_TASKS_PER_WORKER:
                raise BenchError(
                    f"--tasks {tasks} gives pool {pool} {per_worker} tasks per worker; "
                    f"at least {MIN_TASKS_PER_WORKER} are needed to measure the fixed cost apart")
            for sim in sims:
                order.append((repetition, pool, sim, short_tasks_per_worker(per_worker), True))
                order.append((repetition, pool, sim, per_worker, False))
    return order


def cut_pool(dataset_text, pool):
    """The dataset with the one pool of `pool` workers, so that horus-sim,
    which keeps every SAMPLE_TENANTS_FRACTIONAL-th pool from the first,
    simulates that pool alone. The dataset is four lines, the fourth a
    Python literal of {'tenants': {'worker_count', 'maps': [...]}}."""
    lines = dataset_text.splitlines(keepends=True)
    data = dict(ast.literal_eval(lines[3]))
    chosen = [m for m in data["tenants"]["maps"] if m["worker_count"] == pool]
    if len(chosen) != 1:
        sizes = sorted(m["worker_count"] for m in data["tenants"]["maps"])
        raise BenchError(f"the dataset has no single pool of {pool} workers (pools: {sizes})")
    data["tenants"] = {"worker_count": pool, "maps": chosen}
    return "".join(lines[:3]) + repr(data) + "\n"


def netsched_config(pool):
    return POOL_CONFIGS[pool].read_text() + '\n[schedulers.horus]\npreset = "horus-sim"\n'


def parse_netsched_summary(text):
    """(tasks, p99 µs) of the single run in `netsched sim --format json`."""
    runs = json.loads(text)["runs"]
    if len(runs) != 1:
        raise BenchError(f"netsched printed {len(runs)} runs, expected 1")
    return runs[0]["tasks"], runs[0]["overall"]["response"]["p99_ns"] / 1e3


def parse_horus_sim_p99(text):
    """horus-sim's p99 response time in µs from its analysis file (one value
    per simulated pool, in ns ticks)."""
    values = [float(v) for v in text.replace(",", " ").split()]
    if len(values) != 1:
        raise BenchError(f"horus-sim's p99 file has {len(values)} values, expected 1")
    return values[0] / 1e3


def child_cpu_seconds(command, cpu, **kwargs):
    """Runs `command` to completion on CPU `cpu` and returns (its user +
    system CPU seconds, its stdout). The children's rusage grows only by the
    children waited for, so the difference is this child's alone."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=(lambda: os.sched_setaffinity(0, {cpu})), **kwargs)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or ["(no stderr)"])[-1]
        raise BenchError(f"{Path(command[0]).name} exited {done.returncode}: {tail}")
    cpu_s = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu_s, done.stdout


def run_netsched(binary, pool, policy, load, per_worker, seed, cpu, scratch):
    config = scratch / f"netsched-pool{pool}.toml"
    config.write_text(netsched_config(pool))
    command = [
        str(binary), "sim", "-c", str(config), "--policy", policy, "--load", str(load),
        "--tasks-per-worker", str(per_worker), "--seed", str(seed), "--threads", "1",
        "-q", "-o", str(scratch / "netsched-out"), "--format", "json",
    ]
    cpu_s, stdout = child_cpu_seconds(command, cpu)
    tasks, p99_us = parse_netsched_summary(stdout)
    return Run("netsched", pool, tasks, cpu_s, p99_us)


def run_horus_sim(python, directory, pool, policy, load, per_worker, cpu, scratch):
    run_dir = scratch / f"horus-sim-pool{pool}"
    shutil.rmtree(run_dir, ignore_errors=True)
    (run_dir / "analysis").mkdir(parents=True)
    (run_dir / "summary_system.log").write_text(cut_pool((directory / DATASET).read_text(), pool))
    shutil.copy(directory / RTT_TABLE, run_dir / RTT_TABLE)
    sim_policy, flags = POLICIES[policy]
    argv = [
        "-d", f"{run_dir}/", "-p", sim_policy, "-l", str(load), "-k", "2", "-r", "40",
        "-t", "exponential", "-i", "0", "-f", "none", "--delay", "1", *flags,
    ]
    # numpy's BLAS would otherwise start a thread per core.
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    command = [python, "-c", HORUS_SIM_LAUNCHER, str(directory), str(per_worker), *argv]
    cpu_s, _ = child_cpu_seconds(command, cpu, cwd=directory, env=env)
    p99_files = list((run_dir / "analysis").glob("*_p99_response_times_*.csv"))
    if len(p99_files) != 1:
        raise BenchError(f"horus-sim wrote {len(p99_files)} p99 response-time files in {run_dir}/analysis, expected 1")
    return Run("horus-sim", pool, per_worker * pool, cpu_s, parse_horus_sim_p99(p99_files[0].read_text()))


def median_rate(tasks, cpu_s):
    return statistics.median(t / c for t, c in zip(tasks, cpu_s))


def marginal_rate(long_runs, short_runs):
    """Tasks per CPU-second net of the fixed cost (start-up, set-up, result
    writing): the extra tasks of the long runs over their extra CPU, from the
    medians of each length. NaN when the machine's noise hides the difference."""
    extra_cpu = statistics.median(r.cpu_s for r in long_runs) - statistics.median(r.cpu_s for r in short_runs)
    extra_tasks = statistics.median(r.tasks for r in long_runs) - statistics.median(r.tasks for r in short_runs)
    return extra_tasks / extra_cpu if extra_cpu > 0 and extra_tasks > 0 else float("nan")


@dataclass
class SimulatorSummary:
    tasks: int  # tasks of a long run (median)
    cpu_s: list  # CPU seconds of the long runs, in run order
    rate: float  # median tasks per CPU-second of the long runs, whole process
    net_rate: float  # tasks per CPU-second net of the fixed cost (marginal_rate)
    fixed_cpu_s: float  # median CPU seconds of the short runs
    p99_us: float  # median p99 response time of the long runs


@dataclass
class PoolSummary:
    pool: int
    sims: dict  # "horus-sim" / "netsched" -> SimulatorSummary

    @property
    def ratio(self):
        return self.sims["netsched"].rate / self.sims["horus-sim"].rate

    @property
    def net_ratio(self):
        return self.sims["netsched"].net_rate / self.sims["horus-sim"].net_rate


def summarize(runs):
    """Per pool and simulator: the median tasks per CPU-second of the long
    runs, whole process, and the rate net of the fixed cost that the short
    runs measure; the ratios are netsched's over horus-sim's."""
    summaries = []
    for pool in sorted({r.pool for r in runs}):
        sims = {}
        for sim in ("horus-sim", "netsched"):
            long_runs = [r for r in runs if r.pool == pool and r.simulator == sim and not r.short]
            short_runs = [r for r in runs if r.pool == pool and r.simulator == sim and r.short]
            if not long_runs or not short_runs:
                raise BenchError(f"pool {pool} lacks a long or a short {sim} run")
            sims[sim] = SimulatorSummary(
                tasks=int(statistics.median(r.tasks for r in long_runs)),
                cpu_s=[r.cpu_s for r in long_runs],
                rate=median_rate([r.tasks for r in long_runs], [r.cpu_s for r in long_runs]),
                net_rate=marginal_rate(long_runs, short_runs),
                fixed_cpu_s=statistics.median(r.cpu_s for r in short_runs),
                p99_us=statistics.median(r.p99_us for r in long_runs),
            )
        summaries.append(PoolSummary(pool, sims))
    return summaries


def figure(value, suffix=""):
    return "n/a" if value != value else f"{value:,.0f}{suffix}"


def verdict(ratio, target):
    if ratio != ratio:  # NaN
        return "unmeasured: the short and long runs' CPU did not differ"
    return "met" if ratio >= target else "not met"


def format_report(summaries, target):
    lines = [
        "| pool | simulator | tasks per run | CPU s per run | tasks/CPU-s | short run CPU s | tasks/CPU-s net of it | p99 µs |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for s in summaries:
        for name, sim in s.sims.items():
            cpu = ", ".join(f"{c:.3f}" for c in sim.cpu_s)
            lines.append(
                f"| {s.pool} | {name} | {sim.tasks:,} | {cpu} | {sim.rate:,.0f} | {sim.fixed_cpu_s:.3f} "
                f"| {figure(sim.net_rate)} | {sim.p99_us:.0f} |")
    for s in summaries:
        lines.append(
            f"pool {s.pool}: netsched / horus-sim = {s.ratio:,.0f}x per CPU-second whole process "
            f"(target >= {target:,.0f}x: {verdict(s.ratio, target)}), "
            f"{figure(s.net_ratio, 'x')} net of start-up ({verdict(s.net_ratio, target)})")
    return "\n".join(lines)


def parse_pools(text):
    try:
        pools = [int(p) for p in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"pools must be comma-separated integers, got {text!r}")
    unknown = [p for p in pools if p not in POOL_CONFIGS]
    if unknown or not pools:
        raise argparse.ArgumentTypeError(f"pools must be among {sorted(POOL_CONFIGS)}, got {text!r}")
    return pools


def positive_int(text):
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def load_fraction(text):
    value = float(text)
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"load must be in (0, 1), got {value}")
    return value


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--horus-sim", default=os.environ.get("HORUS_SIM"),
                    help="horus-sim's directory holding simulator.py (default: $HORUS_SIM)")
    ap.add_argument("--python", default=sys.executable,
                    help="Python that runs horus-sim, with numpy, pandas, loguru, docopt (default: this one)")
    ap.add_argument("--netsched", default=str(DEFAULT_NETSCHED), help="netsched binary (default: target/release/netsched)")
    ap.add_argument("--pools", type=parse_pools, default=[50, 1000],
                    help="pool sizes of the small dataset, comma-separated, among 50, 250, 1000 (default: 50,1000)")
    ap.add_argument("--tasks", type=positive_int, default=40000,
                    help="tasks per long run, the same for both simulators: tasks / pool per worker, rounded (default: 40000)")
    ap.add_argument("--repeat", type=positive_int, default=3, help="runs of each simulator per pool (default: 3)")
    ap.add_argument("--policy", choices=sorted(POLICIES), default="horus")
    ap.add_argument("--load", type=load_fraction, default=0.9)
    ap.add_argument("--seed", type=int, default=1, help="netsched's seed (horus-sim seeds itself from the OS)")
    ap.add_argument("--cpu", type=int, default=None,
                    help="the CPU both simulators are pinned to (default: the lowest this process may use)")
    ap.add_argument("--target", type=float, default=1000.0, help="the ratio to judge against (1000)")
    return ap.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    try:
        order = schedule(args.pools, args.repeat, args.tasks)
        directory = find_horus_sim(args.horus_sim)
        netsched = find_netsched(args.netsched)
        check_horus_sim_python(args.python)
        cpu = pinned_cpu(args.cpu)
        print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", file=sys.stderr)
        runs = []
        with tempfile.TemporaryDirectory(prefix="bench-horus-sim-") as scratch:
            for repetition, pool, sim, per_worker, short in order:
                if sim == "horus-sim":
                    run = run_horus_sim(args.python, directory, pool, args.policy, args.load, per_worker, cpu, Path(scratch))
                else:
                    run = run_netsched(netsched, pool, args.policy, args.load, per_worker, args.seed, cpu, Path(scratch))
                run.short = short
                runs.append(run)
                print(f"run {repetition + 1}/{args.repeat} pool {pool} {sim} {'short' if short else 'long'}: "
                      f"{run.tasks:,} tasks, {run.cpu_s:.3f} CPU s, {run.tasks_per_cpu_s:,.0f} tasks/CPU-s",
                      file=sys.stderr)
        print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", file=sys.stderr)
        report = format_report(summarize(runs), args.target)
    except BenchError as error:
        print(f"bench-horus-sim: {error}", file=sys.stderr)
        return 2
    print(f"{args.policy}, load {args.load}, medians of {args.repeat} runs, one CPU each (CPU {cpu}):")
    print(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
