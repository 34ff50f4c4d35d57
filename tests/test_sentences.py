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


def test_below_unigram_rounds_to_whole_standard_errors():
    assert "by at least 12 standard errors" in below_unigram(12.4)
    assert "by at least 13 standard errors" in below_unigram(12.6)


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

    from companion.rules.verdicts import load_rules

    text = (Path(__file__).resolve().parents[1] / "book" / "training_dynamics.md").read_text(encoding="utf-8")
    keys = re.findall(r'rule_test\("[a-z_]+", "([^"]+)"', text)
    assert keys and set(keys) <= set(load_rules()["bodies"]), keys


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
