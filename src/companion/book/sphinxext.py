"""Sphinx extension for the book: Colab links, published notebooks, the paper-artifacts table.

Enabled in ``_config.yml`` (``sphinx: extra_extensions: [companion.book.sphinxext]``).  It

- puts an "Open in Colab" link and a notebook download link under the title of every
  executable chapter, and points the theme's own Colab launch button at the generated
  notebook (the theme's button would open the ``.md`` source, which Colab cannot read);
- writes the Colab-ready notebooks (:mod:`companion.book.editions.notebooks`) into the site under
  ``notebooks/`` when an HTML build finishes, so the download links resolve;
- provides the ``build-status`` directive: where and how this build executed the
  chapters, and which cached training runs it read (:mod:`companion.book.site.build_status`);
- provides the ``paper-artifacts`` directive: a table of the paper's figures and tables,
  each linked to the chapters that regenerate it.  A chapter that is not part of this
  edition of the book (not in ``_toc.yml``) is named in plain text, so the page builds
  whatever chapters exist.  (Both tables are written in :mod:`companion.book.site.page_tables`.)

- puts the book's version (package version and git commit, :mod:`companion.book.site.citation`) and
  a "Cite this book" box with BibTeX for the book and the paper in the footer of every
  page, and provides the ``cite-this`` directive (the same box in a page);
- provides the ``release-changes`` directive: what changed since the last release of
  ``CHANGELOG.md``, from the rules' history and the verdicts' v1 and v2 outcomes
  (:mod:`companion.book.site.changes`);
- labels every exercise with its difficulty, importance and time budget from
  ``data/chapters.yaml`` (an exercise without an entry is a build warning, which
  fails the book build);
- links the first use of each glossary word on every page to its entry
  (:mod:`companion.book.site.glossary_links`);
- gives every figure a chapter shows or glues its alt text and its source data: the book's
  kernels attach both to the image (:mod:`companion.book.figures.source_data`); the CSV is
  written next to the image in the site (``_images/<image>.csv``) and linked under it.  A
  figure image without them is a build warning naming the page and the image.

Configuration values (``sphinx: config:`` in ``_config.yml``):
``companion_repository_url`` (default: the theme's ``repository_url``) and
``companion_notebook_branch`` (default :data:`companion.book.editions.notebooks.NOTEBOOK_BRANCH`) and
``companion_student_edition`` (default False; :mod:`companion.book.editions.student` sets it).
"""

from __future__ import annotations

import html
import posixpath
from pathlib import Path

from docutils import nodes
from docutils.parsers.rst import Directive

from .editions import notebooks as nbgen
from .site.page_tables import BuildStatus, PaperArtifacts, table

COLAB_CLASS = "companion-colab"


def _repo_url(app) -> str | None:
    """The repository's web address (``companion_repository_url``, else the theme's
    ``repository_url``); one that is no plain http(s) address is a configuration error, since
    it becomes the href of every page's links (a ``javascript:`` one would run on a click)."""
    import re

    url = app.config.companion_repository_url or (
        app.config.html_theme_options or {}
    ).get("repository_url")
    if url and not re.fullmatch(r"https?://[^\s\"'<>`\\]+", str(url)):
        from sphinx.errors import ConfigError

        raise ConfigError(f"companion_repository_url (or the theme's repository_url) is {str(url)[:120]!r}, not an "
                          "http(s) address; set it to the repository's address, e.g. https://github.com/owner/name.")
    return str(url).rstrip("/") if url else None


def _is_chapter(app, docname: str) -> bool:
    return nbgen.is_notebook_source(app.env.doc2path(docname))


def _download_href(docname: str) -> str:
    """The chapter's notebook relative to its page, percent-encoded (a '#', '?' or '%' in a file
    name would end the path: a link to another file)."""
    from urllib.parse import quote

    target = f"{nbgen.NOTEBOOK_DIR}/{docname}.ipynb"
    return quote(posixpath.relpath(target, start=posixpath.dirname(docname) or "."), safe="/-_.~")


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


