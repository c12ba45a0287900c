"""The catalog's verdict rules: every checked claim states its tolerance, and
"agrees" holds only inside it."""
import math

import pytest

from netsched.catalog.base import (Claim, all_within, points, ratio_within, same_order,
                                   within)


def test_a_verdict_without_a_tolerance_is_refused():
    with pytest.raises(ValueError, match="states no tolerance"):
        Claim("x", "1", "1", ok=True)
    with pytest.raises(ValueError, match="states no tolerance"):
        Claim("x", "1", "2", ok=False, tolerance="  ")
    # Qualitative claims carry no verdict and need no rule.
    assert Claim("x", "—", "3").ok is None


def test_within_is_relative_to_the_paper():
    assert within("x", 4.7, 5.8, rel=0.25).ok
    assert not within("x", 4.7, 9.3, rel=0.25).ok
    assert not within("x", 4.7, 3.5, rel=0.25).ok
    assert within("x", 4.7, 3.6, rel=0.25).tolerance == "within 25 % of the paper's value"
    assert not within("x", 4.7, math.nan).ok
    assert not within("x", 0.0, 0.0).ok


def test_ratio_within_is_symmetric_in_log_space():
    assert ratio_within("x", 120.0, 61.0, factor=2.0).ok
    assert not ratio_within("x", 120.0, 59.0, factor=2.0).ok
    assert ratio_within("x", 3.0, 6.0, factor=2.0).ok
    assert not ratio_within("x", 3.0, 6.1, factor=2.0).ok
    # A ratio of the right sign but 100x off does not agree.
    assert not ratio_within("x", 120.0, 1.2).ok
    assert not ratio_within("x", 3.0, -1.0).ok


def test_points_compares_percentages_in_points():
    assert points("x", 70, 56, pp=15).ok
    assert not points("x", 70, 54, pp=15).ok
    assert not points("x", 70, math.nan, pp=15).ok


def test_all_within_needs_every_value():
    assert all_within("x", [300, 500], [310, 480]).ok
    assert not all_within("x", [300, 500], [310, 300]).ok


def test_same_order_ranks_by_value():
    assert same_order("x", ["a", "b", "c"], {"a": 1.0, "b": 2.0, "c": 3.0}).ok
    assert not same_order("x", ["a", "b", "c"], {"a": 1.0, "b": 3.0, "c": 2.0}).ok
    assert not same_order("x", ["a", "b", "c"], {"a": 1.0, "b": math.nan, "c": 2.0}).ok
