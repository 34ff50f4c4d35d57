"""Hardening round 7 (issue 74): first the five leftovers of round 6 (a marker read through a
link, a figure's data written through a dangling link, sittings that are not a list, a user's
folder taken for the book cache, a bool taken for a number), then a new hostile pass over the
package's public entry points.  Each case has an expectation computed apart from the code
under test: a one-line refusal naming the problem, or the right value.  Nothing here may
hang, lose a file, write outside its folder or let markup run."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from companion.base.errors import CompanionError
from deadline import within
from one_line import one_line as _one_line
from tiny_book import tiny_book

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data" / "runs"
SECRET = "the user's own file\n"


# ============================================================ 0. the leftovers of round 6

def test_a_marker_reached_through_a_link_is_not_taken_as_the_file_s_word(tmp_path):
    from companion.zoo.assembly import _marker, _verified

    main = tmp_path / "model.onnx"
    main.write_bytes(b"tampered weights")
    pinned = hashlib.sha256(b"the pinned weights").hexdigest()
    forged = tmp_path / "elsewhere.json"   # a marker that records the pinned hash and this file's stat
    forged.write_text(json.dumps({"sha256": pinned, **_marker(main.stat())}))
    side = tmp_path / "model.onnx.sha256.json"
    side.symlink_to(forged)
    assert hashlib.sha256(main.read_bytes()).hexdigest() != pinned
    assert _verified(main, pinned, side, verify=False) is False


def _figure_doctree(blob: str):
    from docutils import nodes
    from docutils.utils import new_document
    from docutils.frontend import get_default_settings
    from docutils.parsers.rst import Parser

    doc = new_document("page", get_default_settings(Parser))
    fig = nodes.figure()
    fig += nodes.image(uri="_images/fig-a.png", alt="a figure", companion_figure=True, companion_csv=blob)
    doc += fig
    return doc


@pytest.mark.parametrize("kind", ["dangling-link", "link-to-a-file", "fifo"])
def test_a_figure_s_source_data_is_never_written_through_a_link_or_into_a_fifo(tmp_path, kind):
    from companion.book.figures.source_data import encode_csv
    from companion.book.sphinxext import write_figure_data

    out = tmp_path / "html"
    (out / "_images").mkdir(parents=True)
    target = out / "_images" / "fig-a.csv"
    victim = tmp_path / "outside" / "victim.csv"
    victim.parent.mkdir()
    if kind == "dangling-link":
        target.symlink_to(victim)
    elif kind == "link-to-a-file":
        victim.write_text(SECRET)
        target.symlink_to(victim)
    else:
        os.mkfifo(target)
    app = SimpleNamespace(builder=SimpleNamespace(format="html"), outdir=str(out))
    with within(10, target):
        write_figure_data(app, _figure_doctree(encode_csv(pd.DataFrame({"x": [1.5]}))), "page")
    if kind == "dangling-link":
        assert not victim.exists()
    elif kind == "link-to-a-file":
        assert victim.read_text() == SECRET


def test_a_figure_s_source_data_is_written_where_nothing_is_in_the_way(tmp_path):
    from companion.book.figures.source_data import encode_csv
    from companion.book.sphinxext import write_figure_data

    out = tmp_path / "html"
    app = SimpleNamespace(builder=SimpleNamespace(format="html"), outdir=str(out))
    write_figure_data(app, _figure_doctree(encode_csv(pd.DataFrame({"x": [1.5]}))), "page")
    assert pd.read_csv(out / "_images" / "fig-a.csv")["x"].tolist() == [1.5]


@pytest.mark.parametrize("sittings", ["2026-12-06T12:00:00Z", {"from_step": 0, "started": "x"}, 5,
                                      ["2026-12-06T12:00:00Z"]])
def test_sittings_that_are_not_a_list_of_sittings_are_refused_in_one_line(sittings):
    from companion.train.runner.provenance import check_stamps

    prov = {"started": "2026-12-06T12:00:00Z", "date": "2026-12-06T20:00:00Z", "sittings": sittings}
    with pytest.raises(CompanionError, match="sittings") as err:
        check_stamps(prov, "r", "r")
    _one_line(err)


@pytest.mark.parametrize("key", ["{}", '{"files": 1, "sha256": "x", "run_size": "ci", "cuda": false}'])
def test_a_user_folder_that_holds_a_key_file_is_not_taken_for_the_book_cache(tmp_path, key):
    from companion.book.site import book_cache

    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "companion-key.json").write_text(key)
    (folder / "thesis.tex").write_text(SECRET)
    with pytest.raises(ValueError, match="not an execution cache") as err:
        book_cache.prepare(folder, tmp_path)
    _one_line(err)
    assert (folder / "thesis.tex").read_text() == SECRET


def test_a_cache_whose_entry_is_a_link_is_not_emptied(tmp_path):
    from companion.book.site import book_cache

    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "keep.txt").write_text(SECRET)
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "companion-key.json").write_text("{}")
    (cache / "executed").symlink_to(mine)
    with pytest.raises(ValueError):
        book_cache.prepare(cache, tmp_path)
    assert (mine / "keep.txt").read_text() == SECRET


@pytest.mark.parametrize("a, b", [(True, 0.3), (0.3, False), (np.bool_(True), 0.5), (10**400, 1.0)],
                         ids=["true", "false", "numpy-bool", "overflow"])
def test_a_bool_or_an_overflowing_value_is_no_number_to_compare(a, b):
    from companion.base.phrasing import exceeds

    assert exceeds(a, b) is None


@pytest.mark.parametrize("value", [True, np.bool_(False)])
def test_a_bool_is_never_worded_as_a_number(value):
    from companion.judge.sentences_words import MISSING, _num

    assert _num(value, ".3f") == MISSING


# ============================================================ 1. inputs that are not files: no hang, one line

def _run_copy(tmp_path) -> Path:
    import shutil

    src = DATA / "charsv4-bert-mini-encoder-standard-s70"
    run = tmp_path / src.name
    run.mkdir()
    for name in ("history.csv", "provenance.json"):
        shutil.copyfile(src / name, run / name)
    return run


def _fifo_in_place_of(path: Path) -> Path:
    if path.exists():
        path.unlink()
    path.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(path)
    return path


def _read_run_prov(tmp_path):
    from companion.train.runner.provenance import read_run

    run = _run_copy(tmp_path)
    return _fifo_in_place_of(run / "provenance.json"), lambda: read_run(run)


def _read_run_hist(tmp_path):
    from companion.train.runner.provenance import read_run

    run = _run_copy(tmp_path)
    return _fifo_in_place_of(run / "history.csv"), lambda: read_run(run)


def _catalogue_prov(tmp_path):
    from companion.train.runner.runs import read_provenance

    run = _run_copy(tmp_path)
    return _fifo_in_place_of(run / "provenance.json"), lambda: read_provenance(run)


def _rules(tmp_path):
    from companion.rules.rulebook import load_rules

    path = _fifo_in_place_of(tmp_path / "verdict_rules.yaml")
    return path, lambda: load_rules(path)


def _rules_for_changes(tmp_path):
    from companion.book.site.changes import load_rules

    path = _fifo_in_place_of(tmp_path / "verdict_rules.yaml")
    return path, lambda: load_rules(path)


def _catalog(tmp_path):
    from companion.zoo.catalog import load_catalog

    path = _fifo_in_place_of(tmp_path / "catalog.csv")
    return path, lambda: load_catalog(path)


def _glue(tmp_path):
    from companion.book.editions.slides import _read_glue

    path = _fifo_in_place_of(tmp_path / "ch.glue.json")
    return path, lambda: _read_glue(path)


FIFO_READERS = {"a run's provenance": _read_run_prov, "a run's history": _read_run_hist,
                "the run catalogue's provenance": _catalogue_prov, "the rules file": _rules,
                "the rules file of the changes page": _rules_for_changes, "the zoo catalog": _catalog,
                "a deck's glue store": _glue}


@pytest.mark.parametrize("reader", list(FIFO_READERS), ids=list(FIFO_READERS))
def test_a_fifo_in_place_of_an_input_is_refused_at_once_in_one_line(tmp_path, reader):
    import time

    fifo, read = FIFO_READERS[reader](tmp_path)
    t0 = time.monotonic()
    with within(10, fifo), pytest.raises((CompanionError, ValueError)) as err:
        read()
    assert time.monotonic() - t0 < 5, "blocked on the FIFO until it was released"
    assert "FIFO" in _one_line(err), err.value


def test_a_glue_store_of_a_build_that_is_a_fifo_is_skipped_at_once(tmp_path):
    import time

    from companion.book.site.executions import _read_store

    fifo = _fifo_in_place_of(tmp_path / "ch.glue.json")
    t0 = time.monotonic()
    with within(10, fifo):
        assert _read_store(fifo) == {}
    assert time.monotonic() - t0 < 5


# ============================================================ 2. pages of the table of contents outside the book

def _book(tmp_path, entries: list[str]) -> Path:
    from companion.book.site.chapters import JUPYTEXT_HEADER

    root = tmp_path / "root"
    (root / "book").mkdir(parents=True)
    (root / "_config.yml").write_text("repository:\n  url: https://github.com/o/r\n")
    page = JUPYTEXT_HEADER + "\n# A page\n\n```{code-cell} ipython3\n1\n```\n"
    (root / "book" / "intro.md").write_text(page)
    for e in entries:
        src = (root / f"{e}.md")
        src.parent.mkdir(parents=True, exist_ok=True)
        src.write_text(page)
    toc = "format: jb-book\nroot: book/intro\nchapters:\n" + "".join(f"- file: {e}\n" for e in entries)
    (root / "_toc.yml").write_text(toc)
    return root


@pytest.mark.parametrize("entry", ["../outside/evil", "book/../../outside/evil", "book/../../../x"])
def test_a_notebook_is_never_written_outside_its_folder_for_a_page_outside_the_book(tmp_path, entry):
    from companion.book.editions.notebooks import write_notebooks

    (tmp_path / "outside").mkdir()
    root = _book(tmp_path, [entry])
    before = sorted(str(p) for p in tmp_path.rglob("*"))
    with pytest.raises(ValueError) as err:
        write_notebooks(root, root / "nb", executions=None, ref="main")
    assert entry in _one_line(err)
    assert sorted(str(p) for p in tmp_path.rglob("*")) == before


def test_an_empty_page_entry_is_named():
    from companion.book.site.chapters import toc_docnames

    import tempfile

    with tempfile.TemporaryDirectory() as d:
        Path(d, "_toc.yml").write_text("format: jb-book\nroot: book/intro\nchapters:\n- file: ''\n")
        with pytest.raises(ValueError, match="empty") as err:
            toc_docnames(d)
        _one_line(err)


def test_two_chapters_of_one_file_name_never_write_one_deck_over_the_other(tmp_path):
    from companion.book.editions.slides import SlideError, build_slides

    root = _book(tmp_path, ["book/part1/results", "book/part2/results"])
    (root / "_build" / "jupyter_execute").mkdir(parents=True)
    with pytest.raises(SlideError) as err:
        build_slides(root, tmp_path / "decks")
    text = _one_line(err)
    assert "book/part1/results" in text and "book/part2/results" in text
    assert not (tmp_path / "decks").exists()


# ============================================================ 3. scores no run can have, read as the run's

@pytest.mark.parametrize("quantity, value", [("symmetry", 7.0), ("symmetry", float("inf")), ("symmetry", 1.01),
                                             ("directionality", -1.5), ("directionality", float("-inf"))])
def test_a_score_outside_minus_one_to_one_is_refused_naming_the_run(tmp_path, quantity, value):
    from companion.train.runner.provenance import read_run

    run = _run_copy(tmp_path)
    h = pd.read_csv(run / "history.csv")
    rows = h.index[(h.quantity == quantity) & (h.step == h.step.max())]
    h.loc[rows[0], "value"] = value
    h.to_csv(run / "history.csv", index=False)
    with pytest.raises(CompanionError) as err:
        read_run(run)
    text = _one_line(err)
    assert run.name in text and quantity in text, text


def test_a_broken_layer_s_nan_score_is_read_as_nan_for_the_engine_to_name(tmp_path):
    from companion.train.runner.provenance import read_run

    run = _run_copy(tmp_path)
    h = pd.read_csv(run / "history.csv")
    row = h.index[(h.quantity == "symmetry") & (h.step == h.step.max())][0]
    h.loc[row, "value"] = float("nan")
    h.to_csv(run / "history.csv", index=False)
    got, _ = read_run(run)
    assert np.isnan(got.loc[row, "value"]) and int(got["value"].isna().sum()) == 1


def test_the_real_runs_have_their_scores_between_minus_one_and_one():
    from companion.train.runner.provenance import read_run

    run = DATA / "charsv4-bert-mini-encoder-standard-s70"
    h, _ = read_run(run)
    raw = pd.read_csv(run / "history.csv")
    scores = raw[raw.quantity.isin(["symmetry", "directionality"])]["value"]
    assert len(h) == len(raw) and scores.abs().max() <= 1


# ============================================================ 4. the statistics of the verdict engine

@pytest.mark.parametrize("values", [[True, False, True], ["0.1", "0.2", "0.3"], [[0.1, 0.2], [0.3, 0.4]]],
                         ids=["bools", "text", "a table"])
def test_values_that_are_not_one_number_per_seed_are_refused(values):
    from companion.rules.statistics import one_sample_t

    with pytest.raises(ValueError) as err:
        one_sample_t(values)
    _one_line(err)


def test_the_t_interval_is_scipy_s():
    from scipy import stats

    from companion.rules.statistics import one_sample_t

    v = [0.12, 0.31, 0.25, 0.08]
    est = one_sample_t(np.array(v), level=0.9)
    low, high = stats.t.interval(0.9, len(v) - 1, loc=np.mean(v), scale=stats.sem(v))
    assert (est.low, est.high) == pytest.approx((low, high), rel=1e-12)


def test_a_paired_t_pairs_by_seed_not_by_position():
    from companion.rules.statistics import paired_t

    a = pd.Series([1.0, 2.0, 3.0], index=[10, 11, 12])
    b = pd.Series([0.5, 0.0, 0.0], index=[12, 11, 10])
    assert paired_t(a, b).values == pytest.approx((1.0, 2.0, 2.5))


@pytest.mark.parametrize("p", [[0.01, 1.5], [-0.01, 0.5], ["0.01", "0.5"], [True, 0.2]],
                         ids=["above one", "negative", "text", "a bool"])
def test_holm_refuses_what_is_not_a_p_value(p):
    from companion.rules.statistics import holm

    with pytest.raises(ValueError) as err:
        holm(p)
    _one_line(err)


def test_holm_is_the_step_down_adjustment_worked_by_hand():
    from companion.rules.statistics import holm

    # p sorted 0.01 < 0.02 < 0.04: 3 x 0.01, max(0.03, 2 x 0.02), max(0.04, 1 x 0.04)
    assert holm([0.04, 0.01, 0.02]) == pytest.approx([0.04, 0.03, 0.04])


@pytest.mark.parametrize("t", [1.5, -0.2, float("nan")])
def test_a_spending_function_is_never_read_outside_its_information_fractions(t):
    from companion.rules.sequential import spending

    with pytest.raises(ValueError) as err:
        spending(t, 0.05)
    _one_line(err)


@pytest.mark.parametrize("kind", ["obrien-fleming", "pocock"])
def test_a_spending_function_spends_alpha_at_the_end_and_less_before(kind):
    from companion.rules.sequential import spending

    spent = spending([0.25, 0.5, 1.0], 0.05, kind)
    assert spent[-1] == pytest.approx(0.05) and np.all(np.diff(spent) > 0)


@pytest.mark.parametrize("low, high, sesoi", [(0.5, 0.1, 0.05), (0.1, 0.5, -0.05), (0.1, 0.5, 0.0),
                                              (float("nan"), 0.5, 0.05), (0.1, 0.5, True)],
                         ids=["ends reversed", "negative yardstick", "zero yardstick", "nan end", "yardstick a bool"])
def test_an_outcome_is_never_read_from_an_interval_or_yardstick_that_is_not_one(low, high, sesoi):
    from companion.rules.statistics import interval_outcome

    with pytest.raises(ValueError) as err:
        interval_outcome(low, high, sesoi)
    _one_line(err)


# ============================================================ 5. the command line: an empty name is no folder

def _cli(argv, capsys):
    from companion import cli

    try:
        rc = cli.main(argv)
    except SystemExit as exc:
        rc = exc.code
    err = capsys.readouterr().err.strip().splitlines()
    return rc, (err[-1] if err else "")


@pytest.mark.parametrize("out", ["", "   "])
@pytest.mark.parametrize("extra", [[], ["--overwrite"]])
def test_train_into_an_empty_out_is_refused_and_the_current_folder_untouched(tmp_path, monkeypatch, capsys, out, extra):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COMPANION_CACHE", str(tmp_path / ".cache"))
    for name in ("history.csv", "provenance.json", "checkpoint.pt"):
        (tmp_path / name).write_text(SECRET)
    with within(60):   # (--lr nan, refused later, keeps a build that took the name from training here)
        rc, last = _cli(["train", "--steps", "1", "--out", out, *extra, "--lr", "nan"], capsys)
    assert rc == 2 and "--out" in last and "empty" in last, last
    assert sorted(p.name for p in tmp_path.iterdir() if p.name != ".cache") == ["checkpoint.pt", "history.csv",
                                                                               "provenance.json"]
    assert all((tmp_path / n).read_text() == SECRET for n in ("history.csv", "provenance.json", "checkpoint.pt"))


@pytest.mark.parametrize("flag", ["--out", "--catalog", "--local-dir"])
def test_survey_with_an_empty_path_is_refused_naming_the_option(tmp_path, monkeypatch, capsys, flag):
    work = tmp_path / "cwd"
    work.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.setenv("COMPANION_CACHE", str(tmp_path / "cache"))
    paths = {"--out": str(tmp_path / "s"), "--local-dir": str(tmp_path), "--catalog": str(ROOT / "data" / "catalog.csv")}
    paths[flag] = ""   # the others name real places; --only an unknown key, so nothing is ever scored
    argv = ["survey", "--offline", "--only", "no-such-key", *[x for f, v in paths.items() for x in (f, v)]]
    rc, last = _cli(argv, capsys)
    assert rc == 2 and flag in last and "empty" in last, last
    assert list(work.iterdir()) == [] and not (tmp_path / "s").exists()


@pytest.mark.parametrize("kind", ["fifo", "folder"])
def test_survey_names_a_catalog_that_is_not_a_file_for_what_it_is(tmp_path, monkeypatch, capsys, kind):
    monkeypatch.setenv("COMPANION_CACHE", str(tmp_path / "cache"))
    cat = tmp_path / "catalog.csv"
    os.mkfifo(cat) if kind == "fifo" else cat.mkdir()
    with within(20, cat):
        rc, last = _cli(["survey", "--offline", "--catalog", str(cat), "--out", str(tmp_path / "s")], capsys)
    assert rc == 2 and "no such file" not in last and ("FIFO" in last or "folder" in last), last


# ============================================================ 6. the run packer of the run scripts

@pytest.mark.parametrize("line, says", [("..  --steps 5", "'..'"), (".  --steps 5", "'.'"),
                                        ("a --corpus 'kjv --steps 5", "quot"),
                                        ("run.log --steps 5", "run.log"), ("pack_summary.json --steps 5", "pack_summary")],
                         ids=["parent", "itself", "open quote", "a log's name", "the summary's name"])
def test_a_jobs_line_whose_run_would_leave_its_folder_or_collide_is_refused_by_line(line, says):
    from companion.train.runner.pack import parse_jobs

    with pytest.raises(CompanionError) as err:
        parse_jobs(f"ok --steps 5\n{line}\n")
    text = _one_line(err)
    assert "line 2" in text and says in text, text


def test_a_jobs_file_of_plain_names_is_read_as_written():
    from companion.train.runner.pack import parse_jobs

    jobs = parse_jobs("# a comment\n\nenc-s1 --mode encoder --seed 1\ndec.s1 --mode decoder --log 'a b.txt'\n")
    assert [(j.name, j.args) for j in jobs] == [("enc-s1", ["--mode", "encoder", "--seed", "1"]),
                                                ("dec.s1", ["--mode", "decoder", "--log", "a b.txt"])]


@pytest.mark.parametrize("deadline", [float("nan"), float("inf"), 0.0, -5.0])
def test_a_deadline_that_could_never_stop_a_run_is_refused_before_any_starts(tmp_path, deadline):
    from companion.train.runner.pack import parse_jobs, run_packed

    with pytest.raises(CompanionError) as err:
        run_packed(parse_jobs("a --steps 1\n"), tmp_path / "out", 1, deadline, python="/bin/false")
    assert "--deadline" in _one_line(err)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("gib", ["nan", "-1", "0"])
def test_a_memory_per_run_that_is_no_size_is_refused_in_one_line(tmp_path, monkeypatch, capsys, gib):
    from companion.train.runner.pack import main

    monkeypatch.setenv("COMPANION_CACHE", str(tmp_path / "cache"))

    jobs = tmp_path / "jobs.txt"
    jobs.write_text("a --steps 1\n")
    with pytest.raises(SystemExit) as exit_:
        main([str(jobs), "--out", str(tmp_path / "out"), "--gib-per-run", gib])
    assert exit_.value.code == 2
    assert "--gib-per-run" in capsys.readouterr().err.strip().splitlines()[-1]
    assert not (tmp_path / "out").exists()


# ============================================================ 7. caches: another entry's table under this name

def _survey_table(key: str, hub_id: str | None = None) -> pd.DataFrame:
    return pd.DataFrame({"key": [key] * 2, "hub_id": [hub_id or f"o/{key}"] * 2, "component": ["self"] * 2, "role": ["encoder"] * 2,
                         "layer": [0, 1], "head": [-1, -1], "level": ["layer"] * 2, "pairing": ["grouped"] * 2,
                         "symmetry": [0.1, 0.2], "directionality": [0.0, -0.1]})


def test_another_model_s_cached_table_copied_to_a_model_s_name_is_not_trusted(tmp_path):
    import shutil

    from companion.survey.table_cache import _write_atomic, cache_problem, checksum_path

    a, b = tmp_path / "alpha.csv", tmp_path / "beta.csv"
    _write_atomic(_survey_table("alpha"), a)
    shutil.copyfile(a, b)
    shutil.copyfile(checksum_path(a), checksum_path(b))
    assert cache_problem(a, key="alpha") is None
    problem = cache_problem(b, key="beta")
    assert problem is not None and "alpha" in problem


def test_the_survey_union_never_counts_one_model_twice(tmp_path):
    import shutil

    from companion.survey.scoring import run_survey_entries
    from companion.survey.table_cache import _write_atomic, checksum_path
    from companion.zoo.catalog import load_catalog

    cat = load_catalog().head(2)
    k1, k2 = cat["key"].tolist()
    models = tmp_path / "models"
    _write_atomic(_survey_table(k1, cat["hub_id"].iloc[0]), models / f"{k1}.csv")
    shutil.copyfile(models / f"{k1}.csv", models / f"{k2}.csv")
    shutil.copyfile(checksum_path(models / f"{k1}.csv"), checksum_path(models / f"{k2}.csv"))
    status = run_survey_entries(cat, out_dir=tmp_path, keys=[k1], online=False, progress=False)
    assert status["status"].tolist() == ["cached"]
    union = pd.read_csv(tmp_path / "scores.csv")
    assert union["key"].tolist() == [k1, k1], union["key"].tolist()


# ============================================================ 8. markup through the repository's address or the pinned ref

@pytest.mark.parametrize("url", ['https://github.com/o"><img src=x onerror=alert(1)>/r',
                                 "https://github.com/o/r)[x](javascript:alert(1)", "https://github.com/o/r<b>x</b>",
                                 "https://github.com/o/..", "https://github.com/o/r'onmouseover='x"])
def test_a_repository_address_with_markup_makes_no_link_address(url):
    from companion.book.site.chapters import github_parts, site_url

    with pytest.raises(ValueError) as err:
        site_url(url)
    _one_line(err)
    with pytest.raises(ValueError):
        github_parts(url)


@pytest.mark.parametrize("url, parts", [("https://github.com/o/r", ("o", "r")), ("https://github.com/my-org/my.repo_x.git", ("my-org", "my.repo_x")),
                                        ("http://github.com/A1/b-2/", ("A1", "b-2"))])
def test_a_github_address_gives_its_owner_and_name(url, parts):
    from companion.book.site.chapters import github_parts

    assert github_parts(url) == parts


@pytest.mark.parametrize("ref", ["v1`<img src=x onerror=alert(1)>`", "main#egg=other", "x y", "a@b", "../up", ""])
def test_a_pinned_ref_that_would_change_the_text_or_the_install_address_is_refused(tmp_path, ref):
    from companion.book.editions.notebooks import write_notebooks

    root = _book(tmp_path, [])
    if not ref:   # no ref given: the checkout's commit or the release tag, never an empty pin
        from companion.book.editions.setup_cell import pinned_ref

        assert re.fullmatch(r"[0-9a-f]{40}|v[0-9][0-9A-Za-z.+-]*", pinned_ref(root, ref or None))
        return
    with pytest.raises(ValueError) as err:
        write_notebooks(root, tmp_path / "nb", executions=None, ref=ref)
    assert "--ref" in _one_line(err)
    assert not (tmp_path / "nb").exists()


def test_a_plain_ref_is_pinned_in_the_notebook_as_given(tmp_path):
    import nbformat

    from companion.book.editions.notebooks import write_notebooks

    root = _book(tmp_path, [])
    [path] = write_notebooks(root, tmp_path / "nb", executions=None, ref="v1.2.3")
    nb = nbformat.read(str(path), as_version=4)
    assert "'v1.2.3'" in "".join(c.source for c in nb.cells if c.cell_type == "code")


@pytest.mark.parametrize("where", ["vendor", "vendor/reveal", "vendor/mathjax-dangling"])
def test_the_decks_offline_scripts_are_never_copied_through_a_link_out_of_out(tmp_path, where):
    from companion.book.editions.slides import copy_vendor

    src = tmp_path / "src"
    (src / "js").mkdir(parents=True)
    (src / "js" / "reveal.js").write_text("x")
    outside = tmp_path / "outside"
    outside.mkdir()
    out = tmp_path / "decks"
    (out / "vendor").mkdir(parents=True) if where != "vendor" else out.mkdir()
    link = out / where.replace("-dangling", "")
    link.symlink_to(outside if "dangling" not in where else tmp_path / "nowhere")
    with pytest.raises(ValueError) as err:
        copy_vendor(out, (("reveal", src), ("mathjax", src)))
    assert "symbolic link" in _one_line(err)
    assert list(outside.iterdir()) == [] and not (tmp_path / "nowhere").exists()


def test_the_decks_offline_scripts_are_copied_into_a_new_folder(tmp_path):
    from companion.book.editions.slides import copy_vendor

    src = tmp_path / "src"
    src.mkdir()
    (src / "reveal.js").write_text("x")
    copy_vendor(tmp_path / "decks", (("reveal", src),))
    assert (tmp_path / "decks" / "vendor" / "reveal" / "reveal.js").read_text() == "x"


# ============================================================ 9. directive titles in the Colab notebooks

@pytest.mark.parametrize("directive", ["dropdown", "admonition", "note"])
@pytest.mark.parametrize("value", ["<img src=x onerror=alert(1)>", "</summary><script>x</script>"])
def test_a_glued_value_in_a_directive_title_is_its_text_and_makes_no_element(directive, value):
    import html as _html

    from markdown_it import MarkdownIt

    from companion.book.editions.notebook_cells import colab_markdown

    cell = colab_markdown(f"```{{{directive}}} Seen {{glue:text}}`v` here\nBody.\n```\n", {"v": value}, {})
    page = MarkdownIt("commonmark", {"html": True}).render(cell)
    tags = set(re.findall(r"<(\w+)", page))
    assert tags <= {"p", "details", "summary", "blockquote", "strong"}, page
    assert "{glue" not in cell and value in _html.unescape(re.sub(r"<[^>]+>", "", page)), page


# ============================================================ 10. the student edition's sources



@pytest.mark.parametrize("kind", ["fifo", "link-outside"])
def test_a_file_under_book_that_is_no_plain_file_of_the_book_is_refused_by_name(tmp_path, kind):
    from companion.book.editions.student import prepare_sources

    root = tiny_book(tmp_path)
    odd = root / "book" / "data.bin"
    secret = tmp_path / "private.txt"
    secret.write_text(SECRET)
    os.mkfifo(odd) if kind == "fifo" else odd.symlink_to(secret)
    with within(10, odd), pytest.raises(ValueError) as err:
        prepare_sources(root, tmp_path / "dest")
    assert "data.bin" in _one_line(err)
    assert not any(p.is_file() and p.read_text() == SECRET for p in (tmp_path / "dest").rglob("*"))


def test_a_link_inside_the_book_is_copied_as_its_file(tmp_path):
    from companion.book.editions.student import prepare_sources

    root = tiny_book(tmp_path)
    (root / "book" / "table.csv").write_text("a\n1\n")
    (root / "book" / "same.csv").symlink_to(root / "book" / "table.csv")
    prepare_sources(root, tmp_path / "dest")
    assert (tmp_path / "dest" / "book" / "same.csv").read_text() == "a\n1\n"


def test_a_relative_cache_path_is_refused_by_name_not_moved_with_the_working_folder(monkeypatch, tmp_path):
    from companion.base.cache import cache_root
    from companion.base.errors import CompanionError

    monkeypatch.setenv("COMPANION_CACHE", "cache")
    with pytest.raises(CompanionError, match="relative path.*absolute path"):
        cache_root()
    monkeypatch.setenv("COMPANION_CACHE", "  ")   # blank: the default, as if unset
    monkeypatch.setenv("XDG_CACHE_HOME", "rel")   # relative: ignored, as the XDG spec says
    monkeypatch.setenv("HOME", str(tmp_path))
    assert cache_root() == tmp_path / ".cache" / "companion"
    monkeypatch.setenv("COMPANION_CACHE", str(tmp_path / "c"))
    assert cache_root() == tmp_path / "c"


def test_the_colab_set_up_markers_refuse_a_link_at_their_name_instead_of_writing_through_it(tmp_path):
    from companion.base.errors import CompanionError
    from companion.book.editions import colab

    outside = tmp_path / "outside.txt"
    outside.write_text("keep me")
    clone = tmp_path / "clone"
    clone.mkdir()
    (clone / "mark").symlink_to(outside)
    with pytest.raises(CompanionError, match="symbolic link"):
        colab._write(clone / "mark", '{"weights": []}')
    assert outside.read_text() == "keep me", "the marker was written through a link out of the clone"
    colab._write(clone / "plain", '{"weights": []}')
    assert (clone / "plain").read_text() == '{"weights": []}'
