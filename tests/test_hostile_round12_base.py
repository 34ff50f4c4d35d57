"""Hostile round 12 (issue 74): the base helpers (sentences with numbers, bounded YAML, the
tree digest), the rules loader under two mutations at once, and the command line.

Every expected value is computed apart from the code under test: a rounded zero is worded as
Python words ``0.0`` in the same format; the rules a mutated file should load are what
``yaml.safe_load`` reads from it; a refusal is a one-line :class:`CompanionError` naming the field.
"""

from __future__ import annotations

import copy
import math
import os
import shutil
import threading
from pathlib import Path

import pytest
import yaml

from companion.base.errors import CompanionError

RULES = Path(__file__).resolve().parents[1] / "data" / "verdict_rules.yaml"
TABLES = ("verdict_rules_design.csv", "verdict_rules_family.csv", "survey_design.csv")


# ============================================================ (a) phrasing: numbers in sentences

@pytest.mark.parametrize("low,high,fmt", [(-1e-9, 0.3, "+.3f"), (-0.0, 0.3, "+.3f"), (-4e-4, 0.2, "+.3f"),
                                          (-0.004, 0.2, "+.2f")])
def test_interval_never_words_a_rounded_zero_as_negative(low, high, fmt):
    from companion.base.phrasing import interval

    zero = f"{0.0:{fmt}}"   # what a bound that rounds to zero reads: no minus sign
    assert interval(low, high, n=3, fmt=fmt) == f"95% t-interval {zero} to {high:{fmt}}, 3 seeds"


def test_numbers_and_as_set_never_word_minus_zero():
    from companion.base.phrasing import as_set, numbers

    assert numbers([-1e-9, 0.5]) == f"{0.0:.3f}, {0.5:.3f}"
    assert as_set(-0.0) == "0.000"


@pytest.mark.parametrize("n", [1.7, 2.5, True, float("nan"), -1, "3"])
def test_a_seed_count_that_is_not_a_whole_number_is_refused(n):
    """``seeds(1.7)`` read '1 seed' (int() truncates) and ``interval(n=nan)`` raised a bare
    'cannot convert float NaN to integer'."""
    from companion.base.phrasing import interval, seeds

    with pytest.raises(ValueError, match="seed count") as err:
        seeds(n)
    assert "\n" not in str(err.value)
    with pytest.raises(ValueError, match="seed count"):
        interval(0.1, 0.2, n=n)


@pytest.mark.parametrize("n,word", [(0, "0 seeds"), (1, "1 seed"), (2, "2 seeds"), (12, "12 seeds")])
def test_seed_counts_worded(n, word):
    from companion.base.phrasing import seeds

    assert seeds(n) == word


def test_span_leaves_out_every_value_that_is_not_finite():
    from companion.base.phrasing import span

    vals = [float("inf"), 0.25, float("-inf"), float("nan"), 0.75]
    kept = [v for v in vals if math.isfinite(v)]
    assert span(vals) == f"{min(kept):.2f} to {max(kept):.2f}"
    assert span([float("inf")]) == "none"


# ============================================================ (a) bounded YAML

def test_billion_laughs_refused_before_building():
    from companion.base.bounded_yaml import load_bounded

    text = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{c}: &{c} [{', '.join(['*' + p] * 10)}]\n" for p, c in zip("abcdefgh", "bcdefghi"))
    with pytest.raises(OverflowError, match="YAML nodes"):
        load_bounded(text)


@pytest.mark.parametrize("text", ["a: !!python/object/apply:os.system ['true']",
                                  "a: !!python/name:os.system ''", "!!python/object:os.stat_result {}"])
def test_python_tags_never_construct(text):
    from companion.base.bounded_yaml import load_bounded

    with pytest.raises(yaml.YAMLError):
        load_bounded(text)


@pytest.mark.parametrize("text,key", [("a: 1\na: 2\n", "a"), ("x:\n  b: [1]\n  b: [2]\n", "b"),
                                      ("- {k: 1, k: 1}\n", "k")])
def test_a_key_written_twice_is_refused_not_silently_replaced(text, key):
    from companion.base.bounded_yaml import load_bounded

    with pytest.raises(yaml.YAMLError, match=f"'{key}'.*twice"):
        load_bounded(text)


def test_merge_keys_still_read_as_yaml_says():
    from companion.base.bounded_yaml import load_bounded

    assert load_bounded("base: &b {x: 1, y: 2}\nc: {<<: *b, y: 3}\n")["c"] == {"x": 1, "y": 3}


def test_deep_nesting_is_too_deep_not_a_crash():
    from companion.base.bounded_yaml import TooDeep, load_bounded

    with pytest.raises(TooDeep):
        load_bounded("[" * 3000 + "]" * 3000)


# ============================================================ (a) tree digest

