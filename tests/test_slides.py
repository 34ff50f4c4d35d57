"""Slides from the executed chapters: glued values filled in, slides made from what the chapter
marks (goals, answer, section leads, statements, figures, '% slide' blocks, summary) within the
word budget with the rest in speaker notes, no raw label, references linked to the online book,
long tables split, no address outside the deck's folder, and reveal.js only with the pinned digest."""

import os
import re
import stat
import tarfile

import pytest

from companion.book.editions import slides as sl
from companion.book.teaching.course_plan import prose_words
from companion.book.editions.slides import REVEAL_VERSION, deck_html, resolve_glue, vendor_reveal

GLUE = {
    "n": {"data": {"text/plain": "0.123456"}},
    "np_value": {"data": {"text/plain": "np.float64(0.5)"}},
    "status": {"data": {"text/plain": "holds"}},
    "fig": {"data": {"text/plain": "<Figure>", "image/png": "iVBORw0KGgo="}},
}


def test_glued_numbers_take_their_format_and_numpy_scalars_are_read():
    out = resolve_glue("a {glue:text}`n:.2f` b {glue:text}`np_value:.0%` c {glue:text}`status`", GLUE)
    assert out == "a 0.12 b 50% c holds"


def test_a_glued_figure_becomes_an_image_with_its_caption():
    text = "```{glue:figure} fig\n:name: fig-x\n\nThe caption.\n```\n"
    out = resolve_glue(text, GLUE)
    assert 'src="data:image/png;base64,iVBORw0KGgo="' in out and "The caption." in out and ":name:" not in out


def test_a_missing_glued_name_is_an_error_not_a_placeholder():
    with pytest.raises(KeyError, match="'absent'"):
        resolve_glue("{glue:text}`absent`", GLUE)


def test_a_deck_names_no_address_outside_its_folder():
    page = deck_html("T", ["<p>\\(x\\)</p>"])
    assert not re.search(r"(src|href)=\"(https?:)?//", page)
    assert 'src="vendor/mathjax/tex-chtml.js"' in page and 'src="vendor/reveal/reveal.js"' in page


def _fake_npm(tmp_path, payload: bytes):
    """An `npm` on PATH whose `pack` writes a reveal.js tarball with ``payload`` inside."""
    src = tmp_path / "pkg" / "package" / "dist"
    src.mkdir(parents=True)
    (src / "reveal.js").write_bytes(payload)
    tgz = tmp_path / f"reveal.js-{REVEAL_VERSION}.tgz"
    with tarfile.open(tgz, "w:gz") as tar:
        tar.add(tmp_path / "pkg" / "package", arcname="package")
    npm = tmp_path / "bin" / "npm"
    npm.parent.mkdir()
    npm.write_text(f'#!/bin/sh\nwhile [ "$1" != "--pack-destination" ]; do shift; done\ncp {tgz} "$2"/\n')
    npm.chmod(npm.stat().st_mode | stat.S_IEXEC)
    return npm.parent


def test_a_tarball_with_another_digest_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", f"{_fake_npm(tmp_path, b'not reveal')}{os.pathsep}{os.environ['PATH']}")
    with pytest.raises(RuntimeError, match="digest .* expected"):
        vendor_reveal(tmp_path / "cache")
    assert not (tmp_path / "cache" / f"reveal.js-{REVEAL_VERSION}" / "reveal.js").exists()


LONG = " ".join(f"Sentence number {w} says one more thing about the form." for w in "abcdefghijklmn")
TABLE = "| model | score |\n| --- | --- |\n" + "\n".join(f"| m{k} | 0.{k} |" for k in range(20))
CHAPTER = f"""# The chapter

:::{{admonition}} Learning goals
:class: tip
After this chapter you can

- compute a score;
- read it against a null.
:::

:::{{admonition}} The answer
:class: tip

**Question.** Is the form symmetric?

- Mostly, see {{ref}}`in the book <sec-null>`.
- {LONG}
:::

(sec-null)=
## The null

{LONG}

Second paragraph, only for the notes.

:::{{prf:definition}} Score
:label: def-score

$s = \\operatorname{{tr}}(MM)/\\lVert M\\rVert_F^2$.
:::

:::{{prf:proof}}
Expand the square.
:::

@@figure:0@@

## A table

% slide: Scores of the models
{TABLE}
% end slide

Prose after the mark goes to the notes.

## Exercises

:::{{exercise}}
:label: ex-chapter-1

Do it.
:::

## What to remember

- One point.
- Another point.
- A third point.
"""
FIGURES = [("iVBORw0KGgo=", "a plot of the null", "The null of the score. " + LONG)]


