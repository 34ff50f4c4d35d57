"""Will a chapter's notebook fit a free Colab GPU?  A T4 estimate from the H100 times.

Issue 45's budget for a chapter's notebook at the ``gpu`` run size: at most 10 minutes on
one H100 and at most 30 minutes on a T4-class card (a free Colab GPU: a T4, 2 vCPUs).  No
T4 was measured, so its time is *estimated* from what was measured:

- the chapter's H100 time at the ``gpu`` size (``data/chapter_times/gpu-size-h100-*.csv``);
- the chapter's **dominant cost**, one of :data:`COSTS`, written per chapter with its reason
  in ``data/chapter_times/colab_budget.csv``;
- how many times longer that kind of work takes on a T4 than on the H100 machine: the
  ratio of two vendor figures per cost, each with its source, in
  ``data/chapter_times/colab_ratios.csv`` (:func:`load_ratios`);
- the chapter's time on two CPU cores (``gpu-size-cpu-2cores.csv``), shown beside the
  estimate and used as the cap of host-bound work (:data:`RULE`).

Where no H100 time is recorded (or the H100 run stopped on an error) the H100 column says
``not measured`` and no T4 estimate is made.  :func:`colab_estimates` returns the table;
the status page shows it (:func:`companion.book.build_status.gpu_size_budget`).
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from .chapter_times import TIMES, book_chapters, load_times

__all__ = ["COSTS", "H100_BUDGET_S", "T4_BUDGET_S", "BUDGET_CSV", "RATIOS_CSV", "RULE",
           "load_ratios", "load_dominant_costs", "colab_estimates"]

COSTS = ("flops", "host_bound", "memory", "io")
"""What dominates a chapter's time: matrix products on the device (``flops``), Python,
NumPy and kernel launches on the host (``host_bound``), device memory traffic
(``memory``), reading files (``io``)."""

H100_BUDGET_S = 600.0
T4_BUDGET_S = 1800.0
"""A chapter's notebook at the ``gpu`` size: at most 10 minutes on one H100, 30 on a T4."""

BUDGET_CSV = TIMES / "colab_budget.csv"
RATIOS_CSV = TIMES / "colab_ratios.csv"

RULE = (
    "T4 estimate = the chapter's H100 time x the T4/H100 ratio of its dominant cost: "
    "flops, the cards' dense 16-bit tensor-core peaks (989.4 / 65 TFLOPS); memory, their "
    "bandwidths (3,350 / 320 GB/s), NVIDIA's data sheets; host-bound, the host's CPU "
    "cores (16 on the H100 machine / 2 vCPUs on Colab), capped by the chapter's measured "
    "time on two CPU cores; io, 1 (assumed). An H100 run over its budget gives a lower "
    "bound; no H100 time, no estimate. The H100 times come from one sitting of nine "
    "chapters sharing the GPU, so they are upper bounds. Estimates, not measurements.")


def load_ratios(path: Path | str = RATIOS_CSV) -> dict[str, float]:
    """``{cost: how many times longer on a T4}`` from the vendor figures in ``path``.

    Each row gives the H100 machine's and the T4's figure of one quantity (TFLOPS, GB/s,
    cores); the ratio is ``h100 / t4``.  Every cost of :data:`COSTS` must have one row,
    with a source and positive figures.
    """
    t = pd.read_csv(path, keep_default_na=False)
    missing = set(COSTS) - set(t["dominant_cost"])
    unknown = set(t["dominant_cost"]) - set(COSTS)
    if missing or unknown or t["dominant_cost"].duplicated().any():
        raise ValueError(f"{path}: one row per cost of {COSTS} is needed "
                         f"(missing {sorted(missing)}, unknown {sorted(unknown)}, or a repeat)")
    out = {}
    for _, r in t.iterrows():
        h, g = float(r["h100"]), float(r["t4"])
        if not (h > 0 and g > 0) or not str(r["source"]).strip():
            raise ValueError(f"{path}: the {r['dominant_cost']} row needs two positive "
                             "figures and its source")
        out[r["dominant_cost"]] = h / g
    return out


def load_dominant_costs(path: Path | str = BUDGET_CSV,
                        chapters: list[str] | None = None, strict: bool = True) -> dict[str, str]:
    """``{chapter: dominant cost}`` from ``path``: every chapter of ``chapters`` (default:
    the book's executable chapters) once, each with a cost of :data:`COSTS` and a reason.

    ``strict=False``: a chapter without a row is left out instead of refused (the status
    page then says its cost is not recorded; the tests insist on a row per chapter)."""
    t = pd.read_csv(path, keep_default_na=False)
    chapters = book_chapters() if chapters is None else chapters
    bad = t[~t["dominant_cost"].isin(COSTS) | (t["reason"].str.strip() == "")]
    if not bad.empty:
        raise ValueError(f"{path}: {list(bad['chapter'])} need a cost of {COSTS} and a reason")
    if t["chapter"].duplicated().any():
        raise ValueError(f"{path}: {sorted(set(t.loc[t['chapter'].duplicated(), 'chapter']))} "
                         "listed twice")
    missing = [c for c in chapters if c not in set(t["chapter"])]
    if missing and strict:
        raise ValueError(f"{path} has no dominant cost for {missing}; add a row per chapter")
    return dict(zip(t["chapter"], t["dominant_cost"]))


