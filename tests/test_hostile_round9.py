"""Hardening round 9 (issue 74): a new hostile pass after rounds 7 and 8
(tests/test_hostile_round7.py, tests/test_hostile_round8.py), in places they did not reach:
the corpora's archives and token cache, a corpus file the user names, the vendored scripts'
tarball, the zoo's split archives, checkpoints with extreme or non-finite values, the site's
footer and pasted HTML, the notebooks' tables, and the student edition's stripper.  Three
kinds of failure only: a number or verdict that is silently wrong, a file lost, written
outside the tool's own output or a read that blocks for ever, markup that reaches a page
unescaped.  Each case states the right behaviour: a one-line refusal that names the input,
or the right value computed apart from the code under test."""

from __future__ import annotations

import hashlib
import html as _html
import io
import json
import os
import re
import shutil
import tarfile
import zipfile
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest

from companion.base.errors import CompanionError
from deadline import within
from one_line import one_line as _one_line
from one_line import one_line_error
from tiny_book import tiny_book

SECRET = "the user's own file\n"


# ============================================================ 1. inputs read or hashed without the regular-file check

@pytest.fixture
def cache(tmp_path, monkeypatch):
    root = tmp_path / "cache"
    monkeypatch.setenv("COMPANION_CACHE", str(root))
    return root


def _kjv_archive(cache: Path) -> Path:
    from companion.train.text.corpora import CORPORA

    folder = cache / "archives"
    folder.mkdir(parents=True, exist_ok=True)
    return folder / CORPORA["kjv"].archive


@pytest.mark.parametrize("kind", ["fifo", "folder"])
def test_a_corpus_archive_that_is_no_file_is_refused_at_once_naming_it(cache, kind):
    """The hash of the cached archive opened a FIFO (blocked for ever) or a folder (a traceback)."""
    from companion.train.text.corpora import corpus_documents

    archive = _kjv_archive(cache)
    os.mkfifo(archive) if kind == "fifo" else archive.mkdir()
    with within(10, archive), pytest.raises(CompanionError) as err:
        corpus_documents("kjv", fetch=False)
    assert str(archive) in _one_line(err)


@pytest.mark.parametrize("fetch", [False, True], ids=["read", "fetch-again"])
def test_a_corpus_archive_linked_to_a_user_file_never_removes_or_rewrites_that_file(cache, monkeypatch, fetch):
    import subprocess

    from companion.train.text import corpora

    mine = cache.parent / "thesis.tar.gz"
    mine.write_text(SECRET)
    _kjv_archive(cache).symlink_to(mine)
    monkeypatch.setattr(corpora.subprocess, "run", lambda cmd, **kw: subprocess.CompletedProcess(
        cmd, 1, "", "ERROR: no network here"))
    with pytest.raises(CompanionError) as err:
        corpora.corpus_documents("kjv", fetch=fetch)
    assert "kjv" in _one_line(err)
    assert mine.read_text() == SECRET


@pytest.mark.parametrize("kind", ["fifo", "folder"])
def test_a_corpus_file_the_user_names_that_is_no_file_is_refused_at_once(tmp_path, kind):
    from companion.train.text.data import load_texts

    path = tmp_path / "my-corpus.txt"
    os.mkfifo(path) if kind == "fifo" else path.mkdir()
    with within(10, path), pytest.raises(CompanionError) as err:
        load_texts(str(path))
    assert str(path) in _one_line(err)


@pytest.mark.parametrize("fifo", ["tokenizer_config.json", "vocab.txt"])
def test_a_tokenizer_folder_holding_a_fifo_is_refused_at_once(tmp_path, fifo):
    from companion.train.text.data import load_tokenizer

    folder = tmp_path / "tok"
    folder.mkdir()
    (folder / "vocab.txt").write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b"]) + "\n")
    (folder / "tokenizer_config.json").write_text(json.dumps({"tokenizer_class": "BertTokenizer"}))
    (folder / fifo).unlink()
    os.mkfifo(folder / fifo)
    with within(10, folder / fifo), pytest.raises(CompanionError) as err:
        load_tokenizer(str(folder))
    assert fifo in _one_line(err)


