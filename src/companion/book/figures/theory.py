"""Figures for the theory chapters; each takes a tidy DataFrame and returns a Figure."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from .palette import grouped, plain, positive

__all__ = ["objective_score_trajectories", "logits_versus_weights", "first_order_error_scaling",
           "context_ratio_per_type"]


def objective_score_trajectories(history: pd.DataFrame):
    """Symmetry and directionality of the layer forms against training step.

    ``history``: columns ``objective, seed, step, layer, symmetry, directionality`` (as
    returned by :func:`companion.core.tiny_attention.train_objective`, with a ``seed`` column).
    One line per objective: the median over seeds and layers, with the range shaded.
    """
    needed = {"objective", "step", "symmetry", "directionality"}
    missing = needed - set(history.columns)
    if missing:
        raise ValueError(f"history lacks the columns {sorted(missing)}.")
    grouped(history, ("objective", "step"), "objective_score_trajectories")
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.2), constrained_layout=True)
    for ax, score in zip(axes, ("symmetry", "directionality")):
        for objective, grp in history.groupby("objective"):
            g = grp.groupby("step")[score]
            med, lo, hi = g.median(), g.min(), g.max()
            line, = ax.plot(med.index, med.values, label=plain(objective))
            ax.fill_between(med.index, lo.values, hi.values, color=line.get_color(), alpha=0.2)
        ax.set_xlabel("training step")
        ax.set_ylabel(f"{score} score")
        ax.axhline(0, color="0.6", lw=0.8)
    axes[0].legend(frameon=False)
    return fig


def logits_versus_weights(raw, probs, max_rows: int = 6):
    """Attention weight against raw logit ``x_i^T M x_j`` for a few query rows (Prop. 2.1).

    Each query row is one monotone curve: the softmax keeps the order of the logits.
    """
    raw, probs = np.asarray(raw), np.asarray(probs)
    raw, probs = raw.reshape(-1, raw.shape[-1]), probs.reshape(-1, probs.shape[-1])  # heads x rows
    fig, ax = plt.subplots(figsize=(5.2, 3.6))
    for i in range(min(max_rows, raw.shape[0])):
        order = np.argsort(raw[i])
        ax.plot(raw[i][order], probs[i][order], "o-", ms=3, lw=1, label=f"query {i}")
    ax.set_xlabel(r"raw logit $x_i^\top M\, x_j / \sqrt{d_h}$")
    ax.set_ylabel(r"attention weight $\alpha_{ij}$")
    ax.set_title("The softmax keeps the order of the bilinear-form logits")
    ax.legend(frameon=False, fontsize=7, ncol=2)
    fig.tight_layout()
    return fig


def first_order_error_scaling(updates: pd.DataFrame):
    """Error of the first-order update of ``W_q W_k^T`` against the step size (Remark S1.6).

    ``updates``: the table of :func:`companion.core.tiny_attention.implicit_update_errors`
    (columns ``eta`` and ``error``); a slope-2 reference line is drawn through the first point.
    """
    eta = updates["eta"].to_numpy(float)
    err = updates["error"].to_numpy(float)
    positive(eta, "first_order_error_scaling (log axes)", "eta")
    positive(err, "first_order_error_scaling (log axes)", "error")
    fig, ax = plt.subplots(figsize=(5.2, 3.6))
    ax.loglog(eta, err, "o", label="measured error")
    ax.loglog(eta, err[0] * (eta / eta[0]) ** 2, "--", color="k", lw=1, label=r"slope 2 ($\eta^2$)")
    ax.set_xlabel(r"learning rate $\eta$")
    ax.set_ylabel("error of the first-order update")
    ax.set_title(r"The implicit update of $W_{qk}$ is exact to $O(\eta^2)$")
    ax.legend(frameon=False, fontsize=8)
    fig.tight_layout()
    return fig


def _share(v: float) -> str:
    """A share in two decimals, or as many more as keep it off 0, off 1 and on its side of
    one half: 0.996 reads ``0.996``, never ``1.00`` (every type), 0.5004 ``0.5004``."""
    v = float(v)
    for digits in range(2, 18):
        shown = float(f"{v:.{digits}f}")
        if all((shown > m) == (v > m) and (shown < m) == (v < m) for m in (0.0, 0.5, 1.0)):
            break
    return f"{v:.{digits}f}"


def context_ratio_per_type(results: dict):
    """Eq. S96's ratio ``mu_c / mu_p`` per frequent token type, with its bootstrap interval,
    against the type's count; one panel per kind of window.

    ``results``: ``{kind of window: companion.judge.premises.context_ratio_share(...)}``.  The
    premise of Thm. S1.12 asks for a ratio above 1 (dotted) for most occurrences.
    """
    fig, axes = plt.subplots(1, len(results), figsize=(4.6 * len(results), 3.4), sharey=True,
                             constrained_layout=True, squeeze=False)
    for ax, (kind, res) in zip(axes[0], results.items()):
        t = res["per_type"]
        for col in ("count", "ratio", "low", "high"):
            positive(t[col], f"context_ratio_per_type, {kind} windows (log axes)", col)
        excl = (t["low"] > 1) | (t["high"] < 1)
        ax.errorbar(t["count"], t["ratio"], yerr=[t["ratio"] - t["low"], t["high"] - t["ratio"]],
                    fmt="o", ms=2, lw=0.5, color="0.6", alpha=0.6, label="interval contains 1")
        ax.plot(t["count"][excl], t["ratio"][excl], "o", ms=2.5, color="C3", label="interval excludes 1")
        ax.axhline(1.0, ls=":", color="k")
        ax.set_xscale("log"); ax.set_yscale("log")
        ax.set_xlabel("occurrences of the type")
        ax.set_title(plain(f"{kind} windows: share above 1 = {_share(res['bagged'])} bagged "
                     f"({_share(res['share'])} plain)"), fontsize=9)
    axes[0][0].set_ylabel(r"context / prediction count, $\mu_c/\mu_p$")
    axes[0][0].legend(fontsize=7, loc="upper right")
    return fig
