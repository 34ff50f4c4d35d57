"""The statistics engine that decides the empirical claims, tried with real-looking edge cases
whose right answer is computed independently (scipy, a hand-worked example, exact arithmetic):
a yardstick met exactly under Holm, seeds that differ in their last bit only, quantities in
very small or very large units, negative zeros, a look with seeds missing, a claim before its
first look, yardsticks per look given as a Series, and the premises' thresholds as worded."""

from __future__ import annotations

import math
from fractions import Fraction
from itertools import combinations

import numpy as np
import pandas as pd
import pytest
from scipy import optimize, stats

from one_line import refused

from companion.base.errors import CompanionError
from companion.rules import power as P
from companion.rules import sequential as Q
from companion.rules import statistics as S
from companion.rules.training import apply_rule_to_pair, gate

ENC, DEC = ("encoder", "standard"), ("decoder", "standard")
CFG = {"context_floor_nats": 0.6931, "memorisation_nats": 0.10, "horizon_fraction": 0.5}

#: the read-once rules these tests need, as a rules file states them (loading the file in force takes seconds)
RULES = {"version": 2, "framework": {"level": 0.95},
         "claims": {"thm_s1_12": {"threshold": 0.5, "primary": {"windows": "document-aligned"}},
                    "cor_s1_13": {"seeds": [0, 1, 2]}, "thm_s1_14": {"threshold": 0.7, "seeds": [0, 1, 2]}}}

#: version 2's training rule, as rules/history states it (the parts apply_rule_to_pair reads)
TRAINING_RULE = {"key": "training_symmetry", "fixed": "2026-11-26T21:54:00+00:00", "primary": {"body": "b", "comparator": "decoder"},
                 "arms": {"candidate": "encoder"}, "comparators": ["decoder"], "min_seeds": 3,
                 "framework": {"level": 0.95, "power": {"target": 0.8, "draws": 20_000, "seed": 1}, "gate": CFG}}


def _pair(enc, dec, seeds, half=True):
    s = lambda v: pd.Series(v, index=seeds, dtype=float)  # noqa: E731
    n = len(seeds)
    return {"candidate": ENC, "comparator": "decoder", "arms": (ENC, DEC), "end": (s(enc), s(dec)),
            "half": (s(enc), s(dec)) if half else None, "seeds": seeds, "first_band": 0.0,
            "losses": {ENC: s([4.0] * n), DEC: s([4.0] * n)}, "references": {ENC: 6.0, DEC: 6.0},
            "gaps": {ENC: s([0.01] * n), DEC: s([0.01] * n)}, "half_step": 5000 if half else None}


def _rule_at(rules, key, **changes):
    out = {**rules, "claims": {**rules["claims"], key: {**rules["claims"][key], **changes}}}
    return out


# ============================================================ (a) a claim before its first look


def test_a_claim_before_its_first_look_reads_not_read_yet_with_its_seeds_in_not_a_traceback(monkeypatch):
    """The table's 'seeds in' is text ('2 of 12'); int() of it raised before any look was in."""
    from companion.judge import empirical_claims as ec
    from companion.rules import rulebook

    rule = {"claim": "Table 1: probe", "looks": [4, 8], "family": "f",
            "body_rule": {"label": "probe body", "seeds": list(range(12))}}
    monkeypatch.setattr(rulebook, "load_rules", lambda *a, **k: {"version": 4})
    monkeypatch.setattr(rulebook, "claim_rule", lambda key, rules=None: rule)
    row = pd.DataFrame([{"key": "table_1", "look": "none yet", "seeds in": "2 of 12", "status": "not read yet",
                         "reading": "not read yet"}])
    monkeypatch.setattr(ec, "_cached", lambda name, compute: row)
    v = ec._read_at_looks("table_1", "fig3_decided", "f3-table-1")
    assert v.status == "not testable here"
    assert v.measured == "not read yet: 2 of 12 seeds in, the first look needs 4 (probe body)"


# ============================================================ (b) Holm at a yardstick met exactly


