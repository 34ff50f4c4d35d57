"""The run scripts refuse a misspelt set and never copy a short trial run as a finished one."""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_a_misspelt_set_is_refused_before_anything_starts():
    out = subprocess.run(["bash", str(ROOT / "data/runs/make_blind_runs.sh"), "primery"],
                         capture_output=True, text=True, timeout=30)
    assert out.returncode == 2 and "unknown set 'primery'" in out.stderr and out.stderr.count("\n") == 1


def _run(tmp_path, asked, last):
    d = tmp_path / f"run-{asked}-{last}"
    d.mkdir()
    (d / "provenance.json").write_text(json.dumps({"config": {"steps": asked}}))
    (d / "history.csv").write_text("step,quantity,layer,head,value\n0,eval_loss,-1,-1,8.4\n"
                                   f"{last},eval_loss,-1,-1,5.1\n")
    return d


def _finished(d, steps):
    script = f'PY="{sys.executable}"; eval "$(sed -n "/^finished()/,/^}}/p" {ROOT}/data/runs/common.sh)"; finished {d} {steps}'
    return subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=60, env=dict(os.environ))


def test_only_a_run_that_reached_its_horizon_counts_as_finished(tmp_path):
    assert _finished(_run(tmp_path, 10000, 10000), 10000).returncode == 0
    short = _finished(_run(tmp_path, 200, 200), 10000)
    assert short.returncode == 1 and "a run of 200 steps that reached step 200" in short.stderr
    cut = _finished(_run(tmp_path, 10000, 4750), 10000)
    assert cut.returncode == 1 and "reached step 4750" in cut.stderr
