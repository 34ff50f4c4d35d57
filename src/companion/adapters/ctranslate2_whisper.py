"""Whisper converted to CTranslate2: the ``model.bin`` format, read without CTranslate2.

A CTranslate2 ``model.bin`` is one little-endian stream (written by
``ctranslate2/specs/model_spec.py``, ``ModelSpec._serialize``; read by
``src/models/model.cc``)::

    u32 binary_version | string spec_name | u32 spec_revision | u32 n_variables
    n_variables x ( string name | u8 rank | rank x u32 dim | u8 dtype_id | u32 n_bytes | bytes )
    u32 n_aliases | n_aliases x ( string alias | string variable_name )

where ``string`` is ``u16 length`` (counting a trailing NUL) followed by the bytes and the
NUL, and ``dtype_id`` indexes ``(float32, int8, int16, int32, float16, bfloat16)``
(versions < 4 store the item size instead, read by CTranslate2 as 4: float32, 2: int16,
1: int8).  Only the variable table is parsed; weights are
read one at a time with a positioned read.

Whisper's layout (``WhisperSpec``, revision 3): per layer
``{encoder,decoder}/layer_{i}/self_attention/linear_0`` is the fused ``[q | k | v]``
projection (``[3d, d]``, ``nn.Linear`` layout); the decoder's cross-attention keeps its
query in ``decoder/layer_{i}/attention/linear_0`` (``[d, d]``) and the fused
``[k | v]`` of the encoder states in ``attention/linear_1`` (``[2d, d]``).  Head counts are
the scalar variables ``encoder/num_heads`` and ``decoder/num_heads``.  Int8 checkpoints
store ``weight_scale`` per output row, int16 ones a scalar ``weight_scale`` for the whole
tensor (``model_spec.py``, ``_quantize``); either way ``w = q / scale``.
"""

from __future__ import annotations

import math
import os
import re
import struct
from pathlib import Path

import numpy as np
import torch

from ..base.errors import CompanionError
from .families import LayerPlan
from .tensor_source import TensorSource, read_range

__all__ = ["CTranslate2Source", "is_ctranslate2_file", "whisper_ct2", "SUPPORTED_BINARY_VERSIONS"]

# binary versions whose layout this parser knows (CTranslate2 4.x writes 6)
SUPPORTED_BINARY_VERSIONS = range(1, 7)
_DTYPES = ("float32", "int8", "int16", "int32", "float16", "bfloat16")
_NP = {"float32": np.float32, "int8": np.int8, "int16": np.int16, "int32": np.int32,
       "float16": np.float16}
# before binary version 4 a variable stored its item size, not its type; CTranslate2 reads
# 2 as int16 (model.cc, get_dtype_from_item_size), never float16
_ITEM_SIZE_DTYPE = {4: "float32", 2: "int16", 1: "int8"}
_FAMILY = "whisper-ctranslate2"


def is_ctranslate2_file(path: Path) -> bool:
    """True when the file starts like a CTranslate2 ``model.bin`` (version, ``...Spec`` name)."""
    try:
        with open(path, "rb") as f:
            head = f.read(64)
    except OSError:
        return False
    if len(head) < 8:
        return False
    (version,) = struct.unpack_from("<I", head, 0)
    if not 1 <= version < 1000:
        return False
    (n,) = struct.unpack_from("<H", head, 4)
    name = head[6:6 + n - 1]
    return 2 <= n <= len(head) - 6 and name.endswith(b"Spec") and head[6 + n - 1] == 0


class _Cursor:
    """Reads the variable table from a file object, refusing to run past its end."""

    def __init__(self, f, size: int, path: Path):
        self.f, self.size, self.path = f, size, path

    def take(self, n: int) -> bytes:
        b = self.f.read(n)
        if len(b) != n:
            raise CompanionError(
                f"{self.path} ends early (at byte {self.f.tell()} of a CTranslate2 table that "
                "needs more): the model.bin is truncated or its chunks were joined "
                "incompletely. Rebuild it from all its parts."
            )
        return b

    def u(self, fmt: str):
        return struct.unpack("<" + fmt, self.take(struct.calcsize("<" + fmt)))[0]

    def string(self) -> str:
        n = self.u("H")
        raw = self.take(n)
        return raw[:-1].decode("utf-8", errors="replace")

    def skip(self, n: int) -> int:
        start = self.f.tell()
        if start + n > self.size:
            raise CompanionError(
                f"{self.path} is truncated: a variable's {n} bytes at offset {start} run past the "
                f"end of the file ({self.size} bytes). Rebuild the model.bin from all its parts."
            )
        self.f.seek(n, os.SEEK_CUR)
        return start


