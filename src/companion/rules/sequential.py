"""Rules v3's statistics: a group-sequential paired test read through repeated confidence
intervals, its outcomes with their edge cases, the simulated design check, and power with the
uncertainty of the seed-to-seed spread.

The design (``data/rules_history/verdict_rules_v3.yaml``) fixes, before any run it judges, the looks (the
numbers of complete seeds at which a claim may be read, e.g. 3, 6, 9, 12) and an
alpha-spending function.  From them:

:func:`boundaries`
    the two-sided z-boundaries ``c_k`` of the looks: the chance, under no effect, that
    ``|Z|`` first crosses its boundary at look ``k`` equals the spending function's increment
    there (Lan & DeMets 1983; recursive numerical integration, exact to about 1e-7);
:func:`nominal_levels`
    the one-sided nominal level ``a_k = 1 - Phi(c_k)`` of each look;
:func:`look_estimate`
    the paired mean with its interval at look ``k``: ``mean +- t(1 - a_k, n - 1) se``.  Read at
    every look, these *repeated confidence intervals* (Jennison & Turnbull 1989) cover the
    true effect at all looks together with probability about ``1 - alpha``, where ``alpha``
    is the two-sided error the spending function spends in all (0.05 in rules v3: about
    0.95, each side about 0.025), so stopping at the first decided look is no optional
    stopping;
:func:`look_outcome`
    the outcome of one interval (rules v2's six, which partition every interval), with the
    edge cases defined apart from floating-point rounding: no spread, a bound exactly at the
    yardstick, non-finite values, too few seeds;
:func:`read_sequential`
    the reading of a claim: the first look whose outcome is decided, else the last look
    whose seeds are all in (named in the verdict); every look on the way is gated, and a
    failed gate or a broken seed ends the sequence at its look;
:func:`simulate_design`
    the probability of each outcome of the whole sequential procedure at a true effect and a
    planning spread (Monte Carlo over per-seed differences, fixed seed): the design check;
:func:`family_error`
    the chance that the fixed sequence of the family lets a wrong decided outcome stand,
    simulated at given true effects and spreads (rules v3 state ``fwer: 0.05``; this measures
    what the sequence as written holds);
:func:`detectable_effect_interval`
    the effect detected with a given power, with the interval that the spread's own
    uncertainty (chi-square law of the sample variance) puts around it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = ["SPENDING", "spending", "boundaries", "nominal_levels", "LookEstimate", "look_estimate",
           "look_outcome", "Reading", "read_sequential", "simulate_design", "detectable_effect_interval",
           "true_outcomes", "family_error", "family_error_split", "t_power_by_integral", "check_t_power",
           "SPREAD_FLOOR", "DIGITS", "DECIDED", "OUTCOMES", "NOT_READ"]

from .t_power import TPower, check_t_power, t_power_by_integral  # noqa: E402,F401  (re-exported)
from .statistics import (DECIDED, DIGITS, OUTCOMES, SPREAD_FLOOR, interval_outcome,  # noqa: E402  (one set of outcomes, one partition, one rounding)
                         is_number, is_positive_number, seed_values, check_seed_count, check_real, _check_level,
                         _solve_rising)
from .estimates import mean_sd, rounded  # noqa: E402


def _check_looks(looks) -> tuple:
    """The looks as rising whole seed counts >= 2, or a one-line ValueError: looks out of
    order read fewer seeds at the 'last' look than were in at an earlier one, and a look at
    half a seed has no meaning (``6.0`` is read as ``6``)."""
    try:
        items = list(looks)
    except TypeError:
        items = None
    ok = bool(items) and all(is_number(n) and float(n).is_integer() for n in items)
    n = [int(x) for x in items] if ok else []
    if not (ok and n[0] >= 2 and all(b > a for a, b in zip(n, n[1:]))):
        raise ValueError(f"looks must be rising whole seed counts >= 2 (e.g. [3, 6, 9, 12]); got {looks!r}.")
    return tuple(n)


def _per_look(sesoi) -> bool:
    """Whether ``sesoi`` is one yardstick per look (a list, tuple, array or pandas Series), not one
    number: a Series was read as one yardstick that is no number, and every look 'not testable'."""
    return isinstance(sesoi, (list, tuple)) or (hasattr(sesoi, "__len__") and not isinstance(sesoi, (str, bytes, dict))
                                                and np.ndim(sesoi) >= 1)


def _check_plan(looks, nominal, sesoi) -> tuple:
    """Looks, one one-sided nominal level in (0, 0.5) per look, and one positive yardstick or one
    per look, checked together; returns the looks as a tuple of ints."""
    looks = _check_looks(looks)
    nom = list(np.asarray(nominal, dtype=float).ravel()) if not isinstance(nominal, (str, bytes)) else []
    if len(nom) != len(looks) or not all(0 < a < 0.5 for a in nom):
        raise ValueError(f"every look needs its one-sided nominal level in (0, 0.5): {len(looks)} looks {list(looks)}, "
                         f"levels {nominal!r}.")
    if _per_look(sesoi) and len(sesoi) != len(looks):
        raise ValueError(f"one yardstick, or one per look: {len(looks)} looks {list(looks)}, {len(sesoi)} yardsticks "
                         f"{list(sesoi)!r}.")
    return looks


#: the most cells (draws x the last look's seeds, 8 bytes each) one simulated matrix may hold: the
#: family check holds one per body at once, and 2,000,000 draws of 935 seeds asked numpy for 14.9 GB
MAX_DRAW_CELLS = 25_000_000


def _check_draws(draws, looks=None) -> int:
    """Draws as a whole number >= 1 whose simulated matrix (draws x the last look's seeds) fits
    within :data:`MAX_DRAW_CELLS`, the bound a rules file is held to (companion.rules.fields)."""
    if isinstance(draws, bool) or not isinstance(draws, (int, np.integer)) or draws < 1:
        raise ValueError(f"draws must be a whole number >= 1 (0 draws gave NaN probabilities); got {draws!r}.")
    seeds = int(list(looks)[-1]) if looks else 1
    if int(draws) * seeds > MAX_DRAW_CELLS:
        raise ValueError(f"{int(draws):,} draws of {seeds} seeds would ask for {int(draws) * seeds * 8 / 1e9:.1f} GB per "
                         f"simulated matrix; draws may be at most {MAX_DRAW_CELLS // seeds:,} here.")
    return int(draws)


def _check_truth(delta, sd) -> None:
    """A simulated design's true effect (finite) and per-seed spread (finite, above the spread
    that reads as none, :data:`SPREAD_FLOOR`): a NaN effect read 'refuted' in every draw, and
    per-seed values without spread 'holds' where :func:`read_sequential` reads them 'not
    testable here'."""
    if not is_number(delta):
        raise ValueError(f"the true effect delta of a simulated design must be a finite number; got {delta!r}.")
    if not (is_number(sd) and sd > SPREAD_FLOOR * max(1.0, abs(delta))):
        raise ValueError(f"the planning spread sd of a simulated design must be a finite number > 0 (values "
                         f"without spread are not testable here); got {sd!r}.")