def test_a_holds_whose_low_end_meets_d_exactly_survives_holm_as_holms_p_at_or_below_the_level_does():
    """The interval rule reads 'holds' at low = d, where the one-sided p is 0.025 up to its last
    bit; Holm rejects at an adjusted p at or below the level, so it survives, alone in its family
    and ranked last beside two smaller p-values (3 x 0.001, 2 x 0.004, 1 x 0.025 by hand)."""
    from companion.judge.empirical import family

    rng = np.random.default_rng(16)
    for _ in range(40):
        v = rng.normal(0.3, 0.05, 4)
        est = S.one_sample_t(v)
        d = est.low
        assert S.directional_outcome(est, d) == "holds"
        p = S.deciding_p(est, "holds", d)
        assert p == pytest.approx(stats.ttest_1samp(v, d, alternative="greater").pvalue, rel=1e-9)
        assert p == pytest.approx(0.025, rel=1e-9)
        alone = family(pd.DataFrame([dict(claim="a", outcome="holds", p_holds=0.001, p_refuted=0.99, p_decides=p)]))
        assert alone["survives"].tolist() == ["yes"] and alone["status"].tolist() == ["holds"]
        rows = [dict(claim="x", outcome="refuted", p_holds=0.9, p_refuted=0.001, p_decides=0.001),
                dict(claim="y", outcome="holds", p_holds=0.004, p_refuted=0.9, p_decides=0.004),
                dict(claim="a", outcome="holds", p_holds=0.001, p_refuted=0.99, p_decides=p)]
        t = family(pd.DataFrame(rows))
        assert t["p_holm"].tolist() == pytest.approx([0.003, 0.008, 0.025])
        assert t["survives"].tolist() == ["yes", "yes", "yes"]


# ============================================================ (c) power at no spread or a tiny one


def test_an_arm_that_is_the_other_plus_a_constant_reads_no_spread_and_no_power_not_an_error_blaming_the_level():
    """Per-seed differences 0.3 that vary in their last bit (an arm shifted by a constant): the
    outcome is 'not testable here' for no spread, and so is the power ('none'), where the power
    solver was refused naming the level and the seeds."""
    from companion.judge.empirical_claims import power_text

    seeds = [20, 21, 22, 23]
    enc, dec = [0.5, 0.6, 0.4, 0.45], [0.2, 0.3, 0.1, 0.15]
    d = np.subtract(enc, dec)
    assert 0 < d.std(ddof=1) < 1e-15                      # the spread is rounding alone
    res = apply_rule_to_pair("training_symmetry", TRAINING_RULE, "b", _pair(enc, dec, seeds),
                             {"sesoi": 0.05, "starts": []})
    assert res["outcome"] == "not testable here"
    assert all(math.isnan(v) for v in res["power"].values())
    row = {"n": res["estimate"].n, "detect_holds": res["power"]["detect_holds"]}
    assert power_text(row) == "4 seeds with no seed-to-seed spread: none"


def test_the_power_at_a_spread_of_1e_12_is_the_non_central_t_solution_in_those_units():
    """A quantity in small units (spread 1e-12, yardstick 1e-11): the effect that 'holds' reaches
    with probability 0.8 is d + c sd / sqrt(n), c the non-centrality at which the non-central t
    exceeds the critical value with probability 0.8 (scipy, solved here)."""
    n, sd, d = 4, 1e-12, 1e-11
    crit = stats.t.ppf(0.975, n - 1)
    c = optimize.brentq(lambda x: stats.nct.sf(crit, n - 1, x) - 0.8, 0.0, 50.0, xtol=1e-14)
    got = P.directional_power(n, sd, d, draws=20_000)
    assert got["detect_holds"] == pytest.approx(d + c * sd / math.sqrt(n), rel=1e-7)
    assert got["p_holds_at_sesoi"] == pytest.approx(0.025, rel=1e-9)
    assert got["detect_direction"] == pytest.approx(P.detectable_effect(n, 1.0) * sd, rel=1e-7)


def test_the_equality_claims_power_of_seeds_without_spread_reads_none_beside_not_testable():
    """Per-seed log ratios equal but for their last bit: 'not testable here', and no power of 1.00
    to hold beside it (the power of a spread of 5e-17)."""
    from companion.judge.empirical import equal_spreads_test

    t = equal_spreads_test([0.1 + 0.2, 0.3, 0.3], 0.1, rules=RULES).iloc[0]
    assert t["outcome"] == "not testable here"
    assert math.isnan(t["p_holds_at_0"]) and math.isnan(t["p_refuted_at_0"])


def test_the_detectable_effect_interval_at_a_spread_of_1e_12_is_scipys_non_central_t_effect_in_those_units():
    n, sd, nominal = 4, 1e-12, 0.01
    crit = stats.t.isf(nominal, n - 1)
    c = optimize.brentq(lambda x: stats.nct.sf(crit, n - 1, x) - 0.8, 0.0, 50.0, xtol=1e-14)
    lo, at, hi = Q.detectable_effect_interval(n, sd, nominal)
    assert at == pytest.approx(c / math.sqrt(n) * sd, rel=1e-7)
    r_lo, r_hi = math.sqrt(3 / stats.chi2.isf(0.025, 3)), math.sqrt(3 / stats.chi2.ppf(0.025, 3))
    assert (lo, hi) == pytest.approx((at * r_lo, at * r_hi), rel=1e-9)


