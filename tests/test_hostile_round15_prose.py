"""Sentences written from numbers, the chapter times and the exercise checks, tried with
numbers that are missing, out of range, on a boundary or rounded to a sign or to zero they
do not have; each expected text is worked by hand from the input."""

from __future__ import annotations

import json
import math
import re
import time

import numpy as np
import pandas as pd
import pytest

from companion.base.errors import CompanionError

_NAN = float("nan")
# a number printed in a sentence: its digits, never 'nan' or 'inf'
_NOT_A_NUMBER = re.compile(r"\b(nan|inf)\b", re.IGNORECASE)


def s():
    import companion.judge.sentences as sentences

    return sentences


# --------------------------------------------------------------------- counts and their words
@pytest.mark.parametrize("n,want", [(1.0, "1 seed"), (np.int64(3), "3 seeds"), ("6 of 12", "6 of 12 seeds")])
def test_a_count_written_as_a_whole_float_reads_as_that_whole_number(n, want):
    assert s().count_of(n, "seed") == want


@pytest.mark.parametrize("n", [_NAN, 2.5, -1, True])
def test_a_count_that_is_no_whole_number_is_refused_not_worded(n):
    with pytest.raises(ValueError, match="whole number"):
        s().count_of(n, "seed")


def test_status_counts_summing_to_more_than_the_claims_are_refused():
    with pytest.raises(CompanionError, match="3 claims"):
        s().status_counts(3, {"holds": 2, "refuted": 2})
    # a count of fewer claims than there are (the rest unnamed) still reads
    assert s().status_counts(3, {"holds": 2}) == "Of the 3 claims, 2 hold as printed"


def test_a_negative_status_count_is_refused():
    with pytest.raises(ValueError, match="whole number"):
        s().status_counts(3, {"holds": -1, "refuted": 4})


@pytest.mark.parametrize("share", [1.5, -0.2])
def test_a_share_outside_zero_to_one_is_no_percentage(share):
    from companion.judge.sentences_words import percent

    with pytest.raises(CompanionError, match="share"):
        percent(share)
    assert percent(0.996) == "99.6%" and percent(1.0) == "100%"


def test_a_small_yardstick_is_not_printed_as_zero_in_what_an_interval_rules_out():
    text = s().interval_reading(-0.1, 0.2, 0.0004)
    assert "0.000 or more" not in text
    assert "a gain of 0.0004 or more" in text and "a loss of 0.0004 or more" in text


def test_a_value_equal_to_its_bound_is_neither_less_nor_more():
    assert s().less_or_more_than(0.3, 0.3) == "as large as"
    assert s().less_or_more_than(0.2, 0.3) == "less than" and s().less_or_more_than(0.4, 0.3) == "more than"


# ----------------------------------------------------------------------- the training sentences
def test_the_distance_below_the_unigram_reference_is_never_rounded_up():
    # 3.6 standard errors is at least 3, not at least 4 (the nearest whole number overstates it)
    assert "at least 3 standard errors" in s().below_unigram(3.6)


@pytest.mark.parametrize("m,least", [(3.0, "at least 3 standard errors"), (1.2, "at least 1 standard error "),
                                     (0.6, "the closest by 0.60 of a standard error")])
def test_a_distance_below_the_unigram_reference_agrees_in_number_and_keeps_a_fraction(m, least):
    assert least in s().below_unigram(m)


@pytest.mark.parametrize("m", [-0.5, 0.0])
def test_a_run_at_or_above_the_unigram_reference_is_not_said_to_end_below_it(m):
    text = s().below_unigram(m)
    assert not text.startswith("Every") and "Not every" in text and "-0" not in text


def test_minutes_by_mode_keep_a_fraction_of_a_minute_and_say_a_missing_time():
    text = s().minutes_by_mode({"decoder": 1.0, "encoder": _NAN, "mlp": 0.3})
    assert text == "1 minute (decoder), time missing (encoder) and 0.3 minutes (mlp)"


@pytest.mark.parametrize("n", [2.7, _NAN, -1])
def test_paired_seeds_that_are_no_whole_number_are_refused(n):
    with pytest.raises(ValueError, match="seeds"):
        s().paper_rate_runs(3.1, 0.2, 3.2, 0.3, 0.2, n, "x")


def test_one_paired_seed_is_one_seed():
    assert "(1 paired seed)" in s().paper_rate_runs(3.1, 0.2, 3.2, 0.3, 0.2, 1, "x")


def test_a_one_seed_result_keeps_the_sign_of_a_tiny_estimate():
    assert s().paired_result(-0.0004, _NAN, _NAN, 1, "holds") == "-0.0004 (1 seed): holds"


