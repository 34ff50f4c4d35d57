"""bench/v3_runs_seconds.py reads the run catalogue and keeps its medians to one-thread CPU runs."""

import importlib.util
import json
from pathlib import Path

import pytest

_spec = importlib.util.spec_from_file_location(
    "v3_runs_seconds", Path(__file__).resolve().parents[1] / "bench" / "v3_runs_seconds.py")
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)


def _row(run, mode, seed, cpu, threads=1, body="english-mix-v3", init="standard"):
    return {"run": run, "body": body, "mode": mode, "init": init, "seed": seed, "threads": threads,
            "s_per_step": 2 * cpu if cpu is not None else 0.2, "cpu_s_per_step": cpu}


def test_runs_on_more_threads_or_a_gpu_are_listed_but_left_out_of_medians_counts_and_ratios():
    rows = [_row("e30", "encoder", 30, 0.4), _row("d30", "decoder", 30, 0.5),
            _row("e31", "encoder", 31, 0.2, threads=4), _row("d31", "decoder", 31, 0.3),
            _row("e32", "encoder", 32, None), _row("d32", "decoder", 32, 0.6)]
    s = bench.summary(rows)
    assert s["runs_per_mode"] == {"encoder": 1, "decoder": 3}
    assert s["median_cpu_s_per_step"] == {"encoder": 0.4, "decoder": 0.5}
    assert sorted(s["left_out_of_medians"]) == ["e31", "e32"]
    assert s["decoder_to_encoder_cpu_per_seed"] == [pytest.approx(1.25)]   # only seed 30 has both arms timed
    assert len(s["runs"]) == 6


def test_the_same_seed_in_two_bodies_is_two_pairs_not_one():
    rows = [_row("me", "encoder", 1, 0.4), _row("md", "decoder", 1, 0.8),
            _row("we", "encoder", 1, 0.5, body="wikipedia-v3"), _row("wd", "decoder", 1, 0.5, body="wikipedia-v3")]
    assert bench.summary(rows)["decoder_to_encoder_cpu_per_seed"] == [1.0, 2.0]


def test_the_landed_runs_seconds_per_step_are_their_provenance_cpu_seconds_over_steps():
    """Against the provenance files read directly, not through the catalogue."""
    from companion.train.runner.runs import runs_root

    rows = bench.rows()
    if not rows:
        pytest.skip("no v3 run has landed")
    for r in rows:
        prov = json.loads((runs_root() / r["run"] / "provenance.json").read_text())
        assert r["steps"] == prov["config"]["steps"]
        if r["device"] != "CPU":                       # a GPU's work is not the host's CPU time
            assert r["cpu_s_per_step"] is None
            continue
        assert r["cpu_s_per_step"] == pytest.approx(prov["cpu_seconds"] / prov["config"]["steps"], abs=1e-5)
