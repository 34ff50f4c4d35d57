"""Structure scores of a square matrix: symmetry (Def. 3.1) and directionality (Def. 3.2).

Orientation
-----------
Throughout the package a query-key bilinear form is ``M = Wq^T Wk`` where ``Wq`` and
``Wk`` are weights in ``nn.Linear`` layout ``[out, in]``.  ``M`` is ``d_in x d_in`` and
its *rows* index the query-side input dimensions, its *columns* the key side, so that the
raw attention logit of a query token ``x`` and a key token ``y`` is ``x^T M y`` (Eq. 2).
This is the paper's ``W_qk = W_q W_k^T`` with ``W_q = Wq^T`` ("x W_q" convention).

The symmetry score does not depend on the orientation (``s(M^T) = s(M)``); the
directionality score changes sign under transposition (``d(M^T) = -d(M)``), so the
orientation is part of the API.

What is computed
----------------
``symmetry_score``
    ``s = tr(M M) / ||M||_F^2 = (||M_s||^2 - ||M_n||^2) / ||M||_F^2`` in ``[-1, 1]``
    (Eqs. 15-16 and Lemma S1.16).  This is the quantity the paper's tables and figures
    report.  Eq. 15 as printed carries an extra factor 2 (range ``[-2, 2]``).
``directionality_score``
    ``d = (R - C) / (R + C)`` (Eq. 17) where ``R`` and ``C`` summarise the row and column
    L2 norms that exceed ``mean + gamma * std`` (unbiased std).  Negative values mean
    column dominance.  Two variants:

    * ``"excess"`` (default): ``R`` sums the *excess* of each outlier norm above the
      threshold.  This is what produced the published tables.
    * ``"eq18"``: ``R`` sums the outlier norms themselves, as Eqs. 18-19 are printed.

    Both return 0 when no row and no column of a non-zero matrix exceeds its threshold.

The zero matrix has no score: Def. 3.1 divides by ``||M||_F^2 = 0`` and Eq. 17 by
``R + C = 0`` with no norm to compare, so both scores are NaN there (never 0.0, which
would be averaged in as a matrix with no symmetry or no direction); a caller's median or
mean then reads NaN, and :func:`companion.survey.summaries.encoder_decoder_contrast`
names the layer that could not be scored.

Every matrix (and each factor) is first divided by its largest absolute entry, so the
scores are invariant to the scale of their input over the whole float64 range (their
squares would otherwise under- or overflow).  All scores are computed in float64 on the device the input lives on (GPU tensors stay on
the GPU), and returned as a Python ``float`` for one matrix or a NumPy array for a stack
``[..., d, d]``.

Factored forms
--------------
``symmetry_score_factored(Wq, Wk)`` and ``directionality_score_factored(Wq, Wk)`` give
the same numbers from the projections without forming ``M``: every quantity the scores
need is a trace or a diagonal of products of ``r x r`` Gram matrices, which costs
``O(d r^2)`` instead of ``O(d^2 r)``.  This pays for per-head scores (``r = d_head``) and
for the layer forms of grouped-query attention, whose query heads can be summed per key
head first (``r = n_kv_heads * d_head``, :func:`companion.core.bilinear.layer_factors`).
"""

from __future__ import annotations

import numbers
import warnings
from typing import Literal, Union

import numpy as np
import torch

from ..base.phrasing import finite as _finite   # a finite number (an int past float's range: no)

ArrayLike = Union[np.ndarray, torch.Tensor]
Variant = Literal["excess", "eq18"]

DIRECTIONALITY_VARIANTS = ("excess", "eq18")

__all__ = [
    "symmetry_score",
    "directionality_score",
    "symmetry_score_factored",
    "directionality_score_factored",
    "structure_scores",
    "DIRECTIONALITY_VARIANTS",
]


# ----------------------------------------------------------------------------- input checks


