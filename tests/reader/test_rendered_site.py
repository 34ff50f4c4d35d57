"""The built book, read the way a reader reads it: served over HTTP, in headless Chromium.

Every page listed in ``_toc.yml`` is opened; each must render without error text, load all
its images, have all its math typeset by MathJax, link only to local pages and anchors that
exist, and (for executable chapters) carry a Colab link to the chapter's generated notebook.
Screenshots of the first two chapters go to ``_build/screenshots/``.
"""

from __future__ import annotations

import base64
import re
import urllib.error
import urllib.request
from functools import lru_cache
from pathlib import Path
from urllib.parse import urldefrag, urljoin, urlparse

import pytest

from companion.book.editions import notebooks as nbgen
from companion.book.budgets.chapters_registry import limits as _book_limits
from companion.book.site.chapters import toc_yaml
from companion.book.figures.source_data import COLUMNS as SOURCE_DATA_COLUMNS

_LIMITS = _book_limits()

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOTS = ROOT / "_build" / "screenshots"

DOCNAMES = nbgen.toc_docnames(ROOT)
CHAPTERS = [c.docname for c in nbgen.book_chapters(ROOT)]
REPO_URL = nbgen.repository_url(ROOT)

ERROR_TEXT = "Traceback (most recent call last)"


def _chapters_regenerating_figures() -> list[str]:
    """Chapters that the figures-and-tables page names for one of the paper's figures."""
    page = ROOT / "book" / "figures_and_tables.md"
    if not page.is_file():
        return []
    names = set()
    for line in page.read_text(encoding="utf-8").splitlines():
        fields = [f.strip() for f in line.split("|")]
        if len(fields) == 3 and fields[0].startswith("Fig."):
            names.update(nbgen._strip_suffix(n) for n in fields[2].split(",") if n.strip())
    return [d for d in DOCNAMES if d in names and d != "book/errata"]


FIGURE_CHAPTERS = _chapters_regenerating_figures()
UNRENDERED_FIGURE = re.compile(r"<Figure size \d+x\d+ with \d+ Axes>")


def _page(docname: str) -> str:
    return f"{docname}.html"


#: the checks that only read the page open at one size, and that size (conftest.VIEWPORTS):
#: they share one load of each page at each size (``pages.open(..., reuse=True)``), and
#: conftest.py runs them page by page, size by size
PAGE_READERS = {name: "window" for name in (
    "test_page_renders_without_error_text", "test_every_image_is_loaded",
    "test_page_passes_the_accessibility_audit", "test_every_figure_has_alt_text_and_a_link_to_its_source_data",
    "test_chapter_that_regenerates_a_paper_figure_shows_figures", "test_math_is_typeset_by_mathjax",
    "test_internal_links_and_cross_references_resolve", "test_chapter_links_to_its_notebook_on_colab",
    "test_every_page_shows_the_book_version_and_how_to_cite_it",
    "test_no_page_asks_for_anything_outside_this_machine", "test_browser_console_has_no_errors_from_the_site")}
PAGE_READERS.update({"test_page_keeps_the_length_budget": "reader",
                     "test_the_answer_box_starts_on_a_phones_first_screen": "phone"})


