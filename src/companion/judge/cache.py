"""The verdicts' cache: a table computed once per process (:func:`_cached`) and, where
``COMPANION_VERDICT_CACHE`` names a folder, once per package key on disk
(:func:`_disk_cached`), so that every chapter that states statuses reads the same table.

Re-exported by :mod:`companion.judge.claims`, whose ``_CACHE`` is the dict read here
(:func:`store`).
"""

from __future__ import annotations

import contextlib


_CACHE: dict = {}

#: where the process's tables are looked up at call time: :mod:`companion.judge.claims`
#: registers ``lambda: claims._CACHE`` (:func:`serve_from`), so that rebinding
#: ``claims._CACHE`` (as the tests do, to start empty) is the cache every claim module reads
_store = None


def serve_from(lookup) -> None:
    """Read the cache, from now on, as ``lookup()`` at each call (a function giving the dict)."""
    global _store
    _store = lookup


def store() -> dict:
    """The process's cache of computed tables, as bound now."""
    return _CACHE if _store is None else _store()


def _cached(name, fn):
    cache = store()
    if name not in cache:
        cache[name] = fn()
    return cache[name]


def _disk_cached(name, fn):
    """``fn()``, a DataFrame, kept in this process and, where ``COMPANION_VERDICT_CACHE`` names
    a folder (the book's kernels set it: every chapter that states statuses reads the same
    table instead of recomputing it), on disk as JSON under a key of the run size and the
    package and its data (:func:`companion.base.tree_digest.tree_digest`, as the book's cache),
    so a change to any of them is never served from an older table.  JSON, not pickle: a
    cache file is read, never executed, and written only when it reads back as the table
    (values and types).  Kernels that ask at the same time wait for the one that computes (a
    file lock beside the table), so the table is computed once per key."""
    cache = store()
    if name in cache:
        return cache[name]
    path = _cache_path(name)
    if path is None:
        return _cached(name, fn)
    if _read_table(path, name):
        return cache[name]
    path.parent.mkdir(parents=True, exist_ok=True)
    # one kernel computes, the others wait for its file (the chapters run two at a time)
    with _file_lock(path.with_suffix(".lock")):
        if _read_table(path, name):
            return cache[name]
        value = _cached(name, fn)
        from ..base.outputs import write_text_atomic

        text = value.to_json(orient="table", index=False, double_precision=15)
        if _reads_back_as(text, value):   # else kept in this process only: never served changed
            write_text_atomic(text, path)
    return value


def _reads_back_as(text, value) -> bool:
    """Does the JSON ``text`` read back as ``value``, values and types alike?"""
    import io

    import pandas as pd

    try:
        pd.testing.assert_frame_equal(pd.read_json(io.StringIO(text), orient="table"),
                                      value.reset_index(drop=True))
        return True
    except (AssertionError, ValueError, TypeError):
        return False


def _cache_path(name):
    """Where ``COMPANION_VERDICT_CACHE`` keeps the table ``name`` for this package key (the
    run size and :func:`companion.base.tree_digest.tree_digest` of the package and its data),
    or None where the variable is unset."""
    import hashlib
    import os
    from pathlib import Path

    from ..base import paths
    from ..base.runtime import run_size
    from ..base.tree_digest import tree_digest

    folder = os.environ.get("COMPANION_VERDICT_CACHE")
    if not folder:
        return None
    _, digest = tree_digest(paths.ROOT, ("src/companion", "data"))
    key = hashlib.sha256(f"{run_size()}\0{digest}".encode()).hexdigest()[:24]
    return Path(folder) / f"{name}-{key}.json"


def _ready_table(name):
    """The table ``name`` if this process or the disk cache already holds it, else None
    (nothing is computed)."""
    cache = store()
    if name in cache:
        return cache[name]
    path = _cache_path(name)
    return cache[name] if path is not None and _read_table(path, name) else None


def _read_table(path, name) -> bool:
    """Read a cached table into the cache (:func:`store`) under ``name``; False when there is none or it is torn."""
    import io

    import pandas as pd

    if not path.is_file():
        return False
    try:
        store()[name] = pd.read_json(io.StringIO(path.read_text()), orient="table")
        return True
    except ValueError:
        path.unlink(missing_ok=True)   # a torn or foreign file: recompute
        return False


@contextlib.contextmanager
def _file_lock(path):
    """An exclusive lock on ``path`` between processes (``flock``; where there is none, no lock:
    the table is then at worst computed twice, and written atomically either way)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
