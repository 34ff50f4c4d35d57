"""Checks for the book's exercises: a student's answer passes, or fails with a hint.

In a chapter's exercise (and in the student notebooks) an exercise that asks for code ends
with a call such as::

    from companion.book.teaching.exercises import check
    check("ex-measuring-2", first_order_gap)

:func:`check` runs the test registered for that label: it prints one line when the answer
passes and raises :class:`WrongAnswer` (an ``AssertionError`` with a one-line hint) when it
does not. Checks run offline on a CPU in about a second each (plus the first import of scipy,
torch or transformers where a check needs them).

A check never contains the exercise's reference solution, and never compares the answer
with the package function that computes the answer. It tests the answer against an
independent computation that the exercise does not ask for (a Monte Carlo average, an
autograd step, the attention logits computed directly, a count made by enumeration, a
closed form derived another way), on inputs that sample the exercise's domain including
the corner cases of the formula asked for (one-dimensional and non-square shapes, zero
terms, the smallest and largest sizes), with a tolerance no wider than the quantity allows.

The student's code is run with bounds: every call gets copies of its inputs (an answer that
changes its arguments cannot change what it is compared with), stops with a
:class:`WrongAnswer` after :data:`TIME_LIMIT_S` seconds, and may return at most
:data:`MAX_ITEMS` numbers or items. Each call runs in a child process (forked, so the
answer needs no pickling; its result comes back through a pipe), which is killed at the time
limit: a long call into compiled code (a huge matrix product, a regular expression that
backtracks for ever, a sleep with the alarm blocked) is stopped as surely as a Python loop,
and nothing goes on running after the check has failed.  Where a process cannot be forked
(Windows), or with ``COMPANION_CHECK_IN_PROCESS=1``, the bound is ``SIGALRM`` in the main
thread, which interrupts Python code between two steps only, and a watchdog thread elsewhere.
"""

from __future__ import annotations

import copy
import itertools
import os
import signal
import sys
import threading
import time
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Callable

import numpy as np
from ...base.paths import ROOT

__all__ = ["WrongAnswer", "Exercise", "EXERCISES", "TIME_LIMIT_S", "MAX_ITEMS",
           "check", "checked_labels", "book_exercises"]

#: seconds one call of the student's code may take before the check fails it
TIME_LIMIT_S = 5.0
#: the most numbers or items an answer may hold (the largest correct answer holds a few hundred)
MAX_ITEMS = 100_000


class WrongAnswer(AssertionError):
    """The answer failed its check; the message says what was expected and gives a hint."""


@dataclass(frozen=True)
class Exercise:
    label: str
    answer: str     # the name the exercise asks the student to define
    asks: str       # what the answer is, in one line
    test: Callable[[Any, str], None]  # (answer, label); raises WrongAnswer


EXERCISES: dict[str, Exercise] = {}


def _exercise(label: str, answer: str, asks: str):
    def register(fn):
        EXERCISES[label] = Exercise(label, answer, asks, fn)
        return fn
    return register


def checked_labels() -> list[str]:
    """The labels of every exercise that has a check."""
    return sorted(EXERCISES)


def book_exercises(root=None):
    """Every exercise of the book's chapters as a table: ``label, chapter, number, checked, asks``.

    ``number`` is the exercise's position in its chapter; ``checked`` says whether
    :func:`check` has a test for it (the rest are answered in words: a proof, a design).
    """
    import re
    from pathlib import Path

    import pandas as pd

    from ..site.chapters import book_chapters

    root = Path(root) if root is not None else ROOT
    rows = []
    for ch in book_chapters(root):
        labels = re.findall(r"^:{3,}\{exercise\}\s*\n:label: (\S+)", ch.source.read_text(encoding="utf-8"), re.M)
        for i, label in enumerate(labels, 1):
            ex = EXERCISES.get(label)
            rows.append({"label": label, "chapter": ch.docname.split("/")[-1], "number": i,
                         "checked": ex is not None, "asks": ex.asks if ex else ""})
    return pd.DataFrame(rows, columns=["label", "chapter", "number", "checked", "asks"])


def check(label: str, answer: Any) -> bool:
    """Check ``answer`` for exercise ``label``; print a line and return True if it passes.

    Raises :class:`WrongAnswer` with a one-line hint when it does not (also when the answer
    raises, runs longer than :data:`TIME_LIMIT_S` seconds or returns more than
    :data:`MAX_ITEMS` items), and ``KeyError`` naming the checked exercises when ``label``
    has no check.
    """
    if label not in EXERCISES:
        raise KeyError(f"no check for exercise {label!r}; exercises with checks: {', '.join(checked_labels())}")
    ex = EXERCISES[label]
    if answer is None or answer is Ellipsis:
        raise WrongAnswer(f"{label}: no answer yet; define `{ex.answer}`: {ex.asks}.")
    try:
        if not callable(answer):
            answer = _snapshot(answer, label)
        ex.test(answer, label)
    except WrongAnswer:
        raise
    except _OutOfTime:  # (the alarm fired again while its first interruption was handled)
        raise WrongAnswer(f"{label}: not yet. your `{ex.answer}` did not finish within {TIME_LIMIT_S:g} s; "
                          "fix it and run the check again.") from None
    except Exception as err:  # the student's code raised: say so, with the exercise's ask
        kind = err.kind if isinstance(err, _RaisedInChild) else type(err).__name__
        raise WrongAnswer(f"{label}: your `{ex.answer}` raised {kind}: {_one_line(err)}. "
                          f"Expected {ex.asks}.") from err
    print(f"{label}: correct")
    return True


# ------------------------------------------------------------------ running the student's code
def _one_line(err: BaseException, limit: int = 300) -> str:
    """``str(err)`` on one line, cut to ``limit`` characters."""
    text = " ".join(str(err).split())
    return text if len(text) <= limit else text[:limit] + " ..."


