"""``companion train`` and what it leaves: its corpus (a FIFO, text that is not UTF-8, a
cached archive that is not a file), its checkpoints (not one this package wrote, a FIFO or
folder, a digest that is not text, a full disk while saving), resuming on other data,
``--overwrite`` over a user's folder, a run whose held-out loss is NaN at a gate, and the run
catalogue's provenance and scripts list: each refused in one line naming the input, nothing
the user made changed."""

from __future__ import annotations

import os

import numpy as np
import pytest
import torch

from deadline import within
from one_line import one_line_error
from companion.base.errors import CompanionError


# ---------------------------------------------------------------- the corpus


MICRO = ["--size", "micro", "--steps", "2", "--eval-every", "1", "--warmup", "1", "--top-k", "64"]


def test_a_train_corpus_that_is_a_fifo_is_refused_before_any_work(tmp_path, capsys):
    os.mkfifo(tmp_path / "corpus.txt")
    with within(20, tmp_path / "corpus.txt"):
        one_line_error(["train", *MICRO, "--corpus", str(tmp_path / "corpus.txt"), "--out", str(tmp_path / "run")],
                       capsys, "not a regular file")
    assert not (tmp_path / "run").exists()


def test_a_train_corpus_that_is_not_utf8_names_the_file_and_the_byte(tmp_path, capsys):
    corpus = tmp_path / "corpus.txt"
    corpus.write_bytes(b"\xff\xfe" + b"the cat sat on the mat\n\n" * 200)
    one_line_error(["train", *MICRO, "--corpus", str(corpus), "--out", str(tmp_path / "run")], capsys,
                   "corpus.txt is not UTF-8 text", "0xff")
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



# ---------------------------------------------------------------- checkpoints and resuming


@pytest.mark.parametrize("payload", [[1, 2, 3], {"model": {}}])
def test_a_checkpoint_that_is_not_one_is_refused_in_one_line(tmp_path, payload):
    from companion.train.runner.checkpoints import load_checkpoint

    torch.save(payload, tmp_path / "checkpoint.pt")
    with pytest.raises(CompanionError, match="not a checkpoint this package wrote"):
        load_checkpoint(tmp_path / "checkpoint.pt", verify=False)


@pytest.mark.parametrize("kind", ["fifo", "folder"])
def test_a_checkpoint_that_is_a_fifo_or_a_folder_is_refused_at_once(tmp_path, kind):
    from companion.train.runner.checkpoints import load_checkpoint

    path = tmp_path / "checkpoint.pt"
    os.mkfifo(path) if kind == "fifo" else path.mkdir()
    with within(20, path), pytest.raises(CompanionError, match="not a regular file"):
        load_checkpoint(path)


def test_a_checkpoint_digest_that_is_not_text_is_a_mismatch_not_a_traceback(tmp_path):
    from companion.train.runner.checkpoints import digest_path, load_checkpoint

    path = tmp_path / "checkpoint.pt"
    torch.save({"model": {}, "optimizer": {}, "config": {}, "step": 1}, path)
    digest_path(path).write_bytes(b"\xff\xfe\x00 not a digest")
    with pytest.raises(CompanionError, match="does not match the SHA-256"):
        load_checkpoint(path)


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



# ---------------------------------------------------------------- the run folder


def test_overwrite_refuses_a_folder_named_like_a_run_file_and_keeps_it(tmp_path, capsys):
    out = tmp_path / "run"
    (out / "history.csv").mkdir(parents=True)
    (out / "history.csv" / "mine.txt").write_text("keep")
    one_line_error(["train", *MICRO, "--corpus", "python-docs", "--out", str(out), "--overwrite"], capsys,
                   "history.csv is a folder")
    assert (out / "history.csv" / "mine.txt").read_text() == "keep"



# ---------------------------------------------------------------- runs that would pass a gate wrongly