def _with_deadline(fn, seconds=20):
    out = {}

    def run():
        try:
            out["value"] = fn()
        except BaseException as exc:   # noqa: BLE001 (reported below)
            out["error"] = exc

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(seconds)
    assert not t.is_alive(), "the digest blocked (a FIFO read?)"
    if "error" in out:
        raise out["error"]
    return out["value"]


def test_tree_digest_skips_fifos_and_links_to_devices(tmp_path):
    import hashlib

    from companion.base.tree_digest import tree_digest

    (tmp_path / "k").mkdir()
    (tmp_path / "k" / "a.txt").write_bytes(b"hello")
    os.mkfifo(tmp_path / "k" / "pipe")
    os.symlink("/dev/zero", tmp_path / "k" / "zero")
    n, digest = _with_deadline(lambda: tree_digest(tmp_path, ("k",)))
    by_hand = hashlib.sha256(b"k/a.txt\0" + (5).to_bytes(8, "big") + b"hello").hexdigest()
    assert (n, digest) == (1, by_hand)


def test_tree_digest_sees_a_change_of_the_same_size(tmp_path):
    from companion.base.tree_digest import tree_digest

    (tmp_path / "k").mkdir()
    f = tmp_path / "k" / "a.txt"
    f.write_bytes(b"aaaa")
    first = tree_digest(tmp_path, ("k",))
    f.write_bytes(b"bbbb")
    st = f.stat()
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert tree_digest(tmp_path, ("k",)) != first


# ============================================================ (b) the rules loader, two fields at once

def _copy(tmp_path, mutate) -> Path:
    data = tmp_path / "data"
    data.mkdir()
    for t in TABLES:
        shutil.copy(RULES.parent / t, data / t)
    rules = yaml.safe_load(RULES.read_text())
    mutate(rules)
    out = data / "verdict_rules.yaml"
    out.write_text(yaml.safe_dump(rules, sort_keys=False))
    return out


def _set(path, value):
    def apply(d):
        *head, last = path.split(".")
        for k in head:
            d = d[k]
        if value is KeyError:
            del d[last]
        else:
            d[last] = value
    return apply


TWO = [  # (first, second, a word the refusal must name)
    (("claims.training_symmetry.body", "no-such-body"), ("claims.training_symmetry.sesoi", "no-such"), "no-such-body"),
    (("framework.level", "0.95"), ("framework.gate.guard_blocks", True), "level"),
    (("bodies.wikipedia-v3.seeds", {"a": 1}), ("bodies.wikipedia-v3.steps", "10000"), "seeds"),
    (("claims.table_1.sign", True), ("claims.table_1.pilot.seeds", 5), "sign"),
    (("framework.sequential.looks", [3, 6, 9, "12"]), ("framework.sequential.alpha", "0.02"), "looks"),
    (("claims.table_1.pilot", [1, 2]), ("claims.table_1.claim", "x"), "pilot"),
    (("framework.families.word-piece.members", ["table_1", "training_directionality", "training_symmetry", "ghost"]),
     ("framework.families.word-piece.fwer", 0.05), "ghost"),
    (("claims.table_1.sing", -1), ("claims.table_1.sign", KeyError), "sing"),
    (("claims.training_symmetry.secondary_comparator", ["authors-decoder/standard"]),
     ("claims.training_symmetry.secondary_comparators", KeyError), "secondary_comparator"),
    (("yardsticks.symmetry-chars.read_form", {"arm": "encoder/standard", "score": "symmetry"}),
     ("yardsticks.symmetry-chars.read_from", KeyError), "read_form"),
    (("bodies.wikipedia-v3.secondary_armz", ["decoder/standard"]), ("bodies.wikipedia-v3.blind", True), "secondary_armz"),
]


@pytest.mark.parametrize("first,second,named", TWO, ids=[t[2] for t in TWO])
def test_two_mutations_refused_in_one_line_naming_the_field(tmp_path, first, second, named):
    from companion.rules.rulebook import load_rules

    path = _copy(tmp_path, lambda d: (_set(*first)(d), _set(*second)(d)))
    with pytest.raises(CompanionError) as err:
        load_rules(path)
    msg = str(err.value)
    assert "\n" not in msg and named in msg


def test_two_harmless_mutations_load_as_the_file_says(tmp_path):
    """sign -1.0 (a float equal to -1) and a changed label load to exactly what the file says."""
    from companion.rules.rulebook import load_rules

    path = _copy(tmp_path, lambda d: (_set("claims.table_1.sign", -1.0)(d),
                                      _set("bodies.wikipedia-v3.label", "renamed")(d)))
    said = yaml.safe_load(path.read_text())
    got = load_rules(path)
    assert got["claims"]["table_1"]["sign"] == said["claims"]["table_1"]["sign"] == -1
    assert got["bodies"]["wikipedia-v3"]["label"] == "renamed"
    assert got["bodies"]["wikipedia-v3"]["seeds"] == said["bodies"]["wikipedia-v3"]["seeds"]


# ============================================================ (c) the command line

