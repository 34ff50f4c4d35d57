"""What a Hugging Face checkpoint's parameter count needs beyond its stored shapes.

``model.num_parameters()`` counts each parameter of the built model once.  The stored
tensors differ from those parameters in two ways that this module settles:

* **tied copies**: a model whose output matrix is its token embedding (``lm_head.weight``
  tied to ``transformer.wte.weight`` or ``model.embed_tokens.weight``), or whose encoder and
  decoder read the ``shared`` embedding, is often saved with the matrix under each name.
  Each copy is one parameter, counted once (:func:`tied_copies`).
* **tables left unstored**: transformers v5 saves a Marian model without its two sinusoidal
  position tables (they are computed at load), which ``num_parameters()`` still counts
  (:func:`unstored_parameters`).
"""

from __future__ import annotations

import re
from typing import Callable

import numpy as np

from ..base.errors import CompanionError

__all__ = ["tied_copies", "unstored_parameters"]

#: names of an input token embedding, most specific first
_EMBEDDINGS = ("shared.weight", "decoder.embed_tokens.weight", "embed_tokens.weight", "wte.weight",
               "word_embeddings.weight", "embed_in.weight", "tok_embeddings.weight")
#: names of an output matrix that a model may tie to its token embedding
_HEADS = ("lm_head.weight", "embed_out.weight", "cls.predictions.decoder.weight",
          "proj_out.weight",          # Whisper's output matrix, tied to its decoder's token embedding
          "decoder.weight",           # masked-LM heads: RoBERTa's and MPNet's lm_head.decoder, ALBERT's
                                      # predictions.decoder, ModernBERT's decoder
          "vocab_projector.weight")   # DistilBERT's
#: rows compared to tell a stored copy of the embedding from an output matrix of its own
_SAMPLE_ROWS = 16


def _tie_flag(config: dict):
    """``tie_word_embeddings`` as the configuration states it (a multimodal model's in its
    ``text_config``); ``None`` when it states none."""
    for cfg in (config, config.get("text_config") if isinstance(config, dict) else None):
        if isinstance(cfg, dict) and isinstance(cfg.get("tie_word_embeddings"), bool):
            return cfg["tie_word_embeddings"]
    return None


def _embedding_for(head: str, shapes: dict, dtypes: dict) -> str | None:
    prefix = head[: -len(next(h for h in _HEADS if head.endswith(h)))]
    found = [n for n in shapes if n.endswith(_EMBEDDINGS) and n != head and shapes[n] == shapes[head]
             and dtypes.get(n) == dtypes.get(head)]
    if not found:
        return None

    def rank(n):   # the embedding of the head's own model (same prefix) first, then by name
        return (not n.startswith(prefix), next(i for i, e in enumerate(_EMBEDDINGS) if n.endswith(e)), len(n))

    return min(found, key=rank)


def tied_copies(config: dict, shapes: dict, dtypes: dict,
                rows: Callable[[str, int, int], bytes]) -> set[str]:
    """The stored names that are a second copy of a parameter stored under another name.

    * ``<p>encoder.embed_tokens.weight`` and ``<p>decoder.embed_tokens.weight`` beside
      ``<p>shared.weight`` of the same shape: transformers ties them to it (T5, BART, Marian,
      Pegasus, ...).
    * ``<head>.decoder.bias`` beside ``<head>.bias`` (the masked-LM heads of BERT, RoBERTa, MPNet and
      ALBERT set one to the other).
    * an output matrix (``lm_head.weight``, ``embed_out.weight``, a masked-LM head's ``decoder.weight``,
      DistilBERT's ``vocab_projector.weight``, Whisper's ``proj_out.weight``)
      of the embedding's shape and type: tied when config.json's ``tie_word_embeddings`` is true,
      not when it is false; when config.json does not say, tied when the middle
      ``_SAMPLE_ROWS`` rows of both hold the same bytes (``rows(name, first_row, n_rows)``), which
      an output matrix trained or initialised apart from the embedding never does.
    """
    out: set[str] = set()
    for name, shape in shapes.items():
        for stack in ("encoder.embed_tokens.weight", "decoder.embed_tokens.weight"):
            if name.endswith(stack) and shapes.get(name[: -len(stack)] + "shared.weight") == shape:
                out.add(name)
        if name.endswith("decoder.bias") and name != "decoder.bias":   # the head's bias is its parent's
            if shapes.get(name[: -len("decoder.bias")] + "bias") == shape:
                out.add(name)
    flag = _tie_flag(config)
    if flag is False:
        return out
    for head in [n for n in shapes if n.endswith(_HEADS) and n not in out]:
        emb = _embedding_for(head, shapes, dtypes)
        if emb is None or len(shapes[head]) != 2 or 0 in shapes[head]:
            continue
        if flag is True or _same_rows(head, emb, shapes[head][0], rows):
            out.add(head)
    return out


def _same_rows(a: str, b: str, n_rows: int, rows) -> bool:
    n = min(_SAMPLE_ROWS, n_rows)
    first = (n_rows - n) // 2
    try:
        x, y = rows(a, first, n), rows(b, first, n)
    except (CompanionError, OSError, ValueError):
        return False   # unreadable here: the copy is counted, as before
    # all-equal rows (zeros, say) tell nothing about where the matrix came from
    return x == y and len(set(np.frombuffer(x, dtype=np.uint8).tolist())) > 1


_MARIAN_STACK = re.compile(r"^(?P<stack>(?:.*\.)?(?:encoder|decoder)\.)layers\.\d+\.")


def _config_int(config: dict, field: str, default: int) -> int:
    value = config.get(field, default)
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise CompanionError(f"config.json's {field} is {str(value)[:40]!r}, not a positive whole number, so the "
                             "Marian model's position tables cannot be counted; fix config.json.")
    return value


def unstored_parameters(config: dict, shapes: dict) -> int:
    """Parameters the model has that its file does not store: a Marian model's sinusoidal
    position tables (``max_position_embeddings x d_model`` per stack), which transformers v5
    leaves out of the files it saves and ``num_parameters()`` counts.  0 for other models, and
    for a Marian file that stores its tables."""
    if not isinstance(config, dict) or config.get("model_type") != "marian":
        return 0
    stacks = {m["stack"] for n in shapes if (m := _MARIAN_STACK.match(n))}
    missing = [s for s in stacks if s + "embed_positions.weight" not in shapes]
    if not missing:
        return 0
    # transformers' MarianConfig defaults, for a config.json that leaves them out
    return len(missing) * _config_int(config, "max_position_embeddings", 1024) * _config_int(config, "d_model", 1024)
