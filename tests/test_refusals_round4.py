"""Hardening round 4: hostile and careless inputs to the book's tools, the verdict machinery
and the rules, each refused in one line naming the input (or read correctly), nothing the
user made changed.  (The hub's range answers: tests/test_online_hub.py.)"""

from __future__ import annotations

import json

import pytest

from test_refusals_round3 import _fake_book


@pytest.mark.parametrize("name", ["work", "html"])
def test_student_out_holding_only_a_name_the_build_uses_is_not_deleted(tmp_path, capsys, name):
    """A folder whose only entry is a user's own ``work/`` (or ``html/``) used to pass as the
    build's and was deleted before jupyter-book started."""
    from companion.book.student import main

    root = _fake_book(tmp_path / "repo")
    mine = tmp_path / "mine"
    (mine / name).mkdir(parents=True)
    (mine / name / "thesis.tex").write_text("years of work")
    assert main(["--root", str(root), "--out", str(mine)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "was not made by the student build" in err[0]
    assert (mine / name / "thesis.tex").read_text() == "years of work"


def test_a_users_folder_inside_the_builds_own_out_is_not_replaced(tmp_path, capsys):
    from companion.book.student import _mark, main

    root = _fake_book(tmp_path / "repo")
    out = tmp_path / "out"
    _mark(out)                                   # the build's own folder ...
    (out / "html").mkdir()
    (out / "html" / "index.html").write_text("my own site")   # ... holding a user's html/
    assert main(["--root", str(root), "--out", str(out)]) == 2
    assert "html" in capsys.readouterr().err
    assert (out / "html" / "index.html").read_text() == "my own site"


# ---------------------------------------------------------------- the explorer's embedded data


def test_data_embedded_in_the_explorer_cannot_close_its_script(tmp_path):
    from companion.book.explorer import embed_json

    hostile = {"key": "</script><script>alert(1)</script>", "line": "\u2028", "amp": "<!--"}
    text = embed_json(hostile)
    assert "</script" not in text.lower() and "<!--" not in text and "\u2028" not in text
    assert json.loads(text) == hostile           # still the same data for the page's script


# ---------------------------------------------------------------- the rules files


def _v2_copy(tmp_path, edit):
    from companion.rules.verdicts import RULES_PATH

    p = tmp_path / "verdict_rules.yaml"
    p.write_text(edit(RULES_PATH.read_text()))
    return p


@pytest.mark.parametrize("edit, words", [
    (lambda t: t + "\nversion: 1\n", "written twice"),          # a trailing copy would turn v2 into v1
    (lambda t: t.replace("  level: 0.95\n", "  level: 0.95\n  level: 0.5\n", 1), "written twice"),
    (lambda t: t + "\ndeep: " + "[" * 3000 + "]" * 3000 + "\n", "too deeply"),
])
def test_a_rules_file_that_would_be_read_wrongly_is_refused_in_one_line(tmp_path, edit, words):
    from companion.base.errors import CompanionError
    from companion.rules.verdicts import load_rules

    with pytest.raises(CompanionError, match=words) as err:
        load_rules(_v2_copy(tmp_path, edit))
    assert "\n" not in str(err.value)


# ---------------------------------------------------------------- runs that would pass a gate wrongly


def test_a_run_whose_final_held_out_loss_is_nan_fails_the_context_gate(monkeypatch):
    """The seed mean skipped the NaN seed, so a body with a diverged run passed its gate and
    the claim could read 'holds'."""
    import numpy as np
    import pandas as pd

    import companion.train.studies.evidence as ev

    monkeypatch.setattr(ev, "_unigram_reference", lambda *a, **k: 8.0)
    monkeypatch.setattr(ev, "_shape", lambda run: {"corpus": "c", "seq_len": 8, "top_k": None, "init_from": None})
    rows = [{"run": f"r{s}", "mode": "encoder", "init": "standard", "seed": s, "quantity": "eval_loss",
             "step": 100, "layer": -1, "head": -1, "value": v} for s, v in ((1, 4.0), (2, np.nan), (3, 4.1))]
    gate = ev.loss_gate(pd.DataFrame(rows), [("encoder", "standard")], 0.69)
    assert not gate["passes"] and np.isnan(gate["arms"][("encoder", "standard")]["loss"])
    finite = pd.DataFrame(rows).assign(value=[4.0, 4.05, 4.1])
    assert ev.loss_gate(finite, [("encoder", "standard")], 0.69)["passes"]
