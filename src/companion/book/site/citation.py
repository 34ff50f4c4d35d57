"""How to cite the book and the paper, and which version of the book a page belongs to.

- :func:`book_version`: the package version, the short git commit the site is built from
  (``0.1.0+g1a2b3c4``) and the revision of the verdict rules (:func:`rules_revision`), so a
  version label names what decided the verdicts; a development version (``0.2.0.dev0``)
  is labelled unreleased; without git (a source archive) the commit comes from
  ``COMPANION_COMMIT`` or reads ``unknown commit``;
- :func:`book_bibtex` and :func:`paper_bibtex`: BibTeX entries, the book's from
  ``CITATION.cff`` (its title, authors, URL) with the version and commit of this build, the
  paper's from ``book/references.bib``.

The Sphinx extension puts the version on every page and the two entries in the footer and
in the ``cite-this`` box of the front page.
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from ...base.paths import ROOT

__all__ = ["ROOT", "PAPER_KEY", "Version", "book_version", "rules_revision", "git_commit", "load_citation",
           "book_bibtex", "paper_bibtex", "bib_entry"]

PAPER_KEY = "saponati2025structures"


@dataclass(frozen=True)
class Version:
    package: str
    commit: str | None  # short hash, None when unknown
    rules: str | None = None  # the version (or revision) of the one rules file in force ("4")

    @property
    def released(self) -> bool:
        """A release (``0.2.0``), not a development build of the next one (``0.2.0.dev0``)."""
        from packaging.version import Version as _V

        return not (_V(self.package).is_devrelease or _V(self.package).is_prerelease)

    @property
    def label(self) -> str:
        """``0.2.0.dev0 (unreleased; verdict rules v4; commit 1a2b3c4)``: the version, whether
        it is a release, the rules file that decided its verdicts (so two builds whose verdicts
        can differ never share a label) and the commit (``unknown commit`` without one)."""
        parts = [] if self.released else ["unreleased"]
        if self.rules:
            parts.append(f"verdict rules v{self.rules}")
        parts.append("commit " + self.commit if self.commit else "unknown commit")
        return f"{self.package} ({'; '.join(parts)})"

    @property
    def pep440(self) -> str:
        return f"{self.package}+g{self.commit}" if self.commit else self.package


def git_commit(root: Path | str = ROOT) -> str | None:
    """The short hash of ``HEAD`` in ``root``; ``COMPANION_COMMIT`` where git or the
    repository is absent; ``None`` if neither is available."""
    try:
        out = subprocess.run(["git", "-C", str(root), "rev-parse", "--short=7", "HEAD"],
                             capture_output=True, text=True, timeout=20)
        if out.returncode == 0 and re.fullmatch(r"[0-9a-f]{7,40}", out.stdout.strip()):
            return out.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        pass
    env = os.environ.get("COMPANION_COMMIT", "").strip()
    return env[:7] if re.fullmatch(r"[0-9a-fA-F]{7,40}", env) else None


def package_version() -> str:
    from ... import __version__

    return __version__


def rules_revision(root: Path | str = ROOT) -> str | None:
    """The version of the one rules file in force, ``data/verdict_rules.yaml`` (its ``revision``
    where it states one, else its ``version``);
    ``None`` where the file is absent (the student edition's copy of the pages)."""
    import yaml

    from ...base.bounded_yaml import load_bounded

    path = Path(root) / "data" / "verdict_rules.yaml"
    if not path.is_file():
        return None
    try:
        data = load_bounded(path.read_text(encoding="utf-8"))
    except (yaml.YAMLError, OverflowError) as err:
        raise ValueError(f"{path} cannot be read as YAML: {err}") from err
    field = "revision" if isinstance(data, dict) and "revision" in data else "version"
    value = data.get(field, "") if isinstance(data, dict) else ""
    rev = str(value)
    if isinstance(value, float):   # YAML reads 2.10 as the number 2.1: the digits as written
        written = re.search(rf"^{field}:[ \t]*(\d+\.\d+)[ \t]*(?:#.*)?$", path.read_text(encoding="utf-8"), re.M)
        rev = written.group(1) if written and float(written.group(1)) == value else rev
    if not re.fullmatch(r"\d+(\.\d+)?", rev):
        raise ValueError(f"{path}: revision {rev!r} is not a number such as 2 or 2.2; write it as revision: \"2.2\"")
    return rev


def book_version(root: Path | str = ROOT) -> Version:
    """The package version, the commit of ``root`` and the version of the rules file in force."""
    return Version(package_version(), git_commit(root), rules_revision(root) or rules_revision(ROOT))


def load_citation(root: Path | str = ROOT) -> dict:
    """``CITATION.cff`` as a dict: a file that is not a regular file (a FIFO would block), that
    does not parse, or whose ``authors`` is no list of people or ``date-released`` no
    ``YYYY-MM-DD`` date, is one error naming it."""
    import datetime

    import yaml

    from ...base.bounded_yaml import load_bounded
    from ...base.paths import regular_file

    path = Path(root) / "CITATION.cff"
    try:
        regular_file(path, "the citation file")
        data = load_bounded(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, OverflowError, yaml.YAMLError) as err:
        raise ValueError(f"{path} cannot be read as YAML: {' '.join(str(err).split())[:300]}") from None
    if not isinstance(data, dict) or "title" not in data:
        raise ValueError(f"{path} is not a citation file (no title)")
    title = data["title"]
    if isinstance(title, bool) or not isinstance(title, (str, int, float)) or not str(title).strip():
        raise ValueError(f"{path}: title {' '.join(str(title).split())[:80]!r} is no text; write the book's title, "
                         "e.g. title: \"An executable companion\"")
    authors = data.get("authors", [])
    people = isinstance(authors, list) and bool(authors) and all(
        isinstance(a, dict) and any(isinstance(a.get(k), str) and a[k].strip()
                                    for k in ("name", "family-names", "given-names")) for a in authors)
    if not people:
        raise ValueError(f"{path}: authors must be a list of people, each with a name or family-names "
                         f"(got {' '.join(str(authors).split())[:80]!r}); see the Citation File Format")
    date = data.get("date-released")
    if date is not None and not isinstance(date, datetime.date) and not (
            isinstance(date, str) and re.fullmatch(r"\d{4}-\d{2}-\d{2}", date.strip())):
        raise ValueError(f"{path}: date-released {str(date)[:40]!r} is not a date written YYYY-MM-DD; write it so, "
                         "e.g. date-released: \"2026-11-25\"")
    return data


def _person(author: dict) -> str:
    """An author as BibTeX names one: the ``name`` where it is written, else ``{family}, {given}``;
    a field left empty (``given-names:`` with nothing after it, ``name: ""``) is no part of it."""
    def given(key) -> str:
        value = author.get(key)
        return _text_field(value) if isinstance(value, (str, int, float)) and not isinstance(value, bool) else ""

    if given("name"):
        return "{" + given("name") + "}"
    # each part braced: an "and" inside a family name (Smith and Jones) would split the author in two
    parts = [given(k) for k in ("family-names", "given-names")]
    return ", ".join("{" + p + "}" for p in parts if p)


def _braced(text) -> str:
    """``text`` on one line and without braces: a brace in a field would close it and open fields
    of its own, a line break end the Markdown block it is quoted in (the Colab cite box)."""
    return " ".join(str(text).replace("{", "").replace("}", "").split())


#: what LaTeX reads as markup in a field's text: ``%`` a comment (the rest of the title lost),
#: ``& # _ $ ^`` an error, ``~`` a space, a backslash a command; each written as the character itself
_LATEX = {"\\": r"\textbackslash{}", "%": r"\%", "&": r"\&", "#": r"\#", "_": r"\_", "$": r"\$",
          "~": r"\textasciitilde{}", "^": r"\textasciicircum{}"}


def _text_field(text) -> str:
    """A field that is text (a title, a name, a note): :func:`_braced`, its LaTeX special
    characters escaped (an address or a DOI is written as it is)."""
    return re.sub(r"[\\%&#_$~^]", lambda m: _LATEX[m.group(0)], _braced(text))


def book_bibtex(version: Version | None = None, root: Path | str = ROOT) -> str:
    """The book's BibTeX entry (``@software``) for this version and commit."""
    cff = load_citation(root)
    version = version or book_version(root)
    year = str(cff.get("date-released", ""))[:4] or "2026"
    fields = [
        ("title", "{" + _text_field(cff["title"]) + "}"),
        ("author", " and ".join(_person(a) for a in cff.get("authors", []))),
        ("year", year),
        ("version", version.package),
        ("note", _text_field(f"Version {version.label}")),
        ("url", _braced(cff.get("url") or cff.get("repository-code", ""))),
    ]
    if cff.get("doi"):
        fields.append(("doi", _braced(cff["doi"])))
    body = ",\n".join(f"  {k:<7} = {{{v}}}" for k, v in fields if v)
    return f"@software{{companion{year},\n{body}\n}}"


def bib_entry(key: str, bib: Path | str | None = None) -> str:
    """The entry ``key`` of a BibTeX file, verbatim (a missing key is an error naming it)."""
    from ...base.paths import regular_file

    bib = Path(bib) if bib is not None else ROOT / "book" / "references.bib"
    try:
        regular_file(bib, "the bibliography")   # a FIFO would block the build
        text = bib.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise ValueError(f"{bib} cannot be read ({type(err).__name__}); give the book's references.bib") from None
    # as BibTeX reads an entry: blanks around its type and key, its fields in braces or in parentheses
    m = re.search(r"^[ \t]*(?P<at>@)[ \t]*\w+[ \t]*(?P<open>[{(])[ \t]*" + re.escape(key) + r"[ \t]*,", text, re.M)
    if not m:
        raise KeyError(f"{bib} has no entry {key!r}")
    close, depth = "}" if m.group("open") == "{" else ")", 0   # depth: of the braces inside the entry
    for j in range(m.end("open"), len(text)):
        if text[j] == close and depth == 0:
            return text[m.start("at"):j + 1]
        depth += {"{": 1, "}": -1}.get(text[j], 0)
    raise ValueError(f"{bib}: the entry {key!r} is not closed")


def paper_bibtex(bib: Path | str | None = None) -> str:
    """The paper's BibTeX entry (from ``book/references.bib``)."""
    return bib_entry(PAPER_KEY, bib)
