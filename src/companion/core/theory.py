"""Numerical checks of the paper's Section 2 and Appendix S1.1-S1.4 (and S1.5-S1.6 errata).

Each function computes one side of a claim so that a test or a chapter can put the other
side next to it.  Conventions as in :mod:`companion.core.bilinear`: ``nn.Linear`` weights
``[out, in]``, bilinear form ``M = Wq^T Wk`` with rows on the query side, raw logit of query
``x`` and key ``y`` equal to ``x^T M y``.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from ..base.phrasing import finite as _finite   # a finite number (an int past float's range: no)

__all__ = [
    "qk_logits", "bilinear_logits", "order_preserved", "operator_square_factor",
    "minilm_logit_check", "update_from_beta", "proof_beta_linear", "softmax_beta",
    "context_prediction_parts", "norm_ratio_monte_carlo", "norm_ratio_closed_form",
    "autoregressive_counts", "positional_expectations", "s68_expectations", "masked_counts", "s79_expectation",
    "pair_decomposition", "beta_pair_statistics", "symmetric_update_share",
    "random_symmetry_scores", "eq15_score", "lemma_s111_counterexample",
    "norm_spread",
]


def _t(x) -> torch.Tensor:
    """float64 tensor, detached from any autograd graph."""
    if isinstance(x, torch.Tensor):
        return x.detach().to(torch.float64)
    return torch.as_tensor(np.asarray(x), dtype=torch.float64)


# ----------------------------------------------------------------- Sec. 2.1, S1.2


def qk_logits(X, Wq, Wk, n_heads: int) -> torch.Tensor:
    """Per-head raw logits the way a Transformer computes them: ``Q_h K_h^T`` (Eq. 1).

    ``X``: ``[N, d]`` token embeddings; ``Wq, Wk``: ``[n_heads*d_head, d]``.  Returns
    ``[n_heads, N, N]`` without the ``1/sqrt(d_head)`` factor.
    """
    from .bilinear import _head_count

    X, Wq, Wk = _t(X), _t(Wq), _t(Wk)
    n_heads = _head_count(n_heads, "n_heads")
    if Wq.ndim != 2 or Wq.shape != Wk.shape or Wq.shape[0] % n_heads:
        raise ValueError(f"Wq and Wk must be [n_heads * d_head, d] of one shape with rows divisible into {n_heads} "
                         f"heads; got {tuple(Wq.shape)} and {tuple(Wk.shape)}.")
    if X.ndim != 2 or X.shape[1] != Wq.shape[1]:
        raise ValueError(f"X must be [N, d] with d = {Wq.shape[1]}; got {tuple(X.shape)}.")
    N, dh = X.shape[0], Wq.shape[0] // n_heads
    Q = (X @ Wq.T).view(N, n_heads, dh).transpose(0, 1)
    K = (X @ Wk.T).view(N, n_heads, dh).transpose(0, 1)
    return Q @ K.transpose(-1, -2)


def bilinear_logits(X, M) -> torch.Tensor:
    """Logits as a bilinear form, ``[X M X^T]_ij = x_i^T M x_j`` (Eq. 2).

    ``X``: ``[..., N, d]`` (one sequence or a batch), ``M``: ``[..., d, d]`` (one form or a
    stack of head forms); their leading axes broadcast as in ``torch.matmul``."""
    X, M = _t(X), _t(M)
    if X.ndim < 2 or M.ndim < 2 or M.shape[-1] != M.shape[-2] or M.shape[-1] != X.shape[-1]:
        raise ValueError(f"X must be [..., N, d] and M [..., d, d] with the same width d; got X of shape "
                         f"{tuple(X.shape)} and M of shape {tuple(M.shape)}.")
    _broadcast("X", X.shape[:-2], "M", M.shape[:-2])
    # transpose the last two axes only: X.T of a batch [B, N, d] reversed all three
    return X @ M @ X.transpose(-1, -2)


def _broadcast(a: str, sa, b: str, sb) -> None:
    """Refuse leading (batch) axes ``sa`` of ``a`` and ``sb`` of ``b`` that do not broadcast."""
    try:
        np.broadcast_shapes(tuple(sa), tuple(sb))   # (torch's first call imports for a second)
    except ValueError:
        raise ValueError(f"the leading axes of {a} {tuple(sa)} and of {b} {tuple(sb)} do not broadcast; pass "
                         "one batch size for both (or one of them unbatched).") from None


def order_preserved(raw, probs, min_gap: float = 0.0) -> bool:
    """Eq. 5: within every row, ``alpha_ij < alpha_ij'`` exactly when ``a_ij < a_ij'``.

    ``min_gap`` skips pairs of logits closer than that (ties at the precision the
    probabilities were stored in, e.g. float32 from a real model)."""
    import numbers

    if isinstance(min_gap, (bool, np.bool_)) or not isinstance(min_gap, numbers.Real) \
            or not _finite(min_gap) or min_gap < 0:
        # NaN (or inf) skipped every pair, and any order, a reversed one too, read as kept
        raise ValueError(f"min_gap must be a finite number >= 0 (logits closer than it are not compared); got "
                         f"{min_gap!r}.")
    raw, probs = _t(raw).numpy(), _t(probs).numpy()
    if raw.shape != probs.shape or raw.ndim < 1:
        raise ValueError(f"raw logits and probabilities must have one shape [..., N]; got {raw.shape} and "
                         f"{probs.shape} (broadcasting would compare each row with another's probabilities).")
    if not (np.isfinite(raw).all() and np.isfinite(probs).all()):
        # a NaN compares false with every gap, so its pairs were skipped and the order read as kept
        raise ValueError("raw logits or probabilities hold NaN or Inf: no order can be compared there; mask "
                         "those entries out first.")
    gap = raw[..., :, None] - raw[..., None, :]
    dr = np.sign(gap)
    dp = np.sign(probs[..., :, None] - probs[..., None, :])
    # only pairs closer than min_gap are skipped: at min_gap=0 two tied logits are compared too, and Eq. 5
    # ('exactly when') asks for equal weights there (skipping every tie passed [0.2, 0.3] for logits [1, 1])
    keep = ~(np.abs(gap) < min_gap)
    off_diagonal = ~np.eye(raw.shape[-1], dtype=bool)
    if raw.shape[-1] > 1 and not (keep & off_diagonal).any():
        # every pair skipped: an order of no pair compared is no order kept (it read True)
        raise ValueError(f"no two logits of a row are min_gap={min_gap!r} apart, so no pair is compared; use a "
                         "smaller min_gap (the precision of the stored probabilities).")
    return bool(np.array_equal(dr[keep], dp[keep]))


def operator_square_factor(M, x_i, x_j) -> tuple[float, float]:
    """Remark S1.4: ``P(x) = (x^T M x_j) x_j`` applied twice equals ``c P(x)`` with
    ``c = x_j^T M x_j``.  Returns ``(c, ||P(P(x_i)) - c P(x_i)||)``; ``P`` is a projection
    (idempotent) only when ``c = 1``."""
    M, x_i, x_j = (np.asarray(a, dtype=np.float64) for a in (M, x_i, x_j))
    if M.ndim != 2 or M.shape[0] != M.shape[1] or x_i.shape != (M.shape[0],) or x_j.shape != (M.shape[0],):
        raise ValueError(f"M must be [d, d] and x_i, x_j vectors [d] of its width; got M {M.shape}, x_i {x_i.shape} "
                         f"and x_j {x_j.shape}.")
    P = lambda x: float(x @ M @ x_j) * x_j  # noqa: E731
    c = float(x_j @ M @ x_j)
    return c, float(np.linalg.norm(P(P(x_i)) - c * P(x_i)))


def minilm_logit_check(model, tokenizer, text: str, layers=None) -> list[dict]:
    """Per-head attention of a Hugging Face BERT layer against ``x^T M_h y``.

    Runs ``model`` (eager attention) on ``text`` with ``output_attentions`` and
    ``output_hidden_states``; reads ``Wq, bq, Wk, bk`` from the layer's modules.  The logit
    transformers computes is ``(Wq x + bq)^T (Wk y + bk) / sqrt(d_h)``; it equals
    ``x^T M_h y / sqrt(d_h)`` plus a per-query term (cancelled by the softmax) plus the
    per-key term ``bq_h^T Wk_h y`` (not cancelled).  Returns the largest deviations of the
    log-probabilities: ``exact`` (bilinear form + key-bias term) and ``bilinear_only``,
    one dict per layer in ``layers`` (default: all).
    """
    from .bilinear import per_head_bilinear_forms

    enc = tokenizer(text, return_tensors="pt")
    with torch.no_grad():
        out = model(**enc, output_attentions=True, output_hidden_states=True)
    layers = range(model.config.num_hidden_layers) if layers is None else layers
    return [_bert_layer_check(model, out, layer) for layer in layers]


def _bert_layer_check(model, out, layer: int) -> dict:
    from .bilinear import per_head_bilinear_forms

    att = model.encoder.layer[layer].attention.self
    n_heads = model.config.num_attention_heads
    Wq, Wk = att.query.weight.detach().double(), att.key.weight.detach().double()
    bq = att.query.bias.detach().double()
    dh = Wq.shape[0] // n_heads
    X = out.hidden_states[layer][0].double()  # input of this layer, [N, d]
    Mh = per_head_bilinear_forms(Wq, Wk, n_heads)  # [H, d, d]
    bil = torch.stack([X @ Mh[h] @ X.T for h in range(n_heads)])
    key_bias = torch.stack([(X @ Wk[h * dh:(h + 1) * dh].T) @ bq[h * dh:(h + 1) * dh]
                            for h in range(n_heads)])  # [H, N]: bq_h^T Wk_h y_j
    ours_exact = torch.log_softmax((bil + key_bias[:, None, :]) / math.sqrt(dh), dim=-1)
    ours_bil = torch.log_softmax(bil / math.sqrt(dh), dim=-1)
    theirs = torch.log(out.attentions[layer][0].double())
    qk = qk_logits(X, Wq, Wk, n_heads)
    return {
        "layer": layer, "n_tokens": X.shape[0], "n_heads": n_heads, "d_head": dh,
        "qk_vs_bilinear": float((qk - bil).abs().max() / bil.abs().max()),
        "exact": float((ours_exact - theirs).abs().max()),
        "bilinear_only": float((ours_bil - theirs).abs().max()),
        "order_preserved": order_preserved((bil + key_bias[:, None, :]) / math.sqrt(dh),
                                           out.attentions[layer][0], min_gap=1e-3),
        "ranks": [int(torch.linalg.matrix_rank(Mh[h])) for h in range(n_heads)],
        "sum_of_heads_error": float((Mh.sum(0) - Wq.T @ Wk).abs().max()),
        "bias_logit_share": float(key_bias.std() / bil.std()),
    }


# ----------------------------------------------------------------- Prop. 2.2, S1.3


def update_from_beta(X, beta) -> torch.Tensor:
    """Eq. 8 / S37: ``sum_i sum_j beta_ij x_i x_j^T = X^T B X`` (summed over a batch)."""
    X, B = _t(X), _t(beta)
    if X.ndim < 2 or B.ndim < 2 or B.shape[-1] != B.shape[-2] or B.shape[-1] != X.shape[-2]:
        raise ValueError(f"X must be [..., N, d] and beta [..., N, N] over the same N tokens; got {tuple(X.shape)} "
                         f"and {tuple(B.shape)}.")
    _broadcast("X", X.shape[:-2], "beta", B.shape[:-2])
    return torch.einsum("...ia,...ij,...jb->ab", X, B, X)


def proof_beta_linear(delta, X) -> torch.Tensor:
    """The coefficient the proof defines (Eqs. S31-S36): ``beta_ij = delta_i^T x_j``
    (before masking to ``j in C_i``); exact for attention without softmax (Eq. S33).

    ``delta`` and ``X``: ``[..., N, d]`` over the same ``N`` tokens and width ``d``."""
    delta, X = _t(delta), _t(X)
    if delta.ndim < 2 or X.ndim < 2 or delta.shape[-2:] != X.shape[-2:]:
        raise ValueError(f"delta and X must both be [..., N, d] over the same tokens and width; got delta of shape "
                         f"{tuple(delta.shape)} and X of shape {tuple(X.shape)}.")
    _broadcast("delta", delta.shape[:-2], "X", X.shape[:-2])
    return delta @ X.transpose(-1, -2)


def softmax_beta(delta, X, alpha) -> torch.Tensor:
    """With the softmax kept: ``beta_ij = alpha_ij (delta_i^T x_j - sum_k alpha_ik delta_i^T x_k)``.

    Each row sums to zero: the softmax Jacobian centres the coefficients.
    """
    raw = proof_beta_linear(delta, X)
    alpha = _t(alpha)
    if alpha.shape != raw.shape:   # a row [N] of weights was broadcast over every query
        raise ValueError(f"alpha must hold the attention weights of every query, shape {tuple(raw.shape)} "
                         f"(delta's tokens by X's); got {tuple(alpha.shape)}.")
    return alpha * (raw - (alpha * raw).sum(-1, keepdim=True))


# ----------------------------------------------------------------- S1.4.1-S1.4.2


def context_prediction_parts(X, beta, j_star: int) -> dict:
    """Prop. S1.7: the part of ``sum beta_ij x_i x_j^T`` where token ``j_star`` is context
    (terms with ``j = j_star``) and where it is predicted (terms with ``i = j_star``)."""
    X = np.asarray(X, dtype=np.float64)
    beta = np.asarray(beta, dtype=np.float64)
    N = X.shape[0] if X.ndim == 2 else -1
    if X.ndim != 2 or beta.shape != (N, N):
        raise ValueError(f"X must be [N, d] and beta [N, N]; got {X.shape} and {beta.shape}.")
    if isinstance(j_star, (bool, np.bool_)) or not isinstance(j_star, (int, np.integer)) or not 0 <= j_star < N:
        # a negative index read another token (-1: the last) silently
        raise ValueError(f"j_star must be a token position 0..{N - 1}; got {j_star!r}.")
    y = X[j_star]
    as_context = np.outer(beta[:, j_star] @ X, y)     # (sum_i beta_i* x_i) y^T   (S47)
    as_predicted = np.outer(y, beta[j_star, :] @ X)   # y (sum_j beta_*j x_j)^T   (S50)
    return {"as_context": as_context, "as_predicted": as_predicted,
            "context_vector": beta[:, j_star] @ X, "predicted_vector": beta[j_star, :] @ X}


def _covariance(Sigma) -> np.ndarray:
    """``Sigma`` as a float64 covariance matrix: square, finite, symmetric, no negative variance
    (a non-square one gave a ratio from its first rows silently, and a non-symmetric one a
    Monte Carlo of its lower triangle only), or a one-line ValueError."""
    S = np.asarray(Sigma, dtype=np.float64)
    if S.ndim != 2 or S.shape[0] != S.shape[1] or S.shape[0] < 1:
        raise ValueError(f"Sigma must be a square covariance matrix [d, d]; got shape {S.shape}.")
    if not np.isfinite(S).all() or not np.allclose(S, S.T, rtol=1e-10, atol=1e-12 * np.abs(S).max()) \
            or (np.diag(S) < 0).any():
        raise ValueError("Sigma must be a covariance matrix: finite, symmetric, with no negative variance on its "
                         "diagonal.")
    return S


def _seed(seed) -> int:
    """A seed for numpy's generator: a whole number >= 0 (a raw SeedSequence TypeError before)."""
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a whole number >= 0; got {seed!r}.")
    return int(seed)


