"""The catalogue of cached runs (book/reproducing_runs): every finished run counted once, under
the first pattern of data/runs/scripts.csv that matches it, and no run left undocumented."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from companion.train.runner.runs import run_catalogue, runs_root


def make_run(root: Path, name: str, seed: int, steps: int, device: str = "cpu (1 threads)",
             started: str = "2026-11-20T10:00:00Z", finished: bool = True) -> None:
    d = root / name
    d.mkdir(parents=True)
    (d / "provenance.json").write_text(json.dumps({"config": {"seed": seed, "steps": steps},
                                                   "hardware": {"device": device}, "started": started}))
    if finished:
        (d / "history.csv").write_text("step,quantity,layer,head,value\n")


def write_scripts(root: Path, *patterns: str) -> None:
    lines = ["pattern,script,plan,what"] + [f"{p},make_{i}.sh,,family {i}" for i, p in enumerate(patterns)]
    (root / "scripts.csv").write_text("\n".join(lines) + "\n")


def test_a_run_is_counted_under_the_first_pattern_it_matches(tmp_path):
    write_scripts(tmp_path, "regime-*-s3", "regime-*")
    make_run(tmp_path, "regime-a-encoder-s3", 3, 100)
    make_run(tmp_path, "regime-a-encoder-s0", 0, 100)
    make_run(tmp_path, "regime-a-decoder-s1", 1, 100, started="2026-11-22T00:00:00Z")
    table = run_catalogue(tmp_path).set_index("runs")
    assert table.loc["regime-*-s3", "n"] == 1 and table.loc["regime-*", "n"] == 2
    assert table.loc["regime-*", "seeds"] == "0-1"
    assert table.loc["regime-*", "started"] == "2026-11-20 to 2026-11-22"


def test_runs_in_progress_are_not_counted_and_devices_are_named(tmp_path):
    write_scripts(tmp_path, "blind-*")
    make_run(tmp_path, "blind-x-s10", 10, 10000)
    make_run(tmp_path, "blind-x-s11", 11, 10000, device="NVIDIA H100 80GB HBM3")
    make_run(tmp_path, "blind-x-s12", 12, 10000, finished=False)
    row = run_catalogue(tmp_path).iloc[0]
    assert row["n"] == 2 and row["seeds"] == "10-11" and row["steps"] == "10000"
    assert row["devices"] == "NVIDIA H100 80GB HBM3, cpu"


def test_a_run_no_pattern_matches_is_refused_by_name(tmp_path):
    write_scripts(tmp_path, "blind-*")
    make_run(tmp_path, "stray-run-s0", 0, 10)
    with pytest.raises(ValueError, match="stray-run-s0"):
        run_catalogue(tmp_path)


def test_every_cached_run_of_the_book_is_documented_once():
    root = runs_root()
    finished = [p.name for p in root.iterdir() if (p / "history.csv").is_file()]
    table = run_catalogue(root)  # raises if a run matches no pattern
    assert table["n"].sum() == len(finished)
    for row in table.itertuples():
        for script in row.script.split("; "):
            assert (root / script.split()[0]).is_file(), f"scripts.csv names a script that is not there: {script}"
        if row.plan:
            assert (root / row.plan.split()[0]).is_file() or (root.parent / row.plan.split()[0]).is_file(), row.plan


def test_the_machines_of_every_sitting_are_named_and_unrecorded_ones_say_so(tmp_path):
    write_scripts(tmp_path, "blind-*")
    make_run(tmp_path, "blind-x-s10", 10, 10000)
    make_run(tmp_path, "blind-x-s11", 11, 10000)
    prov = tmp_path / "blind-x-s11" / "provenance.json"
    record = json.loads(prov.read_text())
    record["sittings"] = [{"from_step": 0, "cpu_model": "Xeon A"}, {"from_step": 500, "cpu_model": "EPYC B"}]
    prov.write_text(json.dumps(record))
    assert run_catalogue(tmp_path).iloc[0]["machines"] == "EPYC B, Xeon A, not recorded"
    record["sittings"] = "Xeon A"
    prov.write_text(json.dumps(record))
    with pytest.raises(ValueError, match="sittings"):
        run_catalogue(tmp_path)
