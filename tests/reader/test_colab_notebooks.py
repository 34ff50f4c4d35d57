"""Every generated Colab notebook would run: set-up for real, bodies as nbval ran them.

A Colab notebook is a chapter with one set-up cell in front. The check proves each part
without executing any chapter a third time:

1. **The set-up cell runs in a fresh environment.**  A new virtual environment gets what a
   Colab runtime already has (a Jupyter kernel and PyTorch, here the CPU build
   ``torch==2.13.0``) and nothing else.  The set-up cell runs there from an empty working
   directory, as on Colab: it clones the repository at the pinned commit (this local
   repository instead of the GitHub URL, since CI cannot reach GitHub) and installs it with
   the weight packages.  Committed state is what is installed.
2. **Every module the notebooks import is importable there.**  The import statements of
   every notebook's code cells are collected (with the ``ast`` module) and executed in that
   fresh kernel, names included (``from m import f`` checks that ``f`` exists).
3. **Each notebook carries the build's answers.**  The notebooks of the site (and those
   this check writes) hold the build's value in place of every glued value, the outputs the
   build's execution gave each code cell, and a set-up cell of at most
   :data:`companion.book.site.executions.MAX_SETUP_LINES` lines
   (:func:`companion.book.site.executions.check_notebook`; the executions are read as the
   builders read them, and every chapter must have one with outputs).
4. **Each notebook's body is what nbval executed.**  After the set-up cell, a notebook's
   code cells are, one for one, the code cells of the chapter that ``make test`` executed
   under nbval with every cell passing (``_build/executed``, written by
   ``--nbval-save-executed``).  A chapter that failed, or was not executed, fails here.

So every notebook is checked, none skipped.  One exception is said aloud: where the disk
has too little room for the weight packages (about 2.4 GB), the zoo chapters' set-up cell is
not run and the test is reported skipped with the free and needed sizes (pip would otherwise
fail with "No space left on device").  To execute the notebooks themselves in the
fresh environment as well (the slow, thorough check), set
``COMPANION_NOTEBOOK_EXECUTE=all`` (or a comma-separated list of chapters, e.g.
``book/measuring``).
"""

from __future__ import annotations

import os
import subprocess
import shutil
import sys
import time
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


@pytest.fixture(scope="session")
def generated(tmp_path_factory):
    out = WORK / "notebooks"
    paths = nbgen.write_notebooks(ROOT, out, install_from=ROOT)
    return {p.relative_to(out).with_suffix("").as_posix(): p for p in paths}


EXECUTED = ROOT / "_build" / "executed"
SITE_NOTEBOOKS = ROOT / "_build" / "html" / nbgen.NOTEBOOK_DIR


def _execute_selection() -> list[str]:
    wanted = os.environ.get("COMPANION_NOTEBOOK_EXECUTE", "").strip()
    if not wanted:
        return []
    if wanted == "all":
        return SELECTED
    return [nbgen._strip_suffix(n) for n in wanted.split(",") if n.strip()]


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
            f"{need / 1e9:.1f} GB; free disk space and rerun `make notebook-check`")


def test_a_short_disk_is_named_before_pip_fails():
    assert _disk_short(["torch"], "x", free=5 * 10**9, need=4 * 10**9) == ""
    msg = _disk_short(["torch"], "the kernel", free=int(0.3e9), need=int(1.6e9))
    assert "the kernel was skipped: 0.3 GB free" in msg and "1.6 GB" in msg
    # the estimate follows requirements: torch alone is smaller than torch and what needs it
    alone = _closure_bytes(["torch"])
    assert alone > 10**8, "torch should be installed in the test environment"
    assert _closure_bytes(["companion[colab]", "torch"]) > alone


def _disk_short_for_zoo(free: int | None = None, need: int | None = None) -> str:
    """Why the zoo set-up cell cannot run here (too little disk for its packages), or "":
    :func:`_disk_short` with the zoo's own size (its pins, not a requirement closure) and 1 GB
    of slack instead of 0.5."""
    need = int(1.5 * _zoo_bytes() + 1e9) if need is None else need
    return _disk_short([], "the zoo chapters' set-up cell", free=free, need=need)


def test_disk_guard_names_the_shortfall_and_the_fix():
    assert _disk_short_for_zoo(free=5 * 10**9, need=4 * 10**9) == ""
    msg = _disk_short_for_zoo(free=int(0.3e9), need=int(4.6e9))
    assert "0.3 GB free" in msg and "4.6 GB" in msg and "make notebook-check" in msg
    assert _zoo_bytes() > 10**9, "the zoo's packages should be installed in the test environment"


