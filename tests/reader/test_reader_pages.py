"""The built pages read as a reader reads them, not as code prints them: no table pandas drew
(an index column, "NaN" cells, class ``dataframe``), no link whose text is raw TeX, answer
boxes a reader takes in at a glance (at most :data:`MAX_ANSWER_WORDS` words), the glossary
linked from every chapter, and, at a phone's width (390 px), no page that scrolls sideways,
no word in a table cut in pieces and no figure whose labels shrink below :data:`MIN_TEXT_PX`;
on a desktop screen (1300 x 900) each theory chapter shows a computed result (a figure or a
cell's output) within two screens.

The counting functions are plain functions of a page's HTML, checked on small pages below,
so that each check can fail.  Before the tables' formatter and the phone's CSS, the build of a
fresh clone showed 95 pandas tables, 104 missing-value cells, 7 raw-TeX links, 5 answer boxes
over the limit, 4 chapters without a glossary link and 5 pages wider than a phone; the
earlier build (bfde8ff) drew 46 of its 59 figures (10 pages) on a phone with labels under 9 px, and
its five theory chapters showed their first figure or output 1,831 to 2,590 px down.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest
import yaml
from bs4 import BeautifulSoup

from companion.book.editions import notebooks as nbgen
from companion.book.budgets.chapters_registry import limits as book_limits

ROOT = Path(__file__).resolve().parents[2]
DOCNAMES = nbgen.toc_docnames(ROOT)
CHAPTERS = [c.docname for c in nbgen.book_chapters(ROOT)]

#: the most words an answer box may hold (its title not counted; data/limits.yaml)
MAX_ANSWER_WORDS = book_limits()["answer_box_words"]
#: the width of a phone's screen in CSS px (and its height)
PHONE = (390, 844)
#: what a missing value reads as when pandas or Python draws it (case as they print it: a
#: cell "none" is a word of a sentence)
MISSING_WORDS = {"nan", "NaN", "None", "<NA>", "NaT"}
#: a desktop screen in CSS px; a theory chapter's first result stands within two of its screens
DESKTOP = (1300, 900)
FIRST_RESULT_MAX_TOP = 2 * DESKTOP[1]
#: the parts of the table of contents whose chapters are theory (definitions, propositions and
#: their checks on the computer) rather than runs or reference pages
THEORY_PARTS = ("Measuring structure", "Theory")
#: the smallest height in CSS px a figure's text may render at on a phone
MIN_TEXT_PX = 9
#: TeX left in a link's text: a control word or a sub/superscript in braces
RAW_TEX = re.compile(r"\\[A-Za-z]+|[_^]\{")


def _article(html: str):
    soup = BeautifulSoup(html, "html.parser")
    return soup.find("article") or soup.find("main") or soup


def raw_tables(html: str) -> dict:
    """How many tables of the page pandas drew (class ``dataframe``), how many show an index
    column (a body row opening with a header cell), and how many cells read as a missing value."""
    tables = _article(html).find_all("table")
    index = 0
    for t in tables:
        body = t.find("tbody")
        first = body.find("tr") if body else None
        if first is not None and first.find(["td", "th"]) is not None and first.find(["td", "th"]).name == "th":
            index += 1
    return {"dataframes": sum("dataframe" in (t.get("class") or []) for t in tables),
            "index columns": index,
            "missing cells": sum(c.get_text(strip=True) in MISSING_WORDS
                                 for t in tables for c in t.find_all(["td", "th"]))}


def tex_link_texts(html: str) -> list[str]:
    """Texts of the page's links that show TeX as typed (a section title with math, linked
    by ``{ref}`` without a text of its own)."""
    return [a.get_text() for a in _article(html).find_all("a")
            if RAW_TEX.search(a.get_text()) and not a.find(["mjx-container", "span"], class_="math")]


def answer_box_words(html: str) -> list[int]:
    """The number of words in each answer box of the page (an admonition titled "The answer")."""
    out = []
    for box in _article(html).select("div.admonition"):
        title = box.select_one(".admonition-title")
        if title is None or not re.match(r"\s*The answer", title.get_text()):
            continue
        out.append(sum(len(x.get_text(" ").split()) for x in box.children
                       if x is not title and hasattr(x, "get_text")))
    return out


def links_to_glossary(html: str) -> int:
    """How many links of the page lead to the glossary."""
    return sum(1 for a in _article(html).find_all("a", href=True)
               if re.search(r"(^|/)glossary\.html", a["href"]))


def theory_chapters(toc: dict) -> list[str]:
    """The docnames of the table of contents' parts named in :data:`THEORY_PARTS`."""
    return [c["file"] for part in toc.get("parts", []) if part.get("caption") in THEORY_PARTS
            for c in part.get("chapters", [])]


