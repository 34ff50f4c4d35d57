"""Hostile round 15: what turns the chapters into other documents (decks, notebooks, the student
edition, the site's citation and changes), fed values and pages that are slightly off or hostile.

(a) the decks: a glued value that reads as one of the deck's own marks (``@@figure:0@@``), as a
MyST target, or holds ``& < _`` in a heading; a formula in a heading; the roles and the directive
myst-nb also pastes with (``{glue:any}``, ``{glue}``);
(b) the notebooks: MyST targets, roles, comments and fences as MyST reads them, not only as the
book happens to write them;
(c) the student edition: a solution's output, a page or an included file saved with a byte-order
mark or in UTF-16, a page that is not UTF-8;
(d) the site: the citation file and the paper's entry written in ways BibTeX and YAML allow, a
first outcome that is missing, words that only look like non-finite numbers.
"""

from __future__ import annotations

import html
import math
from decimal import Decimal
from html.parser import HTMLParser
from pathlib import Path

import nbformat
import pandas as pd
import pytest

from companion.book.site.chapters import JUPYTEXT_HEADER as HEADER   # every chapter's front matter
from one_line import one_line
from tiny_book import tiny_book

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
TABLE = "<table><thead><tr><th>a</th></tr></thead><tbody><tr><td>1</td></tr></tbody></table>"


def _glued(value: str) -> dict:
    return {"data": {"text/plain": repr(value)}}


def _md(text):
    return nbformat.v4.new_markdown_cell(text)


def _figure_cell():
    return nbformat.v4.new_code_cell("plot()", outputs=[nbformat.v4.new_output(
        "display_data", data={"image/png": PNG, "text/plain": "<Figure>"})])


def _table_cell():
    return nbformat.v4.new_code_cell("show()", outputs=[nbformat.v4.new_output(
        "display_data", data={"text/html": TABLE, "text/plain": "table"})])


def _deck(cells, glue):
    from companion.book.editions import slides as sl

    nb = nbformat.v4.new_notebook()
    nb.cells = cells
    return sl.chapter_slides(nb, glue, {}, chapter="c")


class _Text(HTMLParser):
    """The text of each element of ``tags`` in an HTML page, entities decoded (as a browser reads it)."""

    def __init__(self, tags):
        super().__init__(convert_charrefs=True)
        self.tags, self.open, self.found = tags, None, []

    def handle_starttag(self, tag, attrs):
        if tag in self.tags:
            self.open = tag
            self.found.append("")

    def handle_endtag(self, tag):
        if tag == self.open:
            self.open = None

    def handle_data(self, data):
        if self.open:
            self.found[-1] += data


def _texts(page: str, *tags) -> list[str]:
    p = _Text(set(tags))
    p.feed(page)
    return p.found


# ============================================================ (a) the decks

@pytest.mark.parametrize("mark", ["@@figure:0@@", "@@table:0@@"])
def test_a_glued_value_that_reads_as_a_deck_mark_is_its_text_not_a_figure_or_table(mark):
    # the value stood alone on its line and became a second copy of the chapter's figure (table)
    cells = [_md("# T\n\n## Pictures\n\nThe picture of the section."), _figure_cell(), _table_cell(),
             _md("## Later\n\nA lead sentence.\n\n{glue:text}`v`\n")]
    _, slides = _deck(cells, {"v": _glued(mark)})
    page = "\n".join(slides)
    assert page.count("<img ") == 1 and page.count("<table") == 1, (page.count("<img "), page.count("<table"))
    assert mark in html.unescape(page.replace("\\", ""))


def test_a_glued_deck_mark_in_a_chapter_without_figures_is_text_not_a_traceback():
    # IndexError: list index out of range, from deep inside plan_chapter
    _, slides = _deck([_md("# T\n\n## S\n\nA lead sentence.\n\n{glue:text}`v`\n")], {"v": _glued("@@figure:3@@")})
    assert "@@figure:3@@" in html.unescape("\n".join(slides).replace("\\", ""))


def test_a_glued_value_shaped_like_a_myst_target_stays_on_the_slide():
    # '(sec-x)=' on its own line was read as a label and dropped from the deck
    _, slides = _deck([_md("# T\n\n## S\n\n{glue:text}`v`\n")], {"v": _glued("(sec-x)=")})
    assert any("(sec-x)=" in html.unescape(s.replace("\\", "")) for s in slides), slides


