"""Writing result files so that a failure never leaves a half-written or lost file.

* :func:`check_writable`: fail at once, before minutes of reading and scoring, when an
  output cannot be written (a folder in the way, a read-only folder);
* :func:`write_atomic`: write to a temporary file in the same folder, flush it to disk,
  then rename it over the target.  A full disk or a crash leaves the previous file as it
  was and no temporary file behind;
* :func:`atomic_output`: the same for a writer that needs a path (``torch.save``,
  safetensors, ``DataFrame.to_csv``);
* :func:`open_stream`: a log that is written as it goes (no rename possible).

Every one of them is the one safe way the tools write a file: the name is checked with
``lstat`` first, so a symbolic link there is refused, never followed out of the folder,
and a FIFO, device, socket or folder is refused without being opened (opening a FIFO
blocks for ever); a file its owner made read-only is refused, never replaced; the temporary file is made with ``O_EXCL``, so nothing already at its
name is followed either.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat
import tempfile
from pathlib import Path
from typing import Callable, Iterator

from .errors import CompanionError

__all__ = ["check_output", "check_own_folder", "check_writable", "check_table_output", "write_atomic", "write_csv_atomic", "write_text_atomic",
           "write_bytes_atomic", "atomic_output", "temp_beside", "open_stream"]


def _reason(exc: OSError) -> str:
    if exc.errno == errno.ENOSPC:
        return "the disk is full; free some space"
    if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return "permission denied; choose a folder you can write to"
    return exc.strerror or str(exc)


def _existing_mode(path: Path, what: str) -> int | None:
    """The permission bits of the regular file at ``path``, ``None`` when nothing is there;
    a symbolic link, folder, device, FIFO or socket there is refused (it is never followed,
    opened or replaced)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise CompanionError(f"cannot write the {what} {path}: {_in_the_way(path) or _reason(exc)}.") from None
    if stat.S_ISLNK(st.st_mode):
        try:
            target = os.readlink(path)
        except OSError:
            target = "?"
        raise CompanionError(f"the {what} {path} is a symbolic link (to {target}), which is never followed "
                             "or replaced; remove the link, or write somewhere else.")
    if stat.S_ISDIR(st.st_mode):
        raise CompanionError(f"the {what} {path} is a folder; give a file name such as "
                             f"{path / 'scores.csv'}.")
    if not stat.S_ISREG(st.st_mode):
        raise CompanionError(f"the {what} {path} is not a regular file (a device, FIFO or "
                             "socket), which is never replaced; give a file name such as "
                             "scores.csv.")
    mode = stat.S_IMODE(st.st_mode)
    if not mode & 0o222 or not os.access(path, os.W_OK):
        # write-protected by its owner (chmod 444): a rename would replace it all the same, and
        # root may open it for writing, so it is refused here, as mv and rm ask before doing so
        raise CompanionError(f"the {what} {path} is read-only (mode {mode:04o}), so it is never replaced; "
                             f"make it writable (chmod u+w {path}) to replace it, or give another name.")
    return mode


def _named(path: str | os.PathLike, what: str) -> Path:
    """``path`` as a :class:`Path`, refused in one line when no file can have that name: a NUL
    byte in it, or a name that ends in ``/``, ``.`` or ``..``, which names a folder (``Path``
    drops a trailing ``/`` and ``/.``, and ``--out results/`` was written as a file called
    ``results``), or a Windows path (``C:\\...``, ``\\\\server\\...``) on a system that would
    read it as one odd name in the working folder."""
    text = os.fsdecode(os.fspath(path))
    if "\0" in text:
        raise CompanionError(f"the {what} name {text!r} holds a NUL byte, which no file name can hold; give the "
                             "name without it.")
    if os.sep == "/" and re.match(r"[A-Za-z]:[\\/]|\\\\", text):
        # here a file of that whole name in the working folder (or a folder 'C:'), not the Windows folder meant
        raise CompanionError(f"the {what} name {text} is a Windows path, which this system reads as a name in the "
                             "current folder; give a path of this system (under WSL, C:\\Users is /mnt/c/Users).")
    last = text.replace(os.sep, "/").rstrip("/").rsplit("/", 1)[-1]
    if text.rstrip("/" + os.sep) and (text.endswith(("/", os.sep)) or last in (".", "..")):
        # 'results/' and 'results/.' name the folder results; Path reads both as the name 'results'
        raise CompanionError(f"the {what} {text} names a folder (its name ends in '/', '.' or '..'), not a file; "
                             f"give a file name such as {text.rstrip('/' + os.sep)}/scores.csv.")
    return Path(text)


def _prefix(path: Path) -> str:
    """The start of a temporary name beside ``path``: a dot and ``path``'s name, cut so that the
    whole temporary name stays within the file system's 255 bytes whatever ``path``'s own length
    (a legal 250-byte name had a temporary name too long to make)."""
    name = path.name[:120]
    while len(os.fsencode(name)) > 120:
        name = name[:-1]
    return f".{name}."