# ============================================================ (d) values of very large size


def test_the_mean_and_interval_of_values_near_1e308_are_their_exact_mean_and_t_interval():
    v = [1e308, 1.2e308, 1.4e308]
    est = S.one_sample_t(v)
    exact = sum(Fraction(x) for x in v) / 3
    assert est.mean == pytest.approx(float(exact), rel=1e-15)
    small = np.asarray(v) / 1e300                           # the same interval in units of 1e300
    low, high = stats.t.interval(0.95, 2, loc=small.mean(), scale=stats.sem(small))
    assert (est.low / 1e300, est.high / 1e300) == pytest.approx((low, high), rel=1e-12)
    assert S.directional_outcome(est, 1e307) == "holds"


def test_a_look_of_values_near_1e308_reads_their_interval_not_identical_values():
    v = [1e308, 1.2e308, 1.4e308]
    est = Q.look_estimate(v, 0.025)
    assert est.problem == "" and est.sd == pytest.approx(2e307, rel=1e-12)
    assert est.mean == pytest.approx(1.2e308, rel=1e-15)


def test_the_median_of_values_near_1e308_is_their_middle_not_infinity():
    for v, want in (([1e308, 1.2e308], 1.1e308), ([1.5e308, 1.7e308, 1e308, 1.1e308], 1.3e308)):
        assert S.median_interval(v)["median"] == pytest.approx(want, rel=1e-15)
    assert math.copysign(1, S.median_interval([-0.0, 0.0])["median"]) == 1.0   # as numpy: 0.0, not -0.0
    # ordinary values: numpy's median, to the bit
    rng = np.random.default_rng(3)
    for n in (2, 4, 7, 10):
        x = rng.normal(0.2, 0.1, n)
        assert S.median_interval(x)["median"] == float(np.median(x))


# ============================================================ (e) what counts as one value per seed


def test_a_list_of_zero_dimensional_arrays_is_one_value_per_seed_as_scipy_reads_it():
    """np.asarray(x) per seed is one number each; it was refused as 'a table of shape (3,)'."""
    a = [np.asarray(0.31), np.asarray(0.35), np.asarray(0.29)]
    b = [np.asarray(0.05), np.asarray(0.02), np.asarray(0.08)]
    est = S.paired_t(a, b)
    low, high = stats.ttest_rel([0.31, 0.35, 0.29], [0.05, 0.02, 0.08]).confidence_interval()
    assert (est.low, est.high) == pytest.approx((low, high), rel=1e-12)
    refused(lambda: S.one_sample_t([np.asarray(True), np.asarray(False)]), "a bool or text is no seed's value")


def test_seeds_labelled_as_floats_in_one_arm_and_ints_in_the_other_pair_by_value_as_scipy_pairs_them():
    a = pd.Series([0.31, 0.35, 0.29], index=[20.0, 21.0, 22.0])
    b = pd.Series([0.05, 0.02, 0.08], index=[22, 20, 21])
    est = S.paired_t(a, b)
    low, high = stats.ttest_rel([0.31, 0.35, 0.29], [0.02, 0.08, 0.05]).confidence_interval()
    assert (est.low, est.high) == pytest.approx((low, high), rel=1e-12)


def test_a_seed_label_left_blank_in_each_arm_is_refused_not_paired_as_one_seed():
    """Seeds read from files with a blank seed cell: arm A's blank is seed 21's run, arm B's seed
    23's; pandas paired the two blanks as one seed (21 with 23) and named no seed dropped."""
    a = pd.Series([0.31, 0.35, 0.29, 0.33], index=[20, np.nan, 22, 23])
    b = pd.Series([0.05, 0.02, 0.08, 0.04], index=[20, 21, 22, np.nan])
    refused(lambda: S.paired_t(a, b), "seed label is missing", "candidate")
    refused(lambda: S.seeds_without_a_number(b, b), "seed label is missing")
    whole = S.paired_t(a.set_axis([20, 21, 22, 23]), b.set_axis([20, 21, 22, 23]))
    low, high = stats.ttest_rel(a.to_numpy(), b.to_numpy()).confidence_interval()
    assert (whole.low, whole.high) == pytest.approx((low, high), rel=1e-12)


