"""netsched: in-network task scheduling simulators (Horus, RackSched, Baraat)
from Python, with an experiment catalog and Dask sweeps.

    import netsched
    res = netsched.run_sim("experiments/main.toml")   # TOML text, a path, or a dict
    res.runs      # pandas DataFrame, one row per (policy, load) run
    res.pools     # one row per pool and run
    res.summary   # the summary.json dict

    sorted(netsched.REGISTRY)                         # the experiment catalog
    out = netsched.run_experiment("horus-fig11")      # CSV, PNG, markdown page

See docs/experiments.md.
"""
from .api import (SimResult, FlowResult, PullResult, run_sim, run_flowsim, run_pull,
                  canonical_config, to_toml, placement)
from .catalog import REGISTRY, Claim, Experiment
from .experiment import run_experiment

__all__ = ["SimResult", "FlowResult", "PullResult", "run_sim", "run_flowsim", "run_pull",
           "canonical_config", "to_toml", "placement", "REGISTRY", "Claim", "Experiment",
           "run_experiment"]
__version__ = "0.1.0"