def _count(n, name: str) -> int:
    if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"{name} must be a whole number >= 1; got {n!r}.")
    return int(n)


def norm_ratio_monte_carlo(Sigma, beta, case: str, n_samples: int, sigma_y: float = 1.0,
                           seed: int = 0) -> dict:
    """Monte Carlo of Prop. S1.8 (``case='context'``) and Cor. S1.9 (``'prediction'``).

    Embeddings ``x_i ~ N(0, Sigma)`` i.i.d., ``y ~ N(0, sigma_y^2 I)``, fixed coefficients
    ``beta`` (length N).  Returns the mean squared norm of every column and every row of
    the update ``(sum_i beta_i x_i) y^T`` (context) or ``y (sum_i beta_i x_i)^T``
    (prediction), with their standard errors.
    """
    Sigma = _covariance(Sigma)
    beta = np.asarray(beta, dtype=np.float64)
    if beta.ndim != 1 or beta.size < 1 or not np.isfinite(beta).all():
        raise ValueError(f"beta must be a finite vector of coefficients, one per token; got shape {beta.shape}"
                         f"{'' if np.isfinite(beta).all() else ' holding NaN or Inf'}.")
    if case not in ("context", "prediction"):
        raise ValueError(f"case must be 'context' or 'prediction', got {case!r}.")
    n_samples = _count(n_samples, "n_samples")
    import numbers

    if isinstance(sigma_y, (bool, np.bool_)) or not isinstance(sigma_y, numbers.Real) \
            or not _finite(sigma_y) or sigma_y <= 0:
        raise ValueError(f"sigma_y must be a finite standard deviation > 0 (y ~ N(0, sigma_y^2 I)); got {sigma_y!r}.")
    d = Sigma.shape[0]
    rng = np.random.default_rng(_seed(seed))
    try:
        L = np.linalg.cholesky(Sigma)
    except np.linalg.LinAlgError:
        raise ValueError("Sigma is not positive definite, so no Gaussian embedding can be drawn from it; add a "
                         "small multiple of the identity or drop its null directions.") from None
    z = rng.standard_normal((n_samples, len(beta), d)) @ L.T   # x_i
    v = np.einsum("i,sid->sd", beta, z)                         # sum_i beta_i x_i
    y = sigma_y * rng.standard_normal((n_samples, d))
    # context: Delta = v y^T -> column k = y_k v, row m = v_m y
    a, b = (v, y) if case == "context" else (y, v)              # Delta = a b^T
    col2 = (b ** 2) * (a ** 2).sum(1, keepdims=True)            # ||column k||^2 = b_k^2 ||a||^2
    row2 = (a ** 2) * (b ** 2).sum(1, keepdims=True)            # ||row m||^2 = a_m^2 ||b||^2
    # the standard error of a mean uses the sample standard deviation (n - 1); one sample has none
    # (std with ddof 0 gave 0, as if the mean were exact)
    se = (lambda a: a.std(0, ddof=1) / math.sqrt(n_samples)) if n_samples > 1 \
        else (lambda a: np.full(a.shape[1], np.nan))
    return {"col": col2.mean(0), "row": row2.mean(0), "col_se": se(col2), "row_se": se(row2)}


