"""Figures of the pretrained-model survey: Fig. 2 (a, b, heatmaps), Figs. S1 and S2.

Every function takes tidy data and returns a :class:`matplotlib.figure.Figure`.

The summary tables are the long form made by :func:`companion.survey.scoring.summarize_survey`
and :func:`companion.survey.scoring.published_summary`: one row per (model, component, score) with
``kind`` (``encoder``/``decoder``), ``n_params``, ``d_model``, ``score``
(``symmetry``/``directionality``), ``median``, ``q25``, ``q75``, ``origin``
(``published``/``computed``) and ``problems``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from .palette import COLORMAPS, KIND_COLORS, KIND_STYLES, grouped, plain, positive

__all__ = [
    "KIND_COLORS",
    "scores_vs_parameters",
    "figure_2_scatter",
    "figure_s1",
    "figure_s2",
    "qk_heatmaps",
    "per_head_scores",
    "pairing_comparison",
    "null_band_table",
    "bias_term_figure",
]

#: encoders blue, decoders vermillion (colour-vision safe, companion.book.figures.palette); the
#: kinds' error bars also differ in line style, so colour is not the only cue
# (KIND_COLORS is imported from companion.book.figures.palette above)
#: problems that make a published value unlike the model's true one
DISTORTING = ("random_init", "gqa_modulo_pairing", "fused_layout", "misprinted_name",
              "wrong_component", "partial_layers")
SCORE_LABELS = {"symmetry": "symmetry score", "directionality": "directionality score"}

_REQUIRED = ["kind", "n_params", "score", "median", "q25", "q75", "origin"]


def _check_summary(df: pd.DataFrame, what: str) -> None:
    if not isinstance(df, pd.DataFrame):
        raise ValueError(f"{what} needs a pandas DataFrame, got {type(df).__name__}.")
    missing = [c for c in _REQUIRED if c not in df.columns]
    if missing:
        raise ValueError(
            f"{what}: the table lacks columns {missing}; build it with "
            "companion.survey.scoring.summarize_survey or published_summary."
        )


def _drawable(rows: pd.DataFrame, what: str) -> None:
    """Refuse to draw empty panels under their titles (they would read as a result)."""
    if rows.dropna(subset=["n_params", "median"]).empty:
        raise ValueError(f"{what}: no row with a parameter count and a median to draw; check the table's "
                         "score, modality and kind columns.")


def null_band_table(null: pd.DataFrame, lo: float = 0.025, hi: float = 0.975) -> pd.DataFrame:
    """From :func:`companion.core.null.null_scores` output: per (d, score) the ``lo``/``hi`` quantiles."""
    for c in ("d", "symmetry", "directionality"):
        if c not in null.columns:
            raise ValueError(f"null table lacks column {c!r}; pass companion.core.null.null_scores output.")
    grouped(null, ("d",), "null_band_table")
    rows = []
    for d, g in null.groupby("d"):
        for score in ("symmetry", "directionality"):
            v = g[score].to_numpy()
            rows.append({"d": int(d), "score": score, "lo": float(np.quantile(v, lo)),
                         "hi": float(np.quantile(v, hi)), "median": float(np.median(v))})
    return pd.DataFrame(rows)


def _draw_scatter(ax, df: pd.DataFrame, score: str, bands: pd.DataFrame | None) -> None:
    sub = df[df["score"] == score].dropna(subset=["n_params", "median"])
    positive(sub["n_params"], "the survey scatter (log x axis)", "n_params")
    if bands is not None and "d_model" in sub.columns:
        b = bands[bands["score"] == score].set_index("d")
        for x, d in zip(sub["n_params"], sub["d_model"]):
            if pd.notna(d) and int(d) in b.index:
                lo, hi = b.at[int(d), "lo"], b.at[int(d), "hi"]
                ax.plot([x, x], [lo, hi], color="0.55", lw=6, alpha=0.35,
                        solid_capstyle="butt", zorder=1)
    for _, r in sub.iterrows():
        color = KIND_COLORS.get(r["kind"], "0.3")
        problems = str(r.get("problems", "") or "")
        distorted = any(p in problems for p in DISTORTING)
        computed = r["origin"] == "computed"
        marker = "*" if computed else ("X" if "random_init" in problems else "o")
        face = "white" if distorted and not computed else color
        yerr = [[max(r["median"] - r["q25"], 0)], [max(r["q75"] - r["median"], 0)]]
        bars = ax.errorbar(r["n_params"], r["median"], yerr=yerr, fmt=marker, color=color,
                           mfc=face, mec=color, ms=11 if computed else 6, lw=1, capsize=2,
                           zorder=3 if computed else 2, label=f"_{r['kind']}")
        for segments in bars[2]:
            segments.set_linestyle(KIND_STYLES.get(r["kind"], "-"))
    ax.set_xscale("log")
    ax.set_xlabel("total parameters")
    ax.set_ylabel(f"median {SCORE_LABELS[score]}")
    ax.axhline(0, color="0.8", lw=0.8, zorder=0)


def _legend(ax, with_null: bool) -> None:
    from matplotlib.lines import Line2D

    handles = [
        Line2D([], [], marker="o", ls=KIND_STYLES["encoder"], lw=1, color=KIND_COLORS["encoder"],
               label="encoder (solid bars)"),
        Line2D([], [], marker="o", ls=KIND_STYLES["decoder"], lw=1, color=KIND_COLORS["decoder"],
               label="decoder (dashed bars)"),
        Line2D([], [], marker="o", ls="", mfc="white", color="0.3",
               label="published, known problem"),
        Line2D([], [], marker="X", ls="", mfc="white", color="0.3",
               label="published, random weights"),
        Line2D([], [], marker="*", ls="", ms=11, color="0.3", label="computed here"),
    ]
    if with_null:
        handles.append(Line2D([], [], color="0.55", lw=6, alpha=0.35,
                              label="random-matrix null (95%)"))
    ax.legend(handles=handles, fontsize=7, loc="best", framealpha=0.8)


def scores_vs_parameters(summary: pd.DataFrame, score: str = "symmetry",
                         null_bands: pd.DataFrame | None = None, title: str | None = None) -> Figure:
    """One panel of Fig. 2a (symmetry) or 2b (directionality): median and IQR vs parameters.

    Filled markers: published rows without a known problem; open markers: published rows
    whose value a known problem distorts; ``X``: rows scored on random weights; stars:
    models computed here.  ``null_bands`` (from :func:`null_band_table`) adds a grey
    bar at each model's parameter count spanning the null distribution at its ``d_model``.
    """
    _check_summary(summary, "scores_vs_parameters")
    if score not in SCORE_LABELS:
        raise ValueError(f"score must be one of {tuple(SCORE_LABELS)}, got {score!r}.")
    _drawable(summary[summary["score"] == score], f"scores_vs_parameters ({score})")
    fig = Figure(figsize=(6, 4), layout="constrained")
    ax = fig.add_subplot()
    _draw_scatter(ax, summary, score, null_bands)
    _legend(ax, null_bands is not None)
    if title:
        ax.set_title(plain(title), fontsize=10)
    return fig


def figure_2_scatter(summary: pd.DataFrame, null_bands: pd.DataFrame | None = None,
                     title: str = "") -> Figure:
    """Fig. 2a and 2b side by side: symmetry and directionality vs total parameters."""
    _check_summary(summary, "figure_2_scatter")
    _drawable(summary, title or "figure_2_scatter")
    fig = Figure(figsize=(11, 4.2), layout="constrained")
    axes = fig.subplots(1, 2)
    for ax, score, tag in zip(axes, ("symmetry", "directionality"), ("a", "b")):
        _draw_scatter(ax, summary, score, null_bands)
        ax.set_title(f"{tag}) {SCORE_LABELS[score]}", fontsize=10, loc="left")
    _legend(axes[1], null_bands is not None)
    if title:
        fig.suptitle(plain(title), fontsize=11)
    return fig


def figure_s1(summary: pd.DataFrame, null_bands: pd.DataFrame | None = None) -> Figure:
    """Fig. S1: vision and audio models (``modality`` column), one marker colour per kind."""
    _check_summary(summary, "figure_s1")
    if "modality" not in summary.columns:
        raise ValueError("figure_s1: the table needs a 'modality' column.")
    sub = summary[summary["modality"].isin(["vision", "audio"])]
    return figure_2_scatter(sub, null_bands, title="vision and audio models")


def figure_s2(summary: pd.DataFrame, null_bands: pd.DataFrame | None = None) -> Figure:
    """Fig. S2: encoder and decoder components of encoder-decoder models.

    Expects one row per (model, component, score); ``kind`` colours the component.
    """
    _check_summary(summary, "figure_s2")
    return figure_2_scatter(summary, null_bands, title="encoder-decoder models by component")


def qk_heatmaps(forms: pd.DataFrame, max_dim: int | None = 128) -> Figure:
    """Heatmaps of bilinear forms as in Fig. 2 (right).

    ``forms``: long table with columns ``panel, row, col, value`` (one panel per matrix;
    rows index the query side).  ``max_dim`` crops each matrix to its top-left corner so
    structure stays visible (``None``: whole matrix).  The colour scale is symmetric
    around 0 per panel.
    """
    for c in ("panel", "row", "col", "value"):
        if c not in forms.columns:
            raise ValueError(f"qk_heatmaps: the table lacks column {c!r} (panel, row, col, value).")
    import numbers

    if max_dim is not None and (isinstance(max_dim, (bool, np.bool_)) or not isinstance(max_dim, numbers.Integral)
                                or max_dim < 1):   # -1 cut the last row and column off, 0 drew nothing
        raise ValueError(f"qk_heatmaps: max_dim must be a whole number of at least 1, or None for the whole "
                         f"matrix; got {max_dim!r}.")
    twice = forms[forms.duplicated(["panel", "row", "col"], keep=False)]
    if not twice.empty:
        raise ValueError(f"qk_heatmaps: panel {twice['panel'].iloc[0]!r} has two values at row "
                         f"{twice['row'].iloc[0]}, col {twice['col'].iloc[0]}; give each matrix a panel name of its own.")
    panels = list(dict.fromkeys(forms["panel"]))
    fig = Figure(figsize=(4.2 * len(panels), 4), layout="constrained")
    axes = np.atleast_1d(fig.subplots(1, len(panels)))
    for ax, name in zip(axes, panels):
        g = forms[forms["panel"] == name]
        M = g.pivot(index="row", columns="col", values="value").to_numpy()
        if max_dim is not None:
            M = M[:max_dim, :max_dim]
        finite = np.abs(M[np.isfinite(M)])
        v = float(finite.max()) if finite.size and finite.max() > 0 else 1.0   # all NaN: no NaN scale
        im = ax.imshow(M, cmap=COLORMAPS["diverging"], vmin=-v, vmax=v, interpolation="nearest")
        ax.set_title(plain(name), fontsize=9)
        ax.set_xlabel("key-side dimension")
        ax.set_ylabel("query-side dimension")
        fig.colorbar(im, ax=ax, shrink=0.8)
    return fig


def per_head_scores(scores: pd.DataFrame, score: str = "symmetry") -> Figure:
    """Per-head scores by layer (dots) with the whole layer's score (line), one panel per model.

    ``scores``: the survey's tidy table (``key, layer, head, pairing, <score>``), head
    ``-1`` for the layer; only ``pairing == "grouped"`` rows are drawn.  A model with two
    stacks (``component`` encoder and decoder, as T5's) gets a panel per stack: in one panel
    its layer line went back and forth between the stacks' layers of one index.
    """
    for c in ("key", "layer", "head", "role", score):
        if c not in scores.columns:
            raise ValueError(f"per_head_scores: the table lacks column {c!r}.")
    if score not in SCORE_LABELS:
        raise ValueError(f"per_head_scores: score must be one of {tuple(SCORE_LABELS)}, got {score!r}.")
    df = scores[scores["pairing"] == "grouped"] if "pairing" in scores.columns else scores
    grouped(df, ("key", "layer", "head"), "per_head_scores")
    if "component" in df.columns:
        df = df.assign(component=df["component"].fillna(""))
        stacks = df.groupby("key", sort=False)["component"].nunique()
        panels = list(dict.fromkeys(zip(df["key"], df["component"])))
        names = [f"{k} ({c})" if stacks[k] > 1 else k for k, c in panels]
        pick = [(df["key"] == k) & (df["component"] == c) for k, c in panels]
    else:
        names = list(dict.fromkeys(df["key"]))
        pick = [df["key"] == k for k in names]
    fig = Figure(figsize=(5 * len(names), 3.6), layout="constrained")
    axes = np.atleast_1d(fig.subplots(1, len(names), squeeze=False)[0])
    rng = np.random.default_rng(0)
    for ax, key, rows in zip(axes, names, pick):
        g = df[rows]
        heads = g[g["head"] >= 0]
        whole = g[g["head"] == -1].sort_values("layer")
        kind = "decoder" if (g["role"] == "causal").any() else "encoder"
        jitter = rng.uniform(-0.2, 0.2, len(heads))
        ax.scatter(heads["layer"] + jitter, heads[score], s=9, alpha=0.6,
                   color=KIND_COLORS[kind], label="single heads")
        ax.plot(whole["layer"], whole[score], color="k", lw=1.5, marker="o", ms=3,
                label="whole layer")
        ax.axhline(0, color="0.8", lw=0.8, zorder=0)
        ax.set_title(plain(key), fontsize=9)
        ax.set_xlabel("layer")
        ax.set_ylabel(SCORE_LABELS[score])
        ax.legend(fontsize=7)
    return fig


def pairing_comparison(scores: pd.DataFrame) -> Figure:
    """Whole-layer scores of a grouped-query model with the correct and the modulo pairing."""
    for c in ("layer", "head", "pairing", "symmetry", "directionality"):
        if c not in scores.columns:
            raise ValueError(f"pairing_comparison: the table lacks column {c!r}.")
    whole = scores[scores["head"] == -1]
    if set(whole["pairing"]) != {"grouped", "modulo"}:
        raise ValueError("pairing_comparison needs rows for both pairings ('grouped', 'modulo').")
    fig = Figure(figsize=(10, 3.6), layout="constrained")
    axes = fig.subplots(1, 2)
    style = {"grouped": dict(color="k", marker="o", label="h // (H/KV)  (how the model computes)"),
             "modulo": dict(color=KIND_COLORS["decoder"], marker="s", ls="--",
                            label="h % KV  (as in the published numbers)")}
    for ax, score in zip(axes, ("symmetry", "directionality")):
        for pairing, g in whole.groupby("pairing"):
            g = g.sort_values("layer")
            ax.plot(g["layer"], g[score], ms=3, lw=1.2, **style[pairing])
        ax.axhline(0, color="0.8", lw=0.8, zorder=0)
        ax.set_xlabel("layer")
        ax.set_ylabel(SCORE_LABELS[score])
    axes[0].legend(fontsize=7)
    return fig


def bias_term_figure(layers: pd.DataFrame, decoders=()) -> Figure:
    """The bias terms' share of the logit variance over keys, per layer, one line per model
    (dashed: the models named in ``decoders``).

    ``layers``: :func:`companion.survey.bias_term.bias_term_table` rows of whole layers (``model,
    layer, share``); depth is drawn as the layer's position in ``[0, 1]`` so models of
    different depth share the axis, and a single (shared) layer is one marker.  Of the whole
    table (a ``head`` column), the rows of whole layers (``head == -1``) are drawn: its heads'
    rows were drawn as layers, and counted in "(N layers)"."""
    for c in ("model", "layer", "share"):
        if c not in layers.columns:
            raise ValueError(f"bias_term_figure: the table lacks column {c!r}.")
    if "head" in layers.columns:
        layers = layers[layers["head"] == -1]
    grouped(layers, ("model", "layer"), "bias_term_figure")
    twice = layers[layers.duplicated(["model", "layer"], keep=False)]
    if not twice.empty:
        raise ValueError(f"bias_term_figure: model {twice['model'].iloc[0]!r} has two rows of layer "
                         f"{twice['layer'].iloc[0]!r}; pass one row per layer (bias_term_table rows with head -1).")
    if layers.dropna(subset=["share"]).empty:
        raise ValueError("bias_term_figure: no row with a share to draw; pass bias_term_table rows of whole layers.")
    fig = Figure(figsize=(7, 3.8), layout="constrained")
    ax = fig.subplots()
    for model, g in layers.groupby("model", sort=False):
        g = g.sort_values("layer")
        depth = g["layer"] / max(1, g["layer"].max()) if len(g) > 1 else pd.Series([0.5])
        ax.plot(depth, 100 * g["share"], marker="o", ms=4, lw=1.2, ls="--" if model in decoders else "-",
                label=plain(f"{model} ({len(g)} layers{', decoder' if model in decoders else ''})"))
    ax.set_xlabel("relative depth of the layer (first = 0, last = 1)")
    ax.set_ylabel("bias terms' share of the logit\nvariance over keys (%)")
    ax.set_ylim(bottom=min(0.0, float(np.nanmin(100 * layers["share"].to_numpy(float)))) if len(layers) else 0)
    ax.legend(fontsize=7)
    return fig
