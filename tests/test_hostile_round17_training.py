"""Hostile round 17: the training data and the runner below the command line.

(a) Local corpus files as a user writes them: a CSV cell that reads 'NA', 'null' or 'None', a
column of numbers written with leading zeros, JSON lines of mixed types, a JSON true or NaN
where the text goes, UTF-16 files, a BOM with Windows line ends, old Mac line ends, a line
separator inside a JSON text, a one-character corpus.
(b) Documents handed over in memory: a missing value, bytes, half a surrogate pair, a pandas
column.
(c) The paper's own setting, characters joined into one stream: no held-out block is a
training block (the overlap counted here), every character one token.
(d) Masking: a MaskingSpec over another vocabulary than the data's; the masking rate in the
provenance and in the checkpoint's identity (a resume at another rate).
(e) Resume and provenance: a crash after a periodic checkpoint resumed against the
uninterrupted run; a checkpoint written before the masking was recorded; a checkpoint cut
short with no digest; the model a run from a checkpoint records; the pace the packer reports
for a resumed run.

Every expected value is computed apart from the code under test (the file's own bytes read by
hand, the tokenizer called on each document alone, a run without interruption)."""

from __future__ import annotations

import json
import math
import sys
import textwrap

import numpy as np
import pytest
import torch

torch.set_num_threads(1)

from companion.base.errors import CompanionError

from one_line import refused
from test_hostile_round13_caches_text import cache, tok  # noqa: F401  (fixtures: the tokenizer, an empty cache)
from test_train_loop import VOCAB, _cfg, _data


def _texts(path, **kw):
    from companion.train.text.data import load_texts

    return load_texts(str(path), **kw)


def _refusal(fn, *words):
    """:func:`one_line.refused` for the package's own refusals."""
    return refused(fn, *words, kind=CompanionError)


# ============================================================ (a) local corpus files

def test_a_csv_cell_reading_na_null_or_none_is_a_document_not_a_missing_value(tmp_path):
    """Comments such as 'NA' or 'None' are text; read as missing values they were dropped, and
    every later document moved one place in the held-out split."""
    cells = ["NA", "null", "None", "n/a", "nan", "#N/A", "a real comment"]
    f = tmp_path / "comments.csv"
    f.write_text("id,comment_text\n" + "".join(f"{i},{c}\n" for i, c in enumerate(cells)), encoding="utf-8")
    assert _texts(f, text_field="comment_text") == cells


def test_a_csv_column_of_numbers_keeps_each_text_as_written(tmp_path):
    """A column whose every cell looks like a number was read as floats: '007' became '7.0'."""
    cells = ["007", "1.50", "12345678901234567890"]
    f = tmp_path / "codes.csv"
    f.write_text("text\n" + "\n".join(cells) + "\n", encoding="utf-8")
    assert _texts(f) == cells


def test_json_lines_of_mixed_types_keep_each_string_as_written(tmp_path):
    """A string '007' beside a number 7 was read through a table of numbers: '007' became '7'."""
    f = tmp_path / "mixed.jsonl"
    f.write_text(json.dumps({"text": "007"}) + "\n" + json.dumps({"text": 7}) + "\n", encoding="utf-8")
    assert _texts(f) == ["007", "7"]


def test_a_json_true_where_the_text_goes_is_refused_not_read_as_the_word_true(tmp_path):
    f = tmp_path / "flags.jsonl"
    f.write_text(json.dumps({"text": "a document"}) + "\n" + json.dumps({"text": True}) + "\n", encoding="utf-8")
    _refusal(lambda: _texts(f), "record 2", str(f), "bool")


def test_a_json_nan_where_the_text_goes_is_no_document_not_the_word_nan(tmp_path):
    """Python's json.dumps writes a missing float as NaN; it is a missing text, as null is."""
    f = tmp_path / "gaps.jsonl"
    f.write_text("\n".join(json.dumps({"text": t}) for t in ["one", float("nan"), "two"]) + "\n", encoding="utf-8")
    assert "NaN" in f.read_text()
    assert _texts(f) == ["one", "two"]


@pytest.mark.parametrize("name", ["c.csv", "c.jsonl", "c.txt"])
def test_a_utf16_corpus_is_named_as_utf16_with_the_fix(tmp_path, name):
    """Notepad's 'Unicode': the CSV's refusal named a missing 'text' field as the fix."""
    f = tmp_path / name
    body = {"c.csv": "text\nhello\n", "c.jsonl": '{"text": "hello"}\n', "c.txt": "hello\n\nworld\n"}[name]
    f.write_bytes(body.encode("utf-16"))
    line = _refusal(lambda: _texts(f), str(f), "UTF-8")
    assert "field" not in line and "column" not in line