def test_a_glued_value_in_a_heading_reads_on_its_slide_and_in_the_page_title_as_the_value():
    from companion.book.editions import slides as sl

    value = "p_value & <co>"
    title, slides = _deck([_md("# Loss of {glue:text}`v`\n\n## Why {glue:text}`v` holds\n\nA lead.\n")],
                          {"v": _glued(value)})
    heads = _texts("\n".join(slides), "h2")
    assert heads == [f"Loss of {value}", f"Why {value} holds"], heads
    assert _texts(sl.deck_html(title, slides), "title") == [f"Loss of {value}: slides"]


def test_a_formula_in_a_heading_is_typeset_on_its_slide():
    _, slides = _deck([_md("# T\n\n## What $\\beta_{ij}$ is\n\nA lead.\n")], {})
    assert _texts(slides[1], "h2") == ["What \\(\\beta_{ij}\\) is"], slides[1]


def test_every_role_myst_nb_pastes_text_with_shows_the_value_on_the_slide():
    # {glue:any} and {glue:} showed "`v` (computed by this chapter's code)" on the slide
    _, slides = _deck([_md("# T\n\n## S\n\nShares {glue:any}`v`, {glue:}`v` and {glue}`v:.1f`.\n")],
                      {"v": {"data": {"text/plain": "0.731"}}})
    text = " ".join(_texts("\n".join(slides), "p"))
    assert text == "Shares 0.731, 0.731 and 0.7.", text


def test_a_figure_pasted_with_the_glue_directive_is_on_the_slide():
    glue = {"fig": {"data": {"image/png": PNG, "text/plain": "<Figure>"}, "metadata": {}}}
    for fence in ("```{glue} fig\n```", ":::{glue:any} fig\n:::"):
        _, slides = _deck([_md(f"# T\n\n## S\n\nA lead.\n\n{fence}\n")], glue)
        assert "\n".join(slides).count("<img ") == 1, fence


def test_a_glued_link_definition_or_autolink_makes_no_link_on_the_slide():
    for value in ("[x]: javascript:alert(1)", "<javascript:alert(1)>", "[a](javascript:alert(1))"):
        _, slides = _deck([_md("# T\n\n## S\n\n[x]\n\n{glue:text}`v`\n")], {"v": _glued(value)})
        assert "<a " not in "\n".join(slides), value


# ============================================================ (b) the notebooks

@pytest.mark.parametrize("label", ["my label", "fig/a", "a+b", "sec:α"])
def test_a_myst_target_myst_reads_is_never_left_in_the_notebook(label):
    from companion.book.editions.notebook_cells import colab_markdown

    assert colab_markdown(f"({label})=\n## A heading\n\nText.") == "## A heading\n\nText."


def test_a_role_written_with_double_backticks_reads_as_its_text():
    from companion.book.editions.notebook_cells import colab_markdown

    assert colab_markdown("Use {code}``a`b`` and {math}``x^`y`` here.") == "Use a`b and $x^`y$ here."


def test_myst_comments_and_slide_marks_never_show_in_the_notebook():
    from companion.book.editions.notebook_cells import colab_markdown

    text = "% slide: The key table\nText.\n% end slide\n  % a note: the answer is 42\n\n```python\n%matplotlib inline\n```"
    assert colab_markdown(text) == "Text.\n\n```python\n%matplotlib inline\n```"


def test_a_plain_code_block_reaches_the_notebook_byte_for_byte():
    from companion.book.editions.notebook_cells import colab_markdown

    block = "````markdown\n(sec-x)=\nSee {ref}`sec-x`, {glue:text}`v`.\n:::{note}\n:class: tip\n:::\n````"
    assert colab_markdown(f"How to write it:\n\n{block}\n\nAfter.", {"v": "0.5"}) == f"How to write it:\n\n{block}\n\nAfter."


def test_a_directive_closed_by_a_longer_fence_ends_where_myst_ends_it():
    from companion.book.editions.notebook_cells import colab_markdown

    out = colab_markdown(":::{note}\nInside.\n::::\n\nAfter.\n\n```{solution} ex-1\nHidden.\n`````\n\nLast.")
    assert out.splitlines()[-1] == "Last." and "After." in out.splitlines(), out
    assert out.count("<details>") == out.count("</details>") == 1, out


def test_a_dropdown_title_written_with_an_entity_reads_once_escaped_in_the_notebook():
    from companion.book.editions.notebook_cells import colab_markdown

    out = colab_markdown(":::{dropdown} Q&amp;A on {glue:text}`v`\nBody.\n:::", {"v": "'a&amp;b <c>'"})
    # MyST reads the title's '&amp;' as '&'; the glued value is shown as the text it is
    assert _texts(out, "summary") == ["Q&A on a&amp;b <c>"], out


