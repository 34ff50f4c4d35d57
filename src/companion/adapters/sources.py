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
* :class:`HubSafetensorsSource`: a hub id; headers and tensors through HTTP range reads.
"""

from __future__ import annotations

import json
import math
import os
import struct
from pathlib import Path

import numpy as np
import torch

from ..errors import CompanionError

__all__ = [
    "TensorSource",
    "SafetensorsSource",
    "PickleSource",
    "GGUFSource",
    "HubSafetensorsSource",
    "open_local_folder",
]

_ST_DTYPES = {
    "F64": torch.float64, "F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16,
    "I64": torch.int64, "I32": torch.int32, "I16": torch.int16, "I8": torch.int8,
    "U8": torch.uint8, "BOOL": torch.bool,
}
_FLOAT_KINDS = ("F64", "F32", "F16", "BF16")


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

    @property
    def n_parameters(self) -> int:
        """Number of parameters, counted from the headers' shapes (nothing is loaded).

        Stored buffers are left out, as ``model.num_parameters()`` leaves them out:
        integer tensors (``position_ids``) and the float buffers older checkpoints carry
        (causal-mask ``attn.bias``/``masked_bias``, rotary ``inv_freq``).
        """
        dtypes = getattr(self, "dtypes", {})
        return int(sum(math.prod(s) for n, s in self.shapes.items()
                       if not _is_buffer(n, s, dtypes.get(n))))

    def stored_nbytes(self, name: str) -> int:
        """Bytes the tensor takes in storage (quantized size for GGUF)."""
        return math.prod(self.shapes[name]) * 4

    def get(self, name: str) -> torch.Tensor:
        if name not in self.shapes:
            raise CompanionError(f"{self.location}: no tensor named {name!r} in this checkpoint.")
        t = self._load(name)
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


def _read_json(path: Path, what: str) -> tuple[dict, int]:
    try:
        raw = path.read_bytes()
        return json.loads(raw), len(raw)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CompanionError(f"cannot read {what} {path}: {exc}. Is the file complete?") from None


def read_safetensors_header(path: Path) -> tuple[dict, int]:
    """The JSON header of a ``.safetensors`` file and the number of bytes it takes (8 + n)."""
    try:
        with open(path, "rb") as f:
            head = f.read(8)
            if len(head) != 8:
                raise ValueError("file shorter than 8 bytes")
            (n,) = struct.unpack("<Q", head)
            size = os.path.getsize(path)
            if n > size - 8 or n > 100_000_000:
                raise ValueError(f"header length {n} does not fit a file of {size} bytes")
            header = json.loads(f.read(n))
        data_len = size - 8 - n
        for name, info in header.items():
            if name == "__metadata__":
                continue
            start, end = info["data_offsets"]
            if end > data_len or start > end:
                raise ValueError(f"tensor {name!r} lies outside the file (truncated download?)")
        return header, 8 + n
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise CompanionError(
            f"{path} is not a readable safetensors file ({exc}). Download it again."
        ) from None


class SafetensorsSource(TensorSource):
    """A local folder with single or sharded safetensors weights."""

    kind = "safetensors"

    def __init__(self, folder: str | os.PathLike, config: dict, config_bytes: int = 0):
        super().__init__(str(folder))
        folder = Path(folder)
        self.config = config
        self.bytes_read = config_bytes
        index = folder / "model.safetensors.index.json"
        if index.exists():
            idx, nbytes = _read_json(index, "shard index")
            self.bytes_read += nbytes
            files = sorted(set(idx.get("weight_map", {}).values()))
            if not files:
                raise CompanionError(f"{index} has an empty weight_map.")
        else:
            files = sorted(p.name for p in folder.glob("*.safetensors"))
            if "model.safetensors" in files:
                files = ["model.safetensors"]
        self._where: dict[str, tuple[Path, dict]] = {}
        self._data_start: dict[Path, int] = {}
        self.dtypes = {}
        for fname in files:
            path = folder / fname
            if not path.exists():
                raise CompanionError(f"shard {fname} listed in the index is missing from {folder}.")
            header, nbytes = read_safetensors_header(path)
            self.bytes_read += nbytes
            self._data_start[path] = nbytes
            for name, info in header.items():
                if name == "__metadata__":
                    continue
                self._where[name] = (path, info)
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
            files = sorted(set(idx["weight_map"].values()))
        else:
            files = ["pytorch_model.bin"]
        self._tensors: dict[str, torch.Tensor] = {}
        self.dtypes = {}
        for fname in files:
            path = folder / fname
            try:
                state = torch.load(path, map_location="cpu", mmap=True, weights_only=True)
            except Exception as exc:
                raise CompanionError(f"cannot unpickle {path}: {exc}.") from None
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


class _HeaderBytes:
    """The start of a file, read in growing blocks as a parser walks through it."""

    def __init__(self, f, block: int = 1 << 20):
        self.f, self.block, self.buf, self.pos = f, block, bytearray(), 0

    def need(self, n: int) -> None:
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
            ne = struct.unpack_from(f"<{n_dims}Q", h.buf, h.pos) if n_dims else ()
            h.skip(8 * n_dims)
            ggml_type, offset = h.unpack("IQ")
            tensors.append((name, tuple(int(x) for x in ne), int(ggml_type), int(offset)))
        align = int(config.get("general.alignment", 32))
        if align <= 0 or align & (align - 1):
            raise ValueError(f"invalid alignment {align}")
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
        try:
            config, infos, data_offset = parse_gguf_header(path)
        except (OSError, ValueError, struct.error):
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


def _http_range(url: str, start: int, nbytes: int) -> bytes:
    """``nbytes`` bytes of ``url`` from ``start`` with one HTTP range request."""
    from huggingface_hub.utils import build_hf_headers, get_session

    headers = build_hf_headers()
    headers["Range"] = f"bytes={start}-{start + nbytes - 1}"
    session = get_session()
    try:
        response = session.get(url, headers=headers, follow_redirects=True)
    except TypeError:  # requests-based huggingface_hub: redirects are followed by default
        response = session.get(url, headers=headers)
    response.raise_for_status()
    data = response.content
    if len(data) != nbytes:
        raise CompanionError(f"range request to {url} returned {len(data)} bytes, not {nbytes}.")
    return data


class HubSafetensorsSource(TensorSource):
    """A hub repository read through HTTP range requests: headers, then q/k tensors only."""

    kind = "hub-safetensors"

    def __init__(self, repo_id: str, revision: str | None = None):
        super().__init__(repo_id)
        from huggingface_hub import get_safetensors_metadata, hf_hub_download

        self.revision = revision
        try:
            cfg_path = hf_hub_download(repo_id, "config.json", revision=revision)
            self.config, self.bytes_read = _read_json(Path(cfg_path), "config")
            meta = get_safetensors_metadata(repo_id, revision=revision)
        except CompanionError:
            raise
        except Exception as exc:
            raise CompanionError(
                f"cannot read config.json and safetensors headers of hub repository {repo_id!r}"
                f"{' at revision ' + revision if revision else ''}: {exc}. Repositories with "
                "only pytorch_model.bin: download them and pass the folder with allow_pickle."
            ) from None
        self._where: dict[str, tuple[str, object]] = {}
        self.dtypes = {}
        self._header_len: dict[str, int] = {}
        for fname, fmeta in meta.files_metadata.items():
            for name, info in fmeta.tensors.items():
                self._where[name] = (fname, info)
                self.shapes[name] = tuple(info.shape)
                self.dtypes[name] = info.dtype

    def _url(self, fname: str) -> str:
        from huggingface_hub import hf_hub_url

        return hf_hub_url(self.location, fname, revision=self.revision)

    def _data_start(self, fname: str) -> int:
        if fname not in self._header_len:
            (n,) = struct.unpack("<Q", _http_range(self._url(fname), 0, 8))
            self._header_len[fname] = n
            self.bytes_read += 8 + n  # the header itself was fetched for the metadata
        return 8 + self._header_len[fname]

    def stored_nbytes(self, name: str) -> int:
        start, end = self._where[name][1].data_offsets
        return end - start

    def _load(self, name: str) -> torch.Tensor:
        fname, info = self._where[name]
        dtype = _ST_DTYPES.get(info.dtype)
        if dtype is None:
            raise CompanionError(f"tensor {name!r} has unsupported dtype {info.dtype}.")
        start, end = info.data_offsets
        base = self._data_start(fname)
        try:
            buf = bytearray(_http_range(self._url(fname), base + start, end - start))
        except CompanionError:
            raise
        except Exception as exc:
            raise CompanionError(f"cannot fetch {name!r} from {self.location}/{fname}: {exc}") from None
        self.bytes_read += end - start
        return torch.frombuffer(buf, dtype=dtype).reshape(tuple(info.shape))


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
