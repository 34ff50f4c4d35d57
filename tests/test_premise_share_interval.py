"""Thm. S1.12's premise share (Eq. S96) is a mean of indicators; its interval is that of the
bagged share with the infinitesimal-jackknife standard error (rules v2.2, data/verdict_rules.yaml).
Checked by Monte Carlo: independent corpora drawn from one known generator."""

import numpy as np
import pytest

from companion.base.errors import CompanionError
from companion.judge.premises import context_ratio_share

V, N = 8, 16


def _corpus(n_windows, rng):
    """Windows whose type law drifts with position: types 0-2 favour the start (ratio > 1),
    3-4 the end (ratio < 1), and the heavy type 5 and types 6-7 are flat (ratio 1), so the
    heavy type's indicator flips from corpus to corpus as in real text."""
    pos = np.arange(N) / (N - 1)
    slope = np.array([1.0, 0.8, 0.6, -0.8, -1.0, 0.0, 0.0, 0.0])
    level = np.array([0.0, 0.0, 0.0, 0.0, 0.0, 1.5, 0.0, 0.0])
    logits = level[None, :] - slope[None, :] * (pos[:, None] - 0.5)
    prob = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)
    u = rng.random((n_windows, N, 1))
    return (u > prob.cumsum(1)[None]).sum(-1).clip(max=V - 1)


def test_the_infinitesimal_jackknife_error_matches_the_spread_over_independent_corpora():
    rng = np.random.default_rng(1)
    res = [context_ratio_share(_corpus(300, rng), V, min_count=1, n_boot=200, n_bag=3000, seed=i)
           for i in range(60)]
    bagged = np.array([r["bagged"] for r in res])
    se = np.array([r["se"] for r in res])
    # the standard error each corpus reports, against the spread the corpora actually show
    assert 0.7 < se.mean() / bagged.std(ddof=1) < 1.4, (se.mean(), bagged.std(ddof=1))
    # intervals cover the bagged share's expectation (estimated by the mean over corpora)
    cover = np.mean([(r["low"] <= bagged.mean() <= r["high"]) for r in res])
    assert cover >= 0.85, cover
    # the plug-in share jumps with the flat heavy type; the bagged share does not
    plug = np.array([r["share"] for r in res])
    assert plug.std(ddof=1) > 1.5 * bagged.std(ddof=1)


def test_the_percentile_interval_of_the_plug_in_share_is_kept_for_comparison():
    r = context_ratio_share(_corpus(300, np.random.default_rng(2)), V, min_count=1, n_boot=400, n_bag=2000)
    assert r["low_percentile"] <= r["high_percentile"] and 0 <= r["low"] <= r["bagged"] <= r["high"] <= 1
    # a type's p_above is the share of resamples with ratio above one: clearly above for type 0
    pt = r["per_type"].set_index("type")
    assert pt.loc[0, "p_above"] > 0.95 and pt.loc[4, "p_above"] < 0.05


@pytest.mark.parametrize("bad, message", [(np.zeros(5), "2-D array"), (np.zeros((3, 4)) + 0.5, "2-D array"),
                                          (np.zeros((1, 4), dtype=int), "at least 2 windows")])
def test_bad_windows_are_refused_with_the_fix(bad, message):
    with pytest.raises(CompanionError, match=message):
        context_ratio_share(bad, V, min_count=1)
