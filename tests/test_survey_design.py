"""The survey's registered design (companion.survey.design): which checkpoints count and as what,
and what the exact rank test can decide at the counts the registries allow, checked against
computations made here without the module (math.comb, a counting recursion, scipy on raw samples)."""

from __future__ import annotations

import math
from functools import lru_cache
from statistics import NormalDist

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from companion.base.errors import CompanionError
from companion.survey import design
from companion.survey.design import (DESIGN_CSV, EVERY_CHECKPOINT, REGISTERED, UnitRule, catalog_rows,
                                     design_check, design_table, evidence_alpha, exact_p, published_contrast,
                                     unit_members, unit_values, units)

ALPHA = 0.004545 / 2   # the evidence family's two-sided alpha, halved


@lru_cache(maxsize=None)
def ways(m: int, n: int, u: int) -> int:
    """Arrangements of m encoders and n decoders (no ties) with u encoder-above-decoder pairs."""
    if u < 0:
        return 0
    if m == 0 or n == 0:
        return int(u == 0)
    # the largest value is an encoder (above all n decoders) or a decoder (above no encoder)
    return ways(m - 1, n, u - n) + ways(m, n - 1, u)


def tail_p(m: int, n: int, u: int) -> float:
    """P(U >= u) under the null, by counting."""
    return sum(ways(m, n, v) for v in range(u, m * n + 1)) / math.comb(m + n, n)


@pytest.mark.parametrize("m,n", [(9, 3), (6, 5), (8, 7), (10, 7), (3, 3), (1, 4)])
def test_exact_p_matches_counting_and_the_smallest_p_is_one_over_the_binomial(m, n):
    greater, less = exact_p(m, n)
    assert greater[-1] == pytest.approx(1 / math.comb(m + n, n), rel=1e-12)
    assert less[0] == pytest.approx(1 / math.comb(m + n, n), rel=1e-12)
    for u in range(m * n + 1):
        assert greater[u] == pytest.approx(tail_p(m, n, u), rel=1e-10)
        assert less[u] == pytest.approx(tail_p(m, n, m * n - u), rel=1e-10)
    row = design_check(m, n, ALPHA, [0.0], draws=10, seed=1).iloc[0]
    assert row["min_p"] == 1 / math.comb(m + n, n)


def test_exact_p_equals_scipy_on_raw_samples():
    rng = np.random.default_rng(3)
    greater, less = exact_p(6, 5)
    for _ in range(50):
        x, y = rng.standard_normal(6) + rng.uniform(-2, 2), rng.standard_normal(5)
        u = int((x[:, None] > y[None, :]).sum())
        assert greater[u] == pytest.approx(stats.mannwhitneyu(x, y, alternative="greater", method="exact").pvalue)
        assert less[u] == pytest.approx(stats.mannwhitneyu(x, y, alternative="less", method="exact").pvalue)


def test_the_level_is_the_evidence_familys_one_sided_alpha():
    assert evidence_alpha() == pytest.approx(ALPHA, rel=1e-12)
    assert evidence_alpha({"framework": {"families": {"evidence": {"alpha": 0.01}}}}) == 0.005
    with pytest.raises(CompanionError, match="families.evidence"):
        evidence_alpha({"framework": {"families": {}}})


@pytest.mark.parametrize("m,n", [(6, 5), (8, 7)])
def test_at_no_contrast_holds_is_at_most_alpha_within_monte_carlo_error(m, n):
    draws = 40000
    row = design_check(m, n, ALPHA, {"none": 0.0}, draws=draws, seed=5).iloc[0]
    size = max(tail_p(m, n, u) for u in range(m * n + 1) if tail_p(m, n, u) < ALPHA)
    assert row["size"] == pytest.approx(size, rel=1e-10) and size <= ALPHA
    se = math.sqrt(ALPHA * (1 - ALPHA) / draws)
    assert row["p_holds"] <= ALPHA + 3 * se
    assert abs(row["p_holds"] - size) < 4 * se and abs(row["p_refuted"] - size) < 4 * se
    assert row["p_holds"] + row["p_refuted"] + row["p_inconclusive"] == pytest.approx(1.0)


def test_at_the_mirror_holds_is_out_of_reach_and_refuted_mirrors_holds():
    delta = published_contrast()["directionality"]["delta"]
    t = design_check(6, 5, ALPHA, {"published": delta, "mirror": -delta}, draws=20000, seed=7).set_index("shift")
    assert t.at["mirror", "p_holds"] == 0.0 and t.at["published", "p_refuted"] == 0.0
    # N(delta, 1) against N(0, 1) mirrored is the same law: the two chances agree within Monte Carlo error
    p = t.at["published", "p_holds"]
    assert abs(t.at["mirror", "p_refuted"] - p) < 5 * math.sqrt(2 * p * (1 - p) / 20000)


def test_at_nine_against_three_holds_can_never_be_reached():
    assert 1 / math.comb(12, 3) > ALPHA
    t = design_check(9, 3, ALPHA, [0.0, 1.3, 4.45, 50.0, -50.0], draws=2000, seed=2)
    assert (t["p_holds"] == 0).all() and (t["p_refuted"] == 0).all() and (t["p_inconclusive"] == 1).all()
    assert (t["size"] == 0).all()


