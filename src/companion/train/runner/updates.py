"""The structure of each update of the query-key forms during training (Prop. 2.2, Thms. 2.3/2.4).

The paper's argument is about updates: every gradient step adds to ``M = W_q^T W_k`` a sum
of rank-one terms (Prop. 2.2, Eq. 6), and the objective decides whether those terms are
nearly symmetric (Thm. 2.4) or build high-norm columns (Thm. 2.3).  An optimiser other
than plain gradient descent changes the update that is applied.  At chosen steps
:class:`UpdateRecorder` logs, per layer ``l``:

``grad_*``
    the gradient-implied change ``G = dW_q^T W_k + W_q^T dW_k`` from the raw gradients,
    before clipping and the optimiser (plain gradient descent applies ``-eta G`` to first
    order, Remark S1.6);
``update_*``
    the applied change ``Delta M = M(t+1) - M(t)`` of the step;
``accum_*``
    the accumulated change ``M(t+1) - M(0)`` since initialisation;

each as its symmetry and directionality (Eqs. 15 and 17; both are unchanged by a sign flip and a
positive scale), and ``update_cos_grad``, the cosine between ``Delta M`` and ``-G`` (1
under plain gradient descent to first order in the learning rate).  The split of the form
into what is left of its start and what training added:

``form_*``
    the scores of the form ``M(t+1)`` itself;
``start_coef``
    ``c = <M(t+1), M(0)> / |M(0)|^2``, the coefficient of the start in the form (1 at the
    start; weight decay shrinks it);
``start_share``
    ``c^2 |M(0)|^2 / |M(t+1)|^2``, the share of the form's squared norm that is the scaled
    start;
``added_*``
    the scores of ``R = M(t+1) - c M(0)``, the part of the form orthogonal to its start.  Rows use the run's
history format (``step, quantity, layer, head=-1, value``), at the step after the update.
"""

from __future__ import annotations

import numpy as np
import torch

from ...core.bilinear import bilinear_form
from ...base.errors import CompanionError
from ...core.scores import directionality_score, symmetry_score
from ..models.bert import num_heads, num_kv_heads, qk_parameters

__all__ = ["OPTIMIZERS", "UPDATE_QUANTITIES", "start_split", "forms", "gradient_forms", "UpdateRecorder", "make_optimizer",
           "window_means"]

#: optimisers the training loop builds (``TrainConfig.optimizer``)
OPTIMIZERS = ("adamw", "adam", "sgd", "sgd-momentum")

UPDATE_QUANTITIES = tuple(f"{kind}_{score}" for kind in ("grad", "update", "accum", "form", "added")
                          for score in ("symmetry", "directionality")) + ("update_cos_grad", "start_coef",
                                                                           "start_share")


def start_split(M: torch.Tensor, M0: torch.Tensor) -> tuple[float, float, torch.Tensor]:
    """``(c, share, R)``: the least-squares coefficient of the start ``M0`` in ``M``, the share
    of ``|M|^2`` that ``c M0`` carries, and the rest ``R = M - c M0`` (orthogonal to ``M0``
    in the Frobenius inner product, so ``|M|^2 = c^2 |M0|^2 + |R|^2``)."""
    n0 = float((M0 * M0).sum())
    if n0 == 0:
        raise CompanionError("the initial form is zero; the start/added split needs a non-zero start.")
    c = float((M * M0).sum()) / n0
    nM = float((M * M).sum())
    return c, (c * c * n0 / nM if nM > 0 else float("nan")), M - c * M0


def _pairs(model):
    return qk_parameters(model)


@torch.no_grad()
def forms(model) -> list[torch.Tensor]:
    """Per layer, the layer's form ``M = sum_h W_{q,h}^T W_{k,h}`` in float64 on the CPU."""
    H, KV = num_heads(model), num_kv_heads(model)
    return [bilinear_form(wq.detach().double().cpu(), wk.detach().double().cpu(), H, KV) for wq, wk in _pairs(model)]


@torch.no_grad()
def gradient_forms(model) -> list[torch.Tensor]:
    """Per layer, ``G = dW_q^T W_k + W_q^T dW_k`` from the parameters' current ``.grad``:
    the derivative of the loss with respect to the layer's form, pushed through the factors
    (the first-order change of ``M`` under gradient descent is ``-eta G``)."""
    H, KV = num_heads(model), num_kv_heads(model)
    out = []
    for wq, wk in _pairs(model):
        if wq.grad is None or wk.grad is None:
            raise CompanionError("update logging found no gradient on a query/key weight; it reads the "
                                 "gradients after backward() and before the optimiser step.")
        q, k = wq.detach().double().cpu(), wk.detach().double().cpu()
        gq, gk = wq.grad.detach().double().cpu(), wk.grad.detach().double().cpu()
        out.append(bilinear_form(gq, k, H, KV) + bilinear_form(q, gk, H, KV))
    return out


def _scores(kind, M, step, layer):
    return [dict(step=step, quantity=f"{kind}_symmetry", layer=layer, head=-1, value=float(symmetry_score(M))),
            dict(step=step, quantity=f"{kind}_directionality", layer=layer, head=-1,
                 value=float(directionality_score(M)))]


