"""Figures of the chapter "Measuring structure" (Defs. 3.1/3.2, Props. S1.17/S1.18)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from .palette import COLORMAPS, CYCLE, KIND_COLORS, grouped, plain, positive

ENCODER_COLOR = KIND_COLORS["encoder"]
DECODER_COLOR = KIND_COLORS["decoder"]


def _some(rows: pd.DataFrame, summary: pd.DataFrame, what: str, score: str) -> None:
    """Refuse to draw an empty panel under a title (it would read as a result)."""
    if rows.empty:
        raise ValueError(f"{what}: the summary has no row of score {score!r} (it has "
                         f"{sorted(map(str, set(summary['score'])))}); pass companion.core.null.null_summary rows.")


def symmetry_random_limit(summary: pd.DataFrame, claimed_constant: float = 8.0) -> plt.Figure:
    """Mean symmetry score of i.i.d. random n x n matrices against n, with c/n reference lines.

    ``summary``: rows of :func:`companion.core.null.null_summary` for ``score == "symmetry"``;
    of a summary that also holds low-rank products (a ``rank`` other than -1), only the i.i.d.
    rows (``rank == -1``) are drawn: the limit is that of i.i.d. entries.
    """
    s = summary[summary["score"] == "symmetry"].sort_values("d")
    _some(s, summary, "symmetry_random_limit", "symmetry")
    if "rank" in s.columns:
        s = s[s["rank"] == -1]
        if s.empty:
            raise ValueError("symmetry_random_limit: the summary has no row of i.i.d. entries (rank -1); pass "
                             "companion.core.null.null_summary of null_scores(d) drawn without a rank.")
    n = s["d"].to_numpy(float)
    positive(n, "symmetry_random_limit (log axes)", "d")
    positive(s["mean"], "symmetry_random_limit (log axes)", "mean")
    fig, ax = plt.subplots(figsize=(5.2, 3.6))
    sem = s["std"].to_numpy() / np.sqrt(s["n"].to_numpy())
    ax.errorbar(n, s["mean"], yerr=2 * sem, fmt="o", color=ENCODER_COLOR,
                label="measured mean (±2 s.e.)")
    grid = np.geomspace(n.min(), n.max(), 100)
    ax.plot(grid, 1 / grid, "-", color="k", lw=1, label="1/n")
    ax.plot(grid, claimed_constant / grid, "--", color=CYCLE[3], lw=1,
            label=f"{claimed_constant:g}/n (Prop. S1.17 as printed)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("matrix size n")
    ax.set_ylabel("mean symmetry score")
    ax.legend(frameon=False, fontsize=8)
    ax.set_title("Symmetry of random matrices")
    fig.tight_layout()
    return fig


def null_bands(summary: pd.DataFrame, score: str = "directionality") -> plt.Figure:
    """Median and 95% band of a score for random matrices, against the dimension d.

    One line per ``rank`` in the summary (``-1`` = i.i.d. entries); low-rank products whose
    rank grows with d (``rank = d // 4`` at each d, one point per rank) are one line per ratio
    ``d / rank`` ("rank d/4") instead, whichever makes fewer lines.  Every row is drawn, the
    colours cycling (four fixed colours left out every line past the fourth).
    """
    s = summary[summary["score"] == score]
    _some(s, summary, "null_bands", score)
    grouped(s, ("d", "rank"), "null_bands")
    rank = s["rank"].to_numpy()
    low = rank != -1
    ratio = np.where(low, s["d"].to_numpy(float) / np.where(low, rank, 1), np.nan)
    by_ratio = low.any() and len(set(ratio[low])) < len(set(rank[low]))

    def named(r, q) -> tuple:   # (sort key, label) of one line
        if r == -1:
            return (0, 0.0), "i.i.d. entries"
        if by_ratio:
            return (1, q), f"Wq^T Wk, rank d/{q:g}" if float(q).is_integer() else f"Wq^T Wk, rank {1 / q:.3g} d"
        return (1, float(r)), f"Wq^T Wk, rank {r}"

    keys = [named(r, q) for r, q in zip(rank, ratio)]
    s = s.assign(_line=[k[1] for k in keys], _order=[k[0] for k in keys])
    fig, ax = plt.subplots(figsize=(5.2, 3.6))
    lines = sorted(dict(zip(s["_line"], s["_order"])).items(), key=lambda kv: kv[1])
    for i, (label, _) in enumerate(lines):
        color = CYCLE[i % len(CYCLE)]
        grp = s[s["_line"] == label].sort_values("d")
        ax.fill_between(grp["d"], grp["q0.025"], grp["q0.975"], color=color, alpha=0.2)
        ax.plot(grp["d"], grp["q0.5"], "o-", color=color, label=label + " (median, 95% band)")
    ax.axhline(0, color="k", lw=0.6)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("dimension d")
    ax.set_ylabel(f"{score} score")
    ax.set_ylim(-1.05, 1.05)
    ax.legend(frameon=False, fontsize=8, loc="lower right")
    ax.set_title(f"{score.capitalize()} of random matrices")
    fig.tight_layout()
    return fig


def matrix_heatmap(M, title: str = "", ax=None) -> plt.Figure:
    """Heatmap of a square matrix with a symmetric colour scale (rows: query side)."""
    M = np.asarray(M, dtype=float)
    if ax is None:
        fig, ax = plt.subplots(figsize=(3.4, 3.0))
    else:
        fig = ax.figure
    finite = np.abs(M[np.isfinite(M)])   # a NaN entry made the quantile NaN, the scale +-0.1
    v = float(np.quantile(finite, 0.99)) if finite.size else 0.0
    v = v if v > 0 else 1.0
    im = ax.imshow(M, cmap=COLORMAPS["diverging"], vmin=-v, vmax=v)
    ax.set_title(plain(title), fontsize=9)
    ax.set_xlabel("key side (columns)")
    ax.set_ylabel("query side (rows)")
    fig.colorbar(im, ax=ax, fraction=0.046)
    return fig