def test_a_paired_test_with_no_estimate_reads_missing_not_nan():
    table = pd.DataFrame({"body_key": ["b"], "comparator": ["decoder"], "n": [3], "estimate": [_NAN],
                          "low": [-0.1], "high": [0.2], "seeds": ["1,2,3"], "outcome": ["inconclusive"]})
    text = s().paired_test(table, "b", bodies={"b": {}})
    assert not _NOT_A_NUMBER.search(text) and text.startswith("estimate missing")


def test_an_encoder_decoder_body_with_a_missing_mean_reads_missing_not_nan():
    b = s().EncoderDecoderBody(3, 3, _NAN, 0.2, 0.01, -0.02, 3, 2, 3, "t1", "t2", "t3", 0, 3, 0.0004, "Peak.", 2, 3)
    text = s().encoder_decoder_body(b)
    assert not _NOT_A_NUMBER.search(text)
    assert "mean symmetry missing against 0.200" in text and "(0.0004)" in text


def test_a_regime_setting_with_no_value_reads_missing_not_nan():
    assert s().regime_setting(("lr", _NAN)) == "lr = missing"
    assert s().regime_setting(("lr", 0.003)) == "lr = 0.003"


def test_a_small_yardstick_of_a_horizon_flip_is_not_printed_as_zero():
    text = s().horizon_flips([("Fig. 3a", "decoder", 0.0001, -0.0002, 0.0004)], 1000)
    assert text.endswith("both smaller than d = 0.0004")


def test_a_cost_over_its_cap_is_not_printed_as_zero_seconds():
    text = s().variants_held_back([("v", -0.1, 0.2, 0.4)], 0.3)
    assert text == "v (a pair costs 0.4 CPU-seconds)"


def test_peaks_with_a_step_missing_are_refused_not_dropped():
    with pytest.raises(ValueError, match="2 values and 1 step"):
        s().peaks_at([0.08, 0.07], [500])


@pytest.mark.parametrize("step", [_NAN, 500.5])
def test_a_peak_at_a_step_that_is_no_whole_number_is_refused_in_one_line(step):
    with pytest.raises(ValueError, match="step") as err:
        s().peaks_at([0.08], [step])
    assert "\n" not in str(err.value) and "cannot convert" not in str(err.value)


# ---------------------------------------------------------------------------- the survey's count
def test_one_checkpoint_is_one_checkpoint():
    assert s().checkpoints_by_modality(1, {"text": 1, "vision": 0}) == "1 real checkpoint (1 text)"


def test_checkpoints_of_a_modality_not_listed_are_counted_not_lost():
    assert s().checkpoints_by_modality(7, {"text": 5, "vision": 1}) == "7 real checkpoints (5 text, 1 vision and 1 other)"
    with pytest.raises(ValueError, match="7"):
        s().checkpoints_by_modality(5, {"text": 5, "vision": 2})


# ------------------------------------------------------------------------- the claims' sentences
@pytest.mark.parametrize("args", [(3, 5, 0), (3, 2, 2), (3, -1, 0)])
def test_blind_progress_counts_beyond_the_claims_are_refused(args):
    from companion.judge.claim_sentences import blind_progress_text

    with pytest.raises(ValueError, match="training claims"):
        blind_progress_text(*args)


def test_blind_progress_of_one_claim_agrees_in_number():
    from companion.judge.claim_sentences import blind_progress_text

    text = blind_progress_text(3, 1, 1)
    assert text.startswith("1 of the 3 training claims have no pair")
    assert "and 1 has fewer than the three seeds its verdict needs" in text
    assert blind_progress_text(1, 1, 0).startswith("The one training claim has no pair of its blind runs")


def test_other_corpora_with_more_runs_cached_than_planned_are_not_read_as_a_part_of_them():
    assert s().other_corpora(5, 4, 2, 1, 1).startswith("5 runs cached (4 planned); of the 2 corpora")
    assert s().other_corpora(3, 4, 2, 1, 1).startswith("3 of 4 runs cached; of the 2 corpora")
    with pytest.raises(ValueError, match="3 of the 2 corpora"):
        s().other_corpora(4, 4, 2, 3, 1)


