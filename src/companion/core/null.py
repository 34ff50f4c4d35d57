"""What the scores look like when there is no structure: random-matrix null distributions.

Two kinds of random ``d x d`` matrix serve as references:

``rank=None``
    i.i.d. standard normal entries: the setting of Props. S1.17(3) and S1.18(3).
``rank=r``
    ``M = Wq^T Wk`` with independent Gaussian ``Wq, Wk`` of shape ``[r, d]``: what a
    layer's bilinear form looks like at initialisation (``r = n_heads * d_head``), or a
    single head (``r = d_head``).

The scale of the entries does not matter: both scores are scale invariant.

Shipped draws
-------------
Wide i.i.d. nulls are slow on a CPU (a 8,192-wide sample is half a gigabyte of normals), so
the draws the survey needs at the ``gpu`` run size are shipped in ``data/null/``, made once on
a CPU by ``python -m companion.survey.null_draws ship`` with exactly this module's code.  On a CPU,
:func:`null_scores` returns the shipped rows when they hold the requested width, sample count
and seed (the same numbers it would draw: a seed gives the same samples on a given kind of
device, and the test suite redraws the narrow widths and compares them exactly); on a GPU it
draws on the device, which is fast and gives different, equally valid samples of the same law.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from ..base.phrasing import finite as _finite   # a finite number (an int past float's range: no)
from ..base.runtime import default_device
from .scores import (
    directionality_score,
    directionality_score_factored,
    symmetry_score,
    symmetry_score_factored,
)

__all__ = ["random_bilinear_forms", "null_scores", "null_summary", "symmetry_null_law", "shipped_null_file",
           "ship_null"]

_MAX_BATCH_BYTES = 256 * 2**20


def shipped_null_file(n_samples: int) -> Path:
    """Where the shipped CPU draws of ``n_samples`` i.i.d. samples per width are kept."""
    from ..base.paths import DATA_DIR

    return DATA_DIR / "null" / f"iid-n{int(n_samples)}-cpu.csv.gz"


@lru_cache(maxsize=4)
def _read_shipped(path: str, mtime: float) -> pd.DataFrame:
    return pd.read_csv(path, dtype={"d": int, "seed": int, "sample": int, "rank": int})


def _shipped(d: int, n_samples: int, seed: int) -> pd.DataFrame | None:
    path = shipped_null_file(n_samples)
    if not path.is_file():
        return None
    table = _read_shipped(str(path), path.stat().st_mtime)
    rows = table[(table["d"] == d) & (table["seed"] == seed)]
    if len(rows) != n_samples:
        return None
    return rows.drop(columns="seed").sort_values("sample").reset_index(drop=True)


def _whole(value, name: str, least: int, what: str) -> int:
    """``value`` as an int when it is a whole number ``>= least`` (an integral float such as
    ``4.0`` is read as ``4``), else a one-line ValueError naming ``name`` and what it counts."""
    import math
    import numbers

    ok = (isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_))
          and _finite(value) and float(value).is_integer() and value >= least)
    if not ok:
        raise ValueError(f"{name} must be a whole number >= {least} ({what}); got {value!r}.")
    return int(value)


def _seed(seed) -> int:
    """``seed`` as an int: a whole number (``2.0`` draws what ``2`` draws); ``1.5``, ``"1"``, ``True`` or NaN
    are refused in one line (torch's manual_seed raised a raw 'expected a long')."""
    import numbers

    if isinstance(seed, numbers.Integral) and not isinstance(seed, (bool, np.bool_)):
        seed = int(seed)
    elif (isinstance(seed, (bool, np.bool_)) or not isinstance(seed, numbers.Real) or not np.isfinite(seed)
            or not float(seed).is_integer()):
        raise ValueError(f"seed must be a whole number; got {seed!r}.")
    seed = int(seed)
    if not -2 ** 63 <= seed < 2 ** 64:   # torch's generators take 64 bits (np.isfinite raised on more)
        raise ValueError(f"seed must fit in 64 bits (-2**63 to 2**64 - 1); got {seed!r}.")
    return seed


def _generator(device: torch.device, seed: int) -> torch.Generator:
    """A generator on ``device``: the samples are drawn where they are scored.

    A given seed gives the same samples on a given kind of device; a CPU and a GPU draw
    different (equally valid) samples from the same law.
    """
    return torch.Generator(device=device).manual_seed(seed)


def random_bilinear_forms(d: int, n: int, rank: int | None = None, seed: int = 0,
                          device=None) -> torch.Tensor:
    """``n`` random ``d x d`` matrices (float64), i.i.d. entries or products of rank ``rank``."""
    d, n = _whole(d, "d", 2, "the width of each matrix"), _whole(n, "n", 1, "the number of matrices")
    rank = None if rank is None else _whole(rank, "rank", 1, "the rows of each factor, or None for i.i.d. entries")
    seed = _seed(seed)
    device = torch.device(device) if device is not None else default_device()
    g = _generator(device, seed)
    if rank is None:
        return torch.randn(n, d, d, generator=g, dtype=torch.float64, device=device)
    q = torch.randn(n, rank, d, generator=g, dtype=torch.float64, device=device)
    k = torch.randn(n, rank, d, generator=g, dtype=torch.float64, device=device)
    return q.transpose(-1, -2) @ k


def null_scores(d: int, n_samples: int = 200, rank: int | None = None, seed: int = 0,
                gamma: float = 2.0, variant: str = "excess", device=None,
                max_batch_bytes: int = _MAX_BATCH_BYTES, shipped: bool = True) -> pd.DataFrame:
    """Symmetry and directionality of ``n_samples`` random matrices, as a tidy table.

    Columns: ``d, rank, sample, symmetry, directionality`` (``rank`` is ``-1`` for i.i.d.).
    Low-rank samples are scored from their factors, never formed.  On a CPU, i.i.d. draws
    that ``data/null/`` ships are read instead of drawn again (module doc); ``shipped=False``
    always draws.

    The samples are drawn batch by batch, so a seed gives the same samples for the same
    ``max_batch_bytes`` (and kind of device) only: another batch size draws other, equally
    valid, samples of the same law.  The shipped draws use the default.
    """
    d = _whole(d, "d", 2, "the width of each matrix")
    n_samples = _whole(n_samples, "n_samples", 1, "the number of random matrices to score")
    rank = None if rank is None else _whole(rank, "rank", 1, "the rows of each factor, or None for i.i.d. entries")
    seed = _seed(seed)
    max_batch_bytes = _whole(max_batch_bytes, "max_batch_bytes", 1, "the memory one batch of draws may take")
    device = torch.device(device) if device is not None else default_device()
    if (shipped and device.type == "cpu" and rank is None and gamma == 2.0 and variant == "excess"
            and max_batch_bytes == _MAX_BATCH_BYTES):
        table = _shipped(int(d), int(n_samples), int(seed))
        if table is not None:
            return table
    g = _generator(device, seed)
    per_sample = 8 * (d * d if rank is None else 2 * rank * d)
    batch = max(1, min(n_samples, max_batch_bytes // max(per_sample, 1)))
    sym, dirn = [], []
    done = 0
    while done < n_samples:
        b = min(batch, n_samples - done)
        if rank is None:
            M = torch.randn(b, d, d, generator=g, dtype=torch.float64, device=device)
            sym.append(np.atleast_1d(symmetry_score(M)))
            dirn.append(np.atleast_1d(directionality_score(M, gamma=gamma, variant=variant)))
        else:
            q = torch.randn(b, rank, d, generator=g, dtype=torch.float64, device=device)
            k = torch.randn(b, rank, d, generator=g, dtype=torch.float64, device=device)
            sym.append(np.atleast_1d(symmetry_score_factored(q, k)))
            dirn.append(np.atleast_1d(
                directionality_score_factored(q, k, gamma=gamma, variant=variant)))
        done += b
    return pd.DataFrame({
        "d": d,
        "rank": -1 if rank is None else rank,
        "sample": np.arange(n_samples),
        "symmetry": np.concatenate(sym),
        "directionality": np.concatenate(dirn),
    })


def null_summary(table: pd.DataFrame, quantiles=(0.025, 0.5, 0.975)) -> pd.DataFrame:
    """Mean, standard deviation and quantiles of each score per ``(d, rank)``."""
    missing = [c for c in ("d", "rank", "symmetry", "directionality") if c not in getattr(table, "columns", ())]
    if missing:   # a raw KeyError before
        raise ValueError(f"the null table lacks the column(s) {', '.join(missing)}; pass what null_scores returns.")
    import numbers

    # one number is one quantile (iterating 0.5 raised a raw TypeError); text or a level outside [0, 1]
    # raised numpy's own error, naming no argument
    quantiles = [quantiles] if isinstance(quantiles, numbers.Real) else list(quantiles)
    for q in quantiles:
        if isinstance(q, (bool, np.bool_)) or not isinstance(q, numbers.Real) or not 0 <= q <= 1:
            raise ValueError(f"each quantile must be a number in [0, 1] (0.5: the median); got {q!r} in quantiles.")
    rows = []
    for (d, rank), grp in table.groupby(["d", "rank"], sort=True):
        for score in ("symmetry", "directionality"):
            v = grp[score].to_numpy()
            row = {"d": d, "rank": rank, "score": score, "n": len(v),
                   "mean": v.mean(), "std": v.std(ddof=1) if len(v) > 1 else np.nan}
            for q in quantiles:
                row[f"q{q:g}"] = np.quantile(v, q)
            rows.append(row)
    return pd.DataFrame(rows)


def symmetry_null_law(d: int):
    """The exact law of the symmetry score of a ``d x d`` matrix with i.i.d. Gaussian entries.

    With ``M_s, M_n`` the symmetric and skew parts (Eq. 16), ``||M_s||^2`` collects the
    ``d`` diagonal entries and the ``d(d-1)/2`` sums ``(M_ij + M_ji) / sqrt 2``, and
    ``||M_n||^2`` the ``d(d-1)/2`` differences ``(M_ij - M_ji) / sqrt 2``: independent
    standard normals, so the two are independent chi-square variables with ``d(d+1)/2`` and
    ``d(d-1)/2`` degrees of freedom.  Their ratio gives

        s = (||M_s||^2 - ||M_n||^2) / ||M||^2 = 2 B - 1,   B ~ Beta(d(d+1)/4, d(d-1)/4),

    with mean ``1/d`` and variance ``2 (d^2 - 1) / (d^2 (d^2 + 2))`` (Prop. S1.17(3) gives
    the mean's order; this is the whole law).  Returns a frozen ``scipy.stats`` distribution.
    """
    from scipy import stats

    try:
        d = _whole(d, "d", 2, "")
    except ValueError:
        raise ValueError(f"need an integer width d >= 2 (the width of the i.i.d. Gaussian matrix), got {d!r}.") from None
    return stats.beta(d * (d + 1) / 4, d * (d - 1) / 4, loc=-1.0, scale=2.0)


def ship_null(dims, n_samples: int, out: str | Path | None = None, progress=None) -> Path:
    """Draw on the CPU the i.i.d. null of every width in ``dims`` (seed = width, the survey's
    convention) and write it where :func:`null_scores` looks for it."""
    widths = list(dims) if not isinstance(dims, (str, bytes)) else [dims]
    bad = [x for x in widths if isinstance(x, bool) or not isinstance(x, (int, np.integer, float, np.floating))
           or not float(x).is_integer() or float(x) < 2]
    if not widths or bad:
        raise ValueError(f"ship_null: {'no widths to draw' if not widths else f'width {bad[0]!r} is not a whole number >= 2'}; "
                         "pass the widths d >= 2 of the heads to draw the null of (as whole numbers).")
    out = Path(out) if out is not None else shipped_null_file(n_samples)
    parts = []
    for d in sorted({int(x) for x in widths}):
        t = null_scores(d, n_samples=n_samples, seed=d, device="cpu", shipped=False)
        parts.append(t.assign(seed=d))
        if progress is not None:
            progress(d)
    table = pd.concat(parts, ignore_index=True)[["d", "rank", "seed", "sample", "symmetry", "directionality"]]
    from ..base.outputs import atomic_output

    with atomic_output(out, "null table") as tmp:
        table.to_csv(tmp, index=False, compression={"method": "gzip", "mtime": 0})  # repr floats: exact
    return out
