"""Every place the package writes, moves or removes a file, tried as a careless or hostile user
would: an output name ending in a slash, a name as long as the file system allows, a NUL byte,
a ``..`` that climbs out of the output folder, a full disk (an ``OSError`` of ENOSPC, or the
error type a writer library wraps it in), Ctrl-C in the middle of a write, a read-only folder,
a hard-linked file, a second packed run into the same folder, a vendored folder copied by hand.

Each case states the right behaviour: the file is written where it was asked and nowhere else,
a previous file survives a failed write whole, no folder the tool did not make is removed, and
a refusal is one line naming the input and the fix."""

from __future__ import annotations

import errno
import hashlib
import io
import json
import os
import stat
import sys
import tarfile
import textwrap
from pathlib import Path

import pytest

import pandas  # noqa: F401 - imported once here, so that no single case pays for it
import torch  # noqa: F401

import companion.train.runner.checkpoints  # noqa: F401
from companion.base.errors import CompanionError
from deadline import within
from one_line import one_line as _one_line

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs POSIX links and FIFOs")

SECRET = "the user's own file\n"


def _enospc(*_a, **_k):
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def _writers():
    from companion.base import outputs

    def stream(p):
        with outputs.open_stream(p) as f:
            f.write("new")

    def via_output(p):
        with outputs.atomic_output(p) as tmp:
            tmp.write_text("new")

    return {"write_text_atomic": lambda p: outputs.write_text_atomic("new", p),
            "write_bytes_atomic": lambda p: outputs.write_bytes_atomic(b"new", p),
            "atomic_output": via_output, "open_stream": stream,
            "check_writable": lambda p: outputs.check_writable(p),
            "check_output": lambda p: outputs.check_output(p)}


# ============================================================ 1. the one safe write (base/outputs.py)

@pytest.mark.parametrize("writer", sorted(_writers()))
@pytest.mark.parametrize("end", ["/", "/."])
def test_a_new_output_name_ending_in_a_slash_is_refused_as_a_folder_not_written_as_a_file(tmp_path, writer, end):
    """``--out results/`` (or ``results/.``) names a folder; it was written as a file called ``results``."""
    name = str(tmp_path / "results") + end
    with pytest.raises(CompanionError) as err:
        _writers()[writer](name)
    line = _one_line(err)
    assert "results" in line and "folder" in line, line
    assert os.listdir(tmp_path) == []                       # no file, no temporary, no folder


@pytest.mark.parametrize("writer", sorted(set(_writers()) - {"check_output"}))
def test_a_name_as_long_as_the_file_system_allows_is_written_at_that_name(tmp_path, writer):
    """A 250-byte name is legal (the limit is 255); its temporary, named after it with a
    prefix and a suffix, was not, and the write was refused as 'File name too long'."""
    limit = os.pathconf(tmp_path, "PC_NAME_MAX")
    name = tmp_path / ("r" * (limit - 9) + ".csv")
    assert len(name.name) == limit - 5
    _writers()[writer](name)
    if writer != "check_writable":
        assert name.read_text() == "new"
    assert os.listdir(tmp_path) == ([name.name] if writer != "check_writable" else [])


@pytest.mark.parametrize("writer", sorted(_writers()))
def test_a_nul_byte_in_an_output_name_is_refused_in_one_line_naming_it(tmp_path, writer):
    with pytest.raises(CompanionError) as err:
        _writers()[writer](str(tmp_path / "a\0b.csv"))
    line = _one_line(err)
    assert "NUL" in line and "a\\x00b.csv" in line, line
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("inside", ["../elsewhere", "sub/../../elsewhere", "sub/../.."])
def test_check_own_folder_refuses_a_dot_dot_that_climbs_out_of_the_output_folder(tmp_path, inside):
    from companion.base.outputs import check_own_folder

    top = tmp_path / "out"
    (top / "sub").mkdir(parents=True)
    (tmp_path / "elsewhere").mkdir()
    folder = top / inside
    assert not folder.resolve().is_relative_to(top.resolve())          # it does leave top
    with pytest.raises(CompanionError) as err:
        check_own_folder(top, folder, "notebooks")
    assert ".." in _one_line(err) and str(top) in _one_line(err)


