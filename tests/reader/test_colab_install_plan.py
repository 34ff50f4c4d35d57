"""The set-up cell's pip plan against the versions Colab ships: nothing it has is replaced.

A fresh virtual environment gets the versions a Colab runtime already has imported or
installed (numpy 2.0.2, pandas 2.2.2, and PyTorch of the 2.x line: here the CPU build
``torch==2.13.0``, Colab's CUDA build being out of reach of CI).  Then pip is asked for its
plan exactly as the set-up cell asks it (``pip install --dry-run --report`` of the
package with its ``colab`` extra, the versions present pinned with ``-c``), and the cell's
own planner (:func:`companion.book.notebooks.plan_install`) must find that the plan installs
the companion, replaces none of numpy, torch and pandas, and needs no restart.

Creating the environment takes minutes, so this runs in the notebook check
(``make notebook-check``), not in the unit tests; the planner's decisions are unit-tested
in ``tests/test_notebooks.py``.  Set ``COLAB_VERSIONS`` to check other versions, e.g.
``COLAB_VERSIONS="numpy==2.0.2 pandas==2.2.2 torch==2.13.0"``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from companion.book import notebooks as nbgen
ROOT = Path(__file__).resolve().parents[2]
VENV = ROOT / "_build" / "colab-check" / "colab-versions-venv"
COLAB_VERSIONS = os.environ.get(
    "COLAB_VERSIONS",
    f"numpy==2.0.2 pandas==2.2.2 {os.environ.get('TORCH_SPEC', 'torch==2.13.0')}").split()


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "VIRTUAL_ENV"}}
    env["VIRTUAL_ENV"] = str(VENV)
    return env


@pytest.fixture(scope="module")
def colab_python() -> str:
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(VENV)], check=True)
    py = str(VENV / "bin" / "python")
    subprocess.run([py, "-m", "pip", "install", "-q", "--disable-pip-version-check",
                    *COLAB_VERSIONS], check=True, env=_env())
    return py


def _installed(py: str) -> dict[str, str]:
    out = subprocess.run(
        [py, "-c", "import importlib.metadata as m, json; print(json.dumps("
                   "{n: m.version(n) for n in ('numpy', 'torch', 'pandas')}))"],
        capture_output=True, text=True, check=True, env=_env())
    return json.loads(out.stdout)


def test_the_set_up_cells_plan_keeps_colabs_numpy_torch_and_pandas(colab_python, tmp_path):
    installed = _installed(colab_python)
    wanted = {s.split("==")[0]: s.split("==")[1] for s in COLAB_VERSIONS}
    assert {n: v.split("+")[0] for n, v in installed.items()} == wanted
    keep = tmp_path / "keep.txt"
    keep.write_text("".join(f"{n}=={v}\n" for n, v in installed.items()))
    cell = nbgen.setup_cell_source(str(ROOT), "HEAD")
    assert 'pins = ["-c", keep]' in cell and '"--dry-run", "--report", out, *pins' in cell
    report = tmp_path / "plan.json"
    plan_run = subprocess.run(
        [colab_python, "-m", "pip", "install", "-q", "--disable-pip-version-check",
         "--dry-run", "--report", str(report), "-c", str(keep),
         "-e", f"{ROOT}[{nbgen.INSTALL_EXTRA}]"],
        capture_output=True, text=True, env=_env())
    assert plan_run.returncode == 0, (
        "pip cannot install the companion beside Colab's versions "
        f"{installed}: {plan_run.stderr.strip().splitlines()[-1:]}")
    plan = nbgen.plan_install(json.loads(report.read_text()), installed,
                              ["numpy", "torch", "pandas"])
    assert plan["replace"] == {} and not plan["restart"], plan["reason"] or plan["replace"]
    assert any(p.startswith("companion==") for p in plan["install"]), plan["install"]
    assert not any(p.split("==")[0] in nbgen.PROTECTED for p in plan["install"]), plan["install"]
    print(f"pip's plan beside {installed}: {len(plan['install'])} packages, none of them "
          "numpy, torch or pandas")
