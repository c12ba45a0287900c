"""Python reads the policy vocabularies from the native module
(`netsched.policy_names`, from crates/core names.rs), and every policy name
the catalog's configs use is one the simulator of its point parses."""
import pytest

import netsched
from netsched import catalog
from netsched.api import FAMILY


def test_the_native_vocabularies_are_disjoint_and_current():
    names = netsched.policy_names()
    assert set(names) == {"push", "pull", "flow"}
    push, pull, flow = (set(names[f]) for f in ("push", "pull", "flow"))
    assert {"horus", "rs-h", "racksched", "r2p2"} <= push
    assert {"draconis", "r2p2-recirc", "racksched-nodes", "sparrow"} <= pull
    assert {"fair", "baraat"} <= flow
    # Each name means one thing: the pull side's planes have names of their own.
    assert not (push & pull) and not (push & flow) and not (pull & flow)
    assert netsched.simulator_of("r2p2") == "sim"
    assert netsched.simulator_of("r2p2-recirc") == "pull"
    assert netsched.simulator_of("baraat") == "flowsim"
    with pytest.raises(ValueError, match="unknown policy 'hours'"):
        netsched.simulator_of("hours")


def test_a_renamed_pull_policy_is_refused_naming_its_successor(pull_tiny):
    with pytest.raises(ValueError, match="pull policy `r2p2` is renamed: use `r2p2-recirc`"):
        netsched.run_pull(dict(pull_tiny, policy="r2p2"))


def policies_of(point):
    cfg = point.config
    if point.kind == "flowsim":
        return list(cfg.get("policies", []))
    names = [cfg["policy"]] if "policy" in cfg else []
    return names + list(cfg.get("sweep", {}).get("policies", []))


@pytest.mark.parametrize("scale", ["reduced", "paper"])
def test_every_catalog_point_names_a_policy_of_its_simulator(scale):
    names = netsched.policy_names()
    bad = []
    for name, entry in sorted(catalog.REGISTRY.items()):
        for p in entry.points(scale):
            family = names[FAMILY[p.kind]]
            bad += [(name, p.kind, pol) for pol in policies_of(p) if pol not in family]
    assert not bad, bad