def norm_ratio_closed_form(Sigma, case: str) -> np.ndarray:
    """Eqs. S62 and S67: ``E||col_k||^2 / E||row_m||^2`` as a ``[k, m]`` array.

    context: ``Tr(Sigma) / (d Sigma_mm)``; prediction: ``d Sigma_kk / Tr(Sigma)``.
    """
    Sigma = _covariance(Sigma)
    # the ratios do not change with the scale of Sigma; at unit scale its trace cannot overflow (a Sigma of
    # 1e308 gave inf / inf = NaN) nor its variances underflow
    peak = np.abs(Sigma).max()
    Sigma = Sigma / peak if peak > 0 else Sigma
    d, tr, diag = Sigma.shape[0], np.trace(Sigma), np.diag(Sigma)
    if (case in ("context", "prediction") and not tr > 0) or (case == "context" and not (diag > 0).all()):
        # the context ratio divides by each variance, the prediction ratio by their sum: inf or NaN
        raise ValueError(f"Sigma has a zero variance on its diagonal (dimension {int(np.argmin(diag))}); the {case} "
                         "ratio of Eqs. S62/S67 divides by it. Drop that dimension or give it a variance.")
    if case == "context":
        return np.broadcast_to(tr / (d * diag)[None, :], (d, d)).copy()
    if case == "prediction":
        return np.broadcast_to((d * diag / tr)[:, None], (d, d)).copy()
    raise ValueError(f"case must be 'context' or 'prediction', got {case!r}.")


