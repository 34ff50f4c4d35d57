"""Paired values over seeds and their Student-t interval: the estimate every empirical verdict
reads (:func:`paired_t`, :func:`one_sample_t`, :class:`Estimate`), the checks that a list holds
one real number per seed (:func:`seed_values`), and the rounding by which interval ends and
yardsticks are compared (:func:`rounded`).  The outcomes read from an estimate, the p-values and
Holm's adjustment are :mod:`companion.rules.statistics`'s."""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import numpy as np

from ..base.phrasing import finite

__all__ = ["Estimate", "is_number", "is_positive_number", "seed_values", "one_sample_t", "paired_t",
           "seeds_without_a_number", "DIGITS", "rounded", "mean_sd"]

#: interval ends and yardsticks are compared after rounding to this many significant digits
#: (histories keep six), so that a bound equal to the yardstick is equal, whatever the last bit
DIGITS = 10


def rounded(x: float) -> float:
    """``x`` rounded to :data:`DIGITS` significant digits, as interval ends and yardsticks are compared
    (so that a bound equal to its yardstick is equal, whatever the last bit)."""
    return float(f"{x:.{DIGITS}g}")


@dataclass(frozen=True)
class Estimate:
    """A mean over seeds with its two-sided Student-t interval at ``level``."""

    values: tuple
    mean: float
    sd: float
    low: float
    high: float
    level: float

    @property
    def n(self) -> int:
        return len(self.values)

    @property
    def se(self) -> float:
        return self.sd / math.sqrt(self.n) if self.n > 1 else float("nan")

    def text(self, fmt: str = "+.3f") -> str:
        """``+0.012 (95% t-interval -0.03 to +0.05, 3 seeds)``; one seed: ``one seed, no interval`` (:func:`companion.base.phrasing.interval`)."""
        from ..base.phrasing import interval

        return f"{self.mean:{fmt}} ({interval(self.low, self.high, n=self.n, level=self.level, fmt=fmt)})"



# ------------------------------------------------------------------- input checks


def is_number(x) -> bool:
    """A finite real number (a numpy scalar included: ``np.float32(0.05)`` is a yardstick), never
    a bool (``True`` is no yardstick, threshold or level) nor text."""
    return isinstance(x, numbers.Real) and not isinstance(x, (bool, np.bool_)) and finite(x)   # (10**400: no)


def is_positive_number(x) -> bool:
    return is_number(x) and x > 0


def _check_level(level) -> None:
    if not (is_number(level) and 0 < level < 1):
        raise ValueError(f"level must lie in (0, 1); got {level!r}.")


def _check_flat(raw: np.ndarray) -> None:
    if raw.ndim > 1:   # a table is not one value per seed: flattening it would count its cells as seeds
        raise ValueError(f"need one value per seed (a flat list); got a table of shape {raw.shape}.")


def _is_missing(x) -> bool:
    """None or pandas' missing value (``pd.NA``): a seed without a number, read as NaN."""
    if x is None:
        return True
    try:
        import pandas as pd

        return x is pd.NA
    except ImportError:   # pragma: no cover
        return False


def seed_values(values, which: str = "") -> np.ndarray:
    """``values`` (one per seed: a list, tuple, array, Series or any iterable of them) as a flat
    float array; None and ``pd.NA`` are a seed without a number (NaN).  Refused in one line: a
    table (a value per cell is no value per seed), text or a bool (``np.True_`` included:
    ``True`` read as 1.0 is no seed's value), a complex number or anything else that is no
    real number, and one value given alone instead of a list."""
    import decimal

    where = f" in the {which} values" if which else ""
    if hasattr(values, "to_numpy") and not isinstance(values, np.ndarray):   # a Series or pandas array
        values = values.to_numpy()   # (a nullable one's missing values as pd.NA, read below)
    if isinstance(values, np.ndarray):
        _check_flat(values)
        if values.dtype.kind in "fiu":
            return values.astype(float).ravel()
        if values.dtype.kind not in "bOUS":   # datetimes, durations, complex: no seed's value
            raise ValueError(f"need one real number per seed{where}; got an array of {values.dtype}.")
        items = values.tolist()
    elif isinstance(values, (str, bytes, dict, numbers.Number)) or values is None or not hasattr(values, "__iter__"):
        raise ValueError(f"need one number per seed (a list of them){where}; got {str(values)[:80]!r}.")
    else:
        items = list(values)
    out = []
    for x in items:
        if isinstance(x, np.ndarray) and x.ndim == 0:
            x = x[()]   # np.asarray(0.12) is one value, as np.float64(0.12) is (it was read as a table)
        if _is_missing(x):
            out.append(float("nan"))
        elif isinstance(x, (bool, np.bool_, str, bytes)):
            raise ValueError(f"need one number per seed{where}; got {str(items)[:80]} (a bool or text is no "
                             "seed's value).")
        elif isinstance(x, (numbers.Real, decimal.Decimal)):
            out.append(float(x))
        elif isinstance(x, (list, tuple, np.ndarray)):
            shape = np.shape(np.asarray(items, dtype=object)) if not isinstance(x, np.ndarray) else (len(items), *x.shape)
            raise ValueError(f"need one value per seed (a flat list){where}; got a table of shape {shape}.")
        else:
            raise ValueError(f"need one real number per seed{where}; got {str(x)[:40]!r} (a {type(x).__name__}), "
                             "which is no seed's value.")
    return np.asarray(out, dtype=float)


