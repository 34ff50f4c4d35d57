"""A run's logs are read whole or refused in one line naming the run and the fix: a value
logged twice is never averaged, a value logged past the run's horizon or a cut-off row set is
never read as the horizon's, and a start stamp that is a number, has an impossible offset or no
time zone is refused where the provenance is read."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from companion.base.errors import CompanionError

DATA = Path(__file__).resolve().parents[1] / "data" / "runs"
RUNS = [f"mixblind-bert-mini-encoder-standard-s{s}" for s in (20, 21, 22)]
BODY = {"label": "test body", "pattern": "mixblind-bert-mini-*", "seeds": [20, 21, 22], "steps": 10000, "lr": 0.001}


@pytest.fixture
def root(tmp_path, monkeypatch):
    import companion.train.runner.runs as runs

    for r in RUNS:
        shutil.copytree(DATA / r, tmp_path / r)
    monkeypatch.setattr(runs, "runs_root", lambda: tmp_path)
    return tmp_path


def _history(root, run) -> pd.DataFrame:
    return pd.read_csv(root / run / "history.csv")


def _write(root, run, hist: pd.DataFrame):
    hist.to_csv(root / run / "history.csv", index=False)


def _provenance(root, run, change):
    path = root / run / "provenance.json"
    p = json.loads(path.read_text())
    change(p)
    path.write_text(json.dumps(p))


def _final_symmetry(runs, seed):
    from companion.train.studies.evidence import arm_values

    return arm_values(runs, "symmetry", "encoder").loc[seed]


def test_the_copied_runs_read_their_final_symmetry(root):
    from companion.train.studies.evidence import body_runs

    runs = body_runs(BODY)
    h = _history(root, RUNS[0])
    last = h[(h.quantity == "symmetry") & (h["head"] == -1) & (h.step == 10000)]["value"].mean()
    assert _final_symmetry(runs, 20) == pytest.approx(last)


def test_a_final_step_logged_twice_is_refused_not_averaged(root):
    from companion.train.studies.evidence import body_runs

    h = _history(root, RUNS[0])
    row = h[(h.quantity == "symmetry") & (h["head"] == -1) & (h.step == 10000) & (h.layer == 0)]
    _write(root, RUNS[0], pd.concat([h, row.assign(value=row["value"] + 0.5)], ignore_index=True))
    with pytest.raises(CompanionError, match=rf"run {RUNS[0]}: its history.csv logs symmetry of layer 0 at step "
                                             r"10000 2 times .*copy history.csv again"):
        body_runs(BODY)


def test_a_final_loss_logged_twice_is_refused(root):
    from companion.train.studies.evidence import body_runs

    h = _history(root, RUNS[1])
    row = h[(h.quantity == "eval_loss") & (h.step == 10000)]
    _write(root, RUNS[1], pd.concat([h, row.assign(value=9.0)], ignore_index=True))
    with pytest.raises(CompanionError, match=rf"run {RUNS[1]}: its history.csv logs eval_loss at step 10000 2 times"):
        body_runs(BODY)


def test_arm_values_refuse_a_row_given_twice_in_memory():
    from companion.train.studies.evidence import arm_values

    rows = [dict(run="r0", mode="encoder", init="standard", seed=0, step=10, quantity="symmetry",
                 layer=layer, head=-1, value=0.5) for layer in (0, 1)]
    t = pd.DataFrame(rows + [dict(rows[0], value=0.9)])       # the old mean read 0.633, no layer's value
    with pytest.raises(CompanionError, match="run r0: layer 0's symmetry at step 10 is logged 2 times"):
        arm_values(t, "symmetry", "encoder")


def test_a_structure_value_past_the_horizon_is_refused(root):
    from companion.train.studies.evidence import body_runs

    h = _history(root, RUNS[2])
    late = h[(h.quantity == "symmetry") & (h.step == 10000)].assign(step=12000, value=0.99)
    _write(root, RUNS[2], pd.concat([h, late], ignore_index=True))
    with pytest.raises(CompanionError, match=rf"run {RUNS[2]}: its history.csv logs symmetry at step 12000, past "
                                             r"the run's 10000 steps"):
        body_runs(BODY)


def test_a_structure_value_after_the_last_evaluation_is_not_read_as_the_final_one():
    from companion.train.studies.evidence import arm_values

    rows = [dict(run="r0", mode="encoder", init="standard", seed=0, step=st, quantity=q, layer=layer, head=-1,
                 value=v) for st, v in ((10, 0.2), (20, 0.9)) for q, layer in (("symmetry", 0), ("eval_loss", -1))]
    t = pd.DataFrame(rows)
    t = t[~((t.quantity == "eval_loss") & (t.step == 20))]    # its evaluations end at 10; a symmetry at 20
    with pytest.raises(CompanionError, match="run r0: its last symmetry is logged at step 20 but its last "
                                             "evaluation at step 10"):
        arm_values(t, "symmetry", "encoder")


def test_a_cut_off_row_set_is_refused_not_read_over_the_layers_left(root):
    from companion.train.studies.evidence import body_runs

    h = _history(root, RUNS[0])
    final = (h.quantity == "symmetry") & (h["head"] == -1) & (h.step == 10000)
    drop = h.index[final][-1]                                   # the last layer's final symmetry lost
    _write(root, RUNS[0], h.drop(index=drop))
    with pytest.raises(CompanionError, match=rf"run {RUNS[0]}: its history.csv logs symmetry for \d+ of its \d+ "
                                             r"layers and heads at step 10000; the file is cut off"):
        body_runs(BODY)


def test_a_history_cut_off_before_its_last_scores_is_refused(root):
    from companion.train.studies.evidence import body_runs

    h = _history(root, RUNS[0])
    gone = h.quantity.isin(["symmetry", "directionality"]) & (h.step == 10000)
    _write(root, RUNS[0], h[~gone])                              # the final step's scores lost, its loss kept
    runs = body_runs(BODY)
    with pytest.raises(CompanionError, match=rf"run {RUNS[0]}: its last symmetry is logged at step \d+ but its "
                                             r"last evaluation at step 10000"):
        _final_symmetry(runs, 20)


@pytest.mark.parametrize("stamp, why", [
    (1765036395, "is a number, not a date and time written as text"),
    (1765036395.5, "is a number, not a date and time written as text"),
    ("2026-12-06T10:00:00+25:00", "is not a date and time that exists"),
    ("2026-12-06T10:00:00", "names no time zone"),
    ("2026-12-06", "gives no time of day"),
    ("2026-02-30T10:00:00Z", "is not a date and time that exists"),
    ("", "gives no time of day"),
])
def test_a_bad_start_stamp_is_refused_where_it_is_read(root, stamp, why):
    from companion.train.runner.runs import read_provenance
    from companion.train.studies.evidence import body_runs, run_starts

    _provenance(root, RUNS[1], lambda p: p.update(started=stamp))
    for read in (lambda: body_runs(BODY), lambda: read_provenance(root / RUNS[1]),
                 lambda: run_starts(pd.DataFrame({"run": [RUNS[1]]}))):
        with pytest.raises(CompanionError, match=rf"run {RUNS[1]}: its provenance.json's started .*{why}"):
            read()


def test_a_good_start_stamp_with_an_offset_is_read(root):
    from companion.train.studies.evidence import body_runs, run_starts

    # the run's own start (2026-11-27T14:05:20Z) written with an offset: the same instant, so
    # the fields the run predates are still read as their defaults
    _provenance(root, RUNS[1], lambda p: p.update(started="2026-11-27T19:35:20+05:30"))
    assert body_runs(BODY) is not None
    assert run_starts(pd.DataFrame({"run": [RUNS[1]]}))[RUNS[1]] == "2026-11-27T19:35:20+05:30"


def test_a_bad_finishing_date_or_sitting_stamp_is_refused(root):
    from companion.train.studies.evidence import body_runs

    _provenance(root, RUNS[2], lambda p: p.update(date="2026-12-06T10:00:00"))
    with pytest.raises(CompanionError, match=rf"run {RUNS[2]}: its provenance.json's date .*names no time zone"):
        body_runs(BODY)
    _provenance(root, RUNS[2], lambda p: p.update(date="2026-12-06T10:00:00Z",
                                                 sittings=[{"from_step": 0, "started": 5}]))
    with pytest.raises(CompanionError, match=rf"run {RUNS[2]}: its provenance.json's sittings\[0\].started"):
        body_runs(BODY)


def test_the_run_catalogue_refuses_a_bad_stamp_in_one_line(root):
    from companion.train.runner.runs import run_catalogue

    _provenance(root, RUNS[0], lambda p: p.update(started="2026-12-06T10:00:00+25:00"))
    (root / "scripts.csv").write_text("pattern,script,plan,what\nmixblind-*,x.sh,p.md,test\n")
    with pytest.raises(CompanionError) as err:
        run_catalogue(root)
    assert RUNS[0] in str(err.value) and "\n" not in str(err.value)


def test_every_committed_run_reads_whole():
    """The checks refuse nothing the runs in data/runs hold."""
    from companion.train.runner.provenance import read_run

    for d in sorted(DATA.iterdir()):
        if (d / "history.csv").is_file():
            read_run(d)


def test_the_run_catalogue_refuses_a_run_folder_linked_to_another_rather_than_count_it_twice(root):
    from companion.train.runner.runs import run_catalogue

    (root / "scripts.csv").write_text("pattern,script,plan,what\nmixblind-*,x.sh,p.md,test\n")
    n = int(run_catalogue(root)["n"].sum())
    (root / (RUNS[0] + "-copy")).symlink_to(root / RUNS[0])
    with pytest.raises(CompanionError, match=RUNS[0]) as err:
        run_catalogue(root)
    assert "\n" not in str(err.value)
    (root / (RUNS[0] + "-copy")).unlink()
    assert int(run_catalogue(root)["n"].sum()) == n == len([d for d in root.iterdir() if (d / "history.csv").is_file()])
