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


def _nb(tmp_path, cells):
    import json

    p = tmp_path / "chapter.ipynb"
    p.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    return p


def _code(src, outputs=()):
    return {"cell_type": "code", "source": src, "outputs": list(outputs), "metadata": {}}


PNG = {"output_type": "display_data", "data": {"image/png": "iVBOR", "text/plain": "<Figure>"}, "metadata": {}}


def test_a_drawing_cell_without_an_image_is_named_and_a_shown_or_glued_one_passes(tmp_path):
    from companion.book.checks.figure_check import cells_without_image

    nb = _nb(tmp_path, [
        _code("from companion.book.figures.verdicts import status_overview, STATUS_STYLE\n"),
        _code("fig, ax = plt.subplots()\nax.plot([1, 2])\nplt.show()\n"),           # never shown
        _code("fig = status_overview(v)\nfig\n", [PNG]),                             # shown
        _code("glue('f', status_overview(v), display=False)\n", [PNG]),              # glued
        _code("overview = status_overview(v)\n"),                                    # built, dropped
        _code("x = STATUS_STYLE['holds']  # status_overview( in a comment\n"),       # draws nothing
    ])
    found = cells_without_image(nb)
    assert len(found) == 2 and "code cell 2 (fig, ax = plt.subplots())" in found[0]
    assert "code cell 5 (overview = status_overview(v))" in found[1]



def test_a_figure_glued_to_the_store_counts_as_shown(tmp_path):
    import json

    from companion.book.checks.figure_check import cells_without_image

    nb = _nb(tmp_path, [_code("fig, ax = plt.subplots()\nglue(\"fig_forms\", fig, display=False)\n"),
                        _code("fig, ax = plt.subplots()\nglue(\"fig_missing\", fig, display=False)\n")])
    (tmp_path / "chapter.glue.json").write_text(json.dumps({"fig_forms": PNG, "n": {"data": {"text/plain": "1"}}}))
    found = cells_without_image(nb)
    assert len(found) == 1 and "code cell 2" in found[0]


def test_without_a_glue_store_a_figure_the_page_pastes_counts_as_shown(tmp_path):
    from companion.book.checks.figure_check import cells_without_image

    nb = _nb(tmp_path, [_code("fig, ax = plt.subplots()\nglue(\"fig_forms\", fig, display=False)\n"),
                        _code("fig, ax = plt.subplots()\nglue(\"fig_lost\", fig, display=False)\n")])
    page = "```{glue:figure} fig_forms\n:name: f\n```\n"
    found = cells_without_image(nb, page)
    assert len(found) == 1 and "code cell 2" in found[0]


def test_a_figure_glued_through_the_books_helper_counts_as_shown(tmp_path):
    """Chapters glue figures with companion.book.paste.glue_figure, not glue(...) itself."""
    import json

    from companion.book.checks.figure_check import cells_without_image

    nb = _nb(tmp_path, [_code("fig, ax = plt.subplots()\nglue_figure(\"fig_forms\", fig)\n"),
                        _code("fig, ax = plt.subplots()\nglue_figure(\"fig_missing\", fig)\n")])
    (tmp_path / "chapter.glue.json").write_text(json.dumps({"fig_forms": PNG}))
    found = cells_without_image(nb)
    assert len(found) == 1 and "code cell 2" in found[0]
