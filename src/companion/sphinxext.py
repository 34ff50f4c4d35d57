"""Sphinx extension for the book: Colab links, published notebooks, the paper-artifacts table.

Enabled in ``_config.yml`` (``sphinx: extra_extensions: [companion.sphinxext]``).  It

- puts an "Open in Colab" link and a notebook download link under the title of every
  executable chapter, and points the theme's own Colab launch button at the generated
  notebook (the theme's button would open the ``.md`` source, which Colab cannot read);
- writes the Colab-ready notebooks (:mod:`companion.notebooks`) into the site under
  ``notebooks/`` when an HTML build finishes, so the download links resolve;
- provides the ``build-status`` directive: where and how this build executed the
  chapters, and which cached training runs it read (:mod:`companion.build_status`);
- provides the ``paper-artifacts`` directive: a table of the paper's figures and tables,
  each linked to the chapters that regenerate it.  A chapter that is not part of this
  edition of the book (not in ``_toc.yml``) is named in plain text, so the page builds
  whatever chapters exist.

Configuration values (``sphinx: config:`` in ``_config.yml``):
``companion_repository_url`` (default: the theme's ``repository_url``) and
``companion_notebook_branch`` (default :data:`companion.notebooks.NOTEBOOK_BRANCH`) and
``companion_student_edition`` (default False; :mod:`companion.student` sets it).
"""

from __future__ import annotations

import posixpath
from pathlib import Path

from docutils import nodes
from docutils.parsers.rst import Directive

from . import notebooks as nbgen

COLAB_CLASS = "companion-colab"


def _repo_url(app) -> str | None:
    url = app.config.companion_repository_url or (
        app.config.html_theme_options or {}
    ).get("repository_url")
    return str(url).rstrip("/") if url else None


def _is_chapter(app, docname: str) -> bool:
    return nbgen.is_notebook_source(app.env.doc2path(docname))


def _download_href(docname: str) -> str:
    target = f"{nbgen.NOTEBOOK_DIR}/{docname}.ipynb"
    return posixpath.relpath(target, start=posixpath.dirname(docname) or ".")


# --------------------------------------------------------------------------- Colab links
def add_colab_links(app, doctree) -> None:
    """Insert the Colab and download links right below the chapter's title."""
    docname = app.env.docname
    repo = _repo_url(app)
    if not repo or not _is_chapter(app, docname):
        return
    url = nbgen.colab_url(docname, repo, app.config.companion_notebook_branch)
    para = nodes.paragraph(classes=[COLAB_CLASS])
    para += nodes.reference("", "Open this chapter in Colab", refuri=url,
                            classes=["colab-link"])
    para += nodes.Text(" (GPU runtime recommended) · ")
    para += nodes.reference("", "download the notebook", refuri=_download_href(docname),
                            classes=["notebook-download"])
    section = next(iter(doctree.findall(nodes.section)), None)
    if section is not None and section.children and isinstance(section[0], nodes.title):
        section.insert(1, para)
    else:
        doctree.insert(0, para)


def point_launch_button_at_notebook(app, pagename, templatename, context, doctree) -> None:
    """Rewrite the theme's Colab launch button to open the generated notebook."""
    repo = _repo_url(app)
    if not repo or doctree is None or pagename not in app.env.found_docs:
        return
    if not _is_chapter(app, pagename):
        return
    url = nbgen.colab_url(pagename, repo, app.config.companion_notebook_branch)

    def rewrite(buttons):
        for button in buttons or []:
            if isinstance(button, dict):
                if button.get("text") == "Colab" and "url" in button:
                    button["url"] = url
                rewrite(button.get("buttons"))

    rewrite(context.get("header_buttons"))


def drop_duplicate_scripts(app, pagename, templatename, context, doctree) -> None:
    """Keep one copy of each inline script (Jupyter Book 1 emits sphinx-thebe's and
    sphinx-togglebutton's set-up twice; the second ``const`` raises a SyntaxError)."""
    scripts = context.get("script_files")
    if not scripts:
        return
    seen, kept = set(), []
    for script in scripts:
        body = (getattr(script, "attributes", None) or {}).get("body")
        if body and body in seen:
            continue
        seen.add(body)
        kept.append(script)
    context["script_files"] = kept


def publish_notebooks(app, exception) -> None:
    """Write the Colab-ready notebooks into the built site (HTML builds only)."""
    if exception is not None or app.builder.format != "html":
        return
    root = Path(app.srcdir)
    out = Path(app.outdir) / nbgen.NOTEBOOK_DIR
    repo = _repo_url(app)
    paths = nbgen.write_notebooks(root, out, repo_url=repo, student=app.config.companion_student_edition)
    from sphinx.util import logging

    logging.getLogger(__name__).info(f"companion: {len(paths)} notebook(s) in {out}")


# --------------------------------------------------------------------------- paper artifacts
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
            docnames = [nbgen._strip_suffix(c) for c in chapters.split(",") if c.strip()]
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
    """The facts of this build and the cached run sets (:mod:`companion.build_status`)."""

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
        rows = cached_run_sets()
        heads = ["set", "runs", "kind", "devices", "corpus", "steps", "hours"]
        table = nodes.table(classes=["companion-run-sets"])
        group = nodes.tgroup(cols=len(heads))
        table += group
        for _ in heads:
            group += nodes.colspec(colwidth=1)
        thead = nodes.thead()
        group += thead
        tbody = nodes.tbody()
        group += tbody
        for cells, parent in [(heads, thead)] + [([str(r[h]) for h in heads], tbody) for r in rows]:
            row = nodes.row()
            for c in cells:
                entry = nodes.entry()
                entry += nodes.paragraph(text=c)
                row += entry
            parent += row
        return [facts, table]


def setup(app):
    app.add_config_value("companion_repository_url", None, "html")
    app.add_config_value("companion_notebook_branch", nbgen.NOTEBOOK_BRANCH, "html")
    # the student edition (companion.student) publishes notebooks without solutions
    app.add_config_value("companion_student_edition", False, "html")
    app.connect("doctree-read", add_colab_links)
    app.connect("html-page-context", point_launch_button_at_notebook, priority=900)
    app.connect("html-page-context", drop_duplicate_scripts, priority=900)
    app.connect("build-finished", publish_notebooks)
    app.add_directive("paper-artifacts", PaperArtifacts)
    app.add_directive("build-status", BuildStatus)
    return {"version": "0.1", "parallel_read_safe": True, "parallel_write_safe": True}
