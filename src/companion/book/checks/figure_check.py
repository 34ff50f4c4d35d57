"""Every cell that draws a figure shows it: a check over the book's executed notebooks.

A cell *draws* when its code calls matplotlib's figure makers (``plt.subplots``,
``plt.figure``, ``Figure(...)``) or a function the notebook imported from
``companion.book.figures``.  Such a cell must leave an image among its outputs (shown, or
glued: a glued figure is kept in the cell's outputs too).  Under the book's non-interactive
backend a figure that is only ``plt.show()``-n, or built and dropped, never reaches the page.

:func:`cells_without_image` names each offending cell by its notebook and its first line.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

__all__ = ["figure_functions", "draws", "has_image", "cells_without_image"]

# as Python reads a call: spaces may stand before the parenthesis and around the dot, and
# pyplot may go by its own name (``import matplotlib.pyplot as pyplot``, ``from matplotlib import pyplot``)
_MAKERS = re.compile(r"\b(?:plt|pyplot)\s*\.\s*(subplots|subplot_mosaic|figure)\s*\(|\bFigure\s*\(")


def figure_functions(sources) -> set[str]:
    """Names a notebook imported from ``companion.book.figures`` (``from .... import a, b``)."""
    names = set()
    for src in sources:
        for m in re.finditer(r"from\s+companion\.book\.figures(?:\.\w+)?\s+import\s+\(?([\w\s,]+)\)?", src):
            names |= {n.strip().split(" as ")[-1].strip() for n in m.group(1).split(",") if n.strip()}
    return {n for n in names if n and not n[0].isupper()}      # functions, not constants


def _without_comments(source: str) -> str:
    """The cell's code with its comments left out, as Python reads them (a '#' inside a string
    is no comment); IPython's magic lines (``%``, ``!``) are blanked first."""
    import io
    import tokenize

    lines = ["" if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines()]
    code = "\n".join(lines) + "\n"
    try:
        comments = [t for t in tokenize.generate_tokens(io.StringIO(code).readline) if t.type == tokenize.COMMENT]
    except (tokenize.TokenError, SyntaxError, IndentationError):   # not Python: cut at each '#'
        return "\n".join(line.split("#", 1)[0] for line in lines)
    out = code.splitlines()
    for t in reversed(comments):
        row, col = t.start
        out[row - 1] = out[row - 1][:col]
    return "\n".join(out)


def draws(source: str, functions) -> bool:
    """Whether a cell's code makes a figure (comments left out)."""
    code = _without_comments(source)
    if _MAKERS.search(code):
        return True
    return any(re.search(rf"(?<![\w.]){re.escape(f)}\s*\(", code) for f in functions)


#: the image kinds a page shows (matplotlib's inline formats: png, retina png, svg, jpeg)
IMAGE_KINDS = ("image/png", "image/svg+xml", "image/jpeg")


def has_image(cell) -> bool:
    """Whether a cell's outputs hold an image of a kind in :data:`IMAGE_KINDS`."""
    outputs = cell.get("outputs", []) if isinstance(cell, dict) else []
    return any(isinstance(o, dict) and isinstance(o.get("data"), dict) and any(k in o["data"] for k in IMAGE_KINDS)
               for o in (outputs if isinstance(outputs, list) else []))


def glued_images(notebook: Path | str) -> set[str]:
    """Names glued with an image, from the glue store myst-nb writes beside an executed
    notebook (``<name>.glue.json``; a glued output is kept there, not in the cell)."""
    store = Path(notebook).with_suffix(".glue.json")
    if not store.is_file():
        return set()
    data = _json(store, "glue store")
    return {k for k, v in (data.items() if isinstance(data, dict) else ()) if has_image({"outputs": [v]})}


def _json(path: Path, what: str):
    """The JSON of ``path``, or a one-line ``ValueError`` naming it (a file cut off or edited
    by hand)."""
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (UnicodeDecodeError, ValueError) as err:
        raise ValueError(f"{path} is no readable {what} ({type(err).__name__}: {str(err)[:80]}); build the book "
                         "again (make book).") from None


def _glues_an_image(source: str, images: set[str]) -> bool:
    for m in re.finditer(r"""glue(?:_figure)?\(\s*(f?)["']([^"'{]*)""", source):
        is_f, name = m.group(1), m.group(2)
        # an f-string name is known by its literal start; one with none (f"{name}") could be any
        # name, so it is no evidence that the cell glues an image
        if (name in images) if not is_f else bool(name) and any(i.startswith(name) for i in images):
            return True
    return False


def pasted_figures(page: str) -> set[str]:
    """Names a chapter's text pastes as figures (``{glue:figure}`` directives)."""
    return set(re.findall(r"```\{glue:figure\}\s+([A-Za-z0-9_]+)", page))


def cells_without_image(notebook: Path | str, page: str | None = None) -> list[str]:
    """``"<notebook>: cell <n> (<first line>)"`` for each drawing cell with no image output
    and no image glued (a glued figure is shown where the page pastes it).  The glued images
    come from myst-nb's glue store beside the notebook; where there is none (an nbval copy,
    which keeps no glued output), from the chapter's text ``page``: a name it pastes with
    ``{glue:figure}``."""
    if not Path(notebook).is_file():   # a FIFO would block the read for ever, a folder fail on it
        raise ValueError(f"{notebook} is not a notebook file (missing, a folder, a FIFO or a device); "
                         "pass an executed .ipynb of the build.")
    nb = _json(Path(notebook), "notebook")
    cells = nb.get("cells", []) if isinstance(nb, dict) else None
    if not isinstance(cells, list):
        raise ValueError(f"{notebook} holds no list of cells; pass an executed .ipynb of the build.")
    code = [c for c in cells if isinstance(c, dict) and c.get("cell_type") == "code"]
    sources = ["".join(c.get("source", "")) for c in code]
    functions = figure_functions(sources)
    images = glued_images(notebook)
    if not images and page is not None and not Path(notebook).with_suffix(".glue.json").is_file():
        images = pasted_figures(page)
    out = []
    for n, (cell, src) in enumerate(zip(code, sources), start=1):
        if draws(src, functions) and not has_image(cell) and not _glues_an_image(src, images):
            first = next((l for l in src.splitlines() if l.strip() and not l.startswith("#")), "")
            out.append(f"{Path(notebook).name}: code cell {n} ({first.strip()[:70]}) draws a figure "
                       "that never reaches the page; end the cell with the figure or display(fig)")
    return out
