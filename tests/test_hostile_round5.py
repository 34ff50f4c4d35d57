"""Hardening round 5 (issue 74), tried again as a careful but adversarial user would: for each
family of the issue, new cases that are not the issue's own example (another script, another
field, another fence, another offset), each with the refusal it must get or the right value
computed apart from the code under test.  Nothing here may hang (every blocking case runs
under a deadline), lose a file or let markup run."""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import shutil
import stat
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from companion.base.errors import CompanionError
from deadline import within

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data" / "runs"
SECRET = "the user's own file\n"


# ------------------------------------------------------------------ 1. data loss in the run scripts

def _sh(script: str, cwd, timeout=60):
    return subprocess.run(["bash", "-c", script], cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "PY": sys.executable})


def _fresh(folder, cwd):
    return _sh(f'source "{DATA / "workdir.sh"}"; fresh_workdir "$0"'.replace("$0", str(folder)), cwd)


def _tree(folder: Path) -> dict:
    return {str(p.relative_to(folder)): (p.read_text() if p.is_file() and not p.is_symlink() else os.readlink(p)
                                         if p.is_symlink() else "<dir>") for p in sorted(folder.rglob("*"))}


@pytest.mark.parametrize("how", ["marker-is-a-folder", "marker-is-a-link", "dot-dot-into-a-user-folder",
                                 "link-to-a-marked-folder", "trailing-slashes"])
def test_a_work_folder_the_script_did_not_make_is_never_cleared(tmp_path, how):
    user = tmp_path / "user-work"
    user.mkdir()
    (user / "thesis.tex").write_text(SECRET)
    (user / "sub").mkdir()
    (user / "sub" / "data.csv").write_text(SECRET)
    target = user
    if how == "marker-is-a-folder":
        (user / ".companion-workdir").mkdir()
    elif how == "marker-is-a-link":
        (tmp_path / "elsewhere").write_text("made by x")
        (user / ".companion-workdir").symlink_to(tmp_path / "elsewhere")
    elif how == "dot-dot-into-a-user-folder":
        (tmp_path / "made").mkdir()
        target = tmp_path / "made" / ".." / "user-work"
    elif how == "link-to-a-marked-folder":
        (user / ".companion-workdir").write_text("made by device_v3.sh")
        (tmp_path / "link").symlink_to(user)
        target = tmp_path / "link"
    else:
        target = f"{user}//"
    before = _tree(user)
    out = _fresh(target, tmp_path)
    assert out.returncode != 0 and out.stderr.count("\n") == 1, out.stderr
    assert _tree(user) == before


def _cache_remove(dir_, cwd):
    return _sh(f'source "{DATA / "workdir.sh"}"; remove_project_cache "{dir_}"', cwd)


@pytest.mark.parametrize("how", ["dot-dot", "link-inside-cache", "cache-itself"])
def test_only_a_folder_under_the_project_cache_is_removed(tmp_path, how):
    (tmp_path / ".devrun" / "cache").mkdir(parents=True)
    user = tmp_path / "user"
    user.mkdir()
    (user / "keep.txt").write_text(SECRET)
    if how == "dot-dot":
        target = tmp_path / ".devrun" / "cache" / ".." / ".." / "user"
    elif how == "link-inside-cache":
        (tmp_path / ".devrun" / "cache" / "runs").symlink_to(user)
        target = tmp_path / ".devrun" / "cache" / "runs"
    else:
        (tmp_path / ".devrun" / "cache" / "keep.txt").write_text(SECRET)
        target = tmp_path / ".devrun" / "cache"
    _cache_remove(target, tmp_path)
    assert (user / "keep.txt").read_text() == SECRET
    if how == "cache-itself":   # the cache itself is not "a folder under" it
        assert (tmp_path / ".devrun" / "cache" / "keep.txt").read_text() == SECRET


def _run_folder(d: Path, asked: int, last: int):
    d.mkdir(parents=True)
    (d / "provenance.json").write_text(json.dumps({"config": {"steps": asked}}))
    (d / "history.csv").write_text(f"step,quantity,layer,head,value\n0,eval_loss,-1,-1,8.4\n{last},eval_loss,-1,-1,5.1\n")


def _land(cwd, name, steps):
    script = (f'LOG=log; eval "$(sed -n "/^finished()/,/^}}/p;/^land()/,/^}}/p" {DATA}/common.sh)"; '
              f'land {name} w {steps} "weights-step*.safetensors.sha256"')
    return _sh(script, cwd)


