"""Evaluation: the held-out loss, the query-key forms' structure scores, the one-mode
memorisation guard (rules v3) and the evaluate step of the training loop.

Evaluation
----------
The held-out loss is the mean cross-entropy over every target of the held-out blocks
(``eval_blocks=None``: the whole held-out split) or of the first ``eval_blocks`` of them.
Its standard error (``eval_loss_se`` in the history) treats blocks as the independent
units: the ratio estimator's standard error of sum(loss) / sum(targets) over blocks.

The memorisation guard reads the losses of training blocks the run has drawn (seen), of
training blocks it has not drawn yet (unseen) and of held-out blocks, each with the same
masks and block count as the held-out loss (:func:`guard_samples`).
"""

from __future__ import annotations

import time

import numpy as np
import torch

from ...base.errors import CompanionError
from ...core.bilinear import bilinear_form, head_factors
from ...core.scores import directionality_score, symmetry_score, symmetry_score_factored, directionality_score_factored
from ..models.bert import is_causal, num_heads, num_kv_heads, qk_weights
from ..models.objectives import objective_terms
from ..text.data import TokenData
from .config import OTHER_OBJECTIVE, TrainConfig
from .devices import _autocast
from .state import _Run, _flush

__all__ = ["EVAL_MASK_SEED", "GUARD_SEEDS", "structure_rows", "guard_samples", "eval_loss"]

EVAL_MASK_SEED = 1234
#: the seeds of the guard's fixed orders of the training and the held-out blocks
GUARD_SEEDS = (4321, 4322)


def structure_rows(model, step: int) -> list[dict]:
    """Per-layer and per-head symmetry and directionality of the model's query-key forms."""
    n_heads, n_kv = num_heads(model), num_kv_heads(model)
    rows = []
    for layer, (wq, wk) in enumerate(qk_weights(model)):
        wq64, wk64 = wq.double().cpu(), wk.double().cpu()
        M = bilinear_form(wq64, wk64, n_heads, n_kv)
        rows.append(dict(step=step, quantity="symmetry", layer=layer, head=-1, value=symmetry_score(M)))
        rows.append(dict(step=step, quantity="directionality", layer=layer, head=-1,
                         value=directionality_score(M)))
        Q, K = head_factors(wq64, wk64, n_heads, n_kv)
        sym = np.atleast_1d(symmetry_score_factored(Q, K))
        dirs = np.atleast_1d(directionality_score_factored(Q, K))
        for h in range(n_heads):
            rows.append(dict(step=step, quantity="symmetry", layer=layer, head=h, value=float(sym[h])))
            rows.append(dict(step=step, quantity="directionality", layer=layer, head=h,
                             value=float(dirs[h])))
    return rows


def _as_tensor(blocks) -> torch.Tensor:
    return blocks if isinstance(blocks, torch.Tensor) else blocks.tensor()


def _mask_switch(model):
    """The model whose attention mask is a switch (``causal``), or None (BERT classes)."""
    model = getattr(model, "_orig_mod", model)  # torch.compile
    model = getattr(model, "module", model)     # DistributedDataParallel
    if not hasattr(model, "causal"):
        model = getattr(model, "model", model)  # SelectiveLM
    return model if hasattr(model, "causal") else None


def guard_samples(data: TokenData, cfg: TrainConfig, seen: torch.Tensor) -> dict:
    """The block samples of the one-mode memorisation guard (rules v3), each as many blocks as
    the held-out loss reads, in eval mode with the held-out masks:

    ``seen``
        training blocks the run has drawn at least once so far;
    ``unseen``
        training blocks it has not drawn yet (the same split, the same documents' mix: which
        blocks are seen is decided by the run's own uniform draws, so only memorising can
        make the two differ);
    ``heldout``
        a uniform random sample of the held-out split (split by document: on a corpus whose
        sources differ in size, its mix of sources is not the training split's, so it is
        the reference only where every training block has been seen).

    Each is the first blocks of one fixed random order of its split (:data:`GUARD_SEEDS`)
    that meet the condition, so a run reads the same blocks at every evaluation as long as
    they stay seen or unseen."""
    n_eval = data.eval.shape[0] if cfg.eval_blocks is None else min(cfg.eval_blocks, data.eval.shape[0])
    order = torch.randperm(data.train.shape[0], generator=torch.Generator().manual_seed(GUARD_SEEDS[0]))
    held = torch.randperm(data.eval.shape[0], generator=torch.Generator().manual_seed(GUARD_SEEDS[1]))[:n_eval]
    picks = {"seen": order[seen[order]][:n_eval], "unseen": order[~seen[order]][:n_eval]}
    out = {k: _as_tensor(data.train[v.sort().values]) for k, v in picks.items() if v.numel()}
    out["heldout"] = _as_tensor(data.eval[held.sort().values])
    return out


