"""Folders being written in a cache that several machines share, and the package digest's framing.

A folder in progress was named by its writer's pid alone, and the next fetch or build removed
every such folder whose pid named no process: on a cache on a shared file system, another
machine's clean-up removed a folder this machine was still writing.  The names now carry the
machine (``socket.gethostname()``), and a folder of another machine is judged by no pid here.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from companion.base.errors import CompanionError

HERE = "node-a.cluster"     # this machine's name in these tests (a '.' in it, as a cluster's names have)


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("COMPANION_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(socket, "gethostname", lambda: HERE)
    return tmp_path / "cache"


@pytest.fixture(scope="module")
def dead_pid():
    """The pid of a process that has ended (on this machine no process has it now)."""
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def _age(path: Path, days: float) -> None:
    t = time.time() - days * 86400
    os.utime(path, (t, t))


def _names(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


# ============================================================ corpus archives (train/text/corpora.py)

def test_a_corpus_fetch_names_its_folder_by_machine_and_never_judges_another_machine_s_by_pid(cache, monkeypatch, dead_pid):
    import companion.train.text.corpora as corpora

    archives = cache / "archives"
    archives.mkdir(parents=True)
    spec = corpora.CorpusSpec(name="toy", title="toy", domain="test", licence="none", package="toy==1.0",
                              archive="toy-1.0.tar.gz", sha256="0" * 64)
    theirs = archives / f".fetch-toy-{dead_pid}@node-b"                   # node-b is downloading into it now
    theirs_old = archives / f".fetch-toy-{dead_pid}@node-c.cluster"       # node-c's, left two days ago
    mine_dead = archives / f".fetch-toy-{dead_pid}@{HERE}"                # a killed fetch of this machine
    older_name = archives / f".fetch-toy-{dead_pid}"                      # made here before names held the machine
    mine_live = archives / f".fetch-toy-{os.getppid()}@{HERE}"            # a live process of this machine
    for d in (theirs, theirs_old, mine_dead, older_name, mine_live):
        d.mkdir()
    _age(theirs_old, 2)
    seen = {}

    def pip_download(cmd, **kw):
        seen["folder"] = Path(cmd[cmd.index("-d") + 1]).name
        seen["beside"] = _names(archives)
        return SimpleNamespace(returncode=1, stdout="", stderr="no network in this test")

    monkeypatch.setattr(corpora.subprocess, "run", pip_download)
    with pytest.raises(CompanionError, match="could not download"):
        corpora._fetch_locked(spec, "toy", archives / spec.archive, quiet=True)
    assert seen["folder"] == f".fetch-toy-{os.getpid()}@{HERE}"
    assert seen["beside"] == sorted([theirs.name, mine_live.name, seen["folder"]])
    assert _names(archives) == sorted([theirs.name, mine_live.name])   # its own folder gone after it


# ============================================================ token caches (train/text/tokens.py)

@pytest.fixture(scope="module")
def tok():
    from companion.train.text.data import load_tokenizer

    return load_tokenizer()


def test_a_token_build_names_its_folder_by_machine_and_leaves_another_machine_s_builds(cache, tok, dead_pid):
    from companion.base.cache import cache_dir
    from companion.train.text.tokens import cached_token_streams

    root = cache_dir("tokens")
    theirs = root / f".abc.tmp-7-{dead_pid}@node-b"           # node-b's build, running
    theirs_old = root / f".def.tmp-7-{dead_pid}@node-b"       # started on node-b two days ago: a build may take that long
    mine_dead = root / f".ghi.tmp-7-{dead_pid}@{HERE}"
    older_name = root / f".jkl.tmp-{dead_pid}"                # made here before names held the machine
    for d in (theirs, theirs_old, mine_dead, older_name):
        d.mkdir()
        (d / "train.bin").write_bytes(b"\0" * 64)
    _age(theirs_old, 2)
    building = []

    def documents():
        building.extend(n for n in _names(root) if n.endswith(f"-{os.getpid()}@{HERE}"))
        return ["The first document of the test corpus.", "A second one, a little longer than the first."] * 6

    cached_token_streams({"corpus": "test-machines", "documents_sha256": "x"}, documents, tok, rank=0)
    assert len(building) == 1 and f".tmp-{threading.get_ident()}-{os.getpid()}@{HERE}" in building[0]
    assert not [n for n in _names(root) if ".tmp-" in n and n.endswith(HERE)]
    assert sorted(n for n in _names(root) if n.startswith(".")) == sorted([theirs.name, theirs_old.name])


# ============================================================ zoo assembly (zoo/assembly.py)

def test_a_zoo_assembly_names_its_folder_by_machine(cache, monkeypatch):
    from companion.zoo import assembly

    zoo = cache / "zoo"
    zoo.mkdir(parents=True)
    seen = []

    def build(model, tmp):
        seen.append(tmp.name)
        raise CompanionError("stopped by the test")

    monkeypatch.setattr(assembly, "_build", build)
    with pytest.raises(CompanionError, match="stopped by the test"):
        assembly._assemble_into_cache(SimpleNamespace(name="toy"), "toy", zoo / "toy", zoo / "toy" / "m.bin", True)
    assert len(seen) == 1
    assert seen[0].startswith(f".toy.{os.getpid()}@{HERE}.") and seen[0].endswith(".partial")
    assert _names(zoo) == []


def test_zoo_partials_of_this_machine_go_by_pid_and_another_machine_s_only_after_a_day(cache, dead_pid):
    from companion.zoo.assembly import _clean_partials

    zoo = cache / "zoo"
    zoo.mkdir(parents=True)
    live = os.getppid()
    keep = [f".toy.{dead_pid}@node-b.abcdefgh.partial",          # node-b assembling it now
            f".toy.{live}@{HERE}.ijklmnop.partial",               # a live process here
            f".toy.{live}.qrs.partial"]                           # the older name, a live process
    gone = [f".toy.{dead_pid}@{HERE}.tuvwxyz0.partial",          # a killed assembly here
            f".toy.{dead_pid}.abc.partial",                       # the older name, killed
            f".toy.{dead_pid}@node-c.cluster.12345678.partial"]  # node-c's, two days old
    for n in keep + gone:
        (zoo / n).mkdir()
    _age(zoo / gone[-1], 2)
    _clean_partials(zoo, "toy")
    assert _names(zoo) == sorted(keep)


# ============================================================ the package digest (base/tree_digest.py)

def _write(root: Path, files: dict) -> Path:
    root.mkdir()
    for rel, content in files.items():
        (root / rel).write_bytes(content)
    return root


def test_a_file_s_bytes_never_run_into_the_next_path(tmp_path):
    """{a: 'x', b: 'y'} and {a: '', xb: 'y'} were one stream (path, NUL, bytes: 'a', NUL, 'xb', NUL,
    'y'), so one digest."""
    from companion.base.tree_digest import tree_digest

    one = _write(tmp_path / "one", {"a": b"x", "b": b"y"})
    two = _write(tmp_path / "two", {"a": b"", "xb": b"y"})
    (n1, d1), (n2, d2) = tree_digest(one, ("a", "b")), tree_digest(two, ("a", "xb"))
    assert n1 == n2 == 2
    assert d1 != d2


def test_once_cuda_is_started_an_answer_runs_in_this_process_not_a_fork_that_cannot_use_cuda(monkeypatch):
    """On a GPU runtime a forked child cannot use CUDA again: an answer computing on the GPU
    would fail there although it is right.  So the check runs it in this process instead."""
    import torch

    from companion.book.teaching import exercise_engine as engine

    monkeypatch.delenv("COMPANION_CHECK_IN_PROCESS", raising=False)
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: False)
    assert engine._can_fork()
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: True)
    assert not engine._can_fork()
    forks = []
    monkeypatch.setattr(engine, "_guarded_by_process", lambda *a, **k: forks.append(a))
    assert engine._guarded("ex-x", lambda: 41 + 1) == 42 and not forks


def test_survey_out_written_with_a_tilde_after_the_equals_sign_is_the_home_folder(tmp_path, monkeypatch):
    """`--out=~/s` reaches the program with its `~`: it meant the home folder, not a folder
    named `~` in the working folder."""
    import argparse

    from companion.survey import scoring

    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "home").mkdir()
    args = argparse.Namespace(out="~/s", local_dir=None, catalog=None, device=None)
    scoring._check_survey_options(args)   # what `companion survey` checks first
    assert args.out == str(tmp_path / "home" / "s")
    assert not (tmp_path / "~").exists()


@pytest.mark.parametrize("value", ["true", "YES", "on", "1"])
def test_an_online_corpus_is_refused_in_offline_mode_however_the_hub_spells_on(value, monkeypatch):
    from companion.base.errors import CompanionError
    from companion.train.text import data

    name = next(iter(data.ONLINE_CORPORA))
    monkeypatch.delenv("HF_DATASETS_OFFLINE", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", value)
    with pytest.raises(CompanionError, match="offline mode is set"):
        next(data._online_documents(name))


def test_an_online_corpus_that_cannot_be_reached_is_one_line_naming_it(monkeypatch):
    import datasets

    from companion.base.errors import CompanionError
    from companion.train.text import data

    name = next(iter(data.ONLINE_CORPORA))
    for v in ("HF_DATASETS_OFFLINE", "HF_HUB_OFFLINE"):
        monkeypatch.setenv(v, "0")

    def unreachable(*a, **k):
        raise ConnectionError("Couldn't reach 'x' on the Hub (ConnectionError)")

    monkeypatch.setattr(datasets, "load_dataset", unreachable)
    with pytest.raises(CompanionError, match=f"corpus '{name}' is streamed from the hub.*could not be reached"):
        next(data._online_documents(name))


def test_a_runs_recorded_device_is_the_one_its_last_sitting_trained_on(tmp_path, monkeypatch):
    """Under torchrun a run trains on cuda:LOCAL_RANK whatever --device says; the provenance's
    hardware must name the device the steps were made on (the sitting's), not the flag's."""
    import json

    from companion.base import runtime
    from companion.train.cli import main

    real = runtime.describe_machine
    monkeypatch.setattr(runtime, "describe_machine",
                        lambda device=None, cpuinfo=None: {**real(device, cpuinfo), "device": "the sitting's device"})
    out = tmp_path / "run"
    assert main(["--size", "micro", "--steps", "1", "--eval-every", "1", "--warmup", "1", "--corpus", "python-docs",
                 "--top-k", "64", "--device", "cpu", "--out", str(out)]) == 0
    meta = json.loads((out / "provenance.json").read_text())
    assert meta["sittings"][-1]["device"] == "the sitting's device"
    assert meta["hardware"]["device"] == "the sitting's device"
