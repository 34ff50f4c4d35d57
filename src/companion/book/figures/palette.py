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

__all__ = ["CYCLE", "KIND_COLORS", "KIND_STYLES", "COLORMAPS", "use_book_cycle"]

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