def _require(ok: bool, label: str, hint: str) -> None:
    if not ok:
        raise WrongAnswer(f"{label}: not yet. {hint}")


def _name(label: str) -> str:
    ex = EXERCISES.get(label)
    return ex.answer if ex else "answer"


def _snapshot(obj, label: str):
    """``obj`` with every list, tuple, set and dict in it (subclasses too) copied into a plain
    one from what it holds, and its numbers and strings made plain: an answer is judged by its
    contents, not by ``__iter__``, ``items()`` or ``__len__`` methods that may say otherwise
    (or never end).  Refused when it holds more than :data:`MAX_ITEMS` numbers or items, or
    nests (or holds itself) more than 32 levels deep."""
    budget = [MAX_ITEMS]
    too_many = (f"your `{_name(label)}` holds more than {MAX_ITEMS:,} items, far more than any answer to "
                "this exercise needs: return the few numbers the exercise asks for.")

    def spend(n: int) -> None:
        budget[0] -= max(int(n), 1)
        _require(budget[0] >= 0, label, too_many)

    def take(x, depth: int):
        _require(depth <= 32, label, f"your `{_name(label)}` nests containers more than 32 levels deep (or holds "
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
        return frame.f_globals.get("__name__") == __name__

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
    limit = float(TIME_LIMIT_S)
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

    if "torch" in sys.modules:   # the parent's OpenMP pool does not survive a fork: one thread here
        sys.modules["torch"].set_num_threads(1)
    try:
        out = ("value", thunk())
    except BaseException as err:  # noqa: BLE001 - sent back to the parent, which raises it
        out = ("error", err)
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
            child.kill()
        child.join()
    kind, value = pickle.loads(payload)
    if kind == "error":
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


def _call(fn, label: str, *args, convert: Callable[[Any], Any] | None = None):
    """``fn(*args)`` on copies of ``args``, bounded in time and size, refusing the stub.

    ``convert`` (applied to the result, under the same time bound) turns it into what the
    check compares; it raises :class:`WrongAnswer` for a result of the wrong kind.
    """
    _require(callable(fn), label, "answer with a function (def ...), as the exercise's starter code does.")
    args = copy.deepcopy(args)   # the answer may change its inputs; the check keeps its own

    def run():
        out = fn(*args)
        _require(out is not None, label, "your function returns None: fill in its body and return the result.")
        out = _snapshot(out, label)
        return convert(out) if convert is not None else out

    return _guarded(label, run)


def _array(x, label: str, what: str) -> np.ndarray:
    """``x`` as a finite float64 array (numpy, nested lists or a torch tensor)."""
    if type(x).__module__.startswith("torch") and hasattr(x, "detach"):
        x = x.detach().cpu().numpy()
    try:
        a = np.asarray(x, dtype=float)
    except (TypeError, ValueError) as err:
        raise WrongAnswer(f"{label}: not yet. {what} should be an array of numbers; "
                          f"got {type(x).__name__} ({_one_line(err, 120)}).") from None
    _require(bool(np.all(np.isfinite(a))), label, f"{what} holds NaN or infinite entries.")
    return a


def _number(x, label: str, what: str = "your answer") -> float:
    """``x`` as one finite float (a Python or numpy number, or a one-element array)."""
    _require(not isinstance(x, (bool, np.bool_, str, bytes)), label,
             f"{what} should be a number; got {type(x).__name__}.")
    a = _array(x, label, what)
    _require(a.size == 1, label, f"{what} should be one number; got an array of shape {a.shape}.")
    return float(a.reshape(-1)[0])


def _whole(x, label: str, lo: int, hi: int, what: str) -> int:
    """``x`` as an int in ``[lo, hi]`` (bools and floats refused)."""
    _require(isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_)), label,
             f"answer with a whole number of {what} (an int); got {type(x).__name__}.")
    _require(lo <= x <= hi, label, f"answer with a whole number of {what} between {lo:,} and {hi:,}.")
    return int(x)


def _ints(x, label: str, what: str) -> list[int]:
    """The items of an iterable answer as ints (at most :data:`MAX_ITEMS` of them)."""
    _require(not isinstance(x, (str, bytes, dict)) and hasattr(x, "__iter__"), label,
             f"{what} should be a list or set of whole numbers; got {type(x).__name__}.")
    items = list(itertools.islice(iter(x), MAX_ITEMS + 1))
    _require(len(items) <= MAX_ITEMS, label,
             f"{what} holds more than {MAX_ITEMS:,} items; the exercise asks for a few numbers.")
    _require(all(isinstance(i, (int, np.integer)) and not isinstance(i, (bool, np.bool_)) for i in items), label,
             f"{what} should hold whole numbers (ints).")
    return [int(i) for i in items]


def _rng(label: str) -> np.random.Generator:
    return np.random.default_rng(sum(map(ord, label)))


def _orthogonal(rng: np.random.Generator, n: int) -> np.ndarray:
    """A Haar-random orthogonal matrix (QR of a Gaussian matrix, signs fixed)."""
    Q, R = np.linalg.qr(rng.standard_normal((n, n)))
    return Q * np.sign(np.diag(R))


def _close(got: np.ndarray, want: np.ndarray, rtol: float = 1e-9) -> bool:
    """Equal up to rounding: every entry within ``rtol`` of the largest entry of ``want``."""
    scale = max(float(np.abs(want).max(initial=0.0)), 1e-300)
    return got.shape == want.shape and bool(np.all(np.abs(got - want) <= rtol * scale))


# the two scores from their definitions (Def. 3.1 and 3.2), written out independently of
# companion.core.scores so that a check never compares the package with itself
def _symmetry_def(M: np.ndarray) -> float:
    """s = (||M_s||^2 - ||M_n||^2) / ||M||^2 from the symmetric and skew-symmetric parts."""
    S, N = (M + M.T) / 2, (M - M.T) / 2
    return float((np.sum(S * S) - np.sum(N * N)) / np.sum(M * M))