@torch.no_grad()
def eval_loss(net, data: TokenData, cfg: TrainConfig, device, mode: str | None = None,
              blocks=None) -> tuple[float, float, int]:
    """Held-out loss over fixed blocks and fixed masks (no dropout): ``(mean, se, blocks)``.
    The masks are drawn batch by batch (``cfg.batch_size`` blocks) from one fixed generator,
    so they are the same at every step and in every run of the same batch size.

    ``mode`` evaluates another objective than the run's (``eval_other``): the model's mask
    switch is set for it and restored afterwards.  ``blocks`` reads other blocks than the
    held-out ones with the same masks and in the same mode (the samples of
    :func:`guard_samples`, for the one-mode memorisation guard).

    ``mean`` is sum(loss) / sum(targets) over all targets; ``se`` its standard error with
    blocks as the independent units (ratio estimator), ``nan`` with fewer than 2 blocks.
    The model comes back in the train/eval state it was passed in.
    """
    mode = cfg.mode if mode is None else mode
    switch = _mask_switch(net) if mode != cfg.mode else None
    if mode != cfg.mode and switch is None:
        raise CompanionError("the other objective's loss needs a model whose attention mask is a switch "
                             "(a LLaMA checkpoint); BERT training models fix theirs in the class.")
    was = switch.causal if switch is not None else None
    if switch is not None:
        switch.causal = is_causal(mode)
    was_training = net.training  # restored after: a caller's model in eval mode stays without dropout
    net.eval()
    if blocks is None:
        blocks = data.eval if cfg.eval_blocks is None else data.eval[: cfg.eval_blocks]
    g = torch.Generator().manual_seed(EVAL_MASK_SEED)
    sums, counts = [], []
    try:
        for i in range(0, blocks.shape[0], cfg.batch_size):
            ids = _as_tensor(blocks[i: i + cfg.batch_size])
            with _autocast(cfg, device):
                losses, block, valid = objective_terms(net, ids, mode, data.masking, g)
            w = valid.to(torch.float64)
            sums.append(torch.zeros(ids.shape[0], dtype=torch.float64, device=losses.device)
                        .index_add_(0, block, losses.double() * w))
            counts.append(torch.zeros(ids.shape[0], dtype=torch.float64, device=losses.device)
                          .index_add_(0, block, w))
    finally:
        if switch is not None:
            switch.causal = was
        net.train(was_training)
    S, C = torch.cat(sums).cpu(), torch.cat(counts).cpu()
    keep = C > 0
    S, C = S[keep], C[keep]
    b = int(keep.sum())
    if b == 0:
        raise ValueError("the held-out blocks hold no prediction targets; use more eval blocks.")
    mean = float(S.sum() / C.sum())
    se = float(((S - mean * C) ** 2).sum().div(b * (b - 1)).sqrt() / C.mean()) if b > 1 else float("nan")
    return mean, se, b


def _evaluate(run: _Run, step: int, progress=None) -> None:
    """Log ``step``'s held-out loss and its standard error, the one-mode memorisation guard
    (``cfg.guard``: seen, unseen and held-out blocks' losses, the seen share), the other
    objective's loss (``cfg.eval_other``) and the query-key forms' structure scores."""
    _flush(run)
    cfg, data, device, fwd, rows = run.cfg, run.data, run.device, run.fwd, run.rows
    el, se, _ = eval_loss(fwd, data, cfg, device)
    rows.append(dict(step=step, quantity="eval_loss", layer=-1, head=-1, value=el))
    rows.append(dict(step=step, quantity="eval_loss_se", layer=-1, head=-1, value=se))
    if cfg.guard:   # one mode, one mask draw, one block count: text seen against text not seen
        samples = guard_samples(data, cfg, run.seen)
        for name, blocks in samples.items():
            gl, gse, _ = eval_loss(fwd, data, cfg, device, blocks=blocks)
            rows.append(dict(step=step, quantity=f"guard_{name}_loss", layer=-1, head=-1, value=gl))
            rows.append(dict(step=step, quantity=f"guard_{name}_loss_se", layer=-1, head=-1, value=gse))
            rows.append(dict(step=step, quantity=f"guard_{name}_blocks", layer=-1, head=-1,
                             value=float(blocks.shape[0])))
        rows.append(dict(step=step, quantity="guard_seen_share", layer=-1, head=-1,
                         value=float(run.seen.float().mean())))
    if cfg.eval_other:
        el2, se2, _ = eval_loss(fwd, data, cfg, device, mode=OTHER_OBJECTIVE[cfg.mode])
        rows.append(dict(step=step, quantity="eval_loss_other", layer=-1, head=-1, value=el2))
        rows.append(dict(step=step, quantity="eval_loss_other_se", layer=-1, head=-1, value=se2))
    rows.extend(structure_rows(run.model, step))
    if progress is not None and run.rank == 0:
        sym = np.median([r["value"] for r in rows if r["step"] == step and r["quantity"] == "symmetry"
                         and r["head"] == -1])
        progress(f"step {step}/{cfg.steps} eval_loss {el:.4f} median_symmetry {sym:.3f} "
                 f"elapsed {time.monotonic() - run.m0:.0f}s")   # a clock set back moves no pace
