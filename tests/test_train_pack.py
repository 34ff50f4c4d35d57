"""companion.train.runner.pack: runs packed on one device finish in the jobs file's order of
priority, the last ones are stopped first when the set would miss its deadline, and bad
jobs files or too many runs for the device are refused before any run starts.

The runs here are a stand-in for ``companion train`` (a small script given as the packer's
Python), which prints the same progress lines at a pace set per job, so the packer's
decisions are checked against paces we chose, without training anything."""
import json
import sys
import textwrap

import pytest

from companion.base.errors import CompanionError
from companion.train.runner.pack import Job, check_fits, choose_to_stop, parse_jobs, run_packed

FAKE_TRAIN = textwrap.dedent(f"""\
    #!{sys.executable}
    # stand-in for `python -m companion.train.cli ... --steps N --pace S --out DIR`
    import sys, time, pathlib
    a = sys.argv[3:]
    steps = int(a[a.index("--steps") + 1]); pace = float(a[a.index("--pace") + 1])
    out = pathlib.Path(a[a.index("--out") + 1]); out.mkdir(parents=True)
    t0 = time.time()
    for s in range(0, steps + 1):
        if s:
            time.sleep(pace)
        print(f"[{{out}}] step {{s}}/{{steps}} eval_loss 1.0 elapsed {{time.time() - t0:.2f}}s", flush=True)
    (out / "history.csv").write_text("step,value\\n")
    """)


@pytest.fixture
def fake_python(tmp_path):
    path = tmp_path / "fakepy"
    path.write_text(FAKE_TRAIN)
    path.chmod(0o755)
    return str(path)


def test_runs_that_fit_the_deadline_all_finish(tmp_path, fake_python):
    jobs = parse_jobs("a --steps 4 --pace 0.05\nb --steps 6 --pace 0.05\n")
    summary = run_packed(jobs, tmp_path / "out", parallel=2, deadline_s=30, python=fake_python,
                         poll_s=0.05, echo=lambda *_: None)
    assert [r["status"] for r in summary["runs"]] == ["finished", "finished"]
    assert [r["steps"] for r in summary["runs"]] == [4, 6]
    # seconds per step from the progress lines, against the pace we set (sleep is a lower bound)
    for r in summary["runs"]:
        assert 0.045 <= r["seconds_per_step"] < 0.5  # elapsed is printed to 0.01 s
    assert json.loads((tmp_path / "out" / "pack_summary.json").read_text()) == summary


def test_the_last_runs_in_the_order_are_stopped_first_when_the_set_would_miss_the_deadline(tmp_path, fake_python):
    # a: finishes in ~0.6 s; b and c: 100 steps at 0.1 s, projected ~10 s past a 3 s deadline
    jobs = parse_jobs("a --steps 3 --pace 0.2\nb --steps 100 --pace 0.1\nc --steps 100 --pace 0.1\n")
    said = []
    summary = run_packed(jobs, tmp_path / "out", parallel=3, deadline_s=3, python=fake_python,
                         poll_s=0.05, grace_s=0.3, echo=said.append)
    status = {r["name"]: r for r in summary["runs"]}
    assert status["a"]["status"] == "finished"
    assert status["b"]["status"] == status["c"]["status"] == "stopped"
    assert "projected" in status["c"]["reason"]
    stops = [line.split()[1].rstrip(":") for line in said if line.startswith("stopped")]
    assert stops.index("c") < stops.index("b")  # c (last in the file) goes first
    assert not (tmp_path / "out" / "c" / "history.csv").exists()


def test_a_queued_run_is_not_started_once_the_deadline_forced_a_stop(tmp_path, fake_python):
    jobs = parse_jobs("a --steps 100 --pace 0.1\nb --steps 100 --pace 0.1\nc --steps 2 --pace 0.01\n")
    summary = run_packed(jobs, tmp_path / "out", parallel=2, deadline_s=2, python=fake_python,
                         poll_s=0.05, grace_s=0.3, echo=lambda *_: None)
    c = [r for r in summary["runs"] if r["name"] == "c"][0]
    assert c["status"] == "stopped" and c["reason"].startswith("not started")
    assert not (tmp_path / "out" / "c").exists()


def test_a_run_that_fails_is_reported_failed_not_finished(tmp_path, fake_python):
    jobs = parse_jobs("a --steps 2 --pace 0.01\nbad --steps two --pace 0.01\n")
    summary = run_packed(jobs, tmp_path / "out", parallel=2, deadline_s=30, python=fake_python,
                         poll_s=0.05, echo=lambda *_: None)
    by = {r["name"]: r for r in summary["runs"]}
    assert by["a"]["status"] == "finished"
    assert by["bad"]["status"] == "failed" and "bad.log" in by["bad"]["reason"]


def test_choose_to_stop_needs_a_pace_and_a_second_run():
    fast, slow = Job("fast", ["x"]), Job("slow", ["x"])
    fast.progress = [(0, 100, 0.0), (10, 100, 1.0), (20, 100, 2.0)]   # 0.1 s/step, 8 s left
    slow.progress = [(0, 100, 0.0), (10, 100, 1.0)]                   # one line after 0: no pace yet
    assert fast.projected_finish(0.0) == pytest.approx(8.0)
    assert slow.projected_finish(0.0) is None
    assert choose_to_stop([fast, slow], remaining_s=5.0) is slow      # fast is late: stop the last
    assert choose_to_stop([fast, slow], remaining_s=9.0) is None      # everyone fits
    assert choose_to_stop([fast], remaining_s=1.0) is None            # never stop the only run


@pytest.mark.parametrize("text, words", [
    ("", "names no run"),
    ("a --steps 2\na --steps 3\n", "appears twice"),
    ("a/b --steps 2\n", "plain folder name"),
    ("a --steps 2 --out /tmp/x\n", "leave --out off"),
    ("a\n", "no training options"),
])
def test_bad_jobs_files_are_refused_with_the_line(text, words):
    with pytest.raises(CompanionError, match=words):
        parse_jobs(text)


def test_more_runs_than_the_device_holds_are_refused_with_the_number_that_fits():
    check_fits(16, 2 * 2**30, 78 * 2**30, "H100")  # fits: no error
    with pytest.raises(CompanionError, match=r"--parallel 7 or fewer"):
        check_fits(16, 2 * 2**30, 15 * 2**30, "a small GPU")


def test_finished_runs_in_the_output_folder_are_never_overwritten(tmp_path, fake_python):
    (tmp_path / "out" / "a").mkdir(parents=True)
    (tmp_path / "out" / "a" / "history.csv").write_text("step\n")
    with pytest.raises(CompanionError, match="already holds finished runs a"):
        run_packed(parse_jobs("a --steps 2 --pace 0.01\n"), tmp_path / "out", 1, 10, python=fake_python)
    assert (tmp_path / "out" / "a" / "history.csv").read_text() == "step\n"
