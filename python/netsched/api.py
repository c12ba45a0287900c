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
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Optional, Union

import pandas as pd

from . import _native

Config = Union[str, os.PathLike, Mapping[str, Any]]


def _looks_like_path(s: str) -> bool:
    return "\n" not in s and "=" not in s and s.strip().endswith(".toml")


def _dict_error(e: ValueError) -> ValueError:
    """A dict config's error names the key path, not a line of the TOML the
    dict was turned into (the user never saw it): `topology (line 4): unknown
    field `cores_per_servr`` becomes `topology.cores_per_servr: unknown
    field ...`."""
    msg = str(e)
    m = re.match(r"([\w.\[\]-]*) \(line \d+\): (.*)", msg, re.S)
    if not m:
        return e
    path, rest = m.group(1), m.group(2)
    field_ = re.match(r"unknown field `([^`]+)`", rest)
    if field_ and not path.endswith(field_.group(1)):
        path = f"{path}.{field_.group(1)}" if path else field_.group(1)
    return ValueError(f"{path}: {rest}" if path else rest)


def _native_call(config: Config, fn, *args, **kwargs):
    try:
        return fn(*args, **kwargs)
    except ValueError as e:
        if isinstance(config, Mapping):
            raise _dict_error(e) from None
        raise


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
    return json.loads(_native_call(config, fns[kind], text, label))


def _csv(text: str) -> pd.DataFrame:
    df = pd.read_csv(io.StringIO(text), keep_default_na=False, na_values=[""])
    # Ids are integers, missing where a row has none (a datacenter run has
    # no single pool): nullable integers, not floats that are all NaN.
    for c in df.columns:
        if c.endswith("_id") and pd.api.types.is_numeric_dtype(df[c]):
            v = df[c].dropna()
            if (v == v.round()).all():
                df[c] = df[c].astype("Int64")
    return df


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
    summary, runs, pools, table = _native_call(
        config, _native.run_sim, text, label=label, base_dir=base, threads=threads,
        progress=progress)
    return SimResult(_csv(runs), _csv(pools), json.loads(summary), table)


def run_flowsim(config: Config) -> FlowResult:
    """Runs the Baraat flow-level simulator (`netsched flowsim`)."""
    text, label, _ = to_toml(config)
    summary, runs, tasks, table = _native_call(config, _native.run_flowsim, text, label=label)
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
    summary, runs, table = _native_call(config, _native.run_pull, text, label=label,
                                        base_dir=base)
    return PullResult(_csv(runs), json.loads(summary), table)


def placement(config: Config) -> pd.DataFrame:
    """Every pool's per-rack layout for a `netsched sim` config: one row per
    (pool, rack) with ``pool_id, leaf_id, pod, workers, servers, spine_id``.
    It is the placement a run of the config uses (same topology, placement
    parameters and seed), computed without simulating. Horus App. C Fig. 19a
    groups pools by the variance of their per-rack worker counts."""
    text, label, _ = to_toml(config)
    return _csv(_native_call(config, _native.placement, text, label=label))