@lru_cache(maxsize=None)
def _fetch(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            body = response.read()
            kind = response.headers.get_content_type()
            return response.status, body.decode("utf-8", "replace") if kind == "text/html" else ""
    except urllib.error.HTTPError as err:
        return err.code, ""


def _anchors(html: str) -> set[str]:
    return set(re.findall(r'\bid="([^"]+)"', html)) | set(re.findall(r'\bname="([^"]+)"', html))


@lru_cache(maxsize=None)
def _anchors_at(url: str) -> frozenset[str]:
    """The anchors of the page at ``url`` (found once per page, however many links point there)."""
    return frozenset(_anchors(_fetch(url)[1]))


@pytest.mark.parametrize("docname", DOCNAMES)
def test_page_renders_without_error_text(browser, site_url, pages, docname):
    status, _ = _fetch(f"{site_url}/{_page(docname)}")
    assert status == 200, f"{_page(docname)} answered HTTP {status}"
    pages.open(docname, reuse=True)
    text = browser.execute_script(
        "const m = document.querySelector('main, article, div.bd-article'); return m ? m.innerText : null;")
    assert text is not None, f"{docname}: the page has no main column"
    assert text.strip(), f"{docname}: the page body is empty"
    assert ERROR_TEXT not in text, f"{docname}: the page shows a traceback"
    errors = browser.find_elements("css selector", ".output.traceback, .output.error")
    assert not errors, f"{docname}: a cell shows an error: {errors[0].text[:300]}"
    assert not UNRENDERED_FIGURE.search(text), (
        f"{docname}: a figure was printed as text instead of drawn "
        "(the kernel had no image-capable matplotlib backend)"
    )
    problems = browser.find_elements("css selector", ".system-message, .problematic")
    assert not problems, f"{docname}: Sphinx left error markers: {[p.text for p in problems]}"


#: pandas' default display cuts a cell's text at ``display.max_colwidth`` (50), ending it in "..."
PANDAS_CUT_WIDTH = 50


def _cell_texts(html: str) -> list[str]:
    import html as _html

    cells = (re.sub(r"<[^>]+>", "", c) for c in re.findall(r"<t[dh]\b[^>]*>(.*?)</t[dh]>", html, re.S))
    return [_html.unescape(c).strip() for c in cells]


@lru_cache(maxsize=None)
def _pandas_cut_length(width: int = PANDAS_CUT_WIDTH) -> int:
    """How long a cell's text is once pandas' HTML display has cut it at ``width``."""
    import pandas as pd

    with pd.option_context("display.max_colwidth", width):
        html = pd.DataFrame({"c": ["x" * (4 * width)]})._repr_html_()   # what a notebook shows
    return len(_cell_texts(html)[-1])     # the body's one cell (the header "c" comes first)


def _cut_cells(html: str) -> list[str]:
    """Table cells of a page whose text pandas cut short: as long as a cut cell and ending in
    "..." (a cell that is only "...", pandas' mark of rows left out, is not one)."""
    return [t for t in _cell_texts(html) if len(t) == _pandas_cut_length() and t.endswith("...")]


def test_the_cut_cell_finder_knows_pandas_cut_from_a_whole_cell():
    import pandas as pd

    long = "Wikipedia, BERT-Mini encoders, 10,000 steps (rules v3, look 1 of 4)"
    frame = pd.DataFrame({"body": [long, "short"]})
    with pd.option_context("display.max_colwidth", PANDAS_CUT_WIDTH):
        (cut,) = _cut_cells(frame._repr_html_())
    assert long.startswith(cut[:-3]) and len(cut) < len(long)
    with pd.option_context("display.max_colwidth", None):
        assert _cut_cells(frame._repr_html_()) == []
    assert _cut_cells("<table><tr><td>...</td></tr></table>") == []


@pytest.mark.parametrize("docname", DOCNAMES)
def test_no_table_cell_is_cut_short(site_url, docname):
    """A table's cells reach the reader whole: the book's kernels show pandas cells uncut
    (companion.book.kernel), so an interval keeps its level and a sentence its end."""
    status, html = _fetch(f"{site_url}/{_page(docname)}")
    assert status == 200, f"{_page(docname)} answered HTTP {status}"
    cut = _cut_cells(html)
    assert not cut, f"{docname}: {len(cut)} table cell(s) cut short by pandas, e.g. {cut[:3]}"


@pytest.mark.parametrize("docname", DOCNAMES)
def test_every_image_is_loaded(browser, site_url, pages, docname):
    pages.open(docname, reuse=True)
    images = browser.execute_script(
        "return Array.from(document.images).map(i => [i.getAttribute('src'), i.complete,"
        " i.naturalWidth]);"
    )
    broken = [src for src, complete, width in images if not complete or width == 0]
    assert not broken, f"{docname}: images that did not load: {broken}"


@pytest.mark.parametrize("docname", DOCNAMES)
def test_page_passes_the_accessibility_audit(browser, site_url, pages, audit, docname):
    """axe-core (WCAG 2.0/2.1 A and AA): no serious or critical violation on any page."""
    pages.open(docname, reuse=True)
    audit(browser, _page(docname))


@pytest.mark.parametrize("docname", DOCNAMES)
def test_every_figure_has_alt_text_and_a_link_to_its_source_data(browser, site_url, pages, docname):
    pages.open(docname, reuse=True)
    figures = browser.execute_script(
        """
        return Array.from(document.querySelectorAll('main .cell_output img, main figure img'))
          .map(img => {
            const box = img.closest('figure') || img.closest('.cell_output') || img.parentElement;
            const link = box.querySelector('.companion-source-data a');
            return {src: img.getAttribute('src'), alt: img.getAttribute('alt') || '',
                    csv: link ? link.href : null};
          });
        """
    )
    for fig in figures:
        name = Path(fig["src"]).name
        assert fig["alt"].strip() and Path(fig["alt"]).name != name, (
            f"{docname}: the figure {name} has no alt text saying what it shows")
        assert len(fig["alt"]) >= 40, f"{docname}: the alt text of {name} is too short: {fig['alt']!r}"
        assert fig["csv"], f"{docname}: the figure {name} has no link to its source data"
        status, _ = _fetch(fig["csv"])
        assert status == 200, f"{docname}: the source data of {name} ({fig['csv']}) answered HTTP {status}"
        with urllib.request.urlopen(fig["csv"], timeout=30) as response:
            header = response.readline().decode("utf-8").strip()
        assert header.split(",") == SOURCE_DATA_COLUMNS, f"{docname}: {fig['csv']} header {header!r}"


@pytest.mark.parametrize("docname", DOCNAMES)
def test_every_page_shows_the_book_version_and_how_to_cite_it(browser, pages, docname):
    from companion.book.site.citation import book_version

    label = book_version(ROOT).label
    pages.open(docname, reuse=True)
    version = browser.find_elements("css selector", ".companion-version")
    assert version and label in version[0].get_attribute("textContent"), (
        f"{docname}: the footer does not say version {label}")
    bibtex = browser.find_elements("css selector", ".companion-cite .companion-bibtex-paper")
    assert bibtex and "saponati2025structures" in bibtex[0].get_attribute("textContent"), (
        f"{docname}: no 'Cite this book' box with the paper's BibTeX in the footer")


@pytest.mark.parametrize("docname", FIGURE_CHAPTERS)
def test_chapter_that_regenerates_a_paper_figure_shows_figures(browser, site_url, pages, docname):
    pages.open(docname, reuse=True)
    drawn = browser.execute_script(
        "return Array.from(document.querySelectorAll('main .cell_output img, main figure img'))"
        ".filter(i => i.complete && i.naturalWidth > 0).length;"
    )
    assert drawn > 0, (
        f"{docname} regenerates a figure of the paper (book/figures_and_tables.md) but its "
        "page shows none: end the cell with the figure, or glue it and place it with "
        "{glue:figure}"
    )


@pytest.mark.parametrize("docname", DOCNAMES)
def test_math_is_typeset_by_mathjax(browser, site_url, pages, docname):
    pages.open(docname, reuse=True)
    state = browser.execute_script(
        """
        const math = Array.from(document.querySelectorAll('.math'));
        const raw = math.filter(e => !e.querySelector('mjx-container'))
                        .map(e => e.textContent.slice(0, 60));
        const errors = Array.from(document.querySelectorAll('mjx-merror'))
                        .map(e => e.textContent);
        const body = document.querySelector('main') || document.body;
        const clone = body.cloneNode(true);
        clone.querySelectorAll('pre, code, script').forEach(e => e.remove());
        return {loaded: !!(window.MathJax && MathJax.startup), count: math.length,
                raw: raw, errors: errors, dollars: clone.textContent.includes('$$')};
        """
    )
    if state["count"]:
        assert state["loaded"], f"{docname}: MathJax did not load"
    assert not state["raw"], f"{docname}: math left untypeset: {state['raw']}"
    assert not state["errors"], f"{docname}: MathJax errors: {state['errors']}"
    assert not state["dollars"], f"{docname}: raw $$ left in the text"


@pytest.mark.parametrize("docname", DOCNAMES)
def test_internal_links_and_cross_references_resolve(browser, site_url, pages, docname):
    pages.open(docname, reuse=True)
    page_url = browser.current_url
    hrefs = browser.execute_script(
        "return Array.from(document.querySelectorAll('a[href]')).map(a => a.href);"
    )
    local = [h for h in hrefs if urlparse(h).netloc == urlparse(site_url).netloc]
    assert local, f"{docname}: no internal links at all (navigation missing?)"
    missing_pages, missing_anchors = [], []
    for href in sorted(set(local)):
        target, fragment = urldefrag(urljoin(page_url, href))
        status, _ = _fetch(target)
        if status != 200:
            missing_pages.append(f"{href} (HTTP {status})")
        elif fragment and target.endswith(".html") and fragment not in _anchors_at(target):
            missing_anchors.append(href)
    assert not missing_pages, f"{docname}: links to missing files: {missing_pages}"
    assert not missing_anchors, f"{docname}: links to missing anchors: {missing_anchors}"


@pytest.mark.parametrize("docname", DOCNAMES)
def test_no_page_asks_for_anything_outside_this_machine(browser, pages, outside_requests, docname):
    asked = pages.open(docname, reuse=True)["outside"]   # while the page loaded and settled
    asked = asked + outside_requests(browser)             # and since, as other checks read it
    assert not asked, f"{docname} asked for outside resources: {asked[:5]}"


def test_the_outside_request_check_can_fail(browser, site_url, outside_requests):
    outside_requests(browser)
    browser.get(f"{site_url}/index.html")
    browser.execute_script("const i = new Image(); i.src = 'https://example.org/x.png'; document.body.append(i);")
    browser.execute_async_script("setTimeout(arguments[arguments.length - 1], 500);")
    assert any("example.org" in u for u in outside_requests(browser))


@pytest.mark.parametrize("docname", CHAPTERS)
def test_chapter_links_to_its_notebook_on_colab(browser, site_url, pages, docname):
    pages.open(docname, reuse=True)
    expected = nbgen.colab_url(docname, REPO_URL)
    links = browser.find_elements("css selector", "a.colab-link")
    assert [a.get_attribute("href") for a in links] == [expected]
    assert links[0].is_displayed()
    colab = browser.execute_script(
        "return Array.from(document.querySelectorAll('a[href*=\"colab.research.google\"]'))"
        ".map(a => a.href);"
    )
    assert colab and all(h == expected for h in colab), (
        f"{docname}: a Colab link does not open the generated notebook: {colab}"
    )
    download = browser.find_element("css selector", "a.notebook-download")
    status, _ = _fetch(download.get_attribute("href"))
    assert status == 200, f"{docname}: the notebook download link is broken"


WHAT_SURVIVES = "book/what_survives"


@pytest.mark.skipif(WHAT_SURVIVES not in DOCNAMES, reason="the book has no 'What survives' chapter")
def test_what_survives_shows_a_computed_status_and_evidence_for_every_claim(browser, pages):
    from companion.judge import claims
    pages.open(WHAT_SURVIVES)
    table = browser.find_elements("css selector", "main table, article table")[0]
    rows = table.find_elements("css selector", "tbody tr")
    assert len(rows) == len(claims.VERDICTS), f"{len(rows)} rows for {len(claims.VERDICTS)} claims"
    heads = [th.text.strip() for th in table.find_elements("css selector", "thead th")]
    assert "Status" in heads and "Evidence" in heads, f"the main table's columns: {heads}"
    status_col, evidence_col = heads.index("Status"), heads.index("Evidence")
    for row in rows:
        cells = row.find_elements("css selector", "td")
        assert cells[status_col].text.strip() in claims.STATUSES, f"no status in row: {row.text[:120]}"
        links = cells[evidence_col].find_elements("css selector", "a")
        assert links and links[0].get_attribute("href"), f"no evidence link in row: {row.text[:120]}"


def test_screenshots_of_two_chapters(browser, pages):
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    shots = []
    for docname in (CHAPTERS or DOCNAMES)[:2]:
        pages.open(docname)
        height = browser.execute_script("return document.documentElement.scrollHeight;")
        browser.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {
            "width": 1280, "height": min(height, 5000), "deviceScaleFactor": 1,
            "mobile": False})
        png = browser.execute_cdp_cmd("Page.captureScreenshot", {"format": "png"})["data"]
        browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
        path = SCREENSHOTS / f"{docname.replace('/', '_')}.png"
        path.write_bytes(base64.b64decode(png))
        shots.append(path)
    assert shots
    for path in shots:
        data = Path(path).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000, f"{path} is not a page"