def _row(times: pd.DataFrame, chapter: str, is_device) -> pd.Series | None:
    rows = times[(times["chapter"] == chapter) & (times["size"] == "gpu")
                 & times["device"].map(is_device).astype(bool)]
    return None if rows.empty else rows.sort_values("date").iloc[-1]


def _seconds(s: float) -> str:
    return f"{s:,.0f}"


def colab_estimates(times: pd.DataFrame | None = None, costs: dict[str, str] | None = None,
                    ratios: dict[str, float] | None = None,
                    chapters: list[str] | None = None) -> pd.DataFrame:
    """Per chapter at the ``gpu`` size: the H100 time, the T4 estimate, the time on two CPU
    cores, and the flags of issue 45's budget (:data:`RULE`).

    Columns: ``chapter``; ``dominant_cost`` (``not recorded`` for a chapter without a row in
    ``colab_budget.csv``: no estimate then); ``ratio`` (T4/H100 for that cost);
    ``h100_s`` (the H100 time, or its lower bound when the run went over its budget; NaN
    when not measured) and ``h100`` (text: seconds, ``over N``, or ``not measured``);
    ``t4_s`` (NaN without an estimate), ``t4_bound`` (``about``, ``at least`` or ``none``)
    and ``t4`` (text); ``cpu_s`` (NaN when not measured); ``over_h100_budget`` and
    ``over_t4_budget`` (``yes``, ``no`` or ``unknown``); ``flags`` (text, empty when both
    are ``no``).
    """
    times = load_times() if times is None else times
    chapters = book_chapters() if chapters is None else chapters
    costs = load_dominant_costs(chapters=chapters, strict=False) if costs is None else costs
    ratios = load_ratios() if ratios is None else ratios
    rows = []
    for ch in chapters:
        cost = costs.get(ch, "not recorded")
        ratio = ratios.get(cost, math.nan)
        h_row = _row(times, ch, lambda d: "H100" in str(d))
        c_row = _row(times, ch, lambda d: d == "cpu")
        cpu = (float(c_row["seconds"]) if c_row is not None and c_row["outcome"] == "finished"
               else math.nan)
        outcome = None if h_row is None else h_row["outcome"]
        if outcome == "finished":
            h, h_bound, h_text = float(h_row["seconds"]), "about", _seconds(float(h_row["seconds"]))
        elif outcome == "over the budget":
            h, h_bound = float(h_row["seconds"]), "at least"
            h_text = f"over {_seconds(h)}"
        else:  # never run there, or stopped on an error before its end
            h, h_bound = math.nan, "none"
            error = str(h_row["note"]).split(":")[0].rsplit(".", 1)[-1] if outcome else ""
            h_text = "not measured" + (f" (stopped: {error})" if outcome == "stopped" else "")
        if h_bound == "none" or ratio != ratio:  # no H100 time, or no dominant cost
            t4, t4_bound = math.nan, "none"
        else:
            t4, t4_bound = h * ratio, h_bound
            # host work cannot take longer than the whole chapter did on two CPU cores
            if cost == "host_bound" and cpu == cpu and cpu <= t4:
                t4, t4_bound = cpu, "about"
        over_h100 = ("unknown" if h_bound == "none" else "yes" if h > H100_BUDGET_S
                     else "no" if h_bound == "about" else "unknown")
        over_t4 = ("unknown" if t4_bound == "none" else "yes" if t4 > T4_BUDGET_S
                   else "no" if t4_bound == "about" else "unknown")
        t4_text = ("not estimated (no dominant cost recorded)" if ratio != ratio
                   else "not estimated (no H100 time)" if t4_bound == "none"
                   else f"~{_seconds(t4)}" if t4_bound == "about" else f">= {_seconds(t4)}")
        flags = []
        if over_h100 == "yes":
            flags.append("H100 over 10 min")
        if over_t4 == "yes":
            flags.append("T4 over 30 min")
        if ratio != ratio:
            flags.append("dominant cost not recorded")
        if h_bound == "none":
            flags.append("H100 not measured")
        elif over_h100 == "unknown":
            flags.append(f"H100 time unknown (over {_seconds(h)} s)")
        rows.append({"chapter": ch, "dominant_cost": cost, "ratio": ratio, "h100_s": h,
                     "h100": h_text, "t4_s": t4, "t4_bound": t4_bound, "t4": t4_text,
                     "cpu_s": cpu, "over_h100_budget": over_h100, "over_t4_budget": over_t4,
                     "flags": "; ".join(flags)})
    return pd.DataFrame(rows)


def main() -> int:  # pragma: no cover - a convenience: print the table
    t = colab_estimates()
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        print(t[["chapter", "dominant_cost", "h100", "t4", "cpu_s", "flags"]].to_string(index=False))
    print(RULE)
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
