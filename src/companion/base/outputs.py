"""Writing result files so that a failure never leaves a half-written or lost file.

* :func:`check_writable`: fail at once, before minutes of reading and scoring, when an
  output cannot be written (a folder in the way, a read-only folder);
* :func:`write_atomic`: write to a temporary file in the same folder, flush it to disk,
  then rename it over the target.  A full disk or a crash leaves the previous file as it
  was and no temporary file behind.
"""

from __future__ import annotations

import errno
import os
import stat
import tempfile
from pathlib import Path
from typing import Callable

from .errors import CompanionError

__all__ = ["check_writable", "write_atomic", "write_csv_atomic", "write_text_atomic"]


def _reason(exc: OSError) -> str:
    if exc.errno == errno.ENOSPC:
        return "the disk is full; free some space"
    if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return "permission denied; choose a folder you can write to"
    return exc.strerror or str(exc)


def _existing_mode(path: Path, what: str) -> int | None:
    """The permission bits of the regular file at ``path``, ``None`` when nothing is there;
    a folder, device, FIFO or socket there is refused (it is never replaced)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise CompanionError(f"cannot write the {what} {path}: {_reason(exc)}.") from None
    if stat.S_ISDIR(st.st_mode):
        raise CompanionError(f"the {what} {path} is a folder; give a file name such as "
                             f"{path / 'scores.csv'}.")
    if not stat.S_ISREG(st.st_mode):
        raise CompanionError(f"the {what} {path} is not a regular file (a device, FIFO or "
                             "socket), which is never replaced; give a file name such as "
                             "scores.csv.")
    return stat.S_IMODE(st.st_mode)


def _new_file_mode() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def check_writable(path: str | os.PathLike, what: str = "output") -> Path:
    """Make sure ``path`` can be created or replaced (its folder is made if missing); only a
    regular file is ever replaced."""
    path = Path(path)
    _existing_mode(path, what)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".probe", dir=path.parent)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise CompanionError(f"cannot write the {what} {path}: {_reason(exc)}.") from None
    return path


def write_atomic(path: str | os.PathLike, write: Callable, mode: str = "w") -> Path:
    """Call ``write(fileobj)`` on a temporary file beside ``path``, then rename it to ``path``.

    On any error the temporary file is removed, ``path`` keeps its previous content and a
    :class:`CompanionError` naming the cause is raised (other exceptions pass unchanged).
    A ``path`` that is a folder, device, FIFO or socket is refused, never replaced; a file
    that is replaced keeps its permission bits.
    """
    path = Path(path)
    old_mode = _existing_mode(path, "output")
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.chmod(tmp, old_mode if old_mode is not None else _new_file_mode())
        with os.fdopen(fd, mode, **({"newline": ""} if "b" not in mode else {})) as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        if os.path.exists(tmp):
            os.unlink(tmp)
        if isinstance(exc, OSError):
            raise CompanionError(f"cannot write {path}: {_reason(exc)} (the previous file, "
                                 "if any, is unchanged).") from None
        raise
    return path


def write_csv_atomic(df, path: str | os.PathLike) -> Path:
    """``df.to_csv(path, index=False)``, atomically."""
    return write_atomic(path, lambda f: df.to_csv(f, index=False))


def write_text_atomic(text: str, path: str | os.PathLike) -> Path:
    return write_atomic(path, lambda f: f.write(text))
