"""Start training from a pretrained checkpoint, under either objective (the objective swap).

The plan (``data/runs/objective_swap_plan.md``) fine-tunes a trained encoder with a causal
mask on next-token prediction, against a control that keeps its own masked objective.
:func:`load_pretrained` builds the training model of :mod:`companion.train.models.bert` for a
mode (``encoder``: ``BertForMaskedLM``; ``decoder``/``authors-decoder``: ``BertLMHeadModel``
with a causal mask) and loads the checkpoint's weights into it, so that at step 0 every
layer's form ``W_q^T W_k`` is exactly the checkpoint's (what ``companion score`` reads).

Supported: BERT-family encoders (``model_type`` ``bert``), e.g. the zoo's
``all-minilm-l6-v2``, and LLaMA-family decoders (``llama``), e.g. the zoo's
``smollm2-135m`` (a GGUF file, dequantized to float32 by transformers' GGUF loader), each
as a zoo name, a local Hugging Face folder or GGUF file, or a hub id when online.

* A sentence-embedding BERT ships no language-model head; the head's output layer is tied
  to the input embeddings (as in BERT) and its transform starts from the library's
  initialisation, which the run's seed fixes.  ``encoder`` gives ``BertForMaskedLM``,
  ``decoder`` ``BertLMHeadModel`` with a causal mask.
* A LLaMA becomes :class:`companion.train.models.llama.LlamaLM` (its own tied head), causal for
  ``decoder`` and ``authors-decoder``, bidirectional for ``encoder``.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from torch import nn

from ...base.errors import CompanionError
from ..text.data import is_gguf  # noqa: F401  (re-exported)
from .bert import MODES, is_causal

__all__ = ["SUPPORTED_TYPES", "pretrained_folder", "checkpoint_shape", "checkpoint_size", "load_pretrained"]

#: model types the swap path can load (a conversion per family, as in the readers)
SUPPORTED_TYPES = ("bert", "llama")


def pretrained_folder(source: str) -> str:
    """The folder (or hub id) of ``source``: a zoo name, a local Hugging Face folder or a hub id."""
    from ...zoo.registry import is_zoo_name, zoo_path

    if is_zoo_name(source):
        return str(zoo_path(source))
    return str(source)


def _gguf_config(path: str) -> dict:
    from transformers import AutoConfig

    try:
        return AutoConfig.from_pretrained(str(Path(path).parent), gguf_file=Path(path).name).to_dict()
    except (OSError, ValueError, KeyError) as exc:
        raise CompanionError(f"cannot read the configuration of {path}: {str(exc).splitlines()[0]}") from None


def _model_type(folder: str) -> str | None:
    if is_gguf(folder):
        return _gguf_config(folder).get("model_type")
    cfg = Path(folder) / "config.json"
    if not cfg.is_file():
        return None  # a hub id: transformers reads its config
    try:
        return json.loads(cfg.read_text()).get("model_type")
    except (OSError, json.JSONDecodeError) as exc:
        raise CompanionError(f"cannot read {cfg}: {exc}.") from None


def _unsupported(source: str, kind) -> CompanionError:
    return CompanionError(f"{source} is a {kind!r} checkpoint; starting training from a checkpoint supports "
                          f"{', '.join(SUPPORTED_TYPES)} (e.g. all-minilm-l6-v2 or smollm2-135m) for now.")


def checkpoint_shape(source: str) -> tuple[int, int, int]:
    """``(layers, width, heads)`` of a checkpoint, from its configuration."""
    from ...adapters.families import positive_int

    cfg = _checkpoint_config(source)
    return tuple(positive_int(cfg.get(k), k) for k in ("num_hidden_layers", "hidden_size", "num_attention_heads"))


def checkpoint_size(source: str, seq_len: int) -> dict:
    """The model a run started from ``source`` trains, in the fields of a named size
    (:class:`~companion.train.models.bert.ModelSize`), from the checkpoint's own configuration:
    a run's provenance recorded the named size's feed-forward width (4 x width), dropout and
    normalisation instead (SmolLM2-135M's 1,536 as 2,304, its RMS norm's 1e-5 as 1e-12, dropout
    it does not have as 0.1).  A LLaMA adds its key-value heads; it trains without dropout."""
    cfg = _checkpoint_config(source)
    llama = cfg.get("model_type") == "llama"
    layers, width, heads = checkpoint_shape(source)
    out = {"name": str(source), "num_hidden_layers": layers, "hidden_size": width, "num_attention_heads": heads,
           "intermediate_size": cfg.get("intermediate_size"), "seq_len": int(seq_len),
           "max_position_embeddings": cfg.get("max_position_embeddings"),
           "hidden_dropout_prob": 0.0 if llama else cfg.get("hidden_dropout_prob"),
           "attention_probs_dropout_prob": 0.0 if llama else cfg.get("attention_probs_dropout_prob"),
           "layer_norm_eps": cfg.get("rms_norm_eps") if llama else cfg.get("layer_norm_eps")}
    if llama:
        out["num_key_value_heads"] = cfg.get("num_key_value_heads") or heads
    return out


def _checkpoint_config(source: str) -> dict:
    """A supported checkpoint's configuration (its config.json, a GGUF file's, or a hub id's)."""
    folder = pretrained_folder(source)
    cfg_path = Path(folder) / "config.json"
    if is_gguf(folder):
        cfg = _gguf_config(folder)
    elif cfg_path.is_file():
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
    if not isinstance(cfg, dict) or cfg.get("model_type") not in SUPPORTED_TYPES:
        raise _unsupported(source, cfg.get("model_type") if isinstance(cfg, dict) else type(cfg).__name__)
    return cfg


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
        raise _unsupported(source, kind)
    if kind == "llama" or (kind is None and _hub_type(folder) == "llama"):
        return _load_llama(source, folder, causal=is_causal(mode))
    cls = BertLMHeadModel if is_causal(mode) else BertForMaskedLM
    torch.manual_seed(seed)  # the new head's transform: fixed by the run's seed
    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()  # "some weights were newly initialised": the head, said above
    try:
        model = cls.from_pretrained(folder, is_decoder=is_causal(mode), add_cross_attention=False,
                                    tie_word_embeddings=True, attn_implementation=attn_implementation)
    except (OSError, ValueError) as exc:
        raise CompanionError(f"cannot load {source} as a BERT training model: {str(exc).splitlines()[0]}") from None
    finally:
        hf_logging.set_verbosity(verbosity)
    head = model.get_output_embeddings()
    if head is None or head.weight.data_ptr() != model.get_input_embeddings().weight.data_ptr():
        raise CompanionError(f"{source}: the language-model head is not tied to the input embeddings.")
    return model


