"""The package's cache folder: fetched archives, token files, assembled checkpoints.

``$COMPANION_CACHE`` when set, else ``$XDG_CACHE_HOME/companion``, else
``~/.cache/companion``.  Everything in it can be deleted: it is rebuilt on demand.
Files are written to a temporary name in their final folder and renamed into place only
when complete (:func:`atomic_path`), so an interrupted write never leaves a file that
looks finished.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from pathlib import Path

__all__ = ["cache_root", "cache_dir", "atomic_path", "sha256_file"]

ENV_VAR = "COMPANION_CACHE"


def cache_root() -> Path:
    """The cache folder (not created)."""
    env = os.environ.get(ENV_VAR)
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "companion"


def cache_dir(*parts: str) -> Path:
    """A sub-folder of the cache, created if needed."""
    d = cache_root().joinpath(*parts)
    d.mkdir(parents=True, exist_ok=True)
    return d


@contextlib.contextmanager
def atomic_path(final: str | os.PathLike):
    """Yield a temporary path beside ``final``; rename it to ``final`` on success.

    On any exception the temporary file (or folder) is removed and ``final`` is untouched.
    """
    final = Path(final)
    tmp = final.with_name(f".{final.name}.tmp-{os.getpid()}")
    try:
        yield tmp
        os.replace(tmp, final)
    finally:
        if tmp.exists():
            if tmp.is_dir():
                import shutil

                shutil.rmtree(tmp, ignore_errors=True)
            else:
                tmp.unlink()


def sha256_file(path: str | os.PathLike, chunk: int = 1 << 22) -> str:
    """Hex sha256 of a file, read in 4 MiB chunks."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()
