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

import functools
import math

import numpy as np
import pandas as pd

__all__ = ["tokens_per_step", "layer_mean_curve", "gap_null_band", "gap_exit", "run_summary",
           "STUDY_VARIANTS", "STUDY_BASE", "STUDY_TOKENS", "variant_args", "load_study", "study_table", "choose_regime",
           "project_exit_tokens", "curve_by_tokens", "MAX_PAIR_CPU_S"]

#: The study's variants (``data/runs/make_compute_study.sh``): name -> (factor, value).
STUDY_VARIANTS = {
    "base": ("base", None),
    "width64": ("width", 64), "width256": ("width", 256),
    "depth2": ("layers", 2), "depth8": ("layers", 8),
    "heads2": ("heads", 2), "heads8": ("heads", 8),
    "lr3e-4": ("lr", 3e-4), "lr3e-3": ("lr", 3e-3),
    "seq32": ("seq_len", 32), "seq128": ("seq_len", 128),
    "vocab1k": ("top_k", 1024), "vocab16k": ("top_k", 16384),
    "batch8": ("batch_size", 8), "batch32": ("batch_size", 32),
}

#: The base configuration around which the variants move one factor at a time (size
#: ``cpu``: 4 layers, width 128, 4 heads; 64-token blocks; the compact 4,096-id vocabulary).
STUDY_BASE = {"size": "cpu", "batch_size": 16, "seq_len": 64, "lr": 1e-3, "top_k": 4096}

#: The token budget of every study run (and of the runs in the chosen regime).
STUDY_TOKENS = 1_000_000

_FLAGS = {"width": "--width", "layers": "--layers", "heads": "--heads", "lr": "--lr",
          "seq_len": "--seq-len", "top_k": "--top-k", "batch_size": "--batch-size"}


