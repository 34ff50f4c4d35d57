"""The statistics behind the empirical verdicts: paired t, outcomes, power, Holm.

Every empirical claim of Saponati et al. (ICML 2025) that the book judges (Figs. 3a, 3b,
S5b, Table 1, Sec. 3's contrast, the premises of Thms. S1.12/S1.14 and Cor. S1.13, the
update-level mechanism and the objective swap) is decided by a rule written in
``data/verdict_rules.yaml`` (version 2) before the evidence it judges, through the
functions here (the file itself is read by :mod:`companion.rules.verdicts`):

:func:`paired_t`
    the mean of per-seed differences with a two-sided Student-t interval over seeds (the
    seed is the independent unit: a pair of runs with one seed shares its initial draw and
    its data order, so the difference removes both);
:func:`directional_outcome`
    one of six outcomes that partition every interval (``holds``, ``holds, size open``,
    ``negligible``, ``refuted``, ``inconclusive``, ``not testable here``), so that no two
    can hold at once;
:func:`threshold_outcome`, :func:`equivalence_outcome`
    the outcomes of a claim about a level (a premise's threshold) and of a claim of
    equality (Cor. S1.13);
:func:`deciding_p`
    the one-sided p-value of the test that decided an outcome, the one Holm adjusts;
:func:`holm`
    Holm's step-down adjustment over the family of empirical verdicts;
:func:`median_interval`
    a distribution-free interval for a median over seeds with its exact coverage.

The power of the test actually applied, at the seeds it has, is computed by
:mod:`companion.rules.power` (:func:`~companion.rules.power.directional_power` and its kin),
which builds on the checks here: :func:`check_seed_count`, :func:`check_real` and the bound
:data:`MAX_POWER_DRAWS`.

Version 1's outcome rule is kept as :func:`directional_outcome_first` (the page shows each
claim's v1 outcome beside v2's).  ``tests/test_verdicts.py`` drives every rule with
synthetic seeds and shows each outcome occurs and that no two can hold at once.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from .estimates import (DIGITS, Estimate, _by_seed, _check_flat, _check_level, _is_missing, is_number,  # noqa: F401
                        is_positive_number, one_sample_t, paired_t, rounded, seed_values, seeds_without_a_number)

__all__ = ["OUTCOMES", "OUTCOMES_FIRST", "DECIDED", "Estimate", "paired_t", "one_sample_t", "directional_outcome",
           "directional_outcome_first", "outcome_conditions", "interval_outcome", "threshold_outcome", "equivalence_outcome", "deciding_p",
           "p_above", "p_below", "holm", "median_interval", "seeds_without_a_number", "is_number", "is_positive_number",
           "seed_values", "check_seed_count", "check_real", "MAX_POWER_DRAWS", "DIGITS", "rounded", "power_spread"]

#: the outcomes of an empirical verdict under rules v2 (they partition every interval)
OUTCOMES = ("holds", "holds, size open", "negligible", "refuted", "inconclusive", "not testable here")
#: version 1's outcomes (``holds`` and ``refuted`` could both be true; v1 settled it by order)
OUTCOMES_FIRST = ("holds", "refuted", "inconclusive", "not testable here")
#: outcomes that decide something, so that they enter the family's correction
DECIDED = ("holds", "holds, size open", "negligible", "refuted")

#: a spread of the paired differences at most this share of max(1, |mean|) is no spread:
#: identical seeds (duplicated runs, a seed not varied), never infinite certainty
SPREAD_FLOOR = 1e-9



# ------------------------------------------------------------------- outcomes


def outcome_conditions(low: float, high: float, sesoi: float) -> dict:
    """Each decided outcome of a directional claim as a condition on the interval
    ``[low, high]`` (smallest effect of interest ``sesoi`` > 0).  They partition the
    half-plane ``low <= high``: exactly one is true for every interval, which
    ``tests/test_verdicts.py`` checks over a grid and with random intervals."""
    return {"holds": low >= sesoi,
            "holds, size open": 0 < low < sesoi <= high,
            "negligible": 0 < low and high < sesoi,
            "refuted": low <= 0 and high < sesoi,
            "inconclusive": low <= 0 and sesoi <= high}


def _check_min_seeds(min_seeds) -> None:
    if not _whole(min_seeds):
        raise ValueError(f"min_seeds must be a whole number of seeds (e.g. 3); got {min_seeds!r}.")


def _whole(n) -> bool:
    """A whole number (``4``, ``np.int64(4)``, ``4.0``), never a bool or text."""
    return is_number(n) and float(n).is_integer()


def directional_outcome(est: Estimate, sesoi: float, min_seeds: int = 3, gate: bool = True) -> str:
    """The claim says the true mean difference is > 0 (rules v2).

    ``not testable here`` when fewer than ``min_seeds`` seeds or the gate fails; otherwise
    the one outcome of :func:`outcome_conditions` that the interval meets: ``holds``
    (``low >= sesoi``), ``holds, size open`` (``0 < low < sesoi <= high``), ``negligible``
    (``0 < low``, ``high < sesoi``), ``refuted`` (``low <= 0``, ``high < sesoi``; reversed
    when ``high < 0``) or ``inconclusive`` (``low <= 0 <``, ``sesoi <= high``).
    """
    if not is_positive_number(sesoi):
        raise ValueError(f"the smallest effect of interest must be a positive number; got {sesoi!r}. "
                         "A yardstick of 0 lets no precise null refute a claim (rules v2).")
    if not isinstance(gate, (bool, np.bool_)):   # read_sequential's gate is text ('' passes): not this one
        raise ValueError(f"gate must be True (the gate passes) or False; got {gate!r}.")
    _check_min_seeds(min_seeds)
    if est.n < max(min_seeds, 2) or not gate:
        return "not testable here"
    # the edge cases as every path reads them (companion.rules.sequential): a non-finite interval
    # or no seed-to-seed spread is no evidence of a size, and interval ends and the yardstick
    # are compared after rounding to DIGITS significant digits (a low end equal to d holds)
    if not (math.isfinite(est.low) and math.isfinite(est.high) and math.isfinite(est.sd)):
        return "not testable here"
    if est.sd <= SPREAD_FLOOR * max(1.0, abs(est.mean)):
        return "not testable here"
    return interval_outcome(est.low, est.high, sesoi)


def interval_outcome(low: float, high: float, sesoi: float) -> str:
    """The one outcome of :func:`outcome_conditions` that a finite interval ``[low, high]``
    meets, its ends and the yardstick compared after rounding to
    :data:`DIGITS` significant digits (a low end equal to ``sesoi``
    holds).  Every directional claim is read by this function, at a look or once."""
    if not (math.isfinite(low) and math.isfinite(high) and low <= high):
        raise ValueError(f"[{low}, {high}] is not an interval (finite ends, low <= high); read the estimate again.")
    if not is_positive_number(sesoi):
        raise ValueError(f"the smallest effect of interest must be a positive number; got {sesoi!r}.")
    hits = [k for k, v in outcome_conditions(rounded(low), rounded(high), rounded(sesoi)).items() if v]
    if len(hits) != 1:  # unreachable for a finite interval: the conditions partition it
        raise ValueError(f"the interval [{low}, {high}] meets {len(hits)} outcomes.")
    return hits[0]


def directional_outcome_first(est: Estimate, sesoi: float = 0.0, min_seeds: int = 3, gate: bool = True) -> str:
    """Version 1's rule, kept to show each claim's v1 outcome beside v2's: ``holds`` when
    the lower end is above 0, else ``refuted`` when the upper end is below ``sesoi``, else
    ``inconclusive``.  Its first two outcomes overlap (``0 < low <= high < sesoi``) and
    the order of the tests decided; v2 replaced it."""
    if est.n < max(min_seeds, 2) or not gate:
        return "not testable here"
    if est.low > 0:
        return "holds"
    if est.high < sesoi:
        return "refuted"
    return "inconclusive"


def _no_evidence(est: Estimate) -> bool:
    """A non-finite interval or no seed-to-seed spread (:data:`SPREAD_FLOOR`): no evidence of
    where the mean lies, on any path."""
    if not (math.isfinite(est.low) and math.isfinite(est.high) and math.isfinite(est.sd)):
        return True
    return est.sd <= SPREAD_FLOOR * max(1.0, abs(est.mean))


def power_spread(est: Estimate) -> float:
    """The seed-to-seed spread a power is computed at: ``est.sd``, or NaN where the estimate is no
    evidence (:func:`_no_evidence`: no spread, a non-finite interval), so that the power beside a
    'not testable here' for no spread reads 'none' as the outcome does, not a power of seeds that
    vary in their last bit only."""
    return float("nan") if _no_evidence(est) else float(est.sd)


def threshold_outcome(est: Estimate, threshold: float, min_seeds: int = 3) -> str:
    """The claim (a premise) says the true mean is above ``threshold``: ``holds`` when the
    interval lies above it, ``refuted`` when it lies below, else ``inconclusive``; ``not
    testable here`` with fewer than ``min_seeds`` seeds, a non-finite interval or no
    seed-to-seed spread (as every directional claim reads it, :func:`directional_outcome`: a
    decided outcome on no spread has no p-value, and Holm withdrew it).  A threshold that is
    not a finite number is refused (NaN read 'inconclusive', an infinity 'refuted')."""
    if not is_number(threshold):
        raise ValueError(f"the threshold of a level claim must be a finite number; got {threshold!r}.")
    _check_min_seeds(min_seeds)
    if est.n < max(min_seeds, 2) or _no_evidence(est):
        return "not testable here"
    # compared after rounding to DIGITS significant digits, as every directional claim is: a bound
    # equal to the threshold up to its last bits is equal (0.1 + 0.2 is not above 0.3)
    low, high, t = rounded(est.low), rounded(est.high), rounded(threshold)
    if low > t:
        return "holds"
    if high < t:
        return "refuted"
    return "inconclusive"


def equivalence_outcome(est: Estimate, band: float, min_seeds: int = 3) -> str:
    """The claim says the true mean is 0: ``holds`` when the interval lies inside
    ``(-band, band)``, ``refuted`` when it lies wholly outside ``[-band, band]``,
    ``inconclusive`` otherwise; ``not testable here`` as :func:`threshold_outcome` says."""
    if not is_positive_number(band):   # an infinite band 'holds' for every interval, NaN never decides
        raise ValueError(f"the equivalence band must be a finite number > 0; got {band!r}.")
    _check_min_seeds(min_seeds)
    if est.n < max(min_seeds, 2) or _no_evidence(est):
        return "not testable here"
    low, high, band = rounded(est.low), rounded(est.high), rounded(band)   # as threshold_outcome compares
    if -band < low and high < band:
        return "holds"
    if low > band or high < -band:
        return "refuted"
    return "inconclusive"


def deciding_p(est: Estimate, outcome: str, sesoi: float | None = None, *, threshold: float | None = None,
               band: float | None = None) -> float:
    """The one-sided p-value of the test that decided ``outcome`` (the family's member):
    directional claims (``sesoi``): holds, p of 'effect > sesoi'; holds, size open, p of
    'effect > 0'; negligible, the larger of p('effect > 0') and p('effect < sesoi') (both
    must hold: an intersection-union test); refuted, p of 'effect < sesoi'.  Level claims
    (``threshold``): holds, p of 'mean > t'; refuted, p of 'mean < t'.  Equality claims
    (``band``): holds, the larger of the two one-sided tests of the band (TOST); refuted,
    p of the side the interval lies on.  NaN for an undecided outcome.  An outcome that is none of
    :data:`OUTCOMES` (a typo read NaN, silently withdrawn from the family) and a directional
    outcome asked without its yardstick are refused."""
    base = outcome.split(" (")[0] if isinstance(outcome, str) else outcome
    if base not in OUTCOMES:
        raise ValueError(f"{outcome!r} is not an outcome; give one of {', '.join(OUTCOMES)} (a suffix such as "
                         "' (reported beside)' is read off).")
    if band is not None and not is_positive_number(band):   # as equivalence_outcome: a band of -0.1 swapped its tests
        raise ValueError(f"the equivalence band must be a finite number > 0; got {band!r}.")
    if threshold is not None and not is_number(threshold):   # as threshold_outcome
        raise ValueError(f"the threshold of a level claim must be a finite number; got {threshold!r}.")
    if band is None and threshold is None and base in DECIDED and not is_positive_number(sesoi):
        raise ValueError(f"the deciding p-value of a directional claim needs its yardstick sesoi, a positive "
                         f"number (or threshold= for a level claim, band= for an equality claim); got {sesoi!r}.")
    if band is not None:
        if base == "holds":
            return max(p_above(est, -band), p_below(est, band))
        if base == "refuted":
            return p_above(est, band) if est.mean > 0 else p_below(est, -band)
        return float("nan")
    if threshold is not None:
        return {"holds": p_above(est, threshold), "refuted": p_below(est, threshold)}.get(base, float("nan"))
    if base == "holds":
        return p_above(est, sesoi)
    if base == "holds, size open":
        return p_above(est, 0.0)
    if base == "negligible":
        return max(p_above(est, 0.0), p_below(est, sesoi))
    if base == "refuted":
        return p_below(est, sesoi)
    return float("nan")


# ------------------------------------------------------------------- checks of the power solvers and the looks
# (companion.rules.power and companion.rules.sequential build on them)


def check_seed_count(n) -> int:
    """``n`` seeds as an int: a whole number >= 0 (``np.int64(4)`` and ``4.0`` are 4), never a
    bool, text or half a seed (2.5 seeds solved silently at 1.5 degrees of freedom)."""
    if not (_whole(n) and n >= 0):
        raise ValueError(f"the number of seeds must be a whole number (e.g. 3); got {n!r}.")
    return int(n)


def check_real(x, what: str) -> float:
    """``x`` as a float where it is a real number (NaN and infinities included: the callers read
    them as 'no power'), else a one-line refusal naming ``what`` (text, a bool, None, a list)."""
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, numbers.Real):
        raise ValueError(f"{what} must be a number; got {str(x)[:40]!r}.")
    return float(x)


#: the most Monte Carlo draws a power takes (the bound a rules file's framework.power.draws is
#: held to, companion.rules.verdicts.MAX_POWER_DRAWS)
MAX_POWER_DRAWS = 10_000_000


def _solve_rising(f, lo: float, step: float, what: str) -> float:
    """The root of an increasing ``f`` above ``lo`` (``f(lo) < 0``), its upper bracket doubled
    until ``f`` turns positive; refused in one line when it never does in floating point
    (a level so close to 1 that no effect reaches the target at these seeds)."""
    import warnings

    from scipy import optimize

    from ..base.errors import CompanionError

    hi = lo + step
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for _ in range(48):
            v = f(hi)
            if not math.isfinite(v):
                break
            if v > 0:
                return float(optimize.brentq(f, lo, hi))
            lo, hi = hi, hi + 2 * (hi - lo)
    raise CompanionError(f"{what} cannot be computed: at this level and number of seeds the test's critical value "
                         "is beyond what the non-central t can be evaluated at. Use a level further from 1 or more seeds.")


# ------------------------------------------------------------------- p-values and multiplicity


def p_above(est: Estimate, value: float = 0.0) -> float:
    """One-sided p-value of 'true mean > value' (t-test with ``n - 1`` degrees of freedom)."""
    from scipy import stats

    if est.n < 2 or not est.sd > 0:
        return float("nan")
    return float(stats.t.sf((est.mean - value) / est.se, est.n - 1))


def p_below(est: Estimate, value: float = 0.0) -> float:
    """One-sided p-value of 'true mean < value'."""
    from scipy import stats

    if est.n < 2 or not est.sd > 0:
        return float("nan")
    return float(stats.t.cdf((est.mean - value) / est.se, est.n - 1))


def holm(pvalues) -> np.ndarray:
    """Holm's step-down adjusted p-values (family-wise error rate) over the family of the
    registered tests: every entry is a member, so the family's size ``m`` is the number of
    entries.  A NaN entry (a member with no p-value: not testable here) still counts in
    ``m`` and ranks last, as a p-value of 1 would (a conservative Holm: a test registered
    and not made cannot shrink the family), and its own adjusted value stays NaN.  Version
    2 of the rules (``data/rules_history/verdict_rules_v2.yaml``, ``family``) makes the
    primary test of every empirical claim one member."""
    refuse = ValueError(f"Holm's adjustment needs a list of p-values between 0 and 1; got {str(pvalues)[:80]}.")
    try:   # None and pd.NA: a member with no p-value (NaN); a bool (np.True_ too) or text is none
        p = seed_values(pvalues)
    except ValueError:
        raise refuse from None
    if ((p < 0) | (p > 1)).any():
        raise refuse
    out = np.full(p.shape, np.nan)
    m = p.size
    order = np.argsort(np.where(np.isfinite(p), p, 1.0), kind="stable")
    running = 0.0
    for rank, i in enumerate(order):
        if not math.isfinite(p[i]):
            continue            # ranked as 1 (last): counted in m, adjusted value NaN
        running = max(running, min(1.0, (m - rank) * p[i]))
        out[i] = running
    return out


def median_interval(values, level: float = 0.95, nan_as: str | None = None) -> dict:
    """A distribution-free interval for the median of the seeds' distribution.

    The interval between the k-th smallest and the k-th largest of ``n`` values covers
    the median with probability ``1 - 2 P(Binomial(n, 1/2) < k)``, whatever the
    distribution.  The largest ``k`` whose coverage is at least ``level`` is used; when
    even ``k = 1`` (min to max) falls short, that is used and its coverage stated (with 3
    seeds: 0.75).  A NaN value (a seed with no number: a diverged run, a target never
    reached) is refused unless the caller says where it ranks, for only the caller knows
    the quantity's direction: ``nan_as="low"`` censors it below every observed value (as
    ``-inf``: a speed-up never reached), ``nan_as="high"`` above (as ``+inf``: a loss that
    diverged).  Returns ``median``, ``low``, ``high``, ``coverage``, ``n``.
    """
    from scipy import stats

    if nan_as not in (None, "low", "high"):
        raise ValueError(f"nan_as must be 'low' or 'high' (where a seed with no number ranks); got {nan_as!r}.")
    _check_level(level)
    raw = seed_values(values)
    n_nan = int(np.isnan(raw).sum())
    if n_nan and nan_as is None:
        raise ValueError(f"{n_nan} of {raw.size} values are NaN (a seed with no number); say where they rank with "
                         "nan_as='low' (worse than every value, e.g. a speed-up never reached) or nan_as='high', "
                         "or drop them first.")
    v = np.sort(np.where(np.isnan(raw), -np.inf if nan_as == "low" else np.inf, raw))
    n = v.size
    if n == 0:
        raise ValueError("no values given.")
    best = 1
    for k in range(1, (n + 1) // 2 + 1):
        if 1 - 2 * stats.binom.cdf(k - 1, n, 0.5) >= level:
            best = k
    coverage = float(1 - 2 * stats.binom.cdf(best - 1, n, 0.5))
    # the midpoint of the two middle values, numpy's (a + b) / 2, or a/2 + b/2 (exact halves) where
    # their sum overflows: np.median of two values near 1e308 was inf
    a, b = float(v[(n - 1) // 2]), float(v[n // 2])
    with np.errstate(over="ignore", invalid="ignore"):
        median = (a + b) / 2 if math.isfinite(a + b) or not (math.isfinite(a) and math.isfinite(b)) else a / 2 + b / 2
    return {"median": median, "low": float(v[best - 1]), "high": float(v[n - best]),
            "coverage": coverage, "n": int(n)}


#: the power solvers, which lived here until they moved to :mod:`companion.rules.power`: their
#: old names still work for one release, with a DeprecationWarning naming the new place
_MOVED_TO_POWER = frozenset(["directional_power", "threshold_power", "equivalence_power", "detectable_effect",
                             "check_power_draws"])


def __getattr__(name: str):
    if name in _MOVED_TO_POWER:
        import warnings
        from importlib import import_module

        from .. import REMOVED_IN

        # read when asked for, by name: power.py builds on this module, which imports nothing from it
        power = import_module(f"{__package__}.power")
        warnings.warn(f"companion.rules.statistics.{name} moved to companion.rules.power.{name}; import it from "
                      f"there (the old name goes in release {REMOVED_IN})", DeprecationWarning, stacklevel=2)
        return getattr(power, name)
    raise AttributeError(f"module 'companion.rules.statistics' has no attribute {name!r}")
