"""The book's table of contents and where it is published: which pages are executable
chapters (``_toc.yml`` and the jupytext header), the repository and site addresses from
``_config.yml``, and the links every cross-reference resolves to on the published site."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ...base.toc import strip_suffix, toc_entries

__all__ = ["Chapter", "JUPYTEXT_HEADER", "toc_yaml", "toc_docnames", "read_page", "is_notebook_source",
           "book_chapters", "repository_url", "site_url", "book_links", "BookLinks", "github_parts"]


@dataclass(frozen=True)
class Chapter:
    """One executable page of the book: its Sphinx docname and its source file."""

    docname: str  # e.g. "book/measuring"
    source: Path

    @property
    def notebook_path(self) -> str:
        """Path of the generated notebook, relative to the notebooks folder."""
        return f"{self.docname}.ipynb"


# --------------------------------------------------------------------------- table of contents
#: the front matter every chapter opens with (jupytext's MyST format)
JUPYTEXT_HEADER = """\
---
jupytext:
  text_representation:
    extension: .md
    format_name: myst
    format_version: 0.13
kernelspec:
  display_name: Python 3
  language: python
  name: python3
---
"""


def toc_yaml(path: Path):
    """The parsed YAML of ``_toc.yml`` or ``_config.yml`` (an empty mapping for an empty file)."""
    return _load_yaml(path)


def _load_yaml(path: Path):
    try:
        import yaml
    except ImportError as err:  # pragma: no cover - yaml comes with jupyter-book
        raise ImportError(
            "reading _toc.yml needs PyYAML: pip install -e '.[book]'"
        ) from err
    from ...base.bounded_yaml import load_bounded

    try:   # a key written twice (safe_load keeps the second silently) or an alias bomb is refused
        return load_bounded(path.read_text(encoding="utf-8")) or {}
    except (yaml.YAMLError, OverflowError) as err:
        raise ValueError(f"{path} is not valid YAML for this book ({' '.join(str(err).split())[:300]}); "
                         "fix the file (a key written twice?).") from None


def toc_docnames(root: Path | str = ".") -> list[str]:
    """Every ``file:`` entry of ``<root>/_toc.yml`` (root first), in reading order."""
    root = Path(root)
    toc_path = root / "_toc.yml"
    if not toc_path.is_file():
        raise FileNotFoundError(
            f"no _toc.yml in {root.resolve()}; run this from the repository root "
            "or pass --root."
        )
    return toc_entries(_load_yaml(toc_path), toc_path)


_strip_suffix = strip_suffix   # the name the builders import


def read_page(path: Path | str) -> str:
    """The text of a page of the book as Sphinx reads it: UTF-8, a byte-order mark at its start
    dropped (an editor's; the page's front matter follows it).  A page that is not UTF-8 is a
    ``ValueError`` naming it."""
    try:
        return Path(path).read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as err:
        raise ValueError(f"{path} is not UTF-8 text (byte {err.start}: {err.reason}); save it as UTF-8, "
                         "as the book reads every page.") from None


def is_notebook_source(path: Path | str) -> bool:
    """True for a MyST Markdown notebook: a ``.md`` file opening with a jupytext header (after
    a byte-order mark, which Sphinx drops too)."""
    path = Path(path)
    if path.suffix == ".ipynb":
        return path.is_file()
    if path.suffix != ".md" or not path.is_file():
        return False
    head = read_page(path)[:800]
    return head.startswith("---") and "jupytext:" in head and "kernelspec:" in head


def book_chapters(root: Path | str = ".") -> list[Chapter]:
    """The executable chapters listed in ``_toc.yml``, in reading order.

    Pages without code (no jupytext header) are left out; a ``_toc.yml`` entry whose file
    is missing is an error, as it is for the book build.
    """
    root = Path(root)
    chapters = []
    for docname in toc_docnames(root):
        candidates = [root / f"{docname}{suffix}" for suffix in (".md", ".ipynb", ".rst")]
        source = next((c for c in candidates if c.is_file()), None)
        if source is None:
            raise FileNotFoundError(
                f"_toc.yml lists {docname!r} but no {docname}.md (or .ipynb, .rst) "
                f"exists under {root.resolve()}."
            )
        if is_notebook_source(source):
            chapters.append(Chapter(docname, source))
    return chapters


# --------------------------------------------------------------------------- where and which
def _book_config(root: Path) -> dict:
    path = root / "_config.yml"
    return _load_yaml(path) if path.is_file() else {}


def repository_url(root: Path | str = ".") -> str:
    """The repository URL from ``_config.yml`` (``repository: url:``)."""
    config = _book_config(Path(root))
    repo = config.get("repository") if isinstance(config, dict) else None
    url = (repo or {}).get("url") if isinstance(repo or {}, dict) else repo
    if not url:
        raise ValueError(
            "_config.yml has no repository.url; set it (e.g. https://github.com/owner/repo) "
            "or pass --repo-url."
        )
    if not isinstance(repo, dict) or not isinstance(url, str) or not re.fullmatch(r"https?://[^\s\"'<>`\\]+", url):
        raise ValueError(f"_config.yml's repository is {str(repo)[:80]!r}, not repository: url: <an http(s) address>; "
                         "write it as repository: {url: https://github.com/owner/repo}")
    return url.rstrip("/").removesuffix(".git")


def site_url(repo_url: str) -> str:
    """The published book's address for a GitHub repository: its GitHub Pages site
    (``https://owner.github.io/name/``, where the publishing workflow puts it)."""
    owner, name = github_parts(repo_url)
    return f"https://{owner}.github.io/{name}/"


class BookLinks(dict):
    """:func:`book_links`' answer: ``{target: url}``, and in :attr:`titles` ``{target: words}``,
    the words the site shows for a reference without text of its own (a page's title, the
    heading a target ``(label)=`` stands before)."""

    def __init__(self, *args, titles: dict | None = None, citations: dict | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.titles = dict(titles or {})
        #: ``{bibtex key: (authors, year)}`` as the site's author-year citations name them
        self.citations = dict(citations or {})


def book_links(root: Path | str, site: str | None) -> BookLinks:
    """``{target: url}`` for the book's cross-references: every chapter's docname (``{doc}``),
    every label ``(label)=`` of a chapter (``{ref}``), every labelled directive's ``:label:``
    (a theorem, proposition or definition, ``{prf:ref}``) and every equation's label
    (``$$ (label)`` or a ``math`` directive's ``:label:``, ``{eq}``, whose anchor on the site
    is ``equation-label``), as addresses on the published site; with the words a reference
    without text of its own shows (:class:`BookLinks`).  ``site`` None (a repository off
    GitHub, no published site): the words only."""
    from urllib.parse import quote

    links, titles = {}, {}
    for chapter in book_chapters(root):
        # percent-encoded: a file name with ")", "<", '"' or a space stays one address in a link
        page = f"{site}{quote(chapter.docname, safe='/-_.~')}.html"
        links[chapter.docname.split("/")[-1]] = page
        links[chapter.docname] = page
        directive = ""
        text = read_page(chapter.source)
        for line in text.splitlines():
            opened = _DIRECTIVE_OPEN.match(line.strip())
            if opened:
                directive = opened.group(1)
            target = _TARGET_LINE.match(line)
            if target:
                links[target.group(1)] = f"{page}#{target.group(1)}"
                continue
            equation = _EQUATION_LABEL.match(line)
            option = _LABEL_OPTION.match(line.strip())
            if equation or (option and directive == "math"):
                label = (equation or option).group(1)
                links[label] = f"{page}#equation-{label}"
            elif option:
                links[option.group(1)] = f"{page}#{option.group(1)}"
        for name, title in _headings(text).items():
            titles.setdefault(name if name else chapter.docname, title)
            if not name:
                titles.setdefault(chapter.docname.split("/")[-1], title)
    return BookLinks(links if site is not None else {}, titles=titles, citations=_citations(Path(root)))


def _citations(root: Path) -> dict:
    """``{key: (authors, year)}`` of the book's bibliography (``bibtex_bibfiles`` of
    ``_config.yml``, else ``book/references.bib``): the family names as an author-year
    citation gives them (``Saponati et al.``, ``Reimers and Gurevych``); {} where there is none."""
    config = _book_config(root)
    files = (config.get("bibtex_bibfiles") if isinstance(config, dict) else None) or ["book/references.bib"]
    out = {}
    for name in files if isinstance(files, list) else []:
        path = root / str(name)
        try:
            text = path.read_text(encoding="utf-8") if path.is_file() else ""
        except (OSError, UnicodeDecodeError):
            continue
        for entry in re.split(r"^[ \t]*(?=@)", text, flags=re.M):
            key = re.match(r"@\s*\w+\s*[{(]\s*([^,\s]+)\s*,", entry)
            author = re.search(r"^\s*author\s*=\s*[{\"](.*?)[}\"]\s*,?\s*$", entry, re.M | re.I)
            year = re.search(r"^\s*year\s*=\s*[{\"]?\s*(\d{4})", entry, re.M | re.I)
            if key and author and year:
                out.setdefault(key.group(1), (_family_names(author.group(1)), year.group(1)))
    return out


def _family_names(authors: str) -> str:
    """A BibTeX author list as an author-year citation names it: one or two family names, or the
    first and ``et al.``"""
    try:   # LaTeX accents as their letters (M{\\"u}ller: Müller), as the site's bibliography writes them
        import codecs

        import latexcodec  # noqa: F401 (registers the codec; it comes with sphinxcontrib-bibtex)

        authors = codecs.decode(authors, "ulatex")
    except (ImportError, ValueError, UnicodeError):
        pass
    plain = re.sub(r"\\[`'^\"~=.]|[{}]", "", authors)
    names = [a.strip() for a in re.split(r"\s+and\s+", plain) if a.strip()]
    family = [a.split(",")[0].strip() if "," in a else a.split()[-1] for a in names if a != "others"]
    if not family:
        return plain.strip()
    if len(names) > 2 or "others" in names:
        return f"{family[0]} et al."
    return " and ".join(family)


def _headings(text: str) -> dict:
    """``{label: heading}`` of the targets ``(label)=`` that stand before a heading of ``text``
    (a MyST page), and ``{"": title}``, the page's first heading; headings in code, math or a
    directive's body are none."""
    out, pending, fences = {}, [], []
    body = re.sub(r"\A---\n.*?\n---\n", "", text.replace("\r\n", "\n"), flags=re.S)   # the front matter
    for line in body.splitlines():
        stripped = line.strip()
        fence = re.match(r"^(`{3,}|~{3,}|:{3,})", stripped)
        if fences and fence and set(stripped) == {fences[-1][0]} and len(stripped) >= len(fences[-1]):
            fences.pop()
            continue
        if fence:
            fences.append(fence.group(1))
            pending = []
            continue
        if fences or not stripped or re.match(r"^ {0,3}%", line):   # a MyST comment stands between nothing
            continue
        target = _TARGET_LINE.match(line)
        if target:
            pending.append(target.group(1))
            continue
        heading = re.match(r"^ {0,3}(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$", line)
        if heading and heading.group(2):
            for label in pending:
                out.setdefault(label, heading.group(2))
            if len(heading.group(1)) == 1:
                out.setdefault("", heading.group(2))
        pending = []
    return out


_DIRECTIVE_OPEN = re.compile(r"^(?::{3,}|`{3,})\{([^}]+)\}")
_TARGET_LINE = re.compile(r"^\(([A-Za-z0-9_-]+)\)=\s*$")
_EQUATION_LABEL = re.compile(r"^\s*\$\$\s*\(([A-Za-z0-9_:.-]+)\)\s*$")
_LABEL_OPTION = re.compile(r"^:label:\s*([A-Za-z0-9_:.-]+)\s*$")


def github_parts(repo_url: str) -> tuple[str, str]:
    """``(owner, name)`` of a ``https://github.com/owner/name`` URL."""
    # GitHub's own names: an owner of letters, digits and '-'; a repository of those, '.' and '_'.
    # Nothing else reaches the addresses pasted into pages, notebooks and decks (no quote, '<', ')').
    m = re.match(r"^https?://github\.com/([A-Za-z0-9](?:[A-Za-z0-9-]{0,38}))/([A-Za-z0-9._-]+?)(?:\.git)?/?$",
                 str(repo_url))
    if m and set(m.group(2)) <= {"."}:
        m = None
    if not m:
        raise ValueError(
            f"Colab opens notebooks from GitHub only; {repo_url!r} is not a "
            "https://github.com/<owner>/<repo> URL."
        )
    return m.group(1), m.group(2)
