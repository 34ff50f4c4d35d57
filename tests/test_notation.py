"""The notation page: in the table of contents, every row names where the paper introduces the
symbol and links where the book defines it, and every link points at a label or page that exists."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "book" / "notation.md"


def _rows(text: str) -> list[list[str]]:
    rows = []
    for line in text.splitlines():
        if line.startswith("| ") and not line.startswith("| Symbol") and not line.startswith("| ---"):
            rows.append([c.strip() for c in line.strip().strip("|").split(" | ")])
    return rows


def test_the_page_is_in_the_table_of_contents_and_has_no_code():
    assert "file: book/notation" in (ROOT / "_toc.yml").read_text(encoding="utf-8")
    text = PAGE.read_text(encoding="utf-8")
    assert "{code-cell}" not in text and not text.startswith("---")


def test_every_symbol_has_a_meaning_a_place_in_the_paper_and_a_link_into_the_book():
    rows = _rows(PAGE.read_text(encoding="utf-8"))
    assert len(rows) >= 20
    for row in rows:
        assert len(row) == 4, row
        symbol, meaning, paper, book = row
        assert symbol and len(meaning.split()) >= 3, row
        assert re.search(r"\b(Eqs?|Def|Prop|Thm|Cor|Fig|Table)\.?\s|this book", paper), row
        assert re.search(r"\{(prf:ref|ref|doc)\}`", book), row


def test_every_link_of_the_page_points_at_something_that_exists():
    text = PAGE.read_text(encoding="utf-8")
    sources = {p.stem: p.read_text(encoding="utf-8") for p in (ROOT / "book").glob("*.md")}
    labels = {m for s in sources.values() for m in re.findall(r"^\(([A-Za-z0-9_-]+)\)=", s, re.M)}
    prf = {m for s in sources.values() for m in re.findall(r"^:label: ([A-Za-z0-9_-]+)", s, re.M)}
    for doc in re.findall(r"\{doc\}`([^`]+)`", text):
        assert doc in sources, doc
    for ref in re.findall(r"\{ref\}`([^`]+)`", text):
        target = re.fullmatch(r"(?s).*<([^<>]+)>\s*", ref)   # `text <label>` names its label last
        assert (target.group(1) if target else ref) in labels, ref
    for ref in re.findall(r"\{prf:ref\}`([^`]+)`", text):
        assert ref in prf, ref
