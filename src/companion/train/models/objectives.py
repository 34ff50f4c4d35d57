"""Training objectives, selectable by name (Sec. 4 and Appendix S2).

``"encoder"``
    Masked language modelling: 15% of the positions are chosen; of those 80% become
    ``[MASK]``, 10% a random token, 10% stay; the loss is the cross-entropy at the chosen
    positions, with bidirectional attention (BERT's recipe).
``"decoder"``
    True autoregressive training: causal attention, and every position ``t`` predicts
    token ``t + 1`` from the uncorrupted tokens ``<= t``.
``"authors-decoder"``
    What the paper's "decoder" runs did: the masked-LM collator under a causal mask, with
    the one-step label shift that ``BertLMHeadModel`` applies.  Inputs are corrupted as in
    ``"encoder"``; position ``t`` predicts the original token ``t + 1`` only where ``t + 1``
    was chosen for masking, i.e. about 15% of the next-token targets, from a context that
    contains ``[MASK]`` and random tokens.

All three take a ``[batch, seq]`` tensor of token ids and a ``torch.Generator`` for the
masking, and return the mean cross-entropy over the targets.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from ..text.masking import MaskingSpec  # noqa: F401  (re-exported: the objectives take it)
from .bert import MODES, is_causal

__all__ = ["MaskingSpec", "mask_tokens", "objective_loss", "objective_terms", "lm_logits",
           "SelectiveLM", "target_bound", "attends_causally"]


def _token_ids(ids: torch.Tensor) -> torch.Tensor:
    """``ids`` as int64 (blocks of int32, int16 or uint8 ids are the same ids); ids that are
    no whole numbers (floats, booleans) are refused in one line."""
    if not isinstance(ids, torch.Tensor):
        raise ValueError(f"token ids must be a tensor of whole numbers [batch, seq]; got a {type(ids).__name__}.")
    if ids.dtype == torch.bool or ids.dtype.is_floating_point or ids.dtype.is_complex:
        raise ValueError(f"token ids must be whole numbers (an integer tensor); got {ids.dtype}: convert the "
                         "blocks with .long().")
    return ids if ids.dtype == torch.int64 else ids.to(torch.int64)


def mask_tokens(ids: torch.Tensor, spec: MaskingSpec, generator: torch.Generator):
    """BERT's 80/10/10 corruption.  Returns ``(inputs, labels)``; labels are -100 off-target.

    Random draws come from ``generator`` (on the CPU) so the corruption is reproducible and
    resumable independently of dropout.
    """
    ids_cpu = _token_ids(ids).cpu()
    shape = ids_cpu.shape
    chosen = torch.rand(shape, generator=generator) < spec.prob
    chosen &= ids_cpu >= spec.first_regular_id
    labels = torch.where(chosen, ids_cpu, torch.full_like(ids_cpu, -100))
    action = torch.rand(shape, generator=generator)
    random_tokens = torch.randint(spec.first_regular_id, spec.vocab_size, shape, generator=generator)
    inputs = ids_cpu.clone()
    inputs[chosen & (action < 0.8)] = spec.mask_id
    swap = chosen & (action >= 0.8) & (action < 0.9)
    inputs[swap] = random_tokens[swap]
    return inputs.to(ids.device), labels.to(ids.device)


class SelectiveLM(nn.Module):
    """An LM (BERT, or :class:`~companion.train.models.llama.LlamaLM`) whose forward evaluates the
    vocabulary head only at selected positions.

    ``select`` is either a boolean mask ``[batch, seq]`` or a LongTensor of flat position
    indices ``[k]`` (into ``batch * seq``).  Evaluating the head only at the target
    positions gives the same loss as the full head and saves most of its cost in
    masked-LM training.  Training goes through this module's ``forward`` so that
    ``DistributedDataParallel`` can wrap it.
    """

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, inputs: torch.Tensor, select: torch.Tensor | None = None) -> torch.Tensor:
        bert = hasattr(self.model, "bert")  # else a model with hidden_states() and head() (llama.LlamaLM)
        hidden = self.model.bert(input_ids=inputs).last_hidden_state if bert else self.model.hidden_states(inputs)
        if select is not None:
            if select.dtype == torch.bool:
                hidden = hidden[select]
            else:  # fixed-size gather: no data-dependent shape, no host sync
                hidden = hidden.reshape(-1, hidden.shape[-1]).index_select(0, select)
        return self.model.cls(hidden) if bert else self.model.head(hidden)


def lm_logits(model, inputs: torch.Tensor, select: torch.Tensor | None = None) -> torch.Tensor:
    """Logits of the LM head (optionally only at ``select``) for a BERT model or a wrapper."""
    if (hasattr(model, "bert") and hasattr(model, "cls")) or hasattr(model, "hidden_states"):  # a bare model
        model = SelectiveLM(model)
    return model(inputs, select)


def target_bound(n_positions: int, prob: float) -> int:
    """How many positions the fixed-size gather keeps for ``n_positions`` masking draws.

    The number of chosen positions is Binomial(n, p); the bound is its mean plus eight
    standard deviations (exceeded with probability below 1e-15), so the gathered set
    holds every chosen position in practice while its size never depends on the draw.
    """
    mean = prob * n_positions
    sd = math.sqrt(n_positions * prob * (1 - prob))
    return min(n_positions, int(math.ceil(mean + 8 * sd)) + 1)


def _device_of(model) -> torch.device:
    try:
        return next(model.parameters()).device
    except (StopIteration, AttributeError):
        return torch.device("cpu")


def attends_causally(model) -> bool | None:
    """Whether ``model`` (through torch.compile, DistributedDataParallel and
    :class:`SelectiveLM` wrappers) attends causally: a LLaMA's mask switch ``causal``, a BERT
    class's ``config.is_decoder``; None when the model says neither."""
    for _ in range(5):
        if hasattr(model, "causal"):
            return bool(model.causal)
        cfg = getattr(model, "config", None)
        if cfg is not None and hasattr(cfg, "is_decoder"):
            return bool(cfg.is_decoder)
        inner = next((getattr(model, a) for a in ("_orig_mod", "module", "model")
                      if isinstance(getattr(model, a, None), nn.Module)), None)
        if inner is None:
            return None
        model = inner
    return None


