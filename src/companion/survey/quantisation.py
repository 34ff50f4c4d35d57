"""Does quantisation move the survey's two scores?  Measured on the zoo's own weights.

The zoo's decoders are read from 4-bit GGUF files (Q4_K_M, Q4_1) and most of its encoders from
float weights, so a difference between the two groups could in part be one of storage.  Two
measurements:

* :func:`minilm_int8_change`: the one model the registries ship both ways, all-MiniLM-L6-v2 in
  float (``all-minilm-l6-v2``) and in int8 ONNX (``all-minilm-l6-v2-int8``): each layer's
  symmetry and directionality in both copies.
* :func:`scheme_changes`: every float checkpoint of the zoo (:func:`float_checkpoints`) with its
  self-attention layers' ``Wq`` and ``Wk`` quantised here and read back (:func:`round_trip`) with
  the block schemes GGUF decoders are stored in, and a plain per-output-channel int8, then scored
  exactly as the originals (:func:`companion.survey.tables.layer_scores`).

The block schemes (:data:`SCHEMES`) run along each weight row (the input dimension, GGUF's
``ne[0]``), as in a GGUF file.  ``Q8_0``, ``Q5_0``, ``Q4_1`` and ``Q4_0`` are written by the
``gguf`` package's own quantiser; it cannot write ``Q4_K`` (it only reads it), so
:func:`quantise_q4_k` writes those blocks here following llama.cpp's reference quantiser
(``quantize_row_q4_K_ref``: per 32-value sub-block a weighted search over scale and minimum,
then both stored as 6-bit multiples of two fp16 super-block scales).  Like llama.cpp, a row
whose length is not a multiple of 256 cannot hold Q4_K blocks and is written as Q5_0 instead
(``stored_as`` in the tables says which).  Every block scheme is read back by ``gguf``'s own
``dequantize``; :func:`decode_blocks` reads the same bytes independently, and
:func:`round_trip` refuses a disagreement.

:func:`gguf_qk_types` reads which block type each GGUF model of the zoo really stores its query
and key weights in (a "Q4_K_M" file holds Q5_0 projections where their rows are 640 or 896 long).

The comparison with the encoder-decoder gap (:func:`against_gap`) takes the gap as an argument
and :func:`directionality_sentence` turns two numbers into a sentence: neither computes the
survey's verdict.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pandas as pd

from ..base.errors import CompanionError

__all__ = ["SCHEMES", "GGUF_SCHEMES", "SHIPPED", "round_trip", "encode_blocks", "decode_blocks",
           "quantise_q4_k", "int8_per_channel", "stored_bits", "float_checkpoints", "quantised_copy",
           "compare_layers", "gguf_qk_types", "minilm_int8_change", "scheme_changes", "median_changes", "unit_gaps",
           "published_gaps", "against_gap", "directionality_sentence"]

#: Schemes written in GGUF blocks, then the plain int8 of one scale per output channel.
GGUF_SCHEMES = ("Q8_0", "Q5_0", "Q4_1", "Q4_0", "Q4_K")
SCHEMES = GGUF_SCHEMES + ("int8/channel",)
#: The label of the shipped int8 copy of MiniLM in the tables.
SHIPPED = "int8 ONNX (shipped)"
_BLOCK = {"Q8_0": 32, "Q5_0": 32, "Q4_1": 32, "Q4_0": 32, "Q4_K": 256}
_QK_K = 256


def _qtype(scheme: str):
    from gguf import GGMLQuantizationType
    return GGMLQuantizationType[scheme]


def _check_matrix(W, scheme: str) -> np.ndarray:
    if scheme not in SCHEMES:
        raise CompanionError(f"unknown quantisation scheme {scheme!r}; choose one of {', '.join(SCHEMES)}.")
    try:
        W64 = np.asarray(W, dtype=np.float64)
    except (TypeError, ValueError):
        raise CompanionError(f"a weight to quantise must be a matrix of numbers; got {type(W).__name__}: pass one "
                             "projection's weight.") from None
    if W64.ndim != 2 or 0 in W64.shape:
        raise CompanionError(f"a weight to quantise must be a non-empty matrix [out, in]; got shape "
                             f"{W64.shape}: pass one projection's weight.")
    if not np.isfinite(W64).all():
        raise CompanionError("the weight to quantise holds NaN or Inf; check the checkpoint it came from.")
    if np.abs(W64).max() > np.finfo(np.float32).max:   # finite, but Inf once stored as float32
        raise CompanionError(f"the weight to quantise holds {float(np.abs(W64).max()):.3g}, beyond float32's range "
                             "(3.4e38): scale the weights down first (the scores do not change with their scale).")
    W = W64.astype(np.float32)
    if scheme in _BLOCK and W.shape[1] % 32:
        raise CompanionError(f"{scheme} packs each row in blocks of 32 but the rows have {W.shape[1]} "
                             "values; use int8/channel, or pad the rows to a multiple of 32.")
    return np.ascontiguousarray(W)


# ------------------------------------------------------------------------------------- Q4_K


def _nearest(x: np.ndarray) -> np.ndarray:
    """llama.cpp's ``nearest_int`` (round half to even), as integers."""
    return np.rint(x).astype(np.int32)


