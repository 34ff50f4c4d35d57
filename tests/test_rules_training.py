"""Rules v2 applied to one paired training test, from values only: the effect is the paired
t of the differences, the gate's parts read what they say, and the judgement walks down the
layers once."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from companion.rules.training import gate, pairs_of, apply_rule_to_pair
from companion.rules.rulebook import RULES_HISTORY
from companion.rules.rulebook import load_rules, rule

ENC, DEC = ("encoder", "standard"), ("decoder", "standard")
SEEDS = [20, 21, 22, 23]


def _pair(enc, dec, loss=(4.0, 4.0), gaps=(0.01, 0.01), half=None):
    s = lambda v: pd.Series(v, index=SEEDS, dtype=float)  # noqa: E731
    return {"candidate": ENC, "comparator": "decoder", "arms": (ENC, DEC), "end": (s(enc), s(dec)),
            "half": (s(half[0]), s(half[1])) if half else None, "seeds": SEEDS, "first_band": 0.0,
            "losses": {ENC: s([loss[0]] * 4), DEC: s([loss[1]] * 4)},
            "references": {ENC: 6.0, DEC: 6.0}, "gaps": {ENC: s([gaps[0]] * 4), DEC: s([gaps[1]] * 4)},
            "half_step": 5000 if half else None}


def test_the_effect_is_the_paired_t_interval_of_the_seed_differences():
    r = rule("training_symmetry", load_rules(RULES_HISTORY[2]))
    enc, dec = [0.31, 0.35, 0.29, 0.40], [0.05, 0.02, 0.08, 0.04]
    res = apply_rule_to_pair("training_symmetry", r, r["primary"]["body"], _pair(enc, dec, half=(enc, dec)),
                    {"sesoi": 0.05, "starts": ["2026-12-01T00:00:00Z"] * 8})
    d = np.subtract(enc, dec)
    low, high = stats.t.interval(0.95, len(d) - 1, loc=d.mean(), scale=stats.sem(d))
    est = res["estimate"]
    assert est.mean == pytest.approx(d.mean()) and (est.low, est.high) == pytest.approx((low, high))
    assert res["gate"]["passes"] and res["outcome"] == "holds" and res["primary"]
    assert res["p_holds"] == pytest.approx(stats.ttest_1samp(d, 0.0, alternative="greater").pvalue)


def test_table_1_reads_the_baseline_minus_the_candidate():
    r = rule("table_1", load_rules(RULES_HISTORY[2]))
    cand, base = [5.0, 5.1, 5.05, 5.02], [5.2, 5.3, 5.25, 5.22]
    res = apply_rule_to_pair("table_1", r, r["primary"]["body"], _pair(cand, base, half=(cand, base)),
                    {"sesoi": 0.01, "starts": []})
    assert res["estimate"].mean == pytest.approx(np.mean(np.subtract(base, cand)))


@pytest.mark.parametrize("loss, gaps, half, reason", [
    ((5.5, 4.0), (0.0, 0.0), True, "not trained enough"),          # encoder only 0.5 nats below 6.0
    ((4.0, 4.0), (0.0, 0.9), True, "trained into memorisation"),   # decoder held-out 0.9 above training
    ((4.0, 4.0), (0.0, 0.0), False, "not stable between horizons"),  # no half-way effect logged
])
def test_each_part_of_the_gate_fails_for_what_it_names(loss, gaps, half, reason):
    cfg = load_rules(RULES_HISTORY[2])["framework"]["gate"]
    enc, dec = [0.3, 0.32, 0.31, 0.33], [0.0, 0.01, 0.02, 0.0]
    p = _pair(enc, dec, loss=loss, gaps=gaps, half=(enc, dec) if half else None)
    from companion.rules.statistics import paired_t

    e = paired_t(*p["end"])
    h = paired_t(*p["half"]) if half else None
    g = gate(p["losses"], p["references"], p["gaps"], p["half_step"], e, h, 0.05, cfg)
    assert not g["passes"] and g["reason"] == reason


def test_every_rule_names_pairs_of_two_different_arms():
    rules = load_rules(RULES_HISTORY[2])
    for key in ("training_symmetry", "training_directionality", "symmetric_init_structure", "table_1"):
        for cand, comp, label in pairs_of(key, rule(key, rules)):
            assert cand != comp and label in (comp[0], cand[0])


@pytest.mark.parametrize("arm", [0, 1])
def test_a_seed_without_a_finite_value_fails_the_gate_rather_than_being_dropped(arm):
    """Four seeds, one diverged: the paired t alone would decide on the other three."""
    r = rule("training_symmetry", load_rules(RULES_HISTORY[2]))
    enc, dec = [0.31, 0.35, 0.29, 0.40], [0.05, 0.02, 0.08, 0.04]
    values = [list(enc), list(dec)]
    values[arm][2] = float("nan")
    p = _pair(*values, half=(enc, dec))
    res = apply_rule_to_pair("training_symmetry", r, r["primary"]["body"], p,
                             {"sesoi": 0.05, "starts": ["2026-12-01T00:00:00Z"] * 8})
    assert res["estimate"].n == 3                        # what the t-interval alone would have used
    assert not res["gate"]["passes"] and res["gate"]["parts"]["finite"] is False
    assert res["outcome"] == "not testable here"
    assert "seed(s) 22" in res["gate"]["why"] and res["gate"]["reason"] == "a seed gave no finite value"
    # the same pair with every value finite decides (the refusal is the NaN's doing)
    clean = apply_rule_to_pair("training_symmetry", r, r["primary"]["body"], _pair(enc, dec, half=(enc, dec)),
                               {"sesoi": 0.05, "starts": ["2026-12-01T00:00:00Z"] * 8})
    assert clean["gate"]["passes"] and clean["outcome"] == "holds"


def test_a_seed_without_a_memorisation_gap_fails_the_gate_rather_than_leaving_the_mean():
    r = rule("training_symmetry", load_rules(RULES_HISTORY[2]))
    enc, dec = [0.31, 0.35, 0.29, 0.40], [0.05, 0.02, 0.08, 0.04]
    p = _pair(enc, dec, half=(enc, dec))
    p["gaps"][DEC] = p["gaps"][DEC].drop(21)                     # the decoder of seed 21 logged no gap
    res = apply_rule_to_pair("training_symmetry", r, r["primary"]["body"], p,
                             {"sesoi": 0.05, "starts": ["2026-12-01T00:00:00Z"] * 8})
    assert res["outcome"] == "not testable here" and "seed(s) 21" in res["gate"]["why"]
    assert res["gate"]["memorisation"][DEC]["passes"]           # the mean over the other seeds alone would pass


def test_a_seed_without_a_finite_half_way_value_fails_the_gate_and_is_named_first():
    r = rule("training_symmetry", load_rules(RULES_HISTORY[2]))
    enc, dec = [0.31, 0.35, 0.29, 0.40], [0.05, 0.02, 0.08, 0.04]
    half_enc = [0.30, float("nan"), 0.28, 0.39]
    p = _pair(enc, dec, loss=(5.9, 4.0), half=(half_enc, dec))      # the encoder is also not trained enough
    res = apply_rule_to_pair("training_symmetry", r, r["primary"]["body"], p,
                             {"sesoi": 0.05, "starts": ["2026-12-01T00:00:00Z"] * 8})
    assert res["half"].n == 3                                        # what the horizon part alone would read
    assert res["outcome"] == "not testable here" and "seed(s) 21" in res["gate"]["why"]
    assert res["gate"]["reason"] == "a seed gave no finite value" and not res["gate"]["parts"]["context"]
    assert "context: encoder/standard" in res["gate"]["text"]       # the other parts' measurements are kept
