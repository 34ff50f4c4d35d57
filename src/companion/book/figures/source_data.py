"""The numbers behind a figure and a text alternative for it, read from the Figure itself.

Every figure of the book is a matplotlib Figure that a chapter shows or glues.  The book's
kernels (``book/_ipython``'s start-up file calls :func:`register`) format a Figure as a PNG
whose output metadata carries

- ``alt``: a text alternative made from the plotted data (:func:`alt_text`): the panels,
  their axes and ranges, and each series with its number of points and range;
- ``csv``: the *source data* (:func:`figure_data`): one row per plotted number, exactly the
  values the figure draws (lines, markers, bands, error bars, bars, images), gzip-compressed
  and base64-encoded.

The Sphinx extension (:mod:`companion.book.sphinxext`) puts the alt text on the image and writes
the CSV next to it in the site (``_images/<image>.csv``) with a link under the figure.
A figure that is neither shown through this path nor gives data fails the build.

Columns of the CSV: ``panel`` (1-based, in the order of ``fig.axes``, colour bars left out),
``panel_title``, ``element`` (line, points, band, segments, bars, shape, image), ``series`` (the
artist's legend label, or ``<element> <n>`` when it has none), ``point`` (index within the
series), ``x``, ``y`` (data coordinates; for an image, the column and row index) and
``value`` (an image's pixel value; for bars, the bar's height; empty otherwise).
"""

from __future__ import annotations

import base64
import gzip
import io
import math

import numpy as np

from .palette import as_written

__all__ = ["COLUMNS", "figure_data", "alt_text", "encode_csv", "decode_csv", "figure_bundle",
           "register"]

COLUMNS = ["panel", "panel_title", "element", "series", "point", "x", "y", "value", "category"]
#: 15 significant digits, every digit a float64 holds for certain (9 wrote 1e9 + 1 and 1e9 + 2
#: both as 1e+09); the 16th and 17th are transform round-off (an axvspan's 2.000000000000001)
_FLOAT = "%.15g"


def _panels(fig):
    """The figure's axes that show data (colour bars and empty legend axes left out)."""
    out = []
    for ax in fig.axes:
        if ax.get_label() == "<colorbar>" or getattr(ax, "_colorbar", None) is not None:
            continue
        out.append(ax)
    return out


def _name(artist, element: str, counts: dict, owners: dict | None = None) -> str:
    """The series name of ``artist``: its legend label, else ``<element> <n>``; a label an
    earlier artist of the axes already took gets ``(2)``, ``(3)``, ... (two lines both labelled
    ``seed 0`` were one series of twice the points in the source data and the alt text)."""
    # a label matplotlib hides starts with "_"; one drawn by palette.plain (" _x") is shown
    label = artist.get_label() or ""
    name = None
    if (not label or label.startswith("_")) and owners and id(artist) in owners:
        label = owners[id(artist)] or ""
        if label and not label.startswith("_"):
            name = as_written(label) + (" (error bars)" if element == "segments" else "")
    if name is None and label and not label.startswith("_"):
        name = as_written(label)
    if name is None:
        counts[element] = counts.get(element, 0) + 1
        name = f"{element} {counts[element]}"
    taken = counts.setdefault(None, set())   # every name given on this axes so far
    unique, k = name, 1
    while unique in taken:
        k += 1
        unique = f"{name} ({k})"
    taken.add(unique)
    return unique


def _xy_rows(xy, element, series):
    xy = np.ma.filled(np.ma.asarray(xy, dtype=float), np.nan).reshape(-1, 2)
    return [(element, series, i, float(x), float(y), math.nan) for i, (x, y) in enumerate(xy)]


def _in_data(ax, xy, transform):
    """``xy`` given in ``transform``'s coordinates, in the axes' data coordinates (an
    ``axhline`` is drawn with x in axes fraction, [0, 1]: its ends become the x limits)."""
    xy = np.ma.filled(np.ma.asarray(xy, dtype=float), np.nan).reshape(-1, 2)
    if transform is ax.transData or not len(xy):
        return xy
    return ax.transData.inverted().transform(transform.transform(xy))


