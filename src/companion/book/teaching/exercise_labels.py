"""Difficulty, importance and time budget of every exercise (``data/exercise_labels.yaml``).

The labels live in one data file keyed by each exercise's ``:label:``, not in the chapters:
the Sphinx extension prints them under each exercise's title, and the page "Teaching with
this book" sums the minutes per lecture (:func:`minutes_per_chapter`).
"""

from __future__ import annotations

import re
from pathlib import Path
from ...base.paths import ROOT

__all__ = ["LABELS_FILE", "IMPORTANCE", "DIFFICULTY", "load_exercise_labels", "exercise_label_text",
           "book_exercise_labels", "minutes_per_chapter"]

LABELS_FILE = ROOT / "data" / "exercise_labels.yaml"
IMPORTANCE = ("core", "recommended", "optional")
DIFFICULTY = {1: "routine", 2: "moderate", 3: "challenging"}
_EXERCISE = re.compile(r"^:{3,}\{exercise\}[^\n]*\n:label: (\S+)", re.M)


def load_exercise_labels(path: Path | str = LABELS_FILE) -> dict:
    """``{label: {difficulty, importance, minutes}}``, validated (an error names the entry)."""
    import yaml

    path = Path(path)
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a mapping of exercise labels")
    for label, entry in data.items():
        if not isinstance(entry, dict) or set(entry) != {"difficulty", "importance", "minutes"}:
            raise ValueError(f"{path}: {label}: expected exactly difficulty, importance, minutes")
        if entry["difficulty"] not in DIFFICULTY:
            raise ValueError(f"{path}: {label}: difficulty must be one of {sorted(DIFFICULTY)}")
        if entry["importance"] not in IMPORTANCE:
            raise ValueError(f"{path}: {label}: importance must be one of {IMPORTANCE}")
        minutes = entry["minutes"]
        if isinstance(minutes, bool) or not isinstance(minutes, int) or not 1 <= minutes <= 600:
            raise ValueError(f"{path}: {label}: minutes must be a whole number from 1 to 600")
    return data


def exercise_label_text(entry: dict) -> str:
    d = entry["difficulty"]
    return (f"Difficulty {d} of 3 ({DIFFICULTY[d]}) · importance: {entry['importance']} · "
            f"time: about {entry['minutes']} min")


def book_exercise_labels(book: Path | str = ROOT / "book") -> dict[str, list[str]]:
    """``{chapter: [exercise label, ...]}`` for every page of the book with exercises."""
    out = {}
    for page in sorted(Path(book).glob("*.md")):
        found = _EXERCISE.findall(page.read_text(encoding="utf-8"))
        if found:
            out[page.stem] = found
    return out


def minutes_per_chapter(book: Path | str = ROOT / "book", labels: dict | None = None) -> dict:
    """``{chapter: {"core": minutes, "all": minutes}}`` from the labels."""
    labels = load_exercise_labels() if labels is None else labels
    return {ch: {"core": sum(labels[k]["minutes"] for k in ks if labels[k]["importance"] == "core"),
                 "all": sum(labels[k]["minutes"] for k in ks)}
            for ch, ks in book_exercise_labels(book).items()}