def _qkx2(x: np.ndarray, w: np.ndarray, nmax: int = 15, rmin: float = -1.0, rdelta: float = 0.1,
          nstep: int = 20) -> tuple[np.ndarray, np.ndarray]:
    """``make_qkx2_quants`` over many sub-blocks at once: ``x, w`` ``[n, 32]``; returns the
    scale and the (positive) minimum of each sub-block, as llama.cpp picks them.  The weighted
    squared error of each candidate comes from the weighted sums the fit needs anyway
    (accumulated in float64), not from a second pass over the values."""
    f, d64 = np.float32, np.float64
    lo = np.minimum(x.min(axis=1), 0).astype(f)
    hi = x.max(axis=1).astype(f)
    sum_w = w.sum(axis=1, dtype=d64)
    sum_x = (w * x).sum(axis=1, dtype=d64)
    sum_x2 = (w * x * x).sum(axis=1, dtype=d64)
    flat = hi == lo
    span = np.where(flat, 1, hi - lo).astype(f)
    shifted = x - lo[:, None]

    def sums(iscale):
        L = np.clip(np.rint(iscale[:, None] * shifted), 0, nmax)
        wl = w * L
        return wl.sum(axis=1, dtype=d64), (wl * L).sum(axis=1, dtype=d64), (wl * x).sum(axis=1, dtype=d64)

    def error(scale, m, sl, sl2, sxl):   # sum_i w_i (scale * l_i + m - x_i)^2
        return (scale * scale * sl2 + 2 * scale * m * sl - 2 * scale * sxl + m * m * sum_w
                - 2 * m * sum_x + sum_x2)

    iscale = f(nmax) / span
    scale = (1 / iscale).astype(d64)
    best_min = lo.astype(d64)
    best = error(scale, best_min, *sums(iscale))
    for step in range(nstep + 1):
        sl, sl2, sxl = sums(((f(rmin) + f(rdelta) * f(step) + f(nmax)) / span).astype(f))
        D = sum_w * sl2 - sl * sl
        ok = D > 0
        Ds = np.where(ok, D, 1)
        this_scale = (sum_w * sxl - sum_x * sl) / Ds
        this_min = (sl2 * sum_x - sl * sxl) / Ds
        pos = this_min > 0
        this_scale = np.where(pos, sxl / np.where(sl2 > 0, sl2, 1), this_scale)
        this_min = np.where(pos, 0, this_min)
        err = error(this_scale, this_min, sl, sl2, sxl)
        better = ok & (err < best)
        best = np.where(better, err, best)
        scale = np.where(better, this_scale, scale)
        best_min = np.where(better, this_min, best_min)
    scale = np.where(flat, 0, scale).astype(f)
    return scale, (-best_min).astype(f)


