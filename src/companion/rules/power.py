"""The power of the tests that decide the empirical verdicts, at the seeds they have.

The tests themselves (the paired t, the outcomes, the deciding p-values) are in
:mod:`companion.rules.statistics`; the solvers here read how often each would decide:

:func:`directional_power`
    the power of the directional test actually applied (rules v2): the probability of
    ``refuted`` at no effect, of ``holds`` at the yardstick, and the effect that ``holds``
    reaches with a target probability;
:func:`threshold_power`, :func:`equivalence_power`
    the same for a claim about a level (a premise's threshold) and a claim of equality;
:func:`detectable_effect`
    the true difference the test 'interval above 0' detects with a given probability
    (non-central t, checked by :mod:`companion.rules.t_power`).

Monte Carlo draws are over the exact law of the mean and the standard deviation with a fixed
seed; :func:`check_power_draws` holds their number to what memory allows.
"""

from __future__ import annotations

import math

import numpy as np

from ..base.phrasing import finite
from .statistics import (MAX_POWER_DRAWS, _check_level, _solve_rising, check_real, check_seed_count,
                         is_number)

__all__ = ["directional_power", "threshold_power", "equivalence_power", "detectable_effect", "check_power_draws"]


def _draw_intervals(delta: float, sd: float, n: int, level: float, draws: int, seed: int):
    """``draws`` intervals of the paired t-test at ``n`` seeds when the true difference is
    ``delta`` and the seed-to-seed standard deviation ``sd``: the mean and the standard
    deviation are drawn from their exact laws (normal; scaled chi), so no per-seed values
    are simulated."""
    from scipy import stats

    rng = np.random.default_rng(seed)
    mean = delta + sd / math.sqrt(n) * rng.standard_normal(draws)
    s = sd * np.sqrt(rng.chisquare(n - 1, draws) / (n - 1))
    half = float(stats.t.ppf(0.5 + level / 2, n - 1)) * s / math.sqrt(n)
    return mean - half, mean + half


def _power_settings(level, target, name: str = "power") -> None:
    """Refuse (CompanionError, naming the value and what it may be) a confidence ``level``
    outside (0, 1) or a ``target`` probability the power solvers cannot reach: at no effect
    the test already reads 'above the yardstick' with probability ``(1 - level) / 2``, so a
    target at or below that has no effect to solve for, and a target of 1 none either."""
    from ..base.errors import CompanionError

    def number(x):
        return isinstance(x, (int, float, np.floating, np.integer)) and not isinstance(x, bool) and finite(x)

    if not (number(level) and 0 < level < 1):
        raise CompanionError(f"level {level!r} is not a confidence level: give a number strictly between 0 and 1, "
                             "such as 0.95.")
    floor = (1 - level) / 2
    if not (number(target) and floor < target < 1):
        raise CompanionError(f"a {name} target of {target!r} cannot be solved for at level {level:g}: the test reads "
                             f"a difference with probability {floor:.3g} when there is none, and never with "
                             f"certainty, so the target must lie strictly between {floor:.3g} and 1 (0.8 is usual).")


def _check_power_seed(seed) -> int:
    """The seed of a power's Monte Carlo draws: a whole number >= 0 (numpy's own TypeError or
    'expected non-negative integer' named no seed)."""
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"the seed of the power's draws must be a whole number >= 0 (e.g. 20261126); got {seed!r}.")
    return int(seed)


def check_power_draws(draws) -> int:
    """The Monte Carlo draws of a power: a whole number >= 1 (0 draws gave NaN probabilities, a
    negative or fractional count numpy's own error)."""
    if isinstance(draws, (bool, np.bool_)) or not isinstance(draws, (int, np.integer)) or draws < 1:
        raise ValueError(f"draws must be a whole number >= 1 (e.g. 200000); got {draws!r}.")
    if draws > MAX_POWER_DRAWS:   # each simulated array holds one number a draw
        raise ValueError(f"draws {int(draws):,} would ask for {int(draws) * 8 / 1e9:.1f} GB per simulated array; at "
                         f"most {MAX_POWER_DRAWS:,} (200,000 is usual).")
    return int(draws)


