"""Where the repository's files are: its root and the ``data/`` folder the package reads
(the paper's tables, the shipped null draws, the rules file, the recorded runs)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from .errors import CompanionError

ROOT = Path(__file__).resolve().parents[3]
DATA_DIR = ROOT / "data"
#: the book build's shared verdict tables (``COMPANION_VERDICT_CACHE`` in its kernels)
VERDICT_CACHE = ROOT / "_build" / ".verdict_cache"


def _kind(mode: int) -> str:
    return ("a folder" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode) else
            "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "a socket" if stat.S_ISSOCK(mode)
            else "not a regular file")


def regular_file(path: str | os.PathLike, what: str = "file") -> os.stat_result:
    """``os.stat`` of ``path`` (links followed) when it is a regular file; else one clear
    refusal.  Every reader of an input checks it first: only regular files are read, since a
    FIFO would block forever and a device such as ``/dev/zero`` would never end."""
    try:
        st = os.stat(path)
    except OSError as exc:
        raise CompanionError(f"cannot read {what} {path}: {exc.strerror or exc}.") from None
    if not stat.S_ISREG(st.st_mode):
        raise CompanionError(f"{what} {path} is {_kind(st.st_mode)}, not a regular file; only files on "
                             "disk are read (a FIFO would block, a device would never end).")
    try:   # unreadable is not invalid: a file the user may not read is named as such here,
        # before a parser reports the failed read as a malformed file
        os.close(os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)))
    except OSError as exc:
        raise CompanionError(f"cannot read {what} {path}: {exc.strerror or exc}; check that the file is "
                             "readable (its permissions, its owner, the disk).") from None
    return st


#: one part of a hub id (``owner`` or ``name``): letters, digits, ``-``, ``_``, ``.``, none of the last
#: three at either end, at most 96 characters
_HUB_PART = r"[A-Za-z0-9_](?:[A-Za-z0-9_.-]{0,94}[A-Za-z0-9_])?"


def is_hub_id(value) -> bool:
    """Whether ``value`` is a hub id the hub itself accepts: ``name`` or ``owner/name`` of letters, digits,
    ``-``, ``_`` and ``.``, none of the last three at either end, no ``..`` or ``--``, at most 96
    characters a part, not ending in ``.git`` (the rule of ``huggingface_hub``'s validate_repo_id).  One
    rule for the zoo's catalog and the hub reader, which sit side by side and may not import each other."""
    import re

    return (isinstance(value, str) and re.fullmatch(f"(?:{_HUB_PART}/)?{_HUB_PART}", value) is not None
            and ".." not in value and "--" not in value and not value.endswith(".git"))


def home_path(text):
    """``text`` with a leading ``~`` or ``~user`` read as that home folder, as the shell reads it at
    a word's start; other text (and None) as it is.  The shell leaves a ``~`` after ``=`` alone, so
    ``--out=~/runs/a`` reaches a command with its ``~``, and a folder named ``~`` would be made in
    the working folder: every command's path option is read through this."""
    return os.path.expanduser(text) if isinstance(text, str) and text.startswith("~") else text