# ----------------------------------------------------------------- S1.4.3 (Prop. S1.10)


def _token_ids(seqs, vocab_size) -> np.ndarray:
    """``seqs`` as a 2-D integer array whose ids all lie in ``[0, vocab_size)``, or a one-line
    ValueError naming the first id outside it (an id past the vocabulary made the per-token
    counts silently longer than ``vocab_size``, a negative one a raw numpy error)."""
    seqs = np.asarray(seqs)
    if isinstance(vocab_size, (bool, np.bool_)) or not isinstance(vocab_size, (int, np.integer)) or vocab_size < 1:
        raise ValueError(f"vocab_size must be a whole number >= 1; got {vocab_size!r}.")
    if seqs.ndim != 2 or not np.issubdtype(seqs.dtype, np.integer):
        raise ValueError(f"seqs must be a 2-D array of token ids [n_sequences, N]; got shape {seqs.shape} of "
                         f"{seqs.dtype}.")
    if 0 in seqs.shape:   # the means over no sequence came out NaN with only a RuntimeWarning
        raise ValueError(f"seqs holds no token (shape {seqs.shape}); the counts are means over at least one "
                         "sequence of at least one token.")
    outside = (seqs < 0) | (seqs >= vocab_size)
    if outside.any():
        raise ValueError(f"token id {int(seqs[outside].flat[0])} lies outside the vocabulary of vocab_size="
                         f"{vocab_size} ids (0 to {vocab_size - 1}); pass the tokenizer's full vocabulary size.")
    return seqs


