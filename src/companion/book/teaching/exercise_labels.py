"""Difficulty, importance and time budget of every exercise, from its chapter's entry in
``data/chapters.yaml`` (``exercises:``, keyed by each exercise's ``:label:``).

The Sphinx extension prints them under each exercise's title, and the page "Teaching with
this book" sums the minutes per lecture (:func:`minutes_per_chapter`).
"""

from __future__ import annotations

from pathlib import Path

from ...base.paths import ROOT
from ..budgets import chapters_registry as _registry
from ..budgets.chapters_registry import DIFFICULTY, IMPORTANCE

__all__ = ["LABELS_FILE", "IMPORTANCE", "DIFFICULTY", "load_exercise_labels", "exercise_label_text",
           "book_exercise_labels", "page_exercise_labels", "minutes_per_chapter", "check_page_labels", "read_page"]

#: the file the labels are read from: the one registry of the book's pages
LABELS_FILE = _registry.REGISTRY_FILE
_LABEL_KEYS = ("difficulty", "importance", "minutes")


def load_exercise_labels(path: Path | str = LABELS_FILE) -> dict:
    """``{label: {difficulty, importance, minutes}}``, validated (an error names the page or
    the label, and the fix).

    ``path`` is the registry of pages (a file named ``chapters.yaml``: every page's
    ``exercises``), or any other file that maps labels straight to their entries (a sample
    book's)."""
    import yaml

    from ...base.bounded_yaml import load_bounded
    from ...base.paths import regular_file

    path = Path(path)
    regular_file(path, "the exercise labels")   # a FIFO would block the build
    if path.name == _registry.REGISTRY_FILE.name:
        found = _registry.exercises(_registry.load_registry(path))
        return {k: {f: v[f] for f in _LABEL_KEYS} for k, v in found.items()}
    try:
        data = load_bounded(path.read_text(encoding="utf-8")) or {}
    except (UnicodeDecodeError, OverflowError, yaml.YAMLError) as err:
        raise ValueError(f"{path} cannot be read as YAML ({' '.join(str(err).split())[:200]}); fix the file.") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a mapping of page names (or exercise labels) to entries")
    for label, entry in data.items():
        _registry._check_exercise(path, "(labels)", label, entry)
    return {k: {f: v[f] for f in _LABEL_KEYS} for k, v in data.items()}


def exercise_label_text(entry: dict) -> str:
    d = entry["difficulty"]
    return (f"Difficulty {d} of 3 ({DIFFICULTY[d]}) · importance: {entry['importance']} · "
            f"time: about {entry['minutes']} min")


def page_exercise_labels(text: str) -> list[str]:
    """The labels of the exercises a MyST page renders, in order, read by the book's own parser
    (:func:`companion.book.editions.solutions.directives`): colon or backtick fences of any
    length, with a title or without, the ``:label:`` among the options in any place (or in a
    YAML block), nested in another directive, gated (``{exercise-start}``); an exercise shown
    inside a code block is none."""
    from ..editions.solutions import directive_options, directives

    return [label for d in directives(text, {"exercise"}) if d["kind"] != "end"
            for label in [directive_options(d["content"]).get("label", "")] if label]


def book_exercise_labels(book: Path | str = ROOT / "book") -> dict[str, list[str]]:
    """``{chapter: [exercise label, ...]}`` for every page of the book with exercises
    (:func:`page_exercise_labels`)."""
    out = {}
    for page in sorted(Path(book).glob("*.md")):
        found = page_exercise_labels(read_page(page))
        if found:
            out[page.stem] = found
    return out


def minutes_per_chapter(book: Path | str = ROOT / "book", labels: dict | None = None) -> dict:
    """``{chapter: {"core": minutes, "all": minutes}}`` from the labels; an exercise with no entry
    in them, or a label on two exercises, is refused (:func:`check_page_labels`)."""
    labels = load_exercise_labels() if labels is None else labels
    found = book_exercise_labels(book)
    check_page_labels(found, labels)
    return {ch: {"core": sum(labels[k]["minutes"] for k in ks if labels[k]["importance"] == "core"),
                 "all": sum(labels[k]["minutes"] for k in ks)}
            for ch, ks in found.items()}


def check_page_labels(exercises: dict[str, list[str]], labels: dict) -> None:
    """Refuse in one line, naming it, an exercise label of ``exercises`` (``{chapter: [label,
    ...]}``) that is on two exercises (a ``ValueError``: its minutes would be summed twice) or
    has no entry in ``labels`` (a ``KeyError``)."""
    where: dict[str, str] = {}
    for chapter, found in exercises.items():
        for label in found:
            if label in where:
                raise ValueError(f"exercise label {label} is on two exercises ({where[label]} and {chapter}); "
                                 "give each exercise a label of its own")
            where[label] = chapter
            if label not in labels:
                raise KeyError(f"exercise {label} of {chapter} has no entry in {LABELS_FILE.parent.name}/"
                               f"{LABELS_FILE.name}; add its difficulty, importance and minutes under the "
                               "chapter's exercises")


def read_page(path: Path) -> str:
    """The text of a page or a deck the plan counts; one that is no regular file (a FIFO would
    block for ever) is refused in one line naming it."""
    from ...base.paths import regular_file

    regular_file(path, "a page of the book")
    return Path(path).read_text(encoding="utf-8")
