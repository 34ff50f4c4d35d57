"""Where a run computes: the device, the process group under ``torchrun``, and bf16 autocast
where the card computes bf16 natively (see :mod:`companion.train.runner.loop`, "GPU and
several GPUs")."""

from __future__ import annotations

import os

import torch

from .config import TrainConfig

__all__ = ["native_bf16", "process_layout"]


def native_bf16(device) -> bool:
    """Whether ``device`` (a CUDA device) computes bf16 natively: compute capability 8.0 or
    later.  Older cards (a T4 on a free Colab runtime, a V100) only emulate it."""
    major, _ = torch.cuda.get_device_capability(device)
    return major >= 8


def _autocast(cfg, device):
    enabled = ((bool(cfg.bf16) and device.type == "cuda" and native_bf16(device))
               or (bool(cfg.cpu_bf16) and device.type == "cpu"))
    return torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=enabled)


def _env_count(name: str, default: int) -> int:
    """The whole number in the environment variable ``name`` (set by torchrun), or ``default``."""
    from ...base.errors import CompanionError

    text = os.environ.get(name)
    if text is None:
        return default
    try:
        return int(text)
    except ValueError:
        raise CompanionError(f"the environment variable {name} is {text!r}, not a whole number; torchrun sets it "
                             f"for each of a run's processes: unset it, or launch the run with torchrun.") from None


def process_layout() -> tuple[int, int]:
    """``(world, rank)`` from the environment (``WORLD_SIZE``, ``RANK``; torchrun's), checked:
    a rank outside the processes (``RANK=3`` in one process) would train and write nothing."""
    from ...base.errors import CompanionError

    world, rank = max(_env_count("WORLD_SIZE", 1), 1), _env_count("RANK", 0)
    _env_count("LOCAL_RANK", 0)
    if not 0 <= rank < world:
        raise CompanionError(f"the environment variable RANK is {rank}, outside the run's processes 0..{world - 1} "
                             f"(WORLD_SIZE {world}); unset RANK, or launch the run with torchrun.")
    missing = [v for v in ("MASTER_ADDR", "MASTER_PORT") if not os.environ.get(v)]
    if world > 1 and missing and not _joined():   # no rendezvous to join: torch's refusal named MASTER_ADDR as the fix
        raise CompanionError(f"the environment variable WORLD_SIZE is {world}, but {' and '.join(missing)} "
                             f"{'is' if len(missing) == 1 else 'are'} not set, so no process group can be joined (a "
                             "torchrun launch sets them); unset WORLD_SIZE (and RANK) to train in one process, or "
                             "launch the run with torchrun.")
    return world, rank


def _joined() -> bool:
    """Whether this process is already in a process group (made by its caller's own rendezvous)."""
    import torch.distributed as dist

    return dist.is_available() and dist.is_initialized()


def _distributed():
    world = max(_env_count("WORLD_SIZE", 1), 1)
    if world <= 1:
        return 1, 0, None
    import torch.distributed as dist

    if not dist.is_initialized():
        backend = "nccl" if torch.cuda.is_available() else "gloo"
        dist.init_process_group(backend=backend)
    local = _env_count("LOCAL_RANK", 0)
    device = torch.device(f"cuda:{local}") if torch.cuda.is_available() else torch.device("cpu")
    if device.type == "cuda":
        torch.cuda.set_device(device)
    return world, dist.get_rank(), device


def _check_cuda(device: torch.device) -> None:
    """A CUDA device this machine has (torch's own refusal is an AssertionError from deep inside)."""
    from ...base.errors import CompanionError

    if device.type != "cuda":
        return
    if not torch.cuda.is_available():
        raise CompanionError(f"device {device}: no CUDA GPU is visible on this machine; train on device cpu, or "
                             "leave the device unset.")
    if device.index is not None and device.index >= torch.cuda.device_count():
        raise CompanionError(f"device {device}: this machine has {torch.cuda.device_count()} GPU(s), numbered from 0.")


def _set_up_device(cfg: TrainConfig) -> tuple[int, int, torch.device]:
    """``(world, rank, device)``: join the process group under torchrun; CPU runs are
    deterministic, CUDA runs allow TF32 matmuls."""
    world, rank, ddp_device = _distributed()
    if ddp_device is not None:
        device = ddp_device
    elif cfg.device:
        device = torch.device(cfg.device)
        _check_cuda(device)
    else:
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device.type == "cpu":
        torch.use_deterministic_algorithms(True, warn_only=True)
    else:
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    return world, rank, device
