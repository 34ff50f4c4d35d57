"""The engine of the exercise checks: how a student's answer is run, bounded, read and refused.

Every exercise is an entry of :mod:`.exercise_checks` (what it asks, its independent
computation, its tolerance and its hints); this module is what all of them share:
:func:`run` takes one entry and one answer, and turns whatever goes wrong into a
:class:`WrongAnswer` with one line, and the entries read the answer with :func:`call`,
:func:`as_array`, :func:`as_number`, :func:`as_whole`, :func:`as_ints`, :func:`as_pair` and
refuse it with :func:`require`.

The student's code is run with bounds: every call gets copies of its inputs (an answer that
changes its arguments cannot change what it is compared with), stops with a
:class:`WrongAnswer` after ``time_s`` seconds (``exercises.TIME_LIMIT_S``), and may return at
most ``items`` numbers or items (``exercises.MAX_ITEMS``). Each call runs in a child process
(forked, so the answer needs no pickling; its result comes back through a pipe), which is
killed at the time limit: a long call into compiled code (a huge matrix product, a regular
expression that backtracks for ever, a sleep with the alarm blocked) is stopped as surely as a
Python loop, and nothing goes on running after the check has failed.  Where a process cannot
be forked (Windows), or with ``COMPANION_CHECK_IN_PROCESS=1``, the bound is ``SIGALRM`` in the
main thread, which interrupts Python code between two steps only, and a watchdog thread
elsewhere.
"""

from __future__ import annotations

import copy
import itertools
import os
import signal
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

#: seconds one call of the student's code may take, unless :func:`run` is told otherwise
TIME_LIMIT_S = 5.0
#: the most numbers or items an answer may hold (the largest correct answer holds a few hundred)
MAX_ITEMS = 100_000

#: the modules whose frames are the checks' own, not the answer's (never interrupted by the time limit)
_OURS = __name__.rpartition(".")[0] + ".exercise"


class WrongAnswer(AssertionError):
    """The answer failed its check; the message says what was expected and gives a hint."""


@dataclass(frozen=True)
class Exercise:
    label: str
    answer: str     # the name the exercise asks the student to define
    asks: str       # what the answer is, in one line
    test: Callable[[Any, str], None]  # (answer, label); raises WrongAnswer


@dataclass(frozen=True)
class Case:
    """One input of an answer that is a function returning a number, and what it must return:
    the independent computation's value ``want``, within ``rtol * |want| + atol``; ``facts``
    are the values the hint names (with ``got``, ``want``, ``rtol`` and ``atol``)."""

    args: tuple
    want: float
    rtol: float = 0.0
    atol: float = 0.0
    facts: dict = field(default_factory=dict)


def registrar(table: dict[str, Exercise]):
    """A decorator ``@exercise(label, answer, asks)`` that enters its test into ``table``.

    ``@exercise(label, answer, asks, number=what, hint=template)`` enters an exercise whose
    answer is a function returning one number: the decorated function takes a random
    generator (:func:`seeded`) and yields the :class:`Case` s, and the engine compares
    (:func:`compare_numbers`), failing with ``template`` filled in.
    """
    def exercise(label: str, answer: str, asks: str, number: str | None = None, hint: str = ""):
        def register(fn):
            if label in table:
                raise ValueError(f"exercise {label!r} has two checks; give the second its own label")
            test = fn if number is None else (lambda ans, lab: compare_numbers(ans, lab, fn(seeded(lab)), number, hint))
            table[label] = Exercise(label, answer, asks, test)
            return fn
        return register
    return exercise


class _Bounds:
    """The check under way: its label, the answer's name and its limits."""

    label: str = ""
    answer: str = "answer"
    time_s: float = TIME_LIMIT_S
    items: int = MAX_ITEMS


_bounds = _Bounds()