@pytest.mark.parametrize("argv,named", [
    (["score", "nosuch", "--gamma", "nan"], "--gamma"),
    (["corpus", "prepare", "all", "--jobs", "0"], "jobs"),
    (["corpus", "path", "../../etc/passwd"], "../../etc/passwd"),
    (["zoo", "path", "../x"], "../x"),
    (["verdicts", "--claim", "nosuch"], "nosuch"),
    (["verdicts", "--rules", "/dev/zero", "--training"], "/dev/zero"),
])
def test_cli_odd_arguments_refused_in_one_line(argv, named, capsys):
    from companion.cli import main

    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and named in err and "Traceback" not in err


def _mappings_of_the_file(rules: dict):
    """(dotted place, mapping) of every section whose keys the loader knows: the file, the
    framework and its parts, each family, the evidence, its framework, yardsticks and claims."""
    fw, ev = rules["framework"], rules["evidence"]
    yield "", rules
    yield "framework", fw
    for name in ("sequential", "gate", "design_check", "family_check"):
        yield f"framework.{name}", fw[name]
    yield "framework.design_check.targets", fw["design_check"]["targets"]
    for name in fw["families"]:
        yield f"framework.families.{name}", fw["families"][name]
    yield "evidence", ev
    yield "evidence.framework", ev["framework"]
    yield "evidence.framework.power", ev["framework"]["power"]
    for name in ev["yardsticks"]:
        yield f"evidence.yardsticks.{name}", ev["yardsticks"][name]
    for key, claim in ev["claims"].items():
        yield f"evidence.claims.{key}", claim
        if "design" in claim:
            yield f"evidence.claims.{key}.design", claim["design"]


def test_every_key_of_the_files_own_sections_misspelt_is_refused_naming_it(tmp_path):
    """Each key of the committed file's own sections (not only bodies, claims read at looks and
    yardsticks), misspelt by one added letter, is refused in one line naming it (or the key it lacks):
    read as absent, a misspelt 'evidence' dropped every claim read once and its default stood in."""
    from companion.rules.rulebook import load_rules

    committed = yaml.safe_load(RULES.read_text())
    # each key once per kind of section (a key every claim read once holds is tried in one)
    kinds: dict = {}
    for where, d in _mappings_of_the_file(committed):
        kind = ".".join(p for p in where.split(".") if p not in committed["evidence"]["claims"]
                        and p not in committed["framework"]["families"] and p not in committed["evidence"]["yardsticks"])
        for key in d:
            kinds.setdefault((kind, key), (where, key))
    places = list(kinds.values())
    assert len(places) > 70
    dump = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    data = tmp_path / "data"
    data.mkdir()
    for t in TABLES:
        shutil.copy(RULES.parent / t, data / t)
    silent = []
    for where, key in places:
        rules = copy.deepcopy(committed)
        d = dict(_mappings_of_the_file(rules))[where]
        d[key + "q"] = d.pop(key)
        out = data / "verdict_rules.yaml"
        out.write_text(yaml.dump(rules, Dumper=dump, sort_keys=False))
        try:
            load_rules(out)
        except CompanionError as err:
            # named as misspelt, or (for 'version', read before the sections) as missing
            assert "\n" not in str(err) and (repr(key + "q") in str(err) or repr(key) in str(err)), (where, key, str(err))
        else:
            silent.append(f"{where}.{key}")
    assert not silent, f"{len(silent)} misspelt keys loaded as if absent, e.g. {silent[:5]}"


@pytest.mark.parametrize("device, h100", [
    ("NVIDIA H100 80GB HBM3", True), ("H100-SXM5", True), ("NVIDIA H100 NVL", True),
    ("NVIDIA GH1000", False), ("NVIDIA H1000", False), ("cpu (beside an H100)", False), ("cpu", False),
    ("Tesla T4", False), ("NVIDIA H200", False),
])
def test_only_an_h100_device_counts_as_one_in_the_colab_budget(device, h100):
    """The Colab budget reads a chapter's H100 time from the row of an H100, named as the
    driver names it; a device whose name only holds the letters is not one."""
    from companion.book.budgets.colab_budget import _is_h100

    assert _is_h100(device) is h100


@pytest.mark.parametrize("chapter", ["../README", "book/measuring", "/etc/passwd", "..", "measuring.md/..", ""])
def test_timing_a_chapter_named_by_a_path_is_refused_before_anything_runs(tmp_path, chapter):
    """time_chapter takes a chapter's name, never a path: '../README' would execute a file
    beside the book (it exists there) as if it were a chapter."""
    from companion.book.budgets.chapter_times import time_chapter

    book = tmp_path / "book"
    book.mkdir()
    (tmp_path / "README.md").write_text("```{code-cell} ipython3\nopen('ran', 'w')\n```\n")
    with pytest.raises(ValueError, match="not a path"):
        time_chapter(chapter, "ci", 30, book=book)
    assert not (tmp_path / "ran").exists() and not (book / "ran").exists()
