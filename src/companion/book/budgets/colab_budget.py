"""Will a chapter's notebook fit a free Colab GPU?  H100 and T4 times, measured or estimated.

Issue 45's budget for a chapter's notebook at the ``gpu`` run size: at most 10 minutes on
one H100 and at most 30 minutes on a T4-class card (a free Colab GPU: a T4, 2 vCPUs).  No
T4 was measured, so its time is *estimated* (:data:`RULE`) from what was measured:

- the chapter's H100 time at the ``gpu`` size (``data/chapter_times/gpu-size-h100-*.csv``);
- the chapter's **dominant cost**, one of :data:`COSTS`, written per chapter with its reason
  in ``data/chapter_times/colab_budget.csv``, with the date its ``gpu`` size last changed
  (``gpu_size_since``: times recorded before it measured another size and are not used);
- how many times longer that kind of work takes on a T4 than on the H100 machine: the
  ratio of two vendor figures per cost, each with its source, in
  ``data/chapter_times/colab_ratios.csv`` (:func:`load_ratios`);
- the chapter's time on two CPU cores (``gpu-size-cpu-2cores.csv``, and at the ``ci`` size
  ``ci-size-cpu-2cores.csv``);
- for the chapters that train live (:mod:`companion.book.budgets.live_runs`), the H100's seconds
  per BERT-Mini step (``data/chapter_times/colab_h100_step.csv``), and the two CPU cores'
  seconds per step (:func:`cpu_step_seconds`, from a chapter measured at its former size).

**The model of the T4** (:data:`RULE`).  A chapter's time is a host part and a device part:

- the *host part* is the work of the cells that do not train on the device (Python, NumPy,
  pandas, SciPy, reading files, small tensors whose kernels take less than their launch):
  a Colab runtime does it on its host's two vCPUs, so it is the chapter's time measured on
  two CPU cores (for a chapter that trains live, its time at the ``ci`` size, where the live
  runs are tiny), plus a CUDA start-up allowance (:func:`start_up_allowance`);
- the *device part* is the live BERT-Mini training (:mod:`companion.book.budgets.live_runs`),
  steps x the T4's seconds per step, :func:`t4_step_seconds`: a roofline with a fixed part.
  The H100's measured step (``colab_h100_step.csv``) is a fixed part (kernel launches, the
  optimiser's elementwise work, the host's data feed; the same on either card) plus the
  step's counted FLOPs (``bench/results/bert_mini_step_flops.json``) at the H100's dense
  BF16 peak; on a T4, which trains in float32 (Turing has no BF16 tensor cores), the fixed
  part stays and the FLOPs run at :data:`T4_FP32_SHARE` of its FP32 peak
  (:data:`T4_FP32_TFLOPS`).  So T4 step = H100 step - FLOPs / H100 peak + FLOPs /
  (share x T4 FP32 peak) = 0.020 - 5.56e10 / 989.4e12 + 5.56e10 / (0.5 x 8.1e12) = 0.034 s.
- a chapter with a measured H100 time and a device-bound cost (``flops``, ``memory``) and no
  live plan: T4 = that time x the cost's T4/H100 ratio (the vendor figures of
  ``colab_ratios.csv``); a host-bound chapter measured on the H100: its host part (its time
  on two CPU cores; without one, the H100 time x the cores' ratio, 16 / 2).

A GPU shortens only the device part: a host-bound chapter takes about as long on a T4 as on
two CPU cores, which the status page says in its column "T4 vs CPU" (:func:`gpu_gain`).
A chapter without an H100 time gets an *estimated* one the same way: host-bound and io
chapters from their time on two CPU cores, the chapters that train live from their steps.  A chapter that trains live
and has not been timed on two CPU cores at its current ``gpu`` size gets an estimated CPU
time the same way (its ``ci``-size time plus its live steps x the CPU's seconds per step,
:data:`CPU_RULE`).  :func:`colab_estimates`
returns the table; the status page shows it
(:func:`companion.book.site.build_status.gpu_size_budget`).
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pandas as pd

from ...base.paths import ROOT
from .chapter_times import TIMES, book_chapters, check_times, drop_stale, load_size_dates, load_times, not_measured_reason, size_dates
from .live_runs import LIVE_RUNS
from .chapters_registry import budgets as registry_budgets, limits as book_limits

__all__ = ["COSTS", "H100_BUDGET_S", "T4_BUDGET_S", "BUDGET_CSV", "RATIOS_CSV", "STEP_CSV",
           "CPU_STEP_CSV", "FLOPS_JSON", "T4_FP32_TFLOPS", "T4_FP32_SHARE", "RULE", "CPU_RULE", "load_ratios",
           "load_dominant_costs", "load_step_seconds", "cpu_step_seconds", "start_up_allowance", "t4_share_needed",
           "step_flops", "h100_peak_tflops", "t4_step_seconds", "gpu_gain", "colab_estimates", "budget_words"]

COSTS = ("flops", "host_bound", "memory", "io")
"""What dominates a chapter's time: matrix products on the device (``flops``), Python,
NumPy and kernel launches on the host (``host_bound``), device memory traffic
(``memory``), reading files (``io``)."""

H100_BUDGET_S = float(book_limits()["h100_chapter_s"])   # data/limits.yaml
T4_BUDGET_S = float(book_limits()["t4_chapter_s"])
"""A chapter's notebook at the ``gpu`` size: at most 10 minutes on one H100, 30 on a T4."""

