"""Sentences built from computed outcomes say what the numbers say: the right branch, the
right plural, the numbers with their signs, in the order the arms are named."""

from __future__ import annotations

import re

import pytest

from companion.judge.sentences import (EncoderDecoderBody, below_unigram, count_of, encoder_decoder_body, paired_test,
                                       symmetry_peak)


def body(**changes) -> EncoderDecoderBody:
    values = dict(n_encoders=3, n_decoders=3, enc_symmetry=0.0412, dec_symmetry=0.0071, enc_directionality=-0.12,
                  dec_directionality=-0.31, n_pairs=3, n_enc_more_symmetric=2, n_dec_more_directional=3,
                  test_symmetry="T-SYM", test_symmetry_authors="T-AUTH", test_directionality="T-DIR",
                  n_reversed=1, n_gaps=3, band_symmetry=0.0183, peak="PEAK.", n_late_top=2, n_top=3)
    values.update(changes)
    return EncoderDecoderBody(**values)


def test_count_of_uses_the_singular_for_one_only():
    assert [count_of(n, "seed") for n in (0, 1, 2)] == ["0 seeds", "1 seed", "2 seeds"]
    assert count_of(2, "corpus", "corpora") == "2 corpora"


def test_a_peak_more_than_twice_the_end_is_read_as_built_then_undone():
    undone = symmetry_peak(500, 0.08, 2000, 0.03)
    kept = symmetry_peak(1500, 0.08, 2000, 0.05)
    assert "largely undid" in undone and "largely undid" not in kept
    assert "step 500 (0.080)" in undone and "0.030 by step 2000" in undone
    assert "ends at 0.050 (step 2000)" in kept
    # the boundary: exactly half the peak is not "undone"
    assert "largely undid" not in symmetry_peak(1, 0.08, 2, 0.04)


def test_the_body_sentence_carries_each_number_once_in_the_order_of_the_arms():
    text = encoder_decoder_body(body())
    assert "mean symmetry 0.041 against 0.007" in text                 # encoder first, then decoder
    assert "mean directionality -0.120 against -0.310" in text          # signed
    assert "more symmetric in 2 of 3 seed pairs" in text
    assert "column-dominant in 3 of 3" in text
    for part in ("T-SYM", "T-AUTH", "T-DIR", "PEAK."):
        assert text.count(part) == 1
    assert "In 1 of 3 seeds the decoder ends the more symmetric" in text and "(0.018)" in text
    assert "later half of the network in 2 of 3 seeds" in text


def test_the_body_sentence_uses_singulars_for_one_seed():
    text = encoder_decoder_body(body(n_encoders=1, n_decoders=1, n_pairs=1, n_gaps=1, n_top=1,
                                     n_enc_more_symmetric=1, n_dec_more_directional=0, n_reversed=0, n_late_top=1))
    assert "1 encoder and 1 decoder seed:" in text
    assert "1 of 1 seed pair;" in text and "0 of 1 seed the decoder" in text and "1 of 1 seed (Fig. 3c" in text
    assert not re.search(r"\b1 seeds\b|\b1 seed pairs\b", text)


def test_below_unigram_rounds_down_to_whole_standard_errors():
    assert "by at least 12 standard errors" in below_unigram(12.4)
    assert "by at least 12 standard errors" in below_unigram(12.6)   # at least: rounded down


def _tests_table():
    import pandas as pd

    return pd.DataFrame([
        {"body_key": "wiki", "comparator": "decoder", "n": 3, "estimate": 0.0342, "low": 0.0092, "high": 0.0592,
         "seeds": "10,11,12", "outcome": "not testable here"},
        {"body_key": "wiki", "comparator": "authors-decoder", "n": 1, "estimate": -0.01, "low": float("nan"),
         "high": float("nan"), "seeds": "10", "outcome": "inconclusive"}])


def test_paired_test_reads_the_row_of_its_body_and_comparator():
    t = _tests_table()
    assert paired_test(t, "wiki", bodies={"wiki"}) == \
        "+0.034 (95% t-interval +0.009 to +0.059, seeds 10,11,12), not testable here"
    assert paired_test(t, "wiki", "authors-decoder", bodies={"wiki"}).startswith("-0.010 (one seed, no interval")


def test_paired_test_says_missing_runs_only_for_a_body_the_rules_name():
    t = _tests_table()
    assert paired_test(t, "mix", bodies={"wiki", "mix"}) == "not computed (runs missing)"
    with pytest.raises(ValueError, match="no body 'Wikipedia, BERT-Mini' in the rules file"):
        paired_test(t, "Wikipedia, BERT-Mini", bodies={"wiki", "mix"})


