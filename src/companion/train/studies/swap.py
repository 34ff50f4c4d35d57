"""The objective swap: a trained model fine-tuned under the other objective, against a
control that keeps its own (plan: ``data/runs/objective_swap_plan.md``; rule
``objective_swap`` in ``data/verdict_rules.yaml``).

Runs are ``data/runs/swap-<model>-<role>-s<seed>`` with ``role`` ``swap`` or ``control``.
The compared quantity is the mean over layers of the layer forms' symmetry (and
directionality) at the last logged step; the step-0 values are the checkpoint's own scores.
The claim read causally (Sec. 4): for a pretrained encoder, the causal next-token swap ends
*less* symmetric and *more* column-dominant (lower directionality) than its masked-LM
control; for a pretrained decoder, the bidirectional masked swap ends *more* symmetric.
Each prediction is turned into a difference that the claim says is > 0 (control minus
swap for the encoder, swap minus control for the decoder), paired by seed, and read by
:func:`companion.rules.statistics.directional_outcome` with the random-form null band of the
model's width and depth as the smallest effect of interest.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from ...rules.rulebook import load_rules, rule
from ...rules.power import detectable_effect
from ...rules.statistics import directional_outcome, p_above, p_below, paired_t, power_spread, seeds_without_a_number
from ..runner.runs import load_runs
from ...base.errors import CompanionError

__all__ = ["swap_runs", "layer_means", "end_values", "layer_changes", "swap_tests", "SIGNS"]

class _Signs(dict):
    """A dict whose missing key is a one-line error naming the bodies and quantities it has."""

    def __missing__(self, key):
        bodies, quantities = sorted({b for b, _ in self}), sorted({q for _, q in self})
        raise CompanionError(f"the objective swap predicts no sign for {key!r}: its signs are for the bodies "
                             f"{', '.join(bodies)} and the quantities {', '.join(quantities)}; name one of those in the "
                             "rule (bodies, quantity, also), or add the body's predicted sign to "
                             "companion.train.studies.swap.SIGNS with the claim it comes from.")


#: per body and quantity: +1 when the claim predicts swap > control, -1 when swap < control
SIGNS = _Signs({("minilm", "symmetry"): -1, ("minilm", "directionality"): -1,
                ("smollm2", "symmetry"): +1, ("smollm2", "directionality"): +1})

_NAME = re.compile(r"^swap-(?P<body>[a-z0-9]+)-(?P<role>swap|control)-s(?P<seed>\d+)$")


def swap_runs(body: str = "minilm") -> pd.DataFrame | None:
    """The finished runs of one body (``minilm`` or ``smollm2``) with ``body`` and ``role``
    columns; ``None`` when none is cached."""
    try:
        runs = load_runs(pattern=f"swap-{body}-*")
    except FileNotFoundError:
        return None
    parsed = runs["run"].str.extract(_NAME)
    return runs.assign(body=parsed["body"], role=parsed["role"])


def layer_means(runs: pd.DataFrame, quantity: str) -> pd.DataFrame:
    """Per run and logged step: the mean over layers of the whole-layer ``quantity``."""
    rows = runs[(runs["quantity"] == quantity) & (runs["head"] == -1)]
    # a layer that gave no number makes the mean NaN rather than being skipped
    return (rows.groupby(["run", "role", "seed", "step"])["value"]
            .agg(lambda v: v.mean() if v.notna().all() else np.nan).rename(quantity).reset_index())


def end_values(runs: pd.DataFrame, quantity: str, step: str = "last") -> pd.DataFrame:
    """``quantity`` (mean over layers) per seed and role at the run's last (or first) step."""
    m = layer_means(runs, quantity)
    pick = m.groupby("run")["step"].transform("max" if step == "last" else "min")
    end = m[m["step"] == pick]
    runs_of = end.groupby(["seed", "role"])["run"].unique()
    if len(twice := runs_of[runs_of.map(len) > 1]):   # a pivot would average them into one seed's value
        (seed, role), names = twice.index[0], sorted(twice.iloc[0])
        raise CompanionError(f"seed {seed} has {len(names)} {role} runs ({', '.join(names)}); its value would be "
                             "their mean: keep one run per seed and role (move the other out of data/runs).")
    return end.pivot_table(index="seed", columns="role", values=quantity)


