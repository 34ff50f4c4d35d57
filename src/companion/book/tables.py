"""The one way a table reaches a reader: every ``pandas.DataFrame`` (and ``Styler``) a page,
a Colab notebook or a student notebook shows goes through :func:`readable`.

pandas' own HTML is made for code: it shows the index (``0, 1, 2, ...`` down the left, or a
second header row for a named index), ``NaN`` where a value is missing, every float with six
decimals or with whatever a chapter rounded it to (``.round(2)`` made What survives print a
learning rate of 1e-3 as ``0.0``), and the package's keys (``training_symmetry``,
``update_directionality``) where the paper has names (Fig. 3a, the update's directionality).
:func:`readable` writes the table for a reader instead:

- no index column: an unnamed integer index (row numbers 0, 1, 2, ...) is dropped, a
  meaningful one (named, or labels set by ``set_index``/``pivot``) becomes the first column(s);
- a missing value (``NaN``, ``None``, ``NaT``) is shown as an em dash, infinities as ``∞``, a
  number of magnitude :data:`HUGE` (``1e15``) or more in scientific notation (``1e+300``, not
  its 301 digits);
- a claim's key is shown by the paper's name of the claim (:data:`CLAIM_NAMES`), any other
  ``snake_case`` key in a header or a cell as words;
- numbers are rounded to what they mean: integers (and whole-number floats) with thousands
  separators, a column a chapter rounded keeps the decimals it was given, an unrounded column
  gets three significant digits of its largest value (three decimals below 10) and two of its spread and of
  its smallest gap, so two distinct values never read as one (each cell at least
  two of its own, so a small p-value never reads 0), ``True``/``False`` read ``yes``/``no``.

:func:`register` installs it as the HTML form of both types in an IPython kernel; the book's
kernels (``book/_ipython``'s start-up file) and the Colab set-up cell do so through
:func:`companion.book.kernel.use_book_defaults`.
"""

from __future__ import annotations

import html
import math
import numbers
import re

__all__ = ["CLAIM_NAMES", "HUGE", "MISSING", "SHORTEST", "cell_text", "column_formats", "label", "readable", "register"]

#: each claim's key (``judge.claims.VERDICTS``' function names) as the paper names the claim
CLAIM_NAMES = {
    "prop_2_1": "Prop. 2.1", "prop_2_2": "Prop. 2.2", "remark_s1_6": "Remark S1.6",
    "prop_s1_7": "Prop. S1.7", "prop_s1_8": "Prop. S1.8", "cor_s1_9": "Cor. S1.9",
    "prop_s1_10": "Prop. S1.10", "lemma_s1_11": "Lemma S1.11", "thm_s1_12": "Thm. 2.3 / S1.12",
    "cor_s1_13": "Cor. S1.13", "thm_s1_14": "Thm. 2.4 / S1.14", "remark_s1_15": "Remark S1.15",
    "prop_s1_17": "Prop. S1.17", "prop_s1_18": "Prop. S1.18",
    "survey_encoder_decoder": "Sec. 3 (encoders vs decoders)",
    "training_symmetry": "Fig. 3a", "training_directionality": "Fig. 3b",
    "symmetric_init_structure": "Fig. S5b", "table_1": "Table 1",
    "update_structure": "Thms. 2.3/2.4 in training (the updates)",
    "objective_swap": "Sec. 4 read causally (objective swap)",
}

#: how a half of a two-part claim is named (as the front page names the survey's halves)
HALVES = {"survey_encoder_decoder": "Fig. 2, {half}"}

#: headers and keys whose words are not just the key's parts
WORDS = {
    "sesoi": "smallest effect of interest", "sd": "sd", "n": "n", "eval_loss": "held-out loss",
    "p_decides": "deciding p", "n_tests": "tests", "lr": "lr",
}

#: what a missing value reads
MISSING = "—"

