"""The verdict framework: intervals cover what they say, every outcome is reachable, power
is what a simulation finds, and the rules file is complete."""

import datetime as dt

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from companion.base.errors import CompanionError
from companion.rules.rulebook import RULES_HISTORY
from companion.rules.rulebook import load_rules, rule
from companion.rules.verdicts import rule_written_after
from companion.rules.power import detectable_effect, directional_power, equivalence_power, threshold_power
from companion.rules.statistics import (OUTCOMES, deciding_p, directional_outcome, directional_outcome_first, equivalence_outcome, holm, median_interval, one_sample_t, outcome_conditions, p_above, paired_t, threshold_outcome)


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
    d = 0.1
    seen = {directional_outcome(one_sample_t(v), sesoi=d) for v in
            ([0.5, 0.6, 0.55],        # holds: the interval above the smallest effect of interest
             [0.10, 0.09, 0.11],      # holds, size open: above 0, reaches past d
             [0.021, 0.02, 0.022],    # negligible: above 0, wholly below d
             [-0.5, -0.6, -0.55],     # refuted (reversed)
             [0.5, -0.4, 0.1])}       # inconclusive
    seen.add(directional_outcome(one_sample_t([0.5, 0.6]), sesoi=d))                # too few seeds
    seen.add(directional_outcome(one_sample_t([0.5, 0.6, 0.55]), sesoi=d, gate=False))  # gate fails
    assert seen == set(OUTCOMES)


def test_no_two_outcomes_of_a_directional_claim_can_hold_at_once():
    # every interval of a grid that includes the boundaries 0 and d, and random ones: exactly
    # one condition is true (v1's 'holds' and 'refuted' were both true on 0 < lo <= hi < d)
    d = 0.1
    edges = np.array([-0.3, -0.1, -1e-9, 0.0, 1e-9, 0.05, d - 1e-9, d, d + 1e-9, 0.3])
    rng = np.random.default_rng(4)
    pairs = [(lo, hi) for lo in edges for hi in edges if lo <= hi]
    pairs += [tuple(sorted(rng.normal(0.05, 0.2, 2))) for _ in range(5000)]
    for lo, hi in pairs:
        hits = [k for k, v in outcome_conditions(lo, hi, d).items() if v]
        assert len(hits) == 1, (lo, hi, hits)
    v1_overlap = [(lo, hi) for lo, hi in pairs if lo > 0 and hi < d]
    assert v1_overlap  # where v1 said 'holds' for an effect its own yardstick called too small
    est = one_sample_t([0.021, 0.02, 0.022])
    assert directional_outcome_first(est, d) == "holds" and directional_outcome(est, d) == "negligible"


def test_a_yardstick_of_zero_or_nan_is_refused():
    est = one_sample_t([0.1, 0.2, 0.15])
    for bad in (0.0, -0.1, float("nan"), "null-band"):
        with pytest.raises(ValueError, match="smallest effect of interest"):
            directional_outcome(est, bad)


def test_threshold_and_equivalence_outcomes_are_each_reachable_and_exclusive():
    t = {threshold_outcome(one_sample_t(v), 0.7) for v in
         ([0.9, 0.92, 0.91], [0.1, 0.12, 0.11], [0.2, 0.95, 0.7], [0.9])}
    e = {equivalence_outcome(one_sample_t(v), 0.5) for v in
         ([0.01, -0.02, 0.0], [2.0, 2.1, 2.05], [0.3, 0.9, 0.6], [0.0])}
    assert t == e == {"holds", "refuted", "inconclusive", "not testable here"}


def _simulated_outcomes(delta, sd, n, d, trials, seed):
    rng = np.random.default_rng(seed)
    return [directional_outcome(one_sample_t(rng.normal(delta, sd, n)), d) for _ in range(trials)]


@pytest.mark.parametrize("n, sd, d", [(3, 0.05, 0.055), (5, 0.2, 0.16)])
def test_the_power_of_the_applied_test_is_what_a_simulation_of_seeds_finds(n, sd, d):
    pw = directional_power(n, sd, d)
    # P(refuted | no effect), against per-seed normal draws judged by the rule itself
    out0 = _simulated_outcomes(0.0, sd, n, d, 4000, 5)
    assert abs(np.mean([o == "refuted" for o in out0]) - pw["p_refuted_at_0"]) < 0.025
    # 'holds' at the detectable effect: found in 80% of simulated bodies
    out1 = _simulated_outcomes(pw["detect_holds"], sd, n, d, 4000, 6)
    assert abs(np.mean([o == "holds" for o in out1]) - 0.8) < 0.025
    assert pw["detect_holds"] > pw["detect_direction"] > 0