BUDGET_CSV = TIMES / "colab_budget.csv"
RATIOS_CSV = TIMES / "colab_ratios.csv"
STEP_CSV = TIMES / "colab_h100_step.csv"
CPU_STEP_CSV = TIMES / "colab_cpu_step.csv"
FLOPS_JSON = ROOT / "bench" / "results" / "bert_mini_step_flops.json"
T4_FP32_TFLOPS = 8.1
"""The T4's float32 peak (NVIDIA T4 datasheet); the live runs train float32 on a T4."""
T4_FP32_SHARE = 0.5
"""The share of its FP32 peak the T4 is taken to sustain in a BERT-Mini step's matrix
products (the model's one assumption; not measured, no T4 was lent): the step's products
are 2,048 tokens x 256 to 4,101 wide, large enough for cuBLAS to keep most of the card
busy.  At a tenth of the peak a step takes 0.089 s and the longest live chapter stays
within the T4's 30 minutes (the status page gives that figure too)."""

RULE = (
    "The T4 is modelled, not measured: a chapter's time is a host part and a device part. The "
    "host part (every cell but the live training: Python, NumPy, pandas, reading files) runs on "
    "the runtime's two vCPUs whatever the card, so it is the chapter's time measured on two CPU "
    "cores (for a chapter that trains live, its time at the ci size, where the live runs are "
    "tiny), plus a CUDA start-up allowance where no H100 time was measured. The device part is the live BERT-Mini training: "
    "steps x the T4's seconds per step, a roofline with a fixed part: the H100's measured step "
    "less the step's counted FLOPs at the H100's dense BF16 peak (989.4 TFLOPS) is the fixed "
    "part (launches, optimiser, data feed), which the T4 pays too, and the T4 does the FLOPs in "
    "float32 at half its 8.1 TFLOPS peak (an assumption). A GPU shortens only the device part, "
    "so a chapter without live training takes about as long on a T4 as on two CPU cores. "
    "A chapter measured on the H100: T4 estimate = the chapter's H100 time x the T4/H100 ratio of its dominant cost: "
    "flops, the cards' dense 16-bit tensor-core peaks (989.4 / 65 TFLOPS); memory, their "
    "bandwidths (3,350 / 320 GB/s), NVIDIA's data sheets; host-bound, the host's CPU "
    "cores (16 on the H100 machine / 2 vCPUs on Colab), capped by the chapter's measured "
    "time on two CPU cores; io, 1 (assumed). An H100 run over its budget gives a lower "
    "bound. Without an H100 time at the current gpu size the H100 time is estimated too: a "
    "host-bound or io chapter takes its time on two CPU cores plus a CUDA start-up allowance "
    "(the largest excess of an H100 time over a CPU time among the chapters measured on "
    "both) on either card; a chapter that trains live takes its time at the ci size (the "
    "same work but tiny live runs) plus the allowance plus its live steps x the H100's "
    "seconds per BERT-Mini step (on a T4, x the T4's seconds per step above). "
    "The H100 times come from one sitting of nine chapters sharing the GPU, so they are "
    "upper bounds. Estimates, not measurements.")

