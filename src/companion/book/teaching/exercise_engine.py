"""The engine of the exercise checks: each exercise's check is data, run here with bounds.

An exercise's check is the ``check:`` of its entry in its chapter's ``exercises`` of
``data/chapters.yaml``; :func:`from_data` reads it into an :class:`Exercise` (the fields are
in its docstring), and :func:`run` checks one answer, turning whatever goes wrong into a
:class:`WrongAnswer` of one line.  The data names its independent computations
(:mod:`.exercise_references`); the few answers that are an example or a construction are
tested by a named judge (:mod:`.exercise_checks`), which reads the answer with :func:`call`,
:func:`as_array`, :func:`as_number`, :func:`as_whole`, :func:`as_ints`, :func:`as_pair`.  An
answer whose numbers came in a type coarser than float64 (float32, bfloat16) and miss only by
its rounding is told to compute in float64, not given the exercise's hint (:func:`require_close`).

The student's code is run with bounds: every call gets copies of its inputs (an answer that
changes its arguments cannot change what it is compared with), stops with a
:class:`WrongAnswer` after ``time_s`` seconds (``exercises.TIME_LIMIT_S``), and may return at
most ``items`` numbers or items (``exercises.MAX_ITEMS``). Each call runs in a forked child
(its result comes back through a pipe, read as data only: numbers, arrays, containers, scipy's
laws, never code), killed at the time limit with every process it
started (:mod:`.exercise_processes`): a long call into compiled code is stopped as surely as
a Python loop.  Where a process cannot be forked (Windows, or once this process has started
CUDA, which a forked child cannot use again), or with
``COMPANION_CHECK_IN_PROCESS=1``, the bound is ``SIGALRM`` in the main thread, which
interrupts Python code between two steps only, and a watchdog thread elsewhere.
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

from .exercise_alarm import _Escalation, _guarded_by_alarm, _guarded_by_thread, _OutOfTime
from .exercise_processes import RaisedInChild as _RaisedInChild
from .exercise_processes import _kill_tree, in_child, load_data, text_of

#: seconds one call of the student's code may take, unless :func:`run` is told otherwise
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
    _check_bound("time_s", time_s, "number of seconds, e.g. 5")   # the caller's bound, never the answer's fault
    _check_bound("items", items, "whole number of items, e.g. 100000")
    if answer is None or answer is Ellipsis:
        raise WrongAnswer(f"{label}: no answer yet; define `{ex.answer}`: {ex.asks}.")
    before = (_bounds.label, _bounds.answer, _bounds.time_s, _bounds.items)
    _bounds.label, _bounds.answer, _bounds.time_s, _bounds.items = label, ex.answer, float(time_s), int(items)
    try:
        if not callable(answer):   # the value's own methods (a member's __hash__) run here: bounded too
            answer = _guarded_here(label, lambda: _snapshot(answer, label))
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


def _check_bound(name: str, value, what: str) -> None:
    """Refuse (``ValueError``, one line naming ``name``) a bound of :func:`run` that bounds nothing:
    not a finite number > 0 (whole for ``items``); an infinite or NaN limit was reported as an error
    of the student's answer, and -1 ran the check without any limit."""
    import math
    import numbers

    ok = (isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_)) and math.isfinite(value)
          and value > 0 and ("whole" not in what or float(value).is_integer()))
    if not ok:
        raise ValueError(f"run(..., {name}={value!r}) bounds nothing; give a positive {what}.")


# ------------------------------------------------------------------ running the student's code
def _one_line(err: BaseException, limit: int = 300) -> str:
    """``str(err)`` on one line, cut to ``limit`` characters."""
    text = " ".join(text_of(err).split())
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


def _guarded_here(label: str, thunk: Callable[[], Any]) -> Any:
    """``thunk()`` in this process (its result is kept as it is, not sent back as data),
    failed with a :class:`WrongAnswer` after the time limit: by the alarm in the main
    thread, else by a watchdog thread."""
    limit = float(_bounds.time_s)
    late = WrongAnswer(f"{label}: not yet. your `{_name(label)}` did not finish within {limit:g} s "
                       "(its value's own methods, such as __hash__, never returned); fix it and run the check again.")
    if (hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()
            and _Escalation.guard is None):
        return _guarded_by_alarm(thunk, limit, late)
    return _guarded_by_thread(thunk, limit, late)


