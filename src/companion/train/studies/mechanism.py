"""Questions 3 and 4 of the mechanism plan (``data/runs/mechanism_plan.md``, addendum 2):
what makes an encoder's symmetry peak early and fall, and how much of the end state is the
initial form left over rather than structure added by training.

The data flow is one way: cached runs (:func:`companion.train.runner.runs.load_runs`) ->
per-run trajectories of a score averaged over layers -> per-run peak and fall -> the
effect of each candidate cause, paired by seed against the book's setting; and, for the
runs that log it (``--log-updates``), the split of each form ``M(t)`` into ``c M(0)`` and
the added part ``R`` (:func:`companion.train.runner.updates.start_split`).

Groups are the optimiser/schedule settings of the plan, read from the run names
(``update-GROUP-...``, ``update-mini-GROUP-...``, ``decomp-mini-GROUP-...``).
"""

from __future__ import annotations

import pandas as pd

from ...base.errors import CompanionError
from ...rules.statistics import one_sample_t, paired_t

__all__ = ["CAUSES", "SPLIT_QUANTITIES", "with_group", "layer_mean_trajectory", "peak_and_fall", "cause_table",
           "split_at_end", "window_table"]

#: (candidate cause of the fall, the group that removes or changes it), against ``adamw``
CAUSES = (
    ("weight decay", "adamw0"),
    ("the decaying schedule", "constant"),
    ("the warm-up (removed)", "nowarmup"),
    ("Adam's normalisation (plain SGD)", "sgd"),
    ("Adam's normalisation (SGD with momentum)", "momentum"),
    ("the book's rate (the paper's rate)", "paperlr"),
)

#: the quantities of the start/added split, as logged by the update recorder
SPLIT_QUANTITIES = ("start_coef", "start_share", "form_symmetry", "added_symmetry", "form_directionality",
                    "added_directionality")

_GROUP = r"^(?:update|decomp)-(?:mini-)?([a-z0-9]+)-"


def with_group(runs: pd.DataFrame) -> pd.DataFrame:
    """``runs`` with a ``group`` column read from the run names; runs not named after a
    group of the plan are dropped."""
    group = runs["run"].str.extract(_GROUP)[0]
    return runs.assign(group=group)[group.notna()].reset_index(drop=True)


def _one_size(rows: pd.DataFrame) -> pd.DataFrame:
    if "size" in rows and rows["size"].nunique() > 1:
        raise CompanionError(f"these runs mix model sizes ({sorted(rows['size'].unique())}); the groups of the "
                             "plan are compared within one size: pass the runs of one size.")
    return rows


def layer_mean_trajectory(runs: pd.DataFrame, quantity: str = "symmetry") -> pd.Series:
    """Per run and step, the mean over layers of ``quantity`` (layer-level rows, ``head == -1``),
    indexed by ``(group, mode, seed, step)``."""
    rows = _one_size(with_group(runs))
    rows = rows[(rows["quantity"] == quantity) & (rows["head"] == -1) & (rows["layer"] >= 0)]
    if rows.empty:
        raise CompanionError(f"no layer-level {quantity!r} rows in these runs; update quantities need runs "
                             "made with --log-updates.")
    bad = rows[rows["value"].isna()]
    if len(bad):   # a mean over the other layers (and a peak over the other steps) would pass over it
        r = bad.iloc[0]
        raise CompanionError(f"run {r['run']}: layer {int(r['layer'])}'s {quantity} at step {int(r['step'])} is not a "
                             "number, so its trajectory, peak and fall cannot be read; leave the run out.")
    return rows.groupby(["group", "mode", "seed", "step"])["value"].mean()


def peak_and_fall(runs: pd.DataFrame, quantity: str = "symmetry") -> pd.DataFrame:
    """Per run (``group, mode, seed``): the largest value of the layer-mean trajectory, the
    step where it is reached, the final value, and the fall (peak minus final, >= 0)."""
    traj = layer_mean_trajectory(runs, quantity)
    keys = ["group", "mode", "seed"]
    g = traj.groupby(level=keys)
    out = pd.DataFrame({"peak": g.max(), "final": g.apply(lambda s: s.sort_index(level="step").iloc[-1]),
                        "peak_step": g.idxmax().map(lambda k: k[-1])})
    out["fall"] = out["peak"] - out["final"]
    return out