CPU_RULE = (
    "The CPU column is measured, except where it says estimated: a chapter that trains live "
    "and was not timed on two CPU cores at its current gpu size has its CPU time estimated as "
    "its time at the ci size (a tiny live model) plus its live runs x steps x the seconds per "
    "BERT-Mini step of symmetric_init's former gpu-size run on two cores ((that time - its "
    "ci time) / (its runs x steps), data/chapter_times/colab_cpu_step.csv; evaluations "
    "included, 15 per run at any length, so shorter runs are under-estimated by their share). "
    "A new chapter not yet timed takes the expected time its entry in data/chapters.yaml gives "
    "(cpu_s) until it is measured.")


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
        if not (0 < h < math.inf and 0 < g < math.inf) or not str(r["source"]).strip():
            raise ValueError(f"{path}: the {r['dominant_cost']} row needs two positive, finite "
                             "figures and its source")
        out[r["dominant_cost"]] = h / g
    return out


def _budget_table(path: Path | str) -> pd.DataFrame:
    t = pd.read_csv(path, keep_default_na=False, dtype=str)
    size_dates(t, path)  # refuses a gpu_size_since that is not a date
    return t


def load_dominant_costs(path: Path | str = BUDGET_CSV,
                        chapters: list[str] | None = None, strict: bool = True) -> dict[str, str]:
    """``{chapter: dominant cost}`` from ``path``: every chapter of ``chapters`` (default:
    the book's executable chapters) once, each with a cost of :data:`COSTS` and a reason.

    ``strict=False``: a chapter without a row is left out instead of refused (the status
    page then says its cost is not recorded; the tests insist on a row per chapter)."""
    t = _budget_table(path)
    chapters = book_chapters() if chapters is None else chapters
    bad = t[~t["dominant_cost"].isin(COSTS) | (t["reason"].str.strip() == "")]
    if not bad.empty:
        raise ValueError(f"{path}: {list(bad['chapter'])} need a cost of {COSTS} and a reason")
    if t["chapter"].duplicated().any():
        raise ValueError(f"{path}: {sorted(set(t.loc[t['chapter'].duplicated(), 'chapter']))} "
                         "listed twice")
    # a chapter not yet in the table: its cost from its entry in data/chapters.yaml
    extra = ({c: b["cost"] for c, b in registry_budgets().items()}
             if Path(path) == BUDGET_CSV else {})
    both = sorted(set(extra) & set(t["chapter"]))
    if both:
        raise ValueError(f"{path}: {both} listed twice (here and with a budget in data/chapters.yaml); "
                         "keep the row here and drop the entry's budget")
    missing = [c for c in chapters if c not in set(t["chapter"]) and c not in extra]
    if missing and strict:
        raise ValueError(f"{path} has no dominant cost for {missing}; add a row per chapter "
                         "(or, for a chapter not timed yet, a budget to its entry in data/chapters.yaml)")
    return {**dict(zip(t["chapter"], t["dominant_cost"])), **extra}


def load_step_seconds(path: Path | str = STEP_CSV) -> float:
    """The H100's seconds per BERT-Mini training step (one run alone), with its source."""
    t = pd.read_csv(path, keep_default_na=False)
    rows = t[t["model_size"] == "bert-mini"]
    if len(rows) != 1 or not 0 < float(rows.iloc[0]["seconds_per_step"]) < math.inf \
            or not str(rows.iloc[0]["source"]).strip():
        raise ValueError(f"{path}: one bert-mini row with positive seconds_per_step and a "
                         "source is needed")
    return float(rows.iloc[0]["seconds_per_step"])


