"""Every file the tools write goes through one safe write (companion.base.outputs): a symbolic
link at the name is refused, never followed out of the output folder; a FIFO there is refused
without being opened (opening it would block for ever); a folder is never replaced; the
write is atomic (a temporary file made with O_EXCL, then a rename).

Property: for every writer and every hazard at the output's name, the writer raises one
CompanionError, the hazard is left as it was, what a link points to is unchanged, and no
temporary file stays behind.  Each case runs within a deadline, so a hang fails the test."""

from __future__ import annotations

import ast
import os
import stat
from pathlib import Path

import pytest

from companion.base.errors import CompanionError
from deadline import within

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs and symbolic links")

SECRET = "the user's own file, outside --out\n"


def _hazard(kind: str, name: Path, outside: Path) -> None:
    """Put ``kind`` at ``name``; ``outside`` is a folder outside the output folder."""
    if kind == "link-to-file":
        (outside / "victim.txt").write_text(SECRET)
        name.symlink_to(outside / "victim.txt")
    elif kind == "link-to-folder":
        name.symlink_to(outside)
    elif kind == "dangling-link":
        name.symlink_to(outside / "would-be-created")
    elif kind == "fifo":
        os.mkfifo(name)
    elif kind == "folder":
        name.mkdir()
        (name / "keep.txt").write_text(SECRET)
    else:
        raise AssertionError(kind)


def _snapshot(p: Path):
    st = os.lstat(p)
    return (stat.S_IFMT(st.st_mode), os.readlink(p) if stat.S_ISLNK(st.st_mode) else None)


def _writers():
    from companion.base import outputs
    from companion.base.cache import atomic_path

    def via_atomic_output(p):
        with outputs.atomic_output(p) as tmp:
            tmp.write_text("new")

    def via_atomic_path(p):
        with atomic_path(p) as tmp:
            tmp.write_text("new")

    def via_stream(p):
        with outputs.open_stream(p) as f:
            f.write("new")

    def via_stream_append(p):
        with outputs.open_stream(p, mode="a") as f:
            f.write("new")

    return {"write_text_atomic": lambda p: outputs.write_text_atomic("new", p),
            "write_bytes_atomic": lambda p: outputs.write_bytes_atomic(b"new", p),
            "atomic_output": via_atomic_output, "cache.atomic_path": via_atomic_path,
            "open_stream": via_stream, "open_stream(a)": via_stream_append,
            "check_writable": lambda p: outputs.check_writable(p)}


HAZARDS = ["link-to-file", "link-to-folder", "dangling-link", "fifo", "folder"]


@pytest.mark.parametrize("writer", sorted(_writers()))
@pytest.mark.parametrize("kind", HAZARDS)
def test_no_writer_follows_a_link_opens_a_fifo_or_replaces_a_folder(tmp_path, writer, kind):
    out, outside = tmp_path / "out", tmp_path / "elsewhere"
    out.mkdir(), outside.mkdir()
    name = out / "result.txt"
    _hazard(kind, name, outside)
    before, outside_before = _snapshot(name), sorted(os.listdir(outside))
    with within(10, name), pytest.raises(CompanionError) as err:
        _writers()[writer](name)
    msg = str(err.value)
    assert "\n" not in msg and str(name) in msg, msg
    assert _snapshot(name) == before                              # the hazard is as it was
    assert sorted(os.listdir(outside)) == outside_before          # nothing created through a link
    if kind == "link-to-file":
        assert (outside / "victim.txt").read_text() == SECRET      # the link's target is unchanged
    assert os.listdir(out) == ["result.txt"]                       # no temporary file left


@pytest.mark.parametrize("writer", sorted(set(_writers()) - {"check_writable"}))
def test_every_writer_writes_a_plain_name_and_replaces_a_regular_file(tmp_path, writer):
    name = tmp_path / "result.txt"
    _writers()[writer](name)
    assert name.read_text() == "new" and os.listdir(tmp_path) == ["result.txt"]
    name.write_text("old contents\n")
    os.chmod(name, 0o640)
    _writers()[writer](name)
    assert name.read_text() in ("new", "old contents\nnew")        # replaced, or appended to
    assert os.listdir(tmp_path) == ["result.txt"]


def _model():
    import torch

    torch.manual_seed(0)
    return torch.nn.Linear(3, 2)


@pytest.mark.parametrize("kind", HAZARDS)
def test_keep_weights_digest_never_follows_a_link_or_blocks_on_a_fifo(tmp_path, kind):
    """The issue's case: --keep-weights wrote weights-stepN.safetensors.sha256 with a plain
    write, which followed a link out of --out, and blocked for ever on a FIFO."""
    from companion.train.runner.checkpoints import keep_weights, kept_weights_path

    out, outside = tmp_path / "run", tmp_path / "elsewhere"
    out.mkdir(), outside.mkdir()
    path = kept_weights_path(out, 5)
    digest = Path(f"{path}.sha256")
    _hazard(kind, digest, outside)
    before = _snapshot(digest)
    with within(10, digest), pytest.raises(CompanionError, match="sha256"):
        keep_weights(_model(), path)
    assert _snapshot(digest) == before
    if kind == "link-to-file":
        assert (outside / "victim.txt").read_text() == SECRET
    assert not [n for n in os.listdir(out) if n.startswith(".")]   # no temporary file left