def test_a_figure_pasted_with_the_glue_directive_reaches_the_notebook_as_its_image():
    from companion.book.editions.notebook_cells import paste_glued_figures
    from companion.book.site.executions import Execution

    ex = Execution("c", None, {"fig": {"data": {"image/png": PNG}, "metadata": {}}}, [])
    for fence in ("```{glue} fig\n```\n", ":::{glue:any} fig\nIts caption.\n:::\n"):
        text, size = paste_glued_figures(f"Before.\n\n{fence}\nAfter.", ex)
        assert f"(data:image/png;base64,{PNG})" in text and size == len(PNG), text
        assert "{glue" not in text


# ============================================================ (c) the student edition

def _chapter(tmp_path, body: str, name="c", bom=False):
    from companion.book.site.chapters import Chapter

    path = tmp_path / f"{name}.md"
    path.write_text(("\ufeff" if bom else "") + HEADER + body, encoding="utf-8")
    return Chapter(name, path)


_GATED = """
# T

```{code-cell} ipython3
x = 1
```

:::{solution-start} ex-1
:::

```{code-cell} ipython3
print(answer)
```

:::{solution-end}
:::

```{code-cell} ipython3
print(answer)
```
"""


def _executed():
    out = lambda text: [nbformat.v4.new_output("stream", name="stdout", text=text)]
    ex = nbformat.v4.new_notebook()
    ex.cells = [nbformat.v4.new_code_cell("x = 1"), nbformat.v4.new_markdown_cell(":::{solution-start} ex-1\n:::"),
                nbformat.v4.new_code_cell("print(answer)", outputs=out("THE SOLUTION 42\n")),
                nbformat.v4.new_markdown_cell(":::{solution-end}\n:::"),
                nbformat.v4.new_code_cell("print(answer)", outputs=out("the student's own run\n"))]
    return ex


@pytest.fixture
def no_times(monkeypatch):
    """The notebook's note without the chapter's times (their module imports the whole package)."""
    import sys
    import types

    def colab_estimates():
        raise FileNotFoundError("no times in this test")

    monkeypatch.setitem(sys.modules, "companion.book.budgets.colab_budget",
                        types.SimpleNamespace(colab_estimates=colab_estimates))


def _outputs(nb):
    return [[o.get("text") for o in c.outputs] for c in nb.cells if c.cell_type == "code"][1:]   # set-up cell left out


def test_a_solution_cell_s_output_never_reaches_the_student_cell_of_the_same_code(tmp_path, no_times):
    from companion.book.editions.notebooks import chapter_notebook

    nb = chapter_notebook(_chapter(tmp_path, _GATED), "https://github.com/o/r", "abc1234", student=True,
                          executed=_executed())
    assert _outputs(nb) == [[], ["the student's own run\n"]], _outputs(nb)


def test_the_instructor_notebook_carries_each_cell_its_own_output(tmp_path, no_times):
    from companion.book.editions.notebooks import chapter_notebook

    nb = chapter_notebook(_chapter(tmp_path, _GATED), "https://github.com/o/r", "abc1234", executed=_executed())
    assert _outputs(nb) == [[], ["THE SOLUTION 42\n"], ["the student's own run\n"]], _outputs(nb)


def test_a_solution_on_the_first_line_of_a_file_with_a_byte_order_mark_is_removed():
    from companion.book.editions.solutions import strip_solutions

    # Sphinx reads a page (and MyST an included file) as utf-8-sig: the mark goes, the fence opens
    for fence in (":::", "```"):
        page = f"\ufeff{fence}{{solution}} ex-1\nThe answer is 42.\n{fence}\n\nRest.\n"
        assert strip_solutions(page) == "\ufeffRest.\n", fence


def test_a_page_with_a_byte_order_mark_whose_front_matter_holds_a_solution_is_refused():
    from companion.book.editions.solutions import strip_solutions

    page = "\ufeff---\nmyst:\n  substitutions:\n    hint: |\n      :::{solution} ex-1\n      42\n      :::\n---\n\n{{ hint }}\n"
    with pytest.raises(ValueError) as err:
        strip_solutions(page)
    assert "front matter" in one_line(err)