def cpu_step_seconds(path: Path | str = CPU_STEP_CSV) -> float:
    """Seconds per BERT-Mini step of a chapter's live runs on two CPU cores, evaluations
    included, from the one former measurement recorded in ``path``: the chapter's two-core
    time at a former, larger ``gpu`` size minus its ``ci``-size time (which trains only a tiny
    model), over its runs x steps per run.  The measurement is kept in ``path`` itself because
    timing the chapter again replaces its row in ``gpu-size-cpu-2cores.csv``."""
    t = pd.read_csv(path, keep_default_na=False, dtype=str)
    need = ("chapter", "runs", "steps_per_run", "seconds", "ci_seconds", "date", "note")
    if len(t) != 1 or set(need) - set(t.columns) or not t.iloc[0]["note"].strip():
        raise ValueError(f"{path}: one row with {need} (and a note saying where it was measured) is needed")
    r = t.iloc[0]
    try:
        runs, steps, secs, ci = int(r["runs"]), int(r["steps_per_run"]), float(r["seconds"]), float(r["ci_seconds"])
    except ValueError:
        raise ValueError(f"{path}: runs and steps_per_run must be whole numbers, seconds and ci_seconds numbers") from None
    if not (runs > 0 and steps > 0 and math.inf > secs > ci >= 0):
        raise ValueError(f"{path}: runs and steps must be positive and seconds larger than ci_seconds")
    return (secs - ci) / (runs * steps)


def t4_share_needed(step_s: float | None = None, ratio: float | None = None,
                    flops_json: Path | str = FLOPS_JSON) -> float:
    """The share of the T4's float32 peak a BERT-Mini step must sustain for the per-step
    T4 estimate (``step_s x ratio``) to hold: counted FLOPs per step / (estimate x peak)."""
    step_s = load_step_seconds() if step_s is None else step_s
    ratio = load_ratios()["flops"] if ratio is None else ratio
    flops = max(json.loads(Path(flops_json).read_text())["flops_per_step"].values())
    return flops / (step_s * ratio * T4_FP32_TFLOPS * 1e12)


def step_flops(flops_json: Path | str = FLOPS_JSON) -> float:
    """FLOPs of one BERT-Mini training step, the larger of the counted modes
    (``bench/results/bert_mini_step_flops.json``, ``torch.utils.flop_counter``)."""
    return float(max(json.loads(Path(flops_json).read_text())["flops_per_step"].values()))


def h100_peak_tflops(path: Path | str = RATIOS_CSV) -> float:
    """The H100's dense BF16 tensor-core peak, TFLOPS: the ``h100`` figure of the ``flops``
    row of ``colab_ratios.csv`` (NVIDIA's data sheet)."""
    t = pd.read_csv(path, keep_default_na=False)
    rows = t[t["dominant_cost"] == "flops"]
    if len(rows) != 1:
        raise ValueError(f"{path}: one flops row is needed for the H100's peak")
    return float(rows.iloc[0]["h100"])


def t4_step_seconds(step_s: float | None = None, flops: float | None = None,
                    h100_tflops: float | None = None, t4_tflops: float = T4_FP32_TFLOPS,
                    share: float = T4_FP32_SHARE) -> float:
    """The T4's seconds per BERT-Mini training step, from a model of the card: a roofline
    with a fixed part.

    The H100's measured step ``step_s`` is a fixed part (kernel launches, the optimiser's
    elementwise work, the host's data feed: work that does not get faster on a faster card)
    plus the step's ``flops`` at the H100's dense BF16 peak ``h100_tflops``; on a T4 the fixed
    part stays and the FLOPs run in float32 at ``share`` of its FP32 peak ``t4_tflops``::

        t4 = step_s - flops / h100_peak + flops / (share x t4_peak)
    """
    step_s = load_step_seconds() if step_s is None else step_s
    flops = step_flops() if flops is None else flops
    h100_tflops = h100_peak_tflops() if h100_tflops is None else h100_tflops
    if not (step_s > 0 and flops > 0 and h100_tflops > 0 and t4_tflops > 0 and 0 < share <= 1):
        raise ValueError("t4_step_seconds needs positive step seconds, FLOPs and peaks, and a share "
                         f"in (0, 1]; got {step_s}, {flops}, {h100_tflops}, {t4_tflops}, {share}")
    fixed = step_s - flops / (h100_tflops * 1e12)
    if fixed < 0:
        raise ValueError(f"an H100 step of {step_s} s is shorter than its FLOPs at the peak; "
                         "check colab_h100_step.csv")
    return fixed + flops / (share * t4_tflops * 1e12)