def test_level_and_equality_power_match_simulation():
    rng = np.random.default_rng(7)
    pw = threshold_power(3, 0.1, 0.7)
    hits = np.mean([threshold_outcome(one_sample_t(rng.normal(pw["detect_holds"], 0.1, 3)), 0.7) == "holds"
                    for _ in range(4000)])
    assert abs(hits - 0.8) < 0.025
    ep = equivalence_power(3, 0.1, 0.5)
    sims = [equivalence_outcome(one_sample_t(rng.normal(0.0, 0.1, 3)), 0.5) for _ in range(4000)]
    assert abs(np.mean([o == "holds" for o in sims]) - ep["p_holds_at_0"]) < 0.025


def test_the_deciding_p_value_is_the_one_sided_t_test_of_the_decided_outcome():
    v = [0.12, 0.08, 0.2]
    est = one_sample_t(v)
    greater = lambda x: stats.ttest_1samp(v, x, alternative="greater").pvalue  # noqa: E731
    less = lambda x: stats.ttest_1samp(v, x, alternative="less").pvalue  # noqa: E731
    assert deciding_p(est, "holds", 0.1) == pytest.approx(greater(0.1))
    assert deciding_p(est, "holds, size open", 0.1) == pytest.approx(greater(0.0))
    assert deciding_p(est, "negligible", 0.1) == pytest.approx(max(greater(0.0), less(0.1)))
    assert deciding_p(est, "refuted", 0.1) == pytest.approx(less(0.1))
    assert np.isnan(deciding_p(est, "inconclusive", 0.1))
    assert deciding_p(est, "holds", threshold=0.05) == pytest.approx(greater(0.05))
    assert deciding_p(est, "holds", band=0.5) == pytest.approx(max(greater(-0.5), less(0.5)))


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
        new_refutes += directional_outcome(paired_t(e, d), sesoi=1e-9) == "refuted"
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
    # the member with no p-value still counts in the family (m = 4) and ranks last; its own value stays NaN
    adj = holm([0.01, 0.04, 0.03, np.nan])
    assert adj[:3] == pytest.approx([0.04, 0.09, 0.09]) and np.isnan(adj[3])
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
    # censored seeds rank where the caller says: below every observed one for a speed-up never reached
    assert median_interval([np.nan, np.nan, 0.4], nan_as="low")["median"] == -np.inf


def test_the_rules_file_names_what_each_rule_judges_and_when_it_was_written():
    rules = load_rules(RULES_HISTORY[2])
    assert rules["version"] == 2
    for key in rules["claims"]:
        r = rule(key, rules)
        assert isinstance(r["fixed"], dt.datetime) and r["fixed"].tzinfo is not None and r["seen_before"].strip()
    r = rule("training_symmetry", rules)
    assert rule_written_after(r, ["2026-11-23T19:44:02Z"]) and not rule_written_after(r, ["2026-11-27T00:00:00Z"])
    # v1's bare dates count to the end of their day: a run that morning was seen
    v1 = load_rules(rules_v1_path())
    assert rule_written_after(rule("update_structure", v1), ["2026-11-25T09:00:00Z"])
    with pytest.raises(CompanionError, match="no rule for claim"):
        rule("fig_9z", rules)


def rules_v1_path():
    return RULES_HISTORY[1]


def _v2(tmp_path, claim_extra="", framework_extra=""):
    p = tmp_path / "r.yaml"
    p.write_text(
        "version: 2\n"
        "framework:\n  level: 0.95\n  gate: {context_floor_nats: 0.69, horizon_fraction: 0.5, "
        "memorisation_nats: 0.1, fixed: 2026-11-26T10:00:00+00:00, seen_before: x, derivation: y"
        + framework_extra + "}\n"
        "claims:\n  a: {claim: x, test: paired-t, fixed: 2026-11-26T10:00:00+00:00, seen_before: y"
        + claim_extra + "}\n")
    return p


def test_a_broken_rules_file_is_one_clear_error_naming_the_rule_and_field(tmp_path):
    assert load_rules(_v2(tmp_path))["claims"]["a"]["fixed"].tzinfo is not None
    cases = [
        (", sesoi: '0.05'", "sesoi '0.05' is neither a number nor a yardstick"),
        (", sesoi: 0", "'sesoi' must be a positive number"),
        (", threshold: high", "'threshold' must be a finite number"),
        (", min_seeds: 1", "'min_seeds' must be a whole number"),
    ]
    for extra, msg in cases:
        with pytest.raises(CompanionError, match=msg):
            load_rules(_v2(tmp_path, extra))
    p = _v2(tmp_path)
    p.write_text(p.read_text().replace("fixed: 2026-11-26T10:00:00+00:00, seen_before: y",
                                       "fixed: 2026-11-26 10:00:00, seen_before: y"))
    with pytest.raises(CompanionError, match="rule 'a'.*no time zone"):
        load_rules(p)
    p.write_text(p.read_text().replace("2026-11-26 10:00:00, seen_before: y", "2099-01-01T00:00:00+00:00, seen_before: y"))
    with pytest.raises(CompanionError, match="rule 'a'.*in the future"):
        load_rules(p)
    p.write_text(p.read_text().replace("2099-01-01T00:00:00+00:00, seen_before: y", "2026-11-26, seen_before: y"))
    with pytest.raises(CompanionError, match="not only a date"):
        load_rules(p)
    with pytest.raises(CompanionError, match="horizon_fraction"):
        load_rules(_v2(tmp_path, framework_extra=", horizon_fraction: 2"))
    p.write_text("- just\n- a list\n")
    with pytest.raises(CompanionError, match="must be a mapping"):
        load_rules(p)
    p.write_text("version: 2\n")
    with pytest.raises(CompanionError, match="no 'claims' mapping"):
        load_rules(p)
    p.write_text("version: 2\nclaims: {a: [1, 2]}\n")
    with pytest.raises(CompanionError, match="rule 'a'.*must be a mapping"):
        load_rules(p)