def autoregressive_counts(seqs, vocab_size: int) -> tuple[np.ndarray, np.ndarray]:
    """Eqs. S72-S73 averaged over the sequences: for every token id, the mean number of
    tokens it is context for (``mu_c``: ``N - k`` per occurrence at position ``k``) and the
    mean number of tokens that predict it (``mu_p``: ``k - 1``).  Positions are 1-based."""
    seqs = _token_ids(seqs, vocab_size)
    n_seq, N = seqs.shape
    k = np.arange(1, N + 1)
    mu_c = np.bincount(seqs.ravel(), weights=np.tile(N - k, n_seq), minlength=vocab_size)
    mu_p = np.bincount(seqs.ravel(), weights=np.tile(k - 1, n_seq), minlength=vocab_size)
    return mu_c / n_seq, mu_p / n_seq


def positional_frequencies(seqs, vocab_size: int) -> np.ndarray:
    """Empirical ``Pr[t_k = t]`` as a ``[N, vocab_size]`` array."""
    seqs = _token_ids(seqs, vocab_size)
    n_seq, N = seqs.shape
    P = np.zeros((N, vocab_size))
    for pos in range(N):
        P[pos] = np.bincount(seqs[:, pos], minlength=vocab_size) / n_seq
    return P


def positional_expectations(seqs, vocab_size: int) -> tuple[np.ndarray, np.ndarray]:
    """Eqs. S74-S75 from positional frequencies: the expected context and prediction counts
    ``sum_k (N-k) Pr[t_k=t]`` and ``sum_k (k-1) Pr[t_k=t]`` (the sums Eq. S68 sets up)."""
    P = positional_frequencies(seqs, vocab_size)
    N = P.shape[0]
    k = np.arange(1, N + 1)
    return (N - k) @ P, (k - 1) @ P


