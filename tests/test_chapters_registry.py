"""The one registry of the book's pages (data/chapters.yaml) and the limits file (data/limits.yaml)."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest
import yaml

from companion.book.budgets import colab_budget as cb
from companion.book.budgets import chapters_registry as reg
from companion.book.teaching.course_plan import COURSE

ROOT = Path(__file__).resolve().parents[1]


def _toc_pages_by_hand() -> list[str]:
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    return [f.split("/")[-1] for f in [toc["root"]] + [c["file"] for p in toc["parts"] for c in p["chapters"]]]


def test_every_page_of_the_toc_has_one_registry_entry_and_every_entry_a_page():
    pages = _toc_pages_by_hand()
    entries = yaml.safe_load((ROOT / "data" / "chapters.yaml").read_text())
    missing = [p for p in pages if p not in entries]
    stale = [e for e in entries if e not in pages]
    assert not missing, f"pages of _toc.yml with no entry in data/chapters.yaml: {missing}"
    assert not stale, f"entries of data/chapters.yaml naming no page of _toc.yml: {stale}"
    assert reg.toc_pages() == pages
    reg.check_registry()  # the package's own check agrees


def test_a_page_without_an_entry_or_an_entry_without_a_page_is_refused_by_name():
    registry = {"a": {}, "b": {}}
    with pytest.raises(ValueError, match=r"no entry for \['c'\] of _toc.yml"):
        reg.check_registry(["a", "b", "c"], registry)
    with pytest.raises(ValueError, match=r"names \['b'\], which _toc.yml does not list"):
        reg.check_registry(["a"], registry)


@pytest.mark.parametrize("entry, why", [
    ("{lectur: x}", "an entry holds only"),
    ("{reading: optional}", "'reading' without a 'lecture'"),
    ("{lecture: x, reading: skim}", "reading must be one of"),
    ("{budget: {cost: gpu, reason: reads every checkpoint from disk, cpu_s: 5}}", "budget cost"),
    ("{budget: {cost: io, reason: reads, cpu_s: 5}}", "more than 20 characters"),
    ("{budget: {cost: io, reason: reads every checkpoint from disk, cpu_s: 0}}", "positive number"),
    ("{budget: {cost: io, reason: reads every checkpoint from disk}}", "budget needs exactly"),
])
def test_a_malformed_entry_is_refused_naming_the_page(tmp_path, entry, why):
    p = tmp_path / "chapters.yaml"
    p.write_text(f"trial: {entry}\n")
    with pytest.raises(ValueError, match=f"trial: .*{why}"):
        reg.load_registry(p)


def test_the_course_plan_reads_each_lecture_from_the_registry_in_toc_order():
    entries = yaml.safe_load((ROOT / "data" / "chapters.yaml").read_text())
    pages = _toc_pages_by_hand()
    for lecture in COURSE:
        core = [p for p in pages if (entries[p] or {}).get("lecture") == lecture.title
                and (entries[p] or {}).get("reading", "core") == "core"]
        optional = [p for p in pages if (entries[p] or {}).get("lecture") == lecture.title
                    and (entries[p] or {}).get("reading") == "optional"]
        assert list(lecture.chapters) == core and list(lecture.optional) == optional, lecture.title
        assert core, f"{lecture.title} has no core reading"
    titles = {lec.title for lec in COURSE}
    unknown = {p: e["lecture"] for p, e in entries.items() if e and "lecture" in e and e["lecture"] not in titles}
    assert not unknown, f"entries naming no lecture of COURSE: {unknown}"


def test_the_limits_are_read_from_one_file_and_a_bad_one_is_refused(tmp_path):
    raw = yaml.safe_load((ROOT / "data" / "limits.yaml").read_text())
    assert reg.limits() == raw
    assert cb.H100_BUDGET_S == raw["h100_chapter_s"] and cb.T4_BUDGET_S == raw["t4_chapter_s"]
    p = tmp_path / "limits.yaml"
    p.write_text(yaml.safe_dump({**raw, "page_words": -1}))
    with pytest.raises(ValueError, match="page_words must be a positive whole number"):
        reg.limits(p)
    p.write_text(yaml.safe_dump({k: v for k, v in raw.items() if k != "t4_chapter_s"}))
    with pytest.raises(ValueError, match="expected exactly the keys"):
        reg.limits(p)


def test_a_chapter_with_a_budget_only_in_the_registry_gets_its_cost_and_an_estimated_row(monkeypatch):
    """A new host-bound chapter, not yet timed: its cost comes from its entry, its CPU time is
    the entry's cpu_s (marked estimated), its H100 and T4 times that plus the CUDA start-up
    allowance, as for a measured host-bound chapter without an H100 time."""
    budget = {"cost": "host_bound", "reason": "one small NumPy cell on the host", "cpu_s": 40}
    monkeypatch.setattr(cb, "registry_budgets", lambda: {"trial": budget})
    costs = cb.load_dominant_costs(chapters=[*cb.book_chapters(), "trial"])
    assert costs["trial"] == "host_bound" and costs["measuring"] == "host_bound"
    times = pd.DataFrame([
        {"chapter": "m", "size": "gpu", "device": "NVIDIA H100", "seconds": 70.0, "outcome": "finished",
         "date": "2026-11-25", "note": ""},
        {"chapter": "m", "size": "gpu", "device": "cpu", "seconds": 50.0, "outcome": "finished",
         "date": "2026-11-25", "note": ""}])
    t = cb.colab_estimates(times=times, costs={"m": "host_bound", "trial": "host_bound"},
                           chapters=["m", "trial"], since={}, live={}).set_index("chapter")
    allowance = 70.0 - 50.0
    assert t.at["trial", "cpu_source"] == "estimated" and t.at["trial", "cpu_s"] == 40
    assert t.at["trial", "h100_source"] == "estimated" and t.at["trial", "h100_s"] == 40 + allowance
    assert t.at["trial", "t4_s"] == 40 + allowance and t.at["trial", "over_t4_budget"] == "no"
    # once measured, the measurement wins over the entry's expectation
    timed = pd.concat([times, pd.DataFrame([{**times.iloc[1].to_dict(), "chapter": "trial", "seconds": 90.0}])])
    t = cb.colab_estimates(times=timed, costs={"m": "host_bound", "trial": "host_bound"},
                           chapters=["m", "trial"], since={}, live={}).set_index("chapter")
    assert t.at["trial", "cpu_source"] == "measured" and t.at["trial", "h100_s"] == 90 + allowance
    assert not math.isnan(t.at["trial", "t4_s"])


def test_a_chapter_with_a_cost_in_both_places_is_refused(monkeypatch):
    monkeypatch.setattr(cb, "registry_budgets", lambda: {"measuring": {"cost": "io"}})
    with pytest.raises(ValueError, match=r"\['measuring'\] listed twice \(here and with a budget"):
        cb.load_dominant_costs()