def _execution_sources(app) -> list[Path]:
    """Where this build's executions are (:func:`companion.book.site.executions.find`): the
    execution cache the build read (``execute.cache``; the student edition reads the
    instructor's), myst-nb's copies beside the output, nbval's executions beside that cache,
    and the source tree's own ``_build``."""
    from .site.executions import build_sources

    folders = []
    cache = getattr(app.config, "nb_execution_cache_path", "") or ""
    if cache:
        cache = Path(cache) if Path(cache).is_absolute() else Path(app.srcdir) / cache
        folders.append(cache)
    folders.append(Path(app.outdir).parent / "jupyter_execute")
    if cache:
        folders.append(cache.parent / "executed")
    folders += build_sources(Path(app.srcdir) / "_build")
    return list(dict.fromkeys(f.resolve() for f in folders))


def publish_notebooks(app, exception) -> None:
    """Write the Colab-ready notebooks into the built site (HTML builds only)."""
    if exception is not None or app.builder.format != "html":
        return
    root = Path(app.srcdir)
    out = Path(app.outdir) / nbgen.NOTEBOOK_DIR
    repo = _repo_url(app)
    paths = nbgen.write_notebooks(root, out, repo_url=repo, student=app.config.companion_student_edition,
                                  executions=_execution_sources(app))
    from sphinx.util import logging

    logging.getLogger(__name__).info(f"companion: {len(paths)} notebook(s) in {out}")


# --------------------------------------------------------------------------- version, citation
def _repo_file(app, rel: str) -> Path:
    """``rel`` in the source folder, else in the repository the package comes from (the
    student edition builds from a copy that holds only the book's pages)."""
    from .site.citation import ROOT

    here = Path(app.srcdir) / rel
    return here if here.exists() else ROOT / rel


def _version(app):
    from .site.citation import ROOT, Version, book_version

    if not hasattr(app, "_companion_version"):
        version = book_version(Path(app.srcdir))
        if version.commit is None:  # sources outside a checkout: the package's repository
            version = Version(version.package, book_version(ROOT).commit, version.rules)
        app._companion_version = version
    return app._companion_version


def _bibtex(app) -> tuple[str, str]:
    from .site.citation import book_bibtex, paper_bibtex

    bibfiles = list(getattr(app.config, "bibtex_bibfiles", None) or [])
    bib = Path(app.srcdir) / bibfiles[0] if bibfiles else None
    return book_bibtex(_version(app), _repo_file(app, "CITATION.cff").parent), paper_bibtex(bib)


def _changelog_url(repo: str, branch: str = "main") -> str:
    return f"{repo.rstrip('/')}/blob/{branch}/CHANGELOG.md"


def footer_html(version_label: str, book_bib: str, paper_bib: str, changelog_url: str | None = None) -> str:
    """The footer of every page: the book's version (with a link to the changelog where the
    repository's address is known) and the "Cite this book" box."""
    esc = html.escape
    changes = (f' What changed between versions: <a class="companion-changelog" href="{esc(changelog_url)}">'
               "CHANGELOG.md</a>." if changelog_url else "")
    return (
        f'<p class="companion-version">This page belongs to version {esc(version_label)} of the book.{changes}</p>'
        '<details class="companion-cite"><summary>Cite this book</summary>'
        '<p>The book (this version):</p>'
        f'<pre class="companion-bibtex companion-bibtex-book">{esc(book_bib)}</pre>'
        '<p>The paper it accompanies:</p>'
        f'<pre class="companion-bibtex companion-bibtex-paper">{esc(paper_bib)}</pre></details>'
    )


def add_version_footer(app, config) -> None:
    """Every page's footer: version and citation (the theme's ``extra_footer``)."""
    try:
        book_bib, paper_bib = _bibtex(app)
    except (OSError, KeyError, ValueError) as err:
        from sphinx.errors import ConfigError

        raise ConfigError(f"companion: the citation cannot be made: {err}") from err
    repo = _repo_url(app)
    footer = footer_html(_version(app).label, book_bib, paper_bib, _changelog_url(repo) if repo else None)
    app._companion_footer = footer
    if config.html_theme == "sphinx_book_theme":  # the theme's own footer slot
        options = dict(config.html_theme_options or {})
        options["extra_footer"] = (options.get("extra_footer") or "") + footer
        config.html_theme_options = options
        app._companion_footer_in_theme = True
    context = dict(config.html_context or {})
    context["companion_version"] = _version(app).label
    config.html_context = context


