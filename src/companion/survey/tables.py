"""Tidy tables of structure scores per layer (and per head) of a checkpoint.

One row per (component, layer, head) with ``head = -1`` for the whole layer's form
``M = sum_h Wq_h^T Wk_g(h)`` (Eq. S20).  Cross-attention layers are left out: their query
and key read different sequences, so ``M`` is not a self-attention form.

``head`` is the head's number in the model as it was built, before any ``prune_heads``: a layer
saved with heads pruned (config.json's ``pruned_heads``, which numbers them so) has rows only for
the heads it kept, under their original numbers (heads 0, 2 and 3 of a layer that lost head 1),
so a head keeps its name across a pruned and an unpruned copy of a model; ``n_heads`` counts the
kept heads.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..adapters.types import QKCheckpoint
from ..core.bilinear import Pairing
from ..core.scores import structure_scores

__all__ = ["layer_scores", "summarize_layers", "survey_pairings", "SCORE_COLUMNS"]

SCORE_COLUMNS = ("symmetry", "directionality")


def survey_pairings(ckpt: QKCheckpoint) -> tuple[str, ...]:
    """The head pairings a survey table holds for ``ckpt``: ``("grouped", "modulo")`` for a model
    with several key heads, each shared by several query heads, in some layer; ``("grouped",)``
    otherwise.  With one key head (multi-query attention) both pairings read that key head, so
    modulo rows would repeat the grouped ones number for number.  :func:`~.scoring.score_entry`
    and :func:`~.zoo_walk.score_zoo` both write these rows."""
    gqa = any(1 < layer.n_kv_heads < layer.n_heads for layer in ckpt.layers)
    return ("grouped", "modulo") if gqa else ("grouped",)


def layer_scores(ckpt: QKCheckpoint, per_head: bool = False, pairing: Pairing = "grouped",
                 gamma: float = 2.0, variant: str = "excess") -> pd.DataFrame:
    """Symmetry (Def. 3.1) and directionality (Def. 3.2) of every self-attention layer.

    Parameters
    ----------
    ckpt : what :func:`companion.adapters.read_qk` returned.
    per_head : also add one row per query head (``M_h = Wq_h^T Wk_g(h)``), computed from
        the factors without forming ``M_h``; ``head`` is its number before any pruning
        (:attr:`~companion.adapters.types.QKLayer.head_numbers`).
    pairing : ``"grouped"`` (``g(h) = h // (H / H_kv)``, how the models compute) or
        ``"modulo"`` (``h % H_kv``, as in the authors' released code).
    gamma, variant : passed to the directionality score.

    Returns
    -------
    DataFrame with columns model, family, component, role, layer, head, symmetry,
    directionality, d_model, n_heads, n_kv_heads, d_head, n_parameters, pairing, variant.
    """
    rows = []
    model = ckpt.meta.get("name", ckpt.source)
    for layer in ckpt.self_attention_layers():
        base = dict(model=model, family=ckpt.family, component=layer.component, role=layer.role,
                    layer=layer.index, d_model=layer.d_model, n_heads=layer.n_heads,
                    n_kv_heads=layer.n_kv_heads, d_head=layer.d_head,
                    n_parameters=ckpt.n_parameters, pairing=pairing, variant=variant)
        # the layer's form M = sum_h Wq_h^T Wk_g(h) from factors with the query heads of each
        # key head summed: the same M, rank <= n_kv * d_head, so for grouped queries the
        # scores come from r x r Gram matrices instead of the d x d product
        A, B = layer.layer_factors(pairing)
        s = structure_scores(Wq=A, Wk=B, gamma=gamma, variant=variant)
        rows.append({**base, "head": -1, "symmetry": float(s["symmetry"]),
                     "directionality": float(s["directionality"])})
        if per_head:
            Q, K = layer.head_factors(pairing)  # [H, dh, d]: each query head, its own key head
            hs = structure_scores(Wq=Q, Wk=K, gamma=gamma, variant=variant, factored=True)
            sym = np.atleast_1d(hs["symmetry"])
            dirs = np.atleast_1d(hs["directionality"])
            for h, number in enumerate(layer.head_numbers):   # numbered as before pruning
                rows.append({**base, "head": number, "symmetry": float(sym[h]),
                             "directionality": float(dirs[h])})
    columns = ["model", "family", "component", "role", "layer", "head", "symmetry",
               "directionality", "d_model", "n_heads", "n_kv_heads", "d_head", "n_parameters",
               "pairing", "variant"]
    return pd.DataFrame(rows, columns=columns)


def _named(rows: pd.DataFrame, columns, what: str) -> None:
    """Refuse rows with an empty (NaN) cell in ``columns``: a groupby over them left those layers out of
    every group, and so out of the medians and the layer counts, without a word."""
    from ..base.errors import CompanionError

    for col in columns:
        empty = rows[col].isna() if col in rows.columns else pd.Series(False, index=rows.index)
        if empty.any():
            r = rows[empty].iloc[0]
            where = ", ".join(f"{c} {r[c]!r}" for c in ("key", "model", "component", "layer") if c in rows.columns
                              and c != col)
            raise CompanionError(f"{int(empty.sum())} whole-layer row(s) of the scores have no {col} (the first: "
                                 f"{where}); fill the {col} column before you {what} them (an empty cell would "
                                 "leave those layers out).")


def summarize_layers(df: pd.DataFrame) -> pd.DataFrame:
    """Median and quartiles across layers per (model, component), whole-layer rows only.

    Quartiles with ``numpy.percentile`` (linear interpolation), as the published tables
    were made; columns ``<score>_median``, ``<score>_q25``, ``<score>_q75`` and
    ``n_layers``.  A layer with more than one whole-layer row is refused (it would count twice), so is
    one without a model or component name; cross-attention rows (``role == "cross"``) are left out, as
    :func:`layer_scores` leaves them out.
    """
    from ..base.errors import CompanionError

    if missing := [c for c in ("model", "component", *SCORE_COLUMNS) if c not in getattr(df, "columns", ())]:
        raise CompanionError(f"the scores lack the columns {missing} (empty, or not layer_scores' table); pass "
                             "layer_scores' result.")
    whole = df[df["head"] == -1] if "head" in df.columns else df
    if "role" in whole.columns:   # cross-attention is no self-attention form: it counted as a layer of its stack
        whole = whole[whole["role"] != "cross"]
    _named(whole, ("model", "component"), "summarise")
    if "layer" in whole.columns:   # a layer counted twice moves the quartiles and n_layers, silently
        twice = whole[whole.duplicated(["model", "component", "layer"])]
        if len(twice):
            r = twice.iloc[0]
            raise CompanionError(f"layer {r['layer']} of {r['component']} of {r['model']!r} appears more than once in "
                                 "the scores (a table appended to itself, or two pairings or variants mixed); keep one "
                                 "row per layer before summarising.")
    out = []
    for (model, component), g in whole.groupby(["model", "component"], sort=False):
        row = {"model": model, "component": component, "n_layers": len(g)}
        for col in SCORE_COLUMNS:
            v = g[col].to_numpy(dtype=np.float64)
            q25, med, q75 = np.percentile(v, [25, 50, 75])
            row.update({f"{col}_median": med, f"{col}_q25": q25, f"{col}_q75": q75})
        out.append(row)
    return pd.DataFrame(out)