#: a claim before its first look: no outcome yet (not one of the six, and not 'not testable
#: here', which says the runs cannot test the claim; here they are only not all in)
NOT_READ = "not read yet"

SPENDING = ("obrien-fleming", "pocock")


def spending(t, alpha: float, kind: str = "obrien-fleming"):
    """The two-sided error spent by information fraction ``t`` (Lan & DeMets 1983):
    O'Brien-Fleming type ``2 - 2 Phi(z_{1-alpha/2} / sqrt t)`` or Pocock type
    ``alpha log(1 + (e - 1) t)``; both spend ``alpha`` at ``t = 1``.  The convention is the
    two-sided one: the boundaries are symmetric, so each side spends half of it.  (The
    one-sided convention, e.g. gsDesign's ``sfLDOF`` at one-sided ``alpha/2``, spends
    ``2 - 2 Phi(z_{1-alpha/4} / sqrt t)`` on one side: the same total at ``t = 1`` and less at
    early looks.)"""
    from scipy import stats

    t = np.asarray(t, dtype=float) + 0.0   # -0.0 is 0: 1 / sqrt(-0.0) is -inf, and O'Brien-Fleming spent 2 there
    if not (np.isfinite(t).all() and ((t >= 0) & (t <= 1)).all()):
        raise ValueError(f"an information fraction lies between 0 and 1; got {t.tolist()} (past 1 a spending "
                         "function would spend more than alpha).")
    if not (is_number(alpha) and 0 < alpha < 1):   # np.float32(0.05) is an alpha; text or a bool is not
        raise ValueError(f"alpha must be a number in (0, 1); got {alpha!r}.")
    alpha = float(alpha)
    if kind == "obrien-fleming":   # 2 - 2 Phi(x) as 2 Phi(-x): no cancellation at early looks
        with np.errstate(divide="ignore"):
            return 2 * stats.norm.sf(stats.norm.isf(alpha / 2) / np.sqrt(t))
    if kind == "pocock":
        return alpha * np.log(1 + (math.e - 1) * t)
    raise ValueError(f"unknown spending function {kind!r}; choose one of {SPENDING}.")


