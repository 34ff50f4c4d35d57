"""One small conversion function per architecture family.

A conversion function takes the checkpoint's configuration (a dict) and its tensor names
and returns one :class:`LayerPlan` per attention layer: which tensors to read and how to
turn them into ``Wq: [n_heads * d_head, d]`` and ``Wk: [n_kv_heads * d_head, d]`` in
``nn.Linear`` layout with head ``h`` owning rows ``h*d_head:(h+1)*d_head`` (the convention
of :mod:`companion.core.bilinear`).  Nothing is read here, so a plan can be checked before any
weight is loaded.

Layouts handled (names without the task-head prefix such as ``bert.`` or ``model.``):

* separate query/key ``Linear`` weights: BERT, RoBERTa/XLM-R, ALBERT (shared layer),
  DistilBERT, DeBERTa-v2/v3, ViT/DeiT/BEiT/DINOv2/ViT-MAE, HuBERT/WavLM, GPT-Neo, GPT-J,
  LLaMA/Mistral/Mixtral/SmolLM/MobileLLM (grouped-query), Phi-1/1.5/2, T5, BART/mBART,
  Whisper, DETR;
* ``Conv1D`` ``c_attn`` weight ``[d, 3d]`` (GPT-1, GPT-2, ImageGPT): columns ``[q | k | v]``;
* fused, per-head interleaved ``[H, 3, d_head]`` rows (GPT-NeoX/Pythia
  ``query_key_value``, DeBERTa v1 ``in_proj``);
* fused ``[3, H, d_head]`` rows (ModernBERT ``Wqkv``) and ``[q | k | v]`` with grouped-query
  sizes (Phi-3 ``qkv_proj``);
* GGUF (llama.cpp) ``blk.{i}.attn_q/attn_k``, whose rows llama.cpp permuted within each head
  for its rotary kernel; the permutation is undone here;
* GGUF Gemma-3 (grouped-query, per-head q/k RMSNorm gains folded into the rows) and
  NomicBERT (fused ``attn_qkv``);
* MPNet (``attention.attn.q/k``; its relative-position bias is not part of the form).
"""

from __future__ import annotations

import numbers
import re
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np
import torch

from ..base.errors import CompanionError

__all__ = ["LayerPlan", "FAMILIES", "GGUF_FAMILIES", "family_of", "positive_int", "unpermute_llama_cpp"]


def _separate(ts: Sequence[torch.Tensor]):
    return ts[0], ts[1]


@dataclass
class LayerPlan:
    """How to obtain one layer's ``Wq, Wk``: tensor names and a function of the tensors."""

    index: int
    role: str
    component: str
    keys: tuple[str, ...]
    n_heads: int
    n_kv_heads: int
    extract: Callable[[Sequence[torch.Tensor]], tuple[torch.Tensor, torch.Tensor]] = _separate
    name: str = ""
    # the head size the configuration states, and the field stating it (``head_dim``, ``d_kv``,
    # ``<arch>.attention.key_length``): ``read_qk`` then checks ``Wq`` has n_heads * d_head rows
    d_head: int | None = None
    d_head_field: str = "head_dim"

    def __post_init__(self):
        # a plan from any family (a user's too) carries head counts that split the weights
        self.n_heads = positive_int(self.n_heads, f"head count of layer {self.index}")
        self.n_kv_heads = positive_int(self.n_kv_heads, f"key/value head count of layer {self.index}")
        if self.d_head is not None:
            self.d_head = positive_int(self.d_head, self.d_head_field)
        if self.n_heads % self.n_kv_heads:
            raise CompanionError(f"layer {self.index} has {self.n_heads} query heads and {self.n_kv_heads} "
                                 "key/value heads; grouped-query attention needs the second to divide the first.")


# ----------------------------------------------------------------------------- helpers


def _short(value) -> str:
    """A bounded repr: a list built from nested YAML aliases is never expanded in full."""
    import reprlib

    r = reprlib.Repr()
    r.maxlevel, r.maxlist, r.maxdict, r.maxstring, r.maxother = 2, 4, 4, 60, 60
    return r.repr(value)


