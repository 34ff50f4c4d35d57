"""The one way a computed value is pasted into the Markdown or HTML the book's builders write.

A glued value (``{glue:text}`name```) is text a chapter's code computed: a number, a status,
a sentence, a token such as ``##ing``.  On the book's pages myst-nb shows it as plain text,
whatever it holds.  The decks (:mod:`companion.book.editions.slides`) and the notebooks
(:mod:`companion.book.editions.notebooks`) paste it into Markdown that is rendered afterwards (the decks
with raw HTML allowed), so pasted raw, ``<img src=x onerror=...>`` became an element of the
deck, ``*a*`` emphasis, a backtick a code span, ``$x$`` a formula, ``a|b`` two table cells and
``##ing`` at the start of a line a heading.  :func:`pasted` makes it plain text again in
either setting; both builders call it for every value they paste.

A chapter's own text may hold raw HTML (a table, a link), which the deck renders as the book
does; :func:`safe_html` lets through only such inert markup, so a tag that would run (a
``<script>``, an ``onerror=`` attribute, a ``javascript:`` link) shows in the deck as the text
it is.
"""

from __future__ import annotations

import html
import re

__all__ = ["pasted", "safe_html", "inert_html"]

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
#: what a line that is only a value would otherwise be read as: a MyST target ``(label)=`` (its
#: ``(`` written as a character reference), or one of the decks' own figure and table marks
#: ``@@figure:0@@`` (its ``@`` so written: :mod:`companion.book.editions.slide_plan`)
_TARGET_SHAPE = re.compile(r"^\(.*\)=$")


def pasted(value, into: str = "markdown") -> str:
    """``value`` as plain text for ``into``: ``"markdown"`` (inline Markdown, raw HTML allowed
    around it) or ``"html"`` (HTML text or a quoted attribute value).

    Whitespace, line breaks included, becomes single spaces (a pasted value is inline: it
    never opens a block); ``& < > " '`` become character references (so that not even a value
    that ends up in a quoted attribute can leave it); in Markdown every character that would start
    inline markup, and a leading heading, list, comment or fence marker, is escaped with a
    backslash (a value shaped as a MyST target ``(x)=`` or opening with ``@``, the decks' marks,
    has its first character written as a character reference).  So the rendered text is
    ``value`` as it was, and no element, attribute, label or mark comes from it.
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
    elif _TARGET_SHAPE.match(text):
        text = "&#40;" + text[1:]
    elif text.startswith("@"):
        text = "&#64;" + text[1:]
    return text


#: tags a chapter's raw HTML may use in a deck (inert: no script, frame, form, style or object)
_SAFE_TAGS = frozenset("a abbr b br caption code col colgroup dd del details div dl dt em figcaption figure h1 h2 h3 "
                       "h4 h5 h6 hr i img kbd li ol p pre s small span strong sub summary sup table tbody td tfoot th "
                       "thead tr u ul".split())
#: their attributes that carry no behaviour (no event handler, no style)
_SAFE_ATTRS = frozenset("alt class colspan rowspan align title id width height href src".split())
#: what an address may be: a fragment, a relative path, http(s) or mailto; an image also a raster data URL
_SAFE_URL = re.compile(r"^(?:#|/|\.|https?:|mailto:|(?![a-z][a-z0-9+.-]*:))", re.I)
_IMAGE_DATA = re.compile(r"^data:image/(?:png|jpeg|gif|webp);base64,[A-Za-z0-9+/=\s]*$", re.I)


def _safe_address(tag: str, name: str, value: str) -> bool:
    """Whether ``value`` (an ``href`` or ``src``) is a safe address: a fragment, a relative path,
    http(s) or mailto once the blanks and controls a browser drops in a scheme are dropped; an
    image's ``src`` also a raster data URL."""
    bare = re.sub(r"[\x00-\x20\x7f\ufffd]", "", value)
    return bool(_SAFE_URL.match(bare) or (tag == "img" and name == "src" and _IMAGE_DATA.match(value)))