#: a number at least this large in magnitude is written in scientific notation with three
#: significant digits (``1e+300``, ``-1.23e+20``), never as every digit it has; below it a
#: float that is a whole number is still exact (float64 holds every integer below 2^53)
HUGE = 1e15

#: :func:`column_formats`' answer for a column of set values (each shown as written: 0.001, 0.00005)
SHORTEST = -1

_KEY = re.compile(r"^[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+$")
_KEY_WITH_PART = re.compile(r"^([a-z][a-z0-9]*(?:_[a-z0-9]+)+)( \(.*\))$")


def label(text) -> str:
    """A header or a cell's key as a reader reads it: a claim's key by its paper name
    (``training_symmetry`` -> ``Fig. 3a``; ``survey_encoder_decoder (symmetry)`` keeps its
    part), a name of :data:`WORDS` by its words, any other ``snake_case`` key with spaces;
    other text unchanged."""
    text = str(text)
    if text in CLAIM_NAMES:
        return CLAIM_NAMES[text]
    if text in WORDS:
        return WORDS[text]
    part = _KEY_WITH_PART.match(text)
    if part and part.group(1) in CLAIM_NAMES:   # one half of a claim: 'Fig. 2, symmetry'
        key, half = part.group(1), part.group(2)[2:-1]
        return HALVES[key].format(half=half) if key in HALVES else f"{CLAIM_NAMES[key]} ({half})"
    if _KEY.match(text):
        return text.replace("_", " ")
    return text


def _real(value) -> float:
    """``float(value)``; an integer beyond float64's range as the infinity of its sign (never an
    ``OverflowError``)."""
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def _missing(value) -> bool:
    if value is None:
        return True
    try:
        import pandas as pd

        out = pd.isna(value)
    except (TypeError, ValueError):
        return False
    return bool(out) if isinstance(out, (bool,)) or getattr(out, "shape", None) == () else False


def _decimals_given(value: float) -> int | None:
    """The fewest decimals (at most 4) that write ``value`` exactly, else None (unrounded)."""
    for d in range(5):
        if abs(round(value, d) - value) <= 1e-9 * max(1.0, abs(value)):
            return d
    return None


def column_formats(values) -> int | None:
    """The decimals a float column is shown with: None when every finite value is a whole
    number (shown as an integer), the most decimals any value was rounded to when the column
    was rounded (every value exact at 4 decimals or fewer), :data:`SHORTEST` when every value
    is a set value of at most two significant digits (a learning rate: 0.001, 0.00005), else
    three significant digits of the column's largest magnitude (at least three decimals below
    10) and two of its spread and of its smallest gap between two values (so that values that
    differ are shown differing), at most 10."""
    finite = [float(v) for v in values
              if isinstance(v, numbers.Real) and not isinstance(v, bool) and math.isfinite(_real(v))]
    if not finite or all(float(v).is_integer() and abs(v) < 1e15 for v in finite):
        return None
    top = max(abs(v) for v in finite)
    # the smallest gap between two values that is a difference, not float round-off (a gap
    # below a ten-billionth of the largest value)
    distinct = sorted(set(finite))
    gaps = [b - a for a, b in zip(distinct, distinct[1:]) if b - a > 1e-10 * max(1.0, top)]

    def apart(d: int) -> bool:   # every two values that differ read differing at d decimals
        return len({round(v, d) for v in distinct}) >= len(gaps) + 1

    given = [_decimals_given(v) for v in finite]
    # a column rounded by its chapter, unless its decimals would merge two of its values (the
    # test of "rounded" allows a billionth of the value: 1e9 + 0.5 passed as exact at 0 decimals)
    if all(g is not None for g in given) and apart(max(given)):
        return max(given)
    if all(float(f"{v:.2g}") == v for v in finite):   # set values (learning rates 1e-3, 5e-5)
        return SHORTEST
    decimals = max(0, 2 - math.floor(math.log10(top))) if top > 0 else 3
    if top < 10:   # a loss of 5.247 beside 5.251: three decimals below 10
        decimals = max(decimals, 3)
    spread = max(finite) - min(finite)
    if spread > 0:   # and two significant digits of the column's spread (losses 5.47 to 5.55)
        decimals = max(decimals, 1 - math.floor(math.log10(spread)))
    # and of the smallest gap between two of its values, so that no two distinct values read
    # as one (0.50001 beside 0.50004 in a column from 0 to 1)
    while decimals < 10 and not apart(decimals):
        decimals += 1
    return min(decimals, 10)


