"""Each chapter as the build executed it: its outputs and its glued values, from whichever
executed notebooks the build path left behind.

The Colab notebooks, the student notebooks and the slides carry the build's values and
outputs, and three places may hold them, depending on how the book was built:

- ``_build/.jupyter_cache``: jupyter-cache's store, matched to the chapter by its code, as the
  build matches it (:mod:`companion.book.site.book_cache`): the execution the build used, outputs
  and glued values both, on every build path.
- ``_build/jupyter_execute/<docname>.ipynb`` and ``<docname>.glue.json``: myst-nb's copies.
  The glue store is written on every build; the notebook holds outputs only where the build
  executed the chapter itself (and then without the cells' glued values, moved to the
  store).  A chapter served from the execution cache is written without outputs (myst-nb
  1.x writes the notebook it parsed, not the one merged with the cache), and that is every
  chapter of ``make test``'s build, whose cache is seeded by nbval.
- ``_build/executed/<docname>.ipynb``: nbval's executions (``make test``,
  ``--nbval-save-executed``).

:func:`find` reads them in that order and keeps, per chapter, the first execution whose code
cells are the chapter's and that holds outputs, and every glued value any of them holds
(the first one's where two hold the same name).  An execution whose code differs from the
chapter (a stale copy) is never used.  :func:`text` formats a glued value as the page shows it
(``{glue:text}`name:spec```, myst-nb's rule); :func:`missing` lists the glue references of a
text that no execution answers, which the builders turn into an error naming the notebook and
the name (:class:`GlueMissing`).  :func:`report` counts, in a generated notebook, what a reader
sees of the build: placeholders left, cells with output, the set-up cell's length.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["GLUE_PREFIX", "PLACEHOLDER", "Execution", "GlueMissing", "glue_records", "code_sources",
           "build_sources", "find", "text", "references", "missing", "report", "check_notebook", "check_notebooks",
           "MAX_SETUP_LINES"]

#: the mime prefix under which myst-nb stores a value glued with ``display=False``
GLUE_PREFIX = "application/papermill.record/"
#: what a notebook made without the build's values said in place of a glued value
PLACEHOLDER = "(computed by this chapter's code)"


class GlueMissing(ValueError):
    """A glue reference that no execution of the chapter answers (named with its notebook)."""


@dataclass
class Execution:
    """One chapter as the build executed it.

    ``notebook``: an nbformat notebook whose code cells carry the build's outputs (None where
    no execution holds any); ``glue``: ``{name: {"data": {mime: value}, "metadata": {...}}}``,
    every value glued (mime types without myst-nb's prefix); ``origins``: where the outputs and
    the values were read (for messages)."""

    docname: str
    notebook: object | None = None
    glue: dict = field(default_factory=dict)
    origins: list = field(default_factory=list)
    #: executions of other code than the chapter's (an edit since they ran), never used
    stale: list = field(default_factory=list)

    @property
    def values(self) -> dict:
        """``{name: text/plain}`` of every glued value that has a text form."""
        return {k: _joined(v["data"]["text/plain"]) for k, v in self.glue.items()
                if "text/plain" in v.get("data", {})}

    def figure(self, name: str) -> tuple[str, str] | None:
        """``(png base64, alt text)`` of a glued figure, or None."""
        entry = self.glue.get(name) or {}
        png = entry.get("data", {}).get("image/png")
        if not png:
            return None
        meta = (entry.get("metadata") or {}).get("image/png") or {}
        alt = meta.get("alt") if isinstance(meta, dict) else None
        return _joined(png), str(alt or name)


def _joined(value) -> str:
    return value if isinstance(value, str) else "".join(value)


# --------------------------------------------------------------------------- reading
def glue_records(nb) -> dict:
    """``{name: {"data": ..., "metadata": ...}}`` of the values an executed notebook glued
    (outputs whose metadata names them; the mime prefix stripped; a name glued twice has its last
    value, as on the page).  ``nb`` is not changed."""
    out = {}
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        for o in cell.get("outputs", []):
            scrap = (o.get("metadata") or {}).get("scrapbook") or {}
            name = scrap.get("name")
            if not name:
                continue
            cut = len(scrap.get("mime_prefix", ""))
            data = {k[cut:] if k.startswith(GLUE_PREFIX) else k: v for k, v in (o.get("data") or {}).items()}
            # a name glued twice: the last value, the one myst-nb's page shows (extract_glue_data)
            out[name] = {"data": data, "metadata": dict(o.get("metadata") or {})}
    return out


def code_sources(nb) -> list[str]:
    """The code cells' sources, stripped (what two executions of a chapter must share)."""
    return [c.source.strip() for c in nb.cells if c.cell_type == "code"]


def _has_outputs(nb) -> bool:
    return any(o for c in nb.cells if c.cell_type == "code"
               for o in c.get("outputs", []) if "scrapbook" not in (o.get("metadata") or {}))


def _read_store(path: Path) -> dict:
    """A ``.glue.json`` store, or {} where it cannot be read as one (the other executions
    may still answer; a name answered by none is an error later, naming it)."""
    from ...base.paths import regular_file

    try:
        regular_file(path, "the glue store")   # a FIFO would block, a device never end
        store = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError):
        return {}
    if not isinstance(store, dict):
        return {}
    return {k: v for k, v in store.items() if isinstance(k, str) and isinstance(v, dict)
            and isinstance(v.get("data", {}), dict)}