class CTranslate2Source(TensorSource):
    """A CTranslate2 ``model.bin`` of a Whisper model (``WhisperSpec``).

    ``config`` holds ``model_type`` (``"whisper-ctranslate2"``), the binary version, spec
    name and revision, the head counts and the layer counts.
    """

    kind = "ctranslate2"
    # get() dequantizes what the file stores (float16, int8 with scales, 4-bit blocks)
    returns_floats = True

    def __init__(self, path: str | os.PathLike):
        super().__init__(str(path))
        path = Path(path)
        self.path = path
        size = os.path.getsize(path)
        self._where: dict[str, tuple[int, int, str]] = {}  # name -> (offset, n_bytes, dtype)
        self.dtypes = {}
        self.aliases: dict[str, str] = {}
        scalars: dict[str, tuple[int, int, str]] = {}
        self._scalar_scales: dict[str, tuple[int, int, str]] = {}
        with open(path, "rb") as f:
            c = _Cursor(f, size, path)
            version = c.u("I")
            if version not in SUPPORTED_BINARY_VERSIONS:
                raise CompanionError(
                    f"{path} is a CTranslate2 model of binary version {version}; this reader knows "
                    f"versions {SUPPORTED_BINARY_VERSIONS.start}-{SUPPORTED_BINARY_VERSIONS.stop - 1}. "
                    "Convert the model again with a CTranslate2 4.x converter."
                )
            spec, revision = (c.string(), c.u("I")) if version >= 2 else ("", 1)
            if spec != "WhisperSpec":
                raise CompanionError(
                    f"{path} is a CTranslate2 model of spec {spec or '(unnamed)'!r}; only "
                    "'WhisperSpec' (Whisper converted by ct2-transformers-converter) is read. "
                    "Convert a Whisper checkpoint, or score the original Hugging Face folder."
                )
            if revision > 3:
                raise CompanionError(
                    f"{path} has WhisperSpec revision {revision}; this reader knows revisions up "
                    "to 3. Convert the model again with a CTranslate2 4.x converter."
                )
            for _ in range(c.u("I")):
                name = c.string()
                rank = c.u("B")
                shape = tuple(c.u("I") for _ in range(rank))
                if version >= 4:
                    type_id = c.u("B")
                    if type_id >= len(_DTYPES):
                        raise CompanionError(
                            f"{path}: variable {name!r} has unknown dtype id {type_id}; the file is "
                            "corrupt or newer than this reader. Convert the model again."
                        )
                    dtype, nbytes = _DTYPES[type_id], c.u("I")
                else:
                    item = c.u("B")
                    if item not in _ITEM_SIZE_DTYPE:
                        raise CompanionError(
                            f"{path}: variable {name!r} has items of {item} bytes, a width CTranslate2 "
                            f"(binary version {version}) gives no type; the file is corrupt. Convert the model again."
                        )
                    dtype = _ITEM_SIZE_DTYPE[item]
                    nbytes = c.u("I") * item
                count = math.prod(shape)   # exact: NumPy's int64 product wraps (65536^4 is 0)
                width = np.dtype(_NP.get(dtype, np.uint16)).itemsize
                if nbytes != count * width:
                    raise CompanionError(
                        f"{path}: variable {name!r} {shape} {dtype} claims {nbytes} bytes, not "
                        f"{count * width}; the file is corrupt. Convert or download it again."
                    )
                offset = c.skip(nbytes)
                if name in scalars or name in self._where:
                    raise CompanionError(
                        f"{path} stores the variable {name!r} twice; CTranslate2 refuses such a "
                        "file and no copy can be trusted. Convert the model again."
                    )
                if rank == 0:
                    scalars[name] = (offset, nbytes, dtype)
                    if name.endswith("_scale"):   # int16 weights: one scale for the whole tensor
                        self._scalar_scales[name] = (offset, nbytes, dtype)
                    continue
                self._where[name] = (offset, nbytes, dtype)
                self.shapes[name] = shape
                self.dtypes[name] = dtype
            if version >= 3:
                for _ in range(c.u("I")):
                    alias, target = c.string(), c.string()
                    if alias in self.aliases or alias in self._where or alias in scalars:
                        raise CompanionError(
                            f"{path} names {alias!r} twice (as an alias and again); CTranslate2 "
                            "refuses such a file. Convert the model again."
                        )
                    self.aliases[alias] = target
                if f.tell() != size:
                    raise CompanionError(
                        f"{path} has {size - f.tell()} bytes after its variable table: chunks "
                        "were joined in the wrong order or more than once. Rebuild the model.bin "
                        "by concatenating its parts once, in order."
                    )
            self.bytes_read = f.tell() - sum(n for _, n, _ in self._where.values()) \
                - sum(n for _, n, _ in scalars.values())
        # an alias is the variable it names (the converter writes one copy of identical
        # variables, ModelSpec._alias_variables): a layer tied to another is still a layer
        for alias, target in self.aliases.items():
            if target in self._where:
                self._where[alias], self.shapes[alias] = self._where[target], self.shapes[target]
                self.dtypes[alias] = self.dtypes[target]
        heads = {}
        for part in ("encoder", "decoder"):
            key = f"{part}/num_heads"
            if key not in scalars:
                raise CompanionError(f"{path} has no {key!r}: not a complete Whisper model.bin.")
            off, nbytes, dtype = scalars[key]
            raw = read_range(path, off, nbytes)
            self.bytes_read += nbytes
            if dtype not in _NP:
                raise CompanionError(f"{path}: {key!r} is stored as {dtype}, not as a number of "
                                     "heads; the file is corrupt. Convert the model again.")
            value = np.frombuffer(raw, dtype=_NP[dtype])[0].item()
            if not (math.isfinite(value) and value == int(value) and 1 <= value <= 1 << 20):
                raise CompanionError(f"{path}: {key!r} is {value!r}, not a whole number of heads "
                                     ">= 1; the file is corrupt. Convert the model again.")
            heads[part] = int(value)
        self.config = {
            "model_type": _FAMILY, "binary_version": version, "spec": spec,
            "spec_revision": revision, "encoder_attention_heads": heads["encoder"],
            "decoder_attention_heads": heads["decoder"],
        }
        self.families = {_FAMILY: whisper_ct2}

    @property
    def n_parameters(self) -> int:
        """Values of all float variables (scales of int8 weights and aliases left out), less the
        zeros the converter writes for the key bias Whisper's key projection does not have (the
        key part of each fused ``[q | k | v]`` and ``[k | v]`` bias): 37,764,864 for Whisper
        tiny.en's 37,760,256."""
        total = sum(math.prod(s) for n, s in self.shapes.items()
                    if not n.endswith(("_scale", "_zero")) and n not in self.aliases)
        counted = self.bytes_read   # (a count, not a read of the weights: bytes_read is left as it was)
        for name, shape in self.shapes.items():
            fused = 3 if name.endswith("self_attention/linear_0/bias") else (
                2 if name.endswith("/attention/linear_1/bias") else 0)
            if fused and name not in self.aliases and len(shape) == 1 and shape[0] % fused == 0:
                d = shape[0] // fused
                key = self._raw(name)[d * (fused - 2):d * (fused - 1)]   # [q | k | v]: k second; [k | v]: first
                if not np.any(key):
                    total -= d
        self.bytes_read = counted
        return int(total)

    def stored_nbytes(self, name: str) -> int:
        return self._where[name][1]

    def _raw(self, name: str) -> np.ndarray:
        offset, nbytes, dtype = self._where[name] if name in self._where else self._scalar_scales[name]
        buf = read_range(self.path, offset, nbytes)
        self.bytes_read += nbytes
        if dtype == "bfloat16":
            return torch.frombuffer(buf, dtype=torch.bfloat16).float().numpy()
        if dtype not in _NP:
            raise CompanionError(f"{self.path}: variable {name!r} has unsupported dtype {dtype}.")
        return np.frombuffer(buf, dtype=_NP[dtype])

    def _load(self, name: str) -> torch.Tensor:
        dtype = self.dtypes[name]
        values = self._raw(name).astype(np.float32).reshape(self.shapes[name])
        if dtype in ("int8", "int16"):
            scale_name = name + "_scale"
            if scale_name not in self.shapes and scale_name not in self._scalar_scales:
                raise CompanionError(
                    f"{self.path}: {dtype} variable {name!r} has no {scale_name!r}; cannot "
                    "dequantize it. Convert the model again without quantization."
                )
            scale = self._raw(scale_name).astype(np.float32).reshape(-1, 1)
            rows = values.shape[0] if values.ndim else 1
            if scale_name in self._scalar_scales:   # one scale for the tensor (int16: 2^10 / max|w|)
                scale = np.broadcast_to(scale, (rows, 1))
            if values.ndim != 2 or scale.shape[0] != rows:
                raise CompanionError(
                    f"{self.path}: {dtype} variable {name!r} {tuple(values.shape)} has {scale.shape[0]} scales "
                    f"for {rows} rows in {scale_name!r}; the file is corrupt. Convert the model again."
                )
            values = values / scale
        return torch.from_numpy(np.ascontiguousarray(values))


