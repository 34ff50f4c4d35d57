"""The display defaults every kernel of the book starts with, whether it runs in the book's
build (``book/_ipython``'s start-up file) or in a generated Colab notebook (its set-up cell).

- pandas shows a table's cells whole.  Its default cuts a cell at 50 characters and ends it
  with ``...``; the book's tables carry sentences (a claim, an interval with its level, a
  list of missing runs) whose end is the part that matters.
- every table reads as a reader's table, not pandas' (:func:`companion.book.tables.register`).
- matplotlib draws with the book's colour-vision-safe cycle
  (:func:`companion.book.figures.palette.use_book_cycle`).
"""

from __future__ import annotations

__all__ = ["use_book_defaults"]


def use_book_defaults() -> None:
    """Set the book's display defaults in this process (safe to call more than once)."""
    import pandas as pd

    from .figures.palette import use_book_cycle
    from .tables import register

    pd.set_option("display.max_colwidth", None)
    register()   # in a kernel: every DataFrame and Styler shown through companion.book.tables
    use_book_cycle()