def _directionality_def(M: np.ndarray, gamma: float = 2.0) -> float:
    """d = (R - C) / (R + C), R and C the excess of the outlying row and column norms."""
    def excess(norms):
        cut = norms.mean() + gamma * norms.std(ddof=1)
        return float(np.sum(np.clip(norms - cut, 0, None)))
    R, C = excess(np.linalg.norm(M, axis=1)), excess(np.linalg.norm(M, axis=0))
    return 0.0 if R + C == 0 else (R - C) / (R + C)


def _pair(out, label: str, what: str) -> tuple[np.ndarray, np.ndarray]:
    _require(isinstance(out, (tuple, list)) and len(out) == 2, label,
             f"return a pair of {what}, e.g. `return A, B`; got {type(out).__name__}"
             + (f" of length {len(out)}." if isinstance(out, (tuple, list)) else "."))
    return _array(out[0], label, f"the first of your {what}"), _array(out[1], label, f"the second of your {what}")


def _listed(xs, limit: int = 12) -> str:
    xs = list(xs)
    return str(xs) if len(xs) <= limit else f"[{', '.join(map(str, xs[:limit]))}, ... ({len(xs):,} in all)]"


# ------------------------------------------------------------------------ the bilinear form
@_exercise("ex-bilinear-form-1", "reparametrize",
           "a function (Wq, Wk, G) -> (Wq2, Wk2) of [d_h, d] factors and an invertible d_h x d_h G, "
           "with Wq2 = G @ Wq and the same form Wq2.T @ Wk2 == Wq.T @ Wk")
def _(fn, label):
    rng = _rng(label)
    # one-dimensional heads (G a number, either sign), heads narrower, wider and as wide as d
    for d_h, d in ((1, 1), (1, 5), (3, 7), (6, 6), (9, 4)):
        Wq, Wk = rng.standard_normal((d_h, d)), rng.standard_normal((d_h, d))
        if d_h == 1:
            G = np.array([[-0.4 if d == 1 else 2.5]])
        else:  # invertible, neither orthogonal nor symmetric, singular values in [0.5, 3]
            G = _orthogonal(rng, d_h) @ np.diag(rng.uniform(0.5, 3.0, d_h)) @ _orthogonal(rng, d_h)
        want_q, want_form = G @ Wq, Wq.T @ Wk          # computed before the answer runs
        Wq2, Wk2 = _call(fn, label, Wq, Wk, G, convert=lambda out: _pair(out, label, "factors"))
        _require(Wq2.shape == Wq.shape and Wk2.shape == Wk.shape, label,
                 f"return two factors of the input shape {Wq.shape}; got {Wq2.shape} and {Wk2.shape}.")
        _require(_close(Wq2, want_q), label, f"for d_h = {d_h}, d = {d} the query factor should become G @ Wq.")
        _require(_close(Wq2.T @ Wk2, want_form), label,
                 f"for d_h = {d_h}, d = {d} and a G that is neither orthogonal nor symmetric the form "
                 "Wq2^T Wk2 differs from Wq^T Wk. With Wq -> G Wq the form picks up a factor G^T on the "
                 "left of Wk; which matrix applied to Wk cancels it for every invertible G?")


@_exercise("ex-bilinear-form-2", "augmented_form",
           "a function (Wq, bq, Wk, bk) -> a (d+1) x (d+1) matrix B with "
           "(x, 1) B (y, 1) = (Wq x + bq) . (Wk y + bk) for every x, y")
def _(fn, label):
    rng = _rng(label)
    ones = lambda Z: np.hstack([Z, np.ones((len(Z), 1))])
    # [d_h, d] factors: one-dimensional, wide, narrow and square heads; each bias zero once
    for (d_h, d), case in zip(((1, 1), (4, 6), (7, 3), (5, 5)), ("both biases", "bq = 0", "bk = 0", "large entries")):
        scale = 100.0 if case == "large entries" else 1.0
        Wq, Wk = scale * rng.standard_normal((d_h, d)), scale * rng.standard_normal((d_h, d))
        bq, bk = scale * rng.standard_normal(d_h), scale * rng.standard_normal(d_h)
        if case == "bq = 0":
            bq = np.zeros(d_h)
        if case == "bk = 0":
            bk = np.zeros(d_h)
        X, Y = rng.standard_normal((5, d)), rng.standard_normal((7, d))
        X[0], Y[0] = 0.0, 0.0                                  # x = y = 0 leaves only bq . bk
        logits = (X @ Wq.T + bq) @ (Y @ Wk.T + bk).T           # the attention logits, directly
        B = _call(fn, label, Wq, bq, Wk, bk, convert=lambda out: _array(out, label, "B"))
        _require(B.shape == (d + 1, d + 1), label, f"for d = {d} B should be {(d + 1, d + 1)}; got {B.shape}.")
        got = ones(X) @ B @ ones(Y).T
        _require(_close(got, logits), label,
                 f"with {case} (d_h = {d_h}, d = {d}) (x, 1) B (y, 1) differs from the logit (Wq x + bq) . "
                 "(Wk y + bk) for random x, y: expand the product; the top-left block is M, the last "
                 "column and last row carry the bias terms (which is which?), the corner bq . bk.")


