"""Sentences written from numbers and the book's checks, tried with numbers on a boundary,
counts that are parts larger than their whole, words of one and of none, times rounded onto
their budget, and tables and builds laid out as real tools lay them out; each expected text
is worked by hand from the input."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest

_NAN = float("nan")


def s():
    import companion.judge.sentences as sentences

    return sentences


# ------------------------------------------------------------------- directions read from a sign
@pytest.mark.parametrize("exponent", [0.0, -0.0])
def test_a_zero_exponent_of_width_is_neither_sooner_nor_later(exponent):
    text = s().sooner_or_later(exponent)
    assert text not in ("sooner", "later") and "neither sooner nor later" in text
    # a sign decides where there is one
    assert s().sooner_or_later(-0.1) == "sooner" and s().sooner_or_later(0.1) == "later"


@pytest.mark.parametrize("below,words", [(-0.05, "0.05 above the unigram reference"),
                                         (0.0, "at the unigram reference"),
                                         (0.2, "0.20 below the unigram reference")])
def test_a_paper_rate_run_above_the_unigram_reference_is_not_said_to_end_below_it(below, words):
    text = s().paper_rate_runs(3.9, below, 3.7, 0.3, 0.2, 3, "x")
    assert f"({words})" in text and "-0.05" not in text


def test_a_decoder_directionality_that_rounds_to_zero_keeps_its_sign_and_zero_is_no_dominance():
    # +0.004 is row-dominant and must read so with its digits, never '(+0.00)'
    assert s().variants_held_back([("v", 0.004, 0.1, 1.0)], 10) == "v (its decoder ends row-dominant (+0.004))"
    # exactly 0 is neither row- nor column-dominant
    text = s().variants_held_back([("v", 0.0, 0.1, 1.0)], 10)
    assert "row-dominant (" not in text and "neither row- nor column-dominant" in text
    assert s().variants_held_back([("v", -0.1, -0.2, 1.0)], 10) == "v (its decoder is not the more column-dominant)"


@pytest.mark.parametrize("value,shown", [(True, "True"), (False, "False"), (0.1234567, "0.1234567"),
                                         (1234567, "1234567"), (3e-4, "0.0003"), (64, "64")])
def test_a_regime_setting_is_worded_with_the_value_it_was_set_to(value, shown):
    assert s().regime_setting(("f", value)) == f"f = {shown}"


def test_a_peak_below_the_end_is_refused_not_called_the_highest():
    with pytest.raises(ValueError, match="peak") as err:
        s().symmetry_peak(500, 0.2, 2000, 0.3)
    assert "\n" not in str(err.value)
    assert s().symmetry_peak(500, 0.3, 2000, 0.3).startswith("The encoders' mean symmetry is highest at step 500")


# ------------------------------------------------------------------- intervals and what they hold
def test_an_estimate_at_the_centre_of_its_percentile_interval_is_not_far_from_symmetric():
    from companion.judge.sentences_survey import percentile_edge

    assert percentile_edge(0.5, 0.0, 1.0) == "is roughly symmetric about the estimate"
    assert percentile_edge(0.02, 0.0, 1.0) == "has the estimate at its own lower edge"
    assert percentile_edge(0.97, 0.0, 1.0) == "has the estimate at its own upper edge"
    assert percentile_edge(0.25, 0.0, 1.0) == "is far from symmetric about the estimate"


@pytest.mark.parametrize("estimate,where", [(-0.2, "above"), (1.3, "below")])
def test_an_estimate_outside_its_percentile_interval_is_not_said_to_sit_at_its_edge(estimate, where):
    from companion.judge.sentences_survey import percentile_edge

    text = percentile_edge(estimate, 0.0, 1.0)
    assert "edge" not in text and text == f"lies wholly {where} the estimate"


def test_an_interval_given_high_end_first_is_refused_by_every_wording():
    from companion.base.phrasing import interval

    with pytest.raises(ValueError, match="lower end"):
        interval(0.3, -0.1, n=3)
    table = pd.DataFrame({"body_key": ["b"], "comparator": ["decoder"], "n": [3], "estimate": [0.1],
                          "low": [0.3], "high": [-0.1], "seeds": ["1,2,3"], "outcome": ["holds"]})
    with pytest.raises(ValueError, match="lower end"):
        s().paired_test(table, "b", bodies={"b": {}})
    # equal ends are an interval of no width, still worded
    assert interval(0.1, 0.1, n=3) == "95% t-interval +0.100 to +0.100, 3 seeds"


def test_an_interval_of_no_width_at_zero_excludes_both_yardsticks_and_leaves_open_no_effect():
    assert s().interval_reading(0.0, 0.0, 0.05) == ("its interval, +0.000 to +0.000, excludes a gain of 0.050 or "
                                                    "more and a loss of 0.050 or more; it leaves open no effect at all")


def test_a_mirror_yardstick_that_is_not_positive_is_refused():
    with pytest.raises(ValueError, match="smallest effect of interest") as err:
        s().swap_mirror(0.02, -0.01, 3, False, "x")
    assert "\n" not in str(err.value)
    assert "smaller than its smallest effect of interest, 0.0500" in s().swap_mirror(0.02, 0.05, 3, False, "x")


# ------------------------------------------------------------------- counts: parts, wholes, ones
def _body(**changes):
    fields = dict(n_encoders=3, n_decoders=3, enc_symmetry=0.3, dec_symmetry=0.2, enc_directionality=0.01,
                  dec_directionality=-0.02, n_pairs=3, n_enc_more_symmetric=2, n_dec_more_directional=3,
                  test_symmetry="t1", test_symmetry_authors="t2", test_directionality="t3", n_reversed=0,
                  n_gaps=3, band_symmetry=0.0004, peak="Peak.", n_late_top=2, n_top=3)
    return s().EncoderDecoderBody(**{**fields, **changes})


@pytest.mark.parametrize("call", [
    lambda: s().encoder_decoder_body(_body(n_enc_more_symmetric=5)),
    lambda: s().encoder_decoder_body(_body(n_dec_more_directional=4)),
    lambda: s().encoder_decoder_body(_body(n_reversed=4)),
    lambda: s().encoder_decoder_body(_body(n_late_top=4)),
    lambda: s().algebra_holds(5, 3, False)])
def test_a_part_counted_larger_than_its_whole_is_refused(call):
    with pytest.raises(ValueError, match="more than") as err:
        call()
    assert "\n" not in str(err.value)
    assert "in 2 of 3 seed pairs" in s().encoder_decoder_body(_body())


def test_seeds_in_written_as_more_than_their_total_are_refused():
    with pytest.raises(ValueError, match="13 of 12"):
        s().look_reading("13 of 12", "look 1 of 3 (6 seeds)")
    with pytest.raises(ValueError, match="13 of 12"):
        s().training_summary([("Fig. 3a", "holds", "13 of 12", "none yet")])
    assert s().look_reading("12 of 12", "look 3 of 3 (12 seeds)") == "12 of 12 seeds in, read at look 3 of 3 (12 seeds)"


@pytest.mark.parametrize("call,want", [
    (lambda: s().status_counts(1, {"holds": 1}), "Of the 1 claim, 1 holds as printed"),
    (lambda: s().training_bottom_line([("Fig. 3a", "refuted")], 1),
     "In training, Fig. 3a is refuted; 1 more is not testable on the runs made here (its verdict names why)."),
    (lambda: s().algebra_holds(1, 1, False), "1 of the 1 algebraic statement of Section 2 and S1.3 holds"),
    (lambda: s().algebra_holds(1, 5, False), "1 of the 5 algebraic statements of Section 2 and S1.3 holds"),
    (lambda: s().secondary_update_test(0.1, 0.0, 0.2, 3, 1, 0.04),
     "+0.100 (95% t-interval +0.000 to +0.200, 3 seeds; the one secondary test, Holm-adjusted one-sided p of a "
     "reversal 0.04)"),
    (lambda: _family_sentence(1, stands="yes"), "Of the 1 test in the family, 1 reached a decided outcome at 95%, "
                                                "and 1 of those stands at the family's share of 0.025 a side."),
    (lambda: _cores_column(1), "gpu size, CPU, 1 core"),
])
def test_a_count_of_one_takes_the_singular_in_every_sentence_that_counts(call, want):
    assert call() == want


def _family_sentence(n, stands="no", p=0.01):
    from companion.judge.claims import family_sentence

    fam = pd.DataFrame({"claim": [f"c{i} (x)" for i in range(n)], "outcome": ["holds"] * n, "p_decides": [p] * n,
                        "level (one-sided)": [0.025] * n, "stands": [stands] * n})
    return family_sentence(fam)


def _cores_column(cores):
    from companion.book.budgets.chapter_times import times_table

    t = pd.DataFrame([{"chapter": "measuring", "size": "gpu", "device": "cpu", "cpu_cores": cores,
                       "seconds": 30.0, "outcome": "finished", "note": "", "date": "2026-01-01"}])
    (column,) = times_table(t).columns
    return column


@pytest.mark.parametrize("call", [
    lambda: s().training_bottom_line([("Fig. 3a", "refuted")], 2.5),
    lambda: s().training_bottom_line([("Fig. 3a", "refuted")], _NAN),
    lambda: s().swap_mirror(0.02, 0.01, 2.5, False, "x"),
    lambda: s().horizon_flips([("Fig. 3a", "decoder", 0.1, -0.1, 0.05)], 500.5),
    lambda: s().spread_uncertainty({2.5: (0.5, 2.0)}),
    lambda: s().spread_uncertainty({1: (0.5, 2.0)}),   # one seed has no spread
])
def test_a_count_that_is_no_whole_number_of_what_it_counts_is_refused(call):
    with pytest.raises(ValueError, match="whole number|at least 2") as err:
        call()
    assert "\n" not in str(err.value)


def test_a_deciding_p_value_that_is_missing_reads_missing_not_nan():
    text = _family_sentence(2, p=_NAN)
    assert "nan" not in text and "deciding p missing" in text


def test_a_pair_started_minutes_apart_is_not_said_to_start_zero_hours_apart():
    table = pd.DataFrame({"body": ["mix", "mix"], "seed": [30, 30], "device": ["CPU", "CPU"],
                          "machines": ["Xeon A", "Xeon A"],
                          "started": ["2026-01-01T00:00:00Z", "2026-01-01T00:02:24Z"],   # 2.4 min = 0.04 h
                          "after rules (h)": [1.0, 1.04]})
    text = s().training_runs_said(table)
    assert "up to 0.04 h apart" in text and "0.0 h apart" not in text


def test_a_negative_cpu_time_is_refused_not_worded():
    with pytest.raises(ValueError, match="minutes") as err:
        s().minutes_by_mode({"decoder": 12.0, "encoder": -3.0})
    assert "\n" not in str(err.value)
    assert s().minutes_by_mode({"decoder": 0.0}) == "0 minutes (decoder)"


# ------------------------------------------------------------------- chapter budgets
H100 = "NVIDIA H100 80GB HBM3"
RATIOS = {"flops": 15.2, "memory": 10.4, "host_bound": 8.0, "io": 1.0}


def _estimate(seconds, cost="io", outcome="finished"):
    from companion.book.budgets import colab_budget as cb
    from companion.book.budgets.chapter_times import COLUMNS

    times = pd.DataFrame([{"chapter": "a", "size": "gpu", "device": H100, "cpu_cores": 16, "seconds": seconds,
                           "outcome": outcome, "note": "", "date": "2026-11-25"}], columns=COLUMNS)
    return cb.colab_estimates(times, costs={"a": cost}, ratios=RATIOS, chapters=["a"], since={},
                              live={}).iloc[0]


def test_the_budget_flags_name_the_budgets_the_limits_file_sets(monkeypatch):
    from companion.book.budgets import colab_budget as cb

    monkeypatch.setattr(cb, "H100_BUDGET_S", 900.0)
    monkeypatch.setattr(cb, "T4_BUDGET_S", 2700.0)
    row = _estimate(950.0, cost="flops")   # 950 s on the H100, 14,440 s on a T4
    assert row["flags"] == "H100 over 15 min; T4 over 45 min"
    monkeypatch.setattr(cb, "H100_BUDGET_S", 630.0)   # not a whole number of minutes: in seconds
    assert _estimate(650.0)["flags"] == "H100 over 630 s"


@pytest.mark.parametrize("seconds,h100,t4", [(600.3, "600.3", "600"), (599.6, "599.6", "600"),
                                             (600.0, "600", "600"), (118.43, "118", "1,800.1")])
def test_a_time_is_never_rounded_onto_or_across_its_budget(seconds, h100, t4):
    row = _estimate(seconds, cost="flops" if seconds < 200 else "io")
    assert (row["h100"], row["t4"]) == (h100, t4)
    # the flags agree with the digits shown
    assert ("H100 over 10 min" in row["flags"]) == (seconds > 600)


# ------------------------------------------------------------------- the status check
_NAMES = {"Fig. 3a": "a", "Fig. 3b": "b"}


def test_a_status_cell_spanning_rows_is_read_in_every_row_it_spans():
    from companion.book.checks.status_check import table_statuses

    html = ("<table><tr><th>Claim</th><th>Status</th><th>Chapter</th></tr>"
            "<tr><td>Fig. 3a</td><td rowspan='2'>holds</td><td>one</td></tr>"
            "<tr><td>Fig. 3b</td><td>two</td></tr></table>")
    assert [(x.key, x.status) for x in table_statuses(html, _NAMES)] == [("a", "holds"), ("b", "holds")]
    # pandas writes a MultiIndex's claim once, spanning its rows: the second row's status is read too
    df = pd.DataFrame({"Status": ["holds", "refuted"]},
                      index=pd.MultiIndex.from_tuples([("Fig. 3a", "wiki"), ("Fig. 3a", "mix")],
                                                      names=["Claim", "Body"]))
    assert [(x.key, x.status) for x in table_statuses(df.to_html(), _NAMES)] == [("a", "holds"), ("a", "refuted")]


# ------------------------------------------------------------------- the outcome snapshot
@pytest.mark.parametrize("make", [False, True])
def test_a_snapshot_of_a_build_with_no_glue_store_is_refused_not_empty(tmp_path, make):
    from companion.book.checks.outcome_snapshot import glued_values

    build = tmp_path / "_biuld"
    if make:
        build.mkdir()
    with pytest.raises(SystemExit, match="--no-glue") as err:
        glued_values(build)
    assert str(build) in str(err.value) and "\n" not in str(err.value)


def test_two_glue_stores_of_one_name_are_both_kept_in_the_snapshot(tmp_path):
    from companion.book.checks.outcome_snapshot import glued_values

    for folder, value in (("site", "1"), ("student", "2")):
        (tmp_path / folder / "jupyter_execute").mkdir(parents=True)
        (tmp_path / folder / "jupyter_execute" / "intro.glue.json").write_text(
            json.dumps({"n": {"data": {"text/plain": value}}}))
    (tmp_path / "site" / "jupyter_execute" / "survey.glue.json").write_text(
        json.dumps({"k": {"data": {"text/plain": "3"}}}))
    got = glued_values(tmp_path)
    assert sorted(got.values()) == ["1", "2", "3"]
    assert got["survey:k"] == "3"   # a store whose name is its own keeps the plain key


# ------------------------------------------------------------------- the rules' changes
def test_a_rules_change_past_the_first_ninety_characters_is_shown():
    from companion.book.site.changes import rules_changes

    # a field as the rules file writes it: its number after a long note, past the first 90 characters
    rule = {"test": "paired t", "alpha": 0.05,
            "note": "the smallest effect of interest is the seed-to-seed spread of the pilot's final layer-mean score"}
    old = {"claims": {"c": {"rule": {**rule, "sesoi": 0.0183}}}}
    new = {"claims": {"c": {"rule": {**rule, "sesoi": 0.05}}}}
    (field,) = rules_changes(old, new)["claims"][0]["fields"]
    assert field["old"] != field["new"]
    assert '"sesoi": 0.0183' in field["old"] and '"sesoi": 0.05' in field["new"]
    assert len(field["old"]) <= 92 and len(field["new"]) <= 92


# ------------------------------------------------------------------- the figure check
def test_a_cell_whose_figure_is_shown_as_a_jpeg_reaches_the_page(tmp_path):
    from companion.book.checks.figure_check import cells_without_image

    nb = tmp_path / "a.ipynb"
    nb.write_text(json.dumps({"cells": [{"cell_type": "code", "source": "fig, ax = plt.subplots()\nfig",
                                         "outputs": [{"data": {"image/jpeg": "/9j/4AAQ"}}]}]}))
    assert cells_without_image(nb) == []


# ------------------------------------------------------------------- the accessibility filter
def test_a_minor_node_of_a_serious_rule_is_not_failed_and_a_node_without_impact_takes_its_rules():
    from companion.book.checks.a11y import failing_violations

    result = {"violations": [{"id": "color-contrast", "impact": "serious",
                              "nodes": [{"impact": "minor", "target": ["p"]}, {"target": ["a"]}]}]}
    (kept,) = failing_violations(result)
    assert kept["nodes"] == [{"target": ["a"]}]
    assert math.isclose(len(failing_violations(result, "minor")[0]["nodes"]), 1)
