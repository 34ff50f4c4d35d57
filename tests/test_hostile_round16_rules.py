"""Hardening round 16: the one rulebook and the caches keyed on the package.

(a) Rules edits that loaded and were then misread: a claim comparing an arm with itself (as its
comparator or a secondary one), a body's seeds beyond those the trainer can seed, 'extra_seeds'
and 'patterns' in a body read at looks (read by no look), a claim listed twice in one family, a
body registered under a file outside the repository; a key written twice in two spellings of one
YAML value.
(b) The recorded corrections: a status before that is no status, a correction recorded twice.
(c) The caches: a table computed while the data changed is never stored under the old key; a
file name that is not UTF-8 or a file that vanishes while the tree is hashed; a lock held on
another machine; a verdict entry that is a folder; a relative verdict cache folder.

Each case states the right behaviour: a value computed apart from the code under test
(hashlib, a hand computation), or a one-line refusal naming the input and the fix."""

from __future__ import annotations

import hashlib
import io
import math
import os
import socket
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

import companion.base.runtime  # noqa: F401  (imported once here: the cases time what they check, not imports)
import companion.judge.cache  # noqa: F401
import companion.rules.sequential  # noqa: F401
from companion.base.errors import CompanionError
from one_line import one_line as _one_line
from test_hostile_round15_rules import _copy, _load, _refused  # the rules folder copied, loaded, refused

DATA = Path(__file__).resolve().parents[1] / "data"


def _edit(d: Path, *pairs) -> Path:
    p = d / "verdict_rules.yaml"
    text = p.read_text()
    for old, new in pairs:
        assert text.count(old) >= 1, old
        text = text.replace(old, new, 1)
    p.write_text(text)
    return p


_SYMMETRY_ARMS = ("    candidate: encoder/standard\n    comparator: decoder/standard\n"
                  "    secondary_comparators: [authors-decoder/standard]\n    body: english-mix-v3\n"
                  "    sesoi: symmetry-mix")
_MIX_SEEDS = "    seeds: [30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41]\n"


# ------------------------------------------------------------------ (a) rules edits read wrongly later


def test_a_claim_comparing_an_arm_with_itself_is_refused_naming_the_claim(tmp_path):
    """Fig. 3a's comparator copied from its candidate: every paired difference is exactly 0, and
    each look read 'not testable here', blaming 'duplicated runs or an unvaried seed'."""
    from companion.rules.sequential import look_estimate

    # what the reading would be: the same runs on both sides leave no spread and no interval
    same = np.array([0.031, 0.027, 0.035])
    assert look_estimate(same - same, 0.01).problem
    d = _copy(tmp_path)
    p = _edit(d, (_SYMMETRY_ARMS, _SYMMETRY_ARMS.replace("comparator: decoder/standard",
                                                         "comparator: encoder/standard")))
    _refused(p, "training_symmetry", "encoder/standard", "itself", check_design=False)


def test_a_secondary_arm_repeating_a_primary_one_is_refused_so_no_claim_reads_it_against_itself(tmp_path):
    d = _copy(tmp_path)
    p = _edit(d, ("    arms: [encoder/standard, decoder/standard]\n    secondary_arms: [authors-decoder/standard]\n",
                  "    arms: [encoder/standard, decoder/standard]\n"
                  "    secondary_arms: [authors-decoder/standard, encoder/standard]\n"),
              (_SYMMETRY_ARMS, _SYMMETRY_ARMS.replace("[authors-decoder/standard]",
                                                      "[authors-decoder/standard, encoder/standard]")))
    _refused(p, "english-mix-v3", "encoder/standard", "primary", check_design=False)



@pytest.mark.parametrize("old, new", [
    ("arms: {candidate: encoder, comparator: decoder, init: standard}",
     "arms: {candidate: encoder, comparator: encoder, init: standard}"),
    ("arms: {candidate: swap, comparator: control}", "arms: {candidate: control, comparator: swap}")])