def safe_html(fragment: str) -> str:
    """``fragment`` (raw HTML a chapter's Markdown holds) with only inert markup left as markup:
    each tag of :data:`_SAFE_TAGS` with its attributes of :data:`_SAFE_ATTRS` (an ``href`` or
    ``src`` only to a safe address), every other tag or attribute dropped or shown as text
    (``<script>``, ``onerror=``, ``javascript:``), comments dropped, text escaped."""
    from html.parser import HTMLParser

    out: list[str] = []

    def attrs_of(tag, attrs):
        kept = []
        for name, value in attrs:
            name = name.lower()
            if name not in _SAFE_ATTRS:
                continue
            value = "" if value is None else value
            if name in ("href", "src") and not _safe_address(tag, name, value):
                continue
            kept.append(f' {name}="{html.escape(value, quote=True)}"')
        return "".join(kept)

    class _Clean(HTMLParser):
        def handle_starttag(self, tag, attrs):
            out.append(f"<{tag}{attrs_of(tag, attrs)}>" if tag in _SAFE_TAGS
                       else html.escape(self.get_starttag_text() or f"<{tag}>"))

        def handle_startendtag(self, tag, attrs):
            out.append(f"<{tag}{attrs_of(tag, attrs)}/>" if tag in _SAFE_TAGS
                       else html.escape(self.get_starttag_text() or f"<{tag}/>"))

        def handle_endtag(self, tag):
            out.append(f"</{tag}>" if tag in _SAFE_TAGS else html.escape(f"</{tag}>"))

        def handle_data(self, data):
            out.append(html.escape(data, quote=False))

        def handle_entityref(self, name):
            out.append(f"&{name};")

        def handle_charref(self, name):
            out.append(f"&#{name};")

        def unknown_decl(self, data):   # <![CDATA[...]]>: its text, escaped
            out.append(html.escape(data, quote=False))

    parser = _Clean(convert_charrefs=False)
    parser.feed(fragment)
    parser.close()
    if parser.rawdata:   # an unfinished tag at the end (``<img src=x onerror=...``): text
        out.append(html.escape(parser.rawdata))
    return "".join(out)


#: what a computed table adds to the inert tags of :data:`_SAFE_TAGS`: a ``<style>`` block (pandas'
#: ``Styler`` and ``DataFrame`` write one), and attributes that carry no behaviour either
_INERT_TAGS = _SAFE_TAGS | {"style"}
_INERT_ATTRS = _SAFE_ATTRS | frozenset("border cellspacing cellpadding valign scope headers role tabindex "
                                       "scoped type style".split())
#: what in a style sheet or a style attribute fetches or runs something (an address, an old IE
#: expression, a binding, an import)
_RAW_TAG = re.compile(r"<[/!?]?(?:script|iframe|frame|object|embed|applet|svg|math|form|base|link|meta|template|"
                      r"noscript|xmp|plaintext|textarea)", re.I)
_RAW_SCHEME = re.compile(r"(?:java|vb|live)script:|data:text", re.I)
_CSS_ACTIVE = re.compile(r"url\s*\(|expression\s*\(|@import|behaviou?r\s*:|-moz-binding|javascript:|\\", re.I)


def inert_html(fragment: str) -> bool:
    """Whether ``fragment`` (an HTML output a chapter's code made: a table, a styled table) holds
    only inert markup, so it may be carried as it is into a notebook: every tag is one of
    :data:`_SAFE_TAGS` or a ``<style>`` block, every attribute one of :data:`_INERT_ATTRS` or an
    ``aria-`` label, every ``href``/``src`` a safe address, and no style fetches or runs anything.
    A ``<script>``, an ``on*=`` handler, an ``<svg>``, a ``javascript:`` address hidden by an
    entity or a tab, a comment or a declaration makes it not inert."""
    from html.parser import HTMLParser

    # a belt for where Python's parser and a browser's might read a broken tag differently: the
    # raw text (blanks and controls dropped) opens no script-like element and names no handler,
    # and decoded as an attribute value is, names no script address, whatever the parse makes of it
    def flat(text):
        return re.sub(r"[\x00-\x20\x7f]", "", text)

    if (_RAW_TAG.search(flat(fragment)) or _RAW_SCHEME.search(flat(html.unescape(fragment)))
            or re.search(r"[\s/\"'`]on[a-z]+\s*=", fragment, re.I)):
        return False
    verdict = {"inert": True}

    def no(*_):
        verdict["inert"] = False

    def check(tag, attrs):
        if tag not in _INERT_TAGS:
            return no()
        for name, value in attrs:
            name, value = name.lower(), "" if value is None else value
            if not (name in _INERT_ATTRS or re.fullmatch(r"aria-[a-z]+", name)):
                return no()
            if name in ("href", "src") and not _safe_address(tag, name, html.unescape(value)):
                return no()
            if name == "style" and _CSS_ACTIVE.search(html.unescape(value)):
                return no()

    class _Read(HTMLParser):
        def handle_starttag(self, tag, attrs):
            check(tag, attrs)
            self.in_style = tag == "style"

        def handle_startendtag(self, tag, attrs):
            check(tag, attrs)

        def handle_endtag(self, tag):
            self.in_style = False
            if tag not in _INERT_TAGS:
                no()

        def handle_data(self, data):
            if getattr(self, "in_style", False) and _CSS_ACTIVE.search(data):
                no()

        handle_comment = handle_decl = handle_pi = unknown_decl = no

    parser = _Read(convert_charrefs=True)
    parser.feed(fragment)
    parser.close()
    if parser.rawdata.strip():   # an unfinished tag at the end
        no()
    return verdict["inert"]
