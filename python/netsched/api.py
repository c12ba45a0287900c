"""Run the Rust simulators from Python: the datacenter simulator of Horus
(NSDI '24) and RackSched (OSDI '20) (`run_sim`), the pull simulator of
Draconis (EuroSys '24) (`run_pull`) and the flow-level simulator of Baraat
(SIGCOMM '14) (`run_flowsim`).

A config is TOML text, a path to a TOML file, or a dict with the TOML file's
structure. The simulation runs in Rust with the GIL released; its outputs are
the files `netsched sim` / `pull` / `flowsim` write, turned into DataFrames.

Errors: a config the simulator refuses raises `ConfigError` (a `ValueError`)
carrying the CLI's one-line message and the key path (`err.key`, e.g.
`sweep.loads[0]`); a missing file raises `FileNotFoundError`; a bad argument
(`threads=-1`) raises `ValueError` or `TypeError` naming it.
"""
from __future__ import annotations

import errno
import io
import json
import os
import re
from dataclasses import dataclass, field
from types import MappingProxyType
from pathlib import Path
from typing import Any, Mapping, Optional, Union

import pandas as pd

from . import _native

Config = Union[str, os.PathLike, Mapping[str, Any]]


def _looks_like_path(s: str) -> bool:
    return "\n" not in s and "=" not in s and s.strip().endswith(".toml")


class ConfigError(ValueError):
    """A config a simulator refuses, with the CLI's one-line message.

    Attributes:
        key: the dotted key path the error is about (``"sweep.loads[0]"``,
            ``"placement.pools"``), or None when the message names none.
        line: the TOML line, when the config was TOML text or a file.
        file: the config file, when the config was a path.
        hint: which function reads this kind of config, when it is not the
            one called (a pull config given to `run_sim`), else None.
    """

    def __init__(self, message: str, key: Optional[str] = None, line: Optional[int] = None,
                 file: Optional[str] = None, hint: Optional[str] = None):
        super().__init__(message + (f" ({hint})" if hint else ""))
        self.key, self.line, self.file, self.hint = key, line, file, hint


_KEYED = re.compile(r"([A-Za-z_][\w.\[\]-]*)(?: \(line (\d+)\))?: (.*)", re.S)


def _config_error(msg: str, label: Optional[str], from_dict: bool,
                  hint: Optional[str] = None) -> ConfigError:
    """A native error message as a ConfigError with its key path. A dict
    config's error names the key path, not a line of the TOML the dict was
    turned into (the user never saw it): `topology (line 4): unknown field
    `cores_per_servr`` becomes `topology.cores_per_servr: unknown field ...`."""
    rest = msg
    if label and rest.startswith(label + ": "):
        rest = rest[len(label) + 2:]
    m = _KEYED.fullmatch(rest)
    if not m:
        return ConfigError(msg, file=label, hint=hint)
    key, line, body = m.group(1), m.group(2), m.group(3)
    unknown = re.match(r"unknown field `([^`]+)`", body)
    if unknown and not key.endswith(unknown.group(1)):
        key = f"{key}.{unknown.group(1)}"
    if from_dict:
        return ConfigError(f"{key}: {body}", key=key, hint=hint)
    return ConfigError(msg, key=key, line=int(line) if line else None, file=label, hint=hint)


# Which function runs which kind of config, and the native parser that
# accepts it (for the hint when the wrong one is called).
_RUNNERS = {"sim": ("run_sim", "canonical_sim"), "pull": ("run_pull", "canonical_pull"),
            "flowsim": ("run_flowsim", "canonical_flowsim")}


def _hint(text: str, called: str) -> Optional[str]:
    """`this is a pull config: use netsched.run_pull` when the TOML parses as
    another simulator's config but not as `called`'s."""
    for kind, (fn, parser) in _RUNNERS.items():
        if kind == called:
            continue
        try:
            getattr(_native, parser)(text, None)
        except ValueError:
            continue
        return f"this is a {kind} config: use netsched.{fn}"
    return None


def _native_call(config: Config, kind: str, fn, *args, **kwargs):
    try:
        return fn(*args, **kwargs)
    except ValueError as e:
        label = kwargs.get("label")
        text = args[0] if args and isinstance(args[0], str) else None
        hint = _hint(text, kind) if text is not None else None
        raise _config_error(str(e), label, isinstance(config, Mapping), hint) from None


