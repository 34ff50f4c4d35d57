"""Hardening round 10 (issue 74): inside training.  Earlier rounds reached `companion train`
only at its output (history.csv, provenance, --overwrite, landing runs); this one goes into
its options, its resume, its held-out evaluation and its corpus tokenisation.

Each case states the right behaviour: a one-line refusal that names the input (before any
run folder is made or many GB are allocated), or the right value computed apart from the
code under test.  Every run is a few steps of the ``micro`` model on a tiny stream or on the
bundled python-docs corpus; files go to ``tmp_path``, token caches of local corpora to a
``COMPANION_CACHE`` there."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import torch
import torch.nn.functional as F

from companion.base.cache import sha256_file
from companion.base.errors import CompanionError
from companion.train.models.objectives import MaskingSpec
from companion.train.runner.config import TrainConfig
from companion.train.runner.loop import train
from companion.train.text.data import TokenData
from one_line import one_line, one_line_error

torch.set_num_threads(1)

VOCAB = 40
MICRO = ["train", "--size", "micro", "--steps", "2", "--eval-every", "1", "--warmup", "1",
         "--top-k", "64"]


def _stream(seed=0, n=4600):
    g = torch.Generator().manual_seed(seed)
    phrase = torch.randint(5, VOCAB, (23,), generator=g)
    stream = phrase.repeat(n // 23 + 1)[:n]
    noise = torch.rand(stream.shape, generator=g) < 0.05
    stream[noise] = torch.randint(5, VOCAB, (int(noise.sum()),), generator=g)
    return stream


def _data(seed=0, eval_blocks=20, seq=16):
    blocks = _stream(seed)[: (4600 // 16) * 16].view(-1, 16)
    ev = blocks[-eval_blocks:] if eval_blocks else blocks[:0]
    return TokenData(train=blocks[:-20], eval=ev.reshape(-1, seq) if eval_blocks else ev,
                     vocab_size=VOCAB, masking=MaskingSpec(mask_id=4, vocab_size=VOCAB, first_regular_id=5))


def _cfg(**kw):
    base = dict(size="micro", steps=4, batch_size=8, lr=3e-3, warmup=1, eval_every=2, eval_blocks=16,
                device="cpu")
    base.update(kw)
    return TrainConfig(**base)


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """Local corpora's token caches in tmp_path, never in the user's cache."""
    monkeypatch.setenv("COMPANION_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


# ============================================================ 1. options: refused in one line, before --out is made

@pytest.mark.parametrize("extra, words", [
    (["--steps", "0"], ["steps must be >= 1", "0"]),
    (["--steps", "-3"], ["steps must be >= 1", "-3"]),
    (["--lr", "nan"], ["lr must be a finite number", "nan"]),
    (["--lr", "inf"], ["lr must be a finite number", "inf"]),
    (["--lr=-0.001"], ["lr must be a finite number", "-0.001"]),
    (["--batch-size", "0"], ["batch_size must be >= 1", "0"]),
    (["--seq-len", "0"], ["seq_len must be >= 1", "0"]),
    (["--eval-every", "5"], ["--eval-every 5 is longer than the run"]),
    (["--device", "banana"], ["--device 'banana' is not a device"]),
    (["--device", "meta"], ["--device meta", "cpu or cuda"]),
    # torch would wrap -1 to 2**64 - 1 (which it refuses as an 'Overflow when unpacking long long')
    (["--seed", "-1"], ["--seed", "-1", "0", "4294967295"]),
    (["--seed", str(2 ** 64)], ["--seed", str(2 ** 64), "4294967295"]),
    (["--seed", str(2 ** 63 - 1)], ["--seed", "4294967295"]),   # seed + 1 overflowed torch's int64
    (["--checkpoint-every", "-2"], ["checkpoint_every must be >= 0", "-2"]),   # was: a checkpoint every 2 steps
    # the learning rate reaches 0 at step 1 of 2: the last step would train nothing, yet be logged
    (["--decay-steps", "1"], ["decay_steps 1 is shorter than the run", "steps 2"]),
])
def test_a_bad_option_is_refused_in_one_line_before_the_run_folder_is_made(tmp_path, capsys, extra, words):
    out = tmp_path / "run"
    one_line_error([*MICRO, "--corpus", "python-docs", *extra, "--out", str(out)], capsys, *words, within_s=60)
    assert not out.exists()


def test_a_batch_larger_than_the_corpus_is_refused_naming_the_batch(tmp_path, capsys):
    out = tmp_path / "run"
    one_line_error([*MICRO, "--corpus", "python-docs", "--batch-size", str(10 ** 9), "--out", str(out)],
                   capsys, "1000000000", "--batch-size", within_s=60)
    assert not (out / "history.csv").exists()


_LIMITED = """
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, (6 << 30, 6 << 30))   # a hang or a kill becomes a MemoryError
import torch
torch.set_num_threads(1)
from companion.cli import main
raise SystemExit(main(sys.argv[1:]))
"""


@pytest.mark.parametrize("extra, flag", [
    (["--width", str(2 ** 20)], "--width"),            # 12 * width**2 per layer: about 50 TB of parameters
    (["--layers", str(10 ** 6)], "--layers"),          # a million layers: about 100 GB
    (["--heads", "2", "--width", "65536"], "--width"),
])
def test_a_model_too_large_for_the_machine_is_refused_before_it_is_allocated(tmp_path, extra, flag):
    """(12 w^2 + 13 w) L + (V + P) w parameters, 8 bytes each at least (weights and gradients):
    far beyond this machine's memory, so refused at once, in one line, before --out is made."""
    out = tmp_path / "run"
    r = subprocess.run([sys.executable, "-c", _LIMITED, *MICRO, "--corpus", "python-docs", *extra,
                        "--out", str(out)], capture_output=True, text=True, timeout=120)
    lines = [ln for ln in r.stderr.splitlines() if ln.strip() and not ln.startswith("[")]
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr[-2000:]
    assert len(lines) == 1 and "memory" in lines[0] and flag in lines[0], r.stderr[-2000:]
    assert not out.exists()


