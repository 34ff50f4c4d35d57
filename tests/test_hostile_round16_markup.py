"""Hostile round 16: what reaches a reader of the notebooks, the decks, the student edition and
the site's citation, fed pages, values and settings that are slightly off or hostile.

(a) pasted values: a glued value of several lines in a dropdown's title, a value pasted from
another page (``{glue:text}`page::name```), a value pasted with the plain ``{glue}`` role where
the words of a page are counted;
(b) the notebooks: references without text of their own (``{ref}``, ``{numref}``, ``{doc}``), a
starter block written with single quotes, a block only the site's build fills, a chapter whose
file name holds ``#``;
(c) the decks: a comment line in a code block, a figure or a table drawn only in a solution;
(d) the student edition: a configuration with empty sections or buttons that open the instructor's
sources, a table of contents without parts or naming the teaching page another way, and solutions
in forms MyST reads that the book does not use yet;
(e) the citation: an author named by an empty name or with empty given names, a title with ``~``
or ``^``.
"""

from __future__ import annotations

import re

import nbformat
import pytest
import yaml

from companion.book.site.chapters import JUPYTEXT_HEADER as HEADER
from companion.book.teaching import course_plan as cp   # (its import reads the book's registry: once)
from one_line import one_line

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="


def _md(text):
    return nbformat.v4.new_markdown_cell(text)


# ============================================================ (a) pasted values

def test_a_glued_value_of_several_lines_in_a_dropdown_title_stays_one_line_of_text_in_the_notebook():
    from markdown_it import MarkdownIt

    from companion.book.editions.notebook_cells import colab_markdown

    value = "first\n\n# Injected heading\n\n[x](https://evil.example)"
    out = colab_markdown(":::{dropdown} Result {glue:text}`v`\nbody\n:::\n", {"v": repr(value)})
    html = MarkdownIt("commonmark", {"html": True}).render(out)
    # the title is the value's words on one line, as the site's title shows it: no heading, no link
    assert "<h1" not in html and "<a " not in html, html
    summary = re.search(r"<summary>(.*?)</summary>", out, re.S).group(1)
    assert "\n" not in summary and summary == "Result " + " ".join(value.split()), summary


def test_a_glued_value_of_several_lines_in_an_admonition_title_stays_text():
    from markdown_it import MarkdownIt

    from companion.book.editions.notebook_cells import colab_markdown

    out = colab_markdown(":::{note} Result {glue:text}`v`\nbody\n:::\n",
                         {"v": repr("a\n\n# H\n\n[x](javascript:alert(1))")})
    html = MarkdownIt("commonmark", {"html": True}).render(out)
    assert "<h1" not in html and "<a " not in html and out.splitlines()[0].startswith("> **Note (Result a # H"), out


def test_a_value_pasted_from_another_page_is_never_this_chapter_s_value_of_that_name_in_the_notebook():
    from companion.book.editions.notebook_cells import colab_markdown

    # myst-nb reads `other::v` as the value v of the page `other`; this chapter's own `other` is 1.5
    with pytest.raises(ValueError) as err:
        colab_markdown("The ratio is {glue:text}`other::v:.2f`.", {"other": "1.5", "v": "0.25"})
    assert "other::v" in one_line(err)


def test_a_value_pasted_from_another_page_is_named_on_the_deck_not_blamed_on_its_format():
    from companion.book.editions.slide_glue import SlideError, resolve_glue

    with pytest.raises(SlideError) as err:
        resolve_glue("The ratio is {glue:text}`other::v:.2f`.", {"other": {"data": {"text/plain": "1.5"}}})
    assert "other::v" in one_line(err) and "format" not in one_line(err)


def test_the_words_of_a_value_pasted_with_the_plain_glue_role_are_counted(tmp_path):
    sentence = "holds in each of the five bodies of runs"
    page = HEADER + "# A chapter\n\nIt {glue}`verdict` and {glue:}`verdict`.\n\n```{code-cell} ipython3\nx = 1\n```\n"
    (tmp_path / "_toc.yml").write_text("format: jb-book\nroot: book/chap\n")
    (tmp_path / "book").mkdir()
    (tmp_path / "book" / "chap.md").write_text(page)
    executed = tmp_path / "_build" / "executed" / "book"
    executed.mkdir(parents=True)
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1", outputs=[nbformat.v4.new_output(
        "display_data", data={"text/plain": repr(sentence)}, metadata={"scrapbook": {"name": "verdict"}})])])
    nbformat.write(nb, executed / "chap.ipynb")
    by_hand = cp.prose_words(page.replace("{glue}`verdict`", sentence).replace("{glue:}`verdict`", sentence))
    assert cp.rendered_words(tmp_path / "_build", tmp_path) == {"chap": by_hand}
    assert by_hand == 2 + 1 + 2 * 9 + 1   # 'A chapter', 'It', the sentence twice, 'and'


