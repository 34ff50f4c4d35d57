"""Outputs are never half-written or lost, caches are checked, options fail before reading."""

from __future__ import annotations

import errno
import json
import os
import stat

import pandas as pd
import pytest

import malformed as bad
from one_line import one_line_error
from companion.survey import scoring as survey
from companion.survey import table_cache
from companion.zoo.catalog import load_catalog
from companion.cli import main
from companion.base.errors import CompanionError
from test_survey import fake_catalog, tiny_models  # noqa: F401  (fixtures)


def _one_line(argv, capsys, *words):
    capsys.readouterr()
    rc = main(argv)
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert rc != 0 and "Traceback" not in err and len(lines) == 1, err
    for w in words:
        assert w in lines[0], lines[0]
    return lines[0]


class _FullDisk:
    """A file object whose writes fail with ENOSPC after a few bytes got through."""

    def __init__(self, f):
        self._f = f

    def write(self, data):
        self._f.write(data[:10])
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    def __getattr__(self, name):
        return getattr(self._f, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._f.close()


@pytest.fixture()
def full_disk(monkeypatch):
    real = os.fdopen

    def arm():
        monkeypatch.setattr(os, "fdopen", lambda *a, **k: _FullDisk(real(*a, **k)))

    return arm


def _no_reads(monkeypatch):
    def refuse(*a, **k):
        raise AssertionError("a tensor was read before the options were checked")

    monkeypatch.setattr("companion.adapters.read_qk", refuse)


# ----------------------------------------------------------------------------- score --out


def test_a_full_disk_leaves_the_previous_score_table_and_no_temporary(tmp_path, capsys, full_disk):
    bad.tiny_llama(tmp_path / "m")
    out = tmp_path / "out" / "scores.csv"
    assert main(["score", str(tmp_path / "m"), "--out", str(out), "--quiet"]) == 0
    before = out.read_bytes()
    full_disk()
    _one_line(["score", str(tmp_path / "m"), "--out", str(out), "--quiet"], capsys,
              "disk is full", str(out))
    assert out.read_bytes() == before
    assert sorted(p.name for p in out.parent.iterdir()) == ["scores.csv"]


def test_an_out_path_that_cannot_be_written_fails_before_any_tensor_is_read(
        tmp_path, capsys, monkeypatch):
    bad.tiny_llama(tmp_path / "m")
    (tmp_path / "a-file").write_text("x")
    _no_reads(monkeypatch)
    _one_line(["score", str(tmp_path / "m"), "--out", str(tmp_path / "a-file" / "s.csv")],
              capsys, "cannot write")
    _one_line(["score", str(tmp_path / "m"), "--out", str(tmp_path)], capsys, "is a folder")


@pytest.mark.parametrize("gamma", ["nan", "-1", "inf"])
def test_a_bad_gamma_fails_before_any_tensor_is_read(tmp_path, capsys, monkeypatch, gamma):
    bad.tiny_llama(tmp_path / "m")
    _no_reads(monkeypatch)
    _one_line(["score", str(tmp_path / "m"), f"--gamma={gamma}"], capsys, "--gamma")


# ----------------------------------------------------------------------------- survey cache


def test_a_cached_table_cut_short_is_recomputed_and_the_status_says_so(fake_catalog, tmp_path):
    out = tmp_path / "survey"
    survey.run_survey_entries(load_catalog(fake_catalog), out, keys=["tiny-bert"],
                       progress=False)
    path = out / "models" / "tiny-bert.csv"
    good = pd.read_csv(path)
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[:-2]) + lines[-2][: len(lines[-2]) // 2])  # a row cut short
    assert "sha256" in table_cache.cache_problem(path)
    status = survey.run_survey_entries(load_catalog(fake_catalog), out, keys=["tiny-bert"],
                                progress=False)
    row = status.set_index("key").loc["tiny-bert"]
    assert row["status"] == "scored"
    assert "failed its check" in row["reason"] and "recomputed" in row["reason"]
    again = pd.read_csv(path)
    pd.testing.assert_frame_equal(again[["layer", "head", "symmetry", "directionality"]],
                                  good[["layer", "head", "symmetry", "directionality"]])
    assert table_cache.cache_problem(path) is None


def test_a_cached_table_without_its_checksum_file_is_not_trusted(fake_catalog, tmp_path):
    out = tmp_path / "survey"
    survey.run_survey_entries(load_catalog(fake_catalog), out, keys=["tiny-bert"], progress=False)
    table_cache.checksum_path(out / "models" / "tiny-bert.csv").unlink()
    status = survey.run_survey_entries(load_catalog(fake_catalog), out, keys=["tiny-bert"],
                                progress=False)
    assert status.set_index("key").loc["tiny-bert", "status"] == "scored"
    assert "sha256.json is missing" in status.set_index("key").loc["tiny-bert", "reason"]


def test_a_corrupt_cache_that_cannot_be_recomputed_stays_out_of_the_union(fake_catalog, tmp_path):
    out = tmp_path / "survey"
    cat = load_catalog(fake_catalog)
    survey.run_survey_entries(cat, out, keys=["tiny-bert", "tiny-llama"], progress=False)
    path = out / "models" / "tiny-llama.csv"
    path.write_text(path.read_text().replace("0.", "9.", 3))  # edited numbers
    cat.loc[cat["key"] == "tiny-llama", "local"] = str(tmp_path / "gone")
    status = survey.run_survey_entries(cat, out, keys=["tiny-bert", "tiny-llama"],
                                       progress=False, online=False)
    assert status.set_index("key").loc["tiny-llama", "status"] == "unavailable"
    assert set(pd.read_csv(out / "scores.csv")["key"]) == {"tiny-bert"}


def test_load_survey_refuses_a_table_that_does_not_match_its_checksum(fake_catalog, tmp_path):
    out = tmp_path / "survey"
    survey.run_survey_entries(load_catalog(fake_catalog), out, keys=["tiny-bert"], progress=False)
    assert len(table_cache.load_survey(out)) > 0
    scores = out / "scores.csv"
    scores.write_text(scores.read_text()[:-40])
    with pytest.raises(CompanionError, match="cannot be trusted"):
        table_cache.load_survey(out)


def test_the_committed_survey_tables_match_their_checksums():
    from companion.survey.table_cache import SURVEY_DIR

    tables = [SURVEY_DIR / "scores.csv", *sorted((SURVEY_DIR / "models").glob("*.csv"))]
    assert len(tables) >= 3
    for t in tables:
        assert table_cache.cache_problem(t) is None, t
    meta = json.loads(table_cache.checksum_path(SURVEY_DIR / "scores.csv").read_text())
    assert meta["rows"] == len(pd.read_csv(SURVEY_DIR / "scores.csv"))


def test_a_full_disk_during_a_survey_leaves_the_previous_tables(fake_catalog, tmp_path, full_disk):
    out = tmp_path / "survey"
    cat = load_catalog(fake_catalog)
    survey.run_survey_entries(cat, out, keys=["tiny-bert"], progress=False)
    before = {p.name: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    full_disk()
    with pytest.raises(CompanionError, match="disk is full"):
        survey.run_survey_entries(cat, out, keys=["tiny-bert"], progress=False, force=True)
    after = {p.name: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert after == before  # same files, same bytes, no temporary left


# ----------------------------------------------------------------------------- survey options


@pytest.mark.parametrize("option,words", [
    (["--device", "no-such-device"], ["--device", "torch device"]),
    (["--local-dir", "/no/such/folder"], ["--local-dir", "no such folder"]),
    (["--catalog", "/no/such/catalog.csv"], ["--catalog", "no such file"]),
    (["--only", "not-a-key"], ["not-a-key"]),
])
def test_bad_survey_options_are_one_line(fake_catalog, tmp_path, capsys, option, words):
    argv = ["survey", "--offline", "--out", str(tmp_path / "s"), "--quiet"]
    if option[0] != "--catalog":
        argv += ["--catalog", str(fake_catalog)]
    _one_line(argv + option, capsys, *words)


def test_a_survey_out_that_is_a_file_is_one_line(fake_catalog, tmp_path, capsys):
    (tmp_path / "f").write_text("x")
    _one_line(["survey", "--offline", "--catalog", str(fake_catalog), "--out",
               str(tmp_path / "f"), "--quiet"], capsys, "--out", "is a file")


# ---------------------------------------------------------------- score --out


def _one_line_error(argv, capsys, *words):
    return one_line_error(argv, capsys, *words)


def test_score_out_onto_the_models_own_config_is_refused_and_leaves_it(tmp_path, capsys):
    bad.tiny_llama(tmp_path / "m")
    before = (tmp_path / "m" / "config.json").read_bytes()
    _one_line_error(["score", str(tmp_path / "m"), "--out", str(tmp_path / "m" / "config.json")], capsys,
                    "would overwrite")
    assert (tmp_path / "m" / "config.json").read_bytes() == before
    assert main(["score", str(tmp_path / "m"), "--out", str(tmp_path / "scores.csv"), "--quiet"]) == 0


def test_score_out_onto_a_fifo_is_refused_and_the_fifo_stays(tmp_path, capsys):
    bad.tiny_llama(tmp_path / "m", layers=1)
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    one_line_error(["score", str(tmp_path / "m"), "--out", str(fifo), "--quiet"], capsys,
                   "not a regular file")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_write_atomic_never_replaces_a_fifo(tmp_path):
    from companion.base.outputs import write_text_atomic

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(CompanionError, match="not a regular file"):
        write_text_atomic("x", fifo)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and os.listdir(tmp_path) == ["pipe"]


def test_score_out_keeps_the_mode_of_the_file_it_replaces_and_new_files_follow_the_umask(tmp_path):
    from companion.cli import main

    bad.tiny_llama(tmp_path / "m", layers=1)
    out = tmp_path / "scores.csv"
    out.write_text("old\n")
    os.chmod(out, 0o640)
    assert main(["score", str(tmp_path / "m"), "--out", str(out), "--quiet"]) == 0
    assert stat.S_IMODE(out.stat().st_mode) == 0o640 and out.read_text() != "old\n"
    umask = os.umask(0o022)
    try:
        fresh = tmp_path / "fresh.csv"
        assert main(["score", str(tmp_path / "m"), "--out", str(fresh), "--quiet"]) == 0
        assert stat.S_IMODE(fresh.stat().st_mode) == 0o644     # not mkstemp's private 0o600
    finally:
        os.umask(umask)


def test_score_out_empty_is_refused_not_ignored(tmp_path, capsys):
    bad.tiny_llama(tmp_path, layers=1)
    one_line_error(["score", str(tmp_path), "--out", "", "--quiet"], capsys, "--out is empty")


def test_files_go_only_into_the_output_folders_own_folders_never_through_a_link(tmp_path):
    """One check (base.outputs.check_own_folder) for every tool that writes into folders below
    an output folder: a link or a file at any level below it is refused, naming that level;
    the output folder itself may be a link the user chose; nothing is created."""
    from companion.base.outputs import check_own_folder

    out, mine = tmp_path / "out", tmp_path / "mine"
    mine.mkdir()
    (mine / "keep.txt").write_text("the user's file")
    (out / "a").mkdir(parents=True)
    assert check_own_folder(out, out / "a" / "b" / "c", "notebooks") == out / "a" / "b" / "c"
    assert not (out / "a" / "b").exists()                            # checked, not made
    (out / "a" / "b").symlink_to(mine, target_is_directory=True)
    with pytest.raises(CompanionError, match=r"/out/a/b is a link: notebooks are written only into folders of"):
        check_own_folder(out, out / "a" / "b" / "c", "notebooks")
    with pytest.raises(CompanionError, match=r"/out/a/b is a link"):
        check_own_folder(out, out / "a" / "b", "notebooks")          # the folder itself, too
    (out / "a" / "b").unlink()
    (out / "a" / "b").write_text("a file where a folder goes")
    with pytest.raises(CompanionError, match=r"/out/a/b is not a folder"):
        check_own_folder(out, out / "a" / "b" / "c", "notebooks")
    with pytest.raises(CompanionError, match="is not inside"):
        check_own_folder(out, tmp_path / "elsewhere", "notebooks")
    chosen = tmp_path / "chosen"
    chosen.symlink_to(out, target_is_directory=True)                 # --out itself is a link
    assert check_own_folder(chosen, chosen / "a", "notebooks") == chosen / "a"
    assert (mine / "keep.txt").read_text() == "the user's file"
