"""The premise runs and shares (nested dicts of numbers and tables) are kept on disk like the
verdict table: read back exactly, never served after the package or its data changed, and
filled once before the chapters run (python -m companion.judge.prepare)."""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest

import companion.base.paths as paths
from package_tree import package_tree as _tree
from companion.judge import cache, claims


def _value():
    per_type = pd.DataFrame({"type": np.array([3, 7], dtype="int64"), "ratio": [1 / 3, np.nan],
                             "ok": [True, False], "name": ["a", None]})
    return ({"d": 32, "steps": 400},
            {"packed": {"share": 0.1 + 0.2, "bagged": np.float64(2 / 3), "n": 5, "per_type": per_type},
             0: per_type.set_axis(pd.Index([5, 2]))})


def test_a_nested_value_reads_back_exactly_until_the_package_or_its_data_changes(tmp_path, monkeypatch):
    root = _tree(tmp_path / "root")
    monkeypatch.setattr(paths, "ROOT", root)
    monkeypatch.setenv("COMPANION_VERDICT_CACHE", str(tmp_path / "cache"))
    calls = []

    def compute():
        calls.append(1)
        return _value()

    for _ in range(2):
        monkeypatch.setattr(claims, "_CACHE", {})
        got = cache._disk_cached_value("v", compute, key=("v", None))
    assert len(calls) == 1                                     # the second process read the file
    assert cache._same(got, _value())
    assert got[1]["packed"]["share"] == 0.1 + 0.2              # every bit of a float, not 15 digits
    assert list(got[1]) == ["packed", 0]                       # the keys keep their types and order
    pd.testing.assert_index_equal(got[1][0].index, pd.Index([5, 2]), exact=True)
    (root / "data" / "t.csv").write_text("a\n2\n")            # the data changed: computed again
    monkeypatch.setattr(claims, "_CACHE", {})
    cache._disk_cached_value("v", compute)
    assert len(calls) == 2
    for f in (tmp_path / "cache").glob("*.json"):
        f.write_text("{torn")                                  # a torn file is computed again, not trusted
    monkeypatch.setattr(claims, "_CACHE", {})
    assert cache._same(cache._disk_cached_value("v", compute), _value())
    assert len(calls) == 3