def _as_float64(x: ArrayLike, name: str, check_finite: bool = True) -> torch.Tensor:
    """Return ``x`` as a float64 tensor on its own device, or raise a clear ValueError.

    ``check_finite=False`` leaves the NaN/Inf check to the caller (see
    :func:`_unit_scale_checked`, which gets it from the pass it makes anyway).
    """
    if isinstance(x, torch.Tensor):
        t = _strided(x.detach(), name)
    elif isinstance(x, np.ndarray) or np.isscalar(x) or isinstance(x, (list, tuple)):
        if isinstance(x, np.ma.MaskedArray):
            n_masked = int(np.ma.count_masked(x))
            if n_masked:
                raise ValueError(f"{name} is a masked array with {n_masked} masked entries; the scores need "
                                 "every entry of the matrix: fill them (x.filled(value)) or pass x.data on "
                                 "purpose.")
            x = x.data
        try:
            arr = np.asarray(x)
        except ValueError:   # numpy's own 'inhomogeneous shape' message names no input
            raise ValueError(f"{name} is a nested list whose rows differ in length; pass a square matrix "
                             "[d, d] or a regular stack [..., d, d].") from None
        if arr.dtype == object or not (
            np.issubdtype(arr.dtype, np.number) or arr.dtype == bool
        ):
            raise ValueError(f"{name} must be numeric, got an array of dtype {arr.dtype}.")
        if np.iscomplexobj(arr):
            raise ValueError(
                f"{name} is complex; the scores are defined for real matrices (pass the real "
                "weights, or take .real yourself if the imaginary part is known to be zero)."
            )
        as64 = np.asarray(arr, dtype=np.float64, order="C")   # (ascontiguousarray makes a 0-d array 1-d)
        if arr.dtype.kind == "f" and arr.dtype.itemsize > 8:  # long double: may not fit float64
            lost = ((arr != 0) & (as64 == 0)) | (np.isfinite(arr) & ~np.isfinite(as64))
            if lost.any():
                raise ValueError(f"{name} holds values outside float64's range (e.g. {arr[lost].flat[0]!r}); "
                                 "they would become 0 or Inf. Rescale it first: the scores do not depend "
                                 "on the matrix's scale.")
        t = _from_numpy(as64)
    else:
        raise ValueError(
            f"{name} must be a NumPy array or a torch tensor, got {type(x).__name__}."
        )
    if t.is_complex():
        raise ValueError(f"{name} is complex; the scores are defined for real matrices.")
    t = t.to(torch.float64)
    if check_finite and not bool(torch.isfinite(t).all()):
        _raise_not_finite(name, t)
    return t


def _from_numpy(arr: np.ndarray) -> torch.Tensor:
    """``torch.from_numpy`` without its warning for a read-only array (a memory map, an array
    marked not writeable): the scores never write to their input, so sharing its memory is safe
    and copying a large matrix would only cost memory."""
    if arr.flags.writeable:
        return torch.from_numpy(arr)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="The given NumPy array is not writable")
        return torch.from_numpy(arr)


def _strided(t: torch.Tensor, name: str) -> torch.Tensor:
    """``t`` as an ordinary dense tensor with values: sparse, quantized and MKL-DNN tensors
    are read as the matrices they stand for; nested tensors (matrices of several shapes)
    and meta tensors (shapes without values) are refused, naming ``name``."""
    if t.is_nested:
        raise ValueError(f"{name} is a nested tensor (matrices of several shapes); score each matrix on its own, "
                         "or pass a regular stack [..., d, d].")
    if t.is_meta or t.device.type == "meta":
        raise ValueError(f"{name} is on the meta device: it has a shape but no values. Load the weights first "
                         "(e.g. without device_map='meta' or init_empty_weights), then score them.")
    if t.is_quantized:
        t = t.dequantize()
    if t.layout != torch.strided:
        try:
            t = t.to_dense()
        except (RuntimeError, NotImplementedError, TypeError) as err:
            raise ValueError(f"{name} has layout {t.layout} that cannot be read as a dense matrix "
                             f"({' '.join(str(err).split())[:100]}); pass t.to_dense().") from None
    return t