def build_sources(build: Path | str) -> list[Path]:
    """The folders of a build (``_build``) that may hold executions, in the order
    :func:`find` trusts them: the execution cache, myst-nb's copies, nbval's executions."""
    build = Path(build)
    return [build / ".jupyter_cache", build / "jupyter_execute", build / "executed"]


def _is_cache(folder: Path) -> bool:
    return (folder / "global.db").is_file()


def _from_cache(cache, chapter_source: Path):
    """The chapter as the execution cache holds it, or None (no match)."""
    from myst_nb.core.read import read_myst_markdown_notebook

    nb = read_myst_markdown_notebook(chapter_source.read_text(encoding="utf-8"), path=str(chapter_source))
    try:
        return cache.merge_match_into_notebook(nb)[1]
    except KeyError:
        return None


def find(chapters, folders) -> dict:
    """``{docname: Execution}`` for each chapter (objects with ``docname`` and ``source``, as
    :func:`companion.book.editions.notebooks.book_chapters` gives them), read from ``folders`` in
    order: each an nbval or myst-nb folder of ``<docname>.ipynb`` files, or a jupyter-cache
    folder.  A folder that does not exist is skipped; a chapter no execution answers gets an
    :class:`Execution` with no notebook and no values."""
    import nbformat

    folders = [Path(f) for f in folders if f is not None and Path(f).is_dir()]
    caches = {}
    found = {}
    for chapter in chapters:
        ex = Execution(chapter.docname)
        want = None
        for folder in folders:
            if _is_cache(folder):
                if folder not in caches:
                    from jupyter_cache import get_cache

                    caches[folder] = get_cache(str(folder))
                nb = _from_cache(caches[folder], Path(chapter.source))
                store = {}
            else:
                path = folder / f"{chapter.docname}.ipynb"
                if not path.is_file():
                    continue
                try:
                    nb = nbformat.read(str(path), as_version=4)
                except (OSError, ValueError) as err:   # a torn copy: the others may answer
                    nb = None
                    ex.origins.append(f"{path} (unreadable: {type(err).__name__})")
                store = _read_store(path.with_suffix(".glue.json"))
            if nb is None:
                continue
            if want is None:
                want = _chapter_code(chapter)
            if code_sources(nb) != want:
                ex.stale.append(str(folder))
                continue                  # an execution of another version of the chapter
            for name, entry in {**glue_records(nb), **store}.items():
                ex.glue.setdefault(name, entry)
            if ex.notebook is None and _has_outputs(nb):
                ex.notebook = nb
                ex.origins.insert(0, str(folder))
            elif store or glue_records(nb):
                ex.origins.append(str(folder))
        found[chapter.docname] = ex
    return found


def _chapter_code(chapter) -> list[str]:
    import jupytext

    return code_sources(jupytext.read(str(chapter.source)))


# --------------------------------------------------------------------------- values as the page shows them
def text(raw: str, spec: str = "") -> str:
    """A glued ``text/plain`` as ``{glue:text}`name:spec``` shows it on the page (myst-nb's
    rule: the value read as a Python literal where it is one, then formatted by ``spec``)."""
    try:
        value = ast.literal_eval(raw)
    except (SyntaxError, ValueError, MemoryError, RecursionError, TypeError):
        value = raw
    if spec == "":
        return str(value)
    kind = spec[-1]
    if kind == "s":
        value = str(value)
    elif kind in "bcdoxX":
        value = int(value)
    elif kind in "eEfFgGn%":
        value = float(value)
    return format(value, spec)


_ROLE_REF = re.compile(r"\{glue(?::[a-z]+)?\}`(?P<name>[^`:]+)(?::[^`]*)?`")
_DIRECTIVE_REF = re.compile(r"^(?:`{3,}|:{3,})\{glue(?::[a-z]+)?\}\s+(?P<name>\S+)", re.M)


def references(markdown: str) -> list[str]:
    """The names a MyST text pastes (``{glue:*}`` roles and directives), in order, once each."""
    names = [m.group("name") for m in _ROLE_REF.finditer(markdown)]
    names += [m.group("name") for m in _DIRECTIVE_REF.finditer(markdown)]
    return list(dict.fromkeys(names))


def missing(markdown: str, execution: Execution) -> list[str]:
    """The names ``markdown`` pastes that ``execution`` has no value for (a figure directive
    needs an image, a role a text)."""
    figures = {m.group("name") for m in _DIRECTIVE_REF.finditer(markdown)}
    out = []
    for name in references(markdown):
        data = execution.glue.get(name, {}).get("data", {})
        if not (("image/png" in data) if name in figures else ("text/plain" in data or "image/png" in data)):
            out.append(name)
    return out


