"""Rotary position embeddings (RoPE) and the query-key form they leave behind.

With RoPE a query at position ``i`` and a key at position ``j`` are rotated before the dot
product: ``q_i = R(i) Wq x``, ``k_j = R(j) Wk y``, so the logit of one head is

    x^T Wq_h^T R(i)^T R(j) Wk_h y = x^T Wq_h^T R(j - i) Wk_h y,

a bilinear form that depends on the offset ``j - i``.  The paper's ``W_qk = Wq^T Wk``
(Eq. 2) is this form at offset 0 only.  ``R`` is block diagonal with 2 x 2 rotations by
angles ``delta * theta_k``, ``theta_k = base^(-2k / d_head)``; in the Hugging Face layout
(``rotate_half``) dimension ``k`` is paired with ``k + d_head / 2``.
"""

from __future__ import annotations

import math
import numbers

import torch

__all__ = ["rotary_matrix", "rotated_key_factors"]


def rotary_matrix(delta: float, d_head: int, base: float = 10000.0,
                  dtype=torch.float64) -> torch.Tensor:
    """``R(delta)`` (``d_head x d_head``) in the Hugging Face ``rotate_half`` layout.

    ``d_head`` an even whole number, ``base`` a finite number > 0 and ``delta`` a finite offset:
    otherwise the angles ``delta * base^(-2k / d_head)`` are NaN (a negative or zero base, an
    infinite offset) and the "rotation" holds NaN, so each is refused in one line."""
    if isinstance(d_head, bool) or not isinstance(d_head, numbers.Integral) or d_head < 2 or d_head % 2:
        raise ValueError(f"d_head must be an even whole number >= 2 for rotary embeddings, got {d_head!r}.")
    d_head = int(d_head)
    for name, v, positive in (("base", base, True), ("delta", delta, False)):
        try:
            x = float(v)
        except (TypeError, ValueError, OverflowError):   # (an int beyond float's range)
            x = float("nan")
        if isinstance(v, bool) or not math.isfinite(x) or (positive and x <= 0):
            raise ValueError(f"rotary {name} must be a finite number{' > 0' if positive else ''} "
                             f"(the angles are delta * base^(-2k / d_head)), got {v!r}.")
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise ValueError(f"rotary dtype must be a real floating torch dtype (the entries are cosines and sines); "
                         f"got {dtype!r}.")
    # as Python floats: a 0-d numpy array passed the check and then could not multiply a tensor
    delta, base = float(delta), float(base)
    half = d_head // 2
    theta = base ** (-torch.arange(half, dtype=dtype) * 2 / d_head)
    c, s = torch.cos(delta * theta), torch.sin(delta * theta)
    R = torch.zeros(d_head, d_head, dtype=dtype)
    idx = torch.arange(half)
    R[idx, idx] = c
    R[idx + half, idx + half] = c
    R[idx, idx + half] = -s
    R[idx + half, idx] = s
    return R


def rotated_key_factors(K: torch.Tensor, delta: float, base: float = 10000.0) -> torch.Tensor:
    """Per-head key factors ``R(delta) K_h`` (``K``: ``[n_heads, d_head, d]``).

    With ``Q`` the query factors, ``sum_h Q_h^T (R(delta) K_h)`` is the layer's form at
    query-key offset ``delta``; pass ``Q`` and the result to the ``*_factored`` scores.
    """
    if not isinstance(K, torch.Tensor):
        import numpy as np

        K = np.asarray(K)
        if not (np.issubdtype(K.dtype, np.number) or K.dtype == bool):
            raise ValueError(f"K must hold numbers, got an array of dtype {K.dtype}.")
        K = torch.as_tensor(K)
    if K.is_complex():   # the float64 cast dropped the imaginary part with only a UserWarning
        raise ValueError("K is complex; the rotary form is defined for real key factors [n_heads, d_head, d].")
    if K.ndim != 3:
        raise ValueError(f"K must be [n_heads, d_head, d], got shape {tuple(K.shape)}.")
    R = rotary_matrix(delta, K.shape[1], base, dtype=torch.float64).to(K.device)
    return R @ K.to(torch.float64)
