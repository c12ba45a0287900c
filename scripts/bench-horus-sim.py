#!/usr/bin/env python3
"""Tasks per CPU-second of netsched and of the Horus authors' simulator, on one configuration (issue 17 goal 4).

    cargo build --release -p netsched
    python3 scripts/bench-horus-sim.py --horus-sim DIR [--pools 50,1000] [--tasks 20000] [--repeat 3]

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
The two alternate run by run, and the medians over --repeat runs are
reported, with their ratio.

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
        probe = subprocess.run([python, "-c", f"import {module}"], capture_output=True)
        if probe.returncode != 0:
            missing.append(module)
    if missing:
        raise BenchError(f"{python} lacks horus-sim's modules {', '.join(missing)}: pip install them or pass --python")


def find_netsched(binary):
    path = Path(binary)
    if not os.access(path, os.X_OK):
        raise BenchError(f"{path} not found: build it with `cargo build --release -p netsched`")
    return path


def tasks_per_worker(tasks, pool):
    """Whole tasks per worker closest to `tasks` per pool: horus-sim draws
    NUM_TASK_PER_WORKER * workers service times, so it must be an integer."""
    return max(1, round(tasks / pool))


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


@dataclass
class PoolSummary:
    pool: int
    tasks: dict  # simulator -> tasks per run (median)
    rates: dict  # simulator -> median tasks per CPU-second
    cpu: dict  # simulator -> list of CPU seconds, in run order
    p99_us: dict  # simulator -> median p99 µs

    @property
    def ratio(self):
        return self.rates["netsched"] / self.rates["horus-sim"]


def summarize(runs):
    """Per pool: the median tasks per CPU-second of each simulator over its
    runs, and netsched's median over horus-sim's."""
    summaries = []
    for pool in sorted({r.pool for r in runs}):
        of_pool = [r for r in runs if r.pool == pool]
        by_sim = {sim: [r for r in of_pool if r.simulator == sim] for sim in ("horus-sim", "netsched")}
        for sim, sim_runs in by_sim.items():
            if not sim_runs:
                raise BenchError(f"pool {pool} has no {sim} run")
        summaries.append(PoolSummary(
            pool=pool,
            tasks={s: int(statistics.median(r.tasks for r in rs)) for s, rs in by_sim.items()},
            rates={s: statistics.median(r.tasks_per_cpu_s for r in rs) for s, rs in by_sim.items()},
            cpu={s: [r.cpu_s for r in rs] for s, rs in by_sim.items()},
            p99_us={s: statistics.median(r.p99_us for r in rs) for s, rs in by_sim.items()},
        ))
    return summaries


def format_report(summaries, target):
    lines = [
        "| pool | tasks per run (horus-sim / netsched) | horus-sim CPU s per run | netsched CPU s per run "
        "| horus-sim tasks/CPU-s | netsched tasks/CPU-s | ratio | p99 µs (horus-sim / netsched) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for s in summaries:
        cpu = {sim: ", ".join(f"{c:.3f}" for c in s.cpu[sim]) for sim in s.cpu}
        lines.append(
            f"| {s.pool} | {s.tasks['horus-sim']:,} / {s.tasks['netsched']:,} | {cpu['horus-sim']} | {cpu['netsched']} "
            f"| {s.rates['horus-sim']:,.0f} | {s.rates['netsched']:,.0f} | {s.ratio:,.0f}x "
            f"| {s.p99_us['horus-sim']:.0f} / {s.p99_us['netsched']:.0f} |")
    for s in summaries:
        verdict = "met" if s.ratio >= target else "not met"
        lines.append(f"pool {s.pool}: netsched / horus-sim = {s.ratio:,.0f}x per CPU-second (target >= {target:,.0f}x: {verdict})")
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
    ap.add_argument("--tasks", type=positive_int, default=20000,
                    help="tasks per run, the same for both simulators: tasks / pool per worker, rounded (default: 20000)")
    ap.add_argument("--repeat", type=positive_int, default=3, help="runs of each simulator per pool (default: 3)")
    ap.add_argument("--policy", choices=sorted(POLICIES), default="horus")
    ap.add_argument("--load", type=load_fraction, default=0.9)
    ap.add_argument("--seed", type=int, default=1, help="netsched's seed (horus-sim seeds itself from the OS)")
    ap.add_argument("--cpu", type=int, default=None,
                    help="the CPU both simulators are pinned to (default: the lowest this process may use)")
    ap.add_argument("--target", type=float, default=1000.0, help="the ratio to judge against (issue 17: 1000)")
    return ap.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    try:
        directory = find_horus_sim(args.horus_sim)
        netsched = find_netsched(args.netsched)
        check_horus_sim_python(args.python)
        cpu = min(os.sched_getaffinity(0)) if args.cpu is None else args.cpu
        print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", file=sys.stderr)
        runs = []
        with tempfile.TemporaryDirectory(prefix="bench-horus-sim-") as scratch:
            for repetition in range(args.repeat):
                for pool in args.pools:
                    per_worker = tasks_per_worker(args.tasks, pool)
                    sides = [
                        lambda: run_horus_sim(args.python, directory, pool, args.policy, args.load, per_worker, cpu, Path(scratch)),
                        lambda: run_netsched(netsched, pool, args.policy, args.load, per_worker, args.seed, cpu, Path(scratch)),
                    ]
                    # Alternate which goes first, so a drift in the machine's load falls on both.
                    for side in sides if repetition % 2 == 0 else sides[::-1]:
                        run = side()
                        runs.append(run)
                        print(f"run {repetition + 1}/{args.repeat} pool {pool} {run.simulator}: {run.tasks:,} tasks, "
                              f"{run.cpu_s:.3f} CPU s, {run.tasks_per_cpu_s:,.0f} tasks/CPU-s", file=sys.stderr)
        print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", file=sys.stderr)
    except BenchError as error:
        print(f"bench-horus-sim: {error}", file=sys.stderr)
        return 2
    print(f"{args.policy}, load {args.load}, medians of {args.repeat} runs, one CPU each (CPU {cpu}):")
    print(format_report(summarize(runs), args.target))
    return 0


if __name__ == "__main__":
    sys.exit(main())
