"""Hardening round 6 (issue 74): another hostile pass over the same families as round 5, with
inputs round 5 did not try (another writer, another field, another form, another value).  Each
case has an expectation computed apart from the code under test: a one-line refusal naming the
problem, or the right value.  Nothing here may hang, lose a file or let markup run."""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from companion.base.errors import CompanionError
from deadline import within
from one_line import one_line as _one_line

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data" / "runs"
SECRET = "the user's own file\n"


# ============================================================ 1. writes outside the output folder, data loss

@pytest.mark.parametrize("writer", ["text", "bytes", "csv"])
def test_an_atomic_write_replaces_a_link_never_writes_through_it(tmp_path, writer):
    from companion.base import outputs

    victim = tmp_path / "outside" / "victim.txt"
    victim.parent.mkdir()
    victim.write_text(SECRET)
    out = tmp_path / "out"
    out.mkdir()
    target = out / "result.txt"
    target.symlink_to(victim)
    try:
        if writer == "text":
            outputs.write_text_atomic("new", target)
        elif writer == "bytes":
            outputs.write_bytes_atomic(b"new", target)
        else:
            outputs.write_csv_atomic(pd.DataFrame({"a": [1]}), target)
    except CompanionError as err:
        _one_line(err)
    assert victim.read_text() == SECRET


@pytest.mark.parametrize("writer", ["text", "stream"])
def test_a_fifo_in_place_of_an_output_is_refused_without_blocking(tmp_path, writer):
    from companion.base import outputs

    target = tmp_path / "log.txt"
    os.mkfifo(target)
    with within(10, target), pytest.raises(CompanionError) as err:
        if writer == "text":
            outputs.write_text_atomic("x", target)
        else:
            outputs.open_stream(target).close()
    assert "FIFO" in _one_line(err) or "regular file" in str(err.value)


def test_a_log_stream_through_a_link_is_refused_and_the_linked_file_kept(tmp_path):
    from companion.base import outputs

    victim = tmp_path / "victim.txt"
    victim.write_text(SECRET)
    (tmp_path / "run.log").symlink_to(victim)
    with pytest.raises(CompanionError, match="symbolic link") as err:
        outputs.open_stream(tmp_path / "run.log", mode="a").close()
    _one_line(err)
    assert victim.read_text() == SECRET


def test_an_output_that_is_a_folder_is_refused_and_the_folder_kept(tmp_path):
    from companion.base import outputs

    folder = tmp_path / "table.csv"
    folder.mkdir()
    (folder / "keep.txt").write_text(SECRET)
    with pytest.raises(CompanionError) as err:
        outputs.write_text_atomic("x", folder)
    _one_line(err)
    assert (folder / "keep.txt").read_text() == SECRET


def _sh(script: str, cwd, timeout=60):
    return subprocess.run(["bash", "-c", script], cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "PY": sys.executable})


@pytest.mark.parametrize("target", ["", "/", "~", "."])
def test_fresh_workdir_never_clears_an_empty_root_home_or_current_folder(tmp_path, target):
    (tmp_path / "keep.txt").write_text(SECRET)
    where = {"~": str(Path.home()), "": "", "/": "/", ".": "."}[target]
    out = _sh(f'source "{DATA / "workdir.sh"}"; fresh_workdir "{where}"', tmp_path)
    assert out.returncode != 0 and out.stderr.strip() and out.stderr.strip().count("\n") == 0, out.stderr
    assert (tmp_path / "keep.txt").read_text() == SECRET


def test_the_project_cache_remover_refuses_an_empty_name(tmp_path):
    (tmp_path / ".devrun" / "cache").mkdir(parents=True)
    (tmp_path / ".devrun" / "cache" / "keep.txt").write_text(SECRET)
    (tmp_path / "keep.txt").write_text(SECRET)
    _sh(f'source "{DATA / "workdir.sh"}"; remove_project_cache ""', tmp_path)
    assert (tmp_path / "keep.txt").read_text() == SECRET
    assert (tmp_path / ".devrun" / "cache" / "keep.txt").read_text() == SECRET


# ============================================================ 2. runs that join the wrong body

