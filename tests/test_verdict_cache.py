"""The book's verdict table is computed once per build and never served stale: a file of the
package or its data changed, or a torn cache file, means computing it again."""

from __future__ import annotations

import pandas as pd

import companion.base.paths as paths
from package_tree import package_tree as _tree
from companion.judge import claims


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


def _fake_claims(monkeypatch, calls):
    """Two claims, one mathematical and one empirical, that count how often they are checked."""
    def math_claim():
        calls.append("math")
        return claims.Verdict(key="math_claim", claim="a lemma", status="holds", measured="exact",
                              size="n/a", chapter="errata", label="L1")

    def data_claim():
        calls.append("data")
        return claims.Verdict(key="data_claim", claim="a trend", status="holds", measured="+0.3",
                              size="3 seeds", chapter="survey", label="F1", kind="empirical")

    monkeypatch.setattr(claims, "VERDICTS", (math_claim, data_claim))
    monkeypatch.setitem(claims.MATH_CHECKS, "math_claim", "closed form")
    monkeypatch.setattr(claims, "_CACHE", {})


def test_a_verdict_is_read_from_a_table_already_computed_without_checking_the_claim_again(monkeypatch, tmp_path):
    calls = []
    _fake_claims(monkeypatch, calls)
    monkeypatch.setenv("COMPANION_VERDICT_CACHE", str(tmp_path))
    table = pd.DataFrame([{**claims.Verdict(key="math_claim", claim="a lemma", status="holds", measured="exact",
                                            size="n/a", chapter="errata", label="L1").as_dict()},
                          {**claims.Verdict(key="data_claim", claim="a trend", status="inconclusive",
                                            measured="+0.3", size="3 seeds", chapter="survey", label="F1",
                                            kind="empirical").as_dict()}])
    path = claims._cache_path("all_verdicts")
    import json

    from companion.judge import cache as jc

    # as another kernel left it: the cache's own JSON, with the digest written with it
    path.write_text(jc._sealed(json.dumps(jc._encode(table)), path.name))
    assert claims.verdict("data_claim").status == "inconclusive"   # the table's, with its family carried in
    assert claims.verdict("math_claim").status == "holds"
    assert calls == []


def test_without_a_table_a_mathematical_claim_is_checked_alone(monkeypatch):
    calls = []
    _fake_claims(monkeypatch, calls)
    monkeypatch.delenv("COMPANION_VERDICT_CACHE", raising=False)
    monkeypatch.setattr(claims, "all_verdicts", lambda: (_ for _ in ()).throw(AssertionError("table computed")))
    assert claims.verdict("math_claim").measured == "exact"
    assert calls == ["math"]


def test_an_empirical_claim_is_read_from_the_table_and_never_checked_twice(monkeypatch):
    """Cold, an empirical claim's own check runs once, inside the table, not again beside it."""
    calls = []
    _fake_claims(monkeypatch, calls)
    monkeypatch.delenv("COMPANION_VERDICT_CACHE", raising=False)
    monkeypatch.setattr(claims, "family_table",
                        lambda: pd.DataFrame(columns=["key", "claim", "outcome", "p_decides", "family",
                                                      "level (one-sided)", "stands"]))
    assert claims.verdict("data_claim").measured == "+0.3"
    assert sorted(calls) == ["data", "math"]           # the table checked each claim once
    assert claims.verdict("math_claim").status == "holds" and sorted(calls) == ["data", "math"]


def test_every_mathematical_verdict_survives_the_cache_file_unchanged():
    """The cache's JSON gives back each mathematical claim's verdict field for field, so a page
    reading the table states what the claim's own check states."""
    import io

    checked = 0
    for fn in claims.VERDICTS:
        if fn.__name__ not in claims.MATH_CHECKS:   # the empirical ones: computed for the table only
            continue
        v, checked = fn(), checked + 1
        assert v.kind == "mathematical", v.key          # read alone, cold: so it must be one
        back = pd.read_json(io.StringIO(pd.DataFrame([v.as_dict()]).to_json(orient="table", index=False)),
                            orient="table")
        row = back.set_index("key").loc[v.key].to_dict()
        assert claims.Verdict(key=v.key, **row) == v, v.key
    assert checked >= 10


def test_a_table_that_json_would_change_is_kept_in_the_process_and_never_written(tmp_path, monkeypatch):
    """A column of dates has no exact JSON form here: such a table is never served from the disk.
    A small integer type and strings held as objects (the family table's key column, which
    pandas' own JSON turned into its string dtype) are written and read back as they were."""
    root = _tree(tmp_path / "root")
    monkeypatch.setattr(paths, "ROOT", root)
    monkeypatch.setenv("COMPANION_VERDICT_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(claims, "_CACHE", {})
    odd = pd.DataFrame({"key": ["a"], "when": [pd.Timestamp("2025-01-01")]})
    assert claims._disk_cached("odd", lambda: odd) is odd
    fine = pd.DataFrame({"key": pd.Series(["a"], dtype=object), "p": [0.1], "n": pd.Series([3], dtype="int8"),
                         "ok": [True]})
    claims._disk_cached("fine", lambda: fine)
    assert sorted(p.name.split("-")[0] for p in (tmp_path / "cache").glob("*.json")) == ["fine"]
    monkeypatch.setattr(claims, "_CACHE", {})
    pd.testing.assert_frame_equal(claims._disk_cached("fine", lambda: None), fine, check_exact=True)
