"""Hostile round 13 (issue 74): the caches (the package's cache folder, the verdicts' cache,
the token cache, the English mix's stored assembly) and the text pipeline that training reads
(documents -> token streams -> blocks -> masking).

Every expected value is computed apart from the code under test: token streams by tokenizing
each document alone and placing it by the split rule written out here; masking rates against
the binomial spread of the stated rate; a cache entry against the value computed afresh.  A
read that could block (a FIFO) runs in a thread under a deadline, so a hang fails the case.
Every cache points at ``tmp_path`` (``COMPANION_CACHE``, ``COMPANION_VERDICT_CACHE``).
"""

from __future__ import annotations

import json
import math
import os
import shutil
import threading
import unicodedata
from pathlib import Path

import numpy as np
import pytest
import torch

from companion.base.errors import CompanionError


@pytest.fixture(scope="module")
def tok():
    from companion.train.text.data import load_tokenizer

    return load_tokenizer()


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("COMPANION_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def _docs(n, tag="d"):
    words = "the cat sat on a mat while dogs ran far away from home and back again".split()
    rng = np.random.default_rng(len(tag) * 1000 + n)
    return [" ".join(rng.choice(words, size=int(rng.integers(8, 20)))) + f" {tag}{i}" for i in range(n)]


def _ids(tok, doc):
    return tok(doc, add_special_tokens=False, split_special_tokens=True)["input_ids"]


def _expected_streams(tok, docs, eval_every=10):
    """The streams by the split rule written out: documents with no tokens are no documents;
    every ``eval_every``-th document is held out, and a repeat goes where its first copy went."""
    sep = tok.convert_tokens_to_ids("[SEP]")
    train, held, first, index = [], [], {}, 0
    for d in docs:
        ids = _ids(tok, d)
        if not ids:
            continue
        side = first.setdefault(d, index % eval_every == eval_every - 1)
        (held if side else train).extend(ids + [sep])
        index += 1
    return np.array(train), np.array(held)


def _deadline(fn, seconds=5.0):
    """``fn()``'s result or exception, or ``TimeoutError`` if it has not returned in time."""
    box = {}

    def run():
        try:
            box["value"] = fn()
        except BaseException as exc:   # noqa: BLE001 - handed to the test
            box["error"] = exc

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(seconds)
    if t.is_alive():
        return TimeoutError(f"still blocked after {seconds} s")
    return box.get("error", box.get("value"))


def _release(fifo: Path):
    """Open the read end of ``fifo`` so that a writer blocked on it goes on (test clean-up)."""
    try:
        os.close(os.open(fifo, os.O_RDONLY | os.O_NONBLOCK))
    except OSError:
        pass


# ============================================================ the verdicts' cache (judge/cache.py)

@pytest.fixture
def verdict_cache(tmp_path, monkeypatch):
    import companion.base.paths as paths
    from package_tree import package_tree
    from companion.judge import claims

    monkeypatch.setattr(paths, "ROOT", package_tree(tmp_path / "root"))
    monkeypatch.setenv("COMPANION_VERDICT_CACHE", str(tmp_path / "vcache"))
    monkeypatch.setattr(claims, "_CACHE", {})
    (tmp_path / "vcache").mkdir()
    return tmp_path / "vcache"


def test_a_fifo_at_the_verdict_caches_lock_is_refused_and_never_waited_on(verdict_cache):
    """The lock was opened for appending: a FIFO there blocked the kernel for ever."""
    from companion.judge import cache

    lock = cache._cache_path("t").with_suffix(".lock")
    os.mkfifo(lock)
    try:
        got = _deadline(lambda: cache._disk_cached_value("t", lambda: {"a": 1}))
    finally:
        _release(lock)
    assert isinstance(got, CompanionError), got
    assert str(lock) in str(got) and "\n" not in str(got)


def test_a_link_at_the_verdict_caches_lock_never_creates_its_target(verdict_cache, tmp_path):
    """A link at the lock's name made its target (outside the cache) an empty file."""
    from companion.judge import cache

    lock = cache._cache_path("t").with_suffix(".lock")
    target = tmp_path / "elsewhere" / "notes.txt"
    target.parent.mkdir()
    lock.symlink_to(target)
    got = _deadline(lambda: cache._disk_cached_value("t", lambda: {"a": 1}))
    assert not target.exists()
    assert isinstance(got, CompanionError) and str(lock) in str(got) and "\n" not in str(got), got


def test_two_entries_swapped_are_each_computed_again_not_served_as_the_other(verdict_cache):
    from companion.judge import cache, claims

    a, b = cache._cache_path("a"), cache._cache_path("b")
    cache._disk_cached_value("a", lambda: {"x": 1.5})
    cache._disk_cached_value("b", lambda: {"x": 2.5})
    ta, tb = a.read_text(), b.read_text()
    a.write_text(tb)
    b.write_text(ta)
    claims._CACHE.clear()
    assert cache._disk_cached_value("a", lambda: {"x": 10.0}) == {"x": 10.0}   # computed again
    assert cache._disk_cached_value("b", lambda: {"x": 20.0}) == {"x": 20.0}


@pytest.mark.parametrize("cut", [0.3, 0.7, 0.999])
def test_an_entry_cut_short_by_a_killed_writer_is_computed_again(verdict_cache, cut):
    from companion.judge import cache, claims

    path = cache._cache_path("t")
    cache._disk_cached_value("t", lambda: {"x": [1, 2, 3]})
    text = path.read_text()
    path.write_text(text[: int(len(text) * cut)])
    claims._CACHE.clear()
    assert cache._disk_cached_value("t", lambda: {"x": [4]}) == {"x": [4]}


def test_two_threads_asking_at_once_compute_the_value_once(verdict_cache):
    import time

    from companion.judge import cache, claims

    calls = []

    def slow():
        calls.append(1)
        time.sleep(0.2)
        return {"v": 7}

    def ask():
        claims._CACHE.pop("t", None)
        return cache._disk_cached_value("t", slow)

    results = []
    threads = [threading.Thread(target=lambda: results.append(ask())) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert results == [{"v": 7}, {"v": 7}]
    assert len(calls) == 1


def test_a_fifo_at_a_verdict_entry_is_never_read(verdict_cache):
    from companion.judge import cache

    entry = cache._cache_path("t")
    os.mkfifo(entry)
    try:
        got = _deadline(lambda: cache._disk_cached_value("t", lambda: {"a": 1}))
    finally:
        _release(entry)
    assert got == {"a": 1} or (isinstance(got, CompanionError) and str(entry) in str(got)
                               and "\n" not in str(got)), got


@pytest.mark.parametrize("name", ["../escape", "sub/../../escape", "ABSOLUTE"])
def test_a_table_name_with_a_path_in_it_never_writes_outside_the_cache(verdict_cache, tmp_path, name):
    """The name went into the file's path as given: '../x' wrote beside the cache folder."""
    from companion.judge import cache

    if name == "ABSOLUTE":
        (tmp_path / "abs").mkdir()
        name = str(tmp_path / "abs" / "escape")
    before = {p for p in tmp_path.rglob("*")}
    try:
        got = cache._disk_cached_value(name, lambda: {"a": 1})
    except CompanionError as err:
        assert "\n" not in str(err) and name in str(err)
    else:
        assert got == {"a": 1}
    made = {p for p in tmp_path.rglob("*")} - before
    assert all(verdict_cache in p.parents for p in made), made


@pytest.mark.parametrize("value", [np.float32(0.1), np.float16(1 / 3), np.int32(2 ** 31 - 1), np.uint8(255)])
def test_a_numpy_scalar_reads_back_with_its_own_type_and_arithmetic(verdict_cache, value):
    """A float32 read back as a Python float (float64): the kernel that computed the value and
    the kernels that read it from the cache got other numbers from the same arithmetic."""
    from companion.judge import cache, claims

    cache._disk_cached_value("s", lambda: {"x": value})
    claims._CACHE.clear()
    calls = []
    got = cache._disk_cached_value("s", lambda: calls.append(1) or {"x": value})["x"]
    with np.errstate(over="ignore"):
        assert type(got) is type(value) and repr(got * 3 + 1) == repr(value * 3 + 1)
    assert not calls   # read from the file, not computed again


def test_a_table_computed_under_another_tokenizer_is_never_served(verdict_cache, monkeypatch):
    """COMPANION_TOKENIZER changes the tokenizer the premise shares are counted with, but not
    the cache's key: a table computed under one tokenizer was served to kernels of another."""
    from companion.judge import cache, claims

    monkeypatch.delenv("COMPANION_TOKENIZER", raising=False)
    assert cache._disk_cached_value("shares", lambda: {"share": 0.25}) == {"share": 0.25}
    monkeypatch.setenv("COMPANION_TOKENIZER", "bert-base-cased")
    claims._CACHE.clear()
    assert cache._disk_cached_value("shares", lambda: {"share": 0.75}) == {"share": 0.75}
    monkeypatch.delenv("COMPANION_TOKENIZER")
    claims._CACHE.clear()
    assert cache._disk_cached_value("shares", lambda: {"share": 0.5}) == {"share": 0.25}   # read back


# ============================================================ the package's cache folder (base/cache.py)

def test_a_cache_folder_that_is_a_link_to_a_folder_is_used_through_it(tmp_path, monkeypatch):
    from companion.base.cache import cache_dir

    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    monkeypatch.setenv("COMPANION_CACHE", str(tmp_path / "link"))
    d = cache_dir("tokens")
    assert d.is_dir() and (real / "tokens").is_dir()


def test_a_cache_folder_that_is_a_fifo_is_refused_in_one_line_naming_it(tmp_path, monkeypatch):
    from companion.base.cache import cache_dir

    os.mkfifo(tmp_path / "fifo")
    monkeypatch.setenv("COMPANION_CACHE", str(tmp_path / "fifo"))
    got = _deadline(lambda: cache_dir("tokens"))
    assert isinstance(got, CompanionError) and "fifo" in str(got) and "COMPANION_CACHE" in str(got), got


@pytest.mark.parametrize("chunk", [0, 2.5])
def test_a_file_hash_read_in_chunks_of_no_size_is_refused_not_the_hash_of_nothing(tmp_path, chunk):
    """chunk=0 read nothing and returned the sha256 of the empty string for any file."""
    import hashlib

    from companion.base.cache import sha256_file

    f = tmp_path / "a.bin"
    f.write_bytes(b"token ids" * 1000)
    with pytest.raises((CompanionError, ValueError), match="chunk") as err:
        sha256_file(f, chunk=chunk)
    assert "\n" not in str(err.value)
    assert sha256_file(f, chunk=7) == hashlib.sha256(f.read_bytes()).hexdigest()


def test_an_abandoned_build_name_that_is_a_link_never_empties_its_target(tmp_path):
    from companion.base.cache import pid_after_last_dash, remove_abandoned

    precious = tmp_path / "mine"
    precious.mkdir()
    (precious / "thesis.tex").write_text("years of work")
    root = tmp_path / "tokens"
    root.mkdir()
    (root / ".abc.tmp-999999999").symlink_to(precious)   # no such process
    (root / ".def.tmp-999999998").mkdir()                # a real abandoned build
    (root / f".ghi.tmp-{os.getpid()}").mkdir()           # one of a live process
    remove_abandoned(root, ".*.tmp-*", pid_after_last_dash)
    assert (precious / "thesis.tex").read_text() == "years of work"
    assert not (root / ".def.tmp-999999998").exists()
    assert (root / f".ghi.tmp-{os.getpid()}").is_dir()


# ============================================================ the token cache (train/text/tokens.py)

def test_two_token_caches_swapped_never_serve_one_corpus_as_the_other(cache, tok):
    """Both folders hold a whole, self-consistent cache made with the same tokenizer: the
    load checked only the tokenizer, so each corpus was served the other's tokens."""
    from companion.train.text.corpora import documents_sha256
    from companion.train.text.tokens import cached_token_streams

    docs = {"a": _docs(20, "a"), "b": _docs(20, "bb")}
    src = {k: {"corpus": k, "documents_sha256": documents_sha256(v)} for k, v in docs.items()}
    want = {k: _expected_streams(tok, v)[0] for k, v in docs.items()}   # before: a call may reset its padding
    fa = cached_token_streams(src["a"], lambda: docs["a"], tok).folder
    fb = cached_token_streams(src["b"], lambda: docs["b"], tok).folder
    fa.rename(fa.with_name("x"))
    fb.rename(fa)
    fa.with_name("x").rename(fb)
    for k in ("a", "b"):
        try:
            got = cached_token_streams(src[k], lambda k=k: docs[k], tok)
        except CompanionError as err:   # a refusal naming the folder is right too
            assert "\n" not in str(err) and "token cache" in str(err)
            continue
        np.testing.assert_array_equal(np.asarray(got.train), want[k])


def test_a_fifo_at_a_token_caches_meta_file_is_refused_and_never_read(cache, tok):
    from companion.train.text.corpora import documents_sha256
    from companion.train.text.tokens import cached_token_streams

    docs = _docs(20)
    src = {"corpus": "f", "documents_sha256": documents_sha256(docs)}
    folder = cached_token_streams(src, lambda: docs, tok).folder
    (folder / "meta.json").unlink()
    os.mkfifo(folder / "meta.json")
    try:
        got = _deadline(lambda: cached_token_streams(src, lambda: docs, tok))
    finally:
        _release(folder / "meta.json")
    assert isinstance(got, CompanionError) and "meta.json" in str(got) and "\n" not in str(got), got


def test_a_tokenizer_setting_that_changes_the_tokens_changes_the_cache_key(tmp_path):
    """A Python (slow) tokenizer was hashed by its vocabulary and lower-casing only:
    ``strip_accents`` (and ``never_split``, ``tokenize_chinese_chars``) left the key alone,
    so a token cache made with accents kept was served to one that strips them."""
    from transformers.models.bert import BertTokenizerLegacy

    from companion.train.text.tokens import tokenizer_sha256

    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "cafe", "café", "the"]) + "\n")
    keep = BertTokenizerLegacy(str(vocab), do_lower_case=True, strip_accents=False)
    strip = BertTokenizerLegacy(str(vocab), do_lower_case=True, strip_accents=True)
    assert keep("café", add_special_tokens=False)["input_ids"] != strip("café", add_special_tokens=False)["input_ids"]
    assert tokenizer_sha256(keep) != tokenizer_sha256(strip)
    again = BertTokenizerLegacy(str(vocab), do_lower_case=True, strip_accents=False)
    assert tokenizer_sha256(again) == tokenizer_sha256(keep)   # the same settings, the same key