def gpu_gain(cpu_s: float, t4_s: float) -> str:
    """What a T4 runtime saves over two CPU cores, in words: ``"7.0x faster"``, or ``"none
    (host work)"`` when the T4 estimate is within a fifth of the CPU time (a chapter whose
    time is host work, which the card does not run), ``"unknown"`` without both times."""
    if not (_known(cpu_s) and _known(t4_s)) or t4_s <= 0:
        return "unknown"
    gain = cpu_s / t4_s
    return f"{gain:.1f}x faster" if gain >= 1.2 else "none (host work)"


def _row(times: pd.DataFrame, chapter: str, size: str, is_device) -> pd.Series | None:
    rows = times[(times["chapter"] == chapter) & (times["size"] == size)
                 & times["device"].map(is_device).astype(bool)]
    return None if rows.empty else rows.sort_values("date").iloc[-1]


def _finished(row) -> float:
    return float(row["seconds"]) if row is not None and row["outcome"] == "finished" else math.nan


def _is_h100(d) -> bool:
    """An H100 by its device name ('NVIDIA H100 80GB HBM3', 'H100-SXM'), not a name that only
    holds the letters ('GH1000', 'cpu (beside an H100)')."""
    name = str(d)
    return not name.startswith("cpu") and re.search(r"(?<![A-Za-z0-9])H100(?![0-9])", name) is not None


def _is_cpu(d) -> bool:
    return d == "cpu"


def _known(x: float) -> bool:
    """A number that was measured or estimated (not NaN)."""
    return not math.isnan(x)


def start_up_allowance(times: pd.DataFrame, costs: dict[str, str]) -> float:
    """Seconds to add to a host-bound chapter's CPU time for a GPU run: the largest
    ``H100 - CPU`` excess among host-bound chapters that finished on both in ``times``
    (0 if none took longer on the H100; CUDA's start-up is the excess of a short chapter)."""
    excess = [0.0]
    for ch, cost in costs.items():
        if cost != "host_bound":
            continue
        h = _finished(_row(times, ch, "gpu", _is_h100))
        c = _finished(_row(times, ch, "gpu", _is_cpu))
        if _known(h) and _known(c):
            excess.append(h - c)
    return max(excess)


def _seconds(s: float, lower: bool = False, mark: float | None = None) -> str:
    """``s`` in whole seconds with thousands separated; a ``lower`` bound (a time the chapter
    ran *over*, at least) rounded down, so that it never claims more than was measured.  With
    a ``mark`` (a budget), the fewest decimals that keep ``s`` on its own side of it: 600.3 s
    against 600 reads ``600.3``, never ``600`` beside a flag saying it is over, and 600.0001
    reads ``600.0001``, never ``600.000``.  The rule of :func:`companion.base.phrasing.side_by_side`
    (each value on its own side of the mark), in decimals: that one writes significant digits
    (``1.23e+03`` for 1,234.5 s), a time is written in whole seconds with separators."""
    if lower:
        return f"{math.floor(s):,}"
    for digits in range(18):   # 17 decimals tell any time from its budget
        shown = float(f"{s:.{digits}f}")
        if mark is None or not _known(mark) or ((shown > mark) == (s > mark) and (shown < mark) == (s < mark)):
            break
    return f"{s:,.{digits}f}"


def budget_words(seconds: float, long: bool = False) -> str:
    """A budget in words: ``10 min`` (``long``: ``10 minutes``) for a whole number of minutes,
    else ``630 s`` (``630 seconds``)."""
    if seconds % 60 == 0:
        return f"{seconds / 60:g} {'minutes' if long else 'min'}"
    return f"{seconds:g} {'seconds' if long else 's'}"


