"""A plain LLaMA for training, with the attention mask as a switch (the objective swap).

The objective swap (``data/runs/objective_swap_plan.md``) trains a pretrained decoder,
SmolLM2-135M, *without* its causal mask on masked prediction, against a control that keeps
next-token prediction.  Hugging Face's ``LlamaForCausalLM`` builds its causal mask inside
the forward pass; here the mask is one attribute, :attr:`LlamaLM.causal`, that the training
mode sets (``decoder``: causal, ``encoder``: bidirectional), so what the model sees is
explicit and testable (``tests/test_train_llama.py``: a future-token change moves no earlier
logit under the causal mask, and does without it).

The architecture is LLaMA's (Touvron et al. 2023), as SmolLM2 uses it: RMSNorm before
attention and MLP, rotary position embeddings on queries and keys (the rotate-half
convention of transformers), grouped-query attention (``num_key_value_heads`` key/value heads
shared by consecutive query heads), a SwiGLU MLP and an output head tied to the input
embeddings (untied where the checkpoint has its own).  Parameter names are transformers' own, so a ``LlamaForCausalLM`` state dict
loads unchanged; with ``causal=True`` the logits equal transformers' (tested).

The bilinear form of a layer (Eq. 2 of the paper) is built from ``q_proj`` and ``k_proj``
with the grouped pairing of :func:`companion.core.bilinear.kv_head_index`; rotary embeddings
act between the two factors and are not part of ``W_qk`` (as in the survey's reading of
rotary decoders).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["LlamaShape", "LlamaLM", "from_transformers"]


@dataclass(frozen=True)
class LlamaShape:
    """The fields of a LLaMA configuration this model uses (transformers' names)."""

    vocab_size: int
    hidden_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    intermediate_size: int
    rms_norm_eps: float = 1e-5
    rope_theta: float = 10000.0
    max_position_embeddings: int = 2048

    def __post_init__(self):
        for name in ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
                     "num_key_value_heads", "intermediate_size", "max_position_embeddings"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be a whole number >= 1; got {v!r}.")
        if self.hidden_size % self.num_attention_heads:
            raise ValueError(f"hidden_size {self.hidden_size} is not divisible by {self.num_attention_heads} heads.")
        if self.num_attention_heads % self.num_key_value_heads:
            raise ValueError(f"{self.num_attention_heads} query heads are not a multiple of "
                             f"{self.num_key_value_heads} key/value heads.")
        if self.head_dim % 2:  # rotary embeddings turn pairs of a head's dimensions
            raise ValueError(f"the head dimension hidden_size / heads = {self.head_dim} must be even for rotary "
                             "embeddings; choose another hidden_size or number of heads.")

    @property
    def head_dim(self) -> int:
        return self.hidden_size // self.num_attention_heads

    def to_dict(self) -> dict:
        return asdict(self)


class RMSNorm(nn.Module):
    def __init__(self, width: int, eps: float):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(width))
        self.eps = eps

    def forward(self, x):
        dtype = x.dtype
        x = x.float()
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * x.to(dtype)


def _rotate_half(x):
    a, b = x.chunk(2, dim=-1)
    return torch.cat((-b, a), dim=-1)


class Attention(nn.Module):
    def __init__(self, s: LlamaShape):
        super().__init__()
        self.h, self.kv, self.d = s.num_attention_heads, s.num_key_value_heads, s.head_dim
        self.q_proj = nn.Linear(s.hidden_size, self.h * self.d, bias=False)
        self.k_proj = nn.Linear(s.hidden_size, self.kv * self.d, bias=False)
        self.v_proj = nn.Linear(s.hidden_size, self.kv * self.d, bias=False)
        self.o_proj = nn.Linear(self.h * self.d, s.hidden_size, bias=False)

    def forward(self, x, cos, sin, causal: bool):
        b, t, _ = x.shape
        q = self.q_proj(x).view(b, t, self.h, self.d).transpose(1, 2)
        k = self.k_proj(x).view(b, t, self.kv, self.d).transpose(1, 2)
        v = self.v_proj(x).view(b, t, self.kv, self.d).transpose(1, 2)
        q = q * cos + _rotate_half(q) * sin
        k = k * cos + _rotate_half(k) * sin
        group = self.h // self.kv  # key head g serves query heads g*group ... (transformers' repeat_kv)
        k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        return self.o_proj(y.transpose(1, 2).reshape(b, t, self.h * self.d))