@pytest.mark.parametrize("kind", ["fifo", "folder"])
def test_a_jobs_file_that_is_no_file_is_named_for_what_it_is(tmp_path, capsys, kind):
    """It read 'does not exist' for a FIFO or a folder that is there."""
    from companion.train.runner.pack import main

    jobs = tmp_path / "jobs.txt"
    os.mkfifo(jobs) if kind == "fifo" else jobs.mkdir()
    with within(10, jobs):
        rc = main([str(jobs), "--out", str(tmp_path / "out")])
    lines = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert rc == 2 and len(lines) == 1 and str(jobs) in lines[0] and "does not exist" not in lines[0], lines
    assert ("a FIFO" if kind == "fifo" else "a folder") in lines[0] and not (tmp_path / "out").exists()


def _token_folder(tmp_path: Path, fifo: str) -> Path:
    folder = tmp_path / "tokens" / "k"
    folder.mkdir(parents=True)
    empty = hashlib.sha256(b"").hexdigest()
    meta = {"source": {}, "train_tokens": 0, "eval_tokens": 0, "dtype": "uint16",
            "train_sha256": empty, "eval_sha256": empty}
    (folder / "meta.json").write_text(json.dumps(meta))
    (folder / "train.bin").write_bytes(b"")
    (folder / "eval.bin").write_bytes(b"")
    (folder / fifo).unlink()
    os.mkfifo(folder / fifo)
    return folder


@pytest.mark.parametrize("fifo", ["meta.json", "train.bin"])
def test_a_token_cache_entry_that_is_a_fifo_is_refused_at_once(tmp_path, fifo):
    from companion.train.text.tokens import _load

    folder = _token_folder(tmp_path, fifo)
    with within(10, folder / fifo), pytest.raises(CompanionError) as err:
        _load(folder, {})
    assert fifo in _one_line(err)


def test_a_token_cache_of_plain_files_still_loads(tmp_path):
    from companion.train.text.tokens import _load

    folder = _token_folder(tmp_path, "eval.bin")
    (folder / "eval.bin").unlink()
    (folder / "eval.bin").write_bytes(b"")
    streams = _load(folder, {})
    assert len(streams.train) == 0 and len(streams.eval) == 0


# ============================================================ 2. archives: the vendored scripts' tarball, the zoo's split zips

def _tgz(path: Path, members: list[tuple[str, str, bytes | str]]) -> Path:
    """A gzipped tarball of ``(name, kind, data)``: kind ``file`` (data: bytes), ``symlink`` or
    ``hardlink`` (data: the link's target)."""
    with tarfile.open(path, "w:gz") as tar:
        for name, kind, data in members:
            info = tarfile.TarInfo(name)
            if kind == "file":
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
            else:
                info.type = tarfile.SYMTYPE if kind == "symlink" else tarfile.LNKTYPE
                info.linkname = data
                tar.addfile(info)
    return path


def test_a_tarball_member_that_climbs_out_of_its_folder_is_refused_in_one_line_and_never_written(tmp_path):
    from companion.book.site.vendor import extract

    tgz = _tgz(tmp_path / "reveal.tgz", [("package/reveal/ok.js", "file", b"ok"),
                                         ("package/reveal/../../../../evil.txt", "file", b"evil")])
    (tmp_path / "cache").mkdir()
    with pytest.raises(RuntimeError) as err:
        extract(tgz, tmp_path / "cache" / "reveal-1", "reveal")
    assert "evil.txt" in _one_line(err) and "reveal.tgz" in str(err.value)
    assert not [p for p in tmp_path.rglob("evil.txt")]


def test_a_tarball_s_links_are_never_extracted_nor_followed(tmp_path):
    from companion.book.site.vendor import extract

    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text(SECRET)
    tgz = _tgz(tmp_path / "reveal.tgz", [
        ("package/reveal/lib", "symlink", str(outside)),
        ("package/reveal/lib/evil.txt", "file", b"evil"),
        ("package/reveal/passwd", "hardlink", str(outside / "keep.txt")),
        ("package/reveal/ok.js", "file", b"ok")])
    (tmp_path / "cache").mkdir()
    dest = extract(tgz, tmp_path / "cache" / "reveal-1", "reveal")
    assert sorted(p.name for p in outside.iterdir()) == ["keep.txt"] and (outside / "keep.txt").read_text() == SECRET
    assert not any(p.is_symlink() for p in dest.rglob("*")) and not (dest / "passwd").exists()
    assert (dest / "ok.js").read_bytes() == b"ok"