def _split_fused_qkv(ts):
    """``[q | k | v]`` rows of the fused self-attention projection ``[3d, d]``."""
    w = ts[0]
    if w.ndim != 2 or w.shape[0] != 3 * w.shape[1]:
        raise ValueError(f"fused q|k|v weight {tuple(w.shape)} is not [3d, d]")
    d = w.shape[1]
    return w[:d], w[d:2 * d]


def _split_cross(ts):
    """The query weight ``[d, d]`` and the key half of the fused ``[k | v]`` weight ``[2d, d]``."""
    q, kv = ts
    if q.ndim != 2 or kv.ndim != 2:
        raise ValueError(f"query {tuple(q.shape)} and fused k|v {tuple(kv.shape)} weights are not both matrices")
    d = q.shape[0]
    if kv.shape[0] != 2 * d:
        raise ValueError(f"fused k|v weight {tuple(kv.shape)} is not [2d, d] for d = {d}")
    return q, kv[:d]


def _layers(keys, pattern: str) -> dict[int, str]:
    regex = re.compile(re.escape(pattern).replace(r"\{i\}", r"(\d+)") + "$")
    found = {}
    for k in keys:
        m = regex.match(k)
        if m:
            found[int(m.group(1))] = k
    return dict(sorted(found.items()))