def test_a_claim_read_once_naming_arms_its_reading_does_not_compare_is_refused(tmp_path, old, new):
    """The mechanism and the swap are read on encoder minus decoder and swap against control
    whatever their rule's 'arms' say: 'comparator: encoder' (an arm against itself) or the swap's
    arms reversed loaded, and the reading went on comparing the arms it always did."""
    d = _copy(tmp_path)
    p = _edit(d, (old, new))
    key = "update_structure" if "encoder" in old else "objective_swap"
    _refused(p, key, "'arms'", "comparator", check_design=False)

@pytest.mark.parametrize("seed", ["-30", "4294967296"])
def test_a_body_seed_the_trainer_cannot_seed_is_refused_at_load(tmp_path, seed):
    """A seed of -30 loaded; the pages then listed run '...-s-30' as missing, a run that
    `companion train` refuses to make (its seeds lie in [0, 2**32 - 1])."""
    d = _copy(tmp_path)
    p = _edit(d, (_MIX_SEEDS, _MIX_SEEDS.replace("[30,", f"[{seed},")))
    _refused(p, "english-mix-v3", seed, "4294967295", check_design=False)


def test_a_body_seed_of_0_and_the_largest_seed_still_load(tmp_path):
    d = _copy(tmp_path)
    p = _edit(d, (_MIX_SEEDS, _MIX_SEEDS.replace("[30, 31,", "[0, 4294967295,")))
    assert _load(p, check_design=False)["bodies"]["english-mix-v3"]["seeds"][:2] == [0, 2 ** 32 - 1]


@pytest.mark.parametrize("line", ["    extra_seeds: [90, 91]\n", "    patterns: [mixv3-bert-mini-*, mixv3-extra-*]\n"])
def test_a_field_of_earlier_bodies_in_a_body_read_at_looks_is_refused_not_ignored(tmp_path, line):
    """'extra_seeds' and 'patterns' are read for the bodies of versions 1 and 2 only: in a body
    read at looks they loaded and no look read them (its runs are found by 'pattern' and its
    seeds are 'seeds')."""
    d = _copy(tmp_path)
    p = _edit(d, (_MIX_SEEDS, _MIX_SEEDS + line))
    field = line.split(":")[0].strip()
    msg = _refused(p, "english-mix-v3", repr(field), check_design=False)
    assert ("'seeds'" if field == "extra_seeds" else "'pattern'") in msg, msg


def test_a_claim_listed_twice_in_one_family_is_refused_saying_so_not_naming_it_another_family(tmp_path):
    d = _copy(tmp_path)
    members = "      members: [table_1, training_directionality, training_symmetry, symmetric_init_structure]\n"
    p = _edit(d, (members, members.replace("symmetric_init_structure]", "symmetric_init_structure, table_1]")))
    msg = _refused(p, "word-piece", "'table_1'", "twice", check_design=False)
    assert "also a member of family" not in msg, msg


@pytest.mark.parametrize("where", ["/etc/hostname", "../outside.yaml", "data/../../outside.yaml"])
def test_a_body_registered_under_a_file_outside_the_repository_is_refused(tmp_path, where):
    """The registration's file was read (for its stamp and its first commit) wherever it named:
    an absolute path or one climbing out with '..' anchored a body to any file holding the text."""
    d = _copy(tmp_path)
    reg = "registered: {file: data/verdict_rules.yaml, fixed: 2026-12-06T14:34:00+00:00}"
    p = _edit(d, (reg, reg.replace("data/verdict_rules.yaml", where)))
    _refused(p, "wikipedia-chars-v4", "registered", where, check_design=False)
    # the committed registrations, under the repository, still load
    bodies = _load(DATA / "verdict_rules.yaml", check_design=False)["bodies"]
    assert {b["registered"]["file"] for b in bodies.values()} == {"data/rules_history/verdict_rules_v3.yaml",
                                                                 "data/verdict_rules.yaml"}