def test_the_published_contrast_is_the_verdicts_share_and_its_normal_shift():
    from companion.judge.empirical import survey_test
    from companion.zoo.catalog import published_scores

    pub = published_scores()
    dummy = dict(sym_enc=[1.0, 2.0], sym_dec=[0.0, 0.5], dir_enc=[1.0, 2.0], dir_dec=[0.0, 0.5])
    beside = survey_test(dummy, published=pub).query("not primary").set_index("score")
    mine = published_contrast(pub)
    for score in ("symmetry", "directionality"):
        assert mine[score]["share"] == pytest.approx(beside.at[score, "share_ordered"], rel=1e-12)
        share = mine[score]["share"]
        assert mine[score]["delta"] == pytest.approx(math.sqrt(2) * NormalDist().inv_cdf(share), rel=1e-9)
        # the shift reproduces the share: P(N(delta, 1) > N(0, 1)) = Phi(delta / sqrt 2)
        assert NormalDist().cdf(mine[score]["delta"] / math.sqrt(2)) == pytest.approx(share, rel=1e-9)


def test_the_committed_table_equals_a_recomputation():
    committed = pd.read_csv(DESIGN_CSV)
    again = design_table(draws=int(committed["draws"].iloc[0]), seed=int(committed["seed"].iloc[0]))
    pd.testing.assert_frame_equal(committed, again, check_exact=False, rtol=1e-12, atol=0)
    assert set(committed["shift"]) == {"none", "published", "mirror"}
    assert len(committed) == 3 * 2 * 3 and committed.groupby("count")["primary"].first().sum() == 1


def _row(name, kind, family, objective="contrastive", tokens="text", copy_of="", component=None):
    """One stack of a synthetic catalog; a model of two stacks names its component (member ``name:component``)."""
    return dict(name=name, component=component or kind, member=f"{name}:{component}" if component else name,
                kind=kind, family=family, objective=objective, tokens=tokens, copy_of=copy_of)


def test_units_counts_a_quantised_copy_once_and_the_sizes_of_a_family_once():
    rows = pd.DataFrame([
        _row("mini-l6", "encoder", "MiniLM"), _row("mini-l6-int8", "encoder", "MiniLM", copy_of="mini-l6"),
        _row("mini-l3", "encoder", "MiniLM"), _row("mpnet", "encoder", "MPNet", objective="masked"),
        _row("lm-small", "decoder", "LM", objective="next-token"),
        _row("lm-large", "decoder", "LM", objective="next-token"),
        _row("mt", "encoder", "MT", objective="translation", component="encoder"),
        _row("asr", "encoder", "ASR", objective="transcription", tokens="audio", component="encoder"),
        _row("asr", "decoder", "ASR", objective="next-token", component="decoder"),
        _row("orphan-int8", "encoder", "Orphan", copy_of="not-here"),
    ])
    family = unit_members(units(rows, REGISTERED))
    assert family == {"encoder": {"MiniLM": ["mini-l6", "mini-l3"], "MPNet": ["mpnet"], "Orphan": ["orphan-int8"]},
                      "decoder": {"LM": ["lm-small", "lm-large"], "ASR": ["asr:decoder"]}}
    each = unit_members(units(rows, EVERY_CHECKPOINT))
    assert sorted(each["encoder"]) == ["mini-l3", "mini-l6", "mpnet", "orphan-int8"]
    assert sorted(each["decoder"]) == ["asr:decoder", "lm-large", "lm-small"]
    reasons = units(rows, REGISTERED).set_index("member")["reason"]
    assert "quantised copy of mini-l6" in reasons["mini-l6-int8"]
    assert "translation" in reasons["mt:encoder"] and "audio" in reasons["asr:encoder"]
    # admitting translation-trained encoders is a rule of its own, not the registered one
    wider = unit_members(units(rows, UnitRule(encoder_objectives=("masked", "contrastive", "translation"))))
    assert "MT" in wider["encoder"]
    # a unit's value is the median of its members' medians
    vals = unit_values(units(rows, REGISTERED), {"mini-l6": 0.5, "mini-l3": 0.3, "mpnet": 0.4, "orphan-int8": 0.1,
                                                 "lm-small": 0.1, "lm-large": 0.2, "asr:decoder": 0.05})
    assert vals["encoder"]["MiniLM"] == pytest.approx(0.4) and vals["decoder"]["LM"] == pytest.approx(0.15)
    with pytest.raises(CompanionError, match="no median"):
        unit_values(units(rows, REGISTERED), {"mini-l6": 0.5})
    with pytest.raises(CompanionError, match="cannot count"):
        units(pd.DataFrame([_row("x", "undecided", "X")]), REGISTERED)


def test_the_registered_count_on_the_zoo_and_held_lists():
    t = units(catalog_rows(held=True), REGISTERED)
    groups = unit_members(t)
    assert set(groups["decoder"]) == {"Gemma", "Qwen2", "SmolLM2", "T5", "Whisper"}
    assert groups["decoder"]["Qwen2"] == ["qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b"]
    assert groups["decoder"]["Whisper"] == ["whisper-tiny.en:decoder", "whisper-base:decoder"]
    assert len(groups["encoder"]) == 6 and "all-minilm-l6-v2-int8" not in groups["encoder"]["MiniLM"]
    assert set(t.loc[t["side"] == "", "member"]) >= {"all-minilm-l6-v2-int8", "dinov2-small", "whisper-base:encoder"}
    assert tuple(map(len, unit_members(units(catalog_rows(held=True), EVERY_CHECKPOINT)).values())) == (8, 7)


def test_a_model_the_design_does_not_know_is_refused(monkeypatch):
    members = dict(design.MEMBERS)
    members.pop("gemma-3-270m")
    monkeypatch.setattr(design, "MEMBERS", members)
    with pytest.raises(CompanionError, match="gemma-3-270m"):
        catalog_rows(held=True)