def test_the_training_chapter_names_only_bodies_of_the_rules_file():
    from pathlib import Path

    from companion.rules.rulebook import earlier_rules

    text = (Path(__file__).resolve().parents[1] / "book" / "training_dynamics.md").read_text(encoding="utf-8")
    keys = re.findall(r'rule_test\("[a-z_]+", "([^"]+)"', text)
    assert keys and set(keys) <= set(earlier_rules()["bodies"]), keys     # the page's bodies: version 2's


def test_an_interval_reading_says_exactly_what_the_interval_excludes():
    from companion.judge.sentences import interval_reading

    # Table 1 at the blind matrix: d = 0.037, interval -0.052 to +0.031
    t = interval_reading(-0.052, 0.031, 0.037, "nats")
    assert t == ("its interval, -0.052 to +0.031 nats, excludes a gain of 0.037 nats or more; it leaves open "
                 "no effect at all and a loss of 0.037 nats or more")
    # a narrow interval around 0 excludes both sizes but not zero
    assert interval_reading(-0.01, 0.01, 0.05) == ("its interval, -0.010 to +0.010, excludes a gain of 0.050 or "
                                                     "more and a loss of 0.050 or more; it leaves open no effect at all")
    # a wide interval above 0 excludes only 'no effect' and losses
    t = interval_reading(0.02, 0.2, 0.05)
    assert "excludes no effect at all and a loss" in t and "leaves open a gain of 0.050" in t
    # one that excludes nothing
    assert interval_reading(-1, 1, 0.05).startswith("its interval, -1.000 to +1.000, leaves open a gain")


def test_a_p_value_at_its_floor_says_so():
    from companion.judge.sentences import p_value

    assert p_value(0.0123456, 0.001) == "p = 0.0123"
    assert p_value(1 / 210, 1 / 210) == "p = 0.0048, the smallest value it can reach"


def test_two_counts_agree_or_name_the_scores_where_they_differ():
    from companion.judge.sentences import outcomes_agree

    assert outcomes_agree([]) == "give the same outcome for both scores"
    assert outcomes_agree(["symmetry"]) == "give different outcomes for symmetry"
    assert outcomes_agree(["symmetry", "directionality"]) == "give different outcomes for symmetry and directionality"


def test_a_claim_on_one_case_holds_does_not_or_cannot_be_checked():
    from companion.judge.sentences import holds_or_not

    assert [holds_or_not(True), holds_or_not(False)] == ["holds", "does not hold"]
    assert holds_or_not(None, "cannot be checked (no reader)") == "cannot be checked (no reader)"


def test_a_check_carries_power_correction_and_late_rule_only_when_present():
    from companion.judge.sentences import check_notes

    assert check_notes("interval test") == "interval test"
    assert check_notes("t", "0.8 at 0.02", "Holm: 3rd of 9", True) == ("t; power: 0.8 at 0.02; Holm: 3rd of 9; "
                                                                       "rule written after the evidence")


def test_status_counts_leave_out_zeros_and_keep_the_order_given():
    from companion.judge.sentences import COUNT_WORDS, status_counts

    from companion.judge.claims import STATUSES
    assert set(COUNT_WORDS) == set(STATUSES)
    text = status_counts(6, {"holds": 3, "negligible": 0, "refuted": 1, "not testable here": 2})
    assert text == ("Of the 6 claims, 3 hold as printed, 1 is refuted and 2 are not testable on the runs made "
                    "here")
    # counts as numpy integers (what pandas' value_counts gives) read the same
    import numpy as np
    assert status_counts(6, {k: np.int64(v) for k, v in {"holds": 3, "refuted": 1}.items()}) == (
        "Of the 6 claims, 3 hold as printed and 1 is refuted")
    # the verb agrees with its count for every status: one claim takes the singular
    for status in COUNT_WORDS:
        one, many = status_counts(2, {status: 1}), status_counts(4, {status: 4})
        assert one.split(", 1 ")[1].split()[0] in ("is", "holds", "rests"), one
        assert many.split(", 4 ")[1].split()[0] in ("are", "hold", "rest"), many