def test_check_own_folder_still_takes_a_dot_dot_that_stays_inside(tmp_path):
    """The legitimate input kept: a folder of top's own named by a path that goes down and up."""
    from companion.base.outputs import check_own_folder

    top = tmp_path / "out"
    (top / "a").mkdir(parents=True)
    assert check_own_folder(top, top / "a" / "b", "notebooks") == top / "a" / "b"


def test_a_full_disk_while_writing_leaves_the_previous_file_whole_and_no_temporary(tmp_path, monkeypatch):
    from companion.base import outputs

    path = tmp_path / "scores.csv"
    path.write_text("old,table\n1,2\n")
    monkeypatch.setattr(outputs.os, "fsync", _enospc)
    with pytest.raises(CompanionError) as err:
        outputs.write_bytes_atomic(b"new,table\n" * 1000, path)
    line = _one_line(err)
    assert "disk is full" in line and str(path) in line and "unchanged" in line, line
    assert path.read_text() == "old,table\n1,2\n" and os.listdir(tmp_path) == ["scores.csv"]


def test_ctrl_c_in_the_middle_of_a_write_leaves_the_previous_file_and_stops(tmp_path):
    from companion.base.outputs import write_atomic

    path = tmp_path / "scores.csv"
    path.write_text("old\n")

    def half_then_interrupt(f):
        f.write("new, half written")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        write_atomic(path, half_then_interrupt)
    assert path.read_text() == "old\n" and os.listdir(tmp_path) == ["scores.csv"]


def test_a_read_only_folder_is_named_before_anything_is_written(tmp_path, monkeypatch):
    """(Simulated: the tests may run as root, whom permissions do not stop.)"""
    import tempfile

    from companion.base.outputs import check_writable

    def read_only(*_a, **_k):
        raise OSError(errno.EROFS, os.strerror(errno.EROFS))

    monkeypatch.setattr(tempfile, "mkstemp", read_only)
    with pytest.raises(CompanionError) as err:
        check_writable(tmp_path / "new" / "scores.csv")
    line = _one_line(err)
    assert "permission denied" in line and "scores.csv" in line, line
    assert os.listdir(tmp_path) == []                       # no folder made for the refused output


def test_replacing_a_file_hard_linked_elsewhere_leaves_the_other_name_its_bytes(tmp_path):
    from companion.base.outputs import write_text_atomic

    (tmp_path / "mine").mkdir(), (tmp_path / "out").mkdir()
    mine, out = tmp_path / "mine" / "notes.txt", tmp_path / "out" / "scores.csv"
    mine.write_text(SECRET)
    os.link(mine, out)
    write_text_atomic("new\n", out)
    assert out.read_text() == "new\n" and mine.read_text() == SECRET
    assert os.stat(mine).st_nlink == 1


def test_an_output_with_spaces_and_unicode_is_written_at_that_name_only(tmp_path):
    from companion.base.outputs import write_csv_atomic
    import pandas as pd

    name = tmp_path / "résultats été" / "scores (v2) ü.csv"
    write_csv_atomic(pd.DataFrame({"a": [1, 2]}), name)
    assert name.read_bytes() == b"a\n1\n2\n"
    assert [p.name for p in tmp_path.rglob("*")] == ["résultats été", "scores (v2) ü.csv"]


def test_an_output_below_a_file_is_refused_naming_the_file(tmp_path):
    from companion.base.outputs import check_writable

    (tmp_path / "runs.csv").write_text(SECRET)
    with pytest.raises(CompanionError) as err:
        check_writable(tmp_path / "runs.csv" / "new" / "scores.csv")
    assert "runs.csv" in _one_line(err) and (tmp_path / "runs.csv").read_text() == SECRET


# ============================================================ 2. checkpoints and kept weights

