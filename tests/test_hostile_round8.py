"""Hardening round 8 (issue 74): a new hostile pass, as a careful but adversarial user would
try it, after round 7 (tests/test_hostile_round7.py).  Three kinds of failure only: a number or
verdict that is silently wrong, a file lost or written outside the tool's own output, markup
that reaches a page unescaped.  Each case states the right behaviour: a one-line refusal that
names the input and the fix, or the right value computed apart from the code under test."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from companion.base.errors import CompanionError
from one_line import one_line as _one_line
from one_line import one_line_error

ROOT = Path(__file__).resolve().parents[1]
RUN = ROOT / "data" / "runs" / "charsv4-bert-mini-encoder-standard-s70"
SECRET = "the user's own file\n"


# ============================================================ 1. a run's history: values no run can log

def _run_copy(tmp_path, edit_history=None, edit_provenance=None, raw_provenance=None) -> Path:
    run = tmp_path / RUN.name
    run.mkdir()
    for name in ("history.csv", "provenance.json"):
        shutil.copyfile(RUN / name, run / name)
    if edit_history is not None:
        h = pd.read_csv(run / "history.csv")
        edit_history(h).to_csv(run / "history.csv", index=False)
    if edit_provenance is not None:
        p = json.loads((run / "provenance.json").read_text())
        edit_provenance(p)
        (run / "provenance.json").write_text(json.dumps(p))
    if raw_provenance is not None:
        (run / "provenance.json").write_text(raw_provenance((run / "provenance.json").read_text()))
    return run


def _at_horizon(quantity: str, value: float):
    def edit(h):
        h.loc[h.index[(h.quantity == quantity) & (h.step == h.step.max())][0], "value"] = value
        return h
    return edit


@pytest.mark.parametrize("quantity, value", [("eval_loss", -1.0), ("train_loss", -math.inf), ("eval_loss_se", -0.1),
                                             ("guard_seen_share", 1.5), ("guard_seen_blocks", 2.5),
                                             ("guard_seen_blocks", -3.0), ("lr", -1e-3), ("guard_unseen_loss", -0.5)],
                         ids=["negative loss", "minus-infinite loss", "negative standard error", "share above one",
                              "a fraction of a block", "negative blocks", "negative learning rate", "negative guard loss"])
def test_a_value_its_quantity_cannot_have_is_refused_naming_the_run_and_quantity(tmp_path, quantity, value):
    from companion.train.runner.provenance import read_run

    run = _run_copy(tmp_path, _at_horizon(quantity, value))
    with pytest.raises(CompanionError) as err:
        read_run(run)
    text = _one_line(err)
    assert run.name in text and quantity in text and "copy history.csv again" in text, text


def test_a_diverged_run_s_nan_loss_is_still_read_as_nan(tmp_path):
    from companion.train.runner.provenance import read_run

    run = _run_copy(tmp_path, _at_horizon("eval_loss", float("nan")))
    hist, _ = read_run(run)
    last = hist[(hist.quantity == "eval_loss") & (hist.step == hist.step.max())]["value"]
    assert last.isna().all() and len(last) == 1


def test_a_negative_step_is_refused_not_read_as_the_run_s_start(tmp_path):
    from companion.train.runner.provenance import read_run

    def before_start(h):
        first = h[h.step == 0].copy()
        first["step"] = -250
        return pd.concat([first, h])

    run = _run_copy(tmp_path, before_start)
    with pytest.raises(CompanionError, match="step") as err:
        read_run(run)
    assert run.name in _one_line(err)


@pytest.mark.parametrize("renamed", [" eval_loss", "Eval_loss", "eval_loss\t"])
def test_a_quantity_name_no_reader_asks_for_is_refused_not_left_unread(tmp_path, renamed):
    """The horizon's eval_loss renamed: a reader of 'eval_loss' would take the step before it."""
    from companion.train.runner.provenance import read_run

    def rename(h):
        h.loc[(h.quantity == "eval_loss") & (h.step == h.step.max()), "quantity"] = renamed
        return h

    run = _run_copy(tmp_path, rename)
    with pytest.raises(CompanionError) as err:
        read_run(run)
    assert run.name in _one_line(err) and "quantity" in str(err.value)


def _past_horizon(h):
    extra = h[h.step == h.step.max()].copy()
    extra["step"] = h.step.max() + 2000
    extra.loc[extra.quantity == "symmetry", "value"] = 0.99
    return pd.concat([h, extra])


