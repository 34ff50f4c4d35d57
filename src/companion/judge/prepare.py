"""Fill the book's verdict cache once, before any chapter or test worker starts.

``python -m companion.judge.prepare`` computes every table the chapters share (the training
claims read at looks, the premise runs and shares, the training claims' tests, the swap's
and the update-level tests, the family table, every verdict, the zoo's encoder-decoder gaps
and versions 1 and 2's readings) into ``COMPANION_VERDICT_CACHE`` (default: the book's folder,
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

__all__ = ["BESIDE", "LAST", "prepare", "main", "zoo_gaps"]


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
               ("all_verdicts", claims.all_verdicts), ("zoo_gaps", zoo_gaps), ("earlier_readings", earlier_readings)])


def zoo_gaps() -> dict:
    """The gap between the encoders' and the decoders' medians on the offline zoo, for each
    score (:func:`companion.survey.quantisation.unit_gaps`), with the zoo scored live and
    counted as the survey's registered design says: the contrast the survey's verdict reads
    (:func:`companion.judge.empirical_claims._zoo_contrast`, once per process).  Kept in the
    verdict cache where it is on: :func:`prepare` fills it after every verdict, which
    scored the zoo already, so a chapter that sets storage against the gap (the zoo readers'
    quantisation study) reads it instead of scoring the zoo a second time (30 to 60 s)."""
    from ..survey.quantisation import unit_gaps
    from .cache import _cached, _shared_when_on
    from .empirical_claims import _zoo_contrast

    return _shared_when_on("zoo_gaps", lambda: unit_gaps(_cached("zoo_contrast", _zoo_contrast)))


#: with ``jobs`` 2, a second process fills these (the slowest tables that need no other:
#: the readings at looks and the swap's tests) while this one fills the other components
BESIDE = ("training_verdicts-", "swap_tests")
#: read from the components: filled last, once every other table is on disk
LAST = ("family_table", "all_verdicts", "zoo_gaps", "earlier_readings")


def prepare(folder=None, out=sys.stdout, jobs: int = 1, only=None) -> dict:
    """Compute (or read) every shared table (or those named in ``only``) into the verdict cache
    ``folder`` (default: the variable, else the book's folder); ``{file: seconds}``.  With
    ``jobs`` 2, the tables of :data:`BESIDE` are filled by a second process at the same time
    (the machine's two cores), those of :data:`LAST` after both.  A table that could not be
    stored (it does not read back exactly) is refused in one line: the chapters would each
    compute it."""
    from ..base import paths
    from ..base.errors import CompanionError
    from ..base.runtime import run_size

    folder = folder or os.environ.get("COMPANION_VERDICT_CACHE") or str(paths.VERDICT_CACHE)
    from pathlib import Path

    # a folder given on the command line is the one under the working folder now: the chapters,
    # each run in its own folder, read it by its absolute path
    folder = str(Path(folder).expanduser().absolute())
    if Path(folder).exists() and not Path(folder).is_dir():   # checked before any table is computed
        raise CompanionError(f"verdict cache: {folder} is not a folder; pass --cache a folder (new or one this "
                             "command filled before).")
    os.environ["COMPANION_VERDICT_CACHE"] = str(folder)
    size = run_size()
    tables = [(name.format(size=size), fill) for name, fill in _tables()]
    if only is not None:
        unknown = sorted(set(only) - {n for n, _ in tables})
        if unknown:
            raise CompanionError(f"verdict cache: no shared table {unknown[0]!r}; choose among "
                                 f"{', '.join(n for n, _ in tables)}.")
        tables = [(n, f) for n, f in tables if n in only]
    if int(jobs) != jobs or jobs < 1:
        raise CompanionError(f"verdict cache: jobs must be a whole number of processes, 1 or more; got {jobs!r}.")
    beside = [n for n, _ in tables if n.startswith(BESIDE)] if jobs > 1 else []
    child = (_start_second([sys.executable, "-m", "companion.judge.prepare", "--cache", str(folder),
                            "--only", ",".join(beside)]) if beside else None)
    took = {}
    try:
        took.update(_fill([t for t in tables if t[0] not in beside and t[0] not in LAST], folder, out))
        if child is not None and child.wait() != 0:
            raise CompanionError(f"verdict cache: the second process filling {', '.join(beside)} failed (exit status "
                                 f"{child.returncode}; its error is above); run python -m companion.judge.prepare "
                                 "alone to see it.")
        took.update(_fill([t for t in tables if t[0] in LAST], folder, out))
    finally:
        if child is not None and child.poll() is None:
            child.terminate()
            child.wait()
    return took


def _start_second(argv):
    """The second process of :func:`prepare` (its output goes where this one's goes)."""
    import subprocess

    return subprocess.Popen(argv)


def _fill(tables, folder, out) -> dict:
    """Fill each ``(name, function)`` of ``tables`` into the cache; ``{file: seconds}``."""
    from ..base.errors import CompanionError
    from .cache import _cache_path

    took = {}
    for name, fill in tables:
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
    ap.add_argument("--jobs", type=int, default=1,
                    help="processes at a time (2: a second one fills the slowest independent tables)")
    ap.add_argument("--only", default=None, metavar="NAME,...", help="fill only these tables")
    args = ap.parse_args(argv)
    try:
        t = time.perf_counter()
        took = prepare(args.cache, jobs=args.jobs, only=args.only.split(",") if args.only else None)
    except CompanionError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(f"verdict cache: {len(took)} tables ready in {time.perf_counter() - t:.0f} s "
          f"({os.environ['COMPANION_VERDICT_CACHE']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