def test_a_full_disk_reported_as_an_oserror_by_torch_save_is_one_line_and_keeps_the_old_checkpoint(tmp_path,
                                                                                                   monkeypatch):
    import torch

    from companion.base.outputs import temp_beside
    from companion.train.runner.checkpoints import _save_checkpoint

    final = tmp_path / "checkpoint.pt"
    final.write_bytes(b"the previous checkpoint")
    monkeypatch.setattr(torch, "save", _enospc)
    with pytest.raises(CompanionError) as err:
        with temp_beside(final, "checkpoint") as tmp:
            _save_checkpoint({"step": 1}, tmp, final)
    line = _one_line(err)
    assert str(final) in line and "disk is full" in line and "--resume" in line, line
    assert final.read_bytes() == b"the previous checkpoint" and os.listdir(tmp_path) == ["checkpoint.pt"]


def _model():
    import torch

    torch.manual_seed(0)
    return torch.nn.Linear(3, 2)


def test_a_full_disk_while_keeping_weights_is_one_line_and_leaves_no_weights_file(tmp_path, monkeypatch):
    """safetensors wraps the full disk in its own error type, which passed as a traceback."""
    import safetensors.torch
    from safetensors import SafetensorError

    from companion.train.runner.checkpoints import keep_weights, kept_weights_path

    def full(*_a, **_k):
        raise SafetensorError('Error while serializing: IoError(Os { code: 28, kind: StorageFull, message: '
                              '"No space left on device" })')

    monkeypatch.setattr(safetensors.torch, "save_file", full)
    path = kept_weights_path(tmp_path, 4)
    with pytest.raises(CompanionError) as err:
        keep_weights(_model(), path)
    line = _one_line(err)
    assert path.name in line and "No space left" in line, line
    assert os.listdir(tmp_path) == []


def test_kept_weights_are_read_back_as_written_by_safetensors(tmp_path):
    """The legitimate path kept: weights and digest as the model's, compared with safetensors' own reader."""
    from safetensors.torch import load_file

    from companion.train.runner.checkpoints import keep_weights, kept_weights_path

    model = _model()
    path = keep_weights(model, kept_weights_path(tmp_path, 3))
    got = load_file(str(path))
    assert set(got) == {"weight", "bias"} and all((got[k] == v).all() for k, v in model.state_dict().items())
    assert Path(f"{path}.sha256").read_text().split()[0] == hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("step", [2.5, True, -1])
def test_a_kept_weights_step_that_is_no_whole_step_is_refused_not_rounded_to_another(tmp_path, step):
    """``kept_weights_path(out, 2.5)`` named step 2's file: a reader would take step 2's weights for 2.5's."""
    from companion.train.runner.checkpoints import kept_weights_path

    with pytest.raises(CompanionError) as err:
        kept_weights_path(tmp_path, step)
    assert repr(step) in _one_line(err)


def test_a_whole_step_given_as_a_numpy_integer_names_its_own_file(tmp_path):
    import numpy as np

    from companion.train.runner.checkpoints import kept_weights_path

    assert kept_weights_path(tmp_path, np.int64(7)).name == "weights-step7.safetensors"


def test_a_checkpoint_killed_mid_install_in_a_read_only_folder_is_still_read_verified(tmp_path, monkeypatch):
    """A run copied read-only after a kill between its two renames: the pending digest matches the
    file; finishing the install (a rename) failed with a raw PermissionError."""
    import torch

    from companion.train.runner import checkpoints

    ck = tmp_path / "checkpoint.pt"
    torch.save({"model": {}, "optimizer": {}, "config": {}, "step": 3}, ck)
    checkpoints.digest_path(ck).write_text("0" * 64 + "\n")                       # the old file's digest
    checkpoints.pending_digest_path(ck).write_text(hashlib.sha256(ck.read_bytes()).hexdigest() + "\n")

    def read_only(*_a, **_k):
        raise OSError(errno.EROFS, os.strerror(errno.EROFS))

    monkeypatch.setattr(checkpoints.os, "replace", read_only)
    assert checkpoints.load_checkpoint(ck)["step"] == 3