def add_version_to_context(app, pagename, templatename, context, doctree) -> None:
    context["companion_version"] = _version(app).label
    if "body" in context:
        # docutils marks the bibliography role="list" with children that are not list items
        # (an ARIA violation the accessibility audit reports as critical)
        context["body"] = context["body"].replace('<div role="list" class="citation-list">',
                                                  '<div class="citation-list">')
    footer = getattr(app, "_companion_footer", None)
    if footer and not getattr(app, "_companion_footer_in_theme", False) and "body" in context:
        context["body"] += f'<footer class="companion-footer">{footer}</footer>'  # other themes


class CiteThis(Directive):
    """A "Cite this book" box: BibTeX for the book (this version) and for the paper."""

    has_content = False

    def run(self):
        app = self.state.document.settings.env.app
        book_bib, paper_bib = _bibtex(app)
        box = nodes.admonition(classes=["companion-cite-box", "tip"])
        box += nodes.title(text="Cite this book")
        box += nodes.paragraph(text=f"You are reading version {_version(app).label}. To cite "
                                    "this book, and the paper it accompanies:")
        for text in (book_bib, paper_bib):
            block = nodes.literal_block(text, text, classes=["companion-bibtex"])
            block["language"] = "bibtex"
            box += block
        box += nodes.paragraph(text="The repository's CITATION.cff holds the same data "
                                    "(GitHub's \"Cite this repository\" reads it).")
        return [box]


def _add_static(app) -> None:
    """The extension's style sheet (contrast of links in boxes, the footer's citation)."""
    static = str(Path(__file__).parent / "_static")
    if static not in app.config.html_static_path:
        app.config.html_static_path.append(static)
    app.add_css_file("companion.css")


# --------------------------------------------------------------------------- release changes
def _last_release(changelog: Path) -> str | None:
    """The version of the first release heading of ``changelog`` (``## [0.2.0] - date``, or
    ``## 0.2.0``), read as Markdown (a heading in a code block is none, a heading is one line);
    ``None`` where there is none.  A file that is not UTF-8 text is a ``ValueError`` naming it."""
    import re

    from markdown_it import MarkdownIt

    if not changelog.is_file():
        return None
    try:
        text = changelog.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise ValueError(f"{changelog} cannot be read as UTF-8 text ({type(err).__name__}); fix the file.") from None
    tokens = MarkdownIt("commonmark").parse(text)
    for tok, inline in zip(tokens, tokens[1:]):
        if tok.type == "heading_open" and tok.tag == "h2":
            m = re.match(r"(?:\[v?(\d+\.\d+\.\d+[^\]\s]*)\]|v?(\d+\.\d+\.\d+[^\s\[\]()]*))(?=\s|\(|$)",
                         inline.content.strip())
            if m:
                return m.group(1) or m.group(2)
    return None


