"""Lecture slides from the chapters: one reveal.js deck per chapter, readable offline.

::

    python -m companion.book.editions.slides           # after `make book`: -> _build/slides/<chapter>.slides.html

A deck is made from the chapter as the book executed it (its outputs and glued values, from
whichever executions the build path left: :mod:`companion.book.site.executions`), for
projection rather than reading (:func:`plan_chapter`): the chapter's question, its learning
goals and the points of its answer box; per section its opening sentences, its formal
statements and its figures (code outputs and glued figures, with their captions); its key
table (the first table its code shows after the answer box, or the tables of cells tagged
``slide``: :mod:`companion.book.editions.slide_plan`); every block the chapter marks with a
``% slide`` comment line (invisible in the book), shown whole; and its closing "What to remember", with links to its exercises. A slide carries at
most :data:`SLIDE_WORDS` words of prose; what does not fit, and the rest of each section,
goes to the slide's speaker notes (``<aside class="notes">``). Glued numbers are filled in,
references become links to the online book (its address from ``_config.yml``), MyST labels
and directive options never show, tables are split at :data:`TABLE_ROWS` rows, solutions
are left out (the decks can be handed to students). A code cell tagged ``slide`` must draw
a figure or show a table, a marked block must fit the budget, and a deck must show a figure
and a table where its chapter does: each mistake stops the build naming the chapter
(:class:`SlideError`). Parsing a chapter into slides is :mod:`.slide_plan`'s, rendering them
:mod:`.slide_render`'s; this module fetches reveal.js, writes the decks and is the command.

Nothing is fetched when a deck is opened: reveal.js comes from the npm registry at set-up
(:func:`vendor_reveal`, pinned and checked against the registry's sha512), MathJax from the
``sphinx-mathjax-offline`` package that the book already uses; both are copied next to the
decks.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

# the parsing and the rendering halves, re-exported: ``slides.X`` is the public name of each
from .slide_plan import (SLIDE_WORDS, TABLE_ROWS, Slide, SlideError, _links_text, answer_verdicts,  # noqa: F401
                         chapter_markdown, check_answer_slides, drawn_figures, pack_answer, pack_bullets,
                         output_tables, plan_chapter, resolve_glue, shown_tables, split_html_table, split_table,
                         trim, without_asides)
from .slide_plan import chapter_markdown as _chapter_markdown  # noqa: F401 (the earlier name)
from .slide_render import deck_html, markdown_renderer, render_slide
from .slide_render import markdown_renderer as _markdown  # noqa: F401 (the earlier name)

__all__ = ["REVEAL_VERSION", "REVEAL_INTEGRITY", "SLIDE_WORDS", "TABLE_ROWS", "Slide", "SlideError",
           "vendor_reveal", "resolve_glue", "trim", "pack_bullets", "split_table", "plan_chapter",
           "chapter_slides", "render_slide", "deck_html", "build_slides", "main", "without_asides",
           "pack_answer", "answer_verdicts", "check_answer_slides", "drawn_figures", "shown_tables",
           "split_html_table"]

REVEAL_VERSION = "5.2.1"
#: the npm registry's integrity string for reveal.js 5.2.1 (``npm view reveal.js@5.2.1 dist.integrity``)
REVEAL_INTEGRITY = "sha512-r7//6mIM5p34hFiDMvYfXgyjXqGRta+/psd9YtytsgRlrpRzFv4RbH76TXd2qD+7ZPZEbpBDhdRhJaFgfQ7zNQ=="

# ----------------------------------------------------------------------------- vendoring
def vendor_reveal(cache: Path | None = None) -> Path:
    """The folder of reveal.js's ``dist`` files, fetched once from the npm registry.

    The package tarball is checked against :data:`REVEAL_INTEGRITY` before anything is
    extracted; a mismatch is an error naming both digests (:func:`companion.book.site.vendor.npm_package`,
    which also fetches axe-core for the accessibility audit).
    """
    from ..site.vendor import npm_package

    return npm_package("reveal.js", REVEAL_VERSION, REVEAL_INTEGRITY, "dist", "reveal.js", cache)


def _mathjax_dir() -> Path:
    import importlib.util

    spec = importlib.util.find_spec("sphinx-mathjax-offline")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the slides need MathJax from sphinx-mathjax-offline: pip install -e '.[book]'")
    return Path(list(spec.submodule_search_locations)[0]) / "static" / "mathjax"


def chapter_slides(executed, glue: dict, links: dict | None = None, chapter: str | None = None
                   ) -> tuple[str, list[str]]:
    """``(title, [slide HTML])`` of one executed chapter (a notebook's path, or the nbformat
    notebook with ``chapter`` its name); ``links`` (label or page -> address of the online
    book, :func:`companion.book.editions.notebooks.book_links`) turns references into links.  The
    answer slides must state every verdict of the chapter's answer box
    (:func:`check_answer_slides`)."""
    import nbformat

    if isinstance(executed, (str, Path)):
        nb = nbformat.read(executed, as_version=4)
        chapter = chapter or Path(executed).stem
    else:
        nb = executed
        chapter = chapter or "chapter"
    markdown, figures, tables = chapter_markdown(nb, glue, chapter)
    links = links or {}
    page = links.get(chapter)
    url = (lambda label: f"{page}#{label}") if page else None
    title, plan = plan_chapter(markdown, figures, chapter, url, tables)
    verdicts = answer_verdicts("\n\n".join(c.source for c in nb.cells if c.cell_type == "markdown"))
    check_answer_slides(chapter, plan, verdicts, glue)
    md = markdown_renderer()
    return title, [render_slide(s, md, links) for s in plan]



def _read_glue(path: Path) -> dict:
    """A chapter's glue store ``{name: {"data": {mime: value}, ...}}``, refused in one line
    naming it when it is cut off, not JSON or not such a store (a build stopped while
    writing it, or an edit)."""
    from ...base.errors import CompanionError

    fix = "rebuild the book (make book) to write it again."
    from ...base.paths import regular_file

    regular_file(path, "the glue store")   # a FIFO would block, a device never end
    try:
        glue = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as err:
        raise CompanionError(f"{path} is cut off or not JSON ({type(err).__name__}); {fix}") from None
    if not isinstance(glue, dict) or not all(
            isinstance(k, str) and isinstance(v, dict) and isinstance(v.get("data", {}), dict)
            and all(isinstance(x, (str, list, dict)) for x in v.get("data", {}).values())
            for k, v in glue.items()):
        raise CompanionError(f"{path} is not a glue store (an object of glued names, each with its data); {fix}")
    return glue


def copy_vendor(out: Path, sources) -> None:
    """Copy each ``(name, folder)`` of ``sources`` to ``out/vendor/name`` unless a folder is there
    already; a link (even a dangling one) or a file at ``vendor`` or at a name is refused in one
    line: the copy is never made through a link out of ``--out``."""
    vendor = out / "vendor"
    for path in (vendor, *(vendor / name for name, _ in sources)):
        if path.is_symlink() or (path.exists() and not path.is_dir()):
            raise ValueError(f"{path} is a {'symbolic link' if path.is_symlink() else 'file'}, where the decks' "
                             "offline copy of reveal.js and MathJax goes; remove it, or give another --out.")
    for name, src in sources:
        if not (vendor / name).is_dir():
            shutil.copytree(src, vendor / name)


def build_slides(root: Path | str = ".", out: Path | str | None = None) -> list[Path]:
    """One deck per executed chapter of the book at ``root`` into ``out`` (``_build/slides``).

    Each chapter's outputs and glued values come from the build's executions, whichever the
    build path left (:func:`companion.book.site.executions.find`: myst-nb's copies, the execution
    cache, nbval's executions).  A chapter no execution holds outputs of, an answer slide
    without its verdict (:func:`check_answer_slides`), the deck of a chapter that draws
    figures showing none and the deck of a chapter that shows tables showing none
    (:func:`companion.book.editions.slide_plan.shown_tables`) are each a :class:`SlideError`
    naming the chapter."""
    from ..site.executions import build_sources, find
    from ..site.chapters import book_chapters, book_links, repository_url, site_url

    root = Path(root).resolve()
    out = Path(out) if out is not None else root / "_build" / "slides"
    sources = build_sources(root / "_build")
    if not any(f.is_dir() for f in sources):
        raise FileNotFoundError(f"no executed chapters under {root / '_build'} (jupyter_execute, .jupyter_cache "
                                "or executed); build the book first (make book)")
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {out} is a file, not a folder; give a folder for the decks (it is kept as it is).")
    chapters = book_chapters(root)   # checked before anything is written
    by_name: dict[str, str] = {}
    for ch in chapters:   # decks are named by the chapter's file name: two of one name would overwrite
        other = by_name.setdefault(Path(ch.docname).name, ch.docname)
        if other != ch.docname:
            raise SlideError(f"{other} and {ch.docname} would both be the deck {Path(ch.docname).name}.slides.html, "
                             "the second overwriting the first; rename one of the two chapters.")
    found = find(chapters, sources)
    for ch in chapters:
        if found[ch.docname].notebook is None:
            raise FileNotFoundError(f"{ch.docname}: no execution of it with outputs under {root / '_build'} "
                                    "(jupyter_execute, .jupyter_cache, executed); build the book first (make book)")
    out.mkdir(parents=True, exist_ok=True)
    copy_vendor(out, (("reveal", vendor_reveal()), ("mathjax", _mathjax_dir())))
    links = book_links(root, site_url(repository_url(root)))   # references -> the online book
    decks = []
    for ch in chapters:
        ex = found[ch.docname]
        name = Path(ch.docname).name
        try:
            title, slides = chapter_slides(ex.notebook, ex.glue, links, chapter=name)
        except (KeyError, ValueError) as err:   # a glued name missing, a solution not closed, ...
            why = " ".join(str(err.args[0] if err.args else type(err).__name__).split())
            if why.startswith(f"{name}:"):
                raise
            raise SlideError(f"{name} ({ch.source}): {why}") from None
        markdown = "\n\n".join(c.source for c in ex.notebook.cells if c.cell_type == "markdown")
        drawn = drawn_figures(ex.notebook, markdown)
        shown = sum(s.count("<img ") for s in slides)
        if drawn and not shown:
            raise SlideError(f"{name}: the chapter shows {drawn} figure(s) and its deck ({name}.slides.html) none; "
                             "a figure slide is missing")
        tabled = shown_tables(ex.notebook)
        if tabled and not sum(s.count("<table") for s in slides):
            raise SlideError(f"{name}: the chapter shows {tabled} table(s) and its deck ({name}.slides.html) none; "
                             "its key table's slide is missing (tag the table's code cell 'slide')")
        target = out / f"{name}.slides.html"
        from ...base.outputs import write_text_atomic   # never through a link out of --out, never into a FIFO

        write_text_atomic(deck_html(title, slides), target, what="deck")
        decks.append(target)
    return decks


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m companion.book.editions.slides",
                                 description="Build one reveal.js deck per chapter (offline).")
    ap.add_argument("--root", default=".", help="repository root (holds _toc.yml)")
    ap.add_argument("--out", default=None, help="output folder (default <root>/_build/slides)")
    ap.add_argument("--vendor-only", action="store_true", help="only fetch and check reveal.js (set-up)")
    args = ap.parse_args(argv)
    if args.out is not None and not args.out.strip():   # "" would be the current folder
        ap.error("--out is empty; give the folder for the decks, or leave --out out (<root>/_build/slides)")
    import yaml

    try:
        if args.vendor_only:
            print(f"reveal.js {REVEAL_VERSION}: {vendor_reveal()}")
            return 0
        decks = build_slides(args.root, args.out)
    except (OSError, KeyError, RuntimeError, ValueError) as err:  # ValueError: CompanionError
        print(f"error: {' '.join(str(err).split()) or type(err).__name__}", file=sys.stderr)
        return 2
    except yaml.YAMLError as err:  # a malformed _toc.yml
        print(f"error: {Path(args.root) / '_toc.yml'} is not valid YAML ({' '.join(str(err).split())[:200]})",
              file=sys.stderr)
        return 2
    for d in decks:
        print(d)
    print(f"{len(decks)} deck(s) written", file=sys.stderr)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