# ============================================================ documents -> streams (tokens.py, data.py)

@pytest.mark.parametrize("blank", ["", "   ", "\n\n\t", "\u00a0\u2003", "\x00\x01", " ".join("\u0301\u0301")])
def test_a_document_of_no_text_is_no_document(tok, blank):
    """An empty or whitespace-only document wrote a lone [SEP] and counted as a document
    (a held-out 'document' of one separator)."""
    from companion.train.text.tokens import in_memory_streams

    real = _docs(20)
    docs = [real[0], blank, *real[1:9], blank, blank, *real[9:]]
    got = in_memory_streams(docs, tok)
    want_train, want_eval = _expected_streams(tok, docs)
    np.testing.assert_array_equal(np.asarray(got.train), want_train)
    np.testing.assert_array_equal(np.asarray(got.eval), want_eval)
    assert got.meta["train_docs"] + got.meta["eval_docs"] == len(real)


def test_a_repeated_document_is_never_on_both_sides_of_the_split(tok):
    """The held-out document was every tenth by position, whatever its text: a repeat of a
    training document was held out and scored as unseen text."""
    from companion.train.text.tokens import in_memory_streams

    real = _docs(30)
    docs = list(real)
    docs[9] = docs[0]      # a repeat at a held-out position of a training document
    docs[25] = docs[19]    # a repeat at a training position of a held-out document
    got = in_memory_streams(docs, tok)
    want_train, want_eval = _expected_streams(tok, docs)
    np.testing.assert_array_equal(np.asarray(got.train), want_train)
    np.testing.assert_array_equal(np.asarray(got.eval), want_eval)


