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


def _compute_in_a_process(root, cache, log):
    """Run in a child process: the same table asked for at the same time as a sibling."""
    import time

    import companion.base.paths as p
    from companion.judge import claims as c

    p.ROOT = root
    import os
    os.environ["COMPANION_VERDICT_CACHE"] = str(cache)

    def compute():
        with open(log, "a") as f:
            f.write("computed\n")
        time.sleep(1.5)                      # long enough for the sibling to arrive meanwhile
        return pd.DataFrame({"key": ["a"], "status": ["holds"]})

    return c._disk_cached("t", compute)["status"].tolist()


def test_two_kernels_asking_at_once_compute_the_table_once(tmp_path):
    import multiprocessing as mp

    root = _tree(tmp_path / "root")
    log = tmp_path / "log.txt"
    with mp.get_context("fork").Pool(2) as pool:
        results = pool.starmap(_compute_in_a_process, [(root, tmp_path / "cache", log)] * 2)
    assert results == [["holds"], ["holds"]]
    assert log.read_text().count("computed") == 1, log.read_text()
