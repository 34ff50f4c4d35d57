"""Shared by the training benchmarks: seconds per step from two run lengths.

``run(steps)`` trains ``steps`` steps from scratch; timing a short and a long run and
dividing the difference by the difference in steps cancels set-up, tokenization and the
evaluations at the first and last step.
"""

from __future__ import annotations

import time


def seconds_per_step(run, short: int, long: int) -> float:
    if not 0 < short < long:
        raise ValueError(f"need 0 < short < long, got {short} and {long}")
    took = {}
    for steps in (short, long):
        t0 = time.perf_counter()
        run(steps)
        took[steps] = time.perf_counter() - t0
    return (took[long] - took[short]) / (long - short)


def emit(result: dict, out=None) -> None:
    """Print a benchmark's result as JSON and, with ``out`` (a Path), write it there too."""
    import json

    text = json.dumps(result, indent=2)
    print(text)
    if out:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text + "\n")
