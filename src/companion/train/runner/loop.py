"""The training loop: AdamW, warmup + linear decay, eval loss and structure scores (Sec. 4).

One function, :func:`train`, runs a configuration (:class:`TrainConfig`) and returns a
tidy history table with one row per ``(step, quantity, layer, head)``.  It reads as a
sequence of named steps over one state object (``_Run``): set-up (device, data, model,
optimiser, schedule, generators), resume (the refusals, then the checkpoint's state), and
per step accumulate (micro-batches), update (clip, optimiser, schedule, penalty), evaluate
(held-out loss, structure scores, memorisation guard) and checkpoint.  This module holds
:func:`train` and the accumulate and update steps; the others live by concern beside it:
:mod:`~companion.train.runner.config` (:class:`TrainConfig`, the schedule),
:mod:`~companion.train.runner.devices` (device, process group, bf16 autocast),
:mod:`~companion.train.runner.set_up` (data, model, optimiser, generators),
:mod:`~companion.train.runner.state` (``_Run``, the flush of the logged losses),
:mod:`~companion.train.runner.evaluation` (held-out loss, structure scores, the guard),
:mod:`~companion.train.runner.checkpoints` (checkpoints with digests, resume, kept weights)
and :mod:`~companion.train.runner.provenance` (``provenance.json``, ``history.csv``).  The rows:

``train_loss``, ``eval_loss``, ``lr``, ``penalty``
    ``layer = head = -1``.
``symmetry``, ``directionality``
    per layer (``head = -1``: the layer's full form ``M = sum_h Wq_h^T Wk_h``, what the
    paper's figures show) and per head (``head = 0..H-1``: ``M_h = Wq_h^T Wk_h``), from
    :mod:`companion.core.scores` in float64, logged every ``eval_every`` steps and at step 0.

Reproducibility and resume
--------------------------
Every random draw has its own generator: model initialisation (``seed``), the order of
training blocks and the masking (``seed + 1``, ``seed + 2``) and dropout (torch's global
generator, seeded with ``seed``).  Evaluation masks come from a fixed generator, drawn batch
by batch, so eval losses of different steps, and of runs with the same batch size, see the
same corruption (a run of another ``batch_size`` draws other masks for the same blocks).  A checkpoint stores model,
optimiser, scheduler, every rank's generator states and the history, in types that
``torch.load(weights_only=True)`` accepts (a checkpoint is never unpickled), so a resumed
run continues exactly where it stopped; on the CPU two runs with the same configuration
agree bit for bit, and so do a resumed and an uninterrupted two-process run (tests).

No host synchronisation per step
--------------------------------
The masked objectives gather a fixed number of positions
(:func:`~companion.train.models.objectives.target_bound`), so shapes never depend on the draw and
``torch.compile`` sees one graph; losses stay on the device and are copied to the host
only when they are logged (at each evaluation and checkpoint).

GPU and several GPUs
--------------------
On CUDA the forward pass runs under bf16 autocast (``bf16=True``) where the card computes
bf16 natively (compute capability 8.0 or later: A100, H100, L4; not a T4 or V100, where
PyTorch would emulate it, slower than float32, so the pass stays in float32), AdamW is
fused, and TF32 matmuls are allowed.  Launched with ``torchrun --nproc_per_node N``, the loop joins
the process group (NCCL on GPUs, gloo on CPUs), wraps the model in
``DistributedDataParallel``, gives each rank its slice of every global batch and skips the
gradient all-reduce on all but the last accumulation micro-batch.  Rank 0 logs and writes.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import pandas as pd
import torch

from ..models.init import symmetry_penalty
from ..models.objectives import objective_loss
from ..text.data import TokenData
from .checkpoints import _checkpoint, _resume, keep_weights, kept_weights_path, load_checkpoint
from .config import TrainConfig
from .devices import _autocast, _set_up_device
from .evaluation import EVAL_MASK_SEED, GUARD_SEEDS, _evaluate, eval_loss, guard_samples, structure_rows
from .provenance import read_run, write_run
from .set_up import _set_up, _set_up_data
from .state import _Run, _flush

# the names below stay importable from here, where the book and the package's users import them
__all__ = ["TrainConfig", "train", "structure_rows", "write_run", "read_run", "EVAL_MASK_SEED",
           "eval_loss", "load_checkpoint", "guard_samples", "GUARD_SEEDS", "kept_weights_path"]


def train(cfg: TrainConfig, data: TokenData | None = None, out_dir: str | Path | None = None,
          resume: bool = False, stop_at: int | None = None, progress=None,
          return_model: bool = False):
    """Train one configuration; return (and, with ``out_dir``, write) the history table.

    ``stop_at`` ends the run early at that step (after writing a checkpoint when
    ``out_dir`` is given): the learning-rate schedule still follows ``cfg.steps``, so a
    later ``resume=True`` call continues the same run.  ``progress`` is called with a short
    line after each evaluation.  With ``return_model`` the result is ``(history, model)``.

    The run is a sequence of named steps over one state object (:class:`_Run`): set-up,
    resume, then per step accumulate, update, evaluate and checkpoint.
    """
    if stop_at is not None:
        import numbers

        if isinstance(stop_at, bool) or not isinstance(stop_at, numbers.Integral) or stop_at < 1:
            from ...base.errors import CompanionError

            raise CompanionError(f"stop_at={stop_at!r} is no step the run can stop at; give a step of 1 or more, "
                                 "a whole number (or None to train to cfg.steps).")
        stop_at = int(stop_at)   # a NumPy integer (a step read from a table) is that step
    # set-up: process group and device, data, model (seeded), optimiser, schedule, generators
    world, rank, device = _set_up_device(cfg)
    data = _set_up_data(cfg, data, world)
    run = _set_up(cfg, data, device, world, rank)
    out = Path(out_dir) if out_dir is not None else None
    ckpt_path = out / "checkpoint.pt" if out is not None else None

    # resume: refuse a checkpoint of other data, configuration or process count; restore its state
    if resume:
        _resume(run, ckpt_path)
        if stop_at is not None and stop_at < run.start:   # the run past it was handed back as if stopped there
            from ...base.errors import CompanionError

            raise CompanionError(f"stop_at={stop_at} is before the step the checkpoint in {out} reached "
                                 f"({run.start}); a resumed run only goes on: give stop_at >= {run.start}, or start "
                                 "the run again without resume.")
    run.start_clock()

    # evaluate the starting point of a new run (a resumed run's history already holds it)
    if run.start == 0:
        _evaluate(run, 0, progress)
    end = cfg.steps if stop_at is None else min(stop_at, cfg.steps)
    run.model.train()
    for step in range(run.start, end):
        done = step + 1
        # accumulate: the step's micro-batches, gradients summed over them (and the ranks)
        total = _accumulate(run, step)
        # update: clip, optimiser and schedule step, the update's structure, the losses to log
        _update(run, step, total)
        # evaluate: held-out loss, structure scores, memorisation guard
        if done % cfg.eval_every == 0 or done == cfg.steps:
            _evaluate(run, done, progress)
        # checkpoint: kept weights, then model, optimiser, schedule, generators and history
        if out is not None and done in cfg.keep_weights and rank == 0:
            keep_weights(run.model, kept_weights_path(out, done))
        if out is not None and ((cfg.checkpoint_every and done % cfg.checkpoint_every == 0) or done == end):
            _checkpoint(run, ckpt_path, done)

    history = _history(run)
    return (history, run.model) if return_model else history


def _accumulate(run: _Run, step: int) -> torch.Tensor:
    """Forward and backward passes over the step's ``grad_accum`` micro-batches; returns the
    step's mean training loss (on the device).  Each micro-batch draws one global batch of
    block indices (every rank the same draw, marked seen) and trains on this rank's slice;
    the gradient all-reduce runs on the last micro-batch only.  The symmetry penalty is
    added in float32, outside autocast."""
    cfg, model = run.cfg, run.model
    total = torch.zeros((), device=run.device)
    n_train = run.data.train.shape[0]
    for micro in range(cfg.grad_accum):
        idx = torch.randint(0, n_train, (cfg.batch_size * run.world,), generator=run.gens["data"])
        run.seen[idx] = True   # every rank's blocks of the global batch
        idx = idx[run.rank * cfg.batch_size:(run.rank + 1) * cfg.batch_size]
        ids = run.data.train[idx]  # on the CPU: the masking is drawn there
        sync_ctx = run.net.no_sync() if (run.world > 1 and micro < cfg.grad_accum - 1) else contextlib.nullcontext()
        with sync_ctx:
            with _autocast(cfg, run.device):
                loss, _ = objective_loss(run.fwd, ids, cfg.mode, run.data.masking, run.gens["mask"])
            obj = loss / cfg.grad_accum
            if cfg.penalty != "none" and cfg.penalty_coef > 0:  # in float32, outside autocast
                pen = symmetry_penalty(model, cfg.penalty)
                obj = obj + cfg.penalty_coef * pen / cfg.grad_accum
            obj.backward()
        total = total + loss.detach() / cfg.grad_accum
    return total


def _update(run: _Run, step: int, total: torch.Tensor) -> None:
    """The optimiser step of 0-based ``step`` (logged at ``step + 1``): the update recorder
    reads the raw gradients, the gradients are clipped to ``max_grad_norm``, the learning
    rate the step uses is logged, optimiser and schedule step, the recorder measures the
    applied update; the training loss (and the penalty) wait on the device in ``pending``."""
    cfg, model = run.cfg, run.model
    if run.recorder is not None:
        run.recorder.before_step(model, step)
    if cfg.max_grad_norm:
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.max_grad_norm)
    run.rows.append(dict(step=step + 1, quantity="lr", layer=-1, head=-1, value=run.sched.get_last_lr()[0]))
    run.opt.step()
    run.sched.step()
    if run.recorder is not None:
        run.rows.extend(run.recorder.after_step(model, step))
    run.opt.zero_grad(set_to_none=True)
    run.pending.append((step + 1, "train_loss", total))
    if cfg.penalty != "none":
        with torch.no_grad():
            run.pending.append((step + 1, "penalty", symmetry_penalty(model, cfg.penalty).detach()))


def _history(run: _Run) -> pd.DataFrame:
    """The run's history table (the last losses flushed), in step order, with the earlier
    segments' time and the run's start date in ``attrs``; with several ranks, a barrier."""
    _flush(run)
    history = pd.DataFrame(run.rows, columns=["step", "quantity", "layer", "head", "value"])
    # losses reach the table at the next flush: restore step order (stable within a step)
    history = history.sort_values("step", kind="stable", ignore_index=True)
    history.attrs["elapsed_before"] = run.before  # what the run's earlier segments took
    history.attrs["started"] = run.started
    history.attrs["sittings"] = run.sittings
    if run.world > 1:
        import torch.distributed as dist

        dist.barrier()
    return history
