"""netsched: in-network task scheduling from Python. Four systems, three
simulators, one experiment catalog:

- Horus (NSDI '24) and RackSched (OSDI '20), push schedulers on a simulated
  datacenter: `run_sim`;
- Draconis (EuroSys '24), pull scheduling on a switch: `run_pull`;
- Baraat (SIGCOMM '14), task-aware flow scheduling: `run_flowsim`;
- the catalog that reproduces their figures: `REGISTRY`, `run_experiment`.

    import netsched
    res = netsched.run_sim("experiments/main.toml")   # TOML text, a path, or a dict
    res.runs      # pandas DataFrame, one row per (policy, load) run
    res.pools     # one row per pool and run
    res.summary   # the summary.json dict
    netsched.run_pull("experiments/draconis.toml").runs
    netsched.run_flowsim("experiments/baraat-fig12.toml").runs

    sorted(netsched.REGISTRY)                         # the experiment catalog
    out = netsched.run_experiment("horus-fig11")      # ExperimentResult; CSV, PNG, page

A refused config raises `netsched.ConfigError` (a ValueError with `.key`,
the dotted key path); a missing file raises FileNotFoundError.
See docs/experiments.md.
"""
from importlib import import_module as _import_module
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # what the lazy names below are, for type checkers (py.typed)
    from .api import (ConfigError, FlowResult, PullResult, SimResult,  # noqa: F401
                      canonical_config, placement, policy_names, run_flowsim, run_pull,
                      run_sim, simulator_of, to_toml)
    from .catalog import REGISTRY, Claim, Experiment  # noqa: F401
    from .experiment import ExperimentResult, run_experiment  # noqa: F401

# The names below load their module (and with it the compiled `_native`) on
# first use, so that `python3 -m netsched plot` runs from the source tree
# without a build (PYTHONPATH=python, as scripts/sim-main-job.sh does).
_EXPORTS = {
    "SimResult": "api", "FlowResult": "api", "PullResult": "api", "run_sim": "api",
    "run_flowsim": "api", "run_pull": "api", "canonical_config": "api", "to_toml": "api",
    "placement": "api", "ConfigError": "api", "policy_names": "api", "simulator_of": "api",
    "REGISTRY": "catalog", "Claim": "catalog", "Experiment": "catalog",
    "run_experiment": "experiment", "ExperimentResult": "experiment",
}
_SUBMODULES = {"api", "catalog", "claims", "cli", "experiment", "plots", "report", "sweep"}

__all__ = list(_EXPORTS)
__version__ = "0.1.0"


def __getattr__(name):
    if name in _SUBMODULES:
        return _import_module(f".{name}", __name__)
    if name in _EXPORTS:
        value = getattr(_import_module(f".{_EXPORTS[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_EXPORTS) | _SUBMODULES)