def s68_expectations(seqs, vocab_size: int) -> tuple[np.ndarray, np.ndarray]:
    """Deprecated name of :func:`positional_expectations` (kept for one release)."""
    import warnings

    warnings.warn("companion.core.theory.s68_expectations is now positional_expectations (Eqs. S74-S75)",
                  DeprecationWarning, stacklevel=2)
    return positional_expectations(seqs, vocab_size)


def _masking_rate(rho) -> None:
    """A masking rate lies in (0, 1): the share of tokens masked (Eqs. S77-S79); outside it the
    expectation ``rho (1 - rho)`` turns negative, and NaN would pass every comparison."""
    import numbers

    if isinstance(rho, (bool, np.bool_)) or not isinstance(rho, numbers.Real) or not 0 < rho < 1:
        raise ValueError(f"masking rate rho must lie in (0, 1), got {rho!r}.")


def masked_counts(seqs, vocab_size: int, rho: float, n_draws: int, seed: int = 0):
    """Eqs. S77-S78 averaged over sequences and ``n_draws`` random masks of rate ``rho``:
    an unmasked occurrence is context for every masked token, a masked occurrence is
    predicted by every unmasked token."""
    _masking_rate(rho)
    n_draws = _count(n_draws, "n_draws")
    seqs = _token_ids(seqs, vocab_size)
    rng = np.random.default_rng(_seed(seed))
    mu_c = np.zeros(vocab_size)
    mu_p = np.zeros(vocab_size)
    for _ in range(n_draws):
        m = rng.random(seqs.shape) < rho
        n_masked = m.sum(1, keepdims=True)
        n_unmasked = seqs.shape[1] - n_masked
        mu_c += np.bincount(seqs.ravel(), weights=(~m * n_masked).ravel(), minlength=vocab_size)
        mu_p += np.bincount(seqs.ravel(), weights=(m * n_unmasked).ravel(), minlength=vocab_size)
    norm = n_draws * seqs.shape[0]
    return mu_c / norm, mu_p / norm


def s79_expectation(seqs, vocab_size: int, rho: float, as_printed: bool = False) -> np.ndarray:
    """Expected ``mu_c = mu_p`` under masking: ``(N-1) rho (1-rho) sum_k Pr[t_k=t]``.

    ``as_printed=True`` gives Eq. S79 as printed, which carries an extra factor ``N``.
    ``rho`` outside (0, 1) is refused, as :func:`masked_counts` refuses it.
    """
    _masking_rate(rho)
    P = positional_frequencies(seqs, vocab_size)
    N = P.shape[0]
    value = (N - 1) * rho * (1 - rho) * P.sum(0)
    return N * value if as_printed else value


# ----------------------------------------------------------------- S1.4.4-S1.4.5