def _is_site_failure(message: str) -> bool:
    """A script of the site that threw, or a file of the site that did not load."""
    if "127.0.0.1" not in message or "favicon.ico" in message:
        return False  # the browser asks every server for a favicon; the site has none
    return "Uncaught" in message or "Failed to load resource" in message


@pytest.mark.parametrize("docname", DOCNAMES)
def test_browser_console_has_no_errors_from_the_site(pages, docname):
    logged = pages.open(docname, reuse=True)["console"]   # what the page's load logged
    errors = [f"{docname}: {e['message']}" for e in logged
              if e["level"] == "SEVERE" and _is_site_failure(e["message"])]
    assert not errors, "\n".join(errors)


def test_the_console_check_finds_a_script_of_the_site_that_throws():
    assert _is_site_failure("http://127.0.0.1:4000/_static/x.js 3:1 Uncaught TypeError: x is undefined")
    assert _is_site_failure("http://127.0.0.1:4000/a.png - Failed to load resource: 404 (Not Found)")
    assert not _is_site_failure("http://127.0.0.1:4000/favicon.ico - Failed to load resource: 404")
    assert not _is_site_failure("https://example.org/x.js Uncaught Error")


def test_the_form_explorer_redraws_when_the_reader_picks_another_form(browser, pages, outside_requests):
    asked = pages.open("book/survey")["outside"]
    state = browser.execute_script("""
        const root = document.getElementById("qk-explorer");
        if (!root) return null;
        const pic = () => ["qk-m", "qk-s", "qk-n", "qk-norms"].map(c => root.querySelector("." + c).toDataURL());
        const scores = () => root.querySelector(".qk-scores").textContent;
        const first = {pic: pic(), scores: scores(), shown: root.dataset.shown};
        const pick = (cls, i) => { const s = root.querySelector("." + cls); s.selectedIndex = i;
                                   s.dispatchEvent(new Event("change")); };
        const out = {first, models: root.querySelector(".qk-model").options.length, steps: []};
        pick("qk-head", 1); out.steps.push({pic: pic(), scores: scores(), shown: root.dataset.shown});
        pick("qk-layer", root.querySelector(".qk-layer").options.length - 1);
        out.steps.push({pic: pic(), scores: scores(), shown: root.dataset.shown});
        pick("qk-model", 1); out.steps.push({pic: pic(), scores: scores(), shown: root.dataset.shown});
        return out;
    """)
    assert state is not None, "the survey page has no form explorer"
    assert state["models"] >= 5
    prev = state["first"]
    for step in state["steps"]:
        assert step["shown"] != prev["shown"]
        assert step["pic"][0] != prev["pic"][0], f"the heatmap did not change for {step['shown']}"
        prev = step
    assert state["first"]["scores"].startswith("symmetry")
    assert not asked + outside_requests(browser)


