"""The speed-up metric: a fraction of training saved, NaN when the target is never reached."""

import math

import numpy as np
import pandas as pd
import pytest

from companion.train.studies.speedup import (
    authors_speedup,
    authors_speedup_from_histories,
    paired_loss_difference,
    smooth,
    speedup,
    speedup_from_histories,
    speedup_over_seeds,
)

STEPS = np.arange(0, 11) * 10  # 0..100


def test_candidate_reaching_the_target_at_40_of_100_steps_saves_60_percent():
    base = 10 - 0.05 * STEPS  # ends at 5
    cand = 10 - 0.125 * STEPS  # 5.0 at step 40
    assert speedup(STEPS, base, STEPS, cand, window=1) == pytest.approx(0.6)


def test_speedup_is_nan_when_the_target_is_never_reached():
    base = 10 - 0.05 * STEPS
    cand = base + 0.5
    assert math.isnan(speedup(STEPS, base, STEPS, cand, window=3))


def test_published_formula_reports_full_speedup_when_never_reached():
    base = 10 - 0.05 * STEPS
    assert authors_speedup(STEPS, base, base + 0.5) == 1.0


def test_identical_runs_save_nothing():
    base = 10 - 0.05 * STEPS
    assert speedup(STEPS, base, STEPS, base, window=3) == pytest.approx(0.0)


def test_smoothing_stops_one_lucky_evaluation_from_counting():
    base = np.full(11, 5.0)
    cand = np.full(11, 6.0)
    cand[3] = 4.0  # a single dip below the target
    assert speedup(STEPS, base, STEPS, cand, window=1) == pytest.approx(0.7)
    assert math.isnan(speedup(STEPS, base, STEPS, cand, window=3))


def test_runs_of_different_length_are_refused():
    with pytest.raises(ValueError, match="different length"):
        speedup(STEPS, STEPS * 0 + 1, STEPS[:5], STEPS[:5] * 0 + 1)


def test_smooth_is_a_trailing_mean():
    assert smooth([1, 2, 3, 4], 2).tolist() == [1.0, 1.5, 2.5, 3.5]


def _hist(losses):
    return pd.DataFrame({"step": STEPS, "quantity": "eval_loss", "layer": -1, "head": -1, "value": losses})


def test_over_seeds_reports_spread_and_counts_unreached_seeds():
    base = 10 - 0.05 * STEPS
    pairs = {0: (_hist(base), _hist(10 - 0.125 * STEPS)),  # 0.6
             1: (_hist(base), _hist(10 - 0.25 * STEPS)),  # 5 at step 20 -> 0.8
             2: (_hist(base), _hist(base + 1))}  # never
    table, summary = speedup_over_seeds(pairs, window=1)
    assert table["speedup"].iloc[:2].tolist() == pytest.approx([0.6, 0.8])
    assert math.isnan(table["speedup"].iloc[2])
    assert summary["n_reached"] == 2 and summary["n_seeds"] == 3
    # over all seeds, the censored one ranked lowest: not the mean of the lucky two (0.7)
    assert summary["median"] == pytest.approx(0.6) and summary["min"] == -np.inf
    assert summary["max"] == pytest.approx(0.8)
    assert speedup_from_histories(_hist(base), _hist(base)) == pytest.approx(0.0)


def test_no_pairs_is_a_clear_error():
    with pytest.raises(ValueError, match="no \\(baseline, candidate\\) pairs"):
        speedup_over_seeds({})


def test_paired_difference_is_candidate_minus_baseline_at_every_step():
    base = 10 - 0.05 * STEPS
    ahead_then_behind = base - np.where(STEPS < 50, 1.0, -0.5)
    table = paired_loss_difference({0: (_hist(base), _hist(ahead_then_behind)), 1: (_hist(base), _hist(base))})
    s0 = table[table["seed"] == 0]
    assert s0["step"].tolist() == STEPS.tolist()
    assert s0.loc[s0["step"] < 50, "difference"].tolist() == pytest.approx([-1.0] * 5)
    assert s0.loc[s0["step"] >= 50, "difference"].tolist() == pytest.approx([0.5] * 6)
    assert (table.loc[table["seed"] == 1, "difference"] == 0).all()


