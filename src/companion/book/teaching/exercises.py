"""Checks for the book's exercises: a student's answer passes, or fails with a hint.

In a chapter's exercise (and in the student notebooks) an exercise that asks for code ends
with a call such as::

    from companion.book.teaching.exercises import check
    check("ex-measuring-2", first_order_gap)

:func:`check` runs the test registered for that label: it prints one line when the answer
passes and raises :class:`WrongAnswer` (an ``AssertionError`` with a one-line hint) when it
does not. Checks run offline on a CPU in about a second each (plus the first import of scipy,
torch or transformers where a check needs them).

The exercises are data for one engine: each checked exercise's entry in its chapter's
``exercises`` of ``data/chapters.yaml`` holds a ``check`` (what it asks, how the answer is
read, the independent computation it is compared with, the comparison and the hints), which
:mod:`.exercise_engine` interprets (:func:`.exercise_engine.from_data`); the computations it
names are in :mod:`.exercise_references`, and the six answers that are an example or a
construction rather than a value are tested by the judges of :mod:`.exercise_checks`.  The
engine runs the student's code for all of them: on copies of its inputs, in a child process
killed after :data:`TIME_LIMIT_S` seconds, refusing answers of more than :data:`MAX_ITEMS`
numbers or items, and turning every failure into one line.  Set :data:`TIME_LIMIT_S` or
:data:`MAX_ITEMS` here to change the bounds of the next checks.
"""

from __future__ import annotations

from typing import Any

from ...base.paths import ROOT
from . import exercise_engine as _engine
from .exercise_checks import EXERCISES
from .exercise_engine import Exercise, WrongAnswer

__all__ = ["WrongAnswer", "Exercise", "EXERCISES", "TIME_LIMIT_S", "MAX_ITEMS",
           "check", "checked_labels", "book_exercises"]

#: seconds one call of the student's code may take before the check fails it
TIME_LIMIT_S = _engine.TIME_LIMIT_S
#: the most numbers or items an answer may hold (the largest correct answer holds a few hundred)
MAX_ITEMS = _engine.MAX_ITEMS


def checked_labels() -> list[str]:
    """The labels of every exercise that has a check."""
    return sorted(EXERCISES)


def book_exercises(root=None):
    """Every exercise of the book's chapters as a table: ``label, chapter, number, checked, asks``.

    ``number`` is the exercise's position in its chapter; ``checked`` says whether
    :func:`check` has a test for it (the rest are answered in words: a proof, a design).
    """
    from pathlib import Path

    import pandas as pd

    from ..site.chapters import book_chapters
    from .exercise_labels import page_exercise_labels

    root = Path(root) if root is not None else ROOT
    rows = []
    for ch in book_chapters(root):
        labels = page_exercise_labels(ch.source.read_text(encoding="utf-8"))
        for i, label in enumerate(labels, 1):
            ex = EXERCISES.get(label)
            rows.append({"label": label, "chapter": ch.docname.split("/")[-1], "number": i,
                         "checked": ex is not None, "asks": ex.asks if ex else ""})
    return pd.DataFrame(rows, columns=["label", "chapter", "number", "checked", "asks"])


def check(label: str, answer: Any) -> bool:
    """Check ``answer`` for exercise ``label``; print a line and return True if it passes.

    Raises :class:`WrongAnswer` with a one-line hint when it does not (also when the answer
    raises, runs longer than :data:`TIME_LIMIT_S` seconds or returns more than
    :data:`MAX_ITEMS` items), ``KeyError`` naming the checked exercises when ``label``
    has no check, and ``TypeError`` when ``label`` is no string (the two arguments swapped).
    """
    if not isinstance(label, str):   # (an answer first: a set or a list cannot even be looked up)
        raise TypeError(f"check(label, answer) takes the exercise's label first, e.g. check('ex-survey-2', "
                        f"agreeing_heads); got {type(label).__name__} where the label goes"
                        + (f" and the label {answer!r} second: swap them." if isinstance(answer, str) else "."))
    if label not in EXERCISES:
        raise KeyError(f"no check for exercise {label!r}; exercises with checks: {', '.join(checked_labels())}")
    return _engine.run(EXERCISES[label], answer, time_s=_bound("TIME_LIMIT_S", TIME_LIMIT_S, "seconds, e.g. 30"),
                       items=int(_bound("MAX_ITEMS", MAX_ITEMS, "whole number of items, e.g. 100000")))


def _bound(name: str, value, what: str) -> float:
    """``value`` of the setting ``name`` when it is a positive, finite number (whole for items)."""
    import math
    import numbers

    ok = (isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value) and value > 0
          and ("whole" not in what or float(value).is_integer()))
    if not ok:
        raise ValueError(f"exercises.{name} is {value!r}, which bounds nothing; set it to a positive {what}.")
    return float(value)