def figure_text_px() -> float:
    """The height in px of the text the book's figures are drawn with, at the size the build
    saves them: matplotlib's rc font size (10 pt: tick labels, axis labels, legends unless a
    figure asks for less) at the dpi the images are saved at (``savefig.dpi``, which is
    ``figure.dpi``, 100), with the book's kernel defaults applied."""
    import matplotlib

    from companion.book.kernel import use_book_defaults

    use_book_defaults()
    rc = matplotlib.rcParams
    dpi = rc["figure.dpi"] if rc["savefig.dpi"] == "figure" else rc["savefig.dpi"]
    return float(rc["font.size"]) * float(dpi) / 72


def min_figure_width(natural_width: int, text_px: float) -> int:
    """The narrowest rendered width (CSS px) at which a figure image ``natural_width`` px wide,
    whose text is ``text_px`` px high at its own size, shows that text at :data:`MIN_TEXT_PX`:
    the image scales its text with its width, so ``natural_width * MIN_TEXT_PX / text_px``."""
    if natural_width <= 0 or text_px <= 0:
        raise ValueError(f"a figure needs a positive width and text size, got {natural_width} px "
                         f"and {text_px} px: wait until the image has loaded")
    return math.ceil(natural_width * MIN_TEXT_PX / text_px)


THEORY = theory_chapters(yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8")))


def _html(site: Path, docname: str) -> str:
    path = site / f"{docname}.html"
    if not path.is_file():
        pytest.fail(f"{docname}: no page {path} in the built site; rebuild the book (make book).")
    return path.read_text(encoding="utf-8")


# ------------------------------------------------------------------ the counters can fail


def test_the_counters_find_what_pandas_and_sphinx_leave():
    import pandas as pd

    from companion.book.tables import readable

    frame = pd.DataFrame({"claim": ["table_1", "training_symmetry"], "p": [0.1, float("nan")]})
    page = f"<main>{frame.to_html()}</main>"
    assert raw_tables(page) == {"dataframes": 1, "index columns": 1, "missing cells": 1}
    assert raw_tables(f"<main>{readable(frame)}</main>") == {"dataframes": 0, "index columns": 0,
                                                             "missing cells": 0}
    assert tex_link_texts('<main><a href="#b">What \\beta_{ij} is</a><a href="#c">What β is</a></main>') == \
        ["What \\beta_{ij} is"]
    assert tex_link_texts('<main><a href="#e">E8. The update of W_{qk}</a></main>')
    box = ('<main><div class="admonition"><p class="admonition-title">The answer</p><p>{}</p></div>'
           '<div class="admonition"><p class="admonition-title">Note</p><p>{}</p></div></main>')
    assert answer_box_words(box.format("one two three", "not counted at all")) == [3]
    assert links_to_glossary('<main><a href="glossary.html#term-look">look</a><a href="x.html">x</a></main>') == 1
    toc = {"parts": [{"caption": "Theory", "chapters": [{"file": "book/a"}]},
                     {"caption": "Training", "chapters": [{"file": "book/b"}]}]}
    assert theory_chapters(toc) == ["book/a"]
    # 10 pt at 100 dpi is 13.9 px: a 990 px wide figure keeps 9 px text down to 642 px, and
    # the 358 px column of a phone showed it at 5 px
    assert figure_text_px() == pytest.approx(10 * 100 / 72)
    assert min_figure_width(990, 10 * 100 / 72) == 642
    assert 358 < min_figure_width(990, figure_text_px())
    with pytest.raises(ValueError, match="positive width"):
        min_figure_width(0, 13.9)


def test_the_theory_chapters_are_the_five_read_as_theory():
    """The parts named theory hold the chapters whose content is theory: definitions and
    propositions checked on the computer (a chapter moved to another part fails here)."""
    found = THEORY
    assert sorted(found) == sorted(["book/measuring", "book/bilinear_form", "book/rank_one_updates",
                                    "book/context_prediction", "book/objectives_to_structure"])
    for docname in found:   # each states and checks propositions: theory by its content
        text = (ROOT / f"{docname}.md").read_text(encoding="utf-8")
        assert re.search(r"\{prf:(proposition|theorem|definition|lemma)\}", text), docname


# ------------------------------------------------------------------ the built pages


@pytest.mark.parametrize("docname", DOCNAMES)
def test_no_table_is_drawn_by_pandas(site, docname):
    found = raw_tables(_html(site, docname))
    assert not any(found.values()), (
        f"{docname}: {found}: show every table through companion.book.tables (the book's kernels do "
        "when companion.book.kernel.use_book_defaults() ran)")


@pytest.mark.parametrize("docname", DOCNAMES)
def test_no_link_shows_raw_tex(site, docname):
    found = tex_link_texts(_html(site, docname))
    assert not found, f"{docname}: links show TeX as typed: {found}; give the {{ref}} a text of its own"


@pytest.mark.parametrize("docname", CHAPTERS)
def test_answer_boxes_are_short(site, docname):
    words = answer_box_words(_html(site, docname))
    over = [w for w in words if w > MAX_ANSWER_WORDS]
    assert not over, (f"{docname}: an answer box holds {over} words (at most {MAX_ANSWER_WORDS}): keep plain "
                      "sentences in the box and move the details below it")


@pytest.mark.parametrize("docname", CHAPTERS)
def test_every_chapter_links_the_glossary(site, docname):
    assert links_to_glossary(_html(site, docname)), (
        f"{docname}: no link to the glossary; link the first use of a term ({{term}}`look`)")


# ------------------------------------------------------------------ on a phone

#: the checks that only read a page at a phone's size (conftest.VIEWPORTS["phone"], PHONE):
#: they share one load of each page there with the other modules' phone readers
PAGE_READERS = {name: "phone" for name in (
    "test_no_page_scrolls_sideways_on_a_phone", "test_no_word_in_a_table_breaks_on_a_phone",
    "test_figures_keep_readable_labels_on_a_phone")}


def _at_phone(browser, pages, docname):
    """The page loaded at a phone's size (its math typeset and its images loaded), or as the
    previous phone reader left it."""
    pages.open(docname, "phone", reuse=True)


@pytest.mark.parametrize("docname", DOCNAMES)
def test_no_page_scrolls_sideways_on_a_phone(browser, pages, docname):
    _at_phone(browser, pages, docname)
    state = browser.execute_script("""
        const W = document.documentElement.clientWidth, wide = [];
        document.querySelectorAll('article *').forEach(e => { const b = e.getBoundingClientRect();
            if (b.width > 0 && b.right > W + 1 && wide.length < 3 && !e.closest('[style*="overflow"], .companion-table-wrap,'
                + ' .pst-scrollable-table-container, .highlight, pre, mjx-container, .cell_output'))
                wide.push(e.tagName.toLowerCase() + ': ' + (e.innerText || '').slice(0, 60)); });
        return {width: Math.max(document.documentElement.scrollWidth, document.body.scrollWidth), W: W, wide: wide};""")
    assert state["width"] <= state["W"] + 1, (
        f"{docname}: the page is {state['width']} px wide on a {state['W']} px phone (it scrolls sideways); "
        f"widest parts: {state['wide']}")


@pytest.mark.parametrize("docname", DOCNAMES)
def test_no_word_in_a_table_breaks_on_a_phone(browser, pages, docname):
    """A status ("inconclusive") or any word of five letters or more in a table cell stays on one line."""
    _at_phone(browser, pages, docname)
    broken = browser.execute_script("""
        const out = [];
        document.querySelectorAll('article td, article th').forEach(cell => {
            const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT); let n;
            while ((n = walker.nextNode())) {
                if (n.parentElement.closest('code, pre, mjx-container')) continue;
                const re = /[A-Za-z]{5,}/g; let m;
                while ((m = re.exec(n.data))) {
                    const r = document.createRange(); r.setStart(n, m.index); r.setEnd(n, m.index + m[0].length);
                    const tops = new Set(Array.from(r.getClientRects()).filter(x => x.width > 0).map(x => Math.round(x.top)));
                    if (tops.size > 1 && out.length < 8) out.push(m[0]);
                } } });
        return out;""")
    assert not broken, f"{docname}: words in tables break mid-word at {PHONE[0]} px: {broken}"


@pytest.mark.parametrize("docname", DOCNAMES)
def test_figures_keep_readable_labels_on_a_phone(browser, pages, docname):
    """At 390 x 844 every figure image renders at least :func:`min_figure_width` wide (its
    labels at 9 px or more), and no page scrolls sideways for it: a wide figure scrolls inside
    its own box."""
    _at_phone(browser, pages, docname)
    text_px = figure_text_px()
    state = browser.execute_script("""
        const imgs = [...document.querySelectorAll('article figure img, article .cell_output img')]
            .filter(i => i.complete && i.naturalWidth > 0)
            .map(i => [i.naturalWidth, i.getBoundingClientRect().width, (i.alt || i.src).slice(0, 60)]);
        return {imgs: imgs, W: document.documentElement.clientWidth,
                width: Math.max(document.documentElement.scrollWidth, document.body.scrollWidth)};""")
    small = [f"{alt!r}: {shown:.0f} px of {natural} (at least {min_figure_width(natural, text_px)}; text "
             f"{shown / natural * text_px:.1f} px)"
             for natural, shown, alt in state["imgs"] if shown + 0.5 < min_figure_width(natural, text_px)]
    assert not small, (f"{docname}: {len(small)} of {len(state['imgs'])} figures shrink their labels below "
                       f"{MIN_TEXT_PX} px at {PHONE[0]} px: {small[:3]}; companion.css keeps a figure at "
                       "its drawn size on a phone, in a box that scrolls sideways")
    assert state["width"] <= state["W"] + 1, (
        f"{docname}: the page is {state['width']} px wide on a {state['W']} px phone (it scrolls sideways)")


# ------------------------------------------------------------------ on a desktop screen


@pytest.fixture
def desktop(browser):
    browser.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {
        "width": DESKTOP[0], "height": DESKTOP[1], "deviceScaleFactor": 1, "mobile": False})
    yield
    browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})