def _can_fork() -> bool:
    """Whether an answer can run in a forked child: not on Windows, not when asked
    (``COMPANION_CHECK_IN_PROCESS=1``), and not once this process has started CUDA (a GPU
    runtime on Colab): a forked child cannot use CUDA again ("Cannot re-initialize CUDA in
    forked subprocess"), so an answer on the GPU would fail there for no fault of its own."""
    import multiprocessing

    return (hasattr(os, "fork") and "fork" in multiprocessing.get_all_start_methods()
            and os.environ.get("COMPANION_CHECK_IN_PROCESS", "") in ("", "0")
            and not _cuda_started())


def _cuda_started() -> bool:
    torch = sys.modules.get("torch")
    try:
        return bool(torch is not None and torch.cuda.is_initialized())
    except Exception:   # a torch built without CUDA, or one half imported
        return False


def _guarded_by_process(thunk, limit: float, late: WrongAnswer, label: str):
    """``thunk()`` in a forked child process, killed after ``limit`` seconds: a long call into
    compiled code, which no signal interrupts, is stopped all the same."""
    import multiprocessing
    import warnings

    ctx = multiprocessing.get_context("fork")
    recv, send = ctx.Pipe(duplex=False)
    child = ctx.Process(target=in_child, args=(thunk, send), name="exercise-check", daemon=True)
    with warnings.catch_warnings():   # (Python 3.12 warns of fork in a threaded process: the child runs no thread)
        warnings.simplefilter("ignore", DeprecationWarning)
        child.start()
    send.close()
    payload, start = None, time.monotonic()
    try:
        if not recv.poll(limit):
            raise WrongAnswer(f"{late} (It was stopped at the limit.)")
        # a reply begun but never finished would block here: at the limit the child is killed,
        # which ends the reply (and a reply may hold at most 64 MiB)
        fired: list = []
        stop = threading.Timer(max(start + limit - time.monotonic(), 0.0) + 1.0,
                               lambda: (fired.append(True), _kill_tree(child.pid)))
        stop.daemon = True
        stop.start()
        try:
            payload = recv.recv_bytes(1 << 26)
        except (EOFError, OSError):
            child.join(1.0)
            if fired:
                raise WrongAnswer(f"{late} (It was stopped at the limit.)") from None
            raise WrongAnswer(f"{label}: not yet. your `{_name(label)}` ended the process that ran it (exit code "
                              f"{child.exitcode}) before it returned; return the result instead.") from None
        finally:
            stop.cancel()
    finally:
        recv.close()
        if payload is not None:
            child.join(2.0)       # it is flushing what the answer printed, and exiting
        if child.is_alive():
            _kill_tree(child.pid)  # the child and whatever the answer started, detached or not
        child.join()
    try:
        kind, value = load_data(payload)   # data only: what the child sends can run no code here
    except Exception:  # noqa: BLE001
        raise WrongAnswer(f"{label}: not yet. your `{_name(label)}` sent back something that is not data; "
                          "return the numbers the exercise asks for.") from None
    if kind == "error":
        if not isinstance(value, Exception):   # the answer's own SystemExit or KeyboardInterrupt: its error,
            value = _RaisedInChild(type(value).__name__, text_of(value) or "(no message)")   # not a stop of the check
        raise value
    return value


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


def _untorch(x):
    """A torch tensor as its numpy array (anything else as it is): a sparse or quantized one as
    its entries, a bfloat16 or float8 one in float32 (which holds each of its numbers exactly)."""
    if type(x).__module__.startswith("torch") and hasattr(x, "detach"):
        import torch

        t = x.detach()
        if t.layout != torch.strided:
            t = t.to_dense()
        if t.is_quantized:
            t = t.dequantize()
        t = t.cpu().resolve_conj().resolve_neg()
        if t.dtype.is_floating_point and t.dtype not in (torch.float16, torch.float32, torch.float64):
            t = t.to(torch.float32)
        return t.numpy()
    return x