@pytest.mark.parametrize("what", ["provenance.json", "history.csv", "weights-step10.safetensors.sha256"])
def test_landing_a_run_never_writes_through_a_link_in_data_runs(tmp_path, what):
    """A link left at data/runs/NAME/FILE (a copy made with cp -s, a user's link to a backup)
    is replaced, never followed: the file it points to stays as it was."""
    (tmp_path / "data" / "runs" / "done").mkdir(parents=True)
    _run_folder(tmp_path / "w" / "done", 10000, 10000)
    (tmp_path / "w" / "done" / "weights-step10.safetensors.sha256").write_text("abc\n")
    victim = tmp_path / "victim.txt"
    victim.write_text(SECRET)
    (tmp_path / "data" / "runs" / "done" / what).symlink_to(victim)
    if what == "history.csv":   # a dangling history.csv link: the run has not landed
        victim.unlink()
        (tmp_path / "data" / "runs" / "done" / what).unlink()
        (tmp_path / "data" / "runs" / "done" / what).symlink_to(tmp_path / "gone.csv")
    _land(tmp_path, "done", 10000)
    if what != "history.csv":
        assert victim.read_text() == SECRET
    assert not (tmp_path / "gone.csv").exists()


def test_landing_into_a_linked_run_folder_is_refused(tmp_path):
    (tmp_path / "data" / "runs").mkdir(parents=True)
    _run_folder(tmp_path / "w" / "done", 10000, 10000)
    (tmp_path / "backup").mkdir()
    (tmp_path / "backup" / "provenance.json").write_text(SECRET)
    (tmp_path / "data" / "runs" / "done").symlink_to(tmp_path / "backup")
    out = _land(tmp_path, "done", 10000)
    assert out.returncode != 0
    assert (tmp_path / "backup" / "provenance.json").read_text() == SECRET


@pytest.mark.parametrize("asked, last, steps", [(200, 120, 200), (10000, 9750, 10000), (20, 20, 10000)])
def test_finished_refuses_a_trial_or_cut_off_run(tmp_path, asked, last, steps):
    _run_folder(tmp_path / "w" / "r", asked, last)
    out = _sh(f'eval "$(sed -n "/^finished()/,/^}}/p" {DATA}/common.sh)"; finished w/r {steps}', tmp_path)
    assert out.returncode == 1 and "not a finished run" in out.stderr


def test_every_script_that_copies_into_data_runs_lands_through_common_sh():
    """A run copied from a work folder into data/runs goes through common.sh's land (which
    checks that it finished): make_guard_probe.sh copied a crashed 200-step probe as finished."""
    plain_copy = re.compile(r"^\s*cp\b[^#\n]*\bdata/runs/\$", re.M)
    found = [p.name for p in DATA.glob("*.sh") if p.name != "common.sh" and plain_copy.search(p.read_text())]
    assert not found, f"scripts that copy a run into data/runs without land(): {found}"


@pytest.mark.parametrize("kind", ["dangling-link", "link-to-folder", "fifo"])
def test_kept_weights_themselves_are_never_written_through_a_link_or_fifo(tmp_path, kind):
    import torch

    from companion.train.runner.checkpoints import keep_weights, kept_weights_path

    out, outside = tmp_path / "run", tmp_path / "elsewhere"
    out.mkdir(), outside.mkdir()
    path = kept_weights_path(out, 5)
    if kind == "dangling-link":
        path.symlink_to(outside / "created-outside.safetensors")
    elif kind == "link-to-folder":
        path.symlink_to(outside)
    else:
        os.mkfifo(path)
    torch.manual_seed(0)
    with within(10, path), pytest.raises(CompanionError):
        keep_weights(torch.nn.Linear(3, 2), path)
    assert os.listdir(outside) == []


# ------------------------------------------------------------------ 2. runs that join the wrong body

def _chars_run():
    from companion.rules.rulebook import load_rules

    name = "charsv4-bert-mini-encoder-standard-s70"
    prov = json.loads((DATA / name / "provenance.json").read_text())
    return name, prov, load_rules()["bodies"]["wikipedia-chars-v4"]


