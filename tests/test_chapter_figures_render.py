"""Every figure a chapter draws reaches the page.

The book's kernels run matplotlib under Agg (the Makefile's MPLBACKEND=Agg), where
``plt.show()`` draws nothing: a chapter shows a figure by ``display(fig)`` or by leaving it as
the cell's last value, and the start-up file (book/_ipython) turns it into an image with alt
text and source data.  A ``plt.show()`` left in a chapter is a figure its readers never see."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

BOOK = Path(__file__).resolve().parents[1] / "book"
CHAPTERS = sorted(BOOK.glob("*.md"))


def _code_cells(text: str):
    return re.findall(r"```\{code-cell\}[^\n]*\n(.*?)```", text, flags=re.S)


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_no_chapter_relies_on_plt_show(chapter):
    shows = [c for c in _code_cells(chapter.read_text()) if re.search(r"\bplt\.show\(\)", c)]
    assert not shows, f"{chapter.name}: plt.show() draws nothing under Agg; display(fig) instead"


def test_the_check_finds_a_plt_show():
    cell = "```{code-cell} ipython3\nfig, ax = plt.subplots()\nplt.show()\n```\n"
    assert [c for c in _code_cells(cell) if re.search(r"\bplt\.show\(\)", c)]