# ============================================================ (b) the notebooks

def _tiny(tmp_path, pages: dict) -> object:
    (tmp_path / "_toc.yml").write_text("format: jb-book\nroot: book/" + next(iter(pages)) + "\nchapters:\n"
                                       + "".join(f"- file: book/{p}\n" for p in list(pages)[1:]))
    (tmp_path / "_config.yml").write_text("repository:\n  url: https://github.com/o/r\n")
    (tmp_path / "book").mkdir()
    for name, body in pages.items():
        (tmp_path / "book" / f"{name}.md").write_text(HEADER + body)
    return tmp_path


def test_a_reference_without_text_of_its_own_reads_as_the_heading_it_names_not_its_label(tmp_path):
    from companion.book.editions.notebook_cells import colab_markdown
    from companion.book.site.chapters import book_links

    root = _tiny(tmp_path, {"intro": "# Intro\n\nSee {doc}`fig3_decided` and {ref}`f3-gate`.\n",
                            "fig3_decided": "# Fig. 3 decided\n\n```python\n# a comment, no heading\n```\n\n"
                                            "(f3-gate)=\n% a MyST comment\n## The gate, part by part\n\nText.\n"})
    text = "See {doc}`fig3_decided` and {ref}`f3-gate`."
    site = "https://o.github.io/r/"
    out = colab_markdown(text, {}, book_links(root, site))
    assert out == (f"See [Fig. 3 decided]({site}book/fig3_decided.html) and "
                   f"[The gate, part by part]({site}book/fig3_decided.html#f3-gate)."), out
    # a repository off GitHub: no links, but the same words
    assert colab_markdown(text, {}, book_links(root, None)) == "See Fig. 3 decided and The gate, part by part."


def test_a_citation_reads_as_the_site_s_author_and_year_not_its_bibtex_key(tmp_path):
    from companion.book.editions.notebook_cells import colab_markdown
    from companion.book.site.chapters import book_links

    root = _tiny(tmp_path, {"intro": "# Intro\n"})
    (root / "_config.yml").write_text("repository:\n  url: https://github.com/o/r\nbibtex_bibfiles:\n  - refs.bib\n")
    (root / "refs.bib").write_text(
        "@article{one2020,\n  author = {M{\\\"u}ller, Anna},\n  title = {T},\n  year = {2020}\n}\n\n"
        "@inproceedings{two2021,\n  author    = {Smith, J. and Jones, K.},\n  year      = 2021,\n}\n"
        "@article{many2025,\n  author = {Saponati, Matteo and Sager, Pascal and Grewe, Benjamin},\n  year = {2025}\n}\n")
    links = book_links(root, None)
    out = colab_markdown("As {cite}`one2020,two2021`, {cite:t}`many2025` and {cite}`unknown` show.", {}, links)
    assert out == "As (Müller, 2020; Smith and Jones, 2021), Saponati et al. (2025) and [unknown] show.", out


def test_a_student_notebook_links_no_page_of_the_instructor_s_site(tmp_path, monkeypatch):
    import sys
    import types

    from companion.book.editions.notebooks import write_notebooks

    monkeypatch.setitem(sys.modules, "companion.book.budgets.colab_budget",   # no chapter times in this test
                        types.SimpleNamespace(colab_estimates=lambda: (_ for _ in ()).throw(FileNotFoundError())))
    root = _tiny(tmp_path, {"intro": "# Intro\n\nSee {doc}`ex` and {ref}`ex-sec`.\n",
                            "ex": "# Exercises\n\n(ex-sec)=\n## First\n\n:::{exercise}\n:label: ex-1\nDo it.\n:::\n\n"
                                  ":::{solution} ex-1\nSECRET\n:::\n"})
    texts = {}
    for student in (False, True):
        (path, _) = write_notebooks(root, tmp_path / f"out{student}", ref="v1", student=student, executions=None)
        texts[student] = "\n".join(c.source for c in nbformat.read(str(path), as_version=4).cells
                                   if c.cell_type == "markdown")
    # the instructor's notebook links the instructor's site, where each solution sits under its exercise
    assert "https://o.github.io/r/book/ex.html" in texts[False]
    assert "github.io" not in texts[True] and "See Exercises and First." in texts[True], texts[True]


