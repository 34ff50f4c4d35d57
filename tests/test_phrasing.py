"""The book words an interval, a list and a sentence's first letter in one way."""

import math

from companion.base import phrasing as ph


def test_an_interval_names_its_level_kind_bounds_and_seeds():
    assert ph.interval(-0.1, 0.3, n=3) == "95% t-interval -0.100 to +0.300, 3 seeds"
    assert ph.interval(0.01234, 0.5, level=0.9, fmt=".2f", kind="interval") == "90% interval 0.01 to 0.50"


def test_one_seed_or_missing_bounds_say_there_is_no_interval():
    assert ph.interval(0.2, 0.4, n=1) == "one seed, no interval"
    assert ph.interval(math.nan, 0.4) == "no interval"


def test_lists_counts_and_sentence_case():
    assert ph.joined([]) == "none" and ph.joined(["a"]) == "a" and ph.joined(["a", "b"]) == "a and b"
    assert ph.joined(["a", "b", "c"]) == "a, b and c"
    assert ph.seeds(1) == "1 seed" and ph.seeds(4) == "4 seeds"
    assert ph.sentence_case("fig. 3a holds") == "Fig. 3a holds" and ph.sentence_case("") == ""


def test_the_compact_interval_is_the_estimate_with_its_bounds_in_brackets():
    from companion.base.phrasing import interval

    assert interval(0.042, 0.499, estimate=0.271, fmt="+.3f") == "+0.271 [+0.042, +0.499]"
    assert interval(0.1, 0.2, estimate=0.15, n=3, fmt=".2f") == "0.15 [0.10, 0.20], 3 seeds"
    assert interval(0.1, 0.2, estimate=0.15, n=1) == "one seed, no interval"
    assert interval(float("nan"), 0.2, estimate=0.15) == "no interval"


def test_a_span_is_the_lowest_to_the_highest_value():
    assert ph.span([0.5, 0.123, 0.3]) == "0.12 to 0.50"
    assert ph.span([-1, 2], fmt="+.1f") == "-1.0 to +2.0"
    assert ph.span([], empty="not printed") == "not printed"
    assert ph.span([0.3, math.nan, 0.1]) == "0.10 to 0.30"


def test_the_compact_interval_in_parentheses_for_a_sentence():
    assert ph.interval(-0.01, 0.05, estimate=0.02, brackets="()") == "+0.020 (-0.010 to +0.050)"
    assert ph.interval(0.1, 0.3, estimate=0.2, fmt=".2f", brackets="()") == "0.20 (0.10 to 0.30)"


def test_plain_lists_and_lists_of_numbers():
    assert ph.listed(["a", "b", "c"]) == "a, b, c" and ph.listed([], "no objective") == "no objective"
    assert ph.numbers([0.12, 1 / 3]) == "0.120, 0.333" and ph.numbers([2.0], ".0%") == "200%"
