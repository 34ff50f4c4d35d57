"""The snapshot that shows a refactor changed no conclusion names every change, and only changes."""

from __future__ import annotations

import json

from companion.book.checks import outcome_snapshot as snap


def _store(folder, chapter, entries):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{chapter}.glue.json").write_text(json.dumps(entries), encoding="utf-8")


def test_glued_values_are_read_per_chapter_with_figures_by_kind(tmp_path):
    _store(tmp_path / "jupyter_execute" / "book", "survey", {
        "n_models": {"data": {"text/plain": "15"}},
        "fig": {"data": {"image/png": "iVBOR...", "text/plain": "<Figure>"}}})
    assert snap.glued_values(tmp_path) == {"survey:n_models": "15", "survey:fig": "<image/png>"}


def test_a_glued_text_is_compared_as_the_page_shows_it(tmp_path):
    # myst-nb shows a glued text/plain read as a Python literal where it is one: "'0.50'"
    # (a text glued quoted) shows 0.50, the bare "0.50" shows 0.5, "'a'" shows a
    _store(tmp_path / "a", "fig3", {"quoted": {"data": {"text/plain": "'0.50'"}},
                                    "bare": {"data": {"text/plain": "0.50"}},
                                    "seeds": {"data": {"text/plain": "'0, 1, 2'"}}})
    assert snap.glued_values(tmp_path / "a") == {"fig3:quoted": "0.50", "fig3:bare": "0.5", "fig3:seeds": "0, 1, 2"}


def test_differences_name_a_changed_value_a_lost_key_and_a_new_key():
    before = {"verdicts": {"table_1": {"status": "refuted"}}, "glued": {"a:x": "1", "a:gone": "2"}}
    after = {"verdicts": {"table_1": {"status": "holds"}}, "glued": {"a:x": "1", "a:new": "3"}}
    lines = snap.differences(before, after)
    assert len(lines) == 3
    assert any("table_1" in l and "refuted" in l and "holds" in l for l in lines)
    assert any("a:gone: only before" in l for l in lines) and any("a:new: only after" in l for l in lines)
    assert snap.differences(before, json.loads(json.dumps(before))) == []


def test_compare_exits_one_on_a_difference_and_zero_without(tmp_path, capsys):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps({"verdicts": {}, "glued": {"c:v": "0.31"}}))
    b.write_text(json.dumps({"verdicts": {}, "glued": {"c:v": "0.32"}}))
    assert snap.main(["compare", str(a), str(a)]) == 0
    assert snap.main(["compare", str(a), str(b)]) == 1
    assert "'0.31' -> '0.32'" in capsys.readouterr().out
    assert snap.main(["compare", str(a), str(tmp_path / "missing.json")]) == 2