def test_a_numbered_reference_never_shows_a_label_or_a_number_placeholder():
    from companion.book.editions.notebook_cells import colab_markdown

    out = colab_markdown("As {numref}`Figure %s <fig-logit-order>` and {numref}`fig-logit-order` and "
                         "{numref}`Fig. {number} <fig-logit-order>` show.")
    assert "%s" not in out and "{number}" not in out and "fig-logit-order" not in out, out
    assert out == ("As Figure (logit order) and Figure (logit order) and Fig. (logit order) show."), out


def test_a_starter_block_that_calls_check_with_single_quotes_becomes_its_own_code_cell():
    import jupytext

    from companion.book.editions.solutions import split_check_cells

    for call in ("check('ex-a', f)", 'check( "ex-a", f)'):
        page = (":::{exercise}\n:label: ex-a\n\nDo it.\n\n```python\nfrom companion.book.teaching.exercises "
                f"import check\n\ndef f():\n    ...\n\n{call}\n```\n:::\n\nAfter.\n")
        nb = jupytext.reads(HEADER + page, fmt="md:myst")
        assert split_check_cells(nb) == 1, call
        code = [c.source for c in nb.cells if c.cell_type == "code"]
        assert code == [f"from companion.book.teaching.exercises import check\n\ndef f():\n    ...\n\n{call}"], code


def test_a_block_only_the_book_s_build_fills_says_where_to_read_it_not_an_empty_box():
    from companion.book.editions.notebook_cells import colab_markdown

    for name in ("release-changes", "build-status", "bibliography"):
        out = colab_markdown(f"Before.\n\n```{{{name}}}\n```\n\nAfter.")
        quoted = [ln for ln in out.splitlines() if ln.startswith(">")]
        words = " ".join(ln.lstrip("> ") for ln in quoted[1:]).strip()
        assert words, out                                # more than a bold title over nothing
        assert "book" in words and "page" in words, out


def test_a_chapter_whose_file_name_holds_a_hash_or_a_question_mark_links_its_own_notebook():
    from urllib.parse import unquote, urlsplit

    from companion.book import sphinxext
    from companion.book.editions.notebooks import colab_url

    for docname in ("book/ch#1", "book/what?", "book/100%"):
        url = urlsplit(colab_url(docname, "https://github.com/o/r"))
        assert not url.fragment and not url.query, url
        assert unquote(url.path).endswith(f"/blob/notebooks/{docname}.ipynb"), url
        href = urlsplit(sphinxext._download_href(docname))
        assert not href.fragment and not href.query and unquote(href.path) == f"../notebooks/{docname}.ipynb", href


# ============================================================ (c) the decks

def test_a_comment_line_in_a_code_block_never_becomes_the_deck_s_title_or_a_slide():
    from companion.book.editions import slides as sl

    nb = nbformat.v4.new_notebook(cells=[_md(
        "# The real title\n\n## Section\n\nRun it so:\n\n```bash\n# train the model first\npython -m x\n"
        "## not a heading\n```\n\nAfter the code.\n")])
    title, slides = sl.chapter_slides(nb, {}, {}, chapter="c")
    assert title == "The real title"
    heads = [re.search(r"<h2>(.*?)</h2>", s).group(1) for s in slides]
    assert heads == ["The real title", "Section"], heads
    assert "# train the model first\npython -m x\n## not a heading" in "\n".join(slides)


def _gated(*outputs):
    return [_md("# T\n\n:::{solution-start} ex-1\n:::"),
            nbformat.v4.new_code_cell("answer()", outputs=list(outputs)),
            _md(":::{solution-end}\n:::")]


def test_a_figure_drawn_only_in_a_solution_is_no_figure_the_deck_must_show():
    from companion.book.editions.slide_plan import drawn_figures

    figure = nbformat.v4.new_output("display_data", data={"image/png": PNG, "text/plain": "f"})
    nb = nbformat.v4.new_notebook(cells=_gated(figure))
    assert drawn_figures(nb, "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")) == 0
    glued = ":::{solution} ex-1\n\n```{glue:figure} fig\n```\n:::\n"
    assert drawn_figures(nbformat.v4.new_notebook(), glued) == 0
    # a figure outside the solution still counts
    nb.cells.append(nbformat.v4.new_code_cell("plot()", outputs=[figure]))
    assert drawn_figures(nb, glued + "\n```{glue:figure} other\n```\n") == 2


