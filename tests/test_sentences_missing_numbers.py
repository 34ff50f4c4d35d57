"""No sentence is built from a number that is not one: every phrasing of
:mod:`companion.judge.sentences` given a NaN or an infinity where it takes a number says the
value is missing, and never writes 'nan' or 'inf' nor reads a direction from it."""

from __future__ import annotations

import inspect
import math
import re

import pytest

from companion.base.phrasing import interval
from companion.judge import sentences as S

NAN, INF = float("nan"), float("inf")
SAMPLE = {"float": 0.3, "int": 3, "bool": True, "str": "holds", "bool | None": True}
#: the words a sentence may never contain once a number is missing (a direction, a reading)
READS = re.compile(r"\bnan\b|\binf\b|leads one to expect|as Thm\. S1\.14 predicts|against Thm|"
                   r"\bless than\b|\bmore than\b|\bsooner\b(?! or later)|\bhigher\b|\blower\b", re.IGNORECASE)


def _number_phrasings():
    """(name, function, required parameters) of every phrasing whose required inputs are all
    plain numbers, flags and words, with at least one number."""
    out = []
    for name in S.__all__:
        f = getattr(S, name)
        if not inspect.isfunction(f):
            continue
        params = [p for p in inspect.signature(f).parameters.values() if p.default is inspect.Parameter.empty]
        if params and all(p.annotation in SAMPLE for p in params) and any(p.annotation == "float" for p in params):
            out.append((name, f, params))
    return out


PHRASINGS = _number_phrasings()
#: numbers a phrasing reads but does not state (p_value's floor only adds a note when met)
UNSTATED = {("p_value", "smallest")}


def test_the_phrasings_with_numbers_are_found():
    names = {n for n, _, _ in PHRASINGS}
    assert {"swap_update_reading", "swap_mirror", "swap_test", "less_or_more_than", "interval_reading",
            "symmetry_gap_reading", "paired_result", "gate_floor"} <= names, names


@pytest.mark.parametrize("name, f, params", PHRASINGS, ids=[n for n, _, _ in PHRASINGS])
def test_a_missing_number_is_said_missing_never_nan(name, f, params):
    for target in [p.name for p in params if p.annotation == "float"]:
        for bad in (NAN, INF, -INF):
            kw = {p.name: SAMPLE[p.annotation] for p in params}
            kw[target] = bad
            text = f(**kw)
            if (name, target) not in UNSTATED:
                assert "missing" in text or "no interval" in text, f"{name}({target}={bad}): {text!r}"
            assert not READS.search(text), f"{name}({target}={bad}) reads a number it lacks: {text!r}"


def test_the_objective_swap_update_reading_with_a_nan_interval_states_no_direction():
    # was: 'the masked-LM updates are the more symmetric, as Thm. 2.4 leads one to expect'
    text = S.swap_update_reading(NAN, NAN, 3)
    assert "missing" in text and "Thm. 2.4" not in text
    assert S.swap_update_reading(-0.2, -0.1, 3).endswith("as Thm. 2.4 leads one to expect")   # a number still reads


def test_the_objective_swap_mirror_and_test_with_nan():
    mirror = S.swap_mirror(NAN, 0.02, 1, False, "not testable here")
    assert "missing" in mirror and "nan" not in mirror.lower() and "against the prediction" not in mirror
    assert S.swap_test(NAN, NAN, NAN, 3, 0.02) == "missing (no interval); smallest effect of interest 0.0200"
    assert S.less_or_more_than(NAN, 0.02) == "by a missing amount (not a number), so not compared with"


def test_the_flags_a_chapter_computes_from_a_missing_number_can_say_so():
    assert "missing" in S.direction_and_size(None, True) and "predicted direction" not in S.direction_and_size(None, True)
    assert "missing" in S.swap_update_order(None) and "Thm. 2.4" not in S.swap_update_order(None)


def test_lists_and_tables_of_numbers_say_missing():
    assert S.peaks_at([NAN, 0.25], [500, 750]) == "missing at step 500, 0.250 at step 750"
    assert S.labelled_intervals([("cpu", NAN, -0.1, 0.2)]) == "cpu estimate missing"
    assert interval(-0.1, 0.2, estimate=NAN, n=3) == "estimate missing, 3 seeds"
    flips = S.horizon_flips([("Fig. 3a", "decoder", NAN, 0.01, 0.02)], 5000)
    assert "missing at step 5,000" in flips and "both smaller" not in flips
    held = S.variants_held_back([("lr", NAN, -0.1, 100.0)], 50.0)
    assert held == "lr (its directionality is missing; a pair costs 100 CPU-seconds)"
    assert "nan" not in S.spread_uncertainty({3: (NAN, 6.2)}).lower()


def test_the_runs_sentence_with_starts_not_recorded_says_so():
    import pandas as pd

    table = pd.DataFrame({"body": ["b", "b"], "run": ["r1", "r2"], "arm": ["encoder/standard", "decoder/standard"],
                          "seed": [1, 1], "device": ["CPU", "CPU"], "machines": ["x", "x"],
                          "started": ["not recorded", "not recorded"], "after rules (h)": [math.nan, math.nan]})
    text = S.training_runs_said(table)
    assert "nan" not in text.lower() and "no start recorded" in text