def colab_estimates(times: pd.DataFrame | None = None, costs: dict[str, str] | None = None,
                    ratios: dict[str, float] | None = None,
                    chapters: list[str] | None = None, since: dict[str, str] | None = None,
                    step_s: float | None = None,
                    live: dict[str, tuple[int, dict[str, int]]] | None = None,
                    cpu_step_s: float | None = None, t4_step_s: float | None = None) -> pd.DataFrame:
    """Per chapter at the ``gpu`` size: the H100 time (measured or estimated), the T4
    estimate, the time on two CPU cores, and the flags of issue 45's budget (:data:`RULE`).

    Columns: ``chapter``; ``dominant_cost`` (``not recorded`` for a chapter without a row in
    ``colab_budget.csv``: no estimate then); ``ratio`` (T4/H100 for that cost);
    ``h100_s`` (the H100 time, its lower bound when the run went over its budget, or its
    estimate; NaN when none), ``h100_source`` (``measured``, ``measured, over budget``,
    ``estimated`` or ``none``) and ``h100`` (text); ``t4_s`` (NaN without an estimate),
    ``t4_bound`` (``about``, ``at least`` or ``none``) and ``t4`` (text); ``cpu_s`` (NaN
    when neither measured at the current gpu size nor estimated), ``cpu_source``
    (``measured``, ``estimated`` by :data:`CPU_RULE`, or ``none``) and ``cpu`` (text); ``over_h100_budget`` and
    ``over_t4_budget`` (``yes``, ``no`` or ``unknown``); ``t4_vs_cpu`` (:func:`gpu_gain`);
    ``flags`` (text, empty when both are ``no`` and the H100 time was measured).

    The texts say "estimated" once: ``cpu`` is ``~N`` for an estimate (its source in
    ``cpu_source``), ``t4`` a number of seconds (every T4 time is an estimate), and an H100
    run that did not reach its end reads "not measured" with the reason
    (:func:`companion.book.budgets.chapter_times.not_measured_reason`), never a stop.

    ``since``: ``{chapter: date}`` the chapter's gpu size last changed (default: the
    ``gpu_size_since`` column); earlier gpu-size times are ignored.  ``step_s``: the H100's
    seconds per BERT-Mini step; ``live``: the live training plans (default
    :data:`companion.book.budgets.live_runs.LIVE_RUNS`); ``cpu_step_s``: two CPU cores' seconds per
    BERT-Mini step (default :func:`cpu_step_seconds`, read only when a chapter needs it);
    ``t4_step_s``: the T4's seconds per BERT-Mini step (default :func:`t4_step_seconds`, from
    ``step_s``).
    """
    times = load_times() if times is None else check_times(times, "the times table")
    chapters = book_chapters() if chapters is None else chapters
    costs = load_dominant_costs(chapters=chapters, strict=False) if costs is None else costs
    ratios = load_ratios() if ratios is None else ratios
    times = drop_stale(times, load_size_dates() if since is None else since)
    live = LIVE_RUNS if live is None else live
    allowance = start_up_allowance(times, costs)
    expected = {c: float(b["cpu_s"]) for c, b in registry_budgets().items()}  # data/chapters.yaml
    rows = []
    for ch in chapters:
        cost = costs.get(ch, "not recorded")
        ratio = ratios.get(cost, math.nan)
        h_row = _row(times, ch, "gpu", _is_h100)
        cpu = _finished(_row(times, ch, "gpu", _is_cpu))
        outcome = None if h_row is None else h_row["outcome"]
        t4 = math.nan
        cpu_source = "measured" if _known(cpu) else "none"
        if not _known(cpu) and ch in expected and ch not in live:  # its entry's cpu_s, until measured
            cpu = cpu_est = expected[ch]
            cpu_source = "estimated"
        # a live chapter's time at the ci size: everything but its BERT-Mini steps
        host = _finished(_row(times, ch, "ci", _is_cpu)) if ch in live else math.nan
        if not _known(cpu) and ch in live:
            runs, steps = live[ch]
            if _known(host):
                if cpu_step_s is None:
                    cpu_step_s = cpu_step_seconds()     # read once, when a chapter needs it
                cpu_est = host + runs * steps["gpu"] * cpu_step_s
                cpu_source = "estimated"
        cpu_text = (_seconds(cpu) if cpu_source == "measured"
                    else f"~{_seconds(cpu_est)}" if cpu_source == "estimated"
                    else "not measured")
        if outcome == "finished":
            h, h_source, h_text = float(h_row["seconds"]), "measured", _seconds(float(h_row["seconds"]), mark=H100_BUDGET_S)
        elif outcome == "over the budget":
            h, h_source = float(h_row["seconds"]), "measured, over budget"
            h_text = f"over {_seconds(h, lower=True)}"
        else:  # never run there at this size, or stopped on an error before its end
            h, h_source = math.nan, "none"
            why = (f"not measured: {not_measured_reason(str(h_row['note']), 'the H100 machine')}"
                   if outcome == "stopped" else "not measured")
            if _known(ratio) and ch in live:
                runs, steps = live[ch]
                if step_s is None:
                    step_s = load_step_seconds()
                if _known(host):
                    if t4_step_s is None:
                        t4_step_s = t4_step_seconds(step_s)
                    h, h_source = host + allowance + step_s * runs * steps["gpu"], "estimated"
                    t4 = host + allowance + t4_step_s * runs * steps["gpu"]
            elif _known(ratio) and cost in ("host_bound", "io") and cpu_source != "none":
                h, h_source = cpu + allowance, "estimated"
                t4 = h
            h_text = (f"~{_seconds(h, mark=H100_BUDGET_S)} (estimated; {why})" if h_source == "estimated"
                      else f"not measured ({why.removeprefix('not measured: ')})" if outcome == "stopped"
                      else "not measured")
        if h_source == "none" or not _known(ratio):
            t4, t4_bound = math.nan, "none"
        elif h_source == "estimated":
            t4_bound = "about"
        else:
            t4, t4_bound = h * ratio, "about" if h_source == "measured" else "at least"
            # host work cannot take longer than the whole chapter did on two CPU cores
            if cost == "host_bound" and _known(cpu) and cpu <= t4:
                t4, t4_bound = cpu, "about"
        over_h100 = ("unknown" if h_source == "none" else "yes" if h > H100_BUDGET_S
                     else "unknown" if h_source == "measured, over budget" else "no")
        over_t4 = ("unknown" if t4_bound == "none" else "yes" if t4 > T4_BUDGET_S
                   else "no" if t4_bound == "about" else "unknown")
        t4_text = ("not estimated (no dominant cost recorded)" if not _known(ratio)
                   else "not estimated (no H100 time, no CPU time)" if t4_bound == "none"
                   else _seconds(t4, mark=T4_BUDGET_S) if t4_bound == "about" else f">= {_seconds(t4, lower=True)}")
        flags = []
        if over_h100 == "yes":   # the budgets of data/limits.yaml, never a number typed here
            flags.append(f"H100 over {budget_words(H100_BUDGET_S)}")
        if over_t4 == "yes":
            flags.append(f"T4 over {budget_words(T4_BUDGET_S)}")
        if not _known(ratio):
            flags.append("dominant cost not recorded")
        if h_source == "none":
            flags.append("H100 not measured nor estimated")
        elif h_source == "estimated":
            flags.append("H100 estimated")
        elif over_h100 == "unknown":
            flags.append(f"H100 time unknown (over {_seconds(h, lower=True)} s)")
        cpu_s = cpu_est if cpu_source == "estimated" else cpu
        rows.append({"chapter": ch, "dominant_cost": cost, "ratio": ratio, "h100_s": h,
                     "h100_source": h_source, "h100": h_text, "t4_s": t4, "t4_bound": t4_bound,
                     "t4": t4_text, "cpu_s": cpu_s,
                     "cpu_source": cpu_source, "cpu": cpu_text, "over_h100_budget": over_h100,
                     "over_t4_budget": over_t4, "t4_vs_cpu": gpu_gain(cpu_s, t4) if t4_bound == "about" else "unknown",
                     "flags": "; ".join(flags)})
    return pd.DataFrame(rows)


def main() -> int:  # pragma: no cover - a convenience: print the table
    t = colab_estimates()
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        print(t[["chapter", "dominant_cost", "h100", "t4", "cpu", "t4_vs_cpu", "flags"]].to_string(index=False))
    print(RULE)
    print(CPU_RULE)
    print(f"A BERT-Mini step on a T4 by the model: {t4_step_seconds():.3f} s.")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
