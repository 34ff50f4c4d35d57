"""Test helper: a block that must end within a deadline, even where it would block on a FIFO
(the refusal tests for FIFOs, locks, ONNX and YAML bombs use it)."""

from __future__ import annotations

import contextlib
import os
import signal
import threading


@contextlib.contextmanager
def within(seconds: int, *fifos):
    """Fail (instead of hanging) when the block does not end within ``seconds``.  A Python
    loop is stopped by an alarm; a blocking ``open`` of one of ``fifos`` (which a signal
    may not interrupt when it reaches another thread) is released by opening the FIFO's
    other end, and the test then fails on the timeout."""
    fired, done = [], threading.Event()

    def release():
        if done.wait(seconds):
            return
        fired.append(True)
        while not done.wait(0.2):   # again and again: a reader, then perhaps a writer
            for f in fifos:
                with contextlib.suppress(OSError):
                    os.close(os.open(f, os.O_RDWR | os.O_NONBLOCK))

    def alarm(signum, frame):
        raise TimeoutError(f"still running after {seconds} s")

    timer = threading.Thread(target=release, daemon=True)
    old = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(seconds + 5)
    timer.start()
    try:
        yield
    finally:
        done.set()
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    assert not fired, f"blocked on a FIFO for {seconds} s"