def test_the_paper_rate_sentence_never_reads_a_missing_gate_reason_as_nan(monkeypatch):
    import companion.judge.claim_sentences as cs

    table = pd.DataFrame({"body_key": ["wikipedia-regime-paper-lr"], "comparator": ["decoder"], "n": [3],
                          "estimate": [-0.05], "low": [-0.08], "high": [-0.02], "outcome": ["refuted"],
                          "gate_reason": [_NAN], "gate": [True]})
    monkeypatch.setattr(cs, "training_tests_table", lambda key: table)
    text = cs.paper_rate_text()
    assert not _NOT_A_NUMBER.search(text) and "reads refuted:" in text
    # the table stands for both figures' tests here, so each is one of 2
    assert "-0.050 (95% t-interval -0.080 to -0.020; one of 2, unadjusted)" in text
    assert "3 seeds" in text


# --------------------------------------------------------------------- the runs' landing sentence
def _runs(**changes):
    table = pd.DataFrame({
        "body": ["mix", "mix", "wiki"], "seed": [30, 30, 50], "device": ["CPU", "CPU", "CPU"],
        "machines": ["not recorded", "Xeon A (amx_bf16)", "Xeon B"],
        "started": ["2026-01-01T00:00:00Z", "2026-01-01T03:30:00Z", "2026-01-01T01:00:00Z"],
        "after rules (h)": [0.25, 3.75, 1.25]})
    return table.assign(**changes)


def test_a_run_whose_machines_are_unknown_is_not_counted_as_recorded():
    text = s().training_runs_said(_runs(machines=["not recorded", _NAN, "Xeon B"]))
    assert "recorded for 1 of them" in text


def test_a_run_with_no_device_is_named_unrecorded_not_a_traceback():
    text = s().training_runs_said(_runs(device=["CPU", _NAN, "H100"]))
    assert "made on the CPU, H100 and an unrecorded device," in text


def test_runs_started_before_the_rules_are_said_to_have_started_before():
    text = s().training_runs_said(_runs(**{"after rules (h)": [-2.0, -0.04, 1.25]}))
    assert "starting 2.0 h before to 1.2 h after the rules' first commit" in text
    text = s().training_runs_said(_runs(**{"after rules (h)": [-2.0, -0.04, -1.0]}))
    assert "starting 0.04 to 2.0 h before the rules' first commit" in text and "-0.0" not in text


def test_a_missing_wall_clock_is_not_printed_as_nan():
    text = s().training_runs_said(_runs(**{"s/step": [_NAN] * 3, "CPU s/step": [0.4, 0.5, _NAN]}))
    assert not _NOT_A_NUMBER.search(text) and "a step took 0.40 to 0.50 s of compute" in text


# ---------------------------------------------------------------------------- the chapter times
def test_a_time_over_its_budget_is_never_rounded_up():
    from companion.book.budgets.chapter_times import _cell

    # stopped at 470 s (as two H100 rows of data/chapter_times/ were) it ran over 7 min, not over 8
    # (which would need more than 480 s); stopped at 119.7 s, over 119 s, not over 120
    assert [_cell({"outcome": "over the budget", "seconds": s, "note": ""}) for s in (470, 119.7, 600)] == [
        "over 7 min", "over 119 s", "over 10 min"]


def test_a_chapter_that_finished_in_under_a_second_is_not_said_to_take_zero():
    from companion.book.budgets.chapter_times import _cell

    assert _cell({"outcome": "finished", "seconds": 0.3, "note": ""}) == "0.3 s"
    assert _cell({"outcome": "finished", "seconds": 0.0, "note": ""}) == "0 s"


def test_a_lower_bound_of_the_colab_budget_is_rounded_down():
    from companion.book.budgets.colab_budget import _seconds

    assert _seconds(599.6, lower=True) == "599" and _seconds(599.6) == "600" and _seconds(1234.9, lower=True) == "1,234"


def test_a_set_of_short_runs_does_not_total_zero_hours(tmp_path):
    from companion.book.site.build_status import cached_run_sets

    d = tmp_path / "wiki-bert-mini-encoder-standard-s0"
    d.mkdir()
    (d / "provenance.json").write_text(json.dumps({"hardware": {"device": "cpu"}, "duration_s": 10,
                                                   "config": {"steps": 4, "corpus": "wikipedia"}}))
    (d / "history.csv").write_text("step,quantity,layer,head,value\n")
    (row,) = cached_run_sets(tmp_path)
    assert row["hours"] == pytest.approx(10 / 3600, rel=0.01) and row["hours"] > 0


# ------------------------------------------------------------------------------- the exercises
def test_an_exercise_labels_file_with_a_bom_and_crlf_reads_as_its_labels(tmp_path):
    from companion.book.teaching.exercise_labels import load_exercise_labels

    p = tmp_path / "labels.yaml"
    p.write_bytes(b"\xef\xbb\xbfex-a:\r\n  difficulty: 1\r\n  importance: core\r\n  minutes: 10\r\n")
    assert load_exercise_labels(p) == {"ex-a": {"difficulty": 1, "importance": "core", "minutes": 10}}