def boundaries(looks, alpha: float = 0.05, kind: str = "obrien-fleming", grid: int = 2001) -> np.ndarray:
    """Two-sided z-boundaries of the looks (``looks``: complete seeds at each look, rising);
    see :func:`_boundaries`.  Each design is computed once per process (a rules file is read
    many times and the integration takes a second); the caller gets its own copy."""
    try:   # each value with its type: 3 and 3.0, or 1 and True, are not one design to the checks
        key = (tuple((type(n), n) for n in looks), (type(alpha), alpha), kind, grid)
        hash(key)
    except TypeError:
        return _boundaries(looks, alpha, kind, grid)   # refused there, in its words
    if key not in _DESIGNS:   # (a design refused is not kept: it is refused again next time)
        _DESIGNS[key] = _boundaries(looks, alpha, kind, grid)
    return _DESIGNS[key].copy()


#: the boundaries of each design computed in this process (see :func:`boundaries`)
_DESIGNS: dict = {}


#: the fewest grid points the recursive integration of :func:`boundaries` may use: at 201 the
#: boundaries of four looks agree with 2001's to 3e-5; at 3 they were 20% off, without error
MIN_GRID = 201


def _boundaries(looks, alpha: float = 0.05, kind: str = "obrien-fleming", grid: int = 2001) -> np.ndarray:
    """Two-sided z-boundaries of the looks (``looks``: complete seeds at each look, rising).

    Information fraction ``t_k = n_k / n_K``.  Under no effect, ``B(t) = Z sqrt(t)`` is a
    Brownian motion; the boundary ``c_k`` is chosen so that the chance of first leaving
    ``|Z| < c`` at look ``k`` is ``spending(t_k) - spending(t_{k-1})``.  The density of ``B``
    on the continuation region is carried from look to look on a grid (trapezoid rule)."""
    from scipy import optimize, stats

    n = np.asarray(_check_looks(looks), dtype=float)
    if isinstance(grid, (bool, np.bool_)) or not isinstance(grid, (int, np.integer)) or grid < MIN_GRID:
        raise ValueError(f"grid must be a whole number of points >= {MIN_GRID} (the default 2001 is exact to about "
                         f"1e-7); got {grid!r}.")
    t = n / n[-1]
    spent = spending(t, alpha, kind)
    steps = np.diff(np.concatenate([[0.0], spent]))
    c = np.empty(n.size)

    def too_little(k):
        return ValueError(f"look {k + 1} ({int(n[k])} of {int(n[-1])} seeds) is given {steps[k]:.3g} of the error "
                          f"under {kind} spending of {alpha}, too little for a boundary; put the first looks "
                          "later (closer to the last) or use fewer looks.")

    if not steps[0] > 1e-15:
        raise too_little(0)
    c[0] = stats.norm.isf(steps[0] / 2)
    # density of B(t_1) on the continuation region
    x = np.linspace(-c[0] * math.sqrt(t[0]), c[0] * math.sqrt(t[0]), grid)
    f = stats.norm.pdf(x / math.sqrt(t[0])) / math.sqrt(t[0])
    for k in range(1, n.size):
        dt = t[k] - t[k - 1]
        sd = math.sqrt(dt)
        w = np.full(x.size, x[1] - x[0])
        w[[0, -1]] /= 2

        def exit_prob(ck, k=k, f=f, x=x, w=w, sd=sd):
            b = ck * math.sqrt(t[k])
            tail = stats.norm.cdf((-b - x) / sd) + stats.norm.sf((b - x) / sd)
            return float(np.sum(w * f * tail))

        target = steps[k]
        try:
            c[k] = optimize.brentq(lambda ck: exit_prob(ck) - target, 1e-6, 40.0, xtol=1e-12)
        except ValueError:   # no boundary in (0, 40) spends so little (or so much)
            raise too_little(k) from None
        y = np.linspace(-c[k] * math.sqrt(t[k]), c[k] * math.sqrt(t[k]), grid)
        kern = stats.norm.pdf((y[:, None] - x[None, :]) / sd) / sd
        f, x = kern @ (w * f), y
    return c