def test_a_local_corpus_through_the_token_cache_holds_out_no_training_paragraph(cache, tok, tmp_path):
    from companion.train.text.data import corpus_token_streams

    docs = _docs(30)
    docs[9], docs[29] = docs[0], docs[3]   # repeats of training paragraphs at held-out positions
    f = tmp_path / "corpus.txt"
    f.write_text("\n\n".join(docs), encoding="utf-8")
    streams, _, src = corpus_token_streams(str(f), tokenizer=tok)
    want_train, want_eval = _expected_streams(tok, docs)
    np.testing.assert_array_equal(np.asarray(streams.train), want_train)
    np.testing.assert_array_equal(np.asarray(streams.eval), want_eval)
    assert "split" in src   # the rule moved documents: its own cache key


def test_the_bundled_corpus_holds_out_no_document_that_training_also_holds(tok):
    """The book's live runs train on python-docs: 54 of its 160 held-out paragraphs were
    repeats of training paragraphs (grammar rules and sentences repeated across topics)."""
    from companion.train.text.data import build_token_data, default_corpus

    data = build_token_data(default_corpus(), 8, tokenizer=tok)
    sep = tok.convert_tokens_to_ids("[SEP]")

    def documents(stream):
        s = np.asarray(stream).tolist()
        out, cur = set(), []
        for t in s:
            if t == sep:
                out.add(tuple(cur))
                cur = []
            else:
                cur.append(t)
        return out

    assert not documents(data.train.stream) & documents(data.eval.stream)


