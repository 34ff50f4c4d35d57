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
import numbers
import re
from decimal import Decimal

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


#: a NaN or an infinity written as a word of its own ("nan", "-inf", "Infinity"), or a missing
#: value as pandas writes it ("<NA>", "NaT"); not a word of a compound ("inf-norm", "NaN-safe",
#: "sup/inf") nor the name "Nan", which no program writes for a number
_NON_FINITE_WORD = re.compile(r"(?<![\w./])[-+]?(?!(?-i:Nan)\b)(?:nan|inf(?:inity)?)(?![\w/]|-\w)|<NA>|(?-i:\bNaT\b)",
                              re.IGNORECASE)

#: the largest integer a number format (``:.2f``, ``:.3g``) can write: float64's largest
_LARGEST_INT = int(1.7976931348623157e308)


def _refuse_non_finite(name: str, helper: str, shown: str) -> None:
    raise ValueError(f"{helper}({name!r}): the value is {shown}, and no sentence of the book may carry a "
                     "non-finite number; glue a word that says why the number is missing (glue_text), or "
                     "glue nothing and write the sentence without it.")


def _is_missing(value) -> bool:
    """Whether ``value`` is pandas' missing value or a missing time (``pd.NA``, ``NaT``)."""
    if type(value).__name__ in ("NAType", "NaTType"):
        return True
    return isinstance(value, np.datetime64 | np.timedelta64) and bool(np.isnat(value))


def glue_text(name: str, value) -> None:
    """Glue ``value`` as text: ``{glue:text}`name``` shows it without quotes.  A missing value
    (``None``, ``pd.NA``, ``NaT``) and a text holding a NaN, an infinity or a missing value as
    a word of its own (``nan``, ``inf``, ``<NA>``, ``NaT``) are refused, naming ``name``."""
    from myst_nb import glue

    from ..judge.claims import Plain

    if value is None or _is_missing(value):
        raise ValueError(f"glue_text({name!r}): the value is {value!r}, a missing value, which a sentence would "
                         "show as that word; glue a word that says why it is missing.")
    text = str(value)
    found = _NON_FINITE_WORD.search(text)
    if found:
        _refuse_non_finite(name, "glue_text", f"{text[:60]!r}, which holds {found.group(0)!r}")
    glue(name, _read_back_as(text, Plain), display=False)
    _show(name, str(value))


def _read_back_as(text: str, plain):
    """``text`` as the object to glue, whose ``repr`` (the ``text/plain`` myst-nb keeps) reads back
    as ``text``: ``{glue:text}`` reads that ``repr`` as a Python literal where it is one, so the text
    itself (``plain``, whose ``repr`` is the text) is glued only where that reading gives it back;
    else its quoted ``repr``, which the reading unquotes.  (A list written ``0, 1, 2`` was read as
    the tuple and shown ``(0, 1, 2)``; ``0.50`` as the number, shown ``0.5``.)"""
    import ast

    try:
        back = ast.literal_eval(text)
    except (SyntaxError, ValueError, TypeError, MemoryError, RecursionError):
        return plain(text)
    return plain(text) if str(back) == text else plain(repr(text))


def _plain_number(name: str, value):
    """``value`` as the Python ``int`` or ``float`` whose ``repr`` myst-nb pastes and formats
    (``{glue:text}`name:.2f```): a NumPy or PyTorch scalar (or a 0-d array) by its value, a
    ``Decimal`` or ``Fraction`` by its float (their ``repr`` would be pasted as
    ``Decimal('1.5')``), ``-0.0`` as ``0.0``.  A yes/no, text, or anything else is refused,
    naming ``name``."""
    item = getattr(value, "item", None)
    if item is not None and getattr(value, "ndim", None) == 0:   # NumPy scalar, 0-d array, torch scalar
        value = item()
    if isinstance(value, bool):
        raise TypeError(f"glue_number({name!r}): {value!r} is a yes/no, not a number; glue a word for it "
                        "with glue_text (for example 'yes' or 'no').")
    if isinstance(value, numbers.Integral):
        value = int(value)
        if abs(value) > _LARGEST_INT:
            raise ValueError(f"glue_number({name!r}): an integer of {len(str(abs(value)))} digits is beyond what a "
                             "number format can write; glue it as text (glue_text) or in other units.")
        return value
    if isinstance(value, (numbers.Real, Decimal)):
        # a Decimal that is a number, a Fraction: finite, though float64 may not hold it
        finite = value.is_finite() if isinstance(value, Decimal) else isinstance(value, numbers.Rational)
        try:
            number = float(value)
        except OverflowError:    # a Fraction beyond float64
            number = math.inf
        except ValueError:       # a signalling NaN
            number = math.nan
        if not math.isfinite(number):
            if finite:
                raise ValueError(f"glue_number({name!r}): {str(value)[:40]} is beyond what a number format can "
                                 "write (float64); glue it as text (glue_text) or in other units.")
            _refuse_non_finite(name, "glue_number", repr(value))
        return number + 0.0   # -0.0 reads 0.0
    raise TypeError(f"glue_number({name!r}): {type(value).__name__} {str(value)[:60]!r} is not a number; "
                    "glue a number (float(...)), or text with glue_text.")


def glue_number(name: str, value) -> None:
    """Glue a number as a plain Python ``int`` or ``float`` (a NumPy or PyTorch scalar, a
    ``Decimal`` or a ``Fraction`` by its value), so that ``:.2f`` formats apply and the page
    shows the number, never its type's ``repr``.  A NaN or an infinity is refused, naming
    ``name`` (it would be pasted as ``nan`` in a sentence); so are a yes/no (``True``), text
    and an integer no number format can write."""
    from myst_nb import glue

    value = _plain_number(name, value)
    glue(name, value, display=False)
    _show(name, value)


def glue_figure(name: str, fig) -> None:
    """Glue a figure as it is (its image), without showing it in the cell (unless
    :func:`show_values` is on)."""
    from myst_nb import glue

    glue(name, fig, display=False)
    _show(name, fig)