def test_the_v3_summary_names_each_claim_its_status_and_how_far_it_is():
    from companion.judge.sentences import training_summary

    rows = [("Fig. 3a", "holds", 4, "look 1"), ("Table 1", "pending", 0, "-")]
    assert training_summary(rows) == "Fig. 3a holds (4 seeds in, read at look 1); Table 1 pending (0 seeds in, read at -)"
    # before the first look the status already says it; the look is not named twice
    assert (training_summary([("Fig. 3b", "not read yet", "2 of 12", "none yet")])
            == "Fig. 3b not read yet (2 of 12 seeds in)")
    # a fixed sequence's own words (an earlier rules file) follow the book's one status for the claim
    assert (training_summary([("Fig. 3b", "holds (provisional: Table 1 comes first)", "6 of 12", "look 2 of 4")])
            == "Fig. 3b inconclusive (6 of 12 seeds in, read at look 2 of 4; provisional: Table 1 comes first)")
    # ... so the reader's status check, which compares every 'claim ...: status' with the book's
    # status, finds the one status the book gives such a claim
    from companion.book.checks.status_check import stated_statuses

    said = training_summary([("Fig. 3b", "holds (provisional: Table 1 comes first)", "6 of 12", "look 2 of 4 (6 seeds)")])
    assert all(s.status == "inconclusive" for s in stated_statuses(said, {"Fig. 3b": "training_directionality"}))
    assert "holds" not in said.split("(", 1)[0]


def test_a_test_result_is_estimate_brackets_and_outcome():
    from companion.judge.sentences import paired_result

    assert paired_result(0.0341, 0.0092, 0.0594, 3, "holds") == "+0.034 [+0.009, +0.059]: holds"
    assert paired_result(-0.2, float("nan"), float("nan"), 1, "not testable here") == "-0.200 (1 seed): not testable here"


def test_the_argument_sentences_follow_their_outcomes():
    from companion.judge.sentences import algebra_holds, thm_s1_14_clause

    assert algebra_holds(4, 4, False) == "4 of the 4 algebraic statements of Section 2 and S1.3 hold"
    assert algebra_holds(3, 4, True).endswith("hold, some once corrected")
    assert thm_s1_14_clause(True) == ": masked training builds its symmetry through the theorem's pairs"
    assert thm_s1_14_clause(False) == ", although masked training does build symmetry"


def test_the_mirror_says_which_way_and_how_large_against_its_yardstick():
    from companion.judge.sentences import swap_mirror

    text = swap_mirror(-0.00123, 0.002, 2, False, "refuted")
    assert "ended -0.0012 in symmetry" in text and "(against the prediction, smaller than" in text
    assert text.startswith(" The mirror") and "interest, 0.0020), with 2 seed(s) per arm: reported, not judged." in text
    assert swap_mirror(0.01, 0.002, 3, True, "holds").endswith("(with the prediction, larger than its smallest "
                                                               "effect of interest, 0.0020), with 3 seed(s) per arm: "
                                                               "holds by the same rule.")


def test_the_bottom_line_names_decided_claims_and_counts_the_rest():
    from companion.judge.sentences import training_bottom_line

    assert training_bottom_line([], 6).startswith("Whether training builds the paper's structures")
    assert training_bottom_line([("Fig. 3a", "confirmed"), ("Table 1", "refuted")], 0) == (
        "In training, Fig. 3a is confirmed and Table 1 is refuted.")
    assert training_bottom_line([("Fig. 3a", "confirmed")], 2) == (
        "In training, Fig. 3a is confirmed; 2 more are not testable on the runs made here (each verdict names why).")


def test_the_majority_reading_follows_the_interval_against_one_half():
    from companion.judge.sentences import majority_reading

    assert majority_reading(0.30, 0.45).startswith("most occurrences of frequent types belong to types that are "
                                                   "predicted more often")
    assert majority_reading(0.55, 0.7) == "most occurrences of frequent types have a ratio above one"
    assert majority_reading(0.45, 0.55) == "the interval does not say on which side of one most occurrences fall"


def test_a_percentile_interval_is_at_its_edge_within_a_tenth_of_its_width():
    from companion.judge.sentences import percentile_edge

    assert percentile_edge(0.405, 0.40, 0.50) == "has the estimate at its own lower edge"
    assert percentile_edge(0.42, 0.40, 0.50) == "is far from symmetric about the estimate"


def test_two_rule_versions_agree_or_name_both_outcomes():
    from companion.judge.sentences import same_outcome

    assert same_outcome("holds", "holds") == "the outcome is the same under both"
    assert same_outcome("inconclusive", "refuted") == ("the outcome differs: inconclusive under the percentile interval, "
                                                        "refuted under the bagged interval")


