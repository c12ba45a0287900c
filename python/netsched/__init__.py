"""netsched: in-network task scheduling simulators (Horus, RackSched, Baraat)
from Python, with an experiment catalog and Dask sweeps.

    import netsched
    res = netsched.run_sim("experiments/main.toml")   # TOML text, a path, or a dict
    res.runs      # pandas DataFrame, one row per (policy, load) run
    res.pools     # one row per pool and run
    res.summary   # the summary.json dict

See docs/experiments.md.
"""
from .api import (SimResult, FlowResult, PullResult, run_sim, run_flowsim, run_pull,
                  canonical_config, to_toml, placement)

__all__ = ["SimResult", "FlowResult", "PullResult", "run_sim", "run_flowsim", "run_pull",
           "canonical_config", "to_toml", "placement"]
__version__ = "0.1.0"
