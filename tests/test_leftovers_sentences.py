"""Three sentences of the judge checked against texts worked by hand: a variant held back by
nothing recorded, a deciding p-value that must stay on its own side of the family's level, and
a family of one test."""

from __future__ import annotations

import numpy as np
import pytest

from companion.judge import claims


# ------------------------------------------------------------------- a variant with nothing keeping it out
def test_a_variant_that_nothing_recorded_keeps_out_says_so_in_words():
    from companion.judge.sentences import variants_held_back

    # decoder column-dominant (-0.3) and more so than its encoder (-0.1), a pair of 100 s under 600 s:
    # none of the three reasons applies
    text = variants_held_back([("width64", -0.3, -0.1, 100.0)], 600)
    assert text == "width64 (nothing recorded keeps it out)"
    assert "()" not in text
    # beside a variant that has reasons, each keeps its own
    both = variants_held_back([("lr3", 0.051, -0.2, 700.0), ("width64", -0.3, -0.1, 100.0)], 600)
    assert both == ("lr3 (its decoder ends row-dominant (+0.05); its decoder is not the more column-dominant; "
                    "a pair costs 700 CPU-seconds), width64 (nothing recorded keeps it out)")


# ------------------------------------------------------------------- a deciding p beside the family's level
from test_claims import _family  # noqa: E402  (the family table of claims._family_table, as that file writes it)


def _verdicts(monkeypatch, keys, statuses, p):
    def fake(key, status):
        def fn():
            return claims.Verdict(key, f"claim {key}", status, "measured", "size", "errata", "", kind="empirical")
        fn.__name__ = key
        return fn

    monkeypatch.delenv("COMPANION_VERDICT_CACHE", raising=False)
    monkeypatch.setattr(claims, "_CACHE", {})
    monkeypatch.setattr(claims, "VERDICTS", tuple(fake(k, s) for k, s in zip(keys, statuses)))
    monkeypatch.setattr(claims, "family_table", lambda: _family(keys, statuses, p))
    return claims.all_verdicts().set_index("key")


def test_a_deciding_p_just_above_the_level_is_not_printed_onto_it(monkeypatch):
    # 0.0025004 is above 0.0025; three significant digits would print 0.0025, the level itself
    v = _verdicts(monkeypatch, ["a"], ["holds"], [0.0025004])
    assert v.loc["a", "status"] == "inconclusive" and v.loc["a", "withheld"] == "holds"
    assert "not decided at that level (deciding p = 0.0025004)" in v.loc["a", "family"]
    assert "deciding p = 0.0025)" not in v.loc["a", "family"]


def test_a_deciding_p_just_below_the_level_is_not_printed_onto_it(monkeypatch):
    # 0.0024996 is below 0.0025: it stands, and reads below it
    v = _verdicts(monkeypatch, ["b"], ["holds"], [0.0024996])
    assert v.loc["b", "status"] == "holds"
    assert "stands (deciding p = 0.0024996)" in v.loc["b", "family"]


def test_a_deciding_p_far_from_the_level_keeps_three_digits_and_which_claims_stand_is_unchanged(monkeypatch):
    v = _verdicts(monkeypatch, ["a", "b"], ["holds", "negligible"], [0.0031234, 0.0012345])
    assert "not decided at that level (deciding p = 0.00312)" in v.loc["a", "family"]
    assert v.loc["a", "status"] == "inconclusive"
    assert "stands (deciding p = 0.00123)" in v.loc["b", "family"]
    assert v.loc["b", "status"] == "negligible"


def test_a_deciding_p_on_the_level_reads_as_the_level_and_does_not_stand(monkeypatch):
    v = _verdicts(monkeypatch, ["a"], ["holds"], [0.0025])
    assert v.loc["a", "status"] == "inconclusive"
    assert "not decided at that level (deciding p = 0.0025)" in v.loc["a", "family"]