def test_training_costs_and_the_variants_held_back_are_worded_per_item():
    from companion.judge.sentences import minutes_by_mode, variants_held_back

    assert minutes_by_mode({"decoder": 11.6, "encoder": 15.2}) == "12 minutes (decoder) and 15 minutes (encoder)"
    assert variants_held_back([], 600) == "none"
    rows = [("lr3", 0.051, -0.2, 700.0), ("width64", -0.3, -0.1, 100.0)]
    assert variants_held_back(rows, 600) == ("lr3 (its decoder ends row-dominant (+0.05); its decoder is not the more "
                                             "column-dominant; a pair costs 700 CPU-seconds), width64 (nothing recorded keeps it out)")


def test_the_regime_and_the_projection_are_named_in_words():
    from companion.judge.sentences import regime_setting, sooner_or_later

    assert regime_setting(None) == "the base configuration"
    assert regime_setting(("lr", 0.003)) == "lr = 0.003"
    assert [sooner_or_later(-0.5), sooner_or_later(0.0), sooner_or_later(1.2)] == ["sooner", "neither sooner nor later (the exponent is 0)",
                                                                                  "later"]


def test_the_paper_rate_sentence_and_the_other_corpora():
    from companion.judge.sentences import other_corpora, paper_rate_runs

    assert paper_rate_runs(6.1234, 0.456, 5.9, 0.0412, 0.0301, 3.0, "S") == (
        "At the paper's rate the encoders end at a held-out loss of 6.12 nats (0.46 below the unigram reference) "
        "against 5.90 at the book's, and at a mean symmetry of 0.041 against 0.030 (3 paired seeds). What these "
        "runs saw: S.")
    assert other_corpora(2, 4, 1, 1, 0) == ("2 of 4 runs cached; of the 1 corpus with both an encoder and a decoder, "
                                            "the encoder ends the more symmetric on 1 and the decoder the more "
                                            "column-dominant on 0.")
    assert "of the 2 corpora with both" in other_corpora(4, 4, 2, 2, 2)


def test_an_interval_for_a_difference_is_lower_higher_or_undecided():
    from companion.judge.sentences import lower_or_higher

    assert [lower_or_higher(-0.2, -0.01), lower_or_higher(0.01, 0.3), lower_or_higher(-0.1, 0.1)] == [
        "lower", "higher", "not distinguishable"]


def test_the_table_1_preview_says_what_is_made_and_that_it_is_a_preview():
    from companion.judge.sentences import table1_preview

    assert table1_preview([], 12.4, -0.0312) == (
        "No seed has both of its runs cached yet. Table 1's 4-layer Wikipedia row, one seed after 200,000 steps: a "
        "12% speed-up and a final loss -0.031 nats from the symmetric start. With fewer than three paired seeds "
        "these rows are a preview, not a measurement of Table 1: the regime runs above, with three seeds, are the "
        "firmer evidence")
    done = table1_preview([("encoder", 3), ("decoder", 3)], 12.4, -0.0312, "1.1x [0.9, 1.3]", 0.0104)
    assert done.startswith("Paired seeds so far: encoder 3, decoder 3. Table 1's")
    assert done.endswith("; our BERT-Mini encoders after 2,000 steps: median speed-up 1.1x [0.9, 1.3], final loss "
                         "+0.010 nats")


def test_rank_one_updates_name_which_update_is_close_to_rank_one():
    from companion.judge.sentences import rank_one_updates

    assert rank_one_updates(0.95, 0.912) == ("Both updates are close to rank one (top singular value 0.95 and 0.912 "
                                             "of the squared norm)")
    assert rank_one_updates(0.5, 0.9123) == ("The masked update is close to rank one (0.912 of its squared norm in "
                                             "the top singular value), the autoregressive one less so (0.50)")
    assert rank_one_updates(0.9, 0.2).startswith("The autoregressive update is close to rank one (0.900")
    assert rank_one_updates(0.5, 0.6) == ("Neither update is close to rank one (top singular values 0.50 and 0.60 "
                                          "of the squared norm)")


def test_the_update_readings_follow_their_thresholds():
    from companion.judge.sentences import orthogonality, shared_direction, update_symmetry_reading

    assert update_symmetry_reading(True) == "runs against the theorem's intuition"
    assert update_symmetry_reading(False) == "goes the way the theorem leads one to expect"
    assert [orthogonality(-0.1), orthogonality(0.3)] == ["nearly orthogonal to", "far from orthogonal to"]
    assert [shared_direction(-0.3), shared_direction(0.29)] == ["shares part of it", "shares little of it"]


