"""Sweeps: many simulator runs (loads × policies × distributions × seeds),
executed on Dask and cached on disk by a hash of their canonical config.

A *point* is one run: labels (the sweep coordinates, e.g. ``{"policy":
"horus", "load": 0.9, "service": "bimodal", "seed": 1}``) and a full config
dict that runs exactly one (policy, load). Its cache key is the SHA-256 of
the canonical config (every default filled in by the simulator's own parser,
minus `threads`, which does not change results) and of netsched's version and
git commit (plus a digest of uncommitted changes under crates/ when the tree
was dirty), so an equivalent config written differently hits the same entry,
a rerun computes only what is missing, a rebuild of the same commit keeps its
results, and changed code never reuses stale ones.
"""
from __future__ import annotations

import copy
import functools
import hashlib
import io
import itertools
import json
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Optional, Sequence

import pandas as pd

from . import api

DEFAULT_CACHE = Path(os.environ.get("NETSCHED_CACHE", Path.home() / ".cache" / "netsched"))
# Part of every key: bump when the simulator's outputs change meaning.
CACHE_VERSION = "1"


@dataclass
class Point:
    labels: dict
    config: dict
    kind: str = "sim"  # "sim" (netsched sim), "flowsim" (Baraat) or "pull" (Draconis, netsched pull)

    def key(self) -> str:
        return config_hash(self.config, self.kind)


@dataclass
class SweepResult:
    """Concatenated outputs of every point, with the label columns first."""

    runs: pd.DataFrame
    pools: pd.DataFrame  # flowsim points: the per-task table; pull points: `pull_details`
    computed: int  # points run now (the rest came from the cache)
    cached: int
    summaries: list = field(default_factory=list, repr=False)


@functools.lru_cache(maxsize=1)
def build_id() -> str:
    """The code the simulator was built from: `<version>+<commit>`, and
    `+dirty.<digest>` when the tree had uncommitted changes under crates/
    (crates/py/build.rs). Rebuilding the same commit keeps the key, so its
    cached results stay valid; a new commit or an edit gets fresh keys."""
    from . import _native

    version, commit = _native.build_info()
    # Modules built before source_tree existed cannot say; treat as clean.
    tree = getattr(_native, "source_tree", lambda: "clean")()
    bid = f"{version}+{commit[:12]}"
    return bid if tree == "clean" else f"{bid}+dirty.{tree[:12]}"


def config_hash(config: dict, kind: str = "sim") -> str:
    canon = api.canonical_config(config, kind)
    canon.pop("threads", None)
    blob = json.dumps({"kind": kind, "v": CACHE_VERSION, "build": build_id(), "config": canon},
                      sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:32]


@dataclass(frozen=True)
class Variant:
    """A policy with config overrides, swept as if it were a policy of its
    own: on the ``policy`` axis its `name` is the curve's label (the
    ``policy`` column of the results) and the point's config gets `policy`
    plus every override, a dotted config path -> value (e.g.
    ``{"schedulers.horus.preset": "horus-sim"}``). The overrides are part of
    the config, so they are part of the cache key (`config_hash`)."""

    name: str
    policy: str
    overrides: Mapping[str, Any] = field(default_factory=dict)

    def apply(self, cfg: dict) -> None:
        cfg["policy"] = self.policy
        cfg.pop("sweep", None)
        for path, v in self.overrides.items():
            set_path(cfg, path, copy.deepcopy(v))

    def with_overrides(self, **more: Any) -> "Variant":
        """The same variant (same name) with more overrides, given as
        ``path=value`` with ``__`` for the dots:
        ``v.with_overrides(schedulers__horus__idle_link="own-group")``."""
        extra = {k.replace("__", "."): v for k, v in more.items()}
        return Variant(self.name, self.policy, {**self.overrides, **extra})


# Named variants a sweep may give by name on the `policy` axis. Horus's
# mechanism choices (crates/sim/src/config.rs HorusConfig, docs/fidelity.md):
# `horus` alone is the paper's and the P4's mechanism (preset "paper").
VARIANTS: dict[str, Variant] = {
    v.name: v
    for v in (
        # The authors' Python simulator at e2ed839, unmodified: the
        # configuration that produced the paper's simulation figures,
        # including its shared idle set (leaf_idle_scope = "pool").
        Variant("horus (horus-sim)", "horus", {"schedulers.horus.preset": "horus-sim"}),
        # The authors' choices with the shared idle set fixed (rack scope).
        Variant("horus (horus-sim-fixed)", "horus",
                {"schedulers.horus.preset": "horus-sim-fixed"}),
    )
}


