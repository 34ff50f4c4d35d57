"""The run scripts refuse a misspelt set and never copy a short trial run as a finished one."""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_a_misspelt_set_is_refused_before_anything_starts():
    out = subprocess.run(["bash", str(ROOT / "data/runs/make_blind_runs.sh"), "primery"],
                         capture_output=True, text=True, timeout=30)
    assert out.returncode == 2 and "unknown set 'primery'" in out.stderr and out.stderr.count("\n") == 1


def _run(tmp_path, asked, last):
    d = tmp_path / f"run-{asked}-{last}"
    d.mkdir()
    (d / "provenance.json").write_text(json.dumps({"config": {"steps": asked}}))
    (d / "history.csv").write_text("step,quantity,layer,head,value\n0,eval_loss,-1,-1,8.4\n"
                                   f"{last},eval_loss,-1,-1,5.1\n")
    return d


def _finished(d, steps):
    script = f'PY="{sys.executable}"; eval "$(sed -n "/^finished()/,/^}}/p" {ROOT}/data/runs/common.sh)"; finished {d} {steps}'
    return subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=60, env=dict(os.environ))


def test_only_a_run_that_reached_its_horizon_counts_as_finished(tmp_path):
    assert _finished(_run(tmp_path, 10000, 10000), 10000).returncode == 0
    short = _finished(_run(tmp_path, 200, 200), 10000)
    assert short.returncode == 1 and "a run of 200 steps that reached step 200" in short.stderr
    cut = _finished(_run(tmp_path, 10000, 4750), 10000)
    assert cut.returncode == 1 and "reached step 4750" in cut.stderr


def test_the_authors_setting_script_lists_the_registered_body_look_by_look():
    """DRY=1 lists every run of the body the rules register (seeds and arms from the rules file),
    whole looks first and the primary arms of a look before its secondary arm."""
    from companion.rules.rulebook import load_rules

    out = subprocess.run(["bash", str(ROOT / "data/runs/make_chars_runs.sh")], env={**os.environ, "DRY": "1"},
                         capture_output=True, text=True, timeout=60)
    names = out.stdout.split()
    body = load_rules()["bodies"]["wikipedia-chars-v4"]
    arms = body["arms"] + body["secondary_arms"]
    want = {f"charsv4-bert-mini-{a.replace('/', '-')}-s{s}" for a in arms for s in body["seeds"]}
    assert out.returncode == 0 and len(names) == len(want) and set(names) == want
    first_look = {f"charsv4-bert-mini-{a.replace('/', '-')}-s{s}" for a in body["arms"] for s in body["seeds"][:3]}
    assert set(names[:len(first_look)]) == first_look          # look 1's primary runs come first


