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
    up to ``max_d``."""
    from ..zoo.catalog import load_catalog
    from .zoo_walk import score_zoo

    _, scores, _ = score_zoo(per_head=False)  # the zoo's widths, as the survey reads them
    widths = set(load_catalog()["d_model"].dropna()) | set(scores["d_model"].dropna())
    return sorted({int(d) for d in widths if 2 <= int(d) <= max_d})


def main(argv=None) -> int:
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
    t0 = time.time()
    path = ship_null(widths, n, progress=lambda d: print(f"d={d} done at {time.time() - t0:.0f} s", flush=True))
    print(f"{path}: {len(widths)} widths x {n} samples in {time.time() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
