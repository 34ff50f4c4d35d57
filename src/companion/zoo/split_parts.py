"""A file shipped as byte parts and read where the parts lie: the zoo's ``"parts"`` assembly.

Joining a 1.1 GB GGUF file on disk only to read 43 MB of query and key tensors from it
costs a second copy of the file; so the zoo hashes the parts in place, in order, and writes
a *parts manifest* (``<file>.parts.json``) that the reader opens instead of the file
(:mod:`companion.adapters.gguf_parts` documents the format).  One pass over the parts gives
each part's sha256 and the whole file's: a part whose bytes are not its own is refused
before anything is written, named as out of order when it holds another part's bytes, and
the manifest is written whole or not at all (the caller builds it in a temporary folder and
renames it into place).
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from ..base.errors import CompanionError

__all__ = ["FORMAT", "build_manifest", "manifest_current", "marker"]

#: the manifest's format tag (``companion.adapters.gguf_parts.MANIFEST_FORMAT``)
FORMAT = "companion.parts/1"
_CHUNK = 1 << 22


def marker(st: os.stat_result) -> dict:
    """Size, modification and status-change times and inode: what changes whenever a file's
    bytes do (``touch`` can put the modification time back, not the status-change time)."""
    return {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "ctime_ns": st.st_ctime_ns, "ino": st.st_ino}


def build_manifest(name: str, file: str, parts: list[tuple[Path, str]], dest: Path,
                   reinstall: str) -> tuple[str, int]:
    """Hash ``parts`` (``(path, pinned sha256)`` in order) and write their manifest to ``dest``.

    Returns the sha256 and size of the whole file; the caller compares them with the pins.
    A part whose sha256 is not its pinned one is refused (``reinstall``: the command that
    brings the pinned packages back), and nothing is written.
    """
    pinned = {sha: i for i, (_, sha) in enumerate(parts, start=1)}
    whole, entries, size = hashlib.sha256(), [], 0
    for i, (path, sha) in enumerate(parts, start=1):
        st = path.stat()
        own = hashlib.sha256()
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(_CHUNK), b""):
                own.update(block)
                whole.update(block)
        digest = own.hexdigest()
        if digest != sha:
            other = pinned.get(digest)
            why = (f"holds the bytes of part {other}: the parts are out of order" if other
                   else f"has sha256 {digest[:16]}..., not the pinned {sha[:16]}...")
            raise CompanionError(f"{name}: part {i} of {len(parts)} ({path}) {why}. Reinstall: {reinstall}")
        if marker(path.stat()) != marker(st):
            raise CompanionError(f"{name}: part {i} of {len(parts)} ({path}) changed while it was hashed; "
                                 "run `companion zoo fetch` again.")
        entries.append({"path": str(path), "size": st.st_size, "sha256": digest, "marker": marker(st)})
        size += st.st_size
    dest.write_text(json.dumps({"format": FORMAT, "model": name, "file": file, "size": size,
                                "sha256": whole.hexdigest(), "parts": entries}, indent=1))
    return whole.hexdigest(), size


def manifest_current(path: Path, sha256: str, size: int, n_parts: int) -> bool:
    """The manifest at ``path`` records the pinned file and every part it lists is unchanged
    since it was hashed (by marker: nothing is hashed here)."""
    try:
        if not path.is_file():
            return False
        data = json.loads(path.read_text())
        parts = data["parts"]
        if (data.get("format") != FORMAT or data.get("sha256") != sha256 or data.get("size") != size
                or len(parts) != n_parts):
            return False
        return all(marker(Path(p["path"]).stat()) == p["marker"] for p in parts)
    except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError):
        return False