def coarse_float(x) -> tuple[str, float] | None:
    """The name and rounding (machine epsilon) of the coarsest floating-point type among the
    numbers of ``x`` (an array, a tensor, a number, or a list or tuple of them) where it is
    coarser than float64; else None."""
    worst = None
    for item in (x if isinstance(x, (list, tuple)) and len(x) <= 16 else [x]):   # (a long list: as one array)
        try:
            if type(item).__module__.startswith("torch") and hasattr(item, "dtype"):
                import torch

                if not item.dtype.is_floating_point:
                    continue
                name, eps = str(item.dtype).removeprefix("torch."), float(torch.finfo(item.dtype).eps)
            else:
                dtype = np.asarray(item).dtype
                if dtype.kind != "f":
                    continue
                name, eps = dtype.name, float(np.finfo(dtype).eps)
        except Exception:  # noqa: BLE001 - no numbers to judge: as_array says what it is
            continue
        if eps > np.finfo(np.float64).eps and (worst is None or eps > worst[1]):
            worst = (name, eps)
    return worst


#: how many roundings of its type an answer's numbers may carry and still be read as right but
#: coarse (:func:`require_close`)
ROUNDINGS = 32


def require_close(passes: Callable[[float | None], bool], label: str, hint: str | Callable[[], str],
                  coarse: tuple[str, float] | None) -> None:
    """``require(passes(None), label, hint)``: ``passes(rtol)`` compares the answer at the check's
    own tolerance (``None``) or at a relative one no finer than ``rtol``.  An answer whose numbers
    came in a type coarser than float64 (``coarse``, :func:`coarse_float`) that fails at the
    check's tolerance but passes at :data:`ROUNDINGS` roundings of its type is told to compute
    in float64: its formula may well be right, and the hint would send it after a wrong one.
    ``hint`` may be a function giving the hint, called only when the answer is refused."""
    if passes(None):
        return
    if coarse is not None and passes(ROUNDINGS * coarse[1]):
        raise WrongAnswer(f"{label}: not yet. your numbers came back in {coarse[0]}, which keeps about "
                          f"{max(round(-np.log10(coarse[1])), 1)} significant digits: fewer than this check compares. "
                          "Compute in float64 (np.float64, or torch.float64) and check again.")
    require(False, label, hint() if callable(hint) else hint)


def as_array(x, label: str, what: str) -> np.ndarray:
    """``x`` as a finite float64 array (numpy, nested lists or a torch tensor) of real
    numbers: a complex one is refused, never read as its real part."""
    x = _untorch(x)
    try:
        a = np.asarray(x)
        require(not np.iscomplexobj(a), label, f"{what} should be real numbers; got complex ones (an "
                "imaginary part, even a zero one: take .real where you know it is zero).")
        a = np.asarray(a, dtype=float)
    except (TypeError, ValueError, OverflowError) as err:
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
    """``x`` as an int in ``[lo, hi]`` (a 0-d integer array or tensor too; bools and floats refused)."""
    kind, x = type(x).__name__, _untorch(x)
    if isinstance(x, np.ndarray) and x.ndim == 0 and x.dtype.kind in "iu":
        x = x[()]
    require(isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_)), label,
            f"answer with a whole number of {what} (an int); got {kind}"
            + (f" of {x.dtype}" if isinstance(x, np.ndarray) else "") + ".")
    require(lo <= x <= hi, label, f"answer with a whole number of {what} between {lo:,} and {hi:,}.")
    return int(x)


def as_ints(x, label: str, what: str) -> list[int]:
    """The items of an iterable answer (a torch tensor too) as ints (at most :data:`MAX_ITEMS` of them)."""
    x = _untorch(x)
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


def close(got: np.ndarray, want: np.ndarray, rtol: float = 1e-9) -> bool:
    """Equal up to rounding: every entry within ``rtol`` of the largest entry of ``want``."""
    scale = max(float(np.abs(want).max(initial=0.0)), 1e-300)
    return got.shape == want.shape and bool(np.all(np.abs(got - want) <= rtol * scale))


def as_pair(out, label: str, what: str) -> tuple[np.ndarray, np.ndarray]:
    require(isinstance(out, (tuple, list)) and len(out) == 2, label,
            f"return a pair of {what}, e.g. `return A, B`; got {type(out).__name__}"
            + (f" of length {len(out)}." if isinstance(out, (tuple, list)) else "."))
    return as_array(out[0], label, f"the first of your {what}"), as_array(out[1], label, f"the second of your {what}")


