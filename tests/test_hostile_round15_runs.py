"""How a run is admitted into a registered body and paired with its arms, tried with odd and
hostile run folders: a history cut off mid-row, a header naming a column twice, a history
linked to another run's, a copied run with its seed edited, a cut-off horizon, stamps and
provenance numbers of the wrong form.  The runs are small synthetic ones of the English-mix
v3 body, each made as its registration says and then changed in one way."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from companion.base.errors import CompanionError
from companion.train.runner.runs import load_runs, read_provenance
from companion.train.studies import registered_bodies as rb
from companion.train.studies import registration as reg

STEPS = 10000
E, D = "encoder/standard", "decoder/standard"
COLUMNS = ["step", "quantity", "layer", "head", "value"]


@pytest.fixture(scope="module")
def body():
    """The English-mix v3 body as the rules file writes it (read with YAML alone: checking the
    whole rules file computes the sequential design, seconds this file does not need)."""
    import yaml

    rules = yaml.safe_load((Path(__file__).resolve().parents[1] / "data" / "verdict_rules.yaml").read_text())
    return dict(rules["bodies"]["english-mix-v3"])


@pytest.fixture
def rules(body):
    return {"bodies": {"english-mix-v3": body}}


def _name(body, arm, seed):
    return reg.run_name(body, arm, seed)


def _prov(body, arm, seed, started="2026-12-01T00:00:00Z", device="cpu (1 threads)", **cfg):
    """A provenance as the trainer writes it for this arm and seed of the body (its registration)."""
    want = reg.registered_config(body, arm, seed)
    size = want.pop("model_size")
    want.update(cpu_bf16=True, bf16=True, **cfg)
    return {"started": started, "hardware": {"device": device}, "seed": seed, "config": want,
            "model_size": size, "data": {"documents_sha256": "abc", "train_tokens": 1000, "seq_len": 128}}


def _rows(sym=0.5, last=None):
    """A history at half horizon and horizon: eval loss, four layers' scores, the guard."""
    rows = []
    for step in (STEPS // 2, STEPS):
        rows.append((step, "eval_loss", -1, -1, 4.3 if step < STEPS else 4.0))
        for layer in range(4):
            rows.append((step, "symmetry", layer, -1, sym))
            rows.append((step, "directionality", layer, -1, -sym))
        rows += [(step, "guard_seen_loss", -1, -1, 4.0), (step, "guard_unseen_loss", -1, -1, 4.02),
                 (step, "guard_heldout_loss", -1, -1, 4.03)]
        rows += [(step, f"guard_{k}_blocks", -1, -1, 320) for k in ("seen", "unseen", "heldout")]
    if last is not None:   # one row moved to the end of the file, with its own value
        rows = [r for r in rows if r[:4] != last[:4]] + [last]
    return rows


def _write(root, body, arm, seed, sym=0.5, rows=None, prov=None, name=None, **kw):
    d = Path(root) / (name or _name(body, arm, seed))
    d.mkdir(parents=True)
    pd.DataFrame(_rows(sym) if rows is None else rows, columns=COLUMNS).to_csv(d / "history.csv", index=False)
    (d / "provenance.json").write_text(json.dumps(prov if prov is not None else _prov(body, arm, seed, **kw)))
    return d


def _pairs(root, body, effects, first=30):
    for seed, e in zip(range(first, first + len(effects)), effects):
        _write(root, body, E, seed, sym=e)
        _write(root, body, D, seed, sym=0.0)


def _read(root, body):
    return rb.body_runs_at_looks(body, body["registered"]["fixed"], None, root=root)


def _paired(runs, body, seeds, step=None):
    rule = {"candidate": E, "comparator": D, "quantity": "symmetry", "body": "english-mix-v3", "body_rule": body}
    return rb.paired_values(runs, rule, list(seeds), step)


def _refused(call, *patterns):
    with pytest.raises(CompanionError) as err:
        call()
    msg = str(err.value)
    assert "\n" not in msg and "Traceback" not in msg, msg
    for pat in patterns:
        assert re.search(pat, msg), msg
    return msg


def _edit(path, change):
    path.write_bytes(change(path.read_bytes()))


# ------------------------------------------------------------------ the history's bytes


def test_a_history_cut_off_in_the_middle_of_its_last_value_is_refused_not_read_short(tmp_path, body):
    """The last row is layer 3's symmetry at the horizon, 0.523; a copy cut one byte short
    reads 0.52 there, a layer mean of 0.505 instead of 0.50575."""
    _write(tmp_path, body, E, 30, rows=_rows(0.5, last=(STEPS, "symmetry", 3, -1, 0.523)))
    _write(tmp_path, body, D, 30, sym=0.0)
    hist = tmp_path / _name(body, E, 30) / "history.csv"
    assert hist.read_bytes().endswith(b",0.523\n")
    _edit(hist, lambda b: b[:-2])
    _refused(lambda: _read(tmp_path, body), _name(body, E, 30), "middle of a line")


def test_a_whole_history_with_its_last_row_moved_reads_its_layer_mean(tmp_path, body):
    _write(tmp_path, body, E, 30, rows=_rows(0.5, last=(STEPS, "symmetry", 3, -1, 0.523)))
    _write(tmp_path, body, D, 30, sym=0.0)
    got = _paired(_read(tmp_path, body), body, [30])
    assert got.loc[30] == pytest.approx((0.5 * 3 + 0.523) / 4 - 0.0)


@pytest.mark.parametrize("how", ["crlf", "cr", "bom"])
def test_a_history_with_windows_or_old_mac_line_ends_or_a_bom_reads_the_same(tmp_path, body, how):
    _pairs(tmp_path, body, [0.4])
    change = {"crlf": lambda b: b.replace(b"\n", b"\r\n"), "cr": lambda b: b.replace(b"\n", b"\r"),
              "bom": lambda b: b"\xef\xbb\xbf" + b}[how]
    _edit(tmp_path / _name(body, E, 30) / "history.csv", change)
    assert _paired(_read(tmp_path, body), body, [30]).tolist() == pytest.approx([0.4])


def test_a_header_naming_the_value_column_twice_is_refused_not_read_as_its_first(tmp_path, body):
    _pairs(tmp_path, body, [0.4])
    hist = tmp_path / _name(body, E, 30) / "history.csv"
    lines = hist.read_text().splitlines()
    hist.write_text("\n".join([lines[0] + ",value"] + [ln + ",0.9" for ln in lines[1:]]) + "\n")
    _refused(lambda: _read(tmp_path, body), _name(body, E, 30), "'value' twice")


def test_an_extra_column_beside_the_five_is_left_and_the_values_read(tmp_path, body):
    _pairs(tmp_path, body, [0.4])
    hist = tmp_path / _name(body, E, 30) / "history.csv"
    lines = hist.read_text().splitlines()
    hist.write_text("\n".join([lines[0] + ",note"] + [ln + ",x" for ln in lines[1:]]) + "\n")
    assert _paired(_read(tmp_path, body), body, [30]).tolist() == pytest.approx([0.4])


def test_a_history_with_its_header_and_no_row_is_named_as_empty(tmp_path, body):
    _pairs(tmp_path, body, [0.4])
    (tmp_path / _name(body, E, 30) / "history.csv").write_text(",".join(COLUMNS) + "\n")
    _refused(lambda: _read(tmp_path, body), _name(body, E, 30), "no row")


def test_rows_in_reverse_order_and_columns_in_another_order_read_the_same(tmp_path, body):
    _write(tmp_path, body, E, 30, sym=0.3)
    _write(tmp_path, body, D, 30, sym=0.1)
    hist = tmp_path / _name(body, E, 30) / "history.csv"
    h = pd.read_csv(hist)
    h.iloc[::-1][["value", "head", "layer", "quantity", "step"]].to_csv(hist, index=False)
    assert _paired(_read(tmp_path, body), body, [30]).tolist() == pytest.approx([0.3 - 0.1])


def test_a_step_written_with_a_thousands_separator_is_refused_naming_its_line(tmp_path, body):
    _pairs(tmp_path, body, [0.4])
    hist = tmp_path / _name(body, E, 30) / "history.csv"
    _edit(hist, lambda b: b.replace(b"\n10000,", b'\n"10,000",'))
    _refused(lambda: _read(tmp_path, body), _name(body, E, 30), r"step that is not a number \(line \d+\)")


def test_a_step_written_1e4_is_the_horizon_itself(tmp_path, body):
    _pairs(tmp_path, body, [0.4])
    _edit(tmp_path / _name(body, E, 30) / "history.csv", lambda b: b.replace(b"\n10000,", b"\n1e4,"))
    assert _paired(_read(tmp_path, body), body, [30]).tolist() == pytest.approx([0.4])


# ------------------------------------------------------------------ one run's files read as two


def test_a_copied_run_whose_config_seed_was_edited_is_refused_not_read_as_a_new_seed(tmp_path, body):
    """Seed 31's folder is seed 30's run copied, config.seed edited to 31: the trainer writes the
    seed twice, and the copy keeps 30 in the other place."""
    _pairs(tmp_path, body, [0.5])
    _write(tmp_path, body, D, 31, sym=0.0)
    src, dst = tmp_path / _name(body, E, 30), tmp_path / _name(body, E, 31)
    shutil.copytree(src, dst)
    p = json.loads((dst / "provenance.json").read_text())
    p["config"]["seed"] = 31
    (dst / "provenance.json").write_text(json.dumps(p))
    _refused(lambda: _read(tmp_path, body), _name(body, E, 31), "seed 30 and config.seed 31")


def test_a_copied_seed_is_refused_by_a_version_2_body_too(tmp_path, body, monkeypatch):
    import companion.train.runner.runs as runs_module
    from companion.train.studies.evidence import body_runs

    monkeypatch.setattr(runs_module, "runs_root", lambda: tmp_path)
    _write(tmp_path, body, E, 30, sym=0.5)
    shutil.copytree(tmp_path / _name(body, E, 30), tmp_path / _name(body, E, 31))
    p = tmp_path / _name(body, E, 31) / "provenance.json"
    prov = json.loads(p.read_text())
    prov["config"]["seed"] = 31
    p.write_text(json.dumps(prov))
    v2 = {"label": "a version-2 body", "pattern": "mixv3-bert-mini-*", "seeds": [30, 31], "steps": STEPS, "lr": 1e-3}
    _refused(lambda: body_runs(v2), _name(body, E, 31), "seed 30 and config.seed 31")


@pytest.mark.parametrize("link", ["symlink", "hard link"])
def test_a_history_linked_to_another_runs_is_refused_not_read_as_a_second_seed(tmp_path, body, link):
    _pairs(tmp_path, body, [0.5, 0.3])
    mine, theirs = tmp_path / _name(body, E, 31) / "history.csv", tmp_path / _name(body, E, 30) / "history.csv"
    mine.unlink()
    mine.symlink_to(theirs) if link == "symlink" else os.link(theirs, mine)
    _refused(lambda: _read(tmp_path, body), _name(body, E, 30), _name(body, E, 31), "one history.csv")


def test_a_run_folder_linked_to_another_run_is_refused_naming_it(tmp_path, body):
    _pairs(tmp_path, body, [0.5])
    _write(tmp_path, body, D, 31, sym=0.0)
    (tmp_path / _name(body, E, 31)).symlink_to(tmp_path / _name(body, E, 30), target_is_directory=True)
    _refused(lambda: _read(tmp_path, body), _name(body, E, 31))


def test_a_run_named_twice_to_load_runs_is_named_as_given_twice(tmp_path, body):
    _pairs(tmp_path, body, [0.5])
    n = _name(body, E, 30)
    _refused(lambda: load_runs([n, n], root=tmp_path), f"names {n} twice", "give each name once")


def test_two_distinct_runs_given_by_name_are_read_once_each(tmp_path, body):
    _pairs(tmp_path, body, [0.5])
    runs = load_runs([_name(body, E, 30), _name(body, D, 30)], root=tmp_path)
    assert len(runs) == 2 * len(_rows())


def test_a_run_folder_named_with_a_newline_is_refused_in_one_line(tmp_path, body):
    _pairs(tmp_path, body, [0.5])
    _write(tmp_path, body, E, 31, name=_name(body, E, 31) + "\nrun ok: it belongs")
    _refused(lambda: _read(tmp_path, body), r"\\n", "not printable")


# ------------------------------------------------------------------ provenance fields


def test_a_start_stamp_with_a_lower_case_t_is_named_for_it_not_as_without_a_time(tmp_path, body):
    _write(tmp_path, body, E, 30, started="2026-12-01t09:00:00z")
    _write(tmp_path, body, D, 30, sym=0.0)
    msg = _refused(lambda: _read(tmp_path, body), _name(body, E, 30), "lower-case 't'")
    assert "no time of day" not in msg


def test_a_start_with_a_capital_t_and_an_odd_offset_is_read_as_its_instant(tmp_path, body):
    _write(tmp_path, body, E, 30, started="2026-12-01T05:45:00+05:45")
    _write(tmp_path, body, D, 30, sym=0.0)
    assert _paired(_read(tmp_path, body), body, [30]).tolist() == pytest.approx([0.5])


def test_a_sitting_whose_first_step_is_no_number_is_refused_in_one_line_not_a_raw_value_error(tmp_path, body):
    p = _prov(body, E, 30)
    p["sittings"] = [{"from_step": "x", "started": "2026-12-01T00:00:00Z", "cpu_model": "Xeon"}]
    d = _write(tmp_path, body, E, 30, prov=p)
    _refused(lambda: rb.machines_of(read_provenance(d)), "sittings\\[0\\].from_step")


def test_sittings_with_whole_first_steps_name_each_machine_from_its_step(tmp_path, body):
    p = _prov(body, E, 30)
    p["date"] = "2026-12-02T00:00:00Z"
    p["sittings"] = [{"from_step": 0, "started": "2026-12-01T00:00:00Z", "cpu_model": "Xeon A"},
                     {"from_step": 2500.0, "started": "2026-12-01T10:00:00Z", "cpu_model": "Xeon B"}]
    d = _write(tmp_path, body, E, 30, prov=p)
    assert rb.machines_of(read_provenance(d)) == "Xeon A; from step 2,500: Xeon B"


@pytest.mark.parametrize("where, key, value", [("data", "train_tokens", "many"), (None, "duration_s", "2h")])
def test_the_runs_table_refuses_a_provenance_number_given_as_text_in_one_line(tmp_path, body, monkeypatch, rules,
                                                                             where, key, value):
    monkeypatch.setattr(rb, "_rules_commit", lambda body=None: None)
    p = _prov(body, D, 30)
    (p[where] if where else p)[key] = value
    _write(tmp_path, body, E, 30)
    _write(tmp_path, body, D, 30, prov=p)
    _refused(lambda: rb.runs_table(rules, root=tmp_path), _name(body, D, 30), key, "not a")


def test_the_runs_table_counts_passes_from_the_provenance(tmp_path, body, monkeypatch, rules):
    monkeypatch.setattr(rb, "_rules_commit", lambda body=None: None)
    _write(tmp_path, body, E, 30)
    t = rb.runs_table(rules, root=tmp_path)
    assert len(t) == 1 and t["passes"].iloc[0] == pytest.approx(STEPS * 16 * 128 / 1000)


def test_one_run_recording_its_horizon_as_a_whole_float_is_not_called_another_configuration(tmp_path, body):
    """10000.0 is the horizon 10000 (the registration's check reads it so); the body's other
    runs write 10000."""
    _pairs(tmp_path, body, [0.5, 0.4])
    p = tmp_path / _name(body, E, 31) / "provenance.json"
    prov = json.loads(p.read_text())
    prov["config"]["steps"] = 10000.0
    p.write_text(json.dumps(prov))
    assert _paired(_read(tmp_path, body), body, [30, 31]).tolist() == pytest.approx([0.5, 0.4])


def test_a_batch_written_as_text_is_still_refused_naming_it(tmp_path, body):
    _pairs(tmp_path, body, [0.5, 0.4])
    _write(tmp_path, body, E, 32, batch_size="16")
    _refused(lambda: _read(tmp_path, body), _name(body, E, 32), "batch_size = '16'")


def test_a_mode_written_in_capitals_is_no_arm_of_the_body(tmp_path, body):
    _pairs(tmp_path, body, [0.5])
    _write(tmp_path, body, E, 31, prov=_prov(body, E, 31, mode="Encoder"))
    _refused(lambda: _read(tmp_path, body), "Encoder/standard", "does not register")


# ------------------------------------------------------------------ the horizon and the pairs


def test_a_run_without_any_evaluation_is_refused_not_judged_not_testable(tmp_path, body):
    _pairs(tmp_path, body, [0.5, 0.51])
    _write(tmp_path, body, D, 32, sym=0.0)
    _write(tmp_path, body, E, 32, rows=[r for r in _rows(0.49) if r[1] != "eval_loss"])
    _refused(lambda: _read(tmp_path, body), _name(body, E, 32), "no eval_loss")


@pytest.mark.parametrize("quantity", ["symmetry", "directionality"])
def test_a_history_cut_off_before_its_last_scores_is_refused_not_judged_not_testable(tmp_path, body, quantity):
    """Its evaluation at the horizon is there, its scores there lost: the claim read a NaN
    seed and ended 'not testable here' for good."""
    _pairs(tmp_path, body, [0.5, 0.51])
    _write(tmp_path, body, D, 32, sym=0.0)
    _write(tmp_path, body, E, 32, rows=[r for r in _rows(0.49) if not (r[0] == STEPS and r[1] == quantity)])
    _refused(lambda: _read(tmp_path, body), _name(body, E, 32), f"step {STEPS // 2} of {quantity}", "cut off")


def test_the_paired_effect_is_candidate_minus_comparator_seed_by_seed_in_the_seeds_order(tmp_path, body):
    effects, base = [0.50, 0.31, 0.47], [0.10, 0.02, -0.05]
    for seed, (a, b) in enumerate(zip(effects, base), 30):
        _write(tmp_path, body, E, seed, sym=a)
        _write(tmp_path, body, D, seed, sym=b)
    got = _paired(_read(tmp_path, body), body, [32, 30, 31])
    assert list(got.index) == [32, 30, 31]
    assert got.to_numpy() == pytest.approx(np.subtract(effects, base)[[2, 0, 1]])


def test_a_step_that_no_run_logs_pairs_to_nan_never_the_nearest_value(tmp_path, body):
    _pairs(tmp_path, body, [0.5, 0.4])
    got = _paired(_read(tmp_path, body), body, [30, 31], step=7777)
    assert got.isna().all() and len(got) == 2


def test_a_pair_whose_gpu_names_differ_by_a_trailing_space_is_not_taken_for_one_device(tmp_path, body):
    _write(tmp_path, body, E, 30, device="NVIDIA H100 80GB HBM3")
    _write(tmp_path, body, D, 30, sym=0.0, device="NVIDIA H100 80GB HBM3 ")
    runs = _read(tmp_path, body)
    _refused(lambda: _paired(runs, body, [30]), "seed 30", "different devices")


def test_a_run_stamped_in_the_future_is_refused_naming_the_field():
    """A clock that ran ahead passes every 'started after the rules' check: refused at read."""
    from companion.base.errors import CompanionError
    from companion.train.runner.provenance import check_stamps

    with pytest.raises(CompanionError, match=r"run r: its provenance.json's started 2099-01-01T00:00:00Z is in the future"):
        check_stamps({"started": "2099-01-01T00:00:00Z"}, "r", "data/runs/r")
    with pytest.raises(CompanionError, match=r"sittings\[1\].started .* is in the future"):
        check_stamps({"started": "2026-01-01T00:00:00Z",
                      "sittings": [{"from_step": 0, "started": "2026-01-01T00:00:00Z"},
                                   {"from_step": 5, "started": "2199-01-01T00:00:00Z"}]}, "r", "data/runs/r")
    check_stamps({"started": "2026-01-01T00:00:00Z", "date": "2026-01-02T00:00:00+05:00"}, "r", "data/runs/r")
