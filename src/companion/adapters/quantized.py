"""Quantized checkpoints: dequantize the formats whose rule is simple, refuse the others.

A quantized checkpoint stores integers (or 8-bit floats) and scales; scoring the stored
values as if they were the weights gives wrong numbers (the scales differ per row or per
block, so even the sign of the directionality can flip).  ``config.json`` says how a
checkpoint was quantized in ``quantization_config.quant_method``.

Dequantized here, exactly as the quantizers define them:

* ``fp8`` (``FineGrainedFP8Config``, DeepSeek-V3 style): ``weight`` stored as
  ``float8_e4m3fn`` with ``weight_scale_inv`` holding one scale per
  ``weight_block_size`` block (default 128 x 128): ``W = weight * scale_inv[block]``;
* ``bitsandbytes`` 8-bit (``LLM.int8``): ``weight`` stored as int8 with ``SCB`` holding
  each row's absolute maximum: ``W = weight * SCB[row] / 127`` (only in the ``row`` layout;
  a ``weight_format`` naming a GPU tile layout is refused).

Refused by name: bitsandbytes 4-bit (NF4/FP4 with nested quantization states), GPTQ, AWQ,
AQLM, HQQ, EETQ, Quanto, torchao, compressed-tensors, FBGEMM fp8 and any other method;
and integer or fp8 query/key weights with scale tensors beside them but no
``quantization_config`` that says how to use them.
"""

from __future__ import annotations

import torch

from ..base.errors import CompanionError
from .tensor_source import TensorSource

__all__ = ["prepare_quantized", "SCALE_SUFFIXES"]

# tensors that carry quantization scales or states, never weights of their own
SCALE_SUFFIXES = (".SCB", ".weight_scale_inv", ".weight_scale", ".weight_format",
                  ".input_scale", ".absmax", ".quant_map", ".quant_state", ".scales",
                  ".qzeros", ".g_idx")


def _method(qc: dict) -> str:
    method = str(qc.get("quant_method") or "").lower()
    if method == "bitsandbytes" or (not method and (qc.get("load_in_8bit") or qc.get("load_in_4bit"))):
        if qc.get("load_in_4bit") or qc.get("_load_in_4bit"):
            return "bitsandbytes-4bit"
        return "bitsandbytes-8bit"
    return method or "unknown"