@pytest.mark.parametrize("text", ["1.0: a\n1.00: b\n", "yes: 1\ntrue: 2\n", "0x1A: a\n26: b\n", "~: a\nnull: b\n"])
def test_a_key_written_twice_in_two_spellings_of_one_value_is_refused(text):
    """safe_load kept the second copy silently: '1.0' and '1.00' are one key."""
    from companion.base.bounded_yaml import load_bounded

    with pytest.raises(yaml.YAMLError, match="twice"):
        load_bounded(text)


def test_keys_of_different_values_or_types_in_one_mapping_still_load():
    from companion.base.bounded_yaml import load_bounded

    assert load_bounded("1: a\n'1': b\n1.5: c\n<<: {x: 1}\n") == {1: "a", "1": "b", 1.5: "c", "x": 1}


def test_an_edit_of_the_rules_between_two_loads_is_read_and_a_callers_change_is_not_kept(tmp_path):
    """The parse is remembered by the file's text: a change of one digit is a new text, and a
    caller editing the rules it was handed never reaches the next load."""
    d = _copy(tmp_path)
    first = _load(d / "verdict_rules.yaml", check_design=False)
    first["gate_changed"] = True
    first["framework"]["gate"]["memorisation_nats"] = 9.0
    again = _load(d / "verdict_rules.yaml", check_design=False)
    assert "gate_changed" not in again and again["framework"]["gate"]["memorisation_nats"] == 0.10
    p = _edit(d, ("    memorisation_nats: 0.10\n", "    memorisation_nats: 0.125\n"))
    assert _load(p, check_design=False)["framework"]["gate"]["memorisation_nats"] == 0.125


def test_design_and_family_tables_saved_with_a_byte_order_mark_and_crlf_load_as_committed(tmp_path):
    d = _copy(tmp_path)
    for name in ("verdict_rules_design.csv", "verdict_rules_family.csv"):
        b = (d / name).read_bytes()
        (d / name).write_bytes(b"\xef\xbb\xbf" + b.replace(b"\n", b"\r\n"))
    rules = _load(d / "verdict_rules.yaml")
    assert sorted(rules["claims"]) == sorted(yaml.safe_load((DATA / "verdict_rules.yaml").read_text())["claims"])


# ------------------------------------------------------------------ (b) the recorded corrections


def _corrections(tmp_path, rows):
    p = tmp_path / "reading_corrections.csv"
    pd.DataFrame(rows, columns=["key", "commit", "change", "d_before", "status_before"]).to_csv(p, index=False)
    return p


_RULES = {"claims": {"chars_table_1": {}, "table_1": {}}}


@pytest.mark.parametrize("status", ["Not testable here", "not testable here ", "holds size open", "passed"])
def test_a_status_before_that_is_no_status_is_refused_not_counted_as_a_moved_status(tmp_path, status):
    """The history page counts a correction as moving a status where the status now differs
    from the text recorded: 'Not testable here' read as a status that moved."""
    from companion.rules.reading_corrections import reading_corrections

    p = _corrections(tmp_path, [["chars_table_1", "6ec5026", "the yardstick read between evaluations", "nan", status]])
    with pytest.raises(CompanionError) as err:
        reading_corrections(p, rules=_RULES)
    msg = _one_line(err)
    assert "row 2" in msg and "status_before" in msg and "not testable here" in msg, msg


def test_a_correction_recorded_twice_is_refused_not_counted_twice(tmp_path):
    from companion.rules.reading_corrections import reading_corrections

    row = ["chars_table_1", "6ec5026", "the yardstick read between evaluations", "nan", "not testable here"]
    p = _corrections(tmp_path, [row, row[:2] + ["the same correction, worded again", "0.0373", "inconclusive"]])
    with pytest.raises(CompanionError) as err:
        reading_corrections(p, rules=_RULES)
    msg = _one_line(err)
    assert "row 3" in msg and "chars_table_1" in msg and "6ec5026" in msg and "twice" in msg, msg
    ok = _corrections(tmp_path, [row, ["table_1", "6ec5026", "another claim, same commit", "0.0373", "holds, size open"]])
    got = reading_corrections(ok, rules=_RULES)
    assert list(got["key"]) == ["chars_table_1", "table_1"] and math.isnan(got["d_before"][0])
    assert got["d_before"][1] == 0.0373