def test_thm_s1_14_meaning_and_the_symmetry_gap_reading():
    from companion.judge.sentences import follows_theorem, symmetry_gap_reading, thm_s1_14_meaning

    assert thm_s1_14_meaning("premise fails").startswith("Here the premise fails")
    assert thm_s1_14_meaning("refuted", {"refuted": "refuted"}) == "The verdict is refuted."
    assert thm_s1_14_meaning("odd", {}) == "The verdict is odd."
    assert symmetry_gap_reading(0.01, 0.2).endswith("as Thm. S1.14 predicts")
    assert symmetry_gap_reading(-0.2, -0.01) == "the causal objective ends the more symmetric, against Thm. S1.14"
    assert symmetry_gap_reading(-0.1, 0.1).startswith("at this size the seeds do not tell")
    assert follows_theorem(True) == "follows Thm. S1.12 at this size"
    assert follows_theorem(False) == "does not follow Thm. S1.12 at this size"


def test_the_update_tests_carry_their_interval_and_their_note():
    from companion.judge.sentences import primary_update_test, secondary_update_test, update_test_reading

    assert primary_update_test(0.0123, -0.004, 0.0286, 3, 0.0183) == (
        "+0.012 (95% t-interval -0.004 to +0.029, 3 seeds; smallest effect of interest 0.018)")
    assert secondary_update_test(-0.05, -0.08, -0.02, 3, 12, 0.01234) == (
        "-0.050 (95% t-interval -0.080 to -0.020, 3 seeds; one of 12 secondary tests, Holm-adjusted one-sided p of "
        "a reversal 0.012)")
    assert update_test_reading(-0.05, -0.08, -0.02, 3, "refuted") == (
        "-0.050 (95% t-interval -0.080 to -0.020, 3 seeds; refuted by the rule's reading)")


def test_groups_and_their_intervals_are_listed_by_label():
    from companion.judge.sentences import labelled_intervals, peaks_at, update_group

    assert labelled_intervals([]) == "none" and labelled_intervals([], "no group") == "no group"
    assert labelled_intervals([("cpu sgd decoder", -0.123, -0.2, -0.04), ("x", 0.5, 0.1, 0.9)]) == (
        "cpu sgd decoder -0.12 [-0.20, -0.04], x +0.50 [+0.10, +0.90]")
    assert update_group("update-mini-sgd-*") == "sgd at BERT-Mini size"
    assert update_group("update-batch8-adamw-*") == "adamw at the regime size"
    assert peaks_at([0.0812, 0.07], [500.0, 750]) == "0.081 at step 500, 0.070 at step 750"


def test_the_swap_sentences_follow_their_numbers():
    from companion.judge.sentences import (direction_and_size, less_or_more_than, negligible_swap, swap_test,
                                           swap_update_order, swap_update_reading)

    assert swap_test(-0.00123, -0.0031, 0.00064, 3, 0.0183) == (
        "-0.0012 (95% t-interval -0.0031 to +0.0006, 3 seeds); smallest effect of interest 0.0183")
    assert [less_or_more_than(0.01, 0.02), less_or_more_than(0.02, 0.02)] == ["less than", "as large as"]
    assert negligible_swap(False) == "" and negligible_swap(True).endswith("(version 1 read it as holds). ")
    assert swap_update_reading(-0.1, 0.1, 3) == swap_update_reading(0.1, 0.2, 1) == "the interval allows either order"
    assert swap_update_reading(0.01, 0.2, 3).startswith("the next-token updates are the more symmetric")
    assert swap_update_reading(-0.2, -0.01, 3) == "the masked-LM updates are the more symmetric, as Thm. 2.4 leads one to expect"
    assert direction_and_size(True, False) == "in the predicted direction, and smaller than the smallest effect of interest"
    assert direction_and_size(False, True) == "against the predicted direction, and larger than the smallest effect of interest"
    assert swap_update_order(True).startswith("the masked swap's updates")
    assert swap_update_order(False).startswith("the causal control's updates")


