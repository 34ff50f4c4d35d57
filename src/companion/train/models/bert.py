"""BERT-style models for the training experiments (Sec. 4, Table S1).

The models are Hugging Face ``BertForMaskedLM`` (encoder: bidirectional self-attention)
and ``BertLMHeadModel`` with ``is_decoder=True`` (decoder: causal self-attention), the two
classes the paper's experiments used.  Their query and key projections are ``nn.Linear``
layers with weights ``[out, in]``, so :mod:`companion.core.bilinear` and :mod:`companion.core.scores`
apply to them directly (see :func:`qk_weights`).

Sizes
-----
``micro``      2 layers, width 32, 2 heads: unit tests only.
``tiny``       2 layers, width 64, 2 heads: the live runs the book executes on 2 CPU cores.
``cpu``        4 layers, width 128, 4 heads: the largest size cached on CPU.
``bert-mini``  4 layers, width 256, 4 heads (Table S1, "BERT-Mini").
``bert``       12 layers, width 768, 12 heads (Table S1, "BERT").

:func:`size_for_run` maps the book's run-size switch (``ci`` / ``gpu`` / ``paper``) to these.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace

import torch
from torch import nn

from ...base.runtime import run_size

__all__ = ["ModelSize", "MODEL_SIZES", "size_for_run", "build_model", "qk_weights", "qk_parameters", "num_kv_heads",
           "MODES"]

#: the three ways of training; see :mod:`companion.train.models.objectives`
MODES = ("encoder", "decoder", "authors-decoder")


def is_causal(mode: str) -> bool:
    """Whether ``mode`` attends causally: both decoders do, the masked-LM encoder does not."""
    return mode != "encoder"


@dataclass(frozen=True)
class ModelSize:
    """Architecture and sequence length of one model size (Table S1 fields)."""

    name: str
    num_hidden_layers: int
    hidden_size: int
    num_attention_heads: int
    intermediate_size: int
    seq_len: int
    max_position_embeddings: int = 512
    hidden_dropout_prob: float = 0.1
    attention_probs_dropout_prob: float = 0.1
    layer_norm_eps: float = 1e-12

    def to_dict(self) -> dict:
        return asdict(self)


MODEL_SIZES: dict[str, ModelSize] = {
    "micro": ModelSize("micro", 2, 32, 2, 64, seq_len=16, max_position_embeddings=64),
    "tiny": ModelSize("tiny", 2, 64, 2, 128, seq_len=32, max_position_embeddings=128),
    "cpu": ModelSize("cpu", 4, 128, 4, 512, seq_len=64, max_position_embeddings=128),
    "bert-mini": ModelSize("bert-mini", 4, 256, 4, 1024, seq_len=128),
    "bert": ModelSize("bert", 12, 768, 12, 3072, seq_len=512),
}

_RUN_TO_SIZE = {"ci": "tiny", "gpu": "bert-mini", "paper": "bert"}


def size_for_run(size: str | None = None) -> ModelSize:
    """The model size for a run size (``ci`` -> tiny, ``gpu`` -> BERT-Mini, ``paper`` -> BERT)."""
    return MODEL_SIZES[_RUN_TO_SIZE[run_size(size)]]


def get_size(size: str | ModelSize) -> ModelSize:
    if isinstance(size, ModelSize):
        return size
    if size not in MODEL_SIZES:
        raise ValueError(f"unknown model size {size!r}; choose one of {sorted(MODEL_SIZES)}.")
    return MODEL_SIZES[size]


def bert_config(size: str | ModelSize, vocab_size: int, mode: str):
    """A ``BertConfig`` for ``size``; ``is_decoder`` is set for the two causal modes."""
    from transformers import BertConfig

    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; choose one of {MODES}.")
    s = get_size(size)
    if s.hidden_size % s.num_attention_heads:
        raise ValueError(f"hidden_size {s.hidden_size} is not divisible by {s.num_attention_heads} heads.")
    return BertConfig(
        vocab_size=vocab_size,
        hidden_size=s.hidden_size,
        num_hidden_layers=s.num_hidden_layers,
        num_attention_heads=s.num_attention_heads,
        intermediate_size=s.intermediate_size,
        hidden_act="gelu",
        hidden_dropout_prob=s.hidden_dropout_prob,
        attention_probs_dropout_prob=s.attention_probs_dropout_prob,
        max_position_embeddings=s.max_position_embeddings,
        layer_norm_eps=s.layer_norm_eps,
        initializer_range=0.02,
        is_decoder=is_causal(mode),
        add_cross_attention=False,
        use_cache=False,
        tie_word_embeddings=True,
    )


def build_model(size: str | ModelSize, vocab_size: int, mode: str = "encoder",
                attn_implementation: str = "sdpa") -> nn.Module:
    """A freshly initialised BERT-style model (N(0, 0.02) weights, zero biases).

    ``mode="encoder"`` gives ``BertForMaskedLM``; ``"decoder"`` and ``"authors-decoder"``
    give ``BertLMHeadModel`` with a causal mask.  Re-initialise the attention with
    :func:`companion.train.models.init.initialize` for the symmetric and skew-symmetric variants.
    """
    from transformers import BertForMaskedLM, BertLMHeadModel

    config = bert_config(size, vocab_size, mode)
    config._attn_implementation = attn_implementation
    cls = BertLMHeadModel if is_causal(mode) else BertForMaskedLM
    model = cls(config)
    return model


def attention_modules(model: nn.Module) -> list[nn.Module]:
    """The self-attention modules (holding ``query`` and ``key``), one per layer."""
    base = getattr(model, "bert", model)
    base = getattr(base, "module", base)
    return [layer.attention.self for layer in base.encoder.layer]


def qk_parameters(model: nn.Module) -> list[tuple[nn.Parameter, nn.Parameter]]:
    """Per layer the query and key weight parameters, ``[out, in]`` (with their ``.grad``).

    BERT models hold them as ``attention.self.query/key``; a model that defines
    ``qk_parameters()`` itself (:class:`companion.train.models.llama.LlamaLM`) is asked."""
    model = getattr(model, "module", model)  # unwrap DistributedDataParallel
    if hasattr(model, "qk_parameters"):
        return model.qk_parameters()
    return [(a.query.weight, a.key.weight) for a in attention_modules(model)]


def qk_weights(model: nn.Module) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Per layer ``(Wq, Wk)`` in ``nn.Linear`` layout ``[out, in]`` (detached views)."""
    return [(q.detach(), k.detach()) for q, k in qk_parameters(model)]


def num_heads(model: nn.Module) -> int:
    model = getattr(model, "module", model)
    return model.config.num_attention_heads


def num_kv_heads(model: nn.Module) -> int:
    """Key/value heads (grouped-query attention); the query heads' count when not grouped."""
    model = getattr(model, "module", model)
    return getattr(model.config, "num_key_value_heads", None) or model.config.num_attention_heads


def with_overrides(size: ModelSize, **kw) -> ModelSize:
    return replace(size, **kw)
