"""Initialisations of the query-key weights and the symmetry penalty (Appendix S2.1).

Baseline (``"standard"``)
    BERT's own initialisation: every ``nn.Linear`` weight ~ N(0, 0.02^2), biases zero.
``"symmetric"``
    ``Wk := Wq`` in every layer, with ``Wq`` drawn from the baseline's N(0, 0.02^2) and the
    biases left at zero, so only the *structure* of ``M = Wq^T Wk = Wq^T Wq`` changes, not
    the scale.  Every per-head form ``M_h = Wq_h^T Wq_h`` is symmetric (score +1).
``"symmetric-torch-default"``
    What the authors' code did: new ``nn.Linear`` layers with PyTorch's default
    Kaiming-uniform weights (std ``1/sqrt(3 d)``) and uniform non-zero biases, with
    ``Wk := Wq`` and ``bk := bq``.  This changes the scale of Wq, Wk at the same time as the
    structure (for ``d = 256`` the std is 0.036 instead of 0.02).
``"skew"``
    Appendix S2.1: ``Wk = S Wq`` with ``S = A - A^T`` skew-symmetric (block-diagonal, one
    block per head), so that every ``M_h = Wq_h^T S_h Wq_h`` is skew-symmetric (score -1).
    In the paper's ``x W`` notation this is ``W_k = W_q S^T``.  ``Wk`` is rescaled to the
    Frobenius norm of ``Wq`` so its scale matches the baseline.

Symmetry penalty (Eqs. S146-S148)
---------------------------------
The paper adds ``gamma * L_c`` to the loss (Eq. S146) with ``L_c`` printed as
``M^2 / M_s^2`` (S147, symmetric) and ``M^2 / M_n^2`` (S148, skew-symmetric).  Read
literally these are matrices, not scalars; read as squared Frobenius norms they are
``2/(1+s)`` and ``2/(1-s)``, which have the right minima but are unbounded.  We define

.. math::  L_{sym} = \\frac{\\|M_n\\|_F^2}{\\|M\\|_F^2} = \\frac{1 - s}{2}, \\qquad
           L_{skew} = \\frac{\\|M_s\\|_F^2}{\\|M\\|_F^2} = \\frac{1 + s}{2},

with ``s = tr(M^2)/||M||_F^2`` the symmetry score of each head's form ``M_h`` (Lemma S1.16),
averaged over heads and layers.  ``L_sym`` is in ``[0, 1]`` with its minimum exactly at
``s = +1``, ``L_skew`` at ``s = -1``.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from .bert import attention_modules, num_heads, num_kv_heads, qk_parameters

__all__ = ["INITS", "initialize", "symmetry_penalty", "PENALTIES"]

INITS = ("standard", "symmetric", "symmetric-torch-default", "skew")
PENALTIES = ("none", "symmetric", "skew")


@torch.no_grad()
def initialize(model: nn.Module, init: str = "standard", generator: torch.Generator | None = None,
               std: float = 0.02) -> nn.Module:
    """Re-initialise the query/key projections of every layer in place; returns ``model``.

    The rest of the model keeps the baseline initialisation it was built with.  Draws come
    from ``generator`` (CPU) so runs are reproducible given a seed.
    """
    if init not in INITS:
        raise ValueError(f"unknown initialisation {init!r}; choose one of {INITS}.")
    _need_bert_attention(model, f"initialisation {init!r}")
    n_heads = getattr(model, "module", model).config.num_attention_heads
    for att in attention_modules(model):
        q, k = att.query, att.key
        d_out, d_in = q.weight.shape
        if init == "symmetric-torch-default":
            # nn.Linear.reset_parameters: kaiming_uniform(a=sqrt(5)) -> U(-1/sqrt(d_in), 1/sqrt(d_in))
            bound = 1.0 / math.sqrt(d_in)
            w = (torch.rand(d_out, d_in, generator=generator) * 2 - 1) * bound
            b = (torch.rand(d_out, generator=generator) * 2 - 1) * bound
            q.weight.copy_(w), k.weight.copy_(w), q.bias.copy_(b), k.bias.copy_(b)
            continue
        wq = torch.randn(d_out, d_in, generator=generator) * std
        if init == "standard":
            wk = torch.randn(d_out, d_in, generator=generator) * std
        elif init == "symmetric":
            wk = wq.clone()
        else:  # skew
            d_head = d_out // n_heads
            if d_head < 2:
                raise ValueError("skew-symmetric initialisation needs at least 2 dimensions per head.")
            blocks = []
            for _ in range(n_heads):
                a = torch.randn(d_head, d_head, generator=generator) / math.sqrt(2 * d_head)
                blocks.append(a - a.T)
            S = torch.block_diag(*blocks)
            wk = S @ wq
            wk *= wq.norm() / wk.norm()
        q.weight.copy_(wq.to(q.weight.dtype))
        k.weight.copy_(wk.to(k.weight.dtype))
        q.bias.zero_(), k.bias.zero_()
    return model


def _need_bert_attention(model: nn.Module, what: str) -> None:
    """Refuse, in one line, a model without BERT's ``attention.self.query/key`` layers."""
    base = getattr(getattr(model, "bert", model), "module", getattr(model, "bert", model))
    if not hasattr(base, "encoder"):
        raise ValueError(f"the {what} re-draws BERT's query/key layers (attention.self.query/key); "
                         f"{type(model).__name__} has none: a checkpoint keeps its own weights (init 'standard').")