def nominal_levels(looks, alpha: float = 0.05, kind: str = "obrien-fleming") -> np.ndarray:
    """The one-sided nominal level of each look's interval, ``1 - Phi(c_k)``."""
    from scipy import stats

    return stats.norm.sf(boundaries(looks, alpha, kind))


@dataclass(frozen=True)
class LookEstimate:
    """The paired mean over the seeds of one look with its repeated confidence interval."""

    values: tuple
    mean: float
    sd: float
    low: float
    high: float
    nominal: float      # one-sided nominal level of the look
    problem: str = ""   # why no interval could be formed (no spread, non-finite values, one seed)

    @property
    def n(self) -> int:
        return len(self.values)

    @property
    def level(self) -> float:
        """The interval's own two-sided coverage, ``1 - 2 a_k``."""
        return 1 - 2 * self.nominal


def look_estimate(values, nominal: float) -> LookEstimate:
    """``mean +- t(1 - nominal, n - 1) sd / sqrt(n)`` over the per-seed paired differences,
    or a named problem: a non-finite value (which seed), a single seed, or no spread
    (sd at most :data:`SPREAD_FLOOR` x max(1, |mean|), which ties (0.03, 0.03, 0.03) and
    (0.2, 0.2, 0.2) to one reading whatever their rounding)."""
    from scipy import stats

    if not (is_number(nominal) and 0 < nominal < 0.5):
        raise ValueError(f"a look's one-sided nominal level must be a number in (0, 0.5); got {nominal!r}.")
    v = seed_values(values)   # a table, text, a bool or no real number refused; None and pd.NA are NaN
    nan = float("nan")
    if v.size == 0:
        return LookEstimate((), nan, nan, nan, nan, nominal, "no seeds")
    bad = np.flatnonzero(~np.isfinite(v))
    if bad.size:
        return LookEstimate(tuple(v.tolist()), nan, nan, nan, nan, nominal,
                            f"a non-finite paired value ({v[bad[0]]}) at the look's seed number {bad[0] + 1}")
    mean, sd = mean_sd(v)   # (values near 1e308: their mean, not inf read as 'no spread')
    if v.size < 2:
        return LookEstimate(tuple(v.tolist()), mean, nan, nan, nan, nominal, "one seed: no interval")
    if sd <= SPREAD_FLOOR * max(1.0, abs(mean)):
        return LookEstimate(tuple(v.tolist()), mean, 0.0, nan, nan, nominal,
                            "no seed-to-seed spread (identical paired values: duplicated runs or an "
                            "unvaried seed), so no interval")
    half = float(stats.t.isf(nominal, v.size - 1)) * sd / math.sqrt(v.size)
    if not (math.isfinite(mean - half) and math.isfinite(mean + half)):
        return LookEstimate(tuple(v.tolist()), mean, sd, nan, nan, nominal,
                            "an interval end beyond the largest float (values near 1e308), so no interval")
    return LookEstimate(tuple(v.tolist()), mean, sd, mean - half, mean + half, nominal)


