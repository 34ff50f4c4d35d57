"""The pages a Jupyter Book table of contents (``_toc.yml``) lists, read one way for every
tool: the site's chapter list (:func:`companion.book.site.chapters.toc_docnames`) and the
chapter registry (:func:`companion.book.budgets.chapters_registry.toc_pages`) both call
:func:`toc_entries` on the parsed file."""

from __future__ import annotations

import re
from pathlib import Path

__all__ = ["toc_entries", "strip_suffix"]


def strip_suffix(name: str) -> str:
    """A page's path without surrounding blanks or slashes and without ``.md``/``.ipynb``."""
    return re.sub(r"\.(md|ipynb)$", "", name.strip().strip("/"))


def toc_entries(toc, where: Path | str) -> list[str]:
    """Every ``root:`` and ``file:`` entry of the parsed table of contents ``toc`` (root first,
    then parts, chapters and their sections in reading order), each through
    :func:`strip_suffix`, each once.  A ``url:`` entry is no page.  Refused in one line naming
    ``where`` (ValueError): a ``glob:`` entry (its pages would be missing from every list made
    here), an entry that is no path or is empty, a ``parts``/``chapters``/``sections`` that is
    no list, and a path that leaves the book's folder (``..``, a backslash, ``~``, absolute)."""
    names: list[str] = []

    def walk(node):
        if isinstance(node, dict):
            if "glob" in node:
                raise ValueError(f"{where}: the entry glob: {node['glob']!r} is not read by the companion's tools; "
                                 "list each page with file: instead.")
            for key in ("root", "file"):
                if key in node and not isinstance(node[key], str):
                    raise ValueError(f"{where}: {key}: {str(node[key])[:60]!r} is not a page's path; write one "
                                     "path, such as book/intro.")
                if isinstance(node.get(key), str):
                    names.append(strip_suffix(node[key]))
            for key in ("parts", "chapters", "sections"):
                if not isinstance(node.get(key) or [], list):
                    raise ValueError(f"{where}: {key}: must be a list of entries (- file: ...), not "
                                     f"{str(node[key])[:60]!r}.")
                for child in node.get(key) or []:
                    walk(child)
        elif isinstance(node, list):
            for child in node:
                walk(child)

    walk(toc)
    for n in names:   # every page lies in the book: its notebook, deck and student copy are written under --out
        if not n:
            raise ValueError(f"{where}: a file entry is empty; give each page's path, such as book/intro.")
        if ".." in n.split("/") or "\\" in n or n.startswith("~") or Path(n).is_absolute():
            raise ValueError(f"{where}: the entry {n!r} leaves the book's folder; list pages by their path "
                             "under the repository root, such as book/intro.")
    return list(dict.fromkeys(names))