def _chars_run():
    from companion.rules.rulebook import load_rules

    name = "charsv4-bert-mini-encoder-standard-s70"
    prov = json.loads((DATA / name / "provenance.json").read_text())
    return name, prov, load_rules()["bodies"]["wikipedia-chars-v4"]


OTHER = [("optimizer", "sgd"), ("init_from", "bert-base-uncased"), ("cpu_bf16", False), ("penalty", "symmetric"),
         ("warmup", 0), ("lr", 0.0011), ("steps", 10001), ("corpus", "wikipedia"), ("size", "bert-small"),
         ("heads", 8), ("mode", "decoder"), ("update_every", 2)]


@pytest.mark.parametrize("field, value", OTHER, ids=[f for f, _ in OTHER])
def test_a_run_with_one_other_learning_setting_is_refused_in_one_line(field, value):
    from companion.train.studies.registration import check_registered

    name, prov, body = _chars_run()
    check_registered(name, prov, body, "CPU")
    prov["config"][field] = value
    with pytest.raises(CompanionError) as err:
        check_registered(name, prov, body, "CPU")
    text = _one_line(err)
    assert name in text and (field in text or str(value) in text or "bf16" in text), text


def test_a_gpu_run_without_bf16_is_refused_though_a_cpu_run_need_not_set_it():
    from companion.train.studies.registration import check_registered

    name, prov, body = _chars_run()
    prov["config"]["bf16"] = False
    check_registered(name, prov, body, "CPU")      # on a CPU, cpu_bf16 is what sets the precision
    with pytest.raises(CompanionError, match="bf16") as err:
        check_registered(name, prov, body, "GPU")
    _one_line(err)


def test_a_run_with_its_config_missing_is_refused_in_one_line():
    from companion.train.studies.registration import check_registered

    name, prov, body = _chars_run()
    prov.pop("config")
    with pytest.raises(CompanionError) as err:
        check_registered(name, prov, body, "CPU")
    assert name in _one_line(err)


def test_a_run_whose_seed_differs_from_its_name_is_refused():
    from companion.train.studies.registration import check_registered

    name, prov, body = _chars_run()
    prov["config"]["seed"] = 71
    with pytest.raises(CompanionError) as err:
        check_registered(name, prov, body, "CPU")
    assert "seed" in _one_line(err)


# ============================================================ 3. a rules file that checks less than it says

def _rules_copy(tmp_path, change) -> Path:
    src = ROOT / "data" / "verdict_rules.yaml"
    rules = yaml.safe_load(src.read_text())
    change(rules)
    (tmp_path / "data").mkdir()
    for f in (ROOT / "data").iterdir():
        if f.name != "verdict_rules.yaml":
            (tmp_path / "data" / f.name).symlink_to(f)
    path = tmp_path / "data" / "verdict_rules.yaml"
    path.write_text(yaml.safe_dump(rules, sort_keys=False))
    return path


def _seq(r):
    return r["framework"]["sequential"]


RULES = {
    "alpha of 0": lambda r: _seq(r).update(alpha=0.0),
    "alpha of 1.5": lambda r: _seq(r).update(alpha=1.5),
    "alpha as text": lambda r: _seq(r).update(alpha="0.05"),
    "looks out of order": lambda r: _seq(r).update(looks=list(reversed(_seq(r)["looks"]))),
    "a look repeated": lambda r: _seq(r).update(looks=[_seq(r)["looks"][0]] * len(_seq(r)["looks"])),
    "negative draws": lambda r: r["framework"]["design_check"].update(draws=-5),
    "draws as true": lambda r: r["framework"]["design_check"].update(draws=True),
    "a seed in two bodies": lambda r: list(r["bodies"].values())[1].update(
        seeds=[list(r["bodies"].values())[0]["seeds"][0]] + list(r["bodies"].values())[1]["seeds"][1:]),
    "a seed twice in one body": lambda r: list(r["bodies"].values())[0].update(
        seeds=[list(r["bodies"].values())[0]["seeds"][0]] * 2 + list(r["bodies"].values())[0]["seeds"][2:]),
    "a claim naming no body": lambda r: next(iter(r["claims"].values())).update(body="no-such-body"),
}