# -------------------------------------------------------------------------------- measuring
def _verdicts(answer, label: str, same: object) -> dict:
    """``{'symmetry': v, 'directionality': v}`` where each ``v`` is ``same`` (a bool: the
    score never moves) or an example: a pair ``(M, X)`` of square arrays showing that it does."""
    _require(isinstance(answer, dict) and set(answer) == {"symmetry", "directionality"}, label,
             "answer with a dict {'symmetry': ..., 'directionality': ...}.")
    out = {}
    for score, v in answer.items():
        if isinstance(v, (bool, np.bool_)):
            _require(bool(v) == same, label,
                     f"for the {score} score give {same} where it never moves, or an example (M, ...) where "
                     "it does; a bool of the other value is not an answer here.")
            out[score] = None
        else:
            _require(isinstance(v, (tuple, list)) and len(v) == 2, label,
                     f"for the {score} score give {same}, or an example as a pair (M, ...) of arrays.")
            M, X = _array(v[0], label, f"the {score} example's M"), _array(v[1], label, f"the {score} example's second item")
            _require(M.ndim == 2 and M.shape[0] == M.shape[1] and M.shape[0] >= 2, label,
                     f"the {score} example's M should be a square matrix, at least 2 x 2; got shape {M.shape}.")
            _require(float(np.abs(M).max()) > 0, label, f"the {score} example's M is zero.")
            out[score] = (M, X)
    return out


def _test_matrices(rng: np.random.Generator, n: int) -> list[np.ndarray]:
    """Matrices with a dominant column, a dominant row, none, a symmetric and a skew one."""
    G = rng.standard_normal((n, n))
    col, row = G.copy(), G.copy()
    col[:, 0] *= 8
    row[1, :] *= 8
    sym = G + G.T
    sym[:, 0] *= 8
    return [col, row, G, sym, G - G.T]


def _score_changes(pairs) -> dict:
    """``{score: True}`` for a score that differs between some ``M`` and its transform."""
    changed = {"symmetry": False, "directionality": False}
    for M, moved in pairs:
        changed["symmetry"] |= not np.isclose(_symmetry_def(M), _symmetry_def(moved), rtol=0, atol=1e-9)
        changed["directionality"] |= not np.isclose(_directionality_def(M), _directionality_def(moved),
                                                    rtol=0, atol=1e-9)
    return changed


@_exercise("ex-measuring-1", "invariant_under_rotation",
           "a dict {'symmetry': ..., 'directionality': ...}: True where the score is unchanged by "
           "M -> Q M Q^T for every orthogonal Q, otherwise an example (M, Q) where it changes")
def _(answer, label):
    answer = _verdicts(answer, label, True)
    rng = _rng(label)
    pairs = []
    for n in (6, 48):
        for M in _test_matrices(rng, n):
            for Q in (_orthogonal(rng, n), np.eye(n)[rng.permutation(n)], np.diag(rng.choice([-1.0, 1.0], n))):
                pairs.append((M, Q @ M @ Q.T))
    changed = _score_changes(pairs)
    for score, example in answer.items():
        if example is None:
            _require(not changed[score], label,
                     f"try it: score a matrix with one large column before and after a random rotation "
                     f"(np.linalg.qr of a Gaussian matrix gives Q); look again at the {score} score.")
            continue
        M, Q = example
        _require(Q.shape == M.shape and np.allclose(Q.T @ Q, np.eye(len(Q)), atol=1e-8), label,
                 f"the {score} example's Q should be an orthogonal matrix of M's shape (Q^T Q = I).")
        score_of = _symmetry_def if score == "symmetry" else _directionality_def
        before, after = score_of(M), score_of(Q @ M @ Q.T)
        _require(abs(after - before) > 1e-6, label,
                 f"your example leaves the {score} score where it was ({before:.6f} before and after): "
                 + ("is there any rotation that moves it? Write s with traces." if score == "symmetry"
                    else "the score looks at outlying row and column norms; start from a matrix that has one."))


@_exercise("ex-measuring-2", "first_order_gap",
           "a function (A, eps) -> your prediction of 1 - s(I + eps A), exact to order eps^2")
def _(fn, label):
    rng = _rng(label)
    cases = []
    for n in (1, 2, 5, 25, 64):                           # 1 x 1: nothing to be skew
        A = rng.standard_normal((n, n))
        cases += [(A, 1e-3, "Gaussian"), (A, -1e-4, "Gaussian")]
    B = rng.standard_normal((6, 6))
    cases += [(B + B.T, 1e-3, "symmetric"), (B - B.T, 1e-3, "skew-symmetric"),
              (B + 4 * np.eye(6), 1e-3, "with a large trace"), (rng.uniform(-1, 1, (9, 9)), 2e-3, "uniform")]
    for A, eps, kind in cases:
        n = A.shape[0]
        M = np.eye(n) + eps * A
        N = (M - M.T) / 2                                  # 1 - s = 2 ||M_n||^2 / ||M||^2, no cancellation
        want = 2 * np.sum(N * N) / np.sum(M * M)
        # the next order: relative size of the terms in eps^3 and eps^4
        rtol = 4 * (2 * abs(eps * np.trace(A)) + eps ** 2 * np.sum(A * A)) / n + 1e-6
        got = _call(fn, label, A, eps, convert=lambda out: _number(out, label, "your prediction"))
        _require(abs(got - want) <= rtol * abs(want) + 1e-15, label,
                 f"for a {kind} {n} x {n} A and eps = {eps:g} the measured 1 - s is {want:.6e}, your "
                 f"prediction {got:.6e}; a prediction exact to order eps^2 is within {rtol:.1e} of it "
                 "(relatively). Which part of A (symmetric or skew) can make s smaller than 1, and how "
                 "does ||I + eps A||^2 grow with n?")


@_exercise("ex-measuring-3", "changes_under_row_permutation",
           "a dict {'symmetry': ..., 'directionality': ...}: False where permuting the rows of M "
           "never changes the score, otherwise an example (M, perm) where it changes")
