"""The independent computations the exercise checks compare answers with.

None of them is the exercise's reference solution, and none calls the package function that
computes the answer: the two scores written out from their definitions (Def. 3.1 and 3.2),
matrices that sample the scores' domain, the power of a t test integrated from its definition,
the dimension of the skew-symmetric matrices counted as a null space, a small decoder whose
logits are read directly.

The data of each exercise's check (its chapter's entry in ``data/chapters.yaml``) names them:
``cases: <name>`` a generator of :data:`CASES` (given a random generator seeded by the
exercise's label, it yields each input, its independent value, the tolerance and the facts the
hint names), ``want: <name>`` a value of :data:`REFERENCES`.  They are code because each is a
computation (a Monte Carlo, an autograd step, a count, an integral) that data cannot hold.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from .exercise_engine import Case, listed

def orthogonal(rng: np.random.Generator, n: int) -> np.ndarray:
    """A Haar-random orthogonal matrix (QR of a Gaussian matrix, signs fixed)."""
    Q, R = np.linalg.qr(rng.standard_normal((n, n)))
    return Q * np.sign(np.diag(R))


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


def cut_margin(M: np.ndarray, gamma: float = 2.0) -> float:
    """How far the row or column norm nearest its cut (mean + gamma std of the norms, Def. 3.2)
    lies from it, over the largest norm.  Within about 1e-6 of it the excesses R and C are
    read from rounding (a norm on its cut counts in one order of summation and not in the
    other), and with them d = (R - C) / (R + C), which jumps between -1, 0 and 1 there."""
    gaps = [np.abs(v - v.mean() - gamma * v.std(ddof=1)).min()       # (norms all equal: no excess, exactly)
            for v in (np.linalg.norm(M, axis=1), np.linalg.norm(M, axis=0)) if np.ptp(v) > 0]
    return float(min(gaps, default=np.inf) / max(np.linalg.norm(M, axis=1).max(), np.linalg.norm(M, axis=0).max()))


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
    routine and no root of :func:`companion.rules.power.detectable_effect` is involved.
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
    from the rank of that map on the n^2 matrix units; counted for n up to 12 (an n^2 x n^2
    rank), refused above (it once answered every size above 6 by 6's, 15, where 7 has 21)."""
    if n > 12:
        raise ValueError(f"skew_dimension counts by the rank of an n^2 x n^2 map, for n up to 12; got n = {n}")
    if n < 1:
        return 0
    units = np.eye(n * n).reshape(n * n, n, n)
    images = (units + np.swapaxes(units, 1, 2)).reshape(n * n, n * n)
    return n * n - int(np.linalg.matrix_rank(images))


def smallest_skew_dimension() -> int:
    """The fewest dimensions with a non-zero skew-symmetric matrix, found by trying 1, 2, ..."""
    return next(n for n in range(1, 7) if skew_dimension(n) > 0)


def seeds_needed(seeds: int, detected: float, wanted: float, power: float = 0.8) -> int:
    """The fewest seeds whose t test finds a true difference ``wanted`` with probability
    ``power``, when ``seeds`` seeds find ``detected`` (the seed-to-seed spread recovered from
    it), searched with :func:`t_test_power`, which grows with the number of seeds: doubling,
    then halving the interval, up to a million seeds.

    ``seeds`` must be a whole number of at least 2, ``detected`` and ``wanted`` positive finite
    effects and ``power`` in (0.05, 1) (a test of level 0.95 finds no effect with 0.05): else a
    one-line ``ValueError`` (an effect of 0 once searched a million sizes, an integral each)."""
    import math

    from scipy import optimize

    ok = (isinstance(seeds, (int, np.integer)) and not isinstance(seeds, bool) and seeds >= 2
          and all(isinstance(x, (int, float, np.number)) and not isinstance(x, bool) and math.isfinite(x) and x > 0
                  for x in (detected, wanted)) and isinstance(power, (int, float)) and 0.05 < power < 1)
    if not ok:
        raise ValueError(f"seeds_needed({seeds!r}, {detected!r}, {wanted!r}, power={power!r}): give a whole number of "
                         "seeds of at least 2, two positive effects and a power between 0.05 and 1")
    ncp = optimize.brentq(lambda c: t_test_power(seeds, c) - power, 0.0, 100.0, xtol=1e-12)
    sd = detected * np.sqrt(seeds) / ncp
    enough = lambda n: t_test_power(n, wanted * np.sqrt(n) / sd) > power
    lo, hi = 1, 2                      # enough(hi) once found; never enough(lo)
    while not enough(hi):
        lo, hi = hi, hi * 2
        if hi > 2 * 10**6:
            raise ValueError(f"seeds_needed: more than a million seeds would be needed to find {wanted!r} "
                             f"when {seeds} seeds find {detected!r}")
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if enough(mid) else (mid, hi)
    return hi


#: the values an exercise's data may name as ``want: <name>`` (with ``of: [its arguments]``)
REFERENCES = {"skew_dimension": skew_dimension, "smallest_skew_dimension": smallest_skew_dimension,
              "seeds_needed": seeds_needed}


