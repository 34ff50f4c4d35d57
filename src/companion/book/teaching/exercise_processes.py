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


# ------------------------------------------------------------ what comes back from the child
class RaisedInChild(Exception):
    """What the answer raised in the child process, sent back as its type's name and its
    message (the exception itself is not: unpickling it would run the answer's code here)."""

    def __init__(self, kind: str, message: str):
        super().__init__(kind, message)
        self.kind, self.message = kind, message

    def __str__(self) -> str:
        return self.message


def text_of(err: BaseException) -> str:
    """``str(err)``, or a line saying it cannot be read (an answer's ``__str__`` may raise)."""
    try:
        return str(err)
    except Exception:  # noqa: BLE001
        return f"({type(err).__name__} whose message cannot be read)"


_BUILTINS = {"set", "frozenset", "list", "tuple", "dict", "complex", "float", "int", "str", "bytes", "bytearray",
             "bool", "range", "slice", "object"}
_NUMPY = {"_reconstruct", "scalar", "dtype", "ndarray", "_frombuffer", "__randomstate_ctor", "__bit_generator_ctor",
          "__generator_ctor", "MT19937", "PCG64", "SeedSequence", "__pyx_unpickle_SeedSequence"}


class _Plain:
    """Reads back only data: builtin numbers, strings and containers, numpy arrays and
    scalars, builtin exceptions, the checks' own two exceptions and scipy.stats' laws.  A
    payload naming anything else (a function such as ``exec``, the answer's own class) is
    refused, so the child, where the answer ran, can send no code to the checking process."""

    @staticmethod
    def loads(payload: bytes):
        import io
        import pickle

        class Reader(pickle.Unpickler):
            def find_class(self, module, name):
                import builtins

                found = getattr(builtins, name, None) if module == "builtins" else None
                ok = (name in _BUILTINS or (isinstance(found, type) and issubclass(found, BaseException))
                      if module == "builtins" else
                      (module == "copyreg" and name == "_reconstructor")
                      or (module.split(".")[0] == "numpy" and name in _NUMPY)
                      or (module == __name__ and name == "RaisedInChild")
                      or (module == __name__.rpartition(".")[0] + ".exercise_engine" and name == "WrongAnswer"))
                if not ok and module.startswith("scipy.stats."):
                    from scipy.stats._distn_infrastructure import rv_frozen, rv_generic

                    found = super().find_class(module, name)
                    ok = isinstance(found, type) and issubclass(found, (rv_generic, rv_frozen))
                if not ok:
                    raise pickle.UnpicklingError(f"{module}.{name} is not data")
                return super().find_class(module, name)

        return Reader(io.BytesIO(payload)).load()


def in_child(thunk, send) -> None:
    """The child's side of running an answer: run ``thunk``, send back ``("value", result)``
    or ``("error", exception)``, pickled, where :class:`_Plain` reads them back whole; else
    the exception's type and message (:class:`RaisedInChild`), or for a result a TypeError
    saying it cannot be handed back."""
    import pickle

    me = os.getpid()
    _own_tree()
    if "torch" in sys.modules:   # the parent's OpenMP pool does not survive a fork: one thread here
        sys.modules["torch"].set_num_threads(1)
    try:
        out = ("value", thunk())
    except BaseException as err:  # noqa: BLE001 - sent back to the parent, which raises it
        out = ("error", err)
    if os.getpid() != me:   # a process the answer forked, returning through here: it sends nothing
        os._exit(0)
    _kill_tree(me, include_root=False)   # nothing the answer started outlives its check
    try:
        payload = pickle.dumps(out)
        _Plain.loads(payload)     # what cannot come back as data comes back as its name and message
    except Exception:  # noqa: BLE001
        err = out[1]
        if out[0] == "value":
            err = TypeError(f"its result ({type(err).__name__}) cannot be handed back from the process that ran it")
        payload = pickle.dumps(("error", RaisedInChild(type(err).__name__, text_of(err))))
    send.send_bytes(payload)
    send.close()


#: read a payload from the child as data (:class:`_Plain`)
load_data = _Plain.loads