def _(answer, label):
    answer = _verdicts(answer, label, False)
    rng = _rng(label)
    pairs = []
    for n in (5, 40):
        for M in _test_matrices(rng, n):
            for _ in range(3):
                perm = rng.permutation(n)
                while np.all(perm == np.arange(n)):
                    perm = rng.permutation(n)
                pairs.append((M, M[perm]))
    changes = _score_changes(pairs)
    for score, example in answer.items():
        if example is None:
            _require(not changes[score], label,
                     f"which entries does a row permutation move, and does the {score} score compare entries "
                     "across rows and columns or only collect norms?")
            continue
        M, perm = example
        n = len(M)
        _require(perm.shape == (n,) and sorted(perm.astype(int).tolist()) == list(range(n))
                 and np.array_equal(perm, perm.astype(int)), label,
                 f"the {score} example's perm should list the rows 0 to {n - 1} of M in a new order.")
        score_of = _symmetry_def if score == "symmetry" else _directionality_def
        before, after = score_of(M), score_of(M[perm.astype(int)])
        _require(abs(after - before) > 1e-6, label,
                 f"your example leaves the {score} score where it was ({before:.6f} before and after); "
                 "which entries does a row permutation move, and which norms does the score collect?")


# ---------------------------------------------------------------------------------- errata
@_exercise("ex-errata-1", "expected_symmetry",
           "a function n -> E[s] for an n x n matrix with i.i.d. zero-mean Gaussian entries, to leading order")
def _(fn, label):
    from scipy import stats

    # For Gaussian entries ||M_s||^2 and ||M_n||^2 are independent chi-squares with n(n+1)/2
    # and n(n-1)/2 degrees of freedom, so s = 2B - 1 with B ~ Beta(n(n+1)/4, n(n-1)/4): its mean
    # is known exactly at every n (a 1 x 1 matrix is symmetric: s = 1).
    for n in (1, 2, 3, 4, 7, 16, 64, 1000, 10**6):
        exact = 1.0 if n == 1 else 2 * float(stats.beta(n * (n + 1) / 4, n * (n - 1) / 4).mean()) - 1
        got = _call(fn, label, n, convert=lambda out: _number(out, label, "your E[s]"))
        _require(abs(got - exact) <= 1e-6 * exact, label,
                 f"for Gaussian entries the leading-order formula is exact at every n: at n = {n:,} "
                 f"E[s] = {exact:.6g}, your formula gives {got:.6g}. Count which terms of tr(M M) have "
                 "non-zero mean, and compare with E ||M||_F^2.")


# ------------------------------------------------------------------ objectives to structure
@_exercise("ex-objectives-to-structure-2", "equal_masking_rate",
           "a number p in (0, 1): the masking rate at which masked-masked pairs are as many as "
           "masked-unmasked pairs, for long sequences")
def _(p, label):
    p = _number(p, label, "the masking rate")
    _require(0 < p < 1, label, f"a masking rate lies strictly between 0 and 1; got {p:g}.")
    for N in (10**7, 10**9):             # long sequences: the ratio's limit, to within 1e-5
        m = round(p * N)                 # masked positions of a sequence of N tokens
        both = m * (m - 1)               # ordered pairs of two masked positions, counted
        cross = m * (N - m)              # masked query, unmasked key
        _require(cross > 0 and abs(both / cross - 1) < 1e-5, label,
                 f"at p = {p:g} a sequence of {N:,} tokens has {both:,} masked-masked and {cross:,} cross "
                 "pairs. Write both counts with Eq. S119 and set them equal.")


# --------------------------------------------------------------------------- what survives
def _t_test_power(n: int, ncp: float, level: float = 0.95) -> float:
    """Probability that the one-sample t statistic of ``n`` seeds exceeds its two-sided
    ``level`` critical value when the true mean is ``ncp`` standard errors above 0.

    Computed from the definition T = (Z + ncp) / sqrt(V / (n - 1)), Z normal, V chi-square,
    by integrating P(Z > c sqrt(V / (n - 1)) - ncp) over V's quantiles: no non-central t
    routine and no root of :func:`companion.rules.statistics.detectable_effect` is involved.
    """
    from scipy import integrate, stats

    df = n - 1
    crit = stats.t.ppf((1 + level) / 2, df)
    integrand = lambda u: stats.norm.cdf(ncp - crit * np.sqrt(stats.chi2.ppf(u, df) / df))
    return float(integrate.quad(integrand, 0, 1, limit=200, epsabs=1e-10)[0])


@_exercise("ex-what-survives-3", "seeds_needed",
           "the smallest number of seeds n whose detectable effect falls below 0.02, when three seeds "
           "detect 0.05 and the seed-to-seed spread stays the same (an int)")
def _(n, label):
    from scipy import optimize

    n = _whole(n, label, 2, 10**6, "seeds")
    power = 0.8   # detectable effect: the true difference found with this probability
    # three seeds detect 0.05: 0.05 is ncp3 standard errors, ncp3 the power-0.8 non-centrality
    ncp3 = optimize.brentq(lambda c: _t_test_power(3, c) - power, 0.0, 100.0, xtol=1e-12)
    sd = 0.05 * np.sqrt(3) / ncp3
    found = {k: _t_test_power(k, 0.02 * np.sqrt(k) / sd) for k in (n - 1, n) if k >= 2}
    enough, before = found[n] > power, found.get(n - 1, 0.0) > power
    _require(enough and not before, label,
             f"with {n} seeds a true difference of 0.02 is found with probability {found[n]:.3f}"
             + (f", and with {n - 1} already {found[n - 1]:.3f}" if before else "")
             + f"; 'detectable' means {power:.0%}. Recover the spread from the three-seed figure "
             "(the effect is proportional to it), then search n with detectable_effect.")


# ------------------------------------------------------------------------ training dynamics
@_exercise("ex-training-dynamics-2", "untrained_symmetry",
           "a function (d, r) -> the expected symmetry score, to leading order, of an untrained "
           "layer's form Wq^T Wk with independent Gaussian [r, d] factors")
