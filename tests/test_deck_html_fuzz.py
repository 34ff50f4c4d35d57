"""No markup that runs reaches a deck from a chapter's own text (issue 74, unescaped text in
decks): the deck renders a chapter's raw HTML as the book does (its tables, its links), but
through :func:`companion.book.site.markup.safe_html`, so a ``<script>``, an ``on...=`` attribute, a
``javascript:`` address, a ``<style>``, ``<iframe>`` or ``<svg>`` shows as text or is dropped.

Fuzz: chapter paragraphs built from random pieces of hostile and harmless HTML are planned and
rendered into a deck; the deck's HTML is parsed as a browser would (Python's HTMLParser, which
decodes character references in attributes): no element outside the inert set (beyond the
deck's own), no event handler, style, or address with a scheme that runs."""

from __future__ import annotations

import random
import re
from collections import Counter
from html.parser import HTMLParser

import pytest

from companion.book.editions import slides as sl
from companion.book.site.markup import _SAFE_TAGS, safe_html

CASES = 300

HOSTILE = ["<img src=x onerror=alert(1)>", "<script>alert(1)</script>", "<SCRIPT SRC=//x.js></SCRIPT>",
           '<a href="javascript:alert(1)">a</a>', '<a href="jav&#x61;script:alert(1)">b</a>',
           '<a href=" javascript:alert(1)">c</a>', "<a href='\tjava\nscript:alert(1)'>d</a>",
           '<a href="vbscript:x">e</a>', '<a href="data:text/html,<script>x</script>">f</a>',
           "<svg onload=alert(1)>", "<svg><script>alert(1)</script></svg>", "<iframe src=//x></iframe>",
           "<style>body{display:none}</style>", '<div style="background:url(javascript:x)">g</div>',
           '<img src="data:image/svg+xml;base64,PHN2Zz4=">', "<object data=x></object>", "<embed src=x>",
           "<form action=//x><input name=p></form>", "<base href=//x>", "<meta http-equiv=refresh content=0>",
           '<details open ontoggle="alert(1)">h</details>', "<body onload=x>", "<img src=x onerror=alert(1)",
           "<math><mi xlink:href=javascript:x>i</mi></math>", '<p title="x" onclick="y">j</p>', "<!-- <script> -->",
           "<![CDATA[<script>x</script>]]>", "<link rel=stylesheet href=//x>", '<a href="#ok" onmouseover="x">k</a>']
HARMLESS = ["<table><tr><th>a</th><td>1</td></tr></table>", '<a href="https://example.org">link</a>',
            '<a href="#sec-x">an anchor</a>', "<strong>bold</strong>", "<sup>2</sup>", '<span class="c">s</span>',
            "<br/>", "words", " and ", "*emph*", "`code`", "$x$", "&amp;", "&lt;", "\n"]

#: scheme prefixes that run code or load a document when followed
_RUNS = re.compile(r"^(?:javascript|vbscript|data|file):", re.I)