def pair_decomposition(X, beta) -> dict:
    """Eqs. S111-S113: split ``sum_ij beta_ij x_i x_j^T`` into the diagonal terms and, over
    pairs ``i < j``, a symmetric part ``(beta_ij + beta_ji) S_ij`` and a skew part
    ``(beta_ij - beta_ji) N_ij`` with ``K_ij = x_i x_j^T = S_ij + N_ij``."""
    X = np.asarray(X, dtype=np.float64)
    B = np.asarray(beta, dtype=np.float64)
    if X.ndim != 2 or B.shape != (X.shape[0], X.shape[0]):
        raise ValueError(f"X must be [N, d] and beta [N, N] over the same N tokens; got {X.shape} and {B.shape}.")
    diag = np.einsum("i,ia,ib->ab", np.diag(B), X, X)
    iu = np.triu(np.ones_like(B, dtype=bool), k=1)
    plus = np.where(iu, B + B.T, 0.0)
    minus = np.where(iu, B - B.T, 0.0)
    K = lambda W: X.T @ W @ X  # noqa: E731  sum_ij W_ij x_i x_j^T
    sym = 0.5 * (K(plus) + K(plus).T)
    skew = 0.5 * (K(minus) - K(minus).T)
    return {"diagonal": diag, "symmetric": sym, "skew": skew, "total": X.T @ B @ X}


def beta_pair_statistics(beta, allowed=None) -> dict:
    """Thm. S1.14's premise: how alike ``beta_ij`` and ``beta_ji`` are over pairs ``i < j``.

    ``beta``: ``[..., N, N]``.  Returns the Pearson correlation, the share of pairs with equal
    sign (among pairs where both are non-zero) and the share of pairs where one of the two
    is exactly zero (e.g. forbidden by a causal mask).  ``allowed`` is not used (kept for the
    signature): a mask given there was silently ignored, so one is refused; zero the forbidden
    entries of ``beta`` instead (they then count in ``one_zero``).
    """
    if allowed is not None:
        raise ValueError("beta_pair_statistics does not apply a mask: pass allowed=None and set the "
                         "forbidden entries of beta to 0 (a causal mask's pairs then count in one_zero).")
    B = np.asarray(beta, dtype=np.float64)
    if B.ndim < 2 or B.shape[-1] != B.shape[-2] or B.shape[-1] < 2:
        raise ValueError(f"beta must be [..., N, N] with N >= 2 tokens (pairs i < j); got shape {B.shape}.")
    if not np.isfinite(B).all():
        # NaN coefficients compared unequal in sign and non-zero: a same-sign share of 0
        raise ValueError("beta holds NaN or Inf coefficients; check the gradients it was read from.")
    N = B.shape[-1]
    iu = np.triu_indices(N, k=1)
    a = B[..., iu[0], iu[1]].ravel()
    b = B[..., iu[1], iu[0]].ravel()
    both = (a != 0) & (b != 0)
    corr = float(np.corrcoef(a[both], b[both])[0, 1]) if both.sum() > 2 else float("nan")
    return {"correlation": corr,
            "same_sign": float(np.mean(np.sign(a[both]) == np.sign(b[both]))) if both.any() else float("nan"),
            "one_zero": float(np.mean(~both))}


def symmetric_update_share(p: float, N: int) -> dict:
    """Remark S1.15, Eq. S119, for masking rate ``p`` and sequence length ``N``.

    ``ratio_exact``: ``pN(pN-1) / (pN(N-pN))`` (terms inside the masked set over the cross
    terms, as the equation is written); ``ratio_limit``: its large-N value ``p/(1-p)``;
    ``share_of_all``: the masked-masked terms as a share of all off-diagonal terms,
    ``(pN-1)/(N-1)`` which tends to ``p``.
    """
    import numbers

    if not all(isinstance(v, numbers.Real) and not isinstance(v, (bool, np.bool_)) for v in (p, N)):
        raise ValueError(f"p (a masking rate) and N (a sequence length) must be numbers; got p={p!r}, N={N!r}.")
    if not (0 < p < 1 and _finite(N) and N >= 2):
        raise ValueError(f"need 0 < p < 1 and a finite N >= 2, got p={p}, N={N}.")
    m = p * N
    if m < 1:   # pN (pN - 1) would count a negative number of masked pairs
        raise ValueError(f"p * N = {m:g} masked tokens (p={p}, N={N}): Eq. S119 needs at least one; use a "
                         "larger p or N.")
    # pN (pN - 1) / (pN (N - pN)) with the common pN cancelled: the products overflowed to inf / inf = NaN
    # from N ~ 1e154 on
    return {"ratio_exact": (m - 1) / (N - m), "ratio_limit": p / (1 - p),
            "share_of_all": (m - 1) / (N - 1)}


