"""The authors'-setting body as a Slurm job array (data/runs/chars_slurm.sh): one task a run of
the registered body, each running make_chars_runs.sh's own resumable command for its run; two
tasks are run here, without Slurm, at a tiny size."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "data/runs/chars_slurm.sh"
RUNS = ROOT / "data/runs"
# the runs' own variables: none may leak from the shell that runs the tests into a task
RUN_VARS = ("PY", "WORK", "COMPANION_RUNS_WORK", "STEPS", "EVERY", "WARMUP", "DEVICE_ARGS", "LIMIT",
            "RUN_NICE", "RUNS_LOG", "SLURM_ARRAY_TASK_ID", "DRY")


def _env(**extra):
    env = {k: v for k, v in os.environ.items() if k not in RUN_VARS}
    return {**env, **extra}


def _write(tmp_path, name="body.sbatch", **extra):
    out = subprocess.run(["bash", str(SCRIPT), str(tmp_path / name)], env=_env(**extra), capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return tmp_path / name


def _registered_names():
    from companion.rules.rulebook import load_rules

    body = load_rules()["bodies"]["wikipedia-chars-v4"]
    return {f"charsv4-bert-mini-{a.replace('/', '-')}-s{s}"
            for a in body["arms"] + body["secondary_arms"] for s in body["seeds"]}


def _names(text):
    return re.findall(r"^  (charsv4-\S+)  # (\d+)$", text, re.M)


def test_the_array_has_one_task_for_each_run_of_the_registered_body(tmp_path):
    """--array=0-N%K with N + 1 the body's runs as the rules file registers them (seeds times
    arms), its names those runs in make_chars_runs.sh's order, and the Slurm options as asked."""
    text = _write(tmp_path, PARTITION="short", TIME="1-00:00:00", CPUS="2", AT_ONCE="5").read_text()
    want = _registered_names()
    array = re.findall(r"^#SBATCH --array=0-(\d+)%(\d+)$", text, re.M)
    assert array == [(str(len(want) - 1), "5")]
    names = _names(text)
    assert [int(i) for _, i in names] == list(range(len(want))) and {n for n, _ in names} == want
    order = subprocess.run(["bash", str(RUNS / "make_chars_runs.sh"), "--list"], env=_env(),
                           capture_output=True, text=True, timeout=60).stdout.split()
    assert [n for n, _ in names] == order
    for option in ("--partition=short", "--time=1-00:00:00", "--cpus-per-task=2"):
        assert f"#SBATCH {option}\n" in text
    default = subprocess.run(["bash", str(SCRIPT)], env=_env(), capture_output=True, text=True, timeout=60).stdout
    assert "--partition" not in default and "#SBATCH --time=06:00:00\n" in default
    # a variable of the runs not set when the file was written is unset in every task
    assert "unset STEPS\n" in default and "unset WORK\n" in default and "export PY=" in default


@pytest.mark.parametrize("var, value, says", [("TIME", "6h", "TIME=6h is not a Slurm time limit"),
                                              ("CPUS", "0", "CPUS=0 is not a positive"),
                                              ("LIMIT", "0", "names no run")])
def test_bad_settings_are_refused_in_one_line(tmp_path, var, value, says):
    out = subprocess.run(["bash", str(SCRIPT), str(tmp_path / "x.sbatch")], env=_env(**{var: value}),
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and says in out.stderr and out.stderr.count("\n") == 1
    assert not (tmp_path / "x.sbatch").exists()


def test_a_task_outside_the_array_or_of_a_changed_list_is_refused(tmp_path):
    batch = _write(tmp_path)
    out = subprocess.run(["bash", str(batch)], env=_env(SLURM_ARRAY_TASK_ID="48"), capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 2 and "not a task of this array (0 to 47)" in out.stderr
    assert out.stderr.count("\n") == 1
    text = batch.read_text()
    first = _names(text)[0][0]
    batch.write_text(text.replace(f"  {first}  # 0", "  charsv4-bert-mini-encoder-standard-s99  # 0"))
    stale = subprocess.run(["bash", str(batch)], env=_env(SLURM_ARRAY_TASK_ID="0"), capture_output=True,
                           text=True, timeout=60)
    assert stale.returncode == 2 and f"is now '{first}'" in stale.stderr and stale.stderr.count("\n") == 1


@pytest.mark.slow
def test_two_tasks_run_here_at_a_tiny_size_and_land_nothing(tmp_path):
    """Two tasks of the array, started as Slurm starts them (SLURM_ARRAY_TASK_ID), side by side:
    each trains its run with the body's command into its work folder, records its sitting's
    device, and lands nothing in data/runs."""
    work, log = tmp_path / "work", tmp_path / "progress.log"
    batch = _write(tmp_path, PY=sys.executable, STEPS="8", EVERY="4", WARMUP="2", WORK=str(work),
                   RUNS_LOG=str(log), DEVICE_ARGS="--threads 1 --cpu-bf16 --eval-blocks 16")
    names = dict(_names(batch.read_text()))
    # the last run of the authors' decoder and of the true decoder: far from landing (the last look)
    picks = [max((n for n in names if f"-{arm}-standard-" in n and "-s8" in n), key=lambda n: int(names[n]))
             for arm in ("authors-decoder", "bert-mini-decoder")]
    assert len(set(picks)) == 2 and not any((RUNS / n / "history.csv").exists() for n in picks)
    tasks = [subprocess.Popen(["bash", str(batch)], env=_env(SLURM_ARRAY_TASK_ID=names[n]), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for n in picks]
    outs = [t.communicate(timeout=300) for t in tasks]
    for name, task, (stdout, stderr) in zip(picks, tasks, outs):
        assert task.returncode == 0, stderr[-2000:]
        assert f"task {names[name]}: {name} done" in stdout
        run = work / name
        hist = (run / "history.csv").read_text().splitlines()
        assert hist[0].startswith("step,") and any(ln.startswith("8,") for ln in hist)
        prov = json.loads((run / "provenance.json").read_text())
        mode, init = name.split("-bert-mini-")[1].rsplit("-s", 1)[0].rsplit("-", 1)
        seed = name.rsplit("-s", 1)[1]
        assert prov["config"]["corpus"] == "wikipedia-chars" and prov["config"]["steps"] == 8
        assert f"--mode {mode} --init {init} --seed {seed} " in prov["command"]
        assert [s["device"] for s in prov["sittings"]] == ["cpu (1 threads)"] and prov["sittings"][0]["cpu_model"]
        assert f"trial {name}: 8 steps, not landed" in log.read_text()
        assert not (RUNS / name / "history.csv").exists()
    assert sorted(p.name for p in work.iterdir() if p.is_dir()) == sorted(picks)


def test_the_batch_file_replaces_only_one_this_script_wrote_and_never_writes_through_a_link(tmp_path):
    first = _write(tmp_path).read_text()
    assert _write(tmp_path).read_text() == first          # its own file: written again, whole
    theirs = tmp_path / "notes.txt"
    theirs.write_text("a user's notes\n")
    (tmp_path / "link.sbatch").symlink_to(theirs)
    for name, says in (("notes.txt", "is not a batch file this script wrote"), ("link.sbatch", "is a symbolic link")):
        out = subprocess.run(["bash", str(SCRIPT), str(tmp_path / name)], env=_env(), capture_output=True,
                             text=True, timeout=60)
        assert out.returncode == 2 and says in out.stderr and out.stderr.count("\n") == 1
    assert theirs.read_text() == "a user's notes\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["body.sbatch", "link.sbatch", "notes.txt"]   # no temporary left
