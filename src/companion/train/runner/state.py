"""One run's state while it trains (:class:`_Run`), and the flush that moves the losses
waiting on the device into its history."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import torch

from ...base.errors import CompanionError
from ..text.data import TokenData
from .config import TrainConfig
from .updates import UpdateRecorder


@dataclass
class _Run:
    """One run's state while it trains: what the steps of :func:`train` read and change.

    ``model`` is the bare model; ``net`` the :class:`SelectiveLM` around it (wrapped in
    ``DistributedDataParallel`` with several ranks) and ``fwd`` the forward the losses call
    (``net``, compiled with ``cfg.compile``).  ``rows`` is the history so far; ``pending``
    the logged losses still on the device (:func:`_flush` moves them into ``rows``).
    ``seen`` marks the training blocks drawn so far (the guard's seen and unseen samples).
    """

    cfg: TrainConfig
    data: TokenData
    device: torch.device
    world: int
    rank: int
    model: torch.nn.Module
    net: torch.nn.Module
    fwd: torch.nn.Module
    opt: torch.optim.Optimizer
    sched: torch.optim.lr_scheduler.LambdaLR
    gens: dict
    recorder: UpdateRecorder | None
    seen: torch.Tensor
    rows: list = field(default_factory=list)
    pending: list = field(default_factory=list)   # (step, quantity, loss on the device)
    start: int = 0
    # time spent by earlier segments of a resumed run (checkpoints from before this field: 0)
    before: dict = field(default_factory=lambda: {"wall": 0.0, "cpu": 0.0})
    # when the run's first segment started (UTC): what 'judged blind' compares with its rule's commit
    started: str | None = None
    # each segment's machine, from the step it started at (companion.base.runtime.describe_machine)
    sittings: list = field(default_factory=list)
    t0: float = 0.0     # this segment's start by the system clock (a date, never a duration)
    c0: float = 0.0
    m0: float = 0.0     # ... and by the monotonic clock (its wall seconds)

    def start_clock(self) -> None:
        """Start this segment's clocks (wall and CPU); date a new run's start; record the
        machine this segment runs on."""
        from ...base.runtime import describe_machine

        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        self.started = self.started or now
        self.sittings = [*self.sittings, {"from_step": int(self.start), "started": now,
                                          **describe_machine(self.device)}]
        self.t0, self.c0, self.m0 = time.time(), time.process_time(), time.monotonic()

    def elapsed(self) -> dict:
        """Wall and CPU seconds of the run so far, earlier segments included; the wall seconds
        by the monotonic clock, which a system clock set back (NTP after a suspend) never moves:
        by ``time.time`` a segment lasted minus an hour, and its checkpoint was refused."""
        return {"wall": self.before["wall"] + time.monotonic() - self.m0,
                "cpu": self.before["cpu"] + time.process_time() - self.c0}


def _flush(run: _Run) -> None:
    """Copy the pending losses to the host and into the history (with several ranks a
    collective, the global batch's loss the mean of the ranks': every rank flushes at the
    same steps); a training loss that is not finite stops the run as diverged."""
    if not run.pending:
        return
    values = torch.stack([v.float() for _, _, v in run.pending])
    if run.world > 1:  # the global batch's loss: the mean of the ranks' losses
        import torch.distributed as dist

        dist.all_reduce(values, op=dist.ReduceOp.SUM)
        values = values / run.world
    values = values.cpu().tolist()
    for (st, q, _), val in zip(run.pending, values):
        if q == "train_loss" and not math.isfinite(val):
            raise CompanionError(
                f"training diverged: the training loss is {val} at step {st} (learning rate "
                f"{run.cfg.lr:g}, {run.cfg.optimizer}); lower --lr or raise --warmup. Nothing of this "
                "run was written after its last checkpoint.")
    run.rows.extend(dict(step=st, quantity=q, layer=-1, head=-1, value=val)
                    for (st, q, _), val in zip(run.pending, values))
    run.pending.clear()