def test_a_table_shown_only_in_a_solution_is_no_table_the_deck_must_show():
    from companion.book.editions.slide_plan import shown_tables

    table = nbformat.v4.new_output("display_data", data={"text/html": "<table><tr><td>1</td></tr></table>",
                                                         "text/plain": "t"})
    nb = nbformat.v4.new_notebook(cells=_gated(table))
    assert shown_tables(nb) == 0
    nb.cells.append(nbformat.v4.new_code_cell("show()", outputs=[table]))
    assert shown_tables(nb) == 1


def test_a_glued_web_address_makes_no_link_on_the_slide():
    from companion.book.editions import slides as sl

    nb = nbformat.v4.new_notebook(cells=[_md("# T\n\n## S\n\nThe source is {glue:text}`src`.\n")])
    _, slides = sl.chapter_slides(nb, {"src": {"data": {"text/plain": repr("https://evil.example/x")}}}, {},
                                  chapter="c")
    joined = "\n".join(slides)
    assert "<a " not in joined and "https://evil.example/x" in joined


# ============================================================ (d) the student edition

def test_a_configuration_with_empty_sections_gives_the_student_configuration(tmp_path):
    from companion.book.editions.student import _student_config

    for text in ("title:\nhtml:\nexecute:\nsphinx:\n", "", "title: T\nsphinx:\n  config:\n"):
        (tmp_path / "_config.yml").write_text(text)
        cfg = yaml.safe_load(_student_config(tmp_path, tmp_path / "cache"))
        assert re.search("student edition", cfg["title"], re.I) and "None" not in cfg["title"], text
        assert cfg["html"]["use_repository_button"] is False and cfg["execute"]["cache"] == str(tmp_path / "cache")
        assert cfg["sphinx"]["config"]["companion_student_edition"] is True


def test_the_student_site_has_no_button_that_opens_the_instructor_s_sources(tmp_path):
    from companion.book.editions.student import _student_config

    (tmp_path / "_config.yml").write_text(
        "title: T\nrepository:\n  url: https://github.com/o/r\nlaunch_buttons:\n  colab_url: https://colab.research.google.com\n"
        "  binderhub_url: https://mybinder.org\n  jupyterhub_url: https://hub.example\n  thebe: true\n"
        "  deepnote_url: https://deepnote.com\n"
        "html:\n  use_repository_button: true\n  use_edit_page_button: true\n"
        "sphinx:\n  config:\n    html_theme_options:\n      use_repository_button: true\n      use_source_button: true\n"
        "      use_edit_page_button: true\n      use_issues_button: true\n      use_download_button: true\n")
    cfg = yaml.safe_load(_student_config(tmp_path, tmp_path / "cache"))
    theme = cfg["sphinx"]["config"]["html_theme_options"]
    assert not any(theme[k] for k in ("use_repository_button", "use_source_button", "use_edit_page_button",
                                      "use_issues_button")), theme
    assert theme["use_download_button"] is True              # the student page's own source and notebook
    launch = cfg["launch_buttons"]
    assert not ({"binderhub_url", "jupyterhub_url", "deepnote_url", "thebe"} & set(launch)), launch
    assert launch["colab_url"] == "https://colab.research.google.com"   # pointed at the student notebooks


def test_a_table_of_contents_without_parts_gives_a_student_one_the_toc_reader_accepts(tmp_path):
    from sphinx_external_toc.parsing import parse_toc_data

    from companion.book.editions.student import _student_toc

    (tmp_path / "_toc.yml").write_text("format: jb-book\nroot: book/intro\nchapters:\n- file: book/a\n"
                                       "- file: book/teaching\n- file: book/b\n")
    toc = yaml.safe_load(_student_toc(tmp_path))
    site = parse_toc_data(toc)
    assert [e["file"] for e in toc["chapters"]] == ["book/a", "book/b"]
    assert set(site) == {"book/intro", "book/a", "book/b"}