@pytest.mark.parametrize("kind", ["link-to-a-folder", "dangling-link"])
def test_a_vendor_cache_entry_that_is_a_link_is_refused_naming_it_and_its_target_is_kept(tmp_path, monkeypatch, kind):
    import subprocess

    from companion.book.site import vendor

    tgz_bytes = _tgz(tmp_path / "src.tgz", [("package/x.js", "file", b"x")]).read_bytes()

    def npm(cmd, **kw):   # npm pack: the tarball, into --pack-destination
        (Path(cmd[cmd.index("--pack-destination") + 1]) / "fake-1.0.0.tgz").write_bytes(tgz_bytes)
        return subprocess.CompletedProcess(cmd, 0, "", "")

    monkeypatch.setattr(vendor.subprocess, "run", npm)
    cache = tmp_path / "cache"
    cache.mkdir()
    mine = tmp_path / "mine"
    if kind == "link-to-a-folder":
        mine.mkdir()
        (mine / "notes.txt").write_text(SECRET)
    (cache / "fake-1.0.0").symlink_to(mine)
    with pytest.raises((RuntimeError, CompanionError)) as err:
        vendor.npm_package("fake", "1.0.0", vendor.integrity_of(tgz_bytes), "", "x.js", cache)
    assert str(cache / "fake-1.0.0") in _one_line(err)
    if kind == "link-to-a-folder":
        assert sorted(p.name for p in mine.iterdir()) == ["notes.txt"] and (mine / "notes.txt").read_text() == SECRET
    else:
        assert not mine.exists()


def _split_zip(tmp_path: Path, part_size: int) -> tuple[dict, bytes]:
    payload = bytes(range(256)) * 40
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as zf:
        zf.writestr("model.onnx", payload)
    whole = buf.getvalue()
    parts = {}
    for n, start in enumerate(range(0, len(whole), part_size), start=1):
        parts[n] = tmp_path / f"part{n:02d}.bin"
        parts[n].write_bytes(whole[start:start + part_size])
    return parts, payload


def test_a_zip_split_into_parts_reads_as_the_whole(tmp_path):
    from companion.zoo.assembly import SplitFile

    parts, payload = _split_zip(tmp_path, 4096)
    with SplitFile(parts, 4096) as raw, zipfile.ZipFile(io.BufferedReader(raw)) as zf:
        assert zf.read("model.onnx") == payload


def test_a_last_part_longer_than_a_part_is_refused_naming_it(tmp_path):
    """Its tail was read as 'part N+1, which no installed package ships'."""
    from companion.zoo.assembly import SplitFile

    parts, _ = _split_zip(tmp_path, 4096)
    last = max(parts)
    parts[last].write_bytes(parts[last].read_bytes() + b"\0" * 5000)
    with pytest.raises(CompanionError) as err:
        SplitFile(parts, 4096, "the test archive")
    assert str(parts[last]) in _one_line(err)


def test_a_parts_manifest_whose_part_is_a_fifo_is_refused_at_once(tmp_path):
    from companion.adapters.gguf_parts import _manifest, check_parts

    part = tmp_path / "part01.bin"
    os.mkfifo(part)
    manifest = tmp_path / "m.gguf.parts.json"
    manifest.write_text(json.dumps({"format": "companion.parts/1", "model": "m", "file": "m.gguf", "size": 10,
                                    "sha256": "0" * 64,
                                    "parts": [{"path": str(part), "size": 10, "sha256": "0" * 64, "marker": {}}]}))
    with within(10, part), pytest.raises(CompanionError) as err:
        check_parts(_manifest(manifest), str(manifest))
    assert str(part) in _one_line(err)


# ============================================================ 3. checkpoints: extreme, non-finite and lying values