def look_outcome(est: LookEstimate, sesoi: float) -> str:
    """The outcome of one look's interval for a directional claim (true effect > 0) with
    smallest effect of interest ``sesoi``: :func:`companion.rules.statistics.interval_outcome`,
    the one partition of the intervals every claim is read by; ``not testable here`` when the
    estimate names a problem."""
    if not is_positive_number(sesoi):
        raise ValueError(f"the smallest effect of interest must be a positive number; got {sesoi!r}.")
    if est.problem:
        return "not testable here"
    return interval_outcome(est.low, est.high, sesoi)


@dataclass(frozen=True)
class Reading:
    """A claim read under the sequential design: the look it was read at (1-based; 0: none
    complete), the seeds then in, the interval, the outcome and, when not testable, why."""

    look: int
    looks: tuple
    estimate: LookEstimate | None
    outcome: str
    reason: str = ""

    @property
    def final(self) -> bool:
        """Whether this reading ends the claim's sequence: decided, read at the last look, or
        not testable at a look that was read (a failed gate or a broken seed is a property of
        the runs that more seeds do not mend).  Before the first look nothing is final."""
        if self.look == 0:
            return False
        return self.outcome in DECIDED or self.look == len(self.looks) or self.outcome == "not testable here"


def read_sequential(values_in_plan_order, looks, nominal, sesoi: float, gate=None) -> Reading:
    """Read a claim at its looks.  ``values_in_plan_order``: the per-seed paired differences of
    the seeds whose runs are all in, in the plan's seed order (a seed missing its pair ends
    the list: a look needs all of its first ``n_k`` seeds).  The claim is read at the first
    look whose outcome is decided, else at the last look whose seeds are all in; before the
    first look it is :data:`NOT_READ` ('not read yet') with the count of seeds in.

    ``gate``: called with each complete look's number (1-based), in order, before that look's
    outcome is read; it returns ``""`` when the look's gate passes, else why it fails.  A look
    whose gate fails reads 'not testable here' with that reason and ends the sequence there,
    as a broken seed does (rules v3, framework 'sequential'): an earlier inconclusive look is
    gated too, so a failed gate is never passed over on the way to a later look.  ``sesoi``: one
    yardstick, or one per look (rules v4's yardsticks read from the look's own seeds; a look
    whose yardstick is not a positive number reads 'not testable here')."""
    v = list(values_in_plan_order)
    looks = _check_plan(looks, nominal, sesoi)
    per_look = list(sesoi) if _per_look(sesoi) else [sesoi] * len(looks)
    complete = [k for k, n in enumerate(looks) if len(v) >= n]
    if not complete:
        return Reading(0, looks, None, NOT_READ,
                       f"{len(v)} of the {looks[0]} seeds of the first look are in")
    for k in complete:
        est = look_estimate(v[: looks[k]], float(nominal[k]))
        if est.problem:
            return Reading(k + 1, looks, est, "not testable here", est.problem)
        why = gate(k + 1) if gate is not None else ""
        if not isinstance(why, str):   # a bool would read the other way round (False: passes)
            raise ValueError(f"the gate at look {k + 1} returned {why!r}; it returns '' when the look's gate "
                             "passes, else the reason it fails (text).")
        if why:
            return Reading(k + 1, looks, est, "not testable here", why)
        if not is_positive_number(per_look[k]):
            return Reading(k + 1, looks, est, "not testable here",
                           f"no smallest effect of interest could be read at look {k + 1} ({per_look[k]!r})")
        out = look_outcome(est, per_look[k])
        if out in DECIDED:
            break
    return Reading(k + 1, looks, est, out, "")


