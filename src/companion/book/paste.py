"""Thin glue helpers for the chapters: a value computed in a cell, pasted into the prose with
``{glue:text}`name```, without the plumbing in every cell.

* :func:`glue_text`: a sentence or a word (a status, a list) shown as it is, without quotes;
* :func:`glue_number`: a number, formatted where it is pasted (``{glue:text}`name:.3f```);
  NumPy scalars become Python numbers so that the format applies;
* :func:`glue_figure`: a figure (or anything else with a rich display), pasted with
  ``{glue:figure}`name``` or ``{glue}`name```.

In the book's build none shows anything in the cell; each is :func:`myst_nb.glue`
underneath, so the build fails on a pasted name no cell glued.  In a chapter's notebook the
set-up (:func:`companion.book.editions.colab.setup`) turns on :func:`show_values`: each helper then
also shows its value under the cell that computes it, as ``name = value`` (a figure as
itself), so a re-run shows the fresh value of every number the text carries from the build.
"""

from __future__ import annotations

import math
import re

import numpy as np

__all__ = ["glue_text", "glue_number", "glue_figure", "show_values", "shown", "SHOWN_KEY"]

#: the output metadata key that marks a value shown by :func:`show_values`
SHOWN_KEY = "companion_glued"

_SHOW = False


def show_values(on: bool = True) -> None:
    """Make the helpers below also show each value in its cell (``name = value``; a figure as
    itself), besides gluing it.  The notebooks' set-up turns this on; the book's build never
    does, so its pages and outputs are unchanged."""
    global _SHOW
    _SHOW = bool(on)


def shown(name: str, text: str) -> tuple[dict, dict]:
    """The display bundle ``(data, metadata)`` that shows a glued value's text in a cell: the
    one a re-run shows, and the one a generated notebook carries from the build."""
    return {"text/plain": f"{name} = {text}"}, {SHOWN_KEY: name}


def _show(name: str, value) -> None:
    if not _SHOW:
        return
    from IPython.display import display

    if hasattr(value, "savefig"):
        # a figure: shown as itself, unless pyplot manages it (an inline backend then shows
        # it at the end of the cell already)
        if getattr(getattr(value, "canvas", None), "manager", None) is None:
            display(value)
        return
    data, metadata = shown(name, repr(value) if not isinstance(value, str) else str(value))
    display(data, raw=True, metadata=metadata)


#: a NaN or an infinity written as a word of its own ("nan", "-inf", "Infinity")
_NON_FINITE_WORD = re.compile(r"(?<![\w.])[-+]?(?:nan|inf(?:inity)?)(?!\w)", re.IGNORECASE)


def _refuse_non_finite(name: str, helper: str, shown: str) -> None:
    raise ValueError(f"{helper}({name!r}): the value is {shown}, and no sentence of the book may carry a "
                     "non-finite number; glue a word that says why the number is missing (glue_text), or "
                     "glue nothing and write the sentence without it.")


def glue_text(name: str, value) -> None:
    """Glue ``value`` as text: ``{glue:text}`name``` shows it without quotes.  A text holding a
    NaN or an infinity as a word of its own (``nan``, ``inf``) is refused, naming ``name``."""
    from myst_nb import glue

    from ..judge.claims import Plain

    text = str(value)
    found = _NON_FINITE_WORD.search(text)
    if found:
        _refuse_non_finite(name, "glue_text", f"{text[:60]!r}, which holds {found.group(0)!r}")
    glue(name, Plain(text), display=False)
    _show(name, str(value))


def glue_number(name: str, value) -> None:
    """Glue a number (a NumPy scalar as its Python value, so ``:.2f`` formats apply).  A NaN or
    an infinity is refused, naming ``name`` (it would be pasted as ``nan`` in a sentence)."""
    from myst_nb import glue

    value = value.item() if isinstance(value, np.generic) else value
    try:
        finite = math.isfinite(float(value))
    except (TypeError, ValueError):
        raise TypeError(f"glue_number({name!r}): {type(value).__name__} {str(value)[:60]!r} is not a number; "
                        "glue a number, or text with glue_text.") from None
    if not finite:
        _refuse_non_finite(name, "glue_number", repr(value))
    glue(name, value, display=False)
    _show(name, value)


def glue_figure(name: str, fig) -> None:
    """Glue a figure as it is (its image), without showing it in the cell (unless
    :func:`show_values` is on)."""
    from myst_nb import glue

    glue(name, fig, display=False)
    _show(name, fig)
