"""Corpora by name and the token cache: what goes in comes out, once, and corruption is caught."""

import json
import shutil
import threading
import time
from collections import Counter

import numpy as np
import pytest
import torch

from companion.base.errors import CompanionError
from companion.train.text import corpora
from companion.train.text.corpora import CORPORA, archive_path, corpus_documents, documents_sha256
from companion.train.text.data import build_token_data, load_tokenizer, token_data_for_corpus
from companion.train.text.tokens import (TokenBlocks, cached_token_streams, compact_vocabulary,
                                    tokenizer_sha256)


@pytest.fixture(scope="module")
def tok():
    return load_tokenizer()


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """An empty cache folder; the fetched corpus archives are linked into it."""
    from companion.base.cache import cache_root

    real = cache_root()
    monkeypatch.setenv("COMPANION_CACHE", str(tmp_path / "cache"))
    (tmp_path / "cache" / "archives").mkdir(parents=True)
    for spec in CORPORA.values():
        for one in spec.sources or (spec,):   # a corpus of several archives links each
            if not one.needs_fetch or not (real / "archives" / one.archive).exists():
                continue
            link = tmp_path / "cache" / "archives" / one.archive
            if not link.is_symlink():   # wikipedia-chars reads wikipedia's archive: linked once
                link.symlink_to(real / "archives" / one.archive)
    return tmp_path / "cache"


def _docs(n=40):
    rng = np.random.default_rng(0)
    words = "the cat sat on a mat while dogs ran far away from home and back again".split()
    return [" ".join(rng.choice(words, size=rng.integers(20, 60))) + f" doc{i}" for i in range(n)]


def _need(name):
    spec = CORPORA[name]
    from companion.base.cache import cache_root

    if not (cache_root() / "archives" / spec.archive).exists():
        pytest.skip(f"corpus {name} not fetched (make env fetches it: companion corpus fetch {name})")


# ------------------------------------------------------------------ the offline corpora


def test_wikipedia_corpus_is_the_ten_thousand_lead_sections(cache):
    _need("wikipedia")
    docs = corpus_documents("wikipedia", fetch=False)
    assert len(docs) == 10033
    # the archive's first article, read off the JSON by hand
    assert docs[0].startswith("20th-century classical music is Western art music")
    assert 4.6e6 < sum(map(len, docs)) < 5.1e6  # characters of lead-section text


def test_shakespeare_uses_one_edition_of_each_work(cache):
    _need("shakespeare")
    docs = corpus_documents("shakespeare", fetch=False)
    text = "\n".join(docs)
    # modern spelling only: the First Folio spellings of the same plays are left out
    assert "Who's there?" in text and "vnfold" not in text
    assert text.count("HAMLET, PRINCE OF DENMARK") == 1
    assert 4.8e6 < len(text) < 5.3e6


def test_kjv_has_one_document_per_chapter(cache):
    _need("kjv")
    docs = corpus_documents("kjv", fetch=False)
    assert len(docs) == 1189  # chapters of the King James Bible
    assert docs[0].startswith("In the beginning God created the heaven and the earth.")


def test_unknown_or_unfetched_corpus_names_the_fix(cache):
    with pytest.raises(CompanionError, match="companion corpus list|offline corpora"):
        corpus_documents("wikipeda")
    (cache / "archives" / CORPORA["kjv"].archive).unlink(missing_ok=True)
    with pytest.raises(CompanionError, match="companion corpus fetch kjv"):
        corpus_documents("kjv", fetch=False)


def test_a_tampered_archive_is_refused(cache):
    _need("kjv")
    link = cache / "archives" / CORPORA["kjv"].archive
    data = link.read_bytes()
    link.unlink()
    link.write_bytes(data[:-100])  # truncated
    with pytest.raises(CompanionError, match="sha256"):
        corpus_documents("kjv", fetch=False)


# ------------------------------------------------------------------ the token cache


def test_token_streams_decode_to_each_document_in_order(cache, tok):
    docs = _docs()
    streams = cached_token_streams({"corpus": "test", "documents_sha256": documents_sha256(docs)},
                                   lambda: docs, tok, eval_every=10)
    sep = tok.convert_tokens_to_ids("[SEP]")
    for split, stream in (("train", streams.train), ("eval", streams.eval)):
        expect = [d for i, d in enumerate(docs) if (i % 10 == 9) == (split == "eval")]
        pieces = np.split(np.asarray(stream), np.flatnonzero(np.asarray(stream) == sep) + 1)[:-1]
        assert len(pieces) == len(expect)
        for ids, doc in zip(pieces, expect):
            # independent reference: the tokenizer applied to the document on its own
            assert ids[:-1].tolist() == tok(doc, add_special_tokens=False)["input_ids"]