def _plan():
    return sl.plan_chapter(CHAPTER, FIGURES, "chapter", lambda label: f"https://o.github.io/r/book/chapter.html#{label}")


def test_every_slide_is_within_the_word_budget_and_the_rest_goes_to_notes():
    title, slides = _plan()
    assert title == "The chapter"
    assert all(s.words() <= sl.SLIDE_WORDS for s in slides), [(s.title, s.words()) for s in slides]
    assert prose_words(LONG) > sl.SLIDE_WORDS          # so something had to move
    notes = " ".join(s.notes for s in slides)
    assert "Sentence number n" in notes and "Second paragraph, only for the notes." in notes
    assert "Prose after the mark goes to the notes." in notes and "Expand the square." in notes


def test_the_deck_follows_what_the_chapter_marks():
    _, slides = _plan()
    titles = [s.title for s in slides]
    assert titles[0] == "The chapter" and "Is the form symmetric?" in slides[0].body
    assert "Learning goals" in titles and "The answer" in titles and "What to remember" in titles
    assert "Definition: Score" in titles and "The null" in titles
    assert titles[-1] == "Exercises" and "https://o.github.io/r/book/chapter.html#ex-chapter-1" in slides[-1].body
    figure = [s for s in slides if s.figure]
    assert len(figure) == 1 and figure[0].figure == FIGURES[0][:2] and figure[0].caption.startswith("The null")


def test_a_long_table_is_split_with_its_header_on_every_slide():
    _, slides = _plan()
    tables = [s for s in slides if s.title == "Scores of the models"]
    assert len(tables) == -(-20 // sl.TABLE_ROWS)
    rows = [r for s in tables for r in s.body.splitlines() if re.match(r"^\| m\d", r)]
    assert rows == [f"| m{k} | 0.{k} |" for k in range(20)]
    assert all(s.body.count("| model | score |") == 1 for s in tables)
    assert all(len([r for r in s.body.splitlines() if re.match(r"^\| m\d", r)]) <= sl.TABLE_ROWS for s in tables)


def test_no_label_prints_and_references_link_to_the_online_book():
    links = {"sec-null": "https://o.github.io/r/book/chapter.html#sec-null"}
    _, slides = _plan()
    page = "\n".join(sl.render_slide(s, links=links) for s in slides)
    assert "(sec-null)=" not in page and ":label:" not in page and ":class:" not in page
    assert '<a href="https://o.github.io/r/book/chapter.html#sec-null">in the book</a>' in page
    # a reference without text of its own shows words, not the label's name
    bare = sl.plan_chapter("# T\n\n## S\n\nSee " + sl._links_text("{ref}`f3-gate`") + ".\n", [], "t")[1]
    html = sl.render_slide(bare[1], links={"f3-gate": "https://o.github.io/r/x.html#f3-gate"})
    assert ">in the book</a>" in html and ">f3-gate<" not in html


def test_trim_keeps_whole_sentences_and_never_cuts_a_formula():
    kept, rest = sl.trim(LONG, 25)
    assert prose_words(kept) <= 25 and kept.endswith(".") and rest and LONG.startswith(kept)
    formula = "$" + " + ".join(f"x_{k}" for k in range(30)) + "$"
    one = "Words " * 30 + formula + " and more words" * 10
    kept, rest = sl.trim(one, 40)
    assert kept.count("$") % 2 == 0 and rest.count("$") % 2 == 0 and kept.endswith("...")


def test_a_marked_block_over_the_budget_is_refused_with_its_name():
    page = "# T\n\n## S\n\n% slide: Too much\n" + LONG + "\n% end slide\n"
    with pytest.raises(sl.SlideError, match=r"chapter-x.*'Too much'.*budget"):
        sl.plan_chapter(page, [], "chapter-x")


def test_a_cell_tagged_slide_that_draws_nothing_is_refused_with_its_name():
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# T"),
                nbformat.v4.new_code_cell("x = 1", metadata={"tags": ["slide"]})]
    with pytest.raises(sl.SlideError, match=r"mychapter: code cell 1 .*'slide'"):
        sl._chapter_markdown(nb, {}, "mychapter")
    nb.cells[1].outputs = [nbformat.v4.new_output("display_data", data={"image/png": "iVBORw0KGgo="})]
    markdown, figures = sl._chapter_markdown(nb, {}, "mychapter")
    assert len(figures) == 1 and "@@figure:0@@" in markdown


def test_a_deck_is_made_for_a_1280_by_720_screen():
    page = deck_html("T", ["<h2>x</h2>"])
    assert "width: 1280, height: 720" in page
