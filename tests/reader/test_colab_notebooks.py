"""Every generated Colab notebook carries the build's answers and the body nbval executed.

A Colab notebook is a chapter with one set-up cell in front.  That the set-up cell installs
everything in a fresh environment is checked by tests/reader/test_colab_setup_cells.py (it
needs no build, so ``make test`` runs it beside the unit tests).  This check proves the rest
without executing any chapter a third time:

1. **Each notebook carries the build's answers.**  The notebooks of the site (and those
   this check writes) hold the build's value in place of every glued value, the outputs the
   build's execution gave each code cell, and a set-up cell of at most
   :data:`companion.book.site.executions.MAX_SETUP_LINES` lines
   (:func:`companion.book.site.executions.check_notebook`; the executions are read as the
   builders read them, and every chapter must have one with outputs).
2. **Each notebook's body is what nbval executed.**  After the set-up cell, a notebook's
   code cells are, one for one, the code cells of the chapter that ``make test`` executed
   under nbval with every cell passing (``_build/executed``, written by
   ``--nbval-save-executed``).  A chapter that failed, or was not executed, fails here.

So every notebook is checked, none skipped.  To execute the notebooks themselves in a
fresh environment as well (the slow, thorough check), set ``COMPANION_NOTEBOOK_EXECUTE=all``
(or a comma-separated list of chapters, e.g. ``book/measuring``).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from colab_env import ROOT, SELECTED, WORK, _code, _run_cells, fresh_kernel, nbgen  # noqa: F401 (a fixture)


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