class UpdateRecorder:
    """Logs the structure of the updates every ``every`` steps (see the module docstring).

    Call :meth:`before_step` after the backward pass and before gradient clipping and the
    optimiser, :meth:`after_step` after the optimiser; both do nothing at steps that are
    not logged.  ``initial`` is ``M(0)`` per layer (kept in a run's checkpoint, so that a
    resumed run keeps measuring from its true start).
    """

    def __init__(self, model, every: int, initial: list[torch.Tensor] | None = None):
        if not isinstance(every, int) or isinstance(every, bool) or every < 1:
            raise CompanionError(f"the update-logging interval must be a whole number of steps >= 1; got {every!r}.")
        self.every = every
        self.initial = initial if initial is not None else forms(model)
        self._before = None
        self.last: dict | None = None   # the matrices of the last measured update, per layer

    def due(self, step: int) -> bool:
        """Whether the update of 0-based ``step`` (logged at ``step + 1``) is measured."""
        return step % self.every == 0

    def before_step(self, model, step: int) -> None:
        self._before = (forms(model), gradient_forms(model)) if self.due(step) else None

    def after_step(self, model, step: int) -> list[dict]:
        if self._before is None:
            return []
        before, grads = self._before
        self._before = None
        rows = []
        after = forms(model)
        self.last = {"before": before, "after": after, "grad": grads}
        for layer, (M1, M0, G, Minit) in enumerate(zip(after, before, grads, self.initial)):
            dM = M1 - M0
            rows += _scores("grad", G, step + 1, layer)
            rows += _scores("update", dM, step + 1, layer)
            rows += _scores("accum", M1 - Minit, step + 1, layer)
            rows += _scores("form", M1, step + 1, layer)
            c, share, R = start_split(M1, Minit)
            rows += _scores("added", R, step + 1, layer)
            rows += [dict(step=step + 1, quantity="start_coef", layer=layer, head=-1, value=c),
                     dict(step=step + 1, quantity="start_share", layer=layer, head=-1, value=share)]
            denom = float(torch.linalg.norm(dM) * torch.linalg.norm(G))
            cos = float(-(dM * G).sum() / denom) if denom > 0 else float("nan")
            rows.append(dict(step=step + 1, quantity="update_cos_grad", layer=layer, head=-1, value=cos))
        return rows


def make_optimizer(name: str, decay_params, other_params, lr: float, weight_decay: float, fused: bool = False):
    """The optimiser ``name`` (:data:`OPTIMIZERS`) over two parameter groups: matrices, which
    get ``weight_decay``, and vectors (biases, norms), which do not.

    ``adamw``: decoupled decay (the paper's, Appendix S2); ``adam``: decay as an L2 term in
    the gradient; ``sgd``: plain gradient descent; ``sgd-momentum``: heavy-ball momentum 0.9.
    """
    groups = [{"params": list(decay_params), "weight_decay": weight_decay},
              {"params": list(other_params), "weight_decay": 0.0}]
    if name == "adamw":
        return torch.optim.AdamW(groups, lr=lr, betas=(0.9, 0.999), eps=1e-8, fused=fused)
    if name == "adam":
        return torch.optim.Adam(groups, lr=lr, betas=(0.9, 0.999), eps=1e-8)
    if name == "sgd":
        return torch.optim.SGD(groups, lr=lr, momentum=0.0)
    if name == "sgd-momentum":
        return torch.optim.SGD(groups, lr=lr, momentum=0.9)
    raise CompanionError(f"unknown optimiser {name!r}; choose one of {OPTIMIZERS}.")


def window_means(runs, quantity: str = "update_symmetry", fraction: float = 0.1):
    """Per run, the mean of ``quantity`` over its layers and over the logged steps in the
    first ``fraction`` of its training (the window of the ``update_structure`` rule), indexed
    by ``(mode, init, seed)``; runs that logged no updates are absent.

    ``runs`` is a table of :func:`companion.train.runner.runs.load_runs`.
    """
    if quantity not in UPDATE_QUANTITIES:
        raise CompanionError(f"{quantity!r} is not an update quantity; choose one of {UPDATE_QUANTITIES}.")
    if not 0 < fraction <= 1:
        raise CompanionError(f"fraction must lie in (0, 1]; got {fraction}.")
    runs = runs.reset_index(drop=True)
    named = runs.drop_duplicates(["run", "mode", "init", "seed"])
    twice = named[named.duplicated(["mode", "init", "seed"], keep=False)]
    if len(twice):   # one (mode, init, seed) is one run's mean: two runs' rows were pooled into it, unsaid
        r = twice.iloc[0]
        both = sorted(twice.loc[(twice["mode"] == r["mode"]) & (twice["init"] == r["init"])
                                & (twice["seed"] == r["seed"]), "run"])
        raise CompanionError(f"runs {both[0]} and {both[1]} are both {r['mode']} / {r['init']} seed {r['seed']}; a mean "
                             "per (mode, init, seed) would pool them as one run: pass the runs of one body (one "
                             "optimiser, size and corpus) at a time.")
    rows = runs[runs["quantity"] == quantity]
    last = runs.groupby("run")["step"].transform("max")
    rows = rows[rows["step"] <= fraction * last.loc[rows.index]]
    # a layer or step that gave no number makes the run's mean NaN rather than being skipped
    return rows.groupby(["mode", "init", "seed"])["value"].agg(lambda v: v.mean() if v.notna().all() else np.nan)