def _round_all(a: np.ndarray) -> np.ndarray:
    """:func:`~companion.rules.estimates.rounded` on every element: rounding to :data:`DIGITS` significant digits, as the
    outcome of one reading is compared (non-finite values pass unchanged)."""
    flat = [float(f"{x:.{DIGITS}g}") for x in np.asarray(a, dtype=float).ravel()]
    return np.array(flat, dtype=float).reshape(np.shape(a))


def _rounded_near(a: np.ndarray, d: float) -> np.ndarray:
    """``a`` with each element near ``d`` rounded as :func:`_round_all` rounds it: compared with
    ``d`` or with 0, the result is that of rounding every element, since rounding to
    :data:`DIGITS` significant digits moves a value by at most 5e-10 of itself and never across
    0, so only an element within that distance of ``d`` can compare otherwise.  Formatting every
    element as text took 50 of the 59 s of the family check's simulation."""
    a = np.array(a, dtype=float)
    near = ~(np.abs(a - d) > 1e-8 * np.maximum(np.abs(a), abs(d)))   # NaN counts as near: rounded as before
    if near.any():
        a[near] = _round_all(a[near])
    return a


def _drawn_outcomes(x: np.ndarray, looks, nominal, sesoi: float) -> tuple[np.ndarray, np.ndarray]:
    """The outcome of :func:`read_sequential` (gate passing) for each row of ``x`` (draws x
    seeds of per-seed paired differences), and the seeds it used: stop at the first decided
    look, else read the last."""
    from scipy import stats

    looks = list(_check_plan(looks, nominal, sesoi))
    if _per_look(sesoi):   # read_sequential's per-look yardsticks come from runs
        raise ValueError(f"a simulated design takes one yardstick d (a positive number), not one per look; got "
                         f"{str(list(sesoi))[:60]}.")
    if not is_positive_number(sesoi):
        raise ValueError(f"the smallest effect of interest must be a positive number; got {sesoi!r}.")
    if not np.isfinite(x).all():   # a NaN row compared false everywhere and read 'refuted'
        raise ValueError("the simulated per-seed values hold NaN or Inf; check the effect and spread drawn.")
    outcome = np.full(x.shape[0], "", dtype=object)
    used = np.full(x.shape[0], looks[-1])
    d = rounded(sesoi)
    for k, n in enumerate(looks):
        m = x[:, :n].mean(axis=1)
        s = x[:, :n].std(axis=1, ddof=1)
        half = stats.t.isf(nominal[k], n - 1) * s / math.sqrt(n)
        lo, hi = _rounded_near(m - half, d), _rounded_near(m + half, d)
        res = np.where(lo >= d, "holds", np.where(lo > 0, np.where(hi >= d, "holds, size open", "negligible"),
                                                  np.where(hi >= d, "inconclusive", "refuted")))
        open_ = outcome == ""
        stop = open_ & ((res != "inconclusive") | (k == len(looks) - 1))
        outcome[stop] = res[stop]
        used[stop] = n
    return outcome, used


def simulate_design(delta: float, sd: float, looks, nominal, sesoi: float, draws: int = 20_000,
                    seed: int = 20261128) -> dict:
    """The probability of each outcome of the whole procedure (:func:`read_sequential` run to
    its end: stop at the first decided look, else read the last) when the per-seed paired
    differences are normal with mean ``delta`` and standard deviation ``sd``, and the
    expected number of seeds used.  Monte Carlo with a fixed seed; the gate is taken to pass."""
    _check_truth(delta, sd)
    looks = list(_check_plan(looks, nominal, sesoi))
    draws = _check_draws(draws, looks)
    rng = np.random.default_rng(seed)
    x = delta + sd * rng.standard_normal((draws, looks[-1]))
    outcome, used = _drawn_outcomes(x, looks, nominal, sesoi)
    probs = {o: float(np.mean(outcome == o)) for o in DECIDED + ("inconclusive",)}
    probs["expected_seeds"] = float(used.mean())
    return probs


