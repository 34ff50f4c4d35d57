"""The generated Colab notebooks run in a fresh environment that has only what they install.

A new virtual environment gets what a Colab runtime already has (a Jupyter kernel and
PyTorch, here the CPU build ``torch==2.13.0``) and nothing else: no ``companion``, no book
tool chain.  Each notebook then runs in that kernel from an empty working directory, as on
Colab; its first cell clones the repository at the pinned commit (this local repository
instead of the GitHub URL, since CI cannot reach GitHub), installs it and the two weight
packages, and the chapter must run through.  Committed state is what is tested: the clone
does not see uncommitted changes.

Cost: the chapters run in ``_toc.yml`` order until ``COMPANION_NOTEBOOK_BUDGET`` seconds
(default 300) are spent; chapters that did not fit are reported as skipped, by name.  The
first chapter always runs.  ``COMPANION_NOTEBOOKS=book/a,book/b`` picks the chapters.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from companion import notebooks as nbgen

ROOT = Path(__file__).resolve().parents[2]
WORK = ROOT / "_build" / "colab-check"
VENV = WORK / "venv"
KERNEL = "companion-fresh"
TORCH_SPEC = os.environ.get("TORCH_SPEC", "torch==2.13.0")
BUDGET_S = float(os.environ.get("COMPANION_NOTEBOOK_BUDGET", "300"))
CELL_TIMEOUT_S = 900


def _selected() -> list[str]:
    chapters = [c.docname for c in nbgen.book_chapters(ROOT)]
    wanted = os.environ.get("COMPANION_NOTEBOOKS")
    if wanted:
        names = [nbgen._strip_suffix(n) for n in wanted.split(",") if n.strip()]
        unknown = sorted(set(names) - set(chapters))
        if unknown:
            raise ValueError(f"COMPANION_NOTEBOOKS names chapters not in _toc.yml: {unknown}")
        return names
    return chapters


SELECTED = _selected()


def _clean_env() -> dict[str, str]:
    """The environment of the fresh kernel: nothing that points at this checkout's code."""
    env = {k: v for k, v in os.environ.items()
           if k not in {"PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME", "JUPYTER_PATH"}}
    env["PATH"] = f"{VENV / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["VIRTUAL_ENV"] = str(VENV)
    env["HF_HUB_OFFLINE"] = "1"
    env["TRANSFORMERS_OFFLINE"] = "1"
    env.pop("MPLBACKEND", None)  # the kernel's own default (inline figures), as on Colab
    return env


@pytest.fixture(scope="session")
def fresh_kernel():
    """A new virtual environment with a kernel and torch only; its kernel spec's name."""
    if not SELECTED:
        pytest.skip("_toc.yml lists no executable chapter")
    WORK.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(VENV)], check=True)
    py = str(VENV / "bin" / "python")
    pip = [py, "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    subprocess.run(pip + ["ipykernel", TORCH_SPEC], check=True, env=_clean_env())
    probe = subprocess.run(
        [py, "-c", "import importlib.util as u; print(u.find_spec('companion') is None,"
                   " u.find_spec('myst_nb') is None)"],
        capture_output=True, text=True, check=True, env=_clean_env(), cwd=WORK,
    )
    assert probe.stdout.split() == ["True", "True"], (
        "the fresh environment already sees the package or the book tool chain: "
        + probe.stdout
    )
    subprocess.run([py, "-m", "ipykernel", "install", "--prefix", str(VENV), "--name",
                    KERNEL, "--display-name", "fresh"], check=True, env=_clean_env(),
                   capture_output=True)
    return KERNEL


@pytest.fixture(scope="session")
def generated(tmp_path_factory):
    out = WORK / "notebooks"
    paths = nbgen.write_notebooks(ROOT, out, install_from=ROOT)
    return {p.relative_to(out).with_suffix("").as_posix(): p for p in paths}


_clock = {"start": None}


@pytest.mark.parametrize("docname", SELECTED)
def test_generated_notebook_runs_in_a_fresh_environment(docname, fresh_kernel, generated,
                                                        tmp_path, monkeypatch):
    import nbformat
    from nbclient import NotebookClient

    if _clock["start"] is None:
        _clock["start"] = time.monotonic()
    elapsed = time.monotonic() - _clock["start"]
    if docname != SELECTED[0] and elapsed > BUDGET_S:
        pytest.skip(f"{docname}: not run, the notebook check's budget of {BUDGET_S:.0f} s "
                    f"was spent ({elapsed:.0f} s); raise COMPANION_NOTEBOOK_BUDGET to run it")

    nb = nbformat.read(generated[docname], as_version=4)
    setup = nb.cells[0]
    assert nbgen.SETUP_TAG in setup.metadata.get("tags", [])
    assert f"REPOSITORY, REF = {str(ROOT)!r}" in setup.source

    env = _clean_env()
    env["JUPYTER_PATH"] = str(VENV / "share" / "jupyter")
    monkeypatch.setenv("JUPYTER_PATH", env["JUPYTER_PATH"])  # nbclient finds the spec there
    client = NotebookClient(nb, kernel_name=fresh_kernel, timeout=CELL_TIMEOUT_S,
                            resources={"metadata": {"path": str(tmp_path)}})
    started = time.monotonic()
    client.execute(env=env, cwd=str(tmp_path))
    took = time.monotonic() - started

    banner = "".join(o.get("text", "") for o in nb.cells[0].outputs if o.get("name") == "stdout")
    import companion

    assert f"companion {companion.__version__};" in banner, f"{docname}: {banner!r}"
    assert "run size 'ci'" in banner, f"{docname}: the CPU run should pick 'ci': {banner}"
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
              if o.get("output_type") == "error"]
    assert not errors, f"{docname}: {errors[0].get('ename')}: {errors[0].get('evalue')}"
    print(f"{docname}: ran in {took:.0f} s in the fresh environment")