def test_two_threads_building_one_token_cache_at_once_both_get_its_streams(cache, tok):
    """Both builds used the same temporary folder (named by the process id alone): one
    removed the other's files while it wrote them."""
    from companion.train.text.corpora import documents_sha256
    from companion.train.text.tokens import cached_token_streams

    docs = _docs(600)
    want = _expected_streams(tok, docs)
    src = {"corpus": "t", "documents_sha256": documents_sha256(docs)}
    barrier = threading.Barrier(2)

    def build():
        barrier.wait()
        got = cached_token_streams(src, lambda: docs, tok)
        return np.asarray(got.train).copy(), np.asarray(got.eval).copy()

    results = [None, None]

    def run(i):
        try:
            results[i] = build()
        except Exception as exc:   # noqa: BLE001 - checked below
            results[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    for r in results:
        assert not isinstance(r, BaseException), r
        np.testing.assert_array_equal(r[0], want[0])
        np.testing.assert_array_equal(r[1], want[1])


@pytest.mark.parametrize("rank", ["-1", "first", "1.5"])
def test_a_rank_in_the_environment_that_is_no_process_number_is_refused_not_waited_on(cache, tok, monkeypatch, rank):
    """RANK=-1 (some launchers' 'not distributed') waited an hour for a rank 0 that never
    came; RANK=first raised int()'s ValueError."""
    from companion.train.text.corpora import documents_sha256
    from companion.train.text.tokens import cached_token_streams

    docs = _docs(20)
    monkeypatch.setenv("RANK", rank)
    got = _deadline(lambda: cached_token_streams({"corpus": "r", "documents_sha256": documents_sha256(docs)},
                                                 lambda: docs, tok), 5.0)
    assert isinstance(got, CompanionError) and "RANK" in str(got) and "\n" not in str(got), got


def test_one_string_given_as_the_documents_is_refused_not_read_as_one_document_a_character(tok):
    """``build_token_data(text, ...)`` read a string as its characters: every character a
    document, followed by [SEP]."""
    from companion.train.text.data import build_token_data

    text = "\n\n".join(_docs(30))
    with pytest.raises(CompanionError, match="list") as err:
        build_token_data(text, 8, tokenizer=tok)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("every", [2.5, True, "10"])
def test_a_held_out_rule_that_is_no_whole_number_is_refused(tok, every):
    """eval_every=2.5 held out documents 4, 9, 14, ... (index % 2.5 == 1.5): one in five."""
    from companion.train.text.data import build_token_data

    with pytest.raises(CompanionError, match="eval_every") as err:
        build_token_data(_docs(30), 8, tokenizer=tok, eval_every=every)
    assert "\n" not in str(err.value)


def test_the_unigram_reference_with_no_held_out_target_is_refused_not_nan():
    """Held-out blocks of special ids alone (every word unknown to the compact vocabulary):
    0 / 0 was returned as the reference line, nan."""
    from companion.train.text.data import TokenData, unigram_cross_entropy
    from companion.train.text.masking import MaskingSpec
    from companion.train.text.tokens import TokenBlocks

    train = TokenBlocks(np.array([5, 6, 7, 3] * 8, dtype=np.uint16), 8)
    held = TokenBlocks(np.array([1, 1, 1, 3] * 4, dtype=np.uint16), 8)
    data = TokenData(train=train, eval=held, vocab_size=10,
                     masking=MaskingSpec(mask_id=4, vocab_size=10, first_regular_id=5))
    with pytest.raises(CompanionError, match="held-out") as err:
        unigram_cross_entropy(data, "encoder")
    assert "\n" not in str(err.value)
    # where there are targets: the add-one smoothed training frequencies, by hand
    got = unigram_cross_entropy(data, "decoder")
    counts = np.bincount(np.array([5, 6, 7, 3] * 8), minlength=10)
    p = (counts + 1) / (counts.sum() + 10)
    assert got == pytest.approx(-np.log(p[1]) * 12 / 16 - np.log(p[3]) * 4 / 16, rel=1e-12)


def test_the_text_of_a_separator_inside_a_document_never_cuts_it(tok):
    from companion.train.text.tokens import in_memory_streams

    docs = _docs(10)
    docs[2] = "before [SEP] after [sep] [ S E P ]"
    docs[4] = " ".join("a [SEP] b")   # the authors' character-joined text
    got = in_memory_streams(docs, tok)
    sep = tok.convert_tokens_to_ids("[SEP]")
    assert int((np.asarray(got.train) == sep).sum()) == 9
    assert int((np.asarray(got.eval) == sep).sum()) == 1


@pytest.mark.parametrize("seq_len", [0, -8, 2.5, True])
def test_a_block_length_that_is_no_positive_whole_number_is_refused_in_one_line(seq_len):
    from companion.train.text.tokens import TokenBlocks

    with pytest.raises(CompanionError, match="block") as err:
        TokenBlocks(np.arange(100, dtype=np.uint16), seq_len)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("kw,word", [({"seq_len": "128"}, "seq_len"), ({"seq_len": 8, "top_k": 2.5}, "top_k"),
                                     ({"seq_len": 8, "top_k": True}, "top_k")])
def test_token_data_refuses_a_length_or_vocabulary_size_that_is_no_whole_number(tok, kw, word):
    """seq_len '128' raised '<' not supported between int and str; top_k 2.5 raised a slice
    TypeError and top_k True kept one regular id."""
    from companion.train.text.data import build_token_data

    with pytest.raises(CompanionError, match=word) as err:
        build_token_data(_docs(30), tokenizer=tok, **kw)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("n,seq", [(15, 16), (16, 16), (33, 16)])
def test_blocks_are_the_streams_whole_blocks_and_no_part_of_one(n, seq):
    from companion.train.text.tokens import TokenBlocks

    stream = np.arange(n, dtype=np.uint16)
    if n < seq:
        with pytest.raises(CompanionError, match="fewer than one block"):
            TokenBlocks(stream, seq)
        return
    b = TokenBlocks(stream, seq)
    want = stream[: (n // seq) * seq].reshape(-1, seq).astype(np.int64)
    np.testing.assert_array_equal(b.tensor().numpy(), want)


# ============================================================ masking (masking.py; objectives measured)

@pytest.mark.parametrize("kw,word", [
    ({"mask_id": 4, "vocab_size": 10, "first_regular_id": 10}, "first_regular_id"),
    ({"mask_id": 4, "vocab_size": 10, "first_regular_id": -1}, "first_regular_id"),
    ({"mask_id": 1.5, "vocab_size": 10, "first_regular_id": 5}, "mask id"),
    ({"mask_id": True, "vocab_size": 10, "first_regular_id": 5}, "mask id"),
    ({"mask_id": 7, "vocab_size": 10, "first_regular_id": 5}, "mask id"),
    ({"mask_id": 4, "vocab_size": 10.0, "first_regular_id": 5}, "vocab"),
])
def test_a_masking_spec_that_cannot_mask_as_stated_is_refused_in_one_line(kw, word):
    """A mask id of 1.5 was written into the long ids as 1 ([UNK]); a first regular id past
    the vocabulary raised torch's 'random_ from 10 to 10'; a mask id among the regular ids
    could be drawn as a random replacement, so a masked position was not recognisable."""
    from companion.train.text.masking import MaskingSpec

    with pytest.raises((CompanionError, ValueError), match=word) as err:
        MaskingSpec(**kw)
    assert "\n" not in str(err.value)


def test_masking_rates_match_the_stated_rate_and_never_touch_special_tokens():
    """BERT's recipe measured: of the regular positions 15 % chosen; of those 80 % [MASK],
    10 % a random regular id, 10 % kept; a special token (a block's first and last position
    here, and [SEP] inside) never chosen.  Each rate within 5 binomial standard deviations."""
    from companion.train.models.objectives import mask_tokens
    from companion.train.text.masking import MaskingSpec

    spec = MaskingSpec(mask_id=4, vocab_size=50, first_regular_id=5)
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(5, 50, (250, 64), generator=g)
    ids[:, 0], ids[:, -1], ids[:, 30] = 2, 3, 3
    inputs, labels = mask_tokens(ids, spec, torch.Generator().manual_seed(1))
    special = ids < 5
    chosen = labels != -100
    assert not chosen[special].any()
    n = int((~special).sum())
    k = int(chosen.sum())

    def near(count, total, p):
        return abs(count - total * p) <= 5 * math.sqrt(total * p * (1 - p))

    assert near(k, n, 0.15)
    masked = chosen & (inputs == 4)
    kept = chosen & (inputs == ids)
    assert near(int(masked.sum()), k, 0.8)
    # a random replacement equal to the original counts as kept: P(kept) = 0.1 + 0.1 / 45
    assert near(int(kept.sum()), k, 0.1 + 0.1 / 45)
    swapped = chosen & ~masked & ~kept
    assert int((inputs[swapped] < 5).sum()) == 0
    torch.testing.assert_close(labels[chosen], ids[chosen])
    torch.testing.assert_close(inputs[~chosen], ids[~chosen])


# ============================================================ the English mix (english_mix.py)

def _assembly_docs():
    words = "river stone light music garden winter paper silver window morning".split()
    return [" ".join(words[(i + j) % 10] for j in range(22)) + f" number {i}" for i in range(80)]


def test_text_that_differs_only_in_its_unicode_form_is_one_document():
    from companion.train.text.english_mix import assemble, is_held_out

    docs = _assembly_docs()
    docs[3] = docs[3].replace("river", "rivière")
    nfd = unicodedata.normalize("NFD", docs[3])
    assert nfd != docs[3]
    corpus = assemble([("s", [*docs, nfd])])
    assert corpus.stats["s"]["duplicates"] == 1
    assert corpus.documents == docs
    assert corpus.held_out == [is_held_out(d) for d in docs]


@pytest.mark.parametrize("held,twin", [
    (lambda d: d, str.upper),                                                        # case
    (lambda d: d.replace("river", "rivière"), lambda d: d.replace("river", "riviere")),  # accents
    (lambda d: d.replace(" number", ", number."), lambda d: d.replace(" number", " , number .")),  # spacing
])
def test_a_held_out_document_the_tokenizer_reads_as_a_training_one_is_refused(tok, held, twin):
    """The leak check compared exact text: 'THE RIVER ...' in training and 'the river ...' held
    out (or with accents, or other spacing) passed, though the uncased tokenizer reads both as
    the same ids, so held-out loss measured memorisation."""
    from companion.train.text.english_mix import assemble, is_held_out

    docs = _assembly_docs()
    # a document held out whose twin (the same text, written otherwise) hashes to training
    i = next(i for i, d in enumerate(docs) if is_held_out(held(d)) and not is_held_out(twin(d)))
    a, b = held(docs[i]), twin(docs[i])
    assert a != b and _ids(tok, a) == _ids(tok, b)   # the tokenizer reads them alike
    docs[i] = a
    with pytest.raises(CompanionError, match="held-out document") as err:
        assemble([("s", [*docs, b])])
    assert "\n" not in str(err.value)


def test_an_edited_stored_assembly_is_assembled_again_not_served(cache):
    """The stored assembly was checked by its documents' hash alone: a split flipped in the
    file (a held-out document read as training text) was served."""
    from companion.train.text.english_mix import _stored_assembly, assemble, is_held_out

    corpus = assemble([("s", _assembly_docs())])
    key = ("k",)
    calls = []

    def now():
        calls.append(1)
        return assemble([("s", _assembly_docs())])

    _stored_assembly(key, now)
    stored = next((cache / "assembled").glob("english-mix-*.json"))
    data = json.loads(stored.read_text())
    i = data["held_out"].index(True)
    data["held_out"][i] = False
    data["sources"][0] = "elsewhere"
    stored.write_text(json.dumps(data))
    got = _stored_assembly(key, now)
    assert got.held_out == [is_held_out(d) for d in corpus.documents]
    assert got.sources == corpus.sources and got.stats == corpus.stats
    assert len(calls) == 2


def test_a_fifo_at_the_stored_assembly_is_never_read(cache):
    from companion.train.text.english_mix import _assembly_key, _stored_assembly, assemble

    key = ("k",)
    (cache / "assembled").mkdir(parents=True)
    fifo = cache / "assembled" / f"english-mix-{_assembly_key(key)}.json"
    os.mkfifo(fifo)
    try:
        got = _deadline(lambda: _stored_assembly(key, lambda: assemble([("s", _assembly_docs())])))
    finally:
        _release(fifo)
    assert not isinstance(got, BaseException), got
    assert got.documents == _assembly_docs()


def test_a_long_document_is_cut_without_losing_or_repeating_text():
    from companion.train.text.english_mix import MIN_TAIL_CHARS, PIECE_CHARS, split_long

    rng = np.random.default_rng(3)
    paras = []
    for n in (30_000, 300, 12_000, 40, 9_000):
        words = ["".join(rng.choice(list("abcdefgh"), size=int(rng.integers(1, 9)))) for _ in range(n // 5)]
        text = " ".join(words)
        if n == 12_000:
            text = text.replace(" ", "")      # one paragraph with no space to cut at
        paras.append(text)
    doc = "\n".join(paras)
    pieces = split_long(doc)
    assert "".join("".join(p.split()) for p in pieces) == "".join(doc.split())
    assert all(len(p) >= PIECE_CHARS for p in pieces[:-1])
    assert len(pieces[-1]) >= MIN_TAIL_CHARS


def test_a_fitted_vocabulary_folder_swapped_with_another_fits_is_never_used(cache):
    """The fitted vocabulary was found by its folder's name alone: another corpus's fit
    under that name (copied, swapped) was used as this one's, so every token id differed."""
    from companion.train.text.english_mix import assemble, fitted_tokenizer_folder

    a = assemble([("s", _assembly_docs())])
    b = assemble([("s", [d.replace("river", "ocean").replace("stone", "forest") for d in _assembly_docs()])])
    fa, fb = fitted_tokenizer_folder(a), fitted_tokenizer_folder(b)
    want = {"a": (fa / "tokenizer.json").read_bytes(), "b": (fb / "tokenizer.json").read_bytes()}
    assert want["a"] != want["b"]
    fa.rename(fa.with_name("x"))
    fb.rename(fa)
    fa.with_name("x").rename(fb)
    for k, corpus in (("a", a), ("b", b)):
        try:
            got = fitted_tokenizer_folder(corpus)
        except CompanionError as err:   # a refusal naming the folder is right too
            assert "\n" not in str(err) and "english-mix" in str(err)
            continue
        assert (got / "tokenizer.json").read_bytes() == want[k]


def test_cutting_into_pieces_of_no_length_is_refused_not_looped_for_ever():
    from companion.train.text.english_mix import split_long

    got = _deadline(lambda: split_long("word " * 50, max_chars=10, piece=0), 3.0)
    assert isinstance(got, (CompanionError, ValueError)) and "piece" in str(got), got


@pytest.mark.parametrize("limit", [-1, 2.5, True])
def test_a_document_limit_that_is_no_positive_whole_number_is_refused(tmp_path, limit):
    """limit=-1 dropped the last document (texts[:-1]); True read one."""
    from companion.train.text.data import load_texts

    f = tmp_path / "c.txt"
    f.write_text("\n\n".join(_docs(5)), encoding="utf-8")
    with pytest.raises(CompanionError, match="limit") as err:
        load_texts(str(f), limit=limit)
    assert "\n" not in str(err.value)
    assert load_texts(str(f), limit=2) == _docs(5)[:2]


@pytest.mark.parametrize("mode", ["Decoder", "encodr", ""])
def test_the_unigram_reference_refuses_an_unknown_mode(mode):
    """A misspelt mode was read as the masked objective's targets."""
    from companion.train.text.data import TokenData, unigram_cross_entropy
    from companion.train.text.masking import MaskingSpec
    from companion.train.text.tokens import TokenBlocks

    blocks = TokenBlocks(np.array([5, 6, 7, 3] * 8, dtype=np.uint16), 8)
    data = TokenData(train=blocks, eval=blocks, vocab_size=10,
                     masking=MaskingSpec(mask_id=4, vocab_size=10, first_regular_id=5))
    with pytest.raises(CompanionError, match="mode") as err:
        unigram_cross_entropy(data, mode)
    assert "\n" not in str(err.value)


def _card_numbers():
    src = {"key": "s", "package": "p==1", "registry": "pypi", "sha256": "0" * 64, "licence": "public domain",
           "domain": "prose", "documents": 10, "held_out": 1, "train_tokens": 90, "eval_tokens": 10, "raw": 10,
           "pieces": 10, "trivial": 0, "duplicates": 0}
    return {"sources": [src], "train_documents": 9, "eval_documents": 1, "train_tokens": 90, "eval_tokens": 10,
            "bert_uncased_tokens": 80, "documents_sha256": "a" * 64, "vocab_size": 4096, "tokenizer_folder": "f",
            "tokenizer_sha256": "b" * 64, "unk_eval_english_mix": 0.0, "unk_train_english_mix": 0.0,
            "wikipedia_token_cache": "c", "unk_eval_wikipedia_compact": 0.1, "wikipedia_eval_tokens": 5,
            "train_blocks": 1, "eval_blocks": 1, "passes": {"2000": 1.0, "10000": 5.0}}


def test_a_card_named_like_its_numbers_file_is_refused_not_overwritten_by_them(tmp_path):
    """``--out card.json``: the card was written, then replaced by its numbers (the same path)."""
    from companion.train.text.english_mix_card import write_card

    out = tmp_path / "card.json"
    try:
        write_card(out, _card_numbers())
    except CompanionError as err:
        assert "\n" not in str(err) and "card.json" in str(err)
        assert not out.exists()
        return
    files = sorted(tmp_path.iterdir())
    texts = [f.read_text() for f in files]
    assert len(files) == 2 and any(t.startswith("# Corpus card") for t in texts), files