def test_a_csv_with_a_bom_and_windows_line_ends_reads_as_the_plain_file(tmp_path):
    rows = ['"a cat, sat"', "plain text", '"two\nlines"']
    plain, odd = tmp_path / "plain.csv", tmp_path / "excel.csv"
    plain.write_bytes(("text\n" + "\n".join(rows) + "\n").encode())
    odd.write_bytes(b"\xef\xbb\xbf" + ("text\r\n" + "\r\n".join(rows) + "\r\n").encode())
    assert _texts(plain) == ["a cat, sat", "plain text", "two\nlines"]
    got = _texts(odd)
    assert [t.replace("\r\n", "\n") for t in got] == _texts(plain)


def test_a_txt_file_with_old_mac_line_ends_splits_at_its_blank_lines(tmp_path):
    f = tmp_path / "mac.txt"
    f.write_bytes(b"para one\rline two\r\rpara two\r")
    assert [t.strip() for t in _texts(f)] == ["para one\nline two", "para two"]


def test_a_line_separator_inside_a_json_text_stays_in_its_record(tmp_path):
    """JSON may hold U+2028 unescaped; read as a line break it would cut the record in two."""
    f = tmp_path / "c.jsonl"
    f.write_text("\n".join(json.dumps({"text": f"first\u2028second {i}"}, ensure_ascii=False) for i in range(3)),
                 encoding="utf-8")
    assert "\u2028" in f.read_text(encoding="utf-8")
    assert _texts(f) == [f"first\u2028second {i}" for i in range(3)]


def test_a_one_character_corpus_is_refused_naming_the_held_out_split(tmp_path, tok):
    from companion.train.text.data import build_token_data

    f = tmp_path / "one.txt"
    f.write_bytes(b"a")
    assert _texts(f) == ["a"]
    _refusal(lambda: build_token_data(_texts(f), 4, tokenizer=tok), "held-out", "1 documents")


# ============================================================ (b) documents in memory

DOCS = [f"the cat sat on the mat number {i} while the dog ran far away" for i in range(30)]


@pytest.mark.parametrize("missing", [None, float("nan")], ids=["None", "NaN"])
def test_a_missing_value_among_the_documents_is_refused_naming_its_place(tok, missing):
    from companion.train.text.data import build_token_data

    docs = DOCS[:7] + [missing] + DOCS[7:]
    _refusal(lambda: build_token_data(docs, 8, tokenizer=tok), "document 7", "dropna")


def test_documents_given_as_bytes_are_refused_naming_the_decode(tok):
    from companion.train.text.data import build_token_data

    _refusal(lambda: build_token_data([d.encode() for d in DOCS], 8, tokenizer=tok), "document 0", "bytes", "decode")


def test_a_document_holding_half_a_surrogate_pair_is_refused_naming_it(tok):
    """Text read with errors='surrogateescape' keeps an undecodable byte as U+DCxx: no character."""
    from companion.train.text.data import build_token_data

    docs = DOCS[:3] + [b"caf\xe9 au lait".decode("utf-8", "surrogateescape")] + DOCS[3:]
    _refusal(lambda: build_token_data(docs, 8, tokenizer=tok), "document 3", "surrogate")


def test_a_pandas_column_of_documents_gives_the_lists_tokens(tok):
    import pandas as pd

    from companion.train.text.data import build_token_data

    a = build_token_data(DOCS, 8, tokenizer=tok, top_k=None)
    b = build_token_data(pd.Series(DOCS, index=range(100, 130)), 8, tokenizer=tok, top_k=None)
    assert torch.equal(a.train.tensor(), b.train.tensor()) and torch.equal(a.eval.tensor(), b.eval.tensor())


# ============================================================ (c) characters joined into one stream

