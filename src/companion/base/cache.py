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
import stat
from pathlib import Path

__all__ = ["cache_root", "cache_dir", "ensure_dir", "atomic_path", "exclusive", "pid_alive", "remove_abandoned",
           "sha256_file", "machine_tag"]

ENV_VAR = "COMPANION_CACHE"


def cache_root() -> Path:
    """The cache folder (not created)."""
    env = os.environ.get(ENV_VAR, "").strip()
    if env:
        path = Path(env).expanduser()
        if not path.is_absolute():   # else each working folder (a chapter's, the CLI's) has its own
            from .errors import CompanionError

            raise CompanionError(f"{ENV_VAR}={env!r} is a relative path, so the cache would move with "
                                 f"the working folder; set it to an absolute path (e.g. {ENV_VAR}=$PWD/{env})")
        return path
    xdg = os.environ.get("XDG_CACHE_HOME", "").strip()
    xdg_path = Path(xdg).expanduser() if xdg else None
    if xdg_path is None or not xdg_path.is_absolute():   # the XDG spec ignores a relative one
        xdg_path = Path.home() / ".cache"
    return xdg_path / "companion"


def cache_dir(*parts: str) -> Path:
    """A sub-folder of the cache, created if needed (one clear error if it cannot be)."""
    return ensure_dir(cache_root().joinpath(*parts))


def ensure_dir(d: str | os.PathLike) -> Path:
    """``d`` created if needed and writable, else one line naming it and the fix."""
    d = Path(d)
    try:
        d.mkdir(parents=True, exist_ok=True)
        if not os.access(d, os.W_OK):
            raise PermissionError(13, "not writable")
    except OSError as exc:
        from .errors import CompanionError

        raise CompanionError(f"the cache folder {d} cannot be used ({exc.strerror or exc}); set "
                             f"{ENV_VAR} to a writable folder.") from None
    return d


def remove_abandoned(folder: Path, pattern: str, pid_of, max_age_s: float | None = None) -> None:
    """Remove the folders matching ``pattern`` in ``folder`` that a killed process left:
    ``pid_of(name)`` reads the writer's pid from a folder's name (0 when it holds none); a
    folder whose writer is gone is removed, one without a pid only after ``max_age_s``."""
    import shutil
    import time

    for d in folder.glob(pattern):
        if not d.is_dir():
            continue
        pid = pid_of(d.name)
        if pid:
            stale = not pid_alive(pid)
        else:
            stale = max_age_s is not None and time.time() - d.stat().st_mtime > max_age_s
        if stale:
            shutil.rmtree(d, ignore_errors=True)


def pid_after_last_dash(name: str) -> int:
    """The pid of a ``NAME-PID`` folder name (``.fetch-wikipedia-1234``, ``.KEY.tmp-1234``), or 0."""
    tail = name.rsplit("-", 1)[-1]
    return int(tail) if tail.isdigit() else 0


