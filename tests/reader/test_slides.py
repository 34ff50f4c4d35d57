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
            // every slide shown in turn at the deck's 1280 x 720: content taller than the slide overflows
            const secs = Array.from(document.querySelectorAll(".reveal .slides > section"));
            const tall = [];
            secs.forEach((s, i) => { Reveal.slide(i); if (s.scrollHeight > s.clientHeight + 1) tall.push(i); });
            done({typeset: document.body.dataset.typeset || "",
                  sections: document.querySelectorAll(".reveal .slides section").length,
                  math: document.querySelectorAll("mjx-container").length,
                  mathErrors: document.querySelectorAll("mjx-merror").length,
                  images: imgs.length,
                  broken: imgs.filter(i => !(i.complete && i.naturalWidth > 0)).length,
                  rawMyst: (document.body.innerText.match(/[{](prf:|glue|code-cell|exercise|solution)/g) || []).length,
                  rawLabels: (document.body.innerText.match(/[(][A-Za-z0-9_-]+[)]=/g) || []).length,
                  tall: tall});
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
    assert not outside_requests(browser)
    audit(browser, f"slides: {deck}.slides.html")  # no serious or critical violation


@pytest.mark.parametrize("deck", DECKS)
def test_a_deck_of_a_chapter_with_figures_shows_them(deck):
    import json

    executed = ROOT / "_build" / "jupyter_execute" / "book" / f"{deck}.ipynb"
    nb = json.loads(executed.read_text())
    drawn = sum(1 for c in nb["cells"] if c["cell_type"] == "code"
                for o in c.get("outputs", []) if "image/png" in o.get("data", {})
                and "scrapbook" not in o.get("metadata", {})
                and not {"remove-output", "remove-cell"} & set(c.get("metadata", {}).get("tags", [])))
    shown = (SLIDES / f"{deck}.slides.html").read_text().count("<img ")
    assert shown >= min(drawn, 1), f"{deck}: the chapter draws {drawn} figures, its deck shows {shown}"