def test_a_checkpoint_whose_pending_digest_is_another_files_is_still_refused_in_a_read_only_folder(tmp_path,
                                                                                                   monkeypatch):
    import torch

    from companion.train.runner import checkpoints

    ck = tmp_path / "checkpoint.pt"
    torch.save({"model": {}, "optimizer": {}, "config": {}, "step": 3}, ck)
    checkpoints.digest_path(ck).write_text("0" * 64 + "\n")
    checkpoints.pending_digest_path(ck).write_text("1" * 64 + "\n")
    monkeypatch.setattr(checkpoints.os, "replace", _enospc)
    with pytest.raises(CompanionError, match="does not match the SHA-256"):
        checkpoints.load_checkpoint(ck)


def test_a_full_disk_while_writing_the_pending_digest_keeps_the_old_checkpoint_pair(tmp_path, monkeypatch):
    from companion.base import outputs
    from companion.train.runner.checkpoints import _install_checkpoint, digest_path

    ck = tmp_path / "checkpoint.pt"
    ck.write_bytes(b"old checkpoint")
    digest_path(ck).write_text("old digest\n")
    tmp = tmp_path / ".checkpoint.pt.new"
    tmp.write_bytes(b"new checkpoint")
    monkeypatch.setattr(outputs.os, "fsync", _enospc)
    with pytest.raises(CompanionError, match="disk is full"):
        _install_checkpoint(tmp, ck)
    assert ck.read_bytes() == b"old checkpoint" and digest_path(ck).read_text() == "old digest\n"
    assert sorted(os.listdir(tmp_path)) == [".checkpoint.pt.new", "checkpoint.pt", "checkpoint.pt.sha256"]


# ============================================================ 3. the packer's logs and summary

FAKE_TRAIN = textwrap.dedent(f"""\
    #!{sys.executable}
    import sys, pathlib
    a = sys.argv[3:]
    out = pathlib.Path(a[a.index("--out") + 1])
    print(f"step 0/4 eval_loss 1.0 elapsed 0.00s", flush=True)
    print(f"step 1/4 eval_loss 1.0 elapsed 0.10s", flush=True)
    print(f"step 2/4 eval_loss 1.0 elapsed 0.20s", flush=True)
    sys.exit(1)
    """)


def test_a_second_pack_into_the_same_folder_keeps_the_earlier_log_and_reads_only_its_own_progress(tmp_path):
    """A pack stopped by its deadline, run again into the same --out: each run's log was
    truncated, its earlier progress (the only record of the stopped run) lost."""
    from companion.train.runner.pack import parse_jobs, run_packed

    fake = tmp_path / "fakepy"
    fake.write_text(FAKE_TRAIN)
    fake.chmod(0o755)
    out = tmp_path / "runs"
    out.mkdir()
    earlier = "step 90/100 eval_loss 2.0 elapsed 9.00s\nstopped: the deadline passed\n"
    (out / "a.log").write_text(earlier)
    summary = run_packed(parse_jobs("a --steps 4\n"), out, parallel=1, deadline_s=30, python=str(fake),
                         poll_s=0.02, echo=lambda *_: None)
    text = (out / "a.log").read_text()
    assert text.startswith(earlier) and "step 2/4" in text[len(earlier):]
    run = summary["runs"][0]
    assert (run["status"], run["steps"], run["total"]) == ("failed", 2, 4)       # this run's lines only
    assert run["seconds_per_step"] == pytest.approx(0.20 / 2)


def test_a_pack_run_name_outside_plain_ascii_is_refused_by_its_line():
    from companion.train.runner.pack import parse_jobs

    with pytest.raises(CompanionError) as err:
        parse_jobs("# runs\nrésumé --steps 2\n")
    assert "line 2" in _one_line(err) and "résumé" in _one_line(err)


# ============================================================ 4. the vendored front-end files