def _state(folder: Path):
    from safetensors.torch import load_file

    return load_file(str(folder / "model.safetensors"))


def _save(folder: Path, state) -> None:
    from safetensors.torch import save_file

    save_file(state, str(folder / "model.safetensors"), metadata={"format": "pt"})


def test_weights_at_the_ends_of_float64_score_as_the_same_weights_at_ordinary_scale(tmp_path):
    """``M = Wq^T Wk`` is unchanged when Wq is multiplied by 2^900 and Wk by 2^-900 (exactly, powers
    of two): every layer's scores must be those of the plain file, not NaN, 0 or a rounded value."""
    import malformed as bad
    from companion.adapters import read_qk
    from companion.survey.tables import layer_scores

    plain, scaled = tmp_path / "plain", tmp_path / "scaled"
    bad.tiny_llama(plain, seed=3)
    shutil.copytree(plain, scaled)
    state = _state(scaled)
    for i in range(3):
        q, k = f"model.layers.{i}.self_attn.q_proj.weight", f"model.layers.{i}.self_attn.k_proj.weight"
        state[q] = state[q].double() * 2.0 ** 900
        state[k] = state[k].double() * 2.0 ** -900
    _save(scaled, state)
    want = layer_scores(read_qk(str(plain), progress=False))
    got = layer_scores(read_qk(str(scaled), progress=False))
    assert np.isfinite(want[["symmetry", "directionality"]].to_numpy()).all()
    np.testing.assert_allclose(got[["symmetry", "directionality"]].to_numpy(),
                               want[["symmetry", "directionality"]].to_numpy(), rtol=0, atol=1e-12)


def test_an_infinite_half_precision_query_weight_is_refused_naming_its_layer(tmp_path, capsys):
    import malformed as bad

    bad.tiny_llama(tmp_path / "m")
    state = _state(tmp_path / "m")
    q = "model.layers.1.self_attn.q_proj.weight"
    state[q] = state[q].half()
    state[q][2, 3] = float("inf")
    _save(tmp_path / "m", state)
    one_line_error(["score", str(tmp_path / "m"), "--quiet"], capsys, "layer 1", "infinite", within_s=60)


def test_an_infinite_row_scale_of_an_int8_checkpoint_is_refused(tmp_path, capsys):
    import malformed as bad

    bad.bnb_int8_llama(tmp_path / "m")
    state = _state(tmp_path / "m")
    state["model.layers.0.self_attn.q_proj.SCB"][1] = float("inf")
    _save(tmp_path / "m", state)
    one_line_error(["score", str(tmp_path / "m"), "--quiet"], capsys, "layer 0", "infinite", within_s=60)


def test_a_nan_block_scale_of_an_fp8_checkpoint_is_refused(tmp_path, capsys):
    import malformed as bad

    bad.fp8_block_llama(tmp_path / "m")
    state = _state(tmp_path / "m")
    state["model.layers.2.self_attn.k_proj.weight_scale_inv"][0, 0] = float("nan")
    _save(tmp_path / "m", state)
    one_line_error(["score", str(tmp_path / "m"), "--quiet"], capsys, "layer 2", "NaN", within_s=60)


@pytest.mark.parametrize("shape, end", [([2 ** 31, 2 ** 31], 2 ** 64), ([2 ** 62], 2 ** 64), ([1 << 40, 0], 0)],
                         ids=["2^62 floats", "2^62 one row", "a zero side"])
def test_a_safetensors_header_asking_for_a_huge_tensor_is_refused_at_once(tmp_path, shape, end):
    import time

    import malformed as bad
    from companion.adapters.hf_folder import read_safetensors_header

    path = bad.write_raw_safetensors(tmp_path / "model.safetensors",
                                     {"q": {"dtype": "F32", "shape": shape, "data_offsets": [0, end]}},
                                     b"\0" * 16)
    t0 = time.monotonic()
    with pytest.raises(CompanionError) as err:
        read_safetensors_header(path)
    assert time.monotonic() - t0 < 5 and str(path) in _one_line(err)


# ============================================================ 4. the score's and the survey's tables: never through a link, never into a FIFO