def variant(v: Any) -> Optional[Variant]:
    """`v` as a Variant if it is one or names one in `VARIANTS`, else None
    (a plain policy name)."""
    if isinstance(v, Variant):
        return v
    if isinstance(v, str):
        return VARIANTS.get(v)
    return None


def grid(base: dict, *, kind: str = "sim", **axes: Sequence[Any]) -> list[Point]:
    """The product of the axes over a base config. Known axes: ``policy``
    (a policy name, a `Variant` or the name of one in `VARIANTS`), ``load``,
    ``seed``, ``service`` (a preset name or a service dict, put in
    ``workload.service``); any other axis is a dotted config path, e.g.
    ``**{"network.loss": [0, 1e-3]}``. `kind` is the simulator the points run
    on ("sim", "flowsim" or "pull")."""
    names = list(axes)
    points = []
    for values in itertools.product(*(axes[n] for n in names)):
        cfg = copy.deepcopy(base)
        labels = {}
        for name, v in zip(names, values):
            set_axis(cfg, name, v)
            labels[name] = label_of(name, v)
        points.append(Point(labels, cfg, kind))
    return points


def label_of(name: str, v: Any) -> Any:
    """The value an axis puts in the results' column `name`."""
    if name == "policy" and isinstance(v, Variant):
        return v.name
    return v if not isinstance(v, dict) else v.get("name", json.dumps(v))


def set_path(cfg: dict, path: str, v: Any) -> None:
    *head, leaf = path.split(".")
    t = cfg
    for p in head:
        t = t.setdefault(p, {})
    t[leaf] = v


def set_axis(cfg: dict, name: str, v: Any) -> None:
    if name == "policy":
        var = variant(v)
        if var is not None:
            var.apply(cfg)
            return
        cfg["policy"] = v
        cfg.pop("sweep", None)
    elif name == "load":
        cfg.setdefault("workload", {})["load"] = v
        cfg.pop("sweep", None)
    elif name == "seed":
        cfg["seed"] = v
    elif name == "service":
        cfg.setdefault("workload", {})["service"] = (
            {"kind": "preset", "name": v} if isinstance(v, str) else v
        )
    else:
        set_path(cfg, name, v)


# --- the on-disk cache -------------------------------------------------------

def _entry(cache_dir: Path, key: str) -> Path:
    return Path(cache_dir) / key[:2] / key


def cached(cache_dir: Path, key: str) -> bool:
    return (_entry(cache_dir, key) / "done").exists()


def _load(cache_dir: Path, key: str) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    d = _entry(cache_dir, key)
    def read(n):
        try:
            return pd.read_csv(d / n, keep_default_na=False, na_values=[""])
        except pd.errors.EmptyDataError:  # a pull point's (empty) second table
            return pd.DataFrame()
    return read("runs.csv"), read("second.csv"), json.loads((d / "summary.json").read_text())


def pull_details(summary: dict) -> pd.DataFrame:
    """A pull run's results that `runs.csv` does not carry, one row per run:
    placement fractions (locality, Draconis §8.5), tasks per node per second
    per (group, phase) and the drain time (resources, §8.5), constraint
    checks, the scheduling/response/completion percentiles, the get_task()
    step per priority level (Draconis policies, Fig. 13)."""
    rows = []
    for r in summary.get("runs", []):
        row = {"policy": r["policy"], "load": r["load"]}
        for name in ("sched", "response", "completion"):
            for q in ("p50", "p90", "p99", "p999"):
                row[f"{name}_{q}_us"] = r[name][f"{q}_ns"] / 1e3
            row[f"{name}_mean_us"] = r[name]["mean_ns"] / 1e3
        if "response_p66_ns" in r:
            row["response_p66_us"] = r["response_p66_ns"] / 1e3
        for i, lvl in enumerate(r.get("sched_by_level", [])):
            row[f"sched_l{i + 1}_p50_us"] = lvl["p50_ns"] / 1e3
            row[f"sched_l{i + 1}_p90_us"] = lvl["p90_ns"] / 1e3
            row[f"sched_l{i + 1}_p99_us"] = lvl["p99_ns"] / 1e3
            row[f"sched_l{i + 1}_count"] = lvl["count"]
        for i, lvl in enumerate(r.get("get_task_by_level", [])):
            if lvl["count"]:
                row[f"get_task_l{i + 1}_p50_us"] = lvl["p50_ns"] / 1e3
                row[f"get_task_l{i + 1}_p90_us"] = lvl["p90_ns"] / 1e3
                row[f"get_task_l{i + 1}_p99_us"] = lvl["p99_ns"] / 1e3
        if r.get("placement"):
            row["placed_node"], row["placed_rack"], row["placed_remote"] = r["placement"]
        if r.get("resource"):
            for g, per_phase in enumerate(r["resource"]["tasks_per_node_per_s"]):
                for ph, v in enumerate(per_phase):
                    row[f"g{g + 1}_phase_{'ABC'[ph]}_tps_per_node"] = v
            row["drain_us"] = r["resource"]["drain_us"]
        for k in ("resource_violations", "locality_violations", "max_skips"):
            row[k] = r[k]
        rows.append(row)
    return pd.DataFrame(rows)


