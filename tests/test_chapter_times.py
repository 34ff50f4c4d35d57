"""Chapter timing: what a finished, a failing and an over-budget chapter are recorded as,
and how the intro's table is assembled from the recorded files."""

from pathlib import Path

import pandas as pd
import pytest

from companion.book.budgets.chapter_times import (COLUMNS, Timing, book_chapters, load_times, record, time_chapter,
                                     time_chapters, times_table)
from companion.book.editions.notebooks import JUPYTEXT_HEADER as HEADER


def chapter(tmp_path, name, code):
    (tmp_path / f"{name}.md").write_text(HEADER + f"\n# {name}\n\n```{{code-cell}} ipython3\n{code}\n```\n")
    return name


def test_a_chapter_sees_the_run_size_and_finishes(tmp_path):
    name = chapter(tmp_path, "ok", "import os\nassert os.environ['COMPANION_RUN_SIZE'] == 'gpu'")
    t = time_chapter(name, "gpu", budget=120, book=tmp_path)
    assert t.outcome == "finished" and 0 < t.seconds < 120


def test_each_chapter_computes_its_verdicts_in_an_empty_cache_of_its_own(tmp_path, monkeypatch):
    """A chapter's time is its own: the verdicts another chapter left in the shared cache
    (the book's kernels default to _build/.verdict_cache) are not there to be read."""
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "all_verdicts-0123.json").write_text("{}")
    monkeypatch.setenv("COMPANION_VERDICT_CACHE", str(shared))
    code = ("import os\nfrom pathlib import Path\nc = Path(os.environ['COMPANION_VERDICT_CACHE'])\n"
            f"assert c != Path({str(shared)!r}), c\nassert c.is_dir() and not any(c.iterdir()), c\n"
            f"Path({str(tmp_path / 'seen.txt')!r}).write_text(str(c))")
    first = time_chapter(chapter(tmp_path, "a", code), "ci", budget=120, book=tmp_path)
    second = time_chapter(chapter(tmp_path, "b", code), "ci", budget=120, book=tmp_path)
    assert first.outcome == second.outcome == "finished", (first.note, second.note)
    seen = Path((tmp_path / "seen.txt").read_text())
    assert not seen.exists(), "the chapter's private cache is left behind"


def test_the_child_that_runs_a_chapter_imports_neither_the_package_nor_torch_nor_pandas(tmp_path):
    """Each chapter's child process starts only its kernel: importing this module there would
    import torch and pandas first, which the kernel then imports again."""
    import subprocess
    import sys

    from companion.book.budgets.chapter_times import CHILD

    name = chapter(tmp_path, "lean", f"from pathlib import Path\nPath({str(tmp_path / 'ran')!r}).write_text('yes')")
    probe = CHILD + "print(sorted({'companion', 'torch', 'pandas'} & set(sys.modules)))\n"
    out = subprocess.run([sys.executable, "-c", probe, str(tmp_path / f"{name}.md"), "120"],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-500:]
    assert out.stdout.strip().splitlines()[-1] == "[]"
    assert (tmp_path / "ran").read_text() == "yes"   # the chapter's cell ran in its kernel


def test_a_failing_assert_stops_the_chapter_and_is_named(tmp_path):
    name = chapter(tmp_path, "bad", "assert 1 + 1 == 3, 'arithmetic'")
    t = time_chapter(name, "ci", budget=120, book=tmp_path)
    assert t.outcome == "stopped" and "AssertionError" in t.note


def test_a_chapter_over_its_budget_is_stopped_with_the_budget_as_bound(tmp_path):
    name = chapter(tmp_path, "slow", "import time\ntime.sleep(60)")
    t = time_chapter(name, "ci", budget=8, book=tmp_path)
    assert t.outcome == "over the budget" and t.seconds == 8


def test_unknown_size_and_missing_chapter_are_refused(tmp_path):
    with pytest.raises(ValueError, match="unknown run size"):
        time_chapter("intro", "huge", 10)
    with pytest.raises(FileNotFoundError, match="no chapter 'nope'"):
        time_chapter("nope", "ci", 10, book=tmp_path)


