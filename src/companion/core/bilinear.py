"""The query-key bilinear form of a self-attention layer (Eqs. 1-2, Remark S1.5, Eq. S20).

Conventions
-----------
* ``Wq``: ``[n_heads * d_head, d]`` and ``Wk``: ``[n_kv_heads * d_head, d]``, both in
  ``nn.Linear`` layout ``[out, in]``; head ``h`` owns rows ``h*d_head : (h+1)*d_head``.
* The form of head ``h`` is ``M_h = Wq_h^T Wk_g(h)`` (``d x d``, rank ``<= d_head``), rows
  on the query side: the logit of query token ``x`` and key token ``y`` in head ``h`` is
  ``x^T M_h y`` (before the ``1/sqrt(d_head)`` scaling).
* The layer's form is ``M = sum_h M_h`` (Eq. S20).  With multi-head attention
  (``n_kv_heads == n_heads``) this is simply ``Wq^T Wk``.  With grouped queries the heads
  that share a key head can be summed first, ``M = sum_g (sum_{h: g(h)=g} Wq_h)^T Wk_g``
  (:func:`layer_factors`): the same matrix, of rank ``<= n_kv_heads * d_head``.  This
  regrouping is only for the layer's form; each head's ``M_h`` keeps its own query head.
* Grouped-query attention shares key head ``g(h) = h // (n_heads / n_kv_heads)`` between
  consecutive query heads, as ``repeat_kv`` does in Hugging Face transformers.
  ``pairing="modulo"`` reproduces the pairing ``g(h) = h % n_kv_heads`` that the authors'
  released code used, so the difference can be measured; it is not how the models compute.
"""

from __future__ import annotations

import numbers
from typing import Literal

import numpy as np
import torch

Pairing = Literal["grouped", "modulo"]

__all__ = ["kv_head_index", "head_factors", "layer_factors", "bilinear_form",
           "per_head_bilinear_forms"]


def _head_count(value, name: str) -> int:
    """``value`` as a head count: a whole number at least 1 (``4.0`` reads as 4); ``True``,
    ``2.5``, ``"2"`` or ``0`` are refused naming ``name`` (0 divided by zero, ``True`` was one head)."""
    whole = isinstance(value, numbers.Integral) or (isinstance(value, numbers.Real) and float(value).is_integer())
    if isinstance(value, (bool, np.bool_)) or not whole or value < 1:
        raise ValueError(f"{name} must be a whole number of heads, at least 1; got {value!r}.")
    return int(value)


def kv_head_index(n_heads: int, n_kv_heads: int | None = None, pairing: Pairing = "grouped"):
    """Key/value head used by each query head: a list of length ``n_heads``."""
    n_heads = _head_count(n_heads, "n_heads")
    n_kv = n_heads if n_kv_heads is None else _head_count(n_kv_heads, "n_kv_heads")
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
    try:
        arr = np.asarray(x)
    except ValueError:   # a ragged nested list: numpy's message names no input
        raise ValueError(f"{name} is a nested list whose rows differ in length; pass a 2-D weight [out, in].") from None
    if arr.dtype == object or not (np.issubdtype(arr.dtype, np.number) or arr.dtype == bool):
        # torch's "can't convert np.ndarray of type numpy.object_" named no input
        raise ValueError(f"{name} must hold numbers, got an array of dtype {arr.dtype}; pass the weight as a "
                         "numeric array or tensor.")
    from .scores import _as_float64, _from_numpy

    if arr.dtype.kind == "f" and arr.dtype.itemsize > 8:   # long double: torch has no such dtype
        return _as_float64(arr, name, check_finite=False)    # (refuses values beyond float64's range)
    return _from_numpy(np.ascontiguousarray(arr)) if arr.ndim else torch.as_tensor(arr)


def head_factors(
    Wq, Wk, n_heads: int, n_kv_heads: int | None = None, pairing: Pairing = "grouped"
) -> tuple[torch.Tensor, torch.Tensor]:
    """Split the projections into per-head factors ``Q, K`` of shape ``[n_heads, d_head, d]``.

    ``K[h]`` is the key head paired with query head ``h`` (expanded for GQA), so that
    ``M_h = Q[h]^T K[h]``.  The factors keep the input dtype and device.
    """
    Q, K, n_kv = _split_heads(Wq, Wk, n_heads, n_kv_heads)
    index = kv_head_index(n_heads, n_kv, pairing)
    return Q, K[torch.tensor(index, device=K.device)]


def _split_heads(Wq, Wk, n_heads: int, n_kv_heads: int | None):
    """``Wq`` as ``[n_heads, d_head, d]``, ``Wk`` as ``[n_kv_heads, d_head, d]`` (views,
    input dtype and device) and ``n_kv_heads``, after checking that the shapes split."""
    q, k = _tensor(Wq, "Wq"), _tensor(Wk, "Wk")
    if q.ndim != 2 or k.ndim != 2:
        raise ValueError(f"Wq and Wk must be 2-D [out, in]; got {tuple(q.shape)} and {tuple(k.shape)}.")
    n_heads = _head_count(n_heads, "n_heads")
    n_kv = n_heads if n_kv_heads is None else _head_count(n_kv_heads, "n_kv_heads")
    if q.shape[1] != k.shape[1]:
        raise ValueError(f"Wq and Wk read different input widths: {q.shape[1]} vs {k.shape[1]}.")
    if 0 in q.shape or 0 in k.shape:   # no width or no rows: a raw reshape error further on
        raise ValueError(f"Wq and Wk must have rows and an input width; got {tuple(q.shape)} and {tuple(k.shape)}.")
    if q.shape[0] % n_heads:
        raise ValueError(f"Wq has {q.shape[0]} rows, not divisible into {n_heads} heads.")
    d_head = q.shape[0] // n_heads
    if k.shape[0] != n_kv * d_head:
        raise ValueError(
            f"Wk has {k.shape[0]} rows; expected n_kv_heads * d_head = {n_kv} * {d_head}."
        )
    kv_head_index(n_heads, n_kv)  # checks the head counts
    return q.reshape(n_heads, d_head, q.shape[1]), k.reshape(n_kv, d_head, k.shape[1]), n_kv