def norm_spread(M) -> dict:
    """Variance across rows and across columns of the row and column L2 norms of ``M``
    (the quantities compared in Eqs. S100-S101 and S103)."""
    M = np.asarray(M, dtype=np.float64)
    if M.ndim != 2 or min(M.shape) < 2 or not np.isfinite(M).all():
        raise ValueError(f"norm_spread needs a finite matrix of at least 2 rows and 2 columns (a spread over one row "
                         f"is 0/0); got shape {M.shape}.")
    # the norms at unit scale: their squares neither overflow (entries of 1e200 gave NaN) nor underflow
    # (entries of 1e-200 gave norms of 0, read as no spread); the variance is scaled back
    peak = np.abs(M).max()
    unit = M / peak if peak > 0 else M
    with np.errstate(over="ignore", under="ignore"):   # a variance beyond float64's range is inf (or 0)
        scale2 = float(np.float64(peak) ** 2) if peak > 0 else 1.0
    out = {}
    for name, norms in (("row", np.linalg.norm(unit, axis=1)), ("col", np.linalg.norm(unit, axis=0))):
        if norms.max() - norms.min() <= 16 * np.finfo(float).eps * norms.max():
            # norms equal up to rounding: no spread and no outlier (dividing the rounding noise of the
            # mean by that of the deviation gave a z of -0.82 for three equal rows)
            out[f"{name}_var"], out[f"{name}_max_z"] = 0.0, 0.0
        else:
            with np.errstate(over="ignore", under="ignore"):
                out[f"{name}_var"] = float(norms.var(ddof=1) * scale2)
            out[f"{name}_max_z"] = float((norms.max() - norms.mean()) / norms.std(ddof=1))
    return {k: out[k] for k in ("row_var", "col_var", "row_max_z", "col_max_z")}


# ----------------------------------------------------------------- errata helpers


def random_symmetry_scores(n: int, n_samples: int, seed: int = 0) -> np.ndarray:
    """Symmetry scores ``tr(M^2)/||M||_F^2`` of ``n_samples`` Gaussian ``n x n`` matrices."""
    from .null import null_scores

    return null_scores(n, n_samples=n_samples, seed=seed, device="cpu")["symmetry"].to_numpy()


def eq15_score(M) -> float:
    """Eq. 15 exactly as printed: ``2 (||M_s||^2 - ||M_n||^2) / ||M||^2`` (range ``[-2, 2]``)."""
    M = np.asarray(M, dtype=np.float64)
    if M.ndim != 2 or M.shape[0] != M.shape[1]:
        raise ValueError(f"Eq. 15 scores a square matrix; got shape {M.shape}.")
    if not np.isfinite(M).all() or not np.abs(M).max() > 0:
        raise ValueError("Eq. 15 divides by ||M||^2: a zero matrix (or one holding NaN or Inf) has no score.")
    # at unit scale (the score has none): squares of 1e200 overflowed to a NaN score, those of 1e-200
    # underflowed and the matrix was refused as zero
    M = M / np.abs(M).max()
    Ms, Mn = (M + M.T) / 2, (M - M.T) / 2
    return float(2 * ((Ms ** 2).sum() - (Mn ** 2).sum()) / (M ** 2).sum())


def lemma_s111_counterexample(eps: float = 0.01, K: float = 5.0, A: float = 1.5) -> dict:
    """Two zero-mean distributions contradicting Lemma S1.11.

    ``a`` is uniform on ``[-A, A]`` (variance ``A^2/3``); ``b`` takes ``K`` with probability
    ``eps/2``, ``-K`` with probability ``eps/2`` and ``0`` otherwise (variance ``eps K^2``).
    With the defaults ``Var a > Var b`` but ``Pr[b > z] = eps/2 > 0 = Pr[a > z]`` for every
    ``z`` in ``[A, K)``, beyond the lemma's threshold ``sqrt(sigma_a sigma_b) - mu``.
    """
    if not (0 < eps <= 1):   # also refuses NaN
        raise ValueError(f"eps={eps!r} is no probability: b takes +-K with probability eps/2 each, so eps must "
                         "lie in (0, 1].")
    for name, v in (("A", A), ("K", K)):
        if not (_finite(v) and v > 0):
            raise ValueError(f"{name}={v!r} must be a finite number > 0 (a is uniform on [-A, A], b takes +-K).")
    var_a, var_b = A ** 2 / 3, eps * K ** 2
    z = 0.5 * (A + K)
    return {"var_a": var_a, "var_b": var_b,
            "threshold": math.sqrt(math.sqrt(var_a) * math.sqrt(var_b)) - 0.0,
            "z": z, "p_a": max(0.0, (A - z) / (2 * A)), "p_b": eps / 2 if z < K else 0.0}
