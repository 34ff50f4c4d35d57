"""What round 9 left: a score outside [-1, 1] in a run's history, a non-finite number glued
into a sentence (tests/test_paste.py), math links (tests/reader), one folder check
(tests/test_refusals_outputs.py)."""

from __future__ import annotations

import math

import pytest

from companion.base.errors import CompanionError
from test_hostile_round8 import _at_horizon, _one_line, _run_copy


@pytest.mark.parametrize("quantity, value", [("symmetry", 1.5), ("symmetry", -1.01), ("directionality", 2.0),
                                             ("directionality", -math.inf), ("symmetry", math.inf)],
                         ids=["symmetry above one", "symmetry below minus one", "directionality of two",
                              "minus-infinite directionality", "infinite symmetry"])
def test_a_score_outside_minus_one_to_one_is_refused_naming_the_run_and_quantity(tmp_path, quantity, value):
    """Def. 3.1 and 3.2 put both scores in [-1, 1]: a layer's 1.5 would move the layer mean
    a reader takes for the run's value; it is refused in one line instead."""
    from companion.train.runner.provenance import read_run

    run = _run_copy(tmp_path, _at_horizon(quantity, value))
    with pytest.raises(CompanionError) as err:
        read_run(run)
    text = _one_line(err)
    assert run.name in text and quantity in text and "in [-1, 1]" in text, text


@pytest.mark.parametrize("quantity, value", [("symmetry", 1.0), ("directionality", -1.0), ("symmetry", 1.0000004),
                                             ("eval_loss", math.inf), ("symmetry", math.nan)],
                         ids=["symmetric", "column-dominant", "rounding above one", "overflowed loss", "diverged"])
def test_a_score_at_the_ends_and_a_diverged_run_s_values_are_read_as_they_are(tmp_path, quantity, value):
    from companion.train.runner.provenance import read_run

    run = _run_copy(tmp_path, _at_horizon(quantity, value))
    hist, _ = read_run(run)
    at = hist[(hist.quantity == quantity) & (hist.step == hist.step.max())]["value"]
    assert (at.isna().any() if math.isnan(value) else (at == value).any()), at.tolist()
