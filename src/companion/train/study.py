"""The compute study: how many tokens of training the encoder/decoder contrast needs.

Fig. 3 of the paper shows encoders becoming more symmetric than decoders over 200k steps
of BERT.  A CPU cannot follow that path, so the study asks a smaller question of many
short runs (``data/runs/make_compute_study.sh``): at a fixed token budget, which shape and
schedule makes the contrast appear soonest, and how does the time it takes grow with size?

For a pair of runs that differ only in the objective (encoder vs decoder), the *gap* at a
logged step is the encoder's layer-mean symmetry minus the decoder's.  Two untrained
models of the same shape differ too, by chance: the *null band* is the 97.5% quantile of
that difference, from random-matrix forms of the layers' width and number
(:func:`gap_null_band`).  The gap *leaves the band* at the first logged step after which
it stays above it (:func:`gap_exit`); the study reports that step in tokens seen and in
CPU-seconds, and ``NaN`` when the gap never leaves.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

__all__ = ["tokens_per_step", "layer_mean_curve", "gap_null_band", "gap_exit", "run_summary"]


def tokens_per_step(config: dict, model_size: dict | None = None, world: int = 1) -> int:
    """Tokens in one optimiser step of a run (batch x accumulation x block length x ranks)."""
    seq = config.get("seq_len") or (model_size or {}).get("seq_len")
    if not seq:
        raise ValueError("the run's block length is unknown (no seq_len in config or model size).")
    return int(config["batch_size"]) * int(config.get("grad_accum", 1)) * int(seq) * world


def layer_mean_curve(history: pd.DataFrame, quantity: str = "symmetry") -> pd.Series:
    """The mean over layers of a per-layer score (the layers' summed forms), by step."""
    rows = history[(history["quantity"] == quantity) & (history["head"] == -1)]
    if rows.empty:
        raise ValueError(f"the history has no per-layer {quantity!r} rows.")
    return rows.groupby("step")["value"].mean().sort_index()


def gap_null_band(width: int, layers: int, q: float = 0.975, n_samples: int = 2000,
                  seed: int = 0) -> float:
    """Quantile ``q`` of the layer-mean symmetry difference between two random models.

    Each model's layers are ``width x width`` forms ``Wq^T Wk`` of rank ``width`` with
    Gaussian factors (the untrained layers' null, :func:`companion.null.null_scores`);
    ``layers`` of them are averaged per model and the two models' means subtracted.
    """
    from ..null import null_scores

    if layers < 1:
        raise ValueError(f"layers must be >= 1; got {layers}.")
    pool = null_scores(width, n_samples=max(200, 4 * layers), rank=width, seed=seed)["symmetry"].to_numpy()
    rng = np.random.default_rng(seed + 1)
    a = rng.choice(pool, size=(n_samples, layers)).mean(axis=1)
    b = rng.choice(pool, size=(n_samples, layers)).mean(axis=1)
    return float(np.quantile(a - b, q))


def gap_exit(encoder: pd.DataFrame, decoder: pd.DataFrame, band: float) -> dict:
    """First logged step after which encoder minus decoder layer-mean symmetry stays > band.

    Returns ``{"step": ..., "final_gap": ..., "gap": Series}``; ``step`` is ``nan`` when
    the gap is not above the band at the last logged step.
    """
    e, d = layer_mean_curve(encoder), layer_mean_curve(decoder)
    if not e.index.equals(d.index):
        raise ValueError("the encoder and decoder runs were not logged at the same steps.")
    gap = e - d
    above = (gap > band).to_numpy()
    if not above[-1]:
        step = math.nan
    else:
        last_below = np.flatnonzero(~above)
        first = last_below[-1] + 1 if last_below.size else 0
        step = float(gap.index[first])
    return {"step": step, "final_gap": float(gap.iloc[-1]), "gap": gap}


def run_summary(history: pd.DataFrame, meta: dict) -> dict:
    """Shape, tokens seen, tokens per CPU-second and the final scores of one run."""
    cfg, size = meta["config"], meta.get("model_size", {})
    per_step = tokens_per_step(cfg, size)
    steps = int(history["step"].max())
    ev = history[history["quantity"] == "eval_loss"].sort_values("step")
    sym = layer_mean_curve(history)
    duration = float(meta.get("duration_s", float("nan")))
    threads = int(meta.get("hardware", {}).get("torch_threads", 1) or 1)
    return {
        "mode": cfg["mode"], "layers": size.get("num_hidden_layers"), "width": size.get("hidden_size"),
        "heads": size.get("num_attention_heads"), "seq_len": size.get("seq_len"),
        "batch_size": cfg["batch_size"], "lr": cfg["lr"], "top_k": cfg.get("top_k"),
        "tokens_per_step": per_step, "tokens": per_step * steps,
        "tokens_per_cpu_s": per_step * steps / (duration * threads) if duration > 0 else float("nan"),
        "final_eval_loss": float(ev["value"].iloc[-1]) if not ev.empty else float("nan"),
        "final_symmetry": float(sym.iloc[-1]),
        "final_directionality": float(layer_mean_curve(history, "directionality").iloc[-1]),
    }