def test_records_replace_the_same_chapter_size_and_device(tmp_path):
    csv = tmp_path / "t.csv"
    record([Timing("intro", "gpu", 10.0, "finished")], csv, "cpu", 2)
    record([Timing("intro", "gpu", 12.0, "finished"), Timing("errata", "gpu", 5.0, "finished")], csv, "cpu", 2)
    t = pd.read_csv(csv)
    assert list(t.columns) == COLUMNS and len(t) == 2
    assert t.set_index("chapter").at["intro", "seconds"] == 12.0


def test_the_table_has_one_column_per_size_and_device(tmp_path):
    record([Timing("intro", "ci", 47.0, "finished"), Timing("survey", "ci", 400.0, "finished")],
           tmp_path / "a.csv", "cpu", 2)
    record([Timing("survey", "gpu", 470.0, "over the budget", "did not finish within 470 s")],
           tmp_path / "b.csv", "NVIDIA H100 80GB HBM3", 16)
    table = times_table(load_times(tmp_path))
    assert table.at["intro", "ci size, CPU, 2 cores"] == "47 s"
    assert table.at["survey", "ci size, CPU, 2 cores"] == "7 min"
    assert table.at["survey", "gpu size, NVIDIA H100 80GB HBM3"] == "over 7 min"   # 470 s is 7.8 min: over 7, not over 8
    assert table.at["intro", "gpu size, NVIDIA H100 80GB HBM3"] == "not measured"


def test_a_file_without_the_columns_is_refused(tmp_path):
    (tmp_path / "x.csv").write_text("chapter,seconds\nintro,3\n")
    with pytest.raises(ValueError, match="lacks the columns"):
        load_times(tmp_path)


def test_the_recorded_files_name_only_chapters_of_the_book():
    t = load_times()
    assert set(t["chapter"]) <= set(book_chapters())
    assert set(t["outcome"]) <= {"finished", "stopped", "over the budget"}


def test_jobs_run_chapters_at_the_same_time_and_report_in_the_given_order(tmp_path):
    # "waits" finishes only if "signals" runs while it waits: true with two jobs, not with one
    flag = tmp_path / "flag"
    waits = chapter(tmp_path, "waits", f"import pathlib, time\nt = time.time()\n"
                                       f"while not pathlib.Path({str(flag)!r}).exists():\n"
                                       f"    assert time.time() - t < 15, 'nobody signalled'\n    time.sleep(0.1)")
    signals = chapter(tmp_path, "signals", f"import pathlib\npathlib.Path({str(flag)!r}).touch()")
    seen = []
    both = time_chapters([waits, signals], "ci", budget=120, jobs=2, book=tmp_path, on_done=seen.append)
    assert [t.chapter for t in both] == ["waits", "signals"]
    assert [t.outcome for t in both] == ["finished", "finished"]
    assert sorted(t.chapter for t in seen) == ["signals", "waits"]
    flag.unlink()
    alone = time_chapters([waits, signals], "ci", budget=120, jobs=1, book=tmp_path)
    assert alone[0].outcome == "stopped" and "nobody signalled" in alone[0].note
    with pytest.raises(ValueError, match="jobs must be"):
        time_chapters([waits], "ci", budget=10, jobs=0, book=tmp_path)


def test_tables_beside_the_timing_files_are_not_read_as_timings(tmp_path):
    # data/chapter_times/ also holds colab_budget.csv and colab_ratios.csv
    (tmp_path / "gpu-size-cpu-2cores.csv").write_text(
        ",".join(COLUMNS) + "\nintro,gpu,cpu,2,3.0,finished,,2026-11-25\n")
    (tmp_path / "colab_budget.csv").write_text("chapter,dominant_cost,reason\nintro,io,x\n")
    (tmp_path / "colab_ratios.csv").write_text("dominant_cost,quantity,h100,t4,unit,source\n")
    t = load_times(tmp_path)
    assert list(t["chapter"]) == ["intro"] and list(t["source"]) == ["gpu-size-cpu-2cores.csv"]