def test_a_cached_corpus_is_not_tokenized_again(cache, tok):
    docs = _docs()
    src = {"corpus": "test", "documents_sha256": documents_sha256(docs)}
    first = cached_token_streams(src, lambda: docs, tok)

    def boom():
        raise AssertionError("the documents were read a second time")

    again = cached_token_streams(src, boom, tok)
    assert again.folder == first.folder
    assert np.array_equal(again.train, first.train)


@pytest.mark.parametrize("damage", ["truncate", "flip", "meta"])
def test_a_damaged_token_cache_is_a_clear_error(cache, tok, damage):
    docs = _docs()
    src = {"corpus": "test", "documents_sha256": documents_sha256(docs)}
    folder = cached_token_streams(src, lambda: docs, tok).folder
    if damage == "truncate":
        with open(folder / "train.bin", "r+b") as f:
            f.truncate(10)
        match = "truncated"
    elif damage == "flip":
        raw = bytearray((folder / "train.bin").read_bytes())
        raw[5] ^= 0xFF
        (folder / "train.bin").write_bytes(bytes(raw))
        match = "corrupt"
    else:
        meta = json.loads((folder / "meta.json").read_text())
        meta["source"]["tokenizer_sha256"] = "0" * 64
        (folder / "meta.json").write_text(json.dumps(meta))
        match = "another tokenizer"
    with pytest.raises(CompanionError, match=match):
        cached_token_streams(src, lambda: docs, tok)


def test_other_ranks_wait_for_rank_zero_and_map_its_files(cache, tok):
    docs = _docs()
    src = {"corpus": "test", "documents_sha256": documents_sha256(docs)}
    got = {}

    def rank1():
        got["r1"] = cached_token_streams(src, lambda: pytest.fail("rank 1 must not tokenize"),
                                         tok, rank=1, wait_s=60)

    t = threading.Thread(target=rank1)
    t.start()
    time.sleep(1.5)
    assert t.is_alive()  # still waiting: nothing is built yet
    r0 = cached_token_streams(src, lambda: docs, tok, rank=0)
    t.join(30)
    assert np.array_equal(got["r1"].train, r0.train)


def test_rank_that_waits_too_long_says_so(cache, tok):
    with pytest.raises(CompanionError, match="waited"):
        cached_token_streams({"corpus": "never"}, lambda: [], tok, rank=1, wait_s=0.5)


def test_tokenizer_hash_changes_with_the_vocabulary(tok, tmp_path):
    other = load_tokenizer()
    other.add_tokens(["zzzyzzy"])
    assert tokenizer_sha256(tok) != tokenizer_sha256(other)


# ------------------------------------------------------------------ blocks and vocabulary


def test_blocks_are_views_of_the_stream():
    stream = np.arange(1000, dtype=np.uint16)
    blocks = TokenBlocks(stream, 16)
    ref = torch.from_numpy(stream[: 62 * 16].astype(np.int64)).view(62, 16)
    assert blocks.shape == (62, 16)
    assert torch.equal(blocks.tensor(), ref)
    idx = torch.tensor([5, 0, 61, 5])
    assert torch.equal(blocks[idx], ref[idx])
    assert torch.equal(blocks[10:20][3:5].tensor(), ref[13:15])
    with pytest.raises(IndexError):
        blocks[torch.tensor([62])]


def test_compact_vocabulary_matches_a_counter():
    rng = np.random.default_rng(1)
    stream = rng.zipf(1.5, size=20000) % 300
    special = [0, 100, 101, 102, 103]
    kept, lookup = compact_vocabulary(stream, 300, special, top_k=50, chunk=777)
    counts = Counter(int(t) for t in stream if t not in special)
    # reference: most common by count, ties to the smaller id
    ref = [t for t, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:50]]
    assert kept == special + ref
    assert all(lookup[t] == kept.index(t) for t in kept)
    rare = [t for t in range(300) if t not in kept]
    assert set(lookup[rare].tolist()) == {1}  # [UNK]'s new id


def test_corpus_too_small_for_one_block_is_a_clear_error(tok):
    with pytest.raises(CompanionError, match="fewer than one block"):
        build_token_data(_docs(20), seq_len=4096, tokenizer=tok, top_k=10)


def test_token_data_of_a_named_corpus_records_its_hashes(cache):
    data = token_data_for_corpus("python-docs", 64, top_k=512)
    s = data.summary()
    assert s["corpus"] == "python-docs" and len(s["documents_sha256"]) == 64
    assert len(s["tokenizer_sha256"]) == 64 and s["token_cache"]
    assert s["train_tokens"] == data.train.numel() > 50_000
    assert data.vocab_size == 517


