"""What changed since the last release: rules history, verdict outcomes, CHANGELOG.md."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from companion.book.site import changes
ROOT = Path(__file__).resolve().parents[1]


def test_rules_changes_finds_changed_added_and_removed_claims():
    old = {"version": 1, "framework": {"level": 0.95, "gate": 1.0}, "bodies": {"a": {}},
           "claims": {"x": {"test": "paired-t", "sesoi": 0.0, "history": [1]},
                      "y": {"test": "rank"}, "gone": {"test": "t"}}}
    new = {"version": 2, "framework": {"level": 0.95, "gate": 2.0}, "bodies": {"a": {}, "b": {}},
           "claims": {"x": {"test": "paired-t", "sesoi": 0.1}, "y": {"test": "rank"},
                      "new": {"test": "t"}}}
    diff = changes.rules_changes(old, new)
    assert diff["versions"] == (1, 2)
    assert diff["framework"] == ["gate"]
    assert diff["bodies_added"] == ["b"] and diff["bodies_removed"] == []
    by = {c["claim"]: c for c in diff["claims"]}
    assert set(by) == {"x", "new", "gone"}  # y unchanged; history is not a change
    assert [f["field"] for f in by["x"]["fields"]] == ["sesoi"]
    assert by["x"]["fields"][0]["old"] == "0.0" and by["x"]["fields"][0]["new"] == "0.1"
    assert by["new"]["change"] == "added" and by["gone"]["change"] == "removed"


def test_the_book_rules_history_first_to_in_force():
    diff = changes.rules_changes(changes.load_rules(changes.RULES_FIRST), changes.load_rules(changes.RULES_CURRENT))
    assert diff["versions"] == (1, 4)
    by = {c["claim"]: c for c in diff["claims"]}
    # the training claims are read on bodies made after their rules: their body changed
    assert "body" in [f["field"] for f in by["table_1"]["fields"]]
    assert "english-mix-v3" in diff["bodies_added"] and "wikipedia-chars-v4" in diff["bodies_added"]
    # the claims read once are compared too (under 'evidence' in the file in force), not shown as removed
    assert not any(c["change"] == "removed" for c in diff["claims"]), diff["claims"]
    assert by["chars_table_1"]["change"] == "added"


def test_verdict_changes_keeps_only_claims_judged_differently():
    verdicts = [
        {"key": "a", "claim": "A", "status": "inconclusive", "status_first": "holds"},
        {"key": "b", "claim": "B", "status": "holds", "status_first": "holds"},
        {"key": "c", "claim": "C", "status": "holds", "status_first": ""},  # not judged by v1
        {"key": "d", "claim": "D", "status": "refuted", "status_first": "not testable here"},
    ]
    out = changes.verdict_changes(verdicts)
    assert [(c["key"], c["v1"], c["now"]) for c in out] == [
        ("a", "holds", "inconclusive"), ("d", "not testable here", "refuted")]
    import pandas as pd

    assert changes.verdict_changes(pd.DataFrame(verdicts)) == out


def test_current_verdicts_are_computed_once_per_state(tmp_path, monkeypatch):
    import pandas as pd

    from companion.book.site import book_cache

    calls = []

    def fake():
        calls.append(1)
        return pd.DataFrame([{"key": "a", "claim": "A", "kind": "empirical", "status": "holds",
                              "status_first": "inconclusive", "measured": "x"}])

    monkeypatch.setattr(changes, "verdicts_with_first", fake)   # all_verdicts with the first rules' readings
    monkeypatch.setattr(book_cache, "package_key", lambda root=None: {"sha256": "s1"})
    first = changes.current_verdicts(tmp_path)
    again = changes.current_verdicts(tmp_path)
    assert first == again == [{"key": "a", "claim": "A", "kind": "empirical", "status": "holds",
                               "status_first": "inconclusive"}]
    assert len(calls) == 1
    monkeypatch.setattr(book_cache, "package_key", lambda root=None: {"sha256": "s2"})
    changes.current_verdicts(tmp_path)
    assert len(calls) == 2  # another state of the package: computed again



def test_verdicts_stored_by_the_history_page_are_read_without_computing(tmp_path, monkeypatch):
    import pandas as pd

    from companion.book.site import book_cache

    from companion.judge import claims
    def fail():
        raise AssertionError("all_verdicts must not run when the history page stored them")

    monkeypatch.setattr(claims, "all_verdicts", fail)
    monkeypatch.setattr(book_cache, "package_key", lambda root=None: {"sha256": "s3"})
    df = pd.DataFrame([{"key": "b", "claim": "B", "kind": "empirical", "status": "negligible",
                        "status_first": "holds", "measured": "y"}])
    changes.store_verdicts(df, tmp_path)
    assert changes.current_verdicts(tmp_path) == [{"key": "b", "claim": "B", "kind": "empirical",
                                                    "status": "negligible", "status_first": "holds"}]

def test_changelog_follows_keep_a_changelog():
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    assert text.startswith("# Changelog")
    assert "keepachangelog.com" in text
    heads = re.findall(r"^## \[([^\]]+)\](?: - (\d{4}-\d{2}-\d{2}))?$", text, re.M)
    assert heads[0][0] == "Unreleased"
    releases = heads[1:]
    assert releases, "no release entry"
    for version, date in releases:
        assert re.fullmatch(r"\d+\.\d+\.\d+", version) and date, (version, date)
        assert re.search(rf"^\[{re.escape(version)}\]: http", text, re.M), f"no link for {version}"
    sections = set(re.findall(r"^### (\w+)$", text, re.M))
    assert sections <= {"Added", "Changed", "Deprecated", "Removed", "Fixed", "Security"}
    from companion import __version__
    assert releases[0][0] == __version__ or heads[0][0] == "Unreleased"


def test_a_rules_version_that_is_no_rules_file_is_refused_in_one_line(tmp_path):
    from companion.base.errors import CompanionError

    cases = {
        "missing.yaml": None,                                   # no such file
        "binary.yaml": b"\xff\xfe claims: {}",                   # not UTF-8
        "broken.yaml": b"claims: [unclosed",                     # not YAML
        "laughs.yaml": ("a: &a [x, x, x, x, x, x, x, x, x, x]\n"
                        + "".join(f"{c}: &{c} [{', '.join(['*' + p] * 10)}]\n"
                                  for p, c in zip("abcde", "bcdef"))
                        + "claims: *f\n").encode(),              # 10^6 nodes once expanded
        "other.yaml": b"title: a recipe\n",                      # YAML, but no claims
    }
    for name, content in cases.items():
        path = tmp_path / name
        if content is not None:
            path.write_bytes(content)
        with pytest.raises(CompanionError, match=name.replace(".", r"\.")):
            changes.load_rules(path)
    # the repository's two versions still load
    assert "claims" in changes.load_rules(changes.RULES_FIRST)
