"""The independent computations the exercise checks compare answers with.

None of them is the exercise's reference solution, and none calls the package function that
computes the answer: the two scores written out from their definitions (Def. 3.1 and 3.2),
matrices that sample the scores' domain, the power of a t test integrated from its definition,
the dimension of the skew-symmetric matrices counted as a null space, a small decoder whose
logits are read directly.  :mod:`.exercise_checks` names them in its entries.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

# the two scores from their definitions (Def. 3.1 and 3.2), written out independently of
# companion.core.scores so that a check never compares the package with itself
def symmetry_def(M: np.ndarray) -> float:
    """s = (||M_s||^2 - ||M_n||^2) / ||M||^2 from the symmetric and skew-symmetric parts."""
    S, N = (M + M.T) / 2, (M - M.T) / 2
    return float((np.sum(S * S) - np.sum(N * N)) / np.sum(M * M))


def directionality_def(M: np.ndarray, gamma: float = 2.0) -> float:
    """d = (R - C) / (R + C), R and C the excess of the outlying row and column norms."""
    def excess(norms):
        cut = norms.mean() + gamma * norms.std(ddof=1)
        return float(np.sum(np.clip(norms - cut, 0, None)))
    R, C = excess(np.linalg.norm(M, axis=1)), excess(np.linalg.norm(M, axis=0))
    return 0.0 if R + C == 0 else (R - C) / (R + C)


def test_matrices(rng: np.random.Generator, n: int) -> list[np.ndarray]:
    """Matrices with a dominant column, a dominant row, none, a symmetric and a skew one."""
    G = rng.standard_normal((n, n))
    col, row = G.copy(), G.copy()
    col[:, 0] *= 8
    row[1, :] *= 8
    sym = G + G.T
    sym[:, 0] *= 8
    return [col, row, G, sym, G - G.T]


def score_changes(pairs) -> dict:
    """``{score: True}`` for a score that differs between some ``M`` and its transform."""
    changed = {"symmetry": False, "directionality": False}
    for M, moved in pairs:
        changed["symmetry"] |= not np.isclose(symmetry_def(M), symmetry_def(moved), rtol=0, atol=1e-9)
        changed["directionality"] |= not np.isclose(directionality_def(M), directionality_def(moved),
                                                    rtol=0, atol=1e-9)
    return changed


def t_test_power(n: int, ncp: float, level: float = 0.95) -> float:
    """Probability that the one-sample t statistic of ``n`` seeds exceeds its two-sided
    ``level`` critical value when the true mean is ``ncp`` standard errors above 0.

    Computed from the definition T = (Z + ncp) / sqrt(V / (n - 1)), Z normal, V chi-square,
    by integrating P(Z > c sqrt(V / (n - 1)) - ncp) over V's quantiles: no non-central t
    routine and no root of :func:`companion.rules.statistics.detectable_effect` is involved.
    """
    from scipy import integrate, stats

    df = n - 1
    crit = stats.t.ppf((1 + level) / 2, df)
    integrand = lambda u: stats.norm.cdf(ncp - crit * np.sqrt(stats.chi2.ppf(u, df) / df))
    return float(integrate.quad(integrand, 0, 1, limit=200, epsabs=1e-10)[0])


@lru_cache(maxsize=1)
def tiny_decoder():
    """The small decoder (random weights, seed 0) whose logits answer which positions a token reaches."""
    import torch

    from ...train.models.bert import build_model

    with torch.random.fork_rng():      # leave the student's random state as it was
        torch.manual_seed(0)
        return build_model("tiny", 50, mode="decoder").eval()


def skew_dimension(n: int) -> int:
    """Dimension of the n x n skew-symmetric matrices: the null space of X -> X + X^T,
    from the rank of that map on the n^2 matrix units (a larger matrix holds a smaller one as a
    block, so sizes above 6 are answered by 6)."""
    n = min(n, 6)
    if n < 1:
        return 0
    units = np.eye(n * n).reshape(n * n, n, n)
    images = (units + np.swapaxes(units, 1, 2)).reshape(n * n, n * n)
    return n * n - int(np.linalg.matrix_rank(images))