def test_setup_cell_installs_everything_the_notebooks_import(fresh_kernel, generated, tmp_path,
                                                           monkeypatch):
    import nbformat

    nbs = {d: nbformat.read(generated[d], as_version=4) for d in SELECTED}
    setups = {d: nb.cells[nbgen.setup_index(nb)] for d, nb in nbs.items()}
    for d, cell in setups.items():
        assert nbgen.SETUP_TAG in cell.metadata.get("tags", []), f"{d}: no set-up cell first"
        assert f"REPOSITORY, REF = {ROOT.as_uri()!r}" in cell.source
    # one run of each distinct set-up cell (chapters that need more install more)
    probe = "\n".join(_imports([src for nb in nbs.values() for src in _code(nb.cells[nbgen.setup_index(nb) + 1:])]))
    not_run = []
    for source in sorted({c.source for c in setups.values()}):
        cells = [nbformat.v4.new_code_cell(source), nbformat.v4.new_code_cell(probe)]
        if "setup(zoo=True)" in source:  # a zoo chapter: its packages, not just a cache
            short = _disk_short_for_zoo()
            if short:
                not_run.append(short)
                continue
            cells.append(nbformat.v4.new_code_cell(
                "from companion.zoo.registry import ZOO, _installed\n"
                "missing = {n: _installed(m) for n, m in ZOO.items() if _installed(m)}\n"
                "assert not missing, f'zoo packages missing after the set-up cell: {missing}'"))
        nb, errors = _run_cells(cells, fresh_kernel, tmp_path, monkeypatch)
        banner = "".join(o.get("text", "") for o in nb.cells[0].outputs if o.get("name") == "stdout")
        import companion

        assert f"companion {companion.__version__};" in banner, banner
        assert "run size 'ci'" in banner, f"the CPU run should pick 'ci': {banner}"
        assert not errors, f"{errors[0].get('ename')}: {errors[0].get('evalue')}"
    print(f"set-up cell(s) ran in the fresh environment; {probe.count(chr(10)) + 1} imports probed")
    if not_run:
        pytest.skip("the other set-up cells passed; " + "; ".join(not_run))


def check_answers(folder: Path, label: str) -> None:
    """Every chapter's notebook under ``folder`` carries the build's answers; prints the counts."""
    from companion.book.site.executions import check_notebooks

    problems, summary = check_notebooks(nbgen.book_chapters(ROOT), ROOT / "_build", folder)
    print(f"{label}: {summary}")
    assert not problems, "\n".join(problems)


def test_the_sites_notebooks_carry_the_builds_values_and_outputs():
    if not (SITE_NOTEBOOKS).is_dir():
        pytest.fail(f"no notebooks at {SITE_NOTEBOOKS}: build the book first (make book)")
    check_answers(SITE_NOTEBOOKS, "Colab notebooks of the site")


def test_the_notebooks_written_from_the_build_carry_its_values_and_outputs(generated):
    check_answers(WORK / "notebooks", "Colab notebooks written by this check")


@pytest.mark.parametrize("docname", SELECTED)
def test_notebook_body_is_the_chapter_nbval_executed(docname, generated):
    import nbformat

    executed = EXECUTED / f"{docname}.ipynb"
    if not EXECUTED.is_dir():
        pytest.fail(f"{EXECUTED} does not exist: run `make test` (nbval saves the executed "
                    "chapters there) before the notebook check")
    assert executed.is_file(), (
        f"{docname}: nbval did not execute this chapter with every cell passing")
    nb_ = nbformat.read(generated[docname], as_version=4)
    body = _code(nb_.cells[nbgen.setup_index(nb_) + 1:])
    ran = _code(nbformat.read(executed, as_version=4).cells)
    assert body == ran, f"{docname}: the notebook's code differs from the chapter nbval executed"


@pytest.mark.parametrize("docname", _execute_selection() or [pytest.param(None, marks=pytest.mark.skip(
    reason="set COMPANION_NOTEBOOK_EXECUTE=all to also execute the notebooks in the fresh environment"))])
def test_generated_notebook_runs_in_a_fresh_environment(docname, fresh_kernel, generated,
                                                        tmp_path, monkeypatch):
    import nbformat

    nb = nbformat.read(generated[docname], as_version=4)
    started = time.monotonic()
    nb, errors = _run_cells(nb.cells, fresh_kernel, tmp_path, monkeypatch)
    assert not errors, f"{docname}: {errors[0].get('ename')}: {errors[0].get('evalue')}"
    print(f"{docname}: ran in {time.monotonic() - started:.0f} s in the fresh environment")
