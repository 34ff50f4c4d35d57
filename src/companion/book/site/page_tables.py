"""The tables the book's Sphinx extension puts on a page: the paper's artifacts and the build's status.

Two directives, registered by :mod:`companion.book.sphinxext`:

- ``paper-artifacts`` (:class:`PaperArtifacts`): a table of the paper's figures and tables,
  each linked to the chapters that regenerate it.  A chapter that is not part of this edition
  of the book (not in ``_toc.yml``) is named in plain text, so the page builds whatever
  chapters exist;
- ``build-status`` (:class:`BuildStatus`): where and how this build executed the chapters,
  which cached training runs it read, and each chapter's time at the gpu size
  (:mod:`companion.book.site.build_status`).

:func:`table` writes a plain docutils table (the release-changes directive uses it too).
"""

from __future__ import annotations

from pathlib import Path

from docutils import nodes
from docutils.parsers.rst import Directive

from .chapters import _strip_suffix


class PaperArtifacts(Directive):
    """A table of the paper's figures and tables and the chapters that regenerate them.

    One line per artifact, three fields separated by ``|``::

        Fig. 2 | Median scores of pretrained models vs size | book/survey
        Table 1 | Final loss and speed-up, symmetric init | book/symmetric_init, book/errata
    """

    has_content = True

    def run(self):
        env = self.state.document.settings.env
        env.note_reread()  # the links depend on which chapters exist: rebuild every time
        rows = []
        for lineno, line in enumerate(self.content):
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            fields = [f.strip() for f in line.split("|")]
            if len(fields) != 3 or not fields[0]:
                raise self.error(
                    f"paper-artifacts line {lineno + 1}: expected 'label | description | "
                    f"chapter[, chapter]', got {line!r}"
                )
            label, what, chapters = fields
            docnames = [_strip_suffix(c) for c in chapters.split(",") if c.strip()]
            rows.append((label, what, docnames))
        return [self._table(env, rows)]

    def _table(self, env, rows):
        table = nodes.table(classes=["paper-artifacts"])
        group = nodes.tgroup(cols=3)
        table += group
        for width in (12, 53, 35):
            group += nodes.colspec(colwidth=width)
        head = nodes.thead()
        group += head
        head += self._row([nodes.Text(t) for t in ("In the paper", "What it shows",
                                                    "Regenerated in")])
        body = nodes.tbody()
        group += body
        for label, what, docnames in rows:
            links = []
            for i, docname in enumerate(docnames):
                if i:
                    links.append(nodes.Text(", "))
                links.append(self._chapter_ref(env, docname))
            body += self._row([nodes.strong(text=label), nodes.Text(what), *[links]])
        return table

    @staticmethod
    def _row(cells):
        row = nodes.row()
        for cell in cells:
            entry = nodes.entry()
            para = nodes.paragraph()
            para.extend(cell if isinstance(cell, list) else [cell])
            entry += para
            row += entry
        return row

    @staticmethod
    def _chapter_ref(env, docname):
        from sphinx import addnodes

        if docname in env.found_docs:
            ref = addnodes.pending_xref(
                "", refdomain="std", reftype="doc", reftarget="/" + docname,
                refexplicit=False, refwarn=True, refdoc=env.docname,
            )
            ref += nodes.inline("", docname, classes=["xref", "std", "std-doc"])
            return ref
        title = Path(docname).name.replace("_", " ")
        return nodes.emphasis(text=f"{title} (chapter in preparation)",
                              classes=["chapter-in-preparation"])


class BuildStatus(Directive):
    """The facts of this build and the cached run sets (:mod:`companion.book.site.build_status`)."""

    has_content = False

    def run(self):
        from .build_status import build_facts, cached_run_sets

        facts = nodes.field_list()
        for name, value in build_facts().items():
            field = nodes.field()
            field += nodes.field_name(text=name)
            body = nodes.field_body()
            body += nodes.paragraph(text=value)
            field += body
            facts += field
        heads = ["set", "runs", "kind", "devices", "corpus", "steps", "hours"]
        def cell(r, h):   # a set with runs that recorded no time says so beside the hours it sums
            n = r["runs without a recorded time"]
            return (f"{r[h]} (and {n} run{'s' if n > 1 else ''} with no recorded time)"
                    if h == "hours" and n else str(r[h]))

        runs = table(heads, [[cell(r, h) for h in heads] for r in cached_run_sets()], "companion-run-sets")
        from .build_status import BUDGET_HEADS, gpu_size_budget

        rows, rule = gpu_size_budget()
        intro = nodes.paragraph(text=(
            "Each chapter at the gpu size, in seconds: on an H100 (measured, where a device "
            "was lent), on a T4-class card (a free Colab GPU; estimated, not measured) and on "
            "two CPU cores (measured, or estimated where it says so). " + rule))
        budget = table(BUDGET_HEADS, [[r[h] for h in BUDGET_HEADS] for r in rows],
                       "companion-gpu-budget")
        return [facts, runs, intro, budget]


def table(heads, rows, css) -> nodes.table:
    """A docutils table of class ``css``: ``heads`` then ``rows`` (each cell shown as ``str``).
    A row of another length than ``heads`` is a ``ValueError`` (its cells would stand under
    the wrong headings)."""
    rows = [list(r) for r in rows]
    for n, r in enumerate(rows, 1):
        if len(r) != len(heads):
            raise ValueError(f"table {css}: row {n} has {len(r)} cells for {len(heads)} headings "
                             f"({', '.join(map(str, heads))}); give every row one cell per heading")
    out = nodes.table(classes=[css])
    group = nodes.tgroup(cols=len(heads))
    out += group
    for _ in heads:
        group += nodes.colspec(colwidth=1)
    thead = nodes.thead()
    group += thead
    tbody = nodes.tbody()
    group += tbody
    for cells, parent in [(heads, thead)] + [(r, tbody) for r in rows]:
        row = nodes.row()
        for c in cells:
            entry = nodes.entry()
            entry += nodes.paragraph(text=str(c))
            row += entry
        parent += row
    return out