def test_the_teaching_page_named_with_its_suffix_or_as_a_section_is_left_out_of_the_student_toc(tmp_path):
    from companion.book.editions.student import _student_toc

    (tmp_path / "_toc.yml").write_text(
        "format: jb-book\nroot: book/intro\nparts:\n- caption: P\n  chapters:\n  - file: book/teaching.md\n"
        "  - file: book/a\n    sections:\n    - file: ./book/teaching\n    - file: book/c\n")
    text = _student_toc(tmp_path)
    assert "teaching" not in text, text
    toc = yaml.safe_load(text)
    assert toc["parts"][0]["chapters"] == [{"file": "book/a", "sections": [{"file": "book/c"}]}]


@pytest.mark.parametrize("page", [
    "Text[^1].\n\n[^1]: A note.\n\n    :::{solution} ex-1\n    SECRET\n    :::\n\nAfter.\n",
    "Term\n: Definition\n\n  :::{solution} ex-1\n  SECRET\n  :::\n\nAfter.\n",
    "~~~{solution} ex-1\nSECRET\n~~~\n\nAfter.\n",
    "::::{tab-set}\n:::{tab-item} A\n```{solution} ex-1\nSECRET\n```\n:::\n::::\n\nAfter.\n",
    "<details>\n\n:::{solution} ex-1\nSECRET\n:::\n\n</details>\n\nAfter.\n",
], ids=["footnote", "definition-list", "tilde-fence", "tab", "html-details"])
def test_a_solution_in_a_footnote_a_definition_a_tilde_fence_a_tab_or_html_never_reaches_the_student_page(page):
    from companion.book.editions.solutions import strip_solutions

    out = strip_solutions(page)
    assert "SECRET" not in out and "After." in out, out


# ============================================================ (e) the citation

def _cff(tmp_path, authors: str, title: str = "The book") -> object:
    (tmp_path / "CITATION.cff").write_text(f"cff-version: 1.2.0\ntitle: {title!r}\nauthors:\n{authors}"
                                           "date-released: 2026-01-02\n", encoding="utf-8")
    return tmp_path


def _field(bib: str, name: str) -> str:
    return re.search(rf"^\s*{name}\s*=\s*\{{(.*)\}},?$", bib, re.M).group(1)


def test_an_author_named_by_an_empty_name_beside_family_names_is_cited_by_those_names(tmp_path):
    from companion.book.site.citation import Version, book_bibtex

    root = _cff(tmp_path, '  - name: ""\n    family-names: Smith\n    given-names: Jane\n')
    assert _field(book_bibtex(Version("0.1.0", "abcdef1"), root), "author") == "{Smith}, {Jane}"


def test_an_author_whose_given_names_are_left_empty_is_cited_without_the_word_none(tmp_path):
    from companion.book.site.citation import Version, book_bibtex

    root = _cff(tmp_path, "  - family-names: Doe\n    given-names:\n  - name: The Team\n")
    assert _field(book_bibtex(Version("0.1.0", "abcdef1"), root), "author") == "{Doe} and {The Team}"


def test_a_tilde_or_a_caret_in_the_title_is_written_as_itself_in_the_bibtex(tmp_path):
    from companion.book.site.citation import Version, book_bibtex

    root = _cff(tmp_path, "  - name: The Team\n", title="Rank~1 updates and R^2")
    title = _field(book_bibtex(Version("0.1.0", "abcdef1"), root), "title")
    # LaTeX reads a bare ~ as a space and a bare ^ outside mathematics as an error
    assert title == r"{Rank\textasciitilde{}1 updates and R\textasciicircum{}2}", title


# ============================================================ (f) a text glued for the page

@pytest.fixture
def glued(monkeypatch):
    """What glue_text hands myst-nb: ``{name: value}``."""
    import myst_nb

    seen: dict = {}
    monkeypatch.setattr(myst_nb, "glue", lambda name, value, display=True: seen.update({name: value}))
    return seen


@pytest.mark.parametrize("text", ["0, 1, 2", "0.120, 0.340", "0.50", "1,234", "3.10", "0x1F", "'quoted'", "1_000",
                                  "holds", "3", "[1, 2]"])
def test_a_text_that_reads_as_a_python_literal_is_pasted_as_written(glued, text):
    from myst_nb.core.variables import format_plain_text

    from companion.book import paste

    # {glue:text}`name` and {glue:text}`name:s` on the page: myst-nb's own reading of the glued repr
    paste.glue_text("x", text)
    assert format_plain_text(repr(glued["x"]), "") == text and format_plain_text(repr(glued["x"]), "s") == text
