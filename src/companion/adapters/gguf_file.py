"""llama.cpp ``.gguf`` files: the header parsed with bounds, tensors dequantized one by one."""

from __future__ import annotations

import math
import os
import struct
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import torch

from ..base.errors import CompanionError
from .tensor_source import TensorSource, read_range, refuse_lfs_pointer, regular_file

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
# arrays of arrays are legal GGUF; llama.cpp writes none, and a file nesting them thousands
# deep would only exhaust the parser's recursion
_MAX_NESTING = 8


class _BadGGUF(ValueError):
    """A GGUF header that is malformed: refused, never handed to another parser."""


class _HeaderBytes:
    """The start of a file, read in growing blocks as a parser walks through it."""

    def __init__(self, f, block: int = 1 << 20, size: int | None = None):
        self.f, self.block, self.buf, self.pos = f, block, bytearray(), 0
        self.size = os.fstat(f.fileno()).st_size if size is None else size

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

    def string(self, keep: bool = True, errors: str = "replace"):
        n = self.unpack("Q")
        self.need(n)
        raw = bytes(self.buf[self.pos:self.pos + n]) if keep else None
        self.pos += n
        return raw.decode("utf-8", errors=errors) if keep else None

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


def _gguf_read_value(h: _HeaderBytes, vtype: int, keep: bool, depth: int = 0):
    if vtype == _GGUF_STRING:
        return h.string(keep)
    if vtype == _GGUF_ARRAY:
        itype, count = h.unpack("IQ")
        h.need(min(count, h.size) * (8 if itype == _GGUF_STRING else 1))  # every item takes bytes
        if itype == _GGUF_ARRAY:   # each item an array of its own (type, count, items)
            if depth >= _MAX_NESTING:
                raise _BadGGUF(f"its arrays are nested more than {_MAX_NESTING} deep")
            h.need(min(count, h.size) * 12)
            items = [_gguf_read_value(h, _GGUF_ARRAY, keep, depth + 1) for _ in range(count)]
            return items if keep else None
        if itype == _GGUF_STRING:
            if not keep:
                h.skip_strings(count)
                return None
            return [h.string() for _ in range(count)]
        if itype not in _GGUF_SCALARS:
            raise _BadGGUF(f"unknown GGUF array item type {itype}")
        size = struct.calcsize("<" + _GGUF_SCALARS[itype])
        if not keep:  # the tokenizer's vocabulary and scores: seek past them
            h.skip(count * size)
            return None
        h.need(count * size)
        values = list(struct.unpack_from(f"<{count}{_GGUF_SCALARS[itype]}", h.buf, h.pos))
        h.pos += count * size
        return values
    if vtype not in _GGUF_SCALARS:
        raise _BadGGUF(f"unknown GGUF value type {vtype}")
    return h.unpack(_GGUF_SCALARS[vtype])


def parse_gguf_header(path: Path) -> tuple[dict, list[tuple[str, tuple[int, ...], int, int]], int]:
    """Metadata, tensor infos and data offset of a little-endian GGUF (v2/v3) file.

    Returns ``(config, tensors, data_offset)``: ``config`` without the ``tokenizer.*``
    arrays (their values are skipped, not decoded: for a small model they are most of the
    parsing time), ``tensors`` as ``(name, ne, ggml_type, offset_in_data)`` in file order.
    Raises ``ValueError`` for anything else (the caller falls back to ``gguf.GGUFReader``).
    """
    with open(path, "rb") as f:
        return parse_gguf_stream(f)