def _categories(axis) -> dict:
    """``{position: name}`` of a categorical axis (``ax.bar(["a", "b"], ...)``), else ``{}``."""
    from matplotlib.category import UnitData

    units = axis.get_units()
    return {float(v): str(k) for k, v in units._mapping.items()} if isinstance(units, UnitData) else {}


def _artist_rows(ax):
    """``(element, series, point, x, y, value)`` for every data artist of one axes."""
    from matplotlib.collections import LineCollection, PathCollection, PolyCollection, QuadMesh
    from matplotlib.container import BarContainer
    from matplotlib.image import AxesImage
    from matplotlib.patches import Rectangle

    ax.get_xlim(), ax.get_ylim()   # the view limits as drawn (they are computed lazily)
    rows, counts = [], {}
    owners = {}  # artists drawn for a container (e.g. errorbar's line and bars): its label
    for container in ax.containers:
        label = container.get_label() or ""
        stack = list(container)
        while stack:
            item = stack.pop()
            if isinstance(item, (tuple, list)):
                stack.extend(item)
            elif item is not None:
                owners[id(item)] = label
    for line in ax.lines:
        element = "line" if line.get_linestyle() not in ("None", "", " ") else "points"
        rows += _xy_rows(_in_data(ax, line.get_xydata(), line.get_transform()), element,
                         _name(line, element, counts, owners))
    for coll in ax.collections:
        if isinstance(coll, QuadMesh):
            arr = np.ma.filled(np.ma.asarray(coll.get_array(), dtype=float), np.nan)
            series = _name(coll, "image", counts)
            arr = arr.reshape(coll._meshHeight, coll._meshWidth) if arr.ndim == 1 else arr
            rows += [("image", series, k, float(j), float(i), float(v))
                     for k, ((i, j), v) in enumerate(np.ndenumerate(arr))]
        elif isinstance(coll, LineCollection):
            series = _name(coll, "segments", counts, owners)
            k = 0
            for seg in coll.get_segments():
                for x, y in _in_data(ax, seg, coll.get_transform()):
                    rows.append(("segments", series, k, float(x), float(y), math.nan))
                    k += 1
        elif isinstance(coll, PolyCollection):
            series = _name(coll, "band", counts)
            k = 0
            for path in coll.get_paths():
                for x, y in _in_data(ax, path.vertices, coll.get_transform()):
                    rows.append(("band", series, k, float(x), float(y), math.nan))
                    k += 1
        elif isinstance(coll, PathCollection):
            rows += _xy_rows(_in_data(ax, coll.get_offsets(), coll.get_offset_transform()), "points",
                             _name(coll, "points", counts))
    in_bars = set()
    for container in ax.containers:
        if isinstance(container, BarContainer):
            series = _name(container, "bars", counts)
            horizontal = getattr(container, "orientation", "vertical") == "horizontal"
            for k, rect in enumerate(container.patches):
                in_bars.add(id(rect))
                if horizontal:
                    x, y, v = rect.get_x() + rect.get_width(), rect.get_y() + rect.get_height() / 2, rect.get_width()
                else:
                    x, y, v = rect.get_x() + rect.get_width() / 2, rect.get_y() + rect.get_height(), rect.get_height()
                rows.append(("bars", series, k, float(x), float(y), float(v)))
    # rectangles in data coordinates are bars; one drawn partly in axes fraction (axvspan,
    # axhspan) is a shaded band across the axes, written by its corners
    loose = [p for p in ax.patches if isinstance(p, Rectangle) and id(p) not in in_bars
             and p.get_data_transform() is ax.transData]
    if loose:
        series = _name(loose[0], "bars", counts)
        for k, rect in enumerate(loose):
            rows.append(("bars", series, k, float(rect.get_x() + rect.get_width() / 2),
                         float(rect.get_y() + rect.get_height()), float(rect.get_height())))
    for patch in ax.patches:
        if isinstance(patch, Rectangle) and (id(patch) in in_bars or patch.get_data_transform() is ax.transData):
            continue
        if isinstance(patch, Rectangle):
            corners = _in_data(ax, patch.get_patch_transform().transform([(0, 0), (1, 0), (1, 1), (0, 1)]),
                               patch.get_data_transform())
            rows += _xy_rows(corners, "band", _name(patch, "band", counts))
            continue
        verts = ax.transData.inverted().transform(patch.get_verts()) if len(patch.get_verts()) else []
        rows += _xy_rows(verts, "shape", _name(patch, "shape", counts))
    for image in ax.images:
        if isinstance(image, AxesImage):
            arr = np.ma.filled(np.ma.asarray(image.get_array(), dtype=float), np.nan)
            series = _name(image, "image", counts)
            if arr.ndim == 3:  # an RGB(A) picture: its first channel stands for it
                arr = arr[..., 0]
            rows += [("image", series, k, float(j), float(i), float(v))
                     for k, ((i, j), v) in enumerate(np.ndenumerate(arr))]
    return rows