# ---------------------------------------------------------------------------- length budget
# Length as a tested property (issue 42). The lectures readers hold up as models, QuantEcon's
# and the sections of d2l, run 2,000-5,000 words, state their question first and keep the
# machinery out of the reader's way; the training chapter, at 13,888 rendered words and
# 58,555 px at 1300 px, read as a lab report of some 45 printed pages. So:
#
# - a chapter shows at most MAX_WORDS words: the top of that range plus a fifth for what a
#   chapter of this book carries and a lecture does not (its answer box, captions, the
#   tables of computed values);
# - and is at most MAX_HEIGHT_PX tall at READER_WIDTH_PX: the book's pages measure 4.0 to
#   4.6 px per rendered word at that width (bilinear_form 5,838 px for 1,444 words, survey
#   26,321 px for 6,510, symmetric_init 22,796 px for 4,963), so MAX_WORDS at 4.5 px plus
#   a tenth for figures;
# - the errata and the appendices are reference pages, looked things up in rather than read
#   through: they may be longer, but only split into sections that each keep the chapter
#   budget (MAX_WORDS), with an in-page table of contents that links every section and is
#   shown beside the text at READER_WIDTH_PX.
#
# Words are the main column's rendered text as a reader first sees it (``innerText`` of the
# article: collapsed code and closed solutions do not count, tables and outputs do), split
# on white space.
READER_WIDTH_PX = 1300
# The two budgets are in data/limits.yaml (page_words, page_height_px), read here.
MAX_WORDS = _LIMITS["page_words"]
MAX_HEIGHT_PX = _LIMITS["page_height_px"]
LONG_PAGES_ALLOWED = {"book/errata"} | {
    nbgen._strip_suffix(c["file"]) for part in (toc_yaml(ROOT / "_toc.yml") or {}).get("parts", [])
    if part.get("caption") == "Appendices" for c in part.get("chapters", [])}

