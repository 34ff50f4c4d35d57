"""The speed-up of Table 1, measured on smoothed held-out loss.

Definition (ours)
-----------------
Let ``L_b(t)`` and ``L_c(t)`` be the *smoothed eval losses* of the baseline and of the
candidate (e.g. symmetric initialisation) at the logged steps ``t`` of runs of equal
length ``T``.  The target is the baseline's final smoothed loss ``L_b(T)``.  With
``t*`` the first logged step at which ``L_c(t) <= L_b(T)``,

.. math::  \\text{speed-up} = 1 - t^* / T,

the fraction of training the candidate saves.  When the candidate never reaches the target
the speed-up is undefined and we return ``NaN``.  Smoothing is a trailing moving average
over ``window`` evaluations, so one lucky evaluation cannot decide.

Several seeds
-------------
A seed whose candidate never reaches the target did worse than the baseline: its speed-up
is below 0 by an unknown amount.  It is *censored*, not dropped (dropping it would report
only the lucky seeds): :func:`censored_median_speedup` ranks it below every observed value
and reports how many seeds reached the target, the median speed-up and a distribution-free
interval for the median over seeds with its exact coverage (with three seeds, min to max,
which covers the median with probability 0.75), either end of which may be "below 0".  The paired held-out-loss
difference gets a seed-level t interval (:func:`paired_difference_interval`).

What the paper's code did (see :func:`authors_speedup`): raw *training* loss, one seed,
and 100% returned when the target is never reached; Table 1 prints 0% for the one row
where that happened.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

__all__ = ["smooth", "speedup", "speedup_from_histories", "speedup_over_seeds", "paired_loss_difference",
           "authors_speedup", "authors_speedup_from_histories", "censored_median_speedup",
           "paired_difference_interval"]


def smooth(values, window: int = 3) -> np.ndarray:
    """Trailing moving average over ``window`` points (shorter at the start)."""
    if window < 1:
        raise ValueError(f"window must be >= 1; got {window}.")
    return pd.Series(np.asarray(values, dtype=float)).rolling(window, min_periods=1).mean().to_numpy()


def speedup(steps_base, loss_base, steps_cand, loss_cand, window: int = 3) -> float:
    """Fraction of training saved by the candidate; ``NaN`` when it never reaches the target."""
    sb, lb = np.asarray(steps_base, dtype=float), np.asarray(loss_base, dtype=float)
    sc, lc = np.asarray(steps_cand, dtype=float), np.asarray(loss_cand, dtype=float)
    if len(sb) == 0 or len(sc) == 0:
        raise ValueError("both runs need at least one logged loss.")
    if len(sb) != len(lb) or len(sc) != len(lc):
        raise ValueError("steps and losses must have the same length.")
    for what, v in (("baseline steps", sb), ("candidate steps", sc), ("baseline losses", lb),
                    ("candidate losses", lc)):
        # a NaN final loss made the target NaN (read as 'never reached'), one inside the window was
        # skipped by the rolling mean, an infinite one was averaged into NaN
        if v.ndim != 1 or not np.isfinite(v).all():
            raise ValueError(f"the {what} must be a list of finite numbers; got {v.tolist()[:8]}: drop the "
                             "evaluations that failed, or rerun them.")
    if sb.min() < 0 or sc.min() < 0 or sb.max() <= 0:
        # t* / T with T = 0 is 0/0, and a negative step gave a speed-up of -1
        raise ValueError(f"the logged steps must be >= 0 and the runs longer than 0 steps (positive); got "
                         f"{sb.min():g} to {sb.max():g} and {sc.min():g} to {sc.max():g}.")
    if not math.isclose(sb.max(), sc.max()):
        raise ValueError(f"runs of different length ({sb.max():g} vs {sc.max():g} steps) cannot be compared.")
    ob, oc = np.argsort(sb), np.argsort(sc)
    target = smooth(lb[ob], window)[-1]
    reached = np.flatnonzero(smooth(lc[oc], window) <= target)
    if reached.size == 0:
        return float("nan")
    return float(1.0 - sc[oc][reached[0]] / sb.max())


def _eval_curve(history: pd.DataFrame):
    ev = history[history["quantity"] == "eval_loss"].sort_values("step")
    if ev.empty:
        raise ValueError("the history has no eval_loss rows.")
    return ev["step"].to_numpy(), ev["value"].to_numpy()


def speedup_from_histories(base: pd.DataFrame, cand: pd.DataFrame, window: int = 3) -> float:
    """:func:`speedup` on the ``eval_loss`` rows of two history tables."""
    return speedup(*_eval_curve(base), *_eval_curve(cand), window=window)


def _paired_curves(pairs: dict):
    """``(seed, (steps_b, loss_b), (steps_c, loss_c))`` by seed."""
    if not pairs:
        raise ValueError("no (baseline, candidate) pairs given; pass {seed: (baseline, candidate)}.")
    for seed, (b, c) in sorted(pairs.items()):
        yield seed, _eval_curve(b), _eval_curve(c)


def _check_same_steps(steps_b, steps_c, where: str = "") -> None:
    if len(steps_b) != len(steps_c) or not np.allclose(steps_b, steps_c):
        raise ValueError(f"{where}the two runs were not evaluated at the same steps; "
                         "pair runs made with the same --steps and --eval-every.")


def speedup_over_seeds(pairs: dict, window: int = 3) -> tuple[pd.DataFrame, dict]:
    """Paired speed-ups ``{seed: (baseline_history, candidate_history)}`` and their spread.

    Returns the per-seed table (seed, speedup, final smoothed losses) and a summary over
    *all* seeds, the censored ones included (a mean over the seeds that reached the target
    would report the lucky seeds only): how many reached it, the censored median, the
    smallest and the largest speed-up (``-inf`` for "below 0, by an unknown amount"); the
    median is NaN where an even number of seeds puts one that never reached and one that
    did, at ``b > 0``, in the middle (it lies below ``b / 2``, not surely below 0).
    """
    rows = []
    for seed, (sb, lb), (sc, lc) in _paired_curves(pairs):
        rows.append({"seed": seed, "speedup": speedup(sb, lb, sc, lc, window),
                     "final_loss_baseline": smooth(lb, window)[-1],
                     "final_loss_candidate": smooth(lc, window)[-1]})
    table = pd.DataFrame(rows)
    v = np.where(np.isnan(table["speedup"].to_numpy(dtype=float)), -np.inf, table["speedup"].to_numpy(dtype=float))
    summary = {
        "n_seeds": len(table),
        "n_reached": int(np.isfinite(v).sum()),
        "median": _known_median(v, float(np.median(v))),
        "min": float(v.min()),
        "max": float(v.max()),
    }
    return table, summary


def paired_loss_difference(pairs: dict, window: int = 1) -> pd.DataFrame:
    """Candidate minus baseline eval loss at every logged step, per paired seed.

    ``pairs`` is ``{seed: (baseline_history, candidate_history)}`` as for
    :func:`speedup_over_seeds`; with ``window > 1`` both curves are smoothed first (the same
    trailing mean).  Returns a tidy table ``seed, step, baseline, candidate, difference``:
    negative differences are steps where the candidate is ahead.  The speed-up summarises
    one crossing of this curve; the curve shows whether a candidate is ahead early and
    falls behind later, which a single number hides.
    """
    rows = []
    for seed, (sb, lb), (sc, lc) in _paired_curves(pairs):
        _check_same_steps(sb, sc, f"seed {seed}: ")
        lb, lc = smooth(lb, window), smooth(lc, window)
        rows.append(pd.DataFrame({"seed": seed, "step": sb, "baseline": lb, "candidate": lc,
                                  "difference": lc - lb}))
    return pd.concat(rows, ignore_index=True)


def authors_speedup(steps, loss_base, loss_cand) -> float:
    """The published formula, kept to show its failure mode (do not use for results).

    Raw losses at common logged steps; the first step where the candidate's loss is below
    the baseline's final loss; **1.0 when that never happens** (the code's fall-through).
    """
    steps = np.asarray(steps, dtype=float)
    below = np.flatnonzero(np.asarray(loss_cand, dtype=float) < np.asarray(loss_base, dtype=float)[-1])
    if below.size == 0:
        return 1.0
    return float(1.0 - steps[below[0]] / steps.max())


def authors_speedup_from_histories(base: pd.DataFrame, cand: pd.DataFrame) -> float:
    """:func:`authors_speedup` on the ``eval_loss`` rows of two runs logged at the same steps."""
    sb, lb = _eval_curve(base)
    sc, lc = _eval_curve(cand)
    _check_same_steps(sb, sc)
    return authors_speedup(sb, lb, lc)


def _middle_bound(v) -> float | None:
    """Where the median of an even number of seeds lies when the lower of its two middle seeds
    never reached the target and the upper one did (at ``b`` >= 0): below ``b / 2`` (the
    midpoint of ``b`` and a speed-up below 0), which is not 'below 0' when ``b > 0``; None
    otherwise."""
    v = np.sort(np.asarray(v, dtype=float))
    if v.size % 2 or v.size == 0:
        return None
    a, b = v[v.size // 2 - 1], v[v.size // 2]
    return float(b) / 2 if a == -np.inf and np.isfinite(b) and b > 0 else None


def _known_median(v, median: float) -> float:
    """``median``, or NaN where it is only known to lie below a positive bound
    (:func:`_middle_bound`): -inf would say 'below 0', which the seeds do not show."""
    return float("nan") if _middle_bound(v) is not None else median


def _share_text(x: float) -> str:
    """A speed-up (a share of training saved) in two decimals, or more where two would print a
    value short of 1 as ``1.00`` or one above 0 as ``0.00``; ``below 0`` for -inf."""
    if x == -np.inf:
        return "below 0"
    text = f"{x:.2f}"
    for places in (3, 4, 5, 6):
        if not ((float(text) == 1 and x < 1) or (float(text) == 0 and x > 0)):
            break
        text = f"{x:.{places}f}"
    return text


def _coverage_text(c: float) -> str:
    """A coverage in whole percent, or with the decimals that keep one short of certainty off
    ``100%`` (0.996: ``99.6%``)."""
    for places in range(0, 7):
        text = f"{c:.{places}%}"
        if c >= 1 or float(text.rstrip("%")) < 100:
            return text
    return text


def _censored_median(values: np.ndarray) -> float:
    """Median with NaN (never reached) ranked below everything (as -inf)."""
    return float(np.median(np.where(np.isnan(values), -np.inf, values)))


def censored_median_speedup(speedups, level: float = 0.95) -> dict:
    """Median speed-up over seeds with censored seeds, and an interval with its coverage.

    ``speedups``: one value per seed, ``NaN`` where the candidate never reached the
    baseline's final loss (ranked below every observed value).  The interval is the
    distribution-free one of :func:`companion.rules.statistics.median_interval`: order statistics
    whose coverage of the median is exact whatever the distribution, the narrowest one
    reaching ``level`` when the seeds allow it, else min to max with its smaller coverage
    stated (3 seeds: 75%).  Returns ``n_seeds``, ``n_reached``, ``median``, ``low``,
    ``high`` (``-inf`` stands for "below 0, by an unknown amount"; the median NaN, and its
    text ``below b/2``, where an even number of seeds has one that never reached and one at
    ``b > 0`` in the middle), ``coverage`` and
    ``text``, e.g. ``"0.12 (interval 0.05 to 0.20, 75% coverage; 3 of 3 seeds reached)"``
    (one seed: no interval).
    """
    from ...rules.statistics import median_interval

    v = np.asarray(speedups, dtype=float)
    if v.size == 0:
        raise ValueError("no seeds given.")
    if not 0 < level < 1:
        raise ValueError(f"level must lie in (0, 1); got {level}.")
    if (v[~np.isnan(v)] > 1).any():   # 1 - t*/T is at most 1: +inf read as the best seed
        raise ValueError(f"a speed-up is at most 1 (1 - t*/T); got {v[~np.isnan(v)].max()}: pass speedup()'s values, "
                         "NaN for a seed that never reached the target.")
    mi = median_interval(v, level, nan_as="low")   # a seed that never reached ranks below every speed-up
    fmt = _share_text
    bound = _middle_bound(np.where(np.isnan(v), -np.inf, v))
    median = fmt(mi["median"]) if bound is None else f"below {fmt(bound)}"

    n_reached = int(np.isfinite(v).sum())
    if v.size == 1:
        text = f"{median} (one seed, no interval; {n_reached} of 1 seed reached)"
    else:
        text = (f"{median} (interval {fmt(mi['low'])} to {fmt(mi['high'])}, "
                f"{_coverage_text(mi['coverage'])} coverage; {n_reached} of {v.size} seeds reached)")
    return {"n_seeds": int(v.size), "n_reached": n_reached,
            "median": mi["median"] if bound is None else float("nan"), "low": mi["low"],
            "high": mi["high"], "coverage": mi["coverage"], "text": text}


def paired_difference_interval(diff: pd.DataFrame, level: float = 0.95) -> pd.DataFrame:
    """Mean over seeds of the paired difference at each step, with a t interval over seeds.

    ``diff`` is :func:`paired_loss_difference`'s table.  Seeds are the independent units
    (each is one pair of runs sharing its initial draw and data order), so the interval is
    ``mean +- t_{n-1} * sd / sqrt(n)`` over the ``n`` seeds; ``NaN`` with one seed.
    """
    from scipy import stats

    if not 0 < level < 1:   # level 1 gave an interval of -inf to +inf
        raise ValueError(f"level must lie in (0, 1); got {level}.")
    rows = []
    for step, g in diff.groupby("step"):
        if "seed" in g and g["seed"].duplicated().any():   # one pair counted twice narrows the interval
            raise ValueError(f"seed {g['seed'][g['seed'].duplicated()].iloc[0]} is listed twice at step {step:g}; "
                             "pass each seed's difference once per step (paired_loss_difference of one pair each).")
        d = g["difference"].to_numpy(dtype=float)
        n = d.size
        mean = float(d.mean())
        half = float(stats.t.ppf(0.5 + level / 2, n - 1) * d.std(ddof=1) / np.sqrt(n)) if n > 1 else float("nan")
        rows.append({"step": step, "n_seeds": n, "mean": mean, "low": mean - half, "high": mean + half})
    return pd.DataFrame(rows)
