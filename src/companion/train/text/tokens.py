"""Token files: a corpus tokenized once, in batches, into memory-mapped streams.

A corpus becomes two flat token streams, ``train.bin`` and ``eval.bin`` (``uint16`` when
the vocabulary fits, else ``uint32``), each document followed by ``[SEP]``.  Every
``eval_every``-th document goes to the held-out stream, so the split is by document and
fixed by the corpus's order; for a corpus held in memory (every offline one, a local file)
a repeat of an earlier document goes where that one went, so no text is held out that
training also holds (:func:`position_split`); a document with no text (empty, whitespace)
is no document.  The folder is named by a hash of what determines its
content (the corpus's document hash, the tokenizer's full serialisation, the split rule);
``meta.json`` records those and each file's size and sha256.

Training blocks are zero-copy views of a stream (:class:`TokenBlocks`): the block size is
not part of the key, since reshaping a stream costs nothing; a batch is gathered from the
memory map only when it is drawn.  The compact vocabulary (``top_k`` most frequent
training ids) is a lookup table applied to each gathered batch.  So memory does not grow
with the corpus: the full English Wikipedia (about 4 G tokens) is an 8 GB file on disk.

Several processes (``torchrun``): rank 0 builds the folder under a temporary name and
renames it into place; the other ranks wait for it and map it.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Iterator

import numpy as np
import torch

from ...base.cache import cache_dir, sha256_file
from ...base.errors import CompanionError
from .corpora import DocumentHasher, checked_document

__all__ = ["TokenBlocks", "TokenStreams", "document_separator", "tokenizer_sha256", "tokenize_documents", "in_memory_streams",
           "position_split", "position_split_moves", "position_split_label", "read_key", "check_eval_every",
           "cached_token_streams", "compact_vocabulary", "FORMAT_VERSION"]

FORMAT_VERSION = 1
_VERIFY_BELOW = 512 << 20  # hash token files smaller than this on every load


def document_separator(tok) -> int:
    """The id written after each document: BERT's ``[SEP]``, else ``<|endoftext|>`` (GPT-2
    style vocabularies such as SmolLM2's), else the tokenizer's end-of-sequence token."""
    vocab = tok.get_vocab()
    for name in ("[SEP]", "<|endoftext|>"):
        if name in vocab:
            return int(vocab[name])
    if getattr(tok, "eos_token_id", None) is not None:
        return int(tok.eos_token_id)
    raise CompanionError("the tokenizer has no document separator ([SEP], <|endoftext|> or an end-of-sequence "
                         "token); use a BERT WordPiece tokenizer or a checkpoint's own tokenizer.")


def tokenizer_sha256(tok) -> str:
    """Hash of everything that decides how the tokenizer splits text (vocabulary, rules)."""
    backend = getattr(tok, "backend_tokenizer", None)
    if backend is not None:
        blob = backend.to_str()
    else:  # slow tokenizers: the vocabulary, the lower-casing flag and every other setting
        blob = json.dumps([sorted(tok.get_vocab().items()),
                           bool(getattr(tok, "do_lower_case", False))])
        settings = _slow_settings(tok)
        if settings:   # (none: the key as before) strip_accents, never_split, ... split text too
            blob += json.dumps(settings, sort_keys=True, default=_plain)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def _plain(value):
    """A JSON stand-in for a setting (a set in sorted order, the same in every process)."""
    return sorted(map(repr, value)) if isinstance(value, (set, frozenset)) else repr(value)


def _slow_settings(tok) -> dict:
    """The settings of a Python (slow) tokenizer that decide how it splits text, beyond its
    vocabulary and lower-casing: its constructor's arguments (file paths and its name left
    out) and the state of its word splitters (``basic_tokenizer``, ``wordpiece_tokenizer``,
    changed after construction too)."""
    out = {k: v for k, v in sorted(getattr(tok, "init_kwargs", {}).items())
           if not k.endswith("_file") and k not in ("name_or_path", "do_lower_case", "model_max_length")}
    for part in ("basic_tokenizer", "wordpiece_tokenizer"):
        obj = getattr(tok, part, None)
        if obj is not None:
            out[part] = {k: v for k, v in sorted(vars(obj).items()) if k != "vocab"}
    return out


@dataclass
class TokenStreams:
    """The train and held-out token streams of one corpus, and how they were made."""

    train: np.ndarray
    eval: np.ndarray
    meta: dict = field(default_factory=dict)
    folder: Path | None = None


def _dtype_for(vocab: int):
    return np.uint16 if vocab <= np.iinfo(np.uint16).max + 1 else np.uint32


@contextlib.contextmanager
def _backend_settings_kept(tok):
    """Leave a fast tokenizer's truncation and padding settings as they were found.

    Encoding through ``transformers`` resets them (a freshly loaded BERT tokenizer truncates
    and pads at 128), and :func:`tokenizer_sha256` hashes the backend with them: without
    this, the same tokenizer would key the token cache one way before its first use and
    another way after it, and the corpus would be tokenized again."""
    backend = getattr(tok, "backend_tokenizer", None)
    if backend is None:
        yield
        return
    truncation, padding = backend.truncation, backend.padding
    split = getattr(backend, "encode_special_tokens", None)   # set by split_special_tokens=True
    try:
        yield
    finally:
        if split is not None:
            backend.encode_special_tokens = split
        if truncation is None:
            backend.no_truncation()
        else:
            backend.enable_truncation(**truncation)
        if padding is None:
            backend.no_padding()
        else:
            backend.enable_padding(**padding)


def tokenize_documents(docs: Iterable[str], tok, sink_train, sink_eval, eval_every: int = 10,
                       batch_docs: int = 256, max_tokens: int | None = None,
                       progress: Callable[[int, int], None] | None = None,
                       held_out: Callable[[int, str], bool] | None = None) -> dict:
    """Tokenize ``docs`` in batches and append the ids to two binary sinks (file objects).
    The text of a special token in a document is tokenized as text (``split_special_tokens``;
    none of the bundled corpora holds one, so their token caches are as before).

    ``held_out(index, text)``, when given, decides which documents are held out (e.g. by a
    hash of the text, or :func:`position_split`: by position, a repeat where its first copy
    went) instead of every ``eval_every``-th one (a streamed corpus: remembering every
    document seen would grow with the corpus).  A document that tokenizes to nothing (empty,
    whitespace) is skipped: no lone ``[SEP]``, not counted, no index.

    Returns counts: documents and tokens per split, and the content hash of the documents
    consumed.  ``max_tokens`` stops after the batch that reaches that many tokens in all.
    """
    check_eval_every(eval_every)
    sep = document_separator(tok)
    dtype = _dtype_for(len(tok))
    tok.model_max_length = 10**9  # documents are blocked later, never fed whole
    counts = {"train_docs": 0, "eval_docs": 0, "train_tokens": 0, "eval_tokens": 0}
    h = DocumentHasher()  # the same hash as corpora.documents_sha256, computed on the way
    index = 0
    batch: list[str] = []

    def by_position(index, _doc):
        return index % eval_every == eval_every - 1

    side = held_out if held_out is not None else by_position

    def flush():
        nonlocal index
        # the text of a special token ('[SEP]', '[MASK]' written in a document) is text: tokenized
        # as such, it neither cuts the document nor puts a mask the masking never chose
        enc = tok(batch, add_special_tokens=False, split_special_tokens=True)["input_ids"]
        for doc, ids in zip(batch, enc):
            if not ids:   # no text (empty, whitespace): no document, not a lone separator
                continue
            split = "eval" if side(index, doc) else "train"
            arr = np.asarray(ids + [sep], dtype=dtype)
            (sink_eval if split == "eval" else sink_train).write(arr.tobytes())
            counts[f"{split}_docs"] += 1
            counts[f"{split}_tokens"] += arr.size
            index += 1
        batch.clear()
        if progress is not None:
            progress(index, counts["train_tokens"] + counts["eval_tokens"])

    with _backend_settings_kept(tok):
        for n, doc in enumerate(docs):
            h.update(checked_document(doc, n))
            batch.append(doc)
            if len(batch) >= batch_docs:
                flush()
                if max_tokens and counts["train_tokens"] + counts["eval_tokens"] >= max_tokens:
                    break
        if batch:
            flush()
    if counts["eval_docs"] == 0:
        raise CompanionError(f"need at least {eval_every} distinct documents with text for a held-out split "
                             f"(a repeat goes where its first copy went); got {counts['train_docs']} documents.")
    counts["documents_sha256"] = h.hexdigest()
    counts["dtype"] = np.dtype(dtype).name
    return counts


def check_eval_every(eval_every) -> int:
    """``eval_every``, a whole number >= 2, else one line naming it (2.5 held out one document
    in five: index % 2.5 == 1.5)."""
    if isinstance(eval_every, bool) or not isinstance(eval_every, (int, np.integer)) or eval_every < 2:
        raise CompanionError(f"eval_every must be a whole number >= 2 (one document in eval_every is held "
                             f"out); got {eval_every!r}.")
    return int(eval_every)


_UNREAD = None   # what an uncased tokenizer drops: accents' combining marks, control and format characters


def read_key(doc: str) -> str:
    """``doc`` as an uncased WordPiece tokenizer reads it, for telling repeats apart: lower
    case, accents stripped (NFD, combining marks dropped), control and format characters
    (NUL, zero-width spaces, a BOM) dropped, whitespace left out (the tokenizer splits at
    punctuation whatever the spacing).  Two documents that read alike are one text to
    the model: 'The river' and 'the river  ' are the same token ids."""
    import re
    import unicodedata

    global _UNREAD
    if _UNREAD is None:
        _UNREAD = re.compile("[\x00-\x08\x0e-\x1f\x7f-\x9f\u00ad\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff"
                             "\u200b-\u200f\u202a-\u202e\u2060-\u2064\u20d0-\u20ff\ufe20-\ufe2f\ufeff\ufffd]")
    t = doc.lower()
    if not t.isascii():
        t = unicodedata.normalize("NFD", t)
    return "".join(_UNREAD.sub("", t).split())


def position_split(eval_every: int, exact: bool = False) -> Callable[[int, str], bool]:
    """The held-out rule by position: document ``index`` (counting documents with text) is
    held out when ``index % eval_every == eval_every - 1``, except that a repeat of an earlier
    document goes where that one went, so no text is on both sides (python-docs repeats 304
    of its 1,605 paragraphs; by position alone 54 of its 160 held-out ones were training text).
    A repeat is a document that reads as an earlier one (:func:`read_key`: case, accents,
    spacing aside), since those give the tokenizer the same ids; ``exact`` compares the text
    itself (the rule before, for telling which token caches it made)."""
    first: dict[bytes, bool] = {}

    def held(index: int, doc: str) -> bool:
        text = doc if exact else read_key(doc)
        key = hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()
        return first.setdefault(key, index % eval_every == eval_every - 1)

    return held


#: the ``split`` a token cache's key records when the held-out rule by position moves documents
#: (a repeat of the same text, or an empty document), and when it moves more than the same text
#: would (a repeat read alike but written otherwise: its caches hold other streams)
SPLIT_BY_POSITION = "by position; a repeat where its first copy went; no empty documents"
SPLIT_BY_POSITION_AS_READ = ("by position; a repeat (as the uncased tokenizer reads it) where its first copy went; "
                             "no empty documents")


def position_split_label(docs: Iterable[str], eval_every: int) -> str | None:
    """The ``split`` entry of a token cache's key for ``docs`` under :func:`position_split`:
    None where the rule places them as every ``eval_every``-th document by position did (the
    keys of caches made before the rule stay), :data:`SPLIT_BY_POSITION` where exact repeats
    or empty documents move, :data:`SPLIT_BY_POSITION_AS_READ` where repeats written otherwise
    move too."""
    held, exact, index = position_split(eval_every), position_split(eval_every, exact=True), 0
    label = None
    for doc in docs:
        if not doc.strip():
            label = label or SPLIT_BY_POSITION
            continue
        side, side_exact = held(index, doc), exact(index, doc)
        if side != side_exact:
            return SPLIT_BY_POSITION_AS_READ
        if side != (index % eval_every == eval_every - 1):
            label = SPLIT_BY_POSITION
        index += 1
    return label


def position_split_moves(docs: Iterable[str], eval_every: int) -> bool:
    """Whether :func:`position_split` places ``docs`` otherwise than every ``eval_every``-th
    document by position did (a repeat across the split, or a document of no text: whitespace
    alone), i.e. whether a token cache made before that rule holds other streams."""
    return position_split_label(docs, eval_every) is not None


def in_memory_streams(docs: list[str], tok, eval_every: int = 10) -> TokenStreams:
    """Tokenize a small list of documents into in-memory streams (no cache)."""
    tr, ev = io.BytesIO(), io.BytesIO()
    meta = tokenize_documents(docs, tok, tr, ev, eval_every=eval_every,
                              held_out=position_split(check_eval_every(eval_every)))
    dtype = np.dtype(meta["dtype"])
    meta.update(tokenizer_sha256=tokenizer_sha256(tok), eval_every=eval_every)
    return TokenStreams(np.frombuffer(tr.getvalue(), dtype=dtype),
                        np.frombuffer(ev.getvalue(), dtype=dtype), meta)


def _key(source: dict) -> str:
    blob = json.dumps(source, sort_keys=True).encode()
    return hashlib.sha256(blob).hexdigest()[:20]


def _load(folder: Path, expect: dict) -> TokenStreams:
    from ...base.paths import regular_file

    try:
        regular_file(folder / "meta.json", "token cache file")   # a FIFO would block for ever
        meta = json.loads((folder / "meta.json").read_text())
    except (OSError, json.JSONDecodeError, CompanionError) as err:
        raise CompanionError(f"token cache {folder} has no readable meta.json ({err}); delete "
                             "the folder and it is rebuilt on the next run.") from err
    def bad_shape(why):
        return CompanionError(f"token cache {folder}: its meta.json {why}; delete the folder and it is "
                              "rebuilt on the next run.")

    if not isinstance(meta, dict) or not isinstance(meta.get("source", {}), dict):
        raise bad_shape("is not an object with a 'source' object")
    for key in ("train_tokens", "eval_tokens"):
        n = meta.get(key)
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise bad_shape(f"gives {key} = {n!r}, not a count")
    if meta.get("dtype") not in ("uint16", "uint32", "int32", "int64"):
        raise bad_shape(f"gives dtype = {meta.get('dtype')!r}, not an integer token type")
    for k, v in expect.items():
        if meta.get("source", {}).get(k) != v:
            raise CompanionError(
                f"token cache {folder} was built with another {k} ({meta.get('source', {}).get(k)!r:.40} "
                f"instead of {v!r:.40}); delete the folder and it is rebuilt on the next run.")
    extra = sorted(set(meta.get("source", {})) - set(expect))
    if extra:
        raise CompanionError(f"token cache {folder} was built with {extra[0]} = {meta['source'][extra[0]]!r:.40}, "
                             "which this corpus does not have; delete the folder and it is rebuilt on the next run.")
    dtype = np.dtype(meta["dtype"])
    arrays = {}
    for split in ("train", "eval"):
        path = folder / f"{split}.bin"
        want = meta[f"{split}_tokens"] * dtype.itemsize
        size = path.stat().st_size if path.exists() else -1
        if size != want:
            raise CompanionError(
                f"token cache {path} holds {size} bytes, its meta.json says {want} (truncated "
                "or replaced); delete the folder and it is rebuilt on the next run.")
        if want < _VERIFY_BELOW and sha256_file(path, what="token cache file") != meta[f"{split}_sha256"]:
            raise CompanionError(
                f"token cache {path} does not match its recorded sha256 (corrupt); delete the "
                "folder and it is rebuilt on the next run.")
        arrays[split] = np.memmap(path, dtype=dtype, mode="r") if want else np.zeros(0, dtype)
    return TokenStreams(arrays["train"], arrays["eval"], meta, folder)


def cached_token_streams(source: dict, documents: Callable[[], Iterable[str]], tok,
                         eval_every: int = 10, max_tokens: int | None = None,
                         rank: int | None = None, wait_s: float = 3600,
                         progress: Callable[[str], None] | None = None,
                         held_out: Callable[[int, str], bool] | None = None) -> TokenStreams:
    """The token streams of a corpus, built once into ``<cache>/tokens/<key>`` and mapped.

    ``source`` names the corpus (e.g. ``{"corpus": "wikipedia", "documents_sha256": ...}``)
    and goes into the key together with the tokenizer hash, the split rule and
    ``max_tokens``.  ``documents`` is called only when the folder has to be built.
    ``held_out`` replaces the every-``eval_every``-th split (see :func:`tokenize_documents`);
    ``source`` must then name that rule (it is part of the key).
    """
    if rank is None:
        text = os.environ.get("RANK", "0").strip() or "0"
        if not text.isdigit():   # -1 waited an hour for a rank 0 that never came
            raise CompanionError(f"RANK={text!r} is not a process number (0, 1, ...); unset it outside a "
                                 "torchrun launch, or let torchrun set it.")
        rank = int(text)
    source = dict(source, tokenizer_sha256=tokenizer_sha256(tok), eval_every=eval_every,
                  max_tokens=max_tokens, format=FORMAT_VERSION)
    root = cache_dir("tokens")
    folder = root / _key(source)
    # all of the key, not the tokenizer alone: a whole cache of another corpus under this
    # folder's name (copied, renamed, swapped) was served as this corpus's tokens
    expect = json.loads(json.dumps(source))
    if (folder / "meta.json").exists():
        return _load(folder, expect)
    if rank != 0:  # another process builds it: wait, then map it
        t0 = time.time()
        while not (folder / "meta.json").exists():
            if time.time() - t0 > wait_s:
                raise CompanionError(f"rank {rank} waited {wait_s:.0f} s for rank 0 to build the "
                                     f"token cache {folder}; check rank 0's log.")
            time.sleep(1.0)
        return _load(folder, expect)
    from ...base.cache import remove_abandoned
    from .corpora import machine_tag, writer_pid

    # builds of killed processes of this machine; another machine's (a cache on a shared file
    # system) are never removed here: its pid names no process on this one, and a build may run
    # for days while its folder's time stays that of its start
    remove_abandoned(root, ".*.tmp-*", writer_pid)
    import threading   # two threads of one process build in folders of their own

    tmp = root / f".{folder.name}.tmp-{threading.get_ident()}-{os.getpid()}@{machine_tag()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    t0 = time.time()
    try:
        with open(tmp / "train.bin", "wb") as tr, open(tmp / "eval.bin", "wb") as ev:
            def tick(docs, tokens):
                if progress is not None and docs % 2048 < 256:
                    progress(f"tokenized {docs} documents, {tokens} tokens")
            counts = tokenize_documents(documents(), tok, tr, ev, eval_every=eval_every,
                                        max_tokens=max_tokens, progress=tick, held_out=held_out)
        meta = dict(counts, source=source, format=FORMAT_VERSION,
                    build_seconds=round(time.time() - t0, 2),
                    train_sha256=sha256_file(tmp / "train.bin"),
                    eval_sha256=sha256_file(tmp / "eval.bin"))
        (tmp / "meta.json").write_text(json.dumps(meta, indent=2) + "\n")
        try:
            os.replace(tmp, folder)
        except OSError:  # another process finished first: use its folder
            shutil.rmtree(tmp, ignore_errors=True)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return _load(folder, expect)


def compact_vocabulary(train: np.ndarray, vocab_size: int, special_ids: list[int],
                       top_k: int, chunk: int = 1 << 24) -> tuple[list[int], np.ndarray]:
    """The ``top_k`` most frequent training ids after the special ids, and a lookup table.

    Returns ``(kept, lookup)``: ``kept[new] = old`` and ``lookup[old] = new`` (every id that
    is not kept maps to the new id of ``[UNK]``, ``special_ids[1]``).  Ties in frequency
    go to the smaller id.  Counted in chunks, so a memory-mapped stream is never loaded whole.
    """
    counts = np.zeros(vocab_size, dtype=np.int64)
    for i in range(0, train.shape[0], chunk):
        counts += np.bincount(np.asarray(train[i:i + chunk]), minlength=vocab_size)[:vocab_size]
    counts[special_ids] = -1
    order = np.lexsort((np.arange(vocab_size), -counts))  # by count desc, then id asc
    regular = [int(t) for t in order[:top_k] if counts[t] > 0]
    kept = list(special_ids) + regular
    lookup = np.full(vocab_size, kept.index(special_ids[1]), dtype=np.int64)
    lookup[kept] = np.arange(len(kept))
    return kept, lookup


class TokenBlocks:
    """``n`` blocks of ``seq_len`` tokens over a flat stream, gathered on demand.

    ``blocks[idx]`` (an int, a LongTensor or an array of block indices) returns a
    ``LongTensor [len(idx), seq_len]``; ``blocks[a:b]`` is again a :class:`TokenBlocks`
    view; ``blocks.tensor()`` materialises all of it (small data only).  With ``lookup``
    every id is mapped through it (the compact vocabulary).
    """

    def __init__(self, stream: np.ndarray, seq_len: int, lookup: np.ndarray | None = None,
                 start: int = 0, stop: int | None = None):
        if isinstance(seq_len, bool) or not isinstance(seq_len, (int, np.integer)) or seq_len < 1:
            raise CompanionError(f"the block length (seq_len) must be a whole number of at least 1 token, "
                                 f"not {seq_len!r}; give e.g. --seq-len 128.")
        seq_len = int(seq_len)
        n = stream.shape[0] // seq_len
        if n == 0 and stop is None:
            raise CompanionError(f"only {stream.shape[0]} tokens: fewer than one block of "
                                 f"{seq_len}; use a larger corpus or a shorter --seq-len.")
        self.stream, self.seq_len, self.lookup = stream, seq_len, lookup
        self.start, self.stop = start, n if stop is None else stop

    @property
    def shape(self) -> tuple[int, int]:
        return (self.stop - self.start, self.seq_len)

    def __len__(self) -> int:
        return self.stop - self.start

    def numel(self) -> int:
        return len(self) * self.seq_len

    def _gather(self, rows: np.ndarray) -> torch.Tensor:
        rows = rows + self.start
        offsets = rows[:, None] * self.seq_len + np.arange(self.seq_len)[None, :]
        ids = np.asarray(self.stream[offsets.ravel()], dtype=np.int64).reshape(offsets.shape)
        if self.lookup is not None:
            ids = self.lookup[ids]
        return torch.from_numpy(ids)

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            a, b, step = idx.indices(len(self))
            if step != 1:
                raise ValueError("TokenBlocks slices take no step.")
            return TokenBlocks(self.stream, self.seq_len, self.lookup, self.start + a,
                               self.start + max(a, b))
        if isinstance(idx, torch.Tensor):
            idx = idx.cpu().numpy()
        raw = np.asarray(idx)
        if raw.dtype == np.bool_:   # a mask selects as it does on a tensor (it was read as indices 0 and 1)
            if raw.shape != (len(self),):
                raise IndexError(f"a block mask must have one entry per block ({len(self)}); got shape {raw.shape}.")
            idx = np.flatnonzero(raw)
        elif raw.size and not np.issubdtype(raw.dtype, np.integer):
            raise IndexError(f"blocks are indexed by whole numbers, not {raw.dtype} (1.7 was read as block 1).")
        rows = np.atleast_1d(np.asarray(idx, dtype=np.int64))
        if rows.size and (rows.min() < 0 or rows.max() >= len(self)):
            raise IndexError(f"block index out of range [0, {len(self)}).")
        out = self._gather(rows)
        return out[0] if np.ndim(idx) == 0 else out

    def tensor(self) -> torch.Tensor:
        return self._gather(np.arange(len(self), dtype=np.int64))

    def to(self, device) -> torch.Tensor:
        return self.tensor().to(device)
