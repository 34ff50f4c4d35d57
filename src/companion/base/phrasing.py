"""How the book words numbers in sentences, in one place: intervals, lists, counts and the
first letter of a sentence.  Low in the layers (``base``) so that every part of the package
that writes a sentence, and every chapter, words an interval the same way.

>>> interval(-0.1, 0.3, n=3)
'95% t-interval -0.100 to +0.300, 3 seeds'
>>> interval(0.2, 0.4, n=1)
'one seed, no interval'
>>> interval(0.04, 0.5, estimate=0.27, fmt="+.2f")
'+0.27 [+0.04, +0.50]'
>>> joined(["a", "b", "c"])
'a, b and c'
"""

from __future__ import annotations

import math

__all__ = ["interval", "joined", "sentence_case", "seeds", "span", "listed", "numbers", "as_set", "finite",
           "exceeds", "side_by_side"]


def finite(*values) -> bool:
    """Whether every value is a number that is not NaN or infinite (None, text, a bool or an
    array: not; ``True`` is no 1.0).  The one guard of every sentence built from numbers:
    none is worded from a value that fails it."""
    for v in values:
        if v is None or isinstance(v, (str, bytes, bool)) or type(v).__name__ in ("bool_", "bool"):
            return False
        if getattr(v, "ndim", 0):   # an array of one value is no number
            return False
        try:
            if not math.isfinite(float(v)):
                return False
        except (TypeError, ValueError, OverflowError):
            return False
    return True


def exceeds(a, b) -> bool | None:
    """``a > b`` where both are numbers (:func:`finite`), else None: a comparison with a
    missing value is no comparison (``NaN > b`` is False, which a sentence would read as a
    direction).  The sentences that take such a flag say 'not read' for None.

    >>> exceeds(0.4, 0.3), exceeds(float("nan"), 0.3)
    (True, None)
    """
    return bool(float(a) > float(b)) if finite(a, b) else None


def side_by_side(values, mark, digits: int = 3) -> tuple[list[str], str]:
    """``values`` and the ``mark`` they are read against (a level, a threshold), each in
    ``digits`` significant digits or in the fewest more that keep every printed value on the
    same side of the printed mark as the value is of the mark: a p-value of 0.0025004 beside a
    level of 0.0025 reads ``0.0025004``, never ``0.0025``, which would read as a tie, and a
    level of 0.00227272... beside a p of 0.002272 reads ``0.002273`` (the p ``0.00227``), never
    both ``0.00227``.  A value equal to the mark reads as the printed mark.  A value that is not a
    number (:func:`finite`) reads ``missing``, as does a mark that is not one (the values then in
    ``digits`` digits).

    >>> side_by_side([0.0025004, 0.0031234, 0.0025], 0.0025)
    (['0.0025004', '0.00312', '0.0025'], '0.0025')
    >>> side_by_side([0.002272], 0.05 / 22)
    (['0.00227'], '0.002273')
    """
    values = list(values)
    digits = max(int(digits), 1)
    g = lambda v, n: f"{float(v) + 0.0:.{n}g}"
    if not finite(mark):
        return [g(v, digits) if finite(v) else "missing" for v in values], "missing"
    m = float(mark)
    near = [float(v) for v in values if finite(v) and float(v) != m]
    # the mark: digits enough that no value lies on it or beyond it once it is printed
    for n_mark in range(digits, 18):   # 17 significant digits tell any two doubles apart
        shown_mark = float(g(m, n_mark))
        if all(v != shown_mark and (v > shown_mark) == (v > m) for v in near):
            break
    out = []
    for v in values:
        if not finite(v):
            out.append("missing")
            continue
        v = float(v)
        for n in range(digits, 18):
            shown = float(g(v, n))
            if (shown > shown_mark) == (v > m) and (shown < shown_mark) == (v < m):
                break
        out.append(g(v, n))
    return out, g(m, n_mark)


def count(n, what: str = "seed count") -> int:
    """``n`` as a whole number >= 0, else ``ValueError`` in one line: ``int()`` would read 1.7
    seeds as '1 seed', ``True`` as 1, and NaN raises with no word of what it was."""
    whole = (not isinstance(n, (bool, str, bytes)) and type(n).__name__ not in ("bool_", "bool")
             and finite(n) and float(n) == int(float(n)) and float(n) >= 0)
    if not whole:
        raise ValueError(f"a {what} must be a whole number >= 0; got {str(n)[:20]!r}.")
    return int(float(n))


def _worded(v, fmt: str) -> str:
    """``v`` in ``fmt``; a negative value that rounds to zero is worded as zero (``+0.000``,
    never ``-0.000``: a bound of -1e-9 is no negative bound at three decimals)."""
    v = float(v)
    if math.copysign(1.0, v) < 0 and f"{-v:{fmt}}" == f"{0.0:{fmt}}":
        return f"{0.0:{fmt}}"
    return f"{v:{fmt}}"


def seeds(n: int) -> str:
    """``1 seed``, ``3 seeds`` (a count that is not a whole number >= 0: ``ValueError``)."""
    n = count(n)
    return f"{n} seed" + ("" if n == 1 else "s")


