"""No markup from a glued value (issue 74, family 5): a value pasted into a deck's or a
notebook's Markdown is plain text, through one function (:func:`companion.book.site.markup.pasted`).

Fuzz: random strings of ``< > & " ' ` $ * _ [ ] { } | ~ # - + = % : \\``, line breaks and
fragments such as ``<img src=x onerror=alert(1)>`` are glued into a chapter template (in prose,
at the start of a line, in a table cell, a list item, the answer box, a figure's alt text) and
the deck's HTML (and a notebook cell, rendered as Jupyter renders Markdown) is parsed: it holds
no element and no attribute that the template with a harmless value does not hold, and the
value's text is all there, as text."""

from __future__ import annotations

import html
import random
from collections import Counter
from html.parser import HTMLParser

import pytest

from companion.book.editions import slides as sl
from companion.book.site.markup import pasted
from companion.book.editions.notebooks import colab_markdown

CASES = 400

PIECES = ["<", ">", "&", '"', "'", "`", "$", "*", "_", "[", "]", "(", ")", "{", "}", "|", "~", "#", "-", "+",
          "=", "%", ":", "\\", "!", "/", " ", "\n", "\n\n", "a", "B", "1", ".", "<img src=x onerror=alert(1)>",
          "<script>alert(1)</script>", "```", "$$", ":::", "---", "- ", "1. ", "# ", "{glue:text}`v`",
          "[x](javascript:alert(1))", "![i](x)", "&lt;", "<b>", "**", "~~", "% slide: X", "(lab)=", "\t"]


def _value(rng: random.Random) -> str:
    return "".join(rng.choice(PIECES) for _ in range(rng.randint(1, 12)))


class _Elements(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.elements, self.text = Counter(), []

    def handle_starttag(self, tag, attrs):
        self.elements[(tag, tuple(sorted(a for a, _ in attrs)))] += 1
        for a, v in attrs:
            assert not a.startswith("on"), f"an event handler attribute {a}={v!r}"
            assert not (v or "").strip().lower().startswith("javascript:"), f"{a}={v!r}"

    handle_startendtag = handle_starttag

    def handle_data(self, data):
        self.text.append(data)


def _parse(page: str) -> _Elements:
    p = _Elements()
    p.feed(page)
    p.close()
    return p


CHAPTER = """# The chapter

:::{admonition} The answer
:class: tip

**Question.** Is it {glue:text}`v` or not?

- Mostly {glue:text}`v`.
:::

## A section

Text before {glue:text}`v` and after.

{glue:text}`v`

| name | value |
|---|---|
| a | {glue:text}`v` |

- an item {glue:text}`v`

```{glue:figure} fig
:name: fig-x

The caption.
```
"""


def _deck(value: str) -> str:
    glue = {"v": {"data": {"text/plain": value}},
            "fig": {"data": {"text/plain": "<Figure>", "image/png": "iVBORw0KGgo="},
                    "metadata": {"image/png": {"alt": value}}}}
    title, slides = sl.plan_chapter(sl.resolve_glue(CHAPTER, glue), [], "chapter")
    return sl.deck_html(title, [sl.render_slide(s) for s in slides])


def _notebook_cell(value: str) -> str:
    """A notebook's Markdown cell with the value pasted, as Jupyter renders it (CommonMark with
    raw HTML, tables and dollar math)."""
    from markdown_it import MarkdownIt
    from mdit_py_plugins.dollarmath import dollarmath_plugin

    md = MarkdownIt("commonmark", {"html": True}).enable("table").use(dollarmath_plugin)
    return md.render(colab_markdown(CHAPTER.replace("{glue:text}`v`", "{glue:text}`v:s`"), {"v": repr(value)}))


HARMLESS = ["x", "plain words here", "0.123", "holds"]


def _allowed(build) -> tuple[set, Counter]:
    """What the template holds with harmless values: the kinds of element, and the most of each."""
    kinds, most = set(), Counter()
    for v in HARMLESS:
        els = _parse(build(v)).elements
        kinds |= set(els)
        most |= els
    return kinds, most


def _norm(s: str) -> str:
    return " ".join(s.split())


@pytest.mark.parametrize("build, name", [(_deck, "deck"), (_notebook_cell, "notebook")])
def test_fuzz_a_pasted_value_adds_no_element_and_stays_text(build, name):
    kinds, most = _allowed(build)
    rng = random.Random(74)
    checked = 0
    for _ in range(CASES):
        value = _value(rng)
        page = build(value)
        got = _parse(page)
        extra = {k: n for k, n in got.elements.items() if k not in kinds}
        assert not extra, f"{name}: {value!r} added elements {extra}"
        for tag in ("img", "script", "a", "iframe", "b", "em", "strong", "code", "h1", "h2", "h3", "table", "s"):
            n = sum(c for (t, _), c in got.elements.items() if t == tag)
            allowed = sum(c for (t, _), c in most.items() if t == tag)
            assert n <= allowed, f"{name}: {value!r} made {n} <{tag}> (the template makes {allowed})"
        assert _norm(value) in _norm(" ".join(got.text)) or _norm(value) in _norm(html.unescape(page)), \
            f"{name}: the text of {value!r} was lost"
        checked += 1
    assert checked == CASES


@pytest.mark.parametrize("value", ["<img src=x onerror=alert(1)>", "<script>alert(1)</script>", "a`b`c",
                                   "*x*", "$x$", "a|b", "##ing", "- x", "1. x", "---", ":::", "% slide: x"])
def test_the_issue_values_show_as_themselves(value):
    page = _deck(value)
    assert "onerror" not in "".join(f"{t}{a}" for t, a in _parse(page).elements)
    md = sl._markdown()
    shown = _parse(md.render(pasted(value))).text
    assert _norm("".join(shown)) == _norm(value)            # rendered, the value reads as it was


def test_pasted_is_the_one_function_both_builders_use():
    import inspect

    from companion.book.editions import notebook_cells as notebooks

    assert "pasted(" in inspect.getsource(sl.resolve_glue)
    assert "pasted(" in inspect.getsource(notebooks._role)
    with pytest.raises(ValueError, match="say 'markdown' or 'html'"):
        pasted("x", into="latex")


def test_what_a_substitution_pastes_is_never_read_again():
    """A glued figure's alt text that looks like a glue reference stays text: the values are
    filled in first, the figures after, so an alt is never re-read (and never leaves its quotes)."""
    glue = {"v": {"data": {"text/plain": '" onerror="alert(1)'}},
            "fig": {"data": {"text/plain": "<Figure>", "image/png": "iVBORw0KGgo="},
                    "metadata": {"image/png": {"alt": "see {glue:text}`v`"}}}}
    out = sl.resolve_glue("{glue:text}`v`\n\n```{glue:figure} fig\n:name: f\n\nCaption {glue:text}`v`.\n```\n", glue)
    img = [a for (t, a), _ in _parse(out).elements.items() if t == "img"]
    assert img == [("alt", "src")] and 'alt="see {glue:text}`v`"' in out
    assert "Caption &quot; onerror=&quot;alert(1)." in out     # the caption's reference is filled, as text
