"""The one way a computed value is pasted into the Markdown or HTML the book's builders write.

A glued value (``{glue:text}`name```) is text a chapter's code computed: a number, a status,
a sentence, a token such as ``##ing``.  On the book's pages myst-nb shows it as plain text,
whatever it holds.  The decks (:mod:`companion.book.slides`) and the notebooks
(:mod:`companion.book.notebooks`) paste it into Markdown that is rendered afterwards (the decks
with raw HTML allowed), so pasted raw, ``<img src=x onerror=...>`` became an element of the
deck, ``*a*`` emphasis, a backtick a code span, ``$x$`` a formula, ``a|b`` two table cells and
``##ing`` at the start of a line a heading.  :func:`pasted` makes it plain text again in
either setting; both builders call it for every value they paste.
"""

from __future__ import annotations

import html
import re

__all__ = ["pasted"]

#: characters that start inline Markdown (emphasis, code spans and MyST roles, links and images,
#: math, table cells, strikes, escapes); each is escaped with a backslash, which CommonMark, MyST
#: and Jupyter all honour (``]`` and braces start nothing once ``[`` and backticks are escaped)
_INLINE = re.compile(r"[\\`*_\[$|~]")
#: what opens a block when it starts a line: a heading, a list item, an ordered list item
_LINE_START = re.compile(r"^(#{1,6}|[-+]|\d{1,9}[.)])(?=\s|$)")
#: a line that would underline the paragraph above it into a heading (setext)
_UNDERLINE = re.compile(r"^(=+|-+)$")
#: what starts a MyST comment or '% slide' mark (``%``) or closes a directive (``:::``) at a line's start
_LEADING = ("%", ":")


def pasted(value, into: str = "markdown") -> str:
    """``value`` as plain text for ``into``: ``"markdown"`` (inline Markdown, raw HTML allowed
    around it) or ``"html"`` (HTML text or a quoted attribute value).

    Whitespace, line breaks included, becomes single spaces (a pasted value is inline: it
    never opens a block); ``& < > " '`` become character references (so that not even a value
    that ends up in a quoted attribute can leave it); in Markdown every character that would start
    inline markup, and a leading heading, list, comment or fence marker, is escaped with a
    backslash.  So the rendered text is ``value`` as it was, and no element or attribute
    comes from it.
    """
    if into not in ("markdown", "html"):
        raise ValueError(f"pasted(..., into={into!r}): say 'markdown' or 'html'")
    text = html.escape(" ".join(str(value).split()), quote=True)
    if into == "html":
        return text
    text = _INLINE.sub(lambda m: "\\" + m.group(0), text)
    marker = _LINE_START.match(text)
    if marker:
        end = marker.end()
        text = text[:end - 1] + "\\" + text[end - 1:]
    elif _UNDERLINE.match(text) or text.startswith(_LEADING):
        text = "\\" + text
    return text
