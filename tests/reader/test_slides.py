"""The lecture slides (make slides), opened in headless Chromium with every outside request
refused: every deck loads, its math is typeset, its images show, no slide is taller or wider
than 1280 x 720, and it asks for nothing beyond this machine; a deck shows its chapter's
figures, its key table and every verdict of the answer box, a slide that promises a picture
shows it, and the course plan recounted on this build (rendered prose, decks) fits."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from companion.book.editions import notebooks as nbgen
from companion.book.editions import slides as sl

ROOT = Path(__file__).resolve().parents[2]
SLIDES = ROOT / "_build" / "slides"
DECKS = [Path(c.docname).name for c in nbgen.book_chapters(ROOT)]


@pytest.fixture(scope="module")
def slides_url(serve):
    if not SLIDES.is_dir():
        pytest.fail(f"no slides at {SLIDES}: make slides first")
    return serve(SLIDES)


@pytest.mark.parametrize("deck", DECKS)
def test_deck_loads_typesets_and_shows_its_images_offline(browser, slides_url, outside_requests, audit, deck):
    path = SLIDES / f"{deck}.slides.html"
    assert path.is_file(), f"no deck for {deck}"
    outside_requests(browser)  # forget earlier pages' requests
    browser.get(f"{slides_url}/{deck}.slides.html")
    state = browser.execute_async_script("""
        const done = arguments[arguments.length - 1];
        const t0 = Date.now();
        (function wait() {
          if (document.body.dataset.typeset === "done" || Date.now() - t0 > 45000) {
            const imgs = Array.from(document.images);
            // every slide shown in turn at the deck's 1280 x 720: content taller than the slide overflows
            const secs = Array.from(document.querySelectorAll(".reveal .slides > section"));
            const tall = [], wide = [];
            secs.forEach((s, i) => {
              Reveal.slide(i);
              if (s.scrollHeight > s.clientHeight + 1) tall.push(i);
              // wider than the slide: the slide itself scrolls sideways (a table or a code line
              // scrolls inside its own box instead, which keeps the slide's width)
              if (s.scrollWidth > s.clientWidth + 1) wide.push(i);
            });
            done({typeset: document.body.dataset.typeset || "",
                  sections: document.querySelectorAll(".reveal .slides section").length,
                  math: document.querySelectorAll("mjx-container").length,
                  mathErrors: document.querySelectorAll("mjx-merror").length,
                  images: imgs.length,
                  broken: imgs.filter(i => !(i.complete && i.naturalWidth > 0)).length,
                  rawMyst: (document.body.innerText.match(/[{](prf:|glue|code-cell|exercise|solution)/g) || []).length,
                  rawLabels: (document.body.innerText.match(/[(][A-Za-z0-9_-]+[)]=/g) || []).length,
                  tall: tall, wide: wide});
          } else { setTimeout(wait, 200); }
        })();
    """)
    # the deck's content, without its scripts (MathJax's own configuration names the delimiters)
    source = re.sub(r"<script\b.*?</script>", "", path.read_text(), flags=re.S)
    assert state["typeset"] == "done", f"{deck}: reveal.js and MathJax did not finish ({state})"
    assert state["sections"] >= 3, state
    if "\\(" in source or "\\[" in source:
        assert state["math"] > 0, f"{deck}: math in the deck but none typeset ({state})"
    assert state["mathErrors"] == 0, state
    assert state["broken"] == 0, f"{deck}: {state['broken']} of {state['images']} images did not load"
    assert state["rawMyst"] == 0, f"{deck}: MyST syntax shown as text ({state})"
    assert state["rawLabels"] == 0, f"{deck}: MyST labels such as (x)= shown as text ({state})"
    assert state["tall"] == [], f"{deck}: slides {state['tall']} are taller than the 1280 x 720 slide"
    assert state["wide"] == [], f"{deck}: slides {state['wide']} (from 0) are wider than the 1280 x 720 slide"
    assert not outside_requests(browser)
    audit(browser, f"slides: {deck}.slides.html")  # no serious or critical violation


@pytest.fixture(scope="module")
def executions():
    """The build's executions, read as the slides read them (myst-nb's copies, the execution
    cache, nbval's: ``make test``'s build leaves its figures only in the last two)."""
    from companion.book.site import executions as exs

    return exs.find(nbgen.book_chapters(ROOT), exs.build_sources(ROOT / "_build"))


@pytest.mark.parametrize("chapter", nbgen.book_chapters(ROOT), ids=lambda c: Path(c.docname).name)
def test_a_deck_of_a_chapter_with_figures_shows_them(chapter, executions):
    ex = executions[chapter.docname]
    deck = Path(chapter.docname).name
    assert ex.notebook is not None, f"{deck}: no execution with outputs under {ROOT / '_build'}"
    markdown = "\n\n".join(c.source for c in ex.notebook.cells if c.cell_type == "markdown")
    drawn = sl.drawn_figures(ex.notebook, markdown)
    shown = (SLIDES / f"{deck}.slides.html").read_text().count("<img ")
    assert shown >= min(drawn, 1), f"{deck}: the chapter draws {drawn} figures, its deck shows {shown}"


@pytest.mark.parametrize("chapter", nbgen.book_chapters(ROOT), ids=lambda c: Path(c.docname).name)
def test_a_deck_of_a_chapter_with_tables_shows_its_key_table(chapter, executions):
    """A chapter whose code shows a table has one in its deck: its key table, the first shown
    after the answer box (or one its code cell tags 'slide'), with that table's header."""
    import html as html_lib

    ex = executions[chapter.docname]
    deck = Path(chapter.docname).name
    assert ex.notebook is not None, f"{deck}: no execution with outputs under {ROOT / '_build'}"
    tabled = sl.shown_tables(ex.notebook)
    page = (SLIDES / f"{deck}.slides.html").read_text()
    slides_only = re.sub(r"<aside.*?</aside>", "", page, flags=re.S)   # a table in the notes is not shown
    shown = re.findall(r"<table\b.*?</table>", slides_only, re.S)
    assert len(shown) >= min(tabled, 1), f"{deck}: the chapter's code shows {tabled} tables, its deck's slides {len(shown)}"
    if tabled:
        # the first header cell of some table the chapter shows heads a table of the deck
        heads = {html_lib.unescape(re.sub(r"<[^>]+>", "", h)).strip()
                 for c in ex.notebook.cells if c.cell_type == "code" for o in c.get("outputs", [])
                 for t in sl.output_tables(o) for h in re.findall(r"<th\b[^>]*>(.*?)</th>", t, re.S)[:1]}
        firsts = {html_lib.unescape(re.sub(r"<[^>]+>", "", h)).strip()
                  for t in shown for h in re.findall(r"<th\b[^>]*>(.*?)</th>", t, re.S)[:1]}
        assert heads & firsts, f"{deck}: no table of the deck starts as a table of the chapter does ({sorted(firsts)})"


