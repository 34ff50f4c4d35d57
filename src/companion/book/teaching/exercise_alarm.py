"""The time limit of an exercise check inside the checking process itself: ``SIGALRM`` in the
main thread (:func:`_guarded_by_alarm`), escalated to every line of the answer once it fired
(:class:`_OutOfTime`, :class:`_Escalation`), or a watchdog thread elsewhere
(:func:`_guarded_by_thread`).  :mod:`.exercise_engine` uses them where no child process can
run the answer (Windows, ``COMPANION_CHECK_IN_PROCESS=1``) and for a value's own methods.
"""

from __future__ import annotations

import signal
import sys
import threading
import time

_OURS = __name__.rpartition(".")[0] + ".exercise"   # the checks' own frames, never interrupted


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


def _guarded_by_alarm(thunk, limit: float, late: BaseException):
    """``thunk()``, stopped by ``SIGALRM`` after ``limit`` seconds (``late`` raised then): the
    main thread's bound where no child process can run the answer."""
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


def _guarded_by_thread(thunk, limit: float, late: BaseException):
    """``thunk()`` in a daemon thread, given up on (``late`` raised) after ``limit`` seconds."""
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
        raise type(late)(f"{late} (It goes on running in the background: restart the kernel to stop it.)")
    if "error" in result:
        raise result["error"]
    return result["value"]