def whisper_ct2(cfg: dict, keys) -> list[LayerPlan]:
    """Encoder self-attention, decoder self-attention (causal) and decoder cross-attention."""
    he, hd = cfg["encoder_attention_heads"], cfg["decoder_attention_heads"]
    plans = []
    enc = _layers(keys, "encoder/layer_{i}/self_attention/linear_0/weight")
    dec = _layers(keys, "decoder/layer_{i}/self_attention/linear_0/weight")
    cq = _layers(keys, "decoder/layer_{i}/attention/linear_0/weight")
    ckv = _layers(keys, "decoder/layer_{i}/attention/linear_1/weight")
    if not enc:
        raise CompanionError("no 'encoder/layer_*/self_attention/linear_0/weight' in this model.bin.")
    if set(cq) != set(ckv) or set(cq) != set(dec):
        raise CompanionError("the decoder's self- and cross-attention layers do not pair up: "
                             "the model.bin is incomplete.")
    for i, k in enc.items():
        plans.append(LayerPlan(i, "encoder", "encoder", (k,), he, he,
                               _split_fused_qkv, name=f"encoder/layer_{i}/self_attention"))
    for i, k in dec.items():
        plans.append(LayerPlan(i, "causal", "decoder", (k,), hd, hd,
                               _split_fused_qkv, name=f"decoder/layer_{i}/self_attention"))
    for i in cq:
        plans.append(LayerPlan(i, "cross", "decoder", (cq[i], ckv[i]), hd, hd,
                               _split_cross, name=f"decoder/layer_{i}/attention"))
    return plans