def test_an_alias_bomb_is_refused_before_it_is_expanded(tmp_path):
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 9):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i-1}"] * 10) + "]")
    lines.append("version: 2")
    lines.append("claims: {b: {claim: *a8, test: t, fixed: 2026-11-26T10:00:00+00:00, seen_before: s}}")
    p = tmp_path / "bomb.yaml"
    p.write_text("\n".join(lines) + "\n")
    with pytest.raises(CompanionError, match="expands to more than"):
        load_rules(p)


def test_a_broken_rules_file_is_a_clear_error(tmp_path):
    p = tmp_path / "r.yaml"
    p.write_text("version: 1\nclaims: {a: {claim: x, test: paired-t, fixed: 2026-11-25}}\n")
    with pytest.raises(CompanionError, match="seen_before"):
        load_rules(p)
    p.write_text("claims: [\n")
    with pytest.raises(CompanionError, match="not valid YAML"):
        load_rules(p)
    with pytest.raises(CompanionError, match="no rules file at"):
        load_rules(tmp_path / "missing.yaml")


@pytest.mark.parametrize("extra, msg", [
    (", confirmatory: {body: b, fixed: 2099-01-01T00:00:00+00:00}", r"rule 'a' \(confirmatory\).*'fixed'.*in the future"),
    (", confirmatory: {body: b, fixed: 2026-11-27}", r"rule 'a' \(confirmatory\).*not only a date"),
    (", amended_at: 2099-01-01T00:00:00+00:00", r"rule 'a'.*'amended_at'.*in the future"),
    (", amended_at: 2026-11-25T10:00:00+00:00", r"'amended_at' .* is before 'fixed'"),
])
def test_every_stamp_of_a_rule_is_dated_like_its_fixed(tmp_path, extra, msg):
    with pytest.raises(CompanionError, match=msg):
        load_rules(_v2(tmp_path, extra))
    ok = _v2(tmp_path, ", amended_at: 2026-11-27T10:00:00+00:00, confirmatory: {body: b, fixed: 2026-11-27T06:00:00+00:00}")
    r = load_rules(ok)["claims"]["a"]
    assert r["amended_at"] > r["fixed"] and r["confirmatory"]["fixed"].tzinfo is not None


@pytest.mark.parametrize("extra, msg", [
    (", amended_at: 2026-11-27T10:00:00+00:00", "an 'amended_at' needs an 'amended'"),
    (", amended: z, amended_at: 2026-11-25T10:00:00+00:00", "follows 'fixed'"),
    (", amended: z, amended_at: 2026-11-27", "not only a date"),
])
def test_an_amendment_of_the_gate_says_what_changed_and_is_dated_after_it(tmp_path, extra, msg):
    with pytest.raises(CompanionError, match=msg):
        load_rules(_v2(tmp_path, framework_extra=extra))
    gate = load_rules(_v2(tmp_path, framework_extra=", amended: z, amended_at: 2026-11-27T10:00:00+00:00"))["framework"]["gate"]
    assert gate["amended_at"] > gate["fixed"]
    assert load_rules(RULES_HISTORY[2])["framework"]["gate"]["amended"].startswith("v2.3")


def test_the_seeds_without_a_number_are_the_ones_the_paired_t_drops_among_those_both_arms_have():
    from companion.rules.statistics import paired_t, seeds_without_a_number

    a = pd.Series([0.1, np.nan, 0.3, 0.4], index=[1, 2, 3, 4])
    b = pd.Series([0.0, 0.0, np.nan, 0.1, 9.0], index=[1, 2, 3, 4, 5])   # seed 5: one arm only, not a pair
    assert seeds_without_a_number(a, b) == [2, 3]
    assert paired_t(a, b).n == 4 - len(seeds_without_a_number(a, b))
    b[3] = np.inf                                                          # an infinity is no number either
    assert seeds_without_a_number(a, b) == [2, 3]