def test_the_paired_t_of_arms_in_the_thousands_differing_in_the_third_decimal_is_scipys():
    a = [1000.001, 2000.003, 3000.002, 4000.0045]
    b = [1000.0, 2000.0, 3000.0, 4000.0]
    est = S.paired_t(a, b)
    low, high = stats.ttest_rel(a, b).confidence_interval()
    assert (est.mean, est.low, est.high) == pytest.approx((np.mean(np.subtract(a, b)), low, high), rel=1e-9)


def test_negative_zero_differences_are_no_spread_on_every_path():
    v = [-0.0, 0.0, -0.0]
    est = S.one_sample_t(v)
    assert S.directional_outcome(est, 0.05) == "not testable here"
    assert S.threshold_outcome(est, 0.0) == "not testable here"
    assert S.equivalence_outcome(est, 0.1) == "not testable here"
    assert Q.look_estimate(v, 0.025).problem.startswith("no seed-to-seed spread")
    assert math.isnan(S.p_above(est)) and math.isnan(S.p_below(est, 0.05))


# ============================================================ (f) the looks


def test_yardsticks_per_look_given_as_a_series_are_read_one_per_look():
    """A Series of one yardstick per look was read as one yardstick that is no number, and every
    look 'not testable here'; by hand, look 1's interval at one-sided 0.01 lies above d."""
    v = [0.3, 0.31, 0.29]
    r = Q.read_sequential(v, [3, 6], [0.01, 0.02], pd.Series([0.05, 0.06]))
    low = 0.3 - stats.t.isf(0.01, 2) * np.std(v, ddof=1) / math.sqrt(3)
    assert low > 0.05 and (r.look, r.outcome) == (1, "holds")
    assert r.estimate.low == pytest.approx(low, rel=1e-12)
    refused(lambda: Q.read_sequential(v, [3, 6], [0.01, 0.02], pd.Series([0.05, 0.06, 0.07])),
            "one yardstick, or one per look")


def test_a_look_with_seeds_missing_reads_the_last_complete_look_and_not_a_nan_beyond_it():
    """Five seeds in (the fifth without a number) for looks of 3 and 6: look 1 is read, with
    scipy's t-interval at two-sided 1 - 2 x 0.005, and is not final."""
    v = [0.1, 0.3, 0.2, 0.25, float("nan")]
    r = Q.read_sequential(v, [3, 6], [0.005, 0.02], 0.5)
    low, high = stats.t.interval(0.99, 2, loc=0.2, scale=stats.sem(v[:3]))
    assert (r.look, r.outcome, r.final) == (1, "inconclusive", False)
    assert (r.estimate.low, r.estimate.high) == pytest.approx((low, high), rel=1e-12)


def test_a_decided_look_ends_the_reading_before_a_later_seed_without_a_number():
    v = [0.3, 0.31, 0.29, float("nan"), 0.3, 0.3]
    r = Q.read_sequential(v, [3, 6], [0.01, 0.02], 0.05)
    assert (r.look, r.outcome, r.final) == (1, "holds", True)


@pytest.mark.parametrize("kind", ["obrien-fleming", "pocock"])
def test_spending_at_a_negative_zero_fraction_is_nothing_spent_as_at_zero(kind):
    """Information fractions computed as (n - n0) / N can be -0.0; O'Brien-Fleming spent 2 (40
    times alpha) there, as 1 / sqrt(-0.0) is -inf.  By hand: 0 at t = 0 and alpha at t = 1."""
    got = Q.spending([-0.0, 0.25, 1.0], 0.05, kind)
    z = stats.norm.isf(0.025)
    quarter = 2 * stats.norm.sf(z / 0.5) if kind == "obrien-fleming" else 0.05 * math.log(1 + (math.e - 1) / 4)
    assert got.tolist() == pytest.approx([0.0, quarter, 0.05], rel=1e-12)


def test_the_simulated_design_reads_every_draw_as_the_sequential_reading_does():
    """The design check's vectorised reading against read_sequential run on each draw (the
    committed looks and levels; effects at 0, below d, at d and well above)."""
    looks = [3, 6, 9, 12]
    nominal = [1.64e-6, 5.0e-4, 3.42e-3, 8.67e-3]   # the committed design's, to three digits
    rng = np.random.default_rng(5)
    for delta, sd, d in ((0.0, 0.1, 0.05), (0.05, 0.1, 0.05), (0.2, 0.1, 0.05), (0.03, 0.01, 0.05)):
        x = rng.normal(delta, sd, (150, 12))
        outcome, used = Q._drawn_outcomes(x, looks, nominal, d)
        for row, out, n in zip(x, outcome, used):
            r = Q.read_sequential(row, looks, nominal, d)
            assert (r.outcome, r.looks[r.look - 1]) == (out, n)