def quantise_q4_k(W) -> tuple[np.ndarray, np.ndarray]:
    """``W`` ``[out, in]`` (``in`` a multiple of 256) as Q4_K blocks: ``(blocks, values)``, the
    bytes ``[out, in / 256 * 144]`` in GGUF's layout and the values they stand for (computed here
    from the integer codes, before packing)."""
    W = _check_matrix(W, "Q4_K")
    if W.shape[1] % _QK_K:
        raise CompanionError(f"Q4_K packs each row in blocks of 256 but the rows have {W.shape[1]} values; "
                             "llama.cpp writes such rows as Q5_0 (round_trip does this).")
    f = np.float32
    x = W.reshape(-1, 8, 32)                                   # super-blocks of 8 sub-blocks
    n = x.shape[0]
    av = np.sqrt((x.reshape(n, -1) ** 2).sum(axis=1) / f(_QK_K)).astype(f)
    weights = av[:, None, None] + np.abs(x)
    scales, mins = _qkx2(x.reshape(-1, 32), weights.reshape(-1, 32))
    scales, mins = scales.reshape(n, 8), mins.reshape(n, 8)
    max_scale, max_min = scales.max(axis=1), mins.max(axis=1)
    inv_scale = np.where(max_scale > 0, f(63) / np.where(max_scale > 0, max_scale, 1), 0).astype(f)
    inv_min = np.where(max_min > 0, f(63) / np.where(max_min > 0, max_min, 1), 0).astype(f)
    ls = np.minimum(_nearest(inv_scale[:, None] * scales), 63).astype(np.uint8)
    lm = np.minimum(_nearest(inv_min[:, None] * mins), 63).astype(np.uint8)
    d16 = (max_scale / f(63)).astype(np.float16)
    dmin16 = (max_min / f(63)).astype(np.float16)
    d = d16.astype(f)[:, None] * ls.astype(f)                  # [n, 8]
    dm = dmin16.astype(f)[:, None] * lm.astype(f)
    safe = np.where(d == 0, 1, d)
    q = np.clip(_nearest((x + dm[..., None]) / safe[..., None]), 0, 15).astype(np.uint8)
    q = np.where(d[..., None] == 0, 0, q).astype(np.uint8)
    values = d[..., None] * q.astype(f) - dm[..., None]
    # pack: 2 + 2 bytes of scales, 12 bytes of 6-bit sub-block scales and minimums, 128 of codes
    sc = np.zeros((n, 12), np.uint8)
    sc[:, 0:4] = ls[:, 0:4] | ((ls[:, 4:8] >> 4) << 6)
    sc[:, 4:8] = lm[:, 0:4] | ((lm[:, 4:8] >> 4) << 6)
    sc[:, 8:12] = (ls[:, 4:8] & 0x0F) | ((lm[:, 4:8] & 0x0F) << 4)
    pairs = q.reshape(n, 4, 2, 32)                             # sub-blocks 2k (low) and 2k+1 (high)
    qs = (pairs[:, :, 0, :] | (pairs[:, :, 1, :] << 4)).reshape(n, 128)
    blocks = np.concatenate([d16.reshape(n, 1).view(np.uint8), dmin16.reshape(n, 1).view(np.uint8), sc, qs],
                            axis=1)
    return blocks.reshape(W.shape[0], -1), values.reshape(W.shape)


# ------------------------------------------------------------------------- blocks and int8


def encode_blocks(W, scheme: str) -> np.ndarray:
    """``W`` ``[out, in]`` as the bytes of ``scheme``'s GGUF blocks (``gguf``'s quantiser, or
    :func:`quantise_q4_k`)."""
    W = _check_matrix(W, scheme)
    if scheme == "Q4_K":
        return quantise_q4_k(W)[0]
    if scheme not in _BLOCK:
        raise CompanionError(f"{scheme} is not a GGUF block scheme; choose one of {', '.join(GGUF_SCHEMES)}.")
    from gguf.quants import quantize
    return quantize(W, _qtype(scheme))


