"""Fill the book's verdict cache once, before any chapter or test worker starts.

``python -m companion.judge.prepare`` computes every table the chapters share (the training
claims read at looks, the premise runs and shares, the training claims' tests, the swap's
and the update-level tests, the family table, every verdict and versions 1 and 2's
readings) into ``COMPANION_VERDICT_CACHE`` (default: the book's folder,
:data:`companion.base.paths.VERDICT_CACHE`, which the book's kernels read), under the key of
the run size and the package and its data (:func:`companion.judge.cache._cache_path`).  The
chapters then only read them: none computes a shared table or waits on another kernel's
lock while it does.  Run again with nothing changed, it reads every table and computes
nothing (seconds).  ``make test`` and ``make chapters`` run it in their set-up step
(``prepare``).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

__all__ = ["prepare", "main"]


def _tables():
    """``(name on disk, function that fills it)`` for every shared table, components first."""
    from ..rules.rulebook import RULES_HISTORY, load_rules
    from . import claims
    from .cache import content_key
    from .history import TRAINING, earlier_readings
    from .empirical import update_tests
    from .training_claims import training_verdicts

    # the training claims read at looks under the rules in force and under version 3 as
    # committed (the history page shows both)
    read_at_looks = [(f"training_verdicts-{content_key(r)}", lambda r=r: training_verdicts(r))
                     for r in (load_rules(), load_rules(RULES_HISTORY[3]))]
    return (read_at_looks + [("premise_shares", claims.premise_shares),
             ("premise_runs-{size}", claims.premise_runs),
             ("premise_seed_runs-{size}", claims.premise_seed_runs)]
            + [(f"training_tests-{k}", lambda k=k: claims.training_tests_table(k)) for k in TRAINING]
            + [("swap_tests", claims.swap_tests_table), ("update_tests", update_tests),
               ("family_table", claims.family_table),
               ("all_verdicts", claims.all_verdicts), ("earlier_readings", earlier_readings)])


def prepare(folder=None, out=sys.stdout) -> dict:
    """Compute (or read) every shared table into the verdict cache ``folder`` (default: the
    variable, else the book's folder); ``{file: seconds}``.  A table that could not be stored
    (it does not read back exactly) is refused in one line: the chapters would each compute it."""
    from ..base import paths
    from ..base.errors import CompanionError
    from ..base.runtime import run_size
    from .cache import _cache_path

    folder = folder or os.environ.get("COMPANION_VERDICT_CACHE") or str(paths.VERDICT_CACHE)
    os.environ["COMPANION_VERDICT_CACHE"] = str(folder)
    size = run_size()
    took = {}
    for name, fill in _tables():
        name = name.format(size=size)
        t = time.perf_counter()
        before = _cache_path(name)
        fill()
        path = _cache_path(name)
        if not path.is_file() and path != before:
            raise CompanionError(f"verdict cache: the package or its data changed while {name} was computed (its key "
                                 "moved), so the chapters would not find it; run python -m companion.judge.prepare "
                                 "again once nothing is being edited.")
        if not path.is_file():
            raise CompanionError(f"verdict cache: {name} was computed but not stored in {folder} (its value does not "
                                 "read back exactly as JSON), so every chapter would compute it again; make it a table "
                                 "of numbers and strings, or leave it out of companion.judge.prepare.")
        took[path.name] = time.perf_counter() - t
        print(f"verdict cache: {name} ready in {took[path.name]:.0f} s", file=out, flush=True)
    return took


def main(argv=None) -> int:
    from ..base.errors import CompanionError

    ap = argparse.ArgumentParser(prog="python -m companion.judge.prepare", description=__doc__.split("\n\n")[0])
    ap.add_argument("--cache", default=None, help="the verdict cache folder (default: $COMPANION_VERDICT_CACHE, "
                                                  "else the book's _build/.verdict_cache)")
    args = ap.parse_args(argv)
    try:
        t = time.perf_counter()
        took = prepare(args.cache)
    except CompanionError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(f"verdict cache: {len(took)} tables ready in {time.perf_counter() - t:.0f} s "
          f"({os.environ['COMPANION_VERDICT_CACHE']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
