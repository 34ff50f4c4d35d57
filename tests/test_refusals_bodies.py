"""A body's runs are checked against the body before any verdict reads them: a run without
provenance, at another learning rate or on other text is refused in one line that names the
run and the fix, instead of vanishing the body or joining it."""

from __future__ import annotations

import json

import pytest

from companion.base.errors import CompanionError

from mix_blind_runs import BODY, RUNS, runs_in


@pytest.fixture
def root(tmp_path, monkeypatch):
    return runs_in(tmp_path, monkeypatch)


def _edit(root, run, change):
    path = root / run / "provenance.json"
    p = json.loads(path.read_text())
    change(p)
    path.write_text(json.dumps(p))


def test_the_copied_body_is_read_whole(root):
    from companion.train.studies.evidence import body_runs

    runs = body_runs(BODY)
    assert sorted(runs["run"].unique()) == RUNS and set(runs["lr"]) == {0.001}


def test_a_run_with_history_but_no_provenance_is_named_not_the_body_dropped(root):
    from companion.train.studies.evidence import body_runs

    (root / RUNS[1] / "provenance.json").unlink()
    with pytest.raises(CompanionError, match=f"run {RUNS[1]} has a history but no provenance.json"):
        body_runs(BODY)


def test_a_run_whose_provenance_is_not_json_is_named(root):
    from companion.train.studies.evidence import body_runs

    (root / RUNS[2] / "provenance.json").write_text("{\"config\": ")
    with pytest.raises(CompanionError, match=f"run {RUNS[2]}: its provenance.json cannot be read"):
        body_runs(BODY)


def test_a_run_at_another_learning_rate_is_refused(root):
    from companion.train.studies.evidence import body_runs

    _edit(root, RUNS[0], lambda p: p["config"].update(lr=3e-4))
    with pytest.raises(CompanionError, match=f"run {RUNS[0]} was trained at learning rate 0.0003.*at 0.001"):
        body_runs(BODY)


def test_a_run_on_other_text_is_refused(root):
    from companion.train.studies.evidence import body_runs

    _edit(root, RUNS[2], lambda p: p["data"].update(documents_sha256="f" * 64))
    with pytest.raises(CompanionError, match=f"run {RUNS[2]} of the body 'test body' was trained on other text"):
        body_runs(BODY)


def test_the_command_line_refuses_in_one_line(root, tmp_path):
    """The catalogue of runs reads the same folders: one line, no traceback."""
    from companion.train.runner.runs import load_runs

    (root / RUNS[0] / "provenance.json").unlink()
    with pytest.raises(CompanionError) as err:
        load_runs(root=root)
    assert "\n" not in str(err.value) and RUNS[0] in str(err.value)