def test_an_included_file_in_utf16_holding_a_solution_never_reaches_the_student_sources(tmp_path):
    from companion.book.editions.student import prepare_sources

    root = tiny_book(tmp_path)
    (root / "book" / "intro.md").write_text("# Intro\n\n```{include} answers.txt\n:encoding: utf-16\n```\n")
    (root / "book" / "answers.txt").write_bytes(":::{solution} ex-1\nSECRET-ANSWER\n:::\n".encode("utf-16"))
    dest = tmp_path / "dest"
    with pytest.raises(ValueError) as err:
        prepare_sources(root, dest)
    assert "answers.txt" in one_line(err)


def test_a_page_that_is_not_utf8_is_refused_in_one_line_naming_it(tmp_path):
    from companion.book.editions.student import prepare_sources

    root = tiny_book(tmp_path)
    (root / "book" / "latin.md").write_bytes("# Caf\xe9\n".encode("latin-1"))
    with pytest.raises(ValueError) as err:
        prepare_sources(root, tmp_path / "dest")
    assert "latin.md" in one_line(err) and "UTF-8" in one_line(err)


@pytest.mark.parametrize("form", ["bom", "crlf", "cr"])
def test_a_page_saved_with_a_byte_order_mark_or_other_line_ends_counts_the_words_a_reader_reads(form):
    from companion.book.editions.solutions import prose_words

    page = HEADER + "\n(sec-a)=\n# Title\n\n% a comment\nOne two three.\n"   # 'Title' and three words
    page = {"bom": "\ufeff" + page, "crlf": page.replace("\n", "\r\n"), "cr": page.replace("\n", "\r")}[form]
    assert prose_words(page) == 4


def test_a_nested_dropdown_solution_in_a_long_backtick_fence_is_removed():
    from companion.book.editions.solutions import strip_solutions

    page = "Before.\n\n`````{Solution} ex-1\n:class: dropdown\n\n````{note}\n```python\nsecret()\n```\n````\n`````\n\nAfter.\n"
    assert strip_solutions(page) == "Before.\n\nAfter.\n"


# ============================================================ (d) the chapters and the site

def test_a_chapter_saved_with_a_byte_order_mark_is_still_a_chapter_and_its_notebook_has_no_header_text(tmp_path,
                                                                                                       no_times):
    from companion.book.editions.notebooks import chapter_notebook
    from companion.book.site.chapters import is_notebook_source

    chapter = _chapter(tmp_path, "\n# T\n\n```{code-cell} ipython3\nx = 1\n```\n", bom=True)
    assert is_notebook_source(chapter.source)
    nb = chapter_notebook(chapter, "https://github.com/o/r", "abc1234")
    text = "".join(c.source for c in nb.cells if c.cell_type == "markdown")
    assert "jupytext" not in text and "\ufeff" not in text and nb.cells[0].source == "# T"


def test_a_page_that_is_not_utf8_is_named_when_the_chapters_are_read(tmp_path):
    from companion.book.site.chapters import is_notebook_source

    page = tmp_path / "latin.md"
    page.write_bytes(("---\njupytext:\nkernelspec:\n---\n# Caf\xe9\n").encode("latin-1"))
    with pytest.raises(ValueError) as err:
        is_notebook_source(page)
    assert "latin.md" in one_line(err) and "UTF-8" in one_line(err)


def _cff(tmp_path, text):
    (tmp_path / "CITATION.cff").write_text(text, encoding="utf-8")
    return tmp_path


@pytest.mark.parametrize("authors", ["[]", "", "\n  - {}"], ids=["empty-list", "none", "one-empty"])
def test_a_citation_file_that_names_no_author_is_refused_naming_it(tmp_path, authors):
    from companion.book.site import citation

    root = _cff(tmp_path, f"title: T\nauthors: {authors}\n")
    with pytest.raises(ValueError) as err:
        citation.book_bibtex(citation.Version("0.1.0", "abc1234"), root)
    assert "CITATION.cff" in one_line(err) and "authors" in one_line(err)


@pytest.mark.parametrize("title", ["", "'  '", "[a, b]"], ids=["none", "blank", "list"])
def test_a_citation_file_whose_title_is_no_text_is_refused_naming_it(tmp_path, title):
    from companion.book.site import citation

    root = _cff(tmp_path, f"title: {title}\nauthors:\n  - name: A\n")
    with pytest.raises(ValueError) as err:
        citation.book_bibtex(citation.Version("0.1.0", "abc1234"), root)
    assert "CITATION.cff" in one_line(err) and "title" in one_line(err)


