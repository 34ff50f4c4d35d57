"""The intro notebook's "Cite this book" box holds what the site's box holds (issue 74: "the
intro notebook's Cite this box is empty"): the version, and the BibTeX of the book at this
version and of the paper, taken here from CITATION.cff and references.bib."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from companion.book.editions import notebooks as nbgen

ROOT = Path(__file__).resolve().parents[1]


def _unquoted(md: str) -> str:
    return "\n".join(re.sub(r"^> ?", "", line) for line in md.splitlines())


def test_the_cite_this_directive_becomes_a_box_with_both_entries():
    out = nbgen.colab_markdown("Before.\n\n```{cite-this}\n```\n\nAfter.")
    assert out.startswith("Before.\n\n> **Cite this book**") and out.endswith("\nAfter.")
    body = _unquoted(out)
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text(encoding="utf-8"))
    bib = (ROOT / "book" / "references.bib").read_text(encoding="utf-8")
    paper = re.search(r"^@inproceedings\{saponati2025structures,.*?^\}", bib, re.M | re.S).group(0)
    assert paper in body
    assert re.search(r"^@software\{companion\d{4},$", body, re.M)
    title = cff["title"].replace("{", "").replace("}", "")
    assert f"title   = {{{{{title}}}}}" in body
    assert body.count("```bibtex") == 2 and body.count("```") == 4


def test_the_intro_notebook_s_box_is_not_empty():
    intro = next(c for c in nbgen.book_chapters(ROOT) if c.docname == "book/intro")
    assert "{cite-this}" in intro.source.read_text(encoding="utf-8")
    nb = nbgen.chapter_notebook(intro, "x", "main", executed=None)
    box = next(c.source for c in nb.cells if "**Cite this book**" in c.source)
    after = box[box.index("**Cite this book**"):]
    assert "saponati2025structures" in after and "@software{" in after and "You are reading version" in after