def run(ex: Exercise, answer: Any, time_s: float = TIME_LIMIT_S, items: int = MAX_ITEMS) -> bool:
    """Check ``answer`` against the entry ``ex``; print a line and return True if it passes.

    Raises :class:`WrongAnswer` with a one-line hint when it does not (also when the answer is
    missing, raises, runs longer than ``time_s`` seconds or returns more than ``items`` items).
    """
    label = ex.label
    if answer is None or answer is Ellipsis:
        raise WrongAnswer(f"{label}: no answer yet; define `{ex.answer}`: {ex.asks}.")
    before = (_bounds.label, _bounds.answer, _bounds.time_s, _bounds.items)
    _bounds.label, _bounds.answer, _bounds.time_s, _bounds.items = label, ex.answer, float(time_s), int(items)
    try:
        if not callable(answer):
            answer = _snapshot(answer, label)
        ex.test(answer, label)
    except WrongAnswer:
        raise
    except _OutOfTime:  # (the alarm fired again while its first interruption was handled)
        raise WrongAnswer(f"{label}: not yet. your `{ex.answer}` did not finish within {float(time_s):g} s; "
                          "fix it and run the check again.") from None
    except Exception as err:  # the student's code raised: say so, with the exercise's ask
        kind = err.kind if isinstance(err, _RaisedInChild) else type(err).__name__
        raise WrongAnswer(f"{label}: your `{ex.answer}` raised {kind}: {_one_line(err)}. "
                          f"Expected {ex.asks}.") from err
    finally:
        _bounds.label, _bounds.answer, _bounds.time_s, _bounds.items = before
    print(f"{label}: correct")
    return True


# ------------------------------------------------------------------ running the student's code
def _one_line(err: BaseException, limit: int = 300) -> str:
    """``str(err)`` on one line, cut to ``limit`` characters."""
    text = " ".join(str(err).split())
    return text if len(text) <= limit else text[:limit] + " ..."


def require(ok: bool, label: str, hint: str) -> None:
    if not ok:
        raise WrongAnswer(f"{label}: not yet. {hint}")


def _name(label: str) -> str:
    """The name the exercise being checked asks the student to define."""
    return _bounds.answer if _bounds.label == label else "answer"


def _snapshot(obj, label: str):
    """``obj`` with every list, tuple, set and dict in it (subclasses too) copied into a plain
    one from what it holds, and its numbers and strings made plain: an answer is judged by its
    contents, not by ``__iter__``, ``items()`` or ``__len__`` methods that may say otherwise
    (or never end).  Refused when it holds more than :data:`MAX_ITEMS` numbers or items, or
    nests (or holds itself) more than 32 levels deep."""
    budget = [_bounds.items]
    too_many = (f"your `{_name(label)}` holds more than {_bounds.items:,} items, far more than any answer to "
                "this exercise needs: return the few numbers the exercise asks for.")

    def spend(n: int) -> None:
        budget[0] -= max(int(n), 1)
        require(budget[0] >= 0, label, too_many)

    def take(x, depth: int):
        require(depth <= 32, label, f"your `{_name(label)}` nests containers more than 32 levels deep (or holds "
                "itself); return the few numbers the exercise asks for.")
        if isinstance(x, (np.ndarray, np.generic)):
            spend(x.size)
            return x
        if type(x).__module__.startswith("torch") and callable(getattr(x, "numel", None)):
            spend(x.numel())
            return x
        if isinstance(x, bool):
            spend(1)
            return bool(x)
        for base, plain in ((int, int.__int__), (float, float.__float__), (complex, complex.__complex__),
                            (str, str.__str__), (bytes, bytes.__bytes__)):   # the value stored, not what methods say
            if isinstance(x, base):
                spend(base.__len__(x) if base in (str, bytes) else 1)
                return plain(x)
        if isinstance(x, bytearray):
            spend(len(x))
            return bytes(x)
        if isinstance(x, range):
            spend(len(x))
            return x
        if isinstance(x, dict):
            spend(2 * dict.__len__(x))
            return {take(k, depth + 1): take(dict.__getitem__(x, k), depth + 1) for k in list(dict.__iter__(x))}
        for base in (list, tuple, set, frozenset):
            if isinstance(x, base):
                spend(base.__len__(x))
                items = [take(item, depth + 1) for item in list(base.__iter__(x))]
                return items if base is list else base(items)
        spend(1)
        return x

    return take(obj, 0)