def test_score_out_through_a_link_never_writes_the_linked_file(tmp_path, capsys):
    import malformed as bad
    import pandas as pd

    from companion.cli import main

    bad.tiny_llama(tmp_path / "m")
    mine = tmp_path / "elsewhere" / "results.csv"
    mine.parent.mkdir()
    mine.write_text("run,value\nmine,1\n")
    out = tmp_path / "out" / "scores.csv"
    out.parent.mkdir()
    out.symlink_to(mine)
    rc = main(["score", str(tmp_path / "m"), "--out", str(out), "--quiet"])
    assert mine.read_text() == "run,value\nmine,1\n"
    if rc == 0:   # the link itself replaced by the table
        assert not out.is_symlink() and len(pd.read_csv(out)) == 3


def test_score_out_at_a_fifo_is_refused_at_once(tmp_path, capsys):
    import malformed as bad

    bad.tiny_llama(tmp_path / "m")
    fifo = tmp_path / "scores.csv"
    os.mkfifo(fifo)
    with within(20, fifo):
        one_line_error(["score", str(tmp_path / "m"), "--out", str(fifo), "--quiet"], capsys, str(fifo))


def test_the_survey_never_writes_its_tables_through_a_models_folder_that_is_a_link(tmp_path, monkeypatch):
    import pandas as pd

    from companion.survey import scoring
    from companion.survey.sources import SurveySource
    from companion.zoo.catalog import load_catalog

    cat = load_catalog().head(1)
    key = cat["key"].iloc[0]
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / f"{key}.csv").write_text(SECRET)
    out = tmp_path / "out"
    out.mkdir()
    (out / "models").symlink_to(mine)
    monkeypatch.setattr(scoring, "resolve_source", lambda entry, **kw: SurveySource(str(tmp_path), "local", None))
    monkeypatch.setattr(scoring, "score_entry", lambda entry, src, **kw: pd.DataFrame({"key": [key], "symmetry": [0.5]}))
    with pytest.raises(CompanionError) as err:
        scoring.run_survey_entries(cat, out_dir=out, keys=[key], online=False, progress=False, force=True)
    assert str(out / "models") in _one_line(err)
    assert sorted(p.name for p in mine.iterdir()) == [f"{key}.csv"] and (mine / f"{key}.csv").read_text() == SECRET


# ============================================================ 5. text pasted into the site's HTML and the notebooks

class _Elements(HTMLParser):
    def __init__(self, html: str):
        super().__init__()
        self.tags, self.attrs = [], []
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attrs.extend(attrs)

    handle_startendtag = handle_starttag


def _runs_script(value: str | None) -> bool:
    bare = re.sub(r"[\x00-\x20\x7f]", "", _html.unescape(value or "")).lower()
    return bare.startswith(("javascript:", "vbscript:", "data:text", "data:image/svg"))


HOSTILE = "</pre><script>alert(1)</script><img src=x onerror=alert(1)>"


def test_the_footer_shows_a_hostile_citation_file_as_text(tmp_path):
    from companion.book.site.citation import Version, book_bibtex
    from companion.book.sphinxext import footer_html

    (tmp_path / "CITATION.cff").write_text(
        f"title: '{HOSTILE}'\nauthors:\n  - name: '<svg onload=alert(1)>'\nurl: 'javascript:alert(1)'\n")
    book = book_bibtex(Version("0.1.0", "abc1234", "4"), tmp_path)
    paper = "@article{x,\n  title = {" + HOSTILE + "}\n}"
    page = footer_html(Version("0.1.0", "abc1234", "4").label, book, paper)
    found = _Elements(page)
    assert set(found.tags) <= {"p", "details", "summary", "pre"}, found.tags
    assert {n for n, _ in found.attrs} <= {"class"}, found.attrs
    assert HOSTILE in _html.unescape(page) and "<svg onload=alert(1)>" in _html.unescape(page)


