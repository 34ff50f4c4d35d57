"""What an adapter returns: per layer, the query and key projections in one convention.

Every architecture family is reduced to a list of :class:`QKLayer` objects:

* ``Wq``: ``[n_heads * d_head, d]`` and ``Wk``: ``[n_kv_heads * d_head, d]`` in
  ``nn.Linear`` layout ``[out, in]`` (see :mod:`companion.core.bilinear`), float32 on the CPU
  unless a device was asked for;
* ``role``: ``"encoder"`` (bidirectional self-attention), ``"causal"`` (masked
  self-attention of a decoder) or ``"cross"`` (cross-attention: queries and keys come
  from different sequences, so the form is *not* a self-attention form and is never scored
  as one);
* ``component``: which stack of the model the layer belongs to (``"encoder"``,
  ``"decoder"``, ``"text"``, ``"vision"``, ...).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import torch

from ..core.bilinear import Pairing, bilinear_form, head_factors, layer_factors

Role = Literal["encoder", "causal", "cross"]
ROLES = ("encoder", "causal", "cross")


@dataclass
class QKLayer:
    """Query/key projections of one attention layer (biases are not part of the form)."""

    index: int
    role: Role
    Wq: torch.Tensor
    Wk: torch.Tensor
    n_heads: int
    n_kv_heads: int
    component: str = "model"
    name: str = ""
    # the heads' numbers in the model before ``prune_heads`` (config.json's ``pruned_heads`` numbers
    # them so), one per stored head in the stored order; ``None``: nothing pruned, heads 0..n_heads-1
    head_ids: tuple[int, ...] | None = None

    def __post_init__(self):
        if self.role not in ROLES:
            raise ValueError(f"role must be one of {ROLES}, got {self.role!r}.")
        if self.head_ids is not None:
            self.head_ids = tuple(int(h) for h in self.head_ids)
            if len(self.head_ids) != self.n_heads or len(set(self.head_ids)) != self.n_heads:
                raise ValueError(f"head_ids {self.head_ids} do not number the layer's {self.n_heads} heads once each.")

    @property
    def head_numbers(self) -> tuple[int, ...]:
        """Each stored query head's number in the unpruned model (``0..n_heads-1`` unless pruned)."""
        return self.head_ids if self.head_ids is not None else tuple(range(self.n_heads))

    @property
    def d_head(self) -> int:
        return self.Wq.shape[0] // self.n_heads

    @property
    def d_model(self) -> int:
        return self.Wq.shape[1]

    def form(self, pairing: Pairing = "grouped") -> torch.Tensor:
        """The layer's bilinear form ``M = sum_h Wq_h^T Wk_g(h)`` (``d x d``)."""
        return bilinear_form(self.Wq, self.Wk, self.n_heads, self.n_kv_heads, pairing)

    def head_factors(self, pairing: Pairing = "grouped") -> tuple[torch.Tensor, torch.Tensor]:
        """Per-head factors ``Q, K`` of shape ``[n_heads, d_head, d]``."""
        return head_factors(self.Wq, self.Wk, self.n_heads, self.n_kv_heads, pairing)

    def layer_factors(self, pairing: Pairing = "grouped") -> tuple[torch.Tensor, torch.Tensor]:
        """Factors ``A, B`` with ``A^T B = form(pairing)`` and ``n_kv_heads * d_head`` rows:
        the query heads of each group summed (``companion.core.bilinear.layer_factors``)."""
        return layer_factors(self.Wq, self.Wk, self.n_heads, self.n_kv_heads, pairing)


@dataclass
class QKCheckpoint:
    """All attention layers of one checkpoint, with where they came from."""

    source: str
    family: str
    layers: list[QKLayer]
    n_parameters: int | None = None
    revision: str | None = None
    fingerprint: str | None = None
    bytes_read: int | None = None
    meta: dict = field(default_factory=dict)

    def self_attention_layers(self, component: str | None = None) -> list[QKLayer]:
        """Layers whose form is a self-attention form (cross-attention left out)."""
        return [
            layer
            for layer in self.layers
            if layer.role != "cross" and (component is None or layer.component == component)
        ]
