"""The book's verdict table is computed once per build and never served stale: a file of the
package or its data changed, or a torn cache file, means computing it again."""

from __future__ import annotations

import pandas as pd

import companion.base.paths as paths
from companion.judge import claims


def _tree(tmp_path):
    (tmp_path / "src" / "companion").mkdir(parents=True)
    (tmp_path / "data").mkdir()
    (tmp_path / "src" / "companion" / "m.py").write_text("x = 1\n")
    (tmp_path / "data" / "t.csv").write_text("a\n1\n")
    return tmp_path


def test_the_table_is_read_back_until_the_package_or_its_data_changes(tmp_path, monkeypatch):
    root = _tree(tmp_path / "root")
    monkeypatch.setattr(paths, "ROOT", root)
    monkeypatch.setenv("COMPANION_VERDICT_CACHE", str(tmp_path / "cache"))
    calls = []

    def compute():
        calls.append(1)
        return pd.DataFrame({"key": ["a", "b"], "status": ["holds", "refuted"], "rule_after": [True, False]})

    for _ in range(2):
        monkeypatch.setattr(claims, "_CACHE", {})
        got = claims._disk_cached("t", compute)
    assert len(calls) == 1
    pd.testing.assert_frame_equal(got, compute())
    (root / "data" / "t.csv").write_text("a\n2\n")            # the data changed
    monkeypatch.setattr(claims, "_CACHE", {})
    claims._disk_cached("t", compute)
    assert len(calls) == 3                                      # recomputed (and the check above called it once)
    for f in (tmp_path / "cache").iterdir():
        f.write_text("{torn")                                   # a torn file is recomputed, not trusted
    monkeypatch.setattr(claims, "_CACHE", {})
    assert claims._disk_cached("t", compute)["status"].tolist() == ["holds", "refuted"]
    assert len(calls) == 4


def test_without_the_variable_nothing_is_written(tmp_path, monkeypatch):
    monkeypatch.delenv("COMPANION_VERDICT_CACHE", raising=False)
    monkeypatch.setattr(claims, "_CACHE", {})
    claims._disk_cached("t", lambda: pd.DataFrame({"a": [1]}))
    assert not any(tmp_path.iterdir())
