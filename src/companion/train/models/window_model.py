"""How hard is masked prediction on a token stream? A count model with a small window.

Table 1's Wikipedia and RedPajama rows were trained on text that the released code joined
character by character with spaces before tokenizing (the errata chapter, E37): with an
uncased WordPiece tokenizer every non-space character becomes a token of its own and the
word boundaries disappear.  Masked prediction then asks for one character given its
neighbours, a much easier task than predicting a masked word piece.  This module measures
how much easier, with the simplest model that uses context: the counts of each centre token
given ``window`` tokens on either side, interpolated with the unigram (a token seen after a
context ``n`` times gets weight ``n / (n + 1)`` on that context's counts).

It is a yardstick, not a rival to a Transformer: any model that learns the same counts does
at least as well, so its held-out loss is an upper bound on what masked prediction needs.
"""

from __future__ import annotations

from typing import Iterable

import numpy as np

from ...base.errors import CompanionError

__all__ = ["char_joined_ids", "masked_window_cross_entropy"]


def char_joined_ids(docs: Iterable[str], vocabulary: dict[str, int] | None = None
                    ) -> tuple[list[np.ndarray], dict[str, int]]:
    """Each document as the character tokens an uncased tokenizer makes of ``" ".join(text)``.

    Read as BERT's uncased tokenizer reads it: lower-cased, accents stripped (``"é"`` is
    ``"e"``: NFD, combining marks dropped), control and format characters dropped (NUL, a
    zero-width space), whitespace dropped (joining with spaces and splitting on whitespace
    leaves one token per non-space character; the original spaces vanish).  A character the
    tokenizer's vocabulary lacks (its ``[UNK]``) keeps an id of its own here.  ``vocabulary``
    maps characters to ids; pass the training split's to encode the held-out split (unseen
    characters get one shared id).
    """
    vocab = {} if vocabulary is None else dict(vocabulary)
    grow = vocabulary is None
    unseen = len(vocab)
    out = []
    for doc in docs:
        chars = [c for c in _as_read(doc) if not c.isspace()]
        if grow:
            for c in chars:
                vocab.setdefault(c, len(vocab))
            out.append(np.array([vocab[c] for c in chars], dtype=np.int64))
        else:
            out.append(np.array([vocab.get(c, unseen) for c in chars], dtype=np.int64))
    return out, vocab


def _as_read(doc: str) -> str:
    """``doc`` lower-cased, accents stripped and control/format characters dropped, as the
    uncased WordPiece normaliser does (BERT's ``clean_text``, ``strip_accents``, ``lowercase``)."""
    import unicodedata

    t = doc.lower()
    if t.isascii():
        return "".join(c for c in t if c.isprintable() or c.isspace()) if not t.isprintable() else t
    t = unicodedata.normalize("NFD", t)
    return "".join(c for c in t if c.isspace() or unicodedata.category(c) not in ("Mn", "Cc", "Cf", "Cs", "Co")
                   and c != "\ufffd")


def _windows(seq: np.ndarray, window: int) -> tuple[list[np.ndarray], np.ndarray]:
    """The neighbour columns and the centre token of every position with a full window."""
    n = seq.shape[0] - 2 * window
    if n <= 0:
        return [np.empty(0, np.int64)] * (2 * window), np.empty(0, np.int64)
    cols = [seq[window + off: window + off + n] for off in [*range(-window, 0), *range(1, window + 1)]]
    return cols, seq[window: window + n]


def _compress(columns: list[np.ndarray], n: int) -> np.ndarray:
    """One int64 id per distinct row of ``columns`` (folded pairwise, so nothing overflows)."""
    key = np.zeros(n, dtype=np.int64)
    for col in columns:
        _, key = np.unique(key * (int(col.max(initial=0)) + 1) + col, return_inverse=True)
        key = key.astype(np.int64)
    return key


def masked_window_cross_entropy(train: list[np.ndarray], held: list[np.ndarray], window: int,
                                vocab_size: int) -> float:
    """Held-out loss (nats per masked token) of the interpolated ``window``-each-side count model.

    ``train`` and ``held`` are lists of id arrays (documents; contexts never cross a
    document's end).  ``window = 0`` is the unigram (one shared empty context).  Every position of the held-out
    documents with a full window is scored.
    """
    import numbers

    if isinstance(window, bool) or not isinstance(window, numbers.Integral) or window < 0:   # 1.5 failed in a slice
        raise CompanionError(f"window must be >= 0, a whole number of tokens on either side; got {window!r}.")
    window = int(window)
    flat = np.concatenate(train) if train else np.empty(0, np.int64)
    if flat.size == 0:
        raise CompanionError("no training tokens to count.")
    held_lo = min((int(h.min(initial=0)) for h in held), default=0)
    held_hi = max((int(h.max(initial=0)) for h in held), default=0)
    if min(int(flat.min()), held_lo) < 0 or max(int(flat.max()), held_hi) >= vocab_size + 1:
        # (a negative held-out id indexed the unigram from its end: a silently wrong loss)
        raise CompanionError(f"token ids must lie in 0..{vocab_size}; pass the vocabulary size.")
    base = int(vocab_size) + 1
    uni = np.bincount(flat, minlength=base).astype(np.float64)
    p_uni = (uni + 1) / (uni.sum() + base)
    parts = [_windows(s, window) for s in [*train, *held]]
    n_train = sum(p[1].size for p in parts[:len(train)])
    centre = np.concatenate([p[1] for p in parts])
    if centre.size == n_train:
        raise CompanionError(f"no held-out position has {window} tokens on either side.")
    ctx = _compress([np.concatenate([p[0][c] for p in parts]) for c in range(2 * window)], centre.size)
    joint = ctx * base + centre          # ctx < number of positions, so this fits in int64
    ctx_n = np.bincount(ctx[:n_train], minlength=int(ctx.max()) + 1).astype(np.float64)
    joint_u, joint_n = np.unique(joint[:n_train], return_counts=True)
    c, q = ctx[n_train:], joint[n_train:]
    n = ctx_n[c]
    j = np.minimum(np.searchsorted(joint_u, q), joint_u.size - 1)
    k = np.where(joint_u[j] == q, joint_n[j], 0).astype(np.float64)
    lam = n / (n + 1.0)
    p = lam * np.divide(k, n, out=np.zeros_like(k), where=n > 0) + (1 - lam) * p_uni[centre[n_train:]]
    return float(-np.log(p).mean())