class _OutOfTime(BaseException):
    """Raised inside the student's code when its time is up (not an ``Exception``, so that an
    answer's ``except Exception`` cannot swallow it).

    A bare ``except:`` can: then every line the answer runs next raises it again (a line
    tracer, put back each time the answer swallows the interruption: when the caught
    exception is let go, and at every call the answer makes), so a retry loop ends within
    a few lines instead of never."""

    def __del__(self):
        try:
            if _Escalation.active:
                _Escalation.rearm(sys._getframe(1))
        except Exception:  # noqa: BLE001 - (at shutdown the module may be half gone)
            pass


class _Escalation:
    """The state of the time limit in the main thread, once its first interruption fired."""

    guard = None        # the frame of _guarded_by_alarm whose answer ran out of time
    active = False

    @classmethod
    def _ours(cls, frame) -> bool:
        return str(frame.f_globals.get("__name__")).startswith(_OURS)

    @classmethod
    def tracer(cls, frame, event, arg):
        if not cls.active or cls._ours(frame):
            return None
        if event in ("call", "line"):
            raise _OutOfTime
        return cls.tracer

    @classmethod
    def profiler(cls, frame, event, arg):
        if cls.active and event in ("call", "c_call") and not cls._ours(frame):
            cls.rearm(frame)

    @classmethod
    def rearm(cls, frame) -> None:
        """Trace the answer's frames from ``frame`` up to the guard (a raise from a tracer
        switches tracing off: this puts it back)."""
        if not cls.active:
            return
        sys.settrace(cls.tracer)
        while frame is not None and frame is not cls.guard:
            if not cls._ours(frame):
                frame.f_trace = cls.tracer
            frame = frame.f_back


def _guarded(label: str, thunk: Callable[[], Any]) -> Any:
    """``thunk()``, failed with a :class:`WrongAnswer` after :data:`TIME_LIMIT_S` seconds."""
    limit = float(_bounds.time_s)
    late = WrongAnswer(f"{label}: not yet. your `{_name(label)}` did not finish within {limit:g} s "
                       "(an endless loop, or far more work than the exercise needs); fix it and run "
                       "the check again.")
    if _can_fork():
        return _guarded_by_process(thunk, limit, late, label)
    if (hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()
            and _Escalation.guard is None):
        return _guarded_by_alarm(thunk, limit, late)
    return _guarded_by_thread(thunk, limit, late)


def _can_fork() -> bool:
    import multiprocessing

    return (hasattr(os, "fork") and "fork" in multiprocessing.get_all_start_methods()
            and os.environ.get("COMPANION_CHECK_IN_PROCESS", "") in ("", "0"))


class _RaisedInChild(Exception):
    """What the answer raised in the child process, when that exception cannot be sent back
    as it is (it does not pickle): its type's name and its message."""

    def __init__(self, kind: str, message: str):
        super().__init__(kind, message)
        self.kind, self.message = kind, message

    def __str__(self) -> str:
        return self.message


def _in_child(thunk, send) -> None:
    """The child's side of :func:`_guarded_by_process`: run ``thunk``, send back
    ``("value", result)`` or ``("error", exception)``, pickled."""
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
        pickle.loads(payload)     # what cannot come back whole comes back as its name and message
    except Exception:  # noqa: BLE001
        err = out[1]
        if out[0] == "value":
            err = TypeError(f"its result ({type(err).__name__}) cannot be handed back from the process that ran it")
        payload = pickle.dumps(("error", _RaisedInChild(type(err).__name__, str(err))))
    send.send_bytes(payload)
    send.close()


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