# ------------------------------------------------------------ the cases of the checked exercises
def first_order_gap(rng):
    """ex-measuring-2: 1 - s(I + eps A) measured, without cancellation, on square A of every
    kind (1 x 1 up to 64 x 64, symmetric, skew, a large trace), within the next order."""
    cases = []
    for n in (1, 2, 5, 25, 64):                           # 1 x 1: nothing to be skew
        A = rng.standard_normal((n, n))
        cases += [(A, 1e-3, "Gaussian"), (A, -1e-4, "Gaussian")]
    B = rng.standard_normal((6, 6))
    cases += [(B + B.T, 1e-3, "symmetric"), (B - B.T, 1e-3, "skew-symmetric"),
              (B + 4 * np.eye(6), 1e-3, "with a large trace"), (rng.uniform(-1, 1, (9, 9)), 2e-3, "uniform")]
    for A, eps, kind in cases:
        n = A.shape[0]
        M = np.eye(n) + eps * A
        N = (M - M.T) / 2                                  # 1 - s = 2 ||M_n||^2 / ||M||^2, no cancellation
        # within the next order: relative size of the terms in eps^3 and eps^4
        rtol = 4 * (2 * abs(eps * np.trace(A)) + eps ** 2 * np.sum(A * A)) / n + 1e-6
        yield Case((A, eps), 2 * np.sum(N * N) / np.sum(M * M), rtol=rtol, atol=1e-15,
                   facts={"kind": kind, "n": n, "eps": eps})


def expected_symmetry(rng):
    """ex-errata-1: the exact mean of s for Gaussian entries at every n, from its Beta law."""
    from scipy import stats

    # For Gaussian entries ||M_s||^2 and ||M_n||^2 are independent chi-squares with n(n+1)/2
    # and n(n-1)/2 degrees of freedom, so s = 2B - 1 with B ~ Beta(n(n+1)/4, n(n-1)/4): its mean
    # is known exactly at every n (a 1 x 1 matrix is symmetric: s = 1).
    for n in (1, 2, 3, 4, 7, 16, 64, 1000, 10**6):
        exact = 1.0 if n == 1 else 2 * float(stats.beta(n * (n + 1) / 4, n * (n - 1) / 4).mean()) - 1
        yield Case((n,), exact, rtol=1e-6, facts={"n": n})


def equal_masking_rate(rng):
    """ex-objectives-to-structure-2: the masking rate at which a long sequence's masked-masked
    and masked-unmasked pairs balance, found by bisecting on the counts of masked positions."""
    for N in (10**7, 10**9):                     # long sequences
        lo, hi = 1, N - 1                        # the fewest masked positions m with m(m-1) >= m(N-m)
        while lo < hi:
            m = (lo + hi) // 2
            lo, hi = (lo, m) if m * (m - 1) >= m * (N - m) else (m + 1, hi)
        # the ratio of the two counts moves by about 4 per unit of rate here: within 1e-5 of 1
        yield Case((), lo / N, atol=2.5e-6, facts={"N": N})


def untrained_symmetry(rng):
    """ex-training-dynamics-2: a Monte Carlo mean of s over untrained layers of every shape."""
    # width 1 (s = 1 exactly), narrow and wide heads (r < d, r = d, r > d), rank one
    for d, r, draws in ((1, 4, 500), (2, 1, 20000), (2, 9, 20000), (3, 3, 20000), (5, 40, 4000),
                        (12, 3, 4000), (40, 10, 1000)):
        Wq, Wk = rng.standard_normal((draws, r, d)), rng.standard_normal((draws, r, d))
        M = np.swapaxes(Wq, 1, 2) @ Wk                          # draws x [d, d] = Wq^T Wk
        s = np.einsum("nij,nji->n", M, M) / np.einsum("nij,nij->n", M, M)
        mean, se = float(s.mean()), float(s.std(ddof=1) / np.sqrt(draws))
        # a Monte Carlo mean: within 4.5 standard errors, plus the leading order's own error
        yield Case((d, r), mean, atol=4.5 * se + 0.02 / d**2, facts={"draws": draws, "d": d, "r": r, "se": se})


def changed_positions(rng):
    """ex-training-dynamics-1: the positions whose logits move in an actual small decoder
    when one token is replaced, read from its logits."""
    import torch

    from ...train.models.objectives import lm_logits

    model = tiny_decoder()
    gen = torch.Generator().manual_seed(1)
    # a one-token sequence, the first and the last position, and positions in between
    for seq_len, ts in ((1, (0,)), (2, (0, 1)), (7, (0, 3, 6)), (12, (0, 5, 11)), (20, (19, 8))):
        ids = torch.randint(0, 50, (1, seq_len), generator=gen)
        with torch.no_grad():
            base = lm_logits(model, ids)
        for t in ts:
            other = ids.clone()
            other[0, t] = (other[0, t] + 1) % 50
            with torch.no_grad():
                moved = (lm_logits(model, other) - base).abs().amax(dim=-1)[0]   # per position
            truth = [int(p) for p in torch.nonzero(moved > 1e-6).flatten()]
            yield Case((seq_len, t), truth, facts={"t": t, "seq_len": seq_len, "truth": listed(truth)})