@pytest.mark.parametrize("field, value", [("steps", 2.5), ("batch_size", True), ("eval_every", "2")])
def test_a_count_that_is_no_whole_number_is_refused_by_the_config(field, value):
    with pytest.raises(ValueError) as err:
        _cfg(**{field: value})
    assert field in one_line(err) and repr(value) in str(err.value)


def test_a_device_string_torch_cannot_parse_is_refused_by_the_config():
    with pytest.raises(ValueError) as err:
        _cfg(device="banana")
    assert "banana" in one_line(err)
    with pytest.raises(ValueError, match="cpu or cuda"):
        _cfg(device="meta")


# ============================================================ 2. --out: a file, a link, the repository's data/

def test_out_naming_a_file_is_refused_and_the_file_kept(tmp_path, capsys):
    f = tmp_path / "notes.txt"
    f.write_text("the user's own notes\n")
    one_line_error([*MICRO, "--corpus", "python-docs", "--out", str(f)], capsys, str(f), within_s=60)
    assert f.read_text() == "the user's own notes\n"


def test_out_through_a_link_to_a_finished_run_never_replaces_it(tmp_path, capsys):
    real = tmp_path / "real"
    real.mkdir()
    (real / "history.csv").write_text("step,quantity,layer,head,value\n0,eval_loss,-1,-1,1\n")
    (tmp_path / "link").symlink_to(real, target_is_directory=True)
    one_line_error([*MICRO, "--corpus", "python-docs", "--out", str(tmp_path / "link")], capsys,
                   "already holds a finished run", within_s=60)
    assert (real / "history.csv").read_text() == "step,quantity,layer,head,value\n0,eval_loss,-1,-1,1\n"


