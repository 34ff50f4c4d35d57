"""The statistics that decide the training claims and how the judge reads them, tried with
odd and boundary input whose right answer is computed independently (scipy, a hand-worked
example, a Monte Carlo over simulated seeds): interval widths, pairing by seed, bounds met
exactly up to the last bit of a float, the power the solvers state, and one-line refusals."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from companion.rules import power as P
from companion.rules.statistics import (Estimate, deciding_p, directional_outcome, equivalence_outcome, holm,
                                        median_interval, one_sample_t, paired_t, threshold_outcome)
from companion.rules.training import apply_rule_to_pair, gate

CFG = {"context_floor_nats": 0.6931, "memorisation_nats": 0.10, "horizon_fraction": 0.5}
ENC, DEC = ("encoder", "standard"), ("decoder", "standard")
SEEDS = [20, 21, 22, 23]


#: the two read-once rules these tests need, as a rules file states them (loading the file in force takes seconds)
RULES = {"version": 2, "framework": {"level": 0.95},
         "claims": {"thm_s1_12": {"threshold": 0.5, "primary": {"windows": "document-aligned"}},
                    "cor_s1_13": {"seeds": [0, 1, 2]}, "thm_s1_14": {"threshold": 0.7, "seeds": [0, 1, 2]}}}


def _one_line(err) -> str:
    text = str(err.value)
    assert "\n" not in text and "Traceback" not in text
    return text


def _s(values, index=SEEDS):
    return pd.Series(values, index=index, dtype=float)


def _est(mean, sd=0.01, n=4, level=0.95):
    """An Estimate with the mean given exactly (its interval the t-interval of that mean and sd)."""
    half = stats.t.ppf(0.5 + level / 2, n - 1) * sd / math.sqrt(n)
    return Estimate(tuple([mean] * n), mean, sd, mean - half, mean + half, level)


def _gate(loss=(4.0, 4.0), ref=(6.0, 6.0), gaps=(0.0, 0.0), half=0.30, end=0.30, sesoi=0.05):
    return gate({ENC: _s([loss[0]] * 4), DEC: _s([loss[1]] * 4)}, {ENC: ref[0], DEC: ref[1]},
                {ENC: _s([gaps[0]] * 4), DEC: _s([gaps[1]] * 4)}, 500, _est(end), _est(half), sesoi, CFG)


# ============================================================ (a) intervals and pairing


def test_the_t_interval_at_level_0_8_over_seven_seeds_is_scipys_with_six_degrees_of_freedom():
    v = np.array([0.12, -0.03, 0.4, 0.22, 0.05, 0.31, 0.18])
    est = one_sample_t(v, 0.8)
    low, high = stats.t.interval(0.8, 6, loc=v.mean(), scale=stats.sem(v))
    assert (est.low, est.high) == pytest.approx((low, high), rel=1e-12)
    # the width a df of 7 or a one-sided 0.8 would give is visibly different
    assert est.high - est.low != pytest.approx(2 * stats.t.ppf(0.9, 7) * stats.sem(v), rel=1e-3)
    assert est.high - est.low != pytest.approx(2 * stats.t.ppf(0.8, 6) * stats.sem(v), rel=1e-3)


def test_the_paired_t_pairs_shuffled_unicode_seed_labels_by_label_as_scipys_related_t():
    seeds = ["sëed-3", "sëed-1", "sëed-2", "sëed-4"]
    a = pd.Series([0.30, 0.41, 0.28, 0.36], index=seeds)
    b = pd.Series([0.05, 0.02, 0.10, 0.01], index=["sëed-1", "sëed-4", "sëed-3", "sëed-2"])
    aligned_b = b.reindex(a.index)
    est = paired_t(a, b)
    assert est.mean == pytest.approx((a - aligned_b).mean())
    res = stats.ttest_rel(a.to_numpy(), aligned_b.to_numpy())
    ci = res.confidence_interval(0.95)
    assert (est.low, est.high) == pytest.approx((ci.low, ci.high))
    # paired by position the spread would be another number (the mean of differences is the same either way)
    assert est.sd != pytest.approx(float(np.std(a.to_numpy() - b.to_numpy(), ddof=1)), rel=1e-3)


def test_two_arms_that_share_no_seed_are_refused_naming_both_arms_seeds():
    a = pd.Series([0.3, 0.4, 0.35], index=[1, 2, 3])
    b = pd.Series([0.1, 0.0, 0.05], index=["1", "2", "3"])       # the same seeds read as text from a file
    with pytest.raises(ValueError) as err:
        paired_t(a, b)
    line = _one_line(err)
    assert "no seed" in line and "[1, 2, 3]" in line and "['1', '2', '3']" in line


def test_two_arms_sharing_some_seeds_are_still_paired_on_those():
    a = pd.Series([0.3, 0.4, 0.35, 0.5], index=[1, 2, 3, 4])
    b = pd.Series([0.1, 0.0, 0.05, 0.2], index=[2, 3, 4, 5])
    est = paired_t(a, b)
    d = np.array([0.4 - 0.1, 0.35 - 0.0, 0.5 - 0.05])
    assert est.n == 3 and est.mean == pytest.approx(d.mean())


def test_the_rule_pairs_arms_given_in_different_seed_orders_by_seed():
    from companion.rules.rulebook import RULES_HISTORY, load_rules, rule

    r = rule("training_symmetry", load_rules(RULES_HISTORY[2]))
    enc = _s([0.31, 0.35, 0.29, 0.40])
    dec = _s([0.05, 0.02, 0.08, 0.04]).iloc[::-1]               # the comparator's seeds listed backwards
    pair = {"candidate": ENC, "comparator": "decoder", "arms": (ENC, DEC), "end": (enc, dec), "half": (enc, dec),
            "seeds": SEEDS, "first_band": 0.0, "losses": {ENC: _s([4.0] * 4), DEC: _s([4.0] * 4)},
            "references": {ENC: 6.0, DEC: 6.0}, "gaps": {ENC: _s([0.0] * 4), DEC: _s([0.0] * 4)}, "half_step": 500}
    res = apply_rule_to_pair("training_symmetry", r, r["primary"]["body"], pair,
                             {"sesoi": 0.05, "starts": ["2026-12-01T00:00:00Z"] * 8})
    d = np.array([0.31 - 0.05, 0.35 - 0.02, 0.29 - 0.08, 0.40 - 0.04])
    assert res["estimate"].mean == pytest.approx(d.mean())
    assert res["p_holds"] == pytest.approx(stats.ttest_1samp(d, 0.0, alternative="greater").pvalue)


# ============================================================ (b) outcomes and their p-values


def test_every_decided_outcome_has_a_deciding_p_below_the_one_sided_level_and_no_undecided_one_does():
    rng = np.random.default_rng(5)
    d = 0.05
    seen = set()
    for _ in range(400):
        n = int(rng.integers(3, 9))
        v = rng.normal(rng.uniform(-0.05, 0.15), rng.uniform(0.005, 0.08), n)
        est = one_sample_t(v)
        out = directional_outcome(est, d)
        seen.add(out)
        p = deciding_p(est, out, d)
        if out in ("holds", "holds, size open", "negligible", "refuted"):
            assert p < 0.025 + 1e-9, (out, p)
        else:
            assert math.isnan(p)
    assert {"holds", "holds, size open", "refuted", "inconclusive"} <= seen


@pytest.mark.parametrize("values", [[0.01, float("nan"), 0.02, -0.01], [0.01, float("inf"), 0.0, 0.02]])
def test_an_equality_claim_is_never_read_as_holding_on_a_seed_without_a_number(values):
    with pytest.raises(ValueError) as err:
        one_sample_t(values)
    assert "finite" in _one_line(err)
    est = Estimate(tuple(values), float("nan"), float("nan"), float("nan"), float("nan"), 0.95)
    assert equivalence_outcome(est, 0.5) == "not testable here"


def test_a_level_claims_p_values_are_scipys_one_sample_t_against_its_threshold():
    v = np.array([0.74, 0.78, 0.81, 0.77])
    est = one_sample_t(v)
    assert threshold_outcome(est, 0.7) == "holds"
    assert deciding_p(est, "holds", threshold=0.7) == pytest.approx(
        stats.ttest_1samp(v, 0.7, alternative="greater").pvalue)


def test_holm_with_tied_p_values_and_one_untested_member_by_hand():
    # sorted 0.01, 0.01, 0.02 then the untested member last (m = 4):
    # 4 x 0.01 = 0.04; max(0.04, 3 x 0.01) = 0.04; max(0.04, 2 x 0.02) = 0.04
    assert holm([0.02, 0.01, float("nan"), 0.01]).tolist()[:2] == pytest.approx([0.04, 0.04])
    got = holm([0.02, 0.01, float("nan"), 0.01])
    assert math.isnan(got[2]) and got[3] == pytest.approx(0.04)


# ============================================================ (c) the median interval


@pytest.mark.parametrize("n", [3, 6, 9, 14, 25])
def test_the_median_intervals_coverage_is_the_binomial_order_statistic_formula_by_hand(n):
    from fractions import Fraction

    res = median_interval(list(range(n)), level=0.9)
    k = int(res["low"]) + 1                                       # the values are 0..n-1: low is X_(k)
    assert res["high"] == n - k                                   # X_(n-k+1), symmetric
    cov = lambda j: 1 - 2 * sum(Fraction(math.comb(n, i), 2 ** n) for i in range(j))  # noqa: E731
    assert res["coverage"] == pytest.approx(float(cov(k)), abs=1e-12)
    # the largest k meeting the level (or k = 1 where none does)
    assert (cov(k) >= Fraction(9, 10)) or k == 1
    assert k + 1 > (n + 1) // 2 or cov(k + 1) < Fraction(9, 10)


def test_the_median_interval_covers_a_tied_discrete_median_at_least_as_often_as_it_states():
    rng = np.random.default_rng(11)
    n, trials = 8, 4000
    draws = rng.integers(0, 4, size=(trials, n)).astype(float)   # heavy ties; the median of U{0..3} is any of [1, 2]
    res = median_interval(list(range(n)), level=0.9)            # k depends on n and the level alone
    stated, k = res["coverage"], int(res["low"]) + 1
    assert all(median_interval(row, level=0.9)["low"] == np.sort(row)[k - 1] for row in draws[:50])
    ordered = np.sort(draws, axis=1)
    hits = int(np.sum((ordered[:, k - 1] <= 1.5) & (1.5 <= ordered[:, n - k])))
    se = math.sqrt(stated * (1 - stated) / trials)
    assert hits / trials >= stated - 4 * se


# ============================================================ (d) power


def test_the_detectable_effect_at_two_seeds_has_its_power_over_simulated_seeds():
    n, sd, level, power = 2, 0.1, 0.9, 0.8
    delta = P.detectable_effect(n, sd, level, power)
    rng = np.random.default_rng(3)
    trials = 200_000
    x = rng.normal(delta, sd, size=(trials, n))
    t = x.mean(1) / (x.std(1, ddof=1) / math.sqrt(n))
    hit = np.mean(t > stats.t.ppf(0.5 + level / 2, n - 1))
    assert abs(hit - power) < 4 * math.sqrt(power * (1 - power) / trials)


def test_the_effect_that_holds_reaches_has_its_target_over_simulated_seeds():
    n, sd, d, level = 3, 0.04, 0.05, 0.9
    res = P.directional_power(n, sd, d, level=level, target=0.8, draws=20_000)
    rng = np.random.default_rng(4)
    trials = 100_000
    x = rng.normal(res["detect_holds"], sd, size=(trials, n))
    low = x.mean(1) - stats.t.ppf(0.95, n - 1) * x.std(1, ddof=1) / math.sqrt(n)
    hit = np.mean(low >= d)
    assert abs(hit - 0.8) < 4 * math.sqrt(0.16 / trials)


def test_a_level_claim_at_its_threshold_reads_refuted_at_the_one_sided_level_over_simulated_seeds():
    n, sd, t = 4, 0.05, 0.7
    stated = P.threshold_power(n, sd, t)["p_refuted_at_threshold"]
    rng = np.random.default_rng(6)
    trials = 100_000
    x = rng.normal(t, sd, size=(trials, n))
    high = x.mean(1) + stats.t.ppf(0.975, n - 1) * x.std(1, ddof=1) / math.sqrt(n)
    hit = np.mean(high < t)
    assert stated == pytest.approx(0.025) and abs(hit - stated) < 4 * math.sqrt(stated * (1 - stated) / trials)


def test_an_infinite_yardstick_is_refused_naming_the_yardstick_not_the_level():
    with pytest.raises(ValueError) as err:
        P.directional_power(4, 0.1, float("inf"), draws=100)
    line = _one_line(err)
    assert "yardstick" in line and "level further from 1" not in line
    assert P.directional_power(4, 0.1, 0.05, draws=100)["detect_holds"] > 0.05   # a finite one is solved


@pytest.mark.parametrize("seed", [1.5, -1, "7", True])
def test_a_power_seed_that_is_no_whole_number_from_0_is_refused_naming_it(seed):
    for call in (lambda: P.directional_power(4, 0.1, 0.05, draws=100, seed=seed),
                 lambda: P.equivalence_power(4, 0.1, 0.05, draws=100, seed=seed)):
        with pytest.raises(ValueError) as err:
            call()
        assert "seed" in _one_line(err)
    assert P.equivalence_power(4, 0.1, 0.05, draws=100, seed=np.int64(7)) == \
        P.equivalence_power(4, 0.1, 0.05, draws=100, seed=7)


# ============================================================ (e) the gate's bounds, met exactly


def test_a_memorisation_gap_of_exactly_the_allowed_0_10_passes_whatever_the_last_bit():
    gap = 3.2 - 3.1                                               # 0.10000000000000009 in floating point
    g = _gate(gaps=(gap, 0.0))
    assert g["parts"]["memorisation"], g["memorisation"]
    assert not _gate(gaps=(0.1001, 0.0))["parts"]["memorisation"]   # above it fails


@pytest.mark.parametrize("ref, loss", [(4.0, 3.3069), (3.0, 2.3069), (6.0, 5.3069)])
def test_a_context_floor_met_exactly_passes_whatever_the_last_bit(ref, loss):
    """0.6931 nats below the reference is the floor itself; 4.0 - 3.3069 is 0.69309999... in floats."""
    assert _gate(loss=(loss, 4.0), ref=(ref, 6.0))["parts"]["context"]
    assert not _gate(loss=(loss + 1e-4, 4.0), ref=(ref, 6.0))["parts"]["context"]


def test_a_horizon_change_of_exactly_d_fails_whatever_the_last_bit():
    """'differ by less than d': 0.155 - 0.1 is 0.05499999999999999 in floats, d is 0.055."""
    g = _gate(half=0.1, end=0.155, sesoi=0.055)
    assert not g["parts"]["horizon"] and g["reason"] == "not stable between horizons"
    assert _gate(half=0.1, end=0.1549, sesoi=0.055)["parts"]["horizon"]


def test_version_1s_gate_at_exactly_one_nat_below_passes_whatever_the_last_bit():
    from companion.rules.rulebook import RULES_HISTORY, load_rules, rule

    r = rule("training_symmetry", load_rules(RULES_HISTORY[2]))
    enc, dec = _s([0.31, 0.35, 0.29, 0.40]), _s([0.05, 0.02, 0.08, 0.04])
    pair = {"candidate": ENC, "comparator": "decoder", "arms": (ENC, DEC), "end": (enc, dec), "half": (enc, dec),
            "seeds": SEEDS, "first_band": 0.0, "losses": {ENC: _s([3.1] * 4), DEC: _s([3.1] * 4)},
            "references": {ENC: 4.1, DEC: 4.1}, "gaps": {ENC: _s([0.0] * 4), DEC: _s([0.0] * 4)}, "half_step": 500}
    res = apply_rule_to_pair("training_symmetry", r, r["primary"]["body"], pair,
                             {"sesoi": 0.05, "starts": ["2026-12-01T00:00:00Z"] * 8})
    assert res["outcome_first"] == "holds"                       # 4.1 - 3.1 is one nat (0.9999999999999996)


# ============================================================ (f) the judge's tests


def test_a_premise_shares_bound_equal_to_its_threshold_up_to_the_last_bit_is_not_above_it():
    from companion.judge.empirical import premise_share_test

    t = premise_share_test({"document-aligned": (0.6, 0.5000000000000001, 0.7)}, RULES)
    assert t["outcome"].iloc[0] == "inconclusive"                 # threshold_outcome reads 0.5 + 1 ulp as 0.5
    est = Estimate((0.6,) * 3, 0.6, 0.05, 0.5000000000000001, 0.7, 0.95)
    assert threshold_outcome(est, 0.5) == "inconclusive"
    assert premise_share_test({"document-aligned": (0.6, 0.5001, 0.7)}, RULES)["outcome"].iloc[0] == "holds"


@pytest.mark.parametrize("bad", [("0.6", "0.55", "0.7"), (0.6, None, 0.7), (True, 0.55, 0.7)])
def test_a_premise_share_that_is_no_number_is_refused_in_one_line(bad):
    from companion.base.errors import CompanionError
    from companion.judge.empirical import premise_share_test

    with pytest.raises((CompanionError, ValueError)) as err:
        premise_share_test({"document-aligned": bad}, RULES)
    assert "document-aligned" in _one_line(err)


def test_the_scale_confound_reads_an_interval_above_zero_as_holds_not_a_traceback(monkeypatch):
    import companion.judge.empirical as E
    import companion.train.studies.evidence as ev

    arms = {"symmetric-torch-default": _s([0.50, 0.52, 0.55, 0.51]), "symmetric": _s([0.30, 0.31, 0.29, 0.33])}
    monkeypatch.setattr(E, "_cached", lambda key, fn: "runs")
    monkeypatch.setattr(ev, "arm_values", lambda runs, q, mode, init: arms[init])
    res = E.scale_confound()
    d = arms["symmetric-torch-default"] - arms["symmetric"]
    low, _ = stats.t.interval(0.95, 3, loc=d.mean(), scale=stats.sem(d))
    assert low > 0 and res["outcome"] == "holds"
    arms["symmetric"] = _s([0.50, 0.55, 0.49, 0.53])              # no difference: the interval straddles 0
    assert E.scale_confound()["outcome"] == "inconclusive"


def test_the_status_of_a_claim_not_in_the_table_is_refused_naming_it():
    from companion.judge.training_claims import status_of

    table = pd.DataFrame({"key": ["training_symmetry"], "status": ["holds"]})
    assert status_of("training_symmetry", table) == "holds"
    with pytest.raises(ValueError) as err:
        status_of("training_symetry", table)
    line = _one_line(err)
    assert "training_symetry" in line and "training_symmetry" in line


def test_the_equality_claims_p_values_are_scipys_two_one_sided_tests():
    from companion.judge.empirical import equal_spreads_test

    v = np.array([0.02, -0.01, 0.03])
    t = equal_spreads_test(v, 0.2, RULES).iloc[0]
    up = stats.ttest_1samp(v, -0.2, alternative="greater").pvalue
    down = stats.ttest_1samp(v, 0.2, alternative="less").pvalue
    assert t["outcome"] == "holds" and t["p_decides"] == pytest.approx(max(up, down))


# ============================================================ (g) the mathematical claims' helpers


def test_a_covariance_that_is_not_symmetric_is_refused_not_read_by_one_triangle():
    from companion.judge.math_claims import s1_8_same_law_profiles

    with pytest.raises(ValueError) as err:
        s1_8_same_law_profiles([[1.0, 0.5], [0.0, 1.0]], [1.0, 0.5], 200)
    assert "Sigma" in _one_line(err) and "symmetric" in _one_line(err)
    ok = s1_8_same_law_profiles([[1.0, 0.3], [0.3, 1.0]], [1.0, 0.5], 200)
    assert ok["closed"] == pytest.approx(np.array([1.0, 1.0]) * 2.0 * 1.25)


@pytest.mark.parametrize("sigma", [[[1.0, 2.0], [2.0, 1.0]], [[1.0, float("nan")], [float("nan"), 1.0]]])
def test_a_covariance_not_positive_definite_or_holding_nan_is_refused_in_one_line(sigma):
    from companion.judge.math_claims import s1_8_same_law_profiles

    with pytest.raises(ValueError) as err:
        s1_8_same_law_profiles(sigma, [1.0, 0.5], 200)
    assert "Sigma" in _one_line(err)


@pytest.mark.parametrize("call", ["s50", "hull"])
def test_the_checks_with_too_few_tokens_are_refused_in_one_line(call):
    from companion.judge.math_claims import conv_hull_check, s50_transpose_check

    with pytest.raises(ValueError) as err:
        s50_transpose_check(2, 3) if call == "s50" else conv_hull_check(0, 2)
    assert "N" in _one_line(err)
    # the smallest legitimate sizes still run
    assert s50_transpose_check(3, 2)["printed_transposed"] < 1e-12 if call == "s50" else \
        len(conv_hull_check(1, 2)["output_in_conv_X"]) == 1


def test_the_secondary_update_tests_are_counted_and_holm_adjusted_without_the_primary(monkeypatch):
    """'One of N secondary tests, Holm-adjusted': N and the family are the secondary rows alone
    (the rule: 'the secondary rows are one family of their own'), not the primary beside them."""
    import sys
    import types

    import companion.judge.empirical as E
    import companion.train.studies.evidence as ev

    groups = {"update-sgd-": 0.05, "update-adamw-": -0.02, "update-mini-sgd-": 0.01}
    runs = pd.DataFrame({"run": [f"{g}{m}-s{s}" for g in groups for m in ("encoder", "decoder") for s in (1, 2, 3)],
                         "seed": [s for g in groups for m in (0, 1) for s in (1, 2, 3)]})

    def window_means(sub, q):
        g = next(k for k in groups if sub["run"].iloc[0].startswith(k))
        shift = groups[g] + (0.01 if q == "update_directionality" else 0.0)
        noise = {1: 0.004, 2: -0.003, 3: 0.001}
        idx = pd.MultiIndex.from_tuples([(m, "standard", s) for m in ("encoder", "decoder") for s in (1, 2, 3)],
                                        names=["mode", "init", "seed"])
        return pd.Series([0.3 + shift + noise[s] if m == "encoder" else 0.3 + noise[s] * 0.5 for m, _, s in idx],
                         index=idx)

    # the run readers stand in as modules of their own (the real ones import torch, seconds)
    monkeypatch.setitem(sys.modules, "companion.train.runner.runs",
                        types.SimpleNamespace(load_runs=lambda pattern: runs))
    monkeypatch.setitem(sys.modules, "companion.train.runner.updates", types.SimpleNamespace(window_means=window_means))
    monkeypatch.setattr(ev, "null_band", lambda sub, q: 0.01)
    monkeypatch.setattr(E, "yardstick", lambda r, sub, q: 0.02)
    monkeypatch.setattr(E, "directional_power", lambda *a, **k: {"detect_holds": 0.0, "p_refuted_at_0": 0.0})
    monkeypatch.setattr(E, "detectable_effect", lambda *a, **k: 0.0)   # the power is not what is tested here
    rules = {"version": 2, "framework": {"level": 0.95}, "claims": {"update_structure": {
        "primary": {"runs": "update-sgd-*"}, "secondary": ["update-adamw-*", "update-mini-sgd-*"],
        "also": ["update_directionality"], "seeds": [1, 2, 3], "min_seeds": 3}}}
    t = E.update_tests(rules)
    assert len(t) == 6 and int(t["primary"].sum()) == 1
    sec = t[~t["primary"]]
    assert (sec["n_tests"] == 5).all()
    p_rev = np.array([stats.ttest_1samp(np.asarray(list(_diffs(r, window_means, runs))), 0.0,
                                        alternative="less").pvalue for r in sec.itertuples()])
    order = np.argsort(p_rev)
    adj = np.minimum(np.maximum.accumulate([(len(p_rev) - i) * p_rev[j] for i, j in enumerate(order)]), 1)
    want = np.empty(len(p_rev))
    want[order] = adj
    assert sec["p_reversed_holm"].to_numpy() == pytest.approx(want, rel=1e-9)
    # the verdict's sentence counts the same secondary tests
    import companion.judge.empirical_claims as EC
    import companion.rules.rulebook as rb

    monkeypatch.setattr(EC, "_cached", lambda key, fn: t)
    monkeypatch.setattr(rb, "rule", lambda key, rules=None: rules_of(key))
    monkeypatch.setattr(EC, "_update_rule_after", lambda r: True)
    rules_of = lambda key: dict(rules["claims"][key], claim="updates", seeds=[1, 2, 3])  # noqa: E731
    assert "one of 5 secondary tests" in EC.update_structure().measured


def _diffs(row, window_means, runs):
    import fnmatch

    sub = runs[[fnmatch.fnmatch(n, row.runs) for n in runs["run"]]]
    m = window_means(sub, row.quantity)
    return (m.xs("encoder", level="mode") - m.xs("decoder", level="mode")).to_numpy()


@pytest.mark.parametrize("corr", [[1.2, 0.9, 0.95], [0.8, -1.5, 0.9]])
def test_a_per_seed_correlation_outside_minus_one_to_one_is_refused_not_read_as_holding(corr):
    from companion.base.errors import CompanionError
    from companion.judge.empirical import beta_correlation_test

    with pytest.raises((CompanionError, ValueError)) as err:
        beta_correlation_test(corr, RULES)
    assert "correlation" in _one_line(err) and "[-1, 1]" in _one_line(err)
    # a perfect correlation a rounding above 1 and an ordinary one are read, by scipy's one-sample t
    ok = [0.8, 0.9, 1.0000000000000002]
    t = beta_correlation_test(ok, RULES).iloc[0]
    assert t["p_holds"] == pytest.approx(stats.ttest_1samp(ok, 0.7, alternative="greater").pvalue)


def test_a_seed_whose_held_out_loss_is_not_finite_fails_the_gate_naming_the_seed_not_as_undertrained():
    from companion.rules.rulebook import RULES_HISTORY, load_rules, rule

    r = rule("training_symmetry", load_rules(RULES_HISTORY[2]))
    enc, dec = _s([0.31, 0.35, 0.29, 0.40]), _s([0.05, 0.02, 0.08, 0.04])
    pair = {"candidate": ENC, "comparator": "decoder", "arms": (ENC, DEC), "end": (enc, dec), "half": (enc, dec),
            "seeds": SEEDS, "first_band": 0.0, "losses": {ENC: _s([4.0, 4.0, float("inf"), 4.0]), DEC: _s([4.0] * 4)},
            "references": {ENC: 6.0, DEC: 6.0}, "gaps": {ENC: _s([0.0] * 4), DEC: _s([0.0] * 4)}, "half_step": 500}
    res = apply_rule_to_pair("training_symmetry", r, r["primary"]["body"], pair,
                             {"sesoi": 0.05, "starts": ["2026-12-01T00:00:00Z"] * 8})
    g = res["gate"]
    assert res["outcome"] == "not testable here" and g["reason"] == "a seed gave no finite value"
    assert "seed(s) 22" in g["why"]


def test_the_power_phrase_of_three_seeds_with_no_spread_does_not_say_one_seed():
    from companion.judge.empirical_claims import power_text

    assert power_text({"n": 1, "detect_holds": float("nan"), "p_refuted_at_0": float("nan")}) == "one seed: none"
    text = power_text({"n": 3, "detect_holds": float("nan"), "p_refuted_at_0": float("nan")})
    assert "one seed" not in text and "spread" in text
    res = P.directional_power(3, 0.02, 0.05, draws=1000)
    row = {"n": 3, **res}
    assert f"{res['detect_holds']:.3f}" in power_text(row) and f"{res['p_refuted_at_0']:.2f}" in power_text(row)