# --------------------------------------------------------------------------- what a notebook shows
def report(nb, setup_tag: str = "companion-setup") -> dict:
    """What a generated notebook shows of the build: ``placeholders`` (glued values left as
    "computed by this chapter's code"), ``raw_glue`` (MyST glue syntax left in its text),
    ``code_cells``, ``cells_with_output``, ``setup_lines`` (lines of the set-up cell, blank
    and comment lines included, its form title excepted)."""
    md = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    setup = [c for c in nb.cells if setup_tag in (c.get("metadata") or {}).get("tags", [])]
    lines = setup[0].source.strip().splitlines() if setup else []
    return {
        "placeholders": md.count(PLACEHOLDER),
        "raw_glue": len(re.findall(r"\{glue(?::[a-z]+)?\}", md)),
        "code_cells": sum(c.cell_type == "code" for c in nb.cells),
        "cells_with_output": sum(1 for c in nb.cells if c.cell_type == "code" and c.get("outputs")),
        "setup_lines": len([ln for ln in lines if not ln.startswith("# @title")]),
    }


def _carried(output) -> bool:
    """Whether a notebook carries something for this output of the build's execution: every
    output does, but a value glued without display carries only as text (a glued figure is
    pasted into the text instead)."""
    if "scrapbook" not in (output.get("metadata") or {}):
        return True
    kinds = {k.rsplit("/", 2)[-2] + "/" + k.rsplit("/", 1)[-1] for k in (output.get("data") or {})}
    return "text/plain" in kinds and "image/png" not in kinds


#: the most lines a notebook's set-up cell may have (its form title excepted)
MAX_SETUP_LINES = 12


def check_notebook(nb, execution: Execution | None = None, max_setup_lines: int = MAX_SETUP_LINES) -> list[str]:
    """What a generated notebook lacks of the build, one line each (empty when nothing):
    placeholders or MyST glue syntax left in its text, a set-up cell over
    ``max_setup_lines`` lines, and, given the chapter's ``execution``, code cells without the
    outputs that execution gave them (an output left out for the size budget leaves a line
    saying so, which counts), and an exercise cell (student notebooks) with an output."""
    got = report(nb)
    problems = []
    if got["placeholders"]:
        problems.append(f"{got['placeholders']} glued value(s) left as '{PLACEHOLDER}'")
    if got["raw_glue"]:
        problems.append(f"{got['raw_glue']} MyST glue reference(s) left in the text")
    if got["setup_lines"] > max_setup_lines:
        problems.append(f"a set-up cell of {got['setup_lines']} lines (at most {max_setup_lines})")
    if execution is not None and execution.notebook is not None:
        ran = {}
        for cell in execution.notebook.cells:
            if cell.cell_type == "code":
                ran.setdefault(cell.source.strip(), []).append(any(map(_carried, cell.get("outputs", []))))
        expected = carried = 0
        for cell in nb.cells:
            if cell.cell_type != "code" or not ran.get(cell.source.strip()):
                continue
            if ran[cell.source.strip()].pop(0):
                expected += 1
                carried += bool(cell.get("outputs"))
        if carried < expected:
            problems.append(f"{expected - carried} of the {expected} code cells the build's execution gave an "
                            "output show none")
    for cell in nb.cells:
        if cell.cell_type == "code" and "exercise" in (cell.get("metadata") or {}).get("tags", []) and cell.get("outputs"):
            problems.append("an exercise's cell carries an output")
    return problems


def check_notebooks(chapters, build: Path | str, folder: Path | str) -> tuple[list[str], str]:
    """Check the notebook of each of ``chapters`` (as
    :func:`companion.book.editions.notebooks.book_chapters` gives them) under ``folder`` against the
    build's executions under ``build`` (``_build``; :func:`check_notebook`): returns the
    problems, one line each naming the chapter, and a summary line of the counts.  A chapter
    with no execution holding outputs is a problem too (the build executes them all)."""
    import nbformat

    build, folder = Path(build), Path(folder)
    chapters = list(chapters)
    found = find(chapters, build_sources(build))
    problems = [f"{c.docname}: no execution of it with outputs under {build}"
                for c in chapters if found[c.docname].notebook is None]
    totals = {"placeholders": 0, "cells_with_output": 0, "code_cells": 0, "setup_lines": 0}
    for chapter in chapters:
        path = folder / chapter.notebook_path
        if not path.is_file():
            problems.append(f"{chapter.docname}: no notebook at {path}")
            continue
        nb = nbformat.read(str(path), as_version=4)
        got = report(nb)
        for key in totals:
            totals[key] = max(totals[key], got[key]) if key == "setup_lines" else totals[key] + got[key]
        problems += [f"{chapter.docname}: {p}" for p in check_notebook(nb, found[chapter.docname])]
    summary = (f"{len(chapters)} notebooks, {totals['placeholders']} placeholders, {totals['cells_with_output']} "
               f"of {totals['code_cells']} code cells with output, set-up cell at most {totals['setup_lines']} lines")
    return problems, summary