def test_character_joined_documents_hold_out_no_block_that_training_holds(tok):
    """The paper's setting (" ".join(text)): every character a token, and a document repeated in
    another case or spacing goes where its first copy went, so no held-out block of 16 tokens is
    also a training block (the overlap counted here over the blocks' token tuples)."""
    from companion.train.text.data import build_token_data

    rng = np.random.default_rng(17)
    base = ["".join(rng.choice(list("abcdefghijklmnopqrstuvwxyz"), size=int(rng.integers(60, 120))))
            for _ in range(40)]
    texts = base + [base[3].upper(), base[8] + "  ", base[13].title()]   # repeats read alike, placed 40..42
    docs = [" ".join(t) for t in texts]
    data = build_token_data(docs, 16, tokenizer=tok, top_k=None)
    for d, t in zip(docs, texts):   # every non-space character one token of its own
        assert len(tok(d, add_special_tokens=False)["input_ids"]) == len(t.replace(" ", ""))
    train = {tuple(r) for r in data.train.tensor().tolist()}
    held = {tuple(r) for r in data.eval.tensor().tolist()}
    assert len(held) >= 10 and not (train & held)
    sep = tok.convert_tokens_to_ids("[SEP]")
    held_docs = {tuple(x) for x in _split(data.eval.stream.tolist(), sep)}
    train_docs = {tuple(x) for x in _split(data.train.stream.tolist(), sep)}
    assert not (held_docs & train_docs) and len(held_docs) + len(train_docs) == 40


def _split(stream, sep):
    out, cur = [], []
    for t in stream:
        if t == sep:
            out.append(cur)
            cur = []
        else:
            cur.append(t)
    return out


# ============================================================ (d) masking

def _with_masking(data, **kw):
    from dataclasses import replace

    from companion.train.text.data import TokenData

    return TokenData(train=data.train, eval=data.eval, vocab_size=data.vocab_size,
                     masking=replace(data.masking, **kw), kept_ids=data.kept_ids, description=data.description,
                     source=data.source)


@pytest.mark.parametrize("size", [VOCAB + 60, VOCAB - 20], ids=["larger", "smaller"])
def test_a_masking_spec_over_another_vocabulary_than_the_datas_is_refused(size):
    """Larger: a random replacement beyond the embedding was an IndexError deep inside; smaller:
    the replacements never drew the vocabulary's last ids, and the run trained on."""
    from companion.train.runner.loop import train

    bad = _with_masking(_data(), vocab_size=size)
    _refusal(lambda: train(_cfg(steps=2), data=bad), f"{size} ids", f"vocab_size={VOCAB}")


def test_a_runs_provenance_records_its_masking_rate():
    from companion.train.runner.provenance import provenance

    data = _with_masking(_data(), prob=0.3)
    meta = provenance(_cfg(steps=2), "companion train", 1.0, data)
    assert meta["data"]["masking"] == {"prob": 0.3, "mask_id": data.masking.mask_id,
                                       "first_regular_id": data.masking.first_regular_id}


def test_resume_under_another_masking_rate_is_refused(tmp_path):
    """A checkpoint trained at rate 0.3 went on at 0.15 as if nothing had changed."""
    from companion.train.runner.loop import train

    cfg = _cfg(steps=4)
    train(cfg, data=_with_masking(_data(), prob=0.3), out_dir=tmp_path, stop_at=1)
    _refusal(lambda: train(cfg, data=_data(), out_dir=tmp_path, resume=True), "masking", "0.3")


def test_a_checkpoint_from_before_the_masking_was_recorded_still_resumes(tmp_path):
    from companion.train.runner.checkpoints import digest_path
    from companion.base.cache import sha256_file
    from companion.train.runner.loop import train

    cfg = _cfg(steps=4)
    full = train(cfg, data=_data())
    train(cfg, data=_data(), out_dir=tmp_path, stop_at=2)
    ck_path = tmp_path / "checkpoint.pt"
    ck = torch.load(ck_path, weights_only=True)
    ck["data"].pop("masking", None)   # as written before the masking was part of the data's identity
    torch.save(ck, ck_path)
    digest_path(ck_path).write_text(sha256_file(ck_path) + "\n")
    resumed = train(cfg, data=_data(), out_dir=tmp_path, resume=True)
    assert resumed["value"].tolist() == full["value"].tolist()


# ============================================================ (e) resume and provenance