def parse_gguf_stream(f, size: int | None = None):
    """:func:`parse_gguf_header` of an open binary file ``f`` of ``size`` bytes (by default
    its size on disk): a file presented in parts reads its header through this."""
    h = _HeaderBytes(f, size=size)
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
    seen: set = set()
    for _ in range(n_kv):
        # names compared as their bytes (as llama.cpp does): two keys that are not UTF-8 stay two
        key = h.string(errors="backslashreplace")
        if key in seen:   # llama.cpp refuses a key stored twice; neither copy is trusted
            raise _BadGGUF(f"the metadata key {key!r} is stored twice")
        seen.add(key)
        vtype = h.unpack("I")
        keep = not key.startswith("tokenizer.")
        try:
            value = _gguf_read_value(h, vtype, keep)
        except _BadGGUF as exc:
            raise _BadGGUF(f"metadata key {key!r}: {exc}") from None
        if keep:
            config[key] = value
    tensors = []
    for _ in range(n_tensors):
        name = h.string(errors="backslashreplace")
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
        if block > 1 and not ne:   # blocks run along the first dimension, which a scalar lacks
            raise ValueError(f"tensor {name!r} is a scalar stored as {self.tensor_type.name} blocks of {block}")
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
    # a big-endian file (read through gguf.GGUFReader) stores every value byte-swapped
    big_endian = False

    def __init__(self, path: str | os.PathLike):
        super().__init__(str(path))
        try:
            import gguf  # noqa: F401
        except ImportError as exc:  # pragma: no cover - gguf is a dependency
            raise CompanionError("reading .gguf files needs the 'gguf' package: pip install gguf") from exc
        path = Path(path)
        regular_file(path, "GGUF file")
        refuse_lfs_pointer(path, "GGUF file")
        try:
            config, infos, data_offset = parse_gguf_header(path)
        except _BadGGUF as exc:  # malformed: never handed to GGUFReader, which would believe it
            raise CompanionError(f"{path} is not a readable GGUF file ({exc}).") from None
        except (OSError, ValueError, struct.error):  # big-endian or GGUF v1: the reference reader
            config, infos, data_offset = self._header_with_gguf_reader(path)
            with open(path, "rb") as f:   # the reference reader's test: a version with its low half 0
                head = f.read(8)
            self.big_endian = len(head) == 8 and struct.unpack_from("<I", head, 4)[0] & 0xFFFF == 0
        self._index(config, infos, data_offset, path.stat().st_size, str(path))

    def _index(self, config: dict, infos, data_offset: int, size: int, where: str) -> None:
        """Keep the metadata and each tensor's place, checked against the file's ``size``.

        As llama.cpp's loader requires (``gguf.cpp``: "tensor has offset ..., expected ..."),
        the tensors tile the data section in the order of their infos, each starting where
        the one before it ends, padded to ``general.alignment``; and the data ends with the
        last tensor (within its padding).  A tensor info that lies about its type, shape or
        offset breaks this tiling and is refused, instead of being read from bytes that are
        not its own (two same-sized tensors' offsets swapped, F32 bytes declared F16).
        """
        count = config.get("split.count")
        if isinstance(count, int) and not isinstance(count, bool) and count > 1:
            # one file of a gguf-split set holds some of the tensors: its layers and parameters are not the model's
            no = config.get("split.no")
            part = f"part {no + 1} of {count}" if isinstance(no, int) and not isinstance(no, bool) else f"one of {count} parts"
            raise CompanionError(f"{where} is {part} of a split GGUF file (split.count = {count}), holding only some of "
                                 "the model's tensors; merge the parts (llama-gguf-split --merge FIRST_PART OUT.gguf) "
                                 "and read the merged file.")
        self.config = config
        self._tensors: dict[str, _GGUFTensorInfo] = {}
        align = config.get("general.alignment", 32)
        if isinstance(align, bool) or not isinstance(align, int) or align <= 0:
            align = 32   # the reference reader's default; parse_gguf_stream refused a bad one
        try:
            expected = end = 0
            for name, ne, ggml_type, offset in infos:
                if name in self._tensors:
                    raise ValueError(f"duplicated tensor {name!r}")
                info = _GGUFTensorInfo(name, ne, ggml_type, data_offset + offset)
                if info.data_offset + info.n_bytes > size:
                    raise ValueError(f"tensor {name!r} lies outside the file (truncated download?)")
                if offset != expected:  # llama.cpp refuses this too
                    how = "overlapping their data" if offset < expected else "leaving a gap"
                    raise ValueError(f"tensor {name!r} starts at byte {offset:,} of the data, but the tensors "
                                     f"before it end at {expected:,} ({how}): its offset, or the type or shape "
                                     "of a tensor before it, is not what the header says")
                end = offset + info.n_bytes
                expected = end + (-end) % align
                self._tensors[name] = info
                self.shapes[name] = tuple(reversed(ne))
            if self._tensors and not end <= size - data_offset <= expected:
                raise ValueError(f"the tensors end at byte {end:,} of the data, but the file holds "
                                 f"{size - data_offset:,}: the last tensor's type or shape is not what "
                                 "the header says")
        except ValueError as exc:
            raise CompanionError(f"{where} is not a readable GGUF file ({exc}).") from None
        # metadata and tensor infos are parsed in full: everything before the tensor data
        self.bytes_read = int(data_offset)
        if self._tied_output():   # one parameter stored twice: counted once, as num_parameters() does
            self.aliases = frozenset({"output.weight"})

    #: architectures whose converter keeps only the tokenizer's rows of a token embedding that the
    #: model pads to a multiple of 64 (NomicBERT's ``pad_vocab_size_multiple``; llama.cpp's
    #: NomicBertModel cuts ``embeddings.word_embeddings.weight`` to the vocabulary)
    _PADDED_VOCABULARY = {"nomic-bert": 64, "nomic-bert-moe": 64}

    @property
    def n_parameters(self) -> int:
        """As :attr:`TensorSource.n_parameters`, with the padding rows of a NomicBERT token embedding
        that the file leaves out (30,522 of nomic-embed-text's 30,528 rows: 4,608 parameters short)."""
        count = super().n_parameters
        multiple = self._PADDED_VOCABULARY.get(self.config.get("general.architecture"))
        shape = self.shapes.get("token_embd.weight")
        if multiple and shape is not None and len(shape) == 2:
            count += (-shape[0] % multiple) * shape[1]
        return count

    def _tied_output(self) -> bool:
        """Whether ``output.weight`` is a second copy of ``token_embd.weight`` (a model with tied
        embeddings whose converter wrote the output matrix too, often in another block type:
        Qwen2.5-Coder's files counted 630M parameters for a 494M model).  Told from 16 rows of each,
        dequantized: a copy correlates with the original up to the quantisation's noise, two
        matrices trained apart do not."""
        emb, out = self._tensors.get("token_embd.weight"), self._tensors.get("output.weight")
        if emb is None or out is None or emb.ne != out.ne or len(emb.ne) != 2 or self.big_endian:
            return False
        rows = int(emb.ne[1])
        picks = sorted({int(r) for r in np.linspace(0, rows - 1, 16)})
        try:
            values = []
            for t in (emb, out):
                kind, row = np.dtype(t.dtype).kind, t.n_bytes // rows
                if kind in "iu" and t.dtype != np.uint8:   # plain integers: no weights of a model
                    return False
                raw = np.concatenate([self._read(t.data_offset + r * row, row) for r in picks])
                data = np.frombuffer(raw.tobytes(), dtype=np.dtype(t.dtype)).reshape(len(picks), -1)
                values.append(np.asarray(data if kind == "f" else _dequantize_whole(data, t.tensor_type),
                                         dtype=np.float64).ravel())
        except (ValueError, TypeError, CompanionError, OSError):
            return False
        x, y = values
        if not (np.isfinite(x).all() and np.isfinite(y).all()) or x.std() == 0 or y.std() == 0:
            return False
        return float(np.corrcoef(x, y)[0, 1]) > 0.9

    def _read(self, start: int, nbytes: int) -> np.ndarray:
        """The stored bytes ``[start, start + nbytes)`` of the file."""
        return read_range(Path(self.location), start, nbytes)

    @staticmethod
    def _header_with_gguf_reader(path: Path, reader=None):
        """The header as the ``gguf`` package reads it (``reader``: one already made of ``path``)."""
        from gguf import GGUFReader

        try:
            reader = reader if reader is not None else GGUFReader(str(path), "r")
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
        dtype = np.dtype(t.dtype)
        if self.big_endian:
            if dtype == np.uint8:   # quantized blocks
                raise CompanionError(
                    f"{self.location}: {name!r} is stored as {t.tensor_type.name} blocks in a big-endian GGUF "
                    "file, and whether their scales were byte-swapped (llama.cpp's gguf_convert_endian does, "
                    "gguf.GGUFWriter does not) cannot be told from the file; convert it to little-endian "
                    "and read that.")
            dtype = dtype.newbyteorder(">")
        raw = self._read(t.data_offset, t.n_bytes)
        data = np.frombuffer(raw, dtype=dtype).reshape(t.np_shape)
        try:
            # plain floats are their own values (gguf.quants has no rule for F64: it refused such files)
            values = data if dtype.kind == "f" else _dequantize_whole(data, t.tensor_type)
        except Exception as exc:
            raise CompanionError(
                f"cannot dequantize {name!r} ({t.tensor_type.name}) in {self.location}: {exc}."
            ) from None
        self.bytes_read += int(t.n_bytes)
        # F64 stays float64: 1e-50 or 1e50 weights would become 0 or Inf in float32
        keep = np.float64 if t.dtype == np.float64 else np.float32
        values = np.ascontiguousarray(values, dtype=keep).reshape(self.shapes[name])
        return torch.from_numpy(values)