def test_an_exercise_label_written_twice_is_refused_not_summed_once(tmp_path):
    from companion.book.teaching.exercise_labels import load_exercise_labels

    p = tmp_path / "labels.yaml"
    entry = "  difficulty: 1\n  importance: core\n  minutes: {}\n"
    p.write_text("ex-a:\n" + entry.format(10) + "ex-a:\n" + entry.format(500))
    with pytest.raises(ValueError, match="twice"):
        load_exercise_labels(p)


def _check(label, answer, time_s=1.0):
    from companion.book.teaching.exercise_checks import EXERCISES
    from companion.book.teaching.exercise_engine import WrongAnswer, run

    with pytest.raises(WrongAnswer) as err:
        run(EXERCISES[label], answer, time_s=time_s)
    return str(err.value)


def test_a_float_that_says_it_equals_everything_is_no_masking_rate():
    class Agreeable(float):
        def __eq__(self, other):
            return True

        __hash__ = float.__hash__

        def __sub__(self, other):
            return 0.0

        __rsub__ = __sub__

        def __abs__(self):
            return 0.0

    assert "not yet" in _check("ex-objectives-to-structure-2", Agreeable(0.1))


def test_a_masking_rate_of_nan_is_refused():
    assert "NaN" in _check("ex-objectives-to-structure-2", np.array([np.nan]))


# ------------------------------------------------------------------------- the figure check
@pytest.mark.parametrize("source", ["fig, ax = plt.subplots (1, 2)\n", "fig = plt . figure()\n",
                                    "import matplotlib.pyplot as pyplot\nfig = pyplot.figure()\n"])
def test_a_cell_that_draws_is_seen_drawing_however_its_call_is_spaced(source):
    from companion.book.checks.figure_check import draws

    assert draws(source, set())
    assert not draws("# plt.subplots (1, 2)\nx = 1\n", set())


def test_a_glue_under_an_f_string_name_with_no_literal_start_is_no_glued_image():
    from companion.book.checks.figure_check import _glues_an_image

    cell = 'fig, ax = plt.subplots()\nglue(f"{name}", "a number")\n'
    assert not _glues_an_image(cell, {"other_fig"})
    assert _glues_an_image('fig, ax = plt.subplots()\nglue(f"peaks_{k}", fig)\n', {"peaks_a"})


def _notebook(path, cells):
    path.write_text(json.dumps({"cells": cells}))
    return path


@pytest.mark.parametrize("store,text", [("a.ipynb", '{"cells": ['), ("a.glue.json", "{not json")])
def test_a_notebook_or_glue_store_cut_off_is_named_in_one_line(tmp_path, store, text):
    from companion.book.checks.figure_check import cells_without_image

    nb = _notebook(tmp_path / "a.ipynb", [{"cell_type": "code", "source": "fig, ax = plt.subplots()", "outputs": []}])
    (tmp_path / store).write_text(text)
    with pytest.raises(ValueError, match=re.escape(store)) as err:
        cells_without_image(nb)
    assert "\n" not in str(err.value)


def test_an_output_that_is_no_record_is_no_image_not_a_traceback(tmp_path):
    from companion.book.checks.figure_check import cells_without_image

    nb = _notebook(tmp_path / "a.ipynb", [{"cell_type": "code", "source": "fig, ax = plt.subplots()",
                                           "outputs": ["text", {"data": ["image/png"]}]}])
    (found,) = cells_without_image(nb)
    assert found.startswith("a.ipynb: code cell 1 (fig, ax = plt.subplots())")


# ------------------------------------------------------------------------- the status check
@pytest.mark.parametrize("head", ["Status:", "Status<sup>1</sup>", "Status *"])
def test_a_status_column_with_a_colon_or_footnote_mark_is_still_checked(head):
    from companion.book.checks.status_check import table_statuses

    html = (f"<table><tr><th>Claim</th><th>{head}</th></tr>"
            "<tr><td>Fig. 3a</td><td>holds</td></tr></table>")
    (found,) = table_statuses(html, {"Fig. 3a": "training_symmetry"})
    assert (found.key, found.status) == ("training_symmetry", "holds")
    # a column that names another version of the rules is still no status column
    assert table_statuses(html.replace(head, "Status (v1)"), {"Fig. 3a": "training_symmetry"}) == []
