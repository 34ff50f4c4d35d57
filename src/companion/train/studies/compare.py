"""Comparing cached runs across seeds: final scores, ordered pairs, paired differences.

The training chapters compare groups of runs (encoder against decoder for Fig. 3a/b,
symmetric against standard initialisation for Table 1 and Fig. S5) with a handful of
seeds each.  Three small helpers keep those comparisons the same everywhere:

:func:`final_scores`
    each run's layer-mean score (symmetry or directionality, Eqs. 7-8 of the paper) at
    its last logged step, indexed by ``(mode, init, seed)``;
:func:`ordered_pairs`
    in how many of the ``len(a) * len(b)`` pairs of seeds ``a`` is above ``b`` (the
    "every encoder seed above every decoder seed" reading of Fig. 3a);
:func:`seed_pairs`
    the runs of two initialisations matched by seed (same data order, same masks), for
    paired differences;
:func:`top_layers`
    the layer in which each run ends the most symmetric (Fig. 3c's "late layers" reading);
:func:`seed_mean_curve`
    the layer-mean score over training, averaged over the runs' seeds (where a Fig. 3a
    curve peaks and where it ends).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["final_scores", "ordered_pairs", "seed_mean_curve", "seed_pairs", "top_layers", "value_at_step"]

_SCORES = ("symmetry", "directionality")


def final_scores(runs: pd.DataFrame, quantity: str = "symmetry",
                 keys=("mode", "init", "seed")) -> pd.Series:
    """Layer-mean ``quantity`` of each run at its own last logged step.

    ``runs`` is a table from :func:`companion.train.runner.runs.load_runs`.  Returns a Series
    indexed by ``keys`` (columns of ``runs`` that tell its runs apart, e.g. a ``corpus``
    column added by the caller); a run that never logged ``quantity`` is absent, and a run one
    of whose layers gave no number reads NaN (the mean of its other layers is not its score).
    """
    if quantity not in _SCORES:
        raise ValueError(f"quantity must be one of {_SCORES}; got {quantity!r}.")
    keys = list(keys)
    rows = runs[(runs["quantity"] == quantity) & (runs["head"] == -1)]
    last = rows.groupby("run")["step"].transform("max")
    rows = rows[rows["step"] == last]
    if rows.duplicated(keys + ["layer"]).any():
        raise ValueError(f"two runs share one ({', '.join(keys)}): select one group of runs before "
                         "comparing them (e.g. one size and one corpus), or pass keys that tell them apart.")
    return rows.groupby(keys)["value"].mean(skipna=False)


def seed_mean_curve(runs: pd.DataFrame, quantity: str = "symmetry") -> pd.Series:
    """Layer-mean ``quantity`` at each logged step, averaged over the seeds of ``runs``.

    Each seed's score at a step is the mean over its layers (the run's whole form per
    layer, ``head == -1``); the curve is the mean of those over seeds, indexed by step.
    Pass one group of runs (e.g. the encoders of one size and initialisation).  A layer
    without a number makes its seed's score, and so the curve at that step, NaN.
    """
    if quantity not in _SCORES:
        raise ValueError(f"quantity must be one of {_SCORES}; got {quantity!r}.")
    rows = runs[(runs["quantity"] == quantity) & (runs["head"] == -1)]
    return rows.groupby(["step", "seed"])["value"].mean(skipna=False).groupby("step").mean(skipna=False)


def top_layers(runs: pd.DataFrame, quantity: str = "symmetry") -> pd.Series:
    """The layer with the highest ``quantity`` in each run at its own last logged step.

    Returns a Series of layer indices (0 the first layer) indexed by run name.  Fig. 3c of
    the paper finds the late encoder layers the most symmetric: count the runs whose top
    layer is in the later half, ``(top_layers(runs) >= n_layers // 2).sum()``.
    """
    if quantity not in _SCORES:
        raise ValueError(f"quantity must be one of {_SCORES}; got {quantity!r}.")
    rows = runs[(runs["quantity"] == quantity) & (runs["head"] == -1)]
    rows = rows[rows["step"] == rows.groupby("run")["step"].transform("max")]
    bad = rows[rows["value"].isna()]
    if len(bad):   # idxmax passed over it: the top layer would be read among the others
        r = bad.iloc[0]
        raise ValueError(f"run {r['run']}: layer {int(r['layer'])}'s {quantity} at its last step {int(r['step'])} is "
                         "not a number, so its top layer cannot be told; leave the run out, or name it as broken.")
    return rows.loc[rows.groupby("run")["value"].idxmax()].set_index("run")["layer"].astype(int)


def ordered_pairs(higher, lower) -> tuple[int, int]:
    """``(k, n)``: ``higher[i] > lower[j]`` holds for ``k`` of the ``n`` pairs ``(i, j)``.

    For Fig. 3b's ordering (the decoder the more column-dominant, i.e. lower) pass the
    encoders' directionality as ``higher`` and the decoders' as ``lower``.
    """
    a = pd.Series(higher, dtype=float).to_numpy()
    b = pd.Series(lower, dtype=float).to_numpy()
    for side, v in (("higher", a), ("lower", b)):
        if np.isnan(v).any():   # NaN > x is False: its pairs would count as 'not above', not as unknown
            raise ValueError(f"the {side} values hold nan at position {int(np.flatnonzero(np.isnan(v))[0])} (a seed "
                             "without a number); leave that seed out of both groups, or name it as broken.")
    return int((a[:, None] > b[None, :]).sum()), int(a.size * b.size)


def seed_pairs(runs: pd.DataFrame, mode: str, baseline: str = "standard",
               candidate: str = "symmetric") -> dict:
    """``{seed: (baseline run, candidate run)}`` of ``mode``, for seeds with both cached."""
    out = {}
    sub = runs[runs["mode"] == mode]
    for seed in sorted(sub["seed"].unique()):
        b = sub[(sub["init"] == baseline) & (sub["seed"] == seed)]
        c = sub[(sub["init"] == candidate) & (sub["seed"] == seed)]
        if b.empty or c.empty:
            continue
        if b["run"].nunique() > 1 or c["run"].nunique() > 1:
            raise ValueError(f"seed {seed} of {mode} has more than one {baseline} or {candidate} run: "
                             "select one group of runs first.")
        out[int(seed)] = (b, c)
    return out


def value_at_step(rows: pd.DataFrame, step: float) -> pd.Series:
    """Per seed of ``rows`` (one quantity of one arm, one run per seed, a value per logged step):
    its value at ``step``, linear between the two logged steps around it where ``step`` is not
    logged itself (as the rules' Table 1 yardstick reads a loss at 74% of the horizon, between
    two evaluations).  NaN where the run logged no step on one side of it, or either value
    around it is not a number: never the nearest value nor a mean over the other seeds."""
    out = {}
    for seed, g in rows.groupby("seed"):
        g = g.sort_values("step")
        steps, vals = g["step"].to_numpy(dtype=float), g["value"].to_numpy(dtype=float)
        if len(np.unique(steps)) < len(steps):
            raise ValueError(f"seed {seed} logs {rows['quantity'].iloc[0] if 'quantity' in rows else 'a value'} "
                             "twice at one step (two runs, or a history logged twice); pass one run per seed.")
        hi = int(np.searchsorted(steps, step))
        if hi < len(steps) and steps[hi] == step:
            out[seed] = float(vals[hi])
        elif 0 < hi < len(steps):
            w = (step - steps[hi - 1]) / (steps[hi] - steps[hi - 1])
            out[seed] = float(vals[hi - 1] + w * (vals[hi] - vals[hi - 1]))   # NaN on either side stays NaN
        else:
            out[seed] = float("nan")
    return pd.Series(out, dtype=float)
