"""The lecture slides (make slides), opened in headless Chromium with every outside request
refused: every deck loads, its math is typeset, its images show, and it asks for nothing
beyond this machine."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from companion.book import notebooks as nbgen
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
            done({typeset: document.body.dataset.typeset || "",
                  sections: document.querySelectorAll(".reveal .slides section").length,
                  math: document.querySelectorAll("mjx-container").length,
                  mathErrors: document.querySelectorAll("mjx-merror").length,
                  images: imgs.length,
                  broken: imgs.filter(i => !(i.complete && i.naturalWidth > 0)).length,
                  rawMyst: (document.body.innerText.match(/[{](prf:|glue|code-cell|exercise|solution)/g) || []).length});
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
    assert not outside_requests(browser)
    audit(browser, f"slides: {deck}.slides.html")  # no serious or critical violation


def test_a_deck_with_figures_shows_them():
    text = (SLIDES / "measuring.slides.html").read_text()
    assert text.count("data:image/png;base64,") >= 2
