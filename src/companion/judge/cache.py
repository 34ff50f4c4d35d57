"""The verdicts' cache: a table computed once per process (:func:`_cached`) and, where
``COMPANION_VERDICT_CACHE`` names a folder, once per package key on disk
(:func:`_disk_cached` for a table, :func:`_disk_cached_value` for the premise runs' and
shares' nested results), so that every chapter that states statuses reads the same table.
``python -m companion.judge.prepare`` fills that folder before the chapters run (``make
test``), so no chapter computes a shared table or waits for another that does.

Re-exported by :mod:`companion.judge.claims`, whose ``_CACHE`` is the dict read here
(:func:`store`).
"""

from __future__ import annotations

import contextlib
import os


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
    (values, dtypes and index exactly: :func:`_disk_cached_value`; pandas' own JSON turned a
    column of strings held as objects into its string dtype, so the family table was never
    written and every chapter computed it).  Kernels that ask at the same time wait for the
    one that computes (a file lock beside the table), so the table is computed once per key."""
    return _disk_cached_value(name, fn)


def _disk_cached_value(name, fn, key=None):
    """``fn()`` kept like :func:`_disk_cached`'s tables (in this process under ``key``, default
    ``name``; on disk under the same package key and lock), for a value nested of dicts,
    lists, tuples, numbers, strings and DataFrames (the premise runs and shares).  Stored as
    JSON that reads back exactly: every float as Python writes it, every column with its
    dtype, dict keys with their types; a value that would not read back identically
    (:func:`_same`) is kept in this process only."""
    key = name if key is None else key
    cache = store()
    if key in cache:
        return cache[key]
    path = _cache_path(name)
    if path is None:
        return _cached(key, fn)
    if path.is_symlink() or (os.path.lexists(path) and not path.is_file()):
        from ..base.errors import CompanionError   # refused before minutes of computing, never written through

        raise CompanionError(f"the verdict cache's entry {path} is not a regular file (a folder, FIFO or link); remove "
                             "it (COMPANION_VERDICT_CACHE holds only files the package made).")
    if _read_value(path, key):
        return cache[key]
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        from ..base.errors import CompanionError

        raise CompanionError(f"COMPANION_VERDICT_CACHE names {path.parent}, which is not a folder; point it at a "
                             "folder, or unset it.") from None
    with _file_lock(path.with_suffix(".lock")):
        if _read_value(path, key):
            return cache[key]
        value = _cached(key, fn)
        import json

        from ..base.outputs import write_text_atomic

        try:
            text = json.dumps(_encode(value))
        except _NotEncodable:
            return value
        try:
            exact = _same(_decode(json.loads(text)), value)
        except (ValueError, TypeError, KeyError):
            exact = False
        # else kept in this process only, never served changed; and the key was taken before the
        # value was computed: where the package or its data changed meanwhile, the value may be of
        # the new files, so it is never stored under the old key (served again once the edit was undone)
        if exact and _cache_path(name) == path:
            write_text_atomic(_sealed(text, path.name), path)
    return value


#: the first line of every cache entry: this tag and the sha256 of the rest of the file
_SEAL = "companion-cache-sha256:"


def _digest(text: str, name: str) -> str:
    import hashlib

    return hashlib.sha256(f"{name}\0{text}".encode()).hexdigest()


def _sealed(text: str, name: str) -> str:
    """``text`` as the cache entry of file ``name``: a first line holding the sha256 of the
    name and ``text``, then ``text``.  An entry is served only where its text still has that
    digest under that name (:func:`_unsealed`): a whole, valid entry of another table or
    package key copied over it is not."""
    return f"{_SEAL}{_digest(text, name)}\n{text}"


def _unsealed(entry: str, name: str) -> str | None:
    """The text of the cache entry of file ``name`` whose digest line matches it; None for an
    entry edited, torn, swapped for another (another table's entry included) or written
    without a digest (an older form)."""
    import hmac

    head, sep, text = entry.partition("\n")
    if not sep or not head.startswith(_SEAL):
        return None
    want = head[len(_SEAL):]
    return text if hmac.compare_digest(want, _digest(text, name)) else None


def _shared_when_on(name, fn):
    """``fn()`` kept on disk like :func:`_disk_cached_value` where ``COMPANION_VERDICT_CACHE``
    is set (the book's kernels, ``make prepare``), else computed at each call as before (no
    copy kept in the process that a test's stand-in could outlive).  A table is handed out as
    a copy, so one caller's change never reaches the next."""
    if _cache_path(name) is None:
        return fn()
    value = _disk_cached_value(name, fn)
    return value.copy() if hasattr(value, "to_json") and hasattr(value, "copy") else value


def content_key(value) -> str:
    """A short key of ``value``'s content (a rules file as read: dicts, lists, numbers, strings,
    dates), for naming a table computed from it."""
    import hashlib
    import json

    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()[:16]


class _NotEncodable(TypeError):
    """A value :func:`_encode` has no exact JSON form for."""


def _encode(value):
    """``value`` as plain JSON data that :func:`_decode` turns back into it."""
    import numpy as np
    import pandas as pd

    if isinstance(value, pd.DataFrame):
        idx = value.index
        index = ({"__range__": [idx.start, idx.stop, idx.step]} if isinstance(idx, pd.RangeIndex)
                 else _encode(idx.tolist()))
        return {"__frame__": {"columns": _encode(list(value.columns)), "dtypes": [str(t) for t in value.dtypes],
                              "index": index,
                              "data": [_encode(value.iloc[:, i].tolist()) for i in range(value.shape[1])]}}
    if isinstance(value, dict):
        return {"__dict__": [[_encode(k), _encode(v)] for k, v in value.items()]}
    if isinstance(value, tuple):
        return {"__tuple__": [_encode(v) for v in value]}
    if isinstance(value, list):
        return [_encode(v) for v in value]
    if isinstance(value, np.generic) and not isinstance(value, (np.datetime64, np.timedelta64, np.void)):
        if not _plain_scalar(value):   # float32, int32, ...: kept with its type (read as float64, it computed otherwise)
            item = value.item()
            if type(item) not in (bool, int, float):   # complex, long double: no exact JSON form
                raise _NotEncodable(f"no exact JSON form for {type(value).__name__}")
            return {"__scalar__": [value.dtype.str, item]}
        value = value.item()
    if value is None or isinstance(value, (bool, int, float, str)):
        return float(value) if isinstance(value, float) else value
    raise _NotEncodable(f"no exact JSON form for {type(value).__name__}")


def _plain_scalar(value) -> bool:
    """A NumPy scalar that computes as the Python number it holds (float64, int64, bool)."""
    return value.dtype.kind == "b" or value.dtype.str in ("<f8", "<i8", ">f8", ">i8", "=f8", "=i8")


def _decode(data):
    """The value :func:`_encode` wrote as ``data``."""
    import pandas as pd

    if isinstance(data, list):
        return [_decode(v) for v in data]
    if not isinstance(data, dict):
        return data
    if "__dict__" in data:
        return {_decode(k): _decode(v) for k, v in data["__dict__"]}
    if "__tuple__" in data:
        return tuple(_decode(v) for v in data["__tuple__"])
    if "__scalar__" in data:
        import numpy as np

        dtype, v = data["__scalar__"]
        return np.dtype(dtype).type(v)
    f = data["__frame__"]
    index = (pd.RangeIndex(*f["index"]["__range__"]) if isinstance(f["index"], dict)
             else pd.Index(_decode(f["index"])))
    cols = [pd.Series(_decode(col), dtype=dtype, index=index) for col, dtype in zip(f["data"], f["dtypes"])]
    out = pd.concat(cols, axis=1) if cols else pd.DataFrame(index=index)
    out.columns = _decode(f["columns"])
    return out


def _same(a, b) -> bool:
    """Whether ``a`` (read back) is ``b``: the same structure, keys, dtypes and every value
    exactly (NaN equal to NaN; a NumPy scalar equal to the Python number it holds)."""
    import math

    import numpy as np
    import pandas as pd

    if isinstance(b, pd.DataFrame):
        if not isinstance(a, pd.DataFrame):
            return False
        try:
            pd.testing.assert_frame_equal(a, b, check_exact=True)
            return True
        except (AssertionError, ValueError, TypeError):
            return False
    if isinstance(b, dict):
        return (isinstance(a, dict) and list(a) == list(b)
                and all(type(x) is type(y) and _same(a[x], b[y]) for x, y in zip(a, b)))
    if isinstance(b, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(b, np.generic) and not _plain_scalar(b):
        return type(a) is type(b) and (a == b or bool(np.isnan(a) and np.isnan(b)))
    if isinstance(b, np.generic):
        b = b.item()
    if isinstance(b, float):
        return isinstance(a, float) and (a == b or (math.isnan(a) and math.isnan(b)))
    return type(a) is type(b) and a == b


def _read_value(path, key) -> bool:
    """Read a value :func:`_disk_cached_value` wrote into the cache under ``key``; False when
    there is none, or it is torn, edited or written without its digest (then removed, to be
    computed again: an entry is served only where its text has the digest written with it)."""
    import json

    if not path.is_file():
        return False
    try:
        text = _unsealed(path.read_text(), path.name)
        if text is None:
            raise ValueError(f"{path}: no digest, or not the one written with it")
        store()[key] = _decode(json.loads(text))
        return True
    except (ValueError, KeyError, TypeError, UnicodeDecodeError):
        path.unlink(missing_ok=True)
        return False


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


#: every file that changes what a cached table holds: the package, its data (history files
#: included, whatever a user's own gitignore hides: :mod:`companion.base.tree_digest`), and the
#: pinned versions of the libraries that compute it
_KEYED = ("src/companion", "data", "constraints.txt", "pyproject.toml")


def _cache_path(name):
    """Where ``COMPANION_VERDICT_CACHE`` keeps the table ``name`` for this package key (the
    run size, :func:`companion.base.tree_digest.tree_digest` of the package, its data and
    the pinned library versions, :data:`_KEYED`, and ``COMPANION_TOKENIZER`` where set), or
    None where the variable is unset."""
    import hashlib
    import os
    from pathlib import Path

    from ..base import paths
    from ..base.runtime import run_size
    from ..base.tree_digest import tree_digest

    folder = os.environ.get("COMPANION_VERDICT_CACHE")
    if not folder:
        return None
    if not Path(folder).expanduser().is_absolute():   # each kernel's working folder would hold its own cache
        from ..base.errors import CompanionError

        raise CompanionError(f"COMPANION_VERDICT_CACHE={folder!r} is a relative path, so each chapter would keep its "
                             "own cache in its working folder; set it to an absolute path (e.g. "
                             f"COMPANION_VERDICT_CACHE=$PWD/{folder}).")
    if not name or Path(name).name != name or name.startswith(".") or "\\" in name:
        from ..base.errors import CompanionError   # the name went into the path: '../x' wrote beside the folder

        raise CompanionError(f"the cached table's name {name!r} is not a plain file name (no folders, no "
                             "leading dot); name it by letters, digits and dashes.")
    _, digest = tree_digest(paths.ROOT, _KEYED)
    seed = f"{run_size()}\0{digest}"
    tokenizer = os.environ.get("COMPANION_TOKENIZER", "").strip()
    if tokenizer:   # the premise shares are counted with it (unset: the key as before)
        seed += f"\0COMPANION_TOKENIZER={tokenizer}"
    key = hashlib.sha256(seed.encode()).hexdigest()[:24]
    return Path(folder).expanduser() / f"{name}-{key}.json"


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
    return _read_value(path, name)


@contextlib.contextmanager
def _file_lock(path):
    """An exclusive lock on ``path`` between processes (``flock``; where there is none, no lock:
    the table is then at worst computed twice, and written atomically either way)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    import os
    import stat

    from ..base.errors import CompanionError

    def refuse(why):
        return CompanionError(f"the verdict cache's lock {path} is {why}; remove it (COMPANION_VERDICT_CACHE "
                              "holds only files the package made).")

    # opened without following a link (its target, outside the cache, was created) and without
    # waiting on a FIFO (opening one for writing blocked the kernel for ever)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NONBLOCK
                     | getattr(os, "O_NOFOLLOW", 0), 0o644)
    except OSError as exc:
        try:
            mode = os.lstat(path).st_mode
        except OSError:
            mode = 0
        raise refuse("a link" if stat.S_ISLNK(mode) else "a FIFO" if stat.S_ISFIFO(mode) else
                     "a folder" if stat.S_ISDIR(mode) else f"not a file that can be opened ({exc.strerror or exc})") from None
    with os.fdopen(fd, "a") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise refuse("not a regular file (a FIFO, device or folder)")
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