def per_class_columns(summary: dict) -> pd.DataFrame:
    """A sim run's per-class response times (RackSched Fig. 13c-d: GET and
    SCAN separately), which `runs.csv` leaves out because their number varies
    with the workload: one row per run, columns ``class_<name>_p50_us``,
    ``class_<name>_p99_us``, ``class_<name>_mean_us`` and ``class_<name>_count``
    (``<name>`` is the class name, e.g. ``get``, ``50us``, or its index)."""
    rows = []
    for r in summary.get("runs", []):
        row = {}
        for c in r["overall"].get("per_class", []):
            name = c.get("name") or str(c["class"])
            resp = c["response"]
            row[f"class_{name}_p50_us"] = resp["p50_ns"] / 1e3
            row[f"class_{name}_p99_us"] = resp["p99_ns"] / 1e3
            row[f"class_{name}_mean_us"] = resp["mean_ns"] / 1e3
            row[f"class_{name}_count"] = resp["count"]
        rows.append(row)
    return pd.DataFrame(rows, index=range(len(rows)))


@dataclass
class PointResult:
    """What one point produced, as it travels from a Dask worker back to the
    driver: the runs table, the second table (per-pool, per-task or pull
    details), the summary, and the build of the simulator that ran it."""

    runs: pd.DataFrame
    second: pd.DataFrame
    summary: dict
    build: str


def run_point(point: Point, threads: Optional[int] = None) -> PointResult:
    """Runs one point and returns its results; touches no disk. This is what
    a Dask worker runs: the cache lives with the driver, so a cluster without
    a shared filesystem (or with another home directory) still fills it."""
    if point.kind == "sim":
        r = api.run_sim(point.config, threads=threads)
        second = r.pools
    elif point.kind == "flowsim":
        r = api.run_flowsim(point.config)
        second = r.tasks
    elif point.kind == "pull":
        # A pull config runs one (policy, load) per point (no [sweep] table),
        # so its runs table has one row and nothing else per-pool/per-task.
        r = api.run_pull(point.config)
        second = pull_details(r.summary)
    else:
        raise ValueError(f"unknown point kind `{point.kind}`")
    return PointResult(r.runs, second, r.summary, build_id())


def store_point(cache_dir: os.PathLike, key: str, point: Point, result: PointResult) -> None:
    """Writes a point's results under `key` (computed by the caller, with the
    caller's simulator build). Written to a temporary directory and renamed,
    so a crash or two writers racing never leave half an entry."""
    if result.build != build_id():
        # The key names this process's simulator; results of another build
        # stored under it would be reused as if this one had produced them.
        raise ValueError(
            f"a worker ran simulator build {result.build}, this process has {build_id()}: "
            "install the same netsched wheel on the Dask workers as on the driver"
        )
    final = _entry(Path(cache_dir), key)
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=final.parent, prefix=f".{key}-"))
    result.runs.to_csv(tmp / "runs.csv", index=False)
    result.second.to_csv(tmp / "second.csv", index=False)
    (tmp / "summary.json").write_text(json.dumps(result.summary))
    (tmp / "config.json").write_text(json.dumps({"kind": point.kind, "config": point.config,
                                                 "build": result.build}))
    (tmp / "done").write_text("")
    try:
        os.rename(tmp, final)
    except OSError:  # another writer finished the same point first
        shutil.rmtree(tmp, ignore_errors=True)


@dataclass
class CacheStats:
    entries: int
    bytes: int
    removed: int = 0
    freed_bytes: int = 0


def _size(d: Path) -> int:
    return sum(f.stat().st_size for f in d.rglob("*") if f.is_file())


def prune_cache(cache_dir: Optional[os.PathLike] = None, everything: bool = False,
                dry_run: bool = False) -> CacheStats:
    """Removes the cache entries no run can hit again: those written by
    another netsched version, commit or uncommitted tree (`build_id`; a
    rebuild of the same clean commit keeps its entries), unfinished ones,
    and with `everything` all of them.
    Returns what is left and what went."""
    root = Path(cache_dir or DEFAULT_CACHE)
    current = build_id()
    stats = CacheStats(0, 0)
    if not root.exists():
        return stats
    for shard in sorted(p for p in root.iterdir() if p.is_dir()):
        for entry in sorted(p for p in shard.iterdir() if p.is_dir()):
            size = _size(entry)
            try:
                build = json.loads((entry / "config.json").read_text()).get("build")
            except (OSError, ValueError):
                build = None
            stale = (everything or build != current or not (entry / "done").exists())
            if stale:
                stats.removed += 1
                stats.freed_bytes += size
                if not dry_run:
                    shutil.rmtree(entry, ignore_errors=True)
            else:
                stats.entries += 1
                stats.bytes += size
    return stats