WRONG = [
    ("weight_decay", 0.0, "weight_decay = 0.0"),
    ("grad_accum", 2, "grad_accum = 2"),
    ("max_grad_norm", None, "max_grad_norm = None"),
    ("penalty_coef", 0.5, "penalty_coef = 0.5"),
    ("seq_len", 64, "seq_len = 64"),
    ("width", 512, "width = 512"),
    ("decay_steps", 5000, "decay_steps = 5000"),
    ("smoothing", 0.1, "smoothing = 0.1"),
    ("eval_other", True, "eval_other = True"),
    ("top_k", 8192, "top_k = 8192"),
    ("batch_size", "16", "batch_size = 16"),
    ("extra", {"dropout": 0.3}, "extra"),
    ("label_smoothing", 0.1, "label_smoothing"),      # a field this package's trainer never had
]


@pytest.mark.parametrize("field, value, said", WRONG)
def test_a_run_made_otherwise_is_refused_by_its_body(field, value, said):
    from companion.train.studies.registration import check_registered

    name, prov, body = _chars_run()
    check_registered(name, prov, body, "CPU")                 # the landed run itself is a run of its body
    prov["config"][field] = value
    with pytest.raises(CompanionError, match=re.escape(said)) as err:
        check_registered(name, prov, body, "CPU")
    assert "\n" not in str(err.value) and name in str(err.value)


@pytest.mark.parametrize("field, value", [("num_hidden_layers", 6), ("hidden_dropout_prob", 0.0),
                                          ("layer_norm_eps", 1e-5)])
def test_a_run_of_another_model_shape_is_refused(field, value):
    from companion.train.studies.registration import check_registered

    name, prov, body = _chars_run()
    prov["model_size"][field] = value
    with pytest.raises(CompanionError, match="model_size"):
        check_registered(name, prov, body, "CPU")


def test_two_runs_of_a_version_2_body_differing_in_the_optimiser_are_refused():
    from companion.train.studies.registration import same_learning_config

    base = {"started": "2026-12-01T00:00:00Z", "config": {"mode": "encoder", "init": "standard", "seed": 1, "lr": 1e-3,
                                                          "optimizer": "adamw", "weight_decay": 0.01}}
    other = json.loads(json.dumps(base))
    other["config"].update(seed=2, optimizer="sgd")
    third = json.loads(json.dumps(base))
    third["config"].update(seed=3)
    with pytest.raises(CompanionError, match="optimizer = 'sgd'"):
        same_learning_config({"a": base, "b": other, "c": third}, "test body")


# ------------------------------------------------------------------ 3. a design check that checks less than it says

def _rules_copy(tmp_path, change) -> Path:
    src = ROOT / "data" / "verdict_rules.yaml"
    rules = yaml.safe_load(src.read_text())
    change(rules)
    (tmp_path / "data").mkdir()
    for f in (ROOT / "data").iterdir():           # the committed tables the rules name, beside the copy
        if f.name != "verdict_rules.yaml":
            (tmp_path / "data" / f.name).symlink_to(f)
    path = tmp_path / "data" / "verdict_rules.yaml"
    path.write_text(yaml.safe_dump(rules, sort_keys=False))
    return path


def _first_claim(rules):
    return next(iter(rules["claims"].values()))


def _set_spending(rules, kind):
    from companion.rules.sequential import nominal_levels

    s = rules["framework"]["sequential"]
    s["spending"] = kind
    s["nominal_when_fixed"] = [float(x) for x in nominal_levels(s["looks"], s["alpha"], kind)]


DESIGN = [
    ("a pilot effect of 0.001", lambda r: _first_claim(r)["pilot"].update(estimate_when_fixed=0.001), "pilot"),
    ("a pilot ten times larger", lambda r: _first_claim(r)["pilot"].update(
        estimate_when_fixed=10 * _first_claim(r)["pilot"]["estimate_when_fixed"]), "pilot"),
    ("Pocock spending", lambda r: _set_spending(r, "pocock"), "design table"),
    ("another alpha", lambda r: (r["framework"]["sequential"].update(alpha=0.01),
                                 _set_spending(r, r["framework"]["sequential"]["spending"])), "design table"),
    ("other looks", lambda r: (r["framework"]["sequential"].update(looks=[4, 8, 12]),
                               _set_spending(r, r["framework"]["sequential"]["spending"])), "design table"),
]


@pytest.mark.parametrize("label, change, said", DESIGN, ids=[d[0] for d in DESIGN])
def test_a_design_table_made_for_other_rules_is_refused(tmp_path, label, change, said):
    from companion.rules.rulebook import load_rules
    from companion.rules.sequential import SPENDING

    if label == "Pocock spending" and "pocock" not in SPENDING:
        pytest.skip("no Pocock spending here")
    path = _rules_copy(tmp_path, change)
    with pytest.raises(CompanionError, match=said) as err:
        load_rules(path)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("draws, last_look", [(2_000_000, 935), (1_000_000, 2000), (500_000, 4000)])