def _f16(b: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(b).view(np.float16).astype(np.float32)[..., 0]


def decode_blocks(blocks: np.ndarray, scheme: str, n_in: int) -> np.ndarray:
    """The values of GGUF blocks, read here from the byte layout (not by ``gguf``): the check of
    the round trip.  ``blocks``: ``[out, bytes per row]``; returns ``[out, n_in]`` float32."""
    f = np.float32
    sizes = {"Q8_0": 34, "Q5_0": 22, "Q4_1": 20, "Q4_0": 18, "Q4_K": 144}
    if scheme not in sizes:
        raise CompanionError(f"{scheme!r} is not a GGUF block scheme; choose one of {', '.join(GGUF_SCHEMES)}.")
    per = sizes[scheme]
    b = np.asarray(blocks, dtype=np.uint8)
    n_in_ok = isinstance(n_in, (int, np.integer)) and not isinstance(n_in, bool) and n_in > 0 and n_in % _BLOCK[scheme] == 0
    if not n_in_ok or b.size % per or (b.size // per * _BLOCK[scheme]) % n_in:
        raise CompanionError(f"{b.size} bytes of {scheme} blocks ({per} bytes per {_BLOCK[scheme]} values) do not make "
                             f"whole rows of {n_in!r} values; pass the bytes encode_blocks wrote and the rows' length.")
    b = b.reshape(-1, per)
    if scheme == "Q8_0":
        v = _f16(b[:, 0:2])[:, None] * b[:, 2:].view(np.int8).astype(f)
    elif scheme == "Q4_0":
        q = np.concatenate([b[:, 2:] & 0x0F, b[:, 2:] >> 4], axis=1).astype(f) - 8
        v = _f16(b[:, 0:2])[:, None] * q
    elif scheme == "Q4_1":
        q = np.concatenate([b[:, 4:] & 0x0F, b[:, 4:] >> 4], axis=1).astype(f)
        v = _f16(b[:, 0:2])[:, None] * q + _f16(b[:, 2:4])[:, None]
    elif scheme == "Q5_0":
        high = np.unpackbits(b[:, 2:6], axis=1, bitorder="little")         # bit j: value j's 5th bit
        q = np.concatenate([b[:, 6:] & 0x0F, b[:, 6:] >> 4], axis=1) | (high << 4)
        v = _f16(b[:, 0:2])[:, None] * (q.astype(f) - 16)
    else:  # Q4_K
        d, dmin, s = _f16(b[:, 0:2]), _f16(b[:, 2:4]), b[:, 4:16]
        ls = np.concatenate([s[:, 0:4] & 63, (s[:, 8:12] & 0x0F) | ((s[:, 0:4] >> 6) << 4)], axis=1)
        lm = np.concatenate([s[:, 4:8] & 63, (s[:, 8:12] >> 4) | ((s[:, 4:8] >> 6) << 4)], axis=1)
        codes = b[:, 16:].reshape(-1, 4, 32)
        q = np.stack([codes & 0x0F, codes >> 4], axis=2).reshape(-1, 8, 32).astype(f)
        v = ((d[:, None] * ls.astype(f))[..., None] * q - (dmin[:, None] * lm.astype(f))[..., None])
    return v.reshape(-1, n_in).astype(f)


def int8_per_channel(W) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Symmetric int8 with one scale per output channel (row): ``(codes, scales, values)``,
    ``scale = max|row| / 127``, ``codes = round(row / scale)`` in [-127, 127]."""
    W = _check_matrix(W, "int8/channel").astype(np.float64)
    amax = np.abs(W).max(axis=1)
    scale = np.where(amax > 0, amax / 127.0, 1.0)
    codes = np.clip(np.rint(W / scale[:, None]), -127, 127).astype(np.int8)
    return codes, scale, (codes * scale[:, None]).astype(np.float32)


def round_trip(W, scheme: str) -> tuple[np.ndarray, str]:
    """``W`` ``[out, in]`` quantised with ``scheme`` and read back: ``(values, stored_as)``.

    GGUF schemes are read back by ``gguf``'s own ``dequantize``, and refused if that disagrees
    with :func:`decode_blocks` (beyond one float32 rounding); ``stored_as`` is the block type
    the rows were written in (``Q5_0`` for ``Q4_K`` rows not a multiple of 256 long)."""
    W = _check_matrix(W, scheme)
    if scheme == "int8/channel":
        return int8_per_channel(W)[2], scheme
    stored = "Q5_0" if scheme == "Q4_K" and W.shape[1] % _QK_K else scheme
    from gguf.quants import dequantize
    with np.errstate(over="ignore", invalid="ignore"):   # an overflowing float16 scale is refused below
        blocks = encode_blocks(W, stored)
    with np.errstate(over="ignore", invalid="ignore"):
        values = dequantize(blocks, _qtype(stored)).reshape(W.shape).astype(np.float32)
        own = decode_blocks(blocks, stored, W.shape[1])
    if not (np.isfinite(values).all() and np.isfinite(own).all()):
        # a block's scale (and Q4_1's minimum) is a float16: past 65504 it is stored as inf
        raise CompanionError(f"weights as large as {float(np.abs(W).max()):.3g} do not fit {stored} blocks: their "
                             "float16 scale overflows (largest 65504) and they read back as Inf or NaN; use "
                             "int8/channel, or scale the weights down first.")
    if collapsed := _collapsed_blocks(W, values, stored):
        lost = "one value though they hold different weights" if stored in ("Q4_1", "Q4_K") else "all zero"
        raise CompanionError(f"{collapsed} block(s) of {stored} read back as {lost}: weights as small as "
                             f"{float(np.abs(W).max()):.3g} underflow the block's float16 scale (smallest 6e-8); "
                             "scale the weights up first (the scores do not change with their scale).")
    tol = 4 * np.finfo(np.float32).eps * max(float(np.abs(own).max()), np.finfo(np.float32).tiny)
    if not np.allclose(values, own, rtol=0, atol=tol):
        raise CompanionError(f"gguf's dequantisation of {stored} blocks disagrees with their layout (largest "
                             f"difference {float(np.abs(values - own).max()):.3g}); the installed gguf package "
                             "reads this type differently: pin the gguf version the package was tested with.")
    return values, stored


def _collapsed_blocks(W: np.ndarray, values: np.ndarray, stored: str) -> int:
    """How many blocks lost every difference between their weights because the block's float16
    scale underflowed to zero: a block of the symmetric types (the largest weight gets the largest
    code) that holds a non-zero weight but reads back all zero, or a block of Q4_1 and Q4_K (whose
    largest weight gets the top code above the minimum) that is not constant but reads back so."""
    n = _BLOCK[stored]
    w, v = W.reshape(-1, n), values.reshape(-1, n)
    if stored in ("Q4_1", "Q4_K"):
        lost = (w.max(axis=1) > w.min(axis=1)) & (v.max(axis=1) == v.min(axis=1))
    else:
        lost = (w != 0).any(axis=1) & (v == 0).all(axis=1)
    return int(lost.sum())


# ----------------------------------------------------------------------------- checkpoints


def stored_bits(ckpt) -> float:
    """Bits per stored query/key weight of a checkpoint as read (``meta['qk_bytes']``): 32 or 16
    for float weights, about 4.5-8 for quantised ones; NaN when the reader does not say."""
    n = sum(layer.Wq.numel() + layer.Wk.numel() for layer in ckpt.layers)
    qk = ckpt.meta.get("qk_bytes")
    return float("nan") if not qk or not n else 8.0 * qk / n


def _is_float(ckpt) -> bool:
    return ckpt.meta.get("quantization") is None and stored_bits(ckpt) >= 16


def float_checkpoints(names=None, held: bool = True) -> dict:
    """The zoo's checkpoints stored in float (16 or 32 bits per q/k weight, no dequantisation by
    the reader), read: ``{name: QKCheckpoint}``.  ``names``: only these zoo names."""
    from ..adapters import read_qk
    from ..zoo.registry import reader_available, zoo_model, zoo_names, zoo_path

    out = {}
    for name in names if names is not None else zoo_names(held=held):
        if not reader_available(zoo_model(name)):
            continue
        ckpt = read_qk(zoo_path(name), progress=False)
        if _is_float(ckpt):
            out[name] = ckpt
    return out


def quantised_copy(ckpt, scheme: str):
    """A copy of ``ckpt`` whose self-attention layers' ``Wq`` and ``Wk`` went through
    :func:`round_trip`; ``meta['stored_as']`` maps each layer (component, index) to the block
    type written.  Cross-attention layers, never scored, are left as they are."""
    import torch

    layers, stored = [], {}
    for layer in ckpt.layers:
        if layer.role == "cross":
            layers.append(layer)
            continue
        q, sq = round_trip(layer.Wq.detach().cpu().numpy(), scheme)
        k, sk = round_trip(layer.Wk.detach().cpu().numpy(), scheme)
        stored[(layer.component, layer.index)] = sq if sq == sk else f"{sq}/{sk}"
        layers.append(dataclasses.replace(layer, Wq=torch.from_numpy(q), Wk=torch.from_numpy(k)))
    return dataclasses.replace(ckpt, layers=layers, meta={**ckpt.meta, "stored_as": stored,
                                                           "quantization": f"round trip {scheme}"})


def _relative_error(a, b) -> float:
    a = np.asarray(a, dtype=np.float64)
    change, size = float(np.linalg.norm(np.asarray(b, dtype=np.float64) - a)), float(np.linalg.norm(a))
    if size == 0:   # a zero weight: unchanged is no change (0/0 gave NaN), changed is an infinite one
        return 0.0 if change == 0 else math.inf
    return change / size


def compare_layers(original, changed, model: str, scheme: str,
                   original_scores: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per self-attention layer of two copies of one model: both scores in each, their change
    (``changed - original``) and the relative Frobenius change of ``Wq`` and ``Wk``.
    ``original_scores``: ``layer_scores(original)``, when already computed."""
    from .tables import layer_scores

    a = layer_scores(original) if original_scores is None else original_scores
    keys = ["component", "layer"]
    own = [(x.component, x.index) for x in original.self_attention_layers()]
    if original_scores is not None and (not {*keys, "role", "symmetry", "directionality"} <= set(a.columns)
                                        or [tuple(k) for k in a[keys].to_numpy().tolist()] != own):
        raise CompanionError(f"original_scores of {model} lists {len(a)} layers that are not the original's {len(own)} "
                             "self-attention layers in order; pass layer_scores(original), or leave it out.")
    b = layer_scores(changed)
    if len(a) != len(b):
        raise CompanionError(f"the two copies of {model} have different self-attention layers "
                             f"({len(a)} and {len(b)}); compare two copies of one model.")
    for i, (ka, kb) in enumerate(zip(map(tuple, a[keys].to_numpy()), map(tuple, b[keys].to_numpy()))):
        if ka != kb:
            raise CompanionError(f"the self-attention layer at position {i} of {model} is {ka} in the original and "
                                 f"{kb} in the changed copy; compare two copies of one model with their layers in "
                                 "one order.")
    # paired by position, as the score tables are (a dictionary by (component, index) gave two layers
    # numbered alike the weights of the last of them)
    pairs = list(zip(original.self_attention_layers(), changed.self_attention_layers()))
    stored = changed.meta.get("stored_as", {})
    rows = []
    for (_, ra), (_, rb), (la, lb) in zip(a.iterrows(), b.iterrows(), pairs):
        key = (ra["component"], ra["layer"])
        if la.Wq.shape != lb.Wq.shape or la.Wk.shape != lb.Wk.shape:
            raise CompanionError(f"layer {key} of {model} has other shapes in the two copies; compare two "
                                 "copies of one model.")
        row = {"model": model, "scheme": scheme, "stored_as": stored.get(key, scheme),
               "component": key[0], "layer": int(key[1]), "role": ra["role"]}
        for s in ("symmetry", "directionality"):
            row[s] = float(ra[s])
            row[f"{s}_quantised"] = float(rb[s])
            row[f"d_{s}"] = float(rb[s]) - float(ra[s])
        row["wq_error"] = _relative_error(la.Wq, lb.Wq)
        row["wk_error"] = _relative_error(la.Wk, lb.Wk)
        rows.append(row)
    return pd.DataFrame(rows)


def gguf_qk_types(names=None) -> pd.DataFrame:
    """The block type each GGUF model of the zoo stores its query and key weights in, read from
    the file's tensor table: one row per (model, projection, type) with the number of layers.
    A "Q4_K_M" file need not hold Q4_K projections (llama.cpp writes rows whose length is not a
    multiple of 256 in another type)."""
    import re
    from pathlib import Path

    from ..adapters.gguf_file import GGUFSource
    from ..adapters.gguf_parts import GGUFPartsSource
    from ..zoo.registry import reader_available, zoo_model, zoo_names, zoo_path

    rows = []
    for name in names if names is not None else zoo_names(held=True):
        model = zoo_model(name)
        if model.reader != "gguf" or not reader_available(model):
            continue
        path = Path(zoo_path(name))
        source = GGUFPartsSource(path) if path.name.endswith(".parts.json") else GGUFSource(path)
        counts: dict = {}
        for tname, info in source._tensors.items():
            m = re.fullmatch(r"blk\.\d+\.(attn_q|attn_k|attn_qkv)\.weight", tname)
            if m:
                key = (m.group(1), info.tensor_type.name)
                counts[key] = counts.get(key, 0) + 1
        rows += [{"model": name, "role": model.role, "tensor": t, "type": ty, "layers": n}
                 for (t, ty), n in sorted(counts.items())]
    return pd.DataFrame(rows, columns=["model", "role", "tensor", "type", "layers"])


def minilm_int8_change(float_name: str = "all-minilm-l6-v2",
                       int8_name: str = "all-minilm-l6-v2-int8") -> pd.DataFrame:
    """all-MiniLM-L6-v2 read from its float safetensors and from its shipped int8 ONNX copy:
    :func:`compare_layers` with ``scheme`` :data:`SHIPPED`."""
    from ..adapters import read_qk
    from ..zoo.registry import zoo_path

    original = read_qk(zoo_path(float_name), progress=False)
    copy = read_qk(zoo_path(int8_name), progress=False)
    return compare_layers(original, copy, float_name, SHIPPED)


def scheme_changes(checkpoints: dict, schemes=SCHEMES) -> pd.DataFrame:
    """:func:`compare_layers` of every checkpoint (``{name: QKCheckpoint}``, e.g.
    :func:`float_checkpoints`) against its round trip through each scheme: one tidy table."""
    if not checkpoints:
        raise CompanionError("no float checkpoint to quantise: install the zoo's float models "
                             "(`companion zoo fetch all`) or pass checkpoints.")
    schemes = (schemes,) if isinstance(schemes, str) else tuple(schemes)   # 'Q8_0' was read as 'Q', '8', ...
    if not schemes:
        raise CompanionError(f"no quantisation scheme to compare with; pass some of {', '.join(SCHEMES)}.")
    if bad := [x for x in schemes if x not in SCHEMES]:
        raise CompanionError(f"unknown quantisation scheme {bad[0]!r}; choose one of {', '.join(SCHEMES)}.")
    from .tables import layer_scores

    tables = []
    for name, ckpt in checkpoints.items():
        scores = layer_scores(ckpt)          # the original's, scored once for every scheme
        tables += [compare_layers(ckpt, quantised_copy(ckpt, scheme), name, scheme, scores) for scheme in schemes]
    return pd.concat(tables, ignore_index=True)


def median_changes(per_layer: pd.DataFrame) -> pd.DataFrame:
    """Per (model, component, scheme): the median over layers of each score in the original and
    the quantised copy, and the change of that median (the model's value in the survey)."""
    need = ["model", "component", "scheme", "role", "stored_as", "wq_error", "wk_error"] + [
        f"{p}{s}{q}" for s in ("symmetry", "directionality") for p, q in (("", ""), ("", "_quantised"), ("d_", ""))]
    if missing := [c for c in need if c not in per_layer.columns]:
        raise CompanionError(f"the per-layer table lacks the columns {missing} (empty, or not compare_layers' or "
                             "scheme_changes' table); pass scheme_changes' result.")
    if per_layer.empty:   # no group: a table without columns, which against_gap then could not read
        raise CompanionError("the per-layer table has no rows (no self-attention layer was compared); pass "
                             "scheme_changes' result for checkpoints with self-attention layers.")
    rows = []
    for (model, component, scheme), g in per_layer.groupby(["model", "component", "scheme"], sort=False):
        row = {"model": model, "component": component, "scheme": scheme, "role": g["role"].iloc[0],
               "stored_as": "/".join(sorted(set(g["stored_as"]))), "n_layers": len(g),
               "wq_error": float(g["wq_error"].median()), "wk_error": float(g["wk_error"].median())}
        for s in ("symmetry", "directionality"):
            row[f"{s}_median"] = float(np.median(g[s]))
            row[f"{s}_median_quantised"] = float(np.median(g[f"{s}_quantised"]))
            row[f"d_{s}_median"] = row[f"{s}_median_quantised"] - row[f"{s}_median"]
            row[f"max_abs_d_{s}_layer"] = float(g[f"d_{s}"].abs().max())
        rows.append(row)
    return pd.DataFrame(rows)


def unit_gaps(contrast: dict) -> dict:
    """``{score: median of the encoders' values - median of the decoders'}`` from a contrast in
    the shape of :func:`companion.survey.design.registered_contrast` (``sym_enc``, ``sym_dec``,
    ``dir_enc``, ``dir_dec``: one value per unit)."""
    out = {}
    for score, short in (("symmetry", "sym"), ("directionality", "dir")):
        try:
            enc, dec = (np.asarray(contrast.get(f"{short}_{side}", []), dtype=float) for side in ("enc", "dec"))
        except (TypeError, ValueError):   # text among the values: a raw conversion error
            enc = dec = np.array([])
        if not enc.size or not dec.size or not (np.isfinite(enc).all() and np.isfinite(dec).all()):
            raise CompanionError(f"the contrast needs finite {short}_enc and {short}_dec values (one per unit); "
                                 "pass registered_contrast's result.")
        out[score] = float(np.median(enc) - np.median(dec))
    return out


def published_gaps(published: pd.DataFrame | None = None) -> dict:
    """The same difference of medians over the rows of Tables S2 (symmetry) and S3
    (directionality), every printed encoder row against every printed decoder row."""
    from ..zoo.catalog import published_scores

    pub = published if published is not None else published_scores()
    out = {}
    for score in ("symmetry", "directionality"):
        t = pub[pub["score"] == score]
        enc, dec = (t.loc[t["role"] == r, "median"].to_numpy(float) for r in ("encoder", "decoder"))
        enc, dec = enc[np.isfinite(enc)], dec[np.isfinite(dec)]   # a row printed without a number
        if not enc.size or not dec.size:   # nanmedian of nothing: a NaN gap and a RuntimeWarning
            raise CompanionError(f"the published {score} table has {enc.size} encoder and {dec.size} decoder rows with "
                                 "a number; pass Tables S2/S3 (published_scores) with both roles.")
        out[score] = float(np.median(enc) - np.median(dec))
    return out


def against_gap(medians: pd.DataFrame, gaps: dict) -> pd.DataFrame:
    """Per scheme and score: the largest |change of a model median| (over the models and stacks
    of :func:`median_changes`), which model it is, the gap passed in (``{score: gap}``, in the
    units of the medians) and their ratio."""
    bad = {k: v for k, v in gaps.items() if k not in ("symmetry", "directionality")}
    if bad:
        raise CompanionError(f"gaps are given per score ('symmetry', 'directionality'); got {sorted(bad)}.")
    need = ["scheme", "model", "component"] + [f"d_{score}_median" for score in gaps]
    if missing := [c for c in need if c not in medians.columns]:
        raise CompanionError(f"the medians lack the columns {missing} (empty, or not median_changes' table); pass "
                             "median_changes' result.")
    rows = []
    for scheme, g in medians.groupby("scheme", sort=False):
        for score, gap in gaps.items():
            try:
                gap = float(gap)
            except (TypeError, ValueError):
                gap = math.nan
            if not math.isfinite(gap) or gap == 0:
                raise CompanionError(f"the {score} gap must be a finite non-zero number, got {gaps[score]!r}; pass the "
                                     "difference between the encoders' and decoders' medians.")
            change = g[f"d_{score}_median"].abs()
            if change.isna().any():   # max() and idxmax() skip NaN: that model would drop out of 'the largest'
                lost = sorted(set(g.loc[change.isna(), "model"].astype(str)))
                raise CompanionError(f"the change of the {score} median of {', '.join(lost)} under {scheme} is not a "
                                     "number (a layer could not be scored); score it again, or leave it out.")
            at = int(np.argmax(change.to_numpy()))   # by position: a label held twice gave .at a Series
            rows.append({"scheme": scheme, "score": score, "largest_change": float(change.max()),
                         "model": g["model"].iloc[at], "component": g["component"].iloc[at],
                         "gap": gap, "ratio": float(change.max()) / abs(gap)})
    return pd.DataFrame(rows)


def directionality_sentence(largest_change: float, gap: float, scheme: str = "4-bit") -> str:
    """Whether a change of the model median as large as ``largest_change`` could account for a
    directionality gap ``gap``: one sentence, refused for a number that is not finite."""
    for what, v in (("largest_change", largest_change), ("gap", gap)):
        if (isinstance(v, bool) or not isinstance(v, (int, float, np.floating, np.integer))
                or not math.isfinite(float(v))):   # True read as a change of 1.000
            raise CompanionError(f"{what} must be a finite number to be put in a sentence, got {v!r}.")
    change, gap = abs(float(largest_change)), abs(float(gap))
    if gap == 0:
        raise CompanionError("the gap is zero: there is no difference for quantisation to explain.")
    ratio = change / gap
    # the printed share keeps enough decimals to stay on its side of 50% and 100%, the words' thresholds
    # (0.4996 as '50%' beside 'could not explain it' would contradict itself)
    digits = next((k for k in range(12) if all((round(ratio * 100, k) / 100 < t) == (ratio < t) for t in (0.5, 1))),
                  11)
    if ratio < 0.5:
        verdict = "could not explain it: it moves a model's median directionality by"
    elif ratio < 1:
        verdict = "could explain part of it: it moves a model's median directionality by"
    else:
        verdict = "could explain it: it moves a model's median directionality by"
    return (f"{scheme} quantisation {verdict} at most {change:.3f}, {ratio:.{digits}%} of the "
            f"{gap:.3f} gap between the encoders' and the decoders' medians.")