def layer_changes(runs: pd.DataFrame, quantity: str) -> pd.DataFrame:
    """Per layer, role and seed: ``quantity`` of the whole-layer form at the run's last logged
    step minus its value at step 0 (the checkpoint).  Columns ``layer, role, seed, change``."""
    rows = runs[(runs["quantity"] == quantity) & (runs["head"] == -1)]
    first = rows[rows["step"] == rows.groupby("run")["step"].transform("min")]
    last = rows[rows["step"] == rows.groupby("run")["step"].transform("max")]
    keys = ["run", "role", "seed", "layer"]
    both = last.set_index(keys)["value"] - first.set_index(keys)["value"]
    return both.rename("change").reset_index().drop(columns="run")


def swap_tests(rules: dict | None = None) -> pd.DataFrame:
    """The ``objective_swap`` rule on the cached runs: one row per body and quantity.

    ``estimate`` is the paired difference in the predicted direction (> 0: as the claim
    says), ``swap_minus_control`` the same without the sign; ``sesoi`` is the random-form
    null band of the model's width and depth; ``judged`` is False for a body with fewer
    seeds than ``min_seeds`` (reported, not judged); ``below_sesoi_too`` marks an interval that
    lies above 0 and also wholly below the smallest effect of interest (rules v2 read it
    'negligible'); ``outcome_first`` is what version 1's rule read, with its random-form band
    ``sesoi_first``."""
    from ...rules.power import directional_power
    from ...rules.statistics import deciding_p, directional_outcome_first
    from .evidence import null_band, published_iqr_width

    rules = rules if rules is not None else load_rules()
    r = rule("objective_swap", rules)
    level = r["framework"].get("level", 0.95)
    rows = []
    for body in r["bodies"]:
        runs = swap_runs(body)
        if runs is None:
            continue
        runs = runs[runs["seed"].isin(r["seeds"])]
        for q in [r["quantity"]] + list(r.get("also", [])):
            end = end_values(runs, q)
            if not {"swap", "control"} <= set(end.columns):
                continue
            sign = SIGNS[(body, q)]
            est = paired_t(sign * end["swap"], sign * end["control"], level)
            raw = paired_t(end["swap"], end["control"], level)
            band_first = null_band(runs, q)
            band = published_iqr_width(q) if r["sesoi"] == "published-iqr-width" else float(r["sesoi"])
            no_number = seeds_without_a_number(end["swap"], end["control"])   # rules v2.3: never dropped
            judged = est.n >= r.get("min_seeds", 3) and not no_number
            outcome = directional_outcome(est, band, r.get("min_seeds", 3), gate=not no_number)
            pw = directional_power(est.n, power_spread(est), band, level)   # no spread: no power, as no outcome
            rows.append(dict(claim=r["key"], body=body, quantity=q, n=est.n, estimate=est.mean,
                             low=est.low, high=est.high, sd=est.sd, swap_minus_control=raw.mean,
                             swap_minus_control_low=raw.low, swap_minus_control_high=raw.high,
                             sesoi=band, judged=judged, outcome=outcome,
                             outcome_first=directional_outcome_first(est, band_first, r.get("min_seeds", 3)),
                             sesoi_first=band_first,
                             below_sesoi_too=bool(est.n > 1 and est.low > 0 and est.high < band),
                             detect_holds=pw["detect_holds"], p_refuted_at_0=pw["p_refuted_at_0"],
                             p_decides=deciding_p(est, outcome, band) if est.n > 1 else np.nan,
                             primary=q == r["quantity"],
                             detectable=detectable_effect(est.n, power_spread(est), level) if est.n > 1 else np.nan,
                             p_holds=p_above(est) if est.n > 1 else np.nan,
                             p_refuted=p_below(est, band) if est.n > 1 else np.nan,
                             seeds=", ".join(str(s) for s in sorted(end.dropna().index)),
                             seeds_without_a_number=", ".join(map(str, no_number))))
    return pd.DataFrame(rows)