def _head_symmetry(Wq: torch.Tensor, Wk: torch.Tensor, n_heads: int) -> torch.Tensor:
    """Differentiable per-head symmetry scores ``s_h = tr(M_h^2)/||M_h||_F^2`` (Lemma S1.16).

    With ``M_h = Q_h^T K_h`` the traces reduce to ``dh x dh`` Gram matrices:
    ``tr(M^2) = tr((K Q^T)(K Q^T))`` and ``||M||_F^2 = tr((Q Q^T)(K K^T))``.
    """
    # the same head split as companion.core.bilinear.head_factors, kept differentiable
    Q = Wq.reshape(n_heads, Wq.shape[0] // n_heads, Wq.shape[1])
    K = Wk.reshape(n_heads, Wk.shape[0] // n_heads, Wk.shape[1])
    KQt = K @ Q.transpose(-1, -2)
    tr_mm = (KQt * KQt.transpose(-1, -2)).sum(dim=(-1, -2))
    fro2 = ((Q @ Q.transpose(-1, -2)) * (K @ K.transpose(-1, -2))).sum(dim=(-1, -2))
    return tr_mm / fro2.clamp_min(torch.finfo(fro2.dtype).tiny)


def symmetry_penalty(model: nn.Module, kind: str = "symmetric") -> torch.Tensor:
    """``L_c``: mean over layers and heads of ``(1 - s)/2`` ("symmetric") or ``(1 + s)/2`` ("skew");
    under grouped-query attention a head's form pairs it with its key head."""
    if kind not in ("symmetric", "skew"):
        raise ValueError(f"unknown penalty {kind!r}; choose 'symmetric' or 'skew'.")
    n_heads, n_kv = num_heads(model), num_kv_heads(model)
    group = n_heads // n_kv
    scores = []
    for wq, wk in qk_parameters(model):  # BERT's layers, or a LLaMA's (grouped heads)
        # each query head is paired with its key head (transformers' repeat_kv)
        wk = wk.float().reshape(n_kv, -1, wk.shape[1]).repeat_interleave(group, dim=0).reshape(-1, wk.shape[1])
        scores.append(_head_symmetry(wq.float(), wk, n_heads))
    scores = torch.stack(scores)
    sign = -1.0 if kind == "symmetric" else 1.0
    return ((1.0 + sign * scores) / 2.0).mean()