@pytest.mark.parametrize("mark", [0.0025, 0.05 / 22, 1 / 3])
@pytest.mark.parametrize("step", [-2, -1, 1, 2])
def test_a_value_one_step_from_its_mark_is_printed_on_its_side_of_the_printed_mark(mark, step):
    from companion.base.phrasing import side_by_side

    p = mark
    for _ in range(abs(step)):
        p = float(np.nextafter(p, np.inf if step > 0 else -np.inf))
    (shown,), shown_mark = side_by_side([p], mark)
    assert (float(shown) > float(shown_mark)) == (p > mark)
    assert (float(shown) < float(shown_mark)) == (p < mark)


def test_a_level_of_many_digits_is_printed_with_one_more_where_a_p_lies_beside_it(monkeypatch):
    # the family's level 0.05 / 11 / 2 = 0.0022727...: at three digits 0.00227, which a p of 0.002272
    # (below the level: it stands) would print onto; at four, 0.002273, with the p at 0.00227 below it
    keys = ["b"]
    monkeypatch.delenv("COMPANION_VERDICT_CACHE", raising=False)
    monkeypatch.setattr(claims, "_CACHE", {})
    fn = lambda: claims.Verdict("b", "claim b", "holds", "measured", "size", "errata", "", kind="empirical")
    fn.__name__ = "b"
    monkeypatch.setattr(claims, "VERDICTS", (fn,))
    monkeypatch.setattr(claims, "family_table", lambda: _family(keys, ["holds"], [0.002272], share=0.05 / 22))
    v = claims.all_verdicts().set_index("key")
    assert v.loc["b", "status"] == "holds"
    assert v.loc["b", "family"] == "family evidence, each test at 0.002273 a side: stands (deciding p = 0.00227)"
    # far from it, the level keeps its three digits
    assert claims.family_sentence(_family(["a"], ["holds"], [0.01], share=0.05 / 22)).endswith(
        "at the family's share of 0.00227 a side; a (holds, deciding p = 0.01) does not, and reads 'inconclusive'.")


def test_the_family_sentence_prints_a_withdrawn_p_on_its_side_of_the_share():
    fam = _family(["a", "b"], ["holds", "refuted"], [0.0025004, 0.0001])
    text = claims.family_sentence(fam)
    assert "a (holds, deciding p = 0.0025004) does not, and reads 'inconclusive'" in text


# ------------------------------------------------------------------- a family of one test
def test_a_family_of_one_undecided_test_is_worded_in_the_singular():
    text = claims.family_sentence(_family(["c"], ["inconclusive"], [np.nan]))
    assert "1 tests" not in text
    assert text.startswith("The one test in the family did not reach a decided outcome")
    many = claims.family_sentence(_family(["c", "d"], ["inconclusive", "inconclusive"], [np.nan, np.nan]))
    assert many.startswith("None of the 2 tests in the family reached a decided outcome")


def test_a_p_value_just_below_the_conventional_mark_is_not_printed_at_it():
    from companion.judge.sentences import secondary_update_test

    for p, shown in ((0.0499, "0.0499"), (0.05001, "0.05001"), (0.05, "0.05"), (0.012, "0.012"), (0.2, "0.2")):
        text = secondary_update_test(0.1, 0.02, 0.2, 3, 2, p)
        assert text.endswith(f"p of a reversal {shown})"), text
        assert (float(shown) < 0.05) == (p < 0.05)


def test_a_device_that_moved_a_run_where_seeds_do_not_vary_moved_it_by_infinitely_many_spreads():
    import math

    from companion.train.studies.replicate import _ratio

    assert _ratio(0.02, 0.01) == 2.0
    assert _ratio(0.02, 0.0) == math.inf          # it was NaN: read as "not measured"
    assert math.isnan(_ratio(0.0, 0.0)) and math.isnan(_ratio(float("nan"), 0.1)) and math.isnan(_ratio(0.1, float("nan")))