def _by_seed(values, which: str):
    """``values`` as a float Series; a seed label written twice is refused, naming it (pandas
    would pair every copy in one arm with every copy in the other: more rows than seeds, and a
    narrower interval from no new run)."""
    import pandas as pd

    if isinstance(values, pd.Series):
        x = pd.Series(seed_values(values, which), index=values.index, dtype=float)
    else:
        x = pd.Series(seed_values(values, which), dtype=float)
    if x.index.hasnans:   # a blank seed cell: two runs of unknown seed were paired with each other
        raise ValueError(f"a seed label is missing (NaN) in the {which} values (seeds {list(x.index)[:6]}); name "
                         "each run's seed: a run without one cannot be paired with its other arm.")
    twice = x.index[x.index.duplicated()]
    if len(twice):
        raise ValueError(f"seed {twice[0]!r} is written twice in the {which} values; each seed is one run and "
                         "pairs once: drop the copy, or give the run its own seed.")
    return x


# ------------------------------------------------------------------- estimates


def mean_sd(v: np.ndarray) -> tuple[float, float]:
    """The mean and standard deviation (``ddof=1``; NaN for one value) of finite values, computed
    again on the values scaled by a power of two where the plain sums overflow: three values near
    1e308 had a mean of inf (and a look read them as identical).  Scaling by a power of two is
    exact, so values whose sums do not overflow get numpy's numbers, bit for bit."""
    v = np.asarray(v, dtype=float)
    with np.errstate(over="ignore", invalid="ignore"):
        mean = float(v.mean())
        sd = float(v.std(ddof=1)) if v.size > 1 else float("nan")
        if v.size and not (math.isfinite(mean) and (v.size < 2 or math.isfinite(sd))):
            e = math.frexp(float(np.abs(v).max()))[1]
            w = np.ldexp(v, -e)
            mean = float(np.ldexp(w.mean(), e))
            sd = float(np.ldexp(w.std(ddof=1), e)) if v.size > 1 else float("nan")
    return mean, sd


def one_sample_t(values, level: float = 0.95) -> Estimate:
    """Mean of ``values`` (one per seed) with its two-sided Student-t interval."""
    from scipy import stats

    _check_level(level)
    v = seed_values(values)
    if v.size == 0 or not np.isfinite(v).all():
        raise ValueError(f"need at least one finite value per seed; got {str(v.tolist())[:80]}.")
    mean, sd = mean_sd(v)
    if v.size < 2:
        return Estimate(tuple(v.tolist()), mean, float("nan"), float("nan"), float("nan"), level)
    half = float(stats.t.ppf(0.5 + level / 2, v.size - 1)) * sd / math.sqrt(v.size)
    return Estimate(tuple(v.tolist()), mean, sd, mean - half, mean + half, level)


def paired_t(candidate, comparator, level: float = 0.95) -> Estimate:
    """Mean of the per-seed differences ``candidate - comparator`` and its t-interval.

    Both are pandas Series indexed by seed (or equal-length sequences in seed order); only
    seeds present in both with a finite value in both count (:func:`seeds_without_a_number`
    names the others).  A seed written twice in either is refused.
    """
    import pandas as pd

    a, b = _by_seed(candidate, "candidate"), _by_seed(comparator, "comparator")
    if not (isinstance(candidate, pd.Series) and isinstance(comparator, pd.Series)) and len(a) != len(b):
        raise ValueError(f"paired values need one of each per seed; got {len(a)} and {len(b)}.")
    # a Series by seed beside a plain sequence (whose labels are its positions 0, 1, ...) would pair
    # seed 1 with the second value, whichever seed that was: only a Series labelled 0..n-1 may
    for x, raw, which in ((a, candidate, "candidate"), (b, comparator, "comparator")):
        other = comparator if raw is candidate else candidate
        if (isinstance(raw, pd.Series) and not isinstance(other, pd.Series)
                and not x.index.equals(pd.RangeIndex(len(x)))):
            raise ValueError(f"the {which} values are a Series indexed by seed ({list(x.index)[:6]}) and the "
                             "other arm a plain sequence, which has no seeds to pair by: give both as Series "
                             "indexed by seed, or both as sequences in seed order.")
    if len(a) and len(b) and not len(a.index.intersection(b.index)):
        # e.g. seeds read as numbers in one arm and as text in the other: nothing pairs, and the
        # refusal below ('no finite value') would name the wrong cause
        raise ValueError(f"the two arms share no seed: candidate seeds {list(a.index)[:6]}, comparator seeds "
                         f"{list(b.index)[:6]}; label both arms by the same seeds (the same type, e.g. 20, not '20').")
    diff = a - b   # on the seeds of either arm; a seed in one arm only is NaN here
    # a seed without a finite number in either arm is dropped, NaN and +-inf alike: exactly the
    # seeds seeds_without_a_number names (an infinity, a diverged run, raised 'need at least one
    # finite value' where a NaN read 'not testable here', naming the seed, in the rule's gate)
    keep = np.isfinite(a.reindex(diff.index)) & np.isfinite(b.reindex(diff.index))
    return one_sample_t(diff[keep].to_numpy(), level)


def seeds_without_a_number(candidate, comparator) -> list:
    """The seeds :func:`paired_t` would pair (present in both Series) whose value is not a finite
    number in either: the paired t drops them, so a rule that reads one must not decide on the
    seeds left (rules v2.3)."""
    a, b = _by_seed(candidate, "candidate"), _by_seed(comparator, "comparator")
    both = a.index.intersection(b.index)
    return sorted(s for s in both if not (math.isfinite(a[s]) and math.isfinite(b[s])))