@pytest.mark.parametrize("change", list(RULES), ids=list(RULES))
def test_a_rules_file_with_an_impossible_setting_is_refused_at_load(tmp_path, change):
    from companion.rules.rulebook import load_rules

    path = _rules_copy(tmp_path, RULES[change])
    with within(60), pytest.raises(CompanionError) as err:
        load_rules(path)
    _one_line(err)


def test_a_yaml_alias_bomb_is_refused_quickly(tmp_path):
    from companion.rules.rulebook import load_rules

    lines = ['a0: &a0 ["x","x","x","x","x","x","x","x","x","x"]']
    for i in range(1, 9):
        lines.append(f"a{i}: &a{i} [" + ",".join([f"*a{i-1}"] * 10) + "]")
    path = tmp_path / "verdict_rules.yaml"
    path.write_text("\n".join(lines) + "\n")
    with within(30), pytest.raises(CompanionError) as err:
        load_rules(path)
    _one_line(err)


# ============================================================ 4. markup injection

PASTED6 = ["# not a heading", "> not a quote", "---", "***", "<https://evil.example>", "www.evil.example/x",
           "a\u2028b<i>c</i>", "=====", ":::{note}", "%slide", "    indented code", "![i](x.png)"]


@pytest.mark.parametrize("value", PASTED6)
def test_a_pasted_value_makes_no_element_of_its_own(value):
    import html as _html

    from markdown_it import MarkdownIt

    from companion.book.site.markup import pasted

    md = MarkdownIt("commonmark", {"html": True})
    page = md.render(f"{pasted(value)}\n")
    tags = set(re.findall(r"<(\w+)", page))
    assert tags <= {"p"}, (value, page)
    text = _html.unescape(re.sub(r"<[^>]+>", "", page)).strip()
    assert text == " ".join(value.split()), (value, page)


@pytest.mark.parametrize("value", ['" onmouseover="x', "' autofocus onfocus='x", "a>b<script>"])
def test_a_value_pasted_into_an_attribute_cannot_leave_it(value):
    from html.parser import HTMLParser

    from companion.book.site.markup import pasted

    seen = []

    class P(HTMLParser):
        def handle_starttag(self, tag, attrs):
            seen.append((tag, attrs))

    P().feed(f'<span title="{pasted(value, into="html")}">x</span>')
    assert seen == [("span", [("title", value)])]


@pytest.mark.parametrize("fragment", ['<IMG SRC=x OnError=alert(1)>', '<scr<script>ipt>alert(1)</script>',
                                      '<a href=" javascript:alert(1)">x</a>', '<img src="data:image/svg+xml,<svg onload=x>">',
                                      '<math><mtext><script>x</script></mtext></math>'])
def test_safe_html_leaves_nothing_that_runs(fragment):
    from companion.book.site.markup import safe_html

    out = safe_html(fragment).lower()
    assert "<script" not in out and not re.search(r"<[^>]*\bon\w+\s*=", out), out
    assert not re.search(r"""(href|src)\s*=\s*["']?\s*(javascript|data:image/svg)""", out), out


# ============================================================ 5. solutions reaching students

LEAKS6 = [
    "```{Solution} ex-a\nCASE-SECRET\n```\n",
    ":::::{solution} ex-a\nFIVE-COLON-SECRET\n:::::\n",
    "```{admonition} Hint\n:::{solution} ex-a\nINSIDE-ADMONITION-SECRET\n:::\n```\n",
    "1. step one\n\n   ```{solution} ex-a\n   ORDERED-LIST-SECRET\n   ```\n",
    "```{solution} ex-a\n:class: dropdown\n:label: sol-a\n\nOPTIONS-SECRET\n```\n",
    "```{solution-start} ex-a\n:class: dropdown\n```\n\nGATED-OPTIONS-SECRET\n\n```{solution-end}\n```\n",
]


@pytest.mark.parametrize("block", LEAKS6)
def test_another_form_of_a_solution_never_reaches_the_student_text(block):
    from companion.book.editions.solutions import strip_solutions

    page = f"# A chapter\n\nBefore.\n\n{block}\nAfter.\n"
    try:
        out = strip_solutions(page)
    except ValueError as err:
        _one_line(err)
        return
    assert "SECRET" not in out and "Before." in out and "After." in out, out


