"""When a body's first landed run began (companion.train.runner.runs.first_start): the
rules-history appendix dates every edit and correction against it."""

from __future__ import annotations

import datetime as dt
import json

from companion.train.runner.runs import first_start


def _run(root, name, started, landed=True):
    d = root / name
    d.mkdir()
    (d / "provenance.json").write_text(json.dumps({"started": started} if started else {}))
    if landed:
        (d / "history.csv").write_text("step,quantity,layer,head,value\n")


def test_the_earliest_landed_start_over_every_pattern_of_every_body(tmp_path):
    _run(tmp_path, "a-s1", "2026-12-02T10:00:00Z")
    _run(tmp_path, "a-s2", "2026-12-01T23:30:00-01:00")        # 2026-12-02T00:30 UTC: the earliest
    _run(tmp_path, "b-s1", "2026-12-03T00:00:00Z")
    _run(tmp_path, "a-s3", "2026-11-01T00:00:00Z", landed=False)   # still running: not a landed run
    _run(tmp_path, "c-s1", "2026-11-02T00:00:00Z")                # matches no body
    _run(tmp_path, "b-s2", None)                                  # records no start
    bodies = {"one": {"pattern": "a-*"}, "two": {"patterns": ["b-*", "zz-*"]}}
    assert first_start(bodies, tmp_path) == dt.datetime(2026, 12, 2, 0, 30, tzinfo=dt.timezone.utc)
    assert first_start(bodies["two"], tmp_path) == dt.datetime(2026, 12, 3, tzinfo=dt.timezone.utc)
    assert first_start({"pattern": "zz-*"}, tmp_path) is None