def test_the_fixed_sequence_behind_a_pending_member_stops_after_a_final_undecided_one_by_hand():
    from types import SimpleNamespace as R

    from companion.judge.training_claims import fixed_sequence

    readings = {"a": R(outcome="inconclusive", final=False), "b": R(outcome="inconclusive", final=True),
                "c": R(outcome="holds", final=True)}
    out = fixed_sequence(readings, ["a", "b", "c"])
    assert out == {"a": "inconclusive", "b": "inconclusive",
                   "c": "inconclusive (fixed sequence stops at b at the latest; a is still read)"}


# ============================================================ (g) the gate, a training test of one seed


def test_a_gate_without_a_half_way_effect_says_none_was_formed_not_only_unstable():
    s = lambda v: pd.Series(v, index=[20, 21, 22], dtype=float)  # noqa: E731
    est = S.paired_t([0.3, 0.32, 0.31], [0.0, 0.01, 0.02])
    g = gate({ENC: s([4.0] * 3), DEC: s([4.0] * 3)}, {ENC: 6.0, DEC: 6.0}, {ENC: s([0.0] * 3), DEC: s([0.0] * 3)},
             None, est, None, 0.05, CFG)
    assert not g["passes"] and g["reason"] == "not stable between horizons"
    assert "no paired effect half-way" in g["why"] and "\n" not in g["why"]


def test_a_training_test_of_one_seed_is_not_testable_with_no_power_and_no_deciding_p():
    res = apply_rule_to_pair("training_symmetry", TRAINING_RULE, "b", _pair([0.3], [0.1], [20]),
                             {"sesoi": 0.05, "starts": []})
    assert res["outcome"] == "not testable here" and res["estimate"].mean == pytest.approx(0.2)
    assert math.isnan(res["p_decides"]) and all(math.isnan(v) for v in res["power"].values())


# ============================================================ (h) the survey's rank test


def test_the_survey_rank_test_reads_minus_zero_beside_zero_as_a_tie_as_the_exact_law_does():
    """Every split of the seven pooled values into four 'encoders': the share with a rank sum
    at least the observed one (mid-ranks, -0.0 and 0.0 tied) is the p-value."""
    from companion.judge.empirical import survey_test

    enc, dec = [0.0, 0.3, 0.4, 0.5], [-0.0, 0.1, 0.2]
    pooled = enc + dec
    ranks = stats.rankdata(pooled)
    obs = ranks[:4].sum()
    sums = [sum(ranks[list(c)]) for c in combinations(range(7), 4)]
    want = np.mean([s >= obs - 1e-9 for s in sums])
    t = survey_test(dict(sym_enc=enc, sym_dec=dec, dir_enc=[0.3, 0.4, 0.5], dir_dec=[0.1, 0.2]), rules=_survey_rules())
    assert t.iloc[0]["p_holds"] == pytest.approx(want, rel=1e-12)
    assert t.iloc[0]["share_ordered"] == pytest.approx((9 + 0.5) / 12)   # 3 + 3 + 3 above, and 0.0 tied with -0.0


def _survey_rules():
    return {"version": 2, "framework": {"level": 0.95}, "claims": {"survey_encoder_decoder": {"level": 0.95}}}


@pytest.mark.parametrize("bad", ["0.52", None])
def test_a_survey_median_that_is_text_or_none_is_refused_in_one_line_naming_it(bad):
    from companion.judge.empirical import survey_test

    c = dict(sym_enc=[bad, 0.6, 0.7], sym_dec=[0.1, 0.2], dir_enc=[0.3, 0.4, 0.5], dir_dec=[0.1, 0.2])
    refused(lambda: survey_test(c, rules=_survey_rules()), repr(bad), "sym_enc", kind=CompanionError)


# ============================================================ (i) the premises' thresholds as worded


