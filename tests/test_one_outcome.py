"""One reading of an interval on every path: a claim read once (``statistics.directional_outcome``
on a paired t-interval) and a claim read at a look (``sequential.look_outcome`` on a repeated
interval) give the same outcome for the same values at the same level, including the edge
cases: no seed-to-seed spread, a bound exactly at d, a value that is not a number."""

from __future__ import annotations

import math

import numpy as np
import pytest

from companion.rules.sequential import look_estimate, look_outcome
from companion.rules.statistics import directional_outcome, interval_outcome, paired_t, seeds_without_a_number


def _both(values, d, level=0.95):
    """The outcome read once (as the mechanism's and the swap's tests read it: a seed without a
    number makes the test not testable, else the paired t decides) and at a look."""
    v = np.asarray(values, dtype=float)
    if seeds_without_a_number(v, np.zeros_like(v)):
        once = "not testable here"
    else:
        once = directional_outcome(paired_t(v, np.zeros_like(v), level=level), d, min_seeds=2)
    at_look = look_outcome(look_estimate(v, (1 - level) / 2), d)
    return once, at_look


@pytest.mark.parametrize("values", [
    (0.03, 0.03, 0.03),                 # no spread at all
    (0.2, 0.2, 0.2 + 1e-12),            # a spread far below any measurement: no spread either
    (0.03, float("nan"), 0.05),         # a seed without a number
    (0.03, float("inf"), 0.05),
    (0.02,),                            # one seed: no interval
])
def test_values_that_give_no_interval_are_not_testable_on_both_paths(values):
    assert _both(values, 0.05) == ("not testable here", "not testable here")


def test_a_bound_exactly_at_d_holds_on_both_paths_whatever_the_last_bit():
    v = np.array([0.10, 0.14, 0.12])
    est = paired_t(v, np.zeros(3))
    d = est.low                                  # the low end is d: 'holds' (lo >= d)
    assert _both(v, d) == ("holds", "holds")
    assert _both(v, float(np.nextafter(d, 1))) == ("holds", "holds")     # one bit above: equal after rounding
    assert _both(v, d * (1 + 1e-6)) == ("holds, size open", "holds, size open")


@pytest.mark.parametrize("seed", range(40))
def test_random_values_read_the_same_on_both_paths(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 9))
    v = rng.normal(rng.normal(0, 0.05), rng.uniform(0.001, 0.08), n)
    d = float(rng.uniform(0.005, 0.1))
    once, at_look = _both(v, d)
    assert once == at_look
    # and both are the outcome of the interval itself, recomputed here from scipy's t quantile
    from scipy import stats

    half = stats.t.ppf(0.975, n - 1) * v.std(ddof=1) / math.sqrt(n)
    assert once == interval_outcome(v.mean() - half, v.mean() + half, d)