def _number(value: float, decimals: int | None) -> str:
    if math.isinf(value):
        return "∞" if value > 0 else "-∞"
    if abs(value) >= HUGE:   # three significant digits, never every digit of 1e300
        return f"{value:.3g}"
    if decimals == SHORTEST:
        import numpy as np

        return np.format_float_positional(value, trim="-")
    if decimals is None and float(value).is_integer() and abs(value) < 1e15:
        return f"{int(value):,}"
    decimals = 3 if decimals is None else decimals
    if value != 0 and abs(round(value, decimals) - value) > 1e-9 * max(1.0, abs(value)):
        # a cell the column's decimals would cut keeps two significant digits of its own
        # (a small p-value never reads 0); past 8 decimals in scientific notation (1.4e-08,
        # never 0.00000001, a third less than the value)
        need = 1 - math.floor(math.log10(abs(value)))
        if need > 8:
            return f"{value:.1e}"
        decimals = max(decimals, need)
    if abs(value) < 1e-8 and value != 0:
        return f"{value:.1e}"
    text = f"{value:,.{decimals}f}"
    return "0" if float(value) == 0 and decimals else text


def _huge_integer(value: int) -> str:
    """A whole number of magnitude :data:`HUGE` or more as :func:`_number` writes a float
    (three significant digits, scientific), one beyond float64's range too."""
    try:
        return f"{float(value):.3g}"
    except OverflowError:
        from decimal import Decimal

        mantissa, exponent = format(Decimal(value), ".2e").split("e")
        return f"{mantissa.rstrip('0').rstrip('.')}e{exponent}"


def _huge_kept_apart(values, texts) -> list[str]:
    """``texts`` with every number of magnitude :data:`HUGE` or more written with as many
    significant digits as it takes (from 3) for two distinct ones never to read as one
    (``1.2345e15`` and ``1.2346e15`` both read ``1.23e+15`` at three)."""
    huge = [i for i, v in enumerate(values) if isinstance(v, numbers.Real) and not isinstance(v, bool)
            and not _missing(v) and (isinstance(v, numbers.Integral) or math.isfinite(float(v))) and abs(v) >= HUGE]
    if len({values[i] for i in huge}) == len({texts[i] for i in huge}):
        return texts
    out = list(texts)

    def written(v, digits: int) -> str:   # an integer exactly (float64 would merge 2**62 and 2**62 + 1)
        if isinstance(v, numbers.Integral):
            from decimal import Decimal

            mantissa, exponent = format(Decimal(int(v)), f".{digits - 1}e").split("e")
            mantissa = mantissa.rstrip("0").rstrip(".") if "." in mantissa else mantissa
            return f"{mantissa}e{exponent[0]}{exponent[1:].zfill(2)}"
        return f"{float(v):.{digits}g}"

    # up to every digit the longest integer has (a float holds 17 significant digits at most)
    longest = max([17] + [len(str(abs(int(values[i])))) for i in huge if isinstance(values[i], numbers.Integral)])
    for digits in range(4, longest + 1):
        shown = {i: written(values[i], digits) for i in huge}
        if len(set(shown.values())) == len({values[i] for i in huge}):
            break
    for i in huge:
        out[i] = shown[i]
    return out