#: words of a slide that promise a picture on it ("every claim's status in one picture")
PROMISE = re.compile(r"\b(in one picture|in this picture|the picture here)\b", re.I)


@pytest.mark.parametrize("deck", DECKS)
def test_a_slide_that_promises_a_picture_shows_it(deck):
    page = (SLIDES / f"{deck}.slides.html").read_text()
    for n, sec in enumerate(re.findall(r"<section[^>]*>(.*?)</section>", page, re.S)):
        shown = re.sub(r"<aside.*?</aside>", "", sec, flags=re.S)
        text = re.sub(r"<[^>]+>", " ", re.sub(r"<figure.*?</figure>", "", shown, flags=re.S))
        if PROMISE.search(text):
            assert "<img " in shown, f"{deck}: slide {n} (from 0) promises a picture ({PROMISE.search(text).group(0)!r}) and shows none"


@pytest.mark.parametrize("chapter", nbgen.book_chapters(ROOT), ids=lambda c: Path(c.docname).name)
def test_the_answer_slides_state_every_verdict_of_the_answer_box(chapter, executions):
    """Each verdict of the chapter's answer box (a glued value in bold) is on an answer
    slide of its deck, in bold, after the words that say what it is the verdict of."""
    import html as html_lib

    deck = Path(chapter.docname).name
    page = (SLIDES / f"{deck}.slides.html").read_text()
    answer = " ".join(re.sub(r"<aside.*?</aside>", "", sec, flags=re.S)
                      for sec in re.findall(r"<section[^>]*>(.*?)</section>", page, re.S) if "<h2>The answer</h2>" in sec)
    text = " ".join(html_lib.unescape(re.sub(r"<strong>(.*?)</strong>", r"**\1**", answer)).split())
    text = re.sub(r"<[^>]+>", "", text)
    glue = executions[chapter.docname].glue
    for _, clause in sl.answer_verdicts(chapter.source.read_text(encoding="utf-8")):
        stated = " ".join(sl.resolve_glue(sl._links_text(clause), glue).split())
        stated = re.sub(r"\{[^}]+\}`([^`<]*?)\s*(<[^>]*>)?`", r"\1", stated)   # a reference: its words
        assert stated in text or sl.without_asides(stated) in text, f"{deck}: the answer slides do not state {stated!r}"