_MEASURE = """
    const words = t => (t.match(/\\S+/g) || []).length;
    const article = document.querySelector('article.bd-article') || document.querySelector('main');
    const toc = document.querySelector('nav.page-toc, #pst-page-toc-nav');
    const tocShown = !!toc && toc.offsetParent !== null && toc.getBoundingClientRect().width > 0;
    const tocTargets = toc ? Array.from(toc.querySelectorAll('a[href^="#"]'))
                                  .map(a => decodeURIComponent(a.getAttribute('href').slice(1))) : [];
    // the page's sections: the <section> elements whose heading is an <h2> (a label before
    // the heading puts a <span id> first; any of the section's ids may be the toc's target)
    const sections = Array.from(article.querySelectorAll('section'))
        .filter(s => s.querySelector(':scope > h2'))
        .map(s => ({ids: [s.id, ...Array.from(s.querySelectorAll(':scope > span[id]')).map(e => e.id)],
                    title: s.querySelector(':scope > h2').textContent.replace('#', '').trim(),
                    words: words(s.innerText)}));
    return {words: words(article.innerText), height: document.documentElement.scrollHeight,
            width: window.innerWidth, tocShown, tocTargets, sections};
"""


def test_the_pages_are_read_at_the_reader_width_and_at_a_phones_size(pages):
    assert pages.viewports["reader"][:2] == (READER_WIDTH_PX, 1000) and pages.viewports["phone"] == (*PHONE, True)


