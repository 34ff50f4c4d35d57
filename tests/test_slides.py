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
    markdown, figures, tables = sl._chapter_markdown(nb, {}, "mychapter")
    assert len(figures) == 1 and "@@figure:0@@" in markdown and tables == []
    # a table is as good as a figure for a cell tagged 'slide'
    nb.cells[1].outputs = [nbformat.v4.new_output("execute_result", data={"text/html": HTML_TABLE(3)})]
    markdown, figures, tables = sl._chapter_markdown(nb, {}, "mychapter")
    assert figures == [] and tables == [(HTML_TABLE(3), True)] and "@@table:0@@" in markdown


def test_a_deck_is_made_for_a_1280_by_720_screen():
    page = deck_html("T", ["<h2>x</h2>"])
    assert "width: 1280, height: 720" in page


def HTML_TABLE(rows: int, cell: str = "r") -> str:
    """A table as companion.book.tables.readable writes it, with ``rows`` body rows."""
    body = "".join(f"<tr><td>{cell}{k}</td><td class=\"num\">{k}.5</td></tr>" for k in range(rows))
    return (f'<table class="companion-table table"><caption>Scores</caption><thead><tr><th scope="col">model</th>'
            f'<th scope="col" class="num">score</th></tr></thead><tbody>{body}</tbody></table>')


def test_a_long_html_table_is_split_with_its_caption_and_header_on_every_piece():
    pieces = sl.split_html_table(HTML_TABLE(20), rows=8)
    assert len(pieces) == 3
    rows = [r for p in pieces for r in re.findall(r"<td>(r\d+)</td>", p)]
    assert rows == [f"r{k}" for k in range(20)]
    assert all(p.count("<caption>Scores</caption>") == 1 and p.count("<th ") == 2 for p in pieces)
    assert sl.split_html_table(HTML_TABLE(8), rows=8) == [HTML_TABLE(8)]
    assert sl.split_html_table("<table><tr><td>x</td></tr></table>") == ["<table><tr><td>x</td></tr></table>"]


def _table_chapter(answer: bool = True, tagged: tuple = ()):
    """A chapter with three tables: one before the answer box, two after it."""
    import nbformat

    nb = nbformat.v4.new_notebook()
    cells = [nbformat.v4.new_markdown_cell("# T"), nbformat.v4.new_code_cell("a")]
    if answer:
        cells.append(nbformat.v4.new_markdown_cell(":::{admonition} The answer\n:class: tip\n\n- It holds.\n:::"))
    cells += [nbformat.v4.new_markdown_cell("## Results\n\nThe numbers."), nbformat.v4.new_code_cell("b"),
              nbformat.v4.new_code_cell("c")]
    code = [c for c in cells if c.cell_type == "code"]
    for cell, name in zip(code, ("before", "first", "second")):
        cell.outputs = [nbformat.v4.new_output("execute_result", data={"text/html": HTML_TABLE(2, name)})]
        if name in tagged:
            cell.metadata["tags"] = ["slide"]
    nb.cells = cells
    markdown, figures, tables = sl._chapter_markdown(nb, {}, "t")
    return sl.plan_chapter(markdown, figures, "t", tables=tables)[1]


def _tables_of(slides):
    return [re.findall(r"<td>([a-z]+)\d</td>", s.table)[0] for s in slides if s.table]


def test_the_key_table_is_the_first_after_the_answer_box_or_the_tagged_ones():
    assert _tables_of(_table_chapter()) == ["first"]                       # not the one before the box
    assert _tables_of(_table_chapter(answer=False)) == ["before"]          # no box: the first shown
    assert _tables_of(_table_chapter(tagged=("second",))) == ["second"]    # a tag overrides the rule
    assert _tables_of(_table_chapter(tagged=("before", "second"))) == ["before", "second"]
    slide = [s for s in _table_chapter() if s.table][0]
    assert slide.title == "Results"                                        # in the section that shows it
    assert slide.body == "The numbers."                                    # on the slide of the lead that introduces it
    assert 'class="deck-table with-text"' in sl.render_slide(slide)        # a shorter box under the text


def test_a_table_after_a_long_lead_gets_slides_of_its_own():
    lead = " ".join(["word"] * 31) + "."
    page = f"# T\n\n## Results\n\n{lead}\n\n@@table:0@@\n"
    slides = sl.plan_chapter(page, [], "t", tables=[(HTML_TABLE(20), False)])[1]
    assert [(s.body == lead, bool(s.table)) for s in slides if s.title == "Results"] == \
        [(True, False)] + [(False, True)] * 3
    short = sl.plan_chapter(page.replace(lead, "Short."), [], "t", tables=[(HTML_TABLE(20), False)])[1]
    assert [(s.body == "Short.", bool(s.table)) for s in short if s.title == "Results"] == \
        [(True, True)] + [(False, True)] * 2


