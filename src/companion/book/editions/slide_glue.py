"""Glued values and figures filled into a chapter's Markdown for its slides (myst-nb's roles
and directives, shown as the book's page shows them); the glue half of
:mod:`companion.book.editions.slide_plan`."""

from __future__ import annotations

import re

__all__ = ["SlideError", "resolve_glue"]


class SlideError(ValueError):
    """A chapter's slide marks ask for something a slide cannot show (named in the message)."""


#: every role myst-nb pastes a value's text with (``{glue}``, ``{glue:}``, ``{glue:any}``, ``{glue:text}``,
#: ``{glue:md}``)
_GLUE_ROLE = re.compile(r"\{glue(?::(?:text|md|any)?)?\}`(?P<name>[^`:]+)(?::(?P<fmt>[^`]*))?`")
#: the figure directive, and the directives that paste any value (a figure as its image)
_GLUE_PASTE = (r"^(?P<fence>`{3,}|:{3,})\{glue%s\}\s+(?P<name>\S+)\s*\n(?P<body>.*?)^(?P=fence)\s*$")
_GLUE_FIGURE = re.compile(_GLUE_PASTE % ":figure", re.M | re.S)
_GLUE_ANY = re.compile(_GLUE_PASTE % r"(?::figure|:any|:)?", re.M | re.S)


def _figure_only(m: re.Match) -> bool:
    """Whether a match of :data:`_GLUE_ANY` is a ``{glue:figure}`` directive (``{glue}`` and
    ``{glue:any}`` paste any value: a figure as its image, another value as its text)."""
    return m.group(0).split("}", 1)[0].endswith(":figure")


# ----------------------------------------------------------------------------- content
def _glue_shown(name: str, entry: dict, fmt: str) -> str:
    """A glued value as ``{glue:text}`name:fmt``` shows it on the page (myst-nb's rule,
    :func:`companion.book.site.executions.text`: a string '0.25' with ``.1%`` is 25.0%)."""
    from ..site.executions import text

    raw = entry.get("data", {}).get("text/plain", "")
    raw = raw if isinstance(raw, str) else "".join(raw)
    numpy_scalar = re.fullmatch(r"np\.\w+\((.*)\)", raw)  # e.g. np.float64(0.5)
    try:
        return text(numpy_scalar.group(1) if numpy_scalar else raw, fmt)
    except (ValueError, TypeError, OverflowError):
        raise SlideError(f"the glued value {name!r} ({raw[:40]!r}) cannot be shown with the format {fmt!r}: "
                         "glue a number, or change the format in the chapter") from None


def _figure_alt(metadata, default: str) -> str:
    """The alt text the book's kernels attach to a figure (companion.book.figures.source_data)."""
    alt = ((metadata or {}).get("image/png") or {}).get("alt") if isinstance(metadata, dict) else None
    return str(alt) if alt else default


def resolve_glue(text: str, glue: dict) -> str:
    """Fill every glued number and figure of a Markdown cell from the chapter's glue store.

    A glued name that the store lacks is an error: a slide never shows a placeholder.
    """
    from ..site.markup import pasted

    def missing(name):
        raise KeyError(f"glued name {name!r} is not in the chapter's executed outputs (is the book built?)")

    def other_page(name, what):
        if "::" in name:   # myst-nb's page::name: a value another page glued, which no deck carries
            raise SlideError(f"{what} {name!r} is pasted from the page {name.partition('::')[0]!r}, which this "
                             "chapter's deck does not carry; glue it in this chapter too, and paste it from here")

    def figure(m):
        name = m.group("name")
        other_page(name, "the figure")
        data = glue.get(name, {}).get("data", {})
        if "image/png" not in data and "text/plain" in data and not _figure_only(m):   # {glue} of a text
            return pasted(_glue_shown(name, glue[name], ""))
        if "image/png" not in data:
            missing(name)
        caption = "\n".join(ln for ln in m.group("body").splitlines() if not ln.startswith(":")).strip()
        png = "".join(str(glue[name]["data"]["image/png"]).split())
        alt = _figure_alt(glue[name].get("metadata"), name)
        return (f'<figure><img alt="{pasted(alt, "html")}" src="data:image/png;base64,{pasted(png, "html")}"/>'
                f"<figcaption>\n\n{caption}\n\n</figcaption></figure>")

    def role(m):
        name, fmt = m.group("name"), m.group("fmt")
        if fmt is not None and fmt.startswith(":"):   # page::name[:format]
            other_page(f"{name}::{fmt[1:].partition(':')[0]}", "the value")
        if name not in glue:
            missing(name)
        return pasted(_glue_shown(name, glue[name], fmt or ""))   # plain text, as on the book's page

    # values first, figures after: what a substitution pastes is never read again (a glued value
    # in a figure's alt text stays text, it is not a glue reference to fill in)
    return _GLUE_ANY.sub(figure, _GLUE_ROLE.sub(role, text))
