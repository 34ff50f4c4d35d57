"""Where and how big: the device every computation uses, and the run-size switch.

One switch picks the size of every experiment in the book:

``ci``
    minutes on two CPU cores; what the book executes by default without a GPU.
``gpu``
    a single Colab-class GPU, tens of minutes per chapter.
``paper``
    the sizes the paper reports (hours to days on one GPU).

Set it with the environment variable ``COMPANION_RUN_SIZE`` (or pass ``size=`` to the
functions that take it).  Without it the default is ``gpu`` when CUDA is available and
``ci`` otherwise.
"""

from __future__ import annotations

import os

import torch

RUN_SIZES = ("ci", "gpu", "paper")
ENV_VAR = "COMPANION_RUN_SIZE"

__all__ = ["RUN_SIZES", "ENV_VAR", "run_size", "default_device", "describe_device"]


def default_device() -> torch.device:
    """``cuda`` when a GPU is visible, else ``cpu``."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def describe_device(device: torch.device | str | None = None) -> str:
    """Human-readable name of the device, e.g. ``'cpu (2 threads)'`` or the GPU's name."""
    device = torch.device(device) if device is not None else default_device()
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    return f"cpu ({torch.get_num_threads()} threads)"


def run_size(size: str | None = None) -> str:
    """Resolve the run size: explicit argument, then ``$COMPANION_RUN_SIZE``, then default."""
    chosen = size if size is not None else os.environ.get(ENV_VAR)
    if chosen is None or chosen == "":
        return "gpu" if torch.cuda.is_available() else "ci"
    chosen = chosen.strip().lower()
    if chosen not in RUN_SIZES:
        raise ValueError(
            f"unknown run size {chosen!r} (from {'argument' if size else ENV_VAR}); "
            f"choose one of {RUN_SIZES}."
        )
    return chosen