def test_the_beta_premises_verdict_states_the_rules_threshold_not_one_rounded_to_a_decimal(monkeypatch):
    """A threshold of 0.75 read as 'premise needs > 0.8' beside an interval above 0.75 that holds."""
    from companion.judge import premise_claims as pc
    from companion.rules import rulebook

    rules = _rule_at(RULES, "thm_s1_14", threshold=0.75)
    monkeypatch.setattr(rulebook, "load_rules", lambda *a, **k: rules)
    bi = pd.DataFrame({"step": [0, 10], "symmetry": [0.1, 0.2], "correlation": [0.79, 0.79]})
    monkeypatch.setattr(pc, "premise_runs", lambda size=None: ({"d": 32, "steps": 10}, {}))
    monkeypatch.setattr(pc, "premise_seed_runs", lambda size=None: {0: bi, 1: bi, 2: bi})
    monkeypatch.setattr(pc, "_beta_correlations", lambda size=None: [0.78, 0.80, 0.79])
    v = pc.thm_s1_14()
    est = S.one_sample_t([0.78, 0.80, 0.79])
    assert est.low > 0.75 and v.status == "holds"
    assert "premise needs > 0.75)" in v.measured


def test_the_share_premises_verdict_states_the_rules_threshold_not_a_fixed_one_half(monkeypatch):
    from companion.judge import premise_claims as pc
    from companion.rules import rulebook

    rules = _rule_at(RULES, "thm_s1_12", threshold=0.6)
    monkeypatch.setattr(rulebook, "load_rules", lambda *a, **k: rules)
    shares = {k: {"share": 0.7, "bagged": 0.7, "low": 0.65, "high": 0.75, "p_above_half": 0.001,
                  "p_below_half": 0.999} for k in ("document-aligned", "packed")}
    monkeypatch.setattr(pc, "premise_shares", lambda: shares)
    v = pc.thm_s1_12()
    assert v.status == "holds" and "premise needs more than 0.6 " in v.measured
    assert "more than 0.5" not in v.measured


# ============================================================ (j) the looks' numbers as worded


def _verdict_row(nominal, p_true_decided, refuted_at_d):
    """One claim's row of the training verdicts, from a reading at look 1 (three seeds) and a design table."""
    from companion.judge.training_claims import training_verdicts

    est = Q.look_estimate([0.1, 0.3, 0.2], nominal)
    reading = Q.Reading(1, (3, 6), est, Q.look_outcome(est, 0.05), "")
    rule = {"claim": "Table 1: probe", "body_rule": {"label": "probe body", "seeds": list(range(6))}, "family": "f",
            "d": 0.05, "pilot": {"estimate_when_fixed": 0.1, "planning_sd_when_fixed": 0.05}}
    design = pd.DataFrame({"p_true_decided": [0.5, 0.6, p_true_decided], "refuted": [0.9, refuted_at_d, 0.0]},
                          index=["0", "d", "pilot"])
    claims = {"table_1": {"rule": rule, "reading": reading, "detectable": (np.nan,) * 3, "design": design,
                          "seeds_in": [0, 1, 2], "missing": [], "secondary": {}, "gate": None}}
    rules = {"framework": {"family": {"order": ["table_1"], "method": "split"}}}
    return training_verdicts(rules, claims).iloc[0]


def test_a_first_looks_level_is_written_below_100_percent_as_its_interval_has_ends():
    """The committed first look's one-sided level is 1.64e-6: its interval is a 99.9997% one,
    which read 'nominal 100.00%'; the later looks keep two decimals (98.27% by hand)."""
    import re

    for nominal, digits in ((1.64e-6, None), (0.00867, "98.27%")):
        text = _verdict_row(nominal, 0.8, 0.01)["effect"]
        shown = re.search(r"nominal ([0-9.]+)% at this look", text).group(1)
        assert float(shown) < 100
        assert abs(float(shown) - 100 * (1 - 2 * nominal)) <= 0.5 * 10 ** -len(shown.split(".")[1])
        if digits:
            assert f"nominal {digits} at this look" in text


def test_a_planned_chance_of_0_9999_is_not_written_as_a_certainty_of_1_00():
    row = _verdict_row(0.00867, 0.9999, 0.0004)["power (planned)"]
    assert "= 0.9999 at the planning sd" in row and "P(refuted | d) = 0.0004" in row
    row = _verdict_row(0.00867, 0.7801, 0.0108)["power (planned)"]
    assert "= 0.78 at the planning sd" in row and "P(refuted | d) = 0.011" in row
    from companion.judge.empirical_claims import power_text

    # at a level of 0.999 the chance of 'refuted' at no effect can be 0.0004: not '0.00'
    assert power_text({"n": 3, "detect_holds": 0.2, "p_refuted_at_0": 0.0004}).startswith(
        "P(refuted | no effect) = 0.0004; ")