def policy_names() -> Mapping[str, tuple[str, ...]]:
    """Every policy name by family, as the simulators parse them: ``push``
    (`run_sim`: horus, rs-h, ...), ``pull`` (`run_pull`: draconis,
    r2p2-recirc, ...) and ``flow`` (`run_flowsim`: fair, baraat, ...). No
    name is in two families. From the native module, so a renamed or added
    policy needs no copy here."""
    global _POLICY_NAMES
    if _POLICY_NAMES is None:
        _POLICY_NAMES = MappingProxyType({k: tuple(v) for k, v in _native.policy_names().items()})
    return _POLICY_NAMES


_POLICY_NAMES: Optional[Mapping[str, tuple[str, ...]]] = None

# Which family of `policy_names` each simulator kind reads.
FAMILY = {"sim": "push", "pull": "pull", "flowsim": "flow"}


def simulator_of(policy: str) -> str:
    """The simulator kind (``sim``, ``pull`` or ``flowsim``) a policy name
    runs on; ValueError naming every family for a name none has."""
    for kind, family in FAMILY.items():
        if policy in policy_names()[family]:
            return kind
    known = "; ".join(f"{f}: {', '.join(n)}" for f, n in policy_names().items())
    raise ValueError(f"unknown policy {policy!r} ({known})")


def to_toml(config: Config) -> tuple[str, Optional[str], str]:
    """A config as (TOML text, label for error messages, base directory).

    Args:
        config: TOML text, a path to a ``.toml`` file (str or os.PathLike),
            or a dict with the TOML file's structure.

    Returns:
        The TOML text; the file's path as the label errors start with (None
        for text and dicts); the directory relative paths in the config (a
        trace file) are resolved against (``"."`` for text and dicts).

    Raises:
        FileNotFoundError: a path that does not exist.
        TypeError: anything else than text, a path or a dict.

    Example:
        >>> to_toml({"seed": 3})[0].strip()
        'seed = 3'
    """
    if isinstance(config, Mapping):
        return _native.json_to_toml(json.dumps(config)), None, "."
    if isinstance(config, os.PathLike) or (isinstance(config, str) and _looks_like_path(config)):
        p = Path(config)
        if not p.exists():
            raise FileNotFoundError(errno.ENOENT, "no such config file", str(p))
        # Another failure (a directory, no permission) is the OSError itself.
        text = p.read_text()
        return text, str(p), str(p.parent) if str(p.parent) else "."
    if isinstance(config, str):
        return config, None, "."
    raise TypeError(f"config must be TOML text, a path or a dict, not {type(config).__name__}")


def canonical_config(config: Config, kind: str = "sim") -> dict:
    """The config with every default filled in, as the simulator reads it.

    Args:
        config: TOML text, a path to a TOML file, or a dict.
        kind: which simulator reads it: ``"sim"`` (Horus, RackSched),
            ``"pull"`` (Draconis) or ``"flowsim"`` (Baraat).

    Returns:
        A dict with every table and key of that simulator's config.

    Raises:
        ConfigError: the simulator refuses the config (``err.key`` names
            the key).
        ValueError: an unknown ``kind``.

    Example:
        >>> canonical_config({"seed": 3})["seed"]
        3
    """
    if kind not in _RUNNERS:
        raise ValueError(f"unknown simulator kind `{kind}` "
                         f"(expected one of: {', '.join(_RUNNERS)})")
    text, label, _ = to_toml(config)
    fn = getattr(_native, _RUNNERS[kind][1])
    return json.loads(_native_call(config, kind, fn, text, label=label))


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


def _check_threads(threads: Optional[int]) -> None:
    if threads is None:
        return
    if isinstance(threads, bool) or not isinstance(threads, int):
        raise TypeError(f"threads must be an int (0 = all cores) or None, "
                        f"not {type(threads).__name__}")
    if threads < 0:
        raise ValueError(f"threads must be >= 0 (0 = all cores), got {threads}")


def run_sim(config: Config, threads: Optional[int] = None, progress: bool = False) -> SimResult:
    """Runs a datacenter simulation, as `netsched sim -c CONFIG` does: every
    (policy, load) of the config's sweep (Horus, RS-H, RS-LB, JSQ, ...).

    Args:
        config: a `netsched sim` config: TOML text, a path to a TOML file
            (experiments/main.toml), or a dict with its structure.
        threads: worker threads (0 = all cores; default: the config's).
            Results do not depend on it.
        progress: print progress lines on stderr while pools run.

    Returns:
        A SimResult. ``runs`` has one row per (policy, load): ``policy``,
        ``load``, ``p50_us``, ``p99_us``, ``p999_us``, ``mean_us`` (response
        time, µs), ``wall_s``, then the summary's columns (``submitted``,
        ``completed``, counts of messages and drops, queue statistics and
        per-class quantiles). ``pools`` has the same summary per pool and
        run (``policy``, ``load`` then the summary). ``summary`` is
        summary.json (the config and every run); ``table`` the printed table.

    Raises:
        ConfigError: the simulator refuses the config; ``err.key`` names
            the key, and a pull or flowsim config says which function runs it.
        FileNotFoundError: a config path that does not exist.
        ValueError, TypeError: a bad ``threads``.

    Example:
        >>> res = run_sim("experiments/main.toml", threads=2)      # doctest: +SKIP
        >>> res.runs[["policy", "load", "p99_us"]]                  # doctest: +SKIP
    """
    _check_threads(threads)
    if not isinstance(progress, bool):
        raise TypeError(f"progress must be a bool, not {type(progress).__name__}")
    text, label, base = to_toml(config)
    summary, runs, pools, table = _native_call(
        config, "sim", _native.run_sim, text, label=label, base_dir=base, threads=threads,
        progress=progress)
    return SimResult(_csv(runs), _csv(pools), json.loads(summary), table)