def test_latex_special_characters_of_the_citation_file_are_escaped_in_the_bibtex(tmp_path):
    from companion.book.site import citation

    root = _cff(tmp_path, 'title: "Q&A: 100% of #1, a_b for $5"\nauthors:\n  - name: "Smith & Sons"\n'
                          "url: https://example.org/a_b%20c\n")
    bib = citation.book_bibtex(citation.Version("0.1.0", "abc1234"), root)
    # '%' starts a LaTeX comment (the rest of the title was lost), '&' '#' '_' '$' stop LaTeX
    assert "title   = {{Q\\&A: 100\\% of \\#1, a\\_b for \\$5}}" in bib, bib
    assert "author  = {{Smith \\& Sons}}" in bib, bib
    assert "url     = {https://example.org/a_b%20c}" in bib, bib   # an address stays as written


@pytest.mark.parametrize("entry", [
    "@article {saponati2025structures,\n  title = {T}\n}",
    "@article{ saponati2025structures ,\n  title = {T}\n}",
    "@article(saponati2025structures,\n  title = {T (a) b}\n)",
    "  @Article{saponati2025structures,\n  title = {T}\n}",
], ids=["blank-after-type", "blanks-around-key", "parentheses", "indented"])
def test_the_paper_s_entry_written_as_bibtex_allows_is_found(tmp_path, entry):
    from companion.book.site import citation

    bib = tmp_path / "r.bib"
    bib.write_text(f"@misc{{other,\n  title = {{saponati2025structures}}\n}}\n\n{entry}\n\n@misc{{after, title={{x}}}}\n")
    assert citation.bib_entry("saponati2025structures", bib) == entry.strip()


@pytest.mark.parametrize("written, read", [("2.10", "2.10"), ("2.2", "2.2"), ("3", "3"), ('"2.10"', "2.10")])
def test_a_rules_revision_reads_as_written(tmp_path, written, read):
    from companion.book.site import citation

    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "verdict_rules.yaml").write_text(f"version: 2\nrevision: {written}\nclaims: {{}}\n")
    assert citation.rules_revision(tmp_path) == read


def test_a_verdict_whose_first_outcome_is_missing_is_left_out_not_a_traceback():
    from companion.book.site.changes import verdict_changes

    df = pd.DataFrame({"key": ["a", "b", "c"], "claim": ["A", "B", "C"], "status": ["holds", "refuted", None],
                       "status_first": [math.nan, "holds", "holds"]})
    assert verdict_changes(df) == [{"key": "b", "claim": "B", "v1": "holds", "now": "refuted"},
                                   {"key": "c", "claim": "C", "v1": "holds", "now": ""}]


def test_a_page_that_links_a_term_under_another_word_keeps_its_one_link():
    from docutils import nodes

    from companion.book.site.glossary_links import link_first_uses

    section, first, later = nodes.section(), nodes.paragraph(), nodes.paragraph()
    own = nodes.reference("", "", internal=True, refuri="glossary.html#term-gate")
    own += nodes.Text("gates")
    first += [nodes.Text("Two "), own, nodes.Text(" open.")]
    later += nodes.Text("Later the gate closes.")
    section += [first, later]
    assert link_first_uses(section, {"gate": ("glossary", "term-gate")}, lambda d, a: f"{d}.html#{a}") == []
    assert len(list(section.findall(nodes.reference))) == 1


@pytest.fixture
def glued(monkeypatch):
    import myst_nb

    store = {}
    monkeypatch.setattr(myst_nb, "glue", lambda name, value, display=False: store.__setitem__(name, value))
    return store


@pytest.mark.parametrize("text", ["the inf-norm of W", "sup/inf bounds", "Nan Ke et al. (2021)", "a NaN-safe mean"])
def test_words_that_only_look_like_a_non_finite_number_are_glued(glued, text):
    from companion.book import paste

    paste.glue_text("words", text)
    assert str(glued["words"]) == text


@pytest.mark.parametrize("text", ["nan", "-inf", "loss nan at step 3", "[0.2, NaN]", "between 0.1 and Infinity",
                                  "Inf"])
def test_a_non_finite_number_in_a_text_is_still_refused(glued, text):
    from companion.book import paste

    with pytest.raises(ValueError, match="non-finite"):
        paste.glue_text("words", text)


@pytest.mark.parametrize("value", [Decimal("1e400"), Decimal("-2.5e999")])
def test_a_finite_decimal_beyond_float_is_refused_as_too_large_not_as_non_finite(glued, value):
    from companion.book import paste

    with pytest.raises(ValueError) as err:
        paste.glue_number("big", value)
    assert "non-finite" not in one_line(err) and "'big'" in one_line(err) and "glue_text" in one_line(err)