@pytest.mark.parametrize("fragment", [
    '<a href="&#x6A;avascript:alert(1)">x</a>',
    '<a href="&#106avascript:alert(1)">x</a>',
    '<a href="java&NewLine;script:alert(1)">x</a>',
    '<a href="javascript&colon;alert(1)">x</a>',
    '<a href="VBScript:msgbox(1)">x</a>',
    '<a href="data:text/html,&lt;script&gt;alert(1)&lt;/script&gt;">x</a>',
    '<img src="data:image/svg+xml;base64,PHN2ZyBvbmxvYWQ9YWxlcnQoMSk+">',
    '<img src="x.png" srcset="javascript:alert(1) 1x">',
    '<details open ontoggle="alert(1)"><summary>s</summary></details>',
    '<math><mi xlink:href="javascript:alert(1)">x</mi></math>',
], ids=["hex-ref", "ref-without-semicolon", "newline-entity", "colon-entity", "vbscript", "data-html",
        "svg-data", "srcset", "ontoggle", "mathml-xlink"])
def test_pasted_html_in_another_disguise_leaves_nothing_that_runs(fragment):
    from companion.book.site.markup import safe_html

    found = _Elements(safe_html(fragment))
    assert not {"script", "math", "mi", "svg", "iframe"} & set(found.tags), found.tags
    assert not any(n.startswith("on") or n in ("srcset", "xlink:href", "style") for n, _ in found.attrs), found.attrs
    assert not any(_runs_script(v) for n, v in found.attrs if n in ("href", "src")), found.attrs


def test_a_glued_figure_whose_image_data_is_not_base64_makes_no_element_of_a_notebook():
    from markdown_it import MarkdownIt

    from companion.book.editions.notebook_cells import paste_glued_figures

    class Execution:   # a glued figure's image/png as a crafted output holds it
        @staticmethod
        def figure(name):
            return "iVBORw0KGgo=) <img src=x onerror=alert(1)> ![x](javascript:alert(1)", "a plot"

    text = "Before.\n\n```{glue:figure} fig\n:name: f\nA caption.\n```\n\nAfter.\n"
    try:
        cell, _ = paste_glued_figures(text, Execution())
    except ValueError as err:
        assert "'fig'" in _one_line(err)
        return
    found = _Elements(MarkdownIt("commonmark", {"html": True}).render(cell))
    assert found.tags.count("img") <= 1 and "a" not in found.tags, found.tags
    assert all(n in ("alt", "src") for n, _ in found.attrs), found.attrs
    assert all(re.fullmatch(r"data:image/png;base64,[A-Za-z0-9+/=]*", v) for n, v in found.attrs if n == "src")


def test_a_glued_figure_is_pasted_as_its_image():
    from companion.book.editions.notebook_cells import paste_glued_figures

    class Execution:
        @staticmethod
        def figure(name):
            return "iVBORw0K\nGgo=", "a <b>plot</b>"

    cell, size = paste_glued_figures("```{glue:figure} fig\nA caption.\n```\n", Execution())
    assert cell.startswith("![a &lt;b&gt;plot&lt;/b&gt;](data:image/png;base64,iVBORw0KGgo=)") and size == len("iVBORw0KGgo=")


@pytest.mark.parametrize("value", ["c | <img src=x onerror=alert(1)>", "a\n\n| x | y |\n|---|---|", "`x` | **y**"],
                         ids=["a cell break and markup", "a table of its own", "code and emphasis"])
def test_a_glued_value_in_a_notebook_table_stays_one_cell_of_text(value):
    from markdown_it import MarkdownIt

    from companion.book.editions.notebook_cells import colab_markdown

    cell = colab_markdown("| name | value |\n|---|---|\n| v | {glue:text}`v` |\n", {"v": value}, {})
    page = MarkdownIt("commonmark", {"html": True}).enable("table").render(cell)
    found = _Elements(page)
    assert found.tags.count("td") == 2 and found.tags.count("tr") == 2, page
    assert set(found.tags) <= {"table", "thead", "tbody", "tr", "th", "td"}, page
    text = _html.unescape(re.sub(r"<[^>]+>", "", page)).replace("\\", "")
    assert " ".join(value.split()) in text, page


@pytest.mark.parametrize("value", [1.4e-8, 1.5e-8, 3.4e-8, -6.6e-8, 3.4e-4, 1.26e-7],
                         ids=["1.4e-8", "1.5e-8", "3.4e-8", "-6.6e-8", "3.4e-4", "1.26e-7"])