def _guarded_by_process(thunk, limit: float, late: WrongAnswer, label: str):
    """``thunk()`` in a forked child process, killed after ``limit`` seconds: a long call into
    compiled code, which no signal interrupts, is stopped all the same."""
    import multiprocessing
    import pickle
    import warnings

    ctx = multiprocessing.get_context("fork")
    recv, send = ctx.Pipe(duplex=False)
    child = ctx.Process(target=_in_child, args=(thunk, send), name="exercise-check", daemon=True)
    with warnings.catch_warnings():   # (Python 3.12 warns of fork in a threaded process: the child runs no thread)
        warnings.simplefilter("ignore", DeprecationWarning)
        child.start()
    send.close()
    payload = None
    try:
        if not recv.poll(limit):
            raise WrongAnswer(f"{late} (It was stopped at the limit.)")
        try:
            payload = recv.recv_bytes()
        except (EOFError, OSError):
            child.join(1.0)
            raise WrongAnswer(f"{label}: not yet. your `{_name(label)}` ended the process that ran it (exit code "
                              f"{child.exitcode}) before it returned; return the result instead.") from None
    finally:
        recv.close()
        if payload is not None:
            child.join(2.0)       # it is flushing what the answer printed, and exiting
        if child.is_alive():
            _kill_tree(child.pid)  # the child and whatever the answer started, detached or not
        child.join()
    kind, value = pickle.loads(payload)
    if kind == "error":
        if not isinstance(value, Exception):   # the answer's own SystemExit or KeyboardInterrupt: its error,
            value = _RaisedInChild(type(value).__name__, str(value) or "(no message)")   # not a stop of the check
        raise value
    return value


def _guarded_by_alarm(thunk, limit: float, late: WrongAnswer):
    armed = [True]
    guard = sys._getframe()

    def on_alarm(signum, frame):
        if armed[0]:
            if not _Escalation.active:   # from now on every line of the answer raises too
                _Escalation.active, _Escalation.guard = True, guard
                traced, profiled = sys.gettrace(), sys.getprofile()
                restore.append(lambda: (sys.settrace(traced), sys.setprofile(profiled)))
                sys.setprofile(_Escalation.profiler)
                _Escalation.rearm(frame)
            raise _OutOfTime

    try:
        previous = signal.signal(signal.SIGALRM, on_alarm)
    except ValueError:  # not allowed here (an embedded interpreter): watch from a thread instead
        return _guarded_by_thread(thunk, limit, late)
    restore: list = []
    # fires again every 0.2 s, in case the answer catches the first interruption
    outer_delay, outer_interval = signal.setitimer(signal.ITIMER_REAL, limit, 0.2)
    start = time.monotonic()
    try:
        _Escalation.guard = guard
        return thunk()
    except _OutOfTime:
        armed[0] = False
        raise late from None
    finally:
        armed[0] = False
        _Escalation.active, _Escalation.guard = False, None
        for undo in restore:
            undo()
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if outer_delay > 0:  # someone else's timer was running: give it back its remaining time
            remaining = max(outer_delay - (time.monotonic() - start), 1e-3)
            signal.setitimer(signal.ITIMER_REAL, remaining, outer_interval)


def _guarded_by_thread(thunk, limit: float, late: WrongAnswer):
    result: dict = {}

    def run():
        try:
            result["value"] = thunk()
        except BaseException as err:  # noqa: BLE001 - handed back to the caller below
            result["error"] = err

    worker = threading.Thread(target=run, daemon=True, name="exercise-check")
    worker.start()
    worker.join(limit)
    if worker.is_alive():
        raise WrongAnswer(f"{late} (It goes on running in the background: restart the kernel to stop it.)")
    if "error" in result:
        raise result["error"]
    return result["value"]


def call(fn, label: str, *args, convert: Callable[[Any], Any] | None = None):
    """``fn(*args)`` on copies of ``args``, bounded in time and size, refusing the stub.

    ``convert`` (applied to the result, under the same time bound) turns it into what the
    check compares; it raises :class:`WrongAnswer` for a result of the wrong kind.
    """
    require(callable(fn), label, "answer with a function (def ...), as the exercise's starter code does.")
    args = copy.deepcopy(args)   # the answer may change its inputs; the check keeps its own

    def run():
        out = fn(*args)
        require(out is not None, label, "your function returns None: fill in its body and return the result.")
        out = _snapshot(out, label)
        return convert(out) if convert is not None else out

    return _guarded(label, run)


def compare_numbers(fn, label: str, cases, what: str, hint: str) -> None:
    """Call the answer ``fn`` on each :class:`Case` (computed before the answer runs) and
    require its number within the case's tolerance of the case's value; else fail with
    ``hint`` filled in with the case's facts, ``got``, ``want``, ``rtol`` and ``atol``."""
    for case in cases:
        got = call(fn, label, *case.args, convert=lambda out: as_number(out, label, what))
        within = abs(got - case.want) <= case.rtol * abs(case.want) + case.atol
        require(within, label, hint.format(**case.facts, got=got, want=case.want, rtol=case.rtol, atol=case.atol))