def test_a_run_resumed_from_a_periodic_checkpoint_after_a_crash_is_the_uninterrupted_run(tmp_path):
    from companion.train.runner.loop import train

    cfg = _cfg(steps=6, checkpoint_every=2, eval_every=3, guard=True, grad_accum=2, penalty="symmetric",
               penalty_coef=0.01)
    full, m_full = train(cfg, data=_data(), return_model=True)

    class Crash(Exception):
        pass

    def crash_at_six(line):   # after step 6's evaluation, before its checkpoint
        if line.startswith("step 6/"):
            raise Crash

    with pytest.raises(Crash):
        train(cfg, data=_data(), out_dir=tmp_path, progress=crash_at_six)
    assert torch.load(tmp_path / "checkpoint.pt", weights_only=True)["step"] == 4
    resumed, m_res = train(cfg, data=_data(), out_dir=tmp_path, resume=True, return_model=True)
    key = ["step", "quantity", "layer", "head"]
    a, b = (h.sort_values(key, kind="stable").reset_index(drop=True) for h in (full, resumed))
    assert a[key].equals(b[key]) and np.array_equal(a["value"].to_numpy(), b["value"].to_numpy(), equal_nan=True)
    for p, q in zip(m_full.parameters(), m_res.parameters()):
        assert torch.equal(p, q)