def _first_result(browser) -> dict | None:
    """The first computed result the page shows (a figure, an image or a cell's visible
    output), after the page's mathematics and fonts have settled: its top in page px and what
    it is.  A value glued into a sentence is not counted: the answer box carries those at the
    top of every chapter, but a reader sees a chapter's code at work only in a figure or an
    output."""
    browser.execute_async_script("""
        const done = arguments[arguments.length - 1];
        const math = (window.MathJax && MathJax.startup && MathJax.startup.promise) || Promise.resolve();
        Promise.all([math, document.fonts.ready]).then(() => done(), () => done());""")
    return browser.execute_script("""
        const seen = [...document.querySelectorAll('article figure, article img, article .cell_output')]
            .filter(e => { const b = e.getBoundingClientRect();
                if (b.height < 4 || b.width < 4 || e.offsetParent === null) return false;
                return e.tagName !== 'DIV' || e.querySelector('img') || e.innerText.trim().length > 0; })
            .map(e => ({top: e.getBoundingClientRect().top + window.scrollY,
                        what: e.tagName.toLowerCase() + ': ' + (e.innerText || e.alt || '').trim().slice(0, 60)}));
        seen.sort((a, b) => a.top - b.top);
        return seen.length ? seen[0] : null;""")


@pytest.mark.parametrize("docname", THEORY)
def test_theory_chapters_show_a_result_within_two_screens(browser, site_url, desktop, docname):
    browser.get(f"{site_url}/{docname}.html")
    first = _first_result(browser)
    assert first is not None, f"{docname}: the page shows no figure and no output at all"
    assert first["top"] <= FIRST_RESULT_MAX_TOP, (
        f"{docname}: the first computed result ({first['what']!r}) is {first['top']:.0f} px down at "
        f"{DESKTOP[0]}x{DESKTOP[1]}, past two screens ({FIRST_RESULT_MAX_TOP} px); show the chapter's key "
        "figure near the top ({glue:figure} under the answer box)")