# ------------------------------------------------------------------ (c) the caches


@pytest.fixture
def verdict_cache(tmp_path, monkeypatch):
    import companion.base.paths as paths
    from package_tree import package_tree
    from companion.judge import claims

    monkeypatch.setattr(paths, "ROOT", package_tree(tmp_path / "root"))
    monkeypatch.setenv("COMPANION_VERDICT_CACHE", str(tmp_path / "vcache"))
    monkeypatch.delenv("COMPANION_TOKENIZER", raising=False)
    monkeypatch.setattr(claims, "_CACHE", {})
    (tmp_path / "vcache").mkdir()
    return tmp_path / "vcache"


def test_a_table_computed_while_the_data_changed_is_never_served_for_the_data_it_was_not_computed_from(
        verdict_cache, tmp_path, monkeypatch):
    """The key was taken before the table was computed: a data file edited meanwhile left a table
    of the edited data under the key of the data before, served again once the edit was undone."""
    from companion.judge import cache, claims

    data = tmp_path / "root" / "data" / "t.csv"

    def edited_meanwhile():
        data.write_text("a\n2\n")
        return {"value": int(data.read_text().split()[-1])}

    assert cache._disk_cached_value("t", edited_meanwhile) == {"value": 2}
    data.write_text("a\n1\n")   # the edit undone: the data of the first key again
    monkeypatch.setattr(claims, "_CACHE", {})
    assert cache._disk_cached_value("t", lambda: {"value": int(data.read_text().split()[-1])}) == {"value": 1}
    # a table computed with nothing changing is stored and served
    monkeypatch.setattr(claims, "_CACHE", {})
    assert cache._disk_cached_value("t", lambda: pytest.fail("computed again")) == {"value": 1}


def test_the_verdict_cache_key_is_the_sha256_of_the_run_size_and_the_trees_digest(verdict_cache, tmp_path,
                                                                                 monkeypatch):
    from companion.judge import cache

    monkeypatch.setenv("COMPANION_RUN_SIZE", "ci")
    h = hashlib.sha256()
    for rel in ("data/t.csv", "src/companion/m.py"):
        content = (tmp_path / "root" / rel).read_bytes()
        h.update(rel.encode() + b"\0" + len(content).to_bytes(8, "big") + content)
    key = hashlib.sha256(f"ci\0{h.hexdigest()}".encode()).hexdigest()[:24]
    assert cache._cache_path("t") == verdict_cache / f"t-{key}.json"


def test_minus_zero_nan_and_float32_read_back_from_the_verdict_cache_as_computed(verdict_cache, monkeypatch):
    from companion.judge import cache, claims

    value = {"frame": pd.DataFrame({"x": [-0.0, float("nan"), 1e308], "y": np.array([0.1, -0.0, 3], np.float32)}),
             "z": -0.0, "k": np.float32(0.1)}
    cache._disk_cached_value("v", lambda: value)
    monkeypatch.setattr(claims, "_CACHE", {})
    got = cache._disk_cached_value("v", lambda: pytest.fail("computed again"))
    assert math.copysign(1, got["z"]) == -1 and math.copysign(1, got["frame"]["x"][0]) == -1
    assert math.isnan(got["frame"]["x"][1]) and got["frame"]["x"][2] == 1e308
    assert got["frame"]["y"].dtype == np.float32 and math.copysign(1, got["frame"]["y"][1]) == -1
    assert type(got["k"]) is np.float32 and got["k"] == np.float32(0.1)


def test_a_verdict_entry_that_is_a_folder_is_refused_naming_it_and_the_fix(verdict_cache):
    from companion.judge import cache

    entry = cache._cache_path("t")
    entry.mkdir()
    with pytest.raises(CompanionError) as err:
        cache._disk_cached_value("t", lambda: pytest.fail("computed before the entry was looked at"))
    msg = _one_line(err)
    assert str(entry) in msg and "remove" in msg and "scores.csv" not in msg, msg


