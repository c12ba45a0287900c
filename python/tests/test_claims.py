"""A claim is one of the tiers (numeric, shape, calibration, not
reproducible) with a stable slug key; the one-seed form without a kind is
gone, and results from before the tiers are refused rather than counted."""
import pytest

from netsched.catalog.base import KINDS, Claim, calibration, not_reproducible, numeric, shape
from netsched.claims import tally


def test_a_claim_needs_a_kind_from_the_tiers():
    # The earlier positional form (statement, paper, ours) has no kind.
    with pytest.raises(TypeError):
        Claim("x", "1", "1", ok=True)
    with pytest.raises(TypeError):
        Claim("x", key="x")
    with pytest.raises(ValueError, match="unknown kind 'legacy'"):
        Claim("x", key="x", kind="legacy")
    for kind in KINDS:
        assert Claim("x", key="x", kind=kind).kind == kind


def test_a_claim_key_is_a_lowercase_slug():
    with pytest.raises(ValueError, match="lowercase slug"):
        Claim("x", key="", kind="shape")
    with pytest.raises(ValueError, match="lowercase slug"):
        Claim("x", key="Fig 11 p99", kind="numeric")
    assert Claim("x", key="fig11a.p99-horus_rsh", kind="numeric").key == "fig11a.p99-horus_rsh"


def test_the_constructors_build_each_tier():
    assert numeric("a", "s", 4.7, 5.0).kind == "numeric"
    assert shape("b", "s", 1.0, paper_text="lower").kind == "shape"
    assert calibration("c", "s", 2.0, 2.0, "fitted to Fig. 3").kind == "calibration"
    assert not_reproducible("d", "s", 1.0, "a testbed").kind == "not-reproducible"


def test_records_from_before_the_tiers_are_refused():
    old = {"statement": "s", "paper": "1", "ours": "1", "ok": True, "tolerance": "t"}
    with pytest.raises(ValueError, match="rerun"):
        tally([old])
