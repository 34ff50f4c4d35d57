"""A tiny Transformer with readable attention, for the gradient and training checks.

Definition S1.1 without layer normalisation or biases: token and position embeddings,
``n_layers`` blocks of (multi-head self-attention + residual, then a small MLP + residual),
and an unembedding.  Two parameterisations of the attention scores:

* ``explicit=True``: one learnable ``d x d`` matrix ``W`` per head-free layer, raw score
  ``s_ij = x_i^T W x_j`` (Eq. S33 with the softmax kept);
* ``explicit=False``: the usual separate query and key projections (``nn.Linear``, layout
  ``[out, in]``), ``s_ij = (Wq x_i)^T (Wk x_j)``, so the layer's bilinear form is
  ``M = sum_h Wq_h^T Wk_h`` (Eq. S20).

Every forward pass keeps the raw scores of each layer (``model.scores[l]``, shape
``[B, H, N, N]``) and the layer inputs (``model.inputs[l]``), so that after ``backward`` the
coefficients ``beta_ij = dL/ds_ij`` of Prop. 2.2 can be read off.
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
import torch
from torch import nn

from ..base.phrasing import finite as _finite   # a finite number (an int past float's range: no)

Mask = Literal["causal", "full"]

__all__ = ["TinyAttentionModel", "next_token_loss", "masked_token_loss", "objective_loss", "bilinear_forms",
           "train_objective"]


class _Block(nn.Module):
    def __init__(self, d: int, n_heads: int, explicit: bool, softmax: bool, mlp: bool):
        super().__init__()
        if d % n_heads:
            raise ValueError(f"d ({d}) must be divisible by n_heads ({n_heads}).")
        if explicit and n_heads != 1:
            raise ValueError("the explicit-W parameterisation has one head; use n_heads=1.")
        self.d, self.n_heads, self.d_head = d, n_heads, d // n_heads
        self.explicit, self.softmax = explicit, softmax
        if explicit:
            self.W = nn.Parameter(torch.randn(d, d) / d)
        else:
            self.q = nn.Linear(d, d, bias=False)
            self.k = nn.Linear(d, d, bias=False)
        self.v = nn.Linear(d, d, bias=False)
        self.mlp = nn.Sequential(nn.Linear(d, 2 * d, bias=False), nn.GELU(),
                                 nn.Linear(2 * d, d, bias=False)) if mlp else None

    def raw_scores(self, x: torch.Tensor) -> torch.Tensor:
        B, N, _ = x.shape
        if self.explicit:
            return (x @ self.W @ x.transpose(-1, -2)).unsqueeze(1)  # [B, 1, N, N]
        q = self.q(x).view(B, N, self.n_heads, self.d_head).transpose(1, 2)
        k = self.k(x).view(B, N, self.n_heads, self.d_head).transpose(1, 2)
        return q @ k.transpose(-1, -2)  # [B, H, N, N]

    def forward(self, x, mask: torch.Tensor, store: dict):
        B, N, _ = x.shape
        s = self.raw_scores(x)
        if s.requires_grad:
            s.retain_grad()
        store["scores"].append(s)
        scaled = s / math.sqrt(self.d_head)
        if self.softmax:
            alpha = torch.softmax(scaled.masked_fill(~mask, float("-inf")), dim=-1)
        else:  # linear attention as in the proof of Prop. 2.2 (Eq. S33)
            alpha = scaled.masked_fill(~mask, 0.0)
        store["alphas"].append(alpha)
        v = self.v(x).view(B, N, self.n_heads, self.d_head).transpose(1, 2)
        a = (alpha @ v).transpose(1, 2).reshape(B, N, self.d)
        xhat = x + a
        if xhat.requires_grad:
            xhat.retain_grad()
        store["xhat"].append(xhat)
        return xhat + self.mlp(xhat) if self.mlp is not None else xhat


class TinyAttentionModel(nn.Module):
    """Embedding -> ``n_layers`` attention blocks -> unembedding (Def. S1.1, no LayerNorm)."""

    def __init__(self, vocab_size: int, d: int = 32, n_layers: int = 1, n_heads: int = 1,
                 max_len: int = 64, explicit: bool = False, softmax: bool = True,
                 mlp: bool = True, seed: int = 0):
        super().__init__()
        for name, v, least in (("vocab_size", vocab_size, 2), ("d", d, 1), ("n_layers", n_layers, 1),
                               ("n_heads", n_heads, 1), ("max_len", max_len, 1)):
            # True built one head; 2.0 heads or d=2.5 raised raw torch errors at the first pass
            if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)) or v < least:
                raise ValueError(f"{name} must be a whole number >= {least}; got {v!r}.")
        if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)):
            # torch.manual_seed read 1.5 (and True) as seed 1 without a word
            raise ValueError(f"seed must be a whole number; got {seed!r}.")
        g = torch.random.fork_rng()
        with g:
            torch.manual_seed(seed)
            self.emb = nn.Embedding(vocab_size, d)
            self.pos = nn.Embedding(max_len, d)
            nn.init.normal_(self.emb.weight, std=1.0 / math.sqrt(d))
            nn.init.normal_(self.pos.weight, std=0.1 / math.sqrt(d))
            self.blocks = nn.ModuleList(
                [_Block(d, n_heads, explicit, softmax, mlp) for _ in range(n_layers)])
            self.unembed = nn.Linear(d, vocab_size, bias=False)
        self.max_len = max_len
        self.store: dict = {}

    def forward(self, tokens: torch.Tensor, mask: Mask = "causal") -> torch.Tensor:
        if not isinstance(tokens, torch.Tensor) or tokens.ndim != 2 or tokens.is_floating_point() \
                or tokens.is_complex() or tokens.dtype == torch.bool:
            # a 1-D tensor raised 'not enough values to unpack', float ids a raw embedding error
            what = (f"a tensor of shape {tuple(tokens.shape)} and dtype {tokens.dtype}"
                    if isinstance(tokens, torch.Tensor) else type(tokens).__name__)
            raise ValueError(f"tokens must be an integer tensor of ids [batch, N]; got {what} (a single sequence: "
                             "tokens[None]).")
        B, N = tokens.shape
        if N > self.max_len:
            raise ValueError(f"sequence length {N} exceeds max_len={self.max_len}.")
        V = self.emb.num_embeddings
        if tokens.numel() and (int(tokens.min()) < 0 or int(tokens.max()) >= V):   # a raw IndexError
            raise ValueError(f"token ids must lie in 0..{V - 1} (the vocabulary); got {int(tokens.min())} to "
                             f"{int(tokens.max())}.")
        if mask == "causal":
            allowed = torch.ones(N, N, dtype=torch.bool, device=tokens.device).tril()
        elif mask == "full":
            allowed = torch.ones(N, N, dtype=torch.bool, device=tokens.device)
        else:
            raise ValueError(f"mask must be 'causal' or 'full', got {mask!r}.")
        self.store = {"inputs": [], "scores": [], "alphas": [], "xhat": [], "allowed": allowed}
        x = self.emb(tokens) + self.pos(torch.arange(N, device=tokens.device))
        for block in self.blocks:
            if x.requires_grad:
                x.retain_grad()
            self.store["inputs"].append(x)
            x = block(x, allowed, self.store)
        return self.unembed(x)


def next_token_loss(model: TinyAttentionModel, tokens: torch.Tensor) -> torch.Tensor:
    """Autoregressive objective (Eq. S7): position ``i`` predicts token ``i+1``, causal mask."""
    logits = model(tokens, mask="causal")
    return nn.functional.cross_entropy(
        logits[:, :-1].reshape(-1, logits.shape[-1]), tokens[:, 1:].reshape(-1), reduction="sum")


def masked_token_loss(model: TinyAttentionModel, tokens: torch.Tensor, masked: torch.Tensor,
                      mask_id: int) -> torch.Tensor:
    """Bidirectional masked objective (Eq. S10): masked positions are replaced by
    ``mask_id`` and predicted from the whole sequence (full attention)."""
    V = model.emb.num_embeddings
    if isinstance(mask_id, (bool, np.bool_)) or not isinstance(mask_id, (int, np.integer)) or not 0 <= mask_id < V:
        # an id past the vocabulary was reported as a token id of the sequence; 2.5 was filled in as 2
        raise ValueError(f"mask_id must be a token id of the model's vocabulary, 0..{V - 1}; got {mask_id!r}.")
    if not isinstance(masked, torch.Tensor) or masked.dtype != torch.bool or masked.shape != tokens.shape:
        what = (f"a tensor of shape {tuple(masked.shape)} and dtype {masked.dtype}"
                if isinstance(masked, torch.Tensor) else type(masked).__name__)
        raise ValueError(f"masked must be a boolean tensor of the tokens' shape {tuple(tokens.shape)}; got {what}.")
    inputs = tokens.masked_fill(masked, mask_id)
    logits = model(inputs, mask="full")
    return nn.functional.cross_entropy(logits[masked], tokens[masked], reduction="sum")


def objective_loss(model: TinyAttentionModel, batch: torch.Tensor, objective: str, gen: torch.Generator,
                   mask_id: int, mask_rate: float = 0.15) -> tuple[torch.Tensor, int]:
    """The summed loss of one batch under ``objective`` and the number of predictions it
    sums: next-token (Eq. S7) or masked (Eq. S10, positions drawn at ``mask_rate`` from
    ``gen``, at least one per sequence)."""
    if objective not in ("autoregressive", "bidirectional"):   # any other name trained the masked one
        raise ValueError(f"objective must be 'autoregressive' or 'bidirectional', got {objective!r}.")
    if objective == "autoregressive":
        return next_token_loss(model, batch), batch.shape[0] * (batch.shape[1] - 1)
    if isinstance(mask_rate, (bool, np.bool_)) or not isinstance(mask_rate, (int, float, np.integer, np.floating)) \
            or not 0 < mask_rate < 1:
        # NaN, 0 or -1 masked one position a sequence and 1.5 every one, without a word
        raise ValueError(f"mask_rate must lie in (0, 1) (the share of positions masked); got {mask_rate!r}.")
    masked = torch.rand(batch.shape, generator=gen) < mask_rate
    masked[:, 0] |= ~masked.any(dim=1)  # at least one prediction per sequence
    return masked_token_loss(model, batch, masked, mask_id), int(masked.sum())


def bilinear_forms(model: TinyAttentionModel) -> list[torch.Tensor]:
    """The layer forms ``M_l`` (rows = query side): ``W`` or ``sum_h Wq_h^T Wk_h``."""
    out = []
    for b in model.blocks:
        out.append(b.W.detach().clone() if b.explicit
                   else (b.q.weight.T @ b.k.weight).detach().clone())
    return out


def train_objective(sequences: np.ndarray, objective: Literal["autoregressive", "bidirectional"],
                    steps: int, d: int = 64, n_layers: int = 2, n_heads: int = 4,
                    batch_size: int = 32, lr: float = 3e-3, mask_rate: float = 0.15,
                    eval_every: int = 25, seed: int = 0):
    """Train a fresh :class:`TinyAttentionModel` with one objective; record the scores.

    ``sequences``: int array ``[n_sequences, N]`` with ids in ``0..V-1``; id ``V`` is added
    as the mask token.  Returns a tidy ``pandas.DataFrame`` with columns ``objective, step,
    layer, loss, symmetry, directionality`` (scores of the layer form ``M_l``, computed by
    :mod:`companion.core.scores`).
    """
    import pandas as pd

    from .scores import directionality_score, symmetry_score

    if objective not in ("autoregressive", "bidirectional"):
        raise ValueError(f"objective must be 'autoregressive' or 'bidirectional', got {objective!r}.")
    raw = np.asarray(sequences)
    if raw.ndim != 2 or raw.shape[1] < 2 or raw.shape[0] < 1 or not np.issubdtype(raw.dtype, np.integer):
        raise ValueError(f"sequences must be token ids [n_sequences, N] with N >= 2 (a sequence of 1 token has no "
                         f"next token: 0 predictions, a loss of 0/0); got shape {raw.shape} of {raw.dtype}.")
    if raw.min() < 0:
        raise ValueError(f"sequences hold a negative token id ({int(raw.min())}); ids run from 0 to V-1.")
    for name, v, least in (("steps", steps, 0), ("eval_every", eval_every, 1), ("batch_size", batch_size, 1)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < least:
            raise ValueError(f"{name} must be a whole number >= {least}; got {v!r}.")
    if objective == "bidirectional" and not 0 < mask_rate < 1:
        raise ValueError(f"mask_rate must lie in (0, 1) (the share of positions masked); got {mask_rate!r}.")
    seqs = torch.as_tensor(raw, dtype=torch.long)
    V = int(seqs.max()) + 2
    mask_id = V - 1
    model = TinyAttentionModel(V, d=d, n_layers=n_layers, n_heads=n_heads,
                               max_len=seqs.shape[1], seed=seed)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    gen = torch.Generator().manual_seed(seed + 1)
    rows = []
    running = float("nan")
    for step in range(steps + 1):
        if step % eval_every == 0 or step == steps:
            for l, M in enumerate(bilinear_forms(model)):
                rows.append({"objective": objective, "step": step, "layer": l, "loss": running,
                             "symmetry": symmetry_score(M),
                             "directionality": directionality_score(M)})
        if step == steps:
            break
        idx = torch.randint(len(seqs), (batch_size,), generator=gen)
        batch = seqs[idx]
        loss, n_pred = objective_loss(model, batch, objective, gen, mask_id, mask_rate)
        opt.zero_grad()
        (loss / n_pred).backward()
        opt.step()
        running = float(loss.detach()) / n_pred
    return pd.DataFrame(rows)


def implicit_update_errors(etas, seed: int = 0, d: int = 16, N: int = 12, vocab: int = 20):
    """Remark S1.6: one SGD step on separate ``Wq, Wk`` and the change of ``M = Wq^T Wk``.

    For each learning rate ``eta`` a fresh one-layer model (one head, ``d x d``
    projections) takes one SGD step on the next-token loss of a fixed random sequence.
    With ``G = dL/dM = sum_ij beta_ij x_i x_j^T`` (read off the scores), the first-order
    change is ``-eta (Wq^T Wq G + G Wk^T Wk)`` (Eqs. S39-S40 in this book's orientation,
    with the minus sign of descent) and the remainder is exactly ``eta^2 G M^T G``.
    Returns a ``pandas.DataFrame`` with ``eta, error`` (Frobenius norm of the change minus
    the first-order term), ``remainder`` (``eta^2 ||G M^T G||``), ``cos_to_G`` (cosine
    between the first-order change and ``-G``).
    """
    import pandas as pd

    etas = list(etas)
    for eta in etas:   # NaN gave a row of NaN errors, inf a NaN change
        if isinstance(eta, (bool, np.bool_)) or not isinstance(eta, (int, float, np.integer, np.floating)) \
                or not _finite(eta) or eta <= 0:
            raise ValueError(f"each learning rate eta must be a finite number > 0; got {eta!r}.")
    tokens = torch.randint(0, vocab, (1, N), generator=torch.Generator().manual_seed(seed))
    rows = []
    for eta in etas:
        model = TinyAttentionModel(vocab, d=d, n_layers=1, n_heads=1, max_len=N, seed=seed).double()
        blk = model.blocks[0]
        A, B = blk.q.weight.detach().clone(), blk.k.weight.detach().clone()
        M0 = A.T @ B
        loss = next_token_loss(model, tokens)
        model.zero_grad()
        loss.backward()
        X = model.store["inputs"][0].detach()[0]
        beta = model.store["scores"][0].grad[0, 0]
        G = X.T @ beta @ X
        with torch.no_grad():   # one plain SGD step, p <- p - eta grad (what torch.optim.SGD does, without
            for p in model.parameters():   # the seconds its first step spends importing torch's compiler)
                if p.grad is not None:
                    p.add_(p.grad, alpha=-eta)
        M1 = blk.q.weight.detach().T @ blk.k.weight.detach()
        first = -eta * (A.T @ A @ G + G @ B.T @ B)
        rows.append({
            "eta": eta,
            "change": float(torch.linalg.norm(M1 - M0)),
            "error": float(torch.linalg.norm(M1 - M0 - first)),
            "remainder": float(eta ** 2 * torch.linalg.norm(G @ M0.T @ G)),
            "cos_to_G": float((first * -G).sum() / (torch.linalg.norm(first) * torch.linalg.norm(G))),
            "grad_check": float(torch.linalg.norm(blk.q.weight.grad - B @ G.T)
                                + torch.linalg.norm(blk.k.weight.grad - A @ G)),
        })
    return pd.DataFrame(rows)


def proof_beta_relative_error(softmax: bool, seed: int = 0) -> float:
    """Relative error of the gradient rebuilt with the proof's ``beta_ij = delta_i^T x_j``
    (Eqs. S31-S36) in the last layer of a two-layer explicit-``W`` model, with or without
    the softmax.  Exact (~1e-16) without softmax; large with it."""
    model = TinyAttentionModel(13, d=8, n_layers=2, explicit=True, softmax=softmax,
                               max_len=10, seed=seed).double()
    tokens = torch.randint(0, 12, (4, 10), generator=torch.Generator().manual_seed(seed))
    next_token_loss(model, tokens).backward()
    block, X = model.blocks[-1], model.store["inputs"][-1].detach()
    delta = model.store["xhat"][-1].grad @ block.v.weight.detach() / math.sqrt(block.d_head)
    beta = (delta @ X.transpose(-1, -2)) * model.store["allowed"]
    rebuilt = X.transpose(-1, -2) @ beta @ X
    rebuilt = rebuilt.sum(0)
    return float(torch.linalg.norm(block.W.grad - rebuilt) / torch.linalg.norm(block.W.grad))