@pytest.mark.parametrize("steps", [10000.0, "10000"], ids=["a float", "text"])
def test_a_horizon_written_as_a_float_or_text_still_guards_against_rows_past_it(tmp_path, steps):
    from companion.train.runner.provenance import read_run

    def set_steps(p):
        p["config"]["steps"] = steps

    run = _run_copy(tmp_path, _past_horizon, set_steps)
    with pytest.raises(CompanionError) as err:
        read_run(run)
    assert run.name in _one_line(err) and "steps" in str(err.value)


def test_a_layer_count_written_as_a_float_still_guards_against_a_missing_layer(tmp_path):
    from companion.train.runner.provenance import read_run

    def drop_last_layer(h):
        return h[~((h.quantity == "symmetry") & (h.layer == 3))]

    def as_float(p):
        p["model_size"]["num_hidden_layers"] = 4.0

    run = _run_copy(tmp_path, drop_last_layer, as_float)
    with pytest.raises(CompanionError, match="layer 3") as err:
        read_run(run)
    _one_line(err)


def test_a_whole_horizon_written_as_a_float_reads_as_the_run(tmp_path):
    from companion.train.runner.provenance import read_run

    def as_float(p):
        p["config"]["steps"] = 10000.0

    hist, _ = read_run(_run_copy(tmp_path, edit_provenance=as_float))
    assert len(hist) == len(pd.read_csv(RUN / "history.csv"))


def _lr_twice(text: str) -> str:
    assert '"lr": 0.001' in text
    return text.replace('"lr": 0.001', '"lr": 0.5, "lr": 0.001', 1)


def test_a_provenance_key_written_twice_is_refused_not_read_as_its_last_copy(tmp_path):
    from companion.train.runner.provenance import read_run

    run = _run_copy(tmp_path, raw_provenance=_lr_twice)
    with pytest.raises(CompanionError) as err:
        read_run(run)
    text = _one_line(err)
    assert run.name in text and "'lr'" in text and "twice" in text, text


def test_the_run_catalogue_refuses_a_provenance_key_written_twice(tmp_path):
    from companion.train.runner.runs import read_provenance

    run = _run_copy(tmp_path, raw_provenance=_lr_twice)
    with pytest.raises(CompanionError) as err:
        read_provenance(run)
    assert "provenance.json" in _one_line(err)


# ============================================================ 2. the survey's contrast: a NaN is no median

def _computed(rows):
    out = []
    for key, kind, sym, dirn in rows:
        for score, v in (("symmetry", sym), ("directionality", dirn)):
            out.append(dict(key=key, component="self", kind=kind, pairing="grouped", modality="text",
                            score=score, median=v))
    return pd.DataFrame(out)


@pytest.mark.parametrize("order", ["nan-last", "nan-first"])
@pytest.mark.parametrize("score", ["symmetry", "directionality"])
def test_an_unscored_model_never_drops_out_of_the_encoder_decoder_contrast(order, score):
    """Python's min() skips a NaN placed after a number: 'every encoder above every decoder'
    read 'holds' with one encoder unscored."""
    from companion.survey.summaries import encoder_decoder_contrast

    nan = {"symmetry": (np.nan, -0.2), "directionality": (0.5, np.nan)}[score]
    rows = [("a-enc", "encoder", 0.5, 0.1), ("z-enc", "encoder", *nan), ("dec", "decoder", 0.2, -0.3)]
    if order == "nan-first":
        rows = [("a-enc", "encoder", *nan), ("z-enc", "encoder", 0.5, 0.1), ("dec", "decoder", 0.2, -0.3)]
    with pytest.raises(ValueError) as err:
        encoder_decoder_contrast(_computed(rows))
    assert ("z-enc" if order == "nan-last" else "a-enc") in _one_line(err)


def test_the_contrast_of_scored_models_is_read_from_their_medians():
    from companion.survey.summaries import encoder_decoder_contrast

    c = encoder_decoder_contrast(_computed([("e1", "encoder", 0.5, 0.1), ("e2", "encoder", 0.3, -0.05),
                                            ("d1", "decoder", 0.2, -0.3)]))
    assert (c["sym_enc_min"], c["sym_dec_max"], c["dir_enc_min"], c["dir_dec_max"]) == (0.3, 0.2, -0.05, -0.3)
    assert (c["sym"], c["dir_neg"], c["dir_order"]) == ("holds", "holds", "holds")