def _(fn, label):
    rng = _rng(label)
    # width 1 (s = 1 exactly), narrow and wide heads (r < d, r = d, r > d), rank one
    for d, r, draws in ((1, 4, 500), (2, 1, 20000), (2, 9, 20000), (3, 3, 20000), (5, 40, 4000),
                        (12, 3, 4000), (40, 10, 1000)):
        Wq, Wk = rng.standard_normal((draws, r, d)), rng.standard_normal((draws, r, d))
        M = np.swapaxes(Wq, 1, 2) @ Wk                          # draws x [d, d] = Wq^T Wk
        s = np.einsum("nij,nji->n", M, M) / np.einsum("nij,nij->n", M, M)
        mean, se = float(s.mean()), float(s.std(ddof=1) / np.sqrt(draws))
        got = _call(fn, label, d, r, convert=lambda out: _number(out, label, "your expected score"))
        _require(abs(got - mean) <= 4.5 * se + 0.02 / d**2, label,
                 f"{draws:,} untrained {d}-wide layers of rank {r} average s = {mean:.4f} (standard error "
                 f"{se:.4f}); your formula gives {got:.4f}. Compute E tr(M^2) and E ||M||_F^2 for "
                 "M = Wq^T Wk: which products of entries have non-zero mean?")


@lru_cache(maxsize=1)
def _tiny_decoder():
    import torch

    from ...train.models.bert import build_model

    with torch.random.fork_rng():      # leave the student's random state as it was
        torch.manual_seed(0)
        return build_model("tiny", 50, mode="decoder").eval()


@_exercise("ex-training-dynamics-1", "changed_positions",
           "a function (seq_len, t) -> the sorted list of positions whose logits change when the token "
           "at position t is replaced, in a decoder (causal-mask) model")
def _(fn, label):
    import torch

    from ...train.models.objectives import lm_logits

    model = _tiny_decoder()
    gen = torch.Generator().manual_seed(1)
    # a one-token sequence, the first and the last position, and positions in between
    for seq_len, ts in ((1, (0,)), (2, (0, 1)), (7, (0, 3, 6)), (12, (0, 5, 11)), (20, (19, 8))):
        ids = torch.randint(0, 50, (1, seq_len), generator=gen)
        with torch.no_grad():
            base = lm_logits(model, ids)
        for t in ts:
            other = ids.clone()
            other[0, t] = (other[0, t] + 1) % 50
            with torch.no_grad():
                moved = (lm_logits(model, other) - base).abs().amax(dim=-1)[0]   # per position
            truth = [int(p) for p in torch.nonzero(moved > 1e-6).flatten()]
            got = _call(fn, label, seq_len, t, convert=lambda out: sorted(_ints(out, label, "your positions")))
            _require(got == truth, label,
                     f"replacing token {t} of {seq_len} changed the logits at positions {_listed(truth)} of an "
                     f"actual decoder; you said {_listed(got)}. Which positions can attend to position {t} "
                     "under a causal mask?")


# ------------------------------------------------------------------------- rank-one updates
@_exercise("ex-rank-one-updates-2", "proportional_factors",
           "a function d -> (Wq, Wk), two [d_h, d] factors (d_h >= d) with a non-zero form Wq.T @ Wk, "
           "for which one small gradient step changes the form in the direction of -G for every gradient G")
def _(fn, label):
    import torch

    g = torch.Generator().manual_seed(7)
    for d in (1, 2, 5, 8):                 # one dimension (every pair works) up to a few
        Wq, Wk = _call(fn, label, d, convert=lambda out: _pair(out, label, "factors"))
        _require(Wq.ndim == 2 and Wq.shape == Wk.shape and Wq.shape[1] == d and Wq.shape[0] >= d, label,
                 f"for d = {d} return two factors of shape [d_h, {d}] with d_h >= {d}; got {Wq.shape} and {Wk.shape}.")
        Wq, Wk = torch.as_tensor(Wq), torch.as_tensor(Wk)
        M0 = Wq.T @ Wk
        _require(float(M0.norm()) > 1e-9 * float(Wq.norm() * Wk.norm()), label,
                 f"for d = {d} the form Wq.T @ Wk is zero: such a layer attends to nothing.")
        # a step small enough that its second-order term is below rounding of the first
        eta = 1e-7 / (1 + float(torch.linalg.matrix_norm(Wq, 2)) ** 2 + float(torch.linalg.matrix_norm(Wk, 2)) ** 2)
        Gs = [torch.randn(d, d, generator=g, dtype=torch.float64) for _ in range(3)]
        if d > 1:
            Gs += [Gs[0] + Gs[0].T, Gs[1] - Gs[1].T]     # symmetric and skew-symmetric gradients
        for G in Gs:
            q, k = Wq.clone().requires_grad_(), Wk.clone().requires_grad_()
            (G * (q.T @ k)).sum().backward()                 # a loss whose gradient in M is G
            with torch.no_grad():
                change = (q - eta * q.grad).T @ (k - eta * k.grad) - M0
            cos = float((change * -G).sum() / (change.norm() * G.norm()))
            _require(cos > 1 - 1e-9, label,
                     f"for d = {d}, after a gradient step (by autograd) the form moved at cosine {cos:.9f} to "
                     "-G, not along it. Write the first-order change in terms of Wq^T Wq, G and Wk^T Wk: "
                     "when is it a multiple of G for every G?")


# ----------------------------------------------------------------------------------- errata
def _scipy_law(x, label: str):
    """``x`` as ``(dist, args, kwds)`` when it is a frozen law of scipy.stats itself (not an
    object that imitates one, a subclass, or a law with a method replaced on the instance),
    so that its tails and moments are computed by scipy's own code."""
    from scipy.stats import rv_continuous, rv_discrete
    from scipy.stats._distn_infrastructure import rv_continuous_frozen, rv_discrete_frozen

    dist = getattr(x, "dist", None) if type(x) in (rv_continuous_frozen, rv_discrete_frozen) else None
    genuine = (isinstance(dist, (rv_continuous, rv_discrete))
               and type(dist).__module__.startswith("scipy.stats.")
               and not any(callable(v) and callable(getattr(type(obj), k, None))
                           for obj in (x, dist) for k, v in vars(obj).items()))
    _require(genuine, label,
             "return a pair of frozen scipy.stats distributions, e.g. (stats.norm(0, 1), ...), made by scipy.stats "
             f"itself; got {type(x).__name__}" + (" with a method replaced" if dist is not None else "") + ".")
    return dist, tuple(x.args), dict(x.kwds)


