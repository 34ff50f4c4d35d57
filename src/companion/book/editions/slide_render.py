"""Slides as HTML: one slide's markup (:func:`render_slide`) and the reveal.js page of a deck
(:func:`deck_html`, its style sheet included: a 1280 x 720 slide, tables and code that scroll
inside the slide rather than widen it). The rendering half of :mod:`companion.book.editions.slides`.
"""

from __future__ import annotations

import html

from .slide_plan import Slide

__all__ = ["render_slide", "deck_html", "markdown_renderer"]


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



def render_slide(slide: Slide, md=None, links: dict | None = None) -> str:
    """The HTML of one slide: its title, body, figure and caption, and its notes in an
    ``<aside class="notes">`` (reveal.js's speaker notes, hidden on the slide)."""
    from ..site.markup import pasted
    from .notebooks import colab_markdown

    md = md or markdown_renderer()
    render = lambda text: md.render(colab_markdown(text, None, links)) if text else ""
    parts = [f"<h2>{html.escape(slide.title)}</h2>", render(slide.body)]
    if slide.figure:
        png, alt = slide.figure
        png = pasted("".join(str(png).split()), "html")
        parts.append(f'<figure><img alt="{pasted(alt, "html")}" src="data:image/png;base64,{png}"/>'
                     f"<figcaption>{render(slide.caption)}</figcaption></figure>")
    if slide.notes:
        parts.append(f'<aside class="notes">{render(slide.notes)}</aside>')
    return "\n".join(p for p in parts if p)


def deck_html(title: str, slides: list[str], vendor: str = "vendor") -> str:
    """A reveal.js page with ``slides`` (HTML), reading reveal.js and MathJax from ``vendor``."""
    # a slide taller than the screen scrolls (overflow-y: auto); tabindex makes that region
    # reachable by keyboard (axe: scrollable-region-focusable)
    sections = "\n".join(f'<section tabindex="0">\n{s}\n</section>' for s in slides)
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"/>
<title>{html.escape(title)}: slides</title>
<meta name="viewport" content="width=device-width, initial-scale=1"/>
<link rel="stylesheet" href="{vendor}/reveal/reveal.css"/>
<link rel="stylesheet" href="{vendor}/reveal/theme/white.css"/>
<style>
.reveal .slides section {{ text-align: left; font-size: 0.72em; height: 100%; overflow-y: auto; }}
.reveal .slides section h1, .reveal .slides section h2, .reveal .slides section h3 {{ text-transform: none; }}
.reveal .slides section h2 {{ font-size: 1.6em; }}
.reveal figure {{ margin: 0; text-align: center; }}
.reveal img {{ max-height: 430px; max-width: 100%; }}
.reveal table {{ font-size: 0.8em; }}
.reveal blockquote {{ width: 95%; background: #f4f6fa; box-shadow: none; font-style: normal; }}
.reveal figcaption {{ font-size: 0.7em; }}
</style>
<script>
window.MathJax = {{ tex: {{ inlineMath: [["\\\\(", "\\\\)"]], displayMath: [["\\\\[", "\\\\]"]],
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