def listed(xs, limit: int = 12) -> str:
    xs = list(xs)
    return str(xs) if len(xs) <= limit else f"[{', '.join(map(str, xs[:limit]))}, ... ({len(xs):,} in all)]"


# ------------------------------------------------------------------ an exercise's check as data
#: the fields of an exercise's ``check:`` in its chapter's entry of ``data/chapters.yaml``
DATA_FIELDS = ("answer", "asks", "given", "reads", "what", "range", "cases", "compare", "hint", "hint_low",
               "hint_high", "judge", "wrong")
#: how an answer (or what an answer function returns) is read before it is compared
READS = ("number", "array", "two_numbers", "positions", "whole", "ints", "keys")
#: how the read answer is compared with a case's independent value ``want``
COMPARES = ("within", "close", "equal")


def _read(spec: dict, x, label: str):
    """``x`` read as ``spec['reads']`` says (refused with a one-line hint when it cannot be)."""
    kind, what, raw, x = spec["reads"], spec.get("what", "your answer"), x, _untorch(x)
    lo, hi = spec.get("range", (None, None))
    if kind == "number":
        return as_number(x, label, what)
    if kind == "array":
        return as_array(x, label, what)
    if kind == "two_numbers":   # a pair, or an array or tensor of the two numbers
        pair = tuple(x) if isinstance(x, np.ndarray) and x.shape == (2,) else raw
        pair = [np.reshape(a, -1) for a in as_pair(pair, label, what)]
        require(all(a.size == 1 for a in pair), label, "return two numbers, e.g. `return a, b`.")
        return np.array([float(a[0]) for a in pair])
    if kind == "positions":
        return sorted(as_ints(x, label, what))
    if kind == "whole":
        return as_whole(raw, label, lo, hi, what)
    require(isinstance(x, (set, frozenset, list, tuple, np.ndarray)), label,
            f"answer with a set of {what}" + (", e.g. {0, 1}." if kind == "ints" else "."))
    if kind == "ints":
        got = set(as_ints(x, label, f"your set of {what}"))
        require(all(lo <= i <= hi for i in got), label, f"your {what} should be numbers from {lo} to {hi}; "
                f"got {listed(sorted(got))}.")
        return got
    require(all(isinstance(k, str) for k in x), label, f"answer with a set of {what} (strings).")
    return set(x)


def _agrees(spec: dict, got, case: Case, label: str, rtol: float | None = None) -> bool:
    """Whether ``got`` agrees with the case's value, at its tolerance or at a relative one no finer
    than ``rtol`` (:func:`require_close`)."""
    how = spec["compare"]
    if how == "equal":
        return got == case.want
    g, w = np.asarray(got, dtype=float), np.asarray(case.want, dtype=float)
    require(g.shape == w.shape, label, f"{spec.get('what', 'your answer')} should have shape {w.shape}; got {g.shape}.")
    if how == "close":
        return close(g, w, rtol=max(case.rtol or 1e-9, rtol or 0.0))
    return bool(np.all(np.abs(g - w) <= np.maximum(case.rtol, rtol or 0.0) * np.abs(w) + case.atol))


def _hint(spec: dict, got, case: Case) -> str:
    """The spec's hint for this case, filled in with the case's facts, ``got``, ``want``,
    ``rtol`` and ``atol`` (and, for sets, ``right`` and ``missing``); ``hint_low`` and
    ``hint_high`` stand for a whole number below or above the value."""
    fields = {**case.facts, "want": case.want, "rtol": case.rtol, "atol": case.atol, "got": got}
    if isinstance(got, (set, list)):
        fields.update(got=listed(sorted(got)), right=len(set(got) & set(case.want)),
                      missing=len(set(case.want) - set(got)), n_got=len(got))
    template = spec.get("hint")
    if "hint_low" in spec and isinstance(got, int):
        template = spec["hint_low"] if got < case.want else spec["hint_high"]
    return template.format(**fields)


def _data_error(where: str, label: str, problem: str) -> ValueError:
    return ValueError(f"data/chapters.yaml: {where}: exercise {label}: check: {problem} (see exercise_engine.from_data)")