def applied_update(rng):
    """ex-mechanism-1: the change of the form after a plain SGD step taken on the factors."""
    # the step is taken on the factors themselves; the answer sees only G, the gradients and eta
    for d_h, d, eta in ((1, 1, 0.3), (3, 5, 0.05), (6, 4, 1.0), (8, 8, 1e-3), (2, 7, 2.5)):
        Wq, Wk = rng.standard_normal((d_h, d)), rng.standard_normal((d_h, d))
        gq, gk = rng.standard_normal((d_h, d)), rng.standard_normal((d_h, d))
        stepped = (Wq - eta * gq).T @ (Wk - eta * gk) - Wq.T @ Wk
        yield Case((gq.T @ Wk + Wq.T @ gk, gq, gk, eta), stepped, rtol=1e-9, facts={"eta": eta, "d_h": d_h, "d": d})


def targets_per_token(rng):
    """ex-fig3-decided-1: a packed stream read block after block, wrapping around, counted
    token by token (the masked count averaged over draws of the mask)."""
    for steps, batch, block, n_tokens, rate in ((30, 4, 16, 600, 0.15), (7, 3, 8, 50, 0.45),
                                                (40, 2, 32, 1000, 0.25), (1, 1, 64, 64, 0.15)):
        seen, masked = np.zeros(n_tokens), np.zeros(n_tokens)
        draws = 200
        for _ in range(draws):
            pos = 0
            for _ in range(steps * batch):
                idx = (pos + np.arange(block)) % n_tokens
                pos = (pos + block) % n_tokens
                seen[idx] += 1
                masked[idx] += rng.random(block) < rate
        want = np.array([seen.mean() / draws, masked.mean() / draws])
        yield Case((steps, batch, block, n_tokens, rate), want, rtol=np.array([1e-9, 0.05]),
                   facts={"steps": steps, "batch": batch, "block": block, "n_tokens": n_tokens, "rate": rate})


def expected_ratio(rng):
    """ex-context-prediction-2: the ratio of context to predicted pairs, counted pair by pair."""
    cases = [np.full(5, 0.1), np.full(64, 0.02), np.linspace(0.01, 0.2, 12), np.linspace(0.2, 0.01, 12),
             rng.uniform(0.0, 0.3, 9), np.array([0.0, 0.0, 0.5, 0.1])]
    for p in cases:
        N = len(p)
        # every ordered pair of positions j < i: j is context for the target i (a causal mask)
        context = sum(p[j] for i in range(N) for j in range(i))
        predicted = sum(p[i] for i in range(N) for j in range(i))
        yield Case((p,), context / predicted, rtol=1e-9, facts={"N": N})


def differing_repeats(rng):
    """ex-survey-1: the keys printed more than once in Table S2 with different numbers,
    counted from the printed numbers themselves, not from the catalog's problem flags."""
    from ...zoo.catalog import published_scores

    s2 = published_scores()
    s2 = s2[s2["table"] == "S2"]
    distinct = s2.groupby("key").apply(lambda g: len({(r.median, r.q25, r.q75) for r in g.itertuples()}),
                                       include_groups=False)
    yield Case((), set(distinct[distinct > 1].index))


def agreeing_heads(rng):
    """ex-survey-2: SmolLM2's head counts (9 query heads sharing 3 key heads) on random
    weights: the heads whose form scores the same when paired as the model pairs them
    (transformers' repeat_kv) and when key heads are tiled (h mod 3)."""
    import torch
    from transformers.models.llama.modeling_llama import repeat_kv   # how the model pairs its heads

    n_heads, n_kv, d_head, d = 9, 3, 8, 24
    g = torch.Generator().manual_seed(3)
    Wq = torch.randn(n_heads, d_head, d, generator=g, dtype=torch.float64)
    Wk = torch.randn(n_kv, d_head, d, generator=g, dtype=torch.float64)
    paired = {"grouped": repeat_kv(Wk[None], n_heads // n_kv)[0],   # the key head attention uses
              "modulo": Wk.repeat(n_heads // n_kv, 1, 1)}           # key heads tiled: h mod n_kv
    scores = {}
    for pairing, K in paired.items():
        M = Wq.transpose(1, 2) @ K                                   # [heads, d, d]
        scores[pairing] = np.array([symmetry_def(m) for m in M.numpy()])
    yield Case((), {h for h in range(n_heads) if abs(scores["grouped"][h] - scores["modulo"][h]) < 1e-12})


#: the case generators an exercise's data may name as ``cases: <name>``
CASES = {f.__name__: f for f in (first_order_gap, expected_symmetry, equal_masking_rate, untrained_symmetry,
                                 changed_positions, applied_update, targets_per_token, expected_ratio,
                                 differing_repeats, agreeing_heads)}
