"""Start training from a pretrained checkpoint, under either objective (the objective swap).

The plan (``data/runs/objective_swap_plan.md``) fine-tunes a trained encoder with a causal
mask on next-token prediction, against a control that keeps its own masked objective.
:func:`load_pretrained` builds the training model of :mod:`companion.train.model` for a
mode (``encoder``: ``BertForMaskedLM``; ``decoder``/``authors-decoder``: ``BertLMHeadModel``
with a causal mask) and loads the checkpoint's weights into it, so that at step 0 every
layer's form ``W_q^T W_k`` is exactly the checkpoint's (what ``companion score`` reads).

Supported: BERT-family encoders (``model_type`` ``bert``), e.g. the zoo's
``all-minilm-l6-v2``, or a local Hugging Face folder, or a hub id when online.  A
sentence-embedding checkpoint ships no language-model head; the head's output layer is tied
to the input embeddings (as in BERT) and its transform starts from the library's
initialisation, which the run's seed fixes.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from torch import nn

from ..errors import CompanionError
from .model import MODES

__all__ = ["SUPPORTED_TYPES", "pretrained_folder", "checkpoint_shape", "load_pretrained"]

#: model types the swap path can load (a conversion per family, as in the readers)
SUPPORTED_TYPES = ("bert",)


def pretrained_folder(source: str) -> str:
    """The folder (or hub id) of ``source``: a zoo name, a local Hugging Face folder or a hub id."""
    from ..zoo import is_zoo_name, zoo_path

    if is_zoo_name(source):
        return str(zoo_path(source))
    return str(source)


def _model_type(folder: str) -> str | None:
    cfg = Path(folder) / "config.json"
    if not cfg.is_file():
        return None  # a hub id: transformers reads its config
    try:
        return json.loads(cfg.read_text()).get("model_type")
    except (OSError, json.JSONDecodeError) as exc:
        raise CompanionError(f"cannot read {cfg}: {exc}.") from None


def checkpoint_shape(source: str) -> tuple[int, int, int]:
    """``(layers, width, heads)`` of a checkpoint, from its configuration."""
    from ..adapters.families import positive_int

    folder = pretrained_folder(source)
    cfg_path = Path(folder) / "config.json"
    if cfg_path.is_file():
        try:
            cfg = json.loads(cfg_path.read_text())
        except (OSError, json.JSONDecodeError) as exc:
            raise CompanionError(f"cannot read {cfg_path}: {exc}.") from None
    else:
        from transformers import AutoConfig

        try:
            cfg = AutoConfig.from_pretrained(folder).to_dict()
        except (OSError, ValueError) as exc:
            raise CompanionError(f"cannot read the configuration of {source}: {str(exc).splitlines()[0]}") from None
    if cfg.get("model_type") not in SUPPORTED_TYPES:
        raise CompanionError(f"{source} is a {cfg.get('model_type')!r} checkpoint; starting training from a "
                             f"checkpoint supports {', '.join(SUPPORTED_TYPES)} (e.g. all-minilm-l6-v2) for now.")
    return tuple(positive_int(cfg.get(k), k) for k in ("num_hidden_layers", "hidden_size", "num_attention_heads"))


def load_pretrained(source: str, mode: str = "encoder", seed: int = 0,
                    attn_implementation: str = "eager") -> nn.Module:
    """The training model for ``mode`` with the weights of ``source`` (see the module doc).

    Refused with one line before any training: an unknown mode, a checkpoint of a family
    the path does not support, or one whose vocabulary has no word embeddings to tie a
    head to.
    """
    from transformers import BertForMaskedLM, BertLMHeadModel
    from transformers.utils import logging as hf_logging

    if mode not in MODES:
        raise CompanionError(f"unknown mode {mode!r}; choose one of {MODES}.")
    folder = pretrained_folder(source)
    kind = _model_type(folder)
    if kind is not None and kind not in SUPPORTED_TYPES:
        raise CompanionError(f"{source} is a {kind!r} checkpoint; starting training from a checkpoint "
                             f"supports {', '.join(SUPPORTED_TYPES)} (e.g. all-minilm-l6-v2) for now.")
    cls = BertForMaskedLM if mode == "encoder" else BertLMHeadModel
    torch.manual_seed(seed)  # the new head's transform: fixed by the run's seed
    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()  # "some weights were newly initialised": the head, said above
    try:
        model = cls.from_pretrained(folder, is_decoder=mode != "encoder", add_cross_attention=False,
                                    tie_word_embeddings=True, attn_implementation=attn_implementation)
    except (OSError, ValueError) as exc:
        raise CompanionError(f"cannot load {source} as a BERT training model: {str(exc).splitlines()[0]}") from None
    finally:
        hf_logging.set_verbosity(verbosity)
    head = model.get_output_embeddings()
    if head is None or head.weight.data_ptr() != model.get_input_embeddings().weight.data_ptr():
        raise CompanionError(f"{source}: the language-model head is not tied to the input embeddings.")
    return model