def test_text_that_only_mentions_a_solution_is_kept():
    from companion.book.editions.solutions import strip_solutions

    page = ("# A chapter\n\nUse a `{solution}` directive, written as\n\n````markdown\n```{solution} ex-a\n"
            "an example\n```\n````\n\nAfter.\n")
    out = strip_solutions(page)
    assert "Use a `{solution}` directive" in out and "After." in out


# ============================================================ 6. dates that move

@pytest.mark.parametrize("stamp, why", [
    ("2026-02-30T10:00:00Z", "not a date and time that exists"),
    ("2026-12-06", "no time of day"),
    ("", "no time of day"),
    (1765000000, "is a number"),
    ("2026-12-06T10:00:00+00:00Z", "not a date and time that exists"),
])
def test_another_bad_stamp_is_named(stamp, why):
    from companion.train.runner.provenance import stamp_problem

    said = stamp_problem(stamp)
    assert said is not None and why in said, said


def test_a_sitting_stamp_without_a_zone_is_refused_naming_the_sitting():
    from companion.train.runner.provenance import check_stamps

    prov = {"started": "2026-12-06T12:00:00Z", "date": "2026-12-06T20:00:00Z",
            "sittings": [{"from_step": 0, "started": "2026-12-06T12:00:00Z"},
                         {"from_step": 500, "started": "2026-12-06T16:00:00"}]}
    with pytest.raises(CompanionError, match=re.escape("sittings[1].started")) as err:
        check_stamps(prov, "r", "r")
    _one_line(err)


def test_the_same_instant_in_two_offsets_is_one_instant():
    from companion.train.runner.provenance import check_stamps

    check_stamps({"started": "2026-12-06T12:00:00+02:00", "date": "2026-12-06T10:00:00Z"}, "r", "r")


# ============================================================ 7. caches read without a digest

@pytest.fixture
def verdict_cache(tmp_path, monkeypatch):
    from companion.judge import cache as jc
    from companion.judge import claims

    monkeypatch.setenv("COMPANION_VERDICT_CACHE", str(tmp_path / "verdicts"))
    monkeypatch.setattr(claims, "_CACHE", {})
    return jc, claims


TRUTH = pd.DataFrame({"key": ["fig_3b"], "status": ["refuted"], "effect": [-0.25]})


@pytest.mark.parametrize("how", ["empty", "binary", "fifo", "link-to-other-entry", "folder"])
def test_an_odd_cache_entry_is_recomputed_without_hanging(verdict_cache, how):
    jc, claims = verdict_cache
    calls = []

    def compute():
        calls.append(1)
        return TRUTH.copy()

    jc._disk_cached("probe_six", compute)
    path = jc._cache_path("probe_six")
    other = path.with_name("other-entry.json")
    other.write_text(path.read_text().replace("refuted", "holds"))
    path.unlink()
    if how == "empty":
        path.write_text("")
    elif how == "binary":
        path.write_bytes(os.urandom(256))
    elif how == "fifo":
        os.mkfifo(path)
    elif how == "link-to-other-entry":
        path.symlink_to(other)
    else:
        path.mkdir()
    claims._CACHE.clear()
    with within(20, *([path] if how == "fifo" else [])):
        try:
            got = jc._disk_cached("probe_six", compute)
        except CompanionError as err:
            _one_line(err)
            return
    pd.testing.assert_frame_equal(got, TRUTH)
    assert len(calls) == 2


# ============================================================ 8. time limits

def _exercise():
    from companion.book.teaching import exercise_engine as E

    def test(answer, label):
        E.call(answer, label)
    return E, E.Exercise("hostile-six", "f", "a number", test)


def _exits():
    os._exit(0)


def _system_exit():
    raise SystemExit(3)


def _keyboard():
    raise KeyboardInterrupt


def _sleeps_in_c():
    time.sleep(30)
    return 1.0


def _unpicklable():
    return lambda: 1


ODD = {"exits the process": _exits, "raises SystemExit": _system_exit, "raises KeyboardInterrupt": _keyboard,
       "sleeps 30 s": _sleeps_in_c}