def figure_data(fig):
    """The figure's plotted numbers as a tidy ``pandas.DataFrame`` (columns :data:`COLUMNS`).

    Raises ``ValueError`` when the figure plots nothing (an empty figure has no source data
    and no meaningful text alternative).
    """
    import pandas as pd

    records = []
    for p, ax in enumerate(_panels(fig), start=1):
        title = as_written(ax.get_title() or ax.get_title("left") or "")
        on_x, on_y = _categories(ax.xaxis), _categories(ax.yaxis)
        for element, series, point, x, y, value in _artist_rows(ax):
            category = on_x.get(x, on_y.get(y, "")) if element != "image" else ""
            records.append((p, title, element, series, point, x, y, value, category))
    if not records:
        raise ValueError("the figure plots no data (no line, marker, band, bar or image)")
    return pd.DataFrame.from_records(records, columns=COLUMNS)


def _fmt(v: float, digits: int = 3) -> str:
    if not np.isfinite(v):
        return "n/a"
    return f"{float(v) + 0.0:.{digits}g}"   # -0.0 reads 0


def _range(values) -> str:
    """``from lo to hi`` (one value where they are equal), with as many significant digits as
    it takes (from 3) for two different ends never to read as one (1000 to 1001)."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    if not len(v):
        return "no finite values"
    lo, hi = v.min(), v.max()
    if lo == hi:
        return _fmt(lo)
    digits = next((d for d in range(3, 18) if _fmt(lo, d) != _fmt(hi, d)), 17)
    return f"from {_fmt(lo, digits)} to {_fmt(hi, digits)}"


def _listed(names, limit: int = 12) -> str:
    return ", ".join(names) if len(names) <= limit else ", ".join(names[:limit]) + f" and {len(names) - limit} more"


def alt_text(fig, data=None, max_series: int = 8) -> str:
    """A text alternative that says what the figure shows, built from its data and labels."""
    data = figure_data(fig) if data is None else data
    panels = _panels(fig)
    suptitle = as_written(fig._suptitle.get_text()) if getattr(fig, "_suptitle", None) is not None else ""
    parts = []
    head = f"Figure with {len(panels)} panel{'s' if len(panels) != 1 else ''}"
    parts.append(head + (f", titled '{suptitle}'" if suptitle else "") + ".")
    for p, ax in enumerate(panels, start=1):
        d = data[data["panel"] == p]
        if d.empty:
            continue
        title = as_written(ax.get_title() or "")
        desc = f"Panel {p}" + (f" '{title}'" if title else "") + ":"
        axes_desc = []
        for name, label, scale in (("x", as_written(ax.get_xlabel()), ax.get_xscale()),
                                   ("y", as_written(ax.get_ylabel()), ax.get_yscale())):
            if label:
                axes_desc.append(f"{name} axis '{label}'" + (f" ({scale} scale)" if scale != "linear" else ""))
        if axes_desc:
            desc += " " + ", ".join(axes_desc) + "."
        series = list(dict.fromkeys(d["series"]))
        shown = []
        for s in series[:max_series]:
            ds = d[d["series"] == s]
            element = ds["element"].iloc[0]
            if element == "image":
                n_rows, n_cols = int(ds["y"].max()) + 1, int(ds["x"].max()) + 1
                shown.append(f"{s}: a {n_rows} by {n_cols} colour map of values {_range(ds['value'])}")
            elif element == "bars":
                names = [c for c in ds["category"] if isinstance(c, str) and c] if "category" in ds else []
                named = f" ({_listed(names)})" if len(names) == len(ds) else ""
                shown.append(f"{s}: {len(ds)} bars{named}, heights {_range(ds['value'])}")
            else:
                what = {"line": "a line", "points": "markers", "band": "a shaded band",
                        "segments": "error bars or segments", "shape": "a shape"}[element]
                shown.append(f"{s}: {what} of {len(ds)} points, x {_range(ds['x'])}, y {_range(ds['y'])}")
        if len(series) > max_series:
            shown.append(f"and {len(series) - max_series} more series")
        desc += " " + "; ".join(shown) + "."
        parts.append(desc)
    return " ".join(parts)


def encode_csv(data) -> str:
    """The source-data table as CSV text, gzip-compressed and base64-encoded (for metadata)."""
    text = data.to_csv(index=False, float_format=_FLOAT, na_rep="")
    return base64.b64encode(gzip.compress(text.encode("utf-8"), mtime=0)).decode("ascii")


#: the most bytes :func:`decode_csv` inflates a figure's source data to (a colour map of
#: 1024 x 1024 values is about 70 MB; a hand-made blob of a few megabytes could otherwise
#: inflate to gigabytes)
MAX_CSV_BYTES = 512 * 2**20


def decode_csv(blob: str) -> str:
    """The CSV text of :func:`encode_csv`'s output.  A blob that is not one (not base64, not
    gzip, not UTF-8 text, or inflating past :data:`MAX_CSV_BYTES`) is a ``ValueError`` in one
    line that says so."""
    import binascii
    import zlib

    fix = "show the figure again in the book's kernel, which writes its source data"
    try:
        raw = base64.b64decode(str(blob), validate=True)
        inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)   # gzip
        data = inflate.decompress(raw, MAX_CSV_BYTES + 1)
        if len(data) > MAX_CSV_BYTES:
            raise ValueError(f"a figure's source data inflates past {MAX_CSV_BYTES:,} bytes; {fix}.")
        if not inflate.eof:
            raise ValueError(f"a figure's source data is cut short (its gzip stream does not end); {fix}.")
        return data.decode("utf-8")
    except (binascii.Error, zlib.error) as err:
        raise ValueError(f"a figure's source data is not base64-encoded gzip ({str(err)[:80]}); {fix}.") from None
    except UnicodeDecodeError:
        raise ValueError(f"a figure's source data is not UTF-8 text; {fix}.") from None


def figure_bundle(fig, **print_kwargs):
    """``(png_bytes, metadata)`` for IPython's PNG formatter: the image, its alt text and its
    source data (``{"alt": ..., "companion": {"csv": <encode_csv>}}``)."""
    from IPython.core.pylabtools import print_figure

    png = print_figure(fig, "png", **print_kwargs)
    data = figure_data(fig)
    return png, {"alt": alt_text(fig, data), "companion": {"csv": encode_csv(data)}}


def register(shell, **print_kwargs) -> None:
    """Format every Figure the kernel displays or glues with :func:`figure_bundle`."""
    from matplotlib.figure import Figure

    formatter = shell.display_formatter.formatters["image/png"]
    formatter.for_type(Figure, lambda fig: figure_bundle(fig, **print_kwargs))


def read_csv_text(text: str):
    """The source-data CSV text read back as a DataFrame (empty cells are NaN)."""
    import pandas as pd

    return pd.read_csv(io.StringIO(text), keep_default_na=True)