def test_a_checkpoint_cut_short_with_no_digest_is_refused_in_one_line(tmp_path):
    from companion.train.runner.checkpoints import digest_path
    from companion.train.runner.loop import train

    cfg = _cfg(steps=4)
    train(cfg, data=_data(), out_dir=tmp_path, stop_at=1)
    ck = tmp_path / "checkpoint.pt"
    ck.write_bytes(ck.read_bytes()[: ck.stat().st_size // 2])
    digest_path(ck).unlink()
    with pytest.warns(UserWarning, match="unverified"):
        _refusal(lambda: train(cfg, data=_data(), out_dir=tmp_path, resume=True), str(ck), "never unpickled")


def test_a_run_from_a_checkpoint_records_the_checkpoints_model_not_the_named_sizes(tmp_path):
    """A LLaMA started from its checkpoint was recorded as the named size with 4 x width in its
    feed-forward layer, dropout 0.1 and a norm epsilon of 1e-12 (SmolLM2-135M: 1,536 recorded
    as 2,304, 1e-5 as 1e-12)."""
    from transformers import LlamaConfig

    from companion.train.runner.config import TrainConfig
    from companion.train.runner.provenance import provenance

    hf = LlamaConfig(vocab_size=48, hidden_size=16, intermediate_size=24, num_hidden_layers=2, num_attention_heads=4,
                     num_key_value_heads=2, max_position_embeddings=64, rms_norm_eps=1e-5)
    hf.save_pretrained(tmp_path)
    cfg = TrainConfig(init_from=str(tmp_path), top_k=None, mode="decoder", size="micro", seq_len=16, steps=2,
                      warmup=0, device="cpu")
    size = provenance(cfg, "companion train", 1.0)["model_size"]
    written = json.loads((tmp_path / "config.json").read_text())
    assert (size["num_hidden_layers"], size["hidden_size"], size["num_attention_heads"]) == (2, 16, 4)
    assert size["intermediate_size"] == written["intermediate_size"] == 24
    assert size["layer_norm_eps"] == written["rms_norm_eps"] == 1e-5
    assert size["max_position_embeddings"] == 64 and size["num_key_value_heads"] == 2
    assert size["hidden_dropout_prob"] == size["attention_probs_dropout_prob"] == 0.0
    assert size["seq_len"] == 16


RESUMED = textwrap.dedent(f"""\
    #!{sys.executable}
    # a resumed run's progress: its clock starts at the resume (step 6), its steps count from 0
    import time
    print("[o] resuming from checkpoint.pt", flush=True)
    print("[o] step 8/10 eval_loss 1.0 median_symmetry 0.1 elapsed 4s", flush=True)
    print("[o] step 10/10 eval_loss 0.9 median_symmetry 0.1 elapsed 8s", flush=True)
    time.sleep(0.3)
    """)


def test_the_pack_summary_gives_a_resumed_runs_pace_over_its_own_steps(tmp_path):
    """4 s from step 8 to step 10 is 2 s a step; elapsed / step read 8 s over 10 steps (0.8)."""
    from companion.train.runner.pack import parse_jobs, run_packed

    fake = tmp_path / "fakepy"
    fake.write_text(RESUMED)
    fake.chmod(0o755)
    summary = run_packed(parse_jobs("a --steps 10 --resume\n"), tmp_path / "o", 1, 30, python=str(fake),
                         poll_s=0.05, echo=lambda *_: None)
    (run,) = summary["runs"]
    assert run["steps"] == 10 and run["seconds_per_step"] == pytest.approx((8 - 4) / (10 - 8))


def test_the_corpus_card_written_from_its_committed_numbers_is_the_committed_card(tmp_path):
    """What a reader sees: the card's writer, fed the numbers committed beside the card, writes the
    card as committed, and the rules file it cites exists (it named src/companion/train/english_mix.py,
    where no module has been since the package was split)."""
    import re
    from pathlib import Path

    from companion.train.text.english_mix_card import write_card

    root = Path(__file__).resolve().parents[1]
    numbers = json.loads((root / "data" / "corpora" / "english-mix.json").read_text(encoding="utf-8"))
    write_card(tmp_path / "card.md", numbers)
    text = (tmp_path / "card.md").read_text(encoding="utf-8")
    assert text == (root / "data" / "corpora" / "english-mix.md").read_text(encoding="utf-8")
    cited = re.findall(r"`(src/[^`]+\.py)`", text)
    assert cited and all((root / c).is_file() for c in cited)


def test_resume_with_a_stop_before_the_checkpoints_step_is_refused_not_handed_back_as_stopped(tmp_path):
    """Asked to stop at step 1, a resume from step 3 returned the three steps' history and model."""
    from companion.train.runner.loop import train

    cfg = _cfg(steps=4)
    train(cfg, data=_data(), out_dir=tmp_path, stop_at=3)
    _refusal(lambda: train(cfg, data=_data(), out_dir=tmp_path, resume=True, stop_at=1), "stop_at=1", "3")
    resumed = train(cfg, data=_data(), out_dir=tmp_path, resume=True, stop_at=3)   # nothing left: its own history
    assert int(resumed["step"].max()) == 3


def test_resume_without_a_run_folder_is_refused_naming_out_dir():
    from companion.train.runner.loop import train

    line = _refusal(lambda: train(_cfg(steps=2), data=_data(), resume=True), "out_dir")
    assert "None" not in line


def _update_rows(run, mode, seed, values):
    import pandas as pd

    return pd.DataFrame([dict(run=run, mode=mode, init="standard", seed=seed, step=s, quantity="update_symmetry",
                              layer=0, head=-1, value=v) for s, v in zip((1, 5, 10, 100), values)])


def test_the_early_window_mean_is_each_runs_own_mean_of_its_first_tenth():
    import pandas as pd

    from companion.train.runner.updates import window_means

    runs = pd.concat([_update_rows("a-s1", "encoder", 1, [0.2, 0.4, 0.6, 0.9]),
                      _update_rows("b-s1", "decoder", 1, [-0.2, 0.0, 0.1, 0.5])])
    m = window_means(runs)   # steps <= 0.1 x 100: 1, 5 and 10
    assert m[("encoder", "standard", 1)] == pytest.approx((0.2 + 0.4 + 0.6) / 3)
    assert m[("decoder", "standard", 1)] == pytest.approx((-0.2 + 0.0 + 0.1) / 3)


def test_two_runs_of_one_mode_start_and_seed_are_refused_not_pooled_into_one_seeds_mean():
    """Runs of two bodies (say two optimisers) in one table: the encoder's seed 1 read as the
    mean of both runs' rows, one seed where there were two runs."""
    import pandas as pd

    from companion.train.runner.updates import window_means

    runs = pd.concat([_update_rows("sgd-encoder-s1", "encoder", 1, [0.2, 0.4, 0.6, 0.9]),
                      _update_rows("adamw-encoder-s1", "encoder", 1, [0.8, 0.8, 0.8, 0.8])])
    _refusal(lambda: window_means(runs), "adamw-encoder-s1", "sgd-encoder-s1", "seed 1")


@pytest.mark.parametrize("name, body", [("train.csv", 'id,comment_text,toxic\n1,"Nice edit, thanks.",0\n'),
                                        ("red.jsonl", '{"raw_content": "Some web page.", "doc_id": "x"}\n')])
def test_a_corpus_file_of_the_papers_datasets_names_the_fix_for_its_text_column(tmp_path, cache, name, body):
    """The Jigsaw refusal said 'download train.csv and pass its path'; passed to the loader that
    `companion train --corpus` uses (which reads the column 'text'), the file was refused naming
    no way to name its column."""
    from companion.train.text.data import load_texts, token_data_for_corpus

    jig = _refusal(lambda: load_texts("jigsaw"), "comment_text")
    assert "text_field" in jig and "rename" in jig
    f = tmp_path / name
    f.write_text(body, encoding="utf-8")
    _refusal(lambda: token_data_for_corpus(str(f), 8), str(f), "'text'", "text_field", "rename")
