"""What the two Colab checks share: the fresh environment a Colab runtime stands for, and
how cells run in it (tests/reader/test_colab_setup_cells.py installs into it,
tests/reader/test_colab_notebooks.py executes notebooks in it on request)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from companion.book.editions import notebooks as nbgen

ROOT = Path(__file__).resolve().parents[2]
WORK = ROOT / "_build" / "colab-check"
VENV = WORK / "venv"
KERNEL = "companion-fresh"
TORCH_SPEC = os.environ.get("TORCH_SPEC", "torch==2.13.0")
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
    env["PIP_NO_CACHE_DIR"] = "1"  # no second copy of every wheel in ~/.cache/pip
    env.pop("MPLBACKEND", None)  # the kernel's own default (inline figures), as on Colab
    return env


@pytest.fixture(scope="session")
def fresh_kernel():
    """A new virtual environment with a kernel and torch only; its kernel spec's name."""
    if not SELECTED:
        pytest.skip("_toc.yml lists no executable chapter")
    WORK.mkdir(parents=True, exist_ok=True)
    # the previous check's environment goes first, so that the disk guard counts its room
    shutil.rmtree(VENV, ignore_errors=True)
    short = _disk_short(["ipykernel", TORCH_SPEC.partition("=")[0], "companion[colab]"],
                        "the fresh environment (kernel, torch, the package's Colab extra)")
    if short:
        pytest.skip(short)
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
    yield KERNEL
    # kept until the next check removes it (above) or `make clean`: removing tens of
    # thousands of files takes 40 s to minutes on a disk mounted with online discard, and it
    # is the last thing `make test` waits for; no check after this one needs the room
    print(f"the fresh environment stays in {VENV} until the next notebook check or `make clean`")


def _code(cells) -> list[str]:
    return [c.source for c in cells if c.cell_type == "code"]


def _imports(sources: list[str]) -> list[str]:
    """``import`` statements of some cell sources, one per module (IPython lines dropped)."""
    import ast

    found: dict[str, set] = {}
    for src in sources:
        text = "\n".join(ln for ln in src.splitlines() if not ln.lstrip().startswith(("%", "!")))
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Import):
                for a in node.names:
                    found.setdefault(a.name, set())
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                found.setdefault(node.module, set()).update(a.name for a in node.names if a.name != "*")
    lines = []
    for module, names in sorted(found.items()):
        lines.append(f"import {module}")
        for n in sorted(names):
            lines.append(f"from {module} import {n}")
    return lines


def _run_cells(cells, kernel, tmp_path, monkeypatch):
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.v4.new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {"name": kernel, "display_name": "fresh", "language": "python"}
    env = _clean_env()
    env["JUPYTER_PATH"] = str(VENV / "share" / "jupyter")
    monkeypatch.setenv("JUPYTER_PATH", env["JUPYTER_PATH"])  # nbclient finds the spec there
    client = NotebookClient(nb, kernel_name=kernel, timeout=CELL_TIMEOUT_S,
                            resources={"metadata": {"path": str(tmp_path)}})
    client.execute(env=env, cwd=str(tmp_path))
    errors = [o for c in nb.cells for o in c.get("outputs", []) if o.get("output_type") == "error"]
    return nb, errors


def _zoo_bytes() -> int:
    """Bytes the zoo's pinned packages take in this environment (what the set-up cell installs)."""
    from importlib import metadata

    from companion.zoo.registry import ZOO

    total = 0
    for model in ZOO.values():
        for pin in model.pins:
            try:
                dist = metadata.distribution(pin.partition("==")[0])
            except metadata.PackageNotFoundError:
                continue
            total += sum(f.size or 0 for f in (dist.files or []))
    return total


def _closure_bytes(requirements: list[str]) -> int:
    """Installed bytes, in this environment, of some requirements and everything they pull in."""
    from importlib import metadata

    from packaging.requirements import Requirement

    seen: set[str] = set()
    total = 0
    todo = [Requirement(r) for r in requirements]
    while todo:
        req = todo.pop()
        key = req.name.lower().replace("_", "-")
        extras = sorted(req.extras)
        if (key, tuple(extras)) in seen:
            continue
        seen.add((key, tuple(extras)))
        try:
            dist = metadata.distribution(req.name)
        except metadata.PackageNotFoundError:
            continue
        if key not in seen:
            seen.add(key)
            total += sum(f.size or 0 for f in (dist.files or []))
        for spec in dist.requires or []:
            sub = Requirement(spec)
            envs = [{"extra": e} for e in extras] or [{"extra": ""}]
            if sub.marker is None or any(sub.marker.evaluate(e) for e in envs):
                todo.append(sub)
    return total


def _disk_short(requirements: list[str], what: str, free: int | None = None,
                need: int | None = None) -> str:
    """Why ``what`` cannot be installed here (too little disk), or "".

    pip unpacks each wheel beside its download, so an install needs about 1.5 times its
    installed size plus 0.5 GB of slack.  A full disk otherwise fails three layers down, as
    ``OSError: [Errno 28] No space left on device`` from pip, which says nothing about the book.
    """
    need = int(1.5 * _closure_bytes(requirements) + 0.5e9) if need is None else need
    free = shutil.disk_usage(WORK).free if free is None else free
    if free >= need:
        return ""
    return (f"{what} was skipped: {free / 1e9:.1f} GB free under {WORK}, it needs about "
            f"{need / 1e9:.1f} GB; free disk space and rerun `make setup-cell-check`")


def _disk_short_for_zoo(free: int | None = None, need: int | None = None) -> str:
    """Why the zoo set-up cell cannot run here (too little disk for its packages), or "":
    :func:`_disk_short` with the zoo's own size (its pins, not a requirement closure) and 1 GB
    of slack instead of 0.5."""
    need = int(1.5 * _zoo_bytes() + 1e9) if need is None else need
    return _disk_short([], "the zoo chapters' set-up cell", free=free, need=need)