def test_a_run_whose_final_held_out_loss_is_nan_fails_the_context_gate(monkeypatch):
    """The seed mean skipped the NaN seed, so a body with a diverged run passed its gate and
    the claim could read 'holds'."""
    import numpy as np
    import pandas as pd

    import companion.train.studies.evidence as ev

    monkeypatch.setattr(ev, "_unigram_reference", lambda *a, **k: 8.0)
    monkeypatch.setattr(ev, "_shape", lambda run: {"corpus": "c", "seq_len": 8, "top_k": None, "init_from": None})
    rows = [{"run": f"r{s}", "mode": "encoder", "init": "standard", "seed": s, "quantity": "eval_loss",
             "step": 100, "layer": -1, "head": -1, "value": v} for s, v in ((1, 4.0), (2, np.nan), (3, 4.1))]
    gate = ev.loss_gate(pd.DataFrame(rows), [("encoder", "standard")], 0.69)
    assert not gate["passes"] and np.isnan(gate["arms"][("encoder", "standard")]["loss"])
    finite = pd.DataFrame(rows).assign(value=[4.0, 4.05, 4.1])
    assert ev.loss_gate(finite, [("encoder", "standard")], 0.69)["passes"]



# ---------------------------------------------------------------- the run catalogue


def _catalogue(tmp_path, provenance: str | None):
    from test_train_run_catalogue import make_run, write_scripts

    write_scripts(tmp_path, "regime-*")
    make_run(tmp_path, "regime-a-s0", 0, 100)
    d = tmp_path / "regime-b-s1"
    d.mkdir()
    (d / "history.csv").write_text("step,quantity,layer,head,value\n")
    if provenance is not None:
        (d / "provenance.json").write_text(provenance)
    return tmp_path


@pytest.mark.parametrize("provenance, words", [
    (None, "provenance.json is missing"),                                    # finished, no provenance
    ("{not json", "not a readable JSON record"),
    ("[" * 5000 + "]" * 5000, "not a readable JSON record"),                # nested too deep
    ('["a list"]', "no 'config' object"),
    ('{"config": "text"}', "no 'config' object"),
    ('{"config": {"steps": "many", "seed": 1}}', "steps 'many'"),
    ('{"config": {"steps": 100, "seed": 1.5}}', "seed 1.5"),
])
def test_a_finished_run_without_a_readable_provenance_is_refused_naming_it(tmp_path, provenance, words):
    from companion.base.errors import CompanionError
    from companion.train.runner.runs import run_catalogue

    with pytest.raises(CompanionError, match=words) as err:
        run_catalogue(_catalogue(tmp_path, provenance))
    assert "regime-b-s1" in str(err.value) and "\n" not in str(err.value)


def test_hardware_given_as_text_is_read_as_the_device(tmp_path):
    from companion.train.runner.runs import run_catalogue

    root = _catalogue(tmp_path, '{"config": {"steps": 100, "seed": 1}, "hardware": "NVIDIA H100 (80 GB)",'
                                ' "started": "2026-11-20T00:00:00Z"}')
    row = run_catalogue(root).iloc[0]
    assert row["n"] == 2 and row["seeds"] == "0-1" and row["devices"] == "NVIDIA H100, cpu"


@pytest.mark.parametrize("scripts, words", [(None, "is missing"), ("pattern,what\nregime-*,x\n", "no column script, plan"),
                                            (b"\xff\xfe\x00bad", "cannot be read")])
def test_a_missing_or_foreign_scripts_list_is_refused_naming_it(tmp_path, scripts, words):
    from companion.base.errors import CompanionError
    from companion.train.runner.runs import run_catalogue

    root = _catalogue(tmp_path, '{"config": {"steps": 100, "seed": 1}}')
    if scripts is None:
        (root / "scripts.csv").unlink()
    elif isinstance(scripts, bytes):
        (root / "scripts.csv").write_bytes(scripts)
    else:
        (root / "scripts.csv").write_text(scripts)
    with pytest.raises(CompanionError, match=words) as err:
        run_catalogue(root)
    assert "scripts.csv" in str(err.value)