def as_array(x, label: str, what: str) -> np.ndarray:
    """``x`` as a finite float64 array (numpy, nested lists or a torch tensor)."""
    if type(x).__module__.startswith("torch") and hasattr(x, "detach"):
        x = x.detach().cpu().numpy()
    try:
        a = np.asarray(x, dtype=float)
    except (TypeError, ValueError) as err:
        raise WrongAnswer(f"{label}: not yet. {what} should be an array of numbers; "
                          f"got {type(x).__name__} ({_one_line(err, 120)}).") from None
    require(bool(np.all(np.isfinite(a))), label, f"{what} holds NaN or infinite entries.")
    return a


def as_number(x, label: str, what: str = "your answer") -> float:
    """``x`` as one finite float (a Python or numpy number, or a one-element array)."""
    require(not isinstance(x, (bool, np.bool_, str, bytes)), label,
            f"{what} should be a number; got {type(x).__name__}.")
    a = as_array(x, label, what)
    require(a.size == 1, label, f"{what} should be one number; got an array of shape {a.shape}.")
    return float(a.reshape(-1)[0])


def as_whole(x, label: str, lo: int, hi: int, what: str) -> int:
    """``x`` as an int in ``[lo, hi]`` (bools and floats refused)."""
    require(isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_)), label,
            f"answer with a whole number of {what} (an int); got {type(x).__name__}.")
    require(lo <= x <= hi, label, f"answer with a whole number of {what} between {lo:,} and {hi:,}.")
    return int(x)


def as_ints(x, label: str, what: str) -> list[int]:
    """The items of an iterable answer as ints (at most :data:`MAX_ITEMS` of them)."""
    require(not isinstance(x, (str, bytes, dict)) and hasattr(x, "__iter__"), label,
            f"{what} should be a list or set of whole numbers; got {type(x).__name__}.")
    items = list(itertools.islice(iter(x), _bounds.items + 1))
    require(len(items) <= _bounds.items, label,
            f"{what} holds more than {_bounds.items:,} items; the exercise asks for a few numbers.")
    require(all(isinstance(i, (int, np.integer)) and not isinstance(i, (bool, np.bool_)) for i in items), label,
            f"{what} should hold whole numbers (ints).")
    return [int(i) for i in items]


def seeded(label: str) -> np.random.Generator:
    return np.random.default_rng(sum(map(ord, label)))


def orthogonal(rng: np.random.Generator, n: int) -> np.ndarray:
    """A Haar-random orthogonal matrix (QR of a Gaussian matrix, signs fixed)."""
    Q, R = np.linalg.qr(rng.standard_normal((n, n)))
    return Q * np.sign(np.diag(R))


def close(got: np.ndarray, want: np.ndarray, rtol: float = 1e-9) -> bool:
    """Equal up to rounding: every entry within ``rtol`` of the largest entry of ``want``."""
    scale = max(float(np.abs(want).max(initial=0.0)), 1e-300)
    return got.shape == want.shape and bool(np.all(np.abs(got - want) <= rtol * scale))


# the two scores from their definitions (Def. 3.1 and 3.2), written out independently of
# companion.core.scores so that a check never compares the package with itself
def as_pair(out, label: str, what: str) -> tuple[np.ndarray, np.ndarray]:
    require(isinstance(out, (tuple, list)) and len(out) == 2, label,
            f"return a pair of {what}, e.g. `return A, B`; got {type(out).__name__}"
            + (f" of length {len(out)}." if isinstance(out, (tuple, list)) else "."))
    return as_array(out[0], label, f"the first of your {what}"), as_array(out[1], label, f"the second of your {what}")


def listed(xs, limit: int = 12) -> str:
    xs = list(xs)
    return str(xs) if len(xs) <= limit else f"[{', '.join(map(str, xs[:limit]))}, ... ({len(xs):,} in all)]"