def test_keep_weights_writes_weights_and_their_digest(tmp_path):
    from companion.base.cache import sha256_file
    from companion.train.runner.checkpoints import keep_weights, kept_weights_path

    path = keep_weights(_model(), kept_weights_path(tmp_path, 5))
    assert Path(f"{path}.sha256").read_text().split()[0] == sha256_file(path)
    assert sorted(os.listdir(tmp_path)) == ["weights-step5.safetensors", "weights-step5.safetensors.sha256"]


@pytest.mark.parametrize("target", ["checkpoint.pt", "checkpoint.pt.sha256", "checkpoint.pt.sha256.pending"])
@pytest.mark.parametrize("kind", ["link-to-file", "fifo"])
def test_installing_a_checkpoint_never_follows_a_link_or_opens_a_fifo(tmp_path, target, kind):
    from companion.train.runner.checkpoints import _install_checkpoint

    out, outside = tmp_path / "run", tmp_path / "elsewhere"
    out.mkdir(), outside.mkdir()
    tmp = out / ".checkpoint.pt.new"
    tmp.write_bytes(b"checkpoint bytes")
    _hazard(kind, out / target, outside)
    before = _snapshot(out / target)
    with within(10, out / target), pytest.raises(CompanionError):
        _install_checkpoint(tmp, out / "checkpoint.pt")
    assert _snapshot(out / target) == before
    if kind == "link-to-file":
        assert (outside / "victim.txt").read_text() == SECRET


def test_train_refuses_a_fifo_or_link_at_a_kept_weights_digest_before_training(tmp_path, capsys):
    from one_line import one_line_error

    micro = ["--size", "micro", "--steps", "2", "--eval-every", "1", "--warmup", "1",
             "--corpus", "python-docs", "--top-k", "64"]
    for kind in ("fifo", "link-to-file"):
        out, outside = tmp_path / kind, tmp_path / f"{kind}-elsewhere"
        out.mkdir(), outside.mkdir()
        digest = out / "weights-step2.safetensors.sha256"
        _hazard(kind, digest, outside)
        with within(60, digest):
            line = one_line_error(["train", *micro, "--keep-weights", "2", "--out", str(out)], capsys,
                                  "weights-step2.safetensors.sha256", within_s=60)
        assert "FIFO" in line or "symbolic link" in line, line
        assert not (out / "history.csv").exists() and not (out / "weights-step2.safetensors").exists()


def test_pack_refuses_a_fifo_log_before_starting_any_run(tmp_path):
    from companion.train.runner.pack import parse_jobs, run_packed

    out = tmp_path / "runs"
    out.mkdir()
    os.mkfifo(out / "a.log")
    jobs = parse_jobs("a --steps 1\nb --steps 1\n")
    with within(10, out / "a.log"), pytest.raises(CompanionError, match="a.log"):
        run_packed(jobs, out, parallel=2, deadline_s=30, python="/bin/false", poll_s=0.01)
    assert all(j.status == "queued" for j in jobs)
    assert stat.S_ISFIFO(os.lstat(out / "a.log").st_mode)


# The family, not the instance: the modules that write into a user's output folder hold no
# plain write (Path.write_text / write_bytes, open(..., "w"/"a"), os.replace of a fixed name).
WRITERS = ["train/runner/loop.py", "train/runner/checkpoints.py", "train/runner/provenance.py", "train/runner/pack.py", "train/cli.py", "core/null.py",
           "book/checks/outcome_snapshot.py", "train/text/english_mix_card.py", "book/site/changes.py", "base/cache.py",
           "book/editions/slides.py"]


def _plain_writes(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        if isinstance(f, ast.Attribute) and f.attr in ("write_text", "write_bytes"):
            # a write to the temporary path that atomic_output/atomic_path yields is the safe write
            if not (isinstance(f.value, ast.Name) and f.value.id == "tmp"):
                found.append(f"{path.name}:{node.lineno} .{f.attr}()")
        if isinstance(f, ast.Name) and f.id == "open" and len(node.args) >= 2:
            m = node.args[1]
            if isinstance(m, ast.Constant) and isinstance(m.value, str) and set(m.value) & set("wax+"):
                found.append(f"{path.name}:{node.lineno} open(..., {m.value!r})")
    return found


def test_modules_that_write_under_out_use_only_the_safe_write():
    src = Path(__file__).resolve().parents[1] / "src" / "companion"
    found = [w for rel in WRITERS for w in _plain_writes(src / rel)]
    assert not found, "plain writes (use companion.base.outputs): " + ", ".join(found)


def test_the_plain_write_scan_finds_a_plain_write(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text('from pathlib import Path\nPath("x.sha256").write_text("d")\nopen("y", "w")\n')
    assert len(_plain_writes(probe)) == 2