def _length_problems(docname: str, m: dict) -> list[str]:
    """What is over the budget on a page measured by _MEASURE (empty: within it)."""
    over = []
    if m["words"] > MAX_WORDS:
        over.append(f"{m['words']:,} rendered words (budget {MAX_WORDS:,})")
    if m["height"] > MAX_HEIGHT_PX:
        over.append(f"{m['height']:,} px tall at {READER_WIDTH_PX} px (budget {MAX_HEIGHT_PX:,})")
    if not over or docname not in LONG_PAGES_ALLOWED:
        return over
    # a reference page may run longer, split into sections of chapter size with a shown toc
    problems = []
    if not m["sections"]:
        problems.append("no sections")
    long_sections = [f"{s['title']!r} ({s['words']:,} words)" for s in m["sections"] if s["words"] > MAX_WORDS]
    if long_sections:
        problems.append(f"sections over {MAX_WORDS:,} words: {', '.join(long_sections)}")
    if not m["tocShown"]:
        problems.append(f"no in-page table of contents shown at {READER_WIDTH_PX} px")
    unlisted = [s["title"] for s in m["sections"] if not set(s["ids"]) & set(m["tocTargets"])]
    if unlisted:
        problems.append(f"sections missing from the in-page table of contents: {unlisted}")
    return [f"{'; '.join(over)}, and as a reference page: {'; '.join(problems)}"] if problems else []