def pid_alive(pid: int) -> bool:
    """Whether a process with this id exists (on this machine)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _start_time(pid: int) -> str | None:
    """When process ``pid`` started (clock ticks since boot, from /proc), or ``None`` where
    that is not known: with the pid it names one process, even after the pid is reused."""
    try:
        with open(f"/proc/{int(pid)}/stat", "rb") as f:
            text = f.read().decode("ascii", "replace")
        return text.rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError, ValueError):
        return None


def _not_the_lock_owner(pid: int, lock: Path) -> bool:
    """For a lock that records only a pid (no start time): whether the live process with
    that pid cannot have written it, because it started after the lock was written, or it
    is not a Python process (every lock holder runs this package).  ``False`` where that
    cannot be told (no /proc)."""
    try:
        ticks = int(_start_time(pid) or "")
        with open("/proc/stat", "rb") as f:
            boot = next(int(line.split()[1]) for line in f if line.startswith(b"btime "))
        if boot + ticks / os.sysconf("SC_CLK_TCK") > lock.stat().st_mtime + 2:
            return True
    except (OSError, ValueError, StopIteration):
        pass
    try:
        with open(f"/proc/{int(pid)}/cmdline", "rb") as f:
            argv = f.read().split(b"\0")
    except OSError:
        return False
    return bool(argv and argv[0]) and not any(b"python" in Path(os.fsdecode(a)).name.lower().encode() for a in argv[:2])


@contextlib.contextmanager
def exclusive(lock: str | os.PathLike, what: str, wait_s: float = 900.0, poll_s: float = 0.5,
              busy: str | None = None):
    """Hold ``lock`` (a file holding the owner's pid) for the block: a second process waits
    for the first to finish (up to ``wait_s``; 0 refuses at once), a lock left by a dead
    process of this machine is taken over (one recorded on another machine, whose processes
    this one cannot see, never is).  ``busy`` (formatted with ``pid``) is the refusal's text.  A wait
    is said once, through :func:`companion.base.progress.report` (a terminal or a command's
    stderr, never a chapter's output)."""
    import time

    from .errors import CompanionError

    lock = Path(lock)
    deadline = time.monotonic() + wait_s
    told = False
    started = _start_time(os.getpid())
    here = _host()
    # the machine too: on a folder shared between machines (a cluster's home, runs over NFS) a pid
    # says nothing about a process of another machine, whose lock was taken for abandoned
    mine = f"{os.getpid()}{' ' + started if started else ''}{' host=' + here if here else ''}\n"
    while not _create_lock(lock, mine):
        try:
            kind = os.lstat(lock).st_mode
        except FileNotFoundError:   # its holder let it go between the two looks: try again
            continue
        if not stat.S_ISREG(kind):   # never read a FIFO, never unlink a folder, never follow a link
            raise CompanionError(f"the lock {lock} is not a regular file (a folder, FIFO or link); "
                                 f"remove it if no other process is {what}.") from None
        try:
            with open(lock, "rb") as fh:
                seen = os.fstat(fh.fileno())
                text = fh.read().decode("ascii", "replace")
            fields = text.split()
            pid = int(fields[0]) if fields else 0
            rest = [f for f in fields[1:] if not f.startswith("host=")]
            owner_started = rest[0] if rest else None
            host = next((f[5:] for f in fields[1:] if f.startswith("host=")), None)
        except FileNotFoundError:   # its holder just let it go
            continue
        except (OSError, ValueError):
            seen, text, pid, owner_started, host = None, "x", 0, None, None
        if host is not None and host != here:   # never judged by a pid of another machine
            if time.monotonic() >= deadline:
                raise CompanionError(f"{what} is held by process {pid} on the machine {host!r} ({lock}), which this "
                                     "machine cannot see; wait for it, or remove the lock if no process there "
                                     "holds it.") from None
            if not told and wait_s >= 5:
                told = True
                from .progress import report

                report(f"{what}: waiting up to {wait_s:.0f} s for process {pid} on the machine {host!r}, which "
                       f"holds {lock} (remove the lock if no process there holds it)")
            time.sleep(poll_s)
            continue
        if not text.strip() and seen is not None and time.time() - seen.st_mtime < _LOCK_WRITING_S:
            time.sleep(min(poll_s, 0.05))   # made by O_EXCL and not written yet (no hard links): wait
            continue
        # a pid reused by an unrelated process has another start time: the lock is stale
        # (a lock of a pid alone: one started after the lock, or not Python, is not its owner)
        if (not pid or not pid_alive(pid) or (owner_started is not None and _start_time(pid) not in (None, owner_started))
                or (owner_started is None and _not_the_lock_owner(pid, lock))):
            _remove_if_same(lock, seen)  # its owner is gone (and the file is still the one judged)
            continue
        if time.monotonic() >= deadline:
            raise CompanionError(busy.format(pid=pid) if busy else
                                 f"{what} is held by process {pid} ({lock}) for over {wait_s:.0f} s; "
                                 "wait for it, or remove the lock if that process is stuck.") from None
        if not told and wait_s >= 5:   # never a silent wait: say once what it waits for
            told = True               # (on a terminal or a command's log, never in a chapter)
            from .progress import report

            report(f"{what}: waiting up to {wait_s:.0f} s for process {pid}, which holds {lock} "
                   "(remove the lock if that process is stuck)")
        time.sleep(poll_s)
    try:
        yield lock
    finally:
        lock.unlink(missing_ok=True)


#: a lock file with nothing in it yet is being written for this long (the O_EXCL fallback)
_LOCK_WRITING_S = 5.0


def machine_tag() -> str:
    """This machine's name (``socket.gethostname()``) as the names of folders being written carry
    it (a corpus fetch, a token build, a zoo assembly), so that a cache shared between machines
    is cleaned by the machine that wrote each folder: letters, digits, '.', '_' and '-' kept, anything else '_'."""
    import re
    import socket

    try:
        name = socket.gethostname()
    except OSError:
        name = ""
    return re.sub(r"[^A-Za-z0-9._-]", "_", name) or "unnamed"


def _host() -> str:
    """This machine's name as a lock records it (no spaces), or '' where it has none."""
    import socket

    try:
        return "".join(socket.gethostname().split())
    except OSError:
        return ""


def _create_lock(lock: Path, text: str) -> bool:
    """Create ``lock`` holding ``text``; ``False`` when it exists.  Atomic: a complete file
    is hard-linked into place, so no other process ever reads it empty (a waiter that read an
    empty lock took it for abandoned and took it over: two holders, two fits of one
    tokenizer).  Where the file system has no hard links: O_EXCL, then the text."""
    import errno
    import threading

    # one name per process and thread: two threads of one process sharing it removed each
    # other's file between its write and its link (FileNotFoundError in both)
    tmp = lock.with_name(f"{lock.name}.{os.getpid()}.{threading.get_ident()}.new")
    try:
        # a leftover at this name (an earlier process of this pid; a link or FIFO put there) is
        # removed, never opened: no write through a link, no wait on a FIFO
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        fd = os.open(tmp, os.O_CREAT | os.O_EXCL | os.O_WRONLY | getattr(os, "O_NOFOLLOW", 0), 0o644)
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
        try:
            os.link(tmp, lock)
            return True
        except FileExistsError:
            return False
        except OSError as exc:
            if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.ENOSYS, errno.EMLINK):
                raise
    finally:
        tmp.unlink(missing_ok=True)
    try:
        fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    except FileExistsError:
        return False
    with os.fdopen(fd, "w") as fh:
        fh.write(text)
    return True


def _remove_if_same(lock: Path, seen) -> None:
    """Remove a stale ``lock`` only if it is still the file that was judged stale (``seen``:
    its ``os.stat``): another waiter may have removed it and made its own meanwhile."""
    try:
        now = os.lstat(lock)
    except FileNotFoundError:
        return
    if seen is None or (now.st_ino, now.st_dev) == (seen.st_ino, seen.st_dev):
        lock.unlink(missing_ok=True)


@contextlib.contextmanager
def atomic_path(final: str | os.PathLike):
    """Yield a temporary file path beside ``final``; rename it to ``final`` on success.

    On any exception the temporary file is removed and ``final`` is untouched.  The one
    safe write of :func:`companion.base.outputs.atomic_output`: a symbolic link, FIFO or
    folder at ``final`` is refused, never followed or opened.
    """
    from .outputs import atomic_output

    with atomic_output(final) as tmp:
        yield tmp


def sha256_file(path: str | os.PathLike, chunk: int = 1 << 22, what: str = "file") -> str:
    """Hex sha256 of a regular file, read in 4 MiB chunks (a FIFO, folder or device is refused
    in one line naming it: hashing a FIFO blocked for ever, a device never ended)."""
    from .paths import regular_file

    if isinstance(chunk, bool) or not isinstance(chunk, int) or chunk < 1:   # 0 read nothing: the hash of b""
        raise ValueError(f"sha256_file reads in chunks of a whole number >= 1 of bytes, not chunk={chunk!r}.")
    regular_file(path, what)
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()