# ----------------------------------------------------------------------------- hub

# ------------------------------------------------ transformers' own GGUF loader, parsing once


@contextmanager
def transformers_parse_once():
    """Inside: transformers parses a GGUF file's header once, however many of its readers open it.

    transformers parses the whole header (for Qwen2, 150k vocabulary strings and as many
    merges) for the config, again for the tokenizer's config and again for the weights:
    three ``gguf.GGUFReader``s of one file, and the same metadata decoded twice.  Here the
    reader of a path is made once and the metadata-only result of ``load_gguf_checkpoint``
    kept (each caller gets its own copy, as from a fresh parse); the weights are still
    read and dequantized by transformers.  Both are put back on leaving."""
    import copy

    import gguf
    from transformers import modeling_gguf_pytorch_utils as hf_gguf

    make_reader, load = gguf.GGUFReader, hf_gguf.load_gguf_checkpoint
    readers: dict = {}
    metadata: dict = {}

    def reader(path, *args, **kwargs):
        key = (str(Path(path).resolve()), args, tuple(sorted(kwargs.items())))
        if key not in readers:
            readers[key] = make_reader(path, *args, **kwargs)
        return readers[key]

    def load_once(path, return_tensors=False, *args, **kwargs):
        if return_tensors or args or kwargs:
            return load(path, return_tensors, *args, **kwargs)
        key = str(Path(path).resolve())
        if key not in metadata:
            metadata[key] = load(path, False)
        return copy.deepcopy(metadata[key])

    gguf.GGUFReader, hf_gguf.load_gguf_checkpoint = reader, load_once
    try:
        yield
    finally:
        gguf.GGUFReader, hf_gguf.load_gguf_checkpoint = make_reader, load
        readers.clear()
        metadata.clear()
