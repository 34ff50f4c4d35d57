"""Every exercise of the book has a difficulty, an importance and a time budget, in its
chapter's entry of data/chapters.yaml."""

from __future__ import annotations

from pathlib import Path

import pytest

import yaml

from companion.book.budgets import chapters_registry as reg
from companion.book.teaching import exercise_labels as el
from companion.book.editions import notebooks as nbgen
ROOT = Path(__file__).resolve().parents[1]


def test_every_exercise_in_the_book_has_a_label_entry_and_every_entry_an_exercise():
    labels = el.load_exercise_labels()
    in_toc = {Path(d).name for d in nbgen.toc_docnames(ROOT)}
    found = {k: ch for ch, ks in el.book_exercise_labels().items() if ch in in_toc for k in ks}
    assert found, "no exercise found in the book"
    missing = sorted(set(found) - set(labels))
    assert not missing, f"exercises without an entry in data/chapters.yaml: {missing}"
    stale = sorted(set(labels) - set(found))
    assert not stale, f"exercise entries of data/chapters.yaml with no exercise in the book: {stale}"
    # each under the entry of the chapter that holds it, in the chapter's order
    raw = yaml.safe_load((ROOT / "data" / "chapters.yaml").read_text(encoding="utf-8"))
    for ch, ks in el.book_exercise_labels().items():
        assert list((raw[ch] or {}).get("exercises", {})) == ks, ch
    reg.check_exercises()   # the package's own check agrees


def test_a_chapter_whose_exercises_have_no_entry_is_refused_in_one_line_with_the_fix(tmp_path):
    (tmp_path / "a.md").write_text(":::{exercise}\n:label: ex-a-1\nx\n:::\n\n:::{exercise}\n:label: ex-a-2\ny\n:::\n")
    entry = {"difficulty": 1, "importance": "core", "minutes": 5}
    with pytest.raises(ValueError, match=r"a: .*add \['ex-a-2'\] under its exercises") as err:
        reg.check_exercises(tmp_path, {"a": {"exercises": {"ex-a-1": entry}}})
    assert "\n" not in str(err.value)
    with pytest.raises(ValueError, match=r"a: .*remove \['ex-a-3'\]"):
        reg.check_exercises(tmp_path, {"a": {"exercises": {"ex-a-1": entry, "ex-a-2": entry, "ex-a-3": entry}}})


def test_no_exercise_was_lost_when_the_labels_moved_into_the_registry():
    # counted from the chapters' own {exercise} blocks and from the YAML as it is written
    raw = yaml.safe_load((ROOT / "data" / "chapters.yaml").read_text(encoding="utf-8"))
    in_file = [k for e in raw.values() for k in (e or {}).get("exercises", {})]
    in_book = [k for ks in el.book_exercise_labels().values() for k in ks]
    assert len(in_file) == len(set(in_file)) == len(in_book) == len(el.load_exercise_labels()) >= 31


def test_an_exercise_under_two_pages_or_a_malformed_one_is_refused_by_name(tmp_path):
    p = tmp_path / "chapters.yaml"
    entry = "{difficulty: 1, importance: core, minutes: 5}"
    p.write_text(f"a: {{exercises: {{ex-a-1: {entry}}}}}\nb: {{exercises: {{ex-a-1: {entry}}}}}\n")
    with pytest.raises(ValueError, match="ex-a-1 is listed under both a and b"):
        el.load_exercise_labels(p)
    p.write_text(f"a: {{exercises: {{ex-a-1: {{difficulty: 1, importance: core}}}}}}\n")
    with pytest.raises(ValueError, match="a: exercise ex-a-1: expected exactly") as err:
        reg.load_registry(p)
    assert "\n" not in str(err.value)


def test_minutes_are_summed_per_chapter(tmp_path):
    book = tmp_path / "book"
    book.mkdir()
    (book / "a.md").write_text(":::{exercise}\n:label: ex-a-1\nx\n:::\n\n::::{exercise}\n:label: ex-a-2\ny\n::::\n")
    (book / "b.md").write_text("no exercise here\n")
    labels = {"ex-a-1": {"difficulty": 1, "importance": "core", "minutes": 10},
              "ex-a-2": {"difficulty": 3, "importance": "optional", "minutes": 25}}
    assert el.minutes_per_chapter(book, labels) == {"a": {"core": 10, "all": 35}}
    assert el.exercise_label_text(labels["ex-a-2"]) == \
        "Difficulty 3 of 3 (challenging) · importance: optional · time: about 25 min"


@pytest.mark.parametrize("entry, message", [
    ("{difficulty: 4, importance: core, minutes: 5}", "difficulty"),
    ("{difficulty: 1, importance: vital, minutes: 5}", "importance"),
    ("{difficulty: 1, importance: core, minutes: 0}", "minutes"),
    ("{difficulty: 1, importance: core, minutes: 2.5}", "minutes"),
    ("{difficulty: 1, importance: core}", "exactly"),
])
def test_a_bad_entry_is_refused_naming_it(tmp_path, entry, message):
    path = tmp_path / "labels.yaml"
    path.write_text(f"ex-x-1: {entry}\n")
    with pytest.raises(ValueError, match=f"ex-x-1.*{message}"):
        el.load_exercise_labels(path)
