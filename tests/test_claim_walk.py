"""The walk measure behind issue-level claims about how far a reader walks (bench/claim_walk.py)
counts what it says: stays, climbs into a higher layer, and returns to a module already left."""

from __future__ import annotations

import importlib.util
from pathlib import Path

SPEC = importlib.util.spec_from_file_location("claim_walk", Path(__file__).resolve().parents[1] / "bench" / "claim_walk.py")
walk = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(walk)


def test_a_walk_down_the_layers_once_has_no_climb_and_no_return():
    m = walk.measure(["companion.judge.empirical", "companion.judge.empirical", "companion.train.studies.evidence",
                      "companion.rules.verdicts"])
    assert (m["stays"], m["climbs"], m["returns"]) == (3, 0, 0)


def test_a_zigzag_counts_each_climb_and_each_return():
    j, e, r = "companion.judge.empirical", "companion.train.studies.evidence", "companion.rules.verdicts"
    m = walk.measure([j, r, e, r, j])
    # r -> e climbs (rules below train), r -> j climbs; e at 2 is new, r at 3 and j at 4 are returns
    assert (m["stays"], m["climbs"], m["returns"]) == (5, 2, 2)


def test_the_walk_follows_the_judgement_into_the_evidence_and_the_rules():
    path = walk.walk("companion.judge.empirical", "training_tests", depth=1)
    assert path[0] == "companion.judge.empirical"
    assert {"companion.train.studies.evidence", "companion.rules.rulebook"} <= set(path)


def test_a_training_claim_is_judged_in_one_pass_with_at_most_two_climbs():
    """The issue's target: rule -> evidence -> rules applied -> row, not a zigzag."""
    for depth in (1, 2):
        m = walk.measure(walk.walk("companion.judge.empirical", "training_tests", depth=depth))
        assert m["climbs"] <= 2, m["path"]