def test_the_authors_setting_script_trains_at_a_tiny_size_and_lands_nothing(tmp_path):
    """The script's own command, at 20 steps: a run in the authors' setting trains on the
    character-joined corpus, keeps its weights and logs the guard, and a trial is not copied
    into data/runs as a finished run."""
    work = tmp_path / "work"
    order = subprocess.run(["bash", str(ROOT / "data/runs/make_chars_runs.sh")], env={**os.environ, "DRY": "1"},
                           capture_output=True, text=True, timeout=60).stdout.split()
    # the script skips a run that has landed: the trial is the first one that has not
    first = next(i for i, n in enumerate(order) if not (ROOT / "data/runs" / n / "history.csv").exists())
    # (the held-out sample and the guard's read 16 blocks, not 320: the device's own option, as the Slurm test's)
    env = {**os.environ, "PY": sys.executable, "STEPS": "20", "EVERY": "10", "WARMUP": "5", "LIMIT": str(first + 1),
           "WORK": str(work), "DEVICE_ARGS": "--threads 1 --cpu-bf16 --eval-blocks 16",
           "RUNS_LOG": str(tmp_path / "progress.log")}   # the trial's lines never reach the real runs' log
    real_log = ROOT / "data/runs/progress.log"
    before = real_log.read_bytes() if real_log.exists() else None
    out = subprocess.run(["bash", str(ROOT / "data/runs/make_chars_runs.sh")], env=env, capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    run = work / order[first]
    prov = json.loads((run / "provenance.json").read_text())
    assert prov["config"]["corpus"] == "wikipedia-chars" and prov["config"]["steps"] == 20
    hist = (run / "history.csv").read_text()
    assert "guard_seen_loss" in hist and "guard_heldout_loss" in hist
    assert (run / "weights-step20.safetensors").is_file()
    landed = ROOT / "data/runs" / order[first]
    assert not (landed / "history.csv").exists()                     # the trial was not copied as finished
    assert sorted(p.name for p in work.iterdir() if p.is_dir()) == [order[first]]   # landed runs were skipped
    assert "not landed" in (tmp_path / "progress.log").read_text()
    if before is not None:   # (a background body may append its own lines meanwhile: never the trial's)
        assert str(tmp_path) not in real_log.read_text()[len(before.decode(errors="replace")):]


def test_the_packed_device_script_runs_the_authors_setting_body_on_its_own_corpus():
    """BODY=chars packs make_chars_runs.sh's runs in its order, each on the character-joined
    corpus with the body's arm and seed; an unknown body is refused in one line."""
    env = {**os.environ, "DRY": "1", "BODY": "chars", "N_JOBS": "4", "IN_PROGRESS": "/nonexistent"}
    out = subprocess.run(["bash", str(ROOT / "data/runs/device_v3.sh")], env=env, capture_output=True, text=True,
                         timeout=60, cwd=ROOT)
    lines = [ln for ln in out.stdout.splitlines() if ln.strip()]
    order = subprocess.run(["bash", str(ROOT / "data/runs/make_chars_runs.sh")], env={**os.environ, "DRY": "1"},
                           capture_output=True, text=True, timeout=60).stdout.split()
    # a seed with a landed run of the body stays with the CPU (no pair across devices)
    begun = {n.rsplit("-s", 1)[1] for n in order if (ROOT / "data/runs" / n / "history.csv").exists()}
    want = [n for n in order if n.rsplit("-s", 1)[1] not in begun][:4]
    assert out.returncode == 0 and [ln.split()[0] for ln in lines] == want
    for ln in lines:
        name, args = ln.split()[0], ln.split()
        assert args[args.index("--corpus") + 1] == "wikipedia-chars"
        assert args[args.index("--seed") + 1] == name.rsplit("-s", 1)[1]
    bad = subprocess.run(["bash", str(ROOT / "data/runs/device_v3.sh")], env={**env, "BODY": "nope"},
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "unknown body" in bad.stderr and bad.stderr.count("\n") == 1


def _land(cwd, name, steps):
    script = (f'PY="{sys.executable}"; LOG=log; eval "$(sed -n "/^finished()/,/^}}/p;/^land()/,/^}}/p" '
              f'{ROOT}/data/runs/common.sh)"; land {name} w {steps} "weights-step*.safetensors.sha256"')
    return subprocess.run(["bash", "-c", script], cwd=cwd, capture_output=True, text=True, timeout=60)


def test_the_run_scripts_land_only_a_finished_run_with_its_digests(tmp_path):
    """common.sh's land, which every make_*_runs.sh script calls: a finished run is copied with its
    weight digests; a short trial run is not copied at all."""
    (tmp_path / "data" / "runs").mkdir(parents=True)
    (tmp_path / "w").mkdir()
    for name, last in (("done", 10000), ("trial", 20)):
        d = _run(tmp_path / "w", 10000 if name == "done" else 20, last)
        d.rename(tmp_path / "w" / name)
        (tmp_path / "w" / name / "weights-step10.safetensors.sha256").write_text("x\n")
    assert _land(tmp_path, "done", 10000).returncode == 0
    assert sorted(p.name for p in (tmp_path / "data/runs/done").iterdir()) == [
        "history.csv", "provenance.json", "weights-step10.safetensors.sha256"]
    assert _land(tmp_path, "trial", 10000).returncode == 1
    assert not (tmp_path / "data/runs/trial").exists()
    assert "NOT COPIED trial" in (tmp_path / "log").read_text()