def cause_table(runs: pd.DataFrame, quantity: str = "symmetry", mode: str = "encoder", baseline: str = "adamw",
                level: float = 0.95) -> pd.DataFrame:
    """The effect of each candidate cause (:data:`CAUSES`) on the fall: the variant's fall
    minus the baseline's, paired by seed, with its t-interval; and the share of the
    baseline's mean fall that removing the cause removes (``-difference / baseline mean``,
    its interval from the difference's, the baseline mean held fixed).  A cause "drives the
    fall" when the whole interval of the difference lies below 0 (the plan's rule)."""
    pf = peak_and_fall(runs, quantity)
    if (baseline, mode) not in pf.index.droplevel("seed"):
        raise CompanionError(f"no {mode} runs of the baseline group {baseline!r} in these runs.")
    base = pf.xs((baseline, mode), level=("group", "mode"))
    rows = []
    for cause, group in CAUSES:
        if (group, mode) not in pf.index.droplevel("seed"):
            continue
        var = pf.xs((group, mode), level=("group", "mode"))
        est = paired_t(var["fall"], base["fall"], level)
        if est.n == 0:
            continue
        m = float(base["fall"].loc[var.index.intersection(base.index)].mean())
        rows.append(dict(cause=cause, variant=group, n=est.n, baseline_fall=m, variant_fall=float(var["fall"].mean()),
                         difference=est.mean, low=est.low, high=est.high,
                         share_removed=-est.mean / m if m > 0 else float("nan"),
                         share_low=-est.high / m if m > 0 else float("nan"),
                         share_high=-est.low / m if m > 0 else float("nan"),
                         drives_fall=bool(est.n >= 2 and est.high < 0)))
    return pd.DataFrame(rows)


def split_at_end(runs: pd.DataFrame, level: float = 0.95) -> pd.DataFrame:
    """At each run's last logged update step: the mean over layers of each quantity of the
    start/added split, then per ``(group, mode)`` the mean over seeds with its t-interval.
    Also ``form_if_no_start``: ``(1 - start_share) * added_symmetry``, the form's symmetry
    if its start carried no symmetry and were orthogonal in both parts to the added one
    (the gap to ``form_symmetry`` is the cross term and the start's own score)."""
    rows = _one_size(with_group(runs))
    rows = rows[rows["quantity"].isin(SPLIT_QUANTITIES) & (rows["layer"] >= 0)]
    if rows.empty:
        raise CompanionError("no start/added split in these runs; it is logged by runs made with --log-updates "
                             "(companion.train.runner.updates).")
    last = rows.groupby("run")["step"].transform("max")
    end = rows[rows["step"] == last].groupby(["group", "mode", "seed", "quantity"])["value"].mean().unstack("quantity")
    end["form_if_no_start"] = (1 - end["start_share"]) * end["added_symmetry"]
    out = []
    for (group, mode), sub in end.groupby(level=["group", "mode"]):
        row = dict(group=group, mode=mode, n=len(sub))
        for q in list(SPLIT_QUANTITIES) + ["form_if_no_start"]:
            est = one_sample_t(sub[q].to_numpy(), level)
            row.update({q: est.mean, f"{q}_low": est.low, f"{q}_high": est.high})
        out.append(row)
    return pd.DataFrame(out)


def window_table(runs: pd.DataFrame, quantity: str = "update_directionality", fraction: float = 0.1,
                 level: float = 0.95) -> pd.DataFrame:
    """Per ``(size, group, mode)``: the mean over seeds of each run's early-window mean of an update
    quantity (the window of the ``update_structure`` rule,
    :func:`companion.train.runner.updates.window_means`), with its t-interval; e.g. whether a
    decoder's updates are column-dominant (directionality below 0) on their own."""
    from ..runner.updates import window_means

    rows = with_group(runs)
    rows = rows[(rows["head"] == -1) & (rows["layer"] >= 0)]
    if "size" not in rows:
        rows = rows.assign(size="")
    out = []
    for (size, group), sub in rows.groupby(["size", "group"]):
        m = window_means(sub, quantity, fraction)
        for mode, vals in m.groupby(level="mode"):
            est = one_sample_t(vals.to_numpy(), level)
            out.append(dict(size=size, group=group, mode=mode, quantity=quantity, n=est.n, mean=est.mean,
                            low=est.low, high=est.high))
    return pd.DataFrame(out)