def test_the_course_plan_fits_the_built_book():
    """The course plan recounted as it is met (issue 73: a lecture read 93-111 minutes against
    its 90): each lecture's reading from its pages as rendered (every glued value pasted) plus
    its core exercises fits its stated time, and its decks hold at most a slide a minute."""
    from companion.book.teaching import course_plan as cp

    toc = [Path(d).name for d in nbgen.toc_docnames(ROOT)]
    problems = cp.built_problems(build=ROOT / "_build", root=ROOT, slides=SLIDES, toc=toc)
    assert problems == [], problems


#: a link written in a slide's math whose address would run script when followed
HOSTILE_MATH = r"<p>\(\href{javascript:document.title='pwned'}{\text{follow me}}\)</p>"


def test_a_javascript_address_in_a_decks_math_is_not_a_live_link(browser, serve, tmp_path):
    r"""MathJax's ``\href`` makes a link of its address; the decks load MathJax's ``ui/safe``
    extension, which drops an address that is not ``http(s)`` or ``file``, so a deck's math
    cannot carry a ``javascript:`` link (the math is typeset, the words stay, the link goes)."""
    vendor = SLIDES / "vendor"
    if not vendor.is_dir():
        pytest.fail(f"no slides vendor folder at {vendor}: make slides first")
    (tmp_path / "vendor").symlink_to(vendor, target_is_directory=True)
    (tmp_path / "hostile.slides.html").write_text(sl.deck_html("hostile", [HOSTILE_MATH, "<p>end</p>"]))
    browser.get(f"{serve(tmp_path)}/hostile.slides.html")
    state = browser.execute_async_script("""
        const done = arguments[arguments.length - 1];
        const t0 = Date.now();
        (function wait() {
          if (document.body.dataset.typeset === "done" || Date.now() - t0 > 45000) {
            const links = Array.from(document.querySelectorAll("[href]")).map(a => a.getAttribute("href"));
            done({typeset: document.body.dataset.typeset || "",
                  math: document.querySelectorAll("mjx-container").length,
                  text: document.querySelector("mjx-container") ? document.querySelector("mjx-container").textContent : "",
                  hostile: links.filter(h => /^\\s*javascript:/i.test(h)),
                  title: document.title});
          } else { setTimeout(wait, 200); }
        })();
    """)
    assert state["typeset"] == "done", state
    assert state["math"] >= 1, f"the deck's math was not typeset: {state}"
    assert state["hostile"] == [], f"a javascript: link in the deck's math is live: {state}"
    assert state["title"] == "hostile: slides", state