def test_a_table_on_a_slide_keeps_only_inert_markup_and_links_to_the_online_book():
    table = ('<table><tbody><tr><td><script>alert(1)</script><a href="survey.html#x" onclick="f()">s</a>'
             '</td></tr></tbody></table>')
    out = sl.render_slide(sl.Slide("T", table=table), links={"survey": "https://o.github.io/r/book/survey.html"})
    assert "<script>" not in out and "&lt;script&gt;" in out and "onclick" not in out
    assert 'href="https://o.github.io/r/book/survey.html#x"' in out
    assert 'class="deck-table" tabindex="0" role="region"' in out


def test_a_deck_without_the_table_its_chapter_shows_stops_the_build_naming_the_chapter(tmp_path, monkeypatch):
    import nbformat
    from types import SimpleNamespace

    from companion.book.site import chapters as chapters_mod, executions

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# T\n\n## S\n\nProse."), nbformat.v4.new_code_cell("t")]
    nb.cells[1].outputs = [nbformat.v4.new_output("execute_result", data={"text/html": HTML_TABLE(2)})]
    assert sl.shown_tables(nb) == 1
    nb.cells[1].metadata["tags"] = ["remove-output"]
    assert sl.shown_tables(nb) == 0
    nb.cells[1].metadata["tags"] = []
    (tmp_path / "_build" / "executed").mkdir(parents=True)
    chapter = SimpleNamespace(docname="book/tabled", source=tmp_path / "book" / "tabled.md")
    monkeypatch.setattr(chapters_mod, "book_chapters", lambda root: [chapter])
    monkeypatch.setattr(chapters_mod, "book_links", lambda root, site: {})
    monkeypatch.setattr(chapters_mod, "repository_url", lambda root: "https://github.com/o/r")
    monkeypatch.setattr(executions, "find", lambda chs, srcs: {"book/tabled": SimpleNamespace(notebook=nb, glue={})})
    monkeypatch.setattr(sl, "vendor_reveal", lambda: tmp_path)
    monkeypatch.setattr(sl, "_mathjax_dir", lambda: tmp_path)
    (tmp_path / "out" / "vendor" / "reveal").mkdir(parents=True)
    (tmp_path / "out" / "vendor" / "mathjax").mkdir(parents=True)
    sl.build_slides(tmp_path, tmp_path / "out")                 # the key table is on a slide: built
    assert "<table" in (tmp_path / "out" / "tabled.slides.html").read_text()
    real = sl.chapter_slides
    monkeypatch.setattr(sl, "chapter_slides", lambda *a, **k: (lambda t, s: (t, [x for x in s if "<table" not in x]))(
        *real(*a, **k)))
    with pytest.raises(sl.SlideError, match=r"^tabled: the chapter shows 1 table\(s\) and its deck \(tabled.slides.html\) none"):
        sl.build_slides(tmp_path, tmp_path / "out")


def test_a_section_s_lead_shows_the_picture_it_announces():
    page = ("# T\n\n## At a glance\n\nEvery claim's status in one picture.\n\n@@figure:0@@\n\n"
            "## Later\n\nA lead.\n\n:::{prf:definition} D\nx\n:::\n\n@@figure:1@@\n")
    figures = [("iVBORw0KGgo=", "the overview", ""), ("iVBORw0KGgo=", "another", "Its caption.")]
    slides = sl.plan_chapter(page, figures, "t")[1]
    glance = [s for s in slides if s.title == "At a glance"]
    assert len(glance) == 1 and glance[0].figure == figures[0][:2] and "one picture" in glance[0].body
    assert '<figure class="with-text">' in sl.render_slide(glance[0])
    # a figure after a statement keeps its own slide
    later = [s for s in slides if s.title == "Later"]
    assert [bool(s.figure) for s in later] == [False, True]
    # a lead and a caption over the budget together keep two slides
    long = "# T\n\n## S\n\n" + LONG + "\n\n@@figure:0@@\n"
    two = sl.plan_chapter(long, [("iVBORw0KGgo=", "x", LONG)], "t")[1]
    assert [bool(s.figure) for s in two if s.title == "S"] == [False, True]


def test_nothing_on_a_slide_widens_it():
    """The deck's style sheet lets a table, a code block and a display formula scroll inside
    their own box and keeps MathJax's hidden copy of a formula to 1 px (it widened two slides)."""
    page = deck_html("T", ["<h2>x</h2>"])
    css = re.search(r"<style>(.*?)</style>", page, re.S).group(1)
    rule = lambda sel: re.search(re.escape(sel) + r"\s*\{([^}]*)\}", css).group(1)
    assert "overflow: auto" in rule(".reveal .deck-table") and "max-width: 100%" in rule(".reveal .deck-table")
    assert "overflow-x: auto" in rule(".reveal pre")
    assert "overflow-x: auto" in rule('.reveal mjx-container[display="true"]')
    assert "width: 1px !important" in rule(".reveal mjx-assistive-mml")
