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

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data" / "runs"
SECRET = "the user's own file\n"


def _one_line(err) -> str:
    text = str(err.value if hasattr(err, "value") else err)
    assert "\n" not in text.strip(), text
    return text


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