def cell_text(value, decimals: int | None = None) -> str:
    """One cell as it reads (see the module's docstring); ``decimals`` from
    :func:`column_formats` of its column."""
    if isinstance(value, (list, tuple)):
        return ", ".join(cell_text(v, column_formats([v])) for v in value)
    if isinstance(value, dict):
        return ", ".join(f"{label(k)}: {cell_text(v, column_formats([v]))}" for k, v in value.items())
    if _missing(value):
        return MISSING
    span = _time_span(value)   # before the numbers: NumPy counts a timedelta64 as an integer
    if span is not None:
        return span
    import numpy as np

    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if isinstance(value, numbers.Integral):
        return f"{int(value):,}" if abs(int(value)) < HUGE else _huge_integer(int(value))
    if isinstance(value, numbers.Real):
        return _number(float(value), decimals)
    if isinstance(value, str):
        return label(value)
    return str(value)


def _time_span(value) -> str | None:
    """A time span (``Timedelta``, ``timedelta``, ``timedelta64``) as its sign and its length,
    ``[N days ]H:MM:SS[.ffffff]``: pandas writes five seconds before as ``-1 days +23:59:55``."""
    import datetime

    import numpy as np

    if isinstance(value, np.timedelta64):
        import pandas as pd

        value = pd.Timedelta(value)
    if not isinstance(value, datetime.timedelta):
        return None
    sign = "-" if value < datetime.timedelta(0) else ""
    length = -value if sign else value
    days, rest = divmod(length, datetime.timedelta(days=1))
    micro, whole = rest.microseconds, rest.days * 86400 + rest.seconds
    text = f"{whole // 3600}:{whole % 3600 // 60:02d}:{whole % 60:02d}" + (f".{micro:06d}".rstrip("0") if micro else "")
    return sign + (f"{days:,} day{'s' if days != 1 else ''} " if days else "") + text


def _flat(name) -> str:
    """A header as it reads: a missing name (``None``, ``NaN``, ``NaT``) reads empty, never ``nan``."""
    if isinstance(name, tuple):
        parts = [label(p) for p in name if not _missing(p) and str(p) != ""]
        return ", ".join(dict.fromkeys(parts)) if parts else ""
    return "" if _missing(name) else label(name)


def _hidden(styler, key: str) -> set[int]:
    """The positions a Styler hides (``hidden_rows``, ``hidden_columns``: a list or an array)."""
    found = getattr(styler, key, None)
    return set() if found is None else {int(i) for i in found}


def _frame(obj):
    """The DataFrame a table shows: a Styler's data (its index dropped where it was hidden), a
    meaningful index made columns, a default one dropped."""
    import pandas as pd

    hide = False
    if not isinstance(obj, pd.DataFrame):
        if not hasattr(obj, "data") or not isinstance(obj.data, pd.DataFrame):
            raise TypeError(f"readable() takes a pandas DataFrame or Styler, not {type(obj).__name__}; "
                            "pass pd.DataFrame(rows).")
        styler = obj
        hide = bool(getattr(styler, "hide_index_", [False]) and all(styler.hide_index_))
        obj = styler.data
        rows, cols = _hidden(styler, "hidden_rows"), _hidden(styler, "hidden_columns")
        if rows or cols:   # what the chapter hid is not shown
            obj = obj.iloc[[i for i in range(len(obj)) if i not in rows],
                           [j for j in range(obj.shape[1]) if j not in cols]]
        levels = [k for k, h in enumerate(list(getattr(styler, "hide_index_", None) or [])) if h]
        if levels and not hide and obj.index.nlevels > 1:
            obj = obj.droplevel(levels)
    df = obj
    if hide:
        return df.reset_index(drop=True)
    index = df.index
    if index.nlevels > 1:   # an unnamed integer level of a grouped index is a row number too
        numbers_ = [i for i, n in enumerate(index.names)
                    if n is None and index.get_level_values(i).dtype.kind in "iu"]
        if numbers_ and len(numbers_) < index.nlevels:
            df = df.droplevel(numbers_)
            index = df.index
    # an unnamed integer index is a row number (0, 1, 2, or repeated after a concat)
    default = index.nlevels == 1 and index.name is None and index.dtype.kind in "iu"
    if default:
        return df.reset_index(drop=True)
    names = [n if n is not None else "" for n in index.names]
    if any(str(n) == "" for n in names) and index.nlevels == 1:
        names = [df.columns.name or ""]
    taken = {_flat(c) for c in df.columns}
    fresh = []
    for k, n in enumerate(names):
        n = n if str(n) != "" else ("" if k else " ")
        while _flat(n) in taken or n in fresh:
            n = f"{n} "
        fresh.append(n)
    df = df.copy()
    df.index = df.index.set_names(fresh) if index.nlevels > 1 else df.index.rename(fresh[0])
    if df.columns.nlevels > 1:
        df.columns = [_flat(c) for c in df.columns]
        df.index = df.index.set_names([str(n) for n in df.index.names])
    return df.reset_index()