def _new_file_mode() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def check_output(path: str | os.PathLike, what: str = "output") -> Path:
    """Refuse now, in one line, an output name the tools would refuse when writing it (a
    symbolic link, folder, FIFO, device or socket there), without creating anything."""
    path = _named(path, what)
    _existing_mode(path, what)
    return path


def check_own_folder(top: str | os.PathLike, folder: str | os.PathLike, what: str) -> Path:
    """Refuse (:class:`CompanionError`, one line) a name below ``top`` down to ``folder``
    (included) that is a symbolic link, or something other than a folder: files are written only
    into ``top``'s own folders, never through a link into a user's folder elsewhere, where they
    would replace files of the same name.  ``what`` says what is written there ("notebooks",
    "the survey's per-model tables").  Nothing is created."""
    top, folder = Path(top), Path(folder)
    try:
        parts = folder.relative_to(top).parts
    except ValueError:
        raise CompanionError(f"{folder} is not inside {top}, where {what} are written.") from None
    if ".." in parts:   # relative_to is read letter by letter: top/../elsewhere passed as inside top
        raise CompanionError(f"{folder} climbs out of {top} with '..': {what} are written only into folders of "
                             f"{top} itself; give a path below it without '..'.")
    here = top   # the output folder the user named is theirs to choose, a link included
    for name in parts:
        here = here / name
        if here.is_symlink() or (here.exists() and not here.is_dir()):
            kind = "a link" if here.is_symlink() else "not a folder"
            raise CompanionError(f"{here} is {kind}: {what} are written only into folders of {top} itself, "
                                 "so nothing is written through it; remove it, or give another --out.")
    return folder


def check_writable(path: str | os.PathLike, what: str = "output") -> Path:
    """Make sure ``path`` can be created or replaced; only a regular file is ever replaced.
    Nothing is left behind: the probe is made in the nearest folder above ``path`` that exists
    (a refused command leaves no folder made for its output; the writers make the missing
    folders when they write)."""
    path = _named(path, what)
    _existing_mode(path, what)
    folder = path.parent
    while not os.path.lexists(folder) and folder != folder.parent:
        folder = folder.parent
    try:
        if not folder.is_dir():
            raise NotADirectoryError(errno.ENOTDIR, f"{folder} is not a folder")
        fd, probe = tempfile.mkstemp(prefix=_prefix(path), suffix=".probe", dir=folder)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise CompanionError(f"cannot write the {what} {path}: {_reason(exc)}.") from None
    return path


def check_table_output(path: str | os.PathLike, what: str = "output") -> Path:
    """:func:`check_writable` for a CSV table a command writes at a name its user gives: an
    existing file that is not a ``.csv`` (a rules file, a chapter, notes) is refused rather
    than replaced by the table, and so is a name in the package's ``data/`` folder (the rules,
    the catalog, the recorded runs and tables the book reads)."""
    from .paths import DATA_DIR

    path = _named(path, what)
    _existing_mode(path, what)
    if path.exists() and path.suffix.lower() != ".csv":
        raise CompanionError(f"the {what} {path} exists and is not a .csv table, so it is never replaced by one; "
                             "give a new name ending in .csv.")
    here, data = path.resolve(), DATA_DIR.resolve()
    if here == data or data in here.parents:
        raise CompanionError(f"the {what} {path} lies in the package's data folder {data}, whose files the book "
                             "reads; write the table somewhere else, e.g. a new name in the current folder.")
    return check_writable(path, what)


def _make_parent(path: Path, what: str) -> None:
    """The folders above ``path``, made where missing; a name among them that is a link to
    nothing or a file is refused naming it (it read 'File exists', or was a raw FileExistsError)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CompanionError(f"cannot write the {what} {path}: {_in_the_way(path) or _reason(exc)}.") from None


def _in_the_way(path: Path) -> str | None:
    """The name above ``path`` that stops it being made (the nearest that exists, when it is no
    folder), said with what it is; ``None`` when every name there is a folder."""
    here = path.parent
    while here != here.parent and not os.path.lexists(here):
        here = here.parent
    if not os.path.lexists(here) or here.is_dir():
        return None
    try:
        kind = (f"a symbolic link to {os.readlink(here)}, which does not exist" if here.is_symlink()
                else "a file, not a folder")
    except OSError:
        kind = "not a folder"
    return f"{here} is {kind}; move it away, or write somewhere else"


def _temp_beside(path: Path, what: str, suffix: str = ".tmp") -> tuple[int, str]:
    """A new, empty temporary file beside ``path`` (``O_EXCL``: nothing at that name is
    followed), with the permission bits of the file it will replace, or the umask's."""
    old_mode = _existing_mode(path, what)
    _make_parent(path, what)
    try:
        fd, tmp = tempfile.mkstemp(prefix=_prefix(path), suffix=suffix, dir=path.parent)
    except OSError as exc:
        raise CompanionError(f"cannot write the {what} {path}: {_reason(exc)}.") from None
    try:
        os.fchmod(fd, old_mode if old_mode is not None else _new_file_mode())
    except OSError:
        pass
    return fd, tmp