def test_a_value_with_no_exact_json_form_is_kept_in_the_process_only(tmp_path, monkeypatch):
    monkeypatch.setattr(paths, "ROOT", _tree(tmp_path / "root"))
    monkeypatch.setenv("COMPANION_VERDICT_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(claims, "_CACHE", {})
    odd = {"when": pd.Timestamp("2025-01-01")}
    assert cache._disk_cached_value("odd", lambda: odd) is odd
    assert not list((tmp_path / "cache").glob("*.json"))


@pytest.mark.parametrize("a, b", [(1.0, 1.0 + 2 ** -52), (1, True), ({1: 2}, {"1": 2}), ((1,), [1]),
                                  (pd.DataFrame({"a": [1]}), pd.DataFrame({"a": [1.0]}))])
def test_a_value_read_back_differently_is_not_the_same(a, b):
    assert not cache._same(a, b)
    assert cache._same(b, cache._decode(json.loads(json.dumps(cache._encode(b)))))


def test_prepare_fills_every_shared_table_and_refuses_one_it_cannot_store(tmp_path, monkeypatch):
    from companion.base.errors import CompanionError
    from companion.base.runtime import run_size
    from companion.judge import prepare

    monkeypatch.setattr(paths, "ROOT", _tree(tmp_path / "root"))
    monkeypatch.setattr(claims, "_CACHE", {})
    frame = pd.DataFrame({"key": ["a"], "status": ["holds"]})
    tables = [("t1", lambda: cache._disk_cached("t1", lambda: frame)),
              ("v-{size}", lambda: cache._disk_cached_value(f"v-{run_size()}", lambda: {"x": [1.5]}))]
    monkeypatch.setattr(prepare, "_tables", lambda: tables)
    monkeypatch.setenv("COMPANION_VERDICT_CACHE", "")   # prepare sets it: restored (unset) afterwards
    took = prepare.prepare(tmp_path / "cache", out=open(tmp_path / "log", "w"))
    assert sorted(p.split("-")[0] for p in took) == ["t1", "v"]
    assert sorted(p.name for p in (tmp_path / "cache").glob("*.json")) == sorted(took)
    monkeypatch.setattr(claims, "_CACHE", {})
    tables.append(("odd", lambda: cache._disk_cached_value("odd", lambda: {"when": pd.Timestamp(0)})))
    with pytest.raises(CompanionError, match="odd was computed but not stored"):
        prepare.prepare(tmp_path / "cache", out=open(tmp_path / "log", "w"))


def test_the_chapters_run_after_the_verdict_cache_is_filled_and_read_it():
    """`make test` and `make chapters` depend on `prepare`, which fills the verdict cache before
    any worker starts; their kernels get the book's start-up file (which points them at that
    cache and keeps progress lines out of a chapter's output)."""
    make = (paths.ROOT / "Makefile").read_text()
    recipe = make.split("\nprepare: prepare-cache\n", 1)[1].split("\n\n", 1)[0]
    assert "$(PY) -m companion.judge.prepare" in recipe
    for target in ("tests-and-build", "chapters"):   # `make test` runs tests-and-build
        assert f"\n{target}: prepare\n" in make, target
        body = make.split(f"\n{target}: prepare\n", 1)[1].split("\n\n", 1)[0]
        assert re.search(r"\$\(KERNEL_ENV\)[^\n]* \$\(PY\) -m pytest", body) and "--nbval-lax" in body, target
    startup = (paths.ROOT / "book" / "_ipython" / "profile_default" / "startup" / "00_figures_as_images.py").read_text()
    assert 'setdefault("COMPANION_VERDICT_CACHE", str(_VERDICT_CACHE))' in startup
    assert '_os.environ["COMPANION_PROGRESS"] = "0"' in startup


def test_prepare_says_so_when_the_package_changes_while_a_table_is_computed(tmp_path, monkeypatch):
    from companion.base.errors import CompanionError
    from companion.judge import prepare

    root = _tree(tmp_path / "root")
    monkeypatch.setattr(paths, "ROOT", root)
    monkeypatch.setattr(claims, "_CACHE", {})

    def edited_meanwhile():
        (root / "data" / "t.csv").write_text("a\n3\n")        # an edit while the table is computed
        return pd.DataFrame({"a": [1]})

    monkeypatch.setenv("COMPANION_VERDICT_CACHE", "")
    monkeypatch.setattr(prepare, "_tables", lambda: [("t", lambda: cache._disk_cached("t", edited_meanwhile))])
    with pytest.raises(CompanionError, match="changed while t was computed"):
        prepare.prepare(tmp_path / "cache", out=open(tmp_path / "log", "w"))


def test_a_kernel_waiting_for_a_table_another_computes_writes_nothing_to_its_output(tmp_path, monkeypatch):
    """The wait on the cache's lock is silent: a line on a kernel's stderr would be saved with
    the chapter's cell, and the book build fails on it."""
    import fcntl
    import os
    import subprocess
    import sys
    import time

    root = _tree(tmp_path / "root")
    monkeypatch.setattr(paths, "ROOT", root)
    monkeypatch.setenv("COMPANION_VERDICT_CACHE", str(tmp_path / "cache"))
    path = cache._cache_path("v")
    path.parent.mkdir(parents=True)
    code = ("import sys, companion.base.paths as p; from pathlib import Path; p.ROOT = Path(sys.argv[1]); "
            "from companion.judge import cache; Path(sys.argv[2]).touch(); "
            "print(cache._disk_cached_value('v', lambda: {'x': 1.5}))")
    asking = tmp_path / "asking"
    with open(path.with_suffix(".lock"), "a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)                      # another kernel is computing the table
        child = subprocess.Popen([sys.executable, "-c", code, str(root), str(asking)], stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True, env={**os.environ, "COMPANION_PROGRESS": "1"})
        for _ in range(1200):                                 # until it asks for the table (imports done)
            if asking.exists() or child.poll() is not None:
                break
            time.sleep(0.1)
        time.sleep(1)
        assert child.poll() is None, child.communicate()      # it waits for the lock ...
        fcntl.flock(held, fcntl.LOCK_UN)
    out, err = child.communicate(timeout=120)
    assert child.returncode == 0 and out.strip() == "{'x': 1.5}", (out, err)
    assert err == ""                                          # ... and says nothing while it does


def test_with_two_jobs_a_second_process_fills_the_slow_tables_before_those_read_from_them(tmp_path, monkeypatch):
    import sys

    from companion.base.errors import CompanionError
    from companion.judge import prepare

    monkeypatch.setattr(paths, "ROOT", _tree(tmp_path / "root"))
    monkeypatch.setattr(claims, "_CACHE", {})
    monkeypatch.setenv("COMPANION_VERDICT_CACHE", "")
    order = []

    def table(name):
        return name, lambda: (order.append(name), cache._disk_cached(name, lambda: pd.DataFrame({"t": [name]})))[1]

    tables = [table("swap_tests"), table("premise_shares"), table("family_table")]
    monkeypatch.setattr(prepare, "_tables", lambda: tables)
    started = []

    class Second:                      # the second process, run here when waited for
        def __init__(self, argv):
            started.append(argv)
            self.returncode = None

        def wait(self):
            only = started[-1][started[-1].index("--only") + 1].split(",")
            prepare._fill([t for t in tables if t[0] in only], tmp_path / "cache", open(tmp_path / "log", "w"))
            self.returncode = 0
            return 0

        def poll(self):
            return self.returncode

    monkeypatch.setattr(prepare, "_start_second", Second)
    took = prepare.prepare(tmp_path / "cache", out=open(tmp_path / "log", "w"), jobs=2)
    assert started[0][:3] == [sys.executable, "-m", "companion.judge.prepare"]
    assert started[0][-2:] == ["--only", "swap_tests"]
    assert order == ["premise_shares", "swap_tests", "family_table"]   # the family table after both
    assert sorted(p.split("-")[0] for p in took) == ["family_table", "premise_shares"]
    assert len(list((tmp_path / "cache").glob("*.json"))) == 3
    with pytest.raises(CompanionError, match="no shared table 'swap'; choose among swap_tests, premise_shares"):
        prepare.prepare(tmp_path / "cache", only=["swap"])
    with pytest.raises(CompanionError, match="jobs must be a whole number"):
        prepare.prepare(tmp_path / "cache", jobs=0)