@pytest.mark.parametrize("where", ["data", "data/runs", "."])
def test_out_in_the_repositorys_registry_folders_is_refused(tmp_path, capsys, monkeypatch, where):
    """The repository's data/ (registries: chapters.yaml, limits.yaml, ...) and data/runs/ (the
    catalogue of run folders) are not a run's own folder; data/runs/NAME is."""
    import companion.base.paths as paths

    root = tmp_path / "repo"
    (root / "data" / "runs").mkdir(parents=True)
    (root / "data" / "chapters.yaml").write_text("chapters: []\n")
    (root / "pyproject.toml").write_text("[project]\nname = 'companion'\n")
    monkeypatch.setattr(paths, "ROOT", root)
    monkeypatch.setattr(paths, "DATA_DIR", root / "data")
    target = root / where
    one_line_error([*MICRO, "--corpus", "python-docs", "--out", str(target)], capsys, "--out", "data", within_s=60)
    assert sorted(p.name for p in target.iterdir()) == sorted(
        {"data": ["chapters.yaml", "runs"], "data/runs": [], ".": ["data", "pyproject.toml"]}[where])


def test_out_as_a_run_folder_under_data_runs_is_still_a_run_folder(tmp_path, monkeypatch):
    import companion.base.paths as paths
    from companion.cli import main

    root = tmp_path / "repo"
    (root / "data" / "runs").mkdir(parents=True)
    (root / "pyproject.toml").write_text("[project]\nname = 'companion'\n")
    monkeypatch.setattr(paths, "ROOT", root)
    monkeypatch.setattr(paths, "DATA_DIR", root / "data")
    out = root / "data" / "runs" / "micro-s0"
    assert main([*MICRO, "--corpus", "python-docs", "--out", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir() if not p.name.startswith(".")) == ["history.csv", "provenance.json"]


# ============================================================ 3. resume: only the same run continues

def _stopped(tmp_path, **kw):
    out = tmp_path / "run"
    train(_cfg(**kw), data=_data(), out_dir=out, stop_at=2)
    return out


@pytest.mark.parametrize("change, word", [({"seed": 1}, "seed"), ({"corpus": "kjv"}, "corpus"),
                                          ({"lr": 1e-2}, "lr")])
def test_resume_under_another_seed_corpus_or_setting_is_refused(tmp_path, change, word):
    out = _stopped(tmp_path)
    with pytest.raises(CompanionError) as err:
        train(_cfg(**change), data=_data(), out_dir=out, resume=True)
    assert "different configuration" in one_line(err) and word in str(err.value)


def test_resume_on_other_tokens_of_the_same_shape_is_refused(tmp_path):
    """In-memory blocks carry no corpus hash: the checkpoint must record their own content."""
    out = _stopped(tmp_path)
    other = _data(seed=5)
    assert other.train.shape == _data().train.shape and not torch.equal(other.train, _data().train)
    with pytest.raises(CompanionError) as err:
        train(_cfg(), data=other, out_dir=out, resume=True)
    assert "other data" in one_line(err)


def test_a_truncated_checkpoint_is_refused(tmp_path):
    out = _stopped(tmp_path)
    ck = out / "checkpoint.pt"
    ck.write_bytes(ck.read_bytes()[: ck.stat().st_size // 2])
    with pytest.raises(CompanionError) as err:
        train(_cfg(), data=_data(), out_dir=out, resume=True)
    assert "SHA-256" in one_line(err)


def _tampered(tmp_path, edit):
    """A checkpoint edited and its digest written again: consistent on disk, wrong inside."""
    out = _stopped(tmp_path)
    ck = torch.load(out / "checkpoint.pt", weights_only=True)
    edit(ck)
    torch.save(ck, out / "checkpoint.pt")
    (out / "checkpoint.pt.sha256").write_text(sha256_file(out / "checkpoint.pt") + "\n")
    return out


@pytest.mark.parametrize("name, edit, word", [
    ("a step past the run's end", lambda ck: ck.update(step=9), "step"),
    ("a negative step", lambda ck: ck.update(step=-3), "step"),
    ("a step its history does not reach", lambda ck: ck.update(step=1), "step"),
    ("no generator states", lambda ck: ck.pop("rng"), "rng"),
    ("no history", lambda ck: ck.pop("history"), "history"),
    ("weights of another shape", lambda ck: ck["model"].update(
        {"bert.embeddings.word_embeddings.weight": torch.zeros(7, 32)}), "word_embeddings"),
    ("a weight missing", lambda ck: ck["model"].pop("bert.embeddings.word_embeddings.weight"), "word_embeddings"),
    ("a configuration that is no table", lambda ck: ck.update(config=[1, 2]), "config"),
])
def test_a_checkpoint_whose_contents_are_not_this_runs_is_refused_in_one_line(tmp_path, name, edit, word):
    out = _tampered(tmp_path, edit)
    with pytest.raises(CompanionError) as err:
        train(_cfg(), data=_data(), out_dir=out, resume=True)
    assert word in one_line(err) and "checkpoint" in str(err.value)
    assert not (out / "history.csv").exists()


def test_cli_resume_after_the_corpus_file_changed_is_refused(tmp_path, capsys, cache):
    para = "the cat sat on the mat and then it went to sleep near the warm fire for a while"
    corpus = tmp_path / "c.txt"
    corpus.write_text("\n\n".join(f"{para} number {i} " * 3 for i in range(60)))
    out = tmp_path / "run"
    args = [*MICRO, "--steps", "4", "--eval-every", "2", "--checkpoint-every", "2", "--keep-checkpoint",
            "--corpus", str(corpus), "--out", str(out)]
    assert __import__("companion.cli", fromlist=["main"]).main(args) == 0
    (out / "history.csv").unlink()     # the run as if interrupted after its checkpoint
    corpus.write_text(corpus.read_text().replace("cat", "dog"))
    one_line_error([*args, "--resume"], capsys, "other data", within_s=60)


# ============================================================ 4. the held-out set

def test_no_held_out_block_is_refused_before_training(tmp_path):
    with pytest.raises(CompanionError) as err:
        train(_cfg(), data=_data(eval_blocks=0))
    assert "held-out" in one_line(err) and "0" in str(err.value)


def test_one_held_out_block_gives_its_own_loss_and_no_standard_error():
    """Decoder: the held-out loss of one block is the mean next-token cross-entropy over its
    15 targets, computed here from the model's logits; its standard error needs 2 blocks."""
    data = _data(eval_blocks=1)
    hist, model = train(_cfg(mode="decoder", eval_blocks=None), data=data, return_model=True)
    model.eval()
    ids = data.eval[:1]
    with torch.no_grad():
        logits = model(input_ids=ids[:, :-1]).logits
    want = float(F.cross_entropy(logits[0].double(), ids[0, 1:]))
    last = hist[(hist["step"] == 4) & (hist["layer"] == -1)].set_index("quantity")["value"]
    assert last["eval_loss"] == pytest.approx(want, rel=1e-5)
    assert pd.isna(last["eval_loss_se"])


def test_held_out_blocks_of_another_length_than_the_models_are_refused():
    data = _data(eval_blocks=20, seq=32)     # the same tokens, blocked by 32: the model reads 16
    assert data.eval.shape[1] == 32
    with pytest.raises(CompanionError) as err:
        train(_cfg(), data=data)
    assert "32" in one_line(err) and "16" in str(err.value)


def test_token_ids_outside_the_vocabulary_are_refused_before_training():
    data = _data()
    data.eval[0, 3] = VOCAB + 7
    with pytest.raises(CompanionError) as err:
        train(_cfg(), data=data)
    assert str(VOCAB + 7) in one_line(err) and str(VOCAB) in str(err.value)


def test_asking_for_more_held_out_blocks_than_there_are_reads_them_all_and_no_further():
    """The eval slice stops at the split's end: 10**6 blocks asked is the whole split."""
    from companion.train.runner.evaluation import eval_loss
    from companion.train.text.tokens import TokenBlocks

    stream = _stream(0, n=16 * 5 + 7).numpy()     # 5 whole blocks and 7 tokens that are none
    blocks = TokenBlocks(stream, 16)
    assert blocks[: 10 ** 6].shape == (5, 16)
    with pytest.raises(IndexError):
        blocks[5]
    data = _data()
    data = TokenData(train=data.train, eval=blocks, vocab_size=VOCAB, masking=data.masking)
    _, model = train(_cfg(mode="decoder", steps=1, eval_every=1), data=data, return_model=True)
    from companion.train.models.objectives import SelectiveLM

    net = SelectiveLM(model)
    a = eval_loss(net, data, _cfg(mode="decoder", steps=1, eval_every=1, eval_blocks=10 ** 6), torch.device("cpu"))
    b = eval_loss(net, data, _cfg(mode="decoder", steps=1, eval_every=1, eval_blocks=None), torch.device("cpu"))
    assert a == b and a[2] == 5   # next-token prediction: every block holds targets


# ============================================================ 5. corpus files: text that is odd, empty or no text

PARA = "the cat sat on the mat and then it went to sleep near the warm fire for a while"
GOOD = "\n\n".join(f"{PARA} number {i} " * 2 for i in range(40))


@pytest.mark.parametrize("name, content", [("blank.txt", b"   \n\n \t \n\n\n  "), ("empty.txt", b""),
                                           ("empty.jsonl", b"")])
def test_a_corpus_of_no_documents_is_refused_naming_the_file(tmp_path, capsys, cache, name, content):
    f = tmp_path / name
    f.write_bytes(content)
    one_line_error([*MICRO, "--corpus", str(f), "--out", str(tmp_path / "run")], capsys, str(f), within_s=60)


def test_invalid_utf8_is_named_at_its_true_offset_across_the_read_blocks(tmp_path, capsys, cache):
    head = b"a" * ((1 << 20) - 1) + "\u00e9".encode() + b"bb"     # the e-acute straddles the 1 MiB read
    f = tmp_path / "c.txt"
    f.write_bytes(head + b"\xffcc")
    line = one_line_error([*MICRO, "--corpus", str(f), "--out", str(tmp_path / "run")], capsys,
                          "0xff", within_s=60)
    assert f"offset {len(head):,})" in line, line


def test_a_lone_surrogate_in_a_jsonl_corpus_is_refused_naming_the_file(tmp_path, capsys, cache):
    """'\\ud800' is valid JSON but no text (UTF-8 cannot hold it): the datasets loader failed
    with a DatasetGenerationError traceback."""
    f = tmp_path / "c.jsonl"
    f.write_text("".join('{"text": "the cat \\ud800 sat %d"}\n' % i for i in range(30)))
    assert "\\ud800" in f.read_text()
    one_line_error([*MICRO, "--corpus", str(f), "--out", str(tmp_path / "run")], capsys, str(f), within_s=60)
    assert not (tmp_path / "run" / "history.csv").exists()


def test_invalid_utf8_in_a_jsonl_corpus_is_refused_naming_the_file(tmp_path, capsys, cache):
    f = tmp_path / "c.jsonl"
    f.write_bytes(b'{"text": "a \xff b"}\n' * 20)
    one_line_error([*MICRO, "--corpus", str(f), "--out", str(tmp_path / "run")], capsys, str(f), "UTF-8",
                   within_s=60)


def _documents(path):
    from companion.train.text.data import load_texts

    return load_texts(str(path))


@pytest.mark.parametrize("name, raw", [
    ("bom", b"\xef\xbb\xbf" + GOOD.encode()),
    ("crlf", GOOD.replace("\n", "\r\n").encode()),
])
def test_a_bom_or_windows_line_ends_give_the_same_documents_and_tokens(tmp_path, cache, name, raw):
    from companion.train.text.data import load_tokenizer
    from companion.train.text.tokens import in_memory_streams

    plain, odd = tmp_path / "plain.txt", tmp_path / f"{name}.txt"
    plain.write_bytes(GOOD.encode())
    odd.write_bytes(raw)
    want = [p for p in GOOD.split("\n\n")]
    assert _documents(plain) == want
    tok = load_tokenizer()
    a, b = in_memory_streams(_documents(plain), tok), in_memory_streams(_documents(odd), tok)
    assert len(_documents(odd)) == 40
    assert a.train.tolist() == b.train.tolist() and a.eval.tolist() == b.eval.tolist()


def test_a_line_separator_inside_a_paragraph_does_not_split_the_document(tmp_path, cache):
    """Documents are separated by blank lines only; U+2028 (which str.splitlines would split
    on) stays inside its paragraph."""
    text = "\n\n".join(f"{PARA}\u2028line two of {i}" for i in range(12))
    f = tmp_path / "c.txt"
    f.write_text(text, encoding="utf-8")
    docs = _documents(f)
    assert len(docs) == 12 and all("\u2028" in d for d in docs)


def test_empty_cells_and_nulls_are_no_documents_not_the_word_none(tmp_path, cache):
    """datasets reads an empty CSV cell and a JSON null as None; str(None) made each a
    document 'None'."""
    csv = tmp_path / "c.csv"
    csv.write_text('text,label\n"a cat sat",1\n,2\n"",3\n"  ",4\n"the end",5\n')
    assert _documents(csv) == ["a cat sat", "the end"]
    js = tmp_path / "c.jsonl"
    js.write_text("\n".join(json.dumps({"text": t}) for t in ["a b", None, "c d", ""]) + "\n")
    assert _documents(js) == ["a b", "c d"]


def test_a_record_whose_text_is_a_list_is_refused_naming_it(tmp_path, cache):
    js = tmp_path / "c.jsonl"
    js.write_text("\n".join(json.dumps({"text": t}) for t in [["a"], ["x", "y"]]) + "\n")
    with pytest.raises(CompanionError) as err:
        _documents(js)
    assert "record 1" in one_line(err) and str(js) in str(err.value) and "list" in str(err.value)


def test_a_nul_byte_in_a_paragraph_is_dropped_like_any_control_character(tmp_path, cache):
    """NUL is valid UTF-8; BERT's normaliser removes control characters, so 'cat<NUL> sat'
    gives the ids of 'cat sat' (never [UNK], never a separator)."""
    from companion.train.text.data import load_tokenizer

    f = tmp_path / "c.txt"
    f.write_bytes(GOOD.replace("cat sat", "cat\x00 sat").encode())
    docs = _documents(f)
    assert len(docs) == 40 and all("\x00" in d for d in docs)
    tok = load_tokenizer()
    ids = tok(docs[0], add_special_tokens=False)["input_ids"]
    assert ids == tok(docs[0].replace("\x00", ""), add_special_tokens=False)["input_ids"]
    assert tok.unk_token_id not in ids


def test_the_text_of_a_special_token_in_a_corpus_is_never_the_special_token(cache):
    from companion.train.text.data import load_tokenizer
    from companion.train.text.tokens import in_memory_streams

    tok = load_tokenizer()
    docs = [f"{PARA} see [SEP] and [MASK] in document {i}" for i in range(10)]
    s = in_memory_streams(docs, tok)
    assert tok.backend_tokenizer.encode_special_tokens is False    # the tokenizer is left as it was found
    ids = list(s.train) + list(s.eval)
    assert ids.count(tok.sep_token_id) == len(docs)     # one separator per document, its own
    assert tok.mask_token_id not in ids
    pieces = tok.convert_tokens_to_ids(["[", "sep", "]", "and", "[", "mask", "]"])
    first = list(s.train[: s.train.tolist().index(tok.sep_token_id)])
    assert any(first[i: i + len(pieces)] == pieces for i in range(len(first)))   # the text, as text


@pytest.mark.parametrize("kind", ["folder", "file"])
def test_a_corpus_name_is_the_named_corpus_whatever_the_working_folder_holds(tmp_path, monkeypatch, cache, kind):
    """--corpus python-docs with a folder or a file 'python-docs' where the command runs: the
    bundled corpus, not 'corpus file python-docs is a folder' / 'expected a .txt file'."""
    from companion.train.text.corpora import corpus_documents

    want = corpus_documents("python-docs", fetch=False)
    monkeypatch.chdir(tmp_path)
    if kind == "folder":
        (tmp_path / "python-docs").mkdir()
    else:
        (tmp_path / "python-docs").write_text("x y z\n\n" * 30)
    assert _documents("python-docs") == want


def test_a_mask_selects_the_same_blocks_from_a_token_stream_as_from_a_tensor():
    """TokenData's splits are tensors or TokenBlocks and are indexed alike: a boolean mask
    selected blocks 1 and 0 of a stream (its True and False read as indices)."""
    import numpy as np

    from companion.train.text.tokens import TokenBlocks

    blocks = TokenBlocks(np.arange(80, dtype=np.uint16), 16)
    mask = torch.tensor([True, False, True, False, False])
    assert torch.equal(blocks[mask], torch.arange(80).view(5, 16)[mask])
    with pytest.raises(IndexError, match="whole numbers"):
        blocks[torch.tensor([1.7])]