def _two_laws_tails(out, label: str):
    _require(isinstance(out, (tuple, list)) and len(out) == 2, label,
             "return a pair of frozen scipy.stats distributions, e.g. (stats.norm(0, 1), ...).")
    laws = [_scipy_law(x, label) for x in out]

    class _Law:   # each law's tails and moments through scipy's class, never the instance's methods
        def __init__(self, law):
            self.dist, self.args, self.kwds = law

        def stats(self, moments):
            return type(self.dist).stats(self.dist, *self.args, moments=moments, **self.kwds)

        def logsf(self, z):
            return type(self.dist).logsf(self.dist, z, *self.args, **self.kwds)

    out = tuple(_Law(law) for law in laws)
    heavy, light = out
    (mh, vh), (ml, vl) = (tuple(float(v) for v in law.stats(moments="mv")) for law in (heavy, light))
    _require(all(np.isfinite([mh, vh, ml, vl])) and vh > 0 and vl > 0, label,
             f"both laws need a finite mean and a finite positive variance; got means ({mh:.4g}, {ml:.4g}) and "
             f"variances ({vh:.4g}, {vl:.4g}).")
    _require(abs(mh - ml) <= 1e-9 * (1 + abs(mh)) and abs(vh - vl) <= 1e-9 * vh, label,
             f"the means ({mh:.6g}, {ml:.6g}) and variances ({vh:.6g}, {vl:.6g}) must be equal.")
    z = mh + np.sqrt(vh) * np.geomspace(4, 60, 300)
    # each law is asked about its own copy of the points: a law that changed them would
    # have the other compared elsewhere
    return np.asarray(heavy.logsf(z.copy()), dtype=float), np.asarray(light.logsf(z.copy()), dtype=float)


@_exercise("ex-errata-2", "two_laws",
           "a function () -> (heavier, lighter): two scipy.stats distributions with equal means and "
           "equal variances, the first with the larger upper tail at every point beyond some z")
def _(fn, label):
    import scipy.stats  # noqa: F401 - imported before the answer's clock starts

    heavy, light = _call(fn, label, convert=lambda out: _two_laws_tails(out, label))
    # compared on the log scale, so that tails far below 1e-308 are still told apart
    _require(bool(np.all(heavy > light)), label,
             "from four to sixty standard deviations above the mean the first law's upper tail must lie "
             "above the second's at every point; which laws of equal variance put more mass far out?")


# ----------------------------------------------------------------------------------- survey
@_exercise("ex-survey-1", "differing_repeats",
           "a set of catalog keys: the models printed more than once in Table S2 whose repeated rows "
           "print different numbers")
def _(answer, label):
    from ...zoo.catalog import published_scores

    _require(isinstance(answer, (set, frozenset, list, tuple)) and all(isinstance(k, str) for k in answer), label,
             "answer with a set of catalog keys (the 'key' column of published_scores()).")
    s2 = published_scores()
    s2 = s2[s2["table"] == "S2"]
    # counted from the printed numbers themselves, not from the catalog's problem flags
    distinct = s2.groupby("key").apply(lambda g: len({(r.median, r.q25, r.q75) for r in g.itertuples()}),
                                       include_groups=False)
    truth = set(distinct[distinct > 1].index)
    got = set(answer)
    _require(got == truth, label,
             f"{len(got & truth)} of your {len(got)} keys are right, {len(truth - got)} are missing. Group "
             "Table S2's rows by key and compare the printed median and quartiles of the repeats.")


@_exercise("ex-survey-2", "agreeing_heads",
           "the set of SmolLM2 query heads (0-8) whose score is the same under the grouped and the "
           "modulo pairing")