class _Page(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tags = Counter()
        self.problems = []

    def handle_starttag(self, tag, attrs):
        self.tags[tag] += 1
        for name, value in attrs:
            bare = re.sub(r"[\x00-\x20\x7f]", "", value or "")
            if name.startswith("on") or name == "style":
                self.problems.append(f"<{tag} {name}={value!r}>")
            if name in ("href", "src", "action", "data", "xlink:href") and _RUNS.match(bare) and not (
                    tag == "img" and re.match(r"^data:image/(png|jpeg|gif|webp);base64,", bare, re.I)):
                self.problems.append(f"<{tag} {name}={value!r}>")

    handle_startendtag = handle_starttag


def _parse(page: str) -> _Page:
    p = _Page()
    p.feed(page)
    p.close()
    return p


def _deck(paragraph: str) -> str:
    chapter = f"# A chapter\n\n## A section\n\nBefore.\n\n{paragraph}\n\nAfter.\n"
    title, slides = sl.plan_chapter(chapter, [], "chapter")
    return sl.deck_html(title, [sl.render_slide(s) for s in slides])


DECK_OWN = set(_parse(_deck("plain")).tags)


def test_fuzz_a_chapter_s_raw_html_reaches_the_deck_inert():
    rng = random.Random(74)
    for _ in range(CASES):
        pieces = [rng.choice(HOSTILE if rng.random() < 0.5 else HARMLESS) for _ in range(rng.randint(1, 6))]
        paragraph = "".join(pieces)
        page = _parse(_deck(paragraph))
        assert not page.problems, (paragraph, page.problems)
        foreign = set(page.tags) - _SAFE_TAGS - DECK_OWN
        assert not foreign, (paragraph, foreign)


@pytest.mark.parametrize("fragment", HOSTILE)
def test_each_hostile_piece_alone_is_inert_in_the_deck(fragment):
    page = _parse(_deck(fragment))
    assert not page.problems and not set(page.tags) - _SAFE_TAGS - DECK_OWN, (fragment, page.problems, page.tags)


@pytest.mark.parametrize("fragment, tag", [("<table><tr><th>a</th><td>1</td></tr></table>", "table"),
                                           ('<a href="https://example.org">link</a>', "a"),
                                           ('<a href="#sec-x">x</a>', "a"), ("<strong>b</strong>", "strong")])
def test_a_chapter_s_inert_html_is_still_rendered_as_markup(fragment, tag):
    """The control: what the chapters use (tables, links, bold) stays an element of the deck,
    with its address."""
    before = _parse(_deck("plain")).tags[tag]
    assert _parse(_deck(fragment)).tags[tag] == before + 1
    assert safe_html(fragment) == fragment


@pytest.mark.parametrize("fragment, shown", [("<script>alert(1)</script>", "&lt;script&gt;alert(1)&lt;/script&gt;"),
                                             ("<img src=x onerror=alert(1)>", '<img src="x">'),
                                             ('<a href="jav&#x61;script:x">y</a>', "<a>y</a>"),
                                             ("<img src=x onerror=alert(1)", "&lt;img src=x onerror=alert(1)")])
def test_what_safe_html_makes_of_the_issue_s_fragments(fragment, shown):
    assert safe_html(fragment) == shown


def test_the_decks_renderer_is_the_one_that_sanitises():
    """Both raw-HTML token kinds of the decks' Markdown go through safe_html."""
    md = sl._markdown()
    assert "<script" not in md.render("<script>x</script>\n") and "onerror" not in md.render("a <img src=x onerror=y> b")


def _table_deck(cell: str) -> str:
    """A deck of a chapter whose code shows a table with ``cell`` in it (its key table)."""
    import nbformat

    table = (f"<table><caption>c {cell}</caption><thead><tr><th>{cell}</th></tr></thead>"
             f"<tbody><tr><td>{cell}</td></tr></tbody></table>")
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# A chapter\n\n## A section\n\nBefore."), nbformat.v4.new_code_cell("t")]
    nb.cells[1].outputs = [nbformat.v4.new_output("execute_result", data={"text/html": f"<div>{table}</div>"})]
    markdown, figures, tables = sl._chapter_markdown(nb, {}, "chapter")
    title, slides = sl.plan_chapter(markdown, figures, "chapter", tables=tables)
    assert sum(bool(s.table) for s in slides) == 1, "the chapter's table is on a slide"
    return sl.deck_html(title, [sl.render_slide(s) for s in slides])


def test_fuzz_a_table_the_chapter_s_code_shows_reaches_the_deck_inert():
    """A table comes from a code cell's output, which any value can reach (a model's name, a
    token): its cells go through safe_html as the chapter's own HTML does."""
    rng = random.Random(73)
    for _ in range(CASES // 3):
        cell = "".join(rng.choice(HOSTILE if rng.random() < 0.5 else HARMLESS[1:]) for _ in range(rng.randint(1, 4)))
        page = _parse(_table_deck(cell))
        assert not page.problems, (cell, page.problems)
        foreign = set(page.tags) - _SAFE_TAGS - DECK_OWN
        assert not foreign, (cell, foreign)


@pytest.mark.parametrize("fragment", HOSTILE)
def test_each_hostile_piece_in_a_table_cell_is_inert(fragment):
    page = _parse(_table_deck(fragment))
    assert not page.problems and not set(page.tags) - _SAFE_TAGS - DECK_OWN, (fragment, page.problems, page.tags)
    assert page.tags["table"] == 1 and page.tags["td"] >= 1     # the control: the table itself is markup