def _install(tmp: str, path: Path, what: str) -> None:
    """Rename ``tmp`` over ``path``, checking ``path`` once more first (a link or FIFO put
    there while the file was being written is refused, not replaced)."""
    _existing_mode(path, what)
    os.replace(tmp, path)


def _fail(exc: BaseException, tmp: str, path: Path):
    with contextlib.suppress(OSError):
        os.unlink(tmp)
    if isinstance(exc, OSError):
        raise CompanionError(f"cannot write {path}: {_reason(exc)} (the previous file, "
                             "if any, is unchanged).") from None
    raise exc


def write_atomic(path: str | os.PathLike, write: Callable, mode: str = "w", what: str = "output") -> Path:
    """Call ``write(fileobj)`` on a temporary file beside ``path``, then rename it to ``path``.

    On any error the temporary file is removed, ``path`` keeps its previous content and a
    :class:`CompanionError` naming the cause is raised (other exceptions pass unchanged).
    A ``path`` that is a symbolic link, folder, device, FIFO or socket is refused, never
    followed, opened or replaced; a file that is replaced keeps its permission bits.
    """
    path = _named(path, what)
    fd, tmp = _temp_beside(path, what)
    try:
        with os.fdopen(fd, mode, **({"newline": "", "encoding": "utf-8"} if "b" not in mode else {})) as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        _install(tmp, path, what)
    except BaseException as exc:
        _fail(exc, tmp, path)
    return path


@contextlib.contextmanager
def temp_beside(path: str | os.PathLike, what: str = "output") -> Iterator[Path]:
    """Yield the path of a new, empty temporary file beside ``path`` that the caller renames
    into place itself (a two-file install); removed at the end if it is still there."""
    path = _named(path, what)
    fd, tmp = _temp_beside(path, what)
    os.close(fd)
    try:
        yield Path(tmp)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)


@contextlib.contextmanager
def atomic_output(path: str | os.PathLike, what: str = "output") -> Iterator[Path]:
    """Yield the path of a new, empty temporary file beside ``path`` for a writer that needs
    a path; rename it to ``path`` when the block ends without error.  The same refusals
    and guarantees as :func:`write_atomic` (on an error, ``path`` is unchanged and the
    temporary file is gone)."""
    path = _named(path, what)
    fd, tmp = _temp_beside(path, what)
    os.close(fd)
    try:
        yield Path(tmp)
        st = os.lstat(tmp)   # the writer may have replaced it: only a regular file is installed
        if not stat.S_ISREG(st.st_mode):
            raise CompanionError(f"the temporary file {tmp} for {path} was replaced by something that is not "
                                 "a regular file; nothing was installed.")
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())
        _install(tmp, path, what)
    except BaseException as exc:
        _fail(exc, tmp, path)


def open_stream(path: str | os.PathLike, what: str = "log", mode: str = "w", buffering: int = -1):
    """Open ``path`` for writing as it goes (a log that a child process fills): a symbolic
    link there is refused (``O_NOFOLLOW``), and a FIFO or device is refused without blocking
    on it (``O_NONBLOCK`` until it is known to be a regular file)."""
    path = _named(path, what)
    _existing_mode(path, what)
    _make_parent(path, what)
    flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    flags |= os.O_APPEND if "a" in mode else 0
    try:
        fd = os.open(path, flags, 0o666)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise CompanionError(f"the {what} {path} is a symbolic link, which is never followed; remove "
                                 "the link, or choose another output folder.") from None
        raise CompanionError(f"cannot write the {what} {path}: {_reason(exc)}.") from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise CompanionError(f"the {what} {path} is not a regular file (a device, FIFO or socket), which is "
                             "never written; remove it, or choose another output folder.")
    if "a" not in mode:
        os.ftruncate(fd, 0)
    import fcntl

    fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
    return os.fdopen(fd, mode, buffering, **({} if "b" in mode else {"encoding": "utf-8"}))


def write_csv_atomic(df, path: str | os.PathLike) -> Path:
    """``df.to_csv(path, index=False)``, atomically."""
    return write_atomic(path, lambda f: df.to_csv(f, index=False))


def write_text_atomic(text: str, path: str | os.PathLike, what: str = "output") -> Path:
    return write_atomic(path, lambda f: f.write(text), what=what)


def write_bytes_atomic(data: bytes, path: str | os.PathLike, what: str = "output") -> Path:
    return write_atomic(path, lambda f: f.write(data), mode="wb", what=what)
