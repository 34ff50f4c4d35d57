"""The book's colours: distinguishable for the common colour-vision deficiencies.

- :data:`CYCLE`: the line and marker colours (Okabe & Ito's palette, ordered so that
  neighbours differ in lightness); the book's kernels make it matplotlib's default cycle
  (:func:`use_book_cycle`);
- :data:`KIND_COLORS`: encoders and decoders (survey and measuring figures); the two kinds
  also differ by marker or line style, so colour is never the only cue;
- :data:`COLORMAPS`: the colour maps (a diverging map for signed matrices, a sequential
  one for ordered series such as layers).

``tests/test_colour_vision.py`` simulates protanopia, deuteranopia and tritanopia
(Machado, Oliveira & Fernandes 2009) on all of them and checks a minimum distance.
"""

from __future__ import annotations

__all__ = ["CYCLE", "KIND_COLORS", "KIND_STYLES", "COLORMAPS", "use_book_cycle", "plain", "as_written", "positive",
           "grouped"]

#: Okabe & Ito (2008): blue, vermillion, bluish green, orange, reddish purple, sky blue,
#: yellow, black
CYCLE = ["#0072B2", "#D55E00", "#009E73", "#E69F00", "#CC79A7", "#56B4E9", "#F0E442", "#000000"]

#: encoders blue, decoders vermillion
KIND_COLORS = {"encoder": "#0072B2", "decoder": "#D55E00"}
#: the second cue beside colour: error-bar line style of each kind
KIND_STYLES = {"encoder": "-", "decoder": "--"}

#: colour maps the figures use, by role
COLORMAPS = {"diverging": "RdBu_r", "sequential": "viridis"}


def use_book_cycle() -> None:
    """Make :data:`CYCLE` matplotlib's default colour cycle (the book's kernels call this)."""
    import matplotlib as mpl
    from cycler import cycler

    mpl.rcParams["axes.prop_cycle"] = cycler(color=CYCLE)


def positive(values, what: str, name: str) -> None:
    """Refuse a value a log axis cannot draw (zero, negative; matplotlib drops such a point
    without a word, so the figure would show fewer points than its data): one line naming
    the column ``name`` of figure ``what``, the values and the fix.  NaN (a gap) passes."""
    import numpy as np

    v = np.asarray(values, dtype=float)
    bad = v[~np.isnan(v) & ~(v > 0)]
    if bad.size:
        raise ValueError(f"{what}: {name} holds {bad.size} value(s) a log axis cannot show "
                         f"({', '.join(f'{b:g}' for b in bad[:3])}); keep only positive {name} values.")


def grouped(frame, columns, what: str):
    """``frame``, refused in one line where a row has no value (NaN, None) in one of the
    ``columns`` a figure groups by: pandas' ``groupby`` leaves such a row out, so a run, a
    seed or a model would be missing from figure ``what`` without a word."""
    for c in columns:
        if c in frame.columns:
            k = int(frame[c].isna().sum())
            if k:
                raise ValueError(f"{what}: {k} row(s) have no {c} (a missing value), which the figure would leave "
                                 f"out; give each row its {c} or drop those rows.")
    return frame


def plain(text) -> str:
    """``text`` from data (a run's label, a model's or a claim's name) as a figure must draw it:
    as written.  matplotlib reads a string with two ``$`` as mathtext (``cost $5 and $10``
    drawn with "5 and " in italics; ``$\\frac$`` fails when the figure is saved) and leaves a
    legend label starting with ``_`` out of the legend; so each ``$`` is escaped (drawn as
    ``$``) and a leading ``_`` gets a space before it.  :func:`as_written` undoes it."""
    text = str(text).replace("$", r"\$")
    return " " + text if text.startswith("_") else text


def as_written(text) -> str:
    """The text :func:`plain` was given (for the source data and the text alternative)."""
    text = str(text)
    text = text[1:] if text.startswith(" _") else text
    return text.replace(r"\$", "$")