def _raise_not_finite(name: str, t: torch.Tensor | None = None):
    """Refuse a non-finite input; in a stack ``[..., a, b]`` (``t``: the stack, or its
    per-matrix peaks ``[..., 1, 1]``) the message names the first matrix that holds a NaN or
    an Inf (``M[7]`` of a stack of 12 layers), for one broken layer refuses the whole stack."""
    where = name
    if t is not None and t.ndim > 2:
        bad = ~torch.isfinite(t).all(dim=-1).all(dim=-1)
        if bool(bad.any()):
            idx = [int(i) for i in torch.nonzero(bad)[0].tolist()]
            where = f"{name}[{', '.join(map(str, idx))}] (of a stack of {int(bad.numel())} matrices)"
    raise ValueError(
        f"{where} contains NaN or Inf values; check the checkpoint or the computation "
        "that produced it (scores of non-finite matrices are meaningless)."
    )


def _square_stack(M: ArrayLike, name: str = "M") -> torch.Tensor:
    t = _as_float64(M, name)
    if t.ndim < 2:
        raise ValueError(
            f"{name} must be a square matrix or a stack [..., d, d]; got shape {tuple(t.shape)}."
        )
    if t.shape[-1] != t.shape[-2]:
        raise ValueError(
            f"{name} must be square in its last two dimensions; got shape {tuple(t.shape)}. "
            "For query/key weights of shape [r, d] use the *_factored functions."
        )
    if t.shape[-1] == 0:
        raise ValueError(f"{name} is empty (shape {tuple(t.shape)}).")
    return t


