"""The processes an exercise check starts, and how all of them are stopped.

:mod:`.exercise_engine` runs each call of a student's answer in a forked child; the child
makes itself the head of its own tree (:func:`_own_tree`), and at the time limit the engine
kills that tree whole (:func:`_kill_tree`), a daemon the answer detached included.  Linux
reads the tree from ``/proc``; elsewhere the child's process group stands for it.
"""

from __future__ import annotations

import os
import sys


def _own_tree() -> None:
    """In the child that runs an answer: its own process group, and (Linux) the reaper of
    every process the answer starts, so that a daemon the answer detaches (``setsid``, a
    double fork) stays in its tree and is killed with it (:func:`_kill_tree`)."""
    try:
        os.setpgid(0, 0)
    except OSError:
        pass
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)   # PR_SET_CHILD_SUBREAPER
        except (OSError, AttributeError):
            pass


def _descendants(pid: int) -> list[int]:
    """Every process below ``pid``, from /proc (empty where there is none)."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        try:
            tasks = os.listdir(f"/proc/{p}/task")
        except OSError:
            continue
        for t in tasks:
            try:
                with open(f"/proc/{p}/task/{t}/children") as fh:
                    kids = [int(k) for k in fh.read().split()]
            except (OSError, ValueError):
                continue
            out += kids
            todo += kids
    return out


def _kill_tree(root: int, include_root: bool = True) -> None:
    """Kill ``root`` (unless ``include_root`` is false) and every process below it: each is
    stopped first, until no new one appears, so none forks away while the tree is read;
    then all are killed, and ``root``'s process group with them."""
    import signal as _signal

    seen: set[int] = set()
    if include_root:
        with _quiet_oserror():
            os.kill(root, _signal.SIGSTOP)
    for _ in range(20):
        new = [p for p in _descendants(root) if p not in seen]
        if not new:
            break
        for p in new:
            with _quiet_oserror():
                os.kill(p, _signal.SIGSTOP)
        seen.update(new)
    for p in seen:
        with _quiet_oserror():
            os.kill(p, _signal.SIGKILL)
    if include_root:
        with _quiet_oserror():
            os.killpg(root, _signal.SIGKILL)   # where /proc is missing: the group it made
        with _quiet_oserror():
            os.kill(root, _signal.SIGKILL)
    else:
        for p in seen:   # reap the children this process adopted
            with _quiet_oserror():
                os.waitpid(p, os.WNOHANG)


class _quiet_oserror:
    """``with _quiet_oserror():`` ignores an OSError (a process already gone)."""

    def __enter__(self):
        return self

    def __exit__(self, kind, value, tb):
        return kind is not None and issubclass(kind, OSError)