class ReleaseChanges(Directive):
    """What changed since the last release: the rules' history and the verdicts' outcomes."""

    has_content = False

    def run(self):
        from .site import changes

        env = self.state.document.settings.env
        env.note_reread()
        try:   # a file that cannot be read is one line on the page's build, not a traceback
            first, now = changes.load_rules(changes.RULES_FIRST), changes.load_rules(changes.RULES_CURRENT)
            release = _last_release(_repo_file(env.app, "CHANGELOG.md"))
        except ValueError as err:
            raise self.error(f"release-changes: {err}") from None
        for path in (changes.RULES_FIRST, changes.RULES_CURRENT):
            env.note_dependency(str(path))
        diff = changes.rules_changes(first, now)
        out = []
        intro = nodes.paragraph(classes=["companion-release-changes"])
        intro += nodes.Text(
            (f"The last release, {release}, " if release else "The first release ")
            + f"judged the empirical claims by version {diff['versions'][0]} of the verdict rules "
            f"(data/rules_history/verdict_rules_v1.yaml, kept verbatim); this build judges them by version "
            f"{diff['versions'][1]}, the one rules file in force (data/verdict_rules.yaml); this page belongs to version "
            f"{_version(env.app).label}. This section is generated from the two files and from "
            "the verdicts computed under each; ")
        repo = _repo_url(env.app)
        if repo:
            link = nodes.reference("", "", refuri=_changelog_url(repo))
            link += nodes.literal(text="CHANGELOG.md")
            intro += link
        else:
            intro += nodes.literal(text="CHANGELOG.md")
        intro += nodes.Text(" lists the rest of each release's changes.")
        out.append(intro)
        facts = nodes.bullet_list()
        for text in (
            "framework: " + (", ".join(diff["framework"]) or "unchanged"),
            "bodies of runs added: " + (", ".join(diff["bodies_added"]) or "none"),
            "bodies of runs removed: " + (", ".join(diff["bodies_removed"]) or "none"),
        ):
            item = nodes.list_item()
            item += nodes.paragraph(text=text)
            facts += item
        out.append(facts)
        out.append(nodes.rubric(text="Rules: what changed per claim"))
        out.append(table(
            ["claim", "change", "fields that differ"],
            [(c["claim"], c["change"], ", ".join(f["field"] for f in c["fields"]) or "-")
             for c in diff["claims"]] or [("-", "no claim's rule changed", "-")],
            "companion-rules-changes"))
        out.append(nodes.rubric(text="Verdicts: outcomes that changed"))
        try:
            verdicts = changes.current_verdicts()
        except Exception as err:  # a verdict that cannot be computed must not pass unnoticed
            raise self.error(f"release-changes: the verdicts could not be computed: {err}") from err
        changed = changes.verdict_changes(verdicts)
        judged = sum(1 for v in verdicts if (v.get("status_first") or "").strip())
        out.append(nodes.paragraph(text=f"Of the {judged} claims judged under both versions, "
                                        f"{len(changed)} read differently now."))
        if changed:
            out.append(table(["claim", "under rules v1", "now"],
                             [(c["claim"], c["v1"], c["now"]) for c in changed],
                             "companion-verdict-changes"))
        return out


# --------------------------------------------------------------------------- exercise labels
from .teaching.exercise_labels import exercise_label_text, load_exercise_labels  # noqa: E402


def _labels(app) -> dict:
    if not hasattr(app, "_companion_exercise_labels"):
        path = _repo_file(app, app.config.companion_exercise_labels)
        app._companion_exercise_labels = load_exercise_labels(path) if path.is_file() else None
    return app._companion_exercise_labels


def _exercise_nodes(doctree):
    try:
        from sphinx_exercise.nodes import exercise_enumerable_node, exercise_node
    except ImportError:
        return []
    return [n for n in doctree.findall(lambda n: isinstance(n, (exercise_node, exercise_enumerable_node)))]


def add_exercise_labels(app, doctree) -> None:
    """Difficulty, importance and time under each exercise's title."""
    from sphinx.util import logging

    log = logging.getLogger(__name__)
    exercises = _exercise_nodes(doctree)
    if not exercises:
        return
    labels = _labels(app)
    if labels is None:
        log.warning(f"companion: {app.config.companion_exercise_labels} is missing; exercises "
                    "have no difficulty, importance or time", location=app.env.docname)
        return
    for node in exercises:
        label = node.get("label", "")
        entry = labels.get(label)
        if entry is None:
            log.warning(f"companion: exercise {label or '(no label)'} on {app.env.docname} has no entry in "
                        f"{app.config.companion_exercise_labels}", location=node)
            continue
        para = nodes.paragraph(classes=["companion-exercise-label"])
        para += nodes.emphasis(text=exercise_label_text(entry))
        at = 1 if node.children and isinstance(node[0], nodes.title) else 0
        node.insert(at, para)
    app.env.note_dependency(str(_repo_file(app, app.config.companion_exercise_labels)))


# --------------------------------------------------------------------------- figures: alt and data
SOURCE_DATA_CLASS = "companion-source-data"


def _patch_image_renderer() -> None:
    """myst-nb renders an output image without its output metadata (except width and
    height); keep the kernel's alt text and source data on the image node."""
    try:
        from myst_nb.core.render import NbElementRenderer
    except ImportError:
        return
    if getattr(NbElementRenderer.render_image, "_companion", False):
        return
    original = NbElementRenderer.render_image

    def render_image(self, data):
        result = original(self, data)
        meta = (data.output_metadata or {}).get(data.mime_type, {}) or {}
        extra = meta.get("companion") or {}
        for node in result:
            if isinstance(node, nodes.image):
                node["companion_figure"] = True
                if str(meta.get("alt") or "").strip() and not str(node.get("alt") or "").strip():
                    node["alt"] = str(meta["alt"])
                if extra.get("csv"):
                    node["companion_csv"] = extra["csv"]
        return result

    render_image._companion = True
    NbElementRenderer.render_image = render_image


