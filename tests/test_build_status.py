"""The status page's facts come from the build and from the runs' own provenance."""

import json

from companion.book.site.build_status import build_facts, cached_run_sets, git_commit


def _run(root, name, device, seconds, finished=True, steps=400, corpus="wikipedia"):
    d = root / name
    d.mkdir()
    (d / "provenance.json").write_text(json.dumps(
        {"hardware": {"device": device}, "duration_s": seconds,
         "config": {"steps": steps, "corpus": corpus}}))
    if finished:
        (d / "history.csv").write_text("step,quantity,layer,head,value\n")


def test_run_sets_group_by_name_and_count_only_finished_runs(tmp_path):
    _run(tmp_path, "wiki-bert-mini-encoder-standard-s0", "cpu (1 threads)", 1800)
    _run(tmp_path, "wiki-bert-mini-decoder-symmetric-s1", "cpu (1 threads)", 3600)
    _run(tmp_path, "wiki-bert-mini-authors-decoder-standard-s0", "cpu (1 threads)", 0, finished=False)
    _run(tmp_path, "gpu-bert-encoder-standard-s0", "NVIDIA H100 80GB HBM3", 7200, steps=1000)
    rows = {r["set"]: r for r in cached_run_sets(tmp_path)}
    assert set(rows) == {"wiki-bert-mini", "gpu-bert"}
    assert rows["wiki-bert-mini"]["runs"] == 2  # the interrupted run is not counted
    assert rows["wiki-bert-mini"]["kind"] == "CPU" and rows["wiki-bert-mini"]["hours"] == 1.5
    assert rows["gpu-bert"]["kind"] == "GPU" and rows["gpu-bert"]["steps"] == "1000"


def test_build_facts_name_the_commit_and_the_run_size(monkeypatch):
    monkeypatch.setenv("COMPANION_RUN_SIZE", "gpu")
    facts = build_facts()
    assert facts["run size"].startswith("gpu")
    assert facts["commit"] == git_commit() and facts["commit"] != ""


def test_commit_falls_back_to_the_ci_variable_outside_a_checkout(tmp_path, monkeypatch):
    monkeypatch.setenv("GITHUB_SHA", "0123456789abcdef")
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    assert git_commit(tmp_path) == "0123456789ab"


def test_the_status_directive_renders_the_gpu_size_budget_table(tmp_path):
    import subprocess
    import sys

    import pytest

    pytest.importorskip("sphinx")
    src = tmp_path / "src"
    src.mkdir()
    (src / "conf.py").write_text("extensions = ['companion.book.sphinxext']\n"
                                 "companion_repository_url = 'https://github.com/owner/companion'\n"
                                 "exclude_patterns = ['_toc.yml']\n")
    (src / "_toc.yml").write_text("root: index\n")
    (src / "index.rst").write_text("Status\n======\n\n.. build-status::\n")
    build = subprocess.run([sys.executable, "-m", "sphinx", "-W", "-q", "-b", "html", str(src),
                            str(tmp_path / "html")], capture_output=True, text=True)
    assert build.returncode == 0, build.stderr
    html = (tmp_path / "html" / "index.html").read_text()
    for head in ("H100 s", "T4 s (estimate)", "CPU s (2 cores)", "dominant cost", "flags"):
        assert head in html
    assert "estimated, not measured" in html and "companion-gpu-budget" in html
    assert "symmetric_init" in html and "companion-run-sets" in html


def test_an_unknown_device_is_never_counted_as_a_gpu(tmp_path):
    from companion.book.site.build_status import device_kind

    _run(tmp_path, "odd-bert-mini-encoder-standard-s0", "unknown", 60)
    _run(tmp_path, "odd-bert-mini-decoder-standard-s0", "TPU v4", 60)
    _run(tmp_path, "mixed-bert-mini-encoder-standard-s0", "cpu (1 threads)", 60)
    _run(tmp_path, "mixed-bert-mini-decoder-standard-s0", "NVIDIA H100 80GB HBM3", 60)
    _run(tmp_path, "half-bert-mini-encoder-standard-s0", "cpu (1 threads)", 60)
    _run(tmp_path, "half-bert-mini-decoder-standard-s0", "", 60)
    rows = {r["set"]: r for r in cached_run_sets(tmp_path)}
    assert rows["odd-bert-mini"]["kind"] == "unrecorded"           # was 'GPU'
    assert rows["mixed-bert-mini"]["kind"] == "CPU and GPU"
    assert rows["half-bert-mini"]["kind"] == "CPU (and an unrecorded device)"
    assert rows["half-bert-mini"]["devices"] == "cpu (1 threads), not recorded"
    for name, kind in (("Tesla T4", "GPU"), ("AMD Instinct MI250X", "GPU"), ("NVIDIA A100-SXM4-40GB", "GPU"),
                       ("cpu (2 threads)", "CPU"), ("?", "unrecorded"), (None, "unrecorded"), (3, "unrecorded"),
                       ("Apple M2", "unrecorded")):
        assert device_kind(name) == kind, name


def test_a_run_without_steps_or_hardware_reads_not_recorded(tmp_path):
    d = tmp_path / "bare-bert-mini-encoder-standard-s0"
    d.mkdir()
    (d / "provenance.json").write_text(json.dumps({"hardware": "cpu (1 threads)", "duration_s": None,
                                                   "config": {"steps": None}}))
    (d / "history.csv").write_text("step,quantity,layer,head,value\n")
    _run(tmp_path, "bare-bert-mini-decoder-standard-s0", "cpu (1 threads)", 3600, steps=400)
    row = cached_run_sets(tmp_path)[0]                                # was a TypeError on int(None)
    assert row["steps"] == "400, not recorded" and row["kind"] == "CPU" and row["hours"] == 1.0


def test_a_provenance_that_is_not_json_is_refused_naming_it(tmp_path):
    import pytest

    from companion.base.errors import CompanionError

    _run(tmp_path, "bad-bert-mini-encoder-standard-s0", "cpu (1 threads)", 60)
    (tmp_path / "bad-bert-mini-encoder-standard-s0" / "provenance.json").write_text("{")
    with pytest.raises(CompanionError, match="bad-bert-mini-encoder-standard-s0/provenance.json is not a readable"):
        cached_run_sets(tmp_path)
