"""A check's time limit limits (issue 74, family 4): the student's code runs in a child process
that is killed at :data:`TIME_LIMIT_S`, so a long call into compiled code — which SIGALRM cannot
interrupt — is stopped at the limit with one line, as a Python loop is."""

from __future__ import annotations

import ctypes
import os
import re
import signal
import time

import numpy as np
import pytest

from companion.book.teaching import exercises
from companion.book.teaching.exercises import WrongAnswer, check

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="the child process is forked")

LIMIT = 1.0


def _reference_errata_1():
    from scipy import special  # noqa: F401
    return lambda n: 1.0 / n   # a wrong value is fine: these answers never return


def _regex_for_ever(n):
    """One C call with no signal check: catastrophic backtracking (half a minute here at 29 characters)."""
    re.match(r"(a+)+$", "a" * 29 + "b")
    return 0.5


def _sleep_with_the_alarm_blocked(n):
    """A C sleep that the alarm cannot end: the answer blocks SIGALRM first."""
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
    ctypes.CDLL(None).sleep(20)
    return 0.5


def _huge_matmul(n):
    """A numpy product far too large for the limit, as one BLAS call (stopped long before)."""
    a = np.ones((8000, 8000), dtype=np.float32)
    return float((a @ a)[0, 0])


@pytest.mark.parametrize("answer", [_regex_for_ever, _sleep_with_the_alarm_blocked, _huge_matmul],
                         ids=lambda f: f.__name__)
def test_a_long_c_call_is_stopped_at_the_limit_with_one_line(monkeypatch, answer):
    monkeypatch.setattr(exercises, "TIME_LIMIT_S", LIMIT)
    before_mask = signal.pthread_sigmask(signal.SIG_BLOCK, set())
    t0 = time.monotonic()
    with pytest.raises(WrongAnswer) as err:
        check("ex-errata-1", answer)
    took = time.monotonic() - t0
    msg = str(err.value)
    assert took < LIMIT + 3, f"the check took {took:.1f} s with a limit of {LIMIT} s"
    assert "\n" not in msg and re.match(r"^ex-errata-1: not yet\. .*did not finish within 1 s.*stopped at the limit", msg), msg
    assert signal.pthread_sigmask(signal.SIG_BLOCK, set()) == before_mask   # the answer's mask stayed in the child


def test_the_child_leaves_nothing_running(monkeypatch):
    import multiprocessing

    monkeypatch.setattr(exercises, "TIME_LIMIT_S", LIMIT)
    with pytest.raises(WrongAnswer):
        check("ex-errata-1", _sleep_with_the_alarm_blocked)
    assert not [p for p in multiprocessing.active_children() if p.name == "exercise-check"]


def test_right_and_wrong_answers_and_their_errors_come_back_from_the_child():
    from test_exercises import _reference

    assert check("ex-errata-1", _reference("ex-errata-1"))
    with pytest.raises(WrongAnswer, match="^ex-errata-1: not yet"):
        check("ex-errata-1", lambda n: 0.123)

    class Odd(Exception):            # an exception that cannot be pickled back whole
        def __init__(self, a, b):
            super().__init__(f"odd {a} {b}")

    def raises(n):
        raise Odd(1, 2)

    with pytest.raises(WrongAnswer, match=r"raised Odd: odd 1 2\. Expected"):
        check("ex-errata-1", raises)

    def exits(n):
        os._exit(3)

    with pytest.raises(WrongAnswer, match=r"ended the process that ran it \(exit code 3\)"):
        check("ex-errata-1", exits)


def test_torch_in_the_child_after_the_parent_used_its_threads():
    """The parent's OpenMP pool does not survive a fork: the child uses one thread, not a hang."""
    torch = pytest.importorskip("torch")
    a = torch.randn(400, 400)
    (a @ a).sum()                     # the parent's thread pool is up

    def torch_answer(n):
        b = torch.randn(300, 300)
        (b @ b).sum()
        from test_exercises import _reference
        return _reference("ex-errata-1")(n)

    t0 = time.monotonic()
    assert check("ex-errata-1", torch_answer)
    assert time.monotonic() - t0 < 30
