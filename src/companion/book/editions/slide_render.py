"""Slides as HTML: one slide's markup (:func:`render_slide`) and the reveal.js page of a deck
(:func:`deck_html`, its style sheet included: a 1280 x 720 slide, tables and code that scroll
inside the slide rather than widen it). The rendering half of :mod:`companion.book.editions.slides`.
"""

from __future__ import annotations

import html
import re
from functools import lru_cache

from .slide_plan import Slide

__all__ = ["DECK_CSS", "render_slide", "deck_html", "markdown_renderer", "table_html", "title_html", "title_text"]

#: the deck's style sheet: reveal.js's white theme for a 1280 x 720 slide, left-aligned and
#: smaller text, and nothing wider than the slide: a table, a code block or a display formula
#: wider than it scrolls sideways inside its own box (a table taller than the room left also
#: scrolls down inside it), a long code word or address breaks, and MathJax's copy of each
#: formula for screen readers (``mjx-assistive-mml``, clipped to nothing on screen) is kept
#: to its 1 px box, so that a formula near the right edge does not widen the slide
DECK_CSS = """
.reveal .slides section { text-align: left; font-size: 0.72em; height: 100%; overflow-y: auto; }
.reveal .slides section h1, .reveal .slides section h2, .reveal .slides section h3 { text-transform: none; }
.reveal .slides section h2 { font-size: 1.6em; }
.reveal figure { margin: 0; text-align: center; }
.reveal img { max-height: 430px; max-width: 100%; }
.reveal figure.with-text img { max-height: 330px; }
.reveal table { font-size: 0.8em; }
.reveal blockquote { width: 95%; background: #f4f6fa; box-shadow: none; font-style: normal; }
.reveal figcaption { font-size: 0.7em; }
.reveal .slides section > * { max-width: 100%; box-sizing: border-box; }
.reveal pre { width: 100%; max-width: 100%; overflow-x: auto; box-shadow: none; }
.reveal pre code { white-space: pre; max-height: 480px; }
.reveal p code, .reveal li code, .reveal td code { overflow-wrap: anywhere; }
.reveal p, .reveal li, .reveal td, .reveal th { overflow-wrap: break-word; }
.reveal mjx-container[display="true"] { max-width: 100%; overflow-x: auto; overflow-y: hidden; }
.reveal mjx-assistive-mml { width: 1px !important; height: 1px !important; overflow: hidden !important; }
.reveal .deck-table { max-width: 100%; max-height: 560px; overflow: auto; }
.reveal .deck-table.with-text { max-height: 440px; }
.reveal .deck-table table { font-size: 0.62em; margin: 0; border-collapse: collapse; width: max-content; }
.reveal .deck-table caption { font-size: 1.1em; text-align: left; padding-bottom: 0.3em; }
.reveal .deck-table th, .reveal .deck-table td { padding: 0.2em 0.5em; vertical-align: top; max-width: 24em; }
.reveal .deck-table td.num, .reveal .deck-table th.num { text-align: right; }
"""


def markdown_renderer():
    """The Markdown renderer of the slides: CommonMark with tables, MyST's dollar math and amsmath
    as MathJax delimiters, and a chapter's raw HTML through :func:`companion.book.site.markup.safe_html`."""
    from markdown_it import MarkdownIt
    from mdit_py_plugins.amsmath import amsmath_plugin
    from mdit_py_plugins.dollarmath import dollarmath_plugin

    md = (MarkdownIt("commonmark", {"html": True}).enable("table")
          .use(dollarmath_plugin, double_inline=True).use(amsmath_plugin))
    esc = html.escape
    md.add_render_rule("math_inline", lambda self, t, i, o, e: f"\\({esc(t[i].content)}\\)")
    md.add_render_rule("math_inline_double", lambda self, t, i, o, e: f"\\[{esc(t[i].content)}\\]")
    md.add_render_rule("math_block", lambda self, t, i, o, e: f"<p>\\[{esc(t[i].content)}\\]</p>\n")
    md.add_render_rule("math_block_label", lambda self, t, i, o, e: f"<p>\\[{esc(t[i].content)}\\]</p>\n")
    md.add_render_rule("amsmath", lambda self, t, i, o, e: f"<p>{esc(t[i].content)}</p>\n")
    # a chapter's raw HTML is rendered as the book does, but only its inert markup (no script,
    # no event handler, no javascript: address: companion.book.site.markup.safe_html)
    from ..site.markup import safe_html

    md.add_render_rule("html_block", lambda self, t, i, o, e: safe_html(t[i].content))
    md.add_render_rule("html_inline", lambda self, t, i, o, e: safe_html(t[i].content))
    return md



@lru_cache(maxsize=1)
def _title_renderer():
    """Markdown for a slide's title (a heading's text: inline Markdown, glued values already
    pasted as text, formulas in ``$``): no raw HTML, dollar math as MathJax's delimiters."""
    from markdown_it import MarkdownIt
    from mdit_py_plugins.dollarmath import dollarmath_plugin

    md = MarkdownIt("commonmark", {"html": False}).use(dollarmath_plugin, double_inline=True)
    md.add_render_rule("math_inline", lambda self, t, i, o, e: f"\\({html.escape(t[i].content)}\\)")
    md.add_render_rule("math_inline_double", lambda self, t, i, o, e: f"\\[{html.escape(t[i].content)}\\]")
    return md