class MLP(nn.Module):
    def __init__(self, s: LlamaShape):
        super().__init__()
        self.gate_proj = nn.Linear(s.hidden_size, s.intermediate_size, bias=False)
        self.up_proj = nn.Linear(s.hidden_size, s.intermediate_size, bias=False)
        self.down_proj = nn.Linear(s.intermediate_size, s.hidden_size, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class Block(nn.Module):
    def __init__(self, s: LlamaShape):
        super().__init__()
        self.input_layernorm = RMSNorm(s.hidden_size, s.rms_norm_eps)
        self.self_attn = Attention(s)
        self.post_attention_layernorm = RMSNorm(s.hidden_size, s.rms_norm_eps)
        self.mlp = MLP(s)

    def forward(self, x, cos, sin, causal: bool):
        x = x + self.self_attn(self.input_layernorm(x), cos, sin, causal)
        return x + self.mlp(self.post_attention_layernorm(x))


class Body(nn.Module):
    def __init__(self, s: LlamaShape):
        super().__init__()
        self.embed_tokens = nn.Embedding(s.vocab_size, s.hidden_size)
        self.layers = nn.ModuleList(Block(s) for _ in range(s.num_hidden_layers))
        self.norm = RMSNorm(s.hidden_size, s.rms_norm_eps)
        inv = 1.0 / (s.rope_theta ** (torch.arange(0, s.head_dim, 2, dtype=torch.float64) / s.head_dim))
        self.register_buffer("inv_freq", inv.float(), persistent=False)


class LlamaLM(nn.Module):
    """LLaMA with a tied output head; ``causal`` decides the attention mask (module doc).

    The training loop reaches it through :class:`companion.train.models.objectives.SelectiveLM`
    (:meth:`hidden_states`, then :meth:`head` at the target positions only) and reads its
    query/key weights through :meth:`qk_parameters`.
    """

    def __init__(self, shape: LlamaShape, causal: bool = True, tied: bool = True):
        super().__init__()
        self.config = shape  # what the loop reads: num_attention_heads, num_key_value_heads, vocab_size, ...
        self.causal = bool(causal)
        self.model = Body(shape)
        self.lm_head = nn.Linear(shape.hidden_size, shape.vocab_size, bias=False)
        if tied:  # as in SmolLM2
            self.lm_head.weight = self.model.embed_tokens.weight

    def _rotary(self, t: int, device, dtype):
        pos = torch.arange(t, device=device, dtype=torch.float32)
        freqs = torch.outer(pos, self.model.inv_freq.to(device))
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos().to(dtype)[None, None], emb.sin().to(dtype)[None, None]

    def hidden_states(self, input_ids: torch.Tensor) -> torch.Tensor:
        if input_ids.shape[1] > self.config.max_position_embeddings:
            raise ValueError(f"{input_ids.shape[1]} tokens exceed the model's "
                             f"{self.config.max_position_embeddings} positions.")
        x = self.model.embed_tokens(input_ids)
        cos, sin = self._rotary(input_ids.shape[1], x.device, x.dtype)
        for block in self.model.layers:
            x = block(x, cos, sin, self.causal)
        return self.model.norm(x)

    def head(self, hidden: torch.Tensor) -> torch.Tensor:
        return self.lm_head(hidden)

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        return self.head(self.hidden_states(input_ids))

    def qk_parameters(self) -> list[tuple[nn.Parameter, nn.Parameter]]:
        """Per layer ``(W_q, W_k)``: ``[heads * d_head, d]`` and ``[kv_heads * d_head, d]``."""
        return [(b.self_attn.q_proj.weight, b.self_attn.k_proj.weight) for b in self.model.layers]


def from_transformers(hf_model, causal: bool = True) -> LlamaLM:
    """A :class:`LlamaLM` holding the weights of a transformers ``LlamaForCausalLM`` (float32);
    the output head is tied to the embeddings exactly when the checkpoint's is."""
    c = hf_model.config
    rope = getattr(c, "rope_parameters", None) or {}
    theta = rope.get("rope_theta", getattr(c, "rope_theta", 10000.0))
    if rope.get("rope_type", "default") != "default":
        raise ValueError(f"rope type {rope.get('rope_type')!r} is not supported; only the default rotary embedding.")
    if getattr(c, "head_dim", None) not in (None, c.hidden_size // c.num_attention_heads):
        raise ValueError(f"head_dim {c.head_dim} differs from hidden_size / heads; not supported.")
    act = getattr(c, "hidden_act", "silu")
    if act not in ("silu", "swish"):  # the MLP here is SwiGLU with silu, as LLaMA's
        raise ValueError(f"hidden_act {act!r} is not supported; the LLaMA training model computes silu (SwiGLU).")
    if getattr(c, "attention_bias", False) or getattr(c, "mlp_bias", False):
        raise ValueError("a LLaMA with attention or MLP biases is not supported here.")
    shape = LlamaShape(vocab_size=c.vocab_size, hidden_size=c.hidden_size, num_hidden_layers=c.num_hidden_layers,
                       num_attention_heads=c.num_attention_heads,
                       num_key_value_heads=getattr(c, "num_key_value_heads", None) or c.num_attention_heads,
                       intermediate_size=c.intermediate_size, rms_norm_eps=float(c.rms_norm_eps),
                       rope_theta=float(theta), max_position_embeddings=int(c.max_position_embeddings))
    tied = bool(getattr(c, "tie_word_embeddings", True))
    model = LlamaLM(shape, causal=causal, tied=tied)
    state = {k: v.float() for k, v in hf_model.state_dict().items()}
    if tied:
        state["lm_head.weight"] = state["model.embed_tokens.weight"]
    missing, unexpected = model.load_state_dict(state, strict=False)
    if missing or unexpected:
        raise ValueError(f"weights do not fit the LLaMA layout: missing {missing[:3]}, unexpected {unexpected[:3]}.")
    return model
