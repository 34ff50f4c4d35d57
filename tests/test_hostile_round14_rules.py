"""Hardening round 14: the statistics that judge the training claims and the claims read once.

(a) Intervals and p-values against scipy's t-tests at 2 to 5 seeds, paired against unpaired,
one- against two-sided; a look's interval and the repeated intervals of a design by Monte Carlo.
(b) The outcome partition at its boundaries (an interval touching d or 0, of no width), and a
level or equality claim whose bound equals its threshold up to the last bit.
(c) The spending function against its closed form, the boundaries against the multivariate
normal law of the look sequence; the family's split level and its committed bound.
(d) Power and detectable effects against the non-central t and monotone in seeds, level and
power; the power of an equality claim by a simulation of seeds.
(e) Inputs of the wrong type (text, bools, numpy bools, pandas NA, complex numbers, non-whole
seed counts, a coarse grid, draws that are no whole number): each refused in one line naming
it, or read as the number it is.

Each case states the right behaviour: the value computed apart from the code under test, or a
one-line refusal naming the input."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from companion.base.errors import CompanionError
from companion.rules import sequential as Q
from companion.rules import power as P
from companion.rules import statistics as S
from one_line import one_line as _one_line

D = 0.05   # a yardstick for the outcome cases


def _est(low, high, mean=None, sd=0.1, n=4, level=0.95):
    mean = (low + high) / 2 if mean is None else mean
    return S.Estimate(tuple(range(n)), mean, sd, low, high, level)


# ------------------------------------------------------------------ (a) intervals and p-values


@pytest.mark.parametrize("n", [2, 3, 4, 5])
def test_the_t_interval_at_2_to_5_seeds_is_scipys_one_sample_t_interval(n):
    v = np.random.default_rng(n).normal(0.1, 0.3, n)
    est = S.one_sample_t(v, 0.9)
    ci = stats.ttest_1samp(v, 0.0).confidence_interval(0.9)
    assert (est.low, est.high) == pytest.approx((ci.low, ci.high), rel=1e-12)
    assert est.sd == pytest.approx(np.std(v, ddof=1)) and est.se == pytest.approx(stats.sem(v))


def test_the_paired_interval_is_scipys_related_t_and_narrower_than_the_unpaired_one():
    rng = np.random.default_rng(7)
    common = rng.normal(0, 1.0, 5)                 # each seed's shared draw, removed by pairing
    a, b = common + 0.2 + rng.normal(0, 0.05, 5), common + rng.normal(0, 0.05, 5)
    est = S.paired_t(list(a), list(b))
    rel = stats.ttest_rel(a, b).confidence_interval(0.95)
    ind = stats.ttest_ind(a, b).confidence_interval(0.95)
    assert (est.low, est.high) == pytest.approx((rel.low, rel.high), rel=1e-12)
    assert est.high - est.low < (ind.high - ind.low) / 5


def test_swapping_the_arms_mirrors_the_interval_and_the_one_sided_p_values():
    a, b = [0.31, 0.35, 0.29, 0.40], [0.05, 0.02, 0.08, 0.04]
    ab, ba = S.paired_t(a, b), S.paired_t(b, a)
    assert (ab.low, ab.high) == pytest.approx((-ba.high, -ba.low), rel=1e-12)
    assert S.p_above(ab, 0.1) == pytest.approx(S.p_below(ba, -0.1), rel=1e-12)


@pytest.mark.parametrize("n", [2, 3, 5])
def test_one_sided_p_values_are_scipys_one_sided_t_tests_and_sum_to_one(n):
    v = np.random.default_rng(10 + n).normal(0.05, 0.1, n)
    est = S.one_sample_t(v)
    assert S.p_above(est, 0.02) == pytest.approx(stats.ttest_1samp(v, 0.02, alternative="greater").pvalue, rel=1e-10)
    assert S.p_below(est, 0.02) == pytest.approx(stats.ttest_1samp(v, 0.02, alternative="less").pvalue, rel=1e-10)
    two = stats.ttest_1samp(v, 0.02).pvalue
    assert 2 * min(S.p_above(est, 0.02), S.p_below(est, 0.02)) == pytest.approx(two, rel=1e-10)


def test_a_look_interval_misses_each_side_at_its_one_sided_nominal_level_by_simulation():
    rng = np.random.default_rng(3)
    draws, n, nominal = 2000, 4, 0.1
    x = 0.3 + 0.2 * rng.standard_normal((draws, n))
    above = below = 0
    for row in x:
        e = Q.look_estimate(row, nominal)
        above += e.low > 0.3
        below += e.high < 0.3
    se = math.sqrt(nominal * (1 - nominal) / draws)
    assert abs(above / draws - nominal) < 4 * se and abs(below / draws - nominal) < 4 * se


def test_the_repeated_intervals_of_the_committed_looks_miss_a_side_at_most_at_the_members_share():
    looks = [3, 6, 9, 12]
    # the committed design's one-sided levels (O'Brien-Fleming-type spending of 0.02: 0.01 a side
    # per member; the loader checks them against the spending function)
    nom = [1.63812e-06, 5.00327e-04, 3.42448e-03, 8.67006e-03]
    rng = np.random.default_rng(11)
    draws = 20000
    x = rng.standard_normal((draws, 12))
    low_miss = np.zeros(draws, bool)
    for k, n in enumerate(looks):
        m, s = x[:, :n].mean(1), x[:, :n].std(1, ddof=1)
        low_miss |= m - stats.t.isf(nom[k], n - 1) * s / math.sqrt(n) > 0
    se = math.sqrt(0.01 * 0.99 / draws)
    assert abs(low_miss.mean() - 0.01) < 4 * se


def test_the_median_interval_covers_a_skewed_median_at_the_coverage_it_states():
    rng = np.random.default_rng(5)
    n, draws = 6, 4000
    res = S.median_interval(np.arange(n, dtype=float), 0.9)
    x = rng.exponential(1.0, (draws, n))
    xs = np.sort(x, axis=1)
    k = int(res["low"])                      # the rank of the low end (values 0..n-1)
    cover = np.mean((xs[:, k] <= math.log(2)) & (xs[:, n - 1 - k] >= math.log(2)))
    assert abs(cover - res["coverage"]) < 4 * math.sqrt(res["coverage"] * (1 - res["coverage"]) / draws)


# ------------------------------------------------------------------ (b) outcomes at their boundaries


@pytest.mark.parametrize("low, high, want", [
    (D, D, "holds"),                         # no width, at d
    (0.0, 0.0, "refuted"),                   # no width, at 0: not above 0, below d
    (D / 2, D / 2, "negligible"),            # no width, between
    (0.0, D, "inconclusive"),                # touching 0 and d
    (1e-12, D, "holds, size open"),          # just above 0, touching d
    (-1.0, 0.0, "refuted"),                  # touching 0 from below
    (0.0, D * (1 - 1e-9), "refuted"),        # touching 0, just below d
    (D, 1.0, "holds"),                       # low end at d
])
def test_an_interval_touching_0_or_d_or_of_no_width_meets_exactly_one_outcome(low, high, want):
    assert S.interval_outcome(low, high, D) == want
    hits = [k for k, v in S.outcome_conditions(low, high, D).items() if v]
    assert hits == [want]


@pytest.mark.parametrize("low, high", [(math.nan, 0.1), (-math.inf, 0.1), (0.0, math.inf), (0.2, 0.1)])
def test_an_interval_with_no_finite_ends_or_reversed_is_refused_by_the_partition(low, high):
    with pytest.raises(ValueError) as err:
        S.interval_outcome(low, high, D)
    assert "not an interval" in _one_line(err)


@pytest.mark.parametrize("low, high, sd", [(math.nan, math.nan, math.nan), (-math.inf, math.inf, 1.0),
                                           (0.1, 0.1, 0.0)])
def test_a_directional_estimate_of_nan_or_inf_or_no_spread_is_not_testable(low, high, sd):
    assert S.directional_outcome(_est(low, high, mean=0.1, sd=sd), D) == "not testable here"


def test_a_level_claims_bound_equal_to_its_threshold_up_to_the_last_bit_is_equal():
    # 0.1 + 0.2 is 0.30000000000000004: an interval whose low end is the threshold computed
    # another way is not above it, as a directional claim's low end at d is at d
    assert S.threshold_outcome(_est(0.1 + 0.2, 0.7), 0.3) == S.threshold_outcome(_est(0.3, 0.7), 0.3) == "inconclusive"
    assert S.threshold_outcome(_est(-0.5, 0.3 - 5e-17), 0.3) == "inconclusive"


def test_an_equality_claims_bound_equal_to_its_band_up_to_the_last_bit_is_equal():
    band = 0.3
    high = 0.1 + 0.2 - 1e-16     # 0.29999999999999993, the band up to the last bits
    assert S.equivalence_outcome(_est(-0.1, high), band) == S.equivalence_outcome(_est(-0.1, band), band)
    assert S.equivalence_outcome(_est(-0.1, band), band) == "inconclusive"
    assert S.equivalence_outcome(_est(0.1 + 0.2, 0.5), band) == "inconclusive"


def test_the_true_outcomes_at_0_and_at_d_are_those_each_statement_makes_true():
    assert Q.true_outcomes(0.0, D) == ("refuted",)
    assert Q.true_outcomes(D, D) == ("holds", "holds, size open")
    assert Q.true_outcomes(D / 2, D) == ("holds, size open", "negligible", "refuted")
    assert Q.true_outcomes(-D, D) == ("refuted",)


def test_a_holds_at_the_yardstick_exactly_has_the_one_sided_level_as_its_p_value():
    v = np.array([0.2, 0.25, 0.3, 0.28])
    est = S.one_sample_t(v, 0.9)
    d = est.low                                  # the low end exactly at d
    assert S.directional_outcome(est, d) == "holds"
    assert S.deciding_p(est, "holds", d) == pytest.approx(0.05, rel=1e-9)
    assert S.deciding_p(est, "holds", d) == pytest.approx(stats.ttest_1samp(v, d, alternative="greater").pvalue)


def test_a_deciding_p_value_asked_without_a_yardstick_threshold_or_band_is_refused():
    with pytest.raises(ValueError) as err:
        S.deciding_p(S.one_sample_t([0.1, 0.2, 0.3]), "holds")
    assert "yardstick" in _one_line(err)


def test_a_deciding_p_value_of_an_outcome_that_does_not_exist_is_refused_not_nan():
    with pytest.raises(ValueError) as err:
        S.deciding_p(S.one_sample_t([0.1, 0.2, 0.3]), "hold", 0.05)
    assert "'hold'" in _one_line(err) and "holds" in _one_line(err)


@pytest.mark.parametrize("outcome", ["inconclusive", "not testable here", "holds (reported beside)"])
def test_a_deciding_p_value_of_an_undecided_or_beside_outcome_is_read_as_its_base(outcome):
    est = S.one_sample_t([0.1, 0.2, 0.3])
    p = S.deciding_p(est, outcome, 0.05)
    if outcome.startswith("holds"):
        assert p == pytest.approx(stats.ttest_1samp([0.1, 0.2, 0.3], 0.05, alternative="greater").pvalue)
    else:
        assert math.isnan(p)


@pytest.mark.parametrize("min_seeds", ["3", True, 2.5, None])
def test_a_minimum_of_seeds_that_is_no_whole_number_is_refused_naming_it(min_seeds):
    with pytest.raises(ValueError) as err:
        S.directional_outcome(S.one_sample_t([0.1, 0.2, 0.3]), D, min_seeds)
    assert "min_seeds" in _one_line(err)


# ------------------------------------------------------------------ (c) spending, boundaries, the family


@pytest.mark.parametrize("kind", ["obrien-fleming", "pocock"])
def test_spending_is_the_lan_demets_closed_form_at_every_fraction(kind):
    t = np.array([0.0, 0.1, 0.25, 0.5, 0.75, 1.0])
    z = stats.norm.ppf(0.975)
    want = (2 * stats.norm.sf(z / np.sqrt(np.maximum(t, 1e-300))) if kind == "obrien-fleming"
            else 0.05 * np.log(1 + (math.e - 1) * t))
    got = Q.spending(t, 0.05, kind)
    assert np.allclose(got, want, rtol=1e-12, atol=1e-300) and got[-1] == pytest.approx(0.05)
    assert (np.diff(got) > 0).all()


@pytest.mark.parametrize("alpha", [np.float32(0.05), np.float64(0.05), 0.05])
def test_spending_of_a_numpy_float_alpha_is_the_spending_of_that_number(alpha):
    assert Q.spending(0.5, alpha) == pytest.approx(2 * stats.norm.sf(stats.norm.ppf(1 - float(alpha) / 2) / math.sqrt(0.5)))


@pytest.mark.parametrize("alpha", ["0.05", True, None])
def test_spending_of_an_alpha_that_is_no_number_is_refused_naming_it(alpha):
    with pytest.raises(ValueError) as err:
        Q.spending(0.5, alpha)
    assert "alpha" in _one_line(err)


@pytest.fixture(scope="module")
def committed_design():
    """The committed design's boundaries (looks 3, 6, 9, 12; O'Brien-Fleming-type spending of a
    two-sided 0.02), computed once: the rules loader asks for the same and reuses them."""
    return Q.boundaries([3, 6, 9, 12], 0.02, "obrien-fleming")


@pytest.mark.parametrize("kind, looks, alpha", [("pocock", [3, 6], 0.05), ("obrien-fleming", [3, 6, 9, 12], 0.02)])
def test_the_boundaries_spend_by_each_look_what_the_spending_function_gives_by_the_multivariate_normal(
        committed_design, kind, looks, alpha):
    """Under no effect (Z_1, ..., Z_K) is normal with corr(Z_j, Z_k) = sqrt(t_j / t_k): the chance
    of crossing by look k is 1 - P(|Z_j| < c_j, j <= k), which must be the spending at t_k (the
    second design is the committed one)."""
    c = Q.boundaries(looks, alpha, kind)
    t = np.asarray(looks, float) / looks[-1]
    cov = np.sqrt(np.minimum.outer(t, t) / np.maximum.outer(t, t))
    for k in range(1, len(t) + 1):
        law = stats.multivariate_normal(np.zeros(k), cov[:k, :k], seed=k, maxpts=100_000 * k, abseps=5e-7, releps=0)
        inside = law.cdf(c[:k], lower_limit=-c[:k])   # quasi-Monte Carlo, its error below about 2e-6
        assert 1 - inside == pytest.approx(float(Q.spending(t[k - 1], alpha, kind)), abs=5e-6)


@pytest.mark.parametrize("grid", [1, 3, 50, "2001", 2001.5, True])
def test_a_boundary_grid_too_coarse_to_be_exact_or_no_whole_number_is_refused(grid):
    with pytest.raises(ValueError) as err:
        Q.boundaries([3, 6], 0.05, "pocock", grid=grid)
    assert "grid" in _one_line(err)


def test_the_committed_families_split_their_level_within_their_fwer_and_the_bound_is_stated():
    import yaml

    with open("data/verdict_rules.yaml", encoding="utf-8") as fh:
        rules = yaml.safe_load(fh)
    read_once = set(rules["evidence"]["claims"])
    table = pd.read_csv("data/verdict_rules_family.csv")
    for name, f in rules["framework"]["families"].items():
        tests = f.get("tests", len(f["members"]))
        alpha = f.get("alpha", rules["framework"]["sequential"]["alpha"])
        assert tests * alpha / 2 <= f["fwer"]          # the members' shares within the family's level
        if set(f["members"]) <= read_once:
            row = table[table["family"] == name]
            assert float(row["family error"].iloc[0]) == pytest.approx(tests * alpha / 2, rel=1e-9)
            assert float(row["worst member error"].iloc[0]) == pytest.approx(alpha / 2, rel=1e-9)
        else:
            assert (table[table["family"] == name]["family error"] <= f["fwer"]).all()


def test_two_independent_members_at_no_effect_err_as_one_minus_the_product_of_their_successes():
    nom = [0.01, 0.02]
    one = Q.family_error_split([(0.0, 1.0, nom, 0.1, "a")], [3, 6], correlation=0.0, draws=20000, seed=1)
    both = Q.family_error_split([(0.0, 1.0, nom, 0.1, "a"), (0.0, 1.0, nom, 0.1, "b")], [3, 6], correlation=0.0,
                                draws=20000, seed=2)
    e = one["family_error"]
    want = 1 - (1 - e) ** 2
    se = math.sqrt(want * (1 - want) / 20000) + math.sqrt(e * (1 - e) / 20000) * 2
    assert abs(both["family_error"] - want) < 4 * se


def test_members_of_one_group_at_full_correlation_err_together():
    nom = [0.01, 0.02]
    m = (0.0, 1.0, nom, 0.1, "a")
    res = Q.family_error_split([m, m], [3, 6], correlation=1.0, draws=5000, seed=3)
    assert res["member_error"][0] == res["member_error"][1] == res["family_error"]


@pytest.mark.parametrize("members", [[(0.0, 0.1, [0.01])], [0.0], [(0.0, 0.1, [0.01], 0.05, "g", 1)]])
def test_a_family_member_that_is_not_effect_spread_levels_and_yardstick_is_refused(members):
    with pytest.raises(ValueError) as err:
        Q.family_error(members, [3], draws=100)
    assert "member" in _one_line(err)


@pytest.mark.parametrize("correlation", ["0.5", None, True])
def test_a_family_correlation_that_is_no_number_is_refused_naming_it(correlation):
    with pytest.raises(ValueError) as err:
        Q.family_error_split([(0.0, 0.1, [0.01], 0.05, "g")], [3], correlation=correlation, draws=100)
    assert "correlation" in _one_line(err)


# ------------------------------------------------------------------ (d) power and detectable effects


@pytest.mark.parametrize("n", [2, 3, 5])
def test_the_detectable_effect_has_its_power_by_the_non_central_t(n):
    de = P.detectable_effect(n, 0.2, 0.95, 0.8)
    crit = stats.t.ppf(0.975, n - 1)
    assert stats.nct.sf(crit, n - 1, de * math.sqrt(n) / 0.2) == pytest.approx(0.8, abs=1e-6)


def test_the_detectable_effect_falls_with_seeds_and_rises_with_level_and_power():
    by_n = [P.detectable_effect(n, 0.2) for n in range(2, 8)]
    by_level = [P.detectable_effect(4, 0.2, lv) for lv in (0.8, 0.9, 0.95, 0.99)]
    by_power = [P.detectable_effect(4, 0.2, 0.95, p) for p in (0.5, 0.7, 0.8, 0.9)]
    assert all(a > b for a, b in zip(by_n, by_n[1:]))
    assert all(a < b for a, b in zip(by_level, by_level[1:]))
    assert all(a < b for a, b in zip(by_power, by_power[1:]))


def test_the_power_of_holds_at_the_yardstick_is_the_one_sided_level_and_its_effect_is_d_plus_the_detectable():
    pw = P.directional_power(4, 0.2, D, 0.9, draws=2000)
    assert pw["p_holds_at_sesoi"] == pytest.approx(0.05, abs=1e-9)
    crit = stats.t.ppf(0.95, 3)
    assert stats.nct.sf(crit, 3, (pw["detect_holds"] - D) * 2 / 0.2) == pytest.approx(0.8, abs=1e-6)
    assert pw["detect_holds"] - D == pytest.approx(pw["detect_direction"], rel=1e-6)


def test_the_level_claims_power_is_its_closed_form():
    pw = P.threshold_power(5, 0.3, 0.5, 0.9, 0.7)
    assert pw["p_refuted_at_threshold"] == pytest.approx(0.05, abs=1e-12)
    ncp = (pw["detect_holds"] - 0.5) * math.sqrt(5) / 0.3
    assert stats.nct.sf(stats.t.ppf(0.95, 4), 4, ncp) == pytest.approx(0.7, abs=1e-6)


def test_the_equality_claims_power_at_0_is_what_a_simulation_of_seeds_finds():
    n, sd, band, level = 4, 0.1, 0.15, 0.9
    pw = P.equivalence_power(n, sd, band, level, draws=50000)
    rng = np.random.default_rng(99)
    x = sd * rng.standard_normal((20000, n))
    half = stats.t.ppf(0.95, n - 1) * x.std(1, ddof=1) / math.sqrt(n)
    lo, hi = x.mean(1) - half, x.mean(1) + half
    p = np.mean((-band < lo) & (hi < band))
    assert abs(pw["p_holds_at_0"] - p) < 4 * math.sqrt(p * (1 - p) / 20000) + 4 * math.sqrt(p * (1 - p) / 50000)


def test_the_detectable_effect_interval_is_the_non_central_t_effect_times_the_spreads_interval():
    lo, at, hi = Q.detectable_effect_interval(3, 0.2, 0.01, 0.8, 0.95)
    crit = stats.t.isf(0.01, 2)
    assert stats.nct.sf(crit, 2, at * math.sqrt(3) / 0.2) == pytest.approx(0.8, abs=1e-6)
    r_lo = math.sqrt(2 / stats.chi2.isf(0.025, 2))
    r_hi = math.sqrt(2 / stats.chi2.ppf(0.025, 2))
    assert (lo, hi) == pytest.approx((at * r_lo, at * r_hi), rel=1e-12)


def test_the_detectable_effect_of_a_strict_look_at_two_seeds_is_found_not_nan():
    """At 2 seeds and a one-sided level of 1e-9 (an early look's) the effect lies beyond 1e7 spreads;
    its power is checked by drawing T = (Z + ncp) / sqrt(chi2_1)."""
    lo, at, hi = Q.detectable_effect_interval(2, 0.1, 1e-9)
    assert math.isfinite(lo) and lo < at < hi
    rng = np.random.default_rng(8)
    z, u = rng.standard_normal(200_000), np.sqrt(rng.chisquare(1, 200_000))
    p = np.mean((z + at * math.sqrt(2) / 0.1) / u > stats.t.isf(1e-9, 1))
    assert abs(p - 0.8) < 4 * math.sqrt(0.16 / 200_000)


@pytest.mark.parametrize("n", [2.5, "3", True, None])
def test_a_seed_count_that_is_no_whole_number_is_refused_by_every_power_solver(n):
    for call in (lambda: P.detectable_effect(n, 0.2), lambda: P.directional_power(n, 0.2, D, draws=100),
                 lambda: P.threshold_power(n, 0.2, 0.5), lambda: P.equivalence_power(n, 0.2, 0.1, draws=100),
                 lambda: Q.detectable_effect_interval(n, 0.2, 0.01), lambda: Q.spread_ratio_interval(n)):
        with pytest.raises(ValueError) as err:
            call()
        assert "seeds" in _one_line(err) and repr(n) in _one_line(err)


def test_a_numpy_whole_seed_count_is_a_seed_count():
    assert P.detectable_effect(np.int64(4), 0.2) == pytest.approx(P.detectable_effect(4, 0.2), rel=1e-12)
    assert P.detectable_effect(4.0, 0.2) == pytest.approx(P.detectable_effect(4, 0.2), rel=1e-12)


@pytest.mark.parametrize("sd", ["0.2", True, None, [0.2]])
def test_a_spread_that_is_no_number_is_refused_by_every_power_solver(sd):
    for call in (lambda: P.detectable_effect(4, sd), lambda: P.directional_power(4, sd, D, draws=100),
                 lambda: P.threshold_power(4, sd, 0.5), lambda: P.equivalence_power(4, sd, 0.1, draws=100),
                 lambda: Q.detectable_effect_interval(4, sd, 0.01)):
        with pytest.raises(ValueError) as err:
            call()
        assert "spread" in _one_line(err)


def test_a_spread_of_nan_or_zero_still_gives_nan_power():
    assert math.isnan(P.detectable_effect(4, float("nan")))
    assert math.isnan(P.directional_power(4, 0.0, D, draws=100)["detect_holds"])


@pytest.mark.parametrize("call", [
    lambda: P.directional_power(4, 0.2, "0.05", draws=100),
    lambda: P.equivalence_power(4, 0.2, "0.1", draws=100),
    lambda: P.threshold_power(4, 0.2, "0.5"),
    lambda: P.threshold_power(4, 0.2, float("nan")),
])
def test_a_yardstick_band_or_threshold_that_is_no_number_is_refused_by_the_power_solvers(call):
    with pytest.raises(ValueError) as err:
        call()
    line = _one_line(err)
    assert "yardstick" in line or "band" in line or "threshold" in line


@pytest.mark.parametrize("draws", [0, -1, 1000.0, "1000", True])
def test_power_draws_that_are_no_whole_number_from_1_are_refused(draws):
    for call in (lambda: P.directional_power(4, 0.2, D, draws=draws), lambda: P.equivalence_power(4, 0.2, 0.1, draws=draws)):
        with pytest.raises(ValueError) as err:
            call()
        assert "draws" in _one_line(err)


@pytest.mark.parametrize("level", [1.0, 1.5, 0.0, "0.95"])
def test_a_spread_interval_at_no_confidence_level_is_refused_not_inf_or_nan(level):
    for call in (lambda: Q.spread_ratio_interval(3, level), lambda: Q.detectable_effect_interval(3, 0.2, 0.01, 0.8, level)):
        with pytest.raises(ValueError) as err:
            call()
        assert "level" in _one_line(err)


# ------------------------------------------------------------------ (e) values of the wrong type


def test_a_pandas_na_seed_is_a_seed_without_a_number_not_a_crash():
    with pytest.raises(ValueError) as err:
        S.one_sample_t([0.1, pd.NA, 0.2])
    assert "finite" in _one_line(err)
    assert S.median_interval([0.1, pd.NA, 0.3], nan_as="low")["low"] == -math.inf
    assert Q.look_estimate([0.1, pd.NA, 0.3], 0.025).problem.startswith("a non-finite paired value")
    assert Q.look_estimate(pd.array([0.1, None, 0.3], dtype="Float64"), 0.025).problem


@pytest.mark.parametrize("values", [[0.1 + 1j, 0.2, 0.3], [{"a": 1}, 0.2, 0.3], [[0.1, 0.2], [0.3]],
                                    [b"0.1", 0.2, 0.3], {"s0": 0.1, "s1": 0.2}, 0.5])
def test_seed_values_that_are_no_list_of_real_numbers_are_refused_in_one_line(values):
    for call in (lambda: S.one_sample_t(values), lambda: Q.look_estimate(values, 0.025),
                 lambda: S.median_interval(values)):
        with pytest.raises(ValueError) as err:
            call()
        assert "seed" in _one_line(err)


def test_seed_values_from_a_generator_or_a_nullable_series_are_read_as_the_list():
    want = S.one_sample_t([0.1, 0.2, 0.35])
    assert S.one_sample_t(x for x in [0.1, 0.2, 0.35]) == want
    assert S.one_sample_t(pd.Series([0.1, 0.2, 0.35], dtype="Float64")) == want


@pytest.mark.parametrize("values", [["0.1", "0.2", "0.3"], [True, False, True], [np.True_, 0.2, 0.3],
                                    np.array([True, False, True])])
def test_text_or_bools_as_seed_values_are_refused_by_every_reader(values):
    calls = [lambda: S.one_sample_t(values), lambda: Q.look_estimate(values, 0.025),
             lambda: S.median_interval(values), lambda: Q.read_sequential(values, [3], [0.025], D),
             lambda: S.paired_t(values, [0.0, 0.0, 0.0]), lambda: S.paired_t([0.0, 0.0, 0.0], values)]
    for call in calls:
        with pytest.raises(ValueError) as err:
            call()
        assert "bool or text" in _one_line(err)


def test_a_series_of_bools_by_seed_is_refused_by_the_paired_t():
    a = pd.Series([True, False, True], index=[4, 5, 6])
    with pytest.raises(ValueError) as err:
        S.paired_t(a, pd.Series([0.0, 0.0, 0.0], index=[4, 5, 6]))
    assert "bool or text" in _one_line(err)


@pytest.mark.parametrize("nominal", ["0.025", None, True])
def test_a_looks_nominal_level_that_is_no_number_is_refused_naming_it(nominal):
    with pytest.raises(ValueError) as err:
        Q.look_estimate([0.1, 0.2, 0.3], nominal)
    assert "nominal level" in _one_line(err)


@pytest.mark.parametrize("p", [[0.01, np.True_], [0.01, True], [0.01, "0.02"]])
def test_holm_refuses_a_bool_or_text_p_value_numpy_bools_included(p):
    with pytest.raises(ValueError) as err:
        S.holm(p)
    assert "p-values" in _one_line(err)


def test_holm_reads_pandas_na_and_none_as_a_member_not_tested():
    got = S.holm([0.01, pd.NA, 0.02])
    # m = 3 (the untested member counts and ranks last): 3 x 0.01, then max(0.03, 2 x 0.02)
    assert got[0] == pytest.approx(0.03) and math.isnan(got[1]) and got[2] == pytest.approx(0.04)
    assert np.array_equal(S.holm([0.01, None, 0.02]), got, equal_nan=True)


@pytest.mark.parametrize("p", [{"a": 0.01}, 0.01, None])
def test_holm_of_no_list_is_refused_in_one_line(p):
    with pytest.raises(ValueError) as err:
        S.holm(p)
    assert "p-values" in _one_line(err)


def test_holm_of_one_member_is_its_p_and_of_a_generator_is_of_the_list():
    assert S.holm([0.03]).tolist() == [0.03]
    assert S.holm(x for x in [0.04, 0.01]).tolist() == pytest.approx([0.04, 0.02])
    assert np.isnan(S.holm([float("nan")])).all()


def test_holm_agrees_with_a_hand_step_down_over_random_families():
    rng = np.random.default_rng(4)
    for _ in range(200):
        m = int(rng.integers(1, 7))
        p = rng.uniform(0, 0.2, m)
        order = np.argsort(p, kind="stable")
        want, run = np.empty(m), 0.0
        for r, i in enumerate(order):
            run = max(run, min(1.0, (m - r) * p[i]))
            want[i] = run
        # Holm rejects at alpha exactly the hypotheses the step-down procedure rejects
        rejected = set()
        for r, i in enumerate(order):
            if p[i] > 0.05 / (m - r):
                break
            rejected.add(int(i))
        assert np.allclose(S.holm(p), want) and rejected == set(np.flatnonzero(S.holm(p) <= 0.05).tolist())


def test_a_level_of_a_numpy_float_gives_the_interval_of_that_float():
    v = [0.1, 0.2, 0.35, 0.3]
    assert S.one_sample_t(v, np.float32(0.9)).high == pytest.approx(S.one_sample_t(v, 0.9).high, rel=1e-6)


# ------------------------------------------------------------------ (c) the committed tables, edited in a copy


def _copy_rules(tmp_path):
    import shutil
    from pathlib import Path

    data = Path(__file__).resolve().parents[1] / "data"
    d = tmp_path / "data"
    d.mkdir()
    for name in ("verdict_rules.yaml", "verdict_rules_design.csv", "verdict_rules_family.csv", "survey_design.csv"):
        shutil.copy(data / name, d / name)
    return d


def _load(d):
    from companion.rules.rulebook import load_rules

    return load_rules(d / "verdict_rules.yaml")


def test_a_design_table_whose_chance_of_a_true_outcome_and_met_are_edited_together_is_refused(committed_design, tmp_path):
    d = _copy_rules(tmp_path)
    df = pd.read_csv(d / "verdict_rules_design.csv")
    i = df.index[(df["claim"] == "training_symmetry") & (df["effect"].astype(str) == "pilot")][0]
    # the chance of a decided outcome true of the pilot's effect (0.147 > d: holds or holds, size open)
    assert float(df.loc[i, "p_true_decided"]) == pytest.approx(df.loc[i, "holds"] + df.loc[i, "holds, size open"])
    df.loc[i, "p_true_decided"], df.loc[i, "met"] = 0.81, True     # a missed target made to read as met
    df.to_csv(d / "verdict_rules_design.csv", index=False)
    with pytest.raises(CompanionError) as err:
        _load(d)
    assert "p_true_decided" in _one_line(err)


@pytest.mark.parametrize("column, value", [("worst member error", 0.9), ("family error", -0.01),
                                           ("worst member error", float("nan"))])
def test_a_family_table_with_no_chance_or_a_member_erring_more_than_its_family_is_refused(committed_design, tmp_path,
                                                                                        column, value):
    d = _copy_rules(tmp_path)
    df = pd.read_csv(d / "verdict_rules_family.csv")
    assert ((df["worst member error"] >= 0) & (df["worst member error"] <= df["family error"])).all()
    df.loc[3, column] = value            # a word-piece row: a member's wrong outcome is its family's
    df.to_csv(d / "verdict_rules_family.csv", index=False)
    with pytest.raises(CompanionError) as err:
        _load(d)
    assert "family table" in _one_line(err)


@pytest.mark.parametrize("name", ["/tmp/elsewhere.csv", "../elsewhere.csv", "data/../../elsewhere.csv"])
def test_a_table_named_outside_the_rules_folder_is_refused_before_it_is_read_or_written(tmp_path, name):
    """The design check writes the tables the rules name (--write): a name that is absolute or climbs
    out of the folder holding the rules' data/ would overwrite a file there."""
    from companion.rules.design_tables import design_table_path, family_table_path

    rules_file = tmp_path / "repo" / "data" / "verdict_rules.yaml"
    rules = {"framework": {"design_check": {"table": name}, "family_check": {"table": name}}}
    for call in (design_table_path, family_table_path):
        with pytest.raises(CompanionError) as err:
            call(rules, rules_file)
        assert name in _one_line(err) and "outside" in _one_line(err)


def test_a_table_named_under_the_rules_folder_is_found_there(tmp_path):
    from companion.rules.design_tables import design_table_path

    rules_file = tmp_path / "repo" / "data" / "verdict_rules.yaml"
    rules = {"framework": {"design_check": {"table": "data/./sub/../verdict_rules_design.csv"}}}
    got = design_table_path(rules, rules_file)
    assert got.resolve() == (tmp_path / "repo" / "data" / "verdict_rules_design.csv").resolve()


@pytest.mark.parametrize("kwargs", [{"band": -0.1}, {"band": "0.1"}, {"band": float("inf")}, {"threshold": float("nan")},
                                    {"threshold": "0.5"}])
def test_a_deciding_p_value_with_a_band_or_threshold_that_is_no_number_is_refused(kwargs):
    est = S.one_sample_t([0.01, 0.02, -0.01, 0.0])
    with pytest.raises(ValueError) as err:
        S.deciding_p(est, "holds", **kwargs)
    assert next(iter(kwargs)) in _one_line(err)


def test_a_simulated_design_given_one_yardstick_per_look_says_it_takes_one():
    with pytest.raises(ValueError) as err:
        Q.simulate_design(0.1, 0.1, [3, 6], [0.01, 0.02], [0.05, 0.05], draws=100)
    assert "one yardstick" in _one_line(err)


# ------------------------------------------------------------------ more boundaries and families


@pytest.mark.parametrize("low, high, want", [(0.5, 0.5, "inconclusive"), (0.5 + 1e-6, 0.6, "holds"),
                                             (0.4, 0.5 - 1e-6, "refuted"), (0.4, 0.5, "inconclusive")])
def test_a_level_claims_interval_touching_its_threshold_is_inconclusive_and_one_beyond_it_decides(low, high, want):
    assert S.threshold_outcome(_est(low, high), 0.5) == want


@pytest.mark.parametrize("low, high, want", [(-0.3, 0.3, "inconclusive"), (-0.3 + 1e-6, 0.3 - 1e-6, "holds"),
                                             (0.3, 0.4, "inconclusive"), (0.3 + 1e-6, 0.4, "refuted"),
                                             (-0.4, -0.3 - 1e-6, "refuted"), (0.0, 0.0, "not testable here")])
def test_an_equality_claims_interval_at_its_band_is_inconclusive_and_one_beyond_it_decides(low, high, want):
    sd = 0.0 if low == high else 0.1     # an interval of no width has no spread
    assert S.equivalence_outcome(_est(low, high, sd=sd), 0.3) == want


def test_one_member_split_family_errs_as_its_simulated_design_does():
    nom, d, sd = [0.02, 0.04], 0.05, 0.2
    fam = Q.family_error_split([(0.0, sd, nom, d, "a")], [3, 6], correlation=0.5, draws=20000, seed=5)
    one = Q.simulate_design(0.0, sd, [3, 6], nom, d, draws=20000, seed=6)
    wrong = one["holds"] + one["holds, size open"] + one["negligible"]   # at 0 only 'refuted' is true
    se = math.sqrt(2 * wrong * (1 - wrong) / 20000)
    assert abs(fam["family_error"] - wrong) < 4 * se and fam["member_error"] == [fam["family_error"]]


def test_four_members_at_no_effect_on_one_body_err_within_the_union_bound_of_the_committed_split():
    nom = [1.63812e-06, 5.00327e-04, 3.42448e-03, 8.67006e-03]   # 0.01 a side for each of four members
    members = [(0.0, 1.0, nom, 0.1, "body")] * 4
    res = Q.family_error_split(members, [3, 6, 9, 12], correlation=0.5, draws=10000, seed=7)
    assert res["family_error"] <= 4 * 0.01 + 4 * math.sqrt(0.04 * 0.96 / 10000)
    assert max(res["member_error"]) <= 0.01 + 4 * math.sqrt(0.01 * 0.99 / 10000)
    assert res["family_error"] >= max(res["member_error"])


@pytest.mark.parametrize("fixed, started, after", [
    ("2026-12-01T10:00:00+00:00", "2026-12-01T12:00:00+00:00", False),   # a timestamp as text: that moment
    ("2026-12-01T10:00:00+00:00", "2026-12-01T09:00:00+00:00", True),
    ("2026-12-01", "2026-12-01T23:00:00+00:00", True),                   # a bare date: the end of its day
])
def test_a_rule_stamped_as_text_is_written_after_the_runs_begun_before_that_moment(fixed, started, after):
    from companion.rules.verdicts import rule_written_after

    assert rule_written_after({"fixed": fixed}, [started]) is after


@pytest.mark.parametrize("call", [
    lambda: P.directional_power(4, 0.2, D, draws=10**10),
    lambda: P.equivalence_power(4, 0.2, 0.1, draws=10**10),
    lambda: Q.simulate_design(0.0, 1.0, [3, 6], [0.01, 0.02], D, draws=10**9),
    lambda: Q.family_error([(0.0, 1.0, [0.01, 0.02], D)], [3, 6], draws=10**9),
    lambda: Q.family_error_split([(0.0, 1.0, [0.01, 0.02], D, "a")], [3, 6], draws=10**9),
])
def test_draws_that_would_not_fit_in_memory_are_refused_before_anything_is_drawn(call):
    with pytest.raises(ValueError) as err:
        call()
    assert "GB" in _one_line(err) and "draws" in _one_line(err)


@pytest.mark.parametrize("call", ["seeds", "threshold", "band", "level"])
def test_an_int_past_floats_range_is_refused_as_no_number_in_one_line(call):
    """10**400 raised a raw OverflowError from math.isfinite inside is_number."""
    from companion.rules import statistics as st

    est = st.one_sample_t([0.1, 0.2, 0.3])
    with pytest.raises(ValueError) as err:
        {"seeds": lambda: st.check_seed_count(10 ** 400),
         "threshold": lambda: st.threshold_outcome(est, 10 ** 400),
         "band": lambda: st.equivalence_outcome(est, 10 ** 400),
         "level": lambda: P.detectable_effect(3, 1.0, level=10 ** 400)}[call]()
    assert "\n" not in str(err.value) and not isinstance(err.value, OverflowError)
    assert st.is_number(10 ** 400) is False and st.is_number(10 ** 300) is True