def test_a_relative_verdict_cache_folder_is_refused_and_prepare_makes_its_folder_absolute(verdict_cache, tmp_path,
                                                                                        monkeypatch):
    """A relative folder was read from each kernel's working folder: every chapter's folder got
    its own cache, beside the chapter, and none found the prepared one."""
    from companion.judge import cache, prepare

    chapter = tmp_path / "chapter"
    chapter.mkdir()
    monkeypatch.chdir(chapter)
    monkeypatch.setenv("COMPANION_VERDICT_CACHE", "vcache")
    with pytest.raises(CompanionError) as err:
        cache._disk_cached_value("t", lambda: {"a": 1})
    assert "COMPANION_VERDICT_CACHE" in _one_line(err) and "absolute" in _one_line(err)
    assert list(chapter.iterdir()) == []
    monkeypatch.setattr(prepare, "_tables", lambda: [])
    assert prepare.prepare("prepared", out=io.StringIO()) == {}
    assert os.environ["COMPANION_VERDICT_CACHE"] == str(chapter / "prepared")


@pytest.mark.parametrize("in_git", [False, True])
def test_a_data_file_whose_name_is_not_utf8_is_hashed_by_its_bytes_not_a_traceback(tmp_path, in_git):
    """A file unpacked from an archive made elsewhere may have a Latin-1 name: every verdict and
    book cache key raised UnicodeDecodeError (in a checkout) or UnicodeEncodeError (outside)."""
    from companion.base.tree_digest import tree_digest

    (tmp_path / "data").mkdir()
    raw = os.path.join(os.fsencode(tmp_path), b"data", b"caf\xe9.csv")
    with open(raw, "wb") as f:
        f.write(b"a\n1\n")
    (tmp_path / "data" / "t.csv").write_text("b\n2\n")
    if in_git:
        subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    h = hashlib.sha256()
    for rel, content in ((b"data/caf\xe9.csv", b"a\n1\n"), (b"data/t.csv", b"b\n2\n")):   # sorted by name
        h.update(rel + b"\0" + len(content).to_bytes(8, "big") + content)
    assert tree_digest(tmp_path, ("data",)) == (2, h.hexdigest())


def test_a_file_that_vanishes_while_the_tree_is_hashed_is_left_out_not_a_traceback(tmp_path, monkeypatch):
    """An editor's temporary file (vim's '4913') is made and removed at once: listed by git, it was
    gone when its time stamps were read, and every cache key raised FileNotFoundError."""
    from companion.base import tree_digest as td

    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "t.csv").write_text("a\n1\n")
    listed = td.tree_files
    monkeypatch.setattr(td, "tree_files", lambda root, keyed: listed(root, keyed) + [Path(root) / "data" / "4913"])
    h = hashlib.sha256(b"data/t.csv\0" + (4).to_bytes(8, "big") + b"a\n1\n")
    assert td.tree_digest(tmp_path, ("data",)) == (1, h.hexdigest())


def _dead_pid() -> int:
    p = subprocess.Popen(["true"])
    p.wait()
    return p.pid


def test_a_lock_held_on_another_machine_is_never_taken_over_for_a_pid_not_running_here(tmp_path):
    """On a shared folder (a cluster's home, data/runs over NFS), a lock whose pid does not run on
    this machine was taken for abandoned: a second job trained into the folder the first was
    writing.  A lock names its machine; one of another machine is left alone."""
    from companion.base.cache import exclusive

    lock = tmp_path / ".train.lock"
    with exclusive(lock, "training into x", wait_s=0):
        assert f"host={socket.gethostname()}" in lock.read_text().split()
    held = f"{_dead_pid()} 123456 host=node-elsewhere-{os.getpid()}\n"
    lock.write_text(held)
    with pytest.raises(CompanionError) as err:
        with exclusive(lock, "training into x", wait_s=0):
            pytest.fail("the lock of another machine was taken over")
    msg = _one_line(err)
    assert f"node-elsewhere-{os.getpid()}" in msg and "remove the lock" in msg, msg
    assert lock.read_text() == held
    # the same lock on this machine, its process gone, is stale and taken over at once
    lock.write_text(held.replace(f"node-elsewhere-{os.getpid()}", socket.gethostname()))
    with exclusive(lock, "training into x", wait_s=0):
        assert lock.read_text().split()[0] == str(os.getpid())
    assert not lock.exists()