def true_outcomes(delta: float, sesoi: float) -> tuple:
    """The decided outcomes whose statement is true of a true effect ``delta``: holds says
    ``delta >= d``, holds (size open) ``delta > 0``, negligible ``0 < delta < d``, refuted
    ``delta < d``."""
    out = []
    if delta >= sesoi:
        out.append("holds")
    if delta > 0:
        out.append("holds, size open")
    if 0 < delta < sesoi:
        out.append("negligible")
    if delta < sesoi:
        out.append("refuted")
    return tuple(out)


def _check_members(members, size: int) -> None:
    """Each family member as ``(delta, sd, nominal, sesoi)`` (``size`` 4) or with its ``group``
    (5), its truth checked (:func:`_check_truth`); else one line naming the member."""
    fields = "(delta, sd, nominal, sesoi" + (", group)" if size == 5 else ")")
    for i, m in enumerate(members):
        if isinstance(m, (str, bytes)) or not hasattr(m, "__len__") or len(m) != size:
            raise ValueError(f"family member {i + 1} must be {fields}; got {str(m)[:60]!r}.")
        _check_truth(m[0], m[1])


def family_error(members, looks, draws: int = 20_000, seed: int = 20261128) -> dict:
    """The chance that the fixed sequence (rules v3's ``family``) lets a wrong decided outcome
    stand, by Monte Carlo.  ``members``: in the sequence's order, ``(delta, sd, nominal,
    sesoi)`` per claim (the true effect, the per-seed spread, the looks' one-sided levels, the
    yardstick); the claims' seeds are drawn independently.  A member's decided outcome stands
    when every member before it was decided; the family errs when a standing outcome is
    wrong (decided, and not among :func:`true_outcomes`).  Returns ``{"family_error", "member_error": [...],
    "reached": [...]}``, the last two per member: the chance that it stands wrong, and the
    chance that the sequence reaches it."""
    _check_members(members, 4)
    looks = list(_check_looks(looks))
    draws = _check_draws(draws, looks)
    rng = np.random.default_rng(seed)
    reached = np.ones(draws, dtype=bool)
    any_wrong = np.zeros(draws, dtype=bool)
    member_error, reach = [], []
    for delta, sd, nominal, sesoi in members:
        x = delta + sd * rng.standard_normal((draws, looks[-1]))
        outcome, _ = _drawn_outcomes(x, looks, nominal, sesoi)
        wrong = np.isin(outcome, DECIDED) & ~np.isin(outcome, true_outcomes(delta, sesoi))
        reach.append(float(reached.mean()))
        member_error.append(float((reached & wrong).mean()))
        any_wrong |= reached & wrong
        reached &= np.isin(outcome, DECIDED)
    return {"family_error": float(any_wrong.mean()), "member_error": member_error, "reached": reach}


def family_error_split(members, looks, correlation: float = 0.5, draws: int = 20_000,
                       seed: int = 20261206) -> dict:
    """The chance that a family read with its level split (rules v4: every member at its own
    share, no order) holds a wrong decided outcome anywhere, by Monte Carlo over the whole
    procedure (every look, stopping at the first decided one).  ``members``: per claim
    ``(delta, sd, nominal, sesoi, group)``; members of one ``group`` (claims read on the runs
    of one body) have per-seed values correlated by ``correlation``: each is
    ``delta + sd (sqrt(rho) z_group + sqrt(1 - rho) z_own)``.  Returns ``{"family_error",
    "member_error": [...]}``."""
    if not (is_number(correlation) and 0 <= correlation <= 1):
        raise ValueError(f"correlation must be a number in [0, 1]; got {correlation!r}.")
    _check_members(members, 5)
    looks = list(_check_looks(looks))
    draws = _check_draws(draws, looks)
    rng = np.random.default_rng(seed)
    common: dict = {}
    any_wrong = np.zeros(draws, dtype=bool)
    member_error = []
    for delta, sd, nominal, sesoi, group in members:
        if group not in common:
            common[group] = rng.standard_normal((draws, looks[-1]))
        z = math.sqrt(correlation) * common[group] + math.sqrt(1 - correlation) * rng.standard_normal((draws, looks[-1]))
        outcome, _ = _drawn_outcomes(delta + sd * z, looks, nominal, sesoi)
        wrong = np.isin(outcome, DECIDED) & ~np.isin(outcome, true_outcomes(delta, sesoi))
        member_error.append(float(wrong.mean()))
        any_wrong |= wrong
    return {"family_error": float(any_wrong.mean()), "member_error": member_error}


