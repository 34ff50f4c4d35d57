"""One content hash of a set of the repository's folders and files.

Two caches key what they hold on the package and its data: the book's execution cache
(:mod:`companion.book.site.book_cache`) and the verdict table the chapters share
(:func:`companion.judge.claims._disk_cached`).  Both hash the same way, here: every file git
tracks or would track under the given paths (files the project's own ``.gitignore`` files
ignore, such as a training run's checkpoints and its progress log, are left out), each as its
path, a NUL, its length in bytes (eight bytes, big-endian) and its bytes: with the length, no
two different trees give one stream (without it, ``{a: "x", b: "y"}`` and ``{a: "", xb: "y"}``
gave one: a file's bytes ran into the next path).  Only the project's ``.gitignore`` files decide: a user's global
gitignore (``core.excludesFile``) or ``.git/info/exclude`` may hide a data file that changes
what is computed (a history file, a run's log), and such a file is still hashed.  Outside a
checkout every file is hashed except a progress log.

Reading the files is the cost (about 90 MB); within one process a digest is reused while no
file's size, modification and change times or inode has changed (and none was written within
a clock tick of the hash), so asking again is a directory walk.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import time
from pathlib import Path

__all__ = ["tree_files", "tree_digest"]

#: written continuously while a run trains; never part of a key (git ignores it in a checkout)
_NEVER = frozenset({"progress.log"})

_MEMO: dict = {}
_TICK_NS = 100_000_000   # wider than any file system's time stamp step (ext4: one jiffy)


def tree_files(root: Path | str, keyed: tuple[str, ...]) -> list[Path]:
    """The files under ``keyed`` (paths relative to ``root``) that the digest covers, sorted."""
    root = Path(root)
    try:
        # not --exclude-standard: that adds the user's global gitignore and info/exclude,
        # which can hide a file the cached results are computed from
        out = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-per-directory=.gitignore",
                              "-z", "--", *keyed], cwd=root, check=True, capture_output=True,
                             timeout=30).stdout
        # a name that is not UTF-8 (a Latin-1 file unpacked from elsewhere) is kept as its bytes
        paths = [root / os.fsdecode(n) for n in sorted(set(n for n in out.split(b"\0") if n))]
        listed_by_git = True
    except (OSError, subprocess.SubprocessError):
        listed_by_git = False   # every file under each keyed folder, nested repositories' included
        paths = sorted(p for k in keyed for p in ((root / k).rglob("*") if (root / k).is_dir()
                                                   else [root / k])
                       if p.name not in _NEVER)
    files, nested = [], False
    for p in paths:
        if "__pycache__" in p.parts:
            continue
        if listed_by_git and p.is_dir() and not p.is_symlink() and os.path.lexists(p / ".git"):
            # a repository inside the tree (runs or a corpus cloned into data/, a submodule): git
            # lists it as one entry, and its files were left out of the key; they are its own
            files.extend(tree_files(p, (".",)))
            nested = True
        elif p.is_file():
            files.append(p)
    if nested:   # in git's order, by the bytes of each path
        files.sort(key=lambda p: os.fsencode(p.relative_to(root).as_posix()))
    return files


def tree_digest(root: Path | str, keyed: tuple[str, ...]) -> tuple[int, str]:
    """``(number of files, sha256 hex digest)`` over :func:`tree_files`: each file's path
    relative to ``root``, a NUL, its length in bytes as eight big-endian bytes, then its bytes
    (a path holds no NUL and the length ends each file's bytes, so every tree has a stream of
    its own)."""
    root = Path(root)
    files = tree_files(root, keyed)
    # the change time and inode too: a file replaced by one of the same size with its modification
    # time set back (cp -p, rsync -a, tar) kept both, and the digest of the old bytes was reused
    stats, kept = [], []
    for p in files:
        try:
            st = p.stat()
        except FileNotFoundError:   # removed since it was listed (an editor's temporary file): not in the tree now
            continue
        stats.append((p.relative_to(root).as_posix(), st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino))
        kept.append(p)
    stats, files = tuple(stats), kept
    where = (str(root.resolve()), tuple(keyed))
    if where in _MEMO and _MEMO[where][0] == stats:
        return _MEMO[where][1]
    started = time.time_ns()
    h = hashlib.sha256()
    vanished = 0
    for (rel, *_), p in zip(stats, files):
        try:
            content = p.read_bytes()
        except FileNotFoundError:   # removed between its time stamps and its bytes: hashed as absent,
            vanished += 1           # and this state is never reused
            continue
        h.update(os.fsencode(rel) + b"\0" + len(content).to_bytes(8, "big"))
        h.update(content)
    digest = (len(files) - vanished, h.hexdigest())
    # a file written just before the hash could be written again within the clock's tick
    # without its time changing (git's "racy clean" case): such a state is never reused
    if not vanished and all(mtime < started - _TICK_NS for _, _, mtime, *_ in stats):
        _MEMO[where] = (stats, digest)
    else:
        _MEMO.pop(where, None)
    return digest