def title_html(title: str) -> str:
    """A heading's text (MyST Markdown) as the HTML of a slide's title: its inline markup and
    formulas rendered, its roles read as their text, a glued value (pasted as text by
    :func:`companion.book.site.markup.pasted`) shown as that text, escaped once."""
    from .notebook_cells import _ROLE, _role

    return _title_renderer().renderInline(_ROLE.sub(lambda m: _role(m, None, None), title)).strip()


def title_text(title: str) -> str:
    """A heading's text (MyST Markdown) as plain text (a page's ``<title>``): :func:`title_html`
    without its tags, its character references decoded."""
    return html.unescape(re.sub(r"<[^>]*>", "", title_html(title)))


def render_slide(slide: Slide, md=None, links: dict | None = None) -> str:
    """The HTML of one slide: its title, body, table (:func:`table_html`), figure and caption,
    and its notes in an ``<aside class="notes">`` (reveal.js's speaker notes, hidden on the slide)."""
    from ..site.markup import pasted
    from .notebooks import colab_markdown

    md = md or markdown_renderer()
    render = lambda text: md.render(colab_markdown(text, None, links)) if text else ""
    parts = [f"<h2>{title_html(slide.title)}</h2>", render(slide.body)]
    if slide.table:
        parts.append(table_html(slide.table, slide.title, links, below_text=bool(slide.body)))
    if slide.figure:
        png, alt = slide.figure
        png = pasted("".join(str(png).split()), "html")
        size = ' class="with-text"' if slide.body else ""
        parts.append(f'<figure{size}><img alt="{pasted(alt, "html")}" src="data:image/png;base64,{png}"/>'
                     f"<figcaption>{render(slide.caption)}</figcaption></figure>")
    if slide.notes:
        parts.append(f'<aside class="notes">{render(slide.notes)}</aside>')
    return "\n".join(p for p in parts if p)


def table_html(table: str, title: str = "table", links: dict | None = None, below_text: bool = False) -> str:
    """A table a chapter's code made, as a slide shows it: its inert markup only
    (:func:`companion.book.site.markup.safe_html`: a ``<script>`` or an ``onclick`` in a cell
    shows as text), a link to another page of the book (``survey.html#x``) pointed at the
    online book (``links``: page or label -> address), in a box that scrolls when the table is
    wider or taller than the slide (focusable, so that it scrolls by keyboard too), a shorter
    one ``below_text`` (under the slide's text)."""
    from ..site.markup import safe_html

    links = links or {}

    def online(m):
        page, frag = m.group(2), m.group(3) or ""
        address = links.get(page)
        return f'{m.group(1)}"{address}{frag}"' if address else m.group(0)

    clean = re.sub(r'(href=)"(?!https?:|mailto:|#)(?:\./)?([A-Za-z0-9_-]+)\.html(#[^"]*)?"', online, safe_html(table))
    size = "deck-table with-text" if below_text else "deck-table"
    label = html.escape(title_text(title), quote=True)
    return f'<div class="{size}" tabindex="0" role="region" aria-label="{label}: table">{clean}</div>'


def deck_html(title: str, slides: list[str], vendor: str = "vendor") -> str:
    """A reveal.js page with ``slides`` (HTML), reading reveal.js and MathJax from ``vendor``;
    ``title``: the chapter's title as its heading writes it (:func:`title_text`)."""
    # a slide taller than the screen scrolls (overflow-y: auto); tabindex makes that region
    # reachable by keyboard (axe: scrollable-region-focusable)
    sections = "\n".join(f'<section tabindex="0">\n{s}\n</section>' for s in slides)
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"/>
<title>{html.escape(title_text(title))}: slides</title>
<meta name="viewport" content="width=device-width, initial-scale=1"/>
<link rel="stylesheet" href="{vendor}/reveal/reveal.css"/>
<link rel="stylesheet" href="{vendor}/reveal/theme/white.css"/>
<style>{DECK_CSS}</style>
<script>
window.MathJax = {{ loader: {{ load: ["ui/safe"] }},
                   tex: {{ inlineMath: [["\\\\(", "\\\\)"]], displayMath: [["\\\\[", "\\\\]"]],
                           processEnvironments: true }},
                   startup: {{ typeset: false }} }};
</script>
<script src="{vendor}/mathjax/tex-chtml.js"></script>
</head><body>
<div class="reveal"><div class="slides">
{sections}
</div></div>
<script src="{vendor}/reveal/reveal.js"></script>
<script>
Reveal.initialize({{ hash: true, center: false, width: 1280, height: 720 }})
  .then(() => MathJax.startup.promise)
  .then(() => MathJax.typesetPromise())
  .then(() => {{ document.body.dataset.typeset = "done"; }});
</script>
</body></html>
"""