def write_figure_data(app, doctree, docname) -> None:
    """Write each figure's CSV next to its image and link it; warn about a figure image
    without alt text or data."""
    from sphinx.util import logging

    from .figures.source_data import decode_csv

    log = logging.getLogger(__name__)
    html_build = app.builder.format == "html"
    for image in list(doctree.findall(nodes.image)):
        if not image.get("companion_figure"):
            continue
        name = Path(image["uri"]).name
        if not str(image.get("alt") or "").strip():   # alt text of spaces says nothing to a screen reader
            log.warning(f"companion: the figure {name} on {docname} has no alt text "
                        "(was it shown outside the book's kernel?)", location=image)
        blob = image.get("companion_csv")
        if not blob:
            log.warning(f"companion: the figure {name} on {docname} has no source data "
                        "(was it shown outside the book's kernel, or does it plot nothing?)",
                        location=image)
            continue
        if not html_build:
            continue
        try:
            text = decode_csv(blob)
        except ValueError as err:
            log.warning(f"companion: the figure {name} on {docname}: {err}", location=image)
            continue
        # <image stem>.csv; where this build already wrote other data under that name (a.png and
        # a.svg), <image name>.csv, so that each figure links its own data
        written = app.__dict__.setdefault("_companion_figure_csv", {})
        csv_name = Path(name).stem + ".csv"
        if written.get(csv_name, text) != text:
            csv_name = name + ".csv"
        target = Path(app.outdir) / "_images" / csv_name
        # written whenever it differs (an earlier build's file may hold older data); a link, even
        # dangling, or a FIFO is refused
        if target.is_symlink() or not target.is_file() or target.read_text(encoding="utf-8", errors="replace") != text:
            from ..base.errors import CompanionError
            from ..base.outputs import write_text_atomic

            try:
                write_text_atomic(text, target, what="figure's source data")
            except CompanionError as err:
                log.warning(f"companion: {err}", location=image)
                continue
        written[csv_name] = text
        href = posixpath.relpath(f"_images/{csv_name}", start=posixpath.dirname(docname) or ".")
        para = nodes.paragraph(classes=[SOURCE_DATA_CLASS])
        para += nodes.reference("", "Source data for this figure (CSV)", refuri=href,
                                classes=["companion-source-data-link"])
        parent = image.parent
        if isinstance(parent, (nodes.paragraph, nodes.TextElement)) and parent.parent is not None:
            image, parent = parent, parent.parent  # never a paragraph inside a paragraph
        if isinstance(parent, nodes.figure):
            parent += para
        else:
            parent.insert(parent.index(image) + 1, para)


def setup(app):
    app.add_config_value("companion_repository_url", None, "html")
    app.add_config_value("companion_notebook_branch", nbgen.NOTEBOOK_BRANCH, "html")
    # the student edition (companion.book.editions.student) publishes notebooks without solutions
    app.add_config_value("companion_student_edition", False, "html")
    app.connect("doctree-read", add_colab_links)
    app.connect("html-page-context", point_launch_button_at_notebook, priority=900)
    app.connect("html-page-context", drop_duplicate_scripts, priority=900)
    app.connect("build-finished", publish_notebooks)
    app.add_directive("paper-artifacts", PaperArtifacts)
    app.add_directive("build-status", BuildStatus)
    # version, citation, release changes, exercise labels, figure alt text and source data
    app.add_config_value("companion_exercise_labels", "data/chapters.yaml", "env")
    app.connect("config-inited", add_version_footer)
    app.connect("builder-inited", _add_static)
    app.connect("html-page-context", add_version_to_context)
    app.add_directive("cite-this", CiteThis)
    app.add_directive("release-changes", ReleaseChanges)
    app.connect("doctree-read", add_exercise_labels)
    _patch_image_renderer()
    app.connect("doctree-resolved", write_figure_data)
    from .site import glossary_links

    glossary_links.setup(app)            # the first use of each glossary word on a page links it
    return {"version": "0.1", "parallel_read_safe": True, "parallel_write_safe": True}