def readable(obj, caption: str | None = None) -> str:
    """``obj`` (a DataFrame or a Styler) as the HTML table a reader sees (module docstring).
    Raises ``TypeError`` for anything else."""
    import pandas as pd

    df = _frame(obj)
    heads = [_flat(c) for c in df.columns]
    for same in {h for h in heads if heads.count(h) > 1}:   # two names that read alike ('p_decides' and
        at = [i for i, h in enumerate(heads) if h == same]   # 'deciding p') are shown as written
        raw = [", ".join(map(str, c)) if isinstance(c, tuple) else str(c) for c in (df.columns[i] for i in at)]
        if len(set(raw)) == len(raw):
            for i, r in zip(at, raw):
                heads[i] = r
    rows = []
    kinds = []
    for _, col in df.items():
        values = list(col)
        numeric = any(isinstance(v, numbers.Real) and not isinstance(v, bool) for v in values if not _missing(v))
        kinds.append("num" if numeric and pd.api.types.is_numeric_dtype(col.dtype) else "")
        texts = [cell_text(v, column_formats(values) if numeric else None) for v in values]
        rows.append(_huge_kept_apart(values, texts) if numeric else texts)
    # focusable, so that a table wider than the page scrolls by keyboard too (axe: scrollable-region-focusable)
    out = ['<div class="companion-table-wrap" tabindex="0" role="region" aria-label="table"><table class="companion-table table">']
    if caption:
        out.append(f"<caption>{html.escape(str(caption))}</caption>")
    num = ' class="num"'
    out.append("<thead><tr>" + "".join(
        f'<th scope="col"{num if k else ""}>{html.escape(h)}</th>' for h, k in zip(heads, kinds))
        + "</tr></thead><tbody>")
    for r in range(len(df)):
        out.append("<tr>" + "".join(
            f'<td{num if k else ""}>{html.escape(col[r])}</td>' for col, k in zip(rows, kinds)) + "</tr>")
    out.append("</tbody></table></div>")
    return "".join(out)


def register(shell=None) -> bool:
    """Make :func:`readable` the HTML form of every DataFrame and Styler in the IPython kernel
    ``shell`` (the running one by default); False where there is none (plain Python)."""
    if shell is None:
        try:
            from IPython import get_ipython
        except ImportError:
            return False
        shell = get_ipython()
    if shell is None:
        return False
    import pandas as pd

    def shown(obj):
        try:
            return readable(obj)
        except Exception:   # noqa: BLE001 - pandas' own table, which the reader checks count
            return None

    formatter = shell.display_formatter.formatters["text/html"]
    formatter.for_type(pd.DataFrame, shown)
    try:
        from pandas.io.formats.style import Styler   # needs jinja2
    except ImportError:
        return True
    formatter.for_type(Styler, shown)
    return True
