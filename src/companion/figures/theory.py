"""Figures for the theory chapters; each takes a tidy DataFrame and returns a Figure."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd

__all__ = ["objective_score_trajectories"]


def objective_score_trajectories(history: pd.DataFrame):
    """Symmetry and directionality of the layer forms against training step.

    ``history``: columns ``objective, seed, step, layer, symmetry, directionality`` (as
    returned by :func:`companion.tiny_attention.train_objective`, with a ``seed`` column).
    One line per objective: the median over seeds and layers, with the range shaded.
    """
    needed = {"objective", "step", "symmetry", "directionality"}
    missing = needed - set(history.columns)
    if missing:
        raise ValueError(f"history lacks the columns {sorted(missing)}.")
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.2), constrained_layout=True)
    for ax, score in zip(axes, ("symmetry", "directionality")):
        for objective, grp in history.groupby("objective"):
            g = grp.groupby("step")[score]
            med, lo, hi = g.median(), g.min(), g.max()
            line, = ax.plot(med.index, med.values, label=objective)
            ax.fill_between(med.index, lo.values, hi.values, color=line.get_color(), alpha=0.2)
        ax.set_xlabel("training step")
        ax.set_ylabel(f"{score} score")
        ax.axhline(0, color="0.6", lw=0.8)
    axes[0].legend(frameon=False)
    return fig