def detectable_effect_interval(n: int, sd: float, nominal: float, power: float = 0.8,
                               level: float = 0.95) -> tuple[float, float, float]:
    """The true effect at which a one-sided test at ``nominal`` over ``n`` seeds shows the
    direction (interval above 0) with probability ``power``, at the observed ``sd`` and at the
    ends of the ``level`` interval for the true spread (``sd^2 (n-1) / chi2``): ``(low, at sd,
    high)``.  With 3 seeds the spread's 95% interval runs from 0.52 to 6.3 times the observed
    one, and so does the detectable effect."""
    from scipy import optimize, stats

    if not (is_number(nominal) and 0 < nominal < 0.5):
        raise ValueError(f"a look's one-sided nominal level must lie in (0, 0.5); got {nominal!r}.")
    if not (is_number(power) and nominal < power < 1):   # at no effect the test already reads with p = nominal
        raise ValueError(f"power must lie between the look's one-sided level {nominal:g} and 1 (0.8 is usual); "
                         f"got {power!r}.")
    n, sd = check_seed_count(n), check_real(sd, "the seed-to-seed spread sd")
    _check_level(level)
    if n < 2 or not np.isfinite(sd) or sd <= 0:
        return (float("nan"),) * 3
    df = n - 1
    crit = stats.t.isf(nominal, df)
    power_at = TPower(crit, df, f"the effect detected with probability {power:g} at one-sided level {nominal:g} "
                               f"and {n} seeds")   # scipy's nct, or the quadrature where it does not converge
    f = lambda c: power_at(c) - power  # noqa: E731
    what = f"the effect detected with probability {power:g} at one-sided level {nominal:g} and {n} seeds"
    hi = 400.0
    while f(hi) < 0 and hi < 1e7:   # strict early looks (2 degrees of freedom at a tiny level) need a large shift
        hi *= 4
    # beyond 1e7 (1 degree of freedom at a level of 1e-9) the bracket grows on, or the solve is refused
    # in one line (it read NaN, where the effect exists and the quadrature finds it)
    root = optimize.brentq(f, 0.0, hi) if f(hi) >= 0 else _solve_rising(f, hi, hi, what)
    ncp = check_t_power(crit, df, root, power, what)
    at = ncp / math.sqrt(n)
    lo, hi = spread_ratio_interval(n, level)
    return at * sd * lo, at * sd, at * sd * hi


def spread_ratio_interval(n: int, level: float = 0.95) -> tuple[float, float]:
    """The ``level`` interval for the true seed-to-seed spread as a multiple of the one observed
    over ``n`` seeds (normal seeds: ``(n-1) s^2 / sigma^2`` is chi-square with ``n-1`` degrees
    of freedom): about 0.52 to 6.3 at 3 seeds, 0.62 to 2.45 at 6."""
    from scipy import stats

    n = check_seed_count(n)
    _check_level(level)   # level 1 gave (0, inf); above 1, NaN
    if n < 2:
        raise ValueError(f"the spread of {n} seed(s) has no interval: it needs at least 2 seeds")
    df = n - 1
    return (math.sqrt(df / stats.chi2.isf((1 - level) / 2, df)),
            math.sqrt(df / stats.chi2.ppf((1 - level) / 2, df)))