def _fp8_block(src: TensorSource, qc: dict):
    block = qc.get("weight_block_size")
    block = [128, 128] if block is None else block   # (0 or [] is a malformed size, not the default)
    if not (isinstance(block, (list, tuple)) and len(block) == 2
            and all(isinstance(b, int) and not isinstance(b, bool) and b > 0 for b in block)):
        raise CompanionError(f"{src.location}: quantization_config.weight_block_size {block!r} "
                             "is not two positive integers; fix config.json.")
    b0, b1 = block

    def dequantize(name: str, w: torch.Tensor) -> torch.Tensor:
        if name.endswith(".weight_scale_inv"):
            return _scale_as_stored(src, name, w)
        scale_name = name[: -len("weight")] + "weight_scale_inv"
        _stored_as(src, name, w, "fp8", (torch.float8_e4m3fn, torch.float8_e5m2))
        if not name.endswith("weight") or scale_name not in src.shapes:
            if w.dtype in (torch.float8_e4m3fn, torch.float8_e5m2):
                raise CompanionError(f"{src.location}: {name!r} is stored as fp8 but has no "
                                     f"{scale_name!r}; the checkpoint is incomplete.")
            return w.to(torch.float32)
        _matrix(src, name, w, "its block scales")
        scale = src.get(scale_name)
        rows, cols = w.shape
        want = (-(-rows // b0), -(-cols // b1))
        if scale.numel() == 1:
            return w.to(torch.float32) * scale.reshape(())
        if tuple(scale.shape) != want:
            raise CompanionError(
                f"{src.location}: {scale_name!r} has shape {tuple(scale.shape)}, not {want} "
                f"for {b0}x{b1} blocks of a {rows}x{cols} weight; the checkpoint is malformed.")
        full = scale.repeat_interleave(b0, 0)[:rows].repeat_interleave(b1, 1)[:, :cols]
        return w.to(torch.float32) * full

    return dequantize


def _bnb_int8(src: TensorSource):
    def dequantize(name: str, w: torch.Tensor) -> torch.Tensor:
        if name.endswith(".SCB"):
            return _scale_as_stored(src, name, w)
        scb_name = name[: -len("weight")] + "SCB"
        _stored_as(src, name, w, "bitsandbytes 8-bit", (torch.int8,))
        if w.dtype != torch.int8:
            return w.to(torch.float32)
        if not name.endswith("weight") or scb_name not in src.shapes:
            raise CompanionError(f"{src.location}: {name!r} is stored as int8 but has no "
                                 f"{scb_name!r} row scales; the checkpoint is incomplete.")
        _matrix(src, name, w, "its row scales")
        _row_layout(src, name[: -len("weight")] + "weight_format")
        scb = src.get(scb_name)
        if scb.shape != (w.shape[0],):
            raise CompanionError(f"{src.location}: {scb_name!r} has shape {tuple(scb.shape)}, "
                                 f"not ({w.shape[0]},); the checkpoint is malformed.")
        return w.to(torch.float32) * (scb[:, None] / 127.0)

    return dequantize


# bitsandbytes' LINEAR_8BIT_WEIGHTS_FORMAT_MAPPING: only "row" is a row-major [out, in] matrix
_BNB_FORMATS = {0: "row", 1: "col32", 2: "col_turing", 3: "col_ampere"}


def _row_layout(src: TensorSource, fmt_name: str) -> None:
    """An int8 weight saved with ``weight_format`` other than 0 (``row``) holds bitsandbytes'
    GPU tile layout, not rows: read as rows it would be a permuted, wrong matrix."""
    if fmt_name not in src.shapes:
        return   # older saves have no weight_format: row-major
    values = src._load(fmt_name).reshape(-1).tolist()
    if values != [0]:
        what = _BNB_FORMATS.get(int(values[0]), f"format {values[0]}") if len(values) == 1 else f"{len(values)} values"
        raise CompanionError(f"{src.location}: {fmt_name!r} says the int8 weight is stored in bitsandbytes' "
                             f"{what} layout, not rows; load it with bitsandbytes and save it again "
                             "(it writes rows), or use the unquantized checkpoint.")


def _matrix(src: TensorSource, name: str, w: torch.Tensor, scales: str) -> None:
    """A quantized weight is a matrix ``[rows, cols]``: any other shape would be broadcast
    against its scales into a weight the checkpoint never held."""
    if w.ndim != 2:
        raise CompanionError(f"{src.location}: {name!r} has shape {tuple(w.shape)}, not a matrix [rows, cols], "
                             f"so {scales} cannot apply to it; the checkpoint is malformed.")


def _scale_as_stored(src: TensorSource, name: str, s: torch.Tensor) -> torch.Tensor:
    """A scale tensor as float32; scales stored as integers or fp8 are not what the method writes."""
    if not s.dtype.is_floating_point or s.dtype in (torch.float8_e4m3fn, torch.float8_e5m2):
        raise CompanionError(f"{src.location}: {name!r} is stored as {str(s.dtype).replace('torch.', '')}; "
                             "quantization scales must be stored as floats (float32, bfloat16, float16). "
                             "The checkpoint is malformed; use the unquantized one.")
    return s.to(torch.float32)


def _stored_as(src: TensorSource, name: str, w: torch.Tensor, method: str, own: tuple) -> None:
    """A tensor of a quantized checkpoint is either stored in the method's own type (and
    dequantized by its rule) or as ordinary floats (a layer left unquantized); any other
    type (integers under fp8, fp8 or int32 under bitsandbytes 8-bit) does not fit the
    configuration, and scoring it as stored would give wrong numbers."""
    if w.dtype in own or (w.dtype.is_floating_point and w.dtype not in (torch.float8_e4m3fn, torch.float8_e5m2)):
        return
    raise CompanionError(f"{src.location}: {name!r} is stored as {str(w.dtype).replace('torch.', '')}, which "
                         f"quantization_config ({method}) does not describe; the configuration does not fit "
                         "the weights. Use the unquantized checkpoint.")


_NAMES = {
    "bitsandbytes-4bit": "bitsandbytes 4-bit (NF4/FP4)", "gptq": "GPTQ", "awq": "AWQ",
    "aqlm": "AQLM", "hqq": "HQQ", "eetq": "EETQ", "quanto": "Quanto", "torchao": "torchao",
    "compressed-tensors": "compressed-tensors", "fbgemm_fp8": "FBGEMM fp8",
}


def prepare_quantized(src: TensorSource) -> str | None:
    """Set ``src.dequantize`` for a quantized checkpoint it can read; refuse the others.

    Returns the quantization method's name, or ``None`` for an unquantized checkpoint.
    """
    if getattr(src, "quantization_handled", False):  # the format dequantizes its own (ONNX int8)
        return src.own_quantization
    qc = src.config.get("quantization_config") if isinstance(src.config, dict) else None
    if qc is None:
        scales = [n for n in src.shapes if n.endswith(SCALE_SUFFIXES[:4]) or n.endswith(".qweight")]
        if scales:
            raise CompanionError(
                f"{src.location} holds quantization tensors ({scales[0]!r}, ...) but its "
                "config.json has no quantization_config saying how to use them; scoring the "
                "stored integers would give wrong numbers. Use the unquantized checkpoint."
            )
        return None
    if not isinstance(qc, dict):
        raise CompanionError(f"{src.location}: quantization_config in config.json is not an "
                             "object; fix or remove it.")
    method = _method(qc)
    if method == "fp8":
        fmt = str(qc.get("activation_scheme", "")).lower()
        src.dequantize = _fp8_block(src, qc)
        src.scale_tensors = {n for n in src.shapes if n.endswith(".weight_scale_inv")}
        return f"fp8{'/' + fmt if fmt else ''}"
    if method == "bitsandbytes-8bit":
        src.dequantize = _bnb_int8(src)
        src.scale_tensors = {n for n in src.shapes if n.endswith((".SCB", ".weight_format"))}
        return "bitsandbytes-8bit"
    name = _NAMES.get(method, method)
    raise CompanionError(
        f"{src.location} is quantized with {name} (quantization_config.quant_method="
        f"{qc.get('quant_method')!r}), which companion cannot dequantize exactly; scoring its "
        "stored integers would give wrong numbers. Score the unquantized checkpoint instead "
        "(supported: fp8 with block scales, bitsandbytes 8-bit)."
    )
