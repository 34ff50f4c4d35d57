"""Figures of the training experiments (Fig. 3, S3-S5).  Each takes a tidy table as made by
:func:`companion.train.runner.runs.load_runs` (columns step, quantity, layer, head, value, label,
seed, ...) and returns a matplotlib Figure."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib import colormaps

from .palette import COLORMAPS, CYCLE, grouped, plain

__all__ = ["scores_over_training", "layers_over_training", "loss_curves", "loss_difference",
           "scores_against_tokens", "objective_swap_curves", "objective_swap_layers"]

_YLABEL = {"symmetry": "symmetry score", "directionality": "directionality score",
           "eval_loss": "held-out loss", "train_loss": "training loss"}


def _layer_rows(df: pd.DataFrame, quantity: str) -> pd.DataFrame:
    sub = df[(df["quantity"] == quantity) & (df["head"] == -1)]
    if sub.empty:
        raise ValueError(f"the table has no per-layer rows of {quantity!r}.")
    return grouped(sub, ("label", "step", "layer", "seed"), f"the {quantity!r} rows")


def scores_over_training(df: pd.DataFrame, quantity: str = "symmetry", ax=None, title=None):
    """Median over layers (and seeds) with the interquartile range, one curve per label (Fig. 3a/b)."""
    sub = _layer_rows(df, quantity)
    fig, ax = (ax.figure, ax) if ax is not None else plt.subplots(figsize=(5, 3.2))
    for label, g in sub.groupby("label", sort=False):
        q = g.groupby("step")["value"].quantile([0.25, 0.5, 0.75]).unstack()
        line, = ax.plot(q.index, q[0.5], label=plain(label))
        ax.fill_between(q.index, q[0.25], q[0.75], color=line.get_color(), alpha=0.2, lw=0)
    ax.set_xlabel("training step")
    ax.set_ylabel(_YLABEL.get(quantity, quantity))
    ax.axhline(0, color="0.6", lw=0.6)
    ax.legend(fontsize=7)
    if title:
        ax.set_title(plain(title), fontsize=9)
    fig.tight_layout()
    return fig


def layers_over_training(df: pd.DataFrame, quantity: str = "symmetry", title=None):
    """One panel per label, one curve per layer (median over seeds) (Fig. 3c/d, S4, S5c)."""
    sub = _layer_rows(df, quantity)
    labels = list(dict.fromkeys(sub["label"]))
    fig, axes = plt.subplots(1, len(labels), figsize=(3.6 * len(labels), 3.0), sharey=True, squeeze=False)
    n_layers = int(sub["layer"].max()) + 1
    colors = colormaps[COLORMAPS["sequential"]](np.linspace(0, 0.9, n_layers))
    for ax, label in zip(axes[0], labels):
        g = sub[sub["label"] == label]
        for layer, gl in g.groupby("layer"):
            m = gl.groupby("step")["value"].median()
            ax.plot(m.index, m.values, color=colors[int(layer)], label=f"layer {int(layer) + 1}")
        ax.set_title(plain(label), fontsize=9)
        ax.set_xlabel("training step")
        ax.axhline(0, color="0.6", lw=0.6)
    axes[0][0].set_ylabel(_YLABEL.get(quantity, quantity))
    axes[0][-1].legend(fontsize=7)
    if title:
        fig.suptitle(plain(title), fontsize=10)
    fig.tight_layout()
    return fig


def loss_curves(df: pd.DataFrame, quantity: str = "eval_loss", ax=None, logy=False):
    """Loss against step: thin lines per seed, thick line for the mean over seeds (Fig. S5a)."""
    sub = df[df["quantity"] == quantity]
    if sub.empty:
        raise ValueError(f"the table has no {quantity!r} rows.")
    grouped(sub, ("label", "step", "seed"), f"the {quantity!r} rows")
    fig, ax = (ax.figure, ax) if ax is not None else plt.subplots(figsize=(5, 3.2))
    for label, g in sub.groupby("label", sort=False):
        mean = g.groupby("step")["value"].mean()
        line, = ax.plot(mean.index, mean.values, lw=2, label=plain(label))
        for _, gs in g.groupby("seed"):
            gs = gs.sort_values("step")
            ax.plot(gs["step"], gs["value"], lw=0.6, alpha=0.5, color=line.get_color())
    ax.set_xlabel("training step")
    ax.set_ylabel(_YLABEL.get(quantity, quantity))
    if logy:
        ax.set_yscale("log")
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def loss_difference(table: pd.DataFrame, ax=None, title=None,
                    ylabel: str = "candidate - baseline held-out loss"):
    """Paired loss difference against step, one line per seed, from
    :func:`companion.train.studies.speedup.paired_loss_difference`; below zero the candidate is ahead."""
    need = {"seed", "step", "difference"}
    if not need <= set(table.columns):
        raise ValueError(f"the table needs the columns {sorted(need)}; "
                         "make it with companion.train.studies.speedup.paired_loss_difference.")
    grouped(table, ("seed", "step"), "loss_difference")
    fig, ax = (ax.figure, ax) if ax is not None else plt.subplots(figsize=(5, 3.2))
    for seed, g in table.groupby("seed"):
        g = g.sort_values("step")
        ax.plot(g["step"], g["difference"], marker=".", lw=1, label=plain(f"seed {seed}"))
    ax.axhline(0, color="0.3", lw=0.8)
    ax.set_xlabel("training step")
    ax.set_ylabel(plain(ylabel))
    ax.legend(fontsize=7)
    if title:
        ax.set_title(plain(title), fontsize=9)
    fig.tight_layout()
    return fig


def scores_against_tokens(curves: dict, quantity: str = "symmetry", bands: dict | None = None,
                          title=None):
    """Layer-mean score against tokens seen, log-log, encoder solid and decoder dashed.

    ``curves`` maps a label (one model shape) to ``{"encoder": Series, "decoder": Series}``
    indexed by tokens seen (:func:`companion.train.studies.compute_study.layer_mean_curve` with the step
    index multiplied by the tokens per step); step 0 cannot be drawn on a log axis and is
    left out.  ``bands`` maps the same labels to a null level drawn as a dotted line.
    Non-positive values (possible for directionality) are drawn as magnitudes when
    ``quantity`` is ``"directionality"``, which the axis label says.
    """
    if not curves:
        raise ValueError("no curves to draw; pass {label: {'encoder': series, 'decoder': series}}.")
    drawn = [(-c if quantity == "directionality" else c) for pair in curves.values() for c in pair.values()]
    if not any((d[d.index > 0] > 0).any() for d in drawn):
        raise ValueError(f"no positive {quantity} value to draw on a log axis; were the curves made "
                         f"with curve_by_tokens(..., {quantity!r})?")
    fig, ax = plt.subplots(figsize=(5.6, 3.6))
    colors = [CYCLE[i % len(CYCLE)] for i in range(len(curves))]
    hidden = 0   # values a log axis cannot show: counted and said on the figure, never dropped silently
    undrawn = []   # and the null levels it cannot show
    for color, (label, pair) in zip(colors, curves.items()):
        for mode, style in (("encoder", "-"), ("decoder", "--")):
            if mode not in pair:
                continue
            c = pair[mode]
            c = c[c.index > 0]
            y = -c if quantity == "directionality" else c
            hidden += int((y.notna() & ~(y > 0)).sum())
            ax.plot(c.index, y.where(y > 0), style, color=color, label=plain(f"{label} {mode}"))
        if bands and label in bands:
            if bands[label] > 0:   # NaN and a level at or below 0 a log axis cannot draw: said below
                ax.axhline(bands[label], color=color, ls=":", lw=0.8)
            else:
                undrawn.append(plain(str(label)))
    ax.set_xscale("log")
    ax.set_yscale("log")
    if hidden:
        ax.text(0.01, 0.01, f"{hidden} value{'s' if hidden > 1 else ''} at or below 0 not drawn (log axis)",
                transform=ax.transAxes, fontsize=7, va="bottom")
    if undrawn:
        ax.text(0.01, 0.06 if hidden else 0.01, f"null level of {', '.join(undrawn)} at or below 0 or missing, "
                "not drawn (log axis)", transform=ax.transAxes, fontsize=7, va="bottom")
    ax.set_xlabel("tokens seen")
    ax.set_ylabel("- layer-mean directionality" if quantity == "directionality"
                  else f"layer-mean {_YLABEL.get(quantity, quantity)}")
    ax.legend(fontsize=8, ncol=2)
    if title:
        ax.set_title(plain(title), fontsize=9)
    fig.tight_layout()
    return fig


_ROLE_COLORS = {"control": CYCLE[0], "swap": CYCLE[1]}


def objective_swap_curves(runs: pd.DataFrame):
    """The objective swap against its control: layer-mean symmetry and directionality and the
    held-out loss (each under its own objective, and under the other one where the runs logged
    it) against the step, one thin line per run and the mean over seeds thick.  ``runs``: :func:`companion.train.studies.swap.swap_runs` (``role``
    column ``swap`` or ``control``)."""
    if "role" not in runs.columns:
        raise ValueError("objective_swap_curves: the table lacks the column 'role' (use swap_runs).")
    unknown = sorted(set(map(str, runs["role"])) - set(_ROLE_COLORS))
    if unknown:
        raise ValueError(f"objective_swap_curves: roles {unknown} are neither 'control' nor 'swap' (use swap_runs).")
    grouped(runs, ("run", "step"), "objective_swap_curves")
    panels = ["symmetry", "directionality", "eval_loss"]
    if (runs["quantity"] == "eval_loss_other").any():  # runs that also scored the objective they left
        panels.append("eval_loss_other")
    fig, axes = plt.subplots(1, len(panels), figsize=(4.7 * len(panels), 3.4))
    for ax, q in zip(axes, panels):
        rows = runs[runs["quantity"] == q]
        if not q.startswith("eval_loss"):
            rows = rows[rows["head"] == -1]
        per_run = rows.groupby(["role", "run", "step"])["value"].mean().reset_index()
        for role, g in per_run.groupby("role"):
            for _, r in g.groupby("run"):
                ax.plot(r["step"], r["value"], color=_ROLE_COLORS[role], lw=0.6, alpha=0.5)
            m = g.groupby("step")["value"].mean()
            ax.plot(m.index, m.values, color=_ROLE_COLORS[role], lw=2,
                    label=f"{role} ({g['run'].nunique()} seeds)")
        ax.set_xlabel("fine-tuning step")
        ax.set_ylabel({"eval_loss": "held-out loss (own objective)",
                       "eval_loss_other": "held-out loss (the other objective)"}.get(
                           q, _YLABEL.get(q, q) + " (mean over layers)"))
        ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def objective_swap_layers(runs: pd.DataFrame):
    """How far each layer's symmetry and directionality moved from the checkpoint, swap against
    control: the change from step 0 to the last step per layer (mean over seeds; one thin line
    per seed when there are several)."""
    from ...train.studies.swap import layer_changes

    if "role" not in runs.columns:
        raise ValueError("objective_swap_layers: the table lacks the column 'role' (use swap_runs).")
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.2))
    for ax, q in zip(axes, ("symmetry", "directionality")):
        ch = layer_changes(runs, q)
        for role, g in ch.groupby("role"):
            if g["seed"].nunique() > 1:
                for _, r in g.groupby("seed"):
                    ax.plot(r["layer"], r["change"], color=_ROLE_COLORS[role], lw=0.6, alpha=0.4)
            m = g.groupby("layer")["change"].mean()
            ax.plot(m.index, m.values, color=_ROLE_COLORS[role], lw=2, marker="o", ms=3,
                    label=f"{role} ({g['seed'].nunique()} seed{'s' if g['seed'].nunique() > 1 else ''})")
        ax.axhline(0, color="0.6", lw=0.8)
        ax.set_xlabel("layer")
        ax.set_ylabel(f"change in {_YLABEL[q]}\nfrom the checkpoint")
        ax.legend(fontsize=7)
    fig.tight_layout()
    return fig
