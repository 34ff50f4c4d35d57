"""Hugging Face model folders: ``config.json`` with safetensors or ``pytorch_model.bin``.

* :class:`SafetensorsSource`: ``model.safetensors`` or a sharded
  ``model.safetensors.index.json``; headers parsed directly, each tensor read with one
  positioned read of exactly its bytes (read-ahead switched off, see
  :func:`~.tensor_source.read_range`).
* :class:`PickleSource`: ``pytorch_model.bin`` (single or sharded).  Unpickling can run
  code, so it is only opened when the caller passes ``allow_pickle=True``.

Headers are validated by the safetensors format's own rules
(:func:`parse_safetensors_header`); a shard index may only name files inside the model's
folder, and its ``weight_map`` decides which file a tensor is read from.
"""

from __future__ import annotations

import json
import math
import os
import re
import struct
import zipfile
from pathlib import Path, PurePosixPath

import torch

from ..base.errors import CompanionError
from .tensor_source import (TensorSource, _check_config, _no_duplicate_keys, _read_json, read_range,
                            refuse_lfs_pointer, regular_file)

_ST_DTYPES = {
    "F64": torch.float64, "F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16,
    "F8_E4M3": torch.float8_e4m3fn, "F8_E5M2": torch.float8_e5m2,
    "I64": torch.int64, "I32": torch.int32, "I16": torch.int16, "I8": torch.int8,
    "U8": torch.uint8, "BOOL": torch.bool,
}
_TORCH_DTYPE_NAMES = {v: k for k, v in _ST_DTYPES.items()}
_ST_BITS = {
    "BOOL": 8, "U8": 8, "I8": 8, "F8_E5M2": 8, "F8_E4M3": 8, "F8_E8M0": 8, "F4": 4,
    "F6_E2M3": 6, "F6_E3M2": 6, "I16": 16, "U16": 16, "F16": 16, "BF16": 16, "I32": 32,
    "U32": 32, "F32": 32, "C64": 64, "F64": 64, "I64": 64, "U64": 64,
}
_MAX_HEADER = 100_000_000  # the safetensors library's limit on the JSON header

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


def read_safetensors_header(path: Path) -> tuple[dict, int]:
    """The validated JSON header of a ``.safetensors`` file and the bytes it takes (8 + n)."""
    regular_file(path, "weights file")
    refuse_lfs_pointer(path)
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
    except OSError as exc:   # unreadable is not invalid
        raise CompanionError(f"cannot read weights file {path}: {exc.strerror or exc}; check that the file "
                             "is readable (its permissions, its owner, the disk).") from None
    except (ValueError, KeyError, TypeError, RecursionError) as exc:
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
    if len(files) <= 1:   # one shard of several (a download stopped) is not the model
        _check_shard_set(files, f"{folder} (no shard index)")
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
                _refuse_dangling(path)
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

    def row_bytes(self, name: str, first: int, n: int) -> bytes:
        """Rows ``first`` to ``first + n`` of a stored tensor, read alone (one positioned read)."""
        path, info = self._where[name]
        start, end = info["data_offsets"]
        row = (end - start) // info["shape"][0]
        self.bytes_read += n * row
        return read_range(path, self._data_start[path] + start + first * row, n * row).tobytes()

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
        weight_map = None
        if index.exists():
            idx, nbytes = _read_json(index, "shard index")
            self.bytes_read += nbytes
            weight_map = _index_files(folder, index, idx)
            files = sorted(set(weight_map.values()))
        else:
            files = ["pytorch_model.bin"]
        self._tensors: dict[str, torch.Tensor] = {}
        self.dtypes = {}
        owner: dict[str, str] = {}   # tensor name -> the file it is read from
        storages: dict[tuple, str] = {}
        aliases = set()
        for fname in files:
            path = folder / fname
            if not path.exists():
                _refuse_dangling(path)
                raise CompanionError(f"shard {fname} listed in the index is missing from {folder}; "
                                     "download it again.")
            regular_file(path, "weights file")   # a FIFO or device would block or never end
            refuse_lfs_pointer(path)
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
            _refuse_nested_state(state, path)
            # a whole pickle is parsed to find any tensor: count the whole file
            self.bytes_read += os.path.getsize(path)
            for name, t in state.items():
                if not isinstance(t, torch.Tensor):
                    continue
                if t.is_meta:   # shapes without values: nothing to read
                    raise CompanionError(f"{path} stores tensor {name!r} on the 'meta' device, a shape with no values "
                                         "(a model saved before its weights were loaded); save its state_dict() "
                                         "after loading the weights.")
                # as for safetensors shards: the index places a tensor; one it does not place
                # may be stored once only
                if weight_map is not None and name in weight_map:
                    if weight_map[name] != fname:
                        continue
                elif name in owner:
                    raise CompanionError(
                        f"tensor {name!r} is stored in both {owner[name]} and {fname}"
                        f"{' and the index does not say which' if weight_map else ''}; refusing to guess. "
                        "Remove the stray file or fix the shard index.")
                owner[name] = fname
                self._tensors[name] = t
                self.shapes[name] = tuple(t.shape)
                # the stored type by its safetensors name: an int8 weight of a quantized checkpoint
                # counts as a parameter, an integer buffer does not (labelled I64, int8 weights
                # were left out of n_parameters)
                self.dtypes[name] = _TORCH_DTYPE_NAMES.get(t.dtype, "I64" if not t.is_floating_point() else "F32")
                # tied weights (an output layer sharing the embedding) are one parameter stored
                # under two names, which model.num_parameters() counts once
                where = (t.untyped_storage().data_ptr(), t.storage_offset(), tuple(t.shape), t.stride(), t.dtype)
                if t.numel() and where in storages:
                    aliases.add(name)
                else:
                    storages[where] = name
        if weight_map is not None:
            _check_index_placed(weight_map, owner, index)
        self.aliases = frozenset(aliases)

    def _load(self, name: str) -> torch.Tensor:
        return self._tensors[name]

    def row_bytes(self, name: str, first: int, n: int) -> bytes:
        """The stored bytes of rows ``first`` to ``first + n`` (a copy saved apart from the tensor
        it ties to is told by them, as in a safetensors file)."""
        rows = self._tensors[name][first:first + n].contiguous()
        return rows.reshape(-1).view(torch.uint8).numpy().tobytes()

    def stored_nbytes(self, name: str) -> int:
        t = self._tensors[name]
        return t.numel() * t.element_size()