def objective_terms(model, ids: torch.Tensor, mode: str, spec: MaskingSpec,
                    generator: torch.Generator):
    """Per-target cross-entropies of ``mode`` on ``ids``, with each target's block.

    Returns ``(losses, block, valid)``, three tensors of one fixed length on the model's
    device: the cross-entropy of each gathered target, the row of ``ids`` it belongs to,
    and whether it is a real target (the masked objectives gather a fixed number of
    positions, :func:`target_bound`; the surplus is padding with ``valid = False``).
    The masking is drawn on the CPU from ``generator`` before anything moves to the device.
    """
    if mode not in MODES:
        raise ValueError(f"unknown objective {mode!r}; choose one of {MODES}.")
    ids = _token_ids(ids)
    if ids.ndim != 2 or ids.shape[1] < 2:
        raise ValueError(f"ids must be [batch, seq] with seq >= 2; got {tuple(ids.shape)}.")
    causal = attends_causally(model)
    if causal is not None and causal != is_causal(mode):
        # the other mask would train a third objective nobody named (e.g. masked LM under a causal mask)
        raise ValueError(f"objective {mode!r} needs a {'causal' if is_causal(mode) else 'bidirectional (not causal)'} "
                         f"mask, but the model attends {'causally' if causal else 'bidirectionally (not causal)'}; "
                         f"build or load the model for mode {mode!r} (or set its mask switch, model.causal).")
    device = _device_of(model)
    ids = ids.cpu()
    if mode == "decoder":
        inputs, targets = ids[:, :-1], ids[:, 1:]
        logits = lm_logits(model, inputs.to(device, non_blocking=True))
        t = targets.reshape(-1).to(device, non_blocking=True)
        losses = F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), t, reduction="none")
        block = torch.arange(ids.shape[0], device=device).repeat_interleave(targets.shape[1])
        return losses, block, torch.ones_like(t, dtype=torch.bool)
    inputs, labels = mask_tokens(ids, spec, generator)
    if mode == "authors-decoder":  # position t predicts label t+1 (BertLMHeadModel's shift)
        inputs, labels = inputs[:, :-1], labels[:, 1:]
    flat = labels.reshape(-1)
    k = target_bound(flat.numel(), spec.prob)
    order = torch.argsort((flat == -100).to(torch.int8), stable=True)[:k]  # chosen first
    target = flat[order]
    valid = target != -100
    logits = lm_logits(model, inputs.to(device, non_blocking=True), order.to(device, non_blocking=True))
    losses = F.cross_entropy(logits.float(), target.clamp_min(0).to(device, non_blocking=True),
                             reduction="none")
    block = (order // labels.shape[1]).to(device, non_blocking=True)
    return losses, block, valid.to(device, non_blocking=True)


def objective_loss(model, ids: torch.Tensor, mode: str, spec: MaskingSpec,
                   generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """Mean cross-entropy of ``mode`` on the batch ``ids``; returns ``(loss, n_targets)``.

    Both are tensors on the model's device (nothing is synchronised with the host).  A
    batch in which no position was chosen gives a zero loss that still has a graph.
    """
    losses, _, valid = objective_terms(model, ids, mode, spec, generator)
    n = valid.sum()
    loss = torch.where(valid, losses, torch.zeros_like(losses)).sum() / n.clamp_min(1)
    return loss, n