# ------------------------------------------------------------------ the rules' history, commit by commit


_HISTORY_RULES = b"""version: 4
framework: {sequential: {looks: [3, 6], alpha: 0.05}}
bodies: {b1: {arms: [x, y]}}
yardsticks: {s: {value_when_fixed: 0.1}}
claims: {c1: {body: b1, sesoi: s}}
"""


def _git(repo, *args, date=None) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_SYSTEM": os.devnull}
    if date:
        env["GIT_AUTHOR_DATE"] = env["GIT_COMMITTER_DATE"] = date
    return subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True, timeout=20).stdout.decode()


def test_a_rules_commit_saved_in_latin_1_is_a_change_and_its_subject_is_shown_not_a_traceback(tmp_path):
    """A comment with 'é' saved as Latin-1 (and a subject typed the same way): the history page's
    readers decoded git's output as UTF-8 and raised UnicodeDecodeError.  The loader refuses such
    a file, so the commit holds no rules: a change of what judges."""
    from companion.rules.edits import changes_after_first_run, text_edits_after

    repo = tmp_path / "repo"
    (repo / "data").mkdir(parents=True)
    _git(repo, "init", "-q")
    f = repo / "data" / "verdict_rules.yaml"
    for text, date, subject in ((_HISTORY_RULES, "2026-01-01T00:00:00+00:00", b"first"),
                                (b"# r\xe9gle\n" + _HISTORY_RULES, "2026-01-10T00:00:00+00:00", b"r\xe9gle")):
        f.write_bytes(text)
        _git(repo, "add", "data/verdict_rules.yaml")
        _git(repo, "commit", "-q", "-m", os.fsdecode(subject), date=date)
    later = _git(repo, "rev-parse", "HEAD").strip()
    with pytest.raises(CompanionError):
        _load(f, check_design=False)   # what the loader makes of that text
    out = changes_after_first_run("b1", "2026-01-05T00:00:00+00:00", f)
    assert out and all(line.startswith(later[:10]) and "changed after the body's first run" in line for line in out), out
    edits = text_edits_after("2026-01-05T00:00:00+00:00", f)
    assert [(e["commit"], e["lines added"], e["lines removed"]) for e in edits] == [(later[:10], 1, 0)]
    assert edits[0]["subject"].startswith("r") and edits[0]["subject"].endswith("gle")


def test_runs_cloned_into_data_as_a_repository_of_their_own_are_part_of_the_key(tmp_path):
    """git lists a repository inside the tree as one entry ('data/runs/extra/'), and its files
    were left out: a run's history edited there kept the key, and the table computed from the
    old history was served."""
    from companion.base.tree_digest import tree_digest

    (tmp_path / "data" / "runs" / "extra").mkdir(parents=True)
    (tmp_path / "data" / "t.csv").write_text("a\n1\n")
    _git(tmp_path, "init", "-q")
    extra = tmp_path / "data" / "runs" / "extra"
    _git(extra, "init", "-q")
    (extra / "history.csv").write_text("step,loss\n10,2.5\n")

    def by_hand():
        h = hashlib.sha256()
        for rel in ("data/runs/extra/history.csv", "data/t.csv"):   # sorted by path
            content = (tmp_path / rel).read_bytes()
            h.update(rel.encode() + b"\0" + len(content).to_bytes(8, "big") + content)
        return (2, h.hexdigest())

    assert tree_digest(tmp_path, ("data",)) == by_hand()
    (extra / "history.csv").write_text("step,loss\n10,2.4\n")
    assert tree_digest(tmp_path, ("data",)) == by_hand()