def _tgz(path: Path, files: dict[str, bytes]) -> bytes:
    with tarfile.open(path, "w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path.read_bytes()


def _fake_npm(monkeypatch, tgz_bytes: bytes, calls: list):
    import subprocess

    from companion.book.site import vendor

    def npm(cmd, **kw):
        calls.append(cmd)
        (Path(cmd[cmd.index("--pack-destination") + 1]) / "fake-1.0.0.tgz").write_bytes(tgz_bytes)
        return subprocess.CompletedProcess(cmd, 0, "", "")

    monkeypatch.setattr(vendor.subprocess, "run", npm)
    return vendor


def test_a_vendor_folder_copied_by_hand_without_its_check_file_is_refused_not_emptied(tmp_path, monkeypatch):
    """The refusal of a missing npm says 'copy the package's folder to <cache>/NAME-VERSION'; a
    copy without the check file was deleted whole by the next fetch."""
    calls = []
    vendor = _fake_npm(monkeypatch, tgz := _tgz(tmp_path / "src.tgz", {"package/x.js": b"x"}), calls)
    cache = tmp_path / "cache"
    mine = cache / "fake-1.0.0"
    (mine / "dist").mkdir(parents=True)
    (mine / "dist" / "x.js").write_text(SECRET)
    (mine / "my-notes.txt").write_text(SECRET)
    with pytest.raises(RuntimeError) as err:
        vendor.npm_package("fake", "1.0.0", vendor.integrity_of(tgz), "", "x.js", cache)
    line = _one_line(err)
    assert str(mine) in line and "x.js" in line, line
    assert sorted(p.relative_to(mine).as_posix() for p in mine.rglob("*")) == ["dist", "dist/x.js", "my-notes.txt"]
    assert calls == []                                       # refused before fetching anything


def test_a_vendor_folder_left_empty_is_filled_by_the_fetch(tmp_path, monkeypatch):
    """The legitimate input kept: an empty folder at the cache's name is no one's files."""
    calls = []
    vendor = _fake_npm(monkeypatch, tgz := _tgz(tmp_path / "src.tgz", {"package/x.js": b"x"}), calls)
    cache = tmp_path / "cache"
    (cache / "fake-1.0.0").mkdir(parents=True)
    dest = vendor.npm_package("fake", "1.0.0", vendor.integrity_of(tgz), "", "x.js", cache)
    assert (dest / "x.js").read_bytes() == b"x" and len(calls) == 1


def test_a_vendor_tarball_that_fails_its_integrity_leaves_the_cache_as_it_was(tmp_path, monkeypatch):
    calls = []
    vendor = _fake_npm(monkeypatch, _tgz(tmp_path / "src.tgz", {"package/x.js": b"evil"}), calls)
    cache = tmp_path / "cache"
    cache.mkdir()
    good = vendor.integrity_of(b"some other tarball")
    with pytest.raises(RuntimeError, match="expected"):
        vendor.npm_package("fake", "1.0.0", good, "", "x.js", cache)
    assert os.listdir(cache) == []


# ============================================================ 5. the zoo's assembled models, the survey's tables, the book cache

def _concat_model(tmp_path: Path, monkeypatch, payload: bytes):
    from companion.zoo.entries import Part, ZooModel

    p = tmp_path / "site" / "toy.bin.1"
    p.parent.mkdir()
    p.write_bytes(payload)
    monkeypatch.setattr("companion.zoo.packages.package_file", lambda part: Path(part.path))
    monkeypatch.setattr("companion.zoo.packages.missing_pins", lambda model: [])
    monkeypatch.setenv("COMPANION_CACHE", str(tmp_path / "cache"))
    return ZooModel(name="toy-r15", model="toy", role="encoder", modality="text", reader="gguf", licence="-",
                    assembly="concat", parts=(Part("toy-part-1", "1.0", str(p)),),
                    sha256=hashlib.sha256(payload).hexdigest(), size=len(payload), main="model.bin")


def test_a_full_disk_while_assembling_a_zoo_model_is_one_line_naming_the_cache(tmp_path, monkeypatch):
    from companion.zoo import assembly

    model = _concat_model(tmp_path, monkeypatch, os.urandom(4000))

    def copy_then_full(sources, dest, h):
        dest.write_bytes(b"half")
        _enospc()

    monkeypatch.setattr(assembly, "_copy_hashing", copy_then_full)
    with pytest.raises(CompanionError) as err:
        assembly.fetch_model(model)
    line = _one_line(err)
    assert "toy-r15" in line and "disk is full" in line and "COMPANION_CACHE" in line, line
    zoo = tmp_path / "cache" / "zoo"
    assert not [p for p in zoo.iterdir() if p.name.endswith(".partial")]   # no half-made folder left


def test_a_zoo_model_assembles_after_a_full_disk_is_freed(tmp_path, monkeypatch):
    from companion.zoo import assembly

    payload = os.urandom(4000)
    model = _concat_model(tmp_path, monkeypatch, payload)
    real = assembly._copy_hashing
    monkeypatch.setattr(assembly, "_copy_hashing", lambda *a: _enospc())
    with pytest.raises((CompanionError, OSError)):
        assembly.fetch_model(model)
    monkeypatch.setattr(assembly, "_copy_hashing", real)
    assert assembly.fetch_model(model).read_bytes() == payload


def test_a_full_disk_while_writing_a_survey_tables_checksum_never_leaves_a_table_that_is_trusted(tmp_path,
                                                                                                 monkeypatch):
    import pandas as pd

    from companion.base import outputs
    from companion.survey.table_cache import _write_atomic, cache_problem

    path = tmp_path / "m.csv"
    _write_atomic(pd.DataFrame({"key": ["m"], "v": [1.0]}), path)
    real, n = outputs.os.fsync, []

    def second_fails(fd):
        n.append(fd)
        if len(n) == 2:
            _enospc()
        return real(fd)

    monkeypatch.setattr(outputs.os, "fsync", second_fails)
    with pytest.raises(CompanionError, match="disk is full"):
        _write_atomic(pd.DataFrame({"key": ["m"], "v": [2.0]}), path)
    assert "sha256 differs" in cache_problem(path, required=("key",))


def test_a_users_empty_folder_given_as_the_book_cache_is_kept_a_folder_with_only_the_key(tmp_path, monkeypatch):
    from companion.book.site import book_cache

    monkeypatch.setattr(book_cache, "package_key", lambda root=None: {"files": 1, "sha256": "k"})
    cache = tmp_path / "my cache ü"
    cache.mkdir()
    assert book_cache.prepare(cache, tmp_path) is False
    assert os.listdir(cache) == ["companion-key.json"]
    assert json.loads((cache / "companion-key.json").read_text()) == {"files": 1, "sha256": "k"}
    assert book_cache.prepare(cache, tmp_path) is True


def test_a_fifo_at_the_book_caches_key_file_is_never_read_and_the_folder_is_left(tmp_path, monkeypatch):
    from companion.book.site import book_cache

    monkeypatch.setattr(book_cache, "package_key", lambda root=None: {"files": 1, "sha256": "k"})
    cache = tmp_path / "cache"
    cache.mkdir()
    key = cache / "companion-key.json"
    os.mkfifo(key)
    with within(10, key), pytest.raises(ValueError) as err:
        book_cache.prepare(cache, tmp_path)
    assert str(cache) in _one_line(err)
    assert os.listdir(cache) == ["companion-key.json"] and stat.S_ISFIFO(os.lstat(key).st_mode)


def test_a_fifo_given_as_the_book_cache_is_refused_at_once_and_left(tmp_path, monkeypatch):
    from companion.book.site import book_cache

    monkeypatch.setattr(book_cache, "package_key", lambda root=None: {"files": 1, "sha256": "k"})
    fifo = tmp_path / "cache"
    os.mkfifo(fifo)
    with within(10, fifo), pytest.raises(ValueError) as err:
        book_cache.prepare(fifo, tmp_path)
    assert str(fifo) in _one_line(err) and stat.S_ISFIFO(os.lstat(fifo).st_mode)


@pytest.mark.parametrize("writer", ["write_text_atomic", "atomic_output", "open_stream"])
@pytest.mark.parametrize("kind", ["link-to-nothing", "file"])
def test_an_output_below_a_link_to_nothing_or_a_file_is_refused_naming_what_is_in_the_way(tmp_path, writer, kind):
    """``--out results/x.csv`` with ``results`` a link to an unmounted disk read 'File exists'
    (open_stream: a raw FileExistsError)."""
    way = tmp_path / "results"
    if kind == "file":
        way.write_text(SECRET)
    else:
        way.symlink_to(tmp_path / "unmounted" / "results")
    with pytest.raises(CompanionError) as err:
        _writers()[writer](way / "sub" / "x.csv")
    line = _one_line(err)
    assert f"{way} is " in line and ("does not exist" if kind != "file" else "not a folder") in line, line
    assert sorted(os.listdir(tmp_path)) == ["results"] and (kind != "file" or way.read_text() == SECRET)


def test_a_fifo_at_a_vendor_folders_name_is_named_as_a_fifo_not_a_file_and_left(tmp_path, monkeypatch):
    calls = []
    vendor = _fake_npm(monkeypatch, tgz := _tgz(tmp_path / "src.tgz", {"package/x.js": b"x"}), calls)
    cache = tmp_path / "cache"
    cache.mkdir()
    os.mkfifo(cache / "fake-1.0.0")
    with within(10, cache / "fake-1.0.0"), pytest.raises(RuntimeError) as err:
        vendor.npm_package("fake", "1.0.0", vendor.integrity_of(tgz), "", "x.js", cache)
    line = _one_line(err)
    assert "FIFO" in line and "is a file" not in line, line
    assert stat.S_ISFIFO(os.lstat(cache / "fake-1.0.0").st_mode) and calls == []


def test_ctrl_c_while_saving_a_checkpoint_leaves_the_previous_one_and_no_temporary(tmp_path, monkeypatch):
    import torch

    from companion.base.outputs import temp_beside
    from companion.train.runner.checkpoints import _save_checkpoint

    final = tmp_path / "checkpoint.pt"
    final.write_bytes(b"the previous checkpoint")

    def interrupted(state, f):
        Path(f).write_bytes(b"half a checkpoint")
        raise KeyboardInterrupt

    monkeypatch.setattr(torch, "save", interrupted)
    with pytest.raises(KeyboardInterrupt):
        with temp_beside(final, "checkpoint") as tmp:
            _save_checkpoint({"step": 1}, tmp, final)
    assert final.read_bytes() == b"the previous checkpoint" and os.listdir(tmp_path) == ["checkpoint.pt"]


@pytest.mark.parametrize("kind", ["link", "fifo"])
def test_a_link_or_fifo_at_a_survey_tables_checksum_name_is_refused_before_the_table_is_replaced(tmp_path, kind):
    """The table was replaced first, then its checksum refused: a refused write left the old
    table gone and the new one without a checksum that vouches for it."""
    import pandas as pd

    from companion.survey.table_cache import _write_atomic, cache_problem, checksum_path

    path = tmp_path / "m.csv"
    _write_atomic(pd.DataFrame({"key": ["m"], "v": [1.0]}), path)
    before = path.read_bytes()
    side = checksum_path(path)
    side.unlink()
    if kind == "link":
        (tmp_path / "elsewhere.json").write_text(SECRET)
        side.symlink_to(tmp_path / "elsewhere.json")
    else:
        os.mkfifo(side)
    with within(10, side), pytest.raises(CompanionError) as err:
        _write_atomic(pd.DataFrame({"key": ["m"], "v": [2.0]}), path)
    assert side.name in _one_line(err)
    assert path.read_bytes() == before                                   # the table as it was
    assert kind == "fifo" or (tmp_path / "elsewhere.json").read_text() == SECRET
    assert cache_problem(path, required=("key",)) is not None            # and still not vouched for