def test_the_fig3_sentences_name_floor_flips_targets_and_waiting_runs():
    import math

    from companion.judge.sentences import design_targets, gate_floor, horizon_flips, look_reading, runs_before_next_look

    assert gate_floor(math.log(2)) == "ln 2 = 0.693" and gate_floor(0.7) == "0.700"
    assert horizon_flips([], 5000) == "no test of this body fails it"
    assert horizon_flips([("Fig. 3a", "decoder", 0.01, -0.002, 0.0183), ("Table 1", "baseline", 0.3, -0.1, 0.05)],
                         5000) == ("Fig. 3a against the decoder, +0.010 at step 5,000 and -0.002 at the end, both "
                                   "smaller than d = 0.018; Table 1 against the baseline, +0.300 at step 5,000 and "
                                   "-0.100 at the end")
    assert design_targets({"holds_size_open": 0.8, "refuted": 0.05}) == "holds size open 0.8; refuted 0.05"
    assert look_reading(4, "look 1") == "4 seeds in, read at look 1"
    assert look_reading("2 of 12", "none yet") == "2 of 12 seeds in, no look read yet"
    assert runs_before_next_look([]) == "every run of the looks read so far has landed"
    assert runs_before_next_look([("Fig. 3a", ["r1", "r2", "r3"]), ("Table 1", ["r4"])]) == (
        "Fig. 3a: 3 run(s) before its next look (r1, r2, ...); Table 1: 1 run(s) before its next look (r4)")
    # two claims of one body wait for the same runs: the runs are counted once
    assert runs_before_next_look([("Table 1", ["w1", "w2"]), ("Fig. S5b", ["w1", "w2"]), ("Fig. 3a", ["m1"])]) == (
        "Table 1 and Fig. S5b: 2 run(s) before their next look (w1, w2); Fig. 3a: 1 run(s) before its next look (m1)")


def test_checkpoints_are_counted_by_modality_leaving_out_empty_ones():
    from companion.judge.sentences import checkpoints_by_modality

    assert checkpoints_by_modality(6, {"text": 5, "vision": 0, "audio": 1}) == "6 real checkpoints (5 text and 1 audio)"


def test_the_v3_runs_sentence_counts_runs_machines_and_how_far_apart_a_pair_started():
    import pandas as pd

    from companion.judge.sentences import training_runs_said

    table = pd.DataFrame({
        "body": ["mix", "mix", "wiki"], "seed": [30, 30, 50], "device": ["CPU", "CPU", "CPU"],
        "machines": ["not recorded", "Xeon A (amx_bf16)", "not recorded; from step 4,000: Xeon A"],
        "started": ["2026-01-01T00:00:00Z", "2026-01-01T03:30:00Z", "2026-01-01T01:00:00Z"],
        "after rules (h)": [0.25, 3.75, 1.25]})
    said = training_runs_said(table)
    assert said.startswith("3 runs landed (2 of mix and 1 of wiki), made on the CPU, starting 0.2 to 3.8 h")
    assert "recorded for 1 of them" in said            # one run's every step has its machine
    assert "up to 3.5 h apart" in said                  # the mix pair of seed 30; wiki's lone run is no pair
    # a secondary arm enters no pair: leaving it out, no pair is left in this table
    arms = table.assign(arm=["encoder/standard", "authors-decoder/standard", "encoder/standard"])
    assert "apart" not in training_runs_said(arms, {"mix": ["encoder/standard", "decoder/standard"], "wiki": []})
    assert "up to 3.5 h apart" in training_runs_said(arms, {"mix": ["encoder/standard", "authors-decoder/standard"]})
    assert training_runs_said(table.iloc[:0]) == "No run of the confirmatory bodies has landed yet."
    assert "apart" not in training_runs_said(table.iloc[2:])
    assert "compute" not in said                        # no CPU time recorded, no pace sentence
    paced = table.assign(**{"s/step": [0.45, 1.50, 0.60], "CPU s/step": [0.44, 0.43, float("nan")]})
    assert ("a step took 0.43 to 0.44 s of compute (one thread); the wall clock per step, 0.45 to 1.50 s"
            in training_runs_said(paced))                     # the row without CPU time is left out of both ranges


def test_the_spread_sentence_names_each_number_of_seeds_in_order():
    from companion.judge import sentences

    said = sentences.spread_uncertainty({6: (0.6242, 2.4526), 3: (0.5207, 6.2847)})
    assert said == ("3 seeds leave the true spread anywhere from 0.52 to 6.28 times the observed one, "
                    "6 seeds from 0.62 to 2.45 times")
    with pytest.raises(ValueError, match="at least one number of seeds"):
        sentences.spread_uncertainty({})