@pytest.mark.parametrize("name", list(ODD), ids=list(ODD))
def test_an_answer_that_leaves_oddly_gets_one_line_and_the_checker_survives(name):
    E, ex = _exercise()
    t0 = time.monotonic()
    with pytest.raises(E.WrongAnswer) as err:
        E.run(ex, ODD[name], time_s=1.0)
    assert time.monotonic() - t0 < 5.0
    _one_line(err)


# ============================================================ 9. sentences from NaN

@pytest.mark.parametrize("args", [(float("nan"), 0.3, 5), (0.1, float("inf"), 5),
                                  (0.1, 0.3, 5, 0.95, "+.3f", "t-interval", float("nan"))])
def test_an_interval_never_shows_nan_or_inf(args):
    from companion.base.phrasing import interval

    text = interval(*args)
    assert not re.search(r"nan|inf", text, re.I), text


@pytest.mark.parametrize("a, b", [("0.4", 0.3), (0.4, "x"), (np.array([0.4]), 0.3)])
def test_a_comparison_of_what_is_not_a_plain_number_is_no_comparison(a, b):
    from companion.base.phrasing import exceeds

    assert exceeds(a, b) is None, (a, b)


@pytest.mark.parametrize("value", [float("nan"), float("inf"), None])
def test_a_threshold_that_is_not_a_number_is_never_quoted_as_one(value):
    from companion.base.phrasing import as_set

    try:
        text = as_set(value)
    except (ValueError, TypeError) as err:
        _one_line(err)
        return
    assert not re.search(r"nan|inf|none", text, re.I), text


def test_numbers_never_lists_nan():
    from companion.base.phrasing import numbers

    assert "nan" not in numbers([0.1, float("nan"), 0.3]).lower()


# ============================================================ 10. the network at run time