def test_a_small_value_in_a_page_table_keeps_two_significant_digits(value):
    """A p-value of 1.4e-8 in a column of three decimals read 0.00000001, a third less."""
    from companion.book.tables import cell_text

    shown = cell_text(value, 3)
    assert float(shown.replace(",", "")) != 0 and abs(float(shown.replace(",", "")) - value) <= 0.05 * abs(value), shown


@pytest.mark.parametrize("p", [3e-6, 1.2e-4, 4.4e-4], ids=["3e-6", "1.2e-4", "4.4e-4"])
def test_a_small_p_value_in_a_sentence_keeps_two_significant_digits(p):
    """``p = 0.0000`` for 3e-6: a p-value read as zero."""
    from companion.judge.sentences import p_value

    said = p_value(p, 1e-12)
    shown = float(re.fullmatch(r"p = (\S+)", said).group(1))
    assert shown != 0 and abs(shown - p) <= 0.05 * p, said


# ============================================================ 6. the student edition: solutions behind line breaks only Python sees

@pytest.mark.parametrize("sep", ["\u2028", "\x0c", "\x85", "\x1e"],
                         ids=["line-separator", "form-feed", "next-line", "record-separator"])
def test_a_character_python_splits_lines_at_neither_leaks_nor_refuses_a_solution(sep):
    """``str.splitlines`` breaks lines where Markdown does not: the lines removed were counted
    one way and cut the other."""
    from companion.book.editions.solutions import strip_solutions

    before = f"# A chapter\n\nBefore{sep}still the same paragraph.\n\n"
    page = before + "```{solution} ex-a\nSECRET\n```\n\nAfter.\n"
    assert strip_solutions(page) == before + "After.\n"


def test_a_solution_after_a_code_block_and_three_form_feeds_never_reaches_the_student_text():
    from companion.book.editions.solutions import strip_solutions

    before = "# A chapter\n\na\x0cb\x0cc\x0cd\n\n```python\nx = 1\n```\n"
    out = strip_solutions(before + "```{solution} ex-a\nSECRET\n```\n\nAfter.\n")
    assert "SECRET" not in out and out == before + "\nAfter.\n", repr(out)   # the code block and its blank line kept




_NOTEBOOK = {"cells": [{"cell_type": "markdown", "metadata": {}, "source": ["# A page\n"]},
                       {"cell_type": "markdown", "metadata": {},
                        "source": ["```{solution} ex-a\n", "NOTEBOOK-SECRET\n", "```\n"]}],
             "metadata": {}, "nbformat": 4, "nbformat_minor": 5}


@pytest.mark.parametrize("name, body", [
    ("page.ipynb", json.dumps(_NOTEBOOK)),
    ("answers.txt", ":::{solution} ex-a\nINCLUDED-SECRET\n:::\n"),
    ("part.rst", ".. solution:: ex-a\n\n   RST-SECRET\n"),
], ids=["notebook-page", "included-text", "rst-page"])
def test_a_solution_in_a_file_the_stripper_does_not_read_never_reaches_the_student_sources(tmp_path, name, body):
    from companion.book.editions.student import prepare_sources

    root = tiny_book(tmp_path)
    (root / "book" / "intro.md").write_text(f"# Intro\n\n```{{include}} {name}\n```\n")
    (root / "book" / name).write_text(body)
    dest = tmp_path / "dest"
    try:
        prepare_sources(root, dest)
    except ValueError as err:
        assert name in _one_line(err)
    leaked = [p for p in dest.rglob("*") if p.is_file() and "SECRET" in p.read_text(errors="replace")]
    assert not leaked, leaked


def test_a_plain_data_file_beside_the_pages_is_still_copied(tmp_path):
    from companion.book.editions.student import prepare_sources

    root = tiny_book(tmp_path)
    (root / "book" / "table.csv").write_text("solution,value\nx,1\n")   # the word alone is no directive
    prepare_sources(root, tmp_path / "dest")
    assert (tmp_path / "dest" / "book" / "table.csv").read_text() == "solution,value\nx,1\n"