def run_flowsim(config: Config) -> FlowResult:
    """Runs the Baraat flow-level simulator, as `netsched flowsim -c CONFIG`
    does: every policy of the config (fair sharing, pFabric, Orchestra, STF,
    Baraat's FIFO-LM) on the same tasks.

    Args:
        config: a `netsched flowsim` config: TOML text, a path
            (experiments/baraat.toml) or a dict.

    Returns:
        A FlowResult. ``runs`` has one row per policy (and per threshold of
        a sweep): the policy, task counts and task completion time
        statistics (mean, percentiles, in ms). ``tasks`` has one row per
        task and run (arrival, size, completion time). ``summary`` is
        summary.json; ``table`` the printed table (with Baraat's Table 4
        comparison when the policies allow it).

    Raises:
        ConfigError: the simulator refuses the config (a sim or pull config
            says which function runs it).
        FileNotFoundError: a config path that does not exist.

    Example:
        >>> res = run_flowsim({"policies": ["fair", "baraat"],
        ...                    "workload": {"tasks": 200}})           # doctest: +SKIP
        >>> res.runs                                                  # doctest: +SKIP
    """
    text, label, _ = to_toml(config)
    summary, runs, tasks, table = _native_call(config, "flowsim", _native.run_flowsim, text,
                                               label=label)
    return FlowResult(_csv(runs), _csv(tasks), json.loads(summary), table)


@dataclass
class PullResult:
    """One `netsched pull` invocation (the Draconis pull simulator): `runs`
    (one row per policy × load), `summary` and `table`."""

    runs: pd.DataFrame
    summary: dict
    table: str = field(repr=False)


def run_pull(config: Config) -> PullResult:
    """Runs the pull-based scheduling simulator, as `netsched pull -c CONFIG`
    does: Draconis (and its priority, resource and locality policies),
    Draconis-Server, R2P2 JBSQ, Sparrow and RackSched on one switch.

    Args:
        config: a `netsched pull` config: TOML text, a path
            (experiments/draconis.toml) or a dict.

    Returns:
        A PullResult. ``runs`` has one row per (policy, load): ``policy``,
        ``load``, task counts, the scheduling delay and response time
        quantiles (``p50_us``, ``p99_us``, ...), throughput, and per-level
        quantiles for priority runs. ``summary`` is summary.json; ``table``
        the printed table.

    Raises:
        ConfigError: the simulator refuses the config (a sim or flowsim
            config says which function runs it).
        FileNotFoundError: a config path that does not exist.

    Example:
        >>> res = run_pull("experiments/draconis.toml")              # doctest: +SKIP
        >>> res.runs[["policy", "load", "p99_us"]]                   # doctest: +SKIP
    """
    text, label, base = to_toml(config)
    summary, runs, table = _native_call(config, "pull", _native.run_pull, text, label=label,
                                        base_dir=base)
    return PullResult(_csv(runs), json.loads(summary), table)


def placement(config: Config) -> pd.DataFrame:
    """Every pool's per-rack layout for a `netsched sim` config, computed
    without simulating: the placement a run of the config uses (same
    topology, placement parameters and seed). Horus App. C Fig. 19a groups
    pools by the variance of their per-rack worker counts.

    Args:
        config: a `netsched sim` config: TOML text, a path or a dict.

    Returns:
        One row per (pool, rack): ``pool_id, leaf_id, pod, workers,
        servers, spine_id``.

    Raises:
        ConfigError: the config, or its placement on its topology, is
            refused (too many pools for the cores, say).
        FileNotFoundError: a config path that does not exist.

    Example:
        >>> placement("experiments/main.toml").groupby("pool_id").workers.sum()  # doctest: +SKIP
    """
    text, label, _ = to_toml(config)
    return _csv(_native_call(config, "sim", _native.placement, text, label=label))