def interval(low: float, high: float, n: int | None = None, level: float = 0.95, fmt: str = "+.3f",
             kind: str = "t-interval", estimate: float | None = None, brackets: str = "[]") -> str:
    """An interval, worded the one way the book words it.

    In words: ``95% t-interval -0.100 to +0.300, 3 seeds`` over ``n`` seeds (the seed count
    left out when ``n`` is None); ``one seed, no interval`` when there is one seed or the
    bounds are not numbers; ``kind`` names the interval (``t-interval``, ``bootstrap
    interval``, ``interval``).  With an ``estimate``, compact, for tables and lists:
    ``+0.27 [+0.04, +0.50]`` (plus ``, 3 seeds`` when ``n`` is given); the level is then
    stated where the table or list says what its brackets hold.  ``brackets="()"`` writes the
    compact form as ``+0.27 (+0.04 to +0.50)``, for a sentence that already says what the
    parentheses hold.  An estimate that is not a number reads ``estimate missing``.  Bounds
    given the wrong way round (``low`` above ``high``) are refused in one line: every reading
    of them would be one the numbers never showed."""
    n = count(n) if n is not None else None
    if finite(low, high) and float(low) > float(high):
        raise ValueError(f"an interval's lower end {float(low)!r} is above its upper end {float(high)!r}; "
                         "pass (low, high) in that order.")
    if n is not None and n < 2 or not (math.isfinite(low) and math.isfinite(high)):
        return "one seed, no interval" if n is not None and n < 2 else "no interval"
    if estimate is not None and not math.isfinite(estimate):   # never '+nan [...]'
        return "estimate missing" + (f", {seeds(n)}" if n is not None else "")
    if estimate is not None and brackets == "()":
        text = f"{_worded(estimate, fmt)} ({_worded(low, fmt)} to {_worded(high, fmt)})"
    elif estimate is not None:
        text = f"{_worded(estimate, fmt)} [{_worded(low, fmt)}, {_worded(high, fmt)}]"
    else:
        text = f"{level:.0%} {kind} {_worded(low, fmt)} to {_worded(high, fmt)}"
    return text + (f", {seeds(n)}" if n is not None else "")


def joined(items, empty: str = "none") -> str:
    """``a``, ``a and b``, ``a, b and c``; ``empty`` for no items."""
    items = [str(i) for i in items]
    if not items:
        return empty
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def sentence_case(text: str) -> str:
    """The text with its first letter capitalised (the rest untouched: "Fig. 3a" stays)."""
    return text[:1].upper() + text[1:]


def span(values, fmt: str = ".2f", empty: str = "none") -> str:
    """The range of some values, lowest first: ``0.12 to 0.34`` (not an interval: no level,
    no estimate); values that are not finite numbers (NaN, infinite: :func:`finite`) are left
    out, as pandas' min and max leave NaN; ``empty`` when there are none."""
    values = [float(v) for v in values if finite(v)]
    if not values:
        return empty
    return f"{_worded(min(values), fmt)} to {_worded(max(values), fmt)}"


def listed(items, empty: str = "none") -> str:
    """``a, b, c``: items separated by commas only (a list read as a list, not a clause);
    ``empty`` for no items."""
    return ", ".join(str(i) for i in items) or empty


def numbers(values, fmt: str = ".3f", empty: str = "none") -> str:
    """``0.120, 0.340``: numbers in one format, separated by commas; a value that is not a
    number (:func:`finite`) reads ``missing``, never ``nan``."""
    return listed((_worded(v, fmt) if finite(v) else "missing" for v in values), empty)


def as_set(value, decimals: int = 3, sign: bool = False) -> str:
    """A number a rule sets (a threshold, a yardstick), worded with every digit it was set with:
    at least ``decimals`` decimals, more where the value has them, so a sentence never quotes a
    threshold the rules do not set (a floor of 0.6931 nats read '0.69', a guard of 0.125 '0.12').
    ``sign``: a leading ``+`` on a value that is not negative.  A value of magnitude 1e15 or
    more is written in scientific notation with its shortest exact digits (``1e+300``).

    >>> as_set(0.6931), as_set(0.1), as_set(0.125, 2, sign=True), as_set(0.0071884)
    ('0.6931', '0.100', '+0.125', '0.0071884')
    """
    if not finite(value):   # never 'nan' or 'inf' quoted as a threshold
        return "not set"
    v = float(value) + 0.0   # -0.0 + 0.0 is 0.0: never '-0.000'
    if abs(v) >= 1e15:   # every digit it was set with, in scientific notation (1e+300, not 301 digits)
        import numpy as np

        out = np.format_float_scientific(v, trim="-")
        return ("+" + out) if sign and v >= 0 else out
    text = repr(v)
    if "e" in text or "E" in text:
        import numpy as np

        text = np.format_float_positional(v, trim="-")
    whole, _, frac = text.partition(".")
    frac = frac.rstrip("0").ljust(decimals, "0")
    out = f"{whole}.{frac}" if frac else whole
    return ("+" + out) if sign and v >= 0 and not out.startswith("-") else out