def layer_factors(
    Wq, Wk, n_heads: int, n_kv_heads: int | None = None, pairing: Pairing = "grouped"
) -> tuple[torch.Tensor, torch.Tensor]:
    """Factors ``A, B`` of the layer's form, ``M = A^T B = sum_h Wq_h^T Wk_g(h)`` (Eq. S20),
    with as few rows as the key heads allow.

    ``B`` is ``Wk`` itself (``[n_kv_heads * d_head, d]``) and row block ``g`` of ``A`` is the
    sum of the query heads that read key head ``g``: ``A_g = sum_{h: g(h) = g} Wq_h``, so
    ``A^T B = sum_g A_g^T Wk_g = sum_h Wq_h^T Wk_g(h)``, the same matrix as
    :func:`bilinear_form` (for either ``pairing``), of rank ``<= n_kv_heads * d_head``
    instead of ``n_heads * d_head``.  The scores of ``M`` then come from ``r x r`` Gram
    matrices with ``r = n_kv_heads * d_head`` (``structure_scores(Wq=A, Wk=B)``).

    Rotary embeddings do not change this: they rotate every query and key head by the same
    ``R`` acting on the ``d_head`` coordinates, so ``sum_h Wq_h^T R Wk_g(h) =
    sum_g A_g^T R Wk_g`` at every offset (the package scores offset 0, ``R = I``).

    Only for the layer's form: a head's own form ``M_h`` needs its own query head
    (:func:`head_factors`).  Without grouping (``n_kv_heads == n_heads``) ``A, B`` are
    ``Wq, Wk`` as given (input dtype and device); with grouping ``A`` is summed in float64
    (summing in float32 would round each entry) and ``B`` keeps ``Wk``'s dtype.
    """
    Q, K, n_kv = _split_heads(Wq, Wk, n_heads, n_kv_heads)
    n_heads = Q.shape[0]   # the checked count (4.0 given reads as 4)
    kv_head_index(n_heads, n_kv, pairing)  # checks the pairing's name
    d_head, d = Q.shape[1], Q.shape[2]
    if n_kv == n_heads:  # both pairings are the identity: nothing to sum
        return Q.reshape(-1, d), K.reshape(-1, d)
    group = n_heads // n_kv
    Q = Q.to(torch.float64)
    if pairing == "grouped":  # heads g*group .. (g+1)*group - 1 read key head g
        A = Q.reshape(n_kv, group, d_head, d).sum(dim=1)
    else:  # "modulo": heads g, g + n_kv, g + 2 n_kv, ... read key head g
        A = Q.reshape(group, n_kv, d_head, d).sum(dim=0)
    return A.reshape(-1, d), K.reshape(-1, d)


def _product_dtype(Q: torch.Tensor, K: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The factors in a dtype their product cannot wrap around or overflow in: integer and bool
    weights (an int8 product wrapped around: 100 * 120 read -72) and half-precision ones (a
    float16 form of weights near 300 overflowed to inf, and every entry was rounded to 11 bits)
    are multiplied in float64; float32 and float64 keep their dtype."""
    if Q.dtype == K.dtype and Q.dtype in (torch.float32, torch.float64):
        return Q, K
    if Q.is_complex() or K.is_complex():
        raise ValueError("Wq and Wk are complex; the bilinear form is defined for real weights.")
    return Q.to(torch.float64), K.to(torch.float64)


def per_head_bilinear_forms(Wq, Wk, n_heads: int, n_kv_heads: int | None = None,
                            pairing: Pairing = "grouped") -> torch.Tensor:
    """Stack ``[n_heads, d, d]`` of the per-head forms ``M_h = Wq_h^T Wk_g(h)`` (integer, bool
    and half-precision weights multiplied in float64, :func:`_product_dtype`)."""
    Q, K = _product_dtype(*head_factors(Wq, Wk, n_heads, n_kv_heads, pairing))
    return Q.transpose(-1, -2) @ K


def bilinear_form(Wq, Wk, n_heads: int = 1, n_kv_heads: int | None = None,
                  pairing: Pairing = "grouped") -> torch.Tensor:
    """The layer's form ``M = sum_h Wq_h^T Wk_g(h)`` (``d x d``, Eq. S20); integer, bool and
    half-precision weights are multiplied in float64 (:func:`_product_dtype`)."""
    Q, K = _product_dtype(*head_factors(Wq, Wk, n_heads, n_kv_heads, pairing))
    # sum_h Q_h^T K_h == Q_flat^T K_flat with the heads stacked along the rows
    return Q.reshape(-1, Q.shape[-1]).transpose(0, 1) @ K.reshape(-1, K.shape[-1])
