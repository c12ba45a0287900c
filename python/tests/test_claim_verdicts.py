"""The verdict rules of claims judged over seeds (netsched.claims): numeric
claims against their tolerance band and the 95 % interval, shape claims by
the sign of the interval, calibrations never counted, and a difference no
ablation run moves labelled unexplained."""
import math

import pytest

from netsched.catalog.base import calibration, not_reproducible, numeric, shape
from netsched.claims import aggregate, attribute, finalize, stats, t975, tally


def judged(make, values):
    """One claim judged over seeds: `make(v)` builds it with seed value v."""
    per_seed = [[make(v)] for v in values]
    return aggregate(per_seed, entry="e", paper="P", figure="Fig. 1", scale="reduced")[0]


def num(paper, **tol):
    return lambda v: numeric("k", "s", paper, v, **tol)


def test_student_t_interval_over_seeds():
    mean, ci, n = stats([1.0, 2.0, 3.0, 4.0, 5.0])
    assert (mean, n) == (3.0, 5)
    # sd = 1.5811, t(4) = 2.776: half-width 2.776 * 1.5811 / sqrt(5).
    assert ci == pytest.approx(2.776 * math.sqrt(2.5) / math.sqrt(5))
    assert t975(1) == 12.706 and t975(200) == 1.96
    assert stats([1.0])[1] is None
    assert math.isnan(stats([1.0, math.nan])[0])


def test_numeric_agrees_inside_the_band_with_a_narrow_interval():
    r = judged(num(100.0), [98.0, 101.0, 103.0, 99.0, 100.0])
    assert r["verdict"] == "agrees"
    assert r["tolerance"] == "within 15 %"
    assert r["ours"]["n"] == 5 and r["ours"]["per_seed"] == [98.0, 101.0, 103.0, 99.0, 100.0]


def test_numeric_differs_only_when_the_interval_misses_the_band():
    assert judged(num(100.0), [130.0, 131.0, 129.0, 130.0, 130.0])["verdict"] == "differs"
    # Mean outside the band (116) but the interval reaches into it: unresolved.
    assert judged(num(100.0), [105.0, 127.0, 110.0, 125.0, 113.0])["verdict"] == "unresolved"
    # Mean inside but the interval wider than the band: unresolved, not agrees.
    assert judged(num(100.0), [60.0, 140.0, 100.0, 150.0, 50.0])["verdict"] == "unresolved"


def test_numeric_points_and_factor_bands():
    assert judged(num(38.0, pp=15), [24.0, 25.0, 24.5])["verdict"] == "agrees"
    assert judged(num(38.0, pp=15), [20.0, 21.0, 20.5])["verdict"] == "differs"
    assert judged(num(3.0, factor=1.5), [2.05, 2.1, 2.0])["verdict"] == "agrees"
    assert judged(num(3.0, factor=1.5), [1.6, 1.6, 1.6])["verdict"] == "differs"


def test_a_wide_tolerance_needs_the_papers_reason():
    with pytest.raises(ValueError, match="needs a reason"):
        numeric("k", "s", 10.0, 10.0, rel=0.5)
    with pytest.raises(ValueError, match="needs a reason"):
        numeric("k", "s", 3.0, 3.0, factor=2.0)
    c = numeric("k", "s", 3.0, 3.0, factor=2.0, reason="the paper states 'about 3x'")
    assert c.factor == 2.0


def test_a_value_not_measured_fails():
    # e.g. no knee in the measured range: the claim fails, never passes.
    assert judged(num(0.5), [None, None])["verdict"] == "differs"
    assert judged(num(0.5), [0.5, None])["verdict"] == "differs"


def test_shape_needs_the_interval_on_the_papers_side():
    mk = lambda d: shape("k", "horus below rs-h", d, paper_text="lower")  # noqa: E731
    assert judged(mk, [5.0, 6.0, 4.0, 5.5, 5.0])["verdict"] == "agrees"
    assert judged(mk, [-5.0, -6.0, -4.0, -5.5, -5.0])["verdict"] == "differs"
    assert judged(mk, [5.0, -6.0, 4.0, -5.5, 5.0])["verdict"] == "unresolved"
    # A thin one-seed margin is never a verdict.
    assert judged(mk, [19.0])["verdict"] == "unresolved"


def test_calibration_and_not_reproducible_are_not_counted():
    per_seed = [[calibration("c", "fitted", 4.7, 4.7, "link delay fitted to Fig. 5a"),
                 not_reproducible("n", "1,444 tasks lost", 1444, "the testbed's failure timing"),
                 numeric("x", "s", 10.0, 10.0)] for _ in range(3)]
    recs = finalize(aggregate(per_seed, entry="e", paper="P", figure="F", scale="reduced"))
    t = tally(recs)
    assert [r["verdict"] for r in recs] == ["calibration", "not-reproducible", "agrees"]
    assert t["numeric"]["agrees"] == 1 and t["calibration"] == 1 and t["not-reproducible"] == 1
    assert sum(t["shape"].values()) == 0


def test_a_difference_no_run_moves_is_unexplained():
    per_seed = [[numeric("a", "s", 100.0, 200.0 + i), numeric("b", "s", 100.0, 200.0 + i)]
                for i in range(3)]
    recs = aggregate(per_seed, entry="e", paper="P", figure="F", scale="reduced")
    # An ablation that brings claim a to the paper, and one that leaves b where it is.
    moved = aggregate([[numeric("a", "s", 100.0, 101.0 + i)] for i in range(3)],
                      entry="e", paper="P", figure="F", scale="reduced")
    still = aggregate([[numeric("b", "s", 100.0, 205.0 + i)] for i in range(3)],
                      entry="e", paper="P", figure="F", scale="reduced")
    attribute(recs, moved, keys=["a"], changed="hop delay 5 -> 1 µs", command="cmd a")
    attribute(recs, still, keys=["b"], changed="slice 2x", command="cmd b")
    finalize(recs)
    a, b = recs
    assert a["verdict"] == "differs" and a["attribution"][0]["moves_to"] == "agrees"
    assert a["attribution"][0]["result"].startswith("ours 201 ± ")
    assert b["verdict"] == "unexplained" and b["attribution"][0]["moves_to"] == "no"
    t = tally(recs)
    assert t["numeric"]["differs"] == 1 and t["numeric"]["unexplained"] == 1


def test_sensitivity_rows_are_not_counted():
    per_seed = [[numeric("a", "s", 10.0, 10.0), numeric("a-sim", "s", 10.0, 10.0,
                                                         section="sensitivity")]] * 2
    t = tally(finalize(aggregate(per_seed, entry="e", paper="P", figure="F", scale="reduced")))
    assert t["numeric"]["agrees"] == 1 and t["sensitivity"] == 1


def test_claims_must_be_the_same_every_seed_and_unique():
    with pytest.raises(ValueError, match="used twice"):
        aggregate([[numeric("a", "s", 1, 1), numeric("a", "t", 1, 1)]], entry="e", paper="P",
                  figure="F", scale="reduced")
    with pytest.raises(ValueError, match="other claims"):
        aggregate([[numeric("a", "s", 1, 1)], [numeric("b", "s", 1, 1)]], entry="e", paper="P",
                  figure="F", scale="reduced")