def _hub_type(name: str) -> str | None:
    from transformers import AutoConfig

    try:
        return AutoConfig.from_pretrained(name).model_type
    except (OSError, ValueError):
        return None  # the BERT path below reports what is wrong


def _load_llama(source: str, folder: str, causal: bool) -> nn.Module:
    """A :class:`~companion.train.models.llama.LlamaLM` with the weights of a LLaMA checkpoint."""
    import contextlib
    import io

    from transformers import AutoModelForCausalLM
    from transformers.utils import logging as hf_logging

    from .llama import from_transformers

    where = {"pretrained_model_name_or_path": str(Path(folder).parent), "gguf_file": Path(folder).name} \
        if is_gguf(folder) else {"pretrained_model_name_or_path": folder}
    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    try:  # the GGUF loader's own tqdm bar writes to stderr; a run's log stays clean
        with contextlib.redirect_stderr(io.StringIO()):
            hf = AutoModelForCausalLM.from_pretrained(**where, dtype=torch.float32)
    except (OSError, ValueError) as exc:
        raise CompanionError(f"cannot load {source} as a LLaMA training model: {str(exc).splitlines()[0]}") from None
    finally:
        hf_logging.set_verbosity(verbosity)
        hf_logging.enable_progress_bar()
    try:
        return from_transformers(hf, causal=causal)
    except ValueError as exc:
        raise CompanionError(f"{source}: {exc}") from None
