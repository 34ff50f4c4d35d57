"""The exercise checks (``companion.book.teaching.exercises.check``) against hostile answers: an answer
that swallows the time limit, iterates without end, lies about its items, or only imitates
a distribution (or moves the points it is asked about) does not pass, hang or crash, and a
right answer still passes."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest


ROOT = Path(__file__).resolve().parents[1]


def _in_a_fresh_python(code: str, timeout: float = 60) -> str:
    """Run ``code`` in its own interpreter (its main thread, as a notebook's cell runs) and
    return its stdout; a hang fails the test instead of the run."""
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout



# ---------------------------------------------------------------- time limits and endless answers


def test_an_answer_retrying_inside_a_bare_except_cannot_swallow_the_time_limit():
    out = _in_a_fresh_python("""
        import time
        import companion.book.teaching.exercises as ex
        ex.TIME_LIMIT_S = 0.5

        def expected_symmetry(n):
            while True:                 # retries whatever goes wrong, the time limit included
                try:
                    time.sleep(0.05)
                except:                 # noqa: E722
                    pass

        def nested(n):
            for _ in range(10**9):
                try:
                    try:
                        time.sleep(0.05)
                    except:             # noqa: E722
                        continue
                except:                 # noqa: E722
                    continue

        kept = []

        def keeps_them(n):
            while True:
                try:
                    sum(range(10**5))
                except BaseException as err:    # noqa: BLE001
                    kept.append(err)

        for answer in (expected_symmetry, nested, keeps_them):
            t0 = time.monotonic()
            try:
                ex.check("ex-errata-1", answer)
                print("PASSED")
            except ex.WrongAnswer as err:
                print(round(time.monotonic() - t0, 1), str(err))
        assert ex.check("ex-errata-1", lambda n: 1.0 if n == 1 else 2 * (n * (n + 1) / 4) / (n * n / 2) - 1) is not None
    """, timeout=150)
    lines = out.strip().splitlines()
    assert len(lines) == 4 and lines[-1] == "ex-errata-1: correct", out   # a right answer still passes after
    for line in lines[:3]:
        took, message = line.split(" ", 1)
        # the message shows the limit fired; the bound only tells an end from a hang (not a timing:
        # on a loaded two-core machine the checking process itself can take seconds to start)
        assert "did not finish within 0.5 s" in message and float(took) < 30, line


class _EndlessList(list):
    """Holds nothing, but iterates without end (over empty strings, which count no items)."""

    def __iter__(self):
        import itertools
        return itertools.repeat("")


class _LyingItems(dict):
    """Its items() shows only the keys the answer has right."""

    def items(self):
        return [(k, v) for k, v in dict.items(self) if k == "symmetry"]


def test_an_endless_list_subclass_is_not_a_hang():
    out = _in_a_fresh_python("""
        import itertools, time
        import companion.book.teaching.exercises as ex

        class Endless(list):
            def __iter__(self):
                return itertools.repeat("")

        class EndlessTuple(tuple):
            def __iter__(self):
                return itertools.repeat(())

        ex.TIME_LIMIT_S = 2
        for label, answer in (("ex-survey-1", Endless()), ("ex-survey-2", EndlessTuple()),
                              ("ex-training-dynamics-1", lambda seq_len, t: Endless())):
            t0 = time.monotonic()
            try:
                ex.check(label, answer)
                print("PASSED", label)
            except ex.WrongAnswer as err:
                print(round(time.monotonic() - t0, 1), str(err).replace(chr(10), " "))
    """, timeout=200)
    lines = out.strip().splitlines()
    assert len(lines) == 3 and not any(line.startswith("PASSED") for line in lines), out
    for line in lines:
        took, message = line.split(" ", 1)
        assert float(took) < 60 and "not yet" in message, line    # read as what it holds: nothing; an end, not a hang


def test_a_dict_whose_items_lie_does_not_pass():
    from companion.book.teaching.exercises import WrongAnswer, check

    # directionality moves under a rotation, so True is wrong for it; items() hides that key
    with pytest.raises(WrongAnswer, match="^ex-measuring-1: not yet"):
        check("ex-measuring-1", _LyingItems(symmetry=True, directionality=True))


def test_a_list_whose_items_lie_is_read_as_what_it_holds():
    from companion.book.teaching.exercises import WrongAnswer, check

    class Lying(list):
        def __iter__(self):                   # shows the right heads whatever it holds
            return iter([0, 4, 8])

        def __len__(self):
            return 3

    assert check("ex-survey-2", [0, 4, 8])
    with pytest.raises(WrongAnswer, match="^ex-survey-2: not yet"):
        check("ex-survey-2", Lying(range(9)))



# ---------------------------------------------------------------- laws that are not what they say


def test_an_answer_whose_law_moves_the_points_it_is_asked_about_is_not_believed():
    from scipy import stats

    from companion.book.teaching.exercises import WrongAnswer, check

    class Moving:
        """A normal law whose tail is asked for at z, and which then moves z tenfold out:
        the second law, asked next, was compared far out in its tail."""

        def __init__(self, law):
            self.law = law

        def stats(self, moments="mv"):
            return self.law.stats(moments=moments)

        def logsf(self, z):
            out = self.law.logsf(z)
            z *= 10
            return out

    with pytest.raises(WrongAnswer, match="^ex-errata-2: not yet"):
        check("ex-errata-2", lambda: (Moving(stats.norm(0, 1)), stats.norm(0, 1)))   # the same law twice
    assert check("ex-errata-2", lambda: (stats.t(5, scale=np.sqrt(3 / 5)), stats.norm(0, 1)))


def _imitations():
    from scipy import stats

    class Law:
        """Says mean 0, variance 1, and whatever tail the check wants."""

        def __init__(self, logtail):
            self.logtail = logtail

        def stats(self, moments="mv"):
            return 0.0, 1.0

        def logsf(self, z):
            return np.full(np.shape(z), self.logtail)

    patched = stats.norm(0, 1)
    patched.logsf = lambda z: np.zeros(np.shape(z))       # a real law, one method replaced

    class Frozen(type(stats.norm(0, 1))):                 # scipy's own frozen class, subclassed
        def logsf(self, z):
            return np.zeros(np.shape(z))

    dist = type(stats.norm)(name="norm")
    dist._logsf = lambda z: np.zeros(np.shape(z))          # the law's own tail replaced

    return {"imitation": lambda: (Law(0.0), Law(-1e9)),
            "patched method": lambda: (patched, stats.norm(0, 1)),
            "subclassed frozen law": lambda: (Frozen(stats.norm, 0, 1), stats.norm(0, 1)),
            "patched law": lambda: (dist(), stats.norm(0, 1))}


@pytest.mark.parametrize("case", ["imitation", "patched method", "subclassed frozen law", "patched law"])
def test_objects_that_only_imitate_a_distribution_do_not_pass_the_two_laws(case):
    from scipy import stats

    from companion.book.teaching.exercises import WrongAnswer, check

    with pytest.raises(WrongAnswer, match="^ex-errata-2: not yet") as err:
        check("ex-errata-2", _imitations()[case])
    assert "\n" not in str(err.value)
    assert check("ex-errata-2", lambda: (stats.t(5, scale=np.sqrt(3 / 5)), stats.norm(0, 1)))