def compute_point(point: Point, cache_dir: str, threads: Optional[int] = None) -> str:
    """Runs one point in this process and stores it in the cache at
    `cache_dir`; returns its key."""
    key = point.key()
    if not cached(Path(cache_dir), key):
        store_point(cache_dir, key, point, run_point(point, threads))
    return key


# --- execution ---------------------------------------------------------------

def _progress(total: int, desc: str, enabled: bool):
    from tqdm.auto import tqdm

    # disable=None: tqdm turns itself off when stderr is not a terminal, so
    # a redirected log gets no carriage-return frames.
    return tqdm(total=total, desc=desc, unit="run", disable=None if enabled else True,
                leave=False)


def run_points(
    points: Iterable[Point],
    cache_dir: Optional[os.PathLike] = None,
    scheduler: Optional[str] = None,
    client=None,
    n_workers: Optional[int] = None,
    serial: bool = False,
    progress: bool = True,
    desc: str = "sweep",
) -> SweepResult:
    """Runs every point not already cached, then returns all of them.

    Missing points run on Dask: on `client` if given, else on the cluster at
    `scheduler` (``tcp://host:8786``), else on a fresh LocalCluster of
    `n_workers` processes (default: the machine's cores) with one thread
    each. `serial=True` runs them in this process instead, one after another
    with every core given to the simulator's own pool threads.
    """
    points = list(points)
    cache_dir = Path(cache_dir or DEFAULT_CACHE)
    cache_dir.mkdir(parents=True, exist_ok=True)
    keys = [p.key() for p in points]
    missing = {}
    for k, p in zip(keys, points):
        if not cached(cache_dir, k) and k not in missing:
            missing[k] = p
    todo = list(missing.values())
    if todo:
        if serial:
            with _progress(len(todo), desc, progress) as bar:
                for p in todo:
                    compute_point(p, str(cache_dir))
                    bar.update(1)
        else:
            _run_on_dask(todo, cache_dir, scheduler, client, n_workers, progress, desc)
    runs, seconds, summaries = [], [], []
    for k, p in zip(keys, points):
        r, s, summ = _load(cache_dir, k)
        if p.kind == "sim" and len(r):
            extra = per_class_columns(summ)
            # runs.csv and summary.json list the same runs in the same order.
            assert len(extra) == len(r), f"{len(extra)} summaries for {len(r)} runs"
            r = pd.concat([r.reset_index(drop=True), extra], axis=1)
        for df in (r, s):
            for name, v in reversed(list(p.labels.items())):
                if name in df:
                    df[name] = v
                else:
                    df.insert(0, name, [v] * len(df))
        runs.append(r)
        seconds.append(s)
        summaries.append(summ)
    return SweepResult(
        runs=pd.concat(runs, ignore_index=True) if runs else pd.DataFrame(),
        pools=pd.concat(seconds, ignore_index=True) if seconds else pd.DataFrame(),
        computed=len(todo),
        cached=len(set(keys)) - len(todo),
        summaries=summaries,
    )


def _run_on_dask(todo, cache_dir, scheduler, client, n_workers, progress, desc):
    from dask.distributed import Client, LocalCluster, as_completed

    own_cluster = None
    own_client = None
    if client is None:
        if scheduler:
            own_client = client = Client(scheduler)
        else:
            n = n_workers or os.cpu_count() or 1
            own_cluster = LocalCluster(
                n_workers=n, threads_per_worker=1, processes=True, dashboard_address=None
            )
            own_client = client = Client(own_cluster)
    try:
        # One simulator thread per Dask task: the cluster provides the
        # parallelism. Workers only compute; keys and the cache are the
        # driver's (a remote worker has neither its disk nor its build hash).
        keys = {}
        futures = []
        for p in todo:
            key = p.key()
            f = client.submit(run_point, p, 1, key=f"netsched-{key}", pure=False)
            keys[f.key] = (key, p)
            futures.append(f)
        with _progress(len(futures), desc, progress) as bar:
            for f in as_completed(futures):
                result = f.result()  # re-raises a worker's ValueError here
                key, p = keys[f.key]
                store_point(cache_dir, key, p, result)
                f.release()
                bar.update(1)
    finally:
        if own_client is not None:
            own_client.close()
        if own_cluster is not None:
            own_cluster.close()
