"""Sentences whose words depend on computed outcomes, one function per phrasing.

A chapter computes the numbers and glues the sentence these functions return, so the page
reads as text with glued words and each phrasing (its branches, its plurals) lives in one
tested place instead of an f-string in a cell.

This module is where chapters import the phrasings from; each lives by concern beside it:
:mod:`~companion.judge.sentences_words` (counts, statuses, p-values and intervals in words, and
what a missing number reads as), :mod:`~companion.judge.sentences_training` (the training
claims' bodies of runs, tests at their looks and bottom line),
:mod:`~companion.judge.sentences_studies` (the mechanism studies: rank-one updates,
Thm. S1.14, the update tests, the objective swap, Table 1's preview) and
:mod:`~companion.judge.sentences_survey` (the survey and the errata).
"""

from __future__ import annotations

from .sentences_studies import (THM_S1_14_MEANING, direction_and_size, follows_theorem, negligible_swap,
                                orthogonality, peaks_at, primary_update_test, rank_one_updates,
                                secondary_update_test, shared_direction, swap_test, swap_update_order,
                                swap_update_reading, symmetry_gap_reading, table1_preview, thm_s1_14_meaning,
                                update_group, update_symmetry_reading, update_test_reading)
from .sentences_survey import checkpoints_by_modality, majority_reading, percentile_edge, same_outcome
from .sentences_training import (EncoderDecoderBody, below_unigram, encoder_decoder_body, gate_floor,
                                 horizon_flips, look_reading, minutes_by_mode, other_corpora, paired_result,
                                 paired_test, paper_rate_runs, regime_setting, runs_before_next_look,
                                 sooner_or_later, spread_uncertainty, swap_mirror, symmetry_peak,
                                 thm_s1_14_clause, training_bottom_line, training_runs_said, training_summary,
                                 variants_held_back)
from .sentences_words import (COUNT_WORDS, MISSING, algebra_holds, check_notes, count_of,
                              design_targets, estimate_in_words, holds_or_not, interval_reading,
                              labelled_intervals, less_or_more_than, lower_or_higher, outcomes_agree, p_value,
                              status_counts)

# the names chapters import from here (MISSING and THM_S1_14_MEANING are importable too)
__all__ = ["count_of", "symmetry_peak", "EncoderDecoderBody", "encoder_decoder_body", "below_unigram", "paired_test",
           "interval_reading", "p_value", "outcomes_agree", "holds_or_not",
           "check_notes", "COUNT_WORDS", "status_counts", "training_summary", "paired_result", "algebra_holds", "swap_mirror",
           "thm_s1_14_clause", "training_bottom_line",
           "majority_reading", "percentile_edge", "same_outcome", "minutes_by_mode", "variants_held_back",
           "regime_setting", "sooner_or_later", "paper_rate_runs", "other_corpora",
           "lower_or_higher", "table1_preview",
           "rank_one_updates", "update_symmetry_reading", "orthogonality", "shared_direction", "thm_s1_14_meaning",
           "symmetry_gap_reading", "follows_theorem",
           "estimate_in_words", "primary_update_test", "secondary_update_test", "update_test_reading", "labelled_intervals",
           "update_group", "peaks_at",
           "swap_test", "less_or_more_than", "negligible_swap", "swap_update_reading", "direction_and_size",
           "swap_update_order", "gate_floor", "horizon_flips", "design_targets", "look_reading", "spread_uncertainty",
           "runs_before_next_look", "training_runs_said", "checkpoints_by_modality"]