def _(answer, label):
    import torch
    from transformers.models.llama.modeling_llama import repeat_kv   # how the model pairs its heads

    _require(isinstance(answer, (set, frozenset, list, tuple, np.ndarray)), label,
             "answer with a set of head numbers, e.g. {0, 1}.")
    heads = _ints(answer, label, "your set of heads")
    _require(all(0 <= h < 9 for h in heads), label,
             f"SmolLM2 has query heads 0 to 8; got {_listed(sorted(set(heads)))}.")
    # SmolLM2's head counts (9 query heads sharing 3 key heads) on random weights: the scores
    # of the forms each pairing builds, from the factors themselves
    n_heads, n_kv, d_head, d = 9, 3, 8, 24
    g = torch.Generator().manual_seed(3)
    Wq = torch.randn(n_heads, d_head, d, generator=g, dtype=torch.float64)
    Wk = torch.randn(n_kv, d_head, d, generator=g, dtype=torch.float64)
    paired = {"grouped": repeat_kv(Wk[None], n_heads // n_kv)[0],   # the key head attention uses
              "modulo": Wk.repeat(n_heads // n_kv, 1, 1)}           # key heads tiled: h mod n_kv
    scores = {}
    for pairing, K in paired.items():
        M = Wq.transpose(1, 2) @ K                                   # [heads, d, d]
        scores[pairing] = np.array([_symmetry_def(m) for m in M.numpy()])
    truth = {h for h in range(n_heads) if abs(scores["grouped"][h] - scores["modulo"][h]) < 1e-12}
    _require(set(heads) == truth, label,
             "a head's score is the same under both pairings exactly when both give it the same key head; "
             "write out which key head each pairing gives to each of the nine query heads.")


# ------------------------------------------------------------------------- symmetric init
def _skew_dimension(n: int) -> int:
    """Dimension of the n x n skew-symmetric matrices: the null space of X -> X + X^T,
    from the rank of that map on the n^2 matrix units (a larger matrix holds a smaller one as a
    block, so sizes above 6 are answered by 6)."""
    n = min(n, 6)
    if n < 1:
        return 0
    units = np.eye(n * n).reshape(n * n, n, n)
    images = (units + np.swapaxes(units, 1, 2)).reshape(n * n, n * n)
    return n * n - int(np.linalg.matrix_rank(images))


@_exercise("ex-symmetric-init-2", "smallest_skew_dim",
           "the smallest number of dimensions per head for which a skew-symmetric matrix can be non-zero (an int)")
def _(k, label):
    k = _whole(k, label, 1, 10**6, "dimensions")
    _require(_skew_dimension(k) > 0, label,
             f"every {k} x {k} skew-symmetric matrix is zero: write one out and look at its diagonal.")
    _require(_skew_dimension(k - 1) == 0, label,
             f"{k} is not the smallest: fewer dimensions already allow a non-zero skew-symmetric matrix "
             "(an entry above the diagonal fixes the one below it; what is the smallest matrix with both?).")


# -------------------------------------------------------------------------------- mechanism
@_exercise("ex-mechanism-1", "applied_update",
           "a function (G, gq, gk, eta) -> the exact change of M = Wq^T Wk after one plain SGD step, "
           "written with G = gq^T Wk + Wq^T gk and the raw gradients")
def _(fn, label):
    rng = _rng(label)
    # the step is taken on the factors themselves; the answer sees only G, the gradients and eta
    for d_h, d, eta in ((1, 1, 0.3), (3, 5, 0.05), (6, 4, 1.0), (8, 8, 1e-3), (2, 7, 2.5)):
        Wq, Wk = rng.standard_normal((d_h, d)), rng.standard_normal((d_h, d))
        gq, gk = rng.standard_normal((d_h, d)), rng.standard_normal((d_h, d))
        stepped = (Wq - eta * gq).T @ (Wk - eta * gk) - Wq.T @ Wk
        G = gq.T @ Wk + Wq.T @ gk
        got = _call(fn, label, G, gq, gk, eta, convert=lambda out: _array(out, label, "your change of M"))
        _require(got.shape == stepped.shape, label, f"the change of M is {stepped.shape}; got {got.shape}.")
        _require(_close(got, stepped), label,
                 f"for eta = {eta:g} and [{d_h}, {d}] factors the form moved by a different matrix than yours. "
                 "Multiply out (Wq - eta gq)^T (Wk - eta gk) and keep every term, the one in eta^2 included.")


# ----------------------------------------------------------------------------- fig3 decided
@_exercise("ex-fig3-decided-1", "targets_per_token",
           "a function (steps, batch, block, train_tokens, mask_rate) -> (next-token, masked): how many "
           "times an average training token is a prediction target under each objective")
def _(fn, label):
    rng = _rng(label)
    # a packed stream read block after block, wrapping around, counted token by token
    for steps, batch, block, n_tokens, rate in ((30, 4, 16, 600, 0.15), (7, 3, 8, 50, 0.45),
                                                (40, 2, 32, 1000, 0.25), (1, 1, 64, 64, 0.15)):
        seen, masked = np.zeros(n_tokens), np.zeros(n_tokens)
        draws = 200
        for _ in range(draws):
            pos = 0
            for _ in range(steps * batch):
                idx = (pos + np.arange(block)) % n_tokens
                pos = (pos + block) % n_tokens
                seen[idx] += 1
                masked[idx] += rng.random(block) < rate
        want = np.array([seen.mean() / draws, masked.mean() / draws])
        got = _call(fn, label, steps, batch, block, n_tokens, rate,
                    convert=lambda out: _pair(out, label, "counts"))
        got = np.array([float(np.reshape(g, -1)[0]) if np.size(g) == 1 else np.nan for g in got])
        _require(bool(np.all(np.isfinite(got))), label, "return two numbers, e.g. `return a, b`.")
        _require(abs(got[0] - want[0]) <= 1e-9 * want[0] and abs(got[1] - want[1]) <= 0.05 * want[1], label,
                 f"reading {steps} steps of {batch} blocks of {block} tokens from {n_tokens:,} training tokens "
                 f"(masking {rate:.0%}) made each token a target {want[0]:.3g} times under next-token prediction "
                 f"and about {want[1]:.3g} under masking; you said {got[0]:.3g} and {got[1]:.3g}. How many "
                 "tokens do the steps read in all, and which of them does each objective predict?")


# ----------------------------------------------------------------------- context prediction
@_exercise("ex-context-prediction-2", "expected_ratio",
           "a function p -> E[mu_c] / E[mu_p] (Eq. S68) for a causal model on windows of N = len(p) "
           "tokens, p[k-1] = Pr[t_k = t*] the chance that position k holds the token")
def _(fn, label):
    rng = _rng(label)
    cases = [np.full(5, 0.1), np.full(64, 0.02), np.linspace(0.01, 0.2, 12), np.linspace(0.2, 0.01, 12),
             rng.uniform(0.0, 0.3, 9), np.array([0.0, 0.0, 0.5, 0.1])]
    for p in cases:
        N = len(p)
        # every ordered pair of positions j < i: j is context for the target i (a causal mask)
        context = sum(p[j] for i in range(N) for j in range(i))
        predicted = sum(p[i] for i in range(N) for j in range(i))
        want = context / predicted
        got = _call(fn, label, p, convert=lambda out: _number(out, label, "your ratio"))
        _require(abs(got - want) <= 1e-9 * want, label,
                 f"for windows of {N} tokens and these positional chances the pairs count a ratio of "
                 f"{want:.6g}; yours is {got:.6g}. A token at position k is context for how many later "
                 "positions, and predicted from how many earlier ones?")
