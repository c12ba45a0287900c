"""Run the Rust simulators from Python.

A config is TOML text, a path to a TOML file, or a dict with the TOML file's
structure. The simulation runs in Rust with the GIL released; its outputs are
the files `netsched sim` / `netsched flowsim` write, turned into DataFrames.
Bad configs raise ValueError with the CLI's one-line message.
"""
from __future__ import annotations

import io
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Optional, Union

import pandas as pd

from . import _native

Config = Union[str, os.PathLike, Mapping[str, Any]]


def _looks_like_path(s: str) -> bool:
    return "\n" not in s and "=" not in s and s.strip().endswith(".toml")


def to_toml(config: Config) -> tuple[str, Optional[str], str]:
    """(TOML text, label for error messages, base directory for relative paths)."""
    if isinstance(config, Mapping):
        return _native.json_to_toml(json.dumps(config)), None, "."
    if isinstance(config, os.PathLike) or (isinstance(config, str) and _looks_like_path(config)):
        p = Path(config)
        try:
            text = p.read_text()
        except OSError as e:
            # The CLI's message for an unreadable config: `path: reason`.
            raise ValueError(f"{p}: {e.strerror or e}") from None
        return text, str(p), str(p.parent) if str(p.parent) else "."
    if isinstance(config, str):
        return config, None, "."
    raise TypeError(f"config must be TOML text, a path or a dict, not {type(config).__name__}")


def canonical_config(config: Config, kind: str = "sim") -> dict:
    """The config with every default filled in, as the simulator reads it."""
    text, label, _ = to_toml(config)
    fns = {"sim": _native.canonical_sim, "flowsim": _native.canonical_flowsim,
           "pull": _native.canonical_pull}
    if kind not in fns:
        raise ValueError(f"unknown simulator kind `{kind}` (expected one of: {', '.join(fns)})")
    return json.loads(fns[kind](text, label))


def _csv(text: str) -> pd.DataFrame:
    return pd.read_csv(io.StringIO(text), keep_default_na=False, na_values=[""])


@dataclass
class SimResult:
    """One `netsched sim` invocation: `runs` (one row per policy × load),
    `pools` (one row per pool and run), `summary` (summary.json) and `table`
    (the CLI's printed table)."""

    runs: pd.DataFrame
    pools: pd.DataFrame
    summary: dict
    table: str = field(repr=False)


@dataclass
class FlowResult:
    """One `netsched flowsim` invocation: `runs`, `tasks` (one row per task and
    run), `summary` and `table`."""

    runs: pd.DataFrame
    tasks: pd.DataFrame
    summary: dict
    table: str = field(repr=False)


def run_sim(config: Config, threads: Optional[int] = None, progress: bool = False) -> SimResult:
    """Runs a datacenter simulation (`netsched sim`). `threads` overrides the
    config's thread count (results do not depend on it)."""
    text, label, base = to_toml(config)
    summary, runs, pools, table = _native.run_sim(
        text, label=label, base_dir=base, threads=threads, progress=progress
    )
    return SimResult(_csv(runs), _csv(pools), json.loads(summary), table)


def run_flowsim(config: Config) -> FlowResult:
    """Runs the Baraat flow-level simulator (`netsched flowsim`)."""
    text, label, _ = to_toml(config)
    summary, runs, tasks, table = _native.run_flowsim(text, label=label)
    return FlowResult(_csv(runs), _csv(tasks), json.loads(summary), table)


@dataclass
class PullResult:
    """One `netsched pull` invocation (the Draconis pull simulator): `runs`
    (one row per policy × load), `summary` and `table`."""

    runs: pd.DataFrame
    summary: dict
    table: str = field(repr=False)


def run_pull(config: Config) -> PullResult:
    """Runs the pull-based scheduling simulator (`netsched pull`: Draconis,
    Draconis-Server, R2P2 JBSQ, Sparrow, RackSched)."""
    text, label, base = to_toml(config)
    summary, runs, table = _native.run_pull(text, label=label, base_dir=base)
    return PullResult(_csv(runs), json.loads(summary), table)


def placement(config: Config) -> pd.DataFrame:
    """Every pool's per-rack layout for a `netsched sim` config: one row per
    (pool, rack) with ``pool_id, leaf_id, pod, workers, servers, spine_id``.
    It is the placement a run of the config uses (same topology, placement
    parameters and seed), computed without simulating. Horus App. C Fig. 19a
    groups pools by the variance of their per-rack worker counts."""
    text, label, _ = to_toml(config)
    return _csv(_native.placement(text, label=label))