def test_online_corpus_needs_a_token_budget(cache):
    with pytest.raises(CompanionError, match="token budget"):
        token_data_for_corpus("slimpajama", 64)


def test_unigram_reference_is_the_smoothed_training_frequencies_on_held_out_targets(tok):
    from companion.train.text.data import unigram_cross_entropy

    data = build_token_data(_docs(60), seq_len=16, tokenizer=tok, top_k=30)
    tr, ev = data.train.tensor().ravel().tolist(), data.eval.tensor().ravel().tolist()
    for mode, first in (("encoder", 5), ("decoder", 0)):
        ids = range(first, data.vocab_size)
        c = Counter(t for t in tr if t >= first)
        total = sum(c.values()) + len(ids)
        held = [t for t in ev if t >= first]
        ref = -sum(np.log((c[t] + 1) / total) for t in held) / len(held)
        assert unigram_cross_entropy(data, mode) == pytest.approx(ref, rel=1e-9)


def test_the_token_build_records_the_same_document_hash_as_the_corpus():
    import hashlib
    import io

    from companion.train.text.data import load_tokenizer
    from companion.train.text.tokens import tokenize_documents

    docs = ["Alpha beta.", "", "Gamma délta epsilon.", "zeta"] * 5 + [f"doc {i}" for i in range(10)]   # (repeats go where their first copy went: distinct ones are held out)
    # the documented format, computed here with hashlib directly
    h = hashlib.sha256()
    for d in docs:
        h.update(len(d.encode("utf-8")).to_bytes(8, "little") + d.encode("utf-8"))
    counts = tokenize_documents(iter(docs), load_tokenizer(), io.BytesIO(), io.BytesIO(), eval_every=10)
    assert counts["documents_sha256"] == documents_sha256(docs) == h.hexdigest()


def test_a_truncated_archive_is_listed_as_corrupt_not_fetched(cache, capsys):
    from companion.cli import main

    _need("kjv")
    link = cache / "archives" / CORPORA["kjv"].archive
    data = link.read_bytes()
    link.unlink()
    link.write_bytes(data[: len(data) // 2])
    capsys.readouterr()
    assert main(["corpus", "list"]) == 0
    line = next(l for l in capsys.readouterr().out.splitlines() if l.startswith("kjv"))
    assert "corrupt" in line and "fetched" not in line.replace("fetches", "").replace("not fetched", "")


def test_the_fetch_child_dies_with_its_parent(tmp_path):
    """A killed fetch leaves no pip behind: the child asks to receive SIGKILL when its
    parent dies (Linux)."""
    import os
    import signal
    import subprocess
    import sys
    import time

    if not sys.platform.startswith("linux"):
        pytest.skip("parent-death signals are Linux-only")
    pidfile = tmp_path / "child.pid"
    child_py = tmp_path / "child.py"
    child_py.write_text(f"import os, time\nopen({str(pidfile)!r}, 'w').write(str(os.getpid()))\ntime.sleep(60)\n")
    parent_py = tmp_path / "parent.py"
    parent_py.write_text("import subprocess, sys\nfrom companion.train.text.corpora import _die_with_parent\n"
                         f"p = subprocess.Popen([sys.executable, {str(child_py)!r}], preexec_fn=_die_with_parent)\n"
                         "p.wait()\n")
    parent = subprocess.Popen([sys.executable, str(parent_py)])
    for _ in range(100):
        if pidfile.exists() and pidfile.read_text():
            break
        time.sleep(0.1)
    child = int(pidfile.read_text())
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    for _ in range(50):
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        os.kill(child, signal.SIGKILL)
        pytest.fail("the child outlived its killed parent")


def test_a_killed_token_build_leaves_no_folder_after_the_next_build(cache, tok):
    import subprocess
    import sys

    from companion.base.cache import cache_dir
    from companion.train.text.tokens import cached_token_streams

    root = cache_dir("tokens")
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = root / f".abc123.tmp-{dead.pid}"
    stale.mkdir()
    (stale / "train.bin").write_bytes(b"\0" * 1000)
    docs = _docs()
    cached_token_streams({"corpus": "test-stale", "documents_sha256": "x"}, lambda: docs, tok)
    assert not stale.exists()


def test_tokenizing_leaves_the_tokenizer_hash_as_a_fresh_copy_has_it():
    """Encoding through transformers resets the backend's truncation and padding, which the
    hash reads: the token cache's key must not depend on whether the tokenizer was used."""
    import io

    from companion.train.text.data import load_tokenizer
    from companion.train.text.tokens import tokenize_documents, tokenizer_sha256

    used = load_tokenizer()
    tokenize_documents(_docs(), used, io.BytesIO(), io.BytesIO())
    assert tokenizer_sha256(used) == tokenizer_sha256(load_tokenizer())