def test_paired_difference_smooths_both_curves_with_the_same_window():
    base, cand = 10 - 0.05 * STEPS, 9 - 0.05 * STEPS
    cand[3] += 3.0  # one bad evaluation
    table = paired_loss_difference({0: (_hist(base), _hist(cand))}, window=3)
    expected = smooth(cand, 3) - smooth(base, 3)
    assert table["difference"].to_numpy() == pytest.approx(expected)


def test_paired_difference_refuses_runs_evaluated_at_different_steps():
    other = pd.DataFrame({"step": STEPS[::2], "quantity": "eval_loss", "layer": -1, "head": -1,
                          "value": 10 - 0.05 * STEPS[::2]})
    with pytest.raises(ValueError, match="same steps"):
        paired_loss_difference({0: (_hist(10 - 0.05 * STEPS), other)})


def test_published_formula_on_histories_matches_the_raw_formula_and_refuses_unpaired_runs():
    base, never = 10 - 0.05 * STEPS, 10 - 0.01 * STEPS
    assert authors_speedup_from_histories(_hist(base), _hist(never)) == 1.0
    assert authors_speedup_from_histories(_hist(base), _hist(base - 1)) == authors_speedup(STEPS, base, base - 1)
    other = pd.DataFrame({"step": STEPS[::2], "quantity": "eval_loss", "layer": -1, "head": -1,
                          "value": base[::2]})
    with pytest.raises(ValueError, match="same steps"):
        authors_speedup_from_histories(_hist(base), other)


# ---------------------------------------------------------------- censoring and intervals

from companion.train.studies.speedup import censored_median_speedup, paired_difference_interval  # noqa: E402


def test_a_seed_that_never_reached_is_censored_not_dropped():
    # dropping the NaN would give the median of (0.1, 0.3) = 0.2; censoring ranks it lowest
    res = censored_median_speedup([0.3, float("nan"), 0.1])
    assert res["median"] == 0.1 and res["n_reached"] == 2 and res["n_seeds"] == 3
    assert "2 of 3 seeds reached" in res["text"]
    most_failed = censored_median_speedup([float("nan"), float("nan"), 0.4])
    assert most_failed["median"] == -np.inf and most_failed["text"].startswith("below 0")


def test_one_seed_reports_no_interval_rather_than_a_point_posing_as_one():
    res = censored_median_speedup([float("nan")])
    assert "no interval" in res["text"] and "coverage" not in res["text"]


def test_the_interval_states_its_coverage_and_covers_the_median_that_often():
    # three seeds: min to max, which covers the median with probability 1 - 2 (1/2)^3 = 0.75
    res = censored_median_speedup([0.05, 0.2, float("nan")])
    assert (res["low"], res["high"]) == (-np.inf, 0.2) and res["coverage"] == pytest.approx(0.75)
    assert "75% coverage" in res["text"] and "95%" not in res["text"]
    rng = np.random.default_rng(0)
    true_median = 0.1                      # of a normal law centred there
    hits = [(lambda r: r["low"] < true_median < r["high"])(censored_median_speedup(rng.normal(0.1, 0.2, 3)))
            for _ in range(4000)]
    assert abs(np.mean(hits) - 0.75) < 0.025


def test_paired_difference_interval_is_the_t_interval_over_seeds():
    from scipy import stats

    d = pd.DataFrame({"seed": [0, 1, 2, 0, 1, 2], "step": [10, 10, 10, 20, 20, 20],
                      "difference": [-0.1, 0.05, -0.02, 0.3, 0.1, 0.2]})
    out = paired_difference_interval(d, level=0.9).set_index("step")
    for step in (10, 20):
        x = d[d["step"] == step]["difference"].to_numpy()
        lo, hi = stats.t.interval(0.9, len(x) - 1, loc=x.mean(), scale=stats.sem(x))
        assert out.loc[step, "low"] == pytest.approx(lo) and out.loc[step, "high"] == pytest.approx(hi)
    assert out.loc[20, "low"] > 0  # all three seeds behind at step 20: the interval says so
