"""The survey's i.i.d. null draws, shipped in ``data/null/``: which widths the survey needs
(every catalogued and every zoo model's width) and the command that draws and writes them
(``python -m companion.survey.null_draws ship``).  The draws themselves are
:func:`companion.core.null.ship_null`; this module only chooses the widths, which needs the zoo.
"""

from __future__ import annotations

from ..core.null import ship_null

__all__ = ["survey_null_widths", "main"]


def survey_null_widths(max_d: int) -> list[int]:
    """The widths whose null the survey draws: every catalogued and every zoo model's width
    up to ``max_d``.  A width that is not a whole number (``768.5``, Inf) is refused: ``int()``
    read 768.5 as 768 and Inf raised a raw OverflowError."""
    import math
    import numbers

    from ..base.errors import CompanionError
    from ..zoo.catalog import load_catalog
    from .zoo_walk import score_zoo

    if not isinstance(max_d, numbers.Integral) or isinstance(max_d, bool) or max_d < 2:
        raise CompanionError(f"max_d must be a whole number of dimensions >= 2; got {max_d!r}.")
    _, scores, _ = score_zoo(per_head=False)  # the zoo's widths, as the survey reads them
    found = list(load_catalog()["d_model"].dropna()) + (list(scores["d_model"].dropna()) if "d_model" in scores else [])
    if bad := [d for d in found if isinstance(d, bool) or not isinstance(d, numbers.Real)
               or not math.isfinite(d) or d != int(d)]:
        raise CompanionError(f"a model's width {bad[0]!r} is not a whole number of dimensions; fix d_model in the "
                             "catalog (data/catalog.csv) or the reader that gave it.")
    return sorted({int(d) for d in found if 2 <= d <= max_d})


def main(argv=None) -> int:
    """``ship``: draw and write the null of every width the survey needs; a refusal ends in one line."""
    from ..base.errors import main_in_one_line

    return main_in_one_line("python -m companion.survey.null_draws", _main, argv)


def _main(argv=None) -> int:
    import argparse
    import time

    ap = argparse.ArgumentParser(prog="python -m companion.survey.null_draws",
                                 description="Ship the survey's i.i.d. null draws for a run size (data/null/).")
    ap.add_argument("command", choices=["ship"])
    ap.add_argument("--size", choices=["gpu"], default="gpu",
                    help="run size whose draws to ship (gpu: 200 samples per width up to 8,192)")
    args = ap.parse_args(argv)
    n, max_d = {"gpu": (200, 8192)}[args.size]
    widths = survey_null_widths(max_d)
    if not widths:
        import sys

        print(f"no catalogued or zoo model has a width from 2 to {max_d}: nothing to draw; install the zoo "
              "(`companion zoo fetch all`) or check data/catalog.csv.", file=sys.stderr)
        return 1
    t0 = time.time()
    path = ship_null(widths, n, progress=lambda d: print(f"d={d} done at {time.time() - t0:.0f} s", flush=True))
    print(f"{path}: {len(widths)} widths x {n} samples in {time.time() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