def test_the_package_imports_and_its_help_run_without_the_network(tmp_path):
    code = ("import socket\n"
            "def no(*a, **k):\n    raise SystemExit('NETWORK ' + repr(a))\n"
            "socket.socket.connect = no\nsocket.create_connection = no\nsocket.getaddrinfo = no\n"
            "import sys\nsys.argv = ['companion', '--help']\n"
            "from companion import cli\n"
            "try:\n    cli.main()\nexcept SystemExit as e:\n    assert not str(e.code).startswith('NETWORK'), e.code\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "COMPANION_CACHE": str(tmp_path / "cache"), "HF_HUB_OFFLINE": "0"})
    assert out.returncode == 0 and "NETWORK" not in out.stderr + out.stdout, out.stderr[-2000:]


# ============================================================ second pass: the same families, deeper in

@pytest.mark.parametrize("value", ["<img src=x onerror=alert(1)>", "</details><script>x</script>",
                                   "[x](javascript:alert(1))", "{glue:text}`other`"])
def test_a_glued_value_in_a_notebook_cell_is_text_only(value):
    import html as _html

    from markdown_it import MarkdownIt

    from companion.book.editions.notebook_cells import colab_markdown

    cell = colab_markdown("The value is {glue:text}`v`.", {"v": value, "other": "OTHER"}, {})
    page = MarkdownIt("commonmark", {"html": True}).render(cell)
    assert set(re.findall(r"<(\w+)", page)) <= {"p"}, page
    assert _html.unescape(re.sub(r"<[^>]+>", "", page)).strip() == f"The value is {value}.", page


def test_a_gate_named_in_capitals_keeps_its_code_cells_from_the_decks():
    import nbformat

    from companion.book.editions.solutions import cells_without_solutions

    v4 = nbformat.v4
    cells = [v4.new_markdown_cell("Before."), v4.new_markdown_cell("```{Solution-Start} ex-a\n```"),
             v4.new_code_cell("GATED_SECRET = 1"), v4.new_markdown_cell("```{Solution-End}\n```"),
             v4.new_markdown_cell("After.")]
    kept = [c.source for _, c in cells_without_solutions(cells)]
    assert not any("SECRET" in s for s in kept) and "Before." in kept and "After." in kept, kept


@pytest.mark.parametrize("kind", ["fifo", "link-outside"])
def test_the_kept_weights_digest_is_never_written_through_a_link_or_fifo(tmp_path, kind):
    import torch

    from companion.train.runner.checkpoints import keep_weights, kept_weights_path

    out = tmp_path / "run"
    out.mkdir()
    path = kept_weights_path(out, 5)
    side = Path(f"{path}.sha256")
    victim = tmp_path / "victim.txt"
    victim.write_text(SECRET)
    if kind == "fifo":
        os.mkfifo(side)
    else:
        side.symlink_to(victim)
    torch.manual_seed(0)
    try:
        with within(10, side):
            keep_weights(torch.nn.Linear(3, 2), path)
    except CompanionError as err:
        _one_line(err)
    assert victim.read_text() == SECRET


def test_a_finished_run_is_never_written_through_links_in_its_folder(tmp_path):
    from companion.train.runner.provenance import write_run

    out = tmp_path / "run"
    out.mkdir()
    victims = {n: tmp_path / f"victim-{n}" for n in ("provenance.json", "history.csv")}
    for n, v in victims.items():
        v.write_text(SECRET)
        (out / n).symlink_to(v)
    try:
        write_run(out, pd.DataFrame({"step": [1], "quantity": ["eval_loss"], "layer": [-1], "head": [-1],
                                     "value": [1.0]}), {"config": {}})
    except CompanionError as err:
        _one_line(err)
    assert all(v.read_text() == SECRET for v in victims.values())


def test_a_valid_entry_of_another_table_copied_over_an_entry_is_not_served(verdict_cache):
    import shutil

    jc, claims = verdict_cache
    other = pd.DataFrame({"key": ["fig_4"], "status": ["holds"], "effect": [0.5]})
    jc._disk_cached("probe_a", lambda: TRUTH.copy())
    jc._disk_cached("probe_b", lambda: other.copy())
    shutil.copyfile(jc._cache_path("probe_b"), jc._cache_path("probe_a"))
    claims._CACHE.clear()
    got = jc._disk_cached("probe_a", lambda: TRUTH.copy())
    pd.testing.assert_frame_equal(got, TRUTH)


BODY_FIELDS = {
    "lr of NaN": lambda b: b.update(lr=float("nan")),
    "negative lr": lambda b: b.update(lr=-0.001),
    "steps of 0": lambda b: b.update(steps=0),
    "a seed of 1.5": lambda b: b.update(seeds=[1.5] + b["seeds"][1:]),
    "seeds as text": lambda b: b.update(seeds="1,2,3"),
    "no seeds": lambda b: b.update(seeds=[]),
}


@pytest.mark.parametrize("change", list(BODY_FIELDS), ids=list(BODY_FIELDS))
def test_a_body_with_an_impossible_field_is_refused_at_load(tmp_path, change):
    from companion.rules.rulebook import load_rules

    path = _rules_copy(tmp_path, lambda r: BODY_FIELDS[change](next(iter(r["bodies"].values()))))
    with within(60), pytest.raises(CompanionError) as err:
        load_rules(path)
    _one_line(err)


def test_the_verdict_modules_import_without_the_network(tmp_path):
    code = ("import socket\n"
            "def no(*a, **k):\n    raise RuntimeError('NETWORK ' + repr(a))\n"
            "socket.socket.connect = no\nsocket.create_connection = no\nsocket.getaddrinfo = no\n"
            "import companion.judge.claims, companion.rules.rulebook, companion.book.editions.slides\n"
            "import companion.book.editions.notebooks, companion.train.studies.evidence\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "COMPANION_CACHE": str(tmp_path / "cache")})
    assert out.returncode == 0 and "NETWORK" not in out.stderr, out.stderr[-2000:]


# ============================================================ third pass

from mix_blind_runs import BODY, RUNS, runs_in  # noqa: E402  (the three copied runs the body tests edit)


@pytest.fixture
def root(tmp_path, monkeypatch):
    return runs_in(tmp_path, monkeypatch)


def _by_hand(h: pd.DataFrame) -> float:
    rows = h[(h.quantity == "symmetry") & (h["head"].astype(float) == -1) & (h.layer.astype(float).between(0, 3))]
    last = rows[rows.step.astype(float) == 10000]
    assert len(last) == 4
    return float(last["value"].astype(float).mean())


@pytest.mark.parametrize("how", ["shuffled-rows", "layer-as-float", "a-fifth-layer"])
def test_the_body_reader_reads_the_horizon_s_layer_mean_as_computed_apart(root, how):
    from companion.train.studies.evidence import arm_values, body_runs

    path = root / RUNS[0] / "history.csv"
    h = pd.read_csv(path)
    want = _by_hand(h)
    if how == "shuffled-rows":
        h = h.sample(frac=1.0, random_state=3)
    elif how == "layer-as-float":
        h["layer"] = h["layer"].astype(float)
    else:
        row = h[(h.quantity == "symmetry") & (h["head"] == -1) & (h.step == 10000) & (h.layer == 3)]
        h = pd.concat([h, row.assign(layer=4, value=row["value"] + 5.0)], ignore_index=True)
    h.to_csv(path, index=False)
    try:
        got = arm_values(body_runs(BODY), "symmetry", "encoder").loc[20]
    except CompanionError as err:
        assert how == "a-fifth-layer" and RUNS[0] in _one_line(err)
        return
    assert got == pytest.approx(want, rel=1e-9), (how, got, want)


@pytest.mark.parametrize("title", ["# <img src=x onerror=alert(1)>", "# A <script>alert(1)</script> chapter"])
def test_a_chapter_title_with_markup_is_text_in_the_deck(title):
    from companion.book.editions import slides as sl

    chapter = f"{title}\n\n## A section\n\nBody.\n"
    name, plan = sl.plan_chapter(chapter, [], "chapter")
    page = sl.deck_html(name, [sl.render_slide(s) for s in plan])
    own = sl.deck_html("plain", [sl.render_slide(s) for s in sl.plan_chapter("# plain\n\n## A\n\nB.\n", [], "c")[1]])
    from html.parser import HTMLParser

    def runs(html_page):
        found = []

        class P(HTMLParser):
            def handle_starttag(self, tag, attrs):
                found.extend([tag] if tag in ("script", "img", "iframe") else [])
                found.extend(f"{tag} {k}" for k, _ in attrs if k.startswith("on"))
        P().feed(html_page)
        return sorted(found)

    assert runs(page) == runs(own), (runs(page), runs(own))


class _Endless:
    def __iter__(self):
        while True:
            yield 1.0

    def __len__(self):
        return 10**12


class _SlowFloat:
    def __float__(self):
        while True:
            pass


def _deep(n=0):
    return _deep(n + 1)


ODD_RESULTS = {"an endless iterable": lambda: _Endless(), "a float that never comes": lambda: _SlowFloat(),
               "endless recursion": _deep}


@pytest.mark.parametrize("name", list(ODD_RESULTS), ids=list(ODD_RESULTS))
def test_an_odd_result_is_refused_in_one_line_within_the_limit(name):
    from companion.book.teaching import exercise_engine as E

    def test(answer, label):   # as the real checks read a number
        E.call(answer, label, convert=lambda out: E.as_number(out, label))
    ex = E.Exercise("hostile-six-number", "f", "a number", test)
    t0 = time.monotonic()
    with pytest.raises(E.WrongAnswer) as err:
        E.run(ex, ODD_RESULTS[name], time_s=1.0)
    assert time.monotonic() - t0 < 6.0
    _one_line(err)


# ============================================================ fourth pass: dates and runs read for sentences

@pytest.mark.parametrize("started, before", [("2026-12-06T09:00:00z", True), ("2026-12-06T11:30:00+02:00", True),
                                             ("2026-12-06T10:30:00+00:30", False), ("2026-12-06T05:30:00-04:00", True)])
def test_a_start_the_stamp_check_accepts_is_compared_as_its_utc_instant(started, before):
    import datetime as dt

    from companion.rules.verdicts import started_before_rule
    from companion.train.runner.provenance import stamp_problem

    assert stamp_problem(started) is None
    commit = dt.datetime(2026, 12, 6, 10, tzinfo=dt.timezone.utc)
    utc = dt.datetime.fromisoformat(started.replace("z", "+00:00")).astimezone(dt.timezone.utc)
    assert (utc < commit) is before                      # the expectation, computed apart
    assert started_before_rule(started, "2026-12-06T09:59:00+00:00", commit) is before


def test_a_run_with_no_start_is_not_folded_silently_into_the_span_of_starts():
    from companion.judge.sentences import training_runs_said

    rows = [dict(body="mix", seed=30, arm="encoder/standard", device="CPU", machines="not recorded",
                 started="not a stamp", **{"after rules (h)": float("nan")}),
            dict(body="mix", seed=30, arm="decoder/standard", device="CPU", machines="not recorded",
                 started="2026-01-01T07:18:00Z", **{"after rules (h)": 1.0})]
    said = training_runs_said(pd.DataFrame(rows), {"mix": [("encoder/standard", "decoder/standard")]})
    assert "1 run with no start recorded" in said and "apart" not in said and "nan" not in said.lower(), said


@pytest.mark.parametrize("reader", ["companion.rules.rulebook", "companion.book.site.changes"])
@pytest.mark.parametrize("tail", ["\nextra: !!python/object/apply:os.system ['echo hi']\n", "\nclaims:\n\t- x\n",
                                  "\nbad: [1, 2\n"])
def test_a_rules_file_that_is_not_safe_yaml_is_refused_in_one_line(tmp_path, reader, tail):
    import importlib

    load = importlib.import_module(reader).load_rules
    path = tmp_path / "verdict_rules.yaml"
    path.write_text((ROOT / "data" / "verdict_rules.yaml").read_text() + tail)
    with within(60), pytest.raises(CompanionError) as err:
        load(path)
    assert "verdict_rules.yaml" in _one_line(err)
    assert not (tmp_path / "hi").exists()


@pytest.mark.parametrize("fragment", ["## A [link](javascript:alert(1))\n\nx", "## S\n\n[a](javascript:alert(1))",
                                      "## S\n\n![i](javascript:alert(1))", "## S\n\n<javascript:alert(1)>",
                                      "## S\n\n[a][r]\n\n[r]: javascript:alert(1)",
                                      "## S\n\n[a](data:text/html,<script>x</script>)", "## S\n\n[a](vbscript:x)",
                                      "## S\n\n[a](file:///etc/passwd)"])
def test_a_markdown_link_to_a_script_address_is_no_link_in_the_deck(fragment):
    from companion.book.editions import slides as sl

    _, plan = sl.plan_chapter(f"# T\n\n{fragment}\n", [], "c")
    page = "".join(sl.render_slide(s) for s in plan)
    addresses = re.findall(r"""(?:href|src)\s*=\s*["']?([^"'\s>]*)""", page)
    bad = [a for a in addresses if re.match(r"\s*[a-z][a-z0-9+.-]*:", a, re.I) and not re.match(r"(https?|mailto):", a, re.I)]
    assert not bad, bad


@pytest.mark.parametrize("kind", ["link", "fifo"])
def test_taking_a_lock_never_writes_through_a_link_or_fifo_at_its_temporary_name(tmp_path, kind):
    from companion.base.cache import exclusive

    lock = tmp_path / "fit.lock"
    side = tmp_path / f"{lock.name}.{os.getpid()}.{__import__('threading').get_ident()}.new"   # the lock's own temporary name
    victim = tmp_path / "victim.txt"
    victim.write_text(SECRET)
    if kind == "link":
        side.symlink_to(victim)
    else:
        os.mkfifo(side)
    try:
        with within(10, side), exclusive(lock, "fitting", wait_s=0):
            pass
    except CompanionError as err:
        _one_line(err)
    assert victim.read_text() == SECRET


@pytest.mark.parametrize("kind", ["link", "fifo"])
def test_a_verified_model_file_never_records_its_marker_through_a_link_or_fifo(tmp_path, kind):
    import hashlib

    from companion.zoo.assembly import _verified

    main = tmp_path / "model.onnx"
    main.write_bytes(b"weights" * 100)
    sha = hashlib.sha256(main.read_bytes()).hexdigest()
    side = tmp_path / "model.onnx.sha256.json"
    victim = tmp_path / "victim.txt"
    victim.write_text(SECRET)
    if kind == "link":
        side.symlink_to(victim)
    else:
        os.mkfifo(side)
    with within(10, side):
        assert _verified(main, sha, side, verify=True) is True
        assert _verified(main, "0" * 64, side, verify=True) is False
    assert victim.read_text() == SECRET