def test_a_design_check_too_large_for_memory_is_refused_at_load(tmp_path, draws, last_look):
    """draws x the last look's seeds x 8 bytes: 2,000,000 x 935 asked numpy for 14.9 GB."""
    from companion.rules.rulebook import load_rules
    from companion.rules.sequential import nominal_levels

    def change(r):
        s = r["framework"]["sequential"]
        s["looks"] = [last_look // 4, last_look // 2, last_look]
        s["nominal_when_fixed"] = [float(x) for x in nominal_levels(s["looks"], s["alpha"], s["spending"])]
        r["framework"]["design_check"]["draws"] = draws
        start = 1000
        for b in r["bodies"].values():
            b["seeds"] = list(range(start, start + last_look))
            start += last_look + 1
    path = _rules_copy(tmp_path, change)
    with pytest.raises(CompanionError, match="GB|memory") as err:
        load_rules(path)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("draws", [10_000_000_000, 2**40, 50_000_000])
def test_a_version_2_power_check_too_large_for_memory_is_refused_at_load(tmp_path, draws):
    from companion.rules.rulebook import RULES_HISTORY, load_rules

    rules = yaml.safe_load(RULES_HISTORY[2].read_text())
    rules["framework"]["power"]["draws"] = draws
    path = tmp_path / "verdict_rules_v2.yaml"
    path.write_text(yaml.safe_dump(rules, sort_keys=False))
    with pytest.raises(CompanionError, match="draws") as err:
        load_rules(path)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("looks", [[3, 6, 935], [3, 6, 9, 12, 200], [2, 400]])
def test_a_first_look_too_early_for_its_spending_is_refused_in_one_line(tmp_path, looks):
    """A look given almost none of the error (3 of 935 seeds under O'Brien-Fleming spending)
    crashed the boundary solver (NaN at x=1e-06) instead of being refused."""
    from companion.rules.rulebook import load_rules

    def change(r):
        s = r["framework"]["sequential"]
        s["looks"], s["nominal_when_fixed"] = looks, [0.01] * len(looks)
    path = _rules_copy(tmp_path, change)
    with pytest.raises(CompanionError, match="too little for a boundary") as err:
        load_rules(path)
    assert "\n" not in str(err.value) and "framework.sequential" in str(err.value)


# ------------------------------------------------------------------ 4. markup injection

class _Page(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.problems = []

    def handle_starttag(self, tag, attrs):
        if tag in ("script", "iframe", "object", "embed", "style", "base", "meta", "link", "form"):
            self.problems.append(tag)
        for name, value in attrs:
            bare = re.sub(r"[\x00-\x20\x7f]", "", value or "").lower()
            if name.startswith("on") or name in ("style", "srcdoc", "formaction"):
                self.problems.append(f"{tag} {name}")
            if name in ("href", "src", "action", "data", "xlink:href", "srcset", "poster", "background") \
                    and re.match(r"(javascript|vbscript|data:text|file):", bare):
                self.problems.append(f"{tag} {name}={value}")

    handle_startendtag = handle_starttag


def _problems(page: str) -> list:
    p = _Page()
    p.feed(page)
    p.close()
    return p.problems


SNEAKY = ['<a href="&#106;avascript:alert(1)">a</a>', '<a href="javascript&colon;alert(1)">b</a>',
          '<a href="java&Tab;script:alert(1)">c</a>', '<img src=x srcset="javascript:alert(1)">',
          '<a href=x onfocus=alert(1) autofocus>d</a>', '<img src="data:image/png;base64,AAAA" onload=x>',
          '<video poster=javascript:alert(1)></video>', '<table background="javascript:x"><tr><td>e</td></tr></table>',
          '<a href="JaVaScRiPt:alert(1)">f</a>', "<svg><a xlink:href=javascript:x>g</a></svg>",
          '<iframe srcdoc="<script>x</script>"></iframe>', '<button formaction=javascript:x>h</button>']


@pytest.mark.parametrize("fragment", SNEAKY)
def test_a_chapter_s_sneaky_html_is_inert_in_the_deck(fragment):
    from companion.book.editions import slides as sl

    from collections import Counter

    def deck(paragraph):
        chapter = f"# A chapter\n\n## A section\n\nBefore.\n\n{paragraph}\n\nAfter.\n"
        title, slides = sl.plan_chapter(chapter, [], "chapter")
        return sl.deck_html(title, [sl.render_slide(s) for s in slides])

    own = Counter(_problems(deck("plain")))              # the deck's own head: its styles and scripts
    added = Counter(_problems(deck(fragment))) - own
    assert not added, added


PASTED = ["<svg/onload=alert(1)>", "</p><script>x</script>", "\"><img src=x onerror=y>", "{glue:text}`x`",
          "<!-- x -->", "&lt;script&gt;", "1. <b>x</b>", "```{solution}", "$$x$$", "[a](javascript:alert(1))"]


@pytest.mark.parametrize("value", PASTED)
def test_a_pasted_value_reads_as_itself_in_both_builders(value):
    from markdown_it import MarkdownIt

    from companion.book.site.markup import pasted

    md = MarkdownIt("commonmark", {"html": True})
    page = md.render(f"Before {pasted(value)} after.\n")
    assert not _problems(page) and "<a " not in page and "<img" not in page and "<b>" not in page
    text = re.sub(r"<[^>]+>", "", page)
    import html as _html

    assert _html.unescape(text).strip() == f"Before {' '.join(value.split())} after."


# ------------------------------------------------------------------ 5. solutions reaching students

LEAKS = [
    "~~~{solution} ex-a\nTILDE-SECRET\n~~~\n",
    "````{solution} ex-a\n```python\nFENCED-SECRET = 1\n```\n````\n",
    "- item\n\n  :::{solution} ex-a\n  LIST-SECRET\n  :::\n",
    "> :::{solution} ex-a\n> QUOTE-SECRET\n> :::\n",
    "```{solution-start} ex-a\n```\n\nGATED-SECRET\n\n```{code-cell} python\nGATED_CODE_SECRET = 1\n```\n\n```{solution-end}\n```\n",
    ":::{solution-start} ex-a\n:::\n\nCOLON-GATED-SECRET\n\n:::{solution-end}\n:::\n",
    "::::{exercise}\n:label: ex-a\nDo it.\n\n:::{solution}\nNESTED-SECRET\n:::\n::::\n",
    "```{exercise:solution} ex-a\nDOMAIN-SECRET\n```\n",
    "```{ solution } ex-a\nSPACED-SECRET\n```\n",
]


@pytest.mark.parametrize("block", LEAKS)
def test_no_form_of_a_solution_reaches_the_student_text(block):
    from companion.book.editions.solutions import strip_solutions

    page = f"# A chapter\n\nBefore.\n\n{block}\nAfter.\n"
    out = strip_solutions(page)
    assert "SECRET" not in out and "Before." in out and "After." in out


@pytest.mark.parametrize("block, said", [
    ("```{solution-start} ex-a\n```\n\nOPEN-SECRET\n", "never closed"),
    ("```{solution-end}\n```\n", "closes no"),
    (":::{solution}\nUNCLOSED-SECRET\n", "solution"),
])
def test_a_broken_solution_is_refused_not_leaked(block, said):
    from companion.book.editions.solutions import strip_solutions

    try:
        out = strip_solutions(f"# A chapter\n\n{block}")
    except ValueError as err:
        assert said in str(err) and "\n" not in str(err)
    else:
        assert "SECRET" not in out


# ------------------------------------------------------------------ 6. dates that move

@pytest.mark.parametrize("stamp, why", [
    ("2026-12-06T10:00:00+24:00", "not a date and time that exists"),
    ("2026-12-06T10:00:00-25:00", "not a date and time that exists"),
    ("2026-12-06T24:30:00Z", "not a date and time that exists"),
    ("2026-12-06T10:00:00 CET", "not a date and time that exists"),
    (True, "not a date and time written as text"),
    (float("nan"), "is a number"),
    (["2026-12-06T10:00:00Z"], "not a date and time written as text"),
    ("2026-12-06T10:00:00.123456", "names no time zone"),
    ("  2026-12-06 10:00  ", "names no time zone"),
])
def test_a_bad_stamp_is_named(stamp, why):
    from companion.train.runner.provenance import stamp_problem

    said = stamp_problem(stamp)
    assert said is not None and why in said


@pytest.mark.parametrize("stamp", ["2026-12-06T10:00:00+05:30", "2026-12-06T10:00:00.5Z", "2026-12-06 10:00:00+00:00"])
def test_a_good_stamp_is_read(stamp):
    from companion.train.runner.provenance import stamp_problem

    assert stamp_problem(stamp) is None


@pytest.mark.parametrize("prov, said", [
    ({"started": "2026-12-06T12:00:00Z", "date": "2026-12-06T11:00:00Z"}, "before it started"),
    ({"started": "2026-12-06T12:00:00-01:00", "date": "2026-12-06T12:30:00Z"}, "before it started"),
    ({"started": "2026-12-06T12:00:00Z", "sittings": [{"from_step": 0, "started": "2026-12-01T12:00:00Z"}]},
     "before the run started"),
    ({"started": "2026-12-06T12:00:00Z", "date": "2026-12-06T13:00:00Z",
      "sittings": [{"from_step": 0, "started": "2026-12-06T12:00:00Z"},
                   {"from_step": 500, "started": "2026-12-06T14:00:00Z"}]}, "after the run finished"),
])
def test_stamps_that_cannot_all_be_true_are_refused(prov, said):
    from companion.train.runner.provenance import check_stamps

    with pytest.raises(CompanionError, match=said) as err:
        check_stamps(prov, "r", "r")
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("stamp, day", [("2026-12-06T23:30:00-05:00", "2026-12-07"),
                                        ("2026-12-07T01:00:00+05:30", "2026-12-06"),
                                        ("2026-12-06T10:00:00Z", "2026-12-06")])
def test_the_run_catalogue_dates_a_run_by_its_utc_day(tmp_path, stamp, day):
    from companion.train.runner.runs import run_catalogue

    d = tmp_path / "x-run-s0"
    d.mkdir()
    (d / "provenance.json").write_text(json.dumps({"config": {"steps": 10, "seed": 0}, "started": stamp,
                                                   "hardware": {"device": "cpu (1 threads)"}}))
    (d / "history.csv").write_text("step,quantity,layer,head,value\n10,eval_loss,-1,-1,1\n")
    (tmp_path / "scripts.csv").write_text("pattern,script,plan,what\nx-*,x.sh,p.md,test\n")
    assert run_catalogue(tmp_path)["started"].iloc[0] == day


def _git(repo, *args, date=None):
    env = {**os.environ, "GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@x", "GIT_COMMITTER_NAME": "a",
           "GIT_COMMITTER_EMAIL": "a@x"}
    if date:
        env.update(GIT_AUTHOR_DATE=date, GIT_COMMITTER_DATE=date)
    return subprocess.run(["git", *args], cwd=repo, env=env, capture_output=True, text=True, check=True).stdout


@pytest.mark.parametrize("later", ["amend", "rebase", "rename"])
def test_the_rules_are_dated_when_written_not_when_last_rewritten(tmp_path, later):
    """The rules entered at 10:00; an amend (of the message), a rebase onto a newer commit or a
    move of the file at 12:00 must not make a run started at 11:00 read as made before them."""
    from companion.rules.verdicts import rule_commit_time, started_before_rule

    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    _git(repo, "commit", "-q", "--allow-empty", "-m", "root", date="2026-12-06T09:00:00Z")
    stamp = "2026-12-06T09:59:00+00:00"
    (repo / "rules.yaml").write_text(f"fixed: {stamp}\n")
    _git(repo, "add", "rules.yaml")
    _git(repo, "commit", "-q", "-m", "rules", date="2026-12-06T10:00:00Z")
    path = repo / "rules.yaml"
    if later == "amend":
        env_date = "2026-12-06T12:00:00Z"
        subprocess.run(["git", "commit", "-q", "--amend", "-m", "rules, said better"], cwd=repo, check=True,
                       env={**os.environ, "GIT_COMMITTER_DATE": env_date, "GIT_COMMITTER_NAME": "a",
                            "GIT_COMMITTER_EMAIL": "a@x"})
    elif later == "rebase":
        branch = _git(repo, "rev-parse", "--abbrev-ref", "HEAD").strip()
        _git(repo, "checkout", "-q", "-b", "side", "HEAD~1")
        _git(repo, "commit", "-q", "--allow-empty", "-m", "other", date="2026-12-06T09:30:00Z")
        subprocess.run(["git", "rebase", "-q", "side", branch], cwd=repo, check=True, capture_output=True,
                       env={**os.environ, "GIT_COMMITTER_DATE": "2026-12-06T12:00:00Z", "GIT_COMMITTER_NAME": "a",
                            "GIT_COMMITTER_EMAIL": "a@x"})
    else:
        (repo / "history").mkdir()
        _git(repo, "mv", "rules.yaml", "history/rules_v9.yaml")
        _git(repo, "commit", "-q", "-m", "move", date="2026-12-06T12:00:00Z")
        path = repo / "history" / "rules_v9.yaml"
    when = rule_commit_time(dt.datetime.fromisoformat(stamp), path)
    assert when is not None and when == dt.datetime(2026, 12, 6, 10, tzinfo=dt.timezone.utc)
    assert not started_before_rule("2026-12-06T11:00:00Z", stamp, when)
    assert started_before_rule("2026-12-06T09:58:00Z", stamp, when)
    # a commit dated before the stamp it holds (a back-dated author time) moves nothing earlier
    assert started_before_rule("2026-12-06T09:58:30Z", stamp, dt.datetime(2026, 12, 6, 9, tzinfo=dt.timezone.utc))


# ------------------------------------------------------------------ 7-8. duplicated final steps, a layer missing

from mix_blind_runs import BODY, RUNS, runs_in  # noqa: E402  (the three copied runs the body tests edit)


@pytest.fixture
def root(tmp_path, monkeypatch):
    return runs_in(tmp_path, monkeypatch)


def _hist(root, run):
    return pd.read_csv(root / run / "history.csv")


def _final_symmetry_by_hand(h: pd.DataFrame) -> float:
    rows = h[(h.quantity == "symmetry") & (h["head"] == -1)]
    last = rows[rows.step == rows.step.max()]
    return float(last["value"].sum() / 4)    # BERT-Mini's four layers


@pytest.mark.parametrize("how", ["same-value", "step-as-float", "head-row", "final-loss-text"])
def test_a_value_logged_twice_is_never_averaged(root, how):
    from companion.train.studies.evidence import body_runs

    h = _hist(root, RUNS[0])
    if how == "head-row":
        row = h[(h.quantity == "directionality") & (h["head"] >= 0) & (h.step == 10000)].head(1)
        extra = row.assign(value=(row["value"] + 1) / 2)   # another value, still a score in [-1, 1]
    elif how == "final-loss-text":
        row = h[(h.quantity == "eval_loss") & (h.step == 10000)]
        extra = row.assign(value=row["value"] - 1)
    else:
        row = h[(h.quantity == "symmetry") & (h["head"] == -1) & (h.step == 10000)].head(1)
        extra = row.assign(value=row["value"] + (0 if how == "same-value" else 0.5))
    both = pd.concat([h, extra], ignore_index=True)
    if how == "step-as-float":
        both["step"] = both["step"].astype(float)
    both.to_csv(root / RUNS[0] / "history.csv", index=False)
    with pytest.raises(CompanionError, match="times") as err:
        body_runs(BODY)
    assert "\n" not in str(err.value)


def test_two_folders_of_one_arm_and_seed_are_not_averaged(root):
    from companion.train.studies.evidence import arm_values, body_runs

    twin = root / (RUNS[0] + "-again")
    shutil.copytree(root / RUNS[0], twin)
    h = _hist(root, RUNS[0])
    h.loc[h.quantity == "symmetry", "value"] += 0.3
    h.to_csv(twin / "history.csv", index=False)
    try:
        runs = body_runs(BODY)
        got = arm_values(runs, "symmetry", "encoder").loc[20]
    except CompanionError as err:
        assert "\n" not in str(err)
        return
    assert got == pytest.approx(_final_symmetry_by_hand(_hist(root, RUNS[0])))


@pytest.mark.parametrize("how", ["nan-value", "empty-value", "inf-value"])
def test_a_layer_without_a_number_at_the_horizon_is_not_dropped_from_the_mean(root, how):
    from companion.train.studies.evidence import arm_values, body_runs

    h = _hist(root, RUNS[0])
    final = h.index[(h.quantity == "symmetry") & (h["head"] == -1) & (h.step == 10000)][-1]
    h["value"] = h["value"].astype(object)
    h.loc[final, "value"] = {"nan-value": "nan", "empty-value": "", "inf-value": "inf"}[how]
    h.to_csv(root / RUNS[0] / "history.csv", index=False)
    try:
        runs = body_runs(BODY)
        got = arm_values(runs, "symmetry", "encoder").loc[20]
    except CompanionError as err:
        assert RUNS[0] in str(err) and "\n" not in str(err)
        return
    assert not np.isfinite(got), f"a layer without a number read as the mean of the others: {got}"


def test_a_layer_missing_at_every_step_is_refused_without_a_model_size(root):
    from companion.train.studies.evidence import body_runs

    h = _hist(root, RUNS[1])
    h = h[~((h.quantity == "symmetry") & (h.layer == 3))]
    h.to_csv(root / RUNS[1] / "history.csv", index=False)
    p = json.loads((root / RUNS[1] / "provenance.json").read_text())
    p.pop("model_size", None)
    (root / RUNS[1] / "provenance.json").write_text(json.dumps(p))
    with pytest.raises(CompanionError, match=RUNS[1]):
        body_runs(BODY)


# ------------------------------------------------------------------ 9. no decided outcome on zero spread

@pytest.mark.parametrize("values", [[0.5, 0.5, 0.5], [0.2] * 6, [-0.7, -0.7, -0.7]])
def test_zero_spread_decides_no_outcome_on_any_path(values):
    from companion.rules.sequential import look_estimate, look_outcome
    from companion.rules.statistics import (directional_outcome, equivalence_outcome, one_sample_t,
                                            threshold_outcome)

    est = one_sample_t(values)
    assert directional_outcome(est, 0.1) == "not testable here"
    assert threshold_outcome(est, 0.3) == "not testable here"
    assert equivalence_outcome(est, 0.1) == "not testable here"
    assert look_outcome(look_estimate(values, 0.01), 0.1) == "not testable here"


# ------------------------------------------------------------------ 10. build_status: devices and steps

@pytest.mark.parametrize("device, kind", [
    ("AMD EPYC 7B13 64-Core Processor", "CPU"), ("Intel(R) Xeon(R) CPU @ 2.20GHz", "CPU"),
    ("cpu (16 threads)", "CPU"), ("NVIDIA A100-SXM4-40GB", "GPU"), ("AMD Instinct MI250X", "GPU"),
    ("Tesla T4", "GPU"), ("unknown", "unrecorded"), ("TPU v4", "unrecorded"), ("Apple M2 (mps)", "unrecorded"),
    ("H100? not sure", "unrecorded"), ("?", "unrecorded"), (None, "unrecorded"), (12, "unrecorded"),
])
def test_a_device_is_counted_as_what_it_is(device, kind):
    from companion.book.site.build_status import device_kind

    assert device_kind(device) == kind


@pytest.mark.parametrize("steps, shown", [(None, "not recorded"), ("ten thousand", "not recorded"), (True, "not recorded"),
                                          (1e4, "10000"), (-1, "not recorded"), (float("nan"), "not recorded")])
def test_a_run_set_with_odd_steps_reads_them_without_failing(tmp_path, steps, shown):
    from companion.book.site.build_status import cached_run_sets

    d = tmp_path / "x-bert-mini-encoder-standard-s0"
    d.mkdir()
    prov = {"config": {"steps": steps, "corpus": "c"}, "hardware": {"device": "cpu (1 threads)"}, "duration_s": None}
    (d / "provenance.json").write_text(json.dumps(prov))
    (d / "history.csv").write_text("step,quantity,layer,head,value\n0,eval_loss,-1,-1,1\n")
    rows = cached_run_sets(tmp_path)
    assert rows[0]["steps"] == shown and rows[0]["kind"] == "CPU" and rows[0]["hours"] == 0


# ------------------------------------------------------------------ 11. answer boxes quote the rules' own thresholds

@pytest.mark.parametrize("floor, guard", [(0.6931, 0.10), (0.5, 0.125), (1.25, 0.075)])
def test_the_answer_box_quotes_the_thresholds_the_rules_set(floor, guard):
    from companion.train.studies.blind import answer_parts

    class V:
        status, measured = "holds", "+0.1"

    rules = {"framework": {"gate": {"context_floor_nats": floor, "memorisation_nats": guard}}}
    gates = pd.DataFrame([{"arm": "decoder/standard", "context floor": "fails", "memorisation guard": "fails",
                           "memorisation gap (mean)": guard + 0.3, "(smallest)": guard + 0.1, "seeds": 3,
                           "below the reference": floor / 2}])
    tests = {k: {"body": "b"} for k in ("training_symmetry", "training_directionality", "symmetric_init_structure",
                                        "table_1")}
    out = answer_parts({k: V() for k in tests}, tests, gates, rules)["why"]
    for value in (floor, guard):
        shown = re.findall(r"[-+]?\d+\.\d+", out)
        assert any(float(s) == value for s in shown), f"the rules' {value} is not quoted as set: {out}"