def test_the_registered_contrast_refuses_a_member_without_a_directionality():
    from companion.survey.design import catalog_rows, registered_contrast, units
    from companion.zoo.registry import ZOO

    rows = catalog_rows(held=False)
    key_of = {m.name: m.catalog_key or m.name for m in ZOO.values()}
    counted = units(rows).query("side != ''")
    victim = counted.iloc[-1]
    summary = []
    for r in rows.itertuples():
        for score in ("symmetry", "directionality"):
            v = 0.5 if r.kind == "encoder" else -0.2
            if r.name == victim["name"] and r.component == victim["component"] and score == "directionality":
                v = np.nan
            summary.append(dict(key=key_of.get(r.name, r.name), component=r.component, pairing="grouped",
                                score=score, median=v))
    with pytest.raises(CompanionError) as err:
        registered_contrast(pd.DataFrame(summary))
    assert victim["member"] in _one_line(err)


# ============================================================ 3. the rules file: what YAML reads as something else

def _rules_variant(tmp_path, old: str, new: str) -> Path:
    from companion.rules.rulebook import RULES_PATH

    text = RULES_PATH.read_text()
    assert old in text, old
    (tmp_path / "data").mkdir()
    shutil.copyfile(ROOT / "data" / "survey_design.csv", tmp_path / "data" / "survey_design.csv")
    path = tmp_path / "data" / "verdict_rules.yaml"
    path.write_text(text.replace(old, new, 1))
    return path


def test_a_copy_of_the_rules_in_force_loads(tmp_path):
    from companion.rules.rulebook import load_rules

    rules = load_rules(_rules_variant(tmp_path, "version: 4", "version: 4"), check_design=False)
    assert rules["claims"]["table_1"]["sign"] == -1


def test_a_number_yaml_reads_as_text_is_named_with_the_way_to_write_it(tmp_path):
    from companion.rules.rulebook import load_rules

    with pytest.raises(CompanionError) as err:
        load_rules(_rules_variant(tmp_path, "lr: 1.0e-3", "lr: 1e-3"), check_design=False)
    text = _one_line(err)
    assert "'lr'" in text and "1.0e-3" in text and "YAML" in text, text


@pytest.mark.parametrize("sign", ["true", "yes"])
def test_a_sign_that_is_a_bool_is_refused_not_read_as_plus_one(tmp_path, sign):
    from companion.rules.rulebook import load_rules

    with pytest.raises(CompanionError) as err:
        load_rules(_rules_variant(tmp_path, "sign: -1  ", f"sign: {sign}"), check_design=False)
    assert "'sign'" in _one_line(err) and "table_1" in str(err.value)


def test_a_version_that_is_not_a_whole_number_is_refused(tmp_path):
    from companion.rules.rulebook import load_rules

    with pytest.raises(CompanionError) as err:
        load_rules(_rules_variant(tmp_path, "version: 4", "version: 4.0"), check_design=False)
    assert "'version'" in _one_line(err)


def test_an_earlier_rules_file_s_number_read_as_text_is_named_too():
    from companion.rules.verdicts import _number

    with pytest.raises(CompanionError) as err:
        _number({"sesoi": "5e-2"}, "sesoi", "rule 'x'", "rules.yaml", positive=True)
    assert "1.0e-3" in _one_line(err) and "'sesoi'" in str(err.value)


# ============================================================ 4. train --overwrite: the old run stays until the new one can start

MICRO = ["--size", "micro", "--steps", "2", "--eval-every", "1", "--warmup", "1", "--corpus", "python-docs",
         "--top-k", "64"]