@pytest.mark.parametrize("docname", DOCNAMES)
def test_page_keeps_the_length_budget(browser, site_url, pages, docname):
    status, _ = _fetch(f"{site_url}/{_page(docname)}")
    assert status == 200, f"{_page(docname)} answered HTTP {status} (not built?)"
    pages.open(docname, "reader", reuse=True)
    m = browser.execute_script(_MEASURE)
    assert m["width"] == READER_WIDTH_PX, m["width"]
    over = _length_problems(docname, m)
    assert not over, f"{docname}: " + "; ".join(over)


def test_the_length_budget_can_fail():
    """The rule itself: a long chapter fails; a long reference page passes only split into
    chapter-sized sections that its shown table of contents lists."""
    sections = [{"ids": [f"s{i}"], "title": f"S{i}", "words": 3_000} for i in range(3)]
    long_page = {"words": 9_000, "height": 20_000, "tocShown": True,
                 "tocTargets": ["s0", "s1", "s2"], "sections": sections}
    assert _length_problems("book/survey", long_page)
    assert not _length_problems("book/errata", long_page)
    assert _length_problems("book/errata", {**long_page, "tocShown": False})
    assert _length_problems("book/errata", {**long_page, "tocTargets": ["s0"]})
    assert _length_problems("book/errata", {**long_page, "sections": [{**sections[0], "words": 7_000}]})
    assert _length_problems("book/survey", {**long_page, "words": 5_000, "height": MAX_HEIGHT_PX + 1})
    assert not _length_problems("book/survey", {**long_page, "words": 5_000})


@pytest.mark.skipif(WHAT_SURVIVES not in DOCNAMES, reason="the book has no 'What survives' chapter")
def test_what_survives_opens_with_its_figure_and_its_table_fits_the_column(browser, pages):
    from companion.judge import claims
    pages.open(WHAT_SURVIVES, "reader")
    state = browser.execute_script("""
        const n = arguments[0];
        const article = document.querySelector('article.bd-article') || document.querySelector('main');
        const tables = Array.from(article.querySelectorAll('table'));
        // the main table: the one with a row per claim (else the first)
        const table = tables.find(t => t.querySelectorAll('tbody tr').length === n) || tables[0];
        const figure = article.querySelector('.cell_output img, figure img, svg.figure, .cell_output svg');
        if (!table) return {table: false, figure: !!figure};
        const box = table.closest('.pst-scrollable-table-container, .table-wrapper, .cell_output') || table.parentElement;
        return {table: true, figure: !!figure,
                figureFirst: !!figure && !!(figure.compareDocumentPosition(table) & Node.DOCUMENT_POSITION_FOLLOWING),
                tableWidth: table.scrollWidth, boxWidth: box.clientWidth, boxScroll: box.scrollWidth,
                articleWidth: article.clientWidth};
    """, len(claims.VERDICTS))
    assert state["table"], "What survives has no table"
    assert state["figure"], "What survives shows no figure of the evidence"
    assert state["figureFirst"], "What survives: the table comes before the first figure"
    fits = state["tableWidth"] <= state["boxWidth"] and state["boxScroll"] <= state["boxWidth"]
    assert fits and state["boxWidth"] <= state["articleWidth"], (
        f"What survives: the main table is {state['tableWidth']} px wide in a {state['boxWidth']} px "
        f"container (the content column is {state['articleWidth']} px) at {READER_WIDTH_PX} px: "
        "it needs a horizontal scroll")


