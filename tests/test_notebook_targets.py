"""No raw MyST target reaches a generated notebook (issue 74: "generated notebooks show raw
labels", 79 ``(label)=`` lines): a target line ``(label)=`` before a heading or block is the
book's anchor, which Jupyter and Colab would show as text, so the notebooks drop it and keep
the heading or block after it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from companion.book.editions import notebooks as nbgen

ROOT = Path(__file__).resolve().parents[1]
TARGET = re.compile(r"^\s*\([A-Za-z0-9_.:-]+\)=\s*$", re.M)


def test_no_chapter_s_notebook_shows_a_target_line():
    chapters = nbgen.book_chapters(ROOT)
    with_targets = [c for c in chapters if TARGET.search(c.source.read_text(encoding="utf-8"))]
    assert with_targets, "no chapter has a target line: the check below checks nothing"
    for chapter in chapters:
        for student in (False, True):
            nb = nbgen.chapter_notebook(chapter, "x", "main", student=student, executed=None)
            shown = [c.source for c in nb.cells if c.cell_type == "markdown" and TARGET.search(c.source)]
            assert not shown, (chapter.docname, TARGET.search(shown[0]).group(0))


@pytest.mark.parametrize("md, want", [
    ("(sec-a)=\n## A section\n\nText.", "## A section\n\nText."),
    ("Before.\n\n(ro-beta)=\n## What beta is", "Before.\n\n## What beta is"),
    (":::{note}\n(inner)=\nInside.\n:::", "> **Note**\n>\n> Inside.\n"),
    ("```python\nx = (a)\n```", "```python\nx = (a)\n```"),
    ("An equation (a)= b in prose stays.", "An equation (a)= b in prose stays."),
])
def test_a_target_line_is_dropped_and_nothing_else(md, want):
    assert nbgen.colab_markdown(md) == want
