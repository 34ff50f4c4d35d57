"""The set-up cell's pip plan against the versions Colab ships: nothing it has is replaced.

A fresh virtual environment gets the versions a Colab runtime already has imported or
installed (numpy 2.0.2, pandas 2.2.2, and PyTorch of the 2.x line: here the CPU build
``torch==2.13.0``, a real installation, Colab's CUDA build being out of reach of CI).  Then
pip is asked for its plan exactly as the set-up cell's installer
(:func:`companion.book.editions.colab.install`) asks it: the requirement set is the installer's own (:func:`companion.book.editions.notebooks.install_arguments`: the package with its
``colab`` extra, nothing else), the versions present pinned with ``-c`` as the cell's first
try (:func:`companion.book.editions.notebooks.pin_sets`), through ``pip install --dry-run
--report``.  The cell's own planner (:func:`companion.book.editions.notebooks.plan_install`) must
find that the plan installs the companion, replaces none of numpy, torch and pandas, and
needs no restart; the report's ``install`` list is also read directly.

It needs the package index (for the companion's other requirements' metadata; nothing is
installed from the plan) and skips, saying so, when the index cannot be reached.  Creating
the environment takes a few minutes the first time; it is kept under
``_build/colab-check/`` and reused while it holds the versions asked for, so a second run
takes about a minute (the dry run).  It runs in the notebook checks (``make
colab-plan-check``), not in the unit tests; the planner's decisions are unit-tested in
``tests/test_notebooks.py``.  Set ``COLAB_VERSIONS`` to check other versions, e.g.
``COLAB_VERSIONS="numpy==2.0.2 pandas==2.2.2 torch==2.13.0"``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from companion.book.editions import notebooks as nbgen

ROOT = Path(__file__).resolve().parents[2]
VENV = ROOT / "_build" / "colab-check" / "colab-versions-venv"
COLAB_VERSIONS = os.environ.get(
    "COLAB_VERSIONS",
    f"numpy==2.0.2 pandas==2.2.2 {os.environ.get('TORCH_SPEC', 'torch==2.13.0')}").split()
WANTED = {s.split("==")[0]: s.split("==")[1] for s in COLAB_VERSIONS}

pytestmark = pytest.mark.slow


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "VIRTUAL_ENV"}}
    env["VIRTUAL_ENV"] = str(VENV)
    return env


def _index_url() -> str:
    """The index pip would ask: ``$PIP_INDEX_URL``, pip's configured ``index-url``, else PyPI."""
    url = os.environ.get("PIP_INDEX_URL")
    if not url:
        got = subprocess.run([sys.executable, "-m", "pip", "config", "get", "global.index-url"],
                             capture_output=True, text=True)
        url = got.stdout.strip() if got.returncode == 0 and got.stdout.strip() else ""
    return (url or "https://pypi.org/simple").rstrip("/") + "/"


@pytest.fixture(scope="module")
def index_reachable() -> str:
    url = _index_url()
    try:
        with urllib.request.urlopen(urllib.request.Request(url + "pip/"), timeout=15) as r:
            r.read(1)
    except (urllib.error.URLError, OSError) as err:
        pytest.skip(f"the package index {url} cannot be reached ({err}); pip's plan needs it")
    return url


def _installed(py: str) -> dict[str, str]:
    out = subprocess.run(
        [py, "-c", "import importlib.metadata as m, json; print(json.dumps("
                   "{n: m.version(n) for n in ('numpy', 'torch', 'pandas')}))"],
        capture_output=True, text=True, env=_env())
    return json.loads(out.stdout) if out.returncode == 0 else {}


def _matches(installed: dict[str, str]) -> bool:
    return {n: v.split("+")[0] for n, v in installed.items()} == WANTED


@pytest.fixture(scope="module")
def colab_python(index_reachable) -> str:
    """A virtual environment holding Colab's versions and nothing of the companion."""
    py = str(VENV / "bin" / "python")
    if not (Path(py).is_file() and _matches(_installed(py))):
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(VENV)], check=True)
        subprocess.run([py, "-m", "pip", "install", "-q", "--disable-pip-version-check",
                        *COLAB_VERSIONS], check=True, env=_env())
    probe = subprocess.run([py, "-c", "import importlib.util as u; print(u.find_spec('companion'))"],
                           capture_output=True, text=True, env=_env(), cwd=VENV)
    assert probe.stdout.strip() == "None", "the fresh environment already sees the companion"
    return py


def test_the_set_up_cells_plan_keeps_colabs_numpy_torch_and_pandas(colab_python, tmp_path):
    installed = _installed(colab_python)
    assert _matches(installed), installed
    # the requirement set the cell passes to pip: the package alone, never the protected ones
    wanted = nbgen.install_arguments(str(ROOT), nbgen.INSTALL_EXTRA)
    assert not any(p in " ".join(wanted).lower() for p in nbgen.PROTECTED), wanted
    # the cell installs the repository alone (--no-deps); the packaged set-up asks pip for the plan
    import inspect

    from companion.book.editions import colab

    cell = nbgen.setup_cell_source(str(ROOT), "HEAD")
    assert '"--no-deps"' in cell and "from companion.book.editions.colab import setup" in cell
    installer = inspect.getsource(colab.install) + inspect.getsource(colab._pip_plan)
    assert "wanted = install_arguments(str(root), INSTALL_EXTRA)" in installer
    assert '"--dry-run", "--report", str(out), *pins' in installer
    first_try = nbgen.pin_sets(installed)[0]
    assert first_try == installed
    keep = tmp_path / "keep.txt"
    keep.write_text("".join(f"{n}=={v}\n" for n, v in first_try.items()))
    report = tmp_path / "plan.json"
    plan_run = subprocess.run(
        [colab_python, "-m", "pip", "install", "-q", "--disable-pip-version-check",
         "--dry-run", "--report", str(report), "-c", str(keep), *wanted],
        capture_output=True, text=True, env=_env())
    assert plan_run.returncode == 0, (
        "pip cannot install the companion beside Colab's versions "
        f"{installed}: {plan_run.stderr.strip().splitlines()[-1:]}")
    raw = json.loads(report.read_text())
    names = {item["metadata"]["name"].lower() for item in raw["install"]}
    assert "companion" in names and not names & set(nbgen.PROTECTED), sorted(names)
    plan = nbgen.plan_install(raw, installed, ["numpy", "torch", "pandas"])
    assert plan["replace"] == {} and not plan["restart"], plan["reason"] or plan["replace"]
    assert not any(p.split("==")[0] in nbgen.PROTECTED for p in plan["install"]), plan["install"]
    print(f"pip's plan beside {installed}: {len(plan['install'])} packages, none of them "
          "numpy, torch or pandas")
