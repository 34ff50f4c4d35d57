"""The query-key bilinear form of a self-attention layer (Eqs. 1-2, Remark S1.5, Eq. S20).

Conventions
-----------
* ``Wq``: ``[n_heads * d_head, d]`` and ``Wk``: ``[n_kv_heads * d_head, d]``, both in
  ``nn.Linear`` layout ``[out, in]``; head ``h`` owns rows ``h*d_head : (h+1)*d_head``.
* The form of head ``h`` is ``M_h = Wq_h^T Wk_g(h)`` (``d x d``, rank ``<= d_head``), rows
  on the query side: the logit of query token ``x`` and key token ``y`` in head ``h`` is
  ``x^T M_h y`` (before the ``1/sqrt(d_head)`` scaling).
* The layer's form is ``M = sum_h M_h`` (Eq. S20).  With multi-head attention
  (``n_kv_heads == n_heads``) this is simply ``Wq^T Wk``.
* Grouped-query attention shares key head ``g(h) = h // (n_heads / n_kv_heads)`` between
  consecutive query heads, as ``repeat_kv`` does in Hugging Face transformers.
  ``pairing="modulo"`` reproduces the pairing ``g(h) = h % n_kv_heads`` that the authors'
  released code used, so the difference can be measured; it is not how the models compute.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import torch

Pairing = Literal["grouped", "modulo"]

__all__ = ["kv_head_index", "head_factors", "bilinear_form", "per_head_bilinear_forms"]


def kv_head_index(n_heads: int, n_kv_heads: int | None = None, pairing: Pairing = "grouped"):
    """Key/value head used by each query head: a list of length ``n_heads``."""
    n_kv = n_heads if n_kv_heads is None else n_kv_heads
    if n_heads < 1 or n_kv < 1:
        raise ValueError(f"head counts must be positive, got n_heads={n_heads}, n_kv_heads={n_kv}.")
    if n_heads % n_kv:
        raise ValueError(
            f"n_heads ({n_heads}) must be a multiple of n_kv_heads ({n_kv}) for grouped-query attention."
        )
    group = n_heads // n_kv
    if pairing == "grouped":
        return [h // group for h in range(n_heads)]
    if pairing == "modulo":
        return [h % n_kv for h in range(n_heads)]
    raise ValueError(f"unknown pairing {pairing!r}; use 'grouped' (correct) or 'modulo'.")


def _tensor(x, name: str) -> torch.Tensor:
    if isinstance(x, torch.Tensor):
        from .scores import _strided   # sparse and quantized read as dense; nested and meta refused

        return _strided(x.detach(), name)
    return torch.as_tensor(np.asarray(x))


def head_factors(
    Wq, Wk, n_heads: int, n_kv_heads: int | None = None, pairing: Pairing = "grouped"
) -> tuple[torch.Tensor, torch.Tensor]:
    """Split the projections into per-head factors ``Q, K`` of shape ``[n_heads, d_head, d]``.

    ``K[h]`` is the key head paired with query head ``h`` (expanded for GQA), so that
    ``M_h = Q[h]^T K[h]``.  The factors keep the input dtype and device.
    """
    q, k = _tensor(Wq, "Wq"), _tensor(Wk, "Wk")
    if q.ndim != 2 or k.ndim != 2:
        raise ValueError(f"Wq and Wk must be 2-D [out, in]; got {tuple(q.shape)} and {tuple(k.shape)}.")
    n_kv = n_heads if n_kv_heads is None else n_kv_heads
    if q.shape[1] != k.shape[1]:
        raise ValueError(f"Wq and Wk read different input widths: {q.shape[1]} vs {k.shape[1]}.")
    if q.shape[0] % n_heads:
        raise ValueError(f"Wq has {q.shape[0]} rows, not divisible into {n_heads} heads.")
    d_head = q.shape[0] // n_heads
    if k.shape[0] != n_kv * d_head:
        raise ValueError(
            f"Wk has {k.shape[0]} rows; expected n_kv_heads * d_head = {n_kv} * {d_head}."
        )
    index = kv_head_index(n_heads, n_kv, pairing)
    Q = q.reshape(n_heads, d_head, q.shape[1])
    K = k.reshape(n_kv, d_head, k.shape[1])[torch.tensor(index, device=k.device)]
    return Q, K


def per_head_bilinear_forms(Wq, Wk, n_heads: int, n_kv_heads: int | None = None,
                            pairing: Pairing = "grouped") -> torch.Tensor:
    """Stack ``[n_heads, d, d]`` of the per-head forms ``M_h = Wq_h^T Wk_g(h)``."""
    Q, K = head_factors(Wq, Wk, n_heads, n_kv_heads, pairing)
    return Q.transpose(-1, -2) @ K


def bilinear_form(Wq, Wk, n_heads: int = 1, n_kv_heads: int | None = None,
                  pairing: Pairing = "grouped") -> torch.Tensor:
    """The layer's form ``M = sum_h Wq_h^T Wk_g(h)`` (``d x d``, Eq. S20)."""
    Q, K = head_factors(Wq, Wk, n_heads, n_kv_heads, pairing)
    # sum_h Q_h^T K_h == Q_flat^T K_flat with the heads stacked along the rows
    return Q.reshape(-1, Q.shape[-1]).transpose(0, 1) @ K.reshape(-1, K.shape[-1])