def _refuse_nested_state(state: dict, path: Path) -> None:
    """A training checkpoint (``{"state_dict": {...}, "epoch": 3}``, ``{"model": {...}, "optimizer": ...}``)
    keeps the weights one level down: named as such, not read as a checkpoint without the model's tensors."""
    if any(isinstance(v, torch.Tensor) for v in state.values()):
        return
    inner = [k for k, v in state.items() if isinstance(v, dict) and any(isinstance(t, torch.Tensor) for t in v.values())]
    if inner:
        key = str(inner[0])[:60]
        raise CompanionError(f"{path} holds its tensors under the key {key!r} (a training checkpoint), not as a "
                             f"state dict of the model's tensors; save that entry alone: torch.save(checkpoint[{key!r}], "
                             "'pytorch_model.bin').")


# ----------------------------------------------------------------------------- GGUF


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
        _check_index_placed(weight_map, found, where)
    return found


def _check_index_placed(weight_map: dict, found, where) -> None:
    """Refuse (one line naming the index) a shard index that places a tensor in a shard whose
    file does not hold it; ``found``: the names read from the shards the index names."""
    absent = sorted(n for n in weight_map if n not in found)
    if absent:
        more = f" (and {len(absent) - 1} more)" if len(absent) > 1 else ""
        raise CompanionError(
            f"{where} places {absent[0]!r}{more} in {weight_map[absent[0]]}, which does not "
            "hold it: the index does not match its shards. Download the checkpoint again.")


def _refuse_dangling(path: Path) -> None:
    """A link whose target is gone is named as such (not as a missing file or entry)."""
    if path.is_symlink() and not path.exists():
        try:
            target = os.readlink(path)
        except OSError:
            target = "?"
        raise CompanionError(f"{path} is a link to {target}, which does not exist (an interrupted download, or "
                             "a cache cleaned under it); download the model again.")


def open_local_folder(folder: str | os.PathLike, allow_pickle: bool = False) -> TensorSource:
    """Open a Hugging Face model folder (``config.json`` plus weights)."""
    folder = Path(folder)
    cfg_path = folder / "config.json"
    for name in ("config.json", "model.safetensors", "model.safetensors.index.json", "pytorch_model.bin"):
        _refuse_dangling(folder / name)
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
    shards = sorted(p.name for p in folder.glob("pytorch_model-*-of-*.bin"))
    if shards:   # sharded pickles without their index: said so, not "no weights"
        raise CompanionError(f"{folder} holds {len(shards)} pytorch_model shard file(s) ({', '.join(shards[:2])}"
                             f"{' ...' if len(shards) > 2 else ''}) but not their index pytorch_model.bin.index.json, "
                             "which says which tensors each holds; download the index too.")
    raise CompanionError(f"{folder} holds no model.safetensors or pytorch_model.bin weights.")

