"""Each exercise's check is data in its chapter's entry of data/chapters.yaml, interpreted by
one engine (companion.book.teaching.exercise_engine.from_data); code is left only for the
judges of answers that are examples or constructions."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from companion.book.teaching import exercise_checks
from companion.book.teaching.exercise_engine import WrongAnswer, run

ROOT = Path(__file__).resolve().parents[1]
WRONG = [{"code": "x = 1"}, {"code": "x = 2"}]


def _raw_checks() -> dict:
    data = yaml.safe_load((ROOT / "data" / "chapters.yaml").read_text(encoding="utf-8"))
    return {k: ex["check"] for e in data.values() for k, ex in (e or {}).get("exercises", {}).items()
            if "check" in ex}


def test_every_checked_exercise_is_data_and_only_six_are_judged_by_code():
    raw = _raw_checks()
    assert set(exercise_checks.EXERCISES) == set(raw) and len(raw) >= 18
    judged = {k for k, c in raw.items() if "judge" in c}
    assert len(judged) == 6 and len(raw) - len(judged) >= 12
    assert sorted(raw[k]["judge"] for k in judged) == sorted(exercise_checks.JUDGES)   # every judge used once


def _registry(check: dict, chapter: str = "trial") -> dict:
    return {chapter: {"exercises": {"ex-trial-1": {"difficulty": 1, "importance": "core", "minutes": 5,
                                                   "check": check}}}}


SKEW = {"answer": "skew_dim", "asks": "the dimension of the 3 x 3 skew-symmetric matrices (an int)",
        "given": "value", "reads": "whole", "what": "dimensions", "range": [0, 100],
        "cases": [{"args": [], "want": "skew_dimension", "of": [3]}], "compare": "equal",
        "hint": "{got} is not the dimension: count the entries above the diagonal.", "wrong": WRONG}


def test_a_check_written_only_as_data_checks_its_answer(capsys):
    ex = exercise_checks.load_exercises(_registry(SKEW))["ex-trial-1"]
    assert run(ex, 3) is True and "ex-trial-1: correct" in capsys.readouterr().out
    for wrong in (2, 6, 9):   # the entries below the diagonal too, or the whole matrix
        with pytest.raises(WrongAnswer, match=rf"^ex-trial-1: not yet. {wrong} is not the dimension"):
            run(ex, wrong)
    with pytest.raises(WrongAnswer, match="whole number of dimensions"):
        run(ex, 3.0)


def test_a_function_answer_is_called_on_each_case_and_compared_within_its_tolerance():
    spec = {"answer": "gap", "asks": "a function (A, eps) -> 1 - s(I + eps A)", "reads": "number",
            "what": "your prediction", "cases": "first_order_gap", "compare": "within",
            "hint": "for a {kind} {n} x {n} A: {want:.3e}, yours {got:.3e}", "wrong": WRONG}
    ex = exercise_checks.load_exercises(_registry(spec))["ex-trial-1"]
    with pytest.raises(WrongAnswer, match=r"^ex-trial-1: not yet. for a Gaussian 1 x 1 A: 0.000e\+00, yours 1"):
        run(ex, lambda A, eps: 1.0)


@pytest.mark.parametrize("change, why", [
    ({"reads": "text"}, "reads one of number"),
    ({"compare": "roughly"}, "compare one of within"),
    ({"cases": "no_such_cases"}, "cases is one of"),
    ({"cases": [{"args": [], "want": "no_such_value", "of": []}]}, "want one of"),
    ({"range": None}, "needs range"),
    ({"hint": None}, "give a hint"),
    ({"wrong": WRONG[:1]}, "two or more plausible wrong answers"),
    ({"asks": ""}, "asks must be a line of text"),
    ({"colour": "red"}, "the fields are"),
    ({"judge": "reparametrize"}, "a judge is one of"),
])
def test_a_malformed_check_is_refused_in_one_line_naming_its_chapter_label_and_fix(change, why):
    spec = {k: v for k, v in {**SKEW, **change}.items() if v is not None}
    with pytest.raises(ValueError, match=f"data/chapters.yaml: trial: exercise ex-trial-1: check: .*{why}") as err:
        exercise_checks.load_exercises(_registry(spec))
    assert "\n" not in str(err.value)