def _checked_pair(q: torch.Tensor, k: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``q, k`` as ``[.., r, d]`` factors of one shape, ``k`` on ``q``'s device."""
    for t, n in ((q, "Wq"), (k, "Wk")):
        if t.ndim < 2:
            raise ValueError(
                f"{n} must be a weight [r, d] in nn.Linear layout or a stack [..., r, d]; "
                f"got shape {tuple(t.shape)}."
            )
    for t, n in ((q, "Wq"), (k, "Wk")):
        if t.shape[-1] == 0 or t.shape[-2] == 0:
            raise ValueError(f"{n} is empty (shape {tuple(t.shape)}); a head needs at least one row and one column.")
    if q.shape != k.shape:
        raise ValueError(
            f"Wq and Wk must have the same shape [.., r, d]; got {tuple(q.shape)} and "
            f"{tuple(k.shape)}. For grouped-query attention expand the key heads first "
            "(companion.core.bilinear.head_factors)."
        )
    if q.device != k.device:
        k = k.to(q.device)
    return q, k


def _factor_pair(Wq: ArrayLike, Wk: ArrayLike,
                 check_finite: bool = True) -> tuple[torch.Tensor, torch.Tensor]:
    return _checked_pair(_as_float64(Wq, "Wq", check_finite), _as_float64(Wk, "Wk", check_finite))


def _unit_scale(t: torch.Tensor) -> torch.Tensor:
    """Divide each matrix of a stack ``[..., a, b]`` by its largest absolute entry.

    Both scores are invariant to a positive rescaling of ``M`` (and of each factor), but
    their squares and Gram products are not representable over the whole float64 range:
    entries near 1e-161 square into subnormals (the factored symmetry of
    ``Wq = [[2, 2, 2]], Wk = [[1.6e-161, 0, 0]]`` came out 0.335 instead of 1/3) and entries
    beyond ~1e154 square to infinity.  After this step every entry lies in ``[-1, 1]`` and
    the largest is exactly 1, so nothing under- or overflows.  All-zero matrices stay zero.
    """
    return _divide_by(t, t.abs().amax(dim=(-1, -2), keepdim=True))


def _balanced(q: torch.Tensor, k: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Unit-scaled float64 factors with each row pair ``(q_r, k_r)`` brought to one scale.

    ``M = sum_r q_r^T k_r`` is unchanged when row ``q_r`` is multiplied by ``2^s_r`` and row
    ``k_r`` by ``2^-s_r`` (exact: powers of two).  Rows of very different scales in the two
    factors (``q_r ~ 1``, ``k_r ~ 1e-200``) make the factored Gram products underflow to 0
    where ``M`` itself is representable; after this step each pair's peaks are within a
    factor 2 of each other, then both factors are unit-scaled again.  Pairs already within
    ``2^64`` of each other are left as they are (the common case: nothing changes)."""
    pq = q.abs().amax(dim=-1)
    pk = k.abs().amax(dim=-1)
    both = (pq > 0) & (pk > 0)
    eq = torch.frexp(torch.where(both, pq, torch.ones_like(pq))).exponent
    ek = torch.frexp(torch.where(both, pk, torch.ones_like(pk))).exponent
    shift = torch.div(ek - eq, 2, rounding_mode="floor")
    if not bool((shift.abs() > 64).any()):
        return q, k
    two = torch.tensor(2.0, dtype=q.dtype, device=q.device)
    q = q * torch.pow(two, shift.to(q.dtype)).unsqueeze(-1)
    k = k * torch.pow(two, (-shift).to(k.dtype)).unsqueeze(-1)
    return _unit_scale(q), _unit_scale(k)


def _divide_by(t: torch.Tensor, peak: torch.Tensor) -> torch.Tensor:
    return t / torch.where(peak > 0, peak, torch.ones_like(peak))


def _unit_scale_checked(t: torch.Tensor, name: str) -> torch.Tensor:
    """:func:`_unit_scale` in float64 that also rejects NaN/Inf, in two passes over ``t``.

    The peak ``max |t|`` is NaN or Inf exactly when some entry is (``amax`` propagates
    NaN), so no separate finiteness pass is needed; it is exact in ``t``'s own float
    dtype, and dividing ``t`` by the float64 peak promotes each entry to float64 first,
    so the result equals converting ``t`` to float64 and then rescaling, bit for bit.
    """
    peak = t.abs().amax(dim=(-1, -2), keepdim=True)
    if not bool(torch.isfinite(peak).all()):
        _raise_not_finite(name, peak)
    peak = peak.to(torch.float64)
    if t.dtype == torch.float64:
        return _divide_by(t, peak)
    # the same numbers as _divide_by(t, peak) (the promotion to float64 is exact), but
    # dividing a float64 copy in place is ~10x faster than torch's mixed-dtype broadcast
    return t.to(torch.float64).div_(torch.where(peak > 0, peak, torch.ones_like(peak)))


def _float_factor_pair(Wq: ArrayLike, Wk: ArrayLike) -> tuple[torch.Tensor, torch.Tensor]:
    """Like :func:`_factor_pair` but real floating torch tensors keep their dtype (the
    float64 conversion then happens inside :func:`_unit_scale_checked`)."""
    if all(isinstance(w, torch.Tensor) and w.is_floating_point() for w in (Wq, Wk)):
        return _checked_pair(_strided(Wq.detach(), "Wq"), _strided(Wk.detach(), "Wk"))
    return _factor_pair(Wq, Wk, check_finite=False)


def _to_output(t: torch.Tensor):
    """Python float for a scalar, NumPy array otherwise."""
    t = t.detach().cpu()
    if t.ndim == 0:
        return float(t)
    return t.numpy()


# ----------------------------------------------------------------------------- symmetry


def _symmetry_from_traces(tr_mm: torch.Tensor, fro2: torch.Tensor) -> torch.Tensor:
    # ||M||_F^2 = 0 only for the zero matrix (unit-scaled, a non-zero one has an entry of 1):
    # Def. 3.1 is 0/0 there, so NaN
    safe = torch.where(fro2 > 0, fro2, torch.ones_like(fro2))
    s = torch.where(fro2 > 0, tr_mm / safe, torch.full_like(fro2, float("nan")))
    # round-off can push |s| a hair above 1 for exactly (skew-)symmetric matrices
    return s.clamp(-1.0, 1.0)


def symmetry_score(M: ArrayLike):
    """Symmetry score ``s = tr(M^2) / ||M||_F^2`` in ``[-1, 1]`` (Def. 3.1, Eq. S130).

    Equal to ``(||M_s||_F^2 - ||M_n||_F^2) / ||M||_F^2`` with ``M_s, M_n`` the symmetric and
    skew-symmetric parts (Eq. 16).  ``+1``: symmetric, ``-1``: skew-symmetric, ``~1/n`` for an
    ``n x n`` matrix with i.i.d. zero-mean entries.  Zero matrix: NaN (``0/0``, Def. 3.1 is
    undefined there; see the module docstring).

    Parameters
    ----------
    M : array or tensor of shape ``[d, d]`` or ``[..., d, d]``.

    Returns
    -------
    float for one matrix, ``np.ndarray`` of shape ``[...]`` for a stack.
    """
    return _to_output(_symmetry_dense(_unit_scale(_square_stack(M))))


def _symmetry_dense(t: torch.Tensor) -> torch.Tensor:
    # both products go through one buffer (the same numbers as t * t.T and t * t: a
    # fresh d x d allocation costs more than the product, its pages are touched anew)
    buf = torch.empty_like(t, memory_format=torch.contiguous_format)
    tr_mm = torch.mul(t, t.transpose(-1, -2), out=buf).sum(dim=(-1, -2))  # tr(M M) = sum_ij M_ij M_ji
    fro2 = torch.mul(t, t, out=buf).sum(dim=(-1, -2))
    return _symmetry_from_traces(tr_mm, fro2)


def symmetry_score_factored(Wq: ArrayLike, Wk: ArrayLike):
    """Symmetry score of ``M = Wq^T Wk`` computed from the factors, without forming ``M``.

    ``Wq``, ``Wk``: ``[r, d]`` (nn.Linear layout) or stacks ``[..., r, d]``.  Uses
    ``tr(M M) = tr((Wk Wq^T)^2)`` and ``||M||_F^2 = tr((Wq Wq^T)(Wk Wk^T))``, all ``r x r``.
    Exactly the value ``symmetry_score(Wq^T @ Wk)`` up to floating-point rounding.
    """
    q, k = _factor_pair(Wq, Wk)
    # M scales by a positive factor: s is unchanged
    return _to_output(_symmetry_factored(*_balanced(_unit_scale(q), _unit_scale(k))))


def _grams(q: torch.Tensor, k: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The Gram matrices ``Wq Wq^T`` and ``Wk Wk^T`` (``[.., r, r]``) both scores need."""
    return q @ q.transpose(-1, -2), k @ k.transpose(-1, -2)


def _symmetry_factored(q: torch.Tensor, k: torch.Tensor,
                       grams: tuple[torch.Tensor, torch.Tensor] | None = None) -> torch.Tensor:
    """The factored symmetry of checked, unit-scaled float64 factors (``grams``: what
    :func:`_grams` returns for them, computed here if not given)."""
    cross = k @ q.transpose(-1, -2)  # [.., r, r] = Wk Wq^T
    tr_mm = (cross * cross.transpose(-1, -2)).sum(dim=(-1, -2))
    gq, gk = _grams(q, k) if grams is None else grams
    fro2 = (gq * gk).sum(dim=(-1, -2))  # tr(Gq Gk), both symmetric
    return _symmetry_from_traces(tr_mm, fro2)


# ----------------------------------------------------------------------------- directionality


def _outlier_mass(norms: torch.Tensor, gamma: float, variant: str) -> torch.Tensor:
    """Sum over the last axis of the outlier part of ``norms`` (Eqs. 18-19)."""
    n = norms.shape[-1]
    if norms.numel() == 0:   # a stack of no matrices (torch's std warns of 0 degrees of freedom)
        return norms.sum(dim=-1)
    mean = norms.mean(dim=-1, keepdim=True)
    std = norms.std(dim=-1, keepdim=True, unbiased=True) if n > 1 else torch.zeros_like(mean)
    threshold = mean + gamma * std
    excess = norms - threshold
    # Norms that are equal up to round-off (e.g. identical rows) must not count as
    # outliers through the last bits of the mean; a relative tolerance removes that.
    scale = norms.abs().amax(dim=-1, keepdim=True)
    tol = 64 * torch.finfo(norms.dtype).eps * scale
    is_out = excess > tol
    if variant == "excess":
        mass = torch.where(is_out, excess, torch.zeros_like(excess))
    else:  # "eq18"
        mass = torch.where(is_out, norms, torch.zeros_like(norms))
    return mass.sum(dim=-1)


def _directionality_from_norms(
    row_norms: torch.Tensor, col_norms: torch.Tensor, gamma: float, variant: str
) -> torch.Tensor:
    R = _outlier_mass(row_norms, gamma, variant)
    C = _outlier_mass(col_norms, gamma, variant)
    total = R + C
    safe = torch.where(total > 0, total, torch.ones_like(total))
    d = torch.where(total > 0, (R - C) / safe, torch.zeros_like(total))
    # the zero matrix (every row and column norm 0) has no direction: NaN, not 0
    zero = (row_norms.amax(dim=-1) == 0) & (col_norms.amax(dim=-1) == 0)
    return torch.where(zero, torch.full_like(d, float("nan")), d)


def _check_directionality_args(gamma: float, variant: str, d: int) -> float:
    """Refuse a bad ``variant``, ``gamma`` or width; return ``gamma`` as a Python float (a
    ``Fraction`` or a NumPy scalar passed the check and then met torch, which a Fraction broke)."""
    if variant not in DIRECTIONALITY_VARIANTS:
        raise ValueError(
            f"unknown directionality variant {variant!r}; choose one of {DIRECTIONALITY_VARIANTS}."
        )
    # a bool is no threshold (True would read as 1 standard deviation), text or None no number
    if (isinstance(gamma, (bool, np.bool_)) or not isinstance(gamma, numbers.Real)
            or not _finite(gamma) or gamma < 0):
        raise ValueError(f"gamma must be a finite number >= 0 (standard deviations above the mean norm; the "
                         f"paper uses 2), got {gamma!r}.")
    if d < 2:
        raise ValueError(
            f"the directionality score needs at least 2 rows and columns (a standard "
            f"deviation of norms); got d = {d}."
        )
    return float(gamma)


def directionality_score(M: ArrayLike, gamma: float = 2.0, variant: Variant = "excess"):
    """Directionality score ``d = (R - C) / (R + C)`` in ``[-1, 1]`` (Def. 3.2, Eq. 17).

    ``R`` (``C``) collects the rows (columns) of ``M`` whose L2 norm exceeds
    ``mean + gamma * std`` of the row (column) norms, with the unbiased (N - 1) standard
    deviation.  Negative ``d``: a few columns carry outlying norms (column dominance, what
    autoregressive training produces, Thm. S1.12); positive: row dominance; ``0`` when no
    norm of a non-zero matrix is an outlier; NaN for the zero matrix (``0/0`` in Eq. 17 with
    no norm to compare).

    Parameters
    ----------
    M : ``[d, d]`` or ``[..., d, d]``; rows index the query side (see module docstring).
    gamma : threshold in standard deviations (the paper uses 2).
    variant : ``"excess"`` sums the excess of each outlier norm above the threshold (the
        published tables); ``"eq18"`` sums the outlier norms themselves (Eq. 18 as printed).
    """
    t = _square_stack(M)
    gamma = _check_directionality_args(gamma, variant, t.shape[-1])
    # d is invariant to positive rescaling; unit scale avoids under/overflow
    return _to_output(_directionality_dense(_unit_scale(t), gamma, variant))


def _directionality_dense(t: torch.Tensor, gamma: float, variant: str) -> torch.Tensor:
    rows = torch.linalg.vector_norm(t, dim=-1)  # [.., d]: norm of each row
    cols = torch.linalg.vector_norm(t, dim=-2)  # [.., d]: norm of each column
    return _directionality_from_norms(rows, cols, gamma, variant)


def directionality_score_factored(
    Wq: ArrayLike, Wk: ArrayLike, gamma: float = 2.0, variant: Variant = "excess"
):
    """Directionality score of ``M = Wq^T Wk`` from the factors, without forming ``M``.

    Row ``i`` of ``M`` is ``q_i^T Wk`` with ``q_i`` column ``i`` of ``Wq``, so its squared
    norm is ``q_i^T (Wk Wk^T) q_i``; columns likewise with the roles swapped.
    """
    q, k = _factor_pair(Wq, Wk)
    gamma = _check_directionality_args(gamma, variant, q.shape[-1])
    return _to_output(_directionality_factored(*_balanced(_unit_scale(q), _unit_scale(k)), gamma, variant))


def _directionality_factored(q: torch.Tensor, k: torch.Tensor, gamma: float, variant: str,
                             grams: tuple[torch.Tensor, torch.Tensor] | None = None) -> torch.Tensor:
    """The factored directionality of checked, unit-scaled float64 factors (``grams`` as in
    :func:`_symmetry_factored`)."""
    gq, gk = _grams(q, k) if grams is None else grams  # [.., r, r]
    row2 = ((gk @ q) * q).sum(dim=-2)  # [.., d]
    col2 = ((gq @ k) * k).sum(dim=-2)
    rows = row2.clamp_min(0).sqrt()
    cols = col2.clamp_min(0).sqrt()
    return _directionality_from_norms(rows, cols, gamma, variant)


def _factored_is_cheaper(r: int, d: int) -> bool:
    """Whether the factored route is the cheaper one for factors ``[r, d]``.

    The factored scores take five products of ``2 r^2 d`` flops (``Wk Wq^T``, two Grams,
    ``Gk Wq``, ``Gq Wk``), the dense ones one ``d x r x d`` product and a few passes over
    ``M``; measured on one thread of a shared 2-core AMD EPYC (float64, MKL), the
    factored route wins from about ``d > 3 r`` on: 0.3x of the dense time at ``d = 7 r`` (Qwen2.5-0.5B's grouped
    factors, ``r = 128, d = 896``), 0.6-0.85x at ``d = 4 r``, but 1.05-1.15x at ``d = 3 r``
    (SmolLM2, ``192 x 576``) and ``d = 2.5 r`` (Gemma 3, ``256 x 640``)."""
    return 3 * r < d


def structure_scores(
    M: ArrayLike | None = None,
    *,
    Wq: ArrayLike | None = None,
    Wk: ArrayLike | None = None,
    gamma: float = 2.0,
    variant: Variant = "excess",
    factored: bool | None = None,
) -> dict:
    """Both scores at once: ``structure_scores(M)`` or ``structure_scores(Wq=..., Wk=...)``.

    With factors, the cheaper of the dense and the factored computation is used
    (factored when ``3 r < d``, see :func:`_factored_is_cheaper`; ``factored=True`` forces
    it, ``factored=False`` forms ``M``); the two agree to rounding.  Returns ``{"symmetry": ..., "directionality": ...}``.
    """
    if (M is None) == (Wq is None or Wk is None) or (M is not None and (Wq is not None or Wk is not None)):
        # (M with only Wq passed the first test and scored M, ignoring Wq)
        raise ValueError("pass either M, or both Wq and Wk (and not both forms).")
    if M is not None:
        return {
            "symmetry": symmetry_score(M),
            "directionality": directionality_score(M, gamma=gamma, variant=variant),
        }
    # one conversion, one finiteness check and one rescaling of each factor serve both
    # scores (the same operations the public functions do, so the values are identical)
    q, k = _float_factor_pair(Wq, Wk)
    r, d = q.shape[-2], q.shape[-1]
    gamma = _check_directionality_args(gamma, variant, d)
    q, k = _balanced(_unit_scale_checked(q, "Wq"), _unit_scale_checked(k, "Wk"))
    if factored or (factored is None and _factored_is_cheaper(r, d)):
        grams = _grams(q, k)  # computed once for both scores
        return {
            "symmetry": _to_output(_symmetry_factored(q, k, grams)),
            "directionality": _to_output(_directionality_factored(q, k, gamma, variant, grams)),
        }
    dense = q.transpose(-1, -2) @ k  # entries bounded by r: finite
    peak = dense.abs().amax(dim=(-1, -2), keepdim=True)
    dense.div_(torch.where(peak > 0, peak, torch.ones_like(peak)))  # _unit_scale, in place
    return {
        "symmetry": _to_output(_symmetry_dense(dense)),
        "directionality": _to_output(_directionality_dense(dense, gamma, variant)),
    }