def directional_power(n: int, sd: float, sesoi: float, level: float = 0.95, target: float = 0.8,
                      draws: int = 200_000, seed: int = 20261126) -> dict:
    """The power of the directional test actually applied (rules v2), at ``n`` seeds and a
    seed-to-seed standard deviation ``sd`` of the paired differences:

    ``p_refuted_at_0``
        the probability of reading ``refuted`` when the true effect is 0;
    ``p_holds_at_sesoi``
        the probability of ``holds`` (``low >= sesoi``) when the true effect is ``sesoi``;
    ``detect_holds``
        the true effect at which ``holds`` is reached with probability ``target``;
    ``detect_direction``
        the true effect at which the interval lies above 0 (holds in any form) with
        probability ``target`` (:func:`detectable_effect`, exact).

    Monte Carlo over the exact law of (mean, sd) with a fixed seed; NaN below two seeds.  A
    ``level`` outside (0, 1) or a ``target`` the solver cannot reach (at or below
    ``(1 - level) / 2``, or 1) is refused (CompanionError) naming what it may be; a level close
    to 1 is solved however far the effect lies.
    """
    from scipy import stats

    _power_settings(level, target)
    n, sd = check_seed_count(n), check_real(sd, "the seed-to-seed spread sd")
    sesoi, draws = check_real(sesoi, "the yardstick sesoi"), check_power_draws(draws)
    seed = _check_power_seed(seed)
    if math.isinf(sesoi):   # no effect reaches an infinite yardstick: the solver ran out and blamed the level
        raise ValueError(f"the yardstick sesoi must be a finite number > 0; got {sesoi!r}.")
    if n < 2 or not np.isfinite(sd) or sd <= 0 or not sesoi > 0:
        return {"p_refuted_at_0": float("nan"), "p_holds_at_sesoi": float("nan"),
                "detect_holds": float("nan"), "detect_direction": float("nan")}
    lo, hi = _draw_intervals(0.0, sd, n, level, draws, seed)
    p_ref = float(np.mean((lo <= 0) & (hi < sesoi)))
    # 'holds' (low >= sesoi) at a true effect delta is the exact non-central t event
    crit = stats.t.ppf(0.5 + level / 2, n - 1)

    from .t_power import TPower, check_t_power   # scipy's nct is wrong at 1 degree of freedom and a level near 1

    what = f"the effect that 'holds' reaches with probability {target:g} at level {level:g} and {n} seeds"
    power_at = TPower(crit, n - 1, what)

    # solved for the non-centrality (delta - sesoi) sqrt(n) / sd, which has no unit: solved for delta,
    # the solver's absolute tolerance (2e-12) exceeded a spread of 1e-12 (a quantity in small units, or
    # seeds whose differences vary in the last bit only), and the solve was refused blaming the level
    ncp = check_t_power(crit, n - 1, _solve_rising(lambda c: power_at(c) - target, 0.0, 400.0, what), target, what)
    detect = sesoi + ncp * sd / math.sqrt(n)
    return {"p_refuted_at_0": p_ref, "p_holds_at_sesoi": power_at(0.0), "detect_holds": detect,
            "detect_direction": detectable_effect(n, sd, level, target)}


def threshold_power(n: int, sd: float, threshold: float, level: float = 0.95, target: float = 0.8) -> dict:
    """A level claim (mean > ``threshold``): the true mean at which ``holds`` (interval above
    the threshold) is reached with probability ``target``, and the probability of reading
    ``refuted`` when the true mean sits exactly at the threshold (``level``'s one-sided
    error)."""
    from scipy import stats

    n, sd = check_seed_count(n), check_real(sd, "the seed-to-seed spread sd")
    if not is_number(threshold):   # as threshold_outcome: NaN read 'inconclusive', an infinity 'refuted'
        raise ValueError(f"the threshold of a level claim must be a finite number; got {threshold!r}.")
    if n < 2 or not np.isfinite(sd) or sd <= 0:
        return {"detect_holds": float("nan"), "p_refuted_at_threshold": float("nan")}
    return {"detect_holds": threshold + detectable_effect(n, sd, level, target),
            "p_refuted_at_threshold": float(stats.t.cdf(-stats.t.ppf(0.5 + level / 2, n - 1), n - 1))}


def equivalence_power(n: int, sd: float, band: float, level: float = 0.95, draws: int = 200_000,
                      seed: int = 20261126) -> dict:
    """An equality claim (interval inside ``(-band, band)``): the probability of ``holds``
    when the true mean is exactly 0, and of ``refuted`` when it is 0 (the test's error of
    calling a true equality unequal).  Monte Carlo with a fixed seed."""
    _check_level(level)   # level 1 gave infinite intervals, so 'holds' with probability 0, silently
    n, sd = check_seed_count(n), check_real(sd, "the seed-to-seed spread sd")
    band, draws = check_real(band, "the equivalence band"), check_power_draws(draws)
    seed = _check_power_seed(seed)
    if n < 2 or not np.isfinite(sd) or sd <= 0 or not band > 0:
        return {"p_holds_at_0": float("nan"), "p_refuted_at_0": float("nan")}
    lo, hi = _draw_intervals(0.0, sd, n, level, draws, seed)
    return {"p_holds_at_0": float(np.mean((-band < lo) & (hi < band))),
            "p_refuted_at_0": float(np.mean((lo > band) | (hi < -band)))}


def detectable_effect(n: int, sd: float, level: float = 0.95, power: float = 0.8) -> float:
    """The true mean difference that the test 'interval above 0' detects with probability
    ``power``, at ``n`` seeds with seed-to-seed standard deviation ``sd`` (non-central t).

    The test rejects when ``mean / (sd/sqrt(n)) > t_{1-alpha/2, n-1}`` with
    ``alpha = 1 - level``; under a true difference ``delta`` the statistic is non-central t
    with ``n - 1`` degrees of freedom and non-centrality ``delta sqrt(n) / sd``.  A ``level``
    outside (0, 1) or a ``power`` at or below ``(1 - level) / 2`` (what the test reads at no
    effect), or of 1, is refused (CompanionError) naming what it may be.
    """
    from scipy import stats

    _power_settings(level, power)
    n, sd = check_seed_count(n), check_real(sd, "the seed-to-seed spread sd")
    if n < 2 or not np.isfinite(sd) or sd <= 0:
        return float("nan")
    df = n - 1
    crit = stats.t.ppf(0.5 + level / 2, df)

    from .t_power import TPower, check_t_power   # scipy's nct is wrong at 1 degree of freedom and a level near 1

    power_at = TPower(crit, df, f"the effect detected with probability {power:g} at level {level:g} and {n} seeds")

    def gap(ncp):
        return power_at(ncp) - power

    what = f"the effect detected with probability {power:g} at level {level:g} and {n} seeds"

    ncp = check_t_power(crit, df, _solve_rising(gap, 0.0, 200.0, what), power, what)
    return float(ncp * sd / math.sqrt(n))
