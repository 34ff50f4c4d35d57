"""Thin glue helpers for the chapters: a value computed in a cell, pasted into the prose with
``{glue:text}`name```, without the plumbing in every cell.

* :func:`glue_text`: a sentence or a word (a status, a list) shown as it is, without quotes;
* :func:`glue_number`: a number, formatted where it is pasted (``{glue:text}`name:.3f```);
  NumPy scalars become Python numbers so that the format applies;
* :func:`glue_figure`: a figure (or anything else with a rich display), pasted with
  ``{glue:figure}`name``` or ``{glue}`name```.

None shows anything in the cell; each is :func:`myst_nb.glue` underneath, so the build
fails on a pasted name no cell glued.
"""

from __future__ import annotations

import numpy as np

__all__ = ["glue_text", "glue_number", "glue_figure"]


def glue_text(name: str, value) -> None:
    """Glue ``value`` as text: ``{glue:text}`name``` shows it without quotes."""
    from myst_nb import glue

    from ..judge.claims import Plain

    glue(name, Plain(str(value)), display=False)


def glue_number(name: str, value) -> None:
    """Glue a number (a NumPy scalar as its Python value, so ``:.2f`` formats apply)."""
    from myst_nb import glue

    glue(name, value.item() if isinstance(value, np.generic) else value, display=False)


def glue_figure(name: str, fig) -> None:
    """Glue a figure as it is (its image), without showing it in the cell."""
    from myst_nb import glue

    glue(name, fig, display=False)