def variant_args(variant: str, tokens: int = STUDY_TOKENS, evals: int = 15) -> list[str]:
    """``companion train`` arguments of a study variant at a budget of ``tokens`` tokens.

    The step count follows from the budget (``tokens // (batch x block length)``); the
    warm-up is the first 5% of the steps, ``evals`` evaluations are spread evenly and a
    checkpoint is written every 10%.
    """
    if variant not in STUDY_VARIANTS:
        raise ValueError(f"unknown study variant {variant!r}; choose one of {', '.join(STUDY_VARIANTS)}.")
    for name, v in (("tokens", tokens), ("evals", evals)):
        # a float budget wrote '--steps 1464.0', which the train command refuses; evals=0 divided by zero
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise ValueError(f"{name} must be a whole number >= 1; got {v!r}.")
    cfg = dict(STUDY_BASE)
    factor, value = STUDY_VARIANTS[variant]
    if factor != "base":
        cfg[factor] = value
    steps = tokens // (cfg["batch_size"] * cfg["seq_len"])
    if steps < 1:
        raise ValueError(f"a budget of {tokens} tokens is less than one step of {variant}.")
    args = ["--size", cfg["size"], "--steps", str(steps), "--warmup", str(steps // 20),
            "--eval-every", str(max(steps // evals, 1)), "--checkpoint-every", str(max(steps // 10, 1))]
    for key, flag in _FLAGS.items():
        if key in cfg and (key in STUDY_BASE or factor == key):
            args += [flag, f"{cfg[key]:g}" if isinstance(cfg[key], float) else str(cfg[key])]
    return args


def tokens_per_step(config: dict, model_size: dict | None = None, world: int = 1) -> int:
    """Tokens in one optimiser step of a run (batch x accumulation x block length x ranks)."""
    seq = config.get("seq_len") or (model_size or {}).get("seq_len")
    if not seq:
        raise ValueError("the run's block length is unknown (no seq_len in config or model size).")
    counts = {"batch_size": config["batch_size"], "grad_accum": config.get("grad_accum", 1), "seq_len": seq,
              "world": world}
    for name, v in counts.items():
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise ValueError(f"the run's {name} must be a whole number >= 1; got {v!r}.")
    return int(np.prod([int(v) for v in counts.values()]))


def layer_mean_curve(history: pd.DataFrame, quantity: str = "symmetry") -> pd.Series:
    """The mean over layers of a per-layer score (the layers' summed forms), by step.  A layer
    whose score is not a number is refused in one line, naming it: the mean of the other
    layers is not the model's score (and a gap read from it would be read from part of it)."""
    rows = history[(history["quantity"] == quantity) & (history["head"] == -1)]
    if rows.empty:
        raise ValueError(f"the history has no per-layer {quantity!r} rows.")
    bad = rows[rows["value"].isna()]
    if len(bad):
        r = bad.iloc[0]
        which = f"layer {r['layer']}'s" if "layer" in r else "a layer's"
        raise ValueError(f"{which} {quantity} at step {r['step']} is not a number, so the layer mean "
                         "there cannot be read; leave the run out, or rerun it.")
    return rows.groupby("step")["value"].mean().sort_index()


def curve_by_tokens(history: pd.DataFrame, meta: dict, quantity: str = "symmetry") -> pd.Series:
    """:func:`layer_mean_curve` indexed by tokens seen instead of steps."""
    c = layer_mean_curve(history, quantity)
    c.index = c.index * tokens_per_step(meta["config"], meta.get("model_size"))
    c.index.name = "tokens"
    return c


@functools.lru_cache(maxsize=64)
def _null_pool(width: int, n: int, seed: int) -> dict:
    """Scores of ``n`` random rank-``width`` forms (cached: every band of a width shares them)."""
    from ...core.null import null_scores

    # drawn on the CPU whatever the device: the rules' thresholds must not depend on the hardware
    t = null_scores(width, n_samples=n, rank=width, seed=seed, device="cpu")
    return {q: t[q].to_numpy() for q in ("symmetry", "directionality")}


def gap_null_band(width: int, layers: int, q: float = 0.975, n_samples: int = 2000,
                  seed: int = 0, quantity: str = "symmetry") -> float:
    """Quantile ``q`` of the layer-mean ``quantity`` difference between two random models.

    Each model's layers are ``width x width`` forms ``Wq^T Wk`` of rank ``width`` with
    Gaussian factors (the untrained layers' null, :func:`companion.core.null.null_scores`);
    ``layers`` of them are averaged per model and the two models' means subtracted.
    ``quantity`` is ``"symmetry"`` or ``"directionality"``.
    """
    for name, v in (("layers", layers), ("width", width), ("n_samples", n_samples), ("seed", seed)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < (0 if name == "seed" else 1):
            raise ValueError(f"{name} must be a whole number >= {0 if name == 'seed' else 1}; got {v!r}.")
    if quantity not in ("symmetry", "directionality"):
        raise ValueError(f"quantity must be 'symmetry' or 'directionality'; got {quantity!r}.")
    pool = _null_pool(int(width), max(200, 4 * layers), seed)[quantity]
    rng = np.random.default_rng(seed + 1)
    a = rng.choice(pool, size=(n_samples, layers)).mean(axis=1)
    b = rng.choice(pool, size=(n_samples, layers)).mean(axis=1)
    return float(np.quantile(a - b, q))


def gap_exit(encoder: pd.DataFrame, decoder: pd.DataFrame, band: float,
             quantity: str = "symmetry") -> dict:
    """First logged step after which encoder minus decoder layer-mean ``quantity`` stays > band.

    For symmetry the gap is positive when the encoder is the more symmetric (Fig. 3a); for
    directionality when the decoder is the more column-dominant (Fig. 3b).

    Returns ``{"step": ..., "final_gap": ..., "gap": Series}``; ``step`` is ``nan`` when
    the gap is not above the band at the last logged step.
    """
    e, d = layer_mean_curve(encoder, quantity), layer_mean_curve(decoder, quantity)
    if not e.index.equals(d.index):
        raise ValueError("the encoder and decoder runs were not logged at the same steps.")
    gap = e - d
    if not (math.isfinite(band) and np.isfinite(gap.to_numpy(dtype=float)).all()):
        # NaN compares false: a NaN band read every gap as inside it, a NaN step as below it
        raise ValueError(f"the band ({band}) and the {quantity} gap at every logged step must be finite numbers; "
                         f"the gap is not at steps {list(gap.index[~np.isfinite(gap.to_numpy(dtype=float))])}.")
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
    # the process's own CPU time when recorded, else wall time x torch threads
    if "cpu_seconds" in meta:
        duration, threads = float(meta["cpu_seconds"]), 1
    else:
        duration = float(meta.get("duration_s", float("nan")))
        threads = meta.get("hardware", {}).get("torch_threads", 1) or 1
        if isinstance(threads, bool) or not isinstance(threads, (int, np.integer)) or threads < 1:
            # a negative count gave negative tokens per CPU-second
            raise ValueError(f"the run's hardware.torch_threads must be a whole number >= 1; got {threads!r}.")
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


def load_study(root=None, prefix: str = "study-") -> dict:
    """The finished study runs under ``root`` (default ``data/runs``) by ``(variant, mode)``.

    Values are ``(history, provenance)``; unfinished runs (no ``history.csv``) are left out.
    """
    from pathlib import Path

    from ..runner.loop import read_run
    from ..runner.runs import runs_root

    root = Path(root) if root is not None else runs_root()
    out = {}
    for variant in STUDY_VARIANTS:
        for mode in ("encoder", "decoder"):
            d = root / f"{prefix}{variant}-{mode}"
            if (d / "history.csv").exists():
                out[(variant, mode)] = read_run(d)
    return out


def study_table(runs: dict, n_samples: int = 2000) -> pd.DataFrame:
    """One row per variant whose encoder and decoder runs both finished.

    Columns: the variant's factor and value, its shape, tokens per CPU-second of each run,
    final held-out losses, final layer-mean symmetry and directionality of each run, the
    encoder's peak layer-mean symmetry, when it peaked (tokens) and the share of the peak
    left at the end (NaN for a peak not above 0), the null bands of both gaps, the final gaps,
    and when each gap leaves its band, in tokens seen and in CPU-seconds (``NaN`` when it has
    not left it by the end).
    """
    rows = []
    for variant, (factor, value) in STUDY_VARIANTS.items():
        if (variant, "encoder") not in runs or (variant, "decoder") not in runs:
            continue
        (he, me), (hd, md) = runs[(variant, "encoder")], runs[(variant, "decoder")]
        try:
            se, sd = run_summary(he, me), run_summary(hd, md)
        except ValueError as e:   # which run it is, beside what is wrong with it
            raise ValueError(f"study variant {variant!r}: {e}") from None
        width, layers = int(se["width"]), int(se["layers"])
        row = {"variant": variant, "factor": factor, "value": value,
               "layers": layers, "width": width, "heads": se["heads"], "seq_len": se["seq_len"],
               "batch_size": se["batch_size"], "lr": se["lr"], "top_k": se["top_k"],
               "tokens": se["tokens"], "tokens_per_step": se["tokens_per_step"],
               "enc_tokens_per_cpu_s": se["tokens_per_cpu_s"], "dec_tokens_per_cpu_s": sd["tokens_per_cpu_s"],
               "enc_loss": se["final_eval_loss"], "dec_loss": sd["final_eval_loss"],
               "enc_symmetry": se["final_symmetry"], "dec_symmetry": sd["final_symmetry"],
               "enc_directionality": se["final_directionality"],
               "dec_directionality": sd["final_directionality"]}
        # the encoder's symmetry need not grow monotonically: where it peaks, and how much stays
        enc_sym = curve_by_tokens(he, me)
        # a share of a peak is read of a peak above 0 only: -0.03 of a peak of -0.01 is no 300% kept
        peak_sym = float(enc_sym.max())
        row.update({"enc_sym_peak": peak_sym, "enc_sym_peak_tokens": float(enc_sym.idxmax()),
                    "enc_sym_kept": float(enc_sym.iloc[-1]) / peak_sym if peak_sym > 0 else float("nan")})
        # CPU-seconds per token of the pair, both runs together (what the comparison costs)
        cpu_per_token = 1 / se["tokens_per_cpu_s"] + 1 / sd["tokens_per_cpu_s"]
        row["pair_cpu_s"] = se["tokens"] * cpu_per_token  # both runs, the whole budget
        for q, key in (("symmetry", "sym"), ("directionality", "dir")):
            band = gap_null_band(width, layers, n_samples=n_samples, quantity=q)
            res = gap_exit(he, hd, band, q)  # encoder minus decoder for both scores
            tokens = res["step"] * se["tokens_per_step"]
            row.update({f"{key}_band": band, f"{key}_gap": res["final_gap"],
                        f"{key}_exit_tokens": tokens, f"{key}_exit_cpu_s": tokens * cpu_per_token})
        rows.append(row)
    return pd.DataFrame(rows).set_index("variant") if rows else pd.DataFrame()


#: The most CPU-seconds one encoder-decoder pair of the regime may cost at the study's budget:
#: the cached matrix in the regime is about ten such pairs, so 600 keeps it re-makeable in
#: about an hour on two cores.
MAX_PAIR_CPU_S = 600.0


def choose_regime(table: pd.DataFrame, max_pair_cpu_s: float = MAX_PAIR_CPU_S) -> str | None:
    """The affordable variant in which Fig. 3's contrasts appear soonest, or ``None``.

    A variant qualifies when its encoder-decoder symmetry gap has left the null band (and
    stayed out), its decoder ends column-dominant (negative directionality) and more so than
    its encoder, and its encoder and decoder runs together cost at most ``max_pair_cpu_s``
    CPU-seconds at the study's budget.  Among those, the one whose symmetry gap left the band
    at the fewest CPU-seconds wins.

    The directionality gap is not required to leave *its* band: the directionality of a
    near-random form is decided by a few outlying rows and columns, so that band is wide
    (about 0.56 for four 128-wide layers, against the -0.1 to -0.3 of trained decoders);
    :func:`study_table` reports when it does leave it.
    """
    if table.empty:
        return None
    ok = table[table["sym_exit_cpu_s"].notna()
               & (table["dec_directionality"] < 0)
               & (table["dec_directionality"] < table["enc_directionality"])
               & (table["pair_cpu_s"] <= max_pair_cpu_s)]
    return None if ok.empty else str(ok["sym_exit_cpu_s"].idxmin())


def project_exit_tokens(table: pd.DataFrame, widths=(256, 768), quantity: str = "sym") -> pd.DataFrame:
    """Extrapolate the tokens until a gap leaves its band to other widths, by a power law.

    Fits ``log(tokens) = a + b log(width)`` through the width variants (``width64``,
    ``base``, ``width256``) whose gap left the band after a positive number of tokens (one
    above its band from the first logged step, 0 tokens, has no logarithm and is left out), and
    returns the fitted exponent, the number of points it rests on and the projected tokens at
    each of ``widths``.  Fewer than two such points give ``NaN``.
    """
    col = f"{quantity}_exit_tokens"
    pts = table.loc[[v for v in ("width64", "base", "width256") if v in table.index], ["width", col]]
    # a gap above its band from the first logged step left it after 0 tokens: log(0) has no place on the line
    pts = pts.dropna()
    pts = pts[(pts[col].astype(float) > 0) & (pts["width"].astype(float) > 0)]
    if len(pts) < 2:
        b = a = math.nan
    else:
        b, a = np.polyfit(np.log(pts["width"].astype(float)), np.log(pts[col].astype(float)), 1)
    return pd.DataFrame({"width": list(widths),
                         "projected_tokens": [math.exp(a + b * math.log(w)) if np.isfinite(b) else math.nan
                                              for w in widths],
                         "exponent": b, "points": len(pts)})


def main(argv=None) -> int:
    """``python -m companion.train.studies.compute_study args VARIANT [TOKENS]`` prints a variant's training
    arguments; ``... regime`` prints the variant :func:`choose_regime` picks from the cached
    study runs (exit status 1, and the reason on stderr, when none qualifies)."""
    import sys

    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["args"] and len(argv) in (2, 3):
        print(" ".join(variant_args(argv[1], *(int(a) for a in argv[2:]))))
        return 0
    if argv == ["regime"]:
        regime = choose_regime(study_table(load_study()))
        if regime is None:
            print("no finished study variant shows the encoder-decoder contrast outside the null band.",
                  file=sys.stderr)
            return 1
        print(regime)
        return 0
    print("usage: python -m companion.train.studies.compute_study args VARIANT [TOKENS] | regime", file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