@pytest.mark.skipif(WHAT_SURVIVES not in DOCNAMES, reason="the book has no 'What survives' chapter")
def test_every_table_of_what_survives_fits_the_content_column(browser, pages):
    pages.open(WHAT_SURVIVES, "reader")
    wide = browser.execute_script("""
        const article = document.querySelector('article.bd-article') || document.querySelector('main');
        const out = [];
        article.querySelectorAll('table').forEach((table, i) => {
            // a table inside a closed dropdown is measured as it would open
            const details = table.closest('details'); if (details) details.open = true;
            const box = table.closest('.pst-scrollable-table-container, .table-wrapper, .cell_output') || table.parentElement;
            if (table.scrollWidth > box.clientWidth + 1 || box.scrollWidth > box.clientWidth + 1)
                out.push({i: i, width: table.scrollWidth, box: box.clientWidth,
                          head: (table.querySelector('tr') || table).innerText.slice(0, 80)});
        });
        return out;
    """)
    assert not wide, f"What survives at {READER_WIDTH_PX} px: tables wider than the column: {wide}"


PHONE = (390, 844)


@pytest.mark.parametrize("docname", CHAPTERS)
def test_the_answer_box_starts_on_a_phones_first_screen(browser, pages, docname):
    """A reader on a phone (390 x 844) sees the chapter's answer without scrolling: the
    learning goals above it are folded (a dropdown), so only the title, the Colab link and
    the goals' heading come first."""
    pages.open(docname, "phone", reuse=True)
    top = browser.execute_script("""
        const box = Array.from(document.querySelectorAll('article .admonition'))
            .find(a => /^\\s*The answer/i.test((a.querySelector('.admonition-title') || a).innerText));
        return box ? box.getBoundingClientRect().top + window.scrollY : null;""")
    if top is None:
        pytest.skip(f"{docname} has no answer box (a reference page)")
    assert top < PHONE[1], f"{docname}: the answer box starts {top:.0f} px down, below a phone's first screen"


def test_math_on_the_site_cannot_carry_a_javascript_link(browser, pages):
    r"""The site loads MathJax's ``ui/safe`` extension (``_config.yml``): a ``\href`` to an
    ``https:`` address stays a link, one to a ``javascript:`` address is typeset without it."""
    pages.open("book/measuring")
    state = browser.execute_async_script(r"""
        const done = arguments[arguments.length - 1];
        const links = tex => MathJax.tex2chtmlPromise(tex, {display: false}).then(node =>
            Array.from(node.querySelectorAll("[href]")).map(a => a.getAttribute("href")));
        const t0 = Date.now();
        const loaded = () => new Promise((ok, no) => (function wait() {   // MathJax loads deferred
            if (window.MathJax && MathJax.startup) ok(MathJax.startup.promise);
            else if (Date.now() - t0 > 45000) no("MathJax did not load in 45 s");
            else setTimeout(wait, 100);
        })());
        loaded()
          // one after the other: MathJax's conversions share one document and must not overlap
          .then(() => links("\\href{https://example.org/}{\\text{safe}}"))
          .then(safe => links("\\href{javascript:document.title='pwned'}{\\text{hostile}}")
                          .then(hostile => ({safe: safe, hostile: hostile})))
          .then(found => done(found), err => done({error: String(err)}));
    """)
    assert "error" not in state, state
    assert "https://example.org/" in state["safe"], f"an https link in math is not a link: {state}"
    assert state["hostile"] == [], f"a javascript: link in the site's math is live: {state}"
