"""The verdict framework: intervals cover what they say, every outcome is reachable, power
is what a simulation finds, and the rules file is complete."""

import datetime as dt

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from companion.errors import CompanionError
from companion.verdicts import (OUTCOMES, detectable_effect, directional_outcome, equivalence_outcome,
                                holm, load_rules, median_interval, one_sample_t, p_above, paired_t,
                                rule, rule_written_after, threshold_outcome)


def test_the_paired_interval_is_the_textbook_t_interval_of_the_seed_differences():
    enc = pd.Series([0.030, 0.013, 0.015], index=[0, 1, 2])
    dec = pd.Series([0.012, 0.003, 0.026], index=[0, 1, 2])
    est = paired_t(enc, dec)
    d = (enc - dec).to_numpy()
    lo, hi = stats.t.interval(0.95, 2, loc=d.mean(), scale=stats.sem(d))
    assert est.n == 3 and est.mean == pytest.approx(d.mean())
    assert (est.low, est.high) == pytest.approx((lo, hi))
    # seeds present on one side only do not count
    assert paired_t(enc, dec.drop(2)).n == 2


def test_the_interval_covers_the_true_mean_at_its_stated_rate():
    rng = np.random.default_rng(0)
    hits = [(e.low < 0.3 < e.high) for e in (one_sample_t(rng.normal(0.3, 1.0, 3)) for _ in range(4000))]
    assert abs(np.mean(hits) - 0.95) < 0.015


def test_every_outcome_of_a_directional_claim_is_reachable():
    seen = {directional_outcome(one_sample_t(v), sesoi=0.1) for v in
            ([0.5, 0.6, 0.55], [-0.5, -0.6, -0.55], [0.02, 0.01, 0.03], [0.5, -0.4, 0.1])}
    seen.add(directional_outcome(one_sample_t([0.5, 0.6]), sesoi=0.1))          # too few seeds
    seen.add(directional_outcome(one_sample_t([0.5, 0.6, 0.55]), gate=False))    # gate fails
    assert seen == set(OUTCOMES)
    # a small but certain effect below the smallest effect of interest counts as holds
    # (the direction is shown), not as refuted
    assert directional_outcome(one_sample_t([0.021, 0.02, 0.022]), sesoi=0.1) == "holds"


def test_threshold_and_equivalence_outcomes_are_each_reachable():
    t = {threshold_outcome(one_sample_t(v), 0.7) for v in
         ([0.9, 0.92, 0.91], [0.1, 0.12, 0.11], [0.2, 0.95, 0.7], [0.9])}
    e = {equivalence_outcome(one_sample_t(v), 0.5) for v in
         ([0.01, -0.02, 0.0], [2.0, 2.1, 2.05], [0.3, 0.9, 0.6], [0.0])}
    assert t == e == set(OUTCOMES)


def test_the_old_every_pair_rule_refutes_a_true_claim_the_paired_test_does_not():
    # the simulation: a true difference of 2 seed standard deviations, three bodies of
    # 3 x 3 seeds; the old rule needs every pair ordered in every body
    rng = np.random.default_rng(1)
    old_refutes, new_refutes = 0, 0
    trials = 2000
    for _ in range(trials):
        bodies = [(rng.normal(2.0, 1.0, 3), rng.normal(0.0, 1.0, 3)) for _ in range(3)]
        old_refutes += not all((e[:, None] > d[None, :]).all() for e, d in bodies)
        e, d = bodies[0]
        new_refutes += directional_outcome(paired_t(e, d), sesoi=0.0) == "refuted"
    assert old_refutes / trials > 0.6            # refuted more often than not, though true
    assert new_refutes / trials < 0.01           # the interval's upper end below 0: rare


@pytest.mark.parametrize("n, sd", [(3, 1.0), (5, 0.02), (10, 3.0)])
def test_the_detectable_effect_is_found_with_80_percent_probability(n, sd):
    delta = detectable_effect(n, sd)
    rng = np.random.default_rng(n)
    found = np.mean([one_sample_t(rng.normal(delta, sd, n)).low > 0 for _ in range(4000)])
    assert abs(found - 0.8) < 0.025, (delta, found)
    assert np.isnan(detectable_effect(1, sd))


def test_one_sided_p_value_agrees_with_scipy():
    v = [0.32, 0.36, 0.38]
    assert p_above(one_sample_t(v)) == pytest.approx(stats.ttest_1samp(v, 0, alternative="greater").pvalue)


def test_holm_adjusts_step_down_and_keeps_order():
    adj = holm([0.01, 0.04, 0.03, np.nan])
    assert adj[:3] == pytest.approx([0.03, 0.06, 0.06]) and np.isnan(adj[3])
    rng = np.random.default_rng(2)
    p = rng.uniform(size=8)
    a = holm(p)
    assert (a >= p).all() and (np.diff(a[np.argsort(p)]) >= 0).all()


def test_the_median_interval_states_its_exact_coverage():
    # 3 seeds: min to max covers the median with probability 1 - 2/8 = 0.75, not 0.95
    mi = median_interval([0.1, 0.3, 0.2])
    assert (mi["low"], mi["median"], mi["high"]) == (0.1, 0.2, 0.3) and mi["coverage"] == pytest.approx(0.75)
    rng = np.random.default_rng(3)
    for n in (3, 9):
        cov = mean_cov = median_interval(np.zeros(n))["coverage"]
        hits = [(lambda m: m["low"] < 0 < m["high"])(median_interval(rng.standard_normal(n)))
                for _ in range(4000)]
        assert abs(np.mean(hits) - cov) < 0.025, (n, np.mean(hits), mean_cov)
    # censored seeds rank below every observed one
    assert median_interval([np.nan, np.nan, 0.4])["median"] == -np.inf


def test_the_rules_file_names_what_each_rule_judges_and_when_it_was_written():
    rules = load_rules()
    for key in ("training_symmetry", "training_directionality", "symmetric_init_structure", "table_1",
                "survey_encoder_decoder", "thm_s1_12", "cor_s1_13", "thm_s1_14"):
        r = rule(key, rules)
        assert isinstance(r["fixed"], dt.date) and r["seen_before"].strip()
    r = rule("training_symmetry", rules)
    assert rule_written_after(r, ["2026-11-23T19:44:02Z"]) and not rule_written_after(r, ["2026-11-26"])
    with pytest.raises(CompanionError, match="no rule for claim"):
        rule("fig_9z", rules)


def test_a_broken_rules_file_is_a_clear_error(tmp_path):
    p = tmp_path / "r.yaml"
    p.write_text("claims: {a: {claim: x, test: paired-t, fixed: 2026-11-25}}\n")
    with pytest.raises(CompanionError, match="seen_before"):
        load_rules(p)
    p.write_text("claims: [\n")
    with pytest.raises(CompanionError, match="not valid YAML"):
        load_rules(p)
    with pytest.raises(CompanionError, match="no verdict rules"):
        load_rules(tmp_path / "missing.yaml")