def test_overwrite_with_a_tokenizer_that_cannot_load_keeps_the_old_run_and_says_so_in_one_line(
        tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    out = tmp_path / "run"
    out.mkdir()
    for name in ("history.csv", "provenance.json", "checkpoint.pt"):
        (out / name).write_text(SECRET)
    one_line_error(["train", *MICRO, "--tokenizer", "no-such-owner/no-such-tokenizer", "--out", str(out),
                    "--overwrite"], capsys, "no-such-owner/no-such-tokenizer", "tokenizer")
    assert all((out / n).read_text() == SECRET for n in ("history.csv", "provenance.json", "checkpoint.pt"))


def test_overwrite_still_replaces_the_old_run_when_the_new_one_trains(tmp_path, capsys):
    from companion.cli import main

    out = tmp_path / "run"
    out.mkdir()
    for name in ("history.csv", "provenance.json", "checkpoint.pt"):
        (out / name).write_text(SECRET)
    assert main(["train", *MICRO, "--out", str(out), "--overwrite"]) == 0
    hist = pd.read_csv(out / "history.csv")
    assert sorted(hist.loc[hist.quantity == "eval_loss", "step"]) == [0, 1, 2]
    assert not (out / "checkpoint.pt").exists()
    assert json.loads((out / "provenance.json").read_text())["config"]["steps"] == 2


# ============================================================ 5. a table written at a name the user gives: never over a file it is not

@pytest.mark.parametrize("name", ["notes.txt", "rules.yaml", "chapter.md"])
def test_verdicts_never_writes_its_table_over_a_file_that_is_not_a_table(tmp_path, capsys, name):
    victim = tmp_path / name
    victim.write_text(SECRET)
    one_line_error(["verdicts", "--csv", str(victim)], capsys, str(victim), "not a .csv table", within_s=30)
    assert victim.read_text() == SECRET


def test_verdicts_never_writes_over_the_rules_it_reads(tmp_path, capsys):
    from companion.rules.rulebook import RULES_PATH

    rules = tmp_path / "data" / "verdict_rules.yaml"
    rules.parent.mkdir()
    for name in ("verdict_rules_design.csv", "verdict_rules_family.csv", "survey_design.csv"):
        shutil.copyfile(ROOT / "data" / name, rules.parent / name)
    shutil.copyfile(RULES_PATH, rules)
    before = rules.read_bytes()
    one_line_error(["verdicts", "--training", "--rules", str(rules), "--csv", str(rules)], capsys, str(rules),
                   "not a .csv table", within_s=60)
    assert rules.read_bytes() == before


def test_verdicts_never_writes_into_the_package_s_data_folder(tmp_path, monkeypatch, capsys):
    from companion.base import paths

    data = tmp_path / "data"   # a stand-in: a regression overwrites this copy, never the checkout's catalog
    data.mkdir()
    target = data / "catalog.csv"
    shutil.copyfile(paths.DATA_DIR / "catalog.csv", target)
    before = target.read_bytes()
    monkeypatch.setattr(paths, "DATA_DIR", data)
    one_line_error(["verdicts", "--csv", str(target)], capsys, "data folder", within_s=30)
    assert target.read_bytes() == before


@pytest.mark.parametrize("name", ["README.md", "scores.json"])
def test_score_never_writes_its_table_over_a_file_that_is_not_a_table(tmp_path, capsys, name):
    model = tmp_path / "model"
    model.mkdir()
    victim = tmp_path / name
    victim.write_text(SECRET)
    one_line_error(["score", str(model), "--out", str(victim)], capsys, str(victim), "not a .csv table",
                   within_s=30)
    assert victim.read_text() == SECRET


def test_a_table_name_that_is_new_or_an_earlier_table_is_accepted(tmp_path):
    from companion.base.outputs import check_table_output

    (tmp_path / "old.CSV").write_text("a\n1\n")
    assert check_table_output(tmp_path / "old.CSV") == tmp_path / "old.CSV"
    assert check_table_output(tmp_path / "sub" / "new.csv") == tmp_path / "sub" / "new.csv"
    assert (tmp_path / "old.CSV").read_text() == "a\n1\n"


# ============================================================ 6. the run scripts' landing: a FIFO in the work folder never blocks

def _land(cwd: Path, name: str, steps: int):
    import subprocess
    import sys

    script = (f'PY="{sys.executable}"; LOG=log; eval "$(sed -n "/^finished()/,/^}}/p;/^land()/,/^}}/p" '
              f'{ROOT}/data/runs/common.sh)"; land {name} w {steps} "weights-step*.safetensors.sha256"')
    return subprocess.run(["bash", "-c", script], cwd=cwd, capture_output=True, text=True, timeout=30)


def _work_run(tmp_path: Path) -> Path:
    (tmp_path / "data" / "runs").mkdir(parents=True)
    run = tmp_path / "w" / "done"
    run.mkdir(parents=True)
    (run / "provenance.json").write_text(json.dumps({"config": {"steps": 10}}))
    (run / "history.csv").write_text("step,quantity,layer,head,value\n0,eval_loss,-1,-1,8.4\n10,eval_loss,-1,-1,5.1\n")
    return run


@pytest.mark.parametrize("which", ["weights-step10.safetensors.sha256", "provenance.json", "history.csv"])
def test_landing_a_run_whose_work_file_is_a_fifo_is_refused_at_once(tmp_path, which):
    import os
    import time

    run = _work_run(tmp_path)
    (run / which).unlink(missing_ok=True)
    os.mkfifo(run / which)
    t0 = time.monotonic()
    done = _land(tmp_path, "done", 10)
    assert time.monotonic() - t0 < 20 and done.returncode != 0
    assert not (tmp_path / "data" / "runs" / "done" / "history.csv").exists()


def test_landing_never_copies_a_work_file_that_is_a_link_to_a_file_elsewhere(tmp_path):
    run = _work_run(tmp_path)
    private = tmp_path / "private.txt"
    private.write_text(SECRET)
    (run / "weights-step10.safetensors.sha256").symlink_to(private)
    assert _land(tmp_path, "done", 10).returncode != 0
    landed = tmp_path / "data" / "runs" / "done"
    assert not any(p.read_text() == SECRET for p in landed.iterdir()) and not (landed / "history.csv").exists()


def test_landing_a_finished_run_of_plain_files_still_copies_it(tmp_path):
    run = _work_run(tmp_path)
    (run / "weights-step10.safetensors.sha256").write_text("x\n")
    assert _land(tmp_path, "done", 10).returncode == 0
    assert sorted(p.name for p in (tmp_path / "data/runs/done").iterdir()) == [
        "history.csv", "provenance.json", "weights-step10.safetensors.sha256"]


# ============================================================ 7. computed text in a deck or a notebook stays text

HOSTILE = "<script>alert(1)</script> [a](javascript:alert(1)) ![i](x) <img src=x onerror=alert(1)>"


def test_a_glued_value_and_a_figure_s_alt_text_make_no_element_of_a_slide():
    import html as _html
    import re

    from companion.book.editions.slide_plan import Slide, resolve_glue
    from companion.book.editions.slide_render import render_slide

    glue = {"fig": {"data": {"image/png": "iVBORw0KGgo=", "text/plain": "<Figure>"},
                    "metadata": {"image/png": {"alt": '" onerror="alert(1)' + HOSTILE}}},
            "v": {"data": {"text/plain": repr(HOSTILE)}}}
    text = "Value {glue:md}`v` and {glue:text}`v:>5`\n\n```{glue:figure} fig\n:name: f\nA caption {glue}`v`\n```\n"
    page = render_slide(Slide(title="T <b>x</b>", body=resolve_glue(text, glue)))
    assert set(re.findall(r"<(\w+)", page)) <= {"h2", "p", "figure", "img", "figcaption"}, page
    assert re.findall(r"<img\b[^>]*>", page) == [re.search(r"<img\b[^>]*>", page).group(0)]   # the figure's only
    from html.parser import HTMLParser

    attrs = []
    parser = HTMLParser()
    parser.handle_starttag = lambda tag, a: attrs.extend(a)
    parser.feed(page)
    assert [n for n, _ in attrs] == ["alt", "src"], attrs   # the figure's image, nothing else
    assert not any((v or "").lower().lstrip().startswith("javascript:") for _, v in attrs)
    assert HOSTILE in _html.unescape(re.sub(r"<[^>]+>", "", page))


@pytest.mark.parametrize("where", ["{glue:md}`v`", "{glue:text}`v`", "[click]({glue:text}`v`)", "**{glue}`v`**"],
                         ids=["md role", "text role", "a link's address", "inside emphasis"])
def test_a_glued_value_in_a_notebook_cell_is_its_text_and_makes_no_element(where):
    import html as _html
    import re

    from markdown_it import MarkdownIt

    from companion.book.editions.notebook_cells import colab_markdown

    cell = colab_markdown(f"Seen {where} here.\n", {"v": HOSTILE}, {})
    page = MarkdownIt("commonmark", {"html": True}).render(cell)
    assert set(re.findall(r"<(\w+)", page)) <= {"p", "strong"}, page
    assert "<img" not in page and "<script" not in page and "<a " not in page, page
    assert HOSTILE in _html.unescape(re.sub(r"<[^>]+>", "", page)).replace("\\", ""), page