def from_data(label: str, spec: dict, where: str, cases: dict, references: dict, judges: dict) -> Exercise:
    """The :class:`Exercise` that the data ``spec`` describes (``where``: its chapter).

    ``answer`` (the name the student defines) and ``asks`` (what it is, in one line) always;
    then either ``judge``, the name of a test in ``judges`` (an answer that is an example or a
    construction, tested for a property rather than compared with a value), or the comparison:

    * ``given``: ``function`` (the default: called on copies of each case's inputs, bounded)
      or ``value`` (the answer itself); ``reads`` (:data:`READS`): how it or its result is
      read, with ``what`` (its name in a refusal) and ``range: [lo, hi]`` (``whole``, ``ints``);
    * ``cases``: a generator's name in ``cases`` (given :func:`seeded`, it yields :class:`Case`
      s) or a list of ``{args: [...], want: <a name in references>, of: [...]}``;
    * ``compare`` (:data:`COMPARES`): ``within`` ``rtol * |want| + atol`` entry by entry,
      ``close`` (equal up to rounding, shapes too) or ``equal``;
    * ``hint``: a format string of the case's facts, ``got``, ``want``, ``rtol``, ``atol``, or
      ``hint_low`` and ``hint_high`` for a whole number below or above; never the value;
    * ``wrong`` (for every check): two or more plausible wrong answers, ``{why, code}``, which
      ``tests/test_exercises.py`` runs and which must fail; the engine does not read them.
    """
    if not isinstance(spec, dict) or not set(spec) <= set(DATA_FIELDS):
        raise _data_error(where, label, f"the fields are {', '.join(DATA_FIELDS)}; got {spec!r}")
    for key in ("answer", "asks"):
        if not isinstance(spec.get(key), str) or not spec[key].strip():
            raise _data_error(where, label, f"{key} must be a line of text")
    wrong = spec.get("wrong")
    if not (isinstance(wrong, list) and len(wrong) >= 2 and all(
            isinstance(w, dict) and set(w) <= {"why", "code"} and isinstance(w.get("code"), str) for w in wrong)):
        raise _data_error(where, label, "wrong must list two or more plausible wrong answers as {why, code}")
    if "judge" in spec:
        if set(spec) != {"answer", "asks", "judge", "wrong"} or spec["judge"] not in judges:
            raise _data_error(where, label, f"a judge is one of {', '.join(sorted(judges))}, "
                              "with answer, asks and wrong and no other field")
        return Exercise(label, spec["answer"], spec["asks"], judges[spec["judge"]])
    spec = {"given": "function", **spec}
    if spec["given"] not in ("function", "value") or spec.get("reads") not in READS \
            or spec.get("compare") not in COMPARES:
        raise _data_error(where, label, f"given is function or value, reads one of {', '.join(READS)}, "
                          f"compare one of {', '.join(COMPARES)}")
    if spec["reads"] in ("whole", "ints") and not (isinstance(spec.get("range"), list) and len(spec["range"]) == 2):
        raise _data_error(where, label, f"reads: {spec['reads']} needs range: [lowest, highest]")
    if not (isinstance(spec.get("hint"), str) or {"hint_low", "hint_high"} <= set(spec)):
        raise _data_error(where, label, "give a hint (or hint_low and hint_high)")
    source = spec.get("cases")
    if isinstance(source, str) and source in cases:
        make = lambda: cases[source](seeded(label))
    elif isinstance(source, list) and source and all(
            isinstance(c, dict) and set(c) == {"args", "want", "of"} and c["want"] in references for c in source):
        make = lambda: (Case(tuple(c["args"]), references[c["want"]](*c["of"])) for c in source)
    else:
        raise _data_error(where, label, f"cases is one of {', '.join(sorted(cases))}, or a list of "
                          f"{{args, want, of}} with want one of {', '.join(sorted(references))}")

    def test(answer, lab):
        read = lambda out: (_read(spec, out, lab), coarse_float(out))
        for case in make():
            if spec["given"] == "value":   # read in a child too: a value's own methods may never return
                got, coarse = _guarded(lab, lambda: read(answer))
            else:
                got, coarse = call(answer, lab, *case.args, convert=read)
            require_close(lambda rtol: _agrees(spec, got, case, lab, rtol), lab, lambda: _hint(spec, got, case), coarse)

    return Exercise(label, spec["answer"], spec["asks"], test)
