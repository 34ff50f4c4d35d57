"""Collect the book's MyST Markdown chapters as notebooks for nbval.

Chapters stay ``.md`` files (jupytext MyST format); no ``.ipynb`` twin is committed.  When
pytest runs with ``--nbval`` or ``--nbval-lax``, every ``book/**/*.md`` file that carries a
jupytext header is read with jupytext and handed to nbval, which executes it cell by cell in
a fresh kernel.  With ``--nbval-lax`` a cell fails only when it raises, so the assertions
inside the cells are what is checked.

``--nbval-save-executed DIR`` writes each chapter that nbval executed with every cell
passing, outputs included, to ``DIR/<docname>.ipynb`` (with its execution time beside it);
``python -m companion.book.site.book_cache seed DIR`` hands those executions to the book build, so a
chapter is executed once per ``make test`` (see the Makefile).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("MPLBACKEND", "Agg")

BOOK = Path(__file__).parent / "book"


def _is_myst_notebook(path: Path) -> bool:
    if path.suffix != ".md" or BOOK not in path.resolve().parents:
        return False
    head = path.read_text(encoding="utf-8")[:600]
    return head.startswith("---") and "jupytext:" in head and "kernelspec:" in head


class _JupytextReader:
    """Stands in for ``nbformat`` inside nbval: reads MyST Markdown through jupytext."""

    @staticmethod
    def read(path, as_version=4):
        import jupytext

        return jupytext.read(path)


def pytest_collect_file(file_path: Path, parent):
    opt = parent.config.option
    if not (getattr(opt, "nbval", False) or getattr(opt, "nbval_lax", False)):
        return None
    if not _is_myst_notebook(file_path):
        return None
    from nbval.plugin import IPyNbFile

    class MystNotebook(IPyNbFile):
        def collect(self):
            import nbval.plugin as plugin

            real = plugin.nbformat
            plugin.nbformat = _JupytextReader
            try:
                yield from super().collect()
            finally:
                plugin.nbformat = real

    return MystNotebook.from_parent(parent, path=file_path)


def pytest_addoption(parser):
    parser.addoption(
        "--nbval-save-executed", default=None, metavar="DIR",
        help="write every chapter whose cells all passed, with their outputs, to DIR",
    )
    parser.addoption(
        "--reader-checks", action="store_true", default=False,
        help="run tests/reader: the built site in headless Chromium and the generated "
        "Colab notebooks in a fresh virtual environment (needs `make book` first)",
    )


def pytest_xdist_auto_num_workers(config):
    return min(2, os.cpu_count() or 1)


@pytest.hookimpl(tryfirst=True)
def pytest_ignore_collect(collection_path: Path, config):
    # the built site and virtual environments are never test sources
    parts = set(collection_path.parts)
    if {"_build", ".venv", "node_modules"} & parts:
        return True
    # the reader checks need a built site; they run as their own step (`make reader-checks`)
    reader = Path(__file__).parent / "tests" / "reader"
    if collection_path == reader and not config.getoption("--reader-checks"):
        return True
    return None


# --------------------------------------------------------------------------- saved executions
_cell_seconds: dict[str, float] = {}
_failed_files: set[str] = set()


def _notebook_file(item) -> str | None:
    from nbval.plugin import IPyNbFile

    parent = getattr(item, "parent", None)
    return str(parent.path) if isinstance(parent, IPyNbFile) else None


def pytest_runtest_logreport(report):
    path = report.nodeid.split("::")[0]
    if report.failed or (report.skipped and report.when == "call"):
        _failed_files.add(path)
    if report.when == "call":
        _cell_seconds[path] = _cell_seconds.get(path, 0.0) + report.duration


def pytest_sessionfinish(session, exitstatus):
    out = session.config.getoption("--nbval-save-executed", default=None)
    if not out:
        return
    import json

    import nbformat

    files: dict[str, list] = {}
    for item in session.items:
        path = _notebook_file(item)
        if path is not None:
            files.setdefault(path, []).append(item)
    root = Path(__file__).parent
    for path, items in files.items():
        nodeid = items[0].nodeid.split("::")[0]
        if nodeid in _failed_files or any(i.test_outputs is None for i in items):
            continue  # not executed here (another worker), or not every cell passed
        for item in items:
            item.cell.outputs = item.test_outputs
        nb = items[0].parent.nb
        docname = Path(path).resolve().relative_to(root).with_suffix("").as_posix()
        target = Path(out) / f"{docname}.ipynb"
        target.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, str(target))
        target.with_suffix(".json").write_text(json.dumps(
            {"docname": docname, "execution_seconds": round(_cell_seconds.get(nodeid, 0.0), 2)}))