def positive_int(value, field: str) -> int:
    """``value`` as a count (heads, widths, layers): a positive whole number, else one clear
    refusal.  ``True``, ``2.7``, ``0``, ``-4``, ``"12"`` or a list are not counts; a float that
    is a whole number (``12.0``, as some exporters write) is read as that number."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise CompanionError(f"the configuration's {field} is {_short(value)}, not a whole number; "
                             "the checkpoint's config is malformed.")
    if not isinstance(value, numbers.Integral) and not float(value).is_integer():
        raise CompanionError(f"the configuration's {field} is {value!r}, not a whole number; "
                             "rounding it would split the weights into the wrong heads.")
    if value <= 0:
        raise CompanionError(f"the configuration's {field} is {value!r}; it must be at least 1.")
    return int(value)


def _cfg(cfg: dict, *names, default=None) -> int:
    """The first of the count fields ``names`` present in the configuration, checked by
    :func:`positive_int` (every field the families read is a count)."""
    for n in names:
        if cfg.get(n) is not None:
            if "." in n and isinstance(v := cfg[n], list) and v:   # a GGUF count per layer (llama.cpp writes arrays)
                if any(x != v[0] or type(x) is not type(v[0]) for x in v):
                    raise CompanionError(f"the GGUF metadata's {n} gives the layers different counts ({_short(v)}); "
                                         "layers with different head counts are not read.")
                return positive_int(v[0], n)
            return positive_int(cfg[n], n)
    if default is not None:
        return positive_int(default, f"{names[0]} (by default)")
    raise CompanionError(f"the configuration has none of the fields {names}; is it complete?")


def _head_size(cfg: dict, field: str) -> dict:
    """``{d_head, d_head_field}`` for a plan when the configuration states the head size in
    ``field`` (checked as a count), else nothing: the rows then decide it."""
    if cfg.get(field) is None:
        return {}
    return {"d_head": positive_int(cfg[field], field), "d_head_field": field}


def _find(keys, pattern: str) -> dict[int, str]:
    """Layer index -> tensor name for names ending in ``pattern`` (``{i}`` = layer index).

    Any prefix before the pattern is allowed (``bert.``, ``model.``, ``transformer.``);
    when several prefixes match, the shortest one wins.
    """
    # ASCII digits only: Python's \d would read "\u0663" (an Arabic-Indic three) as layer 3
    regex = re.compile(r"(?P<prefix>(?:.+\.)?)" + re.escape(pattern).replace(r"\{i\}", r"(?P<i>[0-9]+)") + r"$")
    by_prefix: dict[str, dict[int, str]] = {}
    for k in keys:
        m = regex.match(k)
        if m:
            found = by_prefix.setdefault(m.group("prefix"), {})
            i = int(m.group("i"))
            if i in found:   # "layers.3" and "layers.03": which one the model uses is not ours to guess
                raise CompanionError(f"the tensors {found[i]!r} and {k!r} both name layer {i}; the "
                                     "checkpoint is malformed. Remove the stray one.")
            found[i] = k
    if not by_prefix:
        return {}
    # several copies (e.g. a teacher inside a distillation checkpoint): keep the backbone,
    # the one with the shortest prefix; two copies with prefixes of one length (student. and
    # teacher.) have no backbone to tell, and taking the first would be a guess
    shortest = min(map(len, by_prefix))
    tied = sorted(p for p in by_prefix if len(p) == shortest)
    if len(tied) > 1:
        shown = " and ".join(repr(p + pattern) for p in tied[:3])
        raise CompanionError(f"the checkpoint holds several copies of its attention tensors ({shown}) and "
                             "none is the backbone (their prefixes are of one length); keep one copy in the "
                             "weights, or pass families= with a conversion that names the one to read.")
    found = by_prefix[tied[0]]
    return dict(sorted(found.items()))


def _pairs(keys, q_pattern: str, k_pattern: str, *, role: str, component: str,
           n_heads: int, n_kv_heads: int | None = None, extract=_separate,
           required: bool = True, head_size: dict | None = None) -> list[LayerPlan]:
    """Plans for layers with separate query and key tensors."""
    qs = _find(keys, q_pattern)
    ks = _find(keys, k_pattern)
    if not qs and required:
        raise CompanionError(f"no tensors named like '*{q_pattern}' in this checkpoint.")
    missing = sorted(set(qs) ^ set(ks))
    if missing:
        raise CompanionError(
            f"layers {missing} have a query or a key tensor but not both "
            f"('{q_pattern}' / '{k_pattern}'): the checkpoint is incomplete."
        )
    return [
        LayerPlan(i, role, component, (qs[i], ks[i]), n_heads, n_kv_heads or n_heads, extract,
                  name=qs[i].rsplit(".", 2)[0], **(head_size or {}))
        for i in qs
    ]


def _single(keys, pattern: str, *, role: str, component: str, n_heads: int,
            n_kv_heads: int | None = None, extract, head_size: dict | None = None) -> list[LayerPlan]:
    """Plans for layers whose query and key live in one fused tensor."""
    found = _find(keys, pattern)
    if not found:
        raise CompanionError(f"no tensors named like '*{pattern}' in this checkpoint.")
    return [
        LayerPlan(i, role, component, (k,), n_heads, n_kv_heads or n_heads, extract,
                  name=k.rsplit(".", 1)[0], **(head_size or {}))
        for i, k in found.items()
    ]


def _fused_shape(w: torch.Tensor, rows: int, what: str) -> None:
    if w.ndim != 2 or w.shape[0] != rows:
        raise ValueError(f"the fused {what} tensor has shape {tuple(w.shape)}, but the configuration "
                         f"implies {rows} rows; q and k would be cut from the wrong places")


def _split_interleaved(n_heads: int, d: int):
    """Rows ordered ``[H, 3, d_head]`` (per head: q, k, v); ``3 d`` rows in all."""

    def extract(ts):
        w = ts[0]
        _fused_shape(w, 3 * d, "per-head q/k/v")
        if d % n_heads:
            raise ValueError(f"width {d} does not split into {n_heads} heads")
        d_in = w.shape[-1]
        w = w.reshape(n_heads, 3, -1, d_in)
        return w[:, 0].reshape(-1, d_in), w[:, 1].reshape(-1, d_in)

    return extract


def _split_rows(q_rows: int, k_rows: int):
    """Rows ordered ``[q | k | v]`` (ModernBERT's ``[3, H, d_head]``, Phi-3 with GQA sizes)."""

    def extract(ts):
        w = ts[0]
        _fused_shape(w, q_rows + 2 * k_rows, "q|k|v")   # v has as many rows as k
        return w[:q_rows], w[q_rows:q_rows + k_rows]

    return extract


def _split_conv1d(d: int):
    """``Conv1D`` weight ``[d_in, 3d]`` with output columns ``[q | k | v]``."""

    def extract(ts):
        w = ts[0]
        if w.ndim != 2 or w.shape != (d, 3 * d):
            raise ValueError(f"the Conv1D c_attn tensor has shape {tuple(w.shape)}, but the configured width "
                             f"{d} implies ({d}, {3 * d}); q and k would be cut from the wrong columns")
        return w[:, :d].T.contiguous(), w[:, d:2 * d].T.contiguous()

    return extract


# ----------------------------------------------------------------------------- families


def _flag(cfg: dict, field: str) -> bool:
    """A yes/no field of the configuration (absent or null: no); anything but a JSON boolean is
    refused, since transformers reads any non-empty value (``"no"`` too) as yes."""
    value = cfg.get(field)
    if value is None:
        return False
    if not isinstance(value, (bool, np.bool_)):
        raise CompanionError(f"the configuration's {field} is {_short(value)}, not true or false; the "
                             "checkpoint's config is malformed.")
    return bool(value)


def bert(cfg, keys):
    """BERT, RoBERTa, XLM-R, ELECTRA, CamemBERT: ``encoder.layer.{i}.attention.self.query``.

    With ``is_decoder: true`` (``BertLMHeadModel``, a RoBERTa trained as a causal language
    model) transformers masks the self-attention of every layer (``is_causal``): the layers are
    then causal self-attention of a decoder, not a bidirectional encoder.
    """
    causal = _flag(cfg, "is_decoder")
    return _pairs(keys, "encoder.layer.{i}.attention.self.query.weight",
                  "encoder.layer.{i}.attention.self.key.weight", role="causal" if causal else "encoder",
                  component="decoder" if causal else "encoder", n_heads=_cfg(cfg, "num_attention_heads"))


def albert(cfg, keys):
    """ALBERT: the stored layers are shared; one plan per stored layer (not per application)."""
    plans = []
    heads = _cfg(cfg, "num_attention_heads")
    groups = _find(keys, "encoder.albert_layer_groups.{i}.albert_layers.0.attention.query.weight")
    for g in groups:
        inner = _pairs(keys, f"encoder.albert_layer_groups.{g}.albert_layers.{{i}}.attention.query.weight",
                       f"encoder.albert_layer_groups.{g}.albert_layers.{{i}}.attention.key.weight",
                       role="encoder", component="encoder", n_heads=heads)
        plans.extend(inner)
    for i, p in enumerate(plans):
        p.index = i
    if not plans:
        raise CompanionError("no ALBERT attention tensors ('albert_layer_groups') in this checkpoint.")
    return plans


def distilbert(cfg, keys):
    return _pairs(keys, "transformer.layer.{i}.attention.q_lin.weight",
                  "transformer.layer.{i}.attention.k_lin.weight", role="encoder",
                  component="encoder", n_heads=_cfg(cfg, "n_heads"))


def deberta(cfg, keys):
    """DeBERTa v1: ``in_proj`` rows interleaved per head as ``[H, 3, d_head]``."""
    h = _cfg(cfg, "num_attention_heads")
    return _single(keys, "encoder.layer.{i}.attention.self.in_proj.weight", role="encoder",
                   component="encoder", n_heads=h, extract=_split_interleaved(h, _cfg(cfg, "hidden_size")))


def deberta_v2(cfg, keys):
    return _pairs(keys, "encoder.layer.{i}.attention.self.query_proj.weight",
                  "encoder.layer.{i}.attention.self.key_proj.weight", role="encoder",
                  component="encoder", n_heads=_cfg(cfg, "num_attention_heads"))


def modernbert(cfg, keys):
    """ModernBERT: ``Wqkv`` rows ``[3, H, d_head]``."""
    d = _cfg(cfg, "hidden_size")
    return _single(keys, "layers.{i}.attn.Wqkv.weight", role="encoder", component="encoder",
                   n_heads=_cfg(cfg, "num_attention_heads"), extract=_split_rows(d, d))


def gpt2(cfg, keys):
    """GPT-1, GPT-2, ImageGPT: ``Conv1D`` ``c_attn`` ``[d, 3d]``."""
    d = _cfg(cfg, "n_embd", "hidden_size")
    return _single(keys, "h.{i}.attn.c_attn.weight", role="causal", component="decoder",
                   n_heads=_cfg(cfg, "n_head", "num_attention_heads"), extract=_split_conv1d(d))


def gpt_neo(cfg, keys):
    return _pairs(keys, "h.{i}.attn.attention.q_proj.weight", "h.{i}.attn.attention.k_proj.weight",
                  role="causal", component="decoder", n_heads=_cfg(cfg, "num_heads"))


def gptj(cfg, keys):
    return _pairs(keys, "h.{i}.attn.q_proj.weight", "h.{i}.attn.k_proj.weight", role="causal",
                  component="decoder", n_heads=_cfg(cfg, "n_head", "num_attention_heads"))


def gpt_neox(cfg, keys):
    """GPT-NeoX/Pythia: ``query_key_value`` rows ``[H, 3, d_head]``."""
    h = _cfg(cfg, "num_attention_heads")
    return _single(keys, "layers.{i}.attention.query_key_value.weight", role="causal",
                   component="decoder", n_heads=h, extract=_split_interleaved(h, _cfg(cfg, "hidden_size")))


def llama(cfg, keys):
    """LLaMA, Mistral, Mixtral, Qwen2, SmolLM 1-3, MobileLLM, Phi (separate q/k), grouped-query."""
    h = _cfg(cfg, "num_attention_heads")
    return _pairs(keys, "layers.{i}.self_attn.q_proj.weight", "layers.{i}.self_attn.k_proj.weight",
                  role="causal", component="decoder", n_heads=h,
                  n_kv_heads=_cfg(cfg, "num_key_value_heads", default=h), head_size=_head_size(cfg, "head_dim"))


def phi(cfg, keys):
    """Phi-1/1.5/2: separate q/k as in LLaMA.  With ``qk_layernorm`` each head's query and key
    pass through a LayerNorm after the projection (centred, divided by their spread, scaled and
    shifted), so the logits are not the bilinear form of ``q_proj`` and ``k_proj``: refused."""
    if _flag(cfg, "qk_layernorm") or _find(keys, "layers.{i}.self_attn.q_layernorm.weight"):
        raise CompanionError("this phi checkpoint normalises each head's queries and keys (qk_layernorm), so its "
                             "logits are not x^T Wq^T Wk y of q_proj and k_proj and no score of that form would "
                             "describe it; only phi models without qk_layernorm are read.")
    return llama(cfg, keys)


def phi3(cfg, keys):
    """Phi-3: ``qkv_proj`` rows ``[q | k | v]`` with sizes ``H*dh, Hkv*dh, Hkv*dh``."""
    h = _cfg(cfg, "num_attention_heads")
    kv = _cfg(cfg, "num_key_value_heads", default=h)
    dh = _cfg(cfg, "head_dim", default=_cfg(cfg, "hidden_size") // h)
    return _single(keys, "layers.{i}.self_attn.qkv_proj.weight", role="causal",
                   component="decoder", n_heads=h, n_kv_heads=kv,
                   extract=_split_rows(h * dh, kv * dh))


def t5(cfg, keys):
    """T5/mT5: encoder and decoder self-attention, decoder cross-attention (``EncDecAttention``)."""
    h, size = _cfg(cfg, "num_heads"), _head_size(cfg, "d_kv")   # d_kv * heads need not be d_model (mT5)
    plans = _pairs(keys, "encoder.block.{i}.layer.0.SelfAttention.q.weight",
                   "encoder.block.{i}.layer.0.SelfAttention.k.weight", role="encoder",
                   component="encoder", n_heads=h, head_size=size)
    plans += _pairs(keys, "decoder.block.{i}.layer.0.SelfAttention.q.weight",
                    "decoder.block.{i}.layer.0.SelfAttention.k.weight", role="causal",
                    component="decoder", n_heads=h, required=False, head_size=size)
    plans += _pairs(keys, "decoder.block.{i}.layer.1.EncDecAttention.q.weight",
                    "decoder.block.{i}.layer.1.EncDecAttention.k.weight", role="cross",
                    component="decoder", n_heads=h, required=False, head_size=size)
    return plans


def _seq2seq(cfg, keys, decoder_self_role: str):
    he = _cfg(cfg, "encoder_attention_heads")
    hd = _cfg(cfg, "decoder_attention_heads")
    # BartForCausalLM and its kin save the decoder alone, saying so in their configuration
    # (is_decoder true, is_encoder_decoder false); any other checkpoint needs its encoder
    decoder_only = _flag(cfg, "is_decoder") and cfg.get("is_encoder_decoder") is False
    plans = _pairs(keys, "encoder.layers.{i}.self_attn.q_proj.weight",
                   "encoder.layers.{i}.self_attn.k_proj.weight", role="encoder",
                   component="encoder", n_heads=he, required=not decoder_only)
    plans += _pairs(keys, "decoder.layers.{i}.self_attn.q_proj.weight",
                    "decoder.layers.{i}.self_attn.k_proj.weight", role=decoder_self_role,
                    component="decoder", n_heads=hd, required=decoder_only)
    plans += _pairs(keys, "decoder.layers.{i}.encoder_attn.q_proj.weight",
                    "decoder.layers.{i}.encoder_attn.k_proj.weight", role="cross",
                    component="decoder", n_heads=hd, required=False)
    return plans


def bart(cfg, keys):
    """BART, mBART, Whisper (and Marian/Pegasus): causal decoder self-attention."""
    return _seq2seq(cfg, keys, "causal")


def detr(cfg, keys):
    """DETR: the decoder's self-attention over object queries is unmasked (role ``encoder``)."""
    return _seq2seq(cfg, keys, "encoder")


def mpnet(cfg, keys):
    """MPNet (all-mpnet-base-v2): ``encoder.layer.{i}.attention.attn.q/k``.

    MPNet adds a learned bias per relative-position bucket and head to the logits
    (``encoder.relative_attention_bias``).  It depends on the two positions only, not on
    the tokens, so like the projection biases it is a bias term beside the bilinear form
    ``x^T W_q^T W_k y`` and not part of it.
    """
    return _pairs(keys, "encoder.layer.{i}.attention.attn.q.weight",
                  "encoder.layer.{i}.attention.attn.k.weight", role="encoder",
                  component="encoder", n_heads=_cfg(cfg, "num_attention_heads"))


def vit(cfg, keys):
    """ViT, DeiT, BEiT, DINOv2, ViT-MAE (encoder): ``attention.attention.query``."""
    return _pairs(keys, "encoder.layer.{i}.attention.attention.query.weight",
                  "encoder.layer.{i}.attention.attention.key.weight", role="encoder",
                  component="encoder", n_heads=_cfg(cfg, "num_attention_heads"))


def speech_encoder(cfg, keys):
    """HuBERT, WavLM, wav2vec 2.0, Data2Vec-audio, UniSpeech: ``encoder.layers.{i}.attention``."""
    return _pairs(keys, "encoder.layers.{i}.attention.q_proj.weight",
                  "encoder.layers.{i}.attention.k_proj.weight", role="encoder",
                  component="encoder", n_heads=_cfg(cfg, "num_attention_heads"))


FAMILIES: dict[str, Callable] = {
    # model_type (config.json) -> conversion function
    "bert": bert, "roberta": bert, "xlm-roberta": bert, "camembert": bert, "electra": bert,
    "albert": albert,
    "distilbert": distilbert,
    "deberta": deberta,
    "deberta-v2": deberta_v2,
    "modernbert": modernbert,
    "openai-gpt": gpt2, "gpt2": gpt2, "imagegpt": gpt2,
    "gpt_neo": gpt_neo,
    "gptj": gptj,
    "gpt_neox": gpt_neox,
    "llama": llama, "mistral": llama, "mixtral": llama, "qwen2": llama, "mobilellm": llama,
    "smollm3": llama,
    "phi": phi,
    "phi3": phi3,
    "t5": t5, "mt5": t5,
    "bart": bart, "mbart": bart, "whisper": bart, "marian": bart, "pegasus": bart,
    "detr": detr,
    "mpnet": mpnet,
    "vit": vit, "deit": vit, "beit": vit, "dinov2": vit, "vit_mae": vit,
    "hubert": speech_encoder, "wavlm": speech_encoder, "wav2vec2": speech_encoder,
    "data2vec-audio": speech_encoder, "unispeech": speech_encoder,
}


# ----------------------------------------------------------------------------- GGUF


def unpermute_llama_cpp(w: torch.Tensor, n_heads: int) -> torch.Tensor:
    """Undo llama.cpp's row permutation of a q or k weight (``n_heads``: that weight's heads).

    llama.cpp's converter reorders each head's rows from the two-halves rotary layout of
    Hugging Face into interleaved pairs (reshape ``[H, 2, dh/2]`` then swap the last two
    axes).  This is the inverse.  The per-head form ``Wq_h^T Wk_h`` does not change (the
    same permutation acts on both factors), but the rows of ``Wq`` and ``Wk`` do.
    """
    rows, d_in = w.shape
    if rows % (2 * n_heads):
        raise CompanionError(f"cannot undo llama.cpp permutation: {rows} rows, {n_heads} heads.")
    return w.reshape(n_heads, rows // n_heads // 2, 2, d_in).transpose(1, 2).reshape(rows, d_in)


def gguf_llama(cfg, keys):
    """GGUF ``llama`` architecture (LLaMA, Mistral, SmolLM): undo the q/k permutation."""
    arch = cfg.get("general.architecture", "llama")
    h = _cfg(cfg, f"{arch}.attention.head_count")
    kv = _cfg(cfg, f"{arch}.attention.head_count_kv", default=h)

    def extract(ts):
        return unpermute_llama_cpp(ts[0], h), unpermute_llama_cpp(ts[1], kv)

    return _pairs(keys, "blk.{i}.attn_q.weight", "blk.{i}.attn_k.weight", role="causal",
                  component="decoder", n_heads=h, n_kv_heads=kv, extract=extract,
                  head_size=_head_size(cfg, f"{arch}.attention.key_length"))


def gguf_gemma3(cfg, keys, fold_norm_gains: bool = True):
    """GGUF ``gemma3`` (Gemma-3): grouped-query attention with per-head q/k RMSNorm.

    llama.cpp does not permute Gemma's q/k rows (Gemma uses the two-halves rotary layout
    in both places), so rows are read as stored.  Gemma-3 normalises each head's query
    and key after the projection, ``q_h = g_q * (W_q,h x) / rms(W_q,h x)`` and likewise
    for ``k`` (GGUF stores the gain ``g = 1 + w`` of Hugging Face's ``Gemma3RMSNorm``).
    The logit of head ``h`` at rotary offset 0 is therefore

        x^T (diag(g_q) W_q,h)^T (diag(g_k) W_k,g(h)) y / (rms(W_q,h x) * rms(W_k,g(h) y)).

    The gains are fixed per-dimension scalings applied after the projection, so with
    ``fold_norm_gains`` (the default) they are folded into the rows of ``W_q`` and ``W_k``
    and the form scored is the numerator above, the bilinear part of the logit.  The
    normalisation itself divides by input-dependent scalars: it is not linear, so no
    matrix absorbs it, and the logits are a bilinear form of ``x, y`` only up to one
    positive factor per (query, key) pair.  That factor does not change the sign of a
    logit but does reweight keys against each other; the scores describe the bilinear
    part only.  ``fold_norm_gains=False`` reads the raw projections.
    """
    arch = cfg.get("general.architecture", "gemma3")
    h = _cfg(cfg, f"{arch}.attention.head_count")
    kv = _cfg(cfg, f"{arch}.attention.head_count_kv", default=h)
    qs, ks = _find(keys, "blk.{i}.attn_q.weight"), _find(keys, "blk.{i}.attn_k.weight")
    qn, kn = _find(keys, "blk.{i}.attn_q_norm.weight"), _find(keys, "blk.{i}.attn_k_norm.weight")
    if not qs or set(qs) != set(ks):
        raise CompanionError("the gemma3 GGUF file lacks matching blk.{i}.attn_q/attn_k tensors.")
    if fold_norm_gains and (set(qn) != set(qs) or set(kn) != set(qs)):
        raise CompanionError("the gemma3 GGUF file lacks its per-head attn_q_norm/attn_k_norm "
                             "gains; pass families={'gemma3': partial(gguf_gemma3, "
                             "fold_norm_gains=False)} to read the raw projections.")

    def fold(ts):
        wq, wk = ts[0], ts[1]
        if not fold_norm_gains:
            return wq, wk
        # one gain per head dimension, shared by all heads: exactly rows / heads of them
        out = []
        for w, g, n, what in ((wq, ts[2], h, "attn_q_norm"), (wk, ts[3], kv, "attn_k_norm")):
            if w.ndim != 2 or g.ndim != 1 or w.shape[0] != n * g.shape[0]:
                raise ValueError(f"the {what} gains have shape {tuple(g.shape)}, but {w.shape[0]} rows in "
                                 f"{n} heads need one gain per head dimension; folding them would "
                                 "scale the heads by the wrong gains")
            out.append((w.reshape(n, g.shape[0], w.shape[1]) * g[None, :, None]).reshape(w.shape))
        return out[0], out[1]

    size = _head_size(cfg, f"{arch}.attention.key_length")
    plans = []
    for i in qs:
        names = (qs[i], ks[i]) + ((qn[i], kn[i]) if fold_norm_gains else ())
        plans.append(LayerPlan(i, "causal", "decoder", names, h, kv, fold, name=f"blk.{i}", **size))
    return plans


def gguf_nomic_bert(cfg, keys):
    """GGUF ``nomic-bert`` (nomic-embed-text): bidirectional, fused ``attn_qkv`` rows ``[q | k | v]``.

    The Hugging Face model (``rotary_emb_interleaved=False``) rotates queries and keys in the
    two-halves layout, which llama.cpp keeps (NeoX-style rope), so the fused rows are
    split as stored.  The form read is the member at rotary offset 0 (see the survey chapter).
    """
    arch = cfg.get("general.architecture", "nomic-bert")
    h = _cfg(cfg, f"{arch}.attention.head_count")
    d = _cfg(cfg, f"{arch}.embedding_length")
    if cfg.get(f"{arch}.attention.causal"):
        raise CompanionError("this nomic-bert GGUF file declares causal attention; only the "
                             "bidirectional encoder is supported.")
    return _single(keys, "blk.{i}.attn_qkv.weight", role="encoder", component="encoder",
                   n_heads=h, extract=_split_rows(d, d))


def gguf_qwen2(cfg, keys):
    """GGUF ``qwen2`` (Qwen2, Qwen2.5): grouped-query attention with q/k biases (outside the form).

    llama.cpp's converter leaves Qwen2's q/k rows in Hugging Face's order (the model uses
    the two-halves rotary layout, NEOX in GGML terms), so unlike ``llama`` there is no row
    permutation to undo.
    """
    arch = cfg.get("general.architecture", "qwen2")
    h = _cfg(cfg, f"{arch}.attention.head_count")
    kv = _cfg(cfg, f"{arch}.attention.head_count_kv", default=h)
    return _pairs(keys, "blk.{i}.attn_q.weight", "blk.{i}.attn_k.weight", role="causal",
                  component="decoder", n_heads=h, n_kv_heads=kv,
                  head_size=_head_size(cfg, f"{arch}.attention.key_length"))


GGUF_FAMILIES: dict[str, Callable] = {"llama": gguf_llama, "gemma3": gguf_gemma3,
                                      "nomic-bert": gguf_nomic_bert, "qwen2": gguf_qwen2}


def family_of(config: dict, families: dict | None = None, gguf: bool = False) -> tuple[str, Callable]:
    """The family name and conversion function for a configuration."""
    table = dict(GGUF_FAMILIES if gguf else FAMILIES)
    if families:
        table.update(families)
    key = config.get("general.architecture") if gguf else config.get("model_type")
    if key is not None and not isinstance(key, str):
        field = "general.architecture" if gguf else "model_type in config.json"
        raise CompanionError(f"the checkpoint's {field} is {_short(key)}, not a name; the configuration "
                             "is malformed (it should read e.g. \"llama\").")
    if key is None:
        raise CompanionError(
            "the checkpoint does not name its architecture "
            f"({'general.architecture' if gguf else 'model_type in config.json'} is missing)."
        )
    if key not in table:
        raise CompanionError(
            f"unknown architecture {key!r}{' (GGUF)' if gguf else ''}; supported: "
            f"{', '.join(sorted(table))}. Pass families={{{key!r}: convert}} to add one."
        )
    return key, table[key]
